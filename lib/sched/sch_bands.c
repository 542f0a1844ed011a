/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <rte_errno.h>
#include <rte_ring.h>

#include "classify.h"
#include "link_state.h"
#include "sch_bands.h"
#include "shp_link.h"
#include "shp_kind.h"
#include "shp_meta.h"
#include "shp_tcargs.h"
#include "shp_units.h"

#define STASH 32

/*
 * The consumer takes packets out of a ring a burst at a time into a stash,
 * which gives it peek and one-by-one dequeue for the token bucket without
 * touching the ring's shared cache lines per packet. Stashed packets still
 * count as in the band.
 */
struct band {
	struct rte_ring *ring;
	uint16_t head;
	uint16_t cnt;
	struct rte_mbuf *stash[STASH];
} __rte_cache_aligned;

/* the kind's drop causes, each name beside its enum (shp_kind.h) */
#define BANDS_DROPS(X) \
	/* a band's ring was full */ \
	X(BANDS_DROP_FULL, "band_full") \
	/* pushed out of the lowest band by the parent's byte limit */ \
	X(BANDS_DROP_LIMIT, "tbf_limit")
enum { BANDS_DROPS(SHP_CAUSE_ENUM) };
static const char *const bands_drops[] = {
	BANDS_DROPS(SHP_CAUSE_NAME) NULL
};

struct bands_priv {
	unsigned int nb_bands;
	const uint8_t *drop_slot;
	uint64_t limit;      /* bytes; 0 = none */
	uint64_t pushout_at; /* clock value of the last pushout pass */
	const struct shp_lcore_ctr *ctr_blocks;
	unsigned int nb_ctr_blocks;
	/* the link's shards' blocks (0: this stage is the link) */
	const struct shp_lcore_ctr *link_blocks;
	unsigned int nb_link_blocks;
	bool single_producer;
	/* What the last peek returned, at the head of band `peeked_band`'s
	 * stash: the next dequeue returns it first even if a producer has
	 * since filled a higher band (Linux qdisc_peek_dequeued), so the
	 * bucket charges the packet it takes. */
	struct rte_mbuf *peeked;
	unsigned int peeked_band;
	unsigned int run_band;     /* of the last peek_run */
	/* the conf it runs, for dump (the control plane swaps it) */
	const struct shp_bands_conf *conf;
	/* a link's shards (issue 56): the bands are strict for the link,
	 * each shard publishing its top band (link_state.h; NULL: this
	 * stage is the link) */
	struct shp_link_state *ls;
	uint16_t shard, nb_shards;
	uint64_t top_at;           /* clock value others_top was read at */
	unsigned int others_top;   /* the top band the others hold */
	unsigned int published;    /* the top band this shard published */
	uint64_t pub_low[2];       /* its lowest band and head, published */
	/* Set by producers, cleared by the consumer: its own cache line. */
	uint32_t bitmap __rte_cache_aligned;
	struct band band[SHP_MAX_BANDS];
};

static inline struct bands_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

static int
bands_init(struct shp_qdisc *q, const void *arg)
{
	const struct shp_bands_conf *kc = arg;
	struct shp_bands_conf c;
	const struct shp_bands_conf *conf = &c;
	struct bands_priv *p = priv(q);
	char name[RTE_RING_NAMESIZE];
	unsigned int b, flags;

	if (kc == NULL) {
		errno = EINVAL;
		return -1;
	}
	c = *kc;
	/* a conf from the kind's parse has the numbers only: where the
	 * stage runs comes from its environment */
	if (c.name == NULL && q->env != NULL) {
		c.name = q->env->name;
		c.socket = q->env->socket;
		c.single_producer = q->env->single_producer;
		c.ctr_blocks = q->env->ctr_blocks;
		c.nb_ctr_blocks = q->env->nb_ctr_blocks;
		c.link_ctr_blocks = q->env->link_ctr_blocks;
		c.nb_link_ctr_blocks = q->env->nb_link_ctr_blocks;
		c.lean = q->env->lean;
	}
	if (c.name == NULL || conf->nb_bands < 1 ||
	    conf->nb_bands > SHP_MAX_BANDS || conf->ring_size < 1) {
		errno = EINVAL;
		return -1;
	}
	p->nb_bands = conf->nb_bands;
	/* (a conf built by hand, with its name, may not outlive init) */
	p->conf = kc->name == NULL ? kc : NULL;
	p->drop_slot = q->drop_slot;
	p->ctr_blocks = conf->ctr_blocks;
	p->nb_ctr_blocks = conf->nb_ctr_blocks;
	p->link_blocks = conf->link_ctr_blocks;
	p->nb_link_blocks = conf->link_ctr_blocks != NULL ?
			    conf->nb_link_ctr_blocks : 0;
	p->ls = shp_link_queue(q);
	if (p->ls != NULL) {
		p->shard = q->env->shard;
		p->nb_shards = q->env->nb_shards;
		/* unknown: the first call writes it (an earlier stage of
		 * this shard may have left another) */
		p->published = UINT32_MAX;
		p->pub_low[0] = p->pub_low[1] = UINT64_MAX;
	}
	flags = RING_F_SC_DEQ | RING_F_EXACT_SZ;
	p->single_producer = conf->single_producer;
	if (conf->single_producer)
		flags |= RING_F_SP_ENQ;
	for (b = 0; b < p->nb_bands; b++) {
		snprintf(name, sizeof(name), "%s_b%u", conf->name, b);
		p->band[b].ring = shp_ring_new(name, conf->ring_size,
					       conf->socket, flags,
					       conf->lean);
		if (p->band[b].ring == NULL) {
			errno = rte_errno;
			while (b-- > 0)
				shp_ring_free(p->band[b].ring);
			return -1;
		}
	}
	return 0;
}

