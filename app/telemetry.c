/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * librte_telemetry endpoints (dpdk-telemetry.py -f PREFIX):
 *
 *   /shaper/stats[,P]   per port: the --stats-file port counters (and
 *                       its "nic" object as nic_* keys); a kind's
 *                       statistics only where it runs or counted
 *   /shaper/budget[,P]  per port: the stats file's "budget" (the
 *                       lossless budget, app/budget.c)
 *   /shaper/drops[,P]   per port: drops by cause (stats-file "drops")
 *   /shaper/bands[,P]   per "P_B" (port P, band B): the stats-file band keys
 *   /shaper/config      global settings and each port's profiles by key
 *                       (queue, tbf, netem...)
 *   /shaper/lcores      role and poll loops of each lcore
 *   /shaper/latency[,P] per port: lateness and sojourn percentiles (ns);
 *                       with P also the non-empty buckets
 *   /shaper/shards[,P]  per "P_Q" (port P, shard Q, --queues): its lcore,
 *                       tx, queued, drops by cause (since the start)
 *   /shaper/capture     the drop capture: "running" (0/1), and per port
 *                       "captured" and "capture_lost" (since the start)
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

#include "capture.h"
#include "control.h"
#include "shaper.h"
#include "shaper_wire.h"
#include "tel_counters.h"
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

/*
 * One reply is bounded twice by librte_telemetry (22.11): a dictionary
 * holds RTE_TEL_MAX_DICT_ENTRIES entries (an add beyond that fails and
 * the container stays ours to free), and the JSON text of a reply holds
 * 16 KiB (what does not fit is left out without a word). A reply that
 * would not fit whole is refused with an "error" naming the paged form
 * (one port per request), never cut short.
 */
#define TEL_REPLY_MAX (16 * 1024)
#define TEL_REPLY_SLACK 128   /* the command name, braces */

/* Add `c` under `key` to `d`; what could not be added is freed here. */
static int
add_container(struct rte_tel_data *d, const char *key, struct rte_tel_data *c)
{
	if (rte_tel_data_add_dict_container(d, key, c, 0) < 0) {
		rte_tel_data_free(c);
		return -1;
	}
	return 0;
}

struct tel_entry {
	char key[16];
	struct rte_tel_data *c;
};

static int
tel_error(struct rte_tel_data *d, const char *msg)
{
	rte_tel_data_start_dict(d);
	return rte_tel_data_add_dict_string(d, "error", msg) < 0 ? -1 : 0;
}

/* entries of a port's reply */
#define PER(w, sum) ((w) == TEL_BANDS ? (sum)->nb_bands : 1u)


/* A reply of nent entries and len bytes does not fit: d says so. */
static int
tel_too_big(struct rte_tel_data *d, const char *cmd, unsigned int nent,
	    size_t len)
{
	char msg[RTE_TEL_MAX_STRING_LEN];

	snprintf(msg, sizeof(msg), "%u entries, %zu bytes: more than one reply "
		 "holds; ask %s,P for one port", nent, len, cmd);
	return tel_error(d, msg);
}

/* The entries built, into d; or, when building one failed (rc < 0), all
 * of them freed and d left empty (once d holds a container the reply
 * must go out). Returns rc. */
static int
tel_add_built(struct rte_tel_data *d, struct tel_entry *built,
	      unsigned int nent, int rc)
{
	unsigned int i;

	if (rc < 0) {
		for (i = 0; i < nent; i++)
			if (built[i].c != NULL)
				rte_tel_data_free(built[i].c);
		return rc;
	}
	rte_tel_data_start_dict(d);
	for (i = 0; i < nent; i++)
		add_container(d, built[i].key, built[i].c);
	return rc;
}

