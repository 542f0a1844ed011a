/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the port refuses, the RX bypass and RX straight into netem
 * (lib/core/shp_egress.h: shp_pending, shp_egress_bypass,
 * shp_egress_feed), on a virtual clock and a port that
 * takes what the test lets it: what it refused leaves first at the next
 * round, in order, counted once, and is not charged again by the gate
 * that let it go; a burst sent through the bypass is counted in its band
 * as an enqueue and a dequeue would have counted it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "shp_chain.h"
#include "shp_egress.h"
#include "shp_rig.h"

#define LEN0 100   /* packet i is LEN0 + i bytes, i its first byte */

static const struct shp_kind_env env = { .bands = 3, .ring_size = 1024 };

/* The port: it takes up to `room` packets (then none), and notes what. */
struct port {
	uint64_t now;                /* the virtual clock */
	unsigned int room;
	struct shp_port_ctr *pc;
	uint8_t seq[256];            /* what it took, in order */
	unsigned int nb;
	unsigned int fresh, gated;   /* tx_fresh calls, and gated ones */
};

static uint64_t
port_now(void *arg)
{
	return ((struct port *)arg)->now;
}

static uint16_t
port_take(struct port *p, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t i, k = n < p->room ? n : (uint16_t)p->room;

	for (i = 0; i < k; i++) {
		p->seq[p->nb++] = *rte_pktmbuf_mtod(pkts[i], uint8_t *);
		p->pc->tx_packets++;
		p->pc->tx_bytes += rte_pktmbuf_pkt_len(pkts[i]);
	}
	p->room -= k;
	rte_pktmbuf_free_bulk(pkts, k);
	return k;
}

static uint16_t
port_tx(void *arg, struct rte_mbuf **pkts, uint16_t n, uint64_t now,
	uint64_t bytes, uint64_t shed)
{
	(void)now;
	(void)bytes;
	assert_int_equal(shed, 0);   /* nothing is late here */
	return port_take(arg, pkts, n);
}

static uint16_t
port_tx_fresh(void *arg, struct rte_mbuf **pkts, uint16_t n, uint64_t bytes,
	      bool gated)
{
	struct port *p = arg;
	uint64_t sum = 0;
	uint16_t i;

	for (i = 0; i < n; i++) {
		sum += rte_pktmbuf_pkt_len(pkts[i]);
		/* its metadata is not written: nothing may read it */
		assert_int_equal(shp_meta(pkts[i])->rx_ns, 0);
	}
	assert_int_equal(bytes, sum);
	p->fresh++;
	p->gated += gated;
	return port_take(p, pkts, n);
}

/* A chain on port: the queue's default (three bands), tbf when rate is
 * not NULL, netem when delay is not NULL. */
static void
chain_build_netem(struct shp_chain *c, uint16_t port, const char *rate,
		  const char *delay);

static void
chain_build(struct shp_chain *c, uint16_t port, const char *rate)
{
	chain_build_netem(c, port, rate, NULL);
}

static void
chain_build_netem(struct shp_chain *c, uint16_t port, const char *rate,
		  const char *delay)
{
	struct shp_chain_spec spec = { { NULL } };
	struct shp_stage_env senv = { .socket = SOCKET_ID_ANY,
				      .single_producer = true,
				      .ring_size = 1024,
				      .ctr_blocks = shp_rig_ctr,
				      .nb_ctr_blocks = 1 };
	const struct shp_kind *k;
	char err[SHP_ERR_LEN];

	memset(&shp_rig_ctr->port[port], 0, sizeof(shp_rig_ctr->port[port]));
	if (rate != NULL) {
		assert_int_equal(shp_kind_parse("tbf", rate, &env, &k,
						&spec.conf[SHP_SLOT_RATE],
						err), 0);
		spec.kind[SHP_SLOT_RATE] = k;
	}
	if (delay != NULL) {
		assert_int_equal(shp_kind_parse("netem", delay, &env, &k,
						&spec.conf[SHP_SLOT_DELAY],
						err), 0);
		spec.kind[SHP_SLOT_DELAY] = k;
	}
	assert_int_equal(shp_chain_build(c, &spec, shp_rig_pool, port, &senv,
					 NULL, &env), 0);
}

