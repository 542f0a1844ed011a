/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lossless budget (issue 61): its arithmetic (shp_budget_finish), the
 * frames netem's delay line holds by its budget op (the mbufs it may take
 * and what its byte store holds at its most, or the limit given), the
 * profiles the issue names within it (10 Gbit/s for 600 ms, 1 Gbit/s for
 * 10 s, on the default pool), and the rate stage's rate the chain keeps
 * for the delay stage as that stage changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "netem_tq.h"
#include "shp_budget.h"
#include "shp_chain.h"
#include "shp_netem.h"
#include "shp_rig.h"

static const struct shp_kind_env env = { .bands = 3, .ring_size = 1024 };

#define GBIT (1000000000ull / 8)   /* bytes/s */
/* the default pool of two ports, and a port's share of it */
#define POOL 45184u
#define HOLD 16384u

static void
test_finish_arithmetic(void **state)
{
	struct shp_budget b = {
		.frame = 1500, .frames = 500000,
		.line_rate = 10 * GBIT, .gate_rate = 10 * GBIT,
		.delay_ns = 600000000,
	};

	(void)state;
	shp_budget_finish(&b);
	/* at the line 1524 bytes a frame: 500,000 x 1524 x 8 / 10e9 s */
	assert_int_equal(b.max_delay_at_line_ns, 609600000);
	/* at tbf's rate 1500 */
	assert_int_equal(b.max_delay_at_rate_ns, 600000000);
	/* 500,000 frames of 1500 bytes over 600 ms */
	assert_int_equal(b.max_rate_at_delay_bps, 10000000000ull);
	assert_false(b.over);   /* exactly at it */
	b.delay_ns = 600000001;
	shp_budget_finish(&b);
	assert_true(b.over);
	assert_true(b.max_rate_at_delay_bps < 10000000000ull);
	/* without a rate stage the line decides: 609.6 ms */
	b.gate_rate = 0;
	shp_budget_finish(&b);
	assert_false(b.over);
	assert_int_equal(b.max_delay_at_rate_ns, 0);
	b.delay_ns = 609600001;
	shp_budget_finish(&b);
	assert_true(b.over);
	/* no rate known: nothing to judge; no delay: no rate bound */
	b.line_rate = 0;
	shp_budget_finish(&b);
	assert_false(b.over);
	assert_int_equal(b.max_delay_at_line_ns, 0);
	b.delay_ns = 0;
	b.line_rate = 10 * GBIT;
	shp_budget_finish(&b);
	assert_false(b.over);
	assert_int_equal(b.max_rate_at_delay_bps, 0);
}

/* netem's budget for a profile text on a port of 10 Gbit/s at MTU 1500
 * (frames of 1514 bytes), with a rate stage of gate bytes/s */
static struct shp_budget
netem_budget(const char *text, uint32_t frame, uint64_t gate)
{
	const struct shp_kind *k = shp_kind_find("netem");
	struct shp_budget_in in = {
		.frame = frame, .line_rate = 10 * GBIT, .gate_rate = gate,
		.pool = POOL, .hold_cap = HOLD,
	};
	struct shp_budget b;
	char err[SHP_ERR_LEN];
	struct shp_netem_conf *c = text != NULL ?
		shp_netem_parse(text, err) : NULL;

	assert_non_null(k->budget);
	assert_true(text == NULL || c != NULL);
	memset(&b, 0, sizeof(b));
	k->budget(c, &in, &b);
	b.frame = in.frame;
	b.line_rate = in.line_rate;
	b.gate_rate = in.gate_rate;
	shp_budget_finish(&b);
	shp_netem_conf_free(c);
	return b;
}

static void
test_netem_frames(void **state)
{
	/* records of 1514 bytes: 48 + 64 + 1520; 40 a chunk of 64 KiB
	 * (a header and a block to spare), 65,536 chunks in 4 GiB */
	uint64_t store = shp_tq_store_frames((size_t)4 << 30, 1514);
	struct shp_budget b;

	(void)state;
	assert_int_equal(shp_tq_store_rec_size(1514), 1632);
	assert_int_equal(store, 65536ull * 40);
	b = netem_budget("delay 600ms", 1514, 10 * GBIT);
	assert_int_equal(b.mbufs, HOLD);
	assert_int_equal(b.frames, HOLD + store);
	assert_int_equal(b.store_reserved, (uint64_t)4 << 30);
	assert_int_equal(b.delay_ns, 600000000);
	/* the profile's share of the store holds its 600 ms at 10 Gbit/s
	 * of such frames (and of 64-byte ones: 2.75 bytes a wire byte) */
	assert_true(b.store_bound >= 10 * GBIT * 61 / 100 * 1632 / 1514);
	assert_true(b.store_bound <= b.store_reserved);
	/* the default: off is a profile too, the figures it would get */
	b = netem_budget(NULL, 1514, 0);
	assert_int_equal(b.frames, HOLD + store);
	assert_int_equal(b.delay_ns, 0);
	/* no store, or one for smaller frames: the mbufs alone */
	b = netem_budget("delay 10ms store off", 1514, 0);
	assert_int_equal(b.frames, HOLD);
	b = netem_budget("delay 10ms store 256", 1514, 0);
	assert_int_equal(b.frames, HOLD);
	b = netem_budget("delay 10ms store 2000", 1514, 0);
	assert_int_equal(b.frames, HOLD + store);
	/* jumbo frames (MTU 9000) take no record: mbufs */
	b = netem_budget("delay 10ms", 9014, 0);
	assert_int_equal(b.frames, HOLD);
	/* a limit given bounds it all */
	b = netem_budget("delay 10ms limit 1000", 1514, 0);
	assert_int_equal(b.frames, 1000);
	/* the delay configured: delay, jitter and accumulate */
	b = netem_budget("delay 10ms 2ms accumulate 5ms", 1514, 0);
	assert_int_equal(b.delay_ns, 17000000);
}