static int
per_port(const char *cmd, const char *params, struct rte_tel_data *d,
	 enum tel_what w)
{
	uint16_t ports[SHP_MAX_PORTS];
	struct shp_port_sum *sums = NULL;
	struct tel_entry *built = NULL;
	unsigned int nent = 0, i, k, j;
	size_t len = TEL_REPLY_SLACK;
	int n, rc = 0;

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
	sums = malloc(sizeof(*sums) * (n > 0 ? n : 1));
	if (sums == NULL) {
		rc = -1;
		goto out;
	}
	/* Measure the whole reply before building any of it. */
	for (i = 0; i < (unsigned int)n; i++) {
		ctl_port_sum(S, ports[i], &sums[i]);
		/* each port's own bands */
		nent += PER(w, &sums[i]);
		for (k = 0; k < PER(w, &sums[i]); k++) {
			struct tel_dict t = { 0 };
			char key[16];

			tel_entry(w, ports[i], &S->chain[ports[i]], &sums[i], k, &t, key,
				  sizeof(key));
			len += t.len;
		}
	}
	if (nent > RTE_TEL_MAX_DICT_ENTRIES || len > TEL_REPLY_MAX) {
		rc = tel_too_big(d, cmd, nent, len);
		goto out;
	}
	/* Build every entry before adding any: once `d` holds a container
	 * the reply must go out (only the library frees it, as it replies). */
	built = calloc(nent > 0 ? nent : 1, sizeof(*built));
	if (built == NULL) {
		rc = -1;
		goto out;
	}
	for (i = 0, j = 0; i < (unsigned int)n && rc == 0; i++)
		for (k = 0; k < PER(w, &sums[i]) && rc == 0; k++) {
			struct tel_entry *e = &built[j++];
			struct tel_dict t = { .d = rte_tel_data_alloc() };

			e->c = t.d;
			if (t.d == NULL) {
				rc = -1;
				break;
			}
			rte_tel_data_start_dict(t.d);
			tel_entry(w, ports[i], &S->chain[ports[i]], &sums[i], k,
				  &t, e->key,
			      sizeof(e->key));
			if (t.err < 0)
				rc = -1;
		}
	rc = tel_add_built(d, built, nent, rc);
out:
	pthread_mutex_unlock(&tel_lock);
	free(built);
	free(sums);
	return rc;
}

static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	return per_port(cmd, params, d, TEL_STATS);
}

static int
tel_drops(const char *cmd, const char *params, struct rte_tel_data *d)
{
	return per_port(cmd, params, d, TEL_DROPS);
}

static int
tel_bands(const char *cmd, const char *params, struct rte_tel_data *d)
{
	return per_port(cmd, params, d, TEL_BANDS);
}

static int
tel_budget(const char *cmd, const char *params, struct rte_tel_data *d)
{
	return per_port(cmd, params, d, TEL_BUDGET);
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
			add_container(d, key, c);
			if (n > 1)
				continue;
			c = hist_buckets(h);
			if (c == NULL)
				break;
			snprintf(key, sizeof(key), "%u_%s_buckets", ports[i],
				 name[k]);
			add_container(d, key, c);
		}
	}
out:
	pthread_mutex_unlock(&tel_lock);
	free(lat);
	return rc;
}

/* Shard q of port: the stats file's shard keys, flat. */
static void
shard_counters(struct tel_dict *t, uint16_t port, unsigned int q)
{
	struct shp_port_sum sum;
	unsigned int k;

	ctl_shard_sum(S, port, q, &sum);
	tel_put_u64(t, "queue", q);
	tel_put_u64(t, "lcore", shaper_shard_lcore(S, port, q));
	tel_put_u64(t, "tx_packets", sum.c.tx_packets);
	tel_put_u64(t, "tx_bytes", sum.c.tx_bytes);
	tel_put_u64(t, "queued", sum.queued);
	tel_put_u64(t, "dropped", sum.dropped);
	for (k = 0; k < shp_drop_nb(); k++)
		tel_put_u64(t, shp_drop_names[k], sum.c.drops[k]);
	tel_put_u64(t, "sojourn_p50_ns", sum.sojourn.p50);
	tel_put_u64(t, "sojourn_p99_ns", sum.sojourn.p99);
	tel_put_u64(t, "sojourn_max_ns", sum.sojourn.max);
}

