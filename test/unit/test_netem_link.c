/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem's slots on a link's shards (issue 24, lib/sched/netem): the slots
 * are the link's one sequence (shp_link_slot), whoever draws them. On a
 * virtual clock, two shards polled in either order send every packet at
 * the instant one netem sends it; on the real clock, two threads never
 * open two slots closer than the slot's least gap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "shp_kind.h"
#include "shp_link.h"
#include "shp_meta.h"
#include "shp_rig.h"

#define MS UINT64_C(1000000)
#define US UINT64_C(1000)
#define NPKT 96

/* netem PROFILE on port, a shard of the link env names (env NULL: a
 * port of one queue), its conf twinned with first's when given. */
static void
rig_netem(struct shp_rig *r, uint16_t port, const struct shp_stage_env *env,
	  const char *profile, const struct shp_rig *first)
{
	shp_rig_init(r, port);
	r->env = env;
	shp_rig_add(r, "netem", profile);
	if (first != NULL)
		shp_kind_find("netem")->twin(shp_rig_conf(r, "netem"),
					     shp_rig_conf(first, "netem"));
}

/* Arrival i: every 700 us and a bit, on shard i % 2 (or the one queue). */
static uint64_t
arrival(unsigned int i)
{
	return MS + i * 700 * US + (i * 7919 % 13) * 37 * US;
}

/* Everything r sends at t: at[seq] = its time_to_send (the first byte of
 * the frame is its number). */
static void
poll_at(struct shp_rig *r, uint64_t t, uint64_t *at)
{
	struct rte_mbuf *out[32];
	uint16_t k, i;

	do {
		k = shp_rig_dequeue_at(r, t, out, RTE_DIM(out));
		for (i = 0; i < k; i++) {
			uint8_t seq = *rte_pktmbuf_mtod(out[i], uint8_t *);

			assert_true(seq < NPKT && at[seq] == 0);
			at[seq] = shp_meta(out[i])->time_to_send;
			assert_true(at[seq] <= t);
		}
		rte_pktmbuf_free_bulk(out, k);
	} while (k > 0);
}

static void
feed_one(struct shp_rig *r, unsigned int i)
{
	struct rte_mbuf *m = shp_rig_pkt(100, (uint8_t)i, arrival(i));

	assert_int_equal(shp_rig_enqueue_at(r, arrival(i), &m, 1), 1);
}

/* Run the arrivals through rigs r[0..n), arrival i into r[i % n], every
 * rig polled at each rig's next time, the first polled rotating with
 * `order`; departures into at[]. */
static void
run(struct shp_rig *r, unsigned int n, unsigned int order, uint64_t *at)
{
	unsigned int i = 0, j, step = 0;

	memset(at, 0, NPKT * sizeof(at[0]));
	for (;;) {
		uint64_t t = UINT64_MAX;

		for (j = 0; j < n; j++) {
			t = RTE_MIN(t, shp_qdisc_next_time(r[j].root,
							   &r[j].ctx));
		}
		if (i < NPKT && arrival(i) <= t) {
			/* what is due at the arrival's instant goes first */
			for (j = 0; j < n && t == arrival(i); j++)
				poll_at(&r[(j + order + step) % n], t, at);
			feed_one(&r[i % n], i);
			i++;
			continue;
		}
		if (t == UINT64_MAX)
			break;
		for (j = 0; j < n; j++)
			poll_at(&r[(j + order + step) % n], t, at);
		step++;
	}
	for (i = 0; i < NPKT; i++)
		assert_true(at[i] != 0);
}

static void
slot_orders(const char *profile)
{
	uint64_t one[NPKT], two[NPKT];
	unsigned int order, i, same = 0;
	struct shp_rig q;

	rig_netem(&q, 0, NULL, profile, NULL);
	run(&q, 1, 0, one);
	shp_rig_fini(&q);
	for (i = 1; i < NPKT; i++)
		same += one[i] == one[i - 1];
	/* slots gather packets: some leave together */
	assert_true(same > 0);
	for (order = 0; order < 2; order++) {
		struct shp_link_shared link;
		struct shp_stage_env env[2];
		struct shp_rig r[2];

		memset(&link, 0, sizeof(link));
		for (i = 0; i < 2; i++)
			env[i] = (struct shp_stage_env){
				.socket = SOCKET_ID_ANY, .shard = (uint16_t)i,
				.link = &link };
		/* one port (its slot stream), two shards */
		rig_netem(&r[0], 0, &env[0], profile, NULL);
		rig_netem(&r[1], 0, &env[1], profile, &r[0]);
		run(r, 2, order, two);
		for (i = 0; i < NPKT; i++)
			assert_int_equal(two[i], one[i]);
		shp_rig_fini(&r[1]);
		shp_rig_fini(&r[0]);
	}
}

static void
test_slot_range_both_orders(void **state)
{
	(void)state;
	slot_orders("delay 2ms slot 1ms 3ms");
}

static void
test_slot_distribution_both_orders(void **state)
{
	(void)state;
	slot_orders("delay 2ms slot distribution normal 2ms 500us");
}

/* ------------------------------------------- two threads, real clock */

/*
 * Two threads, each a shard under `slot 1ms 2ms` (no delay), always with
 * packets due, for 150 ms (longer if one has not sent yet): every slot is drawn at least 1 ms after the
 * one before it (from it, or from a due time after it), so two distinct
 * departure instants of the link are never closer than 1 ms; two
 * sequences of their own would interleave closer. Both shards send.
 */
static void
test_threads_one_sequence(void **state)
{
	static struct shp_rig_hammer h[2];
	static uint64_t all[2 * RTE_DIM(h[0].tts)];
	struct shp_link_shared link;
	struct shp_stage_env env[2];
	struct shp_rig r[2];
	unsigned int i, n, slots = 1;
	uint64_t start;

	(void)state;
	memset(&link, 0, sizeof(link));
	for (i = 0; i < 2; i++)
		env[i] = (struct shp_stage_env){ .socket = SOCKET_ID_ANY,
						 .shard = (uint16_t)i,
						 .link = &link };
	rig_netem(&r[0], 0, &env[0], "slot 1ms 2ms", NULL);
	rig_netem(&r[1], 1, &env[1], "slot 1ms 2ms", &r[0]);
	for (i = 0; i < 2; i++)
		h[i] = (struct shp_rig_hammer){ .r = &r[i], .len = 100,
						.backlog = 16 };
	n = shp_rig_hammer_two(h, 150, &start, all);
	for (i = 1; i < n; i++) {
		if (all[i] == all[i - 1])
			continue;
		slots++;
		assert_true(all[i] - all[i - 1] >= MS);
	}
	print_message("%u and %u packets in %u slots\n", h[0].n, h[1].n,
		      slots);
	shp_rig_fini(&r[1]);
	shp_rig_fini(&r[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot_range_both_orders),
		cmocka_unit_test(test_slot_distribution_both_orders),
		cmocka_unit_test(test_threads_one_sequence),
	};

	shp_rig_env("netem_link", 8192);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
