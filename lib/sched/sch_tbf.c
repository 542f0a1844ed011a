/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Token bucket filter: gates dequeue from its child (the bands).
 * Follows Linux sch_tbf: tokens are transmit time, a packet leaves when
 * both buckets hold its cost, a frame longer than max_size (burst, or
 * min(burst, mtu) with a peak rate; raw length, as the kernel) can never
 * leave and is dropped (tbf_oversize). conf == NULL: pass-through.
 *
 * A shard of a link spread over several (issue 24) runs the link's one
 * bucket instead of its own: the chain's env names it (link, shp_link.h), and
 * the stage claims from it at most once per run of its child's packets,
 * and puts its claims off while the bucket is more than half full
 * (tbf_shared.h, struct shp_tbf_defer). The decisions are those of the
 * private bucket; only where the tokens are kept differs, and who takes
 * them: over a child that sends in arrival order the link's oldest head
 * first (tbf_oldest_first); over another, a shard the bucket refuses
 * reserves the link for its head frame (takes it out of the child and
 * holds it until the time the reservation gives), so that shards take
 * turns instead of the smallest head taking the tokens each time. A
 * frame of a higher band that arrives meanwhile leaves after the held
 * one (one frame per shard).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <rte_common.h>

#include "shp_kind.h"
#include "shp_meta.h"
#include "shp_qdisc.h"
#include "shp_tbf.h"
#include "shp_link.h"

/* Frames claimed from a shared bucket at once, at most. */
#define SHP_TBF_RUN_MAX 64

/* The buckets at their last checkpoint. */
struct tbf_state {
	uint64_t t_c;     /* ns of the last checkpoint */
	int64_t tokens;   /* ticks */
	int64_t ptokens;  /* ticks */
};

/* the kind's drop causes, each name beside its enum (shp_kind.h) */
#define TBF_DROPS(X) \
	/* larger than the bucket: could never pass */ \
	X(TBF_DROP_OVERSIZE, "tbf_oversize") \
	/* what our limit pushed out of the child: the child counts it, in \
	 * this same counter */ \
	X(TBF_DROP_LIMIT, "tbf_limit")
enum { TBF_DROPS(SHP_CAUSE_ENUM) };
static const char *const tbf_drops[] = {
	TBF_DROPS(SHP_CAUSE_NAME) NULL
};

/* its statistics, likewise */
#define TBF_XSTATS(X) \
	X(TBF_XS_HELD, "held", SHP_XS_GAUGE | SHP_XS_QLEN, NULL)
enum { TBF_XSTATS(SHP_XSTAT_ENUM) };
static const struct shp_xstat_desc tbf_xstats[] = {
	TBF_XSTATS(SHP_XSTAT_DESC) { NULL, 0, NULL }
};

struct tbf_priv {
	const struct shp_tbf_conf *conf;  /* published by change() */
	uint64_t seen;    /* id of the conf the state belongs to */
	struct tbf_state s;
	/* the stamps' clock (tbf_stamp), without sh: when the rate and the
	 * peak bucket were empty (ticks, modulo 2^64) had every frame left
	 * as soon as they let it; s is when they let it (a dequeue's now) */
	uint64_t edt_e, edt_p;
	/* the link's bucket, shared with the other shards (NULL: s is the
	 * bucket) */
	struct shp_tbf_shared *sh;
	/* with sh: the claims this shard puts off while the bucket is rich
	 * (tbf_shared.h) */
	struct shp_tbf_defer defer;
	/* with sh: the frame the link is reserved for, and when it may
	 * leave (NULL: none) */
	struct rte_mbuf *held;
	uint64_t held_at;
	/* the gauge that counts it as queued, in the block of the lcore
	 * that holds it (zeroed there when a reset drops it) */
	uint64_t *held_gauge;
	/* with sh: this shard of how many, and the head it last published
	 * (struct shp_tbf_head) */
	uint16_t shard, nb_shards;
	uint64_t head_pub;
	/* its head waited for an older one since its last claim: what it
	 * claims next was let go now, whatever the bucket held before */
	bool waited;
};

static inline struct tbf_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

static void
apply_limit(struct shp_qdisc *q, const struct shp_tbf_conf *c)
{
	/* as Linux's tbf sets its child fifo's limit, never knowing its
	 * kind: a child with a limit of its own ignores ours */
	if (q->child != NULL)
		shp_qdisc_set_limit(q->child, c ? c->limit : 0);
}

static int
tbf_init(struct shp_qdisc *q, const void *conf)
{
	if (q->child == NULL) {
		errno = EINVAL;
		return -1;
	}
	priv(q)->conf = conf;
	priv(q)->seen = UINT64_MAX;   /* no conf yet: the first is fresh */
	priv(q)->sh = q->env != NULL && q->env->link != NULL ?
		      &q->env->link->rate : NULL;
	/* oldest first among the shards only over a FIFO */
	if (priv(q)->sh != NULL && q->child->ops->arrival_order) {
		priv(q)->shard = q->env->shard;
		priv(q)->nb_shards = q->env->nb_shards;
	}
	/* full at the first use, whichever shard sends first */
	if (priv(q)->sh != NULL && conf != NULL)
		shp_tbf_shared_bind(priv(q)->sh, conf);
	apply_limit(q, conf);
	return 0;
}

