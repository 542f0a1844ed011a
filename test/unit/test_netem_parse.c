/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem grammar: the tc-netem(8) forms, tc's defaults and aliases, our
 * rejections (each message must name the offending word), the built-in
 * tables and table files, and format -> parse round trips.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
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
#include <rte_common.h>

#include "shp_netem.h"
#include "shp_rig.h"

static struct shp_netem_conf *
parse_ok(const char *s)
{
	char err[SHP_ERR_LEN] = "";
	struct shp_netem_conf *c = shp_netem_parse(s, err);

	if (c == NULL)
		fail_msg("'%s' refused: %s", s, err);
	return c;
}

/* Refused, and the message contains every given fragment. */
static void
parse_bad(const char *s, const char *frag1, const char *frag2)
{
	char err[SHP_ERR_LEN] = "";
	struct shp_netem_conf *c = shp_netem_parse(s, err);

	if (c != NULL) {
		shp_netem_conf_free(c);
		fail_msg("'%s' accepted", s);
	}
	assert_null(strchr(err, '\n'));
	if (frag1 != NULL && strstr(err, frag1) == NULL)
		fail_msg("'%s': message '%s' lacks '%s'", s, err, frag1);
	if (frag2 != NULL && strstr(err, frag2) == NULL)
		fail_msg("'%s': message '%s' lacks '%s'", s, err, frag2);
}

/* format(parse(s)) parses back to a conf that formats identically. */
static void
round_trip(const char *s, const char *expect)
{
	struct shp_netem_conf *a = parse_ok(s), *b;
	char t1[1024], t2[1024];

	assert_true(shp_netem_conf_format(a, t1, sizeof(t1)) < (int)sizeof(t1));
	if (expect != NULL && strcmp(t1, expect) != 0)
		fail_msg("'%s' printed '%s', expected '%s'", s, t1, expect);
	b = parse_ok(t1);
	shp_netem_conf_format(b, t2, sizeof(t2));
	if (strcmp(t1, t2) != 0)
		fail_msg("round trip '%s' -> '%s' -> '%s'", s, t1, t2);
	assert_int_equal(a->latency, b->latency);
	assert_int_equal(a->jitter, b->jitter);
	assert_true(a->loss.p == b->loss.p);
	assert_true(a->duplicate.p == b->duplicate.p);
	assert_true(a->delay_corr == b->delay_corr);
	assert_int_equal(a->rate, b->rate);
	assert_int_equal(a->gap, b->gap);
	shp_netem_conf_free(a);
	shp_netem_conf_free(b);
}

static void
test_delay_forms(void **state)
{
	struct shp_netem_conf *c;

	(void)state;
	c = parse_ok("delay 100ms");
	assert_int_equal(c->latency, 100000000);
	assert_int_equal(c->jitter, 0);
	assert_null(c->dist);
	assert_false(c->limit_set);
	shp_netem_conf_free(c);

	c = parse_ok("delay 100ms 10ms");
	assert_int_equal(c->jitter, 10000000);
	assert_true(c->delay_corr == 0);
	shp_netem_conf_free(c);

	c = parse_ok("delay 100ms 10ms 25%");
	assert_true(fabs(c->delay_corr - 0.25) < 1e-12);
	shp_netem_conf_free(c);

	c = parse_ok("delay 100ms 20ms distribution normal");
	assert_non_null(c->dist);
	assert_string_equal(c->dist->name, "normal");
	assert_int_equal(c->dist->size, SHP_NETEM_DIST_SIZE);
	shp_netem_conf_free(c);

	/* distribution before delay, aliases and abbreviations as in tc */
	c = parse_ok("distribution pareto latency 1s 10ms");
	assert_string_equal(c->dist->name, "pareto");
	assert_int_equal(c->latency, 1000000000);
	shp_netem_conf_free(c);
	c = parse_ok("del 5ms 1ms dist uniform");
	assert_int_equal(c->latency, 5000000);
	assert_null(c->dist);
	shp_netem_conf_free(c);
	c = parse_ok("lat 250us");
	assert_int_equal(c->latency, 250000);
	shp_netem_conf_free(c);

	c = parse_ok("delay 10ms 2ms noreorder");
	assert_true(c->noreorder);
	assert_false(c->inorder);
	shp_netem_conf_free(c);

	/* empty: no impairment at all */
	c = parse_ok("");
	assert_int_equal(c->loss_model, SHP_NETEM_LOSS_NONE);
	assert_int_equal(c->latency, 0);
	shp_netem_conf_free(c);
}

