/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "shp_units.h"
#include "shp_tbf.h"

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
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 1kb latency 10",
				       &c, err), -1);
	assert_non_null(strstr(err, "unit"));
	assert_int_equal(shp_tbf_parse("rate", &c, err), -1);
	assert_non_null(strstr(err, "rate"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_size_rate),
		cmocka_unit_test(test_percent),
		cmocka_unit_test(test_tbf_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
