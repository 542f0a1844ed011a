/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The trace kind (lib/sched/sch_trace.c) on a virtual clock: packets leave at
 * the trace's opportunities only, share them as Mahimahi's mm-link does,
 * and a bad trace file is refused with one line naming the file and line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "shp_kind.h"
#include "shp_link.h"
#include "shp_meta.h"
#include "shp_rig.h"

#define MS UINT64_C(1000000)
#define T0 (1000 * MS)   /* the rig's clock when the schedule starts */

static char dir[] = "/tmp/shp_test_trace_XXXXXX";

/* A file holding text; its path (static: one at a time). */
static const char *
trace_file(const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.trace", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* What left, in order: when, its time_to_send, its length. */
struct seen {
	unsigned int n;
	uint64_t at[256], tts[256];
	uint32_t len[256];
};

static void
record(struct shp_rig *r, struct rte_mbuf *m)
{
	struct seen *s = r->arg;

	assert_true(s->n < RTE_DIM(s->at));
	s->at[s->n] = r->ctx.now;
	s->tts[s->n] = shp_meta(m)->time_to_send;
	s->len[s->n] = rte_pktmbuf_pkt_len(m);
	s->n++;
}

/* bands under a trace of text; the schedule starts at T0 (the first
 * call that sees the conf). */
static void
rig_trace(struct shp_rig *r, const char *text, struct seen *s)
{
	char spec[256];

	snprintf(spec, sizeof(spec), "trace %s", trace_file(text));
	shp_rig_chain(r, "bands", spec);
	memset(s, 0, sizeof(*s));
	r->on_pkt = record;
	r->arg = s;
	r->ctx.now = T0;
	/* the offline tool asks next_time before the first arrival */
	assert_int_equal(shp_qdisc_next_time(r->root, &r->ctx), UINT64_MAX);
}

static void
feed(struct shp_rig *r, uint64_t t, uint16_t len, int n)
{
	struct rte_mbuf *m;
	int i;

	for (i = 0; i < n; i++) {
		shp_rig_pkts(&m, 1, len, 1, NULL, t);
		assert_int_equal(shp_rig_enqueue_at(r, t, &m, 1), 1);
	}
}

/* 1504-byte packets: one an opportunity, at its time exactly, the
 * schedule repeating with a period of its last time. */
static void
test_one_per_opportunity(void **state)
{
	static const uint64_t want[] = { 1, 3, 4, 10, 11, 13, 14, 20, 21, 23 };
	struct shp_rig r;
	struct seen s;
	unsigned int i;

	(void)state;
	rig_trace(&r, "1\n3\n4\n10\n", &s);
	feed(&r, T0, 1504, 10);
	shp_rig_drain(&r);
	assert_int_equal(s.n, 10);
	for (i = 0; i < 10; i++) {
		assert_int_equal(s.at[i], T0 + want[i] * MS);
		/* stamped with the opportunity: no lateness to report */
		assert_int_equal(s.tts[i], T0 + want[i] * MS);
	}
	shp_rig_fini(&r);
}

/* Mahimahi's rule: an opportunity is 1504 bytes spent on the head
 * packets in order; a packet larger than what is left takes it and
 * leaves at the opportunity that completes it. */
static void
test_sharing(void **state)
{
	struct shp_rig r;
	struct seen s;

	(void)state;
	rig_trace(&r, "1\n2\n", &s);
	/* 3 x 500 fit in opportunity 1 (4 bytes left); the 4th takes those
	 * 4 and 496 of opportunity 2; the 1504 after it takes the 1008
	 * left and 496 of opportunity 3 (at 3 ms: the period is 2 ms);
	 * then 1008 fit with the 1008 left of it. */
	feed(&r, T0, 500, 4);
	feed(&r, T0, 1504, 1);
	feed(&r, T0, 1008, 1);
	feed(&r, T0, 100, 1);
	shp_rig_drain(&r);
	assert_int_equal(s.n, 7);
	assert_int_equal(s.at[0], T0 + 1 * MS);
	assert_int_equal(s.at[1], T0 + 1 * MS);
	assert_int_equal(s.at[2], T0 + 1 * MS);
	assert_int_equal(s.at[3], T0 + 2 * MS);
	assert_int_equal(s.at[4], T0 + 3 * MS);
	assert_int_equal(s.at[5], T0 + 3 * MS);
	/* nothing left of opportunity 3: the next one, at 4 ms */
	assert_int_equal(s.at[6], T0 + 4 * MS);
	shp_rig_fini(&r);
}

/* 64-byte packets: 23 fit in one opportunity (23 x 64 = 1472), the 24th
 * takes 32 bytes of the next, and 23 more the 1472 left of it. */
static void
test_small_packets(void **state)
{
	struct shp_rig r;
	struct seen s;
	unsigned int i;

	(void)state;
	rig_trace(&r, "5\n", &s);
	feed(&r, T0, 64, 47);
	shp_rig_drain(&r);
	assert_int_equal(s.n, 47);
	for (i = 0; i < 47; i++)
		assert_int_equal(s.at[i], T0 + (i < 23 ? 5 : 10) * MS);
	shp_rig_fini(&r);
}

/* A frame above 1504 bytes (Mahimahi refuses them) spans opportunities. */
static void
test_jumbo(void **state)
{
	struct shp_rig r;
	struct seen s;

	struct rte_mempool *mp;
	struct rte_mbuf *m;

	(void)state;
	mp = shp_rig_pool_create("jumbo", 8, 4096 + RTE_PKTMBUF_HEADROOM);
	rig_trace(&r, "1\n", &s);
	/* 2 opportunities, 8 bytes left */
	m = shp_rig_pkt_from(mp, 3000, 0, T0);
	assert_int_equal(shp_rig_enqueue_at(&r, T0, &m, 1), 1);
	feed(&r, T0, 1504, 1);   /* the 8, and 1496 of a 3rd */
	shp_rig_drain(&r);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.at[0], T0 + 2 * MS);
	assert_int_equal(s.at[1], T0 + 3 * MS);
	shp_rig_fini(&r);
	shp_rig_assert_pool_full(mp);
	rte_mempool_free(mp);
}

