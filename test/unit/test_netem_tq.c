/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem's time queue (calendar in front of the tfifo): randomized property
 * tests against a sorted reference (a binary heap on (time_to_send,
 * arrival)), pops undone among them (shp_tq_unpop), in every
 * configuration that sends packets down each path (calendar, before the
 * cursor, beyond the horizon, no free chunk, full bucket, width change;
 * buckets sorted by radix and by merge), the radix sort's digits, FIFO
 * for equal keys across the two structures, the tail time, and flush
 * freeing everything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <sys/mman.h>
#include <rte_mempool.h>

#include "netem_tq.h"
#include "shp_numa.h"
#include "shp_rand.h"
#include "ref_heap.h"
#include "shp_rig.h"

#define POOL_SIZE 32768
#define FULL_N (SHP_TQ_BUCKET_MAX + 6000)  /* more than a bucket holds */

static struct ref_item heap_items[POOL_SIZE];
static struct ref_heap ref = { heap_items, 0 };

struct shape {
	const char *name;
	uint32_t nb_bkt;
	uint32_t max_pkts;      /* sizes the chunk pool */
	uint64_t horizon;       /* ns */
	uint64_t delay, jitter; /* ns, most packets */
	uint32_t max_queued;
	unsigned long adopt_at;  /* >0: no calendar until this op (a class's) */
};

static void
check_max(uint64_t *tail, uint64_t tts)
{
	if (ref.n == 0 || tts > *tail)
		*tail = tts;
}

/*
 * ops operations on a clock that moves forward: inserts (most at
 * now + delay +- jitter, some at now, before the cursor, far beyond the
 * horizon, or tied with the previous one), pops and dequeues of what is
 * due, compared step by step with the reference.
 */
static void
run_shape(const struct shape *sh, unsigned long ops)
{
	struct shp_tq q;
	struct shp_rand r;
	struct rte_mbuf *out[64];
	uint64_t now = 1000000, seq = 0, bytes = 0, tail = 0, last_tts = now;
	unsigned long i, cal_ins = 0, tf_ins = 0;

	assert_true(shp_tq_init(&q, sh->adopt_at > 0 ? 0 : sh->nb_bkt,
				sh->max_pkts, SOCKET_ID_ANY));
	shp_tq_set_horizon(&q, sh->horizon, 2 * sh->jitter);
	shp_rand_seed(&r, 777, sh->nb_bkt);
	ref.n = 0;
	for (i = 0; i < ops; i++) {
		uint32_t x = shp_rand_below(&r, 100);

		if (sh->adopt_at > 0 && i == sh->adopt_at) {
			/* made apart, taken with the tfifo holding packets:
			 * the two merge, in order */
			struct shp_tq_cal *c = shp_tq_cal_new(sh->nb_bkt,
							      sh->max_pkts,
							      SOCKET_ID_ANY);

			assert_non_null(c);
			assert_true(ref.n > 100);
			assert_int_equal(q.to_tfifo, seq);
			shp_tq_adopt(&q, c);
			assert_non_null(q.bkt);
		}

		if (ref.n < sh->max_queued && (x < 55 || ref.n == 0)) {
			uint16_t len = 60 + shp_rand_below(&r, 200);
			uint64_t tts;
			uint32_t kind = shp_rand_below(&r, 20);
			struct rte_mbuf *m;

			if (kind == 0)
				tts = now;                           /* at once */
			else if (kind == 1)
				tts = now + shp_rand_below(&r, 200); /* cursor */
			else if (kind == 2)
				tts = now + 50 * sh->horizon +
					shp_rand_below(&r, 1000);    /* far */
			else if (kind <= 5)
				tts = last_tts;                      /* a tie */
			else
				tts = now + sh->delay - sh->jitter +
					shp_rand_below(&r, 2 * sh->jitter + 1);
			last_tts = tts;
			m = shp_rig_pkt_due(tts, len);
			check_max(&tail, tts);
			shp_tq_insert(&q, m, now);
			ref_push(&ref, (struct ref_item){ tts, seq++, m });
			bytes += len;
		} else if (x < 62) {
			struct ref_item it = ref_pop(&ref);
			struct rte_mbuf *m;

			assert_ptr_equal(shp_tq_peek(&q), it.m);
			m = shp_tq_pop(&q);
			assert_ptr_equal(m, it.m);
			bytes -= m->pkt_len;
			rte_pktmbuf_free(m);
		} else if (x < 66 && ref.n > 0) {
			/* pops undone (a link's slot found full): the same
			 * packets come out again, in the same order */
			struct ref_item it[8];
			uint32_t j, k = 1 + shp_rand_below(&r, 8);

			if (k > ref.n)
				k = ref.n;
			for (j = 0; j < k; j++) {
				it[j] = ref_pop(&ref);
				assert_ptr_equal(shp_tq_pop(&q), it[j].m);
			}
			while (j-- > 0) {
				shp_tq_unpop(&q, it[j].m);
				ref_push(&ref, it[j]);
			}
			assert_ptr_equal(shp_tq_peek(&q), it[0].m);
		} else {
			uint16_t n = 1 + shp_rand_below(&r, 64), k, j;

			now += shp_rand_below(&r, 2 * sh->delay / 100 + 50);
			k = shp_tq_dequeue_due(&q, now, out, n);
			for (j = 0; j < k; j++) {
				struct ref_item it = ref_pop(&ref);

				assert_ptr_equal(out[j], it.m);
				assert_true(it.tts <= now);
				bytes -= out[j]->pkt_len;
			}
			/* never holds a due packet back */
			if (k < n && ref.n > 0)
				assert_true(ref.a[0].tts > now);
			rte_pktmbuf_free_bulk(out, k);
		}
		assert_int_equal(q.qlen, ref.n);
		assert_int_equal(q.backlog, bytes);
		if (ref.n > 0) {
			int valid;

			assert_int_equal(shp_tq_tail_time(&q, &valid), tail);
			assert_true(valid);
		}
	}
	/* the insert split, after the last staged ones were placed */
	(void)shp_tq_peek(&q);
	tf_ins = q.to_tfifo;
	cal_ins = seq - tf_ins;
	print_message("%s: calendar %lu, tfifo %lu\n", sh->name, cal_ins,
		      tf_ins);
	assert_true(cal_ins > seq / 4);
	assert_true(tf_ins > seq / 50);
	/* drain in order, then flush an empty queue */
	while (ref.n > 0) {
		struct ref_item it = ref_pop(&ref);
		struct rte_mbuf *m = shp_tq_pop(&q);

		assert_ptr_equal(m, it.m);
		rte_pktmbuf_free(m);
	}
	assert_null(shp_tq_pop(&q));
	assert_int_equal(q.qlen, 0);
	assert_int_equal(q.backlog, 0);
	assert_int_equal(shp_tq_flush(&q), 0);
	shp_tq_fini(&q);
	shp_rig_assert_pool_full(shp_rig_pool);
}

