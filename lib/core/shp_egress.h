/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One TX round of an egress chain, and the overload rule.
 *
 * An emulator promises that a packet leaves when the profile says, or is
 * dropped and counted. At an offered load above what the lcore carries,
 * three things keep that promise:
 *
 *  - Due packets first. A round dequeues the chain's root again as long as
 *    it has due work left, up to a budget, before the caller polls RX
 *    again: a backlog of overdue packets (a VM hiccup, a calendar bucket
 *    boundary) shrinks instead of being carried from round to round.
 *
 *  - Overload is a drop, not added delay. When a round ends with due work
 *    left and the oldest packet still waiting is later than max_late, the
 *    chain is behind; the caller then drops new arrivals for it at once
 *    (SHP_DROP_OVERLOAD) until a round ends caught up.
 *
 *  - A backlog is shed, not sent late. What was admitted a delay ago
 *    cannot be unadmitted, and when the lcore is slower now than it was
 *    then (the host takes its CPU or its memory bandwidth away for a few
 *    ms), dropping arrivals helps only a delay later: the due packets of
 *    those ms would leave later and later. So a round that finds a
 *    backlog (the chain entered it behind, or a burst leaves more due
 *    work after it) drops what is later than max_late as SHP_DROP_LATE
 *    instead of sending it. A lone late burst (a short hiccup at low
 *    load, nothing queued behind it) is still sent, and its lateness
 *    recorded: dropping it would turn a host's hiccup into loss.
 *
 *  - Arrivals paced at what the lcore carries (shp_admit, below), so that
 *    what is admitted now can be released on time a delay later.
 *
 *  - What the port refuses goes first at the next round (shp_pending),
 *    and a burst that nothing would hold leaves as it arrives (the RX
 *    bypass, shp_egress_bypass), counted as if it went through.
 *
 * Kept free of ports and of the clock's source so that the rules are
 * tested on a virtual clock (test/unit/test_egress.c, test_refused.c);
 * app/worker.c instantiates them with the TSC clock and rte_eth_tx_burst.
 */
#ifndef SHP_EGRESS_H
#define SHP_EGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <rte_mbuf.h>

#include "shp_chain.h"
#include "shp_meta.h"
#include "shp_qdisc.h"
#include "shp_stall.h"

/* When the profile wanted m to leave: netem's send time if netem
 * scheduled it, else its arrival (bands and an idle bucket add nothing). */
static inline uint64_t
shp_due_time(struct rte_mbuf *m)
{
	const struct shp_meta *meta = shp_meta(m);

	return meta->time_to_send != 0 ? meta->time_to_send : meta->rx_ns;
}

/* Is a packet due at `due` later than max_late at `now`? (0: never) */
static inline bool
shp_is_behind(uint64_t due, uint64_t now, uint64_t max_late)
{
	return max_late != 0 && now > due && now - due > max_late;
}

/*
 * --late-drop: a packet a stage scheduled (time_to_send set) that would
 * leave more than `late` ns after that time is dropped instead, counted
 * as `late` (SHP_DROP_LATE): the emulator's own, as `overload` is. What
 * is sent is then never later than `late`, whatever the host does to
 * the lcore; the price is a counted loss where a hiccup would have added
 * delay. Moves the dropped ones to pkts[0..d), freed, and the rest, in
 * their order, to pkts[d..n); takes their pkt_len off *bytes unless it
 * is UINT64_MAX. Returns d. The caller sends pkts[d..n). cap: where
 * the dropped ones are captured (its cap and tag; NULL: nowhere).
 */
