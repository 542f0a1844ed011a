/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One token bucket for a link served by several shards on several lcores
 * (issue 24): the link leaves at its rate, however the load is spread.
 *
 * Why not a bucket per shard: N buckets let the link run at N times the
 * rate (Linux mq with a tbf per queue), and a static share of the rate
 * starves a shard whose flows carry most of the load. Why not a lock or a
 * shared counter per packet: the shards would write the same cache line
 * at packet rate. What is shared instead is the bucket's one number, the
 * instant it was (or will be) empty, claimed per burst with one
 * compare-and-swap.
 *
 * The arithmetic is tbf's (shp_bucket.h), in ticks modulo 2^64 (only
 * differences of two are compared, so a clock of any epoch works): tokens are ticks (2^-10 ns) of
 * transmit time at `rate`, the bucket holds buffer_t of them. A bucket
 * whose tokens are `toks` at time `t` is the same as its empty-time
 * E = t - toks: at `now` it holds min(buffer_t, now - E) tokens, and a
 * packet of L ticks passes iff that is at least L, after which
 * E = max(E, now - buffer_t) + L. So a shard that claims the first k
 * packets of its burst moves E once, by the sum of their ticks, and the
 * bucket's history is exactly that of one bucket that saw the claims in
 * the order their compare-and-swaps succeeded. The peak bucket (peakrate,
 * mtu) is a second empty-time moved by the same swap (16 bytes).
 *
 * What a shard may wait: a claim that fails for lack of tokens says when
 * the next packet would pass (*next); another shard may take those tokens
 * first, and this one tries again then. The rate is the link's; how it is
 * shared follows who asks first, as one FIFO would share it among flows
 * that arrive in bursts.
 *
 * Cost: one 16-byte load and one compare-and-swap per burst, retried
 * when another shard claimed in between (bench/bench_tbf_shared.c); none
 * for most bursts while the bucket is more than half full, for a shard
 * that claims with a deferral state (struct shp_tbf_defer).
 */
#ifndef TBF_SHARED_H
#define TBF_SHARED_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_atomic.h>
#include <rte_common.h>

#include "shp_bucket.h"
#include "shp_stats.h"   /* SHP_MAX_QUEUES */

/*
 * What a shard of the link would send next (issue 56): its head frame's
 * arrival time plus one (0: none), written by its shard only, when it
 * changes, and read by the others only while the bucket is short
 * (sch_tbf.c, tbf_yield): a line each.
 */
struct shp_tbf_head {
	uint64_t rx;
} __rte_cache_aligned;

/*
 * A 16-byte state of the link (this bucket's clock, shp_link.h's) read as
 * two 8-byte loads, each atomic: a pair torn by another shard's swap in
 * between only makes the reader's own swap fail, or its hint stale.
 */
static inline rte_int128_t
shp_link_load(const rte_int128_t *v)
{
	rte_int128_t r;

	r.val[0] = __atomic_load_n(&v->val[0], __ATOMIC_ACQUIRE);
	r.val[1] = __atomic_load_n(&v->val[1], __ATOMIC_ACQUIRE);
	return r;
}

