/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem's byte store (issue 25): frames up to `store BYTES` wait as bytes
 * and leave in fresh mbufs. Every profile here runs twice on a virtual
 * clock, `store off` (every frame keeps its mbuf, the code before the
 * store) and with the store, and the two must give the same frames, in
 * the same order, at the same times, with the same bytes and metadata;
 * each run also checks every frame left once, as it came in (corrupt
 * aside), and that the store did hold frames. Then the edges: the
 * threshold and one byte over, a multi-segment frame, the store full
 * (chunks recycled, the rest kept as mbufs), reset and a profile change
 * with frames stored, the store's bound following a profile change, and
 * a pool empty at release (store_no_mbuf).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "netem_tq.h"
#include "shp_kind.h"
#include "shp_netem.h"
#include "shp_rig.h"

#define POOL_SIZE 16384
#define MAX_OUT   40000

/* what a frame carries out of netem: compared run against run */
struct seen {
	uint32_t id;          /* its first 4 bytes: the input number */
	uint16_t len, port, vlan;
	uint32_t ptype, rss;
	uint64_t olf, rx_ns, tts, cls, left, sum, txo, dyn;
};

static struct seen got[2][MAX_OUT];
static uint64_t nb_got[2];
static uint64_t limit_drops[2];   /* netem_limit, run by run */
static int run_idx;
static uint64_t max_stored;

static const uint16_t sizes[] = { 64, 256, 257, 1500, 60, 200 };

static uint64_t
fnv(const uint8_t *p, uint32_t n)
{
	uint64_t h = 1469598103934665603ull;
	uint32_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* Frame i: its number in the first bytes, a pattern after, and the
 * metadata RX and the classifier would have set, all from i; one in five
 * with a TX offload, one in five with a dynamic field (a record with its
 * st_ext), the others plain. */
static struct rte_mbuf *
mk(uint64_t i, uint64_t now)
{
	uint16_t len = sizes[i % RTE_DIM(sizes)];
	struct rte_mbuf *m = shp_rig_pkt(len, 0, now);
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	struct shp_meta *meta = shp_meta(m);
	uint32_t id = (uint32_t)i, j;

	memcpy(d, &id, sizeof(id));
	for (j = 4; j < len; j++)
		d[j] = (uint8_t)(i * 7 + j);
	m->port = (uint16_t)(i % 3);
	m->vlan_tci = (uint16_t)(i & 0xfff);
	m->ol_flags = RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_RX_RSS_HASH;
	m->packet_type = (uint32_t)(i * 2654435761u);
	m->hash.rss = (uint32_t)(i ^ 0x5a5a5a5a);
	meta->prio = (uint8_t)(i % 16);
	meta->band = (uint8_t)(i % 3);
	/* the pool's mbufs keep what an earlier frame left there */
	memset(m->dynfield1, 0, sizeof(m->dynfield1));
	m->tx_offload = 0;
	if (i % 5 == 1)
		m->tx_offload = 0x10203 + i;
	else if (i % 5 == 2)
		m->dynfield1[i % RTE_DIM(m->dynfield1)] = (uint32_t)(i | 1);
	return m;
}

static void
record(struct shp_rig *r, struct rte_mbuf *m)
{
	struct seen *s = &got[run_idx][nb_got[run_idx]++];
	struct shp_meta *meta = shp_meta(m);
	uint8_t buf[2048];
	const uint8_t *d;

	assert_true(nb_got[run_idx] <= MAX_OUT);
	d = rte_pktmbuf_read(m, 0, m->pkt_len, buf);
	memcpy(&s->id, d, 4);
	s->len = (uint16_t)m->pkt_len;
	s->port = m->port;
	s->vlan = m->vlan_tci;
	s->ptype = m->packet_type;
	s->rss = m->hash.rss;
	s->olf = m->ol_flags;
	s->rx_ns = meta->rx_ns;
	s->tts = meta->time_to_send;
	s->cls = meta->cls & 0xffffffffull;   /* prio, band, flags */
	s->left = r->ctx.now;
	s->sum = fnv(d, m->pkt_len);
	s->txo = m->tx_offload;
	s->dyn = fnv((const uint8_t *)m->dynfield1, sizeof(m->dynfield1));
	/* a frame rebuilt from the store is a plain one-segment mbuf */
	assert_int_equal(m->nb_segs, 1);
	if (SHP_XSTAT(r->c, "netem", "store_frames") > max_stored)
		max_stored = SHP_XSTAT(r->c, "netem", "store_frames");
}

/* How run stores: not at all, every frame it may, or past the first 40
 * that wait in mbufs (the two kinds mixed in one queue, as the default
 * `after` mixes them past its depth). */
enum st_mode { ST_OFF, ST_ALL, ST_AFTER };
static const char *const st_spec[] = {
	[ST_OFF] = " store off",
	[ST_ALL] = " store 256 after 0",
	[ST_AFTER] = " store 256 after 40",
};

/* n frames, one every gap ns, through "netem ARGS" stored as mode says,
 * drained. */
static void
run(int idx, const char *args, enum st_mode mode, uint64_t n, uint64_t gap)
{
	char spec[512];
	struct shp_rig r;
	bool store = mode != ST_OFF;

	snprintf(spec, sizeof(spec), "netem %s%s", args, st_spec[mode]);
	run_idx = idx;
	nb_got[idx] = 0;
	max_stored = 0;
	shp_rig_chain(&r, spec);
	r.on_pkt = record;
	shp_rig_stream(&r, n, gap, mk);
	shp_rig_drain(&r);
	if (store)
		assert_true(max_stored > 0);
	else
		assert_int_equal(max_stored, 0);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 0);
	assert_int_equal(r.c->drops[shp_drop_index("store_no_mbuf")], 0);
	limit_drops[idx] = r.c->drops[shp_drop_index("netem_limit")];
	shp_rig_fini(&r);
}

