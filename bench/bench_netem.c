/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem stage cost: TSC cycles per packet for enqueue + dequeue in steady
 * state with 1e4, 1e6 and 1e7 packets in flight, for a constant delay
 * and for a jittered one (uniform delay in [D/2, 3D/2)), each with the
 * tfifo alone (constant: the list fast path; jitter: mostly the rbtree)
 * and with the calendar in front of it (netem_tq.h), side by side.
 *
 * A virtual clock advances 100 ns per packet; the delay is in-flight * 100
 * ns, so the queue holds the target number of packets. Bursts of 32 are
 * enqueued, then everything due is dequeued; only the two stage calls are
 * timed (allocation and freeing are not). The pool uses a 192-byte data
 * room (64 bytes after the headroom) so 1e7 mbufs fit in ~4.5 GB.
 *
 * With the calendar, each case runs a third time with netem's short ways
 * off (shp_netem_short_ways: every packet the whole per-packet path), and
 * the ratio says what the short way (a constant delay's plain burst, or a
 * profile that only draws) saves.
 *
 * Usage: bench_netem [MAX_IN_FLIGHT]   (default 10000000)
 * BENCH_NETEM_EXTRA='WORDS' adds netem words to every case ('loss 1%':
 * the full pipeline's netem).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "shp_kind.h"
#include "shp_meta.h"
#include "shp_netem.h"
#include "shp_qdisc.h"

#define BURST 32
#define STEP_NS 100           /* virtual time between packets */
#define MEASURE 2000000       /* packets timed per case */

static struct shp_port_ctr ctr;

struct result {
	double cycles_per_pkt;
	uint64_t qlen;
	uint64_t tree_share_pct;
};

static void
fill_burst(struct rte_mempool *mp, struct rte_mbuf **m, uint64_t now)
{
	int i;

	while (rte_pktmbuf_alloc_bulk(mp, m, BURST) != 0) {
		fprintf(stderr, "pool empty\n");
		exit(1);
	}
	for (i = 0; i < BURST; i++) {
		rte_pktmbuf_append(m[i], 64);
		shp_meta_init(m[i], now);
	}
}

/*
 * A fresh pool for each run: the order in which a previous run freed its
 * mbufs changes the memory access pattern of the next (measured: the
 * second of two identical 1e7 runs was 4x slower), which would favour
 * whichever queue ran first.
 */
static struct rte_mempool *
make_pool(uint64_t inflight)
{
	struct rte_mempool *mp;

	mp = rte_pktmbuf_pool_create("bench", inflight + inflight / 5 + 4096,
				     256, SHP_MBUF_PRIV_SIZE,
				     RTE_PKTMBUF_HEADROOM + 64, SOCKET_ID_ANY);
	if (mp == NULL) {
		fprintf(stderr, "pool: %s\n", rte_strerror(rte_errno));
		exit(1);
	}
	return mp;
}

static void
run_case(uint64_t inflight, bool jitter, struct result *res)
{
	struct rte_mempool *mp = make_pool(inflight);
	/* more netem words from the environment ("loss 25%" against
	 * "loss pattern 1 4": the loss decision's cost) */
	const char *extra = getenv("BENCH_NETEM_EXTRA");
	char args[256], err[SHP_ERR_LEN];
	size_t n;
	struct shp_netem_conf *conf;
	struct shp_qdisc *q;
	struct shp_ctx ctx = { .now = 0, .ctr = &ctr };
	struct rte_mbuf *in[BURST], *out[4 * BURST];
	uint64_t d = inflight * STEP_NS, cycles = 0, pkts = 0, done = 0;
	uint64_t total = inflight + MEASURE, t0;
	uint16_t k;

	if (jitter)
		snprintf(args, sizeof(args), "limit %" PRIu64
			 " delay %" PRIu64 "ns %" PRIu64 "ns",
			 2 * inflight, d, d / 2);
	else
		snprintf(args, sizeof(args), "limit %" PRIu64
			 " delay %" PRIu64 "ns", 2 * inflight, d);
	n = strlen(args);
	if (extra != NULL)
		snprintf(args + n, sizeof(args) - n, " %s", extra);
	conf = shp_netem_parse(args, err);
	if (conf == NULL) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	memset(&ctr, 0, sizeof(ctr));
	q = shp_qdisc_create(&shp_netem_ops, NULL, mp, 0, SOCKET_ID_ANY, conf);
	res->tree_share_pct = 0;
	for (done = 0; done < total; done += BURST) {
		bool timed = done >= inflight;

		ctx.now += BURST * STEP_NS;
		fill_burst(mp, in, ctx.now);
		t0 = rte_rdtsc();
		shp_qdisc_enqueue(q, in, BURST, &ctx);
		do {
			k = shp_qdisc_dequeue(q, out, RTE_DIM(out), &ctx);
			rte_pktmbuf_free_bulk(out, k);  /* untimed below */
		} while (k == RTE_DIM(out));
		if (timed) {
			cycles += rte_rdtsc() - t0;
			pkts += BURST;
		}
	}
	res->cycles_per_pkt = (double)cycles / pkts;
	res->qlen = SHP_XSTAT(&ctr, "netem", "queued");
	q->ops->reset(q, &ctx);
	shp_qdisc_destroy(q);
	shp_netem_conf_free(conf);
	rte_mempool_free(mp);
}

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = {
		argv[0], "--no-huge", "--no-pci", "--no-shconf", "-m", "8192",
		"--log-level=error", "-l", "0", prefix, NULL
	};
	uint64_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000000;
	uint64_t sizes[] = { 10000, 1000000, 10000000 };
	double hz;
	unsigned int i, j;

	snprintf(prefix, sizeof(prefix), "--file-prefix=bench_netem_%d",
		 (int)getpid());
	if (rte_eal_init(RTE_DIM(eal) - 1, eal) < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 1;
	}
	hz = (double)rte_get_tsc_hz();
	printf("netem stage, enqueue+dequeue, bursts of %d, TSC %.2f GHz\n",
	       BURST, hz / 1e9);
	printf("%12s  %-10s %-22s %10s %8s %12s\n", "in flight", "delay",
	       "queue", "cycles/pkt", "ns/pkt", "qlen at end");
	for (i = 0; i < RTE_DIM(sizes) && sizes[i] <= max; i++) {
		for (j = 0; j < 2; j++) {
			static const char *const name[2][3] = {
				{ "tfifo (list path)", "calendar + tfifo",
				  "calendar, whole way" },
				{ "tfifo (tree path)", "calendar + tfifo",
				  "calendar, whole way" },
			};
			struct result r[3];
			unsigned int c;

			/* the tfifo alone, then the calendar in front of it,
			 * then that without netem's short ways */
			for (c = 0; c < 3; c++) {
				shp_netem_tq_buckets = c ?
					SHP_NETEM_TQ_BUCKETS : 0;
				shp_netem_short_ways = c != 2;
				run_case(sizes[i], j == 1, &r[c]);
				printf("%12" PRIu64 "  %-10s %-22s %10.1f "
				       "%8.1f %12" PRIu64 "\n", sizes[i],
				       j ? "jitter" : "constant", name[j][c],
				       r[c].cycles_per_pkt,
				       r[c].cycles_per_pkt / hz * 1e9,
				       r[c].qlen);
			}
			shp_netem_short_ways = true;
			printf("%12s  %-10s %-22s %10.2f\n", "", "",
			       "ratio tfifo/calendar",
			       r[0].cycles_per_pkt / r[1].cycles_per_pkt);
			printf("%12s  %-10s %-22s %10.2f\n", "", "",
			       "ratio whole/short way",
			       r[2].cycles_per_pkt / r[1].cycles_per_pkt);
			fflush(stdout);
		}
	}
	rte_eal_cleanup();
	return 0;
}
