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
 * a lock for their readers against a change (never on the data path):
 * sch_classes_update.c. */
extern struct shp_qdisc *shp_cls_stage[SHP_MAX_PORTS];
extern pthread_mutex_t shp_cls_lock;
/* What the classes freed so far counted (drops, statistics, bands), by
 * port: the port's sums keep them (shp_classes_add_port). */
extern struct shp_port_ctr shp_cls_retired[SHP_MAX_PORTS];

extern const struct shp_qdisc_ops shp_cls_ops;

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

/* Drop what a staging FIFO holds (flushed), its turn forgotten. */
void shp_cls_sq_flush(struct staging *sq, struct shp_ctx *ctx);
/* Flush everything the stage holds (its classes' chains too). */
void shp_cls_reset(struct shp_qdisc *q, struct shp_ctx *ctx);

#endif
