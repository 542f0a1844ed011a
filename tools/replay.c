/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-replay: apply a link profile to a capture, offline.
 *
 *   dpdk-shaper-replay IN OUT [--netem ARGS] [--tbf ARGS] [--bands N]
 *                      [--priomap P] [--classify MODE] [--config FILE]
 *                      [--seed N] [--ring-size N] [--mbufs N] [--burst N]
 *
 * The tool is one egress port (port 0) of dpdk-shaper: the same lib stages
 * (classify -> bands -> tbf -> netem) on a virtual clock driven by the
 * capture's timestamps. Every packet that leaves is written to OUT (a
 * nanosecond pcap) stamped with its departure time. The clock only ever
 * takes values at which something happens (an arrival, or the root's
 * next_time: a token bucket release, a netem departure or slot), so
 * departures are exact to the nanosecond.
 * See docs/replay.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pcap/pcap.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "classify.h"
#include "config.h"
#include "pcap_io.h"
#include "sch_bands.h"
#include "shp_meta.h"
#include "shp_netem.h"
#include "shp_qdisc.h"
#include "shp_stats.h"
#include "shp_tbf.h"

#define PROG "dpdk-shaper-replay"

/* Exit status, as dpdk-shaper: 0 ok, 1 runtime error, 2 bad option or
 * input, 3 mbuf leak. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EXIT_LEAK 3

/* stdio buffer of the input and output captures */
#define IO_BUF_SIZE (1u << 20)

/* The pool the app gives one port on `-l 0-1` (see app/ports.c), so the
 * default netem limit (half the pool) is the same here. */
#define APP_NB_RXD 1024
#define APP_NB_TXD 1024
#define APP_NETEM_RESERVE 16384
#define APP_POOL_CACHE 256
#define APP_LCORES 2

/* Times in a row the root's next_time named a clock value at which
 * dequeue then did nothing (the clock steps 1 ns on), before the run is
 * declared stuck: never seen, a safety net. */
#define MAX_STALLS 10000000

#define NEVER UINT64_MAX

#define REPLAY_NS_PER_S UINT64_C(1000000000)

struct replay {
	struct shp_options opt;
	const char *in_path;
	const char *out_path;
	char *tmp_path;        /* where OUT is written until it is complete */
	pcap_t *in;
	pcap_t *dead;
	pcap_dumper_t *dump;
	int snaplen;
	bool eal;
	char runtime_dir[PATH_MAX]; /* EAL's, removed at exit if empty */

	struct rte_mempool *pool;
	unsigned int nb_mbufs;
	struct shp_lcore_ctr *ctr;
	struct shp_ctx ctx;
	struct shp_qdisc *bands, *tbf, *netem;
	struct shp_tbf_conf *tc;
	struct shp_netem_conf *nc;

	uint64_t now;          /* the virtual clock, ns */
	uint64_t first_ts;
	bool started;

	uint64_t *delays;
	size_t nb_delays, cap_delays;
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
};

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	interrupted = sig;
}

/* ------------------------------------------------------------ options */

enum {
	OPT_BANDS = 256, OPT_PRIOMAP, OPT_CLASSIFY, OPT_TBF, OPT_NETEM,
	OPT_CONFIG, OPT_SEED, OPT_RING_SIZE, OPT_MBUFS, OPT_BURST, OPT_HELP,
};

static const struct option longopts[] = {
	{"bands", required_argument, NULL, OPT_BANDS},
	{"priomap", required_argument, NULL, OPT_PRIOMAP},
	{"classify", required_argument, NULL, OPT_CLASSIFY},
	{"tbf", required_argument, NULL, OPT_TBF},
	{"netem", required_argument, NULL, OPT_NETEM},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"seed", required_argument, NULL, OPT_SEED},
	{"ring-size", required_argument, NULL, OPT_RING_SIZE},
	{"mbufs", required_argument, NULL, OPT_MBUFS},
	{"burst", required_argument, NULL, OPT_BURST},
	{"help", no_argument, NULL, OPT_HELP},
	{NULL, 0, NULL, 0}
};