static inline uint16_t
shp_drop_late(struct shp_port_ctr *pc, struct rte_mbuf **pkts, uint16_t n,
	      uint64_t now, uint64_t late, uint64_t *bytes,
	      const struct shp_ctx *cap)
{
	struct rte_mbuf *keep[SHP_MAX_BURST];
	uint16_t i, d = 0, k = 0;

	for (i = 0; i < n; i++) {
		uint64_t tts = shp_meta(pkts[i])->time_to_send;

		if (tts != 0 && now > tts && now - tts > late)
			pkts[d++] = pkts[i];
		else
			keep[k++] = pkts[i];
	}
	if (d == 0)
		return 0;
	if (*bytes != UINT64_MAX)
		for (i = 0; i < d; i++)
			*bytes -= rte_pktmbuf_pkt_len(pkts[i]);
	pc->drops[SHP_DROP_LATE] += d;
	if (cap != NULL && unlikely(cap->cap != NULL))
		shp_dropcap_put(cap->cap, &cap->tag, now, SHP_DROP_LATE,
				SHP_CAP_NO_BAND, pkts, d);
	rte_pktmbuf_free_bulk(pkts, d);
	for (i = 0; i < k; i++)
		pkts[d + i] = keep[i];
	return d;
}

/* The bound a burst is sent under: --late-drop's always, a round's
 * shed (max_late, with a backlog) too, whichever is tighter; 0: none. */
static inline uint64_t
shp_late_bound(uint64_t late_drop, uint64_t shed)
{
	if (shed != 0 && (late_drop == 0 || shed < late_drop))
		return shed;
	return late_drop;
}

/* What a round needs from its caller: the clock and the port. */
struct shp_egress_io {
	uint64_t (*now)(void *arg);
	/* Send pkts[0..n) at `now`; bytes is their pkt_len sum or
	 * UINT64_MAX. shed: if not 0, what is later than that is dropped
	 * first (shp_drop_late). Returns how many were dropped or taken by
	 * the port; pkts[returned..n) stay the caller's (its pending
	 * list). */
	uint16_t (*tx)(void *arg, struct rte_mbuf **pkts, uint16_t n,
		       uint64_t now, uint64_t bytes, uint64_t shed);
	/* The RX bypass's send (shp_egress_bypass): pkts[0..n) leave the
	 * instant they arrived, their metadata not written, so none is
	 * read: each one's sojourn is 0, and so is the lateness of what a
	 * gate let go (gated: its send time is that instant). bytes is
	 * their pkt_len sum. Returns how many the port took; the rest stay
	 * the caller's. NULL where nothing bypasses. */
	uint16_t (*tx_fresh)(void *arg, struct rte_mbuf **pkts, uint16_t n,
			     uint64_t bytes, bool gated);
	void *arg;
};

struct shp_round {
	uint32_t released;     /* packets given to the port */
	uint16_t refused;      /* the port took fewer than given: they are */
	uint16_t last_n;       /* pkts[last_n - refused, last_n) */
	bool behind;           /* ended with due work left, too late */
};

/* What of a round's released packets the port took: released, less
 * what the round shed as `late`. */
static inline uint32_t
shp_round_sent(const struct shp_round *r, uint64_t shed)
{
	return shed < r->released ? r->released - (uint32_t)shed : 0;
}

/*
 * How many packets a round (shed: what it dropped as `late`) took the
 * time of, as a sample of what releasing one costs (shp_admit below); 0:
 * no sample. Only what the port took counts, and only at least half a
 * burst of it, where the loop's fixed work is spread thin. A shed packet
 * costs a fraction of a sent one: counted, a round that sheds would make
 * releasing look cheap exactly while the lcore cannot keep up, and more
 * would be admitted, to be shed a delay later (a pipeline's RX lcore,
 * pacing at nothing but this cost, shed 45% of what it admitted that
 * way). Not counted, its time makes releasing look dearer while it sheds,
 * and admission backs off until the lcore has caught up.
 */
static inline uint32_t
shp_cost_count(const struct shp_round *r, uint16_t burst, uint64_t shed)
{
	uint32_t sent = shp_round_sent(r, shed);

	return 2 * sent >= burst ? sent : 0;
}

/*
 * Dequeue `root` and transmit, due packets first, until it has no due
 * work left or `budget` packets' worth of calls were made (a call moves up
 * to a burst each way: out, and in from the child). pkts is scratch of
 * `burst` entries; if the port refuses some, the round ends and leaves
 * them in pkts (see struct shp_round) for the caller to keep. was_behind:
 * the last round's r->behind; with it, or with more due work after a
 * burst, what is later than max_late is shed (see above).
 */
