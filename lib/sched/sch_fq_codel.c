/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fq_codel: flow queueing with CoDel (RFC 8290; Linux sch_fq_codel
 * semantics), as the port's bottleneck queue:
 *
 *   fq_codel [limit PACKETS] [flows N] [target TIME] [interval TIME]
 *            [quantum BYTES] [ecn|noecn] [ce_threshold TIME]
 *            [memory_limit BYTES]
 *
 * with tc's defaults (limit 10240, flows 1024, target 5ms, interval
 * 100ms, quantum 1514, ecn, memory_limit 32Mb; keywords are not
 * abbreviated, as q_fq_codel.c).
 *
 * Packets are hashed on their 5-tuple, with a perturbation drawn from
 * (seed, port), into one of `flows` buckets, each a FIFO with its own
 * CoDel state. Dequeue serves the buckets by deficit round robin over two
 * lists: a bucket that becomes active joins the new list and is served
 * before the old one (the sparse flow's priority), one quantum of bytes
 * per turn; CoDel decides at dequeue, per bucket, whether to drop (or mark
 * CE, for an ECN-capable packet with ecn on) the packet at the head: once
 * the sojourn time has stayed at or above target for an interval, at
 * times interval / sqrt(count) apart (RFC 8289's control law, computed
 * exactly rather than by Linux's Newton step). When the queue holds more
 * than `limit` packets or `memory_limit` bytes of buffers, the bucket with
 * the largest backlog loses packets from its head: up to 64, until half
 * its backlog is gone (Linux's drop batch).
 *
 * On a link's shards (env->link, issue 56) the DRR is fair across the
 * link's flows wherever RSS put them: each shard counts the service it
 * gave per active bucket (its virtual time: bytes sent over the buckets
 * holding packets, in 1/256 bytes), publishes it once a call
 * (link_state.h's figures), and sends only while it is at most a quantum
 * ahead of the least served backlogged shard; a shard that comes back
 * from idle starts at that least one's time, not behind it. So a shard
 * with 1 flow and another with 8 give each flow 1/9 of the link. A shard
 * silent for more than FQC_STALE_NS (its CPU taken) is not waited for.
 * CoDel stays per flow.
 *
 * `limit` and `memory_limit` bound the link's backlog there, not each
 * shard's: each shard publishes its packets, its memory and its fattest
 * bucket's backlog (figures FQF_QLEN, FQF_MEM, FQF_FAT) at the end of a
 * call when they changed, reads the others' once a poll, and counts its
 * own and theirs against the limits. Over them, the shard holding the
 * link's fattest bucket sheds as one queue would (fqc_drop_fat): a shard
 * drops only while its fattest bucket is at least as fat as every other
 * shard's (ties: both may), else it leaves the excess to that shard,
 * whose pass (once a poll, fqc_link_tick) sheds it. A shard silent for
 * more than FQC_STALE_NS is not left the excess.
 *
 * Threads: enqueue and dequeue run on the port's owner lcore only
 * (mp_enqueue false: other RX lcores hand their packets over through the
 * chain's inbox). change() may run on a control thread: it only publishes
 * a conf pointer that each call loads once (the caller frees the old conf
 * after a grace period). `flows` sizes the bucket table when the stage is
 * created (Linux refuses to change it): a later conf that does not name
 * it takes the running value (fqc_check_change), one that names another
 * is refused.
 *
 * Per-packet state lives in the mbuf private area (shp_meta.h): the
 * bucket's FIFO links through meta->next (netem's, which it sets again
 * on its own enqueue: fq_codel is below it in the chain), and the
 * enqueue time is meta->rx_ns (RX writes it when it enqueues here; in
 * pipeline mode it includes the wait in the inbox, which is queueing
 * before this queue too). Nothing is allocated per packet.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_jhash.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "link_state.h"
#include "shp_kind.h"
#include "shp_link.h"
#include "shp_meta.h"
#include "shp_pkthdr.h"
#include "shp_qdisc.h"
#include "shp_rand.h"
#include "shp_tcargs.h"

#define FQC_LIMIT_DEFAULT    10240
#define FQC_FLOWS_DEFAULT    1024
#define FQC_FLOWS_MAX        65536
#define FQC_TARGET_DEFAULT   (5 * 1000000ULL)
#define FQC_INTERVAL_DEFAULT (100 * 1000000ULL)
#define FQC_QUANTUM_DEFAULT  1514
#define FQC_QUANTUM_MIN      256        /* Linux raises a smaller one */
#define FQC_QUANTUM_MAX      (1u << 20) /* Linux refuses a larger one */
#define FQC_MEMORY_DEFAULT   (32ULL << 20)
#define FQC_MEMORY_MAX       (1ULL << 31)
#define FQC_CE_OFF           UINT64_MAX
#define FQC_DROP_BATCH       64   /* drop_batch's default (Linux's) */
/* CoDel never drops while the whole queue holds at most one frame of
 * the link's MTU (Linux: psched_mtu of the device, 1514 on Ethernet) */
#define FQC_MTU              1514
#define FQC_DEFAULT_SEED     0x66715f636f64656cULL   /* "fq_codel" */

struct fqc_conf {
	struct shp_conf_hdr hdr;   /* first: shp_qdisc.h */
	uint32_t limit;          /* packets */
	uint32_t flows;          /* buckets */
	bool flows_set;          /* named in the text (else: the default,
				  * or the running table's, on a change) */
	uint32_t quantum;        /* bytes per DRR turn */
	bool ecn;                /* mark ECT packets instead of dropping */
	uint64_t target;         /* ns */
	uint64_t interval;       /* ns */
	uint64_t ce_threshold;   /* ns; FQC_CE_OFF: none */
	uint64_t memory_limit;   /* bytes of mbuf buffers */
	uint32_t drop_batch;     /* packets dropped at most at once from
				  * the fattest bucket over the limit */
	uint64_t seed;           /* of the hash perturbation (--seed) */
};
SHP_CONF_HDR_FIRST(struct fqc_conf);

/* the kind's drop causes, each name beside its enum (shp_kind.h) */
#define FQC_DROPS(X) \
	/* CoDel's control law, at dequeue (or ECN-incapable when it would \
	 * have marked) */ \
	X(FQC_DROP_CODEL, "codel") \
	/* over limit or memory_limit: from the fattest bucket's head */ \
	X(FQC_DROP_OVERLIMIT, "fq_overlimit")
enum { FQC_DROPS(SHP_CAUSE_ENUM) };
static const char *const fq_codel_drops[] = {
	FQC_DROPS(SHP_CAUSE_NAME) NULL
};

/* its statistics, likewise */
#define FQC_XSTATS(X) \
	/* CE marks where CoDel would have dropped */ \
	X(FQC_XS_ECN_MARKED, "ecn_marked", 0, NULL) \
	/* CE marks for a sojourn above ce_threshold */ \
	X(FQC_XS_CE_MARKED, "ce_marked", 0, NULL) \
	/* buckets that joined the new list (Linux new_flow_count) */ \
	X(FQC_XS_NEW_FLOWS, "new_flows", 0, NULL) \
	/* buckets holding packets */ \
	X(FQC_XS_FLOWS_ACTIVE, "flows_active", SHP_XS_GAUGE, NULL) \
	X(FQC_XS_QUEUED, "queued", SHP_XS_GAUGE | SHP_XS_QLEN, NULL) \
	/* bytes of buffers held, against memory_limit */ \
	X(FQC_XS_MEMORY, "memory_usage", SHP_XS_GAUGE, NULL) \
	/* of the fq_overlimit drops, those for memory_limit */ \
	X(FQC_XS_OVERMEMORY, "overmemory", 0, NULL)
enum { FQC_XSTATS(SHP_XSTAT_ENUM) };
static const struct shp_xstat_desc fq_codel_xstats[] = {
	FQC_XSTATS(SHP_XSTAT_DESC) { NULL, 0, NULL }
};

/* One bucket: a FIFO of packets and its CoDel state (one cache line). */
struct fqc_flow {
	struct shp_meta *head, *tail;
	struct fqc_flow *next;     /* on the new or the old list */
	int32_t deficit;           /* bytes it may still send this turn */
	uint32_t count;            /* drops (marks) since dropping began */
	uint32_t lastcount;        /* count when dropping last began */
	bool dropping;
	bool listed;               /* on the new or the old list */
	uint64_t first_above;      /* when sojourn >= target becomes a drop
				    * (0: sojourn below target) */
	uint64_t drop_next;        /* next drop while dropping */
} __rte_cache_aligned;

struct fqc_list {
	struct fqc_flow *head, *tail;
};

struct fqc_priv {
	const struct fqc_conf *conf;   /* published by change() */
	uint64_t seen;                 /* id of the conf last applied */
	uint32_t nb_flows;             /* buckets allocated at init */
	uint32_t perturb;              /* hash seed, from (seed, port) */
	struct fqc_flow *flows;
	uint32_t *backlogs;            /* bytes per bucket: the fat-flow scan
					* reads 4 bytes a bucket, as Linux */
	struct fqc_list new_flows, old_flows;
	uint32_t qlen;                 /* packets in the buckets */
	uint32_t active;               /* buckets holding packets */
	uint64_t backlog;              /* bytes in the buckets */
	uint64_t memory;               /* buffer bytes in the buckets */
	/* what the last peek dequeued (Linux qdisc_peek_dequeued): the
	 * next dequeue returns it first; counted in stats, not in qlen */
	struct rte_mbuf *stash;
	/* a link's shards: the fairness across them (NULL: this queue is
	 * the link) */
	struct shp_link_state *ls;
	/* the link's tbf bucket: fairness binds only while frames wait
	 * for its tokens */
	const struct shp_tbf_shared *rate;
	uint16_t shard, nb_shards;
	uint64_t vt;          /* service per active bucket, << FQC_VT_SHIFT */
	uint64_t gate;        /* the least backlogged other's vt + a quantum */
	uint64_t gate_at;     /* the clock value gate was read at */
	uint64_t inv_active;  /* 2^32 / the buckets active at the poll */
	bool published_idle;  /* this shard's figures say idle */
	/* a link's limits: the others' figures, read once a poll */
	uint64_t oth_qlen, oth_mem, oth_fat;
	/* this shard's fattest bucket's backlog: an upper bound of it,
	 * exact when fat_ok; fat_at: the clock of the last scan */
	uint32_t fat;
	bool fat_ok;
	uint64_t fat_at;
	/* what the figures say of this shard */
	uint64_t pub_qlen, pub_mem, pub_fat;
};

#define FQC_VT_SHIFT 8   /* 2^56 bytes a bucket: months at 100G */
#define FQC_STALE_NS 1000000ULL
/* how long a link whose bucket was left short is taken to hold frames
 * back (fqc_link_short) */
#define FQC_SHORT_NS 100000000ULL
/* a shard's figures: vt + 1 (0: idle), when; its packets, its memory,
 * its fattest bucket's bytes (link_state.h's v[0..4]) */
enum { FQF_VT, FQF_AT, FQF_QLEN, FQF_MEM, FQF_FAT };

static const struct fqc_conf fqc_defaults = {
	.limit = FQC_LIMIT_DEFAULT,
	.flows = FQC_FLOWS_DEFAULT,
	.quantum = FQC_QUANTUM_DEFAULT,
	.ecn = true,
	.target = FQC_TARGET_DEFAULT,
	.interval = FQC_INTERVAL_DEFAULT,
	.ce_threshold = FQC_CE_OFF,
	.memory_limit = FQC_MEMORY_DEFAULT,
	.drop_batch = FQC_DROP_BATCH,
	.seed = FQC_DEFAULT_SEED,
	.hdr = { .id = 0 },
};

static inline struct fqc_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

#define FQX(q, ctx, i) (*shp_stage_xstat((q), (ctx), (i)))

/*
 * The bucket's hash: the 5-tuple of an IP packet as the shared header
 * walker finds it (lib/pkt/shp_pkthdr.h: through up to 4 VLAN tags and the
 * IPv6 extension headers, in any segment layout), without ports in a
 * fragment so that a datagram's fragments stay together; the MAC
 * addresses and EtherType of anything else.
 */
static inline uint32_t
fqc_hash(const struct rte_mbuf *m, uint32_t perturb)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t key[10] = { 0 };
	struct shp_pkthdr h;

	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L4);
	if (h.l3_type != 0) {
		/* IPv4 addresses come zero-padded to 16 bytes */
		memcpy(&key[0], &h.src, 16);
		memcpy(&key[4], &h.dst, 16);
		key[8] = (uint32_t)h.l3_type << 8 |
			 ((h.flags & SHP_PKTHDR_F_PROTO) ? h.ip_proto : 0);
		if ((h.flags & (SHP_PKTHDR_F_PORTS | SHP_PKTHDR_F_FRAG)) ==
		    SHP_PKTHDR_F_PORTS)
			key[9] = (uint32_t)h.sport << 16 | h.dport;
		return rte_jhash_32b(key, 10, perturb);
	}
	memcpy(key, p, RTE_MIN((uint32_t)m->data_len,
			       (uint32_t)(2 * RTE_ETHER_ADDR_LEN)));
	if (m->data_len >= 2 * RTE_ETHER_ADDR_LEN + 2)
		key[8] = (uint32_t)p[12] << 8 | p[13];
	return rte_jhash_32b(key, 10, perturb);
}

/* What a packet holds of memory (Linux's skb->truesize): its buffers. */
static inline uint32_t
fqc_truesize(const struct rte_mbuf *m)
{
	uint32_t n = 0;

	if (likely(m->nb_segs == 1))
		return (uint32_t)sizeof(*m) + m->priv_size + m->buf_len;
	for (; m != NULL; m = m->next)
		n += (uint32_t)sizeof(*m) + m->priv_size + m->buf_len;
	return n;
}

static inline void
list_add_tail(struct fqc_list *l, struct fqc_flow *f)
{
	f->next = NULL;
	if (l->tail != NULL)
		l->tail->next = f;
	else
		l->head = f;
	l->tail = f;
}

static inline struct fqc_flow *
list_pop(struct fqc_list *l)
{
	struct fqc_flow *f = l->head;

	l->head = f->next;
	if (l->head == NULL)
		l->tail = NULL;
	return f;
}

static inline void
flow_vars_init(struct fqc_flow *f)
{
	f->count = 0;
	f->lastcount = 0;
	f->dropping = false;
	f->first_above = 0;
	f->drop_next = 0;
}

/* Take the head packet of f out of the queue, or NULL if f is empty. */
static inline struct rte_mbuf *
flow_pop(struct fqc_priv *p, struct fqc_flow *f)
{
	struct shp_meta *h = f->head;
	struct rte_mbuf *m;
	uint32_t len;

	if (h == NULL)
		return NULL;
	f->head = h->next;
	if (f->head == NULL) {
		f->tail = NULL;
		p->active--;
	}
	m = shp_meta_mbuf(h);
	len = rte_pktmbuf_pkt_len(m);
	/* the fattest bucket may have shrunk below another */
	if (p->ls != NULL && p->backlogs[f - p->flows] == p->fat)
		p->fat_ok = false;
	p->backlogs[f - p->flows] -= len;
	p->backlog -= len;
	p->memory -= fqc_truesize(m);
	p->qlen--;
	return m;
}

static inline uint64_t
sojourn(const struct rte_mbuf *m, uint64_t now)
{
	uint64_t t = shp_meta((struct rte_mbuf *)(uintptr_t)m)->rx_ns;

	/* a pipeline's clocks may be a little apart: never wrap */
	return now > t ? now - t : 0;
}

/* RFC 8289's control law: the next drop, interval / sqrt(count) on. */
static inline uint64_t
control_law(uint64_t t, uint64_t interval, uint32_t count)
{
	return t + (uint64_t)((double)interval / sqrt((double)count));
}

/*
 * codel_should_drop: m (just taken from f) has been at or above target
 * for at least an interval, and more than one MTU remains queued.
 * *ldelay is its sojourn.
 */
static inline bool
should_drop(const struct fqc_priv *p, const struct fqc_conf *c,
	    struct fqc_flow *f, const struct rte_mbuf *m, uint64_t now,
	    uint64_t *ldelay)
{
	if (m == NULL) {
		f->first_above = 0;
		return false;
	}
	*ldelay = sojourn(m, now);
	if (*ldelay < c->target || p->backlog <= FQC_MTU) {
		/* went below: must stay above a whole interval again */
		f->first_above = 0;
		return false;
	}
	if (f->first_above == 0) {
		f->first_above = now + c->interval;
		return false;
	}
	return now > f->first_above;
}

/*
 * codel_dequeue for bucket f: its head packet, after dropping (or
 * marking) what the control law says. NULL when f is empty (or emptied).
 */
static struct rte_mbuf *
codel_dequeue(struct shp_qdisc *q, struct fqc_priv *p,
	      const struct fqc_conf *c, struct fqc_flow *f,
	      struct shp_ctx *ctx)
{
	uint64_t now = ctx->now, ldelay = 0;
	struct rte_mbuf *m = flow_pop(p, f);
	bool drop;

	if (m == NULL) {
		f->dropping = false;
		return NULL;
	}
	drop = should_drop(p, c, f, m, now, &ldelay);
	if (f->dropping) {
		if (!drop) {
			/* below target again: leave the dropping state */
			f->dropping = false;
		} else {
			/* a large backlog may call for several drops at
			 * once: catch up with the schedule */
			while (f->dropping && now >= f->drop_next) {
				f->count++;
				if (c->ecn && shp_pkthdr_mark_ce(m)) {
					FQX(q, ctx, FQC_XS_ECN_MARKED)++;
					f->drop_next = control_law(
						f->drop_next, c->interval,
						f->count);
					goto end;
				}
				shp_stage_drop(q, ctx, FQC_DROP_CODEL, m);
				m = flow_pop(p, f);
				if (!should_drop(p, c, f, m, now, &ldelay))
					f->dropping = false;
				else
					f->drop_next = control_law(
						f->drop_next, c->interval,
						f->count);
			}
		}
	} else if (drop) {
		uint32_t delta;

		if (c->ecn && shp_pkthdr_mark_ce(m)) {
			FQX(q, ctx, FQC_XS_ECN_MARKED)++;
		} else {
			shp_stage_drop(q, ctx, FQC_DROP_CODEL, m);
			m = flow_pop(p, f);
			should_drop(p, c, f, m, now, &ldelay);
		}
		f->dropping = true;
		/* back in the dropping state soon after leaving it: the
		 * drop rate that controlled the queue then is a good start */
		delta = f->count - f->lastcount;
		if (delta > 1 && (int64_t)(now - f->drop_next) <
				 (int64_t)(16 * c->interval))
			f->count = delta;
		else
			f->count = 1;
		f->lastcount = f->count;
		f->drop_next = control_law(now, c->interval, f->count);
	}
end:
	if (m != NULL && c->ce_threshold != FQC_CE_OFF &&
	    ldelay > c->ce_threshold && shp_pkthdr_mark_ce(m))
		FQX(q, ctx, FQC_XS_CE_MARKED)++;
	return m;
}

/* the least virtual time of the other backlogged shards that spoke
 * within FQC_STALE_NS (UINT64_MAX: none) */
static uint64_t
fqc_link_min(const struct fqc_priv *p, uint64_t now)
{
	uint64_t min = UINT64_MAX;
	uint16_t s;

	for (s = 0; s < p->nb_shards; s++) {
		uint64_t v, at;

		if (s == p->shard)
			continue;
		v = shp_link_fig_get(p->ls, s, FQF_VT);
		at = shp_link_fig_get(p->ls, s, FQF_AT);
		if (v == 0 || (now > at && now - at > FQC_STALE_NS))
			continue;
		min = RTE_MIN(min, v - 1);
	}
	return min;
}

/* The others' backlog as they last published it (their packets and
 * memory, all of them; their fattest bucket, of those that spoke within
 * FQC_STALE_NS: a silent one is not left the excess), once a poll. */
static void
fqc_link_others(struct fqc_priv *p, uint64_t now)
{
	uint64_t qlen = 0, mem = 0, fat = 0;
	uint16_t s;

	for (s = 0; s < p->nb_shards; s++) {
		uint64_t f, at;

		if (s == p->shard)
			continue;
		qlen += shp_link_fig_get(p->ls, s, FQF_QLEN);
		mem += shp_link_fig_get(p->ls, s, FQF_MEM);
		f = shp_link_fig_get(p->ls, s, FQF_FAT);
		at = shp_link_fig_get(p->ls, s, FQF_AT);
		if (f > fat && !(now > at && now - at > FQC_STALE_NS))
			fat = f;
	}
	p->oth_qlen = qlen;
	p->oth_mem = mem;
	p->oth_fat = fat;
}

/* this shard's fattest bucket's backlog, exact */
static inline uint32_t
fqc_fat_scan(struct fqc_priv *p, uint64_t now)
{
	uint32_t i, max = 0;

	for (i = 0; i < p->nb_flows; i++)
		max = RTE_MAX(max, p->backlogs[i]);
	p->fat = max;
	p->fat_ok = true;
	p->fat_at = now;
	return max;
}

/* Over limit or memory_limit: this queue's, or on a link's shards the
 * link's (own and the others' as last read). One queue: as Linux. */
static inline bool
fqc_over(const struct fqc_priv *p, const struct fqc_conf *c)
{
	return p->qlen + p->oth_qlen > c->limit ||
	       p->memory + p->oth_mem > c->memory_limit;
}

static inline bool
fqc_overmemory(const struct fqc_priv *p, const struct fqc_conf *c)
{
	return p->memory + p->oth_mem > c->memory_limit;
}

/* Does this shard shed the link's excess: it holds the link's fattest
 * bucket (a tie: both may). One queue: always. */
static inline bool
fqc_link_mine(struct fqc_priv *p, uint64_t now)
{
	if (p->ls == NULL)
		return true;
	return (p->fat_ok ? p->fat : fqc_fat_scan(p, now)) >= p->oth_fat;
}

/*
 * What the others read of this shard's backlog: at the end of a call,
 * each figure only when it changed. The fattest bucket is scanned again
 * when it may have shrunk (its frames left), once a call while the link
 * holds more than half its limits (the figure is then exact: a shard
 * that leaves the excess to a fatter one is sure that one sheds it), at
 * most once a poll below (an upper bound until then).
 */
static inline void
fqc_link_put_backlog(struct fqc_priv *p, const struct fqc_conf *c,
		     uint64_t now)
{
	if (p->qlen == 0) {
		p->fat = 0;
		p->fat_ok = true;
	} else if (!p->fat_ok &&
		   (p->fat_at != now ||
		    2 * (p->qlen + p->oth_qlen) > c->limit ||
		    2 * (p->memory + p->oth_mem) > c->memory_limit)) {
		fqc_fat_scan(p, now);
	}
	if (p->qlen != p->pub_qlen) {
		p->pub_qlen = p->qlen;
		shp_link_fig_put(p->ls, p->shard, FQF_QLEN, p->qlen);
	}
	if (p->memory != p->pub_mem) {
		p->pub_mem = p->memory;
		shp_link_fig_put(p->ls, p->shard, FQF_MEM, p->memory);
	}
	if (p->fat != p->pub_fat) {
		p->pub_fat = p->fat;
		shp_link_fig_put(p->ls, p->shard, FQF_FAT, p->fat);
	}
}

static inline void
fqc_link_publish(struct fqc_priv *p, uint64_t now)
{
	bool busy = p->qlen > 0 || p->stash != NULL;

	shp_link_fig_put(p->ls, p->shard, FQF_VT, busy ? p->vt + 1 : 0);
	shp_link_fig_put(p->ls, p->shard, FQF_AT, now);
	p->published_idle = !busy;
}

/*
 * Does the link, not a CPU, hold frames back: its tbf bucket was left
 * short within FQC_SHORT_NS (claims note it a few times a second at
 * least while frames wait: deferred ones do not)? Only then is a shard's share the link's
 * to divide; with the tokens to spare every frame leaves as it comes,
 * and a shard that waited for a slower one (its CPU the bottleneck)
 * would only lose what that one cannot carry (fq_codel carried 0.46 of
 * a DRR a shard under a flood at 2 shards: docs/benchmarks.md). A link
 * without a tbf has no tokens to watch: always.
 */
static inline bool
fqc_link_short(const struct fqc_priv *p, uint64_t now)
{
	if (__atomic_load_n(&p->rate->filled, __ATOMIC_RELAXED) == 0)
		return true;
	return shp_tbf_shared_short(p->rate, now, FQC_SHORT_NS);
}

/* The exchange with the other shards, once a poll (one clock value), not
 * a packet (tbf peeks and takes a packet at a time), at every call's
 * start: a shard waiting for tokens with a packet peeked still speaks. */
static inline bool
fqc_link_tick(struct fqc_priv *p, const struct fqc_conf *c, uint64_t now)
{
	if (p->ls != NULL && (p->gate_at != now || now == 0)) {
		uint64_t min = fqc_link_min(p, now);

		fqc_link_publish(p, now);
		/* a multiply a packet, not a divide */
		p->inv_active = (1ULL << 32) / RTE_MAX(p->active, 1u);
		p->gate = min == UINT64_MAX || !fqc_link_short(p, now) ?
			  UINT64_MAX :
			  min + ((uint64_t)c->quantum << FQC_VT_SHIFT);
		p->gate_at = now;
		fqc_link_others(p, now);
		return true;
	}
	return false;
}

/* may this shard send now (the link's fairness) */
static inline bool
fqc_link_may_send(const struct fqc_priv *p)
{
	return p->vt <= p->gate;
}

/* One packet by DRR over the new, then the old buckets; NULL if none. */
static inline struct rte_mbuf *
fqc_dequeue_one(struct shp_qdisc *q, struct fqc_priv *p,
		const struct fqc_conf *c, struct shp_ctx *ctx)
{
	if (p->ls != NULL && !fqc_link_may_send(p))
		return NULL;
	for (;;) {
		struct fqc_list *l = &p->new_flows;
		struct fqc_flow *f;
		struct rte_mbuf *m;

		if (l->head == NULL) {
			l = &p->old_flows;
			if (l->head == NULL)
				return NULL;
		}
		f = l->head;
		if (f->deficit <= 0) {
			/* its turn is over: a new quantum, at the back */
			f->deficit += (int32_t)c->quantum;
			list_pop(l);
			list_add_tail(&p->old_flows, f);
			continue;
		}
		m = codel_dequeue(q, p, c, f, ctx);
		if (m == NULL) {
			list_pop(l);
			/* an emptied new bucket goes once through the old
			 * list, so that a flow cannot stay new forever by
			 * sending a packet at a time */
			if (l == &p->new_flows && p->old_flows.head != NULL)
				list_add_tail(&p->old_flows, f);
			else
				f->listed = false;
			continue;
		}
		f->deficit -= (int32_t)rte_pktmbuf_pkt_len(m);
		if (p->ls != NULL)
			p->vt += ((uint64_t)rte_pktmbuf_pkt_len(m) *
				  p->inv_active) >> (32 - FQC_VT_SHIFT);
		return m;
	}
}

/*
 * The queue is over its limit: drop from the head of the bucket with the
 * largest backlog, up to drop_batch packets or half its backlog (Linux
 * fq_codel_drop: one scan of the backlogs per batch), handed on
 * FQC_DROP_BATCH at a time.
 */
static void
fqc_drop_fat(struct shp_qdisc *q, struct fqc_priv *p,
	     const struct fqc_conf *c, bool overmemory, struct shp_ctx *ctx)
{
	struct rte_mbuf *drop[FQC_DROP_BATCH];
	uint32_t i, idx = UINT32_MAX, max = 0, threshold, len = 0, n = 0;
	struct fqc_flow *f;
	uint16_t k = 0;

	for (i = 0; i < p->nb_flows; i++)
		if (p->backlogs[i] > max) {
			max = p->backlogs[i];
			idx = i;
		}
	if (idx == UINT32_MAX)   /* only empty frames: any holding one */
		for (i = 0; i < p->nb_flows && idx == UINT32_MAX; i++)
			if (p->flows[i].head != NULL)
				idx = i;
	if (idx == UINT32_MAX)
		return;
	if (p->ls != NULL) {   /* exact until the pops below */
		p->fat = max;
		p->fat_ok = true;
	}
	f = &p->flows[idx];
	threshold = max >> 1;
	do {
		drop[k] = flow_pop(p, f);
		if (drop[k] == NULL)
			break;
		len += rte_pktmbuf_pkt_len(drop[k]);
		n++;
		if (++k == FQC_DROP_BATCH) {
			shp_stage_drop_full(q, ctx, FQC_DROP_OVERLIMIT, drop,
					    k);
			k = 0;
		}
	} while (n < c->drop_batch && len < threshold);
	/* and make CoDel's signal stronger too */
	f->count += n;
	if (overmemory)
		FQX(q, ctx, FQC_XS_OVERMEMORY) += n;
	shp_stage_drop_full(q, ctx, FQC_DROP_OVERLIMIT, drop, k);
}

static inline void
fqc_gauges(struct shp_qdisc *q, struct fqc_priv *p,
	   const struct fqc_conf *c, struct shp_ctx *ctx)
{
	/* gone idle: said at once (its next poll may not come) */
	if (p->ls != NULL && p->qlen == 0 && p->stash == NULL &&
	    !p->published_idle)
		fqc_link_publish(p, ctx->now);
	if (p->ls != NULL)
		fqc_link_put_backlog(p, c, ctx->now);
	FQX(q, ctx, FQC_XS_QUEUED) = p->qlen + (p->stash != NULL);
	FQX(q, ctx, FQC_XS_FLOWS_ACTIVE) = p->active;
	FQX(q, ctx, FQC_XS_MEMORY) = p->memory;
}

/*
 * A link's shard, once a poll (and on a change): the link over its
 * limits and this shard holding its fattest bucket, shed what the others
 * left to it, a batch at a time, until the link is within them or
 * another shard's bucket is the fatter.
 */
static void
fqc_link_shed(struct shp_qdisc *q, struct fqc_priv *p,
	      const struct fqc_conf *c, struct shp_ctx *ctx)
{
	uint32_t start = p->qlen;

	while (p->qlen > 0 && fqc_over(p, c) &&
	       fqc_link_mine(p, ctx->now)) {
		uint32_t before = p->qlen;

		fqc_drop_fat(q, p, c, fqc_overmemory(p, c), ctx);
		if (p->qlen == before)   /* nothing to drop */
			break;
	}
	/* said now: a peek holding its packet ends without the gauges */
	if (p->qlen != start)
		fqc_link_put_backlog(p, c, ctx->now);
}

/* The conf to use for this call; a new one is applied first (as Linux's
 * fq_codel_change: what is over a lowered limit is dropped at once). */
static inline const struct fqc_conf *
fqc_sync(struct shp_qdisc *q, struct fqc_priv *p, struct shp_ctx *ctx)
{
	const struct fqc_conf *c = __atomic_load_n(&p->conf,
						   __ATOMIC_ACQUIRE);
	bool changed = false;

	if (unlikely(c->hdr.id != p->seen)) {
		p->seen = c->hdr.id;
		changed = true;
		while (p->ls == NULL && (p->qlen > c->limit ||
					 p->memory > c->memory_limit))
			fqc_drop_fat(q, p, c, p->memory > c->memory_limit,
				     ctx);
	}
	if (fqc_link_tick(p, c, ctx->now) || unlikely(changed && p->ls))
		fqc_link_shed(q, p, c, ctx);
	return c;
}

static uint16_t
fqc_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	struct fqc_priv *p = priv(q);
	const struct fqc_conf *c = fqc_sync(q, p, ctx);
	uint32_t nb = RTE_MIN(c->flows, p->nb_flows);
	uint16_t i;

	if (p->ls != NULL && n > 0 && p->qlen == 0 && p->stash == NULL) {
		/* back from idle: served as the least served shard is,
		 * not owed the time it had nothing to send */
		uint64_t min = fqc_link_min(p, ctx->now);

		if (min != UINT64_MAX)
			p->vt = RTE_MAX(p->vt, min);
	}
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct shp_meta *meta = shp_meta(m);
		uint32_t idx = (uint32_t)(((uint64_t)fqc_hash(m, p->perturb) *
					   nb) >> 32);
		struct fqc_flow *f = &p->flows[idx];
		uint32_t len = rte_pktmbuf_pkt_len(m);

		meta->next = NULL;
		if (f->tail != NULL) {
			f->tail->next = meta;
		} else {
			f->head = meta;
			p->active++;
		}
		f->tail = meta;
		p->backlogs[idx] += len;
		p->fat = RTE_MAX(p->fat, p->backlogs[idx]);
		p->backlog += len;
		p->memory += fqc_truesize(m);
		p->qlen++;
		if (!f->listed) {
			f->listed = true;
			f->deficit = (int32_t)c->quantum;
			list_add_tail(&p->new_flows, f);
			FQX(q, ctx, FQC_XS_NEW_FLOWS)++;
		}
		/* on a link's shards: the link's limits, shed by the
		 * shard holding its fattest bucket */
		if (unlikely(fqc_over(p, c)) && fqc_link_mine(p, ctx->now))
			fqc_drop_fat(q, p, c, fqc_overmemory(p, c), ctx);
	}
	fqc_gauges(q, p, c, ctx);
	/* all were taken in; an overflow drops from the fattest bucket's
	 * head, whichever packets those are */
	return n;
}

