/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The policer's grammar and bucket (shp_police.h): parse, print and
 * reparse; what it refuses; and on a 30 Mbit/s input to a 10 Mbit/s
 * policer, the bytes it lets through in every interval, exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <inttypes.h>

#include "shp_police.h"
#include "shp_units.h"

static void
parse_ok(const char *args, struct shp_tbf_conf *c)
{
	char err[SHP_ERR_LEN];

	if (shp_police_parse(args, c, err) != 0)
		fail_msg("'%s': %s", args, err);
}

/* equal but the id */
static void
assert_same(struct shp_tbf_conf a, struct shp_tbf_conf b)
{
	a.hdr.id = b.hdr.id = 0;
	assert_memory_equal(&a, &b, sizeof(a));
}

static void
test_parse_print(void **state)
{
	static const char *const texts[] = {
		"rate 10mbit burst 10kb",
		"rate 1mbit burst 1600 mtu 1514",
		"rate 1mbit burst 3000 peakrate 2mbit mtu 1500",
		"rate 100kbit burst 20k overhead 24 mpu 64",
		"rate 2mbit burst 5k linklayer atm overhead -4",
		"rate 10gbit burst 1mb linklayer ethernet",
		/* abbreviations as q_tbf.c allows */
		"rate 10mbit bu 10kb pe 20mbit mtu 1514 o 4 li atm",
	};
	struct shp_tbf_conf c, d;
	char buf[256], buf2[256];
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		parse_ok(texts[i], &c);
		assert_true(shp_police_format(&c, buf, sizeof(buf)) <
			    (int)sizeof(buf));
		parse_ok(buf, &d);
		assert_same(c, d);
		shp_police_format(&d, buf2, sizeof(buf2));
		assert_string_equal(buf, buf2);
	}
	parse_ok("rate 10mbit burst 10kb", &c);
	assert_int_equal(c.rate, 1250000);
	assert_int_equal(c.burst, 10240);
	assert_int_equal(c.limit, 0);
	assert_int_equal(c.max_size, SHP_POLICE_DEFAULT_MTU);
	shp_police_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "rate 10Mbit burst 10240b");
	parse_ok("rate 1mbit burst 3000 peakrate 2mbit mtu 1500", &c);
	assert_int_equal(c.max_size, 1500);
	assert_int_equal(c.peakrate, 250000);
}

static void
refused(const char *args, const char *word)
{
	char err[SHP_ERR_LEN];
	struct shp_tbf_conf c;

	memset(&c, 0x5a, sizeof(c));
	if (shp_police_parse(args, &c, err) == 0)
		fail_msg("'%s' was taken", args);
	if (strstr(err, word) == NULL)
		fail_msg("'%s': '%s' does not name '%s'", args, err, word);
	assert_non_null(strstr(err, "police"));
	assert_null(strchr(err, '\n'));
}

static void
test_refused(void **state)
{
	(void)state;
	refused("rate 10mbit burst 10kb limit 10kb", "limit");
	refused("rate 10mbit burst 10kb latency 50ms", "latency");
	refused("burst 10kb", "rate");
	refused("rate 10mbit", "burst");
	refused("rate 10mbit burst 0", "burst");
	refused("rate 1mbit burst 3000 peakrate 2mbit", "mtu");
	refused("rate 2mbit burst 3000 peakrate 1mbit mtu 1500", "peakrate");
	refused("rate 10mbit burst 10kb linklayer token-ring", "token-ring");
	refused("rate 10mbit burst 10kb conform-exceed drop", "conform-exceed");
	refused("rate 10furlongs burst 10kb", "furlongs");
	refused("rate 10mbit burst 10kb mpu 70000", "mpu");
	refused("rate 8bit burst 1gb", "burst");
	/* tbf's own words stay tbf's: a tbf text still takes its limit */
	{
		char err[SHP_ERR_LEN];
		struct shp_tbf_conf c;

		assert_int_equal(shp_tbf_parse("rate 10mbit burst 10kb "
					       "limit 10kb", &c, err), 0);
		assert_int_equal(shp_tbf_parse("rate 10mbit burst 10kb", &c,
					       err), -1);
	}
}

/* a small deterministic generator: the test is the same every run */
static uint64_t
next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * pkts packets of 64..1514 bytes arriving back to back at in_rate
 * bytes/s, with an idle gap of `gap` ns after every 1000 (so that the
 * bucket fills up again), through the policer of args. For what passes, the bytes in
 * every interval [t_i, t_j] (both packets included) are at most
 * rate * (t_j - t_i) + burst, checked for every pair in one pass: the
 * bound holds for all i <= j iff S_j - r t_j <= min_i (S_{i-1} - r t_i)
 * + burst. Returns the bytes passed; *first and *last their times.
 */
