/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The floor under a delay line that holds bytes (issue 25), next to
 * bench_delay_floor (the floor under one that holds mbufs), and netem's
 * time queue measured against it at the same depth.
 *
 *   floor:      one lcore does what net_null + testpmd do per packet
 *               (allocate a burst, write 64 bytes), copies each frame
 *               with its descriptor into a byte FIFO written and read in
 *               order (records of netem's size: shp_tq_store_rec_size),
 *               frees the burst at once (hot), and D packets later takes
 *               a hot burst from the pool, copies the bytes back, reads
 *               them and frees them. Nothing is sorted, nothing timed.
 *   tq store:   the same traffic through netem's time queue (calendar +
 *               byte store, lib/sched/netem/netem_tq.c) on a virtual clock: arrivals
 *               at RATE, each due DELAY later (D = RATE x DELAY in
 *               flight), released as they fall due.
 *   tq mbufs:   the same with the store off: every packet waits in its
 *               mbuf (the code before issue 25).
 * Figures only; run on a quiet machine for numbers to compare.
 *
 * Usage: bench_store_floor [EAL args] [-- [-r MPPS] [-j JITTER_NS]
 *                           [-n PACKETS] [-s BYTES] [-f] DELAY_NS...]
 *        -f: the floor only (scripts/bench-forward.sh runs it beside
 *        testpmd and the shaper in every round)
 *        -s: frames of BYTES (64 by default, at most 1500): where copying
 *        the frame costs more than the cold mbuf it saves is the store's
 *        threshold (netem's `store`, SHP_NETEM_STORE_DEFAULT)
 *        default: 14.88 Mpps (10GbE at 64 B), 10 ms (148,800 in flight),
 *        no jitter, 1e7 packets per case; needs ~600 MB for the mbuf case
 *        (-m 1024 with --no-huge).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_prefetch.h>

#include "netem_tq.h"
#include "shp_meta.h"
#include "shp_netem.h"
#include "shp_pool.h"

#define BURST 32

static uint8_t frame[2048] = { 0x45 };
static uint16_t flen = 64;   /* -s: the frames' size */
static uint64_t npkts = 10000000;

/* the descriptor the floor keeps: the fields netem's record keeps for a
 * frame with no TX offload and no dynamic field (its 48 bytes) */
struct rec {
	uint64_t tts, cls, ol_flags, hash;
	uint32_t packet_type, rx_ago;
	uint16_t len, port, vlan_tci, vlan_tci_outer;
} __rte_aligned(16);

static void
rx_burst(struct rte_mempool *mp, struct rte_mbuf **in, uint64_t now)
{
	unsigned int i;

	if (rte_pktmbuf_alloc_bulk(mp, in, BURST) != 0) {
		fprintf(stderr, "pool empty\n");
		exit(1);
	}
	for (i = 0; i < BURST; i++) {
		memcpy(rte_pktmbuf_append(in[i], flen), frame, flen);
		shp_meta_init(in[i], now);
	}
}

static uint64_t
tx_burst(struct rte_mbuf **out, unsigned int n)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		sum += out[i]->pkt_len + shp_meta(out[i])->rx_ns +
		       *rte_pktmbuf_mtod(out[i], uint8_t *);
	rte_pktmbuf_free_bulk(out, n);
	return sum;
}

static double
mpps_since(uint64_t t0, uint64_t sent)
{
	return (double)sent / ((double)(rte_rdtsc() - t0) /
			       rte_get_tsc_hz()) / 1e6;
}

