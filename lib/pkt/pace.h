/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replay at the capture's own timing (dpdk-shaper --pace), as tcpreplay
 * does: a packet read from a capture is held until its offset in the
 * capture (from the first packet of its queue) has elapsed on the shaper's
 * clock, then passed on stamped with that time.
 *
 * The capture time comes from the mbuf's RX timestamp dynfield, which
 * net_pcap fills from the record (microseconds since the epoch in DPDK
 * 22.11, whether or not the RX timestamp offload was asked for).
 *
 * One pacer per RX queue, used by the lcore polling that queue only. It
 * works on bursts: the caller reads a burst only when the pacer holds
 * nothing, so a pacer holds at most one burst (the queue keeps the rest of
 * the capture), and a poll costs one clock read and a comparison per
 * released packet. No syscall, no allocation.
 */
#ifndef SHP_PACE_H
#define SHP_PACE_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_mbuf.h>

/* The largest burst a pacer holds (SHP_MAX_BURST). */
#define SHP_PACE_MAX 512

struct shp_pace {
	int ts_off;             /* RX timestamp dynfield offset */
	uint64_t ts_flag;       /* ol_flags bit: the field is valid */
	uint64_t ns_per_unit;   /* of the field: 1000 for net_pcap */
	bool started;
	uint64_t cap0;          /* capture time of the first packet, ns */
	uint64_t clk0;          /* shaper clock when it was read, ns */
	uint64_t last_due;
	uint16_t head, n;       /* held: pkts[head .. head + n) */
	/* how often the order was kept over the timestamps (tests) */
	uint64_t unstamped;     /* no timestamp: passed on behind the last */
	uint64_t backwards;     /* earlier than the one before: likewise */
	struct rte_mbuf *pkts[SHP_PACE_MAX];
	uint64_t due[SHP_PACE_MAX];
};

/* 0, or -1 when no driver registered the RX timestamp field (no capture
 * times to pace by). ns_per_unit: nanoseconds per unit of the field. */
int shp_pace_init(struct shp_pace *p, uint64_t ns_per_unit);

/* Packets held, not yet due. */
static inline uint16_t
shp_pace_held(const struct shp_pace *p)
{
	return p->n;
}

/*
 * Take pkts[0..n) just read (n <= SHP_PACE_MAX) into an empty pacer at
 * clock `now`, each due at the clock value its capture offset names. The
 * first packet ever held sets the origin: due at once. A queue stays in
 * order: a packet without a timestamp, or with one earlier than the
 * previous packet's, is due with the previous one.
 */
void shp_pace_hold(struct shp_pace *p, struct rte_mbuf **pkts, uint16_t n,
		   uint64_t now);

/* Move the held packets due at `now` (a prefix) to out; *stamp is set to
 * the due time of the last one, the arrival time to give them. Returns
 * how many. */
uint16_t shp_pace_release(struct shp_pace *p, uint64_t now,
			  struct rte_mbuf **out, uint64_t *stamp);

/* At shutdown: move everything held to out, due or not. */
uint16_t shp_pace_take_all(struct shp_pace *p, struct rte_mbuf **out);

#endif
