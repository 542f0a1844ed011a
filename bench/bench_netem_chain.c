/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 56: what making netem's loss the link's one process costs a
 * shard. Each lcore runs a netem stage of its own and enqueues bursts of
 * 32 frames of 64 bytes (then dequeues what is due, untimed), ITER
 * bursts, in three layouts measured one after the other:
 *   private:   no link (a port of one queue: its own positions);
 *   own link:  each lcore the shard of a link of its own (the claim's
 *              swaps, no contention, no walk);
 *   one link:  every lcore a shard of the same link (the line moves
 *              between them at every claim, and a claim that finds the
 *              chains' record behind walks them over the others' frames).
 * Two profiles: `loss burst 3 10` (positions only: one swap a burst) and
 * `loss gemodel 1% 25% duplicate 1% 25%` (chains: a second swap, and the
 * walk). Prints cycles per enqueue call per lcore and the ratio to
 * private. Never a test: figures only.
 *
 *   build/bench/bench_netem_chain --no-huge -m 256 --no-pci --lcores 0@0,1@1
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pause.h>

#include "shp_link.h"
#include "shp_meta.h"
#include "shp_netem.h"
#include "shp_qdisc.h"

#define ITER 200000
#define BURST 32

static struct shp_link_shared one, own[RTE_MAX_LCORE];
static struct shp_port_ctr ctr[RTE_MAX_LCORE];
static struct rte_mempool *pool[RTE_MAX_LCORE];
static uint64_t cycles[RTE_MAX_LCORE];
static const char *profile;
static volatile int mode, go;
static unsigned int ready;

static int
worker(void *arg)
{
	unsigned int lc = rte_lcore_id(), i;
	struct shp_stage_env env = { .socket = SOCKET_ID_ANY,
				     .shard = (uint16_t)rte_lcore_index(lc),
				     .link = mode == 0 ? NULL :
					     mode == 1 ? &own[lc] : &one };
	struct shp_ctx ctx = { .now = 0, .ctr = &ctr[lc] };
	struct rte_mbuf *in[BURST], *out[4 * BURST];
	struct shp_netem_conf *conf;
	char err[SHP_ERR_LEN];
	struct shp_qdisc *q;
	uint64_t sum = 0;
	uint16_t k;

	(void)arg;
	conf = shp_netem_parse(profile, err);
	q = conf == NULL ? NULL :
	    shp_qdisc_create_env(&shp_netem_ops, NULL, pool[lc], 0, &env,
				 conf);
	if (q == NULL) {
		fprintf(stderr, "%s\n", conf == NULL ? err : "no stage");
		exit(1);
	}
	__atomic_add_fetch(&ready, 1, __ATOMIC_RELEASE);
	while (!go)
		rte_pause();
	for (i = 0; i < ITER; i++) {
		uint64_t t0;
		int j;

		ctx.now += 1000;
		if (rte_pktmbuf_alloc_bulk(pool[lc], in, BURST) != 0) {
			fprintf(stderr, "pool empty\n");
			exit(1);
		}
		for (j = 0; j < BURST; j++) {
			rte_pktmbuf_append(in[j], 64);
			shp_meta_init(in[j], ctx.now);
		}
		t0 = rte_rdtsc();
		shp_qdisc_enqueue(q, in, BURST, &ctx);
		sum += rte_rdtsc() - t0;
		do {
			k = shp_qdisc_dequeue(q, out, RTE_DIM(out), &ctx);
			rte_pktmbuf_free_bulk(out, k);
		} while (k == RTE_DIM(out));
	}
	cycles[lc] = sum;
	q->ops->reset(q, &ctx);
	shp_qdisc_destroy(q);
	shp_netem_conf_free(conf);
	return 0;
}

static void
run(const char *name, int m, double *base)
{
	unsigned int lc, n = 0;
	double sum = 0;

	memset(&one, 0, sizeof(one));
	memset(own, 0, sizeof(own));
	mode = m;
	go = 0;
	ready = 0;
	RTE_LCORE_FOREACH_WORKER(lc)
		rte_eal_remote_launch(worker, NULL, lc);
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) <
	       rte_lcore_count() - 1)
		rte_pause();
	go = 1;
	worker(NULL);
	rte_eal_mp_wait_lcore();
	printf("  %-10s", name);
	RTE_LCORE_FOREACH(lc) {
		double c = (double)cycles[lc] / ITER;

		printf("  lcore %u: %7.1f cycles/burst", lc, c);
		sum += c;
		n++;
	}
	sum /= n;
	if (*base == 0)
		*base = sum;
	printf("  mean %.1f, x%.2f of private\n", sum, sum / *base);
}

int
main(int argc, char **argv)
{
	static const char *const profiles[] = {
		"loss burst 3 10",
		"loss gemodel 1% 25% duplicate 1% 25%",
	};
	unsigned int lc, p;
	int r;

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	RTE_LCORE_FOREACH(lc) {
		char name[32];

		snprintf(name, sizeof(name), "bench%u", lc);
		pool[lc] = rte_pktmbuf_pool_create(name, 8191, 256,
						   SHP_MBUF_PRIV_SIZE,
						   RTE_MBUF_DEFAULT_BUF_SIZE,
						   SOCKET_ID_ANY);
		if (pool[lc] == NULL) {
			fprintf(stderr, "pool: %s\n",
				rte_strerror(rte_errno));
			return 1;
		}
	}
	printf("%u lcores, bursts of %d x 64 B, %d each, TSC %.2f GHz\n",
	       rte_lcore_count(), BURST, ITER, rte_get_tsc_hz() / 1e9);
	for (r = 0; r < 2; r++)
		for (p = 0; p < RTE_DIM(profiles); p++) {
			double base = 0;

			profile = profiles[p];
			printf("netem %s\n", profile);
			run("private", 0, &base);
			run("own link", 1, &base);
			run("one link", 2, &base);
		}
	rte_eal_cleanup();
	return 0;
}