static uint16_t
fqc_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	    struct shp_ctx *ctx)
{
	struct fqc_priv *p = priv(q);
	const struct fqc_conf *c = fqc_sync(q, p, ctx);
	uint64_t bytes = 0;
	uint16_t got = 0;

	if (p->stash != NULL && n > 0) {
		pkts[got++] = p->stash;
		bytes += rte_pktmbuf_pkt_len(p->stash);
		p->stash = NULL;
	}
	while (got < n) {
		struct rte_mbuf *m = fqc_dequeue_one(q, p, c, ctx);

		if (m == NULL)
			break;
		bytes += rte_pktmbuf_pkt_len(m);
		pkts[got++] = m;
	}
	fqc_gauges(q, p, c, ctx);
	ctx->bytes = bytes;
	return got;
}

/* Linux qdisc_peek_dequeued: the packet is taken (CoDel has judged it)
 * and kept for the next dequeue. */
static struct rte_mbuf *
fqc_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct fqc_priv *p = priv(q);

	const struct fqc_conf *c = fqc_sync(q, p, ctx);

	if (p->stash == NULL) {
		p->stash = fqc_dequeue_one(q, p, c, ctx);
		fqc_gauges(q, p, c, ctx);
	}
	return p->stash;
}

static uint64_t
fqc_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	const struct fqc_priv *p = priv(q);

	return p->qlen > 0 || p->stash != NULL ? ctx->now : UINT64_MAX;
}

