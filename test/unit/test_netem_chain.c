/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem's loss and the other processes that count originals on a link's
 * shards (issue 56): one process for the link, frame k of the link being
 * the k-th original its shards claim. On a virtual clock, the link's
 * frames go to two or four shards in bursts of random sizes and random
 * shards, in many orders, with the shards publishing their chains or
 * not (a claim that finds the chains' record behind walks them over the
 * others' frames, as when claims race): every frame meets the fate (lost,
 * duplicated, corrupted, sent at once) it meets on one queue. Two
 * threads claiming at once lose exactly the deterministic share.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "shp_kind.h"
#include "shp_link.h"
#include "shp_meta.h"
#include "shp_netem.h"
#include "shp_rig.h"

#define US UINT64_C(1000)
#define NF 600          /* frames of the link */
#define LEN 64
#define MAXQ 4

/* a frame's fate: bit 0 its original left, 1 a copy left, 2 (3) the
 * original (copy) was corrupted, 4 (5) it was sent at once */
static uint8_t fate[NF];

/* frame i's byte b */
static inline uint8_t
fill(unsigned int i, unsigned int b)
{
	return (uint8_t)(i * 31 + b * 7 + 1);
}

static struct rte_mbuf *
frame(unsigned int i, uint64_t t)
{
	struct rte_mbuf *m = shp_rig_pkt(LEN, 0, t);
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	unsigned int b;

	for (b = 0; b < LEN; b++)
		d[b] = fill(i, b);
	/* the number three times: a flipped bit leaves two */
	for (b = 0; b < 3; b++) {
		d[2 * b] = (uint8_t)i;
		d[2 * b + 1] = (uint8_t)(i >> 8);
	}
	return m;
}

static void
on_pkt(struct shp_rig *r, struct rte_mbuf *m)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct shp_meta *meta = shp_meta(m);
	unsigned int v[3], b, i, copy = (meta->flags & SHP_META_F_DUP) != 0;
	bool bad = false;

	(void)r;
	for (b = 0; b < 3; b++)
		v[b] = d[2 * b] | (unsigned int)d[2 * b + 1] << 8;
	i = v[0] == v[1] || v[0] == v[2] ? v[0] : v[1];
	assert_true(i < NF);
	for (b = 0; b < 3; b++)
		bad |= v[b] != i;
	for (b = 6; b < LEN; b++)
		bad |= d[b] != fill(i, b);
	assert_false(fate[i] & (1u << copy));
	fate[i] |= (uint8_t)(1u << copy);
	if (bad)
		fate[i] |= (uint8_t)(4u << copy);
	if (meta->time_to_send == meta->rx_ns)
		fate[i] |= (uint8_t)(16u << copy);
}

/* The burst sizes and shards of one order: from seed (0: one queue,
 * bursts of 8). */
struct order {
	uint16_t size[NF];
	uint8_t shard[NF];
	bool publish[NF];
	unsigned int nb;
};

static void
order_make(struct order *o, uint64_t seed, unsigned int queues)
{
	unsigned int left = NF;
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	o->nb = 0;
	while (left > 0) {
		uint16_t n = seed == 0 ? 8 :
			     (uint16_t)(1 + shp_rig_xorshift(&s) % 12);

		if (n > left)
			n = (uint16_t)left;
		o->size[o->nb] = n;
		o->shard[o->nb] = (uint8_t)(shp_rig_xorshift(&s) % queues);
		/* now and then a run of claims that publish nothing */
		o->publish[o->nb] = seed == 0 ||
				    shp_rig_xorshift(&s) % 4 != 0;
		o->nb++;
		left -= n;
	}
}

/* profile over `queues` shards of one link (1: a port of one queue)
 * in order o: the frames' fates into fate[] */
static void
run_order(const char *profile, unsigned int queues, const struct order *o)
{
	struct shp_link_shared link;
	struct shp_stage_env env[MAXQ];
	struct shp_rig r[MAXQ];
	unsigned int q, b, i = 0;
	uint64_t t = 1000 * US;

	memset(fate, 0, sizeof(fate));
	memset(&link, 0, sizeof(link));
	for (q = 0; q < queues; q++) {
		env[q] = (struct shp_stage_env){ .socket = SOCKET_ID_ANY,
						 .shard = (uint16_t)q,
						 .link = &link };
		shp_rig_init(&r[q], 0);
		r[q].env = queues > 1 ? &env[q] : NULL;
		shp_rig_add(&r[q], "netem", profile);
		if (q > 0)
			shp_conf_twin(shp_rig_conf(&r[q], "netem"),
				      shp_rig_conf(&r[0], "netem"));
		r[q].on_pkt = on_pkt;
	}
	for (b = 0; b < o->nb; b++) {
		struct rte_mbuf *m[16];
		unsigned int k;

		for (k = 0; k < o->size[b]; k++)
			m[k] = frame(i + k, t);
		q = queues > 1 ? o->shard[b] : 0;
		shp_netem_link_publish = o->publish[b];
		shp_rig_enqueue_at(&r[q], t, m, o->size[b]);
		i += o->size[b];
		t += 10 * US;
	}
	shp_netem_link_publish = true;
	for (q = 0; q < queues; q++) {
		shp_rig_drain(&r[q]);
		shp_rig_fini(&r[q]);
	}
}

