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
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <rte_malloc.h>

#include "shp_classes.h"
#include "shp_meta.h"

#define DEF_MEMBER 0xfe              /* the port's own queue */
#define NO_MEMBER  0xff
#define MAX_MEMBERS (2 * SHP_MAX_CLASSES)  /* live and retiring */
#define STAGE_N    64                /* a member's staging FIFO */
#define NB_LEVELS  (SHP_CLASS_MAX_PRIO + 1)

/* What a member's root released, not yet served (data path only). */
struct staging {
	struct rte_mbuf *m[STAGE_N];
	uint16_t head, cnt;
	int64_t deficit;
	bool in_turn;
};

/* One class on one port: its chain and counters. Outlives the confs that
 * name it: a change keeps the classes it keeps (and what they hold). */
struct cls {
	struct shp_chain chain;
	struct shp_lcore_ctr *blk;   /* blk->port[port] is the class's */
	struct shp_port_ctr *ctr;
	struct shp_stage_env env;
	struct staging sq;
	struct shp_hist sojourn;     /* arrival to leaving the class */
	uint16_t port;
	bool retiring;               /* cleared: served until empty */
	char name[SHP_MATCH_NAME_LEN];
	char ring[32];
};

/* What the data path runs: immutable once published (RCU). */
struct classes_conf {
	uint64_t id;
	struct shp_match_table *table;
	uint32_t nb_match;
	uint8_t map[SHP_MAX_CLASSES];        /* match index -> member, or
					      * NO_MEMBER (not on this port) */
	unsigned int nb;                     /* members but the default */
	struct cls *cls[MAX_MEMBERS];
	uint32_t quantum[MAX_MEMBERS];
	uint8_t prio[MAX_MEMBERS];
	/* members by priority level */
	uint8_t level[NB_LEVELS][MAX_MEMBERS + 1];
	uint8_t level_nb[NB_LEVELS];
};

struct classes_priv {
	const struct classes_conf *conf;
	uint64_t seen;                       /* conf id rr belongs to */
	uint8_t rr[NB_LEVELS];               /* whose turn, by level */
	struct staging def_sq;               /* the port's own queue's */
	struct rte_mbuf *stash;
};

/* The classes stage of each port, for the statistics (NULL: none), and
 * a lock for their readers against a change (never on the data path). */
static struct shp_qdisc *port_stage[SHP_MAX_PORTS];
static pthread_mutex_t classes_lock = PTHREAD_MUTEX_INITIALIZER;

static inline struct classes_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

/* A member's view: root, counters (NULL: the caller's), staging, its
 * sojourn histogram (NULL: the port's own queue: TX records it). */
struct member {
	struct shp_qdisc *root;
	struct shp_port_ctr *ctr;
	struct staging *sq;
	uint32_t quantum;
	struct shp_hist *hist;
};

static inline struct member
member(struct shp_qdisc *q, const struct classes_conf *c, uint8_t i)
{
	struct classes_priv *p = priv(q);

	if (i == DEF_MEMBER)
		return (struct member){ q->child, NULL, &p->def_sq,
					SHP_CLASS_DEFAULT_QUANTUM, NULL };
	return (struct member){ c->cls[i]->chain.root, c->cls[i]->ctr,
				&c->cls[i]->sq, c->quantum[i],
				&c->cls[i]->sojourn };
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

static inline const struct classes_conf *
conf_load(struct shp_qdisc *q)
{
	struct classes_priv *p = priv(q);
	const struct classes_conf *c =
		__atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);

	if (unlikely(c->id != p->seen)) {
		/* members moved: turns start again at each level's first */
		p->seen = c->id;
		memset(p->rr, 0, sizeof(p->rr));
	}
	return c;
}

