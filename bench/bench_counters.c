/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed 003: per-lcore counters versus one shared atomic counter.
 *
 * Two lcores count the same number of "packets" (a packet and a byte
 * counter each) in three layouts, measured one after the other in one run:
 *   per-lcore: each lcore its own cache-aligned block, plain adds
 *              (this project's shp_stats.h);
 *   shared atomic: one pair of counters, __atomic_fetch_add by both;
 *   false sharing: per-lcore counters packed into one cache line.
 * Reading sums the blocks; the totals are checked so no variant cheats.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#define ITER (20 * 1000 * 1000)

struct block {
	volatile uint64_t packets;
	volatile uint64_t bytes;
} __rte_cache_aligned;

static struct block per_lcore[RTE_MAX_LCORE];
static struct { uint64_t packets, bytes; } shared __rte_cache_aligned;
static struct { volatile uint64_t packets, bytes; } packed[8]
	__rte_cache_aligned;
static volatile int mode, go;
static unsigned int done;
static uint64_t cycles[RTE_MAX_LCORE];
static unsigned int slot_of[RTE_MAX_LCORE];

static int
worker(void *arg)
{
	unsigned int lc = rte_lcore_id(), slot = slot_of[lc];
	uint64_t i, t0;

	(void)arg;
	while (!go)
		rte_pause();
	t0 = rte_rdtsc_precise();
	switch (mode) {
	case 0:
		for (i = 0; i < ITER; i++) {
			per_lcore[lc].packets++;
			per_lcore[lc].bytes += 64 + (i & 63);
		}
		break;
	case 1:
		for (i = 0; i < ITER; i++) {
			__atomic_fetch_add(&shared.packets, 1,
					   __ATOMIC_RELAXED);
			__atomic_fetch_add(&shared.bytes, 64 + (i & 63),
					   __ATOMIC_RELAXED);
		}
		break;
	case 2:
		for (i = 0; i < ITER; i++) {
			packed[slot].packets++;
			packed[slot].bytes += 64 + (i & 63);
		}
		break;
	}
	cycles[lc] = rte_rdtsc_precise() - t0;
	__atomic_fetch_add(&done, 1, __ATOMIC_RELEASE);
	return 0;
}

static double
run(int m, unsigned int *lcs, unsigned int n)
{
	unsigned int i;
	uint64_t total = 0, sum = 0;

	memset(per_lcore, 0, sizeof(per_lcore));
	memset(&shared, 0, sizeof(shared));
	memset((void *)packed, 0, sizeof(packed));
	mode = m;
	go = 0;
	for (i = 0; i < n; i++)
		rte_eal_remote_launch(worker, NULL, lcs[i]);
	done = 0;
	go = 1;
	/* the main lcore may share a CPU with a worker: sleep, not spin */
	while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < n)
		usleep(1000);
	rte_eal_mp_wait_lcore();
	for (i = 0; i < n; i++) {
		total += cycles[lcs[i]];
		sum += m == 0 ? per_lcore[lcs[i]].packets :
		       m == 2 ? packed[slot_of[lcs[i]]].packets : 0;
	}
	if (m == 1)
		sum = shared.packets;
	if (sum != (uint64_t)ITER * n) {
		fprintf(stderr, "count mismatch: %lu\n", (unsigned long)sum);
		return -1;
	}
	return (double)total / n / ITER;
}

int
main(int argc, char **argv)
{
	static const char *const names[] = {
		"per-lcore (ours)", "shared atomic", "false sharing"
	};
	unsigned int lcs[RTE_MAX_LCORE], n = 0, lc;
	double c[3];
	int m, round;

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	RTE_LCORE_FOREACH_WORKER(lc) {
		slot_of[lc] = n;
		lcs[n++] = lc;
	}
	if (n < 2) {
		fprintf(stderr, "needs two worker lcores, e.g. -l 0-2 or "
			"--lcores '(0-2)@(0-1)'\n");
		return 1;
	}
	n = 2;
	printf("counting on %u lcores, %d packets each, cycles per packet\n",
	       n, ITER);
	for (round = 0; round < 2; round++)   /* first round warms up */
		for (m = 0; m < 3; m++)
			c[m] = run(m, lcs, n);
	for (m = 0; m < 3; m++)
		printf("%-18s %8.2f  (x%.1f of per-lcore)\n", names[m], c[m],
		       c[m] / c[0]);
	rte_eal_cleanup();
	return 0;
}
