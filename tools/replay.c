/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-replay: apply a link profile to a capture, offline.
 *
 *   dpdk-shaper-replay IN OUT [--netem ARGS] [--tbf ARGS] [--bands N]
 *                      [--priomap P] [--classify MODE] [--config FILE]
 *                      [--seed N] [--ring-size N] [--mbufs N] [--burst N]
 *                      [--stats-file PATH] [--progress S]
 *                      [--schedule FILE] [--queues N]
 *
 * The tool is one egress port (port 0) of dpdk-shaper: the same lib stages
 * (classify -> bands -> tbf -> netem) on a virtual clock driven by the
 * capture's timestamps. Every packet that leaves is written to OUT (a
 * nanosecond pcap) stamped with its departure time. The clock only ever
 * takes values at which something happens (an arrival, or the root's
 * next_time: a token bucket release, a netem departure or slot), so
 * departures are exact to the nanosecond.
 * With --queues N the port is N shards, as the program runs a link over
 * N TX queues (issue 24): frames go to the shard a NIC's RSS would put
 * them in (shp_rss.h), each shard runs a chain of its own, the tbf
 * bucket is the link's one (tbf_shared.h), and the shards are served on
 * the one clock in a fixed rotation, so the output stays exact.
 * The summary printed at the end and --stats-file are replay_report.c's.
 * See docs/replay.md.
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

/* stdio buffer of the input and output captures */
#define IO_BUF_SIZE (1u << 20)


/* Times in a row the root's next_time named a clock value at which
 * dequeue then did nothing (the clock steps 1 ns on), before the run is
 * declared stuck: never seen, a safety net. */
#define MAX_STALLS 10000000

#define NEVER UINT64_MAX

/* The latest time a pcap record can hold: unsigned 32-bit seconds. */
#define PCAP_SEC_MAX UINT32_MAX

/* Packets between two looks at the wall clock for the progress line. */
#define PROGRESS_EVERY 1024

volatile sig_atomic_t interrupted;

/* A progress line is on the terminal: clear it before any other text. */
static bool progress_shown;

void
progress_clear(void)
{
	if (progress_shown)
		fprintf(stderr, "\r\033[K");
	progress_shown = false;
}

static void
on_signal(int sig)
{
	interrupted = sig;
}

/* -------------------------------------------------------- the clock */

static void progress(struct replay *r, bool last);

/* Everything any stage did so far: what left, what was dropped anywhere,
 * what the bands released (into the bucket and on to netem). */
static uint64_t
activity(const struct replay *r)
{
	uint64_t n = 0;
	unsigned int i, q;

	for (q = 0; q < r->queues; q++) {
		const struct shp_port_ctr *c = r->ctx[q].ctr;

		n += c->tx_packets;
		for (i = 0; i < shp_drop_nb(); i++)
			n += c->drops[i];
		for (i = 0; i < SHP_MAX_BANDS; i++)
			n += c->band[i].dequeued;
	}
	return n;
}

/* Dequeue shard q's root at r->now until it returns nothing; write what
 * leaves. */
static int
run_shard_at(struct replay *r, unsigned int q)
{
	struct rte_mbuf *pkts[SHP_MAX_BURST];
	struct shp_ctx *ctx = &r->ctx[q];
	uint16_t k, i;

	ctx->now = r->now;
	do {
		uint64_t bytes = 0;
		int rc = 0;

		k = shp_qdisc_dequeue(r->chain[q].root, pkts, r->opt.burst, ctx);
		for (i = 0; i < k; i++) {
			bytes += rte_pktmbuf_pkt_len(pkts[i]);
			if (rc == 0)
				rc = emit(r, q, pkts[i]);
		}
		ctx->ctr->tx_packets += k;
		ctx->ctr->tx_bytes += bytes;
		if (k > 0)
			rte_pktmbuf_free_bulk(pkts, k);
		if (rc < 0)
			return -1;
	} while (k > 0);
	return 0;
}

