/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A policer (Linux act_police), configured with tc police's words:
 *
 *   rate RATE burst SIZE [mtu SIZE] [peakrate RATE] [overhead N]
 *        [mpu N] [linklayer ethernet|atm]
 *
 * The bucket is tbf's (shp_bucket.h: the same conf, the same parse of the
 * words both take, the same tick arithmetic and length rule), but nothing
 * waits behind it: a packet the bucket covers now passes at once, one it
 * does not is dropped and leaves the bucket as it was (tcf_police_act).
 * A packet longer than mtu never conforms; without an mtu the largest is
 * SHP_POLICE_DEFAULT_MTU, as the kernel's. peakrate needs mtu (as tc).
 *
 * The state belongs to one lcore: the rate is exact only if one bucket
 * sees every packet in arrival order.
 */
#ifndef SHP_POLICE_H
#define SHP_POLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shp_bucket.h"

struct shp_police_state {
	uint64_t t_c;      /* ns of the last packet that conformed */
	int64_t tokens;    /* ticks (shp_bucket.h), never below 0 */
	int64_t ptokens;   /* peak bucket, ticks */
};

/* A full bucket at now (tc: the action is created with a full bucket). */
static inline void
shp_police_init(struct shp_police_state *s, const struct shp_tbf_conf *c,
		uint64_t now)
{
	s->t_c = now;
	s->tokens = c->buffer_t;
	s->ptokens = c->mtu_t;
}

/*
 * A burst of n frames arriving at now (ns): len[i] bytes (L2, no FCS)
 * of frame i; verdict[i] 0 if it conforms (its cost taken from the
 * bucket), 1 if not (the bucket left as it was). As n frames judged one
 * after the other (only the first sees time pass), with the refill done
 * once and a frame's cost reused for the next of the same length. A
 * time before the last conforming packet's (RX stamps of several RX
 * lcores met in one inbox) adds no tokens rather than wrapping to a full
 * bucket. Inline: it runs per packet.
 */
static inline void
shp_police_conform_burst(struct shp_police_state *s,
			 const struct shp_tbf_conf *c, const uint32_t *len,
			 uint16_t n, uint64_t now, uint8_t *verdict)
{
	int64_t cap = c->buffer_t > c->mtu_t ? c->buffer_t : c->mtu_t;
	uint64_t dt = now > s->t_c ? now - s->t_c : 0;
	int64_t elapsed, toks, ptoks = 0, cost = 0, pcost = 0;
	uint32_t last = UINT32_MAX;
	bool any = false;
	uint16_t i;

	elapsed = dt >= ((uint64_t)cap >> SHP_TBF_SHIFT) + 1 ? cap :
		  (int64_t)(dt << SHP_TBF_SHIFT);
	toks = elapsed + s->tokens;
	if (toks > c->buffer_t)
		toks = c->buffer_t;
	if (c->peakrate) {
		ptoks = elapsed + s->ptokens;
		if (ptoks > c->mtu_t)
			ptoks = c->mtu_t;
	}
	for (i = 0; i < n; i++) {
		int64_t t, pt = 0;

		if (len[i] > c->max_size) {
			verdict[i] = 1;
			continue;
		}
		if (len[i] != last) {
			uint64_t wlen = shp_tbf_wire_len(c, len[i]);

			last = len[i];
			cost = shp_tbf_ticks(c->rate_mult, wlen);
			if (c->peakrate)
				pcost = shp_tbf_ticks(c->peak_mult, wlen);
		}
		t = toks - cost;
		if (c->peakrate)
			pt = ptoks - pcost;
		if ((t | pt) < 0) {
			verdict[i] = 1;
			continue;
		}
		verdict[i] = 0;
		toks = t;
		ptoks = pt;
		any = true;
	}
	if (!any)
		return;   /* nothing conformed: the bucket as it was */
	if (now > s->t_c)
		s->t_c = now;
	s->tokens = toks;
	s->ptokens = ptoks;
}

/* Does one frame of len bytes arriving at now conform? If so its cost
 * is taken from the bucket. */
static inline bool
shp_police_conform(struct shp_police_state *s, const struct shp_tbf_conf *c,
		   uint32_t len, uint64_t now)
{
	uint8_t v;

	shp_police_conform_burst(s, c, &len, 1, now, &v);
	return v == 0;
}

#endif
