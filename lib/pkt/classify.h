/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classification: packet headers -> priority (0..15) -> band via priomap
 * (the port's queue's own: shp_chain_priomap; the global one in struct
 * shp_classifier is the aliases', --priomap and `set priomap`).
 *
 * Priorities are Linux TC_PRIO values, so the priomap means the same as in
 * `tc qdisc add ... pfifo_fast` / `prio`. Anything that cannot be parsed
 * (runt, truncated, non-IP, unknown) gets priority 0 (best effort).
 */
#ifndef SHP_CLASSIFY_H
#define SHP_CLASSIFY_H

#include <stdint.h>
#include <rte_mbuf.h>

#include "shp_units.h"

#define SHP_PRIO_MAX 15

enum shp_classify_mode {
	SHP_CLASSIFY_TOS,   /* IPv4 TOS / IPv6 traffic class, ip_tos2prio */
	SHP_CLASSIFY_DSCP,  /* DSCP class selector -> priority */
	SHP_CLASSIFY_PCP,   /* outer VLAN PCP -> priority; untagged: 0 */
	SHP_CLASSIFY_NONE,  /* everything priority 0 */
};

/* Immutable once published (the data path reads it without locks). */
struct shp_classifier {
	enum shp_classify_mode mode;
	uint8_t nb_bands;
	uint8_t priomap[SHP_PRIO_MAX + 1];
};

/* Priority of one frame. Safe on any frame: reads through
 * rte_pktmbuf_read, never past the data. */
uint8_t shp_classify_prio(enum shp_classify_mode mode,
			  const struct rte_mbuf *m);

/* Initialise the metadata of freshly received pkts[0..n): arrival time
 * rx_ns, priority and band (shp_meta_rx). */
void shp_classify_burst(const struct shp_classifier *c,
			struct rte_mbuf **pkts, uint16_t n, uint64_t rx_ns);

/*
 * The same in the one pass the RX path needs: also writes each packet's
 * band to band[0..n), its pkt_len sum to *bytes, and returns the set of
 * bands used (bit b for band b), for shp_bands_enqueue_vec().
 */
uint32_t shp_classify_burst_bands(const struct shp_classifier *c,
				  struct rte_mbuf **pkts, uint16_t n,
				  uint64_t rx_ns, uint8_t *band,
				  uint64_t *bytes);

/*
 * The classification alone: prio[i] and band[i] of pkts[i], *bytes and the
 * set of bands as above, the metadata left untouched. For a caller that
 * may send the burst at once (the RX bypass): it writes the metadata
 * (shp_meta_rx_burst) only for what it keeps.
 */
uint32_t shp_classify_bands(const struct shp_classifier *c,
			    struct rte_mbuf **pkts, uint16_t n, uint8_t *prio,
			    uint8_t *band, uint64_t *bytes);

/*
 * The same two with the map of the queue the packets go to (its kind's
 * priomap: each port's pfifo_fast has its own) instead of c's, which is
 * what the aliases set (--priomap, `set priomap`); map NULL: c's.
 */
uint32_t shp_classify_bands_map(const struct shp_classifier *c,
				const uint8_t *map, struct rte_mbuf **pkts,
				uint16_t n, uint8_t *prio, uint8_t *band,
				uint64_t *bytes);
uint32_t shp_classify_burst_map(const struct shp_classifier *c,
				const uint8_t *map, struct rte_mbuf **pkts,
				uint16_t n, uint64_t rx_ns, uint8_t *band,
				uint64_t *bytes);

/* Default priomap for nb bands: Linux's 3-band map, clamped to nb-1. */
void shp_priomap_default(uint8_t nb_bands, uint8_t priomap[16]);

/* "1,2,2,2,..." (16 values, commas or spaces), each < nb_bands. */
int shp_priomap_parse(const char *s, uint8_t nb_bands, uint8_t priomap[16],
		      char *err);

int shp_classify_mode_parse(const char *s, enum shp_classify_mode *mode,
			    char *err);
const char *shp_classify_mode_name(enum shp_classify_mode mode);

#endif
