/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading the counters: sums over every lcore's block. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "ctl_config.h"
#include "events.h"
#include "shaper.h"
#include "shaper_wire.h"

void
shaper_stats_port(struct shaper *s, uint16_t port, struct shp_port_sum *sum)
{
	shaper_stats_port_of(s, s->ctr, port, sum);
}

void
shaper_stats_port_of(struct shaper *s, const struct shp_lcore_ctr *blocks,
		     uint16_t port, struct shp_port_sum *sum)
{
	struct rte_eth_stats st;

	shp_stats_sum(blocks, SHAPER_CTR_BLOCKS, port, shaper_bands(s, port),
		      sum);
	/* what the port itself dropped or refused, next to our causes */
	if (rte_eth_stats_get(port, &st) == 0) {
		sum->nic.imissed = st.imissed;
		sum->nic.ierrors = st.ierrors;
		sum->nic.rx_nombuf = st.rx_nombuf;
		sum->nic.oerrors = st.oerrors;
	}
	shaper_link_get(port, &sum->link);
	sum->disabled = shaper_wire_disabled(s, port);
	sum->budget = s->budget[port];
}

int
shaper_nic_xstats(uint16_t port, struct rte_eth_xstat_name **names,
		  uint64_t **values)
{
	int n = rte_eth_xstats_get_names(port, NULL, 0);
	struct rte_eth_xstat *x;
	int i;

	*names = NULL;
	*values = NULL;
	if (n < 0)
		return -1;
	*names = calloc(n + 1, sizeof(**names));
	*values = calloc(n + 1, sizeof(**values));
	x = calloc(n + 1, sizeof(*x));
	if (*names == NULL || *values == NULL || x == NULL ||
	    rte_eth_xstats_get_names(port, *names, n) != n ||
	    rte_eth_xstats_get(port, x, n) != n) {
		free(*names);
		free(*values);
		free(x);
		*names = NULL;
		*values = NULL;
		return -1;
	}
	/* values come by id: put each at its name's place */
	for (i = 0; i < n; i++)
		if (x[i].id < (uint64_t)n)
			(*values)[x[i].id] = x[i].value;
	free(x);
	return n;
}

/* The stats file's nic.xstats: every one, by name (NULL: none). */
static char *
nic_xstats_json(uint16_t port)
{
	struct rte_eth_xstat_name *names;
	uint64_t *values;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n = shaper_nic_xstats(port, &names, &values), i;

	if (n < 0 || (f = open_memstream(&buf, &len)) == NULL) {
		free(names);
		free(values);
		return NULL;
	}
	fprintf(f, "{");
	for (i = 0; i < n; i++) {
		const char *c;

		fprintf(f, "%s\"", i ? ", " : "");
		for (c = names[i].name; *c != '\0'; c++)
			if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
				fprintf(f, "\\u%04x", (unsigned char)*c);
			else
				fputc(*c, f);
		fprintf(f, "\": %" PRIu64, values[i]);
	}
	fprintf(f, "}");
	fclose(f);
	free(names);
	free(values);
	return buf;
}

/*
 * Latency histograms for the lcore that transmits on each port (the
 * egress owner: both tx_port and the RX bypass run there), on its socket.
 * After shaper_lcores_assign, before the workers start.
 */
int
shaper_latency_init(struct shaper *s)
{
	unsigned int i, q;

	for (i = 0; i < s->nb_ports; i++)
		for (q = 0; q < shaper_queues(s); q++) {
			uint16_t port = s->port_ids[i];
			struct egress *e = s->shard[port][q];
			unsigned int lc = e->owner;
			struct shp_latency *l;

			l = rte_malloc_socket("latency", sizeof(*l),
					      RTE_CACHE_LINE_SIZE,
					      (int)rte_lcore_to_socket_id(lc));
			if (l == NULL) {
				fprintf(stderr, "dpdk-shaper: no memory for "
					"the latency histograms of port %u\n",
					port);
				return -1;
			}
			shp_latency_init(l);
			/* the block its TX writes: the owner's, or the
			 * shard's */
			e->ctr->port[port].lat = l;
		}
	return 0;
}