static void
usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " IN OUT [options]\n"
"\n"
"Applies dpdk-shaper's stages (classify -> bands -> tbf -> netem) to the\n"
"capture IN (pcap or pcapng, Ethernet) on a virtual clock driven by its\n"
"timestamps, and writes every packet that leaves to OUT (nanosecond pcap)\n"
"stamped with its departure time. Same input and seed, same output, byte\n"
"for byte. Acts as egress port 0: a --config file's [port 0] applies.\n"
"\n"
"  --netem 'ARGS'         tc-netem arguments, e.g. 'delay 10ms 1ms loss 1%%'\n"
"  --tbf 'ARGS'           tc-tbf arguments, e.g.\n"
"                         'rate 10mbit burst 10kb limit 1mb'\n"
"  --bands N              priority bands, 1..16 (default 3)\n"
"  --priomap P0,...,P15   band of each priority (default: Linux's map)\n"
"  --classify MODE        tos|dscp|pcp|none (default tos)\n"
"  --config FILE          INI profile ([global], [port 0]); the command\n"
"                         line wins over it\n"
"  --seed N               netem seed when the netem arguments have none\n"
"  --ring-size N          packets per band (default %u)\n"
"  --mbufs N              mbuf pool size (default: as dpdk-shaper for one\n"
"                         port; netem's default limit is half of it)\n"
"  --burst N              packets per dequeue call (default %u)\n"
"  --help                 this text\n"
"\n"
"Prints a summary (in, out, drops by cause, duplicated, corrupted,\n"
"reordered, delay p50/p99/max). Exit status: 0 ok, 1 runtime error,\n"
"2 bad option or unreadable input (OUT is not written), 3 mbuf leak.\n",
		SHP_DEFAULT_RING_SIZE, SHP_DEFAULT_BURST);
}

static int
fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
fail(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static int
parse_args(struct replay *r, int argc, char **argv)
{
	struct shp_options *o = &r->opt;
	const char *pos[2];
	char err[SHP_ERR_LEN];
	int c, i, npos = 0;

	/* The profile file first, so that the command line wins. */
	if (shp_config_preload(o, argc, argv, err) < 0)
		return fail(EXIT_USAGE, "%s", err);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *name = NULL;

		switch (c) {
		case 'h':
		case OPT_HELP:
			usage(stdout);
			exit(0);
		case OPT_CONFIG:
			continue;
		case ':':
			return fail(EXIT_USAGE, "option '%s' needs a value",
				    argv[optind - 1]);
		case '?':
			return fail(EXIT_USAGE, "unknown option '%s' (see "
				    "--help)", argv[optind - 1]);
		default:
			for (i = 0; longopts[i].name != NULL; i++)
				if (longopts[i].val == c)
					name = longopts[i].name;
			if (shp_option_set(o, name, -1, optarg, true, err) < 0)
				return fail(EXIT_USAGE, "%s", err);
		}
	}
	for (i = optind; i < argc; i++) {
		if (npos == 2)
			return fail(EXIT_USAGE, "unexpected argument '%s' "
				    "(usage: " PROG " IN OUT [options])",
				    argv[i]);
		pos[npos++] = argv[i];
	}
	if (npos < 2)
		return fail(EXIT_USAGE, "needs an input and an output capture "
			    "(usage: " PROG " IN OUT [options], see --help)");
	r->in_path = pos[0];
	r->out_path = pos[1];
	if (shp_options_finalize(o, err) < 0)
		return fail(EXIT_USAGE, "%s", err);
	return 0;
}

/* The port-0 profiles, parsed as the app does (the texts were checked
 * when they were set). */
