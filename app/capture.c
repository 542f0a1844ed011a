/* SPDX-License-Identifier: BSD-3-Clause */
/* The live drop capture (capture.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "capture.h"
#include "pcapng_write.h"
#include "shaper.h"

struct shp_dropcap *shaper_cap_of[RTE_MAX_LCORE];
struct shaper_capture_opt shaper_capture_opt;

/* records written a visit of the main lcore, per producer: a bound on
 * the time a visit takes, not on what is kept (the rest waits) */
#define TAKE_BURST 256
#define TAKE_MAX_PER_POLL 8192

static struct {
	bool on;
	char path[PATH_MAX];
	uint32_t snaplen;
	uint64_t limit;
	struct shp_pcapng w;
	struct shp_dropcap *prod[RTE_MAX_LCORE];
} cap;

bool
shaper_capture_running(void)
{
	/* also read by the telemetry thread */
	return __atomic_load_n(&cap.on, __ATOMIC_RELAXED);
}

/* The shaper clock's 0 as UTC ns: the file's times are wall-clock. */
static int64_t
clock_epoch(struct shaper *s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec -
	       (int64_t)shp_clock_now(&s->clock);
}

static void
drain(struct shp_dropcap *c, unsigned int max)
{
	struct shp_caprec *recs[TAKE_BURST];
	unsigned int n, i, done = 0;

	while (done < max &&
	       (n = shp_dropcap_take(c, recs, TAKE_BURST)) > 0) {
		for (i = 0; i < n; i++)
			shp_pcapng_write(&cap.w, recs[i]);
		shp_dropcap_give(c, recs, n);
		done += n;
	}
	shp_dropcap_account(c);
}

void
shaper_capture_poll(struct shaper *s)
{
	unsigned int i;

	if (!cap.on)
		return;
	for (i = 0; i < s->nb_workers; i++) {
		struct shp_dropcap *c = cap.prod[s->worker_ids[i]];

		if (c != NULL)
			drain(c, TAKE_MAX_PER_POLL);
	}
}

static void
prod_free_all(void)
{
	unsigned int l;

	for (l = 0; l < RTE_MAX_LCORE; l++) {
		shp_dropcap_free(cap.prod[l]);
		cap.prod[l] = NULL;
	}
}

int
shaper_capture_start(struct shaper *s, const char *path, uint32_t snaplen,
		     uint64_t limit, bool fresh, char *err)
{
	uint16_t nb_ifs = 0;
	unsigned int i;

	if (cap.on) {
		snprintf(err, SHP_ERR_LEN, "a drop capture runs already (to "
			 "%s): capture drops stop first", cap.path);
		return -1;
	}
	if (path == NULL || path[0] == '\0' || strlen(path) >= PATH_MAX) {
		snprintf(err, SHP_ERR_LEN, "expected a file to write");
		return -1;
	}
	if (snaplen == 0)
		snaplen = SHP_CAP_SNAPLEN_DEFAULT;
	if (limit == 0)
		limit = SHP_CAP_LIMIT_DEFAULT;
	for (i = 0; i < s->nb_workers; i++) {
		unsigned int l = s->worker_ids[i];

		cap.prod[l] = shp_dropcap_new(snaplen,
					      (int)rte_lcore_to_socket_id(l));
		if (cap.prod[l] == NULL) {
			prod_free_all();
			snprintf(err, SHP_ERR_LEN, "no memory for the capture's "
				 "records (snaplen %u)", snaplen);
			return -1;
		}
	}
	for (i = 0; i < s->nb_ports; i++)
		nb_ifs = RTE_MAX(nb_ifs, (uint16_t)(s->port_ids[i] + 1));
	if (shp_pcapng_open(&cap.w, path, nb_ifs, snaplen, limit, fresh, err,
			    SHP_ERR_LEN) < 0) {
		prod_free_all();
		return -1;
	}
	cap.w.ts_offset = clock_epoch(s);
	snprintf(cap.path, sizeof(cap.path), "%s", path);
	cap.snaplen = snaplen;
	cap.limit = limit;
	__atomic_store_n(&cap.on, true, __ATOMIC_RELAXED);
	for (i = 0; i < s->nb_workers; i++) {
		unsigned int l = s->worker_ids[i];

		__atomic_store_n(&shaper_cap_of[l], cap.prod[l],
				 __ATOMIC_RELEASE);
	}
	return 0;
}

int
shaper_capture_stop(struct shaper *s, char *err)
{
	unsigned int l;
	int rc;

	if (!cap.on) {
		snprintf(err, SHP_ERR_LEN, "no drop capture runs");
		return -1;
	}
	for (l = 0; l < RTE_MAX_LCORE; l++)
		__atomic_store_n(&shaper_cap_of[l], NULL, __ATOMIC_RELEASE);
	/* no worker is still in a burst that loaded its producer (workers
	 * that stopped are offline: nothing to wait for) */
	if (shaper_rcu != NULL)
		rte_rcu_qsbr_synchronize(shaper_rcu, RTE_QSBR_THRID_INVALID);
	for (l = 0; l < RTE_MAX_LCORE; l++)
		if (cap.prod[l] != NULL)
			drain(cap.prod[l], UINT_MAX);
	rc = shp_pcapng_close(&cap.w);
	prod_free_all();
	__atomic_store_n(&cap.on, false, __ATOMIC_RELAXED);
	(void)s;
	if (rc < 0) {
		snprintf(err, SHP_ERR_LEN, "%s: write error: %s", cap.path,
			 strerror(errno));
		return -1;
	}
	return 0;
}

static void
totals(uint64_t *captured, uint64_t *lost)
{
	unsigned int p;

	*captured = *lost = 0;
	for (p = 0; p < SHP_MAX_PORTS; p++) {
		*captured += __atomic_load_n(&shp_capture_counts[p].captured,
					     __ATOMIC_RELAXED);
		*lost += __atomic_load_n(&shp_capture_counts[p].lost,
					 __ATOMIC_RELAXED);
	}
}

void
shaper_capture_show(struct shaper *s, FILE *f)
{
	uint64_t captured, lost;
	unsigned int i;

	totals(&captured, &lost);
	if (cap.on)
		fprintf(f, "drop capture: running, to %s, snaplen %u, limit "
			"%" PRIu64 " bytes, %" PRIu64 " bytes written%s\n",
			cap.path, cap.snaplen, cap.limit, cap.w.bytes,
			cap.w.full ? " (limit reached: the file is closed to "
			"more)" : "");
	else
		fprintf(f, "drop capture: stopped\n");
	fprintf(f, "captured %" PRIu64 ", capture_lost %" PRIu64
		" (since the start)\n", captured, lost);
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		fprintf(f, "  port %u: captured %" PRIu64 ", capture_lost %"
			PRIu64 "\n", p, shp_capture_counts[p].captured,
			shp_capture_counts[p].lost);
	}
}

void
shaper_capture_json(FILE *f)
{
	uint64_t captured, lost;

	totals(&captured, &lost);
	fprintf(f, "\"running\": %s, \"captured\": %" PRIu64
		", \"capture_lost\": %" PRIu64, cap.on ? "true" : "false",
		captured, lost);
	if (cap.on)
		fprintf(f, ", \"snaplen\": %u, \"limit\": %" PRIu64
			", \"bytes\": %" PRIu64 ", \"full\": %s", cap.snaplen,
			cap.limit, cap.w.bytes, cap.w.full ? "true" : "false");
}
