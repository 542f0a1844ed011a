/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The class match grammar (tc flower's words), its canonical form and
 * text, and the class set a table is built from. The lookup itself is in
 * class_match_acl.c.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bsd/sys/tree.h>

#include "class_match.h"
#include "shp_tcargs.h"

#define MAX_WORDS 32

/* The words, in the order a rule is printed. */
enum {
	W_SRC_IP, W_DST_IP, W_ETH_TYPE, W_VLAN_ID, W_IP_PROTO, W_IP_TOS,
	W_SRC_PORT, W_DST_PORT, W_NUM
};

struct mparse {
	struct shp_tcargs a;
	struct shp_match_rule *r;
	const char *fam_by;     /* the word that fixed the IP version */
};

#define WORD_LIST "src_ip, dst_ip, ip_proto, src_port, dst_port, vlan_id, " \
	"ip_tos, eth_type"

/* The rule is for IP version fam because of word `by`. */
static int
set_family(struct mparse *m, int fam, const char *by)
{
	if (m->r->family != 0 && m->r->family != fam)
		return shp_tc_fail(&m->a, "%s: IPv%d, but %s made the rule "
				   "IPv%d", by, fam, m->fam_by,
				   m->r->family);
	if (m->r->family == 0) {
		m->r->family = (uint8_t)fam;
		m->fam_by = by;
	}
	return 0;
}

/* "A[/LEN]" */
static int
get_prefix(struct mparse *m, const char *kw, uint8_t *addr, uint8_t *plen)
{
	const char *w = shp_tc_cur(&m->a);
	char buf[INET6_ADDRSTRLEN + 8], shown[INET6_ADDRSTRLEN];
	uint8_t masked[16];
	char *slash, *end;
	unsigned long len;
	int fam, max, i;

	if (strlen(w) >= sizeof(buf))
		return shp_tc_fail(&m->a, "%s: '%s' is not an address[/LEN]",
				   kw, w);
	strcpy(buf, w);
	slash = strchr(buf, '/');
	if (slash != NULL)
		*slash = '\0';
	fam = strchr(buf, ':') != NULL ? 6 : 4;
	max = fam == 4 ? 32 : 128;
	if (inet_pton(fam == 4 ? AF_INET : AF_INET6, buf, addr) != 1)
		return shp_tc_fail(&m->a, "%s: '%s' is not an IPv4 or IPv6 "
				   "address[/LEN]", kw, w);
	len = (unsigned long)max;
	if (slash != NULL) {
		const char *s = slash + 1;

		errno = 0;
		len = strtoul(s, &end, 10);
		if (!isdigit((unsigned char)s[0]) || *end != '\0' ||
		    errno != 0 || len > (unsigned long)max)
			return shp_tc_fail(&m->a, "%s: '%s': the prefix length "
					   "must be 0..%d for an IPv%d address",
					   kw, w, max, fam);
	}
	memcpy(masked, addr, 16);
	for (i = 0; i < max / 8; i++) {
		int keep = (int)len - 8 * i;

		if (keep <= 0)
			masked[i] = 0;
		else if (keep < 8)
			masked[i] &= (uint8_t)(0xff << (8 - keep));
	}
	if (memcmp(masked, addr, max / 8) != 0) {
		inet_ntop(fam == 4 ? AF_INET : AF_INET6, masked, shown,
			  sizeof(shown));
		return shp_tc_fail(&m->a, "%s: '%s' has bits set beyond the "
				   "first %lu (%s/%lu?)", kw, w, len, shown,
				   len);
	}
	*plen = (uint8_t)len;
	return set_family(m, fam, kw);
}

/* An integer 0..max, decimal or 0x hex, the whole of s. */
static int
get_num(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	*v = strtoul(s, &end, 0);
	return *end != '\0' || errno != 0 || *v > max ? -1 : 0;
}

/* "N[-M]" */
static int
get_ports(struct mparse *m, const char *kw, uint16_t *lo, uint16_t *hi)
{
	const char *w = shp_tc_cur(&m->a);
	char buf[16], *dash;
	unsigned long a, b;

	if (strlen(w) >= sizeof(buf))
		goto bad;
	strcpy(buf, w);
	dash = strchr(buf, '-');
	if (dash != NULL)
		*dash = '\0';
	if (get_num(buf, UINT16_MAX, &a) < 0)
		goto bad;
	b = a;
	if (dash != NULL && get_num(dash + 1, UINT16_MAX, &b) < 0)
		goto bad;
	if (b < a)
		return shp_tc_fail(&m->a, "%s: the range '%s' is upside down "
				   "(%lu-%lu?)", kw, w, b, a);
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	return 0;
bad:
	return shp_tc_fail(&m->a, "%s: '%s' must be a port 0..65535 or a "
			   "range N-M", kw, w);
}

static int
w_src_ip(struct mparse *m, const char *kw)
{
	m->r->have |= SHP_MW_SRC_IP;
	return get_prefix(m, kw, m->r->src, &m->r->src_len);
}

static int
w_dst_ip(struct mparse *m, const char *kw)
{
	m->r->have |= SHP_MW_DST_IP;
	return get_prefix(m, kw, m->r->dst, &m->r->dst_len);
}

static int
w_ip_proto(struct mparse *m, const char *kw)
{
	const char *w = shp_tc_cur(&m->a);
	unsigned long v;

	m->r->have |= SHP_MW_IP_PROTO;
	if (strcmp(w, "tcp") == 0) {
		m->r->proto = IPPROTO_TCP;
	} else if (strcmp(w, "udp") == 0) {
		m->r->proto = IPPROTO_UDP;
	} else if (strcmp(w, "sctp") == 0) {
		m->r->proto = IPPROTO_SCTP;
	} else if (strcmp(w, "icmp") == 0) {
		m->r->proto = IPPROTO_ICMP;
		return set_family(m, 4, "ip_proto icmp");
	} else if (strcmp(w, "icmpv6") == 0) {
		m->r->proto = IPPROTO_ICMPV6;
		return set_family(m, 6, "ip_proto icmpv6");
	} else if (get_num(w, UINT8_MAX, &v) == 0) {
		m->r->proto = (uint8_t)v;
	} else {
		return shp_tc_fail(&m->a, "%s: '%s': use tcp, udp, sctp, icmp, "
				   "icmpv6 or a number 0..255", kw, w);
	}
	return 0;
}

static int
w_src_port(struct mparse *m, const char *kw)
{
	m->r->have |= SHP_MW_SRC_PORT;
	return get_ports(m, kw, &m->r->sport_lo, &m->r->sport_hi);
}

static int
w_dst_port(struct mparse *m, const char *kw)
{
	m->r->have |= SHP_MW_DST_PORT;
	return get_ports(m, kw, &m->r->dport_lo, &m->r->dport_hi);
}

static int
w_vlan_id(struct mparse *m, const char *kw)
{
	unsigned long v;

	if (get_num(shp_tc_cur(&m->a), 4095, &v) < 0)
		return shp_tc_fail(&m->a, "%s: '%s' must be a VLAN id 0..4095",
				   kw, shp_tc_cur(&m->a));
	m->r->have |= SHP_MW_VLAN_ID;
	m->r->vlan_id = (uint16_t)v;
	return 0;
}

/* "X[/MASK]" */
static int
w_ip_tos(struct mparse *m, const char *kw)
{
	const char *w = shp_tc_cur(&m->a);
	char buf[16], *slash;
	unsigned long v, mask = 0xff;

	if (strlen(w) >= sizeof(buf))
		goto bad;
	strcpy(buf, w);
	slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		if (get_num(slash + 1, 0xff, &mask) < 0)
			goto bad;
	}
	if (get_num(buf, 0xff, &v) < 0)
		goto bad;
	if (v & ~mask)
		return shp_tc_fail(&m->a, "%s: '%s' has bits set outside the "
				   "mask (0x%02lx/0x%02lx?)", kw, w, v & mask,
				   mask);
	m->r->have |= SHP_MW_IP_TOS;
	m->r->tos = (uint8_t)v;
	m->r->tos_mask = (uint8_t)mask;
	return 0;
bad:
	return shp_tc_fail(&m->a, "%s: '%s' must be a byte X or X/MASK "
			   "(0..255, 0x hex)", kw, w);
}

