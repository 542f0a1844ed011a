/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The machine's own noise floor for timing: one thread spins reading the
 * TSC and counts the gaps between two reads, as a polling lcore would see
 * them (the host or the kernel took the CPU away). No emulator can keep
 * packets to a lateness below what these gaps impose: a gap of G us at R
 * Mpps makes about G*R packets late by up to G us. Figures only.
 *
 * It also prints that bound as percentiles: the lateness a sender that
 * costs nothing itself (it catches up at once after a gap) would see on a
 * steady stream of packets due at any rate, given these gaps. A packet due
 * t into a gap of length G leaves at its end, G - t late, so the share of
 * packets later than L is sum(max(0, G - L)) / T; the pXX bound is the L
 * where that share is 1 - XX/100. A real sender, which needs time to work
 * a backlog off, can only do worse; --late-drop is the way below it.
 *
 * Usage: bench_hiccup [SECONDS]   (default 10; pin it with taskset -c N
 *        to the CPU a worker lcore would use)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <rte_common.h>
#include <rte_cycles.h>

#define MAX_GAPS (1u << 20)

static uint64_t gaps[MAX_GAPS];
static unsigned int nb_gaps;

/* Lateness (TSC cycles) that a zero-cost sender exceeds for `share` of
 * the packets due over `span` cycles: the L with sum(max(0, G - L)) =
 * share * span, by bisection (the sum falls as L grows). */
static uint64_t
lateness_bound(double share, uint64_t span)
{
	uint64_t lo = 0, hi = 0;
	unsigned int i;

	for (i = 0; i < nb_gaps; i++)
		hi = RTE_MAX(hi, gaps[i]);
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		double over = 0;

		for (i = 0; i < nb_gaps; i++)
			over += gaps[i] > mid ? (double)(gaps[i] - mid) : 0;
		if (over > share * (double)span)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static double
tsc_hz(void)
{
	struct timespec a, b, d = { 0, 200000000 };
	uint64_t t0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	t0 = rte_rdtsc();
	nanosleep(&d, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (rte_rdtsc() - t0) /
	       ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
}

int
main(int argc, char **argv)
{
	static const double edge_us[] = { 10, 50, 100, 1000 };
	uint64_t count[RTE_DIM(edge_us)] = { 0 }, lost = 0, max = 0;
	double secs = argc > 1 ? atof(argv[1]) : 10, hz = tsc_hz();
	uint64_t edge[RTE_DIM(edge_us)], prev = rte_rdtsc(), start = prev;
	uint64_t end = prev + (uint64_t)(secs * hz);
	unsigned int i;

	for (i = 0; i < RTE_DIM(edge_us); i++)
		edge[i] = (uint64_t)(edge_us[i] * hz / 1e6);
	for (;;) {
		uint64_t t = rte_rdtsc(), gap = t - prev;

		prev = t;
		if (t > end)
			break;
		if (gap <= edge[0])
			continue;
		lost += gap;
		max = gap > max ? gap : max;
		if (nb_gaps < MAX_GAPS)
			gaps[nb_gaps++] = gap;
		for (i = 0; i < RTE_DIM(edge_us); i++)
			count[i] += gap > edge[i];
	}
	printf("%.0f s spinning: gaps > 10 us %" PRIu64 ", > 50 us %" PRIu64
	       ", > 100 us %" PRIu64 ", > 1 ms %" PRIu64 "; longest %.1f us;"
	       " time in gaps > 10 us %.3f%%\n", secs, count[0], count[1],
	       count[2], count[3], max / hz * 1e6, 100.0 * lost / hz / secs);
	printf("lateness a sender of no cost would see from these gaps (gaps"
	       " over 10 us only): p99 >= %.1f us, p99.9 >= %.1f us\n",
	       lateness_bound(0.01, end - start) / hz * 1e6,
	       lateness_bound(0.001, end - start) / hz * 1e6);
	return 0;
}
