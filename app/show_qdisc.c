/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `show qdisc`: a port's chain as `tc -s qdisc show` prints it, for users
 * who read tc output every day. One qdisc per active stage, root first
 * (netem 1:, its child tbf or trace 2:, their child the bands 3:, as the
 * chain is built), each with its parameters as tc prints them and
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

#include "classify.h"
#include "cli.h"
#include "control.h"
#include "shp_tbf.h"

struct tc_stage {
	const char *kind;
	unsigned int handle;
	char params[CTL_TEXT_LEN + 64];
	uint64_t sent_b, sent_p, dropped, backlog_b, backlog_p;
};

/* A time as tc prints it: the largest unit under the value, one decimal,
 * none when it is .0 ("20ms", "81.3ms"). */
static void
tc_time(char *buf, size_t len, double s)
{
	const char *unit = "s";
	char *dot;

	if (s < 1e-3) {
		s *= 1e6;
		unit = "us";
	} else if (s < 1) {
		s *= 1e3;
		unit = "ms";
	}
	snprintf(buf, len, "%.1f", s);
	dot = strstr(buf, ".0");
	if (dot != NULL && dot[2] == '\0')
		*dot = '\0';
	snprintf(buf + strlen(buf), len - strlen(buf), "%s", unit);
}

/* tbf's parameters as tc prints them: the limit as a latency ("lat"). */
static void
tbf_params(const char *text, char *buf, size_t len)
{
	struct shp_tbf_conf c;
	char err[SHP_ERR_LEN], r[32], b[32], l[32], p[32], m[32];
	double lat_s;
	int n;

	if (shp_tbf_parse(text, &c, err) < 0 || c.rate == 0) {
		snprintf(buf, len, "%s", text);   /* cannot happen: ours */
		return;
	}
	shp_fmt_rate(r, sizeof(r), c.rate);
	shp_fmt_size(b, sizeof(b), c.burst);
	n = snprintf(buf, len, "rate %s ", r);
	if (c.peakrate) {
		shp_fmt_rate(p, sizeof(p), c.peakrate);
		n += snprintf(buf + n, len - n, "peakrate %s ", p);
	}
	n += snprintf(buf + n, len - n, "burst %s ", b);
	if (c.peakrate) {
		shp_fmt_size(m, sizeof(m), c.mtu);
		n += snprintf(buf + n, len - n, "mtu %s ", m);
	}
	if (c.latency != 0) {
		lat_s = c.latency / 1e9;
	} else {
		lat_s = ((double)c.limit - (double)c.burst) / (double)c.rate;
		if (c.peakrate && ((double)c.limit - (double)c.mtu) /
		    (double)c.peakrate > lat_s)
			lat_s = ((double)c.limit - (double)c.mtu) /
				(double)c.peakrate;
	}
	if (lat_s >= 0) {
		tc_time(l, sizeof(l), lat_s);
		n += snprintf(buf + n, len - n, "lat %s", l);
	} else {
		shp_fmt_size(l, sizeof(l), c.limit);
		n += snprintf(buf + n, len - n, "limit %s", l);
	}
	if (c.overhead)
		n += snprintf(buf + n, len - n, " overhead %d", c.overhead);
	if (c.mpu)
		n += snprintf(buf + n, len - n, " mpu %ub", c.mpu);
	if (c.atm)
		snprintf(buf + n, len - n, " linklayer atm");
}

