/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>
#include <rte_common.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "netem_tq.h"

#define SHP_TQ_NONE        UINT32_MAX
#define CHUNK_ENTS         15     /* 16 + 15 * 16 bytes: four cache lines */
#define READY_MAX          SHP_TQ_BUCKET_MAX  /* ready + scratch: 2 MiB */
#define INSERTION_SORT_MAX 24
#define RADIX_BITS         8
#define RADIX_PASSES_MAX   3      /* buckets up to 2^24 ns wide */
#define MIN_SHIFT          10     /* 1 us */
#define MAX_SHIFT          40
#define SPREAD_BUCKETS     256ull
#define PARTIAL_CHUNKS     8192u
#define REACH_BUCKETS      4096ull

struct shp_tq_chunk {
	uint32_t next;
	uint32_t n;
	uint64_t pad;
	struct shp_tq_ent e[CHUNK_ENTS];
} __rte_cache_aligned;

/* A calendar's memory, made off the data path (shp_tq_cal_new). */
struct shp_tq_cal {
	struct shp_tq_bucket *bkt;
	uint64_t *occ;
	struct shp_tq_chunk *chunks;
	struct shp_tq_ent *ready;
	struct shp_tq_ent *scratch;
	uint32_t nb_bkt;
	uint32_t nb_chunks;
};

static uint32_t
cal_buckets(uint32_t nb_bkt)
{
	if (nb_bkt < 64 || !rte_is_power_of_2(nb_bkt))
		nb_bkt = rte_align32pow2(RTE_MAX(nb_bkt, 64u));
	return nb_bkt;
}

/* full chunks, plus a partly filled one per bucket being filled: the
 * widths keep those to a few thousand (if chunks run out, packets go to
 * the tfifo) */
static uint32_t
cal_chunks(uint32_t max_pkts)
{
	return max_pkts / CHUNK_ENTS + RTE_MIN(max_pkts, PARTIAL_CHUNKS) + 1;
}

size_t
shp_tq_cal_size(uint32_t nb_bkt, uint32_t max_pkts)
{
	nb_bkt = cal_buckets(nb_bkt);
	return sizeof(struct shp_tq_cal) +
	       sizeof(struct shp_tq_bucket) * (size_t)nb_bkt + nb_bkt / 8 +
	       sizeof(struct shp_tq_chunk) * (size_t)cal_chunks(max_pkts) +
	       2 * sizeof(struct shp_tq_ent) * READY_MAX +
	       6 * RTE_CACHE_LINE_SIZE;
}

void
shp_tq_cal_free(struct shp_tq_cal *c)
{
	if (c == NULL)
		return;
	rte_free(c->bkt);
	rte_free(c->occ);
	rte_free(c->chunks);
	rte_free(c->ready);
	rte_free(c->scratch);
	rte_free(c);
}

struct shp_tq_cal *
shp_tq_cal_new(uint32_t nb_bkt, uint32_t max_pkts, int socket)
{
	struct shp_tq_cal *c;
	uint32_t i, nb_chunks;

	nb_bkt = cal_buckets(nb_bkt);
	nb_chunks = cal_chunks(max_pkts);
	c = rte_zmalloc_socket("tq_cal", sizeof(*c), 0, socket);
	if (c == NULL)
		return NULL;
	c->bkt = rte_malloc_socket("tq_bkt", sizeof(*c->bkt) * nb_bkt,
				   RTE_CACHE_LINE_SIZE, socket);
	c->occ = rte_zmalloc_socket("tq_occ", nb_bkt / 8, RTE_CACHE_LINE_SIZE,
				    socket);
	c->chunks = rte_malloc_socket("tq_chunks",
				      sizeof(*c->chunks) * (size_t)nb_chunks,
				      RTE_CACHE_LINE_SIZE, socket);
	c->ready = rte_malloc_socket("tq_ready", sizeof(*c->ready) * READY_MAX,
				     RTE_CACHE_LINE_SIZE, socket);
	c->scratch = rte_malloc_socket("tq_scratch",
				       sizeof(*c->scratch) * READY_MAX,
				       RTE_CACHE_LINE_SIZE, socket);
	if (c->bkt == NULL || c->occ == NULL || c->chunks == NULL ||
	    c->ready == NULL || c->scratch == NULL) {
		shp_tq_cal_free(c);
		return NULL;
	}
	c->nb_bkt = nb_bkt;
	c->nb_chunks = nb_chunks;
	for (i = 0; i < nb_bkt; i++) {
		c->bkt[i].head = c->bkt[i].tail = SHP_TQ_NONE;
		c->bkt[i].count = 0;
	}
	for (i = 0; i < nb_chunks; i++)
		c->chunks[i].next = i + 1 < nb_chunks ? i + 1 : SHP_TQ_NONE;
	return c;
}