/*
 * Every shard at r->now, one after the other. The first served takes
 * the link's tokens first (what lcores racing for the shared bucket
 * would decide by who comes first), so the first place goes round the
 * shards that send: the next instant starts after the first shard that
 * sent at this one. Shards that wait for tokens then take turns, none
 * is always last, and the order is still a function of the input alone.
 */
static int
run_at(struct replay *r)
{
	unsigned int i, q, sent = r->queues;

	for (i = 0; i < r->queues; i++) {
		uint64_t before;

		q = (r->serve_first + i) % r->queues;
		before = r->ctx[q].ctr->tx_packets;
		if (run_shard_at(r, q) < 0)
			return -1;
		if (sent == r->queues && r->ctx[q].ctr->tx_packets != before)
			sent = q;
	}
	if (sent < r->queues)
		r->serve_first = (sent + 1) % r->queues;
	return 0;
}

/* The earliest of the shards' next times. A link's shards answer twice:
 * each publishes its head as it answers (the oldest goes first,
 * sch_tbf.c), so the first round lets every shard see the others' heads
 * as they are now, not as a shard's last call left them. */
static uint64_t
next_time(struct replay *r)
{
	uint64_t t = NEVER;
	unsigned int q, round;

	for (round = r->queues > 1 ? 0 : 1; round < 2; round++) {
		t = NEVER;
		for (q = 0; q < r->queues; q++) {
			r->ctx[q].now = r->now;
			t = RTE_MIN(t, shp_qdisc_next_time(r->chain[q].root,
							   &r->ctx[q]));
		}
	}
	return t;
}

/* The virtual time of the schedule's next occurrence, or NEVER. */
static uint64_t
sched_next(const struct replay *r)
{
	uint64_t t = shp_sched_cursor_time(&r->sched, &r->sched_cur);

	return t == SHP_SCHED_NONE || t > NEVER - 1 - r->first_ts ? NEVER :
	       r->first_ts + t;
}

static int
sched_apply(struct replay *r)
{
	const struct shp_sched_event *e = &r->sched.ev[r->sched_cur.i];
	bool last = r->sched_last[r->sched_cur.i];
	char err[SHP_ERR_LEN];

	shp_sched_cursor_next(&r->sched, &r->sched_cur);
	if (e->op != SHP_SCHED_SET)
		return 0;   /* a link's state is a function of time */
	/* a later line at this instant sets the same stage before anything
	 * runs: the end is the same without parsing this one (as live) */
	if (!last) {
		r->sched_applied++;
		return 0;
	}
	/* (checked against the chain before the run: cannot fail but for
	 * memory) */
	if (shp_sched_apply_shards(e, r->chain, r->queues, &r->kenv,
				   err) < 0) {
		fail(EXIT_RUNTIME, "%s:%u: %s", r->sched.path, e->line, err);
		return -1;
	}
	r->sched_applied++;
	return 0;
}

/*
 * Nothing queued before an arrival at `until`: whole cycles of a repeat
 * before the one ahead of it change nothing a packet meets (a new
 * profile takes effect at its first use, and each stage's last change
 * before `until` is still made, in the cycle walked), so they are
 * counted as applied without being walked: a gap of a day between two
 * packets of a capture costs two cycles, not 86 million.
 */
static void
sched_skip_idle(struct replay *r, uint64_t until)
{
	const struct shp_sched *s = &r->sched;
	struct shp_sched_cursor *c = &r->sched_cur;
	uint64_t to;

	if (s->repeat == 0 || until == NEVER || until < r->first_ts ||
	    c->i >= s->nb)
		return;
	to = (until - r->first_ts) / s->repeat;
	if (to <= c->cycle + 1)
		return;
	to--;
	r->sched_applied += (to - c->cycle) * r->sched_sets[s->nb] -
			    r->sched_sets[c->i];
	c->cycle = to;
	c->i = 0;
}

/*
 * Move the clock to `until`, running every event on the way (events at
 * `until` itself included: they come before an arrival at that time); with
 * drain, until nothing is left to happen. An event is the root's
 * next_time: the stages say when a dequeue can next return something.
 * `fresh`: nothing was dequeued at r->now since the queues last changed
 * from outside (an arrival).
 */
