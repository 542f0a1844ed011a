/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <inttypes.h>
#include <rte_common.h>

#include "shp_units.h"
#include "shp_tbf.h"
#include "shp_rig.h"

static void
test_time(void **state)
{
	char err[SHP_ERR_LEN];
	uint64_t ns;

	(void)state;
	assert_int_equal(shp_parse_time("10ms", &ns, err), 0);
	assert_int_equal(ns, 10000000);
	assert_int_equal(shp_parse_time("1.5s", &ns, err), 0);
	assert_int_equal(ns, 1500000000);
	assert_int_equal(shp_parse_time("250usec", &ns, err), 0);
	assert_int_equal(ns, 250000);
	assert_int_equal(shp_parse_time("7ns", &ns, err), 0);
	assert_int_equal(ns, 7);
	/* tc reads a bare number as ns; we refuse and name the units */
	assert_int_equal(shp_parse_time("10", &ns, err), -1);
	assert_non_null(strstr(err, "unit"));
	assert_non_null(strstr(err, "ms"));
	assert_int_equal(shp_parse_time("-1ms", &ns, err), -1);
	assert_non_null(strstr(err, "negative"));
	assert_int_equal(shp_parse_time("5parsecs", &ns, err), -1);
	assert_non_null(strstr(err, "parsecs"));
	assert_int_equal(shp_parse_time("", &ns, err), -1);
}

/* `... for TIME`: cut off the end of a stage's words, bounded */
static void
test_split_for(void **state)
{
	char err[SHP_ERR_LEN], w[128];
	uint64_t ns;

	(void)state;
	snprintf(w, sizeof(w), "loss 100%% for 1s  ");
	assert_int_equal(shp_split_for(w, &ns, err), 1);
	assert_string_equal(w, "loss 100%");
	assert_int_equal(ns, UINT64_C(1000000000));
	snprintf(w, sizeof(w), "delay 10ms");
	assert_int_equal(shp_split_for(w, &ns, err), 0);
	assert_string_equal(w, "delay 10ms");
	assert_int_equal(ns, 0);
	snprintf(w, sizeof(w), "delay 10ms for 1ms");
	assert_int_equal(shp_split_for(w, &ns, err), 1);
	assert_int_equal(ns, SHP_FOR_MIN_NS);
	snprintf(w, sizeof(w), "delay 10ms for 86400s");
	assert_int_equal(shp_split_for(w, &ns, err), 1);
	assert_int_equal(ns, SHP_FOR_MAX_NS);
	snprintf(w, sizeof(w), "delay 10ms for 999us");
	assert_int_equal(shp_split_for(w, &ns, err), -1);
	assert_non_null(strstr(err, "at least 1ms"));
	snprintf(w, sizeof(w), "delay 10ms for 86401s");
	assert_int_equal(shp_split_for(w, &ns, err), -1);
	assert_non_null(strstr(err, "24 hours"));
	snprintf(w, sizeof(w), "delay 10ms for");
	assert_int_equal(shp_split_for(w, &ns, err), -1);
	assert_non_null(strstr(err, "needs a TIME"));
	snprintf(w, sizeof(w), "for 1s");
	assert_int_equal(shp_split_for(w, &ns, err), -1);
	assert_non_null(strstr(err, "comes before"));
	snprintf(w, sizeof(w), "delay 10ms for 10");
	assert_int_equal(shp_split_for(w, &ns, err), -1);
	assert_non_null(strstr(err, "unit"));
}

