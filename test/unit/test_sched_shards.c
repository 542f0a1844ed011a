/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port's schedule on its shards (lib/conf/sched_walk.h, issue 56): two
 * shards' cursors on a virtual clock, one of them stalled for whole
 * cycles of a repeat, make one id per occurrence, and the bucket they
 * share (tbf_shared.h) refills once per occurrence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sched_walk.h"
#include "shp_qdisc.h"
#include "shp_rig.h"
#include "shp_tbf.h"
#include "tbf_shared.h"

static const uint16_t ports[] = { 0 };
static const struct shp_kind_env env = { .bands = 3, .ring_size = 1024 };

#define MS UINT64_C(1000000)
#define SEC (1000 * MS)
/* the cycles of ids kept ahead, as the program's target */
#define AHEAD 2

static void
parse(struct shp_sched *s, const char *text)
{
	FILE *f = fmemopen((void *)(uintptr_t)text, strlen(text), "r");
	char err[SHP_ERR_LEN];

	assert_non_null(f);
	if (shp_sched_parse(s, "sched.txt", f, ports, RTE_DIM(ports), &env,
			    err) < 0)
		fail_msg("%s", err);
	fclose(f);
}

/* A tbf toggling its rate every half second, forever */
static const char toggle[] =
	"0     set tbf 0 rate 10mbit burst 10kb limit 1mb\n"
	"500ms set tbf 0 rate 20mbit burst 10kb limit 1mb\n"
	"repeat 1s\n";

struct shard {
	struct shp_sched_walk w;
	struct shp_tbf_conf conf;      /* what its rate stage runs */
	uint64_t made;                 /* occurrences it made */
	uint64_t last;                 /* the last one (NO_OCC: none) */
};

/* what a shard's owner does at a pass at rel: walk, then make each
 * stage's newest due change with its occurrence's id, its rate stage
 * meeting the conf at once (a shared bucket: adopt). ids[n]: the id
 * occurrence n was made with (0: not yet, by anyone). */
static unsigned int
pass(const struct shp_sched_port *sp, struct shard *sh,
     struct shp_tbf_shared *bucket, const struct shp_tbf_conf *tbf,
     uint64_t *ids, uint64_t nb_ids, uint64_t t0, uint64_t rel)
{
	unsigned int sl, refills = 0;

	shp_sched_walk_run(sp, &sh->w, rel);
	for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
		uint64_t n = sh->w.due[sl], id;

		if (n == SHP_SCHED_NO_OCC)
			continue;
		assert_int_equal(shp_sched_ids_get(sp, n, &id), 1);
		assert_true(n < nb_ids);
		if (ids[n] == 0)
			ids[n] = id;
		/* one id for an occurrence, whichever shard makes it */
		assert_int_equal(ids[n], id);
		/* a newer change has a higher id */
		if (sh->last != SHP_SCHED_NO_OCC) {
			assert_true(n > sh->last);
			assert_true(id > ids[sh->last]);
		}
		sh->conf = tbf[n % sp->nb];
		sh->conf.hdr.id = id;
		refills += shp_tbf_shared_adopt(bucket, &sh->conf, t0 + rel);
		sh->made++;
		sh->last = n;
		sh->w.due[sl] = SHP_SCHED_NO_OCC;
	}
	return refills;
}

static struct shp_tbf_conf
tbf_of(const char *args)
{
	struct shp_tbf_conf c;
	char err[SHP_ERR_LEN];

	memset(&c, 0, sizeof(c));
	if (shp_tbf_parse(args, &c, err) != 0)
		fail_msg("%s: %s", args, err);
	return c;
}

/*
 * Shard 0 walks every millisecond for 12 s; shard 1 stalls from 2.3 s to
 * 7.6 s (five whole cycles, skipped by arithmetic when it resumes). The
 * main lcore draws ids at every millisecond (a control tick). Every
 * occurrence is made by shard 0 with the id shard 1 makes it with, if it
 * does; the shared bucket refills exactly once an occurrence (24), never
 * again for a shard late with one the other made.
 */