/* Hand v[0..k) (bands vb, used, bytes) to member i's queue. */
static uint16_t
hand_to(struct shp_qdisc *q, const struct classes_conf *cf, uint8_t i,
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
	const struct classes_conf *cf;
	uint16_t cls[n ? n : 1], i, j, k, ok = 0;
	uint8_t who[n ? n : 1], vb[n ? n : 1];
	struct rte_mbuf *v[n ? n : 1];

	if (n == 0)
		return 0;
	cf = conf_load(q);
	if (cf->table != NULL) {
		shp_match_lookup_burst(cf->table, pkts, n, cls);
		for (i = 0; i < n; i++) {
			uint8_t m = cls[i] < cf->nb_match ? cf->map[cls[i]] :
				    NO_MEMBER;

			who[i] = m == NO_MEMBER ? DEF_MEMBER : m;
		}
	} else {
		memset(who, DEF_MEMBER, n);
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

/* Top up m's staging FIFO with what its root releases now. */
static void
refill(struct member *m, const struct shp_ctx *ctx)
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
}

static void
refill_all(struct shp_qdisc *q, const struct classes_conf *cf,
	   const struct shp_ctx *ctx)
{
	struct member m;
	unsigned int i;

	for (i = 0; i < cf->nb; i++) {
		m = member(q, cf, (uint8_t)i);
		refill(&m, ctx);
	}
	m = member(q, cf, DEF_MEMBER);
	refill(&m, ctx);
}

static inline struct rte_mbuf *
sq_head(const struct staging *sq)
{
	return sq->m[sq->head];
}

static inline void
sq_pop(struct staging *sq)
{
	sq->head = (uint16_t)((sq->head + 1) % STAGE_N);
	sq->cnt--;
}

/* One level's DRR over the staged packets: up to room into out. */
static uint16_t
drr_level(struct shp_qdisc *q, const struct classes_conf *cf,
	  unsigned int lvl, struct rte_mbuf **out, uint16_t room,
	  struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	unsigned int nb = cf->level_nb[lvl], empty = 0;
	uint16_t got = 0;

	/* a pass of empty FIFOs ends the level; a member whose head does
	 * not fit its deficit gets a quantum each turn until it does */
	while (got < room && empty < nb) {
		struct member m = member(q, cf, cf->level[lvl][p->rr[lvl]]);
		struct staging *sq = m.sq;

		if (sq->cnt == 0) {
			sq->deficit = 0;
			sq->in_turn = false;
			empty++;
			p->rr[lvl] = (uint8_t)((p->rr[lvl] + 1) % nb);
			continue;
		}
		empty = 0;
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
				refill(&m, ctx);
		}
		if (got == room && sq->cnt > 0 &&
		    rte_pktmbuf_pkt_len(sq_head(sq)) <= sq->deficit)
			break;   /* its turn goes on at the next call */
		if (sq->cnt == 0)
			sq->deficit = 0;   /* nothing due: not kept */
		sq->in_turn = false;
		p->rr[lvl] = (uint8_t)((p->rr[lvl] + 1) % nb);
	}
	return got;
}

static uint16_t
drr(struct shp_qdisc *q, struct rte_mbuf **out, uint16_t room,
    struct shp_ctx *ctx)
{
	const struct classes_conf *cf = conf_load(q);
	uint16_t got = 0;
	unsigned int lvl;

	refill_all(q, cf, ctx);
	for (lvl = 0; lvl < NB_LEVELS && got < room; lvl++)
		if (cf->level_nb[lvl] > 0)
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
	const struct classes_conf *cf = conf_load(q);
	uint64_t t, u;
	unsigned int i;

	if (p->stash != NULL || p->def_sq.cnt > 0)
		return ctx->now;
	t = shp_qdisc_next_time(q->child, ctx);
	for (i = 0; i < cf->nb; i++) {
		struct member m = member(q, cf, (uint8_t)i);
		struct shp_ctx c = member_ctx(&m, ctx);

		if (m.sq->cnt > 0)
			return ctx->now;
		u = shp_qdisc_next_time(m.root, &c);
		if (u < t)
			t = u;
	}
	return t;
}

