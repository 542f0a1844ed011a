/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The packet-header walker (lib/pkt/shp_pkthdr.h) on hand-built frames: every
 * tag layout, IPv6 extension headers, fragments, padding; each frame cut
 * at every byte and laid out in segments of every size, where a field must
 * be reported exactly when all of its bytes are there, and then with the
 * value of the whole frame. Then its users: the CE mark (checksum, split
 * headers), classify and netem's ECN on the same tags.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <rte_ip.h>

#include "classify.h"
#include "shp_pkthdr.h"
#include "shp_rig.h"

#define POOL_SIZE 4096

static struct rte_mempool *pool;

/* ------------------------------------------------------ frame builder */

#define MAX_EXT 10

struct fspec {
	const char *name;
	int ntags;
	uint16_t tpid[6];
	uint16_t tci[6];
	int l3;              /* 4, 6, or 0: EtherType et, 28 bytes after */
	uint16_t et;
	uint8_t tos;         /* TOS / traffic class */
	uint8_t proto;       /* v4 protocol / v6 upper layer */
	uint8_t ihl;         /* 0: 5 */
	uint8_t version;     /* 0: the right one */
	uint16_t frag;       /* v4 flags+offset field */
	int next;            /* v6 extension headers ... */
	uint8_t ext[MAX_EXT];
	uint16_t v6frag;     /* ... the fragment header's offset+M field */
	int l4len;           /* transport bytes (default 8) */
	uint16_t sport;      /* 0: 4321 */
	int zero_len;        /* IP length 0 (GSO, jumbogram): no bound */
	int pad;             /* bytes after the IP packet */
	int short_tot;       /* the IP length says the packet ends 2 bytes
			      * into the transport header */
};

/* What the walker must say about the whole frame, and from which length
 * on each flag must be set (0: never). */
struct want {
	struct shp_pkthdr h;
	uint32_t need[8];    /* by flag bit */
};

static const uint8_t SRC6[16] = { 0x20, 0x01, 0x0d, 0xb8, 1, 2, 3, 4,
				  5, 6, 7, 8, 9, 10, 11, 12 };
static const uint8_t DST6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0xa, 0xb, 0xc,
				  0xd, 0xe, 0xf, 0x10, 0x11, 0x12, 0x13,
				  0x14, 0x15 };

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static int
bit(uint8_t flag)
{
	return __builtin_ctz(flag);
}

