/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The INI profile loader: every refusal names the file, and the section
 * and key (or the line) at fault; nothing librte_cfgfile would cut, merge
 * or skip is accepted; cfgfile's own log lines never reach the user.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <rte_log.h>

#include "config.h"

static char path[64];
static char *logbuf;
static size_t loglen;
static FILE *logf;

static void
write_ini(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Load `text`; 0 or -1, the message in err, and nothing may be logged. */
static int
load(const char *text, struct shp_options *o, char *err)
{
	int rc;

	write_ini(text);
	shp_options_init(o);
	err[0] = '\0';
	rc = shp_config_load(o, path, err);
	fflush(logf);
	assert_int_equal(loglen, 0);
	return rc;
}

static void
refused(const char *text, const char *const want[])
{
	struct shp_options o;
	char err[SHP_ERR_LEN];
	int i;

	assert_int_equal(load(text, &o, err), -1);
	for (i = 0; want[i] != NULL; i++)
		if (strstr(err, want[i]) == NULL)
			fail_msg("'%s' lacks '%s'", err, want[i]);
	shp_options_free(&o);
}

#define REFUSED(text, ...) \
	refused(text, (const char *const[]){ __VA_ARGS__, NULL })

static void
test_good_file_with_comments(void **state)
{
	struct shp_options o;
	char err[SHP_ERR_LEN];

	(void)state;
	assert_int_equal(load("# a comment\n; another\n[global]\n"
			      "# seed = 5\n; seed = 6\nring_size = 64 ; old\n"
			      "bands = 4   # four bands\n  # indented\n"
			      "[port 1]\nnetem = delay 10ms # the WAN\n"
			      "[port 2]\ntbf = rate 1mbit burst 10kb limit "
			      "20kb\n", &o, err), 0);
	assert_int_equal(o.bands, 4);
	assert_int_equal(o.ring_size, 64);
	assert_false(o.seed_set);
	assert_string_equal(o.file.port[shp_key_index("netem")][1], "delay 10ms");
	assert_non_null(o.file.port[shp_key_index("tbf")][2]);
	shp_options_free(&o);
}

static void
test_bad_value_names_file_section_key(void **state)
{
	(void)state;
	/* not "--bands": the user never typed a flag */
	REFUSED("[global]\nbands = 99\n", path, "[global] bands",
		"'99'");
	REFUSED("[global]\nseed = x\n", path, "[global] seed");
	REFUSED("[global]\nclassify = foo\n", path, "[global] classify");
	REFUSED("[port 1]\nnetem = delay 10m\n", path, "[port 1] netem",
		"unit");
	REFUSED("[global]\nfoo = 1\n", path, "[global]", "'foo'");
	{
		struct shp_options o;
		char err[SHP_ERR_LEN];

		assert_int_equal(load("[global]\nbands = 99\n", &o, err), -1);
		assert_null(strstr(err, "--"));
		shp_options_free(&o);
	}
}

static void
test_priomap_error_names_the_file(void **state)
{
	struct shp_options o;
	char err[SHP_ERR_LEN];

	(void)state;
	assert_int_equal(load("[global]\npriomap = 1,2\n", &o, err), 0);
	assert_int_equal(shp_options_finalize(&o, err), -1);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "[global] priomap"));
	assert_non_null(strstr(err, "needs 16 values"));
	assert_null(strstr(err, "--priomap"));
	shp_options_free(&o);
}

static void
test_duplicates_refused(void **state)
{
	(void)state;
	REFUSED("[global]\nbands = 3\nbands = 4\n", path, ":3:",
		"[global] bands again", "line 2");
	REFUSED("[port 1]\nnetem = delay 1ms\n[port 0]\ntbf = rate 1mbit "
		"burst 10kb limit 10kb\n[port 1]\nnetem = loss 1%\n",
		path, ":5:", "[port 1] again", "line 1");
	REFUSED("[port 1]\nnetem = delay 1ms\n[port  01]\n", path,
		"again");
}

static void
test_syntax_errors_name_the_line(void **state)
{
	(void)state;
	REFUSED("[global]\nbands 3\n", path, ":2:", "key = value");
	REFUSED("[global\nbands = 3\n", path, ":1:", "']'");
	REFUSED("bands = 3\n", path, ":1:", "before any");
	REFUSED("[global]\nbands =\n", path, ":2:", "empty value");
	REFUSED("[globl]\n", path, ":1:", "unknown section [globl]");
}

/* Only a regular file: a FIFO without writer blocked fopen() at the
 * start, /dev/zero was one endless line (issue 58). */
