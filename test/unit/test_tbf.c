/* SPDX-License-Identifier: BSD-3-Clause */
/* Token bucket on a virtual clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sch_bands.h"
#include "shp_kind.h"
#include "shp_tbf.h"
#include "shp_rig.h"

/* The bands (3 of 4096; bands_args more) under a tbf of args, the clock
 * at 1 s. */
static void
rig_init_bands(struct shp_rig *r, const char *args, const char *bands_args)
{
	shp_rig_init(r, 0);
	shp_rig_add(r, "bands", bands_args);
	shp_rig_add(r, "tbf", args);
	r->ctx.now = 1000000000;
}

static void
rig_init(struct shp_rig *r, const char *args)
{
	rig_init_bands(r, args, NULL);
}

/* A dequeue at t lets exactly one frame go, stamped `stamp`. */
static void
take_one(struct shp_rig *r, uint64_t t, uint64_t stamp)
{
	struct rte_mbuf *out[4];

	assert_int_equal(shp_rig_dequeue_at(r, t, out, 4), 1);
	assert_int_equal(shp_meta(out[0])->time_to_send, stamp);
	rte_pktmbuf_free(out[0]);
}

static struct shp_tbf_conf *
tbf_conf(struct shp_rig *r)
{
	return shp_rig_conf(r, "tbf");
}

/* n packets of len bytes in band 1, one at a time. */
static void
feed(struct shp_rig *r, uint16_t len, int n)
{
	struct rte_mbuf *m;
	int i;

	for (i = 0; i < n; i++) {
		shp_rig_pkts(&m, 1, len, 1, NULL, r->ctx.now);
		shp_rig_enqueue_at(r, r->ctx.now, &m, 1);
	}
}

/* The same tbf over a plain FIFO (the rig's "fifo", on port 1) takes the
 * generic peek-and-dequeue path, over the bands the run path; both must
 * decide the same. */
static void
test_runs_match_generic(void **state)
{
	struct shp_rig r, f;
	struct rte_mbuf *a[32], *b[32], *m;
	uint64_t x = 99, sent = 0, drops_b = 0;
	int step, i;

	(void)state;
	rig_init(&r, "rate 100mbit burst 3kb peakrate 200mbit mtu 1800 "
		 "limit 10mb");
	shp_rig_chain_port(&f, 1, "fifo");
	shp_rig_push(&f, &shp_tbf_ops, tbf_conf(&r));
	for (step = 0; step < 20000; step++) {
		uint16_t ka, kb, n;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		if (shp_bands_count(r.stage[0], 1) < 256) {
			/* some longer than the peak bucket: oversize */
			uint16_t len = 60 + (x >> 40) % 1980;

			shp_rig_pkts(&m, 1, len, 1, NULL, r.ctx.now);
			shp_rig_enqueue_at(&r, r.ctx.now, &m, 1);
			shp_rig_pkts(&m, 1, len, 0, NULL, r.ctx.now);
			shp_rig_enqueue_at(&f, r.ctx.now, &m, 1);
		}
		n = 1 + (x >> 20) % 32;
		ka = shp_rig_dequeue_at(&r, r.ctx.now, a, n);
		kb = shp_rig_dequeue_at(&f, r.ctx.now, b, n);
		assert_int_equal(ka, kb);
		assert_int_equal(r.ctx.bytes, f.ctx.bytes);
		for (i = 0; i < ka; i++)
			assert_int_equal(rte_pktmbuf_pkt_len(a[i]),
					 rte_pktmbuf_pkt_len(b[i]));
		sent += ka;
		rte_pktmbuf_free_bulk(a, ka);
		rte_pktmbuf_free_bulk(b, kb);
		r.ctx.now += (x >> 50) % 30000;
	}
	drops_b = f.c->drops[shp_drop_index("tbf_oversize")];
	print_message("sent %" PRIu64 ", oversize %" PRIu64 "\n", sent,
		      drops_b);
	assert_true(sent > 2000);
	assert_true(drops_b > 100);
	assert_int_equal(r.c->drops[shp_drop_index("tbf_oversize")], drops_b);
	shp_rig_fini(&f);
	shp_rig_fini(&r);
}

/*
 * The RX bypass through a gate (shp_qdisc_bypass, tbf's pass op) lets go
 * exactly what enqueue then dequeue at the same instant would: the same
 * packets, in the same order, with the same send time (the instant, which
 * the caller stamps), bucket left the same; oversize frames stay for the
 * dequeue to drop; a stamp older than the bucket's checkpoint passes
 * nothing.
 */
