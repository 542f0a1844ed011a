/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>
#include <rte_mbuf_dyn.h>

#include "pace.h"

int
shp_pace_init(struct shp_pace *p, uint64_t ns_per_unit)
{
	int off, bit;

	memset(p, 0, sizeof(*p));
	off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, NULL);
	bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME,
				      NULL);
	if (off < 0 || bit < 0 || ns_per_unit == 0)
		return -1;
	p->ts_off = off;
	p->ts_flag = UINT64_C(1) << bit;
	p->ns_per_unit = ns_per_unit;
	return 0;
}

static inline uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void
shp_pace_hold(struct shp_pace *p, struct rte_mbuf **pkts, uint16_t n,
	      uint64_t now)
{
	uint16_t i;

	RTE_ASSERT(p->n == 0 && n <= SHP_PACE_MAX);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint64_t due = p->last_due, ts, cap;

		if (likely(m->ol_flags & p->ts_flag)) {
			ts = *RTE_MBUF_DYNFIELD(m, p->ts_off,
						rte_mbuf_timestamp_t *);
			cap = ts > UINT64_MAX / p->ns_per_unit ? UINT64_MAX :
			      ts * p->ns_per_unit;
			if (unlikely(!p->started)) {
				p->started = true;
				p->cap0 = cap;
				p->clk0 = now;
			}
			if (cap >= p->cap0)
				due = sat_add(p->clk0, cap - p->cap0);
			if (cap < p->cap0 || due < p->last_due) {
				p->backwards++;
				due = p->last_due;
			}
		} else {
			p->unstamped++;
		}
		p->last_due = due;
		p->pkts[i] = m;
		p->due[i] = due;
	}
	p->head = 0;
	p->n = n;
}

uint16_t
shp_pace_release(struct shp_pace *p, uint64_t now, struct rte_mbuf **out,
		 uint64_t *stamp)
{
	uint16_t k = 0, h = p->head;

	while (k < p->n && p->due[h + k] <= now)
		k++;
	if (k == 0)
		return 0;
	memcpy(out, &p->pkts[h], k * sizeof(*out));
	*stamp = p->due[h + k - 1];
	p->head = h + k;
	p->n -= k;
	return k;
}

uint16_t
shp_pace_take_all(struct shp_pace *p, struct rte_mbuf **out)
{
	uint16_t k = p->n;

	memcpy(out, &p->pkts[p->head], k * sizeof(*out));
	p->head = 0;
	p->n = 0;
	return k;
}
