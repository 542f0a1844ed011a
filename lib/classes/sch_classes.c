/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The classes stage (shp_classes.h): enqueue classifies the burst into
 * the class chains, dequeue serves them by strict priority, then deficit
 * round robin within a priority.
 *
 * Each member (a class, and the port's own queue for the unmatched
 * traffic: one more member of priority 0 with the default quantum) has a
 * small staging FIFO of what its chain's root released. Every dequeue
 * first tops up every member's FIFO from its root, as far as the root has
 * due packets (looping while the root says it has more): so a class's
 * netem takes in what its queue holds as promptly as a port's netem would,
 * whatever the scheduler grants the class; and DRR then works on packets
 * whose lengths it knows (Linux's sch_drr): a turn adds the quantum, the
 * head leaves while it fits in the deficit, a member whose FIFO runs dry
 * loses its deficit. A member with nothing due has an empty FIFO and is
 * passed over: it never blocks another.
 *
 * A parent's peek (tbf) makes the scheduler choose its next packet: it is
 * kept in a one-packet stash and dequeue returns it first (Linux's
 * qdisc_peek_dequeued).
 */
#include <rte_malloc.h>

#include "sch_classes_priv.h"

/* Hand v[0..k) (bands vb, used, bytes) to member i's queue. */
static uint16_t
hand_to(struct shp_qdisc *q, struct classes_conf *cf, uint16_t i,
	struct rte_mbuf **v, uint8_t *vb, uint32_t used, uint64_t bytes,
	uint16_t k, struct shp_ctx *ctx)
{
	struct shp_qdisc *dst;
	struct shp_ctx c = *ctx;

	if (i == DEF_MEMBER) {
		dst = q->child;
	} else {
		struct shp_port_ctr *ctr = cf->cls[i]->ctr;

		dst = cf->cls[i]->chain.queue;
		c.tag.cls = cf->cls[i]->name;
		ctr->egress_in += k;
		ctr->rx_packets += k;
		ctr->rx_bytes += bytes;
		c.ctr = ctr;
		/* the class's policer, before its queue */
		if (unlikely(shp_chain_ingress_on(&cf->cls[i]->chain))) {
			uint64_t gone = 0;
			uint16_t m = shp_chain_ingress(&cf->cls[i]->chain, v,
						       k, NULL, vb, &gone, &c);
			uint16_t j;

			bytes -= gone;
			if (m == 0)
				return 0;
			if (m < k && vb != NULL)
				for (j = 0, used = 0; j < m; j++)
					used |= 1u << vb[j];
			k = m;
		}
		/* the RX pass mapped with the port's map: a class's
		 * queue has a map of its own */
		if (vb != NULL) {
			const uint8_t *cm =
				shp_chain_priomap(&cf->cls[i]->chain);
			uint16_t j;

			if (cm != NULL)
				for (j = 0, used = 0; j < k; j++) {
					vb[j] = cm[shp_meta(v[j])->prio];
					used |= 1u << vb[j];
				}
		}
		busy_push(cf, i);
		/* a class's own gate holds its queue back as the port's does */
		c.unthrottled = ctx->unthrottled &&
				shp_chain_unthrottled(&cf->cls[i]->chain);
	}
	if (vb != NULL && dst->ops->enqueue_rx != NULL)
		return dst->ops->enqueue_rx(dst, v, vb, used, bytes, k, &c);
	return dst->ops->enqueue(dst, v, k, &c);
}

/* Split the burst by class, keeping each class's packets in order. */
static uint16_t
classes_split(struct shp_qdisc *q, struct rte_mbuf **pkts, uint8_t *band,
	      uint16_t n, struct shp_ctx *ctx)
{
	struct classes_conf *cf;
	uint16_t cls[n ? n : 1], who[n ? n : 1], i, j, k, ok = 0;
	uint8_t vb[n ? n : 1];
	struct rte_mbuf *v[n ? n : 1];

	if (n == 0)
		return 0;
	cf = conf_load(q);
	if (cf->table != NULL) {
		shp_match_lookup_burst(cf->table, pkts, n, cls);
		for (i = 0; i < n; i++) {
			uint16_t m = cls[i] < cf->nb_match ? cf->map[cls[i]] :
				     NO_MEMBER;

			who[i] = m == NO_MEMBER ? DEF_MEMBER : m;
		}
	} else {
		for (i = 0; i < n; i++)
			who[i] = DEF_MEMBER;
	}
	for (i = 0; i < n; i++) {
		uint16_t t = who[i];
		uint32_t used = 0;
		uint64_t bytes = 0;

		if (t == NO_MEMBER)
			continue;
		for (j = i, k = 0; j < n; j++) {
			if (who[j] != t)
				continue;
			v[k] = pkts[j];
			bytes += rte_pktmbuf_pkt_len(pkts[j]);
			if (band != NULL) {
				vb[k] = band[j];
				used |= 1u << band[j];
			}
			k++;
			who[j] = NO_MEMBER;
		}
		ok += hand_to(q, cf, t, v, band != NULL ? vb : NULL, used,
			      bytes, k, ctx);
	}
	return ok;
}

static uint16_t
classes_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
		struct shp_ctx *ctx)
{
	return classes_split(q, pkts, NULL, n, ctx);
}