static void
test_bypass_matches_dequeue(void **state)
{
	struct shp_rig r, f;
	struct rte_mbuf *in_a[32], *in_b[32], *a[600], *b[600];
	uint64_t x = 7, bypassed = 0, sent = 0;
	int step, i;

	(void)state;
	/* half the rate offered: the queue fills and empties */
	/* one producer, as the worker's bypass asks */
	rig_init_bands(&r, "rate 1gbit burst 20kb limit 10mb", "sp");
	rig_init(&f, "rate 1gbit burst 20kb limit 10mb");
	for (step = 0; step < 20000; step++) {
		uint16_t n, k, ka = 0, kb, len;
		bool gated;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		n = 1 + (x >> 33) % 32;
		len = 60 + (x >> 40) % 1860;
		shp_rig_pkts(in_a, n, len, 1, NULL, r.ctx.now);
		shp_rig_pkts(in_b, n, len, 1, NULL, r.ctx.now);
		k = shp_qdisc_bypass(r.root, in_a, n, &r.ctx, &gated);
		if (shp_bands_count(r.stage[0], 1) != 0)
			assert_int_equal(k, 0);   /* something waits */
		if (k > 0)
			assert_true(gated);
		/* as the worker's TX does for what the bypass sent */
		shp_meta_released(in_a, k, r.ctx.now);
		for (i = 0; i < k; i++)
			a[ka++] = in_a[i];
		bypassed += k;
		shp_rig_enqueue_at(&r, r.ctx.now, in_a + k, n - k);
		ka += shp_rig_dequeue_at(&r, r.ctx.now, a + ka, 512);
		shp_rig_enqueue_at(&f, f.ctx.now, in_b, n);
		kb = shp_rig_dequeue_at(&f, f.ctx.now, b, 512);
		assert_int_equal(ka, kb);
		for (i = 0; i < ka; i++) {
			assert_int_equal(rte_pktmbuf_pkt_len(a[i]),
					 rte_pktmbuf_pkt_len(b[i]));
			assert_int_equal(shp_meta(a[i])->time_to_send,
					 shp_meta(b[i])->time_to_send);
		}
		sent += ka;
		rte_pktmbuf_free_bulk(a, ka);
		rte_pktmbuf_free_bulk(b, kb);
		r.ctx.now += (x >> 44) % 560000;
		f.ctx.now = r.ctx.now;
	}
	print_message("sent %" PRIu64 ", bypassed %" PRIu64 "\n", sent,
		      bypassed);
	assert_true(bypassed > 1000);
	assert_true(sent - bypassed > 1000);   /* and queued */
	shp_rig_fini(&f);
	shp_rig_fini(&r);
}

/* What the bypass leaves to the queue: a frame the bucket could never
 * hold (the dequeue drops and counts it), a burst stamped before the
 * bucket's checkpoint (a paced one: its clock never goes back), anything
 * once a packet waits. */
static void
test_bypass_leaves(void **state)
{
	struct rte_mbuf *m[3], *out[4];
	struct shp_rig r;
	uint16_t k;
	bool gated;

	(void)state;
	rig_init_bands(&r, "rate 1gbit burst 1000 limit 1mb", "sp");
	shp_rig_pkts(m, 1, 100, 1, NULL, r.ctx.now);
	shp_rig_pkts(m + 1, 1, 1200, 1, NULL, r.ctx.now);
	shp_rig_pkts(m + 2, 1, 100, 1, NULL, r.ctx.now);
	k = shp_qdisc_bypass(r.root, m, 3, &r.ctx, &gated);
	assert_int_equal(k, 1);
	assert_true(gated);
	/* the metadata is the caller's to write (RX skips it for what
	 * leaves at once) */
	assert_int_equal(shp_meta(m[0])->time_to_send, 0);
	rte_pktmbuf_free(m[0]);
	shp_rig_enqueue_at(&r, r.ctx.now, m + 1, 2);
	/* one waits: no bypass */
	shp_rig_pkts(m, 1, 100, 1, NULL, r.ctx.now);
	assert_int_equal(shp_qdisc_bypass(r.root, m, 1, &r.ctx, &gated), 0);
	shp_rig_enqueue_at(&r, r.ctx.now, m, 1);
	k = shp_rig_dequeue_at(&r, r.ctx.now, out, 4);
	assert_int_equal(k, 2);
	assert_int_equal(r.c->drops[shp_drop_index("tbf_oversize")], 1);
	rte_pktmbuf_free_bulk(out, k);
	assert_int_equal(shp_rig_dequeue_at(&r, r.ctx.now, out, 4), 0);
	/* stamped before the checkpoint */
	shp_rig_pkts(m, 1, 100, 1, NULL, r.ctx.now);
	r.ctx.now -= 1000;
	assert_int_equal(shp_qdisc_bypass(r.root, m, 1, &r.ctx, &gated), 0);
	r.ctx.now += 1000000;
	assert_int_equal(shp_qdisc_bypass(r.root, m, 1, &r.ctx, &gated), 1);
	rte_pktmbuf_free(m[0]);
	shp_rig_fini(&r);
}

