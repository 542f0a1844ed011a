/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ticks are kept modulo 2^64: now_ns << SHP_TBF_SHIFT overflows past
 * 2^53 ns (104 days of a clock, any capture's epoch time), so no tick is
 * compared with another directly, only their difference, which stays far
 * below 2^63 (a bucket depth and a burst's cost).
 */
#include "tbf_shared.h"

/* ticks (2^-10 ns) a claim's clock is taken as behind another's at
 * most: 2^40, about a second */
#define SHP_TBF_CLOCK_SKEW (INT64_C(1) << 40)

/* a - b and the later of two ticks, modulo 2^64 */
static inline int64_t
tdiff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

static inline uint64_t
tlater(uint64_t a, uint64_t b)
{
	return tdiff(a, b) > 0 ? a : b;
}

static inline uint64_t
ticks_of(uint64_t now_ns)
{
	return now_ns << SHP_TBF_SHIFT;
}

/* The ns at or after now_ns when tick `at` is reached. */
static inline uint64_t
ns_at(uint64_t now_ns, uint64_t at)
{
	int64_t d = tdiff(at, ticks_of(now_ns));

	return d <= 0 ? now_ns : now_ns + (((uint64_t)d +
					    (1u << SHP_TBF_SHIFT) - 1) >>
					   SHP_TBF_SHIFT);
}

/*
 * Would the peak bucket, empty at p, refuse a frame of pcost at now? Never
 * without a peak rate: then p is no bucket (its depth is 0, so it only
 * follows the latest claim's clock), and a shard whose clock reads a
 * little behind the one that claimed last must not read that as a debt.
 */
static inline bool
peak_short(const struct shp_tbf_conf *c, uint64_t p, uint64_t pcost,
	   uint64_t now)
{
	return c->peakrate != 0 && tdiff(p + pcost, now) > 0;
}

static inline rte_int128_t
clk_load(const struct shp_tbf_shared *s)
{
	return shp_link_load(&s->clk);
}

/* empty a bucket's depth ago: full at now */
static inline rte_int128_t
clk_full(const struct shp_tbf_conf *c, uint64_t now_ns)
{
	rte_int128_t v;

	v.val[0] = ticks_of(now_ns) - (uint64_t)c->buffer_t;
	v.val[1] = ticks_of(now_ns) - (uint64_t)c->mtu_t;
	return v;
}

/* A claim's swap of the two empty-times from old to (e, p): false when
 * another shard claimed first (old is then what it left). */
static inline bool
clk_swap(struct shp_tbf_shared *s, rte_int128_t *old, uint64_t e, uint64_t p)
{
	rte_int128_t new;

	new.val[0] = e;
	new.val[1] = p;
	if (rte_atomic128_cmp_exchange(&s->clk, old, &new, 0,
				       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&s->claims, 1, __ATOMIC_RELAXED);
		return true;
	}
	__atomic_fetch_add(&s->retries, 1, __ATOMIC_RELAXED);
	return false;
}

/*
 * now_ns, or the latest clock a claim read if that is later (struct
 * shp_tbf_shared's clock): the time a swap that follows takes place at.
 */
static inline uint64_t
clk_now(const struct shp_tbf_shared *s, uint64_t now_ns)
{
	uint64_t now = ticks_of(now_ns);
	int64_t ahead = tdiff(__atomic_load_n(&s->clock, __ATOMIC_ACQUIRE),
			      now);

	/* lcores' rounds differ by a preemption at most: a second ahead
	 * is no clock of this link's (not yet written) */
	return ahead > 0 && ahead < SHP_TBF_CLOCK_SKEW ? now + (uint64_t)ahead
						       : now;
}

/* After a swap at now: the latest clock (a racing writer may put back a
 * slightly earlier one, which only corrects a later claim less). */
static inline void
clk_seen(struct shp_tbf_shared *s, uint64_t now)
{
	int64_t ahead = tdiff(__atomic_load_n(&s->clock, __ATOMIC_RELAXED),
			      now);

	if (ahead < 0 || ahead >= SHP_TBF_CLOCK_SKEW)
		__atomic_store_n(&s->clock, now, __ATOMIC_RELEASE);
}

/* low moved on to e, unless another shard moved it further. */
static inline void
low_raise(uint64_t *low, uint64_t e)
{
	uint64_t cur = __atomic_load_n(low, __ATOMIC_RELAXED);

	while (tdiff(e, cur) > 0 &&
	       !__atomic_compare_exchange_n(low, &cur, e, false,
					    __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

/*
 * The buckets as a claim, a charge or a reservation at now left them (e,
 * p), rshort and pshort: it stopped short of a frame for lack of the
 * rate's or the peak's tokens. A bucket left low is noted (s->low).
 */
static inline void
low_note(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
	 uint64_t now, uint64_t e, uint64_t p, bool rshort, bool pshort)
{
	if (rshort || tdiff(now, e) < (int64_t)(c->buffer_t / 2)) {
		low_raise(&s->low[0], e);
		__atomic_store_n(&s->low_at, now, __ATOMIC_RELAXED);
	}
	if (c->peakrate &&
	    (pshort || tdiff(now, p) < (int64_t)(c->mtu_t / 2)))
		low_raise(&s->low[1], p);
}

/* Full buckets (a start, a new conf's refill): nothing before is low. */
static inline void
low_full(struct shp_tbf_shared *s, const rte_int128_t *full)
{
	__atomic_store_n(&s->low[0], full->val[0], __ATOMIC_RELEASE);
	__atomic_store_n(&s->low[1], full->val[1], __ATOMIC_RELEASE);
}

void
shp_tbf_shared_init(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		    uint64_t now_ns)
{
	s->clk = clk_full(c, now_ns);
	s->clock = ticks_of(now_ns);
	low_full(s, &s->clk);
	s->claims = 0;
	s->retries = 0;
	s->conf_id = c->hdr.id;
	s->filled = 1;
}

/*
 * The rate bucket's empty-time with d's debt in it, from the shared value
 * v: this shard's view when no other shard swapped since it did (its view
 * is then the bucket), else the debt on top of the others' claims, taken
 * at now (as late as it can be: never more tokens for the others than one
 * bucket would have had). A debt under an older conf is forgiven.
 */
static inline uint64_t
owed_e(const rte_int128_t *v, const struct shp_tbf_defer *d,
       const struct shp_tbf_conf *c, uint64_t now)
{
	if (d == NULL || d->debt == 0 || d->conf_id != c->hdr.id)
		return v->val[0];
	if (v->val[0] == d->swapped && v->val[1] == d->pswapped)
		return d->e;
	return tlater(v->val[0], now - (uint64_t)c->buffer_t) + d->debt;
}

uint16_t
shp_tbf_shared_claim_defer(struct shp_tbf_shared *s,
			   const struct shp_tbf_conf *c,
			   struct shp_tbf_defer *d, const uint32_t *wire,
			   uint16_t n, uint64_t now_ns, uint64_t *next_ns)
{
	uint64_t now = ticks_of(now_ns);
	const uint64_t b = (uint64_t)c->buffer_t;
	/* the view's empty time, refilled to a full bucket at most */
	const uint64_t ve = tlater(d->e, now - b);
	rte_int128_t old;

	/* at the rate the view is under half a bucket before the burst:
	 * straight to the claim, without summing the burst twice */
	if (n > 0 && d->valid && d->conf_id == c->hdr.id && c->peakrate == 0 &&
	    (d->debt == 0 || tdiff(now, d->since) <= (int64_t)(b / 4)) &&
	    tdiff(now, ve) >= (int64_t)(b / 2)) {
		uint64_t tot = 0, cost = 0;
		uint32_t last = UINT32_MAX;
		uint16_t k;

		for (k = 0; k < n; k++) {
			if (wire[k] != last) {
				last = wire[k];
				cost = (uint64_t)shp_tbf_ticks(c->rate_mult,
							       last);
			}
			tot += cost;
		}
		/* at least half a bucket left after it, in this view */
		if (tdiff(now, ve + tot) >= (int64_t)(b / 2) &&
		    d->debt + tot <= b / 16) {
			if (d->debt == 0)
				d->since = now;
			d->from = d->e;
			d->pfrom = d->e;   /* (no peak rate here) */
			d->debt += tot;
			d->e = ve + tot;
			d->put_off++;
			return n;
		}
	}
	if (d->debt > 0 && d->conf_id != c->hdr.id)
		shp_tbf_defer_reset(d);   /* a newer conf's refill forgave it */
	now = clk_now(s, now_ns);
	old = clk_load(s);
	for (;;) {
		uint64_t e, p;
		uint64_t cost = 0, pcost = 0;
		uint32_t last = UINT32_MAX;
		uint16_t k;

		d->from = owed_e(&old, d, c, now);
		d->pfrom = old.val[1];
		d->low = __atomic_load_n(&s->low[0], __ATOMIC_ACQUIRE);
		d->plow = __atomic_load_n(&s->low[1], __ATOMIC_ACQUIRE);
		e = tlater(d->from, now - b);
		p = tlater(d->pfrom, now - (uint64_t)c->mtu_t);
		for (k = 0; k < n; k++) {
			if (wire[k] != last) {
				last = wire[k];
				cost = (uint64_t)shp_tbf_ticks(c->rate_mult,
							       last);
				pcost = c->peakrate ? (uint64_t)shp_tbf_ticks(
						c->peak_mult, last) : 0;
			}
			if (tdiff(e + cost, now) > 0 ||
			    peak_short(c, p, pcost, now))
				break;
			e += cost;
			p += pcost;
		}
		if (k < n)
			*next_ns = ns_at(now_ns, tlater(e + cost, p + pcost));
		if (k == 0 && d->debt == 0)
			return 0;
		if (clk_swap(s, &old, e, p)) {
			clk_seen(s, now);
			low_note(s, c, now, e, p,
				 k < n && tdiff(e + cost, now) > 0,
				 k < n && peak_short(c, p, pcost, now));
			d->debt = 0;
			d->e = d->swapped = e;
			d->pswapped = p;
			d->conf_id = c->hdr.id;
			d->valid = true;
			return k;
		}
	}
}

/* A claim with nothing put off, before or after. */
uint16_t
shp_tbf_shared_claim(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		     const uint32_t *wire, uint16_t n, uint64_t now_ns,
		     uint64_t *next_ns)
{
	struct shp_tbf_defer none = { .valid = false };

	return shp_tbf_shared_claim_defer(s, c, &none, wire, n, now_ns,
					  next_ns);
}

void
shp_tbf_shared_settle(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		      struct shp_tbf_defer *d, uint64_t now_ns)
{
	uint64_t next;

	if (d->debt > 0)
		(void)shp_tbf_shared_claim_defer(s, c, d, NULL, 0, now_ns,
						 &next);
}

uint16_t
shp_tbf_shared_police(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		      const uint32_t *len, uint16_t n, uint64_t now_ns,
		      uint8_t *verdict)
{
	const uint64_t now = clk_now(s, now_ns);
	rte_int128_t old = clk_load(s);

	for (;;) {
		uint64_t e = tlater(old.val[0], now - (uint64_t)c->buffer_t);
		uint64_t p = tlater(old.val[1], now - (uint64_t)c->mtu_t);
		uint64_t cost = 0, pcost = 0;
		uint32_t last = UINT32_MAX;
		uint16_t i, k = 0;

		for (i = 0; i < n; i++) {
			if (len[i] > c->max_size) {
				verdict[i] = 1;
				continue;
			}
			if (len[i] != last) {
				uint64_t w = shp_tbf_wire_len(c, len[i]);

				last = len[i];
				cost = (uint64_t)shp_tbf_ticks(c->rate_mult, w);
				pcost = c->peakrate ? (uint64_t)shp_tbf_ticks(
						c->peak_mult, w) : 0;
			}
			if (tdiff(e + cost, now) > 0 ||
			    peak_short(c, p, pcost, now)) {
				verdict[i] = 1;
				continue;
			}
			verdict[i] = 0;
			e += cost;
			p += pcost;
			k++;
		}
		if (k == 0)
			return 0;   /* nothing conformed: nothing to write */
		if (clk_swap(s, &old, e, p)) {
			clk_seen(s, now);
			return k;
		}
	}
}

void
shp_tbf_shared_charge(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		      uint32_t wire, uint64_t now_ns)
{
	const uint64_t now = clk_now(s, now_ns);
	const uint64_t cost = (uint64_t)shp_tbf_ticks(c->rate_mult, wire);
	const uint64_t pcost = c->peakrate ?
			       (uint64_t)shp_tbf_ticks(c->peak_mult, wire) : 0;
	rte_int128_t old = clk_load(s), new;

	do {
		new.val[0] = tlater(old.val[0], now - (uint64_t)c->buffer_t) +
			     cost;
		new.val[1] = tlater(old.val[1], now - (uint64_t)c->mtu_t) +
			     pcost;
	} while (!rte_atomic128_cmp_exchange(&s->clk, &old, &new, 0,
					     __ATOMIC_ACQ_REL,
					     __ATOMIC_ACQUIRE));
	clk_seen(s, now);
	low_note(s, c, now, new.val[0], new.val[1], false, false);
}

uint64_t
shp_tbf_shared_reserve(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		       uint32_t wire, uint64_t now_ns)
{
	const uint64_t now = clk_now(s, now_ns);
	const uint64_t cost = (uint64_t)shp_tbf_ticks(c->rate_mult, wire);
	const uint64_t pcost = c->peakrate ?
			       (uint64_t)shp_tbf_ticks(c->peak_mult, wire) : 0;
	rte_int128_t old = clk_load(s), new;
	uint64_t at_ns, at;

	do {
		/* when both buckets cover it, in whole ns as a claim then
		 * would see the clock; the buckets as that claim leaves
		 * them (a bucket full before then holds no more) */
		at = tlater(old.val[0], now - (uint64_t)c->buffer_t) + cost;
		if (c->peakrate)
			at = tlater(at, tlater(old.val[1], now -
					       (uint64_t)c->mtu_t) + pcost);
		at_ns = ns_at(now_ns, at);
		at = ticks_of(at_ns);
		new.val[0] = tlater(old.val[0], at - (uint64_t)c->buffer_t) +
			     cost;
		new.val[1] = tlater(old.val[1], at - (uint64_t)c->mtu_t) +
			     pcost;
	} while (!rte_atomic128_cmp_exchange(&s->clk, &old, &new, 0,
					     __ATOMIC_ACQ_REL,
					     __ATOMIC_ACQUIRE));
	__atomic_fetch_add(&s->claims, 1, __ATOMIC_RELAXED);
	clk_seen(s, now);
	/* a frame the buckets refused: they were short */
	low_note(s, c, now, new.val[0], new.val[1], true, true);
	return at_ns;
}

int64_t
shp_tbf_shared_tokens(const struct shp_tbf_shared *s,
		      const struct shp_tbf_conf *c, uint64_t now_ns)
{
	uint64_t e = __atomic_load_n(&s->clk.val[0], __ATOMIC_ACQUIRE);

	return RTE_MIN(c->buffer_t, tdiff(ticks_of(now_ns), e));
}

void
shp_tbf_shared_bind(struct shp_tbf_shared *s, const struct shp_tbf_conf *c)
{
	uint64_t id = __atomic_load_n(&s->conf_id, __ATOMIC_ACQUIRE);

	while (id < c->hdr.id &&
	       !__atomic_compare_exchange_n(&s->conf_id, &id, c->hdr.id, false,
					    __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE))
		;
}

bool
shp_tbf_shared_fresh(const struct shp_tbf_shared *s,
		     const struct shp_tbf_conf *c)
{
	return __atomic_load_n(&s->filled, __ATOMIC_ACQUIRE) == 0 ||
	       c->hdr.id > __atomic_load_n(&s->conf_id, __ATOMIC_ACQUIRE);
}

bool
shp_tbf_shared_adopt(struct shp_tbf_shared *s, const struct shp_tbf_conf *c,
		     uint64_t now_ns)
{
	uint64_t id = __atomic_load_n(&s->conf_id, __ATOMIC_ACQUIRE);
	uint32_t never = 0;
	rte_int128_t old, full = clk_full(c, now_ns);

	/* the first use, or the first shard to meet a newer conf */
	if (!__atomic_compare_exchange_n(&s->filled, &never, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		do {
			if (id >= c->hdr.id)
				return false;
		} while (!__atomic_compare_exchange_n(&s->conf_id, &id, c->hdr.id,
						      false, __ATOMIC_ACQ_REL,
						      __ATOMIC_ACQUIRE));
	} else {
		shp_tbf_shared_bind(s, c);
	}
	/* full at now: what the others claimed under the old conf was
	 * counted in the old conf's ticks */
	old = clk_load(s);
	while (!rte_atomic128_cmp_exchange(&s->clk, &old, &full, 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	low_full(s, &full);
	clk_seen(s, ticks_of(now_ns));
	return true;
}

uint64_t
shp_tbf_shared_when(const struct shp_tbf_shared *s,
		    const struct shp_tbf_conf *c, uint32_t wire,
		    uint64_t now_ns)
{
	return shp_tbf_shared_when_owed(s, c, NULL, wire, now_ns);
}

uint64_t
shp_tbf_shared_when_owed(const struct shp_tbf_shared *s,
			 const struct shp_tbf_conf *c,
			 const struct shp_tbf_defer *d, uint32_t wire,
			 uint64_t now_ns)
{
	const uint64_t now = clk_now(s, now_ns);
	rte_int128_t v = clk_load(s);
	uint64_t at = tlater(owed_e(&v, d, c, now),
			     now - (uint64_t)c->buffer_t) +
		      (uint64_t)shp_tbf_ticks(c->rate_mult, wire);

	if (c->peakrate)
		at = tlater(at, tlater(v.val[1], now - (uint64_t)c->mtu_t) +
				(uint64_t)shp_tbf_ticks(c->peak_mult, wire));
	return ns_at(now_ns, at);
}