static __rte_always_inline void
shp_egress_round(struct shp_qdisc *root, struct shp_ctx *ctx,
		 const struct shp_egress_io *io, struct rte_mbuf **pkts,
		 uint16_t burst, unsigned int budget, uint64_t max_late,
		 bool was_behind, struct shp_round *r)
{
	unsigned int done = 0;
	uint64_t now = io->now(io->arg);
	bool more, backlog = was_behind;

	r->released = 0;
	r->refused = 0;
	r->last_n = 0;
	r->behind = false;
	do {
		uint64_t due = 0;
		uint16_t n, sent;

		ctx->now = now;
		ctx->bytes = UINT64_MAX;
		ctx->more = false;
		n = shp_qdisc_dequeue(root, pkts, burst, ctx);
		done += burst;
		more = ctx->more || n == burst;
		if (n == 0) {
			r->behind = false;   /* nothing was due */
			if (!more)
				break;
			continue;
		}
		/* read before the port may free it: with work left, the
		 * last packet out bounds how late the rest are */
		if (more)
			due = shp_due_time(pkts[n - 1]);
		backlog |= more;
		sent = io->tx(io->arg, pkts, n, now, ctx->bytes,
			      backlog ? max_late : 0);
		r->released += sent;
		if (unlikely(sent < n)) {
			r->refused = n - sent;
			r->last_n = n;
			r->behind = shp_is_behind(shp_due_time(pkts[sent]),
						  now, max_late);
			return;
		}
		if (!more)
			break;   /* done: no clock read for nothing */
		now = io->now(io->arg);
		r->behind = shp_is_behind(due, now, max_late);
	} while (done < budget);
}

/*
 * What the port refused. A port that takes fewer packets than it was given
 * has no room for more: what it refused goes first at the next round, in
 * its order, and nothing new is dequeued until it is gone (Linux keeps
 * what a driver refused apart the same way: dev_requeue_skb). Held outside
 * the chain, so no stage reorders it and a gate that let it go does not
 * charge it again. The port's TX lcore only; pc->tx_pending says how many
 * wait.
 */
struct shp_pending {
	struct rte_mbuf **pkts;   /* SHP_MAX_BURST entries, the caller's */
	uint16_t head;
	uint16_t n;
};

/* Keep pkts[0..n) (n <= SHP_MAX_BURST), which the port refused; p holds
 * nothing (a round or a bypass runs only then). */
static inline void
shp_pending_keep(struct shp_pending *p, struct shp_port_ctr *pc,
		 struct rte_mbuf *const *pkts, uint16_t n)
{
	memcpy(p->pkts, pkts, n * sizeof(*pkts));
	p->head = 0;
	p->n = n;
	pc->tx_pending = n;
}

/* What a round (shp_egress_round) left in pkts, refused: kept. */
static inline void
shp_pending_keep_round(struct shp_pending *p, struct shp_port_ctr *pc,
		       struct rte_mbuf *const *pkts, const struct shp_round *r)
{
	if (unlikely(r->refused > 0))
		shp_pending_keep(p, pc, pkts + r->last_n - r->refused,
				 r->refused);
}

/*
 * A round's start: what the port refused is sent first, at io's now
 * (through io->tx: --late-drop applies, no shed). True while the port
 * still refuses some of it: the round ends there, nothing new is
 * dequeued, and *behind says whether the oldest of it is later than
 * max_late. False: the way is clear for shp_egress_round.
 */
static __rte_always_inline bool
shp_pending_send(struct shp_pending *p, struct shp_port_ctr *pc,
		 const struct shp_egress_io *io, uint64_t max_late,
		 bool *behind)
{
	uint64_t now;
	uint16_t sent;

	if (likely(p->n == 0))
		return false;
	now = io->now(io->arg);
	sent = io->tx(io->arg, p->pkts + p->head, p->n, now, UINT64_MAX, 0);
	p->head += sent;
	p->n -= sent;
	pc->tx_pending = p->n;
	if (p->n == 0)
		return false;
	*behind = shp_is_behind(shp_due_time(p->pkts[p->head]), now,
				max_late);
	return true;
}

