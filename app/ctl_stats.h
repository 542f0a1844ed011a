/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The counters as the operator sees them (ctl_stats.c): sums and latency
 * since the last `clear stats`, rates since the previous look, the
 * --stats-period table. The main lcore writes the baselines; telemetry
 * callbacks read sums from their own thread under the baselines' lock.
 */
#ifndef SHAPER_CTL_STATS_H
#define SHAPER_CTL_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "shaper.h"

/* ctl_init/ctl_fini: the rate marks start at now; the baselines freed. */
void ctl_stats_init(uint64_t now);
void ctl_stats_fini(void);

/* `clear stats`: the counters shown from now on start at 0. */
void ctl_clear_stats(struct shaper *s);

/* Sums since the last `clear stats` (any thread). */
void ctl_port_sum(struct shaper *s, uint16_t port, struct shp_port_sum *sum);
/* Latency histograms since the last `clear stats` (any thread). */
void ctl_port_latency(struct shaper *s, uint16_t port, struct shp_latency *out);
/* Shard q of port since the last `clear stats`, latency summarized, as
 * ctl_port_sum and ctl_port_latency give the port: the shards of a port
 * sum to it after a clear as before one. */
void ctl_shard_sum(struct shaper *s, uint16_t port, unsigned int q,
		   struct shp_port_sum *sum);

/* Rates since the previous call with the same `slot`. */
enum { CTL_RATE_SHOW, CTL_RATE_PERIODIC, CTL_RATE_SLOTS };
struct ctl_rate {
	double rx_pps, rx_bps, tx_pps, tx_bps;
	double secs;
};
void ctl_port_rate(struct shaper *s, int slot, uint16_t port,
		   const struct shp_port_sum *sum, struct ctl_rate *r);

/* Compact table for --stats-period. */
void ctl_print_periodic(struct shaper *s, FILE *f);

/* Human number: 1.23M */
const char *ctl_si(double v, char *buf, size_t len);
/* Human time: 950ns, 12.3us, 10.02ms, 1.50s */
const char *ctl_ns(uint64_t ns, char *buf, size_t len);

#endif
