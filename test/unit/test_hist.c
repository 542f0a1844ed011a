/* SPDX-License-Identifier: BSD-3-Clause */
/* The latency histogram: layout, error bound, percentiles, sums. */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "shp_hist.h"
#include "shp_stats.h"

#define N 200000

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
	/* xorshift64*: reproducible, independent of libc */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static double
unif(void)
{
	return (double)(rnd() >> 11) / (double)(1ull << 53);
}

static struct shp_hist *
hist_new(void)
{
	struct shp_hist *h = malloc(sizeof(*h));

	assert_non_null(h);
	shp_hist_init(h);
	return h;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Buckets tile [0, VMAX] without gap or overlap, none wider than 1/64 of
 * its lower bound beyond the exact ones, and 10 ns .. 100 s is covered
 * without clamping. */
static void
test_boundaries(void **state)
{
	unsigned int i;

	(void)state;
	assert_int_equal(shp_hist_lower(0), 0);
	for (i = 0; i < SHP_HIST_BUCKETS; i++) {
		uint64_t lo = shp_hist_lower(i), hi = shp_hist_upper(i);

		assert_int_equal(shp_hist_index(lo), i);
		assert_int_equal(shp_hist_index(hi), i);
		if (i + 1 < SHP_HIST_BUCKETS) {
			assert_int_equal(shp_hist_lower(i + 1), hi + 1);
			assert_int_equal(shp_hist_index(hi + 1), i + 1);
		}
		if (i < 2 * SHP_HIST_SUB)
			assert_int_equal(shp_hist_width(i), 1);
		else
			assert_true(shp_hist_width(i) * SHP_HIST_SUB <= lo);
	}
	assert_int_equal(shp_hist_upper(SHP_HIST_BUCKETS - 1), SHP_HIST_VMAX);
	assert_int_equal(shp_hist_index(10), 10);
	assert_true(shp_hist_index(100000000000ull) < SHP_HIST_BUCKETS - 1);
	/* beyond the range: counted in the top bucket, max stays exact */
	{
		struct shp_hist *h = hist_new();

		shp_hist_record(h, UINT64_MAX / 2);
		shp_hist_record(h, 0);
		assert_int_equal(h->bucket[SHP_HIST_BUCKETS - 1], 1);
		assert_int_equal(h->bucket[0], 1);
		assert_int_equal(h->count, 2);
		assert_int_equal(h->max, UINT64_MAX / 2);
		assert_int_equal(h->min, 0);
		assert_int_equal(shp_hist_quantile(h, 1000000), UINT64_MAX / 2);
		free(h);
	}
}

/* Any value lies in its bucket, the bucket is within 1/64 of it, and a
 * percentile falling in its bucket reports it within 1/128. */
static void
test_relative_error(void **state)
{
	struct shp_hist *h = hist_new();
	unsigned int k;

	(void)state;
	for (k = 0; k < N; k++) {
		/* log-uniform over 10 ns .. 100 s */
		uint64_t v = (uint64_t)exp(log(10) + unif() * log(1e10));
		unsigned int i = shp_hist_index(v);
		uint64_t q;

		assert_true(shp_hist_lower(i) <= v && v <= shp_hist_upper(i));
		assert_true((double)(shp_hist_width(i) - 1) <= v / 64.0);
		/* v is the 2nd of 4: p50 is v's bucket, not clamped */
		shp_hist_init(h);
		shp_hist_record(h, 0);
		shp_hist_record(h, v);
		shp_hist_record(h, v);
		shp_hist_record(h, SHP_HIST_VMAX);
		q = shp_hist_quantile(h, 500000);
		assert_int_equal(shp_hist_index(q), i);
		assert_true(fabs((double)q - (double)v) <= v / 128.0 + 0.5);
		assert_true(fabs((double)q - (double)v) <= v * 0.03);
	}
	free(h);
}

enum dist { D_UNIFORM, D_EXP, D_BIMODAL, D_LOGUNIF, D_CONST, D_MAX };

static uint64_t
draw(enum dist d)
{
	switch (d) {
	case D_UNIFORM:     /* 10 us .. 20 ms */
		return 10000 + (uint64_t)(unif() * 19990000);
	case D_EXP:         /* mean 50 us, a long tail */
		return (uint64_t)(-50000.0 * log(1.0 - unif()));
	case D_BIMODAL:     /* delay 10ms 1ms, and 1% late by up to 5 ms */
		return 9000000 + (uint64_t)(unif() * 2000000) +
			(unif() < 0.01 ? (uint64_t)(unif() * 5000000) : 0);
	case D_LOGUNIF:     /* 10 ns .. 100 s */
		return (uint64_t)exp(log(10) + unif() * log(1e10));
	default:
		return 123456;
	}
}

/* Percentiles against the nearest rank of the sorted values: the same
 * bucket, so within 1/64; min and max exact. */
static void
test_percentiles(void **state)
{
	static const uint32_t qs[] = { 1, 500000, 900000, 990000, 999000,
				       999999, 1000000 };
	uint64_t *v = malloc(N * sizeof(*v));
	struct shp_hist *h = hist_new();
	unsigned int n, d, k, j;

	(void)state;
	assert_non_null(v);
	for (d = 0; d < D_MAX; d++) {
		/* small counts too: rank rounding matters there */
		for (n = 1; n <= N; n = n < 1000 ? n * 7 + 3 : n * 10) {
			shp_hist_init(h);
			for (k = 0; k < n; k++) {
				v[k] = draw(d);
				shp_hist_record(h, v[k]);
			}
			qsort(v, n, sizeof(*v), cmp_u64);
			assert_int_equal(h->count, n);
			assert_int_equal(h->min, v[0]);
			assert_int_equal(h->max, v[n - 1]);
			for (j = 0; j < sizeof(qs) / sizeof(qs[0]); j++) {
				uint64_t rank = ((uint64_t)n * qs[j] +
						 999999) / 1000000;
				uint64_t ref = v[(rank ? rank : 1) - 1];
				uint64_t got = shp_hist_quantile(h, qs[j]);

				assert_int_equal(shp_hist_index(got),
						 shp_hist_index(ref));
				assert_true(fabs((double)got - (double)ref) <=
					    ref * 0.03);
			}
		}
	}
	free(h);
	free(v);
}

/* Summing per-lcore histograms equals recording everything into one;
 * the burst variant equals recording one by one. */
static void
test_merge(void **state)
{
	struct shp_hist *one = hist_new(), *burst = hist_new();
	struct shp_hist *sum = hist_new(), *lc[4];
	uint64_t v[32];
	unsigned int k, j;

	(void)state;
	for (j = 0; j < 4; j++)
		lc[j] = hist_new();
	for (k = 0; k < N / 32; k++) {
		for (j = 0; j < 32; j++) {
			v[j] = draw((enum dist)(rnd() % D_MAX));
			shp_hist_record(one, v[j]);
		}
		shp_hist_record_burst(lc[rnd() % 4], v, 32);
		shp_hist_record_burst(burst, v, 32);
	}
	shp_hist_record_burst(burst, v, 0);
	for (j = 0; j < 4; j++)
		shp_hist_merge(sum, lc[j]);
	assert_memory_equal(sum->bucket, one->bucket, sizeof(one->bucket));
	assert_memory_equal(burst, one, sizeof(*one));
	assert_int_equal(sum->count, one->count);
	assert_int_equal(sum->sum, one->sum);
	assert_int_equal(sum->min, one->min);
	assert_int_equal(sum->max, one->max);
	assert_int_equal(shp_hist_quantile(sum, 999000),
			 shp_hist_quantile(one, 999000));
	/* merging empty histograms changes nothing */
	shp_hist_init(burst);
	shp_hist_merge(sum, burst);
	assert_int_equal(sum->min, one->min);
	assert_int_equal(sum->count, one->count);
	for (j = 0; j < 4; j++)
		free(lc[j]);
	free(one);
	free(burst);
	free(sum);
}

/* `clear stats`: what came after the baseline, exactly in the buckets,
 * min and max within the bucket of the exact ones. */
static void
test_sub(void **state)
{
	struct shp_hist *h = hist_new(), *base = hist_new(), *after = hist_new();
	struct shp_hist_summary s;
	unsigned int k;

	(void)state;
	for (k = 0; k < 1000; k++)
		shp_hist_record(h, 10 + k);            /* before: small */
	memcpy(base, h, sizeof(*h));
	for (k = 0; k < 1000; k++) {
		uint64_t x = 5000000 + rnd() % 1000000;

		shp_hist_record(h, x);
		shp_hist_record(after, x);
	}
	shp_hist_sub(h, base);
	assert_memory_equal(h->bucket, after->bucket, sizeof(h->bucket));
	assert_int_equal(h->count, 1000);
	assert_int_equal(h->sum, after->sum);
	assert_int_equal(shp_hist_index(h->min), shp_hist_index(after->min));
	assert_int_equal(shp_hist_index(h->max), shp_hist_index(after->max));
	assert_true(h->min <= after->min && h->max >= after->max);
	/* nothing since: empty */
	memcpy(base, after, sizeof(*after));
	shp_hist_sub(after, base);
	shp_hist_summarize(after, &s);
	assert_int_equal(s.count, 0);
	assert_int_equal(s.max, 0);
	assert_int_equal(s.p999, 0);
	free(h);
	free(base);
	free(after);
}

static void
test_summary(void **state)
{
	struct shp_hist *h = hist_new();
	struct shp_hist_summary s;
	unsigned int k;

	(void)state;
	shp_hist_summarize(h, &s);
	assert_int_equal(s.count, 0);
	assert_int_equal(s.min, 0);
	for (k = 1; k <= 1000; k++)
		shp_hist_record(h, k * 1000);
	shp_hist_summarize(h, &s);
	assert_int_equal(s.count, 1000);
	assert_int_equal(s.min, 1000);
	assert_int_equal(s.max, 1000000);
	assert_int_equal(shp_hist_index(s.p50), shp_hist_index(500000));
	assert_int_equal(shp_hist_index(s.p90), shp_hist_index(900000));
	assert_int_equal(shp_hist_index(s.p99), shp_hist_index(990000));
	assert_int_equal(shp_hist_index(s.p999), shp_hist_index(999000));
	free(h);
}

/*
 * The stats file's sojourn_ns {min, avg, max} come from the sojourn
 * histograms of every lcore (TX keeps no separate counters): exact min,
 * max and mean over everything recorded.
 */
static void
test_stats_file_sojourn(void **state)
{
	static struct shp_lcore_ctr blocks[3];
	struct shp_latency lat[2], *all = malloc(sizeof(*all));
	uint64_t v[512], tts[512] = { 0 }, sum = 0, mn = UINT64_MAX, mx = 0;
	uint64_t got_min, got_avg, got_max;
	struct shp_port_sum ps;
	const uint16_t port = 3;
	char *buf = NULL, *p;
	size_t len;
	FILE *f;
	unsigned int i;

	(void)state;
	assert_non_null(all);
	for (i = 0; i < 2; i++) {
		shp_latency_init(&lat[i]);
		blocks[2 * i].port[port].lat = &lat[i];
	}
	for (i = 0; i < RTE_DIM(v); i++) {
		v[i] = 10000000 + rnd() % 5000000;
		sum += v[i];
		mn = RTE_MIN(mn, v[i]);
		mx = RTE_MAX(mx, v[i]);
	}
	/* two transmitting lcores, bursts of 32 and of 1 */
	for (i = 0; i < 256; i += 32)
		shp_latency_record_tx(&lat[0], v + i, tts + i, 32, 0);
	for (i = 256; i < RTE_DIM(v); i++)
		shp_latency_record_tx(&lat[1], v + i, tts + i, 1, 0);
	for (i = 0; i < 3; i++)
		blocks[i].port[port].tx_packets = i == 1 ? 0 : 256;
	shp_stats_sum(blocks, 3, port, 1, &ps);
	shp_stats_latency(blocks, 3, port, all);
	shp_latency_summarize(all, &ps);
	assert_int_equal(ps.sojourn.sum, sum);
	assert_int_equal(ps.sojourn.count, ps.c.tx_packets);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	shp_stats_write_json(f, &ps, &port, 1, 1, 1.0, NULL, 0);
	fclose(f);
	p = strstr(buf, "\"sojourn_ns\": {\"min\": ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "\"sojourn_ns\": {\"min\": %" SCNu64
				", \"avg\": %" SCNu64 ", \"max\": %" SCNu64
				"}", &got_min, &got_avg, &got_max), 3);
	assert_int_equal(got_min, mn);
	assert_int_equal(got_avg, sum / RTE_DIM(v));
	assert_int_equal(got_max, mx);
	free(buf);
	free(all);
}