/*
 * The send time a gate stamps is when the bucket would have let the
 * packet go, also over an earlier one that a class's netem set before
 * the port's tbf held the packet: the wait in the bucket is the
 * profile's, not lateness, and a netem after the gate counts its delay
 * from it. A dequeue later than that (the lcore was busy) does not move
 * it: that wait is the emulator's, lateness.
 */
static void
test_release_stamp_replaces_earlier(void **state)
{
	struct shp_rig r;
	struct rte_mbuf *m[3];
	uint64_t t0;

	(void)state;
	/* 1000 bytes take 8 us at 1 Gbit/s; the bucket holds one */
	rig_init(&r, "rate 1gbit burst 1000 limit 1mb");
	t0 = r.ctx.now;
	shp_rig_pkts(m, 3, 1000, 1, NULL, t0);
	shp_meta(m[1])->time_to_send = t0 - 5000;   /* an earlier stage's */
	shp_rig_enqueue_at(&r, t0, m, 3);
	take_one(&r, t0, t0);
	/* covered at t0 + 8000, taken 1 us later */
	take_one(&r, t0 + 9000, t0 + 8000);
	/* had that one left at t0 + 8000, this one would at t0 + 16000 */
	take_one(&r, t0 + 18000, t0 + 16000);
	shp_rig_fini(&r);
}

/*
 * A frame that waited for the lcore, not for the tokens, keeps the time
 * the bucket would have let it go had every frame before it left on
 * time: its arrival when the bucket was rich, else when the bucket held
 * its cost (the peak's too). At overload the queue in front of a rich
 * bucket then shows as lateness, not as the profile's queueing.
 */
static void
test_stamp_is_not_the_dequeue(void **state)
{
	struct shp_rig r;
	struct rte_mbuf *m[3], *out[4];
	uint64_t t0;
	unsigned int i;

	(void)state;
	rig_init(&r, "rate 1gbit burst 1mb limit 10mb");
	t0 = r.ctx.now;
	shp_rig_pkts(m, 2, 1000, 1, NULL, t0);
	shp_rig_enqueue_at(&r, t0, m, 2);
	shp_rig_pkts(m + 2, 1, 1000, 1, NULL, t0 + 500000);
	shp_rig_enqueue_at(&r, t0 + 500000, m + 2, 1);
	/* taken 2 ms late: each leaves as of its arrival */
	assert_int_equal(shp_rig_dequeue_at(&r, t0 + 2000000, out, 4), 3);
	assert_int_equal(shp_meta(out[0])->time_to_send, t0);
	assert_int_equal(shp_meta(out[1])->time_to_send, t0);
	assert_int_equal(shp_meta(out[2])->time_to_send, t0 + 500000);
	for (i = 0; i < 3; i++)
		rte_pktmbuf_free(out[i]);
	shp_rig_fini(&r);

	/* the peak's bucket holds one frame (4 us at 2 Gbit/s) */
	rig_init(&r, "rate 1gbit burst 10kb peakrate 2gbit mtu 1000 limit 1mb");
	t0 = r.ctx.now;
	shp_rig_pkts(m, 3, 1000, 1, NULL, t0);
	shp_rig_enqueue_at(&r, t0, m, 3);
	take_one(&r, t0, t0);
	take_one(&r, t0 + 1000000, t0 + 4000);
	/* the next is as late: the bucket let it go 4 us after the late
	 * one, and would have 4 us after t0 + 4000 */
	take_one(&r, t0 + 1004000, t0 + 8000);
	shp_rig_fini(&r);

	/* taken on time, every stamp is the dequeue's: 1000 bytes each
	 * 8 us at 1 Gbit/s once the bucket of one frame is spent */
	rig_init(&r, "rate 1gbit burst 1000 limit 1mb");
	t0 = r.ctx.now;
	shp_rig_pkts(m, 3, 1000, 1, NULL, t0);
	shp_rig_enqueue_at(&r, t0, m, 3);
	for (i = 0; i < 3; i++)
		take_one(&r, t0 + 8000 * i, t0 + 8000 * i);
	shp_rig_fini(&r);
}