static void
bands_fini(struct shp_qdisc *q)
{
	struct bands_priv *p = priv(q);
	unsigned int b;

	for (b = 0; b < p->nb_bands; b++)
		shp_ring_free(p->band[b].ring);
}

static inline void
mark_nonempty(struct bands_priv *p, uint32_t bits)
{
	/*
	 * The consumer clears a bit and then re-reads the ring; we enqueue
	 * and then read the bit. Without a full fence both sides could miss
	 * each other's store (store-load reordering) and strand a packet.
	 * One fence per burst, not per packet.
	 */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if ((__atomic_load_n(&p->bitmap, __ATOMIC_RELAXED) & bits) != bits)
		__atomic_fetch_or(&p->bitmap, bits, __ATOMIC_SEQ_CST);
}

/*
 * Enqueue pkts[0..n), all for band b; the refused are dropped. bytes is
 * their pkt_len sum when the caller knows it, else UINT64_MAX.
 */
static inline uint16_t
band_put(struct bands_priv *p, unsigned int b, struct rte_mbuf **pkts,
	 uint16_t n, uint64_t bytes, struct shp_ctx *ctx)
{
	struct shp_band_ctr *bc = &ctx->ctr->band[b];
	uint16_t ok, k;

	ok = rte_ring_enqueue_burst(p->band[b].ring, (void **)pkts, n, NULL);
	if (unlikely(ok < n) || bytes == UINT64_MAX) {
		bytes = 0;
		for (k = 0; k < ok; k++)
			bytes += rte_pktmbuf_pkt_len(pkts[k]);
	}
	bc->enqueued += ok;
	bc->enqueued_bytes += bytes;
	if (unlikely(ok < n)) {
		bc->full += n - ok;
		shp_drop_full_band(ctx, p->drop_slot[BANDS_DROP_FULL], b,
				   pkts + ok, n - ok);
	}
	return ok;
}

/* pkts[i] goes to band[i]; used has bit b set for every band used. */
static inline uint16_t
enqueue_vec(struct bands_priv *p, struct rte_mbuf **pkts, uint8_t *band,
	    uint32_t used, uint64_t bytes, uint16_t n, struct shp_ctx *ctx)
{
	uint32_t bits = 0;
	uint16_t i, accepted = 0;

	if (n == 0)
		return 0;
	if (unlikely(used >> p->nb_bands)) {
		/* a band past the last: the last band takes it */
		used = 0;
		for (i = 0; i < n; i++) {
			if (band[i] >= p->nb_bands)
				band[i] = p->nb_bands - 1;
			used |= 1u << band[i];
		}
	}
	if (likely((used & (used - 1)) == 0)) {
		/* one band: the whole vector goes as it is */
		accepted = band_put(p, band[0], pkts, n, bytes, ctx);
		bits = accepted ? used : 0;
	} else {
		struct rte_mbuf *vec[n];

		while (used != 0) {
			unsigned int b = __builtin_ctz(used);
			uint16_t cnt = 0, ok;

			used &= used - 1;
			for (i = 0; i < n; i++)
				if (band[i] == b)
					vec[cnt++] = pkts[i];
			ok = band_put(p, b, vec, cnt, UINT64_MAX, ctx);
			accepted += ok;
			if (ok > 0)
				bits |= 1u << b;
		}
	}
	if (bits)
		mark_nonempty(p, bits);
	return accepted;
}

static uint16_t
bands_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	      struct shp_ctx *ctx)
{
	const struct shp_bands_conf *c =
		__atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE);
	uint8_t band[n ? n : 1];
	uint32_t used = 0;
	uint16_t i;

	/* our own map: the band RX chose was its port's (a class's queue
	 * has a map of its own); a stage built by hand has none */
	for (i = 0; i < n; i++) {
		const struct shp_meta *m = shp_meta(pkts[i]);

		band[i] = c != NULL ? c->priomap[m->prio] : m->band;
		used |= 1u << band[i];
	}
	return enqueue_vec(priv(q), pkts, band, used, UINT64_MAX, n, ctx);
}

uint16_t
shp_bands_enqueue_vec(struct shp_qdisc *q, struct rte_mbuf **pkts,
		      uint8_t *band, uint32_t used, uint64_t bytes,
		      uint16_t n, struct shp_ctx *ctx)
{
	return enqueue_vec(priv(q), pkts, band, used, bytes, n, ctx);
}

/* Make the stash of band b non-empty; false when the band is empty. */
static inline int
band_fill(struct band *bd)
{
	if (bd->cnt > 0)
		return 1;
	bd->head = 0;
	bd->cnt = rte_ring_sc_dequeue_burst(bd->ring, (void **)bd->stash,
					    STASH, NULL);
	return bd->cnt > 0;
}

