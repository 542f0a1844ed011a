/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-replay's report: the delay samples and latency histograms
 * filled while the run goes, the summary printed at the end (profile,
 * counters, delays, classes, the conservation check and the notes that
 * explain a surprising result) and --stats-file. Kept apart from the run
 * (replay.c) so that reading how the clock advances does not mean
 * reading how its results are printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify.h"
#include "config.h"
#include "shp_meta.h"
#include "shp_qdisc.h"
#include "shp_stats.h"

#include "replay.h"


int
dstat_push(struct dstat *d, uint64_t v)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 65536;
		uint64_t *p = realloc(d->v, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		d->v = p;
		d->cap = cap;
	}
	if (d->n == 0 || v < d->min)
		d->min = v;
	if (v > d->max)
		d->max = v;
	d->sum += v;
	d->v[d->n++] = v;
	return 0;
}

/*
 * Lateness and sojourn as the live shaper reports them (shp_latency), per
 * shard as the program keeps them per TX lcore (r->lat, hung on each
 * shard's counter block), the port's their sum. On the virtual clock
 * lateness is 0 by construction: the clock stops at every send time the
 * stages announce. It is measured anyway, so that a stage announcing the
 * wrong time shows here.
 */
void
latency_record(const struct replay *r, unsigned int shard,
	       const struct shp_meta *meta)
{
	uint64_t soj = r->now - meta->rx_ns, tts = meta->time_to_send;

	shp_latency_record_tx(&r->lat[shard], &soj, &tts, 1, r->now);
}

/* The port's distributions: the sum of its shards'. */
static void
port_latency(const struct replay *r, struct shp_port_sum *s)
{
	struct shp_latency l;

	shp_stats_latency(r->ctr, r->queues, 0, &l);
	shp_latency_summarize(&l, s);
}

static unsigned int
port_bands(const struct replay *r)
{
	return r->chain[0].bands != 0 ? r->chain[0].bands : r->opt.bands;
}

/* Shard q's own figures: its counter block and its distributions. */
static void
shard_sum(const struct replay *r, unsigned int q, struct shp_port_sum *s)
{
	shp_stats_sum_shard(&r->ctr[q], 1, 0, (int)q, port_bands(r), s);
	shp_latency_summarize(&r->lat[q], s);
}

static void
latency_summary(const struct replay *r, FILE *f)
{
	struct shp_port_sum s;

	port_latency(r, &s);
	shp_hist_summary_print(f, "lateness_ns: ", &s.lateness);
	fprintf(f, "              (0 by construction offline: the virtual "
		"clock stops at every send time)\n");
	shp_hist_summary_print(f, "sojourn_ns:  ", &s.sojourn);
}

/* ----------------------------------------------------------- summary */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank, on sorted values. */
static uint64_t
percentile(const uint64_t *v, size_t n, unsigned int pct)
{
	size_t rank = (n * pct + 99) / 100;

	return v[rank > 0 ? rank - 1 : 0];
}

static void
fmt_ms(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "%" PRIu64 ".%06" PRIu64 " ms", ns / 1000000,
		 ns % 1000000);
}

/* "min A, mean B, p50 C, p99 D, max E" (ms) */
static void
print_dstat(FILE *f, const char *label, struct dstat *d, const char *tail)
{
	char mn[32], mean[32], p50[32], p99[32], mx[32];

	if (d->n == 0) {
		fprintf(f, "%-14snone (no packet left)\n", label);
		return;
	}
	qsort(d->v, d->n, sizeof(*d->v), cmp_u64);
	fmt_ms(mn, sizeof(mn), d->min);
	fmt_ms(mean, sizeof(mean), d->sum / d->n);
	fmt_ms(p50, sizeof(p50), percentile(d->v, d->n, 50));
	fmt_ms(p99, sizeof(p99), percentile(d->v, d->n, 99));
	fmt_ms(mx, sizeof(mx), d->max);
	fprintf(f, "%-14smin %s, mean %s, p50 %s, p99 %s, max %s%s\n", label,
		mn, mean, p50, p99, mx, tail);
}