static void
test_random_wide(void **state)
{
	/* plenty of buckets and chunks: mostly the calendar */
	const struct shape sh = { "wide", 65536, POOL_SIZE, 20000, 10000,
				  2000, 4000 };

	(void)state;
	run_shape(&sh, 1000000);
}

static void
test_random_adopted(void **state)
{
	/* a class's netem: the tfifo alone, then a calendar adopted under
	 * load with the horizon set before it came */
	const struct shape sh = { "adopted", 65536, POOL_SIZE, 20000, 10000,
				  2000, 4000, 200000 };

	(void)state;
	run_shape(&sh, 1000000);
}

static void
test_random_small(void **state)
{
	/* 64 buckets and few chunks: beyond the horizon and out of chunks */
	const struct shape sh = { "small", 64, 300, 20000, 10000, 9000,
				  4000 };

	(void)state;
	run_shape(&sh, 1000000);
}

static void
test_random_dense(void **state)
{
	/* wide buckets, many packets in each: the merge sort */
	const struct shape sh = { "dense", 4096, POOL_SIZE, 400000000,
				  2000000, 1000000, 12000 };

	(void)state;
	run_shape(&sh, 300000);
}

static void
test_random_huge(void **state)
{
	/* buckets over a second wide (a 100 s horizon), thousands of
	 * packets in each: the merge sort, not the radix sort */
	const struct shape sh = { "huge", 256, POOL_SIZE, 100000000000ull,
				  3000000000ull, 1000000000ull, 12000 };

	(void)state;
	run_shape(&sh, 300000);
}

/*
 * A bucket sorted by its times' offsets, digit by digit (2 passes of 5
 * bits for 1 us buckets, 3 of 6 and 3 of 8 for wider ones): every offset
 * bit matters, a third of the packets tie with the one before, and equal
 * times leave in arrival order.
 */
