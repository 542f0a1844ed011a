/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem's outage and ber (docs/time-varying.md) against their models,
 * with 99.9% bounds (3.29 standard errors): the hit probability of a bit
 * error rate against 1 - (1 - ber)^(8 len), the bits a hit packet loses
 * against the binomial given at least one, the mean up and down periods
 * of an outage against their means.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "shp_kind.h"
#include "shp_meta.h"
#include "shp_netem.h"
#include "shp_rig.h"

#define Z999 3.29
#define MS UINT64_C(1000000)

static void
assert_within(const char *what, double est, double theory, double se)
{
	print_message("%-34s %.6g theory %.6g bound +-%.3g\n", what, est,
		      theory, Z999 * se);
	if (fabs(est - theory) > Z999 * se)
		fail_msg("%s: %.6g, theory %.6g, beyond +-%.3g", what, est,
			 theory, Z999 * se);
}

static uint64_t
drops(const struct shp_rig *r, const char *cause)
{
	int i = shp_drop_index(cause);

	assert_true(i >= 0);
	return r->c->drops[i];
}

/* --------------------------------------------------------------- ber */

static uint16_t pkt_len;

static struct rte_mbuf *
mk_zero(uint64_t seq, uint64_t now)
{
	(void)seq;
	return shp_rig_pkt(pkt_len, 0, now);
}

/* popcount histogram of what left (the packets were all zeros) */
struct bits {
	uint64_t hist[64];
	uint64_t total;
};

static void
count_bits(struct shp_rig *r, struct rte_mbuf *m)
{
	struct bits *b = r->arg;
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	unsigned int i, n = 0;

	for (i = 0; i < rte_pktmbuf_pkt_len(m); i++)
		n += (unsigned int)__builtin_popcount(d[i]);
	b->hist[RTE_MIN(n, 63u)]++;
	b->total += n;
}

static void
rig_ber(struct shp_rig *r, const char *args, struct bits *b, uint64_t n,
	uint16_t len)
{
	shp_rig_init(r, 0);
	shp_rig_add(r, "netem", args);
	memset(b, 0, sizeof(*b));
	r->on_pkt = count_bits;
	r->arg = b;
	pkt_len = len;
	shp_rig_stream(r, n, 1000, mk_zero);
}

/* 1250-byte packets (10^4 bits) at ber 1e-4: a mean of 1 bad bit a
 * packet, so that hits of 1, 2, 3 and 4 bits are all frequent. */
static void
test_ber_corrupt(void **state)
{
	const uint64_t n = 300000;
	const double p = 1e-4, bits = 10000;
	double q0 = pow(1 - p, bits), hit = 1 - q0, pk, est;
	double mean, var;
	uint64_t hits;
	struct shp_rig r;
	struct bits b;
	unsigned int k;

	(void)state;
	rig_ber(&r, "ber 1e-4", &b, n, 1250);
	assert_int_equal(r.out, n);
	hits = n - b.hist[0];
	assert_int_equal(hits, SHP_XSTAT(r.c, "netem", "corrupted"));
	assert_int_equal(b.total, SHP_XSTAT(r.c, "netem", "ber_bits"));
	est = (double)hits / n;
	assert_within("ber 1e-4 x 1250 B: hit", est, hit,
		      sqrt(hit * (1 - hit) / n));
	/* P(K = k | K >= 1) for K binomial(10^4, 1e-4) */
	pk = q0;
	for (k = 1; k <= 5; k++) {
		char what[64];

		pk *= (bits - k + 1) / k * p / (1 - p);
		snprintf(what, sizeof(what), "  bits flipped = %u | hit", k);
		est = (double)b.hist[k] / hits;
		assert_within(what, est, pk / hit,
			      sqrt(pk / hit * (1 - pk / hit) / hits));
	}
	/* E[K | K >= 1] and its standard error */
	mean = bits * p / hit;
	var = (bits * p * (1 - p) + bits * p * bits * p) / hit - mean * mean;
	assert_within("  bits flipped per hit", (double)b.total / hits, mean,
		      sqrt(var / hits));
	shp_rig_fini(&r);
}

/* drop mode, at a realistic rate: 1500-byte packets at 1e-6. */
static void
test_ber_drop(void **state)
{
	const uint64_t n = 400000;
	const double hit = 1 - pow(1 - 1e-6, 12000);
	struct shp_rig r;
	struct bits b;

	(void)state;
	rig_ber(&r, "ber 1e-6 drop", &b, n, 1500);
	assert_int_equal(b.hist[0], r.out);   /* nothing corrupted */
	assert_int_equal(SHP_XSTAT(r.c, "netem", "corrupted"), 0);
	assert_int_equal(r.out + drops(&r, "lost_ber"), n);
	assert_within("ber 1e-6 drop x 1500 B: lost", (double)drops(&r,
		      "lost_ber") / n, hit, sqrt(hit * (1 - hit) / n));
	shp_rig_fini(&r);
}