static size_t
build(const struct fspec *s, uint8_t *f, struct want *w)
{
	size_t o = 12, l3, l4, iplen, proto_need;
	int has_ports, i, l4len, later = 0, bad_ip;
	uint8_t nh = s->proto;

	memset(w, 0, sizeof(*w));
	memset(f, 0x02, 12);
	for (i = 0; i < s->ntags; i++) {
		put16(f + o, s->tpid[i]);
		put16(f + o + 2, s->tci[i]);
		o += 4;
	}
	if (s->ntags > 0) {
		w->h.vlan_id = s->tci[0] & 0xfff;
		w->h.pcp = s->tci[0] >> 13;
		w->need[bit(SHP_PKTHDR_F_VLAN)] = 16;
	}
	w->h.nb_tags = (uint8_t)RTE_MIN(s->ntags, SHP_PKTHDR_MAX_TAGS);
	if (s->ntags > SHP_PKTHDR_MAX_TAGS) {
		/* the walk stops at the fifth tag: its TPID is the type */
		w->h.eth_type = s->tpid[SHP_PKTHDR_MAX_TAGS];
		w->h.l3_off = 12 + 4 * SHP_PKTHDR_MAX_TAGS + 2;
		w->need[bit(SHP_PKTHDR_F_ETH)] = w->h.l3_off;
		put16(f + o, 0x0800);
		memset(f + o + 2, 0x45, 30);
		return o + 32;
	}
	w->h.eth_type = s->l3 == 4 ? 0x0800 : s->l3 == 6 ? 0x86dd : s->et;
	put16(f + o, w->h.eth_type);
	o += 2;
	l3 = o;
	w->h.l3_off = (uint16_t)l3;
	w->need[bit(SHP_PKTHDR_F_ETH)] = l3;
	if (s->l3 == 0) {
		memset(f + o, 0x45, 28);
		return o + 28;
	}
	w->h.tos = s->tos;
	w->h.l3_type = (uint8_t)s->l3;
	if (s->l3 == 4) {
		uint8_t ihl = s->ihl ? s->ihl : 5;

		memset(f + o, 0, RTE_MAX(ihl * 4, 20));
		f[o] = (uint8_t)((s->version ? s->version : 4) << 4 | ihl);
		f[o + 1] = s->tos;
		put16(f + o + 6, s->frag);
		f[o + 8] = 64;
		f[o + 9] = s->proto;
		memcpy(f + o + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
		memcpy(&w->h.src.v4, f + o + 12, 4);
		memcpy(&w->h.dst.v4, f + o + 16, 4);
		o += RTE_MAX(ihl * 4, 20);
		w->need[bit(SHP_PKTHDR_F_L3)] = l3 + 20;
		proto_need = l3 + 20;
		if (s->frag & 0x3fff)
			w->need[bit(SHP_PKTHDR_F_FRAG)] = l3 + 20;
		if (s->frag & 0x1fff) {
			w->need[bit(SHP_PKTHDR_F_LATER)] = l3 + 20;
			later = 1;
		}
		bad_ip = s->version || ihl < 5;
	} else {
		memset(f + o, 0, 40);
		f[o] = (uint8_t)((s->version ? s->version : 6) << 4 |
				 s->tos >> 4);
		f[o + 1] = (uint8_t)(s->tos << 4 | 0x0a);   /* + flow label */
		f[o + 2] = 0xbc;
		f[o + 3] = 0xde;
		f[o + 6] = s->next ? s->ext[0] : s->proto;
		f[o + 7] = 64;
		memcpy(f + o + 8, SRC6, 16);
		memcpy(f + o + 24, DST6, 16);
		memcpy(w->h.src.v6, SRC6, 16);
		memcpy(w->h.dst.v6, DST6, 16);
		o += 40;
		w->need[bit(SHP_PKTHDR_F_L3)] = l3 + 40;
		proto_need = l3 + 40;
		for (i = 0; i < s->next; i++) {
			uint8_t t = i + 1 < s->next ? s->ext[i + 1] : s->proto;
			size_t start = o;

			memset(f + o, 0, 8);
			f[o] = t;
			if (s->ext[i] == 44) {
				put16(f + o + 2, s->v6frag);
				w->need[bit(SHP_PKTHDR_F_FRAG)] = start + 8;
				o += 8;
				proto_need = start + 8;
				if (s->v6frag & 0xfff8) {
					/* payload follows: the walk ends */
					later = 1;
					w->need[bit(SHP_PKTHDR_F_LATER)] =
						start + 8;
					nh = t;
					break;
				}
			} else {
				/* lengths 8, 16, 24, ... by position */
				f[o + 1] = (uint8_t)(i % 3);
				memset(f + o + 2, 0x01, 6 + 8 * (i % 3));
				o += 8 + 8 * (i % 3);
				proto_need = start + 2;
			}
		}
		if (s->next > SHP_PKTHDR_MAX_EXT)
			proto_need = 0;    /* gives up */
		bad_ip = s->version != 0;
	}
	w->need[bit(SHP_PKTHDR_F_PROTO)] = proto_need;
	w->h.ip_proto = nh;
	w->h.l4_off = (uint16_t)o;
	l4 = o;
	l4len = s->l4len ? s->l4len : 8;
	memset(f + o, 0x33, l4len);
	if (!later && l4len >= 4) {
		put16(f + o, s->sport ? s->sport : 4321);
		put16(f + o + 2, 80);
	}
	o += l4len;
	/* short: the packet ends inside the ports, padding after it */
	iplen = s->short_tot ? l4 + 2 - l3 : o - l3;
	if (s->zero_len)
		iplen = s->l3 == 4 ? 0 : 40;
	if (s->l3 == 4)
		put16(f + l3 + 2, (uint16_t)iplen);
	else
		put16(f + l3 + 4, (uint16_t)(iplen - 40));
	has_ports = nh == 6 || nh == 17 || nh == 132 || nh == 136 ||
		    nh == 33;
	if (has_ports && !later && proto_need && !s->short_tot &&
	    l4len >= 4) {
		w->h.sport = s->sport ? s->sport : 4321;
		w->h.dport = 80;
		w->need[bit(SHP_PKTHDR_F_PORTS)] = l4 + 4;
	}
	if (bad_ip) {
		/* not IP after all: nothing past the EtherType */
		w->need[bit(SHP_PKTHDR_F_L3)] = 0;
		w->need[bit(SHP_PKTHDR_F_PROTO)] = 0;
		w->need[bit(SHP_PKTHDR_F_FRAG)] = 0;
		w->need[bit(SHP_PKTHDR_F_LATER)] = 0;
		w->need[bit(SHP_PKTHDR_F_PORTS)] = 0;
	}
	memset(f + o, 0xee, s->pad);
	return o + s->pad;
}

/* ---------------------------------------------------------- the cases */

#define TAGS(n, t) .ntags = n, \
	.tpid = { t, t, t, t, t, t }, \
	.tci = { 5 << 13 | 0x123, 0x0456, 0x0789, 0x0abc, 0x0def, 1 }

static const struct fspec specs[] = {
	{ .name = "v4 udp", .l3 = 4, .tos = 0xb9, .proto = 17 },
	{ .name = "v4 tcp", .l3 = 4, .tos = 0x02, .proto = 6, .l4len = 20 },
	{ .name = "v4 sctp", .l3 = 4, .proto = 132, .l4len = 12 },
	{ .name = "v4 icmp: no ports", .l3 = 4, .proto = 1 },
	{ .name = "v4 options", .l3 = 4, .ihl = 7, .proto = 17 },
	{ .name = "v4 ihl 4: not IPv4", .l3 = 4, .ihl = 4, .proto = 17 },
	{ .name = "v4 version 6 in a v4 type", .l3 = 4, .version = 6,
	  .proto = 17 },
	{ .name = "v4 first fragment", .l3 = 4, .proto = 17,
	  .frag = 0x2000 },
	{ .name = "v4 later fragment", .l3 = 4, .proto = 17,
	  .frag = 0x0020 },
	{ .name = "v4 last fragment", .l3 = 4, .proto = 6, .frag = 0x0001 },
	{ .name = "v4 fragment at 32768", .l3 = 4, .proto = 6,
	  .frag = 0x3000 },
	{ .name = "v4 DF only: not a fragment", .l3 = 4, .proto = 17,
	  .frag = 0x4000 },
	{ .name = "v4 padded: ports are padding", .l3 = 4, .proto = 17,
	  .short_tot = 1, .pad = 20 },
	{ .name = "v4 udp, 2 transport bytes", .l3 = 4, .proto = 17,
	  .l4len = 2 },
	{ .name = "v4 total length 0 (GSO)", .l3 = 4, .proto = 6,
	  .zero_len = 1, .l4len = 20 },
	{ .name = "v6 payload length 0 (jumbo)", .l3 = 6, .proto = 6,
	  .zero_len = 1, .l4len = 20 },
	{ .name = "v6 udp", .l3 = 6, .tos = 0xb9, .proto = 17 },
	{ .name = "v6 tcp", .l3 = 6, .tos = 0x01, .proto = 6, .l4len = 20 },
	{ .name = "v6 dccp padded", .l3 = 6, .proto = 33, .pad = 12 },
	{ .name = "v6 version 4 in a v6 type", .l3 = 6, .version = 4,
	  .proto = 17 },
	{ .name = "v6 hbh", .l3 = 6, .proto = 17, .next = 1, .ext = { 0 } },
	{ .name = "v6 hbh rt dst", .l3 = 6, .proto = 6, .tos = 0x10,
	  .next = 3, .ext = { 0, 43, 60 } },
	{ .name = "v6 hbh dst rt frag(first) dst", .l3 = 6, .proto = 17,
	  .next = 5, .ext = { 0, 60, 43, 44, 60 }, .v6frag = 0x0001 },
	{ .name = "v6 atomic fragment", .l3 = 6, .proto = 132, .next = 1,
	  .ext = { 44 }, .v6frag = 0 },
	{ .name = "v6 later fragment", .l3 = 6, .proto = 17, .next = 2,
	  .ext = { 0, 44 }, .v6frag = 0x00a8 },
	{ .name = "v6 8 ext headers", .l3 = 6, .proto = 17, .next = 8,
	  .ext = { 0, 60, 43, 60, 43, 60, 43, 60 } },
	{ .name = "v6 9 ext headers: gives up", .l3 = 6, .proto = 17,
	  .next = 9, .ext = { 0, 60, 43, 60, 43, 60, 43, 60, 60 } },
	{ .name = "v6 padded: ports are padding", .l3 = 6, .proto = 6,
	  .short_tot = 1, .pad = 30 },
	{ .name = "arp", .et = 0x0806 },
	{ .name = "5 tags: stops at the fifth", TAGS(5, 0x8100), .l3 = 4,
	  .proto = 17 },
	{ .name = "mixed tags v6", .ntags = 4,
	  .tpid = { 0x9200, 0x88a8, 0x9100, 0x8100 },
	  .tci = { 7 << 13 | 4094, 1, 2, 3 }, .l3 = 6, .proto = 17 },
	{ .name = "qinq arp", .ntags = 2, .tpid = { 0x88a8, 0x8100 },
	  .tci = { 1 << 13 | 10, 20 }, .et = 0x0806 },
};

static struct fspec
spec_named(const char *name)
{
	unsigned int i;

	for (i = 0; i < RTE_DIM(specs); i++)
		if (strcmp(specs[i].name, name) == 0)
			return specs[i];
	fail_msg("no case '%s'", name);
	return specs[0];
}

/* 1..4 tags of each TPID over IPv4 and IPv6 */
static const uint16_t tpids[] = { 0x8100, 0x88a8, 0x9100, 0x9200 };

static size_t
spec_at(unsigned int i, struct fspec *s)
{
	unsigned int base = RTE_DIM(specs);
	unsigned int k;

	if (i < base) {
		*s = specs[i];
		return 1;
	}
	i -= base;
	if (i >= RTE_DIM(tpids) * 4 * 2)
		return 0;
	memset(s, 0, sizeof(*s));
	s->name = "tagged";
	s->ntags = i % 4 + 1;
	for (k = 0; k < 6; k++) {
		s->tpid[k] = tpids[(i / 4) % RTE_DIM(tpids)];
		s->tci[k] = (uint16_t)((k + 3) << 13 | (100 * (k + 1) + i));
	}
	s->l3 = i < RTE_DIM(tpids) * 4 ? 4 : 6;
	s->tos = 0x12;
	s->proto = 17;
	return 1;
}

/* --------------------------------------------------------------- mbufs */

static struct rte_mbuf *
mk(const uint8_t *f, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	assert_non_null(m);
	if (len > 0)
		memcpy(rte_pktmbuf_append(m, len), f, len);
	shp_meta_init(m, 0);
	return m;
}

/* The frame in segments of seg bytes (the last may be shorter). */
static struct rte_mbuf *
mk_segs(const uint8_t *f, size_t len, size_t seg)
{
	struct rte_mbuf *head = NULL;
	size_t o;

	if (len == 0)
		return mk(f, 0);
	for (o = 0; o < len; o += seg) {
		struct rte_mbuf *m = mk(f + o, RTE_MIN(seg, len - o));

		if (head == NULL)
			head = m;
		else
			assert_int_equal(rte_pktmbuf_chain(head, m), 0);
	}
	return head;
}

/* Two segments, the second starting at byte k. */
static struct rte_mbuf *
mk_split(const uint8_t *f, size_t len, size_t k)
{
	struct rte_mbuf *m = mk(f, k);

	if (k < len)
		assert_int_equal(rte_pktmbuf_chain(m, mk(f + k, len - k)), 0);
	return m;
}

/* ------------------------------------------------------------ checking */

/* h for the first len bytes of the frame: each flag set exactly when
 * its bytes are all there, each reported field as in the whole frame. */
static void
check(const char *name, const char *layout, const struct want *w,
      const struct shp_pkthdr *h, size_t len, enum shp_pkthdr_depth depth)
{
	static const uint8_t l3_flags = SHP_PKTHDR_F_L3 | SHP_PKTHDR_F_FRAG |
		SHP_PKTHDR_F_LATER | SHP_PKTHDR_F_PROTO | SHP_PKTHDR_F_PORTS;
	static const char *const depths[] = { "L2", "L3", "L4" };
	int b;

	for (b = 0; b < 7; b++) {
		uint8_t f = (uint8_t)(1u << b);
		int want = w->need[b] != 0 && len >= w->need[b];

		if (depth == SHP_PKTHDR_L2 && (f & l3_flags))
			want = 0;
		if (depth == SHP_PKTHDR_L3 && f == SHP_PKTHDR_F_PORTS)
			want = 0;
		if (depth == SHP_PKTHDR_L3 && w->h.l3_type == 6 &&
		    (f & (SHP_PKTHDR_F_PROTO | SHP_PKTHDR_F_FRAG |
			  SHP_PKTHDR_F_LATER)))
			/* IPv6 at L3: the upper layer only when no
			 * extension header is in the way */
			want = f == SHP_PKTHDR_F_PROTO &&
				w->h.l4_off == w->h.l3_off + 40 &&
				w->need[b] && len >= w->h.l3_off + 40u;
		if (!!(h->flags & f) != want)
			fail_msg("%s (%s, %zu bytes, depth %s): flag 0x%02x "
				 "%s, want %s (flags 0x%02x)", name, layout,
				 len, depths[depth], f, h->flags & f ? "set" : "clear",
				 want ? "set" : "clear", h->flags);
	}
	if (h->flags & SHP_PKTHDR_F_ETH) {
		assert_int_equal(h->eth_type, w->h.eth_type);
		assert_int_equal(h->l3_off, w->h.l3_off);
		assert_int_equal(h->nb_tags, w->h.nb_tags);
	}
	if (h->flags & SHP_PKTHDR_F_VLAN) {
		assert_int_equal(h->vlan_id, w->h.vlan_id);
		assert_int_equal(h->pcp, w->h.pcp);
	}
	if (h->flags & SHP_PKTHDR_F_L3) {
		assert_int_equal(h->l3_type, w->h.l3_type);
		assert_int_equal(h->tos, w->h.tos);
		assert_memory_equal(&h->src, &w->h.src, sizeof(h->src));
		assert_memory_equal(&h->dst, &w->h.dst, sizeof(h->dst));
	} else {
		assert_int_equal(h->l3_type, 0);
	}
	if (h->flags & SHP_PKTHDR_F_PROTO) {
		assert_int_equal(h->ip_proto, w->h.ip_proto);
		assert_int_equal(h->l4_off, w->h.l4_off);
	}
	if (h->flags & SHP_PKTHDR_F_PORTS) {
		assert_int_equal(h->sport, w->h.sport);
		assert_int_equal(h->dport, w->h.dport);
	}
}

static void
check_all_depths(const char *name, const char *layout, const struct want *w,
		 const struct rte_mbuf *m, size_t len)
{
	struct shp_pkthdr h;

	memset(&h, 0xa5, sizeof(h));
	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L4);
	check(name, layout, w, &h, len, SHP_PKTHDR_L4);
	memset(&h, 0x5a, sizeof(h));
	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L3);
	check(name, layout, w, &h, len, SHP_PKTHDR_L3);
	memset(&h, 0xa5, sizeof(h));
	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L2);
	check(name, layout, w, &h, len, SHP_PKTHDR_L2);
}

