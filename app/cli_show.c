/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the CLI's `show` commands print: the running configuration, the
 * ports' counters, rates and latency, each stage's profile and its own
 * counters, drops, lcores, classes and the NIC's view of a port. Only
 * reads: what changes anything is cli_set.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmdline.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "cli.h"
#include "cli_priv.h"
#include "events.h"
#include "control.h"
#include "shaper_wire.h"


/* ---- show ---------------------------------------------------- */

static void
show_config(void)
{
	struct ctl_config c;
	char late[32], drop[32];
	unsigned int i, k;

	ctl_config_snapshot(&c);
	out("forwarding: %s\n", c.paused ? "stopped" : "started");
	out("bands: %u  ring_size: %u  burst: %u\n", c.bands,
	    S->opt.ring_size, S->opt.burst);
	out("classify: %s\n", c.classify);
	out("priomap: %s\n", c.priomap);
	/* the seed netem profiles without their own use (the default is
	 * not 0: --seed 0 is another seed) */
	out("seed: %" PRIu64 "%s\n", c.seed, S->opt.seed_set ? "" :
	    " (default; --seed sets another)");
	/* when the emulator's own drops (overload, late) begin */
	shp_fmt_time(late, sizeof(late), S->opt.max_late_ns);
	shp_fmt_time(drop, sizeof(drop), S->opt.late_drop_ns);
	out("max-late: %s  late-drop: %s\n",
	    S->opt.max_late_ns != 0 ? late : "off",
	    S->opt.late_drop_ns != 0 ? drop : "off");
	out("mbufs: %u  store: %s\n", S->nb_mbufs, shaper_pool_store(S));
	if (shaper_queues(S) > 1)   /* (one queue: as it always was) */
		out("queues: %u (shards per port: show port shards)\n",
		    shaper_queues(S));
	for (i = 0; i < c.nb_ports; i++) {
		/* (enabled: the line as it always was, so that the text
		 * after `enable` is the text before `disable`) */
		out("port %u (peer %d)%s\n", c.port_ids[i], c.pair_of[i],
		    shaper_wire_disabled(S, c.port_ids[i]) ?
		    " disabled: a bare wire, the profile below kept" : "");
		/* the gates as before, then the queue they take from */
		for (k = 1; k <= SHP_SLOT_MAX; k++)
			out("  %s: %s\n", c.key[i][k % SHP_SLOT_MAX],
			    c.stage[i][k % SHP_SLOT_MAX]);
	}
}

static void
show_port(struct shaper *s, uint16_t p)
{
	struct shp_port_sum sum;
	const struct shp_port_ctr *c = &sum.c;
	struct ctl_rate r;
	unsigned int d;

	ctl_port_sum(s, p, &sum);
	ctl_port_rate(s, CTL_RATE_SHOW, p, &sum, &r);
	out("  ######################## port %-2u ########################\n",
	    p);
	if (shaper_wire_disabled(s, p))
		out("  disabled: a bare wire (enable %u restores the profile)\n",
		    p);
	out("  rx_packets: %-14" PRIu64 " rx_bytes: %" PRIu64 "\n",
	    c->rx_packets, c->rx_bytes);
	out("  tx_packets: %-14" PRIu64 " tx_bytes: %" PRIu64 "\n",
	    c->tx_packets, c->tx_bytes);
	out("  egress_in: %-15" PRIu64 " queued: %-12" PRIu64 " dropped: %"
	    PRIu64 "\n", sum.egress_in, sum.queued, sum.dropped);
	out("  tx_pending: %-14" PRIu64 " rx_pool_empty: %" PRIu64 "\n",
	    c->tx_pending, c->rx_pool_empty);
	/* each kind's own statistics, by their stats-file top-level name
	 * or KIND_NAME as telemetry has them */
	for (d = 0; d < shp_xstat_nb(); d++) {
		const struct shp_xstat_desc *x = shp_xstat_desc(d);

		if (x->alias != NULL)
			out("  %s: %" PRIu64, x->alias, c->xstats[d]);
		else
			out("  %s_%s: %" PRIu64, shp_xstat_kind(d)->name,
			    x->name, c->xstats[d]);
		if (d % 4 == 3 || d + 1 == shp_xstat_nb())
			out("\n");
	}
	out("  NIC drops: imissed: %-9" PRIu64 " ierrors: %-9" PRIu64
	    " rx_nombuf: %-9" PRIu64 " oerrors: %" PRIu64 "\n",
	    sum.nic.imissed, sum.nic.ierrors, sum.nic.rx_nombuf,
	    sum.nic.oerrors);
	out("  Throughput (since last show, %.3f s)\n", r.secs);
	out("  rx_pps: %-18.0f rx_bps: %.0f\n", r.rx_pps, r.rx_bps);
	out("  tx_pps: %-18.0f tx_bps: %.0f\n", r.tx_pps, r.tx_bps);
	out("  ##########################################################\n");
}

