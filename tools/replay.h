/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-replay's own state, shared by the run (replay.c) and its
 * report (replay_report.c): the report reads what the run counted, and
 * the run pushes each departure's delays into the report's samples.
 */
#ifndef SHP_TOOLS_REPLAY_H
#define SHP_TOOLS_REPLAY_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <pcap/pcap.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include "config.h"
#include "schedule.h"
#include "shp_meta.h"
#include "shp_rss.h"
#include "shp_qdisc.h"
#include "shp_stats.h"
#include "drop_capture.h"
#include "pcapng_write.h"


/* Exit status, as dpdk-shaper: 0 ok, 1 runtime error, 2 bad option or
 * input, 3 mbuf leak. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EXIT_LEAK 3

#define REPLAY_NS_PER_S UINT64_C(1000000000)

/* --queues: the shards one egress port may be spread over */
#define REPLAY_MAX_QUEUES 16

/*
 * Delay samples of one kind (total, queueing, netem), kept whole for exact
 * percentiles. Small and on purpose self-contained: a histogram may take
 * its place.
 */
struct dstat {
	uint64_t *v;
	size_t n, cap;
	uint64_t sum, min, max;
};

/* --capture-drops and --packet-log (replay_capture.c) */
enum { RCAP_OPT_DROPS = 1024, RCAP_OPT_SNAPLEN, RCAP_OPT_LIMIT,
       RCAP_OPT_LOG };

struct plog_ent;
struct shp_match_table;

struct replay_cap {
	const char *drops_path;
	const char *log_path;
	uint32_t snaplen;
	uint64_t limit;
	struct shp_pcapng w;
	struct shp_dropcap *dc;
	FILE *log;
	struct plog_ent *ents;     /* one per input frame */
	uint64_t nb_ents, cap_ents;
	struct shp_match_table *match;   /* the classes' rules */
	uint8_t *buf;
	size_t buf_len;
};

struct replay {
	struct shp_options opt;
	const char *in_path;
	const char *out_path;
	bool out_stdout;       /* OUT is `-`: the summary goes to stderr */
	FILE *info;            /* where the summary goes */
	double progress_s;     /* progress line interval on a TTY (0: off) */
	bool tty;
	struct timespec wall0, wall_last;
	char *tmp_path;        /* where OUT is written until it is complete */
	pcap_t *in;
	pcap_t *dead;
	pcap_dumper_t *dump;
	int snaplen;
	bool eal;
	char runtime_dir[PATH_MAX]; /* EAL's, removed at exit if empty */

	struct rte_mempool *pool;
	unsigned int nb_mbufs;
	char eal_mb[24];           /* the -m it gave the EAL */
	unsigned int calendars;    /* class netems given a calendar */
	unsigned int cal_denied;   /* the most that wanted one, found none */
	/* --queues N: the port is N shards, each a chain of its own built
	 * from the same profile, fed as a NIC's RSS would feed N RX queues;
	 * shard q counts into block ctr[q] (its port 0) with ctx[q], and
	 * its latency into lat[q]. chain[0] is the port's when unsharded. */
	unsigned int queues;
	bool queues_set;         /* --queues given (over INI queues) */
	struct shp_rss rss;
	struct shp_lcore_ctr *ctr;
	struct shp_latency *lat;
	struct shp_ctx ctx[REPLAY_MAX_QUEUES];
	struct shp_chain_spec spec;   /* until the chain takes it */
	struct shp_chain chain[REPLAY_MAX_QUEUES];
	/* what the shards share (shp_link.h; NULL with one shard: its
	 * stages keep their own) */
	struct shp_link_shared *link;
	unsigned int serve_first;     /* the shard served first next */
	struct stat in_st;     /* IN's file, to refuse writing OUT over it */

	uint64_t now;          /* the virtual clock, ns */
	uint64_t first_ts, last_ts; /* first and last arrival */
	uint64_t first_out, last_out; /* first and last departure */
	bool started;

	/* RX to departure, RX to leaving tbf (bands + tbf), leaving tbf to
	 * departure (netem) */
	struct dstat delay, queueing, netem_delay;
	int tap_off;           /* mbuf dynfield: when a packet left tbf */
	uint32_t max_len;      /* largest frame in IN */
	uint8_t *linbuf;
	size_t linbuf_len;
	char *inbuf, *outbuf;  /* stdio buffers, freed after their FILE */

