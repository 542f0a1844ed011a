/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * librte_telemetry endpoints (dpdk-telemetry.py -f PREFIX):
 *
 *   /shaper/stats[,P]   per port: the --stats-file port counters (and
 *                       its "nic" object as nic_* keys)
 *   /shaper/drops[,P]   per port: drops by cause (stats-file "drops")
 *   /shaper/bands[,P]   per "P_B" (port P, band B): the stats-file band keys
 *   /shaper/config      global settings and each port's tbf/netem profile
 *   /shaper/lcores      role and poll loops of each lcore
 *   /shaper/latency[,P] per port: lateness and sojourn percentiles (ns);
 *                       with P also the non-empty buckets
 *
 * Numbers are the ones `show` prints (since the last `clear stats`).
 *
 * Callbacks run in the telemetry thread, not an EAL lcore: they only sum
 * counters (relaxed loads) and copy the text snapshot of the config that
 * the control plane keeps under a mutex; they never touch a stage's
 * configuration object. `tel_lock` + `alive` keep them off the counters
 * once the shaper starts freeing memory at exit.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <rte_lcore.h>
#include <rte_telemetry.h>

#include "control.h"
#include "shaper.h"
#include "telemetry.h"

static struct shaper *S;
static pthread_mutex_t tel_lock = PTHREAD_MUTEX_INITIALIZER;
static bool alive;

/* The ports a request names: all of them, or the one in params. */
static int
select_ports(const char *params, uint16_t *ports)
{
	unsigned int i, n = 0;
	char *end;
	long p;

	if (params == NULL || *params == '\0') {
		for (i = 0; i < S->nb_ports; i++)
			ports[n++] = S->port_ids[i];
		return n;
	}
	p = strtol(params, &end, 10);
	if (end == params || *end != '\0')
		return -1;
	for (i = 0; i < S->nb_ports; i++)
		if (S->port_ids[i] == p) {
			ports[0] = (uint16_t)p;
			return 1;
		}
	return -1;
}

static void
port_counters(struct rte_tel_data *d, const struct shp_port_sum *s)
{
	const struct shp_port_ctr *c = &s->c;

	rte_tel_data_add_dict_u64(d, "rx_packets", c->rx_packets);
	rte_tel_data_add_dict_u64(d, "rx_bytes", c->rx_bytes);
	rte_tel_data_add_dict_u64(d, "tx_packets", c->tx_packets);
	rte_tel_data_add_dict_u64(d, "tx_bytes", c->tx_bytes);
	rte_tel_data_add_dict_u64(d, "queued", s->queued);
	rte_tel_data_add_dict_u64(d, "egress_in", s->egress_in);
	rte_tel_data_add_dict_u64(d, "dropped", s->dropped);
	rte_tel_data_add_dict_u64(d, "netem_queued", c->netem_qlen);
	rte_tel_data_add_dict_u64(d, "tx_pending", c->tx_pending);
	rte_tel_data_add_dict_u64(d, "duplicated", c->duplicated);
	rte_tel_data_add_dict_u64(d, "corrupted", c->corrupted);
	rte_tel_data_add_dict_u64(d, "reordered", c->reordered);
	rte_tel_data_add_dict_u64(d, "ecn_marked", c->ecn_marked);
	/* the stats file's "nic" object, flat: one level of containers */
	rte_tel_data_add_dict_u64(d, "nic_imissed", s->nic.imissed);
	rte_tel_data_add_dict_u64(d, "nic_ierrors", s->nic.ierrors);
	rte_tel_data_add_dict_u64(d, "nic_rx_nombuf", s->nic.rx_nombuf);
	rte_tel_data_add_dict_u64(d, "nic_oerrors", s->nic.oerrors);
}

static void
port_drops(struct rte_tel_data *d, const struct shp_port_sum *s)
{
	unsigned int k;

	for (k = 0; k < SHP_DROP_MAX; k++)
		rte_tel_data_add_dict_u64(d, shp_drop_names[k], s->c.drops[k]);
}

enum what { W_STATS, W_DROPS, W_BANDS };