/* The whole frames: what each must give, spelled out for a few. */
static void
test_whole(void **state)
{
	uint8_t f[512];
	struct fspec s;
	struct want w;
	unsigned int i;

	(void)state;
	for (i = 0; spec_at(i, &s); i++) {
		size_t len = build(&s, f, &w);
		struct rte_mbuf *m = mk(f, len);

		check_all_depths(s.name, "one segment", &w, m, len);
		rte_pktmbuf_free(m);
	}
	/* the builder's expectations themselves, for the cases that
	 * matter most */
	s = spec_named("v4 udp");
	build(&s, f, &w);
	assert_int_equal(w.need[bit(SHP_PKTHDR_F_PORTS)], 14 + 20 + 4);
	s = spec_named("v6 hbh dst rt frag(first) dst");    /* hbh dst rt frag(first) dst */
	build(&s, f, &w);
	assert_int_equal(w.h.l4_off, 14 + 40 + 8 + 16 + 24 + 8 + 16);
	assert_int_equal(w.h.ip_proto, 17);
	assert_true(w.need[bit(SHP_PKTHDR_F_PORTS)] != 0);
	assert_true(w.need[bit(SHP_PKTHDR_F_FRAG)] != 0);
	s = spec_named("v6 later fragment");    /* v6 later fragment */
	build(&s, f, &w);
	assert_int_equal(w.need[bit(SHP_PKTHDR_F_PORTS)], 0);
	assert_int_equal(w.h.l4_off, 14 + 40 + 8 + 8);
	s = spec_named("v6 9 ext headers: gives up");
	build(&s, f, &w);
	assert_int_equal(w.need[bit(SHP_PKTHDR_F_PROTO)], 0);

	/* IPv6 without the upper layer: ip_proto is the extension header
	 * the walk stopped at (hop-by-hop 8 bytes, routing 16, dest opts) */
	s = spec_named("v6 hbh rt dst");
	build(&s, f, &w);
	{
		static const struct { size_t cut; int depth; uint8_t nh; }
		stop[] = {
			{ 14 + 40, SHP_PKTHDR_L3, 0 },
			{ 14 + 40 + 1, SHP_PKTHDR_L4, 0 },
			{ 14 + 40 + 8 + 1, SHP_PKTHDR_L4, 43 },
			{ 14 + 40 + 24 + 1, SHP_PKTHDR_L4, 60 },
		};
		struct shp_pkthdr h;

		for (i = 0; i < RTE_DIM(stop); i++) {
			struct rte_mbuf *m = mk(f, stop[i].cut);

			shp_pkthdr_parse(m, &h, stop[i].depth);
			assert_int_equal(h.flags & (SHP_PKTHDR_F_L3 |
						    SHP_PKTHDR_F_PROTO),
					 SHP_PKTHDR_F_L3);
			assert_int_equal(h.ip_proto, stop[i].nh);
			rte_pktmbuf_free(m);
		}
	}
	/* the 9th extension header is where it gives up */
	s = spec_named("v6 9 ext headers: gives up");
	{
		size_t len = build(&s, f, &w);
		struct rte_mbuf *m = mk(f, len);
		struct shp_pkthdr h = { 0 };

		shp_pkthdr_parse(m, &h, SHP_PKTHDR_L4);
		assert_int_equal(h.flags & SHP_PKTHDR_F_PROTO, 0);
		assert_int_equal(h.ip_proto, 60);
		rte_pktmbuf_free(m);
	}
}

