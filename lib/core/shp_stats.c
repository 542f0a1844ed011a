/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <string.h>

#include "shp_kind.h"
#include "shp_stats.h"

/* Relaxed loads: the owner may be writing; each u64 load is whole. */
#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Written before main() (RTE_INIT), read only afterwards: no lock. */
static const struct shp_stats_source *sources[SHP_MAX_STATS_SOURCES];
static unsigned int nb_sources;

int
shp_stats_source_register(const struct shp_stats_source *src)
{
	if (nb_sources == SHP_MAX_STATS_SOURCES)
		return -1;
	sources[nb_sources++] = src;
	return 0;
}

uint64_t
shp_stats_delayed(const struct shp_port_ctr *c)
{
	unsigned int i, nb;
	const uint8_t *slot = shp_xstat_delayed(&nb);
	uint64_t n = 0;

	for (i = 0; i < nb; i++)
		n += c->xstats[slot[i]];
	return n;
}

void
shp_port_ctr_add_stages(struct shp_port_ctr *s, const struct shp_port_ctr *c,
			unsigned int nb_bands, bool gauges)
{
	unsigned int d, b;

	for (d = 0; d < SHP_DROP_SLOTS; d++)
		s->drops[d] += LD(c->drops[d]);
	for (d = 0; d < SHP_XSTAT_SLOTS; d++)
		s->xstats[d] = shp_xstat_combine(d, s->xstats[d],
						 LD(c->xstats[d]), gauges);
	for (b = 0; b < nb_bands; b++) {
		const struct shp_band_ctr *bc = &c->band[b];
		struct shp_band_ctr *bs = &s->band[b];

		bs->enqueued += LD(bc->enqueued);
		bs->enqueued_bytes += LD(bc->enqueued_bytes);
		bs->dequeued += LD(bc->dequeued);
		bs->dequeued_bytes += LD(bc->dequeued_bytes);
		bs->full += LD(bc->full);
		bs->pushed_out += LD(bc->pushed_out);
		bs->pushed_out_bytes += LD(bc->pushed_out_bytes);
		bs->flushed += LD(bc->flushed);
	}
}

void
shp_stats_sum(const struct shp_lcore_ctr *blocks, unsigned int n,
	      uint16_t port, unsigned int nb_bands, struct shp_port_sum *out)
{
	shp_stats_sum_shard(blocks, n, port, SHP_ALL_SHARDS, nb_bands, out);
}

void
shp_stats_sum_shard(const struct shp_lcore_ctr *blocks, unsigned int n,
		    uint16_t port, int shard, unsigned int nb_bands,
		    struct shp_port_sum *out)
{
	struct shp_port_ctr *s = &out->c;
	unsigned int l, b, d;

	memset(out, 0, sizeof(*out));
	out->nb_bands = nb_bands;
	for (l = 0; l < n; l++) {
		const struct shp_port_ctr *c = &blocks[l].port[port];

		s->rx_packets += LD(c->rx_packets);
		s->rx_bytes += LD(c->rx_bytes);
		s->rx_pool_empty += LD(c->rx_pool_empty);
		s->tx_packets += LD(c->tx_packets);
		s->tx_bytes += LD(c->tx_bytes);
		s->egress_in += LD(c->egress_in);
		s->tx_pending += LD(c->tx_pending);
		shp_port_ctr_add_stages(s, c, nb_bands, true);
	}
	/* what stages counted in blocks of their own (a class's) */
	for (l = 0; l < nb_sources; l++)
		sources[l]->add_port(port, shard, s);
	out->queued = s->tx_pending;
	for (d = 0; d < shp_xstat_nb(); d++) {
		unsigned int fl = shp_xstat_desc(d)->flags;

		if (fl & SHP_XS_QLEN)
			out->queued += s->xstats[d];
		if (fl & SHP_XS_CREATED)
			out->created += s->xstats[d];
	}
	for (b = 0; b < nb_bands; b++) {
		struct shp_band_ctr *bs = &s->band[b];
		uint64_t gone = bs->dequeued + bs->pushed_out + bs->flushed;

		/* Counters of different lcores are read at slightly
		 * different moments: never report a negative depth. */
		out->band_depth[b] = bs->enqueued > gone ?
			bs->enqueued - gone : 0;
		out->band_dropped[b] = bs->full + bs->pushed_out + bs->flushed;
		out->queued += out->band_depth[b];
	}
	out->egress_in = s->egress_in;
	for (d = 0; d < SHP_DROP_SLOTS; d++)
		out->dropped += s->drops[d];
}