static int
w_eth_type(struct mparse *m, const char *kw)
{
	const char *w = shp_tc_cur(&m->a);
	unsigned long v;

	if (strcmp(w, "ipv4") == 0)
		v = RTE_ETHER_TYPE_IPV4;
	else if (strcmp(w, "ipv6") == 0)
		v = RTE_ETHER_TYPE_IPV6;
	else if (strcmp(w, "arp") == 0)
		v = RTE_ETHER_TYPE_ARP;
	else if (get_num(w, UINT16_MAX, &v) < 0)
		return shp_tc_fail(&m->a, "%s: '%s': use ipv4, ipv6, arp or "
				   "0xNNNN", kw, w);
	if (shp_match_is_vlan((uint16_t)v))
		return shp_tc_fail(&m->a, "%s: '%s' is a VLAN tag, which "
				   "matching looks through: use vlan_id", kw,
				   w);
	if (v == RTE_ETHER_TYPE_IPV4)
		return set_family(m, 4, kw);
	if (v == RTE_ETHER_TYPE_IPV6)
		return set_family(m, 6, kw);
	m->r->have |= SHP_MW_ETH_TYPE;
	m->r->eth_type = (uint16_t)v;
	return 0;
}

static const struct {
	const char *name;
	const char *what;     /* the value it needs */
	int (*fn)(struct mparse *m, const char *kw);
} words[W_NUM] = {
	[W_SRC_IP] = {"src_ip", "an address[/LEN]", w_src_ip},
	[W_DST_IP] = {"dst_ip", "an address[/LEN]", w_dst_ip},
	[W_ETH_TYPE] = {"eth_type", "ipv4, ipv6, arp or 0xNNNN", w_eth_type},
	[W_VLAN_ID] = {"vlan_id", "a VLAN id", w_vlan_id},
	[W_IP_PROTO] = {"ip_proto", "a protocol", w_ip_proto},
	[W_IP_TOS] = {"ip_tos", "X[/MASK]", w_ip_tos},
	[W_SRC_PORT] = {"src_port", "a port or N-M", w_src_port},
	[W_DST_PORT] = {"dst_port", "a port or N-M", w_dst_port},
};

