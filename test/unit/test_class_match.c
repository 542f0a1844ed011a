/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Class match rules (issue 13): every word, its refusals, the canonical
 * text, the header walk, and the rte_acl lookup against a linear scan of
 * the rules on random rules and packets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "class_match.h"
#include "shp_rand.h"
#include <rte_cycles.h>

#include "shp_rig.h"

static struct rte_mempool *pool;

/* ---- grammar ---- */

static void
parse_ok(const char *text, struct shp_match_rule *r)
{
	char err[SHP_ERR_LEN] = "";

	if (shp_match_parse(text, "class t", r, err) != 0)
		fail_msg("'%s' refused: %s", text, err);
}

/* text parses, prints as want, and want parses to the same rule */
static void
check_text(const char *text, const char *want)
{
	struct shp_match_rule r, back;
	char buf[SHP_MATCH_TEXT_LEN];

	parse_ok(text, &r);
	assert_true(shp_match_format(&r, buf, sizeof(buf)) <
		    (int)sizeof(buf));
	if (strcmp(buf, want) != 0)
		fail_msg("'%s' printed as '%s', not '%s'", text, buf, want);
	parse_ok(buf, &back);
	assert_int_equal(shp_match_rule_cmp(&r, &back), 0);
}

static void
test_words(void **state)
{
	static const char *const cases[][2] = {
		{"src_ip 10.1.0.0/16", "src_ip 10.1.0.0/16"},
		{"dst_ip 192.0.2.1", "dst_ip 192.0.2.1"},
		{"dst_ip 192.0.2.1/32", "dst_ip 192.0.2.1"},
		{"src_ip 0.0.0.0/0", "src_ip 0.0.0.0/0"},
		{"src_ip 2001:db8::/32", "src_ip 2001:db8::/32"},
		{"dst_ip 2001:DB8::1/128", "dst_ip 2001:db8::1"},
		{"dst_ip ::/0", "dst_ip ::/0"},
		{"src_ip 10.0.0.0/8 dst_ip 10.2.3.0/24",
		 "src_ip 10.0.0.0/8 dst_ip 10.2.3.0/24"},
		{"ip_proto tcp", "ip_proto tcp"},
		{"ip_proto 17", "ip_proto udp"},
		{"ip_proto 132", "ip_proto sctp"},
		{"ip_proto 0x2f", "ip_proto 47"},
		{"ip_proto icmp", "ip_proto icmp"},
		{"ip_proto icmpv6", "ip_proto icmpv6"},
		{"ip_proto 1", "ip_proto 1"},
		{"eth_type ipv4 ip_proto 1", "ip_proto icmp"},
		{"eth_type ipv6 ip_proto 1", "eth_type ipv6 ip_proto 1"},
		{"eth_type ipv4 ip_proto 58", "eth_type ipv4 ip_proto 58"},
		{"src_port 80", "src_port 80"},
		{"dst_port 1000-2000", "dst_port 1000-2000"},
		{"dst_port 5-5", "dst_port 5"},
		{"src_port 0-65535", "src_port 0-65535"},
		{"ip_proto udp dst_port 53", "ip_proto udp dst_port 53"},
		{"vlan_id 100", "vlan_id 100"},
		{"vlan_id 0", "vlan_id 0"},
		{"vlan_id 4095", "vlan_id 4095"},
		{"ip_tos 0x10", "ip_tos 0x10"},
		{"ip_tos 184/0xfc", "ip_tos 0xb8/0xfc"},
		{"ip_tos 0/0", "ip_tos 0x00/0x00"},
		{"eth_type arp", "eth_type arp"},
		{"eth_type 0x0806", "eth_type arp"},
		{"eth_type 0x88cc", "eth_type 0x88cc"},
		{"eth_type 0x0800", "eth_type ipv4"},
		{"eth_type ipv6", "eth_type ipv6"},
		{"eth_type ipv4 src_ip 10.0.0.0/8", "src_ip 10.0.0.0/8"},
		{"eth_type arp vlan_id 3", "eth_type arp vlan_id 3"},
		{"dst_port 443 ip_proto tcp  src_ip\t10.0.0.0/8 vlan_id 7 "
		 "ip_tos 0x20/0x20 src_port 1-2",
		 "src_ip 10.0.0.0/8 vlan_id 7 ip_proto tcp ip_tos 0x20/0x20 "
		 "src_port 1-2 dst_port 443"},
		{"ip_proto icmpv6 src_ip 2001:db8::/32",
		 "src_ip 2001:db8::/32 ip_proto icmpv6"},
	};
	size_t i;

	for (i = 0; i < RTE_DIM(cases); i++)
		check_text(cases[i][0], cases[i][1]);
}

static void
test_fields(void **state)
{
	struct shp_match_rule r, r2;
	static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8};

	parse_ok("src_ip 10.1.0.0/16 dst_port 80-90", &r);
	assert_int_equal(r.have, SHP_MW_SRC_IP | SHP_MW_DST_PORT);
	assert_int_equal(r.family, 4);
	assert_int_equal(r.src_len, 16);
	assert_memory_equal(r.src, "\x0a\x01\x00\x00", 4);
	assert_int_equal(r.dport_lo, 80);
	assert_int_equal(r.dport_hi, 90);

	parse_ok("dst_ip 2001:db8::/32 ip_tos 0xb8/0xfc vlan_id 12", &r);
	assert_int_equal(r.family, 6);
	assert_int_equal(r.dst_len, 32);
	assert_memory_equal(r.dst, v6, 16);
	assert_int_equal(r.tos, 0xb8);
	assert_int_equal(r.tos_mask, 0xfc);
	assert_int_equal(r.vlan_id, 12);

	parse_ok("eth_type 0x88cc", &r);
	assert_int_equal(r.have, SHP_MW_ETH_TYPE);
	assert_int_equal(r.eth_type, 0x88cc);
	assert_int_equal(r.family, 0);

	/* the same rule in other words */
	parse_ok("ip_proto tcp", &r);
	parse_ok("ip_proto 6", &r2);
	assert_int_equal(shp_match_rule_cmp(&r, &r2), 0);
	parse_ok("eth_type 0x0800 ip_proto 1", &r);
	parse_ok("ip_proto icmp", &r2);
	assert_int_equal(shp_match_rule_cmp(&r, &r2), 0);
	/* and not the same */
	parse_ok("ip_proto 1", &r);
	assert_int_not_equal(shp_match_rule_cmp(&r, &r2), 0);
	parse_ok("src_ip 0.0.0.0/0", &r);
	parse_ok("eth_type ipv4", &r2);
	assert_int_not_equal(shp_match_rule_cmp(&r, &r2), 0);

	/* a short buffer: cut, terminated, the length it needed */
	{
		char small[8];

		parse_ok("src_ip 10.0.0.0/8 dst_port 80", &r);
		assert_int_equal(shp_match_format(&r, small, sizeof(small)),
				 (int)strlen("src_ip 10.0.0.0/8 dst_port 80"));
		assert_string_equal(small, "src_ip ");
	}
}