static void
test_loss_forms(void **state)
{
	struct shp_netem_conf *c;

	(void)state;
	c = parse_ok("loss 0.1%");
	assert_int_equal(c->loss_model, SHP_NETEM_LOSS_RANDOM);
	assert_true(fabs(c->loss.p - 0.001) < 1e-15);
	assert_true(c->loss.p_after_hit == c->loss.p);
	shp_netem_conf_free(c);

	c = parse_ok("loss 0.3% 25%");
	assert_true(fabs(c->loss.corr - 0.25) < 1e-15);
	/* Markov chain keeping the mean */
	assert_true(fabs(c->loss.p_after_hit - (0.003 + 0.25 * 0.997)) < 1e-15);
	assert_true(fabs(c->loss.p_after_miss - 0.003 * 0.75) < 1e-15);
	shp_netem_conf_free(c);

	c = parse_ok("loss random 5 50");   /* '%' is optional */
	assert_true(fabs(c->loss.p - 0.05) < 1e-15);
	assert_true(fabs(c->loss.corr - 0.5) < 1e-15);
	shp_netem_conf_free(c);

	c = parse_ok("drop 1%");
	assert_int_equal(c->loss_model, SHP_NETEM_LOSS_RANDOM);
	shp_netem_conf_free(c);

	/* 4-state defaults: p31 = 1 - p13, p32 = 0, p23 = 1, p14 = 0 */
	c = parse_ok("loss state 10%");
	assert_int_equal(c->loss_model, SHP_NETEM_LOSS_STATE);
	assert_true(fabs(c->state.p13 - 0.1) < 1e-15);
	assert_true(fabs(c->state.p31 - 0.9) < 1e-15);
	assert_true(c->state.p32 == 0);
	assert_true(c->state.p23 == 1);
	assert_true(c->state.p14 == 0);
	shp_netem_conf_free(c);
	c = parse_ok("loss state 1% 10% 70% 10% 0.1%");
	assert_true(fabs(c->state.p31 - 0.1) < 1e-15);
	assert_true(fabs(c->state.p32 - 0.7) < 1e-15);
	assert_true(fabs(c->state.p23 - 0.1) < 1e-15);
	assert_true(fabs(c->state.p14 - 0.001) < 1e-15);
	shp_netem_conf_free(c);

	/* gemodel defaults: r = 1 - p, 1-h = 100%, 1-k = 0 */
	c = parse_ok("loss gemodel 1%");
	assert_int_equal(c->loss_model, SHP_NETEM_LOSS_GEMODEL);
	assert_true(fabs(c->ge.r - 0.99) < 1e-15);
	assert_true(c->ge.h1 == 1);
	assert_true(c->ge.k1 == 0);
	shp_netem_conf_free(c);
	c = parse_ok("loss gemodel 1% 10% 70% 0.1%");
	assert_true(fabs(c->ge.r - 0.1) < 1e-15);
	assert_true(fabs(c->ge.h1 - 0.7) < 1e-15);
	assert_true(fabs(c->ge.k1 - 0.001) < 1e-15);
	shp_netem_conf_free(c);

	c = parse_ok("loss 1% ecn");
	assert_true(c->ecn);
	shp_netem_conf_free(c);
}

static void
test_other_forms(void **state)
{
	struct shp_netem_conf *c;

	(void)state;
	c = parse_ok("duplicate 1%");
	assert_true(fabs(c->duplicate.p - 0.01) < 1e-15);
	shp_netem_conf_free(c);
	c = parse_ok("dup 1% 10%");
	assert_true(fabs(c->duplicate.corr - 0.1) < 1e-15);
	shp_netem_conf_free(c);

	c = parse_ok("corrupt 0.1%");
	assert_true(fabs(c->corrupt.p - 0.001) < 1e-15);
	shp_netem_conf_free(c);

	/* reorder without gap: tc sets gap 1 */
	c = parse_ok("delay 10ms reorder 25% 50%");
	assert_true(fabs(c->reorder.p - 0.25) < 1e-15);
	assert_true(fabs(c->reorder.corr - 0.5) < 1e-15);
	assert_int_equal(c->gap, 1);
	shp_netem_conf_free(c);
	c = parse_ok("reorder 25% gap 5 delay 10ms");
	assert_int_equal(c->gap, 5);
	shp_netem_conf_free(c);
	c = parse_ok("gap 5 delay 10ms reorder 25%");
	assert_int_equal(c->gap, 5);
	shp_netem_conf_free(c);

	c = parse_ok("rate 5kbit 20 100 5");
	assert_int_equal(c->rate, 625);
	assert_int_equal(c->packet_overhead, 20);
	assert_int_equal(c->cell_size, 100);
	assert_int_equal(c->cell_overhead, 5);
	shp_netem_conf_free(c);
	c = parse_ok("delay 20ms rate 100mbit -14");
	assert_int_equal(c->rate, 12500000);
	assert_int_equal(c->packet_overhead, -14);
	shp_netem_conf_free(c);
	c = parse_ok("rate 1mbps");   /* bytes per second, as in tc */
	assert_int_equal(c->rate, 1000000);
	shp_netem_conf_free(c);

	c = parse_ok("slot 800us");
	assert_int_equal(c->slot_mode, SHP_NETEM_SLOT_RANGE);
	assert_int_equal(c->slot_min, 800000);
	assert_int_equal(c->slot_max, 800000);
	shp_netem_conf_free(c);
	c = parse_ok("slot 800us 1ms packets 32 bytes 64k");
	assert_int_equal(c->slot_max, 1000000);
	assert_int_equal(c->slot_packets, 32);
	assert_int_equal(c->slot_bytes, 65536);
	shp_netem_conf_free(c);
	c = parse_ok("slot distribution pareto 1ms 200us packets 16");
	assert_int_equal(c->slot_mode, SHP_NETEM_SLOT_DIST);
	assert_string_equal(c->slot_dist->name, "pareto");
	assert_int_equal(c->slot_delay, 1000000);
	assert_int_equal(c->slot_jitter, 200000);
	assert_int_equal(c->slot_packets, 16);
	shp_netem_conf_free(c);
	c = parse_ok("slot distribution uniform 1ms 1ms");
	assert_null(c->slot_dist);
	shp_netem_conf_free(c);

	c = parse_ok("limit 100000 seed 42 delay 1ms");
	assert_true(c->limit_set);
	assert_int_equal(c->limit, 100000);
	assert_true(c->seed_set);
	assert_int_equal(c->seed, 42);
	shp_netem_conf_free(c);
	c = parse_ok("delay 1ms");
	assert_false(c->seed_set);
	shp_netem_conf_free(c);

	/* the default limit follows the pool */
	assert_int_equal(shp_netem_default_limit(0), 1000);
	assert_int_equal(shp_netem_default_limit(65536), 32768);
}

