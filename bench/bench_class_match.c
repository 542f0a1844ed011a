/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 13: what finding a packet's class costs, with 1, 16, 256 and 4096
 * classes (one `dst_ip R/24` rule each, R random), against no classes (the
 * header walk alone, which any lookup pays). Bursts of 32 IPv4/UDP frames,
 * three in four to a class's /24, the rest elsewhere; the frames are
 * cycled so that they stay in cache as on an RX path.
 *
 * Usage: bench_class_match EAL-ARGS (e.g. --no-huge -m 512 --no-pci
 *        --file-prefix bcm -l 0) [-- quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "class_match.h"
#include "shp_meta.h"
#include "shp_rand.h"

#define N_PKTS 4096
#define BURST  32

static struct rte_mbuf *pkts[N_PKTS];
static uint16_t cls[N_PKTS];
static uint64_t n_bursts = 1 << 18;

/* An IPv4/UDP frame to dst (host order). */
static void
frame(struct rte_mbuf *m, uint32_t dst)
{
	uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, 64);

	if (p == NULL)
		rte_exit(1, "mbuf too small\n");
	memset(p, 0, 64);
	memset(p, 0x02, 12);
	p[12] = 0x08;
	p[14] = 0x45;
	p[23] = 17;
	p[26] = 192;
	p[27] = 0;
	p[28] = 2;
	p[29] = 1;
	p[30] = dst >> 24;
	p[31] = dst >> 16;
	p[32] = dst >> 8;
	p[33] = dst;
	p[34 + 1] = 99;
	p[34 + 3] = 53;
}

/* cycles per packet over n_bursts bursts; table NULL: the walk only */
static double
run(const struct shp_match_table *t, uint64_t *sum)
{
	struct shp_match_key k[BURST];
	uint64_t b, t0, s = 0;
	uint32_t at = 0, i;

	t0 = rte_rdtsc_precise();
	for (b = 0; b < n_bursts; b++) {
		if (t != NULL) {
			shp_match_lookup_burst(t, pkts + at, BURST, cls + at);
			s += cls[at];
		} else {
			for (i = 0; i < BURST; i++)
				shp_match_key_extract(pkts[at + i], &k[i]);
			s += k[0].dst[0];
		}
		at = (at + BURST) % N_PKTS;
	}
	*sum += s;
	return (double)(rte_rdtsc_precise() - t0) / (double)(n_bursts * BURST);
}

int
main(int argc, char **argv)
{
	static const uint32_t nclasses[] = {0, 1, 16, 256, 4096};
	static uint32_t nets[4096];
	char err[SHP_ERR_LEN], name[16], text[64];
	struct rte_mempool *mp;
	struct shp_rand g;
	uint64_t sum = 0;
	double hz, walk = 0;
	int used;
	size_t c;
	uint32_t i;

	used = rte_eal_init(argc, argv);
	if (used < 0)
		return 1;
	if (argc - used > 1 && strcmp(argv[used + 1], "quick") == 0)
		n_bursts = 1 << 12;
	hz = (double)rte_get_tsc_hz();
	mp = rte_pktmbuf_pool_create("bcm", N_PKTS * 2, 0, SHP_MBUF_PRIV_SIZE,
				     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (mp == NULL) {
		fprintf(stderr, "mbuf pool: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	shp_rand_seed(&g, 13, 0);
	/* distinct random /24s in 10/8 */
	for (i = 0; i < RTE_DIM(nets); i++) {
		uint32_t j, n;

		do {
			n = 10u << 24 | shp_rand_below(&g, 1 << 16) << 8;
			for (j = 0; j < i && nets[j] != n; j++)
				;
		} while (j < i);
		nets[i] = n;
	}
	printf("class lookup, bursts of %d IPv4/UDP frames, %llu bursts "
	       "each; rules: dst_ip over random /24s\n", BURST,
	       (unsigned long long)n_bursts);
	printf("%8s %10s %10s %10s %12s\n", "classes", "build ms", "Mpps",
	       "cyc/pkt", "vs walk");
	for (c = 0; c < RTE_DIM(nclasses); c++) {
		uint32_t n = nclasses[c];
		struct shp_match_set *s = shp_match_set_new();
		struct shp_match_table *t = NULL;
		uint64_t b0;
		double cyc, build_ms = 0;

		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "c%u", i);
			snprintf(text, sizeof(text), "dst_ip %u.%u.%u.0/24",
				 nets[i] >> 24, (nets[i] >> 16) & 0xff,
				 (nets[i] >> 8) & 0xff);
			if (shp_match_set_add(s, name, text, err) < 0) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
		}
		if (n > 0) {
			b0 = rte_rdtsc_precise();
			t = shp_match_table_create(s, SOCKET_ID_ANY, err);
			build_ms = (double)(rte_rdtsc_precise() - b0) / hz *
				   1e3;
			if (t == NULL) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
		}
		for (i = 0; i < N_PKTS; i++) {
			uint32_t dst = shp_rand_below(&g, 4) && n > 0 ?
				nets[shp_rand_below(&g, n)] :
				10u << 24 | shp_rand_below(&g, 1 << 16) << 8;

			if (pkts[i] != NULL)
				rte_pktmbuf_free(pkts[i]);
			pkts[i] = rte_pktmbuf_alloc(mp);
			frame(pkts[i], dst | shp_rand_below(&g, 256));
		}
		run(t, &sum);                 /* warm up */
		cyc = run(t, &sum);
		if (n == 0)
			walk = cyc;
		printf("%8u %10.2f %10.2f %10.1f %12.2f\n", n, build_ms,
		       hz / cyc / 1e6, cyc, cyc / walk);
		shp_match_table_free(t);
		shp_match_set_free(s);
	}
	printf("vs walk = cycles / the walk's cycles (no classes)%s\n",
	       sum == 42 ? " " : "");
	for (i = 0; i < N_PKTS; i++)
		rte_pktmbuf_free(pkts[i]);
	rte_eal_cleanup();
	return 0;
}
