/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The unit tests' one harness (docs/testing.md, "Writing a stage's unit
 * test"): the environment (an EAL without hugepages, PCI or shared config,
 * so tests run side by side; one mbuf pool with our private area; one
 * counter block), and a rig: a chain of stages built from tc text and
 * driven on a virtual clock, that checks at the end that every mbuf went
 * back to the pool.
 *
 *	pool = shp_rig_env("mytest", 16384);          in main(), once
 *
 *	struct shp_rig r;
 *
 *	shp_rig_chain(&r, "netem delay 1ms");         one stage alone
 *	shp_rig_chain(&r, "bands 3", "tbf rate 1mbit burst 10kb limit 1mb",
 *		      "netem delay 10ms");             bands -> tbf -> netem
 *	shp_rig_pkts(pkts, 10, 1000, 1, &flow, t);    10 x 1000 B, band 1
 *	shp_rig_enqueue_at(&r, t, pkts, 10);          into the bottom stage
 *	shp_rig_dequeue_at(&r, t, out, 32);           from the root
 *	shp_rig_drain(&r);                            everything, in time
 *	shp_rig_fini(&r);                             and the pool is full
 *
 * A spec is a kind's name and its tc arguments ("tbf rate 1mbit ...");
 * the kind alone ("tbf", "netem") is the stage off (a NULL conf). "bands"
 * takes "[N] [ring SIZE] [sp]" (default 3 bands of 4096). "fifo" is a
 * test stage: a plain FIFO without limit, with peek and dequeue but no
 * run ops, for a gate to pull from the generic way.
 *
 * The harness asserts with cmocka: a rig is used inside a cmocka test.
 */
#ifndef SHP_RIG_H
#define SHP_RIG_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_common.h>
#include <rte_mbuf.h>

#include "shp_meta.h"
#include "shp_kind.h"
#include "shp_qdisc.h"
#include "shp_stats.h"

#define SHP_RIG_MAX_STAGES 4

/* ------------------------------------------------------ the environment */

/* The pool and the counter block shp_rig_env() made. */
extern struct rte_mempool *shp_rig_pool;
extern struct shp_lcore_ctr *shp_rig_ctr;

/* The EAL (file prefix from name and pid, its run dir removed at exit),
 * a pool of nb_mbufs, and a zeroed counter block; exits on failure. */
struct rte_mempool *shp_rig_env(const char *name, unsigned int nb_mbufs);

/* Another pool with our private area and data_room bytes of data room
 * (RTE_MBUF_DEFAULT_BUF_SIZE for the default); exits on failure. */
struct rte_mempool *shp_rig_pool_create(const char *name, unsigned int n,
					uint16_t data_room);

/* Every mbuf of mp is back in it (no cache: exact). */
void shp_rig_assert_pool_full(struct rte_mempool *mp);

/* xorshift64 (Marsaglia): the tests' reproducible random numbers where
 * a sequence of their own is part of what they check (property tests
 * whose cases must not change with lib/'s generator). */
static inline uint64_t
shp_rig_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* CLOCK_MONOTONIC in ns: the clock of tests that run threads against
 * each other on real time. */
uint64_t shp_rig_clock_ns(void);

/* qsort's comparison of two uint64_t. */
int shp_rig_cmp_u64(const void *a, const void *b);

/* ------------------------------------------------------------ packets */

/* A 5-tuple and the header bits a stage may read or rewrite. */
struct shp_rig_flow {
	bool ipv6;          /* addresses ::src and ::dst */
	uint16_t vlan;      /* 0: untagged; else an 802.1Q tag with this TCI */
	uint8_t tos;        /* IPv4 TOS / IPv6 traffic class, ECN bits too */
	uint8_t proto;      /* IPPROTO_UDP (0 means UDP) or IPPROTO_TCP */
	uint32_t src, dst;
	uint16_t sport, dport;
	uint32_t flow_label;  /* IPv6 only, 20 bits */
};

/* An mbuf from mp of len bytes filled with fill, its metadata initialised
 * for an arrival at now. */
struct rte_mbuf *shp_rig_pkt_from(struct rte_mempool *mp, uint16_t len,
				  uint8_t fill, uint64_t now);

/* The same from the harness pool. */
struct rte_mbuf *shp_rig_pkt(uint16_t len, uint8_t fill, uint64_t now);

/* A zeroed packet of len bytes from the harness pool that netem
 * scheduled for tts (for the time queues alone). */
struct rte_mbuf *shp_rig_pkt_due(uint64_t tts, uint16_t len);

/*
 * n packets of len bytes in band (priority) band, arrived at now. With a
 * flow: an Ethernet (+ VLAN) + IPv4/IPv6 + UDP/TCP frame of that 5-tuple
 * (IPv4 checksum valid, lengths those of the frame), zero padded; without
 * one, zero bytes. len must hold the headers.
 */
void shp_rig_pkts(struct rte_mbuf **pkts, uint16_t n, uint16_t len,
		  uint8_t band, const struct shp_rig_flow *flow, uint64_t now);

/* ------------------------------------------------------------- the rig */

struct shp_rig_kind;

