/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/pace: packets held until their capture offset has elapsed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include <rte_mbuf_dyn.h>

#include "pace.h"
#include "shp_rig.h"

#define US 1000u      /* ns per net_pcap timestamp unit */

static int ts_off;
static uint64_t ts_flag;

/* A packet captured at `us` microseconds (stamped = false: no time). */
static struct rte_mbuf *
cap_pkt(uint64_t us, bool stamped)
{
	struct rte_mbuf *m = shp_rig_pkt(64, 0, 0);

	if (stamped) {
		*RTE_MBUF_DYNFIELD(m, ts_off, rte_mbuf_timestamp_t *) = us;
		m->ol_flags |= ts_flag;
	}
	return m;
}

static void
free_all(struct rte_mbuf **pkts, uint16_t n)
{
	rte_pktmbuf_free_bulk(pkts, n);
}

static void
test_holds_until_offset(void **state)
{
	static struct shp_pace p;
	struct rte_mbuf *in[4], *out[4];
	uint64_t stamp = 0;

	assert_int_equal(shp_pace_init(&p, US), 0);
	/* captured at 1 s, 1 s, 1.0005 s, 1.002 s; read at clock 100 ns */
	in[0] = cap_pkt(1000000, true);
	in[1] = cap_pkt(1000000, true);
	in[2] = cap_pkt(1000500, true);
	in[3] = cap_pkt(1002000, true);
	shp_pace_hold(&p, in, 4, 100);
	assert_int_equal(shp_pace_held(&p), 4);
	/* the first is the origin: due at once, with its twin */
	assert_int_equal(shp_pace_release(&p, 100, out, &stamp), 2);
	assert_ptr_equal(out[0], in[0]);
	assert_ptr_equal(out[1], in[1]);
	assert_int_equal(stamp, 100);
	free_all(out, 2);
	/* 500 us later on the clock, not a nanosecond before */
	assert_int_equal(shp_pace_release(&p, 500099, out, &stamp), 0);
	assert_int_equal(shp_pace_release(&p, 500100, out, &stamp), 1);
	assert_ptr_equal(out[0], in[2]);
	assert_int_equal(stamp, 500100);
	free_all(out, 1);
	/* late: released with the time it was due, not the clock's */
	assert_int_equal(shp_pace_release(&p, 2500000, out, &stamp), 1);
	assert_ptr_equal(out[0], in[3]);
	assert_int_equal(stamp, 2000100);
	free_all(out, 1);
	assert_int_equal(shp_pace_held(&p), 0);
	assert_int_equal(p.backwards, 0);
	assert_int_equal(p.unstamped, 0);
}

static void
test_origin_kept_across_bursts(void **state)
{
	static struct shp_pace p;
	struct rte_mbuf *in[2], *out[2];
	uint64_t stamp;

	assert_int_equal(shp_pace_init(&p, US), 0);
	in[0] = cap_pkt(50, true);
	shp_pace_hold(&p, in, 1, 7000);
	assert_int_equal(shp_pace_release(&p, 7000, out, &stamp), 1);
	free_all(out, 1);
	/* the next burst is read much later: its time is still counted
	 * from the first packet, not from when it was read */
	in[0] = cap_pkt(1050, true);
	in[1] = cap_pkt(3050, true);
	shp_pace_hold(&p, in, 2, 900000);
	assert_int_equal(shp_pace_release(&p, 1006999, out, &stamp), 0);
	assert_int_equal(shp_pace_release(&p, 1007000, out, &stamp), 1);
	assert_int_equal(stamp, 1007000);
	free_all(out, 1);
	assert_int_equal(shp_pace_release(&p, 3006999, out, &stamp), 0);
	assert_int_equal(shp_pace_release(&p, 3007000, out, &stamp), 1);
	free_all(out, 1);
}

static void
test_backwards_and_unstamped_keep_order(void **state)
{
	static struct shp_pace p;
	struct rte_mbuf *in[4], *out[4];
	uint64_t stamp;
	int i;

	assert_int_equal(shp_pace_init(&p, US), 0);
	in[0] = cap_pkt(100, true);
	in[1] = cap_pkt(400, true);
	in[2] = cap_pkt(200, true);     /* earlier than the one before */
	in[3] = cap_pkt(0, false);      /* no time at all */
	shp_pace_hold(&p, in, 4, 0);
	assert_int_equal(shp_pace_release(&p, 0, out, &stamp), 1);
	free_all(out, 1);
	assert_int_equal(shp_pace_release(&p, 299999, out, &stamp), 0);
	/* both go with the packet before them: the queue stays FIFO */
	assert_int_equal(shp_pace_release(&p, 300000, out, &stamp), 3);
	for (i = 0; i < 3; i++)
		assert_ptr_equal(out[i], in[i + 1]);
	assert_int_equal(stamp, 300000);
	free_all(out, 3);
	assert_int_equal(p.backwards, 1);
	assert_int_equal(p.unstamped, 1);
}

static void
test_take_all_at_shutdown(void **state)
{
	static struct shp_pace p;
	struct rte_mbuf *in[3], *out[3];
	uint64_t stamp;
	int i;

	assert_int_equal(shp_pace_init(&p, US), 0);
	in[0] = cap_pkt(0, true);
	in[1] = cap_pkt(60000000, true);   /* a minute later */
	in[2] = cap_pkt(60000001, true);
	shp_pace_hold(&p, in, 3, 10);
	assert_int_equal(shp_pace_release(&p, 10, out, &stamp), 1);
	free_all(out, 1);
	assert_int_equal(shp_pace_take_all(&p, out), 2);
	for (i = 0; i < 2; i++)
		assert_ptr_equal(out[i], in[i + 1]);
	free_all(out, 2);
	assert_int_equal(shp_pace_held(&p), 0);
	assert_int_equal(shp_pace_take_all(&p, out), 0);
	shp_rig_assert_pool_full(shp_rig_pool);
}

int
main(void)
{
	static struct shp_pace p;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holds_until_offset),
		cmocka_unit_test(test_origin_kept_across_bursts),
		cmocka_unit_test(test_backwards_and_unstamped_keep_order),
		cmocka_unit_test(test_take_all_at_shutdown),
	};

	shp_rig_env("pace", 64);
	/* no driver registered a timestamp: nothing to pace by */
	if (shp_pace_init(&p, US) != -1) {
		fprintf(stderr, "shp_pace_init without the field: not -1\n");
		return 1;
	}
	if (rte_mbuf_dyn_rx_timestamp_register(&ts_off, &ts_flag) != 0) {
		fprintf(stderr, "cannot register the RX timestamp field\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
