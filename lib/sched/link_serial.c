/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdbool.h>

#include "link_serial.h"

static inline uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void
shp_link_serial_claim(struct shp_link_serial *s, const uint64_t *base,
		      const uint64_t *cost, uint16_t n, uint64_t *tts)
{
	uint64_t old = __atomic_load_n(&s->busy, __ATOMIC_ACQUIRE);

	if (n == 0)
		return;
	for (;;) {
		uint64_t last = old;
		uint16_t i;

		for (i = 0; i < n; i++) {
			last = sat_add(RTE_MAX(base[i], last), cost[i]);
			tts[i] = last;
		}
		if (__atomic_compare_exchange_n(&s->busy, &old, last, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&s->claims, 1, __ATOMIC_RELAXED);
			return;
		}
		/* another shard claimed first: old is what it left */
		__atomic_fetch_add(&s->retries, 1, __ATOMIC_RELAXED);
	}
}
