/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Changes that expire: `set|update KEY P ... for TIME`. A `for` is an
 * overlay on one stage of one port. The stage runs the profile it had
 * before the first of the `for`s running on it (the base) with each of
 * them made again over it, in the order given: a set's profile replaces
 * what is below, an update's words are merged over it. So when one ends,
 * the stage becomes what it would be had that one never been made, and
 * when the last ends, the base is back. A change that holds (one without
 * `for`, a schedule's line) is the stage's new profile: the `for`s on it
 * are dropped. The control lcore's tick ends them, every port and stage
 * that came due in one publication; the data path does nothing for it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>

#include "control.h"
#include "ctl_for.h"
#include "ctl_update.h"

/* The `for`s on one stage of a port (main lcore only). */
struct stage_fors {
	unsigned int n;
	/* what they last published: a schedule's change since (made on
	 * the data path, not through the control plane) holds */
	const void *conf;
	char key[16];
	char base[CTL_TEXT_LEN];
	struct {
		uint64_t until;         /* shp_clock_now time */
		bool update;            /* text: update's words, else the
					 * profile set */
		char text[CTL_TEXT_LEN];
	} ch[SHP_FOR_STACK];
};

static struct stage_fors fors[SHP_MAX_PORTS][SHP_SLOT_MAX];

void
ctl_for_forget(uint16_t p, unsigned int slot)
{
	fors[p][slot].n = 0;
}

static const void *
stage_conf(const struct shaper *s, uint16_t p, unsigned int sl)
{
	return __atomic_load_n(&s->chain[p].conf[sl], __ATOMIC_RELAXED);
}

/* Port p's `for`s on slot sl, NULL when none runs. */
static struct stage_fors *
fors_of(const struct shaper *s, uint16_t p, unsigned int sl)
{
	struct stage_fors *f = &fors[p][sl];

	if (f->n > 0 && stage_conf(s, p, sl) != f->conf)
		f->n = 0;   /* a schedule's change: it holds */
	return f->n > 0 ? f : NULL;
}

int
ctl_set_stage_for(struct shaper *s, const char *key, int port,
		  const char *const *args_of, const char *args,
		  const char *words, uint64_t for_ns, char *err)
{
	static char was[SHP_MAX_PORTS][CTL_TEXT_LEN];
	const char *text_of[SHP_MAX_PORTS] = { NULL };
	struct ctl_change ch = { key, port, text_of };
	int ki = shp_key_index(key);
	uint64_t now;
	unsigned int i, sl;

	if (for_ns == 0 || ki < 0)
		return ctl_set_stage_each(s, key, port, args_of, args, err);
	sl = shp_key_slot((unsigned int)ki);
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		const struct stage_fors *f;

		if ((port >= 0 && port != p) ||
		    (args_of != NULL && args_of[i] == NULL))
			continue;
		f = fors_of(s, p, sl);
		if (f != NULL && f->n == SHP_FOR_STACK) {
			snprintf(err, SHP_ERR_LEN, "port %u: for: %s", p,
				 SHP_FOR_STACK_TEXT);
			return -1;
		}
		shp_chain_format(&s->chain[p], (enum shp_slot)sl, was[i],
				 sizeof(was[i]));
		text_of[i] = args_of != NULL ? args_of[i] : args;
	}
	if (ctl_for_set_stages(s, &ch, 1, err) < 0)
		return -1;
	now = shp_clock_now(&s->clock);
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		struct stage_fors *f = &fors[p][sl];

		if (text_of[i] == NULL)
			continue;
		if (f->n == 0) {
			snprintf(f->key, sizeof(f->key), "%s", key);
			snprintf(f->base, sizeof(f->base), "%s", was[i]);
		}
		f->ch[f->n].until = now + for_ns;
		f->ch[f->n].update = words != NULL;
		if (words != NULL)
			snprintf(f->ch[f->n].text, CTL_TEXT_LEN, "%s", words);
		else
			shp_chain_format(&s->chain[p], (enum shp_slot)sl,
					 f->ch[f->n].text, CTL_TEXT_LEN);
		f->n++;
		f->conf = stage_conf(s, p, sl);
	}
	return 0;
}

bool
ctl_revert_left(struct shaper *s, uint16_t p, const char *key,
		struct ctl_for_left *l)
{
	int ki = shp_key_index(key);
	const struct stage_fors *f;
	uint64_t now = shp_clock_now(&s->clock);
	unsigned int i;

	if (ki < 0 || p >= SHP_MAX_PORTS)
		return false;
	f = fors_of(s, p, shp_key_slot((unsigned int)ki));
	if (f == NULL || strcmp(f->key, key) != 0)
		return false;
	l->n = f->n;
	l->left_ns = 0;
	l->next_ns = UINT64_MAX;
	l->to = f->base;
	for (i = 0; i < f->n; i++) {
		uint64_t left = f->ch[i].until > now ? f->ch[i].until - now : 0;

		l->left_ns = RTE_MAX(l->left_ns, left);
		l->next_ns = RTE_MIN(l->next_ns, left);
	}
	return true;
}

int
ctl_tick_wait_ms(struct shaper *s, int max_ms)
{
	uint64_t now = shp_clock_now(&s->clock), left;
	unsigned int i, sl, j;
	int ms = max_ms;

	for (i = 0; i < s->nb_ports; i++)
		for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
			const struct stage_fors *f = &fors[s->port_ids[i]][sl];

			for (j = 0; j < f->n; j++) {
				left = f->ch[j].until > now ?
				       f->ch[j].until - now : 0;
				if (left < (uint64_t)ms * 1000000)
					ms = (int)((left + 999999) / 1000000);
			}
		}
	return ms;
}

