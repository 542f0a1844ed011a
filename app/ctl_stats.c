/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The counters as the operator sees them (ctl_stats.h): since the last
 * `clear stats`, rates since the previous look, and the --stats-period
 * table. Apart from the change code (control.c): reading counters changes
 * nothing.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rte_cycles.h>
#include <rte_lcore.h>

#include "ctl_stats.h"

/* Guards `base`, `lat_base` and `lat_period`: written on the main lcore,
 * read by telemetry callbacks. The data plane never takes it. */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shp_port_sum base[SHP_MAX_PORTS];   /* `clear stats` */

struct rate_mark {
	uint64_t tsc;
	uint64_t rx_p, rx_b, tx_p, tx_b;
};
static struct rate_mark marks[CTL_RATE_SLOTS][SHP_MAX_PORTS];

/* Latency histograms (32 KiB a port, so on the heap): the `clear stats`
 * baseline, and what --stats-period showed last (its rows are per
 * period). Same lock as `base`. */
static struct shp_latency *lat_base[SHP_MAX_PORTS];
/* the same for each shard of a port spread over several (--queues) */
static struct shp_port_sum shard_base[SHP_MAX_PORTS][SHP_MAX_QUEUES];
static struct shp_latency *shard_lat_base[SHP_MAX_PORTS][SHP_MAX_QUEUES];
static struct shp_latency *lat_period[SHP_MAX_PORTS];

static uint64_t periodic_dropped[SHP_MAX_PORTS];   /* at the last table */

void
ctl_stats_init(uint64_t now)
{
	unsigned int i;

	for (i = 0; i < CTL_RATE_SLOTS; i++)
		for (unsigned int p = 0; p < SHP_MAX_PORTS; p++)
			marks[i][p].tsc = now;
}

void
ctl_stats_fini(void)
{
	unsigned int i, k;

	for (i = 0; i < SHP_MAX_PORTS; i++) {
		free(lat_base[i]);
		for (k = 0; k < SHP_MAX_QUEUES; k++) {
			free(shard_lat_base[i][k]);
			shard_lat_base[i][k] = NULL;
		}
		free(lat_period[i]);
		lat_base[i] = lat_period[i] = NULL;
	}
}

const char *
ctl_si(double v, char *buf, size_t len)
{
	static const char *const unit[] = { "", "k", "M", "G", "T" };
	unsigned int u = 0;

	while (v >= 1000.0 && u + 1 < RTE_DIM(unit)) {
		v /= 1000.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.2f%s", v, unit[u]);
	return buf;
}

/* `clear stats` for every shard: its counters and histograms now. */
static void
shards_clear(struct shaper *s, const struct shp_lcore_ctr *blocks)
{
	unsigned int i, q;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		for (q = 0; q < shaper_queues(s); q++) {
			const struct shp_latency *l =
				shaper_shard_latency(s, p, q);
			struct shp_latency *copy = NULL, *old;
			struct shp_port_sum now;

			shp_stats_sum_shard(SHAPER_SHARD_BLOCK(blocks, q),
					    SHAPER_SHARD_BLOCKS, p, (int)q,
					    shaper_bands(s, p), &now);
			if (l != NULL && (copy = malloc(sizeof(*copy))) != NULL)
				*copy = *l;
			pthread_mutex_lock(&ctl_lock);
			shard_base[p][q] = now;
			old = shard_lat_base[p][q];
			/* no memory: latency keeps counting from the
			 * previous clear, as the port's */
			if (copy != NULL)
				shard_lat_base[p][q] = copy;
			pthread_mutex_unlock(&ctl_lock);
			if (copy != NULL)
				free(old);
		}
	}
}

void
ctl_shard_sum(struct shaper *s, uint16_t port, unsigned int q,
	      struct shp_port_sum *sum)
{
	const struct shp_latency *l;
	struct shp_latency *lat;

	if (shaper_queues(s) <= 1) {
		/* the shard is the port */
		ctl_port_sum(s, port, sum);
		lat = malloc(sizeof(*lat));
		if (lat != NULL) {
			ctl_port_latency(s, port, lat);
			shp_latency_summarize(lat, sum);
		}
		free(lat);
		return;
	}
	shaper_shard_counters(s, port, q, sum);
	l = shaper_shard_latency(s, port, q);
	lat = l != NULL ? malloc(sizeof(*lat)) : NULL;
	if (lat != NULL)
		*lat = *l;
	pthread_mutex_lock(&ctl_lock);
	shp_stats_sub(sum, &shard_base[port][q], sum->nb_bands);
	if (lat != NULL && shard_lat_base[port][q] != NULL) {
		shp_hist_sub(&lat->lateness,
			     &shard_lat_base[port][q]->lateness);
		shp_hist_sub(&lat->sojourn, &shard_lat_base[port][q]->sojourn);
	}
	pthread_mutex_unlock(&ctl_lock);
	if (lat != NULL)
		shp_latency_summarize(lat, sum);
	free(lat);
}

