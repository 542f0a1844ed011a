/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters.
 *
 * Each lcore owns one block per port and is its only writer: plain
 * increments, no atomics, no shared cache lines on the packet path
 * (seeds/003). Readers sum the blocks of every lcore; a 64-bit aligned load
 * is atomic on the platforms DPDK supports, so a sum is a consistent-enough
 * snapshot while traffic flows and exact when quiescent.
 *
 * Gauges (queue lengths held privately by the TX lcore) are published by
 * their single owner in the same blocks.
 */
#ifndef SHP_STATS_H
#define SHP_STATS_H

#include <stdint.h>
#include <stdio.h>
#include <rte_common.h>

#define SHP_MAX_PORTS  32
#define SHP_MAX_BANDS  16
#define SHP_MAX_LCORES 128

/* Drop causes: every packet that is not sent is counted under one of these. */
enum shp_drop {
	SHP_DROP_BAND_FULL,    /* band ring full at enqueue */
	SHP_DROP_NO_MBUF,      /* RX or a duplicate found the pool empty */
	SHP_DROP_TBF_OVERSIZE, /* larger than the bucket: can never pass */
	SHP_DROP_TBF_LIMIT,    /* pushed out of the lowest band: tbf limit */
	SHP_DROP_NETEM_LIMIT,  /* netem delay queue full */
	SHP_DROP_LOST,         /* netem loss model */
	SHP_DROP_FLUSHED,      /* freed at shutdown or reset while queued */
	SHP_DROP_MAX
};

extern const char *const shp_drop_names[SHP_DROP_MAX];

struct shp_band_ctr {
	uint64_t enqueued;       /* accepted into the band */
	uint64_t enqueued_bytes;
	uint64_t dequeued;
	uint64_t dequeued_bytes;
	uint64_t full;           /* refused: ring full (not in enqueued) */
	uint64_t pushed_out;     /* removed from the head: tbf limit */
	uint64_t pushed_out_bytes;
	uint64_t flushed;        /* freed while queued: shutdown or reset */
};

struct shp_port_ctr {
	/* ingress side */
	uint64_t rx_packets;
	uint64_t rx_bytes;
	/* egress side */
	uint64_t tx_packets;
	uint64_t tx_bytes;
	uint64_t drops[SHP_DROP_MAX];
	/* netem impairment events (not drops unless also in drops[]) */
	uint64_t duplicated;
	uint64_t corrupted;
	uint64_t reordered;
	uint64_t ecn_marked;
	/* time from RX to TX of what was sent (ns); min starts at
	 * UINT64_MAX (shp_stats_init) */
	uint64_t sojourn_sum_ns;
	uint64_t sojourn_min_ns;
	uint64_t sojourn_max_ns;
	/* gauges, written only by the egress owner */
	uint64_t netem_qlen;
	uint64_t tx_pending;
	struct shp_band_ctr band[SHP_MAX_BANDS];
} __rte_cache_aligned;

struct shp_lcore_ctr {
	struct shp_port_ctr port[SHP_MAX_PORTS];
} __rte_cache_aligned;

/* Summed view of one port, as reported. */
struct shp_port_sum {
	struct shp_port_ctr c;
	uint64_t band_depth[SHP_MAX_BANDS];
	uint64_t band_dropped[SHP_MAX_BANDS]; /* full + pushed_out */
	uint64_t queued;       /* bands + netem + tx pending */
	uint64_t egress_in;    /* packets that arrived for this egress port */
	uint64_t dropped;      /* all causes */
};

/* Prepare zeroed counter blocks[0..n) (the sojourn minimum). */
void shp_stats_init(struct shp_lcore_ctr *blocks, unsigned int n);

/* Sum counter blocks[0..n) for port `port`. */
void shp_stats_sum(const struct shp_lcore_ctr *blocks, unsigned int n,
		   uint16_t port, unsigned int nb_bands,
		   struct shp_port_sum *out);

/* Subtract a baseline (for `clear stats`): gauges are kept as they are. */
void shp_stats_sub(struct shp_port_sum *s, const struct shp_port_sum *base,
		   unsigned int nb_bands);

/* Write the --stats-file JSON for ports[0..nb) to f; elapsed_s is how
 * long forwarding ran. */
void shp_stats_write_json(FILE *f, const struct shp_port_sum *sums,
			  const uint16_t *port_ids, unsigned int nb,
			  unsigned int nb_bands, double elapsed_s);

#endif
