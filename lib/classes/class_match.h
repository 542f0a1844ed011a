/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Class match rules (issue 13): tc flower's words send a packet to a class.
 *
 *   src_ip A[/LEN]  dst_ip A[/LEN]       IPv4 or IPv6, a prefix
 *   ip_proto tcp|udp|sctp|icmp|icmpv6|N  the transport protocol (IPv6: after
 *                                        the extension headers)
 *   src_port N[-M]  dst_port N[-M]       TCP, UDP or SCTP ports (first
 *                                        fragments only)
 *   vlan_id N                            the outermost VLAN tag's VID
 *   ip_tos X[/MASK]                      IPv4 TOS / IPv6 traffic class
 *   eth_type ipv4|ipv6|arp|0xNNNN        the ethertype after the VLAN tags
 *
 * Words of one rule AND together; several rules of one class OR together;
 * classes are tried in the order they were first named, the first that
 * matches wins; no match is SHP_MATCH_NONE (the port's default chain).
 * VLAN tags (0x8100, 0x88a8, 0x9100, 0x9200, up to SHP_MATCH_MAX_TAGS) are
 * looked through for the IP header, as flower does.
 *
 * As flower: an address, icmp or icmpv6 ties the rule to its IP version;
 * ports need ip_proto tcp, udp or sctp, or no ip_proto (then they match any
 * of the three). Unlike flower, keywords are not abbreviated (src could be
 * src_ip or src_port), and a prefix or TOS with bits set beyond its
 * length/mask is refused rather than silently masked.
 *
 * Lookup: DPDK's librte_acl, one trie set for IPv6 and one for everything
 * else, built once into an immutable struct shp_match_table that the data
 * path reads without locks: publish a new one by RCU and free the old after
 * a grace period. Parsing needs no EAL; building a table does (rte_malloc).
 * Building is the slow part, on the control thread: 4096 `dst_ip R/24`
 * classes took 90 ms, 3000 random rules mixing every word 3 to 4 s
 * (bench_class_match, test_class_match on a busy 2-CPU machine); wildcards
 * and many distinct port ranges are what grows the tries.
 */
#ifndef SHP_CLASS_MATCH_H
#define SHP_CLASS_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "shp_pkthdr.h"
#include "shp_units.h"

#define SHP_MATCH_NONE      UINT16_MAX   /* no class matched */
#define SHP_MATCH_MAX_CLASSES 65534
#define SHP_MATCH_NAME_LEN  32           /* with the NUL */
#define SHP_MATCH_TEXT_LEN  512          /* one rule's text, with the NUL */
#define SHP_MATCH_MAX_TAGS  4

/* Words of a rule (struct shp_match_rule.have) */
#define SHP_MW_SRC_IP    0x01
#define SHP_MW_DST_IP    0x02
#define SHP_MW_IP_PROTO  0x04
#define SHP_MW_SRC_PORT  0x08
#define SHP_MW_DST_PORT  0x10
#define SHP_MW_VLAN_ID   0x20
#define SHP_MW_IP_TOS    0x40
#define SHP_MW_ETH_TYPE  0x80    /* a non-IP ethertype (see family) */
/* the words that need an IP header */
#define SHP_MW_IP (SHP_MW_SRC_IP | SHP_MW_DST_IP | SHP_MW_IP_PROTO | \
		   SHP_MW_SRC_PORT | SHP_MW_DST_PORT | SHP_MW_IP_TOS)

/*
 * One parsed rule, in a canonical form: two texts meaning the same words
 * (ip_proto 6 / tcp, eth_type ipv4 src_ip A / src_ip A) give equal rules
 * (shp_match_rule_cmp). Addresses in network byte order, the rest host.
 */
struct shp_match_rule {
	uint8_t have;          /* SHP_MW_* */
	uint8_t family;        /* 0 (any), 4 or 6: ethertype 0x0800 / 0x86dd */
	uint8_t src_len, dst_len;
	uint8_t src[16], dst[16];   /* IPv4 in the first 4 bytes */
	uint8_t proto;
	uint8_t tos, tos_mask;
	uint16_t sport_lo, sport_hi, dport_lo, dport_hi;
	uint16_t vlan_id;
	uint16_t eth_type;     /* with SHP_MW_ETH_TYPE: never IPv4/IPv6's */
};

/*
 * A packet's key: what the rules look at, laid out for rte_acl: network
 * byte order, 4-byte groups at 4-byte offsets, and proto, the one-byte
 * field rte_acl reads first, last (so that it is read as one byte).
 * Fields whose flag is clear are 0.
 */
#define SHP_KEY_VLAN  0x01   /* tagged: vlan holds the outer VID */
#define SHP_KEY_IP    0x02   /* a whole IP header: proto, tos, addresses */
#define SHP_KEY_PORTS 0x04   /* TCP/UDP/SCTP ports read (not a later
				fragment, not truncated) */