/* Long-run rate within 0.1% over 1e5 packets of mixed sizes. */
static void
test_rate(void **state)
{
	struct shp_rig r;
	struct rte_mbuf *out[64];
	uint64_t sent = 0, bytes = 0, t_first = 0, t_last = 0;
	uint64_t first_bytes = 0, lens = 12345, want;
	double rate;

	(void)state;
	rig_init(&r, "rate 100mbit burst 10kb limit 10mb");
	while (sent < 100000) {
		uint16_t k, i;

		if (shp_bands_count(r.stage[0], 1) < 64) {
			lens = lens * 6364136223846793005ULL + 1;
			feed(&r, 64 + (lens >> 33) % 1451, 64);
		}
		k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
		for (i = 0; i < k; i++) {
			if (sent == 0) {
				t_first = r.ctx.now;
				first_bytes = 0;
			}
			/* the bucket starts full: measure after it drained */
			if (sent < 1000)
				first_bytes += rte_pktmbuf_pkt_len(out[i]);
			if (sent == 999)
				t_first = r.ctx.now;
			bytes += rte_pktmbuf_pkt_len(out[i]);
			t_last = r.ctx.now;
			sent++;
		}
		rte_pktmbuf_free_bulk(out, k);
		r.ctx.now += 1000;   /* 1 us virtual */
	}
	/* bytes sent after the 1000th packet over the time they took */
	rate = (double)(bytes - first_bytes) * 1e9 / (t_last - t_first);
	want = tbf_conf(&r)->rate;
	print_message("rate %.1f B/s, want %lu\n", rate, want);
	assert_true(rate > want * 0.999 && rate < want * 1.001);
	shp_rig_fini(&r);
}

/* After idling, exactly burst/len packets leave at once. */
static void
test_burst(void **state)
{
	struct shp_rig r;
	struct rte_mbuf *out[64];
	uint16_t k;

	(void)state;
	rig_init(&r, "rate 1mbit burst 10kb limit 1mb");
	feed(&r, 1000, 30);
	k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
	assert_int_equal(k, 10);   /* 10240 / 1000 */
	rte_pktmbuf_free_bulk(out, k);
	/* nothing more until 8 ms (1000 bytes at 1 Mbit/s) have passed,
	 * less the 240 bytes left */
	r.ctx.now += 6000000;
	assert_int_equal(shp_qdisc_dequeue(r.root, out, 64, &r.ctx), 0);
	r.ctx.now += 100000;    /* 6.1 ms: 762 + 240 bytes > 1000 */
	k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
	assert_int_equal(k, 1);
	rte_pktmbuf_free_bulk(out, k);
	/* a long idle refills at most one bucket */
	r.ctx.now += 10ULL * 1000000000;
	k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
	assert_int_equal(k, 10);
	rte_pktmbuf_free_bulk(out, k);
	shp_rig_fini(&r);
}

/* With a peak rate the bucket empties no faster than peakrate. */
static void
test_peakrate(void **state)
{
	struct shp_rig r;
	struct rte_mbuf *out[64];
	uint64_t t0 = 0, t = 0;
	int sent = 0;

	(void)state;
	rig_init(&r, "rate 1mbit burst 100kb limit 1mb peakrate 10mbit "
		 "mtu 1600");
	feed(&r, 1000, 60);
	while (sent < 50) {
		uint16_t k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);

		if (k > 0) {
			assert_int_equal(k, 1);    /* never two at once */
			if (sent == 1)
				t0 = r.ctx.now;
			t = r.ctx.now;
			sent++;
			rte_pktmbuf_free_bulk(out, k);
		}
		r.ctx.now += 1000;
	}
	/* 48 gaps of 1000 bytes at 10 Mbit/s = 800 us each */
	{
		double gap = (double)(t - t0) / 48;

		print_message("peak gap %.1f ns\n", gap);
		assert_true(gap > 800000 * 0.999 && gap < 800000 * 1.002);
	}
	shp_rig_fini(&r);
}

static void
test_oversize(void **state)
{
	struct shp_rig r;
	struct rte_mbuf *out[8];
	uint16_t k;

	(void)state;
	rig_init(&r, "rate 10mbit burst 1kb limit 1mb");
	feed(&r, 1500, 2);
	feed(&r, 500, 2);
	k = shp_qdisc_dequeue(r.root, out, 8, &r.ctx);
	assert_int_equal(k, 2);
	assert_int_equal(rte_pktmbuf_pkt_len(out[0]), 500);
	assert_int_equal(r.c->drops[shp_drop_index("tbf_oversize")], 2);
	rte_pktmbuf_free_bulk(out, k);
	shp_rig_fini(&r);
}

/*
 * Issue 11.2: the kernel's oversize test compares the raw length with
 * max_size (burst, or min(burst, mtu) with a peak rate), and its bucket
 * holds the time to send burst as the overheads count it, so each of
 * these passes every frame of 999..1514 bytes (we dropped them by wire
 * length against a raw-burst bucket).
 */
