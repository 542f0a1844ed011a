/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `disable P|all` and `enable P|all`: a port as a bare wire, its profile
 * kept (labs toggle impairments without forgetting them).
 *
 * A disabled port's arrivals skip every stage (ingress, queue, rate,
 * delay, the classes): RX hands them to the shard's wire ring, an MP/SC
 * rte_ring, and the shard's TX lcore sends them in their order. The
 * stages keep their confs, so `show config` is the same before and after;
 * a `set` while disabled changes the profile the port gets back.
 *
 * No frame is lost or reordered by a toggle:
 *  - disable: what the stages hold when the port is disabled leaves as
 *    the profile said (its delay and rate still hold); what arrives
 *    after waits in the wire ring until the stages are empty, then goes
 *    (the bypass waits for the drain). So after a disable the first
 *    frames may wait up to what the stages held took to leave (a 5 ms
 *    delay: up to 5 ms), then none waits;
 *  - enable: frames from its instant on go to the stages; what the wire
 *    ring still holds leaves first, and nothing in the chain goes out
 *    (neither the RX bypass nor a round) until the ring is empty. An
 *    enable is made only once the stages held nothing more from before
 *    the disable, and a disable only once the ring of the last enable
 *    is empty: the control plane waits for that (a round, or the drain
 *    of the stages) up to SHAPER_WIRE_WAIT_MS, then refuses the command
 *    and changes nothing.
 *
 * The instant: a toggle is a batch (shaper_batch.h) with no change of a
 * stage, one time T for every shard of the ports: a packet stamped at
 * or after T takes the new way on whichever shard carries it. A `link
 * down` still drops (it comes first), and the pool and the port's own
 * limits still hold: what the ring cannot take is dropped as
 * inbox_full.
 *
 * The data path pays one predictable branch per burst on RX (the shard's
 * `wire`, next to `behind` that RX reads anyway) and one per TX round.
 */
#ifndef SHAPER_WIRE_H
#define SHAPER_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "shaper.h"
#include "shp_egress.h"

/* struct egress's wire: 0 as always, else one of these (the owner's) */
#define SHAPER_WIRE_OFF   1u   /* disabled: RX hands over to the ring */
#define SHAPER_WIRE_DRAIN 4u   /* (with OFF) the stages still hold what
				* came before the disable */
#define SHAPER_WIRE_LEFT  2u   /* enabled, the ring still holds some */

/* How long a toggle waits for the state it needs (above) */
#define SHAPER_WIRE_WAIT_MS 2000

/* `disable|enable P|all` (port -1: all): 0, or -1 with err and nothing
 * changed. Main lcore. */
int shaper_wire_set(struct shaper *s, int port, bool disable, char *err);
/* Is port p disabled (as the control plane last said)? */
bool shaper_wire_disabled(const struct shaper *s, uint16_t p);
/* The batch's instant, on the owner (or the main lcore with the workers
 * stopped): shard e takes the new state. */
void shaper_wire_make(struct egress *e, bool disable);
/* After the workers stopped: what the rings hold, freed as flushed. */
void shaper_wire_flush(struct shaper *s);
void shaper_wire_fini(struct shaper *s);

/*
 * RX, a burst stamped now for a disabled shard e (wire & OFF): counted
 * as received and offered, into the ring in order; what it cannot take
 * is inbox_full.
 */
static inline void
shaper_wire_rx(struct egress *e, struct rte_mbuf **pkts, uint16_t n,
	       struct shp_port_ctr *in, struct shp_port_ctr *out,
	       uint64_t now)
{
	uint64_t bytes = 0;
	unsigned int ok;
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct shp_meta *m = shp_meta(pkts[i]);

		m->rx_ns = now;
		m->time_to_send = 0;
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
	}
	in->rx_packets += n;
	in->rx_bytes += bytes;
	out->egress_in += n;
	ok = rte_ring_enqueue_burst(e->wire_ring, (void **)pkts, n, NULL);
	if (unlikely(ok < n)) {
		out->drops[SHP_DROP_INBOX_FULL] += n - ok;
		rte_pktmbuf_free_bulk(pkts + ok, n - ok);
	}
}

/* Does e's chain hold anything (its stages, its inbox)? */
static inline bool
shaper_wire_chain_busy(const struct egress *e)
{
	return shp_chain_inbox_count(e->chain) != 0 ||
	       shp_qdisc_qlen_total(e->chain->root) != 0;
}

/*
 * A TX round of shard e with wire != 0, after what the port refused went
 * (none waits): true when the round is done (the wire sent), false when
 * the chain's round is to run. budget: packets at most; pkts: scratch
 * of a burst.
 */
static inline bool
shaper_wire_tx(struct egress *e, struct shp_port_ctr *pc,
	       const struct shp_egress_io *io, struct rte_mbuf **pkts,
	       uint16_t burst, unsigned int budget)
{
	unsigned int done = 0, left;
	uint8_t w = e->wire;

	if (w & SHAPER_WIRE_OFF) {
		/* what the ring holds, then what the chain holds: a frame
		 * an RX lcore put in the chain before one it put in the
		 * ring is seen (the ring's release, this fence) */
		left = rte_ring_count(e->wire_ring);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (shaper_wire_chain_busy(e))
			return false;   /* the stages drain first */
		if (w & SHAPER_WIRE_DRAIN)
			e->wire = SHAPER_WIRE_OFF;
	} else {
		left = rte_ring_count(e->wire_ring);
	}
	while (left > 0 && done < budget) {
		uint16_t n = (uint16_t)rte_ring_dequeue_burst(e->wire_ring,
			(void **)pkts, RTE_MIN(left, (unsigned int)burst),
			NULL);
		uint16_t sent;

		if (n == 0)
			break;
		sent = io->tx(io->arg, pkts, n, io->now(io->arg),
			      UINT64_MAX, 0);
		left -= n;
		done += n;
		if (unlikely(sent < n)) {
			/* goes first at the next round (shp_pending) */
			shp_pending_keep(&e->pend, pc, pkts + sent, n - sent);
			return true;
		}
	}
	if (w & SHAPER_WIRE_OFF)
		return true;
	/* the chain waits for the ring, and for the main lcore's word
	 * that no RX lcore still hands over into it (shaper_wire_set) */
	if (left > 0 || rte_ring_count(e->wire_ring) != 0 ||
	    !__atomic_load_n(&e->wire_sealed, __ATOMIC_ACQUIRE))
		return true;
	e->wire = 0;           /* enabled, and the ring empty */
	return false;
}

#endif
