/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Log-linear latency histogram (HdrHistogram's layout, in nanoseconds).
 *
 * Values below 2 * SHP_HIST_SUB are counted exactly; above, every power of
 * two [2^e, 2^(e+1)) is cut into SHP_HIST_SUB equal buckets, so a bucket is
 * never wider than 1/SHP_HIST_SUB (1.6%) of its lower bound. The index is a
 * clz, a shift and an add: cheap enough for every packet TX sends. Values
 * from 0 to SHP_HIST_VMAX (137 s) are kept; larger ones are counted in the
 * top bucket. min, max and sum are exact (unclamped).
 *
 * Like the counters (shp_stats.h), one histogram has one writer (the lcore
 * that owns it, plain increments); readers merge the histograms of every
 * lcore with relaxed loads.
 */
#ifndef SHP_HIST_H
#define SHP_HIST_H

#include <stdint.h>

#define SHP_HIST_SUB_BITS 6
#define SHP_HIST_SUB      (1u << SHP_HIST_SUB_BITS)   /* per power of two */
#define SHP_HIST_TOP_EXP  37                          /* 2^37 ns = 137 s */
#define SHP_HIST_VMAX     ((UINT64_C(1) << SHP_HIST_TOP_EXP) - 1)
#define SHP_HIST_BUCKETS \
	((SHP_HIST_TOP_EXP - SHP_HIST_SUB_BITS + 1) * SHP_HIST_SUB)

struct shp_hist {
	uint64_t count;
	uint64_t sum;          /* ns, for an average */
	uint64_t min;          /* UINT64_MAX while empty */
	uint64_t max;
	uint64_t bucket[SHP_HIST_BUCKETS];
};

/* What is reported: ns, 0 when empty. */
struct shp_hist_summary {
	uint64_t count, min, p50, p90, p99, p999, max;
	uint64_t sum;          /* of every value: with count, the average */
};

/*
 * Bucket of v (v <= SHP_HIST_VMAX). Below 2 * SUB the shift is 0 and the
 * index is v itself; above, e = floor(log2 v) >= SUB_BITS + 1 gives shift
 * s = e - SUB_BITS, v >> s in [SUB, 2 * SUB) and index s * SUB + (v >> s).
 */
static inline unsigned int
shp_hist_index(uint64_t v)
{
	unsigned int e = 63 - __builtin_clzll(v | (2 * SHP_HIST_SUB - 1));
	unsigned int s = e - SHP_HIST_SUB_BITS;

	return (s << SHP_HIST_SUB_BITS) + (unsigned int)(v >> s);
}

/* Smallest value of bucket i, and its width. */
static inline uint64_t
shp_hist_lower(unsigned int i)
{
	unsigned int s = i >> SHP_HIST_SUB_BITS;

	if (s == 0)
		return i;
	s--;
	return (uint64_t)((i & (SHP_HIST_SUB - 1)) + SHP_HIST_SUB) << s;
}

static inline uint64_t
shp_hist_width(unsigned int i)
{
	unsigned int s = i >> SHP_HIST_SUB_BITS;

	return s == 0 ? 1 : UINT64_C(1) << (s - 1);
}

/* Largest value bucket i holds (its inclusive upper bound, Prometheus'
 * `le`); the top bucket also holds everything clamped into it. */
static inline uint64_t
shp_hist_upper(unsigned int i)
{
	return shp_hist_lower(i) + shp_hist_width(i) - 1;
}

/* n values equal to v (a burst that left together). */
static inline void
shp_hist_record_n(struct shp_hist *h, uint64_t v, uint64_t n)
{
	if (n == 0)
		return;
	h->bucket[shp_hist_index(v < SHP_HIST_VMAX ? v : SHP_HIST_VMAX)] += n;
	h->count += n;
	h->sum += v * n;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

static inline void
shp_hist_record(struct shp_hist *h, uint64_t v)
{
	shp_hist_record_n(h, v, 1);
}

/*
 * v[0..n): one pass, min/max/sum kept in registers. A burst's values
 * mostly share a bucket (one RX burst's sojourns, lateness 0): a run of
 * equal buckets is counted in a register and added once, as an
 * increment per value of the same word is a store-to-load chain.
 */
static inline void
shp_hist_record_burst(struct shp_hist *h, const uint64_t *v, unsigned int n)
{
	uint64_t mn = h->min, mx = h->max, sum = 0, run = 0;
	unsigned int i, last = 0;

	for (i = 0; i < n; i++) {
		uint64_t x = v[i];
		unsigned int b = shp_hist_index(x < SHP_HIST_VMAX ? x :
						SHP_HIST_VMAX);

		if (b != last) {
			h->bucket[last] += run;
			last = b;
			run = 0;
		}
		run++;
		sum += x;
		mn = x < mn ? x : mn;
		mx = x > mx ? x : mx;
	}
	h->bucket[last] += run;
	h->count += n;
	h->sum += sum;
	h->min = mn;
	h->max = mx;
}

/* Empty histogram (min at UINT64_MAX). */
void shp_hist_init(struct shp_hist *h);

/* dst += src. src may be written by its owner meanwhile (relaxed loads);
 * dst->count is recounted from the buckets so that the two agree. */
void shp_hist_merge(struct shp_hist *dst, const struct shp_hist *src);

/*
 * h -= base, where base is an earlier snapshot of the same histogram (the
 * `clear stats` baseline). Buckets, count and sum are exact; min and max
 * since then are not known exactly: they become the bounds of the lowest
 * and highest non-empty buckets, kept within the exact overall ones.
 */
void shp_hist_sub(struct shp_hist *h, const struct shp_hist *base);

/*
 * Nearest-rank quantile, q in parts per million (999000 is p99.9): a value
 * of the bucket that holds the ceil(q * count / 1e6)-th smallest value
 * (its middle, kept within [min, max]), so within the bucket's width of
 * the exact one; the first and last ranks are min and max themselves.
 * 0 when empty.
 */
uint64_t shp_hist_quantile(const struct shp_hist *h, uint32_t q_ppm);

void shp_hist_summarize(const struct shp_hist *h, struct shp_hist_summary *s);

/*
 * The non-empty buckets in increasing order, for an exporter (Prometheus'
 * `le`): upper[k] is a bucket's inclusive upper bound, count[k] its own
 * count (not cumulative). When more than max (>= 32) are non-empty,
 * aligned groups of 2, 4, ... 64 adjacent buckets are merged until they
 * fit, so an upper bound is always a real bucket edge. Returns how many
 * pairs were written.
 */
unsigned int shp_hist_export(const struct shp_hist *h, unsigned int max,
			     uint64_t *upper, uint64_t *count);

#endif