/* The distributions since `clear stats`, in ns, as the stats file keys
 * them (there: since start). */
static void
show_latency(struct shaper *s, uint16_t p)
{
	struct shp_latency *lat = malloc(sizeof(*lat));
	struct shp_port_sum sum;

	if (lat == NULL) {
		fail("show port latency: out of memory");
		return;
	}
	ctl_port_latency(s, p, lat);
	shp_latency_summarize(lat, &sum);
	free(lat);
	out("port %u latency (ns):\n", p);
	shp_hist_summary_print(stdout, "  lateness_ns:", &sum.lateness);
	shp_hist_summary_print(stdout, "  sojourn_ns: ", &sum.sojourn);
}

static void
show_bands(struct shaper *s, uint16_t p)
{
	const struct shp_qdisc *q = s->chain[p].queue;
	struct shp_port_sum sum;
	char state[64] = "";
	unsigned int b;

	ctl_port_sum(s, p, &sum);
	/* the queue's own word on its state: past a stage that reports
	 * nothing (the classes in front of the port's bands) */
	while (q != NULL && q->ops->report == NULL)
		q = q->child;
	if (q != NULL)
		q->ops->report(q, state, sizeof(state));
	out("port %u: %u bands%s%s\n", p, sum.nb_bands, state[0] ? ", " : "",
	    state);
	out("  %-4s %10s %14s %14s %12s %12s %12s %10s\n", "band", "depth",
	    "enqueued", "dequeued", "dropped", "full", "pushed_out",
	    "flushed");
	for (b = 0; b < sum.nb_bands; b++)
		out("  %-4u %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %12"
		    PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64 "\n", b,
		    sum.band_depth[b], sum.c.band[b].enqueued,
		    sum.c.band[b].dequeued, sum.band_dropped[b],
		    sum.c.band[b].full, sum.c.band[b].pushed_out,
		    sum.c.band[b].flushed);
}

/* " (reverts in 12.3 s)" after a profile a `for` change set; with
 * `to`, on a line of its own, with the profile it goes back to (the
 * profile's line stays the profile alone: scripts parse it). Several
 * `for`s on the stage: when the next ends too. */
void
reverts_note(uint16_t p, const char *key, bool to)
{
	struct ctl_for_left l;
	char more[96] = "";

	if (!ctl_revert_left(S, p, key, &l))
		return;
	if (l.n > 1)
		snprintf(more, sizeof(more), "; %u 'for' changes run, the "
			 "next ends in %.1f s", l.n, l.next_ns / 1e9);
	if (to)
		out("  (reverts in %.1f s, to %s%s)\n", l.left_ns / 1e9, l.to,
		    more);
	else
		out(" (reverts in %.1f s%s)", l.left_ns / 1e9, more);
}

/* `show netem|tbf|queue|KEY PORT`: the profile, then the kind's own
 * statistics (their stats-file alias when they have one) and its drop
 * causes. */
static void
show_stage(struct shaper *s, const char *key, uint16_t p)
{
	struct shp_port_sum sum;
	const struct shp_port_ctr *c = &sum.c;
	struct ctl_config *cfg = malloc(sizeof(*cfg));
	const struct shp_chain *ch = &s->chain[p];
	const struct shp_kind *k = NULL;
	const uint8_t *map;
	unsigned int i, d;

	ctl_port_sum(s, p, &sum);
	if (cfg == NULL)
		return;
	ctl_config_snapshot(cfg);
	for (i = 0; i < cfg->nb_ports; i++)
		if (cfg->port_ids[i] == p &&
		    ctl_config_stage(cfg, i, key) != NULL) {
			out("port %u: %s %s\n", p, key,
			    ctl_config_stage(cfg, i, key));
			reverts_note(p, key, true);
		}
	free(cfg);
	for (i = 0; i < SHP_SLOT_MAX; i++)
		if (strcmp(shp_kind_key(ch->kind[i]), key) == 0)
			k = ch->kind[i];
	if (k == NULL)
		return;
	for (d = 0; d < shp_xstat_nb(); d++)
		if (shp_xstat_kind(d) == k)
			out("  %s: %" PRIu64, shp_xstat_desc(d)->alias ?
			    shp_xstat_desc(d)->alias : shp_xstat_desc(d)->name,
			    c->xstats[d]);
	map = shp_kind_drop_map(k);
	for (d = 0; k->drops != NULL && k->drops[d] != NULL; d++)
		out("  %s: %" PRIu64, k->drops[d], c->drops[map[d]]);
	out("\n");
}