struct bad {
	const char *text;
	const char *word;     /* the message names it */
	const char *also;     /* and says this (or NULL) */
};

static void
test_refusals(void **state)
{
	static const struct bad cases[] = {
		{"srcip 10.0.0.1", "'srcip'", "unknown"},
		{"src 10.0.0.1", "'src'", "unknown"},
		{"tcp", "'tcp'", "unknown"},
		{"src_ip", "'src_ip'", "needs"},
		{"src_ip 10.0.0.0/8 dst_ip", "'dst_ip'", "needs"},
		{"src_ip 10.0.0/8", "src_ip", "'10.0.0/8'"},
		{"src_ip 10.0.0.300", "src_ip", "'10.0.0.300'"},
		{"src_ip 10.0.0.0/33", "src_ip", "0..32"},
		{"src_ip 10.0.0.0/", "src_ip", "0..32"},
		{"src_ip 10.0.0.0/x", "src_ip", "0..32"},
		{"src_ip 10.0.0.0/-1", "src_ip", "0..32"},
		{"src_ip 10.0.0.0/+8", "src_ip", "0..32"},
		{"src_ip 10.0.0.0/8/8", "src_ip", NULL},
		{"dst_ip 10.0.0.0/64", "dst_ip", "IPv4"},
		{"src_ip 2001:db8::/129", "src_ip", "0..128"},
		{"src_ip 2001:db8::g", "src_ip", NULL},
		{"src_ip 10.1.0.0/8", "src_ip", "10.0.0.0/8"},
		{"dst_ip 2001:db8::1/32", "dst_ip", "2001:db8::/32"},
		{"src_ip 10.0.0.0/8 dst_ip 2001:db8::/32", "dst_ip", "src_ip"},
		{"eth_type ipv6 src_ip 10.0.0.0/8", "src_ip", "eth_type"},
		{"ip_proto icmp dst_ip 2001:db8::1", "dst_ip", "icmp"},
		{"ip_proto icmpv6 eth_type ipv4", "eth_type", "icmpv6"},
		{"ip_proto foo", "ip_proto", "'foo'"},
		{"ip_proto 256", "ip_proto", "'256'"},
		{"ip_proto -1", "ip_proto", NULL},
		{"src_port 90-80", "src_port", "upside down"},
		{"dst_port 70000", "dst_port", "'70000'"},
		{"dst_port 1-", "dst_port", NULL},
		{"dst_port -5", "dst_port", NULL},
		{"dst_port 5-x", "dst_port", NULL},
		{"dst_port http", "dst_port", NULL},
		{"ip_proto icmp dst_port 80", "dst_port", "no ports"},
		{"src_port 80 ip_proto 47", "src_port", "no ports"},
		{"vlan_id 4096", "vlan_id", "0..4095"},
		{"vlan_id -1", "vlan_id", NULL},
		{"vlan_id 1x", "vlan_id", NULL},
		{"ip_tos 256", "ip_tos", NULL},
		{"ip_tos 0x11/0xf0", "ip_tos", "0x10/0xf0"},
		{"ip_tos 0x10/", "ip_tos", NULL},
		{"ip_tos 0x10/0x100", "ip_tos", NULL},
		{"eth_type foo", "eth_type", "'foo'"},
		{"eth_type 0x10000", "eth_type", NULL},
		{"eth_type 0x8100", "eth_type", "vlan_id"},
		{"eth_type 0x88a8", "eth_type", "vlan_id"},
		{"eth_type arp src_ip 10.0.0.1", "eth_type", "src_ip"},
		{"eth_type arp ip_proto tcp", "eth_type", "ip_proto"},
		{"ip_tos 0x10 eth_type 0x88cc", "eth_type", "ip_tos"},
		{"src_ip 10.0.0.1 src_ip 10.0.0.2", "src_ip", "twice"},
		{"dst_port 1 ip_proto tcp dst_port 2", "dst_port", "twice"},
		{"eth_type arp eth_type arp", "eth_type", "twice"},
		{"eth_type ipv4 eth_type ipv4", "eth_type", "twice"},
		{"vlan_id 1 vlan_id 1", "vlan_id", "twice"},
		{"", "empty", NULL},
		{"   \t ", "empty", NULL},
	};
	struct shp_match_rule r;
	char err[SHP_ERR_LEN];
	size_t i;

	for (i = 0; i < RTE_DIM(cases); i++) {
		const struct bad *c = &cases[i];

		err[0] = '\0';
		if (shp_match_parse(c->text, "class t", &r, err) == 0)
			fail_msg("'%s' accepted", c->text);
		if (strncmp(err, "class t: ", 9) != 0 ||
		    strchr(err, '\n') != NULL ||
		    strstr(err, c->word) == NULL ||
		    (c->also != NULL && strstr(err, c->also) == NULL))
			fail_msg("'%s': message '%s' (wanted '%s', '%s')",
				 c->text, err, c->word,
				 c->also ? c->also : "");
	}
}

/* Random rules: parse -> format -> parse gives the same rule. */
static void gen_rule(struct shp_rand *g, char *buf, size_t len);

static void
test_round_trip_random(void **state)
{
	struct shp_rand g;
	struct shp_match_rule r, back;
	char text[SHP_MATCH_TEXT_LEN], out[SHP_MATCH_TEXT_LEN];
	char err[SHP_ERR_LEN];
	int i, ok = 0;

	shp_rand_seed(&g, 13, 1);
	for (i = 0; i < 20000; i++) {
		gen_rule(&g, text, sizeof(text));
		if (shp_match_parse(text, "class t", &r, err) < 0)
			continue;
		ok++;
		shp_match_format(&r, out, sizeof(out));
		if (shp_match_parse(out, "class t", &back, err) < 0)
			fail_msg("'%s' -> '%s' refused: %s", text, out, err);
		if (shp_match_rule_cmp(&r, &back) != 0)
			fail_msg("'%s' -> '%s' is another rule", text, out);
	}
	assert_true(ok > 15000);
}