static void
test_size_rate(void **state)
{
	char err[SHP_ERR_LEN];
	uint64_t v;

	(void)state;
	assert_int_equal(shp_parse_size("10kb", &v, err), 0);
	assert_int_equal(v, 10240);
	assert_int_equal(shp_parse_size("1mb", &v, err), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(shp_parse_size("32kbit", &v, err), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(shp_parse_size("1500", &v, err), 0);
	assert_int_equal(v, 1500);
	assert_int_equal(shp_parse_size("3furlongs", &v, err), -1);
	assert_int_equal(shp_parse_rate("10mbit", &v, err), 0);
	assert_int_equal(v, 1250000);
	assert_int_equal(shp_parse_rate("1Gbit", &v, err), 0);
	assert_int_equal(v, 125000000);
	assert_int_equal(shp_parse_rate("2mbps", &v, err), 0);
	assert_int_equal(v, 2000000);       /* bytes per second */
	assert_int_equal(shp_parse_rate("800kbit", &v, err), 0);
	assert_int_equal(v, 100000);
	assert_int_equal(shp_parse_rate("0mbit", &v, err), -1);
	assert_int_equal(shp_parse_rate("fast", &v, err), -1);
}

static void
test_percent(void **state)
{
	char err[SHP_ERR_LEN];
	double f;

	(void)state;
	assert_int_equal(shp_parse_percent("5%", &f, err), 0);
	assert_true(f > 0.0499999 && f < 0.0500001);
	assert_int_equal(shp_parse_percent("0.5", &f, err), 0);
	assert_true(f > 0.0049999 && f < 0.0050001);
	assert_int_equal(shp_parse_percent("101%", &f, err), -1);
	assert_non_null(strstr(err, "0..100"));
	assert_int_equal(shp_parse_percent("-3%", &f, err), -1);
	assert_int_equal(shp_parse_percent("5x", &f, err), -1);
}

static void
test_tbf_parse(void **state)
{
	struct shp_tbf_conf c;
	char err[SHP_ERR_LEN], buf[256];

	(void)state;
	assert_int_equal(shp_tbf_parse("rate 10mbit burst 10kb limit 1mb",
				       &c, err), 0);
	assert_int_equal(c.rate, 1250000);
	assert_int_equal(c.burst, 10240);
	assert_int_equal(c.limit, 1048576);
	assert_int_equal(c.max_size, 10240);
	/* latency -> limit = rate * latency + burst (iproute2) */
	assert_int_equal(shp_tbf_parse("rate 50mbit burst 32kb latency 50ms",
				       &c, err), 0);
	assert_int_equal(c.limit, 6250000 / 20 + 32768);
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 10kb limit 100kb "
				       "peakrate 2mbit mtu 1600", &c, err), 0);
	assert_int_equal(c.max_size, 1600);
	/* round trip */
	shp_tbf_format(&c, buf, sizeof(buf));
	{
		struct shp_tbf_conf d;

		assert_int_equal(shp_tbf_parse(buf, &d, err), 0);
		assert_int_equal(d.rate, c.rate);
		assert_int_equal(d.burst, c.burst);
		assert_int_equal(d.limit, c.limit);
		assert_int_equal(d.peakrate, c.peakrate);
		assert_int_equal(d.mtu, c.mtu);
	}
	assert_int_equal(shp_tbf_parse("burst 10kb limit 1mb", &c, err), -1);
	assert_non_null(strstr(err, "rate"));
	assert_int_equal(shp_tbf_parse("rate 1mbit limit 1mb", &c, err), -1);
	assert_non_null(strstr(err, "burst"));
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 1kb", &c, err), -1);
	assert_non_null(strstr(err, "limit"));
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 1kb limit 1kb "
				       "peakrate 2mbit", &c, err), -1);
	assert_non_null(strstr(err, "mtu"));
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 1kb limit 1kb "
				       "colour red", &c, err), -1);
	assert_non_null(strstr(err, "colour"));
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 1kb latency 10m",
				       &c, err), -1);
	assert_non_null(strstr(err, "unit"));
	/* a bare latency is microseconds, as tc's get_time */
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 1kb latency 2000",
				       &c, err), 0);
	assert_int_equal(c.latency, 2000000);
	assert_int_equal(shp_tbf_parse("rate", &c, err), -1);
	assert_non_null(strstr(err, "rate"));
}

