/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The classes stage (shp_classes.h): enqueue classifies the burst into
 * the class chains, dequeue serves their roots by strict priority, then
 * deficit round robin within a priority.
 *
 * DRR with an overdraft: a class's turn starts by adding its quantum to
 * its deficit when the deficit is not positive, and lasts while it is
 * positive and the class has packets due; the bytes of what it sent are
 * taken off, so the last packet of a turn may take it below zero and the
 * class then waits for as many rounds as it overdrew (shares in bytes
 * are the quanta's over time, as Linux's sch_drr). A class with nothing
 * due ends its turn at once and its deficit is not kept (as DRR forgets
 * the deficit of a class that empties): nothing due never blocks another.
 *
 * The unmatched traffic's queue (the port's own) is one more DRR member
 * at priority 0 with the default quantum.
 *
 * A parent's peek (tbf) makes the scheduler choose its next packet: it is
 * kept in a one-packet stash and dequeue returns it first (Linux's
 * qdisc_peek_dequeued).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <rte_malloc.h>

#include "shp_classes.h"
#include "shp_meta.h"

#define DEF_MEMBER SHP_MAX_CLASSES   /* the port's own queue */
#define NO_MEMBER  0xff
#define MTU_GUESS  1514              /* packets asked for per turn */

struct member {
	struct shp_qdisc *root;      /* what the scheduler dequeues */
	struct shp_port_ctr *ctr;    /* NULL: the caller's (the port's) */
	int64_t deficit;
	uint32_t quantum;
	uint8_t prio;
};

struct cls {
	struct shp_chain chain;
	struct shp_lcore_ctr *blk;   /* blk->port[port] is the class's */
	struct shp_stage_env env;
	char name[SHP_MATCH_NAME_LEN];
	char ring[32];
};

struct classes_priv {
	struct shp_match_table *table;
	unsigned int nb;                     /* classes on this port */
	uint8_t map[SHP_MAX_CLASSES];        /* match index -> class, or
					      * NO_MEMBER (not on this port) */
	uint32_t nb_match;                   /* classes the table knows */
	struct cls *cls[SHP_MAX_CLASSES];
	struct member mem[SHP_MAX_CLASSES + 1];
	/* members by priority level, and whose turn it is */
	uint8_t level[SHP_CLASS_MAX_PRIO + 1][SHP_MAX_CLASSES + 1];
	uint8_t level_nb[SHP_CLASS_MAX_PRIO + 1];
	uint8_t rr[SHP_CLASS_MAX_PRIO + 1];
	struct rte_mbuf *stash;
};

/* The classes stage of each port, for the statistics (NULL: none). */
static struct shp_qdisc *port_stage[SHP_MAX_PORTS];

static inline struct classes_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

static inline struct shp_ctx
member_ctx(const struct member *m, const struct shp_ctx *ctx)
{
	struct shp_ctx c = *ctx;

	if (m->ctr != NULL)
		c.ctr = m->ctr;
	c.bytes = UINT64_MAX;
	c.more = false;
	return c;
}

