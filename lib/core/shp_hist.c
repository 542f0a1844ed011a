/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "shp_hist.h"

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

void
shp_hist_init(struct shp_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void
shp_hist_merge(struct shp_hist *dst, const struct shp_hist *src)
{
	uint64_t n = 0, mn = LD(src->min), mx = LD(src->max);
	unsigned int i;

	for (i = 0; i < SHP_HIST_BUCKETS; i++) {
		uint64_t b = LD(src->bucket[i]);

		dst->bucket[i] += b;
		n += b;
	}
	/* the owner may have counted a value in a bucket and not yet in
	 * count: the buckets are what percentiles walk, so they decide */
	dst->count += n;
	dst->sum += LD(src->sum);
	if (mn < dst->min)
		dst->min = mn;
	if (mx > dst->max)
		dst->max = mx;
}

void
shp_hist_sub(struct shp_hist *h, const struct shp_hist *base)
{
	unsigned int i, lo = SHP_HIST_BUCKETS, hi = 0;
	uint64_t n = 0;

	if (base->count == 0)
		return;
	for (i = 0; i < SHP_HIST_BUCKETS; i++) {
		/* a snapshot never has more than what came later */
		h->bucket[i] = h->bucket[i] > base->bucket[i] ?
			h->bucket[i] - base->bucket[i] : 0;
		if (h->bucket[i] != 0) {
			if (lo == SHP_HIST_BUCKETS)
				lo = i;
			hi = i;
			n += h->bucket[i];
		}
	}
	h->count = n;
	h->sum = h->sum > base->sum ? h->sum - base->sum : 0;
	if (n == 0) {
		h->min = UINT64_MAX;
		h->max = 0;
		return;
	}
	if (shp_hist_lower(lo) > h->min)
		h->min = shp_hist_lower(lo);
	if (hi < SHP_HIST_BUCKETS - 1 && shp_hist_upper(hi) < h->max)
		h->max = shp_hist_upper(hi);
}

uint64_t
shp_hist_quantile(const struct shp_hist *h, uint32_t q_ppm)
{
	unsigned __int128 r;
	uint64_t rank, seen = 0, v;
	unsigned int i;

	if (h->count == 0)
		return 0;
	r = ((unsigned __int128)h->count * q_ppm + 999999) / 1000000;
	rank = r == 0 ? 1 : (uint64_t)r;
	/* the extremes are known exactly */
	if (rank == 1)
		return h->min;
	if (rank >= h->count)
		return h->max;
	for (i = 0; i < SHP_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			break;
	}
	/* the top bucket also holds what was clamped into it */
	if (i >= SHP_HIST_BUCKETS - 1)
		return h->max;
	v = shp_hist_lower(i) + shp_hist_width(i) / 2;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

void
shp_hist_summarize(const struct shp_hist *h, struct shp_hist_summary *s)
{
	memset(s, 0, sizeof(*s));
	if (h->count == 0)
		return;
	s->count = h->count;
	s->min = h->min;
	s->max = h->max;
	s->sum = h->sum;
	s->p50 = shp_hist_quantile(h, 500000);
	s->p90 = shp_hist_quantile(h, 900000);
	s->p99 = shp_hist_quantile(h, 990000);
	s->p999 = shp_hist_quantile(h, 999000);
}

unsigned int
shp_hist_export(const struct shp_hist *h, unsigned int max, uint64_t *upper,
		uint64_t *count)
{
	unsigned int i, k, n, merge;

	for (merge = 1; merge < SHP_HIST_SUB; merge *= 2) {
		for (n = 0, i = 0; i < SHP_HIST_BUCKETS && n <= max;
		     i += merge)
			for (k = 0; k < merge; k++)
				if (h->bucket[i + k] != 0) {
					n++;
					break;
				}
		if (n <= max)
			break;
	}
	for (n = 0, i = 0; i < SHP_HIST_BUCKETS && n < max; i += merge) {
		uint64_t c = 0;

		for (k = 0; k < merge; k++)
			c += h->bucket[i + k];
		if (c == 0)
			continue;
		upper[n] = shp_hist_upper(i + merge - 1);
		count[n++] = c;
	}
	return n;
}
