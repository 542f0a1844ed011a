/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The token bucket tbf (shp_tbf.h) and the policer (shp_police.h) share:
 * its conf, the arithmetic of its ticks and lengths, and the two
 * grammars that fill it (lib/sched/tbf_parse.c: tc-tbf's words, and tc
 * police's, which are tbf's without a queue). Neither kind includes the
 * other's header: what both need is here.
 *
 * Tokens are nanoseconds of transmit time at `rate`; the bucket holds the
 * time to send `burst` (with overhead, mpu and linklayer applied to it as
 * to every packet, as the kernel's psched_l2t_ns). The length counted is
 * the L2 frame without FCS. A packet longer than burst (or than
 * min(burst, mtu) with a peak rate), raw length, never passes.
 */
#ifndef SHP_BUCKET_H
#define SHP_BUCKET_H

#include <stdint.h>
#include <stddef.h>

#include "shp_conf_hdr.h"
#include "shp_units.h"

/* The bucket's conf (named after tbf, its first user). */
struct shp_tbf_conf {
	struct shp_conf_hdr hdr;   /* first: shp_qdisc.h */
	uint64_t rate;       /* bytes per second */
	uint64_t burst;      /* bytes */
	uint64_t limit;      /* bytes queued behind the bucket */
	uint64_t latency;    /* ns, when given instead of limit (0: not) */
	uint64_t peakrate;   /* bytes per second, 0 = none */
	uint64_t mtu;        /* bytes, peak bucket size */
	int32_t overhead;    /* bytes added to each frame's length */
	uint32_t mpu;        /* minimum packet unit */
	int atm;             /* linklayer atm: 53-byte cells of 48 */
	/* derived by shp_tbf_parse/shp_tbf_derive */
	uint64_t max_size;   /* largest frame that can ever pass (raw bytes) */
	uint64_t rate_mult;  /* ns per byte << 32 at rate */
	uint64_t peak_mult;  /* ns per byte << 32 at peakrate */
	int64_t buffer_t;    /* bucket depth in ticks (ns << SHP_TBF_SHIFT) */
	int64_t mtu_t;       /* peak bucket depth in ticks */
};
SHP_CONF_HDR_FIRST(struct shp_tbf_conf);

/* Tokens are kept in ticks of 2^-10 ns: integer nanoseconds would be 0.4%
 * off for a 64-byte frame at 10 Gbit/s. */
#define SHP_TBF_SHIFT 10

/* What the tick arithmetic holds: a bucket of at most 2^61 ticks (26 days)
 * so that elapsed + tokens never overflows, and a rate whose per-byte
 * factor keeps 20 significant bits. Parsing refuses anything beyond. */
#define SHP_TBF_MAX_TICKS (INT64_C(1) << 61)
#define SHP_TBF_MAX_RATE  (UINT64_C(1000000000) << (32 - 20))

/* Fill the derived fields from the user-visible ones. */
void shp_tbf_derive(struct shp_tbf_conf *conf);

/*
 * Bytes the bucket counts for a frame of len bytes, psched_l2t_ns's
 * length: plus overhead, at least mpu, in 53-byte cells of 48 with
 * linklayer atm. Saturates (a burst may be near 2^64 bytes). Inline:
 * tbf charges every packet.
 */
static inline uint64_t
shp_tbf_wire_len(const struct shp_tbf_conf *c, uint64_t len)
{
	uint64_t l, cells;

	if (c->overhead >= 0)
		l = len > UINT64_MAX - (uint64_t)c->overhead ? UINT64_MAX :
			len + (uint64_t)c->overhead;
	else
		l = len > (uint64_t)-(int64_t)c->overhead ?
			len - (uint64_t)-(int64_t)c->overhead : 0;
	if (l < c->mpu)
		l = c->mpu;
	if (c->atm) {
		cells = l / 48 + (l % 48 != 0);
		l = cells > UINT64_MAX / 53 ? UINT64_MAX : cells * 53;
	}
	return l;
}

/* Ticks to send len wire bytes at mult (rate_mult or peak_mult),
 * saturated at INT64_MAX. */
static inline int64_t
shp_tbf_ticks(uint64_t mult, uint64_t wire_len)
{
	unsigned __int128 t = ((unsigned __int128)wire_len * mult) >>
			      (32 - SHP_TBF_SHIFT);

	return t > INT64_MAX ? INT64_MAX : (int64_t)t;
}

/* Parse tc-tbf words; 0 or -1 with err naming the bad word. */
int shp_tbf_parse(const char *args, struct shp_tbf_conf *conf, char *err);

/* A conf on the heap (free() frees it) that parse (shp_tbf_parse,
 * shp_police_parse) filled from args: a kind's parse op. NULL with err. */
void *shp_tbf_conf_new(int (*parse)(const char *, struct shp_tbf_conf *,
				    char *), const char *args, char *err);

/* tc-like text of a conf; it parses back to an equal conf (but id). */
int shp_tbf_format(const struct shp_tbf_conf *conf, char *buf, size_t len);

/* act_police without a given mtu: 255 << cell_log, the cell log tc
 * computes for its default mtu of 2047 bytes (3) */
#define SHP_POLICE_DEFAULT_MTU (255u << 3)

/* Parse tc police words into a tbf conf (limit and latency refused);
 * 0 or -1 with err naming the bad word. */
int shp_police_parse(const char *args, struct shp_tbf_conf *conf, char *err);

/* Text of a conf that shp_police_parse takes back to an equal conf (but
 * id). snprintf's return convention. */
int shp_police_format(const struct shp_tbf_conf *conf, char *buf, size_t len);

#endif
