/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 24: what sharing one link's bucket among its shards costs.
 *
 * Each lcore claims bursts of 32 frames of 64 bytes at 4 Tbit/s (more
 * than it can ask for, so nearly every claim takes its whole burst: the
 * cost of the bucket, not of waiting for it), ITER claims, in four
 * layouts measured one after the other in one run:
 *   private:      each lcore a bucket of its own in plain arithmetic (a
 *                 bucket per shard, tbf's state: no atomics);
 *   own shared:   each lcore its own shp_tbf_shared (the swap, no
 *                 contention);
 *   one shared:   every lcore the same shp_tbf_shared (contention: the
 *                 line moves between them at every claim);
 *   spaced: private and one shared with ~1 us of other work between
 *                 claims, as a shard that sends a burst of 32 every 1-2 us
 *                 does (the ratio is to private, spaced);
 *   put off:      one shared, each lcore with a deferral state of its own
 *                 (struct shp_tbf_defer, as the tbf stage claims: the
 *                 bucket, never near empty at this rate, is claimed from
 *                 once per quarter of its time), back to back and spaced.
 * Prints cycles per claim per lcore, the ratio to private, and the swaps
 * lost to another lcore. Never a test: figures only.
 *
 *   build/bench/bench_tbf_shared --no-huge -m 64 --no-pci --lcores 0@0,1@1
 *   build/bench/bench_tbf_shared --no-huge -m 64 --no-pci --lcores 0@0,1@0
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "shp_bucket.h"
#include "tbf_shared.h"

#define ITER (2 * 1000 * 1000)
#define BURST 32

struct private_bucket {
	int64_t tokens;
	uint64_t t_c;
} __rte_cache_aligned;

static struct shp_tbf_conf conf;
static struct shp_tbf_shared one, own[RTE_MAX_LCORE];
static struct private_bucket priv[RTE_MAX_LCORE];
static volatile int mode, go;
static unsigned int ready;
static uint64_t cycles[RTE_MAX_LCORE], frames[RTE_MAX_LCORE];
static struct shp_tbf_defer defer[RTE_MAX_LCORE];

static inline uint64_t
now_ns(void)
{
	return (uint64_t)((unsigned __int128)rte_rdtsc() * 1000000000u /
			  rte_get_tsc_hz());
}

static uint16_t
private_claim(struct private_bucket *b, const uint32_t *wire, uint16_t n,
	      uint64_t now)
{
	int64_t el = (int64_t)((now - b->t_c) << SHP_TBF_SHIFT);
	int64_t toks = RTE_MIN(conf.buffer_t, b->tokens + el);
	int64_t cost = shp_tbf_ticks(conf.rate_mult, wire[0]);
	uint16_t k;

	for (k = 0; k < n && toks >= cost; k++)
		toks -= cost;
	b->tokens = toks;
	b->t_c = now;
	return k;
}

static void
spin_ns(uint64_t ns)
{
	uint64_t end = rte_rdtsc() + ns * rte_get_tsc_hz() / 1000000000ull;

	while (rte_rdtsc() < end)
		;
}

static int
worker(void *arg)
{
	unsigned int lc = rte_lcore_id();
	uint32_t wire[BURST];
	uint64_t i, t0, next, got = 0;
	int i2;

	(void)arg;
	for (i2 = 0; i2 < BURST; i2++)
		wire[i2] = 64;
	__atomic_fetch_add(&ready, 1, __ATOMIC_RELEASE);
	while (!go)
		rte_pause();
	t0 = rte_rdtsc_precise();
	for (i = 0; i < ITER; i++) {
		uint64_t now = now_ns();

		switch (mode) {
		case 0:
			got += private_claim(&priv[lc], wire, BURST, now);
			break;
		case 1:
			got += shp_tbf_shared_claim(&own[lc], &conf, wire,
						    BURST, now, &next);
			break;
		case 2:
			got += shp_tbf_shared_claim(&one, &conf, wire, BURST,
						    now, &next);
			break;
		case 3:
			got += private_claim(&priv[lc], wire, BURST, now);
			spin_ns(1000);
			break;
		case 4:
			got += shp_tbf_shared_claim(&one, &conf, wire, BURST,
						    now, &next);
			spin_ns(1000);
			break;
		case 5:
			got += shp_tbf_shared_claim_defer(&one, &conf,
							  &defer[lc], wire,
							  BURST, now, &next);
			break;
		default:
			got += shp_tbf_shared_claim_defer(&one, &conf,
							  &defer[lc], wire,
							  BURST, now, &next);
			spin_ns(1000);
			break;
		}
	}
	cycles[lc] = rte_rdtsc_precise() - t0;
	frames[lc] = got;
	return 0;
}

static void
run(const char *name, int m, double *base)
{
	unsigned int lc, n = 0;
	uint64_t t = now_ns();
	double sum = 0;

	memset(priv, 0, sizeof(priv));
	memset(defer, 0, sizeof(defer));
	for (lc = 0; lc < RTE_MAX_LCORE; lc++) {
		priv[lc].tokens = conf.buffer_t;
		priv[lc].t_c = t;
		shp_tbf_shared_init(&own[lc], &conf, t);
	}
	shp_tbf_shared_init(&one, &conf, t);
	mode = m;
	go = 0;
	ready = 0;
	RTE_LCORE_FOREACH_WORKER(lc)
		rte_eal_remote_launch(worker, NULL, lc);
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < rte_lcore_count() - 1)
		rte_pause();
	go = 1;
	worker(NULL);
	rte_eal_mp_wait_lcore();
	printf("%-20s", name);
	RTE_LCORE_FOREACH(lc) {
		double c = (double)cycles[lc] / ITER;

		printf("  lcore %u: %7.1f cycles/claim (%5.2f frames)", lc, c,
		       (double)frames[lc] / ITER);
		sum += c;
		n++;
	}
	sum /= n;
	if (*base == 0)
		*base = sum;
	printf("  mean %.1f, x%.2f of private", sum, sum / *base);
	if (m == 2 || m >= 4)
		printf(", swaps lost %.2f%%",
		       100.0 * one.retries / (double)(one.claims + 1));
	printf("\n");
}

int
main(int argc, char **argv)
{
	char err[128];
	double base = 0;
	int r;

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	if (shp_tbf_parse("rate 4000gbit burst 1mb limit 100mb", &conf,
			  err) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("%u lcores, bursts of %d x 64 B at 4 Tbit/s, %d claims "
	       "each, TSC %.2f GHz\n", rte_lcore_count(), BURST, ITER,
	       rte_get_tsc_hz() / 1e9);
	for (r = 0; r < 2; r++) {
		double spaced = 0;

		base = 0;
		run("private", 0, &base);
		run("own shared", 1, &base);
		run("one shared", 2, &base);
		run("private, spaced", 3, &spaced);
		run("one shared, spaced", 4, &spaced);
		run("one shared, put off", 5, &base);
		run("put off, spaced", 6, &spaced);
	}
	rte_eal_cleanup();
	return 0;
}
