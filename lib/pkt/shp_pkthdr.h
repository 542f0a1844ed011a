/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The packet-header walker: the one reading of a frame's L2/L3/L4 headers
 * for everything that needs them (classify on RX, the ECN marks of netem
 * and fq_codel, fq_codel's flow hash, the class match keys), so that they
 * all agree on which frames are IP and where the headers are.
 *
 * What it walks:
 *   Ethernet, then up to SHP_PKTHDR_MAX_TAGS VLAN tags of any of the TPIDs
 *   0x8100 (802.1Q), 0x88a8 (802.1ad), 0x9100 and 0x9200 (pre-standard
 *   QinQ), in any order (a frame with more tags stops at the last one
 *   walked: its eth_type is that TPID, and it is not IP);
 *   IPv4 (version 4, IHL >= 5) or IPv6 (version 6) by the innermost
 *   EtherType; for IPv6 the hop-by-hop, routing, destination options and
 *   fragment extension headers (up to SHP_PKTHDR_MAX_EXT of them), so that
 *   ip_proto is the upper-layer protocol;
 *   the source and destination ports of TCP, UDP, UDP-Lite, SCTP and DCCP,
 *   unless the packet is a fragment other than the first (which carries no
 *   transport header).
 *
 * Safety: every byte is read in place when it is in the first segment (the
 * fast path), else copied out of the chain by __rte_pktmbuf_read(), as
 * rte_pktmbuf_read() does, so any frame is fine: runts, truncated headers, headers split
 * across segments. Nothing past pkt_len is read. A field is reported (its
 * flag set) only if every byte it comes from was read; a header cut short
 * ends the walk with what came before it. Ports are also not read beyond
 * the IP packet's own length (IPv4 total length, IPv6 payload length), so
 * Ethernet padding is never taken for a transport header; a length that
 * bounds nothing (IPv6 payload length 0, a jumbogram; IPv4 total length
 * below the header's own, as in GSO or BIG TCP packets) leaves the frame
 * as the bound.
 *
 * Cost: the walker is inline and takes how deep to go (a constant at each
 * call site), so classify's TOS reading compiles to the Ethernet, tags and
 * fixed IP header steps only, with no function call per packet.
 *
 * For a flow (fq_codel's hash, per-class match rules): l3_type, src, dst,
 * ip_proto and, with SHP_PKTHDR_F_PORTS, sport/dport are the 5-tuple;
 * vlan_id, tos and eth_type are the other match keys. src and dst are
 * always 16 bytes with IPv4 addresses in .v4 and the rest zero, so a
 * key can be hashed or compared as whole fields. A first fragment has its
 * ports; a hash that must keep a datagram's fragments in one flow leaves
 * them out when F_FRAG is set (fq_codel does).
 */
#ifndef SHP_PKTHDR_H
#define SHP_PKTHDR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <rte_common.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#define SHP_PKTHDR_MAX_TAGS 4   /* VLAN tags followed */
#define SHP_PKTHDR_MAX_EXT  8   /* IPv6 extension headers skipped */

/* How far to walk: what the caller needs, a constant at each call. */
enum shp_pkthdr_depth {
	SHP_PKTHDR_L2,   /* Ethernet and VLAN tags */
	SHP_PKTHDR_L3,   /* and the fixed IPv4 / IPv6 header */
	SHP_PKTHDR_L4,   /* and IPv6 extension headers, transport ports */
};

/* flags: which fields hold what the frame says (read in full) */
#define SHP_PKTHDR_F_ETH   0x01 /* eth_type, l3_off */
#define SHP_PKTHDR_F_VLAN  0x02 /* vlan_id, pcp: the outermost tag */
#define SHP_PKTHDR_F_L3    0x04 /* l3_type, tos, src, dst */
#define SHP_PKTHDR_F_PROTO 0x08 /* ip_proto, l4_off: the upper layer */
#define SHP_PKTHDR_F_FRAG  0x10 /* an IP fragment (first or not) */
#define SHP_PKTHDR_F_LATER 0x20 /* a fragment at offset > 0: no L4 header */
#define SHP_PKTHDR_F_PORTS 0x40 /* sport, dport */

/* l3_type */
#define SHP_PKTHDR_IPV4 4
#define SHP_PKTHDR_IPV6 6

union shp_ipaddr {
	rte_be32_t v4;       /* IPv4: the address, v6[4..15] zero */
	uint8_t v6[16];
};

struct shp_pkthdr {
	uint8_t flags;       /* SHP_PKTHDR_F_* */
	uint8_t nb_tags;     /* VLAN tags whose TCI was read (0..MAX_TAGS);
			      * > 0 exactly when F_VLAN */
	uint8_t pcp;         /* outer tag: priority code point (F_VLAN) */
	uint8_t l3_type;     /* SHP_PKTHDR_IPV4 / _IPV6 (F_L3), else 0:
			      * != 0 exactly when F_L3 */
	uint16_t vlan_id;    /* outer tag: VLAN id, 12 bits (F_VLAN) */
	uint16_t eth_type;   /* innermost EtherType, host order (F_ETH) */
	uint16_t l3_off;     /* first byte after the EtherType (F_ETH) */
	uint16_t l4_off;     /* first byte after the IP headers (F_PROTO) */
	uint8_t tos;         /* IPv4 TOS / IPv6 traffic class, ECN in the
			      * low 2 bits (F_L3) */
	uint8_t ip_proto;    /* (F_L3) the upper-layer protocol with
			      * F_PROTO; without it (IPv6), the type of the
			      * extension header the walk stopped at, as
			      * Linux's flow dissector reports it */
	uint16_t sport;      /* transport ports, host order (F_PORTS) */
	uint16_t dport;
	union shp_ipaddr src;   /* network order (F_L3) */
	union shp_ipaddr dst;
};

static __rte_always_inline int
shp_pkthdr_is_tpid(uint16_t et)
{
	return et == RTE_ETHER_TYPE_VLAN || et == RTE_ETHER_TYPE_QINQ ||
	       et == RTE_ETHER_TYPE_QINQ1 || et == RTE_ETHER_TYPE_QINQ2;
}

/* The IPv6 extension headers walked over: hop-by-hop, routing, fragment,
 * destination options. */
static __rte_always_inline int
shp_pkthdr_is_v6ext(uint8_t nh)
{
	return nh == 0 || nh == 43 || nh == 44 || nh == 60;
}

/* Transport protocols whose header starts with 16-bit source and
 * destination ports: TCP, UDP, DCCP, SCTP, UDP-Lite. */
static __rte_always_inline int
shp_pkthdr_has_ports(uint8_t proto)
{
	return proto == 6 || proto == 17 || proto == 33 || proto == 132 ||
	       proto == 136;
}

static __rte_always_inline uint16_t
shp_pkthdr_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Where the walker reads: the first segment's data, looked up once per
 * packet (rte_pktmbuf_read() would reload it at every header, as its
 * buffer escapes to the slow path), and the mbuf for the rest.
 */
struct shp_pkthdr_cur {
	const struct rte_mbuf *m;
	const uint8_t *base;
	uint32_t dlen;
};

/* len bytes at off: in place if in the first segment, else copied into
 * buf from the chain; NULL if the packet is shorter. */
static __rte_always_inline const uint8_t *
shp_pkthdr_read(const struct shp_pkthdr_cur *c, uint32_t off, uint32_t len,
		void *buf)
{
	if (likely(off + len <= c->dlen))
		return c->base + off;
	return (const uint8_t *)__rte_pktmbuf_read(c->m, off, len, buf);
}

/* The outermost tag's TCI at p. */
static __rte_always_inline void
shp_pkthdr_tci(struct shp_pkthdr *h, const uint8_t *p)
{
	uint16_t tci = shp_pkthdr_be16(p);

	h->vlan_id = tci & 0xfff;
	h->pcp = (uint8_t)(tci >> 13);
	h->flags |= SHP_PKTHDR_F_VLAN;
}

/* Skip IPv6 extension headers from *off (the first of type *nh): on
 * return *off and *nh are the upper layer's. 0 if cut short or too many. */
static __rte_always_inline int
shp_pkthdr_skip_v6ext(const struct shp_pkthdr_cur *c, struct shp_pkthdr *h,
		      uint32_t *off, uint8_t *nh)
{
	uint8_t buf[8];
	const uint8_t *p;
	int i;

	for (i = 0; shp_pkthdr_is_v6ext(*nh); i++) {
		if (i == SHP_PKTHDR_MAX_EXT)
			return 0;
		if (*nh == 44) {
			/* fragment header: 8 bytes, the offset in the
			 * upper 13 bits of bytes 2-3 */
			p = shp_pkthdr_read(c, *off, 8, buf);
			if (p == NULL)
				return 0;
			*nh = p[0];
			*off += 8;
			h->flags |= SHP_PKTHDR_F_FRAG;
			if (shp_pkthdr_be16(p + 2) & 0xfff8) {
				/* what follows is payload, not headers */
				h->flags |= SHP_PKTHDR_F_LATER;
				return 1;
			}
		} else {
			/* next header, length in 8 bytes not counting the
			 * first 8 */
			p = shp_pkthdr_read(c, *off, 2, buf);
			if (p == NULL)
				return 0;
			*nh = p[0];
			*off += ((uint32_t)p[1] + 1) * 8;
		}
	}
	return 1;
}

/* The transport ports at h->l4_off, if the protocol has them and they are
 * within the IP packet, which ends at end. */
static __rte_always_inline void
shp_pkthdr_ports(const struct shp_pkthdr_cur *c, struct shp_pkthdr *h,
		 uint32_t end)
{
	uint8_t buf[4];
	const uint8_t *p;

	if ((h->flags & SHP_PKTHDR_F_LATER) ||
	    !shp_pkthdr_has_ports(h->ip_proto) ||
	    (uint32_t)h->l4_off + 4 > end)
		return;
	p = shp_pkthdr_read(c, h->l4_off, 4, buf);
	if (p == NULL)
		return;
	h->sport = shp_pkthdr_be16(p);
	h->dport = shp_pkthdr_be16(p + 2);
	h->flags |= SHP_PKTHDR_F_PORTS;
}

/**
 * Walk m's headers as deep as depth and fill h (see the flags for what
 * was found; fields without their flag are unspecified). Never fails and
 * never reads past the packet's data.
 */
static __rte_always_inline void
shp_pkthdr_parse(const struct rte_mbuf *m, struct shp_pkthdr *h,
		 enum shp_pkthdr_depth depth)
{
	const struct shp_pkthdr_cur cur = {
		.m = m,
		.base = rte_pktmbuf_mtod(m, const uint8_t *),
		.dlen = rte_pktmbuf_data_len(m),
	};
	const struct shp_pkthdr_cur *c = &cur;
	uint8_t buf[40];
	const uint8_t *p;
	uint32_t off = 2 * RTE_ETHER_ADDR_LEN;
	uint16_t et;

	h->flags = 0;
	h->nb_tags = 0;
	h->l3_type = 0;
	p = shp_pkthdr_read(c, off, 2, buf);
	if (p == NULL)
		return;
	et = shp_pkthdr_be16(p);
	while (shp_pkthdr_is_tpid(et) && h->nb_tags < SHP_PKTHDR_MAX_TAGS) {
		/* TCI and the next EtherType */
		p = shp_pkthdr_read(c, off + 2, 4, buf);
		if (unlikely(p == NULL)) {
			/* cut after the TCI: the outer tag's priority is
			 * still there, but no EtherType */
			if (h->nb_tags == 0 &&
			    (p = shp_pkthdr_read(c, off + 2, 2, buf)) != NULL) {
				shp_pkthdr_tci(h, p);
				h->nb_tags = 1;
			}
			return;
		}
		if (h->nb_tags == 0)
			shp_pkthdr_tci(h, p);
		h->nb_tags++;
		et = shp_pkthdr_be16(p + 2);
		off += 4;
	}
	off += 2;
	h->eth_type = et;
	h->l3_off = (uint16_t)off;
	h->flags |= SHP_PKTHDR_F_ETH;
	if (depth == SHP_PKTHDR_L2)
		return;

	if (et == RTE_ETHER_TYPE_IPV4) {
		uint32_t ihl, tot;
		uint16_t frag;

		p = shp_pkthdr_read(c, off, 20, buf);
		/* version 4, IHL 5..15 */
		if (p == NULL || (uint8_t)(p[0] - 0x45) > 0x0a)
			return;
		ihl = (uint32_t)(p[0] & 0xf) * 4;
		tot = shp_pkthdr_be16(p + 2);
		frag = shp_pkthdr_be16(p + 6);
		h->l3_type = SHP_PKTHDR_IPV4;
		h->tos = p[1];
		h->ip_proto = p[9];
		h->l4_off = (uint16_t)(off + ihl);   /* options skipped */
		memset(&h->src, 0, sizeof(h->src));
		memset(&h->dst, 0, sizeof(h->dst));
		memcpy(&h->src.v4, p + 12, 4);
		memcpy(&h->dst.v4, p + 16, 4);
		h->flags |= SHP_PKTHDR_F_L3 | SHP_PKTHDR_F_PROTO;
		if (frag & 0x3fff) {          /* MF or an offset */
			h->flags |= SHP_PKTHDR_F_FRAG;
			if (frag & 0x1fff)
				h->flags |= SHP_PKTHDR_F_LATER;
		}
		if (depth == SHP_PKTHDR_L4)
			shp_pkthdr_ports(c, h, tot >= ihl ? off + tot :
					 UINT32_MAX);
	} else if (et == RTE_ETHER_TYPE_IPV6) {
		uint32_t plen, l4;
		uint8_t nh;

		p = shp_pkthdr_read(c, off, 40, buf);
		if (p == NULL || (p[0] >> 4) != 6)
			return;
		h->l3_type = SHP_PKTHDR_IPV6;
		h->tos = (uint8_t)((p[0] & 0x0f) << 4 | p[1] >> 4);
		plen = shp_pkthdr_be16(p + 4);
		nh = p[6];
		memcpy(h->src.v6, p + 8, 16);
		memcpy(h->dst.v6, p + 24, 16);
		h->flags |= SHP_PKTHDR_F_L3;
		l4 = off + 40;
		if ((depth == SHP_PKTHDR_L3 && shp_pkthdr_is_v6ext(nh)) ||
		    (depth == SHP_PKTHDR_L4 &&
		     !shp_pkthdr_skip_v6ext(c, h, &l4, &nh))) {
			/* the upper layer is beyond what we walked */
			h->ip_proto = nh;
			return;
		}
		h->ip_proto = nh;
		h->l4_off = (uint16_t)l4;
		h->flags |= SHP_PKTHDR_F_PROTO;
		/* payload length 0: a jumbogram (RFC 2675), bounded by the
		 * frame only */
		if (depth == SHP_PKTHDR_L4)
			shp_pkthdr_ports(c, h, plen != 0 ?
					 off + 40 + plen : UINT32_MAX);
	}
}

/* ECN field: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE; 0 for non-IP. */
static inline unsigned int
shp_pkthdr_ecn(const struct shp_pkthdr *h)
{
	return (h->flags & SHP_PKTHDR_F_L3) ? h->tos & 3 : 0;
}

/**
 * Mark the packet h describes (parsed at SHP_PKTHDR_L3 or deeper) CE, as
 * Linux INET_ECN_set_ce does: the ECN bits of the IPv4 TOS, with the
 * header checksum updated (RFC 1624), or of the IPv6 traffic class. The
 * caller checked it is ECN-capable and made m's data writable (the
 * header may be split across segments: each byte is written where it is).
 * Returns 0, or -1 if h has no IP header (nothing written).
 */
int shp_pkthdr_set_ce(struct rte_mbuf *m, const struct shp_pkthdr *h);

/*
 * Linux INET_ECN_set_ce for a queue's mark: true if m now carries CE (it
 * was ECT(0) or ECT(1), or CE already), false if it is not ECN-capable.
 * A packet whose data others share (an indirect mbuf, or a reference
 * held elsewhere, in any segment) is not written: false, so the queue
 * drops it instead.
 */
bool shp_pkthdr_mark_ce(struct rte_mbuf *m);
/* Whether shp_pkthdr_mark_ce(m) would mark m, without writing it (a
 * decision made before it is known to stand). */
bool shp_pkthdr_can_mark_ce(const struct rte_mbuf *m);

/* Write len bytes at offset off of m's data, across segments (the
 * counterpart of rte_pktmbuf_read). -1 if the packet is shorter. */
int shp_pktmbuf_write(struct rte_mbuf *m, uint32_t off, uint32_t len,
		      const void *src);

/**
 * Is frame m longer than an MTU of mtu allows? The MTU bounds the L3
 * packet: what follows the Ethernet header and the VLAN tags the walker
 * follows. A frame no longer than mtu + 14 is never read.
 */
static inline bool
shp_frame_oversize(const struct rte_mbuf *m, uint32_t mtu)
{
	struct shp_pkthdr h;
	uint32_t len = rte_pktmbuf_pkt_len(m);

	if (likely(len <= mtu + RTE_ETHER_HDR_LEN))
		return false;
	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L2);
	return len - (h.flags & SHP_PKTHDR_F_ETH ? h.l3_off :
		      RTE_ETHER_HDR_LEN) > mtu;
}

#endif
