/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An egress port's chain of stages, built from (kind, conf) per slot:
 *
 *     ingress  ->  queue  ->  rate  ->  delay  ->  TX      (shp_kind.h)
 *
 * The program and the offline tool build their chains here and nowhere
 * else. The chain owns the confs it was given: a change publishes a new
 * one and hands the old back, to be freed after the RCU grace period. A
 * private stage that is no kind (the classes in front of the queue, the
 * offline tool's tap above the rate stage) joins a chain through
 * shp_chain_insert and leaves through shp_chain_remove: nothing outside
 * this file writes a chain's fields.
 *
 * Who runs the queue's enqueue: a kind whose enqueue is multi-producer
 * (pfifo_fast: one rte_ring per band) is enqueued into by every RX lcore
 * directly. Any other (fq_codel) is enqueued into only by the port's TX
 * lcore: an RX lcore that owns the port too (run to completion) calls it
 * directly; one that does not (a pipeline) puts its packets in the chain's
 * inbox, an MP/SC rte_ring the TX lcore empties into the queue at the
 * start of each round (shp_chain_drain).
 *
 * The ingress stage (a policer) keeps one state for all the chain's
 * arrivals, so one lcore runs it: the RX lcore that alone feeds the port
 * (env.single_producer: it runs it before anything else sees the
 * packets, shp_chain_ingress), or, where several do, the TX lcore on
 * what it takes from the inbox; while it is on, those RX lcores hand
 * every packet over through the inbox, whatever the queue's kind (such
 * a chain has one, for a policer set at run time).
 */
#ifndef SHP_CHAIN_H
#define SHP_CHAIN_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "shp_kind.h"
#include "shp_qdisc.h"

struct shp_chain {
	/* by slot: the stage, its kind and the conf it runs (NULL: off) */
	struct shp_qdisc *stage[SHP_SLOT_MAX];
	const struct shp_kind *kind[SHP_SLOT_MAX];
	void *conf[SHP_SLOT_MAX];
	struct shp_qdisc *tap;     /* the caller's own stage, if any (put in
				    * by shp_chain_build, freed with c) */
	struct shp_qdisc *root;    /* what TX dequeues */
	struct shp_qdisc *queue;   /* what RX enqueues into */
	struct rte_ring *inbox;    /* see above; NULL for an MP queue */
	struct shp_stage_env env;
	/* the queue kind's bands (its kind's bands op; 0 and NULL: it has
	 * none): how many, and the band of each priority, into conf[] of
	 * the queue slot, which the RX pass maps with (shp_chain_priomap) */
	unsigned int bands;
	const uint8_t *priomap;
	/* shp_chain_change from the main lcore (`set`) and from the owner
	 * (a schedule) at once: each gets its own old conf back, and
	 * conf[] stays what the stages run */
	rte_spinlock_t lock;
	char name[32];
};

/* What a chain is made of: per slot a kind (NULL: the slot's default)
 * and its conf (NULL: off, or the queue kind's defaults). */
struct shp_chain_spec {
	const struct shp_kind *kind[SHP_SLOT_MAX];
	void *conf[SHP_SLOT_MAX];
};

/*
 * What the kinds that spec runs (a conf given) do not keep for a link of
 * several shards, "KIND: NOTE; KIND: NOTE" into buf (their shards_note):
 * returns the length, 0 when the link keeps the whole profile.
 */
size_t shp_chain_shards_note(const struct shp_chain_spec *spec, char *buf,
			     size_t len);

/* Free the confs of a spec that was not given to a chain. */
void shp_chain_spec_free(struct shp_chain_spec *spec);

/* A link's shard q > 0 parses its profile again (a chain owns its
 * confs): make each conf one change with shard 0's of the same kind
 * (shp_conf_twin: one id, so that what the shards share starts
 * once). Control plane, before the shard's chain is built. */
void shp_chain_spec_twin(struct shp_chain_spec *spec,
			 const struct shp_chain *first);