void
shp_ctr_sub_causes(uint64_t *drops, uint64_t *xstats,
		   const uint64_t *base_drops, const uint64_t *base_xstats)
{
	unsigned int d;

	for (d = 0; d < SHP_DROP_SLOTS; d++)
		drops[d] -= base_drops[d];
	for (d = 0; d < shp_xstat_nb(); d++)
		if (!(shp_xstat_desc(d)->flags & SHP_XS_GAUGE))
			xstats[d] -= base_xstats[d];
}

void
shp_stats_sub(struct shp_port_sum *s, const struct shp_port_sum *base,
	      unsigned int nb_bands)
{
	struct shp_port_ctr *c = &s->c;
	const struct shp_port_ctr *o = &base->c;
	unsigned int b;

	c->rx_packets -= o->rx_packets;
	c->rx_bytes -= o->rx_bytes;
	c->rx_pool_empty -= o->rx_pool_empty;
	c->tx_packets -= o->tx_packets;
	c->tx_bytes -= o->tx_bytes;
	c->egress_in -= o->egress_in;
	shp_ctr_sub_causes(c->drops, c->xstats, o->drops, o->xstats);
	s->created -= base->created;
	for (b = 0; b < nb_bands; b++) {
		c->band[b].enqueued -= o->band[b].enqueued;
		c->band[b].enqueued_bytes -= o->band[b].enqueued_bytes;
		c->band[b].dequeued -= o->band[b].dequeued;
		c->band[b].dequeued_bytes -= o->band[b].dequeued_bytes;
		c->band[b].full -= o->band[b].full;
		c->band[b].pushed_out -= o->band[b].pushed_out;
		c->band[b].pushed_out_bytes -= o->band[b].pushed_out_bytes;
		c->band[b].flushed -= o->band[b].flushed;
		s->band_dropped[b] -= base->band_dropped[b];
	}
	s->nic.imissed -= base->nic.imissed;
	s->nic.ierrors -= base->nic.ierrors;
	s->nic.rx_nombuf -= base->nic.rx_nombuf;
	s->nic.oerrors -= base->nic.oerrors;
	s->egress_in -= base->egress_in;
	s->dropped -= base->dropped;
}

void
shp_latency_init(struct shp_latency *l)
{
	shp_hist_init(&l->lateness);
	shp_hist_init(&l->sojourn);
}

void
shp_stats_latency(const struct shp_lcore_ctr *blocks, unsigned int n,
		  uint16_t port, struct shp_latency *out)
{
	unsigned int l;

	shp_latency_init(out);
	for (l = 0; l < n; l++) {
		const struct shp_latency *src = blocks[l].port[port].lat;

		if (src == NULL)
			continue;
		shp_hist_merge(&out->lateness, &src->lateness);
		shp_hist_merge(&out->sojourn, &src->sojourn);
	}
}

void
shp_latency_summarize(const struct shp_latency *l, struct shp_port_sum *s)
{
	shp_hist_summarize(&l->lateness, &s->lateness);
	shp_hist_summarize(&l->sojourn, &s->sojourn);
}

void
shp_hist_summary_print(FILE *f, const char *name,
		       const struct shp_hist_summary *h)
{
	fprintf(f, "%s count %" PRIu64 " min %" PRIu64 " p50 %" PRIu64
		" p90 %" PRIu64 " p99 %" PRIu64 " p99.9 %" PRIu64 " max %"
		PRIu64 "\n", name, h->count, h->min, h->p50, h->p90, h->p99,
		h->p999, h->max);
}

static void
json_hist(FILE *f, const char *name, const struct shp_hist_summary *h)
{
	fprintf(f, "\"%s\": {\"count\": %" PRIu64 ", \"min\": %" PRIu64
		", \"p50\": %" PRIu64 ", \"p90\": %" PRIu64 ", \"p99\": %"
		PRIu64 ", \"p99.9\": %" PRIu64 ", \"max\": %" PRIu64 "}",
		name, h->count, h->min, h->p50, h->p90, h->p99, h->p999,
		h->max);
}