static int
per_port(const char *params, struct rte_tel_data *d, enum what w)
{
	uint16_t ports[SHP_MAX_PORTS];
	int n, i, rc = 0;

	pthread_mutex_lock(&tel_lock);
	if (!alive) {
		rc = -1;
		goto out;
	}
	n = select_ports(params, ports);
	if (n < 0) {
		rc = -1;   /* the client prints null: bad parameter */
		goto out;
	}
	rte_tel_data_start_dict(d);
	for (i = 0; i < n; i++) {
		struct shp_port_sum sum;
		char key[16];
		unsigned int b;

		ctl_port_sum(S, ports[i], &sum);
		if (w == W_BANDS) {
			for (b = 0; b < S->opt.bands; b++) {
				struct rte_tel_data *c = rte_tel_data_alloc();
				const struct shp_band_ctr *bc = &sum.c.band[b];

				if (c == NULL)
					break;
				rte_tel_data_start_dict(c);
				rte_tel_data_add_dict_u64(c, "enqueued",
							  bc->enqueued);
				rte_tel_data_add_dict_u64(c, "dequeued",
							  bc->dequeued);
				rte_tel_data_add_dict_u64(c, "dropped",
							  sum.band_dropped[b]);
				rte_tel_data_add_dict_u64(c, "depth",
							  sum.band_depth[b]);
				rte_tel_data_add_dict_u64(c, "full", bc->full);
				rte_tel_data_add_dict_u64(c, "pushed_out",
							  bc->pushed_out);
				snprintf(key, sizeof(key), "%u_%u", ports[i], b);
				rte_tel_data_add_dict_container(d, key, c, 0);
			}
			continue;
		}
		struct rte_tel_data *c = rte_tel_data_alloc();

		if (c == NULL)
			break;
		rte_tel_data_start_dict(c);
		if (w == W_STATS)
			port_counters(c, &sum);
		else
			port_drops(c, &sum);
		snprintf(key, sizeof(key), "%u", ports[i]);
		rte_tel_data_add_dict_container(d, key, c, 0);
	}
out:
	pthread_mutex_unlock(&tel_lock);
	return rc;
}

static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	return per_port(params, d, W_STATS);
}

static int
tel_drops(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	return per_port(params, d, W_DROPS);
}

static int
tel_bands(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	return per_port(params, d, W_BANDS);
}

/* count, min, p50, p90, p99, p99_9, max: the stats-file keys */
static struct rte_tel_data *
hist_summary(const struct shp_hist_summary *h)
{
	struct rte_tel_data *c = rte_tel_data_alloc();

	if (c == NULL)
		return NULL;
	rte_tel_data_start_dict(c);
	rte_tel_data_add_dict_u64(c, "count", h->count);
	rte_tel_data_add_dict_u64(c, "min", h->min);
	rte_tel_data_add_dict_u64(c, "p50", h->p50);
	rte_tel_data_add_dict_u64(c, "p90", h->p90);
	rte_tel_data_add_dict_u64(c, "p99", h->p99);
	/* telemetry refuses '.' in a name */
	rte_tel_data_add_dict_u64(c, "p99_9", h->p999);
	rte_tel_data_add_dict_u64(c, "max", h->max);
	return c;
}

/*
 * The non-empty buckets as pairs upper_bound_ns, count (not cumulative),
 * flattened into one array: 22.11's telemetry nests containers one level
 * deep and caps an array at RTE_TEL_MAX_ARRAY_ENTRIES values. At most 128
 * pairs, so that both histograms of a port stay well inside the client's
 * 16 KiB reply: more are merged into coarser buckets (shp_hist_export).
 */
#define TEL_MAX_PAIRS (RTE_TEL_MAX_ARRAY_ENTRIES / 4)

static struct rte_tel_data *
hist_buckets(const struct shp_hist *h)
{
	uint64_t upper[TEL_MAX_PAIRS], count[TEL_MAX_PAIRS];
	struct rte_tel_data *c = rte_tel_data_alloc();
	unsigned int i, n;

	if (c == NULL)
		return NULL;
	rte_tel_data_start_array(c, RTE_TEL_U64_VAL);
	n = shp_hist_export(h, TEL_MAX_PAIRS, upper, count);
	for (i = 0; i < n; i++) {
		rte_tel_data_add_array_u64(c, upper[i]);
		rte_tel_data_add_array_u64(c, count[i]);
	}
	return c;
}

/* Keys "P_lateness_ns", "P_sojourn_ns" (and "P_lateness_buckets",
 * "P_sojourn_buckets" when one port is asked for), as /shaper/bands keys
 * "P_B": one level of containers. Since the last `clear stats`. */
static int
tel_latency(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint16_t ports[SHP_MAX_PORTS];
	struct shp_latency *lat = malloc(sizeof(*lat));
	int n, i, rc = 0;

	(void)cmd;
	if (lat == NULL)
		return -1;
	pthread_mutex_lock(&tel_lock);
	n = alive ? select_ports(params, ports) : -1;
	if (n < 0) {
		rc = -1;
		goto out;
	}
	rte_tel_data_start_dict(d);
	for (i = 0; i < n; i++) {
		static const char *const name[2] = { "lateness", "sojourn" };
		struct shp_port_sum sum;
		unsigned int k;

		ctl_port_latency(S, ports[i], lat);
		shp_latency_summarize(lat, &sum);
		for (k = 0; k < 2; k++) {
			const struct shp_hist *h = k ? &lat->sojourn :
				&lat->lateness;
			struct rte_tel_data *c;
			char key[32];

			c = hist_summary(k ? &sum.sojourn : &sum.lateness);
			if (c == NULL)
				break;
			snprintf(key, sizeof(key), "%u_%s_ns", ports[i],
				 name[k]);
			rte_tel_data_add_dict_container(d, key, c, 0);
			if (n > 1)
				continue;
			c = hist_buckets(h);
			if (c == NULL)
				break;
			snprintf(key, sizeof(key), "%u_%s_buckets", ports[i],
				 name[k]);
			rte_tel_data_add_dict_container(d, key, c, 0);
		}
	}
out:
	pthread_mutex_unlock(&tel_lock);
	free(lat);
	return rc;
}