/* Every frame cut at every byte, and in every segment layout. */
static void
test_cut_and_split(void **state)
{
	uint8_t f[512];
	struct fspec s;
	struct want w;
	unsigned int i;
	size_t len, cut, k;

	(void)state;
	for (i = 0; spec_at(i, &s); i++) {
		len = build(&s, f, &w);
		for (cut = 0; cut <= len; cut++) {
			struct rte_mbuf *m = mk(f, cut);

			check_all_depths(s.name, "cut", &w, m, cut);
			rte_pktmbuf_free(m);
			for (k = 1; k <= 7; k += 6) {
				m = mk_segs(f, cut, k);
				check_all_depths(s.name, k == 1 ? "cut, 1-byte "
						 "segments" : "cut, 7-byte "
						 "segments", &w, m, cut);
				rte_pktmbuf_free(m);
			}
		}
		for (k = 0; k <= len; k++) {
			struct rte_mbuf *m = mk_split(f, len, k);

			check_all_depths(s.name, "two segments", &w, m, len);
			rte_pktmbuf_free(m);
		}
	}
	shp_rig_assert_pool_full(pool);
}

/* A first segment that says more than it holds is not read past. */
static void
test_data_len(void **state)
{
	uint8_t f[512];
	struct fspec s = spec_named("v4 udp");
	struct shp_pkthdr h;
	struct want w;
	size_t len = build(&s, f, &w);
	struct rte_mbuf *m = mk(f, len);

	(void)state;
	/* the frame's tail beyond data_len is not the packet's */
	m->data_len = 14 + 19;
	m->pkt_len = 14 + 19;
	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L4);
	assert_int_equal(h.flags, SHP_PKTHDR_F_ETH);
	rte_pktmbuf_free(m);
}