/* The base with port p's `for`s on slot sl made again over it, into out.
 * An update's words that no longer merge over what is below (the
 * profile they merged over has ended) are left out, saying so. */
static void
fors_fold(const struct shaper *s, uint16_t p, unsigned int sl,
	  struct stage_fors *f, char *out)
{
	const struct shp_kind *k = s->chain[p].kind[sl];
	char merged[CTL_TEXT_LEN], err[SHP_ERR_LEN];
	unsigned int i, j = 0;

	snprintf(out, CTL_TEXT_LEN, "%s", f->base);
	for (i = 0; i < f->n; i++) {
		if (!f->ch[i].update) {
			snprintf(out, CTL_TEXT_LEN, "%s", f->ch[i].text);
		} else if (ctl_update_over(k, (enum shp_slot)sl, p, out,
					   f->ch[i].text, merged,
					   sizeof(merged), err) < 0) {
			printf("warning: port %u: %s: the 'for' of update "
			       "%s no longer applies: %s (left out)\n", p,
			       f->key, f->ch[i].text, err);
			continue;
		} else {
			snprintf(out, CTL_TEXT_LEN, "%s", merged);
		}
		f->ch[j++] = f->ch[i];
	}
	f->n = j;
}

/* Publish args_of[sl][i] for every stage due; 0, or -1 with err. */
static int
fors_publish(struct shaper *s, const char *(*args_of)[SHP_MAX_PORTS],
	     const bool *due, char *err)
{
	struct ctl_change ch[SHP_SLOT_MAX];
	unsigned int i, sl, n = 0;

	for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
		const char *key = NULL;

		if (!due[sl])
			continue;
		for (i = 0; i < s->nb_ports && key == NULL; i++)
			if (args_of[sl][i] != NULL)
				key = fors[s->port_ids[i]][sl].key;
		/* ports not due: the same text again would be a change (a
		 * restart of the stage's state): leave them out */
		ch[n++] = (struct ctl_change){ key, -1, args_of[sl] };
	}
	return ctl_for_set_stages(s, ch, n, err);
}

bool
ctl_for_run(struct shaper *s)
{
	static char text[SHP_SLOT_MAX][SHP_MAX_PORTS][CTL_TEXT_LEN];
	static const char *args_of[SHP_SLOT_MAX][SHP_MAX_PORTS];
	struct ctl_config *was;
	char err[SHP_ERR_LEN], cur[CTL_TEXT_LEN];
	uint64_t now = shp_clock_now(&s->clock);
	unsigned int i, j, k, sl;
	bool due[SHP_SLOT_MAX] = { false }, any = false;

	for (i = 0; i < s->nb_ports; i++)
		for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
			uint16_t p = s->port_ids[i];
			struct stage_fors *f = fors_of(s, p, sl);

			args_of[sl][i] = NULL;
			if (f == NULL)
				continue;
			for (j = 0, k = 0; j < f->n; j++)
				if (f->ch[j].until > now)
					f->ch[k++] = f->ch[j];
			if (k == f->n)
				continue;
			f->n = k;
			fors_fold(s, p, sl, f, text[sl][i]);
			shp_chain_format(&s->chain[p], (enum shp_slot)sl, cur,
					 sizeof(cur));
			/* (one ended below a later set: no change) */
			if (strcmp(text[sl][i], cur) == 0)
				continue;
			args_of[sl][i] = text[sl][i];
			due[sl] = any = true;
		}
	if (!any)
		return false;
	was = malloc(sizeof(*was));
	if (was != NULL)
		ctl_config_snapshot(was);
	if (fors_publish(s, args_of, due, err) < 0) {
		/* (the texts are the stages' own, or their words merged
		 * over them: not for memory) the bases, at least */
		printf("error: going back after 'for': %s (the profiles "
		       "from before)\n", err);
		for (i = 0; i < s->nb_ports; i++)
			for (sl = 0; sl < SHP_SLOT_MAX; sl++)
				if (args_of[sl][i] != NULL) {
					struct stage_fors *f =
						&fors[s->port_ids[i]][sl];

					f->n = 0;
					args_of[sl][i] = f->base;
				}
		if (fors_publish(s, args_of, due, err) < 0) {
			printf("error: going back after 'for': %s\n", err);
			for (sl = 0; sl < SHP_SLOT_MAX; sl++)
				due[sl] = false;
		}
	}
	for (i = 0; i < s->nb_ports; i++)
		for (sl = 0; sl < SHP_SLOT_MAX; sl++)
			if (due[sl] && args_of[sl][i] != NULL)
				fors[s->port_ids[i]][sl].conf =
					stage_conf(s, s->port_ids[i], sl);
	if (was != NULL) {
		struct ctl_config *now_cfg = malloc(sizeof(*now_cfg));

		if (now_cfg != NULL)
			ctl_config_snapshot(now_cfg);
		for (i = 0; now_cfg != NULL && i < s->nb_ports; i++)
			for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
				unsigned int n =
					fors[s->port_ids[i]][sl].n;

				if (!due[sl] || args_of[sl][i] == NULL)
					continue;
				printf("port %u: %s %s (was %s; ",
				       s->port_ids[i], was->key[i][sl],
				       now_cfg->stage[i][sl],
				       was->stage[i][sl]);
				if (n == 0)
					printf("its 'for' ended)\n");
				else
					printf("a 'for' ended, %u more "
					       "running)\n", n);
			}
		free(now_cfg);
	}
	free(was);
	/* the ports' budgets after the lines that say what went back */
	shaper_budget_flush(s);
	fflush(stdout);
	return true;
}
