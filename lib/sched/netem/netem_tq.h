/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem's time queue: a calendar of short time buckets in front of the
 * tfifo (rbtree + list).
 *
 * Why: with jitter every packet goes into the rbtree, and with 1e5 packets
 * in flight (10 ms at 10 Mpps) an insert is ~17 dependent cache misses and a
 * rebalance; bench_netem measured the tree at 10-40x the list's cost. Most
 * packets are due within a bounded horizon (delay + 4 sigma), so they go
 * into a bucket of width 2^shift ns instead: an append to an array chunk,
 * O(1), no pointer chase. A bucket is sorted (stably, so equal times stay
 * FIFO) only when it is next to leave, into a small `ready` array that
 * dequeue walks with prefetch.
 *
 * Exactness is kept: packets leave in (time_to_send, arrival) order.
 * What the calendar cannot hold goes to the tfifo, which keeps its own
 * order: a time in or before the bucket being drained, beyond the horizon,
 * a full bucket, no free chunk. Dequeue merges the two by time_to_send,
 * and on equal times by an arrival sequence number kept in the metadata.
 *
 * Single owner: no locking.
 */
#ifndef NETEM_TQ_H
#define NETEM_TQ_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_mbuf.h>

#include "netem_tfifo.h"
#include "shp_meta.h"

struct shp_tq_ent {
	uint64_t tts;
	struct rte_mbuf *m;
};

#define SHP_TQ_STAGE 32
#define SHP_TQ_LINE_RUN 64
#define SHP_TQ_BUCKET_MAX 65536   /* packets a bucket holds; more go to the tfifo */

struct shp_tq_bucket {
	uint32_t head;   /* first chunk, SHP_TQ_NONE if empty */
	uint32_t tail;
	uint32_t count;
	uint32_t pad;
};

struct shp_tq_chunk;
struct shp_tq_cal;
struct shp_tq_store;

/*
 * The byte store (docs/netem.md, `store`): a single-segment frame of at
 * most st_max bytes that the calendar takes is copied into the store, with
 * what TX and the stages after netem read of its mbuf, and the mbuf goes
 * back to the pool at once, while it is still in the cache. Its calendar
 * entry then points at the record (low bit set, see netem_tq.c). At
 * release a fresh mbuf from the pool's hot end gets the bytes back.
 * Why: a packet that waited 10 ms has left every cache; release used to
 * stall on its mbuf (header, private area and data: three cold lines),
 * where a record written and read in arrival order is one sequential
 * stream the prefetcher follows. Memory follows the bytes in flight, not
 * the mbufs.
 */
struct shp_tq_st_stats {
	uint64_t frames;      /* stored now */
	uint64_t bytes;       /* of store chunks in use now */
	uint64_t hwm;         /* most bytes of chunks ever in use */
	uint64_t full;        /* frames kept as mbufs: no room in the store */
	uint64_t no_mbuf;     /* stored frames the pool had no mbuf for at
			       * release: dropped (read and cleared by the
			       * owner, which counts them as a drop) */
	uint64_t no_mbuf_bytes;  /* their bytes, ever (never cleared) */
};

struct shp_tq {
	struct shp_tfifo tf;         /* everything the calendar does not hold */
	uint32_t qlen;               /* packets, calendar + tfifo */
	uint64_t backlog;            /* bytes (pkt_len) */
	uint64_t tail_tts;           /* latest time queued, valid if qlen > 0 */
	uint32_t seq;                /* arrival number of the next packet */