/* A frame of wire bytes' time at the rate (ns). */
static inline uint64_t
tbf_frame_ns(const struct shp_tbf_conf *c, uint32_t wire)
{
	return shp_tbf_ticks(c->rate_mult, wire) >> SHP_TBF_SHIFT;
}

/* The shared bucket takes a conf the stage meets for the first time
 * (the first shard to meet a newer one refills it). */
static inline void
tbf_shared_seen(struct tbf_priv *p, const struct shp_tbf_conf *c,
		uint64_t now)
{
	if (unlikely(c->hdr.id != p->seen)) {
		p->seen = c->hdr.id;
		shp_tbf_defer_reset(&p->defer);
		shp_tbf_shared_adopt(p->sh, c, now);
	}
}

/*
 * Oldest first across the link's shards (issue 56): the arrival (+ 1)
 * before which this shard's frames may claim tokens now, its head frame
 * having arrived at rx1 - 1 (published here); UINT64_MAX: any. A frame
 * newer than another shard's head waits for it. One FIFO sends the
 * link's oldest frame first; shards that each claim as they poll would
 * take turns instead, and a shard holding more of
 * the backlog would wait that many times longer (4 shards: 94 ms of
 * sojourn where one queue has 57). Only while the bucket is under half
 * full: a richer one lets every frame go as it comes, and the tokens of
 * a shard whose lcore lost its CPU with an old head pile up until the
 * gate opens. Reads the other shards' heads only then (not while this
 * shard's last claim left the bucket rich, shp_tbf_defer_rich).
 */
static inline uint64_t
tbf_oldest_first(struct tbf_priv *p, const struct shp_tbf_conf *c,
		 uint64_t rx1, uint64_t now)
{
	uint64_t oldest;

	if (p->nb_shards < 2)
		return UINT64_MAX;
	shp_tbf_head_put(p->sh, p->shard, &p->head_pub, rx1);
	if (shp_tbf_defer_rich(&p->defer, c, now))
		return UINT64_MAX;
	oldest = shp_tbf_head_oldest(p->sh, p->nb_shards, p->shard);
	if (oldest == 0 ||
	    shp_tbf_shared_tokens(p->sh, c, now) >= c->buffer_t / 2)
		return UINT64_MAX;
	return oldest;
}

/* Frames claimed after the shard's head waited for an older one left
 * now: the bucket's history knows nothing of that wait. */
static inline void
tbf_after_wait(struct tbf_priv *p, struct rte_mbuf **pkts, uint16_t m,
	       uint64_t now)
{
	if (p->waited) {
		shp_meta_released(pkts, m, now);
		p->waited = false;
	}
}

/* The head this shard publishes: its child's next frame (arrival + 1),
 * 0 when it has none ready. */
static inline uint64_t
tbf_child_head(struct shp_qdisc *child, struct shp_ctx *ctx)
{
	struct rte_mbuf *const *run;
	struct rte_mbuf *one;

	return shp_qdisc_peek_run(child, &one, &run, ctx) > 0 ?
	       shp_meta(run[0])->rx_ns + 1 : 0;
}

/* The wire lengths of run[0..n) up to the first frame that can never
 * pass (its index returned, n if none). */
static inline uint16_t
tbf_wire_run(const struct shp_tbf_conf *c, struct rte_mbuf *const *run,
	     uint16_t n, uint32_t *wire)
{
	uint32_t last = UINT32_MAX, w = 0;
	uint16_t k;

	for (k = 0; k < n; k++) {
		uint32_t len = rte_pktmbuf_pkt_len(run[k]);

		if (unlikely(len > c->max_size))
			break;
		if (len != last) {
			last = len;
			w = (uint32_t)RTE_MIN(shp_tbf_wire_len(c, len),
					      (uint64_t)UINT32_MAX);
		}
		wire[k] = w;
	}
	return k;
}

/* The held frame is out of the child's queue: counted as queued by a
 * gauge (the port's conservation holds while it waits, not only once it
 * left). */
static inline void
held_count(struct shp_qdisc *q, struct tbf_priv *p, struct shp_ctx *ctx)
{
	p->held_gauge = shp_stage_xstat(q, ctx, TBF_XS_HELD);
	*p->held_gauge = p->held != NULL;
}

/* How long before now (ticks) the stamps' clock t was: a clock ahead of
 * now is a debt (netem's copies charged), below 0 by a few buckets at
 * most; an idle of days saturates, and one of over a hundred wraps the
 * ticks far below 0: as long ago. */
static inline int64_t
tbf_edt_ago(uint64_t t, uint64_t now)
{
	int64_t d = (int64_t)((now << SHP_TBF_SHIFT) - t);

	return d > INT64_MAX / 4 || d < INT64_MIN / 4 ? INT64_MAX / 4 : d;
}