static void
test_bucket_sort_digits(void **state)
{
	static const unsigned int shifts[] = { 10, 17, 24 };
	struct rte_mbuf *out[64];
	struct shp_rand r;
	unsigned int s, i;

	(void)state;
	shp_rand_seed(&r, 4242, 0);
	for (s = 0; s < RTE_DIM(shifts); s++) {
		uint64_t w = 1ull << shifts[s], tts = w, seq = 0;
		struct shp_tq q;
		uint16_t k, j;

		/* 64 buckets over twice the reach: this width exactly */
		assert_true(shp_tq_init(&q, 64, 4000, SOCKET_ID_ANY));
		shp_tq_set_horizon(&q, 32 * w, 0);
		ref.n = 0;
		for (i = 0; i < 3000; i++) {
			struct rte_mbuf *m;

			if (i == 0 || shp_rand_below(&r, 3) != 0)
				tts = w + (shp_rand_u64(&r) & (w - 1));
			m = shp_rig_pkt_due(tts, 64);
			shp_tq_insert(&q, m, 0);
			ref_push(&ref, (struct ref_item){ tts, seq++, m });
		}
		assert_int_equal(shp_tq_dequeue_due(&q, w - 1, out, 64), 0);
		/* all in the one bucket: none went to the tfifo */
		assert_int_equal(q.to_tfifo, 0);
		assert_int_equal(q.shift, shifts[s]);
		while ((k = shp_tq_dequeue_due(&q, 2 * w, out, 64)) > 0) {
			for (j = 0; j < k; j++)
				assert_ptr_equal(out[j], ref_pop(&ref).m);
			rte_pktmbuf_free_bulk(out, k);
		}
		assert_int_equal(ref.n, 0);
		shp_tq_fini(&q);
	}
	shp_rig_assert_pool_full(shp_rig_pool);
}

/* Equal times leave in arrival order though they sit in both structures. */
static void
test_fifo_across(void **state)
{
	struct shp_tq q;
	struct rte_mbuf *m[600], *out[64];
	uint16_t k, got = 0;
	int i;

	(void)state;
	/* 2 chunks: the rest of the ties overflow into the tfifo, while
	 * later ties still find room after the first bucket was drained */
	assert_true(shp_tq_init(&q, 64, 2, SOCKET_ID_ANY));
	shp_tq_set_horizon(&q, 1000, 0);
	/* a later packet first: the ties are out of order, for the calendar
	 * (packets in time order would all take the list) */
	shp_tq_insert(&q, shp_rig_pkt_due(6000, 64), 0);
	for (i = 0; i < 600; i++) {
		m[i] = shp_rig_pkt_due(5000, 64);
		shp_tq_insert(&q, m[i], 0);
	}
	assert_true(q.to_tfifo > 0 && q.to_tfifo < 600);
	while ((k = shp_tq_dequeue_due(&q, 5000, out, 64)) > 0) {
		for (i = 0; i < k; i++)
			assert_ptr_equal(out[i], m[got + i]);
		got += k;
		rte_pktmbuf_free_bulk(out, k);
	}
	assert_int_equal(got, 600);
	assert_int_equal(shp_tq_dequeue_due(&q, 6000, out, 64), 1);
	assert_int_equal(shp_meta(out[0])->time_to_send, 6000);
	rte_pktmbuf_free(out[0]);
	shp_tq_fini(&q);
}

/* More ties than a bucket holds: the rest goes to the tfifo, in order. */
static void
test_full_bucket(void **state)
{
	static struct rte_mbuf *m[FULL_N];
	struct rte_mempool *small;
	struct rte_mbuf *out[32], *late;
	struct shp_tq q;
	uint16_t k;
	int i, got = 0;

	(void)state;
	/* small mbufs: FULL_N of them fit the test's memory */
	small = shp_rig_pool_create("tq_small", FULL_N + 1,
				    RTE_PKTMBUF_HEADROOM + 128);
	assert_true(shp_tq_init(&q, 1024, FULL_N, SOCKET_ID_ANY));
	shp_tq_set_horizon(&q, 100000, 0);
	/* one out of order first, so the calendar takes the ties */
	late = shp_rig_pkt_from(small, 64, 0, 0);
	shp_meta(late)->time_to_send = 60000;
	shp_tq_insert(&q, late, 0);
	for (i = 0; i < FULL_N; i++) {
		m[i] = shp_rig_pkt_from(small, 64, 0, 0);
		shp_meta(m[i])->time_to_send = 50000 + (i % 3 == 0 ? 0 : 1);
		shp_tq_insert(&q, m[i], 0);
	}
	assert_int_equal(shp_tq_dequeue_due(&q, 49999, out, 32), 0);
	/* the third at 50000 first, then the rest at 50001, each FIFO */
	while ((k = shp_tq_dequeue_due(&q, 59999, out, 32)) > 0) {
		for (i = 0; i < k; i++, got++) {
			int t = (FULL_N + 2) / 3, want = got < t ? 3 * got :
				(got - t) / 2 * 3 + 1 + (got - t) % 2;

			assert_ptr_equal(out[i], m[want]);
		}
		rte_pktmbuf_free_bulk(out, k);
	}
	assert_int_equal(got, FULL_N);
	assert_true(q.to_tfifo >= FULL_N - SHP_TQ_BUCKET_MAX);
	shp_tq_fini(&q);   /* frees the one at 60000 */
	shp_rig_assert_pool_full(small);
	rte_mempool_free(small);
}

