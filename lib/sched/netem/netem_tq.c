/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <rte_common.h>
#include <rte_malloc.h>
#include <rte_memcpy.h>
#include <rte_prefetch.h>

#include "netem_tq.h"
#include "shp_numa.h"

#define SHP_TQ_NONE        UINT32_MAX
#define CHUNK_ENTS         15     /* 16 + 15 * 16 bytes: four cache lines */
#define READY_MAX          SHP_TQ_BUCKET_MAX  /* ready + scratch: 2 MiB */
#define INSERTION_SORT_MAX 24
#define RADIX_BITS         8
#define RADIX_PASSES_MAX   3      /* buckets up to 2^24 ns wide */
#define MIN_SHIFT          10     /* 1 us */
#define MAX_SHIFT          40
#define SPREAD_BUCKETS     256ull
#define SPREAD_BUCKETS_MIN 32ull
#define SPREAD_SHIFT_MAX   16     /* 65.5 us */
#define PARTIAL_CHUNKS     8192u
#define REACH_BUCKETS      4096ull

struct shp_tq_chunk {
	uint32_t next;
	uint32_t n;
	uint64_t pad;
	struct shp_tq_ent e[CHUNK_ENTS];
} __rte_cache_aligned;

static void st_fini(struct shp_tq *q);

/* A calendar's memory, made off the data path (shp_tq_cal_new). */
struct shp_tq_cal {
	struct shp_tq_bucket *bkt;
	uint64_t *occ;
	struct shp_tq_chunk *chunks;
	struct shp_tq_ent *ready;
	struct shp_tq_ent *scratch;
	uint32_t nb_bkt;
	uint32_t nb_chunks;
	size_t chunks_len;    /* of the mapping */
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
	if (c->chunks != NULL)
		munmap(c->chunks, c->chunks_len);
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
	/*
	 * Reserved, not committed, and handed out from the start of the
	 * range only when no freed chunk is left: a queue sized for the
	 * byte store's millions of frames makes resident only what its
	 * packets in flight use (the pages page-aligned, so the chunks
	 * stay cache-aligned).
	 */
	c->chunks_len = sizeof(*c->chunks) * (size_t)nb_chunks;
	c->chunks = mmap(NULL, c->chunks_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c->chunks == MAP_FAILED)
		c->chunks = NULL;
	else
		(void)shp_numa_prefer(c->chunks, c->chunks_len, socket);
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
	q->free_chunk = SHP_TQ_NONE;
	q->nb_chunks = c->nb_chunks;
	q->carved = 0;
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
	st_fini(q);
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
	/*
	 * Fewer, fuller buckets still: the spread over as few as
	 * SPREAD_BUCKETS_MIN, but no wider than 2^SPREAD_SHIFT_MAX ns by
	 * this rule, as a bucket holds rate x width packets and a ready
	 * array past the L1 sorts slower than the tails cost. Measured
	 * live at 2-5 Mpps a port (git log -p docs/benchmarks.md, "The calendar's
	 * width"): 'delay 10ms 1ms loss 1%' behind tbf x1.06-1.16 at
	 * 65.5 us against 8 us;
	 * 'delay 100ms 10ms' x0.88 at 1 ms against 131 us.
	 */
	while (s < SPREAD_SHIFT_MAX && (SPREAD_BUCKETS_MIN << s) < spread)
		s++;
	q->want_shift = s;
}


/* ------------------------------------------------------------- store */

/*
 * The store is a region cut into chunks of ST_CHUNK bytes; records are
 * appended to the current chunk in arrival order, and a chunk returns to
 * a LIFO free list (so the next one written is the one last left, still
 * warm) once it is full and every record in it has left. Jitter releases
 * records out of order: a chunk then simply waits for its last one, and
 * memory is what the frames in flight span, not a ring's whole length.
 * A chunk is taken from the never-used part of the region only when no
 * freed one is there: the region is reserved, its pages become resident
 * as they are first written.
 */
#define ST_CHUNK_SHIFT 16
#define ST_CHUNK       (1u << ST_CHUNK_SHIFT)
#define ST_HDR         RTE_CACHE_LINE_SIZE
#define ST_NONE        UINT32_MAX
/* a frame larger than this keeps its mbuf whatever the setting: records
 * must leave a chunk room for a few */
#define ST_MAX_LEN     (ST_CHUNK / 8)
_Static_assert(ST_MAX_LEN == SHP_TQ_STORE_LEN_MAX, "netem_tq.h's copy");
/* frames up to this long are copied as one block of it, both ways */
#define ST_BLOCK       64u

struct st_chunk {
	uint32_t live;     /* records not yet released */
	uint32_t sealed;   /* no longer written: free when live drops to 0 */
	uint32_t next;     /* free list */
	/* a chunk of the line, once sealed: where its last record ends,
	 * and the line's next chunk */
	uint32_t end;
	uint32_t lnext;
};