/* The two runs gave the same frames at the same times; each input frame
 * left once, or twice with dup, unchanged unless corrupt. */
static void
compare(uint64_t n, bool dup, bool corrupt)
{
	static uint8_t times[MAX_OUT];
	uint64_t i, reord = 0;

	assert_int_equal(nb_got[0], nb_got[1]);
	assert_true(nb_got[0] > 0);
	memset(times, 0, sizeof(times));
	for (i = 0; i < nb_got[0]; i++) {
		struct seen *a = &got[0][i], *b = &got[1][i];

		assert_memory_equal(a, b, sizeof(*a));
		if (!corrupt) {
			struct rte_mbuf *m = mk(a->id, 0);

			assert_true(a->id < n);
			assert_int_equal(a->len, m->pkt_len);
			assert_true(a->sum == fnv(rte_pktmbuf_mtod(m,
				uint8_t *), m->pkt_len));
			assert_int_equal(a->port, m->port);
			assert_int_equal(a->vlan, m->vlan_tci);
			assert_int_equal(a->ptype, m->packet_type);
			assert_int_equal(a->rss, m->hash.rss);
			assert_true(a->olf == m->ol_flags);
			assert_true(a->txo == m->tx_offload);
			assert_true(a->dyn == fnv((const uint8_t *)m->dynfield1,
						  sizeof(m->dynfield1)));
			assert_int_equal(a->cls & 0xffff,
					 shp_meta(m)->cls & 0xffff);
			rte_pktmbuf_free(m);
			times[a->id]++;
			assert_true(times[a->id] <= (dup ? 2 : 1));
		}
		if (i > 0 && a->id < got[0][i - 1].id)
			reord++;
	}
	if (!corrupt && !dup)
		for (i = 0; i < n; i++)
			assert_int_equal(times[i], 1);
	print_message("  %lu frames, %lu out of arrival order\n",
		      (unsigned long)nb_got[0], (unsigned long)reord);
}

static void
same(const char *args, uint64_t n, uint64_t gap, bool dup, bool corrupt)
{
	run(0, args, ST_OFF, n, gap);
	run(1, args, ST_ALL, n, gap);
	compare(n, dup, corrupt);
	run(1, args, ST_AFTER, n, gap);
	compare(n, dup, corrupt);
}

static void
test_jitter(void **state)
{
	(void)state;
	/* out of time order: most frames overtake or are overtaken */
	same("delay 10ms 5ms", 30000, 2000, false, false);
	same("delay 2ms 1ms distribution normal", 30000, 1000, false, false);
}

/*
 * A plain record holds the arrival time as its distance to the send time,
 * in 32 bits: a frame that waits longer (over 4.29 s) has an st_ext. Both
 * sides of the line, each frame's arrival time exact (as without the
 * store), whatever its form.
 */
static void
test_long_waits(void **state)
{
	uint64_t i;

	(void)state;
	same("delay 4290ms 10ms", 3000, 10000, false, false);
	for (i = 0; i < nb_got[1]; i++) {
		assert_true(got[1][i].tts - got[1][i].rx_ns >= 4280000000ull);
		assert_true(got[1][i].rx_ns == got[1][i].id * 10000ull);
	}
}

/*
 * A constant delay takes netem's short way (netem_enqueue_plain); with
 * the short ways off the same profile goes the whole way. The two give
 * the same frames at the same times, and refuse the same ones at the
 * limit (1,000 in flight for a limit of 300).
 */
static void
test_plain_enqueue(void **state)
{
	(void)state;
	run(0, "delay 10ms limit 300", ST_ALL, 3000, 10000);
	shp_netem_short_ways = false;
	run(1, "delay 10ms limit 300", ST_ALL, 3000, 10000);
	shp_netem_short_ways = true;
	compare(3000, false, true);   /* refused ones: not each out once */
	assert_true(limit_drops[0] > 1000);
	assert_int_equal(limit_drops[0], limit_drops[1]);
	assert_int_equal(nb_got[0] + limit_drops[0], 3000);
}

/* 2,000 frames, 10 us apart, through FIRST and, from frame 1,000 on,
 * `delay 10ms loss 30%` (a change mid-stream), drained: run idx. */
static void
run_then_lossy(int idx, const char *first)
{
	char err[SHP_ERR_LEN];
	struct shp_netem_conf *lossy = shp_netem_parse("delay 10ms loss 30%",
						       err);
	struct shp_rig r;
	uint64_t i;

	assert_non_null(lossy);
	run_idx = idx;
	nb_got[idx] = 0;
	shp_rig_chain(&r, first);
	r.on_pkt = record;
	for (i = 0; i < 2000; i++) {
		struct rte_mbuf *m = mk(i, i * 10000);

		if (i == 1000)
			assert_non_null(r.root->ops->change(r.root, lossy));
		shp_rig_enqueue_at(&r, i * 10000, &m, 1);
		shp_rig_poll(&r);
	}
	shp_rig_drain(&r);
	/* the rig frees its conf, not the one pushed */
	r.root->ops->change(r.root, NULL);
	shp_rig_fini(&r);
	shp_netem_conf_free(lossy);
}