/* Only packets that arrived before an opportunity may use it (Mahimahi
 * runs the link to `now` before it queues an arrival); an opportunity
 * no packet could use is lost, also after an idle hour. */
static void
test_arrivals_and_idle(void **state)
{
	struct rte_mbuf *out[4];
	struct shp_rig r;
	struct seen s;

	(void)state;
	rig_trace(&r, "2\n4\n", &s);
	feed(&r, T0 + 2 * MS, 100, 1);      /* at opportunity 1 exactly */
	shp_rig_drain(&r);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.at[0], T0 + 4 * MS);
	/* an hour and a bit later; the opportunities then are at
	 * T0 + 3600002 ms, 3600004 ms ... (period 4) */
	feed(&r, T0 + 3600001 * MS, 100, 1);
	feed(&r, T0 + 3600001 * MS + 1, 1504, 1);
	/* nothing before 3600002 ms */
	assert_int_equal(shp_rig_dequeue_at(&r, T0 + 3600002 * MS - 1, out,
					    4), 0);
	assert_int_equal(shp_qdisc_next_time(r.root, &r.ctx),
			 T0 + 3600002 * MS);
	shp_rig_drain(&r);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.at[1], T0 + 3600002 * MS);
	assert_int_equal(s.at[2], T0 + 3600004 * MS);
	shp_rig_fini(&r);
}

/* A time repeated is that many opportunities at once; a vector that
 * fills keeps the rest of the opportunity for the next call. */
static void
test_burst_and_vector(void **state)
{
	struct rte_mbuf *out[8];
	struct shp_rig r;
	struct seen s;
	uint16_t k;

	(void)state;
	rig_trace(&r, "3\n3\n3\n3\n7\n", &s);
	feed(&r, T0, 376, 20);   /* 4 a opportunity: 16 at 3 ms */
	k = shp_rig_dequeue_at(&r, T0 + 3 * MS, out, 5);
	assert_int_equal(k, 5);
	rte_pktmbuf_free_bulk(out, k);
	k = shp_rig_dequeue_at(&r, T0 + 3 * MS, out, 8);
	assert_int_equal(k, 8);
	rte_pktmbuf_free_bulk(out, k);
	k = shp_rig_dequeue_at(&r, T0 + 3 * MS, out, 8);
	assert_int_equal(k, 3);
	rte_pktmbuf_free_bulk(out, k);
	assert_int_equal(shp_qdisc_next_time(r.root, &r.ctx), T0 + 7 * MS);
	shp_rig_drain(&r);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.at[0], T0 + 7 * MS);
	assert_int_equal(s.at[3], T0 + 7 * MS);
	shp_rig_fini(&r);
}