/* where one writer appends: its chunk (ST_NONE before the first) and the
 * offset of its next record; the calendar's frames and the line's go to
 * chunks of their own, so that the line's are read in the order written
 * and freed as the reader leaves them */
struct st_writer {
	uint32_t cur;
	uint32_t off;
};

enum { ST_W_CAL, ST_W_LINE };

/*
 * What a frame's mbuf carries that anyone after netem reads: TX (port,
 * offloads, VLAN), the statistics (the private area: arrival time, send
 * time, class, arrival number) and the dynamic fields (the replay tool
 * stamps one). Most frames carry no TX offload and no dynamic field, and
 * waited less than 4.3 s: their record is the 48 bytes of st_rec, with
 * the arrival time as its distance to the send time. The others add an
 * st_ext (ST_EXT in len). Each line a record saves is one less to miss
 * on at release, 10 ms after it was written (176 bytes a 64-byte frame
 * before, 112 now: bench_store_floor).
 */
struct st_rec {
	uint64_t tts;
	uint64_t cls;           /* shp_meta's prio, band, flags, seq */
	uint64_t ol_flags;
	uint64_t hash;
	uint32_t packet_type;
	uint32_t rx_ago;        /* tts - rx_ns, without an st_ext */
	uint16_t len;           /* | ST_EXT: an st_ext follows */
	uint16_t port, vlan_tci, vlan_tci_outer;
} __rte_aligned(16);

struct st_ext {
	uint64_t rx_ns;
	uint64_t tx_offload;
	uint32_t dynfield1[9];
} __rte_aligned(16);

#define ST_EXT     0x8000u
#define ST_LEN(r)  ((r)->len & (ST_EXT - 1))

/* the arrival number, from cls as shp_meta lays it out */
static inline uint32_t
rec_seq(const struct st_rec *r)
{
	uint32_t seq;

	RTE_BUILD_BUG_ON(offsetof(struct shp_meta, seq) -
			 offsetof(struct shp_meta, cls) != 4);
	memcpy(&seq, (const char *)&r->cls + 4, sizeof(seq));
	return seq;
}

static inline void *
rec_data(struct st_rec *r)
{
	return (char *)(r + 1) + (r->len & ST_EXT ? sizeof(struct st_ext) : 0);
}

struct shp_tq_store {
	char *base;             /* chunk-aligned */
	void *map;
	size_t map_len;
	uint32_t nb_chunks;     /* of the region */
	uint32_t bound;         /* chunks in use at most (the profile's) */
	uint32_t carved;        /* chunks ever used: [0, carved) */
	uint32_t free_head;
	struct st_writer w[2];  /* the calendar's (ST_W_CAL), the line's */
	/* the line's first record (valid while shp_tq.ln_n > 0) */
	uint32_t l_head, l_hoff;
	uint32_t in_use;        /* chunks */
	uint32_t room;          /* data room of the pool's mbufs */
	struct rte_mempool *pool;
};

static inline bool
ent_stored(const struct rte_mbuf *m)
{
	return ((uintptr_t)m & 1) != 0;
}

static inline struct st_rec *
ent_rec(const struct rte_mbuf *m)
{
	return (struct st_rec *)((uintptr_t)m & ~(uintptr_t)1);
}

static inline struct rte_mbuf *
rec_ent(struct st_rec *r)
{
	return (struct rte_mbuf *)((uintptr_t)r | 1);
}

static inline struct st_chunk *
st_chunk(const struct shp_tq_store *st, uint32_t c)
{
	return (struct st_chunk *)(st->base + ((size_t)c << ST_CHUNK_SHIFT));
}

static inline size_t
st_size(uint32_t len, bool ext)
{
	return sizeof(struct st_rec) + (ext ? sizeof(struct st_ext) : 0) +
		RTE_ALIGN_CEIL(len, 16);
}

size_t
shp_tq_store_rec_size(uint32_t len)
{
	return st_size(len, true);
}

size_t
shp_tq_store_rec_size_plain(uint32_t len)
{
	return st_size(len, false);
}

bool
shp_tq_store_init(struct shp_tq *q, size_t bytes, struct rte_mempool *pool)
{
	struct shp_tq_store *st;
	size_t chunks = (bytes + ST_CHUNK - 1) / ST_CHUNK;
	void *map;

	if (pool == NULL || chunks == 0 || chunks >= ST_NONE)
		return false;
	/* from the DPDK heap, as the calendar: the netem that points at it
	 * lives there too, where a leak checker does not look for pointers */
	st = rte_zmalloc_socket("tq_store", sizeof(*st), 0, pool->socket_id);
	if (st == NULL)
		return false;
	st->map_len = (chunks + 1) * (size_t)ST_CHUNK;
	/* reserved, not committed: pages come as chunks are first used */
	map = mmap(NULL, st->map_len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED) {
		rte_free(st);
		return false;
	}
	st->map = map;
	(void)shp_numa_prefer(map, st->map_len, pool->socket_id);
	st->base = (char *)RTE_ALIGN_CEIL((uintptr_t)map, ST_CHUNK);
#ifdef MADV_HUGEPAGE
	/* fewer TLB misses over a store of megabytes; a hint only */
	madvise(st->base, chunks * (size_t)ST_CHUNK, MADV_HUGEPAGE);
#endif
	st->nb_chunks = (uint32_t)chunks;
	st->bound = (uint32_t)chunks;
	st->free_head = ST_NONE;
	st->w[ST_W_CAL].cur = st->w[ST_W_LINE].cur = ST_NONE;
	st->pool = pool;
	st->room = rte_pktmbuf_data_room_size(pool) > RTE_PKTMBUF_HEADROOM ?
		rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM : 0;
	q->st = st;
	q->st_max = 0;
	return true;
}