/*
 * The lowest band holding packets, with its stash filled; -1 when all are
 * empty. A band found empty has its bit cleared, then the ring is read again
 * in case a producer enqueued meanwhile (see mark_nonempty).
 */
static inline int
first_band(struct bands_priv *p)
{
	uint32_t bm = __atomic_load_n(&p->bitmap, __ATOMIC_ACQUIRE);

	while (bm != 0) {
		unsigned int b = __builtin_ctz(bm);
		struct band *bd = &p->band[b];

		if (likely(band_fill(bd)))
			return b;
		__atomic_fetch_and(&p->bitmap, ~(1u << b), __ATOMIC_SEQ_CST);
		if (!rte_ring_empty(bd->ring)) {
			__atomic_fetch_or(&p->bitmap, 1u << b,
					  __ATOMIC_SEQ_CST);
			continue;
		}
		bm &= bm - 1;
	}
	return -1;
}

/*
 * Strict priority across a link's shards: each shard's consumer publishes
 * the top band it holds (its figure BF_TOP: band + 1, 0 for none) once a
 * call, and sends from band b only while no other shard published a band
 * above b. So band b leaves only while no shard holds a frame of a band
 * above it, within a call of the shard that holds it (a poll, one
 * burst), and a band flooding on one shard starves the lower bands of
 * every shard, as on one queue. The top band of the link always may go:
 * no shard waits for a shard that waits.
 */
#define BF_TOP (SHP_LINK_FIG_WORDS - 1)   /* a word the AQMs leave */

/* what the shard holds, not what the bitmap may still claim: a stale
 * bit of a shard nobody polls would hold the others back for good */
static inline unsigned int
own_top(const struct bands_priv *p)
{
	uint32_t bm = __atomic_load_n(&p->bitmap, __ATOMIC_ACQUIRE);

	while (bm != 0) {
		unsigned int b = __builtin_ctz(bm);

		if (p->band[b].cnt > 0 || !rte_ring_empty(p->band[b].ring))
			return b;
		bm &= bm - 1;
	}
	return SHP_MAX_BANDS;
}

/* a write when the top band changes (a band fills or empties), not a
 * packet */
static inline void
link_publish_top(struct bands_priv *p)
{
	unsigned int b;

	if (p->ls == NULL)
		return;
	b = own_top(p);
	if (b == p->published)
		return;
	p->published = b;
	shp_link_fig_put(p->ls, p->shard, BF_TOP, b < SHP_MAX_BANDS ? b + 1 : 0);
}

/* the top band the other shards hold (SHP_MAX_BANDS: none), read once
 * a poll (one clock value): tbf peeks and takes a run at a time */
static inline unsigned int
link_top(struct bands_priv *p, uint64_t now)
{
	unsigned int top = SHP_MAX_BANDS;
	uint16_t s;

	if (p->ls == NULL)
		return SHP_MAX_BANDS;
	if (now == p->top_at && now != 0)
		return p->others_top;
	for (s = 0; s < p->nb_shards; s++) {
		uint64_t v;

		if (s == p->shard)
			continue;
		v = shp_link_fig_get(p->ls, s, BF_TOP);
		/* (a word another kind left there reads as none) */
		if (v > 0 && v <= SHP_MAX_BANDS)
			top = RTE_MIN(top, (unsigned int)v - 1);
	}
	p->top_at = now;
	p->others_top = top;
	return top;
}

static inline uint64_t
band_take(struct band *bd, struct shp_band_ctr *bc, struct rte_mbuf **out,
	  uint16_t k)
{
	uint64_t bytes = 0;
	uint16_t i;

	for (i = 0; i < k; i++) {
		out[i] = bd->stash[bd->head + i];
		bytes += rte_pktmbuf_pkt_len(out[i]);
	}
	bd->head += k;
	bd->cnt -= k;
	bc->dequeued += k;
	bc->dequeued_bytes += bytes;
	return bytes;
}

/* Bytes in band b right now, from the counters of blocks[0..nb). */
static uint64_t
band_backlog(const struct shp_lcore_ctr *blocks, unsigned int nb,
	     uint16_t port, unsigned int b)
{
	uint64_t in = 0, out = 0;
	unsigned int l;

	for (l = 0; l < nb; l++) {
		const struct shp_band_ctr *bc = &blocks[l].port[port].band[b];

		in += __atomic_load_n(&bc->enqueued_bytes, __ATOMIC_RELAXED);
		out += bc->dequeued_bytes + bc->pushed_out_bytes;
	}
	return in > out ? in - out : 0;
}

/*
 * A link's shards (issue 56): the limit bounds the link's backlog, the
 * sum over every shard's blocks, and the excess goes as one queue's
 * pushout sheds it: from the head of the link's lowest band, the oldest
 * frame first, whichever shard holds it. Each shard publishes the lowest
 * band it holds and that band's head (figures BF_LOW, BF_HEAD: band + 1
 * and arrival + 1, 0 for none) when they change, and sheds from a band
 * its frames older than every other shard's head of the band, and of an
 * excess past a burst its share at once (in proportion to what it holds
 * of the band, whole frames, rounded down); a band above another shard's lowest
 * is never shed while that one holds bytes. The others' figures are a
 * pass old at most: what a shard leaves to an older head elsewhere is
 * that shard's own pass's, and the shares keep the link's backlog from
 * growing while each waits for the other's (live, a poll each).
 */