/* At the end (the port's lcore stopped): what p holds is freed, counted
 * as flushed. */
static inline void
shp_pending_flush(struct shp_pending *p, struct shp_ctx *ctx)
{
	if (p->n == 0)
		return;
	shp_drop_burst(ctx, SHP_DROP_FLUSHED, p->pkts + p->head, p->n);
	p->n = 0;
	ctx->ctr->tx_pending = 0;
}

/* n packets of bytes that went through the queue's band (used: one bit)
 * without waiting there: counted into egress_in and the band as its
 * enqueue and dequeue would have. */
static inline void
shp_egress_count_through(struct shp_ctx *ctx, uint32_t used, uint16_t n,
			 uint64_t bytes)
{
	struct shp_band_ctr *bc = &ctx->ctr->band[__builtin_ctz(used)];

	ctx->ctr->egress_in += n;
	bc->enqueued += n;
	bc->enqueued_bytes += bytes;
	bc->dequeued += n;
	bc->dequeued_bytes += bytes;
}

/*
 * The RX bypass (Linux's TCQ_F_CAN_BYPASS), on the port's TX lcore: when
 * nothing waits in c nor in p and no stage would hold or alter a packet,
 * enqueue followed by dequeue is a no-op, and the burst is sent at once
 * (io->tx_fresh). Only for a burst that falls in one band (used: one bit),
 * so strict priority within a burst is kept too, and only through a
 * queue that takes the RX pass's bands (enqueue_rx): the packets are
 * counted in their band as its enqueue and dequeue would have, once. A
 * gate (tbf) with tokens for them passes the burst's head the same way
 * (shp_qdisc_bypass); the rest is the caller's to enqueue as usual. What
 * the port refuses waits at the head: left to the caller, which queues
 * it first in the empty band, unless a gate has charged it; then it goes
 * to p, its metadata written (its send time is the instant the gate let
 * it go), as any packet the port refuses, not to be charged again.
 *
 * pkts[0..n) arrived at ctx->now, metadata not written; prio[], band[]
 * and used from the RX pass; *bytes their pkt_len sum. Returns how many
 * the bypass took (sent, or kept in p), counted into egress_in;
 * *bytes is then the sum of what is left, pkts[returned..n).
 */
static __rte_always_inline uint16_t
shp_egress_bypass(struct shp_chain *c, struct shp_pending *p,
		  const struct shp_egress_io *io, struct rte_mbuf **pkts,
		  uint16_t n, uint32_t used, uint64_t *bytes,
		  const uint8_t *prio, const uint8_t *band,
		  struct shp_ctx *ctx)
{
	uint64_t b = *bytes;
	uint16_t k, sent, i;
	bool gated;

	if ((used & (used - 1)) != 0 || p->n != 0 ||
	    c->queue->ops->enqueue_rx == NULL)
		return 0;
	k = shp_qdisc_bypass(c->root, pkts, n, ctx, &gated);
	if (k == 0)
		return 0;
	/* (read before the port may free them) */
	if (k < n)
		for (b = 0, i = 0; i < k; i++)
			b += rte_pktmbuf_pkt_len(pkts[i]);
	sent = io->tx_fresh(io->arg, pkts, k, b, gated);
	if (unlikely(sent < k)) {
		if (gated) {
			shp_meta_rx_burst(pkts + sent, k - sent, ctx->now,
					  ctx->now, prio + sent, band + sent);
			shp_pending_keep(p, ctx->ctr, pkts + sent, k - sent);
		} else {
			for (i = sent; i < k; i++)
				b -= rte_pktmbuf_pkt_len(pkts[i]);
			k = sent;
		}
	}
	shp_egress_count_through(ctx, used, k, b);
	*bytes -= b;
	return k;
}

