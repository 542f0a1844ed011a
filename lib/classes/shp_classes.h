/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-class profiles (issue 13): match rules (class_match.h) send a
 * packet to a class, and each class runs a chain of registered stages of
 * its own (queue -> tbf -> netem, shp_chain.h). An egress port with
 * classes runs
 *
 *     class chains ... + the port's queue (unmatched)
 *         -> classes -> port tbf -> port netem -> TX
 *
 * "classes" is a private stage (lib/classes/sch_classes.c) put in the port's
 * chain between its queue and its tbf: its enqueue looks the burst up in
 * the match table and hands each class its packets (what matches no class
 * goes to the port's own queue, as without classes); its dequeue serves
 * the class chains' roots, strict priority between `prio` levels (0
 * first), deficit round robin with each class's `quantum` within a level.
 * A class root only returns what is due (its tbf's tokens, its netem's
 * send time), so a class with nothing due never blocks another. The
 * port's own tbf, above, caps the sum (an htb parent); the port's netem
 * stays at the root.
 *
 * Counters: each class has a counter block of its own on each shard (one
 * writer: the shard's TX lcore, the only caller of the stage), in which
 * its stages count their drops and statistics. They are added into the
 * port's sums (shp_stats_sum) and the shard's (shp_stats_sum_shard), so
 * conservation holds as without classes, and reported by class, summed
 * over the shards (ports.N.classes.NAME).
 *
 * This file: the definitions the options and the INI file build
 * (--class NAME 'MATCH', --class-KEY NAME 'TEXT', [class NAME]).
 */
#ifndef SHP_CLASSES_H
#define SHP_CLASSES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "class_match.h"
#include "shp_chain.h"
#include "shp_kind.h"
#include "shp_stats.h"

/* Classes with a chain of their own (each costs, per port, its queue's
 * rings, a counter block and a histogram: docs/classes.md). */
#define SHP_MAX_CLASSES 4096
#define SHP_CLASS_MAX_PRIO 7
#define SHP_CLASS_DEFAULT_QUANTUM 1514

struct shp_class_def {
	char name[SHP_MATCH_NAME_LEN];
	unsigned int nb_rules;
	char *text[SHP_MAX_KEYS];     /* by key (queue, tbf, netem...), NULL:
				       * the slot's default / off */
	uint32_t ports;               /* egress ports (bit mask); 0: all */
	uint32_t quantum;             /* bytes per DRR round */
	unsigned int prio;            /* 0 is served first */
};

struct shp_class_set {
	struct shp_match_set *match;  /* names and rules, in the order */
	unsigned int nb, cap;
	struct shp_class_def *def;    /* [cap], grown as classes come */
};

struct shp_class_set *shp_class_set_new(void);
void shp_class_set_free(struct shp_class_set *s);

/* True for an option (without "--") or INI key this file handles:
 * class, class-KEY, class-ports, class-quantum, class-prio. */
bool shp_class_is_option(const char *opt);

/*
 * --OPT NAME VALUE: `class` adds a match rule (several OR together),
 * `class-KEY` sets the class's profile for KEY (queue, tbf, netem ...;
 * "off" clears it), `class-ports` P,Q..., `class-quantum` BYTES,
 * `class-prio` 0..7. 0, or -1 with one line in err naming the word.
 */
int shp_class_option(struct shp_class_set *s, const char *opt,
		     const char *name, const char *value, char *err);

/* Every class has a match rule: 0, or -1 naming the one without. */
int shp_class_set_check(const struct shp_class_set *s, char *err);

/* What of port's profile (spec, and the classes of s that apply to it)
 * the link does not keep when the port runs on several shards, said at
 * start: the kinds' shards notes (shp_chain_shards_note), then the
 * classes'. Its length into buf; 0: nothing to say. */
size_t shp_classes_link_note(const struct shp_chain_spec *spec,
			     const struct shp_class_set *s, uint16_t port,
			     char *buf, size_t len);

/* Every class's ports (--class-ports, ports =) are among have (a bit
 * per port id): 0, or -1 with err "class NAME: ports P,Q: there is no
 * port Q" (the first class and port that is not). */
int shp_class_set_check_ports(const struct shp_class_set *s, uint32_t have,
			      char *err);

/* The definition of class name, or NULL. */
const struct shp_class_def *shp_class_find(const struct shp_class_set *s,
					   const char *name);

/* The chain spec of a class (its texts parsed). 0, or -1 with err. */
int shp_class_spec(const struct shp_class_def *d,
		   const struct shp_kind_env *env,
		   struct shp_chain_spec *spec, char *err);

/* "class web: match 'dst_ip 10.1.0.0/16' netem 'delay 40ms' quantum 1514
 * prio 0" for show and summaries. */
void shp_class_describe(const struct shp_class_set *s, unsigned int i,
			FILE *f);

/*
 * A copy of o with class `name` set by words (`set class NAME ...`:
 * match 'RULE' (several OR; they replace the class's rules), queue, tbf,
 * netem (any key) 'TEXT', ports P,Q, quantum B, prio N; a value is one
 * quoted word or the words up to the next of those), or without it when
 * words is NULL (`clear class NAME`). o is not changed. 0, or -1 with
 * one line in err naming the word.
 */
int shp_class_set_edit(const struct shp_class_set *o, const char *name,
		       const char *words, struct shp_class_set **out,
		       char *err);

/* getopt_long entries of the class options (at base + i; every one
 * takes NAME then a value: the caller reads argv[optind++]) into out
 * (room for 4 + SHP_MAX_KEYS); returns how many. */
struct option;
unsigned int shp_class_longopts(struct option *out, int base);
/* The class options' --help. */
void shp_class_usage(FILE *f);

/* ---- the stage (lib/sch_classes*.c: data path, update, stats) ---- */

/* Per-class counters as reported (a class's own block). */
struct shp_class_sum {
	const char *name;
	uint32_t quantum;
	unsigned int prio;
	bool retiring;            /* cleared: served until empty */
	uint64_t in_packets;      /* matched, offered to the class */
	uint64_t in_bytes;
	uint64_t out_packets;     /* served by the scheduler */
	uint64_t out_bytes;
	uint64_t queued;          /* held in the class's stages */
	uint64_t dropped;
	uint64_t drops[SHP_DROP_SLOTS];
	uint64_t xstats[SHP_XSTAT_SLOTS];
	/* from arrival to leaving the class for the port's tbf/netem (ns) */
	struct shp_hist_summary sojourn;
};

/*
 * Insert a classes stage into each of port's n chains c[0..n) (built by
 * shp_chain_build; n > 1: the port's shards, c[q] shard q): the classes
 * of s that apply to port get their chains (pool, env as the port's),
 * c[q]->queue becomes the classes stage (RX enqueues there; it takes
 * packets from the shard's TX lcore only: the chain gets an inbox). On
 * shards, each shard runs every class with state of its own (queue,
 * netem delay line), and a class's rate (tbf, netem rate and slot, a
 * trace) is one for the link: its instances share one link block
 * (shp_link.h), as the port's stages share the port's. No class for
 * port: nothing done, 0. 0, or -1 with err (nothing attached).
 */
int shp_classes_attach(struct shp_chain *const *c, unsigned int n,
		       const struct shp_class_set *s,
		       struct rte_mempool *pool, uint16_t port,
		       const struct shp_kind_env *kenv, char *err);

/* Bytes of memory (DPDK's heap) the classes of s take on one port, about
 * (their queues' rings of bands x ring_size, counters, histogram, conf;
 * a lean stage at its kind's lean_mem, what it grows into not counted:
 * shp_classes_grow makes that within what is left): what a caller
 * sizing EAL's memory (-m) adds per port. */
uint64_t shp_classes_mem(const struct shp_class_set *s, unsigned int bands,
			 unsigned int ring_size);

/*
 * A class's netem runs on its tfifo until it holds SHP_CLASS_GROW_QLEN
 * packets; then this (off the data path: ctl_tick, the offline tool
 * between arrivals) gives it a time calendar (shp_netem_grow), at most
 * max a call, as long as the heap keeps SHP_CLASS_HEAP_RESERVE or an
 * eighth of itself free for changes. Returns the calendars made; *denied
 * counts the netems that wanted one and found no room (the first such
 * call on a port logs one warning, with that count). Idle classes cost
 * kilobytes, not a calendar's megabytes.
 */
#define SHP_CLASS_GROW_QLEN 64
#define SHP_CLASS_HEAP_RESERVE (64u << 20)
unsigned int shp_classes_grow(uint16_t port, unsigned int max,
			      unsigned int *denied);

/* Remove what attach added (after shp_chain_destroy's reset, or before:
 * what the classes hold is flushed into ctx). */
void shp_classes_detach(struct shp_chain *c, struct shp_ctx *ctx);

static inline uint64_t
shp_class_sojourn_avg(const struct shp_class_sum *s)
{
	return s->sojourn.count ? s->sojourn.sum / s->sojourn.count : 0;
}

/*
 * A change at run time, in three steps: prepare the port's new classes
 * from s (may fail: nothing changed, -1 with err; *u NULL when the port
 * has no classes before or after), publish (the data path sees them from
 * its next call), then, after an RCU grace period, finish (frees what the
 * data path no longer sees). Classes kept by name keep their chain and
 * what it holds, their stages changed in place (a different kind is
 * refused); a class dropped is served, with no new packets, until it is
 * empty (on every shard of the port), then freed by a later change
 * (shp_classes_drained says when one is due: ctl_tick makes it); nothing
 * queued is lost or reordered. A port without classes gets its classes
 * stage (and an inbox). abort undoes a prepared change that was not
 * published.
 */
struct shp_classes_update;
int shp_classes_prepare(struct shp_chain *const *c, unsigned int n,
			const struct shp_class_set *s,
			struct rte_mempool *pool, uint16_t port,
			const struct shp_kind_env *kenv,
			struct shp_classes_update **u, char *err);
void shp_classes_publish(struct shp_classes_update *u);
void shp_classes_finish(struct shp_classes_update *u);
void shp_classes_abort(struct shp_classes_update *u);

/* Cleared classes of port that have emptied: a change (the same set
 * again) frees them. */
unsigned int shp_classes_drained(uint16_t port);

/* Classes on port (0: none, dropped ones still draining included) and the
 * sums of class i (-1 past the last), over the port's shards. */
unsigned int shp_classes_nb(uint16_t port);
int shp_classes_sum(uint16_t port, unsigned int i, struct shp_class_sum *s);

/* The same since the last shp_classes_clear (`clear stats`: show class,
 * telemetry), shp_classes_sum's being since start (the stats file, as its
 * ports' counters). Gauges (queued) are as they are. */
int shp_classes_sum_cleared(uint16_t port, unsigned int i,
			    struct shp_class_sum *s);
/* `clear stats`: port's classes count from now for
 * shp_classes_sum_cleared and show (a class made later counts from its
 * start). */
void shp_classes_clear(uint16_t port);

/* `show class [NAME]`: port's classes (or the one called name), their
 * stages and counters (since `clear stats`); returns how many were shown. */
unsigned int shp_classes_show(FILE *f, uint16_t port, const char *name);

#endif