/* Issue 11.1: a bare rate is bits per second, as tc's get_rate; tc's
 * binary prefixes up to tebi. */
static void
test_rate_bits(void **state)
{
	char err[SHP_ERR_LEN];
	uint64_t v;

	(void)state;
	assert_int_equal(shp_parse_rate("1000000", &v, err), 0);
	assert_int_equal(v, 125000);
	assert_int_equal(shp_parse_rate("1tibit", &v, err), 0);
	assert_int_equal(v, 1ULL << 37);
	assert_int_equal(shp_parse_rate("1TiBps", &v, err), 0);
	assert_int_equal(v, 1ULL << 40);
	assert_int_equal(shp_parse_rate("3kibit", &v, err), 0);
	assert_int_equal(v, 384);
	assert_int_equal(shp_parse_rate("2tbps", &v, err), 0);
	assert_int_equal(v, 2000000000000ULL);
	assert_int_equal(shp_parse_rate("12bit", &v, err), 0);
	assert_int_equal(v, 1);     /* truncated, as get_rate */
	assert_int_equal(shp_parse_rate("7", &v, err), -1);   /* < 1 B/s */
}

/* Issue 15.2: sizes and rates between 2^63 and 2^64 are what they say
 * (llround made them 2^63), beyond is refused. */
static void
test_big_values(void **state)
{
	char err[SHP_ERR_LEN];
	uint64_t v;

	(void)state;
	assert_int_equal(shp_parse_size("9223372036854775809", &v, err), 0);
	assert_true(v == 9223372036854775809ULL);
	assert_int_equal(shp_parse_size("18446744073709551615b", &v, err), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(shp_parse_size("1.5e19", &v, err), 0);
	assert_true(v == 15000000000000000000ULL);
	assert_int_equal(shp_parse_size("18446744073709551616", &v, err), -1);
	assert_int_equal(shp_parse_size("16777216tb", &v, err), -1);
	assert_int_equal(shp_parse_size("2e19", &v, err), -1);
	assert_non_null(strstr(err, "too large"));
	assert_int_equal(shp_parse_rate("147573952589676412920bit", &v, err),
			 0);
	assert_true(v == 18446744073709551615ULL);
	assert_int_equal(shp_parse_rate("10000000000000000000bps", &v, err),
			 0);
	assert_true(v == 10000000000000000000ULL);
	assert_int_equal(shp_parse_rate("18446744073709551616bps", &v, err),
			 -1);
}

/* Issue 15.6: the printers write what parses back to the same value. */
static void
test_fmt_exact(void **state)
{
	static const uint64_t times[] = { 0, 1, 999, 1000, 1234567,
		1500000000, 86400000000000ULL, 86399999999999ULL };
	static const uint64_t rates[] = { 1, 7, 125, 123456789, 125000000,
		2500000000000000000ULL, UINT64_MAX / 8, UINT64_MAX / 8 + 1,
		UINT64_MAX };
	char buf[64], err[SHP_ERR_LEN];
	uint64_t v;
	size_t i;

	(void)state;
	shp_fmt_time(buf, sizeof(buf), 1234567);
	assert_string_equal(buf, "1234567ns");
	shp_fmt_rate(buf, sizeof(buf), 123456789);
	assert_string_equal(buf, "987654312bit");
	shp_fmt_rate(buf, sizeof(buf), 1250000);
	assert_string_equal(buf, "10Mbit");
	{
		struct shp_tbf_conf c;
		char line[256];

		assert_int_equal(shp_tbf_parse("rate 123456789bps burst 10kb "
					       "latency 1234567ns", &c, err), 0);
		shp_tbf_format(&c, line, sizeof(line));
		assert_string_equal(line, "rate 987654312bit burst 10240b "
				    "latency 1234567ns");
	}
	for (i = 0; i < RTE_DIM(times); i++) {
		shp_fmt_time(buf, sizeof(buf), times[i]);
		assert_int_equal(shp_parse_time(buf, &v, err), 0);
		assert_true(v == times[i]);
	}
	for (i = 0; i < RTE_DIM(rates); i++) {
		shp_fmt_rate(buf, sizeof(buf), rates[i]);
		if (shp_parse_rate(buf, &v, err) != 0 || v != rates[i])
			fail_msg("%" PRIu64 " printed '%s'", rates[i], buf);
	}
}

/* Issue 11.3: tc's keyword matching for tbf too, and its error prefix. */
static void
test_tbf_words(void **state)
{
	struct shp_tbf_conf c;
	char err[SHP_ERR_LEN];

	(void)state;
	assert_int_equal(shp_tbf_parse("rate 1mbit bu 10kb lat 50ms peak 2mbit "
				       "mtu 1600 o 24 mpu 64b linkl atm", &c,
				       err), 0);
	assert_int_equal(c.rate, 125000);
	assert_int_equal(c.burst, 10240);
	assert_int_equal(c.latency, 50000000);
	assert_int_equal(c.peakrate, 250000);
	assert_int_equal(c.mtu, 1600);
	assert_int_equal(c.overhead, 24);
	assert_int_equal(c.mpu, 64);
	assert_int_equal(c.atm, 1);
	assert_int_equal(shp_tbf_parse("rate 1000000 b 1000 l 100kb", &c, err),
			 0);
	assert_int_equal(c.rate, 125000);      /* bits, as tc */
	assert_int_equal(c.limit, 102400);
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 1kb limit 1kb "
				       "colour red", &c, err), -1);
	assert_int_equal(strncmp(err, "tbf: ", 5), 0);
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 1kb latency 10m",
				       &c, err), -1);
	assert_int_equal(strncmp(err, "tbf: latency: ", 14), 0);
	/* what tc does not let be abbreviated */
	assert_int_equal(shp_tbf_parse("r 1mbit burst 1kb limit 1kb", &c, err),
			 -1);
	assert_non_null(strstr(err, "'r'"));
}