void
shp_tq_store_set(struct shp_tq *q, uint32_t max_len)
{
	if (q->st == NULL)
		return;
	q->st_max = RTE_MIN(RTE_MIN(max_len, q->st->room), ST_MAX_LEN);
}

void
shp_tq_store_depth(struct shp_tq *q, uint32_t depth)
{
	q->st_depth = depth;
}

void
shp_tq_store_big(struct shp_tq *q, uint32_t depth)
{
	q->st_big = depth;
	q->st_big_max = q->st == NULL || depth == UINT32_MAX ? 0 :
		RTE_MIN(q->st->room, ST_MAX_LEN);
}

uint64_t
shp_tq_store_frames(size_t bytes, uint32_t len)
{
	/* a chunk starts with its header, and a record is written only
	 * with ST_BLOCK to spare after it (st_put) */
	size_t per = (ST_CHUNK - ST_HDR - ST_BLOCK) /
		shp_tq_store_rec_size(len);

	return (uint64_t)(bytes / ST_CHUNK) * per;
}

void
shp_tq_store_bound(struct shp_tq *q, size_t bytes)
{
	size_t chunks = (bytes + ST_CHUNK - 1) / ST_CHUNK;

	if (q->st == NULL)
		return;
	q->st->bound = (uint32_t)RTE_MIN(chunks, (size_t)q->st->nb_chunks);
}

static void
st_fini(struct shp_tq *q)
{
	if (q->st == NULL)
		return;
	munmap(q->st->map, q->st->map_len);
	rte_free(q->st);
	q->st = NULL;
	q->st_max = 0;
	q->st_big_max = 0;
}

static inline void
st_chunk_put(struct shp_tq *q, uint32_t c)
{
	struct shp_tq_store *st = q->st;
	struct st_chunk *h = st_chunk(st, c);

	h->sealed = 0;
	h->next = st->free_head;
	st->free_head = c;
	st->in_use--;
	q->st_stats.bytes -= ST_CHUNK;
}

/* A new chunk for writer wi: the last freed, else one never used. The
 * one it leaves is sealed (a line's chunk is linked to the new one). */
static bool
st_chunk_next(struct shp_tq *q, unsigned int wi)
{
	struct shp_tq_store *st = q->st;
	struct st_writer *w = &st->w[wi];
	struct st_chunk *h;
	uint32_t c, old = w->cur;

	if (st->in_use >= st->bound) {
		return false;
	} else if (st->free_head != ST_NONE) {
		c = st->free_head;
		st->free_head = st_chunk(st, c)->next;
	} else if (st->carved < st->nb_chunks) {
		c = st->carved++;
	} else {
		return false;
	}
	h = st_chunk(st, c);
	h->live = 0;
	h->sealed = 0;
	h->lnext = ST_NONE;
	st->in_use++;
	q->st_stats.bytes += ST_CHUNK;
	if (q->st_stats.bytes > q->st_stats.hwm)
		q->st_stats.hwm = q->st_stats.bytes;
	if (old != ST_NONE) {
		h = st_chunk(st, old);
		h->end = w->off;
		h->lnext = c;
		h->sealed = 1;
		/* (a line's chunk still has its newest record while the
		 * line holds any: freed here only when the line is empty) */
		if (h->live == 0)
			st_chunk_put(q, old);
	}
	w->cur = c;
	w->off = ST_HDR;
	return true;
}

static inline void
st_release(struct shp_tq *q, struct st_rec *r)
{
	struct shp_tq_store *st = q->st;
	uint32_t c = (uint32_t)(((char *)r - st->base) >> ST_CHUNK_SHIFT);
	struct st_chunk *h = st_chunk(st, c);

	q->st_stats.frames--;
	if (--h->live != 0)
		return;
	if (h->sealed) {
		st_chunk_put(q, c);
	} else if (c == st->w[ST_W_LINE].cur) {
		/* the line ran empty: its chunk goes back, not kept from
		 * the calendar's frames while the line is closed */
		st->w[ST_W_LINE].cur = ST_NONE;
		st_chunk_put(q, c);
	}
}

