/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed 002: three ways to empty netem's rbtree, side by side in one run.
 *   min        repeat RB_MIN + RB_REMOVE (the "naive" method);
 *   next       RB_MIN once, then RB_NEXT before each RB_REMOVE (Linux
 *              tfifo_reset since 2017, our shp_tfifo_flush);
 *   postorder  children before parents, no erase, then re-init the root.
 * The tree is rebuilt with the same random keys before each method, so all
 * three empty the same shape. Times include returning the mbufs to the pool
 * (bulk frees of 64), as the kernel figures include kfree_skb.
 *
 * Usage: bench_netem_flush [MAX_PACKETS]   (default 10000000)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "netem_tfifo.h"
#include "shp_meta.h"
#include "shp_rand.h"

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void
build(struct shp_tfifo *t, struct rte_mempool *mp, uint64_t n)
{
	struct rte_mbuf *m[64];
	struct shp_rand r;
	uint64_t i;
	int j;

	shp_rand_seed(&r, 2017, n);
	shp_tfifo_init(t);
	for (i = 0; i < n; i += 64) {
		if (rte_pktmbuf_alloc_bulk(mp, m, 64) != 0) {
			fprintf(stderr, "pool empty\n");
			exit(1);
		}
		for (j = 0; j < 64; j++) {
			shp_meta_init(m[j], 0);
			shp_meta(m[j])->time_to_send = shp_rand_u64(&r) >> 16;
			shp_tfifo_insert_tree(t, m[j]);
		}
	}
}

int
main(int argc, char **argv)
{
	static const char *names[] = { "min", "next", "postorder" };
	char prefix[64];
	char *eal[] = {
		argv[0], "--no-huge", "--no-pci", "--no-shconf", "-m", "8192",
		"--log-level=error", "-l", "0", prefix, NULL
	};
	uint64_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000000;
	uint64_t n;
	struct rte_mempool *mp;
	struct shp_tfifo t;

	snprintf(prefix, sizeof(prefix), "--file-prefix=bench_flush_%d",
		 (int)getpid());
	if (rte_eal_init(RTE_DIM(eal) - 1, eal) < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 1;
	}
	mp = rte_pktmbuf_pool_create("flush", max + 1024, 256,
				     SHP_MBUF_PRIV_SIZE,
				     RTE_PKTMBUF_HEADROOM + 64, SOCKET_ID_ANY);
	if (mp == NULL) {
		fprintf(stderr, "pool: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	printf("tfifo tree flush, ns per packet (incl. mbuf free)\n");
	printf("%10s %10s %10s %10s\n", "packets", names[0], names[1],
	       names[2]);
	for (n = 10000; n <= max; n *= 10) {
		double ns[3];
		int h;

		/* n is a multiple of 64 only from 1e6 on; round up */
		uint64_t real = (n + 63) / 64 * 64;

		for (h = 0; h < 3; h++) {
			double t0;
			uint32_t freed;

			build(&t, mp, real);
			t0 = now_ns();
			freed = shp_tfifo_flush_method(&t,
						       (enum shp_tfifo_purge)h);
			ns[h] = (now_ns() - t0) / real;
			if (freed != real ||
			    rte_mempool_avail_count(mp) != mp->size) {
				fprintf(stderr, "method %s leaked\n",
					names[h]);
				return 1;
			}
		}
		printf("%10" PRIu64 " %10.1f %10.1f %10.1f\n", real, ns[0],
		       ns[1], ns[2]);
		fflush(stdout);
	}
	rte_mempool_free(mp);
	rte_eal_cleanup();
	return 0;
}
