/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --schedule in the program (lib/conf/schedule.h has the format), and the
 * link state (`link down|up P`).
 *
 * Who does what:
 *  - at start, the main lcore reads the file, checks it against the
 *    chains, and parses every `set`/`clear` into confs ahead of time: per
 *    port and change a small ring of ready confs, where a change is the
 *    last line for a stage at one instant (the lines before it at that
 *    instant are counted with it: no packet can meet them);
 *  - the owner makes at most one change a stage a pass: the newest due;
 *    the changes to it of earlier times due with it are counted missed
 *    (their time went by before the data path got there), and so are whole
 *    cycles of a `repeat` it is behind by (skipped by arithmetic: a pass
 *    walks two cycles at most, whatever the stall). When the newest has
 *    no conf yet or no room to give the old one back, it is made at a
 *    later TX round (shaper_sched_retry): late, never dropped;
 *  - the owner lcore of an egress port (its TX lcore), at the start of
 *    each TX round, and the RX lcore that owns the port too, for each
 *    burst it stamps, publishes the next event's conf once the clock has
 *    passed its time: a packet stamped at or after the time meets the new
 *    conf (it enters the chain after the switch); netem computes a send
 *    time when it takes a packet in, so what it holds keeps its time. The
 *    old conf goes back to the main lcore on another ring;
 *  - an RX-only lcore (a pipeline) with a burst stamped at or after the
 *    next event's time waits, before it hands the burst on, until the
 *    owner has published it (shaper_sched_wait): the owner does so at
 *    the start of its next TX round, so the wait is one TX round at most,
 *    once per change, and the burst enters the chain after the switch,
 *    as in run to completion. The owner's own TX rounds can no longer
 *    take it under the old conf: a round that began before the time does
 *    not see it. An lcore that also transmits (for another port) does not
 *    wait -- two of them could wait for each other -- and is exact only
 *    for the ports it owns;
 *  - the main lcore (ctl_tick) frees the old confs after an RCU grace
 *    period and parses new ones for the next cycles of a `repeat`;
 *  - a port spread over shards (--queues N): each shard walks the port's
 *    changes with its own cursor and rings, made by the shard's owner as
 *    above, at the link's instants (start + c x repeat + t, the same
 *    start for every shard) by its own clock reading. The conf a shard
 *    makes for an occurrence carries the occurrence's id, drawn by the
 *    main lcore in occurrence order (lib/conf/sched_walk.h), not one of
 *    its own: a shard that skipped whole cycles and one that walked them
 *    make the same id, and the link's shared state (a bucket) sees one
 *    change per occurrence;
 *  - the link state is a function of the time (shp_sched_link_down) and
 *    of the last `link down|up` typed: every RX lcore asks it for each
 *    burst, with the burst's own stamp, so the window is exact.
 */
#ifndef SHAPER_SCHEDULE_H
#define SHAPER_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "shaper.h"

/* Absolute clock time of the next `set`/`clear` occurrence of port p's
 * shard q (UINT64_MAX: none); written by the shard's owner only. */
extern uint64_t shaper_sched_next[SHP_MAX_PORTS][SHP_MAX_QUEUES];
/* RX must look at the schedule for packets to port p: it has link
 * events, a `link` command was typed, or it has events the RX lcore may
 * apply as the owner. */
extern volatile bool shaper_sched_rx[SHP_MAX_PORTS];
/* Port p's shard q's owner has a change that came due and waits for its
 * conf or for room to give the old one back: it tries again each TX
 * round. The owner's own. */
extern bool shaper_sched_retry[SHP_MAX_PORTS][SHP_MAX_QUEUES];

/* After the chains are built: read and check --schedule. 0, or -1 after
 * one line naming the file and line (exit 2). */
int shaper_sched_init(struct shaper *s);
/* At s->start_ns: the times count from now. */
void shaper_sched_start(struct shaper *s);
/* Main lcore, from ctl_tick: free the old confs, arm the next cycles. */
void shaper_sched_tick(struct shaper *s);
/* Main lcore, after the control plane changed a stage: what the stages
 * run now is no step of the schedule (its events: events.h). */
void shaper_sched_seen(struct shaper *s);
/* After the workers stopped. */
void shaper_sched_fini(struct shaper *s);

/* Owner of port p's shard q (0: the port): publish every event due at
 * now. */
void shaper_sched_run(struct shaper *s, uint16_t p, uint16_t q,
		      uint64_t now);
/* An RX-only lcore (a pipeline): wait until the owner of port p's shard
 * q has published every event due at now (or the workers pause or
 * stop). */
void shaper_sched_wait(struct shaper *s, uint16_t p, uint16_t q,
		       uint64_t now);

/* Is port p's link down for a packet stamped now? */
bool shaper_link_is_down(const struct shaper *s, uint16_t p, uint64_t now);

/* `link down|up P|all`, with carrier: `link down P carrier` (the port's
 * carrier too, where its driver can; `link up` brings back a carrier
 * taken down). 0, or -1 with err. Main lcore. */
int shaper_link_set(struct shaper *s, int port, bool down, bool carrier,
		    char *err);
/* Main lcore, each control tick: the carrier of a port whose netem has
 * `outage ON OFF carrier` follows its outages (set where the driver can),
 * a tick after the data path met the change: the owner lcore never calls
 * ethdev's control functions. */
void shaper_carrier_tick(struct shaper *s);
/* `show schedule` */
void shaper_sched_show(struct shaper *s, FILE *f);

/* TX round of port p's shard q, before it dequeues. */
static inline void
shaper_sched_tx(struct shaper *s, uint16_t p, uint16_t q)
{
	if (unlikely(shaper_sched_next[p][q] != UINT64_MAX ||
		     shaper_sched_retry[p][q])) {
		uint64_t now = shp_clock_now(&s->clock);

		if (now >= shaper_sched_next[p][q] || shaper_sched_retry[p][q])
			shaper_sched_run(s, p, q, now);
	}
}

/*
 * RX, a burst stamped `now` for egress port p's shard q (owner: this
 * lcore owns that shard too; rx_only: it transmits for no port): due
 * events first, made by the owner or waited for, then the link. True
 * when the link is down: the burst was counted (offered to p, dropped as
 * link_down) and freed.
 */
static inline bool
shaper_sched_rx_burst(struct shaper *s, uint16_t p, uint16_t q, bool owner,
		      bool rx_only, struct rte_mbuf **pkts, uint16_t n,
		      struct shp_port_ctr *in, const struct shp_ctx *ctx)
{
	struct shp_port_ctr *out = ctx->ctr;
	uint64_t now = ctx->now;
	uint64_t bytes = 0;
	uint16_t i;

	if (now >= __atomic_load_n(&shaper_sched_next[p][q],
				   __ATOMIC_ACQUIRE)) {
		if (owner)
			shaper_sched_run(s, p, q, now);
		else if (rx_only)
			shaper_sched_wait(s, p, q, now);
	}
	if (!shaper_link_is_down(s, p, now))
		return false;
	for (i = 0; i < n; i++)
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
	in->rx_packets += n;
	in->rx_bytes += bytes;
	out->egress_in += n;
	out->drops[SHP_DROP_LINK_DOWN] += n;
	shp_drop_capture(ctx, SHP_DROP_LINK_DOWN, SHP_CAP_NO_BAND, pkts, n);
	rte_pktmbuf_free_bulk(pkts, n);
	return true;
}

#endif