static int
advance(struct replay *r, uint64_t until, bool drain)
{
	bool fresh = true;

	for (;;) {
		uint64_t t, before;

		if (interrupted)
			return 0;
		t = next_time(r);
		if (r->sched_on) {
			/* a change at its time, before what the stages do
			 * then and before an arrival at that time; once
			 * drained, nothing is left for it to change */
			uint64_t ts;

			if (!drain && t == NEVER)
				sched_skip_idle(r, until);
			ts = sched_next(r);
			if (ts != NEVER && (drain ? t != NEVER && ts <= t :
					    ts <= RTE_MIN(until, t))) {
				if (ts > r->now)
					r->now = ts;
				if (sched_apply(r) < 0)
					return -1;
				fresh = true;
				continue;
			}
		}
		if (t == NEVER || (!drain && t > until))
			break;
		if (t <= r->now) {
			t = r->now;
			if (!fresh) {
				/* dequeue at now did nothing and the stages
				 * still say now: step on (a safety net) */
				r->stalls++;
				if (++r->stall_run > MAX_STALLS)
					break;
				t = r->now + 1;
			}
		}
		r->now = t;
		if ((++r->events % PROGRESS_EVERY) == 0)
			progress(r, false);
		before = activity(r);
		if (run_at(r) < 0)
			return -1;
		fresh = activity(r) != before;
		if (fresh)
			r->stall_run = 0;
	}
	if (!drain && until > r->now)
		r->now = until;
	return 0;
}

/* ---------------------------------------------------------- the run */

