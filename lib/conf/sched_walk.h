/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port's schedule as the program's data path walks it (issue 56, "one
 * link, one profile"): its changes, each shard's cursor over them, and
 * the one id the confs of an occurrence carry on every shard.
 *
 * A change is the last `set`/`clear` of a stage at one instant on the
 * port, standing for the lines of that stage at that instant
 * (shp_sched_last_at_instant). Occurrence n of a port is change j of
 * cycle c, n = c * nb + j: the occurrences of every shard are the same
 * numbers at the same link instants (start + c * repeat + t).
 *
 * Ids: every shard's conf for occurrence n carries the port's id of n
 * (shp_sched_ids_get), not one drawn per shard or per conf parsed, so a
 * shard that walked every cycle and one that skipped whole cycles by
 * arithmetic (a stall) make the same id for the same occurrence, and a
 * bucket the shards share (tbf_shared.h) refills once per occurrence.
 * The main lcore draws the ids from shp_conf_new_id in occurrence order
 * (a newer occurrence has a higher id) for a window from two cycles
 * before the current one to some cycles ahead (shp_sched_ids_arm); an
 * owner takes n's when it makes the change, without a lock.
 */
#ifndef SHP_SCHED_WALK_H
#define SHP_SCHED_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "schedule.h"

/* cycles before the current one whose ids are kept (a shard may still
 * make a change of the cycle before its own, and read its clock a
 * moment before the main lcore did) */
#define SHP_SCHED_IDS_BEHIND 2
#define SHP_SCHED_NO_OCC UINT64_MAX

struct shp_sched_change {
	const struct shp_sched_event *ev;   /* its last line */
	const struct shp_kind *kind;        /* ev's kind (the caller's) */
	enum shp_slot slot;
	uint32_t n;                         /* lines it stands for */
	uint64_t before;                    /* lines of the cycle before it */
};

struct shp_sched_port {
	const struct shp_sched *sched;
	unsigned int nb;                    /* changes, in time order */
	struct shp_sched_change *ch;
	uint64_t nb_lines;                  /* the port's lines a cycle */
	/* occurrence n's id at id[n % size] while lo <= n < hi (main lcore
	 * writes, owners read) */
	uint64_t *id;
	uint64_t size;
	uint64_t lo, hi;
};

/* Port p's changes in schedule s (kinds NULL: the caller's). 0, or -1
 * (out of memory). */
int shp_sched_port_init(struct shp_sched_port *sp, const struct shp_sched *s,
			uint16_t p);
/* Room for the ids of `cycles` cycles (one cycle without repeat): more
 * than SHP_SCHED_IDS_BEHIND + the cycles shp_sched_ids_arm looks ahead.
 * 0, or -1 (out of memory). */
int shp_sched_ids_init(struct shp_sched_port *sp, uint64_t cycles);
void shp_sched_port_free(struct shp_sched_port *sp);

/* Main lcore, rel ns after the start: ids for the occurrences from
 * SHP_SCHED_IDS_BEHIND cycles before rel's to `ahead` cycles after it
 * (as far as the room goes), drawn in occurrence order. */
void shp_sched_ids_arm(struct shp_sched_port *sp, uint64_t rel,
		       uint64_t ahead);
/* Occurrence n's id: 1 and *id; 0: not drawn yet (later); -1: gone (n is
 * older than the window: a newer change of its stage is due). Any
 * lcore. */
int shp_sched_ids_get(const struct shp_sched_port *sp, uint64_t n,
		      uint64_t *id);

/*
 * Main lcore, after the control plane changed a stage of the port at
 * rel ns after the start (its conf's id drawn just now): the occurrences
 * after rel + SHP_SCHED_IDS_REDRAW get ids again, newer than that change,
 * so that the schedule's next change of the stage outranks it (a shared
 * bucket refills for it). Those within the margin keep theirs: a shard
 * may be making one (hi is lowered before they are drawn again, so that
 * no shard takes one half way).
 */
#define SHP_SCHED_IDS_REDRAW UINT64_C(1000000)
void shp_sched_ids_redraw(struct shp_sched_port *sp, uint64_t rel);

/* A shard's cursor: its next occurrence, and per stage the newest
 * occurrence due and not made yet. The shard's owner's. */
struct shp_sched_walk {
	uint64_t cycle;
	unsigned int j;
	uint64_t due[SHP_SLOT_MAX];        /* SHP_SCHED_NO_OCC: none */
	uint64_t missed;                   /* lines */
};

void shp_sched_walk_init(struct shp_sched_walk *w);
/* The cursor's occurrence, ns after the start; UINT64_MAX: none. */
uint64_t shp_sched_walk_time(const struct shp_sched_port *sp,
			     const struct shp_sched_walk *w);
/*
 * Walk to rel ns after the start: each stage's newest occurrence due
 * goes to w->due (one that replaces an older one not made counts that
 * one's lines missed). More than a whole cycle behind (a stall): the
 * cycles in between are missed by arithmetic, not walked; the cycle
 * before rel's still is, so every stage ends on the latest change due.
 */
void shp_sched_walk_run(const struct shp_sched_port *sp,
			struct shp_sched_walk *w, uint64_t rel);

/* The change of occurrence n */
static inline const struct shp_sched_change *
shp_sched_occ_change(const struct shp_sched_port *sp, uint64_t n)
{
	return &sp->ch[n % sp->nb];
}

#endif
