/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stage ("queueing discipline") interface.
 *
 * In the spirit of Linux Qdisc_ops: every discipline is one file that fills
 * one ops table (struct shp_qdisc_ops below); its private state lives
 * behind `priv` and nobody else looks at it. The control-plane half of a
 * kind (its tc grammar, its counters' names, its slot) is shp_kind.h; the
 * chain that joins the stages of a port is shp_chain.h. Nothing outside a
 * kind's own files knows it by name: whatever app/, tools/ and the core
 * need of a stage goes through these ops and those two headers.
 *
 * A port's chain has one stage per slot (shp_kind.h), dequeued root first,
 * each pulling from its `child`:
 *
 *     ingress       queue                    rate            delay
 *     police   ->   pfifo_fast | fq_codel -> tbf | trace ->  netem  -> TX
 *     (filter)      [classes in front of the queue when classes are set]
 *
 * The ingress stage is no part of the dequeue tree: it judges arrivals
 * (the filter op) and holds nothing. The queue is what RX enqueues into;
 * the rate stage is a gate that lets its child's head go when its tokens
 * (or its trace) allow; the delay stage is the root the TX lcore dequeues.
 * The classes stage (shp_classes.h) is a private stage, no kind: it is
 * put in front of the port's queue with shp_chain_insert and hands each
 * class's packets to that class's own chain. The offline tool puts a
 * private pass-through stage (its tap) above the rate stage the same way.
 *
 * Who calls what. Each egress port's chain is owned by one TX lcore (the
 * "owner"): it is the only caller of dequeue, peek, the run ops, reset
 * while running, pass, idle, charge and filter (filter also on the RX
 * lcore that alone feeds the port, shp_chain.h), and the only writer of
 * the state behind them. enqueue is the owner's too, unless the ops say
 * mp_enqueue: then every RX lcore enqueues (the bands' MP rings). The
 * control plane (main lcore, or the owner for a schedule) calls init,
 * change, set_limit, fini; control threads (telemetry, the socket) call
 * only what reads: stats, dump, report. An op marked optional may be
 * NULL; the others every stage of a dequeue slot has (an ingress stage:
 * filter instead of enqueue/dequeue/peek).
 *
 * Stages work on vectors of packets (VPP style); a call takes a burst, and
 * nothing here adds work per packet that the stage does not do itself.
 * Stages never read the clock: `ctx->now` is given (TSC-derived when live,
 * virtual in tests and in the offline replay tool), so the same code runs
 * on a virtual clock.
 *
 * Configuration objects passed to init/change are immutable once published:
 * change() only swaps a pointer that the data path loads once per call, so a
 * control thread may call it while the owner lcore runs, provided the old
 * object is freed only after an RCU grace period (the caller's job).
 */
#ifndef SHP_QDISC_H
#define SHP_QDISC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "drop_capture.h"
#include "shp_conf_hdr.h"
#include "shp_stats.h"

struct shp_qdisc;
struct shp_link_shared;

/* What a stage call needs besides its packets. */
struct shp_ctx {
	uint64_t now;                /* ns on the shaper clock */
	struct shp_port_ctr *ctr;    /* the calling lcore's block for this port */
	/*
	 * Out, dequeue only: the pkt_len sum of the packets returned, when
	 * the stage knows it without another pass; UINT64_MAX when not. The
	 * caller sets UINT64_MAX before the call; a stage returning exactly
	 * what its child's dequeue returned leaves it, any other stage sets
	 * it (to the sum, or back to UINT64_MAX).
	 */
	uint64_t bytes;
	/*
	 * Out, dequeue only: set (never read or cleared) by a stage that
	 * stopped because the vector was full, with more work it could do
	 * at ctx->now (due packets to release, or a child that filled its
	 * share). A caller that wants it clears it before the call; a stage
	 * that leaves it clear is judged by whether it filled the vector.
	 */
	bool more;
	/*
	 * In, enqueue only: nothing after the queue holds packets back on
	 * the profile's behalf (shp_chain_unthrottled): a queue full now is
	 * full because the lcore fell behind releasing, and what its limit
	 * refuses is the emulator's overload, not the profile's drop
	 * (shp_stage_drop_full). The live program sets it per burst
	 * (shp_chain_unthrottled); false in a zeroed ctx, as offline, where
	 * the chain is drained at every arrival and nothing lags.
	 */
	bool unthrottled;
	/*
	 * The drop capture (drop_capture.h): the calling lcore's producer,
	 * NULL when no capture runs (the drop funnel below tests it once a
	 * dropped burst), and what the frames it drops are tagged with (a
	 * classes stage names its class in its members' copies).
	 */
	struct shp_dropcap *cap;
	struct shp_captag tag;
};

/* Generic numbers every stage reports (ops->stats). */
struct shp_qstats {
	uint32_t qlen;       /* packets held by this stage alone */
	uint64_t backlog;    /* bytes held by this stage alone */
};

/*
 * A discipline's data-path half. Returned counts are packets; every
 * packet a call takes is afterwards accepted, handed on, or freed and
 * counted under a drop cause (the conservation the stats file checks).
 */
struct shp_qdisc_ops {
	/* Its name in logs and rings ("tbf"); the kind's name is tc's word
	 * (shp_kind.h). Required. */
	const char *id;
	/* Bytes of private state allocated zeroed with the stage, behind
	 * q->priv, on the stage's socket. */
	size_t priv_size;
	/* true: enqueue may be called by several RX lcores at once (the
	 * bands' rings are multi-producer); false: only by the owner, and
	 * an RX lcore that does not own the port hands its packets over
	 * through the chain's inbox (shp_chain.h). */
	bool mp_enqueue;
	/* true: the stage sends what it holds in the order it arrived (of
	 * the band it serves), as a FIFO: a gate in front that shares a
	 * link's rate with other shards may then serve the link's oldest
	 * frame first (sch_tbf.c). False for a scheduler of its own
	 * (fq_codel's flows, dualpi2's L queue). */
	bool arrival_order;
	/* Set up priv for conf (the kind's own config type; NULL means
	 * off, or the queue kind's defaults), q->child and q->env already
	 * set. 0, or -1 with errno. Optional (NULL: nothing to set up).
	 * Control plane, before any packet. */
	int (*init)(struct shp_qdisc *q, const void *conf);
	/* Publish a new immutable conf (NULL: off) and return the previous
	 * one, which the caller frees after a grace period. The data path
	 * notices it at its next call (by the conf's id: shp_conf_new_id).
	 * Optional (NULL: the kind cannot change while running,
	 * shp_chain_change refuses). Control plane, or the owner for a
	 * schedule; serialised by the chain's lock. */
	const void *(*change)(struct shp_qdisc *q, const void *conf);
	/* Take pkts[0..n): each accepted or freed and counted as dropped.
	 * Returns how many were accepted. Required but for the ingress
	 * slot. The owner, or any RX lcore with mp_enqueue. A gate's is
	 * its child's (shp_gate_enqueue). */
	uint16_t (*enqueue)(struct shp_qdisc *q, struct rte_mbuf **pkts,
			    uint16_t n, struct shp_ctx *ctx);
	/* Optional: enqueue with the RX pass's classification already done
	 * (shp_classify_bands_map, with the chain's shp_chain_priomap, the
	 * queue's own map): band[i] of pkts[i] (clamped in place
	 * past the last band), the set of bands used, the pkt_len sum.
	 * Same contract and callers as enqueue; the chain prefers it on
	 * the RX path (shp_chain_enqueue_rx). */
	uint16_t (*enqueue_rx)(struct shp_qdisc *q, struct rte_mbuf **pkts,
			       uint8_t *band, uint32_t used, uint64_t bytes,
			       uint16_t n, struct shp_ctx *ctx);
	/* For a stage of the ingress slot (police), instead of enqueue,
	 * dequeue and peek, which it has not: judge pkts[0..n), in order,
	 * as arrivals at ctx->now. verdict[i] 0 lets pkts[i] on to the
	 * queue; c + 1 drops it, counted as the kind's drop cause c. Frees
	 * and counts nothing (shp_chain_ingress does). The one lcore that
	 * runs the ingress stage (shp_chain_ingress_here). */
	void (*filter)(struct shp_qdisc *q, struct rte_mbuf *const *pkts,
		       uint16_t n, uint8_t *verdict, struct shp_ctx *ctx);
	/* Up to n packets due at ctx->now into pkts; never waits to fill a
	 * burst. Sets ctx->bytes and ctx->more as struct shp_ctx says.
	 * Required but for the ingress slot. Owner only; the TX lcore
	 * calls it on the root, a stage on its child. */
	uint16_t (*dequeue)(struct shp_qdisc *q, struct rte_mbuf **pkts,
			    uint16_t n, struct shp_ctx *ctx);
	/* The packet dequeue would return next, or NULL; it stays queued,
	 * and the next dequeue returns it even if a higher band filled
	 * meanwhile (Linux's qdisc_peek_dequeued). Required but for the
	 * ingress slot (a gate in front needs it). Owner only. */
	struct rte_mbuf *(*peek)(struct shp_qdisc *q, struct shp_ctx *ctx);
	/* Optional, for a gate in front (tbf, trace): the packets dequeue
	 * would return next, left queued (*run points into the stage; 0 if
	 * none), then take_run removes the first k of them (no other call
	 * in between) and returns their bytes. One call per run instead of
	 * a peek and a one-packet dequeue per packet. Without them a run is
	 * the one packet peek returns (shp_qdisc_peek_run). Owner only. */
	uint16_t (*peek_run)(struct shp_qdisc *q, struct rte_mbuf *const **run,
			     struct shp_ctx *ctx);
	uint64_t (*take_run)(struct shp_qdisc *q, uint16_t k,
			     struct rte_mbuf **out, struct shp_ctx *ctx);
	/* Earliest clock value >= ctx->now at which dequeue could return a
	 * packet, given what the stage and its children hold now; UINT64_MAX
	 * when they hold nothing. Optional (NULL: ctx->now if qlen > 0,
	 * shp_qdisc_next_time). Changes no stage state: a peek may fill the
	 * bands' stash and run the byte-limit pushout due at ctx->now, as a
	 * dequeue at ctx->now would first. For clocks that jump from event
	 * to event (the offline tool, tests); the live TX loop polls and
	 * does not use it. Owner only. */
	uint64_t (*next_time)(struct shp_qdisc *q, struct shp_ctx *ctx);
	/* True when the stage holds nothing and, as configured now, would
	 * hand a packet straight on: a caller that is the stage's only
	 * producer and its consumer may then skip it (Linux's
	 * TCQ_F_CAN_BYPASS for an empty pfifo_fast). Optional (NULL: never
	 * idle). Owner only, per burst. */
	bool (*idle)(const struct shp_qdisc *q);
	/* Optional, for a gate (tbf) that is not idle: every other stage of
	 * the chain is idle, so q's child holds nothing. How many of
	 * pkts[0..n), from the first, an enqueue then dequeue at ctx->now
	 * would let go at once; q's state is left as that dequeue leaves it
	 * (tokens charged). It reads the packets' lengths only: their
	 * metadata is not written yet (see shp_qdisc_bypass). Owner only,
	 * per burst. */
	uint16_t (*pass)(struct shp_qdisc *q, struct rte_mbuf **pkts,
			 uint16_t n, struct shp_ctx *ctx);
	/* Optional, for a stage that charges what passes it (tbf): charge
	 * len bytes that reached the chain above q without passing it (a
	 * netem duplicate, which Linux re-enqueues at the root) as if they
	 * had, at now; the packets behind then wait for them. Called on
	 * the first stage below the caller that has it
	 * (shp_qdisc_charge). Owner only; per copy made, not per packet. */
	void (*charge)(struct shp_qdisc *q, uint32_t len, uint64_t now);
	/* Optional: a parent's byte limit for what this stage holds (tbf's
	 * limit, as Linux's tbf sets its child fifo's); 0 lifts it. A stage
	 * with a limit of its own (fq_codel) leaves it NULL. Called through
	 * shp_qdisc_set_limit, which keeps the value in q->limit for a
	 * stage that later takes q's place. Control plane (the parent's
	 * init and change). */
	void (*set_limit)(struct shp_qdisc *q, uint64_t bytes);
	/* Optional, for a stage whose own stages count in blocks of their
	 * own (a classful stage: its classes' netems): packets they hold
	 * for a later send time, as of its last dequeue; the chain's own
	 * are the SHP_XS_DELAYED gauges (shp_chain_holds_delayed). Owner
	 * only, once per round. */
	uint64_t (*delayed)(const struct shp_qdisc *q);
	/* Optional, for a stage made lean (shp_stage_env's lean) that left
	 * out at init what it can run without (netem's time calendar): the
	 * heap bytes it would take now to have it; 0 when it wants nothing
	 * (it has it or was offered it, or holds fewer than min_qlen
	 * packets). Control thread: the owner's fields read as a hint. */
	size_t (*grow_size)(const struct shp_qdisc *q, uint32_t min_qlen);
	/* With grow_size: make what it counted and offer it to the owner,
	 * which takes it at its next call (no allocation on the data
	 * path); 0, or -1 when the heap has no room. Control thread. */
	int (*grow)(struct shp_qdisc *q);
	/* Optional, for a stage whose model of the link says when its
	 * carrier is lost (netem's `outage ON OFF carrier`): 1 down, 0 up,
	 * -1 the conf asks for no carrier. As of the data path's last look
	 * (the model is walked as frames meet it). Any control thread:
	 * relaxed reads of what the owner writes. */
	int (*carrier)(const struct shp_qdisc *q);
	/* Optional: what the stage alone can tell of its state, for
	 * `show` (the bands: "non-empty bitmap 0x5"); snprintf's return
	 * convention. Any control thread: relaxed reads of what the owner
	 * writes, no lock. */
	int (*report)(const struct shp_qdisc *q, char *buf, size_t len);
	/* Free everything held here (not in the child), counted as
	 * flushed in ctx's block. Optional (NULL: it holds nothing, as a
	 * gate). The owner, or the main lcore once the owner stopped
	 * (shutdown, shp_qdisc_reset_all). */
	void (*reset)(struct shp_qdisc *q, struct shp_ctx *ctx);
	/* Packets and bytes held by this stage alone (not its child).
	 * Required but for the ingress slot. Any thread: relaxed reads. */
	void (*stats)(const struct shp_qdisc *q, struct shp_qstats *st);
	/* Print the configuration it runs now in its tc syntax, without
	 * the kind's name (the running-config snapshot, the offline
	 * tool's profile line). Required of a kind's stage. Any thread:
	 * one load of the conf pointer. */
	void (*dump)(const struct shp_qdisc *q, FILE *f);
	/* Optional: free priv's own allocations (what it holds was reset
	 * first). Control plane, once no lcore runs the stage
	 * (shp_qdisc_destroy). */
	void (*fini)(struct shp_qdisc *q);
};

/* Where a stage runs: what init may need besides its conf. The chain
 * keeps one per chain (shp_chain.env) for all its stages. */
struct shp_stage_env {
	const char *name;           /* unique per port: ring names */
	int socket;                 /* NUMA socket for its memory */
	bool single_producer;       /* one RX lcore feeds this port */
	unsigned int ring_size;     /* --ring-size */
	/* every lcore's counter blocks, for stages that sum producer-side
	 * counters (the bands' byte limit) */
	const struct shp_lcore_ctr *ctr_blocks;
	unsigned int nb_ctr_blocks;
	/* a link's shards: the blocks of all of them (ctr_blocks is one
	 * shard's), so that a byte limit bounds the link's backlog, not
	 * each shard's (issue 56; NULL: the stage's own blocks are the
	 * link's) */
	const struct shp_lcore_ctr *link_ctr_blocks;
	unsigned int nb_link_ctr_blocks;
	/* a class's stages, of which there may be thousands: rings from
	 * the heap, without a memzone each (shp_ring_new: EAL has 2560),
	 * and a netem has no time calendar (megabytes) until the control
	 * side gives it one (the grow op) */
	bool lean;
	/* the pool's share of the port (shp_chain_pool_shares): the delay
	 * stages of its chain and of its classes together hold at most
	 * hold_cap packets, beyond it they drop as pool_share, so that no
	 * port's or class's profile takes the mbufs other ports receive
	 * into; *held is what they hold, written by the port's TX lcore
	 * only (NULL: no bound) */
	uint32_t *held;
	uint32_t hold_cap;
	/* a link's shards (nb_shards > 1): the share is the port's, not a
	 * shard's: every shard may hold all of hold_cap, and checks it
	 * against what all of them hold. Shard s's held is
	 * link_held[s * held_stride] (held is this shard's own), read
	 * once a poll by the others (NULL: held is the port's all) */
	const uint32_t *link_held;
	uint32_t held_stride;
	/* a link spread over shards (issue 24): which one this chain is
	 * (0 for an unsharded port: its stages behave as they always did),
	 * and what the link's shards share (shp_link.h: tbf's and the
	 * policer's buckets, netem's rate clock, outage timeline and
	 * accumulate windows), which the stages use instead of their own
	 * (NULL: each its own) */
	uint16_t shard;
	uint16_t nb_shards;         /* the link's (1: not spread) */
	struct shp_link_shared *link;
	/* what may reach the chain's delay stage, in bytes a second (0:
	 * not known): the port's link speed (the caller's; 0 offline),
	 * and the rate stage's rate (its kind's rate op), kept by the
	 * chain as that stage changes and read by the delay stage once a
	 * burst (relaxed): netem sizes its byte store by the tightest */
	uint64_t line_rate;
	uint64_t gate_rate;
};

/* A ring of count slots (rte_ring_create's flags): named (a memzone, as
 * rte_ring_create) or, when anon, from the heap on socket. NULL with
 * rte_errno. shp_ring_free frees either. */
struct rte_ring *shp_ring_new(const char *name, unsigned int count,
			      int socket, unsigned int flags, bool anon);
void shp_ring_free(struct rte_ring *r);

/* A stage: what every discipline shares; its own state is behind priv.
 * Made by shp_qdisc_create (the chain builder, shp_chain.h), read by
 * everyone, written by the control plane only (child by
 * shp_chain_insert/remove, with release stores). */
struct shp_qdisc {
	const struct shp_qdisc_ops *ops;   /* its discipline */
	/* what it pulls from on dequeue (NULL: a leaf, or the ingress
	 * stage); RX does not go through it (shp_chain.queue) */
	struct shp_qdisc *child;
	struct rte_mempool *pool;   /* for stages that create packets */
	uint16_t port;              /* egress port id, for stream seeding */
	/* counter slots of the stage's kind (shp_kind.h): its drop cause i
	 * is drops[drop_slot[i]], its statistic i xstats[xstat_slot[i]] */
	const uint8_t *drop_slot;
	const uint8_t *xstat_slot;
	const struct shp_stage_env *env;  /* NULL when created without */
	/* the byte limit its parent last gave it (shp_qdisc_set_limit; 0:
	 * none), kept even when it has no set_limit op, so that a stage
	 * put in its place later takes it over (shp_chain_insert) */
	uint64_t limit;
	void *priv;                 /* ops->priv_size bytes, zeroed */
};


/*
 * A number no conf had before (from 1). Stages tell a newly published
 * conf from the one their state belongs to by this, not by its address:
 * a freed conf's address can come back for the next one.
 */
uint64_t shp_conf_new_id(void);

/*
 * copy, parsed from the same text as orig, is the same change for another
 * shard of the link: it takes orig's id, so that what the shards share (a
 * bucket, a loss process) takes the change once. Either NULL (off): no
 * change to share, nothing done. Control plane.
 */
void shp_conf_twin(void *copy, const void *orig);

/* Allocate (on socket) and init a stage; NULL with errno/rte_errno on error. */
struct shp_qdisc *shp_qdisc_create(const struct shp_qdisc_ops *ops,
				   struct shp_qdisc *child,
				   struct rte_mempool *pool, uint16_t port,
				   int socket, const void *conf);
/* The same with an environment (kept by pointer: it must outlive q). */
struct shp_qdisc *shp_qdisc_create_env(const struct shp_qdisc_ops *ops,
				       struct shp_qdisc *child,
				       struct rte_mempool *pool, uint16_t port,
				       const struct shp_stage_env *env,
				       const void *conf);
/* fini, then free q (NULL: nothing). What q holds must have been reset
 * first (shp_qdisc_reset_all); control plane, no lcore running q. */
void shp_qdisc_destroy(struct shp_qdisc *q);

/*
 * Ops of a gate (tbf, trace): a stage that holds nothing itself and only
 * decides when its child's head may leave. Enqueue and peek are the
 * child's; its queue statistics are empty.
 */
uint16_t shp_gate_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts,
			  uint16_t n, struct shp_ctx *ctx);
struct rte_mbuf *shp_gate_peek(struct shp_qdisc *q, struct shp_ctx *ctx);
void shp_gate_stats(const struct shp_qdisc *q, struct shp_qstats *st);

/* A parent's byte limit onto q: its set_limit op (if it has one) and
 * q->limit. Control plane. */
static inline void
shp_qdisc_set_limit(struct shp_qdisc *q, uint64_t bytes)
{
	q->limit = bytes;
	if (q->ops->set_limit != NULL)
		q->ops->set_limit(q, bytes);
}

/* Packets held by q and all its children. */
uint32_t shp_qdisc_qlen_total(const struct shp_qdisc *q);

/* True when q and all its children are idle (see the idle op). */
static inline bool
shp_qdisc_can_bypass(const struct shp_qdisc *q)
{
	for (; q != NULL; q = q->child)
		if (q->ops->idle == NULL || !q->ops->idle(q))
			return false;
	return true;
}

/*
 * Bypass with a gate: when every stage of q's chain is idle but at most
 * one gate with a pass op, how many of pkts[0..n) go straight through at
 * ctx->now (all of them with no gate; the gate charges what it passes).
 * 0 when some stage holds packets or would change them. *gated tells
 * whether a gate took the packets' cost (what the port then refuses must
 * not be charged again). Owner lcore only.
 *
 * The packets' metadata is neither read nor written (the RX path writes
 * it only for what does not leave at once): what passes has arrived and
 * leaves at ctx->now, and through a gate that is its send time too
 * (time_to_send, as shp_meta_released would stamp it); the caller writes
 * it for any packet it keeps.
 */
static inline uint16_t
shp_qdisc_bypass(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
		 struct shp_ctx *ctx, bool *gated)
{
	struct shp_qdisc *gate = NULL;

	*gated = false;
	for (; q != NULL; q = q->child) {
		if (q->ops->idle != NULL && q->ops->idle(q))
			continue;
		if (gate != NULL || q->ops->pass == NULL)
			return 0;
		gate = q;
	}
	if (gate == NULL)
		return n;
	*gated = true;
	return gate->ops->pass(gate, pkts, n, ctx);
}

/* Charge len bytes to the first stage of q's chain, q included, that
 * charges (the charge op: any rate kind that has it), at now; none may,
 * and a pass-through stage between (the offline tool's tap) is skipped. */
static inline void
shp_qdisc_charge(struct shp_qdisc *q, uint32_t len, uint64_t now)
{
	for (; q != NULL; q = q->child)
		if (q->ops->charge != NULL) {
			q->ops->charge(q, len, now);
			return;
		}
}

/* q's next_time op, or its fallback: ctx->now when q or a child holds a
 * packet, UINT64_MAX when none does. */
uint64_t shp_qdisc_next_time(struct shp_qdisc *q, struct shp_ctx *ctx);

/* Reset q and all its children. */
void shp_qdisc_reset_all(struct shp_qdisc *q, struct shp_ctx *ctx);

/* q's dequeue and enqueue ops (callers as the ops say). */
static inline uint16_t
shp_qdisc_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
		  struct shp_ctx *ctx)
{
	return q->ops->dequeue(q, pkts, n, ctx);
}

