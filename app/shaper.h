/* SPDX-License-Identifier: BSD-3-Clause */
/* dpdk-shaper: the program's state. The logic lives in lib/. */
#ifndef SHAPER_H
#define SHAPER_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_mempool.h>

#include "config.h"
#include "shp_budget.h"
#include "shp_chain.h"
#include "shp_clock.h"
#include "shp_egress.h"
#include "shp_qdisc.h"
#include "shp_stall.h"
#include "shp_cpu_lost.h"
#include "shp_stats.h"

struct rte_rcu_qsbr;
struct shp_pace;
extern struct rte_rcu_qsbr *shaper_rcu;   /* shaper_rcu.c */

#define MAX_RXQ_PER_LCORE 64
/* shards a worker may transmit: every port's, at most */
#define MAX_EGRESS_PER_LCORE (SHP_MAX_PORTS * SHP_MAX_QUEUES)
/* The counter blocks: one per lcore, then two per shard q of the sharded
 * ports (--queues N > 1): what its TX lcore counts, and what the RX lcore
 * that polls RX queue q counts (a pipeline; run to completion, one lcore
 * does both, in the first). Each has one writer, so that a shard's
 * figures are its own however the queues are dealt to lcores. */
#define SHAPER_SHARD_BLOCKS 2
#define SHAPER_CTR_BLOCKS (RTE_MAX_LCORE + SHAPER_SHARD_BLOCKS * SHP_MAX_QUEUES)
/* Shard q's blocks in blocks[] (SHAPER_CTR_BLOCKS): its TX lcore's, then
 * its RX lcore's. */
#define SHAPER_SHARD_BLOCK(blocks, q) \
	(&(blocks)[RTE_MAX_LCORE + SHAPER_SHARD_BLOCKS * (q)])

struct egress;
struct shp_link_shared;

struct rxq_ref {
	uint16_t port;
	uint16_t queue;
	uint16_t egress;
	uint16_t shard;       /* the egress port's shard it feeds */
	uint32_t empty_polls;
	bool tx_here;         /* this lcore also owns the egress port */
	struct rte_mempool *pool;   /* the port's, which RX fills from */
	/* the smaller --mtu of the two ports (0: none): what is longer is
	 * dropped as `oversize` */
	uint32_t mtu;
	struct shp_pace *pace; /* --pace: what was read and is not due yet */
	struct egress *eg;    /* that shard */
	/* the block its counts go to: the lcore's, or with --queues N > 1
	 * the shard's (SHAPER_CTR_BLOCKS) */
	struct shp_lcore_ctr *ctr;
};

/* One egress port, or one shard of it (--queues N > 1: shard q sends on
 * TX queue q), as its TX lcore sees it. */
struct egress {
	uint16_t port;
	uint16_t txq;         /* its shard, too */
	struct shp_chain *chain;
	struct shp_lcore_ctr *ctr;   /* the owner's block for it */
	struct shp_pending pend;   /* what the port refused: goes first */
	unsigned int owner;   /* lcore id */
	/* Written by the owner only when it changes, read by RX lcores once
	 * per burst: the chain's oldest due packet is later than
	 * --max-late, so what arrives for it now is dropped (`overload`). */
	volatile bool behind;
	/* Written by the owner on a change: netem holds packets for later.
	 * Only then are arrivals paced (shp_admit): a chain that releases
	 * what it takes at once keeps admission and release in step by
	 * itself. */
	volatile bool holds;
	/* what its delay stages (its own and its classes') may hold
	 * together: its share of the pool (shp_stage_env's hold_cap) */
	uint32_t hold_cap;
	/* `disable` (shaper_wire.h): the state, written by the owner (the
	 * main lcore while the workers are stopped) and read by RX lcores
	 * once per burst; the main lcore's word that no RX lcore still
	 * hands over into the ring; the ring (NULL until the port is
	 * first disabled) */
	volatile uint8_t wire;
	volatile bool wire_sealed;
	struct rte_ring *wire_ring;
};

