/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * red: Random Early Detection (Floyd and Jacobson 1993, as Linux's
 * sch_red and red.h implement it), as the port's bottleneck queue:
 *
 *   red limit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst PACKETS]
 *       [probability P] [bandwidth RATE] [ecn] [harddrop] [adaptive]
 *       [nodrop]
 *
 * with tc's derivations: max limit/4 (or 3 min), min max/3, burst
 * (2 min + max) / (3 avpkt), probability 0.02, bandwidth 10mbit; the
 * EWMA weight 2^-Wlog from burst, min and avpkt (tc_red_eval_ewma), the
 * idle-time table (Scell_log, Stab) from Wlog, avpkt and bandwidth
 * (tc_red_eval_idle_damping). tc requires limit and avpkt; here they
 * default to tc-red(8)'s example, 400000 and 1000.
 *
 * Each arrival updates the average backlog (bytes, fixed point at Wlog:
 * avg += backlog - avg / 2^Wlog), or, after an idle period, decays it as
 * if idle / (avpkt / bandwidth) empty packets had arrived (Stab's
 * shifts, linear for the first part). Below min nothing happens; at or
 * above max the packet is dropped (red_forced; marked CE instead with
 * ecn, unless harddrop); between, it is dropped (red_early) or marked
 * with probability p_b = max_P (avg - min) / (max - min), spaced by
 * the count of packets since the last one: a uniform draw R in
 * [0, 1 / (p_b per byte)) is made after each, and the next comes when
 * (avg - min) * count reaches R (Linux's form of Floyd's
 * p_a = p_b / (1 - count p_b)). nodrop queues a non-ECT packet ecn
 * would have dropped. adaptive moves max_P every 500 ms toward an
 * average between 40% and 60% of the way from min to max (Floyd's
 * Adaptive RED, Linux's steps). What would pass `limit` bytes is
 * dropped (red_limit).
 *
 * The idle period starts when a dequeue, or an enqueue that kept
 * nothing, leaves the queue empty (Linux: when a dequeue finds it
 * empty, which a tbf in front never does); its
 * length is read in microseconds against a table tc computed in 64 ns
 * ticks, as Linux does, so the same arrivals give the same decisions.
 * The adaptive steps run on a 500 ms grid of the shaper clock (ctx->now).
 *
 * Random draws: event n of the stream (seed, port, "red") is the n-th
 * draw this stage made (shp_rand.h): reproducible, and the test suite's
 * model (test/replay/aqm_ref.py) draws the same numbers.
 *
 * On a link's shards (env->link, issue 59) the average, the count since
 * the last mark and the draws are the link's one state (link_state.h's
 * st): each burst of arrivals moves it with one swap, its average taken
 * over the link's backlog (every shard's, as each last published it,
 * plus this one's), and makes its decisions from it, again if another
 * shard's swap came first; so the link's arrivals move one average in
 * the order their bursts were swapped, and draw n of the stream is the
 * link's n-th, whichever shard makes it. The idle period is the link's:
 * it starts when the link's backlog is gone. limit bounds the link's
 * bytes. adaptive steps each shard's max_P from the link's average on
 * the same 500 ms grid. One queue: its own state, as before.
 *
 * Threads: the owner lcore only; change() publishes a conf pointer each
 * call loads once. Packets link through meta->next. Nothing is
 * allocated per packet.
 */
#include <inttypes.h>
#include <math.h>
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

#define RED_LIMIT_DEFAULT  400000
#define RED_AVPKT_DEFAULT  1000
#define RED_PROB_DEFAULT   0.02
#define RED_RATE_DEFAULT   1250000ULL          /* 10mbit, bytes/s */
#define RED_STAB_SIZE      256
#define RED_ONE_PERCENT    42949673U           /* 2^32 / 100, rounded */
#define RED_MAX_P_MIN      RED_ONE_PERCENT
#define RED_MAX_P_MAX      (50U * RED_ONE_PERCENT)
#define RED_ADAPT_NS       500000000ULL        /* Linux: HZ / 2 */
#define RED_TICKS_PER_US   15.625              /* tc's psched tick */
#define RED_MIN_FRAME      60
#define RED_STREAM         0x726564ULL         /* "red" */

struct red_conf {
	struct shp_conf_hdr hdr;   /* first: shp_qdisc.h */
	uint32_t limit, qth_min, qth_max, avpkt, burst;   /* bytes, pkts */
	double probability;
	uint64_t rate;             /* bandwidth, bytes/s */
	bool ecn, harddrop, adaptive, nodrop;
	/* what tc computes and hands the kernel */
	uint8_t Wlog, Plog, Scell_log;
	uint32_t max_P;            /* probability, of 2^32 */
	uint8_t stab[RED_STAB_SIZE];
	uint64_t seed;
};
SHP_CONF_HDR_FIRST(struct red_conf);