/* The bad files of the issue, and a few more: refused with one line
 * that names the file and the line. */
static void
test_refusals(void **state)
{
	static const struct {
		const char *text, *line, *what;
	} bad[] = {
		{ "", ":1:", "empty" },
		{ "1\n3\n2\n", ":3:", "never decrease" },
		{ "1\nx\n", ":2:", "not a time" },
		{ "1\n2ms\n", ":2:", "not a time" },
		{ "1\n-2\n", ":2:", "not a time" },
		{ "1\n\n2\n", ":2:", "not a time" },
		{ "# only\n# comments\n", ":2:", "no opportunity" },
		{ "0\n0\n", ":2:", "last time is 0" },
		{ "1\n99999999999999999999\n", ":2:", "not a time" },
	};
	const struct shp_kind *k = shp_kind_find("trace");
	char err[SHP_ERR_LEN], fifo[128];
	unsigned int i;

	(void)state;
	assert_non_null(k);
	assert_int_equal(k->slot, SHP_SLOT_RATE);
	for (i = 0; i < RTE_DIM(bad); i++) {
		const char *path = trace_file(bad[i].text);
		char where[160];

		err[0] = '\0';
		assert_null(k->parse(path, NULL, err));
		snprintf(where, sizeof(where), "%s%s", path, bad[i].line);
		if (strstr(err, where) == NULL ||
		    strstr(err, bad[i].what) == NULL ||
		    strchr(err, '\n') != NULL)
			fail_msg("'%s': %s", bad[i].text, err);
	}
	assert_null(k->parse("/nonexistent/t.trace", NULL, err));
	assert_non_null(strstr(err, "/nonexistent/t.trace"));
	assert_null(k->parse("", NULL, err));
	assert_null(k->parse(dir, NULL, err));   /* a directory */
	/* a FIFO without a writer: refused, not waited for */
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_null(k->parse(fifo, NULL, err));
	assert_non_null(strstr(err, "not a regular file"));
	unlink(fifo);
}

/* What parses prints back to the same file; comments and blanks around
 * a number are taken; the conf off is a pass-through. */
