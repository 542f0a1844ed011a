/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shaper the CLI harnesses run commands on (fuzz_cli.c,
 * fuzz_ctl_body.c): two egress ports whose stages exist but whose ethdevs
 * do not, and the state every input starts from.
 *
 * SHP_FUZZ_QUEUES=2 (scripts/fuzz.sh runs these harnesses in both shapes)
 * makes each port a link of two shards, as --queues 2 does: shard 1 with
 * a chain of its own, both sharing the port's link block (tbf's bucket,
 * netem's link state), so every change runs as it does on the default
 * multi-worker path. Default 1: one chain a port.
 */
#ifndef SHP_FUZZ_SHAPER_H
#define SHP_FUZZ_SHAPER_H

#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "fuzz_common.h"
#include "cli.h"
#include "control.h"
#include "sch_bands.h"
#include "shaper.h"
#include "shp_meta.h"

#define NB_PORTS 2

struct shaper shaper;

/* SHP_FUZZ_QUEUES: 1 (unset) or 2 */
static unsigned int
fuzz_queues(void)
{
	const char *v = getenv("SHP_FUZZ_QUEUES");

	if (v == NULL || strcmp(v, "1") == 0)
		return 1;
	if (strcmp(v, "2") == 0)
		return 2;
	fprintf(stderr, "SHP_FUZZ_QUEUES=%s: 1 or 2\n", v);
	abort();
}

static void
setup_shaper(struct shaper *s)
{
	char err[SHP_ERR_LEN];
	unsigned int i;
	size_t sz;

	shp_options_init(&s->opt);
	s->opt.queues = fuzz_queues();
	s->opt.queues_given = true;
	if (shp_options_finalize(&s->opt, err) < 0)
		abort();
	s->ctr = rte_zmalloc("counters", sizeof(*s->ctr) * SHAPER_CTR_BLOCKS,
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
	s->pools[0] = s->pool;       /* one socket: one pool */
	s->plan.nb = 1;
	s->plan.nb_ports[0] = NB_PORTS;
	for (i = 0; i < NB_PORTS; i++) {
		s->port_ids[i] = i;
		s->pool_of[i] = s->pool;
		s->opt.pair_of[i] = i ^ 1;
	}
	/* as ports.c builds them, a device's socket being any */
	for (i = 0; i < NB_PORTS; i++) {
		struct shp_stage_env env = {
			.socket = SOCKET_ID_ANY, .single_producer = true,
			.ring_size = s->opt.ring_size, .ctr_blocks = s->ctr,
			.nb_ctr_blocks = 1,
		};
		struct shp_chain_spec spec = { { NULL } };
		struct shp_kind_env kenv;
		unsigned int q;

		shp_options_kind_env(&s->opt, &kenv);
		if (shaper_queues(s) > 1) {
			if (shaper_shards_alloc(s, i, SOCKET_ID_ANY,
						true) < 0)
				abort();
			env.link = s->link[i];
			env.ctr_blocks = SHAPER_SHARD_BLOCK(s->ctr, 0);
			env.nb_ctr_blocks = SHAPER_SHARD_BLOCKS;
		}
		if (shp_chain_build(&s->chain[i], &spec, s->pool, i, &env,
				    NULL, &kenv) < 0)
			abort();
		s->egress[i].port = i;
		s->egress[i].chain = &s->chain[i];
		for (q = 1; q < shaper_queues(s); q++) {
			env.shard = (uint16_t)q;
			if (shaper_shards_init(s, i, &env, &kenv) < 0)
				abort();
		}
		/* each shard counts in its block (shards.c) */
		for (q = 0; shaper_queues(s) > 1 && q < shaper_queues(s); q++)
			s->shard[i][q]->ctr = SHAPER_SHARD_BLOCK(s->ctr, q);
	}
	if (ctl_init(s) < 0 || cli_init(s) < 0)
		abort();
}

static void
reset(struct shaper *s)
{
	char err[SHP_ERR_LEN];

	s->quit = false;
	/* every slot back to off: what a shard's chain (rte memory, which
	 * LeakSanitizer does not scan) holds at exit reads as a leak */
	if (ctl_set_stage(s, "netem", -1, "off", err) < 0 ||
	    ctl_set_stage(s, "tbf", -1, "off", err) < 0 ||
	    ctl_set_stage(s, "police", -1, "off", err) < 0 ||
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

#endif