/* Does m need an st_ext: anything the 48 bytes do not hold? */
static inline bool
st_needs_ext(const struct rte_mbuf *m, uint64_t rx_ns, uint64_t tts)
{
	const char *d = (const char *)m->dynfield1;
	uint64_t w[4];
	uint32_t last;

	/* as four words and one half (the compiler made nine loads of
	 * the 4-byte elements); a send time before the arrival wraps */
	RTE_BUILD_BUG_ON(sizeof(m->dynfield1) != sizeof(w) + sizeof(last));
	memcpy(w, d, sizeof(w));
	memcpy(&last, d + sizeof(w), sizeof(last));
	return (m->tx_offload | w[0] | w[1] | w[2] | w[3] | last) != 0 ||
	       tts - rx_ns > UINT32_MAX;
}

/* Copy m into the store, at writer wi's end; NULL if there is no room (m
 * untouched). */
static __rte_always_inline struct st_rec *
st_put(struct shp_tq *q, struct rte_mbuf *m, uint64_t tts, unsigned int wi)
{
	struct shp_tq_store *st = q->st;
	struct st_writer *w = &st->w[wi];
	const struct shp_meta *meta = shp_meta(m);
	bool ext = st_needs_ext(m, meta->rx_ns, tts);
	uint32_t size = (uint32_t)st_size(m->pkt_len, ext);
	struct st_rec *r;

	if ((w->cur == ST_NONE || w->off + size + ST_BLOCK > ST_CHUNK) &&
	    !st_chunk_next(q, wi))
		return NULL;
	r = (struct st_rec *)(st->base + ((size_t)w->cur << ST_CHUNK_SHIFT) +
			      w->off);
	w->off += size;
	st_chunk(st, w->cur)->live++;
	q->st_stats.frames++;
	r->tts = tts;
	r->cls = meta->cls;
	/* what made the old mbuf a clone or an external buffer is not the
	 * frame's: the new one is plain */
	r->ol_flags = m->ol_flags &
		~(RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL);
	memcpy(&r->hash, &m->hash, sizeof(r->hash));
	r->packet_type = m->packet_type;
	r->len = (uint16_t)m->pkt_len;
	r->port = m->port;
	r->vlan_tci = m->vlan_tci;
	r->vlan_tci_outer = m->vlan_tci_outer;
	if (ext) {
		struct st_ext *x = (struct st_ext *)(r + 1);

		r->len |= ST_EXT;
		r->rx_ago = 0;
		x->rx_ns = meta->rx_ns;
		x->tx_offload = m->tx_offload;
		memcpy(x->dynfield1, m->dynfield1, sizeof(x->dynfield1));
	} else {
		r->rx_ago = (uint32_t)(tts - meta->rx_ns);
	}
	/* a small frame as one 64-byte block: rte_memcpy's dispatch on the
	 * length cost more than the copy (callgrind). The bytes past the
	 * frame are the buffer's, and the next record's place (written
	 * after) or the ST_BLOCK bytes every chunk keeps free at its end */
	if (m->pkt_len <= ST_BLOCK &&
	    (uint32_t)(m->buf_len - m->data_off) >= ST_BLOCK)
		memcpy(rec_data(r), rte_pktmbuf_mtod(m, const void *),
		       ST_BLOCK);
	else
		rte_memcpy(rec_data(r), rte_pktmbuf_mtod(m, const void *),
			   m->pkt_len);
	return r;
}

/* The frame of r into the fresh mbuf m, and r released. */
static __rte_always_inline void
st_fill(struct shp_tq *q, struct rte_mbuf *m, struct st_rec *r)
{
	struct shp_meta *meta = shp_meta(m);
	uint16_t len = ST_LEN(r);

	rte_pktmbuf_reset_headroom(m);
	/* (st_put: a small frame's record is followed by ST_BLOCK bytes
	 * that may be read; the pool's mbufs hold that much, st->room) */
	if (len <= ST_BLOCK && q->st->room >= ST_BLOCK)
		memcpy(rte_pktmbuf_mtod(m, void *), rec_data(r), ST_BLOCK);
	else
		rte_memcpy(rte_pktmbuf_mtod(m, void *), rec_data(r), len);
	m->data_len = len;
	m->pkt_len = len;
	m->port = r->port;
	m->ol_flags = (m->ol_flags & RTE_MBUF_F_EXTERNAL) | r->ol_flags;
	m->packet_type = r->packet_type;
	memcpy(&m->hash, &r->hash, sizeof(r->hash));
	m->vlan_tci = r->vlan_tci;
	m->vlan_tci_outer = r->vlan_tci_outer;
	if (r->len & ST_EXT) {
		const struct st_ext *x = (const struct st_ext *)(r + 1);

		m->tx_offload = x->tx_offload;
		memcpy(m->dynfield1, x->dynfield1, sizeof(x->dynfield1));
		meta->rx_ns = x->rx_ns;
	} else {
		/* a fresh mbuf of the pool: its dynamic fields are those
		 * of a frame stored plain, all zero, or another's */
		m->tx_offload = 0;
		memset(m->dynfield1, 0, sizeof(m->dynfield1));
		meta->rx_ns = r->tts - r->rx_ago;
	}
	meta->time_to_send = r->tts;
	meta->next = NULL;
	meta->cls = r->cls;
	st_release(q, r);
}