static void
test_format_and_off(void **state)
{
	const struct shp_kind *k = shp_kind_find("trace");
	const char *path = trace_file("# a comment\n 1 \r\n2\n");
	char err[SHP_ERR_LEN], buf[256];
	struct shp_rig r;
	struct seen s;
	void *c;

	(void)state;
	c = k->parse(path, NULL, err);
	assert_non_null(c);
	assert_true(k->format(c, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, path);
	k->conf_free(c);

	shp_rig_chain(&r, "bands", "trace");
	memset(&s, 0, sizeof(s));
	r.on_pkt = record;
	r.arg = &s;
	feed(&r, 5 * MS, 1504, 3);
	r.ctx.now = 5 * MS;
	assert_int_equal(shp_rig_poll(&r), 3);
	shp_rig_fini(&r);
}

/* ------------------------------------------------- a link's shards */

/* bands under a trace of text on port `port`, one of a link's shards
 * (link shared, the conf twinned with first's when given). */
static void
rig_shard(struct shp_rig *r, uint16_t port, struct shp_stage_env *env,
	  const char *path, const struct shp_rig *first)
{
	char args[160];

	snprintf(args, sizeof(args), "%s", path);
	shp_rig_init(r, port);
	shp_rig_add(r, "bands", NULL);
	r->env = env;
	shp_rig_add(r, "trace", args);
	if (first != NULL)
		shp_conf_twin(shp_rig_conf(r, "trace"),
			      shp_rig_conf(first, "trace"));
}

/* Dequeue shard r at t; the departures' times appended to at[]. */
static unsigned int
shard_poll(struct shp_rig *r, uint64_t t, uint64_t *at, unsigned int n)
{
	struct rte_mbuf *out[32];
	uint16_t k, i;

	do {
		k = shp_rig_dequeue_at(r, t, out, RTE_DIM(out));
		for (i = 0; i < k; i++) {
			assert_true(n < 64);
			at[n++] = shp_meta(out[i])->time_to_send;
			assert_int_equal(at[n - 1], t);
		}
		rte_pktmbuf_free_bulk(out, k);
	} while (k > 0);
	return n;
}

/*
 * Two shards of one link, each with 4 frames of 1504 bytes, polled at
 * every millisecond in either order: the link's 8 opportunities carry
 * one frame each, as one queue of 8 would; a shard with nothing to send
 * polled first loses none of them for the other.
 */
static void
test_shards_share_the_schedule(void **state)
{
	const char *path = trace_file("1\n2\n3\n4\n5\n6\n7\n8\n20\n");
	unsigned int order, ms, i, n[2];
	uint64_t at[2][64];

	(void)state;
	for (order = 0; order < 4; order++) {
		struct shp_link_shared link;
		struct shp_stage_env env = { .name = "trace", .shard = 0 };
		struct shp_rig r[2];
		bool idle = order >= 2;   /* shard 1 sends nothing */

		memset(&link, 0, sizeof(link));
		env.link = &link;
		rig_shard(&r[0], 0, &env, path, NULL);
		rig_shard(&r[1], 1, &env, path, &r[0]);
		feed(&r[0], T0, 1504, idle ? 8 : 4);
		if (!idle)
			feed(&r[1], T0, 1504, 4);
		n[0] = n[1] = 0;
		for (ms = 0; ms <= 10; ms++) {
			unsigned int a = (order + ms) % 2;

			n[a] = shard_poll(&r[a], T0 + ms * MS, at[a], n[a]);
			n[!a] = shard_poll(&r[!a], T0 + ms * MS, at[!a],
					   n[!a]);
		}
		assert_int_equal(n[0] + n[1], 8);
		assert_int_equal(n[1], idle ? 0 : 4);
		/* one frame each opportunity, whoever took it */
		for (ms = 1; ms <= 8; ms++) {
			unsigned int hits = 0;

			for (i = 0; i < n[0]; i++)
				hits += at[0][i] == T0 + ms * MS;
			for (i = 0; i < n[1]; i++)
				hits += at[1][i] == T0 + ms * MS;
			assert_int_equal(hits, 1);
		}
		shp_rig_fini(&r[1]);
		shp_rig_fini(&r[0]);
	}
}

/*
 * Two threads, each a shard of one link under a trace of one opportunity
 * a millisecond, both always backlogged, for 150 ms of the real clock
 * (longer if one has not sent yet):
 * no opportunity carries two 1504-byte frames (the link's bytes are
 * spent once), every frame leaves at an opportunity of the link's one
 * schedule, and both shards send.
 */
static void
test_threads_spend_each_opportunity_once(void **state)
{
	const char *path = trace_file("1\n");
	static struct shp_rig_hammer h[2];
	static uint64_t all[2 * RTE_DIM(h[0].tts)];
	struct shp_link_shared link;
	struct shp_stage_env env = { .name = "trace" };
	struct shp_rig r[2];
	uint64_t start, last;
	unsigned int i, n;

	(void)state;
	memset(&link, 0, sizeof(link));
	env.link = &link;
	rig_shard(&r[0], 0, &env, path, NULL);
	rig_shard(&r[1], 1, &env, path, &r[0]);
	for (i = 0; i < 2; i++)
		h[i] = (struct shp_rig_hammer){ .r = &r[i], .len = 1504,
						.backlog = 64 };
	n = shp_rig_hammer_two(h, 150, &start, all);
	last = RTE_MAX(h[0].last, h[1].last);
	print_message("%u and %u frames over %u ms\n", h[0].n, h[1].n,
		      (unsigned int)((last - start) / MS));
	for (i = 1; i < n; i++) {
		/* one schedule: opportunities a millisecond apart */
		assert_true(all[i] > all[i - 1]);
		assert_int_equal((all[i] - all[0]) % MS, 0);
	}
	/* the schedule started with the first poll: no more opportunities
	 * than milliseconds since */
	assert_true(all[0] >= start && all[n - 1] <= last);
	assert_true(n <= (last - start) / MS + 1);
	shp_rig_fini(&r[1]);
	shp_rig_fini(&r[0]);
}

static int
setup(void **state)
{
	(void)state;
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/t.trace", dir);
	unlink(path);
	return rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_per_opportunity),
		cmocka_unit_test(test_sharing),
		cmocka_unit_test(test_small_packets),
		cmocka_unit_test(test_jumbo),
		cmocka_unit_test(test_arrivals_and_idle),
		cmocka_unit_test(test_burst_and_vector),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_format_and_off),
		cmocka_unit_test(test_shards_share_the_schedule),
		cmocka_unit_test(test_threads_spend_each_opportunity_once),
	};

	shp_rig_env("trace", 4096);
	return cmocka_run_group_tests(tests, setup, teardown);
}
