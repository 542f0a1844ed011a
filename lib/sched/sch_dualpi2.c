/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dualpi2: the coupled dual-queue AQM of RFC 9332 (DualQ Coupled AQM with
 * a PI2 base), with the semantics of Linux's sch_dualpi2 (6.17), as the
 * port's bottleneck queue:
 *
 *   dualpi2 [limit PACKETS] [memlimit BYTES] [target TIME] [tupdate TIME]
 *           [alpha A] [beta B] [coupling_factor K]
 *           [step_thresh TIME|PACKETSp] [min_qlen_step PACKETS]
 *           [drop_on_overload|overflow] [drop_enqueue|drop_dequeue]
 *           [classic_protection PERCENT] [l4s_ect|any_ect]
 *           [max_rtt TIME [typical_rtt TIME]] [split_gso|no_split_gso]
 *
 * with Linux's defaults (limit 10000, memlimit limit * 2 * 1514 bytes,
 * target 15ms, tupdate 16ms, alpha 0.16, beta 3.2, coupling_factor 2,
 * step_thresh 1ms, min_qlen_step 0, drop_on_overload, drop_dequeue,
 * classic_protection 10%, l4s_ect, split_gso).
 *
 * Two FIFOs: the L queue takes what carries ECT(1) or CE (any_ect: ECT(0)
 * too), the C queue the rest. A PI controller updates the base
 * probability p' every tupdate from the larger of the two head sojourns
 * (kernel's fixed point: p' is a 32-bit fraction, alpha and beta in units
 * of 1/256 Hz scaled as the kernel does, so the same text gives the same
 * p' sequence). At dequeue (or enqueue, drop_enqueue), once the queues
 * hold 2 MTUs or more: an L packet is marked CE with p_L = k * p' (and,
 * when that passes 100%, the overload: with drop_on_overload it is
 * dropped with p'^2, else marked); a C packet with p_C = p'^2, by two
 * draws, marked if ECN-capable, else dropped (always dropped in
 * overload). An L packet whose sojourn passed step_thresh (or whose queue
 * holds more than step_thresh packets) is marked too (the native L4S
 * AQM). A weighted round robin between the queues, in bytes, gives the C
 * queue classic_protection percent of the link when both are backlogged.
 *
 * Linux draws get_random_u32(); here every decision's draws come from a
 * counter-based stream of (seed, port): roll event n (the n-th decision
 * past the 2-MTU guard) draws from shp_rand_at(key, n), one 32-bit number
 * (the upper half of shp_rand_u64) per roll, rolled as Linux's
 * `draw <= p`. Offline runs are so byte-reproducible, and a model of the
 * RFC can replay the same numbers (test/replay/dualpi2_model.py).
 *
 * The PI update runs on the caller's clock, not a timer: each call first
 * runs the updates due at the multiples of tupdate up to ctx->now, on the
 * queues as they stood since the last call (nothing changed them in
 * between). Timestamps are meta->rx_ns (RX writes it as it enqueues here).
 *
 * On a link's shards (env->link, issue 59) p' is the link's one
 * (link_state.h): its updates run on the tupdate grid, each by whichever
 * shard first calls past its instant (one claim a period), from the
 * link's queue delay, the oldest head of any shard's two queues (each
 * shard publishes its heads once a call); the others read p' once a
 * call. limit, memlimit and the two-MTU guard count the link's packets
 * and bytes. Each shard keeps its own WRR credit, step marking (its own
 * L queue's sojourn and length) and draws (shard s > 0 keys its stream
 * by s too). One queue, as before.
 *
 * Threads: as fq_codel (mp_enqueue false, change() publishes a conf
 * pointer each call loads once). Per-packet state: the FIFOs link
 * through meta->next, and the ECN field read at enqueue and the step flag
 * live in meta->pad, which nothing else uses while the packet is queued.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>
#include <rte_mbuf.h>

#include "link_state.h"
#include "shp_kind.h"
#include "shp_link.h"
#include "shp_meta.h"
#include "shp_pkthdr.h"
#include "shp_qdisc.h"
#include "shp_rand.h"
#include "shp_tcargs.h"

#define DP_LIMIT_DEFAULT   10000
#define DP_MTU             1514     /* psched_mtu of an Ethernet port */
#define DP_TARGET_DEFAULT  15000    /* us */
#define DP_TUPDATE_DEFAULT 16000    /* us */
#define DP_ALPHA_DEFAULT   41       /* 1/256 Hz: ~0.16 Hz */
#define DP_BETA_DEFAULT    819      /* ~3.2 Hz */
#define DP_AB_MAX          ((1u << 31) - 1)   /* the kernel's bound */
#define DP_STEP_DEFAULT    1000     /* us */
#define DP_WC_DEFAULT      10       /* % of the link for the C queue */
#define DP_K_DEFAULT       2
#define DP_MAX_PROB        UINT32_MAX
#define DP_SEED_DEFAULT    0x6475616c70693200ULL   /* "dualpi2" */
/* alpha and beta: given in 1/256 Hz, kept in units of 64 ns */
#define DP_AB_SHIFT        8
#define DP_AB_GRAN         6

#define ECN_MASK_L4S  1   /* ECT(1) (CE too: 3 & 1) */
#define ECN_MASK_ANY  3   /* ECT(0) as well */

struct dp_conf {
	struct shp_conf_hdr hdr;   /* first: shp_qdisc.h */
	uint32_t limit;            /* packets, both queues */
	uint32_t memlimit;         /* bytes of buffers, both queues */
	bool memlimit_set;         /* given (else limit * 2 MTU) */
	uint32_t target;           /* us */
	uint32_t tupdate;          /* us, > 0 */
	uint32_t alpha, beta;      /* 1/256 Hz, as tc sends them */
	uint32_t step_thresh;      /* us, or packets with step_pkts */
	bool step_pkts;
	uint32_t min_qlen_step;    /* packets in L before step applies */
	uint8_t coupling;          /* k, 1..255 */
	uint8_t wc;                /* classic_protection, 0..100 */
	uint8_t ecn_mask;          /* ECN_MASK_* */
	bool drop_overload;        /* drop_on_overload (else overflow) */
	bool drop_early;           /* drop_enqueue (else drop_dequeue) */
	bool split_gso;            /* kept for the text: no GSO frames here */
	uint64_t seed;
};
SHP_CONF_HDR_FIRST(struct dp_conf);

/* the kind's drop causes, each name beside its enum (shp_kind.h) */
#define DP_DROPS(X) \
	/* a C packet (or an L one in overload) at p'^2, not ECN-capable or \
	 * in overload */ \
	X(DP_DROP_CLASSIC, "classic_dropped") \
	/* an L packet while p_L passed 100%, at p'^2 (drop_on_overload) */ \
	X(DP_DROP_OVERLOAD, "overload_dropped") \
	/* a non-ECT packet over the L queue's step (only a CE one without \
	 * ECT could be one: kept for the kernel's reason) */ \
	X(DP_DROP_STEP, "step_dropped") \
	/* over limit or memlimit at enqueue */ \
	X(DP_DROP_LIMIT, "dualpi2_limit")
enum { DP_DROPS(SHP_CAUSE_ENUM) };
static const char *const dualpi2_drops[] = {
	DP_DROPS(SHP_CAUSE_NAME) NULL
};

/* its statistics, likewise */
#define DP_XSTATS(X) \
	/* CE marks at p_L = k * p' (and overload marks) */ \
	X(DP_XS_L4S_MARKED, "l4s_marked", 0, NULL) \
	/* CE marks of ECT(0) packets in the C queue at p'^2 */ \
	X(DP_XS_CLASSIC_MARKED, "classic_marked", 0, NULL) \
	/* CE marks of the L queue's step */ \
	X(DP_XS_STEP_MARKED, "step_marked", 0, NULL) \
	/* decisions taken while k * p' passed 100% */ \
	X(DP_XS_OVERLOAD, "overload", 0, NULL) \
	X(DP_XS_QUEUED, "queued", SHP_XS_GAUGE | SHP_XS_QLEN, NULL) \
	X(DP_XS_L_QUEUED, "l_queued", SHP_XS_GAUGE, NULL) \
	/* p', p_L and p_C, in parts per 10^9 */ \
	X(DP_XS_PROB, "prob_ppb", SHP_XS_GAUGE | SHP_XS_LINK, NULL) \
	X(DP_XS_P_L, "p_l_ppb", SHP_XS_GAUGE | SHP_XS_LINK, NULL) \
	X(DP_XS_P_C, "p_c_ppb", SHP_XS_GAUGE | SHP_XS_LINK, NULL) \
	/* the heads' sojourns, ns */ \
	X(DP_XS_C_DELAY, "c_delay_ns", SHP_XS_GAUGE | SHP_XS_LINK, NULL) \
	X(DP_XS_L_DELAY, "l_delay_ns", SHP_XS_GAUGE | SHP_XS_LINK, NULL)
enum { DP_XSTATS(SHP_XSTAT_ENUM) };
static const struct shp_xstat_desc dualpi2_xstats[] = {
	DP_XSTATS(SHP_XSTAT_DESC) { NULL, 0, NULL }
};

/* meta->pad: the ECN field read at enqueue, the L queue, the step */
#define PAD_ECN   0x03
#define PAD_L     0x04
#define PAD_STEP  0x08

struct dp_fifo {
	struct shp_meta *head, *tail;
	uint32_t qlen;
};

/* the link's controller words (link_state.h) and a shard's figures */
enum { DL_NEXT, DL_PROB, DL_LAST_QDELAY, DL_TU, DL_WORDS };
enum { DF_BACKLOG, DF_QLEN, DF_MEMORY, DF_HEAD_L, DF_HEAD_C };

struct dp_priv {
	const struct dp_conf *conf;   /* published by change() */
	uint64_t seen;                /* id of the conf last applied */
	/* what the PI updates run with, from the conf they were due
	 * under (a change applies after the updates due before it) */
	uint32_t alpha, beta;         /* scaled (dp_scale) */
	uint64_t target;              /* ns */
	uint64_t tu;                  /* tupdate, ns */
	uint32_t cap;                 /* p' at most (overflow: 1/k) */
	struct dp_fifo l, c;
	uint64_t backlog;             /* bytes in both queues */
	uint64_t memory;              /* buffer bytes in both queues */
	struct rte_mbuf *stash;       /* judged by a peek, not yet taken */
	uint32_t prob;                /* p', a fraction of 2^32 - 1 */
	uint64_t last_qdelay;         /* ns, at the last update */
	uint64_t next_update;         /* ns; 0: not started */
	int32_t credit;               /* WRR: > 0 serves C */
	uint64_t key;                 /* of the draws' stream */
	uint64_t rolls;               /* roll events so far */
	/* a link's shards: the link's state (NULL: this queue's own) */
	struct shp_link_state *ls;
	uint16_t shard, nb_shards;
	uint64_t tag;                 /* this instance's, in ls */
	uint64_t lw[DL_WORDS];        /* the link's words, last read */
	/* the other shards' figures, read once a call; their oldest heads
	 * (rx_ns, UINT64_MAX: none) */
	uint64_t others_qlen, others_backlog, others_memory;
	uint64_t others_head_l, others_head_c;
	uint64_t link_at;             /* the clock of the last exchange */
	bool published_empty;        /* this shard's figures say empty */
};

static const struct dp_conf dp_defaults = {
	.limit = DP_LIMIT_DEFAULT,
	.memlimit = DP_LIMIT_DEFAULT * 2 * DP_MTU,
	.target = DP_TARGET_DEFAULT,
	.tupdate = DP_TUPDATE_DEFAULT,
	.alpha = DP_ALPHA_DEFAULT,
	.beta = DP_BETA_DEFAULT,
	.step_thresh = DP_STEP_DEFAULT,
	.coupling = DP_K_DEFAULT,
	.wc = DP_WC_DEFAULT,
	.ecn_mask = ECN_MASK_L4S,
	.drop_overload = true,
	.split_gso = true,
	.seed = DP_SEED_DEFAULT,
};

static inline struct dp_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

#define DPX(q, ctx, i) (*shp_stage_xstat((q), (ctx), (i)))

/* 1/256 Hz to p' per ns in units of 1/64 (the kernel's scaling). */
static uint32_t
dp_scale(uint32_t param)
{
	return (uint32_t)(((uint64_t)param * DP_MAX_PROB >>
			   (DP_AB_SHIFT - DP_AB_GRAN)) / 1000000000ULL);
}

/* what the kernel reports of a scaled gain, in 1/256 Hz */
static uint32_t
dp_unscale(uint32_t scaled)
{
	return (uint32_t)(((uint64_t)scaled * 1000000000ULL <<
			   (DP_AB_SHIFT - DP_AB_GRAN)) / DP_MAX_PROB);
}

static inline uint32_t
truesize(const struct rte_mbuf *m)
{
	uint32_t n = 0;

	for (; m != NULL; m = m->next)
		n += (uint32_t)sizeof(*m) + m->priv_size + m->buf_len;
	return n;
}

static inline uint64_t
head_delay(const struct dp_fifo *f, uint64_t now)
{
	return f->head != NULL && now > f->head->rx_ns ?
	       now - f->head->rx_ns : 0;
}

/*
 * The PI update of time t (RFC 9332 A.1's dualpi2_update, in the
 * kernel's arithmetic): p' moves by alpha * (qdelay - target) + beta *
 * (qdelay - last qdelay), bounded to [0, 1]; with overflow, p' stays at
 * most 1/k, so that p_L never passes 100%.
 */
static void
dp_pi(struct dp_priv *p, uint64_t qdelay)
{
	int64_t delta = ((int64_t)qdelay - (int64_t)p->target) *
			(int64_t)p->alpha +
			((int64_t)qdelay - (int64_t)p->last_qdelay) *
			(int64_t)p->beta;
	int64_t np;

	p->last_qdelay = qdelay;
	if (delta > 0)
		np = (int64_t)p->prob + (int64_t)((uint64_t)delta >> DP_AB_GRAN);
	else
		np = (int64_t)p->prob -
		     (int64_t)((uint64_t)(-delta) >> DP_AB_GRAN);
	np = RTE_MAX(np, (int64_t)0);
	np = RTE_MIN(np, (int64_t)p->cap);
	p->prob = (uint32_t)np;
}

static void
dp_update(struct dp_priv *p, uint64_t t)
{
	dp_pi(p, RTE_MAX(head_delay(&p->l, t), head_delay(&p->c, t)));
}

/* the delay at t of a frame that arrived at rx (UINT64_MAX: none) */
static inline uint64_t
since(uint64_t rx, uint64_t t)
{
	return rx != UINT64_MAX && t > rx ? t - rx : 0;
}

/* The link's updates due by now, by the shard that claims them, on the
 * link's oldest head. p->lw is the state after. */
static void
dp_link_update(struct dp_priv *p, uint64_t now)
{
	uint64_t *w = p->lw, seq, tu = p->tu, oldest;
	bool fresh;
	unsigned int i;

	if (!shp_link_ctl_claim(p->ls, p->tag, &seq, &fresh))
		return;
	for (i = 0; i < DL_WORDS; i++)
		w[i] = fresh ? 0 : p->ls->w[i];
	if (w[DL_TU] != tu || w[DL_NEXT] == 0) {
		w[DL_TU] = tu;
		w[DL_NEXT] = (now / tu + 1) * tu;
	}
	p->prob = (uint32_t)w[DL_PROB];
	p->last_qdelay = w[DL_LAST_QDELAY];
	oldest = RTE_MIN(p->others_head_l, p->others_head_c);
	while (w[DL_NEXT] <= now) {
		uint64_t t = w[DL_NEXT];

		/* the link empty and settled at 0: every update until now
		 * is too */
		if (p->l.head == NULL && p->c.head == NULL &&
		    p->others_qlen == 0 && p->prob == 0 &&
		    p->last_qdelay == 0) {
			w[DL_NEXT] = (now / tu + 1) * tu;
			break;
		}
		dp_pi(p, RTE_MAX(RTE_MAX(head_delay(&p->l, t),
					 head_delay(&p->c, t)),
				 since(oldest, t)));
		w[DL_NEXT] += tu;
	}
	w[DL_PROB] = p->prob;
	w[DL_LAST_QDELAY] = p->last_qdelay;
	for (i = 0; i < DL_WORDS; i++)
		shp_link_ctl_put(p->ls, i, w[i]);
	shp_link_ctl_publish(p->ls, seq, p->tag);
}

/* A call on a link's shard: the others' figures, the link's p' */
static void
dp_link_sync(struct dp_priv *p, uint64_t now)
{
	uint16_t s;

	p->others_qlen = p->others_backlog = p->others_memory = 0;
	p->others_head_l = p->others_head_c = UINT64_MAX;
	for (s = 0; s < p->nb_shards; s++) {
		uint64_t hl, hc;

		if (s == p->shard)
			continue;
		p->others_qlen += shp_link_fig_get(p->ls, s, DF_QLEN);
		p->others_backlog += shp_link_fig_get(p->ls, s, DF_BACKLOG);
		p->others_memory += shp_link_fig_get(p->ls, s, DF_MEMORY);
		hl = shp_link_fig_get(p->ls, s, DF_HEAD_L);
		hc = shp_link_fig_get(p->ls, s, DF_HEAD_C);
		/* 0: a shard that never published */
		if (hl != 0)
			p->others_head_l = RTE_MIN(p->others_head_l, hl);
		if (hc != 0)
			p->others_head_c = RTE_MIN(p->others_head_c, hc);
	}
	shp_link_ctl_read(p->ls, p->tag, p->lw, DL_WORDS);
	if (p->lw[DL_NEXT] <= now || p->lw[DL_TU] != p->tu)
		dp_link_update(p, now);
	p->prob = (uint32_t)p->lw[DL_PROB];
	p->last_qdelay = p->lw[DL_LAST_QDELAY];
}

/* The updates due by now, at the multiples of tupdate. */
static void
dp_catch_up(struct dp_priv *p, uint64_t now)
{
	uint64_t tu = p->tu;

	if (unlikely(p->next_update == 0))
		p->next_update = (now / tu + 1) * tu;
	while (p->next_update <= now) {
		/* empty and settled at 0: every update until now is too */
		if (p->l.head == NULL && p->c.head == NULL && p->prob == 0 &&
		    p->last_qdelay == 0) {
			p->next_update = (now / tu + 1) * tu;
			break;
		}
		dp_update(p, p->next_update);
		p->next_update += tu;
	}
}

static inline void
fifo_push(struct dp_fifo *f, struct shp_meta *meta)
{
	meta->next = NULL;
	if (f->tail != NULL)
		f->tail->next = meta;
	else
		f->head = meta;
	f->tail = meta;
	f->qlen++;
}

static inline struct rte_mbuf *
fifo_pop(struct dp_priv *p, struct dp_fifo *f)
{
	struct shp_meta *h = f->head;
	struct rte_mbuf *m = shp_meta_mbuf(h);

	f->head = h->next;
	if (f->head == NULL)
		f->tail = NULL;
	f->qlen--;
	p->backlog -= rte_pktmbuf_pkt_len(m);
	p->memory -= truesize(m);
	return m;
}

/* INET_ECN_set_ce on a packet we may write (fq_codel's rule: not one
 * whose data others share). */
static bool
dp_mark(struct rte_mbuf *m)
{
	const struct rte_mbuf *seg;
	struct shp_pkthdr h;

	for (seg = m; seg != NULL; seg = seg->next)
		if (!RTE_MBUF_DIRECT(seg) || rte_mbuf_refcnt_read(seg) != 1)
			return false;
	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L3);
	if (shp_pkthdr_ecn(&h) == 0)
		return false;
	return shp_pkthdr_set_ce(m, &h) == 0;
}

