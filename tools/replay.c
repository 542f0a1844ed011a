/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-replay: apply a link profile to a capture, offline.
 *
 *   dpdk-shaper-replay IN OUT [--netem ARGS] [--tbf ARGS] [--bands N]
 *                      [--priomap P] [--classify MODE] [--config FILE]
 *                      [--seed N] [--ring-size N] [--mbufs N] [--burst N]
 *                      [--stats-file PATH] [--progress S]
 *                      [--schedule FILE] [--queues N]
 *
 * The tool is one egress port (port 0) of dpdk-shaper: the same lib stages
 * (classify -> bands -> tbf -> netem) on a virtual clock driven by the
 * capture's timestamps. Every packet that leaves is written to OUT (a
 * nanosecond pcap) stamped with its departure time. The clock only ever
 * takes values at which something happens (an arrival, or the root's
 * next_time: a token bucket release, a netem departure or slot), so
 * departures are exact to the nanosecond.
 * With --queues N the port is N shards, as the program runs a link over
 * N TX queues (issue 24): frames go to the shard a NIC's RSS would put
 * them in (shp_rss.h), each shard runs a chain of its own, the tbf
 * bucket is the link's one (tbf_shared.h), and the shards are served on
 * the one clock in a fixed rotation, so the output stays exact.
 * The summary printed at the end and --stats-file are replay_report.c's.
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
#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <pcap/pcap.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>

#include "classify.h"
#include "config.h"
#include "pcap_io.h"
#include "schedule.h"
#include "shp_meta.h"
#include "shp_pkthdr.h"
#include "shp_pool.h"
#include "shp_qdisc.h"
#include "shp_stats.h"
#include "shp_link.h"

#include "replay.h"

#define PROG "dpdk-shaper-replay"

/* stdio buffer of the input and output captures */
#define IO_BUF_SIZE (1u << 20)


/* Times in a row the root's next_time named a clock value at which
 * dequeue then did nothing (the clock steps 1 ns on), before the run is
 * declared stuck: never seen, a safety net. */
#define MAX_STALLS 10000000

#define NEVER UINT64_MAX

/* The latest time a pcap record can hold: unsigned 32-bit seconds. */
#define PCAP_SEC_MAX UINT32_MAX

/* Packets between two looks at the wall clock for the progress line. */
#define PROGRESS_EVERY 1024

volatile sig_atomic_t interrupted;

/* A progress line is on the terminal: clear it before any other text. */
static bool progress_shown;

static void
progress_clear(void)
{
	if (progress_shown)
		fprintf(stderr, "\r\033[K");
	progress_shown = false;
}

static void
on_signal(int sig)
{
	interrupted = sig;
}

/* ------------------------------------------------------------ options */

enum {
	OPT_BANDS = 256, OPT_PRIOMAP, OPT_CLASSIFY, OPT_TBF, OPT_NETEM,
	OPT_CONFIG, OPT_SEED, OPT_RING_SIZE, OPT_MBUFS, OPT_BURST, OPT_HELP,
	OPT_STATS_FILE, OPT_PROGRESS, OPT_SCHEDULE, OPT_MTU, OPT_QUEUES,
	OPT_PRESET, OPT_PRESET_PORT, OPT_PRESET_DIR,
};

/* the fixed ones, then --KEY/--KEY-port of every stage kind (at
 * OPT_KIND, filled by parse_args) */