/* The issue's profiles are within the default pool's budget; 5 s at
 * 10 Gbit/s is not, and says both figures. */
static void
test_issue_profiles(void **state)
{
	struct shp_budget b;
	char line[512];

	(void)state;
	b = netem_budget("delay 600ms", 1514, 10 * GBIT);
	assert_false(b.over);
	assert_true(b.max_delay_at_rate_ns > 3000000000ull);
	assert_true(b.max_rate_at_delay_bps > 50000000000ull);
	b = netem_budget("delay 10s", 1514, 1 * GBIT);
	assert_false(b.over);
	assert_true(b.max_delay_at_rate_ns > 30000000000ull);
	b = netem_budget("delay 5s", 1514, 10 * GBIT);
	assert_true(b.over);
	shp_budget_over_line(&b, 0, line, sizeof(line));
	assert_non_null(strstr(line, "at most 3.19s at 10 Gbit/s"));
	assert_non_null(strstr(line, "at most 6.39 Gbit/s at 5s"));
	/* the store off: 16,384 frames are 19.8 ms at 10 Gbit/s */
	b = netem_budget("delay 600ms store off", 1514, 10 * GBIT);
	assert_true(b.over);
	assert_int_equal(b.max_delay_at_rate_ns / 100000, 198);
	shp_budget_line(&b, 0, line, sizeof(line));
	assert_non_null(strstr(line, "frames of 1514 bytes"));
	/* a slow rate stage: whole seconds, no exponent */
	b = netem_budget("delay 300ms", 1514, 25000000 / 8);
	shp_budget_line(&b, 0, line, sizeof(line));
	assert_non_null(strstr(line, "1278s at the rate stage's 25 Mbit/s"));
	assert_null(strstr(line, "e+"));
}

/* The chain keeps its rate stage's rate in its env: at build, after a
 * change, off. */
static void
test_gate_rate_in_env(void **state)
{
	struct shp_chain_spec spec = { { NULL } };
	struct shp_stage_env senv = { .socket = SOCKET_ID_ANY,
				      .single_producer = true,
				      .ring_size = 1024,
				      .ctr_blocks = shp_rig_ctr,
				      .nb_ctr_blocks = 1 };
	struct shp_ctx ctx = { .ctr = &shp_rig_ctr->port[0] };
	const struct shp_kind *k, *tbf;
	char err[SHP_ERR_LEN];
	struct shp_chain c;
	void *conf, *old;

	(void)state;
	assert_int_equal(shp_kind_parse("tbf", "rate 10gbit burst 1mb limit "
					"2gb", &env, &tbf,
					&spec.conf[SHP_SLOT_RATE], err), 0);
	spec.kind[SHP_SLOT_RATE] = tbf;
	assert_int_equal(shp_kind_parse("netem", "delay 600ms", &env, &k,
					&spec.conf[SHP_SLOT_DELAY], err), 0);
	spec.kind[SHP_SLOT_DELAY] = k;
	assert_int_equal(shp_chain_build(&c, &spec, shp_rig_pool, 0, &senv,
					 NULL, &env), 0);
	assert_int_equal(c.env.gate_rate, 10 * GBIT);
	assert_int_equal(shp_kind_parse("tbf", "rate 1gbit burst 1mb limit "
					"2gb", &env, &tbf, &conf, err), 0);
	assert_int_equal(shp_chain_change(&c, tbf, conf, &old, err), 0);
	assert_int_equal(c.env.gate_rate, 1 * GBIT);
	shp_kind_conf_free(tbf, old);
	assert_int_equal(shp_chain_change(&c, tbf, NULL, &old, err), 0);
	assert_int_equal(c.env.gate_rate, 0);
	shp_kind_conf_free(tbf, old);
	shp_chain_destroy(&c, &ctx);
	shp_rig_assert_pool_full(shp_rig_pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finish_arithmetic),
		cmocka_unit_test(test_netem_frames),
		cmocka_unit_test(test_issue_profiles),
		cmocka_unit_test(test_gate_rate_in_env),
	};

	shp_rig_env("budget", 4096);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