static uint16_t
classes_enqueue_rx(struct shp_qdisc *q, struct rte_mbuf **pkts,
		   uint8_t *band, uint32_t used, uint64_t bytes, uint16_t n,
		   struct shp_ctx *ctx)
{
	RTE_SET_USED(used);
	RTE_SET_USED(bytes);
	return classes_split(q, pkts, band, n, ctx);
}

/* What a class handed out: its counters (the port's own queue is
 * counted by TX as the port's). */
static void
count_out(const struct member *mb, struct rte_mbuf *m, uint64_t now)
{
	uint64_t rx = shp_meta(m)->rx_ns;

	if (mb->ctr == NULL)
		return;
	mb->ctr->tx_packets++;
	mb->ctr->tx_bytes += rte_pktmbuf_pkt_len(m);
	shp_hist_record(mb->hist, now > rx ? now - rx : 0);
}

/* Top up m's staging FIFO with what its root releases now; staged
 * packets make it active. */
static void
refill(struct classes_conf *cf, struct member *m, const struct shp_ctx *ctx)
{
	struct staging *sq = m->sq;
	struct rte_mbuf *v[STAGE_N];

	while (sq->cnt < STAGE_N) {
		struct shp_ctx c = member_ctx(m, ctx);
		uint16_t want = (uint16_t)(STAGE_N - sq->cnt), r, i;

		r = m->root->ops->dequeue(m->root, v, want, &c);
		for (i = 0; i < r; i++)
			sq->m[(sq->head + sq->cnt + i) % STAGE_N] = v[i];
		sq->cnt = (uint16_t)(sq->cnt + r);
		/* a root that took in without letting out (netem pulling
		 * from its queue) says so with more */
		if (r < want && !c.more)
			break;
		if (r == 0 && c.more)
			continue;
	}
	if (sq->cnt > 0)
		act_push(cf, m);
}

/* Refill the busy members; one whose chain turns out to hold nothing
 * leaves the list until its next packet (hand_to). */
static void
refill_all(struct shp_qdisc *q, struct classes_conf *cf,
	   const struct shp_ctx *ctx)
{
	struct member m;
	unsigned int j = 0;
	uint64_t delayed = 0;

	while (j < cf->nb_busy) {
		struct shp_ctx c;

		m = member(q, cf, cf->busy[j]);
		refill(cf, &m, ctx);
		c = member_ctx(&m, ctx);
		if (m.sq->cnt < STAGE_N &&
		    shp_qdisc_next_time(m.root, &c) == UINT64_MAX) {
			m.sq->in_busy = false;
			cf->busy[j] = cf->busy[--cf->nb_busy];
			continue;
		}
		delayed += shp_stats_delayed(m.ctr);
		j++;
	}
	priv(q)->delayed = delayed;
	m = member(q, cf, DEF_MEMBER);
	refill(cf, &m, ctx);
}

