/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-replay's set-up: the EAL, the pool, each shard's chain
 * with the tap that collects what the root sends, and their release.
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

int
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

int
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

void
stages_fini(struct replay *r)
{
	unsigned int q;

	for (q = 0; q < r->queues; q++) {
		shp_classes_detach(&r->chain[q], &r->ctx[q]);
		shp_chain_destroy(&r->chain[q], &r->ctx[q]);
	}
	shp_chain_spec_free(&r->spec);
}