struct worker {
	unsigned int lcore;
	bool rx, tx;
	uint16_t nb_rxq;
	uint16_t nb_egress;
	struct rxq_ref rxq[MAX_RXQ_PER_LCORE];
	/* port ids this lcore transmits, and each one's shard */
	uint16_t egress[MAX_EGRESS_PER_LCORE];
	struct egress *eg[MAX_EGRESS_PER_LCORE];
	bool rx_done;                     /* replay: every input exhausted */
	struct shp_admit admit;           /* pacing of arrivals, costs */
	/* tx cost (shp_admit) published now and then for pipeline RX
	 * lcores, which pace at the TX lcore's rate */
	volatile uint32_t tx_cost_pub;
	struct shp_load load;             /* what tx_cost_pub is made of */
	uint64_t loops;                   /* poll rounds, for quiescence */
	struct shp_stalls stalls;         /* loops the CPU was taken away */
	/* what the kernel says this lcore lost since the launch
	 * (shp_cpu_lost.h): its thread (set by the worker), its one CPU
	 * (-1: a set) and that CPU's steal at the launch (set by the main
	 * lcore); read by the control side once lost_valid */
	volatile bool lost_valid;
	pid_t tid;
	int cpu;
	struct shp_cpu_lost lost0;
};

struct shaper {
	struct shp_options opt;
	/* one pool per socket with ports (shp_pool_plan); pool is the
	 * first, pool_of[port] a port's own (its RX and its chain's copies) */
	struct rte_mempool *pool;
	struct shp_pool_plan plan;
	struct rte_mempool *pools[SHP_MAX_PORTS];
	struct rte_mempool *pool_of[SHP_MAX_PORTS];
	unsigned int nb_mbufs;    /* of every pool */
	uint16_t data_room;       /* of each mbuf, headroom included */
	struct shp_clock clock;
	uint64_t start_ns, stop_ns;   /* forwarding ran between these */
	uint16_t nb_ports;
	uint16_t port_ids[SHP_MAX_PORTS];
	struct egress egress[SHP_MAX_PORTS];          /* by port id */
	struct shp_chain chain[SHP_MAX_PORTS];        /* by port id */
	/* each port's lossless budget as it runs (app/budget.c), for the
	 * stats file; control plane */
	struct shp_budget budget[SHP_MAX_PORTS];
	/* --queues N: port P's shard q (shard 0: egress[P], chain[P]), and
	 * what its shards share (shp_link.h; NULL with one queue) */
	struct egress *shard[SHP_MAX_PORTS][SHP_MAX_QUEUES];
	struct shp_link_shared *link[SHP_MAX_PORTS];
	/* RCU-published: the mode, and the aliases' priomap (--priomap,
	 * `set priomap`) for queues that give none of their own */
	const struct shp_classifier *classifier;
	bool priomap_set;         /* that map was given: not the default */
	struct worker workers[RTE_MAX_LCORE];
	unsigned int worker_ids[RTE_MAX_LCORE];
	unsigned int nb_workers;
	/* counters, indexed by lcore id, then the shards'
	 * (SHAPER_CTR_BLOCKS) */
	struct shp_lcore_ctr *ctr;
	volatile bool quit;       /* stop everything */
	volatile bool paused;     /* `stop`: forwarding paused */
	/* the workers were launched and have not stopped: a change is the
	 * owners' to make (shaper_batch.h) */
	volatile bool running;
	int exit_code;
};

extern struct shaper shaper;

/* opts.c */
int shaper_parse_args(struct shaper *s, int argc, char **argv);
void shaper_usage(FILE *f, const char *prog);
/* argv[i] is one of our options (--netem, --netem=..., -i): for telling a
 * user who forgot `--` what went wrong. */
bool shaper_is_app_option(const char *arg);

/* startup.c: checks of the EAL arguments (argv[1..eal_argc-1]) before
 * the EAL starts, each 0 or -1 after one line; the run directory */
int shaper_check_misplaced(int eal_argc, char **argv);
int shaper_check_tx_pcaps(int eal_argc, char **argv);
int shaper_check_prefix_free(int eal_argc, char **argv);
void shaper_run_dir_remove(const char *dir);

/* shards.c (--queues, issue 24): what a sharded run refuses (one line,
 * -1: a usage error), the queues dealt to the workers, each shard's
 * chain, the per-shard figures */
int shaper_shards_check(const struct shaper *s);
/* --queues when not given: one a worker where every port and the
 * profile allow (shards.c) */
