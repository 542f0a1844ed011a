/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TX round and the overload rule (lib/core/shp_egress.h) on a virtual clock:
 * a simulated lcore with a cost per packet, fed without limit (as net_null
 * feeds it), through bands -> netem 'delay 1ms'. A hiccup (the lcore
 * descheduled for 500 us) leaves a backlog of overdue packets; the chain
 * must then be behind, drop arrivals as overload, work the backlog off,
 * and admit again once caught up, with every packet accounted for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sch_bands.h"
#include "shp_egress.h"
#include "shp_netem.h"
#include "shp_rig.h"
#include "shp_stall.h"
#include "shp_cpu_lost.h"

#define BURST     32
#define TX_NS     150     /* per packet: dequeue, netem, transmit */
#define RX_NS     40      /* per packet: classify, enqueue */
#define DROP_NS   5       /* per packet dropped at RX */
#define LOOP_NS   20      /* a loop's fixed work */
#define DELAY_NS  1000000
#define HICCUP_AT 20000000
#define HICCUP_NS 500000
#define RUN_NS    60000000
#define MAX_LATE  100000

struct sim {
	uint64_t vt;                 /* the virtual clock */
	uint64_t offered, admitted, overload, sent;
	uint64_t max_late_after;     /* lateness once caught up */
	uint64_t max_late_all;
	uint64_t first_overload, last_overload;
	uint64_t shadow_from, shadow_to; /* due then: hiccup's shadow */
	uint64_t trace_ms;          /* from when max_late_after counts */
	uint64_t late_drop;         /* --late-drop (0: off) */
	bool no_shed;               /* a round sends its backlog late */
	struct shp_port_ctr *pc;    /* the rig's counters */
};

static uint64_t
sim_now(void *arg)
{
	return ((struct sim *)arg)->vt;
}

static uint16_t
sim_tx(void *arg, struct rte_mbuf **pkts, uint16_t n, uint64_t now,
       uint64_t bytes, uint64_t shed)
{
	struct sim *s = arg;
	uint64_t late = shp_late_bound(s->late_drop, s->no_shed ? 0 : shed);
	uint16_t i, d = 0;

	if (late != 0) {
		uint64_t bytes = UINT64_MAX;

		d = shp_drop_late(s->pc, pkts, n, now, late, &bytes, NULL);
		pkts += d;
		n -= d;
		s->vt += (uint64_t)d * DROP_NS;
	}
	for (i = 0; i < n; i++) {
		uint64_t due = shp_due_time(pkts[i]);
		uint64_t late = now > due ? now - due : 0;

		if (late > s->max_late_all)
			s->max_late_all = late;
		if ((due < s->shadow_from || due >= s->shadow_to) &&
		    late > s->max_late_after)
			s->max_late_after = late;
	}
	s->sent += n;
	s->vt += (uint64_t)n * TX_NS;
	rte_pktmbuf_free_bulk(pkts, n);
	return d + n;
}

static uint64_t late_drops(const struct sim *s);

