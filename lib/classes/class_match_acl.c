/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Class lookup with DPDK's librte_acl: a bounded number of trie steps per
 * packet whatever the number of classes.
 *
 * Two ACL contexts, because rte_acl matches one fixed layout: IPv6
 * (addresses as 4 x 32-bit fields, ethertype implied) and everything else
 * (IPv4 and non-IP frames, with the ethertype as a field). A rule goes into
 * each context whose packets it can match. One category; a rule's priority
 * falls with its class's place, so the first class listed wins, and its
 * userdata is the class + 1 (0 is "no match").
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <rte_acl.h>
#include <rte_errno.h>

#include "class_match.h"

/* Fields; rte_acl's first field is one byte, then groups of 4 bytes. */
enum {
	F_PROTO, F_TOS, F_FLAGS, F_VLAN, F_SPORT, F_DPORT,
	F4_ETH, F4_ZERO, F4_SRC, F4_DST, NF4,
	F6_SRC = F4_ETH, F6_DST = F6_SRC + 4, NF6 = F6_DST + 4,
};

#define KOFS(f) offsetof(struct shp_match_key, f)
#define DEF(t, sz, f, in, ofs) { .type = RTE_ACL_FIELD_TYPE_##t, \
	.size = sz, .field_index = f, .input_index = in, .offset = ofs }

#define DEF_PROTO DEF(BITMASK, 1, F_PROTO, 0, KOFS(proto))
#define DEFS_TAIL(in) \
	DEF(RANGE, 2, F_SPORT, in, KOFS(sport)), \
	DEF(RANGE, 2, F_DPORT, in, KOFS(dport)), \
	DEF(BITMASK, 1, F_TOS, in + 1, KOFS(tos)), \
	DEF(BITMASK, 1, F_FLAGS, in + 1, KOFS(flags)), \
	DEF(BITMASK, 2, F_VLAN, in + 1, KOFS(vlan))

/* The addresses first: the trie is walked in this order, and it is the
 * most telling field that keeps it small (and quick to build). */
static const struct rte_acl_field_def defs4[NF4] = {
	DEF_PROTO,
	DEF(MASK, 4, F4_SRC, 1, KOFS(src)),
	DEF(MASK, 4, F4_DST, 2, KOFS(dst)),
	DEFS_TAIL(3),
	DEF(BITMASK, 2, F4_ETH, 5, KOFS(eth_type)),
	DEF(BITMASK, 2, F4_ZERO, 5, KOFS(zero)),
};

static const struct rte_acl_field_def defs6[NF6] = {
	DEF_PROTO,
	DEF(MASK, 4, F6_SRC + 0, 1, KOFS(src) + 0),
	DEF(MASK, 4, F6_SRC + 1, 2, KOFS(src) + 4),
	DEF(MASK, 4, F6_SRC + 2, 3, KOFS(src) + 8),
	DEF(MASK, 4, F6_SRC + 3, 4, KOFS(src) + 12),
	DEF(MASK, 4, F6_DST + 0, 5, KOFS(dst) + 0),
	DEF(MASK, 4, F6_DST + 1, 6, KOFS(dst) + 4),
	DEF(MASK, 4, F6_DST + 2, 7, KOFS(dst) + 8),
	DEF(MASK, 4, F6_DST + 3, 8, KOFS(dst) + 12),
	DEFS_TAIL(9),
};

RTE_ACL_RULE_DEF(acl_rule4, NF4);
RTE_ACL_RULE_DEF(acl_rule6, NF6);

struct shp_match_table {
	struct rte_acl_ctx *acl4;   /* NULL: no rule for IPv4/other frames */
	struct rte_acl_ctx *acl6;   /* NULL: no rule for IPv6 */
	uint32_t nb_classes;
};

/* Only in the context for IPv4 and other frames; only for IPv6. */
static bool
in4(const struct shp_match_rule *r)
{
	return r->family != 6;
}

static bool
in6(const struct shp_match_rule *r)
{
	return r->family != 4 && !(r->have & SHP_MW_ETH_TYPE);
}