void shaper_queues_default(struct shaper *s, unsigned int nw);
/* The workers' roles: RX lcores and TX lcores by id (run to completion:
 * both lists every worker). */
struct lcore_roles {
	unsigned int rx[RTE_MAX_LCORE], nb_rx;
	unsigned int tx[RTE_MAX_LCORE], nb_tx;
};
/* The queues dealt: RX queue q of every port to RX lcore q mod nb_rx,
 * shard q of every port to TX lcore q mod nb_tx; roles NULL: run to
 * completion, queue q to worker q mod W. */
int shaper_shards_assign(struct shaper *s, const struct lcore_roles *roles);
/* port's shards 1.. (shard 0: egress[port]) on socket, and with link its
 * link block (s->link[port], what the shards share): 0, or -1 out of
 * memory. shaper_shards_assign's, without a device to ask the socket of
 * (the fuzzers' shaper). */
int shaper_shards_alloc(struct shaper *s, uint16_t port, int socket,
			bool link);
int shaper_shards_init(struct shaper *s, uint16_t port,
		       const struct shp_stage_env *env,
		       const struct shp_kind_env *kenv);
void shaper_shards_fini(struct shaper *s);
/* port's chains, shard q's at c[q] (one with one queue): how many */
unsigned int shaper_port_chains(struct shaper *s, uint16_t port,
				struct shp_chain **c);
/* the classes of the options on every shard of port (shp_classes_attach) */
int shaper_classes_attach(struct shaper *s, uint16_t port,
			  const struct shp_kind_env *kenv, char *err);
/* the stats file's ports.N.shards (shp_stats_source) */
int shaper_shards_stats_register(struct shaper *s);
/* Shard q of port: its counters and latency, as a port's sum, since the
 * start (the stats file's; `clear stats` applies in ctl_shard_sum). */
void shaper_shard_sum(struct shaper *s, uint16_t port, unsigned int q,
		      struct shp_port_sum *out);
/* With --queues > 1: shard q's counters alone (no latency summary) and
 * its latency histograms (NULL: none). */
void shaper_shard_counters(struct shaper *s, uint16_t port, unsigned int q,
			   struct shp_port_sum *out);
const struct shp_latency *shaper_shard_latency(struct shaper *s,
					       uint16_t port, unsigned int q);
/* The lcore that runs shard q of port. */
static inline unsigned int
shaper_shard_lcore(const struct shaper *s, uint16_t port, unsigned int q)
{
	return s->shard[port][q] != NULL ? s->shard[port][q]->owner :
	       s->egress[port].owner;
}
static inline unsigned int
shaper_queues(const struct shaper *s)
{
	return s->opt.queues > 1 ? s->opt.queues : 1;
}
/* Shard q's chain of port (shard 0: the port's own). */
static inline struct shp_chain *
shaper_shard_chain(struct shaper *s, uint16_t port, unsigned int q)
{
	return q == 0 ? &s->chain[port] : s->shard[port][q]->chain;
}

/* ports.c */
/* What an RX queue of port `in` checks for egress port `out`: the
 * smaller MTU given (0: none) */
uint32_t shaper_rx_mtu(const struct shaper *s, uint16_t in, uint16_t out);
int shaper_ports_init(struct shaper *s);
int shaper_lcores_assign(struct shaper *s);
int shaper_stages_init(struct shaper *s);
/* app/budget.c: each chain's env.line_rate from its port's link; the
 * budget of port as it runs, or with (k, conf) in k's slot (k NULL: as
 * it runs; -1: no delay kind with a budget); the start's lines (-1: a
 * port over it under --strict-budget, said on stderr); a change's line
 * and warning on stdout, after the command's own (flush); -1 with err when --strict-budget refuses
 * (k, conf) on port. */
void shaper_line_rates(struct shaper *s);
int shaper_budget_of(struct shaper *s, uint16_t port, const struct shp_kind *k,
		     const void *conf, struct shp_budget *b);
int shaper_budget_start(struct shaper *s);
void shaper_budget_report(struct shaper *s, uint16_t port);
/* the lines shaper_budget_report made due, after the command's output */
void shaper_budget_flush(struct shaper *s);
int shaper_budget_check(struct shaper *s, uint16_t port,
			const struct shp_kind *k, const void *conf, char *err);