/* The first word among the SHP_MW_* bits in have, for messages. */
static const char *
word_of(uint8_t have)
{
	static const uint8_t bit[W_NUM] = {
		[W_SRC_IP] = SHP_MW_SRC_IP, [W_DST_IP] = SHP_MW_DST_IP,
		[W_ETH_TYPE] = SHP_MW_ETH_TYPE, [W_VLAN_ID] = SHP_MW_VLAN_ID,
		[W_IP_PROTO] = SHP_MW_IP_PROTO, [W_IP_TOS] = SHP_MW_IP_TOS,
		[W_SRC_PORT] = SHP_MW_SRC_PORT, [W_DST_PORT] = SHP_MW_DST_PORT,
	};
	int w;

	for (w = 0; w < W_NUM; w++)
		if (have & bit[w])
			return words[w].name;
	return "?";
}

/* What no single word can see. */
static int
check_rule(struct mparse *m)
{
	struct shp_match_rule *r = m->r;
	uint8_t ports = r->have & (SHP_MW_SRC_PORT | SHP_MW_DST_PORT);

	if ((r->have & SHP_MW_ETH_TYPE) && (r->have & SHP_MW_IP))
		return shp_tc_fail(&m->a, "eth_type 0x%04x: the frame has no "
				   "IP header for %s", r->eth_type,
				   word_of(r->have & SHP_MW_IP));
	if (ports && (r->have & SHP_MW_IP_PROTO) &&
	    !shp_match_has_ports(r->proto))
		return shp_tc_fail(&m->a, "%s: ip_proto %u has no ports (use "
				   "tcp, udp or sctp)", word_of(ports),
				   r->proto);
	return 0;
}