/* Are m[0..n) what rte_pktmbuf_free_bulk would put back into pool as
 * they are: direct, one segment, one reference, of that pool? */
static inline bool
st_plain_mbufs(const struct rte_mempool *pool, struct rte_mbuf *const *m,
	       uint32_t n)
{
	uint32_t i;
	bool ok = true;

	for (i = 0; i < n; i++)
		ok &= RTE_MBUF_DIRECT(m[i]) && m[i]->pool == pool &&
		      rte_mbuf_refcnt_read(m[i]) == 1 && m[i]->next == NULL;
	return ok;
}

/* A stored frame the pool had no mbuf for: it leaves the queue here. */
static inline void
st_lost(struct shp_tq *q, struct st_rec *r)
{
	q->st_stats.no_mbuf++;
	q->st_stats.no_mbuf_bytes += ST_LEN(r);
	q->qlen--;
	q->backlog -= ST_LEN(r);
	st_release(q, r);
}

/*
 * The lines of the calendar's stored record i places past the ready head
 * (the next call's), fetched while this call's are rebuilt: three a
 * frame, spread over the burst's work. All of a burst's at once, when it
 * was taken, filled the miss slots and stalled there (perf: 40% of the
 * dequeue on one prefetch), and the rebuild still waited on the records.
 */
static inline void
tq_prefetch_next(const struct shp_tq *q, uint32_t i)
{
	uint32_t k = q->r_pos + i;
	const char *r;

	if (k >= q->r_n || !ent_stored(q->ready[k].m))
		return;
	r = (const char *)ent_rec(q->ready[k].m);
	rte_prefetch0(r);
	rte_prefetch0(r + RTE_CACHE_LINE_SIZE);
	rte_prefetch0(r + sizeof(struct st_rec) + 63);
}

/* In st_rebuild's loop at frame i of n: the next call's records i and
 * n + i (that call may take more than this one), up to ahead. */
static inline void
tq_prefetch_pair(const struct shp_tq *q, uint16_t i, uint16_t n,
		 uint16_t ahead)
{
	tq_prefetch_next(q, i);
	if (n + i < ahead)
		tq_prefetch_next(q, n + i);
}

/*
 * Rebuild the stored frames among pkts[0..n) into fresh mbufs, in place
 * and in order; those the pool has no mbuf for leave the vector (counted).
 * Returns the packets left. Fresh mbufs are taken in bulk, from the
 * pool's per-lcore cache: the ones the store freed at enqueue.
 */
static uint16_t
st_rebuild(struct shp_tq *q, struct rte_mbuf **pkts, uint16_t n,
	   uint16_t ahead)
{
	struct rte_mbuf *fresh[64];
	uint16_t i, w = 0, left = 0, nf = 0, fi = 0;

	/* beyond this call's count, what the next may take: two a frame
	 * in the loops below, the rest now */
	for (i = 2 * n; i < ahead; i++)
		tq_prefetch_next(q, i);
	for (i = 0; i < n; i++)
		left += ent_stored(pkts[i]);
	if (left == 0) {
		for (i = 0; i < n; i++)
			tq_prefetch_pair(q, i, n, ahead);
		return n;
	}
	/* a deep line's burst: every one stored, and the pool has them */
	if (left == n && n <= RTE_DIM(fresh) &&
	    rte_mempool_get_bulk(q->st->pool, (void **)fresh, n) == 0) {
		for (i = 0; i < n; i++) {
			tq_prefetch_pair(q, i, n, ahead);
			st_fill(q, fresh[i], ent_rec(pkts[i]));
			pkts[i] = fresh[i];
		}
		return n;
	}
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct st_rec *r;

		tq_prefetch_pair(q, i, n, ahead);
		if (!ent_stored(m)) {
			pkts[w++] = m;
			continue;
		}
		r = ent_rec(m);
		if (fi == nf) {
			uint16_t want = RTE_MIN(left, (uint16_t)RTE_DIM(fresh));

			fi = 0;
			nf = 0;
			/* raw: st_fill writes every field a reset would but
			 * those the pool keeps (one segment, no next, a
			 * reference) */
			if (rte_mempool_get_bulk(q->st->pool, (void **)fresh,
						 want) == 0) {
				nf = want;
			} else {
				/* all or nothing: take what is there */
				while (nf < want &&
				       (fresh[nf] = rte_mbuf_raw_alloc(
						q->st->pool)) != NULL)
					nf++;
			}
		}
		left--;
		if (fi == nf) {
			st_lost(q, r);
			continue;
		}
		st_fill(q, fresh[fi], r);
		pkts[w++] = fresh[fi++];
	}
	RTE_ASSERT(fi == nf);
	return w;
}

/* ------------------------------------------------------------- line */