static inline uint16_t
shp_qdisc_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
		  struct shp_ctx *ctx)
{
	return q->ops->enqueue(q, pkts, n, ctx);
}

/* For a gate in front of q (tbf, trace): q's next run (peek_run), or the
 * packet its peek returns as a run of one (*one holds it). */
static inline uint16_t
shp_qdisc_peek_run(struct shp_qdisc *q, struct rte_mbuf **one,
		   struct rte_mbuf *const **run, struct shp_ctx *ctx)
{
	if (q->ops->peek_run != NULL)
		return q->ops->peek_run(q, run, ctx);
	*one = q->ops->peek(q, ctx);
	*run = one;
	return *one != NULL;
}

/* Take the first k of that run into out; their pkt_len sum. (Without
 * take_run a dequeue: after a peek it returns the peeked packet.) */
static inline uint64_t
shp_qdisc_take_run(struct shp_qdisc *q, uint16_t k, struct rte_mbuf **out,
		   struct shp_ctx *ctx)
{
	uint64_t bytes = 0;
	uint16_t i;

	if (q->ops->take_run != NULL)
		return q->ops->take_run(q, k, out, ctx);
	k = q->ops->dequeue(q, out, k, ctx);
	for (i = 0; i < k; i++)
		bytes += rte_pktmbuf_pkt_len(out[i]);
	return bytes;
}

