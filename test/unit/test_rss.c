/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RSS as a default-configured NIC does it (lib/pkt/shp_rss.h): the
 * Toeplitz hashes of the RSS specification's verification examples,
 * over IPv4 and IPv6, with and without ports, behind VLAN tags; the
 * redirection table; what is not IP, and later fragments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "shp_rig.h"
#include "shp_rss.h"

/* An Ethernet frame with ntags VLAN tags, then IPv4 (or IPv6) proto from
 * src:sport to dst:dport, 100 bytes of IP packet. */
static struct rte_mbuf *
frame(int v6, const char *src, const char *dst, uint8_t proto,
      uint16_t sport, uint16_t dport, int ntags, uint16_t frag)
{
	struct rte_mbuf *m = shp_rig_pkt(14 + 4 * ntags + 100, 0, 0);
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *), *l3;
	int i;

	memset(p, 0, 14 + 4 * ntags + 100);
	for (i = 0; i < ntags; i++) {
		p[12 + 4 * i] = 0x81;
		p[13 + 4 * i] = 0x00;
		p[15 + 4 * i] = (uint8_t)(10 + i);
	}
	p[12 + 4 * ntags] = v6 ? 0x86 : 0x08;
	p[13 + 4 * ntags] = v6 ? 0xdd : 0x00;
	l3 = p + 14 + 4 * ntags;
	if (!v6) {
		l3[0] = 0x45;
		l3[3] = 100;
		l3[6] = (uint8_t)(frag >> 8);
		l3[7] = (uint8_t)frag;
		l3[9] = proto;
		assert_int_equal(inet_pton(AF_INET, src, l3 + 12), 1);
		assert_int_equal(inet_pton(AF_INET, dst, l3 + 16), 1);
		l3 += 20;
	} else {
		l3[0] = 0x60;
		l3[5] = 60;
		l3[6] = proto;
		assert_int_equal(inet_pton(AF_INET6, src, l3 + 8), 1);
		assert_int_equal(inet_pton(AF_INET6, dst, l3 + 24), 1);
		l3 += 40;
	}
	l3[0] = (uint8_t)(sport >> 8);
	l3[1] = (uint8_t)sport;
	l3[2] = (uint8_t)(dport >> 8);
	l3[3] = (uint8_t)dport;
	return m;
}

static const struct {
	int v6;
	const char *dst, *src;
	uint16_t dport, sport;
	uint32_t l3, l4;
} vec[] = {
	{ 0, "161.142.100.80", "66.9.149.187", 1766, 2794,
	  0x323e8fc2, 0x51ccc178 },
	{ 0, "65.69.140.83", "199.92.111.2", 4739, 14230,
	  0xd718262a, 0xc626b0ea },
	{ 0, "12.22.207.184", "24.19.198.95", 38024, 12898,
	  0xd2d0a5de, 0x5c2b394a },
	{ 0, "209.142.163.6", "38.27.205.30", 2217, 48228,
	  0x82989176, 0xafc7327f },
	{ 0, "202.188.127.2", "153.39.163.191", 1303, 44251,
	  0x5d1809c5, 0x10e828a2 },
	{ 1, "3ffe:2501:200:3::1", "3ffe:2501:200:1fff::7", 1766, 2794,
	  0x2cc18cd5, 0x40207d3d },
	{ 1, "ff02::1", "3ffe:501:8::260:97ff:fe40:efab", 4739, 14230,
	  0x0f0c461c, 0xdde51bbf },
	{ 1, "fe80::200:f8ff:fe21:67cf", "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
	  38024, 44251, 0x4b61e985, 0x02d1feef },
};

/* The specification's examples: TCP hashes the ports, ICMP does not
 * (the addresses' hash), and tags in front change nothing. */