static uint64_t
run(const char *args, uint64_t in_rate, uint64_t gap, unsigned int pkts,
    uint64_t *first, uint64_t *last, uint64_t *drops)
{
	struct shp_tbf_conf c;
	struct shp_police_state s;
	uint64_t x = 88172645463325252ull, sent_in = 0, passed = 0;
	/* bytes x 1e9 against rate x ns: exact in 64 bits for a run of
	 * some seconds (a double could see a bound met exactly as passed) */
	int64_t low = INT64_MAX, v;
	unsigned int i;

	parse_ok(args, &c);
	*first = UINT64_MAX;
	*drops = 0;
	shp_police_init(&s, &c, 0);
	for (i = 0; i < pkts; i++) {
		uint32_t len = 64 + (uint32_t)(next_rand(&x) % (1514 - 64 + 1));
		/* arrival when the input's line has carried what came before */
		uint64_t now = (uint64_t)((unsigned __int128)sent_in *
					  1000000000 / in_rate) +
			       (uint64_t)(i / 1000) * gap;

		sent_in += len;
		if (!shp_police_conform(&s, &c, len, now)) {
			(*drops)++;
			continue;
		}
		if (*first == UINT64_MAX)
			*first = now;
		*last = now;
		v = (int64_t)passed * 1000000000 - (int64_t)(c.rate * now);
		if (v < low)
			low = v;
		passed += len;
		v = (int64_t)passed * 1000000000 - (int64_t)(c.rate * now);
		if (v > low + (int64_t)c.burst * 1000000000)
			fail_msg("%s: packet %u at %" PRIu64 " ns: %" PRId64
				 " nbytes over rate x interval + burst", args,
				 i, now, v - low - (int64_t)c.burst *
				 1000000000);
	}
	return passed;
}

static void
test_rate_exact(void **state)
{
	uint64_t first, last = 0, drops, passed;
	double rate;

	(void)state;
	/* 30 Mbit/s for about 20 s into 10 Mbit/s */
	passed = run("rate 10mbit burst 10kb", 3750000, 0, 95000, &first,
		     &last, &drops);
	assert_true(drops > 0);
	assert_true(last - first > 19000000000ull);
	/* bytes over the time they took: the burst comes on top of it */
	rate = (double)(passed - 10240) * 1e9 / (double)(last - first);
	if (rate < 1250000 * 0.995 || rate > 1250000 * 1.005)
		fail_msg("long-run %.1f bytes/s against 1250000", rate);
	/* below the rate nothing is dropped */
	run("rate 10mbit burst 10kb", 1000000, 0, 20000, &first, &last,
	    &drops);
	assert_int_equal(drops, 0);
	/* on and off, 50 ms idle after each 1000 packets: each burst
	 * starts on a full bucket, and no interval holds more than it */
	run("rate 10mbit burst 10kb", 3750000, 50000000, 50000, &first,
	    &last, &drops);
	assert_true(drops > 0);
	/* the same with every option that changes a packet's cost */
	run("rate 10mbit burst 10kb peakrate 20mbit mtu 1514 overhead 24 "
	    "mpu 64", 3750000, 50000000, 50000, &first, &last, &drops);
	assert_true(drops > 0);
}