/*
 * RX straight into the chain's root (netem), on the port's TX lcore,
 * when the bypass could not send the burst: if every stage above the
 * root is idle (the queue empty, a gate off), the root's next dequeue
 * would take the burst from them as it is and enqueue it, with the send
 * times it has from RX (netem's offered time is the arrival time); it is
 * enqueued there now instead, and the queue's ring and round are spared
 * (docs/benchmarks.md: 3-4% of a `delay 10ms` lcore). As the bypass:
 * only a burst of one band, through a queue that takes the RX pass's
 * bands, counted in that band as its enqueue and dequeue would have.
 *
 * pkts[0..n), metadata written (shp_egress_rx), used and bytes (their
 * pkt_len sum) from the RX pass. True if it took them all (the root's
 * own drops counted by the root).
 */
static __rte_always_inline bool
shp_egress_feed(struct shp_chain *c, struct rte_mbuf **pkts, uint16_t n,
		uint32_t used, uint64_t bytes, struct shp_ctx *ctx)
{
	if (n == 0 || (used & (used - 1)) != 0 || c->root == c->queue ||
	    c->queue->ops->enqueue_rx == NULL ||
	    !shp_qdisc_can_bypass(c->root->child))
		return false;
	shp_egress_count_through(ctx, used, n, bytes);
	c->root->ops->enqueue(c->root, pkts, n, ctx);
	return true;
}

/*
 * What the bypass left, pkts[0..n) as RX gave them (arrived at ctx->now,
 * metadata not written; prio[], band[], used and bytes from the RX pass),
 * into chain c: straight into its root when `feed` (the port's own lcore,
 * running) and shp_egress_feed may, else into its queue
 * (shp_chain_enqueue_rx; `owner`: the caller is the chain's lcore).
 * True if fed.
 */
static __rte_always_inline bool
shp_egress_rx(struct shp_chain *c, struct rte_mbuf **pkts, uint16_t n,
	      uint32_t used, uint64_t bytes, const uint8_t *prio,
	      uint8_t *band, bool owner, bool feed, struct shp_ctx *ctx)
{
	shp_meta_rx_burst(pkts, n, ctx->now, 0, prio, band);
	ctx->unthrottled = shp_chain_unthrottled(c);
	if (feed && shp_egress_feed(c, pkts, n, used, bytes, ctx))
		return true;
	shp_chain_enqueue_rx(c, pkts, band, used, bytes, n, owner, ctx);
	return false;
}

/*
 * Admission at the rate the lcore can carry.
 *
 * Dropping arrivals only once the chain is behind comes too late when
 * packets are delayed: what is admitted now costs its release a delay
 * later, and admitting is cheaper than releasing, so an lcore that admits
 * as fast as it can while its delay line fills (at start, after a lull)
 * is late for all of it one delay later, and the cycle repeats. So
 * arrivals are paced at what admitting *and* releasing a packet cost:
 * each packet admitted spends `rx + tx` ns of a credit that refills with
 * the clock; what exceeds it is dropped as overload, and the time spent
 * dropping comes off the credit too (shp_admit_charge).
 *
 * The costs are marginal ones, measured on bursts of at least half the
 * burst size, where the loop's fixed work is spread thin, so a lightly
 * loaded lcore is never held back by them. The credit always holds room
 * for two full bursts, so measurements go on while pacing bites. The first
 * samples (page faults on first touch, cold caches) are taken at their
 * minimum, and later ones at most double the estimate per sample. Until
 * the release cost is measured it is taken as four times the admission cost,
 * which errs on the side of dropping during the first delay.
 * Costs are ns << SHP_COST_SHIFT.
 */
#define SHP_COST_SHIFT 8
#define SHP_ADMIT_DEPTH_NS 20000   /* burst credit: 20 us of work */
#define SHP_ADMIT_MARGIN 9         /* cost x (1 + 1/9): ~10% headroom */
#define SHP_COST_WARMUP 16         /* samples taken at their minimum */

struct shp_cost {
	uint32_t ns;          /* per packet, << SHP_COST_SHIFT; 0: unknown */
	uint32_t samples;
};

struct shp_admit {
	uint64_t credit;      /* ns << SHP_COST_SHIFT */
	uint64_t last_ns;
	struct shp_cost rx;   /* per packet admitted (RX, enqueue) */
	struct shp_cost tx;   /* per packet released (pull, netem, TX) */
};