/* bits over a span of virtual time, or why there is no rate */
static void
print_rate(FILE *f, uint64_t pkts, uint64_t bytes, uint64_t first,
	   uint64_t last)
{
	if (pkts < 2 || last <= first)
		fprintf(f, ", rate n/a (%s)\n", pkts < 2 ? "fewer than 2 "
			"packets" : "all at one instant");
	else
		fprintf(f, ", %.3f Mbit/s\n", (double)bytes * 8e3 /
			(double)(last - first));
}

/* The profile each port gets: port 0 as applied (the stages' own
 * printers, defaults included), any other port named by the options as
 * not applied. */
static void
print_profile(struct replay *r, FILE *f)
{
	const struct shp_options *o = &r->opt;
	unsigned int p, s, k;
	bool others = false, applied = false;

	fprintf(f, "profile:      port 0: bands %u, classify %s",
		r->chain[0].bands != 0 ? r->chain[0].bands : o->bands,
		shp_classify_mode_name(o->classify));
	for (s = 0; s < SHP_SLOT_MAX; s++) {
		const struct shp_qdisc *q = r->chain[0].stage[s];

		fprintf(f, "; %s ", shp_kind_key(r->chain[0].kind[s]));
		if (s == SHP_SLOT_QUEUE)
			fprintf(f, "%s ", r->chain[0].kind[s]->name);
		q->ops->dump(q, f);
		applied |= s != SHP_SLOT_QUEUE && r->chain[0].conf[s] != NULL;
	}
	fprintf(f, "\n");
	if (r->queues > 1)
		fprintf(f, "shards:       %u, flows spread as RSS would (the "
			"default Toeplitz key, a 128-entry table); each its "
			"own queue and delay line, one tbf rate for the "
			"link\n", r->queues);
	if (r->queues > 1) {
		struct shp_chain_spec sp;
		char note[768];

		memcpy(sp.kind, r->chain[0].kind, sizeof(sp.kind));
		memcpy(sp.conf, r->chain[0].conf, sizeof(sp.conf));
		if (shp_classes_link_note(&sp, r->opt.classes, 0, note,
					  sizeof(note)) > 0)
			fprintf(f, "not exact:    the profile is the link's "
				"but for %s (docs/usage.md, Shards)\n", note);
	}
	if (r->sched_on)
		fprintf(f, "schedule:     %s: %u line%s%s, %" PRIu64 " change%s "
			"applied\n", r->sched.path, r->sched.nb_lines,
			r->sched.nb_lines == 1 ? "" : "s",
			r->sched.repeat ? ", repeated" : "", r->sched_applied,
			r->sched_applied == 1 ? "" : "s");
	for (p = 1; p < SHP_MAX_PORTS; p++) {
		bool any = false;

		for (k = 0; k < shp_key_nb(); k++) {
			const char *t = o->cli.port[k][p] ? o->cli.port[k][p] :
					o->file.port[k][p];

			if (t == NULL)
				continue;
			if (!any)
				fprintf(f, "profile:      port %u: NOT APPLIED "
					"(this tool is egress port 0):", p);
			any = others = true;
			fprintf(f, " %s %s", shp_key_name(k), t);
		}
		if (any)
			fprintf(f, "\n");
	}
	if (others && !applied)
		fprintf(f, "note: nothing was applied: the profile names other "
			"ports, not port 0 (write it under [port 0], or use "
			"--tbf/--netem)\n");
}

/*
 * Port 0's chain as `tc qdisc show` names it, root first (the live
 * program's `show qdisc` heads, without counters): "qdisc:  KIND H: root
 * PARAMS", its children on lines of their own under it, each kind's
 * tc_print (shp_kind.h) given its stage's text.
 */
static void
print_qdiscs(struct replay *r, FILE *f)
{
	const struct shp_chain *c = &r->chain[0];
	struct shp_kind_env env;
	unsigned int s, h = 0, parent = 0;

	shp_options_kind_env(&r->opt, &env);
	for (s = SHP_SLOT_DELAY + 1; s-- > 0;) {
		const struct shp_kind *k = c->kind[s];
		const char *kind = k->name, *args;
		char text[1024], tc[1024];
		size_t nl = strlen(k->name);
		FILE *m;

		h++;
		if (s != SHP_SLOT_QUEUE && c->conf[s] == NULL)
			continue;
		m = fmemopen(text, sizeof(text), "w");
		if (m == NULL)
			continue;
		c->stage[s]->ops->dump(c->stage[s], m);
		fclose(m);
		text[sizeof(text) - 1] = '\0';
		args = text;
		if (s == SHP_SLOT_QUEUE && strncmp(args, k->name, nl) == 0)
			args += nl + (args[nl] == ' ');
		if (k->tc_print != NULL)
			k->tc_print(args, &env, &kind, tc, sizeof(tc));
		else
			snprintf(tc, sizeof(tc), "%s", args);
		/* one label for the block: its children indented */
		if (parent == 0)
			fprintf(f, "qdisc:        %s %u: root %s\n", kind, h, tc);
		else
			fprintf(f, "              %s %u: parent %u:1 %s\n", kind,
				h, parent, tc);
		parent = h;
	}
}