/* Linux's dualpi2_roll: a 32-bit draw <= prob */
static inline bool
roll(struct shp_rand *r, uint32_t prob)
{
	return (uint32_t)(shp_rand_u64(r) >> 32) <= prob;
}

enum verdict { PASS, DROP_CLASSIC, DROP_OVERLOAD };

/*
 * must_drop: the PI2 decision for m, which is out of its queue (its bytes
 * no longer in the backlog). Marks what it lets pass and should carry CE.
 */
static enum verdict
dp_judge(struct shp_qdisc *q, struct dp_priv *p, const struct dp_conf *c,
	 struct rte_mbuf *m, struct shp_ctx *ctx)
{
	uint8_t pad = shp_meta(m)->pad;
	uint64_t lp = (uint64_t)p->prob * c->coupling;
	bool overload = lp > DP_MAX_PROB;
	struct shp_rand r;

	if (p->backlog + p->others_backlog < 2 * DP_MTU)
		return PASS;
	shp_rand_at(&r, p->key, p->rolls++);
	if (overload)
		DPX(q, ctx, DP_XS_OVERLOAD)++;
	if (!(pad & PAD_L)) {
		if (roll(&r, p->prob) && roll(&r, p->prob)) {
			if (overload || (pad & PAD_ECN) == 0)
				return DROP_CLASSIC;
			if (dp_mark(m))
				DPX(q, ctx, DP_XS_CLASSIC_MARKED)++;
		}
		return PASS;
	}
	if (overload) {
		if (c->drop_overload && roll(&r, p->prob) &&
		    roll(&r, p->prob))
			return DROP_OVERLOAD;
	} else if (!roll(&r, (uint32_t)lp)) {
		return PASS;
	}
	if (dp_mark(m))
		DPX(q, ctx, DP_XS_L4S_MARKED)++;
	return PASS;
}