#define OPT_KIND 512
#define OPT_CLASS 768   /* --class* (shp_class_longopts) */
static struct option longopts[40 + 2 * SHP_MAX_KEYS + 4 + SHP_MAX_KEYS] = {
	{"bands", required_argument, NULL, OPT_BANDS},
	{"priomap", required_argument, NULL, OPT_PRIOMAP},
	{"classify", required_argument, NULL, OPT_CLASSIFY},
	{"config", required_argument, NULL, OPT_CONFIG},
	/* read with --config, before the others (shp_config_preload) */
	{"preset", required_argument, NULL, OPT_PRESET},
	{"preset-port", required_argument, NULL, OPT_PRESET_PORT},
	{"preset-dir", required_argument, NULL, OPT_PRESET_DIR},
	{"seed", required_argument, NULL, OPT_SEED},
	{"ring-size", required_argument, NULL, OPT_RING_SIZE},
	{"mbufs", required_argument, NULL, OPT_MBUFS},
	{"burst", required_argument, NULL, OPT_BURST},
	{"stats-file", required_argument, NULL, OPT_STATS_FILE},
	{"progress", required_argument, NULL, OPT_PROGRESS},
	{"schedule", required_argument, NULL, OPT_SCHEDULE},
	{"mtu", required_argument, NULL, OPT_MTU},
	{"queues", required_argument, NULL, OPT_QUEUES},
	{"capture-drops", required_argument, NULL, RCAP_OPT_DROPS},
	{"capture-snaplen", required_argument, NULL, RCAP_OPT_SNAPLEN},
	{"capture-limit", required_argument, NULL, RCAP_OPT_LIMIT},
	{"packet-log", required_argument, NULL, RCAP_OPT_LOG},
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
"IN `-` reads standard input; OUT `-` writes standard output (the summary\n"
"then goes to standard error). OUT may not be IN.\n"
"\n"
"  --netem 'ARGS'         tc-netem arguments, e.g. 'delay 10ms 1ms loss 1%%'\n"
"  --queue 'KIND ARGS'    the bottleneck queue: pfifo_fast (default) or\n"
"                         e.g. 'fq_codel target 5ms' (see Stage kinds)\n"
"  --tbf 'ARGS'           tc-tbf arguments, e.g.\n"
"                         'rate 10mbit burst 10kb limit 1mb'\n"
"  --bands N              priority bands, 1..16 (default 3)\n"
"  --priomap P0,...,P15   band of each priority (default: Linux's map)\n"
"  --classify MODE        tos|dscp|pcp|none (default tos)\n"
"  --config FILE          INI profile ([global], [port 0]); the command\n"
"                         line wins over it\n"
"  --preset NAME          a link preset (docs/presets.md): its stages\n"
"                         replace --config's; the other options win\n"
"  --preset-port P NAME   the same for port P (0: the one port here)\n"
"  --preset-dir DIR       where presets are (default: $SHP_PRESET_DIR, else\n"
"                         config/presets of the source tree)\n"
"  --seed N               netem seed when the netem arguments have none\n"
"  --ring-size N          packets per band (default %u)\n"
"  --mbufs N              mbuf pool size (default: as dpdk-shaper for one\n"
"                         port; netem's default limit is half of it)\n"
"  --burst N              packets per dequeue call (default %u)\n"
"  --mtu BYTES            a frame whose L3 packet is longer (after its\n"
"                         Ethernet header and VLAN tags) is dropped as\n"
"                         `oversize`, as dpdk-shaper --mtu does (default:\n"
"                         no check; INI [global] or [port 0] mtu)\n"
"  --stats-file PATH      write the counters as JSON, in dpdk-shaper's\n"
"                         --stats-file format (port 0)\n"
"  --progress S           progress line every S seconds when standard\n"
"                         error is a terminal (default 1, 0: off)\n"
"  --schedule FILE        changes at given times from the first packet:\n"
"                         lines 'TIME set|clear KEY 0 ...', 'TIME link\n"
"                         down|up 0', 'repeat PERIOD' (docs/time-varying.md)\n"
"  --queues N             spread the port over N shards, 1..%u (default\n"
"                         1), as a NIC's RSS spreads flows over N queues:\n"
"                         a queue per shard, one tbf rate for the link\n"
"                         (docs/replay.md, Shards)\n"
"  --capture-drops FILE   write every dropped frame to FILE (pcapng), each\n"
"                         stamped with its drop's time and commented\n"
"                         'cause=CAUSE port=0 shard=S' (docs/monitoring.md)\n"
"  --capture-snaplen N    bytes kept of each dropped frame, 1..65535\n"
"                         (default 128)\n"
"  --capture-limit BYTES  the capture file's bound (default 256mb): the\n"
"                         drops past it are counted, not written\n"
"  --packet-log FILE      one CSV line per input frame: arrival, shard,\n"
"                         class, band, fate (sent or the drop cause),\n"
"                         departure, sojourn and what netem did to it\n"
"  --help                 this text\n"
"\n"
"Prints a summary: the profile applied, in and out (packets, Mbit/s),\n"
"drops and loss by cause, duplicated, corrupted, reordered, the delay\n"
"(min, mean, p50, p99, max) split into queueing (bands + tbf) and netem.\n"
"Ctrl-C prints the summary so far (OUT is not written, exit 130).\n"
"Exit status: 0 ok, 1 runtime error, 2 bad option or unreadable input\n"
"(OUT is not written), 3 mbuf leak.\n",
		SHP_DEFAULT_RING_SIZE, SHP_DEFAULT_BURST, REPLAY_MAX_QUEUES);
	shp_kinds_usage(f);
	shp_class_usage(f);
}

int
fail(int code, const char *fmt, ...)
{
	va_list ap;

	progress_clear();
	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

/* Refuse a --stats-file that could not be written, before the run. */
static int
check_writable_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail(-1, "--stats-file %s: no directory %s", path, dir);
	if (access(dir, W_OK) < 0)
		return fail(-1, "--stats-file %s: directory %s is not "
			    "writable", path, dir);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return fail(-1, "--stats-file %s: is a directory", path);
	return 0;
}

static int
parse_args(struct replay *r, int argc, char **argv)
{
	struct shp_options *o = &r->opt;
	const char *pos[2];
	char err[SHP_ERR_LEN];
	int c, i, npos = 0;

	for (i = 0; longopts[i].name != NULL; i++)
		;
	i += (int)shp_kind_longopts(longopts + i, OPT_KIND);
	shp_class_longopts(longopts + i, OPT_CLASS);

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
		case OPT_PRESET:
		case OPT_PRESET_DIR:
			continue;
		case OPT_PRESET_PORT:   /* P NAME: the name is the next word */
			if (optind >= argc)
				return fail(EXIT_USAGE, "--preset-port %s: "
					    "missing the preset's name (e.g. "
					    "--preset-port %s 5g_urban)",
					    optarg, optarg);
			optind++;
			continue;
		case OPT_PROGRESS: {
			char *end;

			r->progress_s = strtod(optarg, &end);
			if (end == optarg || *end != '\0' ||
			    !(r->progress_s >= 0 && r->progress_s <= 3600))
				return fail(EXIT_USAGE, "--progress '%s': "
					    "expected seconds, 0..3600",
					    optarg);
			continue;
		}
		case OPT_QUEUES: {
			char *end;
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (end == optarg || *end != '\0' || errno != 0 ||
			    n < 1 || n > REPLAY_MAX_QUEUES)
				return fail(EXIT_USAGE, "--queues '%s': "
					    "expected a number of shards, "
					    "1..%u", optarg, REPLAY_MAX_QUEUES);
			r->queues = (unsigned int)n;
			r->queues_set = true;
			continue;
		}
		case RCAP_OPT_DROPS:
		case RCAP_OPT_SNAPLEN:
		case RCAP_OPT_LIMIT:
		case RCAP_OPT_LOG:
			if (rcap_parse(r, c, optarg) != 0)
				return EXIT_USAGE;
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
			if (c >= OPT_CLASS) {
				/* --class* NAME VALUE */
				if (optind >= argc)
					return fail(EXIT_USAGE, "--%s %s: "
						    "expected a class name and "
						    "a value", name, optarg);
				if (shp_option_class(o, name, optarg,
						     argv[optind++], err) < 0)
					return fail(EXIT_USAGE, "%s", err);
				continue;
			}
			if (c >= OPT_KIND && (c - OPT_KIND) % 2 == 1) {
				/* --KEY-port P TEXT */
				char *end;
				long port = strtol(optarg, &end, 10);

				if (end == optarg || *end != '\0' ||
				    optind >= argc)
					return fail(EXIT_USAGE, "--%s: expected "
						    "a port number and a "
						    "profile", name);
				if (shp_option_set(o, name, (int)port,
						   argv[optind++], true,
						   err) < 0)
					return fail(EXIT_USAGE, "%s", err);
				continue;
			}
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
	r->out_stdout = strcmp(r->out_path, "-") == 0;
	r->info = r->out_stdout ? stderr : stdout;
	if (shp_options_finalize(o, err) < 0)
		return fail(EXIT_USAGE, "%s", err);
	if (o->stats_file != NULL && check_writable_dir(o->stats_file) < 0)
		return EXIT_USAGE;
	return 0;
}