/* Hand v[0..k) (bands vb, used, bytes) to member i's queue. */
static uint16_t
hand_to(struct shp_qdisc *q, unsigned int i, struct rte_mbuf **v,
	uint8_t *vb, uint32_t used, uint64_t bytes, uint16_t k,
	struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	struct shp_qdisc *dst;
	struct shp_ctx c = *ctx;

	if (i == DEF_MEMBER) {
		dst = q->child;
	} else {
		struct shp_port_ctr *ctr = p->mem[i].ctr;

		dst = p->cls[i]->chain.queue;
		ctr->egress_in += k;
		ctr->rx_packets += k;
		ctr->rx_bytes += bytes;
		c.ctr = ctr;
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
	struct classes_priv *p = priv(q);
	uint16_t cls[n ? n : 1], i, j, k, ok = 0;
	uint8_t who[n ? n : 1], vb[n ? n : 1];
	struct rte_mbuf *v[n ? n : 1];

	if (n == 0)
		return 0;
	shp_match_lookup_burst(p->table, pkts, n, cls);
	for (i = 0; i < n; i++) {
		uint8_t m = cls[i] < p->nb_match ? p->map[cls[i]] : NO_MEMBER;

		who[i] = m == NO_MEMBER ? DEF_MEMBER : m;
	}
	for (i = 0; i < n; i++) {
		uint8_t t = who[i];
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
		ok += hand_to(q, t, v, band != NULL ? vb : NULL, used, bytes,
			      k, ctx);
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

/* What class member m handed out: its counters (the port's own queue is
 * counted by TX as the port's). */
static void
count_out(struct member *m, struct rte_mbuf **pkts, uint16_t k,
	  uint64_t bytes, uint64_t now)
{
	struct shp_port_ctr *c = m->ctr;
	uint16_t i;

	if (c == NULL)
		return;
	c->tx_packets += k;
	c->tx_bytes += bytes;
	for (i = 0; i < k; i++) {
		uint64_t rx = shp_meta(pkts[i])->rx_ns;
		uint64_t s = now > rx ? now - rx : 0;

		c->sojourn_sum_ns += s;
		if (s < c->sojourn_min_ns)
			c->sojourn_min_ns = s;
		if (s > c->sojourn_max_ns)
			c->sojourn_max_ns = s;
	}
}

/* One level's DRR: up to room packets into out. */
static uint16_t
drr_level(struct classes_priv *p, unsigned int lvl, struct rte_mbuf **out,
	  uint16_t room, struct shp_ctx *ctx)
{
	unsigned int nb = p->level_nb[lvl], idle = 0, skips = 0;
	uint16_t got = 0;

	while (got < room && idle < nb) {
		struct member *m = &p->mem[p->level[lvl][p->rr[lvl]]];
		struct shp_ctx c;
		uint64_t bytes = 0;
		uint16_t want, r, i;

		if (m->deficit <= 0) {
			m->deficit += m->quantum;
			if (m->deficit <= 0) {
				/* still paying off an overdraft: its turn is
				 * over; a full pass of those is no reason to
				 * stop while others may have due packets */
				p->rr[lvl] = (uint8_t)((p->rr[lvl] + 1) % nb);
				if (++skips > 64u * nb)
					break;
				continue;
			}
		}
		want = (uint16_t)RTE_MIN((uint64_t)(room - got),
					 1 + (uint64_t)m->deficit / MTU_GUESS);
		c = member_ctx(m, ctx);
		r = m->root->ops->dequeue(m->root, out + got, want, &c);
		if (r > 0) {
			if (c.bytes != UINT64_MAX)
				bytes = c.bytes;
			else
				for (i = 0; i < r; i++)
					bytes += rte_pktmbuf_pkt_len(out[got + i]);
			count_out(m, out + got, r, bytes, ctx->now);
			m->deficit -= (int64_t)bytes;
			got += r;
			idle = 0;
		}
		if (r == want && m->deficit > 0 && got < room)
			continue;   /* its turn goes on */
		if (r < want && m->deficit > 0)
			m->deficit = 0;   /* nothing more due: not kept */
		if (r == 0)
			idle++;
		if (got == room && m->deficit > 0)
			break;      /* the turn goes on at the next call */
		p->rr[lvl] = (uint8_t)((p->rr[lvl] + 1) % nb);
	}
	return got;
}

static uint16_t
drr(struct classes_priv *p, struct rte_mbuf **out, uint16_t room,
    struct shp_ctx *ctx)
{
	uint16_t got = 0;
	unsigned int lvl;

	for (lvl = 0; lvl <= SHP_CLASS_MAX_PRIO && got < room; lvl++)
		if (p->level_nb[lvl] > 0)
			got += drr_level(p, lvl, out + got,
					 (uint16_t)(room - got), ctx);
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
	got += drr(p, pkts + got, (uint16_t)(n - got), ctx);
	ctx->bytes = UINT64_MAX;
	return got;
}

static struct rte_mbuf *
classes_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	struct rte_mbuf *m;

	if (p->stash == NULL && drr(p, &m, 1, ctx) == 1)
		p->stash = m;
	return p->stash;
}

static uint64_t
classes_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	uint64_t t = UINT64_MAX, u;
	unsigned int i;

	if (p->stash != NULL)
		return ctx->now;
	for (i = 0; i <= p->nb; i++) {
		struct member *m = &p->mem[i == p->nb ? DEF_MEMBER : i];
		struct shp_ctx c = member_ctx(m, ctx);

		u = shp_qdisc_next_time(m->root, &c);
		if (u < t)
			t = u;
	}
	return t;
}

static void
classes_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	unsigned int i;

	if (p->stash != NULL) {
		shp_drop(ctx, SHP_DROP_FLUSHED, p->stash);
		p->stash = NULL;
	}
	for (i = 0; i < p->nb; i++) {
		struct shp_ctx c = member_ctx(&p->mem[i], ctx);

		shp_qdisc_reset_all(p->mem[i].root, &c);
	}
}

