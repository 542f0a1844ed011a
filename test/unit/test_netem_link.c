/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem's slots on a link's shards (issue 24, lib/sched/netem): the slots
 * are the link's one sequence (shp_link_slot), whoever draws them. On a
 * virtual clock, two shards polled in either order send every packet at
 * the instant one netem sends it; on the real clock, two threads never
 * open two slots closer than the slot's least gap. With budgets, the
 * link's slots carry what one netem's would, whichever shard's packets.
 * netem's limit and the pool's share are the link's (issue 56).
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
		shp_conf_twin(shp_rig_conf(r, "netem"),
			      shp_rig_conf(first, "netem"));
}

/* Two shards of the link `link` (zeroed here). */
static void
link_envs(struct shp_link_shared *link, struct shp_stage_env env[2])
{
	unsigned int i;

	memset(link, 0, sizeof(*link));
	for (i = 0; i < 2; i++)
		env[i] = (struct shp_stage_env){ .socket = SOCKET_ID_ANY,
						 .shard = (uint16_t)i,
						 .link = link };
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

		/* a next time that sends nothing would come back forever */
		assert_true(step < 100 * NPKT);

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

/* profile on one queue (queues 1) or on two shards of one port's link,
 * polled first in the order `order`: departures into at[]. */
static void
run_profile(const char *profile, unsigned int queues, unsigned int order,
	    uint64_t *at)
{
	struct shp_link_shared link;
	struct shp_stage_env env[2];
	struct shp_rig r[2];

	if (queues == 1) {
		rig_netem(&r[0], 0, NULL, profile, NULL);
		run(r, 1, 0, at);
		shp_rig_fini(&r[0]);
		return;
	}
	link_envs(&link, env);
	/* one port (its slot stream), two shards */
	rig_netem(&r[0], 0, &env[0], profile, NULL);
	rig_netem(&r[1], 0, &env[1], profile, &r[0]);
	run(r, 2, order, at);
	shp_rig_fini(&r[1]);
	shp_rig_fini(&r[0]);
}

static void
slot_orders(const char *profile)
{
	uint64_t one[NPKT], two[NPKT];
	unsigned int order, i, same = 0;

	run_profile(profile, 1, 0, one);
	for (i = 1; i < NPKT; i++)
		same += one[i] == one[i - 1];
	/* slots gather packets: some leave together */
	assert_true(same > 0);
	for (order = 0; order < 2; order++) {
		run_profile(profile, 2, order, two);
		for (i = 0; i < NPKT; i++)
			assert_int_equal(two[i], one[i]);
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

/* The instants at[] holds, sorted, into s[]; the most that share one. */
static unsigned int
instants(const uint64_t *at, uint64_t *s)
{
	unsigned int i, run = 1, most = 1;

	memcpy(s, at, NPKT * sizeof(s[0]));
	qsort(s, NPKT, sizeof(s[0]), shp_rig_cmp_u64);
	for (i = 1; i < NPKT; i++) {
		run = s[i] == s[i - 1] ? run + 1 : 1;
		most = RTE_MAX(most, run);
	}
	return most;
}

/*
 * Slots with budgets, per_slot packets a slot at most, the link saturated
 * (a slot every 2 ms on average, an arrival every 0.7 ms): every slot is
 * spent, so the next is drawn from it and the link's slots are those of
 * one queue, each carrying per_slot packets of either shard; budgets of a
 * shard's own would let 2 x per_slot leave at an instant.
 */
static void
budget_orders(const char *profile, unsigned int per_slot)
{
	uint64_t one[NPKT], two[NPKT], s1[NPKT], s2[NPKT];
	unsigned int order, i;

	run_profile(profile, 1, 0, one);
	assert_int_equal(instants(one, s1), per_slot);
	for (order = 0; order < 2; order++) {
		run_profile(profile, 2, order, two);
		assert_int_equal(instants(two, s2), per_slot);
		for (i = 0; i < NPKT; i++) {
			assert_int_equal(s2[i], s1[i]);
			/* a shard's own packets in their order */
			if (i >= 2)
				assert_true(two[i] >= two[i - 2]);
		}
	}
}

static void
test_budget_packets_both_orders(void **state)
{
	(void)state;
	budget_orders("delay 2ms slot 1ms 3ms packets 1", 1);
}

static void
test_budget_bytes_both_orders(void **state)
{
	(void)state;
	/* 100-byte frames: a second goes with 50 bytes left, not a third */
	budget_orders("delay 2ms slot 1ms 3ms packets 5 bytes 150", 2);
}

/* ------------------------------------------- two threads, real clock */

/* profile on two threads, shards of one link (ports 0 and port1 their
 * ports: the slot streams they draw from), always with packets due, for
 * 150 ms at least: the departures' times into all[], sorted; how many. */
static unsigned int
hammer(const char *profile, uint16_t port1, struct shp_rig_hammer h[2],
       uint64_t *all)
{
	struct shp_link_shared link;
	struct shp_stage_env env[2];
	struct shp_rig r[2];
	unsigned int i, n;
	uint64_t start;

	link_envs(&link, env);
	rig_netem(&r[0], 0, &env[0], profile, NULL);
	rig_netem(&r[1], port1, &env[1], profile, &r[0]);
	for (i = 0; i < 2; i++)
		h[i] = (struct shp_rig_hammer){ .r = &r[i], .len = 100,
						.backlog = 16 };
	n = shp_rig_hammer_two(h, 150, &start, all);
	shp_rig_fini(&r[1]);
	shp_rig_fini(&r[0]);
	return n;
}

/*
 * Two threads, each a shard under `slot 1ms 2ms` (no delay), always with
 * packets due: every slot is drawn at least 1 ms after the one before it
 * (from it, or from a due time after it), so two distinct departure
 * instants of the link are never closer than 1 ms; two sequences of
 * their own would interleave closer. Both shards send.
 */
static void
test_threads_one_sequence(void **state)
{
	static struct shp_rig_hammer h[2];
	static uint64_t all[2 * RTE_DIM(h[0].tts)];
	unsigned int i, n, slots = 1;

	(void)state;
	n = hammer("slot 1ms 2ms", 1, h, all);
	for (i = 1; i < n; i++) {
		if (all[i] == all[i - 1])
			continue;
		slots++;
		assert_true(all[i] - all[i - 1] >= MS);
	}
	print_message("%u and %u packets in %u slots\n", h[0].n, h[1].n,
		      slots);
}

/*
 * The same with a budget, `slot 1ms 2ms packets 3`, both threads always
 * with packets due: no more than 3 packets of the two leave at one slot
 * (3 a shard would let 6), slots at least 1 ms apart, both send.
 */
static void
test_threads_one_budget(void **state)
{
	static struct shp_rig_hammer h[2];
	static uint64_t all[2 * RTE_DIM(h[0].tts)];
	unsigned int i, n, run = 1, full = 0, slots = 1;

	(void)state;
	n = hammer("slot 1ms 2ms packets 3", 0, h, all);
	for (i = 1; i <= n; i++) {
		if (i < n && all[i] == all[i - 1]) {
			run++;
			assert_true(run <= 3);
			continue;
		}
		full += run == 3;
		run = 1;
		if (i < n) {
			slots++;
			assert_true(all[i] - all[i - 1] >= MS);
		}
	}
	/* backlogged: slots are spent */
	assert_true(full > 0);
	print_message("%u and %u packets in %u slots, %u full\n", h[0].n,
		      h[1].n, slots, full);
}

/*
 * netem's limit and the pool's share on a link's shards (issue 56): the
 * link's, not a shard's. Each shard publishes what it holds at the end of
 * a call and reads the others' once a poll (ctx->now).
 */
static struct {
	uint32_t v;
} __rte_cache_aligned share_held[2];

/* Two shards of link, each counting its held in share_held, the port's
 * share cap (0: none). */
static void
share_envs(struct shp_link_shared *link, struct shp_stage_env env[2],
	   uint32_t cap)
{
	unsigned int i;

	link_envs(link, env);
	memset(share_held, 0, sizeof(share_held));
	for (i = 0; i < 2; i++) {
		env[i].nb_shards = 2;
		if (cap == 0)
			continue;
		env[i].held = &share_held[i].v;
		env[i].hold_cap = cap;
		env[i].link_held = &share_held[0].v;
		env[i].held_stride = sizeof(share_held[0]) /
				     sizeof(share_held[0].v);
	}
}

/* n frames into r at t, one a call: how many it took. */
static unsigned int
offer_n(struct shp_rig *r, uint64_t t, unsigned int n)
{
	unsigned int i, ok = 0;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = shp_rig_pkt(100, (uint8_t)i, t);

		ok += shp_rig_enqueue_at(r, t, &m, 1);
	}
	return ok;
}

/* `limit 60`: the link holds 60, wherever they arrived. */
static void
test_limit_is_the_links(void **state)
{
	static struct shp_link_shared link;
	struct shp_stage_env env[2];
	struct shp_rig r[2];

	(void)state;
	share_envs(&link, env, 0);
	rig_netem(&r[0], 0, &env[0], "delay 1s limit 60", NULL);
	rig_netem(&r[1], 0, &env[1], "delay 1s limit 60", &r[0]);
	assert_int_equal(offer_n(&r[0], MS, 40), 40);
	/* the other shard, a poll later, has the 20 left */
	assert_int_equal(offer_n(&r[1], 2 * MS, 40), 20);
	assert_int_equal(offer_n(&r[0], 3 * MS, 5), 0);
	assert_int_equal(shp_rig_drain(&r[0]), 40);
	assert_int_equal(shp_rig_drain(&r[1]), 20);
	/* empty again: a shard alone takes the link's 60 */
	assert_int_equal(offer_n(&r[1], 2000 * MS, 70), 60);
	assert_int_equal(shp_rig_drain(&r[1]), 60);
	shp_rig_fini(&r[0]);
	shp_rig_fini(&r[1]);
}

/* The port's share of 100 mbufs: a shard alone holds all of it (not its
 * half), the other finds it taken, and has it back once it left. */
static void
test_share_is_the_links(void **state)
{
	static struct shp_link_shared link;
	struct shp_stage_env env[2];
	struct shp_rig r[2];

	(void)state;
	share_envs(&link, env, 100);
	rig_netem(&r[0], 0, &env[0], "delay 1s limit 1000 store off", NULL);
	rig_netem(&r[1], 0, &env[1], "delay 1s limit 1000 store off", &r[0]);
	assert_int_equal(offer_n(&r[0], MS, 150), 100);
	assert_int_equal(share_held[0].v, 100);
	assert_int_equal(offer_n(&r[1], 2 * MS, 10), 0);
	assert_int_equal(share_held[1].v, 0);
	assert_int_equal(shp_rig_drain(&r[0]), 100);
	assert_int_equal(share_held[0].v, 0);
	assert_int_equal(offer_n(&r[1], 2000 * MS, 10), 10);
	assert_int_equal(share_held[1].v, 10);
	assert_int_equal(shp_rig_drain(&r[1]), 10);
	shp_rig_fini(&r[0]);
	shp_rig_fini(&r[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot_range_both_orders),
		cmocka_unit_test(test_slot_distribution_both_orders),
		cmocka_unit_test(test_threads_one_sequence),
		cmocka_unit_test(test_budget_packets_both_orders),
		cmocka_unit_test(test_budget_bytes_both_orders),
		cmocka_unit_test(test_threads_one_budget),
		cmocka_unit_test(test_limit_is_the_links),
		cmocka_unit_test(test_share_is_the_links),
	};

	shp_rig_env("netem_link", 8192);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