static int
tel_config(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct ctl_config *c = malloc(sizeof(*c));
	struct rte_tel_data *g;
	unsigned int i;

	(void)cmd; (void)params;
	if (c == NULL)
		return -1;
	ctl_config_snapshot(c);
	rte_tel_data_start_dict(d);
	g = rte_tel_data_alloc();
	if (g != NULL) {
		rte_tel_data_start_dict(g);
		rte_tel_data_add_dict_u64(g, "bands", c->bands);
		rte_tel_data_add_dict_string(g, "classify", c->classify);
		rte_tel_data_add_dict_string(g, "priomap", c->priomap);
		rte_tel_data_add_dict_string(g, "forwarding",
					     c->paused ? "stopped" : "started");
		rte_tel_data_add_dict_u64(g, "seed", c->seed);
		rte_tel_data_add_dict_u64(g, "nb_ports", c->nb_ports);
		rte_tel_data_add_dict_container(d, "global", g, 0);
	}
	for (i = 0; i < c->nb_ports; i++) {
		struct rte_tel_data *p = rte_tel_data_alloc();
		char key[16];

		if (p == NULL)
			break;
		rte_tel_data_start_dict(p);
		rte_tel_data_add_dict_u64(p, "peer", (uint64_t)c->pair_of[i]);
		/* strings longer than RTE_TEL_MAX_STRING_LEN are cut */
		rte_tel_data_add_dict_string(p, "tbf", c->tbf[i]);
		rte_tel_data_add_dict_string(p, "netem", c->netem[i]);
		snprintf(key, sizeof(key), "%u", c->port_ids[i]);
		rte_tel_data_add_dict_container(d, key, p, 0);
	}
	free(c);
	return 0;
}

static int
tel_lcores(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int i, k;
	struct rte_tel_data *m;
	char key[16];

	(void)cmd; (void)params;
	pthread_mutex_lock(&tel_lock);
	if (!alive) {
		pthread_mutex_unlock(&tel_lock);
		return -1;
	}
	rte_tel_data_start_dict(d);
	m = rte_tel_data_alloc();
	if (m != NULL) {
		rte_tel_data_start_dict(m);
		rte_tel_data_add_dict_string(m, "role", "main");
		snprintf(key, sizeof(key), "%u", rte_get_main_lcore());
		rte_tel_data_add_dict_container(d, key, m, 0);
	}
	for (i = 0; i < S->nb_workers; i++) {
		const struct worker *w = &S->workers[S->worker_ids[i]];
		struct rte_tel_data *c = rte_tel_data_alloc();
		char list[128];
		size_t off = 0;

		if (c == NULL)
			break;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_string(c, "role", w->rx && w->tx ?
					     "rx+tx" : w->rx ? "rx" : "tx");
		rte_tel_data_add_dict_u64(c, "rx_queues", w->nb_rxq);
		list[0] = '\0';
		for (k = 0; k < w->nb_egress && off < sizeof(list); k++)
			off += snprintf(list + off, sizeof(list) - off, "%s%u",
					k ? "," : "", w->egress[k]);
		rte_tel_data_add_dict_string(c, "egress_ports", list);
		rte_tel_data_add_dict_u64(c, "loops",
			__atomic_load_n(&w->loops, __ATOMIC_RELAXED));
		snprintf(key, sizeof(key), "%u", w->lcore);
		rte_tel_data_add_dict_container(d, key, c, 0);
	}
	pthread_mutex_unlock(&tel_lock);
	return 0;
}

int
shaper_telemetry_init(struct shaper *s)
{
	int rc = 0;

	S = s;
	pthread_mutex_lock(&tel_lock);
	alive = true;
	pthread_mutex_unlock(&tel_lock);
	rc |= rte_telemetry_register_cmd("/shaper/stats", tel_stats,
		"Per-port counters (stats-file keys). Parameter: port id");
	rc |= rte_telemetry_register_cmd("/shaper/drops", tel_drops,
		"Per-port drops by cause. Parameter: port id");
	rc |= rte_telemetry_register_cmd("/shaper/bands", tel_bands,
		"Per port_band band counters. Parameter: port id");
	rc |= rte_telemetry_register_cmd("/shaper/config", tel_config,
		"Global settings and each port's tbf and netem profile");
	rc |= rte_telemetry_register_cmd("/shaper/lcores", tel_lcores,
		"Role and poll loops of each lcore");
	rc |= rte_telemetry_register_cmd("/shaper/latency", tel_latency,
		"Per-port lateness and sojourn percentiles (ns); with a port "
		"id also the buckets as upper_bound_ns, count pairs");
	return rc == 0 ? 0 : -1;
}

void
shaper_telemetry_fini(void)
{
	pthread_mutex_lock(&tel_lock);
	alive = false;
	pthread_mutex_unlock(&tel_lock);
}