static int
parse_profiles(struct replay *r)
{
	const struct shp_options *o = &r->opt;
	char err[SHP_ERR_LEN];
	const char *text;

	text = shp_options_tbf(o, 0);
	if (text != NULL && (r->tc = shp_profile_tbf(text, err)) == NULL)
		return fail(EXIT_USAGE, "%s", err);
	text = shp_options_netem(o, 0);
	if (text != NULL && (r->nc = shp_profile_netem(o, text, err)) == NULL)
		return fail(EXIT_USAGE, "%s", err);
	return 0;
}

/* ------------------------------------------------------------- input */

static int
open_input(struct replay *r)
{
	char perr[PCAP_ERRBUF_SIZE];
	struct stat st;
	FILE *fp;
	int dlt;

	if (stat(r->in_path, &st) == 0 && S_ISDIR(st.st_mode))
		return fail(EXIT_USAGE, "%s: is a directory, not a capture",
			    r->in_path);
	if (stat(r->in_path, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == 0)
		return fail(EXIT_USAGE, "%s: empty file, not a capture",
			    r->in_path);
	fp = fopen(r->in_path, "rb");
	if (fp == NULL)
		return fail(EXIT_USAGE, "%s: not a readable capture: %s",
			    r->in_path, strerror(errno));
	r->inbuf = malloc(IO_BUF_SIZE);
	if (r->inbuf != NULL)
		setvbuf(fp, r->inbuf, _IOFBF, IO_BUF_SIZE);
	r->in = pcap_fopen_offline_with_tstamp_precision(fp,
			PCAP_TSTAMP_PRECISION_NANO, perr);
	if (r->in == NULL) {
		fclose(fp);
		return fail(EXIT_USAGE, "%s: not a readable capture: %s",
			    r->in_path, perr);
	}
	dlt = pcap_datalink(r->in);
	if (dlt != DLT_EN10MB)
		return fail(EXIT_USAGE, "%s: link type %s (%d) is not "
			    "Ethernet", r->in_path,
			    pcap_datalink_val_to_name(dlt) ?
			    pcap_datalink_val_to_name(dlt) : "?", dlt);
	r->snaplen = pcap_snapshot(r->in);
	if (r->snaplen < 65535)
		r->snaplen = 65535;
	if (r->snaplen > 262144)
		r->snaplen = 262144;
	return 0;
}

/* OUT is written to a temporary name next to it and renamed when
 * complete, so a failed run leaves nothing (and an old OUT untouched).
 * A non-regular OUT (a FIFO, /dev/null) is written directly. */
static int
open_output(struct replay *r)
{
	const char *path = r->out_path;
	struct stat st;
	size_t len;
	FILE *fp;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return fail(EXIT_USAGE, "%s: is a directory", path);
	if (stat(path, &st) < 0 || S_ISREG(st.st_mode)) {
		len = strlen(path) + 32;
		r->tmp_path = malloc(len);
		if (r->tmp_path == NULL)
			return fail(EXIT_RUNTIME, "out of memory");
		snprintf(r->tmp_path, len, "%s.partial-%d", path,
			 (int)getpid());
		path = r->tmp_path;
	}
	r->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB,
			r->snaplen, PCAP_TSTAMP_PRECISION_NANO);
	if (r->dead == NULL)
		return fail(EXIT_RUNTIME, "cannot set up the output");
	fp = fopen(path, "wb");
	if (fp == NULL) {
		int code = fail(EXIT_USAGE, "%s: cannot write it: %s",
				r->out_path, strerror(errno));

		free(r->tmp_path);
		r->tmp_path = NULL;
		return code;
	}
	r->outbuf = malloc(IO_BUF_SIZE);
	if (r->outbuf != NULL)
		setvbuf(fp, r->outbuf, _IOFBF, IO_BUF_SIZE);
	r->dump = pcap_dump_fopen(r->dead, fp);
	if (r->dump == NULL) {
		fclose(fp);
		unlink(path);
		free(r->tmp_path);
		r->tmp_path = NULL;
		return fail(EXIT_RUNTIME, "%s: cannot write it: %s",
			    r->out_path, pcap_geterr(r->dead));
	}
	return 0;
}

