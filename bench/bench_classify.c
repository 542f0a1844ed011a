/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classify on the RX path: the header walker (lib/pkt/shp_pkthdr.h, what
 * shp_classify_burst_bands() uses since issue 12) against the reader it
 * replaced (classify.c's own flat parse, kept here as it was), same
 * frames, same burst loop, side by side; and the walker's full depth (the
 * 5-tuple, what a flow hash will pay).
 *
 * Frames: a mix of untagged IPv4/UDP, IPv6/TCP, one 802.1Q tag over IPv4
 * and two (802.1ad + 802.1Q) over IPv6, 1024 mbufs touched in bursts of
 * 32, so the headers are in cache as they are just after rte_eth_rx_burst.
 * Prints ns per packet; nothing is asserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "classify.h"
#include "shp_meta.h"
#include "shp_pkthdr.h"

#define N_MBUFS 1024
#define BURST 32
#define ROUNDS 4000   /* default; after --, another count */

static unsigned int rounds = ROUNDS;

/* ------------------------------------------- the reader it replaced */

static const uint8_t old_tos2prio[16] = {
	0, 1, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4,
};
static const uint8_t old_cs2prio[8] = { 0, 2, 0, 4, 4, 6, 7, 7 };
static const uint8_t old_pcp2prio[8] = { 0, 2, 0, 4, 4, 6, 7, 7 };

#define OLD_MAX_TAGS 4
#define OLD_MAX_HDR (RTE_ETHER_HDR_LEN + OLD_MAX_TAGS * 4 + 2)

static inline int
old_is_vlan(uint16_t et)
{
	return et == RTE_ETHER_TYPE_VLAN || et == RTE_ETHER_TYPE_QINQ ||
	       et == RTE_ETHER_TYPE_QINQ1 || et == RTE_ETHER_TYPE_QINQ2;
}

static inline uint8_t
old_prio_flat(enum shp_classify_mode mode, const uint8_t *p, uint32_t len)
{
	uint32_t off = 2 * RTE_ETHER_ADDR_LEN;
	uint16_t et;
	int tags = 0;
	int pcp = -1;
	uint8_t tos;

	for (;;) {
		if (off + 2 > len)
			return 0;
		et = (uint16_t)(p[off] << 8 | p[off + 1]);
		if (!old_is_vlan(et) || tags == OLD_MAX_TAGS)
			break;
		if (off + 4 > len)
			return 0;
		if (pcp < 0)
			pcp = p[off + 2] >> 5;
		tags++;
		off += 4;
	}
	if (mode == SHP_CLASSIFY_PCP)
		return pcp < 0 ? 0 : old_pcp2prio[pcp];
	off += 2;
	if (off + 2 > len)
		return 0;
	if (et == RTE_ETHER_TYPE_IPV4 && (p[off] >> 4) == 4)
		tos = p[off + 1];
	else if (et == RTE_ETHER_TYPE_IPV6 && (p[off] >> 4) == 6)
		tos = (uint8_t)((p[off] & 0x0f) << 4 | p[off + 1] >> 4);
	else
		return 0;
	if (mode == SHP_CLASSIFY_DSCP)
		return old_cs2prio[tos >> 5];
	return old_tos2prio[(tos & 0x1e) >> 1];
}

static inline uint8_t
old_prio_of(enum shp_classify_mode mode, const struct rte_mbuf *m)
{
	uint8_t buf[OLD_MAX_HDR];
	const uint8_t *p;
	uint32_t len;

	if (likely(m->data_len >= OLD_MAX_HDR || m->nb_segs == 1))
		return old_prio_flat(mode, rte_pktmbuf_mtod(m, const uint8_t *),
				     m->data_len);
	len = RTE_MIN(rte_pktmbuf_pkt_len(m), (uint32_t)OLD_MAX_HDR);
	p = rte_pktmbuf_read(m, 0, len, buf);
	return p == NULL ? 0 : old_prio_flat(mode, p, len);
}

/* The old shp_classify_burst_bands, around the old reader (a function
 * of its own like the new one, and for profilers to tell them apart). */
static __attribute__((noinline, noclone)) uint32_t
old_burst_bands(const struct shp_classifier *c, struct rte_mbuf **pkts,
		uint16_t n, uint64_t rx_ns, uint8_t *band, uint64_t *bytes)
{
	uint64_t sum = 0;
	uint32_t used = 0;
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t prio = old_prio_of(c->mode, m);
		uint8_t b = c->priomap[prio];

		sum += rte_pktmbuf_pkt_len(m);
		shp_meta_rx(m, rx_ns, prio, b);
		band[i] = b;
		used |= 1u << b;
	}
	*bytes = sum;
	return used;
}

