/* SPDX-License-Identifier: BSD-3-Clause */
#include "tbf_shared.h"

void
shp_tbf_shared_init(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		    uint64_t now_ns)
{
	int64_t t = shp_tbf_shared_t(now_ns);

	/* empty a bucket's depth ago: full now */
	s->clk.val[0] = (uint64_t)(t - c->buffer_t);
	s->clk.val[1] = (uint64_t)(t - c->mtu_t);
	s->claims = 0;
	s->retries = 0;
}

/* Both halves, each atomically: a torn pair only makes the swap fail. */
static inline rte_int128_t
clk_load(const struct shp_tbf_shared *s)
{
	rte_int128_t v;

	v.val[0] = __atomic_load_n(&s->clk.val[0], __ATOMIC_ACQUIRE);
	v.val[1] = __atomic_load_n(&s->clk.val[1], __ATOMIC_ACQUIRE);
	return v;
}

static inline uint64_t
ticks_to_ns_up(int64_t t)
{
	return t <= 0 ? 0 : ((uint64_t)t + (1u << SHP_TBF_SHIFT) - 1) >>
			    SHP_TBF_SHIFT;
}

uint16_t
shp_tbf_shared_claim(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		     const uint32_t *wire, uint16_t n, uint64_t now_ns,
		     uint64_t *next_ns)
{
	const int64_t now = shp_tbf_shared_t(now_ns);
	rte_int128_t old = clk_load(s), new;

	for (;;) {
		/* a bucket full for longer holds no more than its depth */
		int64_t e = RTE_MAX((int64_t)old.val[0], now - c->buffer_t);
		int64_t p = RTE_MAX((int64_t)old.val[1], now - c->mtu_t);
		int64_t cost = 0, pcost = 0;
		uint32_t last = UINT32_MAX;
		uint16_t k;

		for (k = 0; k < n; k++) {
			/* a burst's frames are mostly of one length */
			if (wire[k] != last) {
				last = wire[k];
				cost = shp_tbf_ticks(c->rate_mult, last);
				pcost = c->peakrate ?
					shp_tbf_ticks(c->peak_mult, last) : 0;
			}
			if (e + cost > now || p + pcost > now)
				break;
			e += cost;
			p += pcost;
		}
		/* the loop stopped at frame k with its costs worked out */
		if (k < n)
			*next_ns = ticks_to_ns_up(RTE_MAX(e + cost,
							  p + pcost));
		if (k == 0)
			return 0;
		new.val[0] = (uint64_t)e;
		new.val[1] = (uint64_t)p;
		if (rte_atomic128_cmp_exchange(&s->clk, &old, &new, 0,
					       __ATOMIC_ACQ_REL,
					       __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&s->claims, 1, __ATOMIC_RELAXED);
			return k;
		}
		/* another shard claimed first: old is what it left */
		__atomic_fetch_add(&s->retries, 1, __ATOMIC_RELAXED);
	}
}

void
shp_tbf_shared_charge(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		      uint32_t wire, uint64_t now_ns)
{
	const int64_t now = shp_tbf_shared_t(now_ns);
	const int64_t cost = shp_tbf_ticks(c->rate_mult, wire);
	const int64_t pcost = c->peakrate ? shp_tbf_ticks(c->peak_mult, wire)
					  : 0;
	rte_int128_t old = clk_load(s), new;

	do {
		new.val[0] = (uint64_t)(RTE_MAX((int64_t)old.val[0],
						now - c->buffer_t) + cost);
		new.val[1] = (uint64_t)(RTE_MAX((int64_t)old.val[1],
						now - c->mtu_t) + pcost);
	} while (!rte_atomic128_cmp_exchange(&s->clk, &old, &new, 0,
					     __ATOMIC_ACQ_REL,
					     __ATOMIC_ACQUIRE));
}

int64_t
shp_tbf_shared_tokens(const struct shp_tbf_shared *s,
		      const struct shp_tbf_conf *c, uint64_t now_ns)
{
	int64_t now = shp_tbf_shared_t(now_ns);
	int64_t e = (int64_t)__atomic_load_n(&s->clk.val[0],
					     __ATOMIC_ACQUIRE);

	return RTE_MIN(c->buffer_t, now - e);
}