static void
run(struct sim *s, unsigned int budget, uint64_t max_late, bool pace,
    double mpps, bool hiccup)
{
	struct shp_rig rig;
	struct shp_qdisc *bands, *root;
	const struct shp_egress_io io = { .now = sim_now, .tx = sim_tx,
					  .arg = s };
	struct rte_mbuf *pkts[BURST];
	struct shp_round r = { 0 };
	struct shp_admit adm = { 0 };
	bool hiccup_done = false;
	uint64_t held, arrived = 0, cost, shed;
	unsigned int d;
	uint16_t got;

	shp_rig_chain(&rig, "bands 1 ring 8192",
		      "netem delay 1ms limit 100000");
	bands = rig.stage[0];
	root = rig.root;
	s->pc = rig.c;

	while (s->vt < RUN_NS) {
		uint16_t n;
		uint64_t t0;

		s->vt += LOOP_NS;
		t0 = s->vt;

		shed = late_drops(s);
		shp_egress_round(root, &rig.ctx, &io, pkts, BURST, budget,
				 max_late, r.behind, &r);
		if (getenv("EG_TRACE") && s->vt / 1000000 != s->trace_ms) {
			s->trace_ms = s->vt / 1000000;
			printf("t=%" PRIu64 "ms late_all=%" PRIu64 " adm=%" PRIu64
			       " ovl=%" PRIu64 " sent=%" PRIu64 "\n", s->trace_ms,
			       s->max_late_all, s->admitted, s->overload,
			       s->sent);
			s->max_late_all = 0;
		}
		if (hiccup && !hiccup_done && s->vt >= HICCUP_AT) {
			s->vt += HICCUP_NS;   /* descheduled */
			hiccup_done = true;
		}
		shed = shp_cost_count(&r, BURST, late_drops(s) - shed);
		if (shed != 0)
			shp_cost_sample(&adm.tx, s->vt - t0, shed);
		/* RX: what arrived since the last poll, at most a burst
		 * (mpps 0: the input never runs dry, as net_null); not
		 * polled without credit for half a burst */
		cost = pace ? shp_admit_cost(&adm) : 0;
		shp_admit_refill(&adm, s->vt, cost, BURST);
		if (!r.behind && !shp_admit_ready(&adm, cost, BURST))
			continue;
		got = BURST;
		if (mpps > 0) {
			uint64_t due = (uint64_t)(s->vt * mpps / 1000.0);

			got = due - arrived > BURST ? BURST : due - arrived;
			arrived += got;
			if (got == 0) {
				s->vt += 100;   /* an empty poll */
				continue;
			}
		}
		s->offered += got;
		n = r.behind ? 0 : got;
		if (pace && n > 0)
			n = shp_admit(&adm, n, cost);
		if (n < got) {
			s->overload += got - n;
			if (s->first_overload == 0)
				s->first_overload = s->vt;
			s->last_overload = s->vt;
			s->vt += (uint64_t)(got - n) * DROP_NS;
			if (pace)
				shp_admit_charge(&adm,
						 (uint64_t)(got - n) * DROP_NS);
		}
		if (n == 0)
			continue;
		t0 = s->vt;
		shp_rig_pkts(pkts, n, 64, 0, NULL, s->vt);
		/* the bands own all n: queued, or dropped by cause */
		shp_qdisc_enqueue(bands, pkts, n, &rig.ctx);
		s->admitted += n;
		s->vt += (uint64_t)n * RX_NS;
		if (2 * n >= BURST)
			shp_cost_sample(&adm.rx, s->vt - t0, n);
	}
	held = shp_qdisc_qlen_total(root);
	/* conservation: everything admitted was sent, is held, or dropped
	 * under a named cause */
	{
		uint64_t dropped = 0;

		for (d = 0; d < shp_drop_nb(); d++)
			dropped += rig.c->drops[d];
		assert_int_equal(s->admitted, s->sent + held + dropped);
	}
	shp_rig_fini(&rig);   /* and all 50000 mbufs are back */
}

/*
 * A pipeline: an RX lcore and a TX lcore, each on its own virtual clock,
 * the one behind running its next loop (two CPUs). RX admits at what the
 * TX lcore can release (shp_admit_cost_rx, on the cost the TX lcore
 * publishes: shp_load_cost), into the bands; TX runs rounds of up to 2
 * bursts, as a TX-only lcore does.
 */
struct pipe {
	struct sim tx;              /* the TX lcore: vt, sent, lateness */
	uint64_t vr;                /* the RX lcore's clock */
	uint64_t tx_stall_at, tx_stall_ns;  /* the host takes TX's CPU */
	uint64_t tx_share_every;    /* and every this long, for tx_stall_ns */
	uint64_t stall_ns;          /* what the TX lcore lost */
	uint64_t band_full;
};