/* ---- the class set ---- */

static void
set_bad(struct shp_match_set *s, const char *name, const char *text,
	const char *want)
{
	char err[SHP_ERR_LEN] = "";
	uint32_t nc = shp_match_set_classes(s), nr = shp_match_set_rules(s);

	if (shp_match_set_add(s, name, text, err) == 0)
		fail_msg("class %s '%s' accepted", name, text);
	if (strstr(err, want) == NULL || strchr(err, '\n') != NULL)
		fail_msg("class %s '%s': message '%s' (wanted '%s')", name,
			 text, err, want);
	/* nothing changed */
	assert_int_equal(shp_match_set_classes(s), nc);
	assert_int_equal(shp_match_set_rules(s), nr);
}

static void
set_ok(struct shp_match_set *s, const char *name, const char *text)
{
	char err[SHP_ERR_LEN] = "";

	if (shp_match_set_add(s, name, text, err) != 0)
		fail_msg("class %s '%s' refused: %s", name, text, err);
}

static void
test_set(void **state)
{
	struct shp_match_set *s = shp_match_set_new();
	uint32_t cls;

	assert_non_null(s);
	set_ok(s, "a", "src_ip 10.1.0.0/16");
	set_ok(s, "b", "src_ip 10.2.0.0/16");
	set_ok(s, "a", "src_ip 10.3.0.0/16");
	assert_int_equal(shp_match_set_classes(s), 2);
	assert_int_equal(shp_match_set_rules(s), 3);
	assert_int_equal(shp_match_set_find(s, "a"), 0);
	assert_int_equal(shp_match_set_find(s, "b"), 1);
	assert_int_equal(shp_match_set_find(s, "c"), -1);
	assert_string_equal(shp_match_set_name(s, 1), "b");
	assert_null(shp_match_set_name(s, 2));
	assert_non_null(shp_match_set_rule(s, 2, &cls));
	assert_int_equal(cls, 0);
	assert_null(shp_match_set_rule(s, 3, &cls));

	/* identical rules in two classes, in any words */
	set_bad(s, "c", "src_ip 10.2.0.0/16", "class b");
	set_bad(s, "c", "eth_type ipv4 src_ip 10.2.0.0/16", "class b");
	set_bad(s, "a", "src_ip 10.1.0.0/16", "twice");
	assert_int_equal(shp_match_set_find(s, "c"), -1);
	/* empty or bad rule: the class is not created */
	set_bad(s, "d", "", "class d: empty");
	set_bad(s, "d", "bogus 1", "'bogus'");
	assert_int_equal(shp_match_set_find(s, "d"), -1);
	/* names */
	set_bad(s, "a b", "vlan_id 1", "'a b'");
	set_bad(s, "", "vlan_id 1", "name");
	set_bad(s, "a.b", "vlan_id 1", "'a.b'");
	set_bad(s, "abcdefghijklmnopqrstuvwxyz012345", "vlan_id 1",
		"name");
	set_ok(s, "abcdefghijklmnopqrstuvwxyz01234", "vlan_id 1");
	set_bad(s, "x-y", "vlan_id 2", "'x-y'");
	set_ok(s, "x_yZ9", "vlan_id 2");
	assert_int_equal(shp_match_set_find(s, "x_yZ9"), 3);
	shp_match_set_free(s);
}

/* ---- key extraction ---- */

static uint8_t frame[256];

/* dst, src MACs, tags (tpid, tci pairs), ethertype; returns L3 offset */
static size_t
eth(uint8_t *f, const uint16_t *tags, int ntags, uint16_t et)
{
	size_t o = 12;
	int i;

	memset(f, 0, 256);
	memset(f, 0x02, 12);
	for (i = 0; i < ntags; i++) {
		f[o] = tags[2 * i] >> 8;
		f[o + 1] = tags[2 * i] & 0xff;
		f[o + 2] = tags[2 * i + 1] >> 8;
		f[o + 3] = tags[2 * i + 1] & 0xff;
		o += 4;
	}
	f[o] = et >> 8;
	f[o + 1] = et & 0xff;
	return o + 2;
}

/* IPv4 header of ihl words with fragment field frag; returns L4 offset */
static size_t
ipv4(uint8_t *f, size_t o, uint8_t tos, uint8_t proto, const char *src,
     const char *dst, int ihl, uint16_t frag)
{
	f[o] = 0x40 | ihl;
	f[o + 1] = tos;
	f[o + 6] = frag >> 8;
	f[o + 7] = frag & 0xff;
	f[o + 9] = proto;
	assert_int_equal(inet_pton(AF_INET, src, f + o + 12), 1);
	assert_int_equal(inet_pton(AF_INET, dst, f + o + 16), 1);
	return o + 4 * ihl;
}

static size_t
ipv6(uint8_t *f, size_t o, uint8_t tc, uint8_t nh, const char *src,
     const char *dst)
{
	f[o] = 0x60 | (tc >> 4);
	f[o + 1] = (uint8_t)(tc << 4);
	f[o + 6] = nh;
	assert_int_equal(inet_pton(AF_INET6, src, f + o + 8), 1);
	assert_int_equal(inet_pton(AF_INET6, dst, f + o + 24), 1);
	return o + 40;
}

static size_t
ports(uint8_t *f, size_t o, uint16_t sp, uint16_t dp)
{
	f[o] = sp >> 8;
	f[o + 1] = sp & 0xff;
	f[o + 2] = dp >> 8;
	f[o + 3] = dp & 0xff;
	return o + 20;
}

static struct rte_mbuf *
mk(const uint8_t *f, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	assert_non_null(m);
	memcpy(rte_pktmbuf_append(m, len), f, len);
	return m;
}

/* The same frame in segments of seg bytes. */
static struct rte_mbuf *
mk_segs(const uint8_t *f, size_t len, size_t seg)
{
	struct rte_mbuf *head = NULL;
	size_t o;

	for (o = 0; o < len; o += seg) {
		struct rte_mbuf *m = mk(f + o, RTE_MIN(seg, len - o));

		if (head == NULL)
			head = m;
		else
			assert_int_equal(rte_pktmbuf_chain(head, m), 0);
	}
	return head;
}