/* the kind's drop causes, each name beside its enum (shp_kind.h) */
#define RED_DROPS(X) \
	/* dropped between min and max (p_b, count-spaced) */ \
	X(RED_DROP_EARLY, "red_early") \
	/* dropped at or above max */ \
	X(RED_DROP_FORCED, "red_forced") \
	/* the byte limit */ \
	X(RED_DROP_LIMIT, "red_limit")
enum { RED_DROPS(SHP_CAUSE_ENUM) };
static const char *const red_drops[] = {
	RED_DROPS(SHP_CAUSE_NAME) NULL
};

/* its statistics, likewise */
#define RED_XSTATS(X) \
	/* CE marks, early and forced, where RED would have dropped */ \
	X(RED_XS_MARKED, "marked", 0, NULL) \
	/* the average queue, bytes */ \
	X(RED_XS_QAVG, "qavg", SHP_XS_GAUGE | SHP_XS_LINK, NULL) \
	X(RED_XS_QUEUED, "queued", SHP_XS_GAUGE | SHP_XS_QLEN, NULL)
enum { RED_XSTATS(SHP_XSTAT_ENUM) };
static const struct shp_xstat_desc red_xstats[] = {
	RED_XSTATS(SHP_XSTAT_DESC) { NULL, 0, NULL }
};

struct red_priv {
	const struct red_conf *conf;   /* published by change() */
	uint64_t seen;
	struct shp_meta *head, *tail;
	uint32_t qlen;
	uint64_t backlog;
	/* red_parms of the conf in use (adaptive moves max_P) */
	uint32_t qth_min, qth_max;     /* << Wlog */
	uint32_t qth_delta, target_min, target_max;
	uint32_t max_P, max_p_delta;
	/* red_vars */
	int32_t qcount;
	uint32_t qR;
	uint64_t qavg;                 /* << Wlog */
	bool idling;
	uint64_t idle_start;           /* ns */
	uint64_t next_adapt;           /* ns; 0: not yet */
	uint64_t key, draws;
	/* a link's shards: the link's state (NULL: this queue's own) */
	struct shp_link_state *ls;
	uint16_t shard, nb_shards;
	uint64_t link_at;              /* the clock of the last publish */
	uint32_t published_qlen;       /* what this shard last said */
};

/*
 * The link's state in st: .val[0] the average (<< Wlog), .val[1] the
 * count since the last mark plus one (bits 0..19, saturated), the draws
 * made (bits 20..55), the conf's tag (bits 56..62: the low bits of its
 * id, which the shards' copies share) and whether the link is idle
 * (bit 63). The controller's word 0 holds when its idle period began.
 */
#define RL_QC_MASK     ((1ULL << 20) - 1)
#define RL_DRAWS_SHIFT 20
#define RL_DRAWS_MASK  ((1ULL << 36) - 1)
#define RL_TAG_SHIFT   56
#define RL_TAG_MASK    0x7fULL
#define RL_IDLE        (1ULL << 63)
#define RL_CHUNK       64     /* arrivals decided per swap */
enum { RF_BACKLOG, RF_QLEN };

static struct red_conf red_defaults;   /* made by red_derive at start */

#define RX(q, ctx, i) (*shp_stage_xstat((q), (ctx), (i)))

static inline struct red_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

/* red_set_parms and red_set_vars */
static void
red_apply(struct red_priv *p, const struct red_conf *c)
{
	int32_t delta = (int32_t)(c->qth_max - c->qth_min);
	uint32_t max_P = c->max_P;

	p->qth_min = c->qth_min << c->Wlog;
	p->qth_max = c->qth_max << c->Wlog;
	if (delta <= 0)
		delta = 1;
	p->qth_delta = (uint32_t)delta;
	if (max_P == 0)
		max_P = (UINT32_MAX >> c->Plog) * (uint32_t)delta;
	p->max_P = max_P;
	p->max_p_delta = RTE_MAX(max_P / (uint32_t)delta, 1u);
	delta /= 5;
	p->target_min = c->qth_min + 2 * (uint32_t)delta;
	p->target_max = c->qth_min + 3 * (uint32_t)delta;
	p->qavg = 0;
	p->qcount = -1;
}

/* the average after an idle period that started at p->idle_start */
static uint64_t
red_qavg_idle_at(uint64_t qavg, uint64_t idle_start,
		 const struct red_conf *c, uint64_t now)
{
	uint64_t us = now > idle_start ? (now - idle_start) / 1000 : 0;
	uint64_t dec;
	unsigned int shift;

	us = RTE_MIN(us, (uint64_t)255 << c->Scell_log);
	shift = c->stab[(us >> c->Scell_log) & (RED_STAB_SIZE - 1)];
	if (shift)
		return qavg >> shift;
	/* (1 - W)^m as 1 - mW for the first part */
	dec = (qavg * us) >> c->Scell_log;
	return dec < (qavg >> 1) ? qavg - dec : qavg >> 1;
}

