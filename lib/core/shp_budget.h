/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lossless budget of a port's delay line (issue 61): how many frames
 * it can hold without a drop of its own (the mbufs it may take from the
 * pool, and what its byte store holds), and what that allows: the longest
 * delay at the port's line rate and at the rate in front of it, and the
 * highest rate at the delay configured. Frames are assumed full-size at
 * the port's MTU (the fewest frames for the most bytes: the worst case
 * for the mbufs, about the best for the store's record overhead; smaller
 * frames at the same bit rate are more frames).
 */
#ifndef SHP_BUDGET_H
#define SHP_BUDGET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* What the delay kind needs to know of the port (its budget op). */
struct shp_budget_in {
	uint32_t frame;        /* bytes, L2 without FCS: MTU + 14 */
	uint64_t line_rate;    /* bytes/s of the port's link (0: unknown) */
	uint64_t gate_rate;    /* bytes/s the rate stage passes (0: none) */
	unsigned int pool;     /* mbufs of the port's pool (0: none) */
	uint32_t hold_cap;     /* the port's share of it (0: no bound) */
	/* the link's shards (0 or 1: one queue): each has a byte store of
	 * its own, the limit and the share are the link's */
	uint16_t shards;
};

struct shp_budget {
	bool known;
	uint32_t frame;              /* the frame size assumed */
	uint64_t line_rate, gate_rate;   /* bytes/s, as given */
	uint64_t delay_ns;           /* configured: delay + jitter + accumulate */
	uint64_t frames;             /* the most the line holds */
	uint64_t mbufs;              /* of those, in mbufs */
	uint64_t store_bound;        /* bytes the profile's store may use */
	uint64_t store_reserved;     /* bytes of address space it reserves */
	/* 0: not known (no such rate) or, for the rate, no delay */
	uint64_t max_delay_at_line_ns;
	uint64_t max_delay_at_rate_ns;
	uint64_t max_rate_at_delay_bps;
	bool over;                   /* the delay exceeds what the rate
				      * that feeds the line allows */
};

/* Bytes a frame of `frame` bytes takes on the wire: FCS, preamble and
 * the gap between frames (24 bytes). */
#define SHP_BUDGET_WIRE_EXTRA 24u

/*
 * From b->frames, frame, the rates and delay_ns: the three figures and
 * `over`. At the line rate a frame costs frame + 24 bytes of wire; at the
 * rate stage's, frame bytes (tbf counts L2 without FCS); the rate at the
 * delay is in bits a second of such frames, as tbf's rate is given.
 */
void shp_budget_finish(struct shp_budget *b);

/* One line, without the newline: "port P: lossless budget ..."; the
 * warning when b->over: "... exceeds ...". snprintf's convention. */
int shp_budget_line(const struct shp_budget *b, uint16_t port, char *buf,
		    size_t len);
int shp_budget_over_line(const struct shp_budget *b, uint16_t port,
			 char *buf, size_t len);
/* The stats file's object: {"frame_bytes": ..., ...} */
void shp_budget_json(FILE *f, const struct shp_budget *b);

#endif
