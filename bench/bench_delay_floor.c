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
 * lib/sched/netem/netem_tq.c does. Figures only.
 *
 * Usage: bench_delay_floor [EAL args] [-- [-c] DEPTH...]   (needs ~1 GB;
 *        default depths 1e3 1e4 4e4 1.6e5, always 0 first)
 *        -c: also hold each packet by copy, as tlem does, side by side:
 *        the frame and the mbuf fields TX needs go into a 256-byte slot
 *        (a LIFO free list, so a slot just read is the next written), the
 *        mbuf is freed at once and a hot one taken at release. Release
 *        then reads two cold lines instead of four.
 *        -s W: release in a shuffled order, as jitter does: each packet
 *        held swaps places with one of the W held before it, at random
 *        (1 ms of jitter at 5 Mpps is W = 5000). The same cold lines are
 *        read, but in an order the allocation no longer predicts.
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
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "shp_meta.h"
#include "shp_pool.h"

#define BURST 32
#define PKTS 20000000ull

static uint8_t frame[64] = { 0x45 };
static uint64_t shuffle;   /* -s W */
static uint64_t rng = 88172645463325252ull;

/* Stalls between two releases in run(): a loop iteration takes about a
 * microsecond, so a gap over 100 us is the machine, not the work. The same
 * thresholds as bench_hiccup, which spins without touching memory: a stall
 * seen here and not there comes with touching hundreds of MB. */
static uint64_t gaps_100us, gaps_1ms, gap_max;

/* Mpps for one delay (packets in flight). */
static double
run(struct rte_mempool *mp, uint64_t delay, uint64_t *sink)
{
	uint64_t cap = rte_align64pow2(delay + 2 * BURST), head = 0, tail = 0;
	struct rte_mbuf **fifo = calloc(cap, sizeof(*fifo));
	struct rte_mbuf *in[BURST], *out[BURST];
	uint64_t done = 0, t0 = 0, sum = 0, sent = 0, last = 0;
	uint64_t hz = rte_get_tsc_hz();
	unsigned int i;

	gaps_100us = gaps_1ms = gap_max = 0;
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
			fifo[tail & (cap - 1)] = in[i];
			if (shuffle > 0 && tail > head) {
				uint64_t w = RTE_MIN(shuffle, tail - head);
				uint64_t j = tail - 1 - (rng >> 11) % w;
				struct rte_mbuf *x = fifo[j & (cap - 1)];

				rng ^= rng << 13;
				rng ^= rng >> 7;
				rng ^= rng << 17;
				fifo[j & (cap - 1)] = in[i];
				fifo[tail & (cap - 1)] = x;
			}
			tail++;
		}
		done += BURST;
		if (tail - head <= delay)
			continue;
		/* TX: the oldest burst; read what TX and free read */
		if (t0 != 0) {
			uint64_t now = rte_rdtsc();

			if (last != 0) {
				uint64_t g = now - last;

				gaps_100us += g > hz / 10000;
				gaps_1ms += g > hz / 1000;
				gap_max = RTE_MAX(gap_max, g);
			}
			last = now;
		}
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

/* What a copy keeps of a packet: the fields a PMD's TX and our TX read
 * (metadata included), then the frame. */
struct slot {
	uint64_t rx_ns;
	uint64_t ol_flags;
	uint64_t tx_offload;
	uint32_t packet_type;
	uint32_t rss;
	uint16_t len;
	uint16_t data_off;
	uint16_t port;
	uint16_t vlan_tci;
	uint8_t pad[64 - 40];
	uint8_t data[192];
};

