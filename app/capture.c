/* SPDX-License-Identifier: BSD-3-Clause */
/* The live drop capture (capture.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "capture.h"
#include "events.h"
#include "pcapng_write.h"
#include "shaper.h"

struct shp_dropcap *shaper_cap_of[RTE_MAX_LCORE];
struct shaper_capture_opt shaper_capture_opt;

/* records written a visit of the main lcore, per producer: a bound on
 * the time a visit takes, not on what is kept (the rest waits) */
#define TAKE_BURST 256
#define TAKE_MAX_PER_POLL 8192

static struct {
	bool on;              /* the drop capture runs */
	char path[PATH_MAX];
	uint32_t snaplen;
	uint64_t limit;
	struct shp_pcapng w;
	/* the producers, while the capture or the packet log runs; made
	 * with the records' size of prod_snaplen */
	struct shp_dropcap *prod[RTE_MAX_LCORE];
	uint32_t prod_snaplen;
	/* the live packet log (--packet-log) */
	FILE *log;
	char *log_buf;
	uint64_t log_bytes, log_limit, log_lines;
	int64_t log_offset;
} cap;

#define LOG_LINE_MAX 256

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

/* A line of the live packet log, the offline one's columns: its
 * arrival and fate in UTC ns; what only the offline tool can tell (the
 * frame's index in a capture, corrupted, reordered, ECN-marked) is left
 * empty. Past the limit, counted lost. */
static void
log_write(const struct shp_caprec *r)
{
	char line[LOG_LINE_MAX];
	int64_t off = cap.log_offset;
	bool sent = r->slot == SHP_CAP_SENT;
	const char *fate = sent ? "sent" : shp_drop_names[r->slot];
	char band[8] = "";
	int n;

	if (cap.log == NULL)
		return;
	if (r->band != SHP_CAP_NO_BAND)
		snprintf(band, sizeof(band), "%u", r->band);
	if (sent)
		n = snprintf(line, sizeof(line), ",%" PRId64 ",%u,%u,%s,%s,"
			     "sent,%" PRId64 ",%" PRIu64 ",,%d,,,\n",
			     (int64_t)r->rx_ns + off, r->port, r->shard,
			     r->cls, band, (int64_t)r->time_ns + off,
			     r->time_ns - r->rx_ns, r->copy);
	else
		n = snprintf(line, sizeof(line), ",%" PRId64 ",%u,%u,%s,%s,"
			     "%s,,,%" PRId64 ",%d,,,\n",
			     (int64_t)r->rx_ns + off, r->port, r->shard,
			     r->cls, band, fate != NULL ? fate : "unknown",
			     (int64_t)r->time_ns + off, r->copy);
	if (n <= 0 || (size_t)n >= sizeof(line) ||
	    cap.log_bytes + (uint64_t)n > cap.log_limit) {
		__atomic_store_n(&shp_capture_counts[r->port].lost,
				 shp_capture_counts[r->port].lost + 1,
				 __ATOMIC_RELAXED);
		return;
	}
	fwrite(line, 1, (size_t)n, cap.log);
	cap.log_bytes += (uint64_t)n;
	cap.log_lines++;
}

static void
drain(struct shp_dropcap *c, unsigned int max)
{
	struct shp_caprec *recs[TAKE_BURST];
	unsigned int n, i, done = 0;

	while (done < max &&
	       (n = shp_dropcap_take(c, recs, TAKE_BURST)) > 0) {
		for (i = 0; i < n; i++) {
			if (recs[i]->kind == SHP_CAP_K_LOG)
				log_write(recs[i]);
			else if (cap.w.f != NULL)
				shp_pcapng_write(&cap.w, recs[i]);
		}
		shp_dropcap_give(c, recs, n);
		done += n;
	}
	/* the file full: the worker stops copying what would be lost */
	if (cap.w.full && !c->file_full)
		__atomic_store_n(&c->file_full, true, __ATOMIC_RELAXED);
	shp_dropcap_account(c);
}

void
shaper_capture_poll(struct shaper *s)
{
	unsigned int i;

	if (!cap.on && cap.log == NULL)
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
	cap.prod_snaplen = 0;
}

/* The producers of every worker, with records of snaplen bytes (they
 * may exist already: the packet log's). 0, or -1 with err. */
static int
prod_up(struct shaper *s, uint32_t snaplen, char *err)
{
	unsigned int i;

	if (cap.prod_snaplen != 0) {
		if (snaplen <= cap.prod_snaplen)
			return 0;
		snprintf(err, SHP_ERR_LEN, "snaplen %u: at most %u while the "
			 "packet log runs", snaplen, cap.prod_snaplen);
		return -1;
	}
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
		cap.prod[l]->drops = false;
	}
	cap.prod_snaplen = snaplen;
	return 0;
}

/* Each worker's producer published (after what it does changed). */
static void
prod_publish(struct shaper *s)
{
	unsigned int i;

	for (i = 0; i < s->nb_workers; i++) {
		unsigned int l = s->worker_ids[i];

		__atomic_store_n(&shaper_cap_of[l], cap.prod[l],
				 __ATOMIC_RELEASE);
	}
}