static uint64_t
red_qavg_idle(const struct red_priv *p, const struct red_conf *c,
	      uint64_t now)
{
	return red_qavg_idle_at(p->qavg, p->idle_start, c, now);
}

static uint32_t
red_random(struct red_priv *p)
{
	struct shp_rand r;

	shp_rand_at(&r, p->key, p->draws++);
	return (uint32_t)(shp_rand_u64(&r) >> 32) / p->max_p_delta;
}

/* the draw of stream position n, as red_random made it */
static uint32_t
red_qr_at(const struct red_priv *p, uint64_t n)
{
	struct shp_rand r;

	shp_rand_at(&r, p->key, n);
	return (uint32_t)(shp_rand_u64(&r) >> 32) / p->max_p_delta;
}

enum { RED_DONT_MARK, RED_PROB_MARK, RED_HARD_MARK };

static int
red_action(struct red_priv *p, const struct red_conf *c)
{
	if (p->qavg < p->qth_min) {
		p->qcount = -1;
		return RED_DONT_MARK;
	}
	if (p->qavg >= p->qth_max) {
		p->qcount = -1;
		return RED_HARD_MARK;
	}
	if (++p->qcount) {
		if (((p->qavg - p->qth_min) >> c->Wlog) *
		    (uint64_t)p->qcount >= p->qR) {
			p->qcount = 0;
			p->qR = red_random(p);
			return RED_PROB_MARK;
		}
	} else {
		p->qR = red_random(p);
	}
	return RED_DONT_MARK;
}

/* Adaptive RED's step (Linux red_adaptative_algo) */
static void
red_adapt(struct red_priv *p, const struct red_conf *c, uint64_t now)
{
	uint64_t qavg = p->idling ? red_qavg_idle(p, c, now) : p->qavg;

	qavg >>= c->Wlog;
	if (qavg > p->target_max && p->max_P <= RED_MAX_P_MAX)
		p->max_P += RTE_MIN(RED_MAX_P_MIN, p->max_P / 4);
	else if (qavg < p->target_min && p->max_P >= RED_MAX_P_MIN)
		p->max_P = (p->max_P / 10) * 9;
	p->max_p_delta = RTE_MAX((p->max_P + p->qth_delta / 2) / p->qth_delta,
				 1u);
}

static const struct red_conf *
red_sync(struct shp_qdisc *q, struct red_priv *p, struct shp_ctx *ctx)
{
	const struct red_conf *c = __atomic_load_n(&p->conf,
						   __ATOMIC_ACQUIRE);

	if (unlikely(c->hdr.id != p->seen)) {
		/* Linux red_change: new parameters, a new average */
		p->seen = c->hdr.id;
		red_apply(p, c);
		p->next_adapt = 0;
		if (p->qlen == 0) {
			p->idling = true;
			p->idle_start = ctx->now;
		}
	}
	if (c->adaptive) {
		if (p->next_adapt == 0)
			p->next_adapt = (ctx->now / RED_ADAPT_NS + 1) *
					RED_ADAPT_NS;
		while (p->next_adapt <= ctx->now) {
			red_adapt(p, c, p->next_adapt);
			p->next_adapt += RED_ADAPT_NS;
		}
	}
	return c;
}

static struct rte_mbuf *
fifo_pop(struct red_priv *p)
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

static void
red_gauges(struct shp_qdisc *q, struct red_priv *p,
	   const struct red_conf *c, struct shp_ctx *ctx)
{
	/* once a poll (one clock value; tbf takes a packet at a time),
	 * and at once when the queue empties or fills from empty */
	if (p->ls != NULL && (ctx->now != p->link_at ||
			      (p->qlen == 0) != (p->published_qlen == 0))) {
		shp_link_fig_put(p->ls, p->shard, RF_BACKLOG, p->backlog);
		shp_link_fig_put(p->ls, p->shard, RF_QLEN, p->qlen);
		p->link_at = ctx->now;
		p->published_qlen = p->qlen;
	}
	RX(q, ctx, RED_XS_QUEUED) = p->qlen;
	RX(q, ctx, RED_XS_QAVG) = p->qavg >> c->Wlog;
}

/* The drop cause of an arrival (its average taken), -1 to keep it;
 * *mark: to be marked CE (whether m can be is asked only then) */
