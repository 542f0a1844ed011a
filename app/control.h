/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control plane: runtime changes (netem, tbf, priomap, classify) with
 * RCU publication and the periodic duties of the main lcore (control.c);
 * it includes the two parts that only read: the config snapshot
 * (ctl_config.h) and the counters since `clear stats`, rates and the
 * periodic table (ctl_stats.h).
 *
 * Every function here runs on the main lcore (CLI, command files, control
 * loop) except ctl_*_snapshot/ctl_port_sum, which telemetry callbacks call
 * from their own thread: those take a lock and read only counters.
 */
#ifndef SHAPER_CONTROL_H
#define SHAPER_CONTROL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl_config.h"
#include "ctl_stats.h"
#include "shaper.h"

int ctl_init(struct shaper *s);
/* Returns once every worker went round its loop (an RCU QSBR grace
 * period): none still holds what was unpublished before. */
void ctl_grace_period(void);
/* ctl_classes.c: class set ns prepared for every port (env: the kinds'
 * environment; an error changes nothing), then published, the old freed
 * after a grace period (u: what prepare built) */
struct shp_class_set;
struct shp_classes_update;
int ctl_classes_prepare(struct shaper *s, const struct shp_class_set *ns,
			const struct shp_kind_env *env,
			struct shp_classes_update **u, char *err);
void ctl_classes_publish(struct shaper *s, struct shp_classes_update **u);
/* A delay limit above the port's share of the pool is capped by the
 * stages (pool_share): printed as a warning, as the start does. */
void ctl_hold_note(const struct shaper *s, uint16_t port,
		   const struct shp_kind *k, const void *conf,
		   const char *what, const struct shp_kind_env *env);
/* After the workers stopped: take every conf back and free it. */
void ctl_fini(struct shaper *s);

/* `set KEY PORT|all ARGS` (KEY: queue, tbf, netem... shp_kind_key);
 * port < 0: every port. 0, or -1 with err (nothing changed). */
int ctl_set_stage(struct shaper *s, const char *key, int port,
		  const char *args, char *err);
/* The same with its own text for each port: args_of[i] for port index i
 * (every port checked first, then one publication, or nothing). */
int ctl_set_stage_each(struct shaper *s, const char *key, int port,
		       const char *const *args_of, const char *args,
		       char *err);
/* Several such changes, each of another stage or port: all checked, then
 * published at once with one grace period, or none (-1 with err naming
 * the change). --atomic command files and batches. */
#define CTL_BATCH_MAX 64
struct ctl_change {
	const char *key;
	int port;
	const char *const *args_of;   /* by port index */
};
int ctl_set_stages(struct shaper *s, const struct ctl_change *ch,
		   unsigned int n, char *err);
/*
 * A change that expires (`set|update ... for TIME`): as ctl_set_stage_each,
 * then after for_ns each port changed comes back (ctl_tick). The `for`s
 * running on a stage at once stack over the profile from before the
 * first (base): when one ends, the others are made again over the base,
 * in the order given; when the last ends, the base is back. words: an
 * `update`'s words (what is merged again), NULL for a `set` (its profile).
 * A change that holds (no `for`: set, update, clear, an atomic file, a
 * schedule's line) drops the `for`s of its stage. for_ns 0: a plain change.
 */
int ctl_set_stage_for(struct shaper *s, const char *key, int port,
		      const char *const *args_of, const char *args,
		      const char *words, uint64_t for_ns, char *err);
/* Port p's `for`s on key's stage: how long before the base is back, the
 * base (to), how many run and when the next ends. false when none. */
struct ctl_for_left {
	uint64_t left_ns, next_ns;
	unsigned int n;
	const char *to;
};
bool ctl_revert_left(struct shaper *s, uint16_t p, const char *key,
		     struct ctl_for_left *l);
/* How long the prompt may wait for a key: at most max_ms, less when a
 * revert comes due sooner. */
int ctl_tick_wait_ms(struct shaper *s, int max_ms);
/* `clear KEY PORT|all`: off, or for a queue its kind's defaults. */
int ctl_clear_stage(struct shaper *s, const char *key, int port,
		    char *err);
/* set class NAME WORDS / clear class NAME (words NULL) */
int ctl_set_class(struct shaper *s, const char *name, const char *words,
		  char *err);
/* Free the cleared classes that have emptied (ctl_tick; nothing when
 * there are none). */
void ctl_classes_gc(struct shaper *s);
/* Time calendars for the class netems that started to hold packets
 * (shp_classes_grow), a few a tick: each is megabytes to allocate. */
#define CTL_GROW_PER_TICK 16
void ctl_classes_grow(struct shaper *s);
int ctl_set_priomap(struct shaper *s, const char *text, char *err);
int ctl_set_classify(struct shaper *s, const char *mode, char *err);
/* Pausing waits for each worker to finish its current loop. */
void ctl_pause(struct shaper *s, bool paused);

/* "all" -> -1, a port id -> it; -2 with err otherwise. */
int ctl_port_arg(const struct shaper *s, const char *word, char *err);

/*
 * One round of the main lcore's duties (replay end, periodic stats).
 * Returns true when the shaper should stop (a signal, `quit`, the end of a
 * replay without a prompt). `interactive`: the end of a replay is only
 * announced.
 */
bool ctl_tick(struct shaper *s, bool interactive, bool *printed);

#endif