/* No bucket listed: a packet would be served at once, and the lists'
 * bookkeeping (an emptied bucket's last visit) is done. */
static bool
fqc_idle(const struct shp_qdisc *q)
{
	const struct fqc_priv *p = priv(q);

	return p->new_flows.head == NULL && p->old_flows.head == NULL &&
	       p->stash == NULL;
}

static void
fqc_flush(struct fqc_priv *p, struct shp_ctx *ctx)
{
	uint32_t i;

	if (p->stash != NULL) {
		shp_drop(ctx, SHP_DROP_FLUSHED, p->stash);
		p->stash = NULL;
	}
	for (i = 0; i < p->nb_flows; i++) {
		struct fqc_flow *f = &p->flows[i];
		struct rte_mbuf *m;

		while ((m = flow_pop(p, f)) != NULL)
			shp_drop(ctx, SHP_DROP_FLUSHED, m);
		f->listed = false;
		f->deficit = 0;
		flow_vars_init(f);
	}
	p->new_flows.head = p->new_flows.tail = NULL;
	p->old_flows.head = p->old_flows.tail = NULL;
}

static void
fqc_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct fqc_priv *p = priv(q);

	fqc_flush(p, ctx);
	fqc_gauges(q, p, __atomic_load_n(&p->conf, __ATOMIC_ACQUIRE), ctx);
}

