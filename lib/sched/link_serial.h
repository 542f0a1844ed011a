/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A link's serialisation shared by the shards that serve it (issue 24):
 * netem's `rate` sends one frame at a time on the link, not one at a time
 * on each shard.
 *
 * netem times a frame under `rate` as Linux does: it leaves its own
 * serialisation time after the later of its earliest send time (offered
 * plus the delay drawn) and the send time of the frame queued before it.
 * Shards share that "before": the link's one number, the send time of
 * the last frame any shard claimed (`busy`). A shard works out a burst's
 * send times from it and moves it with one compare-and-swap, retried
 * when another shard claimed in between; so the send times are exactly
 * those of one netem that saw the bursts in the order their swaps
 * succeeded. No lock, no shared write per packet.
 *
 * One difference from a queue's tail: `busy` remembers frames that have
 * already left, so a frame whose earliest time lies before the end of a
 * frame sent earlier waits for it; a private netem with an empty queue
 * would let the two overlap on the wire. Only a frame offered to netem
 * later than its delay allows meets it.
 */
#ifndef LINK_SERIAL_H
#define LINK_SERIAL_H

#include <stdint.h>
#include <rte_common.h>

struct shp_link_serial {
	uint64_t busy;      /* ns: the send time of the last frame claimed */
	uint64_t claims;    /* successful swaps (statistics only) */
	uint64_t retries;   /* swaps lost to another shard */
} __rte_cache_aligned;

/*
 * Send times for n frames, in order: tts[i] = max(base[i], tts[i-1]) +
 * cost[i], with tts[-1] the link's `busy`, which becomes tts[n-1]
 * (saturating: UINT64_MAX stays never). One swap when uncontended. Any
 * lcore, lock-free. s zeroed: a link that has sent nothing.
 */
void shp_link_serial_claim(struct shp_link_serial *s, const uint64_t *base,
			   const uint64_t *cost, uint16_t n, uint64_t *tts);

#endif
