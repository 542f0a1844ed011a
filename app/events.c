/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event stream (events.h): a ring of the last SHP_EVENTS_KEEP events
 * and their two printed forms. Main lcore only.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include <rte_common.h>

#include "events.h"

#define NS_S UINT64_C(1000000000)

static const char *const src_names[SHP_EV_NB] = {
	[SHP_EV_CLI] = "cli",
	[SHP_EV_CTL] = "ctl",
	[SHP_EV_REST] = "rest",
	[SHP_EV_SCHEDULE] = "schedule",
	[SHP_EV_REVERT] = "revert",
	[SHP_EV_START] = "start",
	[SHP_EV_SHAPER] = "shaper",
};

static struct shp_event ring[SHP_EVENTS_KEEP];
static uint64_t last_id;
static struct shaper *S_ev;
static enum shp_event_src cur_src = SHP_EV_CLI;

void (*shp_event_sink)(const struct shp_event *e);
uint64_t shp_events_lost;
unsigned int shp_events_watchers;

void
shp_events_init(struct shaper *s)
{
	S_ev = s;
}

enum shp_event_src
shp_event_source_set(enum shp_event_src src)
{
	enum shp_event_src was = cur_src;

	cur_src = src;
	return was;
}

enum shp_event_src
shp_event_source(void)
{
	return cur_src;
}

const char *
shp_event_src_name(enum shp_event_src src)
{
	return (unsigned int)src < SHP_EV_NB ? src_names[src] : "?";
}

uint64_t
shp_event_emit(enum shp_event_src src, int port, const char *what,
	       const char *old, const char *new)
{
	struct shp_event *e = &ring[last_id % SHP_EVENTS_KEEP];
	struct timespec ts;
	uint64_t now;

	e->id = ++last_id;
	e->link_ns = 0;
	if (S_ev != NULL && S_ev->start_ns != 0) {
		now = shp_clock_now(&S_ev->clock);
		e->link_ns = now > S_ev->start_ns ? now - S_ev->start_ns : 0;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	e->wall_ns = (uint64_t)ts.tv_sec * NS_S +
		     (uint64_t)ts.tv_nsec;
	e->port = port;
	e->shards = 0;
	if (port >= 0 && S_ev != NULL)
		e->shards = shaper_queues(S_ev) >= 32 ? UINT32_MAX :
			    (1u << shaper_queues(S_ev)) - 1;
	e->src = src;
	snprintf(e->what, sizeof(e->what), "%s", what);
	snprintf(e->old, sizeof(e->old), "%s", old != NULL ? old : "");
	snprintf(e->new, sizeof(e->new), "%s", new != NULL ? new : "");
	if (shp_event_sink != NULL)
		shp_event_sink(e);
	return e->id;
}

uint64_t
shp_events_last(void)
{
	return last_id;
}

const struct shp_event *
shp_event_get(uint64_t id)
{
	if (id == 0 || id > last_id || last_id - id >= SHP_EVENTS_KEEP)
		return NULL;
	return &ring[(id - 1) % SHP_EVENTS_KEEP];
}

/* ---- printing ---- */

struct obuf {
	char *p;
	size_t n, len;
};

static void __rte_format_printf(2, 3)
put(struct obuf *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (b->n + 1 >= b->len)
		return;
	va_start(ap, fmt);
	k = vsnprintf(b->p + b->n, b->len - b->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		b->n = RTE_MIN(b->n + (size_t)k, b->len - 1);
}

static void
put_json_string(struct obuf *b, const char *s)
{
	put(b, "\"");
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			put(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			put(b, "\\u%04x", c);
		else
			put(b, "%c", c);
	}
	put(b, "\"");
}

/* A text in the one-line form: a control byte would break the line. */
static void
put_text(struct obuf *b, const char *s)
{
	if (*s == '\0')
		put(b, "-");
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		put(b, "%c", c < 0x20 || c == 0x7f ? ' ' : c);
	}
}

/* "0-3", "0,2": the shards (a run of them as a range) */
static void
put_shards(struct obuf *b, uint32_t m, bool json)
{
	unsigned int q;
	bool first = true;

	for (q = 0; q < 32; q++) {
		unsigned int r = q;

		if (!(m & (1u << q)))
			continue;
		if (json) {
			put(b, "%s%u", first ? "" : ", ", q);
		} else {
			while (r + 1 < 32 && (m & (1u << (r + 1))))
				r++;
			put(b, r > q ? "%s%u-%u" : "%s%u", first ? "" : ",",
			    q, r);
			q = r;
		}
		first = false;
	}
}

size_t
shp_event_format(const struct shp_event *e, int json, char *buf, size_t len)
{
	struct obuf b = { buf, 0, len };
	char wall[40];
	time_t t = (time_t)(e->wall_ns / NS_S);
	struct tm tm;
	size_t w;

	gmtime_r(&t, &tm);
	w = strftime(wall, sizeof(wall), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(wall + w, sizeof(wall) - w, ".%09" PRIu64 "Z",
		 e->wall_ns % NS_S);
	buf[0] = '\0';
	if (json) {
		put(&b, "{\"id\": %" PRIu64 ", \"link_ns\": %" PRIu64
		    ", \"wall\": \"%s\", \"wall_ns\": %" PRIu64 ", \"port\": ",
		    e->id, e->link_ns, wall, e->wall_ns);
		if (e->port >= 0)
			put(&b, "%d", e->port);
		else
			put(&b, "null");
		put(&b, ", \"shards\": [");
		put_shards(&b, e->shards, true);
		put(&b, "], \"what\": ");
		put_json_string(&b, e->what);
		put(&b, ", \"old\": ");
		put_json_string(&b, e->old);
		put(&b, ", \"new\": ");
		put_json_string(&b, e->new);
		put(&b, ", \"source\": \"%s\"}", shp_event_src_name(e->src));
	} else {
		/* 12 +1.234567890s 2026-...Z ctl port 0 netem: OLD -> NEW */
		put(&b, "%" PRIu64 " +%" PRIu64 ".%09" PRIu64 "s %s %s ",
		    e->id, e->link_ns / NS_S,
		    e->link_ns % NS_S, wall,
		    shp_event_src_name(e->src));
		if (e->port >= 0) {
			put(&b, "port %d ", e->port);
			if (e->shards & ~1u) {
				put(&b, "shards ");
				put_shards(&b, e->shards, false);
				put(&b, " ");
			}
		} else {
			put(&b, "port all ");
		}
		put_text(&b, e->what);
		put(&b, ": ");
		put_text(&b, e->old);
		put(&b, " -> ");
		put_text(&b, e->new);
	}
	/* the line ends, cut or not */
	if (b.n + 1 >= len)
		b.n = len - 2;
	buf[b.n++] = '\n';
	buf[b.n] = '\0';
	return b.n;
}

void
shp_events_stats_print(FILE *f)
{
	fprintf(f, "events: %" PRIu64 " applied, %u watcher%s, events_lost %"
		PRIu64 "\n", last_id, shp_events_watchers,
		shp_events_watchers == 1 ? "" : "s", shp_events_lost);
}
