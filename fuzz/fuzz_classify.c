/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The classifier (lib/pkt/classify.c) on arbitrary frames, each as a one- and
 * a two-segment mbuf: every mode gives a priority 0..15, the same for both
 * layouts; the burst path gives bands within the classifier's, the byte
 * sum and the used-band set; nothing leaks from the pool.
 *
 * The header walker under it (lib/pkt/shp_pkthdr.h) on the same mbufs, at
 * each depth: the same answer for both layouts, flags consistent with one
 * another and with the packet's length, each depth finding what the one
 * before found; and the CE mark: reparsed as CE, an IPv4 header checksum
 * that was right stays right, no other byte changed.
 *
 * Input: byte 0 = number of bands - 1 (low 4 bits), byte 1 = where the
 * second segment starts, the rest = the frame. Also the priomap parser on
 * the frame as text.
 */
#include <rte_mbuf.h>

#include "fuzz_common.h"
#include <rte_ip.h>

#include "classify.h"
#include "shp_meta.h"
#include "shp_pkthdr.h"

#define POOL_SIZE 63
#define FRAME_MAX 4000

static struct rte_mempool *pool;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	fuzz_eal_init("fuzz_cls");
	pool = rte_pktmbuf_pool_create("fuzz", POOL_SIZE, 0,
				       SHP_MBUF_PRIV_SIZE,
				       RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	if (pool == NULL)
		abort();
	return 0;
}

static struct rte_mbuf *
seg(const uint8_t *data, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	char *p;

	if (m == NULL)
		abort();
	p = rte_pktmbuf_append(m, len);
	if (p == NULL)
		abort();
	memcpy(p, data, len);
	shp_meta_init(m, 0);
	return m;
}

/* The frame in one segment (k > len: as much as fits in the first). */
static struct rte_mbuf *
frame(const uint8_t *data, uint16_t len, uint16_t k)
{
	uint16_t room = RTE_MBUF_DEFAULT_DATAROOM;
	struct rte_mbuf *m, *t;

	if (k > len)
		k = len;
	if (k > room)
		k = room;
	if (len - k > room)
		return NULL;
	m = seg(data, k);
	if (k == len)
		return m;
	t = seg(data + k, len - k);
	if (rte_pktmbuf_chain(m, t) < 0)
		abort();
	return m;
}

/* What both layouts must agree on: the fields the flags vouch for. */
static void
hdr_same(const struct shp_pkthdr *a, const struct shp_pkthdr *b, int depth)
{
	if (a->flags != b->flags || a->l3_type != b->l3_type ||
	    a->nb_tags != b->nb_tags)
		FUZZ_BUG("depth %d: flags 0x%x / 0x%x, l3 %u / %u, tags %u / %u",
			 depth, a->flags, b->flags, a->l3_type, b->l3_type,
			 a->nb_tags, b->nb_tags);
	if ((a->flags & SHP_PKTHDR_F_ETH) &&
	    (a->eth_type != b->eth_type || a->l3_off != b->l3_off))
		FUZZ_BUG("depth %d: eth_type or l3_off differ", depth);
	if ((a->flags & SHP_PKTHDR_F_VLAN) &&
	    (a->vlan_id != b->vlan_id || a->pcp != b->pcp))
		FUZZ_BUG("depth %d: vlan differs", depth);
	if ((a->flags & SHP_PKTHDR_F_L3) &&
	    (a->tos != b->tos || memcmp(&a->src, &b->src, 16) ||
	     memcmp(&a->dst, &b->dst, 16)))
		FUZZ_BUG("depth %d: L3 fields differ", depth);
	/* ip_proto: the upper layer, or where an IPv6 walk stopped */
	if ((a->flags & SHP_PKTHDR_F_L3) && a->ip_proto != b->ip_proto)
		FUZZ_BUG("depth %d: ip_proto differs", depth);
	if ((a->flags & SHP_PKTHDR_F_PROTO) && a->l4_off != b->l4_off)
		FUZZ_BUG("depth %d: l4_off differs", depth);
	if ((a->flags & SHP_PKTHDR_F_PORTS) &&
	    (a->sport != b->sport || a->dport != b->dport))
		FUZZ_BUG("depth %d: ports differ", depth);
}

