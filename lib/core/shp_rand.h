/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeded random streams.
 *
 * rte_rand() has one seed for the whole process and one state per lcore,
 * so its sequence depends on which lcore runs a port. Reproducible emulation
 * needs streams that depend only on the seed, hence this small generator:
 * SplitMix64 (Steele, Lea and Flood; public domain reference by Vigna), a
 * Weyl sequence through a strong 64-bit finaliser.
 *
 * Two ways to use it:
 *  - sequential: shp_rand_seed() once, then draw (one stream of events);
 *  - counter-based: shp_rand_at(key, n) gives the generator of event n of
 *    the stream `key`, a pure function of (key, n). netem draws every
 *    packet's decisions this way, so that the draws of impairment X for
 *    arrival n do not depend on how many draws other impairments made
 *    before (docs/netem.md, "Random streams").
 */
#ifndef SHP_RAND_H
#define SHP_RAND_H

#include <stdint.h>

struct shp_rand {
	uint64_t x;
};

#define SHP_RAND_GAMMA 0x9e3779b97f4a7c15ULL

/* The seed of a profile's streams when neither it (`seed`) nor --seed
 * names one, so that runs are reproducible by default: netem's, and what
 * the running configuration reports as the seed in use. */
#define SHP_SEED_DEFAULT 0x6e6574656d5eedULL

/* SplitMix64's finaliser (Stafford's mix13): a bijection of 64-bit words
 * with full avalanche. */
static inline uint64_t
shp_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The key of stream `stream` (port, stage, impairment...) under `seed`. */
static inline uint64_t
shp_rand_key(uint64_t seed, uint64_t stream)
{
	return shp_mix64(shp_mix64(seed + SHP_RAND_GAMMA) ^
			 shp_mix64((stream + 1) * 0xd1342543de82ef95ULL));
}

/* Seed a sequential stream; `stream` separates streams of one seed. */
static inline void
shp_rand_seed(struct shp_rand *r, uint64_t seed, uint64_t stream)
{
	r->x = shp_rand_key(seed, stream);
}

/* The generator of event n of the stream `key`. */
static inline void
shp_rand_at(struct shp_rand *r, uint64_t key, uint64_t n)
{
	r->x = key ^ shp_mix64(n * SHP_RAND_GAMMA + key);
}

static inline uint64_t
shp_rand_u64(struct shp_rand *r)
{
	return shp_mix64(r->x += SHP_RAND_GAMMA);
}

/* Uniform in [0, 1). */
static inline double
shp_rand_unit(struct shp_rand *r)
{
	return (double)(shp_rand_u64(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), n > 0, without modulo bias worth mentioning (n << 2^32). */
static inline uint32_t
shp_rand_below(struct shp_rand *r, uint32_t n)
{
	return (uint32_t)(((shp_rand_u64(r) >> 32) * (uint64_t)n) >> 32);
}

#endif
