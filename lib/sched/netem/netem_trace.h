/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem `trace FILE [once|loop]`: a TheaterQ trace file, replayed row by
 * row on the data path's clock (docs/netem.md, "Traces").
 *
 * The file holds one row a line, simple (KEEP,LATENCY,RATE,LOSS,LIMIT) or
 * extended (KEEP,LATENCY,JITTER,RATE,LOSS,LIMIT,DUP_PROB,DUP_DELAY,
 * ROUTE_ID), in TheaterQ's units: KEEP in microseconds, the times in
 * nanoseconds, RATE in bit/s, LOSS and DUP_PROB scaled so that 2^32-1 is
 * certain, LIMIT in packets. A line not starting with a digit is a
 * comment. Every row has the columns of the first.
 *
 * A trace is loaded once (the parser, on the control thread) and never
 * changed: the conf owns it. A stage keeps its own place in it
 * (shp_netem_trace_pos), so that each frame takes the row in force when
 * it reaches netem, and the rows' instants are those of the frames, not
 * of the control plane: exact in the offline tool's virtual time.
 */
#ifndef SHP_NETEM_TRACE_H
#define SHP_NETEM_TRACE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A row in 32 bytes (a million-row file is 32 MB). The four wide figures
 * (times in ns, the rate in bit/s) are stored as a 28-bit mantissa
 * shifted by a 4-bit exponent: exact below 2^28 (268 ms, 268 Mbit/s) and
 * for values with trailing zero bits (whole microseconds below 2.1 s,
 * whole milliseconds below 17 s, whole Mbit/s below 17 Gbit/s), else the
 * nearest one, within 4 parts in a billion; at most 2^43 - 1 (8796 s,
 * 8.8 Tbit/s). LIMIT saturates at 2^24 - 1 packets (more than
 * any pool holds); ROUTE_ID is at most 255 (TheaterQ's default bound).
 */
struct shp_netem_trace_row {
	uint32_t keep_us;       /* > 0 */
	uint32_t loss;          /* P(loss) (2^32 - 1) */
	uint32_t dup_prob;      /* P(duplicate) (2^32 - 1) */
	uint32_t limit : 24;    /* packets */
	uint32_t route : 8;     /* ROUTE_ID: read and reported, not acted on */
	uint32_t latency;       /* wide: ns */
	uint32_t jitter;        /* wide: ns, the standard deviation */
	uint32_t dup_delay;     /* wide: ns, the copies' extra delay */
	uint32_t rate;          /* wide: bit/s, 0 = no rate */
};
_Static_assert(sizeof(struct shp_netem_trace_row) == 32,
	       "a trace row costs 32 bytes at most (issue 61)");

#define SHP_NETEM_TRACE_WIDE_MAX ((UINT64_C(1) << 43) - 1)
#define SHP_NETEM_TRACE_LIMIT_MAX ((1u << 24) - 1)
#define SHP_NETEM_TRACE_ROUTE_MAX 255
/* A file's bounds: 16M rows of 64 bytes of text. */
#define SHP_NETEM_TRACE_FILE_MAX ((size_t)1 << 30)
#define SHP_NETEM_TRACE_LINE_MAX 512
#define SHP_NETEM_TRACE_ROWS_MAX (1u << 24)
/* Rows a row's start is kept for (the seek's index): 1 in this many. */
#define SHP_NETEM_TRACE_MARK 256

struct shp_netem_trace {
	char *path;             /* as given (printed back) */
	bool loop;              /* `loop` (the default), else `once` */
	uint8_t columns;        /* 5 (simple) or 9 (extended) */
	uint32_t n;             /* rows */
	uint64_t total_ns;      /* the sum of KEEP */
	uint64_t max_latency, max_jitter;   /* ns, over the rows */
	uint64_t *mark;         /* start (ns) of row k * MARK */
	struct shp_netem_trace_row *rows;
};

/* The value a wide field holds, and the field for v (v at most
 * SHP_NETEM_TRACE_WIDE_MAX). */
static inline uint64_t
shp_netem_trace_wide(uint32_t w)
{
	return (uint64_t)(w & 0x0fffffff) << (w >> 28);
}
uint32_t shp_netem_trace_pack(uint64_t v);

/*
 * Reads path (the bounded reader shp_file.h, as the control socket's
 * client when a client asked). NULL with err (SHP_ERR_LEN) naming the
 * file and the line of the first bad row: nothing is kept of it.
 */
struct shp_netem_trace *shp_netem_trace_load(const char *path, bool loop,
					     char *err);
void shp_netem_trace_free(struct shp_netem_trace *t);

/* Where a stage is in a trace: the row in force in [start, end). */
struct shp_netem_trace_pos {
	bool armed;             /* the first frame has set t0 */
	uint32_t row;
	uint64_t t0;            /* ns: the start of the current pass */
	uint64_t start, end;    /* ns: the row's */
	uint64_t passes;        /* completed passes (loop) */
};

/* The row whose span holds t (ns), from t0 (ns, the trace's start);
 * its span in *start, *end (end UINT64_MAX: the last row of a `once`
 * trace holds for ever). Without side effects: any frame, any order. */
uint32_t shp_netem_trace_find(const struct shp_netem_trace *t, uint64_t t0,
			      uint64_t at, uint64_t *start, uint64_t *end);

/* The row in force at `at` for a stage whose trace started at pos->t0:
 * rows only move forward (a frame offered before its row's start takes
 * that row). Constant time but at a row's end. */
static inline uint32_t
shp_netem_trace_at(const struct shp_netem_trace *t,
		   struct shp_netem_trace_pos *pos, uint64_t at)
{
	if (__builtin_expect(at >= pos->end, 0)) {
		pos->row = shp_netem_trace_find(t, pos->t0, at, &pos->start,
						&pos->end);
		if (t->loop && t->total_ns != 0)
			pos->passes = (pos->start - pos->t0) / t->total_ns;
	}
	return pos->row;
}

/* c (a copy of the stage's conf) with row's delay, jitter, rate, loss,
 * duplicate, the copies' extra delay and limit. */
struct shp_netem_conf;
void shp_netem_trace_apply(const struct shp_netem_trace *t, uint32_t row,
			   struct shp_netem_conf *c);

/* Starts pos at t0 (ns). */
void shp_netem_trace_arm(const struct shp_netem_trace *t,
			 struct shp_netem_trace_pos *pos, uint64_t t0);

#endif