/*
 * A chain that only names what spec runs (each slot's kind, its default
 * filled in; the confs spec's, read only), for checks that ask a chain
 * (a schedule's) before one is built. Nothing to free.
 */
void shp_chain_spec_kinds(const struct shp_chain_spec *spec,
			  struct shp_chain *kinds);

/*
 * spec from one text per registered key (text[k] for key k; NULL: not
 * set), parsed by its kind; two keys of one slot are refused. what names
 * the chain in err ("port 0", "class web"). 0, or -1 and nothing held.
 */
int shp_chain_spec_parse(struct shp_chain_spec *spec, const char *const *text,
			 const struct shp_kind_env *env, const char *what,
			 char *err);

/*
 * Build port's chain. env is copied (the chain names its rings after
 * env->name, or after the port when NULL). tap, when not NULL, is a
 * private stage put right above the rate slot (the offline tool's
 * tbf-exit stamp).
 * Takes the confs of spec, also on failure. 0, or -1 with errno.
 */
int shp_chain_build(struct shp_chain *c, const struct shp_chain_spec *spec,
		    struct rte_mempool *pool, uint16_t port,
		    const struct shp_stage_env *env,
		    const struct shp_qdisc_ops *tap, const struct shp_kind_env *kenv);

/*
 * Put private stage q (ops of its own, no kind and no slot: the offline
 * tool's tap, the classes stage) into c's dequeue tree right above
 * below, a stage of c that q already has as its child (created so). The
 * stage that pulled from below pulls from q; q is the root if below was,
 * and what RX enqueues into if below was that: then q takes over the
 * byte limit below had from its parent (shp_qdisc_set_limit), and inbox
 * (NULL: none) becomes the chain's, for a q that is not multi-producer
 * on a chain without one (made beforehand: this cannot fail). Release
 * stores: the owner lcore may be running; the caller serialises changes
 * of c and frees q (c's stages it does not know).
 */
void shp_chain_insert(struct shp_chain *c, struct shp_qdisc *below,
		      struct shp_qdisc *q, struct rte_ring *inbox);

/* Take q, put in by shp_chain_insert, back out: whatever pulled from q
 * pulls from its child again. The owner lcore must not be running q
 * (the caller has reset it and waited). */
void shp_chain_remove(struct shp_chain *c, struct shp_qdisc *q);

/* Destroy the stages (what they hold is freed, counted as flushed) and
 * free the confs. */
void shp_chain_destroy(struct shp_chain *c, struct shp_ctx *ctx);

/* The stage of kind k in c, or NULL. */
struct shp_qdisc *shp_chain_find(const struct shp_chain *c,
				 const struct shp_kind *k);

/*
 * Publish conf (NULL: off) for kind k's slot. The slot must run k now (a
 * different kind there takes a restart: -1 with err saying so) and k must
 * be able to change (a kind without a change op: -1 with err). *old is
 * the conf to free with shp_kind_conf_free(k, *old) after a grace period.
 */
int shp_chain_change(struct shp_chain *c, const struct shp_kind *k,
		     void *conf, void **old, char *err);

/* Text of slot's stage as set (shp_kind_format). */
int shp_chain_format(const struct shp_chain *c, enum shp_slot slot,
		     char *buf, size_t len);

/* Whether port chain c holds packets for a later send time, what the
 * worker paces arrivals on (shp_admit): the port's own stages' gauges
 * (SHP_XS_DELAYED) in pc, the TX lcore's counters for the port, or what
 * the queue's own stages hold (its delayed op: a class's netem). TX
 * lcore only, once per round. */
static inline bool
shp_chain_holds_delayed(const struct shp_chain *c,
			const struct shp_port_ctr *pc)
{
	const struct shp_qdisc *q = c->queue;

	return shp_stats_delayed(pc) != 0 ||
	       (q != NULL && q->ops->delayed != NULL && q->ops->delayed(q) != 0);
}

/* The band of each priority 0..15 on c's queue (NULL: it has no bands):
 * the RX pass loads it once per burst. Valid until the next grace
 * period (a change frees the conf it points into after one). */