/* ------------------------------------------------------------ CE marks */

/* The checksum the IPv4 header at ip should carry. */
static uint16_t
v4_cksum_of(const uint8_t *ip)
{
	uint8_t copy[20];

	memcpy(copy, ip, 20);
	copy[10] = copy[11] = 0;
	return rte_ipv4_cksum((const struct rte_ipv4_hdr *)copy);
}

/* The checksum an IPv4 header carries, as rte_ipv4_cksum() gives it. */
static uint16_t
v4_cksum(const uint8_t *ip)
{
	uint16_t ck;

	memcpy(&ck, ip + 10, 2);
	return ck;
}

/* Frame bytes of m into out (len of them). */
static void
linear(const struct rte_mbuf *m, uint8_t *out, size_t len)
{
	const void *p = rte_pktmbuf_read(m, 0, len, out);

	assert_non_null(p);
	if (p != out)
		memmove(out, p, len);
}

static void
test_set_ce(void **state)
{
	static const uint8_t ecns[] = { 1, 2, 3 };
	uint8_t f[512], g[512];
	struct fspec s;
	struct want w;
	unsigned int v, e;
	size_t len, k, d;

	(void)state;
	for (v = 0; v < 2; v++) {
		for (e = 0; e < RTE_DIM(ecns); e++) {
			memset(&s, 0, sizeof(s));
			s.ntags = 2;
			s.tpid[0] = 0x9200;
			s.tpid[1] = 0x8100;
			s.l3 = v ? 6 : 4;
			s.tos = (uint8_t)(0xb8 | ecns[e]);
			s.proto = 17;
			len = build(&s, f, &w);
			if (!v) {
				uint16_t ck = v4_cksum_of(f + w.h.l3_off);

				memcpy(f + w.h.l3_off + 10, &ck, 2);
			}
			for (k = 1; k <= len; k++) {
				struct rte_mbuf *m = mk_split(f, len, k);
				struct shp_pkthdr h;

				shp_pkthdr_parse(m, &h, SHP_PKTHDR_L3);
				assert_int_equal(shp_pkthdr_ecn(&h), ecns[e]);
				assert_int_equal(shp_pkthdr_set_ce(m, &h), 0);
				assert_int_equal(rte_pktmbuf_pkt_len(m), len);
				linear(m, g, len);
				shp_pkthdr_parse(m, &h, SHP_PKTHDR_L3);
				assert_int_equal(shp_pkthdr_ecn(&h), 3);
				assert_int_equal(h.tos, 0xb8 | 3);
				/* only the ECN bits and the v4 checksum
				 * changed */
				for (d = 0; d < len; d++) {
					size_t r = d - w.h.l3_off;

					if (r == 1 || (!v && (r == 10 ||
							      r == 11)))
						continue;
					if (f[d] != g[d])
						fail_msg("byte %zu changed", d);
				}
				if (v)
					assert_int_equal(g[w.h.l3_off + 1],
							 f[w.h.l3_off + 1] |
							 0x30);
				else
					assert_int_equal(
						v4_cksum(g + w.h.l3_off),
						v4_cksum_of(g + w.h.l3_off));
				rte_pktmbuf_free(m);
			}
		}
	}
	/* no IP header: nothing written */
	s = spec_named("arp");   /* arp */
	len = build(&s, f, &w);
	{
		struct rte_mbuf *m = mk(f, len);
		struct shp_pkthdr h;

		shp_pkthdr_parse(m, &h, SHP_PKTHDR_L3);
		assert_int_equal(shp_pkthdr_ecn(&h), 0);
		assert_int_equal(shp_pkthdr_set_ce(m, &h), -1);
		assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *), f, len);
		/* a write past the end is refused whole */
		assert_int_equal(shp_pktmbuf_write(m, len - 1, 2, "ab"), -1);
		assert_int_equal(shp_pktmbuf_write(m, len - 2, 2, "ab"), 0);
		assert_memory_equal(rte_pktmbuf_mtod_offset(m, uint8_t *,
							    len - 2), "ab", 2);
		rte_pktmbuf_free(m);
	}
}