/* The same seed hits the same packets; the BER stream is its own: a
 * loss model beside it changes no BER decision of a packet kept. */
static void
test_ber_seeded(void **state)
{
	struct shp_rig a, c;
	struct bits ba, bc;

	(void)state;
	rig_ber(&a, "ber 1e-4 seed 7", &ba, 20000, 1250);
	rig_ber(&c, "ber 1e-4 seed 7", &bc, 20000, 1250);
	assert_memory_equal(ba.hist, bc.hist, sizeof(ba.hist));
	shp_rig_fini(&a);
	shp_rig_fini(&c);
	rig_ber(&a, "ber 1e-4 seed 8", &ba, 20000, 1250);
	assert_memory_not_equal(ba.hist, bc.hist, sizeof(ba.hist));
	shp_rig_fini(&a);
}

/* ------------------------------------------------------------ outage */

#define OUT_N 600000   /* 600 s, one packet a ms */

struct onoff {
	uint8_t *up;       /* by packet: it left */
};

static void
mark_up(struct shp_rig *r, struct rte_mbuf *m)
{
	struct onoff *o = r->arg;

	o->up[shp_meta(m)->rx_ns / MS] = 1;
}

/* Lengths (ms) of the complete runs of `state`: the first and the last
 * run are cut by the ends, and left out. */
static void
runs(const uint8_t *up, uint8_t state, double *mean, uint64_t *nb,
     uint64_t *longer_than, double thr)
{
	uint64_t i = 0, start, sum = 0;

	*nb = 0;
	*longer_than = 0;
	while (i < OUT_N && up[i] == up[0])
		i++;
	while (i < OUT_N) {
		start = i;
		while (i < OUT_N && up[i] == up[start])
			i++;
		if (i == OUT_N)
			break;
		if (up[start] != state)
			continue;
		sum += i - start;
		(*nb)++;
		*longer_than += (double)(i - start) > thr;
	}
	*mean = *nb ? (double)sum / (double)*nb : 0;
}

static void
check_periods(const char *args, double on, double off)
{
	struct shp_rig r;
	struct onoff o;
	double m, e = exp(-1);
	uint64_t nb, longer, left = 0, i;
	char what[96];

	o.up = calloc(OUT_N, 1);
	assert_non_null(o.up);
	shp_rig_init(&r, 0);
	shp_rig_add(&r, "netem", args);
	r.on_pkt = mark_up;
	r.arg = &o;
	shp_rig_stream(&r, OUT_N, MS, NULL);
	for (i = 0; i < OUT_N; i++)
		left += o.up[i];
	assert_int_equal(left, r.out);
	assert_int_equal(drops(&r, "link_down"), OUT_N - r.out);
	/* the link starts up */
	assert_int_equal(o.up[0], 1);

	/* an exponential's standard deviation is its mean; the 1 ms
	 * sampling adds a uniform error of at most 1 ms a run */
	runs(o.up, 1, &m, &nb, &longer, on);
	snprintf(what, sizeof(what), "%s: up mean (%" PRIu64 ")", args, nb);
	assert_true(nb > 1000);
	assert_within(what, m, on, sqrt((on * on + 1) / (double)nb));
	snprintf(what, sizeof(what), "%s: up > mean", args);
	assert_within(what, (double)longer / nb, e, sqrt(e * (1 - e) / nb) +
		      0.003);
	runs(o.up, 0, &m, &nb, &longer, off);
	snprintf(what, sizeof(what), "%s: down mean (%" PRIu64 ")", args,
		 nb);
	assert_within(what, m, off, sqrt((off * off + 1) / (double)nb));
	snprintf(what, sizeof(what), "%s: down > mean", args);
	assert_within(what, (double)longer / nb, e, sqrt(e * (1 - e) / nb) +
		      0.003);
	shp_rig_fini(&r);
	free(o.up);
}

static void
test_outage_periods(void **state)
{
	(void)state;
	check_periods("outage 100ms 50ms", 100, 50);
	check_periods("outage 40ms 200ms seed 3", 40, 200);
}

/* The timeline depends on the seed and the times only: other
 * impairments beside it change no packet's up or down. */
