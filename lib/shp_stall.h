/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stalls: loops of a worker that took far longer than any work it does.
 *
 * Why: a worker's loop is bounded (a TX budget, one RX burst per queue)
 * and takes microseconds; tens to hundreds under load. A loop that took a
 * millisecond or more did not work that long: the CPU was taken away (a
 * VM's vCPU descheduled by its host, a kernel thread, SIGSTOP). Packets due
 * meanwhile leave late by up to the stall, and neither the profile nor
 * the load caused it. On the 2-vCPU VM these figures come from, such
 * stalls of 0.5-20 ms hit a worker several times a minute while a spinning
 * loop that touches no memory sees none (bench_hiccup, bench_delay_floor),
 * and they set the lateness tail: so each worker counts them, and the
 * stats file and the exit summary say so next to the lateness.
 *
 * Single writer (the worker); readers take plain 64-bit loads.
 */
#ifndef SHP_STALL_H
#define SHP_STALL_H

#include <stdint.h>

#define SHP_STALL_NS 1000000ull   /* a loop this long was not work */

struct shp_stalls {
	uint64_t last;      /* TSC at the previous loop's start; 0: none yet */
	uint64_t limit;     /* SHP_STALL_NS in TSC cycles */
	uint64_t count;     /* loops longer than limit */
	uint64_t cycles;    /* their total length */
	uint64_t longest;   /* the longest loop, stalled or not */
};

static inline void
shp_stalls_init(struct shp_stalls *st, uint64_t tsc_hz)
{
	st->last = 0;
	st->limit = tsc_hz / (1000000000ull / SHP_STALL_NS);
	st->count = 0;
	st->cycles = 0;
	st->longest = 0;
}

/* A loop starts at `tsc`: the one before it took tsc - last. */
static inline void
shp_stall_mark(struct shp_stalls *st, uint64_t tsc)
{
	uint64_t d = tsc - st->last;

	if (st->last != 0 && tsc > st->last) {
		if (d > st->longest)
			st->longest = d;
		if (d > st->limit) {
			st->count++;
			st->cycles += d;
		}
	}
	st->last = tsc;
}

/* As reported (ns); `loops` is the worker's own count. */
struct shp_stall_sum {
	unsigned int lcore;
	uint64_t loops;
	uint64_t stalls;        /* loops over SHP_STALL_NS */
	uint64_t stalled_ns;    /* their total */
	uint64_t longest_ns;    /* the longest loop */
	int socket;             /* the lcore's NUMA socket */
};

static inline void
shp_stalls_sum(const struct shp_stalls *st, uint64_t tsc_hz,
	       struct shp_stall_sum *out)
{
	out->stalls = st->count;
	out->stalled_ns = (uint64_t)((double)st->cycles * 1e9 / tsc_hz);
	out->longest_ns = (uint64_t)((double)st->longest * 1e9 / tsc_hz);
}

#endif