void
ctl_clear_stats(struct shaper *s)
{
	struct shp_port_sum now[SHP_MAX_PORTS];
	struct shp_latency *lat[SHP_MAX_PORTS];
	uint64_t tsc = rte_get_timer_cycles();
	unsigned int i, k;
	/* one copy of the counters that the port's and its shards' bases
	 * both come from, so that the shards still sum to the port exactly
	 * after the clear while packets move (no memory: read twice, they
	 * may differ by what moved in between) */
	struct shp_lcore_ctr *snap = malloc(SHAPER_CTR_BLOCKS * sizeof(*snap));
	const struct shp_lcore_ctr *blocks = snap != NULL ? snap : s->ctr;

	if (snap != NULL)
		memcpy(snap, s->ctr, SHAPER_CTR_BLOCKS * sizeof(*snap));
	for (i = 0; i < s->nb_ports; i++) {
		shaper_stats_port_of(s, blocks, s->port_ids[i], &now[i]);
		lat[i] = malloc(sizeof(*lat[i]));
		if (lat[i] != NULL)
			shaper_stats_latency(s, s->port_ids[i], lat[i]);
	}
	pthread_mutex_lock(&ctl_lock);
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		struct shp_latency *old = lat_base[p];

		base[p] = now[i];
		/* no memory: latency keeps counting from the previous clear */
		lat_base[p] = lat[i] != NULL ? lat[i] : old;
		lat[i] = lat[i] != NULL ? old : NULL;
		/* the next periodic row starts from the clear */
		free(lat_period[p]);
		lat_period[p] = NULL;
	}
	pthread_mutex_unlock(&ctl_lock);
	if (shaper_queues(s) > 1)
		shards_clear(s, blocks);
	free(snap);
	for (i = 0; i < s->nb_ports; i++)
		shp_classes_clear(s->port_ids[i]);
	for (i = 0; i < s->nb_ports; i++)
		free(lat[i]);
	for (k = 0; k < CTL_RATE_SLOTS; k++)
		for (i = 0; i < SHP_MAX_PORTS; i++)
			marks[k][i] = (struct rate_mark){ .tsc = tsc };
	memset(periodic_dropped, 0, sizeof(periodic_dropped));
}

void
ctl_port_sum(struct shaper *s, uint16_t port, struct shp_port_sum *sum)
{
	shaper_stats_port(s, port, sum);
	pthread_mutex_lock(&ctl_lock);
	shp_stats_sub(sum, &base[port], sum->nb_bands);
	pthread_mutex_unlock(&ctl_lock);
}

void
ctl_port_latency(struct shaper *s, uint16_t port, struct shp_latency *out)
{
	shaper_stats_latency(s, port, out);
	pthread_mutex_lock(&ctl_lock);
	if (lat_base[port] != NULL) {
		shp_hist_sub(&out->lateness, &lat_base[port]->lateness);
		shp_hist_sub(&out->sojourn, &lat_base[port]->sojourn);
	}
	pthread_mutex_unlock(&ctl_lock);
}

const char *
ctl_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2fms", ns / 1e6);
	else
		snprintf(buf, len, "%.2fs", ns / 1e9);
	return buf;
}

/* p99.9 of lateness and sojourn over the packets sent since the previous
 * row (since start or `clear stats` for the first); "-" when none. */
static void
period_p999(struct shaper *s, uint16_t p, char *late, char *soj, size_t len)
{
	struct shp_latency *cur = malloc(sizeof(*cur));
	struct shp_latency *d = malloc(sizeof(*d));
	struct shp_port_sum sum;

	snprintf(late, len, "-");
	snprintf(soj, len, "-");
	if (cur == NULL || d == NULL) {
		free(cur);
		free(d);
		return;
	}
	ctl_port_latency(s, p, cur);
	*d = *cur;
	pthread_mutex_lock(&ctl_lock);
	if (lat_period[p] != NULL) {
		shp_hist_sub(&d->lateness, &lat_period[p]->lateness);
		shp_hist_sub(&d->sojourn, &lat_period[p]->sojourn);
	}
	free(lat_period[p]);
	lat_period[p] = cur;
	pthread_mutex_unlock(&ctl_lock);
	shp_latency_summarize(d, &sum);
	if (sum.lateness.count > 0)
		ctl_ns(sum.lateness.p999, late, len);
	if (sum.sojourn.count > 0)
		ctl_ns(sum.sojourn.p999, soj, len);
	free(d);
}

