/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `show qdisc`: a port's chain as `tc -s qdisc show` prints it, for users
 * who read tc output every day. One qdisc per active stage, root first
 * (netem 1:, its child tbf or trace 2:, their child the bands 3:, as the
 * chain is built), each with its parameters as tc prints them (its kind's
 * tc_print, shp_kind.h: no kind is known by name here) and
 *
 *  Sent B bytes P pkt (dropped D, overlimits 0 requeues 0)
 *  backlog Bb Pp requeues 0
 *
 * Sent is what the stage passed on (the root: what the port sent); a
 * parent's backlog includes its children's, as in Linux. tbf's Sent bytes
 * include the frames it dropped as tbf_oversize (their sizes are not
 * counted apart). overlimits and requeues are not counted here: 0.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <rte_ethdev.h>

#include "cli.h"
#include "control.h"

struct tc_stage {
	const char *kind;
	unsigned int handle;
	char params[CTL_TEXT_LEN + 64];
	uint64_t sent_b, sent_p, dropped, backlog_b, backlog_p;
};

/* A stage's name and parameters as tc prints them: its kind's tc_print,
 * else its text as it is (a queue's without its kind's name). */
static void
stage_params(const struct shp_kind *k, const char *text,
	     const struct shp_kind_env *env, struct tc_stage *st)
{
	size_t nl = strlen(k->name);

	st->kind = k->name;
	if (k->slot == SHP_SLOT_QUEUE && strncmp(text, k->name, nl) == 0)
		text += nl + (text[nl] == ' ');
	if (k->tc_print != NULL)
		k->tc_print(text, env, &st->kind, st->params,
			    sizeof(st->params));
	else
		snprintf(st->params, sizeof(st->params), "%s", text);
}

/*
 * The ingress slot as tc shows a policer on a device: an ingress qdisc
 * (what reached the port's chain, what its action dropped) and the
 * filter's action (`tc -s filter show dev D ingress`).
 */
static void
show_ingress(struct shaper *s, uint16_t port, const char *text,
	     const struct shp_kind_env *env, const struct shp_port_ctr *c,
	     const char *dev, FILE *f)
{
	const struct shp_kind *k = s->chain[port].kind[SHP_SLOT_INGRESS];
	struct tc_stage t = { 0 };
	uint64_t dropped;

	if (text == NULL || strcmp(text, "off") == 0)
		return;
	dropped = shp_kind_drops(k, c->drops);
	stage_params(k, text, env, &t);
	fprintf(f, "qdisc ingress ffff: ");
	if (dev != NULL)
		fprintf(f, "dev %s ", dev);
	fprintf(f, "parent ffff:fff1 ---------------- \n Sent %" PRIu64
		" pkt (dropped %" PRIu64 ", overlimits %" PRIu64
		" requeues 0) \n backlog 0b 0p requeues 0\n"
		" action order 1: %s %s\n", c->egress_in, dropped, dropped,
		t.kind, t.params);
}