/*
 * The line: a stored frame that comes at or after the last one's send
 * time (a constant delay, rate, loss: anything without jitter or
 * reorder) is appended to chunks of its own and read back from them in
 * the order written, with no calendar entry: no bucket, no sort, no
 * ready array, no entry to follow to its record (callgrind, the worker
 * at `delay 10ms` stored: 831 -> 798 instructions a packet). It takes
 * frames only after SHP_TQ_LINE_RUN in a row came in time order, so
 * that jitter, which never makes such a run, does not leave a few frames
 * in it to merge with on every dequeue; the rest go to the calendar, as
 * before. Dequeue merges the three by (time_to_send, arrival), as it
 * merges two.
 */

/* how far ahead of the line's head its records are fetched: two bursts
 * of 64-byte frames' records (live `delay 10ms`, hugepages: without it
 * 9% slower, one burst ahead within the noise of two). Past a chunk's
 * end it fetches whatever lies there: a prefetch never faults */
#define LN_AHEAD (64 * 112)

static inline struct st_rec *
ln_head(const struct shp_tq *q)
{
	const struct shp_tq_store *st = q->st;

	return (struct st_rec *)(st->base +
				 ((size_t)st->l_head << ST_CHUNK_SHIFT) +
				 st->l_hoff);
}

/* The line's first record r leaves it. Reads r's chunk, which r keeps:
 * before r is released. */
static inline void
ln_advance(struct shp_tq *q, const struct st_rec *r)
{
	struct shp_tq_store *st = q->st;
	uint32_t off = st->l_hoff +
		(uint32_t)st_size(ST_LEN(r), (r->len & ST_EXT) != 0);
	const struct st_chunk *h = st_chunk(st, st->l_head);

	if (--q->ln_n == 0)
		return;
	if (st->l_head != st->w[ST_W_LINE].cur && off == h->end) {
		st->l_head = h->lnext;
		off = ST_HDR;
	}
	st->l_hoff = off;
}

/* m (in order) to the line's end; false if the store has no room. */
static inline bool
ln_put(struct shp_tq *q, struct rte_mbuf *m, uint64_t tts)
{
	struct shp_tq_store *st = q->st;
	struct st_rec *r = st_put(q, m, tts, ST_W_LINE);
	size_t at;

	if (r == NULL)
		return false;
	if (q->ln_n++ == 0) {
		at = (size_t)((char *)r - st->base);
		st->l_head = (uint32_t)(at >> ST_CHUNK_SHIFT);
		st->l_hoff = (uint32_t)(at & (ST_CHUNK - 1));
	}
	q->ln_tail = tts;
	return true;
}

/* Does the line's head r leave before (tts, seq), the calendar's or the
 * tfifo's first? */
static inline bool
ln_first(const struct st_rec *r, uint64_t tts, uint32_t seq)
{
	if (r->tts != tts)
		return r->tts < tts;
	return (int32_t)(rec_seq(r) - seq) < 0;
}

/* ------------------------------------------------------------- insert */

/* The entry written, or NULL if the calendar cannot take the packet. */
static inline struct shp_tq_ent *
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
		return NULL;
	bk = &q->bkt[b & (q->nb_bkt - 1)];
	if (bk->count >= READY_MAX)
		return NULL;
	ch = bk->tail == SHP_TQ_NONE ? NULL : &q->chunks[bk->tail];
	if (ch == NULL || ch->n == CHUNK_ENTS) {
		struct shp_tq_chunk *nc;

		i = q->free_chunk;
		if (i != SHP_TQ_NONE) {
			nc = &q->chunks[i];
			q->free_chunk = nc->next;
		} else if (q->carved < q->nb_chunks) {
			i = q->carved++;
			nc = &q->chunks[i];
		} else {
			return NULL;
		}
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
	return &ch->e[ch->n - 1];
}

/*
 * Place the staged packets, in arrival order. The bucket headers and tail
 * chunks they need are scattered over the calendar: fetch them for the
 * whole group first, so the misses overlap instead of queueing.
 */