/* One line per class: its profile, then what it passed and dropped. */
static void
class_summary(struct replay *r, FILE *f)
{
	unsigned int i, n = shp_classes_nb(0);
	uint64_t span = r->started ? r->now - r->first_ts : 0;
	int d;

	for (i = 0; r->opt.classes != NULL && i < r->opt.classes->nb; i++)
		shp_class_describe(r->opt.classes, i, f);
	if (r->opt.classes != NULL && r->opt.classes->nb > 0)
		fprintf(f, "memory:       %s MB of DPDK's heap, sized for the "
			"stages; %u class netems got a time calendar, %u held "
			"packets without one (no room)\n", r->eal_mb,
			r->calendars, r->cal_denied);
	for (i = 0; i < n; i++) {
		struct shp_class_sum s;
		char mn[32], avg[32], mx[32];
		const char *sep = " (";

		shp_classes_sum(0, i, &s);
		fmt_ms(mn, sizeof(mn), s.sojourn.min);
		fmt_ms(avg, sizeof(avg), shp_class_sojourn_avg(&s));
		fmt_ms(mx, sizeof(mx), s.sojourn.max);
		fprintf(f, "class %s: in %" PRIu64 " packets, out %" PRIu64
			" packets, %" PRIu64 " bytes", s.name, s.in_packets,
			s.out_packets, s.out_bytes);
		if (span > 0)
			fprintf(f, " (%.3f Mbit/s over the run)",
				(double)s.out_bytes * 8e3 / (double)span);
		fprintf(f, ", dropped %" PRIu64, s.dropped);
		for (d = 0; d < (int)shp_drop_nb(); d++)
			if (s.drops[d] != 0) {
				fprintf(f, "%s%s %" PRIu64, sep,
					shp_drop_names[d], s.drops[d]);
				sep = ", ";
			}
		if (sep[0] == ',')
			fprintf(f, ")");
		fprintf(f, ", delay to the port's stages min %s, mean %s, "
			"max %s\n", mn, avg, mx);
	}
}

/*
 * With more than one shard, a line each: what it was given and sent,
 * what it dropped and holds, and its sojourn, so that an imbalance
 * shows. (One shard is the port: its figures are above.)
 */
static void
shard_summary(const struct replay *r, FILE *f)
{
	unsigned int q;
	int d;

	for (q = 0; r->queues > 1 && q < r->queues; q++) {
		struct shp_port_sum s;
		const char *sep = " (";

		shard_sum(r, q, &s);
		fprintf(f, "shard %u:      in %" PRIu64 " packets, out %" PRIu64
			" packets, %" PRIu64 " bytes, dropped %" PRIu64, q,
			s.c.rx_packets, s.c.tx_packets, s.c.tx_bytes,
			s.dropped);
		for (d = 0; d < (int)shp_drop_nb(); d++)
			if (s.c.drops[d] != 0) {
				fprintf(f, "%s%s %" PRIu64, sep,
					shp_drop_names[d], s.c.drops[d]);
				sep = ", ";
			}
		if (sep[0] == ',')
			fprintf(f, ")");
		fprintf(f, ", queued %" PRIu64 ", sojourn p50 %" PRIu64
			" p99 %" PRIu64 " max %" PRIu64 " ns\n", s.queued,
			s.sojourn.p50, s.sojourn.p99, s.sojourn.max);
	}
}

/* --stats-file's ports.0.shards: one object per shard, their figures
 * summing to the port's. Offline no lcore runs a shard: lcore null. */
static const struct replay *shards_of;
static bool shards_registered;

