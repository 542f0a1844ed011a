/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stage kinds, found by name (Linux register_qdisc(), iproute2's struct
 * qdisc_util).
 *
 * A kind is the data-path ops table (shp_qdisc.h) plus its control-plane
 * half: parse tc text into an immutable conf, format a conf back to text
 * that parses to the same conf, free a conf, and name its own counters
 * (drop causes and extended statistics). Everything above the stages --
 * options, the INI profile, `set`/`clear`, CLI help, the stats file,
 * `show`, telemetry, the exporter -- iterates over the registry and knows
 * no kind by name. A new discipline is one file that defines a
 * `const struct shp_kind` and one line in lib/core/shp_kinds.c.
 *
 * Each egress port runs one chain of slots, leaf first:
 *
 *     ingress (police)  ->  queue (pfifo_fast | fq_codel ...)  ->  rate (tbf ...)  ->  delay (netem)  ->  TX
 *
 * The ingress slot judges each packet as it arrives and holds none (its
 * ops' filter, shp_qdisc.h; the chain runs it: shp_chain_ingress); the
 * others hold packets and are dequeued root first, each from its child.
 *
 * The option, INI key and `set` word of a queue kind is "queue" and its
 * text starts with the kind's name (`--queue 'fq_codel target 5ms'`, as
 * `tc qdisc add ... fq_codel target 5ms`); every other kind is set by its
 * own name and its text is its arguments (`--tbf 'rate 1mbit ...'`).
 */
#ifndef SHP_KIND_H
#define SHP_KIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shp_qdisc.h"
#include "shp_units.h"

enum shp_slot {
	SHP_SLOT_QUEUE,   /* the bottleneck queue RX enqueues into */
	SHP_SLOT_RATE,    /* a gate: tbf */
	SHP_SLOT_DELAY,   /* netem: the chain's root */
	SHP_SLOT_INGRESS, /* in front of the queue: passes or drops each
			   * arrival at once, holds nothing (police); not
			   * in the dequeue path */
	SHP_SLOT_MAX
};

/* Flags of an extended statistic. */
#define SHP_XS_GAUGE   0x1  /* a level the owner writes, not a count: not
			     * summed into a baseline by `clear stats` */
#define SHP_XS_QLEN    0x2  /* a gauge of packets held: part of "queued"
			     * in the conservation sum */
#define SHP_XS_CREATED 0x4  /* packets made here (copies): part of what
			     * was offered in the conservation sum */
#define SHP_XS_DELAYED 0x8  /* a gauge of packets held for a later send
			     * time: the worker paces arrivals while it is
			     * not zero (shp_egress.h) */
#define SHP_XS_LINK    0x10 /* a gauge of the link's one state
			     * (link_state.h: a probability, an average):
			     * every shard shows the link's, so a port's
			     * figure is the largest shard's, not the sum */

struct shp_xstat_desc {
	const char *name;    /* key under ports.N.xstats.KIND */
	unsigned int flags;
	/* also a key of its own at the port's top level, for the names the
	 * stats file had before kinds carried their own (NULL: none) */
	const char *alias;
};

/* A kind declares its drop causes and its statistics once, each name
 * beside its enum, in X-macro lists:
 *   #define FOO_DROPS(X) X(FOO_DROP_FULL, "foo_full") ...
 *   #define FOO_XSTATS(X) X(FOO_XS_QUEUED, "queued", SHP_XS_GAUGE, NULL) ...
 *   enum { FOO_DROPS(SHP_CAUSE_ENUM) };
 *   static const char *const foo_drops[] = { FOO_DROPS(SHP_CAUSE_NAME) NULL };
 * (SHP_XSTAT_ENUM and SHP_XSTAT_DESC likewise for .xstats) */
#define SHP_CAUSE_ENUM(e, name) e,
#define SHP_CAUSE_NAME(e, name) [e] = name,
#define SHP_XSTAT_ENUM(e, name, flags, alias) e,
#define SHP_XSTAT_DESC(e, name, flags, alias) [e] = { name, flags, alias },

