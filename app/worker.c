/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll loop of a worker lcore, in the order a packet moves: RX (poll,
 * stamp), admit (the pacing of arrivals, overload), classify, chain (into
 * the egress port's chain, or straight through it: the bypass), round
 * (dequeue what is due) and TX. An lcore does the RX part, the TX part or
 * both; the rules are lib's (shp_egress.h), which this file gives the
 * clock and the ports.
 */
#include <sys/syscall.h>
#include <unistd.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_rcu_qsbr.h>

#include "capture.h"
#include "classify.h"
#include "shp_pkthdr.h"
#include "pace.h"
#include "shaper.h"
#include "shaper_batch.h"
#include "shaper_sched.h"
#include "shaper_wire.h"
#include "shp_egress.h"
#include "shp_meta.h"

/* A pcap input returns nothing only once exhausted; a few empty polls in a
 * row make sure. */
#define REPLAY_EMPTY_POLLS 64

/* Packets, in bursts, a TX round may send per port before RX is polled
 * again: several times what one RX poll brings, so that a backlog of due
 * packets shrinks while RX goes on. */
#define TX_BUDGET_BURSTS 8
/* A TX-only lcore (a pipeline) has no RX to go back to, but it has other
 * ports: a round as long as 64 bursts (its old budget, about 400 us of
 * shedding at ~200 ns a packet) made what fell due on its other port
 * meanwhile later than --max-late, that port shed it and fell behind in
 * turn, and the two kept each other shedding (0.16 Mpps a port sent, 4.7
 * M of 5.3 M admitted shed in 4 s). Two bursts a port keep its loop
 * within --max-late: at overload 2, 4 and 8 carried alike, and shed 1.6-1.8,
 * 2.4-3.1 and 4.8-5.9 times what the lost time explains (two runs each;
 * docs/benchmarks.md). */
#define TX_ONLY_BUDGET_BURSTS 2
/* Packets, in bursts, a TX lcore takes from a chain's inbox a round (a
 * queue kind without MP enqueue, e.g. fq_codel): all of it at once would
 * hold up what is due for as long as the inbox takes to empty. */
#define DRAIN_BURSTS 4
#define COST_EVERY 8   /* a power of 2 */

/* The port as lib's rules see it (shp_egress_io): this lcore's clock,
 * rte_eth_tx_burst and its counts; defined with the TX part below. */
struct tx_arg {
	struct shaper *s;
	struct egress *e;
	struct shp_port_ctr *pc;
	const struct shp_ctx *ctx;   /* the drop capture's (late drops) */
};

static inline uint64_t tx_now(void *arg);
static inline uint16_t tx_send(void *arg, struct rte_mbuf **pkts, uint16_t n,
			       uint64_t now, uint64_t bytes, uint64_t shed);
static inline uint16_t tx_fresh(void *arg, struct rte_mbuf **pkts, uint16_t n,
				uint64_t bytes, bool gated);

#define TX_IO(a) { .now = tx_now, .tx = tx_send, .tx_fresh = tx_fresh, \
		   .arg = (a) }

/*
 * --pace: a burst is read only when the queue's pacer holds nothing, and
 * held until due (lib/pkt/pace.h). Returns what is due now, *stamp set to its
 * time. While something is held the input is not exhausted.
 */
static inline uint16_t
rx_paced(struct shaper *s, struct rxq_ref *r, struct rte_mbuf **pkts,
	 uint64_t *stamp)
{
	uint64_t now = shp_clock_now(&s->clock);
	uint16_t n;

	if (shp_pace_held(r->pace) == 0) {
		n = rte_eth_rx_burst(r->port, r->queue, pkts, s->opt.burst);
		if (n == 0)
			return 0;
		shp_pace_hold(r->pace, pkts, n, now);
	}
	r->empty_polls = 0;
	return shp_pace_release(r->pace, now, pkts, stamp);
}

/*
 * A short burst while the pool cannot fill one: the port had arrivals it
 * could not take (net_null, net_pcap leave rx_nombuf at 0), counted once
 * per burst. Only a short burst pays for the look at the pool.
 */
static void
rx_pool_check(const struct shaper *s, struct rte_mempool *mp,
	      struct shp_port_ctr *in)
{
	const struct rte_mempool_cache *c =
		rte_mempool_default_cache(mp, rte_lcore_id());