static void
tq_commit(struct shp_tq *q)
{
	uint32_t mask = q->nb_bkt - 1, i, n = q->n_stage, nf = 0, nb = 0;
	struct shp_tq_bucket *bk[SHP_TQ_STAGE];
	struct rte_mbuf *fr[SHP_TQ_STAGE];
	uint64_t last = UINT64_MAX;

	/* each bucket once: a constant delay puts a whole group in one
	 * or two (none while frames come in order: the line takes them) */
	for (i = 0; i < n && q->ln_run < SHP_TQ_LINE_RUN; i++) {
		uint64_t b = shp_meta(q->stage[i])->time_to_send >> q->shift;

		if (b == last)
			continue;
		last = b;
		bk[nb] = &q->bkt[b & mask];
		rte_prefetch0(bk[nb++]);
	}
	for (i = 0; i < nb; i++)
		if (bk[i]->tail != SHP_TQ_NONE)
			rte_prefetch0(&q->chunks[bk[i]->tail]);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = q->stage[i];
		uint64_t tts = shp_meta(m)->time_to_send;
		/* kept in its mbuf while fewer than st_depth wait in theirs
		 * before it, in a line under twice that deep (qlen counts
		 * the whole group staged): a deeper line's mbufs would all
		 * be cold when they leave */
		uint64_t before = q->qlen - (n - i);
		uint64_t held = before - q->st_stats.frames;
		bool store = m->nb_segs == 1 &&
			     (m->pkt_len <= q->st_max ?
			      held >= q->st_depth ||
			      before >= 2 * (uint64_t)q->st_depth :
			      m->pkt_len <= q->st_big_max &&
			      held >= q->st_big);
		struct shp_tq_ent *e;
		struct st_rec *r;

		q->ln_run = tts >= q->ln_last ? q->ln_run + 1 : 0;
		q->ln_last = tts;
		if (store && q->ln_run >= SHP_TQ_LINE_RUN &&
		    (q->ln_n == 0 || tts >= q->ln_tail)) {
			if (ln_put(q, m, tts)) {
				fr[nf++] = m;
				continue;
			}
			q->st_stats.full++;
			store = false;   /* keeps its mbuf */
		}
		e = tq_calendar_put(q, m, tts, q->stage_now);
		if (e == NULL) {
			/* the tfifo links mbufs: what goes there keeps its
			 * own (rare: before the cursor, beyond the horizon) */
			q->to_tfifo++;
			shp_tfifo_insert(&q->tf, m);
			continue;
		}
		if (!store)
			continue;
		r = st_put(q, m, tts, ST_W_CAL);
		if (r == NULL) {
			q->st_stats.full++;
			continue;
		}
		e->m = rec_ent(r);
		fr[nf++] = m;
	}
	q->n_stage = 0;
	/* back to the pool while they are in the cache: RX takes them next;
	 * straight into it when each is a plain mbuf of the store's pool
	 * (it is in the cache: nothing is read that was not just read) */
	if (nf > 0) {
		if (st_plain_mbufs(q->st->pool, fr, nf))
			rte_mempool_put_bulk(q->st->pool, (void **)fr, nf);
		else
			rte_pktmbuf_free_bulk(fr, nf);
	}
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
static inline uint32_t
ent_seq(struct rte_mbuf *m)
{
	return ent_stored(m) ? rec_seq(ent_rec(m)) : shp_meta(m)->seq;
}