/*
 * Stamp pkts[0..n), which the bucket let go at now, in order, with when
 * it would have let each go: the later of when the frame reached the gate
 * (its arrival, or a stage's stamp before) and when the bucket held its
 * cost, the frames before it gone at their own such times (the bucket as
 * departure times: empty-time E, a frame of cost c ready at t leaves at
 * max(t, E + c), and E becomes max(E, that - depth) + c). eago and pago:
 * how long before now (ticks) the rate bucket and the peak's (with a
 * peak rate) were empty before the frames, on that reckoning (updated
 * here): the private bucket keeps it (edt_e, edt_p). A shard knows the
 * link's bucket only as claims left it, each capped at a full bucket at
 * its own time, not at its frames' (another shard, on time, may have
 * claimed since): it counts from the empty-time before its claim or from
 * the link's newest low (struct shp_tbf_shared), whichever is earlier.
 * Since that low every claim found the bucket at least half full, so a
 * frame ready since could have left as it came, within the time of half
 * a bucket.
 * Why not now: a frame that waited for the lcore, not for the tokens (an
 * overloaded lcore lets the queue in front of a rich bucket fill), would
 * carry that wait into a later netem's delay as the profile's, unseen;
 * stamped so, it shows as lateness and is shed beyond --max-late, as
 * without the gate. On time (the offline tool's clock), the stamp is now.
 */
static inline void
tbf_stamp(const struct shp_tbf_conf *c, struct rte_mbuf **pkts, uint16_t n,
	  int64_t *eago_io, int64_t *pago_io, bool peak, uint64_t now)
{
	int64_t eago = *eago_io, pago = *pago_io;
	int64_t cost = 0, pcost = 0;
	uint32_t last = UINT32_MAX;
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct shp_meta *meta = shp_meta(pkts[i]);
		uint32_t len = rte_pktmbuf_pkt_len(pkts[i]);
		uint64_t at = RTE_MAX(meta->rx_ns, meta->time_to_send);
		int64_t el;

		if (len != last) {
			uint64_t w = shp_tbf_wire_len(c, len);

			last = len;
			cost = shp_tbf_ticks(c->rate_mult, w);
			pcost = peak ? shp_tbf_ticks(c->peak_mult, w) : 0;
		}
		/* ready: ticks before now (an hour's wait saturates) */
		el = at >= now ? 0 : now - at >= (UINT64_C(1) << 50) ?
		     INT64_MAX / 4 : (int64_t)((now - at) << SHP_TBF_SHIFT);
		el = RTE_MIN(el, eago - cost);
		if (peak)
			el = RTE_MIN(el, pago - pcost);
		el = RTE_MAX(el, (int64_t)0);   /* (it left at now) */
		eago = RTE_MIN(eago, el + c->buffer_t) - cost;
		if (peak)
			pago = RTE_MIN(pago, el + c->mtu_t) - pcost;
		shp_meta_released(&pkts[i], 1,
				  now - ((uint64_t)el >> SHP_TBF_SHIFT));
	}
	*eago_io = eago;
	*pago_io = pago;
}

/* tbf_stamp for the m frames a claim of d let go at now. */
static inline void
tbf_stamp_claim(const struct shp_tbf_conf *c, const struct shp_tbf_defer *d,
		struct rte_mbuf **pkts, uint16_t m, uint64_t now)
{
	/* the earlier of the two: a low bucket's history is its claims',
	 * a rich one let frames go as they came */
	int64_t ago = RTE_MAX(tbf_edt_ago(d->from, now),
			      tbf_edt_ago(d->low, now));
	int64_t pago = RTE_MAX(tbf_edt_ago(d->pfrom, now),
			       tbf_edt_ago(d->plow, now));

	tbf_stamp(c, pkts, m, &ago, &pago, c->peakrate != 0, now);
}

/*
 * tbf_dequeue on the link's bucket: per run of the child's packets one
 * claim for those in front of the first oversize one; what the bucket
 * refuses stays queued for a later round.
 */
static uint16_t
tbf_dequeue_shared(struct shp_qdisc *q, const struct shp_tbf_conf *c,
		   struct rte_mbuf **pkts, uint16_t n, struct shp_ctx *ctx)
{
	struct tbf_priv *p = priv(q);
	struct shp_qdisc *child = q->child;
	uint32_t wire[SHP_TBF_RUN_MAX];
	uint64_t now = ctx->now, bytes = 0, next;
	uint16_t got = 0;