/* "xstats": {"KIND": {"NAME": N, ...}, ...}: every registered kind's own
 * statistics, grouped by kind (slots of one kind are consecutive). */
static void
json_xstats(FILE *f, const struct shp_port_ctr *c)
{
	const struct shp_kind *k = NULL;
	unsigned int d;

	fprintf(f, ",\n    \"xstats\": {");
	for (d = 0; d < shp_xstat_nb(); d++) {
		if (shp_xstat_kind(d) != k) {
			fprintf(f, "%s\"%s\": {", k ? "}, " : "",
				shp_xstat_kind(d)->name);
			k = shp_xstat_kind(d);
		} else {
			fprintf(f, ", ");
		}
		fprintf(f, "\"%s\": %" PRIu64, shp_xstat_desc(d)->name,
			c->xstats[d]);
	}
	fprintf(f, "%s}", k ? "}" : "");
}

bool
shp_link_update(struct shp_link *l, bool up, bool full_duplex,
		uint32_t speed_mbps, uint64_t now_ns)
{
	bool changed = l->known && l->up != up;

	if (changed) {
		l->changes++;
		l->changed_ns = now_ns;
	}
	l->known = true;
	l->up = up;
	l->full_duplex = full_duplex;
	l->speed_mbps = speed_mbps;
	return changed;
}

void
shp_stats_write_shard_json(FILE *f, const struct shp_port_sum *s,
			   unsigned int queue, int lcore)
{
	const struct shp_port_ctr *c = &s->c;
	unsigned int d;

	fprintf(f, "{\"queue\": %u, \"lcore\": ", queue);
	if (lcore < 0)
		fprintf(f, "null");
	else
		fprintf(f, "%d", lcore);
	/* egress_in + duplicated = tx_packets + drops + queued, per shard
	 * as per port */
	fprintf(f, ", \"egress_in\": %" PRIu64 ", \"duplicated\": %" PRIu64
		", \"tx_packets\": %" PRIu64 ", \"tx_bytes\": %" PRIu64
		", \"queued\": %" PRIu64 ", \"drops\": {", s->egress_in,
		s->created, c->tx_packets, c->tx_bytes, s->queued);
	for (d = 0; d < shp_drop_nb(); d++)
		fprintf(f, "%s\"%s\": %" PRIu64, d ? ", " : "",
			shp_drop_names[d], c->drops[d]);
	fprintf(f, "}, \"latency\": {");
	json_hist(f, "lateness_ns", &s->lateness);
	fprintf(f, ", ");
	json_hist(f, "sojourn_ns", &s->sojourn);
	fprintf(f, "}}");
}

