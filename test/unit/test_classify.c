/* SPDX-License-Identifier: BSD-3-Clause */
/* Classifier over real header layouts, including every malformed case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "classify.h"
#include "shp_rig.h"

/* Frame builder: dst, src, then tags and an L3 header. */
static size_t
eth(uint8_t *f, const uint16_t *tags, int ntags, uint16_t et)
{
	size_t o = 12;
	int i;

	memset(f, 0x02, 12);
	for (i = 0; i < ntags; i++) {
		f[o] = tags[2 * i] >> 8;
		f[o + 1] = tags[2 * i] & 0xff;
		f[o + 2] = tags[2 * i + 1] >> 8;
		f[o + 3] = tags[2 * i + 1] & 0xff;
		o += 4;
	}
	f[o] = et >> 8;
	f[o + 1] = et & 0xff;
	return o + 2;
}

static size_t
ipv4(uint8_t *f, size_t o, uint8_t tos)
{
	memset(f + o, 0, 20);
	f[o] = 0x45;
	f[o + 1] = tos;
	f[o + 9] = 17;
	return o + 20;
}

static size_t
ipv6(uint8_t *f, size_t o, uint8_t tc, uint8_t nh)
{
	memset(f + o, 0, 40);
	f[o] = 0x60 | (tc >> 4);
	f[o + 1] = (uint8_t)(tc << 4);
	f[o + 6] = nh;
	return o + 40;
}

static struct rte_mbuf *
mk(const uint8_t *f, size_t len)
{
	struct rte_mbuf *m = shp_rig_pkt(len, 0, 0);

	memcpy(rte_pktmbuf_mtod(m, void *), f, len);
	return m;
}

/* The same frame split into segments of `seg` bytes. */
static struct rte_mbuf *
mk_segs(const uint8_t *f, size_t len, size_t seg)
{
	struct rte_mbuf *head = NULL;
	size_t o;

	for (o = 0; o < len; o += seg) {
		size_t k = RTE_MIN(seg, len - o);
		struct rte_mbuf *m = mk(f + o, k);

		if (head == NULL)
			head = m;
		else
			assert_int_equal(rte_pktmbuf_chain(head, m), 0);
	}
	return head;
}

struct tcase {
	const char *name;
	enum shp_classify_mode mode;
	int layout;       /* see build() */
	uint8_t val;      /* tos / tc / pcp */
	size_t cut;       /* truncate to this many bytes (0: whole) */
	uint8_t want;
};

enum { L_V4, L_V6, L_VLAN_V4, L_QINQ_V6, L_ARP, L_V6_EXT, L_VLAN_ONLY };

static size_t
build(uint8_t *f, int layout, uint8_t val)
{
	uint16_t vlan[] = { 0x8100, (uint16_t)(val << 13 | 100) };
	uint16_t qinq[] = { 0x88a8, (uint16_t)(val << 13 | 5),
			    0x8100, (uint16_t)(1 << 13 | 6) };
	size_t o;

	switch (layout) {
	case L_V4:
		return ipv4(f, eth(f, NULL, 0, 0x0800), val) + 26;
	case L_V6:
		return ipv6(f, eth(f, NULL, 0, 0x86dd), val, 17) + 8;
	case L_VLAN_V4:
		/* PCP carries val; the inner TOS is 0x10 (lowdelay) */
		return ipv4(f, eth(f, vlan, 1, 0x0800), 0x10) + 26;
	case L_QINQ_V6:
		return ipv6(f, eth(f, qinq, 2, 0x86dd), 0x08, 17) + 8;
	case L_ARP:
		o = eth(f, NULL, 0, 0x0806);
		memset(f + o, 0x10, 28);
		return o + 28;
	case L_V6_EXT:
		/* hop-by-hop then fragment headers: TC is still in the
		 * fixed header */
		o = ipv6(f, eth(f, NULL, 0, 0x86dd), val, 0);
		memset(f + o, 0, 16);
		f[o] = 44;
		f[o + 8] = 17;
		return o + 24;
	case L_VLAN_ONLY:
		/* a tag and then nothing */
		return eth(f, vlan, 1, 0x0800);
	}
	return 0;
}

