/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Telemetry's per-port entries (telemetry.c's replies): what a port's
 * sum shows under /shaper/stats, /shaper/drops, /shaper/bands and
 * /shaper/budget. Runs in the telemetry thread; reads only the sum and
 * the port's chain (which kinds run).
 */
#ifndef SHAPER_TEL_COUNTERS_H
#define SHAPER_TEL_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "ctl_stats.h"
#include "shp_chain.h"

struct rte_tel_data;

/* A dictionary of counters being built (d NULL: only its JSON length is
 * counted, to see a reply fit); err remembers any failed add. */
struct tel_dict {
	struct rte_tel_data *d;
	size_t len;
	int err;
};

void tel_put_u64(struct tel_dict *t, const char *k, uint64_t v);

enum tel_what { TEL_STATS, TEL_DROPS, TEL_BANDS, TEL_BUDGET };

/* Entry i of w's reply for port (its chain ch): its key into key, its
 * counters into t (band i for TEL_BANDS, the port's otherwise). */
void tel_entry(enum tel_what w, uint16_t port, const struct shp_chain *ch,
	       const struct shp_port_sum *sum, unsigned int i,
	       struct tel_dict *t, char *key, size_t klen);

#endif /* SHAPER_TEL_COUNTERS_H */
