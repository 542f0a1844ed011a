/* SPDX-License-Identifier: BSD-3-Clause */
/* Schedules (lib/conf/schedule.h): the parser, occurrences, link state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "schedule.h"
#include "shp_rig.h"

static const uint16_t ports[] = { 0, 1 };
static const struct shp_kind_env env = { .bands = 3, .ring_size = 1024 };

static int
parse(struct shp_sched *s, const char *text, char *err)
{
	FILE *f = fmemopen((void *)(uintptr_t)text, strlen(text), "r");
	int rc;

	assert_non_null(f);
	rc = shp_sched_parse(s, "sched.txt", f, ports, RTE_DIM(ports), &env,
			     err);
	fclose(f);
	return rc;
}

static void
test_every_command(void **state)
{
	struct shp_sched s;
	char err[SHP_ERR_LEN];

	(void)state;
	assert_int_equal(parse(&s,
		"# a comment\n"
		"0 set netem all delay 10ms   # trailing comment\n"
		"\n"
		"1.5s set tbf 1 rate 1mbit burst 10kb limit 100kb\n"
		"2s clear tbf all\n"
		"2s link down 0\n"
		"3s link up 0\n"
		"4s set queue 1 pfifo_fast\n"
		"5s clear queue 0\n", err), 0);
	assert_int_equal(s.nb, 7);
	assert_int_equal(s.repeat, 0);
	assert_int_equal(s.ev[0].t, 0);
	assert_int_equal(s.ev[0].op, SHP_SCHED_SET);
	assert_string_equal(s.ev[0].key, "netem");
	assert_int_equal(s.ev[0].port, -1);
	assert_string_equal(s.ev[0].args, "delay 10ms");
	assert_int_equal(s.ev[0].line, 2);
	assert_int_equal(s.ev[1].t, 1500000000);
	assert_int_equal(s.ev[1].port, 1);
	assert_string_equal(s.ev[1].key, "tbf");
	assert_null(s.ev[2].args);             /* clear */
	assert_int_equal(s.ev[3].op, SHP_SCHED_LINK);
	assert_true(s.ev[3].down);
	assert_int_equal(s.ev[3].port, 0);
	assert_false(s.ev[4].down);
	assert_string_equal(s.ev[5].key, "queue");
	assert_string_equal(s.ev[6].text, "clear queue 0");
	assert_true(shp_sched_has_link(&s, 0));
	assert_false(shp_sched_has_link(&s, 1));
	shp_sched_free(&s);
}

/* disable|enable P|all, and a link's carrier (issue 61) */
static void
test_toggle_and_carrier(void **state)
{
	struct shp_sched s;
	char err[SHP_ERR_LEN];

	(void)state;
	assert_int_equal(parse(&s,
		"1s disable 1\n"
		"2s link down 0 carrier\n"
		"3s enable all\n"
		"4s link up 0\n"
		"5s link down 0\n", err), 0);
	assert_int_equal(s.nb, 5);
	assert_int_equal(s.ev[0].op, SHP_SCHED_TOGGLE);
	assert_true(s.ev[0].down);
	assert_int_equal(s.ev[0].port, 1);
	assert_int_equal(s.ev[2].op, SHP_SCHED_TOGGLE);
	assert_false(s.ev[2].down);
	assert_int_equal(s.ev[2].port, -1);
	assert_int_equal(s.ev[1].op, SHP_SCHED_LINK);
	assert_true(s.ev[1].carrier);
	/* toggles are no link events */
	assert_false(shp_sched_has_link(&s, 1));
	assert_false(shp_sched_link_carrier(&s, 0, 1999999999));
	assert_true(shp_sched_link_carrier(&s, 0, 2000000000));
	assert_false(shp_sched_link_carrier(&s, 0, 4000000000));
	/* down without carrier: the carrier stays */
	assert_false(shp_sched_link_carrier(&s, 0, 5000000000));
	shp_sched_free(&s);
}

