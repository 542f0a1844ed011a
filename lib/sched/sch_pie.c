/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pie: Proportional Integral controller Enhanced (RFC 8033, with Linux
 * sch_pie's integer arithmetic and choices), as the port's bottleneck
 * queue:
 *
 *   pie [limit PACKETS] [target TIME] [tupdate TIME] [alpha 0..32]
 *       [beta 0..32] [ecn|noecn] [bytemode|nobytemode]
 *       [dq_rate_estimator|no_dq_rate_estimator]
 *
 * with Linux's defaults (limit 1000, target 15ms, tupdate 15ms, alpha 2,
 * beta 20 -- in sixteenths, 0.125 and 1.25 -- noecn, nobytemode, the
 * queue delay from timestamps). One FIFO; each arrival is dropped early
 * with the drop probability p (or marked CE instead, with ecn, while p
 * is at most 10% and the packet is ECN-capable, as Linux), de-randomised
 * by the accumulated probability (RFC 8033 5.1: never before it reaches
 * 0.85, always from 8.5); nothing is dropped early during the burst
 * allowance (150 ms from a quiet queue), while the queue delay is under
 * half the target with p under 20%, or while less than two MTUs are
 * queued. Every tupdate p moves by alpha * (delay - target) + beta *
 * (delay - previous delay), alpha and beta scaled down while p is small
 * (RFC 8033 4.2's auto-tuning: /2 under 10%, and /4 more for each decade
 * below 1%, ...), at most +2% a step above 10%, 2% more beyond 250 ms
 * of delay, bounded to 1 (RFC 8033; Linux lets it pass 1, and then
 * drops all but two MTUs for tens of seconds), by 1/64 down for each
 * update with no delay at all (the decay of an empty queue), and the
 * state starts over (a new burst allowance) once delay and p have been
 * low for two updates.
 *
 * Time: probabilities are Linux's fixed point (1 = 2^56 - 1), delays its
 * 64 ns ticks, so that the same arrivals give the same decisions.
 * Updates run on a grid of tupdate on the shaper clock (ctx->now), each
 * due one run before the first call at or after it (the timer Linux
 * arms), so a virtual clock gives the same ones; a run of updates that
 * changes nothing more (an idle queue) is skipped at once. The delay is
 * measured when a packet leaves this queue (RFC 8033's departure time):
 * peek does not take it out (Linux's peek dequeues, so behind tbf it
 * measures when tbf first looks at the packet).
 *
 * Random draws: event n of the stream (seed, port, "pie") is the n-th
 * draw this stage made (shp_rand.h), so a run is reproducible, and the
 * test suite's model (test/replay/aqm_ref.py) draws the same numbers.
 *
 * On a link's shards (env->link, issue 59) the controller is the link's
 * one (link_state.h): p, the delay it holds to the target and the burst
 * allowance are one state, updated on the tupdate grid by whichever
 * shard first calls past an instant (one claim a period) and read by the
 * others once a call. Its delay is the link's: the largest sojourn of
 * the frames the shards sent since the last update (each shard publishes
 * its last departure's), or, with dq_rate_estimator, the link's backlog
 * over the sum of the shards' departure rates; the allowance runs down
 * with the link's departures. limit and the two-MTU guard count the
 * link's packets and bytes (every shard's, as each last published
 * them). What stays a shard's own: the de-randomising sum of p over its
 * arrivals, its departure-rate measurement and its draws (the stream of
 * shard s > 0 is keyed by s too). One queue, as before.
 *
 * Threads: the owner lcore only (mp_enqueue false); change() publishes
 * a conf pointer that each call loads once. Packets link through
 * meta->next; the enqueue time is meta->rx_ns. Nothing is allocated per
 * packet.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_mbuf.h>

#include "link_state.h"
#include "shp_kind.h"
#include "shp_link.h"
#include "shp_meta.h"
#include "shp_pkthdr.h"
#include "shp_qdisc.h"
#include "shp_rand.h"
#include "shp_tcargs.h"

#define PIE_LIMIT_DEFAULT   1000
#define PIE_TARGET_DEFAULT  (15 * 1000000ULL)
#define PIE_TUPDATE_DEFAULT (15 * 1000000ULL)
#define PIE_ALPHA_DEFAULT   2
#define PIE_BETA_DEFAULT    20
#define PIE_AB_MAX          32
#define PIE_MAX_PROB        (UINT64_MAX >> 8)    /* p = 1 */
#define PIE_TICK_SHIFT      6                    /* Linux's psched tick */
#define PIE_TICKS_PER_SEC   (1000000000ULL >> PIE_TICK_SHIFT)
#define PIE_BURST_TICKS     ((150 * 1000000ULL) >> PIE_TICK_SHIFT)
#define PIE_BIG_DELAY_TICKS ((250 * 1000000ULL) >> PIE_TICK_SHIFT)
#define PIE_DQ_THRESHOLD    16384                /* bytes */
#define PIE_DQ_SCALE        8
#define PIE_INVALID         UINT64_MAX
#define PIE_MTU             1514    /* psched_mtu of an Ethernet port */
#define PIE_STREAM          0x706965ULL          /* "pie" */

struct pie_conf {
	struct shp_conf_hdr hdr;   /* first: shp_qdisc.h */
	uint32_t limit;            /* packets */
	uint32_t alpha, beta;      /* sixteenths */
	uint64_t target;           /* ns */
	uint64_t tupdate;          /* ns */
	bool ecn, bytemode, dq_rate_estimator;
	uint64_t seed;             /* of the drop draws (--seed) */
};
SHP_CONF_HDR_FIRST(struct pie_conf);

/* the kind's drop causes, each name beside its enum (shp_kind.h) */
#define PIE_DROPS(X) \
	/* PIE's random early drop (an ECN-capable packet with ecn is \
	 * marked instead while p <= 10%) */ \
	X(PIE_DROP_EARLY, "pie_dropped") \
	/* the queue held `limit` packets */ \
	X(PIE_DROP_LIMIT, "pie_overlimit")
enum { PIE_DROPS(SHP_CAUSE_ENUM) };
static const char *const pie_drops[] = {
	PIE_DROPS(SHP_CAUSE_NAME) NULL
};

/* its statistics, likewise */
#define PIE_XSTATS(X) \
	/* CE marks where PIE would have dropped */ \
	X(PIE_XS_MARKED, "marked", 0, NULL) \
	/* the drop probability, in millionths */ \
	X(PIE_XS_PROB, "prob_ppm", SHP_XS_GAUGE | SHP_XS_LINK, NULL) \
	/* the queue delay estimate, ns */ \
	X(PIE_XS_DELAY, "delay_ns", SHP_XS_GAUGE | SHP_XS_LINK, NULL) \
	X(PIE_XS_QUEUED, "queued", SHP_XS_GAUGE | SHP_XS_QLEN, NULL)
enum { PIE_XSTATS(SHP_XSTAT_ENUM) };
static const struct shp_xstat_desc pie_xstats[] = {
	PIE_XSTATS(SHP_XSTAT_DESC) { NULL, 0, NULL }
};

/* RFC 8033's state (Linux pie_vars), times in ticks */
struct pie_vars {
	uint64_t qdelay, qdelay_old;
	uint64_t burst_time;
	uint64_t dq_tstamp;        /* PIE_INVALID: none yet */
	uint64_t prob;             /* of PIE_MAX_PROB */
	uint64_t accu_prob;
	uint64_t dq_count;         /* PIE_INVALID: not measuring */
	uint32_t avg_dq_rate;      /* bytes per tick << PIE_DQ_SCALE */
};

/* the link's controller words (link_state.h) and a shard's figures */
enum { PL_NEXT, PL_PROB, PL_QDELAY, PL_QDELAY_OLD, PL_BURST, PL_RESTARTS,
       PL_DEP_AT, PL_TUPDATE, PL_WORDS };
enum { PF_BACKLOG, PF_QLEN, PF_SOJOURN, PF_DEP_AT, PF_DQ_RATE };

struct pie_priv {
	const struct pie_conf *conf;   /* published by change() */
	uint64_t seen;                 /* id of the conf last applied */
	struct shp_meta *head, *tail;
	uint32_t qlen;
	uint64_t backlog;              /* bytes */
	struct pie_vars v;
	uint64_t next_update;          /* ns; 0: no call yet */
	uint64_t key;                  /* the draws' stream */
	uint64_t draws;                /* draws made */
	/* a link's shards: the link's state (NULL: this queue's own) */
	struct shp_link_state *ls;
	uint16_t shard, nb_shards;
	uint64_t tag;                  /* this instance's, in ls */
	uint64_t lw[PL_WORDS];         /* the link's words, last read */
	uint64_t others_qlen, others_backlog;   /* read once a call */
	uint64_t dep_sojourn, dep_at;  /* ticks: the last departure here */
	uint64_t link_at;              /* the clock of the last exchange */
	bool published_empty;         /* this shard's figures say empty */
};

static const struct pie_conf pie_defaults = {
	.limit = PIE_LIMIT_DEFAULT,
	.alpha = PIE_ALPHA_DEFAULT,
	.beta = PIE_BETA_DEFAULT,
	.target = PIE_TARGET_DEFAULT,
	.tupdate = PIE_TUPDATE_DEFAULT,
	.seed = SHP_SEED_DEFAULT,
};

#define PX(q, ctx, i) (*shp_stage_xstat((q), (ctx), (i)))

static inline uint64_t
ticks(uint64_t ns)
{
	return ns >> PIE_TICK_SHIFT;
}

/* pie_vars_init: a new measurement cycle and burst allowance (p and the
 * delays stay) */
static void
vars_restart(struct pie_vars *v)
{
	v->burst_time = PIE_BURST_TICKS;
	v->dq_tstamp = PIE_INVALID;
	v->accu_prob = 0;
	v->dq_count = PIE_INVALID;
	v->avg_dq_rate = 0;
}

/* RFC 8033 4.2 as Linux computes it, every tupdate */
static void
pie_update(const struct pie_conf *c, struct pie_vars *v, uint64_t backlog)
{
	uint64_t qdelay, qdelay_old, target = ticks(c->target), oldprob;
	uint64_t alpha, beta;
	int64_t delta;
	bool decay = true;

	if (c->dq_rate_estimator) {
		qdelay_old = v->qdelay;
		v->qdelay_old = v->qdelay;
		qdelay = v->avg_dq_rate > 0 ?
			 (backlog << PIE_DQ_SCALE) / v->avg_dq_rate : 0;
	} else {
		qdelay = v->qdelay;
		qdelay_old = v->qdelay_old;
	}
	/* less than a tick's worth queued: no decay this round */
	if (qdelay == 0 && backlog != 0)
		decay = false;
	/* alpha and beta are in sixteenths of p per second of delay */
	alpha = ((uint64_t)c->alpha * (PIE_MAX_PROB / PIE_TICKS_PER_SEC)) >> 4;
	beta = ((uint64_t)c->beta * (PIE_MAX_PROB / PIE_TICKS_PER_SEC)) >> 4;
	/* auto-tuning: smaller steps while p is small */
	if (v->prob < PIE_MAX_PROB / 10) {
		uint32_t power = 100;

		alpha >>= 1;
		beta >>= 1;
		while (v->prob < PIE_MAX_PROB / power && power <= 1000000) {
			alpha >>= 2;
			beta >>= 2;
			power *= 10;
		}
	}
	delta = (int64_t)(alpha * (qdelay - target)) +
		(int64_t)(beta * (qdelay - qdelay_old));
	oldprob = v->prob;
	/* steps of at most 2% once p is 10% */
	if (delta > (int64_t)(PIE_MAX_PROB / 50) &&
	    v->prob >= PIE_MAX_PROB / 10)
		delta = (int64_t)(PIE_MAX_PROB / 100) * 2;
	/* a delay beyond 250 ms: 2% more */
	if (qdelay > PIE_BIG_DELAY_TICKS)
		delta += (int64_t)(PIE_MAX_PROB / 50);
	v->prob += (uint64_t)delta;
	/* RFC 8033 bounds p to [0, 1] (Linux only catches a wrap, and then
	 * skips the decay) */
	if (delta > 0) {
		if (v->prob < oldprob || v->prob > PIE_MAX_PROB) {
			v->prob = PIE_MAX_PROB;
			decay = false;
		}
	} else if (v->prob > oldprob) {
		v->prob = 0;
	}
	/* no delay for two updates, the queue gone: p falls by 1/64 an
	 * update (Linux; RFC 8033's pseudo-code decays from half the
	 * target, which holds the delay above it) */
	if (qdelay == 0 && qdelay_old == 0 && decay)
		v->prob -= v->prob / 64;
	v->qdelay = qdelay;
	if (v->qdelay < target / 2 && v->qdelay_old < target / 2 &&
	    v->prob == 0 && (!c->dq_rate_estimator || v->avg_dq_rate > 0))
		vars_restart(v);
	if (!c->dq_rate_estimator)
		v->qdelay_old = qdelay;
}

/* The updates due by now, each with the backlog it finds. */
static inline void
pie_catch_up(struct pie_priv *p, const struct pie_conf *c, uint64_t now)
{
	uint64_t backlog = p->backlog;

	if (unlikely(p->next_update == 0)) {
		p->next_update = (now / c->tupdate + 1) * c->tupdate;
		return;
	}
	while (p->next_update <= now) {
		struct pie_vars before = p->v;

		pie_update(c, &p->v, backlog);
		p->next_update += c->tupdate;
		/* nothing happens between calls: an update that changed
		 * nothing is every one up to now */
		if (memcmp(&before, &p->v, sizeof(before)) == 0 &&
		    p->next_update <= now)
			p->next_update += (now - p->next_update) / c->tupdate *
					  c->tupdate + c->tupdate;
	}
}

/* pie_drop_early: whether the arrival of len bytes is dropped (or
 * marked) */
static bool
pie_drop_early(struct pie_priv *p, const struct pie_conf *c, uint32_t len)
{
	struct pie_vars *v = &p->v;
	uint64_t local = v->prob;
	struct shp_rand r;

	if (v->burst_time > 0)
		return false;
	if (v->qdelay < ticks(c->target) / 2 && v->prob < PIE_MAX_PROB / 5)
		return false;
	/* fewer than two MTUs queued, as RED's min threshold */
	if (p->backlog + p->others_backlog < 2 * PIE_MTU)
		return false;
	if (c->bytemode && len <= PIE_MTU)
		local = (uint64_t)len * (local / PIE_MTU);
	if (local == 0)
		v->accu_prob = 0;
	else
		v->accu_prob += local;
	/* RFC 8033 5.1: de-randomised */
	if (v->accu_prob < (PIE_MAX_PROB / 100) * 85)
		return false;
	if (v->accu_prob >= (PIE_MAX_PROB / 2) * 17)
		return true;
	shp_rand_at(&r, p->key, p->draws++);
	if ((shp_rand_u64(&r) >> 8) < local) {
		v->accu_prob = 0;
		return true;
	}
	return false;
}

/* pie_process_dequeue: m has just left, backlog bytes remain */
static void
pie_departed(const struct pie_conf *c, struct pie_vars *v,
	     struct rte_mbuf *m, uint64_t now_ns, uint64_t backlog)
{
	uint64_t now = ticks(now_ns);
	uint32_t dtime = 0;   /* Linux's width */

	if (!c->dq_rate_estimator) {
		uint64_t t = ticks(shp_meta(m)->rx_ns);

		v->qdelay = now > t ? now - t : 0;
		if (v->dq_tstamp != PIE_INVALID)
			dtime = (uint32_t)(now - v->dq_tstamp);
		v->dq_tstamp = now;
		if (backlog == 0)
			v->qdelay = 0;
		if (dtime == 0)
			return;
	} else {
		if (backlog >= PIE_DQ_THRESHOLD && v->dq_count == PIE_INVALID) {
			v->dq_tstamp = now;
			v->dq_count = 0;
		}
		if (v->dq_count == PIE_INVALID)
			return;
		v->dq_count += rte_pktmbuf_pkt_len(m);
		if (v->dq_count < PIE_DQ_THRESHOLD)
			return;
		dtime = (uint32_t)(now - v->dq_tstamp);
		if (dtime == 0)
			return;
		{
			uint32_t count = (uint32_t)(v->dq_count <<
						    PIE_DQ_SCALE);

			count = (uint32_t)(count / dtime);
			if (v->avg_dq_rate == 0)
				v->avg_dq_rate = count;
			else
				v->avg_dq_rate = v->avg_dq_rate -
						 (v->avg_dq_rate >> 3) +
						 (count >> 3);
		}
		if (backlog < PIE_DQ_THRESHOLD) {
			v->dq_count = PIE_INVALID;
		} else {
			v->dq_count = 0;
			v->dq_tstamp = now;
		}
	}
	v->burst_time = v->burst_time > dtime ? v->burst_time - dtime : 0;
}

static inline struct pie_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

static struct rte_mbuf *
fifo_pop(struct pie_priv *p)
{
	struct shp_meta *h = p->head;
	struct rte_mbuf *m;

	if (h == NULL)
		return NULL;
	p->head = h->next;
	if (p->head == NULL)
		p->tail = NULL;
	m = shp_meta_mbuf(h);
	p->qlen--;
	p->backlog -= rte_pktmbuf_pkt_len(m);
	return m;
}

/*
 * The link's updates due by now, run by the shard that claims them, on
 * the link's delay (see the top). The copy in p->lw is the state after.
 */
static void
pie_link_update(struct pie_priv *p, const struct pie_conf *c, uint64_t now)
{
	uint64_t *w = p->lw, seq, latest = p->dep_at, qdelay = 0, rate = 0;
	uint64_t backlog = p->backlog, prev_dep;
	struct pie_vars lv;
	bool fresh, any;
	uint16_t s;

	if (!shp_link_ctl_claim(p->ls, p->tag, &seq, &fresh))
		return;
	if (fresh) {
		memset(w, 0, sizeof(p->lw));
		w[PL_BURST] = PIE_BURST_TICKS;
	} else {
		for (s = 0; s < PL_WORDS; s++)
			w[s] = p->ls->w[s];
	}
	if (w[PL_TUPDATE] != c->tupdate || w[PL_NEXT] == 0) {
		/* the grid of this tupdate, from the next instant */
		w[PL_TUPDATE] = c->tupdate;
		w[PL_NEXT] = (now / c->tupdate + 1) * c->tupdate;
	}
	prev_dep = w[PL_DEP_AT];
	any = p->dep_at > prev_dep;
	qdelay = any ? p->dep_sojourn : 0;
	rate = p->v.avg_dq_rate;
	for (s = 0; s < p->nb_shards; s++) {
		uint64_t at;

		if (s == p->shard)
			continue;
		at = shp_link_fig_get(p->ls, s, PF_DEP_AT);
		backlog += shp_link_fig_get(p->ls, s, PF_BACKLOG);
		rate += shp_link_fig_get(p->ls, s, PF_DQ_RATE);
		if (at > prev_dep) {
			qdelay = RTE_MAX(qdelay, shp_link_fig_get(p->ls, s,
								  PF_SOJOURN));
			any = true;
		}
		latest = RTE_MAX(latest, at);
	}
	lv = (struct pie_vars){
		.prob = w[PL_PROB], .qdelay = w[PL_QDELAY],
		.qdelay_old = w[PL_QDELAY_OLD], .burst_time = w[PL_BURST],
		.avg_dq_rate = (uint32_t)RTE_MIN(rate, (uint64_t)UINT32_MAX),
	};
	/* timestamps: the sojourn the link's frames left with since the
	 * last update (none left: as it was); none queued: none */
	if (!c->dq_rate_estimator && any)
		lv.qdelay = qdelay;
	if (backlog == 0)
		lv.qdelay = 0;
	/* the allowance runs down while the link sends */
	if (prev_dep != 0 && latest > prev_dep)
		lv.burst_time -= RTE_MIN(latest - prev_dep, lv.burst_time);
	w[PL_DEP_AT] = latest;
	while (w[PL_NEXT] <= now) {
		struct pie_vars before;

		lv.dq_count = 0;   /* vars_restart makes it PIE_INVALID */
		before = lv;
		pie_update(c, &lv, backlog);
		if (lv.dq_count == PIE_INVALID)
			w[PL_RESTARTS]++;
		lv.dq_count = 0;
		w[PL_NEXT] += c->tupdate;
		if (memcmp(&before, &lv, sizeof(lv)) == 0 &&
		    w[PL_NEXT] <= now)
			w[PL_NEXT] += (now - w[PL_NEXT]) / c->tupdate *
				      c->tupdate + c->tupdate;
	}
	w[PL_PROB] = lv.prob;
	w[PL_QDELAY] = lv.qdelay;
	w[PL_QDELAY_OLD] = lv.qdelay_old;
	w[PL_BURST] = lv.burst_time;
	for (s = 0; s < PL_WORDS; s++)
		shp_link_ctl_put(p->ls, s, w[s]);
	shp_link_ctl_publish(p->ls, seq, p->tag);
}

/* A call on a link's shard: the link's state, then this shard's view */
static void
pie_link_sync(struct pie_priv *p, const struct pie_conf *c, uint64_t now)
{
	uint64_t restarts = p->lw[PL_RESTARTS];

	p->others_qlen = shp_link_fig_others(p->ls, p->nb_shards, p->shard,
					     PF_QLEN);
	p->others_backlog = shp_link_fig_others(p->ls, p->nb_shards,
						p->shard, PF_BACKLOG);
	shp_link_ctl_read(p->ls, p->tag, p->lw, PL_WORDS);
	if (p->lw[PL_NEXT] <= now || p->lw[PL_TUPDATE] != c->tupdate)
		pie_link_update(p, c, now);
	/* the link started over (a new burst allowance): so does this
	 * shard's part of the state */
	if (p->lw[PL_RESTARTS] != restarts) {
		p->v.accu_prob = 0;
		p->v.dq_count = PIE_INVALID;
		p->v.avg_dq_rate = 0;
	}
	p->v.prob = p->lw[PL_PROB];
	p->v.qdelay = p->lw[PL_QDELAY];
	p->v.qdelay_old = p->lw[PL_QDELAY_OLD];
	p->v.burst_time = p->lw[PL_BURST];
}

/* what the other shards read of this one, once a poll */
static void
pie_link_publish(const struct pie_priv *p)
{
	shp_link_fig_put(p->ls, p->shard, PF_BACKLOG, p->backlog);
	shp_link_fig_put(p->ls, p->shard, PF_QLEN, p->qlen);
	shp_link_fig_put(p->ls, p->shard, PF_SOJOURN, p->dep_sojourn);
	shp_link_fig_put(p->ls, p->shard, PF_DEP_AT, p->dep_at);
	shp_link_fig_put(p->ls, p->shard, PF_DQ_RATE, p->v.avg_dq_rate);
}

static void
pie_gauges(struct shp_qdisc *q, struct pie_priv *p, struct shp_ctx *ctx)
{
	/* emptied: said at once, or the others would count what left
	 * until this shard's next poll, which may not come */
	if (p->ls != NULL && p->qlen == 0 && !p->published_empty) {
		pie_link_publish(p);
		p->published_empty = true;
	}
	PX(q, ctx, PIE_XS_QUEUED) = p->qlen;
	/* in millionths, and in ns: a gauge is an integer */
	PX(q, ctx, PIE_XS_PROB) = (uint64_t)((double)p->v.prob * 1e6 /
					     (double)PIE_MAX_PROB + 0.5);
	PX(q, ctx, PIE_XS_DELAY) = p->v.qdelay << PIE_TICK_SHIFT;
}

/* The conf for this call; a new one is applied first (Linux pie_change:
 * what is over a lowered limit goes from the head). */
static const struct pie_conf *
pie_sync(struct shp_qdisc *q, struct pie_priv *p, struct shp_ctx *ctx)
{
	const struct pie_conf *c = __atomic_load_n(&p->conf,
						   __ATOMIC_ACQUIRE);

	if (unlikely(c->hdr.id != p->seen)) {
		p->seen = c->hdr.id;
		while (p->qlen > c->limit)
			shp_stage_drop(q, ctx, PIE_DROP_LIMIT, fifo_pop(p));
		if (p->next_update != 0)   /* the grid of the new tupdate */
			p->next_update = (ctx->now / c->tupdate + 1) *
					 c->tupdate;
	}
	if (p->ls != NULL) {
		/* once a poll (one clock value), not a packet: tbf peeks
		 * and takes a packet at a time */
		if (ctx->now != p->link_at) {
			p->link_at = ctx->now;
			pie_link_publish(p);
			p->published_empty = p->qlen == 0;
			pie_link_sync(p, c, ctx->now);
		}
	} else
		pie_catch_up(p, c, ctx->now);
	return c;
}

static uint16_t
pie_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	struct pie_priv *p = priv(q);
	const struct pie_conf *c = pie_sync(q, p, ctx);
	uint16_t i, kept = 0;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint32_t len = rte_pktmbuf_pkt_len(m);
		struct shp_meta *meta;

		if (unlikely(p->qlen + p->others_qlen >= c->limit)) {
			p->v.accu_prob = 0;
			shp_stage_drop_full(q, ctx, PIE_DROP_LIMIT, &m, 1);
			continue;
		}
		if (pie_drop_early(p, c, len)) {
			if (!(c->ecn && p->v.prob <= PIE_MAX_PROB / 10 &&
			      shp_pkthdr_mark_ce(m))) {
				p->v.accu_prob = 0;
				shp_stage_drop(q, ctx, PIE_DROP_EARLY, m);
				continue;
			}
			PX(q, ctx, PIE_XS_MARKED)++;
		}
		meta = shp_meta(m);
		meta->next = NULL;
		if (p->tail != NULL)
			p->tail->next = meta;
		else
			p->head = meta;
		p->tail = meta;
		p->qlen++;
		p->backlog += len;
		kept++;
	}
	pie_gauges(q, p, ctx);
	return kept;
}