struct shp_tbf_shared {
	/* .val[0]: the rate bucket's empty-time, .val[1]: the peak's, in
	 * ticks; one line with what a claim writes beside them, written
	 * once a burst */
	rte_int128_t clk;
	uint64_t claims;     /* successful swaps (statistics only) */
	uint64_t retries;    /* swaps lost to another shard */
	/*
	 * The latest clock (ticks) a claim, a charge or a reservation read
	 * before its swap, written after it. Real time is past it for
	 * anyone who reads it, so a shard whose clock reads earlier (its
	 * round began before, or it lost its CPU after reading) takes the
	 * bucket at this time instead: else the tokens the others' later
	 * clocks refilled would look spent, and it would be refused what
	 * the link holds.
	 */
	uint64_t clock;
	/*
	 * The rate and the peak bucket's empty-times (ticks) as the newest
	 * claim that left each low (under half full, or short of its next
	 * frame) left them; written only then, by that claim, the line
	 * already its own. Since then every claim found that bucket at
	 * least half full, so a frame that became ready later could have
	 * left as it came: tbf stamps it so (sch_tbf.c), however long the
	 * shard's lcore kept it, and whichever shard claimed in between.
	 */
	uint64_t low[2];
	/* the clock (ticks) of the newest claim that left the rate bucket
	 * low: frames waited for the link's tokens then (the link, not a
	 * CPU, was the bottleneck: shp_tbf_shared_short) */
	uint64_t low_at;
	/* the id of the newest conf the bucket was filled for
	 * (shp_tbf_shared_adopt): each shard's rate stage has its own copy
	 * of the link's conf, and only the first to meet a newer one
	 * refills the bucket. Read-mostly: a line of its own */
	uint64_t conf_id __rte_cache_aligned;
	uint32_t filled;     /* 0 until the first use fills it */
	/* the shards' heads: the tokens go to the oldest frame first */
	struct shp_tbf_head head[SHP_MAX_QUEUES];
} __rte_cache_aligned;

/* Shard `shard` publishes its head (rx + 1, 0: none); *pub is what it
 * last published: only a change is written. */
static inline void
shp_tbf_head_put(struct shp_tbf_shared *s, uint16_t shard, uint64_t *pub,
		 uint64_t rx1)
{
	if (*pub != rx1) {
		*pub = rx1;
		__atomic_store_n(&s->head[shard].rx, rx1, __ATOMIC_RELAXED);
	}
}

/* The oldest head (rx + 1) of the shards of [0, nb) but `self`, 0 if
 * none holds a frame. */
static inline uint64_t
shp_tbf_head_oldest(const struct shp_tbf_shared *s, uint16_t nb,
		    uint16_t self)
{
	uint64_t oldest = UINT64_MAX;
	uint16_t q;

	for (q = 0; q < nb; q++) {
		uint64_t h = q == self ? 0 :
			     __atomic_load_n(&s->head[q].rx, __ATOMIC_RELAXED);

		if (h != 0 && h < oldest)
			oldest = h;
	}
	return oldest == UINT64_MAX ? 0 : oldest;
}

/*
 * One shard's claims put off while the bucket is rich: its own, never
 * shared (the tbf stage keeps it). A claim that leaves the bucket at least
 * half full lets the shard's next bursts go without touching the shared
 * line, each moving only this shard's view of the empty-time, as long as
 * that view stays at least half full, what went unclaimed (the debt) is
 * at most a sixteenth of the bucket, and its first frame is no older than
 * a quarter of the bucket's time. The next claim (or settle) takes the
 * debt first, in one swap with its own frames: as this shard's view, when
 * no other shard swapped in between (one shard alone is then exactly one
 * bucket), else at the claim's time on top of what the others took (as
 * late as it can be: never more tokens for the others than one bucket
 * would have had). Why: a claim a burst moves the line between cores at
 * every burst, ~10% of a shard at 20 Mpps (docs/benchmarks.md), while
 * a rich bucket decides nothing. What it costs: while a shard owes, the
 * others see its debt as tokens, so at any moment the link has carried
 * at most rate x time + burst + (shards x burst / 16); with less than
 * half a bucket no claim is put off, and the link is one bucket again.
 * Not with a peak rate (its bucket is an mtu).
 */
struct shp_tbf_defer {
	uint64_t e;         /* the rate bucket's empty-time as this shard
			     * sees it: what it last swapped in, moved by the
			     * bursts it let go since */
	uint64_t swapped;   /* the empty-times it last swapped in */
	uint64_t pswapped;
	uint64_t debt;      /* ticks let go since, unclaimed */
	uint64_t since;     /* the tick of the first of them */
	uint64_t conf_id;   /* the conf e was worked out under */
	uint64_t put_off;   /* bursts let go unclaimed (statistics) */
	/* the empty-times of the rate and the peak bucket (ticks) before
	 * the last claim, as they were, not as a full bucket caps them:
	 * when each of its frames was first covered (tbf stamps the frames
	 * so, sch_tbf.c) */
	uint64_t from, pfrom;
	/* the link's low (struct shp_tbf_shared) as the last claim read it */
	uint64_t low, plow;
	bool valid;         /* e is a view (a claim succeeded under conf_id) */
};