static void
test_rejections(void **state)
{
	(void)state;
	/* a time without a unit: name the word and the units */
	parse_bad("delay 10m", "'10m'", "ms");
	parse_bad("delay 10ms 2x", "'2x'", "unit");
	parse_bad("slot 5q", "'5q'", "unit");
	parse_bad("delay 10parsecs", "parsecs", NULL);
	/* percentages outside 0..100, negatives */
	parse_bad("loss 101%", "'101%'", "0..100");
	parse_bad("duplicate 150", "'150'", "0..100");
	parse_bad("corrupt 1% 200%", "'200%'", NULL);
	parse_bad("loss -1%", "'-1%'", "negative");
	parse_bad("delay -10ms", "'-10ms'", "negative");
	parse_bad("delay 10ms -1ms", "'-1ms'", "negative");
	parse_bad("loss state 1% -5%", "'-5%'", "negative");
	parse_bad("rate 1mbit 20 1.5", "'1.5'", "integer");
	/* cross-checks */
	parse_bad("reorder 25%", "reorder", "delay");
	parse_bad("reorder 25% gap 3", "reorder", "delay");
	parse_bad("gap 5 delay 10ms", "gap", "reorder");
	parse_bad("ecn", "ecn", "loss");
	parse_bad("delay 10ms ecn", "ecn", "loss");
	parse_bad("distribution normal", "distribution", "delay");
	parse_bad("delay 10ms distribution normal", "distribution", "jitter");
	parse_bad("loss 1% loss 2%", "loss", "twice");
	parse_bad("delay 10ms 1ms reorder 5% inorder", "inorder",
		  "contradicts");
	parse_bad("delay 10ms 1ms reorder 5% noreorder", "noreorder",
		  "reorder");
	parse_bad("loss state 60% 10% 0% 100% 50%", "p13", NULL);
	parse_bad("slot 2ms 1ms", "'1ms'", "min");
	parse_bad("slot distribution normal 1ms 0ms", "'0ms'", "positive");
	/* unknown words */
	parse_bad("delay 10ms 1ms distribution bogus", "'bogus'",
		  "paretonormal");
	parse_bad("slot distribution bogus 1ms 1ms", "'bogus'", NULL);
	parse_bad("delya 10ms", "'delya'", "unknown");
	parse_bad("delay 10ms foo", "'foo'", NULL);
	parse_bad("loss bogus 1%", "'bogus'", "random");
	parse_bad("slot bogus", "'bogus'", NULL);
	parse_bad("rate fast", "'fast'", NULL);
	parse_bad("rate 10%", "'10%'", NULL);
	parse_bad("seed x", "'x'", NULL);
	parse_bad("limit lots", "'lots'", NULL);
	parse_bad("gap x delay 1ms reorder 1%", "'x'", NULL);
	/* missing arguments */
	parse_bad("delay", "'delay'", "needs");
	parse_bad("loss", "'loss'", "needs");
	parse_bad("loss random", "'random'", "needs");
	parse_bad("loss state", "'state'", "needs");
	parse_bad("duplicate", "'duplicate'", "needs");
	parse_bad("corrupt", "'corrupt'", "needs");
	parse_bad("reorder", "'reorder'", "needs");
	parse_bad("rate", "'rate'", "needs");
	parse_bad("slot", "'slot'", "needs");
	parse_bad("slot distribution normal 1ms", "needs", NULL);
	parse_bad("slot 1ms packets", "'packets'", "needs");
	parse_bad("limit", "'limit'", "needs");
	parse_bad("seed", "'seed'", "needs");
	parse_bad("distribution", "'distribution'", "needs");
	/* the caller handles "off"; here it is just an unknown word */
	parse_bad("off", "'off'", NULL);
}

static double
table_mean(const struct shp_netem_dist *d, double *sd)
{
	double s = 0, s2 = 0;
	uint32_t i;

	for (i = 0; i < d->size; i++) {
		s += d->table[i];
		s2 += (double)d->table[i] * d->table[i];
	}
	s /= d->size;
	*sd = sqrt(s2 / d->size - s * s) / SHP_NETEM_DIST_SCALE;
	return s / SHP_NETEM_DIST_SCALE;
}

static void
test_builtin_tables(void **state)
{
	struct shp_netem_dist *d;
	double mean, sd;
	uint32_t i;

	(void)state;
	d = shp_netem_dist_builtin("normal");
	assert_non_null(d);
	mean = table_mean(d, &sd);
	assert_true(fabs(mean) < 1e-3);
	assert_true(fabs(sd - 1) < 0.01);   /* cut at +-3.7 sigma */
	for (i = 1; i < d->size; i++)
		assert_true(d->table[i] >= d->table[i - 1]);
	/* symmetric, median 0 */
	assert_int_equal(d->table[0], -d->table[d->size - 1]);
	free(d);

	d = shp_netem_dist_builtin("pareto");
	mean = table_mean(d, &sd);
	/* (X - 1.5) * 4/3 with X Pareto(3): mean 0 and sd 1.155 before the
	 * cut at +4 (X = 4.5), which lowers both */
	assert_true(mean < 0 && mean > -0.1);
	assert_true(sd > 0.8 && sd < 1.155);
	assert_int_equal(d->table[d->size - 1], INT16_MAX);
	assert_true(d->table[0] > -5500 && d->table[0] < -5450); /* X ~ 1 */
	free(d);

	d = shp_netem_dist_builtin("paretonormal");
	mean = table_mean(d, &sd);
	assert_true(fabs(mean) < 0.1);
	assert_true(sd > 0.7 && sd < 1.2);
	free(d);

	assert_null(shp_netem_dist_builtin("uniform"));
	assert_null(shp_netem_dist_builtin("bogus"));
}