static void
test_stalled_shard_same_ids(void **state)
{
	const uint64_t t0 = UINT64_C(1700000000) * SEC;
	const uint64_t end = 12 * SEC;
	struct shp_tbf_shared *bucket;
	struct shp_tbf_conf tbf[2], init;
	struct shp_sched_port sp;
	struct shp_sched s;
	struct shard sh[2];
	uint64_t ids[64] = { 0 }, rel, n;
	unsigned int refills = 0, q;

	(void)state;
	parse(&s, toggle);
	assert_int_equal(shp_sched_port_init(&sp, &s, 0), 0);
	assert_int_equal(sp.nb, 2);
	assert_int_equal(shp_sched_ids_init(&sp, AHEAD + SHP_SCHED_IDS_BEHIND
					    + 2), 0);
	tbf[0] = tbf_of("rate 10mbit burst 10kb limit 1mb");
	tbf[1] = tbf_of("rate 20mbit burst 10kb limit 1mb");
	init = tbf_of("rate 5mbit burst 10kb limit 1mb");
	bucket = aligned_alloc(64, RTE_ALIGN_CEIL(sizeof(*bucket), 64));
	assert_non_null(bucket);
	memset(bucket, 0, sizeof(*bucket));
	shp_tbf_shared_bind(bucket, &init);
	assert_true(shp_tbf_shared_adopt(bucket, &init, t0));
	for (q = 0; q < 2; q++) {
		shp_sched_walk_init(&sh[q].w);
		sh[q].conf = init;
		sh[q].made = 0;
		sh[q].last = SHP_SCHED_NO_OCC;
	}
	for (rel = 0; rel < end; rel += MS) {
		shp_sched_ids_arm(&sp, rel, AHEAD);
		refills += pass(&sp, &sh[0], bucket, tbf, ids, RTE_DIM(ids),
				t0, rel);
		if (rel >= 2300 * MS && rel < 7600 * MS)
			continue;   /* shard 1's lcore lost its CPU */
		if (rel == 7600 * MS)
			/* it resumes on the link's latest change: 7.5 s's */
			assert_int_equal(sh[1].last, 2 * 2 + 0);
		refills += pass(&sp, &sh[1], bucket, tbf, ids, RTE_DIM(ids),
				t0, rel);
		if (rel == 7600 * MS) {
			assert_int_equal(sh[1].last, 7 * 2 + 1);
			/* 2.5 s to 7 s: ten changes it never made */
			assert_int_equal(sh[1].w.missed, 10);
		}
	}
	/* 12 cycles of two changes: each made by shard 0, refilled once */
	assert_int_equal(sh[0].made, 24);
	assert_int_equal(sh[0].w.missed, 0);
	for (n = 0; n < 24; n++)
		assert_int_not_equal(ids[n], 0);
	assert_int_equal(refills, 24);
	assert_int_equal(sh[1].made, 24 - 10);
	/* both end on the same conf: the link's last */
	assert_int_equal(sh[0].conf.hdr.id, ids[23]);
	assert_int_equal(sh[1].conf.hdr.id, ids[23]);
	assert_int_equal(sh[0].conf.rate, tbf[1].rate);
	assert_int_equal(sh[1].conf.rate, tbf[1].rate);
	free(bucket);
	shp_sched_port_free(&sp);
	shp_sched_free(&s);
}

/*
 * The same with the stalled shard the one that walks, the other stalled
 * at a cycle's very end, and a change made at the link's instant by both:
 * the instant is the link's (start + c x repeat + t), not a shard's own.
 */
