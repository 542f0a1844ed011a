/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --schedule and `link down|up` in the program: see shaper_sched.h for who
 * does what. The owner lcore never parses, allocates or frees: confs
 * come ready on one ring and leave on another.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "carrier_tap.h"
#include "ctl_config.h"
#include "schedule.h"
#include "sched_walk.h"
#include "events.h"
#include "shaper_sched.h"
#include "shaper_wire.h"

uint64_t shaper_sched_next[SHP_MAX_PORTS][SHP_MAX_QUEUES] = {
	[0 ... SHP_MAX_PORTS - 1] = { [0 ... SHP_MAX_QUEUES - 1] = UINT64_MAX }
};
volatile bool shaper_sched_rx[SHP_MAX_PORTS];

/* A ring of confs, one producer and one consumer, holding a power of
 * two of them (at least min): an rte_ring on the heap, as a schedule's
 * rings can outnumber the EAL's memzones. NULL out of memory. */
static struct rte_ring *
conf_ring(unsigned int min)
{
	unsigned int cap = rte_align32pow2(RTE_MAX(min, 1u));
	ssize_t sz = rte_ring_get_memsize(rte_align32pow2(cap + 1));
	void *mem;

	if (sz < 0 || posix_memalign(&mem, RTE_CACHE_LINE_SIZE,
				     (size_t)sz) != 0)
		return NULL;
	if (rte_ring_init(mem, "shaper_sched", cap, RING_F_SP_ENQ |
			  RING_F_SC_DEQ | RING_F_EXACT_SZ) < 0) {
		free(mem);
		return NULL;
	}
	return mem;
}

/*
 * Old confs a stage's owner gives back between two control ticks (1 ms
 * apart, 50 ms at the prompt): the owner makes at most one change a
 * stage a pass, so this is 20,000 changes a second to one stage before a
 * change waits for room (late, then made: never lost).
 */
#define RETIRE_SIZE 1024
/* Confs parsed ahead for one port of a repeated schedule, at most */
#define ARM_BUDGET 65536

/* A port's shard (the port itself with one queue): its owner's cursor
 * and rings. */
struct sched_link {
	struct rte_ring **ready;    /* a change each, main -> owner: confs */
	/* the owner's: its next occurrence, what came due and waits for a
	 * conf, its id or room, and what it missed (w.missed) and did */
	struct shp_sched_walk w;
	uint64_t applied;
	struct rte_ring *retire[SHP_SLOT_MAX];   /* owner -> main: old confs */
};

struct sched_port {
	/* the changes (one per stage and instant: what the owner makes,
	 * standing for the lines of that stage at that instant), and the
	 * ids of their occurrences (sched_walk.h) */
	struct shp_sched_port plan;
	unsigned int target;        /* confs kept ready per change */
	uint64_t cli_link;          /* (time << 1) | down of `link`; 0 */
	struct sched_link link[SHP_MAX_QUEUES];
};

static struct shp_sched sched;
static bool loaded;
static struct sched_port ports[SHP_MAX_PORTS];
static unsigned int nb_links = 1;   /* shards a port (shaper_queues) */
static struct shp_kind_env kenv;
static uint64_t applied_seen;

/*
 * The schedule's steps as events (events.h): the main lcore compares, at
 * each tick, the stages a port's schedule changed since (its first
 * shard's count moved) with what it saw before; the control plane's own
 * changes say what they made (shaper_sched_seen), so only the
 * schedule's are told here. Steps closer together than a tick are one
 * event (from the first's old text to the last's new). The link's state
 * likewise: the schedule's `link` lines as the tick finds them.
 */
struct sched_seen {
	uint64_t applied;
	const void *conf[SHP_SLOT_MAX];
	char text[SHP_SLOT_MAX][SHP_EVENT_TEXT];
	bool down;
};
static struct sched_seen seen[SHP_MAX_PORTS];
bool shaper_sched_retry[SHP_MAX_PORTS][SHP_MAX_QUEUES];
/* The schedule's `disable`/`enable`: the main lcore's cursor (made at a
 * control tick: shaper_sched_tick) */
static bool has_toggle;
static struct shp_sched_cursor toggle_cur;
/* The carrier: taken down here (`link down P carrier`), and what the
 * schedule last said of it (the main lcore's, both) */