static void
test_bucket(void **state)
{
	struct shp_tbf_conf c;
	struct shp_police_state s;
	unsigned int n = 0;

	(void)state;
	/* 1000 bytes/s, 3000 bytes of burst: three 1000-byte frames at 0,
	 * then one a second */
	parse_ok("rate 8kbit burst 3000", &c);
	shp_police_init(&s, &c, 0);
	while (shp_police_conform(&s, &c, 1000, 0))
		n++;
	assert_int_equal(n, 3);
	/* a drop leaves the bucket as it was: half a second later still
	 * nothing, a second after the burst one frame */
	assert_false(shp_police_conform(&s, &c, 1000, 500000000));
	assert_false(shp_police_conform(&s, &c, 1000, 999999999));
	assert_true(shp_police_conform(&s, &c, 1000, 1000000000));
	assert_false(shp_police_conform(&s, &c, 1000, 1000000000));
	/* a stamp from before the last conforming packet (two RX lcores'
	 * packets met in one inbox) adds nothing: it does not wrap round
	 * to a full bucket */
	assert_false(shp_police_conform(&s, &c, 1000, 999999999));
	assert_false(shp_police_conform(&s, &c, 1000, 0));
	assert_true(shp_police_conform(&s, &c, 1000, 2000000000));
	/* a long idle refills to the burst, no more */
	n = 0;
	while (shp_police_conform(&s, &c, 1000, 3600000000000ull))
		n++;
	assert_int_equal(n, 3);
	/* the kernel's largest frame without an mtu, and with one */
	parse_ok("rate 1gbit burst 1mb", &c);
	shp_police_init(&s, &c, 0);
	assert_true(shp_police_conform(&s, &c, SHP_POLICE_DEFAULT_MTU, 0));
	assert_false(shp_police_conform(&s, &c, SHP_POLICE_DEFAULT_MTU + 1,
					0));
	parse_ok("rate 1gbit burst 1mb mtu 1000", &c);
	shp_police_init(&s, &c, 0);
	assert_true(shp_police_conform(&s, &c, 1000, 0));
	assert_false(shp_police_conform(&s, &c, 1001, 0));
	/* overhead counts against the bucket: 976 + 24 is 1000 */
	parse_ok("rate 8kbit burst 3000 overhead 24", &c);
	shp_police_init(&s, &c, 0);
	n = 0;
	while (shp_police_conform(&s, &c, 976, 0))
		n++;
	assert_int_equal(n, 3);
	/* the peak bucket: 1500 bytes of it at 2000 bytes/s lets one
	 * 1500-byte frame through at once, the next 0.75 s later */
	parse_ok("rate 8kbit burst 30000 peakrate 16kbit mtu 1500", &c);
	shp_police_init(&s, &c, 0);
	assert_true(shp_police_conform(&s, &c, 1500, 0));
	assert_false(shp_police_conform(&s, &c, 1500, 749999999));
	assert_true(shp_police_conform(&s, &c, 1500, 750000000));
}

/* A burst judged at once (shp_police_conform_burst, what the stage
 * runs) gives the verdicts and leaves the bucket exactly as its frames
 * judged one at a time (shp_police_conform, a burst of one) do: the
 * refill once and the reused cost change nothing. Random bursts of random lengths (runs of one length, the
 * cost it reuses; over-mtu frames among them), with and without a peak
 * bucket, overhead and atm cells, at random gaps (none: the same
 * instant; backwards: an earlier stamp). */
static void
test_burst_as_sequence(void **state)
{
	static const char *const confs[] = {
		"rate 10mbit burst 10kb",
		"rate 1mbit burst 4000b mtu 1500 peakrate 2mbit",
		"rate 100mbit burst 3000 overhead 24 mpu 64",
		"rate 5mbit burst 20kb linklayer atm mtu 1400",
	};
	uint64_t x = 88172645463325252ull;
	unsigned int k, round, i;

	(void)state;
	for (k = 0; k < sizeof(confs) / sizeof(confs[0]); k++) {
		struct shp_tbf_conf c;
		struct shp_police_state a, b;
		uint64_t now = 1000;
		unsigned int passed = 0, refused = 0;

		parse_ok(confs[k], &c);
		shp_police_init(&a, &c, now);
		b = a;
		for (round = 0; round < 20000; round++) {
			uint32_t len[64];
			uint8_t v[64];
			uint16_t n;

			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			n = (uint16_t)(1 + x % 64);
			switch ((x >> 8) % 4) {
			case 0: break;                          /* same instant */
			case 1: now += (x >> 12) % 2000000; break;   /* < 2 ms */
			case 2: now += (x >> 12) % 50000; break;
			default: now -= now > 5000 ? (x >> 12) % 5000 : 0;
			}
			for (i = 0; i < n; i++) {
				x ^= x << 13; x ^= x >> 7; x ^= x << 17;
				len[i] = i > 0 && (x & 3) ? len[i - 1] :
					 (uint32_t)(60 + x % 2000);
			}
			shp_police_conform_burst(&b, &c, len, n, now, v);
			for (i = 0; i < n; i++) {
				bool ok = shp_police_conform(&a, &c, len[i],
							     now);

				assert_int_equal(v[i], !ok);
				passed += ok;
				refused += !ok;
			}
			assert_memory_equal(&a, &b, sizeof(a));
		}
		/* both outcomes were exercised */
		assert_true(passed > 1000 && refused > 1000);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_print),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_bucket),
		cmocka_unit_test(test_rate_exact),
		cmocka_unit_test(test_burst_as_sequence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
