/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed 000: does a bitmap of non-empty bands beat scanning the band rings?
 *
 * Both variants move the same packets through the same rte_rings; they
 * differ only in how the consumer finds the first non-empty band:
 *   scan:   test rte_ring_empty() on band 0, 1, ... (Linux >= 4.16)
 *   bitmap: ctz() of a word producers set and the consumer clears
 *           (this project's sch_bands.c, fence included).
 * Traffic sits in the lowest band (the scan's worst case) or the highest
 * (its best), with 3 and 16 bands, dequeued one packet at a time (what
 * the token bucket does) and in bursts of 32.
 */
#include <stdio.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ring.h>

#define N_PKTS (1 << 22)
#define RING 1024
#define MAXB 16

static struct rte_ring *rings[MAXB];
static uint32_t bitmap;
static void *obj[64];

static inline void
enq_bitmap(unsigned int b, unsigned int n)
{
	rte_ring_sp_enqueue_burst(rings[b], obj, n, NULL);
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(&bitmap, __ATOMIC_RELAXED) & (1u << b)))
		__atomic_fetch_or(&bitmap, 1u << b, __ATOMIC_SEQ_CST);
}

static inline unsigned int
deq_bitmap(unsigned int burst)
{
	uint32_t bm = __atomic_load_n(&bitmap, __ATOMIC_ACQUIRE);

	while (bm) {
		unsigned int b = __builtin_ctz(bm);
		unsigned int k = rte_ring_sc_dequeue_burst(rings[b], obj,
							   burst, NULL);
		if (k)
			return k;
		__atomic_fetch_and(&bitmap, ~(1u << b), __ATOMIC_SEQ_CST);
		if (!rte_ring_empty(rings[b]))
			__atomic_fetch_or(&bitmap, 1u << b, __ATOMIC_SEQ_CST);
		else
			bm &= bm - 1;
	}
	return 0;
}

static inline void
enq_scan(unsigned int b, unsigned int n)
{
	rte_ring_sp_enqueue_burst(rings[b], obj, n, NULL);
}

static inline unsigned int
deq_scan(unsigned int nb, unsigned int burst)
{
	unsigned int b;

	for (b = 0; b < nb; b++) {
		if (rte_ring_empty(rings[b]))
			continue;
		return rte_ring_sc_dequeue_burst(rings[b], obj, burst, NULL);
	}
	return 0;
}

static double
run(int use_bitmap, unsigned int nb, unsigned int band, unsigned int burst)
{
	uint64_t t0, moved = 0;

	bitmap = 0;
	t0 = rte_rdtsc_precise();
	while (moved < N_PKTS) {
		unsigned int k;

		if (use_bitmap) {
			enq_bitmap(band, 32);
			while ((k = deq_bitmap(burst)) != 0)
				moved += k;
		} else {
			enq_scan(band, 32);
			while ((k = deq_scan(nb, burst)) != 0)
				moved += k;
		}
	}
	return (double)(rte_rdtsc_precise() - t0) / moved;
}

int
main(int argc, char **argv)
{
	static const unsigned int nbs[] = {3, 16};
	static const unsigned int bursts[] = {1, 32};
	unsigned int i, j, b;
	char name[32];

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	for (b = 0; b < MAXB; b++) {
		snprintf(name, sizeof(name), "bb%u", b);
		rings[b] = rte_ring_create(name, RING, SOCKET_ID_ANY,
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
	}
	printf("band choice, cycles per packet (enqueue 32 + dequeue), "
	       "%d packets each\n", N_PKTS);
	printf("%-6s %-6s %-10s %10s %10s %8s\n", "bands", "burst",
	       "traffic in", "scan", "bitmap", "ratio");
	for (i = 0; i < RTE_DIM(nbs); i++)
		for (j = 0; j < RTE_DIM(bursts); j++) {
			unsigned int where[2] = {0, nbs[i] - 1};
			int w;

			for (w = 0; w < 2; w++) {
				double s, m;

				/* warm up both, then measure side by side */
				run(0, nbs[i], where[w], bursts[j]);
				run(1, nbs[i], where[w], bursts[j]);
				s = run(0, nbs[i], where[w], bursts[j]);
				m = run(1, nbs[i], where[w], bursts[j]);
				printf("%-6u %-6u band %-5u %10.2f %10.2f "
				       "%8.3f\n", nbs[i], bursts[j], where[w],
				       s, m, s / m);
			}
		}
	printf("ratio = scan / bitmap (> 1: the bitmap is faster)\n");
	rte_eal_cleanup();
	return 0;
}