void
cli_show_qdisc(struct shaper *s, uint16_t port, bool with_dev, FILE *f)
{
	struct ctl_config *cfg = malloc(sizeof(*cfg));
	struct tc_stage st[SHP_SLOT_MAX], *root;
	struct shp_port_sum sum;
	const struct shp_port_ctr *c = &sum.c;
	struct shp_kind_env env;
	char dev[RTE_ETH_NAME_MAX_LEN];
	const char *text[SHP_SLOT_MAX] = { NULL };
	const struct shp_chain *ch = &s->chain[port];
	const struct shp_kind *qk = ch->kind[SHP_SLOT_QUEUE];
	const struct shp_kind *rk = ch->kind[SHP_SLOT_RATE];
	unsigned int i, b, sl, q, n = 0;
	uint64_t deq_p = 0, deq_b = 0, bl_p = 0, bl_b = 0;

	if (cfg == NULL)
		return;
	ctl_config_snapshot(cfg);
	ctl_port_sum(s, port, &sum);
	for (i = 0; i < cfg->nb_ports; i++)
		if (cfg->port_ids[i] == port)
			for (sl = 0; sl < SHP_SLOT_MAX; sl++)
				text[sl] = cfg->stage[i][sl];
	shaper_kind_env(s, &env);
	/* a queue without bands: what it holds, from its stats op, over
	 * every shard's (--queues) */
	if (qk->ops->enqueue_rx == NULL) {
		for (q = 0; q < shaper_queues(s); q++) {
			const struct shp_qdisc *sq =
				shaper_shard_chain(s, port, q)->queue;
			struct shp_qstats qs = { 0 };

			sq->ops->stats(sq, &qs);
			bl_p += qs.qlen;
			bl_b += qs.backlog;
		}
		deq_p = c->tx_packets;
		deq_b = c->tx_bytes;
	}
	for (b = 0; b < sum.nb_bands; b++) {
		const struct shp_band_ctr *bc = &c->band[b];
		uint64_t gone = bc->dequeued_bytes + bc->pushed_out_bytes;

		deq_p += bc->dequeued;
		deq_b += bc->dequeued_bytes;
		bl_p += sum.band_depth[b];
		bl_b += bc->enqueued_bytes > gone ?
			bc->enqueued_bytes - gone : 0;
	}
	/* root first: delay 1:, rate 2:, queue 3:, each active stage (the
	 * ingress slot is no qdisc of the root's tree: below) */
	for (sl = SHP_SLOT_DELAY + 1; sl-- > 0;) {
		const struct shp_kind *k = ch->kind[sl];
		struct tc_stage *t = &st[n];

		if (text[sl] == NULL ||
		    (sl != SHP_SLOT_QUEUE && strcmp(text[sl], "off") == 0))
			continue;
		*t = (struct tc_stage){
			.handle = SHP_SLOT_DELAY + 1 - sl,
			.sent_b = deq_b, .sent_p = deq_p,
			.dropped = shp_kind_drops(k, c->drops),
			.backlog_b = bl_b, .backlog_p = bl_p,
		};
		if (sl == SHP_SLOT_DELAY) {
			/* plain loads of the owner's gauges: approximate in
			 * flight */
			struct shp_qstats nq = { 0 };

			ch->stage[sl]->ops->stats(ch->stage[sl], &nq);
			t->sent_b = c->tx_bytes;
			t->sent_p = c->tx_packets;
			t->backlog_b += nq.backlog;
			t->backlog_p += nq.qlen;
		} else if (sl == SHP_SLOT_RATE) {
			/* what the gate dropped of what it took from its
			 * child (tbf_oversize) did not pass; tbf's Sent
			 * bytes include them (their sizes are not kept) */
			uint64_t own = shp_kind_drops_own(k, qk, c->drops);

			t->sent_p = deq_p > own ? deq_p - own : 0;
		} else {
			/* the limit's pushouts are tbf's drops, as in Linux */
			t->dropped = shp_kind_drops_own(k, rk, c->drops);
		}
		stage_params(k, text[sl], &env, t);
		n++;
	}
	root = &st[0];
	if (root->handle != 1) {   /* the root sends what the port sent */
		root->sent_b = c->tx_bytes;
		root->sent_p = c->tx_packets;
	}
	if (rte_eth_dev_get_name_by_port(port, dev) != 0)
		snprintf(dev, sizeof(dev), "%u", port);
	for (i = 0; i < n; i++) {
		fprintf(f, "qdisc %s %u: ", st[i].kind, st[i].handle);
		if (with_dev)
			fprintf(f, "dev %s ", dev);
		if (i == 0)
			fprintf(f, "root refcnt 2 ");
		else
			fprintf(f, "parent %u:1 ", st[i - 1].handle);
		fprintf(f, "%s \n Sent %" PRIu64 " bytes %" PRIu64 " pkt "
			"(dropped %" PRIu64 ", overlimits 0 requeues 0) \n"
			" backlog %" PRIu64 "b %" PRIu64 "p requeues 0\n",
			st[i].params, st[i].sent_b, st[i].sent_p,
			st[i].dropped, st[i].backlog_b, st[i].backlog_p);
	}
	show_ingress(s, port, text[SHP_SLOT_INGRESS], &env, c, with_dev ?
		     dev : NULL, f);
	free(cfg);
}