static void
sq_flush(struct staging *sq, struct shp_ctx *ctx)
{
	while (sq->cnt > 0) {
		shp_drop(ctx, SHP_DROP_FLUSHED, sq_head(sq));
		sq_pop(sq);
	}
	sq->deficit = 0;
	sq->in_turn = false;
}

static void
classes_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct classes_priv *p = priv(q);
	const struct classes_conf *cf = conf_load(q);
	unsigned int i;

	if (p->stash != NULL) {
		shp_drop(ctx, SHP_DROP_FLUSHED, p->stash);
		p->stash = NULL;
	}
	for (i = 0; i < cf->nb; i++) {
		struct member m = member(q, cf, (uint8_t)i);
		struct shp_ctx c = member_ctx(&m, ctx);

		sq_flush(m.sq, &c);
		shp_qdisc_reset_all(m.root, &c);
	}
	sq_flush(&p->def_sq, ctx);
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

/* ------------------------------------------------ building and changes */

/* What the classes freed so far counted (drops, statistics, bands), by
 * port: the port's sums keep them (shp_classes_add_port). */
static struct shp_port_ctr retired[SHP_MAX_PORTS];

static void sq_flush(struct staging *sq, struct shp_ctx *ctx);

/* Free a class no data path sees any more; what it still holds is
 * flushed, what it counted stays in the port's sums. */
static void
cls_free(struct cls *k, struct shp_ctx *ctx)
{
	struct shp_port_ctr *r;

	if (k == NULL)
		return;
	if (k->chain.root != NULL) {
		struct shp_ctx c = *ctx;

		c.ctr = k->ctr;
		sq_flush(&k->sq, &c);
		shp_chain_destroy(&k->chain, &c);
	}
	if (k->ctr != NULL && k->port < SHP_MAX_PORTS) {
		pthread_mutex_lock(&classes_lock);
		r = &retired[k->port];
		shp_port_ctr_add_stages(r, k->ctr, SHP_MAX_BANDS, false);
		pthread_mutex_unlock(&classes_lock);
	}
	rte_free(k->blk);
	rte_free(k);
}

static struct cls *
cls_new(const struct shp_class_def *d, const struct shp_chain *port_chain,
	struct rte_mempool *pool, uint16_t port,
	const struct shp_kind_env *kenv, char *err)
{
	static unsigned int serial;   /* ring names never come back */
	struct shp_ctx ctx = { 0 };
	struct shp_chain_spec spec;
	int socket = port_chain->env.socket;
	struct cls *k;

	k = rte_zmalloc_socket("shp_class", sizeof(*k), 0, socket);
	if (k == NULL)
		goto nomem;
	k->blk = rte_zmalloc_socket("shp_class_ctr", sizeof(*k->blk),
				    RTE_CACHE_LINE_SIZE, socket);
	if (k->blk == NULL)
		goto nomem;
	shp_hist_init(&k->sojourn);
	k->ctr = &k->blk->port[port];
	k->port = port;
	snprintf(k->name, sizeof(k->name), "%s", d->name);
	snprintf(k->ring, sizeof(k->ring), "p%uc%u", port, serial++);
	/* its own rings' names, one producer (the classes stage), its own
	 * counter block for what sums producer-side counters */
	k->env = port_chain->env;
	k->env.name = k->ring;
	k->env.single_producer = true;
	k->env.ctr_blocks = k->blk;
	k->env.nb_ctr_blocks = 1;
	if (shp_class_spec(d, kenv, &spec, err) < 0)
		goto fail;
	if (shp_chain_build(&k->chain, &spec, pool, port, &k->env, NULL,
			    kenv) < 0) {
		snprintf(err, SHP_ERR_LEN, "class %s: cannot create its "
			 "stages: %s", d->name, strerror(errno));
		goto fail;
	}
	return k;
nomem:
	snprintf(err, SHP_ERR_LEN, "class %s: out of memory", d->name);
fail:
	ctx.ctr = k != NULL && k->blk != NULL ? k->ctr : NULL;
	if (k != NULL && ctx.ctr == NULL) {
		rte_free(k);
		return NULL;
	}
	cls_free(k, &ctx);
	return NULL;
}