/* Fold one burst's cost (ns for n packets) into the estimate. */
static inline void
shp_cost_sample(struct shp_cost *e, uint64_t ns, uint32_t n)
{
	uint64_t c = (ns << SHP_COST_SHIFT) / n;

	if (c > UINT32_MAX / 2)
		c = UINT32_MAX / 2;
	if (e->samples < SHP_COST_WARMUP) {
		e->samples++;
		if (e->ns == 0 || c < e->ns)
			e->ns = (uint32_t)c;
		return;
	}
	if (c > 2 * (uint64_t)e->ns)
		c = 2 * (uint64_t)e->ns;
	e->ns = (uint32_t)(((uint64_t)e->ns * 15 + c) >> 4);
}

/* ns << SHP_COST_SHIFT to admit and later release one packet, with the
 * margin; 0 while the admission cost is not measured (no limit). */
static inline uint64_t
shp_admit_cost(const struct shp_admit *a)
{
	uint64_t cost;

	if (a->rx.ns == 0)
		return 0;
	cost = a->rx.ns + (a->tx.ns != 0 ? a->tx.ns : 4 * a->rx.ns);
	return cost + cost / SHP_ADMIT_MARGIN;
}

/*
 * The same for an RX-only lcore of a pipeline, whose packets another
 * lcore releases: at its own admission cost or at the TX lcore's
 * published release cost tx (<< SHP_COST_SHIFT), shared among nb_rx RX
 * lcores, whichever is slower; 0 while its own cost is not measured.
 */
static inline uint64_t
shp_admit_cost_rx(const struct shp_admit *a, uint64_t tx, unsigned int nb_rx)
{
	uint64_t own = a->rx.ns;

	if (own == 0)
		return 0;
	/* not measured yet (nothing fell due): guessed as shp_admit_cost
	 * does, high, rather than admitting at RX's own rate for a delay
	 * that the TX lcore then cannot release on time */
	if (tx == 0)
		tx = 4 * own;
	tx *= nb_rx;
	own = RTE_MAX(own, tx);
	return own + own / SHP_ADMIT_MARGIN;
}

/*
 * What a pipeline's TX lcore spends on a packet, all its work included,
 * for the RX lcores that pace at it (shp_admit_cost_rx): the time it
 * spends taking packets in (from a chain's inbox into the queue; none
 * with an MP queue such as the bands, which RX lcores fill themselves)
 * over how many, plus the time of its rounds (the delay line takes them
 * from the queue and lets them go a delay later) over what the port took,
 * each summed over a window. A round's own sample (shp_cost_sample) is no
 * measure here: much of the work on a packet (missing on what another
 * core wrote, placing it in the delay line) is done in rounds that
 * release few, which a sample skips; the published cost swung between 20
 * and 1800 ns, and the RX lcore admitted, for a while at a time, what the
 * TX lcore shed a delay later. The two are
 * taken apart because admission and release are a delay apart, at rates
 * that differ while admission changes. Shed packets count in the time,
 * not in the packets, as in shp_cost_count. Work interrupted by a stall
 * (over SHP_STALL_NS) is the host's and is left out.
 */
#define SHP_LOAD_MIN 8192        /* packets that make a window */
#define SHP_LOAD_IDLE_NS 10000000 /* a window this old says: light load */

struct shp_load {
	uint64_t in_ns;       /* taking packets in */
	uint64_t in;          /* how many */
	uint64_t out_ns;      /* rounds that released or shed a packet */
	uint64_t sent;        /* what the port took in them */
	uint64_t shed;        /* what they shed as `late` */
	uint64_t since;       /* when the window opened */
};

/* Taking `in` packets took in_ns; a round took out_ns, the port took
 * sent and shed were shed. */
static inline void
shp_load_add(struct shp_load *l, uint64_t in_ns, uint32_t in, uint64_t out_ns,
	     uint32_t sent, uint64_t shed)
{
	if (in != 0 && in_ns <= SHP_STALL_NS) {
		l->in_ns += in_ns;
		l->in += in;
	}
	if ((sent != 0 || shed != 0) && out_ns <= SHP_STALL_NS) {
		l->out_ns += out_ns;
		l->sent += sent;
		l->shed += shed;
	}
}