/*
 * The short way leaves nothing behind that the whole way would not: after
 * a change to a lossy profile (its arrival numbers and chains start
 * again) the very frames are lost whichever way the first profile went.
 */
static void
test_plain_then_lossy(void **state)
{
	(void)state;
	run_then_lossy(0, "netem delay 10ms");
	shp_netem_short_ways = false;
	run_then_lossy(1, "netem delay 10ms");
	shp_netem_short_ways = true;
	compare(2000, false, true);   /* the lost ones: not each out once */
	assert_true(nb_got[0] > 1500 && nb_got[0] < 1900);
}

/*
 * Profiles that only draw (loss of every model, delay with jitter, its
 * correlation, a table) take netem's short way (netem_is_drawn): the same
 * frames at the same times, and the same refused at the limit, as the
 * whole way it skips (shp_netem_short_ways off), stored or not. Copies
 * made by an earlier netem draw from the copy keys either way.
 */
static void
drawn_same(const char *args, enum st_mode mode, uint64_t n, uint64_t gap)
{
	shp_netem_short_ways = false;
	run(0, args, mode, n, gap);
	shp_netem_short_ways = true;
	run(1, args, mode, n, gap);
	compare(n, false, true);   /* lost ones: not each out once */
	assert_int_equal(limit_drops[0], limit_drops[1]);
	assert_true(nb_got[0] < n);
}

static void
test_drawn_enqueue(void **state)
{
	static const char *const profiles[] = {
		"delay 10ms 1ms loss 1%",
		"delay 5ms 2ms 30% loss 10% 25%",
		"delay 2ms 1ms distribution normal loss gemodel 5% 20% 60% 1%",
		"delay 3ms 1ms loss state 2% 30% 10% 1%",
		"delay 1ms 500us loss pattern 1 7",
		"delay 4ms 1ms limit 250 loss 5%",
	};
	struct shp_rig r;
	size_t i;

	(void)state;
	for (i = 0; i < RTE_DIM(profiles); i++) {
		drawn_same(profiles[i], ST_OFF, 20000, 1000);
		drawn_same(profiles[i], ST_AFTER, 20000, 1000);
	}
	assert_true(limit_drops[0] > 0);   /* the last one, at its limit */

	/* copies from a netem below: the same whichever way */
	for (i = 0; i < 2; i++) {
		shp_netem_short_ways = i == 1;
		run_idx = (int)i;
		nb_got[i] = 0;
		shp_rig_chain(&r, "netem duplicate 30%",
			      "netem delay 2ms 1ms loss 20%");
		r.on_pkt = record;
		shp_rig_stream(&r, 5000, 1000, mk);
		shp_rig_drain(&r);
		shp_rig_fini(&r);
	}
	shp_netem_short_ways = true;
	assert_int_equal(nb_got[0], nb_got[1]);
	assert_memory_equal(got[0], got[1], nb_got[0] * sizeof(got[0][0]));
	/* copies left too: 10% more out than the 80% of the 5,000
	 * originals that loss spares */
	assert_true(nb_got[0] > 4000 * 1.1);
}

static void
test_reorder_and_ties(void **state)
{
	(void)state;
	/* reorder sends at `now`, into the tfifo as mbufs, on the same 1 us
	 * grid as the delayed ones' times: ties between a stored frame and
	 * an mbuf, broken by arrival */
	same("delay 1ms reorder 25% gap 3", 20000, 1000, false, false);
	/* 8 arrivals per ns: equal send times within the store */
	same("delay 1ms", 6000, 0, false, false);
	same("delay 1ms 100us noreorder rate 500mbit", 20000, 5000, false,
	     false);
	same("delay 3ms slot 10us 30us packets 20", 20000, 1500, false,
	     false);
}

static void
test_dup_corrupt(void **state)
{
	(void)state;
	same("delay 5ms 1ms duplicate 30%", 20000, 1500, true, false);
	same("delay 5ms 1ms duplicate 30% corrupt 20% loss 5%", 20000, 1500,
	     true, true);
}

/* ------------------------------------------------- the time queue alone */

static struct rte_mbuf *
tq_pkt(uint32_t id, uint16_t len, uint64_t tts)
{
	struct rte_mbuf *m = shp_rig_pkt(len, 0, 0);
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t j;

	memcpy(d, &id, sizeof(id));
	for (j = 4; j < len; j++)
		d[j] = (uint8_t)(id * 7 + j);
	shp_meta(m)->time_to_send = tts;
	return m;
}

/* frames of [lo, hi) that mk makes storable (up to 256 bytes) */
static uint32_t
storable(uint32_t lo, uint32_t hi)
{
	uint32_t i, n = 0;

	for (i = lo; i < hi; i++)
		n += sizes[i % RTE_DIM(sizes)] <= 256;
	return n;
}