void
shp_cls_lists_build(struct shp_qdisc *q, struct classes_conf *c)
{
	struct classes_priv *p = priv(q);
	struct member m;
	unsigned int i;

	p->seen = c->id;
	c->nb_busy = 0;
	for (i = 0; i < NB_LEVELS; i++)
		c->act[i].head = c->act[i].cnt = 0;
	for (i = 0; i <= c->nb; i++) {
		m = member(q, c, i < c->nb ? (uint16_t)i : DEF_MEMBER);
		m.sq->in_act = false;
		m.sq->in_turn = false;
		m.sq->deficit = 0;
		if (m.sq->cnt > 0)
			act_push(c, &m);
		if (i < c->nb) {
			m.sq->in_busy = false;
			busy_push(c, (uint16_t)i);
		}
	}
}


/* One level's DRR over the staged packets: up to room into out. */
static uint16_t
drr_level(struct shp_qdisc *q, struct classes_conf *cf, unsigned int lvl,
	  struct rte_mbuf **out, uint16_t room, struct shp_ctx *ctx)
{
	struct act_ring *a = &cf->act[lvl];
	uint16_t got = 0;

	/* the active ring ends the level; a member whose head does not fit
	 * its deficit gets a quantum each turn until it does */
	while (got < room && a->cnt > 0) {
		struct member m = member(q, cf, a->v[a->head]);
		struct staging *sq = m.sq;

		if (!sq->in_turn) {
			sq->deficit += m.quantum;
			sq->in_turn = true;
		}
		while (sq->cnt > 0 && got < room &&
		       rte_pktmbuf_pkt_len(sq_head(sq)) <= sq->deficit) {
			struct rte_mbuf *pkt = sq_head(sq);

			sq_pop(sq);
			sq->deficit -= rte_pktmbuf_pkt_len(pkt);
			count_out(&m, pkt, ctx->now);
			out[got++] = pkt;
			if (sq->cnt == 0)
				refill(cf, &m, ctx);
		}
		sq->in_turn = sq->cnt > 0 && got == room &&
			      rte_pktmbuf_pkt_len(sq_head(sq)) <= sq->deficit;
		if (sq->in_turn)
			break;   /* its turn goes on at the next call */
		a->head = (a->head + 1) % a->size;
		a->cnt--;
		if (sq->cnt == 0) {
			/* nothing due: leaves the ring, its deficit not kept */
			sq->deficit = 0;
			sq->in_act = false;
		} else {
			a->v[(a->head + a->cnt++) % a->size] = m.idx;
		}
	}
	return got;
}

static uint16_t
drr(struct shp_qdisc *q, struct rte_mbuf **out, uint16_t room,
    struct shp_ctx *ctx)
{
	struct classes_conf *cf = conf_load(q);
	uint16_t got = 0;
	unsigned int lvl;

	refill_all(q, cf, ctx);
	for (lvl = 0; lvl < NB_LEVELS && got < room; lvl++)
		if (cf->act[lvl].cnt > 0)
			got += drr_level(q, cf, lvl, out + got,
					 (uint16_t)(room - got), ctx);
	if (got == room)
		ctx->more = true;
	return got;
}

static uint16_t
classes_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
		struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	uint16_t got = 0;

	if (n == 0)
		return 0;
	if (p->stash != NULL) {
		pkts[got++] = p->stash;
		p->stash = NULL;
	}
	got += drr(q, pkts + got, (uint16_t)(n - got), ctx);
	ctx->bytes = UINT64_MAX;
	return got;
}