static uint16_t
pie_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	struct pie_priv *p = priv(q);
	const struct pie_conf *c = pie_sync(q, p, ctx);
	uint64_t bytes = 0;
	uint16_t got = 0;

	while (got < n) {
		struct rte_mbuf *m = fifo_pop(p);

		if (m == NULL)
			break;
		if (p->ls != NULL && !c->dq_rate_estimator) {
			/* the link's controller reads it (pie_link_update) */
			uint64_t now = ticks(ctx->now);
			uint64_t t = ticks(shp_meta(m)->rx_ns);

			p->dep_sojourn = now > t ? now - t : 0;
			p->dep_at = now;
		} else {
			pie_departed(c, &p->v, m, ctx->now, p->backlog);
			if (p->ls != NULL)
				p->dep_at = ticks(ctx->now);
		}
		bytes += rte_pktmbuf_pkt_len(m);
		pkts[got++] = m;
	}
	pie_gauges(q, p, ctx);
	ctx->bytes = bytes;
	return got;
}

static struct rte_mbuf *
pie_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct pie_priv *p = priv(q);

	RTE_SET_USED(ctx);
	return p->head != NULL ? shp_meta_mbuf(p->head) : NULL;
}

static uint64_t
pie_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	return priv(q)->qlen > 0 ? ctx->now : UINT64_MAX;
}