#define BF_LOW  (SHP_LINK_FIG_WORDS - 2)
#define LINK_SLACK 32   /* frames: a burst */
#define BF_HEAD (SHP_LINK_FIG_WORDS - 3)

/* a write when the lowest band or its head changes, not a packet */
static void
link_publish_low(struct bands_priv *p)
{
	uint32_t bm = __atomic_load_n(&p->bitmap, __ATOMIC_ACQUIRE);
	uint64_t low = 0, head = 0;

	if (p->ls == NULL)
		return;
	while (bm != 0) {
		unsigned int b = 31 - __builtin_clz(bm);

		if (band_fill(&p->band[b])) {
			struct band *bd = &p->band[b];

			low = b + 1;
			head = shp_meta(bd->stash[bd->head])->rx_ns + 1;
			break;
		}
		bm &= ~(UINT32_C(1) << b);
	}
	if (low != p->pub_low[0]) {
		p->pub_low[0] = low;
		shp_link_fig_put(p->ls, p->shard, BF_LOW, low);
	}
	if (head != p->pub_low[1]) {
		p->pub_low[1] = head;
		shp_link_fig_put(p->ls, p->shard, BF_HEAD, head);
	}
}

/* Sending may have moved the lowest band's head: the others shed by it
 * (only a link's limit reads it). */
static inline void
link_low_moved(struct bands_priv *p)
{
	if (p->limit != 0 && p->nb_link_blocks > 0)
		link_publish_low(p);
}

/* The oldest head (arrival + 1) of band b the other shards published,
 * 0 if none did. */
static uint64_t
link_low_head(const struct bands_priv *p, unsigned int b)
{
	uint64_t oldest = 0;
	uint16_t s;

	if (p->ls == NULL)
		return 0;
	for (s = 0; s < p->nb_shards; s++) {
		uint64_t h;

		if (s == p->shard ||
		    shp_link_fig_get(p->ls, s, BF_LOW) != (uint64_t)b + 1)
			continue;
		h = shp_link_fig_get(p->ls, s, BF_HEAD);
		if (h != 0 && (oldest == 0 || h < oldest))
			oldest = h;
	}
	return oldest;
}

/*
 * Keep the bytes in all bands within the limit by dropping from the head of
 * the lowest-priority non-empty band. Runs once per clock value: the token
 * bucket peeks packet by packet within one poll.
 */
/* Drop band b's head (the stash filled), counted as the limit's. */
static uint32_t
pushout_head(struct bands_priv *p, unsigned int b, struct shp_ctx *ctx)
{
	struct band *bd = &p->band[b];
	struct shp_band_ctr *bc = &ctx->ctr->band[b];
	struct rte_mbuf *m = bd->stash[bd->head++];
	uint32_t len = rte_pktmbuf_pkt_len(m);

	bd->cnt--;
	bc->pushed_out++;
	bc->pushed_out_bytes += len;
	ctx->ctr->drops[p->drop_slot[BANDS_DROP_LIMIT]]++;
	shp_drop_capture(ctx, p->drop_slot[BANDS_DROP_LIMIT], b, &m, 1);
	rte_pktmbuf_free(m);
	return len;
}

/* bands_pushout on a link's shards (above) */
static void
link_pushout(struct shp_qdisc *q, struct bands_priv *p,
	     const uint64_t *own, struct shp_ctx *ctx)
{
	uint64_t total = 0, excess, link[SHP_MAX_BANDS];
	int b;

	link_publish_low(p);
	for (b = 0; b < (int)p->nb_bands; b++) {
		link[b] = band_backlog(p->link_blocks, p->nb_link_blocks,
				       q->port, (unsigned int)b);
		/* (counters read mid-update) */
		link[b] = RTE_MAX(link[b], own[b]);
		total += link[b];
	}
	if (total <= p->limit)
		return;
	excess = total - p->limit;
	for (b = (int)p->nb_bands - 1; b >= 0 && excess > 0; b--) {
		struct band *bd = &p->band[b];
		/* another shard's head of b, if it holds any of b */
		uint64_t older = link[b] > own[b] ?
				 link_low_head(p, (unsigned int)b) : 0;

		uint64_t cut = RTE_MIN(excess, link[b]), share = 0;

		if (link[b] == 0)
			continue;
		/* past a burst of the excess (LINK_SLACK frames of the head's
		 * length), this shard's share of the rest in whole frames,
		 * shed at once: the others' heads are a pass old, and shards
		 * that each left the excess to an older head they saw would
		 * let the link's backlog grow while they wait for each other */
		if (band_fill(bd)) {
			uint64_t slack = (uint64_t)LINK_SLACK *
				rte_pktmbuf_pkt_len(bd->stash[bd->head]);

			if (cut > slack)
				share = (uint64_t)((unsigned __int128)
					(cut - slack) * own[b] / link[b]);
		}
		while (excess > 0 && band_fill(bd)) {
			struct rte_mbuf *m = bd->stash[bd->head];
			uint32_t len = rte_pktmbuf_pkt_len(m);

			if (len > share && older != 0 &&
			    shp_meta(m)->rx_ns >= older)
				break;
			share -= RTE_MIN((uint64_t)len, share);
			excess -= RTE_MIN((uint64_t)pushout_head(
					p, (unsigned int)b, ctx), excess);
		}
		/* the others shed theirs of b, oldest first */
		if (link[b] > own[b])
			break;
	}
	link_publish_low(p);
}

