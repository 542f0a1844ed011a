/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which RX queue a NIC's RSS puts a frame in, for a link spread over N
 * shards (issue 24) where no NIC does the spreading: the offline tool
 * (dpdk-shaper-replay --queues N), and the tests that check a flow stays
 * on one shard.
 *
 * It does what a NIC configured the common default way does: the
 * Toeplitz hash (DPDK's rte_softrss) with the 40-byte key most PMDs and
 * testpmd default to, over the IPv4 or IPv6 source and destination
 * addresses and, for TCP, UDP and SCTP frames that carry them (not a
 * later fragment), the ports; a 128-entry redirection table that deals
 * the queues round robin (entry i is queue i mod N). Frames that are not
 * IP go to queue 0. The headers are the walker's (shp_pkthdr.h): VLAN
 * tags are looked through, as NICs do.
 */
#ifndef SHP_RSS_H
#define SHP_RSS_H

#include <stdint.h>
#include <rte_mbuf.h>

#define SHP_RSS_KEY_LEN 40
#define SHP_RSS_RETA_SIZE 128

/* The 40-byte Toeplitz key of Microsoft's RSS specification, which
 * testpmd and most PMDs use when none is given. */
extern const uint8_t shp_rss_default_key[SHP_RSS_KEY_LEN];

struct shp_rss {
	/* rte_softrss reads it a 32-bit word at a time */
	uint8_t key[SHP_RSS_KEY_LEN] __rte_aligned(4);
	uint16_t reta[SHP_RSS_RETA_SIZE];
	uint16_t nb_queues;
};

/* nb_queues >= 1; key NULL: the default one. */
void shp_rss_init(struct shp_rss *r, uint16_t nb_queues, const uint8_t *key);

/* The frame's RSS hash; 0 for a frame that is not IP (*ip false). */
uint32_t shp_rss_hash(const struct shp_rss *r, const struct rte_mbuf *m,
		      int *ip);

/* The queue the frame goes to. */
uint16_t shp_rss_queue(const struct shp_rss *r, const struct rte_mbuf *m);

#endif
