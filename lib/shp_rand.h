/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeded random streams.
 *
 * rte_rand() has one seed for the whole process and one state per lcore,
 * so its sequence depends on which lcore runs a port. Reproducible emulation
 * needs a stream per (port, stage) that depends only on the seed, hence this
 * small xoshiro256** generator (public domain algorithm by Blackman and
 * Vigna) seeded through splitmix64.
 */
#ifndef SHP_RAND_H
#define SHP_RAND_H

#include <stdint.h>

struct shp_rand {
	uint64_t s[4];
};

static inline uint64_t
shp_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Seed a stream; `stream` separates ports/stages drawing from one seed. */
static inline void
shp_rand_seed(struct shp_rand *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL);
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = shp_splitmix64(&x);
}

static inline uint64_t
shp_rand_u64(struct shp_rand *r)
{
	uint64_t *s = r->s;
	uint64_t t = s[1] << 17;
	uint64_t res = s[1] * 5;

	res = ((res << 7) | (res >> 57)) * 9;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = (s[3] << 45) | (s[3] >> 19);
	return res;
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