struct shp_match_key {
	uint8_t tos;
	uint8_t flags;         /* SHP_KEY_* */
	rte_be16_t vlan;
	rte_be16_t sport;
	rte_be16_t dport;
	rte_be16_t eth_type;   /* after the tags */
	uint16_t zero;         /* always 0: completes an rte_acl group */
	rte_be32_t src[4];     /* IPv4: src[0] */
	rte_be32_t dst[4];
	uint8_t proto;
	uint8_t pad[3];
};

/* ---- parsing (no EAL needed) ---- */

/*
 * Parse one rule's text. who prefixes errors ("class web"); err gets one
 * line naming the word at fault. Returns 0 or -1.
 */
int shp_match_parse(const char *text, const char *who,
		    struct shp_match_rule *r, char *err);

/* Text that parses back to an equal rule; returns its length (as
 * snprintf: >= len means truncated). */
int shp_match_format(const struct shp_match_rule *r, char *buf, size_t len);

/* 0 if a and b are the same rule; an order otherwise. */
int shp_match_rule_cmp(const struct shp_match_rule *a,
		       const struct shp_match_rule *b);

/* The reference semantics: does r match k? (A linear scan over the rules
 * with this is what the ACL must agree with.) */
bool shp_match_rule_hits(const struct shp_match_rule *r,
			 const struct shp_match_key *k);

/* ---- a set of classes, built up on the control thread ---- */

struct shp_match_set;

struct shp_match_set *shp_match_set_new(void);
void shp_match_set_free(struct shp_match_set *s);

/*
 * Add the rule `text` to class `name` ([A-Za-z0-9_], 1..31 characters;
 * the class is created, last in the order, when first named). Refused, nothing changed: a bad name or rule,
 * an empty text, a rule that another class (or this one) already has.
 */
int shp_match_set_add(struct shp_match_set *s, const char *name,
		      const char *text, char *err);

uint32_t shp_match_set_classes(const struct shp_match_set *s);
uint32_t shp_match_set_rules(const struct shp_match_set *s);
/* Class index of name (its place in the order), or -1. */
int shp_match_set_find(const struct shp_match_set *s, const char *name);
const char *shp_match_set_name(const struct shp_match_set *s, uint32_t cls);
/* Rule i (0..shp_match_set_rules) and its class, in the order added. */
const struct shp_match_rule *shp_match_set_rule(const struct shp_match_set *s,
						uint32_t i, uint32_t *cls);

/* ---- the lookup table (EAL needed) ---- */

struct shp_match_table;

/* Build from s (which may be freed after). NULL with err set on failure. */
struct shp_match_table *shp_match_table_create(const struct shp_match_set *s,
					       int socket_id, char *err);
void shp_match_table_free(struct shp_match_table *t);
uint32_t shp_match_table_classes(const struct shp_match_table *t);

/* Class of each key (SHP_MATCH_NONE: none). Any n. */
void shp_match_lookup_keys(const struct shp_match_table *t,
			   const struct shp_match_key *keys, uint32_t n,
			   uint16_t *cls);

/* Class of each packet. Any n. Safe on any frame. */
void shp_match_lookup_burst(const struct shp_match_table *t,
			    struct rte_mbuf *const *pkts, uint32_t n,
			    uint16_t *cls);

/* ---- key extraction ---- */

static inline int
shp_match_is_vlan(uint16_t et)
{
	return shp_pkthdr_is_tpid(et);
}

static inline int
shp_match_has_ports(uint8_t proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP ||
	       proto == IPPROTO_SCTP;
}

/*
 * The key of a frame, from the shared header walker (lib/pkt/shp_pkthdr.h:
 * the tags, IPv6 extension headers and segment layouts classify and the
 * stages see too). Truncated or malformed headers leave what they would
 * have given unset (their flag clear), so only rules that do not look at
 * them can match.
 */
static inline void
shp_match_key_extract(const struct rte_mbuf *m, struct shp_match_key *k)
{
	struct shp_pkthdr h;

	memset(k, 0, sizeof(*k));
	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L4);
	if (h.nb_tags != 0) {
		k->vlan = rte_cpu_to_be_16(h.vlan_id);
		k->flags |= SHP_KEY_VLAN;
	}
	if (!(h.flags & SHP_PKTHDR_F_ETH))
		return;
	k->eth_type = rte_cpu_to_be_16(h.eth_type);
	if (h.l3_type == 0)
		return;
	k->tos = h.tos;
	/* IPv4: src[0], the rest zero, as the walker gives it */
	memcpy(k->src, &h.src, sizeof(k->src));
	memcpy(k->dst, &h.dst, sizeof(k->dst));
	/* IPv6 extension headers cut short: the one the walk stopped at */
	k->proto = h.ip_proto;
	k->flags |= SHP_KEY_IP;
	if ((h.flags & SHP_PKTHDR_F_PORTS) && shp_match_has_ports(h.ip_proto)) {
		k->sport = rte_cpu_to_be_16(h.sport);
		k->dport = rte_cpu_to_be_16(h.dport);
		k->flags |= SHP_KEY_PORTS;
	}
}

#endif
