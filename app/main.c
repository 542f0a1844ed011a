/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper: options, EAL, ports, lcores; the main lcore is the control
 * plane (signals, periodic stats, replay end, shutdown).
 */
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_pdump.h>
#include <rte_rcu_qsbr.h>

#include "capture.h"
#include "cli.h"
#include "control.h"
#include "ctl_socket.h"
#include "events.h"
#include "pcap_io.h"
#include "shaper.h"
#include "shaper_sched.h"
#include "shaper_wire.h"
#include "shp_meta.h"
#include "shp_pool.h"
#include "telemetry.h"

struct shaper shaper;

static void
on_signal(int sig)
{
	(void)sig;
	shaper.quit = true;
}

/*
 * First thing in main: a SIGINT or SIGTERM during the EAL's start-up
 * (0.3-3 s) only sets quit, and the run ends as soon as set-up is
 * complete, with its stats file. A SIGINT ignored or blocked by whoever
 * started us (`cmd &` in a script) would make Ctrl-C or `kill -INT` do
 * nothing: the handler replaces SIG_IGN, and both are unblocked.
 * SA_RESTART: the EAL's own system calls are not cut short.
 */
static void
signals_init(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* Refuse captures net_pcap would replay wrongly, before anything starts. */
static int
check_vdev_pcaps(int argc, char **argv)
{
	char err[SHP_ERR_LEN];
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *v = NULL, *p;

		if (strcmp(argv[i], "--vdev") == 0 && i + 1 < argc)
			v = argv[++i];
		else if (strncmp(argv[i], "--vdev=", 7) == 0)
			v = argv[i] + 7;
		if (v == NULL)
			continue;
		for (p = strstr(v, "rx_pcap="); p != NULL;
		     p = strstr(p + 1, "rx_pcap=")) {
			char path[4096];
			size_t len = strcspn(p + 8, ",");
			uint64_t n;

			if (len >= sizeof(path))
				len = sizeof(path) - 1;
			memcpy(path, p + 8, len);
			path[len] = '\0';
			if (shp_pcap_check(path, &n, err) < 0) {
				fprintf(stderr, "dpdk-shaper: rx_pcap %s\n",
					err);
				return -1;
			}
		}
	}
	return 0;
}

/* A profile for a port that does not exist would shape nothing: refuse
 * it, naming where it came from and the ports there are. */
static int
check_profile_ports(struct shaper *s)
{
	const struct shp_options *o = &s->opt;
	char list[SHP_ERR_LEN], from[SHP_ERR_LEN];
	unsigned int p, k;

	for (p = 0; p < SHP_MAX_PORTS; p++) {
		int cli = -1, file = -1;

		if (rte_eth_dev_is_valid_port(p))
			continue;
		for (k = shp_key_nb(); k-- > 0;) {
			if (o->cli.port[k][p] != NULL)
				cli = (int)k;
			if (o->file.port[k][p] != NULL)
				file = (int)k;
		}
		if (cli >= 0)
			snprintf(from, sizeof(from), "--%s-port %u",
				 shp_key_name(cli), p);
		else if (file >= 0)
			snprintf(from, sizeof(from), "%s: [port %u]",
				 o->config_file, p);
		else
			continue;
		fprintf(stderr, "dpdk-shaper: %s: there is no port %u (%s)\n",
			from, p, shaper_ports_text(s, list, sizeof(list)));
		return -1;
	}
	return 0;
}

/* The same for a class's ports (--class-ports, ports = in [class]). */
static int
check_class_ports(struct shaper *s)
{
	char list[SHP_ERR_LEN], err[SHP_ERR_LEN];

	if (shp_class_set_check_ports(s->opt.classes,
				      shaper_ports_mask(s), err) == 0)
		return 0;
	fprintf(stderr, "dpdk-shaper: %s (%s)\n", err,
		shaper_ports_text(s, list, sizeof(list)));
	return -1;
}