	/* the store's own count: rte_mempool_avail_count walks every
	 * lcore's cache */
	if (rte_mempool_get_ops(mp->ops_index)->get_count(mp) +
	    (c != NULL ? c->len : 0) < s->opt.burst)
		in->rx_pool_empty++;
}

/*
 * RX: a burst from r into pkts, *stamp set to the time it arrived, not
 * the loop's start: a stale stamp would let netem send a packet early.
 * Paced packets carry the time they were due. 0: nothing came.
 */
static inline uint16_t
rx_poll(struct shaper *s, struct rxq_ref *r, struct shp_port_ctr *in,
	struct rte_mbuf **pkts, uint64_t *stamp)
{
	uint16_t n;

	if (unlikely(r->pace != NULL))
		n = rx_paced(s, r, pkts, stamp);
	else
		n = rte_eth_rx_burst(r->port, r->queue, pkts, s->opt.burst);
	if (unlikely(n < s->opt.burst) && r->pace == NULL)
		rx_pool_check(s, r->pool, in);
	if (n == 0) {
		/* An input is exhausted only if it returned nothing while
		 * the pool had mbufs to give it: net_pcap returns nothing
		 * too when it cannot allocate, and the rest of the capture
		 * would never be read. (Counted for --replay only: the
		 * pool's count walks every lcore's cache.) */
		if (s->opt.replay && r->empty_polls < REPLAY_EMPTY_POLLS &&
		    rte_mempool_avail_count(r->pool) >= s->opt.burst)
			r->empty_polls++;
		return 0;
	}
	r->empty_polls = 0;
	if (likely(r->pace == NULL))
		*stamp = shp_clock_now(&s->clock);
	return n;
}

/* Frames above the ports' MTU (that a vdev took): gone as `oversize`.
 * What is left, in order. */
static uint16_t
rx_oversize(const struct rxq_ref *r, struct shp_port_ctr *in,
	    const struct shp_ctx *ctx, struct rte_mbuf **pkts, uint16_t n)
{
	struct shp_port_ctr *out = ctx->ctr;
	uint16_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (likely(!shp_frame_oversize(pkts[i], r->mtu))) {
			pkts[k++] = pkts[i];
			continue;
		}
		in->rx_packets++;
		in->rx_bytes += rte_pktmbuf_pkt_len(pkts[i]);
		out->egress_in++;
		out->drops[SHP_DROP_OVERSIZE]++;
		shp_drop_capture(ctx, SHP_DROP_OVERSIZE, SHP_CAP_NO_BAND,
				 &pkts[i], 1);
		rte_pktmbuf_free(pkts[i]);
	}
	return k;
}

/*
 * The control plane's changes due by a burst's stamp, made (or, by an
 * RX-only lcore, waited for) before the burst meets the chain: a batch,
 * a schedule's, then the link (shaper_batch.h, shaper_sched.h). True
 * when the link is down: the burst was counted and freed. A TX round
 * makes them too (changes_tx), for the lcores that poll no RX and for
 * what is queued already; only this hook makes them exact to the stamp.
 */
static inline bool
changes_rx(struct shaper *s, struct worker *w, struct rxq_ref *r,
	   struct rte_mbuf **pkts, uint16_t n, struct shp_port_ctr *in,
	   struct shp_ctx *ctx)
{
	shaper_batch_rx(s, r->egress, r->shard, r->tx_here, !w->tx, ctx->now);
	return unlikely(shaper_sched_rx[r->egress]) &&
	       shaper_sched_rx_burst(s, r->egress, r->shard, r->tx_here,
				     !w->tx, pkts, n, in, ctx);
}

/*
 * The egress port's ingress stage (a policer), where this lcore runs it
 * (shp_chain.h), first: what it refuses is the profile's drop, judged as
 * if the emulator kept up, before `overload` or the admission pacing
 * take what is left. Counted as received and offered. Returns what
 * passed.
 */
static inline uint16_t
rx_ingress(struct shp_chain *c, struct shp_port_ctr *in, struct shp_ctx *ctx,
	  struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t gone = 0;
	uint16_t k;

	k = shp_chain_ingress(c, pkts, n, NULL, NULL, &gone, ctx);
	in->rx_packets += n - k;
	in->rx_bytes += gone;
	ctx->ctr->egress_in += n - k;
	return k;
}