static void
key_of(const uint8_t *f, size_t len, struct shp_match_key *k)
{
	struct rte_mbuf *m = mk(f, len);
	struct rte_mbuf *s = mk_segs(f, len, 7);
	struct shp_match_key ks;

	shp_match_key_extract(m, k);
	shp_match_key_extract(s, &ks);
	assert_memory_equal(k, &ks, sizeof(*k));
	rte_pktmbuf_free(m);
	rte_pktmbuf_free(s);
}

static uint32_t
be32_of(const char *a)
{
	uint32_t v;

	assert_int_equal(inet_pton(AF_INET, a, &v), 1);
	return v;
}

static void
test_extract_v4(void **state)
{
	struct shp_match_key k;
	uint16_t vlan[] = {0x8100, 0xe064};          /* PCP 7, VID 100 */
	uint16_t four[] = {0x9100, 1, 0x9200, 2, 0x8100, 3, 0x88a8, 4};
	uint16_t five[] = {0x9100, 1, 0x9200, 2, 0x8100, 3, 0x88a8, 4,
			   0x8100, 5};
	size_t o, end;

	/* untagged TCP */
	o = ipv4(frame, eth(frame, NULL, 0, 0x0800), 0xb8, 6, "10.1.2.3",
		 "192.0.2.9", 5, 0);
	end = ports(frame, o, 1234, 443);
	key_of(frame, end, &k);
	assert_int_equal(k.flags, SHP_KEY_IP | SHP_KEY_PORTS);
	assert_int_equal(rte_be_to_cpu_16(k.eth_type), 0x0800);
	assert_int_equal(k.tos, 0xb8);
	assert_int_equal(k.proto, 6);
	assert_int_equal(k.src[0], be32_of("10.1.2.3"));
	assert_int_equal(k.dst[0], be32_of("192.0.2.9"));
	assert_int_equal(k.src[1] | k.dst[1] | k.src[3] | k.dst[3], 0);
	assert_int_equal(rte_be_to_cpu_16(k.sport), 1234);
	assert_int_equal(rte_be_to_cpu_16(k.dport), 443);
	/* cut inside the ports: IP, no ports; inside the header: nothing */
	key_of(frame, o + 3, &k);
	assert_int_equal(k.flags, SHP_KEY_IP);
	assert_int_equal(k.sport | k.dport, 0);
	key_of(frame, o - 1, &k);
	assert_int_equal(k.flags, 0);
	assert_int_equal(rte_be_to_cpu_16(k.eth_type), 0x0800);
	assert_int_equal(k.src[0] | k.proto | k.tos, 0);

	/* options: the ports are after them */
	o = ipv4(frame, eth(frame, NULL, 0, 0x0800), 0, 17, "10.0.0.1",
		 "10.0.0.2", 7, 0);
	end = ports(frame, o, 53, 5353);
	key_of(frame, end, &k);
	assert_int_equal(k.flags, SHP_KEY_IP | SHP_KEY_PORTS);
	assert_int_equal(rte_be_to_cpu_16(k.sport), 53);
	assert_int_equal(rte_be_to_cpu_16(k.dport), 5353);
	/* a bad IHL or version is no IP header */
	frame[14] = 0x44;
	key_of(frame, end, &k);
	assert_int_equal(k.flags, 0);
	frame[14] = 0x65;
	key_of(frame, end, &k);
	assert_int_equal(k.flags, 0);

	/* first fragment (MF) has the ports, later ones do not */
	o = ipv4(frame, eth(frame, NULL, 0, 0x0800), 0, 6, "10.0.0.1",
		 "10.0.0.2", 5, 0x2000);
	end = ports(frame, o, 1, 2);
	key_of(frame, end, &k);
	assert_int_equal(k.flags, SHP_KEY_IP | SHP_KEY_PORTS);
	ipv4(frame, 14, 0, 6, "10.0.0.1", "10.0.0.2", 5, 0x0001);
	key_of(frame, end, &k);
	assert_int_equal(k.flags, SHP_KEY_IP);
	assert_int_equal(k.proto, 6);

	/* ICMP, SCTP, GRE */
	o = ipv4(frame, eth(frame, NULL, 0, 0x0800), 0, 1, "10.0.0.1",
		 "10.0.0.2", 5, 0);
	key_of(frame, ports(frame, o, 1, 2), &k);
	assert_int_equal(k.flags, SHP_KEY_IP);
	ipv4(frame, 14, 0, 132, "10.0.0.1", "10.0.0.2", 5, 0);
	key_of(frame, ports(frame, o, 1, 2), &k);
	assert_int_equal(k.flags, SHP_KEY_IP | SHP_KEY_PORTS);
	ipv4(frame, 14, 0, 47, "10.0.0.1", "10.0.0.2", 5, 0);
	key_of(frame, ports(frame, o, 1, 2), &k);
	assert_int_equal(k.flags, SHP_KEY_IP);

	/* one tag: the VID (not the PCP), IP behind it */
	o = ipv4(frame, eth(frame, vlan, 1, 0x0800), 0, 17, "10.0.0.1",
		 "10.0.0.2", 5, 0);
	key_of(frame, ports(frame, o, 7, 8), &k);
	assert_int_equal(k.flags, SHP_KEY_VLAN | SHP_KEY_IP | SHP_KEY_PORTS);
	assert_int_equal(rte_be_to_cpu_16(k.vlan), 100);
	assert_int_equal(rte_be_to_cpu_16(k.dport), 8);
	/* four tags of every TPID: the outer VID */
	o = ipv4(frame, eth(frame, four, 4, 0x0800), 0, 17, "10.0.0.1",
		 "10.0.0.2", 5, 0);
	key_of(frame, ports(frame, o, 7, 8), &k);
	assert_int_equal(k.flags, SHP_KEY_VLAN | SHP_KEY_IP | SHP_KEY_PORTS);
	assert_int_equal(rte_be_to_cpu_16(k.vlan), 1);
	/* a fifth is where the walk stops */
	o = ipv4(frame, eth(frame, five, 5, 0x0800), 0, 17, "10.0.0.1",
		 "10.0.0.2", 5, 0);
	key_of(frame, ports(frame, o, 7, 8), &k);
	assert_int_equal(k.flags, SHP_KEY_VLAN);
	assert_int_equal(rte_be_to_cpu_16(k.eth_type), 0x8100);
	/* a tag and nothing after it */
	key_of(frame, 16, &k);
	assert_int_equal(k.flags, SHP_KEY_VLAN);
	assert_int_equal(rte_be_to_cpu_16(k.vlan), 1);
	assert_int_equal(k.eth_type, 0);
}