/* An mbuf chain holding len bytes of data; NULL if the pool is empty. */
static struct rte_mbuf *
pkt_build(struct rte_mempool *mp, const uint8_t *data, uint32_t len)
{
	struct rte_mbuf *head, *seg;
	uint32_t off = 0;

	head = rte_pktmbuf_alloc(mp);
	if (head == NULL)
		return NULL;
	seg = head;
	for (;;) {
		uint32_t chunk = RTE_MIN((uint32_t)rte_pktmbuf_tailroom(seg),
					 len - off);

		memcpy(rte_pktmbuf_mtod(seg, uint8_t *), data + off, chunk);
		seg->data_len = (uint16_t)chunk;
		off += chunk;
		if (off == len)
			break;
		seg->next = rte_pktmbuf_alloc(mp);
		if (seg->next == NULL) {
			rte_pktmbuf_free(head);
			return NULL;
		}
		seg = seg->next;
		head->nb_segs++;
	}
	head->pkt_len = len;
	return head;
}

/* ------------------------------------------------------------ output */

static int
delay_push(struct replay *r, uint64_t d)
{
	if (r->nb_delays == r->cap_delays) {
		size_t cap = r->cap_delays ? 2 * r->cap_delays : 65536;
		uint64_t *p = realloc(r->delays, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		r->delays = p;
		r->cap_delays = cap;
	}
	r->delays[r->nb_delays++] = d;
	return 0;
}

/*
 * Lateness and sojourn as the live shaper reports them (shp_latency). On
 * the virtual clock lateness is 0 by construction: the clock stops at
 * every send time the stages announce. It is measured anyway, so that a
 * stage announcing the wrong time shows here.
 */
static struct shp_latency replay_lat = {
	.lateness.min = UINT64_MAX, .sojourn.min = UINT64_MAX,
};

static void
latency_record(const struct replay *r, const struct shp_meta *meta)
{
	uint64_t soj = r->now - meta->rx_ns, tts = meta->time_to_send;

	shp_latency_record_tx(&replay_lat, &soj, &tts, 1, r->now);
}

static void
latency_summary(FILE *f)
{
	struct shp_port_sum s;

	shp_latency_summarize(&replay_lat, &s);
	shp_hist_summary_print(f, "lateness_ns: ", &s.lateness);
	fprintf(f, "              (0 by construction offline: the virtual "
		"clock stops at every send time)\n");
	shp_hist_summary_print(f, "sojourn_ns:  ", &s.sojourn);
}

static int
emit(struct replay *r, struct rte_mbuf *m)
{
	uint32_t len = rte_pktmbuf_pkt_len(m);
	struct shp_meta *meta = shp_meta(m);
	struct pcap_pkthdr h;
	const void *data;

	if (len > r->linbuf_len) {
		uint8_t *b = realloc(r->linbuf, len);

		if (b == NULL)
			return -1;
		r->linbuf = b;
		r->linbuf_len = len;
	}
	data = rte_pktmbuf_read(m, 0, len, r->linbuf);
	memset(&h, 0, sizeof(h));
	h.ts.tv_sec = (time_t)(r->now / REPLAY_NS_PER_S);
	h.ts.tv_usec = (suseconds_t)(r->now % REPLAY_NS_PER_S); /* ns: NANO dump */
	h.caplen = len;
	h.len = len;
	pcap_dump((u_char *)r->dump, &h, data);
	r->out_pkts++;
	r->out_bytes += len;
	if (meta->rx_ns < r->max_rx_out)
		r->out_of_order++;
	else
		r->max_rx_out = meta->rx_ns;
	latency_record(r, meta);
	return delay_push(r, r->now - meta->rx_ns);
}

/* -------------------------------------------------------- the clock */

/* Everything any stage did so far: what left, what was dropped anywhere,
 * what the bands released (into the bucket and on to netem). */
static uint64_t
activity(const struct replay *r)
{
	const struct shp_port_ctr *c = r->ctx.ctr;
	uint64_t n = c->tx_packets;
	unsigned int i;

	for (i = 0; i < SHP_DROP_MAX; i++)
		n += c->drops[i];
	for (i = 0; i < SHP_MAX_BANDS; i++)
		n += c->band[i].dequeued;
	return n;
}

/* Dequeue the root at r->now until it returns nothing; write what leaves. */
static int
run_at(struct replay *r)
{
	struct rte_mbuf *pkts[SHP_MAX_BURST];
	uint16_t k, i;

	r->ctx.now = r->now;
	do {
		uint64_t bytes = 0;
		int rc = 0;

		k = shp_qdisc_dequeue(r->netem, pkts, r->opt.burst, &r->ctx);
		for (i = 0; i < k; i++) {
			bytes += rte_pktmbuf_pkt_len(pkts[i]);
			if (rc == 0)
				rc = emit(r, pkts[i]);
		}
		r->ctx.ctr->tx_packets += k;
		r->ctx.ctr->tx_bytes += bytes;
		if (k > 0)
			rte_pktmbuf_free_bulk(pkts, k);
		if (rc < 0)
			return -1;
	} while (k > 0);
	return 0;
}

/*
 * Move the clock to `until`, running every event on the way (events at
 * `until` itself included: they come before an arrival at that time); with
 * drain, until nothing is left to happen. An event is the root's
 * next_time: the stages say when a dequeue can next return something.
 * `fresh`: nothing was dequeued at r->now since the queues last changed
 * from outside (an arrival).
 */
static int
advance(struct replay *r, uint64_t until, bool drain)
{
	bool fresh = true;

	for (;;) {
		uint64_t t, before;

		if (interrupted)
			return 0;
		r->ctx.now = r->now;
		t = shp_qdisc_next_time(r->netem, &r->ctx);
		if (t == NEVER || (!drain && t > until))
			break;
		if (t <= r->now) {
			t = r->now;
			if (!fresh) {
				/* dequeue at now did nothing and the stages
				 * still say now: step on (a safety net) */
				r->stalls++;
				if (++r->stall_run > MAX_STALLS)
					break;
				t = r->now + 1;
			}
		}
		r->now = t;
		r->events++;
		before = activity(r);
		if (run_at(r) < 0)
			return -1;
		fresh = activity(r) != before;
		if (fresh)
			r->stall_run = 0;
	}
	if (!drain && until > r->now)
		r->now = until;
	return 0;
}

/* ------------------------------------------------------------ set-up */

static unsigned int
pool_size(const struct shp_options *o)
{
	if (o->mbufs != 0)
		return o->mbufs;
	return o->bands * o->ring_size + APP_NB_RXD + APP_NB_TXD +
	       8 * o->burst + APP_NETEM_RESERVE +
	       APP_LCORES * (2 * o->burst + APP_POOL_CACHE);
}

static int
first_cpu(void)
{
	cpu_set_t set;
	int i;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (i = 0; i < CPU_SETSIZE && i < RTE_MAX_LCORE; i++)
			if (CPU_ISSET(i, &set))
				return i;
	return 0;
}

static int
eal_start(struct replay *r)
{
	char mem[32], prefix[64], lcore[16];
	char *argv[] = {
		PROG, "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
		"-m", mem, "--file-prefix", prefix, "--log-level=error",
		"-l", lcore, NULL
	};
	uint64_t obj, mb;

	r->nb_mbufs = pool_size(&r->opt);
	obj = sizeof(struct rte_mbuf) + SHP_MBUF_PRIV_SIZE +
	      RTE_MBUF_DEFAULT_BUF_SIZE + 128;
	mb = ((uint64_t)r->nb_mbufs * obj * 5 / 4 +
	      (uint64_t)r->opt.bands * (r->opt.ring_size * 8 + 65536)) >> 20;
	mb += 96;
	snprintf(mem, sizeof(mem), "%" PRIu64, mb);
	snprintf(prefix, sizeof(prefix), "replay-%d", (int)getpid());
	snprintf(lcore, sizeof(lcore), "%d", first_cpu());
	if (rte_eal_init(RTE_DIM(argv) - 1, argv) < 0)
		return fail(EXIT_RUNTIME, "cannot start DPDK's EAL (%s MB, no "
			    "hugepages): %s", mem, rte_strerror(rte_errno));
	r->eal = true;
	snprintf(r->runtime_dir, sizeof(r->runtime_dir), "%s",
		 rte_eal_get_runtime_dir());
	return 0;
}

static int
stages_init(struct replay *r)
{
	struct shp_bands_conf bc;

	r->pool = rte_pktmbuf_pool_create("replay_pool", r->nb_mbufs, 0,
					  SHP_MBUF_PRIV_SIZE,
					  RTE_MBUF_DEFAULT_BUF_SIZE,
					  rte_socket_id());
	if (r->pool == NULL)
		return fail(EXIT_RUNTIME, "cannot create a pool of %u mbufs: "
			    "%s (try a smaller --mbufs)", r->nb_mbufs,
			    rte_strerror(rte_errno));
	r->ctr = rte_zmalloc("replay_ctr", sizeof(*r->ctr),
			     RTE_CACHE_LINE_SIZE);
	if (r->ctr == NULL)
		return fail(EXIT_RUNTIME, "out of memory");
	r->ctx.ctr = &r->ctr->port[0];
	bc = (struct shp_bands_conf){
		.name = "replay", .nb_bands = r->opt.bands,
		.ring_size = r->opt.ring_size, .socket = rte_socket_id(),
		.single_producer = 1,
		.ctr_blocks = r->ctr, .nb_ctr_blocks = 1,
	};
	r->bands = shp_qdisc_create(&shp_bands_ops, NULL, r->pool, 0,
				    rte_socket_id(), &bc);
	if (r->bands == NULL)
		goto fail;
	r->tbf = shp_qdisc_create(&shp_tbf_ops, r->bands, r->pool, 0,
				  rte_socket_id(), r->tc);
	if (r->tbf == NULL)
		goto fail;
	r->netem = shp_qdisc_create(&shp_netem_ops, r->tbf, r->pool, 0,
				    rte_socket_id(), r->nc);
	if (r->netem == NULL)
		goto fail;
	return 0;
fail:
	return fail(EXIT_RUNTIME, "cannot create the stages: %s",
		    strerror(errno));
}

static void
stages_fini(struct replay *r)
{
	if (r->netem != NULL && shp_qdisc_qlen_total(r->netem) > 0)
		shp_qdisc_reset_all(r->netem, &r->ctx);
	shp_qdisc_destroy(r->netem);
	shp_qdisc_destroy(r->tbf);
	shp_qdisc_destroy(r->bands);
	r->netem = r->tbf = r->bands = NULL;
}

/* ---------------------------------------------------------- the run */

static int
replay_run(struct replay *r)
{
	struct pcap_pkthdr *h;
	const u_char *data;
	int rc;

	while (!interrupted && (rc = pcap_next_ex(r->in, &h, &data)) == 1) {
		uint64_t t = (uint64_t)h->ts.tv_sec * REPLAY_NS_PER_S +
			     (uint64_t)h->ts.tv_usec;
		struct rte_mbuf *m;

		if (!r->started) {
			r->started = true;
			r->now = t;
			r->first_ts = t;
		}
		if (t < r->now) {
			r->backwards++;
			t = r->now;
		}
		if (advance(r, t, false) < 0)
			return fail(EXIT_RUNTIME, "out of memory");
		r->in_pkts++;
		r->in_bytes += h->caplen;
		if (h->caplen < h->len)
			r->snapped++;
		m = pkt_build(r->pool, data, h->caplen);
		if (m == NULL) {
			r->ctx.ctr->drops[SHP_DROP_NO_MBUF]++;
			continue;
		}
		shp_meta_init(m, t);
		shp_classify_burst(&r->opt.classifier, &m, 1, t);
		r->ctx.now = t;
		r->ctx.ctr->rx_packets++;
		r->ctx.ctr->rx_bytes += h->caplen;
		shp_qdisc_enqueue(r->bands, &m, 1, &r->ctx);
	}
	if (interrupted)
		return fail(130, "interrupted");
	if (rc == PCAP_ERROR)
		return fail(EXIT_USAGE, "%s: broken after %" PRIu64
			    " packets: %s", r->in_path, r->in_pkts,
			    pcap_geterr(r->in));
	if (advance(r, 0, true) < 0)
		return fail(EXIT_RUNTIME, "out of memory");
	if (interrupted)
		return fail(130, "interrupted");
	r->stuck = shp_qdisc_qlen_total(r->netem);
	if (r->stuck > 0)
		shp_qdisc_reset_all(r->netem, &r->ctx);
	return 0;
}

/* ----------------------------------------------------------- summary */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank. */
static uint64_t
percentile(const uint64_t *v, size_t n, unsigned int pct)
{
	size_t rank = (n * pct + 99) / 100;

	return v[rank > 0 ? rank - 1 : 0];
}

static void
fmt_ms(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "%" PRIu64 ".%06" PRIu64 " ms", ns / 1000000,
		 ns % 1000000);
}