/*
 * The cost (ns << SHP_COST_SHIFT a packet) to publish at `now`, given
 * prev. Once SHP_LOAD_MIN packets were taken in or let go: the sum of the
 * two, followed fast when it rises (half the way: what is admitted too
 * fast now is shed a delay later) and slowly when it falls (an eighth).
 * Until a packet is let go (the first delay) the release is taken as
 * twice the intake. A window that shed more than it sent doubles prev:
 * the lcore is behind. One that stays short of SHP_LOAD_MIN for
 * SHP_LOAD_IDLE_NS is a light load: prev falls by a quarter, so that a
 * cost measured under a stall does not hold admission down forever.
 */
static inline uint32_t
shp_load_cost(struct shp_load *l, uint64_t now, uint32_t prev)
{
	uint64_t c, in_c = 0, out_c;

	if (l->in < SHP_LOAD_MIN && l->sent + l->shed < SHP_LOAD_MIN) {
		if (now - l->since < SHP_LOAD_IDLE_NS)
			return prev;
		c = prev - prev / 4;
	} else if (l->shed > l->sent) {
		c = prev != 0 ? 2 * (uint64_t)prev : 0;
	} else {
		if (l->in != 0)
			in_c = (l->in_ns << SHP_COST_SHIFT) / l->in;
		out_c = l->sent != 0 ? (l->out_ns << SHP_COST_SHIFT) / l->sent
				     : 2 * in_c;
		c = in_c + out_c;
		if (prev != 0)
			c = c > prev ? (prev + c) / 2 : prev - (prev - c) / 8;
	}
	if (c > UINT32_MAX / 2)
		c = UINT32_MAX / 2;
	memset(l, 0, sizeof(*l));
	l->since = now;
	return c != 0 ? (uint32_t)c : prev;
}

/*
 * Refill the credit with the clock. It holds at most SHP_ADMIT_DEPTH_NS of
 * work (never less than two bursts' worth): arrivals above the rate are
 * admitted for that long, and the packets of such a burst leave at most
 * about that much late when their time comes, well within --max-late.
 */
static inline void
shp_admit_refill(struct shp_admit *a, uint64_t now, uint64_t cost,
		 uint16_t burst)
{
	uint64_t depth = (uint64_t)SHP_ADMIT_DEPTH_NS << SHP_COST_SHIFT;

	if (depth < 2 * cost * burst)
		depth = 2 * cost * burst;
	if (now > a->last_ns) {
		a->credit += (now - a->last_ns) << SHP_COST_SHIFT;
		if (a->credit > depth)
			a->credit = depth;
		a->last_ns = now;
	}
}

/*
 * Is it worth polling RX now? Only with credit for half a burst at least:
 * a poll whose packets would mostly be dropped costs the lcore their
 * reception and their freeing, and an lcore that polls as fast as it can
 * while over its rate spends itself on dropping (receive livelock). Not
 * polled, a NIC keeps them and counts what it must drop (imissed).
 */
static inline bool
shp_admit_ready(const struct shp_admit *a, uint64_t cost, uint16_t burst)
{
	return cost == 0 || a->credit >= cost * ((burst + 1) / 2);
}

/* How many of n arrivals may be admitted at `cost` each (the rest are
 * overload); cost 0: all. */
static inline uint16_t
shp_admit(struct shp_admit *a, uint16_t n, uint64_t cost)
{
	uint64_t k;

	if (cost == 0)
		return n;
	k = a->credit / cost;
	if (k > n)
		k = n;
	a->credit -= k * cost;
	return (uint16_t)k;
}

/* Work that admitted nothing (polling and dropping arrivals) still took
 * the lcore's time: it comes off the credit. */
static inline void
shp_admit_charge(struct shp_admit *a, uint64_t ns)
{
	uint64_t c = ns << SHP_COST_SHIFT;

	a->credit = a->credit > c ? a->credit - c : 0;
}

#endif
