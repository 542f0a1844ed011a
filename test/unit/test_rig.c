/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The harness itself (shp_rig.h): what the stage tests build on must say
 * what it says. A chain from tc text is the chain asked for and delivers
 * on the clock the stages give; the frames of a 5-tuple parse as such.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <cmocka.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "classify.h"
#include "sch_bands.h"
#include "shp_netem.h"
#include "shp_rig.h"
#include "shp_tbf.h"

/*
 * bands -> tbf -> netem in one line; 20 frames of 1000 B at once through
 * 'rate 1mbit burst 10kb' and 'delay 10ms': 10 leave on the bucket, the
 * 11th when 760 B more were earned (6.08 ms), then one every 8 ms: the
 * last at 6.08 + 9 * 8 = 78.08 ms, and 10 ms later out of netem.
 */
static void
test_chain(void **state)
{
	const uint64_t t0 = 1000000000;
	struct rte_mbuf *pkts[20];
	struct shp_rig r;

	(void)state;
	shp_rig_chain(&r, "bands 3 ring 64",
		      "tbf rate 1mbit burst 10kb limit 1mb",
		      "netem delay 10ms");
	assert_int_equal(r.nb_stages, 3);
	assert_ptr_equal(r.stage[0]->ops, &shp_bands_ops);
	assert_ptr_equal(shp_rig_find(&r, "tbf"), r.stage[1]);
	assert_ptr_equal(r.root, shp_rig_find(&r, "netem"));
	assert_ptr_equal(r.stage[1]->child, r.stage[0]);
	assert_ptr_equal(r.root->child, r.stage[1]);
	assert_int_equal(((struct shp_tbf_conf *)
			  shp_rig_conf(&r, "tbf"))->rate, 125000);
	assert_null(shp_rig_conf(&r, "fifo"));

	shp_rig_pkts(pkts, 20, 1000, 1, NULL, t0);
	assert_int_equal(shp_rig_enqueue_at(&r, t0, pkts, 20), 20);
	assert_int_equal(r.c->band[1].enqueued, 20);
	/* at t0 the bucket lets 10 into netem, which holds them */
	assert_int_equal(shp_rig_dequeue_at(&r, t0, pkts, 20), 0);
	assert_int_equal(shp_qdisc_qlen_total(r.root), 20);
	r.ctx.now = t0 + 10000000 - 1;
	assert_int_equal(shp_rig_poll(&r), 0);
	assert_int_equal(shp_rig_drain(&r), 20);
	assert_int_equal(r.out, 20);
	assert_int_equal(r.last_tts, t0 + 88080000);
	assert_int_equal(shp_qdisc_qlen_total(r.root), 0);
	shp_rig_fini(&r);
}

/* One stage alone, off, and on a port of its own: its counters only. */
static void
test_stage_alone(void **state)
{
	struct rte_mbuf *pkts[8];
	struct shp_rig a, b;

	(void)state;
	shp_rig_chain_port(&a, 2, "netem limit 5 delay 1ms");
	shp_rig_chain_port(&b, 3, "fifo", "netem");
	assert_int_equal(a.nb_stages, 1);
	assert_null(shp_rig_conf(&b, "netem"));   /* off */
	shp_rig_pkts(pkts, 8, 64, 0, NULL, 0);
	assert_int_equal(shp_rig_enqueue_at(&a, 0, pkts, 8), 5);
	assert_int_equal(a.c->drops[shp_drop_index("netem_limit")], 3);
	assert_int_equal(b.c->drops[shp_drop_index("netem_limit")], 0);
	shp_rig_pkts(pkts, 8, 64, 0, NULL, 0);
	shp_rig_enqueue_at(&b, 0, pkts, 8);
	/* off: straight through, at once */
	assert_int_equal(shp_rig_dequeue_at(&b, 0, pkts, 8), 8);
	rte_pktmbuf_free_bulk(pkts, 8);
	assert_int_equal(shp_rig_dequeue_at(&a, 999999, pkts, 8), 0);
	a.ctx.now = 1000000;
	assert_int_equal(shp_rig_poll(&a), 5);
	shp_rig_fini(&b);
	shp_rig_fini(&a);
}

/* A frame of a 5-tuple: where the classifier and a flow hash look. */
static void
test_flow_frames(void **state)
{
	struct shp_rig_flow f = {
		.tos = 0x10 | 2, .src = 0x0a000001, .dst = 0xc0a80102,
		.sport = 4242, .dport = 53, .flow_label = 0xabcde,
	};
	unsigned int v6, vlan;

	(void)state;
	for (v6 = 0; v6 < 2; v6++)
		for (vlan = 0; vlan < 2; vlan++) {
			struct rte_mbuf *m;
			uint8_t *p;
			uint32_t l3 = RTE_ETHER_HDR_LEN + 4 * vlan, l4;
			const struct rte_udp_hdr *uh;

			f.ipv6 = v6;
			f.vlan = vlan ? (5 << 13 | 100) : 0;
			shp_rig_pkts(&m, 1, 200, 2, &f, 77);
			assert_int_equal(shp_meta(m)->band, 2);
			assert_int_equal(shp_meta(m)->rx_ns, 77);
			assert_int_equal(rte_pktmbuf_pkt_len(m), 200);
			/* lowdelay: priority 6 by TOS, through the tag;
			 * PCP 5 (voice) is 6 too */
			assert_int_equal(shp_classify_prio(SHP_CLASSIFY_TOS, m),
					 6);
			if (vlan)
				assert_int_equal(shp_classify_prio(
						 SHP_CLASSIFY_PCP, m), 6);
			p = rte_pktmbuf_mtod(m, uint8_t *);
			if (v6) {
				const struct rte_ipv6_hdr *ip6 = (void *)(p + l3);
				uint32_t v = rte_be_to_cpu_32(ip6->vtc_flow);

				assert_int_equal(v, 6u << 28 | 0x12u << 20 |
						 0xabcde);
				assert_int_equal(ip6->proto, IPPROTO_UDP);
				assert_int_equal(ip6->src_addr[15], 0x01);
				assert_int_equal(ip6->dst_addr[12], 0xc0);
				assert_int_equal(rte_be_to_cpu_16(
					ip6->payload_len), 200 - l3 - 40);
				l4 = l3 + 40;
			} else {
				struct rte_ipv4_hdr *ip = (void *)(p + l3);
				uint16_t ck = ip->hdr_checksum;

				ip->hdr_checksum = 0;
				assert_int_equal(rte_ipv4_cksum(ip), ck);
				assert_int_equal(ip->src_addr,
						 rte_cpu_to_be_32(0x0a000001));
				assert_int_equal(ip->dst_addr,
						 rte_cpu_to_be_32(0xc0a80102));
				assert_int_equal(ip->type_of_service, 0x12);
				assert_int_equal(rte_be_to_cpu_16(
					ip->total_length), 200 - l3);
				l4 = l3 + 20;
			}
			uh = (const void *)(p + l4);
			assert_int_equal(rte_be_to_cpu_16(uh->src_port), 4242);
			assert_int_equal(rte_be_to_cpu_16(uh->dst_port), 53);
			rte_pktmbuf_free(m);
		}
	shp_rig_assert_pool_full(shp_rig_pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_stage_alone),
		cmocka_unit_test(test_flow_frames),
	};

	shp_rig_env("rig", 1024);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