/* Flags that imply one another, offsets within the packet. */
static void
hdr_sane(const struct shp_pkthdr *h, uint32_t len, int depth)
{
	uint8_t f = h->flags;

	if (((f & SHP_PKTHDR_F_L3) && !(f & SHP_PKTHDR_F_ETH)) ||
	    ((f & SHP_PKTHDR_F_PROTO) && !(f & SHP_PKTHDR_F_L3)) ||
	    ((f & SHP_PKTHDR_F_FRAG) && !(f & SHP_PKTHDR_F_L3)) ||
	    ((f & SHP_PKTHDR_F_LATER) && !(f & SHP_PKTHDR_F_FRAG)) ||
	    ((f & SHP_PKTHDR_F_PORTS) && !(f & SHP_PKTHDR_F_PROTO)) ||
	    ((f & SHP_PKTHDR_F_PORTS) && (f & SHP_PKTHDR_F_LATER)) ||
	    (!!(f & SHP_PKTHDR_F_L3) != (h->l3_type != 0)) ||
	    (!!(f & SHP_PKTHDR_F_VLAN) != (h->nb_tags != 0)) ||
	    h->nb_tags > SHP_PKTHDR_MAX_TAGS)
		FUZZ_BUG("depth %d: flags 0x%x, l3 %u, tags %u", depth, f,
			 h->l3_type, h->nb_tags);
	if ((f & SHP_PKTHDR_F_ETH) &&
	    (h->l3_off > len || h->l3_off != 14 + 4 * h->nb_tags))
		FUZZ_BUG("depth %d: l3_off %u, %u tags, %u bytes", depth,
			 h->l3_off, h->nb_tags, len);
	if ((f & SHP_PKTHDR_F_L3) &&
	    h->l3_off + (h->l3_type == SHP_PKTHDR_IPV4 ? 20u : 40u) > len)
		FUZZ_BUG("depth %d: an L3 header past the end", depth);
	if ((f & SHP_PKTHDR_F_PORTS) && h->l4_off + 4u > len)
		FUZZ_BUG("depth %d: ports past the end", depth);
	if (depth < SHP_PKTHDR_L4 && (f & SHP_PKTHDR_F_PORTS))
		FUZZ_BUG("depth %d: ports", depth);
	if (depth < SHP_PKTHDR_L3 && (f & ~(SHP_PKTHDR_F_ETH |
					     SHP_PKTHDR_F_VLAN)))
		FUZZ_BUG("depth %d: flags 0x%x", depth, f);
}

/* Bytes of the headers the CE mark may change: the IPv4 TOS and checksum,
 * the IPv6 traffic class's ECN bits. */
static int
ce_may_change(const struct shp_pkthdr *h, uint32_t i)
{
	uint32_t r = i - h->l3_off;

	return r == 1 || (h->l3_type == SHP_PKTHDR_IPV4 && (r == 10 ||
							    r == 11));
}

/* The packet's bytes into out. */
static void
linear(const struct rte_mbuf *m, uint16_t len, uint8_t *out)
{
	const void *p = rte_pktmbuf_read(m, 0, len, out);

	if (p == NULL)
		FUZZ_BUG("%u bytes not readable", len);
	if (p != out)
		memcpy(out, p, len);
}