/* what the other shards read of this one, once a poll */
static void
dp_link_publish(struct dp_priv *p)
{
	shp_link_fig_put(p->ls, p->shard, DF_BACKLOG, p->backlog);
	shp_link_fig_put(p->ls, p->shard, DF_QLEN,
			 p->l.qlen + p->c.qlen + (p->stash != NULL));
	shp_link_fig_put(p->ls, p->shard, DF_MEMORY, p->memory);
	shp_link_fig_put(p->ls, p->shard, DF_HEAD_L,
			 p->l.head != NULL ? p->l.head->rx_ns : UINT64_MAX);
	shp_link_fig_put(p->ls, p->shard, DF_HEAD_C,
			 p->c.head != NULL ? p->c.head->rx_ns : UINT64_MAX);
}

static inline void
dp_gauges(struct shp_qdisc *q, struct dp_priv *p, const struct dp_conf *c,
	  struct shp_ctx *ctx)
{
	double pp = (double)p->prob / DP_MAX_PROB;
	uint64_t cd = head_delay(&p->c, ctx->now);
	uint64_t ld = head_delay(&p->l, ctx->now);

	if (p->ls != NULL) {
		/* emptied: said at once, or the others would count what
		 * left until this shard's next poll, which may not come */
		if (p->l.qlen + p->c.qlen == 0 && p->stash == NULL &&
		    !p->published_empty) {
			dp_link_publish(p);
			p->published_empty = true;
		}
		/* the link's delays */
		cd = RTE_MAX(cd, since(p->others_head_c, ctx->now));
		ld = RTE_MAX(ld, since(p->others_head_l, ctx->now));
	}