static int
tel_shards(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tel_entry built[SHP_MAX_PORTS * SHP_MAX_QUEUES];
	uint16_t ports[SHP_MAX_PORTS];
	unsigned int nent = 0, i, q;
	size_t len = TEL_REPLY_SLACK;
	int n, rc = 0;

	pthread_mutex_lock(&tel_lock);
	n = alive ? select_ports(params, ports) : -1;
	if (n < 0) {
		rc = -1;
		goto out;
	}
	for (i = 0; i < (unsigned int)n; i++)
		for (q = 0; q < shaper_queues(S); q++) {
			struct tel_dict t = { 0 };

			shard_counters(&t, ports[i], q);
			len += t.len + 12;
			nent++;
		}
	if (nent > RTE_TEL_MAX_DICT_ENTRIES || len > TEL_REPLY_MAX) {
		rc = tel_too_big(d, cmd, nent, len);
		goto out;
	}
	/* every entry built before any is added (per_port has why) */
	for (i = 0, nent = 0; i < (unsigned int)n; i++)
		for (q = 0; q < shaper_queues(S); q++) {
			struct tel_entry *e = &built[nent++];
			struct tel_dict t = { .d = rte_tel_data_alloc() };

			e->c = t.d;
			if (t.d == NULL) {
				rc = -1;
				continue;
			}
			rte_tel_data_start_dict(t.d);
			snprintf(e->key, sizeof(e->key), "%u_%u", ports[i], q);
			shard_counters(&t, ports[i], q);
			if (t.err < 0)
				rc = -1;
		}
	rc = tel_add_built(d, built, nent, rc);
out:
	pthread_mutex_unlock(&tel_lock);
	return rc;
}

static int
tel_config(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct ctl_config *c = malloc(sizeof(*c));
	struct rte_tel_data *g;
	unsigned int i, k;

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
		/* ns, 0: off */
		rte_tel_data_add_dict_u64(g, "max_late_ns",
					  S->opt.max_late_ns);
		rte_tel_data_add_dict_u64(g, "late_drop_ns",
					  S->opt.late_drop_ns);
		rte_tel_data_add_dict_u64(g, "nb_ports", c->nb_ports);
		rte_tel_data_add_dict_u64(g, "mbufs", S->nb_mbufs);
		rte_tel_data_add_dict_string(g, "mbuf_store",
					     shaper_pool_store(S));
		add_container(d, "global", g);
	}
	for (i = 0; i < c->nb_ports; i++) {
		struct rte_tel_data *p = rte_tel_data_alloc();
		char key[16];

		if (p == NULL)
			break;
		rte_tel_data_start_dict(p);
		rte_tel_data_add_dict_u64(p, "peer", (uint64_t)c->pair_of[i]);
		rte_tel_data_add_dict_u64(p, "disabled",
					  shaper_wire_disabled(S,
							       c->port_ids[i]));
		/* strings longer than RTE_TEL_MAX_STRING_LEN are cut */
		for (k = 0; k < SHP_SLOT_MAX; k++)
			rte_tel_data_add_dict_string(p, c->key[i][k],
						     c->stage[i][k]);
		snprintf(key, sizeof(key), "%u", c->port_ids[i]);
		add_container(d, key, p);
	}
	free(c);
	return 0;
}

static int
tel_capture(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int i;
	char key[8];

	(void)cmd; (void)params;
	pthread_mutex_lock(&tel_lock);
	if (!alive) {
		pthread_mutex_unlock(&tel_lock);
		return -1;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "running", shaper_capture_running());
	for (i = 0; i < S->nb_ports; i++) {
		uint16_t p = S->port_ids[i];
		struct rte_tel_data *c = rte_tel_data_alloc();

		if (c == NULL)
			break;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_u64(c, "captured",
			__atomic_load_n(&shp_capture_counts[p].captured,
					__ATOMIC_RELAXED));
		rte_tel_data_add_dict_u64(c, "capture_lost",
			__atomic_load_n(&shp_capture_counts[p].lost,
					__ATOMIC_RELAXED));
		snprintf(key, sizeof(key), "%u", p);
		add_container(d, key, c);
	}
	pthread_mutex_unlock(&tel_lock);
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
		add_container(d, key, m);
	}
	for (i = 0; i < S->nb_workers; i++) {
		const struct worker *w = &S->workers[S->worker_ids[i]];
		struct rte_tel_data *c = rte_tel_data_alloc();
		struct shp_stall_sum st;
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
		shaper_worker_stalls(w, &st);
		rte_tel_data_add_dict_u64(c, "loops", st.loops);
		rte_tel_data_add_dict_u64(c, "stalls", st.stalls);
		rte_tel_data_add_dict_u64(c, "stalled_ns", st.stalled_ns);
		rte_tel_data_add_dict_u64(c, "hiccups", st.hiccups);
		rte_tel_data_add_dict_u64(c, "hiccup_ns", st.hiccup_ns);
		rte_tel_data_add_dict_u64(c, "longest_loop_ns", st.longest_ns);
		rte_tel_data_add_dict_u64(c, "runq_wait_ns", st.runq_wait_ns);
		rte_tel_data_add_dict_u64(c, "cpu_slices", st.cpu_slices);
		rte_tel_data_add_dict_u64(c, "steal_ns", st.steal_ns);
		snprintf(key, sizeof(key), "%u", w->lcore);
		add_container(d, key, c);
	}
	pthread_mutex_unlock(&tel_lock);
	return 0;
}