/* A stage change of a kept class, to free after the grace period. */
struct stage_old {
	const struct shp_kind *kind;
	void *conf;
};

struct shp_classes_update {
	struct shp_chain *chain;
	struct shp_qdisc *q;             /* the stage (new if attached) */
	bool attach;                     /* q goes into the chain */
	struct rte_ring *inbox;          /* made for the attach */
	struct classes_conf *conf, *old;
	/* new confs for the kept classes' stages, published with conf */
	unsigned int nb_change;
	struct cls *change_cls[SHP_MAX_CLASSES * SHP_SLOT_MAX];
	const struct shp_kind *change_kind[SHP_MAX_CLASSES * SHP_SLOT_MAX];
	void *change_conf[SHP_MAX_CLASSES * SHP_SLOT_MAX];
	struct stage_old olds[SHP_MAX_CLASSES * SHP_SLOT_MAX];
	/* classes of the new conf made for it (freed on abort) */
	struct cls *made[SHP_MAX_CLASSES];
	unsigned int nb_made;
	/* classes of the old conf the new one drops (freed at finish) */
	struct cls *gone[MAX_MEMBERS];
	unsigned int nb_gone;
};

static bool
on_port(const struct shp_class_def *d, uint16_t port)
{
	return d->ports == 0 || (d->ports & (1u << port)) != 0;
}

/* Stage changes a kept class needs to run d: 0 and queued in u, or -1
 * (a different kind: a restart) with err. */
static int
plan_stages(struct shp_classes_update *u, struct cls *k,
	    const struct shp_class_def *d, const struct shp_kind_env *kenv,
	    char *err)
{
	struct shp_chain_spec spec;
	unsigned int s;

	if (shp_class_spec(d, kenv, &spec, err) < 0)
		return -1;
	for (s = 0; s < SHP_SLOT_MAX; s++) {
		const struct shp_kind *want = spec.kind[s] != NULL ?
			spec.kind[s] : shp_kind_default((enum shp_slot)s);
		char a[512], b[512];

		if (spec.conf[s] == NULL && s == SHP_SLOT_QUEUE) {
			/* the queue's defaults, owned by spec from now */
			spec.kind[s] = want;
			spec.conf[s] = want->parse("", kenv, err);
		}
		if (want != k->chain.kind[s]) {
			snprintf(err, SHP_ERR_LEN, "class %s runs %s there, "
				 "not %s: a different kind takes clear class "
				 "%s first", d->name, k->chain.kind[s]->name,
				 want->name, d->name);
			goto fail;
		}
		shp_kind_format(want, spec.conf[s], a, sizeof(a));
		shp_chain_format(&k->chain, (enum shp_slot)s, b, sizeof(b));
		if (strcmp(a, b) == 0)
			continue;   /* the same: left as it runs */
		if (want->ops->change == NULL) {
			snprintf(err, SHP_ERR_LEN, "class %s: %s cannot change "
				 "while running", d->name, want->name);
			goto fail;
		}
		u->change_cls[u->nb_change] = k;
		u->change_kind[u->nb_change] = want;
		u->change_conf[u->nb_change++] = spec.conf[s];
		spec.conf[s] = NULL;
	}
	shp_chain_spec_free(&spec);
	return 0;
fail:
	shp_chain_spec_free(&spec);
	return -1;
}

static struct classes_conf *
conf_new(void)
{
	static uint64_t ids;
	struct classes_conf *c = rte_zmalloc("shp_classes_conf", sizeof(*c),
					     0);

	if (c != NULL) {
		c->id = __atomic_add_fetch(&ids, 1, __ATOMIC_RELAXED);
		memset(c->map, NO_MEMBER, sizeof(c->map));
	}
	return c;
}