	DPX(q, ctx, DP_XS_QUEUED) = p->l.qlen + p->c.qlen + (p->stash != NULL);
	DPX(q, ctx, DP_XS_L_QUEUED) = p->l.qlen;
	DPX(q, ctx, DP_XS_PROB) = (uint64_t)(pp * 1e9 + 0.5);
	DPX(q, ctx, DP_XS_P_L) = (uint64_t)(RTE_MIN(pp * c->coupling, 1.0) *
					    1e9 + 0.5);
	DPX(q, ctx, DP_XS_P_C) = (uint64_t)(pp * pp * 1e9 + 0.5);
	DPX(q, ctx, DP_XS_C_DELAY) = cd;
	DPX(q, ctx, DP_XS_L_DELAY) = ld;
}

/* The PI's parameters from c; a new tupdate takes its own multiples
 * of the clock from the next call. */
static inline void
dp_apply(struct dp_priv *p, const struct dp_conf *c)
{
	uint64_t tu = (uint64_t)c->tupdate * 1000;

	p->alpha = dp_scale(c->alpha);
	p->beta = dp_scale(c->beta);
	p->target = (uint64_t)c->target * 1000;
	p->cap = c->drop_overload ? DP_MAX_PROB : DP_MAX_PROB / c->coupling;
	if (tu != p->tu)
		p->next_update = 0;
	p->tu = tu;
}

static inline int32_t
credit_init(const struct dp_conf *c)
{
	return (int32_t)DP_MTU * ((int32_t)c->wc - (100 - (int32_t)c->wc));
}

static void
dp_drop_over(struct shp_qdisc *q, struct dp_priv *p, const struct dp_conf *c,
	     struct shp_ctx *ctx)
{
	while (p->l.qlen + p->c.qlen > c->limit || p->memory > c->memlimit) {
		struct dp_fifo *f = p->c.head != NULL ? &p->c : &p->l;

		shp_stage_drop(q, ctx, DP_DROP_LIMIT, fifo_pop(p, f));
	}
}

/* The conf to use for this call, after the PI updates due by now (under
 * the conf they were due under); a new conf is applied then, as Linux's
 * dualpi2_change: over a lowered limit, dropped from the C queue's head
 * first. */