static void
test_extract_other(void **state)
{
	struct shp_match_key k, zero;
	uint16_t qinq[] = {0x88a8, 5, 0x8100, 6};
	uint8_t a6[16];
	size_t o, end;

	/* IPv6 behind QinQ: outer VID, traffic class */
	o = ipv6(frame, eth(frame, qinq, 2, 0x86dd), 0xb9, 17,
		 "2001:db8::1", "2001:db8:1::2");
	end = ports(frame, o, 4000, 53);
	key_of(frame, end, &k);
	assert_int_equal(k.flags, SHP_KEY_VLAN | SHP_KEY_IP | SHP_KEY_PORTS);
	assert_int_equal(rte_be_to_cpu_16(k.vlan), 5);
	assert_int_equal(rte_be_to_cpu_16(k.eth_type), 0x86dd);
	assert_int_equal(k.tos, 0xb9);
	assert_int_equal(k.proto, 17);
	inet_pton(AF_INET6, "2001:db8::1", a6);
	assert_memory_equal(k.src, a6, 16);
	inet_pton(AF_INET6, "2001:db8:1::2", a6);
	assert_memory_equal(k.dst, a6, 16);
	assert_int_equal(rte_be_to_cpu_16(k.dport), 53);
	key_of(frame, o - 1, &k);
	assert_int_equal(k.flags, SHP_KEY_VLAN);

	/* hop-by-hop (16 bytes), then a first fragment, then TCP */
	o = ipv6(frame, eth(frame, NULL, 0, 0x86dd), 0, 0, "::1", "::2");
	frame[o] = 44;
	frame[o + 1] = 1;
	frame[o + 16] = 6;
	frame[o + 19] = 1;         /* M flag, offset 0 */
	end = ports(frame, o + 24, 80, 8080);
	key_of(frame, end, &k);
	assert_int_equal(k.flags, SHP_KEY_IP | SHP_KEY_PORTS);
	assert_int_equal(k.proto, 6);
	assert_int_equal(rte_be_to_cpu_16(k.sport), 80);
	/* a later fragment: TCP, no ports */
	frame[o + 18] = 0x01;
	key_of(frame, end, &k);
	assert_int_equal(k.flags, SHP_KEY_IP);
	assert_int_equal(k.proto, 6);
	/* cut inside the extension headers: the protocol is where it
	 * stopped */
	key_of(frame, o + 20, &k);
	assert_int_equal(k.flags, SHP_KEY_IP);
	assert_int_equal(k.proto, 44);

	/* ARP, LLDP: the ethertype only */
	o = eth(frame, NULL, 0, 0x0806);
	key_of(frame, o + 28, &k);
	assert_int_equal(k.flags, 0);
	assert_int_equal(rte_be_to_cpu_16(k.eth_type), 0x0806);

	/* a runt */
	memset(&zero, 0, sizeof(zero));
	key_of(frame, 10, &k);
	assert_memory_equal(&k, &zero, sizeof(k));
}

/* ---- lookup ---- */

static struct shp_match_table *
table_of(struct shp_match_set *s)
{
	char err[SHP_ERR_LEN] = "";
	struct shp_match_table *t = shp_match_table_create(s, SOCKET_ID_ANY,
							   err);

	if (t == NULL)
		fail_msg("table: %s", err);
	return t;
}

/* The reference: the first class one of whose rules hits k. */
static uint16_t
scan(const struct shp_match_set *s, const struct shp_match_key *k)
{
	uint32_t i, cls, best = SHP_MATCH_NONE;

	for (i = 0; i < shp_match_set_rules(s); i++) {
		const struct shp_match_rule *r = shp_match_set_rule(s, i, &cls);

		if (cls < best && shp_match_rule_hits(r, k))
			best = cls;
	}
	return (uint16_t)best;
}

struct pcase {
	const char *what;
	uint16_t et;
	int tagged;         /* VID 7 */
	const char *src, *dst;
	uint8_t tos, proto;
	uint16_t dport;
	int cut;            /* bytes taken off the end */
	const char *want;   /* class name, NULL: none */
};

static size_t
build(uint8_t *f, const struct pcase *c)
{
	uint16_t vlan[] = {0x8100, 7};
	size_t o = eth(f, vlan, c->tagged, c->et);

	if (c->et == 0x0800)
		o = ports(f, ipv4(f, o, c->tos, c->proto, c->src, c->dst, 5,
				  0), 999, c->dport);
	else if (c->et == 0x86dd)
		o = ports(f, ipv6(f, o, c->tos, c->proto, c->src, c->dst),
			  999, c->dport);
	else
		o += 28;
	return o - c->cut;
}

