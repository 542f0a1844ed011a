/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --schedule and `link down|up` in the program: see shaper_sched.h for who
 * does what. The owner lcore never parses, allocates or frees: confs
 * come ready on one ring and leave on another.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>

#include "control.h"
#include "schedule.h"
#include "shaper_sched.h"

uint64_t shaper_sched_next[SHP_MAX_PORTS] = {
	[0 ... SHP_MAX_PORTS - 1] = UINT64_MAX
};
volatile bool shaper_sched_rx[SHP_MAX_PORTS];

/* Single producer, single consumer ring of conf pointers. */
#define CRING_SIZE 64
struct cring {
	void *slot[CRING_SIZE];
	uint32_t head;   /* consumer's */
	uint32_t tail;   /* producer's */
};

static unsigned int
cring_count(const struct cring *r)
{
	return __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
}

static bool
cring_push(struct cring *r, void *p)
{
	uint32_t t = r->tail;

	if (t - __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == CRING_SIZE)
		return false;
	r->slot[t % CRING_SIZE] = p;
	__atomic_store_n(&r->tail, t + 1, __ATOMIC_RELEASE);
	return true;
}

static bool
cring_pop(struct cring *r, void **p)
{
	uint32_t h = r->head;

	if (h == __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE))
		return false;
	*p = r->slot[h % CRING_SIZE];
	__atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
	return true;
}

/* A `set`/`clear` event as one port runs it. */
struct sched_pev {
	const struct shp_sched_event *ev;
	const struct shp_kind *kind;
	struct cring ready;         /* main -> owner: confs to publish */
};

struct sched_port {
	unsigned int nb;
	struct sched_pev *pev;
	unsigned int target;        /* confs kept ready per event */
	/* the owner's: its next occurrence, and what it did */
	uint64_t cycle;
	unsigned int j;
	uint64_t applied, missed;
	struct cring retire[SHP_SLOT_MAX];   /* owner -> main: old confs */
	uint64_t cli_link;          /* (time << 1) | down of `link`; 0 */
};

static struct shp_sched sched;
static bool loaded;
static struct sched_port ports[SHP_MAX_PORTS];
static struct shp_kind_env kenv;
static uint64_t applied_seen;

static uint64_t
pev_time(const struct shaper *s, const struct sched_port *sp)
{
	uint64_t t;

	if (sp->nb == 0 || (sched.repeat == 0 && sp->cycle > 0))
		return UINT64_MAX;
	t = sp->cycle * sched.repeat + sp->pev[sp->j].ev->t;
	return t > UINT64_MAX - 1 - s->start_ns ? UINT64_MAX :
	       s->start_ns + t;
}

/* Parse confs for the events of port p until each has its target. */
static int
arm(struct shaper *s, uint16_t p, char *err)
{
	struct sched_port *sp = &ports[p];
	unsigned int i;

	for (i = 0; i < sp->nb; i++) {
		struct sched_pev *e = &sp->pev[i];

		while (cring_count(&e->ready) < sp->target) {
			const struct shp_kind *k;
			void *conf;

			if (shp_kind_parse(e->ev->key,
					   shp_sched_args(e->ev, &s->chain[p]),
					   &kenv, &k, &conf, err) < 0)
				return -1;
			if (!cring_push(&e->ready, conf)) {
				shp_kind_conf_free(k, conf);
				break;
			}
		}
	}
	return 0;
}