static void
conf_add(struct classes_conf *c, struct cls *k, uint32_t quantum,
	 unsigned int prio)
{
	unsigned int i = c->nb++;

	c->cls[i] = k;
	c->quantum[i] = quantum;
	c->prio[i] = (uint8_t)prio;
	c->level[prio][c->level_nb[prio]++] = (uint8_t)i;
}

void
shp_classes_abort(struct shp_classes_update *u)
{
	struct shp_ctx ctx = { 0 };
	unsigned int i;

	if (u == NULL)
		return;
	for (i = 0; i < u->nb_change; i++)
		shp_kind_conf_free(u->change_kind[i], u->change_conf[i]);
	for (i = 0; i < u->nb_made; i++) {
		ctx.ctr = u->made[i]->ctr;
		cls_free(u->made[i], &ctx);
	}
	if (u->conf != NULL)
		shp_match_table_free(u->conf->table);
	rte_free(u->conf);
	if (u->attach)
		shp_qdisc_destroy(u->q);
	rte_ring_free(u->inbox);
	free(u);
}

int
shp_classes_prepare(struct shp_chain *c, const struct shp_class_set *s,
		    struct rte_mempool *pool, uint16_t port,
		    const struct shp_kind_env *kenv,
		    struct shp_classes_update **out, char *err)
{
	struct shp_classes_update *u;
	const struct classes_conf *old = NULL;
	bool any = false, keep[MAX_MEMBERS] = { false };
	uint32_t i, j;

	*out = NULL;
	if (port >= SHP_MAX_PORTS)
		return 0;
	for (i = 0; s != NULL && i < s->nb; i++)
		any |= on_port(&s->def[i], port);
	if (c->queue != NULL && c->queue->ops == &classes_ops)
		old = priv(c->queue)->conf;
	else if (!any)
		return 0;   /* no class here, before or after */
	u = calloc(1, sizeof(*u));
	if (u == NULL)
		goto nomem;
	u->chain = c;
	u->old = (struct classes_conf *)(uintptr_t)old;
	u->conf = conf_new();
	if (u->conf == NULL)
		goto nomem;
	if (old == NULL) {
		u->attach = true;
		u->q = shp_qdisc_create_env(&classes_ops,
					    c->stage[SHP_SLOT_QUEUE], pool,
					    port, &c->env, NULL);
		if (u->q == NULL)
			goto nomem;
		if (c->inbox == NULL) {
			char name[RTE_RING_NAMESIZE];

			snprintf(name, sizeof(name), "%s_cinbox", c->name);
			u->inbox = rte_ring_create(name, rte_align32pow2(
						c->env.ring_size + 1),
						c->env.socket, RING_F_SC_DEQ);
			if (u->inbox == NULL)
				goto nomem;
		}
	} else {
		u->q = c->queue;
	}
	if (any) {
		u->conf->table = shp_match_table_create(s->match,
							c->env.socket, err);
		if (u->conf->table == NULL)
			goto fail;
		u->conf->nb_match = shp_match_set_classes(s->match);
	}
	/* the classes in the match order: kept ones by name, new ones made */
	for (i = 0; any && i < u->conf->nb_match; i++) {
		const char *name = shp_match_set_name(s->match, i);
		const struct shp_class_def *d = shp_class_find(s, name);
		struct cls *k = NULL;

		if (d == NULL || !on_port(d, port))
			continue;
		for (j = 0; old != NULL && j < old->nb; j++)
			if (!old->cls[j]->retiring &&
			    strcmp(old->cls[j]->name, name) == 0) {
				k = old->cls[j];
				keep[j] = true;
				if (plan_stages(u, k, d, kenv, err) < 0)
					goto fail;
			}
		if (k == NULL) {
			k = cls_new(d, c, pool, port, kenv, err);
			if (k == NULL)
				goto fail;
			u->made[u->nb_made++] = k;
		}
		u->conf->map[i] = (uint8_t)u->conf->nb;
		conf_add(u->conf, k, d->quantum, d->prio);
	}
	/* what the old conf had and this one drops: served (no new
	 * packets) until empty, so that nothing queued is lost */
	for (j = 0; old != NULL && j < old->nb; j++) {
		struct cls *k = old->cls[j];

		if (keep[j])
			continue;
		if (k->retiring && k->sq.cnt == 0 &&
		    shp_qdisc_qlen_total(k->chain.root) == 0) {
			u->gone[u->nb_gone++] = k;   /* drained */
			continue;
		}
		if (u->conf->nb == MAX_MEMBERS) {
			snprintf(err, SHP_ERR_LEN, "port %u: more than %d "
				 "classes still draining: retry later", port,
				 MAX_MEMBERS);
			goto fail;
		}
		conf_add(u->conf, k, old->quantum[j], old->prio[j]);
	}
	u->conf->level[0][u->conf->level_nb[0]++] = DEF_MEMBER;
	*out = u;
	return 0;
nomem:
	snprintf(err, SHP_ERR_LEN, "port %u: classes: out of memory", port);
fail:
	shp_classes_abort(u);
	return -1;
}

