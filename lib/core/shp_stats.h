/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters.
 *
 * Each lcore owns one block per port and is its only writer: plain
 * increments, no atomics, no shared cache lines on the packet path
 * (seeds/003). Readers sum the blocks of every lcore; a 64-bit aligned load
 * is atomic on the platforms DPDK supports, so a sum is a consistent-enough
 * snapshot while traffic flows and exact when quiescent.
 *
 * Gauges (queue lengths held privately by the TX lcore) are published by
 * their single owner in the same blocks.
 */
#ifndef SHP_STATS_H
#define SHP_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <rte_common.h>

#include "shp_budget.h"
#include "shp_hist.h"
#include "shp_stall.h"

#define SHP_MAX_PORTS  32
/* --queues: shards of one port (issue 24) */
#define SHP_MAX_QUEUES 16
/* frames a stage is handed at once, at most (--burst) */
#define SHP_MAX_BURST 512
#define SHP_MAX_BANDS  16
#define SHP_MAX_LCORES 128

/*
 * Drop causes: every packet that is not sent is counted under one. The
 * core's are these; each stage kind adds its own (shp_kind.h), numbered
 * after them at start-up, so a counter block has room for SHP_DROP_SLOTS
 * and shp_drop_nb() are in use.
 */
enum shp_drop {
	SHP_DROP_NO_MBUF,      /* RX or a duplicate found the pool empty */
	SHP_DROP_FLUSHED,      /* freed at shutdown or reset while queued */
	SHP_DROP_OVERLOAD,     /* arrived while its egress chain was behind
				* schedule (--max-late): the emulator's own
				* limit, not the profile's */
	SHP_DROP_INBOX_FULL,   /* an RX lcore could not hand it to the TX
				* lcore of a queue that takes packets from
				* its owner only (shp_chain.h) */
	SHP_DROP_LINK_DOWN,    /* offered while its egress port's link was
				* down (`link down`, a schedule) */
	SHP_DROP_LATE,         /* would have left later than --late-drop
				* after its send time: the emulator's own */
	SHP_DROP_OVERSIZE,     /* a frame above its ports' --mtu, which the
				* port took anyway (a vdev checks none) */
	SHP_DROP_CORE
};

#define SHP_DROP_SLOTS  32
#define SHP_XSTAT_SLOTS 48

/* names of the drop slots in use (shp_drop_nb()), by slot */
extern const char *shp_drop_names[SHP_DROP_SLOTS];

struct shp_band_ctr {
	uint64_t enqueued;       /* accepted into the band */
	uint64_t enqueued_bytes;
	uint64_t dequeued;
	uint64_t dequeued_bytes;
	uint64_t full;           /* refused: ring full (not in enqueued) */
	uint64_t pushed_out;     /* removed from the head: tbf limit */
	uint64_t pushed_out_bytes;
	uint64_t flushed;        /* freed while queued: shutdown or reset */
};

struct shp_port_ctr {
	/* ingress side */
	uint64_t rx_packets;
	uint64_t rx_bytes;
	/* bursts RX came back short of --burst while the pool had less
	 * than a burst to give (its common store and the lcore's cache):
	 * arrivals the port could not take, which net_null and net_pcap
	 * do not count in rx_nombuf (events, not packets) */
	uint64_t rx_pool_empty;
	/* egress side */
	uint64_t egress_in;     /* offered to this port's chain (overload
				 * drops included): counted by whoever
				 * hands packets to it */
	uint64_t tx_packets;
	uint64_t tx_bytes;
	uint64_t drops[SHP_DROP_SLOTS];
	/* the stage kinds' own statistics (shp_kind.h): events such as
	 * netem's duplicates, and gauges their owner writes */
	uint64_t xstats[SHP_XSTAT_SLOTS];
	/* distributions of what was sent: only on the lcore that transmits
	 * on this port (shp_latency_alloc), NULL elsewhere; the sojourn
	 * histogram's exact min, max and sum give the stats file's
	 * sojourn_ns min/avg/max too */
	struct shp_latency *lat;
	/* gauges, written only by the egress owner */
	uint64_t tx_pending;
	struct shp_band_ctr band[SHP_MAX_BANDS];
} __rte_cache_aligned;