static double
run_floor(struct rte_mempool *mp, uint64_t depth, uint64_t *sink)
{
	size_t rs = shp_tq_store_rec_size_plain(flen);
	size_t cap = rte_align64pow2((depth + 2 * BURST) * rs);
	/* a record starts anywhere in [0, cap): one may run rs past the end */
	char *st = rte_malloc(NULL, cap + rs, RTE_CACHE_LINE_SIZE);
	struct rte_mbuf *in[BURST], *out[BURST];
	uint64_t head = 0, tail = 0, done = 0, t0 = 0, sent = 0, sum = 0;
	unsigned int i;

	if (st == NULL) {
		fprintf(stderr, "no memory for the floor's store\n");
		exit(1);
	}
	while (done < npkts + depth) {
		if (t0 == 0 && done >= depth) {
			t0 = rte_rdtsc();
			sent = 0;
		}
		rx_burst(mp, in, done);
		for (i = 0; i < BURST; i++) {
			struct rte_mbuf *m = in[i];
			struct rec *r = (struct rec *)(st + (tail & (cap - 1)));
			const struct shp_meta *meta = shp_meta(m);

			r->tts = meta->time_to_send;
			r->rx_ago = (uint32_t)(r->tts - meta->rx_ns);
			r->cls = meta->cls;
			r->ol_flags = m->ol_flags;
			memcpy(&r->hash, &m->hash, sizeof(r->hash));
			r->packet_type = m->packet_type;
			r->len = (uint16_t)m->pkt_len;
			r->port = m->port;
			r->vlan_tci = m->vlan_tci;
			r->vlan_tci_outer = m->vlan_tci_outer;
			rte_memcpy(r + 1, rte_pktmbuf_mtod(m, void *),
				   m->pkt_len);
			tail += rs;
		}
		rte_pktmbuf_free_bulk(in, BURST);
		done += BURST;
		if ((tail - head) / rs <= depth)
			continue;
		if (rte_pktmbuf_alloc_bulk(mp, out, BURST) != 0) {
			fprintf(stderr, "pool empty\n");
			exit(1);
		}
		for (i = 0; i < BURST; i++) {
			const struct rec *r = (const struct rec *)
				(st + (head & (cap - 1)));
			struct rte_mbuf *m = out[i];
			struct shp_meta *meta = shp_meta(m);

			rte_memcpy(rte_pktmbuf_mtod(m, void *), r + 1, r->len);
			m->data_len = m->pkt_len = r->len;
			m->port = r->port;
			m->ol_flags = r->ol_flags;
			m->packet_type = r->packet_type;
			memcpy(&m->hash, &r->hash, sizeof(r->hash));
			m->vlan_tci = r->vlan_tci;
			m->vlan_tci_outer = r->vlan_tci_outer;
			m->tx_offload = 0;
			memset(m->dynfield1, 0, sizeof(m->dynfield1));
			meta->rx_ns = r->tts - r->rx_ago;
			meta->time_to_send = r->tts;
			meta->cls = r->cls;
			head += rs;
		}
		sum += tx_burst(out, BURST);
		sent += BURST;
	}
	*sink += sum;
	rte_free(st);
	return mpps_since(t0, sent);
}

/* netem's time queue at RATE with every packet due DELAY (+- JITTER)
 * after its arrival; store: the threshold (0: every packet keeps its
 * mbuf). */
static double
run_tq(struct rte_mempool *mp, double mpps, uint64_t delay, uint64_t jitter,
       uint32_t store, uint64_t *sink, uint64_t *hwm)
{
	uint64_t depth = (uint64_t)(mpps * (double)delay / 1e3);
	double gap = 1e3 / mpps;   /* ns between arrivals */
	struct rte_mbuf *in[BURST], *out[BURST];
	uint64_t done = 0, t0 = 0, sent = 0, sum = 0, now = 0, x = 88172645;
	struct shp_tq q;
	unsigned int i;
	uint16_t k;

	if (!shp_tq_init(&q, SHP_NETEM_TQ_BUCKETS, (uint32_t)(depth * 2),
			 SOCKET_ID_ANY) ||
	    !shp_tq_store_init(&q, (depth * 2 + 65536) *
			       shp_tq_store_rec_size(flen), mp)) {
		fprintf(stderr, "no memory for the time queue\n");
		exit(1);
	}
	shp_tq_set_horizon(&q, delay + jitter, 2 * jitter);
	shp_tq_store_set(&q, store > 0 ? RTE_MAX(store, (uint32_t)flen) : 0);
	while (done < npkts + depth) {
		if (t0 == 0 && done >= depth) {
			t0 = rte_rdtsc();
			sent = 0;
		}
		now = (uint64_t)((double)done * gap);
		rx_burst(mp, in, now);
		for (i = 0; i < BURST; i++) {
			uint64_t d = delay;

			if (jitter > 0) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				d = delay - jitter + x % (2 * jitter);
			}
			shp_meta(in[i])->time_to_send = now + d;
			shp_tq_insert(&q, in[i], now);
		}
		done += BURST;
		while ((k = shp_tq_dequeue_due(&q, now, out, BURST)) > 0) {
			sum += tx_burst(out, k);
			sent += k;
		}
	}
	*sink += sum;
	*hwm = q.st_stats.hwm;
	{
		double r = mpps_since(t0, sent);

		shp_tq_fini(&q);
		return r;
	}
}