static void
run_pipe(struct pipe *p, uint64_t max_late, double mpps)
{
	struct sim *s = &p->tx;
	struct shp_rig rig;
	struct shp_qdisc *bands, *root;
	const struct shp_egress_io io = { .now = sim_now, .tx = sim_tx,
					  .arg = s };
	struct rte_mbuf *pkts[BURST];
	struct shp_round r = { 0 };
	struct shp_admit rxa = { 0 };
	struct shp_load load = { 0 };
	struct shp_ctx rctx;
	uint64_t held, arrived = 0, next_pub = 0, dropped = 0, shed;
	volatile bool behind = false;
	uint32_t tx_pub = 0;
	bool stalled = false;
	unsigned int d;

	shp_rig_chain(&rig, "bands 1 ring 1024",
		      "netem delay 1ms limit 100000");
	bands = rig.stage[0];
	root = rig.root;
	s->pc = rig.c;
	rctx = rig.ctx;

	while (s->vt < RUN_NS || p->vr < RUN_NS) {
		if (s->vt <= p->vr) {
			uint64_t t0;

			/* TX lcore: one loop */
			s->vt += LOOP_NS;
			if (p->tx_stall_ns != 0 && !stalled &&
			    s->vt >= p->tx_stall_at) {
				s->vt += p->tx_stall_ns;
				p->stall_ns += p->tx_stall_ns;
				stalled = p->tx_share_every == 0;
				p->tx_stall_at += p->tx_share_every;
			}
			t0 = s->vt;
			shed = late_drops(s);
			shp_egress_round(root, &rig.ctx, &io, pkts, BURST,
					 2 * BURST, max_late, r.behind, &r);
			shed = late_drops(s) - shed;
			/* as app/worker.c: the whole round's time over what
			 * the port took, summed (shp_load) */
			shp_load_add(&load, 0, 0, s->vt - t0,
				     shp_round_sent(&r, shed), shed);
			behind = r.behind;
			if (getenv("EG_TRACE") &&
			    s->vt / 1000000 != s->trace_ms) {
				s->trace_ms = s->vt / 1000000;
				printf("t=%" PRIu64 "ms adm=%" PRIu64 " ovl=%"
				       PRIu64 " sent=%" PRIu64 " late=%" PRIu64
				       " tx_ns=%u\n", s->trace_ms, s->admitted,
				       s->overload, s->sent, late_drops(s),
				       tx_pub >> SHP_COST_SHIFT);
			}
			if (s->vt >= next_pub) {   /* now and then */
				tx_pub = shp_load_cost(&load, s->vt, tx_pub);
				next_pub = s->vt + 50000;
			}
			continue;
		}
		/* RX lcore: one poll */
		{
			uint64_t cost = shp_admit_cost_rx(&rxa, tx_pub, 1);
			uint16_t got = BURST, n;
			uint64_t t0;

			p->vr += LOOP_NS;
			if (!behind && !shp_admit_ready(&rxa, cost, BURST)) {
				shp_admit_refill(&rxa, p->vr, cost, BURST);
				if (!shp_admit_ready(&rxa, cost, BURST))
					continue;
			}
			if (mpps > 0) {
				uint64_t due = (uint64_t)(p->vr * mpps /
							  1000.0);

				got = due - arrived > BURST ? BURST :
							      due - arrived;
				arrived += got;
				if (got == 0) {
					p->vr += 100;
					continue;
				}
			}
			shp_admit_refill(&rxa, p->vr, cost, BURST);
			s->offered += got;
			n = behind ? 0 : shp_admit(&rxa, got, cost);
			if (n < got) {
				s->overload += got - n;
				p->vr += (uint64_t)(got - n) * DROP_NS;
				shp_admit_charge(&rxa,
						 (uint64_t)(got - n) * DROP_NS);
			}
			if (n == 0)
				continue;
			t0 = p->vr;
			shp_rig_pkts(pkts, n, 64, 0, NULL, p->vr);
			rctx.now = p->vr;
			shp_qdisc_enqueue(bands, pkts, n, &rctx);
			s->admitted += n;
			p->vr += (uint64_t)n * RX_NS;
			shp_cost_sample(&rxa.rx, p->vr - t0, n);
		}
	}
	held = shp_qdisc_qlen_total(root);
	for (d = 0; d < shp_drop_nb(); d++)
		dropped += rig.c->drops[d];
	p->band_full = rig.c->drops[shp_drop_index("band_full")];
	assert_int_equal(s->admitted, s->sent + held + dropped);
	shp_rig_fini(&rig);
}

