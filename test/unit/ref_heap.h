/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sorted reference for the time queue tests: a binary min-heap on
 * (time_to_send, arrival number), i.e. the order packets must leave in.
 */
#ifndef TEST_REF_HEAP_H
#define TEST_REF_HEAP_H

#include <stdint.h>
#include <rte_mbuf.h>

struct ref_item {
	uint64_t tts;
	uint64_t seq;
	struct rte_mbuf *m;
};

struct ref_heap {
	struct ref_item *a;
	unsigned int n;
};

static inline int
ref_less(const struct ref_item *a, const struct ref_item *b)
{
	return a->tts < b->tts || (a->tts == b->tts && a->seq < b->seq);
}

static inline void
ref_push(struct ref_heap *h, struct ref_item it)
{
	unsigned int i = h->n++;

	while (i > 0 && ref_less(&it, &h->a[(i - 1) / 2])) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = it;
}

static inline struct ref_item
ref_pop(struct ref_heap *h)
{
	struct ref_item top = h->a[0], last = h->a[--h->n];
	unsigned int i = 0, c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && ref_less(&h->a[c + 1], &h->a[c]))
			c++;
		if (!ref_less(&h->a[c], &last))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	h->a[i] = last;
	return top;
}

#endif