/* Is d putting its claims off now, its view of the bucket at least
 * half full (a claim under conf c left it so within a quarter of the
 * bucket's time, and the debt since is small)? Reads nothing shared. */
static inline bool
shp_tbf_defer_rich(const struct shp_tbf_defer *d, const struct shp_tbf_conf *c,
		   uint64_t now_ns)
{
	uint64_t now = now_ns << SHP_TBF_SHIFT, b = (uint64_t)c->buffer_t;

	return d->valid && d->conf_id == c->hdr.id && d->debt > 0 &&
	       (int64_t)(now - d->since) <= (int64_t)(b / 4) &&
	       (int64_t)(now - d->e) >= (int64_t)(b / 2);
}

/* Did a claim leave the link's rate bucket low within the last within_ns
 * before now_ns (frames wait for the link's tokens)? False for a bucket
 * no shard uses. Reads one word of the claims' line. */
static inline bool
shp_tbf_shared_short(const struct shp_tbf_shared *s, uint64_t now_ns,
		     uint64_t within_ns)
{
	uint64_t at = __atomic_load_n(&s->low_at, __ATOMIC_RELAXED);

	return at != 0 &&
	       (int64_t)((now_ns << SHP_TBF_SHIFT) - at) <=
	       (int64_t)(within_ns << SHP_TBF_SHIFT);
}

/* A full bucket at now: what tbf starts with. Not concurrent with claims. */
void shp_tbf_shared_init(struct shp_tbf_shared *s,
			 const struct shp_tbf_conf *c, uint64_t now_ns);

/*
 * The first k of n packets (wire[i]: shp_tbf_wire_len of each, every one
 * no longer than the bucket can ever pass: tbf drops the others as
 * oversize before) that the bucket lets go at now_ns (or at the link's
 * latest clock, if later: struct shp_tbf_shared), claimed for this
 * caller: returns k. When k < n, *next_ns is the earliest time packet k
 * could pass if no one else claimed before (a hint: claim again then).
 * Any lcore, lock-free; one swap per call when uncontended.
 */
uint16_t shp_tbf_shared_claim(struct shp_tbf_shared *s,
			      const struct shp_tbf_conf *c,
			      const uint32_t *wire, uint16_t n,
			      uint64_t now_ns, uint64_t *next_ns);

/*
 * shp_tbf_shared_claim for the shard whose deferral state is d: a burst the
 * bucket as this shard sees it would let go with more than half of it to
 * spare goes without a swap (all n, at once); otherwise the debt and the
 * burst are claimed in one swap. The shard's lcore only, for its d.
 */
uint16_t shp_tbf_shared_claim_defer(struct shp_tbf_shared *s,
				    const struct shp_tbf_conf *c,
				    struct shp_tbf_defer *d,
				    const uint32_t *wire, uint16_t n,
				    uint64_t now_ns, uint64_t *next_ns);

/* Claim d's debt now, if any (before anything else reads or moves the
 * bucket for this shard: a reservation, a charge, a next time). */
void shp_tbf_shared_settle(struct shp_tbf_shared *s,
			   const struct shp_tbf_conf *c,
			   struct shp_tbf_defer *d, uint64_t now_ns);

/* Forget d's view and its debt: a new conf (its refill forgives what
 * went before, as one bucket's does). */
static inline void
shp_tbf_defer_reset(struct shp_tbf_defer *d)
{
	d->valid = false;
	d->debt = 0;
}

/*
 * Charge wire bytes that did not come through the bucket (a netem copy),
 * as shp_tbf_charge does: the tokens may go below zero, and the packets
 * behind wait for the debt. Any lcore.
 */
void shp_tbf_shared_charge(struct shp_tbf_shared *s,
			   const struct shp_tbf_conf *c, uint32_t wire,
			   uint64_t now_ns);