static int
fqc_init(struct shp_qdisc *q, const void *conf)
{
	const struct fqc_conf *c = conf != NULL ? conf : &fqc_defaults;
	struct fqc_priv *p = priv(q);
	int socket = q->env != NULL ? q->env->socket :
		     q->pool != NULL ? q->pool->socket_id : SOCKET_ID_ANY;

	p->nb_flows = c->flows;
	p->flows = rte_zmalloc_socket("fq_codel_flows",
				      sizeof(*p->flows) * c->flows,
				      RTE_CACHE_LINE_SIZE, socket);
	p->backlogs = rte_zmalloc_socket("fq_codel_backlogs",
					 sizeof(*p->backlogs) * c->flows,
					 RTE_CACHE_LINE_SIZE, socket);
	if (p->flows == NULL || p->backlogs == NULL) {
		rte_free(p->flows);
		rte_free(p->backlogs);
		errno = ENOMEM;
		return -1;
	}
	/* the kernel draws it at random; an emulator run is reproducible:
	 * from the seed and the port, as netem's streams */
	p->perturb = (uint32_t)shp_rand_key(shp_rand_key(c->seed, q->port),
					    FQC_DEFAULT_SEED);
	p->ls = shp_link_queue(q);
	if (p->ls != NULL) {
		p->shard = q->env->shard;
		p->nb_shards = q->env->nb_shards;
		p->rate = &q->env->link->rate;
	}
	p->fat_ok = true;   /* empty: 0 */
	p->conf = c;
	p->seen = c->hdr.id;
	return 0;
}