/* ------------------------------------------------------------- users */

/* classify reads the TOS through every tag layout the walker follows */
static void
test_classify_tags(void **state)
{
	uint8_t f[512];
	struct fspec s;
	struct want w;
	unsigned int t, n;

	(void)state;
	for (t = 0; t < RTE_DIM(tpids); t++) {
		for (n = 1; n <= 5; n++) {
			struct rte_mbuf *m;
			size_t len;

			memset(&s, 0, sizeof(s));
			s.ntags = (int)n;
			s.tpid[0] = s.tpid[1] = s.tpid[2] = s.tpid[3] =
				s.tpid[4] = tpids[t];
			s.tci[0] = 5 << 13;
			s.l3 = 4;
			s.tos = 0x10;  /* lowdelay: priority 6 */
			s.proto = 6;
			len = build(&s, f, &w);
			m = mk(f, len);
			assert_int_equal(shp_classify_prio(SHP_CLASSIFY_TOS, m),
					 n <= SHP_PKTHDR_MAX_TAGS ? 6 : 0);
			assert_int_equal(shp_classify_prio(SHP_CLASSIFY_PCP, m),
					 6);
			rte_pktmbuf_free(m);
		}
	}
}

/* One ECT(0) frame (v: IPv6, n tags of tpid, split: the IP header across
 * two segments) through r, which loses every packet: it must come out
 * marked CE, its IPv4 checksum right. */