static void
test_oversize_raw_length(void **state)
{
	static const char *const confs[] = {
		"rate 1mbit burst 1514 limit 100kb overhead 24",
		"rate 1mbit burst 1600 limit 100kb linklayer atm",
		"rate 1mbit burst 1600 limit 100kb mpu 2000",
		/* (one string: clang's -Wstring-concatenation) */
		("rate 1mbit burst 1514 limit 100kb peakrate 2mbit mtu 1514 "
		 "overhead 4"),
	};
	static const uint16_t lens[] = { 999, 1200, 1500, 1514 };
	struct rte_mbuf *out[8];
	unsigned int i, j, got;
	struct shp_rig r;

	(void)state;
	for (i = 0; i < RTE_DIM(confs); i++) {
		rig_init(&r, confs[i]);
		for (j = 0; j < RTE_DIM(lens); j++)
			feed(&r, lens[j], 1);
		for (got = 0; got < RTE_DIM(lens) && r.ctx.now < 2e9;
		     r.ctx.now += 100000) {
			uint16_t k = shp_qdisc_dequeue(r.root, out, 8, &r.ctx);

			got += k;
			rte_pktmbuf_free_bulk(out, k);
		}
		if (got != RTE_DIM(lens) ||
		    r.c->drops[shp_drop_index("tbf_oversize")] != 0)
			fail_msg("'%s': %u of 4 passed, %" PRIu64 " oversize",
				 confs[i], got,
				 r.c->drops[shp_drop_index("tbf_oversize")]);
		shp_rig_fini(&r);
	}
	/* one byte more than the burst: never */
	rig_init(&r, "rate 1mbit burst 1514 limit 100kb overhead 24");
	feed(&r, 1515, 1);
	assert_int_equal(shp_qdisc_dequeue(r.root, out, 8, &r.ctx), 0);
	assert_int_equal(r.c->drops[shp_drop_index("tbf_oversize")], 1);
	shp_rig_fini(&r);
}

/* When the nth frame of a simultaneous train leaves (ns after the first). */
static uint64_t
train_departure(const char *conf, uint16_t len, int n, int nth)
{
	struct rte_mbuf *out[64];
	uint64_t t0, t = UINT64_MAX;
	int sent = 0;
	struct shp_rig r;

	rig_init(&r, conf);
	t0 = r.ctx.now;
	feed(&r, len, n);
	while (sent < nth && r.ctx.now < t0 + 10000000000ULL) {
		uint16_t k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);

		if (k > 0 && sent < nth && sent + k >= nth)
			t = r.ctx.now - t0;
		sent += k;
		rte_pktmbuf_free_bulk(out, k);
		r.ctx.now += 1000;
	}
	shp_rig_fini(&r);
	return t;
}

/*
 * Issue 11.2 figures: 12 frames of 1000 B at once through `rate 1mbit
 * burst 10000 overhead 100`: the bucket is 10100 B of time (80.8 ms),
 * each frame costs 1100 B (8.8 ms), so nine leave at once and the tenth
 * 7.2 ms later (the kernel's time; we said 8.0 ms). With linklayer atm at
 * 2mbit, burst 20kb: bucket 427 cells, a 1000 B frame 21 cells; 20 leave,
 * the 21st after 14 cells' time (2.968 ms) and not 20 cells' time.
 */
static void
test_bucket_overheads(void **state)
{
	uint64_t t;

	(void)state;
	t = train_departure("rate 1mbit burst 10000 limit 1mb overhead 100",
			    1000, 12, 10);
	print_message("10th frame at %" PRIu64 " ns\n", t);
	assert_true(t >= 7200000 && t < 7201000);
	t = train_departure("rate 2mbit burst 20kb limit 10mb linklayer atm",
			    1000, 24, 21);
	print_message("21st frame at %" PRIu64 " ns\n", t);
	assert_true(t >= 2968000 && t < 2969000);
}

/*
 * Issue 11.4: a packet charged from outside (a netem copy) takes its
 * tokens, below zero if need be, and the frames behind wait for the debt.
 */
static void
test_charge(void **state)
{
	struct rte_mbuf *out[64];
	struct shp_rig r;
	uint16_t k;

	(void)state;
	rig_init(&r, "rate 1mbit burst 10kb limit 1mb");
	feed(&r, 1000, 30);
	k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
	assert_int_equal(k, 10);   /* 10240 / 1000, 240 B left */
	rte_pktmbuf_free_bulk(out, k);
	/* ten copies: 9760 B in debt */
	for (k = 0; k < 10; k++)
		shp_tbf_charge(r.root, 1000, r.ctx.now);
	/* the next frame needs 10760 B of time: 86.08 ms */
	r.ctx.now += 86000000;
	assert_int_equal(shp_qdisc_dequeue(r.root, out, 64, &r.ctx), 0);
	r.ctx.now += 100000;
	k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
	assert_int_equal(k, 1);
	rte_pktmbuf_free_bulk(out, k);
	/* a debt is earned back even past an idle bucket's worth of time */
	for (k = 0; k < 30; k++)
		shp_tbf_charge(r.root, 1000, r.ctx.now);
	r.ctx.now += 30ULL * 8000000 - 1000000;
	assert_int_equal(shp_qdisc_dequeue(r.root, out, 64, &r.ctx), 0);
	r.ctx.now += 10000000;
	k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
	assert_int_equal(k, 1);
	rte_pktmbuf_free_bulk(out, k);
	/* not a tbf: ignored */
	shp_tbf_charge(r.stage[0], 1000, r.ctx.now);
	shp_rig_fini(&r);
}