	/* the calendar: absent (NULL) if it could not be allocated or is
	 * not adopted yet; its arrays are copied from cal, so the data path
	 * reaches them without another load */
	struct shp_tq_cal *cal;
	uint64_t reach, spread;      /* the last shp_tq_set_horizon's */
	struct shp_tq_bucket *bkt;
	uint64_t *occ;               /* bit per bucket: non-empty */
	struct shp_tq_chunk *chunks;
	struct shp_tq_ent *ready;    /* the bucket being drained, sorted */
	struct shp_tq_ent *scratch;  /* merge sort */
	uint32_t nb_bkt;             /* power of 2 */
	uint32_t free_chunk;         /* free list head */
	uint32_t nb_chunks, carved;  /* chunks [carved, nb_chunks) unused yet */
	unsigned int shift;          /* bucket width 2^shift ns */
	unsigned int want_shift;     /* applied when the calendar is empty */
	uint64_t cur;                /* absolute number of the ready bucket */
	uint64_t scan_from;          /* no non-empty bucket in (cur, scan_from) */
	uint32_t r_pos, r_n;         /* ready[r_pos, r_n) still queued */
	uint32_t c_len;              /* packets in the calendar, ready included */
	uint32_t b_len;              /* packets in buckets (not ready) */
	uint64_t to_tfifo;           /* packets the calendar could not take */
	/* the byte store: NULL, or frames up to st_max bytes are stored */
	struct shp_tq_store *st;
	uint32_t st_max;
	uint32_t st_depth;           /* store only past this many mbufs */
	/* frames over st_max, up to st_big_max, are stored past st_big
	 * mbufs (shp_tq_store_big; st_big_max 0: never) */
	uint32_t st_big, st_big_max;
	struct shp_tq_st_stats st_stats;
	/* the line (netem_tq.c): stored frames in time order, read from
	 * the store as written, without a calendar entry */
	uint32_t ln_n;               /* frames in it */
	uint32_t ln_run;             /* frames in time order since the last
				      * one out of it: it takes frames past
				      * a run of SHP_TQ_LINE_RUN */
	uint64_t ln_tail;            /* send time of its last frame */
	uint64_t ln_last;            /* of the last frame placed */
	/* inserts are placed in groups so their bucket misses overlap */
	uint16_t n_stage;
	uint64_t stage_now;
	struct rte_mbuf *stage[SHP_TQ_STAGE];
};

/*
 * Set up for up to max_pkts packets in flight with nb_bkt buckets (a power
 * of 2, 0 for no calendar: the tfifo alone). Memory comes from the DPDK heap
 * of `socket`; if that fails the queue works on the tfifo alone. Returns
 * false only if the calendar was asked for and could not be allocated.
 */
bool shp_tq_init(struct shp_tq *q, uint32_t nb_bkt, uint32_t max_pkts,
		 int socket);
void shp_tq_fini(struct shp_tq *q);   /* flushes, then frees the calendar */

/*
 * A calendar made apart from its queue, so that a control thread can
 * allocate it (rte_malloc, megabytes) while the owner runs, and the owner
 * take it at a point of its own choosing without allocating: thousands of
 * class netems idle at no calendar each. shp_tq_cal_size is what
 * shp_tq_cal_new takes from the heap (about), NULL when that fails.
 */
size_t shp_tq_cal_size(uint32_t nb_bkt, uint32_t max_pkts);
struct shp_tq_cal *shp_tq_cal_new(uint32_t nb_bkt, uint32_t max_pkts,
				  int socket);
void shp_tq_cal_free(struct shp_tq_cal *c);
/* Owner only, on a queue without a calendar: c becomes its calendar
 * (freed by shp_tq_fini). What the tfifo holds stays there and merges. */
void shp_tq_adopt(struct shp_tq *q, struct shp_tq_cal *c);

/*
 * Most packets will be due within `reach` ns of their arrival, spread over
 * `spread` ns (the jitter's range): choose the bucket width so that the
 * spread covers a bounded number of buckets and the calendar twice the
 * reach. Takes effect when the calendar next runs empty (its packets keep
 * their buckets).
 */
void shp_tq_set_horizon(struct shp_tq *q, uint64_t reach, uint64_t spread);

/*
 * Give q a byte store of at most `bytes` (rounded to whole chunks), which
 * takes memory from the OS as chunks are first used: the region is
 * reserved, only what the frames in flight need becomes resident. Fresh
 * mbufs come from pool at release. False if the region could not be
 * reserved (the queue then keeps every mbuf). Frames are stored only
 * once shp_tq_store_set gave a size above 0.
 */
bool shp_tq_store_init(struct shp_tq *q, size_t bytes,
		       struct rte_mempool *pool);
/* Store frames of at most max_len bytes from now on (0: none; capped at
 * what an mbuf of the pool holds); what is stored stays until released. */