static void
ecn_through(struct shp_rig *r, int v, uint16_t tpid, int n, int split)
{
	uint8_t f[512], g[512];
	struct rte_mbuf *m, *out[4];
	struct fspec s;
	struct want w;
	uint16_t in, d;
	size_t len;
	int i;

	memset(&s, 0, sizeof(s));
	s.ntags = n;
	for (i = 0; i < n; i++)
		s.tpid[i] = tpid;
	s.l3 = v ? 6 : 4;
	s.tos = 0xb8 | 2;     /* EF, ECT(0) */
	s.proto = 17;
	len = build(&s, f, &w);
	if (!v) {
		uint16_t ck = v4_cksum_of(f + w.h.l3_off);

		memcpy(f + w.h.l3_off + 10, &ck, 2);
	}
	m = split ? mk_split(f, len, w.h.l3_off + 5) : mk(f, len);
	shp_meta_init(m, r->ctx.now + 1000);
	in = shp_rig_enqueue_at(r, r->ctx.now + 1000, &m, 1);
	d = shp_rig_dequeue_at(r, r->ctx.now + 1000000000, out, 4);
	if (in != 1 || d != 1)
		fail_msg("%s, %d tags of 0x%04x, %s: %u in, %u out, lost "
			 "%" PRIu64, v ? "v6" : "v4", n, tpid,
			 split ? "split" : "one segment", in, d,
			 r->c->drops[shp_drop_index("lost")]);
	assert_int_equal(rte_pktmbuf_pkt_len(out[0]), len);
	linear(out[0], g, len);
	if (v) {
		assert_int_equal(g[w.h.l3_off + 1] & 0x30, 0x30);
	} else {
		assert_int_equal(g[w.h.l3_off + 1], 0xb8 | 3);
		assert_int_equal(v4_cksum(g + w.h.l3_off),
				 v4_cksum_of(g + w.h.l3_off));
	}
	rte_pktmbuf_free(out[0]);
}