/* ------------------------------------------------------------ frames */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static uint16_t
frame(uint8_t *f, unsigned int kind, unsigned int i)
{
	uint16_t o = 12;
	unsigned int t, ntags = kind == 2 ? 1 : kind == 3 ? 2 : 0;
	static const uint16_t tpid[] = { 0x88a8, 0x8100 };
	int v6 = kind & 1;

	memset(f, 0, 128);
	memset(f, 0x02, 12);
	for (t = 0; t < ntags; t++) {
		put16(f + o, ntags == 1 ? 0x8100 : tpid[t]);
		put16(f + o + 2, (uint16_t)((i & 7) << 13 | 100));
		o += 4;
	}
	put16(f + o, v6 ? 0x86dd : 0x0800);
	o += 2;
	if (v6) {
		f[o] = 0x60 | (i & 0xf);
		put16(f + o + 4, 20);
		f[o + 6] = 6;
		f[o + 23] = (uint8_t)i;
		o += 40;
	} else {
		f[o] = 0x45;
		f[o + 1] = (uint8_t)(i << 2);
		put16(f + o + 2, 28);
		f[o + 9] = 17;
		f[o + 15] = (uint8_t)i;
		o += 20;
	}
	put16(f + o, (uint16_t)(1024 + i));
	put16(f + o + 2, 80);
	return (uint16_t)(o + 20);
}

/* ------------------------------------------------------------- runs */

static struct rte_mbuf *pkts[N_MBUFS];
static volatile uint64_t sink;

enum variant { OLD, WALKER, WALK_L4 };

/* The walker to L4 over one burst: what a flow hash would pay. */
static __rte_noinline uint64_t
walk_l4(struct rte_mbuf **p, unsigned int n)
{
	uint64_t acc = 0;
	unsigned int k;

	for (k = 0; k < n; k++) {
		struct shp_pkthdr h;

		shp_pkthdr_parse(p[k], &h, SHP_PKTHDR_L4);
		acc += h.flags;
		if (h.flags & SHP_PKTHDR_F_PORTS)
			acc += h.sport ^ h.src.v4 ^ h.ip_proto;
	}
	return acc;
}

static double
run(enum variant v, const struct shp_classifier *c)
{
	uint8_t band[BURST];
	uint64_t t0, t1, bytes = 0, acc = 0;
	unsigned int r, i;

	t0 = rte_rdtsc_precise();
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < N_MBUFS; i += BURST) {
			if (v == OLD) {
				acc += old_burst_bands(c, pkts + i, BURST, r,
						       band, &bytes);
			} else if (v == WALKER) {
				acc += shp_classify_burst_bands(c, pkts + i,
								BURST, r, band,
								&bytes);
			} else {
				acc += walk_l4(pkts + i, BURST);
			}
			acc += bytes;
		}
	}
	t1 = rte_rdtsc_precise();
	sink = acc;
	return (double)(t1 - t0) * 1e9 / rte_get_tsc_hz() /
		((double)rounds * N_MBUFS);
}

int
main(int argc, char **argv)
{
	static const enum shp_classify_mode modes[] = {
		SHP_CLASSIFY_TOS, SHP_CLASSIFY_DSCP, SHP_CLASSIFY_PCP,
	};
	struct rte_mempool *mp;
	struct shp_classifier c;
	uint8_t f[128];
	unsigned int i, k;

	int n = rte_eal_init(argc, argv);

	if (n < 0)
		return 1;
	if (argc - n > 1)
		rounds = (unsigned int)atoi(argv[n + 1]);
	mp = rte_pktmbuf_pool_create("bc", N_MBUFS * 2, 0, SHP_MBUF_PRIV_SIZE,
				     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (mp == NULL)
		return 1;
	for (i = 0; i < N_MBUFS; i++) {
		uint16_t len = frame(f, i % 4, i);

		pkts[i] = rte_pktmbuf_alloc(mp);
		memcpy(rte_pktmbuf_append(pkts[i], len), f, len);
	}
	/* both readers agree on every frame and mode */
	for (k = 0; k < RTE_DIM(modes); k++)
		for (i = 0; i < N_MBUFS; i++)
			if (old_prio_of(modes[k], pkts[i]) !=
			    shp_classify_prio(modes[k], pkts[i])) {
				printf("frame %u mode %s: old %u, walker %u\n",
				       i, shp_classify_mode_name(modes[k]),
				       old_prio_of(modes[k], pkts[i]),
				       shp_classify_prio(modes[k], pkts[i]));
				return 1;
			}
	c.nb_bands = 3;
	shp_priomap_default(3, c.priomap);
	printf("classify, ns per packet (bursts of %d over %d mbufs, "
	       "%u rounds)\n", BURST, N_MBUFS, rounds);
	printf("%-6s %10s %10s %8s\n", "mode", "old", "walker", "ratio");
	for (k = 0; k < RTE_DIM(modes); k++) {
		double o, w;

		c.mode = modes[k];
		/* warm up both, then measure side by side */
		run(OLD, &c);
		run(WALKER, &c);
		o = run(OLD, &c);
		w = run(WALKER, &c);
		printf("%-6s %10.2f %10.2f %8.3f\n",
		       shp_classify_mode_name(modes[k]), o, w, o / w);
	}
	printf("ratio = old / walker (> 1: the walker is faster)\n");
	run(WALK_L4, &c);
	printf("walker to L4 (5-tuple), no classify: %.2f ns per packet\n",
	       run(WALK_L4, &c));
	rte_pktmbuf_free_bulk(pkts, N_MBUFS);
	rte_eal_cleanup();
	return 0;
}