/* Hand what is dropped to the capture, when one runs (drop_capture.h):
 * pkts[0..n) under drop slot `slot`, band `band` (SHP_CAP_NO_BAND but
 * for a bands stage's own). Before they are freed. */
static inline void
shp_drop_capture(const struct shp_ctx *ctx, unsigned int slot,
		 unsigned int band,
		 struct rte_mbuf *const *pkts, uint16_t n)
{
	if (unlikely(ctx->cap != NULL))
		shp_dropcap_put(ctx->cap, &ctx->tag, ctx->now, slot, band,
				pkts, n);
}

/* Free a vector of dropped packets, counting them under `cause`. */
static inline void
shp_drop_burst(struct shp_ctx *ctx, enum shp_drop cause,
	       struct rte_mbuf **pkts, uint16_t n)
{
	if (n == 0)
		return;
	ctx->ctr->drops[cause] += n;
	shp_drop_capture(ctx, cause, SHP_CAP_NO_BAND, pkts, n);
	rte_pktmbuf_free_bulk(pkts, n);
}

/* One packet dropped under a core cause. */
static inline void
shp_drop(struct shp_ctx *ctx, enum shp_drop cause, struct rte_mbuf *m)
{
	ctx->ctr->drops[cause]++;
	shp_drop_capture(ctx, cause, SHP_CAP_NO_BAND, &m, 1);
	rte_pktmbuf_free(m);
}

