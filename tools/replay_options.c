/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-replay's command line: the options, --help, and the
 * port-0 profiles they name (replay.c runs them).
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

int
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
int
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