static int
red_decide(struct red_priv *p, const struct red_conf *c,
	   const struct rte_mbuf *m, bool *mark)
{
	int action = red_action(p, c);

	*mark = false;
	if (action == RED_DONT_MARK)
		return -1;
	if (c->ecn && !(action == RED_HARD_MARK && c->harddrop) &&
	    shp_pkthdr_can_mark_ce(m)) {
		*mark = true;
		return -1;
	}
	if (c->ecn && c->nodrop && !(action == RED_HARD_MARK && c->harddrop))
		return -1;
	return action == RED_PROB_MARK ? RED_DROP_EARLY : RED_DROP_FORCED;
}

/* m kept: marked when decided so, at the FIFO's tail */
static void
red_keep(struct shp_qdisc *q, struct red_priv *p, struct rte_mbuf *m,
	 bool mark, struct shp_ctx *ctx)
{
	struct shp_meta *meta = shp_meta(m);

	if (mark && shp_pkthdr_mark_ce(m))
		RX(q, ctx, RED_XS_MARKED)++;
	meta->next = NULL;
	if (p->tail != NULL)
		p->tail->next = meta;
	else
		p->head = meta;
	p->tail = meta;
	p->qlen++;
	p->backlog += rte_pktmbuf_pkt_len(m);
}

static uint16_t red_enqueue_link(struct shp_qdisc *q, struct red_priv *p,
				 const struct red_conf *c,
				 struct rte_mbuf **pkts, uint16_t n,
				 struct shp_ctx *ctx);

static uint16_t
red_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	struct red_priv *p = priv(q);
	const struct red_conf *c = red_sync(q, p, ctx);
	uint16_t i, kept = 0;

	if (p->ls != NULL)
		return red_enqueue_link(q, p, c, pkts, n, ctx);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint32_t len = rte_pktmbuf_pkt_len(m);
		bool mark;
		int cause;

		if (p->idling) {
			p->qavg = red_qavg_idle(p, c, ctx->now);
			p->idling = false;
		} else {
			p->qavg = p->qavg + p->backlog - (p->qavg >> c->Wlog);
		}
		cause = red_decide(p, c, m, &mark);
		if (cause >= 0) {
			shp_stage_drop(q, ctx, (unsigned int)cause, m);
			continue;
		}
		/* the byte fifo under Linux's red */
		if (p->backlog + len > c->limit) {
			shp_stage_drop_full(q, ctx, RED_DROP_LIMIT, &m, 1);
			continue;
		}
		red_keep(q, p, m, mark, ctx);
		kept++;
	}
	/* all dropped into an empty queue: idle again from now (Linux's
	 * next dequeue finds it empty) */
	if (p->qlen == 0 && !p->idling) {
		p->idling = true;
		p->idle_start = ctx->now;
	}
	red_gauges(q, p, c, ctx);
	return kept;
}

static uint64_t
red_ctl_tag(const struct red_conf *c)
{
	return (RED_STREAM << 40) ^ c->hdr.id;
}

/* The link has nothing queued: its idle period starts now (the time
 * first, then the flag; a claim lost to another shard: that one is
 * busy, the link not idle) */
static bool
red_link_idle_at(struct red_priv *p, const struct red_conf *c, uint64_t now)
{
	uint64_t seq;
	bool fresh;

	if (!shp_link_ctl_claim(p->ls, red_ctl_tag(c), &seq, &fresh))
		return false;
	shp_link_ctl_put(p->ls, 0, now);
	shp_link_ctl_publish(p->ls, seq, red_ctl_tag(c));
	return true;
}

/*
 * Arrivals on a link's shard: decided on the link's state, a chunk at a
 * time, each chunk with one swap of it (again on the state another
 * shard swapped in first), then dropped, marked or queued.
 */
static uint16_t
red_enqueue_link(struct shp_qdisc *q, struct red_priv *p,
		 const struct red_conf *c, struct rte_mbuf **pkts, uint16_t n,
		 struct shp_ctx *ctx)
{
	uint64_t tag = (c->hdr.id & RL_TAG_MASK) << RL_TAG_SHIFT;
	uint16_t done = 0, kept = 0;