/* at the threshold stored, one byte over not; multi-segment never */
static void
test_threshold_and_segments(void **state)
{
	struct shp_tq q;
	struct rte_mbuf *m, *seg, *out[8];
	uint64_t now = 1000000;

	(void)state;
	assert_true(shp_tq_init(&q, 4096, 4096, SOCKET_ID_ANY));
	assert_true(shp_tq_store_init(&q, 1 << 20, shp_rig_pool));
	shp_tq_set_horizon(&q, 1000000, 0);
	shp_tq_store_set(&q, 256);
	shp_tq_insert(&q, tq_pkt(1, 256, now + 500000), now);
	shp_tq_insert(&q, tq_pkt(2, 257, now + 500001), now);
	/* 2 x 100 bytes in two segments */
	m = tq_pkt(3, 100, now + 500002);
	seg = tq_pkt(4, 100, 0);
	assert_int_equal(rte_pktmbuf_chain(m, seg), 0);
	shp_tq_insert(&q, m, now);
	assert_int_equal(shp_tq_dequeue_due(&q, now, out, 8), 0);
	assert_int_equal(q.st_stats.frames, 1);
	assert_int_equal(q.qlen, 3);
	assert_int_equal(q.backlog, 256 + 257 + 200);
	assert_int_equal(shp_tq_dequeue_due(&q, now + 500002, out, 8), 3);
	assert_int_equal(q.st_stats.frames, 0);
	assert_int_equal(q.backlog, 0);
	assert_int_equal(out[0]->pkt_len, 256);
	assert_int_equal(*rte_pktmbuf_mtod(out[0], uint32_t *), 1);
	assert_int_equal(out[1]->pkt_len, 257);
	assert_ptr_equal(out[2], m);          /* kept: the same chain */
	assert_int_equal(out[2]->nb_segs, 2);
	assert_int_equal(out[2]->pkt_len, 200);
	rte_pktmbuf_free_bulk(out, 3);
	shp_tq_fini(&q);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/* frame id's length in the two tests below */
static uint16_t
len_mixed(uint32_t id)
{
	return (uint16_t)(64 + id % 100);
}

static uint16_t
len_line(uint32_t id)
{
	return id % 7 == 3 ? 1500 : 64;
}

/*
 * out[0..k), released at now: each due, after the one before it in
 * (time, arrival) order (*last, *last_id: the one before; first: none),
 * and frame id as tq_pkt made it, of len_of(id) bytes (its first, one
 * in the middle and its last checked).
 */
static void
check_out(struct rte_mbuf **out, uint16_t k, uint64_t now, uint64_t *last,
	  uint32_t *last_id, bool first, uint16_t (*len_of)(uint32_t))
{
	uint16_t i;

	for (i = 0; i < k; i++) {
		struct shp_meta *meta = shp_meta(out[i]);
		uint32_t id = *rte_pktmbuf_mtod(out[i], uint32_t *);
		uint16_t len = len_of(id);

		assert_true(meta->time_to_send <= now);
		assert_true(meta->time_to_send > *last ||
			    (meta->time_to_send == *last && id > *last_id) ||
			    (first && i == 0));
		assert_int_equal(out[i]->pkt_len, len);
		assert_int_equal(*rte_pktmbuf_mtod_offset(out[i], uint8_t *,
							  10),
				 (uint8_t)(id * 7 + 10));
		assert_int_equal(*rte_pktmbuf_mtod_offset(out[i], uint8_t *,
							  len - 1),
				 (uint8_t)(id * 7 + len - 1));
		*last = meta->time_to_send;
		*last_id = id;
	}
}

/*
 * A store of two chunks under a queue of up to 2000 frames due in a
 * jittered order: chunks are recycled many times over (wrap-around), the
 * frames the store has no room for keep their mbufs (store_full), and
 * everything leaves in (time, arrival) order with its bytes.
 */
static void
test_store_full_and_recycled(void **state)
{
	struct shp_tq q;
	struct rte_mbuf *out[32];
	uint64_t now = 1000000, x = 88172645463325252ull, last = 0;
	uint32_t in = 0, outn = 0, last_id = 0;
	uint64_t stored_total = 0;

	(void)state;
	assert_true(shp_tq_init(&q, 4096, 8192, SOCKET_ID_ANY));
	assert_true(shp_tq_store_init(&q, 2 << 16, shp_rig_pool));
	shp_tq_set_horizon(&q, 2000000, 1000000);
	shp_tq_store_set(&q, 256);
	while (outn < 200000) {
		uint16_t k;

		if (in < 200000 && q.qlen < 2000) {
			uint64_t tts = now + 1000000 +
				shp_rig_xorshift(&x) % 500000;
			shp_tq_insert(&q, tq_pkt(in, 64 + in % 100, tts),
				      now);
			in++;
		}
		now += 500;
		k = shp_tq_dequeue_due(&q, now, out, RTE_DIM(out));
		check_out(out, k, now, &last, &last_id, outn == 0, len_mixed);
		outn += k;
		rte_pktmbuf_free_bulk(out, k);
	}
	assert_int_equal(q.qlen, 0);
	assert_int_equal(q.st_stats.frames, 0);
	assert_true(q.st_stats.full > 0);            /* it ran full */
	assert_true(q.st_stats.hwm <= 2 << 16);      /* within its region */
	/* what went through the store: many times what it holds at once */
	stored_total = in - q.st_stats.full - q.to_tfifo;
	print_message("  %lu stored, %lu kept as mbufs (full), %lu tfifo\n",
		      (unsigned long)stored_total,
		      (unsigned long)q.st_stats.full,
		      (unsigned long)q.to_tfifo);
	assert_true(stored_total > 10 * ((2u << 16) / 112));
	shp_tq_fini(&q);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/*
 * The line (netem_tq.c): frames in time order are read from the store as
 * written, with no calendar entry. A constant delay, 64-byte frames and
 * one 1500-byte frame in seven (kept as an mbuf, in the calendar: the two
 * merged on every dequeue) through a store of 12 chunks that the line
 * wraps around many times; then the same with jitter, which never makes
 * the run the line waits for. Every frame leaves once, in (time,
 * arrival) order, with its bytes; the pool is full at the end.
 */
static void
line_run(bool jitter, uint32_t *max_line, uint32_t *max_cal)
{
	struct shp_tq q;
	struct rte_mbuf *out[32];
	uint64_t now = 1000000, x = 88172645463325252ull, last = 0;
	uint32_t in = 0, outn = 0, i, last_id = 0, total = 60000;

	assert_true(shp_tq_init(&q, 4096, 8192, SOCKET_ID_ANY));
	assert_true(shp_tq_store_init(&q, 12u << 16, shp_rig_pool));
	shp_tq_set_horizon(&q, 300000, jitter ? 100000 : 0);
	shp_tq_store_set(&q, 256);
	*max_line = *max_cal = 0;
	while (outn < total) {
		uint16_t k;

		/* 3 arrivals every 200 ns: ~3,000 in flight for 200 us */
		for (i = 0; i < 3 && in < total; i++, in++) {
			uint64_t tts = now + 200000 +
				(jitter ? shp_rig_xorshift(&x) % 100000 : 0);

			shp_tq_insert(&q, tq_pkt(in, in % 7 == 3 ? 1500 : 64,
						 tts), now);
		}
		now += 200;
		k = shp_tq_dequeue_due(&q, now, out, RTE_DIM(out));
		*max_line = RTE_MAX(*max_line, q.ln_n);
		*max_cal = RTE_MAX(*max_cal, q.c_len);
		check_out(out, k, now, &last, &last_id, outn == 0, len_line);
		outn += k;
		rte_pktmbuf_free_bulk(out, k);
	}
	assert_int_equal(q.qlen, 0);
	assert_int_equal(q.ln_n, 0);
	assert_int_equal(q.st_stats.frames, 0);
	assert_true(q.st_stats.hwm <= 12u << 16);
	/* the region is a tenth of what went through it */
	print_message("  %lu kept as mbufs (store full), hwm %lu\n",
		      (unsigned long)q.st_stats.full,
		      (unsigned long)q.st_stats.hwm);
	assert_true(q.st_stats.full < total / 100);
	shp_tq_fini(&q);
	shp_rig_assert_pool_full(shp_rig_pool);
}

static void
test_line(void **state)
{
	uint32_t line, cal;

	(void)state;
	line_run(false, &line, &cal);
	print_message("  constant delay: at most %u in the line, %u in the "
		      "calendar\n", line, cal);
	assert_true(line > 2000);       /* the 64-byte frames */
	assert_true(cal > 300 && cal < 1000);   /* the 1500-byte ones */
	line_run(true, &line, &cal);
	print_message("  jitter: at most %u in the line, %u in the "
		      "calendar\n", line, cal);
	assert_int_equal(line, 0);
	assert_true(cal > 2000);
}

/*
 * The line's head through peek, pop, unpop and the head's time (what
 * slotted netem and the offline tool use), then a flush with frames in
 * the line: peek rebuilds the head where it stands (the tfifo's head),
 * pops come in order, an unpop puts the head back, and flush frees
 * every record and the line's chunks.
 */
static void
test_line_peek_pop_flush(void **state)
{
	struct shp_tq q;
	struct rte_mbuf *m, *again;
	uint64_t now = 1000000, tts;
	uint32_t i;

	(void)state;
	assert_true(shp_tq_init(&q, 4096, 8192, SOCKET_ID_ANY));
	assert_true(shp_tq_store_init(&q, 8u << 16, shp_rig_pool));
	shp_tq_set_horizon(&q, 1000000, 0);
	shp_tq_store_set(&q, 256);
	for (i = 0; i < 1000; i++)
		shp_tq_insert(&q, tq_pkt(i, 64, now + 1000000 + i), now);
	assert_true(shp_tq_head_time(&q, &tts));
	assert_true(tts == now + 1000000);
	assert_true(q.ln_n == 1000 - SHP_TQ_LINE_RUN + 1);
	assert_int_equal(q.st_stats.frames, 1000);
	/* past the run, the line: pop past the calendar's frames into it */
	for (i = 0; i < SHP_TQ_LINE_RUN + 10; i++) {
		m = shp_tq_peek(&q);
		assert_non_null(m);
		assert_int_equal(*rte_pktmbuf_mtod(m, uint32_t *), i);
		assert_ptr_equal(shp_tq_peek(&q), m);   /* stays queued */
		assert_ptr_equal(shp_tq_pop(&q), m);
		if (i == SHP_TQ_LINE_RUN + 5) {
			shp_tq_unpop(&q, m);
			assert_true(shp_tq_head_time(&q, &tts));
			assert_true(tts == now + 1000000 + i);
			again = shp_tq_pop(&q);
			assert_ptr_equal(again, m);
		}
		rte_pktmbuf_free(m);
	}
	assert_int_equal(q.qlen, 1000 - SHP_TQ_LINE_RUN - 10);
	assert_true(q.ln_n == q.qlen);
	/* a calendar frame behind the line's head: the head still first */
	shp_tq_insert(&q, tq_pkt(5000, 64, now + 1000000 + 500), now);
	assert_true(shp_tq_head_time(&q, &tts));
	assert_true(tts == now + 1000000 + SHP_TQ_LINE_RUN + 10);
	assert_int_equal(shp_tq_flush(&q), 1000 - SHP_TQ_LINE_RUN - 10 + 1);
	assert_int_equal(q.ln_n, 0);
	assert_int_equal(q.st_stats.frames, 0);
	/* the line's chunks are back: at most the calendar's is held */
	assert_true(q.st_stats.bytes <= 1u << 16);
	shp_tq_fini(&q);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/* ---------------------------------------- reset, change, pool empty */

static void
test_reset_and_change(void **state)
{
	char err[SHP_ERR_LEN];
	struct shp_netem_conf *other = shp_netem_parse("delay 1ms store off",
						       err);
	struct rte_mbuf *m[64];
	struct shp_rig r;
	uint64_t i;

	(void)state;
	/* reset with frames stored: counted as flushed, pool full again */
	shp_rig_chain(&r, "netem delay 1s store 256 after 0");
	for (i = 0; i < 64; i++)
		m[i] = mk(i, 0);
	assert_int_equal(shp_rig_enqueue_at(&r, 0, m, 64), 64);
	assert_int_equal(shp_rig_dequeue_at(&r, 1, m, 64), 0);
	assert_true(SHP_XSTAT(r.c, "netem", "store_frames") > 0);
	shp_qdisc_reset_all(r.root, &r.ctx);
	assert_int_equal(r.c->drops[SHP_DROP_FLUSHED], 64);
	shp_rig_fini(&r);

	/* a change with frames stored: they leave at their times, rebuilt,
	 * while the new conf's keep their mbufs (and, earlier, go first) */
	run_idx = 0;
	nb_got[0] = 0;
	shp_rig_chain(&r, "netem delay 10ms store 256 after 0");
	r.on_pkt = record;
	for (i = 0; i < 32; i++)
		m[i] = mk(i, 0);
	shp_rig_enqueue_at(&r, 0, m, 32);
	shp_rig_poll(&r);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"),
			 storable(0, 32));
	assert_non_null(r.root->ops->change(r.root, other));
	for (i = 32; i < 64; i++)
		m[i - 32] = mk(i, 1000);
	shp_rig_enqueue_at(&r, 1000, m, 32);
	shp_rig_poll(&r);
	/* store off for the new ones */
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"),
			 storable(0, 32));
	assert_int_equal(SHP_XSTAT(r.c, "netem", "queued"), 64);
	shp_rig_drain(&r);
	assert_int_equal(nb_got[0], 64);
	for (i = 0; i < 64; i++) {
		/* the new conf's (32..63, due at 1 ms) before the old */
		uint32_t want = i < 32 ? (uint32_t)i + 32 : (uint32_t)i - 32;
		struct rte_mbuf *ref = mk(want, 0);

		assert_int_equal(got[0][i].id, want);
		assert_true(got[0][i].sum == fnv(rte_pktmbuf_mtod(ref,
			uint8_t *), ref->pkt_len));
		assert_int_equal(got[0][i].rx_ns, i < 32 ? 1000 : 0);
		rte_pktmbuf_free(ref);
	}
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 0);
	/* the rig frees its conf, not the one pushed */
	r.root->ops->change(r.root, NULL);
	shp_rig_fini(&r);
	shp_netem_conf_free(other);
}