/*
 * Issue 11.2: the bucket is the time to send burst as psched_l2t_ns
 * counts it. tc shows it back in bytes at the rate, one less than
 * counted (ns truncated): burst 10263b for `burst 10kb overhead 24`,
 * 11341b with `linklayer atm`.
 */
static void
test_tbf_bucket(void **state)
{
	struct shp_tbf_conf c;
	char err[SHP_ERR_LEN];

	(void)state;
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 10kb limit 1mb "
				       "overhead 24", &c, err), 0);
	/* 10264 bytes at 125000 B/s = 82.112 ms */
	assert_true(c.buffer_t >> SHP_TBF_SHIFT == 82112000 ||
		    c.buffer_t >> SHP_TBF_SHIFT == 82111999);
	assert_int_equal(c.max_size, 10240);
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 10kb limit 1mb "
				       "linklayer atm", &c, err), 0);
	/* 214 cells of 53 = 11342 bytes = 90.736 ms */
	assert_true(c.buffer_t >> SHP_TBF_SHIFT == 90736000 ||
		    c.buffer_t >> SHP_TBF_SHIFT == 90735999);
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 10kb limit 1mb "
				       "peakrate 2mbit mtu 1514 mpu 2000", &c,
				       err), 0);
	assert_int_equal(c.max_size, 1514);
	/* mtu raised to mpu: 2000 bytes at 250000 B/s */
	assert_true(c.mtu_t >> SHP_TBF_SHIFT == 8000000 ||
		    c.mtu_t >> SHP_TBF_SHIFT == 7999999);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t
rnd(void)
{
	return shp_rig_xorshift(&rng_state);
}

/* Issue 15.6: shp_tbf_format parses back to the same conf, for 20000
 * random ones (with odd rates, times and sizes). */