	while (done < n) {
		uint16_t k = RTE_MIN(n - done, RL_CHUNK), i;
		struct rte_mbuf **b = pkts + done;
		int8_t cause[RL_CHUNK];
		bool mark[RL_CHUNK];
		uint64_t others = shp_link_fig_others(p->ls, p->nb_shards,
						      p->shard, RF_BACKLOG);
		rte_int128_t cur = shp_link_st_load(p->ls), want;

		for (;;) {
			uint64_t added = 0, st = 0;
			bool idling = false, idle_now;

			if ((cur.val[1] & (RL_TAG_MASK << RL_TAG_SHIFT)) != tag) {
				/* a new conf: a new average (red_change) */
				p->qavg = 0;
				p->qcount = -1;
				p->draws = 0;
			} else {
				p->qavg = cur.val[0];
				p->qcount = (int32_t)(cur.val[1] & RL_QC_MASK) - 1;
				p->draws = (cur.val[1] >> RL_DRAWS_SHIFT) &
					   RL_DRAWS_MASK;
				idling = (cur.val[1] & RL_IDLE) != 0;
			}
			p->qR = p->draws > 0 ? red_qr_at(p, p->draws - 1) : 0;
			for (i = 0; i < k; i++) {
				uint32_t len = rte_pktmbuf_pkt_len(b[i]);
				uint64_t backlog = p->backlog + others + added;
				int cs;

				if (idling) {
					if (shp_link_ctl_read(p->ls,
							      red_ctl_tag(c),
							      &st, 1))
						p->qavg = red_qavg_idle_at(
							p->qavg, st, c,
							ctx->now);
					idling = false;
				} else {
					p->qavg = p->qavg + backlog -
						  (p->qavg >> c->Wlog);
				}
				cs = red_decide(p, c, b[i], &mark[i]);
				if (cs < 0 && backlog + len > c->limit)
					cs = RED_DROP_LIMIT;
				if (cs < 0)
					added += len;
				cause[i] = (int8_t)cs;
			}
			/* all dropped into an empty link: idle from now */
			idle_now = added == 0 && p->qlen == 0 && others == 0 &&
				   red_link_idle_at(p, c, ctx->now);
			want.val[0] = p->qavg;
			want.val[1] = RTE_MIN((uint64_t)(p->qcount + 1),
					      RL_QC_MASK) |
				      (p->draws & RL_DRAWS_MASK) <<
				      RL_DRAWS_SHIFT | tag |
				      (idle_now ? RL_IDLE : 0);
			if (shp_link_st_swap(p->ls, &cur, &want))
				break;
		}
		for (i = 0; i < k; i++) {
			struct rte_mbuf *m = b[i];

			if (cause[i] == RED_DROP_LIMIT) {
				shp_stage_drop_full(q, ctx, RED_DROP_LIMIT,
						    &m, 1);
				continue;
			}
			if (cause[i] >= 0) {
				shp_stage_drop(q, ctx, (unsigned int)cause[i],
					       m);
				continue;
			}
			red_keep(q, p, m, mark[i], ctx);
			kept++;
		}
		done += k;
	}
	red_gauges(q, p, c, ctx);
	return kept;
}

/* A link's shard emptied its queue: the link may have gone idle */
static void
red_dequeue_link(struct red_priv *p, const struct red_conf *c, uint64_t now)
{
	uint64_t tag = (c->hdr.id & RL_TAG_MASK) << RL_TAG_SHIFT;
	rte_int128_t cur, want;
	int tries;

	if (p->qlen > 0 || shp_link_fig_others(p->ls, p->nb_shards, p->shard,
					       RF_BACKLOG) > 0)
		return;
	cur = shp_link_st_load(p->ls);
	for (tries = 0; tries < 4; tries++) {
		if ((cur.val[1] & (RL_TAG_MASK << RL_TAG_SHIFT)) != tag ||
		    (cur.val[1] & RL_IDLE))
			return;
		if (!red_link_idle_at(p, c, now))
			return;
		want = cur;
		want.val[1] |= RL_IDLE;
		if (shp_link_st_swap(p->ls, &cur, &want))
			return;
	}
}

static uint16_t
red_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	struct red_priv *p = priv(q);
	const struct red_conf *c = red_sync(q, p, ctx);
	uint64_t bytes = 0;
	uint16_t got = 0;

	while (got < n) {
		struct rte_mbuf *m = fifo_pop(p);

		if (m == NULL)
			break;
		bytes += rte_pktmbuf_pkt_len(m);
		pkts[got++] = m;
	}
	if (p->ls != NULL)
		red_dequeue_link(p, c, ctx->now);
	else if (p->qlen == 0 && !p->idling) {
		p->idling = true;
		p->idle_start = ctx->now;
	}
	red_gauges(q, p, c, ctx);
	ctx->bytes = bytes;
	return got;
}

static struct rte_mbuf *
red_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct red_priv *p = priv(q);

	RTE_SET_USED(ctx);
	return p->head != NULL ? shp_meta_mbuf(p->head) : NULL;
}

static uint64_t
red_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	return priv(q)->qlen > 0 ? ctx->now : UINT64_MAX;
}

static void
red_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct red_priv *p = priv(q);
	const struct red_conf *c = __atomic_load_n(&p->conf,
						   __ATOMIC_ACQUIRE);
	struct rte_mbuf *m;

	while ((m = fifo_pop(p)) != NULL)
		shp_drop(ctx, SHP_DROP_FLUSHED, m);
	/* Linux red_reset: red_restart */
	p->idling = false;
	p->qavg = 0;
	p->qcount = -1;
	red_gauges(q, p, c, ctx);
}

static int red_derive(struct red_conf *c, char *err);