/* records of a 64-byte frame a 64 KiB chunk holds, about */
#define ST_CHUNK_RECS (65536 / 112 + 1)   /* plain records of 64-byte frames */

/* n frames of 64 bytes into r at t, in bursts */
static void
fill64(struct shp_rig *r, uint64_t t, uint32_t n)
{
	struct rte_mbuf *m[32];
	uint32_t done = 0, i;

	while (done < n) {
		uint16_t k = (uint16_t)RTE_MIN(32u, n - done);

		for (i = 0; i < k; i++) {
			m[i] = shp_rig_pkt(64, 0, t);
			assert_non_null(m[i]);
		}
		assert_int_equal(shp_rig_enqueue_at(r, t, m, k), k);
		done += k;
	}
	shp_rig_poll(r);   /* the staged ones placed, the gauges synced */
}

/*
 * `store ... after N`: the first N frames wait in their mbufs, the rest
 * are stored; as mbufs leave, new frames take their place, unless the
 * line holds 2N (its mbufs would leave cold). The default is
 * SHP_NETEM_STORE_AFTER_DEFAULT, at most a quarter of the default limit
 * (half the pool).
 */
static void
test_store_after(void **state)
{
	struct rte_mbuf *m[64];
	struct shp_rig r;
	uint32_t def = RTE_MIN((uint32_t)SHP_NETEM_STORE_AFTER_DEFAULT,
			       shp_netem_default_limit(POOL_SIZE) / 4);
	unsigned int k;

	(void)state;
	shp_rig_chain(&r, "netem delay 1s store 256 after 100");
	fill64(&r, 0, 300);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "queued"), 300);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 200);
	/* the 100 mbufs (the first) leave first: 100 places for mbufs */
	k = 0;
	while (k < 100) {
		uint16_t n = shp_rig_dequeue_at(&r, 1000000000ull, m,
						RTE_MIN(64u, 100 - k));

		assert_true(n > 0);
		rte_pktmbuf_free_bulk(m, n);
		k += n;
	}
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 200);
	/* no mbuf waits now, but the line holds 2 x 100: 10 more are
	 * stored (a dequeue before anything is due places them) */
	for (k = 0; k < 10; k++)
		m[k] = shp_rig_pkt(64, 0, 1000000000ull);
	assert_int_equal(shp_rig_enqueue_at(&r, 1000000000ull, m, 10), 10);
	assert_int_equal(shp_rig_dequeue_at(&r, 999999999ull, m, 64), 0);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "queued"), 210);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 210);
	shp_qdisc_reset_all(r.root, &r.ctx);
	/* a shallow line again: 100 in mbufs, 40 stored */
	fill64(&r, 2000000000ull, 140);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 40);
	shp_qdisc_reset_all(r.root, &r.ctx);
	shp_rig_fini(&r);

	/* the default: a line shallower than it holds only mbufs */
	shp_rig_chain(&r, "netem delay 1s");
	fill64(&r, 0, def);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 0);
	fill64(&r, 0, 500);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 500);
	shp_qdisc_reset_all(r.root, &r.ctx);
	shp_rig_fini(&r);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/*
 * The store's bound follows the profile (issue 25): a chain started with
 * `delay 10ms rate 10mbit` (a bound of 4 MiB, 64 chunks: ~37,400 frames
 * of 64 bytes) changed to `delay 1s` (no rate: the default bound, 512
 * MiB) stores 45,000 frames, none kept as an mbuf (store_full 0): the
 * first profile's bound would have kept ~7,500. Changed back to the small
 * profile with those stored, the next 1,000 frames keep their mbufs (the
 * bound is below what is in use) but for what the chunk being written
 * still holds, and once the store drained, frames are stored again. Every frame leaves; the pool is full at the end.
 */
