/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pfifo_fast with N bands, one rte_ring per band.
 *
 * Producers (RX lcores, any number) enqueue with shp_qdisc_enqueue(), each
 * packet going to the band its priority (meta->prio) has in the conf's
 * priomap, or with the RX pass's bands (enqueue_rx: the chain's priomap,
 * the same map). The one consumer (the TX lcore owning the
 * egress port) dequeues strictly by priority: band 0 first, FIFO within a
 * band, the band chosen as the lowest set bit of a bitmap of non-empty bands.
 *
 * With a byte limit set (tbf `limit`), the consumer keeps the bytes queued
 * in all bands within the limit by pushing out packets from the head of the
 * lowest-priority non-empty band, so overload always costs the lowest band
 * first (counted as tbf_limit).
 */
#ifndef SHP_SCH_BANDS_H
#define SHP_SCH_BANDS_H

#include "shp_qdisc.h"

struct shp_bands_conf {
	struct shp_conf_hdr hdr;   /* first: shp_qdisc.h */
	const char *name;          /* ring name prefix, unique per port */
	unsigned int nb_bands;     /* 1..SHP_MAX_BANDS */
	unsigned int ring_size;    /* packets per band (exact) */
	int socket;
	int single_producer;       /* only one RX lcore feeds this port */
	/* Counter blocks of every lcore, to sum producer-side byte counters
	 * for the limit. */
	const struct shp_lcore_ctr *ctr_blocks;
	unsigned int nb_ctr_blocks;
	/* those of the link's every shard (shp_stage_env's; NULL: none) */
	const struct shp_lcore_ctr *link_ctr_blocks;
	unsigned int nb_link_ctr_blocks;
	bool lean;           /* shp_stage_env's */
	/* the band of each priority 0..15 (the RX pass maps with it, from
	 * the chain: shp_chain.priomap) */
	uint8_t priomap[16];
	bool bands_set;      /* nb_bands, priomap given by its text; */
	bool priomap_set;    /* what is not, the aliases gave (--bands, */
	bool alias_map;      /* --priomap: true, or the default map) */
};
SHP_CONF_HDR_FIRST(struct shp_bands_conf);

/*
 * The RX path's enqueue, from what shp_classify_burst_bands() gathered in
 * its pass: pkts[i] goes to band[i] (a band past the last is clamped, in
 * place), used is the set of bands in band[], bytes the pkt_len sum of
 * pkts[0..n). Same contract as enqueue otherwise.
 */
uint16_t shp_bands_enqueue_vec(struct shp_qdisc *q, struct rte_mbuf **pkts,
			       uint8_t *band, uint32_t used, uint64_t bytes,
			       uint16_t n, struct shp_ctx *ctx);

/* Bytes allowed in all bands together; 0 = no limit. Control plane. */
void shp_bands_set_limit(struct shp_qdisc *q, uint64_t bytes);

/* The bitmap of bands believed non-empty (for tests and `show bands`). */
uint32_t shp_bands_bitmap(const struct shp_qdisc *q);

/* Packets in band b (ring plus the consumer's stash). */
unsigned int shp_bands_count(const struct shp_qdisc *q, unsigned int b);

unsigned int shp_bands_nb(const struct shp_qdisc *q);

/* The ops, for tests and benchmarks that build a stage by hand; the
 * program finds them through the kind (shp_kind_find("pfifo_fast")). */
extern const struct shp_qdisc_ops shp_bands_ops;

#endif