static void
test_lookup_classes(void **state)
{
	static const char *const rules[][2] = {
		{"a", "dst_ip 10.1.0.0/16"},
		{"b", "dst_ip 10.2.0.0/16"},
		{"c", "ip_proto tcp dst_port 443"},
		{"a", "dst_ip 2001:db8:1::/48"},      /* a's second rule */
		{"d", "vlan_id 7"},
		{"e", "eth_type arp"},
		{"f", "ip_tos 0xb8/0xfc"},
		{"g", "eth_type ipv6 ip_proto 47"},
	};
	static const struct pcase pk[] = {
		{"a before c", 0x0800, 0, "1.1.1.1", "10.1.2.3", 0, 6, 443, 0,
		 "a"},
		{"c", 0x0800, 0, "1.1.1.1", "10.3.0.1", 0, 6, 443, 0, "c"},
		{"udp 443", 0x0800, 0, "1.1.1.1", "10.3.0.1", 0, 17, 443, 0,
		 NULL},
		{"a, v6", 0x86dd, 0, "::1", "2001:db8:1::5", 0, 17, 1, 0, "a"},
		{"c, v6", 0x86dd, 0, "::1", "2001:db8:2::5", 0, 6, 443, 0,
		 "c"},
		{"d", 0x0800, 1, "1.1.1.1", "10.9.9.9", 0, 17, 1, 0, "d"},
		{"b before d", 0x0800, 1, "1.1.1.1", "10.2.0.1", 0, 17, 1, 0,
		 "b"},
		{"e", 0x0806, 0, NULL, NULL, 0, 0, 0, 0, "e"},
		{"d before e", 0x0806, 1, NULL, NULL, 0, 0, 0, 0, "d"},
		{"lldp", 0x88cc, 0, NULL, NULL, 0, 0, 0, 0, NULL},
		{"f", 0x0800, 0, "1.1.1.1", "10.9.9.9", 0xb9, 17, 1, 0, "f"},
		{"f, v6", 0x86dd, 0, "::1", "::2", 0xbb, 17, 1, 0, "f"},
		{"not f", 0x86dd, 0, "::1", "::2", 0xbc, 17, 1, 0, NULL},
		{"g", 0x86dd, 0, "::1", "::2", 0, 47, 1, 0, "g"},
		{"not g, v4", 0x0800, 0, "1.1.1.1", "10.9.9.9", 0, 47, 1, 0,
		 NULL},
		{"c without ports", 0x0800, 0, "1.1.1.1", "10.3.0.1", 0, 6,
		 443, 19, NULL},
		{"a truncated", 0x0800, 0, "1.1.1.1", "10.1.2.3", 0, 6, 443,
		 21, NULL},
	};
	struct shp_match_set *s = shp_match_set_new();
	struct rte_mbuf *m[RTE_DIM(pk)];
	uint16_t cls[RTE_DIM(pk)];
	struct shp_match_table *t;
	struct shp_match_key k;
	size_t i;

	for (i = 0; i < RTE_DIM(rules); i++)
		set_ok(s, rules[i][0], rules[i][1]);
	t = table_of(s);
	assert_int_equal(shp_match_table_classes(t), 7);
	for (i = 0; i < RTE_DIM(pk); i++)
		m[i] = mk(frame, build(frame, &pk[i]));
	shp_match_lookup_burst(t, m, RTE_DIM(pk), cls);
	for (i = 0; i < RTE_DIM(pk); i++) {
		uint16_t want = pk[i].want == NULL ? SHP_MATCH_NONE :
			(uint16_t)shp_match_set_find(s, pk[i].want);

		if (cls[i] != want)
			fail_msg("%s: class %d, not %d", pk[i].what, cls[i],
				 want);
		shp_match_key_extract(m[i], &k);
		assert_int_equal(scan(s, &k), want);
		rte_pktmbuf_free(m[i]);
	}
	shp_match_table_free(t);
	shp_match_set_free(s);
}

/* No rules, or rules for one IP version only: the rest matches nothing. */
static void
test_lookup_partial(void **state)
{
	static const struct pcase v4 = {"v4", 0x0800, 0, "10.0.0.1",
					"10.0.0.2", 0, 6, 80, 0, NULL};
	static const struct pcase v6 = {"v6", 0x86dd, 0, "::1", "::2", 0, 6,
					80, 0, NULL};
	struct shp_match_set *s = shp_match_set_new();
	struct shp_match_table *t;
	struct rte_mbuf *m[2];
	uint16_t cls[2];

	m[0] = mk(frame, build(frame, &v4));
	m[1] = mk(frame, build(frame, &v6));
	t = table_of(s);
	assert_int_equal(shp_match_table_classes(t), 0);
	shp_match_lookup_burst(t, m, 2, cls);
	assert_int_equal(cls[0], SHP_MATCH_NONE);
	assert_int_equal(cls[1], SHP_MATCH_NONE);
	shp_match_table_free(t);

	set_ok(s, "six", "dst_port 80 src_ip ::/0");
	t = table_of(s);
	shp_match_lookup_burst(t, m, 2, cls);
	assert_int_equal(cls[0], SHP_MATCH_NONE);
	assert_int_equal(cls[1], 0);
	shp_match_table_free(t);
	shp_match_set_free(s);

	s = shp_match_set_new();
	set_ok(s, "four", "dst_port 80 src_ip 0.0.0.0/0");
	t = table_of(s);
	shp_match_lookup_burst(t, m, 2, cls);
	assert_int_equal(cls[0], 0);
	assert_int_equal(cls[1], SHP_MATCH_NONE);
	shp_match_table_free(t);
	shp_match_set_free(s);
	rte_pktmbuf_free(m[0]);
	rte_pktmbuf_free(m[1]);
}

/* An RCU swap has the old and the new table alive at once. */
static void
test_two_tables(void **state)
{
	static const struct pcase p = {"p", 0x0800, 0, "10.0.0.1",
				       "10.0.0.2", 0, 6, 80, 0, NULL};
	struct shp_match_set *s1 = shp_match_set_new();
	struct shp_match_set *s2 = shp_match_set_new();
	struct shp_match_table *t1, *t2;
	struct rte_mbuf *m = mk(frame, build(frame, &p));
	uint16_t c;

	set_ok(s1, "x", "dst_port 80");
	set_ok(s2, "y", "ip_proto udp");
	set_ok(s2, "x", "dst_port 80");
	t1 = table_of(s1);
	t2 = table_of(s2);
	shp_match_lookup_burst(t1, &m, 1, &c);
	assert_int_equal(c, 0);
	shp_match_lookup_burst(t2, &m, 1, &c);
	assert_int_equal(c, 1);
	shp_match_table_free(t1);
	shp_match_lookup_burst(t2, &m, 1, &c);
	assert_int_equal(c, 1);
	shp_match_table_free(t2);
	shp_match_set_free(s1);
	shp_match_set_free(s2);
	rte_pktmbuf_free(m);
}

/* ---- random rules and packets ---- */

static uint32_t
pick(struct shp_rand *g, const uint32_t *v, size_t n)
{
	return v[shp_rand_below(g, (uint32_t)n)];
}

#define PICK(g, a) pick(g, a, RTE_DIM(a))

/* Values drawn from small pools, so that rules overlap and packets hit. */
static const uint32_t v4lens[] = {0, 8, 12, 16, 20, 24, 28, 30, 32};
static const uint32_t v6lens[] = {0, 16, 32, 40, 48, 64, 100, 127, 128};
static const uint32_t protos[] = {6, 17, 132, 1, 58, 47, 6, 17};
static const uint32_t portv[] = {0, 53, 80, 443, 1000, 1005, 5000, 65535};
static const uint32_t widths[] = {0, 0, 0, 5, 100, 65535};
static const uint32_t tosv[] = {0x00, 0x10, 0xb8, 0xb9, 0x20, 0xff};

static void
rand_v4(struct shp_rand *g, uint8_t *a)
{
	a[0] = 10;
	a[1] = (uint8_t)shp_rand_below(g, 4);
	a[2] = (uint8_t)shp_rand_below(g, 4);
	a[3] = (uint8_t)shp_rand_below(g, 16);
	if (shp_rand_below(g, 8) == 0)
		a[3] = (uint8_t)shp_rand_u64(g);
}