	tbf_shared_seen(p, c, now);
	if (p->held != NULL) {
		if (now < p->held_at) {
			ctx->bytes = 0;
			return 0;
		}
		bytes += rte_pktmbuf_pkt_len(p->held);
		/* the reservation is when the bucket would let it go */
		shp_meta_released(&p->held, 1, p->held_at);
		pkts[got++] = p->held;
		p->held = NULL;
	}
	/* a shard whose head waited for older ones claimed nothing while
	 * the others did: its view of the bucket is stale (rich), so its
	 * debt goes now and the next claim reads the bucket */
	if (p->waited && p->defer.valid) {
		shp_tbf_shared_settle(p->sh, c, &p->defer, now);
		shp_tbf_defer_reset(&p->defer);
	}
	while (got < n) {
		struct rte_mbuf *const *run;
		struct rte_mbuf *one;
		uint16_t cnt = shp_qdisc_peek_run(child, &one, &run, ctx);
		uint16_t k, m = 0;

		if (cnt == 0) {
			if (p->nb_shards > 1)
				shp_tbf_head_put(p->sh, p->shard,
						 &p->head_pub, 0);
			break;
		}
		cnt = RTE_MIN(cnt, (uint16_t)(n - got));
		cnt = RTE_MIN(cnt, (uint16_t)SHP_TBF_RUN_MAX);
		k = tbf_wire_run(c, run, cnt, wire);
		if (k > 0) {
			uint64_t upto = tbf_oldest_first(
				p, c, shp_meta(run[0])->rx_ns + 1, now);

			if (upto != UINT64_MAX) {
				uint16_t j = 0;

				while (j < k && shp_meta(run[j])->rx_ns < upto)
					j++;
				if (j < k)
					p->waited = true;
				if (j == 0)
					break;   /* an older frame goes first */
				k = j;
				cnt = j;
			}
		}
		if (k > 0)
			m = shp_tbf_shared_claim_defer(p->sh, c, &p->defer,
						       wire, k, now, &next);
		if (m < k && p->nb_shards < 2) {
			/* the link's tokens are spent for now: frame m
			 * keeps the shard's place (m + 1 <= n - got) */
			bytes += shp_qdisc_take_run(child, m + 1, pkts + got,
						    ctx);
			tbf_stamp_claim(c, &p->defer, pkts + got, m, now);
			p->held = pkts[got + m];
			bytes -= rte_pktmbuf_pkt_len(p->held);
			p->held_at = shp_tbf_shared_reserve(p->sh, c, wire[m],
							    now);
			/* (a refusal is a claim: nothing was owed) the view
			 * lacks the reservation: claim next time */
			shp_tbf_defer_reset(&p->defer);
			got += m;
			break;
		}
		if (m > 0) {
			bytes += shp_qdisc_take_run(child, m, pkts + got, ctx);
			tbf_stamp_claim(c, &p->defer, pkts + got, m, now);
			tbf_after_wait(p, pkts + got, m, now);
			got += m;
		}
		if (m < k) {
			/* over a FIFO the oldest head, whichever shard's,
			 * takes the tokens when they come (no reservation: a
			 * held frame would escape the limit's pushout, which
			 * one queue's meets); the others see this one's */
			shp_tbf_head_put(p->sh, p->shard, &p->head_pub,
					 tbf_child_head(child, ctx));
			break;
		}
		if (k < cnt) {
			struct rte_mbuf *o;

			shp_qdisc_take_run(child, 1, &o, ctx);
			shp_stage_drop(q, ctx, TBF_DROP_OVERSIZE, o);
		}
	}
	held_count(q, p, ctx);
	ctx->bytes = bytes;
	return got;
}

static const void *
tbf_change(struct shp_qdisc *q, const void *conf)
{
	const void *old = priv(q)->conf;

	apply_limit(q, conf);
	__atomic_store_n(&priv(q)->conf, conf, __ATOMIC_RELEASE);
	return old;
}


/* A new profile starts with full buckets (as tbf_change), at the first
 * dequeue that sees it. */
static inline struct tbf_state
tbf_fresh(const struct shp_tbf_conf *c, uint64_t now)
{
	return (struct tbf_state){
		.t_c = now, .tokens = c->buffer_t, .ptokens = c->mtu_t,
	};
}

/*
 * Elapsed ticks beyond which waiting changes nothing: the bucket is full.
 * The kernel caps at the bucket, which is the same while the tokens are
 * not negative; below zero (a netem copy charged, shp_tbf_charge) the
 * debt must be earned back first.
 */
static inline int64_t
tbf_cap_ticks(const struct shp_tbf_conf *c, const struct tbf_state *s)
{
	int64_t debt = RTE_MAX(RTE_MAX(-s->tokens, -s->ptokens), (int64_t)0);

	return c->buffer_t + debt;
}

/* ns from a checkpoint after which the elapsed time is the cap */
static inline uint64_t
tbf_cap_ns(const struct shp_tbf_conf *c, const struct tbf_state *s)
{
	return ((uint64_t)tbf_cap_ticks(c, s) >> SHP_TBF_SHIFT) + 1;
}

/* Elapsed ticks from the checkpoint to now, capped so that an idle hour
 * cannot overflow. */
static inline int64_t
tbf_elapsed(const struct shp_tbf_conf *c, const struct tbf_state *s,
	    uint64_t now)
{
	if (now - s->t_c >= tbf_cap_ns(c, s))
		return tbf_cap_ticks(c, s);
	return (int64_t)((now - s->t_c) << SHP_TBF_SHIFT);
}

/* What both buckets hold after a frame of wlen wire bytes leaves,
 * `elapsed` ticks after the checkpoint s: it may leave iff both are >= 0. */
static inline void
tbf_charge(const struct shp_tbf_conf *c, const struct tbf_state *s,
	   int64_t elapsed, uint64_t wlen, int64_t *toks, int64_t *ptoks)
{
	*ptoks = 0;
	if (c->peakrate) {
		*ptoks = RTE_MIN(elapsed + s->ptokens, c->mtu_t);
		*ptoks -= shp_tbf_ticks(c->peak_mult, wlen);
	}
	*toks = RTE_MIN(elapsed + s->tokens, c->buffer_t);
	*toks -= shp_tbf_ticks(c->rate_mult, wlen);
}

/*
 * Charge pkts[0..n) in order, as Linux tbf charges one packet per
 * dequeue: how many both buckets cover, up to the first they do not or
 * an oversize one (*oversize). The buckets move to now at the first
 * packet (elapsed ticks after s's checkpoint; 0 afterwards); after it
 * they are below their depths and a packet only takes its cost, which is
 * worked out again only when the length changes.
 */