/* Asked before creating: a pool created with a missing driver logs an
 * MBUF error line before we could fall back. */
static bool
pool_ops_registered(const char *name)
{
	unsigned int i;

	for (i = 0; i < rte_mempool_ops_table.num_ops; i++)
		if (strcmp(rte_mempool_ops_table.ops[i].name, name) == 0)
			return true;
	return false;
}

/*
 * The mbuf pool. Its store is a stack (LIFO) unless the user named one
 * (--mbuf-pool-ops-name): an lcore's cache overflows into it when a TX
 * round frees more than RX takes, and refills from it later; a ring
 * (FIFO) then hands out the mbuf that waited longest, cold, where a
 * stack hands back the ones just freed, still in cache. With packets
 * held 10 ms that is each RX write a miss or not: the full pipeline
 * gained 8% (cache 256) and 15% (cache 512) in A/B runs
 * (docs/benchmarks.md). The per-lcore cache is the largest DPDK allows,
 * but never more than a quarter of the pool over all lcores. Without
 * hugepages its mbufs are packed across pages (shp_pool.h).
 */
static struct rte_mempool *
pool_create(const char *name, unsigned int n, uint16_t room, int socket)
{
	unsigned int cache = RTE_MIN((unsigned int)SHP_POOL_CACHE,
				     n / (4 * rte_lcore_count()));
	bool packed = shp_pool_pack_default();
	struct rte_mempool *mp = NULL;

	if (rte_eal_mbuf_user_pool_ops() == NULL &&
	    pool_ops_registered("stack"))
		mp = shp_pool_create(name, n, cache, SHP_MBUF_PRIV_SIZE, room,
				     socket, "stack", packed);
	if (mp == NULL)   /* a user's choice, or no stack driver */
		mp = shp_pool_create(name, n, cache, SHP_MBUF_PRIV_SIZE, room,
				     socket, NULL, packed);
	return mp;
}

/*
 * The rate the shaper's clock runs at (0: the TSC's, measured; see
 * shp_clock.h). A net_pcap port stamps the frames it writes with DPDK's
 * figure (rte_get_timer_hz()), 0.15% off on this machine's AMD VM: with
 * one, the clock runs on that figure too, so that the output capture's
 * times say what the profile said (a delay measured between the input
 * and output captures would otherwise drift by 1.5 ms a second).
 */
static uint64_t
clock_hz(const struct shaper *s)
{
	unsigned int i;

	for (i = 0; i < s->nb_ports; i++) {
		struct rte_eth_dev_info info;

		if (rte_eth_dev_info_get(s->port_ids[i], &info) == 0 &&
		    info.driver_name != NULL &&
		    strcmp(info.driver_name, "net_pcap") == 0)
			return rte_get_timer_hz();
	}
	return 0;
}