static void
test_not_a_regular_file(void **state)
{
	struct shp_options o;
	char err[SHP_ERR_LEN], fifo[64];

	(void)state;
	shp_options_init(&o);
	assert_int_equal(shp_config_load(&o, "/dev/zero", err), -1);
	assert_non_null(strstr(err, "--config /dev/zero: not a regular file"));
	snprintf(fifo, sizeof(fifo), "%s.fifo", path);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(shp_config_load(&o, fifo, err), -1);
	unlink(fifo);
	assert_non_null(strstr(err, "not a regular file (a FIFO)"));
	shp_options_free(&o);
}

static void
test_missing_file(void **state)
{
	struct shp_options o;
	char err[SHP_ERR_LEN];

	(void)state;
	unlink(path);
	shp_options_init(&o);
	assert_int_equal(shp_config_load(&o, path, err), -1);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "no such file"));
	shp_options_free(&o);
}

/* librte_cfgfile keeps 255 characters of a value: longer ones were cut
 * and accepted (a profile losing its tail). */
static void
test_long_value_refused_not_cut(void **state)
{
	char text[1024];
	char val[400];
	int n;

	(void)state;
	/* "delay 1ms" + blanks + "loss 100%": cut, only the delay stayed */
	n = snprintf(val, sizeof(val), "delay 1ms%260sloss 100%%", "");
	assert_true(n > 260);
	snprintf(text, sizeof(text), "[port 1]\nnetem = %s\n", val);
	REFUSED(text, path, ":2:", "[port 1] netem", "255");
	/* 255 exactly still fits */
	snprintf(text, sizeof(text), "[port 1]\nnetem = delay 1ms%*s\n",
		 255 - 9, "loss 1%");
	{
		struct shp_options o;
		char err[SHP_ERR_LEN];

		assert_int_equal(load(text, &o, err), 0);
		assert_non_null(strstr(o.file.port[shp_key_index("netem")][1], "loss 1%"));
		shp_options_free(&o);
	}
	/* a long comment after a value: the line, not the value, is long */
	snprintf(text, sizeof(text), "[global]\nbands = 3 #%400s\n", "x");
	REFUSED(text, path, ":2:", "line of");
}

/* One pool per socket with ports (issue 29.4): a vdev (no socket) is the
 * main lcore's; one socket is one pool of the whole's size; --mbufs is
 * shared out by ports. */
static void
test_pool_plan(void **state)
{
	const uint16_t ports[4] = { 0, 1, 2, 3 };
	const int any[4] = { -1, -1, -1, -1 }, two[4] = { 0, 1, 0, 1 };
	const int mixed[3] = { -1, 0, 1 };
	struct shp_pool_plan p;
	struct shp_options o;
	char err[SHP_ERR_LEN];
	unsigned int whole;

	(void)state;
	shp_options_init(&o);
	assert_int_equal(shp_options_finalize(&o, err), 0);
	whole = shp_options_pool_size(&o, ports, 2, 3, NULL);
	shp_options_pool_plan(&o, ports, any, 2, 0, 3, &p);
	assert_int_equal(p.nb, 1);
	assert_int_equal(p.socket[0], 0);
	assert_int_equal(p.mbufs[0], whole);
	assert_int_equal(p.port_pool[0], 0);
	assert_int_equal(p.port_pool[1], 0);

	shp_options_pool_plan(&o, ports, two, 4, 0, 3, &p);
	assert_int_equal(p.nb, 2);
	assert_int_equal(p.socket[0], 0);
	assert_int_equal(p.socket[1], 1);
	assert_int_equal(p.nb_ports[0], 2);
	assert_int_equal(p.ports[0][1], 2);
	assert_int_equal(p.ports[1][0], 1);
	assert_int_equal(p.port_pool[3], 1);
	/* each sized for its own two ports, as a whole of two would be */
	assert_int_equal(p.mbufs[0], whole);
	assert_int_equal(p.mbufs[1], whole);

	/* a vdev with the main lcore on socket 1: socket 1's pool */
	shp_options_pool_plan(&o, ports, mixed, 3, 1, 3, &p);
	assert_int_equal(p.nb, 2);
	assert_int_equal(p.socket[0], 1);
	assert_int_equal(p.socket[1], 0);
	assert_int_equal(p.port_pool[0], 0);
	assert_int_equal(p.port_pool[1], 1);
	assert_int_equal(p.port_pool[2], 0);
	assert_int_equal(p.nb_ports[0], 2);

	o.mbufs = 100000;
	shp_options_pool_plan(&o, ports, mixed, 3, 1, 3, &p);
	assert_int_equal(p.mbufs[0], 66666);
	assert_int_equal(p.mbufs[1], 100000 - 66666);
	shp_options_pool_plan(&o, ports, any, 2, 0, 3, &p);
	assert_int_equal(p.mbufs[0], 100000);
	shp_options_free(&o);
}