static void
pie_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct pie_priv *p = priv(q);
	struct rte_mbuf *m;

	while ((m = fifo_pop(p)) != NULL)
		shp_drop(ctx, SHP_DROP_FLUSHED, m);
	vars_restart(&p->v);
	pie_gauges(q, p, ctx);
}

static int
pie_init(struct shp_qdisc *q, const void *conf)
{
	const struct pie_conf *c = conf != NULL ? conf : &pie_defaults;
	struct pie_priv *p = priv(q);

	p->key = shp_rand_key(shp_rand_key(c->seed, q->port), PIE_STREAM);
	vars_restart(&p->v);
	p->ls = shp_link_queue(q);
	if (p->ls != NULL) {
		p->shard = q->env->shard;
		p->nb_shards = q->env->nb_shards;
		/* this instance: the shards' copies of one conf share its
		 * id (shp_conf_twin) */
		p->tag = (PIE_STREAM << 40) ^ c->hdr.id;
		if (p->shard > 0)
			p->key = shp_rand_key(p->key, p->shard);
	}
	p->conf = c;
	p->seen = c->hdr.id;
	return 0;
}

static const void *
pie_change(struct shp_qdisc *q, const void *conf)
{
	const struct pie_conf *old = priv(q)->conf;

	if (conf == NULL)
		conf = &pie_defaults;
	__atomic_store_n(&priv(q)->conf, (const struct pie_conf *)conf,
			 __ATOMIC_RELEASE);
	return old == &pie_defaults ? NULL : old;
}

