/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The offline replay's virtual clock helpers: when does the chain
 * netem -> tbf -> bands next do something, without a clock of its own.
 *
 * Stages have no "next event" op, so the tool works it out from what it
 * can see:
 *  - netem: the earliest packet of its time queue (peek at the end of
 *    time) and its time_to_send;
 *  - tbf: a pass-through "tap" stage between netem and tbf watches every
 *    packet the bucket releases and keeps a shadow of the bucket (last
 *    checkpoint, tokens, peak tokens) with the same arithmetic as sch_tbf.c;
 *    the release time of the bands' head follows from it exactly.
 */
#ifndef SHP_REPLAY_CLOCK_H
#define SHP_REPLAY_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "shp_qdisc.h"
#include "shp_tbf.h"

#define SHP_NEVER UINT64_MAX

/* Shadow of the token bucket's state (see sch_tbf.c). */
struct tbf_shadow {
	const struct shp_tbf_conf *conf;   /* NULL: tbf off */
	bool started;      /* the bucket saw its first dequeue */
	uint64_t t_c;      /* ns of the last checkpoint */
	int64_t tokens;    /* ticks */
	int64_t ptokens;   /* ticks */
	uint64_t released; /* packets the bucket let through */
	uint64_t resync;   /* shadow disagreed with the stage (should be 0) */
	struct shp_qdisc *tbf;
};

/* The tap's ops; its conf is the struct tbf_shadow to keep. */
extern const struct shp_qdisc_ops replay_tap_ops;

/* Earliest ns >= now at which the bucket lets a packet of len bytes go,
 * SHP_NEVER if it never can. */
uint64_t tbf_shadow_release_time(const struct tbf_shadow *s, uint64_t now,
				 uint32_t len);

#endif