/*
 * Issue 27.1: netem charges its copies through the charge op, found by
 * walking down from where it is called (shp_qdisc_charge), not by
 * naming tbf: the same debt as above, and the bands below charge nothing.
 */
static void
test_charge_op(void **state)
{
	struct rte_mbuf *out[64];
	struct shp_rig r;
	uint16_t k;

	(void)state;
	rig_init(&r, "rate 1mbit burst 10kb limit 1mb");
	assert_non_null(r.root->ops->charge);
	assert_null(r.stage[0]->ops->charge);
	feed(&r, 1000, 30);
	k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
	assert_int_equal(k, 10);
	rte_pktmbuf_free_bulk(out, k);
	for (k = 0; k < 10; k++)
		shp_qdisc_charge(r.root, 1000, r.ctx.now);
	/* nothing below the bucket charges: no further debt */
	shp_qdisc_charge(r.stage[0], 1000, r.ctx.now);
	r.ctx.now += 86000000;
	assert_int_equal(shp_qdisc_dequeue(r.root, out, 64, &r.ctx), 0);
	r.ctx.now += 100000;
	k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
	assert_int_equal(k, 1);
	rte_pktmbuf_free_bulk(out, k);
	shp_rig_fini(&r);
}

/*
 * Issue 15.2: the largest bucket accepted (26 days) survives a long idle
 * gap without overflowing, and what would not fit is refused.
 */
static void
test_long_bucket(void **state)
{
	struct shp_tbf_conf c;
	struct rte_mbuf *out[8];
	char err[SHP_ERR_LEN];
	struct shp_rig r;
	uint16_t k;

	(void)state;
	/* 104 days and 99 days of burst at 1kbit: refused, not wrapped */
	assert_int_equal(shp_tbf_parse("rate 1kbit burst 2gb limit 10mb", &c,
				       err), -1);
	assert_non_null(strstr(err, "burst"));
	assert_int_equal(shp_tbf_parse("rate 1kbit burst 1gb limit 10mb", &c,
				       err), -1);
	/* a rate whose per-byte factor would be 0 */
	assert_int_equal(shp_tbf_parse("rate 11e18 maxburst 1gb latency 2s",
				       &c, err), -1);
	assert_non_null(strstr(err, "rate"));
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 1kb limit 1mb "
				       "peakrate 16e18bps mtu 1500", &c, err),
			 -1);
	/* 20 days of bucket, idle 60 days: full bucket, no overflow */
	rig_init(&r, "rate 1kbit burst 200mb limit 1gb");
	feed(&r, 1000, 2);
	k = shp_qdisc_dequeue(r.root, out, 8, &r.ctx);
	assert_int_equal(k, 2);
	rte_pktmbuf_free_bulk(out, k);
	r.ctx.now += 60ULL * 86400 * 1000000000;
	feed(&r, 1000, 3);
	k = shp_qdisc_dequeue(r.root, out, 8, &r.ctx);
	assert_int_equal(k, 3);
	rte_pktmbuf_free_bulk(out, k);
	shp_rig_fini(&r);
}

/* Pass-through when off, and a change takes effect at the next dequeue. */
static void
test_off_and_change(void **state)
{
	struct shp_rig r;
	struct rte_mbuf *out[64];
	const void *old;

	(void)state;
	rig_init(&r, "rate 1mbit burst 2kb limit 1mb");
	old = r.root->ops->change(r.root, NULL);
	assert_ptr_equal(old, tbf_conf(&r));
	feed(&r, 1000, 40);
	assert_int_equal(shp_qdisc_dequeue(r.root, out, 64, &r.ctx), 40);
	rte_pktmbuf_free_bulk(out, 40);
	r.root->ops->change(r.root, tbf_conf(&r));
	feed(&r, 1000, 40);
	assert_int_equal(shp_qdisc_dequeue(r.root, out, 64, &r.ctx), 2);
	rte_pktmbuf_free_bulk(out, 2);
	shp_rig_fini(&r);
	assert_int_equal(r.c->drops[SHP_DROP_FLUSHED], 38);
}

/*
 * A new conf published at the address of one the stage already ran (the
 * old one freed and the memory reused, while the worker did not look)
 * still starts a fresh bucket: stages tell confs apart by id.
 */