void
shp_classes_publish(struct shp_classes_update *u)
{
	struct shp_chain *c = u->chain;
	unsigned int i, j;

	for (i = 0; i < u->nb_change; i++) {
		char err[SHP_ERR_LEN];

		if (shp_chain_change(&u->change_cls[i]->chain,
				     u->change_kind[i], u->change_conf[i],
				     &u->olds[i].conf, err) < 0)
			rte_panic("checked by prepare: %s\n", err);
		u->olds[i].kind = u->change_kind[i];
	}
	/* the members the new conf keeps from the old that it dropped */
	for (i = 0; i < u->conf->nb; i++) {
		bool named = false;

		for (j = 0; j < u->conf->nb_match; j++)
			named |= u->conf->map[j] == i;
		u->conf->cls[i]->retiring = !named;
	}
	pthread_mutex_lock(&classes_lock);
	if (u->attach) {
		struct classes_priv *p = priv(u->q);

		p->conf = u->conf;
		if (u->inbox != NULL) {
			__atomic_store_n(&c->inbox, u->inbox, __ATOMIC_RELEASE);
			u->inbox = NULL;
		}
		__atomic_store_n(&c->stage[SHP_SLOT_RATE]->child, u->q,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&c->queue, u->q, __ATOMIC_RELEASE);
		port_stage[u->q->port] = u->q;
	} else {
		__atomic_store_n(&priv(u->q)->conf, u->conf, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&classes_lock);
}

void
shp_classes_finish(struct shp_classes_update *u)
{
	struct shp_ctx ctx = { 0 };
	unsigned int i;

	for (i = 0; i < u->nb_change; i++)
		shp_kind_conf_free(u->olds[i].kind, u->olds[i].conf);
	for (i = 0; i < u->nb_gone; i++) {
		ctx.ctr = u->gone[i]->ctr;
		cls_free(u->gone[i], &ctx);
	}
	if (u->old != NULL) {
		shp_match_table_free(u->old->table);
		rte_free(u->old);
	}
	free(u);
}

int
shp_classes_attach(struct shp_chain *c, const struct shp_class_set *s,
		   struct rte_mempool *pool, uint16_t port,
		   const struct shp_kind_env *kenv, char *err)
{
	struct shp_classes_update *u;

	if (c->queue != NULL && c->queue->ops == &classes_ops) {
		snprintf(err, SHP_ERR_LEN, "port %u: classes attached twice",
			 port);
		return -1;
	}
	if (shp_classes_prepare(c, s, pool, port, kenv, &u, err) < 0)
		return -1;
	if (u == NULL)
		return 0;
	shp_classes_publish(u);
	shp_classes_finish(u);   /* nothing ran: no grace period needed */
	return 0;
}

void
shp_classes_detach(struct shp_chain *c, struct shp_ctx *ctx)
{
	struct shp_qdisc *q = c->queue;
	const struct classes_conf *cf;
	unsigned int i;

	if (q == NULL || q->ops != &classes_ops)
		return;
	classes_reset(q, ctx);
	pthread_mutex_lock(&classes_lock);
	c->stage[SHP_SLOT_RATE]->child = q->child;
	c->queue = q->child;
	if (port_stage[q->port] == q)
		port_stage[q->port] = NULL;
	pthread_mutex_unlock(&classes_lock);
	cf = priv(q)->conf;
	for (i = 0; i < cf->nb; i++)
		cls_free(cf->cls[i], ctx);
	shp_match_table_free(cf->table);
	rte_free((void *)(uintptr_t)cf);
	shp_qdisc_destroy(q);
}

/* ------------------------------------------------------------ reading */

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static const struct classes_conf *
port_conf(uint16_t port)
{
	return port < SHP_MAX_PORTS && port_stage[port] != NULL ?
	       priv(port_stage[port])->conf : NULL;
}

unsigned int
shp_classes_nb(uint16_t port)
{
	const struct classes_conf *cf;
	unsigned int n;

	pthread_mutex_lock(&classes_lock);
	cf = port_conf(port);
	n = cf != NULL ? cf->nb : 0;
	pthread_mutex_unlock(&classes_lock);
	return n;
}

/* cls_sum's copy of a histogram (under classes_lock) */
static struct shp_hist scratch;

unsigned int
shp_classes_drained(uint16_t port)
{
	const struct classes_conf *cf;
	unsigned int i, n = 0;

	pthread_mutex_lock(&classes_lock);
	cf = port_conf(port);
	for (i = 0; cf != NULL && i < cf->nb; i++)
		n += cf->cls[i]->retiring && cf->cls[i]->sq.cnt == 0 &&
		     shp_qdisc_qlen_total(cf->cls[i]->chain.root) == 0;
	pthread_mutex_unlock(&classes_lock);
	return n;
}

static void
cls_sum(const struct cls *k, struct shp_class_sum *s)
{
	const struct shp_port_ctr *c = k->ctr;
	unsigned int d, b;
	uint64_t out;

	memset(s, 0, sizeof(*s));
	s->name = k->name;
	s->retiring = k->retiring;
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
	s->queued += LD(k->sq.cnt);
	/* a copy first: the TX lcore may be recording (relaxed loads) */
	shp_hist_init(&scratch);
	shp_hist_merge(&scratch, &k->sojourn);
	shp_hist_summarize(&scratch, &s->sojourn);
	if (s->sojourn.count == 0)
		s->sojourn.min = 0;
}

int
shp_classes_sum(uint16_t port, unsigned int i, struct shp_class_sum *s)
{
	const struct classes_conf *cf;
	int rc = -1;

	pthread_mutex_lock(&classes_lock);
	cf = port_conf(port);
	if (cf != NULL && i < cf->nb) {
		cls_sum(cf->cls[i], s);
		s->quantum = cf->quantum[i];
		s->prio = cf->prio[i];
		rc = 0;
	}
	pthread_mutex_unlock(&classes_lock);
	return rc;
}

void
shp_classes_add_port(uint16_t port, struct shp_port_ctr *s)
{
	const struct classes_conf *cf;
	unsigned int i;

	pthread_mutex_lock(&classes_lock);
	if (port < SHP_MAX_PORTS)
		shp_port_ctr_add_stages(s, &retired[port], SHP_MAX_BANDS,
					true);
	cf = port_conf(port);
	if (cf == NULL)
		goto out;
	/* the stash left its class and is not yet the port's */
	s->tx_pending += (LD(priv(port_stage[port])->stash) != NULL) +
			 LD(priv(port_stage[port])->def_sq.cnt);
	for (i = 0; i < cf->nb; i++) {
		const struct shp_port_ctr *c = cf->cls[i]->ctr;

		s->tx_pending += LD(cf->cls[i]->sq.cnt);
		shp_port_ctr_add_stages(s, c, SHP_MAX_BANDS, true);
	}
out:
	pthread_mutex_unlock(&classes_lock);
}

void
shp_classes_json(FILE *f, uint16_t port)
{
	unsigned int i, d;
	struct shp_class_sum s;

	for (i = 0; shp_classes_sum(port, i, &s) == 0; i++) {
		const struct shp_kind *k = NULL;

		fprintf(f, "%s\n      \"%s\": {\"packets\": %" PRIu64
			", \"bytes\": %" PRIu64 ", \"in_packets\": %" PRIu64
			", \"in_bytes\": %" PRIu64 ", \"queued\": %" PRIu64
			", \"dropped\": %" PRIu64 ", \"quantum\": %u"
			", \"prio\": %u%s", i ? "," : ",\n    \"classes\": {",
			s.name, s.out_packets, s.out_bytes, s.in_packets,
			s.in_bytes, s.queued, s.dropped, s.quantum, s.prio,
			s.retiring ? ", \"retiring\": true" : "");
		fprintf(f, ", \"sojourn_ns\": {\"count\": %" PRIu64 ", \"min\": %"
			PRIu64 ", \"avg\": %" PRIu64 ", \"p50\": %" PRIu64
			", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64 ", \"p99.9\": %"
			PRIu64 ", \"max\": %" PRIu64 "}", s.sojourn.count,
			s.sojourn.min, shp_class_sojourn_avg(&s), s.sojourn.p50,
			s.sojourn.p90, s.sojourn.p99, s.sojourn.p999,
			s.sojourn.max);
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
	if (i > 0)
		fprintf(f, "}");
}

unsigned int
shp_classes_show(FILE *f, uint16_t port, const char *name)
{
	const struct classes_conf *cf;
	unsigned int i, shown = 0;
	int d;

	pthread_mutex_lock(&classes_lock);
	cf = port_conf(port);
	for (i = 0; cf != NULL && i < cf->nb; i++) {
		const struct cls *k = cf->cls[i];
		const struct shp_chain *ch = &k->chain;
		struct shp_class_sum s;
		unsigned int sl;
		char buf[256];

		if (name != NULL && strcmp(name, k->name) != 0)
			continue;
		cls_sum(k, &s);
		fprintf(f, "port %u class %s: prio %u quantum %u%s\n", port,
			s.name, cf->prio[i], cf->quantum[i], k->retiring ?
			" (cleared: served until empty)" : "");
		for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
			shp_chain_format(ch, (enum shp_slot)sl, buf,
					 sizeof(buf));
			fprintf(f, "  %s: %s\n", shp_kind_key(ch->kind[sl]),
				buf);
		}
		fprintf(f, "  in %" PRIu64 " packets %" PRIu64 " bytes, out %"
			PRIu64 " packets %" PRIu64 " bytes, queued %" PRIu64
			", dropped %" PRIu64, s.in_packets, s.in_bytes,
			s.out_packets, s.out_bytes, s.queued, s.dropped);
		for (d = 0; d < (int)shp_drop_nb(); d++)
			if (s.drops[d] != 0)
				fprintf(f, " %s %" PRIu64, shp_drop_names[d],
					s.drops[d]);
		fprintf(f, "\n  delay to the port's stages (ns): min %" PRIu64
			" avg %" PRIu64 " p99 %" PRIu64 " max %" PRIu64 "\n",
			s.sojourn.min, shp_class_sojourn_avg(&s), s.sojourn.p99,
			s.sojourn.max);
		shown++;
	}
	pthread_mutex_unlock(&classes_lock);
	return shown;
}
