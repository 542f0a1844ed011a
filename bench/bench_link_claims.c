/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 56: each link-wide claim of a link's shards, alone and with two
 * lcores contending, in cycles per burst (32 frames of 64 bytes), side
 * by side in one run. Each claim runs, one after the other:
 *   alone:     one lcore at a time (lcore 0, then lcore 1), as shard 0
 *              and 1 of a link whose other shard is idle;
 *   own:       both lcores at once, each on a link of its own (what two
 *              lcores running at all cost each other on this machine);
 *   contended: both lcores at once, the two shards of one link (the
 *              lines move between them at every burst).
 * The claims, as the stages make them once a burst (a poll):
 *   tbf bucket:    shp_tbf_shared_claim at 4 Tbit/s (the bucket always
 *                  has the burst: the swap's cost, not a wait);
 *   tbf put off:   shp_tbf_shared_claim_defer, the tbf stage's claim
 *                  (a rich bucket is swapped once a quarter of its time);
 *   tbf heads:     shp_tbf_head_put of a new head and
 *                  shp_tbf_head_oldest (sch_tbf.c's oldest first, while
 *                  the bucket is short: both every burst);
 *   fq_codel figs: fq_codel's exchange (sch_fq_codel.c, fqc_link_tick
 *                  and fqc_link_put_backlog): the other's VT and AT read,
 *                  its own VT and AT written, the other's QLEN, MEM, FAT
 *                  and AT read, its own QLEN, MEM, FAT written, every
 *                  figure changed at every burst (the worst case);
 *   bands figs:    the bands' (sch_bands.c): the other's top band read,
 *                  its own head written (moved at every burst, the top
 *                  band steady, as in a flood), the other's lowest band
 *                  and head read;
 * netem's claims (its positions and chains, inside its enqueue call)
 * are bench_netem_chain's, which times that call in the same layouts.
 * Prints cycles per burst per lcore in each layout (a run's mean) and
 * contended / alone (the two lcores' sums), with the share of the
 * contended run the two lcores' loops overlapped and how many times the
 * host took an lcore's CPU away in the claim's runs (involuntary context
 * switches: on a busy machine an lcore waits for its CPU, and the
 * figures are the host's; on a quiet one with the two CPUs free, 100%
 * and 0 or so). Never a test: figures only.
 *
 *   build/bench/bench_link_claims --no-huge -m 256 --no-pci --lcores 0@0,1@1
 */
#define _GNU_SOURCE   /* RUSAGE_THREAD */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "shp_bucket.h"
#include "shp_link.h"
#include "shp_qdisc.h"
#include "tbf_shared.h"

/* bursts a run: of the bucket's claims, of the figures' (a few cycles
 * each: a run of tens of ms still) */
#define ITER  (2 * 1000 * 1000)
#define FITER (20 * 1000 * 1000)
#define BURST 32

enum { K_BUCKET, K_DEFER, K_HEADS, K_FQ, K_BANDS };
enum { L_ALONE, L_OWN, L_ONE, L_NB };

/* figures as the stages number them (sch_fq_codel.c, sch_bands.c) */
enum { FQF_VT, FQF_AT, FQF_QLEN, FQF_MEM, FQF_FAT };
#define BF_TOP  (SHP_LINK_FIG_WORDS - 1)
#define BF_LOW  (SHP_LINK_FIG_WORDS - 2)
#define BF_HEAD (SHP_LINK_FIG_WORDS - 3)

static const struct {
	const char *name;
	int kind;
} claims[] = {
	{ "tbf bucket", K_BUCKET },
	{ "tbf put off", K_DEFER },
	{ "tbf heads", K_HEADS },
	{ "fq_codel figs", K_FQ },
	{ "bands figs", K_BANDS },
};

static struct shp_link_shared one, own[2];
static struct shp_tbf_conf conf;
/* each shard's own, a line apart: never shared between the lcores */
static struct {
	struct shp_tbf_defer d;
} __rte_cache_aligned defer[2];
static double ns_per_tsc;
static volatile int go;
static unsigned int ready, nb_run;
static int kind, layout;
static uint64_t iter;
static double cycles[2];
/* each lcore's loop, first and last TSC: how long the two overlapped */
static uint64_t t_beg[2], t_end[2];
/* the times the host took each lcore's CPU away during its runs */
static long preempt[2];
static volatile uint64_t sink;

static inline uint64_t
now_ns(void)
{
	return (uint64_t)((double)rte_rdtsc() * ns_per_tsc);
}

static long
nivcsw(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

static void
start(void)
{
	__atomic_add_fetch(&ready, 1, __ATOMIC_RELEASE);
	while (!go)
		rte_pause();
}

/* one lcore's bursts of a primitive claim on link block b as shard s */
static double
primitive(struct shp_link_shared *b, uint16_t s)
{
	struct shp_link_state *ls = &b->queue;
	uint16_t o = s ^ 1;   /* the other shard */
	uint32_t wire[BURST];
	uint64_t i, t0, next, pub = 0, acc = 0;
	int j;

	for (j = 0; j < BURST; j++)
		wire[j] = 64;
	start();
	t0 = rte_rdtsc_precise();
	t_beg[s] = t0;
	for (i = 1; i <= iter; i++) {
		switch (kind) {
		case K_BUCKET:
			acc += shp_tbf_shared_claim(&b->rate, &conf, wire,
						    BURST, now_ns(), &next);
			break;
		case K_DEFER:
			acc += shp_tbf_shared_claim_defer(&b->rate, &conf,
							  &defer[s].d, wire,
							  BURST, now_ns(),
							  &next);
			break;
		case K_HEADS:
			shp_tbf_head_put(&b->rate, s, &pub, i);
			acc += shp_tbf_head_oldest(&b->rate, 2, s);
			break;
		case K_FQ:
			acc += shp_link_fig_get(ls, o, FQF_VT);
			acc += shp_link_fig_get(ls, o, FQF_AT);
			shp_link_fig_put(ls, s, FQF_VT, i);
			shp_link_fig_put(ls, s, FQF_AT, i);
			acc += shp_link_fig_get(ls, o, FQF_QLEN);
			acc += shp_link_fig_get(ls, o, FQF_MEM);
			acc += shp_link_fig_get(ls, o, FQF_FAT);
			acc += shp_link_fig_get(ls, o, FQF_AT);
			shp_link_fig_put(ls, s, FQF_QLEN, i);
			shp_link_fig_put(ls, s, FQF_MEM, i);
			shp_link_fig_put(ls, s, FQF_FAT, i);
			break;
		default:   /* K_BANDS */
			acc += shp_link_fig_get(ls, o, BF_TOP);
			shp_link_fig_put(ls, s, BF_HEAD, i);
			if (shp_link_fig_get(ls, o, BF_LOW) != 0)
				acc += shp_link_fig_get(ls, o, BF_HEAD);
			break;
		}
	}
	t_end[s] = rte_rdtsc_precise();
	sink += acc;
	return (double)(t_end[s] - t0) / iter;
}

static int
worker(void *arg)
{
	uint16_t s = (uint16_t)rte_lcore_index(rte_lcore_id());
	struct shp_link_shared *b = layout == L_OWN ? &own[s] : &one;

	long cs = nivcsw();

	(void)arg;
	cycles[s] = primitive(b, s);
	preempt[s] += nivcsw() - cs;
	return 0;
}

/* a run of the lcores of mask (bit i: lcore index i) in layout l */
static void
run(unsigned int mask, int l)
{
	unsigned int lc, i;
	uint64_t t = now_ns();

	memset(&one, 0, sizeof(one));
	memset(own, 0, sizeof(own));
	memset(defer, 0, sizeof(defer));
	shp_tbf_shared_init(&one.rate, &conf, t);
	for (i = 0; i < 2; i++)
		shp_tbf_shared_init(&own[i].rate, &conf, t);
	layout = l;
	go = 0;
	ready = 0;
	nb_run = __builtin_popcount(mask);
	RTE_LCORE_FOREACH_WORKER(lc)
		if (mask & 1u << rte_lcore_index(lc))
			rte_eal_remote_launch(worker, NULL, lc);
	if (mask & 1u) {
		while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < nb_run - 1)
			rte_pause();
		go = 1;
		worker(NULL);
	} else {
		while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < nb_run)
			rte_pause();
		go = 1;
	}
	rte_eal_mp_wait_lcore();
}

/* the share of the longer loop the two ran at the same time (a machine
 * that took a CPU away leaves less contended than the column says) */
static double
overlap(void)
{
	uint64_t b = RTE_MAX(t_beg[0], t_beg[1]), e = RTE_MIN(t_end[0], t_end[1]);
	uint64_t l = RTE_MAX(t_end[0] - t_beg[0], t_end[1] - t_beg[1]);

	return e > b && l > 0 ? (double)(e - b) / (double)l : 0;
}

int
main(int argc, char **argv)
{
	char err[128];
	unsigned int lc, n, r;

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	if (rte_lcore_count() != 2) {
		fprintf(stderr, "bench_link_claims: two lcores (--lcores "
			"0@0,1@1)\n");
		return 2;
	}
	if (shp_tbf_parse("rate 4000gbit burst 1mb limit 100mb", &conf,
			  err) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
	printf("2 lcores, bursts of %d x 64 B, %d bursts a run (figures "
	       "%d), TSC %.2f GHz\n", BURST, ITER, FITER,
	       rte_get_tsc_hz() / 1e9);
	printf("cycles per burst, lcore 0 / lcore 1: alone (the other idle), "
	       "own (both, a link each), contended (both, one link)\n");
	for (r = 0; r < 2; r++) {
		printf("%-17s %-15s %-15s %-15s %s\n", "claim", "alone", "own",
		       "contended", "contended/alone (the two at once)");
		for (n = 0; n < RTE_DIM(claims); n++) {
			double c[L_NB][2], ov;

			preempt[0] = preempt[1] = 0;
			kind = claims[n].kind;
			iter = kind == K_BUCKET || kind == K_DEFER ? ITER : FITER;
			run(1, L_ALONE);
			c[L_ALONE][0] = cycles[0];
			run(2, L_ALONE);
			c[L_ALONE][1] = cycles[1];
			run(3, L_OWN);
			c[L_OWN][0] = cycles[0];
			c[L_OWN][1] = cycles[1];
			run(3, L_ONE);
			c[L_ONE][0] = cycles[0];
			c[L_ONE][1] = cycles[1];
			ov = overlap();
			printf("%-17s", claims[n].name);
			for (lc = 0; lc < L_NB; lc++) {
				char f[32];

				snprintf(f, sizeof(f), "%.1f / %.1f",
					 c[lc][0], c[lc][1]);
				printf(" %-15s", f);
			}
			printf(" x%.2f (%.0f%%, preempted %ld)\n",
			       (c[L_ONE][0] + c[L_ONE][1]) /
			       (c[L_ALONE][0] + c[L_ALONE][1]), 100 * ov,
			       preempt[0] + preempt[1]);
		}
	}
	rte_eal_cleanup();
	return 0;
}