/* The port-0 profiles, parsed as the app does (the texts were checked
 * when they were set). */
static int
parse_profiles(struct replay *r)
{
	char err[SHP_ERR_LEN];

	/* INI [global] queues, unless --queues said otherwise; the pool
	 * counts the shards as ports (pool_size), not as the program's
	 * queues */
	if (!r->queues_set && r->opt.queues > 1)
		r->queues = RTE_MIN(r->opt.queues,
				    (unsigned int)REPLAY_MAX_QUEUES);
	r->opt.queues = 1;
	if (shp_options_chain_spec(&r->opt, 0, &r->spec, err) < 0)
		return fail(EXIT_USAGE, "%s", err);
	if (shp_class_set_check_ports(r->opt.classes, 1u, err) < 0)
		return fail(EXIT_USAGE, "%s (the tool's one port is 0)", err);
	if (r->opt.schedule_file != NULL) {
		/* port 0 is the only port; its chain's kinds are the spec's */
		static const uint16_t port0 = 0;
		struct shp_chain kinds;
		unsigned int s;

		shp_chain_spec_kinds(&r->spec, &kinds);
		shp_options_kind_env(&r->opt, &r->kenv);
		if (shp_sched_load(&r->sched, r->opt.schedule_file, &port0, 1,
				   &r->kenv, err) < 0 ||
		    shp_sched_check_chain(&r->sched, 0, &kinds, &r->kenv,
					  err) < 0 ||
		    shp_sched_expand_for(&r->sched, &port0, 1, &kinds,
					 &r->kenv, err) < 0)
			return fail(EXIT_USAGE, "%s", err);
		/* a bare wire is the program's (app/shaper_wire.h): the
		 * offline chain has no way around its stages yet */
		for (s = 0; s < r->sched.nb; s++)
			if (r->sched.ev[s].op == SHP_SCHED_TOGGLE)
				return fail(EXIT_USAGE, "%s:%u: '%s': "
					    "disable and enable are the live "
					    "program's only", r->sched.path,
					    r->sched.ev[s].line,
					    r->sched.ev[s].text);
		r->sched_last = calloc(r->sched.nb ? r->sched.nb : 1,
				       sizeof(*r->sched_last));
		if (r->sched_last == NULL)
			return fail(EXIT_RUNTIME, "out of memory");
		shp_sched_last_at_instant(&r->sched, 0, r->sched_last);
		r->sched_sets = calloc(r->sched.nb + 1,
				       sizeof(*r->sched_sets));
		if (r->sched_sets == NULL)
			return fail(EXIT_RUNTIME, "out of memory");
		for (s = 0; s < r->sched.nb; s++)
			r->sched_sets[s + 1] = r->sched_sets[s] +
				(r->sched.ev[s].op == SHP_SCHED_SET);
		r->sched_on = true;
	}
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

	if (strcmp(r->in_path, "-") == 0) {
		if (isatty(STDIN_FILENO))
			return fail(EXIT_USAGE, "IN is `-` but standard input "
				    "is a terminal, not a capture");
		fp = stdin;
		goto opened;
	}
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
opened:
	if (fstat(fileno(fp), &r->in_st) < 0)
		memset(&r->in_st, 0, sizeof(r->in_st));
	r->inbuf = malloc(IO_BUF_SIZE);
	if (r->inbuf != NULL)
		setvbuf(fp, r->inbuf, _IOFBF, IO_BUF_SIZE);
	r->in = pcap_fopen_offline_with_tstamp_precision(fp,
			PCAP_TSTAMP_PRECISION_NANO, perr);
	if (r->in == NULL) {
		if (fp != stdin)
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

/* OUT names IN's file (a link, the same path, stdout redirected to it):
 * writing it would destroy the input. */
static bool
same_file(const struct replay *r, const struct stat *st)
{
	return r->in_st.st_ino != 0 && S_ISREG(st->st_mode) &&
	       st->st_dev == r->in_st.st_dev && st->st_ino == r->in_st.st_ino;
}

bool
replay_names_input(const struct replay *r, const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && same_file(r, &st);
}

/* OUT is written to a temporary name next to it and renamed when
 * complete, so a failed run leaves nothing (and an old OUT untouched).
 * A non-regular OUT (a FIFO, /dev/null) is written directly, `-` to
 * standard output. */
static int
open_output(struct replay *r)
{
	const char *path = r->out_path;
	struct stat st;
	size_t len;
	FILE *fp;

	if (r->out_stdout) {
		if (isatty(STDOUT_FILENO))
			return fail(EXIT_USAGE, "OUT is `-` but standard "
				    "output is a terminal: redirect it or "
				    "pipe it (e.g. | tcpdump -r -)");
		if (fstat(STDOUT_FILENO, &st) == 0 && same_file(r, &st))
			return fail(EXIT_USAGE, "OUT (standard output) is the "
				    "input capture %s: refusing to overwrite "
				    "it", r->in_path);
		fp = stdout;
		goto opened;
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return fail(EXIT_USAGE, "%s: is a directory", path);
	if (stat(path, &st) == 0 && same_file(r, &st))
		return fail(EXIT_USAGE, "OUT %s is the same file as IN %s: "
			    "refusing to overwrite the input", path,
			    r->in_path);
	if (stat(path, &st) < 0 || S_ISREG(st.st_mode)) {
		len = strlen(path) + 32;
		r->tmp_path = malloc(len);
		if (r->tmp_path == NULL)
			return fail(EXIT_RUNTIME, "out of memory");
		snprintf(r->tmp_path, len, "%s.partial-%d", path,
			 (int)getpid());
		path = r->tmp_path;
	}
	fp = fopen(path, "wb");
	if (fp == NULL) {
		int code = fail(EXIT_USAGE, "%s: cannot write it: %s",
				r->out_path, strerror(errno));

		free(r->tmp_path);
		r->tmp_path = NULL;
		return code;
	}
opened:
	r->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB,
			r->snaplen, PCAP_TSTAMP_PRECISION_NANO);
	if (r->dead == NULL) {
		if (fp != stdout)
			fclose(fp);
		return fail(EXIT_RUNTIME, "cannot set up the output");
	}
	r->outbuf = malloc(IO_BUF_SIZE);
	if (r->outbuf != NULL)
		setvbuf(fp, r->outbuf, _IOFBF, IO_BUF_SIZE);
	r->dump = pcap_dump_fopen(r->dead, fp);
	if (r->dump == NULL) {
		if (fp != stdout) {
			fclose(fp);
			unlink(path);
		}
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

static inline uint64_t *
tap_time(struct rte_mbuf *m, int off)
{
	return RTE_MBUF_DYNFIELD(m, off, uint64_t *);
}

/* Time from arrival to departure, split where the packet left tbf. */
static int
record_delay(struct replay *r, struct rte_mbuf *m)
{
	uint64_t rx = shp_meta(m)->rx_ns, d = r->now - rx;
	uint64_t left = *tap_time(m, r->tap_off);

	left = RTE_MIN(RTE_MAX(left, rx), r->now);
	if (dstat_push(&r->delay, d) < 0 ||
	    dstat_push(&r->queueing, left - rx) < 0 ||
	    dstat_push(&r->netem_delay, r->now - left) < 0)
		return -1;
	return 0;
}

static int
emit(struct replay *r, unsigned int shard, struct rte_mbuf *m)
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
	if (r->now / REPLAY_NS_PER_S > PCAP_SEC_MAX) {
		/* a pcap record holds 32-bit seconds: the end of 2106 is
		 * the latest time it can say, never a wrapped early one */
		h.ts.tv_sec = (time_t)PCAP_SEC_MAX;
		h.ts.tv_usec = (suseconds_t)(REPLAY_NS_PER_S - 1);
		r->saturated++;
	} else {
		h.ts.tv_sec = (time_t)(r->now / REPLAY_NS_PER_S);
		/* ns: NANO dump */
		h.ts.tv_usec = (suseconds_t)(r->now % REPLAY_NS_PER_S);
	}
	h.caplen = len;
	h.len = len;
	pcap_dump((u_char *)r->dump, &h, data);
	if (r->out_pkts == 0)
		r->first_out = r->now;
	r->last_out = r->now;
	r->out_pkts++;
	r->out_bytes += len;
	rcap_sent(r, m);
	if (meta->rx_ns < r->max_rx_out)
		r->out_of_order++;
	else
		r->max_rx_out = meta->rx_ns;
	latency_record(r, shard, meta);
	replay_trace_departure(r, meta);
	return record_delay(r, m);
}

/* -------------------------------------------------------- the clock */

static void progress(struct replay *r, bool last);

/* Everything any stage did so far: what left, what was dropped anywhere,
 * what the bands released (into the bucket and on to netem). */
static uint64_t
activity(const struct replay *r)
{
	uint64_t n = 0;
	unsigned int i, q;

	for (q = 0; q < r->queues; q++) {
		const struct shp_port_ctr *c = r->ctx[q].ctr;

		n += c->tx_packets;
		for (i = 0; i < shp_drop_nb(); i++)
			n += c->drops[i];
		for (i = 0; i < SHP_MAX_BANDS; i++)
			n += c->band[i].dequeued;
	}
	return n;
}

/* Dequeue shard q's root at r->now until it returns nothing; write what
 * leaves. */
static int
run_shard_at(struct replay *r, unsigned int q)
{
	struct rte_mbuf *pkts[SHP_MAX_BURST];
	struct shp_ctx *ctx = &r->ctx[q];
	uint16_t k, i;

	ctx->now = r->now;
	do {
		uint64_t bytes = 0;
		int rc = 0;

		k = shp_qdisc_dequeue(r->chain[q].root, pkts, r->opt.burst, ctx);
		for (i = 0; i < k; i++) {
			bytes += rte_pktmbuf_pkt_len(pkts[i]);
			if (rc == 0)
				rc = emit(r, q, pkts[i]);
		}
		ctx->ctr->tx_packets += k;
		ctx->ctr->tx_bytes += bytes;
		if (k > 0)
			rte_pktmbuf_free_bulk(pkts, k);
		if (rc < 0)
			return -1;
	} while (k > 0);
	return 0;
}

/*
 * Every shard at r->now, one after the other. The first served takes
 * the link's tokens first (what lcores racing for the shared bucket
 * would decide by who comes first), so the first place goes round the
 * shards that send: the next instant starts after the first shard that
 * sent at this one. Shards that wait for tokens then take turns, none
 * is always last, and the order is still a function of the input alone.
 */
static int
run_at(struct replay *r)
{
	unsigned int i, q, sent = r->queues;

	for (i = 0; i < r->queues; i++) {
		uint64_t before;

		q = (r->serve_first + i) % r->queues;
		before = r->ctx[q].ctr->tx_packets;
		if (run_shard_at(r, q) < 0)
			return -1;
		if (sent == r->queues && r->ctx[q].ctr->tx_packets != before)
			sent = q;
	}
	if (sent < r->queues)
		r->serve_first = (sent + 1) % r->queues;
	return 0;
}

/* The earliest of the shards' next times. A link's shards answer twice:
 * each publishes its head as it answers (the oldest goes first,
 * sch_tbf.c), so the first round lets every shard see the others' heads
 * as they are now, not as a shard's last call left them. */
static uint64_t
next_time(struct replay *r)
{
	uint64_t t = NEVER;
	unsigned int q, round;

	for (round = r->queues > 1 ? 0 : 1; round < 2; round++) {
		t = NEVER;
		for (q = 0; q < r->queues; q++) {
			r->ctx[q].now = r->now;
			t = RTE_MIN(t, shp_qdisc_next_time(r->chain[q].root,
							   &r->ctx[q]));
		}
	}
	return t;
}

/* The virtual time of the schedule's next occurrence, or NEVER. */
static uint64_t
sched_next(const struct replay *r)
{
	uint64_t t = shp_sched_cursor_time(&r->sched, &r->sched_cur);

	return t == SHP_SCHED_NONE || t > NEVER - 1 - r->first_ts ? NEVER :
	       r->first_ts + t;
}

static int
sched_apply(struct replay *r)
{
	const struct shp_sched_event *e = &r->sched.ev[r->sched_cur.i];
	bool last = r->sched_last[r->sched_cur.i];
	char err[SHP_ERR_LEN];

	shp_sched_cursor_next(&r->sched, &r->sched_cur);
	if (e->op != SHP_SCHED_SET)
		return 0;   /* a link's state is a function of time */
	/* a later line at this instant sets the same stage before anything
	 * runs: the end is the same without parsing this one (as live) */
	if (!last) {
		r->sched_applied++;
		return 0;
	}
	/* (checked against the chain before the run: cannot fail but for
	 * memory) */
	if (shp_sched_apply_shards(e, r->chain, r->queues, &r->kenv,
				   err) < 0) {
		fail(EXIT_RUNTIME, "%s:%u: %s", r->sched.path, e->line, err);
		return -1;
	}
	r->sched_applied++;
	return 0;
}

/*
 * Nothing queued before an arrival at `until`: whole cycles of a repeat
 * before the one ahead of it change nothing a packet meets (a new
 * profile takes effect at its first use, and each stage's last change
 * before `until` is still made, in the cycle walked), so they are
 * counted as applied without being walked: a gap of a day between two
 * packets of a capture costs two cycles, not 86 million.
 */
static void
sched_skip_idle(struct replay *r, uint64_t until)
{
	const struct shp_sched *s = &r->sched;
	struct shp_sched_cursor *c = &r->sched_cur;
	uint64_t to;

	if (s->repeat == 0 || until == NEVER || until < r->first_ts ||
	    c->i >= s->nb)
		return;
	to = (until - r->first_ts) / s->repeat;
	if (to <= c->cycle + 1)
		return;
	to--;
	r->sched_applied += (to - c->cycle) * r->sched_sets[s->nb] -
			    r->sched_sets[c->i];
	c->cycle = to;
	c->i = 0;
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
		t = next_time(r);
		if (r->sched_on) {
			/* a change at its time, before what the stages do
			 * then and before an arrival at that time; once
			 * drained, nothing is left for it to change */
			uint64_t ts;

			if (!drain && t == NEVER)
				sched_skip_idle(r, until);
			ts = sched_next(r);
			if (ts != NEVER && (drain ? t != NEVER && ts <= t :
					    ts <= RTE_MIN(until, t))) {
				if (ts > r->now)
					r->now = ts;
				if (sched_apply(r) < 0)
					return -1;
				fresh = true;
				continue;
			}
		}
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
		if ((++r->events % PROGRESS_EVERY) == 0)
			progress(r, false);
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

/* --------------------------------------------------------------- tap */

/*
 * A pass-through stage between tbf and netem that stamps each packet with
 * the time it left tbf (an mbuf dynfield; netem's copies carry it), so the
 * delay splits into queueing (bands + tbf) and netem. Every other call is
 * the child's.
 */
static int tap_off = -1;

static uint16_t
tap_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	return shp_qdisc_enqueue(q->child, pkts, n, ctx);
}

static uint16_t
tap_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	uint16_t k = shp_qdisc_dequeue(q->child, pkts, n, ctx), i;

	for (i = 0; i < k; i++)
		*tap_time(pkts[i], tap_off) = ctx->now;
	return k;
}

static struct rte_mbuf *
tap_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	return q->child->ops->peek(q->child, ctx);
}

static uint64_t
tap_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	return shp_qdisc_next_time(q->child, ctx);
}