/* The same for a cause of q's own kind (its index in the kind's list). */
static inline void
shp_stage_drop_burst(const struct shp_qdisc *q, struct shp_ctx *ctx,
		     unsigned int cause, struct rte_mbuf **pkts, uint16_t n)
{
	if (n == 0)
		return;
	ctx->ctr->drops[q->drop_slot[cause]] += n;
	shp_drop_capture(ctx, q->drop_slot[cause], SHP_CAP_NO_BAND, pkts, n);
	rte_pktmbuf_free_bulk(pkts, n);
}

/* A queue's limit refused pkts[0..n) (of band `band`, or
 * SHP_CAP_NO_BAND): its own cause (drop slot `slot`), or `overload` when
 * nothing but the lcore's lag filled it (ctx->unthrottled). */
static inline void
shp_drop_full_band(struct shp_ctx *ctx, uint16_t slot, unsigned int band,
		   struct rte_mbuf **pkts, uint16_t n)
{
	unsigned int s;

	if (n == 0)
		return;
	s = ctx->unthrottled ? SHP_DROP_OVERLOAD : slot;
	ctx->ctr->drops[s] += n;
	shp_drop_capture(ctx, s, band, pkts, n);
	rte_pktmbuf_free_bulk(pkts, n);
}

static inline void
shp_drop_full(struct shp_ctx *ctx, uint16_t slot, struct rte_mbuf **pkts,
	      uint16_t n)
{
	shp_drop_full_band(ctx, slot, SHP_CAP_NO_BAND, pkts, n);
}

