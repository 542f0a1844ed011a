/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem's time queue ("tfifo"): packets ordered by time_to_send.
 *
 * As in Linux sch_netem: an rbtree keyed by time_to_send plus a plain list
 * for the common case where packets arrive in send order (constant delay,
 * rate): a packet whose time is >= the list tail's is appended in O(1),
 * otherwise it goes into the tree. Equal keys go right in the tree and the
 * list wins ties against the tree, so equal times leave in arrival order.
 * (The tree only holds packets while the list is non-empty: each tree packet
 * is earlier than the list tail of its time, and leaves before it.)
 *
 * Nodes live in the mbuf private area (struct shp_meta): no allocation per
 * packet. The tree's leftmost node is cached so peek is O(1).
 *
 * Single owner: no locking; counters are plain.
 */
#ifndef NETEM_TFIFO_H
#define NETEM_TFIFO_H

#include <stdint.h>
#include <bsd/sys/tree.h>
#include <rte_mbuf.h>

#include "shp_meta.h"

RB_HEAD(shp_tfifo_tree, shp_meta);
RB_PROTOTYPE(shp_tfifo_tree, shp_meta, rb, shp_tfifo_cmp)

struct shp_tfifo {
	struct shp_tfifo_tree t_root;
	struct shp_meta *t_min;     /* leftmost tree node (cached) */
	struct shp_meta *t_head;    /* list fast path, time order */
	struct shp_meta *t_tail;
	uint32_t qlen;              /* packets, list + tree */
	uint32_t t_len;             /* packets in the tree */
	uint64_t backlog;           /* bytes (pkt_len) */
};

/* Ways to empty the tree, compared by bench/netem_flush (seed 002). */
enum shp_tfifo_purge {
	SHP_TFIFO_PURGE_MIN,        /* repeat: RB_MIN, erase */
	SHP_TFIFO_PURGE_NEXT,       /* RB_MIN once, then successor while erasing */
	SHP_TFIFO_PURGE_POSTORDER,  /* post-order walk, no erase, re-init */
};

void shp_tfifo_init(struct shp_tfifo *t);

/* Queue m at shp_meta(m)->time_to_send. */
void shp_tfifo_insert(struct shp_tfifo *t, struct rte_mbuf *m);

/* The tree only: used by tests and benchmarks to exercise it directly. */
void shp_tfifo_insert_tree(struct shp_tfifo *t, struct rte_mbuf *m);

static inline struct shp_meta *
shp_tfifo_first(const struct shp_tfifo *t)
{
	struct shp_meta *l = t->t_head, *r = t->t_min;

	if (r == NULL)
		return l;
	if (l == NULL)
		return r;
	return r->time_to_send < l->time_to_send ? r : l;
}

/* Earliest packet (stays queued), or NULL. */
static inline struct rte_mbuf *
shp_tfifo_peek(const struct shp_tfifo *t)
{
	struct shp_meta *m = shp_tfifo_first(t);

	return m == NULL ? NULL : shp_meta_mbuf(m);
}

/* Remove and return the earliest packet, or NULL. */
struct rte_mbuf *shp_tfifo_pop(struct shp_tfifo *t);

/* Queue m first: m leaves before every packet queued (its time is not
 * later than any, and it arrived before those of its time). */
void shp_tfifo_push_front(struct shp_tfifo *t, struct rte_mbuf *m);

/* Up to n packets with time_to_send <= now, in time order. */
uint16_t shp_tfifo_dequeue_due(struct shp_tfifo *t, uint64_t now,
			       struct rte_mbuf **pkts, uint16_t n);

/* Free everything (successor walk); returns the number of packets freed. */
uint32_t shp_tfifo_flush(struct shp_tfifo *t);

/* Same with a chosen tree method (benchmarks). */
uint32_t shp_tfifo_flush_method(struct shp_tfifo *t, enum shp_tfifo_purge how);

static inline uint64_t
shp_tfifo_tail_time(const struct shp_tfifo *t, int *valid)
{
	*valid = t->t_tail != NULL;
	return t->t_tail != NULL ? t->t_tail->time_to_send : 0;
}

#endif
