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
/*
 * Shorter losses count too, as hiccups: a loop over SHP_HICCUP_NS (and up
 * to SHP_STALL_NS). A loop's work is bounded by its bursts: at the default
 * burst of 32 a loop works about 100 us at most (run to completion with
 * two ports: 8 bursts each at ~200 ns a packet, and an RX burst a queue;
 * a TX-only lcore: 2 bursts a port), so a loop of 200 us or more lost its
 * CPU; with a
 * larger burst the bound grows with it (shp_stalls_init). On this VM
 * hiccups add up to as much lost time as the stalls over 1 ms (27 ms
 * against 25 ms in 4 s on a TX lcore), and each one makes what falls due
 * late by up to its length, which --max-late (50 us) is far below.
 */
#define SHP_HICCUP_NS 200000ull

struct shp_stalls {
	uint64_t last;      /* TSC at the previous loop's start; 0: none yet */
	uint64_t limit;     /* SHP_STALL_NS in TSC cycles */
	uint64_t count;     /* loops longer than limit */
	uint64_t cycles;    /* their total length */
	uint64_t longest;   /* the longest loop, stalled or not */
	uint64_t hiccup_limit;  /* SHP_HICCUP_NS (or more) in cycles */
	uint64_t hiccups;       /* loops over it, up to limit */
	uint64_t hiccup_cycles; /* their total length */
};

/* burst: the worker's burst size; a loop of a larger one may work
 * longer, and its hiccups start later (at most at a stall). */
static inline void
shp_stalls_init(struct shp_stalls *st, uint64_t tsc_hz, unsigned int burst)
{
	uint64_t hiccup_ns = SHP_HICCUP_NS * (burst > 32 ? burst : 32) / 32;

	if (hiccup_ns > SHP_STALL_NS)
		hiccup_ns = SHP_STALL_NS;
	st->last = 0;
	st->limit = tsc_hz / (1000000000ull / SHP_STALL_NS);
	st->hiccup_limit = (uint64_t)((double)tsc_hz * hiccup_ns / 1e9);
	st->count = 0;
	st->cycles = 0;
	st->longest = 0;
	st->hiccups = 0;
	st->hiccup_cycles = 0;
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
		} else if (d > st->hiccup_limit) {
			st->hiccups++;
			st->hiccup_cycles += d;
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
	uint64_t hiccups;       /* loops over the hiccup limit, up to a stall */
	uint64_t hiccup_ns;     /* their total */
	int socket;             /* the lcore's NUMA socket */
	/* the kernel's count (shp_cpu_lost.h), 0 where it keeps none:
	 * run-queue wait, times put on a CPU, its one CPU's steal */
	uint64_t runq_wait_ns;
	uint64_t cpu_slices;
	uint64_t steal_ns;
};

static inline void
shp_stalls_sum(const struct shp_stalls *st, uint64_t tsc_hz,
	       struct shp_stall_sum *out)
{
	out->stalls = st->count;
	out->stalled_ns = (uint64_t)((double)st->cycles * 1e9 / tsc_hz);
	out->longest_ns = (uint64_t)((double)st->longest * 1e9 / tsc_hz);
	out->hiccups = st->hiccups;
	out->hiccup_ns = (uint64_t)((double)st->hiccup_cycles * 1e9 / tsc_hz);
}

#endif