/*
 * What admitting a packet costs this lcore (shp_admit_cost). Run to
 * completion: its own RX and TX costs. An RX-only lcore (pipeline) paces
 * at the slowest TX lcore's rate, shared among the RX lcores, or at its
 * own, whichever is slower (shp_admit_cost_rx). --max-late 0 turns pacing
 * off too.
 */
static inline uint64_t
admit_cost(struct shaper *s, struct worker *w)
{
	uint64_t tx = 0;
	unsigned int i, nb_rx = 0;

	if (s->opt.max_late_ns == 0)
		return 0;
	if (w->tx)
		return shp_admit_cost(&w->admit);
	for (i = 0; i < s->nb_workers; i++) {
		const struct worker *o = &s->workers[s->worker_ids[i]];

		nb_rx += o->rx;
		if (o->tx && o->tx_cost_pub > tx)
			tx = o->tx_cost_pub;
	}
	return shp_admit_cost_rx(&w->admit, tx, nb_rx);
}

/*
 * The egress chain is behind schedule: the emulator, not the profile, is
 * the bottleneck. What arrives now is dropped at once, before it costs any
 * more work, so that what is already scheduled leaves on time and the
 * chain catches up; counted as `overload` on the egress port.
 */
static void
overload(struct shp_port_ctr *in, const struct shp_ctx *ctx,
	 struct rte_mbuf **pkts, uint16_t n)
{
	struct shp_port_ctr *out = ctx->ctr;
	uint64_t bytes = 0;
	uint16_t i;

	for (i = 0; i < n; i++)
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
	in->rx_packets += n;
	in->rx_bytes += bytes;
	out->egress_in += n;
	out->drops[SHP_DROP_OVERLOAD] += n;
	shp_drop_capture(ctx, SHP_DROP_OVERLOAD, SHP_CAP_NO_BAND, pkts, n);
	rte_pktmbuf_free_bulk(pkts, n);
}

/*
 * Admit, of pkts[0..n) stamped at stamp, what the chain can take on
 * time: nothing while it is behind, else what the lcore carries at
 * cost (shp_admit); the rest is `overload`, and the time spent dropping
 * a whole burst comes off the credit. Returns how many: pkts[0..k).
 */
static inline uint16_t
rx_admit(struct shaper *s, struct worker *w, struct shp_port_ctr *in,
	 const struct shp_ctx *ctx, struct rte_mbuf **pkts, uint16_t n,
	 uint64_t cost, bool behind, uint64_t stamp)
{
	uint16_t k = unlikely(behind) ? 0 : shp_admit(&w->admit, n, cost);

	if (unlikely(k < n)) {
		overload(in, ctx, pkts + k, n - k);
		if (k == 0)
			shp_admit_charge(&w->admit,
					 shp_clock_now(&s->clock) - stamp);
	}
	return k;
}

/*
 * Chain: pkts[0..n), classified (prio[], band[], used, bytes: the RX
 * pass's), into the egress port's chain, or, on the port's own lcore,
 * through it at once where nothing there would hold them
 * (shp_egress_bypass). Returns how many went through at once.
 */
static inline uint16_t
rx_chain(struct shaper *s, struct rxq_ref *r, struct rte_mbuf **pkts,
	 uint16_t n, uint32_t used, uint64_t bytes, const uint8_t *prio,
	 uint8_t *band, bool wire, struct shp_ctx *ctx)
{
	struct shp_chain *c = r->eg->chain;
	/* (just enabled: the wire ring goes first, shaper_wire.h) */
	bool here = r->tx_here && !s->paused && !wire;
	uint16_t sent = 0;

	if (here) {
		struct egress *e = r->eg;
		struct tx_arg a = { .s = s, .e = e, .pc = ctx->ctr,
				    .ctx = ctx };
		const struct shp_egress_io io = TX_IO(&a);

		sent = shp_egress_bypass(c, &e->pend, &io, pkts, n, used,
					 &bytes, prio, band, ctx);
		if (sent == n)
			return sent;
	}
	shp_egress_rx(c, pkts + sent, n - sent, used, bytes, prio + sent,
		      band + sent, r->tx_here, here, ctx);
	return sent;
}

