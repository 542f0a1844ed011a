/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CLI (app/cli.c: librte_cmdline parsing of our instruction table, and
 * the handlers behind it, app/control.c) on arbitrary command lines, one
 * per input line, against a shaper of two egress ports whose stages exist
 * but whose ethdevs do not: every command but `load` runs for real
 * (parsing, reconfiguration with RCU publication, show, clear, stop). `load`
 * reads files by name, so inputs naming it are skipped: the command file
 * reader is the same code as the lines given here.
 *
 * Each input starts from the same state (no tbf, no netem, tos, default
 * priomap, forwarding started), so a crash reproduces from its input alone.
 */
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "fuzz_common.h"
#include "cli.h"
#include "control.h"
#include "sch_bands.h"
#include "shaper.h"
#include "shp_meta.h"

#define NB_PORTS 2
#define MAX_LINES 16

struct shaper shaper;

static void
setup_shaper(struct shaper *s)
{
	char err[SHP_ERR_LEN];
	unsigned int i;
	size_t sz;

	shp_options_init(&s->opt);
	if (shp_options_finalize(&s->opt, err) < 0)
		abort();
	s->ctr = rte_zmalloc("counters", sizeof(*s->ctr) * RTE_MAX_LCORE,
			     RTE_CACHE_LINE_SIZE);
	s->nb_mbufs = 1023;
	s->pool = rte_pktmbuf_pool_create("fuzz_pool", s->nb_mbufs, 0,
					  SHP_MBUF_PRIV_SIZE,
					  RTE_MBUF_DEFAULT_BUF_SIZE,
					  SOCKET_ID_ANY);
	sz = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);
	shaper_rcu = rte_zmalloc("rcu", sz, RTE_CACHE_LINE_SIZE);
	if (s->ctr == NULL || s->pool == NULL || shaper_rcu == NULL ||
	    rte_rcu_qsbr_init(shaper_rcu, RTE_MAX_LCORE) != 0)
		abort();
	s->classifier = &s->opt.classifier;
	s->nb_ports = NB_PORTS;
	for (i = 0; i < NB_PORTS; i++) {
		struct shp_stage_env env = {
			.socket = SOCKET_ID_ANY, .single_producer = true,
			.ring_size = s->opt.ring_size, .ctr_blocks = s->ctr,
			.nb_ctr_blocks = 1,
		};
		struct shp_chain_spec spec = { { NULL } };
		struct shp_kind_env kenv;

		s->port_ids[i] = i;
		s->opt.pair_of[i] = i ^ 1;
		shp_options_kind_env(&s->opt, &kenv);
		if (shp_chain_build(&s->chain[i], &spec, s->pool, i, &env,
				    NULL, &kenv) < 0)
			abort();
	}
	if (ctl_init(s) < 0 || cli_init(s) < 0)
		abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	fuzz_eal_init("fuzz_cli");
	setup_shaper(&shaper);
	/* command output is exercised, not read (SHP_FUZZ_CLI_OUT=1 keeps
	 * it, to see what an input does) */
	if (getenv("SHP_FUZZ_CLI_OUT") == NULL &&
	    freopen("/dev/null", "w", stdout) == NULL)
		abort();
	return 0;
}

static void
reset(struct shaper *s)
{
	char err[SHP_ERR_LEN];

	s->quit = false;
	if (ctl_set_stage(s, "netem", -1, "off", err) < 0 ||
	    ctl_set_stage(s, "tbf", -1, "off", err) < 0 ||
	    ctl_set_stage(s, "queue", -1, "pfifo_fast", err) < 0 ||
	    ctl_set_classify(s, "tos", err) < 0 ||
	    ctl_set_priomap(s, "1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1", err) < 0)
		abort();
	/* no class left from this input (cleared ones, empty: gone) */
	while (s->opt.classes != NULL && s->opt.classes->nb > 0)
		if (ctl_set_class(s, s->opt.classes->def[0].name, NULL,
				  err) < 0)
			abort();
	ctl_classes_gc(s);
	ctl_pause(s, false);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_str(data, size), *line, *next;
	int n = 0;

	if (strstr(in, "load") != NULL) {
		free(in);
		return 0;
	}
	for (line = in; *line != '\0' && n < MAX_LINES; line = next, n++) {
		next = line + strcspn(line, "\n");
		if (*next == '\n')
			*next++ = '\0';
		cli_exec(line);
	}
	reset(&shaper);
	free(in);
	return 0;
}