/* every refusal names the file and the line */
static void
test_refusals(void **state)
{
	static const struct {
		const char *text, *line, *what;
	} bad[] = {
		{ "1s jump netem 0\n", ":1:", "unknown command 'jump'" },
		{ "1s set netem 0 delay 1ms\n0.5s link down 0\n", ":2:",
		  "goes backwards" },
		{ "1s link down 7\n", ":1:", "no port '7'" },
		{ "1s set netem 3 delay 1ms\n", ":1:", "no port '3'" },
		{ "1s set netem 0 delay banana\n", ":1:", "banana" },
		{ "1s set priomap 1 2 3\n", ":1:", "a schedule changes" },
		{ "1s link sideways 0\n", ":1:", "usage: link" },
		{ "1s link up 0 carrier\n", ":1:", "usage: link" },
		{ "1s link down 0 carrot\n", ":1:", "usage: link" },
		{ "1s disable 7\n", ":1:", "no port '7'" },
		{ "1s disable\n", ":1:", "usage: disable P|all" },
		{ "1s enable 0 now\n", ":1:", "usage: enable P|all" },
		{ "soon set netem 0 delay 1ms\n", ":1:", "expected a time" },
		{ "5 set netem 0 delay 1ms\n", ":1:", "expected a time" },
		{ "1s\n", ":1:", "needs a command" },
		{ "1s set netem 0\n", ":1:", "usage: set netem" },
		{ "1s clear netem 0 now\n", ":1:", "usage: clear netem" },
		{ "1s link down 0\nrepeat 10s\n2s link up 0\n", ":3:",
		  "must be the last" },
		{ "2s link down 0\nrepeat 1s\n", ":2:", "longer than" },
		{ "repeat 1s\n", ":1:", "no event" },
		/* the limit is said, not "expected a time" alone */
		{ "86401s set netem 0 delay 1ms\n", ":1:",
		  "time too large (at most 24 hours)" },
		/* below the floor: refused, the floor named */
		{ "0 set netem 0 delay 1ms\nrepeat 1ns\n", ":2:",
		  "repeat 1ns: the period must be at least 1ms" },
		{ "0 link down 0\nrepeat 999999ns\n", ":2:",
		  "at least 1ms" },
		/* a binary word, escaped: no raw byte reaches the line */
		{ "\x1b[2J\x7f set netem 0\n", ":1:",
		  "'\\x1b[2J\\x7f': expected a time" },
		{ "1s set netem \x1b[31m\xff delay 1ms\n", ":1:",
		  "no port '\\x1b[31m\\xff'" },
	};
	struct shp_sched s;
	char err[SHP_ERR_LEN];
	unsigned int i;

	(void)state;
	for (i = 0; i < RTE_DIM(bad); i++) {
		assert_int_equal(parse(&s, bad[i].text, err), -1);
		if (strstr(err, bad[i].line) == NULL ||
		    strstr(err, bad[i].what) == NULL ||
		    strncmp(err, "sched.txt:", 10) != 0 ||
		    strchr(err, '\n') != NULL)
			fail_msg("%s: got '%s'", bad[i].text, err);
		for (const char *c = err; *c != '\0'; c++)
			if ((unsigned char)*c < 0x20 ||
			    (unsigned char)*c >= 0x7f)
				fail_msg("%s: a raw byte in '%s'", bad[i].text,
					 err);
		assert_int_equal(s.nb, 0);   /* nothing left to free */
	}
}

static void
test_repeat_order(void **state)
{
	struct shp_sched s;
	struct shp_sched_cursor c = { 0, 0 };
	char err[SHP_ERR_LEN];
	static const uint64_t want[] = {
		0, 1000000000, 1000000000, 3000000000,
		10000000000, 11000000000, 11000000000, 13000000000,
		20000000000,
	};
	unsigned int i;

	(void)state;
	assert_int_equal(parse(&s,
		"0 set netem 0 delay 1ms\n"
		"1s link down 0\n"
		"1s set netem 0 delay 2ms\n"
		"3s link up 0\n"
		"repeat 10s\n", err), 0);
	assert_int_equal(s.repeat, 10000000000ull);
	for (i = 0; i < RTE_DIM(want); i++) {
		assert_int_equal(shp_sched_cursor_time(&s, &c), want[i]);
		/* same time: file order */
		if (i == 1 || i == 5)
			assert_int_equal(s.ev[c.i].op, SHP_SCHED_LINK);
		shp_sched_cursor_next(&s, &c);
	}
	shp_sched_cursor_seek(&s, 10500000000ull, &c);
	assert_int_equal(shp_sched_cursor_time(&s, &c), 11000000000ull);
	assert_int_equal(c.i, 1);
	shp_sched_cursor_seek(&s, 11000000001ull, &c);
	assert_int_equal(shp_sched_cursor_time(&s, &c), 13000000000ull);
	shp_sched_free(&s);

	/* without repeat the cursor ends */
	assert_int_equal(parse(&s, "1s link down 1\n", err), 0);
	c = (struct shp_sched_cursor){ 0, 0 };
	assert_int_equal(shp_sched_cursor_time(&s, &c), 1000000000);
	shp_sched_cursor_next(&s, &c);
	assert_int_equal(shp_sched_cursor_time(&s, &c), SHP_SCHED_NONE);
	shp_sched_cursor_seek(&s, 2000000000, &c);
	assert_int_equal(shp_sched_cursor_time(&s, &c), SHP_SCHED_NONE);
	shp_sched_free(&s);
}

