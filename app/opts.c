/* SPDX-License-Identifier: BSD-3-Clause */
/* Command line: parsed before the EAL starts, so a bad value changes
 * nothing and costs nothing. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "ctl_socket.h"
#include "shaper.h"

enum {
	OPT_BANDS = 256, OPT_PRIOMAP, OPT_CLASSIFY, OPT_PAIRS,
	OPT_CONFIG, OPT_STATS_PERIOD,
	OPT_STATS_FILE, OPT_REPLAY, OPT_RX_LCORES, OPT_TX_LCORES, OPT_MBUFS,
	OPT_RING_SIZE, OPT_BURST, OPT_SEED, OPT_HELP, OPT_CMDLINE_FILE,
	OPT_PACE,
	OPT_MAX_LATE,
	OPT_LATE_DROP,
	OPT_SCHEDULE,
	OPT_NO_CTL,
	OPT_CTL_GROUP,
	OPT_CTL_IDLE,
	OPT_RXD,
	OPT_TXD,
	OPT_LINK_WAIT,
	OPT_MTU,
	OPT_MBUF_SIZE,
	OPT_QUEUES,
	OPT_PRESET,
	OPT_PRESET_PORT,
	OPT_PRESET_DIR,
	OPT_STRICT_BUDGET,
	OPT_CAPTURE_DROPS,
	OPT_CAPTURE_SNAPLEN,
	OPT_CAPTURE_LIMIT,
	OPT_PACKET_LOG,
	OPT_PACKET_LOG_SAMPLE,
	/* --KEY and --KEY-port of every stage kind (shp_kind_longopts) */
	OPT_KIND = 512,
	/* --class* NAME VALUE (shp_class_longopts) */
	OPT_CLASS = 768,
};

static struct option longopts[48 + 2 * SHP_MAX_KEYS + 4 + SHP_MAX_KEYS] = {
	{"bands", required_argument, NULL, OPT_BANDS},
	{"priomap", required_argument, NULL, OPT_PRIOMAP},
	{"classify", required_argument, NULL, OPT_CLASSIFY},
	{"pairs", required_argument, NULL, OPT_PAIRS},
	{"config", required_argument, NULL, OPT_CONFIG},
	/* read with --config, before the others (shp_config_preload) */
	{"preset", required_argument, NULL, OPT_PRESET},
	{"preset-port", required_argument, NULL, OPT_PRESET_PORT},
	{"preset-dir", required_argument, NULL, OPT_PRESET_DIR},
	{"stats-period", required_argument, NULL, OPT_STATS_PERIOD},
	{"stats-file", required_argument, NULL, OPT_STATS_FILE},
	{"replay", no_argument, NULL, OPT_REPLAY},
	{"pace", no_argument, NULL, OPT_PACE},
	{"rx-lcores", required_argument, NULL, OPT_RX_LCORES},
	{"tx-lcores", required_argument, NULL, OPT_TX_LCORES},
	{"mbufs", required_argument, NULL, OPT_MBUFS},
	{"ring-size", required_argument, NULL, OPT_RING_SIZE},
	{"burst", required_argument, NULL, OPT_BURST},
	{"queues", required_argument, NULL, OPT_QUEUES},
	{"capture-drops", required_argument, NULL, OPT_CAPTURE_DROPS},
	{"capture-snaplen", required_argument, NULL, OPT_CAPTURE_SNAPLEN},
	{"capture-limit", required_argument, NULL, OPT_CAPTURE_LIMIT},
	{"packet-log", required_argument, NULL, OPT_PACKET_LOG},
	{"packet-log-sample", required_argument, NULL, OPT_PACKET_LOG_SAMPLE},
	{"rxd", required_argument, NULL, OPT_RXD},
	{"txd", required_argument, NULL, OPT_TXD},
	{"link-wait", required_argument, NULL, OPT_LINK_WAIT},
	{"mtu", required_argument, NULL, OPT_MTU},
	{"mbuf-size", required_argument, NULL, OPT_MBUF_SIZE},
	{"max-late", required_argument, NULL, OPT_MAX_LATE},
	{"late-drop", required_argument, NULL, OPT_LATE_DROP},
	{"seed", required_argument, NULL, OPT_SEED},
	{"interactive", no_argument, NULL, 'i'},
	{"cmdline-file", required_argument, NULL, OPT_CMDLINE_FILE},
	{"schedule", required_argument, NULL, OPT_SCHEDULE},
	{"no-ctl", no_argument, NULL, OPT_NO_CTL},
	{"strict-budget", no_argument, NULL, OPT_STRICT_BUDGET},
	{"ctl-group", required_argument, NULL, OPT_CTL_GROUP},
	{"ctl-idle", required_argument, NULL, OPT_CTL_IDLE},
	{"help", no_argument, NULL, OPT_HELP},
	{NULL, 0, NULL, 0}
};

