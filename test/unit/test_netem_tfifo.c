/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The netem time queue: a randomized property test against a sorted
 * reference (a binary heap on (time_to_send, arrival)), FIFO for equal
 * keys, the list/tree interplay, and the flush methods freeing everything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "netem_tfifo.h"
#include "shp_rand.h"
#include "ref_heap.h"
#include "shp_rig.h"

#define POOL_SIZE 8192

static struct ref_item heap_items[POOL_SIZE];
static struct ref_heap ref = { heap_items, 0 };

/* 1e6 mixed operations; keys drawn from a window that mostly moves forward
 * (list path) with many ties and frequent earlier keys (tree path). */
static void
test_random_vs_reference(void **state)
{
	struct shp_tfifo t;
	struct shp_rand r;
	struct rte_mbuf *out[32];
	uint64_t base = 1000, seq = 0, bytes = 0;
	unsigned long ops, list_ins = 0, tree_ins = 0;

	(void)state;
	shp_rand_seed(&r, 12345, 0);
	shp_tfifo_init(&t);
	ref.n = 0;
	for (ops = 0; ops < 1000000; ops++) {
		uint32_t x = shp_rand_below(&r, 100);

		if (ref.n < 4000 && (x < 52 || ref.n == 0)) {
			uint64_t tts;
			uint16_t len = 60 + shp_rand_below(&r, 200);
			uint32_t before;

			switch (shp_rand_below(&r, 4)) {
			case 0:   /* early, many ties: tree */
				tts = base + shp_rand_below(&r, 8);
				break;
			case 1:   /* anywhere */
				tts = base + shp_rand_below(&r, 5000);
				break;
			default:  /* at the front, ties with the tail: list */
				tts = base + 5000 + shp_rand_below(&r, 4);
				break;
			}
			base += shp_rand_below(&r, 3);
			struct rte_mbuf *m = shp_rig_pkt_due(tts, len);

			before = t.t_len;
			shp_tfifo_insert(&t, m);
			if (t.t_len > before)
				tree_ins++;
			else
				list_ins++;
			ref_push(&ref, (struct ref_item){ tts, seq++, m });
			bytes += len;
		} else if (x < 90) {
			struct ref_item it = ref_pop(&ref);
			struct rte_mbuf *m;

			assert_ptr_equal(shp_tfifo_peek(&t), it.m);
			m = shp_tfifo_pop(&t);
			assert_ptr_equal(m, it.m);
			bytes -= m->pkt_len;
			rte_pktmbuf_free(m);
		} else {
			/* everything due at a random instant, in order */
			uint64_t now = ref.a[0].tts + shp_rand_below(&r, 300);
			uint16_t k, i;

			k = shp_tfifo_dequeue_due(&t, now, out, 32);
			for (i = 0; i < k; i++) {
				struct ref_item it = ref_pop(&ref);

				assert_ptr_equal(out[i], it.m);
				assert_true(it.tts <= now);
				bytes -= out[i]->pkt_len;
			}
			/* nothing due left behind unless the burst was full */
			if (k < 32 && ref.n > 0)
				assert_true(ref.a[0].tts > now);
			rte_pktmbuf_free_bulk(out, k);
		}
		assert_int_equal(t.qlen, ref.n);
		assert_int_equal(t.backlog, bytes);
	}
	/* both paths were exercised a lot */
	print_message("list inserts %lu, tree inserts %lu\n", list_ins,
		      tree_ins);
	assert_true(list_ins > 100000);
	assert_true(tree_ins > 100000);
	while (ref.n > 0) {
		struct ref_item it = ref_pop(&ref);
		struct rte_mbuf *m = shp_tfifo_pop(&t);

		assert_ptr_equal(m, it.m);
		rte_pktmbuf_free(m);
	}
	assert_null(shp_tfifo_pop(&t));
	assert_int_equal(t.qlen, 0);
	assert_int_equal(t.backlog, 0);
	shp_rig_assert_pool_full(shp_rig_pool);
}

static void
test_fifo_equal_keys(void **state)
{
	struct shp_tfifo t;
	struct rte_mbuf *m[1000];
	int i;

	(void)state;
	/* all on the list */
	shp_tfifo_init(&t);
	for (i = 0; i < 1000; i++) {
		m[i] = shp_rig_pkt_due(500, 64);
		shp_tfifo_insert(&t, m[i]);
	}
	assert_int_equal(t.t_len, 0);
	for (i = 0; i < 1000; i++)
		assert_ptr_equal(shp_tfifo_pop(&t), m[i]);
	rte_pktmbuf_free_bulk(m, 1000);

	/* all in the tree: equal keys go right */
	shp_tfifo_init(&t);
	for (i = 0; i < 1000; i++) {
		m[i] = shp_rig_pkt_due(500, 64);
		shp_tfifo_insert_tree(&t, m[i]);
	}
	assert_int_equal(t.t_len, 1000);
	for (i = 0; i < 1000; i++)
		assert_ptr_equal(shp_tfifo_pop(&t), m[i]);
	rte_pktmbuf_free_bulk(m, 1000);
	shp_rig_assert_pool_full(shp_rig_pool);
}