static void
tap_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	st->qlen = 0;
	st->backlog = 0;
}

static const struct shp_qdisc_ops tap_ops = {
	.id = "replay_tap",
	.enqueue = tap_enqueue,
	.dequeue = tap_dequeue,
	.peek = tap_peek,
	.next_time = tap_next_time,
	.stats = tap_stats,
};

static int
tap_register(struct replay *r)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = "shp_replay_left_tbf",
		.size = sizeof(uint64_t),
		.align = __alignof__(uint64_t),
	};

	tap_off = rte_mbuf_dynfield_register(&desc);
	r->tap_off = tap_off;
	return tap_off < 0 ? -1 : 0;
}

/* ------------------------------------------------------------ set-up */

static unsigned int
pool_size(const struct shp_options *o, unsigned int queues)
{
	static const uint16_t port0[REPLAY_MAX_QUEUES];
	unsigned int n, need;

	/* sized as the program sizes one port on `-l 0-1`, so that the
	 * default netem limit (half the pool) is the same; each shard of a
	 * sharded port as a port of its own (its chain may hold as much) */
	n = shp_options_pool_size(o, port0, queues, 2, &need);
	if (n < need)
		fprintf(stderr, "%s: warning: --mbufs %u is below what the chain can "
		       "hold (%u mbufs): a full queue leaves the input without "
		       "mbufs (counted as no_mbuf)\n", PROG, n, need);
	return n;
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

/*
 * What the classes' lean stages grow into while the run goes (their
 * kinds' grow_heap: netem's time calendars, shp_classes_grow), for the
 * first classes that hold packets, while the heap keeps its reserve.
 * Room for a few of each kind: a calendar only makes jitter cheaper, and
 * 4096 of them would be gigabytes.
 */
#define OFFLINE_CALENDARS 8u

static uint64_t
calendars_mb(const struct replay *r, uint64_t mb)
{
	const struct shp_class_set *s = r->opt.classes;
	unsigned int i, k;
	uint64_t cal = 0;

	for (k = 0; s != NULL && k < shp_key_nb(); k++) {
		const struct shp_kind *kd = shp_kind_find(shp_key_name(k));
		unsigned int n = 0;

		if (kd == NULL || kd->grow_heap == NULL)
			continue;
		for (i = 0; i < s->nb; i++)   /* one a shard */
			n += (s->def[i].text[k] != NULL) * r->queues;
		cal += (uint64_t)RTE_MIN(n, OFFLINE_CALENDARS) *
		       ((kd->grow_heap(r->nb_mbufs) >> 20) + 1);
	}
	if (cal == 0)
		return 0;
	/* and the reserve shp_classes_grow keeps */
	return cal + (SHP_CLASS_HEAP_RESERVE >> 20) + (mb + cal) / 7;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

static void
run_dir_remove(const char *dir)
{
	if (dir != NULL && dir[0] != '\0')
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The most bands the queue may have: its own, or --bands' (memory for
 * its rings before the chain exists). */
static unsigned int
spec_bands(const struct replay *r)
{
	const struct shp_kind *k = r->spec.kind[SHP_SLOT_QUEUE];
	const void *conf = r->spec.conf[SHP_SLOT_QUEUE];
	const uint8_t *map;

	if (k == NULL || k->bands == NULL || conf == NULL)
		return r->opt.bands;
	return RTE_MAX(r->opt.bands, k->bands(conf, &map));
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

	r->nb_mbufs = pool_size(&r->opt, r->queues);
	obj = sizeof(struct rte_mbuf) + SHP_MBUF_PRIV_SIZE +
	      RTE_MBUF_DEFAULT_BUF_SIZE + 128;
	mb = ((uint64_t)r->nb_mbufs * obj * 5 / 4 +
	      (uint64_t)r->queues * spec_bands(r) *
	      (r->opt.ring_size * 8 + 65536)) >> 20;
	/* every shard runs every class */
	mb += 96 + ((uint64_t)r->queues * shp_classes_mem(r->opt.classes,
							  r->opt.bands,
							  r->opt.ring_size) >>
		    20);
	mb += calendars_mb(r, mb);
	snprintf(mem, sizeof(mem), "%" PRIu64, mb);
	snprintf(r->eal_mb, sizeof(r->eal_mb), "%s", mem);
	snprintf(prefix, sizeof(prefix), "replay-%d", (int)getpid());
	snprintf(lcore, sizeof(lcore), "%d", first_cpu());
	if (rte_eal_init(RTE_DIM(argv) - 1, argv) < 0) {
		int e = rte_errno;

		/* made before the EAL gave up: nothing else uses it */
		run_dir_remove(rte_eal_get_runtime_dir());
		return fail(EXIT_RUNTIME, "cannot start DPDK's EAL (%s MB, no "
			    "hugepages): %s", mem, rte_strerror(e));
	}
	r->eal = true;
	snprintf(r->runtime_dir, sizeof(r->runtime_dir), "%s",
		 rte_eal_get_runtime_dir());
	return 0;
}

/* Shard q's chain: shard 0 takes the profile parsed at the start, the
 * others parse it again (a chain owns its confs). */
static int
shard_build(struct replay *r, unsigned int q, const struct shp_kind_env *kenv)
{
	struct shp_stage_env env;
	char name[16], err[SHP_ERR_LEN];
	struct shp_chain_spec spec;
	int rc;

	env = (struct shp_stage_env){
		.socket = rte_socket_id(), .single_producer = true,
		.ring_size = r->opt.ring_size,
		/* the shard's own block, and the link's every shard's: its
		 * bands' byte limit bounds the link's backlog (issue 56) */
		.ctr_blocks = &r->ctr[q], .nb_ctr_blocks = 1,
		.link_ctr_blocks = r->queues > 1 ? r->ctr : NULL,
		.nb_link_ctr_blocks = r->queues,
		.shard = (uint16_t)q, .nb_shards = (uint16_t)r->queues,
		.link = r->link,
	};
	if (q > 0) {
		/* unique ring names */
		snprintf(name, sizeof(name), "p0q%u", q);
		env.name = name;
		if (shp_options_chain_spec(&r->opt, 0, &spec, err) < 0)
			return fail(EXIT_RUNTIME, "%s", err);
		shp_chain_spec_twin(&spec, &r->chain[0]);
	} else {
		spec = r->spec;
		memset(&r->spec, 0, sizeof(r->spec));
	}
	/* the chain takes the confs, also if it fails */
	rc = shp_chain_build(&r->chain[q], &spec, r->pool, 0, &env, &tap_ops,
			     kenv);
	if (rc < 0)
		return fail(EXIT_RUNTIME, "cannot create the stages: %s",
			    strerror(errno));
	return 0;
}

/*
 * The mbuf pool, packed (shp_pool.h): nothing here hands a buffer to a
 * device, and without hugepages a pool that keeps every object inside
 * one 4 KiB page fits one mbuf of 2.4 KiB a page, so that the memory
 * sized in eal_start held only about 117,000 of them. NULL with
 * rte_errno set on failure.
 */
static struct rte_mempool *
pool_create(unsigned int n)
{
	return shp_pool_create("replay_pool", n, 0, SHP_MBUF_PRIV_SIZE,
			       RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id(),
			       NULL, true);
}

static int
stages_init(struct replay *r)
{
	struct shp_chain *chains[REPLAY_MAX_QUEUES];
	struct shp_kind_env kenv;
	char err[SHP_ERR_LEN];
	unsigned int q;

	r->pool = pool_create(r->nb_mbufs);
	if (r->pool == NULL)
		return fail(EXIT_RUNTIME, "cannot create a pool of %u mbufs: "
			    "%s (try a smaller --mbufs)", r->nb_mbufs,
			    rte_strerror(rte_errno));
	r->ctr = rte_zmalloc("replay_ctr", r->queues * sizeof(*r->ctr),
			     RTE_CACHE_LINE_SIZE);
	r->lat = calloc(r->queues, sizeof(*r->lat));
	if (r->ctr == NULL || r->lat == NULL)
		return fail(EXIT_RUNTIME, "out of memory");
	for (q = 0; q < r->queues; q++) {
		r->ctx[q].ctr = &r->ctr[q].port[0];
		shp_latency_init(&r->lat[q]);
		r->ctr[q].port[0].lat = &r->lat[q];
	}
	shp_rss_init(&r->rss, (uint16_t)r->queues, NULL);
	if (r->queues > 1) {
		/* zeroed: the stages fill the buckets at their first use */
		r->link = rte_zmalloc("replay_link", sizeof(*r->link),
				      RTE_CACHE_LINE_SIZE);
		if (r->link == NULL)
			return fail(EXIT_RUNTIME, "out of memory");
	}
	shp_options_kind_env(&r->opt, &kenv);
	if (tap_register(r) < 0)
		return fail(EXIT_RUNTIME, "cannot register an mbuf field: %s",
			    rte_strerror(rte_errno));
	for (q = 0; q < r->queues; q++)
		if (shard_build(r, q, &kenv) != 0)
			return EXIT_RUNTIME;
	/* the classes were checked with the options: what fails now is
	 * memory, a runtime error (1), as dpdk-shaper says it */
	for (q = 0; q < r->queues; q++)
		chains[q] = &r->chain[q];
	if (shp_classes_attach(chains, r->queues, r->opt.classes, r->pool, 0,
			       &kenv, err) < 0)
		return fail(EXIT_RUNTIME, "%s", err);
	return 0;
}

static void
stages_fini(struct replay *r)
{
	unsigned int q;

	for (q = 0; q < r->queues; q++) {
		shp_classes_detach(&r->chain[q], &r->ctx[q]);
		shp_chain_destroy(&r->chain[q], &r->ctx[q]);
	}
	shp_chain_spec_free(&r->spec);
}

/* ---------------------------------------------------------- the run */

static double
wall_since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* On a terminal, one line rewritten in place while a long run goes on. */
static void
progress(struct replay *r, bool last)
{
	struct timespec now;
	uint64_t span;

	if (last) {
		progress_clear();
		return;
	}
	if (!r->tty || r->progress_s <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (wall_since(r->wall_last.tv_sec ? &r->wall_last : &r->wall0,
		       &now) < r->progress_s)
		return;
	r->wall_last = now;
	span = r->started ? r->now - r->first_ts : 0;
	fprintf(stderr, "\r\033[K" PROG ": %" PRIu64 " packets in, %" PRIu64
		" out, %.3f s of capture, %.1f s elapsed", r->in_pkts,
		r->out_pkts, (double)span / 1e9, wall_since(&r->wall0, &now));
	fflush(stderr);
	progress_shown = true;
}

/* A packet offered while the schedule has the link down: counted as
 * offered to the port and dropped as link_down. */
static bool
link_down(struct replay *r, uint64_t t, uint32_t len)
{
	uint64_t since;

	if (!shp_sched_link_down(&r->sched, 0, t - r->first_ts, &since))
		return false;
	r->ctx[0].ctr->rx_packets++;
	r->ctx[0].ctr->rx_bytes += len;
	r->ctx[0].ctr->egress_in++;
	r->ctx[0].ctr->drops[SHP_DROP_LINK_DOWN]++;
	return true;
}

static int
replay_loop(struct replay *r)
{
	/* the port's MTU, as the live RX lcore checks it */
	unsigned int mtu = shp_options_mtu(&r->opt, 0);
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned int q;
	int rc;

	while (!interrupted && (rc = pcap_next_ex(r->in, &h, &data)) == 1) {
		struct rte_mbuf *m;
		struct shp_ctx *ctx;
		uint64_t t, bytes;
		uint8_t band;

		if (shp_pcap_time_ns(r->in, h, &t) < 0)
			return fail(EXIT_USAGE, "%s: record %" PRIu64 ": time "
				    "%lld s is past what the clock holds "
				    "(2^63 ns, the year 2262)", r->in_path,
				    r->in_pkts + 1, (long long)h->ts.tv_sec);
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
		r->last_ts = t;
		r->in_pkts++;
		replay_trace_arrival(r, t);
		r->in_bytes += h->caplen;
		r->max_len = RTE_MAX(r->max_len, h->caplen);
		if (h->caplen < h->len)
			r->snapped++;
		if ((r->in_pkts % PROGRESS_EVERY) == 0) {
			unsigned int denied;

			progress(r, false);
			if (r->opt.classes != NULL) {
				r->calendars += shp_classes_grow(0, UINT_MAX,
								 &denied);
				r->cal_denied = RTE_MAX(r->cal_denied,
							denied);
			}
		}
		if (r->sched_on && link_down(r, t, h->caplen)) {
			if (rcap_arrival(r, NULL, t, 0, SHP_CAP_NO_BAND) < 0)
				return fail(EXIT_RUNTIME, "out of memory");
			if (r->ctx[0].cap != NULL)
				shp_dropcap_put_raw(r->ctx[0].cap,
						    &r->ctx[0].tag, t,
						    SHP_DROP_LINK_DOWN, data,
						    h->caplen);
			continue;
		}
		m = pkt_build(r->pool, data, h->caplen);
		if (m == NULL) {
			/* no frame to spread: the first shard's (and no
			 * frame for the capture) */
			r->ctx[0].ctr->drops[SHP_DROP_NO_MBUF]++;
			if (rcap_arrival(r, NULL, t, 0, SHP_CAP_NO_BAND) < 0)
				return fail(EXIT_RUNTIME, "out of memory");
			rcap_no_mbuf(r);
			continue;
		}
		q = r->queues > 1 ? shp_rss_queue(&r->rss, m) : 0;
		ctx = &r->ctx[q];
		shp_meta_init(m, t);
		if (mtu != 0 && shp_frame_oversize(m, mtu)) {
			ctx->ctr->rx_packets++;
			ctx->ctr->rx_bytes += h->caplen;
			ctx->ctr->egress_in++;
			ctx->ctr->drops[SHP_DROP_OVERSIZE]++;
			ctx->now = t;
			if (rcap_arrival(r, m, t, q, SHP_CAP_NO_BAND) < 0) {
				rte_pktmbuf_free(m);
				return fail(EXIT_RUNTIME, "out of memory");
			}
			shp_drop_capture(ctx, SHP_DROP_OVERSIZE,
					 SHP_CAP_NO_BAND, &m, 1);
			rte_pktmbuf_free(m);
			continue;
		}
		shp_classify_burst_map(&r->opt.classifier,
				       shp_chain_priomap(&r->chain[q]), &m, 1,
				       t, &band, &bytes);
		if (rcap_arrival(r, m, t, q, band) < 0) {
			rte_pktmbuf_free(m);
			return fail(EXIT_RUNTIME, "out of memory");
		}
		ctx->now = t;
		ctx->ctr->rx_packets++;
		ctx->ctr->rx_bytes += h->caplen;
		ctx->ctr->egress_in++;
		shp_chain_enqueue(&r->chain[q], &m, 1, ctx);
	}
	if (!interrupted && rc == PCAP_ERROR)
		return fail(EXIT_USAGE, "%s: broken after %" PRIu64
			    " packets: %s", r->in_path, r->in_pkts,
			    pcap_geterr(r->in));
	if (!interrupted && advance(r, 0, true) < 0)
		return fail(EXIT_RUNTIME, "out of memory");
	/* What is still held (stuck, or in flight at Ctrl-C) is freed and
	 * counted as flushed: the summary balances either way. */
	for (q = 0; q < r->queues; q++) {
		uint32_t held = shp_qdisc_qlen_total(r->chain[q].root);

		r->stuck += held;
		if (held > 0)
			shp_qdisc_reset_all(r->chain[q].root, &r->ctx[q]);
	}
	return 0;
}

static int
replay_run(struct replay *r)
{
	int code;

	clock_gettime(CLOCK_MONOTONIC, &r->wall0);
	code = replay_loop(r);
	progress(r, true);
	return code;
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
	replay_trace_free(r);
	stages_fini(r);
	rcap_release(r);
	if (r->pool != NULL)
		rte_mempool_free(r->pool);
	rte_free(r->ctr);
	free(r->lat);
	rte_free(r->link);
	if (r->in != NULL)
		pcap_close(r->in);
	free(r->inbuf);
	free(r->delay.v);
	free(r->queueing.v);
	free(r->netem_delay.v);
	free(r->linbuf);
	free(r->tmp_path);
	shp_options_free(&r->opt);
	shp_sched_free(&r->sched);
	free(r->sched_last);
	free(r->sched_sets);
	r->sched_last = NULL;
	r->sched_sets = NULL;
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
	r->queues = 1;
	r->progress_s = 1;
	r->info = stdout;
	code = parse_args(r, argc, argv);
	if (code == 0)
		code = parse_profiles(r);
	if (code == 0)
		code = open_input(r);
	if (code != 0)
		goto out;
	r->tty = isatty(STDERR_FILENO);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	code = open_output(r);
	if (code == 0)
		code = rcap_open(r);
	if (code == 0)
		code = eal_start(r);
	if (code == 0)
		code = stages_init(r);
	if (code == 0 && replay_trace_init(r) < 0)
		code = fail(EXIT_RUNTIME, "out of memory");
	if (code == 0)
		code = rcap_start(r);
	if (code != 0)
		goto out;
	code = replay_run(r);
	if (code != 0) {
		close_output(r, false);
		goto out;
	}
	ok = summary(r, r->info);
	fflush(r->info);
	if (write_stats(r) != 0)
		code = EXIT_RUNTIME;
	if (interrupted) {
		/* a partial OUT would pass for a whole one: none */
		code = fail(130, "interrupted");
		close_output(r, false);
		goto pool;
	}
	if (code != 0) {
		close_output(r, false);
		goto out;
	}
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
	if (code == 0)
		code = rcap_finish(r, true);
	if (!ok)
		code = fail(EXIT_RUNTIME, "internal error: the counters do "
			    "not add up (see the conservation line)");
pool:
	stages_fini(r);
	rc = (int)rte_mempool_avail_count(r->pool);
	if (rc != (int)r->nb_mbufs && (code == 0 || code == 130))
		code = fail(EXIT_LEAK, "error: mbuf leak: %u of %u mbufs not "
			    "returned to the pool", r->nb_mbufs - rc,
			    r->nb_mbufs);
out:
	if (code != 0) {
		close_output(r, false);
		rcap_finish(r, false);
	}
	release(r);
	return code;
}
