/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The classes stage's private structures, shared by its data path
 * (sch_classes.c), its changes (sch_classes_update.c) and its counters
 * (sch_classes_stats.c). Not for anything else: shp_classes.h is the
 * interface.
 */
#ifndef SCH_CLASSES_PRIV_H
#define SCH_CLASSES_PRIV_H

#include <pthread.h>
#include <string.h>

#include "shp_classes.h"
#include "shp_link.h"
#include "shp_meta.h"

#define DEF_MEMBER 0xfffe            /* the port's own queue */
#define NO_MEMBER  0xffff
#define MAX_MEMBERS (2 * SHP_MAX_CLASSES)  /* live and retiring */
#define STAGE_N    64                /* a member's staging FIFO */
#define NB_LEVELS  (SHP_CLASS_MAX_PRIO + 1)

/* What a member's root released, not yet served (data path only). */
struct staging {
	struct rte_mbuf *m[STAGE_N];
	uint16_t head, cnt;
	int64_t deficit;
	bool in_turn;
	bool in_act;     /* in its level's active ring (cnt > 0) */
	bool in_busy;    /* in the busy list (its chain may hold some) */
};

/* What a class's instances on the shards of one port share (issue 24):
 * its tbf's bucket, its netem's rate clock, slots... (shp_link.h), as the
 * port's stages share the port's. Made with the class's instance on shard
 * 0, named by those on the other shards made in the same change; freed
 * with the last of them (refs: control path only). */
struct cls_link {
	struct shp_link_shared l;
	unsigned int refs;
};

/* One class on one port (one shard of it): its chain and counters.
 * Outlives the confs that name it: a change keeps the classes it keeps
 * (and what they hold). */
struct cls {
	struct shp_chain chain;
	struct cls_link *link;       /* NULL: a port of one queue */
	struct shp_lcore_ctr *blk;   /* blk->port[port] is the class's (the
				      * block is cut after it) */
	struct shp_port_ctr *ctr;
	struct shp_stage_env env;
	struct staging sq;
	struct shp_hist sojourn;     /* arrival to leaving the class */
	/* `clear stats`: what the counters and the histogram were then
	 * (NULL: never cleared; allocated by the first clear) */
	struct shp_class_sum *base;
	struct shp_hist *base_hist;
	uint16_t port;
	uint16_t shard;
	bool retiring;               /* cleared: served until empty */
	char name[SHP_MATCH_NAME_LEN];
	char ring[32];
};

/* Members with staged packets at one priority level, in the order of
 * their DRR turns (Linux's sch_drr active list): the head's turn. */
struct act_ring {
	uint16_t *v;                         /* [size] member indices */
	uint32_t head, cnt, size;
};

/*
 * What the data path runs: immutable once published (RCU), but for the
 * lists at the end, which are the data path's own (the TX lcore's),
 * rebuilt when it first sees the conf. The lists keep a dequeue's work
 * to the members that hold something: thousands of idle classes cost
 * nothing per packet.
 */
struct classes_conf {
	uint64_t id;
	struct shp_match_table *table;
	uint32_t nb_match;
	uint16_t *map;                       /* [nb_match]: match index ->
					      * member, or NO_MEMBER (not on
					      * this port) */
	unsigned int nb, cap;                /* members but the default */
	struct cls **cls;                    /* [cap] */
	uint32_t *quantum;                   /* [cap] */
	uint8_t *prio;                       /* [cap] */
	/* the data path's own */
	uint16_t *busy;                      /* [cap]: chains that may hold
					      * packets (refilled) */
	unsigned int nb_busy;
	struct act_ring act[NB_LEVELS];      /* staged, by level */
};

struct classes_priv {
	const struct classes_conf *conf;
	uint64_t seen;                       /* conf id the lists are for */
	struct staging def_sq;               /* the port's own queue's */
	struct rte_mbuf *stash;
	/* packets the class chains hold for a later send time (their
	 * netems' SHP_XS_DELAYED gauges), as of the last dequeue */
	uint64_t delayed;
	/* the port tbf's limit (its set_limit; 0: none): see
	 * shp_cls_apply_limit. Control path only. */
	uint64_t limit;
	uint16_t shard;                      /* of its port's chain */
};