void
shaper_latency_fini(struct shaper *s)
{
	unsigned int l, p;

	for (l = 0; l < SHAPER_CTR_BLOCKS; l++)
		for (p = 0; p < SHP_MAX_PORTS; p++) {
			rte_free(s->ctr[l].port[p].lat);
			s->ctr[l].port[p].lat = NULL;
		}
}

/* Summed over lcores, since start. */
void
shaper_stats_latency(struct shaper *s, uint16_t port, struct shp_latency *out)
{
	shp_stats_latency(s->ctr, SHAPER_CTR_BLOCKS, port, out);
}

/*
 * Where the kernel's count of each worker's lost CPU starts: its thread
 * has waited for no CPU yet (it blocks until launched, and a blocked
 * thread's run delay does not grow), so its totals count from zero; its
 * CPU's steal counts from now.
 */
void
shaper_lost_launch(struct shaper *s)
{
	unsigned int i;

	for (i = 0; i < s->nb_workers; i++) {
		struct worker *w = &s->workers[s->worker_ids[i]];

		w->cpu = shp_cpu_lost_lcore_cpu(w->lcore);
		shp_cpu_lost_read(-1, w->cpu, &w->lost0);
		w->lost0.have_wait = true;
	}
}

void
shaper_worker_stalls(const struct worker *w, struct shp_stall_sum *out)
{
	out->lcore = w->lcore;
	out->socket = (int)rte_lcore_to_socket_id(w->lcore);
	out->loops = __atomic_load_n(&w->loops, __ATOMIC_RELAXED);
	shp_stalls_sum(&w->stalls, rte_get_tsc_hz(), out);
	out->runq_wait_ns = out->cpu_slices = out->steal_ns = 0;
	if (__atomic_load_n(&w->lost_valid, __ATOMIC_ACQUIRE)) {
		struct shp_cpu_lost now, d;

		shp_cpu_lost_read(w->tid, w->cpu, &now);
		shp_cpu_lost_since(&w->lost0, &now, &d);
		out->runq_wait_ns = d.wait_ns;
		out->cpu_slices = d.slices;
		out->steal_ns = d.steal_ns;
	}
}

/* Say when a worker lost its CPU: the lateness it caused is the host's,
 * not the profile's nor the load's. Over 1 ms each: a tenth of one is
 * precision enough. */
static void
stall_note(struct shaper *s, FILE *f)
{
	unsigned int i;

	for (i = 0; i < s->nb_workers; i++) {
		struct shp_stall_sum st;

		shaper_worker_stalls(&s->workers[s->worker_ids[i]], &st);
		if (st.stalls == 0)
			continue;
		fprintf(f, "note: lcore %u stopped working %" PRIu64
			" time%s for over 1ms (longest %.1fms, %.1fms in all): "
			"its CPU was taken away (the host, the kernel, a "
			"signal); what fell due meanwhile was shed as `late`, "
			"or left up to that late\n",
			st.lcore, st.stalls, st.stalls == 1 ? "" : "s",
			st.longest_ns / 1e6, st.stalled_ns / 1e6);
	}
}

/* Say plainly when the emulator, not the profile, was the bottleneck, and
 * what each worker measured it could carry (lib/core/shp_egress.h). */
static void
overload_note(struct shaper *s, FILE *f, uint64_t n)
{
	unsigned int i;

	fprintf(f, "note: %" PRIu64 " packets were dropped as `overload`: "
		"more arrived than the emulator could carry on time\n", n);
	for (i = 0; i < s->nb_workers; i++) {
		const struct worker *w = &s->workers[s->worker_ids[i]];
		double rx = w->admit.rx.ns / (double)(1 << SHP_COST_SHIFT);
		/* a TX-only lcore: what its RX lcores paced at */
		double tx = (w->rx ? w->admit.tx.ns : w->tx_cost_pub) /
			    (double)(1 << SHP_COST_SHIFT);

		if (rx == 0 && tx == 0)
			continue;
		fprintf(f, "  lcore %u measured %.1f ns to admit and %.1f ns "
			"to release a packet", w->lcore, rx, tx);
		if (w->rx && w->tx && rx + tx > 0)
			fprintf(f, ": about %.2f Mpps", 1e3 / (rx + tx));
		fprintf(f, "\n");
	}
}