/* What parse (and tc_print) may use besides the text: the program's
 * global options, which a kind's own words override. */
struct shp_budget_in;
struct shp_budget;

struct shp_kind_env {
	unsigned int bands;      /* --bands */
	unsigned int ring_size;  /* --ring-size */
	uint64_t seed;           /* --seed, when seed_set */
	bool seed_set;
	/* --priomap, or `set priomap` since: the band of each priority
	 * 0..15 (NULL: none given, Linux's default for the bands) */
	const uint8_t *priomap;
};

/* What the offline tool saw of a run, for a kind's note. */
struct shp_run_facts {
	const uint64_t *drops;   /* the port's drop counters, by slot */
	uint64_t offered;        /* the input and the copies made */
	uint64_t out_pkts;       /* packets that left */
	uint64_t out_of_order;   /* of those, left before one that arrived
				  * earlier */
	uint32_t max_len;        /* the largest frame of the input */
};

/*
 * A kind: everything the program knows of a discipline, found by name.
 * Unless a member says otherwise it is required, and it is called by the
 * control plane (the main lcore: options, INI, `set`, the offline tool's
 * set-up; control threads: the socket, REST, telemetry), never on the
 * data path; the data path calls only ops.
 */
struct shp_kind {
	/* tc's word ("tbf", "fq_codel"): the --queue text's first word for
	 * a queue kind, the option and key for the others (shp_kind_key),
	 * the prefix of its telemetry keys; unique */
	const char *name;
	/* where its stage goes in the chain: its position and what it may
	 * do (a rate stage is a gate, the ingress one filters) */
	enum shp_slot slot;
	/* the data-path half (shp_qdisc.h) */
	const struct shp_qdisc_ops *ops;
	/*
	 * Text after the kind's name (the whole --tbf/--netem text; for a
	 * queue kind what follows its name) to a new immutable conf, or
	 * NULL with one line in err (SHP_ERR_LEN) naming the bad word.
	 * "" gives the defaults. Never called with "off". The conf gets a
	 * shp_conf_new_id() id, by which running stages notice it.
	 */
	void *(*parse)(const char *args, const struct shp_kind_env *env,
		       char *err);
	/* conf back to arguments (without the kind's name) that parse to
	 * the same conf; snprintf's return convention. What `show`, the
	 * running config and the stats file print (test: print and
	 * reparse). */
	int (*format)(const void *conf, char *buf, size_t len);
	/* free a conf parse made (NULL given: nothing); after the grace
	 * period when it was published */
	void (*conf_free)(void *conf);
	/*
	 * Optional: the packets a stage running conf may hold by its own
	 * bound (its limit), for sizing the mbuf pool: the pool must hold
	 * what every stage may hold at once (shp_chain_spec_capacity). conf
	 * NULL: the kind's defaults (a queue given no text). No op, or 0: it
	 * holds none of its own (a gate, as tbf: its limit bounds what its
	 * child holds), or its bound comes from the pool itself (netem's
	 * default limit, half the pool).
	 */
	uint64_t (*capacity)(const void *conf, const struct shp_kind_env *env);
	/*
	 * Optional: the stage as `tc -s qdisc show` prints its discipline
	 * (iproute2's print_qopt), for `show qdisc`. args: the stage's
	 * text as `show` prints it (what format gives, without the kind's
	 * name; netem adds its default limit). Sets *tc_name when tc's name
	 * for what runs is not the kind's (the bands are `prio` unless
	 * they are Linux's default pfifo_fast) and writes the parameters in
	 * tc's words and units into buf (tbf's limit as the latency it
	 * allows). No op: the kind's name and args as they are. snprintf's
	 * return convention.
	 */
	int (*tc_print)(const char *args, const struct shp_kind_env *env,
			const char **tc_name, char *buf, size_t len);
	/* Optional: may the running conf cur (NULL: off) become next? 0, or
	 * -1 with one line in err (what a running stage cannot take, as
	 * fq_codel's table size). On 0 it may have completed next with
	 * what the running stage keeps that next leaves unnamed (fq_codel's
	 * flows): call it on a conf not yet published, before formatting
	 * or comparing it. */
	int (*check_change)(const void *cur, void *next, char *err);
	/*
	 * Optional, for a queue kind whose stage takes the RX pass's bands
	 * (its ops' enqueue_rx): conf's number of bands, and in *priomap
	 * the band of each priority 0..15 (16 bytes of conf, valid as long
	 * as conf), which the RX pass classifies the port's packets with
	 * (shp_chain.priomap).
	 */
	unsigned int (*bands)(const void *conf, const uint8_t **priomap);
	/*
	 * Optional: the offline tool's advice after a run whose chain ran
	 * conf last (never NULL) in this kind's slot: whole lines, each
	 * "note: ...\n", or nothing; snprintf's return convention. Called
	 * in slot order (shp_slot), so notes read in chain order.
	 */
	int (*note)(const void *conf, const struct shp_run_facts *run,
		    char *buf, size_t len);
	/* Optional, for a rate stage: the bytes a second a stage running
	 * conf (never NULL) passes at most (tbf's rate; 0: no bound). The
	 * chain keeps its rate stage's in its env (gate_rate), for the
	 * stages after it (netem sizes its byte store by it). */
	uint64_t (*rate)(const void *conf);
	/*
	 * Optional, for a delay stage: its lossless budget running conf
	 * (NULL: off, the figures a default profile would get) on a port
	 * as `in` says: frames, delay_ns, mbufs and the store's bytes in
	 * *out, which shp_budget_finish completes.
	 */
	void (*budget)(const void *conf, const struct shp_budget_in *in,
		       struct shp_budget *out);
	/*
	 * Optional: heap bytes a lean stage of this kind (shp_stage_env's
	 * lean: a class's) may take later, through its grow op, for what it
	 * left out at init (netem's time calendar), in a pool of pool_size
	 * mbufs. The offline tool sizes its memory with it before any
	 * stage exists. Any thread.
	 */
	size_t (*grow_heap)(unsigned int pool_size);
	/* heap bytes a lean stage of this kind takes when made, about, when
	 * it is more than the classes' per-class allowance for stages (a
	 * netem's tfifo; shp_classes_mem); 0 for most */
	size_t lean_mem;
	/* Optional: its drop causes, NULL-terminated (stats file's
	 * "drops", telemetry, the summary); the stage counts cause i with
	 * shp_stage_drop(q, ctx, i, ...). A name another kind (or the
	 * core) has too is one counter. */
	const char *const *drops;
	/* Optional: its own counters and gauges, terminated by a NULL
	 * name (stats file's "xstats".KIND, telemetry's KIND_NAME, the
	 * exporter); index i with shp_stage_xstat(q, ctx, i), flags
	 * SHP_XS_* above */
	const struct shp_xstat_desc *xstats;
	/* usage, one line, for --help and the CLI's help:
	 * "fq_codel [limit PACKETS] [flows N] ..." */
	const char *usage;
	/* Optional: its words, '#'-separated, for the CLI's completion and
	 * `update`'s clauses */
	const char *words;
	/* Optional: its words that say one thing two ways, in pairs, NULL-
	 * terminated ({ "limit", "latency", NULL }): `update` takes a new
	 * one of a pair as replacing the current other. */
	const char *const *exclusive;
	/* its text names a file, read at each parse: the same text may be
	 * a new profile (`set` says it reloaded, not that nothing changed);
	 * false for most */
	bool reads_file;
	/* Optional: what a link spread over shards does not keep as one
	 * queue would while this kind runs, with its measured bound, one
	 * phrase (docs/usage.md says more): said at start when a port runs
	 * it on more than one shard (shp_chain_shards_note). NULL: the
	 * link keeps all of it. */
	const char *shards_note;
};