int
shp_match_parse(const char *text, const char *who, struct shp_match_rule *r,
		char *err)
{
	char buf[SHP_MATCH_TEXT_LEN];
	char *argv[MAX_WORDS];
	struct mparse m = {
		.a = {.qdisc = who, .err = err},
		.r = r,
	};
	unsigned int seen = 0;
	int w;

	memset(r, 0, sizeof(*r));
	if (shp_tc_split(&m.a, text, buf, sizeof(buf), argv, MAX_WORDS) < 0)
		return -1;
	if (m.a.argc == 0)
		return shp_tc_fail(&m.a, "empty match: give at least one of "
				   WORD_LIST);
	for (m.a.i = 0; m.a.i < m.a.argc; m.a.i++) {
		const char *kw = shp_tc_cur(&m.a);

		for (w = 0; w < W_NUM; w++)
			if (strcmp(kw, words[w].name) == 0)
				break;
		if (w == W_NUM)
			return shp_tc_fail(&m.a, "'%s': unknown match word (use "
					   WORD_LIST ")", kw);
		if (seen & (1u << w))
			return shp_tc_fail(&m.a, "%s: given twice in one rule",
					   kw);
		seen |= 1u << w;
		if (shp_tc_next(&m.a, words[w].what) < 0 ||
		    words[w].fn(&m, words[w].name) < 0)
			return -1;
	}
	return check_rule(&m);
}

/* ---- text ---- */

struct out {
	char *buf;
	size_t len;
	int n;
};

static void __attribute__((format(printf, 2, 3)))
out(struct out *o, const char *fmt, ...)
{
	size_t at = (size_t)o->n < o->len ? (size_t)o->n : o->len;
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(o->buf + at, o->len - at, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->n += k;
}

static void
out_prefix(struct out *o, const char *kw, int fam, const uint8_t *a,
	   uint8_t len)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(fam == 4 ? AF_INET : AF_INET6, a, s, sizeof(s));
	out(o, "%s%s %s", o->n ? " " : "", kw, s);
	if (len != (fam == 4 ? 32 : 128))
		out(o, "/%u", len);
}

static void
out_ports(struct out *o, const char *kw, uint16_t lo, uint16_t hi)
{
	out(o, "%s%s %u", o->n ? " " : "", kw, lo);
	if (hi != lo)
		out(o, "-%u", hi);
}

/* ip_proto icmp / icmpv6: the name also gives the IP version. */
static int
proto_named_family(const struct shp_match_rule *r)
{
	if (!(r->have & SHP_MW_IP_PROTO))
		return 0;
	if (r->proto == IPPROTO_ICMP && r->family == 4)
		return 4;
	if (r->proto == IPPROTO_ICMPV6 && r->family == 6)
		return 6;
	return 0;
}

