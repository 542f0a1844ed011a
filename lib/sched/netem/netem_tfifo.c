/* SPDX-License-Identifier: BSD-3-Clause */
#include <rte_mbuf.h>

#include "netem_tfifo.h"

/*
 * Never 0: an equal key goes right, after the ones already there, which
 * keeps equal times FIFO (and BSD RB_INSERT would refuse a duplicate key).
 */
static inline int
shp_tfifo_cmp(const struct shp_meta *a, const struct shp_meta *b)
{
	return a->time_to_send < b->time_to_send ? -1 : 1;
}

RB_GENERATE(shp_tfifo_tree, shp_meta, rb, shp_tfifo_cmp)

#define FREE_BATCH 64

/* Frees in batches: rte_pktmbuf_free_bulk amortises the mempool puts. */
struct free_batch {
	struct rte_mbuf *m[FREE_BATCH];
	unsigned int n;
	uint32_t total;
};

static inline void
batch_add(struct free_batch *b, struct shp_meta *meta)
{
	b->m[b->n++] = shp_meta_mbuf(meta);
	b->total++;
	if (b->n == FREE_BATCH) {
		rte_pktmbuf_free_bulk(b->m, b->n);
		b->n = 0;
	}
}

static inline void
batch_end(struct free_batch *b)
{
	if (b->n > 0)
		rte_pktmbuf_free_bulk(b->m, b->n);
	b->n = 0;
}

void
shp_tfifo_init(struct shp_tfifo *t)
{
	RB_INIT(&t->t_root);
	t->t_min = NULL;
	t->t_head = NULL;
	t->t_tail = NULL;
	t->qlen = 0;
	t->t_len = 0;
	t->backlog = 0;
}

void
shp_tfifo_insert_tree(struct shp_tfifo *t, struct rte_mbuf *m)
{
	struct shp_meta *meta = shp_meta(m);

	RB_INSERT(shp_tfifo_tree, &t->t_root, meta);
	/* strictly earlier only: an equal key went right of t_min */
	if (t->t_min == NULL || meta->time_to_send < t->t_min->time_to_send)
		t->t_min = meta;
	t->t_len++;
	t->qlen++;
	t->backlog += m->pkt_len;
}

void
shp_tfifo_insert(struct shp_tfifo *t, struct rte_mbuf *m)
{
	struct shp_meta *meta = shp_meta(m);
	struct shp_meta *tail = t->t_tail;

	if (tail != NULL && meta->time_to_send < tail->time_to_send) {
		shp_tfifo_insert_tree(t, m);
		return;
	}
	meta->next = NULL;
	if (tail != NULL)
		tail->next = meta;
	else
		t->t_head = meta;
	t->t_tail = meta;
	t->qlen++;
	t->backlog += m->pkt_len;
}

void
shp_tfifo_push_front(struct shp_tfifo *t, struct rte_mbuf *m)
{
	struct shp_meta *meta = shp_meta(m);

	/* the list's head is the earliest of its time, and the tree holds
	 * nothing while the list is empty: m heads the list */
	meta->next = t->t_head;
	t->t_head = meta;
	if (t->t_tail == NULL)
		t->t_tail = meta;
	t->qlen++;
	t->backlog += m->pkt_len;
}

static inline void
tfifo_unlink(struct shp_tfifo *t, struct shp_meta *meta)
{
	if (meta == t->t_head) {
		t->t_head = meta->next;
		if (t->t_head == NULL)
			t->t_tail = NULL;
	} else {
		/* meta is t_min: it has no left child, and its successor
		 * stays where it is when it is erased */
		t->t_min = RB_NEXT(shp_tfifo_tree, &t->t_root, meta);
		RB_REMOVE(shp_tfifo_tree, &t->t_root, meta);
		t->t_len--;
	}
	t->qlen--;
	t->backlog -= shp_meta_mbuf(meta)->pkt_len;
}

struct rte_mbuf *
shp_tfifo_pop(struct shp_tfifo *t)
{
	struct shp_meta *meta = shp_tfifo_first(t);

	if (meta == NULL)
		return NULL;
	tfifo_unlink(t, meta);
	return shp_meta_mbuf(meta);
}

uint16_t
shp_tfifo_dequeue_due(struct shp_tfifo *t, uint64_t now,
		      struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct shp_meta *meta = shp_tfifo_first(t);

		if (meta == NULL || meta->time_to_send > now)
			break;
		tfifo_unlink(t, meta);
		pkts[i] = shp_meta_mbuf(meta);
	}
	return i;
}

/* Method 1: look the minimum up again after each erase. */
static void
purge_min(struct shp_tfifo *t, struct free_batch *b)
{
	struct shp_meta *p;

	while ((p = RB_MIN(shp_tfifo_tree, &t->t_root)) != NULL) {
		RB_REMOVE(shp_tfifo_tree, &t->t_root, p);
		batch_add(b, p);
	}
}

/*
 * Method 2 (Linux tfifo_reset since 2017): find the minimum once, then take
 * the successor before erasing. The erased node is always the leftmost, a
 * node with at most a right child near the bottom, so the erase is cheap and
 * the working set stays small.
 */
static void
purge_next(struct shp_tfifo *t, struct free_batch *b)
{
	struct shp_meta *p = RB_MIN(shp_tfifo_tree, &t->t_root), *next;

	while (p != NULL) {
		next = RB_NEXT(shp_tfifo_tree, &t->t_root, p);
		RB_REMOVE(shp_tfifo_tree, &t->t_root, p);
		batch_add(b, p);
		p = next;
	}
}

static struct shp_meta *
postorder_first(struct shp_meta *p)
{
	for (;;) {
		if (RB_LEFT(p, rb) != NULL)
			p = RB_LEFT(p, rb);
		else if (RB_RIGHT(p, rb) != NULL)
			p = RB_RIGHT(p, rb);
		else
			return p;
	}
}

/* Method 3: children before parents, no rebalancing, then forget the root. */
static void
purge_postorder(struct shp_tfifo *t, struct free_batch *b)
{
	struct shp_meta *p, *parent, *next;

	if (RB_ROOT(&t->t_root) == NULL)
		return;
	p = postorder_first(RB_ROOT(&t->t_root));
	while (p != NULL) {
		parent = RB_PARENT(p, rb);
		if (parent != NULL && p == RB_LEFT(parent, rb) &&
		    RB_RIGHT(parent, rb) != NULL)
			next = postorder_first(RB_RIGHT(parent, rb));
		else
			next = parent;
		batch_add(b, p);
		p = next;
	}
	RB_INIT(&t->t_root);
}

uint32_t
shp_tfifo_flush_method(struct shp_tfifo *t, enum shp_tfifo_purge how)
{
	struct free_batch b = { .n = 0, .total = 0 };
	struct shp_meta *p, *next;

	switch (how) {
	case SHP_TFIFO_PURGE_MIN:
		purge_min(t, &b);
		break;
	case SHP_TFIFO_PURGE_POSTORDER:
		purge_postorder(t, &b);
		break;
	case SHP_TFIFO_PURGE_NEXT:
	default:
		purge_next(t, &b);
		break;
	}
	for (p = t->t_head; p != NULL; p = next) {
		next = p->next;
		batch_add(&b, p);
	}
	batch_end(&b);
	shp_tfifo_init(t);
	return b.total;
}

uint32_t
shp_tfifo_flush(struct shp_tfifo *t)
{
	return shp_tfifo_flush_method(t, SHP_TFIFO_PURGE_NEXT);
}
