/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The live shaper clock: nanoseconds since start, from the TSC. Stages get
 * the time from their caller (ctx->now); only the app reads this.
 */
#ifndef SHP_CLOCK_H
#define SHP_CLOCK_H

#include <stdint.h>
#include <rte_cycles.h>

struct shp_clock {
	uint64_t tsc0;
	uint64_t mult;   /* ns per cycle << 32 */
};

static inline void
shp_clock_init(struct shp_clock *c)
{
	c->tsc0 = rte_rdtsc();
	c->mult = (uint64_t)(((unsigned __int128)1000000000 << 32) /
			     rte_get_tsc_hz());
}

static inline uint64_t
shp_clock_now(const struct shp_clock *c)
{
	return (uint64_t)(((unsigned __int128)(rte_rdtsc() - c->tsc0) *
			   c->mult) >> 32);
}

#endif