/* --mtu over [port N] mtu over [global] mtu (issue 29.1) */
static void
test_mtu_layers(void **state)
{
	struct shp_options o;
	char err[SHP_ERR_LEN];

	(void)state;
	assert_int_equal(load("[global]\nmtu = 1500\n[port 1]\nmtu = 9000\n",
			      &o, err), 0);
	assert_int_equal(shp_options_mtu(&o, 0), 1500);
	assert_int_equal(shp_options_mtu(&o, 1), 9000);
	assert_int_equal(shp_option_set(&o, "mtu", -1, "4000", true, err), 0);
	assert_int_equal(shp_options_mtu(&o, 0), 4000);
	assert_int_equal(shp_options_mtu(&o, 1), 4000);
	assert_int_equal(shp_option_set(&o, "mtu", -1, "67", true, err), -1);
	assert_non_null(strstr(err, "mtu"));
	shp_options_free(&o);
	assert_int_equal(load("[port 0]\nmtu = 65536\n", &o, err), -1);
	assert_non_null(strstr(err, "[port 0] mtu"));
	shp_options_free(&o);
}

/* A queue's own bands and priomap win over the aliases, [port N] as the
 * command line; what it leaves to them must fit it, checked once every
 * option is in. */
static void
test_queue_own_bands_over_aliases(void **state)
{
	struct shp_options o;
	struct shp_kind_env env;
	struct shp_chain_spec spec;
	const uint8_t *map;
	char err[SHP_ERR_LEN];

	(void)state;
	assert_int_equal(load("[global]\nbands = 4\n[port 1]\nqueue = "
			      "pfifo_fast bands 2\n", &o, err), 0);
	assert_int_equal(shp_options_finalize(&o, err), 0);
	shp_options_kind_env(&o, &env);
	assert_int_equal(shp_options_chain_spec(&o, 1, &spec, err), 0);
	assert_int_equal(spec.kind[SHP_SLOT_QUEUE]->bands(
				 spec.conf[SHP_SLOT_QUEUE], &map), 2);
	assert_int_equal(map[0], 1);   /* Linux's map for 2 bands */
	assert_int_equal(map[6], 0);
	shp_chain_spec_free(&spec);
	/* port 0 gives none: the aliases (the queue's defaults at build) */
	assert_null(shp_options_profile(&o, "queue", 0));
	assert_int_equal(env.bands, 4);
	/* a --priomap past port 1's own bands: refused, naming it */
	assert_int_equal(shp_option_set(&o, "priomap", -1,
					"0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,3",
					true, err), 0);
	assert_int_equal(shp_options_finalize(&o, err), -1);
	assert_non_null(strstr(err, "--queue-port 1 'pfifo_fast bands 2'"));
	assert_non_null(strstr(err, "own priomap"));
	/* with a map of its own it is fine */
	assert_int_equal(shp_option_set(&o, "queue-port", 1,
					"pfifo_fast bands 2 priomap "
					"1,1,1,1,1,1,0,0,1,1,1,1,1,1,1,1",
					true, err), 0);
	assert_int_equal(shp_options_finalize(&o, err), 0);
	shp_options_free(&o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file_with_comments),
		cmocka_unit_test(test_bad_value_names_file_section_key),
		cmocka_unit_test(test_priomap_error_names_the_file),
		cmocka_unit_test(test_duplicates_refused),
		cmocka_unit_test(test_syntax_errors_name_the_line),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_not_a_regular_file),
		cmocka_unit_test(test_long_value_refused_not_cut),
		cmocka_unit_test(test_pool_plan),
		cmocka_unit_test(test_mtu_layers),
		cmocka_unit_test(test_queue_own_bands_over_aliases),
	};
	int rc;

	snprintf(path, sizeof(path), "/tmp/test_config_%d.ini",
		 (int)getpid());
	/* everything DPDK logs goes here: it must stay empty */
	logf = open_memstream(&logbuf, &loglen);
	rte_openlog_stream(logf);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	rte_openlog_stream(NULL);
	fclose(logf);
	free(logbuf);
	return rc;
}