int
main(int argc, char **argv)
{
	uint64_t delays[8] = { 10000000 }, sink = 0, jitter = 0, hwm = 0;
	unsigned int i, nb = 1;
	struct rte_mempool *mp;
	double rate = 14.88;
	bool floor_only = false;
	int n;

	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 1;
	}
	i = n + 1;
	for (; i < (unsigned int)argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-r") == 0 && i + 1 < (unsigned)argc)
			rate = strtod(argv[++i], NULL);
		else if (strcmp(argv[i], "-j") == 0 && i + 1 < (unsigned)argc)
			jitter = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-n") == 0 && i + 1 < (unsigned)argc)
			npkts = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-f") == 0)
			floor_only = true;
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < (unsigned)argc)
			flen = (uint16_t)RTE_MIN(strtoul(argv[++i], NULL, 10),
						 1500ul);
	}
	if (i < (unsigned int)argc) {
		nb = 0;
		for (; i < (unsigned int)argc && nb < RTE_DIM(delays); i++)
			delays[nb++] = strtoull(argv[i], NULL, 10);
	}
	printf("%u B frames at %.2f Mpps (virtual clock for the time queue), "
	       "jitter %" PRIu64 " ns, %" PRIu64 " packets per case, one "
	       "lcore; record %zu B\n", flen, rate, jitter, npkts,
	       shp_tq_store_rec_size_plain(flen));
	printf("%10s %10s %10s %12s %12s %10s %12s\n", "delay ms", "in flight",
	       "floor", "tq store", "tq mbufs", "store/flr",
	       "store hwm MB");
	for (i = 0; i < nb; i++) {
		uint64_t depth = (uint64_t)(rate * (double)delays[i] / 1e3);
		double f, s, m;

		/* laid out as the shaper's (shp_pool.h) */
		mp = shp_pool_create("sfloor", depth + depth / 4 + 8192, 256,
				     SHP_MBUF_PRIV_SIZE,
				     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY,
				     NULL, shp_pool_pack_default());
		if (mp == NULL) {
			fprintf(stderr, "pool: %s\n", rte_strerror(rte_errno));
			return 1;
		}
		f = run_floor(mp, depth, &sink);
		if (floor_only) {
			printf("%10.3f %10" PRIu64 " %10.2f %12s %12s %10s "
			       "%12s\n", (double)delays[i] / 1e6, depth, f,
			       "-", "-", "-", "-");
			fflush(stdout);
			rte_mempool_free(mp);
			continue;
		}
		s = run_tq(mp, rate, delays[i], jitter, 256, &sink, &hwm);
		m = run_tq(mp, rate, delays[i], jitter, 0, &sink, &(uint64_t){0});
		printf("%10.3f %10" PRIu64 " %10.2f %12.2f %12.2f %10.2f %12.1f\n",
		       (double)delays[i] / 1e6, depth, f, s, m, s / f,
		       (double)hwm / 1e6);
		fflush(stdout);
		rte_mempool_free(mp);
	}
	rte_eal_cleanup();
	return sink == 42 ? 2 : 0;
}