void
ctl_port_rate(struct shaper *s, int slot, uint16_t port,
	      const struct shp_port_sum *sum, struct ctl_rate *r)
{
	struct rate_mark *m = &marks[slot][port];
	uint64_t tsc = rte_get_timer_cycles();
	double secs = (double)(tsc - m->tsc) / rte_get_timer_hz();
	const struct shp_port_ctr *c = &sum->c;

	memset(r, 0, sizeof(*r));
	r->secs = secs;
	if (secs > 0) {
		/* Counters read at slightly different moments (or a clear)
		 * can step back: no negative rate. */
#define RATE(now, was) ((now) > (was) ? (double)((now) - (was)) / secs : 0)
		r->rx_pps = RATE(c->rx_packets, m->rx_p);
		r->rx_bps = RATE(c->rx_bytes, m->rx_b) * 8;
		r->tx_pps = RATE(c->tx_packets, m->tx_p);
		r->tx_bps = RATE(c->tx_bytes, m->tx_b) * 8;
#undef RATE
	}
	*m = (struct rate_mark){ .tsc = tsc, .rx_p = c->rx_packets,
				 .rx_b = c->rx_bytes, .tx_p = c->tx_packets,
				 .tx_b = c->tx_bytes };
	(void)s;
}

/* Under the table, a line for each worker that lost its CPU in this
 * period (lib/core/shp_stall.h): a late-p99.9 spike next to it is the host's. */
static void
periodic_stalls(struct shaper *s, FILE *f)
{
	static uint64_t was[RTE_MAX_LCORE], was_ns[RTE_MAX_LCORE];
	unsigned int i;

	for (i = 0; i < s->nb_workers; i++) {
		const struct worker *w = &s->workers[s->worker_ids[i]];
		struct shp_stall_sum st;

		shaper_worker_stalls(w, &st);
		if (st.stalls > was[w->lcore])
			fprintf(f, "lcore %u: stopped %" PRIu64 " time%s for "
				"over 1ms in this period, %.1fms in all (its "
				"CPU was taken away)\n", w->lcore,
				st.stalls - was[w->lcore],
				st.stalls - was[w->lcore] == 1 ? "" : "s",
				(st.stalled_ns - was_ns[w->lcore]) / 1e6);
		was[w->lcore] = st.stalls;
		was_ns[w->lcore] = st.stalled_ns;
	}
}

void
ctl_print_periodic(struct shaper *s, FILE *f)
{
	unsigned int i, b;
	char a[16], bb[16], c[16], d[16], when[32];
	time_t t = time(NULL);
	struct tm tm;

	/* when, and for how long: a table alone in a log says neither */
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	fprintf(f, "%s, forwarding for %.1f s\n", when,
		(double)(shp_clock_now(&s->clock) - s->start_ns) / 1e9);
	fprintf(f, "%-4s %9s %9s %9s %9s %8s %-20s %10s %10s %10s %10s\n",
		"port", "rx-pps", "rx-bit/s", "tx-pps", "tx-bit/s", "queued",
		"band depths", "dropped", "+dropped", "late-p99.9",
		"soj-p99.9");
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		struct shp_port_sum sum;
		struct ctl_rate r;
		char depths[64], late[16], soj[16];
		size_t off = 0;

		ctl_port_sum(s, p, &sum);
		period_p999(s, p, late, soj, sizeof(late));
		ctl_port_rate(s, CTL_RATE_PERIODIC, p, &sum, &r);
		depths[0] = '\0';
		for (b = 0; b < sum.nb_bands && off < sizeof(depths); b++)
			off += snprintf(depths + off, sizeof(depths) - off,
					"%s%" PRIu64, b ? "/" : "",
					sum.band_depth[b]);
		/* +dropped: in this period (since the previous table) */
		fprintf(f, "%-4u %9s %9s %9s %9s %8" PRIu64 " %-20s %10" PRIu64
			" %10" PRIu64 " %10s %10s\n", p,
			ctl_si(r.rx_pps, a, sizeof(a)),
			ctl_si(r.rx_bps, bb, sizeof(bb)),
			ctl_si(r.tx_pps, c, sizeof(c)),
			ctl_si(r.tx_bps, d, sizeof(d)), sum.queued, depths,
			sum.dropped, sum.dropped > periodic_dropped[p] ?
			sum.dropped - periodic_dropped[p] : 0, late, soj);
		periodic_dropped[p] = sum.dropped;
	}
	periodic_stalls(s, f);
	fflush(f);
}