static void
test_list_tree_interplay(void **state)
{
	struct shp_tfifo t;
	struct rte_mbuf *x, *y, *z, *a, *b, *c, *e, *out[8];

	(void)state;
	shp_tfifo_init(&t);
	x = shp_rig_pkt_due(5, 64);
	y = shp_rig_pkt_due(10, 64);
	z = shp_rig_pkt_due(5, 64);    /* earlier than the tail: tree */
	a = shp_rig_pkt_due(7, 64);
	b = shp_rig_pkt_due(3, 64);
	c = shp_rig_pkt_due(10, 64);   /* equal to the tail: list */
	e = shp_rig_pkt_due(7, 64);
	shp_tfifo_insert(&t, x);
	shp_tfifo_insert(&t, y);
	assert_int_equal(t.t_len, 0);
	shp_tfifo_insert(&t, z);
	shp_tfifo_insert(&t, a);
	shp_tfifo_insert(&t, b);
	assert_int_equal(t.t_len, 3);
	shp_tfifo_insert(&t, c);
	assert_int_equal(t.t_len, 3);
	shp_tfifo_insert(&t, e);
	assert_int_equal(t.t_len, 4);
	assert_int_equal(t.qlen, 7);

	/* nothing due before 3 */
	assert_int_equal(shp_tfifo_dequeue_due(&t, 2, out, 8), 0);
	/* b(3) from the tree, then x(5, list) before z(5, tree): the list
	 * wins ties because x came first */
	assert_int_equal(shp_tfifo_dequeue_due(&t, 5, out, 8), 3);
	assert_ptr_equal(out[0], b);
	assert_ptr_equal(out[1], x);
	assert_ptr_equal(out[2], z);
	rte_pktmbuf_free_bulk(out, 3);
	/* a and e (7, tree, FIFO), then y and c (10, list, FIFO); a burst
	 * of 3 stops short and leaves c due */
	assert_int_equal(shp_tfifo_dequeue_due(&t, 100, out, 3), 3);
	assert_ptr_equal(out[0], a);
	assert_ptr_equal(out[1], e);
	assert_ptr_equal(out[2], y);
	rte_pktmbuf_free_bulk(out, 3);
	assert_int_equal(t.t_len, 0);
	assert_ptr_equal(shp_tfifo_peek(&t), c);
	assert_ptr_equal(shp_tfifo_pop(&t), c);
	rte_pktmbuf_free(c);
	assert_null(shp_tfifo_peek(&t));
	assert_null(t.t_tail);
	shp_rig_assert_pool_full(shp_rig_pool);
}

static void
test_flush_frees_all(void **state)
{
	enum shp_tfifo_purge how[] = {
		SHP_TFIFO_PURGE_MIN, SHP_TFIFO_PURGE_NEXT,
		SHP_TFIFO_PURGE_POSTORDER
	};
	struct shp_tfifo t;
	struct shp_rand r;
	unsigned int h, i, n = POOL_SIZE - 100;

	(void)state;
	shp_rand_seed(&r, 99, 1);
	for (h = 0; h < 3; h++) {
		shp_tfifo_init(&t);
		for (i = 0; i < n; i++)
			shp_tfifo_insert(&t, shp_rig_pkt_due(shp_rand_below(&r, 100000),
						    64));
		assert_true(t.t_len > n / 2);
		assert_true(t.t_len < n);
		assert_int_equal(rte_mempool_avail_count(shp_rig_pool),
				 POOL_SIZE - n);
		assert_int_equal(shp_tfifo_flush_method(&t, how[h]), n);
		assert_int_equal(t.qlen, 0);
		assert_int_equal(t.t_len, 0);
		assert_int_equal(t.backlog, 0);
		assert_null(shp_tfifo_peek(&t));
		shp_rig_assert_pool_full(shp_rig_pool);
	}
	/* the default flush, and flushing an empty queue */
	shp_tfifo_init(&t);
	assert_int_equal(shp_tfifo_flush(&t), 0);
	for (i = 0; i < 100; i++)
		shp_tfifo_insert(&t, shp_rig_pkt_due(1000 - i, 64));
	assert_int_equal(shp_tfifo_flush(&t), 100);
	shp_rig_assert_pool_full(shp_rig_pool);
	/* reusable after a flush */
	shp_tfifo_insert(&t, shp_rig_pkt_due(1, 64));
	assert_int_equal(t.qlen, 1);
	assert_int_equal(shp_tfifo_flush(&t), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_vs_reference),
		cmocka_unit_test(test_fifo_equal_keys),
		cmocka_unit_test(test_list_tree_interplay),
		cmocka_unit_test(test_flush_frees_all),
	};

	shp_rig_env("netem_tfifo", POOL_SIZE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