/*
 * Keep the bytes in all bands within the limit by dropping from the head of
 * the lowest-priority non-empty band. Runs once per clock value: the token
 * bucket peeks packet by packet within one poll.
 */
static void
bands_pushout(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct bands_priv *p = priv(q);
	uint64_t backlog[SHP_MAX_BANDS], total = 0, excess;
	int b;

	if (p->limit == 0 || ctx->now == p->pushout_at)
		return;
	p->pushout_at = ctx->now;
	for (b = 0; b < (int)p->nb_bands; b++) {
		backlog[b] = band_backlog(p->ctr_blocks, p->nb_ctr_blocks,
					  q->port, b);
		total += backlog[b];
	}
	if (p->nb_link_blocks > 0) {
		link_pushout(q, p, backlog, ctx);
		return;
	}
	/* one queue: all of the excess, from the lowest band up */
	excess = total > p->limit ? total - p->limit : 0;
	for (b = (int)p->nb_bands - 1; b >= 0 && excess > 0; b--)
		while (excess > 0 && band_fill(&p->band[b]))
			excess -= RTE_MIN((uint64_t)pushout_head(
					p, (unsigned int)b, ctx), excess);
}

static uint16_t
bands_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	      struct shp_ctx *ctx)
{
	struct bands_priv *p = priv(q);
	unsigned int top = link_top(p, ctx->now);
	uint64_t total = 0;
	uint16_t got = 0;

	bands_pushout(q, ctx);
	if (p->peeked != NULL && n > 0) {
		struct band *bd = &p->band[p->peeked_band];

		/* (unless the pushout has dropped it meanwhile) */
		if (bd->cnt > 0 && bd->stash[bd->head] == p->peeked) {
			total += band_take(bd, &ctx->ctr->band[p->peeked_band],
					   pkts, 1);
			got = 1;
		}
		p->peeked = NULL;
	}
	while (got < n) {
		uint32_t bm = __atomic_load_n(&p->bitmap, __ATOMIC_ACQUIRE);
		struct shp_band_ctr *bc;
		struct band *bd;
		uint64_t bytes = 0;
		unsigned int b;
		uint16_t k, i;

		if (bm == 0)
			break;
		b = __builtin_ctz(bm);
		if (b > top)   /* another shard holds a band above it */
			break;
		bd = &p->band[b];
		bc = &ctx->ctr->band[b];
		if (bd->cnt > 0) {
			/* what peek took out of the ring goes first */
			k = RTE_MIN((uint16_t)(n - got), bd->cnt);
			total += band_take(bd, bc, pkts + got, k);
			got += k;
			continue;
		}
		/* straight from the ring, no stash copy */
		k = rte_ring_sc_dequeue_burst(bd->ring, (void **)(pkts + got),
					      n - got, NULL);
		if (k == 0) {
			__atomic_fetch_and(&p->bitmap, ~(1u << b),
					   __ATOMIC_SEQ_CST);
			if (!rte_ring_empty(bd->ring))
				__atomic_fetch_or(&p->bitmap, 1u << b,
						  __ATOMIC_SEQ_CST);
			continue;
		}
		for (i = 0; i < k; i++)
			bytes += rte_pktmbuf_pkt_len(pkts[got + i]);
		bc->dequeued += k;
		bc->dequeued_bytes += bytes;
		total += bytes;
		got += k;
	}
	link_publish_top(p);
	link_low_moved(p);
	ctx->bytes = total;
	return got;
}

static struct rte_mbuf *
bands_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct bands_priv *p = priv(q);
	int b;

	bands_pushout(q, ctx);
	b = first_band(p);
	link_publish_top(p);
	if (b < 0 || (unsigned int)b > link_top(p, ctx->now)) {
		p->peeked = NULL;
		return NULL;
	}
	p->peeked = p->band[b].stash[p->band[b].head];
	p->peeked_band = b;
	return p->peeked;
}

/* A run is the top band's stash (at most STASH): a higher band filled
 * meanwhile waits for the next run, as for the next dequeue burst. */
static uint16_t
bands_peek_run(struct shp_qdisc *q, struct rte_mbuf *const **run,
	       struct shp_ctx *ctx)
{
	struct bands_priv *p = priv(q);
	struct band *bd;
	int b;

	bands_pushout(q, ctx);
	p->peeked = NULL;
	b = first_band(p);
	link_publish_top(p);
	if (b < 0 || (unsigned int)b > link_top(p, ctx->now))
		return 0;
	bd = &p->band[b];
	p->run_band = b;
	*run = &bd->stash[bd->head];
	return bd->cnt;
}

static uint64_t
bands_take_run(struct shp_qdisc *q, uint16_t k, struct rte_mbuf **out,
	       struct shp_ctx *ctx)
{
	struct bands_priv *p = priv(q);
	uint64_t bytes = band_take(&p->band[p->run_band],
				   &ctx->ctr->band[p->run_band], out, k);

