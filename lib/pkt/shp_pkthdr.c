/* SPDX-License-Identifier: BSD-3-Clause */
/* The packet-header walker's writers: off the fast path (ECN marks). */
#include "shp_pkthdr.h"

int
shp_pktmbuf_write(struct rte_mbuf *m, uint32_t off, uint32_t len,
		  const void *src)
{
	const uint8_t *s = src;
	struct rte_mbuf *seg = m;

	if ((uint64_t)off + len > rte_pktmbuf_pkt_len(m))
		return -1;
	while (seg != NULL && off >= seg->data_len) {
		off -= seg->data_len;
		seg = seg->next;
	}
	while (len > 0 && seg != NULL) {
		uint32_t n = RTE_MIN(len, (uint32_t)seg->data_len - off);

		memcpy(rte_pktmbuf_mtod_offset(seg, uint8_t *, off), s, n);
		s += n;
		len -= n;
		off = 0;
		seg = seg->next;
	}
	return len == 0 ? 0 : -1;
}

int
shp_pkthdr_set_ce(struct rte_mbuf *m, const struct shp_pkthdr *h)
{
	uint8_t buf[12];
	const uint8_t *p;
	uint8_t b;

	if (!(h->flags & SHP_PKTHDR_F_L3))
		return -1;
	if (h->l3_type == SHP_PKTHDR_IPV4) {
		uint8_t w[12];
		uint32_t sum;
		uint16_t old, new;

		/* version/IHL, TOS ... checksum: the bytes we change */
		p = rte_pktmbuf_read(m, h->l3_off, 12, buf);
		if (p == NULL)
			return -1;
		memcpy(w, p, sizeof(w));
		old = (uint16_t)(w[0] << 8 | w[1]);
		w[1] |= 3;
		new = (uint16_t)(w[0] << 8 | w[1]);
		/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') */
		sum = (uint16_t)~(w[10] << 8 | w[11]);
		sum += (uint16_t)~old;
		sum += new;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (uint16_t)~sum;
		w[10] = (uint8_t)(sum >> 8);
		w[11] = (uint8_t)sum;
		if (shp_pktmbuf_write(m, h->l3_off + 1, 1, &w[1]) < 0 ||
		    shp_pktmbuf_write(m, h->l3_off + 10, 2, &w[10]) < 0)
			return -1;
		return 0;
	}
	/* IPv6: the traffic class's low 2 bits are bits 4-5 of byte 1 */
	p = rte_pktmbuf_read(m, h->l3_off + 1, 1, buf);
	if (p == NULL)
		return -1;
	b = *p | 0x30;
	return shp_pktmbuf_write(m, h->l3_off + 1, 1, &b);
}

/* 1: m carries CE already; 2: it is ECT and ours to write (h parsed);
 * 0: neither (not ECN-capable, or data others share) */
static int
ce_markable(const struct rte_mbuf *m, struct shp_pkthdr *h)
{
	const struct rte_mbuf *seg;
	unsigned int ecn;

	shp_pkthdr_parse(m, h, SHP_PKTHDR_L3);
	ecn = shp_pkthdr_ecn(h);
	if (ecn == 0)
		return 0;
	if (ecn == 3)
		return 1;
	for (seg = m; seg != NULL; seg = seg->next)
		if (!RTE_MBUF_DIRECT(seg) || rte_mbuf_refcnt_read(seg) != 1)
			return 0;
	return 2;
}

bool
shp_pkthdr_can_mark_ce(const struct rte_mbuf *m)
{
	struct shp_pkthdr h;

	return ce_markable(m, &h) != 0;
}

bool
shp_pkthdr_mark_ce(struct rte_mbuf *m)
{
	struct shp_pkthdr h;

	switch (ce_markable(m, &h)) {
	case 1:
		return true;
	case 2:
		return shp_pkthdr_set_ce(m, &h) == 0;
	default:
		return false;
	}
}