/* RX, admit, classify, chain: one burst of one queue. */
static inline void
rx_queue(struct shaper *s, struct worker *w, struct rxq_ref *r,
	 uint64_t cost, bool sample)
{
	struct rte_mbuf *pkts[SHP_MAX_BURST];
	const struct shp_classifier *cls;
	struct shp_lcore_ctr *ctr = r->ctr;
	struct shp_chain *c = r->eg->chain;
	struct shp_port_ctr *in = &ctr->port[r->port];
	struct shp_ctx ctx = { .ctr = &ctr->port[r->egress],
			       .cap = shaper_capture_of(w->lcore),
			       .tag = { .port = r->egress,
					.shard = r->shard, .fresh = true } };
	uint8_t prio[SHP_MAX_BURST], band[SHP_MAX_BURST];
	uint64_t bytes, t0 = 0;
	uint32_t used;
	uint16_t n;
	uint8_t wire;
	bool behind;

	behind = r->eg->behind;
	if (!r->eg->holds)
		cost = 0;
	if (cost != 0 && !behind &&
	    !shp_admit_ready(&w->admit, cost, s->opt.burst)) {
		/* no credit as of the last poll: has it come since? */
		shp_admit_refill(&w->admit, shp_clock_now(&s->clock), cost,
				 s->opt.burst);
		if (!shp_admit_ready(&w->admit, cost, s->opt.burst))
			return;
	}
	/* the poll's own cost is part of what admitting costs */
	if (sample)
		t0 = shp_clock_now(&s->clock);
	n = rx_poll(s, r, in, pkts, &ctx.now);
	if (n == 0)
		return;
	if (cost != 0)
		shp_admit_refill(&w->admit, ctx.now, cost, s->opt.burst);
	if (unlikely(r->mtu != 0)) {
		n = rx_oversize(r, in, &ctx, pkts, n);
		if (n == 0)
			return;
	}
	if (changes_rx(s, w, r, pkts, n, in, &ctx))
		return;
	/* `disable`: as a bare wire (shaper_wire.h), as of the stamp */
	wire = __atomic_load_n(&r->eg->wire, __ATOMIC_RELAXED);
	if (unlikely(wire & SHAPER_WIRE_OFF)) {
		shaper_wire_rx(r->eg, pkts, n, in, ctx.ctr, ctx.now);
		return;
	}
	if (unlikely(shp_chain_ingress_on(c)) &&
	    shp_chain_ingress_here(c, r->tx_here)) {
		n = rx_ingress(c, in, &ctx, pkts, n);
		if (n == 0)
			return;
	}
	n = rx_admit(s, w, in, &ctx, pkts, n, cost, behind, ctx.now);
	if (n == 0)
		return;
	/* one pass classifies and sums the bytes: the priority by the
	 * global mode, the band by the port's queue's own map */
	cls = __atomic_load_n(&s->classifier, __ATOMIC_ACQUIRE);
	used = shp_classify_bands_map(cls,
				      shp_chain_priomap(c), pkts, n, prio,
				      band, &bytes);
	in->rx_packets += n;
	in->rx_bytes += bytes;
	/* what the chain drops from here on has its metadata */
	ctx.tag.fresh = false;
	/* (a burst sent at once took TX's time too: no sample of
	 * admitting) */
	if (rx_chain(s, r, pkts, n, used, bytes, prio, band, wire != 0,
		     &ctx) == n)
		return;
	if (sample && 2 * n >= s->opt.burst)
		shp_cost_sample(&w->admit.rx, shp_clock_now(&s->clock) - t0, n);
}

/* In a pipeline another lcore may stamp a packet just after we read the
 * clock: clamp at 0 rather than wrap. */
static inline uint64_t
sojourn(struct rte_mbuf *m, uint64_t now)
{
	int64_t d = (int64_t)(now - shp_meta(m)->rx_ns);

	return d > 0 ? (uint64_t)d : 0;
}

/*
 * Transmit pkts[0..n) and count what the port took: packets and bytes.
 * bytes is the pkt_len sum of pkts[0..n) when the dequeue gave it
 * (ctx->bytes), else UINT64_MAX (the lengths are then read before the
 * PMD may free the packets). Returns how many were sent.
 */
static inline uint16_t
tx_count(struct egress *e, struct shp_port_ctr *pc, struct rte_mbuf **pkts,
	 uint16_t n, uint64_t bytes)
{
	uint32_t len[SHP_MAX_BURST];
	uint16_t i, sent;

	if (bytes == UINT64_MAX)
		for (i = 0; i < n; i++)
			len[i] = rte_pktmbuf_pkt_len(pkts[i]);
	sent = rte_eth_tx_burst(e->port, e->txq, pkts, n);
	if (bytes == UINT64_MAX) {
		bytes = 0;
		for (i = 0; i < sent; i++)
			bytes += len[i];
	} else {
		/* what the port refused is still ours to read */
		for (i = sent; i < n; i++)
			bytes -= rte_pktmbuf_pkt_len(pkts[i]);
	}
	pc->tx_packets += sent;
	pc->tx_bytes += bytes;
	return sent;
}