static inline const uint8_t *
shp_chain_priomap(const struct shp_chain *c)
{
	return __atomic_load_n(&c->priomap, __ATOMIC_ACQUIRE);
}

/* Packets the inbox holds now. */
static inline unsigned int
shp_chain_inbox_count(const struct shp_chain *c)
{
	return c->inbox != NULL ? rte_ring_count(c->inbox) : 0;
}

/*
 * Does nothing after c's queue hold packets back on the profile's behalf?
 * Only a gate in the rate slot (tbf, a trace) does: netem takes whatever
 * its queue gives, up to a limit of its own. On a class port this is the
 * port's part: the classes stage refines it per class (a class's own
 * gate holds its queue back too). Any lcore: reads the slot's conf only.
 */
static inline bool
shp_chain_unthrottled(const struct shp_chain *c)
{
	return __atomic_load_n(&c->conf[SHP_SLOT_RATE], __ATOMIC_RELAXED) ==
	       NULL;
}

/* Is the ingress slot on? Any lcore: reads the slot's conf only. */
static inline bool
shp_chain_ingress_on(const struct shp_chain *c)
{
	return __atomic_load_n(&c->conf[SHP_SLOT_INGRESS],
			       __ATOMIC_RELAXED) != NULL;
}

/* Does the caller run the ingress stage on what it hands the chain
 * (above)? owner: it is the port's TX lcore. */
static inline bool
shp_chain_ingress_here(const struct shp_chain *c, bool owner)
{
	return owner || c->env.single_producer;
}

/* shp_chain_ingress's work, out of line: the stage's verdicts applied. */
uint16_t shp_chain_ingress_run(struct shp_chain *c, struct rte_mbuf **pkts,
			       uint16_t n, uint8_t *prio, uint8_t *band,
			       uint64_t *gone_bytes, struct shp_ctx *ctx);

/*
 * The ingress stage's one lcore (shp_chain_ingress_here): the ingress
 * stage judges pkts[0..n), arrivals at ctx->now,
 * before the queue sees them. What it drops is freed and counted under
 * its cause (the caller has counted them into egress_in, as what it
 * offers the chain), their pkt_len added to *gone_bytes (NULL: not
 * kept); what it passes stays in pkts[0..returned), in order, with
 * prio[] and band[] (either may be NULL) moved alike. Off: n, and
 * nothing read.
 */
static inline uint16_t
shp_chain_ingress(struct shp_chain *c, struct rte_mbuf **pkts, uint16_t n,
		  uint8_t *prio, uint8_t *band, uint64_t *gone_bytes,
		  struct shp_ctx *ctx)
{
	if (likely(!shp_chain_ingress_on(c)) || n == 0)
		return n;
	return shp_chain_ingress_run(c, pkts, n, prio, band, gone_bytes, ctx);
}

/* Owner only: pkts[0..n) into the chain, through its ingress stage
 * (counted into egress_in by the caller). */
static inline void
shp_chain_enqueue(struct shp_chain *c, struct rte_mbuf **pkts, uint16_t n,
		  struct shp_ctx *ctx)
{
	n = shp_chain_ingress(c, pkts, n, NULL, NULL, NULL, ctx);
	if (n > 0)
		c->queue->ops->enqueue(c->queue, pkts, n, ctx);
}

/*
 * RX: hand pkts[0..n) to the chain. band/used/bytes are what the RX pass
 * gathered (shp_classify_burst_bands). owner: the caller is the port's TX
 * lcore. The caller has run shp_chain_ingress on them where
 * shp_chain_ingress_here. Takes every packet: accepted, or counted as
 * dropped.
 */