static void
test_change_resizes_the_store(void **state)
{
	char err[SHP_ERR_LEN];
	struct shp_netem_conf *big = shp_netem_parse("delay 1s store 256 "
						     "after 0", err);
	struct shp_netem_conf *small = shp_netem_parse("delay 10ms rate 10mbit "
						       "store 256 after 0",
						       err);
	struct shp_rig r;
	uint64_t full;

	(void)state;
	assert_non_null(big);
	assert_non_null(small);
	shp_rig_chain(&r, "netem delay 10ms rate 10mbit store 256 after 0");
	assert_non_null(r.root->ops->change(r.root, big));
	fill64(&r, 0, 45000);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_full"), 0);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 45000);
	assert_true(SHP_XSTAT(r.c, "netem", "store_bytes") > (4u << 20));
	/* back to the small bound, 45,000 frames stored above it */
	r.root->ops->change(r.root, small);
	fill64(&r, 1000, 1000);
	/* all but what the chunk being written still had room for */
	full = SHP_XSTAT(r.c, "netem", "store_full");
	assert_true(full >= 1000 - ST_CHUNK_RECS && full <= 1000);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"),
			 45000 + 1000 - full);
	shp_rig_drain(&r);
	assert_int_equal(r.out, 46000);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 0);
	/* under its bound again: stored */
	fill64(&r, r.ctx.now, 100);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 100);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_full"), full);
	shp_rig_drain(&r);
	assert_int_equal(r.out, 46100);
	/* the rig frees its conf, not the ones pushed */
	r.root->ops->change(r.root, NULL);
	shp_rig_fini(&r);
	shp_netem_conf_free(big);
	shp_netem_conf_free(small);
}