void
cli_show_qdisc(struct shaper *s, uint16_t port, bool with_dev, FILE *f)
{
	struct ctl_config *cfg = malloc(sizeof(*cfg));
	struct tc_stage st[3], *root;
	struct shp_port_sum sum;
	const struct shp_port_ctr *c = &sum.c;
	struct shp_qstats nq = { 0 };
	uint8_t defmap[16];
	char dev[RTE_ETH_NAME_MAX_LEN];
	const char *tbf = NULL, *netem = NULL, *queue = NULL, *rate = NULL;
	const struct shp_chain *ch = &s->chain[port];
	const struct shp_kind *qk = ch->kind[SHP_SLOT_QUEUE];
	/* another gate where tbf stands (trace): its text as given */
	const struct shp_kind *rk = ch->kind[SHP_SLOT_RATE];
	unsigned int i, b, n = 0;
	uint64_t deq_p = 0, deq_b = 0, bl_p = 0, bl_b = 0;

	if (cfg == NULL)
		return;
	ctl_config_snapshot(cfg);
	ctl_port_sum(s, port, &sum);
	for (i = 0; i < cfg->nb_ports; i++)
		if (cfg->port_ids[i] == port) {
			tbf = ctl_config_stage(cfg, i, "tbf");
			netem = ctl_config_stage(cfg, i, "netem");
			queue = ctl_config_stage(cfg, i, "queue");
			if (rk != NULL && strcmp(rk->name, "tbf") != 0)
				rate = ctl_config_stage(cfg, i,
							shp_kind_key(rk));
		}
	if (tbf != NULL && strcmp(tbf, "off") == 0)
		tbf = NULL;
	if (netem != NULL && strcmp(netem, "off") == 0)
		netem = NULL;
	if (rate != NULL && strcmp(rate, "off") == 0)
		rate = NULL;
	/* a queue without bands: what it holds, from its stats op */
	if (qk->ops->enqueue_rx == NULL) {
		struct shp_qstats qs = { 0 };

		ch->queue->ops->stats(ch->queue, &qs);
		bl_p = qs.qlen;
		bl_b = qs.backlog;
		deq_p = c->tx_packets;
		deq_b = c->tx_bytes;
	}
	for (b = 0; b < s->opt.bands; b++) {
		const struct shp_band_ctr *bc = &c->band[b];
		uint64_t gone = bc->dequeued_bytes + bc->pushed_out_bytes;

		deq_p += bc->dequeued;
		deq_b += bc->dequeued_bytes;
		bl_p += sum.band_depth[b];
		bl_b += bc->enqueued_bytes > gone ?
			bc->enqueued_bytes - gone : 0;
	}
	if (netem != NULL) {
		/* plain loads of the owner's gauges: approximate in flight */
		const struct shp_kind *nk = ch->kind[SHP_SLOT_DELAY];

		ch->stage[SHP_SLOT_DELAY]->ops->stats(ch->stage[SHP_SLOT_DELAY],
						      &nq);
		st[n++] = (struct tc_stage){
			.kind = "netem", .handle = 1,
			.sent_b = c->tx_bytes, .sent_p = c->tx_packets,
			.dropped = shp_kind_drops(nk, c->drops),
			.backlog_b = bl_b + nq.backlog,
			.backlog_p = bl_p + nq.qlen,
		};
		snprintf(st[n - 1].params, sizeof(st[0].params), "%s", netem);
	}
	if (tbf != NULL) {
		int lim = shp_drop_index("tbf_limit");
		uint64_t over = c->drops[shp_drop_index("tbf_oversize")];

		st[n++] = (struct tc_stage){
			.kind = "tbf", .handle = 2,
			.sent_b = deq_b,
			.sent_p = deq_p > over ? deq_p - over : 0,
			.dropped = over + (lim >= 0 ? c->drops[lim] : 0),
			.backlog_b = bl_b, .backlog_p = bl_p,
		};
		tbf_params(tbf, st[n - 1].params, sizeof(st[0].params));
	} else if (rate != NULL) {
		st[n++] = (struct tc_stage){
			.kind = rk->name, .handle = 2,
			.sent_b = deq_b, .sent_p = deq_p,
			.dropped = shp_kind_drops(rk, c->drops),
			.backlog_b = bl_b, .backlog_p = bl_p,
		};
		snprintf(st[n - 1].params, sizeof(st[0].params), "%s", rate);
	}
	shp_priomap_default((uint8_t)cfg->bands, defmap);
	st[n] = (struct tc_stage){
		.kind = "prio", .handle = 3,
		.sent_b = deq_b, .sent_p = deq_p,
		/* the limit's pushouts are tbf's drops, as in Linux */
		.dropped = shp_kind_drops(qk, c->drops) -
			   (qk->ops->set_limit != NULL ?
			    c->drops[shp_drop_index("tbf_limit")] : 0),
		.backlog_b = bl_b, .backlog_p = bl_p,
	};
	if (qk->ops->enqueue_rx == NULL) {
		/* the kind's own text, as tc prints what it was given */
		const char *args = queue != NULL ? queue : qk->name;

		st[n].kind = qk->name;
		args += strncmp(args, qk->name, strlen(qk->name)) == 0 ?
			strlen(qk->name) : 0;
		snprintf(st[n].params, sizeof(st[0].params), "%s",
			 args + (*args == ' '));
	} else {
		const uint8_t *map = s->classifier->priomap;
		int k, off;

		if (cfg->bands == 3 && memcmp(map, defmap, 16) == 0)
			st[n].kind = "pfifo_fast";
		off = snprintf(st[n].params, sizeof(st[0].params),
			       "bands %u priomap", cfg->bands);
		for (k = 0; k < 16; k++)
			off += snprintf(st[n].params + off,
					sizeof(st[0].params) - off, " %u",
					map[k]);
	}
	n++;
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
	free(cfg);
}
