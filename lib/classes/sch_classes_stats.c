/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The classes' counters as reported (shp_classes.h): their sums, the
 * port's sums' share, the stats file's "classes" and `show class`.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sch_classes_priv.h"

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static const struct classes_conf *
port_conf(uint16_t port)
{
	return port < SHP_MAX_PORTS && shp_cls_stage[port] != NULL ?
	       priv(shp_cls_stage[port])->conf : NULL;
}

unsigned int
shp_classes_nb(uint16_t port)
{
	const struct classes_conf *cf;
	unsigned int n;

	pthread_mutex_lock(&shp_cls_lock);
	cf = port_conf(port);
	n = cf != NULL ? cf->nb : 0;
	pthread_mutex_unlock(&shp_cls_lock);
	return n;
}

/* cls_sum's copy of a histogram (under shp_cls_lock) */
static struct shp_hist scratch;

unsigned int
shp_classes_drained(uint16_t port)
{
	const struct classes_conf *cf;
	unsigned int i, n = 0;

	pthread_mutex_lock(&shp_cls_lock);
	cf = port_conf(port);
	for (i = 0; cf != NULL && i < cf->nb; i++)
		n += cf->cls[i]->retiring && cf->cls[i]->sq.cnt == 0 &&
		     shp_qdisc_qlen_total(cf->cls[i]->chain.root) == 0;
	pthread_mutex_unlock(&shp_cls_lock);
	return n;
}

/* k's counters since start, or since the last shp_classes_clear */
static void
cls_sum(const struct cls *k, struct shp_class_sum *s, bool cleared)
{
	const struct shp_class_sum *o = cleared ? k->base : NULL;
	const struct shp_port_ctr *c = k->ctr;
	unsigned int d, b;
	uint64_t out;

	memset(s, 0, sizeof(*s));
	s->name = k->name;
	s->retiring = k->retiring;
	s->in_packets = LD(c->rx_packets);
	s->in_bytes = LD(c->rx_bytes);
	s->out_packets = out = LD(c->tx_packets);
	s->out_bytes = LD(c->tx_bytes);
	for (d = 0; d < SHP_DROP_SLOTS; d++) {
		s->drops[d] = LD(c->drops[d]);
		s->dropped += s->drops[d];
	}
	for (d = 0; d < SHP_XSTAT_SLOTS; d++)
		s->xstats[d] = LD(c->xstats[d]);
	for (d = 0; d < shp_xstat_nb(); d++)
		if (shp_xstat_desc(d)->flags & SHP_XS_QLEN)
			s->queued += s->xstats[d];
	for (b = 0; b < SHP_MAX_BANDS; b++) {
		const struct shp_band_ctr *bc = &c->band[b];
		uint64_t gone = LD(bc->dequeued) + LD(bc->pushed_out) +
				LD(bc->flushed), in = LD(bc->enqueued);

		s->queued += in > gone ? in - gone : 0;
	}
	s->queued += LD(k->sq.cnt);
	/* a copy first: the TX lcore may be recording (relaxed loads) */
	shp_hist_init(&scratch);
	shp_hist_merge(&scratch, &k->sojourn);
	if (o != NULL) {
		/* counts since the clear; gauges (queued, SHP_XS_GAUGE) as
		 * they are */
		s->in_packets -= o->in_packets;
		s->in_bytes -= o->in_bytes;
		s->out_packets -= o->out_packets;
		s->out_bytes -= o->out_bytes;
		s->dropped -= o->dropped;
		shp_ctr_sub_causes(s->drops, s->xstats, o->drops, o->xstats);
		shp_hist_sub(&scratch, k->base_hist);
	}
	shp_hist_summarize(&scratch, &s->sojourn);
	if (s->sojourn.count == 0)
		s->sojourn.min = 0;
}

static int
classes_sum(uint16_t port, unsigned int i, struct shp_class_sum *s,
	    bool cleared)
{
	const struct classes_conf *cf;
	int rc = -1;

	pthread_mutex_lock(&shp_cls_lock);
	cf = port_conf(port);
	if (cf != NULL && i < cf->nb) {
		cls_sum(cf->cls[i], s, cleared);
		s->quantum = cf->quantum[i];
		s->prio = cf->prio[i];
		rc = 0;
	}
	pthread_mutex_unlock(&shp_cls_lock);
	return rc;
}

int
shp_classes_sum(uint16_t port, unsigned int i, struct shp_class_sum *s)
{
	return classes_sum(port, i, s, false);
}

int
shp_classes_sum_cleared(uint16_t port, unsigned int i,
			struct shp_class_sum *s)
{
	return classes_sum(port, i, s, true);
}

void
shp_classes_clear(uint16_t port)
{
	const struct classes_conf *cf;
	unsigned int i;

	pthread_mutex_lock(&shp_cls_lock);
	cf = port_conf(port);
	for (i = 0; cf != NULL && i < cf->nb; i++) {
		struct cls *k = cf->cls[i];

		if (k->base == NULL) {
			k->base = malloc(sizeof(*k->base));
			k->base_hist = malloc(sizeof(*k->base_hist));
			if (k->base == NULL || k->base_hist == NULL) {
				/* no memory: it counts from the start */
				free(k->base);
				free(k->base_hist);
				k->base = NULL;
				k->base_hist = NULL;
				continue;
			}
		}
		cls_sum(k, k->base, false);
		shp_hist_init(k->base_hist);
		shp_hist_merge(k->base_hist, &scratch);   /* cls_sum's copy */
	}
	pthread_mutex_unlock(&shp_cls_lock);
}

