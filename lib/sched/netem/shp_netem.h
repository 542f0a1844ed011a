/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem: the impairment and delay stage (Linux sch_netem semantics, tc-netem
 * syntax), public part: the configuration object, its parser and its printer.
 *
 * A conf is built once by shp_netem_parse(), never modified afterwards, and
 * handed to the stage through shp_netem_ops.init/change. It owns its
 * distribution tables. The stage never frees a conf: whoever installed it
 * frees it (after an RCU grace period when it was replaced live, or after
 * shp_qdisc_destroy()).
 *
 * Grammar (tc-netem(8); keywords may be abbreviated as tc allows):
 *   limit N
 *   delay|latency TIME [JITTER [CORR]]
 *   distribution uniform|normal|pareto|paretonormal|FILE
 *   loss|drop [random] P [CORR]
 *   loss|drop state P13 [P31 [P32 [P23 [P14]]]]
 *   loss|drop gemodel P [R [1-H [1-K]]]
 *   loss|drop pattern N M      (ours, deterministic: N of every M, spread
 *                              evenly)
 *   loss|drop burst LEN PERIOD (ours: LEN at the end of every PERIOD)
 *   loss|drop sequence BITS    (ours: a 0/1 string, repeated)
 *   ecn
 *   duplicate P [CORR]
 *   corrupt P [CORR]
 *   reorder P [CORR] [gap N]
 *   rate RATE [PKTOVERHEAD [CELLSIZE [CELLOVERHEAD]]]
 *   slot MIN [MAX] [packets N] [bytes B]
 *   slot distribution D DELAY JITTER [packets N] [bytes B]
 *   seed S
 *   noreorder            (ours: jitter without reordering)
 *   inorder              (ours: jitter without reordering that keeps the
 *                        delay's mean and deviation: docs/netem.md)
 *   misorder P [CORR] depth K  (ours: a chosen frame is overtaken by
 *                        exactly K frames that arrived after it)
 *   misorder_timeout TIME (ours: the longest a chosen frame waits for its
 *                        K followers; SHP_NETEM_MISORDER_TIMEOUT)
 *   outage ON_MEAN OFF_MEAN [carrier]  (ours: the link up and down for
 *                        exponential times of these means, as Mahimahi's
 *                        mm-onoff; carrier: the port's carrier too)
 *   ber RATE [drop|corrupt]  (ours: bit error rate, 0 < RATE < 1)
 *   accumulate TIME      (ours: departures rounded up to the end of
 *                        their window of TIME, counted from the first
 *                        arrival)
 *   trace FILE [once|loop]  (ours: a TheaterQ trace file, netem_trace.h:
 *                        its rows set delay, jitter, rate, loss,
 *                        duplicate and limit in turn; `once` holds the
 *                        last row, `loop` (the default) starts again)
 *   store BYTES|off [after PACKETS]  (ours: frames up to BYTES wait in
 *                        netem's byte store, their mbufs freed at once,
 *                        once PACKETS wait in mbufs; defaults
 *                        SHP_NETEM_STORE_DEFAULT and
 *                        SHP_NETEM_STORE_AFTER_DEFAULT)
 * TIME needs a unit (s, ms, us, ns); percentages are 0..100 with an optional
 * '%'; a bare RATE is bits per second. Words are read by the tc word parser
 * shared with tbf (shp_tcargs.h): errors read "netem: KEYWORD: ...".
 * See docs/netem.md for semantics and where we differ from Linux.
 */
#ifndef SHP_NETEM_H
#define SHP_NETEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shp_conf_hdr.h"
#include "shp_rand.h"
#include "shp_units.h"

/* Distribution tables: inverse CDF scaled by this (iproute2 NETEM_DIST_SCALE). */
#define SHP_NETEM_DIST_SCALE   8192
#define SHP_NETEM_DIST_SIZE    4096   /* entries of the built-in tables */
#define SHP_NETEM_DIST_MAX     16384  /* largest table file accepted (tc) */
/* Bytes of a table file: 16384 values with comments fit in a tenth. */
#define SHP_NETEM_DIST_FILE_MAX (1 << 20)

/* Seed used when the conf has no `seed`: runs are reproducible by default. */
#define SHP_NETEM_DEFAULT_SEED SHP_SEED_DEFAULT

struct shp_netem_dist {
	char name[128];        /* built-in name, or the file as given */
	bool builtin;
	uint32_t size;
	int16_t table[];       /* value = mu + sigma * table[i] / SCALE */
};

/*
 * An event probability with lag-1 correlation. We draw it from a two-state
 * Markov chain whose stationary probability is p and whose lag-1
 * autocorrelation is corr, so the configured mean holds whatever corr is.
 */
struct shp_netem_prob {
	double p;              /* 0..1 */
	double corr;           /* 0..1 */
	bool corr_set;         /* given in the text (for printing only) */
	double p_after_hit;    /* P(event | previous event) = p + corr(1-p) */
	double p_after_miss;   /* P(event | previous none)  = p(1-corr) */
};

enum shp_netem_loss_model {
	SHP_NETEM_LOSS_NONE,
	SHP_NETEM_LOSS_RANDOM,
	SHP_NETEM_LOSS_STATE,   /* 4-state Markov (netem "state", GI) */
	SHP_NETEM_LOSS_GEMODEL, /* Gilbert-Elliott */
	/* deterministic, on the count k of originals (ours) */
	SHP_NETEM_LOSS_PATTERN, /* k lost iff floor((k+1)N/M) > floor(kN/M) */
	SHP_NETEM_LOSS_BURST,   /* k lost iff k mod PERIOD >= PERIOD - LEN */
	SHP_NETEM_LOSS_SEQUENCE,/* k lost iff bit (k mod len) is 1 */
};

/* misorder: the deepest overtaking (a hardware emulator's 511), and the
 * longest a chosen frame waits for its followers by default. */
#define SHP_NETEM_MISORDER_DEPTH_MAX 511
#define SHP_NETEM_MISORDER_TIMEOUT   (10 * 1000 * 1000ull)

/* Longest `loss sequence` accepted. */
#define SHP_NETEM_LOSS_SEQ_MAX 4096

enum shp_netem_slot_mode {
	SHP_NETEM_SLOT_OFF,
	SHP_NETEM_SLOT_RANGE,   /* uniform in [min, max) */
	SHP_NETEM_SLOT_DIST,    /* dist(delay, jitter); slot_dist NULL = uniform */
};

struct shp_netem_conf {
	struct shp_conf_hdr hdr;    /* first: shp_qdisc.h */
	bool limit_set;
	uint32_t limit;             /* packets held; see shp_netem_default_limit */

	uint64_t latency;           /* ns */
	uint64_t jitter;            /* ns */
	double delay_corr;          /* 0..1, Gaussian-copula AR(1) */
	bool delay_corr_set;
	struct shp_netem_dist *dist; /* NULL: uniform in [lat - jit, lat + jit) */
	bool noreorder;
	bool inorder;

	enum shp_netem_loss_model loss_model;
	struct shp_netem_prob loss;            /* random */
	struct { double p13, p31, p32, p23, p14; } state;
	struct { double p, r, h1, k1; } ge;    /* h1 = "1-h", k1 = "1-k" */
	/* pattern N M (n, m) and burst LEN PERIOD (n = LEN, m = PERIOD) */
	struct { uint32_t n, m; } det;
	uint32_t seq_len;           /* sequence: its bits, one a byte (0/1) */
	uint8_t *seq;               /* owned by the conf */
	bool ecn;

	struct shp_netem_prob duplicate;
	struct shp_netem_prob corrupt;
	struct shp_netem_prob reorder;
	uint32_t gap;               /* 0: no reordering */
	struct shp_netem_prob misorder;
	uint32_t misorder_depth;    /* K, 1..SHP_NETEM_MISORDER_DEPTH_MAX */
	uint64_t misorder_timeout;  /* ns; 0: the default */

	uint64_t rate;              /* bytes per second, 0 = off */
	int32_t packet_overhead;
	uint32_t cell_size;
	int32_t cell_overhead;

	enum shp_netem_slot_mode slot_mode;
	uint64_t slot_min, slot_max;           /* RANGE, ns */
	struct shp_netem_dist *slot_dist;      /* DIST */
	uint64_t slot_delay, slot_jitter;      /* DIST, ns */
	uint32_t slot_packets;      /* 0 = unlimited */
	uint32_t slot_bytes;        /* 0 = unlimited */

	bool seed_set;
	uint64_t seed;

	/* time-varying link (docs/time-varying.md) */
	uint64_t outage_on, outage_off; /* ns, means; 0: no outages */
	bool outage_carrier;        /* the port's carrier follows them */
	double ber;                 /* bit error rate; 0: off */
	bool ber_drop;              /* a hit packet is dropped (lost_ber),
				     * not corrupted */
	uint64_t accumulate;        /* ns; 0: off (accumulate and burst) */

	/* the byte store (netem_tq.h): single-segment frames up to store
	 * bytes wait as bytes, not mbufs; 0: off. store_set: given in the
	 * text (printed only then) */
	bool store_set;
	uint32_t store;
	/* ... once store_after packets wait in mbufs before one, or the
	 * line holds twice that (given: store_after_set; else
	 * SHP_NETEM_STORE_AFTER_DEFAULT, capped by the default limit) */
	bool store_after_set;
	uint32_t store_after;

	/* `trace`: owned by the conf; NULL: none */
	struct shp_netem_trace *trace;
	/* ns more for duplicate's copies (a trace row's DUP_DELAY; no
	 * keyword sets it) */
	uint64_t dup_delay;
};
SHP_CONF_HDR_FIRST(struct shp_netem_conf);

/*
 * Parse tc-netem arguments ("delay 10ms 2ms loss 1%"). Returns a new conf,
 * or NULL with a one-line message naming the offending word in err
 * (SHP_ERR_LEN bytes). An empty string gives a conf with no impairment.
 * Distribution table files are read here.
 */
struct shp_netem_conf *shp_netem_parse(const char *args, char *err);

/* Same from words already split (argv[0] is the first keyword). */
struct shp_netem_conf *shp_netem_parse_argv(int argc, char **argv, char *err);

void shp_netem_conf_free(struct shp_netem_conf *conf);

/*
 * tc-style text of conf; it parses back to an equal conf. Returns the
 * length snprintf would have written (>= len means truncated), -1 on error.
 */
int shp_netem_conf_format(const struct shp_netem_conf *conf, char *buf,
			  size_t len);
/* conf as tc prints netem (`show qdisc`), limit the default limit when
 * its text gives none; snprintf's convention */
int shp_netem_tc_print(const struct shp_netem_conf *conf, uint32_t limit,
		       char *buf, size_t len);

/* `store` when the text gives none: frames of at most this many bytes
 * (docs/benchmarks.md, the byte store, for the measurement). */
#define SHP_NETEM_STORE_DEFAULT 256

/* `store ... after` when the text gives none: frames wait in their mbufs
 * until this many do (at most a quarter of the default limit): a line
 * that shallow stays in the caches, where the copies in and out only
 * cost (git log -p docs/benchmarks.md, "The byte store after a depth"). */
#define SHP_NETEM_STORE_AFTER_DEFAULT 8192

/* The limit the stage uses for a conf without `limit`: half the pool
 * (the other half stays for RX, bands and duplicates), 1000 without pool. */
uint32_t shp_netem_default_limit(unsigned int pool_size);

/*
 * Buckets of the calendar in front of the tfifo (netem_tq.h) for stages
 * created from now on; 0: the tfifo alone (benchmarks compare the two).
 */
#define SHP_NETEM_TQ_BUCKETS 65536
extern uint32_t shp_netem_tq_buckets;

/*
 * netem's short ways for profiles that need less than its whole per-packet
 * path (a constant delay; draws alone: loss and jitter). They decide what
 * the whole way decides, packet for packet; tests set this false to
 * compare the two (test_netem_store). Read once a burst.
 */
extern bool shp_netem_short_ways;

/*
 * On a link's shards, each enqueue call publishes its Markov chains'
 * state for the next claim (sch_netem.c, netem_link_claim). Tests set
 * this false: no shard publishes, so every claim walks the chains from
 * the last state published, over the positions claimed since, as a
 * claim that races another does. Read once a call.
 */
extern bool shp_netem_link_publish;

/*
 * A netem made lean (a class's, shp_stage_env) starts on its tfifo alone:
 * the calendar is megabytes, and thousands of classes stay idle. Off the
 * data path (the control thread, the offline tool between arrivals):
 * wants_calendar says q is such a netem with no calendar, none offered,
 * holding at least min_qlen packets; grow then makes one (about
 * calendar_size bytes of the heap) and offers it, which the owner takes
 * at its next enqueue: 0, or -1 when the heap has no room.
 */
struct shp_qdisc;
/* grow's heap bytes in a pool of pool_size mbufs, before any stage
 * exists (the kind's grow_heap) */
size_t shp_netem_grow_heap(unsigned int pool_size);
bool shp_netem_wants_calendar(const struct shp_qdisc *q, uint32_t min_qlen);
size_t shp_netem_calendar_size(const struct shp_qdisc *q);
int shp_netem_grow(struct shp_qdisc *q);

/* The ops, for tests and benchmarks that build a stage by hand; the
 * program finds them through the kind (shp_kind_find("netem")). */
struct shp_qdisc_ops;
extern const struct shp_qdisc_ops shp_netem_ops;

/* The offline tool's note on a run (the kind's note, shp_kind.h). */
struct shp_run_facts;
int shp_netem_note(const void *conf, const struct shp_run_facts *run,
		   char *buf, size_t len);

/* Built-in table ("normal", "pareto", "paretonormal"), freshly generated;
 * NULL for another name. Free with free(). */
struct shp_netem_dist *shp_netem_dist_builtin(const char *name);

/* Read an iproute2 table file ('#' comments, whitespace-separated integers
 * in -32768..32767, at most SHP_NETEM_DIST_MAX of them in at most
 * SHP_NETEM_DIST_FILE_MAX bytes; a regular file only, never a FIFO or a
 * device). NULL + err on error. */
struct shp_netem_dist *shp_netem_dist_load(const char *path, char *err);

/* iproute2's table NAME.dist (`distribution experimental`), looked up as
 * tc does in $TC_LIB_DIR, then where Debian's iproute2 installs them
 * (/usr/lib/<multiarch>/tc), then /usr/lib/tc. NULL + err naming every
 * directory tried, or the file's own error if one was found. */
struct shp_netem_dist *shp_netem_dist_find(const char *name, char *err);

#endif