static void
pie_fini(struct shp_qdisc *q)
{
	struct rte_mbuf *m;

	while ((m = fifo_pop(priv(q))) != NULL)
		rte_pktmbuf_free(m);
}

static void
pie_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	const struct pie_priv *p = priv(q);

	st->qlen = p->qlen;
	st->backlog = p->backlog;
}

static int pie_format(const void *conf, char *buf, size_t len);

static void
pie_dump(const struct shp_qdisc *q, FILE *f)
{
	char buf[256];

	pie_format(__atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE), buf,
		   sizeof(buf));
	fprintf(f, "%s", buf);
}

const struct shp_qdisc_ops shp_pie_ops = {
	.id = "pie",
	.priv_size = sizeof(struct pie_priv),
	.mp_enqueue = false,
	.arrival_order = true,
	.init = pie_init,
	.change = pie_change,
	.enqueue = pie_enqueue,
	.dequeue = pie_dequeue,
	.peek = pie_peek,
	.next_time = pie_next_time,
	.reset = pie_reset,
	.stats = pie_stats,
	.dump = pie_dump,
	.fini = pie_fini,
};

/* The control plane: q_pie.c's grammar (exact keywords). */

#define PIE_MAX_WORDS 32
#define PIE_MAX_LEN   512

static int
pie_u32(struct shp_tcargs *a, const char *kw, uint32_t min, uint32_t max,
	uint32_t *v)
{
	if (shp_tc_next(a, "a number"))
		return -1;
	/* the limit also as tc prints it: "1000p" */
	if (strcmp(kw, "limit") == 0) {
		char *w = a->argv[a->i];
		size_t l = strlen(w);

		if (l > 1 && w[l - 1] == 'p')
			w[l - 1] = '\0';
	}
	if (shp_tc_u32(a, kw, v))
		return -1;
	if (*v < min || *v > max)
		return shp_tc_fail(a, "%s: '%s' must be within %" PRIu32
				   "..%" PRIu32, kw, shp_tc_cur(a), min, max);
	return 0;
}