/* tx_count, and the time each packet spent in the shaper (sojourn) and
 * how late netem's send time was kept (lateness), read before the PMD
 * may free them. With --late-drop (late != 0) what would be later than
 * that is dropped first (shp_drop_late): pkts[0..d). Returns d plus what
 * the port took, so that pkts[returned..n) are what it refused. */
static inline uint16_t
tx_burst(struct egress *e, struct shp_port_ctr *pc, struct rte_mbuf **pkts,
	 uint16_t n, uint64_t now, uint64_t bytes, uint64_t late,
	 const struct shp_ctx *ctx)
{
	uint64_t soj[SHP_MAX_BURST], tts[SHP_MAX_BURST];
	uint8_t band[SHP_MAX_BURST], flags[SHP_MAX_BURST];
	uint16_t i, d = 0, sent;
	bool log;

	if (unlikely(late != 0)) {
		d = shp_drop_late(pc, pkts, n, now, late, &bytes, ctx);
		pkts += d;
		n -= d;
	}
	for (i = 0; i < n; i++) {
		soj[i] = sojourn(pkts[i], now);
		tts[i] = shp_meta(pkts[i])->time_to_send;
	}
	/* the packet log's: read before the PMD may free them too */
	log = unlikely(ctx != NULL && ctx->cap != NULL &&
		       ctx->cap->log_every != 0);
	if (log)
		for (i = 0; i < n; i++) {
			band[i] = shp_meta(pkts[i])->band;
			flags[i] = shp_meta(pkts[i])->flags;
		}
	sent = tx_count(e, pc, pkts, n, bytes);
	shp_latency_record_tx(pc->lat, soj, tts, sent, now);
	if (log)
		shp_dropcap_log_sent(ctx->cap, &ctx->tag, now, soj, band,
				     flags, sent);
	return d + sent;
}

/*
 * tx_burst for a burst the RX bypass sends the instant it arrived, its
 * metadata not written: each packet's sojourn is 0, and so is the
 * lateness of what a gate let go (its send time is that instant), so
 * the histograms take one count each and no packet's metadata is read.
 */
static inline uint16_t
tx_burst_fresh(struct egress *e, struct shp_port_ctr *pc,
	       struct rte_mbuf **pkts, uint16_t n, uint64_t bytes, bool gated)
{
	uint16_t sent = tx_count(e, pc, pkts, n, bytes);

	shp_hist_record_n(&pc->lat->sojourn, 0, sent);
	if (gated)
		shp_hist_record_n(&pc->lat->lateness, 0, sent);
	return sent;
}

static inline uint64_t
tx_now(void *arg)
{
	return shp_clock_now(&((struct tx_arg *)arg)->s->clock);
}

static inline uint16_t
tx_send(void *arg, struct rte_mbuf **pkts, uint16_t n, uint64_t now,
	uint64_t bytes, uint64_t shed)
{
	struct tx_arg *a = arg;

	return tx_burst(a->e, a->pc, pkts, n, now, bytes,
			shp_late_bound(a->s->opt.late_drop_ns, shed), a->ctx);
}

static inline uint16_t
tx_fresh(void *arg, struct rte_mbuf **pkts, uint16_t n, uint64_t bytes,
	 bool gated)
{
	struct tx_arg *a = arg;
	uint16_t sent = tx_burst_fresh(a->e, a->pc, pkts, n, bytes, gated);

	/* the packet log's: sent the instant they arrived, their metadata
	 * unwritten (nothing read of them) */
	if (unlikely(a->ctx != NULL && a->ctx->cap != NULL))
		shp_dropcap_log_sent(a->ctx->cap, &a->ctx->tag, a->ctx->now,
				     NULL, NULL, NULL, sent);
	return sent;
}

/* Publish whether the chain is behind; written only on a change so that
 * RX lcores reading it keep their copy of the line. */
static inline void
set_behind(struct egress *e, bool b)
{
	if (b != e->behind)
		e->behind = b;
}

/*
 * The control plane's changes due, at a TX round's start (changes_rx has
 * why there too): a batch, then a schedule's. Before the port's refusals,
 * so that a port that takes nothing holds back neither, nor an RX-only
 * lcore that waits for them.
 */