static void
test_instant_is_the_links(void **state)
{
	struct shp_sched_port sp;
	struct shp_sched_walk a, b;
	struct shp_sched s;
	uint64_t id;

	(void)state;
	parse(&s, toggle);
	assert_int_equal(shp_sched_port_init(&sp, &s, 0), 0);
	assert_int_equal(shp_sched_ids_init(&sp, AHEAD + SHP_SCHED_IDS_BEHIND
					    + 2), 0);
	shp_sched_walk_init(&a);
	shp_sched_walk_init(&b);
	/* a walks 0..3.4999 s: its cursor is 3.5 s's occurrence */
	shp_sched_walk_run(&sp, &a, 3500 * MS - 1);
	assert_int_equal(shp_sched_walk_time(&sp, &a), 3500 * MS);
	assert_int_equal(a.due[SHP_SLOT_RATE], 3 * 2 + 0);
	/* b, stalled since the start, at the same reading: the same */
	shp_sched_walk_run(&sp, &b, 3500 * MS - 1);
	assert_int_equal(shp_sched_walk_time(&sp, &b), 3500 * MS);
	assert_int_equal(b.due[SHP_SLOT_RATE], 3 * 2 + 0);
	assert_int_equal(b.missed, 6);
	/* at the instant itself, both make 3.5 s's */
	a.due[SHP_SLOT_RATE] = b.due[SHP_SLOT_RATE] = SHP_SCHED_NO_OCC;
	shp_sched_walk_run(&sp, &a, 3500 * MS);
	shp_sched_walk_run(&sp, &b, 3500 * MS);
	assert_int_equal(a.due[SHP_SLOT_RATE], 3 * 2 + 1);
	assert_int_equal(b.due[SHP_SLOT_RATE], 3 * 2 + 1);
	/* ids: not drawn yet, then drawn; a window that moved on: gone */
	assert_int_equal(shp_sched_ids_get(&sp, 7, &id), 0);
	shp_sched_ids_arm(&sp, 3500 * MS, AHEAD);
	assert_int_equal(shp_sched_ids_get(&sp, 7, &id), 1);
	shp_sched_ids_arm(&sp, 9 * SEC, AHEAD);
	assert_int_equal(shp_sched_ids_get(&sp, 7, &id), -1);
	assert_int_equal(shp_sched_ids_get(&sp, 9 * 2, &id), 1);
	shp_sched_port_free(&sp);
	shp_sched_free(&s);
}

/*
 * A change the control plane makes between two of the schedule's: its id
 * (drawn now) is newer than the ids drawn ahead for the occurrences
 * after it, which are drawn again (shp_sched_ids_redraw), so that the
 * schedule's next change outranks it again; those within the margin
 * (a shard may be making one) keep theirs, and ids still increase with
 * the occurrences.
 */
static void
test_control_change_outranked(void **state)
{
	struct shp_sched_port sp;
	struct shp_sched s;
	uint64_t before[16], id, cli, n;

	(void)state;
	parse(&s, toggle);
	assert_int_equal(shp_sched_port_init(&sp, &s, 0), 0);
	assert_int_equal(shp_sched_ids_init(&sp, AHEAD + SHP_SCHED_IDS_BEHIND
					    + 2), 0);
	shp_sched_ids_arm(&sp, 2200 * MS, AHEAD);
	assert_int_equal(sp.lo, 0);
	assert_int_equal(sp.hi, 5 * 2);
	for (n = 0; n < sp.hi; n++)
		assert_int_equal(shp_sched_ids_get(&sp, n, &before[n]), 1);
	/* `set tbf 0 ...` typed at 2.4995 s: 2.5 s's is within the margin */
	cli = shp_conf_new_id();
	shp_sched_ids_redraw(&sp, 2499 * MS + 500000);
	assert_int_equal(sp.hi, 5 * 2);
	for (n = 0; n < sp.hi; n++) {
		assert_int_equal(shp_sched_ids_get(&sp, n, &id), 1);
		if (n <= 2 * 2 + 1) {
			assert_int_equal(id, before[n]);
			assert_true(id < cli);
		} else {
			assert_true(id > cli);
		}
		if (n > 0)
			assert_true(id > before[n - 1]);
		before[n] = id;
	}
	/* at 2.6 s: 3 s's and later again */
	cli = shp_conf_new_id();
	shp_sched_ids_redraw(&sp, 2600 * MS);
	for (n = 3 * 2; n < sp.hi; n++) {
		assert_int_equal(shp_sched_ids_get(&sp, n, &id), 1);
		assert_true(id > cli);
	}
	shp_sched_port_free(&sp);
	shp_sched_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stalled_shard_same_ids),
		cmocka_unit_test(test_instant_is_the_links),
		cmocka_unit_test(test_control_change_outranked),
	};

	shp_rig_env("sched_shards", 4096);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