static bool carrier_down[SHP_MAX_PORTS];
static bool sched_carrier[SHP_MAX_PORTS];
/* what netem's `outage ON OFF carrier` last said (shaper_carrier_tick),
 * and the ports whose driver said it cannot (once is enough) */
static bool outage_carrier[SHP_MAX_PORTS];
static bool carrier_notsup[SHP_MAX_PORTS];

/* The chain of port p's shard q. */
static struct shp_chain *
link_chain(struct shaper *s, uint16_t p, uint16_t q)
{
	return shaper_queues(s) > 1 ? s->shard[p][q]->chain : &s->chain[p];
}

/* What port p's schedule did: its shards make the same changes, so the
 * port's is its first shard's, and what any shard missed. */
static void
port_counts(const struct sched_port *sp, uint64_t *applied, uint64_t *missed)
{
	unsigned int q;

	*applied = __atomic_load_n(&sp->link[0].applied, __ATOMIC_RELAXED);
	*missed = 0;
	for (q = 0; q < nb_links; q++)
		*missed = RTE_MAX(*missed,
				  __atomic_load_n(&sp->link[q].w.missed,
						  __ATOMIC_RELAXED));
}

static uint64_t
pev_time(const struct shaper *s, const struct sched_port *sp,
	 const struct sched_link *l)
{
	uint64_t t = shp_sched_walk_time(&sp->plan, &l->w);

	return t > UINT64_MAX - 1 - s->start_ns ? UINT64_MAX :
	       s->start_ns + t;
}

/*
 * Parse confs for the changes of port p until each shard has its target
 * of each. A change's confs are alike but for their id, which the owner
 * gives the one it makes: its occurrence's (shp_sched_ids_get), the same
 * on every shard whatever each walked or skipped. So each shard's ring
 * is filled on its own, and the ids for the occurrences around now
 * drawn, in their order.
 */
static int
arm(struct shaper *s, uint16_t p, char *err)
{
	struct sched_port *sp = &ports[p];
	unsigned int i, q;

	for (i = 0; i < sp->plan.nb; i++) {
		const struct shp_sched_event *ev = sp->plan.ch[i].ev;

		for (q = 0; q < nb_links; q++) {
			struct rte_ring *r = sp->link[q].ready[i];

			while (rte_ring_count(r) < sp->target) {
				const struct shp_kind *k = NULL;
				void *conf;

				if (shp_kind_parse(ev->key,
						   shp_sched_args(ev,
								  &s->chain[p]),
						   &kenv, &k, &conf, err) < 0)
					return -1;
				/* (room: 2 x target) */
				rte_ring_sp_enqueue(r, conf);
			}
		}
	}
	return 0;
}

/* Ids for the occurrences around now (rel ns after the start) */
static void
arm_ids(struct sched_port *sp, uint64_t rel)
{
	shp_sched_ids_arm(&sp->plan, rel, sp->target);
}

/* Port p's changes: one per stage and instant, in time order. */
static int
port_build(struct shaper *s, uint16_t p, char *err)
{
	struct sched_port *sp = &ports[p];
	unsigned int k, sl, q;

	if (shp_sched_port_init(&sp->plan, &sched, p) < 0)
		goto oom;
	for (k = 0; k < sp->plan.nb; k++) {
		struct shp_sched_change *g = &sp->plan.ch[k];
		const struct shp_kind *kd;
		void *conf;

		/* (checked: parses) */
		if (shp_kind_parse(g->ev->key, shp_sched_args(g->ev,
				   &s->chain[p]), &kenv, &kd, &conf, err) < 0)
			return -1;
		shp_kind_conf_free(kd, conf);
		g->kind = kd;
	}
	/* once: one conf a change; repeated: enough for the cycles that go
	 * by between two control ticks, and some, within a budget */
	sp->target = 1;
	if (sched.repeat != 0 && sp->plan.nb != 0)
		sp->target = (unsigned int)RTE_MAX((uint64_t)2, RTE_MIN(
			2 + 200000000 / sched.repeat,
			(uint64_t)ARM_BUDGET / sp->plan.nb / nb_links));
	/* the ids of the cycles behind (SHP_SCHED_IDS_BEHIND), the current
	 * one and the target ahead */
	if (shp_sched_ids_init(&sp->plan, sp->target + SHP_SCHED_IDS_BEHIND +
			       2) < 0)
		goto oom;
	for (q = 0; q < nb_links && sp->plan.nb != 0; q++) {
		struct sched_link *l = &sp->link[q];

		shp_sched_walk_init(&l->w);
		l->ready = calloc(sp->plan.nb, sizeof(*l->ready));
		if (l->ready == NULL)
			goto oom;
		for (k = 0; k < sp->plan.nb; k++)
			if ((l->ready[k] = conf_ring(2 * sp->target)) ==
			    NULL)
				goto oom;
		for (sl = 0; sl < SHP_SLOT_MAX; sl++)
			if ((l->retire[sl] = conf_ring(RETIRE_SIZE)) == NULL)
				goto oom;
	}
	return 0;
oom:
	snprintf(err, SHP_ERR_LEN, "out of memory");
	return -1;
}

