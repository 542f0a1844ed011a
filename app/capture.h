/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The live drop capture (issue 60): `--capture-drops FILE`, `capture
 * drops start FILE [snaplen BYTES] [limit BYTES]`, `capture drops stop`,
 * `show capture`. Each worker lcore gets a producer (drop_capture.h)
 * that its drop funnel fills; the main lcore writes their records to
 * the pcapng file between its other duties (ctl_tick). Everything here
 * but shaper_cap_of runs on the main lcore.
 */
#ifndef SHAPER_CAPTURE_H
#define SHAPER_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <rte_lcore.h>

#include "drop_capture.h"

struct shaper;

/* Each lcore's producer while a capture runs, NULL otherwise: a worker
 * loads its own once per burst (shaper_capture_of). */
extern struct shp_dropcap *shaper_cap_of[RTE_MAX_LCORE];

static inline struct shp_dropcap *
shaper_capture_of(unsigned int lcore)
{
	return __atomic_load_n(&shaper_cap_of[lcore], __ATOMIC_ACQUIRE);
}

/* --capture-drops FILE, --capture-snaplen, --capture-limit: checked
 * when parsed (before the EAL), started before the workers. */
struct shaper_capture_opt {
	const char *path;
	uint32_t snaplen;
	uint64_t limit;
	/* --packet-log FILE, --packet-log-sample N */
	const char *log_path;
	uint32_t log_every;
};
extern struct shaper_capture_opt shaper_capture_opt;

/* Start capturing to path (snaplen, limit: 0 the defaults); fresh: a
 * file that exists is refused (a command), else replaced (the option).
 * 0, or -1 with one line in err (SHP_ERR_LEN) and nothing changed. */
int shaper_capture_start(struct shaper *s, const char *path,
			 uint32_t snaplen, uint64_t limit, bool fresh,
			 char *err);
/* Stop: what the workers handed over is written, the file closed. 0,
 * or -1 with err (none running; a write error). */
int shaper_capture_stop(struct shaper *s, char *err);
/* The live packet log: one fate (sent or dropped) in every, a CSV line
 * each, until limit bytes; through the same producers. 0, or -1 with
 * err. Stopped (the file flushed, closed) by shaper_packet_log_stop,
 * which stops the drop capture too (at exit). */
int shaper_packet_log_start(struct shaper *s, const char *path,
			    uint32_t every, uint64_t limit, char *err);
int shaper_packet_log_stop(struct shaper *s, char *err);
/* Write what the producers hold (ctl_tick). */
void shaper_capture_poll(struct shaper *s);
/* `show capture` */
void shaper_capture_show(struct shaper *s, FILE *f);
/* The state as JSON members (no braces): "running", "file", ... */
void shaper_capture_json(FILE *f);
bool shaper_capture_running(void);

#endif