static inline const struct dp_conf *
dp_sync(struct shp_qdisc *q, struct dp_priv *p, struct shp_ctx *ctx)
{
	const struct dp_conf *c = __atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);

	if (p->ls == NULL)
		dp_catch_up(p, ctx->now);
	if (unlikely(c->hdr.id != p->seen)) {
		p->seen = c->hdr.id;
		dp_apply(p, c);
		p->credit = credit_init(c);
		dp_drop_over(q, p, c, ctx);
		if (p->ls == NULL)
			dp_catch_up(p, ctx->now);
	}
	/* once a poll (one clock value), not a packet: tbf peeks and
	 * takes a packet at a time */
	if (p->ls != NULL && ctx->now != p->link_at) {
		p->link_at = ctx->now;
		dp_link_publish(p);
		p->published_empty = p->l.qlen + p->c.qlen == 0 &&
				     p->stash == NULL;
		dp_link_sync(p, ctx->now);
	}
	return c;
}

static uint16_t
dp_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	   struct shp_ctx *ctx)
{
	struct dp_priv *p = priv(q);
	const struct dp_conf *c = dp_sync(q, p, ctx);
	uint16_t i, taken = 0;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct shp_meta *meta = shp_meta(m);
		uint32_t ts = truesize(m);
		struct shp_pkthdr h;
		unsigned int ecn;
		enum verdict v;

		if (unlikely(p->l.qlen + p->c.qlen + (p->stash != NULL) +
			     p->others_qlen >= c->limit ||
			     p->memory + p->others_memory + ts >
			     c->memlimit)) {
			shp_stage_drop_full(q, ctx, DP_DROP_LIMIT, &m, 1);
			continue;
		}
		shp_pkthdr_parse(m, &h, SHP_PKTHDR_L3);
		ecn = shp_pkthdr_ecn(&h);
		meta->pad = (uint8_t)ecn;
		if (ecn & c->ecn_mask)
			meta->pad |= PAD_L;
		if (c->drop_early) {
			v = dp_judge(q, p, c, m, ctx);
			if (v != PASS) {
				shp_stage_drop(q, ctx, v == DROP_CLASSIC ?
					       DP_DROP_CLASSIC :
					       DP_DROP_OVERLOAD, m);
				continue;
			}
		}
		if (meta->pad & PAD_L) {
			if (p->l.qlen >= c->min_qlen_step)
				meta->pad |= PAD_STEP;
			fifo_push(&p->l, meta);
		} else {
			fifo_push(&p->c, meta);
		}
		p->backlog += rte_pktmbuf_pkt_len(m);
		p->memory += ts;
		taken++;
	}
	dp_gauges(q, p, c, ctx);
	return taken;
}

/*
 * One packet by the WRR (Linux's dequeue_packet), judged: NULL when both
 * queues are empty (the credit starts over).
 */
static struct rte_mbuf *
dp_dequeue_one(struct shp_qdisc *q, struct dp_priv *p, const struct dp_conf *c,
	       struct shp_ctx *ctx)
{
	for (;;) {
		struct rte_mbuf *m;
		int32_t change = 0;
		bool in_l;

		if (p->l.qlen && (!p->c.qlen || p->credit <= 0)) {
			m = fifo_pop(p, &p->l);
			if (p->c.qlen)
				change = c->wc;
			in_l = true;
		} else if (p->c.qlen) {
			m = fifo_pop(p, &p->c);
			if (p->l.qlen)
				change = -(int32_t)(100 - c->wc);
			in_l = false;
		} else {
			p->credit = credit_init(c);
			return NULL;
		}
		change *= (int32_t)rte_pktmbuf_pkt_len(m);
		if (!c->drop_early) {
			enum verdict v = dp_judge(q, p, c, m, ctx);

			if (v != PASS) {
				shp_stage_drop(q, ctx, v == DROP_CLASSIC ?
					       DP_DROP_CLASSIC :
					       DP_DROP_OVERLOAD, m);
				continue;
			}
		}
		if (in_l && (shp_meta(m)->pad & PAD_STEP)) {
			uint64_t d = c->step_pkts ? p->l.qlen :
				     (ctx->now > shp_meta(m)->rx_ns ?
				      ctx->now - shp_meta(m)->rx_ns : 0);
			uint64_t th = c->step_pkts ? c->step_thresh :
				      (uint64_t)c->step_thresh * 1000;

			if (d > th) {
				if ((shp_meta(m)->pad & PAD_ECN) == 0) {
					shp_stage_drop(q, ctx, DP_DROP_STEP,
						       m);
					continue;
				}
				if (dp_mark(m))
					DPX(q, ctx, DP_XS_STEP_MARKED)++;
			}
		}
		p->credit += change;
		return m;
	}
}

static uint16_t
dp_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	   struct shp_ctx *ctx)
{
	struct dp_priv *p = priv(q);
	const struct dp_conf *c = dp_sync(q, p, ctx);
	uint64_t bytes = 0;
	uint16_t got = 0;

	if (p->stash != NULL && n > 0) {
		pkts[got++] = p->stash;
		bytes += rte_pktmbuf_pkt_len(p->stash);
		p->stash = NULL;
	}
	while (got < n) {
		struct rte_mbuf *m = dp_dequeue_one(q, p, c, ctx);

		if (m == NULL)
			break;
		bytes += rte_pktmbuf_pkt_len(m);
		pkts[got++] = m;
	}
	dp_gauges(q, p, c, ctx);
	ctx->bytes = bytes;
	return got;
}

/* Linux's dualpi2_peek: the packet is judged and kept for the next
 * dequeue. */
static struct rte_mbuf *
dp_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct dp_priv *p = priv(q);

	if (p->stash == NULL) {
		const struct dp_conf *c = dp_sync(q, p, ctx);

		p->stash = dp_dequeue_one(q, p, c, ctx);
		dp_gauges(q, p, c, ctx);
	}
	return p->stash;
}

static uint64_t
dp_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	const struct dp_priv *p = priv(q);

	return p->l.qlen + p->c.qlen > 0 || p->stash != NULL ? ctx->now :
	       UINT64_MAX;
}

static bool
dp_idle(const struct shp_qdisc *q)
{
	const struct dp_priv *p = priv(q);

	return p->l.qlen + p->c.qlen == 0 && p->stash == NULL;
}

static void
dp_free_all(struct dp_priv *p, struct shp_ctx *ctx)
{
	struct dp_fifo *f[2] = { &p->l, &p->c };
	unsigned int i;

	if (p->stash != NULL) {
		if (ctx != NULL)
			shp_drop(ctx, SHP_DROP_FLUSHED, p->stash);
		else
			rte_pktmbuf_free(p->stash);
		p->stash = NULL;
	}
	for (i = 0; i < 2; i++)
		while (f[i]->head != NULL) {
			struct rte_mbuf *m = fifo_pop(p, f[i]);

			if (ctx != NULL)
				shp_drop(ctx, SHP_DROP_FLUSHED, m);
			else
				rte_pktmbuf_free(m);
		}
}