int
shaper_sched_init(struct shaper *s)
{
	char err[SHP_ERR_LEN];
	unsigned int i;

	if (s->opt.schedule_file == NULL)
		return 0;
	nb_links = shaper_queues(s);
	shaper_kind_env(s, &kenv);
	if (shp_sched_load(&sched, s->opt.schedule_file, s->port_ids,
			   s->nb_ports, &kenv, err) < 0)
		goto fail;
	loaded = true;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		if (shp_sched_check_chain(&sched, p, &s->chain[p], &kenv,
					  err) < 0)
			goto fail;
	}
	/* (the events move: before any port keeps pointers to them) */
	if (shp_sched_expand_for(&sched, s->port_ids, s->nb_ports, s->chain,
				 &kenv, err) < 0)
		goto fail;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		if (port_build(s, p, err) < 0 || arm(s, p, err) < 0)
			goto fail;
		shaper_sched_rx[p] = true;
	}
	for (i = 0; i < sched.nb; i++)
		has_toggle |= sched.ev[i].op == SHP_SCHED_TOGGLE;
	printf("dpdk-shaper: schedule %s: %u line%s%s\n", sched.path,
	       sched.nb_lines, sched.nb_lines == 1 ? "" : "s",
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
	shaper_sched_seen(s);
	shp_sched_cursor_seek(&sched, 0, &toggle_cur);
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		unsigned int q;

		for (q = 0; q < nb_links; q++)
			__atomic_store_n(&shaper_sched_next[p][q],
					 pev_time(s, &ports[p],
						  &ports[p].link[q]),
					 __ATOMIC_RELEASE);
		arm_ids(&ports[p], 0);
	}
}

/* Make occurrence n's change on port p's shard q: false when it cannot
 * yet (no conf parsed, no id drawn, or no room to give the old one
 * back). Its conf carries the occurrence's id, every shard's the same. */
static bool
publish(struct shaper *s, uint16_t p, uint16_t q, struct sched_port *sp,
	uint64_t n)
{
	const struct shp_sched_change *e = shp_sched_occ_change(&sp->plan, n);
	struct sched_link *l = &sp->link[q];
	struct rte_ring *ret = l->retire[e->slot];
	struct rte_ring *ready = l->ready[e - sp->plan.ch];
	char err[SHP_ERR_LEN];
	void *conf, *old = NULL;
	uint64_t id;
	int rc = shp_sched_ids_get(&sp->plan, n, &id);

	if (rc < 0) {
		/* read with a clock long gone (the lcore lost its CPU
		 * between reading it and here): a newer change of the stage
		 * is due, the next pass makes it */
		l->w.missed += e->n;
		return true;
	}
	if (rc == 0 || rte_ring_full(ret) ||
	    rte_ring_sc_dequeue(ready, &conf) != 0)
		return false;
	if (conf != NULL)   /* (an `off` has no conf to carry it) */
		((struct shp_conf_hdr *)conf)->id = id;
	if (shp_chain_change(link_chain(s, p, q), e->kind, conf, &old,
			     err) == 0) {
		l->applied += e->n;
	} else {
		/* refused by the running stage (check_change): the
		 * schedule changed less than it says, and counts it */
		l->w.missed += e->n;
		old = conf;
	}
	if (old != NULL)
		rte_ring_sp_enqueue(ret, old);   /* (room checked above) */
	return true;
}