/*
 * Latency distributions of one egress port on one lcore (ns): lateness is
 * TX time minus the send time netem scheduled (packets netem scheduled
 * only), sojourn is TX time minus RX time (every packet sent). 32 KiB, so
 * allocated for the transmitting lcore of each port in use only.
 */
struct shp_latency {
	struct shp_hist lateness;
	struct shp_hist sojourn;
};

/* What the port itself dropped or refused (rte_eth_stats). */
struct shp_nic_ctr {
	uint64_t imissed;    /* RX ring full: the NIC dropped it */
	uint64_t ierrors;    /* bad frames */
	uint64_t rx_nombuf;  /* the PMD found the pool empty */
	uint64_t oerrors;    /* TX failed in the NIC */
};

/* A port's link as the control lcore last read it
 * (rte_eth_link_get_nowait): the offline tool has none (known false). */
struct shp_link {
	bool known;
	bool up;
	bool full_duplex;
	uint32_t speed_mbps;   /* 0 none, UINT32_MAX unknown (RTE_ETH_SPEED_NUM_*) */
	uint64_t changes;      /* up <-> down since the start */
	uint64_t changed_ns;   /* UTC time of the last change (0: none) */
};

/* Take a reading at UTC time now_ns; true when up/down changed (counted;
 * the first reading sets the state and is no change). */
bool shp_link_update(struct shp_link *l, bool up, bool full_duplex,
		     uint32_t speed_mbps, uint64_t now_ns);

struct shp_lcore_ctr {
	struct shp_port_ctr port[SHP_MAX_PORTS];
} __rte_cache_aligned;

/* Summed view of one port, as reported. */
struct shp_port_sum {
	struct shp_port_ctr c;
	uint64_t band_depth[SHP_MAX_BANDS];
	uint64_t band_dropped[SHP_MAX_BANDS]; /* full + pushed_out */
	uint64_t queued;       /* bands + stages + tx pending */
	uint64_t created;      /* packets the stages made (netem copies) */
	uint64_t egress_in;    /* packets that arrived for this egress port */
	uint64_t dropped;      /* all causes */
	unsigned int nb_bands; /* the bands summed: the port's queue's */
	/* filled by the app, not by shp_stats_sum (which zeroes them) */
	struct shp_nic_ctr nic;
	struct shp_link link;
	bool disabled;         /* `disable P`: a bare wire (the program's) */
	/* the NIC's extended statistics as a JSON object ({"name": n, ...}),
	 * the caller's; NULL: none (the offline tool) */
	char *nic_xstats_json;
	/* the port's lossless budget (known false: none, offline) */
	struct shp_budget budget;
	struct shp_hist_summary lateness, sojourn;
};

/* s += what the stages counted in c: drops, their own statistics (their
 * gauges too when `gauges`, a live block; not for a retired one, whose
 * levels are gone) and the bands' counters, bands [0, nb_bands). */
void shp_port_ctr_add_stages(struct shp_port_ctr *s,
			     const struct shp_port_ctr *c,
			     unsigned int nb_bands, bool gauges);

/* Packets the stages of c's port hold for a later send time (the
 * SHP_XS_DELAYED gauges of the kinds, shp_kind.h). */
uint64_t shp_stats_delayed(const struct shp_port_ctr *c);

/*
 * Counters a stage keeps outside the lcore blocks: a classful stage gives
 * each class a block of its own (one writer each), and those must count
 * in the port's sums and the stats file too. The stage registers itself
 * once, before the first reader (an RTE_INIT of the file that makes such
 * stages), so the core names no discipline and a second classful kind
 * is one more registration. At most SHP_MAX_STATS_SOURCES.
 */
struct shp_stats_source {
	/* Add into s what port's stages count in their own blocks (drops,
	 * statistics, bands, tx_pending for what they stage). Any control
	 * thread, relaxed loads; serialised against changes by the
	 * source. shard: what shard `shard` of the port counts (--queues),
	 * or SHP_ALL_SHARDS. */
	void (*add_port)(uint16_t port, int shard, struct shp_port_ctr *s);
	/* Optional: more members of port's object in the stats file, each
	 * written as ",\n    \"KEY\": VALUE" (nothing when it has none). */
	void (*json)(FILE *f, uint16_t port);
};