static inline void
shp_chain_enqueue_rx(struct shp_chain *c, struct rte_mbuf **pkts,
		     uint8_t *band, uint32_t used, uint64_t bytes, uint16_t n,
		     bool owner, struct shp_ctx *ctx)
{
	struct shp_qdisc *q = c->queue;
	unsigned int ok;

	ctx->ctr->egress_in += n;
	if (owner || (q->ops->mp_enqueue && (c->env.single_producer ||
					     !shp_chain_ingress_on(c)))) {
		if (q->ops->enqueue_rx != NULL)
			q->ops->enqueue_rx(q, pkts, band, used, bytes, n, ctx);
		else
			q->ops->enqueue(q, pkts, n, ctx);
		return;
	}
	ok = rte_ring_enqueue_burst(c->inbox, (void **)pkts, n, NULL);
	shp_drop_burst(ctx, SHP_DROP_INBOX_FULL, pkts + ok,
		       (uint16_t)(n - ok));
}

/* TX lcore: up to max of what RX lcores handed over joins the queue,
 * through the ingress stage if they did not run it (UINT_MAX: all of
 * it). Returns how many it took from the inbox. */
static inline unsigned int
shp_chain_drain(struct shp_chain *c, struct shp_ctx *ctx, unsigned int max)
{
	struct rte_mbuf *pkts[64];
	unsigned int n, done = 0;

	if (c->inbox == NULL)
		return 0;
	while (done < max &&
	       (n = rte_ring_dequeue_burst(c->inbox, (void **)pkts,
					   RTE_MIN(RTE_DIM(pkts), max - done),
					   NULL)) > 0) {
		if (c->env.single_producer)
			c->queue->ops->enqueue(c->queue, pkts, (uint16_t)n,
					       ctx);
		else
			shp_chain_enqueue(c, pkts, (uint16_t)n, ctx);
		done += n;
	}
	return done;
}

/* The ports' descriptor rings, the pool's per-lcore cache, and room for
 * what a delay line without a limit of its own holds (netem's default
 * limit is half the pool: shp_netem_default_limit), or one a run-time
 * `set` adds. */
#define SHP_NB_RXD 1024
#define SHP_NB_TXD 1024
#define SHP_POOL_CACHE 512   /* RTE_MEMPOOL_CACHE_MAX_SIZE */
#define SHP_DELAY_RESERVE 16384

/*
 * Packets the stages of spec may hold at once: the sum of each kind's
 * capacity (shp_kind.h) for its conf (an off slot: none; a queue without
 * a conf: its kind's defaults).
 */
uint64_t shp_chain_spec_capacity(const struct shp_chain_spec *spec,
				 const struct shp_kind_env *env);

/*
 * Mbufs a run needs (for sizing the pool) when the user did not say:
 * what the chains of the nb_ports ports hold (held: the sum of their
 * shp_chain_spec_capacity), and per port the NIC's descriptors, a few
 * bursts and the delay reserve (desc: its RX plus TX descriptors,
 * --rxd + --txd); per lcore (nb_lcores touch the pool) its
 * cache and two bursts. The program and the offline tool size alike, so
 * that netem's default limit (half the pool) is the same in both. At
 * most UINT32_MAX (the pool's creation says when that is too much).
 */
unsigned int shp_chain_pool_size(unsigned int nb_ports, uint64_t held,
				 unsigned int burst, unsigned int nb_lcores,
				 unsigned int desc);

/*
 * What the delay stages of each of nb ports may hold (cap[i]) in a pool
 * of pool mbufs, so that no port's profile takes the mbufs the others
 * receive into: the pool less what shp_chain_pool_size counts outside
 * the chains (descriptors, bursts, caches) is split between the ports in
 * proportion to need[i] (port i's capacity plus SHP_DELAY_RESERVE, as
 * the pool is sized) max-min fairly: each port gets its need or an even
 * split of what the smaller needs left, whichever is less, and a pool
 * beyond every need (--mbufs) gives the rest in proportion to need.
 * Port i's queue (queue[i] packets) keeps its part. A pool of exactly
 * shp_chain_pool_size gives each port its need (an explicit limit fits).
 * The caps sum to no more than the pool can give; each is at least 1.
 * At most SHP_MAX_PORTS ports.
 */
void shp_chain_pool_shares(unsigned int pool, unsigned int nb,
			   const uint64_t *need, const uint64_t *queue,
			   unsigned int burst, unsigned int nb_lcores,
			   unsigned int desc, uint32_t *cap);

#endif