static void
add_nothing(uint16_t port, int shard, struct shp_port_ctr *s)
{
	RTE_SET_USED(port);
	RTE_SET_USED(shard);
	RTE_SET_USED(s);
}

static void
shards_json(FILE *f, uint16_t port)
{
	unsigned int q;

	if (shards_of == NULL || port != 0)
		return;
	replay_trace_json(shards_of, f);
	fprintf(f, ",\n    \"shards\": [");
	for (q = 0; q < shards_of->queues; q++) {
		struct shp_port_sum s;

		shard_sum(shards_of, q, &s);
		fprintf(f, "%s", q ? ",\n               " : "");
		shp_stats_write_shard_json(f, &s, q, -1);
	}
	fprintf(f, "]");
}

static const struct shp_stats_source shards_source = {
	.add_port = add_nothing,
	.json = shards_json,
};

/* Prints the summary; returns whether the counters add up. */
bool
summary(struct replay *r, FILE *f)
{
	const struct shp_port_ctr *c;
	struct shp_run_facts run;
	uint64_t dropped = 0, queued, span, offered;
	struct shp_port_sum sum;
	bool ok, first = true;
	unsigned int sl;
	int d;

	/* the port's and its classes' (shp_stats_sum adds theirs), summed
	 * over its shards */
	shp_stats_sum(r->ctr, r->queues, 0, port_bands(r), &sum);
	c = &sum.c;
	for (d = 0; d < (int)shp_drop_nb(); d++)
		dropped += c->drops[d];
	queued = 0;
	for (sl = 0; sl < r->queues; sl++)
		if (r->chain[sl].root != NULL)
			queued += shp_qdisc_qlen_total(r->chain[sl].root);
	span = r->started ? r->now - r->first_ts : 0;
	if (interrupted && r->out_stdout)
		fprintf(f, "interrupted: summary of the first %" PRIu64
			" packets; the capture on standard output is cut "
			"short\n", r->in_pkts);
	else if (interrupted)
		fprintf(f, "interrupted: summary of the first %" PRIu64
			" packets; %s not written\n", r->in_pkts, r->out_path);
	fprintf(f, "%s -> %s: %" PRIu64 ".%09" PRIu64 " s of virtual time\n",
		r->in_path, r->out_path, span / REPLAY_NS_PER_S,
		span % REPLAY_NS_PER_S);
	print_profile(r, f);
	print_qdiscs(r, f);
	fprintf(f, "in:           %" PRIu64 " packets, %" PRIu64 " bytes",
		r->in_pkts, r->in_bytes);
	print_rate(f, r->in_pkts, r->in_bytes, r->first_ts, r->last_ts);
	fprintf(f, "out:          %" PRIu64 " packets, %" PRIu64 " bytes",
		r->out_pkts, r->out_bytes);
	print_rate(f, r->out_pkts, r->out_bytes, r->first_out, r->last_out);
	fprintf(f, "drops:        %" PRIu64 " (", dropped);
	for (d = 0; d < (int)shp_drop_nb(); d++)
		fprintf(f, "%s%s %" PRIu64, d ? ", " : "", shp_drop_names[d],
			c->drops[d]);
	fprintf(f, ")\n");
	/* of what was offered: the input and netem's copies */
	offered = r->in_pkts + sum.created;
	fprintf(f, "loss:         %.2f%%", offered ?
		100.0 * (double)dropped / (double)offered : 0.0);
	for (d = 0; d < (int)shp_drop_nb(); d++) {
		if (c->drops[d] == 0)
			continue;
		fprintf(f, "%s%s %.2f%%", first ? " (" : ", ",
			shp_drop_names[d],
			100.0 * (double)c->drops[d] / (double)offered);
		first = false;
	}
	fprintf(f, "%s\n", first ? "" : ")");
	/* the counters of the kinds in the chain (not their gauges) */
	for (d = 0; d < (int)shp_xstat_nb(); d++) {
		const struct shp_xstat_desc *x = shp_xstat_desc(d);
		char name[64];

		if ((x->flags & SHP_XS_GAUGE) ||
		    shp_chain_find(&r->chain[0], shp_xstat_kind(d)) == NULL)
			continue;
		/* a kind's own name is not unique (fq_codel and netem both
		 * have ecn_marked): KIND_NAME, as telemetry, unless the
		 * counter has its older top-level name */
		if (x->alias != NULL)
			snprintf(name, sizeof(name), "%s:", x->alias);
		else
			snprintf(name, sizeof(name), "%s_%s:",
				 shp_xstat_kind(d)->name, x->name);
		fprintf(f, "%-13s %" PRIu64 "\n", name, c->xstats[d]);
	}
	fprintf(f, "out_of_order: %" PRIu64 "\n", r->out_of_order);
	print_dstat(f, "delay:", &r->delay, "");
	print_dstat(f, "queueing:", &r->queueing, " (bands + tbf)");
	print_dstat(f, "netem:", &r->netem_delay, " (netem delay)");
	latency_summary(r, f);
	shard_summary(r, f);
	class_summary(r, f);
	ok = r->in_pkts + sum.created == r->out_pkts + dropped + queued;
	fprintf(f, "conservation: in %" PRIu64 " + duplicated %" PRIu64
		" = out %" PRIu64 " + drops %" PRIu64 " + queued %" PRIu64
		": %s\n", r->in_pkts, sum.created, r->out_pkts, dropped,
		queued, ok ? "ok" : "VIOLATED");
	if (r->backwards)
		fprintf(f, "note: %" PRIu64 " input timestamps went backwards "
			"(taken as arriving at the previous time)\n",
			r->backwards);
	if (r->snapped)
		fprintf(f, "note: %" PRIu64 " records were cut by the "
			"capture's snaplen (shaped at their captured length)\n",
			r->snapped);
	if (r->stuck && !interrupted)
		fprintf(f, "note: %" PRIu64 " packets could never leave "
			"(counted as flushed)\n", r->stuck);
	if (r->stuck && interrupted)
		fprintf(f, "note: %" PRIu64 " packets were still queued at "
			"the interruption (counted as flushed)\n", r->stuck);
	/* the kinds' advice, on the confs the chain runs now (a schedule
	 * may have replaced those it started with) */
	run = (struct shp_run_facts){ .drops = c->drops, .offered = offered,
				      .out_pkts = r->out_pkts,
				      .out_of_order = r->out_of_order,
				      .max_len = r->max_len };
	for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
		const struct shp_kind *k = r->chain[0].kind[sl];
		char note[1024];

		if (k != NULL && k->note != NULL &&
		    r->chain[0].conf[sl] != NULL &&
		    k->note(r->chain[0].conf[sl], &run, note, sizeof(note)) > 0)
			fputs(note, f);
	}
	if (r->saturated)
		fprintf(f, "note: %" PRIu64 " departures fell after the last "
			"time a pcap record can hold (2106-02-07 06:28:15 UTC) "
			"and were written with that time; the delays above "
			"are exact\n", r->saturated);
	if (r->stalls)
		fprintf(f, "note: clock anomalies: %" PRIu64 " stalls "
			"(please report)\n", r->stalls);
	return ok;
}