/* Keys "P_NAME" (port, class): its counters as in the stats file's
 * ports.P.classes.NAME, drops by cause among them (one container level,
 * as /shaper/bands). Parameter: a port id (default all). */
static int
tel_classes(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int i, k;
	int only = -1, d_i;

	(void)cmd;
	if (params != NULL && *params != '\0') {
		char *end;
		long v = strtol(params, &end, 10);

		if (*end != '\0' || v < 0 || v >= SHP_MAX_PORTS)
			return -1;
		only = (int)v;
	}
	pthread_mutex_lock(&tel_lock);
	if (!alive) {
		pthread_mutex_unlock(&tel_lock);
		return -1;
	}
	rte_tel_data_start_dict(d);
	for (i = 0; i < S->nb_ports; i++) {
		uint16_t p = S->port_ids[i];
		struct shp_class_sum s;

		if (only >= 0 && only != p)
			continue;
		for (k = 0; shp_classes_sum_cleared(p, k, &s) == 0; k++) {
			struct rte_tel_data *c = rte_tel_data_alloc();
			char key[64];

			if (c == NULL)
				break;
			rte_tel_data_start_dict(c);
			rte_tel_data_add_dict_u64(c, "packets", s.out_packets);
			rte_tel_data_add_dict_u64(c, "bytes", s.out_bytes);
			rte_tel_data_add_dict_u64(c, "in_packets", s.in_packets);
			rte_tel_data_add_dict_u64(c, "in_bytes", s.in_bytes);
			rte_tel_data_add_dict_u64(c, "queued", s.queued);
			rte_tel_data_add_dict_u64(c, "dropped", s.dropped);
			rte_tel_data_add_dict_u64(c, "quantum", s.quantum);
			rte_tel_data_add_dict_u64(c, "prio", s.prio);
			rte_tel_data_add_dict_u64(c, "retiring", s.retiring);
			rte_tel_data_add_dict_u64(c, "sojourn_min_ns",
						  s.sojourn.min);
			rte_tel_data_add_dict_u64(c, "sojourn_avg_ns",
						  shp_class_sojourn_avg(&s));
			rte_tel_data_add_dict_u64(c, "sojourn_p99_ns",
						  s.sojourn.p99);
			rte_tel_data_add_dict_u64(c, "sojourn_max_ns",
						  s.sojourn.max);
			for (d_i = 0; d_i < (int)shp_drop_nb(); d_i++)
				rte_tel_data_add_dict_u64(c, shp_drop_names[d_i],
							  s.drops[d_i]);
			snprintf(key, sizeof(key), "%u_%s", p, s.name);
			add_container(d, key, c);
		}
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
	rc |= rte_telemetry_register_cmd("/shaper/budget", tel_budget,
		"Per port lossless budget of its delay line. Parameter: "
		"port id");
	rc |= rte_telemetry_register_cmd("/shaper/config", tel_config,
		"Global settings and each port's tbf and netem profile");
	rc |= rte_telemetry_register_cmd("/shaper/lcores", tel_lcores,
		"Role and poll loops of each lcore");
	rc |= rte_telemetry_register_cmd("/shaper/classes", tel_classes,
		"Per port_class counters of the per-class profiles. "
		"Parameter: port id");
	rc |= rte_telemetry_register_cmd("/shaper/latency", tel_latency,
		"Per-port lateness and sojourn percentiles (ns); with a port "
		"id also the buckets as upper_bound_ns, count pairs");
	rc |= rte_telemetry_register_cmd("/shaper/capture", tel_capture,
		"The drop capture: running, per port captured and "
		"capture_lost");
	rc |= rte_telemetry_register_cmd("/shaper/shards", tel_shards,
		"Per port_shard counters (--queues): lcore, tx, queued, "
		"drops. Parameter: port id");
	return rc == 0 ? 0 : -1;
}

void
shaper_telemetry_fini(void)
{
	pthread_mutex_lock(&tel_lock);
	alive = false;
	pthread_mutex_unlock(&tel_lock);
}
