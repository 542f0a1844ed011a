/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <rte_common.h>

#include "replay_clock.h"

/* Defined in lib/sch_tbf.c for `show tbf` (no header declares it). */

struct tap_priv {
	struct tbf_shadow *s;
};

static inline struct tbf_shadow *
tap_shadow(const struct shp_qdisc *q)
{
	return ((const struct tap_priv *)q->priv)->s;
}

/* Elapsed ticks since the checkpoint, capped as sch_tbf.c does. */
static inline int64_t
shadow_elapsed(const struct tbf_shadow *s, uint64_t now)
{
	const struct shp_tbf_conf *c = s->conf;

	if (now - s->t_c >= ((uint64_t)c->buffer_t >> SHP_TBF_SHIFT) + 1)
		return c->buffer_t;
	return (int64_t)((now - s->t_c) << SHP_TBF_SHIFT);
}

/* The bucket let a packet of len bytes go at now. */
static void
shadow_take(struct tbf_shadow *s, uint64_t now, uint32_t len)
{
	const struct shp_tbf_conf *c = s->conf;
	int64_t elapsed = shadow_elapsed(s, now), ptoks = 0, toks;
	uint64_t wlen = shp_tbf_wire_len(c, len);

	if (c->peakrate) {
		ptoks = RTE_MIN(elapsed + s->ptokens, c->mtu_t);
		ptoks -= shp_tbf_ticks(c->peak_mult, wlen);
	}
	toks = RTE_MIN(elapsed + s->tokens, c->buffer_t);
	toks -= shp_tbf_ticks(c->rate_mult, wlen);
	s->t_c = now;
	s->tokens = toks;
	s->ptokens = ptoks;
}

/* Earliest t >= t_c with min(elapsed(t) + have, depth) >= cost, or
 * SHP_NEVER; elapsed is capped at the rate bucket (as in sch_tbf.c). */
static uint64_t
bucket_time(const struct tbf_shadow *s, int64_t have, int64_t cost)
{
	const struct shp_tbf_conf *c = s->conf;
	uint64_t cap_t = ((uint64_t)c->buffer_t >> SHP_TBF_SHIFT) + 1;
	int64_t need = cost - have;
	uint64_t dt;

	if (need <= 0)
		return s->t_c;
	dt = ((uint64_t)need + (1u << SHP_TBF_SHIFT) - 1) >> SHP_TBF_SHIFT;
	if (dt < cap_t)
		return s->t_c + dt;
	/* from cap_t on, elapsed is the whole rate bucket */
	if (c->buffer_t + have >= cost)
		return s->t_c + cap_t;
	return SHP_NEVER;
}

uint64_t
tbf_shadow_release_time(const struct tbf_shadow *s, uint64_t now,
			uint32_t len)
{
	const struct shp_tbf_conf *c = s->conf;
	uint64_t wlen, t, tp;

	if (c == NULL || !s->started || len > c->max_size)
		return now;
	wlen = shp_tbf_wire_len(c, len);
	t = bucket_time(s, s->tokens, shp_tbf_ticks(c->rate_mult, wlen));
	if (c->peakrate) {
		tp = bucket_time(s, s->ptokens,
				 shp_tbf_ticks(c->peak_mult, wlen));
		t = RTE_MAX(t, tp);
	}
	return RTE_MAX(t, now);
}

static int
tap_init(struct shp_qdisc *q, const void *conf)
{
	if (q->child == NULL || conf == NULL) {
		errno = EINVAL;
		return -1;
	}
	((struct tap_priv *)q->priv)->s = (struct tbf_shadow *)(uintptr_t)conf;
	return 0;
}

static uint16_t
tap_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	return q->child->ops->enqueue(q->child, pkts, n, ctx);
}

static uint16_t
tap_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	struct tbf_shadow *s = tap_shadow(q);
	uint16_t k, i;

	if (s->conf != NULL && !s->started) {
		/* the bucket starts full at its first dequeue */
		s->started = true;
		s->t_c = ctx->now;
		s->tokens = s->conf->buffer_t;
		s->ptokens = s->conf->mtu_t;
	}
	k = q->child->ops->dequeue(q->child, pkts, n, ctx);
	s->released += k;
	if (s->conf == NULL || k == 0)
		return k;
	for (i = 0; i < k; i++)
		shadow_take(s, ctx->now, rte_pktmbuf_pkt_len(pkts[i]));
	if (s->tbf != NULL && shp_tbf_tokens(s->tbf) != s->tokens) {
		s->resync++;
		s->tokens = shp_tbf_tokens(s->tbf);
	}
	return k;
}

static struct rte_mbuf *
tap_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	return q->child->ops->peek(q->child, ctx);
}

static void
tap_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	st->qlen = 0;
	st->backlog = 0;
}

static void
tap_dump(const struct shp_qdisc *q, FILE *f)
{
	fprintf(f, "tap");
}

const struct shp_qdisc_ops replay_tap_ops = {
	.id = "replay_tap",
	.priv_size = sizeof(struct tap_priv),
	.init = tap_init,
	.enqueue = tap_enqueue,
	.dequeue = tap_dequeue,
	.peek = tap_peek,
	.stats = tap_stats,
	.dump = tap_dump,
};