static const void *
fqc_change(struct shp_qdisc *q, const void *conf)
{
	const struct fqc_conf *old = priv(q)->conf;

	if (conf == NULL)
		conf = &fqc_defaults;
	__atomic_store_n(&priv(q)->conf, (const struct fqc_conf *)conf,
			 __ATOMIC_RELEASE);
	return old == &fqc_defaults ? NULL : old;
}

/* With no ctx there is nowhere to count them: reset before destroying
 * a stage that may hold packets (shp_qdisc_reset_all). */
static void
fqc_fini(struct shp_qdisc *q)
{
	struct fqc_priv *p = priv(q);
	uint32_t i;

	if (p->stash != NULL)
		rte_pktmbuf_free(p->stash);
	for (i = 0; i < p->nb_flows; i++) {
		struct rte_mbuf *m;

		while ((m = flow_pop(p, &p->flows[i])) != NULL)
			rte_pktmbuf_free(m);
	}
	rte_free(p->flows);
	rte_free(p->backlogs);
}

static void
fqc_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	const struct fqc_priv *p = priv(q);

	st->qlen = p->qlen + (p->stash != NULL);
	st->backlog = p->backlog +
		(p->stash != NULL ? rte_pktmbuf_pkt_len(p->stash) : 0);
}

static int fqc_format(const void *conf, char *buf, size_t len);