static inline bool
tq_ent_first(const struct shp_tq_ent *e, const struct shp_meta *f)
{
	if (e->tts != f->time_to_send)
		return e->tts < f->time_to_send;
	return (int32_t)(ent_seq(e->m) - f->seq) < 0;
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
		if (!ent_stored(out[i]))
			rte_prefetch0(rte_pktmbuf_mtod(out[i], void *));
	for (i = q->r_pos; i < end; i++) {
		struct rte_mbuf *e = q->ready[i].m;
		const char *m = (const char *)e;

		/* an mbuf's header, second line and private area (a
		 * record's lines: st_rebuild, tq_prefetch_next) */
		if (ent_stored(e))
			continue;
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

/* The line's due frames, up to n, as stored entries (the calendar and
 * the tfifo are empty). */
static inline uint16_t
ln_take_due(struct shp_tq *q, uint64_t now, struct rte_mbuf **pkts,
	    uint16_t n)
{
	uint16_t out = 0;

	while (out < n && q->ln_n > 0) {
		struct st_rec *r = ln_head(q);

		if (r->tts > now)
			break;
		/* the line is read in the order written: the records
		 * LN_AHEAD ahead, two lines a record, one record at a time
		 * (a burst's at once would fill the miss slots and stall) */
		rte_prefetch0((const char *)r + LN_AHEAD);
		rte_prefetch0((const char *)r + LN_AHEAD + RTE_CACHE_LINE_SIZE);
		pkts[out++] = rec_ent(r);
		ln_advance(q, r);
	}
	return out;
}

/*
 * The calendar's or the tfifo's first (calendar buckets activated up to
 * `now`, or all with UINT64_MAX): its send time and arrival number in
 * *tts and *seq, the ready entry in *e (NULL: the tfifo's). False if
 * neither has one.
 */
static inline bool
tq_cal_first(struct shp_tq *q, uint64_t now, uint64_t *tts, uint32_t *seq,
	     struct shp_tq_ent **e)
{
	struct shp_meta *f = shp_tfifo_first(&q->tf);

	*e = tq_ready(q, now) ? &q->ready[q->r_pos] : NULL;
	if (*e != NULL && (f == NULL || tq_ent_first(*e, f))) {
		*tts = (*e)->tts;
		*seq = ent_seq((*e)->m);
		return true;
	}
	*e = NULL;
	if (f == NULL)
		return false;
	*tts = f->time_to_send;
	*seq = f->seq;
	return true;
}

/* Up to n due packets of the three (the line holds some, the calendar or
 * the tfifo too), in order. */
static uint16_t
tq_merge_due(struct shp_tq *q, uint64_t now, struct rte_mbuf **pkts,
	     uint16_t n)
{
	uint16_t out = 0;

	while (out < n) {
		struct st_rec *r = q->ln_n > 0 ? ln_head(q) : NULL;
		struct shp_tq_ent *e;
		uint64_t tts;
		uint32_t seq;
		bool other = tq_cal_first(q, now, &tts, &seq, &e);

		if (r != NULL && (!other || ln_first(r, tts, seq))) {
			if (r->tts > now)
				break;
			pkts[out++] = rec_ent(r);
			ln_advance(q, r);
			continue;
		}
		if (!other || tts > now)
			break;
		if (e != NULL) {
			pkts[out++] = e->m;
			q->r_pos++;
			q->c_len--;
		} else {
			pkts[out++] = shp_tfifo_pop(&q->tf);
		}
	}
	return out;
}

uint16_t
shp_tq_dequeue_due(struct shp_tq *q, uint64_t now, struct rte_mbuf **pkts,
		   uint16_t n)
{
	uint16_t out = 0, want = n;

	tq_sync(q);
	if (q->ln_n > 0) {
		out = q->c_len == 0 && q->tf.qlen == 0 ?
			ln_take_due(q, now, pkts, n) :
			tq_merge_due(q, now, pkts, n);
		n = out;   /* nothing more is due */
	}
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
			uint32_t lim = RTE_MIN(end, pos + (uint32_t)(n - out));
			uint16_t first = out;

			while (pos < lim && q->ready[pos].tts <= now)
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
	if (q->st_stats.frames > 0)
		out = st_rebuild(q, pkts, out, want);
	tq_account(q, pkts, out);
	return out;
}

bool
shp_tq_head_time(struct shp_tq *q, uint64_t *tts)
{
	struct shp_tq_ent *e;
	uint32_t seq;
	bool any;

	tq_sync(q);
	any = tq_cal_first(q, UINT64_MAX, tts, &seq, &e);
	if (q->ln_n > 0 && (!any || ln_head(q)->tts < *tts)) {
		*tts = ln_head(q)->tts;
		any = true;
	}
	return any;
}

struct rte_mbuf *
shp_tq_peek(struct shp_tq *q)
{
	struct shp_meta *f;

	tq_sync(q);
	for (;;) {
		struct shp_tq_ent *e;
		struct rte_mbuf *m;

		if (q->ln_n > 0) {
			struct st_rec *r = ln_head(q);
			uint64_t tts;
			uint32_t seq;

			if (!tq_cal_first(q, UINT64_MAX, &tts, &seq, &e) ||
			    ln_first(r, tts, seq)) {
				/* the line's head first: made an mbuf at the
				 * tfifo's head, where the caller may read it
				 * now and take it later */
				m = rec_ent(r);
				ln_advance(q, r);
				if (st_rebuild(q, &m, 1, 1) == 1)
					shp_tfifo_push_front(&q->tf, m);
				continue;
			}
		}
		f = shp_tfifo_first(&q->tf);
		if (!tq_ready(q, UINT64_MAX))
			return f == NULL ? NULL : shp_meta_mbuf(f);
		e = &q->ready[q->r_pos];
		if (f != NULL && !tq_ent_first(e, f))
			return shp_meta_mbuf(f);
		if (!ent_stored(e->m))
			return e->m;
		/* the head is made an mbuf where it stands: the caller may
		 * read it now and take it later */
		m = e->m;
		if (st_rebuild(q, &m, 1, 1) == 1) {
			e->m = m;
			return m;
		}
		q->r_pos++;
		q->c_len--;
	}
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

void
shp_tq_unpop(struct shp_tq *q, struct rte_mbuf *m)
{
	/* the tfifo's list and the calendar's ready entries tie on time by
	 * arrival number (tq_ent_first), which m keeps: it leads both */
	if (q->qlen == 0)
		q->tail_tts = shp_meta(m)->time_to_send;
	q->qlen++;
	q->backlog += m->pkt_len;
	shp_tfifo_push_front(&q->tf, m);
}

/* -------------------------------------------------------------- flush */

uint32_t
shp_tq_flush(struct shp_tq *q)
{
	struct rte_mbuf *batch[64];
	uint32_t freed = 0, nb = 0, i;

	tq_sync(q);

#define TQ_FREE(mb) do {                                        \
		if (ent_stored(mb)) {                           \
			st_release(q, ent_rec(mb));             \
			freed++;                                \
			break;                                  \
		}                                               \
		batch[nb++] = (mb);                             \
		if (nb == RTE_DIM(batch)) {                     \
			rte_pktmbuf_free_bulk(batch, nb);       \
			freed += nb;                            \
			nb = 0;                                 \
		}                                               \
	} while (0)

	while (q->ln_n > 0) {
		struct st_rec *r = ln_head(q);

		ln_advance(q, r);
		st_release(q, r);
		freed++;
	}
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
