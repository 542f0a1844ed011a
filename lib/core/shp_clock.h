/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The live shaper clock: nanoseconds since start, from the TSC. Stages get
 * the time from their caller (ctx->now); only the app reads this.
 *
 * Its rate is the TSC's as measured against the kernel's clock, not
 * rte_get_tsc_hz(): DPDK 22.11 takes the rate from the CPU's nominal
 * frequency where CPUID gives one, and on an AMD EPYC VM here that said
 * 2600 MHz for a TSC counting at 2596.098 MHz (the kernel's "tsc:
 * Detected" figure): 1503 ppm, every delay 0.15% long and every rate
 * 0.15% slow.
 */
#ifndef SHP_CLOCK_H
#define SHP_CLOCK_H

#include <stdint.h>
#include <rte_cycles.h>

struct shp_clock {
	uint64_t tsc0;
	uint64_t mult;   /* ns per cycle << 32 */
	uint64_t hz;     /* the TSC's rate it runs on */
};

/* The TSC's rate: cycles over CLOCK_MONOTONIC_RAW across `ms`
 * milliseconds (a sleep, so the caller's CPU is free meanwhile); each end
 * read between two TSC reads, the tightest pair of a few kept, so a
 * preemption at either end costs no accuracy. rte_get_tsc_hz() when the
 * measure is off it by more than 5% (no usable kernel clock). */
uint64_t shp_tsc_hz_measure(unsigned int ms);

/* Start the clock at 0 now, running at hz cycles a second (0: measure
 * it, SHP_CLOCK_CALIBRATE_MS). */
#define SHP_CLOCK_CALIBRATE_MS 20
void shp_clock_init_hz(struct shp_clock *c, uint64_t hz);

static inline void
shp_clock_init(struct shp_clock *c)
{
	shp_clock_init_hz(c, 0);
}

static inline uint64_t
shp_clock_now(const struct shp_clock *c)
{
	return (uint64_t)(((unsigned __int128)(rte_rdtsc() - c->tsc0) *
			   c->mult) >> 32);
}

#endif
