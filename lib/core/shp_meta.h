/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-packet metadata kept in the mbuf private area.
 *
 * Every stage reads and writes its per-packet state here so that nothing is
 * allocated per packet. The area is not zeroed by the mempool and clones do
 * not carry it: whoever creates a packet (RX, the replay tool, a netem
 * duplicate) calls shp_meta_init().
 */
#ifndef SHP_META_H
#define SHP_META_H

#include <stdint.h>
#include <bsd/sys/tree.h>
#include <rte_mbuf.h>

#define SHP_META_F_DUP     0x01 /* a netem copy: never duplicated again */

struct shp_meta {
	uint64_t rx_ns;          /* arrival time on the shaper clock (ns) */
	uint64_t time_to_send;   /* netem departure time (ns); 0: not netem's */
	RB_ENTRY(shp_meta) rb;   /* netem tfifo tree node */
	struct shp_meta *next;   /* netem tfifo list fast path */
	union {
		struct {
			uint8_t prio;    /* TC_PRIO-style priority 0..15 */
			uint8_t band;    /* band chosen through the priomap */
			uint8_t flags;   /* SHP_META_F_* */
			uint8_t pad;
			uint32_t seq;    /* netem arrival number (ties) */
		};
		uint64_t cls;    /* all of the above, for one store on RX */
	};
};

/* priv_size to give rte_pktmbuf_pool_create(). */
#define SHP_MBUF_PRIV_SIZE \
	RTE_ALIGN(sizeof(struct shp_meta), RTE_MBUF_PRIV_ALIGN)

static inline struct shp_meta *
shp_meta(struct rte_mbuf *m)
{
	return (struct shp_meta *)rte_mbuf_to_priv(m);
}

static inline struct rte_mbuf *
shp_meta_mbuf(struct shp_meta *meta)
{
	return (struct rte_mbuf *)((char *)meta - sizeof(struct rte_mbuf));
}

static inline void
shp_meta_init(struct rte_mbuf *m, uint64_t rx_ns)
{
	struct shp_meta *meta = shp_meta(m);

	meta->rx_ns = rx_ns;
	meta->time_to_send = 0;
	meta->next = NULL;
	meta->cls = 0;
}

/*
 * What RX must set: arrival time, classification, and time_to_send 0,
 * which tells TX that netem has not scheduled the packet (no lateness to
 * measure: bypass, netem off). next belongs to netem, which sets it on
 * enqueue. time_to_send sits next to rx_ns in the line RX writes anyway.
 */
static inline void
shp_meta_rx_at(struct rte_mbuf *m, uint64_t rx_ns, uint64_t tts, uint8_t prio,
	       uint8_t band)
{
	struct shp_meta *meta = shp_meta(m);

	meta->rx_ns = rx_ns;
	meta->time_to_send = tts;
	meta->cls = (uint64_t)prio | (uint64_t)band << 8;
}

static inline void
shp_meta_rx(struct rte_mbuf *m, uint64_t rx_ns, uint8_t prio, uint8_t band)
{
	shp_meta_rx_at(m, rx_ns, 0, prio, band);
}

/* shp_meta_rx for pkts[0..n), prio[i] and band[i] from the classifier,
 * time_to_send tts (0, or the time a gate let them go). */
static inline void
shp_meta_rx_burst(struct rte_mbuf **pkts, uint16_t n, uint64_t rx_ns,
		  uint64_t tts, const uint8_t *prio, const uint8_t *band)
{
	uint16_t i;

	for (i = 0; i < n; i++)
		shp_meta_rx_at(pkts[i], rx_ns, tts, prio[i], band[i]);
}

/*
 * A gate (tbf, trace) lets pkts[0..n) go at t: that is when the profile
 * says they may leave, unless a stage already set a later time. What
 * they waited in the gate is the profile's queueing, not the emulator's
 * lateness (the overload rule, shp_due_time, reads this), and a netem
 * after the gate counts its delay from t (netem_offered). A class's
 * netem may have set an earlier time before the port's gate held the
 * packet: t replaces it.
 */
static inline void
shp_meta_released(struct rte_mbuf **pkts, uint16_t n, uint64_t t)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct shp_meta *meta = shp_meta(pkts[i]);

		if (meta->time_to_send < t)
			meta->time_to_send = t;
	}
}

/*
 * pkts[0..n), which a gate let go (time_to_send set: when its bucket
 * would have, shp_meta_released) and no netem holds after it, leave on
 * time as far as TX's lateness goes: now. The gate's time is what a netem
 * counts its delay from; without one, TX measures from when the lcore
 * took the frame, as a tbf alone must to keep the link's rate (a frame
 * shed as late would have spent its tokens for nothing).
 */
static inline void
shp_meta_gate_sent(struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct shp_meta *meta = shp_meta(pkts[i]);

		if (meta->time_to_send != 0 && meta->time_to_send < now)
			meta->time_to_send = now;
	}
}

#endif