static int
setup(struct shaper *s)
{
	char list[SHP_ERR_LEN];
	uint16_t port;
	unsigned int i;
	size_t sz;

	RTE_ETH_FOREACH_DEV(port) {
		if (s->nb_ports == SHP_MAX_PORTS) {
			fprintf(stderr, "dpdk-shaper: more than %d ports\n",
				SHP_MAX_PORTS);
			return -1;
		}
		s->port_ids[s->nb_ports++] = port;
	}
	if (s->nb_ports == 0) {
		fprintf(stderr, "dpdk-shaper: no ports (give a NIC or a "
			"--vdev, e.g. --vdev net_pcap0,rx_pcap=in.pcap,"
			"tx_pcap=out.pcap)\n");
		return -1;
	}
	if (!s->opt.pairs_set) {
		for (i = 0; i < s->nb_ports; i += 2) {
			uint16_t a = s->port_ids[i];
			uint16_t b = i + 1 < s->nb_ports ?
				     s->port_ids[i + 1] : a;

			s->opt.pair_of[a] = b;
			s->opt.pair_of[b] = a;
		}
	}
	if (check_profile_ports(s) < 0 || check_class_ports(s) < 0)
		return -2;
	for (i = 0; i < SHP_MAX_PORTS; i++)
		if (s->opt.pair_of[i] >= 0 && !rte_eth_dev_is_valid_port(i)) {
			fprintf(stderr, "dpdk-shaper: --pairs: there is no "
				"port %u (%s)\n", i,
				shaper_ports_text(s, list, sizeof(list)));
			return -2;
		}
	for (i = 0; i < s->nb_ports; i++) {
		port = s->port_ids[i];
		if (s->opt.pair_of[port] < 0) {
			fprintf(stderr, "dpdk-shaper: --pairs: port %u is in "
				"no pair (%s)\n", port,
				shaper_ports_text(s, list, sizeof(list)));
			return -2;
		}
	}
	s->ctr = rte_zmalloc("counters", sizeof(*s->ctr) * SHAPER_CTR_BLOCKS,
			     RTE_CACHE_LINE_SIZE);
	if (s->ctr == NULL)
		return -1;
	if (shaper_lcores_assign(s) < 0)
		return -2;
	if (shaper_shards_stats_register(s) < 0)
		return -1;
	if (shaper_latency_init(s) < 0)
		return -1;
	s->nb_mbufs = shaper_pool_size(s);
	s->data_room = shaper_data_room(s);
	/* one pool a socket with ports: each port's mbufs are its own
	 * socket's (the first keeps the name it always had) */
	for (i = 0; i < s->plan.nb; i++) {
		char name[RTE_MEMPOOL_NAMESIZE];

		snprintf(name, sizeof(name), i == 0 ? "shaper_pool" :
			 "shaper_pool_s%d", s->plan.socket[i]);
		s->pools[i] = pool_create(name, s->plan.mbufs[i], s->data_room,
					  s->plan.socket[i]);
		if (s->pools[i] == NULL) {
			fprintf(stderr, "dpdk-shaper: cannot create a pool of "
				"%u mbufs of %u bytes on socket %d: %s (try "
				"--mbufs, --mbuf-size or more memory: -m, "
				"--socket-mem)\n", s->plan.mbufs[i],
				s->data_room, s->plan.socket[i],
				rte_strerror(rte_errno));
			return -1;
		}
		if (s->plan.nb > 1)
			printf("dpdk-shaper: socket %d: a pool of %u mbufs for "
			       "%u port%s\n", s->plan.socket[i],
			       s->plan.mbufs[i], s->plan.nb_ports[i],
			       s->plan.nb_ports[i] == 1 ? "" : "s");
	}
	s->pool = s->pools[0];
	for (i = 0; i < s->nb_ports; i++)
		s->pool_of[s->port_ids[i]] = s->pools[s->plan.port_pool[i]];
	for (i = 0; i < RTE_MAX_LCORE; i++) {
		struct worker *w = &s->workers[i];
		uint16_t k;

		for (k = 0; k < w->nb_rxq; k++)
			w->rxq[k].pool = s->pool_of[w->rxq[k].port];
	}
	sz = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);
	shaper_rcu = rte_zmalloc("rcu", sz, RTE_CACHE_LINE_SIZE);
	if (shaper_rcu == NULL || rte_rcu_qsbr_init(shaper_rcu,
						    RTE_MAX_LCORE) != 0)
		return -1;
	s->classifier = &s->opt.classifier;
	s->priomap_set = s->opt.priomap_text != NULL;
	shp_clock_init_hz(&s->clock, clock_hz(s));
	if (shaper_stages_init(s) < 0)
		return -1;
	return shaper_ports_init(s);
}

