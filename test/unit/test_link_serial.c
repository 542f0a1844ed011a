/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A link's serialisation shared by its shards (lib/sched/link_serial.h):
 * two shards claiming bursts in every order give the send times one
 * sequence of frames gives, in the order the claims were made; under two
 * threads no claim is lost (the link's clock ends at the sum of every
 * frame's time) and no two frames overlap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_common.h>

#include "link_serial.h"
#include "shp_rig.h"

static uint64_t
rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 33;
}

/*
 * Two shards, each with bursts of frames (earliest times growing, with
 * the gaps of a link below and above its load), claim at the same
 * polls in every order (2^10 orders of 10 polls): each claim's send times
 * are those of one netem rate chain (max(base, the frame before) + cost)
 * that took the bursts in that order, every send time is at least its
 * frame's base plus its cost, and the clock ends at the last one.
 */
struct burst {
	uint16_t n;
	uint64_t base[8], cost[8];
};

static void
test_two_shards_every_order(void **state)
{
	static struct burst b[2][10];
	unsigned int order, claims = 0;

	(void)state;
	for (order = 0; order < 1024; order++) {
		struct shp_link_serial ls;
		uint64_t x = 3 + order, ref_last = 0, t = 1000000;
		unsigned int p, s;

		/* each shard's bursts, poll by poll: some polls find the
		 * link idle, some busy */
		for (p = 0; p < 10; p++) {
			for (s = 0; s < 2; s++) {
				struct burst *u = &b[s][p];
				uint16_t i;

				u->n = (uint16_t)(1 + rnd(&x) % 8);
				for (i = 0; i < u->n; i++) {
					u->base[i] = t + rnd(&x) % 20000;
					u->cost[i] = 1000 + rnd(&x) % 5000;
				}
			}
			t += (rnd(&x) & 1) ? 3000 : 60000;
		}
		memset(&ls, 0, sizeof(ls));
		for (p = 0; p < 10; p++) {
			for (s = 0; s < 2; s++) {
				/* the order's bit p: which shard claims first */
				const struct burst *u =
					&b[((order >> p) & 1) ^ s][p];
				uint64_t tts[8];
				uint16_t i;

				shp_link_serial_claim(&ls, u->base, u->cost,
						      u->n, tts);
				claims++;
				for (i = 0; i < u->n; i++) {
					ref_last = RTE_MAX(u->base[i],
							   ref_last) +
						   u->cost[i];
					assert_true(tts[i] == ref_last);
					assert_true(tts[i] >= u->base[i] +
							      u->cost[i]);
				}
			}
		}
		assert_true(ls.busy == ref_last);
		assert_true(ls.claims == 20 && ls.retries == 0);
	}
	assert_int_equal(claims, 1024 * 20);
}

/* A claim that reaches never stays never (no wrap past UINT64_MAX). */
static void
test_saturates(void **state)
{
	struct shp_link_serial ls;
	uint64_t base[2] = { UINT64_MAX - 10, 5 }, cost[2] = { 100, 100 };
	uint64_t tts[2];

	(void)state;
	memset(&ls, 0, sizeof(ls));
	shp_link_serial_claim(&ls, base, cost, 2, tts);
	assert_true(tts[0] == UINT64_MAX && tts[1] == UINT64_MAX);
	assert_true(ls.busy == UINT64_MAX);
}

struct hammer {
	struct shp_link_serial *ls;
	unsigned int bursts;
	uint64_t *first, *last;   /* each burst's first and last send time */
};

static void *
hammer_run(void *arg)
{
	struct hammer *h = arg;
	uint64_t base[32], cost[32], tts[32];
	unsigned int b, i;

	for (i = 0; i < 32; i++) {
		base[i] = 0;      /* always behind the link: back to back */
		cost[i] = 7;
	}
	for (b = 0; b < h->bursts; b++) {
		shp_link_serial_claim(h->ls, base, cost, 32, tts);
		h->first[b] = tts[0];
		h->last[b] = tts[31];
	}
	return NULL;
}

/*
 * Two threads claim bursts of 32 back-to-back frames as fast as they
 * can: the link's clock ends at exactly every frame's time summed (no
 * claim lost or counted twice), and the bursts' spans, sorted, never
 * overlap (each burst a stretch of the link of its own).
 */
static void
test_threads_lose_nothing(void **state)
{
	const unsigned int nb = 200000;
	struct shp_link_serial ls;
	struct hammer h[2];
	pthread_t th[2];
	uint64_t *span = malloc(sizeof(uint64_t) * 2 * nb * 2);
	unsigned int i;

	(void)state;
	assert_non_null(span);
	memset(&ls, 0, sizeof(ls));
	for (i = 0; i < 2; i++) {
		h[i] = (struct hammer){ .ls = &ls, .bursts = nb,
			.first = malloc(sizeof(uint64_t) * nb),
			.last = malloc(sizeof(uint64_t) * nb) };
		assert_non_null(h[i].first);
		assert_non_null(h[i].last);
		assert_int_equal(pthread_create(&th[i], NULL, hammer_run,
						&h[i]), 0);
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	print_message("claims %" PRIu64 ", retries %" PRIu64 "\n",
		      ls.claims, ls.retries);
	assert_true(ls.busy == 2ull * nb * 32 * 7);
	assert_true(ls.claims == 2ull * nb);
	/* spans as (first - cost, last): sorted by start, each ends
	 * before the next starts */
	for (i = 0; i < 2 * nb; i++) {
		const struct hammer *hh = &h[i / nb];

		span[2 * i] = hh->first[i % nb] - 7;
		span[2 * i + 1] = hh->last[i % nb];
	}
	qsort(span, 2 * nb, 2 * sizeof(uint64_t), shp_rig_cmp_u64);
	for (i = 1; i < 2 * nb; i++)
		assert_true(span[2 * i] >= span[2 * i - 1]);
	for (i = 0; i < 2; i++) {
		free(h[i].first);
		free(h[i].last);
	}
	free(span);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_shards_every_order),
		cmocka_unit_test(test_saturates),
		cmocka_unit_test(test_threads_lose_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