static void
show_drops(void)
{
	unsigned int i, d;

	out("%-4s", "port");
	for (d = 0; d < shp_drop_nb(); d++)
		out(" %12s", shp_drop_names[d]);
	out(" %12s\n", "dropped");
	for (i = 0; i < S->nb_ports; i++) {
		struct shp_port_sum sum;

		ctl_port_sum(S, S->port_ids[i], &sum);
		out("%-4u", S->port_ids[i]);
		for (d = 0; d < shp_drop_nb(); d++)
			out(" %12" PRIu64, sum.c.drops[d]);
		out(" %12" PRIu64 "\n", sum.dropped);
	}
}

static void
show_lcores(void)
{
	unsigned int i, k;

	out("lcore %u: main (control plane, prompt, telemetry data), "
	    "socket %u\n", rte_get_main_lcore(),
	    rte_lcore_to_socket_id(rte_get_main_lcore()));
	for (i = 0; i < S->nb_workers; i++) {
		const struct worker *w = &S->workers[S->worker_ids[i]];

		out("lcore %u: %s, socket %u", w->lcore, w->rx && w->tx ?
		    "rx+tx" : w->rx ? "rx" : "tx",
		    rte_lcore_to_socket_id(w->lcore));
		if (w->rx) {
			out(", rx queues");
			for (k = 0; k < w->nb_rxq; k++)
				out(" %u/%u->%u", w->rxq[k].port,
				    w->rxq[k].queue, w->rxq[k].egress);
		}
		if (w->tx) {
			out(", egress ports");
			/* with --queues: port/shard, as the rx queues */
			for (k = 0; k < w->nb_egress; k++)
				if (shaper_queues(S) > 1)
					out(" %u/%u", w->egress[k],
					    w->eg[k]->txq);
				else
					out(" %u", w->egress[k]);
		}
		out(", loops %" PRIu64 "\n",
		    __atomic_load_n(&w->loops, __ATOMIC_RELAXED));
	}
}

static void
show_qdisc(struct shaper *s, uint16_t p)
{
	cli_show_qdisc(s, p, true, stdout);
}

static void
show_qdisc_one(struct shaper *s, uint16_t p)
{
	cli_show_qdisc(s, p, false, stdout);
}

/* `show events`: the stream's counts, then the last SHOW_EVENTS kept */
#define SHOW_EVENTS 20

static void
show_events(void)
{
	static char line[16384];
	uint64_t last = shp_events_last(), id;
	char buf[128];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	if (f != NULL) {
		shp_events_stats_print(f);
		fclose(f);
		out("%s", buf);
	}
	for (id = last > SHOW_EVENTS ? last - SHOW_EVENTS + 1 : 1; id <= last;
	     id++) {
		const struct shp_event *e = shp_event_get(id);

		if (e != NULL) {
			shp_event_format(e, 0, line, sizeof(line));
			out("%s", line);
		}
	}
}

void
cmd_show1(void *res, struct cmdline *c, void *data)
{
	struct r_w2 *r = res;

	(void)c; (void)data;
	if (strcmp(r->w2, "config") == 0)
		show_config();
	else if (strcmp(r->w2, "drops") == 0)
		show_drops();
	else if (strcmp(r->w2, "qdisc") == 0)
		for_ports(-1, show_qdisc);
	else if (strcmp(r->w2, "events") == 0)
		show_events();
	else
		show_lcores();
}

void
cmd_show_port(void *res, struct cmdline *c, void *data)
{
	struct r_w4 *r = res;
	int p = port_of("show port stats", r->w4);

	(void)c; (void)data;
	if (p != -2)
		for_ports(p, show_port);
}

void
cmd_show_latency(void *res, struct cmdline *c, void *data)
{
	struct r_w4 *r = res;
	int p = data != NULL ? port_of("show port latency", r->w4) : -1;

	(void)c;
	if (p != -2)
		for_ports(p, show_latency);
}

void
cmd_show_stage(void *res, struct cmdline *c, void *data)
{
	struct r_w3 *r = res;
	char what[32];
	int p;

	(void)c; (void)data;
	snprintf(what, sizeof(what), "show %s", r->w2);
	p = port_of(what, r->w3);
	if (p == -2)
		return;
	if (strcmp(r->w2, "bands") == 0) {
		for_ports(p, show_bands);
	} else if (strcmp(r->w2, "qdisc") == 0) {
		for_ports(p, p < 0 ? show_qdisc : show_qdisc_one);
	} else {
		unsigned int i;

		for (i = 0; i < S->nb_ports; i++)
			if (p < 0 || p == S->port_ids[i])
				show_stage(S, r->w2, S->port_ids[i]);
	}
}