static uint64_t
late_drops(const struct sim *s)
{
	return s->pc->drops[shp_drop_index("late")];
}

/*
 * Offered without limit (net_null): arrivals are paced at what the lcore
 * carries and the excess is overload from the start, so that no packet
 * leaves late, not even one delay after the start, when the delay line
 * first fills (admitting is cheaper than releasing). A hiccup leaves a
 * backlog: what of it is later than max_late is shed as `late`, nothing
 * sent is later than that, and once caught up every packet leaves within
 * a couple of rounds. Without shedding the same hiccup's backlog leaves
 * up to the whole hiccup late.
 */
static void
test_overload_paced(void **state)
{
	struct sim s = { 0 }, ref = { .no_shed = true };

	s.shadow_from = ref.shadow_from = HICCUP_AT;
	s.shadow_to = ref.shadow_to = HICCUP_AT + HICCUP_NS + 2 * DELAY_NS;
	run(&s, 8 * BURST, MAX_LATE, true, 0, true);
	if (getenv("EG_TRACE"))
		printf("late after %" PRIu64 " all %" PRIu64 " adm %" PRIu64
		       " ovl %" PRIu64 " shed %" PRIu64 "\n", s.max_late_after,
		       s.max_late_all, s.admitted, s.overload, late_drops(&s));
	assert_true(s.overload > 0);
	/* a round is at most 8 bursts out and one in: ~30 us */
	assert_true(s.max_late_after < 50000);
	assert_true(s.max_late_all <= MAX_LATE);
	/* the hiccup's 500 us at ~5 Mpps: most of its ~2500 packets */
	assert_true(late_drops(&s) > 1000);
	assert_true(late_drops(&s) < 3000);
	/* the lcore is kept busy: admitted near 1 / (RX_NS + TX_NS), less
	 * the margin, the hiccup and the drops */
	assert_true(s.admitted > (uint64_t)(0.7 * RUN_NS / (RX_NS + TX_NS)));
	assert_int_equal(s.offered, s.admitted + s.overload);

	run(&ref, 8 * BURST, MAX_LATE, true, 0, true);
	assert_true(ref.max_late_all >= HICCUP_NS / 2);
	assert_int_equal(late_drops(&ref), 0);
	assert_true(ref.max_late_after < 50000);
}

/*
 * At a low rate the same hiccup leaves one burst due, nothing behind it:
 * that is a host's hiccup, not a backlog, and it is sent, late, not
 * shed (dropping it would turn the hiccup into loss).
 */
static void
test_lone_late_burst_sent(void **state)
{
	struct sim s = { 0 };

	run(&s, 8 * BURST, MAX_LATE, true, 0.02, true);   /* 10 in 500 us */
	assert_int_equal(late_drops(&s), 0);
	assert_int_equal(s.overload, 0);
	assert_true(s.max_late_all >= HICCUP_NS / 2);
	assert_true(s.max_late_all <= HICCUP_NS + 10000);
}

/* Below capacity nothing is dropped and nothing is late. */
static void
test_below_capacity_no_overload(void **state)
{
	struct sim s = { 0 };

	run(&s, 8 * BURST, MAX_LATE, true, 4.0, false);  /* cap ~5.3 */
	assert_int_equal(s.overload, 0);
	assert_true(s.offered > 0.99 * 4.0 * RUN_NS / 1000);
	assert_true(s.max_late_after < 50000);
}

/* Dropping only once behind, without pacing (or shedding): the start's
 * cheap admission makes the chain late by up to a delay, again and
 * again. */
static void
test_behind_alone_oscillates(void **state)
{
	struct sim s = { .no_shed = true };

	s.shadow_from = HICCUP_AT;
	s.shadow_to = HICCUP_AT + HICCUP_NS + 2 * DELAY_NS;
	run(&s, 8 * BURST, MAX_LATE, false, 0, false);
	assert_true(s.overload > 0);
	assert_true(s.max_late_after > DELAY_NS / 4);
}

/*
 * Without the rule and with one burst per round (how the TX loop worked
 * before): once netem counted a packet's delay from when it took it from
 * the bands, a hiccup left the chain late for good, the backlog carried
 * from round to round in the bands. Counted from the packet's arrival
 * (what the profile says), the backlog is worked off within the delay and
 * what is due after the hiccup's shadow leaves on time.
 */