static inline uint16_t
tbf_charge_run(const struct shp_tbf_conf *c, struct tbf_state *s,
	       int64_t *elapsed, struct rte_mbuf *const *pkts, uint16_t n,
	       uint64_t now, bool *oversize)
{
	int64_t toks = RTE_MIN(*elapsed + s->tokens, c->buffer_t);
	int64_t ptoks = c->peakrate ?
			RTE_MIN(*elapsed + s->ptokens, c->mtu_t) : 0;
	int64_t cost = 0, pcost = 0;
	uint32_t last = UINT32_MAX;
	uint16_t k;

	*oversize = false;
	for (k = 0; k < n; k++) {
		uint32_t len = rte_pktmbuf_pkt_len(pkts[k]);

		if (unlikely(len > c->max_size)) {
			*oversize = true;
			break;
		}
		if (len != last) {
			uint64_t w = shp_tbf_wire_len(c, len);

			cost = shp_tbf_ticks(c->rate_mult, w);
			pcost = c->peakrate ? shp_tbf_ticks(c->peak_mult, w) : 0;
			last = len;
		}
		if (((toks - cost) | (ptoks - pcost)) < 0)
			break;
		toks -= cost;
		ptoks -= pcost;
	}
	if (k > 0) {
		s->t_c = now;
		s->tokens = toks;
		s->ptokens = ptoks;
		*elapsed = 0;
	}
	return k;
}

/* The stamps' clock full at now: a new profile's buckets. */
static inline void
tbf_edt_fresh(struct tbf_priv *p, const struct shp_tbf_conf *c, uint64_t now)
{
	p->edt_e = (now << SHP_TBF_SHIFT) - (uint64_t)c->buffer_t;
	p->edt_p = (now << SHP_TBF_SHIFT) - (uint64_t)c->mtu_t;
}

/* The stamps' clock set to ago and pago ticks before now. */
static inline void
tbf_edt_set(struct tbf_priv *p, int64_t ago, int64_t pago, uint64_t now)
{
	p->edt_e = (now << SHP_TBF_SHIFT) - (uint64_t)ago;
	p->edt_p = (now << SHP_TBF_SHIFT) - (uint64_t)pago;
}

/* Frames that left at now as they arrived (the RX bypass, a charge),
 * costing cost and pcost ticks in all: the stamps' clock moves as the
 * buckets do. */
static inline void
tbf_edt_now(struct tbf_priv *p, const struct shp_tbf_conf *c, int64_t cost,
	    int64_t pcost, uint64_t now)
{
	tbf_edt_set(p, RTE_MIN(tbf_edt_ago(p->edt_e, now), c->buffer_t) - cost,
		    RTE_MIN(tbf_edt_ago(p->edt_p, now), c->mtu_t) - pcost,
		    now);
}

/*
 * Charge the packets at the head of the child in order, as Linux tbf
 * does one by one, and take all that may leave in one call per run.
 */
static uint16_t
tbf_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	struct tbf_priv *p = priv(q);
	const struct shp_tbf_conf *c;
	struct shp_qdisc *child = q->child;
	uint64_t now = ctx->now;
	uint64_t bytes = 0;
	struct tbf_state s;
	int64_t elapsed;
	uint16_t got = 0, k;

	c = __atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
	if (unlikely(c == NULL && p->held != NULL)) {
		/* turned off while a frame held the link's place: it goes
		 * first, at once */
		pkts[0] = p->held;
		p->held = NULL;
		held_count(q, p, ctx);
		shp_meta_released(pkts, 1, now);
		got = 1 + child->ops->dequeue(child, pkts + 1,
					      (uint16_t)(n - 1), ctx);
		ctx->bytes = UINT64_MAX;
		return got;
	}
	if (c == NULL)
		return child->ops->dequeue(child, pkts, n, ctx);
	if (p->sh != NULL)
		return tbf_dequeue_shared(q, c, pkts, n, ctx);
	if (unlikely(c->hdr.id != p->seen)) {
		p->seen = c->hdr.id;
		p->s = tbf_fresh(c, now);
		tbf_edt_fresh(p, c, now);
	}
	/* the buckets stay in registers for the round, written back once */
	s = p->s;
	elapsed = tbf_elapsed(c, &s, now);
	while (got < n) {
		struct rte_mbuf *const *run;
		struct rte_mbuf *one;
		uint16_t cnt = shp_qdisc_peek_run(child, &one, &run, ctx);
		bool oversize, stop;

		if (cnt == 0)
			break;
		cnt = RTE_MIN(cnt, (uint16_t)(n - got));
		k = tbf_charge_run(c, &s, &elapsed, run, cnt, now, &oversize);
		stop = k < cnt && !oversize;
		if (k > 0) {
			bytes += shp_qdisc_take_run(child, k, pkts + got, ctx);
			got += k;
		}
		if (oversize) {
			struct rte_mbuf *m;

			shp_qdisc_take_run(child, 1, &m, ctx);
			shp_stage_drop(q, ctx, TBF_DROP_OVERSIZE, m);
		} else if (stop) {
			break;
		}
	}
	p->s = s;
	if (got > 0) {
		int64_t ago = tbf_edt_ago(p->edt_e, now);
		int64_t pago = tbf_edt_ago(p->edt_p, now);

		tbf_stamp(c, pkts, got, &ago, &pago, c->peakrate != 0, now);
		tbf_edt_set(p, ago, pago, now);
	}
	ctx->bytes = bytes;
	return got;
}