/* The registry (lib/core/shp_kinds.c), in chain order within a slot; the
 * first kind of a slot is its default. NULL-terminated. */
extern const struct shp_kind *const shp_kinds[];

/* The kind called name, or NULL. */
const struct shp_kind *shp_kind_find(const char *name);
/* The kind whose ops these are, or NULL (a private stage: the offline
 * tool's tap). */
const struct shp_kind *shp_kind_of(const struct shp_qdisc_ops *ops);
/* The default kind of a slot (its first in the registry). */
const struct shp_kind *shp_kind_default(enum shp_slot slot);

/* The word that sets a kind: "queue" for a queue kind, else its name. */
const char *shp_kind_key(const struct shp_kind *k);
/* True if `word` is a key (queue, tbf, netem, ...). */
bool shp_kind_is_key(const char *word);

/* The keys, each once, in registry order: queue, tbf, netem, ... */
#define SHP_MAX_KEYS 8
unsigned int shp_key_nb(void);
const char *shp_key_name(unsigned int i);
/* index of a key, or -1 */
int shp_key_index(const char *word);
/* the slot a key's kinds go to */
enum shp_slot shp_key_slot(unsigned int i);

/*
 * Profile text as given to a key (`queue`, `tbf`, ...) to (kind, conf).
 * "off" gives the slot's pass-through: *conf NULL (not for the queue
 * slot). A queue text starts with its kind's name. 0, or -1 with one
 * line in err that names the key and the bad word.
 */