static int
red_init(struct shp_qdisc *q, const void *conf)
{
	const struct red_conf *c = conf;
	struct red_priv *p = priv(q);

	if (c == NULL)
		c = &red_defaults;
	p->key = shp_rand_key(shp_rand_key(c->seed, q->port), RED_STREAM);
	red_apply(p, c);
	p->ls = shp_link_queue(q);
	if (p->ls != NULL) {
		/* the draws are the link's: one stream, any shard */
		p->shard = q->env->shard;
		p->nb_shards = q->env->nb_shards;
	}
	p->conf = c;
	p->seen = c->hdr.id;
	return 0;
}

static const void *
red_change(struct shp_qdisc *q, const void *conf)
{
	const struct red_conf *old = priv(q)->conf;

	if (conf == NULL)
		conf = &red_defaults;
	__atomic_store_n(&priv(q)->conf, (const struct red_conf *)conf,
			 __ATOMIC_RELEASE);
	return old == &red_defaults ? NULL : old;
}

static void
red_fini(struct shp_qdisc *q)
{
	struct rte_mbuf *m;

	while ((m = fifo_pop(priv(q))) != NULL)
		rte_pktmbuf_free(m);
}

static void
red_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	const struct red_priv *p = priv(q);

	st->qlen = p->qlen;
	st->backlog = p->backlog;
}

static int red_format(const void *conf, char *buf, size_t len);

static void
red_dump(const struct shp_qdisc *q, FILE *f)
{
	char buf[256];

	red_format(__atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE), buf,
		   sizeof(buf));
	fprintf(f, "%s", buf);
}

const struct shp_qdisc_ops shp_red_ops = {
	.id = "red",
	.priv_size = sizeof(struct red_priv),
	.mp_enqueue = false,
	.arrival_order = true,
	.init = red_init,
	.change = red_change,
	.enqueue = red_enqueue,
	.dequeue = red_dequeue,
	.peek = red_peek,
	.next_time = red_next_time,
	.reset = red_reset,
	.stats = red_stats,
	.dump = red_dump,
	.fini = red_fini,
};

/* The control plane: q_red.c's grammar and tc_red.c's derivations. */

#define RED_MAX_WORDS 32
#define RED_MAX_LEN   512

static int
red_fls(uint32_t x)
{
	return x ? 32 - __builtin_clz(x) : 0;
}

/*
 * What tc fills in and computes (q_red.c, tc_red.c), then the kernel's
 * red_check_params. The conf has limit, the thresholds (0: derive),
 * avpkt, burst (0: derive), probability and rate. 0, or -1 with one
 * line in err (NULL: none wanted).
 */
static int
red_derive(struct red_conf *c, char *err)
{
	double a, w = 0.5, us, xmit, lw, maxtime, prob;
	int i;

#define FAIL(...) do { if (err) snprintf(err, SHP_ERR_LEN, __VA_ARGS__); \
		       return -1; } while (0)
	if (c->limit == 0)   /* the static defaults */
		*c = (struct red_conf){ .limit = RED_LIMIT_DEFAULT,
			.avpkt = RED_AVPKT_DEFAULT,
			.probability = RED_PROB_DEFAULT,
			.rate = RED_RATE_DEFAULT, .seed = SHP_SEED_DEFAULT };
	if (c->qth_max == 0)
		c->qth_max = c->qth_min ? c->qth_min * 3 : c->limit / 4;
	if (c->qth_min == 0)
		c->qth_min = c->qth_max / 3;
	if (c->burst == 0)
		c->burst = (uint32_t)((2ULL * c->qth_min + c->qth_max) /
				      (3ULL * c->avpkt));
	if (c->qth_max < c->qth_min)
		FAIL("red: max %" PRIu32 " is below min %" PRIu32,
		     c->qth_max, c->qth_min);
	/* tc_red_eval_ewma: the largest W that lets burst packets in at
	 * once onto an average of min */
	a = (double)c->burst + 1 - (double)c->qth_min / c->avpkt;
	if (a < 1.0)
		FAIL("red: burst %" PRIu32 " is too small for min %" PRIu32
		     " (at least %" PRIu32 ")", c->burst, c->qth_min,
		     1 + c->qth_min / c->avpkt);
	for (i = 1; i < 32; i++, w /= 2)
		if (a <= (1 - pow(1 - w, c->burst)) / w)
			break;
	if (i == 32)
		FAIL("red: burst %" PRIu32 " is too large", c->burst);
	c->Wlog = (uint8_t)i;
	/* tc_red_eval_P */
	prob = c->probability;
	if (c->qth_max == c->qth_min) {
		i = 0;
	} else {
		prob /= c->qth_max - c->qth_min;
		for (i = 0; i < 32 && prob <= 1.0; i++)
			prob *= 2;
		if (i >= 32)
			FAIL("red: probability %g is too small for min and "
			     "max", c->probability);
	}
	c->Plog = (uint8_t)i;
	c->max_P = c->probability >= 1.0 ? UINT32_MAX :
		   (uint32_t)(c->probability * 4294967296.0);
	/* tc_red_eval_idle_damping: tc's time of a packet of avpkt, whole
	 * microseconds then whole 64 ns ticks (32 bits of them) */
	us = 1e6 * ((double)c->avpkt / (double)c->rate);
	if (us * RED_TICKS_PER_US >= 4294967295.0)
		FAIL("red: bandwidth too low for avpkt %" PRIu32, c->avpkt);
	xmit = (double)(unsigned int)((double)(unsigned int)us *
				      RED_TICKS_PER_US);
	c->Scell_log = 0;
	c->stab[0] = 0;
	if (xmit == 0) {
		/* under a tick a packet: tc's table is all 31 (a division
		 * by zero there), any idle time empties the average */
		memset(c->stab + 1, 31, RED_STAB_SIZE - 1);
		goto checks;
	}
	lw = -log(1.0 - 1.0 / (1u << c->Wlog)) / xmit;
	maxtime = 31 / lw;
	for (i = 0; i < 32; i++)
		if (maxtime / ldexp(1, i) < 512)
			break;
	if (i >= 32)
		FAIL("red: bandwidth too low for avpkt %" PRIu32, c->avpkt);
	c->Scell_log = (uint8_t)i;
	for (i = 1; i < RED_STAB_SIZE - 1; i++) {
		double s = ldexp(i, c->Scell_log) * lw;

		c->stab[i] = (uint8_t)(s > 31 ? 31 : s);
	}
	c->stab[RED_STAB_SIZE - 1] = 31;
