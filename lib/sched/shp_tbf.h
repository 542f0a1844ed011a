/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Token bucket (Linux tbf semantics), configured with tc-tbf syntax:
 *
 *   rate RATE burst SIZE (limit SIZE | latency TIME)
 *        [peakrate RATE mtu SIZE] [overhead N] [mpu N]
 *        [linklayer ethernet|atm]
 *
 * Tokens are nanoseconds of transmit time at `rate`; the bucket holds the
 * time to send `burst` (with overhead, mpu and linklayer applied to it as
 * to every packet, as the kernel's psched_l2t_ns). The length counted is
 * the L2 frame without FCS. A packet longer than burst (or than
 * min(burst, mtu) with a peak rate), raw length, never passes.
 * The queue behind the bucket is the bands stage: `limit` bounds its bytes.
 * Keywords may be abbreviated as tc allows ("l" is limit, "lat" latency).
 */
#ifndef SHP_TBF_H
#define SHP_TBF_H

#include <stdint.h>

/* the bucket, its conf and its grammar: shared with the policer */
#include "shp_bucket.h"

struct shp_qdisc;
/*
 * Charge a packet that did not come through the bucket (a netem copy)
 * against it, as Linux charges a duplicate re-enqueued at the root: the
 * tokens may go below zero, and the packets behind wait for the debt.
 * q: the tbf stage or a stage above it in the chain (none below, or tbf
 * off: nothing). Owner lcore. tbf's charge op (shp_qdisc_charge): no
 * other kind calls it by name.
 */
void shp_tbf_charge(struct shp_qdisc *q, uint32_t len, uint64_t now);

/* The ops, for tests and benchmarks that build a stage by hand; the
 * program finds them through the kind (shp_kind_find("tbf")). */
struct shp_qdisc_ops;
extern const struct shp_qdisc_ops shp_tbf_ops;

#endif
