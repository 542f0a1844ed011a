/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fq_codel and dualpi2 beside pfifo_fast (the bands): Mpps through the
 * queue stage,
 * enqueue a burst of 32 then dequeue it, alone and under a tbf that never
 * throttles (it takes fq_codel's packets one peek at a time, the bands'
 * a run at a time), with 1, 16 and 1024 UDP flows and 1000 packets
 * standing in the queue. The same mbufs go round; their arrival
 * time is refreshed on each enqueue so that CoDel never drops; dualpi2's
 * target is beyond any sojourn here, so that p' stays 0 while every
 * packet still takes its draw (the queue holds more than 2 MTUs).
 * A smoke run prints figures; nothing here asserts a timing.
 */
#include <stdio.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "shp_kind.h"
#include "shp_meta.h"
#include "shp_qdisc.h"
#include "shp_stats.h"
#include "shp_units.h"

#define BURST   32
#define STAND   1000
#define ROUNDS  (1 << 16)
#define NB_PKTS (STAND + BURST)

static struct rte_mempool *pool;
static struct shp_lcore_ctr *ctr;
static struct rte_mbuf *pkts[NB_PKTS];

static void
mkpkts(unsigned int flows)
{
	unsigned int i;

	for (i = 0; i < NB_PKTS; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
		struct rte_ipv4_hdr *ip = (void *)(p + 14);
		struct rte_udp_hdr *udp = (void *)(ip + 1);

		memset(p, 0, 64);
		p[12] = 0x08;
		ip->version_ihl = 0x45;
		ip->total_length = rte_cpu_to_be_16(50);
		ip->next_proto_id = IPPROTO_UDP;
		ip->src_addr = rte_cpu_to_be_32(0x0a000001);
		ip->dst_addr = rte_cpu_to_be_32(0x0a000002);
		udp->src_port = rte_cpu_to_be_16(1000 + i % flows);
		udp->dst_port = rte_cpu_to_be_16(9);
		shp_meta_init(m, 0);
		shp_meta(m)->band = 1;
	}
}

static struct shp_qdisc *
make(const char *key, const char *text, struct shp_qdisc *child,
     const struct shp_stage_env *env)
{
	static const struct shp_kind_env kenv = {
		.bands = 3, .ring_size = 4096,   /* room for all */
	};
	char err[SHP_ERR_LEN];
	const struct shp_kind *k;
	struct shp_qdisc *q;
	void *conf;

	if (shp_kind_parse(key, text, &kenv, &k, &conf, err) < 0)
		rte_exit(1, "%s\n", err);
	q = shp_qdisc_create_env(k->ops, child, pool, 0, env, conf);
	if (q == NULL)
		rte_exit(1, "%s: cannot create\n", text);
	return q;   /* (the conf lives as long as the run) */
}

/* Mpps of enqueue 32 + dequeue 32 into leaf, dequeued from root. */
static double
run(struct shp_qdisc *leaf, struct shp_qdisc *root)
{
	struct shp_ctx ctx = { .now = 1000000000, .ctr = &ctr->port[0] };
	struct rte_mbuf *spare[NB_PKTS];
	unsigned int r, i, nspare = NB_PKTS;
	uint64_t t0, moved = 0;
	uint16_t n;

	memcpy(spare, pkts, sizeof(spare));
	for (i = 0; i < STAND; i++)
		shp_qdisc_enqueue(leaf, &spare[--nspare], 1, &ctx);
	t0 = rte_rdtsc_precise();
	for (r = 0; r < ROUNDS; r++) {
		ctx.now += 1000;
		nspare -= BURST;
		for (i = 0; i < BURST; i++)
			shp_meta(spare[nspare + i])->rx_ns = ctx.now;
		shp_qdisc_enqueue(leaf, &spare[nspare], BURST, &ctx);
		ctx.bytes = UINT64_MAX;
		n = shp_qdisc_dequeue(root, &spare[nspare], BURST, &ctx);
		nspare += n;
		moved += n;
		if (n < BURST)
			rte_exit(1, "only %u of %u dequeued\n", n, BURST);
	}
	t0 = rte_rdtsc_precise() - t0;
	/* take the standing queue back */
	while ((n = shp_qdisc_dequeue(root, &spare[nspare], BURST, &ctx)) > 0)
		nspare += n;
	if (nspare != NB_PKTS)
		rte_exit(1, "%u packets lost\n", NB_PKTS - nspare);
	return (double)moved / ((double)t0 / rte_get_tsc_hz()) / 1e6;
}

int
main(int argc, char **argv)
{
	static const unsigned int flows[] = { 1, 16, 1024 };
	static const char *const queues[] = { "pfifo_fast", "fq_codel",
					      "dualpi2 target 1000s" };
	struct shp_stage_env env = {
		.socket = SOCKET_ID_ANY, .single_producer = true,
		.ring_size = 4096,
	};
	unsigned int f, q, t;

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	pool = rte_pktmbuf_pool_create("bfq", 4096, 0, SHP_MBUF_PRIV_SIZE,
				       RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	ctr = rte_zmalloc("ctr", sizeof(*ctr), RTE_CACHE_LINE_SIZE);
	if (pool == NULL || ctr == NULL ||
	    rte_pktmbuf_alloc_bulk(pool, pkts, NB_PKTS) != 0)
		rte_exit(1, "no memory\n");
	for (f = 0; f < NB_PKTS; f++)
		rte_pktmbuf_append(pkts[f], 64);
	env.ctr_blocks = ctr;
	env.nb_ctr_blocks = 1;
	printf("queue stage, Mpps of enqueue %d + dequeue %d, 64-byte UDP, "
	       "%d rounds; %d packets standing\n", BURST, BURST, ROUNDS,
	       STAND);
	printf("%-6s %-10s %12s %12s\n", "flows", "queue", "alone",
	       "under tbf");
	for (f = 0; f < RTE_DIM(flows); f++) {
		mkpkts(flows[f]);
		for (q = 0; q < RTE_DIM(queues); q++) {
			struct shp_qdisc *leaf, *tbf;
			double mpps[2];
			char name[32];

			snprintf(name, sizeof(name), "bfq%u_%u", f, q);
			env.name = name;
			leaf = make("queue", queues[q], NULL, &env);
			tbf = make("tbf", "rate 100gbit burst 10mb limit 1gb",
				   leaf, &env);
			for (t = 0; t < 2; t++) {
				run(leaf, t ? tbf : leaf);   /* warm up */
				mpps[t] = run(leaf, t ? tbf : leaf);
			}
			printf("%-6u %-10.*s %12.2f %12.2f\n", flows[f],
			       (int)strcspn(queues[q], " "), queues[q],
			       mpps[0], mpps[1]);
			shp_qdisc_destroy(tbf);
			shp_qdisc_destroy(leaf);
		}
	}
	rte_eal_cleanup();
	return 0;
}