static void
fill_common(struct rte_acl_field *f, const struct shp_match_rule *r)
{
	uint8_t need = 0;

	if (r->have & SHP_MW_IP)
		need |= SHP_KEY_IP;
	if (r->have & (SHP_MW_SRC_PORT | SHP_MW_DST_PORT))
		need |= SHP_KEY_PORTS;
	if (r->have & SHP_MW_VLAN_ID)
		need |= SHP_KEY_VLAN;
	if (r->have & SHP_MW_IP_PROTO) {
		f[F_PROTO].value.u8 = r->proto;
		f[F_PROTO].mask_range.u8 = 0xff;
	}
	if (r->have & SHP_MW_IP_TOS) {
		f[F_TOS].value.u8 = r->tos;
		f[F_TOS].mask_range.u8 = r->tos_mask;
	}
	f[F_FLAGS].value.u8 = need;
	f[F_FLAGS].mask_range.u8 = need;
	if (r->have & SHP_MW_VLAN_ID) {
		f[F_VLAN].value.u16 = r->vlan_id;
		f[F_VLAN].mask_range.u16 = 0x0fff;
	}
	f[F_SPORT].mask_range.u16 = UINT16_MAX;
	if (r->have & SHP_MW_SRC_PORT) {
		f[F_SPORT].value.u16 = r->sport_lo;
		f[F_SPORT].mask_range.u16 = r->sport_hi;
	}
	f[F_DPORT].mask_range.u16 = UINT16_MAX;
	if (r->have & SHP_MW_DST_PORT) {
		f[F_DPORT].value.u16 = r->dport_lo;
		f[F_DPORT].mask_range.u16 = r->dport_hi;
	}
}

/* Bits of a /len prefix that fall in 32-bit word w. */
static uint32_t
word_len(uint8_t len, int w)
{
	int l = (int)len - 32 * w;

	return l <= 0 ? 0 : l >= 32 ? 32 : (uint32_t)l;
}

static uint32_t
host32(const uint8_t *a)
{
	return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 |
	       (uint32_t)a[2] << 8 | a[3];
}

static void
fill_data(struct rte_acl_rule_data *d, uint32_t cls)
{
	d->category_mask = 1;
	d->priority = RTE_ACL_MAX_PRIORITY - (int32_t)cls;
	d->userdata = cls + 1;
}

static void
rule4(struct acl_rule4 *a, const struct shp_match_rule *r, uint32_t cls)
{
	memset(a, 0, sizeof(*a));
	fill_data(&a->data, cls);
	fill_common(a->field, r);
	if (r->have & SHP_MW_ETH_TYPE) {
		a->field[F4_ETH].value.u16 = r->eth_type;
		a->field[F4_ETH].mask_range.u16 = UINT16_MAX;
	} else if (r->family == 4 || (r->have & SHP_MW_IP)) {
		a->field[F4_ETH].value.u16 = RTE_ETHER_TYPE_IPV4;
		a->field[F4_ETH].mask_range.u16 = UINT16_MAX;
	}
	if (r->have & SHP_MW_SRC_IP) {
		a->field[F4_SRC].value.u32 = host32(r->src);
		a->field[F4_SRC].mask_range.u32 = r->src_len;
	}
	if (r->have & SHP_MW_DST_IP) {
		a->field[F4_DST].value.u32 = host32(r->dst);
		a->field[F4_DST].mask_range.u32 = r->dst_len;
	}
}

static void
rule6(struct acl_rule6 *a, const struct shp_match_rule *r, uint32_t cls)
{
	int w;

	memset(a, 0, sizeof(*a));
	fill_data(&a->data, cls);
	fill_common(a->field, r);
	for (w = 0; w < 4; w++) {
		if (r->have & SHP_MW_SRC_IP) {
			a->field[F6_SRC + w].value.u32 = host32(r->src + 4 * w);
			a->field[F6_SRC + w].mask_range.u32 =
				word_len(r->src_len, w);
		}
		if (r->have & SHP_MW_DST_IP) {
			a->field[F6_DST + w].value.u32 = host32(r->dst + 4 * w);
			a->field[F6_DST + w].mask_range.u32 =
				word_len(r->dst_len, w);
		}
	}
}

/* Context names are global in DPDK: each table gets its own. */
static uint32_t acl_seq;

/* A context of n rules of `fam` (4: IPv4 and others, 6) from s. */
static struct rte_acl_ctx *
build_ctx(const struct shp_match_set *s, int fam, uint32_t n, int socket_id,
	  char *err)
{
	char name[RTE_ACL_NAMESIZE];
	struct rte_acl_param prm = {
		.name = name,
		.socket_id = socket_id,
		.rule_size = fam == 4 ? RTE_ACL_RULE_SZ(NF4) :
					RTE_ACL_RULE_SZ(NF6),
		.max_rule_num = n,
	};
	struct rte_acl_config cfg = {.num_categories = 1, .max_size = SIZE_MAX};
	struct rte_acl_ctx *ctx;
	uint32_t i, cls, nr = shp_match_set_rules(s);
	int rc = 0;

	snprintf(name, sizeof(name), "shp_match%d_%u", fam,
		 __atomic_fetch_add(&acl_seq, 1, __ATOMIC_RELAXED));
	ctx = rte_acl_create(&prm);
	if (ctx == NULL) {
		snprintf(err, SHP_ERR_LEN, "classes: rte_acl_create: %s",
			 rte_strerror(rte_errno));
		return NULL;
	}
	for (i = 0; i < nr && rc == 0; i++) {
		const struct shp_match_rule *r = shp_match_set_rule(s, i, &cls);

		if (fam == 4 && in4(r)) {
			struct acl_rule4 a;

			rule4(&a, r, cls);
			rc = rte_acl_add_rules(ctx, (struct rte_acl_rule *)&a,
					       1);
		} else if (fam == 6 && in6(r)) {
			struct acl_rule6 a;

			rule6(&a, r, cls);
			rc = rte_acl_add_rules(ctx, (struct rte_acl_rule *)&a,
					       1);
		}
	}
	if (rc == 0) {
		cfg.num_fields = fam == 4 ? NF4 : NF6;
		memcpy(cfg.defs, fam == 4 ? defs4 : defs6,
		       cfg.num_fields * sizeof(cfg.defs[0]));
		rc = rte_acl_build(ctx, &cfg);
	}
	if (rc != 0) {
		snprintf(err, SHP_ERR_LEN, "classes: building the IPv%s "
			 "lookup (%u rules): %s", fam == 4 ? "4" : "6", n,
			 rte_strerror(-rc));
		rte_acl_free(ctx);
		return NULL;
	}
	return ctx;
}