void
shp_tq_adopt(struct shp_tq *q, struct shp_tq_cal *c)
{
	RTE_VERIFY(q->cal == NULL && q->n_stage == 0);
	q->cal = c;
	q->bkt = c->bkt;
	q->occ = c->occ;
	q->chunks = c->chunks;
	q->ready = c->ready;
	q->scratch = c->scratch;
	q->free_chunk = 0;
	q->cur = q->scan_from = 0;
	q->r_pos = q->r_n = 0;
	q->c_len = q->b_len = 0;
	q->nb_bkt = c->nb_bkt;
	/* what the tfifo holds stays there: dequeue merges the two */
	shp_tq_set_horizon(q, q->reach, q->spread);
}

bool
shp_tq_init(struct shp_tq *q, uint32_t nb_bkt, uint32_t max_pkts, int socket)
{
	struct shp_tq_cal *c;

	memset(q, 0, sizeof(*q));
	shp_tfifo_init(&q->tf);
	q->shift = q->want_shift = 10;
	if (nb_bkt == 0)
		return true;
	c = shp_tq_cal_new(nb_bkt, max_pkts, socket);
	if (c == NULL)
		return false;
	shp_tq_adopt(q, c);
	return true;
}

void
shp_tq_fini(struct shp_tq *q)
{
	shp_tq_flush(q);
	shp_tq_cal_free(q->cal);
	q->cal = NULL;
	q->bkt = NULL;
	q->occ = NULL;
	q->chunks = NULL;
	q->ready = q->scratch = NULL;
	q->nb_bkt = 0;
}

void
shp_tq_set_horizon(struct shp_tq *q, uint64_t reach, uint64_t spread)
{
	unsigned int s = MIN_SHIFT;

	/* kept for a calendar adopted later */
	q->reach = reach;
	q->spread = spread;
	if (q->nb_bkt == 0)
		return;
	/*
	 * Wide enough that a bucket holds a few dozen packets at high rates
	 * (each bucket costs a chunk and a few misses: fewer, fuller ones
	 * measured faster), and the tails being filled stay in cache: the
	 * spread covers at most SPREAD_BUCKETS, twice the reach at most
	 * REACH_BUCKETS (and the calendar spans more, for rate queueing).
	 */
	while (s < MAX_SHIFT && ((SPREAD_BUCKETS << s) < spread ||
				 (REACH_BUCKETS << s) < 2 * reach ||
				 ((uint64_t)q->nb_bkt << s) < 2 * reach))
		s++;
	q->want_shift = s;
}

/* ------------------------------------------------------------- insert */