static void
classes_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	const struct classes_priv *p = priv(q);
	unsigned int i;

	st->qlen = p->stash != NULL;
	st->backlog = 0;
	for (i = 0; i < p->nb; i++)
		st->qlen += shp_qdisc_qlen_total(p->mem[i].root);
}

static const struct shp_qdisc_ops classes_ops = {
	.id = "classes",
	.priv_size = sizeof(struct classes_priv),
	.enqueue = classes_enqueue,
	.enqueue_rx = classes_enqueue_rx,
	.dequeue = classes_dequeue,
	.peek = classes_peek,
	.next_time = classes_next_time,
	.reset = classes_reset,
	.stats = classes_stats,
};

static void
cls_free(struct cls *k, struct shp_ctx *ctx)
{
	if (k == NULL)
		return;
	if (k->chain.root != NULL) {
		struct shp_ctx c = *ctx;

		c.ctr = &k->blk->port[k->chain.stage[0]->port];
		shp_chain_destroy(&k->chain, &c);
	}
	rte_free(k->blk);
	rte_free(k);
}

static void
classes_free(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	unsigned int i;

	for (i = 0; i < p->nb; i++)
		cls_free(p->cls[i], ctx);
	shp_match_table_free(p->table);
	shp_qdisc_destroy(q);
}