void
shaper_usage(FILE *f, const char *prog)
{
	fprintf(f,
"Usage: %s [EAL options] -- [options]\n"
"\n"
"Forwards traffic between port pairs through N priority bands\n"
"(pfifo_fast), a token bucket (tbf) and netem, per egress port.\n"
"\n"
"Classification and bands:\n"
"  --bands N              priority bands per egress port, 1..16 (default 3)\n"
"  --priomap P0,...,P15   band of each priority 0..15, each < N (default for\n"
"                         3 bands 1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1; for other\n"
"                         N the same map with every value capped at N-1)\n"
"                         both for every port whose queue gives none of its\n"
"                         own: --queue-port P 'pfifo_fast bands N priomap\n"
"                         P0,...,P15' wins\n"
"  --classify MODE        tos|dscp|pcp|none (default tos: IPv4 TOS / IPv6\n"
"                         traffic class through the kernel's ip_tos2prio;\n"
"                         VLAN frames by the inner IP header unless pcp)\n"
"  --ring-size N          packets per band ring (default %u)\n"
"  --queues N             RX and TX queues of every port, 1..%u (default:\n"
"                         one a worker where the ports and the profile\n"
"                         allow, without --rx/--tx-lcores; else 1); each\n"
"                         egress port runs N shards, one per TX queue,\n"
"                         sharing one tbf rate; worker i of W polls RX\n"
"                         queue q and sends on TX queue q for q = i,\n"
"                         i+W, ... (needs W <= N, no --rx/--tx-lcores)\n"
"\n"
"Shaping (tc syntax; every stage kind below):\n"
"  --queue 'KIND ARGS'    the bottleneck queue of every egress port:\n"
"                         pfifo_fast (the default: the bands above) or\n"
"                         e.g. 'fq_codel target 5ms'\n"
"  --queue-port P '...'   the queue of egress port P only\n"
"  --tbf 'ARGS'           token bucket on every egress port, e.g.\n"
"                         'rate 10mbit burst 10kb limit 1mb' (default off)\n"
"  --tbf-port P 'ARGS'    token bucket on egress port P only\n"
"  --netem 'ARGS'         netem on every egress port, e.g. 'delay 10ms'\n"
"  --netem-port P 'ARGS'  netem on egress port P only\n"
"  --seed N               seed for netem profiles without their own `seed`\n"
"                         (default: a fixed seed, so runs repeat exactly)\n"
"  --config FILE          INI profile: [global] bands, priomap, classify,\n"
"                         seed, ring_size, burst, queues, mbufs, rxd, txd;\n"
"                         [port N] queue,\n"
"                         tbf, netem (any stage kind's key).\n"
"                         Command-line options override the file.\n"
"  --preset NAME          a link preset (docs/presets.md) on every egress\n"
"                         port: its stages replace --config's; the other\n"
"                         options win over it\n"
"  --preset-port P NAME   a link preset on egress port P only\n"
"  --preset-dir DIR       where presets are (default: $SHP_PRESET_DIR, else\n"
"                         config/presets of the source tree)\n"
"\n"
"Ports and lcores:\n"
"  --pairs A:B[,C:D...]   port pairs forwarded both ways (default 0:1,2:3,..;\n"
"                         an odd last port sends back out of itself)\n"
"  --rx-lcores LIST       lcores polling RX (default: see below)\n"
"  --tx-lcores LIST       lcores owning egress ports (default: see below)\n"
"                         The main lcore is the control plane. One worker:\n"
"                         RX and TX in one loop (run to completion); two or\n"
"                         more: the first half RX, the rest TX (pipeline).\n"
"  --burst N              packets per burst, 1..%d (default %u)\n"
"  --rxd N, --txd N       descriptors per RX / TX queue of every port\n"
"                         (default %u / %u), within the port's limits;\n"
"                         the PMD may round them (the start says what it\n"
"                         took); the default --mbufs counts them\n"
"  --strict-budget        refuse a profile whose delay exceeds its port's\n"
"                         lossless budget (at start: exit 2; at run time:\n"
"                         an error, nothing changed) instead of warning\n"
"  --link-wait TIME       at start, wait up to TIME (tc time syntax) for\n"
"                         every port's link, then print its speed, duplex\n"
"                         and MTU (default 5s; 0: do not wait)\n"
"  --mtu BYTES            every port's MTU (%u..%u; INI [global] mtu, per\n"
"                         port [port N] mtu), within the port's limits;\n"
"                         the mbufs' data room fits the largest frame\n"
"                         unless --mbuf-size; a frame above the MTU is\n"
"                         dropped as `oversize` (default: the PMD's, and\n"
"                         no check)\n"
"  --mbuf-size BYTES      data room of an mbuf, headroom included\n"
"                         (testpmd's name); a frame larger takes several\n"
"                         (scatter RX where the port offers it)\n"
"  --max-late TIME        when an egress port's oldest due packet is later\n"
"                         than TIME (tc time syntax), the emulator is behind:\n"
"                         new arrivals for that port are dropped and counted\n"
"                         as `overload` until it has caught up, and a\n"
"                         backlog of due packets is shed, what is later than\n"
"                         TIME counted as `late` (default 50us; with\n"
"                         --replay but not --pace: 0; 0 never drops, letting\n"
"                         delay grow instead; arrivals are also paced at\n"
"                         what the lcore carries, see docs/usage.md)\n"
"  --late-drop TIME       a packet that would leave more than TIME after\n"
"                         its send time is dropped and counted as `late`\n"
"                         instead, even alone (a short hiccup of the host at\n"
"                         a low load): what is sent is never later than TIME\n"
"                         (default 0: only a backlog is shed, at --max-late)\n"
"  --mbufs N              mbuf pool size (default: per port what its\n"
"                         stages hold (bands*ring-size, fq_codel's limit,\n"
"                         netem's limit) + rxd + txd descriptors + 8*burst,\n"
"                         plus 16384 per port for the netem delay queue,\n"
"                         plus per lcore 2*burst + 1.5 x the mempool\n"
"                         cache of 512)\n"
"\n"
"Running:\n"
"  --replay               exit once every rx_pcap input is exhausted and\n"
"                         every queue has drained (the input is read as\n"
"                         fast as it is polled, unless --pace)\n"
"  --pace                 replay rx_pcap= captures at their own timing\n"
"                         (like tcpreplay): each packet enters when its\n"
"                         offset in the capture has elapsed\n"
"  --stats-period S       print a table of per-port pps, bit/s, band\n"
"                         depths and drops every S seconds (default 0: off)\n"
"  --stats-file PATH      write every counter as JSON on exit\n"
"  -i, --interactive      command prompt (shaper> )\n"
"  --cmdline-file FILE    run a command file at start (docs/cli.md)\n"
"  --schedule FILE        'TIME COMMAND' lines: set/clear a stage, link\n"
"                         down|up P, at offsets from the start; 'repeat\n"
"                         PERIOD' loops it (docs/time-varying.md)\n"
"  --ctl-group NAME       the control socket (PREFIX's EAL run directory,\n"
"                         shaper_ctl.sock) is 0660 for group NAME, and its\n"
"                         directories 0710 (default: 0600, its owner only;\n"
"                         docs/control.md)\n"
"  --ctl-idle TIME        a control client silent this long is closed,\n"
"                         its unread replies dropped (default 60s, 5s..1h)\n"
"  --no-ctl               no control socket\n"
"  --capture-drops FILE   write every dropped frame to FILE (pcapng): its\n"
"                         first bytes, its drop's time and a comment\n"
"                         'cause=CAUSE port=P shard=S' (docs/monitoring.md)\n"
"  --capture-snaplen N    bytes kept of each, 1..65535 (default 128)\n"
"  --capture-limit BYTES  the file's bound (default 256mb): what is past\n"
"                         it is counted as capture_lost\n"
"  --packet-log FILE      a CSV line for one packet in N (sent or dropped):\n"
"                         arrival, port, shard, band, fate, departure\n"
"  --packet-log-sample N  that N, 1..1000000000 (default 1000)\n"
"  --help                 this text\n"
"\n"
"Exit status: 0 ok, 1 runtime error, 2 bad option, 3 mbuf leak at exit.\n",
		prog, SHP_DEFAULT_RING_SIZE, SHP_MAX_QUEUES, SHP_MAX_BURST,
		SHP_DEFAULT_BURST, SHP_NB_RXD, SHP_NB_TXD, SHP_MTU_MIN, SHP_MTU_MAX);
	shp_kinds_usage(f);
	shp_class_usage(f);
}