static int
check_pool(struct shaper *s)
{
	unsigned int avail = 0, i;

	for (i = 0; i < s->plan.nb; i++)
		if (s->pools[i] != NULL)
			avail += rte_mempool_avail_count(s->pools[i]);

	if (avail != s->nb_mbufs) {
		fprintf(stderr, "dpdk-shaper: error: mbuf leak: %u of %u mbufs "
			"not returned to the pool\n", s->nb_mbufs - avail,
			s->nb_mbufs);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct shaper *s = &shaper;
	char run_dir[PATH_MAX] = "";
	int eal_argc, ret, rc;
	bool pdump_ok = false;
	enum shp_event_src src;

	signals_init();
	for (eal_argc = 0; eal_argc < argc; eal_argc++)
		if (strcmp(argv[eal_argc], "--") == 0)
			break;
	shp_options_init(&s->opt);
	/* App options first: a bad one must start nothing. */
	{
		int app_argc = argc - eal_argc;
		char **app_argv = argv + eal_argc;
		char *prog = argv[0];

		if (app_argc > 0)
			app_argv[0] = prog;
		else {
			app_argv = &prog;
			app_argc = 1;
		}
		for (int i = 1; i < eal_argc; i++)
			if (strcmp(argv[i], "--help") == 0 ||
			    strcmp(argv[i], "-h") == 0) {
				shaper_usage(stdout, "dpdk-shaper");
				return 0;
			}
		if (shaper_check_misplaced(eal_argc, argv) < 0)
			return 2;
		if (shaper_parse_args(s, app_argc, app_argv) < 0)
			return 2;
		if (app_argc > 1 || eal_argc < argc)
			argv[eal_argc] = "--";
	}
	if (s->opt.cmdline_file != NULL &&
	    cli_check_file(s->opt.cmdline_file) < 0)
		return 2;
	if (check_vdev_pcaps(eal_argc, argv) < 0 ||
	    shaper_check_tx_pcaps(eal_argc, argv) < 0)
		return 2;
	if (shaper_check_prefix_free(eal_argc, argv) < 0)
		return 1;
	ret = rte_eal_init(eal_argc, argv);
	if (ret < 0) {
		if (rte_errno != 0)
			fprintf(stderr, "dpdk-shaper: cannot initialise the "
				"EAL: %s\n", rte_strerror(rte_errno));
		else
			fprintf(stderr, "dpdk-shaper: cannot initialise the "
				"EAL (its messages above say why)\n");
		return 1;
	}
	snprintf(run_dir, sizeof(run_dir), "%s", rte_eal_get_runtime_dir());
	setvbuf(stdout, NULL, _IOLBF, 0);

	ret = setup(s);
	if (ret == 0 && shaper_sched_init(s) < 0)
		ret = -2;
	/* the ports' links are up (or waited for): what each can carry */
	if (ret == 0 && shaper_budget_start(s) < 0)
		ret = -2;
	if (ret < 0) {
		s->exit_code = ret == -2 ? 2 : 1;
		goto out;
	}
	printf("dpdk-shaper: %u port%s, bands %u, mbufs %u, workers %u\n",
	       s->nb_ports, s->nb_ports == 1 ? "" : "s", s->opt.bands,
	       s->nb_mbufs, s->nb_workers);
	shaper_ports_report(s);
	s->start_ns = shp_clock_now(&s->clock);
	shaper_sched_start(s);
	if (ctl_init(s) < 0 || cli_init(s) < 0) {
		s->exit_code = 1;
		goto out;
	}
	if (ctl_socket_init(s) < 0) {
		s->exit_code = 1;
		goto out;
	}
	if (shaper_telemetry_init(s) < 0)
		fprintf(stderr, "dpdk-shaper: warning: cannot register the "
			"telemetry commands\n");
	/* dpdk-dumpcap / dpdk-pdump attach as secondary processes (needs
	 * shared config: hugepages, no --no-shconf/--in-memory). */
	pdump_ok = rte_pdump_init() == 0;
	if (s->quit)
		printf("dpdk-shaper: signal during start-up: stopping\n");
	/* The main lcore is the control plane: a command file first, before
	 * any worker polls a port (no packet leaves with a profile the file
	 * was about to change), then the prompt (which polls the control
	 * duties between keys) or the control loop. See docs/cli.md. */
	src = shp_event_source_set(SHP_EV_START);
	rc = s->opt.cmdline_file != NULL ? cli_run_file(s->opt.cmdline_file) :
	     0;
	shp_event_source_set(src);
	if (rc < 0 && !s->opt.interactive) {
		printf("dpdk-shaper: --cmdline-file %s failed: stopping, exit "
		       "status 1\n", s->opt.cmdline_file);
		s->exit_code = 1;
		s->quit = true;
	} else if (s->opt.cmdline_file != NULL && s->opt.interactive &&
		   !s->quit) {
		printf("dpdk-shaper: --cmdline-file %s done\n",
		       s->opt.cmdline_file);
	}
	if (shaper_capture_opt.path != NULL && !s->quit) {
		char err[SHP_ERR_LEN];

		if (shaper_capture_start(s, shaper_capture_opt.path,
					 shaper_capture_opt.snaplen,
					 shaper_capture_opt.limit, false,
					 err) < 0) {
			printf("dpdk-shaper: --capture-drops %s: stopping, "
			       "exit status 1\n", err);
			s->exit_code = 1;
			s->quit = true;
		}
	}
	if (shaper_capture_opt.log_path != NULL && !s->quit) {
		char err[SHP_ERR_LEN];

		if (shaper_packet_log_start(s, shaper_capture_opt.log_path,
					    shaper_capture_opt.log_every ?
					    shaper_capture_opt.log_every : 1000,
					    shaper_capture_opt.limit,
					    err) < 0) {
			printf("dpdk-shaper: --packet-log %s: stopping, exit "
			       "status 1\n", err);
			s->exit_code = 1;
			s->quit = true;
		}
	}
	s->running = true;
	shaper_lost_launch(s);
	rte_eal_mp_remote_launch(shaper_worker_main, s, SKIP_MAIN);
	if (s->opt.interactive)
		cli_interact(s);
	else
		while (!ctl_tick(s, false, NULL))
			ctl_socket_poll(NULL, 0, 1);
	s->quit = true;
	rte_eal_mp_wait_lcore();
	s->running = false;
	s->stop_ns = shp_clock_now(&s->clock);
	/* the capture ends with forwarding: what is flushed next is not
	 * in it (counted as flushed) */
	{
		char err[SHP_ERR_LEN];

		/* the log, and the capture with it */
		if (shaper_packet_log_stop(s, err) < 0 ||
		    (shaper_capture_running() &&
		     shaper_capture_stop(s, err) < 0)) {
			printf("dpdk-shaper: capture: %s\n", err);
			s->exit_code = 1;
		}
	}
	shaper_flush(s);
out:
	/* counters only if forwarding started: a failed set-up (no pool)
	 * has none to show, and zeros would look like a result */
	if (s->exit_code != 2 && s->nb_ports > 0 && s->ctr != NULL &&
	    s->start_ns != 0) {
		shaper_stats_print(s, stdout);
		if (s->opt.replay)
			shaper_summary_print(s, stdout);
		if (s->opt.stats_file != NULL &&
		    shaper_stats_write(s, s->opt.stats_file) < 0)
			s->exit_code = 1;
	}
	shaper_telemetry_fini();
	if (pdump_ok)
		rte_pdump_uninit();
	ctl_socket_fini();
	cli_fini();
	shaper_sched_fini(s);
	shaper_wire_fini(s);
	ctl_fini(s);
	if (s->ctr != NULL)
		shaper_latency_fini(s);
	shaper_ports_close(s);
	if (s->pool != NULL && check_pool(s) < 0)
		s->exit_code = 3;
	rte_eal_cleanup();
	shaper_run_dir_remove(run_dir);
	return s->exit_code;
}