static int
pie_time(struct shp_tcargs *a, const char *kw, uint64_t *ns)
{
	/* a bare number is microseconds, as tc's get_time; the kernel
	 * takes 32 bits of microseconds */
	if (shp_tc_next(a, "a time") ||
	    shp_tc_time_bare(a, kw, SHP_TC_BARE_US, ns))
		return -1;
	if (*ns == 0 || *ns > UINT32_MAX * 1000ULL)
		return shp_tc_fail(a, "%s: '%s' must be within 1ns..4294s",
				   kw, shp_tc_cur(a));
	return 0;
}

static int
pie_words(struct shp_tcargs *a, struct pie_conf *c)
{
	for (a->i = 0; a->i < a->argc; a->i++) {
		const char *w = shp_tc_cur(a);
		int rc = 0;

		if (strcmp(w, "limit") == 0)
			rc = pie_u32(a, "limit", 1, UINT32_MAX, &c->limit);
		else if (strcmp(w, "target") == 0)
			rc = pie_time(a, "target", &c->target);
		else if (strcmp(w, "tupdate") == 0)
			rc = pie_time(a, "tupdate", &c->tupdate);
		else if (strcmp(w, "alpha") == 0)
			rc = pie_u32(a, "alpha", 0, PIE_AB_MAX, &c->alpha);
		else if (strcmp(w, "beta") == 0)
			rc = pie_u32(a, "beta", 0, PIE_AB_MAX, &c->beta);
		else if (strcmp(w, "ecn") == 0)
			c->ecn = true;
		else if (strcmp(w, "noecn") == 0)
			c->ecn = false;
		else if (strcmp(w, "bytemode") == 0)
			c->bytemode = true;
		else if (strcmp(w, "nobytemode") == 0)
			c->bytemode = false;
		else if (strcmp(w, "dq_rate_estimator") == 0)
			c->dq_rate_estimator = true;
		else if (strcmp(w, "no_dq_rate_estimator") == 0)
			c->dq_rate_estimator = false;
		else
			return shp_tc_fail(a, "unknown word '%s' (limit, "
					   "target, tupdate, alpha, beta, ecn, "
					   "noecn, bytemode, nobytemode, "
					   "dq_rate_estimator, "
					   "no_dq_rate_estimator)", w);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static void *
pie_parse(const char *args, const struct shp_kind_env *env, char *err)
{
	struct shp_tcargs a = { .qdisc = "pie", .err = err };
	char buf[PIE_MAX_LEN], *argv[PIE_MAX_WORDS];
	struct pie_conf c = pie_defaults, *out;

	err[0] = '\0';
	if (shp_tc_split(&a, args, buf, sizeof(buf), argv,
			 PIE_MAX_WORDS) < 0 || pie_words(&a, &c) < 0)
		return NULL;
	if (env != NULL && env->seed_set)
		c.seed = env->seed;
	out = malloc(sizeof(*out));
	if (out == NULL) {
		snprintf(err, SHP_ERR_LEN, "pie: out of memory");
		return NULL;
	}
	c.hdr.id = shp_conf_new_id();
	*out = c;
	return out;
}

/* Every parameter, in the order of tc's print, the flags as words that
 * parse back whatever the defaults become. */
static int
pie_format(const void *conf, char *buf, size_t len)
{
	const struct pie_conf *c = conf;
	char t[32], u[32];

	shp_fmt_time(t, sizeof(t), c->target);
	shp_fmt_time(u, sizeof(u), c->tupdate);
	return snprintf(buf, len, "limit %" PRIu32 " target %s tupdate %s "
			"alpha %" PRIu32 " beta %" PRIu32 " %s %s%s",
			c->limit, t, u, c->alpha, c->beta,
			c->ecn ? "ecn" : "noecn",
			c->bytemode ? "bytemode" : "nobytemode",
			c->dq_rate_estimator ? " dq_rate_estimator" : "");
}

/* As q_pie.c prints it: "limit 1000p target 15ms tupdate 15ms alpha 2
 * beta 20", then each flag that is on */
static int
pie_tc_print(const char *args, const struct shp_kind_env *env,
	     const char **tc_name, char *buf, size_t len)
{
	char err[SHP_ERR_LEN], t[32], u[32];
	struct pie_conf *c = pie_parse(args, env, err);
	int n;

	RTE_SET_USED(tc_name);
	if (c == NULL)
		return snprintf(buf, len, "%s", args);
	shp_fmt_tc_time(t, sizeof(t), c->target, true);
	shp_fmt_tc_time(u, sizeof(u), c->tupdate, true);
	n = snprintf(buf, len, "limit %" PRIu32 "p target %s tupdate %s "
		     "alpha %" PRIu32 " beta %" PRIu32 "%s%s%s", c->limit, t,
		     u, c->alpha, c->beta, c->ecn ? " ecn" : "",
		     c->bytemode ? " bytemode" : "",
		     c->dq_rate_estimator ? " dq_rate_estimator" : "");
	free(c);
	return n;
}

static uint64_t
pie_capacity(const void *conf, const struct shp_kind_env *env)
{
	const struct pie_conf *c = conf;

	RTE_SET_USED(env);
	return c != NULL ? c->limit : PIE_LIMIT_DEFAULT;
}

static const char *const pie_exclusive[] = {
	"ecn", "noecn", "bytemode", "nobytemode",
	"dq_rate_estimator", "no_dq_rate_estimator", NULL
};

const struct shp_kind shp_kind_pie = {
	.name = "pie",
	.slot = SHP_SLOT_QUEUE,
	.ops = &shp_pie_ops,
	.parse = pie_parse,
	.format = pie_format,
	.tc_print = pie_tc_print,
	.conf_free = free,
	.capacity = pie_capacity,
	.drops = pie_drops,
	.xstats = pie_xstats,
	/* test_aqm's model runs at --queues 4, one flow on one shard */
	.shards_note = "its controller is the link's, but its early drops "
		       "fall on other frames than one queue's (the link's "
		       "drops within 1% of one queue's)",
	.usage = "pie [limit PACKETS] [target TIME] [tupdate TIME] "
		 "[alpha 0..32] [beta 0..32] [ecn|noecn] "
		 "[bytemode|nobytemode] "
		 "[dq_rate_estimator|no_dq_rate_estimator]",
	.words = "limit#target#tupdate#alpha#beta#ecn#noecn#bytemode#"
		 "nobytemode#dq_rate_estimator#no_dq_rate_estimator",
	.exclusive = pie_exclusive,
};