/* Each kind's own statistics, one line per kind: "  netem: queued 0
 * duplicated 3 ..." (only kinds with statistics). */
void
shaper_xstats_print(FILE *f, const struct shp_port_ctr *c)
{
	const struct shp_kind *k = NULL;
	unsigned int d;

	for (d = 0; d < shp_xstat_nb(); d++) {
		if (shp_xstat_kind(d) != k) {
			k = shp_xstat_kind(d);
			fprintf(f, "%s  %s:", d ? "\n" : "", k->name);
		}
		fprintf(f, " %s %" PRIu64, shp_xstat_desc(d)->name,
			c->xstats[d]);
	}
	if (d > 0)
		fprintf(f, "\n");
}

/* --queues: each shard's share of the port, where one fell behind */
static void
shards_print(struct shaper *s, uint16_t port, FILE *f)
{
	unsigned int q;

	for (q = 0; shaper_queues(s) > 1 && q < shaper_queues(s); q++) {
		struct shp_port_sum sum;

		shaper_shard_sum(s, port, q, &sum);
		fprintf(f, "  shard %u: lcore %u tx %" PRIu64 " pkts %" PRIu64
			" bytes, queued %" PRIu64 ", dropped %" PRIu64
			", sojourn p99 %" PRIu64 " ns\n", q,
			shaper_shard_lcore(s, port, q), sum.c.tx_packets,
			sum.c.tx_bytes, sum.queued, sum.dropped,
			sum.sojourn.p99);
	}
}

void
shaper_stats_print(struct shaper *s, FILE *f)
{
	struct shp_latency *lat = malloc(sizeof(*lat));
	unsigned int i, b, d;
	uint64_t overload = 0, late = 0;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t port = s->port_ids[i];
		struct shp_port_sum sum;
		const struct shp_port_ctr *c = &sum.c;

		shaper_stats_port(s, port, &sum);
		fprintf(f, "port %u: rx %" PRIu64 " pkts %" PRIu64 " bytes, "
			"tx %" PRIu64 " pkts %" PRIu64 " bytes, queued %" PRIu64
			", dropped %" PRIu64 "\n", port, c->rx_packets,
			c->rx_bytes, c->tx_packets, c->tx_bytes, sum.queued,
			sum.dropped);
		for (b = 0; b < sum.nb_bands; b++)
			fprintf(f, "  band %u: enqueued %" PRIu64 " dequeued %"
				PRIu64 " dropped %" PRIu64 " depth %" PRIu64
				"\n", b, c->band[b].enqueued,
				c->band[b].dequeued, sum.band_dropped[b],
				sum.band_depth[b]);
		fprintf(f, "  drops:");
		for (d = 0; d < shp_drop_nb(); d++)
			fprintf(f, " %s %" PRIu64, shp_drop_names[d],
				c->drops[d]);
		fprintf(f, "\n");
		shaper_xstats_print(f, c);
		fprintf(f, "  nic: imissed %" PRIu64 " ierrors %" PRIu64
			" rx_nombuf %" PRIu64 " oerrors %" PRIu64 "\n",
			sum.nic.imissed, sum.nic.ierrors, sum.nic.rx_nombuf,
			sum.nic.oerrors);
		if (lat != NULL) {
			shaper_stats_latency(s, port, lat);
			shp_latency_summarize(lat, &sum);
			shp_hist_summary_print(f, "  lateness_ns:", &sum.lateness);
			shp_hist_summary_print(f, "  sojourn_ns: ", &sum.sojourn);
		}
		shards_print(s, port, f);
		overload += c->drops[SHP_DROP_OVERLOAD];
		late += c->drops[SHP_DROP_LATE];
	}
	free(lat);
	if (overload > 0)
		overload_note(s, f, overload);
	if (late > 0) {
		char t[32], m[32];

		shp_fmt_time(t, sizeof(t), s->opt.late_drop_ns);
		shp_fmt_time(m, sizeof(m), s->opt.max_late_ns);
		if (s->opt.late_drop_ns == 0)
			fprintf(f, "note: %" PRIu64 " packets were shed as "
				"`late`: a backlog the emulator could not send "
				"within %s (--max-late) of their send time\n",
				late, m);
		else
			fprintf(f, "note: %" PRIu64 " packets were dropped as "
				"`late`: they would have left more than %s "
				"(--late-drop; a backlog: %s, --max-late) after "
				"their send time\n", late, t, m);
	}
	stall_note(s, f);
	shp_events_stats_print(f);
	fflush(f);
}