void shaper_ports_close(struct shaper *s);
/* Each port's link (issue 29): read at start (after --link-wait) and on
 * the control lcore's tick (shaper_link_poll, a change logged with its
 * UTC time); shaper_link_get copies it for any thread. */
void shaper_link_poll(struct shaper *s);
/* After the start line: each port's rings as applied, its link, MTU. */
void shaper_ports_report(const struct shaper *s);
struct rte_eth_xstat_name;
/* The port's extended statistics (rte_eth_xstats): their number, the
 * names and values in *names and *values (free() both), or -1. */
int shaper_nic_xstats(uint16_t port, struct rte_eth_xstat_name **names,
		      uint64_t **values);
void shaper_link_get(uint16_t port, struct shp_link *out);
/* "up 10 Gbps full-duplex" or "down" */
const char *shaper_link_text(const struct shp_link *l, char *buf,
			     size_t len);
/* The pools each socket with ports gets (s->plan), said when short;
 * their total. */
unsigned int shaper_pool_size(struct shaper *s);
/* Each mbuf's data room: --mbuf-size, or what the largest --mtu needs
 * where a port cannot scatter (shaper_pool_size first: ports known). */
uint16_t shaper_data_room(const struct shaper *s);
/* A delay stage's limit of limit packets on port is more than the
 * port's share of the pool (egress.hold_cap): what it is capped to, as a
 * one-line note in buf ("" when it fits); returns buf. */
const char *shaper_hold_note(const struct shaper *s, uint16_t port,
			     const char *what, uint64_t limit, char *buf,
			     size_t len);
/* The mbuf pool's store ("stack" by default, main.c), for show config
 * and telemetry. */
static inline const char *
shaper_pool_store(const struct shaper *s)
{
	return s->pool != NULL ?
	       rte_mempool_get_ops(s->pool->ops_index)->name : "none";
}
/* "the ports are 0, 1", for messages about a port that does not exist */
const char *shaper_ports_text(const struct shaper *s, char *buf, size_t len);
/* The ports' ids as a bit mask (shp_class_set_check_ports). */
uint32_t shaper_ports_mask(const struct shaper *s);

/* How many bands port's queue has: its kind's (a queue without bands
 * counts in --bands' as many, all zero, as it always did). */
static inline unsigned int
shaper_bands(const struct shaper *s, uint16_t port)
{
	return s->chain[port].bands != 0 ? s->chain[port].bands :
	       s->opt.bands;
}

/* What the kinds' parsers take from the options now: those given at
 * start, the priomap alias as `set priomap` left it. Main lcore. */
static inline void
shaper_kind_env(const struct shaper *s, struct shp_kind_env *env)
{
	shp_options_kind_env(&s->opt, env);
	env->priomap = s->priomap_set ? s->classifier->priomap : NULL;
}

/* worker.c */
int shaper_worker_main(void *arg);
void shaper_flush(struct shaper *s);
/* control.c (the main lcore's duties, ctl_tick) */
bool shaper_replay_done(struct shaper *s);

/* stats.c */
void shaper_stats_port(struct shaper *s, uint16_t port,
		       struct shp_port_sum *sum);
/* The same from a copy of the counter blocks (SHAPER_CTR_BLOCKS of them),
 * so that several figures read from it agree exactly. */
void shaper_stats_port_of(struct shaper *s, const struct shp_lcore_ctr *blocks,
			  uint16_t port, struct shp_port_sum *sum);
void shaper_stats_print(struct shaper *s, FILE *f);
void shaper_xstats_print(FILE *f, const struct shp_port_ctr *c);
void shaper_summary_print(struct shaper *s, FILE *f);
int shaper_stats_write(struct shaper *s, const char *path);
int shaper_latency_init(struct shaper *s);
void shaper_latency_fini(struct shaper *s);
void shaper_stats_latency(struct shaper *s, uint16_t port,
			  struct shp_latency *out);
/* A worker's loops and stalls as reported (lib/core/shp_stall.h). */
void shaper_worker_stalls(const struct worker *w, struct shp_stall_sum *out);
/* Main lcore, before the workers are launched: where the kernel's count
 * of their lost CPU starts (shp_cpu_lost.h). */
void shaper_lost_launch(struct shaper *s);

#endif