/*
 * Earliest t >= s->t_c at which a bucket of `depth` ticks holding `have`
 * at the checkpoint covers `cost`: min(elapsed(t) + have, depth) >= cost,
 * elapsed as tbf_elapsed (whole ns, so the ticks still missing are rounded
 * up to the next ns). UINT64_MAX if never.
 */
static uint64_t
tbf_fill_time(const struct shp_tbf_conf *c, const struct tbf_state *s,
	      int64_t have, int64_t depth, int64_t cost)
{
	uint64_t cap = tbf_cap_ns(c, s), dt;
	int64_t need = cost - have;

	if (cost > depth)
		return UINT64_MAX;
	if (need <= 0)
		return s->t_c;
	dt = ((uint64_t)need + (1u << SHP_TBF_SHIFT) - 1) >> SHP_TBF_SHIFT;
	if (dt < cap)
		return s->t_c + dt;
	/* from cap on, elapsed is the cap */
	return tbf_cap_ticks(c, s) >= need ? s->t_c + cap : UINT64_MAX;
}

/*
 * When tbf_dequeue would first let the child's head go: both buckets
 * cover its cost (elapsed only grows with the clock, so the later of the
 * two fill times). Reads the bucket state without changing it; the
 * child's peek may fill its stash and run the pushout due at now.
 */
static uint64_t
tbf_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct tbf_priv *p = priv(q);
	const struct shp_tbf_conf *c;
	struct shp_qdisc *child = q->child;
	uint64_t now = ctx->now, t_child, t, wlen;
	struct tbf_state s;
	int64_t toks, ptoks;
	struct rte_mbuf *m;
	uint32_t len;

	c = __atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
	if (p->held != NULL)   /* it goes first */
		return RTE_MAX(now, p->held_at);
	t_child = shp_qdisc_next_time(child, ctx);
	if (c == NULL || t_child == UINT64_MAX)
		return t_child;
	m = child->ops->peek(child, ctx);
	if (m == NULL) {   /* nothing at now: the child's time is all we know */
		/* (a head held back, e.g. for a higher band elsewhere, is
		 * none the others wait for) */
		if (p->nb_shards > 1)
			shp_tbf_head_put(p->sh, p->shard, &p->head_pub, 0);
		return t_child > now ? t_child : UINT64_MAX;
	}
	len = rte_pktmbuf_pkt_len(m);
	if (len > c->max_size)   /* dequeue drops it at once */
		return RTE_MAX(now, t_child);
	if (p->sh != NULL) {
		/* the dequeue fills it first */
		if (c->hdr.id != p->seen && shp_tbf_shared_fresh(p->sh, c))
			return RTE_MAX(now, t_child);
		uint32_t w = (uint32_t)RTE_MIN(shp_tbf_wire_len(c, len),
					       (uint64_t)UINT32_MAX);
		uint64_t upto;

		t = RTE_MAX(shp_tbf_shared_when_owed(p->sh, c, &p->defer, w,
						     now), now);
		/* an older frame of another shard goes first then: look
		 * again a frame's time on (its shard's time comes sooner,
		 * and what it does makes this one look again) */
		upto = tbf_oldest_first(p, c, shp_meta(m)->rx_ns + 1, t);
		if (shp_meta(m)->rx_ns >= upto) {
			t += RTE_MAX(tbf_frame_ns(c, w), 1u);
			p->waited = true;
		}
		return RTE_MAX(t, t_child);
	}
	s = c->hdr.id != p->seen ? tbf_fresh(c, now) : p->s;
	wlen = shp_tbf_wire_len(c, len);
	tbf_charge(c, &s, tbf_elapsed(c, &s, now), wlen, &toks, &ptoks);
	if ((toks | ptoks) >= 0)
		return RTE_MAX(now, t_child);
	t = tbf_fill_time(c, &s, s.tokens, c->buffer_t,
			  shp_tbf_ticks(c->rate_mult, wlen));
	if (c->peakrate && t != UINT64_MAX)
		t = RTE_MAX(t, tbf_fill_time(c, &s, s.ptokens, c->mtu_t,
					     shp_tbf_ticks(c->peak_mult,
							   wlen)));
	if (t == UINT64_MAX)
		return t;
	return RTE_MAX(RTE_MAX(t, now), t_child);
}

