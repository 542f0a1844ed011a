/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>
#include <rte_byteorder.h>
#include <rte_thash.h>

#include "shp_pkthdr.h"
#include "shp_rss.h"

const uint8_t shp_rss_default_key[SHP_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

void
shp_rss_init(struct shp_rss *r, uint16_t nb_queues, const uint8_t *key)
{
	unsigned int i;

	if (nb_queues == 0)
		nb_queues = 1;
	memcpy(r->key, key != NULL ? key : shp_rss_default_key,
	       SHP_RSS_KEY_LEN);
	for (i = 0; i < SHP_RSS_RETA_SIZE; i++)
		r->reta[i] = (uint16_t)(i % nb_queues);
	r->nb_queues = nb_queues;
}

/* The protocols whose ports NICs hash by default (RTE_ETH_RSS_IP with
 * the TCP, UDP and SCTP types): TCP, UDP, SCTP. */
static int
hashes_ports(uint8_t proto)
{
	return proto == 6 || proto == 17 || proto == 132;
}

uint32_t
shp_rss_hash(const struct shp_rss *r, const struct rte_mbuf *m, int *ip)
{
	union rte_thash_tuple t;
	struct shp_pkthdr h;
	uint32_t len;
	int ports;
	unsigned int i;

	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L4);
	*ip = (h.flags & SHP_PKTHDR_F_L3) != 0;
	if (!*ip)
		return 0;
	ports = (h.flags & SHP_PKTHDR_F_PORTS) &&
		(h.flags & SHP_PKTHDR_F_PROTO) && hashes_ports(h.ip_proto);
	memset(&t, 0, sizeof(t));
	if (h.l3_type == SHP_PKTHDR_IPV4) {
		t.v4.src_addr = rte_be_to_cpu_32(h.src.v4);
		t.v4.dst_addr = rte_be_to_cpu_32(h.dst.v4);
		if (ports) {
			t.v4.sport = h.sport;
			t.v4.dport = h.dport;
		}
		len = ports ? RTE_THASH_V4_L4_LEN : RTE_THASH_V4_L3_LEN;
	} else {
		for (i = 0; i < 4; i++) {
			uint32_t s, d;

			memcpy(&s, h.src.v6 + 4 * i, 4);
			memcpy(&d, h.dst.v6 + 4 * i, 4);
			((uint32_t *)t.v6.src_addr)[i] = rte_be_to_cpu_32(s);
			((uint32_t *)t.v6.dst_addr)[i] = rte_be_to_cpu_32(d);
		}
		if (ports) {
			t.v6.sport = h.sport;
			t.v6.dport = h.dport;
		}
		len = ports ? RTE_THASH_V6_L4_LEN : RTE_THASH_V6_L3_LEN;
	}
	return rte_softrss((uint32_t *)&t, len, r->key);
}

uint16_t
shp_rss_queue(const struct shp_rss *r, const struct rte_mbuf *m)
{
	int ip;
	uint32_t hash = shp_rss_hash(r, m, &ip);

	if (!ip)
		return 0;
	/* NICs index the table with the hash's low bits */
	return r->reta[hash & (SHP_RSS_RETA_SIZE - 1)];
}