static inline void
changes_tx(struct shaper *s, const struct egress *e)
{
	shaper_batch_tx(s, e->port, e->txq);
	shaper_sched_tx(s, e->port, e->txq);
}

/*
 * Round and TX for an egress port: what the port refused last time first
 * (shp_pending_send), then what RX lcores handed over joins the queue,
 * then due packets (shp_egress_round) and whether the chain is behind;
 * what the port refuses now is kept for the next round.
 */
static inline void
tx_port(struct shaper *s, struct worker *w, struct egress *e,
	unsigned int budget, bool sample)
{
	struct shp_port_ctr *pc = &e->ctr->port[e->port];
	struct shp_ctx ctx = { .ctr = pc, .cap = shaper_capture_of(w->lcore),
			       .tag = { .port = e->port, .shard = e->txq } };
	struct tx_arg a = { .s = s, .e = e, .pc = pc, .ctx = &ctx };
	const struct shp_egress_io io = TX_IO(&a);
	struct shp_chain *chain = e->chain;
	struct rte_mbuf *pkts[SHP_MAX_BURST];
	struct shp_round r;
	bool held, behind;
	uint64_t t0 = 0, t1, shed;
	unsigned int moved = 0;

	changes_tx(s, e);
	if (shp_pending_send(&e->pend, pc, &io, s->opt.max_late_ns,
			     &behind)) {
		set_behind(e, behind);
		return;
	}
	/* disabled, or just enabled: the wire ring (shaper_wire.h) */
	if (unlikely(e->wire != 0) &&
	    shaper_wire_tx(e, pc, &io, pkts, s->opt.burst, budget))
		return;
	if (sample || !w->rx)
		t0 = shp_clock_now(&s->clock);
	t1 = t0;
	if (chain->inbox != NULL) {
		ctx.now = t0 != 0 ? t0 : shp_clock_now(&s->clock);
		ctx.unthrottled = shp_chain_unthrottled(chain);
		moved = shp_chain_drain(chain, &ctx,
					DRAIN_BURSTS * s->opt.burst);
		if (!w->rx)
			t1 = shp_clock_now(&s->clock);
	}
	shed = pc->drops[SHP_DROP_LATE];
	shp_egress_round(chain->root, &ctx, &io, pkts, s->opt.burst,
			 budget, s->opt.max_late_ns, e->behind, &r);
	if (sample || !w->rx) {
		uint64_t t2 = shp_clock_now(&s->clock);
		uint64_t d = pc->drops[SHP_DROP_LATE] - shed;
		uint32_t k = shp_cost_count(&r, s->opt.burst, d);

		if (sample && k != 0)
			shp_cost_sample(&w->admit.tx, t2 - t0, k);
		if (!w->rx)
			shp_load_add(&w->load, t1 - t0, moved, t2 - t1,
				     shp_round_sent(&r, d), d);
	}
	shp_pending_keep_round(&e->pend, pc, pkts, &r);
	set_behind(e, r.behind);
	held = shp_chain_holds_delayed(chain, pc);
	if (held != e->holds)
		e->holds = held;
}

/* At shutdown, what a pacer still holds joins the bands, to be sent or
 * flushed (and counted) with everything else queued. */
static void
rx_unpace(struct shaper *s, struct rxq_ref *r)
{
	struct shp_lcore_ctr *ctr = r->ctr;
	struct rte_mbuf *pkts[SHP_PACE_MAX];
	struct shp_port_ctr *in = &ctr->port[r->port];
	struct shp_ctx ctx = { .ctr = &ctr->port[r->egress],
			       .now = shp_clock_now(&s->clock) };
	uint8_t band[SHP_PACE_MAX];
	uint64_t bytes;
	uint32_t used;
	uint16_t n = shp_pace_take_all(r->pace, pkts);

	if (n == 0)
		return;
	used = shp_classify_burst_map(__atomic_load_n(&s->classifier,
						      __ATOMIC_ACQUIRE),
				      shp_chain_priomap(r->eg->chain),
				      pkts, n, ctx.now, band, &bytes);
	in->rx_packets += n;
	in->rx_bytes += bytes;
	shp_chain_enqueue_rx(r->eg->chain, pkts, band, used, bytes, n,
			     r->tx_here, &ctx);
}