/* n frames of len bytes into r at t, in bursts */
static void
fill_len(struct shp_rig *r, uint64_t t, uint32_t n, uint16_t len)
{
	struct rte_mbuf *m[32];
	uint32_t done = 0, i;

	while (done < n) {
		uint16_t k = (uint16_t)RTE_MIN(32u, n - done);

		for (i = 0; i < k; i++) {
			m[i] = shp_rig_pkt(len, 0, t);
			assert_non_null(m[i]);
		}
		shp_rig_enqueue_at(r, t, m, k);
		done += k;
	}
	shp_rig_poll(r);
}

/*
 * Full-size frames (issue 61): by default the store takes frames longer
 * than its size once half of the default limit (half the pool: 4,096 of
 * 16,384) waits in mbufs, so a line longer than the pool can carry is
 * carried (12,000 frames of 1500 bytes, none dropped); a `store` given
 * keeps its meaning: frames over it keep their mbufs, and the limit
 * drops what the pool cannot hold.
 */
static void
test_big_frames_past_depth(void **state)
{
	uint64_t lim = POOL_SIZE / 2, depth = lim / 2, stored;
	struct shp_rig r;

	(void)state;
	shp_rig_chain(&r, "netem delay 1s");
	fill_len(&r, 0, 12000, 1500);
	assert_int_equal(r.c->drops[shp_drop_index("netem_limit")], 0);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "queued"), 12000);
	stored = SHP_XSTAT(r.c, "netem", "store_frames");
	assert_true(stored >= 12000 - depth - 32 && stored <= 12000 - depth);
	assert_int_equal(shp_rig_drain(&r), 12000);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 0);
	shp_rig_fini(&r);

	shp_rig_chain(&r, "netem delay 1s store 256");
	fill_len(&r, 0, 12000, 1500);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 0);
	assert_int_equal(r.c->drops[shp_drop_index("netem_limit")],
			 12000 - lim);
	assert_int_equal(shp_rig_drain(&r), lim);
	shp_rig_fini(&r);
}