static void
test_table_files(void **state)
{
	char path[] = "/tmp/netem_dist_XXXXXX";
	char bad[] = "/tmp/netem_bad_XXXXXX";
	char args[256];
	struct shp_netem_conf *c;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fprintf(f, "# a comment line\n\n-8192 0 8192\n  4096 0x10\n");
	fclose(f);
	snprintf(args, sizeof(args), "delay 10ms 1ms distribution %s", path);
	c = parse_ok(args);
	assert_non_null(c->dist);
	assert_false(c->dist->builtin);
	assert_int_equal(c->dist->size, 5);
	assert_int_equal(c->dist->table[0], -8192);
	assert_int_equal(c->dist->table[3], 4096);
	assert_int_equal(c->dist->table[4], 16);
	assert_string_equal(c->dist->name, path);
	shp_netem_conf_free(c);
	round_trip(args, NULL);

	fd = mkstemp(bad);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fprintf(f, "# bad\n1 2 three 4\n");
	fclose(f);
	snprintf(args, sizeof(args), "delay 10ms 1ms distribution %s", bad);
	/* the line is named, not quoted: the file may be anyone's */
	parse_bad(args, ":2: a value that is not an integer", NULL);
	f = fopen(bad, "w");
	fprintf(f, "1 40000\n");
	fclose(f);
	parse_bad(args, ":1:", "not an integer in -32768..32767");
	f = fopen(bad, "w");
	fprintf(f, "# nothing\n");
	fclose(f);
	parse_bad(args, "no values", NULL);
	unlink(bad);
	unlink(path);
	parse_bad("delay 10ms 1ms distribution /nonexistent/x.dist",
		  "/nonexistent/x.dist", NULL);
}

/* A table is read on the control thread: anything that is not a regular
 * file of bounded size is refused, never read (defect 8: /dev/zero grew
 * the process by gigabytes, a FIFO blocked it). */
static void
test_table_file_bounds(void **state)
{
	char dir[] = "/tmp/netem_bounds_XXXXXX";
	char path[64], args[256];
	FILE *f;
	long i;

	(void)state;
	parse_bad("delay 10ms 1ms distribution /dev/zero", "/dev/zero",
		  "not a regular file");
	assert_non_null(mkdtemp(dir));
	snprintf(args, sizeof(args), "delay 10ms 1ms distribution %s", dir);
	parse_bad(args, "directory", NULL);

	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(args, sizeof(args), "delay 10ms 1ms distribution %s", path);
	parse_bad(args, "FIFO", "not a regular file");
	unlink(path);

	/* valid values, padded with comments past the byte bound */
	snprintf(path, sizeof(path), "%s/big.dist", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "1 2 3\n");
	for (i = 0; i <= SHP_NETEM_DIST_FILE_MAX / 64; i++)
		fprintf(f, "# %061ld\n", i);
	fclose(f);
	snprintf(args, sizeof(args), "delay 10ms 1ms distribution %s", path);
	parse_bad(args, "bytes", NULL);
	/* the same values within it are fine */
	f = fopen(path, "w");
	fprintf(f, "1 2 3\n# short\n");
	fclose(f);
	shp_netem_conf_free(parse_ok(args));
	unlink(path);
	rmdir(dir);
}

static void
test_format(void **state)
{
	(void)state;
	round_trip("delay 100ms", "delay 100ms");
	/* the carrier follows the outages (issue 61), then more words */
	round_trip("outage 1s 200ms carrier delay 5ms",
		   "delay 5ms outage 1s 200ms carrier");
	round_trip("outage 1s 200ms", "outage 1s 200ms");
	round_trip("delay 100ms 10ms 25%", "delay 100ms 10ms 25%");
	round_trip("delay 1.5s 250us", "delay 1500ms 250us");
	round_trip("delay 100ms 20ms distribution normal",
		   "delay 100ms 20ms distribution normal");
	round_trip("loss 0.3% 25%", "loss random 0.3% 25%");
	round_trip("loss 7%", "loss random 7%");
	round_trip("loss state 1% 10% 70% 10% 0.1%",
		   "loss state 1% 10% 70% 10% 0.1%");
	round_trip("loss state 1%", "loss state 1% 99% 0% 100% 0%");
	round_trip("loss gemodel 1%", "loss gemodel 1% 99% 100% 0%");
	/* the default complement in few digits, not 99.900000000000006% */
	round_trip("loss gemodel 0.1%", "loss gemodel 0.1% 99.9% 100% 0%");
	round_trip("loss state 0.1%", "loss state 0.1% 99.9% 0% 100% 0%");
	/* rates whose bits overflow 64 bits, and odd ones */
	round_trip("rate 20000000tbit", "rate 20000000Tbit");
	round_trip("rate 18446744073709551615bps",
		   "rate 18446744073709551615Bps");
	round_trip("delay 1234567ns", "delay 1234567ns");
	round_trip("loss 1% ecn", "loss random 1% ecn");
	round_trip("duplicate 1% 5%", "duplicate 1% 5%");
	round_trip("corrupt 0.1%", "corrupt 0.1%");
	round_trip("delay 10ms reorder 25% 50%",
		   "delay 10ms reorder 25% 50% gap 1");
	round_trip("reorder 25% gap 5 delay 10ms",
		   "delay 10ms reorder 25% gap 5");
	round_trip("rate 5kbit 20 100 5", "rate 5Kbit 20 100 5");
	round_trip("rate 100mbit -14", "rate 100Mbit -14");
	/* bytes/s, truncated as iproute2's get_rate */
	round_trip("rate 1234567bit", "rate 1234560bit");
	/* a bare rate is bits per second (tc(8)) */
	round_trip("rate 1000000", "rate 1Mbit");
	round_trip("rate 1tibit", "rate 1099511627776bit");
	/* no cell size, a cell overhead (tc's NEXT_IS_SIGNED_NUMBER) */
	round_trip("rate 1mbit 20 -5", "rate 1Mbit 20 0 -5");
	round_trip("slot 800us 1ms packets 32 bytes 64k",
		   "slot 800us 1ms packets 32 bytes 65536");
	round_trip("slot distribution pareto 1ms 200us",
		   "slot distribution pareto 1ms 200us");
	round_trip("limit 5000 seed 7 delay 3ms 1ms noreorder",
		   "limit 5000 delay 3ms 1ms noreorder seed 7");
	round_trip("inorder delay 10ms 2ms distribution normal",
		   "delay 10ms 2ms distribution normal inorder");
	round_trip("misorder 10% depth 3", "misorder 10% depth 3");
	round_trip("misorder_timeout 5ms misorder 1% 25% depth 511 delay 1ms",
		   "delay 1ms misorder 1% 25% depth 511 misorder_timeout 5ms");
	round_trip("loss 33.333333333333333%", NULL);
	round_trip("delay 10ms 1ms 0%", "delay 10ms 1ms 0%");
	round_trip("", "");
}