void
shp_tbf_charge(struct shp_qdisc *q, uint32_t len, uint64_t now)
{
	struct tbf_priv *p;
	const struct shp_tbf_conf *c;
	uint64_t wlen;
	int64_t elapsed, cost, pcost;

	/* the first bucket below (a pass-through stage may sit between,
	 * as the offline tool's tbf-exit stamp does) */
	while (q != NULL && q->ops != &shp_tbf_ops)
		q = q->child;
	if (q == NULL)
		return;
	p = priv(q);
	c = __atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
	if (c == NULL)
		return;
	if (p->sh != NULL) {
		tbf_shared_seen(p, c, now);
		shp_tbf_shared_settle(p->sh, c, &p->defer, now);
		shp_tbf_shared_charge(p->sh, c, (uint32_t)RTE_MIN(
				shp_tbf_wire_len(c, len), (uint64_t)UINT32_MAX),
				now);
		shp_tbf_defer_reset(&p->defer);   /* its view lacks the charge */
		return;
	}
	if (unlikely(c->hdr.id != p->seen)) {
		p->seen = c->hdr.id;
		p->s = tbf_fresh(c, now);
		tbf_edt_fresh(p, c, now);
	}
	/* bring the buckets to now, then take the cost even if it leaves
	 * them below zero: the debt is at most a burst of copies, each no
	 * larger than the bucket, so it cannot overflow */
	elapsed = tbf_elapsed(c, &p->s, now);
	wlen = shp_tbf_wire_len(c, len);
	cost = shp_tbf_ticks(c->rate_mult, wlen);
	pcost = c->peakrate ? shp_tbf_ticks(c->peak_mult, wlen) : 0;
	if (c->peakrate)
		p->s.ptokens = RTE_MIN(elapsed + p->s.ptokens, c->mtu_t) -
			       pcost;
	p->s.tokens = RTE_MIN(elapsed + p->s.tokens, c->buffer_t) - cost;
	p->s.t_c = now;
	tbf_edt_now(p, c, cost, pcost, now);
}


/*
 * With the child empty, a dequeue at now right after the enqueue of
 * pkts would charge them in order and let go those the buckets cover,
 * up to the first that does not fit; so does this, without the queue.
 * A stamp before the checkpoint (a paced burst carries the time it was
 * due) is left to the queue: the bucket's clock never goes back.
 */
static uint16_t
tbf_pass(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	 struct shp_ctx *ctx)
{
	struct tbf_priv *p = priv(q);
	const struct shp_tbf_conf *c = __atomic_load_n(&p->conf,
						       __ATOMIC_ACQUIRE);
	uint64_t now = ctx->now;
	int64_t elapsed, toks, ptoks;
	bool oversize;
	uint16_t k;

	if (c == NULL)
		return n;
	if (p->sh != NULL) {
		uint32_t wire[SHP_TBF_RUN_MAX];
		uint64_t next;

		if (p->held != NULL)
			return 0;   /* what arrives goes after it */
		tbf_shared_seen(p, c, now);
		k = tbf_wire_run(c, pkts, RTE_MIN(n, (uint16_t)SHP_TBF_RUN_MAX),
				 wire);
		/* (the frames arrive now: their metadata is not
		 * written yet) an older frame of another shard goes
		 * first */
		if (k > 0 && now >= tbf_oldest_first(p, c, now + 1, now))
			k = 0;
		return k > 0 ? shp_tbf_shared_claim_defer(p->sh, c, &p->defer,
							  wire, k, now,
							  &next) : 0;
	}
	if (unlikely(c->hdr.id != p->seen)) {
		p->seen = c->hdr.id;
		p->s = tbf_fresh(c, now);
		tbf_edt_fresh(p, c, now);
	}
	if (now < p->s.t_c)
		return 0;
	elapsed = tbf_elapsed(c, &p->s, now);
	/* what the buckets hold at now, before the frames */
	toks = RTE_MIN(elapsed + p->s.tokens, c->buffer_t);
	ptoks = RTE_MIN(elapsed + p->s.ptokens, c->mtu_t);
	/* an oversize frame is the dequeue's to drop and count */
	k = tbf_charge_run(c, &p->s, &elapsed, pkts, n, now, &oversize);
	if (k > 0)
		tbf_edt_now(p, c, toks - p->s.tokens,
			    c->peakrate ? ptoks - p->s.ptokens : 0, now);
	return k;
}

/* The held frame is what the dequeue returns next. */
static struct rte_mbuf *
tbf_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct rte_mbuf *m = priv(q)->held;

	return m != NULL ? m : q->child->ops->peek(q->child, ctx);
}

static void
tbf_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	const struct rte_mbuf *m = priv(q)->held;

	st->qlen = m != NULL;
	st->backlog = m != NULL ? rte_pktmbuf_pkt_len(m) : 0;
}

static void
tbf_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct tbf_priv *p = priv(q);

	if (p->held != NULL)
		shp_drop(ctx, SHP_DROP_FLUSHED, p->held);
	p->held = NULL;
	if (p->held_gauge != NULL)
		*p->held_gauge = 0;
}

static bool
tbf_idle(const struct shp_qdisc *q)
{
	return __atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE) == NULL;
}


static void
tbf_dump(const struct shp_qdisc *q, FILE *f)
{
	const struct shp_tbf_conf *c =
		__atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE);
	char buf[256];

	if (c == NULL) {
		fprintf(f, "off");
		return;
	}
	shp_tbf_format(c, buf, sizeof(buf));
	fprintf(f, "%s", buf);
}

const struct shp_qdisc_ops shp_tbf_ops = {
	.id = "tbf",
	.priv_size = sizeof(struct tbf_priv),
	.init = tbf_init,
	.change = tbf_change,
	.enqueue = shp_gate_enqueue,
	.dequeue = tbf_dequeue,
	.peek = tbf_peek,
	.next_time = tbf_next_time,
	.idle = tbf_idle,
	.pass = tbf_pass,
	.charge = shp_tbf_charge,
	.reset = tbf_reset,
	.stats = tbf_stats,
	.dump = tbf_dump,
};

