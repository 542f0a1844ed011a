/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event stream: every change the shaper applies, as it is applied
 * (docs/monitoring.md, "Event stream"). The main lcore makes every change
 * (the control plane, a `for`'s end, the schedule's steps as it takes
 * the old confs back), so it also makes the events: no worker does any
 * work for them. The last SHP_EVENTS_KEEP are kept for a watcher that
 * asks for what it missed (`watch since ID`); each new one is handed to
 * the sink (the control socket's watchers).
 */
#ifndef SHAPER_EVENTS_H
#define SHAPER_EVENTS_H

#include <stdint.h>
#include <stdio.h>

#include "shaper.h"

#define SHP_EVENTS_KEEP 1000
#define SHP_EVENT_TEXT 1024      /* a profile's text, at most */
#define SHP_EVENT_WHAT 64        /* "netem", "class voip", "link"... */

/* Where a change came from: the names are a contract (docs). */
enum shp_event_src {
	SHP_EV_CLI,        /* typed at the prompt */
	SHP_EV_CTL,        /* the control socket */
	SHP_EV_REST,       /* shaper-api (the socket, tagged `from rest`) */
	SHP_EV_SCHEDULE,   /* a --schedule line */
	SHP_EV_REVERT,     /* the end of a `for TIME` */
	SHP_EV_START,      /* --cmdline-file, before forwarding starts */
	SHP_EV_SHAPER,     /* the shaper itself: overload shedding */
	SHP_EV_NB
};

struct shp_event {
	uint64_t id;          /* 1, 2, ...: increasing, never reused */
	uint64_t link_ns;     /* the link's time: ns since forwarding began */
	uint64_t wall_ns;     /* CLOCK_REALTIME */
	int port;             /* -1: no one port (a class on all, priomap) */
	uint32_t shards;      /* the port's shards it applies to (bits) */
	enum shp_event_src src;
	char what[SHP_EVENT_WHAT];
	char old[SHP_EVENT_TEXT];
	char new[SHP_EVENT_TEXT];
};

void shp_events_init(struct shaper *s);

/* The source of what runs now (set around a command's run); returns
 * the one it replaces, to give back after. */
enum shp_event_src shp_event_source_set(enum shp_event_src src);
enum shp_event_src shp_event_source(void);
const char *shp_event_src_name(enum shp_event_src src);

/*
 * One change applied, main lcore only: what (a stage's key, "class
 * NAME", "priomap", "link", "overload", "capture drops"...), port (-1:
 * none in particular; shards: every shard of the port), the text before
 * and after ("" for none). E.g. a capture started by the running command:
 *   shp_event_emit(shp_event_source(), -1, "capture drops", "off",
 *                  "drops.pcapng snaplen 128");
 * Returns its id.
 */
uint64_t shp_event_emit(enum shp_event_src src, int port, const char *what,
			const char *old, const char *new);

/* The newest id (0: none yet). */
uint64_t shp_events_last(void);
/* The kept event id, or NULL (too old, or not yet). */
const struct shp_event *shp_event_get(uint64_t id);

/* An event as one line (text form, or one JSON object), '\n' ended,
 * into buf; its length (at most len - 1). */
size_t shp_event_format(const struct shp_event *e, int json, char *buf,
			size_t len);

/* Who hears each new event (the control socket), or NULL. */
extern void (*shp_event_sink)(const struct shp_event *e);

/* Watchers the socket dropped for not reading (`events_lost`). */
extern uint64_t shp_events_lost;
extern unsigned int shp_events_watchers;

/* `show stats`: the stream's line. */
void shp_events_stats_print(FILE *f);

#endif