static void
test_spec_vectors(void **state)
{
	struct shp_rss r;
	unsigned int i, tags;
	int ip;

	(void)state;
	shp_rss_init(&r, 4, NULL);
	for (i = 0; i < RTE_DIM(vec); i++)
		for (tags = 0; tags <= 2; tags++) {
			struct rte_mbuf *tcp = frame(vec[i].v6, vec[i].src,
						     vec[i].dst, 6,
						     vec[i].sport,
						     vec[i].dport, tags, 0);
			struct rte_mbuf *icmp = frame(vec[i].v6, vec[i].src,
						      vec[i].dst,
						      vec[i].v6 ? 58 : 1,
						      vec[i].sport,
						      vec[i].dport, tags, 0);

			assert_int_equal(shp_rss_hash(&r, tcp, &ip),
					 vec[i].l4);
			assert_true(ip);
			assert_int_equal(shp_rss_hash(&r, icmp, &ip),
					 vec[i].l3);
			/* the table's entry hash mod 128, dealt round
			 * robin over 4 */
			assert_int_equal(shp_rss_queue(&r, tcp),
					 (vec[i].l4 & 127) % 4);
			rte_pktmbuf_free(tcp);
			rte_pktmbuf_free(icmp);
		}
}

/* UDP hashes its ports as TCP does; a later IPv4 fragment (no transport
 * header) hashes the addresses only, so it may land apart from its
 * first fragment, as on a NIC; what is not IP goes to queue 0; one queue
 * takes everything. */
static void
test_udp_fragments_non_ip(void **state)
{
	struct shp_rss r, one;
	struct rte_mbuf *udp, *later, *arp;
	int ip;

	(void)state;
	shp_rss_init(&r, 3, NULL);
	shp_rss_init(&one, 1, NULL);
	udp = frame(0, vec[0].src, vec[0].dst, 17, vec[0].sport,
		    vec[0].dport, 0, 0);
	later = frame(0, vec[0].src, vec[0].dst, 17, vec[0].sport,
		      vec[0].dport, 0, 0x0010);
	assert_int_equal(shp_rss_hash(&r, udp, &ip), vec[0].l4);
	assert_int_equal(shp_rss_hash(&r, later, &ip), vec[0].l3);
	assert_int_equal(shp_rss_queue(&r, udp), (vec[0].l4 & 127) % 3);
	arp = shp_rig_pkt(60, 0, 0);
	memset(rte_pktmbuf_mtod(arp, uint8_t *), 0, 60);
	rte_pktmbuf_mtod(arp, uint8_t *)[12] = 0x08;
	rte_pktmbuf_mtod(arp, uint8_t *)[13] = 0x06;
	assert_int_equal(shp_rss_hash(&r, arp, &ip), 0);
	assert_false(ip);
	assert_int_equal(shp_rss_queue(&r, arp), 0);
	assert_int_equal(shp_rss_queue(&one, udp), 0);
	assert_int_equal(shp_rss_queue(&one, later), 0);
	rte_pktmbuf_free(udp);
	rte_pktmbuf_free(later);
	rte_pktmbuf_free(arp);
}

/* 64 flows over 2 queues: each flow's frames all in one queue, and both
 * queues used. */
static void
test_flows_stay(void **state)
{
	struct shp_rss r;
	unsigned int f, used[2] = { 0, 0 };
	uint64_t x = 42;

	(void)state;
	shp_rss_init(&r, 2, NULL);
	for (f = 0; f < 64; f++) {
		char src[32];
		struct rte_mbuf *a, *b;
		uint16_t q;

		uint16_t sport;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		snprintf(src, sizeof(src), "10.%u.%u.%u",
			 (unsigned int)(x >> 56), (unsigned int)(x >> 48) & 255,
			 (unsigned int)(x >> 40) & 255);
		sport = (uint16_t)(x >> 20);
		a = frame(0, src, "10.1.0.1", 17, sport, 9, 0, 0);
		b = frame(0, src, "10.1.0.1", 17, sport, 9, 1, 0);
		q = shp_rss_queue(&r, a);
		assert_int_equal(shp_rss_queue(&r, b), q);
		used[q]++;
		rte_pktmbuf_free(a);
		rte_pktmbuf_free(b);
	}
	assert_true(used[0] > 10 && used[1] > 10);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_vectors),
		cmocka_unit_test(test_udp_fragments_non_ip),
		cmocka_unit_test(test_flows_stay),
	};

	shp_rig_env("rss", 4096);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