/* `show class [NAME]`: every egress port's classes (shp_classes.h) */
void
cmd_show_class(void *res, struct cmdline *c, void *data)
{
	struct r_w3 *r = res;
	const char *name = data != NULL ? r->w3 : NULL;
	unsigned int i, n = 0;

	(void)c;
	if (name != NULL && shp_class_find(S->opt.classes, name) == NULL) {
		fail("show class: no class '%s'", name);
		return;
	}
	for (i = 0; i < S->nb_ports; i++)
		n += shp_classes_show(stdout, S->port_ids[i], name);
	if (n == 0)
		out("no class%s\n", name != NULL ? " on any port" : "");
}


/* `show port info [all|P]`: what the port is and its link (issue 29) */
static void
show_port_info(struct shaper *s, uint16_t port)
{
	struct rte_eth_dev_info info = { 0 };
	struct shp_link l;
	char text[64], when[40] = "never";
	uint16_t mtu = 0;

	(void)s;
	rte_eth_dev_info_get(port, &info);
	rte_eth_dev_get_mtu(port, &mtu);
	shaper_link_get(port, &l);
	if (l.changed_ns != 0) {
		time_t t = (time_t)(l.changed_ns / 1000000000ull);
		struct tm tm;
		size_t n;

		gmtime_r(&t, &tm);
		n = strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		snprintf(when + n, sizeof(when) - n, ".%03u UTC",
			 (unsigned int)(l.changed_ns % 1000000000ull /
					1000000));
	}
	out("port %u (%s): link %s, mtu %u, socket %d\n", port,
	    info.driver_name != NULL ? info.driver_name : "?",
	    shaper_link_text(&l, text, sizeof(text)), mtu,
	    rte_eth_dev_socket_id(port));
	out("  link changes: %" PRIu64 "  last change: %s\n", l.changes, when);
}

void
cmd_show_port_info(void *res, struct cmdline *c, void *data)
{
	struct r_w4 *r = res;
	int p = data != NULL ? port_of("show port info", r->w4) : -1;

	(void)c;
	if (p != -2)
		for_ports(p, show_port_info);
}

/* `show port shards [all|P]`: each shard's own figures (--queues, issue
 * 24), which sum to the port's: where one falls behind shows */
static void
show_port_shards(struct shaper *s, uint16_t port)
{
	unsigned int q, d;

	out("port %u: %u shard%s\n", port, shaper_queues(s),
	    shaper_queues(s) == 1 ? "" : "s");
	for (q = 0; q < shaper_queues(s); q++) {
		struct shp_port_sum sum;
		const char *sep = " (";

		ctl_shard_sum(s, port, q, &sum);
		out("  shard %u: lcore %u tx_packets %" PRIu64 " tx_bytes %"
		    PRIu64 " queued %" PRIu64 " dropped %" PRIu64, q,
		    shaper_shard_lcore(s, port, q), sum.c.tx_packets,
		    sum.c.tx_bytes, sum.queued, sum.dropped);
		for (d = 0; d < shp_drop_nb(); d++)
			if (sum.c.drops[d] != 0) {
				out("%s%s %" PRIu64, sep, shp_drop_names[d],
				    sum.c.drops[d]);
				sep = ", ";
			}
		if (sep[0] == ',')
			out(")");
		out(" sojourn p50 %" PRIu64 " p99 %" PRIu64 " max %" PRIu64
		    " ns\n", sum.sojourn.p50, sum.sojourn.p99,
		    sum.sojourn.max);
	}
}

void
cmd_show_port_shards(void *res, struct cmdline *c, void *data)
{
	struct r_w4 *r = res;
	int p = data != NULL ? port_of("show port shards", r->w4) : -1;

	(void)c;
	if (p != -2)
		for_ports(p, show_port_shards);
}

/* `show port xstats P [all]`: the NIC's extended statistics, the
 * non-zero ones unless all (issue 29) */
void
cmd_show_xstats(void *res, struct cmdline *c, void *data)
{
	struct r_w4 *r = res;
	struct rte_eth_xstat_name *names;
	uint64_t *values;
	int p = port_of("show port xstats", r->w4), n, i, shown = 0;

	(void)c;
	if (p == -2)
		return;
	if (p < 0) {
		fail("show port xstats: give one port (show port xstats P)");
		return;
	}
	n = shaper_nic_xstats((uint16_t)p, &names, &values);
	if (n < 0) {
		fail("show port xstats: port %d gives no extended statistics",
		     p);
		return;
	}
	out("port %d: NIC extended statistics (%s)\n", p,
	    data != NULL ? "all" : "non-zero; all: every one");
	for (i = 0; i < n; i++)
		if (data != NULL || values[i] != 0) {
			out("  %-32s %" PRIu64 "\n", names[i].name, values[i]);
			shown++;
		}
	if (shown == 0)
		out("  (all %d are 0)\n", n);
	free(names);
	free(values);
}