/* Every order of the profile's frames over 2 and 4 shards against one
 * queue: the same fate for every frame. */
static void
orders(const char *profile)
{
	static uint8_t one[NF];
	static struct order o;
	unsigned int queues, seed, i, lost = 0, other = 0;

	order_make(&o, 0, 1);
	run_order(profile, 1, &o);
	memcpy(one, fate, sizeof(one));
	for (i = 0; i < NF; i++) {
		lost += !(one[i] & 1);
		other += (one[i] & ~1u) != 0;
	}
	/* the profile decides something */
	assert_true(lost + other > 0);
	for (queues = 2; queues <= MAXQ; queues += 2)
		for (seed = 1; seed <= 40; seed++) {
			order_make(&o, seed, queues);
			run_order(profile, queues, &o);
			for (i = 0; i < NF; i++)
				if (fate[i] != one[i])
					fail_msg("%s, %u shards, order %u: "
						 "frame %u fate %#x, one "
						 "queue %#x", profile, queues,
						 seed, i, fate[i], one[i]);
		}
}

static void
test_burst(void **state)
{
	(void)state;
	orders("delay 1ms loss burst 3 10");
}

static void
test_pattern(void **state)
{
	(void)state;
	orders("delay 1ms loss pattern 1 4");
}

static void
test_sequence(void **state)
{
	(void)state;
	orders("delay 1ms loss sequence 0010011");
}

static void
test_gemodel(void **state)
{
	(void)state;
	orders("delay 1ms loss gemodel 5% 25%");
}

static void
test_state(void **state)
{
	(void)state;
	orders("delay 1ms loss state 5% 30% 20% 10% 2%");
}

static void
test_random_correlated(void **state)
{
	(void)state;
	orders("delay 1ms loss 10% 50%");
}

static void
test_duplicate_corrupt_correlated(void **state)
{
	(void)state;
	orders("delay 1ms duplicate 15% 60% corrupt 15% 60%");
}

static void
test_reorder_gap(void **state)
{
	(void)state;
	orders("delay 1ms reorder 30% 50% gap 3");
}

static void
test_all_at_once(void **state)
{
	(void)state;
	orders("delay 1ms loss gemodel 8% 30% duplicate 10% 40% "
	       "corrupt 10% 40% reorder 25% 50% gap 4");
}

/* ------------------------------------------------ two threads at once */

#define TB 4000         /* bursts a thread */

struct hammer {
	struct shp_rig r;
	pthread_t th;
	unsigned int bursts;
	uint64_t in;
};

static void *
hammer_run(void *arg)
{
	struct hammer *h = arg;
	struct rte_mbuf *m[8];
	unsigned int b, k;

	for (b = 0; b < h->bursts; b++) {
		uint64_t t = (b + 1) * US;

		for (k = 0; k < 5; k++)
			m[k] = shp_rig_pkt(LEN, 0, t);
		h->in += 5;
		h->r.ctx.now = t;
		shp_qdisc_enqueue(h->r.root, m, 5, &h->r.ctx);
		/* what is due leaves: the line stays short */
		h->r.ctx.now = t + 2 * US;
		shp_rig_poll(&h->r);
	}
	return NULL;
}

/* Two shards enqueue at once on real threads: the link loses exactly 3
 * of every 10 of its originals (2 x TB bursts of 5: a multiple of 10),
 * where a count a shard would lose 3 short (TB + 1 and TB - 1 bursts:
 * each shard's last 5 frames would all pass). */
static void
test_threads_exact_share(void **state)
{
	static struct hammer h[2];
	struct shp_link_shared link;
	struct shp_stage_env env[2];
	uint64_t in = 0, out = 0;
	unsigned int q;

	(void)state;
	memset(&link, 0, sizeof(link));
	for (q = 0; q < 2; q++) {
		env[q] = (struct shp_stage_env){ .socket = SOCKET_ID_ANY,
						 .shard = (uint16_t)q,
						 .link = &link };
		h[q].in = 0;
		h[q].bursts = q == 0 ? TB + 1 : TB - 1;
		shp_rig_init(&h[q].r, 0);
		h[q].r.env = &env[q];
		shp_rig_add(&h[q].r, "netem", "delay 1us loss burst 3 10");
		if (q > 0)
			shp_conf_twin(shp_rig_conf(&h[q].r, "netem"),
				      shp_rig_conf(&h[0].r, "netem"));
	}
	for (q = 0; q < 2; q++)
		assert_int_equal(pthread_create(&h[q].th, NULL, hammer_run,
						&h[q]), 0);
	for (q = 0; q < 2; q++)
		assert_int_equal(pthread_join(h[q].th, NULL), 0);
	for (q = 0; q < 2; q++) {
		shp_rig_drain(&h[q].r);
		in += h[q].in;
		out += h[q].r.out;
		shp_rig_fini(&h[q].r);
	}
	assert_int_equal(in, 2 * TB * 5);
	assert_int_equal(out, in / 10 * 7);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst),
		cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_sequence),
		cmocka_unit_test(test_gemodel),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_random_correlated),
		cmocka_unit_test(test_duplicate_corrupt_correlated),
		cmocka_unit_test(test_reorder_gap),
		cmocka_unit_test(test_all_at_once),
		cmocka_unit_test(test_threads_exact_share),
	};

	shp_rig_env("netem_chain", 8192);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