void
shp_stats_write_json(FILE *f, const struct shp_port_sum *sums,
		     const uint16_t *port_ids, unsigned int nb,
		     unsigned int nb_bands, double elapsed_s,
		     const struct shp_stall_sum *lcores, unsigned int nb_lcores)
{
	unsigned int i, b, d;

	fprintf(f, "{\"elapsed_s\": %.6f, \"ports\": {", elapsed_s);
	for (i = 0; i < nb; i++) {
		const struct shp_port_sum *s = &sums[i];
		const struct shp_port_ctr *c = &s->c;

		fprintf(f, "%s\n  \"%u\": {", i ? "," : "", port_ids[i]);
		fprintf(f, "\"rx_packets\": %" PRIu64 ", \"rx_bytes\": %" PRIu64
			", \"tx_packets\": %" PRIu64 ", \"tx_bytes\": %" PRIu64
			", \"queued\": %" PRIu64 ", \"egress_in\": %" PRIu64
			", \"dropped\": %" PRIu64,
			c->rx_packets, c->rx_bytes, c->tx_packets, c->tx_bytes,
			s->queued, s->egress_in, s->dropped);
		fprintf(f, ", \"tx_pending\": %" PRIu64, c->tx_pending);
		fprintf(f, ", \"rx_pool_empty\": %" PRIu64, c->rx_pool_empty);
		for (d = 0; d < shp_xstat_nb(); d++)
			if (shp_xstat_desc(d)->alias != NULL)
				fprintf(f, ", \"%s\": %" PRIu64,
					shp_xstat_desc(d)->alias, c->xstats[d]);
		json_xstats(f, c);
		/* the sojourn histogram's exact min, max and sum */
		fprintf(f, ",\n    \"sojourn_ns\": {\"min\": %" PRIu64
			", \"avg\": %" PRIu64 ", \"max\": %" PRIu64 "}",
			s->sojourn.min, s->sojourn.count ?
			s->sojourn.sum / s->sojourn.count : 0, s->sojourn.max);
		fprintf(f, ",\n    \"latency\": {");
		json_hist(f, "lateness_ns", &s->lateness);
		fprintf(f, ",\n                ");
		json_hist(f, "sojourn_ns", &s->sojourn);
		fprintf(f, "}");
		fprintf(f, ",\n    \"nic\": {\"imissed\": %" PRIu64
			", \"ierrors\": %" PRIu64 ", \"rx_nombuf\": %" PRIu64
			", \"oerrors\": %" PRIu64, s->nic.imissed,
			s->nic.ierrors, s->nic.rx_nombuf, s->nic.oerrors);
		if (s->nic_xstats_json != NULL)
			fprintf(f, ",\n            \"xstats\": %s",
				s->nic_xstats_json);
		fprintf(f, "}");
		if (s->link.known)
			fprintf(f, ",\n    \"link\": {\"up\": %s, \"speed_mbps\": "
				"%u, \"full_duplex\": %s, \"changes\": %" PRIu64
				"}", s->link.up ? "true" : "false",
				s->link.speed_mbps,
				s->link.full_duplex ? "true" : "false",
				s->link.changes);
		if (s->disabled)
			fprintf(f, ",\n    \"disabled\": true");
		if (s->budget.known) {
			fprintf(f, ",\n    \"budget\": ");
			shp_budget_json(f, &s->budget);
		}
		fprintf(f, ",\n    \"bands\": [");
		for (b = 0; b < (s->nb_bands ? s->nb_bands : nb_bands); b++) {
			const struct shp_band_ctr *bc = &c->band[b];

			fprintf(f, "%s{\"enqueued\": %" PRIu64
				", \"dequeued\": %" PRIu64
				", \"dropped\": %" PRIu64
				", \"depth\": %" PRIu64
				", \"full\": %" PRIu64
				", \"pushed_out\": %" PRIu64
				", \"flushed\": %" PRIu64 "}",
				b ? ", " : "", bc->enqueued, bc->dequeued,
				s->band_dropped[b], s->band_depth[b],
				bc->full, bc->pushed_out, bc->flushed);
		}
		fprintf(f, "],\n    \"drops\": {");
		for (d = 0; d < shp_drop_nb(); d++)
			fprintf(f, "%s\"%s\": %" PRIu64, d ? ", " : "",
				shp_drop_names[d], c->drops[d]);
		fprintf(f, "}");
		for (d = 0; d < nb_sources; d++)
			if (sources[d]->json != NULL)
				sources[d]->json(f, port_ids[i]);
		fprintf(f, "}");
	}
	fprintf(f, "\n}");
	if (nb_lcores > 0)
		fprintf(f, ", \"lcores\": {");
	for (i = 0; i < nb_lcores; i++)
		fprintf(f, "%s\n  \"%u\": {\"loops\": %" PRIu64
			", \"stalls\": %" PRIu64 ", \"stalled_ns\": %" PRIu64
			", \"hiccups\": %" PRIu64 ", \"hiccup_ns\": %" PRIu64
			", \"longest_loop_ns\": %" PRIu64 ", \"socket\": %d"
			", \"runq_wait_ns\": %" PRIu64
			", \"cpu_slices\": %" PRIu64
			", \"steal_ns\": %" PRIu64 "}",
			i ? "," : "", lcores[i].lcore, lcores[i].loops,
			lcores[i].stalls, lcores[i].stalled_ns,
			lcores[i].hiccups, lcores[i].hiccup_ns,
			lcores[i].longest_ns, lcores[i].socket,
			lcores[i].runq_wait_ns, lcores[i].cpu_slices,
			lcores[i].steal_ns);
	fprintf(f, "%s}\n", nb_lcores > 0 ? "\n}" : "");
}