static void
test_outage_seeded(void **state)
{
	struct shp_rig a, c;
	struct onoff oa, oc;
	uint64_t i, both = 0;

	(void)state;
	oa.up = calloc(20000, 1);
	oc.up = calloc(20000, 1);
	assert_true(oa.up != NULL && oc.up != NULL);
	shp_rig_init(&a, 0);
	shp_rig_add(&a, "netem", "outage 30ms 20ms seed 5");
	a.on_pkt = mark_up;
	a.arg = &oa;
	shp_rig_stream(&a, 20000, MS, NULL);
	shp_rig_init(&c, 0);
	shp_rig_add(&c, "netem", "outage 30ms 20ms loss 10% seed 5");
	c.on_pkt = mark_up;
	c.arg = &oc;
	shp_rig_stream(&c, 20000, MS, NULL);
	/* what c kept, a kept too; what a dropped as link_down, c did */
	for (i = 0; i < 20000; i++) {
		assert_false(oc.up[i] && !oa.up[i]);
		both += oa.up[i] && oc.up[i];
	}
	assert_int_equal(drops(&a, "link_down"), drops(&c, "link_down"));
	assert_true(both > 0);
	shp_rig_fini(&a);
	shp_rig_fini(&c);
	free(oa.up);
	free(oc.up);
}

/* After an idle of many cycles the timeline jumps (no draw per period
 * missed) and goes on alternating: half the packets up after an hour of
 * silence, as before it. */
static void
test_outage_after_idle(void **state)
{
	const uint64_t n = 40000, gap = 100000;   /* 4 s at 10 kpps */
	struct shp_rig r;
	struct rte_mbuf *m;
	uint64_t i, t, before = 0, after;

	(void)state;
	shp_rig_init(&r, 0);
	shp_rig_add(&r, "netem", "outage 2ms 2ms");
	for (i = 0; i < 2 * n; i++) {
		t = i * gap + (i >= n ? 3600 * UINT64_C(1000000000) : 0);
		if (i == n)
			before = r.out;
		m = shp_rig_pkt(100, 0, t);
		shp_rig_enqueue_at(&r, t, &m, 1);
		r.ctx.now = t;
		shp_rig_poll(&r);
	}
	after = r.out - before;
	/* 2000 cycles each side: the share up is 1/2 within a few % */
	print_message("up before the idle %.4f, after %.4f\n",
		      (double)before / n, (double)after / n);
	assert_true(fabs((double)before / n - 0.5) < 0.05);
	assert_true(fabs((double)after / n - 0.5) < 0.05);
	assert_int_equal(drops(&r, "link_down"), 2 * n - r.out);
	shp_rig_fini(&r);
}

/* ------------------------------------------------------------ parser */

static void
test_parse(void **state)
{
	static const struct {
		const char *in, *out;
	} good[] = {
		{ "outage 1s 500ms", "outage 1s 500ms" },
		{ "ber 1e-6", "ber 1e-06" },
		{ "ber 0.001 corrupt", "ber 0.001" },
		{ "ber 1e-6 drop", "ber 1e-06 drop" },
		/* drop followed by a number is the loss keyword */
		{ "ber 1e-6 drop 5%", "loss random 5% ber 1e-06" },
		{ "ber 1e-6 corrupt 1%", "corrupt 1% ber 1e-06" },
		{ "ber 1e-6 drop state 1%", "loss state 1% 99% 0% 100% 0% "
		  "ber 1e-06" },
		{ "ber 1e-6 drop seed 3", "ber 1e-06 drop seed 3" },
		{ "outage 86400s 1us", "outage 86400s 1us" },
	};
	static const char *const bad[] = {
		"ber 0", "ber 1", "ber 1.5", "ber -1e-6", "ber x", "ber",
		"ber 1e-6x", "outage 1s", "outage 0s 1s", "outage 1s 0s",
		"outage 1 1", "outage", "outage 1s 86401s", "outage 86401s 1s",
	};
	char err[SHP_ERR_LEN], buf[512];
	struct shp_netem_conf *c;
	unsigned int i;

	(void)state;
	for (i = 0; i < RTE_DIM(good); i++) {
		c = shp_netem_parse(good[i].in, err);
		if (c == NULL)
			fail_msg("'%s': %s", good[i].in, err);
		shp_netem_conf_format(c, buf, sizeof(buf));
		if (strcmp(buf, good[i].out) != 0)
			fail_msg("'%s' printed '%s', not '%s'", good[i].in,
				 buf, good[i].out);
		shp_netem_conf_free(c);
	}
	for (i = 0; i < RTE_DIM(bad); i++) {
		err[0] = '\0';
		c = shp_netem_parse(bad[i], err);
		if (c != NULL || err[0] == '\0' || strchr(err, '\n'))
			fail_msg("'%s' taken (%s)", bad[i], err);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_ber_corrupt),
		cmocka_unit_test(test_ber_drop),
		cmocka_unit_test(test_ber_seeded),
		cmocka_unit_test(test_outage_periods),
		cmocka_unit_test(test_outage_seeded),
		cmocka_unit_test(test_outage_after_idle),
	};

	shp_rig_env("netem_timevar", 4096);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