	link_low_moved(p);
	return bytes;
}

/* Anything queued can leave at once: the bands never hold a packet back. */
static uint64_t
bands_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	uint32_t bm = shp_bands_bitmap(q);

	while (bm != 0) {
		unsigned int b = __builtin_ctz(bm);

		if (shp_bands_count(q, b) > 0)
			return ctx->now;
		bm &= bm - 1;
	}
	return UINT64_MAX;
}

/* Free every queued packet, counted as flushed (by its band too, so the
 * band's depth returns to zero; not as pushed_out, which is tbf's limit). */
static void
bands_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct bands_priv *p = priv(q);
	unsigned int b;

	p->peeked = NULL;
	for (b = 0; b < p->nb_bands; b++) {
		struct band *bd = &p->band[b];
		struct shp_band_ctr *bc = &ctx->ctr->band[b];

		while (band_fill(bd)) {
			uint64_t bytes = 0;
			uint16_t i;

			for (i = 0; i < bd->cnt; i++)
				bytes += rte_pktmbuf_pkt_len(
					bd->stash[bd->head + i]);
			bc->flushed += bd->cnt;
			bc->pushed_out_bytes += bytes;   /* left the band */
			shp_drop_burst(ctx, SHP_DROP_FLUSHED,
				       bd->stash + bd->head, bd->cnt);
			bd->cnt = 0;
		}
	}
}

/* Empty, and fed only by its consumer's lcore: no producer can be between
 * an enqueue and setting its bit, so a clear bitmap means empty rings and
 * stashes. */
static bool
bands_idle(const struct shp_qdisc *q)
{
	const struct bands_priv *p = priv(q);

	return p->single_producer &&
	       __atomic_load_n(&p->bitmap, __ATOMIC_RELAXED) == 0;
}

static void
bands_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	unsigned int b;

	st->qlen = 0;
	for (b = 0; b < priv(q)->nb_bands; b++)
		st->qlen += shp_bands_count(q, b);
}

/* The data path never reads the conf: the RX pass maps priorities to
 * bands with the map the chain takes from it (shp_chain.priomap), and
 * check_change kept the number of bands. */
static const void *
bands_change(struct shp_qdisc *q, const void *conf)
{
	struct bands_priv *p = priv(q);
	const void *old = p->conf;

	__atomic_store_n(&p->conf, (const struct shp_bands_conf *)conf,
			 __ATOMIC_RELEASE);
	return old;
}

static void
bands_dump(const struct shp_qdisc *q, FILE *f)
{
	const struct shp_bands_conf *c =
		__atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE);
	int k;

	fprintf(f, "bands %u", priv(q)->nb_bands);
	if (c == NULL || !c->priomap_set)
		return;
	fprintf(f, " priomap ");
	for (k = 0; k < 16; k++)
		fprintf(f, "%s%u", k ? "," : "", c->priomap[k]);
}

void
shp_bands_set_limit(struct shp_qdisc *q, uint64_t bytes)
{
	__atomic_store_n(&priv(q)->limit, bytes, __ATOMIC_RELEASE);
}

uint32_t
shp_bands_bitmap(const struct shp_qdisc *q)
{
	return __atomic_load_n(&priv(q)->bitmap, __ATOMIC_ACQUIRE);
}

static int
bands_report(const struct shp_qdisc *q, char *buf, size_t len)
{
	return snprintf(buf, len, "non-empty bitmap 0x%x",
			shp_bands_bitmap(q));
}

unsigned int
shp_bands_count(const struct shp_qdisc *q, unsigned int b)
{
	const struct band *bd = &priv(q)->band[b];

	return rte_ring_count(bd->ring) +
	       __atomic_load_n(&bd->cnt, __ATOMIC_RELAXED);
}

unsigned int
shp_bands_nb(const struct shp_qdisc *q)
{
	return priv(q)->nb_bands;
}

const struct shp_qdisc_ops shp_bands_ops = {
	.id = "bands",
	.priv_size = sizeof(struct bands_priv),
	.mp_enqueue = true,
	.arrival_order = true,
	.init = bands_init,
	.change = bands_change,
	.enqueue = bands_enqueue,
	.enqueue_rx = shp_bands_enqueue_vec,
	.set_limit = shp_bands_set_limit,
	.report = bands_report,
	.dequeue = bands_dequeue,
	.peek = bands_peek,
	.peek_run = bands_peek_run,
	.take_run = bands_take_run,
	.next_time = bands_next_time,
	.reset = bands_reset,
	.idle = bands_idle,
	.stats = bands_stats,
	.dump = bands_dump,
	.fini = bands_fini,
};

/*
 * pfifo_fast's own parameters: its number of bands and the band of each
 * priority the RX pass computes (Linux's prio qdisc's bands and priomap).
 * What the text leaves out comes from the global aliases (env: --bands,
 * --priomap, `set priomap`), so the port's own words win over them.
 */
#define PF_MAX_WORDS 40
#define PF_MAX_LEN 256