static inline bool
tq_calendar_put(struct shp_tq *q, struct rte_mbuf *m, uint64_t tts,
		uint64_t now)
{
	struct shp_tq_bucket *bk;
	struct shp_tq_chunk *ch;
	uint64_t b;
	uint32_t i;

	if (q->c_len == 0) {
		/* empty: a new width may apply, and the cursor restarts at
		 * the present (the bucket of `now` is never filled, so
		 * nothing in it can be behind a sorted ready array) */
		q->shift = q->want_shift;
		q->cur = now >> q->shift;
		q->scan_from = q->cur + 1;
		q->r_pos = q->r_n = 0;
	}
	b = tts >> q->shift;
	if (b <= q->cur || b - q->cur >= q->nb_bkt)
		return false;
	bk = &q->bkt[b & (q->nb_bkt - 1)];
	if (bk->count >= READY_MAX)
		return false;
	ch = bk->tail == SHP_TQ_NONE ? NULL : &q->chunks[bk->tail];
	if (ch == NULL || ch->n == CHUNK_ENTS) {
		struct shp_tq_chunk *nc;

		i = q->free_chunk;
		if (i == SHP_TQ_NONE)
			return false;
		nc = &q->chunks[i];
		q->free_chunk = nc->next;
		nc->next = SHP_TQ_NONE;
		nc->n = 0;
		if (ch == NULL) {
			bk->head = i;
			q->occ[(b & (q->nb_bkt - 1)) >> 6] |=
				1ull << (b & 63);
		} else {
			ch->next = i;
		}
		bk->tail = i;
		ch = nc;
	}
	ch->e[ch->n].tts = tts;
	ch->e[ch->n].m = m;
	ch->n++;
	bk->count++;
	q->c_len++;
	q->b_len++;
	if (b < q->scan_from)
		q->scan_from = b;
	return true;
}

/*
 * Place the staged packets, in arrival order. The bucket headers and tail
 * chunks they need are scattered over the calendar: fetch them for the
 * whole group first, so the misses overlap instead of queueing.
 */
static void
tq_commit(struct shp_tq *q)
{
	uint32_t mask = q->nb_bkt - 1, i, n = q->n_stage;
	struct shp_tq_bucket *bk[SHP_TQ_STAGE];

	for (i = 0; i < n; i++) {
		uint64_t b = shp_meta(q->stage[i])->time_to_send >> q->shift;

		bk[i] = &q->bkt[b & mask];
		rte_prefetch0(bk[i]);
	}
	for (i = 0; i < n; i++)
		if (bk[i]->tail != SHP_TQ_NONE)
			rte_prefetch0(&q->chunks[bk[i]->tail]);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = q->stage[i];

		if (!tq_calendar_put(q, m, shp_meta(m)->time_to_send,
				     q->stage_now)) {
			q->to_tfifo++;
			shp_tfifo_insert(&q->tf, m);
		}
	}
	q->n_stage = 0;
}

static inline void
tq_sync(struct shp_tq *q)
{
	if (q->n_stage > 0)
		tq_commit(q);
}

void
shp_tq_insert(struct shp_tq *q, struct rte_mbuf *m, uint64_t now)
{
	struct shp_meta *meta = shp_meta(m);
	uint64_t tts = meta->time_to_send;

	meta->seq = q->seq++;
	if (q->qlen == 0 || tts > q->tail_tts)
		q->tail_tts = tts;
	q->qlen++;
	q->backlog += m->pkt_len;
	/*
	 * Packets in time order (constant delay, rate, noreorder) go to the
	 * calendar too: the list's dequeue is a chain of dependent misses
	 * once the packets are cold, and loss or any reuse of mbufs out of
	 * order takes away the locality that hides them. Measured with
	 * 'delay 10ms loss 1%': list 2.69 Mpps, calendar 5.72 (A/B runs).
	 */
	if (q->nb_bkt == 0) {
		q->to_tfifo++;
		shp_tfifo_insert(&q->tf, m);
		return;
	}
	q->stage[q->n_stage++] = m;
	q->stage_now = now;
	if (q->n_stage == SHP_TQ_STAGE)
		tq_commit(q);
}

/* ------------------------------------------------------------ buckets */

/* The first non-empty bucket after cur (b_len > 0). */
static uint64_t
tq_next_bucket(struct shp_tq *q)
{
	uint64_t pos = q->scan_from, end = q->cur + q->nb_bkt;
	uint32_t mask = q->nb_bkt - 1;

	while (pos < end) {
		uint32_t idx = (uint32_t)(pos & mask);
		uint64_t w = q->occ[idx >> 6] >> (idx & 63);

		if (w != 0) {
			pos += (uint64_t)__builtin_ctzll(w);
			q->scan_from = pos;
			return pos;
		}
		pos += 64 - (idx & 63);
	}
	RTE_VERIFY(0);   /* b_len > 0 promises a bucket */
	return end;
}

