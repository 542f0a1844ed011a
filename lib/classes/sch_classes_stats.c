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

/* The conf of port's shard q (0 with one queue), or NULL: none. Every
 * shard's has the same members (a change prepares them all alike). */
static const struct classes_conf *
shard_conf(uint16_t port, unsigned int q)
{
	return port < SHP_MAX_PORTS && q < SHP_MAX_QUEUES &&
	       shp_cls_stage[port][q] != NULL ?
	       priv(shp_cls_stage[port][q])->conf : NULL;
}

static const struct classes_conf *
port_conf(uint16_t port)
{
	return shard_conf(port, 0);
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

/* histograms being summed (under shp_cls_lock): one instance's copy,
 * and a class's sum over the shards */
static struct shp_hist one, scratch;

unsigned int
shp_classes_drained(uint16_t port)
{
	const struct classes_conf *cf;
	unsigned int i, q, n = 0;
	bool gone;

	pthread_mutex_lock(&shp_cls_lock);
	cf = port_conf(port);
	for (i = 0; cf != NULL && i < cf->nb; i++) {
		/* empty on every shard */
		gone = true;
		for (q = 0; q < SHP_MAX_QUEUES; q++) {
			const struct classes_conf *c = shard_conf(port, q);

			if (c != NULL && i < c->nb)
				gone &= cls_drained(c->cls[i]);
		}
		n += gone;
	}
	pthread_mutex_unlock(&shp_cls_lock);
	return n;
}

/* k's counters since start, or since the last shp_classes_clear, added
 * into s (counts and gauges), its histogram merged into h */
static void
cls_add(const struct cls *k, struct shp_class_sum *s, struct shp_hist *h,
	bool cleared)
{
	const struct shp_class_sum *o = cleared ? k->base : NULL;
	const struct shp_port_ctr *c = k->ctr;
	uint64_t drops[SHP_DROP_SLOTS], xstats[SHP_XSTAT_SLOTS];
	uint64_t in_p, in_b, out_p, out_b, dropped = 0;
	unsigned int d, b;

	in_p = LD(c->rx_packets);
	in_b = LD(c->rx_bytes);
	out_p = LD(c->tx_packets);
	out_b = LD(c->tx_bytes);
	for (d = 0; d < SHP_DROP_SLOTS; d++) {
		drops[d] = LD(c->drops[d]);
		dropped += drops[d];
	}
	for (d = 0; d < SHP_XSTAT_SLOTS; d++)
		xstats[d] = LD(c->xstats[d]);
	for (d = 0; d < shp_xstat_nb(); d++)
		if (shp_xstat_desc(d)->flags & SHP_XS_QLEN)
			s->queued += xstats[d];
	for (b = 0; b < SHP_MAX_BANDS; b++) {
		const struct shp_band_ctr *bc = &c->band[b];
		uint64_t gone = LD(bc->dequeued) + LD(bc->pushed_out) +
				LD(bc->flushed), in = LD(bc->enqueued);

		s->queued += in > gone ? in - gone : 0;
	}
	s->queued += LD(k->sq.cnt);
	/* a copy first: the TX lcore may be recording (relaxed loads) */
	shp_hist_init(&one);
	shp_hist_merge(&one, &k->sojourn);
	if (o != NULL) {
		/* counts since the clear; gauges (queued, SHP_XS_GAUGE) as
		 * they are */
		in_p -= o->in_packets;
		in_b -= o->in_bytes;
		out_p -= o->out_packets;
		out_b -= o->out_bytes;
		dropped -= o->dropped;
		shp_ctr_sub_causes(drops, xstats, o->drops, o->xstats);
		shp_hist_sub(&one, k->base_hist);
	}
	s->in_packets += in_p;
	s->in_bytes += in_b;
	s->out_packets += out_p;
	s->out_bytes += out_b;
	s->dropped += dropped;
	for (d = 0; d < SHP_DROP_SLOTS; d++)
		s->drops[d] += drops[d];
	for (d = 0; d < SHP_XSTAT_SLOTS; d++)
		s->xstats[d] = shp_xstat_combine(d, s->xstats[d], xstats[d],
						 true);
	shp_hist_merge(h, &one);
}

/* Class i of port (member i of every shard's conf) summed over the
 * shards; -1 past the last. Under shp_cls_lock. */
static int
cls_sum(uint16_t port, unsigned int i, struct shp_class_sum *s, bool cleared)
{
	const struct classes_conf *cf = port_conf(port);
	unsigned int q;

	if (cf == NULL || i >= cf->nb)
		return -1;
	memset(s, 0, sizeof(*s));
	shp_hist_init(&scratch);
	for (q = 0; q < SHP_MAX_QUEUES; q++) {
		const struct classes_conf *c = shard_conf(port, q);

		if (c != NULL && i < c->nb)
			cls_add(c->cls[i], s, &scratch, cleared);
	}
	s->name = cf->cls[i]->name;
	s->retiring = cf->cls[i]->retiring;
	s->quantum = cf->quantum[i];
	s->prio = cf->prio[i];
	shp_hist_summarize(&scratch, &s->sojourn);
	if (s->sojourn.count == 0)
		s->sojourn.min = 0;
	return 0;
}

static int
classes_sum(uint16_t port, unsigned int i, struct shp_class_sum *s,
	    bool cleared)
{
	int rc;

	pthread_mutex_lock(&shp_cls_lock);
	rc = cls_sum(port, i, s, cleared);
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
	unsigned int i, q;

	pthread_mutex_lock(&shp_cls_lock);
	for (q = 0; q < SHP_MAX_QUEUES; q++) {
		cf = shard_conf(port, q);
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
			memset(k->base, 0, sizeof(*k->base));
			shp_hist_init(k->base_hist);
			cls_add(k, k->base, k->base_hist, false);
		}
	}
	pthread_mutex_unlock(&shp_cls_lock);
}

void
shp_classes_add_port(uint16_t port, int shard, struct shp_port_ctr *s)
{
	const struct classes_conf *cf;
	unsigned int i, q, lo = 0, hi = SHP_MAX_QUEUES;

	if (port >= SHP_MAX_PORTS || shard >= SHP_MAX_QUEUES)
		return;
	if (shard != SHP_ALL_SHARDS) {
		lo = (unsigned int)shard;
		hi = lo + 1;
	}
	pthread_mutex_lock(&shp_cls_lock);
	for (q = lo; q < hi; q++) {
		const struct classes_priv *p;

		shp_port_ctr_add_stages(s, &shp_cls_retired[port][q],
					SHP_MAX_BANDS, true);
		cf = shard_conf(port, q);
		if (cf == NULL)
			continue;
		p = priv(shp_cls_stage[port][q]);
		/* the stash left its class and is not yet the port's */
		s->tx_pending += (LD(p->stash) != NULL) + LD(p->def_sq.cnt);
		for (i = 0; i < cf->nb; i++) {
			s->tx_pending += LD(cf->cls[i]->sq.cnt);
			shp_port_ctr_add_stages(s, cf->cls[i]->ctr,
						SHP_MAX_BANDS, true);
		}
	}
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
		cls_sum(port, i, &s, true);
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