static void
test_one_burst_per_round_catches_up(void **state)
{
	struct sim s = { 0 };

	s.shadow_from = 0;
	s.shadow_to = HICCUP_AT + HICCUP_NS + 3 * DELAY_NS;
	run(&s, BURST, 0, true, 0, true);
	assert_true(s.max_late_all >= HICCUP_NS / 2);
	assert_true(s.max_late_after < 50000);
}

/*
 * --late-drop: the same hiccup, but what would leave more than 20 us late
 * is dropped as `late` instead: nothing sent is later than that, the
 * hiccup's backlog is worked off sooner (a drop costs less than a send),
 * and every packet is still accounted for (run() checks).
 */
static void
test_late_drop_bounds_lateness(void **state)
{
	struct sim s = { .late_drop = 20000 };
	struct sim ref = { .no_shed = true };

	run(&s, 8 * BURST, MAX_LATE, true, 0, true);
	assert_true(s.pc != NULL);
	run(&ref, 8 * BURST, MAX_LATE, true, 0, true);
	assert_true(ref.max_late_all >= HICCUP_NS / 2);
	assert_true(s.max_late_all <= 20000);
	assert_true(s.sent > 0.7 * ref.sent);
	assert_int_equal(s.offered, s.admitted + s.overload);
}

/*
 * Stalls on a clock of 1 GHz (a cycle a ns): a loop counts only when it
 * took over 1 ms; the longest loop is kept either way; the first mark and
 * a clock that steps back count nothing. On 2 GHz the sums halve.
 */
static void
test_stalls_counted(void **state)
{
	static const uint64_t at[] = {
		5000,                  /* first: nothing before it */
		6000,                  /* 1 us */
		1006000,               /* exactly 1 ms: not a stall */
		4006000,               /* 3 ms */
		4406000,               /* 400 us */
		4306000,               /* back: ignored */
		6306000,               /* 2 ms */
	};
	struct shp_stalls st;
	struct shp_stall_sum sum;
	unsigned int i;

	(void)state;
	shp_stalls_init(&st, 1000000000ull, 32);
	assert_int_equal(st.limit, SHP_STALL_NS);
	for (i = 0; i < RTE_DIM(at); i++)
		shp_stall_mark(&st, at[i]);
	assert_int_equal(st.count, 2);
	assert_int_equal(st.cycles, 5000000);
	assert_int_equal(st.longest, 3000000);
	/* the 1 ms and the 400 us loops are hiccups; the 1 us one nothing */
	assert_int_equal(st.hiccups, 2);
	assert_int_equal(st.hiccup_cycles, 1400000);
	shp_stalls_sum(&st, 2000000000ull, &sum);
	assert_int_equal(sum.stalls, 2);
	assert_int_equal(sum.stalled_ns, 2500000);
	assert_int_equal(sum.longest_ns, 1500000);
	assert_int_equal(sum.hiccups, 2);
	assert_int_equal(sum.hiccup_ns, 700000);
	/* a burst of 64 may work twice as long: 400 us is no hiccup; a
	 * burst of 512 would work 3.2 ms: its hiccups start at a stall */
	shp_stalls_init(&st, 1000000000ull, 64);
	shp_stall_mark(&st, 1000);
	shp_stall_mark(&st, 401000);
	assert_int_equal(st.hiccups, 0);
	shp_stall_mark(&st, 801001);
	assert_int_equal(st.hiccups, 1);
	shp_stalls_init(&st, 1000000000ull, 512);
	assert_int_equal(st.hiccup_limit, SHP_STALL_NS);
	shp_stalls_init(&st, 2000000000ull, 32);
	shp_stall_mark(&st, 1);
	shp_stall_mark(&st, 2000001);   /* 1 ms at 2 GHz: not over it */
	assert_int_equal(st.count, 0);
	shp_stall_mark(&st, 4000002);
	assert_int_equal(st.count, 1);
}