static const struct tcase cases[] = {
	/* TOS through ip_tos2prio (Linux pfifo_fast defaults) */
	{"v4 tos 0x00", SHP_CLASSIFY_TOS, L_V4, 0x00, 0, 0},
	{"v4 tos 0x10 lowdelay", SHP_CLASSIFY_TOS, L_V4, 0x10, 0, 6},
	{"v4 tos 0x08 throughput", SHP_CLASSIFY_TOS, L_V4, 0x08, 0, 2},
	{"v4 tos 0x18", SHP_CLASSIFY_TOS, L_V4, 0x18, 0, 4},
	{"v4 tos 0x02 mincost", SHP_CLASSIFY_TOS, L_V4, 0x02, 0, 1},
	{"v4 tos 0x04 reliability", SHP_CLASSIFY_TOS, L_V4, 0x04, 0, 0},
	{"v4 EF 0xb8 by tos", SHP_CLASSIFY_TOS, L_V4, 0xb8, 0, 4},
	{"v6 tc 0x10", SHP_CLASSIFY_TOS, L_V6, 0x10, 0, 6},
	{"v6 tc 0x08", SHP_CLASSIFY_TOS, L_V6, 0x08, 0, 2},
	{"v6 ext headers", SHP_CLASSIFY_TOS, L_V6_EXT, 0x10, 0, 6},
	{"vlan inner ip", SHP_CLASSIFY_TOS, L_VLAN_V4, 5, 0, 6},
	{"qinq inner ip", SHP_CLASSIFY_TOS, L_QINQ_V6, 7, 0, 2},
	/* DSCP class selector */
	{"dscp EF", SHP_CLASSIFY_DSCP, L_V4, 0xb8, 0, 6},
	{"dscp AF41", SHP_CLASSIFY_DSCP, L_V4, 0x88, 0, 4},
	{"dscp CS1", SHP_CLASSIFY_DSCP, L_V6, 0x20, 0, 2},
	{"dscp CS6", SHP_CLASSIFY_DSCP, L_V4, 0xc0, 0, 7},
	{"dscp BE", SHP_CLASSIFY_DSCP, L_V4, 0x00, 0, 0},
	/* PCP */
	{"pcp 5 voice", SHP_CLASSIFY_PCP, L_VLAN_V4, 5, 0, 6},
	{"pcp 1 background", SHP_CLASSIFY_PCP, L_VLAN_V4, 1, 0, 2},
	{"pcp outer tag of qinq", SHP_CLASSIFY_PCP, L_QINQ_V6, 7, 0, 7},
	{"pcp untagged", SHP_CLASSIFY_PCP, L_V4, 0x10, 0, 0},
	{"none", SHP_CLASSIFY_NONE, L_V4, 0x10, 0, 0},
	/* malformed: unknown means priority 0 */
	{"arp", SHP_CLASSIFY_TOS, L_ARP, 0, 0, 0},
	{"runt 10 bytes", SHP_CLASSIFY_TOS, L_V4, 0x10, 10, 0},
	{"cut in ethertype", SHP_CLASSIFY_TOS, L_V4, 0x10, 13, 0},
	{"cut before tos", SHP_CLASSIFY_TOS, L_V4, 0x10, 15, 0},
	{"cut in vlan tag", SHP_CLASSIFY_TOS, L_VLAN_V4, 5, 15, 0},
	{"vlan then nothing", SHP_CLASSIFY_TOS, L_VLAN_ONLY, 5, 0, 0},
	{"pcp cut in tag", SHP_CLASSIFY_PCP, L_VLAN_V4, 5, 14, 0},
	{"v6 cut in tc", SHP_CLASSIFY_TOS, L_V6, 0x10, 15, 0},
	{"empty frame", SHP_CLASSIFY_TOS, L_V4, 0x10, 0xffff, 0},
};

static void
test_table(void **state)
{
	uint8_t f[256];
	unsigned int i;

	(void)state;
	for (i = 0; i < RTE_DIM(cases); i++) {
		const struct tcase *c = &cases[i];
		size_t len = build(f, c->layout, c->val);
		struct rte_mbuf *m;
		uint8_t prio;

		if (c->cut == 0xffff)
			len = 0;
		else if (c->cut)
			len = c->cut;
		m = mk(f, len);
		prio = shp_classify_prio(c->mode, m);
		if (prio != c->want)
			fail_msg("%s: prio %u, want %u", c->name, prio,
				 c->want);
		rte_pktmbuf_free(m);
		/* the same frame in 1-byte and 7-byte segments */
		if (len > 0) {
			m = mk_segs(f, len, 1);
			assert_int_equal(shp_classify_prio(c->mode, m),
					 c->want);
			rte_pktmbuf_free(m);
			m = mk_segs(f, len, 7);
			assert_int_equal(shp_classify_prio(c->mode, m),
					 c->want);
			rte_pktmbuf_free(m);
		}
	}
}