void
shaper_sched_run(struct shaper *s, uint16_t p, uint16_t q, uint64_t now)
{
	struct sched_port *sp = &ports[p];
	struct sched_link *l = &sp->link[q];
	/* the link's instants: the same start for every shard */
	uint64_t rel = now > s->start_ns ? now - s->start_ns : 0;
	bool waiting = false;
	unsigned int sl;

	if (sp->plan.nb == 0) {
		__atomic_store_n(&shaper_sched_next[p][q], UINT64_MAX,
				 __ATOMIC_RELEASE);
		return;
	}
	/* each stage's newest change due (whole cycles behind: missed by
	 * arithmetic; sched_walk.h) */
	shp_sched_walk_run(&sp->plan, &l->w, rel);
	/* the newest change of each stage is made, now or, when its conf,
	 * its id or the room for the old one is not there yet, at a later
	 * round: late, never dropped */
	for (sl = 0; sl < SHP_SLOT_MAX; sl++)
		if (l->w.due[sl] != SHP_SCHED_NO_OCC) {
			if (publish(s, p, q, sp, l->w.due[sl]))
				l->w.due[sl] = SHP_SCHED_NO_OCC;
			else
				waiting = true;
		}
	shaper_sched_retry[p][q] = waiting;
	/* after the change: an RX lcore that sees the new time
	 * (shaper_sched_wait) hands on into the new conf */
	__atomic_store_n(&shaper_sched_next[p][q], pev_time(s, sp, l),
			 __ATOMIC_RELEASE);
}

void
shaper_sched_wait(struct shaper *s, uint16_t p, uint16_t q, uint64_t now)
{
	/* The owner makes the change at the start of its next TX round,
	 * without waiting for anyone: a round at most. A pause or the end
	 * stops the rounds: the burst goes on as it is then. */
	while (now >= __atomic_load_n(&shaper_sched_next[p][q],
				      __ATOMIC_ACQUIRE) &&
	       !s->paused && !s->quit)
		rte_pause();
}

/* The carrier of port p down or up (a net_tap's kernel side with its
 * carrier, carrier_tap.h; else rte_eth_dev_set_link_down|up), where its
 * driver can; main lcore (ethdev's control functions are not the data
 * path's). */
static void
carrier_set(uint16_t p, bool down)
{
	int rc = carrier_tap_set(p, down);

	if (rc == -ENOTSUP)
		rc = down ? rte_eth_dev_set_link_down(p) :
		     rte_eth_dev_set_link_up(p);

	if (rc == -ENOTSUP) {
		if (!carrier_notsup[p])
			printf("port %u: its driver cannot set the link %s: "
			       "the port only drops\n", p,
			       down ? "down" : "up");
		carrier_notsup[p] = true;
		return;
	}
	if (rc < 0) {
		printf("port %u: carrier %s: %s\n", p, down ? "down" : "up",
		       rte_strerror(-rc));
		return;
	}
	shp_event_emit(shp_event_source(), p, "carrier",
		       carrier_down[p] ? "down" : "up", down ? "down" : "up");
	carrier_down[p] = down;
	printf("port %u: carrier %s\n", p, down ? "down" : "up");
}

void
shaper_carrier_tick(struct shaper *s)
{
	unsigned int i;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		const struct shp_qdisc *q = s->chain[p].stage[SHP_SLOT_DELAY];
		bool down = q != NULL && q->ops->carrier != NULL &&
			    q->ops->carrier(q) == 1;

		if (down == outage_carrier[p])
			continue;
		outage_carrier[p] = down;
		if (down || carrier_down[p])
			carrier_set(p, down);
	}
}

/*
 * What the schedule asks of the main lcore, at a control tick (1 ms
 * apart, 50 ms at the prompt: as late as that): its `disable`/`enable`
 * (one instant for every shard, from then on: shaper_wire_set) and the
 * carrier of its `link down P carrier` and of the `link up P` after it.
 * The link's drop itself is the data path's, exact to the stamp.
 */
