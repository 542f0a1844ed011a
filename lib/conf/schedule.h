/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedules (--schedule FILE): a link that changes at given times.
 *
 *     # TIME    COMMAND
 *     0s        set netem all delay 10ms
 *     2s        set netem 1 delay 200ms loss 5%
 *     5s        link down 0
 *     6s        link up 0
 *     8s        clear tbf all
 *     repeat 10s
 *
 * TIME is an offset from the start (the program's start; offline the
 * first packet's timestamp) in tc's time syntax ("0" alone is allowed);
 * times never go backwards. COMMAND is a CLI `set KEY P|all ARGS` or
 * `clear KEY P|all` of a stage key (shp_kind_key), or `link down|up
 * P|all`. `repeat PERIOD`, last, plays the schedule again every PERIOD
 * (longer than the last time). '#' starts a comment.
 *
 * This file holds what needs no port: the parser (checking every command
 * with the kinds' own parsers, every port against the known ones), the
 * order of occurrences, the link state at any time (a pure function of
 * the time: any lcore can ask, in any order), and the single-threaded
 * application the offline tool uses. The program's data path applies
 * the same events itself (app/schedule.c).
 */
#ifndef SHP_SCHEDULE_H
#define SHP_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "shp_chain.h"
#include "shp_kind.h"
#include "shp_stats.h"
#include "shp_units.h"

#define SHP_SCHED_NONE UINT64_MAX
/* A schedule file's bounds: a line is a time and a command line. */
#define SHP_SCHED_FILE_MAX ((size_t)16 << 20)
#define SHP_SCHED_LINE_MAX 4096
/* The shortest `repeat` period. The program's data path makes a change
 * within one poll round (microseconds) and its main lcore parses the next
 * cycles' confs at each control tick (a millisecond): a cycle below this
 * could not be followed live, and offline would spend its time on
 * changes no packet meets. */
#define SHP_SCHED_MIN_REPEAT UINT64_C(1000000)
#define SHP_SCHED_MIN_REPEAT_TEXT "1ms"

enum shp_sched_op {
	SHP_SCHED_SET,     /* set KEY P ARGS, clear KEY P */
	SHP_SCHED_LINK,    /* link down|up P [carrier] */
	SHP_SCHED_TOGGLE,  /* disable|enable P (down: disable) */
};

struct shp_sched_event {
	uint64_t t;              /* ns from the start */
	enum shp_sched_op op;
	int port;                /* -1: every port */
	char key[16];            /* SET: queue, tbf, netem... */
	/* SET: the key's text; NULL for `clear` (off, or for a queue its
	 * kind's defaults: shp_sched_args) */
	char *args;
	bool down;               /* LINK; TOGGLE: disable */
	bool carrier;            /* LINK down: the port's carrier too */
	/* SET: `for TIME` (0: none): shp_sched_expand_for adds the change
	 * back as an event of its own (revert: one of those) */
	uint64_t for_ns;
	bool revert;
	unsigned int line;
	char *text;              /* the command as written, for `show` */
};

/* A port's link events, in time order (shp_sched_link_down). */
struct shp_sched_link {
	unsigned int nb;
	uint64_t *t;
	bool *down;
	bool *carrier;
};

struct shp_sched {
	char *path;
	struct shp_sched_event *ev;
	unsigned int nb;
	unsigned int nb_lines;   /* the file's (nb: and the changes back) */
	uint64_t repeat;         /* period; 0: played once */
	struct shp_sched_link link[SHP_MAX_PORTS];
};

/*
 * Read a schedule from f (named path in messages). ports[0..nb_ports)
 * are the ports that exist; env is given to the kinds' parsers. 0, or -1
 * with one line in err: "PATH:LINE: what is wrong" (nothing to free).
 */
int shp_sched_parse(struct shp_sched *s, const char *path, FILE *f,
		    const uint16_t *ports, unsigned int nb_ports,
		    const struct shp_kind_env *env, char *err);
/* The same from a file. */
int shp_sched_load(struct shp_sched *s, const char *path,
		   const uint16_t *ports, unsigned int nb_ports,
		   const struct shp_kind_env *env, char *err);
void shp_sched_free(struct shp_sched *s);

/* Does event e concern port p? */
static inline bool
shp_sched_on_port(const struct shp_sched_event *e, uint16_t p)
{
	return e->port < 0 || e->port == p;
}

/*
 * Occurrences, in the order they happen: event i of cycle c at
 * c * repeat + ev[i].t (only cycle 0 without repeat). A cursor names the
 * next one.
 */
struct shp_sched_cursor {
	uint64_t cycle;
	unsigned int i;
};

/* Time of the cursor's occurrence (from the start), or SHP_SCHED_NONE
 * when the schedule is over. */
uint64_t shp_sched_cursor_time(const struct shp_sched *s,
			       const struct shp_sched_cursor *c);
void shp_sched_cursor_next(const struct shp_sched *s,
			   struct shp_sched_cursor *c);
/* The first occurrence at or after time t. */
void shp_sched_cursor_seek(const struct shp_sched *s, uint64_t t,
			   struct shp_sched_cursor *c);

/*
 * Is port p's link down at time t (from the start), by the schedule?
 * *since: when the last link event of p at or before t happened
 * (SHP_SCHED_NONE: none yet, the link is up).
 */
bool shp_sched_link_down(const struct shp_sched *s, uint16_t p, uint64_t t,
			 uint64_t *since);
/* Is port p's link down at time t with its carrier (`link down P
 * carrier`), by the schedule? */
bool shp_sched_link_carrier(const struct shp_sched *s, uint16_t p,
			    uint64_t t);
/* Does the schedule ever take port p's link down or up? */
static inline bool
shp_sched_has_link(const struct shp_sched *s, uint16_t p)
{
	return s != NULL && p < SHP_MAX_PORTS && s->link[p].nb > 0;
}

/*
 * last[i] for each event i: it is a `set`/`clear` on port p and no later
 * line at the same time changes the same slot of p. Only such a change
 * need be applied: the ones before it at that instant are replaced
 * before any packet can meet them, so the result is the same (a new
 * profile restarts its stage's state, and the last one does).
 */
void shp_sched_last_at_instant(const struct shp_sched *s, uint16_t p,
			       bool *last);
/* The slot event e changes (a SET event) */
enum shp_slot shp_sched_slot(const struct shp_sched_event *e);

/* The text a SET event gives port's chain: its args, or for a `clear`
 * "off" (a queue: its kind's name, the defaults). */
const char *shp_sched_args(const struct shp_sched_event *e,
			   const struct shp_chain *c);

/*
 * Check the SET events on port p against the chain it runs: the slot
 * must run the event's kind, the kind must be able to change, and take
 * the event's conf from the chain's (check_change). 0, or
 * -1 with "PATH:LINE: ..." in err.
 */
int shp_sched_check_chain(const struct shp_sched *s, uint16_t p,
			  const struct shp_chain *c,
			  const struct shp_kind_env *env, char *err);

/*
 * `set ... for TIME` lines: for each port, the change back at exactly
 * t + TIME, as an event of its own, before the lines of that instant.
 * The `for`s running on a stage at once stack: the stage runs the latest
 * still running, and when the last has ended the profile it had by the
 * schedule before the first (at the start: chains[p]'s, chains indexed
 * by port id); an end that changes nothing makes no event. A line without
 * `for` for the same stage of the port holds: it drops the `for`s
 * running there (their ends change nothing). With `repeat`,
 * t + TIME must be within the cycle, and the profile gone back to the
 * same in every cycle. After shp_sched_check_chain, before anything
 * reads the events (they move). 0, or -1 with "PATH:LINE: ..." in err.
 */
int shp_sched_expand_for(struct shp_sched *s, const uint16_t *ports,
			 unsigned int nb_ports, const struct shp_chain *chains,
			 const struct shp_kind_env *env, char *err);

/*
 * Single-threaded (the offline tool, tests): apply SET event e to port
 * p's chain now, freeing the old conf at once (no other thread reads it).
 * 0, or -1 with err. LINK events change nothing here (the link state is
 * shp_sched_link_down's).
 */
int shp_sched_apply(const struct shp_sched_event *e, struct shp_chain *c,
		    const struct shp_kind_env *env, char *err);
/*
 * The same on the n (at most SHP_MAX_QUEUES) chains c[0..n) of a port's
 * shards, as one change: each its own conf, twinned with the first's
 * (shp_conf_twin: a bucket the shards share refills once). Nothing is
 * changed if a conf cannot be made. 0, or -1 with err.
 */
int shp_sched_apply_shards(const struct shp_sched_event *e,
			   struct shp_chain *c, unsigned int n,
			   const struct shp_kind_env *env, char *err);

/* "2.5s" style time for listings */
void shp_sched_fmt_time(char *buf, size_t len, uint64_t ns);

#endif