/* Two confs say the same (their ids aside). */
static bool
prob_equal(const struct shp_netem_prob *a, const struct shp_netem_prob *b)
{
	return a->p == b->p && a->corr == b->corr &&
	       a->p_after_hit == b->p_after_hit &&
	       a->p_after_miss == b->p_after_miss;
}

static bool
dist_equal(const struct shp_netem_dist *a, const struct shp_netem_dist *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a->name, b->name) == 0 && a->size == b->size &&
	       memcmp(a->table, b->table, a->size * sizeof(a->table[0])) == 0;
}

static bool
conf_equal(const struct shp_netem_conf *a, const struct shp_netem_conf *b)
{
	return a->limit_set == b->limit_set && a->limit == b->limit &&
	       a->latency == b->latency && a->jitter == b->jitter &&
	       a->delay_corr == b->delay_corr &&
	       dist_equal(a->dist, b->dist) && a->noreorder == b->noreorder &&
	       a->loss_model == b->loss_model &&
	       (a->loss_model != SHP_NETEM_LOSS_RANDOM ||
		prob_equal(&a->loss, &b->loss)) &&
	       (a->loss_model != SHP_NETEM_LOSS_STATE ||
		memcmp(&a->state, &b->state, sizeof(a->state)) == 0) &&
	       (a->loss_model != SHP_NETEM_LOSS_GEMODEL ||
		memcmp(&a->ge, &b->ge, sizeof(a->ge)) == 0) &&
	       a->ecn == b->ecn &&
	       prob_equal(&a->duplicate, &b->duplicate) &&
	       prob_equal(&a->corrupt, &b->corrupt) &&
	       prob_equal(&a->reorder, &b->reorder) && a->gap == b->gap &&
	       a->rate == b->rate && a->packet_overhead == b->packet_overhead &&
	       a->cell_size == b->cell_size &&
	       a->cell_overhead == b->cell_overhead &&
	       a->slot_mode == b->slot_mode &&
	       (a->slot_mode != SHP_NETEM_SLOT_RANGE ||
		(a->slot_min == b->slot_min && a->slot_max == b->slot_max)) &&
	       (a->slot_mode != SHP_NETEM_SLOT_DIST ||
		(dist_equal(a->slot_dist, b->slot_dist) &&
		 a->slot_delay == b->slot_delay &&
		 a->slot_jitter == b->slot_jitter)) &&
	       a->slot_packets == b->slot_packets &&
	       a->slot_bytes == b->slot_bytes &&
	       a->seed_set == b->seed_set && a->seed == b->seed &&
	       a->det.n == b->det.n && a->det.m == b->det.m &&
	       a->seq_len == b->seq_len &&
	       (a->seq_len == 0 || memcmp(a->seq, b->seq, a->seq_len) == 0) &&
	       a->accumulate == b->accumulate &&
	       a->store_set == b->store_set && a->store == b->store &&
	       a->store_after_set == b->store_after_set &&
	       a->store_after == b->store_after;
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t
rnd(void)
{
	return shp_rig_xorshift(&rng_state);
}

/* A random number in its many spellings: small, huge, decimal, with
 * up to 17 digits, at the edges. */
static void
rnd_num(char *b, size_t len, uint64_t max)
{
	switch (rnd() % 5) {
	case 0:
		snprintf(b, len, "%" PRIu64, rnd() % 10);
		break;
	case 1:
		snprintf(b, len, "%" PRIu64, rnd() % (max + 1));
		break;
	case 2:
		snprintf(b, len, "%" PRIu64, max - rnd() % 3);
		break;
	case 3:
		snprintf(b, len, "%.*g", (int)(1 + rnd() % 17),
			 (double)(rnd() % (max + 1)) / (1 + rnd() % 1000));
		break;
	default:
		snprintf(b, len, "%" PRIu64, 1 + rnd() % 100000);
		break;
	}
}

static void
rnd_time(char *b, size_t len)
{
	static const char *const u[] = { "ns", "us", "ms", "s" };
	static const uint64_t max[] = { 86400000000000ULL, 86400000000ULL,
					86400000, 86400 };
	unsigned int i = rnd() % 4;
	char n[64];

	rnd_num(n, sizeof(n), max[i]);
	snprintf(b, len, "%s%s", n, u[i]);
}

static void
rnd_pct(char *b, size_t len)
{
	switch (rnd() % 4) {
	case 0:
		snprintf(b, len, "%.17g%%", (double)(rnd() >> 11) * 0x1p-53 * 100);
		break;
	case 1:
		snprintf(b, len, "%" PRIu64 "%%", rnd() % 101);
		break;
	case 2:
		snprintf(b, len, "%.*g%%", (int)(1 + rnd() % 6),
			 (double)(rnd() % 100000) / 1000);
		break;
	default:
		snprintf(b, len, "%.17g", (double)(rnd() >> 11) * 0x1p-53);
		break;
	}
}

static void
rnd_rate(char *b, size_t len)
{
	static const char *const u[] = { "", "bit", "kbit", "mbit", "gbit",
		"tbit", "kibit", "tibit", "bps", "kbps", "gibps", "tibps" };
	char n[64];

	rnd_num(n, sizeof(n), rnd() % 2 ? 20000000 : UINT64_MAX / 8);
	snprintf(b, len, "%s%s", n, u[rnd() % RTE_DIM(u)]);
}

/* One random clause of the grammar. */
static void
rnd_clause(char *b, size_t len)
{
	static const char *const dists[] = { "uniform", "normal", "pareto",
					     "paretonormal" };
	char t1[64], t2[64], p1[64], p2[64], x[64];
	int32_t o1 = (int32_t)(rnd() % 2001) - 1000;

	rnd_time(t1, sizeof(t1));
	rnd_time(t2, sizeof(t2));
	rnd_pct(p1, sizeof(p1));
	rnd_pct(p2, sizeof(p2));
	switch (rnd() % 17) {
	case 0:
		snprintf(b, len, "limit %" PRIu64, rnd() % 100000);
		break;
	case 1:
		snprintf(b, len, "delay %s %s %s", t1, t2,
			 rnd() % 2 ? p1 : "");
		break;
	case 2:
		snprintf(b, len, "loss %s %s", p1, rnd() % 2 ? p2 : "");
		break;
	case 3:
		snprintf(b, len, "loss gemodel %s %s", p1,
			 rnd() % 2 ? p2 : "");
		break;
	case 4:
		snprintf(b, len, "loss state %s", p1);
		break;
	case 5:
		snprintf(b, len, "duplicate %s %s", p1, rnd() % 2 ? p2 : "");
		break;
	case 6:
		snprintf(b, len, "corrupt %s", p1);
		break;
	case 7:
		snprintf(b, len, "delay %s reorder %s gap %" PRIu64, t1, p1,
			 1 + rnd() % 10);
		break;
	case 8:
		rnd_rate(x, sizeof(x));
		switch (rnd() % 4) {
		case 0:
			snprintf(b, len, "rate %s", x);
			break;
		case 1:
			snprintf(b, len, "rate %s %d", x, o1);
			break;
		case 2:
			snprintf(b, len, "rate %s %d %" PRIu64 " %d", x, o1,
				 rnd() % 100, -o1);
			break;
		default:
			snprintf(b, len, "rate %s %d %d", x, o1, o1 - 5);
			break;
		}
		break;
	case 9:
		snprintf(b, len, "slot %s %s packets %" PRIu64, t1, t1,
			 rnd() % 64);
		break;
	case 10:
		snprintf(b, len, "slot distribution %s %s %s bytes %" PRIu64,
			 dists[rnd() % 4], t1, t2, rnd() % 100000);
		break;
	case 11:
		snprintf(b, len, "seed %" PRIu64, rnd());
		break;
	case 12:
		snprintf(b, len, "delay %s %s distribution %s", t1, t2,
			 dists[rnd() % 4]);
		break;
	case 13: {
		uint32_t m = 1 + (uint32_t)(rnd() % (rnd() % 2 ? 100 :
						     UINT32_MAX));

		snprintf(b, len, "%s %s %" PRIu32 " %" PRIu32,
			 rnd() % 2 ? "loss" : "drop",
			 rnd() % 2 ? "pattern" : "burst",
			 1 + (uint32_t)(rnd() % m), m);
		break;
	}
	case 14: {
		char bits[65];
		unsigned int i, nb = 1 + rnd() % 64;

		for (i = 0; i < nb; i++)
			bits[i] = rnd() % 2 ? '1' : '0';
		bits[nb] = '\0';
		snprintf(b, len, "loss sequence %s", bits);
		break;
	}
	case 15:
		snprintf(b, len, "accumulate %s", t1);
		break;
	default:
		snprintf(b, len, "delay %s %s noreorder", t1, t2);
		break;
	}
}

/*
 * Issue 15.6: what the printer writes parses back to the identical conf,
 * for any conf: 4000 random ones of the whole grammar (the built-in
 * tables are computed at each parse, hence not more).
 */
static void
test_format_random(void **state)
{
	char text[1024], out[1024], out2[1024], err[SHP_ERR_LEN];
	int i, k, accepted = 0;

	(void)state;
	for (i = 0; i < 4000; i++) {
		struct shp_netem_conf *a, *b;
		size_t n = 0;

		text[0] = '\0';
		for (k = 1 + rnd() % 4; k > 0; k--) {
			rnd_clause(text + n, sizeof(text) - n - 1);
			n = strlen(text);
			text[n++] = ' ';
			text[n] = '\0';
		}
		a = shp_netem_parse(text, err);
		if (a == NULL)
			continue;
		accepted++;
		assert_true(shp_netem_conf_format(a, out, sizeof(out)) <
			    (int)sizeof(out));
		b = shp_netem_parse(out, err);
		if (b == NULL)
			fail_msg("'%s' printed '%s', refused: %s", text, out,
				 err);
		shp_netem_conf_format(b, out2, sizeof(out2));
		if (!conf_equal(a, b))
			fail_msg("'%s' printed '%s', read back as '%s'", text,
				 out, out2);
		shp_netem_conf_free(a);
		shp_netem_conf_free(b);
	}
	print_message("%d of 4000 random confs accepted\n", accepted);
	assert_true(accepted > 2000);
}

/* Issue 28.1: loss pattern, burst and sequence. */
static void
test_deterministic_loss(void **state)
{
	static char seq[SHP_NETEM_LOSS_SEQ_MAX + 64], out[2 * sizeof(seq)];
	struct shp_netem_conf *c, *b;
	unsigned int i;

	(void)state;
	c = parse_ok("loss pattern 1 4");
	assert_int_equal(c->loss_model, SHP_NETEM_LOSS_PATTERN);
	assert_int_equal(c->det.n, 1);
	assert_int_equal(c->det.m, 4);
	shp_netem_conf_free(c);
	c = parse_ok("drop burst 3 10 ecn");
	assert_int_equal(c->loss_model, SHP_NETEM_LOSS_BURST);
	assert_int_equal(c->det.n, 3);
	assert_int_equal(c->det.m, 10);
	assert_true(c->ecn);
	shp_netem_conf_free(c);
	c = parse_ok("loss pattern 4294967295 4294967295");   /* all */
	assert_int_equal(c->det.n, UINT32_MAX);
	shp_netem_conf_free(c);
	c = parse_ok("loss sequence 0010110 delay 1ms");
	assert_int_equal(c->loss_model, SHP_NETEM_LOSS_SEQUENCE);
	assert_int_equal(c->seq_len, 7);
	assert_memory_equal(c->seq, "\0\0\1\0\1\1\0", 7);
	assert_int_equal(c->latency, 1000000);
	shp_netem_conf_free(c);
	/* `drop` after ber is the loss word when a model follows */
	c = parse_ok("ber 1e-6 drop pattern 2 5");
	assert_false(c->ber_drop);
	assert_int_equal(c->loss_model, SHP_NETEM_LOSS_PATTERN);
	shp_netem_conf_free(c);

	round_trip("loss pattern 2 5", "loss pattern 2 5");
	round_trip("delay 10ms 5ms drop burst 3 10 duplicate 50%",
		   "delay 10ms 5ms loss burst 3 10 duplicate 50%");
	round_trip("loss sequence 0010110 ecn", "loss sequence 0010110 ecn");
	round_trip("loss sequence 0", "loss sequence 0");

	/* the longest sequence prints whole and reads back */
	for (i = 0; i < SHP_NETEM_LOSS_SEQ_MAX; i++)
		seq[i] = "0110100"[i % 7];
	seq[i] = '\0';
	snprintf(out, sizeof(out), "loss sequence %s", seq);
	c = parse_ok(out);
	assert_int_equal(c->seq_len, SHP_NETEM_LOSS_SEQ_MAX);
	assert_int_equal(shp_netem_conf_format(c, out, sizeof(out)),
			 (int)strlen("loss sequence ") + SHP_NETEM_LOSS_SEQ_MAX);
	assert_string_equal(out + strlen("loss sequence "), seq);
	b = parse_ok(out);
	assert_true(conf_equal(c, b));
	/* cut short like snprintf: terminated, the full length returned */
	assert_int_equal(shp_netem_conf_format(c, out, 20),
			 (int)strlen("loss sequence ") + SHP_NETEM_LOSS_SEQ_MAX);
	assert_string_equal(out, "loss sequence 01101");
	shp_netem_conf_free(b);
	shp_netem_conf_free(c);

	parse_bad("loss pattern 0 4", "pattern", "above 0");
	parse_bad("loss pattern 5 4", "'4' is below N 5", NULL);
	parse_bad("loss pattern 1", "pattern", "M");
	parse_bad("loss pattern", "pattern", "N");
	parse_bad("loss pattern 1 x", "pattern", "'x'");
	parse_bad("loss pattern -1 4", "pattern", "'-1'");
	parse_bad("loss pattern 1.5 4", "pattern", "'1.5'");
	parse_bad("loss pattern 1 4294967296", "pattern", "4294967296");
	parse_bad("loss burst 0 10", "burst", "LEN '0' must be above 0");
	parse_bad("loss burst 11 10", "burst", "PERIOD '10' is below LEN 11");
	parse_bad("loss sequence", "BITS of 'loss sequence BITS'", NULL);
	parse_bad("loss sequence 0102", "sequence", "character 4 is '2'");
	parse_bad("loss sequence 10 loss pattern 1 2", "given twice", NULL);
	parse_bad("loss pattern 1 2 loss 1%", "given twice", NULL);
	parse_bad("loss patern 1 2", "unknown loss model 'patern'",
		  "pattern, burst, sequence");
	seq[SHP_NETEM_LOSS_SEQ_MAX] = '1';
	seq[SHP_NETEM_LOSS_SEQ_MAX + 1] = '\0';
	snprintf(out, sizeof(out), "loss sequence %s", seq);
	parse_bad(out, "sequence", "4097 characters: give 1 to 4096");
}

/* Issue 25: store BYTES|off, printed only when given. */
static void
test_store(void **state)
{
	struct shp_netem_conf *c;

	(void)state;
	c = parse_ok("delay 10ms");
	assert_false(c->store_set);
	shp_netem_conf_free(c);
	c = parse_ok("delay 10ms store 128");
	assert_true(c->store_set);
	assert_int_equal(c->store, 128);
	shp_netem_conf_free(c);
	c = parse_ok("store off delay 1ms");
	assert_true(c->store_set);
	assert_int_equal(c->store, 0);
	shp_netem_conf_free(c);
	round_trip("delay 10ms store 1k", "delay 10ms store 1024");
	round_trip("store off delay 10ms 5ms", "delay 10ms 5ms store off");
	round_trip("store 0", "store off");
	round_trip("delay 1ms store 256 seed 3", "delay 1ms store 256 seed 3");
	/* after PACKETS: stored once more wait in mbufs */
	c = parse_ok("delay 10ms store 256 after 100");
	assert_true(c->store_set && c->store_after_set);
	assert_int_equal(c->store, 256);
	assert_int_equal(c->store_after, 100);
	shp_netem_conf_free(c);
	c = parse_ok("delay 10ms store 256");
	assert_false(c->store_after_set);
	shp_netem_conf_free(c);
	round_trip("store 1k after 0 delay 1ms", "delay 1ms store 1024 after 0");
	round_trip("delay 1ms store 256 after 8192 seed 3",
		   "delay 1ms store 256 after 8192 seed 3");
	parse_bad("store 256 after", "after", NULL);
	parse_bad("store 256 after many", "store after", "'many'");
	/* off stores nothing: no depth to give */
	parse_bad("store off after 5", "after", NULL);
	parse_bad("store", "store", NULL);
	parse_bad("store big", "store", "'big'");
	parse_bad("store -1", "store", "'-1'");
}

/* Issue 28.2: accumulate TIME. */
static void
test_accumulate(void **state)
{
	struct shp_netem_conf *c;

	(void)state;
	c = parse_ok("delay 10ms accumulate 5ms");
	assert_int_equal(c->accumulate, 5000000);
	shp_netem_conf_free(c);
	round_trip("delay 10ms accumulate 5ms rate 10mbit",
		   "delay 10ms rate 10Mbit accumulate 5ms");
	round_trip("accumulate 1500us", "accumulate 1500us");
	parse_bad("accumulate", "accumulate", "time");
	parse_bad("accumulate 5", "accumulate", "'5'");
	parse_bad("accumulate 0ms", "accumulate", "above 0");
	parse_bad("accumulate -1ms", "accumulate", "'-1ms'");
	parse_bad("accumulate 5ms slot 1ms", "'accumulate' and 'slot'", NULL);
}

/* Issue 15.5: a second `slot distribution` replaces the first (whose
 * table is freed: the ASan build sees a leak otherwise). */
static void
test_slot_twice(void **state)
{
	struct shp_netem_conf *c;

	(void)state;
	c = parse_ok("slot distribution normal 1ms 1ms "
		     "slot distribution uniform 1ms 1ms");
	assert_null(c->slot_dist);
	shp_netem_conf_free(c);
	c = parse_ok("slot distribution normal 1ms 1ms "
		     "slot distribution pareto 2ms 1ms");
	assert_non_null(c->slot_dist);
	assert_string_equal(c->slot_dist->name, "pareto");
	shp_netem_conf_free(c);
	c = parse_ok("slot distribution normal 1ms 1ms slot 2ms");
	assert_null(c->slot_dist);
	assert_int_equal(c->slot_mode, SHP_NETEM_SLOT_RANGE);
	shp_netem_conf_free(c);
}

/* Issue 11.3: tc's matches() and the `netem:` prefix on every error. */
static void
test_tc_words(void **state)
{
	struct shp_netem_conf *c;
	char err[SHP_ERR_LEN];

	(void)state;
	c = parse_ok("l 100 lat 10ms 1ms dup 1% cor 2% ra 1mbit se 5");
	assert_int_equal(c->limit, 100);
	assert_int_equal(c->latency, 10000000);
	assert_true(c->duplicate.p == 0.01 && c->corrupt.p == 0.02);
	assert_int_equal(c->rate, 125000);
	assert_int_equal(c->seed, 5);
	shp_netem_conf_free(c);
	c = parse_ok("rate 1mbit 20 -5");
	assert_int_equal(c->packet_overhead, 20);
	assert_int_equal(c->cell_size, 0);
	assert_int_equal(c->cell_overhead, -5);
	shp_netem_conf_free(c);
	c = parse_ok("rate 1000000");   /* bits per second */
	assert_int_equal(c->rate, 125000);
	shp_netem_conf_free(c);
	assert_null(shp_netem_parse("delya 10ms", err));
	assert_int_equal(strncmp(err, "netem: ", 7), 0);
	assert_null(shp_netem_parse("delay 10m", err));
	assert_int_equal(strncmp(err, "netem: delay: ", 14), 0);
	/* bare times as tc's get_time64 reads them: nanoseconds */
	c = parse_ok("delay 100000000 10000000 slot 10 200");
	assert_int_equal(c->latency, 100 * 1000000);
	assert_int_equal(c->jitter, 10 * 1000000);
	assert_int_equal(c->slot_min, 10);
	assert_int_equal(c->slot_max, 200);
	shp_netem_conf_free(c);
	/* ours still take a unit */
	assert_null(shp_netem_parse("outage 10 1s", err));
	/* tc's printed line reads back: labels, a slot without a table */
	c = parse_ok("loss state p13 1% p31 99% p32 0% p23 100% p14 0% "
		     "slot distribution 1ms 100us");
	assert_true(c->state.p13 == 0.01 && c->state.p23 == 1);
	assert_int_equal(c->slot_delay, 1000000);
	assert_int_equal(c->slot_jitter, 100000);
	shp_netem_conf_free(c);
	c = parse_ok("loss gemodel p 1% r 99% 1-h 100% 1-k 0%");
	assert_true(c->ge.p == 0.01 && c->ge.r == 0.99 && c->ge.h1 == 1);
	shp_netem_conf_free(c);
	assert_null(shp_netem_parse("loss", err));
	assert_int_equal(strncmp(err, "netem: ", 7), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delay_forms),
		cmocka_unit_test(test_loss_forms),
		cmocka_unit_test(test_other_forms),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_builtin_tables),
		cmocka_unit_test(test_table_files),
		cmocka_unit_test(test_table_file_bounds),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_random),
		cmocka_unit_test(test_slot_twice),
		cmocka_unit_test(test_deterministic_loss),
		cmocka_unit_test(test_accumulate),
		cmocka_unit_test(test_store),
		cmocka_unit_test(test_tc_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