int shp_kind_parse(const char *key, const char *text,
		   const struct shp_kind_env *env,
		   const struct shp_kind **kind, void **conf, char *err);
/* (kind, conf) back to the text its key takes ("off" for NULL). */
int shp_kind_format(const struct shp_kind *k, const void *conf, char *buf,
		    size_t len);
void shp_kind_conf_free(const struct shp_kind *k, void *conf);

/*
 * Counter slots. Every drop cause and extended statistic of every kind
 * has one slot in each lcore's per-port block (shp_stats.h), numbered at
 * start-up: the core's causes first (enum shp_drop), then each kind's in
 * registry order.
 */
unsigned int shp_drop_nb(void);            /* causes in use */
unsigned int shp_xstat_nb(void);           /* statistics in use */
/* the kind of xstat slot i, and its description */
const struct shp_kind *shp_xstat_kind(unsigned int i);
const struct shp_xstat_desc *shp_xstat_desc(unsigned int i);
/* slot i of two blocks together: a count adds; a gauge adds when
 * gauges is set (what two queues hold), else keeps sum; a link's gauge
 * (SHP_XS_LINK) is the larger of the two */
uint64_t shp_xstat_combine(unsigned int i, uint64_t sum, uint64_t v,
			   bool gauges);
/* slot of the drop cause called name, or -1 */
int shp_drop_index(const char *name);
/* slot of kind's statistic called name, or -1 */
int shp_xstat_index(const struct shp_kind *k, const char *name);
/* the sum of kind k's drop causes in a counter block */
uint64_t shp_kind_drops(const struct shp_kind *k, const uint64_t *drops);
/* the same without the causes kind other (NULL: none) has too: what k
 * counts alone (tbf's tbf_limit is counted by the bands it pushes out
 * of, tbf_oversize by tbf alone) */
uint64_t shp_kind_drops_own(const struct shp_kind *k,
			    const struct shp_kind *other,
			    const uint64_t *drops);
/* c's statistic `name` of kind `kind`, by names (tests and tools) */
#define SHP_XSTAT(c, kind, name) \
	((c)->xstats[shp_xstat_index(shp_kind_find(kind), (name))])
/* the slots of the SHP_XS_DELAYED statistics, *nb of them */
const uint8_t *shp_xstat_delayed(unsigned int *nb);
/* slot maps of a kind: local index -> slot (NULL for no kind) */
const uint8_t *shp_kind_drop_map(const struct shp_kind *k);
const uint8_t *shp_kind_xstat_map(const struct shp_kind *k);

#endif
