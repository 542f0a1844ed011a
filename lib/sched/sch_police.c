/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * police: Linux act_police in front of the queue (the ingress slot,
 * shp_kind.h). Each arrival the bucket covers passes at once, never
 * queued or delayed by it; one it does not cover is dropped, counted as
 * `policed`, and leaves the bucket as it was. The bucket, its words and
 * its arithmetic are tbf's (shp_bucket.h, shp_police.h). conf == NULL:
 * off. A link's shards judge on the link's one bucket (the env's
 * link, shp_link.h), so that the link, not each shard, passes the rate.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>

#include "shp_kind.h"
#include "shp_police.h"
#include "shp_qdisc.h"
#include "shp_link.h"

struct police_priv {
	const struct shp_tbf_conf *conf;  /* published by change() */
	uint64_t seen;    /* id of the conf the bucket belongs to */
	struct shp_police_state s;
	/* the link's bucket, shared with the other shards (NULL: s is the
	 * bucket) */
	struct shp_tbf_shared *sh;
};

static inline struct police_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

static int
police_init(struct shp_qdisc *q, const void *conf)
{
	priv(q)->conf = conf;
	priv(q)->seen = UINT64_MAX;   /* the first conf is fresh */
	priv(q)->sh = q->env != NULL && q->env->link != NULL ?
		      &q->env->link->police : NULL;
	/* full at the first use, whichever shard judges first */
	if (priv(q)->sh != NULL && conf != NULL)
		shp_tbf_shared_bind(priv(q)->sh, conf);
	return 0;
}

static const void *
police_change(struct shp_qdisc *q, const void *conf)
{
	const void *old = priv(q)->conf;

	__atomic_store_n(&priv(q)->conf, conf, __ATOMIC_RELEASE);
	return old;
}

/* the kind's drop cause, its name beside its enum (shp_kind.h); a
 * verdict of filter is a cause + 1 (shp_chain.c) */
#define POLICE_DROPS(X) \
	/* over the bucket at arrival: the profile's drop */ \
	X(POLICE_DROP_OVER, "policed")
enum { POLICE_DROPS(SHP_CAUSE_ENUM) };
static const char *const police_drops[] = {
	POLICE_DROPS(SHP_CAUSE_NAME) NULL
};

/* A new profile starts with a full bucket (as tcf_police_init), at the
 * first arrival that sees it. */
static void
police_filter(struct shp_qdisc *q, struct rte_mbuf *const *pkts, uint16_t n,
	      uint8_t *verdict, struct shp_ctx *ctx)
{
	struct police_priv *p = priv(q);
	const struct shp_tbf_conf *c =
		__atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
	uint32_t len[n];
	uint16_t i;

	if (c == NULL) {
		memset(verdict, 0, n);
		return;
	}
	if (c->hdr.id != p->seen) {
		if (p->sh != NULL)   /* the first shard to meet it fills */
			shp_tbf_shared_adopt(p->sh, c, ctx->now);
		else
			shp_police_init(&p->s, c, ctx->now);
		p->seen = c->hdr.id;
	}
	for (i = 0; i < n; i++)
		len[i] = rte_pktmbuf_pkt_len(pkts[i]);
	if (p->sh != NULL)
		shp_tbf_shared_police(p->sh, c, len, n, ctx->now, verdict);
	else
		shp_police_conform_burst(&p->s, c, len, n, ctx->now, verdict);
}

static void
police_dump(const struct shp_qdisc *q, FILE *f)
{
	const struct shp_tbf_conf *c =
		__atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE);
	char buf[256];

	if (c == NULL) {
		fprintf(f, "off");
		return;
	}
	shp_police_format(c, buf, sizeof(buf));
	fprintf(f, "%s", buf);
}

static const struct shp_qdisc_ops police_ops = {
	.id = "police",
	.priv_size = sizeof(struct police_priv),
	.init = police_init,
	.change = police_change,
	.filter = police_filter,
	.stats = shp_gate_stats,
	.dump = police_dump,
};

static void *
police_kind_parse(const char *args, const struct shp_kind_env *env,
		  char *err)
{
	RTE_SET_USED(env);
	return shp_tbf_conf_new(shp_police_parse, args, err);
}

static int
police_kind_format(const void *conf, char *buf, size_t len)
{
	return shp_police_format(conf, buf, len);
}

/* as tc prints the action (m_police.c print_police): the mtu the kernel
 * holds, its default too, and what a packet over the limit gets */
static int
police_tc_print(const char *args, const struct shp_kind_env *env,
		const char **tc_name, char *buf, size_t len)
{
	struct shp_tbf_conf c;
	char err[SHP_ERR_LEN], r[32], b[32], p[32];
	int n;

	RTE_SET_USED(env);
	RTE_SET_USED(tc_name);
	if (shp_police_parse(args, &c, err) < 0)
		return snprintf(buf, len, "%s", args);   /* not ours */
	shp_fmt_rate(r, sizeof(r), c.rate);
	shp_fmt_size(b, sizeof(b), c.burst);
	n = snprintf(buf, len, "0x1 rate %s burst %s mtu %" PRIu64 "b ", r,
		     b, c.max_size);
	if (c.peakrate) {
		shp_fmt_rate(p, sizeof(p), c.peakrate);
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      "peakrate %s ", p);
	}
	n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
		      "action drop/pass overhead %db", c.overhead);
	if (c.mpu)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " mpu %ub", c.mpu);
	if (c.atm)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " linklayer atm");
	return n;
}


const struct shp_kind shp_kind_police = {
	.name = "police",
	.slot = SHP_SLOT_INGRESS,
	.ops = &police_ops,
	.parse = police_kind_parse,
	.format = police_kind_format,
	.conf_free = free,
	.tc_print = police_tc_print,
	.drops = police_drops,
	.usage = "police rate RATE burst BYTES [mtu BYTES] [peakrate RATE] "
		 "[overhead BYTES] [mpu BYTES] [linklayer ethernet|atm]",
	.words = "rate#burst#mtu#peakrate#overhead#mpu#linklayer",
};