/*
 * What the kernel counts of a worker's lost CPU (shp_cpu_lost.h): the
 * run-queue wait and slices of schedstat, the steal of one CPU's line of
 * /proc/stat (not of the "cpu" total nor of cpu10 for cpu1), the
 * difference of two readings; and the caller's own reading is real.
 */
static void
test_cpu_lost_parsed(void **state)
{
	static const char stat[] =
		"cpu  7448 0 4493 24236 382 0 104 78 0 0\n"
		"cpu0 3098 0 1683 13528 25 0 7 36 0 0\n"
		"cpu10 1 2 3 4 5 6 7 999 0 0\n"
		"cpu1 4350 0 2809 10708 357 0 97 42 0 0\n"
		"cpu2 1 2 3\n"
		"intr 1 2 3\n";
	struct shp_cpu_lost a = { true, true, 100, 3, 1000 };
	struct shp_cpu_lost b = { true, false, 350, 7, 5000 };
	struct shp_cpu_lost d, me;
	uint64_t w, n, t;

	(void)state;
	assert_int_equal(shp_schedstat_parse("123456 7890 42\n", &w, &n), 0);
	assert_int_equal(w, 7890);
	assert_int_equal(n, 42);
	assert_int_equal(shp_schedstat_parse("123456 7890\n", &w, &n), -1);
	assert_int_equal(shp_procstat_steal(stat, 1, &t), 0);
	assert_int_equal(t, 42);
	assert_int_equal(shp_procstat_steal(stat, 0, &t), 0);
	assert_int_equal(t, 36);
	assert_int_equal(shp_procstat_steal(stat, 10, &t), 0);
	assert_int_equal(t, 999);
	assert_int_equal(shp_procstat_steal(stat, 2, &t), -1);  /* short */
	assert_int_equal(shp_procstat_steal(stat, 3, &t), -1);  /* absent */
	assert_int_equal(shp_procstat_steal(stat, -1, &t), -1);
	shp_cpu_lost_since(&a, &b, &d);
	assert_true(d.have_wait);
	assert_false(d.have_steal);
	assert_int_equal(d.wait_ns, 250);
	assert_int_equal(d.slices, 4);
	assert_int_equal(d.steal_ns, 0);
	/* this thread: Linux keeps schedstat where CONFIG_SCHED_INFO is
	 * on (Debian's kernels); slices count from 1 */
	shp_cpu_lost_read(0, -1, &me);
	if (me.have_wait)
		assert_true(me.slices >= 1);
	assert_false(me.have_steal);
}

/*
 * shp_drop_late on one vector: only packets a stage scheduled and that
 * are later than the threshold go, to the front, freed and counted, and
 * their bytes come off the sum; the rest keep their order.
 */
static void
test_drop_late_partition(void **state)
{
	static const uint64_t tts[] = { 1000, 0, 5000, 1500, 9000, 1200 };
	struct rte_mbuf *pkts[RTE_DIM(tts)], *want[RTE_DIM(tts)];
	struct shp_rig rig;
	uint64_t bytes = 100 * RTE_DIM(tts);
	uint16_t i, d, k = 0;

	shp_rig_init(&rig, 0);
	shp_rig_pkts(pkts, RTE_DIM(tts), 100, 0, NULL, 500);
	for (i = 0; i < RTE_DIM(tts); i++) {
		shp_meta(pkts[i])->time_to_send = tts[i];
		/* at 10000 with 4000 allowed: all but 9000 are late, and
		 * 0 (never scheduled) is not */
		if (tts[i] == 0 || 10000 - tts[i] <= 4000)
			want[k++] = pkts[i];
	}
	d = shp_drop_late(rig.c, pkts, RTE_DIM(tts), 10000, 4000, &bytes,
			  NULL);
	assert_int_equal(d, 4);
	assert_int_equal(k, 2);
	assert_int_equal(bytes, 200);
	assert_int_equal(rig.c->drops[shp_drop_index("late")], 4);
	for (i = 0; i < k; i++)
		assert_ptr_equal(pkts[d + i], want[i]);
	/* nothing late: nothing moves, nothing counted */
	bytes = UINT64_MAX;
	assert_int_equal(shp_drop_late(rig.c, pkts + d, k, 10000, 4000,
				       &bytes, NULL), 0);
	assert_int_equal(bytes, UINT64_MAX);
	rte_pktmbuf_free_bulk(pkts + d, k);
	shp_rig_fini(&rig);
}

