/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Telemetry's per-port entries (tel_counters.h): a port's counters,
 * drops, bands and budget from one sum (shp_port_sum) into an rte_tel
 * dictionary, or only measured, to see a reply fit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <rte_telemetry.h>

#include "tel_counters.h"

/* JSON length of `"k":v,`, with one digit of room per value: counters
 * still move between this estimate and the serialisation. */
static size_t
u64_len(const char *k, uint64_t v)
{
	char num[24];

	return strlen(k) + 5 + (size_t)snprintf(num, sizeof(num), "%" PRIu64,
						  v);
}

void
tel_put_u64(struct tel_dict *t, const char *k, uint64_t v)
{
	if (t->d != NULL && rte_tel_data_add_dict_u64(t->d, k, v) < 0)
		t->err = -1;
	t->len += u64_len(k, v);
}

/* Kind k's statistics belong in port's reply: it runs on the port, or
 * counted something there (a class's, a kind switched off since). The
 * kinds a port does not run stay out, as the exporter leaves them out:
 * with every kind's keys a port's entry outgrew one reply at 18 ports. */
static bool
kind_shown(const struct shp_chain *ch, const struct shp_kind *k,
	   const struct shp_port_ctr *c)
{
	unsigned int i;

	for (i = 0; i < SHP_SLOT_MAX; i++)
		if (ch->kind[i] == k && ch->conf[i] != NULL)
			return true;
	for (i = 0; i < shp_xstat_nb(); i++)
		if (shp_xstat_kind(i) == k && c->xstats[i] != 0)
			return true;
	return false;
}

/* Fill `t` (or only measure it when t->d is NULL). */
static void
port_counters(struct tel_dict *t, const struct shp_chain *ch,
	      const struct shp_port_sum *s)
{
	const struct shp_port_ctr *c = &s->c;
	unsigned int k;

	tel_put_u64(t, "rx_packets", c->rx_packets);
	tel_put_u64(t, "rx_bytes", c->rx_bytes);
	tel_put_u64(t, "tx_packets", c->tx_packets);
	tel_put_u64(t, "tx_bytes", c->tx_bytes);
	tel_put_u64(t, "queued", s->queued);
	tel_put_u64(t, "egress_in", s->egress_in);
	tel_put_u64(t, "dropped", s->dropped);
	tel_put_u64(t, "tx_pending", c->tx_pending);
	tel_put_u64(t, "rx_pool_empty", c->rx_pool_empty);
	/* every kind's own statistics as KIND_NAME (the stats file's
	 * xstats.KIND.NAME), and the older top-level names */
	for (k = 0; k < shp_xstat_nb(); k++) {
		const struct shp_xstat_desc *x = shp_xstat_desc(k);
		char name[64];

		if (x->alias != NULL)
			tel_put_u64(t, x->alias, c->xstats[k]);
		if (!kind_shown(ch, shp_xstat_kind(k), c))
			continue;
		snprintf(name, sizeof(name), "%s_%s",
			 shp_xstat_kind(k)->name, x->name);
		if (x->alias == NULL || strcmp(x->alias, name) != 0)
			tel_put_u64(t, name, c->xstats[k]);
	}
	/* the stats file's "nic" object, flat: one level of containers */
	tel_put_u64(t, "nic_imissed", s->nic.imissed);
	tel_put_u64(t, "nic_ierrors", s->nic.ierrors);
	/* `disable P`: 1 while the port is a bare wire */
	tel_put_u64(t, "disabled", s->disabled);
	if (s->link.known) {
		tel_put_u64(t, "link_up", s->link.up);
		tel_put_u64(t, "link_speed_mbps", s->link.speed_mbps);
		tel_put_u64(t, "link_changes", s->link.changes);
	}
	tel_put_u64(t, "nic_rx_nombuf", s->nic.rx_nombuf);
	tel_put_u64(t, "nic_oerrors", s->nic.oerrors);
}

/* the stats file's "budget" (0: a figure not known; none offline) */
static void
port_budget(struct tel_dict *t, const struct shp_port_sum *s)
{
	const struct shp_budget *b = &s->budget;

	if (!b->known)
		return;
	tel_put_u64(t, "frame_bytes", b->frame);
	tel_put_u64(t, "frames", b->frames);
	tel_put_u64(t, "mbufs", b->mbufs);
	tel_put_u64(t, "store_bytes", b->store_bound);
	tel_put_u64(t, "store_reserved", b->store_reserved);
	tel_put_u64(t, "delay_ns", b->delay_ns);
	tel_put_u64(t, "max_delay_at_line_ns", b->max_delay_at_line_ns);
	tel_put_u64(t, "max_delay_at_rate_ns", b->max_delay_at_rate_ns);
	tel_put_u64(t, "max_rate_at_delay_bps", b->max_rate_at_delay_bps);
	tel_put_u64(t, "over", b->over);
}

static void
port_drops(struct tel_dict *t, const struct shp_port_sum *s)
{
	unsigned int k;

	for (k = 0; k < shp_drop_nb(); k++)
		tel_put_u64(t, shp_drop_names[k], s->c.drops[k]);
}

static void
band_counters(struct tel_dict *t, const struct shp_port_sum *s,
	      unsigned int b)
{
	const struct shp_band_ctr *bc = &s->c.band[b];

	tel_put_u64(t, "enqueued", bc->enqueued);
	tel_put_u64(t, "dequeued", bc->dequeued);
	tel_put_u64(t, "dropped", s->band_dropped[b]);
	tel_put_u64(t, "depth", s->band_depth[b]);
	tel_put_u64(t, "full", bc->full);
	tel_put_u64(t, "pushed_out", bc->pushed_out);
	tel_put_u64(t, "flushed", bc->flushed);
}

void
tel_entry(enum tel_what w, uint16_t port, const struct shp_chain *ch,
	  const struct shp_port_sum *sum, unsigned int i, struct tel_dict *t,
	  char *key, size_t klen)
{
	if (w == TEL_BANDS) {
		snprintf(key, klen, "%u_%u", port, i);
		band_counters(t, sum, i);
	} else {
		snprintf(key, klen, "%u", port);
		if (w == TEL_STATS)
			port_counters(t, ch, sum);
		else if (w == TEL_BUDGET)
			port_budget(t, sum);
		else
			port_drops(t, sum);
	}
	t->len += strlen(key) + 6;   /* "key":{...}, */
}
