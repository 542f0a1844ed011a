/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A pcapng file of dropped frames (drop_capture.h): one interface per
 * port (nanosecond times), one Enhanced Packet Block per drop with the
 * comment "cause=CAUSE port=P shard=S[ class=NAME][ band=B]".
 *
 * Written here rather than with DPDK's rte_pcapng: the 22.11 one cannot
 * give a packet block a comment (rte_pcapng_copy takes none before
 * 23.11), and the cause is the point of the file. The format is the
 * IETF draft's (draft-ietf-opsawg-pcapng): little-endian host order,
 * blocks padded to 32 bits.
 *
 * Bounded: once the next block would take the file past `limit` bytes
 * nothing more is written (the file ends cleanly after the last whole
 * block) and each further frame is counted in `lost`.
 */
#ifndef SHP_PCAPNG_WRITE_H
#define SHP_PCAPNG_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "drop_capture.h"

struct shp_pcapng {
	FILE *f;
	uint64_t limit;       /* bytes, the file's bound */
	uint64_t bytes;       /* written so far */
	uint64_t written;     /* frames written */
	uint64_t lost;        /* frames the bound refused */
	int64_t ts_offset;    /* added to a record's time: the epoch's */
	uint32_t snaplen;
	uint16_t nb_ifs;
	bool full;            /* the bound was reached */
	bool error;           /* a write failed: nothing more is tried */
	/* a block is made here and written in one call; the last comment
	 * made is kept with what it was made of (drops come in runs of one
	 * cause) */
	uint8_t *blk;
	char *iobuf;
	struct shp_caprec key;
	char comment[160];
	uint32_t comment_len;
};

/*
 * Create path (refused if it cannot be written: err gets one line) and
 * write its header and an interface for each of ports 0..nb_ifs-1.
 * fresh: refuse a path that exists (or is a symbolic link), as a
 * command at run time does: it writes no file it did not make. 0, or -1.
 */
int shp_pcapng_open(struct shp_pcapng *w, const char *path, uint16_t nb_ifs,
		    uint32_t snaplen, uint64_t limit, bool fresh, char *err,
		    size_t errlen);

/* Write rec as a block (its port's interface); counted in written or
 * lost, and in shp_capture_counts. true when written. */
bool shp_pcapng_write(struct shp_pcapng *w, const struct shp_caprec *rec);

/* Flush and close; 0, or -1 when a write failed (errno). */
int shp_pcapng_close(struct shp_pcapng *w);

/* The comment of rec, as the file has it; snprintf's return. */
int shp_pcapng_comment(const struct shp_caprec *rec, char *buf, size_t len);

#endif