checks:
	/* the kernel's red_check_params */
	if (red_fls(c->qth_min) + c->Wlog >= 32 ||
	    red_fls(c->qth_max) + c->Wlog >= 32)
		FAIL("red: min %" PRIu32 " or max %" PRIu32 " too large for "
		     "the average's scale 2^%u", c->qth_min, c->qth_max,
		     c->Wlog);
#undef FAIL
	return 0;
}

static int
red_bytes(struct shp_tcargs *a, const char *kw, uint32_t *v)
{
	if (shp_tc_next(a, "a size") || shp_tc_size32(a, kw, v))
		return -1;
	if (*v == 0)
		return shp_tc_fail(a, "%s: '%s' must be more than 0", kw,
				   shp_tc_cur(a));
	return 0;
}

static int
red_words(struct shp_tcargs *a, struct red_conf *c)
{
	for (a->i = 0; a->i < a->argc; a->i++) {
		const char *w = shp_tc_cur(a);
		int rc = 0;

		if (strcmp(w, "limit") == 0) {
			rc = red_bytes(a, "limit", &c->limit);
		} else if (strcmp(w, "min") == 0) {
			rc = red_bytes(a, "min", &c->qth_min);
		} else if (strcmp(w, "max") == 0) {
			rc = red_bytes(a, "max", &c->qth_max);
		} else if (strcmp(w, "avpkt") == 0) {
			rc = red_bytes(a, "avpkt", &c->avpkt);
		} else if (strcmp(w, "burst") == 0) {
			rc = shp_tc_next(a, "a number") ||
			     shp_tc_u32(a, "burst", &c->burst) ? -1 : 0;
			if (rc == 0 && c->burst == 0)
				rc = shp_tc_fail(a, "burst: '0' must be more "
						 "than 0");
		} else if (strcmp(w, "probability") == 0) {
			char *end;

			if (shp_tc_next(a, "a probability"))
				return -1;
			c->probability = strtod(shp_tc_cur(a), &end);
			if (*end != '\0' || end == shp_tc_cur(a) ||
			    !(c->probability > 0 && c->probability <= 1))
				rc = shp_tc_fail(a, "probability: '%s' must "
						 "be within (0, 1]",
						 shp_tc_cur(a));
		} else if (strcmp(w, "bandwidth") == 0) {
			rc = shp_tc_next(a, "a rate") ||
			     shp_tc_rate(a, "bandwidth", &c->rate) ? -1 : 0;
			if (rc == 0 && c->rate == 0)
				rc = shp_tc_fail(a, "bandwidth: '%s' must be "
						 "more than 0", shp_tc_cur(a));
		} else if (strcmp(w, "ecn") == 0) {
			c->ecn = true;
		} else if (strcmp(w, "harddrop") == 0) {
			c->harddrop = true;
		} else if (strcmp(w, "adaptive") == 0) {
			c->adaptive = true;
		} else if (strcmp(w, "nodrop") == 0) {
			c->nodrop = true;
		} else {
			return shp_tc_fail(a, "unknown word '%s' (limit, min, "
					   "max, avpkt, burst, probability, "
					   "bandwidth, ecn, harddrop, "
					   "adaptive, nodrop)", w);
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

static void *
red_parse(const char *args, const struct shp_kind_env *env, char *err)
{
	struct shp_tcargs a = { .qdisc = "red", .err = err };
	char buf[RED_MAX_LEN], *argv[RED_MAX_WORDS];
	struct red_conf c = {
		.limit = RED_LIMIT_DEFAULT, .avpkt = RED_AVPKT_DEFAULT,
		.probability = RED_PROB_DEFAULT, .rate = RED_RATE_DEFAULT,
		.seed = SHP_SEED_DEFAULT,
	}, *out;

	err[0] = '\0';
	if (shp_tc_split(&a, args, buf, sizeof(buf), argv,
			 RED_MAX_WORDS) < 0 || red_words(&a, &c) < 0 ||
	    red_derive(&c, err) < 0)
		return NULL;
	if (env != NULL && env->seed_set)
		c.seed = env->seed;
	out = malloc(sizeof(*out));
	if (out == NULL) {
		snprintf(err, SHP_ERR_LEN, "red: out of memory");
		return NULL;
	}
	c.hdr.id = shp_conf_new_id();
	*out = c;
	return out;
}

/* the shortest text strtod reads back as p */
static void
fmt_prob(char *buf, size_t len, double p)
{
	int prec;

	for (prec = 1; prec < 17; prec++) {
		snprintf(buf, len, "%.*g", prec, p);
		if (strtod(buf, NULL) == p)
			return;
	}
	snprintf(buf, len, "%.17g", p);
}

static int
red_format(const void *conf, char *buf, size_t len)
{
	const struct red_conf *c = conf;
	char pr[32], r[32];

	fmt_prob(pr, sizeof(pr), c->probability);
	shp_fmt_rate(r, sizeof(r), c->rate);
	return snprintf(buf, len, "limit %" PRIu32 " min %" PRIu32 " max %"
			PRIu32 " avpkt %" PRIu32 " burst %" PRIu32
			" probability %s bandwidth %s%s%s%s%s", c->limit,
			c->qth_min, c->qth_max, c->avpkt, c->burst, pr, r,
			c->ecn ? " ecn" : "", c->harddrop ? " harddrop" : "",
			c->adaptive ? " adaptive" : "",
			c->nodrop ? " nodrop" : "");
}

/* As q_red.c prints it (with -d): "limit 400000b min 33333b max 100000b
 * ecn adaptive ewma 5 probability 0.02 Scell_log 13" */
static int
red_tc_print(const char *args, const struct shp_kind_env *env,
	     const char **tc_name, char *buf, size_t len)
{
	char err[SHP_ERR_LEN], pr[32];
	struct red_conf *c = red_parse(args, env, err);
	int n;

	RTE_SET_USED(tc_name);
	if (c == NULL)
		return snprintf(buf, len, "%s", args);
	snprintf(pr, sizeof(pr), "%g", c->max_P / 4294967296.0);
	n = snprintf(buf, len, "limit %" PRIu32 "b min %" PRIu32 "b max %"
		     PRIu32 "b%s%s%s%s ewma %u probability %s Scell_log %u",
		     c->limit, c->qth_min, c->qth_max, c->ecn ? " ecn" : "",
		     c->harddrop ? " harddrop" : "",
		     c->adaptive ? " adaptive" : "",
		     c->nodrop ? " nodrop" : "", c->Wlog, pr, c->Scell_log);
	free(c);
	return n;
}

/* its byte limit in the smallest frames */
static uint64_t
red_capacity(const void *conf, const struct shp_kind_env *env)
{
	const struct red_conf *c = conf;

	RTE_SET_USED(env);
	return ((c != NULL ? c->limit : RED_LIMIT_DEFAULT) + RED_MIN_FRAME -
		1) / RED_MIN_FRAME;
}

/* the conf of a queue given no text, before anyone may ask for it */
RTE_INIT(red_defaults_derive)
{
	red_derive(&red_defaults, NULL);
}

const struct shp_kind shp_kind_red = {
	.name = "red",
	.slot = SHP_SLOT_QUEUE,
	.ops = &shp_red_ops,
	.parse = red_parse,
	.format = red_format,
	.tc_print = red_tc_print,
	.conf_free = free,
	.capacity = red_capacity,
	.drops = red_drops,
	.xstats = red_xstats,
	.usage = "red limit BYTES [min BYTES] [max BYTES] avpkt BYTES "
		 "[burst PACKETS] [probability P] [bandwidth RATE] [ecn] "
		 "[harddrop] [adaptive] [nodrop]",
	.words = "limit#min#max#avpkt#burst#probability#bandwidth#ecn#"
		 "harddrop#adaptive#nodrop",
};