/* --stats-file: dpdk-shaper's JSON, this tool being its port 0 and the
 * elapsed time the capture's virtual time. Written whole or not at all. */
int
write_stats(struct replay *r)
{
	const char *path = r->opt.stats_file;
	struct shp_port_sum sum;
	uint16_t port = 0;
	char tmp[PATH_MAX];
	uint64_t span = r->started ? r->now - r->first_ts : 0;
	FILE *f;

	if (path == NULL)
		return 0;
	shp_stats_sum(r->ctr, r->queues, 0, port_bands(r), &sum);
	port_latency(r, &sum);
	/* the port's "shards" list, written as a stats source's member */
	shards_of = r;
	if (!shards_registered) {
		shp_stats_source_register(&shards_source);
		shards_registered = true;
	}
	snprintf(tmp, sizeof(tmp), "%s.partial-%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (f == NULL)
		return fail(EXIT_RUNTIME, "--stats-file %s: %s", path,
			    strerror(errno));
	shp_stats_write_json(f, &sum, &port, 1, r->opt.bands,
			     (double)span / 1e9, NULL, 0);
	if (ferror(f) | (fclose(f) != 0) || rename(tmp, path) < 0) {
		unlink(tmp);
		return fail(EXIT_RUNTIME, "--stats-file %s: cannot write it: "
			    "%s", path, strerror(errno));
	}
	return 0;
}