static void
test_tbf_format_random(void **state)
{
	static const char *const ru[] = { "bit", "kbit", "mbit", "gbit",
		"bps", "kibps", "" };
	char text[512], out[512], err[SHP_ERR_LEN];
	struct shp_tbf_conf a, b;
	int i, accepted = 0;

	(void)state;
	for (i = 0; i < 20000; i++) {
		uint64_t rate = 8 + rnd() % (rnd() % 2 ? (uint64_t)1e12 :
					     (uint64_t)1e8);
		const char *u = ru[rnd() % RTE_DIM(ru)];
		int n;

		n = snprintf(text, sizeof(text), "rate %" PRIu64 "%s burst "
			     "%" PRIu64 " ", rate, u, 1 + rnd() % 10000000);
		if (rnd() % 2)
			n += snprintf(text + n, sizeof(text) - n,
				      "latency %" PRIu64 "ns",
				      rnd() % (uint64_t)86400000000000);
		else
			n += snprintf(text + n, sizeof(text) - n,
				      "limit %" PRIu64, rnd());
		if (rnd() % 3 == 0)
			n += snprintf(text + n, sizeof(text) - n,
				      " peakrate %" PRIu64 "%s mtu %" PRIu64,
				      rate * (2 + rnd() % 10), u,
				      1 + rnd() % 100000);
		if (rnd() % 2)
			n += snprintf(text + n, sizeof(text) - n,
				      " overhead %d mpu %" PRIu64 "%s",
				      (int)(rnd() % 2000) - 1000,
				      rnd() % 65536,
				      rnd() % 2 ? " linklayer atm" : "");
		if (shp_tbf_parse(text, &a, err) < 0)
			continue;
		accepted++;
		shp_tbf_format(&a, out, sizeof(out));
		if (shp_tbf_parse(out, &b, err) < 0)
			fail_msg("'%s' printed '%s': %s", text, out, err);
		b.hdr.id = a.hdr.id;
		if (memcmp(&a, &b, sizeof(a)) != 0)
			fail_msg("'%s' printed '%s', read back differently",
				 text, out);
	}
	print_message("%d of 20000 accepted\n", accepted);
	assert_true(accepted > 10000);
}

/* An excerpt for an error line: printable ASCII as it is, every other
 * byte, a quote and a backslash escaped, bounded, "..." when cut. */
static void
test_fmt_excerpt(void **state)
{
	char buf[4 * 8 + 4], small[6];

	(void)state;
	shp_fmt_excerpt(buf, sizeof(buf), "abc", 8);
	assert_string_equal(buf, "abc");
	shp_fmt_excerpt(buf, sizeof(buf), "\x1b[2J\xff'\\", 8);
	assert_string_equal(buf, "\\x1b[2J\\xff\\x27\\x5c");
	shp_fmt_excerpt(buf, sizeof(buf), "0123456789", 8);
	assert_string_equal(buf, "01234567...");
	/* the worst case fits what the header promises */
	shp_fmt_excerpt(buf, sizeof(buf), "\x01\x02\x03\x04\x05\x06\x07"
			"\x08\x09", 8);
	assert_string_equal(buf, "\\x01\\x02\\x03\\x04\\x05\\x06\\x07"
			    "\\x08...");
	/* a short buffer: cut at a whole byte's text, terminated */
	shp_fmt_excerpt(small, sizeof(small), "ab\x01", 8);
	assert_string_equal(small, "ab");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_split_for),
		cmocka_unit_test(test_size_rate),
		cmocka_unit_test(test_rate_bits),
		cmocka_unit_test(test_big_values),
		cmocka_unit_test(test_fmt_exact),
		cmocka_unit_test(test_tbf_words),
		cmocka_unit_test(test_tbf_bucket),
		cmocka_unit_test(test_tbf_format_random),
		cmocka_unit_test(test_percent),
		cmocka_unit_test(test_tbf_parse),
		cmocka_unit_test(test_fmt_excerpt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