static double
wall_since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* On a terminal, one line rewritten in place while a long run goes on. */
static void
progress(struct replay *r, bool last)
{
	struct timespec now;
	uint64_t span;

	if (last) {
		progress_clear();
		return;
	}
	if (!r->tty || r->progress_s <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (wall_since(r->wall_last.tv_sec ? &r->wall_last : &r->wall0,
		       &now) < r->progress_s)
		return;
	r->wall_last = now;
	span = r->started ? r->now - r->first_ts : 0;
	fprintf(stderr, "\r\033[K" PROG ": %" PRIu64 " packets in, %" PRIu64
		" out, %.3f s of capture, %.1f s elapsed", r->in_pkts,
		r->out_pkts, (double)span / 1e9, wall_since(&r->wall0, &now));
	fflush(stderr);
	progress_shown = true;
}

/* A packet offered while the schedule has the link down: counted as
 * offered to the port and dropped as link_down. */
static bool
link_down(struct replay *r, uint64_t t, uint32_t len)
{
	uint64_t since;

	if (!shp_sched_link_down(&r->sched, 0, t - r->first_ts, &since))
		return false;
	r->ctx[0].ctr->rx_packets++;
	r->ctx[0].ctr->rx_bytes += len;
	r->ctx[0].ctr->egress_in++;
	r->ctx[0].ctr->drops[SHP_DROP_LINK_DOWN]++;
	return true;
}

static int
replay_loop(struct replay *r)
{
	/* the port's MTU, as the live RX lcore checks it */
	unsigned int mtu = shp_options_mtu(&r->opt, 0);
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned int q;
	int rc;

	while (!interrupted && (rc = pcap_next_ex(r->in, &h, &data)) == 1) {
		struct rte_mbuf *m;
		struct shp_ctx *ctx;
		uint64_t t, bytes;
		uint8_t band;

		if (shp_pcap_time_ns(r->in, h, &t) < 0)
			return fail(EXIT_USAGE, "%s: record %" PRIu64 ": time "
				    "%lld s is past what the clock holds "
				    "(2^63 ns, the year 2262)", r->in_path,
				    r->in_pkts + 1, (long long)h->ts.tv_sec);
		if (!r->started) {
			r->started = true;
			r->now = t;
			r->first_ts = t;
		}
		if (t < r->now) {
			r->backwards++;
			t = r->now;
		}
		if (advance(r, t, false) < 0)
			return fail(EXIT_RUNTIME, "out of memory");
		r->last_ts = t;
		r->in_pkts++;
		replay_trace_arrival(r, t);
		r->in_bytes += h->caplen;
		r->max_len = RTE_MAX(r->max_len, h->caplen);
		if (h->caplen < h->len)
			r->snapped++;
		if ((r->in_pkts % PROGRESS_EVERY) == 0) {
			unsigned int denied;

			progress(r, false);
			if (r->opt.classes != NULL) {
				r->calendars += shp_classes_grow(0, UINT_MAX,
								 &denied);
				r->cal_denied = RTE_MAX(r->cal_denied,
							denied);
			}
		}
		if (r->sched_on && link_down(r, t, h->caplen)) {
			if (rcap_arrival(r, NULL, t, 0, SHP_CAP_NO_BAND) < 0)
				return fail(EXIT_RUNTIME, "out of memory");
			if (r->ctx[0].cap != NULL)
				shp_dropcap_put_raw(r->ctx[0].cap,
						    &r->ctx[0].tag, t,
						    SHP_DROP_LINK_DOWN, data,
						    h->caplen);
			continue;
		}
		m = pkt_build(r->pool, data, h->caplen);
		if (m == NULL) {
			/* no frame to spread: the first shard's (and no
			 * frame for the capture) */
			r->ctx[0].ctr->drops[SHP_DROP_NO_MBUF]++;
			if (rcap_arrival(r, NULL, t, 0, SHP_CAP_NO_BAND) < 0)
				return fail(EXIT_RUNTIME, "out of memory");
			rcap_no_mbuf(r);
			continue;
		}
		q = r->queues > 1 ? shp_rss_queue(&r->rss, m) : 0;
		ctx = &r->ctx[q];
		shp_meta_init(m, t);
		if (mtu != 0 && shp_frame_oversize(m, mtu)) {
			ctx->ctr->rx_packets++;
			ctx->ctr->rx_bytes += h->caplen;
			ctx->ctr->egress_in++;
			ctx->ctr->drops[SHP_DROP_OVERSIZE]++;
			ctx->now = t;
			if (rcap_arrival(r, m, t, q, SHP_CAP_NO_BAND) < 0) {
				rte_pktmbuf_free(m);
				return fail(EXIT_RUNTIME, "out of memory");
			}
			shp_drop_capture(ctx, SHP_DROP_OVERSIZE,
					 SHP_CAP_NO_BAND, &m, 1);
			rte_pktmbuf_free(m);
			continue;
		}
		shp_classify_burst_map(&r->opt.classifier,
				       shp_chain_priomap(&r->chain[q]), &m, 1,
				       t, &band, &bytes);
		if (rcap_arrival(r, m, t, q, band) < 0) {
			rte_pktmbuf_free(m);
			return fail(EXIT_RUNTIME, "out of memory");
		}
		ctx->now = t;
		ctx->ctr->rx_packets++;
		ctx->ctr->rx_bytes += h->caplen;
		ctx->ctr->egress_in++;
		shp_chain_enqueue(&r->chain[q], &m, 1, ctx);
	}
	if (!interrupted && rc == PCAP_ERROR)
		return fail(EXIT_USAGE, "%s: broken after %" PRIu64
			    " packets: %s", r->in_path, r->in_pkts,
			    pcap_geterr(r->in));
	if (!interrupted && advance(r, 0, true) < 0)
		return fail(EXIT_RUNTIME, "out of memory");
	/* What is still held (stuck, or in flight at Ctrl-C) is freed and
	 * counted as flushed: the summary balances either way. */
	for (q = 0; q < r->queues; q++) {
		uint32_t held = shp_qdisc_qlen_total(r->chain[q].root);

		r->stuck += held;
		if (held > 0)
			shp_qdisc_reset_all(r->chain[q].root, &r->ctx[q]);
	}
	return 0;
}

static int
replay_run(struct replay *r)
{
	int code;

	clock_gettime(CLOCK_MONOTONIC, &r->wall0);
	code = replay_loop(r);
	progress(r, true);
	return code;
}

/* ----------------------------------------------------------- cleanup */

static void
close_output(struct replay *r, bool keep)
{
	if (r->dump != NULL) {
		pcap_dump_close(r->dump);
		r->dump = NULL;
	}
	if (r->dead != NULL) {
		pcap_close(r->dead);
		r->dead = NULL;
	}
	free(r->outbuf);
	r->outbuf = NULL;
	if (r->tmp_path != NULL && !keep)
		unlink(r->tmp_path);
}

static void
release(struct replay *r)
{
	replay_trace_free(r);
	stages_fini(r);
	rcap_release(r);
	if (r->pool != NULL)
		rte_mempool_free(r->pool);
	rte_free(r->ctr);
	free(r->lat);
	rte_free(r->link);
	if (r->in != NULL)
		pcap_close(r->in);
	free(r->inbuf);
	free(r->delay.v);
	free(r->queueing.v);
	free(r->netem_delay.v);
	free(r->linbuf);
	free(r->tmp_path);
	shp_options_free(&r->opt);
	shp_sched_free(&r->sched);
	free(r->sched_last);
	free(r->sched_sets);
	r->sched_last = NULL;
	r->sched_sets = NULL;
	if (r->eal) {
		rte_eal_cleanup();
		/* --no-shconf still makes an (empty) runtime directory */
		if (r->runtime_dir[0] != '\0')
			rmdir(r->runtime_dir);
	}
}

int
main(int argc, char **argv)
{
	static struct replay rp;
	struct replay *r = &rp;
	struct sigaction sa;
	int code = 0, rc;
	bool ok;

	shp_options_init(&r->opt);
	r->queues = 1;
	r->progress_s = 1;
	r->info = stdout;
	code = parse_args(r, argc, argv);
	if (code == 0)
		code = parse_profiles(r);
	if (code == 0)
		code = open_input(r);
	if (code != 0)
		goto out;
	r->tty = isatty(STDERR_FILENO);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	code = open_output(r);
	if (code == 0)
		code = rcap_open(r);
	if (code == 0)
		code = eal_start(r);
	if (code == 0)
		code = stages_init(r);
	if (code == 0 && replay_trace_init(r) < 0)
		code = fail(EXIT_RUNTIME, "out of memory");
	if (code == 0)
		code = rcap_start(r);
	if (code != 0)
		goto out;
	code = replay_run(r);
	if (code != 0) {
		close_output(r, false);
		goto out;
	}
	ok = summary(r, r->info);
	fflush(r->info);
	if (write_stats(r) != 0)
		code = EXIT_RUNTIME;
	if (interrupted) {
		/* a partial OUT would pass for a whole one: none */
		code = fail(130, "interrupted");
		close_output(r, false);
		goto pool;
	}
	if (code != 0) {
		close_output(r, false);
		goto out;
	}
	if (ferror(pcap_dump_file(r->dump)) || pcap_dump_flush(r->dump) < 0) {
		code = fail(EXIT_RUNTIME, "%s: write error: %s", r->out_path,
			    strerror(errno));
		close_output(r, false);
		goto out;
	}
	close_output(r, true);
	if (r->tmp_path != NULL && rename(r->tmp_path, r->out_path) < 0) {
		code = fail(EXIT_RUNTIME, "%s: cannot rename %s to it: %s",
			    r->out_path, r->tmp_path, strerror(errno));
		unlink(r->tmp_path);
		goto out;
	}
	free(r->tmp_path);
	r->tmp_path = NULL;
	if (code == 0)
		code = rcap_finish(r, true);
	if (!ok)
		code = fail(EXIT_RUNTIME, "internal error: the counters do "
			    "not add up (see the conservation line)");
pool:
	stages_fini(r);
	rc = (int)rte_mempool_avail_count(r->pool);
	if (rc != (int)r->nb_mbufs && (code == 0 || code == 130))
		code = fail(EXIT_LEAK, "error: mbuf leak: %u of %u mbufs not "
			    "returned to the pool", r->nb_mbufs - rc,
			    r->nb_mbufs);
out:
	if (code != 0) {
		close_output(r, false);
		rcap_finish(r, false);
	}
	release(r);
	return code;
}