int
shp_match_format(const struct shp_match_rule *r, char *buf, size_t len)
{
	struct out o = {.buf = buf, .len = len, .n = 0};

	if (len > 0)
		buf[0] = '\0';
	if (r->have & SHP_MW_SRC_IP)
		out_prefix(&o, "src_ip", r->family, r->src, r->src_len);
	if (r->have & SHP_MW_DST_IP)
		out_prefix(&o, "dst_ip", r->family, r->dst, r->dst_len);
	if (r->have & SHP_MW_ETH_TYPE) {
		if (r->eth_type == RTE_ETHER_TYPE_ARP)
			out(&o, "%seth_type arp", o.n ? " " : "");
		else
			out(&o, "%seth_type 0x%04x", o.n ? " " : "",
			    r->eth_type);
	} else if (r->family != 0 &&
		   !(r->have & (SHP_MW_SRC_IP | SHP_MW_DST_IP)) &&
		   proto_named_family(r) == 0) {
		out(&o, "%seth_type ipv%u", o.n ? " " : "", r->family);
	}
	if (r->have & SHP_MW_VLAN_ID)
		out(&o, "%svlan_id %u", o.n ? " " : "", r->vlan_id);
	if (r->have & SHP_MW_IP_PROTO) {
		const char *name = NULL;

		switch (r->proto) {
		case IPPROTO_TCP: name = "tcp"; break;
		case IPPROTO_UDP: name = "udp"; break;
		case IPPROTO_SCTP: name = "sctp"; break;
		case IPPROTO_ICMP:
			name = r->family == 4 ? "icmp" : NULL;
			break;
		case IPPROTO_ICMPV6:
			name = r->family == 6 ? "icmpv6" : NULL;
			break;
		}
		if (name != NULL)
			out(&o, "%sip_proto %s", o.n ? " " : "", name);
		else
			out(&o, "%sip_proto %u", o.n ? " " : "", r->proto);
	}
	if (r->have & SHP_MW_IP_TOS) {
		out(&o, "%sip_tos 0x%02x", o.n ? " " : "", r->tos);
		if (r->tos_mask != 0xff)
			out(&o, "/0x%02x", r->tos_mask);
	}
	if (r->have & SHP_MW_SRC_PORT)
		out_ports(&o, "src_port", r->sport_lo, r->sport_hi);
	if (r->have & SHP_MW_DST_PORT)
		out_ports(&o, "dst_port", r->dport_lo, r->dport_hi);
	return o.n;
}

#define CMP(f) do { if (a->f != b->f) return a->f < b->f ? -1 : 1; } \
	while (0)

int
shp_match_rule_cmp(const struct shp_match_rule *a,
		   const struct shp_match_rule *b)
{
	int c;

	CMP(have);
	CMP(family);
	if (a->have & SHP_MW_SRC_IP) {
		CMP(src_len);
		if ((c = memcmp(a->src, b->src, sizeof(a->src))) != 0)
			return c;
	}
	if (a->have & SHP_MW_DST_IP) {
		CMP(dst_len);
		if ((c = memcmp(a->dst, b->dst, sizeof(a->dst))) != 0)
			return c;
	}
	if (a->have & SHP_MW_IP_PROTO)
		CMP(proto);
	if (a->have & SHP_MW_IP_TOS) {
		CMP(tos);
		CMP(tos_mask);
	}
	if (a->have & SHP_MW_SRC_PORT) {
		CMP(sport_lo);
		CMP(sport_hi);
	}
	if (a->have & SHP_MW_DST_PORT) {
		CMP(dport_lo);
		CMP(dport_hi);
	}
	if (a->have & SHP_MW_VLAN_ID)
		CMP(vlan_id);
	if (a->have & SHP_MW_ETH_TYPE)
		CMP(eth_type);
	return 0;
}

