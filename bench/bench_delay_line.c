/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem's delay line at depth with the per-packet work around it, against
 * the floor, side by side at each depth.
 *
 * One lcore does what the shaper does with net_null copy=1 ports and
 * netem as the root: RX allocates a burst, writes 64 bytes and stamps it
 * (shp_meta_rx); netem takes it; an egress round (shp_egress.h) releases
 * what is due and TX reads what app/worker.c and net_null read (sojourn,
 * lateness, the 64 bytes, pkt_len), records the latency histograms and
 * frees each packet. "floor" does the same RX and TX around a plain FIFO
 * of mbuf pointers (bench_delay_floor's loop): what holding packets costs
 * with no delay line at all. netem/floor is the share of the floor that
 * the delay line keeps.
 *
 * A virtual clock advances STEP_NS per packet and the delay is depth *
 * STEP_NS, so exactly `depth` packets are in flight. Rates are packets
 * per second of the thread's CPU time. Cases: constant
 * delay (the calendar, in time order); jitter of a tenth with 1% loss
 * (buckets sorted, mbufs reused out of order). Figures only: run it
 * pinned (taskset), several times, and compare medians.
 *
 * Usage: bench_delay_line [EAL args] [-- [-p PACKETS] [-c] [-o CASE] DEPTH...]
 *        -o floor|const|jit: that case only (for a profiler).
 *        -c: TX also keeps separate sojourn min/sum/max counters (what
 *        app/worker.c did before the sojourn histogram gave them).
 *        Default depths 1e4 4e4 1.6e5; 5e6 packets per case.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "shp_egress.h"
#include "shp_meta.h"
#include "shp_netem.h"
#include "shp_pool.h"
#include "shp_qdisc.h"
#include "shp_stats.h"

#define BURST 32
#define STEP_NS 50

static uint64_t nb_pkts = 5000000;
static bool old_counters;
static const char *only;   /* -o floor|const|jit: one case (profiling) */
static uint8_t frame[64] = { 0x45 };
static uint8_t sink_pkt[64];

struct txq {
	uint64_t now;
	struct shp_port_ctr pc;
	uint64_t soj_sum, soj_min, soj_max;   /* -c */
	uint64_t sink;
};

/* RX: a burst from the pool, written as net_null copy=1 writes it and
 * stamped as the worker stamps it. */
static void
rx_burst(struct rte_mempool *mp, struct rte_mbuf **m, uint64_t now)
{
	unsigned int i;

	if (rte_pktmbuf_alloc_bulk(mp, m, BURST) != 0) {
		fprintf(stderr, "pool empty\n");
		exit(1);
	}
	for (i = 0; i < BURST; i++) {
		memcpy(rte_pktmbuf_append(m[i], sizeof(frame)), frame,
		       sizeof(frame));
		shp_meta_rx(m[i], now, 0, 0);
	}
}

/* TX: what app/worker.c's tx_burst reads and records, then what net_null
 * copy=1 does with each packet. */
static uint16_t
tx_burst(void *arg, struct rte_mbuf **pkts, uint16_t n, uint64_t now,
	 uint64_t bytes, uint64_t shed)
{
	struct txq *t = arg;
	struct shp_port_ctr *pc = &t->pc;
	uint64_t soj[BURST * 2], tts[BURST * 2], b = 0;
	uint16_t i;

	(void)shed;   /* max_late 0: never */

	for (i = 0; i < n; i++) {
		const struct shp_meta *meta = shp_meta(pkts[i]);
		int64_t d = (int64_t)(now - meta->rx_ns);

		soj[i] = d > 0 ? (uint64_t)d : 0;
		tts[i] = meta->time_to_send;
	}
	for (i = 0; i < n; i++) {
		memcpy(sink_pkt, rte_pktmbuf_mtod(pkts[i], void *),
		       sizeof(sink_pkt));
		b += pkts[i]->pkt_len;
		rte_pktmbuf_free(pkts[i]);
	}
	if (old_counters) {
		uint64_t sum = 0, mn = t->soj_min, mx = t->soj_max;

		for (i = 0; i < n; i++) {
			sum += soj[i];
			mn = RTE_MIN(mn, soj[i]);
			mx = RTE_MAX(mx, soj[i]);
		}
		t->soj_sum += sum;
		t->soj_min = mn;
		t->soj_max = mx;
	}
	pc->tx_packets += n;
	pc->tx_bytes += bytes != UINT64_MAX ? bytes : b;
	t->sink += sink_pkt[0];
	shp_latency_record_tx(pc->lat, soj, tts, n, now);
	return n;
}

static uint64_t
tx_now(void *arg)
{
	return ((struct txq *)arg)->now;
}

static struct rte_mempool *
make_pool(uint64_t depth)
{
	static unsigned int nb;
	char name[32];
	struct rte_mempool *mp;

	snprintf(name, sizeof(name), "line%u", nb++);
	/* laid out as the shaper's (shp_pool.h) */
	mp = shp_pool_create(name, depth + 40000 + 4096, 256,
			     SHP_MBUF_PRIV_SIZE, RTE_MBUF_DEFAULT_BUF_SIZE,
			     SOCKET_ID_ANY, NULL, shp_pool_pack_default());
	if (mp == NULL) {
		fprintf(stderr, "pool: %s\n", rte_strerror(rte_errno));
		exit(1);
	}
	return mp;
}

/*
 * The thread's CPU time, not the TSC: on a shared machine the other
 * tenants' time slices on this CPU would count as ours. (Their use of the
 * caches and of memory still shows: compare medians of runs.)
 */
static uint64_t
cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double
mpps(uint64_t pkts, uint64_t ns)
{
	return (double)pkts / (double)ns * 1e3;
}

/* The floor: the same RX and TX around a FIFO of mbuf pointers, the next
 * burst's headers, metadata and data prefetched a burst ahead. */
static double
run_floor(uint64_t depth, struct txq *t)
{
	struct rte_mempool *mp = make_pool(depth);
	uint64_t cap = rte_align64pow2(depth + 2 * BURST), head = 0, tail = 0;
	struct rte_mbuf **fifo = calloc(cap, sizeof(*fifo));
	struct rte_mbuf *in[BURST], *out[BURST];
	uint64_t done = 0, t0 = 0, sent = 0;
	unsigned int i;

	if (fifo == NULL)
		exit(1);
	while (done < nb_pkts + depth) {
		if (t0 == 0 && done >= depth) {
			t0 = cpu_ns();
			sent = 0;
		}
		t->now += BURST * STEP_NS;
		rx_burst(mp, in, t->now);
		for (i = 0; i < BURST; i++)
			fifo[tail++ & (cap - 1)] = in[i];
		done += BURST;
		if (tail - head <= depth)
			continue;
		for (i = 0; i < BURST; i++)
			out[i] = fifo[head++ & (cap - 1)];
		for (i = 0; i < BURST && head + i < tail; i++) {
			char *m = (char *)fifo[(head + i) & (cap - 1)];

			rte_prefetch0(m);
			rte_prefetch0(m + RTE_CACHE_LINE_SIZE);
			rte_prefetch0(m + 2 * RTE_CACHE_LINE_SIZE);
			rte_prefetch0(m + sizeof(struct rte_mbuf) +
				      SHP_MBUF_PRIV_SIZE + RTE_PKTMBUF_HEADROOM);
		}
		sent += tx_burst(t, out, BURST, t->now, UINT64_MAX, 0);
	}
	t0 = cpu_ns() - t0;
	while (head != tail)
		rte_pktmbuf_free(fifo[head++ & (cap - 1)]);
	free(fifo);
	rte_mempool_free(mp);
	return mpps(sent, t0);
}

/* netem as the root, released by shp_egress_round. */
static double
run_netem(uint64_t depth, bool jitter, struct txq *t)
{
	struct rte_mempool *mp = make_pool(depth);
	const struct shp_egress_io io = { .now = tx_now, .tx = tx_burst,
					  .arg = t };
	uint64_t d = depth * STEP_NS, done = 0, t0 = 0, sent = 0;
	struct shp_ctx ctx = { .ctr = &t->pc };
	struct rte_mbuf *in[BURST], *pkts[BURST];
	char args[160], err[SHP_ERR_LEN];
	struct shp_netem_conf *conf;
	struct shp_qdisc *q;
	struct shp_round r;

	if (jitter)
		snprintf(args, sizeof(args), "limit %" PRIu64 " delay %"
			 PRIu64 "ns %" PRIu64 "ns loss 1%%", 2 * depth + 4096,
			 d, d / 10);
	else
		snprintf(args, sizeof(args), "limit %" PRIu64 " delay %"
			 PRIu64 "ns", 2 * depth + 4096, d);
	conf = shp_netem_parse(args, err);
	if (conf == NULL) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	q = shp_qdisc_create(&shp_netem_ops, NULL, mp, 0, SOCKET_ID_ANY, conf);
	if (q == NULL)
		exit(1);
	while (done < nb_pkts + depth) {
		if (t0 == 0 && done >= depth) {
			t0 = cpu_ns();
			sent = t->pc.tx_packets;
		}
		t->now += BURST * STEP_NS;
		rx_burst(mp, in, t->now);
		ctx.now = t->now;
		shp_qdisc_enqueue(q, in, BURST, &ctx);
		done += BURST;
		shp_egress_round(q, &ctx, &io, pkts, BURST, 64 * BURST, 0, false,
				 &r);
	}
	t0 = cpu_ns() - t0;
	sent = t->pc.tx_packets - sent;
	q->ops->reset(q, &ctx);
	shp_qdisc_destroy(q);
	shp_netem_conf_free(conf);
	rte_mempool_free(mp);
	return mpps(sent, t0);
}

int
main(int argc, char **argv)
{
	uint64_t depths[16] = { 10000, 40000, 160000 };
	unsigned int i, nb = 3;
	struct txq t;
	int n;

	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 1;
	}
	if (n + 1 < argc)
		nb = 0;
	for (i = n + 1; i < (unsigned int)argc; i++) {
		if (strcmp(argv[i], "-c") == 0)
			old_counters = true;
		else if (strcmp(argv[i], "-o") == 0 && i + 1 < (unsigned)argc)
			only = argv[++i];
		else if (strcmp(argv[i], "-p") == 0 && i + 1 < (unsigned)argc)
			nb_pkts = strtoull(argv[++i], NULL, 0);
		else if (nb < RTE_DIM(depths))
			depths[nb++] = strtoull(argv[i], NULL, 0);
	}
	if (nb == 0) {
		depths[0] = 10000;
		depths[1] = 40000;
		depths[2] = 160000;
		nb = 3;
	}
	memset(&t, 0, sizeof(t));
	t.soj_min = UINT64_MAX;
	t.pc.lat = rte_malloc(NULL, sizeof(*t.pc.lat), RTE_CACHE_LINE_SIZE);
	if (t.pc.lat == NULL)
		return 1;
	shp_latency_init(t.pc.lat);
	printf("delay line at depth: RX + netem + egress round + TX (net_null "
	       "copy=1 work), one lcore, %" PRIu64 " packets per case%s\n",
	       nb_pkts, old_counters ? ", separate sojourn counters" : "");
	printf("%10s %10s %10s %10s %10s %10s\n", "in flight", "floor",
	       "const", "jit+loss", "const/fl", "jit/fl");
	for (i = 0; i < nb; i++) {
#define WANT(x) (only == NULL || strcmp(only, x) == 0)
		double f = WANT("floor") ? run_floor(depths[i], &t) : 1;
		double c = WANT("const") ? run_netem(depths[i], false, &t) : 0;
		double j = WANT("jit") ? run_netem(depths[i], true, &t) : 0;
#undef WANT

		printf("%10" PRIu64 " %10.2f %10.2f %10.2f %10.2f %10.2f\n",
		       depths[i], f, c, j, c / f, j / f);
		fflush(stdout);
	}
	rte_free(t.pc.lat);
	rte_eal_cleanup();
	return t.sink == 42 ? 2 : 0;
}