static double
run_copy(struct rte_mempool *mp, uint64_t delay, uint64_t *sink)
{
	uint64_t cap = rte_align64pow2(delay + 2 * BURST), head = 0, tail = 0;
	uint32_t *fifo = calloc(cap, sizeof(*fifo));
	uint32_t *free_slots = calloc(cap, sizeof(*free_slots)), top = 0;
	struct slot *sl = rte_malloc(NULL, sizeof(*sl) * cap,
				     RTE_CACHE_LINE_SIZE);
	struct rte_mbuf *in[BURST], *out[BURST];
	uint64_t done = 0, t0 = 0, sum = 0, sent = 0;
	unsigned int i;

	if (fifo == NULL || free_slots == NULL || sl == NULL)
		exit(1);
	for (i = 0; i < cap; i++)
		free_slots[top++] = cap - 1 - i;
	while (done < PKTS + delay) {
		if (t0 == 0 && done >= delay) {
			t0 = rte_rdtsc();
			sent = 0;
		}
		/* RX as in run(), then into a slot and the mbuf back */
		if (rte_pktmbuf_alloc_bulk(mp, in, BURST) != 0) {
			fprintf(stderr, "pool empty\n");
			exit(1);
		}
		for (i = 0; i < BURST; i++) {
			struct rte_mbuf *m = in[i];
			uint32_t x = free_slots[--top];
			struct slot *s = &sl[x];

			memcpy(rte_pktmbuf_append(m, sizeof(frame)), frame,
			       sizeof(frame));
			shp_meta(m)->rx_ns = done;
			s->rx_ns = done;
			s->ol_flags = m->ol_flags;
			s->tx_offload = m->tx_offload;
			s->packet_type = m->packet_type;
			s->rss = m->hash.rss;
			s->len = m->data_len;
			s->data_off = m->data_off;
			s->port = m->port;
			s->vlan_tci = m->vlan_tci;
			memcpy(s->data, rte_pktmbuf_mtod(m, void *), s->len);
			fifo[tail++ & (cap - 1)] = x;
		}
		rte_pktmbuf_free_bulk(in, BURST);
		done += BURST;
		if (tail - head <= delay)
			continue;
		/* TX: rebuild the oldest burst in hot mbufs; prefetch the
		 * slots of the next */
		for (i = 0; i < BURST && head + BURST + i < tail; i++) {
			const char *p = (const char *)
				&sl[fifo[(head + BURST + i) & (cap - 1)]];

			rte_prefetch0(p);
			rte_prefetch0(p + RTE_CACHE_LINE_SIZE);
		}
		if (rte_pktmbuf_alloc_bulk(mp, out, BURST) != 0) {
			fprintf(stderr, "pool empty\n");
			exit(1);
		}
		for (i = 0; i < BURST; i++) {
			uint32_t x = fifo[head++ & (cap - 1)];
			const struct slot *s = &sl[x];
			struct rte_mbuf *m = out[i];

			m->data_off = s->data_off;
			m->data_len = s->len;
			m->pkt_len = s->len;
			m->ol_flags = s->ol_flags;
			m->tx_offload = s->tx_offload;
			m->packet_type = s->packet_type;
			m->hash.rss = s->rss;
			m->port = s->port;
			m->vlan_tci = s->vlan_tci;
			memcpy(rte_pktmbuf_mtod(m, void *), s->data, s->len);
			shp_meta(m)->rx_ns = s->rx_ns;
			free_slots[top++] = x;
		}
		for (i = 0; i < BURST; i++)
			sum += out[i]->pkt_len + shp_meta(out[i])->rx_ns +
			       *rte_pktmbuf_mtod(out[i], uint8_t *);
		rte_pktmbuf_free_bulk(out, BURST);
		sent += BURST;
	}
	*sink += sum;
	free(fifo);
	free(free_slots);
	rte_free(sl);
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
	bool copy = false;
	int n;

	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 1;
	}
	/* after "--": the depths to measure (0 first, as the reference) */
	i = n + 1;
	for (; i < (unsigned int)argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-c") == 0)
			copy = true;
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < (unsigned)argc)
			shuffle = strtoull(argv[++i], NULL, 10);
	}
	if (i < (unsigned int)argc) {
		nb = 1;
		delays[0] = 0;
		for (; i < (unsigned int)argc && nb < RTE_DIM(delays); i++)
			delays[nb++] = strtoull(argv[i], NULL, 10);
	}
	for (i = 0; i < nb; i++)
		most = RTE_MAX(most, delays[i]);
	/* laid out as the shaper's (shp_pool.h) */
	mp = shp_pool_create("floor", most + 40000 + 4096, 256,
			     SHP_MBUF_PRIV_SIZE, RTE_MBUF_DEFAULT_BUF_SIZE,
			     SOCKET_ID_ANY, NULL, shp_pool_pack_default());
	if (mp == NULL) {
		fprintf(stderr, "pool: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	printf("hold packets in a FIFO of mbufs, alloc+write / read+free, "
	       "one lcore, %llu packets per case", PKTS);
	if (shuffle > 0)
		printf(", released shuffled within %" PRIu64 " packets",
		       shuffle);
	printf("\n");
	printf("%12s %10s %14s %26s%s\n", "in flight", "Mpps", "vs in flight 0",
	       "stalls >100us >1ms longest",
	       copy ? "    copy Mpps  copy/mbufs" : "");
	for (i = 0; i < nb; i++) {
		double mpps = run(mp, delays[i], &sink);

		if (i == 0)
			base = mpps;
		printf("%12" PRIu64 " %10.2f %14.2f %13" PRIu64 " %4" PRIu64
		       " %6.0fus", delays[i], mpps, mpps / base, gaps_100us,
		       gaps_1ms, (double)gap_max * 1e6 / rte_get_tsc_hz());
		if (copy) {
			double c = run_copy(mp, delays[i], &sink);

			printf(" %12.2f %11.2f", c, c / mpps);
		}
		printf("\n");
		fflush(stdout);
	}
	rte_mempool_free(mp);
	rte_eal_cleanup();
	return sink == 42 ? 2 : 0;
}