static void
sched_main(struct shaper *s)
{
	uint64_t now = shp_clock_now(&s->clock), rel, t;
	char err[SHP_ERR_LEN];
	unsigned int i, steps = 0;

	if (s->start_ns == 0 || now < s->start_ns)
		return;
	rel = now - s->start_ns;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		bool want;

		if (!shp_sched_has_link(&sched, p))
			continue;
		want = shp_sched_link_carrier(&sched, p, rel);
		if (want != sched_carrier[p]) {
			sched_carrier[p] = want;
			if (want || carrier_down[p])
				carrier_set(p, want);
		}
	}
	/* (a stall: at most this many lines a tick, the rest the next) */
	while (has_toggle && steps++ < 4096 &&
	       (t = shp_sched_cursor_time(&sched, &toggle_cur)) !=
	       SHP_SCHED_NONE && t <= rel) {
		const struct shp_sched_event *e = &sched.ev[toggle_cur.i];

		shp_sched_cursor_next(&sched, &toggle_cur);
		if (e->op == SHP_SCHED_TOGGLE) {
			enum shp_event_src was =
				shp_event_source_set(SHP_EV_SCHEDULE);

			if (shaper_wire_set(s, e->port, e->down, err) < 0)
				fprintf(stderr, "dpdk-shaper: schedule: %s: "
					"%s\n", e->text, err);
			shp_event_source_set(was);
		}
	}
}

void
shaper_sched_seen(struct shaper *s)
{
	uint64_t now = shp_clock_now(&s->clock);
	unsigned int i, sl;

	if (!loaded)
		return;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		struct sched_seen *v = &seen[p];

		/* the schedule's next changes outrank the control plane's
		 * (a newer change, a higher id) */
		if (s->start_ns != 0 && now > s->start_ns)
			shp_sched_ids_redraw(&ports[p].plan,
					     now - s->start_ns);

		for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
			v->conf[sl] = __atomic_load_n(&s->chain[p].conf[sl],
						      __ATOMIC_RELAXED);
			shp_chain_format(&s->chain[p], (enum shp_slot)sl,
					 v->text[sl], sizeof(v->text[sl]));
		}
	}
}

/* What the schedule changed since the last tick, as events. */
static void
sched_events(struct shaper *s)
{
	uint64_t now = shp_clock_now(&s->clock);
	char text[SHP_EVENT_TEXT];
	unsigned int i, sl;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		struct sched_seen *v = &seen[p];
		uint64_t a = __atomic_load_n(&ports[p].link[0].applied,
					     __ATOMIC_RELAXED);
		bool down = shaper_link_is_down(s, p, now);

		if (down != v->down) {
			shp_event_emit(SHP_EV_SCHEDULE, p, "link",
				       v->down ? "down" : "up",
				       down ? "down" : "up");
			v->down = down;
		}
		if (a == v->applied)
			continue;
		v->applied = a;
		for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
			const void *c = __atomic_load_n(&s->chain[p].conf[sl],
							__ATOMIC_RELAXED);

			if (c == v->conf[sl])
				continue;
			shp_chain_format(&s->chain[p], (enum shp_slot)sl, text,
					 sizeof(text));
			shp_event_emit(SHP_EV_SCHEDULE, p,
				       shp_kind_key(s->chain[p].kind[sl]),
				       v->text[sl], text);
			v->conf[sl] = c;
			memcpy(v->text[sl], text, sizeof(text));
		}
	}
}

void
shaper_sched_tick(struct shaper *s)
{
	static void *old[4096];
	static const struct shp_kind *kind[RTE_DIM(old)];
	char err[SHP_ERR_LEN];
	unsigned int i, sl, n, q;
	uint64_t applied = 0;

	if (!loaded)
		return;
	/* (before the old confs go: a pointer seen is not yet reused) */
	sched_events(s);
	sched_main(s);
	for (i = 0; i < s->nb_ports; i++)
		for (q = 0; q < nb_links; q++)
			applied += __atomic_load_n(
				&ports[s->port_ids[i]].link[q].applied,
				__ATOMIC_RELAXED);
	do {
		n = 0;
		for (i = 0; i < s->nb_ports; i++) {
			uint16_t p = s->port_ids[i];
			struct sched_port *sp = &ports[p];

			for (q = 0; q < nb_links; q++)
				for (sl = 0; sl < SHP_SLOT_MAX; sl++)
					while (n < RTE_DIM(old) &&
					       sp->link[q].retire[sl] != NULL &&
					       rte_ring_sc_dequeue(
						sp->link[q].retire[sl],
						&old[n]) == 0)
						kind[n++] =
							s->chain[p].kind[sl];
		}
		if (n == 0)
			break;
		/* no worker still holds one once each went round */
		rte_rcu_qsbr_synchronize(shaper_rcu, RTE_QSBR_THRID_INVALID);
		for (i = 0; i < n; i++)
			shp_kind_conf_free(kind[i], old[i]);
	} while (n == RTE_DIM(old));
	for (i = 0; i < s->nb_ports; i++) {
		uint64_t now = shp_clock_now(&s->clock);

		if (sched.repeat == 0)
			continue;
		if (arm(s, s->port_ids[i], err) < 0)
			fprintf(stderr, "dpdk-shaper: schedule: %s\n", err);
		if (s->start_ns != 0)
			arm_ids(&ports[s->port_ids[i]],
				now > s->start_ns ? now - s->start_ns : 0);
	}
	if (applied != applied_seen) {
		applied_seen = applied;
		ctl_config_refresh(s);
	}
}