static int
pf_words(struct shp_tcargs *a, struct shp_bands_conf *c, char *map_text,
	 size_t map_len, unsigned int min_bands)
{
	char sub[SHP_ERR_LEN];

	for (a->i = 0; a->i < a->argc; a->i++) {
		const char *w = shp_tc_cur(a);

		if (strcmp(w, "bands") == 0) {
			int64_t v;

			if (shp_tc_next(a, "a number") ||
			    shp_tc_int(a, "bands", min_bands, SHP_MAX_BANDS,
				       &v))
				return -1;
			c->nb_bands = (unsigned int)v;
			c->bands_set = true;
		} else if (strcmp(w, "priomap") == 0) {
			size_t off = 0;

			/* tc's "priomap 1 2 2 ..." or one "1,2,2,..."
			 * word: every word up to the next keyword, so that
			 * a bad one is named rather than taken for one */
			map_text[0] = '\0';
			while (a->i + 1 < a->argc &&
			       strcmp(a->argv[a->i + 1], "bands") != 0 &&
			       strcmp(a->argv[a->i + 1], "priomap") != 0) {
				a->i++;
				off += snprintf(map_text + off,
						off < map_len ? map_len - off : 0,
						"%s%s", off ? "," : "",
						shp_tc_cur(a));
			}
			if (off >= map_len)
				return shp_tc_fail(a, "priomap: too long");
			if (shp_priomap_parse(map_text, SHP_MAX_BANDS,
					      c->priomap, sub) < 0)
				return shp_tc_fail(a, "%s", sub);
			c->priomap_set = true;
		} else {
			return shp_tc_fail(a, "unknown word '%s' (bands, "
					   "priomap)", w);
		}
	}
	return 0;
}

/* Complete c's map from what its text left to the aliases, and check it
 * against its bands. */
static int
pf_resolve(struct shp_bands_conf *c, const char *map_text,
	   const struct shp_kind_env *env, const char *qdisc, char *err)
{
	char sub[SHP_ERR_LEN];
	unsigned int i;

	if (c->priomap_set) {
		if (shp_priomap_parse(map_text, (uint8_t)c->nb_bands,
				      c->priomap, sub) < 0) {
			snprintf(err, SHP_ERR_LEN, "%s: %s (bands %u)",
				 qdisc, sub, c->nb_bands);
			return -1;
		}
		return 0;
	}
	c->alias_map = env != NULL && env->priomap != NULL;
	if (!c->alias_map) {
		shp_priomap_default((uint8_t)c->nb_bands, c->priomap);
		return 0;
	}
	memcpy(c->priomap, env->priomap, sizeof(c->priomap));
	for (i = 0; i < 16; i++)
		if (c->priomap[i] >= c->nb_bands) {
			snprintf(err, SHP_ERR_LEN, "%s: bands %u: the "
				 "global priomap sends priority %u to band %u: "
				 "give this queue its own priomap", qdisc,
				 c->nb_bands, i, c->priomap[i]);
			return -1;
		}
	return 0;
}

/* qdisc: the kind's name, for errors; min_bands: the fewest it takes */
static void *
bands_parse(const char *args, const struct shp_kind_env *env,
	    const char *qdisc, unsigned int min_bands, char *err)
{
	struct shp_tcargs a = { .qdisc = qdisc, .err = err };
	char buf[PF_MAX_LEN], *argv[PF_MAX_WORDS], map_text[PF_MAX_LEN];
	struct shp_bands_conf c = { 0 }, *out;

	err[0] = '\0';
	c.nb_bands = env != NULL ? env->bands : 3;
	c.ring_size = env != NULL ? env->ring_size : 1024;
	if (shp_tc_split(&a, args, buf, sizeof(buf), argv,
			 PF_MAX_WORDS) < 0 ||
	    pf_words(&a, &c, map_text, sizeof(map_text), min_bands) < 0 ||
	    pf_resolve(&c, map_text, env, qdisc, err) < 0)
		return NULL;
	if (c.nb_bands < min_bands) {   /* from the aliases */
		snprintf(err, SHP_ERR_LEN, "%s: bands %u: at least %u", qdisc,
			 c.nb_bands, min_bands);
		return NULL;
	}
	out = malloc(sizeof(*out));
	if (out == NULL) {
		snprintf(err, SHP_ERR_LEN, "%s: out of memory", qdisc);
		return NULL;
	}
	*out = c;
	return out;
}

static void *
pfifo_fast_parse(const char *args, const struct shp_kind_env *env,
		 char *err)
{
	return bands_parse(args, env, "pfifo_fast", 1, err);
}

/* Linux's prio takes 2 bands at least (TCQ_PRIO_BANDS at most) */
static void *
prio_parse(const char *args, const struct shp_kind_env *env, char *err)
{
	return bands_parse(args, env, "prio", 2, err);
}

static int
format_map(const uint8_t *map, char sep, char *buf, size_t len)
{
	int k, n = 0;

	for (k = 0; k < 16; k++)
		n += snprintf(buf + RTE_MIN((size_t)n, len),
			      (size_t)n < len ? len - n : 0, "%s%u",
			      k ? (sep == ',' ? "," : " ") : "", map[k]);
	return n;
}

/* Only the words its text gave: what it left to the aliases follows
 * them again when reparsed. */