static void
test_new_conf_same_address(void **state)
{
	struct shp_rig r;
	struct rte_mbuf *out[64];
	char err[SHP_ERR_LEN];
	uint16_t k;

	(void)state;
	rig_init(&r, "rate 1mbit burst 2kb limit 1mb");
	feed(&r, 1000, 40);
	assert_int_equal(shp_qdisc_dequeue(r.root, out, 64, &r.ctx), 2);
	rte_pktmbuf_free_bulk(out, 2);
	assert_int_equal(shp_qdisc_dequeue(r.root, out, 64, &r.ctx), 0);
	/* same address, new profile: a 10 kB bucket, full */
	assert_int_equal(shp_tbf_parse("rate 1mbit burst 10kb limit 1mb",
				       tbf_conf(&r), err), 0);
	r.root->ops->change(r.root, tbf_conf(&r));
	k = shp_qdisc_dequeue(r.root, out, 64, &r.ctx);
	assert_int_equal(k, 10);
	rte_pktmbuf_free_bulk(out, k);
	shp_rig_fini(&r);
}

/* A small LCG for the random states (reproducible). */
static uint64_t
lcg(uint64_t *x, uint64_t n)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return (*x >> 33) % n;
}

/*
 * Dequeue one packet at t; a dequeue that returns nothing changes no
 * bucket state (the limit is far away, so no pushout either), so the
 * same rig can be probed at several times.
 */
static uint16_t
deq1_at(struct shp_rig *r, uint64_t t)
{
	struct rte_mbuf *m;
	uint16_t k;

	r->ctx.now = t;
	k = shp_qdisc_dequeue(r->root, &m, 1, &r->ctx);
	if (k > 0)
		rte_pktmbuf_free(m);
	return k;
}

/*
 * next_time against a search: from a few hundred random bucket states
 * (random conf: rate, burst, peakrate, overhead, mpu, atm; random traffic
 * and dequeue history), the time it names is the first nanosecond at
 * which dequeue returns a packet: 1 ns at a time from now when that is
 * near, else nothing at next_time - 1 and a packet at next_time.
 */
static void
test_next_time(void **state)
{
	static const char *const rates[] = {
		"1mbit", "3300kbit", "10mbit", "77mbit", "100mbit", "1gbit",
		"2500mbit", "10gbit",
	};
	uint64_t x = 42, checks = 0, searched = 0;
	int rig_no;

	(void)state;
	for (rig_no = 0; rig_no < 40; rig_no++) {
		unsigned int ri = lcg(&x, RTE_DIM(rates));
		char args[256];
		struct shp_rig r;
		int step, n;

		n = snprintf(args, sizeof(args), "rate %s burst %u limit 100mb",
			     rates[ri], 1600 + (unsigned int)lcg(&x, 40000));
		if (lcg(&x, 3) == 0)
			n += snprintf(args + n, sizeof(args) - n,
				      " peakrate %s mtu %u",
				      ri + 1 < RTE_DIM(rates) ? rates[ri + 1] :
				      "40gbit", 1600 + (unsigned int)lcg(&x, 400));
		if (lcg(&x, 4) == 0)
			n += snprintf(args + n, sizeof(args) - n,
				      " overhead %u mpu %u%s",
				      (unsigned int)lcg(&x, 40),
				      (unsigned int)lcg(&x, 200),
				      lcg(&x, 2) ? " linklayer atm" : "");
		rig_init(&r, args);
		/* the empty stage: nothing, ever */
		assert_int_equal(shp_qdisc_next_time(r.root, &r.ctx),
				 UINT64_MAX);
		for (step = 0; step < 12; step++) {
			uint64_t now, nt, t;
			int i, k = (int)lcg(&x, 6);

			for (i = 0; i < k; i++) {
				uint16_t len = 60 + lcg(&x, RTE_MIN(
						tbf_conf(&r)->max_size, (uint64_t)1514) - 59);
				struct rte_mbuf *m;

				shp_rig_pkts(&m, 1, len, lcg(&x, 3), NULL,
					     r.ctx.now);
				shp_rig_enqueue_at(&r, r.ctx.now, &m, 1);
			}
			/* let some time go by, sometimes none, sometimes
			 * more than the bucket needs to fill */
			switch (lcg(&x, 4)) {
			case 0:
				break;
			case 1:
				r.ctx.now += lcg(&x, 2000);
				break;
			case 2:
				r.ctx.now += lcg(&x, 2000000);
				break;
			default:
				r.ctx.now += lcg(&x, 100000000);
			}
			now = r.ctx.now;
			nt = shp_qdisc_next_time(r.root, &r.ctx);
			assert_int_equal(r.ctx.now, now);
			if (shp_qdisc_qlen_total(r.root) == 0) {
				assert_int_equal(nt, UINT64_MAX);
				continue;
			}
			assert_true(nt >= now && nt != UINT64_MAX);
			/* asking again (peek filled the stash) says the same */
			assert_int_equal(shp_qdisc_next_time(r.root, &r.ctx), nt);
			if (nt - now <= 200000) {
				for (t = now; t < nt; t++)
					assert_int_equal(deq1_at(&r, t), 0);
				searched++;
			} else {
				assert_int_equal(deq1_at(&r, nt - 1), 0);
			}
			assert_int_equal(deq1_at(&r, nt), 1);
			checks++;
			/* sometimes drain what is due now as well */
			if (lcg(&x, 2))
				while (deq1_at(&r, nt) == 1)
					;
		}
		shp_rig_fini(&r);
	}
	print_message("next_time: %" PRIu64 " checks, %" PRIu64
		      " by 1 ns search\n", checks, searched);
	assert_true(checks >= 300);
}