static void
test_flush_frees_all(void **state)
{
	struct shp_rand r;
	struct shp_tq q;
	int i;

	(void)state;
	shp_rand_seed(&r, 99, 0);
	assert_true(shp_tq_init(&q, 256, 1000, SOCKET_ID_ANY));
	shp_tq_set_horizon(&q, 10000, 0);
	for (i = 0; i < 5000; i++)
		shp_tq_insert(&q, shp_rig_pkt_due(shp_rand_below(&r, 100000), 64), 0);
	/* part of it in ready, the rest in buckets and the tfifo */
	assert_non_null(shp_tq_peek(&q));
	assert_int_equal(shp_tq_flush(&q), 5000);
	assert_int_equal(q.qlen, 0);
	assert_null(shp_tq_peek(&q));
	shp_rig_assert_pool_full(shp_rig_pool);
	/* staged only, then fini frees */
	for (i = 0; i < 10; i++)
		shp_tq_insert(&q, shp_rig_pkt_due(5000, 64), 0);
	shp_tq_fini(&q);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/* Without a calendar (nb_bkt 0) the tfifo alone keeps the order. */
static void
test_no_calendar(void **state)
{
	struct shp_tq q;

	(void)state;
	assert_true(shp_tq_init(&q, 0, 0, SOCKET_ID_ANY));
	assert_null(q.bkt);
	shp_tq_insert(&q, shp_rig_pkt_due(30, 64), 0);
	shp_tq_insert(&q, shp_rig_pkt_due(10, 64), 0);
	shp_tq_insert(&q, shp_rig_pkt_due(20, 64), 0);
	assert_int_equal(shp_meta(shp_tq_peek(&q))->time_to_send, 10);
	assert_int_equal(q.to_tfifo, 3);
	assert_int_equal(shp_tq_flush(&q), 3);
	shp_tq_fini(&q);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/* The policy the kernel holds for the page at addr: its mode, and the
 * node mask's first word. */
static int
policy_of(void *addr, unsigned long *mask0)
{
	unsigned long mask[16] = { 0 };
	int mode = -1;

	if (get_mempolicy(&mode, mask, sizeof(mask) * 8 + 1, addr,
			  MPOL_F_ADDR) < 0)
		return -errno;
	*mask0 = mask[0];
	return mode;
}

/* The calendar's chunks are mmap()ed, committed as they are first used:
 * they ask for the node of the queue's socket, not the first toucher's;
 * an unnamed socket asks for nothing, a node out of range is refused. */
static void
test_chunks_on_the_sockets_node(void **state)
{
	struct shp_tq q;
	unsigned long m0 = 0;
	size_t len = 1 << 20;
	void *any;
	int rc;

	(void)state;
	any = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(any != MAP_FAILED);
	rc = shp_numa_prefer(any, len, 0);
	if (rc == -ENOSYS) {
		munmap(any, len);
		printf("skipped: this kernel has no NUMA policies (mbind: "
		       "ENOSYS)\n");
		skip();
	}
	assert_int_equal(rc, 0);
	assert_int_equal(policy_of(any, &m0), MPOL_PREFERRED);
	assert_int_equal(m0, 1);
	assert_int_equal(shp_numa_prefer(any, len, 100000), -EINVAL);
	munmap(any, len);

	any = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(any != MAP_FAILED);
	assert_int_equal(shp_numa_prefer(any, len, SOCKET_ID_ANY), 0);
	assert_int_equal(policy_of(any, &m0), MPOL_DEFAULT);
	munmap(any, len);

	assert_true(shp_tq_init(&q, 64, 4000, 0));
	assert_non_null(q.chunks);
	assert_int_equal(policy_of(q.chunks, &m0), MPOL_PREFERRED);
	assert_int_equal(m0, 1);
	shp_tq_fini(&q);
	assert_true(shp_tq_init(&q, 64, 4000, SOCKET_ID_ANY));
	assert_int_equal(policy_of(q.chunks, &m0), MPOL_DEFAULT);
	shp_tq_fini(&q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_wide),
		cmocka_unit_test(test_random_adopted),
		cmocka_unit_test(test_random_small),
		cmocka_unit_test(test_random_dense),
		cmocka_unit_test(test_random_huge),
		cmocka_unit_test(test_bucket_sort_digits),
		cmocka_unit_test(test_fifo_across),
		cmocka_unit_test(test_full_bucket),
		cmocka_unit_test(test_flush_frees_all),
		cmocka_unit_test(test_no_calendar),
		cmocka_unit_test(test_chunks_on_the_sockets_node),
	};

	shp_rig_env("netem_tq", POOL_SIZE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
