/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Token bucket filter: gates dequeue from its child (the bands).
 * Follows Linux sch_tbf: tokens are transmit time, a packet leaves when
 * both buckets hold its cost, a frame larger than the bucket can never
 * leave and is dropped (tbf_oversize). conf == NULL: pass-through.
 */
#include <errno.h>
#include <inttypes.h>

#include "sch_bands.h"
#include "shp_qdisc.h"
#include "shp_tbf.h"

struct tbf_priv {
	const struct shp_tbf_conf *conf;  /* published by change() */
	const struct shp_tbf_conf *seen;  /* the conf the state belongs to */
	uint64_t t_c;     /* ns of the last checkpoint */
	int64_t tokens;   /* ticks */
	int64_t ptokens;  /* ticks */
};

static inline struct tbf_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

static void
apply_limit(struct shp_qdisc *q, const struct shp_tbf_conf *c)
{
	if (q->child != NULL && q->child->ops == &shp_bands_ops)
		shp_bands_set_limit(q->child, c ? c->limit : 0);
}

static int
tbf_init(struct shp_qdisc *q, const void *conf)
{
	if (q->child == NULL) {
		errno = EINVAL;
		return -1;
	}
	priv(q)->conf = conf;
	apply_limit(q, conf);
	return 0;
}

static const void *
tbf_change(struct shp_qdisc *q, const void *conf)
{
	const void *old = priv(q)->conf;

	apply_limit(q, conf);
	__atomic_store_n(&priv(q)->conf, conf, __ATOMIC_RELEASE);
	return old;
}

static uint16_t
tbf_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	return q->child->ops->enqueue(q->child, pkts, n, ctx);
}

static uint16_t
tbf_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	struct tbf_priv *p = priv(q);
	const struct shp_tbf_conf *c;
	struct shp_qdisc *child = q->child;
	uint64_t now = ctx->now;
	uint64_t bytes = 0;
	int64_t elapsed;
	uint16_t got = 0;

	c = __atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
	if (c == NULL)
		return child->ops->dequeue(child, pkts, n, ctx);
	if (unlikely(c != p->seen)) {
		/* A new profile starts with full buckets, as tbf_change. */
		p->seen = c;
		p->tokens = c->buffer_t;
		p->ptokens = c->mtu_t;
		p->t_c = now;
	}
	/* Elapsed ticks, capped at the bucket so an idle hour cannot
	 * overflow. */
	if (now - p->t_c >= ((uint64_t)c->buffer_t >> SHP_TBF_SHIFT) + 1)
		elapsed = c->buffer_t;
	else
		elapsed = (int64_t)((now - p->t_c) << SHP_TBF_SHIFT);

	while (got < n) {
		struct rte_mbuf *m = child->ops->peek(child, ctx);
		int64_t toks, ptoks = 0;
		uint64_t wlen;
		uint32_t len;

		if (m == NULL)
			break;
		len = rte_pktmbuf_pkt_len(m);
		if (unlikely(len > c->max_size)) {
			child->ops->dequeue(child, &m, 1, ctx);
			shp_drop(ctx, SHP_DROP_TBF_OVERSIZE, m);
			continue;
		}
		wlen = shp_tbf_wire_len(c, len);
		if (c->peakrate) {
			ptoks = RTE_MIN(elapsed + p->ptokens, c->mtu_t);
			ptoks -= shp_tbf_ticks(c->peak_mult, wlen);
		}
		toks = RTE_MIN(elapsed + p->tokens, c->buffer_t);
		toks -= shp_tbf_ticks(c->rate_mult, wlen);
		if ((toks | ptoks) < 0)
			break;
		child->ops->dequeue(child, &pkts[got++], 1, ctx);
		bytes += len;
		p->t_c = now;
		p->tokens = toks;
		p->ptokens = ptoks;
		elapsed = 0;
	}
	ctx->bytes = bytes;
	return got;
}

static struct rte_mbuf *
tbf_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	return q->child->ops->peek(q->child, ctx);
}

static void
tbf_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	st->qlen = 0;
	st->backlog = 0;
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
	.enqueue = tbf_enqueue,
	.dequeue = tbf_dequeue,
	.peek = tbf_peek,
	.stats = tbf_stats,
	.dump = tbf_dump,
};

int64_t
shp_tbf_tokens(const struct shp_qdisc *q)
{
	return priv(q)->tokens;
}