/* Linux's dualpi2_reset: the queues, p' and the credit start over. */
static void
dp_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct dp_priv *p = priv(q);
	const struct dp_conf *c = p->conf;

	dp_free_all(p, ctx);
	p->prob = 0;
	p->last_qdelay = 0;
	p->credit = credit_init(c);
	dp_gauges(q, p, c, ctx);
}

static int
dp_init(struct shp_qdisc *q, const void *conf)
{
	const struct dp_conf *c = conf != NULL ? conf : &dp_defaults;
	struct dp_priv *p = priv(q);

	p->conf = c;
	p->seen = c->hdr.id;
	dp_apply(p, c);
	p->credit = credit_init(c);
	p->key = shp_rand_key(shp_rand_key(c->seed, q->port),
			      DP_SEED_DEFAULT);
	p->ls = shp_link_queue(q);
	if (p->ls != NULL) {
		p->shard = q->env->shard;
		p->nb_shards = q->env->nb_shards;
		/* this instance: the shards' copies of one conf share its
		 * id (shp_conf_twin) */
		p->tag = (DP_SEED_DEFAULT << 8) ^ c->hdr.id;
		if (p->shard > 0)
			p->key = shp_rand_key(p->key, p->shard);
	}
	return 0;
}

static const void *
dp_change(struct shp_qdisc *q, const void *conf)
{
	const struct dp_conf *old = priv(q)->conf;

	if (conf == NULL)
		conf = &dp_defaults;
	__atomic_store_n(&priv(q)->conf, (const struct dp_conf *)conf,
			 __ATOMIC_RELEASE);
	return old == &dp_defaults ? NULL : old;
}

static void
dp_fini(struct shp_qdisc *q)
{
	dp_free_all(priv(q), NULL);
}

static void
dp_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	const struct dp_priv *p = priv(q);

	st->qlen = p->l.qlen + p->c.qlen + (p->stash != NULL);
	st->backlog = p->backlog +
		(p->stash != NULL ? rte_pktmbuf_pkt_len(p->stash) : 0);
}

static int dp_format(const void *conf, char *buf, size_t len);

static void
dp_dump(const struct shp_qdisc *q, FILE *f)
{
	char buf[512];

	dp_format(__atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE), buf,
		  sizeof(buf));
	fprintf(f, "%s", buf);
}

const struct shp_qdisc_ops shp_dualpi2_ops = {
	.id = "dualpi2",
	.priv_size = sizeof(struct dp_priv),
	.mp_enqueue = false,
	.init = dp_init,
	.change = dp_change,
	.enqueue = dp_enqueue,
	.dequeue = dp_dequeue,
	.peek = dp_peek,
	.next_time = dp_next_time,
	.idle = dp_idle,
	.reset = dp_reset,
	.stats = dp_stats,
	.dump = dp_dump,
	.fini = dp_fini,
};

/* The control plane: q_dualpi2.c's grammar (exact keywords). */

#define DP_MAX_WORDS 40
#define DP_MAX_LEN   512

/* a number then one of `suffixes` (NULL-terminated; "" for none) */
static int
num_suffix(const char *s, const char *const *suffixes, uint64_t max,
	   uint32_t *v)
{
	char *end;
	unsigned long long x;
	unsigned int i;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno != 0 || x > max)
		return -1;
	for (i = 0; suffixes[i] != NULL; i++)
		if (strcmp(end, suffixes[i]) == 0) {
			*v = (uint32_t)x;
			return 0;
		}
	return -1;
}

static const char *const sfx_packets[] = {
	"", "p", "pkt", "pkts", "packet", "packets", NULL };
static const char *const sfx_pkts_only[] = {
	"p", "pkt", "pkts", "packet", "packets", NULL };
static const char *const sfx_bytes[] = { "", "B", NULL };
static const char *const sfx_none[] = { "", NULL };

static int
count_arg(struct shp_tcargs *a, const char *kw, const char *const *sfx,
	  uint32_t min, uint32_t *v)
{
	if (shp_tc_next(a, "a number"))
		return -1;
	if (num_suffix(shp_tc_cur(a), sfx, UINT32_MAX, v) < 0 || *v < min)
		return shp_tc_fail(a, "%s: '%s' is not a number within "
				   "%" PRIu32 "..%" PRIu32, kw, shp_tc_cur(a),
				   min, UINT32_MAX);
	return 0;
}

/* tc's get_time into whole microseconds (what tc sends), at most
 * UINT32_MAX of them */
static int
time_us(struct shp_tcargs *a, const char *kw, uint32_t *us)
{
	uint64_t ns;

	if (shp_tc_time_bare(a, kw, SHP_TC_BARE_US, &ns))
		return -1;
	if (ns / 1000 > UINT32_MAX)
		return shp_tc_fail(a, "%s: '%s' is too long", kw,
				   shp_tc_cur(a));
	*us = (uint32_t)(ns / 1000);
	return 0;
}

/* alpha, beta: Hz, to the nearest 1/256 (iproute2 truncates a float:
 * there 0.16 is 40/256, not the kernel default's 41) */
static int
gain_arg(struct shp_tcargs *a, const char *kw, uint32_t *v)
{
	const char *s;
	char *end;
	double x;

	if (shp_tc_next(a, "a number"))
		return -1;
	s = shp_tc_cur(a);
	errno = 0;
	x = strtod(s, &end);
	if (!((*s >= '0' && *s <= '9') || *s == '.') || *end != '\0' ||
	    errno != 0 || !(x >= 0.5 / 256) ||
	    !(x * 256 < (double)DP_AB_MAX + 0.5))
		return shp_tc_fail(a, "%s: '%s' must be a number of Hz within "
				   "1/256..%u", kw, s, DP_AB_MAX / 256);
	*v = (uint32_t)llround(x * 256);
	return 0;
}

/* iproute2's max_rtt/typical_rtt auto-configuration (RFC 9332 Note 3's
 * rules of thumb), on microseconds: target, tupdate, alpha and beta */