/* Packets first..first+n-1 as RX has them: metadata not written, all in
 * band 1 (prio, band, used set so), *bytes their sum. */
static void
arrivals(struct rte_mbuf **pkts, uint16_t n, uint8_t first, uint8_t *prio,
	 uint8_t *band, uint32_t *used, uint64_t *bytes)
{
	uint16_t i;

	*bytes = 0;
	for (i = 0; i < n; i++) {
		pkts[i] = rte_pktmbuf_alloc(shp_rig_pool);
		assert_non_null(pkts[i]);
		rte_pktmbuf_append(pkts[i], LEN0 + first + i);
		*rte_pktmbuf_mtod(pkts[i], uint8_t *) = first + i;
		memset(shp_meta(pkts[i]), 0, sizeof(struct shp_meta));
		prio[i] = 1;
		band[i] = 1;
		*bytes += LEN0 + first + i;
	}
	*used = 1u << 1;
}

/* What the RX path does with what the bypass left: into the chain's
 * queue, never fed to its root. */
static void
enqueue_rest(struct shp_chain *c, struct rte_mbuf **pkts, uint16_t n,
	     uint8_t *prio, uint8_t *band, uint32_t used, uint64_t bytes,
	     struct shp_ctx *ctx)
{
	shp_egress_rx(c, pkts, n, used, bytes, prio, band, true, false, ctx);
}

static uint64_t
sum_len(uint8_t first, uint8_t n)
{
	return (uint64_t)n * LEN0 + (uint64_t)n * first + n * (n - 1) / 2;
}

static void
assert_seq(const struct port *p, unsigned int n)
{
	unsigned int i;

	assert_int_equal(p->nb, n);
	for (i = 0; i < n; i++)
		assert_int_equal(p->seq[i], i);
}

/*
 * A round's refusal: what the port refused goes first next round, in
 * order, and nothing new is dequeued while the port still refuses some;
 * each packet is counted once (the band's dequeue, the port's TX).
 */