	uint64_t in_pkts, in_bytes, out_pkts, out_bytes;
	uint64_t backwards;    /* input timestamps earlier than the previous */
	uint64_t snapped;      /* records shorter than the frame (snaplen) */
	uint64_t out_of_order; /* left before a packet that arrived earlier */
	uint64_t max_rx_out;
	uint64_t events;       /* clock values at which the root was dequeued */
	uint64_t stalls, stall_run; /* next_time said now, nothing happened */
	uint64_t stuck;        /* could never leave: flushed at the end */
	uint64_t saturated;    /* departures past 2106, written as its end */

	/* --schedule: its events on the virtual clock, from first_ts */
	struct shp_sched sched;
	bool sched_on;
	struct shp_sched_cursor sched_cur;   /* the next occurrence */
	bool *sched_last;    /* shp_sched_last_at_instant, port 0 */
	uint64_t *sched_sets;  /* `set`/`clear` lines before each line */
	uint64_t sched_applied;
	struct shp_kind_env kenv;

	/* the port's netem trace, its figures by row (replay_trace.c) */
	const struct shp_netem_trace *trace;
	const void *trace_conf;
	void *trace_rows;
	uint32_t trace_nrows;
	struct replay_cap cap;
};

#define PROG "dpdk-shaper-replay"

/* Set by SIGINT/SIGTERM: the run stops and the report says it was cut. */
extern volatile sig_atomic_t interrupted;

/* Prints "PROG: message" to stderr (clearing a progress line first) and
 * returns code, so that a caller can `return fail(...)`. */
int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* replay_report.c */
int dstat_push(struct dstat *d, uint64_t v);
void latency_record(const struct replay *r, unsigned int shard,
		    const struct shp_meta *meta);
bool summary(struct replay *r, FILE *f);
int write_stats(struct replay *r);

/* replay_trace.c */
int replay_trace_init(struct replay *r);
void replay_trace_arrival(struct replay *r, uint64_t at);
void replay_trace_departure(struct replay *r, const struct shp_meta *meta);
void replay_trace_json(const struct replay *r, FILE *f);
void replay_trace_free(struct replay *r);
/* replay.c: a progress line on the terminal is cleared before any
 * other text */
void progress_clear(void);

/* replay_options.c: the command line into r->opt, then the port-0
 * profiles (and the schedule) it names; 0 or an exit status */
int parse_args(struct replay *r, int argc, char **argv);
int parse_profiles(struct replay *r);

/* replay_io.c: the captures. path names IN's file (writing it would
 * destroy the input); emit writes a frame the root sent, stamped with
 * its departure. */
bool replay_names_input(const struct replay *r, const char *path);
int open_input(struct replay *r);
int open_output(struct replay *r);
struct rte_mbuf *pkt_build(struct rte_mempool *mp, const uint8_t *data,
			   uint32_t len);
int emit(struct replay *r, unsigned int shard, struct rte_mbuf *m);

/* the time the tap stamped on a frame the root sent (a dynamic field at
 * off): per frame, so inline */
static inline uint64_t *
tap_time(struct rte_mbuf *m, int off)
{
	return RTE_MBUF_DYNFIELD(m, off, uint64_t *);
}

/* replay_setup.c: the EAL, then each shard's chain (and the tap);
 * stages_fini releases them */
int eal_start(struct replay *r);
int stages_init(struct replay *r);
void stages_fini(struct replay *r);

/* replay_capture.c */
int rcap_parse(struct replay *r, int opt, const char *arg);
int rcap_open(struct replay *r);
int rcap_start(struct replay *r);
int rcap_arrival(struct replay *r, struct rte_mbuf *m, uint64_t t,
		 unsigned int q, uint8_t band);
void rcap_sent(struct replay *r, struct rte_mbuf *m);
void rcap_no_mbuf(struct replay *r);
int rcap_finish(struct replay *r, bool ok);
void rcap_release(struct replay *r);

#endif /* SHP_TOOLS_REPLAY_H */