#define SHP_MAX_STATS_SOURCES 8

/* Register src (kept by pointer); 0, or -1 when the table is full. */
int shp_stats_source_register(const struct shp_stats_source *src);

#define SHP_ALL_SHARDS (-1)

/* Sum counter blocks[0..n) for port `port`, and what the registered
 * sources count for it. */
void shp_stats_sum(const struct shp_lcore_ctr *blocks, unsigned int n,
		   uint16_t port, unsigned int nb_bands,
		   struct shp_port_sum *out);
/* The same for one shard of the port: blocks are the shard's, and the
 * sources add what the shard's stages count (its classes'). */
void shp_stats_sum_shard(const struct shp_lcore_ctr *blocks, unsigned int n,
			 uint16_t port, int shard, unsigned int nb_bands,
			 struct shp_port_sum *out);

/* drops -= base_drops, xstats -= base_xstats but the gauges (SHP_XS_GAUGE,
 * kept as they are): a `clear stats` baseline, for a port or a class. */
void shp_ctr_sub_causes(uint64_t *drops, uint64_t *xstats,
			const uint64_t *base_drops,
			const uint64_t *base_xstats);

/* Subtract a baseline (for `clear stats`): gauges are kept as they are. */
void shp_stats_sub(struct shp_port_sum *s, const struct shp_port_sum *base,
		   unsigned int nb_bands);

/*
 * Record what TX sent, pkts[0..n): soj[i] is its sojourn; tts[i] the send
 * time netem gave it, 0 when netem did not schedule it (no lateness then).
 */
static inline void
shp_latency_record_tx(struct shp_latency *l, const uint64_t *soj,
		      const uint64_t *tts, uint16_t n, uint64_t now)
{
	uint64_t late[64];
	uint16_t i, k = 0;

	shp_hist_record_burst(&l->sojourn, soj, n);
	for (i = 0; i < n; i++) {
		/* a pipeline's TX clock may lag RX's: never wrap */
		late[k] = now > tts[i] ? now - tts[i] : 0;
		k += tts[i] != 0;
		if (k == RTE_DIM(late)) {
			shp_hist_record_burst(&l->lateness, late, k);
			k = 0;
		}
	}
	if (k > 0)
		shp_hist_record_burst(&l->lateness, late, k);
}

/* Empty distributions (min at UINT64_MAX). */
void shp_latency_init(struct shp_latency *l);

/* out = the sum over blocks[0..n) of port `port`'s distributions. */
void shp_stats_latency(const struct shp_lcore_ctr *blocks, unsigned int n,
		       uint16_t port, struct shp_latency *out);

/* Fill s->lateness and s->sojourn from l. */
void shp_latency_summarize(const struct shp_latency *l,
			   struct shp_port_sum *s);

/* One line: "NAME count N min N p50 N p90 N p99 N p99.9 N max N" (ns). */
void shp_hist_summary_print(FILE *f, const char *name,
			    const struct shp_hist_summary *h);

/*
 * One shard of a port spread over several (issue 24), as the stats
 * file's ports.N.shards lists them: {"queue", "lcore", "egress_in",
 * "duplicated", "tx_packets", "tx_bytes", "queued", "drops": {by
 * cause}, "latency": {as the port's}}, from the shard's own sum (s: its counter block alone, its
 * latency summarized in). lcore < 0: null (no lcore runs it: the
 * offline tool).
 */
void shp_stats_write_shard_json(FILE *f, const struct shp_port_sum *s,
				unsigned int queue, int lcore);

/* Write the --stats-file JSON for ports[0..nb) to f (each port's
 * "bands" as many as its sum has; nb_bands for a sum that says none);
 * elapsed_s is how long forwarding ran; lcores[0..nb_lcores) the
 * workers' stalls (an "lcores" object, left out with none: the offline
 * tool has no CPU to lose). */
void shp_stats_write_json(FILE *f, const struct shp_port_sum *sums,
			  const uint16_t *port_ids, unsigned int nb,
			  unsigned int nb_bands, double elapsed_s,
			  const struct shp_stall_sum *lcores,
			  unsigned int nb_lcores);

#endif
