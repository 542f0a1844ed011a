/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mbuf pools (lib/pkt/shp_pool.h): without hugepages a packed pool
 * spreads its mbufs' headers over a page's offsets where DPDK's own puts
 * every one at the same offset; either way the mbufs are what
 * rte_pktmbuf_pool_create makes; bad arguments are refused and leave
 * nothing behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "shp_meta.h"
#include "shp_pool.h"
#include "shp_rig.h"

#define N 256

struct walk {
	unsigned int n;
	uint8_t offsets[4096 / RTE_CACHE_LINE_SIZE]; /* header lines seen */
	unsigned int iova_bad;
};

static void
walk_obj(struct rte_mempool *mp, void *arg, void *obj, unsigned int idx)
{
	struct walk *w = arg;
	struct rte_mbuf *m = obj;

	RTE_SET_USED(mp);
	RTE_SET_USED(idx);
	w->n++;
	w->offsets[((uintptr_t)m & 4095) / RTE_CACHE_LINE_SIZE] = 1;
	/* IOVA as VA: a buffer's IOVA range is its address range */
	if (m->buf_iova != (rte_iova_t)(uintptr_t)m->buf_addr)
		w->iova_bad++;
}

static unsigned int
distinct(const struct walk *w)
{
	unsigned int i, d = 0;

	for (i = 0; i < RTE_DIM(w->offsets); i++)
		d += w->offsets[i];
	return d;
}

/* what every mbuf of mp must be, as rte_pktmbuf_pool_create makes it */
static void
check_mbufs(struct rte_mempool *mp, uint16_t room)
{
	struct rte_mbuf *m[N];
	unsigned int i;

	assert_int_equal(rte_mempool_avail_count(mp), N);
	assert_int_equal(rte_pktmbuf_data_room_size(mp), room);
	assert_int_equal(rte_pktmbuf_priv_size(mp), SHP_MBUF_PRIV_SIZE);
	assert_int_equal(rte_pktmbuf_alloc_bulk(mp, m, N), 0);
	for (i = 0; i < N; i++) {
		assert_ptr_equal(m[i]->pool, mp);
		assert_int_equal(m[i]->buf_len, room);
		assert_int_equal(m[i]->data_off, RTE_PKTMBUF_HEADROOM);
		assert_int_equal(m[i]->pkt_len, 0);
		assert_int_equal(m[i]->nb_segs, 1);
		/* the whole buffer writable: a straddling one too */
		memset(rte_pktmbuf_mtod(m[i], void *), (int)i,
		       room - RTE_PKTMBUF_HEADROOM);
	}
	rte_pktmbuf_free_bulk(m, N);
	assert_int_equal(rte_mempool_avail_count(mp), N);
}

static void
test_pack_default(void **state)
{
	(void)state;
	/* the rig runs --no-huge, where the EAL takes IOVA as VA */
	assert_true(shp_pool_pack_default());
}

static void
test_layouts(void **state)
{
	struct walk packed = { 0 }, paged = { 0 };
	struct rte_mempool *a, *b;

	(void)state;
	a = shp_pool_create("t_packed", N, 0, SHP_MBUF_PRIV_SIZE,
			    RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY, NULL,
			    true);
	b = shp_pool_create("t_paged", N, 0, SHP_MBUF_PRIV_SIZE,
			    RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY, NULL,
			    false);
	assert_non_null(a);
	assert_non_null(b);
	rte_mempool_obj_iter(a, walk_obj, &packed);
	rte_mempool_obj_iter(b, walk_obj, &paged);
	assert_int_equal(packed.n, N);
	assert_int_equal(paged.n, N);
	/* one mbuf a 4 KiB page: every header on the same line of its
	 * page; packed, 1.7 a page, over many */
	assert_int_equal(distinct(&paged), 1);
	assert_true(distinct(&packed) >= 16);
	assert_int_equal(packed.iova_bad, 0);
	assert_int_equal(paged.iova_bad, 0);
	check_mbufs(a, RTE_MBUF_DEFAULT_BUF_SIZE);
	check_mbufs(b, RTE_MBUF_DEFAULT_BUF_SIZE);
	rte_mempool_free(a);
	rte_mempool_free(b);
}

static void
test_refused(void **state)
{
	struct rte_mempool *mp;

	(void)state;
	/* a private area DPDK cannot align */
	rte_errno = 0;
	mp = shp_pool_create("t_bad", N, 0, SHP_MBUF_PRIV_SIZE + 1,
			     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY, NULL,
			     true);
	assert_null(mp);
	assert_int_equal(rte_errno, EINVAL);
	/* ops nobody registered: refused, and the name is free again */
	rte_errno = 0;
	mp = shp_pool_create("t_ops", N, 0, SHP_MBUF_PRIV_SIZE,
			     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY,
			     "no_such_ops", true);
	assert_null(mp);
	assert_int_not_equal(rte_errno, 0);
	assert_null(rte_mempool_lookup("t_ops"));
	mp = shp_pool_create("t_ops", N, 0, SHP_MBUF_PRIV_SIZE,
			     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY, NULL,
			     true);
	assert_non_null(mp);
	rte_mempool_free(mp);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_default),
		cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_refused),
	};

	shp_rig_env("pool", 1024);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