static int
pfifo_fast_format(const void *conf, char *buf, size_t len)
{
	const struct shp_bands_conf *c = conf;
	int n = 0;

	if (len > 0)
		buf[0] = '\0';
	if (c == NULL)
		return 0;
	if (c->bands_set)
		n = snprintf(buf, len, "bands %u", c->nb_bands);
	if (c->priomap_set) {
		n += snprintf(buf + RTE_MIN((size_t)n, len),
			      (size_t)n < len ? len - n : 0, "%spriomap ",
			      n ? " " : "");
		n += format_map(c->priomap, ',', buf + RTE_MIN((size_t)n, len),
				(size_t)n < len ? len - n : 0);
	}
	return n;
}

/* as tc prints prio: its bands and priomap; Linux's default (three bands,
 * the default map) is pfifo_fast */
static int
pfifo_fast_tc_print(const char *args, const struct shp_kind_env *env,
		    const char **tc_name, char *buf, size_t len)
{
	char err[SHP_ERR_LEN];
	struct shp_bands_conf *c = bands_parse(args, env, "pfifo_fast", 1,
					       err);
	unsigned int bands = env != NULL ? env->bands : 3;
	uint8_t def[16], map[16];
	int n;

	if (c != NULL) {
		bands = c->nb_bands;
		memcpy(map, c->priomap, sizeof(map));
		free(c);
	} else {
		shp_priomap_default((uint8_t)bands, map);
	}
	shp_priomap_default((uint8_t)bands, def);
	if (bands != 3 || memcmp(map, def, sizeof(def)) != 0 ||
	    strcmp(*tc_name, "prio") == 0)
		*tc_name = "prio";
	n = snprintf(buf, len, "bands %u priomap ", bands);
	return n + format_map(map, ' ', buf + RTE_MIN((size_t)n, len),
			      (size_t)n < len ? len - n : 0);
}

/* every band's ring full */
static uint64_t
pfifo_fast_capacity(const void *conf, const struct shp_kind_env *env)
{
	const struct shp_bands_conf *c = conf;

	if (c != NULL)
		return (uint64_t)c->nb_bands * c->ring_size;
	return env != NULL ? (uint64_t)env->bands * env->ring_size :
	       3 * 1024;
}

/* A running stage keeps its rings: its map may change, its number of
 * bands not; a change that leaves bands out keeps the running number
 * (and a map it took from the aliases is checked against it again). */
static int
pfifo_fast_check_change(const void *cur, void *next, char *err)
{
	const struct shp_bands_conf *a = cur;
	struct shp_bands_conf *b = next;
	unsigned int i;

	if (a == NULL || b == NULL || a->nb_bands == b->nb_bands)
		return 0;
	if (b->bands_set) {
		snprintf(err, SHP_ERR_LEN, "pfifo_fast: bands cannot change "
			 "while running (%u now): leave it out to keep it, or "
			 "restart", a->nb_bands);
		return -1;
	}
	b->nb_bands = a->nb_bands;
	if (!b->priomap_set && !b->alias_map) {
		shp_priomap_default((uint8_t)b->nb_bands, b->priomap);
		return 0;
	}
	for (i = 0; i < 16; i++)
		if (b->priomap[i] >= b->nb_bands) {
			snprintf(err, SHP_ERR_LEN, "pfifo_fast: priority %u "
				 "to band %u, past the last of its %u bands",
				 i, b->priomap[i], b->nb_bands);
			return -1;
		}
	return 0;
}

static unsigned int
pfifo_fast_bands(const void *conf, const uint8_t **priomap)
{
	const struct shp_bands_conf *c = conf;

	*priomap = c->priomap;
	return c->nb_bands;
}

/* (the byte limit, tbf's, is the link's: link_pushout) */
#define BANDS_SHARDS_NOTE "ring-size bounds each shard's bands, so the " \
	"link holds up to N times it in packets"

const struct shp_kind shp_kind_pfifo_fast = {
	.name = "pfifo_fast",
	.slot = SHP_SLOT_QUEUE,
	.ops = &shp_bands_ops,
	.parse = pfifo_fast_parse,
	.format = pfifo_fast_format,
	.conf_free = free,
	.capacity = pfifo_fast_capacity,
	.tc_print = pfifo_fast_tc_print,
	.check_change = pfifo_fast_check_change,
	.bands = pfifo_fast_bands,
	.drops = bands_drops,
	.usage = "pfifo_fast [bands N] [priomap P0 ... P15]",
	.words = "bands#priomap",
	.shards_note = BANDS_SHARDS_NOTE,
};

/* Linux's prio: the same bands under tc's other name, as a user who
 * writes `prio` reads it back; two bands at least */
const struct shp_kind shp_kind_prio = {
	.name = "prio",
	.slot = SHP_SLOT_QUEUE,
	.ops = &shp_bands_ops,
	.parse = prio_parse,
	.format = pfifo_fast_format,
	.conf_free = free,
	.capacity = pfifo_fast_capacity,
	.tc_print = pfifo_fast_tc_print,
	.check_change = pfifo_fast_check_change,
	.bands = pfifo_fast_bands,
	.drops = bands_drops,
	.usage = "prio [bands N] [priomap P0 ... P15]   (N: 2..16)",
	.words = "bands#priomap",
	.shards_note = BANDS_SHARDS_NOTE,
};