static void
fqc_dump(const struct shp_qdisc *q, FILE *f)
{
	const struct fqc_priv *p = priv(q);
	struct fqc_conf c = *__atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
	char buf[256];

	c.flows = RTE_MIN(c.flows, p->nb_flows);   /* the ones in use */
	fqc_format(&c, buf, sizeof(buf));
	fprintf(f, "%s", buf);
}

const struct shp_qdisc_ops shp_fq_codel_ops = {
	.id = "fq_codel",
	.priv_size = sizeof(struct fqc_priv),
	.mp_enqueue = false,
	.init = fqc_init,
	.change = fqc_change,
	.enqueue = fqc_enqueue,
	.dequeue = fqc_dequeue,
	.peek = fqc_peek,
	.next_time = fqc_next_time,
	.idle = fqc_idle,
	.reset = fqc_reset,
	.stats = fqc_stats,
	.dump = fqc_dump,
	.fini = fqc_fini,
};

/* The control plane: q_fq_codel.c's grammar (exact keywords). */

#define FQC_MAX_WORDS 32
#define FQC_MAX_LEN   512

static int
time_arg(struct shp_tcargs *a, const char *kw, uint64_t *ns, bool nonzero)
{
	/* a bare number is microseconds, as tc's get_time */
	if (shp_tc_next(a, "a time") ||
	    shp_tc_time_bare(a, kw, SHP_TC_BARE_US, ns))
		return -1;
	if (nonzero && *ns == 0)
		return shp_tc_fail(a, "%s: '%s' must be more than 0", kw,
				   shp_tc_cur(a));
	return 0;
}