static struct rte_mbuf *
classes_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	struct rte_mbuf *m;

	if (p->stash == NULL && drr(q, &m, 1, ctx) == 1)
		p->stash = m;
	return p->stash;
}

static uint64_t
classes_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	struct classes_conf *cf = conf_load(q);
	uint64_t t, u;
	unsigned int i;

	if (p->stash != NULL)
		return ctx->now;
	for (i = 0; i < NB_LEVELS; i++)
		if (cf->act[i].cnt > 0)
			return ctx->now;   /* staged */
	/* a member neither staged nor busy holds nothing */
	t = shp_qdisc_next_time(q->child, ctx);
	for (i = 0; i < cf->nb_busy; i++) {
		struct member m = member(q, cf, cf->busy[i]);
		struct shp_ctx c = member_ctx(&m, ctx);

		u = shp_qdisc_next_time(m.root, &c);
		if (u < t)
			t = u;
	}
	return t;
}
void
shp_cls_sq_flush(struct staging *sq, struct shp_ctx *ctx)
{
	while (sq->cnt > 0) {
		shp_drop(ctx, SHP_DROP_FLUSHED, sq_head(sq));
		sq_pop(sq);
	}
	sq->deficit = 0;
	sq->in_turn = false;
}

void
shp_cls_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	const struct classes_conf *cf = conf_load(q);
	unsigned int i;

	p->seen = 0;   /* the lists are rebuilt, empty, at the next call */
	if (p->stash != NULL) {
		shp_drop(ctx, SHP_DROP_FLUSHED, p->stash);
		p->stash = NULL;
	}
	for (i = 0; i < cf->nb; i++) {
		struct member m = member(q, cf, (uint16_t)i);
		struct shp_ctx c = member_ctx(&m, ctx);

		shp_cls_sq_flush(m.sq, &c);
		shp_qdisc_reset_all(m.root, &c);
	}
	shp_cls_sq_flush(&p->def_sq, ctx);
}

static void
classes_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	const struct classes_priv *p = priv(q);
	const struct classes_conf *cf =
		__atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
	unsigned int i;

	st->qlen = (p->stash != NULL) + p->def_sq.cnt;
	st->backlog = 0;
	for (i = 0; i < cf->nb; i++)
		st->qlen += cf->cls[i]->sq.cnt +
			    shp_qdisc_qlen_total(cf->cls[i]->chain.root);
}

static uint64_t
classes_delayed(const struct shp_qdisc *q)
{
	return priv(q)->delayed;
}

void
shp_cls_apply_limit(struct shp_qdisc *q, const struct classes_conf *c)
{
	uint64_t limit = priv(q)->limit;
	unsigned int i;

	shp_qdisc_set_limit(q->child, limit);
	for (i = 0; i < c->nb; i++) {
		const struct shp_chain *ch = &c->cls[i]->chain;

		if (ch->conf[SHP_SLOT_RATE] == NULL)
			shp_qdisc_set_limit(ch->queue, limit);
	}
}

/* The port's tbf (our parent) sets its limit, as Linux's tbf its fifo's:
 * tc's tbf limit bounds the bytes waiting for its tokens, and below it
 * they wait in the port's queue and the class queues. */
static void
classes_set_limit(struct shp_qdisc *q, uint64_t bytes)
{
	priv(q)->limit = bytes;
	shp_cls_apply_limit(q, __atomic_load_n(&priv(q)->conf,
					       __ATOMIC_ACQUIRE));
}

const struct shp_qdisc_ops shp_cls_ops = {
	.id = "classes",
	.priv_size = sizeof(struct classes_priv),
	.enqueue = classes_enqueue,
	.enqueue_rx = classes_enqueue_rx,
	.dequeue = classes_dequeue,
	.peek = classes_peek,
	.next_time = classes_next_time,
	.reset = shp_cls_reset,
	.set_limit = classes_set_limit,
	.delayed = classes_delayed,
	.stats = classes_stats,
};