void
shp_classes_add_port(uint16_t port, struct shp_port_ctr *s)
{
	const struct classes_conf *cf;
	unsigned int i;

	pthread_mutex_lock(&shp_cls_lock);
	if (port < SHP_MAX_PORTS)
		shp_port_ctr_add_stages(s, &shp_cls_retired[port],
					SHP_MAX_BANDS, true);
	cf = port_conf(port);
	if (cf == NULL)
		goto out;
	/* the stash left its class and is not yet the port's */
	s->tx_pending += (LD(priv(shp_cls_stage[port])->stash) != NULL) +
			 LD(priv(shp_cls_stage[port])->def_sq.cnt);
	for (i = 0; i < cf->nb; i++) {
		const struct shp_port_ctr *c = cf->cls[i]->ctr;

		s->tx_pending += LD(cf->cls[i]->sq.cnt);
		shp_port_ctr_add_stages(s, c, SHP_MAX_BANDS, true);
	}
out:
	pthread_mutex_unlock(&shp_cls_lock);
}

void
shp_classes_json(FILE *f, uint16_t port)
{
	unsigned int i, d;
	struct shp_class_sum s;

	for (i = 0; shp_classes_sum(port, i, &s) == 0; i++) {
		const struct shp_kind *k = NULL;

		fprintf(f, "%s\n      \"%s\": {\"packets\": %" PRIu64
			", \"bytes\": %" PRIu64 ", \"in_packets\": %" PRIu64
			", \"in_bytes\": %" PRIu64 ", \"queued\": %" PRIu64
			", \"dropped\": %" PRIu64 ", \"quantum\": %u"
			", \"prio\": %u%s", i ? "," : ",\n    \"classes\": {",
			s.name, s.out_packets, s.out_bytes, s.in_packets,
			s.in_bytes, s.queued, s.dropped, s.quantum, s.prio,
			s.retiring ? ", \"retiring\": true" : "");
		fprintf(f, ", \"sojourn_ns\": {\"count\": %" PRIu64 ", \"min\": %"
			PRIu64 ", \"avg\": %" PRIu64 ", \"p50\": %" PRIu64
			", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64 ", \"p99.9\": %"
			PRIu64 ", \"max\": %" PRIu64 "}", s.sojourn.count,
			s.sojourn.min, shp_class_sojourn_avg(&s), s.sojourn.p50,
			s.sojourn.p90, s.sojourn.p99, s.sojourn.p999,
			s.sojourn.max);
		fprintf(f, ", \"drops\": {");
		for (d = 0; d < shp_drop_nb(); d++)
			fprintf(f, "%s\"%s\": %" PRIu64, d ? ", " : "",
				shp_drop_names[d], s.drops[d]);
		fprintf(f, "}, \"xstats\": {");
		for (d = 0; d < shp_xstat_nb(); d++) {
			if (shp_xstat_kind(d) != k) {
				fprintf(f, "%s\"%s\": {", k ? "}, " : "",
					shp_xstat_kind(d)->name);
				k = shp_xstat_kind(d);
			} else {
				fprintf(f, ", ");
			}
			fprintf(f, "\"%s\": %" PRIu64, shp_xstat_desc(d)->name,
				s.xstats[d]);
		}
		fprintf(f, "%s}}", k ? "}" : "");
	}
	if (i > 0)
		fprintf(f, "}");
}

unsigned int
shp_classes_show(FILE *f, uint16_t port, const char *name)
{
	const struct classes_conf *cf;
	unsigned int i, shown = 0;
	int d;

	pthread_mutex_lock(&shp_cls_lock);
	cf = port_conf(port);
	for (i = 0; cf != NULL && i < cf->nb; i++) {
		const struct cls *k = cf->cls[i];
		const struct shp_chain *ch = &k->chain;
		struct shp_class_sum s;
		unsigned int sl;
		char buf[256];

		if (name != NULL && strcmp(name, k->name) != 0)
			continue;
		cls_sum(k, &s, true);
		fprintf(f, "port %u class %s: prio %u quantum %u%s\n", port,
			s.name, cf->prio[i], cf->quantum[i], k->retiring ?
			" (cleared: served until empty)" : "");
		for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
			shp_chain_format(ch, (enum shp_slot)sl, buf,
					 sizeof(buf));
			fprintf(f, "  %s: %s\n", shp_kind_key(ch->kind[sl]),
				buf);
		}
		fprintf(f, "  in %" PRIu64 " packets %" PRIu64 " bytes, out %"
			PRIu64 " packets %" PRIu64 " bytes, queued %" PRIu64
			", dropped %" PRIu64, s.in_packets, s.in_bytes,
			s.out_packets, s.out_bytes, s.queued, s.dropped);
		for (d = 0; d < (int)shp_drop_nb(); d++)
			if (s.drops[d] != 0)
				fprintf(f, " %s %" PRIu64, shp_drop_names[d],
					s.drops[d]);
		fprintf(f, "\n  delay to the port's stages (ns): min %" PRIu64
			" avg %" PRIu64 " p99 %" PRIu64 " max %" PRIu64 "\n",
			s.sojourn.min, shp_class_sojourn_avg(&s), s.sojourn.p99,
			s.sojourn.max);
		shown++;
	}
	pthread_mutex_unlock(&shp_cls_lock);
	return shown;
}