struct shp_rig {
	/* [0] the bottom, where packets are enqueued; root the top */
	struct shp_qdisc *stage[SHP_RIG_MAX_STAGES];
	const struct shp_rig_kind *kind[SHP_RIG_MAX_STAGES];
	void *conf[SHP_RIG_MAX_STAGES];  /* owned (NULL: off, or pushed) */
	unsigned int nb_stages;
	struct shp_qdisc *root;
	struct shp_ctx ctx;              /* ctx.now: the virtual clock */
	struct shp_port_ctr *c;          /* the rig's port counters */
	uint16_t port;
	/* shp_rig_poll and shp_rig_drain */
	uint64_t out;                    /* packets that left */
	uint64_t last_tts;               /* the latest one's time_to_send */
	void (*on_pkt)(struct shp_rig *r, struct rte_mbuf *m); /* each one */
	void *arg;                       /* on_pkt's */
	/* the environment of the stages added from now on (NULL: none):
	 * set after shp_rig_init, e.g. for a link's shards (env.link) */
	const struct shp_stage_env *env;
};

/* An empty rig on port (its counters zeroed), the clock at 0. */
void shp_rig_init(struct shp_rig *r, uint16_t port);

/* A stage of a named kind on top of the chain, from tc arguments (NULL
 * or "": off); a refused argument fails the test with the parser's
 * message. Returns the stage. */
struct shp_qdisc *shp_rig_add(struct shp_rig *r, const char *kind,
			      const char *args);

/* A stage of any ops on top, with a conf the caller owns. */
struct shp_qdisc *shp_rig_push(struct shp_rig *r,
			       const struct shp_qdisc_ops *ops,
			       const void *conf);

/* shp_rig_init and a shp_rig_add per spec ("kind args"), bottom first. */
void shp_rig_build(struct shp_rig *r, uint16_t port,
		   const char *const *specs);

#define shp_rig_chain_port(r, port, ...) \
	shp_rig_build(r, port, (const char *const[]){ __VA_ARGS__, NULL })
#define shp_rig_chain(r, ...) shp_rig_chain_port(r, 0, __VA_ARGS__)

/* The lowest stage of that kind, and its conf (NULL: none). */
struct shp_qdisc *shp_rig_find(const struct shp_rig *r, const char *kind);
void *shp_rig_conf(const struct shp_rig *r, const char *kind);

/* Enqueue into the bottom / dequeue from the root, the clock set to t. */
uint16_t shp_rig_enqueue_at(struct shp_rig *r, uint64_t t,
			    struct rte_mbuf **pkts, uint16_t n);
uint16_t shp_rig_dequeue_at(struct shp_rig *r, uint64_t t,
			    struct rte_mbuf **pkts, uint16_t n);

/*
 * Everything due at r->ctx.now: each packet is checked (it does not leave
 * before its time_to_send, nor before one that left earlier), counted in
 * r->out, handed to r->on_pkt and freed. Returns how many left.
 */
uint64_t shp_rig_poll(struct shp_rig *r);

/*
 * n packets, one every gap ns from time 0, each enqueued at its arrival
 * followed by a shp_rig_poll(). Packet i is mk(i, now), or without mk 100
 * bytes filled with (uint8_t)i. Returns how many the chain accepted.
 */
uint64_t shp_rig_stream(struct shp_rig *r, uint64_t n, uint64_t gap,
			struct rte_mbuf *(*mk)(uint64_t seq, uint64_t now));

/* Polls from r->ctx.now on, the clock following the root's next_time,
 * until the chain holds nothing; fails if it stops releasing. Returns
 * how many left. */
uint64_t shp_rig_drain(struct shp_rig *r);

/* Resets the chain (what it still holds is counted as flushed), destroys
 * it, frees the confs it owns, and asserts the pool is full again. */
void shp_rig_fini(struct shp_rig *r);

/* ------------------------------------------- a link's shards on threads */

/*
 * One of two threads, each a shard of one link (a rig whose env names
 * it), on the real clock: it keeps `backlog` frames of `len` bytes in its
 * rig, each enqueued at its arrival, dequeues at the clock and records
 * each departure's time_to_send. It runs at least until `until`, then
 * until both threads have sent (other: the other's n), never past
 * give_up: a time to share the CPUs in, not a figure checked. No cmocka
 * assertion in it (another thread's): the caller checks after the join.
 */
struct shp_rig_hammer {
	struct shp_rig *r;
	uint16_t len;
	unsigned int backlog;
	uint64_t until, give_up;
	const unsigned int *other;
	uint64_t last;        /* the last clock value it dequeued at */
	unsigned int n;       /* departures recorded */
	uint64_t tts[16384];
	bool bad;             /* a frame refused, or the record full */
};

/*
 * h[0] and h[1] (r, len and backlog set) on two threads for at least ms
 * milliseconds, and until both sent (10 s at most), joined; every
 * departure's time in all[] (2 x 16384), sorted. Returns how many; *start
 * the clock when they started. Fails the test if a thread did.
 */
unsigned int shp_rig_hammer_two(struct shp_rig_hammer h[2], unsigned int ms,
				uint64_t *start, uint64_t *all);

/* The "fifo" test stage's ops. */
extern const struct shp_qdisc_ops shp_rig_fifo_ops;

#endif