/* Prints the summary; returns whether the counters add up. */
static bool
summary(struct replay *r, FILE *f)
{
	const struct shp_port_ctr *c = r->ctx.ctr;
	uint64_t dropped = 0, queued, span;
	char p50[32], p99[32], pmax[32];
	bool ok;
	int d;

	for (d = 0; d < SHP_DROP_MAX; d++)
		dropped += c->drops[d];
	queued = r->netem != NULL ? shp_qdisc_qlen_total(r->netem) : 0;
	span = r->started ? r->now - r->first_ts : 0;
	fprintf(f, "%s -> %s: %" PRIu64 ".%09" PRIu64 " s of virtual time\n",
		r->in_path, r->out_path, span / REPLAY_NS_PER_S, span % REPLAY_NS_PER_S);
	fprintf(f, "in:           %" PRIu64 " packets, %" PRIu64 " bytes\n",
		r->in_pkts, r->in_bytes);
	fprintf(f, "out:          %" PRIu64 " packets, %" PRIu64 " bytes\n",
		r->out_pkts, r->out_bytes);
	fprintf(f, "drops:        %" PRIu64 " (", dropped);
	for (d = 0; d < SHP_DROP_MAX; d++)
		fprintf(f, "%s%s %" PRIu64, d ? ", " : "", shp_drop_names[d],
			c->drops[d]);
	fprintf(f, ")\n");
	fprintf(f, "duplicated:   %" PRIu64 "\n", c->duplicated);
	fprintf(f, "corrupted:    %" PRIu64 "\n", c->corrupted);
	fprintf(f, "reordered:    %" PRIu64 "\n", c->reordered);
	fprintf(f, "ecn_marked:   %" PRIu64 "\n", c->ecn_marked);
	fprintf(f, "out_of_order: %" PRIu64 "\n", r->out_of_order);
	if (r->nb_delays > 0) {
		qsort(r->delays, r->nb_delays, sizeof(*r->delays), cmp_u64);
		fmt_ms(p50, sizeof(p50),
		       percentile(r->delays, r->nb_delays, 50));
		fmt_ms(p99, sizeof(p99),
		       percentile(r->delays, r->nb_delays, 99));
		fmt_ms(pmax, sizeof(pmax), r->delays[r->nb_delays - 1]);
		fprintf(f, "delay:        p50 %s, p99 %s, max %s\n", p50, p99,
			pmax);
	} else {
		fprintf(f, "delay:        none (no packet left)\n");
	}
	latency_summary(f);
	ok = r->in_pkts + c->duplicated == r->out_pkts + dropped + queued;
	fprintf(f, "conservation: in %" PRIu64 " + duplicated %" PRIu64
		" = out %" PRIu64 " + drops %" PRIu64 " + queued %" PRIu64
		": %s\n", r->in_pkts, c->duplicated, r->out_pkts, dropped,
		queued, ok ? "ok" : "VIOLATED");
	if (r->backwards)
		fprintf(f, "note: %" PRIu64 " input timestamps went backwards "
			"(taken as arriving at the previous time)\n",
			r->backwards);
	if (r->snapped)
		fprintf(f, "note: %" PRIu64 " records were cut by the "
			"capture's snaplen (shaped at their captured length)\n",
			r->snapped);
	if (r->stuck)
		fprintf(f, "note: %" PRIu64 " packets could never leave "
			"(counted as flushed)\n", r->stuck);
	if (r->stalls)
		fprintf(f, "note: clock anomalies: %" PRIu64 " stalls "
			"(please report)\n", r->stalls);
	return ok;
}