static void
rand_v6(struct shp_rand *g, uint8_t *a)
{
	memset(a, 0, 16);
	a[0] = 0x20;
	a[1] = 0x01;
	a[2] = 0x0d;
	a[3] = 0xb8;
	a[5] = (uint8_t)shp_rand_below(g, 4);
	a[6] = (uint8_t)shp_rand_below(g, 2);
	a[15] = (uint8_t)shp_rand_below(g, 16);
	if (shp_rand_below(g, 8) == 0)
		a[12] = (uint8_t)shp_rand_u64(g);
}

static void
mask(uint8_t *a, unsigned int len, unsigned int bytes)
{
	unsigned int i;

	for (i = 0; i < bytes; i++) {
		int keep = (int)len - 8 * (int)i;

		if (keep <= 0)
			a[i] = 0;
		else if (keep < 8)
			a[i] &= (uint8_t)(0xff << (8 - keep));
	}
}

static int
add(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
	return 1;
}

/* A random rule's text, mostly valid: words in random order are not
 * needed (the parser does not care), values are. */
static void
gen_rule(struct shp_rand *g, char *buf, size_t len)
{
	int fam = (int)shp_rand_below(g, 3) * 2;   /* 0, 2 (v4), 4 (v6) */
	uint8_t a[16];
	char s[INET6_ADDRSTRLEN];
	int words = 0, ports = 0;
	uint32_t proto = 0, lo, hi;

	fam = fam == 2 ? 4 : fam == 4 ? 6 : 0;
	buf[0] = '\0';
	for (int side = 0; side < 2 && fam != 0; side++) {
		unsigned int l;

		if (shp_rand_below(g, 3) == 0 && !(side == 1 && words == 0))
			continue;
		if (fam == 4) {
			rand_v4(g, a);
			l = PICK(g, v4lens);
			mask(a, l, 4);
			inet_ntop(AF_INET, a, s, sizeof(s));
		} else {
			rand_v6(g, a);
			l = PICK(g, v6lens);
			mask(a, l, 16);
			inet_ntop(AF_INET6, a, s, sizeof(s));
		}
		words += add(buf, len, " %s %s/%u", side ? "dst_ip" : "src_ip",
			     s, l);
	}
	if (shp_rand_below(g, 3) == 0) {
		proto = PICK(g, protos);
		if (proto == 1 && fam == 4 && shp_rand_below(g, 2))
			words += add(buf, len, " ip_proto icmp");
		else if (proto == 58 && fam == 6 && shp_rand_below(g, 2))
			words += add(buf, len, " ip_proto icmpv6");
		else
			words += add(buf, len, " ip_proto %u", proto);
	}
	if (proto == 0 || shp_match_has_ports((uint8_t)proto)) {
		for (int side = 0; side < 2; side++) {
			if (shp_rand_below(g, 3) != 0)
				continue;
			/* single ports and a few ranges, as configurations
			 * have them (every distinct bound grows the trie) */
			lo = PICK(g, portv);
			hi = lo + PICK(g, widths);
			if (hi > 65535)
				hi = 65535;
			words += add(buf, len, " %s %u-%u",
				     side ? "dst_port" : "src_port", lo, hi);
			ports = 1;
		}
	}
	if (shp_rand_below(g, 4) == 0)
		words += add(buf, len, " vlan_id %u", shp_rand_below(g, 4));
	if (shp_rand_below(g, 5) == 0) {
		static const char *const tos[] = {"0x10", "0xb8/0xfc",
						  "0x00/0xe0", "0x20/0x20",
						  "0/0"};
		words += add(buf, len, " ip_tos %s",
			     tos[shp_rand_below(g, RTE_DIM(tos))]);
	}
	if (words == 0 || (fam != 0 && shp_rand_below(g, 4) == 0)) {
		static const char *const et[] = {"arp", "0x88cc", "ipv4",
						 "ipv6"};
		const char *e = et[shp_rand_below(g, RTE_DIM(et))];

		if (fam == 4)
			e = "ipv4";
		else if (fam == 6)
			e = "ipv6";
		add(buf, len, " eth_type %s", e);
	}
	(void)ports;
}

/* A random key as the header walk gives them (its flags tell which fields
 * hold something; the rest is 0). */
static void
gen_key(struct shp_rand *g, struct shp_match_key *k)
{
	uint32_t kind = shp_rand_below(g, 20);
	uint16_t et;

	memset(k, 0, sizeof(*k));
	if (shp_rand_below(g, 2)) {
		k->flags |= SHP_KEY_VLAN;
		k->vlan = rte_cpu_to_be_16((uint16_t)shp_rand_below(g, 5));
	}
	if (kind < 9)
		et = RTE_ETHER_TYPE_IPV4;
	else if (kind < 16)
		et = RTE_ETHER_TYPE_IPV6;
	else if (kind < 18)
		et = RTE_ETHER_TYPE_ARP;
	else if (kind < 19)
		et = 0x88cc;
	else
		et = (uint16_t)shp_rand_u64(g);
	if (shp_match_is_vlan(et))
		et = 0x88b5;
	k->eth_type = rte_cpu_to_be_16(et);
	if (et != RTE_ETHER_TYPE_IPV4 && et != RTE_ETHER_TYPE_IPV6)
		return;
	if (shp_rand_below(g, 20) == 0)
		return;                 /* truncated IP header */
	k->flags |= SHP_KEY_IP;
	if (et == RTE_ETHER_TYPE_IPV4) {
		rand_v4(g, (uint8_t *)k->src);
		rand_v4(g, (uint8_t *)k->dst);
	} else {
		rand_v6(g, (uint8_t *)k->src);
		rand_v6(g, (uint8_t *)k->dst);
	}
	k->tos = (uint8_t)(shp_rand_below(g, 2) ? PICK(g, tosv) :
			   shp_rand_u64(g));
	k->proto = (uint8_t)(shp_rand_below(g, 8) ? PICK(g, protos) :
			     shp_rand_u64(g));
	if (shp_match_has_ports(k->proto) && shp_rand_below(g, 10)) {
		k->flags |= SHP_KEY_PORTS;
		k->sport = rte_cpu_to_be_16((uint16_t)(PICK(g, portv) +
					    shp_rand_below(g, 3)));
		k->dport = rte_cpu_to_be_16((uint16_t)(shp_rand_below(g, 4) ?
			PICK(g, portv) + shp_rand_below(g, 20) :
			shp_rand_u64(g)));
	}
}

