/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The drop capture (issue 60): every frame the shaper drops, its first
 * bytes and why, for a pcapng file (pcapng_write.h) that Wireshark reads
 * with the cause beside each frame.
 *
 * The drop funnel (shp_drop_burst and its kin, shp_qdisc.h) hands what it
 * frees to the calling lcore's producer, ctx->cap, when a capture runs
 * (NULL otherwise: one predictable branch per dropped burst). Live, a
 * producer is one worker lcore's: a free list and a queue of records
 * made at start (two single-producer single-consumer rte_rings), so a
 * drop costs a copy of at most snaplen bytes and no allocation, lock or
 * syscall; the main lcore takes the queued records and writes them. What
 * finds no free record is counted (lost) and the worker goes on: the
 * capture never slows forwarding. Offline (the replay tool) a producer
 * calls its `direct` function for each drop instead, so nothing is ever
 * lost.
 */
#ifndef SHP_DROP_CAPTURE_H
#define SHP_DROP_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_mbuf.h>

#include "shp_stats.h"

#define SHP_CAP_SNAPLEN_DEFAULT 128
#define SHP_CAP_SNAPLEN_MAX     65535
#define SHP_CAP_LIMIT_DEFAULT   (UINT64_C(256) << 20)
#define SHP_CAP_CLASS_LEN       32          /* a class name, with its NUL */
#define SHP_CAP_NO_BAND         0xff

/* What a drop is tagged with besides its cause: where it happened. The
 * drop funnel's callers keep one in their ctx (shp_qdisc.h). */
struct shp_captag {
	uint16_t port;
	uint16_t shard;
	const char *cls;     /* the class's name, NULL: the port's own */
	/* the frame is a netem copy counted lost without being made: the
	 * mbuf given is its original (byte for byte the copy) */
	bool copy;
	/* its metadata is not written yet (dropped on arrival: RX's own
	 * drops, the policer): it arrived now, no band */
	bool fresh;
};

/* kind of a record */
#define SHP_CAP_K_DROP 0     /* a frame of the drop capture */
#define SHP_CAP_K_LOG  1     /* a line of the live packet log */
#define SHP_CAP_SENT   0xff  /* a log record's slot: sent, not dropped */

/* One dropped frame: its metadata, then caplen bytes. */
struct shp_caprec {
	uint64_t time_ns;    /* the drop instant on the shaper clock */
	uint64_t rx_ns;      /* a log record's: its arrival */
	uint32_t orig_len;
	uint16_t caplen;
	uint16_t port;
	uint16_t shard;
	uint8_t slot;        /* its cause: shp_drop_names[slot] */
	uint8_t band;        /* SHP_CAP_NO_BAND: none applies */
	bool copy;           /* as shp_captag's; a log record's: a netem
			      * copy */
	uint8_t kind;        /* SHP_CAP_K_* */
	char cls[SHP_CAP_CLASS_LEN];   /* "": none */
	uint8_t data[];
};

/* Offline: called for each drop (m: the frame, for fields of the
 * caller's own; NULL for a frame that has no mbuf). */
typedef void (*shp_cap_direct_t)(void *arg, const struct shp_caprec *rec,
				 struct rte_mbuf *m);

struct rte_ring;

struct shp_dropcap {
	uint32_t snaplen;
	/* live: every drop is captured (the drop capture runs) */
	bool drops;
	/* live, the writer's: the file reached its limit, so a drop is
	 * counted lost at once, not copied for the writer to count */
	bool file_full;
	/* live: one fate (sent or dropped) in log_every is a packet log
	 * record (0: no log); the next logged is log_left fates on */
	uint32_t log_every;
	uint32_t log_left;
	/* live: records queued for the writer, and the free ones */
	struct rte_ring *full;
	struct rte_ring *free;
	void *mem;
	/* offline: instead of the rings; rec is a scratch record */
	shp_cap_direct_t direct;
	void *arg;
	struct shp_caprec *rec;
	/* written by the producer only: drops that found no free record,
	 * by port (its tag's) */
	uint64_t lost[SHP_MAX_PORTS];
	/* the writer's: how much of lost it counted (shp_dropcap_account) */
	uint64_t lost_seen[SHP_MAX_PORTS];
};

/*
 * What the captures of this process kept (written to a file) and could
 * not keep (capture_lost: no free record, the file's limit), by port,
 * since the start: the stats file's ports.N.capture, `show capture`,
 * the exporter's. Written by the writer's thread only (the main lcore,
 * the tool), read by any (relaxed loads).
 */
struct shp_capture_count {
	uint64_t captured;
	uint64_t lost;
};
extern struct shp_capture_count shp_capture_counts[SHP_MAX_PORTS];
/* a capture ran: the stats file has the counts (else not a word) */
extern bool shp_capture_ran;

/* The writer's thread: add to the counts what c lost since its last
 * call. */
void shp_dropcap_account(struct shp_dropcap *c);

/* A live producer: records of snaplen bytes on socket, enough for
 * bursts of drops while the writer is away (a few MiB at most). NULL
 * with rte_errno. */
struct shp_dropcap *shp_dropcap_new(uint32_t snaplen, int socket);
/* An offline one: direct(arg, ...) for each drop. NULL: no memory. */
struct shp_dropcap *shp_dropcap_new_direct(uint32_t snaplen,
					   shp_cap_direct_t direct, void *arg);
void shp_dropcap_free(struct shp_dropcap *c);

/* pkts[0..n) dropped at now under slot, tagged t, band b (a bands
 * stage's, else SHP_CAP_NO_BAND): copied before they are freed. The
 * producer's lcore only. */
void shp_dropcap_put(struct shp_dropcap *c, const struct shp_captag *t,
		     uint64_t now, unsigned int slot, unsigned int band,
		     struct rte_mbuf *const *pkts, uint16_t n);

/* For the packet log (log_every != 0): n packets tagged t sent at now,
 * read before they went (a PMD may free what it sent at once): soj[i]
 * their sojourns, band[i] their bands and flags[i] their metadata's
 * flags (each NULL: sent the instant they arrived, no band, no flags).
 * The producer's lcore. */
void shp_dropcap_log_sent(struct shp_dropcap *c, const struct shp_captag *t,
			  uint64_t now, const uint64_t *soj,
			  const uint8_t *band, const uint8_t *flags,
			  uint16_t n);

/* A frame that has no mbuf (the replay tool's before it makes one). */
void shp_dropcap_put_raw(struct shp_dropcap *c, const struct shp_captag *t,
			 uint64_t now, unsigned int slot, const void *data,
			 uint32_t len);

/* --capture-snaplen / `snaplen BYTES`: 1..65535; --capture-limit /
 * `limit BYTES`: a size (shp_parse_size), at least 4 KiB. 0, or -1 with
 * one line in err (SHP_ERR_LEN). */
int shp_capture_parse_snaplen(const char *s, uint32_t *v, char *err);
int shp_capture_parse_limit(const char *s, uint64_t *v, char *err);

/* The writer's side of a live producer: up to n queued records into
 * recs (in the order they were dropped), then each handed back. */
unsigned int shp_dropcap_take(struct shp_dropcap *c,
			      struct shp_caprec **recs, unsigned int n);
void shp_dropcap_give(struct shp_dropcap *c, struct shp_caprec **recs,
		      unsigned int n);

#endif