int
shaper_sched_init(struct shaper *s)
{
	char err[SHP_ERR_LEN];
	unsigned int i, n;

	if (s->opt.schedule_file == NULL)
		return 0;
	shp_options_kind_env(&s->opt, &kenv);
	if (shp_sched_load(&sched, s->opt.schedule_file, s->port_ids,
			   s->nb_ports, &kenv, err) < 0)
		goto fail;
	loaded = true;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		struct sched_port *sp = &ports[p];
		unsigned int k;

		if (shp_sched_check_chain(&sched, p, &s->chain[p], &kenv,
					  err) < 0)
			goto fail;
		for (k = 0, n = 0; k < sched.nb; k++)
			n += sched.ev[k].op == SHP_SCHED_SET &&
			     shp_sched_on_port(&sched.ev[k], p);
		sp->pev = calloc(n ? n : 1, sizeof(*sp->pev));
		if (sp->pev == NULL) {
			snprintf(err, SHP_ERR_LEN, "out of memory");
			goto fail;
		}
		for (k = 0; k < sched.nb; k++) {
			const struct shp_sched_event *e = &sched.ev[k];
			const struct shp_kind *kd;
			void *conf;

			if (e->op != SHP_SCHED_SET || !shp_sched_on_port(e, p))
				continue;
			/* (checked: parses) */
			if (shp_kind_parse(e->key, shp_sched_args(e,
					   &s->chain[p]), &kenv, &kd, &conf,
					   err) < 0)
				goto fail;
			shp_kind_conf_free(kd, conf);
			sp->pev[sp->nb].ev = e;
			sp->pev[sp->nb++].kind = kd;
		}
		/* once: one conf an event; repeated: enough for the cycles
		 * that go by between two control ticks, and some */
		sp->target = 1;
		if (sched.repeat != 0)
			sp->target = (unsigned int)RTE_MIN(
				(uint64_t)CRING_SIZE - 1,
				2 + 200000000 / sched.repeat);
		if (arm(s, p, err) < 0)
			goto fail;
		shaper_sched_rx[p] = true;
	}
	printf("dpdk-shaper: schedule %s: %u line%s%s\n", sched.path,
	       sched.nb, sched.nb == 1 ? "" : "s",
	       sched.repeat ? ", repeated" : "");
	return 0;
fail:
	fprintf(stderr, "dpdk-shaper: %s\n", err);
	shaper_sched_fini(s);
	return -1;
}

void
shaper_sched_start(struct shaper *s)
{
	unsigned int i;

	if (!loaded)
		return;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		__atomic_store_n(&shaper_sched_next[p],
				 pev_time(s, &ports[p]), __ATOMIC_RELEASE);
	}
}

void
shaper_sched_run(struct shaper *s, uint16_t p, uint64_t now)
{
	struct sched_port *sp = &ports[p];
	struct shp_chain *c = &s->chain[p];

	while (now >= shaper_sched_next[p]) {
		struct sched_pev *e = &sp->pev[sp->j];
		struct cring *ret = &sp->retire[e->kind->slot];
		char err[SHP_ERR_LEN];
		void *conf, *old = NULL;

		/* no ready conf (the main lcore fell behind a fast
		 * repeat), or no room to give the old one back: the
		 * occurrence is missed, and counted */
		if (cring_count(ret) < CRING_SIZE &&
		    cring_pop(&e->ready, &conf)) {
			if (shp_chain_change(c, e->kind, conf, &old, err) == 0)
				sp->applied++;
			else
				old = conf;   /* (checked at start) */
			if (old != NULL)
				cring_push(ret, old);
		} else {
			sp->missed++;
		}
		if (++sp->j == sp->nb) {
			sp->j = 0;
			sp->cycle++;
		}
		/* after the change: an RX lcore that sees the new time
		 * (shaper_sched_wait) hands on into the new conf */
		__atomic_store_n(&shaper_sched_next[p], pev_time(s, sp),
				 __ATOMIC_RELEASE);
	}
}

void
shaper_sched_wait(struct shaper *s, uint16_t p, uint64_t now)
{
	/* The owner makes the change at the start of its next TX round,
	 * without waiting for anyone: a round at most. A pause or the end
	 * stops the rounds: the burst goes on as it is then. */
	while (now >= __atomic_load_n(&shaper_sched_next[p],
				      __ATOMIC_ACQUIRE) &&
	       !s->paused && !s->quit)
		rte_pause();
}

void
shaper_sched_tick(struct shaper *s)
{
	void *old[SHP_MAX_PORTS * SHP_SLOT_MAX * CRING_SIZE / 8];
	const struct shp_kind *kind[RTE_DIM(old)];
	char err[SHP_ERR_LEN];
	unsigned int i, sl, n = 0;
	uint64_t applied = 0;

	if (!loaded)
		return;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		struct sched_port *sp = &ports[p];

		applied += __atomic_load_n(&sp->applied, __ATOMIC_RELAXED);
		for (sl = 0; sl < SHP_SLOT_MAX; sl++)
			while (n < RTE_DIM(old) &&
			       cring_pop(&sp->retire[sl], &old[n]))
				kind[n++] = s->chain[p].kind[sl];
	}
	if (n > 0) {
		/* no worker still holds one once each went round */
		rte_rcu_qsbr_synchronize(shaper_rcu, RTE_QSBR_THRID_INVALID);
		for (i = 0; i < n; i++)
			shp_kind_conf_free(kind[i], old[i]);
	}
	for (i = 0; i < s->nb_ports; i++)
		if (sched.repeat != 0 && arm(s, s->port_ids[i], err) < 0)
			fprintf(stderr, "dpdk-shaper: schedule: %s\n", err);
	if (applied != applied_seen) {
		applied_seen = applied;
		ctl_config_refresh(s);
	}
}