#define N_RULES 3000
#define N_KEYS  20000

/* N_RULES random rules in classes of 1..several rules each. */
static struct shp_match_set *
random_set(struct shp_rand *g, uint32_t nrules)
{
	struct shp_match_set *s = shp_match_set_new();
	char text[SHP_MATCH_TEXT_LEN], name[16], err[SHP_ERR_LEN];
	uint32_t nc = 0;

	assert_non_null(s);
	while (shp_match_set_rules(s) < nrules) {
		uint32_t c = nc == 0 || shp_rand_below(g, 3) == 0 ? nc :
			     shp_rand_below(g, nc);

		snprintf(name, sizeof(name), "c%u", c);
		gen_rule(g, text, sizeof(text));
		if (shp_match_set_add(s, name, text, err) == 0 && c == nc)
			nc++;
	}
	return s;
}

static void
test_lookup_random(void **state)
{
	static struct shp_match_key keys[N_KEYS];
	static uint16_t cls[N_KEYS];
	struct shp_match_table *t;
	struct shp_match_set *s;
	struct shp_rand g;
	uint32_t i, j, hits = 0, ties = 0, cl;
	uint64_t t0;

	shp_rand_seed(&g, 13, 2);
	s = random_set(&g, N_RULES);
	t0 = rte_rdtsc();
	t = table_of(s);
	print_message("table of %u random rules built in %.0f ms\n",
		      shp_match_set_rules(s),
		      (double)(rte_rdtsc() - t0) / rte_get_tsc_hz() * 1e3);
	for (i = 0; i < N_KEYS; i++)
		gen_key(&g, &keys[i]);
	shp_match_lookup_keys(t, keys, N_KEYS, cls);
	for (i = 0; i < N_KEYS; i++) {
		uint16_t want = scan(s, &keys[i]);

		if (cls[i] != want) {
			char text[SHP_MATCH_TEXT_LEN] = "";

			if (cls[i] != SHP_MATCH_NONE)
				for (j = 0; j < shp_match_set_rules(s); j++) {
					const struct shp_match_rule *r =
						shp_match_set_rule(s, j, &cl);

					if (cl == cls[i])
						shp_match_format(r, text,
								 sizeof(text));
				}
			fail_msg("key %u: class %d, the scan says %d (%s...)",
				 i, cls[i], want, text);
		}
		hits += want != SHP_MATCH_NONE;
		/* keys that a later class matches too: the first won */
		for (j = 0; j < shp_match_set_rules(s); j++)
			if (shp_match_rule_hits(shp_match_set_rule(s, j, &cl),
						&keys[i]) && cl != want) {
				ties++;
				break;
			}
	}
	print_message("%u rules, %u classes: %u of %u keys matched, %u of "
		      "them by more than one class\n", shp_match_set_rules(s),
		      shp_match_set_classes(s), hits, N_KEYS, ties);
	assert_true(hits > N_KEYS / 4 && hits < N_KEYS);
	assert_true(ties > N_KEYS / 20);
	shp_match_table_free(t);
	shp_match_set_free(s);
}

/* The same through real frames and the burst call (odd burst sizes). */
static void
test_lookup_random_frames(void **state)
{
	enum { N = 1000 };
	static struct rte_mbuf *m[N];
	static uint16_t cls[N];
	struct shp_match_table *t;
	struct shp_match_set *s;
	struct shp_match_key k;
	struct shp_rand g;
	uint32_t i, at, hits = 0;

	shp_rand_seed(&g, 13, 3);
	s = random_set(&g, 500);
	t = table_of(s);
	for (i = 0; i < N; i++) {
		uint16_t tags[] = {0x8100, 0, 0x8100, 1};
		struct pcase c = {.tagged = (int)shp_rand_below(&g, 3)};
		char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

		gen_key(&g, &k);
		c.et = rte_be_to_cpu_16(k.eth_type);
		tags[1] = rte_be_to_cpu_16(k.vlan);
		c.tos = k.tos;
		c.proto = k.proto;
		c.dport = rte_be_to_cpu_16(k.dport);
		if (c.et == RTE_ETHER_TYPE_IPV4) {
			inet_ntop(AF_INET, k.src, a, sizeof(a));
			inet_ntop(AF_INET, k.dst, b, sizeof(b));
		} else {
			inet_ntop(AF_INET6, k.src, a, sizeof(a));
			inet_ntop(AF_INET6, k.dst, b, sizeof(b));
		}
		c.src = a;
		c.dst = b;
		if (c.et != RTE_ETHER_TYPE_IPV4 && c.et != RTE_ETHER_TYPE_IPV6)
			c.et = RTE_ETHER_TYPE_ARP;
		{
			size_t o = eth(frame, tags, c.tagged, c.et), end;

			if (c.et == RTE_ETHER_TYPE_IPV4)
				end = ports(frame, ipv4(frame, o, c.tos,
					c.proto, a, b, 5, 0), 1, c.dport);
			else if (c.et == RTE_ETHER_TYPE_IPV6)
				end = ports(frame, ipv6(frame, o, c.tos,
					c.proto, a, b), 1, c.dport);
			else
				end = o + 28;
			m[i] = mk(frame, end);
		}
	}
	for (at = 0; at < N; ) {
		uint32_t n = RTE_MIN(N - at, 1 + shp_rand_below(&g, 150));

		shp_match_lookup_burst(t, m + at, n, cls + at);
		at += n;
	}
	for (i = 0; i < N; i++) {
		shp_match_key_extract(m[i], &k);
		assert_int_equal(cls[i], scan(s, &k));
		hits += cls[i] != SHP_MATCH_NONE;
		rte_pktmbuf_free(m[i]);
	}
	assert_true(hits > N / 10);
	shp_match_table_free(t);
	shp_match_set_free(s);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_round_trip_random),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_extract_v4),
		cmocka_unit_test(test_extract_other),
		cmocka_unit_test(test_lookup_classes),
		cmocka_unit_test(test_lookup_partial),
		cmocka_unit_test(test_two_tables),
		cmocka_unit_test(test_lookup_random),
		cmocka_unit_test(test_lookup_random_frames),
	};

	(void)argc;
	(void)argv;
	shp_rig_env("class_match", 1024);
	pool = shp_rig_pool_create("class_match_pool", 4096, RTE_MBUF_DEFAULT_BUF_SIZE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