int
shp_classes_attach(struct shp_chain *c, const struct shp_class_set *s,
		   struct rte_mempool *pool, uint16_t port,
		   const struct shp_kind_env *kenv, char *err)
{
	struct shp_port_ctr scratch;
	struct shp_ctx ctx = { .ctr = &scratch };
	struct shp_qdisc *q, *rate = c->stage[SHP_SLOT_RATE];
	struct classes_priv *p;
	uint32_t i;

	if (s == NULL || s->nb == 0 || port >= SHP_MAX_PORTS)
		return 0;
	for (i = 0; i < s->nb; i++)
		if (s->def[i].ports == 0 || (s->def[i].ports & (1u << port)))
			break;
	if (i == s->nb)
		return 0;
	memset(&scratch, 0, sizeof(scratch));
	q = shp_qdisc_create_env(&classes_ops, c->stage[SHP_SLOT_QUEUE], pool,
				 port, &c->env, NULL);
	if (q == NULL) {
		snprintf(err, SHP_ERR_LEN, "port %u: classes: out of memory",
			 port);
		return -1;
	}
	p = priv(q);
	memset(p->map, NO_MEMBER, sizeof(p->map));
	p->table = shp_match_table_create(s->match, c->env.socket, err);
	if (p->table == NULL)
		goto fail;
	p->nb_match = shp_match_set_classes(s->match);
	for (i = 0; i < p->nb_match; i++) {
		const char *name = shp_match_set_name(s->match, i);
		const struct shp_class_def *d = shp_class_find(s, name);
		struct shp_chain_spec spec;
		struct cls *k;
		struct member *m;

		if (d == NULL || (d->ports != 0 && !(d->ports & (1u << port))))
			continue;
		k = rte_zmalloc_socket("shp_class", sizeof(*k), 0,
				       c->env.socket);
		if (k == NULL)
			goto nomem;
		p->cls[p->nb] = k;
		k->blk = rte_zmalloc_socket("shp_class_ctr", sizeof(*k->blk),
					    RTE_CACHE_LINE_SIZE, c->env.socket);
		if (k->blk == NULL)
			goto nomem;
		shp_stats_init(k->blk, 1);
		snprintf(k->name, sizeof(k->name), "%s", d->name);
		snprintf(k->ring, sizeof(k->ring), "p%uc%u", port, p->nb);
		/* its own rings' names, one producer (this stage), its own
		 * counter block for what sums producer-side counters */
		k->env = c->env;
		k->env.name = k->ring;
		k->env.single_producer = true;
		k->env.ctr_blocks = k->blk;
		k->env.nb_ctr_blocks = 1;
		if (shp_class_spec(d, kenv, &spec, err) < 0)
			goto fail;
		if (shp_chain_build(&k->chain, &spec, pool, port, &k->env, NULL,
				    kenv) < 0) {
			snprintf(err, SHP_ERR_LEN, "class %s: cannot create "
				 "its stages: %s", d->name, strerror(errno));
			goto fail;
		}
		m = &p->mem[p->nb];
		m->root = k->chain.root;
		m->ctr = &k->blk->port[port];
		m->quantum = d->quantum;
		m->prio = (uint8_t)d->prio;
		p->map[i] = (uint8_t)p->nb;
		p->level[m->prio][p->level_nb[m->prio]++] = (uint8_t)p->nb;
		p->nb++;
	}
	p->mem[DEF_MEMBER] = (struct member){
		.root = c->stage[SHP_SLOT_QUEUE],
		.quantum = SHP_CLASS_DEFAULT_QUANTUM,
	};
	p->level[0][p->level_nb[0]++] = DEF_MEMBER;
	if (c->inbox == NULL) {
		char name[RTE_RING_NAMESIZE];

		snprintf(name, sizeof(name), "%s_cinbox", c->name);
		c->inbox = rte_ring_create(name, rte_align32pow2(
						   c->env.ring_size + 1),
					   c->env.socket, RING_F_SC_DEQ);
		if (c->inbox == NULL)
			goto nomem;
	}
	rate->child = q;
	c->queue = q;
	port_stage[port] = q;
	return 0;
nomem:
	snprintf(err, SHP_ERR_LEN, "port %u: classes: out of memory", port);
fail:
	classes_free(q, &ctx);
	return -1;
}

void
shp_classes_detach(struct shp_chain *c, struct shp_ctx *ctx)
{
	struct shp_qdisc *q = c->queue;

	if (q == NULL || q->ops != &classes_ops)
		return;
	classes_reset(q, ctx);
	c->stage[SHP_SLOT_RATE]->child = q->child;
	c->queue = q->child;
	if (port_stage[q->port] == q)
		port_stage[q->port] = NULL;
	classes_free(q, ctx);
}

unsigned int
shp_classes_nb(uint16_t port)
{
	return port < SHP_MAX_PORTS && port_stage[port] != NULL ?
	       priv(port_stage[port])->nb : 0;
}

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

void
shp_classes_sum(uint16_t port, unsigned int i, struct shp_class_sum *s)
{
	const struct classes_priv *p = priv(port_stage[port]);
	const struct shp_port_ctr *c = p->mem[i].ctr;
	unsigned int d, b;
	uint64_t out;

	memset(s, 0, sizeof(*s));
	s->name = p->cls[i]->name;
	s->in_packets = LD(c->rx_packets);
	s->in_bytes = LD(c->rx_bytes);
	s->out_packets = out = LD(c->tx_packets);
	s->out_bytes = LD(c->tx_bytes);
	for (d = 0; d < SHP_DROP_SLOTS; d++) {
		s->drops[d] = LD(c->drops[d]);
		s->dropped += s->drops[d];
	}
	for (d = 0; d < SHP_XSTAT_SLOTS; d++)
		s->xstats[d] = LD(c->xstats[d]);
	for (d = 0; d < shp_xstat_nb(); d++)
		if (shp_xstat_desc(d)->flags & SHP_XS_QLEN)
			s->queued += s->xstats[d];
	for (b = 0; b < SHP_MAX_BANDS; b++) {
		const struct shp_band_ctr *bc = &c->band[b];
		uint64_t gone = LD(bc->dequeued) + LD(bc->pushed_out) +
				LD(bc->flushed), in = LD(bc->enqueued);

		s->queued += in > gone ? in - gone : 0;
	}
	s->sojourn_min_ns = out ? LD(c->sojourn_min_ns) : 0;
	s->sojourn_avg_ns = out ? LD(c->sojourn_sum_ns) / out : 0;
	s->sojourn_max_ns = LD(c->sojourn_max_ns);
}

