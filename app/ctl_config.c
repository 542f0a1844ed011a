/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The running configuration as text (ctl_config.h): one copy, remade on
 * the main lcore after each change, read whole under a lock by the CLI,
 * telemetry and the stats file. Apart from the change code so that what
 * only reads the configuration (stats.c, the schedule) needs nothing of
 * how it is changed.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "classify.h"
#include "ctl_config.h"
#include "shp_rand.h"

/* Guards `snap`: written on the main lcore, read by telemetry
 * callbacks. The data plane never takes it. */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctl_config snap;

/* The stage's own printer (netem adds its default limit); a queue's
 * starts with its kind. Main lcore. */
static void
stage_text(const struct shp_chain *c, unsigned int slot, char *buf,
	   size_t len)
{
	const struct shp_qdisc *q = c->stage[slot];
	FILE *f = fmemopen(buf, len, "w");

	buf[0] = '\0';
	if (f == NULL) {
		snprintf(buf, len, "?");
		return;
	}
	if (slot == SHP_SLOT_QUEUE)
		fprintf(f, "%s ", c->kind[slot]->name);
	q->ops->dump(q, f);
	fclose(f);
	buf[len - 1] = '\0';
}

const char *
ctl_config_stage(const struct ctl_config *c, unsigned int i, const char *key)
{
	unsigned int k;

	for (k = 0; k < SHP_SLOT_MAX; k++)
		if (strcmp(c->key[i][k], key) == 0)
			return c->stage[i][k];
	return NULL;
}

static void
format_priomap(const uint8_t *map, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i <= SHP_PRIO_MAX && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%u", i ? "," : "",
				map[i]);
}

/* Refresh the text copy; caller holds nothing, we take the lock. */
static void
snapshot_update(struct shaper *s)
{
	const struct shp_classifier *c = s->classifier;
	static struct ctl_config n;   /* big: not on the stack */
	unsigned int i, k;

	memset(&n, 0, sizeof(n));
	n.bands = s->opt.bands;
	snprintf(n.classify, sizeof(n.classify), "%s",
		 shp_classify_mode_name(c->mode));
	format_priomap(c->priomap, n.priomap, sizeof(n.priomap));
	n.paused = s->paused;
	/* what a profile without `seed` uses: --seed, or the default */
	n.seed = s->opt.seed_set ? s->opt.seed : SHP_SEED_DEFAULT;
	n.nb_ports = s->nb_ports;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		n.port_ids[i] = p;
		n.pair_of[i] = s->opt.pair_of[p];
		for (k = 0; k < SHP_SLOT_MAX; k++) {
			const struct shp_chain *c = &s->chain[p];

			snprintf(n.key[i][k], sizeof(n.key[i][k]), "%s",
				 shp_kind_key(c->kind[k]));
			stage_text(c, k, n.stage[i][k], CTL_TEXT_LEN);
		}
	}
	pthread_mutex_lock(&ctl_lock);
	snap = n;
	pthread_mutex_unlock(&ctl_lock);
}

void
ctl_config_refresh(struct shaper *s)
{
	snapshot_update(s);
}

void
ctl_config_snapshot(struct ctl_config *c)
{
	pthread_mutex_lock(&ctl_lock);
	*c = snap;
	pthread_mutex_unlock(&ctl_lock);
}
