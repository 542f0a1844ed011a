/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One token bucket shared by the shards of a link (lib/sched/tbf_shared.h)
 * on a virtual clock: against the tbf stage's own departures, against a
 * single bucket that sees the same claims in every order two shards can
 * make them, at the link's rate for any split of the load, and under two
 * threads that claim at once; and the tbf stage run on it (a chain whose
 * env names the link's bucket): one shard as the private stage, two at
 * the link's rate, on a clock of epoch time. The policer on the link's
 * bucket: as one policer in every order two shards judge, and never
 * over the rate under two threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "shp_rig.h"
#include "shp_bucket.h"
#include "shp_kind.h"
#include "shp_police.h"
#include "shp_tbf.h"
#include "shp_link.h"

static struct shp_tbf_conf
conf_of(const char *args)
{
	struct shp_tbf_conf c;
	char err[128];

	memset(&c, 0, sizeof(c));
	if (shp_tbf_parse(args, &c, err) != 0)
		fail_msg("%s: %s", args, err);
	return c;
}

/* A single bucket in Linux tbf's own form (tokens and a checkpoint), as
 * an independent reference: how many of wire[0..n) pass at now. */
struct ref_bucket {
	int64_t tokens, ptokens;
	uint64_t t_c;
};

static void
ref_init(struct ref_bucket *b, const struct shp_tbf_conf *c, uint64_t now)
{
	b->tokens = c->buffer_t;
	b->ptokens = c->mtu_t;
	b->t_c = now;
}

static uint16_t
ref_claim(struct ref_bucket *b, const struct shp_tbf_conf *c,
	  const uint32_t *wire, uint16_t n, uint64_t now)
{
	int64_t el = (int64_t)((now - b->t_c) << SHP_TBF_SHIFT);
	int64_t toks = RTE_MIN(c->buffer_t, b->tokens + el);
	int64_t ptoks = c->peakrate ? RTE_MIN(c->mtu_t, b->ptokens + el) : 0;
	uint16_t k;

	for (k = 0; k < n; k++) {
		int64_t cost = shp_tbf_ticks(c->rate_mult, wire[k]);
		int64_t pcost = c->peakrate ?
				shp_tbf_ticks(c->peak_mult, wire[k]) : 0;

		if (toks - cost < 0 || ptoks - pcost < 0)
			break;
		toks -= cost;
		ptoks -= pcost;
	}
	b->tokens = toks;
	b->ptokens = ptoks;
	b->t_c = now;
	return k;
}

static uint32_t
rnd_len(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	/* mostly small frames, some full ones */
	return (*x >> 33) % 4 == 0 ? 1514 : 60 + (uint32_t)((*x >> 40) % 400);
}

/*
 * One shard alone decides as the tbf stage does: the same frames queued
 * behind the stage and offered to the shared bucket, polled at the same
 * instants, leave in the same numbers at every poll (with a peak rate,
 * and with overhead, which shp_tbf_wire_len applies).
 */
static void
test_one_shard_as_tbf(void **state)
{
	static const char *const confs[] = {
		"rate 10mbit burst 10kb limit 10mb",
		"rate 10mbit burst 20kb limit 10mb peakrate 40mbit mtu 1600",
		"rate 100mbit burst 3000 limit 10mb overhead 24 mpu 84",
	};
	unsigned int ci;

	(void)state;
	for (ci = 0; ci < RTE_DIM(confs); ci++) {
		struct shp_rig r;
		struct shp_tbf_conf c = conf_of(confs[ci]);
		struct shp_tbf_shared sh;
		static uint32_t fifo[20000];
		unsigned int head = 0, tail = 0, polls = 0;
		uint64_t x = 7 + ci, t = 1000000000, sent = 0;

		{
			char spec[128];

			snprintf(spec, sizeof(spec), "tbf %s", confs[ci]);
			shp_rig_chain(&r, "fifo", spec);
		}
		shp_tbf_shared_init(&sh, &c, t);
		/* the stage starts its bucket full at its first packet */
		for (polls = 0; polls < 10000; polls++) {
			struct rte_mbuf *in[4], *out[64];
			uint16_t i, k, got;

			for (i = 0; i < 4 && tail - head < 200 &&
				    (polls / 700) % 2 == 0; i++) {
				uint32_t len = rnd_len(&x);

				in[i] = shp_rig_pkt((uint16_t)len, 0, t);
				fifo[tail++] = (uint32_t)shp_tbf_wire_len(&c,
									  len);
			}
			shp_rig_enqueue_at(&r, t, in, i);
			got = shp_rig_dequeue_at(&r, t, out, 64);
			rte_pktmbuf_free_bulk(out, got);
			k = 0;
			while (head < tail) {
				uint64_t next;
				uint16_t n = RTE_MIN(tail - head, 64u - k);
				uint16_t m = shp_tbf_shared_claim(&sh, &c,
								  fifo + head,
								  n, t, &next);

				head += m;
				k += m;
				if (m < n || k == 64)
					break;
			}
			assert_int_equal(k, got);
			sent += got;
			t += 37000 + (x >> 50) % 50000;
		}
		print_message("%s: %" PRIu64 " sent\n", confs[ci], sent);
		assert_true(sent > 500 && head == sent);
		shp_rig_fini(&r);
	}
}

/*
 * Two shards, each with its own frames, claim at the same instants in
 * every order (2^12 orders of 12 polls, with a peak rate and without):
 * each claim lets go exactly what one bucket that saw the claims in that
 * order lets go, and a refused claim's hint is exact: at next_ns the
 * first refused frame passes, a nanosecond earlier it does not.
 */
static void
test_two_shards_every_order(void **state)
{
	static const char *const confs[] = {
		"rate 8mbit burst 4kb limit 1mb",
		"rate 8mbit burst 6kb limit 1mb peakrate 16mbit mtu 1600",
	};
	unsigned int ci, order;

	(void)state;
	for (ci = 0; ci < RTE_DIM(confs); ci++) {
		struct shp_tbf_conf c = conf_of(confs[ci]);

		for (order = 0; order < 4096; order++) {
			struct shp_tbf_shared sh;
			struct ref_bucket ref;
			uint32_t q[2][400];
			unsigned int head[2] = { 0, 0 }, p, s;
			uint64_t x = 99 + order, t = 5000000;

			for (s = 0; s < 2; s++)
				for (p = 0; p < RTE_DIM(q[s]); p++)
					q[s][p] = rnd_len(&x);
			shp_tbf_shared_init(&sh, &c, t);
			ref_init(&ref, &c, t);
			for (p = 0; p < 12; p++) {
				for (s = 0; s < 2; s++) {
					unsigned int w = ((order >> p) & 1) ^ s;
					uint16_t n = 16, k, kr;
					uint64_t next;

					k = shp_tbf_shared_claim(&sh, &c,
								 q[w] + head[w],
								 n, t, &next);
					kr = ref_claim(&ref, &c, q[w] + head[w],
						       n, t);
					assert_int_equal(k, kr);
					if (k < n) {
						struct shp_tbf_shared a = sh;
						uint64_t nx;

						assert_true(next > t);
						assert_int_equal(
							shp_tbf_shared_claim(
								&a, &c,
								q[w] + head[w] + k,
								1, next - 1, &nx), 0);
						assert_int_equal(
							shp_tbf_shared_claim(
								&a, &c,
								q[w] + head[w] + k,
								1, next, &nx), 1);
					}
					head[w] += k;
				}
				t += 800000 + (x >> 45) % 1000000;
			}
			assert_true(head[0] + head[1] > 0);
		}
	}
}

/*
 * The link leaves at its rate, not the shards': two shards offered twice
 * the rate between them, split 50/50, 90/10 and 100/0, polled every 20 us
 * in an order that changes, over 10 s: the aggregate is the rate within
 * 0.5% (not twice it, nor a static half of it where the load is
 * uneven), no stretch ever carries more than rate x time + burst, and
 * every shard that has frames carries some.
 */
static void
test_split_rates(void **state)
{
	static const unsigned int split[] = { 50, 90, 100 };
	struct shp_tbf_conf c = conf_of("rate 10mbit burst 10kb limit 1mb");
	unsigned int si;

	(void)state;
	for (si = 0; si < RTE_DIM(split); si++) {
		struct shp_tbf_shared sh;
		/* offered bytes a shard may still send (a backlog) */
		double offered[2] = { 0, 0 }, rate_bps = 10e6 / 8;
		uint64_t t0 = 1000000000, t = t0, end = t0 + 10000000000ull;
		uint64_t bytes[2] = { 0, 0 }, x = 3, total = 0;
		uint32_t wire[32];
		unsigned int i;

		for (i = 0; i < 32; i++)
			wire[i] = 1000;
		shp_tbf_shared_init(&sh, &c, t);
		for (; t < end; t += 20000) {
			unsigned int first, s;

			offered[0] += 2 * rate_bps * 20e-6 * split[si] / 100;
			offered[1] += 2 * rate_bps * 20e-6 *
				      (100 - split[si]) / 100;
			x = x * 6364136223846793005ull + 1;
			first = (x >> 60) & 1;
			for (s = 0; s < 2; s++) {
				unsigned int w = s ^ first;
				uint16_t n = (uint16_t)RTE_MIN(offered[w] / 1000,
								32.0);
				uint64_t next;
				uint16_t k;

				if (n == 0)
					continue;
				k = shp_tbf_shared_claim(&sh, &c, wire, n, t,
							 &next);
				offered[w] -= k * 1000.0;
				bytes[w] += k * 1000ull;
				total += k * 1000ull;
			}
			/* never more than the rate since the start, and
			 * the full bucket it started with */
			assert_true(total <= rate_bps * (t - t0) / 1e9 +
						     c.burst + 1000);
		}
		{
			double got = total / ((end - t0) / 1e9);

			assert_true(got >= 0.995 * rate_bps &&
				    got <= 1.005 * rate_bps);
		}
		assert_true(bytes[0] > 0);
		assert_true(split[si] == 100 ? bytes[1] == 0 : bytes[1] > 0);
	}
}

/* A copy charged (netem's duplicate) is a debt the next frames wait for,
 * as shp_tbf_charge's. */
static void
test_charge(void **state)
{
	struct shp_tbf_conf c = conf_of("rate 8mbit burst 2000 limit 1mb");
	struct shp_tbf_shared sh;
	struct ref_bucket ref;
	uint32_t w = 1000;
	uint64_t next, t = 1000000;

	(void)state;
	shp_tbf_shared_init(&sh, &c, t);
	ref_init(&ref, &c, t);
	/* 2000 bytes of tokens: two frames, then a charged copy (-1000) */
	assert_int_equal(shp_tbf_shared_claim(&sh, &c, (uint32_t[]){ w, w },
					      2, t, &next), 2);
	shp_tbf_shared_charge(&sh, &c, w, t);
	assert_true(shp_tbf_shared_tokens(&sh, &c, t) < 0);
	/* 8 Mbit/s is 1 us a byte: the debt and one frame take 2 ms */
	assert_int_equal(shp_tbf_shared_claim(&sh, &c, &w, 1, t + 1999999,
					      &next), 0);
	assert_int_equal(next, t + 2000000);
	assert_int_equal(shp_tbf_shared_claim(&sh, &c, &w, 1, t + 2000000,
					      &next), 1);
	(void)ref;
}

/*
 * A refused frame reserved: it may leave exactly when the refusal's hint
 * said (alone, a reservation changes nothing), and a frame another shard
 * offers meanwhile waits behind it, as if the reserved one had been
 * claimed first; with a peak rate the later of the two buckets counts.
 */
static void
test_reserve(void **state)
{
	static const char *const confs[] = {
		"rate 8mbit burst 2000 limit 1mb",
		"rate 8mbit burst 4000 limit 1mb peakrate 16mbit mtu 1600",
	};
	unsigned int ci;

	(void)state;
	for (ci = 0; ci < RTE_DIM(confs); ci++) {
		struct shp_tbf_conf c = conf_of(confs[ci]);
		struct shp_tbf_shared sh, ref;
		uint32_t big = 1500, small = 100;
		uint64_t t = 1700000000ull * 1000000000ull, next, at, nx;
		uint16_t k;

		shp_tbf_shared_init(&sh, &c, t);
		/* spend the tokens, then a big frame is refused */
		while (shp_tbf_shared_claim(&sh, &c, &big, 1, t, &next) == 1)
			;
		ref = sh;
		at = shp_tbf_shared_reserve(&sh, &c, big, t);
		assert_int_equal(at, next);
		assert_true(at > t);
		/* the same as one bucket that let it go at `at` */
		assert_int_equal(shp_tbf_shared_claim(&ref, &c, &big, 1, at,
						      &nx), 1);
		assert_true(sh.clk.val[0] == ref.clk.val[0] &&
			    sh.clk.val[1] == ref.clk.val[1]);
		/* a small frame offered at `at` now waits behind it: at
		 * `at` the bucket holds none for it */
		k = shp_tbf_shared_claim(&sh, &c, &small, 1, at, &nx);
		assert_int_equal(k, 0);
		assert_true(nx > at);
		assert_int_equal(shp_tbf_shared_claim(&sh, &c, &small, 1, nx,
						      &next), 1);
	}
}

/*
 * Two threads claim at once on the real clock, bursts of 32 at a rate
 * they cannot reach: what they claimed together never exceeds the full
 * bucket plus the rate times the time since the start, however their
 * swaps interleaved, and every successful call was one swap.
 */
struct hammer {
	struct shp_tbf_shared *sh;
	const struct shp_tbf_conf *c;
	bool police;    /* judge (shp_tbf_shared_police), not claim */
	uint64_t t0, until, bytes, calls, last;
};

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *
hammer_run(void *arg)
{
	struct hammer *h = arg;
	uint32_t wire[32];
	unsigned int i;

	for (i = 0; i < 32; i++)
		wire[i] = 64;
	for (;;) {
		uint64_t now = mono_ns(), next;
		uint16_t k;

		if (now >= h->until)
			break;
		if (h->police) {
			uint8_t v[32];

			k = shp_tbf_shared_police(h->sh, h->c, wire, 32, now,
						  v);
		} else {
			k = shp_tbf_shared_claim(h->sh, h->c, wire, 32, now,
						 &next);
		}
		if (k > 0) {
			h->calls++;
			h->bytes += k * 64ull;
			h->last = now;
		}
	}
	return NULL;
}

/* Two threads hammer one bucket (claims, or a policer's judgements)
 * for 200 ms; what passed over the run never exceeds the burst plus the
 * rate times the time, both threads got some, and every swap that
 * moved the bucket was one call's. */
static void
hammer_two(const struct shp_tbf_conf *c, bool police)
{
	struct shp_tbf_shared sh;
	struct hammer h[2];
	pthread_t th[2];
	uint64_t t0 = mono_ns(), last = 0, bytes = 0;
	unsigned int i;

	shp_tbf_shared_init(&sh, c, t0);
	for (i = 0; i < 2; i++) {
		h[i] = (struct hammer){ .sh = &sh, .c = c, .police = police,
					.t0 = t0, .until = t0 + 200000000 };
		assert_int_equal(pthread_create(&th[i], NULL, hammer_run,
						&h[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		bytes += h[i].bytes;
		last = RTE_MAX(last, h[i].last);
	}
	print_message("%s: %" PRIu64 " bytes passed, %" PRIu64 " and %"
		      PRIu64 "\n", police ? "policed" : "claimed", bytes,
		      h[0].bytes, h[1].bytes);
	assert_true(h[0].bytes > 0 && h[1].bytes > 0);
	/* 200 Mbit/s is 25 bytes a us */
	assert_true(bytes <= 65536 + (last - t0) * 25 / 1000 + 64);
	assert_int_equal(sh.claims, h[0].calls + h[1].calls);
}

static void
test_threads_never_exceed(void **state)
{
	struct shp_tbf_conf c = conf_of("rate 200mbit burst 64kb limit 1mb");

	(void)state;
	hammer_two(&c, false);
}

/* ------------------------------------------------ claims put off */

/* A burst of 1..max small frames (64-191 bytes on the wire). */
static uint16_t
small_burst(uint64_t *x, uint32_t *w, uint16_t max)
{
	uint16_t n, i;

	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	n = (uint16_t)(1 + (*x >> 40) % max);
	for (i = 0; i < n; i++) {
		*x = *x * 6364136223846793005ull + 1442695040888963407ull;
		w[i] = 64 + (uint32_t)((*x >> 41) % 128);
	}
	return n;
}

/* Polls 100-300 us apart while the phase is light (below the rate of
 * 100 Mbit/s with bursts of up to 8 small frames), 2-20 us apart while it
 * is heavy (far above it). */
static uint64_t
poll_gap(uint64_t *x, bool heavy)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return heavy ? 2000 + (*x >> 40) % 18000 : 100000 + (*x >> 40) % 200000;
}

/*
 * One shard alone, putting its claims off while the bucket is rich, still
 * decides as one bucket does: light stretches (the bucket stays full, the
 * claims are put off) and heavy ones (the bucket drains, every burst
 * claims and some are refused) in turn, on a clock of epoch time: every
 * burst lets go what the reference bucket lets go, a refusal's hint is
 * exact, and after the last burst's debt is settled the bucket holds what
 * the reference holds. And it did put claims off: fewer swaps than bursts.
 */
static void
test_defer_alone_is_one_bucket(void **state)
{
	struct shp_tbf_conf c = conf_of("rate 100mbit burst 64kb limit 1mb");
	struct shp_tbf_shared sh;
	struct shp_tbf_defer d;
	struct ref_bucket ref;
	uint64_t t = 1700000000ull * 1000000000ull, x = 3, bursts = 0;
	uint64_t refused = 0;
	unsigned int i;

	(void)state;
	memset(&d, 0, sizeof(d));
	shp_tbf_shared_init(&sh, &c, t);
	ref_init(&ref, &c, t);
	for (i = 0; i < 40000; i++) {
		bool heavy = (i / 2000) % 2 == 1;
		uint32_t w[8];
		uint16_t n = small_burst(&x, w, 8), k, kr;
		uint64_t next = 0;

		k = shp_tbf_shared_claim_defer(&sh, &c, &d, w, n, t, &next);
		kr = ref_claim(&ref, &c, w, n, t);
		assert_int_equal(k, kr);
		bursts++;
		if (k < n) {
			struct shp_tbf_shared a = sh;
			struct shp_tbf_defer da = d;
			uint64_t nx;

			refused++;
			assert_true(next > t);
			assert_int_equal(shp_tbf_shared_when_owed(&sh, &c, &d,
								  w[k], t),
					 next);
			assert_int_equal(shp_tbf_shared_claim_defer(&a, &c,
					 &da, w + k, 1, next - 1, &nx), 0);
			a = sh;
			da = d;
			assert_int_equal(shp_tbf_shared_claim_defer(&a, &c,
					 &da, w + k, 1, next, &nx), 1);
		}
		t += poll_gap(&x, heavy);
	}
	shp_tbf_shared_settle(&sh, &c, &d, t);
	{
		int64_t el = (int64_t)((t - ref.t_c) << SHP_TBF_SHIFT);

		assert_true(shp_tbf_shared_tokens(&sh, &c, t) ==
			    RTE_MIN(c.buffer_t, ref.tokens + el));
	}
	print_message("%" PRIu64 " bursts, %" PRIu64 " swaps, %" PRIu64
		      " put off, %" PRIu64 " refused\n", bursts, sh.claims,
		      d.put_off, refused);
	/* a swap a burst at most, none for a burst put off (a refusal
	 * of a whole burst swaps nothing either; the settle one) */
	assert_true(d.put_off > bursts / 4 && refused > 100);
	assert_true(sh.claims + d.put_off <= bursts + 1);
}

/*
 * Two shards putting claims off, polled in an order that changes, light
 * and heavy stretches in turn: no stretch of polls carries more than
 * rate x time + burst + 2 x burst / 16 (the bound tbf_shared.h gives:
 * each shard's debt is the others' tokens while it is owed), in a heavy
 * stretch of 2 s it carries the rate within 0.5%, both shards put claims
 * off, and the bound is not idle (the link used most of its burst).
 */
static void
test_defer_two_shards_bound(void **state)
{
	struct shp_tbf_conf c = conf_of("rate 100mbit burst 64kb limit 1mb");
	const double rate = 100e6 / 8 / 1e9;   /* bytes a ns */
	const double burst = 65536;
	struct shp_tbf_shared sh;
	struct shp_tbf_defer d[2];
	const uint64_t t0 = 1700000000ull * 1000000000ull;
	uint64_t t = t0, x = 17, bytes = 0, h0 = 0, ht = 0, hbytes = 0;
	double most = 0, low = 0;
	unsigned int i, q;

	(void)state;
	memset(d, 0, sizeof(d));
	shp_tbf_shared_init(&sh, &c, t);
	for (i = 0;; i++) {
		/* light, heavy, light, then 2 s heavy (from poll 54000) */
		bool heavy = (i >= 20000 && i < 40000) || i >= 54000;
		uint64_t next;

		/* the least of bytes - rate x time before a poll: a stretch
		 * from there carried the most */
		low = RTE_MIN(low, (double)bytes - rate * (double)(t - t0));
		if (i == 54000) {
			h0 = bytes;
			ht = t;
		}
		for (q = 0; q < 2; q++) {
			unsigned int s = (q + (unsigned int)(x >> 60)) % 2;
			uint32_t w[8];
			uint16_t n = small_burst(&x, w, 8), k, j;

			k = shp_tbf_shared_claim_defer(&sh, &c, &d[s], w, n,
						       t, &next);
			for (j = 0; j < k; j++)
				bytes += w[j];
		}
		{
			double over = (double)bytes -
				      rate * (double)(t - t0) - low;

			assert_true(over <= burst + 2 * burst / 16);
			most = RTE_MAX(most, over);
		}
		t += heavy ? 2000 + (x >> 40) % 2000 : poll_gap(&x, false);
		if (i > 54000 && t - ht >= 2000000000ull)
			break;
	}
	hbytes = bytes - h0;
	print_message("heavy: %.0f B/s over %.3f s; most over the rate %.0f "
		      "B; put off %" PRIu64 ", %" PRIu64 "; swaps %" PRIu64
		      "\n", hbytes / ((t - ht) / 1e9), (t - ht) / 1e9, most,
		      d[0].put_off, d[1].put_off, sh.claims);
	assert_true(t - ht >= 2000000000ull);
	assert_true(hbytes >= 0.995 * rate * (double)(t - ht) &&
		    hbytes <= 1.005 * rate * (double)(t - ht));
	assert_true(d[0].put_off > 0 && d[1].put_off > 0);
	assert_true(most > burst / 2);
}

/* ------------------------------------------------ the policer's judgement */

static struct shp_tbf_conf
police_conf_of(const char *args)
{
	struct shp_tbf_conf c;
	char err[128];

	memset(&c, 0, sizeof(c));
	if (shp_police_parse(args, &c, err) != 0)
		fail_msg("%s: %s", args, err);
	return c;
}

/*
 * Two shards, each with its own arrivals, judged at the same instants in
 * every order (2^12 orders of 12 polls; with a peak rate, with an mtu
 * some frames exceed, with overhead): every verdict is the one policer
 * (shp_police_conform_burst) that judged the same bursts in that order
 * gives, and the count returned is the number that conformed.
 */
static void
test_police_two_shards_every_order(void **state)
{
	static const char *const confs[] = {
		"rate 8mbit burst 4kb",
		"rate 8mbit burst 6kb mtu 1500 peakrate 16mbit",
		"rate 8mbit burst 4kb mtu 1000",
		"rate 4mbit burst 3kb overhead 24 mpu 84",
	};
	unsigned int ci, order, conformed = 0, refused = 0;

	(void)state;
	for (ci = 0; ci < RTE_DIM(confs); ci++) {
		struct shp_tbf_conf c = police_conf_of(confs[ci]);

		for (order = 0; order < 4096; order++) {
			struct shp_tbf_shared sh;
			struct shp_police_state ref;
			uint32_t q[2][200];
			unsigned int head[2] = { 0, 0 }, p, s;
			uint64_t x = 7 + order, t = 5000000;

			for (s = 0; s < 2; s++)
				for (p = 0; p < RTE_DIM(q[s]); p++)
					q[s][p] = rnd_len(&x);
			shp_tbf_shared_init(&sh, &c, t);
			shp_police_init(&ref, &c, t);
			for (p = 0; p < 12; p++) {
				for (s = 0; s < 2; s++) {
					unsigned int w = ((order >> p) & 1) ^ s;
					uint8_t v[16], vr[16];
					uint16_t n = 16, k, i, ok = 0;

					k = shp_tbf_shared_police(&sh, &c,
								  q[w] + head[w],
								  n, t, v);
					shp_police_conform_burst(&ref, &c,
								 q[w] + head[w],
								 n, t, vr);
					assert_memory_equal(v, vr, n);
					for (i = 0; i < n; i++)
						ok += v[i] == 0;
					assert_int_equal(k, ok);
					conformed += ok;
					refused += n - ok;
					head[w] += n;
				}
				t += 400000 + (x >> 45) % 1000000;
			}
		}
	}
	/* both verdicts met, or the comparison proves little */
	assert_true(conformed > 10000 && refused > 10000);
}

/* The policer's judgements the same: each thread on its own clock
 * reading, so stamps interleave out of order across them. */
static void
test_police_threads_never_exceed(void **state)
{
	struct shp_tbf_conf c = police_conf_of("rate 200mbit burst 64kb");

	(void)state;
	hammer_two(&c, true);
}

/* ------------------------------------------ the tbf stage on the bucket */

/*
 * A rig of a fifo under a tbf stage whose env names the link ln (the
 * stage claims from its bucket instead of keeping its own), on port (the
 * rig's counters). conf is the caller's; env must outlive the rig.
 */
static void
shard_rig(struct shp_rig *r, uint16_t port, struct shp_stage_env *env,
	  struct shp_link_shared *ln, uint16_t shard,
	  const struct shp_tbf_conf *conf)
{
	struct shp_qdisc *q;

	shp_rig_chain_port(r, port, "fifo");
	*env = (struct shp_stage_env){ .socket = SOCKET_ID_ANY,
				       .shard = shard, .link = ln };
	q = shp_qdisc_create_env(&shp_tbf_ops, r->root, shp_rig_pool, port,
				 env, conf);
	assert_non_null(q);
	r->stage[r->nb_stages] = q;
	r->kind[r->nb_stages] = NULL;
	r->conf[r->nb_stages++] = NULL;
	r->root = q;
}

static struct shp_tbf_conf *
conf_new(const char *args)
{
	char err[128];
	struct shp_tbf_conf *c = shp_kind_find("tbf")->parse(args, NULL, err);

	if (c == NULL)
		fail_msg("%s: %s", args, err);
	return c;
}

static uint16_t
take(struct shp_rig *r, uint64_t t, uint64_t *bytes)
{
	struct rte_mbuf *out[64];
	uint16_t k = shp_rig_dequeue_at(r, t, out, RTE_DIM(out)), i;

	for (i = 0; i < k; i++) {
		assert_true(shp_meta(out[i])->time_to_send == t);
		*bytes += rte_pktmbuf_pkt_len(out[i]);
	}
	rte_pktmbuf_free_bulk(out, k);
	return k;
}

/* One to three frames of the same random lengths into both rigs at t:
 * how many. */
static unsigned int
arrive_both(struct shp_rig *ra, struct shp_rig *rb, uint64_t t, uint64_t *x)
{
	struct rte_mbuf *a[3], *b[3];
	uint16_t i, m = 1 + (uint16_t)((*x >> 40) % 3);

	for (i = 0; i < m; i++) {
		uint16_t len = (uint16_t)rnd_len(x);

		a[i] = shp_rig_pkt(len, 0, t);
		b[i] = shp_rig_pkt(len, 0, t);
	}
	assert_int_equal(shp_rig_enqueue_at(ra, t, a, m), m);
	assert_int_equal(shp_rig_enqueue_at(rb, t, b, m), m);
	return m;
}

/*
 * One shard fed, another bound to the same bucket and idle: the stage on
 * the shared bucket lets go what the private stage lets go, at every
 * poll, and says the same next time, on a clock of epoch time (whose
 * ticks overflow 64 bits: only differences count), with a peak rate too.
 */
static void
test_stage_one_shard_as_private(void **state)
{
	static const char *const confs[] = {
		"rate 10mbit burst 10kb limit 10mb",
		"rate 10mbit burst 20kb limit 10mb peakrate 40mbit mtu 1600",
	};
	unsigned int ci;

	(void)state;
	for (ci = 0; ci < RTE_DIM(confs); ci++) {
		struct shp_link_shared *ln = calloc(1, sizeof(*ln));
		struct shp_tbf_conf *c0 = conf_new(confs[ci]);
		struct shp_tbf_conf *c1 = conf_new(confs[ci]);
		struct shp_tbf_conf *c2 = conf_new(confs[ci]);
		struct shp_stage_env e1, e2;
		struct shp_rig priv, one, idle;
		uint64_t t = 1700000000ull * 1000000000ull, x = 11 + ci;
		uint64_t b0 = 0, b1 = 0, sent = 0;
		unsigned int ev, arrived = 0;

		assert_non_null(ln);
		{
			char spec[128];

			snprintf(spec, sizeof(spec), "tbf %s", confs[ci]);
			shp_rig_chain_port(&priv, 0, "fifo", spec);
		}
		shard_rig(&one, 1, &e1, ln, 0, c1);
		shard_rig(&idle, 2, &e2, ln, 1, c2);
		for (ev = 0; ev < 20000; ev++) {
			uint64_t n0, n1, next_in;
			uint16_t k0, k1;

			/* bursts of arrivals, then quiet stretches */
			if (arrived < 6000 && (ev / 500) % 2 == 0)
				arrived += arrive_both(&priv, &one, t, &x);
			k0 = take(&priv, t, &b0);
			k1 = take(&one, t, &b1);
			assert_int_equal(k0, k1);
			sent += k0;
			priv.ctx.now = one.ctx.now = t;
			n0 = shp_qdisc_next_time(priv.root, &priv.ctx);
			n1 = shp_qdisc_next_time(one.root, &one.ctx);
			assert_true(n0 == n1);
			assert_true(n0 == UINT64_MAX || n0 > t);
			/* the next arrival or the next release */
			next_in = t + 20000 + (x >> 50) % 400000;
			t = RTE_MIN(next_in, n0);
		}
		print_message("%s: %" PRIu64 " sent\n", confs[ci], sent);
		assert_true(b0 == b1 && sent > 1000);
		shp_rig_fini(&idle);
		shp_rig_fini(&one);
		shp_rig_fini(&priv);
		free(c1);
		free(c2);
		(void)c0;
		free(c0);
		free(ln);
	}
}

/*
 * Taken late (the lcore busy elsewhere), a frame is stamped with when the
 * bucket would have let it go, not when it was taken (sch_tbf.c,
 * tbf_stamp): the stage on the link's bucket, one shard alone, stamps
 * what the private stage stamps, frame by frame, with a bucket deep
 * enough that no late poll finds it full (the private stage reckons
 * departures on a clock of its own, the shard from the link's bucket as
 * its last claim left it: a full bucket there forgets when it filled,
 * and the shard's stamps are then later, never earlier). With a bucket of one
 * frame the two part once a frame the shard held for the link leaves
 * late (its reservation charged the bucket as of its time, the private
 * stage charges it when taken; on time they are one, as
 * test_stage_one_shard_as_private checks): there every stamp is between
 * the frame's arrival and when it was taken, in order.
 */
static void
test_stage_late_stamps_as_private(void **state)
{
	static const char *const confs[] = {
		"rate 10mbit burst 10kb limit 10mb",
		"rate 100mbit burst 1600 limit 1mb",
	};
	unsigned int ci;

	(void)state;
	for (ci = 0; ci < RTE_DIM(confs); ci++) {
		struct shp_link_shared *ln = calloc(1, sizeof(*ln));
		struct shp_tbf_conf *c1 = conf_new(confs[ci]);
		struct shp_tbf_conf *c2 = conf_new(confs[ci]);
		struct shp_stage_env e1, e2;
		struct shp_rig priv, one, idle;
		uint64_t t = 1700000000ull * 1000000000ull, x = 29 + ci;
		uint64_t sent = 0, early = 0, last = 0;
		unsigned int ev, arrived = 0;
		char spec[128];

		assert_non_null(ln);
		snprintf(spec, sizeof(spec), "tbf %s", confs[ci]);
		shp_rig_chain_port(&priv, 0, "fifo", spec);
		shard_rig(&one, 1, &e1, ln, 0, c1);
		shard_rig(&idle, 2, &e2, ln, 1, c2);
		for (ev = 0; ev < 20000; ev++) {
			struct rte_mbuf *a[64], *b[64];
			uint64_t n0;
			uint16_t k0, k1, i;

			if (arrived < 6000 && (ev / 500) % 2 == 0)
				arrived += arrive_both(&priv, &one, t, &x);
			k0 = shp_rig_dequeue_at(&priv, t, a, RTE_DIM(a));
			k1 = shp_rig_dequeue_at(&one, t, b, RTE_DIM(b));
			if (ci == 0)
				assert_int_equal(k0, k1);
			for (i = 0; i < k1; i++) {
				uint64_t s1 = shp_meta(b[i])->time_to_send;

				if (ci == 0)
					assert_int_equal(
						shp_meta(a[i])->time_to_send,
						s1);
				assert_true(s1 <= t && s1 >= last);
				assert_true(s1 >= shp_meta(b[i])->rx_ns);
				last = s1;
				early += s1 < t;
			}
			rte_pktmbuf_free_bulk(a, k0);
			rte_pktmbuf_free_bulk(b, k1);
			sent += k1;
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			priv.ctx.now = t;
			n0 = shp_qdisc_next_time(priv.root, &priv.ctx);
			/* the next arrival, or the next release taken up to
			 * 300 us late */
			t = RTE_MIN(t + 20000 + (x >> 50) % 400000,
				    n0 == UINT64_MAX ? UINT64_MAX :
				    n0 + (x >> 44) % 300000);
		}
		print_message("%s: %" PRIu64 " sent, %" PRIu64 " stamped "
			      "before they were taken\n", confs[ci], sent,
			      early);
		assert_true(sent > 1000 && early > sent / 4);
		shp_rig_fini(&idle);
		shp_rig_fini(&one);
		shp_rig_fini(&priv);
		free(c1);
		free(c2);
		free(ln);
	}
}

/*
 * One shard's frames wait 5 ms for its lcore while another shard, on
 * time, keeps claiming from the link's bucket, which never runs low (two
 * thirds of the rate): taken at last, they are stamped with their
 * arrival, as the private stage would stamp them, though every claim in
 * between capped the bucket at a full one at its own time (before the
 * link's low was kept, they were stamped a bucket's time before the last
 * claim: 4 ms of the lcore's wait passed on as the profile's). And the
 * late shard's clock reads 50 us behind the last claim's (its round began
 * before): the bucket is taken at the later clock, so nothing is refused
 * (before, a clock behind the last claim's read as a debt of the peak
 * bucket there is none of, and the frame was held). Then the link's
 * bucket runs low (a burst beyond it): a frame that waited from before
 * is stamped no earlier than the bucket had its tokens.
 */
static void
test_stage_late_shard_stamps_arrival(void **state)
{
	struct shp_link_shared *ln = calloc(1, sizeof(*ln));
	struct shp_tbf_conf *c0 = conf_new("rate 100mbit burst 10kb limit 1mb");
	struct shp_tbf_conf *c1 = conf_new("rate 100mbit burst 10kb limit 1mb");
	struct shp_stage_env e0, e1;
	struct shp_rig on, late;
	const uint64_t t0 = 1700000000ull * 1000000000ull;
	struct rte_mbuf *in[3], *out[64];
	uint64_t t, bytes = 0, last;
	uint16_t i, k;

	(void)state;
	assert_non_null(ln);
	shard_rig(&on, 1, &e0, ln, 0, c0);
	shard_rig(&late, 2, &e1, ln, 1, c1);
	for (i = 0; i < 3; i++)
		in[i] = shp_rig_pkt(64, 0, t0);
	assert_int_equal(shp_rig_enqueue_at(&late, t0, in, 3), 3);
	for (t = t0; t <= t0 + 5000000; t += 10000) {
		struct rte_mbuf *m = shp_rig_pkt(64, 0, t);

		assert_int_equal(shp_rig_enqueue_at(&on, t, &m, 1), 1);
		assert_int_equal(take(&on, t, &bytes), 1);
	}
	last = t - 10000;
	k = shp_rig_dequeue_at(&late, last - 50000, out, RTE_DIM(out));
	assert_int_equal(k, 3);
	for (i = 0; i < k; i++)
		assert_int_equal(shp_meta(out[i])->time_to_send, t0);
	rte_pktmbuf_free_bulk(out, k);

	/* 20 kB on time at t: the bucket runs out within it */
	t = last + 1000;
	for (i = 0; i < 3; i++)
		in[i] = shp_rig_pkt(64, 0, t);
	assert_int_equal(shp_rig_enqueue_at(&late, t, in, 3), 3);
	for (i = 0; i < 20; i++) {
		struct rte_mbuf *m = shp_rig_pkt(1000, 0, t);

		assert_int_equal(shp_rig_enqueue_at(&on, t, &m, 1), 1);
	}
	k = shp_rig_dequeue_at(&on, t, out, RTE_DIM(out));
	assert_true(k > 0 && k < 20);
	rte_pktmbuf_free_bulk(out, k);
	/* taken 2 ms later: the bucket had the first frame's tokens only
	 * once the on-time shard's frames it let go were paid for */
	k = shp_rig_dequeue_at(&late, t + 2000000, out, RTE_DIM(out));
	assert_true(k > 0);
	for (i = 0; i < k; i++) {
		uint64_t s1 = shp_meta(out[i])->time_to_send;

		assert_true(s1 > t && s1 <= t + 2000000);
	}
	rte_pktmbuf_free_bulk(out, k);
	shp_rig_fini(&late);
	shp_rig_fini(&on);
	free(c0);
	free(c1);
	free(ln);
}

/* A policer's judgement on a clock that reads behind the last claim's
 * (an lcore's round began before another's claim): a rich bucket is
 * rich at the later clock, nothing is refused. */
static void
test_police_clock_behind(void **state)
{
	struct shp_tbf_conf c = police_conf_of("rate 200mbit burst 64kb");
	struct shp_tbf_shared sh;
	const uint64_t t = 1700000000ull * 1000000000ull;
	uint32_t len[4] = { 64, 64, 1500, 64 };
	uint8_t v[4];
	uint16_t i;

	(void)state;
	memset(&sh, 0, sizeof(sh));
	shp_tbf_shared_init(&sh, &c, t);
	assert_int_equal(shp_tbf_shared_police(&sh, &c, len, 4, t + 100000,
					       v), 4);
	assert_int_equal(shp_tbf_shared_police(&sh, &c, len, 4, t + 40000,
					       v), 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(v[i], 0);
}

/*
 * Two shards on one bucket, each backlogged with its own share of twice
 * the link's rate (50/50, 90/10), the clock following the earlier of
 * their next times, served first the one after the last to send (as
 * the offline tool serves its shards): at every event
 * one of them lets something go (the hints are exact), over 10 s the
 * link carries its rate within 0.5% and never more than rate x time +
 * burst, and both shards carry.
 */
static void
test_stage_two_shards_link_rate(void **state)
{
	static const unsigned int split[] = { 50, 90 };
	const char *args = "rate 10mbit burst 10kb limit 10mb";
	unsigned int si;

	(void)state;
	for (si = 0; si < RTE_DIM(split); si++) {
		struct shp_link_shared *ln = calloc(1, sizeof(*ln));
		struct shp_tbf_conf *c[2] = { conf_new(args), conf_new(args) };
		struct shp_stage_env env[2];
		struct shp_rig s[2];
		const uint64_t t0 = 1700000000ull * 1000000000ull;
		uint64_t t = t0, end = t0 + 10000000000ull, bytes[2] = { 0, 0 };
		double owed[2] = { 0, 0 }, rate = 10e6 / 8;
		unsigned int q, first = 0;

		for (q = 0; q < 2; q++)
			shard_rig(&s[q], (uint16_t)(1 + q), &env[q], ln,
				  (uint16_t)q, c[q]);
		while (t < end) {
			uint64_t next = UINT64_MAX, total;
			uint16_t got = 0;

			/* arrivals up to t: 1000-byte frames, a backlog of
			 * at most 64 each */
			for (q = 0; q < 2; q++) {
				struct rte_mbuf *m;

				owed[q] = 2 * rate * 1e-9 * 20000 *
					  (q == 0 ? split[si] :
						    100 - split[si]) / 100 +
					  owed[q];
				while (owed[q] >= 1000 &&
				       shp_qdisc_qlen_total(s[q].root) < 64) {
					m = shp_rig_pkt(1000, 0, t);
					shp_rig_enqueue_at(&s[q], t, &m, 1);
					owed[q] -= 1000;
				}
			}
			for (q = 0; q < 2; q++) {
				unsigned int w = (q + first) % 2;
				uint16_t k = take(&s[w], t, &bytes[w]);

				if (k > 0 && got == 0)
					first = (w + 1) % 2;
				got += k;
			}
			total = bytes[0] + bytes[1];
			assert_true(total <= rate * (t - t0) / 1e9 + 10240 +
						     1000);
			for (q = 0; q < 2; q++) {
				s[q].ctx.now = t;
				next = RTE_MIN(next, shp_qdisc_next_time(
						       s[q].root, &s[q].ctx));
			}
			/* an event is either a release or an arrival step */
			assert_true(got > 0 || next > t);
			t = RTE_MIN(next, t + 20000);
		}
		{
			double got = (bytes[0] + bytes[1]) / ((end - t0) / 1e9);

			print_message("split %u: %.0f B/s, %" PRIu64 "/%" PRIu64
				      "\n", split[si], got, bytes[0], bytes[1]);
			assert_true(got >= 0.995 * rate && got <= 1.005 * rate);
		}
		assert_true(bytes[0] > 0 && bytes[1] > 0);
		/* turns: an even split shares the link evenly; a shard
		 * offered less than half of it gets all it was offered */
		if (split[si] == 50)
			assert_true(bytes[0] < 1.01 * bytes[1] &&
				    bytes[1] < 1.01 * bytes[0]);
		else
			assert_true(bytes[1] >= 0.99 * 2 * rate * 10 *
						(100 - split[si]) / 100);
		for (q = 0; q < 2; q++) {
			shp_rig_fini(&s[q]);
			free(c[q]);
		}
		free(ln);
	}
}

/*
 * A change reaches the shards as copies of one conf, each parsed from the
 * same text: shp_conf_twin gives the copy the original's id, so the
 * first shard to meet the change refills the bucket and the others leave
 * it (without it the copy, newer, would refill it once more: up to a
 * burst more on the link per shard).
 */
static void
test_twin_refills_once(void **state)
{
	const char *args = "rate 10mbit burst 10kb limit 1mb";
	struct shp_tbf_shared *sh = calloc(1, sizeof(*sh) + 64);
	struct shp_tbf_conf *old = conf_new(args);
	struct shp_tbf_conf *c0 = conf_new(args), *c1 = conf_new(args);
	struct shp_tbf_conf *c2 = conf_new(args);
	uint64_t t = 1700000000ull * 1000000000ull;

	(void)state;
	shp_tbf_shared_bind(sh, old);
	assert_true(shp_tbf_shared_adopt(sh, old, t));
	/* parsed one after the other: the copy is newer */
	assert_true(c1->hdr.id > c0->hdr.id);
	shp_conf_twin(c1, c0);
	assert_int_equal(c1->hdr.id, c0->hdr.id);
	shp_conf_twin(NULL, c0);   /* off: nothing shared, no crash */
	shp_conf_twin(c1, NULL);
	assert_int_equal(c1->hdr.id, c0->hdr.id);
	assert_true(shp_tbf_shared_adopt(sh, c0, t + 1000));
	assert_false(shp_tbf_shared_fresh(sh, c1));
	assert_false(shp_tbf_shared_adopt(sh, c1, t + 2000));
	/* a copy left untwinned is a change of its own */
	assert_true(shp_tbf_shared_adopt(sh, c2, t + 3000));
	free(old);
	free(c0);
	free(c1);
	free(c2);
	free(sh);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_shard_as_tbf),
		cmocka_unit_test(test_two_shards_every_order),
		cmocka_unit_test(test_split_rates),
		cmocka_unit_test(test_charge),
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_threads_never_exceed),
		cmocka_unit_test(test_defer_alone_is_one_bucket),
		cmocka_unit_test(test_defer_two_shards_bound),
		cmocka_unit_test(test_police_two_shards_every_order),
		cmocka_unit_test(test_police_threads_never_exceed),
		cmocka_unit_test(test_stage_one_shard_as_private),
		cmocka_unit_test(test_stage_late_stamps_as_private),
		cmocka_unit_test(test_stage_late_shard_stamps_arrival),
		cmocka_unit_test(test_police_clock_behind),
		cmocka_unit_test(test_stage_two_shards_link_rate),
		cmocka_unit_test(test_twin_refills_once),
	};

	shp_rig_env("tbf_shared", 16384);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