/* ----------------------------------------------------------- cleanup */

static void
close_output(struct replay *r, bool keep)
{
	if (r->dump != NULL) {
		pcap_dump_close(r->dump);
		r->dump = NULL;
	}
	if (r->dead != NULL) {
		pcap_close(r->dead);
		r->dead = NULL;
	}
	free(r->outbuf);
	r->outbuf = NULL;
	if (r->tmp_path != NULL && !keep)
		unlink(r->tmp_path);
}

static void
release(struct replay *r)
{
	stages_fini(r);
	if (r->pool != NULL)
		rte_mempool_free(r->pool);
	rte_free(r->ctr);
	if (r->in != NULL)
		pcap_close(r->in);
	free(r->inbuf);
	if (r->tc != NULL)
		free(r->tc);
	if (r->nc != NULL)
		shp_netem_conf_free(r->nc);
	free(r->delays);
	free(r->linbuf);
	free(r->tmp_path);
	shp_options_free(&r->opt);
	if (r->eal) {
		rte_eal_cleanup();
		/* --no-shconf still makes an (empty) runtime directory */
		if (r->runtime_dir[0] != '\0')
			rmdir(r->runtime_dir);
	}
}

int
main(int argc, char **argv)
{
	static struct replay rp;
	struct replay *r = &rp;
	struct sigaction sa;
	int code = 0, rc;
	bool ok;

	shp_options_init(&r->opt);
	code = parse_args(r, argc, argv);
	if (code == 0)
		code = parse_profiles(r);
	if (code == 0)
		code = open_input(r);
	if (code != 0)
		goto out;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	code = open_output(r);
	if (code == 0)
		code = eal_start(r);
	if (code == 0)
		code = stages_init(r);
	if (code != 0)
		goto out;
	code = replay_run(r);
	if (code != 0) {
		close_output(r, false);
		goto out;
	}
	ok = summary(r, stdout);
	fflush(stdout);
	if (ferror(pcap_dump_file(r->dump)) || pcap_dump_flush(r->dump) < 0) {
		code = fail(EXIT_RUNTIME, "%s: write error: %s", r->out_path,
			    strerror(errno));
		close_output(r, false);
		goto out;
	}
	close_output(r, true);
	if (r->tmp_path != NULL && rename(r->tmp_path, r->out_path) < 0) {
		code = fail(EXIT_RUNTIME, "%s: cannot rename %s to it: %s",
			    r->out_path, r->tmp_path, strerror(errno));
		unlink(r->tmp_path);
		goto out;
	}
	free(r->tmp_path);
	r->tmp_path = NULL;
	if (!ok)
		code = fail(EXIT_RUNTIME, "internal error: the counters do "
			    "not add up (see the conservation line)");
	stages_fini(r);
	rc = (int)rte_mempool_avail_count(r->pool);
	if (rc != (int)r->nb_mbufs && code == 0)
		code = fail(EXIT_LEAK, "error: mbuf leak: %u of %u mbufs not "
			    "returned to the pool", r->nb_mbufs - rc,
			    r->nb_mbufs);
out:
	if (code != 0)
		close_output(r, false);
	release(r);
	return code;
}