int
shaper_capture_start(struct shaper *s, const char *path, uint32_t snaplen,
		     uint64_t limit, bool fresh, char *err)
{
	bool made = cap.prod_snaplen == 0;
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
	if (prod_up(s, snaplen, err) < 0)
		return -1;
	for (i = 0; i < s->nb_ports; i++)
		nb_ifs = RTE_MAX(nb_ifs, (uint16_t)(s->port_ids[i] + 1));
	if (shp_pcapng_open(&cap.w, path, nb_ifs, snaplen, limit, fresh, err,
			    SHP_ERR_LEN) < 0) {
		if (made)
			prod_free_all();
		return -1;
	}
	cap.w.ts_offset = clock_epoch(s);
	snprintf(cap.path, sizeof(cap.path), "%s", path);
	cap.snaplen = snaplen;
	cap.limit = limit;
	__atomic_store_n(&cap.on, true, __ATOMIC_RELAXED);
	for (i = 0; i < s->nb_workers; i++) {
		__atomic_store_n(&cap.prod[s->worker_ids[i]]->file_full, false,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&cap.prod[s->worker_ids[i]]->drops, true,
				 __ATOMIC_RELAXED);
	}
	prod_publish(s);
	{
		char now[PATH_MAX + 64];

		snprintf(now, sizeof(now), "%s snaplen %u limit %" PRIu64,
			 path, snaplen, limit);
		shp_event_emit(shp_event_source(), -1, "capture drops", "off",
			       now);
	}
	return 0;
}

int
shaper_packet_log_start(struct shaper *s, const char *path, uint32_t every,
			uint64_t limit, char *err)
{
	unsigned int i;

	cap.log = fopen(path, "w");
	if (cap.log == NULL) {
		snprintf(err, SHP_ERR_LEN, "%s: cannot write it: %s", path,
			 strerror(errno));
		return -1;
	}
	cap.log_buf = malloc(1u << 20);
	if (cap.log_buf != NULL)
		setvbuf(cap.log, cap.log_buf, _IOFBF, 1u << 20);
	if (prod_up(s, SHP_CAP_SNAPLEN_DEFAULT, err) < 0) {
		fclose(cap.log);
		cap.log = NULL;
		return -1;
	}
	cap.log_limit = limit != 0 ? limit : SHP_CAP_LIMIT_DEFAULT;
	shp_capture_ran = true;   /* its losses are capture_lost */
	cap.log_offset = clock_epoch(s);
	cap.log_bytes = (uint64_t)fprintf(cap.log, "index,arrival_ns,port,"
		"shard,class,band,fate,departure_ns,sojourn_ns,dropped_ns,"
		"duplicated,corrupted,reordered,ecn_marked\n");
	for (i = 0; i < s->nb_workers; i++)
		cap.prod[s->worker_ids[i]]->log_every = every;
	prod_publish(s);
	return 0;
}

/* No worker is still in a burst that saw the producers as they were
 * (workers that stopped are offline: nothing to wait for); then what
 * they queued is written. */
static void
quiesce_and_drain(void)
{
	unsigned int l;

	if (shaper_rcu != NULL)
		rte_rcu_qsbr_synchronize(shaper_rcu, RTE_QSBR_THRID_INVALID);
	for (l = 0; l < RTE_MAX_LCORE; l++)
		if (cap.prod[l] != NULL)
			drain(cap.prod[l], UINT_MAX);
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
	for (l = 0; l < RTE_MAX_LCORE; l++) {
		if (cap.log == NULL)
			__atomic_store_n(&shaper_cap_of[l], NULL,
					 __ATOMIC_RELEASE);
		else if (cap.prod[l] != NULL)
			__atomic_store_n(&cap.prod[l]->drops, false,
					 __ATOMIC_RELAXED);
	}
	quiesce_and_drain();
	rc = shp_pcapng_close(&cap.w);
	if (cap.log == NULL)
		prod_free_all();
	__atomic_store_n(&cap.on, false, __ATOMIC_RELAXED);
	shp_event_emit(shp_event_source(), -1, "capture drops", cap.path,
		       "off");
	(void)s;
	if (rc < 0) {
		snprintf(err, SHP_ERR_LEN, "%s: write error: %s", cap.path,
			 strerror(errno));
		return -1;
	}
	return 0;
}

int
shaper_packet_log_stop(struct shaper *s, char *err)
{
	unsigned int l;
	int rc = 0;

	if (cap.log == NULL)
		return 0;
	if (cap.on) {
		/* (at exit: the capture first) */
		rc = shaper_capture_stop(s, err);
	}
	for (l = 0; l < RTE_MAX_LCORE; l++)
		__atomic_store_n(&shaper_cap_of[l], NULL, __ATOMIC_RELEASE);
	quiesce_and_drain();
	if ((fflush(cap.log) != 0 || ferror(cap.log)) && rc == 0) {
		snprintf(err, SHP_ERR_LEN, "--packet-log: write error: %s",
			 strerror(errno));
		rc = -1;
	}
	fclose(cap.log);
	cap.log = NULL;
	free(cap.log_buf);
	cap.log_buf = NULL;
	prod_free_all();
	return rc;
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
	if (cap.log != NULL)
		fprintf(f, "packet log: %" PRIu64 " lines, %" PRIu64
			" bytes\n", cap.log_lines, cap.log_bytes);
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