/* The first len bits of a and b are equal. */
static bool
prefix_eq(const uint8_t *a, const uint8_t *b, unsigned int len)
{
	unsigned int full = len / 8, rest = len % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	return rest == 0 ||
	       ((a[full] ^ b[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

bool
shp_match_rule_hits(const struct shp_match_rule *r,
		    const struct shp_match_key *k)
{
	uint16_t et = rte_be_to_cpu_16(k->eth_type);
	uint16_t sport = rte_be_to_cpu_16(k->sport);
	uint16_t dport = rte_be_to_cpu_16(k->dport);

	if ((r->have & SHP_MW_ETH_TYPE) && et != r->eth_type)
		return false;
	if (r->family == 4 && et != RTE_ETHER_TYPE_IPV4)
		return false;
	if (r->family == 6 && et != RTE_ETHER_TYPE_IPV6)
		return false;
	if (r->have & SHP_MW_IP) {
		if (!(k->flags & SHP_KEY_IP) ||
		    (et != RTE_ETHER_TYPE_IPV4 && et != RTE_ETHER_TYPE_IPV6))
			return false;
	}
	if ((r->have & SHP_MW_SRC_IP) &&
	    !prefix_eq(r->src, (const uint8_t *)k->src, r->src_len))
		return false;
	if ((r->have & SHP_MW_DST_IP) &&
	    !prefix_eq(r->dst, (const uint8_t *)k->dst, r->dst_len))
		return false;
	if ((r->have & SHP_MW_IP_PROTO) && k->proto != r->proto)
		return false;
	if ((r->have & SHP_MW_IP_TOS) && (k->tos & r->tos_mask) != r->tos)
		return false;
	if ((r->have & (SHP_MW_SRC_PORT | SHP_MW_DST_PORT)) &&
	    !(k->flags & SHP_KEY_PORTS))
		return false;
	if ((r->have & SHP_MW_SRC_PORT) &&
	    (sport < r->sport_lo || sport > r->sport_hi))
		return false;
	if ((r->have & SHP_MW_DST_PORT) &&
	    (dport < r->dport_lo || dport > r->dport_hi))
		return false;
	if ((r->have & SHP_MW_VLAN_ID) &&
	    (!(k->flags & SHP_KEY_VLAN) ||
	     (rte_be_to_cpu_16(k->vlan) & 0x0fff) != r->vlan_id))
		return false;
	return true;
}

/* ---- the class set ---- */

struct mset_rule {
	RB_ENTRY(mset_rule) rb;
	struct shp_match_rule r;
	uint32_t cls;
};

struct mset_class {
	RB_ENTRY(mset_class) rb;
	char name[SHP_MATCH_NAME_LEN];
	uint32_t idx;
};

static int
mset_rule_cmp(struct mset_rule *a, struct mset_rule *b)
{
	return shp_match_rule_cmp(&a->r, &b->r);
}

static int
mset_class_cmp(struct mset_class *a, struct mset_class *b)
{
	return strcmp(a->name, b->name);
}

RB_HEAD(mset_rules, mset_rule);
RB_HEAD(mset_classes, mset_class);
/* libbsd's RB_GENERATE_STATIC wants BSD's __unused */
#define MSET_STATIC static __attribute__((unused))
RB_GENERATE_INTERNAL(mset_rules, mset_rule, rb, mset_rule_cmp, MSET_STATIC)
RB_GENERATE_INTERNAL(mset_classes, mset_class, rb, mset_class_cmp,
		     MSET_STATIC)

struct shp_match_set {
	struct mset_class **classes;     /* in order */
	uint32_t nb_classes, cap_classes;
	struct mset_rule **rules;        /* in the order added */
	uint32_t nb_rules, cap_rules;
	struct mset_rules by_rule;
	struct mset_classes by_name;
};

struct shp_match_set *
shp_match_set_new(void)
{
	struct shp_match_set *s = calloc(1, sizeof(*s));

	if (s != NULL) {
		RB_INIT(&s->by_rule);
		RB_INIT(&s->by_name);
	}
	return s;
}

void
shp_match_set_free(struct shp_match_set *s)
{
	uint32_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nb_rules; i++)
		free(s->rules[i]);
	for (i = 0; i < s->nb_classes; i++)
		free(s->classes[i]);
	free(s->rules);
	free(s->classes);
	free(s);
}

/* Room for one more pointer in *v. */
static int
grow(void *v, uint32_t n, uint32_t *cap)
{
	void ***p = v;
	uint32_t c = *cap ? *cap * 2 : 16;
	void **q;

	if (n < *cap)
		return 0;
	q = realloc(*p, c * sizeof(*q));
	if (q == NULL)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

/* A class name is a telemetry dict key and a stats file key
 * (ports.N.classes.NAME): DPDK telemetry takes [A-Za-z0-9_] there. */
static int
name_ok(const char *name)
{
	size_t i, n = strlen(name);

	if (n == 0 || n >= SHP_MATCH_NAME_LEN)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return 0;
	return 1;
}

int
shp_match_set_add(struct shp_match_set *s, const char *name,
		  const char *text, char *err)
{
	char who[SHP_MATCH_NAME_LEN + 8];
	struct mset_class key, *c;
	struct mset_rule *r, *dup;

	if (!name_ok(name)) {
		snprintf(err, SHP_ERR_LEN, "class '%s': a name is 1..%d "
			 "letters, digits or '_'", name,
			 SHP_MATCH_NAME_LEN - 1);
		return -1;
	}
	snprintf(who, sizeof(who), "class %s", name);
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		snprintf(err, SHP_ERR_LEN, "%s: out of memory", who);
		return -1;
	}
	if (shp_match_parse(text, who, &r->r, err) < 0)
		goto fail;
	dup = RB_FIND(mset_rules, &s->by_rule, r);
	if (dup != NULL) {
		char t[SHP_MATCH_TEXT_LEN];

		shp_match_format(&r->r, t, sizeof(t));
		snprintf(err, SHP_ERR_LEN, "%s: '%s' is already a rule of "
			 "class %s%s", who, t,
			 s->classes[dup->cls]->name,
			 strcmp(s->classes[dup->cls]->name, name) == 0 ?
			 " (given twice)" : "");
		goto fail;
	}
	snprintf(key.name, sizeof(key.name), "%s", name);
	c = RB_FIND(mset_classes, &s->by_name, &key);
	if (c == NULL) {
		if (s->nb_classes == SHP_MATCH_MAX_CLASSES) {
			snprintf(err, SHP_ERR_LEN, "%s: more than %d classes",
				 who, SHP_MATCH_MAX_CLASSES);
			goto fail;
		}
		c = calloc(1, sizeof(*c));
		if (c == NULL || grow(&s->classes, s->nb_classes,
				      &s->cap_classes) < 0) {
			free(c);
			snprintf(err, SHP_ERR_LEN, "%s: out of memory", who);
			goto fail;
		}
		snprintf(c->name, sizeof(c->name), "%s", name);
		c->idx = s->nb_classes;
	}
	if (grow(&s->rules, s->nb_rules, &s->cap_rules) < 0) {
		if (c->idx == s->nb_classes)
			free(c);
		snprintf(err, SHP_ERR_LEN, "%s: out of memory", who);
		goto fail;
	}
	if (c->idx == s->nb_classes) {
		s->classes[s->nb_classes++] = c;
		RB_INSERT(mset_classes, &s->by_name, c);
	}
	r->cls = c->idx;
	s->rules[s->nb_rules++] = r;
	RB_INSERT(mset_rules, &s->by_rule, r);
	return 0;
fail:
	free(r);
	return -1;
}

uint32_t
shp_match_set_classes(const struct shp_match_set *s)
{
	return s->nb_classes;
}

uint32_t
shp_match_set_rules(const struct shp_match_set *s)
{
	return s->nb_rules;
}

int
shp_match_set_find(const struct shp_match_set *s, const char *name)
{
	struct mset_class key, *c;

	if (strlen(name) >= sizeof(key.name))
		return -1;
	strcpy(key.name, name);
	c = RB_FIND(mset_classes, (struct mset_classes *)&s->by_name, &key);
	return c != NULL ? (int)c->idx : -1;
}

const char *
shp_match_set_name(const struct shp_match_set *s, uint32_t cls)
{
	return cls < s->nb_classes ? s->classes[cls]->name : NULL;
}

const struct shp_match_rule *
shp_match_set_rule(const struct shp_match_set *s, uint32_t i, uint32_t *cls)
{
	if (i >= s->nb_rules)
		return NULL;
	if (cls != NULL)
		*cls = s->rules[i]->cls;
	return &s->rules[i]->r;
}