/*
 * netem `loss 100% ecn` marks every ECT packet CE instead of losing it,
 * through any tag layout classify follows and any segment layout (it used
 * to follow 2 tags of 3 TPIDs in the first segment only, and lost a
 * 0x9200-tagged ECT frame that classify had read the TOS of).
 */
static void
test_netem_ecn_tags(void **state)
{
	struct shp_rig r;
	unsigned int t, n, k, v, sent = 0;

	(void)state;
	shp_rig_chain(&r, "netem loss 100% ecn");
	/* the frame first: one 0x9200 tag, IPv4, one segment */
	ecn_through(&r, 0, 0x9200, 1, 0);
	sent++;
	for (v = 0; v < 2; v++)
		for (t = 0; t < RTE_DIM(tpids); t++)
			for (n = 0; n <= SHP_PKTHDR_MAX_TAGS; n++)
				for (k = 0; k < 2; k++, sent++)
					ecn_through(&r, v, tpids[t], n, k);
	assert_int_equal(SHP_XSTAT(r.c, "netem", "ecn_marked"), sent);
	assert_int_equal(r.c->drops[shp_drop_index("lost")], 0);
	shp_rig_fini(&r);
}

/*
 * fq_codel's buckets come from the walker's 5-tuple: 64 UDP flows that
 * differ only in their source port get about 64 buckets behind IPv6
 * extension headers, four 0x9200 tags, or with the IP header split
 * across segments (its own walk, before, saw neither the ports behind
 * extension headers nor a split header: one bucket for all).
 */
static void
test_fq_codel_flows(void **state)
{
	static const char *const layouts[] = {
		"v6 hbh+dst", "v4 4 x 0x9200", "v4 split",
	};
	unsigned int l, i;

	(void)state;
	for (l = 0; l < RTE_DIM(layouts); l++) {
		struct shp_rig r;
		uint64_t active;

		shp_rig_chain(&r, "fq_codel");
		for (i = 0; i < 64; i++) {
			uint8_t f[512];
			struct fspec s = { .proto = 17, .l4len = 100,
					   .sport = (uint16_t)(1000 + i) };
			struct rte_mbuf *m;
			struct want w;
			size_t len;

			if (l == 0) {
				s.l3 = 6;
				s.next = 2;
				s.ext[0] = 0;
				s.ext[1] = 60;
			} else {
				s.l3 = 4;
				s.ntags = l == 1 ? 4 : 0;
				s.tpid[0] = s.tpid[1] = s.tpid[2] = s.tpid[3] =
					0x9200;
			}
			len = build(&s, f, &w);
			m = l == 2 ? mk_split(f, len, w.h.l3_off + 8) :
				mk(f, len);
			assert_int_equal(shp_rig_enqueue_at(&r, 0, &m, 1), 1);
		}
		/* 64 flows in 1024 buckets: about 2 collide */
		active = SHP_XSTAT(r.c, "fq_codel", "flows_active");
		if (active < 56)
			fail_msg("%s: %" PRIu64 " buckets for 64 flows",
				 layouts[l], active);
		shp_rig_fini(&r);
	}
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole),
		cmocka_unit_test(test_cut_and_split),
		cmocka_unit_test(test_data_len),
		cmocka_unit_test(test_set_ce),
		cmocka_unit_test(test_classify_tags),
		cmocka_unit_test(test_netem_ecn_tags),
		cmocka_unit_test(test_fq_codel_flows),
	};

	(void)argc;
	(void)argv;
	pool = shp_rig_env("pkthdr", POOL_SIZE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