/*
 * Pipeline mode at overload: admission on the RX lcore follows what the
 * TX lcore releases on time, so `late` is what the TX lcore's stall
 * explains (the packets due while it was away, at the rate admitted) plus
 * a burst, never a share of everything admitted; and the pipeline carries
 * about what the TX lcore can send.
 */
static void
test_pipeline_admission_follows_release(void **state)
{
	struct pipe p = { .tx_stall_at = HICCUP_AT, .tx_stall_ns = HICCUP_NS };
	uint64_t rate_ns = TX_NS;   /* the TX lcore's time per packet */
	uint64_t late, explained;

	run_pipe(&p, MAX_LATE, 0);
	late = late_drops(&p.tx);
	explained = (p.stall_ns + MAX_LATE) / rate_ns + 2 * BURST;
	if (getenv("EG_TRACE"))
		printf("pipe: adm %" PRIu64 " sent %" PRIu64 " late %" PRIu64
		       " (explained %" PRIu64 ") ovl %" PRIu64 " full %"
		       PRIu64 " max_late %" PRIu64 "\n", p.tx.admitted,
		       p.tx.sent, late, explained, p.tx.overload,
		       p.band_full, p.tx.max_late_all);
	assert_true(p.tx.overload > 0);
	assert_true(late <= explained);
	assert_true(p.tx.max_late_all <= MAX_LATE);
	assert_true(p.tx.sent > (uint64_t)(0.7 * RUN_NS / TX_NS));
}

/*
 * The host gives the TX lcore a fifth of its CPU (4 ms away in every 5,
 * each a stall the stats file counts) while the RX lcore keeps its own:
 * what RX admits meanwhile waits in the bands (their ring bounds it, the
 * rest is overload), so `late` is still only what the stalls explain
 * (what fell due in them at the rate admitted, and a burst each).
 */
static void
test_pipeline_tx_lcore_shares_cpu(void **state)
{
	struct pipe p = { .tx_stall_at = 3000000, .tx_stall_ns = 4000000,
			  .tx_share_every = 5000000 };
	uint64_t late, explained, stalls;

	run_pipe(&p, MAX_LATE, 0);
	late = late_drops(&p.tx);
	stalls = p.stall_ns / p.tx_stall_ns;
	explained = (uint64_t)((double)p.tx.admitted / RUN_NS *
			       (p.stall_ns + stalls * MAX_LATE)) +
		    stalls * BURST;
	if (getenv("EG_TRACE"))
		printf("share: adm %" PRIu64 " sent %" PRIu64 " late %" PRIu64
		       " (explained %" PRIu64 ") ovl %" PRIu64 "\n",
		       p.tx.admitted, p.tx.sent, late, explained,
		       p.tx.overload);
	assert_true(p.tx.sent > 0);
	assert_true(late <= explained);
}

/* Below the TX lcore's capacity (~6.6 Mpps) the pipeline drops nothing
 * and sends everything on time. */
static void
test_pipeline_below_capacity(void **state)
{
	struct pipe p = { 0 };

	run_pipe(&p, MAX_LATE, 4.0);
	assert_int_equal(p.tx.overload, 0);
	assert_int_equal(late_drops(&p.tx), 0);
	assert_true(p.tx.offered > 0.99 * 4.0 * RUN_NS / 1000);
	assert_true(p.tx.max_late_all < 50000);
}

/*
 * What a pipeline's TX lcore publishes (shp_load_cost): nothing until a
 * window holds SHP_LOAD_MIN packets; then intake plus release per packet;
 * up half the way at once, down an eighth; a window that shed more than
 * it sent doubles; a light load lets it fall by a quarter a window; work
 * over a stall does not count.
 */
/* n rounds of 100 packets each way: in_ns and out_ns a packet, and of
 * the 100 out, `shed` shed */