/* shp_drop_full for q's own cause `cause`. */
static inline void
shp_stage_drop_full(const struct shp_qdisc *q, struct shp_ctx *ctx,
		    unsigned int cause, struct rte_mbuf **pkts, uint16_t n)
{
	shp_drop_full(ctx, q->drop_slot[cause], pkts, n);
}

/* One packet dropped under q's own cause `cause`. */
static inline void
shp_stage_drop(const struct shp_qdisc *q, struct shp_ctx *ctx,
	       unsigned int cause, struct rte_mbuf *m)
{
	ctx->ctr->drops[q->drop_slot[cause]]++;
	shp_drop_capture(ctx, q->drop_slot[cause], SHP_CAP_NO_BAND, &m, 1);
	rte_pktmbuf_free(m);
}

/* q's own statistic i (its index in the kind's xstats), to add to or to
 * set (a gauge). */
static inline uint64_t *
shp_stage_xstat(const struct shp_qdisc *q, struct shp_ctx *ctx,
		unsigned int i)
{
	return &ctx->ctr->xstats[q->xstat_slot[i]];
}

/* Count a drop of q's kind in the counter block directly (for stages
 * whose drops happen outside a ctx). */
static inline uint64_t *
shp_stage_drop_ctr(const struct shp_qdisc *q, struct shp_port_ctr *ctr,
		   unsigned int cause)
{
	return &ctr->drops[q->drop_slot[cause]];
}

#endif