static void *
tbf_kind_parse(const char *args, const struct shp_kind_env *env, char *err)
{
	RTE_SET_USED(env);
	return shp_tbf_conf_new(shp_tbf_parse, args, err);
}

static int
tbf_kind_format(const void *conf, char *buf, size_t len)
{
	return shp_tbf_format(conf, buf, len);
}

/* as tc prints tbf: rate, burst, peakrate and minburst, then the limit
 * as the latency it allows ("lat"), or the limit when it allows none,
 * overhead, linklayer; burst and minburst as the bucket holds them, the
 * overhead and ATM cells counted in (tc prints the bucket's time back as
 * bytes) */
static int
tbf_tc_print(const char *args, const struct shp_kind_env *env,
	     const char **tc_name, char *buf, size_t len)
{
	struct shp_tbf_conf c;
	char err[SHP_ERR_LEN], r[32], b[32], l[32], p[32], m[32];
	double lat_s, burst, mtu;
	int n;

	RTE_SET_USED(env);
	RTE_SET_USED(tc_name);
	if (shp_tbf_parse(args, &c, err) < 0 || c.rate == 0)
		return snprintf(buf, len, "%s", args);   /* not ours */
	burst = (double)shp_tbf_wire_len(&c, c.burst);
	shp_fmt_rate(r, sizeof(r), c.rate);
	shp_fmt_size(b, sizeof(b), (uint64_t)burst);
	n = snprintf(buf, len, "rate %s burst %s ", r, b);
	if (c.peakrate) {
		mtu = (double)shp_tbf_wire_len(&c, c.mtu);
		shp_fmt_rate(p, sizeof(p), c.peakrate);
		shp_fmt_size(m, sizeof(m), (uint64_t)mtu);
		n += snprintf(buf + n, RTE_MAX(len, (size_t)n) - n,
			      "peakrate %s minburst %s ", p, m);
	}
	if (c.latency != 0) {
		lat_s = c.latency / 1e9;
	} else {
		lat_s = ((double)c.limit - burst) / (double)c.rate;
		if (c.peakrate && ((double)c.limit - mtu) /
		    (double)c.peakrate > lat_s)
			lat_s = ((double)c.limit - mtu) / (double)c.peakrate;
	}
	if (lat_s >= 0) {
		shp_fmt_tc_time(l, sizeof(l), (uint64_t)(lat_s * 1e9 + 0.5),
				true);
		n += snprintf(buf + n, RTE_MAX(len, (size_t)n) - n, "lat %s",
			      l);
	} else {
		shp_fmt_size(l, sizeof(l), c.limit);
		n += snprintf(buf + n, RTE_MAX(len, (size_t)n) - n,
			      "limit %s", l);
	}
	if (c.overhead)
		n += snprintf(buf + n, RTE_MAX(len, (size_t)n) - n,
			      " overhead %d", c.overhead);
	if (c.mpu)
		n += snprintf(buf + n, RTE_MAX(len, (size_t)n) - n,
			      " mpu %ub", c.mpu);
	if (c.atm)
		n += snprintf(buf + n, RTE_MAX(len, (size_t)n) - n,
			      " linklayer atm");
	return n;
}

/* a shard's frame held for the link's place it reserved (tbf on shards) */
/* Frames larger than the bucket never pass; the cure is a bigger one. */
static int
tbf_note(const void *conf, const struct shp_run_facts *run, char *buf,
	 size_t len)
{
	const struct shp_tbf_conf *tc = conf;
	int slot = shp_drop_index(tbf_drops[TBF_DROP_OVERSIZE]);
	uint64_t over = slot >= 0 ? run->drops[slot] : 0;

	if (over == 0)
		return 0;
	return snprintf(buf, len, "note: %" PRIu64 " packets (%.1f%%) were "
			"larger than what tbf's bucket holds (burst %" PRIu64
			" bytes%s) and could never pass (tbf_oversize): the "
			"largest frame is %u bytes, give %s at least that "
			"(tbf counts frames without the 4-byte FCS)\n",
			over, 100.0 * (double)over / (double)run->offered,
			tc->burst,
			tc->peakrate ? ", or mtu with peakrate" : "",
			run->max_len, tc->peakrate ? "burst and mtu" :
			"burst");
}

static uint64_t
tbf_kind_rate(const void *conf)
{
	return ((const struct shp_tbf_conf *)conf)->rate;
}

/* the bucket's limit given as bytes or as the wait it allows */
static const char *const tbf_exclusive[] = { "limit", "latency", NULL };

const struct shp_kind shp_kind_tbf = {
	.name = "tbf",
	.slot = SHP_SLOT_RATE,
	.ops = &shp_tbf_ops,
	.parse = tbf_kind_parse,
	.format = tbf_kind_format,
	.conf_free = free,
	.tc_print = tbf_tc_print,
	.rate = tbf_kind_rate,
	.note = tbf_note,
	.drops = tbf_drops,
	.xstats = tbf_xstats,
	.usage = "tbf rate RATE burst BYTES (limit BYTES | latency TIME) "
		 "[peakrate RATE mtu BYTES] [overhead BYTES] [mpu BYTES] "
		 "[linklayer ethernet|atm]",
	.words = "rate#burst#limit#latency#peakrate#mtu#overhead#mpu#"
		 "linklayer",
	.exclusive = tbf_exclusive,
};