void
shaper_sched_fini(struct shaper *s)
{
	uint64_t applied = 0, missed = 0, a, m;
	unsigned int p, i, sl, q;
	void *conf;

	if (loaded && s->start_ns != 0) {
		for (p = 0; p < SHP_MAX_PORTS; p++) {
			port_counts(&ports[p], &a, &m);
			applied += a;
			missed += m;
		}
		printf("schedule %s: %" PRIu64 " change%s applied, %" PRIu64
		       " missed\n", sched.path, applied,
		       applied == 1 ? "" : "s", missed);
	}
	for (p = 0; p < SHP_MAX_PORTS; p++) {
		struct sched_port *sp = &ports[p];

		for (q = 0; q < SHP_MAX_QUEUES; q++) {
			struct sched_link *l = &sp->link[q];

			for (i = 0; l->ready != NULL && i < sp->plan.nb;
			     i++) {
				while (l->ready[i] != NULL &&
				       rte_ring_sc_dequeue(l->ready[i],
							   &conf) == 0)
					shp_kind_conf_free(
						sp->plan.ch[i].kind, conf);
				free(l->ready[i]);
			}
			free(l->ready);
			for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
				while (l->retire[sl] != NULL &&
				       rte_ring_sc_dequeue(l->retire[sl],
							   &conf) == 0)
					shp_kind_conf_free(
						s->chain[p].kind[sl], conf);
				free(l->retire[sl]);
			}
			shaper_sched_next[p][q] = UINT64_MAX;
			shaper_sched_retry[p][q] = false;
		}
		shp_sched_port_free(&sp->plan);
		memset(sp, 0, sizeof(*sp));
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
shaper_link_set(struct shaper *s, int port, bool down, bool carrier,
		char *err)
{
	uint64_t now = shp_clock_now(&s->clock);
	unsigned int i;
	bool was;

	(void)err;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		if (port >= 0 && port != p)
			continue;
		was = shaper_link_is_down(s, p, now);
		__atomic_store_n(&ports[p].cli_link, now << 1 | down,
				 __ATOMIC_RELEASE);
		shaper_sched_rx[p] = true;
		seen[p].down = down;
		printf("port %u: link %s\n", p, down ? "down" : "up");
		shp_event_emit(shp_event_source(), p, "link",
			       was ? "down" : "up", down ? "down" : "up");
		if ((down && carrier) || (!down && carrier_down[p]))
			carrier_set(p, down);
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

		uint64_t a, m;

		fprintf(f, "port %u: link %s%s%s", p,
			shaper_link_is_down(s, p, now) ? "down" : "up",
			carrier_down[p] ? " (carrier down)" : "",
			shaper_wire_disabled(s, p) ? ", disabled" : "");
		port_counts(&ports[p], &a, &m);
		if (loaded)
			fprintf(f, ", %" PRIu64 " change%s applied, %" PRIu64
				" missed", a, a == 1 ? "" : "s", m);
		if (loaded && nb_links > 1)
			fprintf(f, " (each of %u shards)", nb_links);
		fprintf(f, "\n");
	}
	if (!loaded) {
		fprintf(f, "no schedule (--schedule FILE)\n");
		return;
	}
	rel = now > s->start_ns ? now - s->start_ns : 0;
	/* to the ms: a raw count of ns says no more and reads worse */
	shp_sched_fmt_time(a, sizeof(a), rel - rel % 1000000);
	fprintf(f, "schedule %s: %u line%s", sched.path, sched.nb_lines,
		sched.nb_lines == 1 ? "" : "s");
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