void shp_tq_store_set(struct shp_tq *q, uint32_t max_len);
/*
 * From now on a frame is stored only if `depth` packets wait in mbufs
 * before it, or the line holds twice that (0: every frame that may be).
 * Why: a line that holds few mbufs keeps them in the caches, where the
 * copies in and out only cost (docs/netem.md, "The byte store"); a
 * deeper one leaves the caches, and the store gains. What is stored
 * stays until released.
 */
void shp_tq_store_depth(struct shp_tq *q, uint32_t depth);
/*
 * From now on a frame longer than shp_tq_store_set's size (up to what a
 * record may hold: ST_MAX_LEN, and an mbuf of the pool) is stored too,
 * once `depth` packets wait in mbufs before it (UINT32_MAX: never, as
 * at init). Why: copying a full-size frame costs more than keeping its
 * mbuf while the pool can hold the line; a line longer than the pool
 * (600 ms at 10 Gbit/s is 500,000 frames of 1500 bytes) is carried
 * only by the store, past the mbufs netem may hold.
 */
void shp_tq_store_big(struct shp_tq *q, uint32_t depth);
/* The most bytes a frame stored by shp_tq_store_big may have (store
 * records in chunks of 64 KiB): what the lossless budget assumes. */
#define SHP_TQ_STORE_LEN_MAX 8192u
/* Frames of len bytes a store of `bytes` holds (whole chunks, records
 * of shp_tq_store_rec_size): what the lossless budget counts. */
uint64_t shp_tq_store_frames(size_t bytes, uint32_t len);

/*
 * From now on the store takes a new chunk only while fewer than `bytes`
 * (rounded to whole chunks, at most the region shp_tq_store_init
 * reserved) are in use: a profile's bound within the region, raised or
 * lowered by a new profile. Lowered below what is in use, what is stored
 * stays until released and new frames keep their mbufs (store_full)
 * until the store is back under it. The region starts wholly usable.
 */
void shp_tq_store_bound(struct shp_tq *q, size_t bytes);
/* Bytes of store memory a frame of len bytes takes at most (with a TX
 * offload, a dynamic field or a wait over 4.3 s): what sizing assumes. */
size_t shp_tq_store_rec_size(uint32_t len);
/* ... and without them: what a frame from RX usually takes. */
size_t shp_tq_store_rec_size_plain(uint32_t len);

/* Queue m at shp_meta(m)->time_to_send; now is the current time. */
void shp_tq_insert(struct shp_tq *q, struct rte_mbuf *m, uint64_t now);

/* Earliest packet (stays queued), or NULL. A stored frame is rebuilt
 * into an mbuf here (one whose pool was empty is dropped, counted in
 * st_stats.no_mbuf, and the next one looked at). */
struct rte_mbuf *shp_tq_peek(struct shp_tq *q);

/* Send time of the earliest packet, without rebuilding it; false if the
 * queue is empty. */
bool shp_tq_head_time(struct shp_tq *q, uint64_t *tts);

/* Remove and return the earliest packet, or NULL. */
struct rte_mbuf *shp_tq_pop(struct shp_tq *q);
/* Put back m, the packet the last shp_tq_pop returned (its time_to_send
 * and arrival number untouched): it is the head again. Pops undone in
 * reverse order restore the queue's order exactly (a stored frame comes
 * back as the mbuf it was rebuilt in). */
void shp_tq_unpop(struct shp_tq *q, struct rte_mbuf *m);

/* Up to n packets with time_to_send <= now, in order; never holds a due
 * packet back to fill the vector. */
uint16_t shp_tq_dequeue_due(struct shp_tq *q, uint64_t now,
			    struct rte_mbuf **pkts, uint16_t n);

/* Free everything (tfifo by successor walk); returns the packets freed. */
uint32_t shp_tq_flush(struct shp_tq *q);

/* Latest time_to_send queued (rate and noreorder start from it). */
static inline uint64_t
shp_tq_tail_time(const struct shp_tq *q, int *valid)
{
	*valid = q->qlen > 0;
	return q->qlen > 0 ? q->tail_tts : 0;
}

#endif