static void
test_jumbo(void **state)
{
	static uint8_t f[9000];
	struct rte_mbuf *m;

	(void)state;
	build(f, L_V4, 0x10);
	m = mk_segs(f, sizeof(f), 2000);
	assert_int_equal(m->nb_segs, 5);
	assert_int_equal(shp_classify_prio(SHP_CLASSIFY_TOS, m), 6);
	rte_pktmbuf_free(m);
}

static void
test_burst_priomap(void **state)
{
	struct shp_classifier c = { .mode = SHP_CLASSIFY_TOS, .nb_bands = 3 };
	const uint8_t tos[] = { 0x10, 0x00, 0x08, 0x18 };
	const uint8_t want[] = { 0, 1, 2, 1 };
	struct rte_mbuf *m[4];
	uint8_t f[256];
	int i;

	(void)state;
	shp_priomap_default(3, c.priomap);
	for (i = 0; i < 4; i++)
		m[i] = mk(f, build(f, L_V4, tos[i]));
	shp_classify_burst(&c, m, 4, 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(shp_meta(m[i])->band, want[i]);
		rte_pktmbuf_free(m[i]);
	}
}

/* An mbuf comes back from the pool with whatever send time netem gave it
 * last: RX must clear it, or TX would measure a lateness for a packet
 * netem never held (issue 9). Both RX paths (with and without a
 * classifier). */
static void
test_rx_clears_send_time(void **state)
{
	struct shp_classifier c = { .mode = SHP_CLASSIFY_TOS, .nb_bands = 3 };
	struct rte_mbuf *m[2];
	uint8_t f[256], band[2];
	uint64_t bytes;
	int mode, i;

	(void)state;
	shp_priomap_default(3, c.priomap);
	for (mode = 0; mode < 2; mode++) {
		c.mode = mode ? SHP_CLASSIFY_NONE : SHP_CLASSIFY_TOS;
		for (i = 0; i < 2; i++) {
			m[i] = mk(f, build(f, L_V4, 0));
			shp_meta(m[i])->time_to_send = 123456789;
		}
		shp_classify_burst_bands(&c, m, 2, 1000, band, &bytes);
		for (i = 0; i < 2; i++) {
			assert_int_equal(shp_meta(m[i])->time_to_send, 0);
			assert_int_equal(shp_meta(m[i])->rx_ns, 1000);
			rte_pktmbuf_free(m[i]);
		}
	}
}

static void
test_priomap(void **state)
{
	uint8_t map[16], d[16];
	char err[SHP_ERR_LEN];
	const uint8_t linux3[16] = {1, 2, 2, 2, 1, 2, 0, 0,
				    1, 1, 1, 1, 1, 1, 1, 1};
	int i;

	(void)state;
	shp_priomap_default(3, d);
	assert_memory_equal(d, linux3, 16);
	shp_priomap_default(1, d);
	for (i = 0; i < 16; i++)
		assert_int_equal(d[i], 0);
	shp_priomap_default(2, d);
	assert_int_equal(d[1], 1);
	assert_int_equal(d[6], 0);
	assert_int_equal(shp_priomap_parse("0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3",
					   4, map, err), 0);
	assert_int_equal(map[3], 3);
	assert_int_equal(shp_priomap_parse("0 1 2 0 1 2 0 1 2 0 1 2 0 1 2 0",
					   3, map, err), 0);
	assert_int_equal(shp_priomap_parse("0,1,2", 3, map, err), -1);
	assert_non_null(strstr(err, "16"));
	assert_int_equal(shp_priomap_parse("0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3",
					   3, map, err), -1);
	assert_non_null(strstr(err, "out of range"));
	assert_int_equal(shp_priomap_parse("0,1,x,3,0,1,2,3,0,1,2,3,0,1,2,3",
					   4, map, err), -1);
	assert_non_null(strstr(err, "'x'"));
	assert_int_equal(shp_priomap_parse(
		"0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3,0", 4, map, err), -1);
	assert_int_equal(shp_priomap_parse("-1,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3",
					   4, map, err), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_jumbo),
		cmocka_unit_test(test_burst_priomap),
		cmocka_unit_test(test_rx_clears_send_time),
		cmocka_unit_test(test_priomap),
	};

	shp_rig_env("classify", 4096);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