static void
test_link_state(void **state)
{
	struct shp_sched s;
	char err[SHP_ERR_LEN];
	uint64_t since;

	(void)state;
	assert_int_equal(parse(&s,
		"1s link down 0\n"
		"2s link up 0\n"
		"3s link down all\n"
		"repeat 4s\n", err), 0);
	/* before anything: up, no event */
	assert_false(shp_sched_link_down(&s, 0, 999999999, &since));
	assert_int_equal(since, SHP_SCHED_NONE);
	/* at the event's time exactly, the new state */
	assert_true(shp_sched_link_down(&s, 0, 1000000000, &since));
	assert_int_equal(since, 1000000000);
	assert_true(shp_sched_link_down(&s, 0, 1999999999, &since));
	assert_false(shp_sched_link_down(&s, 0, 2000000000, &since));
	assert_true(shp_sched_link_down(&s, 0, 3500000000, &since));
	/* cycle 2 starts down: the last word of cycle 1 holds */
	assert_true(shp_sched_link_down(&s, 0, 4100000000, &since));
	assert_int_equal(since, 3000000000);
	assert_false(shp_sched_link_down(&s, 0, 6000000000, &since));
	assert_int_equal(since, 6000000000);
	/* port 1: only `all` */
	assert_false(shp_sched_link_down(&s, 1, 2500000000, &since));
	assert_true(shp_sched_link_down(&s, 1, 3000000000, &since));
	assert_true(shp_sched_link_down(&s, 1, 5000000000, &since));
	shp_sched_free(&s);
}

/* The offline application: the chain runs what the event says, and a
 * packet delayed before keeps its send time. */