static int
dp_rtt_config(struct shp_tcargs *a, struct dp_conf *c, uint32_t max,
	      uint32_t typ)
{
	double af, bf;

	if (typ == 0)
		typ = RTE_MAX(max / 6, 1u);
	else if (max == 0)
		max = typ * 6;
	else if (typ > max)
		return shp_tc_fail(a, "typical_rtt must be at most max_rtt");
	c->target = typ;
	c->tupdate = (double)typ < (double)max / 3.0f ? typ :
		     (uint32_t)((double)max / 3.0f);
	c->tupdate = RTE_MAX(c->tupdate, 1u);
	af = (double)c->tupdate / max / max * 1e6 * 0.1f;
	bf = 0.3f / (double)max * 1e6;
	if (bf * 256 > DP_AB_MAX || af * 256 < 1 || bf * 256 < 1)
		return shp_tc_fail(a, "max_rtt: alpha %f or beta %f out of "
				   "range", af, bf);
	c->alpha = (uint32_t)(af * 256);
	c->beta = (uint32_t)(bf * 256);
	return 0;
}

static int
dp_words(struct shp_tcargs *a, struct dp_conf *c)
{
	uint32_t rtt_max = 0, rtt_typ = 0, v;

	for (a->i = 0; a->i < a->argc; a->i++) {
		const char *w = shp_tc_cur(a);

		if (strcmp(w, "limit") == 0) {
			if (count_arg(a, "limit", sfx_packets, 1, &c->limit))
				return -1;
		} else if (strcmp(w, "memlimit") == 0) {
			if (count_arg(a, "memlimit", sfx_bytes, 1,
				      &c->memlimit))
				return -1;
			c->memlimit_set = true;
		} else if (strcmp(w, "target") == 0) {
			if (shp_tc_next(a, "a time") ||
			    time_us(a, "target", &c->target))
				return -1;
		} else if (strcmp(w, "tupdate") == 0) {
			if (shp_tc_next(a, "a time") ||
			    time_us(a, "tupdate", &c->tupdate))
				return -1;
			if (c->tupdate == 0)
				return shp_tc_fail(a, "tupdate: '%s' must be "
						   "1us or more",
						   shp_tc_cur(a));
		} else if (strcmp(w, "alpha") == 0) {
			if (gain_arg(a, "alpha", &c->alpha))
				return -1;
		} else if (strcmp(w, "beta") == 0) {
			if (gain_arg(a, "beta", &c->beta))
				return -1;
		} else if (strcmp(w, "coupling_factor") == 0) {
			if (shp_tc_next(a, "a number"))
				return -1;
			if (num_suffix(shp_tc_cur(a), sfx_none, 255, &v) < 0 ||
			    v == 0)
				return shp_tc_fail(a, "coupling_factor: '%s' "
						   "must be within 1..255",
						   shp_tc_cur(a));
			c->coupling = (uint8_t)v;
		} else if (strcmp(w, "step_thresh") == 0) {
			uint64_t ns;
			char m[SHP_ERR_LEN];

			if (shp_tc_next(a, "a time or packets"))
				return -1;
			/* a time first, then packets (as tc) */
			if (shp_parse_time_bare(shp_tc_cur(a),
						SHP_TC_BARE_US, &ns, m) == 0) {
				if (ns / 1000 == 0 || ns / 1000 > UINT32_MAX)
					return shp_tc_fail(a, "step_thresh: "
						"'%s' must be within 1us..%"
						PRIu32 "us", shp_tc_cur(a),
						UINT32_MAX);
				c->step_thresh = (uint32_t)(ns / 1000);
				c->step_pkts = false;
			} else if (num_suffix(shp_tc_cur(a), sfx_pkts_only,
					      UINT32_MAX, &v) == 0 && v > 0) {
				c->step_thresh = v;
				c->step_pkts = true;
			} else {
				return shp_tc_fail(a, "step_thresh: '%s' is "
						   "neither a time (1ms) nor "
						   "packets (10p) above 0",
						   shp_tc_cur(a));
			}
		} else if (strcmp(w, "min_qlen_step") == 0) {
			if (count_arg(a, "min_qlen_step", sfx_packets, 0,
				      &c->min_qlen_step))
				return -1;
		} else if (strcmp(w, "drop_on_overload") == 0) {
			c->drop_overload = true;
		} else if (strcmp(w, "overflow") == 0) {
			c->drop_overload = false;
		} else if (strcmp(w, "drop_enqueue") == 0) {
			c->drop_early = true;
		} else if (strcmp(w, "drop_dequeue") == 0) {
			c->drop_early = false;
		} else if (strcmp(w, "classic_protection") == 0) {
			const char *s;
			char *end;
			double x;

			if (shp_tc_next(a, "a percentage"))
				return -1;
			s = shp_tc_cur(a);
			x = strtod(s, &end);
			if (!(*s >= '0' && *s <= '9') ||
			    (*end != '\0' && strcmp(end, "%") != 0) ||
			    !(x >= 0 && rint(x) <= 100))
				return shp_tc_fail(a, "classic_protection: "
						   "'%s' must be a percentage "
						   "within 0..100", s);
			c->wc = (uint8_t)rint(x);
		} else if (strcmp(w, "l4s_ect") == 0) {
			c->ecn_mask = ECN_MASK_L4S;
		} else if (strcmp(w, "any_ect") == 0) {
			c->ecn_mask = ECN_MASK_ANY;
		} else if (strcmp(w, "split_gso") == 0) {
			c->split_gso = true;
		} else if (strcmp(w, "no_split_gso") == 0) {
			c->split_gso = false;
		} else if (strcmp(w, "max_rtt") == 0 ||
			   strcmp(w, "typical_rtt") == 0) {
			uint32_t *t = w[0] == 'm' ? &rtt_max : &rtt_typ;

			if (shp_tc_next(a, "a time") || time_us(a, w, t))
				return -1;
			if (*t == 0)
				return shp_tc_fail(a, "%s: '%s' must be 1us "
						   "or more", w,
						   shp_tc_cur(a));
		} else {
			return shp_tc_fail(a, "unknown word '%s' (limit, "
					   "memlimit, target, tupdate, alpha, "
					   "beta, coupling_factor, step_thresh, "
					   "min_qlen_step, drop_on_overload, "
					   "overflow, drop_enqueue, "
					   "drop_dequeue, classic_protection, "
					   "l4s_ect, any_ect, max_rtt, "
					   "typical_rtt, split_gso, "
					   "no_split_gso)", w);
		}
	}
	/* the kernel: a limit sets memlimit to limit * 2 MTU, unless
	 * memlimit is given too */
	if (!c->memlimit_set)
		c->memlimit = (uint32_t)RTE_MIN((uint64_t)c->limit * 2 * DP_MTU,
						(uint64_t)UINT32_MAX);
	if ((rtt_max || rtt_typ) && dp_rtt_config(a, c, rtt_max, rtt_typ))
		return -1;
	return 0;
}