/*
 * The store's bound grows with the rate in front (issue 61): `delay 1s
 * limit 9000` bounds it by its limit, to its least, 64 chunks of about
 * 40 records of 1500-byte frames (the rest keep their mbufs:
 * store_full), and so does a link of 1 Mbit/s; a link of 10 Gbit/s
 * makes it hold all 8,000. A rate stage's rate the stage is told of at
 * run time counts the same, the tightest of the two.
 */
static uint64_t
store_full_at(uint64_t line, uint64_t gate_later)
{
	struct shp_stage_env env = { .socket = SOCKET_ID_ANY,
				     .line_rate = line };
	struct shp_rig r;
	uint64_t full;

	shp_rig_init(&r, 0);
	r.env = &env;
	shp_rig_add(&r, "netem", "delay 1s limit 9000");
	fill_len(&r, 0, 100, 1500);
	env.gate_rate = gate_later;
	fill_len(&r, 0, 7900, 1500);
	full = SHP_XSTAT(r.c, "netem", "store_full");
	assert_int_equal(r.c->drops[shp_drop_index("netem_limit")], 0);
	assert_int_equal(shp_rig_drain(&r), 8000);
	shp_rig_fini(&r);
	return full;
}

static void
test_store_follows_the_rate_in_front(void **state)
{
	uint64_t depth = POOL_SIZE / 4, full, gated;

	(void)state;
	/* 40 to 42 records a chunk (with or without their st_ext), two
	 * writers' chunks (the calendar's, the line's) */
	full = store_full_at(0, 0);
	assert_true(full >= 8000 - depth - 64 * 42 - 42 &&
		    full <= 8000 - depth - 63 * 40);
	/* (a chunk's worth either way: where the bound falls in one) */
	gated = store_full_at(1000000 / 8, 0);
	assert_true(gated + 42 >= full && gated <= full + 42);
	assert_int_equal(store_full_at(10000000000ull / 8, 0), 0);
	/* the tightest: a rate stage of 1 Mbit/s on a 10 Gbit/s link,
	 * told of at run time, bounds it as the link did; one of 10
	 * Gbit/s on an unknown link lets it hold them all */
	gated = store_full_at(10000000000ull / 8, 1000000 / 8);
	assert_true(gated + 42 >= full && gated <= full + 42);
	assert_int_equal(store_full_at(0, 10000000000ull / 8), 0);
}

/* Due while the pool is empty: dropped as store_no_mbuf, never lost
 * silently; the rest leave when mbufs are back. */
static void
test_pool_empty_at_release(void **state)
{
	static struct rte_mbuf *hold[POOL_SIZE];
	struct rte_mbuf *m[64];
	struct shp_rig r;
	unsigned int nh = 0, i, st = storable(0, 64);
	uint64_t dropped, left;

	(void)state;
	shp_rig_chain(&r, "netem delay 1ms store 256 after 0");
	for (i = 0; i < 64; i++)
		m[i] = mk(i, 0);
	shp_rig_enqueue_at(&r, 0, m, 64);
	assert_int_equal(shp_rig_dequeue_at(&r, 1, m, 64), 0);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), st);
	while (nh < POOL_SIZE && (hold[nh] = rte_pktmbuf_alloc(shp_rig_pool))
	       != NULL)
		nh++;
	/* leave 10 mbufs */
	rte_pktmbuf_free_bulk(hold + nh - 10, 10);
	nh -= 10;
	/* all due in one call: what leaves is not back in the pool before
	 * the last is rebuilt */
	left = shp_rig_dequeue_at(&r, 1000001, m, 64);
	dropped = r.c->drops[shp_drop_index("store_no_mbuf")];
	assert_int_equal(left + dropped, 64);
	assert_int_equal(left, 10 + 64 - st);
	assert_int_equal(dropped, st - 10);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "queued"), 0);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "store_frames"), 0);
	rte_pktmbuf_free_bulk(m, (unsigned int)left);
	rte_pktmbuf_free_bulk(hold, nh);
	shp_rig_fini(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jitter),
		cmocka_unit_test(test_long_waits),
		cmocka_unit_test(test_plain_enqueue),
		cmocka_unit_test(test_plain_then_lossy),
		cmocka_unit_test(test_drawn_enqueue),
		cmocka_unit_test(test_reorder_and_ties),
		cmocka_unit_test(test_dup_corrupt),
		cmocka_unit_test(test_threshold_and_segments),
		cmocka_unit_test(test_store_full_and_recycled),
		cmocka_unit_test(test_line),
		cmocka_unit_test(test_line_peek_pop_flush),
		cmocka_unit_test(test_reset_and_change),
		cmocka_unit_test(test_store_after),
		cmocka_unit_test(test_change_resizes_the_store),
		cmocka_unit_test(test_big_frames_past_depth),
		cmocka_unit_test(test_store_follows_the_rate_in_front),
		cmocka_unit_test(test_pool_empty_at_release),
	};

	shp_rig_env("netem_store", POOL_SIZE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