/* An oversize head is due at once (dequeue drops it). */
/* `show qdisc` prints each stage through its kind: tbf as tc does (the
 * limit as the latency it allows), the bands as pfifo_fast or prio */
static void
test_tc_print(void **state)
{
	const struct shp_kind *tbf = shp_kind_find("tbf");
	const struct shp_kind *bands = shp_kind_find("pfifo_fast");
	struct shp_kind_env env = { .bands = 3, .ring_size = 1024 };
	uint8_t map[16] = { 0 };
	const char *name = "tbf";
	char buf[256];
	int n;

	(void)state;
	assert_non_null(tbf->tc_print);
	n = tbf->tc_print("rate 100mbit burst 32kb limit 1mb", &env, &name,
			  buf, sizeof(buf));
	assert_string_equal(buf, "rate 100Mbit burst 32Kb lat 81.3ms");
	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(name, "tbf");
	tbf->tc_print("rate 8mbit burst 10kb latency 20ms peakrate 16mbit "
		      "mtu 1600 overhead 24", &env, &name, buf, sizeof(buf));
	/* tc's order; the bucket as it holds them, overhead counted in */
	assert_string_equal(buf, "rate 8Mbit burst 10264b peakrate 16Mbit "
			    "minburst 1624b lat 20ms overhead 24");
	name = bands->name;
	bands->tc_print("bands 3", &env, &name, buf, sizeof(buf));
	assert_string_equal(name, "pfifo_fast");
	assert_string_equal(buf, "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 "
			    "1 1 1 1");
	env.priomap = map;
	bands->tc_print("bands 3", &env, &name, buf, sizeof(buf));
	assert_string_equal(name, "prio");
	assert_string_equal(buf, "bands 3 priomap 0 0 0 0 0 0 0 0 0 0 0 0 "
			    "0 0 0 0");
	/* truncated: snprintf's convention, what it would have written */
	n = bands->tc_print("", &env, &name, buf, 8);
	assert_int_equal(n, (int)strlen("bands 3 priomap") + 32);
	assert_string_equal(buf, "bands 3");
}

static void
test_next_time_oversize(void **state)
{
	struct shp_rig r;

	(void)state;
	rig_init(&r, "rate 10mbit burst 1kb limit 1mb");
	feed(&r, 500, 2);
	assert_int_equal(deq1_at(&r, r.ctx.now), 1);
	assert_int_equal(deq1_at(&r, r.ctx.now), 1);
	feed(&r, 1500, 1);
	feed(&r, 500, 1);
	assert_int_equal(shp_qdisc_next_time(r.root, &r.ctx), r.ctx.now);
	assert_int_equal(deq1_at(&r, r.ctx.now), 0);
	assert_int_equal(r.c->drops[shp_drop_index("tbf_oversize")], 1);
	/* then the 500-byte frame: 400 us at 10 Mbit/s from the checkpoint
	 * less what is left of the bucket */
	assert_true(shp_qdisc_next_time(r.root, &r.ctx) > r.ctx.now);
	shp_rig_fini(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_runs_match_generic),
		cmocka_unit_test(test_bypass_matches_dequeue),
		cmocka_unit_test(test_bypass_leaves),
		cmocka_unit_test(test_release_stamp_replaces_earlier),
		cmocka_unit_test(test_stamp_is_not_the_dequeue),
		cmocka_unit_test(test_burst),
		cmocka_unit_test(test_peakrate),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_oversize_raw_length),
		cmocka_unit_test(test_bucket_overheads),
		cmocka_unit_test(test_charge),
		cmocka_unit_test(test_charge_op),
		cmocka_unit_test(test_long_bucket),
		cmocka_unit_test(test_off_and_change),
		cmocka_unit_test(test_new_conf_same_address),
		cmocka_unit_test(test_next_time),
		cmocka_unit_test(test_next_time_oversize),
		cmocka_unit_test(test_tc_print),
	};

	shp_rig_env("tbf", 16384);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