static void *
dp_parse(const char *args, const struct shp_kind_env *env, char *err)
{
	struct shp_tcargs a = { .qdisc = "dualpi2", .err = err };
	char buf[DP_MAX_LEN], *argv[DP_MAX_WORDS];
	struct dp_conf c = dp_defaults, *out;

	err[0] = '\0';
	if (shp_tc_split(&a, args, buf, sizeof(buf), argv, DP_MAX_WORDS) < 0 ||
	    dp_words(&a, &c) < 0)
		return NULL;
	if (env != NULL && env->seed_set)
		c.seed = env->seed;
	out = malloc(sizeof(*out));
	if (out == NULL) {
		snprintf(err, SHP_ERR_LEN, "dualpi2: out of memory");
		return NULL;
	}
	c.hdr.id = shp_conf_new_id();
	*out = c;
	return out;
}

/* The shortest decimal of a gain that reads back to the same 1/256. */
static void
fmt_gain(char *buf, size_t len, uint32_t v)
{
	int d;

	for (d = 0; d < 9; d++) {
		snprintf(buf, len, "%.*f", d, v / 256.0);
		if (llround(strtod(buf, NULL) * 256) == (long long)v)
			return;
	}
}

/* Every parameter in tc's order and words (`tc qdisc show`), so that the
 * text parses back to the same conf; gains exact rather than as the
 * kernel reports them (tc_print). */
static int
dp_print(const struct dp_conf *c, bool tc, char *buf, size_t len)
{
	char t[32], u[32], al[32], be[32], st[40], ml[40] = "";
	uint32_t a = c->alpha, b = c->beta;

	/* tc shows it always; our text only when given, so that a new
	 * limit (`update`) sets it again as the kernel does */
	if (tc || c->memlimit_set)
		snprintf(ml, sizeof(ml), " memlimit %" PRIu32 "B", c->memlimit);

	if (tc) {
		shp_fmt_tc_time(t, sizeof(t), (uint64_t)c->target * 1000, true);
		shp_fmt_tc_time(u, sizeof(u), (uint64_t)c->tupdate * 1000,
				true);
		/* what the kernel keeps of them, as it reads them back */
		snprintf(al, sizeof(al), "%f", dp_unscale(dp_scale(a)) / 256.0);
		snprintf(be, sizeof(be), "%f", dp_unscale(dp_scale(b)) / 256.0);
	} else {
		shp_fmt_time(t, sizeof(t), (uint64_t)c->target * 1000);
		shp_fmt_time(u, sizeof(u), (uint64_t)c->tupdate * 1000);
		fmt_gain(al, sizeof(al), a);
		fmt_gain(be, sizeof(be), b);
	}
	if (c->step_pkts) {
		snprintf(st, sizeof(st), "%" PRIu32 "p", c->step_thresh);
	} else if (tc) {
		shp_fmt_tc_time(st, sizeof(st),
				(uint64_t)c->step_thresh * 1000, true);
	} else {
		shp_fmt_time(st, sizeof(st), (uint64_t)c->step_thresh * 1000);
	}
	return snprintf(buf, len, "limit %" PRIu32 "p%s "
			"target %s tupdate %s alpha %s beta %s step_thresh %s "
			"min_qlen_step %" PRIu32 "p coupling_factor %u %s %s "
			"classic_protection %u%% %s %s", c->limit, ml,
			t, u, al, be, st, c->min_qlen_step, c->coupling,
			c->drop_overload ? "drop_on_overload" : "overflow",
			c->drop_early ? "drop_enqueue" : "drop_dequeue", c->wc,
			c->ecn_mask == ECN_MASK_L4S ? "l4s_ect" : "any_ect",
			c->split_gso ? "split_gso" : "no_split_gso");
}

static int
dp_format(const void *conf, char *buf, size_t len)
{
	return dp_print(conf, false, buf, len);
}

static int
dp_tc_print(const char *args, const struct shp_kind_env *env,
	    const char **tc_name, char *buf, size_t len)
{
	char err[SHP_ERR_LEN];
	struct dp_conf *c = dp_parse(args, env, err);
	int n;

	RTE_SET_USED(tc_name);
	if (c == NULL)
		return snprintf(buf, len, "%s", args);
	n = dp_print(c, true, buf, len);
	free(c);
	return n;
}

static uint64_t
dp_capacity(const void *conf, const struct shp_kind_env *env)
{
	const struct dp_conf *c = conf;

	RTE_SET_USED(env);
	return c != NULL ? c->limit : DP_LIMIT_DEFAULT;
}

static const char *const dualpi2_exclusive[] = {
	"drop_on_overload", "overflow", "drop_enqueue", "drop_dequeue",
	"l4s_ect", "any_ect", "split_gso", "no_split_gso", NULL };

const struct shp_kind shp_kind_dualpi2 = {
	.name = "dualpi2",
	.slot = SHP_SLOT_QUEUE,
	.ops = &shp_dualpi2_ops,
	.parse = dp_parse,
	.format = dp_format,
	.tc_print = dp_tc_print,
	.conf_free = free,
	.capacity = dp_capacity,
	.drops = dualpi2_drops,
	.xstats = dualpi2_xstats,
	.usage = "dualpi2 [limit PACKETS] [memlimit BYTES] [target TIME] "
		 "[tupdate TIME] [alpha A] [beta B] [coupling_factor K] "
		 "[step_thresh TIME|PACKETSp] [min_qlen_step PACKETS] "
		 "[drop_on_overload|overflow] [drop_enqueue|drop_dequeue] "
		 "[classic_protection PERCENT] [l4s_ect|any_ect] "
		 "[max_rtt TIME [typical_rtt TIME]] [split_gso|no_split_gso]",
	.words = "limit#memlimit#target#tupdate#alpha#beta#coupling_factor#"
		 "step_thresh#min_qlen_step#drop_on_overload#overflow#"
		 "drop_enqueue#drop_dequeue#classic_protection#l4s_ect#"
		 "any_ect#max_rtt#typical_rtt#split_gso#no_split_gso",
	.exclusive = dualpi2_exclusive,
	.shards_note = "its L queue goes first within a shard only: an L frame waits "
		       "behind the C frames other shards send (L sojourn p99 5.1 ms "
		       "on 2 shards, 10.2 on 4, under 2 on one queue), and after "
		       "an idle gap its drops may fall on other frames (within "
		       "0.2% of one queue's)",
};