static int
u32_arg(struct shp_tcargs *a, const char *kw, uint32_t min, uint32_t max,
	uint32_t *v)
{
	if (shp_tc_next(a, "a number") || shp_tc_u32(a, kw, v))
		return -1;
	if (*v < min || *v > max)
		return shp_tc_fail(a, "%s: '%s' must be within %" PRIu32
				   "..%" PRIu32, kw, shp_tc_cur(a), min, max);
	return 0;
}

static int
fqc_words(struct shp_tcargs *a, struct fqc_conf *c)
{
	for (a->i = 0; a->i < a->argc; a->i++) {
		const char *w = shp_tc_cur(a);

		if (strcmp(w, "limit") == 0) {
			/* also as tc prints it: "10240p" */
			if (a->i + 1 < a->argc) {
				char *v = a->argv[a->i + 1];
				size_t l = strlen(v);

				if (l > 1 && v[l - 1] == 'p')
					v[l - 1] = '\0';
			}
			if (u32_arg(a, "limit", 1, UINT32_MAX, &c->limit))
				return -1;
		} else if (strcmp(w, "flows") == 0) {
			if (u32_arg(a, "flows", 1, FQC_FLOWS_MAX, &c->flows))
				return -1;
			c->flows_set = true;
		} else if (strcmp(w, "quantum") == 0) {
			if (u32_arg(a, "quantum", FQC_QUANTUM_MIN,
				    FQC_QUANTUM_MAX, &c->quantum))
				return -1;
		} else if (strcmp(w, "target") == 0) {
			if (time_arg(a, "target", &c->target, false))
				return -1;
		} else if (strcmp(w, "interval") == 0) {
			if (time_arg(a, "interval", &c->interval, true))
				return -1;
		} else if (strcmp(w, "ce_threshold") == 0) {
			if (time_arg(a, "ce_threshold", &c->ce_threshold,
				     false))
				return -1;
		} else if (strcmp(w, "memory_limit") == 0) {
			if (shp_tc_next(a, "a size") ||
			    shp_tc_size(a, "memory_limit", &c->memory_limit))
				return -1;
			if (c->memory_limit == 0 ||
			    c->memory_limit > FQC_MEMORY_MAX)
				return shp_tc_fail(a, "memory_limit: '%s' must "
						   "be within 1b..2gb",
						   shp_tc_cur(a));
		} else if (strcmp(w, "drop_batch") == 0) {
			/* Linux takes 0 as 1 */
			if (u32_arg(a, "drop_batch", 0, UINT32_MAX,
				    &c->drop_batch))
				return -1;
			c->drop_batch = RTE_MAX(c->drop_batch, 1u);
		} else if (strcmp(w, "ecn") == 0) {
			c->ecn = true;
		} else if (strcmp(w, "noecn") == 0) {
			c->ecn = false;
		} else {
			return shp_tc_fail(a, "unknown word '%s' (limit, "
					   "flows, target, interval, quantum, "
					   "ecn, noecn, ce_threshold, "
					   "memory_limit, drop_batch)", w);
		}
	}
	return 0;
}

