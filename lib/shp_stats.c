/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <string.h>

#include "shp_stats.h"

const char *const shp_drop_names[SHP_DROP_MAX] = {
	[SHP_DROP_BAND_FULL] = "band_full",
	[SHP_DROP_NO_MBUF] = "no_mbuf",
	[SHP_DROP_TBF_OVERSIZE] = "tbf_oversize",
	[SHP_DROP_TBF_LIMIT] = "tbf_limit",
	[SHP_DROP_NETEM_LIMIT] = "netem_limit",
	[SHP_DROP_LOST] = "lost",
	[SHP_DROP_FLUSHED] = "flushed",
	[SHP_DROP_OVERLOAD] = "overload",
};

/* Relaxed loads: the owner may be writing; each u64 load is whole. */
#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

void
shp_stats_init(struct shp_lcore_ctr *blocks, unsigned int n)
{
	unsigned int l, p;

	for (l = 0; l < n; l++)
		for (p = 0; p < SHP_MAX_PORTS; p++)
			blocks[l].port[p].sojourn_min_ns = UINT64_MAX;
}

void
shp_stats_sum(const struct shp_lcore_ctr *blocks, unsigned int n,
	      uint16_t port, unsigned int nb_bands, struct shp_port_sum *out)
{
	struct shp_port_ctr *s = &out->c;
	unsigned int l, b, d;

	memset(out, 0, sizeof(*out));
	s->sojourn_min_ns = UINT64_MAX;
	for (l = 0; l < n; l++) {
		const struct shp_port_ctr *c = &blocks[l].port[port];

		s->rx_packets += LD(c->rx_packets);
		s->rx_bytes += LD(c->rx_bytes);
		s->tx_packets += LD(c->tx_packets);
		s->tx_bytes += LD(c->tx_bytes);
		for (d = 0; d < SHP_DROP_MAX; d++)
			s->drops[d] += LD(c->drops[d]);
		s->duplicated += LD(c->duplicated);
		s->corrupted += LD(c->corrupted);
		s->reordered += LD(c->reordered);
		s->ecn_marked += LD(c->ecn_marked);
		s->sojourn_sum_ns += LD(c->sojourn_sum_ns);
		s->sojourn_min_ns = RTE_MIN(s->sojourn_min_ns,
					    LD(c->sojourn_min_ns));
		s->sojourn_max_ns = RTE_MAX(s->sojourn_max_ns,
					    LD(c->sojourn_max_ns));
		s->netem_qlen += LD(c->netem_qlen);
		s->tx_pending += LD(c->tx_pending);
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
	out->queued = s->netem_qlen + s->tx_pending;
	for (b = 0; b < nb_bands; b++) {
		struct shp_band_ctr *bs = &s->band[b];
		uint64_t gone = bs->dequeued + bs->pushed_out + bs->flushed;

		/* Counters of different lcores are read at slightly
		 * different moments: never report a negative depth. */
		out->band_depth[b] = bs->enqueued > gone ?
			bs->enqueued - gone : 0;
		out->band_dropped[b] = bs->full + bs->pushed_out + bs->flushed;
		out->queued += out->band_depth[b];
		out->egress_in += bs->enqueued + bs->full;
	}
	/* dropped on arrival, before any band */
	out->egress_in += s->drops[SHP_DROP_OVERLOAD];
	for (d = 0; d < SHP_DROP_MAX; d++)
		out->dropped += s->drops[d];
}

void
shp_stats_sub(struct shp_port_sum *s, const struct shp_port_sum *base,
	      unsigned int nb_bands)
{
	struct shp_port_ctr *c = &s->c;
	const struct shp_port_ctr *o = &base->c;
	unsigned int b, d;

	c->rx_packets -= o->rx_packets;
	c->rx_bytes -= o->rx_bytes;
	c->tx_packets -= o->tx_packets;
	c->tx_bytes -= o->tx_bytes;
	for (d = 0; d < SHP_DROP_MAX; d++)
		c->drops[d] -= o->drops[d];
	c->duplicated -= o->duplicated;
	c->corrupted -= o->corrupted;
	c->reordered -= o->reordered;
	c->ecn_marked -= o->ecn_marked;
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

void
shp_stats_write_json(FILE *f, const struct shp_port_sum *sums,
		     const uint16_t *port_ids, unsigned int nb,
		     unsigned int nb_bands, double elapsed_s)
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
		fprintf(f, ", \"netem_queued\": %" PRIu64
			", \"tx_pending\": %" PRIu64
			", \"duplicated\": %" PRIu64 ", \"corrupted\": %" PRIu64
			", \"reordered\": %" PRIu64 ", \"ecn_marked\": %" PRIu64,
			c->netem_qlen, c->tx_pending, c->duplicated,
			c->corrupted, c->reordered, c->ecn_marked);
		fprintf(f, ",\n    \"sojourn_ns\": {\"min\": %" PRIu64
			", \"avg\": %" PRIu64 ", \"max\": %" PRIu64 "}",
			c->tx_packets ? c->sojourn_min_ns : 0,
			c->tx_packets ? c->sojourn_sum_ns / c->tx_packets : 0,
			c->sojourn_max_ns);
		fprintf(f, ",\n    \"latency\": {");
		json_hist(f, "lateness_ns", &s->lateness);
		fprintf(f, ",\n                ");
		json_hist(f, "sojourn_ns", &s->sojourn);
		fprintf(f, "}");
		fprintf(f, ",\n    \"nic\": {\"imissed\": %" PRIu64
			", \"ierrors\": %" PRIu64 ", \"rx_nombuf\": %" PRIu64
			", \"oerrors\": %" PRIu64 "}", s->nic.imissed,
			s->nic.ierrors, s->nic.rx_nombuf, s->nic.oerrors);
		fprintf(f, ",\n    \"bands\": [");
		for (b = 0; b < nb_bands; b++) {
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
		for (d = 0; d < SHP_DROP_MAX; d++)
			fprintf(f, "%s\"%s\": %" PRIu64, d ? ", " : "",
				shp_drop_names[d], c->drops[d]);
		fprintf(f, "}}");
	}
	fprintf(f, "\n}}\n");
}