/*
 * Stable LSD radix sort of n entries whose times all lie in
 * [base, base + 2^shift), on their offset from base, in passes of at most
 * RADIX_BITS bits. A bucket's times arrive in random order under jitter,
 * and a merge then mispredicts about every other comparison; counting
 * and scattering compare nothing.
 */
static void
tq_radix_sort(struct shp_tq_ent *a, struct shp_tq_ent *tmp, uint32_t n,
	      uint64_t base, unsigned int shift)
{
	unsigned int passes = (shift + RADIX_BITS - 1) / RADIX_BITS;
	unsigned int bits = (shift + passes - 1) / passes, p;
	uint32_t cnt[RADIX_PASSES_MAX][1u << RADIX_BITS];
	uint32_t mask = (1u << bits) - 1, i, d;
	struct shp_tq_ent *src = a, *dst = tmp, *t;

	memset(cnt, 0, sizeof(cnt[0]) * passes);
	for (i = 0; i < n; i++) {
		uint64_t off = a[i].tts - base;

		RTE_ASSERT(off >> shift == 0);   /* one bucket's times only */
		for (p = 0; p < passes; p++)
			cnt[p][(off >> (p * bits)) & mask]++;
	}
	for (p = 0; p < passes; p++) {
		uint32_t sum = 0, c;

		for (d = 0; d <= mask; d++) {
			c = cnt[p][d];
			cnt[p][d] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++) {
			d = ((src[i].tts - base) >> (p * bits)) & mask;
			dst[cnt[p][d]++] = src[i];
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

/*
 * Sort a bucket's n entries (times in [base, base + 2^shift)). Stable:
 * equal times keep their arrival order.
 */
static void
tq_sort(struct shp_tq_ent *a, struct shp_tq_ent *tmp, uint32_t n,
	uint64_t base, unsigned int shift)
{
	struct shp_tq_ent *orig = a;
	uint32_t i, j, w;

	for (i = 1; i < n && a[i - 1].tts <= a[i].tts; i++)
		;
	if (i >= n)
		return;   /* constant delay: arrival order is time order */
	if (n <= INSERTION_SORT_MAX) {
		for (i = 1; i < n; i++) {
			struct shp_tq_ent x = a[i];

			for (j = i; j > 0 && a[j - 1].tts > x.tts; j--)
				a[j] = a[j - 1];
			a[j] = x;
		}
		return;
	}
	if (shift <= RADIX_BITS * RADIX_PASSES_MAX) {
		tq_radix_sort(a, tmp, n, base, shift);
		return;
	}
	/* buckets wider than 16 ms: bottom-up merge sort, runs of 8 by
	 * insertion first */
	for (i = 0; i < n; i += 8) {
		uint32_t end = RTE_MIN(i + 8, n), k;

		for (k = i + 1; k < end; k++) {
			struct shp_tq_ent x = a[k];

			for (j = k; j > i && a[j - 1].tts > x.tts; j--)
				a[j] = a[j - 1];
			a[j] = x;
		}
	}
	for (w = 8; w < n; w *= 2) {
		struct shp_tq_ent *t;

		for (i = 0; i < n; i += 2 * w) {
			uint32_t l = i, mid = RTE_MIN(i + w, n);
			uint32_t r = mid, end = RTE_MIN(i + 2 * w, n), k = i;

			while (l < mid && r < end)
				tmp[k++] = a[r].tts < a[l].tts ? a[r++] : a[l++];
			while (l < mid)
				tmp[k++] = a[l++];
			while (r < end)
				tmp[k++] = a[r++];
		}
		t = a;
		a = tmp;
		tmp = t;
	}
	if (a != orig)
		memcpy(orig, a, n * sizeof(*a));
}

/*
 * Append bucket b (the first non-empty one after cur) to ready, sorted:
 * every time in it is later than those already there. False if it does
 * not fit (never when ready is empty: a bucket holds at most READY_MAX).
 */
static bool
tq_activate(struct shp_tq *q, uint64_t b)
{
	uint32_t idx = (uint32_t)(b & (q->nb_bkt - 1));
	struct shp_tq_bucket *bk = &q->bkt[idx];
	uint32_t c, next, base, n = 0;

	if (q->r_pos == q->r_n) {
		q->r_pos = q->r_n = 0;
	} else if (q->r_n + bk->count > READY_MAX) {
		if (q->r_n - q->r_pos + bk->count > READY_MAX)
			return false;
		memmove(q->ready, q->ready + q->r_pos,
			(q->r_n - q->r_pos) * sizeof(q->ready[0]));
		q->r_n -= q->r_pos;
		q->r_pos = 0;
	}
	base = q->r_n;
	for (c = bk->head; c != SHP_TQ_NONE; c = next) {
		struct shp_tq_chunk *ch = &q->chunks[c];

		if (ch->next != SHP_TQ_NONE)
			rte_prefetch0(&q->chunks[ch->next]);
		memcpy(&q->ready[base + n], ch->e, ch->n * sizeof(ch->e[0]));
		n += ch->n;
		next = ch->next;
		ch->next = q->free_chunk;
		q->free_chunk = c;
	}
	q->occ[idx >> 6] &= ~(1ull << (idx & 63));
	bk->head = bk->tail = SHP_TQ_NONE;
	bk->count = 0;
	q->b_len -= n;
	q->cur = b;
	q->scan_from = b + 1;
	q->r_n = base + n;
	tq_sort(q->ready + base, q->scratch, n, b << q->shift, q->shift);
	return true;
}

/*
 * Keep about 2n packets in ready when the next buckets are due within two
 * bucket widths: the prefetch below then sees across bucket boundaries.
 * (Taking a bucket early is always correct: later arrivals for it go to
 * the tfifo.)
 */
static inline void
tq_lookahead(struct shp_tq *q, uint64_t now, uint16_t n)
{
	while (q->r_n - q->r_pos < 2u * n && q->b_len > 0) {
		uint64_t b = tq_next_bucket(q);

		if ((b << q->shift) > now + (2ull << q->shift) ||
		    !tq_activate(q, b))
			break;
	}
}

/*
 * Make ready non-empty if the calendar holds anything that may be due by
 * `now` (any time at all with now == UINT64_MAX). False if nothing.
 */
static inline bool
tq_ready(struct shp_tq *q, uint64_t now)
{
	uint64_t b;

	if (q->r_pos < q->r_n)
		return true;
	if (q->b_len == 0)
		return false;
	b = tq_next_bucket(q);
	if ((b << q->shift) > now)
		return false;   /* its earliest possible time is later */
	tq_activate(q, b);
	return true;
}

/* Does the ready head leave before the tfifo's first f? */
static inline bool
tq_ent_first(const struct shp_tq_ent *e, const struct shp_meta *f)
{
	if (e->tts != f->time_to_send)
		return e->tts < f->time_to_send;
	return (int32_t)(shp_meta(e->m)->seq - f->seq) < 0;
}

/* ------------------------------------------------------------ dequeue */

/*
 * Packets wait long enough to leave the caches, and TX reads each one's
 * header, metadata and data. Warm the data of the k leaving now (their
 * headers were warmed by the previous call) and the headers of the next n
 * in ready, for the next call.
 */
static inline void
tq_prefetch(const struct shp_tq *q, struct rte_mbuf **out, uint16_t k,
	    uint16_t n)
{
	uint32_t i, end = RTE_MIN(q->r_pos + (uint32_t)n, q->r_n);

	for (i = 0; i < k; i++)
		rte_prefetch0(rte_pktmbuf_mtod(out[i], void *));
	for (i = q->r_pos; i < end; i++) {
		const char *m = (const char *)q->ready[i].m;

		rte_prefetch0(m);
		rte_prefetch0(m + RTE_CACHE_LINE_SIZE);
		rte_prefetch0(m + 2 * RTE_CACHE_LINE_SIZE);
	}
}

static inline void
tq_account(struct shp_tq *q, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t i;

	for (i = 0; i < n; i++)
		q->backlog -= pkts[i]->pkt_len;
	q->qlen -= n;
}

uint16_t
shp_tq_dequeue_due(struct shp_tq *q, uint64_t now, struct rte_mbuf **pkts,
		   uint16_t n)
{
	uint16_t out = 0;

	tq_sync(q);
	while (out < n) {
		struct shp_tq_ent *e;
		struct shp_meta *f;

		if (!tq_ready(q, now)) {
			/* nothing in the calendar is due: what is due in the
			 * tfifo is all earlier */
			out += shp_tfifo_dequeue_due(&q->tf, now, pkts + out,
						     n - out);
			break;
		}
		e = &q->ready[q->r_pos];
		if (q->tf.qlen == 0) {
			uint32_t pos = q->r_pos, end = q->r_n;

			uint16_t first = out;

			while (out < n && pos < end && q->ready[pos].tts <= now)
				pkts[out++] = q->ready[pos++].m;
			q->c_len -= pos - q->r_pos;
			q->r_pos = pos;
			tq_lookahead(q, now, n);
			tq_prefetch(q, pkts + first, out - first, n);
			if (pos < end)
				break;   /* full, or the next is not due */
			continue;
		}
		f = shp_tfifo_first(&q->tf);
		if (tq_ent_first(e, f)) {
			if (e->tts > now)
				break;
			pkts[out++] = e->m;
			q->r_pos++;
			q->c_len--;
		} else {
			if (f->time_to_send > now)
				break;
			pkts[out++] = shp_tfifo_pop(&q->tf);
		}
	}
	tq_account(q, pkts, out);
	return out;
}

struct rte_mbuf *
shp_tq_peek(struct shp_tq *q)
{
	struct shp_meta *f;

	tq_sync(q);
	f = shp_tfifo_first(&q->tf);
	if (!tq_ready(q, UINT64_MAX))
		return f == NULL ? NULL : shp_meta_mbuf(f);
	if (f == NULL || tq_ent_first(&q->ready[q->r_pos], f))
		return q->ready[q->r_pos].m;
	return shp_meta_mbuf(f);
}

struct rte_mbuf *
shp_tq_pop(struct shp_tq *q)
{
	struct rte_mbuf *m = shp_tq_peek(q);

	if (m == NULL)
		return NULL;
	if (q->r_pos < q->r_n && q->ready[q->r_pos].m == m) {
		q->r_pos++;
		q->c_len--;
	} else {
		shp_tfifo_pop(&q->tf);
	}
	tq_account(q, &m, 1);
	return m;
}

/* -------------------------------------------------------------- flush */

uint32_t
shp_tq_flush(struct shp_tq *q)
{
	struct rte_mbuf *batch[64];
	uint32_t freed = 0, nb = 0, i;

	tq_sync(q);

#define TQ_FREE(mb) do {                                        \
		batch[nb++] = (mb);                             \
		if (nb == RTE_DIM(batch)) {                     \
			rte_pktmbuf_free_bulk(batch, nb);       \
			freed += nb;                            \
			nb = 0;                                 \
		}                                               \
	} while (0)

	for (i = q->r_pos; i < q->r_n; i++)
		TQ_FREE(q->ready[i].m);
	q->r_pos = q->r_n = 0;
	/* buckets in time order, as a successor walk would */
	while (q->b_len > 0) {
		uint64_t b = tq_next_bucket(q);

		tq_activate(q, b);
		for (i = 0; i < q->r_n; i++)
			TQ_FREE(q->ready[i].m);
		q->r_pos = q->r_n = 0;
	}
#undef TQ_FREE
	if (nb > 0)
		rte_pktmbuf_free_bulk(batch, nb);
	freed += nb;
	q->c_len = 0;
	freed += shp_tfifo_flush(&q->tf);
	q->qlen = 0;
	q->backlog = 0;
	return freed;
}