static void
walker(struct rte_mbuf **pkts, uint16_t len)
{
	static const enum shp_pkthdr_depth depths[] = {
		SHP_PKTHDR_L2, SHP_PKTHDR_L3, SHP_PKTHDR_L4,
	};
	struct shp_pkthdr h[2], prev = { 0 };
	static uint8_t before[FRAME_MAX], after[FRAME_MAX];
	unsigned int d, j;

	for (d = 0; d < RTE_DIM(depths); d++) {
		for (j = 0; j < 2; j++) {
			shp_pkthdr_parse(pkts[j], &h[j], depths[d]);
			hdr_sane(&h[j], len, d);
		}
		hdr_same(&h[0], &h[1], d);
		/* a deeper walk finds at least as much (the IPv6 upper
		 * layer at L3 only without extension headers) */
		if (d > 0 && (prev.flags & ~h[0].flags))
			FUZZ_BUG("depth %u lost flags 0x%x of 0x%x", d,
				 prev.flags & ~h[0].flags, prev.flags);
		prev = h[0];
	}
	/* the CE mark, on both layouts */
	for (j = 0; j < 2; j++) {
		struct shp_pkthdr m;
		uint32_t i, ihl = 0;
		int ck_ok = 0;

		shp_pkthdr_parse(pkts[j], &h[j], SHP_PKTHDR_L3);
		linear(pkts[j], len, before);
		if (h[j].l3_type == SHP_PKTHDR_IPV4) {
			ihl = (before[h[j].l3_off] & 0xf) * 4u;
			if (h[j].l3_off + ihl <= len)
				ck_ok = rte_raw_cksum(before + h[j].l3_off,
						      ihl) == 0xffff;
		}
		if (shp_pkthdr_set_ce(pkts[j], &h[j]) !=
		    (h[j].l3_type ? 0 : -1))
			FUZZ_BUG("set_ce on l3 %u", h[j].l3_type);
		linear(pkts[j], len, after);
		for (i = 0; i < len; i++)
			if (before[i] != after[i] &&
			    (!h[j].l3_type || !ce_may_change(&h[j], i)))
				FUZZ_BUG("set_ce changed byte %u", i);
		if (!h[j].l3_type)
			continue;
		shp_pkthdr_parse(pkts[j], &m, SHP_PKTHDR_L3);
		if (shp_pkthdr_ecn(&m) != 3 || (m.tos | 3) != (h[j].tos | 3))
			FUZZ_BUG("after set_ce: tos 0x%x, was 0x%x", m.tos,
				 h[j].tos);
		if (ck_ok && rte_raw_cksum(after + h[j].l3_off, ihl) != 0xffff)
			FUZZ_BUG("set_ce broke the IPv4 checksum");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum shp_classify_mode modes[] = {
		SHP_CLASSIFY_TOS, SHP_CLASSIFY_DSCP, SHP_CLASSIFY_PCP,
		SHP_CLASSIFY_NONE,
	};
	struct shp_classifier c;
	struct rte_mbuf *pkts[2];
	uint8_t band[2], map[16];
	uint64_t bytes;
	uint32_t used;
	uint16_t len;
	unsigned int i, j;
	char err[SHP_ERR_LEN], *text;

	if (size < 2 || size - 2 > FRAME_MAX)
		return 0;
	len = (uint16_t)(size - 2);
	c.nb_bands = (data[0] & 0xf) + 1;
	shp_priomap_default(c.nb_bands, c.priomap);

	pkts[0] = frame(data + 2, len, len);
	pkts[1] = frame(data + 2, len, data[1] * 16);
	if (pkts[0] == NULL || pkts[1] == NULL) {
		rte_pktmbuf_free(pkts[0]);
		rte_pktmbuf_free(pkts[1]);
		return 0;
	}
	for (i = 0; i < RTE_DIM(modes); i++) {
		uint8_t p0 = shp_classify_prio(modes[i], pkts[0]);
		uint8_t p1 = shp_classify_prio(modes[i], pkts[1]);

		if (p0 > SHP_PRIO_MAX || p0 != p1)
			FUZZ_BUG("mode %u: priority %u (one segment), %u (two)",
				 i, p0, p1);
		c.mode = modes[i];
		used = shp_classify_burst_bands(&c, pkts, 2, 7, band, &bytes);
		if (bytes != 2u * len)
			FUZZ_BUG("burst bytes %" PRIu64 " for 2 x %u", bytes,
				 len);
		for (j = 0; j < 2; j++)
			if (band[j] >= c.nb_bands ||
			    !(used & (1u << band[j])) ||
			    shp_meta(pkts[j])->band != band[j] ||
			    shp_meta(pkts[j])->prio != p0 ||
			    band[j] != c.priomap[p0])
				FUZZ_BUG("mode %u pkt %u: band %u, used 0x%x, "
					 "%u bands", i, j, band[j], used,
					 c.nb_bands);
		if (used >> c.nb_bands)
			FUZZ_BUG("used bands 0x%x of %u", used, c.nb_bands);
	}
	walker(pkts, len);
	rte_pktmbuf_free_bulk(pkts, 2);
	if (rte_mempool_avail_count(pool) != POOL_SIZE)
		FUZZ_BUG("mbuf leak: %u of %u in the pool",
			 rte_mempool_avail_count(pool), POOL_SIZE);

	/* the priomap parser, on the same bytes as text */
	text = fuzz_str(data + 2, len);
	if (shp_priomap_parse(text, c.nb_bands, map, err) == 0) {
		for (i = 0; i < 16; i++)
			if (map[i] >= c.nb_bands)
				FUZZ_BUG("priomap: band %u of %u", map[i],
					 c.nb_bands);
	}
	free(text);
	return 0;
}