/* The classes stage of each port's shards (one for a port of one queue),
 * for the statistics (NULL: none), and a lock for their readers against a
 * change (never on the data path): sch_classes_update.c. Every shard of a
 * port runs the same classes in the same order (a change prepares them
 * all): class i of the port is member i of each shard's conf. */
extern struct shp_qdisc *shp_cls_stage[SHP_MAX_PORTS][SHP_MAX_QUEUES];
extern pthread_mutex_t shp_cls_lock;
/* What the classes freed so far counted (drops, statistics, bands), by
 * port and shard: the port's sums keep them (shp_classes_add_port). */
extern struct shp_port_ctr shp_cls_retired[SHP_MAX_PORTS][SHP_MAX_QUEUES];

extern const struct shp_qdisc_ops shp_cls_ops;

/* The classes' share of their port's counters, registered with the core
 * sums (shp_stats_source, sch_classes_update.c): port's class blocks
 * added into a port sum (shp_stats_sum), and ",\n    \"classes\": {...}"
 * in the stats file (nothing without). */
void shp_classes_add_port(uint16_t port, int shard, struct shp_port_ctr *s);
void shp_classes_json(FILE *f, uint16_t port);

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
	uint16_t idx;
	uint8_t lvl;
	const char *name;     /* the class's (NULL: the port's own queue) */
};

static inline struct member
member(struct shp_qdisc *q, const struct classes_conf *c, uint16_t i)
{
	struct classes_priv *p = priv(q);

	if (i == DEF_MEMBER)
		return (struct member){ q->child, NULL, &p->def_sq,
					SHP_CLASS_DEFAULT_QUANTUM, NULL,
					DEF_MEMBER, 0, NULL };
	return (struct member){ c->cls[i]->chain.root, c->cls[i]->ctr,
				&c->cls[i]->sq, c->quantum[i],
				&c->cls[i]->sojourn, i, c->prio[i],
				c->cls[i]->name };
}

static inline void
act_push(struct classes_conf *c, const struct member *m)
{
	struct act_ring *a = &c->act[m->lvl];

	if (m->sq->in_act)
		return;
	m->sq->in_act = true;
	a->v[(a->head + a->cnt++) % a->size] = m->idx;
}

static inline void
busy_push(struct classes_conf *c, uint16_t i)
{
	struct staging *sq = &c->cls[i]->sq;

	if (sq->in_busy)
		return;
	sq->in_busy = true;
	c->busy[c->nb_busy++] = i;
}

static inline struct shp_ctx
member_ctx(const struct member *m, const struct shp_ctx *ctx)
{
	struct shp_ctx c = *ctx;

	if (m->ctr != NULL)
		c.ctr = m->ctr;
	if (m->name != NULL)
		c.tag.cls = m->name;
	c.bytes = UINT64_MAX;
	c.more = false;
	return c;
}

/* The data path's lists for a conf it has not run yet: every member
 * busy (refilled until found empty), the staged ones active, turns from
 * the start. */
void shp_cls_lists_build(struct shp_qdisc *q, struct classes_conf *c);

static inline struct classes_conf *
conf_load(struct shp_qdisc *q)
{
	struct classes_priv *p = priv(q);
	struct classes_conf *c = (struct classes_conf *)(uintptr_t)
		__atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);

	if (unlikely(c->id != p->seen))
		shp_cls_lists_build(q, c);
	return c;
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

/* A cleared class with nothing left on this shard: it may be freed once
 * it is so on every shard of its port. */
static inline bool
cls_drained(const struct cls *k)
{
	return k->retiring && k->sq.cnt == 0 &&
	       shp_qdisc_qlen_total(k->chain.root) == 0;
}

/* Drop what a staging FIFO holds (flushed), its turn forgotten. */
void shp_cls_sq_flush(struct staging *sq, struct shp_ctx *ctx);
/* Flush everything the stage holds (its classes' chains too). */
void shp_cls_reset(struct shp_qdisc *q, struct shp_ctx *ctx);
/* The port tbf's limit (priv->limit) onto the queues that wait for its
 * tokens only: the port's own and those of c's classes without a rate
 * stage of their own (a class's tbf bounds its own queue). */
void shp_cls_apply_limit(struct shp_qdisc *q, const struct classes_conf *c);

#endif