int
shaper_stats_write(struct shaper *s, const char *path)
{
	struct shp_port_sum sums[SHP_MAX_PORTS];
	struct shp_latency *lat = malloc(sizeof(*lat));
	struct shp_stall_sum *st = malloc(sizeof(*st) *
					  RTE_MAX(s->nb_workers, 1u));
	unsigned int i;
	FILE *f;

	if (lat == NULL || st == NULL) {
		free(lat);
		free(st);
		fprintf(stderr, "dpdk-shaper: --stats-file %s: %m\n", path);
		return -1;
	}
	for (i = 0; i < s->nb_ports; i++) {
		shaper_stats_port(s, s->port_ids[i], &sums[i]);
		sums[i].nic_xstats_json = nic_xstats_json(s->port_ids[i]);
		shaper_stats_latency(s, s->port_ids[i], lat);
		shp_latency_summarize(lat, &sums[i]);
	}
	free(lat);
	for (i = 0; i < s->nb_workers; i++)
		shaper_worker_stalls(&s->workers[s->worker_ids[i]], &st[i]);
	f = fopen(path, "w");
	if (f == NULL) {
		fprintf(stderr, "dpdk-shaper: --stats-file %s: %m\n", path);
		for (i = 0; i < s->nb_ports; i++)
			free(sums[i].nic_xstats_json);
		free(st);
		return -1;
	}
	shp_stats_write_json(f, sums, s->port_ids, s->nb_ports, s->opt.bands,
			     s->stop_ns > s->start_ns ?
			     (s->stop_ns - s->start_ns) / 1e9 : 0, st,
			     s->nb_workers);
	for (i = 0; i < s->nb_ports; i++)
		free(sums[i].nic_xstats_json);
	free(st);
	if (fclose(f) != 0) {
		fprintf(stderr, "dpdk-shaper: --stats-file %s: %m\n", path);
		return -1;
	}
	return 0;
}

/* The end of a run in a few lines: the profile each egress port applied,
 * how long forwarding ran, the rates achieved in and out. */
void
shaper_summary_print(struct shaper *s, FILE *f)
{
	struct ctl_config *cfg = malloc(sizeof(*cfg));
	double secs = s->stop_ns > s->start_ns ?
		      (s->stop_ns - s->start_ns) / 1e9 : 0;
	unsigned int i, k;

	if (cfg == NULL)
		return;
	ctl_config_snapshot(cfg);
	fprintf(f, "summary: forwarding ran %.3f s; bands %u, classify %s, "
		"priomap %s\n", secs, cfg->bands, cfg->classify, cfg->priomap);
	for (i = 0; i < cfg->nb_ports; i++) {
		struct shp_port_sum sum;
		const struct shp_port_ctr *c = &sum.c;

		shaper_stats_port(s, cfg->port_ids[i], &sum);
		fprintf(f, "  port %u:", cfg->port_ids[i]);
		/* the gates, then the queue they take from */
		for (k = 1; k <= SHP_SLOT_MAX; k++)
			fprintf(f, "%s %s %s", k > 1 ? ";" : "",
				cfg->key[i][k % SHP_SLOT_MAX],
				cfg->stage[i][k % SHP_SLOT_MAX]);
		fprintf(f, "\n");
		fprintf(f, "    received %" PRIu64 " pkts %.3f Mbit/s, sent %"
			PRIu64 " pkts %.3f Mbit/s, dropped %" PRIu64 ", still "
			"queued %" PRIu64 "\n", c->rx_packets,
			secs > 0 ? c->rx_bytes * 8 / secs / 1e6 : 0,
			c->tx_packets,
			secs > 0 ? c->tx_bytes * 8 / secs / 1e6 : 0,
			sum.dropped, sum.queued);
	}
	free(cfg);
	fflush(f);
}