/* The kernel's count of what this lcore loses: its thread, which the
 * control side reads when it reports (two cheap calls here, and no file
 * read before the first poll; the CPU's steal was taken at the launch,
 * shaper_lost_launch). */
static void
worker_lost_start(struct worker *w)
{
	w->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&w->lost_valid, true, __ATOMIC_RELEASE);
}

int
shaper_worker_main(void *arg)
{
	struct shaper *s = arg;
	unsigned int lcore = rte_lcore_id();
	struct worker *w = &s->workers[lcore];
	/* A lcore that also polls RX bounds each port's round so RX is
	 * still polled; a TX-only lcore, so its other ports are served. */
	unsigned int budget = (w->rx ? TX_BUDGET_BURSTS : TX_ONLY_BUDGET_BURSTS) *
			      s->opt.burst;
	uint32_t rounds = 0;
	uint16_t k, first = 0;

	rte_rcu_qsbr_thread_register(shaper_rcu, lcore);
	rte_rcu_qsbr_thread_online(shaper_rcu, lcore);
	shp_stalls_init(&w->stalls, rte_get_tsc_hz(), s->opt.burst);
	worker_lost_start(w);
	while (!s->quit) {
		/* pacing's costs are measured in one loop of COST_EVERY:
		 * enough for an estimate, a clock read less the rest of the
		 * time */
		bool sample = s->opt.max_late_ns != 0 &&
			      (++rounds & (COST_EVERY - 1)) == 0;

		shp_stall_mark(&w->stalls, rte_rdtsc());
		/* RX to TX, the way a packet goes; a loop after another,
		 * what is due still leaves between two polls */
		if (w->rx && !s->paused && !w->rx_done) {
			bool all_done = s->opt.replay;
			uint64_t cost = admit_cost(s, w);

			/* the queue polled first changes every loop: a
			 * paced lcore's credit goes to its queues in turn */
			for (k = 0; k < w->nb_rxq; k++) {
				struct rxq_ref *q = &w->rxq[(k + first) %
							    w->nb_rxq];

				rx_queue(s, w, q, cost, sample);
				all_done &= q->empty_polls >=
					    REPLAY_EMPTY_POLLS;
			}
			if (++first >= w->nb_rxq)
				first = 0;
			if (all_done)
				__atomic_store_n(&w->rx_done, true,
						 __ATOMIC_RELEASE);
		}
		if (w->tx && !s->paused)
			for (k = 0; k < w->nb_egress; k++)
				tx_port(s, w, w->eg[k], budget, sample);
		/* what RX lcores of a pipeline pace at (shp_load_cost) */
		if (w->tx && (rounds & 1023) == 0)
			w->tx_cost_pub = w->rx ? w->admit.tx.ns :
				shp_load_cost(&w->load,
					      shp_clock_now(&s->clock),
					      w->tx_cost_pub);
		rte_rcu_qsbr_quiescent(shaper_rcu, lcore);
		__atomic_store_n(&w->loops, w->loops + 1, __ATOMIC_RELEASE);
	}
	for (k = 0; k < w->nb_rxq; k++)
		if (w->rxq[k].pace != NULL)
			rx_unpace(s, &w->rxq[k]);
	rte_rcu_qsbr_thread_offline(shaper_rcu, lcore);
	rte_rcu_qsbr_thread_unregister(shaper_rcu, lcore);
	return 0;
}

/* After the workers stopped: free whatever is still queued, counted as
 * flushed, in the owner's counter block (still a single writer). */
void
shaper_flush(struct shaper *s)
{
	unsigned int i, q;

	shaper_wire_flush(s);
	for (i = 0; i < s->nb_ports; i++)
		for (q = 0; q < shaper_queues(s); q++) {
			uint16_t port = s->port_ids[i];
			struct egress *e = s->shard[port][q];
			struct shp_port_ctr *pc;
			struct shp_ctx ctx;

			if (e == NULL || e->chain == NULL || e->ctr == NULL)
				continue;
			pc = &e->ctr->port[port];
			ctx = (struct shp_ctx){ .now = shp_clock_now(&s->clock),
						.ctr = pc };
			shp_pending_flush(&e->pend, &ctx);
			if (e->chain->root != NULL) {
				/* what RX lcores handed over joins the queue
				 * first */
				shp_chain_drain(e->chain, &ctx, UINT_MAX);
				shp_qdisc_reset_all(e->chain->root, &ctx);
			}
		}
}