/* Export for Prometheus: every value counted once, in increasing real
 * bucket edges, exact buckets when they fit, coarser when they do not. */
static void
test_export(void **state)
{
	static uint64_t up[SHP_HIST_BUCKETS], cnt[SHP_HIST_BUCKETS];
	struct shp_hist *h = hist_new();
	unsigned int k, n, i, nonempty = 0;
	uint64_t total;

	(void)state;
	assert_int_equal(shp_hist_export(h, 128, up, cnt), 0);
	for (k = 0; k < 1000; k++)
		shp_hist_record(h, 10000000 + rnd() % 100000);
	for (i = 0; i < SHP_HIST_BUCKETS; i++)
		nonempty += h->bucket[i] != 0;
	n = shp_hist_export(h, 128, up, cnt);
	assert_int_equal(n, nonempty);    /* few: exactly the buckets */
	for (i = 0, k = 0; i < SHP_HIST_BUCKETS; i++)
		if (h->bucket[i] != 0) {
			assert_int_equal(up[k], shp_hist_upper(i));
			assert_int_equal(cnt[k++], h->bucket[i]);
		}
	/* many: log-uniform over the whole range fills ~2000 buckets */
	for (k = 0; k < N; k++)
		shp_hist_record(h, draw(D_LOGUNIF));
	for (unsigned int max = 32; max <= 1024; max *= 2) {
		n = shp_hist_export(h, max, up, cnt);
		assert_true(n <= max && n > max / 4);
		for (i = 0, total = 0; i < n; i++) {
			assert_true(cnt[i] > 0);
			assert_true(i == 0 || up[i] > up[i - 1]);
			/* an edge: the next value starts another bucket */
			assert_int_not_equal(shp_hist_index(up[i]),
					     shp_hist_index(up[i] + 1));
			total += cnt[i];
		}
		assert_int_equal(total, h->count);
		assert_true(up[0] >= h->min && up[n - 1] >= h->max);
	}
	free(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_relative_error),
		cmocka_unit_test(test_percentiles),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_sub),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_stats_file_sojourn),
		cmocka_unit_test(test_export),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
