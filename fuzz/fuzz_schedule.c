/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A --schedule file to shp_sched_parse (lib/conf/schedule.h), with ports 0 and
 * 1: a refusal is one line naming the file and the line; an accepted
 * schedule's times never go backwards, its repeat is longer than its last
 * time, its link state is defined at any time, and a cursor walks its
 * occurrences in order.
 *
 * A schedule the chains take (shp_sched_check_chain, its `for` lines
 * expanded) is then applied, event by event as the offline tool does, to
 * each port's chain and to each port as a link of two shards sharing its
 * link block (shp_sched_apply_shards, as --queues 2): every event
 * applies, and after each the shards and the lone chain print the same
 * profile, the shards' confs one change (one id). The chains go back to
 * their profile at start (every stage off, the queue's defaults) after
 * each input.
 */
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "fuzz_common.h"
#include "schedule.h"
#include "shp_chain.h"
#include "shp_conf_hdr.h"
#include "shp_link.h"
#include "shp_stats.h"

#define NB_PORTS 2
#define NB_SHARDS 2

static const uint16_t ports[NB_PORTS] = { 0, 1 };
static const struct shp_kind_env env = {
	.bands = 3, .ring_size = 1024, .seed = 1, .seed_set = true,
};
/* port p's lone chain, and its link of two shards */
static struct shp_chain lone[NB_PORTS];

/* One line naming the file "s" and where in it: "s:N: ...", or the
 * reader's own "--schedule s:N: ..." (lib/base/shp_file.h). */
static bool
names_file(const char *err)
{
	if (strncmp(err, "--schedule ", 11) == 0)
		err += 11;
	return strncmp(err, "s:", 2) == 0 && strchr(err, '\n') == NULL;
}
static struct shp_chain shard[NB_PORTS][NB_SHARDS];

static void
build(struct shp_chain *c, uint16_t port, unsigned int q,
      struct rte_mempool *pool, struct shp_lcore_ctr *ctr,
      struct shp_link_shared *link)
{
	struct shp_stage_env senv = {
		.socket = SOCKET_ID_ANY, .single_producer = true,
		.ring_size = env.ring_size, .ctr_blocks = ctr,
		.nb_ctr_blocks = 1, .shard = (uint16_t)q, .link = link,
	};
	struct shp_chain_spec spec = { { NULL } };
	char name[24];

	snprintf(name, sizeof(name), "p%u%s%u", port, link ? "q" : "l", q);
	senv.name = name;
	if (shp_chain_build(c, &spec, pool, port, &senv, NULL, &env) < 0)
		abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct rte_mempool *pool;
	struct shp_lcore_ctr *ctr;
	unsigned int p, q;

	(void)argc; (void)argv;
	fuzz_eal_init("fuzz_sched");
	pool = rte_pktmbuf_pool_create("fuzz_pool", 63, 0, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	ctr = rte_zmalloc("ctr", sizeof(*ctr) * (1 + NB_SHARDS), 0);
	if (pool == NULL || ctr == NULL)
		abort();
	for (p = 0; p < NB_PORTS; p++) {
		struct shp_link_shared *link = rte_zmalloc("link",
			sizeof(*link), RTE_CACHE_LINE_SIZE);

		if (link == NULL)
			abort();
		build(&lone[p], (uint16_t)p, 0, pool, &ctr[0], NULL);
		for (q = 0; q < NB_SHARDS; q++)
			build(&shard[p][q], (uint16_t)p, q, pool,
			      &ctr[1 + q], link);
	}
	return 0;
}

/* Every slot of the shards prints as the lone chain's, the shards' confs
 * one change. */
static void
check_same(const struct shp_sched *s, const struct shp_sched_event *e,
	   unsigned int p)
{
	char t0[2048], t[2048];
	unsigned int slot, q;

	for (slot = 0; slot < SHP_SLOT_MAX; slot++) {
		void *c0 = shard[p][0].conf[slot];

		shp_chain_format(&lone[p], slot, t0, sizeof(t0));
		for (q = 0; q < NB_SHARDS; q++) {
			void *c = shard[p][q].conf[slot];

			shp_chain_format(&shard[p][q], slot, t, sizeof(t));
			if (strcmp(t, t0) != 0)
				FUZZ_BUG("%s:%u: port %u shard %u runs '%s', "
					 "the lone chain '%s'", s->path,
					 e->line, p, q, t, t0);
			if ((c == NULL) != (c0 == NULL) ||
			    (c != NULL && ((struct shp_conf_hdr *)c)->id !=
					  ((struct shp_conf_hdr *)c0)->id))
				FUZZ_BUG("%s:%u: port %u: the shards' confs "
					 "are not one change", s->path,
					 e->line, p);
		}
	}
}

static void
apply_all(const struct shp_sched *s)
{
	char err[SHP_ERR_LEN];
	unsigned int i;

	for (i = 0; i < s->nb; i++) {
		const struct shp_sched_event *e = &s->ev[i];
		unsigned int p;

		for (p = 0; e->op == SHP_SCHED_SET && p < NB_PORTS; p++) {
			if (e->port >= 0 && (unsigned int)e->port != p)
				continue;
			if (shp_sched_apply(e, &lone[p], &env, err) < 0 ||
			    shp_sched_apply_shards(e, shard[p], NB_SHARDS,
						   &env, err) < 0)
				FUZZ_BUG("%s:%u: checked, then refused: %s",
					 s->path, e->line, err);
			check_same(s, e, p);
		}
	}
}

/* n chains back to the start's profile: every stage off, the queue's
 * kind with its defaults */
static void
restart(struct shp_chain *c, unsigned int n)
{
	char err[SHP_ERR_LEN];
	unsigned int slot, q;

	for (slot = 0; slot < SHP_SLOT_MAX; slot++) {
		const struct shp_kind *k = c[0].kind[slot];
		void *conf[NB_SHARDS], *old;
		const struct shp_kind *kq;

		/* (a kind that cannot change: no schedule changed it) */
		if (k == NULL || k->ops->change == NULL)
			continue;
		for (q = 0; q < n; q++) {
			if (slot != SHP_SLOT_QUEUE)
				conf[q] = NULL;
			else if (shp_kind_parse(shp_kind_key(k), k->name,
						&env, &kq, &conf[q], err) < 0)
				FUZZ_BUG("%s defaults: %s", k->name, err);
			if (q > 0)
				shp_conf_twin(conf[q], conf[0]);
		}
		for (q = 0; q < n; q++) {
			if (shp_chain_change(&c[q], k, conf[q], &old,
					     err) < 0)
				FUZZ_BUG("%s back to its start: %s", k->name,
					 err);
			shp_kind_conf_free(k, old);
		}
	}
}

/* the chains take s: checked and applied (s's `for` lines expanded) */
static void
run_on_chains(struct shp_sched *s)
{
	char err[SHP_ERR_LEN];
	unsigned int p;

	err[0] = '\0';
	for (p = 0; p < NB_PORTS; p++)
		if (shp_sched_check_chain(s, (uint16_t)p, &lone[p], &env,
					  err) < 0)
			break;
	if (p == NB_PORTS &&
	    shp_sched_expand_for(s, ports, NB_PORTS, lone, &env, err) == 0) {
		apply_all(s);
		for (p = 0; p < NB_PORTS; p++) {
			restart(&lone[p], 1);
			restart(shard[p], NB_SHARDS);
		}
		return;
	}
	if (!names_file(err))
		FUZZ_BUG("refused for the chains without a one-line reason "
			 "naming the file: '%s'", err);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shp_sched s;
	struct shp_sched_cursor c = { 0, 0 };
	char err[SHP_ERR_LEN];
	uint64_t last = 0, since;
	unsigned int i;
	FILE *f;

	if (size == 0)
		return 0;
	f = fmemopen((void *)(uintptr_t)data, size, "r");
	if (f == NULL)
		return 0;
	err[0] = '\0';
	if (shp_sched_parse(&s, "s", f, ports, NB_PORTS, &env, err) < 0) {
		fclose(f);
		if (!names_file(err))
			FUZZ_BUG("refused without a one-line reason naming the "
				 "file: '%s'", err);
		return 0;
	}
	fclose(f);
	for (i = 0; i < s.nb; i++) {
		if (s.ev[i].t < last)
			FUZZ_BUG("line %u goes backwards", s.ev[i].line);
		last = s.ev[i].t;
		if (s.ev[i].port > 1)
			FUZZ_BUG("port %d accepted", s.ev[i].port);
	}
	if (s.repeat != 0 && s.repeat <= last)
		FUZZ_BUG("repeat %" PRIu64 " not after %" PRIu64, s.repeat,
			 last);
	last = 0;
	for (i = 0; i < 64; i++) {
		uint64_t t = shp_sched_cursor_time(&s, &c);

		if (t == SHP_SCHED_NONE)
			break;
		if (t < last)
			FUZZ_BUG("occurrence %u before the one before", i);
		last = t;
		shp_sched_link_down(&s, (uint16_t)(i & 1), t, &since);
		if (since != SHP_SCHED_NONE && since > t)
			FUZZ_BUG("a link event after the time asked");
		shp_sched_cursor_next(&s, &c);
	}
	run_on_chains(&s);
	shp_sched_free(&s);
	return 0;
}