/* The stage kinds' options after the fixed ones, once. */
static void
longopts_init(void)
{
	static bool done;
	int i;

	if (done)
		return;
	for (i = 0; longopts[i].name != NULL; i++)
		;
	i += (int)shp_kind_longopts(longopts + i, OPT_KIND);
	shp_class_longopts(longopts + i, OPT_CLASS);
	done = true;
}

bool
shaper_is_app_option(const char *arg)
{
	size_t n;
	int i;

	longopts_init();
	if (strcmp(arg, "-i") == 0)
		return true;
	if (strncmp(arg, "--", 2) != 0)
		return false;
	arg += 2;
	n = strcspn(arg, "=");
	for (i = 0; longopts[i].name != NULL; i++)
		if (longopts[i].val != OPT_HELP &&
		    strlen(longopts[i].name) == n &&
		    strncmp(arg, longopts[i].name, n) == 0)
			return true;
	return false;
}

/* The stats file is written at exit: a directory that is missing or
 * not writable must not cost a whole run. Checked before the EAL. */
static int
check_stats_file(const char *path, char *err)
{
	char dir[4096];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, SHP_ERR_LEN, "--stats-file %s: is a directory",
			 path);
		return -1;
	}
	if (access(dirname(dir), W_OK) != 0 ||
	    (access(path, F_OK) == 0 && access(path, W_OK) != 0)) {
		snprintf(err, SHP_ERR_LEN, "--stats-file %s: cannot write it: "
			 "%s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int
bad(const char *msg)
{
	fprintf(stderr, "dpdk-shaper: %s\n", msg);
	return -1;
}

/* --tbf-port P 'ARGS': the profile is the next word. */
static int
port_profile(struct shp_options *o, const char *name, int argc, char **argv,
	     char *err)
{
	char *end;
	long port = strtol(optarg, &end, 10);

	if (end == optarg || *end != '\0' || port < 0 ||
	    port >= SHP_MAX_PORTS) {
		snprintf(err, SHP_ERR_LEN, "--%s '%s': expected a port number "
			 "0..%d", name, optarg, SHP_MAX_PORTS - 1);
		return -1;
	}
	if (optind >= argc) {
		snprintf(err, SHP_ERR_LEN, "--%s %ld: missing the profile "
			 "(e.g. --%s %ld '...')", name, port, name, port);
		return -1;
	}
	return shp_option_set(o, name, (int)port, argv[optind++], true, err);
}

/* --class* NAME VALUE: the value is the next word. */
static int
class_option(struct shp_options *o, const char *name, int argc, char **argv,
	     char *err)
{
	if (optind >= argc) {
		snprintf(err, SHP_ERR_LEN, "--%s %s: missing the value (e.g. "
			 "--%s %s '...')", name, optarg, name, optarg);
		return -1;
	}
	return shp_option_class(o, name, optarg, argv[optind++], err);
}

int
shaper_parse_args(struct shaper *s, int argc, char **argv)
{
	struct shp_options *o = &s->opt;
	char err[SHP_ERR_LEN];
	int c, i;

	longopts_init();
	/* First the profile file, so that the command line wins. */
	if (shp_config_preload(o, argc, argv, err) < 0)
		return bad(err);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i", longopts, NULL)) != -1) {
		const char *name = NULL;
		int rc = 0;

		switch (c) {
		case OPT_HELP:
			shaper_usage(stdout, "dpdk-shaper");
			exit(0);
		case 'i':
			o->interactive = true;
			continue;
		case OPT_REPLAY:
			o->replay = true;
			continue;
		case OPT_PACE:
			o->pace = true;
			continue;
		case OPT_CONFIG:
		case OPT_PRESET:
		case OPT_PRESET_DIR:
			continue;
		case OPT_PRESET_PORT:   /* P NAME: the name is the next word */
			if (optind >= argc) {
				snprintf(err, sizeof(err), "--preset-port %s: "
					 "missing the preset's name (e.g. "
					 "--preset-port %s 5g_urban)", optarg,
					 optarg);
				return bad(err);
			}
			optind++;
			continue;
		case OPT_NO_CTL:
			ctl_socket_opt.off = true;
			continue;
		case OPT_STRICT_BUDGET:
			o->strict_budget = true;
			continue;
		case OPT_CAPTURE_DROPS:
			if (check_stats_file(optarg, err) < 0) {
				/* its words, this option's name */
				char why[SHP_ERR_LEN];
				const char *w = strstr(err, ": ");

				snprintf(why, sizeof(why), "%s",
					 w != NULL ? w : "");
				snprintf(err, sizeof(err), "--capture-drops %s%s",
					 optarg, why);
				return bad(err);
			}
			shaper_capture_opt.path = optarg;
			continue;
		case OPT_CAPTURE_SNAPLEN:
			if (shp_capture_parse_snaplen(optarg,
					&shaper_capture_opt.snaplen, err) < 0)
				return bad(err);
			continue;
		case OPT_PACKET_LOG:
			if (check_stats_file(optarg, err) < 0) {
				char why[SHP_ERR_LEN];
				const char *w = strstr(err, ": ");

				snprintf(why, sizeof(why), "%s",
					 w != NULL ? w : "");
				snprintf(err, sizeof(err), "--packet-log %s%s",
					 optarg, why);
				return bad(err);
			}
			shaper_capture_opt.log_path = optarg;
			continue;
		case OPT_PACKET_LOG_SAMPLE: {
			uint64_t v;

			if (shp_parse_u64(optarg, &v, err) < 0 || v == 0 ||
			    v > 1000000000) {
				snprintf(err, sizeof(err), "--packet-log-sample "
					 "'%s': expected one packet in N, "
					 "1..1000000000", optarg);
				return bad(err);
			}
			shaper_capture_opt.log_every = (uint32_t)v;
			continue;
		}
		case OPT_CAPTURE_LIMIT:
			if (shp_capture_parse_limit(optarg,
					&shaper_capture_opt.limit, err) < 0)
				return bad(err);
			continue;
		case OPT_CTL_GROUP:
			if (ctl_socket_opt_group(optarg, err, sizeof(err)) < 0)
				return bad(err);
			continue;
		case OPT_CTL_IDLE:
			if (ctl_socket_opt_idle(optarg, err, sizeof(err)) < 0)
				return bad(err);
			continue;
		case ':':
			snprintf(err, sizeof(err), "option '%s' needs a value",
				 argv[optind - 1]);
			return bad(err);
		case '?':
			snprintf(err, sizeof(err), "unknown option '%s' "
				 "(see --help)", argv[optind - 1]);
			return bad(err);
		default:
			for (i = 0; longopts[i].name != NULL; i++)
				if (longopts[i].val == c)
					name = longopts[i].name;
			if (c >= OPT_CLASS)
				rc = class_option(o, name, argc, argv, err);
			else if (c >= OPT_KIND && (c - OPT_KIND) % 2 == 1)
				rc = port_profile(o, name, argc, argv, err);
			else
				rc = shp_option_set(o, name, -1, optarg, true,
						    err);
		}
		if (rc < 0)
			return bad(err);
	}
	if (optind < argc) {
		snprintf(err, sizeof(err), "unexpected argument '%s'",
			 argv[optind]);
		return bad(err);
	}
	if (shp_options_finalize(o, err) < 0)
		return bad(err);
	if (o->stats_file != NULL && check_stats_file(o->stats_file, err) < 0)
		return bad(err);
	/* what needs the ports (their ids, chains) is checked once they
	 * exist; a file that cannot be read is said before the EAL starts */
	if (o->schedule_file != NULL && access(o->schedule_file, R_OK) < 0) {
		snprintf(err, sizeof(err), "--schedule %s: %s",
			 o->schedule_file, strerror(errno));
		return bad(err);
	}
	/* A capture read as fast as possible is no real load: its packets
	 * wait in the bands rather than being dropped as overload, unless
	 * asked for (or paced: then it is a real load). */
	if (o->replay && !o->pace && !o->max_late_set)
		o->max_late_ns = 0;
	return 0;
}
