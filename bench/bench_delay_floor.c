/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The floor under any delay line made of mbufs: what it costs this machine
 * just to hold packets for a while, with no shaping at all.
 *
 * One lcore does what net_null + testpmd do per packet (allocate a burst
 * from the pool, write the header and 64 bytes of data, later read the
 * header, the metadata line and the data, and free it) with a plain FIFO of
 * mbuf pointers between the two halves: the packets freed now are the ones
 * allocated D packets ago. D = 0 is testpmd's case (every mbuf comes back
 * hot); D = 1.6e5 is 10 ms at 16 Mpps, the full-pipeline target. Reading
 * ahead is prefetched (headers and data of the next burst), as
 * lib/netem_tq.c does. Figures only.
 *
 * Usage: bench_delay_floor [EAL args] [-- DEPTH...]   (needs ~1 GB;
 *        default depths 1e3 1e4 4e4 1.6e5, always 0 first)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "shp_meta.h"

#define BURST 32
#define PKTS 20000000ull

static uint8_t frame[64] = { 0x45 };

/* Mpps for one delay (packets in flight). */
static double
run(struct rte_mempool *mp, uint64_t delay, uint64_t *sink)
{
	uint64_t cap = rte_align64pow2(delay + 2 * BURST), head = 0, tail = 0;
	struct rte_mbuf **fifo = calloc(cap, sizeof(*fifo));
	struct rte_mbuf *in[BURST], *out[BURST];
	uint64_t done = 0, t0 = 0, sum = 0, sent = 0;
	unsigned int i;

	if (fifo == NULL)
		exit(1);
	while (done < PKTS + delay) {
		if (t0 == 0 && done >= delay) {
			t0 = rte_rdtsc();
			sent = 0;
		}
		/* RX: a burst from the pool, header and data written */
		if (rte_pktmbuf_alloc_bulk(mp, in, BURST) != 0) {
			fprintf(stderr, "pool empty\n");
			exit(1);
		}
		for (i = 0; i < BURST; i++) {
			memcpy(rte_pktmbuf_append(in[i], sizeof(frame)), frame,
			       sizeof(frame));
			shp_meta(in[i])->rx_ns = done;
			fifo[tail++ & (cap - 1)] = in[i];
		}
		done += BURST;
		if (tail - head <= delay)
			continue;
		/* TX: the oldest burst; read what TX and free read */
		for (i = 0; i < BURST; i++)
			out[i] = fifo[head++ & (cap - 1)];
		for (i = 0; i < BURST && head + i < tail; i++) {
			char *m = (char *)fifo[(head + i) & (cap - 1)];

			rte_prefetch0(m);
			rte_prefetch0(m + RTE_CACHE_LINE_SIZE);
			rte_prefetch0(m + 2 * RTE_CACHE_LINE_SIZE);
			rte_prefetch0(m + sizeof(struct rte_mbuf) +
				      SHP_MBUF_PRIV_SIZE + RTE_PKTMBUF_HEADROOM);
		}
		for (i = 0; i < BURST; i++) {
			sum += out[i]->pkt_len + shp_meta(out[i])->rx_ns +
			       *rte_pktmbuf_mtod(out[i], uint8_t *);
		}
		rte_pktmbuf_free_bulk(out, BURST);
		sent += BURST;
	}
	*sink += sum;
	while (head != tail)
		rte_pktmbuf_free(fifo[head++ & (cap - 1)]);
	free(fifo);
	return (double)sent / ((double)(rte_rdtsc() - t0) /
			       rte_get_tsc_hz()) / 1e6;
}

int
main(int argc, char **argv)
{
	uint64_t delays[16] = { 0, 1000, 10000, 40000, 160000 }, sink = 0;
	unsigned int i, nb = 5;
	uint64_t most = 0;
	struct rte_mempool *mp;
	double base = 0;
	int n;

	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 1;
	}
	/* after "--": the depths to measure (0 first, as the reference) */
	if (n + 1 < argc) {
		nb = 1;
		delays[0] = 0;
		for (i = n + 1; i < (unsigned int)argc && nb < RTE_DIM(delays);
		     i++)
			delays[nb++] = strtoull(argv[i], NULL, 10);
	}
	for (i = 0; i < nb; i++)
		most = RTE_MAX(most, delays[i]);
	mp = rte_pktmbuf_pool_create("floor", most + 40000 + 4096, 256,
				     SHP_MBUF_PRIV_SIZE,
				     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (mp == NULL) {
		fprintf(stderr, "pool: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	printf("hold packets in a FIFO of mbufs, alloc+write / read+free, "
	       "one lcore, %llu packets per case\n", PKTS);
	printf("%12s %10s %14s\n", "in flight", "Mpps", "vs in flight 0");
	for (i = 0; i < nb; i++) {
		double mpps = run(mp, delays[i], &sink);

		if (i == 0)
			base = mpps;
		printf("%12" PRIu64 " %10.2f %14.2f\n", delays[i], mpps,
		       mpps / base);
		fflush(stdout);
	}
	rte_mempool_free(mp);
	rte_eal_cleanup();
	return sink == 42 ? 2 : 0;
}