static void
test_apply(void **state)
{
	struct shp_chain c;
	struct shp_chain_spec spec = { { NULL } };
	struct shp_stage_env senv = { .socket = SOCKET_ID_ANY,
				      .single_producer = true,
				      .ring_size = 1024,
				      .ctr_blocks = shp_rig_ctr,
				      .nb_ctr_blocks = 1 };
	struct shp_ctx ctx = { .ctr = &shp_rig_ctr->port[0] };
	struct shp_sched s;
	char err[SHP_ERR_LEN], buf[128];
	const struct shp_kind *k;
	struct rte_mbuf *m[2], *out[4];
	uint8_t band[2] = { 1, 1 };
	unsigned int i;

	(void)state;
	assert_int_equal(shp_kind_parse("netem", "delay 10ms", &env, &k,
					&spec.conf[SHP_SLOT_DELAY], err), 0);
	spec.kind[SHP_SLOT_DELAY] = k;
	assert_int_equal(shp_chain_build(&c, &spec, shp_rig_pool, 0, &senv,
					 NULL, &env), 0);
	assert_int_equal(parse(&s,
		"1s set netem 0 delay 200ms\n"
		"2s clear netem all\n"
		"3s set tbf 0 rate 1mbit burst 10kb limit 100kb\n", err), 0);
	assert_int_equal(shp_sched_check_chain(&s, 0, &c, &env, err), 0);

	/* a packet at 0.5 s: 10 ms */
	for (i = 0; i < 2; i++) {
		m[i] = rte_pktmbuf_alloc(shp_rig_pool);
		assert_non_null(m[i]);
		rte_pktmbuf_append(m[i], 100);
	}
	shp_meta_init(m[0], 500000000);
	ctx.now = 500000000;
	shp_chain_enqueue_rx(&c, m, band, 1u << 1, 100, 1, true, &ctx);
	assert_int_equal(shp_qdisc_dequeue(c.root, out, 4, &ctx), 0);
	assert_int_equal(shp_sched_apply(&s.ev[0], &c, &env, err), 0);
	shp_chain_format(&c, SHP_SLOT_DELAY, buf, sizeof(buf));
	assert_non_null(strstr(buf, "delay 200ms"));
	/* one at 1 s: 200 ms; the first keeps 10 ms */
	shp_meta_init(m[1], 1000000000);
	ctx.now = 1000000000;
	shp_chain_enqueue_rx(&c, m + 1, band, 1u << 1, 100, 1, true, &ctx);
	assert_int_equal(shp_qdisc_dequeue(c.root, out, 4, &ctx), 1);
	/* the first (netem's byte store gives it back in a fresh mbuf) */
	assert_int_equal(shp_meta(out[0])->rx_ns, 500000000);
	assert_int_equal(shp_meta(out[0])->time_to_send, 510000000);
	rte_pktmbuf_free(out[0]);
	ctx.now = 1200000000;
	assert_int_equal(shp_qdisc_dequeue(c.root, out, 4, &ctx), 1);
	assert_int_equal(shp_meta(out[0])->time_to_send, 1200000000);
	rte_pktmbuf_free(out[0]);

	assert_int_equal(shp_sched_apply(&s.ev[1], &c, &env, err), 0);
	shp_chain_format(&c, SHP_SLOT_DELAY, buf, sizeof(buf));
	assert_string_equal(buf, "off");
	/* the chain runs tbf off: a change of its profile is allowed */
	assert_int_equal(shp_sched_apply(&s.ev[2], &c, &env, err), 0);
	shp_chain_format(&c, SHP_SLOT_RATE, buf, sizeof(buf));
	assert_non_null(strstr(buf, "rate 1Mbit"));
	shp_chain_destroy(&c, &ctx);
	shp_sched_free(&s);

	/* a kind the port does not run is refused, naming the line */
	spec = (struct shp_chain_spec){ { NULL } };
	assert_int_equal(shp_chain_build(&c, &spec, shp_rig_pool, 0, &senv,
					 NULL, &env), 0);
	assert_int_equal(parse(&s, "1s link down 0\n"
			       "2s set queue 0 fq_codel\n", err), 0);
	assert_int_equal(shp_sched_check_chain(&s, 0, &c, &env, err), -1);
	assert_non_null(strstr(err, "sched.txt:2:"));
	assert_non_null(strstr(err, "runs pfifo_fast"));
	shp_chain_destroy(&c, &ctx);
	shp_sched_free(&s);
	assert_int_equal(rte_mempool_avail_count(shp_rig_pool),
			 shp_rig_pool->size);
}

/* At the floor a repeat is taken; the last change of a stage at an
 * instant, per port, is the only one that need be applied. */
static void
test_floor_and_last_at_instant(void **state)
{
	struct shp_sched s;
	char err[SHP_ERR_LEN];
	bool last[8];

	(void)state;
	assert_int_equal(parse(&s,
		"0 set netem all delay 1ms\n"     /* 0: replaced by 2 (0), 1 */
		"0 set tbf 0 rate 1mbit burst 10kb limit 100kb\n"   /* 1 */
		"0 set netem 0 delay 2ms\n"       /* 2: last on 0 */
		"0 link down 0\n"                 /* 3: not a change */
		"500us set netem all delay 3ms\n" /* 4: another instant */
		"500us set netem 1 delay 4ms\n"   /* 5: last on 1 */
		"repeat 1ms\n", err), 0);
	assert_int_equal(s.repeat, 1000000);
	shp_sched_last_at_instant(&s, 0, last);
	assert_false(last[0]);
	assert_true(last[1]);
	assert_true(last[2]);
	assert_false(last[3]);
	assert_true(last[4]);
	assert_false(last[5]);     /* not on port 0 */
	shp_sched_last_at_instant(&s, 1, last);
	assert_true(last[0]);      /* port 1: nothing after it at 0 */
	assert_false(last[1]);
	assert_false(last[2]);
	assert_false(last[4]);
	assert_true(last[5]);
	shp_sched_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_command),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_toggle_and_carrier),
		cmocka_unit_test(test_repeat_order),
		cmocka_unit_test(test_link_state),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_floor_and_last_at_instant),
	};

	shp_rig_env("schedule", 4096);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