void
shp_classes_add_port(uint16_t port, struct shp_port_ctr *s)
{
	const struct classes_priv *p;
	unsigned int i, d, b;

	if (port >= SHP_MAX_PORTS || port_stage[port] == NULL)
		return;
	p = priv(port_stage[port]);
	/* the stash left its class and is not yet the port's */
	s->tx_pending += LD(p->stash) != NULL;
	for (i = 0; i < p->nb; i++) {
		const struct shp_port_ctr *c = p->mem[i].ctr;

		for (d = 0; d < SHP_DROP_SLOTS; d++)
			s->drops[d] += LD(c->drops[d]);
		for (d = 0; d < SHP_XSTAT_SLOTS; d++)
			s->xstats[d] += LD(c->xstats[d]);
		for (b = 0; b < SHP_MAX_BANDS; b++) {
			const struct shp_band_ctr *bc = &c->band[b];
			struct shp_band_ctr *bs = &s->band[b];

			bs->enqueued += LD(bc->enqueued);
			bs->enqueued_bytes += LD(bc->enqueued_bytes);
			bs->dequeued += LD(bc->dequeued);
			bs->dequeued_bytes += LD(bc->dequeued_bytes);
			bs->full += LD(bc->full);
			bs->pushed_out += LD(bc->pushed_out);
			bs->pushed_out_bytes += LD(bc->pushed_out_bytes);
			bs->flushed += LD(bc->flushed);
		}
	}
}

void
shp_classes_json(FILE *f, uint16_t port)
{
	unsigned int i, n = shp_classes_nb(port), d;

	if (n == 0)
		return;
	fprintf(f, ",\n    \"classes\": {");
	for (i = 0; i < n; i++) {
		struct shp_class_sum s;
		const struct shp_kind *k = NULL;

		shp_classes_sum(port, i, &s);
		fprintf(f, "%s\n      \"%s\": {\"packets\": %" PRIu64
			", \"bytes\": %" PRIu64 ", \"in_packets\": %" PRIu64
			", \"in_bytes\": %" PRIu64 ", \"queued\": %" PRIu64
			", \"dropped\": %" PRIu64, i ? "," : "", s.name,
			s.out_packets, s.out_bytes, s.in_packets, s.in_bytes,
			s.queued, s.dropped);
		fprintf(f, ", \"sojourn_ns\": {\"min\": %" PRIu64 ", \"avg\": %"
			PRIu64 ", \"max\": %" PRIu64 "}", s.sojourn_min_ns,
			s.sojourn_avg_ns, s.sojourn_max_ns);
		fprintf(f, ", \"drops\": {");
		for (d = 0; d < shp_drop_nb(); d++)
			fprintf(f, "%s\"%s\": %" PRIu64, d ? ", " : "",
				shp_drop_names[d], s.drops[d]);
		fprintf(f, "}, \"xstats\": {");
		for (d = 0; d < shp_xstat_nb(); d++) {
			if (shp_xstat_kind(d) != k) {
				fprintf(f, "%s\"%s\": {", k ? "}, " : "",
					shp_xstat_kind(d)->name);
				k = shp_xstat_kind(d);
			} else {
				fprintf(f, ", ");
			}
			fprintf(f, "\"%s\": %" PRIu64, shp_xstat_desc(d)->name,
				s.xstats[d]);
		}
		fprintf(f, "%s}}", k ? "}" : "");
	}
	fprintf(f, "}");
}