static void
test_round_refused(void **state)
{
	struct shp_chain c;
	struct rte_mbuf *pkts[32], *keep[SHP_MAX_BURST];
	struct shp_pending pend = { .pkts = keep };
	struct port p = { .room = 4 };
	const struct shp_egress_io io = { .now = port_now, .tx = port_tx,
					  .arg = &p };
	struct shp_ctx ctx = { .ctr = &shp_rig_ctr->port[0] };
	uint8_t prio[32], band[32];
	struct shp_round r = { 0 };
	const struct shp_band_ctr *bc;
	uint64_t bytes;
	uint32_t used;
	bool behind = false;

	(void)state;
	chain_build(&c, 0, NULL);
	p.pc = ctx.ctr;
	bc = &ctx.ctr->band[1];
	p.now = ctx.now = 1000;
	arrivals(pkts, 10, 0, prio, band, &used, &bytes);
	enqueue_rest(&c, pkts, 10, prio, band, used, bytes, &ctx);
	assert_false(shp_pending_send(&pend, ctx.ctr, &io, 0, &behind));
	shp_egress_round(c.root, &ctx, &io, pkts, 32, 64, 0, false, &r);
	assert_int_equal(r.refused, 6);
	shp_pending_keep_round(&pend, ctx.ctr, pkts, &r);
	assert_int_equal(pend.n, 6);
	assert_int_equal(ctx.ctr->tx_pending, 6);
	assert_int_equal(p.nb, 4);

	/* five more arrive; the port takes three: the round ends there */
	arrivals(pkts, 5, 10, prio, band, &used, &bytes);
	enqueue_rest(&c, pkts, 5, prio, band, used, bytes, &ctx);
	p.room = 3;
	p.now += 50000;
	assert_true(shp_pending_send(&pend, ctx.ctr, &io, 100000, &behind));
	assert_false(behind);
	assert_int_equal(pend.n, 3);
	assert_int_equal(ctx.ctr->tx_pending, 3);
	assert_int_equal(shp_qdisc_qlen_total(c.root), 5);
	/* the port takes nothing, and the oldest is now later than
	 * max_late: the chain is behind */
	p.room = 0;
	p.now += 100000;
	assert_true(shp_pending_send(&pend, ctx.ctr, &io, 100000, &behind));
	assert_true(behind);

	/* the way clears: the rest of them, then the new ones */
	p.room = 100;
	assert_false(shp_pending_send(&pend, ctx.ctr, &io, 100000, &behind));
	assert_int_equal(pend.n, 0);
	assert_int_equal(ctx.ctr->tx_pending, 0);
	assert_int_equal(p.nb, 10);
	shp_egress_round(c.root, &ctx, &io, pkts, 32, 64, 0, false, &r);
	assert_int_equal(r.refused, 0);
	shp_pending_keep_round(&pend, ctx.ctr, pkts, &r);
	assert_int_equal(pend.n, 0);
	assert_seq(&p, 15);
	assert_int_equal(ctx.ctr->tx_packets, 15);
	assert_int_equal(ctx.ctr->tx_bytes, sum_len(0, 15));
	assert_int_equal(ctx.ctr->egress_in, 15);
	assert_int_equal(bc->enqueued, 15);
	assert_int_equal(bc->dequeued, 15);
	assert_int_equal(bc->dequeued_bytes, sum_len(0, 15));
	shp_chain_destroy(&c, &ctx);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/*
 * Without a gate: the bypass sends a burst of one band at once and counts
 * it in the band as an enqueue and a dequeue at the same instant do, on
 * a chain alike that takes the burst the usual way; what the port
 * refuses is left to the caller, for the head of the empty band, and
 * leaves first next round. A burst of two bands, or one while a packet
 * waits, is not bypassed.
 */
static void
test_bypass_counts(void **state)
{
	struct shp_chain a, b;
	struct rte_mbuf *pkts[32], *keep[SHP_MAX_BURST];
	struct shp_pending pend = { .pkts = keep };
	struct port pa = { .room = 100 }, pb = { .room = 100 };
	const struct shp_egress_io ioa = { .now = port_now, .tx = port_tx,
					   .tx_fresh = port_tx_fresh,
					   .arg = &pa };
	const struct shp_egress_io iob = { .now = port_now, .tx = port_tx,
					   .arg = &pb };
	struct shp_ctx ca = { .ctr = &shp_rig_ctr->port[0] };
	struct shp_ctx cb = { .ctr = &shp_rig_ctr->port[1] };
	uint8_t prio[32], band[32];
	struct shp_round r = { 0 };
	uint64_t bytes;
	uint32_t used;
	uint16_t k;

	(void)state;
	chain_build(&a, 0, NULL);
	chain_build(&b, 1, NULL);
	pa.pc = ca.ctr;
	pb.pc = cb.ctr;
	pa.now = pb.now = ca.now = cb.now = 1000;

	/* all of it through */
	arrivals(pkts, 8, 0, prio, band, &used, &bytes);
	k = shp_egress_bypass(&a, &pend, &ioa, pkts, 8, used, &bytes, prio,
			      band, &ca);
	assert_int_equal(k, 8);
	assert_int_equal(bytes, 0);
	assert_int_equal(pa.fresh, 1);
	assert_int_equal(pa.gated, 0);
	arrivals(pkts, 8, 0, prio, band, &used, &bytes);
	enqueue_rest(&b, pkts, 8, prio, band, used, bytes, &cb);
	shp_egress_round(b.root, &cb, &iob, pkts, 32, 64, 0, false, &r);
	assert_seq(&pa, 8);
	assert_seq(&pb, 8);
	assert_memory_equal(&ca.ctr->band[1], &cb.ctr->band[1],
			    sizeof(struct shp_band_ctr));
	assert_int_equal(ca.ctr->band[1].enqueued_bytes, sum_len(0, 8));
	assert_int_equal(ca.ctr->band[1].dequeued, 8);
	assert_int_equal(ca.ctr->egress_in, cb.ctr->egress_in);
	assert_int_equal(ca.ctr->tx_packets, cb.ctr->tx_packets);
	assert_int_equal(ca.ctr->tx_bytes, cb.ctr->tx_bytes);

	/* the port takes 5 of the next 8: 3 are the caller's, with their
	 * bytes, and leave first */
	pa.room = 5;
	arrivals(pkts, 8, 8, prio, band, &used, &bytes);
	k = shp_egress_bypass(&a, &pend, &ioa, pkts, 8, used, &bytes, prio,
			      band, &ca);
	assert_int_equal(k, 5);
	assert_int_equal(bytes, sum_len(13, 3));
	assert_int_equal(pend.n, 0);   /* no gate charged them */
	assert_int_equal(ca.ctr->band[1].enqueued, 13);
	assert_int_equal(ca.ctr->band[1].dequeued_bytes, sum_len(0, 13));
	enqueue_rest(&a, pkts + k, 8 - k, prio + k, band + k, used, bytes,
		     &ca);
	/* a burst while they wait goes behind them */
	arrivals(pkts, 2, 16, prio, band, &used, &bytes);
	assert_int_equal(shp_egress_bypass(&a, &pend, &ioa, pkts, 2, used,
					   &bytes, prio, band, &ca), 0);
	assert_int_equal(bytes, sum_len(16, 2));
	enqueue_rest(&a, pkts, 2, prio, band, used, bytes, &ca);
	pa.room = 100;
	shp_egress_round(a.root, &ca, &ioa, pkts, 32, 64, 0, false, &r);
	assert_seq(&pa, 18);
	assert_int_equal(ca.ctr->egress_in, 18);
	assert_int_equal(ca.ctr->band[1].enqueued, 18);
	assert_int_equal(ca.ctr->band[1].dequeued, 18);
	assert_int_equal(ca.ctr->band[1].dequeued_bytes, sum_len(0, 18));
	assert_int_equal(ca.ctr->tx_bytes, sum_len(0, 18));

	/* two bands in a burst: strict priority is the queue's to keep */
	arrivals(pkts, 2, 18, prio, band, &used, &bytes);
	band[1] = prio[1] = 0;
	used |= 1u << 0;
	assert_int_equal(shp_egress_bypass(&a, &pend, &ioa, pkts, 2, used,
					   &bytes, prio, band, &ca), 0);
	assert_int_equal(pa.fresh, 2);
	rte_pktmbuf_free_bulk(pkts, 2);

	shp_chain_destroy(&a, &ca);
	shp_chain_destroy(&b, &cb);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/*
 * Through a gate: the bucket holds 11 packets of LEN0 + 7 bytes or so.
 * The bypass lets 8 go, charged; the port takes 5. The 3 it refused are
 * kept, their metadata written (sent through the gate at that instant),
 * counted in the band once, and leave first at the next round, before
 * anything new, without the gate: the bucket still has tokens for 3 more
 * at the same instant.
 */
static void
test_bypass_gated_refused(void **state)
{
	struct shp_chain c;
	struct rte_mbuf *pkts[32], *keep[SHP_MAX_BURST];
	struct shp_pending pend = { .pkts = keep };
	struct port p = { .room = 5 };
	const struct shp_egress_io io = { .now = port_now, .tx = port_tx,
					  .tx_fresh = port_tx_fresh,
					  .arg = &p };
	struct shp_ctx ctx = { .ctr = &shp_rig_ctr->port[0] };
	const struct shp_band_ctr *bc = &ctx.ctr->band[1];
	uint8_t prio[32], band[32];
	struct shp_round r = { 0 };
	uint64_t bytes, t = 1000000;
	uint32_t used;
	bool behind = false;
	uint16_t k, i;

	(void)state;
	/* 11 x (LEN0 + 0..10) fit, not a twelfth; slow enough that
	 * nothing refills at this scale */
	chain_build(&c, 0, "rate 8kbit burst 1155 limit 100kb");
	p.pc = ctx.ctr;
	p.now = ctx.now = t;
	arrivals(pkts, 8, 0, prio, band, &used, &bytes);
	k = shp_egress_bypass(&c, &pend, &io, pkts, 8, used, &bytes, prio,
			      band, &ctx);
	assert_int_equal(k, 8);
	assert_int_equal(bytes, 0);
	assert_int_equal(p.gated, 1);
	assert_int_equal(p.nb, 5);
	assert_int_equal(pend.n, 3);
	assert_int_equal(ctx.ctr->tx_pending, 3);
	for (i = 0; i < 3; i++) {
		const struct shp_meta *m = shp_meta(pend.pkts[pend.head + i]);

		assert_int_equal(*rte_pktmbuf_mtod(pend.pkts[pend.head + i],
						    uint8_t *), 5 + i);
		assert_int_equal(m->rx_ns, t);
		assert_int_equal(m->time_to_send, t);
		assert_int_equal(m->band, 1);
	}
	assert_int_equal(ctx.ctr->egress_in, 8);
	assert_int_equal(bc->enqueued, 8);
	assert_int_equal(bc->enqueued_bytes, sum_len(0, 8));
	assert_int_equal(bc->dequeued, 8);
	assert_int_equal(bc->dequeued_bytes, sum_len(0, 8));

	/* while they wait nothing bypasses: the next burst queues */
	arrivals(pkts, 1, 8, prio, band, &used, &bytes);
	assert_int_equal(shp_egress_bypass(&c, &pend, &io, pkts, 1, used,
					   &bytes, prio, band, &ctx), 0);
	enqueue_rest(&c, pkts, 1, prio, band, used, bytes, &ctx);

	/* next round, same instant: they go first, then what the bucket
	 * still lets go */
	p.room = 100;
	assert_false(shp_pending_send(&pend, ctx.ctr, &io, 0, &behind));
	shp_egress_round(c.root, &ctx, &io, pkts, 32, 64, 0, false, &r);
	shp_pending_keep_round(&pend, ctx.ctr, pkts, &r);
	assert_seq(&p, 9);
	assert_int_equal(pend.n, 0);
	assert_int_equal(ctx.ctr->tx_pending, 0);
	/* counted once: the bypass's 8 and the queue's 1 */
	assert_int_equal(ctx.ctr->egress_in, 9);
	assert_int_equal(bc->enqueued, 9);
	assert_int_equal(bc->dequeued, 9);
	assert_int_equal(bc->dequeued_bytes, sum_len(0, 9));
	assert_int_equal(ctx.ctr->tx_packets, 9);
	assert_int_equal(ctx.ctr->tx_bytes, sum_len(0, 9));
	/* charged once: tokens for two more (9 and 10), not a third */
	arrivals(pkts, 3, 9, prio, band, &used, &bytes);
	k = shp_egress_bypass(&c, &pend, &io, pkts, 3, used, &bytes, prio,
			      band, &ctx);
	assert_int_equal(k, 2);
	assert_int_equal(bytes, sum_len(11, 1));
	assert_seq(&p, 11);
	rte_pktmbuf_free(pkts[2]);

	/* what the port never took is flushed at the end, counted */
	arrivals(pkts, 1, 12, prio, band, &used, &bytes);
	shp_pending_keep(&pend, ctx.ctr, pkts, 1);
	shp_pending_flush(&pend, &ctx);
	assert_int_equal(pend.n, 0);
	assert_int_equal(ctx.ctr->tx_pending, 0);
	assert_int_equal(ctx.ctr->drops[SHP_DROP_FLUSHED], 1);
	shp_chain_destroy(&c, &ctx);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/*
 * RX straight into netem (shp_egress_feed) against the usual way (the
 * bands, then the round's pull), two chains alike, bursts at 1 us
 * steps: the same packets leave at the same rounds, in the same order,
 * counted alike in the band, egress_in and TX. Not fed: a burst of two
 * bands, a burst while the bands hold a packet, and a chain with a gate
 * on (tbf): the caller then queues them as usual.
 */
static void
test_feed(void **state)
{
	struct shp_chain a, b;
	struct rte_mbuf *pkts[32];
	struct port pa = { .room = 1000 }, pb = { .room = 1000 };
	const struct shp_egress_io ioa = { .now = port_now, .tx = port_tx,
					   .arg = &pa };
	const struct shp_egress_io iob = { .now = port_now, .tx = port_tx,
					   .arg = &pb };
	struct shp_ctx ca = { .ctr = &shp_rig_ctr->port[0] };
	struct shp_ctx cb = { .ctr = &shp_rig_ctr->port[1] };
	uint8_t prio[32], band[32];
	struct shp_round r = { 0 };
	uint64_t bytes, t;
	uint32_t used;
	uint8_t i;

	(void)state;
	chain_build_netem(&a, 0, NULL, "delay 1ms");
	chain_build_netem(&b, 1, NULL, "delay 1ms");
	pa.pc = ca.ctr;
	pb.pc = cb.ctr;
	for (i = 0; i < 8; i++) {
		t = 1000 + 1000ull * i;
		ca.now = cb.now = pa.now = pb.now = t;
		arrivals(pkts, 4, (uint8_t)(4 * i), prio, band, &used, &bytes);
		assert_true(shp_egress_rx(&a, pkts, 4, used, bytes, prio,
					  band, true, true, &ca));
		arrivals(pkts, 4, (uint8_t)(4 * i), prio, band, &used, &bytes);
		enqueue_rest(&b, pkts, 4, prio, band, used, bytes, &cb);
		shp_egress_round(a.root, &ca, &ioa, pkts, 32, 64, 0, false,
				 &r);
		shp_egress_round(b.root, &cb, &iob, pkts, 32, 64, 0, false,
				 &r);
	}
	assert_int_equal(pa.nb, 0);
	assert_int_equal(pb.nb, 0);
	/* each 1 ms after it came, not a ns before */
	for (i = 0; i < 8; i++) {
		t = 1000 + 1000ull * i + 1000000;
		pa.now = pb.now = t - 1;
		shp_egress_round(a.root, &ca, &ioa, pkts, 32, 64, 0, false,
				 &r);
		shp_egress_round(b.root, &cb, &iob, pkts, 32, 64, 0, false,
				 &r);
		assert_int_equal(pa.nb, 4u * i);
		assert_int_equal(pb.nb, 4u * i);
		pa.now = pb.now = t;
		shp_egress_round(a.root, &ca, &ioa, pkts, 32, 64, 0, false,
				 &r);
		shp_egress_round(b.root, &cb, &iob, pkts, 32, 64, 0, false,
				 &r);
		assert_int_equal(pa.nb, 4u * (i + 1));
		assert_int_equal(pb.nb, 4u * (i + 1));
	}
	assert_seq(&pa, 32);
	assert_seq(&pb, 32);
	assert_memory_equal(&ca.ctr->band[1], &cb.ctr->band[1],
			    sizeof(struct shp_band_ctr));
	assert_int_equal(ca.ctr->band[1].enqueued, 32);
	assert_int_equal(ca.ctr->band[1].dequeued_bytes, sum_len(0, 32));
	assert_int_equal(ca.ctr->egress_in, cb.ctr->egress_in);
	assert_int_equal(ca.ctr->tx_packets, cb.ctr->tx_packets);
	assert_int_equal(ca.ctr->tx_bytes, cb.ctr->tx_bytes);

	/* two bands in a burst: the queue's to order */
	arrivals(pkts, 2, 32, prio, band, &used, &bytes);
	band[1] = prio[1] = 0;
	used |= 1u << 0;
	assert_false(shp_egress_rx(&a, pkts, 2, used, bytes, prio, band,
				   true, true, &ca));
	assert_int_equal(shp_qdisc_qlen_total(a.queue), 2);
	/* the bands hold them now: the next burst queues behind */
	arrivals(pkts, 1, 34, prio, band, &used, &bytes);
	assert_false(shp_egress_rx(&a, pkts, 1, used, bytes, prio, band,
				   true, true, &ca));
	assert_int_equal(shp_qdisc_qlen_total(a.queue), 3);
	shp_chain_destroy(&a, &ca);
	shp_chain_destroy(&b, &cb);

	/* a gate on: not idle */
	chain_build_netem(&a, 0, "rate 1gbit burst 10kb limit 100kb",
			  "delay 1ms");
	arrivals(pkts, 2, 0, prio, band, &used, &bytes);
	assert_false(shp_egress_rx(&a, pkts, 2, used, bytes, prio, band,
				   true, true, &ca));
	shp_chain_destroy(&a, &ca);
	shp_rig_assert_pool_full(shp_rig_pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_refused),
		cmocka_unit_test(test_bypass_counts),
		cmocka_unit_test(test_bypass_gated_refused),
		cmocka_unit_test(test_feed),
	};

	shp_rig_env("refused", 4096);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
