/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the shards of one link share (issue 24): one block a port, made
 * zeroed by whoever spreads the port over shards (the program's
 * app/shards.c, the offline tool) and named by every shard chain's env
 * (shp_stage_env's link; NULL for a port of one queue, whose stages keep
 * their own). Each member sits on lines of its own: a shard touches one
 * once a burst.
 */
#ifndef SHP_LINK_H
#define SHP_LINK_H

#include "link_serial.h"
#include "link_state.h"
#include "shp_qdisc.h"
#include "tbf_shared.h"

/*
 * netem's outage timeline (up and down periods) of the link: .val[0] the
 * instant the current period ends, .val[1] its conf's tag (bits 48..63,
 * the low bits of the netem conf's id: the shards' copies of one change
 * share it), whether the link is up (bit 47) and how many draws of the
 * link's outage stream the timeline has taken (bits 0..46). Moved with
 * one swap by the shard that first sees a packet past the period's end,
 * once a period; read by the others when their own copy of it expires.
 */
struct shp_link_outage {
	rte_int128_t st;
} __rte_cache_aligned;

/*
 * netem's accumulate windows of the link start with its first arrival
 * under a conf: .val[0] that conf's id, .val[1] the arrival's time. Set
 * with one swap by the first shard to see a packet under a newer conf,
 * read once a conf by the others.
 */
struct shp_link_origin {
	rte_int128_t v;
} __rte_cache_aligned;

/*
 * The link's one schedule of a trace's delivery opportunities (sch_trace.c):
 * .val[0] the start of the current period (ns), .val[1] the trace conf's
 * tag (bits 48..63, the low bits of its id: the shards' copies of one
 * change share it), whether the schedule has started (bit 47), the next
 * opportunity's index in the period (bits 16..39) and the bytes it has
 * left (bits 0..15). Moved with one swap per run of packets by the shard
 * that spends an opportunity; started by the first to meet a newer conf.
 */
struct shp_link_trace {
	rte_int128_t st;
} __rte_cache_aligned;

/*
 * netem's slots of the link: .st[0] the next slot's instant, .st[1] its
 * conf's tag (bits 48..63, as the outage's; 0: no slot drawn yet) and
 * how many draws of the port's slot stream the link took (bits 0..46),
 * which names the slot (every slot takes a draw at least). Moved with one
 * swap by the shard that draws a slot and sends in it, or that finds its
 * budget spent, once a slot; read once a release by the others.
 * With budgets (packets, bytes) .used says what the slot took: .used[0]
 * the name (.st[1]) of the slot it counts for, .used[1] its packets (bits
 * 32..63) and bytes (bits 0..31, saturated). Claimed with one swap per
 * run of packets a shard sends in the slot; the same line as .st, which
 * the shard has just read.
 */
struct shp_link_slot {
	rte_int128_t st;
	rte_int128_t used;
} __rte_cache_aligned;

/*
 * netem's positions and Markov chains of the link (issue 56): the next
 * position a shard's originals claim, with the conf's tag, and the
 * chains' state at a recent position (sch_netem.c, netem_link_claim,
 * gives the layout). Claimed with one swap per enqueue call of a shard
 * whose conf decides by position, and, when the conf has chains,
 * published with one more on the same line.
 */
struct shp_link_chain {
	rte_int128_t st;
} __rte_cache_aligned;

/*
 * netem's backlog on each of the link's shards (issue 56: its limit, given
 * or the default one, is the link's): netem[s].v[0] what shard s's limit
 * counts (its time queue, the frames it times on the link and those
 * misorder holds), .v[1] the mbufs of the pool it holds (the byte store's
 * frames hold none). Written by shard s only, at the end of an enqueue or
 * dequeue call and only when they changed; the others sum them once a
 * poll (sch_netem.c, netem_link_others). A class's netem has a block of
 * its own (its class's), never the port's.
 */
#define SHP_LINK_NETEM_LIMIT 0
#define SHP_LINK_NETEM_HELD  1

struct shp_link_shared {
	struct shp_tbf_shared rate;     /* tbf's bucket */
	struct shp_tbf_shared police;   /* the policer's */
	struct shp_link_serial serial;  /* netem rate's clock */
	struct shp_link_outage outage;  /* netem outage's timeline */
	struct shp_link_origin acc;     /* netem accumulate's windows */
	struct shp_link_trace trace;    /* a trace's opportunities */
	struct shp_link_slot slot;      /* netem slot's instants */
	struct shp_link_chain chain;    /* netem's positions and chains */
	struct shp_link_state queue;    /* the queue kind's (link_state.h) */
	struct shp_link_fig netem[SHP_MAX_QUEUES];   /* netem's backlog */
};

/* The queue kind's link state for q (at init), NULL when q's chain is
 * not one of a link's several shards: q keeps its own. */
static inline struct shp_link_state *
shp_link_queue(const struct shp_qdisc *q)
{
	return q->env != NULL && q->env->link != NULL &&
	       q->env->nb_shards > 1 ? &q->env->link->queue : NULL;
}

#endif
