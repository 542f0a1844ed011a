/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A queue kind's state of a link spread over shards (issues 56 and 59):
 * the one AQM of the link, whichever shard a frame reached. The core
 * keeps one zeroed block of it a link (shp_link_shared.queue) and names
 * no kind in it: a kind lays its own words out (at most
 * SHP_LINK_STATE_WORDS) and tags them with its instance, so that a kind
 * put in the slot later never reads another's words as its own.
 *
 * Three parts, each with one protocol, none with a lock or a shared
 * write per packet:
 *
 * - the controller words (w, under seq): a seqlock whose writer claims
 *   it with one compare-and-swap of seq (even -> odd) and publishes with
 *   one store (odd -> even). A kind whose state moves on a time grid (a
 *   PI controller's tupdate) claims it once a period; the others read a
 *   copy once a call. A reader that finds it claimed, or changed under
 *   it, keeps the copy it had: nobody waits, the claimer's state is at
 *   most one call late anywhere.
 * - st: 128 bits a kind moves once a burst with one swap, recomputing
 *   the burst's decisions when another shard's swap came first (red's
 *   average and count, which every arrival of the link moves).
 * - shard[s]: what shard s publishes of its own queue once a call (its
 *   backlog, its oldest frame, ...), one cache line each, written by its
 *   shard only and read by the others: the link's backlog is the sum.
 *
 * Who calls: a queue kind's ops, on the lcore that owns the shard (the
 * owner of env->shard), when env->link is not NULL.
 */
#ifndef LINK_STATE_H
#define LINK_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_atomic.h>
#include <rte_common.h>

#include "shp_stats.h"   /* SHP_MAX_QUEUES */

#define SHP_LINK_STATE_WORDS 12
#define SHP_LINK_FIG_WORDS   8

struct shp_link_fig {
	uint64_t v[SHP_LINK_FIG_WORDS];
} __rte_cache_aligned;

struct shp_link_state {
	rte_int128_t st;                     /* swapped once a burst */
	uint64_t seq;                        /* even: w stable */
	uint64_t tag;                        /* the instance w belongs to */
	uint64_t w[SHP_LINK_STATE_WORDS];    /* the controller */
	struct shp_link_fig shard[SHP_MAX_QUEUES];
} __rte_cache_aligned;

/*
 * Copy the controller's words into dst if they are stable and belong to
 * tag: true. False (dst untouched) while a shard writes them, if they
 * changed during the copy, or if they are another instance's (none has
 * written them yet): the caller keeps what it had.
 */
static inline bool
shp_link_ctl_read(const struct shp_link_state *s, uint64_t tag,
		  uint64_t *dst, unsigned int nw)
{
	uint64_t tmp[SHP_LINK_STATE_WORDS];
	uint64_t s1 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE), s2;
	unsigned int i;

	if (s1 & 1)
		return false;
	if (__atomic_load_n(&s->tag, __ATOMIC_RELAXED) != tag)
		return false;
	for (i = 0; i < nw; i++)
		tmp[i] = __atomic_load_n(&s->w[i], __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	if (s1 != s2)
		return false;
	for (i = 0; i < nw; i++)
		dst[i] = tmp[i];
	return true;
}

/*
 * Claim the controller's words to write them: true with *seq set, the
 * caller alone may then read and write w and must publish. False when
 * another shard holds them (it publishes soon; try on a later call).
 * *fresh: the words are not tag's (zero them as the kind starts).
 */
static inline bool
shp_link_ctl_claim(struct shp_link_state *s, uint64_t tag, uint64_t *seq,
		   bool *fresh)
{
	uint64_t cur = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);

	if (cur & 1)
		return false;
	if (!__atomic_compare_exchange_n(&s->seq, &cur, cur + 1, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	/* the words' stores below come after the odd seq */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*seq = cur + 1;
	*fresh = __atomic_load_n(&s->tag, __ATOMIC_RELAXED) != tag;
	return true;
}

/* The claimed words: write them (w[i] with shp_link_ctl_put) and
 * publish. */
static inline void
shp_link_ctl_put(struct shp_link_state *s, unsigned int i, uint64_t v)
{
	__atomic_store_n(&s->w[i], v, __ATOMIC_RELAXED);
}

static inline void
shp_link_ctl_publish(struct shp_link_state *s, uint64_t seq, uint64_t tag)
{
	__atomic_store_n(&s->tag, tag, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELEASE);
}

/* What this shard publishes of its queue: figure i. */
static inline void
shp_link_fig_put(struct shp_link_state *s, uint16_t shard, unsigned int i,
		 uint64_t v)
{
	__atomic_store_n(&s->shard[shard].v[i], v, __ATOMIC_RELAXED);
}

static inline uint64_t
shp_link_fig_get(const struct shp_link_state *s, uint16_t shard,
		 unsigned int i)
{
	return __atomic_load_n(&s->shard[shard].v[i], __ATOMIC_RELAXED);
}

/* The sum of figure i over the link's shards but `self`. */
static inline uint64_t
shp_link_fig_others(const struct shp_link_state *s, uint16_t nb_shards,
		    uint16_t self, unsigned int i)
{
	uint64_t sum = 0;
	uint16_t q;

	for (q = 0; q < nb_shards; q++)
		if (q != self)
			sum += shp_link_fig_get(s, q, i);
	return sum;
}

/* st as two words (a torn read is caught by the swap that follows) */
static inline rte_int128_t
shp_link_st_load(const struct shp_link_state *s)
{
	rte_int128_t r;

	r.val[0] = __atomic_load_n(&s->st.val[0], __ATOMIC_ACQUIRE);
	r.val[1] = __atomic_load_n(&s->st.val[1], __ATOMIC_ACQUIRE);
	return r;
}

/* st from *expect to want: true; false with *expect the current st */
static inline bool
shp_link_st_swap(struct shp_link_state *s, rte_int128_t *expect,
		 const rte_int128_t *want)
{
	return rte_atomic128_cmp_exchange(&s->st, expect, want, 0,
					  __ATOMIC_ACQ_REL,
					  __ATOMIC_ACQUIRE) != 0;
}

#endif