static void
load_rounds(struct shp_load *l, unsigned int n, uint64_t in_ns,
	    uint64_t out_ns, uint32_t shed)
{
	while (n-- > 0)
		shp_load_add(l, 100 * in_ns, in_ns != 0 ? 100 : 0,
			     100 * out_ns, out_ns != 0 ? 100 - shed : 0,
			     out_ns != 0 ? shed : 0);
}

static void
test_load_cost(void **state)
{
	struct shp_load l = { 0 };
	uint32_t c;
	const uint32_t one = 1u << SHP_COST_SHIFT;   /* 1 ns */

	(void)state;
	/* the first delay: intake only, release taken as twice that */
	load_rounds(&l, 100, 50, 0, 0);
	c = shp_load_cost(&l, 1000, 0);
	assert_int_equal(c, 150 * one);
	/* too few: nothing said, the window goes on */
	load_rounds(&l, 1, 50, 200, 0);
	assert_int_equal(shp_load_cost(&l, 2000, c), c);
	/* 50 ns in, 200 out: 250, reached half the way from 150 */
	load_rounds(&l, 99, 50, 200, 0);
	c = shp_load_cost(&l, 3000, c);
	assert_int_equal(c, 200 * one);
	/* down to 120: an eighth of the way (200 - 80/8) */
	load_rounds(&l, 100, 0, 120, 0);
	c = shp_load_cost(&l, 4000, c);
	assert_int_equal(c, 190 * one);
	/* a window that shed more than it sent: behind, doubled */
	load_rounds(&l, 100, 0, 100, 60);
	c = shp_load_cost(&l, 5000, c);
	assert_int_equal(c, 380 * one);
	/* a light load for SHP_LOAD_IDLE_NS: a quarter off */
	load_rounds(&l, 5, 0, 100, 0);
	assert_int_equal(shp_load_cost(&l, 5000 + SHP_LOAD_IDLE_NS - 1, c), c);
	c = shp_load_cost(&l, 5000 + SHP_LOAD_IDLE_NS, c);
	assert_int_equal(c, 285 * one);
	/* a round stretched by a stall (the host's) is left out */
	shp_load_add(&l, 0, 0, SHP_STALL_NS + 1, 100, 0);
	load_rounds(&l, 100, 0, 285, 0);
	assert_int_equal(shp_load_cost(&l, 6000 + 2 * SHP_LOAD_IDLE_NS, c),
			 285 * one);
}

/* The predicate itself. */
static void
test_is_behind(void **state)
{
	assert_false(shp_is_behind(1000, 1000, 100));
	assert_false(shp_is_behind(1000, 1100, 100));
	assert_true(shp_is_behind(1000, 1101, 100));
	assert_false(shp_is_behind(2000, 1000, 100));   /* not due yet */
	assert_false(shp_is_behind(0, UINT64_MAX, 0));  /* 0: never */
	/* the tighter of --late-drop and a round's shed; 0 is none */
	assert_int_equal(shp_late_bound(0, 0), 0);
	assert_int_equal(shp_late_bound(20000, 0), 20000);
	assert_int_equal(shp_late_bound(0, 50000), 50000);
	assert_int_equal(shp_late_bound(20000, 50000), 20000);
	assert_int_equal(shp_late_bound(100000, 50000), 50000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_behind),
		cmocka_unit_test(test_load_cost),
		cmocka_unit_test(test_overload_paced),
		cmocka_unit_test(test_lone_late_burst_sent),
		cmocka_unit_test(test_below_capacity_no_overload),
		cmocka_unit_test(test_behind_alone_oscillates),
		cmocka_unit_test(test_one_burst_per_round_catches_up),
		cmocka_unit_test(test_late_drop_bounds_lateness),
		cmocka_unit_test(test_pipeline_admission_follows_release),
		cmocka_unit_test(test_pipeline_below_capacity),
		cmocka_unit_test(test_pipeline_tx_lcore_shares_cpu),
		cmocka_unit_test(test_drop_late_partition),
		cmocka_unit_test(test_stalls_counted),
		cmocka_unit_test(test_cpu_lost_parsed),
	};

	shp_rig_env("egress", 50000);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