static void *
fqc_parse(const char *args, const struct shp_kind_env *env, char *err)
{
	struct shp_tcargs a = { .qdisc = "fq_codel", .err = err };
	char buf[FQC_MAX_LEN], *argv[FQC_MAX_WORDS];
	struct fqc_conf c = fqc_defaults, *out;

	err[0] = '\0';
	if (shp_tc_split(&a, args, buf, sizeof(buf), argv,
			 FQC_MAX_WORDS) < 0 || fqc_words(&a, &c) < 0)
		return NULL;
	if (env != NULL && env->seed_set)
		c.seed = env->seed;
	out = malloc(sizeof(*out));
	if (out == NULL) {
		snprintf(err, SHP_ERR_LEN, "fq_codel: out of memory");
		return NULL;
	}
	c.hdr.id = shp_conf_new_id();
	*out = c;
	return out;
}

/* Every parameter, in tc's order of `tc qdisc show`, so that the text
 * parses back to the same conf whatever the defaults become. */
static int
fqc_format(const void *conf, char *buf, size_t len)
{
	const struct fqc_conf *c = conf;
	char t[32], i[32], m[32], ce[48] = "", db[32] = "";

	shp_fmt_time(t, sizeof(t), c->target);
	shp_fmt_time(i, sizeof(i), c->interval);
	shp_fmt_size(m, sizeof(m), c->memory_limit);
	if (c->ce_threshold != FQC_CE_OFF) {
		char v[32];

		shp_fmt_time(v, sizeof(v), c->ce_threshold);
		snprintf(ce, sizeof(ce), " ce_threshold %s", v);
	}
	if (c->drop_batch != FQC_DROP_BATCH)
		snprintf(db, sizeof(db), " drop_batch %" PRIu32,
			 c->drop_batch);
	return snprintf(buf, len, "limit %" PRIu32 " flows %" PRIu32
			" quantum %" PRIu32 " target %s%s interval %s "
			"memory_limit %s %s%s", c->limit, c->flows, c->quantum,
			t, ce, i, m, c->ecn ? "ecn" : "noecn", db);
}

/* As tc prints fq_codel: the limit in packets ("10240p"), times as its
 * sprint_time, ecn only when on, drop_batch always. */
static int
fqc_tc_print(const char *args, const struct shp_kind_env *env,
	     const char **tc_name, char *buf, size_t len)
{
	char err[SHP_ERR_LEN], t[32], i[32], m[32], ce[48] = "";
	struct fqc_conf *c = fqc_parse(args, env, err);
	int n;

	RTE_SET_USED(tc_name);
	if (c == NULL)
		return snprintf(buf, len, "%s", args);   /* not ours */
	shp_fmt_tc_time(t, sizeof(t), c->target, true);
	shp_fmt_tc_time(i, sizeof(i), c->interval, true);
	shp_fmt_size(m, sizeof(m), c->memory_limit);
	if (c->ce_threshold != FQC_CE_OFF) {
		char v[32];

		shp_fmt_tc_time(v, sizeof(v), c->ce_threshold, true);
		snprintf(ce, sizeof(ce), " ce_threshold %s", v);
	}
	n = snprintf(buf, len, "limit %" PRIu32 "p flows %" PRIu32
		     " quantum %" PRIu32 " target %s%s interval %s "
		     "memory_limit %s%s drop_batch %" PRIu32, c->limit,
		     c->flows, c->quantum, t, ce, i, m,
		     c->ecn ? " ecn" : "", c->drop_batch);
	free(c);
	return n;
}

/* its limit in packets (memory_limit, in bytes of buffers, may stop it
 * sooner: the limit is the bound that holds whatever the frames) */
static uint64_t
fqc_capacity(const void *conf, const struct shp_kind_env *env)
{
	const struct fqc_conf *c = conf;

	RTE_SET_USED(env);
	return c != NULL ? c->limit : FQC_LIMIT_DEFAULT;
}

/* The flow table is sized when the stage is made: a running stage
 * cannot take another size (Linux refuses it too), so a change that
 * leaves flows out (a `clear`, tc's defaults) keeps the table's. */
static int
fqc_check_change(const void *cur, void *next, char *err)
{
	const struct fqc_conf *a = cur;
	struct fqc_conf *b = next;

	if (a == NULL || b == NULL)
		return 0;
	if (!b->flows_set) {
		b->flows = a->flows;
	} else if (a->flows != b->flows) {
		snprintf(err, SHP_ERR_LEN, "fq_codel: flows cannot change "
			 "while running (%u now): leave it out to keep it, "
			 "or restart", a->flows);
		return -1;
	}
	return 0;
}

/* ECN marking on or off */
static const char *const fq_codel_exclusive[] = { "ecn", "noecn", NULL };

const struct shp_kind shp_kind_fq_codel = {
	.check_change = fqc_check_change,
	.name = "fq_codel",
	.slot = SHP_SLOT_QUEUE,
	.ops = &shp_fq_codel_ops,
	.parse = fqc_parse,
	.format = fqc_format,
	.tc_print = fqc_tc_print,
	.conf_free = free,
	.capacity = fqc_capacity,
	.drops = fq_codel_drops,
	.xstats = fq_codel_xstats,
	.usage = "fq_codel [limit PACKETS] [flows N] [target TIME] "
		 "[interval TIME] [quantum BYTES] [ecn|noecn] "
		 "[ce_threshold TIME] [memory_limit BYTES] "
		 "[drop_batch N]",
	.exclusive = fq_codel_exclusive,
	.shards_note = "its DRR is the link's within a quantum a shard (a "
		       "shard may run one ahead), and a new flow goes first "
		       "within its own shard only",
};