void
shaper_sched_fini(struct shaper *s)
{
	uint64_t applied = 0, missed = 0;
	unsigned int p, i, sl;
	void *conf;

	if (loaded && s->start_ns != 0) {
		for (p = 0; p < SHP_MAX_PORTS; p++) {
			applied += ports[p].applied;
			missed += ports[p].missed;
		}
		printf("schedule %s: %" PRIu64 " change%s applied, %" PRIu64
		       " missed\n", sched.path, applied,
		       applied == 1 ? "" : "s", missed);
	}
	for (p = 0; p < SHP_MAX_PORTS; p++) {
		struct sched_port *sp = &ports[p];

		for (i = 0; i < sp->nb; i++)
			while (cring_pop(&sp->pev[i].ready, &conf))
				shp_kind_conf_free(sp->pev[i].kind, conf);
		for (sl = 0; sl < SHP_SLOT_MAX; sl++)
			while (cring_pop(&sp->retire[sl], &conf))
				shp_kind_conf_free(s->chain[p].kind[sl], conf);
		free(sp->pev);
		memset(sp, 0, sizeof(*sp));
		shaper_sched_next[p] = UINT64_MAX;
	}
	shp_sched_free(&sched);
	loaded = false;
}

bool
shaper_link_is_down(const struct shaper *s, uint16_t p, uint64_t now)
{
	uint64_t since = SHP_SCHED_NONE, at = 0, cli;
	bool down = false;

	if (loaded && now >= s->start_ns) {
		down = shp_sched_link_down(&sched, p, now - s->start_ns,
					   &since);
		if (since != SHP_SCHED_NONE)
			at = s->start_ns + since;
	}
	/* the later of the schedule's last word and the command's */
	cli = __atomic_load_n(&ports[p].cli_link, __ATOMIC_ACQUIRE);
	if (cli != 0 && now >= cli >> 1 &&
	    (since == SHP_SCHED_NONE || cli >> 1 >= at))
		down = cli & 1;
	return down;
}

int
shaper_link_set(struct shaper *s, int port, bool down, char *err)
{
	uint64_t now = shp_clock_now(&s->clock);
	unsigned int i;

	(void)err;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		if (port >= 0 && port != p)
			continue;
		__atomic_store_n(&ports[p].cli_link, now << 1 | down,
				 __ATOMIC_RELEASE);
		shaper_sched_rx[p] = true;
		printf("port %u: link %s\n", p, down ? "down" : "up");
	}
	return 0;
}

void
shaper_sched_show(struct shaper *s, FILE *f)
{
	uint64_t now = shp_clock_now(&s->clock), rel;
	struct shp_sched_cursor c;
	char a[32], b[32];
	unsigned int i, k;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		fprintf(f, "port %u: link %s", p,
			shaper_link_is_down(s, p, now) ? "down" : "up");
		if (loaded)
			fprintf(f, ", %" PRIu64 " change%s applied, %" PRIu64
				" missed", ports[p].applied,
				ports[p].applied == 1 ? "" : "s",
				ports[p].missed);
		fprintf(f, "\n");
	}
	if (!loaded) {
		fprintf(f, "no schedule (--schedule FILE)\n");
		return;
	}
	rel = now > s->start_ns ? now - s->start_ns : 0;
	shp_sched_fmt_time(a, sizeof(a), rel);
	fprintf(f, "schedule %s: %u line%s", sched.path, sched.nb,
		sched.nb == 1 ? "" : "s");
	if (sched.repeat != 0) {
		shp_sched_fmt_time(b, sizeof(b), sched.repeat);
		fprintf(f, ", repeat %s (cycle %" PRIu64 ")", b,
			rel / sched.repeat + 1);
	}
	fprintf(f, "; %s since start\n", a);
	shp_sched_cursor_seek(&sched, rel + 1, &c);
	for (k = 0; k < 10; k++) {
		uint64_t t = shp_sched_cursor_time(&sched, &c);

		if (t == SHP_SCHED_NONE)
			break;
		shp_sched_fmt_time(a, sizeof(a), t);
		shp_sched_fmt_time(b, sizeof(b), t - rel);
		fprintf(f, "  at %-10s in %-10s %s\n", a, b,
			sched.ev[c.i].text);
		shp_sched_cursor_next(&sched, &c);
	}
	if (k == 0)
		fprintf(f, "  (no event left)\n");
}