struct shp_match_table *
shp_match_table_create(const struct shp_match_set *s, int socket_id,
		       char *err)
{
	struct shp_match_table *t = calloc(1, sizeof(*t));
	uint32_t i, n4 = 0, n6 = 0, nr = shp_match_set_rules(s);

	if (t == NULL) {
		snprintf(err, SHP_ERR_LEN, "classes: out of memory");
		return NULL;
	}
	t->nb_classes = shp_match_set_classes(s);
	for (i = 0; i < nr; i++) {
		const struct shp_match_rule *r = shp_match_set_rule(s, i, NULL);

		n4 += in4(r);
		n6 += in6(r);
	}
	/* rte_acl refuses to build without rules: no context, no match */
	if (n4 > 0 && (t->acl4 = build_ctx(s, 4, n4, socket_id, err)) == NULL)
		goto fail;
	if (n6 > 0 && (t->acl6 = build_ctx(s, 6, n6, socket_id, err)) == NULL)
		goto fail;
	return t;
fail:
	shp_match_table_free(t);
	return NULL;
}

void
shp_match_table_free(struct shp_match_table *t)
{
	if (t == NULL)
		return;
	rte_acl_free(t->acl4);
	rte_acl_free(t->acl6);
	free(t);
}

uint32_t
shp_match_table_classes(const struct shp_match_table *t)
{
	return t->nb_classes;
}

#define CHUNK 64

static void
classify(const struct rte_acl_ctx *ctx, const uint8_t **data,
	 const uint32_t *at, uint32_t n, uint16_t *cls)
{
	uint32_t res[CHUNK], i;

	if (n == 0)
		return;
	if (ctx == NULL) {
		for (i = 0; i < n; i++)
			cls[at[i]] = SHP_MATCH_NONE;
		return;
	}
	rte_acl_classify(ctx, data, res, n, 1);
	for (i = 0; i < n; i++)
		cls[at[i]] = res[i] != 0 ? (uint16_t)(res[i] - 1) :
					   SHP_MATCH_NONE;
}

/* n <= CHUNK */
static void
lookup_chunk(const struct shp_match_table *t, const struct shp_match_key *k,
	     uint32_t n, uint16_t *cls)
{
	const uint8_t *d4[CHUNK], *d6[CHUNK];
	uint32_t at4[CHUNK], at6[CHUNK], n4 = 0, n6 = 0, i;
	const rte_be16_t v6 = RTE_BE16(RTE_ETHER_TYPE_IPV6);

	for (i = 0; i < n; i++) {
		if (k[i].eth_type == v6) {
			d6[n6] = (const uint8_t *)&k[i];
			at6[n6++] = i;
		} else {
			d4[n4] = (const uint8_t *)&k[i];
			at4[n4++] = i;
		}
	}
	classify(t->acl4, d4, at4, n4, cls);
	classify(t->acl6, d6, at6, n6, cls);
}

void
shp_match_lookup_keys(const struct shp_match_table *t,
		      const struct shp_match_key *keys, uint32_t n,
		      uint16_t *cls)
{
	uint32_t i;

	for (i = 0; i < n; i += CHUNK)
		lookup_chunk(t, keys + i, RTE_MIN(n - i, (uint32_t)CHUNK),
			     cls + i);
}

void
shp_match_lookup_burst(const struct shp_match_table *t,
		       struct rte_mbuf *const *pkts, uint32_t n, uint16_t *cls)
{
	struct shp_match_key k[CHUNK];
	uint32_t i, j, m;

	for (i = 0; i < n; i += CHUNK) {
		m = RTE_MIN(n - i, (uint32_t)CHUNK);
		for (j = 0; j < m; j++)
			shp_match_key_extract(pkts[i + j], &k[j]);
		lookup_chunk(t, k, m, cls + i);
	}
}