/*
 * A shard's rate stage starts with conf c (its copy of the link's conf):
 * the bucket is for c or a newer one, and is filled at its first use
 * (shp_tbf_shared_adopt). Every shard binds before any uses it; s
 * zeroed before the first bind. Control plane.
 */
void shp_tbf_shared_bind(struct shp_tbf_shared *s,
			 const struct shp_tbf_conf *c);

/* Would shp_tbf_shared_adopt(s, c, ...) fill the bucket: its first use,
 * or c newer than its conf? Reads only. */
bool shp_tbf_shared_fresh(const struct shp_tbf_shared *s,
			  const struct shp_tbf_conf *c);

/*
 * A shard's rate stage met conf c for the first time, at now_ns: at the
 * bucket's first use, or when c is newer (a higher id) than any conf the
 * bucket was filled or bound for, the bucket starts full at now_ns for
 * c, as tbf's own bucket does on a new conf; a shard that meets an older
 * or the same conf leaves the bucket as the others made it. True when it
 * filled. Any lcore.
 */
bool shp_tbf_shared_adopt(struct shp_tbf_shared *s,
			  const struct shp_tbf_conf *c, uint64_t now_ns);

/*
 * The earliest time at or after now_ns at which a frame of wire bytes
 * (shp_tbf_wire_len) passes both buckets, if no one claims before: what
 * a rate stage tells its caller to come back at. Reads only.
 */
uint64_t shp_tbf_shared_when(const struct shp_tbf_shared *s,
			     const struct shp_tbf_conf *c, uint32_t wire,
			     uint64_t now_ns);

/* shp_tbf_shared_when for the shard whose deferral state is d, with its
 * debt counted as its next claim would count it. Reads only. */
uint64_t shp_tbf_shared_when_owed(const struct shp_tbf_shared *s,
				  const struct shp_tbf_conf *c,
				  const struct shp_tbf_defer *d, uint32_t wire,
				  uint64_t now_ns);

/*
 * Reserve the link for a frame of wire bytes that the bucket refused at
 * now_ns: its cost is taken now (the tokens may go below zero, as a
 * charge), and it may leave at the returned time, when the tokens would
 * have covered it, the buckets left as a claim at that time would leave
 * them; whoever claims after waits behind it. A shard refused
 * for lack of tokens keeps its place this way: without it the shard whose
 * head is the smallest frame would take the tokens every time they cover
 * it, and a shard of large frames would wait for a moment no small one is
 * ready. Alone on the bucket, the frame leaves when a claim would have
 * let it go. Any lcore.
 */
uint64_t shp_tbf_shared_reserve(struct shp_tbf_shared *s,
				const struct shp_tbf_conf *c, uint32_t wire,
				uint64_t now_ns);

/*
 * The policer's judgement (shp_police.h) on the link's one bucket: of n
 * frames of len[i] bytes (L2) arriving at now_ns, verdict[i] 0 for each
 * the bucket covers (its cost claimed), 1 for each it does not (too long
 * for mtu, or short of tokens: the bucket left as it was for the next),
 * the frames judged in order. Returns how many conformed; one swap per
 * call when uncontended. What the shards see is one bucket that judged
 * their bursts in the order their swaps succeeded, each at the later of
 * its stamp and the latest clock a claim read (struct shp_tbf_shared's
 * clock): a burst stamped earlier than one claimed before it finds the
 * bucket as that one left it, not the tokens as of its stamp less what
 * that one took, which would charge it for the same time twice (never
 * more than the link's rate over any stretch either way). Any lcore,
 * lock-free.
 */
uint16_t shp_tbf_shared_police(struct shp_tbf_shared *s,
			       const struct shp_tbf_conf *c,
			       const uint32_t *len, uint16_t n,
			       uint64_t now_ns, uint8_t *verdict);

/* Tokens (ticks) the rate bucket holds at now_ns, below zero in debt. */
int64_t shp_tbf_shared_tokens(const struct shp_tbf_shared *s,
			      const struct shp_tbf_conf *c, uint64_t now_ns);

#endif
