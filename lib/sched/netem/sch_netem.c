/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem: network emulator stage (Linux sch_netem semantics).
 *
 * The root of a port's chain: dequeue pulls what the child (tbf or bands)
 * releases now, passes it through the impairments in the kernel's order
 *
 *     duplicate decision, loss (or ECN mark), corrupt, limit, reorder,
 *     time_to_send, insert into the time queue (netem_tq.h)
 *
 * and returns the packets whose time_to_send has come, in time order.
 * The stage never reads the clock; ctx->now (ns) is the only time.
 *
 * Where we do better than the kernel (see docs/netem.md): every random
 * choice comes from seeded per-port streams, one per impairment, each
 * keyed by the packet's arrival number (so turning one impairment on does
 * not change another's decisions for any packet); correlated
 * probabilities keep their mean (two-state Markov chains); delay correlation
 * keeps the distribution (Gaussian copula); `noreorder` gives jitter without
 * reordering; slot timing depends on packet times only, not on when we are
 * polled; corrupt reaches every byte of multi-segment packets.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "netem_trace.h"
#include "netem_tq.h"
#include "shp_budget.h"
#include "shp_kind.h"
#include "shp_meta.h"
#include "shp_netem.h"
#include "shp_link.h"
#include "shp_pkthdr.h"
#include "shp_qdisc.h"
#include "shp_rand.h"

/* Random streams, one per impairment, all derived from (seed, port). The
 * per-packet ones are counter-based (netem_rand_at); the slot stream,
 * drawn per slot, is sequential. */
enum {
	RS_LOSS,
	RS_DUP,
	RS_CORRUPT,
	RS_REORDER,
	RS_DELAY,
	RS_SLOT,
	RS_OUTAGE,      /* sequential: up and down period lengths */
	RS_BER,
	RS_MISORDER,
	RS_MAX
};

/* 4-state loss model states (netem numbering). */
enum {
	CLG_TX_GAP = 1,     /* transmitted, gap period */
	CLG_TX_BURST = 2,   /* transmitted, burst period */
	CLG_LOST_BURST = 3,
	CLG_LOST_GAP = 4,   /* isolated loss */
};

#define GE_GOOD 0
#define GE_BAD  1

/* the kind's drop causes, each name beside its enum (shp_kind.h) */
#define NETEM_DROPS(X) \
	/* the delay queue was full */ \
	X(NETEM_DROP_LIMIT, "netem_limit") \
	/* the loss model */ \
	X(NETEM_DROP_LOST, "lost") \
	/* outage: the link was down (a schedule's `link down` too) */ \
	X(NETEM_DROP_LINK_DOWN, "link_down") \
	/* ber RATE drop */ \
	X(NETEM_DROP_BER, "lost_ber") \
	/* the port's delay stages held its share of the pool */ \
	X(NETEM_DROP_SHARE, "pool_share") \
	/* a frame the byte store held found the pool empty when it was \
	 * due: nothing to send it in */ \
	X(NETEM_DROP_STORE_NO_MBUF, "store_no_mbuf")
enum { NETEM_DROPS(SHP_CAUSE_ENUM) };
static const char *const netem_drops[] = {
	NETEM_DROPS(SHP_CAUSE_NAME) NULL
};

/* its statistics, likewise */
#define NETEM_XSTATS(X) \
	X(NETEM_XS_QUEUED, "queued", \
	  SHP_XS_GAUGE | SHP_XS_QLEN | SHP_XS_DELAYED, "netem_queued") \
	X(NETEM_XS_DUPLICATED, "duplicated", SHP_XS_CREATED, "duplicated") \
	X(NETEM_XS_CORRUPTED, "corrupted", 0, "corrupted") \
	X(NETEM_XS_REORDERED, "reordered", 0, "reordered") \
	X(NETEM_XS_ECN_MARKED, "ecn_marked", 0, "ecn_marked") \
	/* bits `ber` flipped (its packets count in corrupted) */ \
	X(NETEM_XS_BER_BITS, "ber_bits", 0, NULL) \
	/* the byte store: frames and bytes of memory held now, the most \
	 * bytes ever held, frames kept as mbufs for want of room */ \
	X(NETEM_XS_STORE_FRAMES, "store_frames", SHP_XS_GAUGE, NULL) \
	X(NETEM_XS_STORE_BYTES, "store_bytes", SHP_XS_GAUGE, NULL) \
	X(NETEM_XS_STORE_HWM, "store_hwm", SHP_XS_GAUGE, NULL) \
	X(NETEM_XS_STORE_FULL, "store_full", 0, NULL) \
	/* misorder chose a frame with no room to hold it (NETEM_MIS_CAP \
	 * held, or a class's stage, which holds none) */ \
	X(NETEM_XS_MISORDER_SKIPPED, "misorder_skipped", 0, NULL)
enum { NETEM_XSTATS(SHP_XSTAT_ENUM) };
static const struct shp_xstat_desc netem_xstats[] = {
	NETEM_XSTATS(SHP_XSTAT_DESC) { NULL, 0, NULL }
};

/*
 * The Markov chains of a conf: the loss model's state, the last event of
 * each correlated probability, and reorder's gap counter (originals since
 * the last reorder). Every original advances them, lost or not; on a
 * link's shards, every original of the link, in the order of its
 * positions (netem_link_claim).
 */
struct netem_chains {
	bool loss_last, dup_last, corrupt_last, reorder_last, misorder_last;
	uint8_t clg_state;
	uint32_t counter;
};

/* Frames timed on a shared link in one claim, at most (a burst and its
 * copies; more are claimed in several). */
#define NETEM_PEND_MAX 64

struct netem_sched_data {
	const struct shp_netem_conf *conf; /* published by change() */
	const uint8_t *drop_slot, *xstat_slot;   /* the kind's counters */
	uint64_t seen;      /* id of the conf the state below is for, 0: off */
	struct shp_tq tq;
	/* a calendar the control side made for tq (shp_netem_grow), taken
	 * by the owner at its next enqueue: no allocation on the data path */
	struct shp_tq_cal *offer;
	uint32_t default_limit;
	/* the rates in front (shp_stage_env's gate_rate, line_rate) the
	 * store's bound was last set for: a new one sets it anew */
	uint64_t gate_seen, line_seen;
	/* the port's bound (shp_stage_env's held, hold_cap) and what of
	 * *held is this stage's: synced with tq.qlen once per call */
	uint32_t *held, hold_cap, counted;
	/* a link's shards (nb_shards > 1; nl_lines NULL otherwise): the
	 * limit and the pool's share are the link's. This shard's line of
	 * shp_link_shared's netem (nl_lines[nl_shard]) carries what it
	 * last published (nl_pub, written when it changes, once a call);
	 * the others' sums of it, and of their held (nl_held: the env's
	 * link_held, NULL without a share), are read once a poll: at
	 * ctx->now nl_at (nl_have: read at all) */
	struct shp_link_fig *nl_lines;
	const uint32_t *nl_held;
	uint32_t nl_stride;
	uint16_t nl_shard, nl_nb;
	bool nl_have;
	uint64_t nl_at;
	uint64_t nl_pub[2];
	uint64_t nl_others[2];
	uint64_t nl_held_others;

	/* per-conf state, owned by the dequeuing lcore, reset on change */
	struct shp_rand rs[RS_MAX];
	uint64_t key[RS_MAX];       /* counter-based stream keys */
	uint64_t arrivals;          /* original packets seen (their number) */
	struct netem_chains ch;
	/* on a link's shards (lp_on: a conf that decides by position,
	 * netem_link_positions): the originals of an enqueue call take the
	 * link's positions [arrivals, lp_end), claimed (lp_claimed) from
	 * its shp_link_chain */
	bool lp_on, lp_claimed;
	uint64_t lp_end;
	/* deterministic loss: k N mod M (pattern), k mod PERIOD (burst),
	 * k mod length (sequence), k the originals seen: a running
	 * remainder, so that no packet pays a division */
	uint64_t det_pos;
	/* accumulate: t0, the window end last rounded to, and the latest
	 * departure before rounding (rate and noreorder count from it) */
	bool acc_armed;
	uint64_t acc_t0, acc_end, acc_last;
	double delay_z;             /* latent normal of the delay copula */
	/* inorder: delay_z is a smooth process of the arrival time (its
	 * slope delay_dz, per ns), at the latest original's arrival */
	bool inorder_armed;
	uint64_t inorder_at;
	double delay_dz;
	struct {
		bool armed;         /* a slot has been drawn */
		uint64_t next;      /* next slot instant */
		int64_t packets_left;
		int64_t bytes_left;
	} slot;
	struct {
		bool armed;         /* the first period has started */
		bool up;
		uint64_t next;      /* when the current period ends */
	} outage;
	/* a link's shards serialise once (`rate`, link_serial.h): the
	 * link's clock (NULL: the queue's tail is the frame before), and
	 * the frames of this enqueue call that wait to be timed on it
	 * together, at its end, with one claim */
	struct shp_link_shared *link;   /* (NULL: this netem's own) */
	/* the link's outage timeline and slots are drawn from the port's
	 * outage and slot streams, which start here */
	uint64_t outage_x0;
	uint64_t slot_x0;
	uint16_t npend;
	struct rte_mbuf *pend[NETEM_PEND_MAX];
	uint64_t pend_base[NETEM_PEND_MAX];
	uint64_t pend_cost[NETEM_PEND_MAX];
	/* misorder: frames held until `depth` frames that arrived after
	 * them entered the time queue (they all wait for the same count,
	 * so a FIFO), at most NETEM_MIS_CAP; none for a lean stage */
	struct netem_mis *mis;
	uint32_t mis_head, mis_n;
	uint64_t mis_direct;        /* frames that entered the queue unheld */
	/* `trace`: the stage's place in it, and the conf as the row
	 * trace_row (UINT32_MAX: none yet) sets it (netem_enqueue_trace) */
	struct shp_netem_trace_pos trace;
	uint32_t trace_row;
	struct shp_netem_conf trace_conf;
};

/* a frame misorder holds: until mis_direct reaches start + depth, or
 * its deadline */
struct netem_mis {
	struct rte_mbuf *m;
	uint64_t start;
	uint64_t deadline;
	int64_t delay;
	uint32_t depth;
};
#define NETEM_MIS_CAP 512

uint32_t shp_netem_tq_buckets = SHP_NETEM_TQ_BUCKETS;

/* netem's statistic i in the calling lcore's block */
#define NX(p, ctx, i) ((ctx)->ctr->xstats[(p)->xstat_slot[i]])

static inline struct netem_sched_data *
netem_priv(const struct shp_qdisc *q)
{
	return q->priv;
}

/* Packets of the queue that hold an mbuf of the pool: the stored ones
 * hold none; those waiting to be timed on a shared link (npend, only
 * within an enqueue call) hold theirs. */
static inline uint32_t
netem_mbufs_held(const struct netem_sched_data *p)
{
	return p->tq.qlen + p->npend + p->mis_n -
	       (uint32_t)p->tq.st_stats.frames;
}

static inline const struct shp_netem_conf *
netem_conf(struct netem_sched_data *p)
{
	return __atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------- random */

/*
 * The generator of stream `rs` for original packet n (its arrival number
 * under this conf), or for the copy of original n: copies draw from keys
 * of their own, so a copy never shifts an original's draws.
 */
static inline void
netem_rand_at(const struct netem_sched_data *p, int rs, bool copy,
	      uint64_t n, struct shp_rand *r)
{
	shp_rand_at(r, p->key[rs] ^ (copy ? SHP_RAND_GAMMA : 0), n);
}

/* An event of a correlated probability; *last (the chain's state) is
 * advanced only when adv (originals advance it, copies only read it).
 * Uncorrelated, the chance does not read *last: a burst's draws then do
 * not wait on one another (the state is still written, for a later
 * profile's reading of it is the same). */
static inline bool
netem_chance(struct shp_rand *r, bool *last, const struct shp_netem_prob *pr,
	     bool adv)
{
	double p = pr->p_after_hit == pr->p_after_miss ? pr->p_after_miss :
		   *last ? pr->p_after_hit : pr->p_after_miss;
	bool hit = shp_rand_unit(r) < p;

	if (adv)
		*last = hit;
	return hit;
}

/* Uniform in [0, n) for 64-bit n. */
static inline uint64_t
rand_below64(struct shp_rand *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)shp_rand_u64(r) * n) >> 64);
}

/* Standard normal, Marsaglia's polar method (one of the pair: a packet's
 * stream serves that packet only). */
static double
rand_normal(struct shp_rand *r)
{
	double u, v, s;

	do {
		u = 2 * shp_rand_unit(r) - 1;
		v = 2 * shp_rand_unit(r) - 1;
		s = u * u + v * v;
	} while (s >= 1 || s == 0);
	return u * sqrt(-2 * log(s) / s);
}

/* mu + sigma * t / SCALE, rounded half away from zero like tabledist(). */
static inline int64_t
dist_scale(int64_t mu, int64_t sigma, int16_t t)
{
	int64_t x = sigma * t;

	x += x >= 0 ? SHP_NETEM_DIST_SCALE / 2 : -SHP_NETEM_DIST_SCALE / 2;
	return mu + x / SHP_NETEM_DIST_SCALE;
}

/*
 * A value of dist(mu, sigma): uniform in [mu - sigma, mu + sigma) without a
 * table. With u (in [0,1)) given, the value is the quantile at u (copula);
 * otherwise it is drawn from r.
 */
static int64_t
dist_value(const struct shp_netem_dist *d, int64_t mu, int64_t sigma,
	   struct shp_rand *r, const double *u)
{
	uint32_t i;

	if (sigma == 0)
		return mu;
	if (d == NULL) {
		uint64_t off = u != NULL ? (uint64_t)(*u * 2 * sigma) :
			rand_below64(r, 2 * (uint64_t)sigma);

		return mu - sigma + (int64_t)off;
	}
	if (u != NULL) {
		i = (uint32_t)(*u * d->size);
		if (i >= d->size)
			i = d->size - 1;
	} else {
		i = shp_rand_below(r, d->size);
	}
	return dist_scale(mu, sigma, d->table[i]);
}

/*
 * inorder: the latent normal is a Matern-3/2 Gaussian process of the
 * arrival time, sampled exactly at each original's arrival (a state of
 * value and slope, advanced over the gap by its transition, with the
 * noise that keeps it stationary). Every sample is standard normal, so
 * the delay keeps its distribution, mean and deviation (the copula); the
 * process is smooth with a length scale of 3 sqrt(3) jitters, so the
 * delay's slope has a deviation of a third (departures keep their order
 * unless the delay falls faster than time passes: 3 sigma) and frames
 * closer than the jitter are correlated 0.95 or more. The guard of
 * netem_time_to_send, max with the latest departure, holds back the rare
 * rest (about 0.2% of frames at 10,000 a second under 2 ms of jitter).
 * The first sample is drawn: the process starts stationary. A copy takes
 * its original's latent (a gap of 0).
 */
static double
netem_inorder_z(struct netem_sched_data *p, const struct shp_netem_conf *c,
		bool copy, uint64_t at, struct shp_rand *r)
{
	double lam = 1.0 / (3.0 * (double)c->jitter);   /* sqrt(3) / length */
	double z = p->delay_z, v = p->delay_dz;

	if (!p->inorder_armed) {
		z = rand_normal(r);
		v = lam * rand_normal(r);
	} else if (at > p->inorder_at) {
		double d = (double)(at - p->inorder_at), L = lam * d;
		double e = exp(-L), l2 = lam * lam;
		/* A = e [[1 + L, d], [-l2 d, 1 - L]]; stationary P =
		 * diag(1, l2); the step's noise Q = P - A P A' */
		double a11 = e * (1 + L), a12 = e * d;
		double a21 = -e * l2 * d, a22 = e * (1 - L);
		double q11 = 1 - (a11 * a11 + a12 * a12 * l2);
		double q21 = -(a21 * a11 + a22 * a12 * l2);
		double q22 = l2 - (a21 * a21 + a22 * a22 * l2);
		double l11 = q11 > 0 ? sqrt(q11) : 0;
		double m21 = l11 > 0 ? q21 / l11 : 0;
		double m22 = q22 - m21 * m21 > 0 ? sqrt(q22 - m21 * m21) : 0;
		double e1 = rand_normal(r), e2 = rand_normal(r);
		double nz = a11 * z + a12 * v + l11 * e1;

		v = a21 * z + a22 * v + m21 * e1 + m22 * e2;
		z = nz;
	}
	if (!copy) {
		p->inorder_armed = true;
		p->inorder_at = at;
		p->delay_z = z;
		p->delay_dz = v;
	}
	return z;
}

/*
 * Delay. With a correlation rho, a latent standard normal follows the AR(1)
 * z' = rho z + sqrt(1 - rho^2) e, and the delay is the distribution's
 * quantile at Phi(z'): consecutive delays are correlated (exactly rho for
 * normal) while mean, deviation and shape stay those configured, unlike
 * netem's averaging of uniforms (which does nothing in current kernels:
 * docs/netem.md). The chain advances with originals only (not for a
 * copy). The draws are from the delay stream at n (netem_rand_at), made
 * only when there is a jitter to draw.
 * (inorder: netem_inorder_z.)
 */
static int64_t
netem_delay(struct netem_sched_data *p, const struct shp_netem_conf *c,
	    bool copy, uint64_t n, uint64_t at)
{
	double rho = c->delay_corr, u, z;
	struct shp_rand r;

	if (c->jitter == 0)
		return (int64_t)c->latency;
	netem_rand_at(p, RS_DELAY, copy, n, &r);
	if (c->inorder) {
		z = netem_inorder_z(p, c, copy, at, &r);
		u = 0.5 * erfc(-z / M_SQRT2);
		return dist_value(c->dist, c->latency, c->jitter, &r, &u);
	}
	if (rho == 0)
		return dist_value(c->dist, c->latency, c->jitter, &r, NULL);
	z = rho * p->delay_z + sqrt(1 - rho * rho) * rand_normal(&r);
	if (!copy)
		p->delay_z = z;
	u = 0.5 * erfc(-z / M_SQRT2);
	return dist_value(c->dist, c->latency, c->jitter, &r, &u);
}

/* ------------------------------------------------------------------ loss */

static bool
loss_4state(uint8_t *state, const struct shp_netem_conf *c,
	    struct shp_rand *r)
{
	double u = shp_rand_unit(r);

	switch (*state) {
	case CLG_TX_GAP:
		if (u < c->state.p14) {
			*state = CLG_LOST_GAP;
			return true;
		}
		if (u < c->state.p14 + c->state.p13) {
			*state = CLG_LOST_BURST;
			return true;
		}
		return false;
	case CLG_TX_BURST:
		if (u < c->state.p23) {
			*state = CLG_LOST_BURST;
			return true;
		}
		return false;
	case CLG_LOST_BURST:
		if (u < c->state.p32) {
			*state = CLG_TX_BURST;
			return false;
		}
		if (u < c->state.p32 + c->state.p31) {
			*state = CLG_TX_GAP;
			return false;
		}
		return true;
	case CLG_LOST_GAP:
	default:
		*state = CLG_TX_GAP;
		return false;
	}
}

/* Gilbert-Elliott: the state the packet found decides its loss chance. */
static bool
loss_gilbert_elliott(uint8_t *state, const struct shp_netem_conf *c,
		     struct shp_rand *r)
{
	double move = shp_rand_unit(r), lose = shp_rand_unit(r);

	if (*state == GE_GOOD) {
		if (move < c->ge.p)
			*state = GE_BAD;
		return lose < c->ge.k1;
	}
	if (move < c->ge.r)
		*state = GE_GOOD;
	return lose < c->ge.h1;
}

/* A loss event; the model's state advances only when adv. */
static inline bool
netem_loss_event(struct netem_chains *ch, const struct shp_netem_conf *c,
		 struct shp_rand *r, bool adv)
{
	uint8_t st = ch->clg_state;
	bool lost;

	switch (c->loss_model) {
	case SHP_NETEM_LOSS_RANDOM:
		return netem_chance(r, &ch->loss_last, &c->loss, adv);
	case SHP_NETEM_LOSS_STATE:
		lost = loss_4state(&st, c, r);
		break;
	case SHP_NETEM_LOSS_GEMODEL:
		lost = loss_gilbert_elliott(&st, c, r);
		break;
	case SHP_NETEM_LOSS_NONE:
	default:
		return false;
	}
	if (adv)
		ch->clg_state = st;
	return lost;
}

/*
 * Deterministic loss of the next original (pattern, burst, sequence):
 * one add and one compare, or one lookup, per original. pattern: with
 * r = kN mod M, floor((k+1)N/M) - floor(kN/M) = floor((r + N)/M), which
 * is 1 iff r + N >= M since N <= M.
 */
static inline bool
netem_loss_det(struct netem_sched_data *p, const struct shp_netem_conf *c)
{
	uint64_t k = p->det_pos;
	bool lost;

	switch (c->loss_model) {
	case SHP_NETEM_LOSS_PATTERN:
		k += c->det.n;
		lost = k >= c->det.m;
		p->det_pos = lost ? k - c->det.m : k;
		return lost;
	case SHP_NETEM_LOSS_BURST:
		lost = k >= c->det.m - c->det.n;
		p->det_pos = k + 1 == c->det.m ? 0 : k + 1;
		return lost;
	case SHP_NETEM_LOSS_SEQUENCE:
		lost = c->seq[k];
		p->det_pos = k + 1 == c->seq_len ? 0 : k + 1;
		return lost;
	default:
		return false;
	}
}

static inline bool
netem_loss_is_det(const struct shp_netem_conf *c)
{
	return c->loss_model >= SHP_NETEM_LOSS_PATTERN;
}

/* ------------------------------------------------------- packet surgery */

/*
 * Make m's data safe to write: a clone or a shared buffer is replaced by a
 * private copy (the only allocation besides duplicates, and only for
 * packets someone else also holds). NULL if the pool is empty (m freed).
 */
static struct rte_mbuf *
netem_make_writable(struct shp_qdisc *q, struct rte_mbuf *m)
{
	struct rte_mbuf *seg, *c;

	for (seg = m; seg != NULL; seg = seg->next)
		if (!RTE_MBUF_DIRECT(seg) || rte_mbuf_refcnt_read(seg) != 1)
			break;
	if (seg == NULL)
		return m;
	c = q->pool != NULL ?
		rte_pktmbuf_copy(m, q->pool, 0, UINT32_MAX) : NULL;
	if (c != NULL)
		*shp_meta(c) = *shp_meta(m);
	rte_pktmbuf_free(m);
	return c;
}

/*
 * INET_ECN_set_ce: 1 if the packet now carries CE (ECT(0)/ECT(1) marked, or
 * CE already), 0 if it is not ECN-capable (then it is lost), -1 if it was
 * freed for want of an mbuf to make it writable.
 */
static int
netem_ecn_mark(struct shp_qdisc *q, struct rte_mbuf **mp,
	       struct shp_ctx *ctx)
{
	struct shp_pkthdr h;
	unsigned int ecn;

	/* the walker classify uses: the same tags, any segment layout */
	shp_pkthdr_parse(*mp, &h, SHP_PKTHDR_L3);
	ecn = shp_pkthdr_ecn(&h);
	if (ecn == 0)
		return 0;
	if (ecn != 3) {
		*mp = netem_make_writable(q, *mp);
		if (*mp == NULL) {
			ctx->ctr->drops[SHP_DROP_NO_MBUF]++;
			return -1;
		}
		/* a copy keeps the offsets h holds */
		shp_pkthdr_set_ce(*mp, &h);
	}
	return 1;
}

/* Flip one random bit anywhere in the packet (any segment). */
static int
netem_corrupt(struct shp_qdisc *q, struct shp_rand *r, struct rte_mbuf **mp,
	      struct shp_ctx *ctx)
{
	struct rte_mbuf *seg;
	uint32_t pos, bit;

	if ((*mp)->pkt_len == 0)
		return 0;
	pos = shp_rand_below(r, (*mp)->pkt_len);
	bit = shp_rand_below(r, 8);
	*mp = netem_make_writable(q, *mp);
	if (*mp == NULL) {
		ctx->ctr->drops[SHP_DROP_NO_MBUF]++;
		return -1;
	}
	for (seg = *mp; pos >= seg->data_len; seg = seg->next)
		pos -= seg->data_len;
	*rte_pktmbuf_mtod_offset(seg, uint8_t *, pos) ^= (uint8_t)(1u << bit);
	(*shp_stage_xstat(q, ctx, NETEM_XS_CORRUPTED))++;
	return 1;
}

/* A copy of m counted lost without being made (shp_stage_drop_ctr): the
 * capture gets m for it, marked a copy, as the copy would have been. */
static void
netem_capture_copy(const struct shp_qdisc *q, const struct shp_ctx *ctx,
		   struct rte_mbuf *m)
{
	struct shp_ctx c;

	if (likely(ctx->cap == NULL))
		return;
	c = *ctx;
	c.tag.copy = true;
	shp_drop_capture(&c, q->drop_slot[NETEM_DROP_LOST], SHP_CAP_NO_BAND,
			 &m, 1);
}

/* A real copy, never duplicated again; NULL (counted) if no mbuf. */
static struct rte_mbuf *
netem_duplicate(struct shp_qdisc *q, struct rte_mbuf *m, struct shp_ctx *ctx)
{
	struct shp_meta *meta = shp_meta(m), *cm;
	struct rte_mbuf *c;

	c = q->pool != NULL ?
		rte_pktmbuf_copy(m, q->pool, 0, UINT32_MAX) : NULL;
	if (c == NULL) {
		/* the copy existed as far as accounting goes: one more in,
		 * one more dropped for want of an mbuf */
		(*shp_stage_xstat(q, ctx, NETEM_XS_DUPLICATED))++;
		ctx->ctr->drops[SHP_DROP_NO_MBUF]++;
		return NULL;
	}
	shp_meta_init(c, meta->rx_ns);
	cm = shp_meta(c);
	cm->prio = meta->prio;
	cm->band = meta->band;
	cm->flags = SHP_META_F_DUP;
	(*shp_stage_xstat(q, ctx, NETEM_XS_DUPLICATED))++;
	return c;
}

/* ------------------------------------------------------------------ time */

static inline uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Offered at `now`, held `delay`: a negative draw means "now", never the
 * past. What rate, noreorder and accumulate then do is netem_time_to_send's. */
static inline uint64_t
netem_delayed(uint64_t now, int64_t delay)
{
	return sat_add(now, delay < 0 ? 0 : (uint64_t)delay);
}

/*
 * Serialisation time at `rate`, with overheads and cells (netem's rule),
 * saturated: overheads of 2^31 per cell of 1 byte at 1 byte/s say
 * "never", not a time wrapped to weeks.
 */
static uint64_t
netem_packet_time(const struct shp_netem_conf *c, uint32_t pkt_len)
{
	__int128 len = (__int128)pkt_len + c->packet_overhead;
	unsigned __int128 ns;

	if (len < 0)
		len = 0;
	if (c->cell_size != 0) {
		__int128 cells = (len + c->cell_size - 1) / c->cell_size;

		len = cells * ((__int128)c->cell_size + c->cell_overhead);
		if (len < 0)
			len = 0;
	}
	ns = (unsigned __int128)len * 1000000000u / c->rate;
	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/*
 * When the profile hands m to netem, which its delay counts from: when a
 * gate before it let it go (tbf's stamp, or an earlier netem's send
 * time), else when it arrived. Not when this dequeue took it from the
 * queue: a packet that waited there only because the lcore was busy
 * releasing others would otherwise have that wait added to its delay,
 * unseen as lateness (the sojourn grew instead). Its send time is then
 * what the profile says, and any wait beyond it is lateness, measured.
 */
static inline uint64_t
netem_offered(struct rte_mbuf *m)
{
	const struct shp_meta *meta = shp_meta(m);

	return RTE_MAX(meta->time_to_send, meta->rx_ns);
}

/*
 * accumulate T: a departure at t moves to t0 + ceil((t - t0) / T) T, the
 * end of its window. Departures come nearly in order, so the window last
 * found usually holds t: the division is paid once a window, not once a
 * packet. Saturates like the rest (UINT64_MAX stays never).
 */
static uint64_t
netem_accumulate(struct netem_sched_data *p, const struct shp_netem_conf *c,
		 uint64_t t)
{
	uint64_t w = c->accumulate, q, end;

	if (t <= p->acc_t0)
		return p->acc_t0;
	if (t <= p->acc_end && p->acc_end - t < w)
		return p->acc_end;
	q = (t - p->acc_t0) / w;
	end = p->acc_t0 + q * w;   /* <= t: no overflow */
	if (end != t)
		end = end > UINT64_MAX - w ? UINT64_MAX : end + w;
	p->acc_end = end;
	return end;
}

/*
 * The link's windows start (its shards' first arrival under c): the
 * first shard to see one publishes it, with c's id, in one swap; the
 * others take it. A shard still on a conf older than the link's keeps
 * its own arrival for its last packets.
 */
static uint64_t
netem_acc_origin(struct shp_link_origin *o, const struct shp_netem_conf *c,
		 uint64_t t)
{
	rte_int128_t old, new;

	old.val[0] = __atomic_load_n(&o->v.val[0], __ATOMIC_ACQUIRE);
	old.val[1] = __atomic_load_n(&o->v.val[1], __ATOMIC_ACQUIRE);
	new.val[0] = c->hdr.id;
	new.val[1] = t;
	for (;;) {
		if ((uint64_t)old.val[0] == c->hdr.id)
			return (uint64_t)old.val[1];
		if ((uint64_t)old.val[0] > c->hdr.id)
			return t;
		if (rte_atomic128_cmp_exchange(&o->v, &old, &new, 0,
					       __ATOMIC_ACQ_REL,
					       __ATOMIC_ACQUIRE))
			return t;
	}
}

/* Under accumulate the queue holds rounded times: rate and noreorder
 * count from the latest departure as it was before rounding, which this
 * keeps (the queue's tail time says whether anything is queued). */
static inline void
netem_acc_note(struct netem_sched_data *p, int has_last, uint64_t tts)
{
	if (!has_last || tts > p->acc_last)
		p->acc_last = tts;
}

static uint64_t
netem_time_to_send(struct netem_sched_data *p, const struct shp_netem_conf *c,
		   const struct rte_mbuf *m, uint64_t now, int64_t delay)
{
	uint64_t tts = netem_delayed(now, delay), last;
	int has_last;

	if (c->rate == 0 && !c->noreorder && !c->inorder &&
	    c->accumulate == 0)
		return tts;
	last = shp_tq_tail_time(&p->tq, &has_last);
	if (c->accumulate != 0 && has_last)
		last = p->acc_last;
	if (c->rate != 0) {
		if (has_last && last > tts)
			tts = last;
		tts = sat_add(tts, netem_packet_time(c, m->pkt_len));
	}
	if ((c->noreorder || c->inorder) && has_last && last > tts)
		tts = last;
	if (c->accumulate != 0) {
		netem_acc_note(p, has_last, tts);
		tts = netem_accumulate(p, c, tts);
	}
	return tts;
}

/* ----------------------------------------------------------------- slots */

/* The time from one slot (or a packet's due time) to the next slot. */
static uint64_t
netem_slot_draw(const struct shp_netem_conf *c, struct shp_rand *r)
{
	int64_t d;

	if (c->slot_mode == SHP_NETEM_SLOT_RANGE)
		d = (int64_t)(c->slot_min +
			      rand_below64(r, c->slot_max - c->slot_min));
	else
		d = dist_value(c->slot_dist, c->slot_delay, c->slot_jitter,
			       r, NULL);
	return d < 0 ? 0 : (uint64_t)d;
}

static void
netem_slot_next(struct netem_sched_data *p, const struct shp_netem_conf *c,
		uint64_t from)
{
	p->slot.next = from + netem_slot_draw(c, &p->rs[RS_SLOT]);
	p->slot.packets_left = c->slot_packets ? c->slot_packets : INT64_MAX;
	p->slot.bytes_left = c->slot_bytes ? c->slot_bytes : INT64_MAX;
}

/* ------------------------------------------------- outages and bit errors */

/* Exponential of mean `mean` ns, at least 1 ns so that time moves. */
static uint64_t
netem_exp_draw(struct shp_rand *r, uint64_t mean)
{
	double x = -(double)mean * log1p(-shp_rand_unit(r));

	return x < 1 ? 1 : x >= 0x1p63 ? UINT64_C(1) << 63 : (uint64_t)x;
}

/* The timeline's first period, from t: up, for an exponential of the
 * mean up time drawn from r. */
static inline void
outage_arm(const struct shp_netem_conf *c, struct shp_rand *r, bool *up,
	   uint64_t *next, uint64_t t)
{
	*up = true;
	*next = t + netem_exp_draw(r, c->outage_on);
}

/* The periods after (*up, *next) walked, with draws from r, until the
 * one that holds t. */
static void
outage_walk(const struct shp_netem_conf *c, struct shp_rand *r, bool *up,
	    uint64_t *next, uint64_t t)
{
	/* (the means are times, at most 24 hours each: no overflow) */
	if (unlikely(t - *next > 64 * (c->outage_on + c->outage_off)) &&
	    t >= *next) {
		/*
		 * After an idle of many cycles, jump instead of drawing
		 * every period: up and down with exponential lengths is a
		 * two-state Markov process, whose state 64 mean cycles on
		 * no longer depends on where it was (the difference decays
		 * as exp(-64 (on + off) (1/on + 1/off)) < e^-256), and the
		 * time left in a state is exponential whatever has passed.
		 */
		*up = shp_rand_unit(r) * (double)(c->outage_on +
			c->outage_off) < (double)c->outage_on;
		*next = t + netem_exp_draw(r, *up ? c->outage_on :
					   c->outage_off);
	}
	while (t >= *next) {
		*up = !*up;
		*next += netem_exp_draw(r, *up ? c->outage_on : c->outage_off);
	}
}

/*
 * Whether the link is down at t (outage ON OFF), as Mahimahi's mm-onoff:
 * up and down periods alternate, their lengths drawn from exponentials of
 * the two means on a stream of their own, so that the timeline depends on
 * the seed and the times only. The first up period starts with the first
 * packet offered under the conf; a packet at a switch instant sees the
 * new state.
 */
static bool netem_outage_down_link(struct netem_sched_data *p,
				   const struct shp_netem_conf *c, uint64_t t);

static bool
netem_outage_down(struct netem_sched_data *p, const struct shp_netem_conf *c,
		  uint64_t t)
{
	struct shp_rand *r = &p->rs[RS_OUTAGE];

	if (c->outage_on == 0)
		return false;
	if (p->link != NULL)
		return netem_outage_down_link(p, c, t);
	if (unlikely(!p->outage.armed)) {
		p->outage.armed = true;
		outage_arm(c, r, &p->outage.up, &p->outage.next, t);
	}
	outage_walk(c, r, &p->outage.up, &p->outage.next, t);
	return !p->outage.up;
}

/* The second word of netem's link states (shp_link_outage, _slot): the
 * conf's tag, a flag (the outage's up), the draws of a stream taken. */
#define LINK_K_MASK ((UINT64_C(1) << 47) - 1)
#define OUTAGE_UP (UINT64_C(1) << 47)
#define LINK_TAG_SHIFT 48
/* the inverse of SHP_RAND_GAMMA modulo 2^64: a sequential stream's
 * position, from its state */
#define RAND_GAMMA_INV UINT64_C(0xf1de83e19937733d)

/* A conf's tag on a link state (never 0, a state not begun) */
static inline uint64_t
link_tag(const struct shp_netem_conf *c)
{
	uint64_t tag = c->hdr.id & 0xffff;

	return tag != 0 ? tag : 1;
}

/* A sequential stream that started at x0, after k draws: its k-th draw
 * is a function of k, so any shard draws what one netem would. */
static inline uint64_t
stream_at(uint64_t x0, uint64_t k)
{
	return x0 + k * SHP_RAND_GAMMA;
}

/* How many draws r took since x0 (LINK_K_MASK of them at most). */
static inline uint64_t
stream_pos(uint64_t x0, const struct shp_rand *r)
{
	return ((r->x - x0) * RAND_GAMMA_INV) & LINK_K_MASK;
}

/*
 * The same, on a link's shards (issue 24): the timeline is the link's,
 * one for all its shards. Its draws come from the port's outage stream
 * (the one a port of one queue draws from), the k-th of which is a pure
 * function of k, so that a shard that moves the timeline on works out
 * the very periods one netem would and publishes (end, up, k) with one
 * swap; the shards then take down the same packets a port of one queue
 * would, given the same offered times, in the order their swaps
 * succeeded. A shard keeps the period it last saw and reads the link's
 * only when t is past its end: one shared read and (by one shard) one
 * swap a period, none a packet. A packet stamped before the switch
 * another shard has already made (the shards' clocks differ by a burst
 * at most) sees the state after it.
 */
static bool
netem_outage_down_link(struct netem_sched_data *p,
		       const struct shp_netem_conf *c, uint64_t t)
{
	struct shp_link_outage *lo = &p->link->outage;
	const uint64_t tag = link_tag(c);
	rte_int128_t old, new;
	uint64_t next;
	bool up;

	if (likely(p->outage.armed) && t < p->outage.next)
		return !p->outage.up;
	old = shp_link_load(&lo->st);
	for (;;) {
		uint64_t w = (uint64_t)old.val[1];
		uint64_t otag = w >> LINK_TAG_SHIFT;
		struct shp_rand r;

		if (otag != tag) {
			/* a shard still on the conf before the link's:
			 * the link is up for its last packets */
			if (otag != 0 && (int16_t)(tag - otag) < 0)
				return false;
			/* the first packet under this conf on the link */
			r.x = p->outage_x0;
			outage_arm(c, &r, &up, &next, t);
		} else {
			next = (uint64_t)old.val[0];
			up = (w & OUTAGE_UP) != 0;
			if (t < next)
				break;   /* another shard moved it past t */
			r.x = stream_at(p->outage_x0, w & LINK_K_MASK);
		}
		outage_walk(c, &r, &up, &next, t);
		new.val[0] = next;
		new.val[1] = tag << LINK_TAG_SHIFT | (up ? OUTAGE_UP : 0) |
			     stream_pos(p->outage_x0, &r);
		if (rte_atomic128_cmp_exchange(&lo->st, &old, &new, 0,
					       __ATOMIC_ACQ_REL,
					       __ATOMIC_ACQUIRE))
			break;
		/* another shard moved it first: old is what it left */
	}
	p->outage.armed = true;
	p->outage.up = up;
	p->outage.next = next;
	return !up;
}

/*
 * Bit errors: each of the packet's 8 x len bits flips independently with
 * probability ber. The flipped positions are drawn as geometric gaps
 * between errors (the number of good bits before the next bad one), so a
 * packet costs one draw plus one per flipped bit: it is hit with
 * probability 1 - (1 - ber)^(8 len) exactly, and the bits it loses are
 * binomial(8 len, ber) given at least one.
 */
static inline uint64_t
netem_ber_gap(struct shp_rand *r, double log1m_ber)
{
	/* 1 - unit is in (0, 1]: its log is finite */
	double g = log1p(-shp_rand_unit(r)) / log1m_ber;

	return g >= 0x1p62 ? UINT64_C(1) << 62 : (uint64_t)g;
}

/* The first bad bit of a packet of `bits` bits, or `bits` if none. */
static uint64_t
netem_ber_first(const struct shp_netem_conf *c, struct shp_rand *r,
		uint64_t bits)
{
	uint64_t g = netem_ber_gap(r, log1p(-c->ber));

	return g < bits ? g : bits;
}

/* Flip bit `first` and the following bad bits (r continues the draw of
 * netem_ber_first), anywhere in the packet's segments; a packet `corrupt`
 * has already counted is counted once. */
static int
netem_ber_flip(struct shp_qdisc *q, const struct shp_netem_conf *c,
	       struct shp_rand *r, uint64_t first, struct rte_mbuf **mp,
	       bool counted, struct shp_ctx *ctx)
{
	uint64_t bits = (uint64_t)(*mp)->pkt_len * 8, pos, flipped = 0;
	double l = log1p(-c->ber);

	*mp = netem_make_writable(q, *mp);
	if (*mp == NULL) {
		ctx->ctr->drops[SHP_DROP_NO_MBUF]++;
		return -1;
	}
	for (pos = first; pos < bits; pos += 1 + netem_ber_gap(r, l)) {
		struct rte_mbuf *seg = *mp;
		uint32_t byte = (uint32_t)(pos / 8);

		while (byte >= seg->data_len) {
			byte -= seg->data_len;
			seg = seg->next;
		}
		*rte_pktmbuf_mtod_offset(seg, uint8_t *, byte) ^=
			(uint8_t)(0x80u >> (pos % 8));
		flipped++;
	}
	if (!counted)
		(*shp_stage_xstat(q, ctx, NETEM_XS_CORRUPTED))++;
	*shp_stage_xstat(q, ctx, NETEM_XS_BER_BITS) += flipped;
	return 1;
}

/* ------------------------------------------------------------- enqueue */

static void netem_enqueue_copy(struct shp_qdisc *q, struct netem_sched_data *p,
			       const struct shp_netem_conf *c,
			       struct rte_mbuf *copy, struct shp_ctx *ctx,
			       uint64_t n);

/*
 * Whether packet n is sent at once, ahead of the delayed ones (reorder
 * with gap): the gap counter counts every original arrival, lost or not,
 * so that loss does not move the reordered packets. A copy reads the
 * state and leaves it.
 */
static bool
netem_reorder(const struct netem_sched_data *p,
	      const struct shp_netem_conf *c, struct netem_chains *ch,
	      bool copy, uint64_t n)
{
	struct shp_rand r;
	bool hit;

	if (c->gap == 0)
		return false;
	if (ch->counter < c->gap - 1) {
		ch->counter += !copy;
		return false;
	}
	netem_rand_at(p, RS_REORDER, copy, n, &r);
	hit = netem_chance(&r, &ch->reorder_last, &c->reorder, !copy);
	if (!copy)
		ch->counter = hit ? 0 : ch->counter + 1;
	return hit;
}

/* ------------------------------------------------- the link's positions */

/*
 * On a link's shards (issue 56) netem's loss and the other processes
 * that count originals are the link's one process, as one netem would
 * run it on the frames in the order they reach the link: the k-th
 * original the link's shards claim is the link's original k. A shard's
 * enqueue call claims the positions of its originals at once, and each
 * takes every draw at its position from the port's streams (the ones a
 * port of one queue draws from: counter-based, so any shard draws any
 * position's). The deterministic losses then follow from k alone; the
 * Markov chains (netem_chains) from their state at some earlier
 * position, which the link keeps: shp_link_chain's .st.val[0] holds the
 * next position (bits 0..47) and the conf's tag (48..63, as the
 * outage's); .st.val[1] the chains' state (bits 0..39: reorder's
 * counter, then a bit a chain, the loss model's state in 37..39) at the
 * record's position, which lies `lag` (bits 40..63) before the next.
 * A claim is one swap: it moves the next position on and reads the
 * record, which cannot then be past the claim's first position; the
 * shard walks the chains from the record over the positions of frames
 * other shards claimed meanwhile (their draws only, acting on nothing),
 * decides its own, and publishes the state after them with a second
 * swap, on the line it has just moved, if no later one is there. Every
 * shard so finds at its k the very state one netem has at k, whatever
 * the interleaving. The lag is the positions claimed and not yet
 * published: a burst a shard at most, far below 2^24.
 */
#define LP_POS_MASK ((UINT64_C(1) << 48) - 1)
#define LP_LAG_SHIFT 40

/* The chains a conf reads (the others' state decides nothing) */
enum {
	CH_LOSS = 1, CH_DUP = 2, CH_CORRUPT = 4, CH_REORDER = 8,
	CH_GAP = 16, CH_MISORDER = 32,
};

static inline bool
prob_correlated(const struct shp_netem_prob *pr)
{
	return pr->p > 0 && pr->p_after_hit != pr->p_after_miss;
}

static unsigned int
netem_chains_live(const struct shp_netem_conf *c)
{
	unsigned int m = 0;

	if (c->loss_model == SHP_NETEM_LOSS_STATE ||
	    c->loss_model == SHP_NETEM_LOSS_GEMODEL ||
	    (c->loss_model == SHP_NETEM_LOSS_RANDOM &&
	     c->loss.p_after_hit != c->loss.p_after_miss))
		m |= CH_LOSS;
	if (prob_correlated(&c->duplicate))
		m |= CH_DUP;
	if (prob_correlated(&c->corrupt))
		m |= CH_CORRUPT;
	if (c->gap != 0)
		m |= CH_GAP | (c->reorder.p_after_hit != c->reorder.p_after_miss ?
			       CH_REORDER : 0);
	if (prob_correlated(&c->misorder))
		m |= CH_MISORDER;
	return m;
}

static void
netem_chains_init(struct netem_chains *ch, const struct shp_netem_conf *c)
{
	memset(ch, 0, sizeof(*ch));
	ch->clg_state = c->loss_model == SHP_NETEM_LOSS_STATE ? CLG_TX_GAP :
			GE_GOOD;
}

static inline uint64_t
chains_pack(const struct netem_chains *ch, unsigned int live)
{
	uint64_t w = 0;

	if (live & CH_GAP)
		w |= ch->counter;
	if (live & CH_LOSS)
		w |= (uint64_t)ch->loss_last << 32 |
		     (uint64_t)(ch->clg_state & 7) << 37;
	if (live & CH_DUP)
		w |= (uint64_t)ch->dup_last << 33;
	if (live & CH_CORRUPT)
		w |= (uint64_t)ch->corrupt_last << 34;
	if (live & CH_REORDER)
		w |= (uint64_t)ch->reorder_last << 35;
	if (live & CH_MISORDER)
		w |= (uint64_t)ch->misorder_last << 36;
	return w;
}

static inline void
chains_unpack(struct netem_chains *ch, uint64_t w)
{
	ch->counter = (uint32_t)w;
	ch->loss_last = (w >> 32) & 1;
	ch->dup_last = (w >> 33) & 1;
	ch->corrupt_last = (w >> 34) & 1;
	ch->reorder_last = (w >> 35) & 1;
	ch->misorder_last = (w >> 36) & 1;
	ch->clg_state = (uint8_t)((w >> 37) & 7);
}

/* What the original at position j does to the live chains: the draws
 * netem_enqueue_pkt makes for it, in its order, acted on by nobody. */
static void
netem_chains_step(const struct netem_sched_data *p,
		  const struct shp_netem_conf *c, unsigned int live,
		  struct netem_chains *ch, uint64_t j)
{
	struct shp_rand r;

	if (live & CH_DUP) {
		netem_rand_at(p, RS_DUP, false, j, &r);
		netem_chance(&r, &ch->dup_last, &c->duplicate, true);
	}
	if (live & CH_LOSS) {
		netem_rand_at(p, RS_LOSS, false, j, &r);
		netem_loss_event(ch, c, &r, true);
	}
	if (live & CH_CORRUPT) {
		netem_rand_at(p, RS_CORRUPT, false, j, &r);
		netem_chance(&r, &ch->corrupt_last, &c->corrupt, true);
	}
	if (live & CH_GAP)
		netem_reorder(p, c, ch, false, j);
	if (live & CH_MISORDER) {
		netem_rand_at(p, RS_MISORDER, false, j, &r);
		netem_chance(&r, &ch->misorder_last, &c->misorder, true);
	}
}

/* The deterministic loss's running remainder at original k
 * (netem_loss_det's det_pos after k originals) */
static uint64_t
netem_det_at(const struct shp_netem_conf *c, uint64_t k)
{
	switch (c->loss_model) {
	case SHP_NETEM_LOSS_PATTERN:
		return k % c->det.m * c->det.n % c->det.m;
	case SHP_NETEM_LOSS_BURST:
		return k % c->det.m;
	case SHP_NETEM_LOSS_SEQUENCE:
		return k % c->seq_len;
	default:
		return 0;
	}
}

static inline bool
lp_cas(rte_int128_t *v, rte_int128_t *old, rte_int128_t nw)
{
	return rte_atomic128_cmp_exchange(v, old, &nw, 0, __ATOMIC_ACQ_REL,
					  __ATOMIC_ACQUIRE);
}

/*
 * Claim the link's next n positions for the originals of an enqueue
 * call: p->arrivals becomes the first, the chains and the deterministic
 * loss are set to their state there. A shard still on a conf older than
 * the link's (a change reaches shards a burst apart at most) decides its
 * last frames on positions and chains of its own.
 */
static void
netem_link_claim(struct netem_sched_data *p, const struct shp_netem_conf *c,
		 uint16_t n)
{
	struct shp_link_chain *lc = &p->link->chain;
	const uint64_t tag = link_tag(c);
	const unsigned int live = netem_chains_live(c);
	rte_int128_t old = shp_link_load(&lc->st), nw;
	uint64_t k, w, j;

	for (;;) {
		uint64_t otag = (uint64_t)old.val[0] >> LINK_TAG_SHIFT;

		if (otag != tag && otag != 0 && (int16_t)(tag - otag) < 0) {
			p->lp_claimed = false;
			return;
		}
		if (otag == tag) {
			k = (uint64_t)old.val[0] & LP_POS_MASK;
			w = (uint64_t)old.val[1];
		} else {
			/* the link's first frames under this conf */
			struct netem_chains ini;

			netem_chains_init(&ini, c);
			k = 0;
			w = chains_pack(&ini, live);
		}
		nw.val[0] = (int64_t)(tag << LINK_TAG_SHIFT |
				      ((k + n) & LP_POS_MASK));
		nw.val[1] = (int64_t)(w + ((uint64_t)n << LP_LAG_SHIFT));
		if (lp_cas(&lc->st, &old, nw))
			break;
	}
	chains_unpack(&p->ch, w);
	if (live != 0)
		for (j = (k - (w >> LP_LAG_SHIFT)) & LP_POS_MASK; j != k;
		     j = (j + 1) & LP_POS_MASK)
			netem_chains_step(p, c, live, &p->ch, j);
	p->arrivals = k;
	p->det_pos = netem_det_at(c, k);
	p->lp_end = (k + n) & LP_POS_MASK;
	p->lp_claimed = true;
}

/* The chains after the call's originals, the link's record unless a
 * later one is there already. */
static void
netem_link_publish(struct netem_sched_data *p, const struct shp_netem_conf *c)
{
	struct shp_link_chain *lc = &p->link->chain;
	const uint64_t tag = link_tag(c);
	const unsigned int live = netem_chains_live(c);
	rte_int128_t old, nw;
	uint64_t st;

	if (!p->lp_claimed || live == 0 || !shp_netem_link_publish)
		return;
	st = chains_pack(&p->ch, live);
	old = shp_link_load(&lc->st);
	for (;;) {
		uint64_t next = (uint64_t)old.val[0] & LP_POS_MASK;
		uint64_t rec = (next - ((uint64_t)old.val[1] >> LP_LAG_SHIFT)) &
			       LP_POS_MASK;
		uint64_t ahead = (p->lp_end - rec) & LP_POS_MASK;

		if ((uint64_t)old.val[0] >> LINK_TAG_SHIFT != tag ||
		    ahead == 0 || ahead >= UINT64_C(1) << 47)
			return;
		nw.val[0] = old.val[0];
		nw.val[1] = (int64_t)(((next - p->lp_end) & LP_POS_MASK) <<
				      LP_LAG_SHIFT | st);
		if (lp_cas(&lc->st, &old, nw))
			return;
	}
}

/* Whether c decides by position on a link's shards: it has a loss,
 * draws events of originals or counts them. (A delay and its jitter
 * alone stay the shard's, on its own streams: no claim.) */
static inline bool
netem_link_positions(const struct shp_netem_conf *c)
{
	return c->trace != NULL || c->loss_model != SHP_NETEM_LOSS_NONE ||
	       c->duplicate.p > 0 || c->corrupt.p > 0 || c->gap != 0 ||
	       c->misorder.p > 0 || c->ber > 0;
}

/* The number of the next packet of an enqueue call: every packet's on
 * one queue (as ever); on a link's positions an original's, a copy
 * (another netem's, met again) drawing at the next original's. */
static inline uint64_t
netem_next_n(struct netem_sched_data *p, bool copy)
{
	uint64_t n = p->arrivals;

	p->arrivals += !(copy && p->lp_on);
	return n;
}

/*
 * A link's shards (p->link): the frames of an enqueue call wait here
 * for their send times, worked out together from the link's clock at the
 * call's end (or when NETEM_PEND_MAX wait) with one claim, then go into
 * the queue as any other: the same rule as netem_time_to_send's with the
 * link's last send time for the queue's tail.
 */
static void
netem_pend_flush(struct netem_sched_data *p, const struct shp_netem_conf *c,
		 struct shp_ctx *ctx)
{
	uint64_t tts[NETEM_PEND_MAX];
	uint16_t i, n = p->npend;

	shp_link_serial_claim(&p->link->serial, p->pend_base, p->pend_cost, n, tts);
	p->npend = 0;
	for (i = 0; i < n; i++) {
		/* the link's clock keeps the times before rounding, as
		 * one netem's acc_last does */
		if (c->accumulate != 0)
			tts[i] = netem_accumulate(p, c, tts[i]);
		shp_meta(p->pend[i])->time_to_send = tts[i];
		shp_tq_insert(&p->tq, p->pend[i], ctx->now);
	}
}

static void
netem_pend(struct netem_sched_data *p, const struct shp_netem_conf *c,
	   struct rte_mbuf *m, int64_t delay, struct shp_ctx *ctx)
{
	if (p->npend == NETEM_PEND_MAX)
		netem_pend_flush(p, c, ctx);
	p->pend[p->npend] = m;
	p->pend_base[p->npend] = netem_delayed(netem_offered(m), delay);
	p->pend_cost[p->npend] = netem_packet_time(c, m->pkt_len);
	p->npend++;
}

/* The other shards' figures of the link (netem_refuse), read once a
 * poll: a shard publishes its own at the end of a call (netem_gauge), so
 * they are at most one poll late. */
static inline void
netem_link_others(struct netem_sched_data *p, const struct shp_ctx *ctx)
{
	uint64_t lim = 0, mb = 0, held = 0;
	uint16_t s;

	if (p->nl_have && p->nl_at == ctx->now)
		return;
	for (s = 0; s < p->nl_nb; s++) {
		if (s == p->nl_shard)
			continue;
		lim += __atomic_load_n(&p->nl_lines[s].v[SHP_LINK_NETEM_LIMIT],
				       __ATOMIC_RELAXED);
		mb += __atomic_load_n(&p->nl_lines[s].v[SHP_LINK_NETEM_HELD],
				      __ATOMIC_RELAXED);
		if (p->nl_held != NULL)
			held += __atomic_load_n(&p->nl_held[(size_t)s *
							    p->nl_stride],
						__ATOMIC_RELAXED);
	}
	p->nl_others[SHP_LINK_NETEM_LIMIT] = lim;
	p->nl_others[SHP_LINK_NETEM_HELD] = mb;
	p->nl_held_others = held;
	p->nl_at = ctx->now;
	p->nl_have = true;
}

/*
 * The drop cause if `extra` packets more than the one offered would pass
 * what netem may hold, else -1. A limit given is tc's, in packets, stored
 * or not; the default one bounds what holds mbufs of the pool (it is half
 * the pool), and the store bounds the rest by its bytes: what it cannot
 * take keeps its mbuf (store_full) and counts here. Then the port's delay
 * stages together at their share of the pool (this stage's own change
 * since its last sync added). On a link's shards both are the link's:
 * the other shards' figures (netem_link_others) are added.
 */
static inline int
netem_refuse(struct netem_sched_data *p, const struct shp_netem_conf *c,
	     uint32_t extra, const struct shp_ctx *ctx)
{
	uint32_t limit = c->limit_set ? c->limit : p->default_limit;
	uint64_t own = c->limit_set ? p->tq.qlen + p->npend + p->mis_n :
		       netem_mbufs_held(p);

	if (p->nl_lines == NULL) {
		if (own + extra >= limit)
			return NETEM_DROP_LIMIT;
		if (unlikely(p->held != NULL &&
			     (uint64_t)*p->held + netem_mbufs_held(p) -
			     p->counted + extra >= p->hold_cap))
			return NETEM_DROP_SHARE;
		return -1;
	}
	netem_link_others(p, ctx);
	if (own + p->nl_others[c->limit_set ? SHP_LINK_NETEM_LIMIT :
			       SHP_LINK_NETEM_HELD] + extra >= limit)
		return NETEM_DROP_LIMIT;
	if (unlikely(p->held != NULL &&
		     (uint64_t)*p->held + netem_mbufs_held(p) - p->counted +
		     p->nl_held_others + extra >= p->hold_cap))
		return NETEM_DROP_SHARE;
	return -1;
}

/*
 * Does c only draw (loss, delay and its jitter), with nothing that makes
 * or changes a packet (duplicate, corrupt, bit errors, ECN marks) or
 * times it against others (reorder, rate, noreorder, accumulate,
 * outages)? Then netem_enqueue_pkt's short way (whole false) decides what
 * its whole way would: the branches of the rest are not compiled in.
 */
static inline bool
netem_is_drawn(const struct shp_netem_conf *c)
{
	return c->gap == 0 && c->duplicate.p <= 0 && c->corrupt.p <= 0 &&
	       c->ber <= 0 && !c->ecn && c->rate == 0 && !c->noreorder &&
	       !c->inorder && c->misorder.p <= 0 &&
	       c->accumulate == 0 && c->outage_on == 0;
}

bool shp_netem_short_ways = true;
bool shp_netem_link_publish = true;

/*
 * misorder: a chosen frame waits beside the time queue until `depth`
 * frames that arrived after it have entered the queue, then enters it
 * behind them (its own time, or the latest queued if later): exactly
 * depth later arrivals overtake it. Only frames that enter unheld count
 * (one held earlier is no later arrival), so every held frame waits for
 * the same count from when it was held: they leave in the order held.
 * netem_mis_hold: false when there is no room (the frame goes on as
 * unchosen, counted).
 */
static bool
netem_mis_hold(struct netem_sched_data *p, const struct shp_netem_conf *c,
	       struct rte_mbuf *m, int64_t delay, struct shp_ctx *ctx)
{
	struct netem_mis *e;

	if (p->mis == NULL || p->mis_n == NETEM_MIS_CAP) {
		NX(p, ctx, NETEM_XS_MISORDER_SKIPPED)++;
		return false;
	}
	e = &p->mis[(p->mis_head + p->mis_n++) % NETEM_MIS_CAP];
	e->m = m;
	e->start = p->mis_direct;
	e->depth = c->misorder_depth;
	e->deadline = netem_offered(m) + (c->misorder_timeout != 0 ?
		c->misorder_timeout : SHP_NETEM_MISORDER_TIMEOUT);
	e->delay = delay;
	return true;
}

/* The held frames whose followers came, or whose wait ran out by now (or
 * all of them: a new profile) enter the queue; c NULL: timed by their
 * delay alone. */
static void
netem_mis_release(struct netem_sched_data *p, const struct shp_netem_conf *c,
		  struct shp_ctx *ctx, bool all)
{
	while (p->mis_n != 0) {
		struct netem_mis *e = &p->mis[p->mis_head];
		struct rte_mbuf *m = e->m;
		uint64_t tts, last;
		int has_last;

		if (!all && p->mis_direct - e->start < e->depth &&
		    e->deadline > ctx->now)
			break;
		if (p->mis_direct != e->start)
			NX(p, ctx, NETEM_XS_REORDERED)++;
		tts = c != NULL ?
			netem_time_to_send(p, c, m, netem_offered(m), e->delay) :
			netem_delayed(netem_offered(m), e->delay);
		last = shp_tq_tail_time(&p->tq, &has_last);
		if (has_last && last > tts)
			tts = last;
		p->mis_head = (p->mis_head + 1) % NETEM_MIS_CAP;
		p->mis_n--;
		shp_meta(m)->time_to_send = tts;
		shp_tq_insert(&p->tq, m, ctx->now);
	}
}

/*
 * One packet through the impairments, in the kernel's order. Every
 * decision for original n (its arrival number) is drawn from its
 * impairment's stream at n, whatever the other impairments decided, and
 * the correlated states (loss model, Markov chains, delay copula, reorder
 * gap) advance with every original, lost or not: switching one impairment
 * on or off changes no other's decisions. The copy of original n (copy)
 * draws from the copy keys at n and advances no state. With whole false
 * (a constant), c is netem_is_drawn's: what it has not is left out.
 */
static __rte_always_inline bool
netem_enqueue_pkt(struct shp_qdisc *q, struct netem_sched_data *p,
		  const struct shp_netem_conf *c, struct rte_mbuf *m,
		  struct shp_ctx *ctx, bool copy, uint64_t n, const bool whole)
{
	struct rte_mbuf *dupm = NULL;
	struct shp_rand r, rc, rb = { 0 };
	bool dup = false, lost = false, corrupt = false, reorder = false;
	bool down = false, misorder = false;
	int64_t delay = 0;
	int refuse;
	uint64_t tts, ber_bits = 0, ber_first = 0;
	int count = 1;

	/* the link as it is when the packet is offered (after the rate
	 * limit: what a dequeue of the child hands us now) */
	if (whole)
		down = netem_outage_down(p, c, RTE_MAX(ctx->now,
						       shp_meta(m)->rx_ns));
	if (unlikely(whole && c->accumulate != 0 && !p->acc_armed)) {
		/* the windows start with the first packet's arrival (the
		 * link's, on shards) */
		p->acc_armed = true;
		p->acc_t0 = p->link == NULL ? shp_meta(m)->rx_ns :
			    netem_acc_origin(&p->link->acc, c,
					     shp_meta(m)->rx_ns);
		p->acc_end = p->acc_t0;
	}
	if (whole && c->ber > 0) {
		ber_bits = (uint64_t)rte_pktmbuf_pkt_len(m) * 8;
		netem_rand_at(p, RS_BER, copy, n, &rb);
		ber_first = netem_ber_first(c, &rb, ber_bits);
	}
	if (whole && !copy && c->duplicate.p > 0) {
		netem_rand_at(p, RS_DUP, false, n, &r);
		dup = netem_chance(&r, &p->ch.dup_last, &c->duplicate, true);
		count += dup;
	}
	if (c->loss_model != SHP_NETEM_LOSS_NONE) {
		if (netem_loss_is_det(c)) {
			/* the pattern counts originals; a copy shares its
			 * original's fate (below) */
			lost = !copy && netem_loss_det(p, c);
		} else {
			netem_rand_at(p, RS_LOSS, copy, n, &r);
			lost = netem_loss_event(&p->ch, c, &r, !copy);
		}
	}
	if (whole && c->corrupt.p > 0) {
		netem_rand_at(p, RS_CORRUPT, copy, n, &rc);
		corrupt = netem_chance(&rc, &p->ch.corrupt_last, &c->corrupt,
				       !copy);
	}
	if (whole)
		reorder = netem_reorder(p, c, &p->ch, copy, n);
	if (whole && !copy && c->misorder.p > 0) {
		struct shp_rand rm;

		netem_rand_at(p, RS_MISORDER, false, n, &rm);
		misorder = netem_chance(&rm, &p->ch.misorder_last, &c->misorder,
					true);
	}
	/* the delay draw: for the packet, or to advance the copula */
	if (!reorder && (!lost || dup || (whole && c->ecn) ||
			 (!copy && (c->delay_corr > 0 || c->inorder))))
		delay = netem_delay(p, c, copy, n, netem_offered(m));
	if (copy && c->dup_delay != 0)
		delay += (int64_t)c->dup_delay;     /* a trace's DUP_DELAY */

	if (down) {
		/* every draw above was made: the other impairments decide
		 * for the packets after as if the link had stayed up */
		shp_stage_drop(q, ctx, NETEM_DROP_LINK_DOWN, m);
		return false;
	}
	if (lost) {
		int rc_ecn = whole && c->ecn ? netem_ecn_mark(q, &m, ctx) : 0;

		if (rc_ecn < 0)
			return false;
		if (rc_ecn > 0)
			NX(p, ctx, NETEM_XS_ECN_MARKED)++;
		else
			/* a deterministic loss takes the original and its
			 * copy: the originals the pattern names never leave */
			count = netem_loss_is_det(c) ? 0 : count - 1;
	}
	if (count == 0) {
		if (dup) {
			/* (deterministic loss) the copy is accounted, lost
			 * with its original, without being made */
			NX(p, ctx, NETEM_XS_DUPLICATED)++;
			(*shp_stage_drop_ctr(q, ctx->ctr, NETEM_DROP_LOST))++;
			netem_capture_copy(q, ctx, m);
		}
		shp_stage_drop(q, ctx, NETEM_DROP_LOST, m);
		return false;
	}
	if (count == 2) {
		/* copied before the original is corrupted */
		dupm = netem_duplicate(q, m, ctx);
	} else if (dup) {
		/* duplicated then one copy lost: account both events, no
		 * need to make the copy */
		NX(p, ctx, NETEM_XS_DUPLICATED)++;
		(*shp_stage_drop_ctr(q, ctx->ctr, NETEM_DROP_LOST))++;
		netem_capture_copy(q, ctx, m);
	}
	if (ber_first < ber_bits && c->ber_drop) {
		/* the copy is a packet of its own on the wire */
		if (dupm != NULL)
			netem_enqueue_copy(q, p, c, dupm, ctx, n);
		shp_stage_drop(q, ctx, NETEM_DROP_BER, m);
		return false;
	}
	if ((corrupt && netem_corrupt(q, &rc, &m, ctx) < 0) ||
	    (ber_first < ber_bits &&
	     netem_ber_flip(q, c, &rb, ber_first, &m, corrupt, ctx) < 0)) {
		if (dupm != NULL)
			netem_enqueue_copy(q, p, c, dupm, ctx, n);
		return false;
	}
	/* keep room for the copy so qlen never exceeds the limit */
	refuse = netem_refuse(p, c, dupm != NULL, ctx);
	if (refuse >= 0) {
		if (dupm != NULL)
			shp_stage_drop(q, ctx, refuse, dupm);
		shp_stage_drop(q, ctx, refuse, m);
		return false;
	}
	if (dupm != NULL)
		netem_enqueue_copy(q, p, c, dupm, ctx, n);

	if (whole && misorder && netem_mis_hold(p, c, m, delay, ctx))
		return true;
	p->mis_direct++;
	if (whole && !reorder && p->link != NULL && c->rate != 0) {
		netem_pend(p, c, m, delay, ctx);
		return true;
	}
	if (!whole) {
		/* netem_time_to_send without rate, noreorder, accumulate */
		tts = netem_delayed(netem_offered(m), delay);
	} else if (!reorder) {
		tts = netem_time_to_send(p, c, m, netem_offered(m), delay);
	} else {
		/* sent at once, ahead of the delayed ones */
		tts = ctx->now;
		NX(p, ctx, NETEM_XS_REORDERED)++;
		if (c->accumulate != 0) {
			int has_last;

			shp_tq_tail_time(&p->tq, &has_last);
			netem_acc_note(p, has_last, tts);
			tts = netem_accumulate(p, c, tts);
		}
	}
	shp_meta(m)->time_to_send = tts;
	shp_tq_insert(&p->tq, m, ctx->now);
	if (whole && unlikely(p->mis_n != 0))
		netem_mis_release(p, c, ctx, false);
	return true;
}

static bool
netem_enqueue_one(struct shp_qdisc *q, struct netem_sched_data *p,
		  const struct shp_netem_conf *c, struct rte_mbuf *m,
		  struct shp_ctx *ctx, bool copy, uint64_t n)
{
	return netem_enqueue_pkt(q, p, c, m, ctx, copy, n, true);
}

/*
 * The copy goes through the same path, without duplication (as Linux
 * re-enqueues it at the root with duplicate off). Linux's root enqueue
 * also passes it through any rate limit on the way; here the bucket
 * behind us has already let the original through, so the copy is
 * charged to it: the packets behind the original wait for the copy's
 * time too, and the port never exceeds the tbf rate.
 */
static void
netem_enqueue_copy(struct shp_qdisc *q, struct netem_sched_data *p,
		   const struct shp_netem_conf *c, struct rte_mbuf *copy,
		   struct shp_ctx *ctx, uint64_t n)
{
	shp_qdisc_charge(q->child, rte_pktmbuf_pkt_len(copy), ctx->now);
	netem_enqueue_one(q, p, c, copy, ctx, true, n);
}

/*
 * A profile of a constant delay and nothing else to draw (no jitter, loss,
 * duplicate, corrupt, bit errors, reorder, rate, accumulate or outage):
 * what netem_enqueue_one decides for each packet is its time to send and
 * the limit, so the vector takes the short way. No stream is drawn from,
 * as none would be; the arrival numbers still count (a new profile starts
 * them again, netem_reset_state): the output is the same packet for
 * packet (test_plain_enqueue, test_plain_then_lossy).
 */
static inline bool
netem_is_plain(const struct shp_netem_conf *c)
{
	return c->jitter == 0 && c->gap == 0 && c->duplicate.p <= 0 &&
	       c->loss_model == SHP_NETEM_LOSS_NONE && c->corrupt.p <= 0 &&
	       c->ber <= 0 && c->rate == 0 && c->accumulate == 0 &&
	       c->outage_on == 0 && c->misorder.p <= 0;
}

static uint16_t
netem_enqueue_plain(struct shp_qdisc *q, struct netem_sched_data *p,
		    const struct shp_netem_conf *c, struct rte_mbuf **pkts,
		    uint16_t n, struct shp_ctx *ctx)
{
	uint16_t i, ok = 0;

	p->arrivals += n;
	/* what netem may hold grows by one a packet at most (a store's
	 * commit only lowers it): when the burst's last packet would pass,
	 * every one does, and the send time is the offered time plus the
	 * delay (netem_time_to_send without rate, accumulate, noreorder) */
	if (!c->noreorder && !c->inorder &&
	    netem_refuse(p, c, n - 1, ctx) < 0) {
		for (i = 0; i < n; i++) {
			struct rte_mbuf *m = pkts[i];

			shp_meta(m)->time_to_send =
				netem_delayed(netem_offered(m),
					      (int64_t)c->latency);
			shp_tq_insert(&p->tq, m, ctx->now);
		}
		return n;
	}
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		int refuse = netem_refuse(p, c, 0, ctx);

		if (refuse >= 0) {
			shp_stage_drop(q, ctx, refuse, m);
			continue;
		}
		shp_meta(m)->time_to_send = netem_time_to_send(p, c, m,
			netem_offered(m), (int64_t)c->latency);
		shp_tq_insert(&p->tq, m, ctx->now);
		ok++;
	}
	return ok;
}

static uint16_t netem_enqueue_trace(struct shp_qdisc *q,
				    struct netem_sched_data *p,
				    const struct shp_netem_conf *c,
				    struct rte_mbuf **pkts, uint16_t n,
				    struct shp_ctx *ctx);

static uint16_t
netem_enqueue_vec(struct shp_qdisc *q, struct netem_sched_data *p,
		  const struct shp_netem_conf *c, struct rte_mbuf **pkts,
		  uint16_t n, struct shp_ctx *ctx)
{
	uint16_t i, ok = 0;

	if (unlikely(c != NULL && c->trace != NULL && n != 0))
		return netem_enqueue_trace(q, p, c, pkts, n, ctx);

	if (c == NULL) {
		/* off: due now, behind what is already due */
		for (i = 0; i < n; i++) {
			shp_meta(pkts[i])->time_to_send = ctx->now;
			shp_tq_insert(&p->tq, pkts[i], ctx->now);
		}
		return n;
	}
	if (p->lp_on && n != 0) {
		uint16_t orig = 0;

		for (i = 0; i < n; i++)
			orig += !(shp_meta(pkts[i])->flags & SHP_META_F_DUP);
		netem_link_claim(p, c, orig);
	}
	if (shp_netem_short_ways && netem_is_plain(c))
		return netem_enqueue_plain(q, p, c, pkts, n, ctx);
	if (shp_netem_short_ways && netem_is_drawn(c)) {
		for (i = 0; i < n; i++) {
			bool copy = shp_meta(pkts[i])->flags & SHP_META_F_DUP;

			ok += netem_enqueue_pkt(q, p, c, pkts[i], ctx, copy,
						netem_next_n(p, copy), false);
		}
	} else {
		for (i = 0; i < n; i++) {
			bool copy = shp_meta(pkts[i])->flags & SHP_META_F_DUP;

			ok += netem_enqueue_one(q, p, c, pkts[i], ctx, copy,
						netem_next_n(p, copy));
		}
		if (p->npend != 0)
			netem_pend_flush(p, c, ctx);
	}
	if (p->lp_on && n != 0)
		netem_link_publish(p, c);
	return ok;
}

/*
 * A trace's rows hold on the data path's clock: the burst goes through
 * in runs of frames offered within one row, each run with c as that row
 * sets it. The trace starts with the first frame (the link's first, on
 * shards: all shards see the same rows at the same instants).
 */
static uint16_t
netem_enqueue_trace(struct shp_qdisc *q, struct netem_sched_data *p,
		    const struct shp_netem_conf *c, struct rte_mbuf **pkts,
		    uint16_t n, struct shp_ctx *ctx)
{
	const struct shp_netem_trace *t = c->trace;
	uint16_t i = 0, k, ok = 0;

	if (unlikely(!p->trace.armed))
		shp_netem_trace_arm(t, &p->trace, p->link == NULL ?
				    netem_offered(pkts[0]) :
				    netem_acc_origin(&p->link->acc, c,
						     netem_offered(pkts[0])));
	while (i < n) {
		uint32_t row = shp_netem_trace_at(t, &p->trace,
						  netem_offered(pkts[i]));

		if (row != p->trace_row) {
			shp_netem_trace_apply(t, row, &p->trace_conf);
			p->trace_row = row;
		}
		for (k = 1; i + k < n &&
		     netem_offered(pkts[i + k]) < p->trace.end; k++)
			;
		ok += netem_enqueue_vec(q, p, &p->trace_conf, pkts + i, k,
					ctx);
		i += k;
	}
	return ok;
}

/* --------------------------------------------------------------- control */

/*
 * What separates the streams of one seed: the port, and the shard of a
 * link spread over several (issue 24), each with its own delay line and
 * its own draws. Shard 0 is the port alone: an unsharded port, and a
 * sharded port's first shard, draw what they always drew.
 */
static inline uint64_t
netem_stream_of(const struct shp_qdisc *q)
{
	uint64_t shard = q->env != NULL ? q->env->shard : 0;

	return (uint64_t)q->port | shard << 16;
}

/* The random streams of a conf under stream id `stream` (port, shard:
 * netem_stream_of; the port's own, shard 0's, is the port). */
static void
netem_seed_streams_of(const struct shp_netem_conf *c, uint64_t stream,
		      struct shp_rand rs[RS_MAX])
{
	struct shp_rand base;
	int i;

	shp_rand_seed(&base, c->seed_set ? c->seed : SHP_NETEM_DEFAULT_SEED,
		      stream);
	for (i = 0; i < RS_MAX; i++)
		shp_rand_seed(&rs[i], shp_rand_u64(&base), i);
}

/* The random streams of a conf, all derived from (seed, port, shard). */
static void
netem_seed_streams(const struct shp_qdisc *q, const struct shp_netem_conf *c,
		   struct shp_rand rs[RS_MAX])
{
	netem_seed_streams_of(c, netem_stream_of(q), rs);
}

/* The keys of the counter-based streams, from (seed, port, shard) as
 * well; a shard that draws at the link's positions, the port's. */
static void
netem_stream_keys(uint64_t stream, const struct shp_netem_conf *c,
		  uint64_t key[RS_MAX])
{
	uint64_t base = shp_rand_key(c->seed_set ? c->seed :
				     SHP_NETEM_DEFAULT_SEED, stream);
	int i;

	for (i = 0; i < RS_MAX; i++)
		key[i] = shp_rand_key(base, i);
}

/* The byte store's region when no rate bounds what it holds (enough for
 * 100 ms of 64-byte frames at 10GbE line rate twice over), and at most:
 * 10 Gbit/s for 600 ms, or 1 Gbit/s for 10 s, of frames of any size
 * (3.4 GB of records of 64-byte frames for the latter). Address space:
 * what is resident is what the frames in flight span. */
#define NETEM_STORE_DEF ((size_t)512 << 20)
#define NETEM_STORE_MAX (8 * NETEM_STORE_DEF)

/* The tightest of the rates that may reach the line: netem's own, the
 * rate stage's in front of it, the port's link (bytes/s; 0: none). */
static uint64_t
netem_feed_rate(const struct shp_netem_conf *c, uint64_t gate,
		uint64_t line)
{
	uint64_t r = c != NULL ? c->rate : 0;

	if (gate != 0 && (r == 0 || gate < r))
		r = gate;
	if (line != 0 && (r == 0 || line < r))
		r = line;
	return r;
}

/* What rate x (delay + 4 jitter + accumulate + 10 ms) of 64-byte frames
 * takes in records (the worst ratio of store to wire bytes). */
static size_t
netem_store_at(const struct shp_netem_conf *c, uint64_t rate)
{
	double hold = (double)(c->latency + 4 * c->jitter +
			       c->accumulate) / 1e9 + 0.01;
	double b = (double)rate * hold / 64 *
		   (double)shp_tq_store_rec_size(64);

	return b > (double)NETEM_STORE_MAX ? NETEM_STORE_MAX :
		RTE_MAX((size_t)b, (size_t)64 * 65536);
}

/*
 * What of the byte store's region a profile may use (the region is
 * reserved at NETEM_STORE_MAX; it is resident as far as the frames in
 * flight reach): what the profile can hold, by its rate and the delay
 * when it has a rate, by its limit when it has one, else
 * NETEM_STORE_DEF; and at least what the rate that may reach it
 * (netem_feed_rate: the rate stage's in front, the port's link) brings
 * in that time, so that a long delay behind a fast gate is carried. A
 * new profile, or a new rate in front, sets it anew (netem_reset_state,
 * netem_sync_conf).
 */
static size_t
netem_store_region(const struct shp_netem_conf *c, uint64_t feed)
{
	size_t own;
	uint32_t thr;

	if (c == NULL)
		return NETEM_STORE_DEF;
	thr = c->store_set ? c->store : SHP_NETEM_STORE_DEFAULT;
	if (thr == 0)
		thr = SHP_NETEM_STORE_DEFAULT;   /* a later change may store */
	if (c->rate != 0)
		own = netem_store_at(c, c->rate);
	else if (c->limit_set)
		own = RTE_MIN(RTE_MAX((size_t)c->limit *
				      shp_tq_store_rec_size(thr),
				      (size_t)64 * 65536), NETEM_STORE_MAX);
	else
		own = NETEM_STORE_DEF;
	return feed != 0 ? RTE_MAX(own, netem_store_at(c, feed)) : own;
}

/*
 * How many frames wait in their mbufs before the store takes them: what
 * the profile says, else SHP_NETEM_STORE_AFTER_DEFAULT, and without a
 * profile's own `after` at most a quarter of the default limit (the
 * mbufs netem may hold), so that a line the store would have held never
 * meets that limit for waiting in mbufs first.
 */
static uint32_t
netem_store_after(const struct netem_sched_data *p,
		  const struct shp_netem_conf *c)
{
	if (c == NULL)
		return 0;
	if (c->store_after_set)
		return c->store_after;
	return RTE_MIN((uint32_t)SHP_NETEM_STORE_AFTER_DEFAULT,
		       p->default_limit / 4);
}

/* Past how many mbufs frames longer than `store`'s size are stored: by
 * default once half of what netem may hold in mbufs waits (a line the
 * pool can carry keeps them, a longer one is carried by the store);
 * never with a `store` given, which says which frames are stored. */
static uint32_t
netem_store_big(uint32_t default_limit, const struct shp_netem_conf *c)
{
	return c == NULL || c->store_set ? UINT32_MAX : default_limit / 2;
}

/* The rates in front of the stage, as the chain keeps them. */
static inline uint64_t
netem_gate_rate(const struct shp_qdisc *q)
{
	return q->env != NULL ?
		__atomic_load_n(&q->env->gate_rate, __ATOMIC_RELAXED) : 0;
}

static inline uint64_t
netem_line_rate(const struct shp_qdisc *q)
{
	return q->env != NULL ?
		__atomic_load_n(&q->env->line_rate, __ATOMIC_RELAXED) : 0;
}

static size_t
netem_region_of(const struct shp_netem_conf *c, uint64_t gate,
		uint64_t line)
{
	return netem_store_region(c, netem_feed_rate(c, gate, line));
}

static void
netem_reset_state(struct shp_qdisc *q, struct netem_sched_data *p,
		  const struct shp_netem_conf *c)
{
	uint64_t lat, jit;

	p->seen = c != NULL ? c->hdr.id : 0;
	/* frames already stored stay so until they leave: the setting is
	 * for the ones that arrive under c (off: they pass at once, a copy
	 * would only cost) */
	shp_tq_store_set(&p->tq, c == NULL ? 0 : c->store_set ? c->store :
			 SHP_NETEM_STORE_DEFAULT);
	/* the new profile's share of the region, larger or smaller: a
	 * longer delay or a higher rate stores what it holds */
	p->gate_seen = netem_gate_rate(q);
	p->line_seen = netem_line_rate(q);
	shp_tq_store_bound(&p->tq, netem_region_of(c, p->gate_seen,
						   p->line_seen));
	shp_tq_store_depth(&p->tq, netem_store_after(p, c));
	shp_tq_store_big(&p->tq, netem_store_big(p->default_limit, c));
	if (c == NULL)
		return;
	p->trace.armed = false;
	p->trace_row = UINT32_MAX;
	if (c->trace != NULL) {
		p->trace_conf = *c;
		p->trace_conf.trace = NULL;     /* a row's: no trace of its own */
	}
	/* tables reach 4 sigma; uniform reaches 1 */
	lat = c->trace != NULL ? c->trace->max_latency : c->latency;
	jit = c->trace != NULL ? c->trace->max_jitter : c->jitter;
	shp_tq_set_horizon(&p->tq, lat + 4 * jit + c->accumulate,
			   (c->dist != NULL ? 8 : 2) * jit);
	netem_seed_streams(q, c, p->rs);
	p->lp_on = p->link != NULL && netem_link_positions(c);
	p->lp_claimed = false;
	netem_stream_keys(p->lp_on ? q->port : netem_stream_of(q), c, p->key);
	if (p->link != NULL) {
		struct shp_rand port_rs[RS_MAX];

		netem_seed_streams_of(c, q->port, port_rs);
		p->outage_x0 = port_rs[RS_OUTAGE].x;
		p->slot_x0 = port_rs[RS_SLOT].x;
	}
	p->arrivals = 0;
	netem_chains_init(&p->ch, c);
	p->det_pos = 0;
	p->acc_armed = false;
	p->delay_z = 0;
	p->inorder_armed = false;
	p->delay_dz = 0;
	p->slot.armed = false;
	p->slot.next = 0;
	p->slot.packets_left = INT64_MAX;
	p->slot.bytes_left = INT64_MAX;
	p->outage.armed = false;
}

/* The state belongs to one conf; a new conf (seen on the owner lcore)
 * restarts it, as a tc change re-initialises netem. */
static inline const struct shp_netem_conf *
netem_sync_conf(struct shp_qdisc *q, struct netem_sched_data *p,
		struct shp_ctx *ctx)
{
	const struct shp_netem_conf *c = netem_conf(p);
	uint64_t gate = netem_gate_rate(q), line = netem_line_rate(q);

	/* a new rate in front: the store holds what it lets through */
	if (unlikely(gate != p->gate_seen || line != p->line_seen)) {
		p->gate_seen = gate;
		p->line_seen = line;
		shp_tq_store_bound(&p->tq, netem_region_of(c, gate, line));
	}
	if (unlikely((c != NULL ? c->hdr.id : 0) != p->seen)) {
		/* what misorder held enters the queue, by its delay */
		if (p->mis_n != 0)
			netem_mis_release(p, NULL, ctx, true);
		netem_reset_state(q, p, c);
	}
	return c;
}

static inline void
netem_gauge(struct netem_sched_data *p, struct shp_ctx *ctx)
{
	uint32_t held = netem_mbufs_held(p);

	NX(p, ctx, NETEM_XS_QUEUED) = p->tq.qlen + p->mis_n;
	if (p->tq.st != NULL) {
		struct shp_tq_st_stats *s = &p->tq.st_stats;

		NX(p, ctx, NETEM_XS_STORE_FRAMES) = s->frames;
		NX(p, ctx, NETEM_XS_STORE_BYTES) = s->bytes;
		NX(p, ctx, NETEM_XS_STORE_HWM) = s->hwm;
		/* the queue counts events, the lcore's block keeps them */
		if (unlikely(s->full != 0)) {
			NX(p, ctx, NETEM_XS_STORE_FULL) += s->full;
			s->full = 0;
		}
		if (unlikely(s->no_mbuf != 0)) {
			ctx->ctr->drops[p->drop_slot[NETEM_DROP_STORE_NO_MBUF]]
				+= s->no_mbuf;
			s->no_mbuf = 0;
		}
	}
	/* only a change is written: a stage of a class being made or freed
	 * on the main lcore, empty, never writes what the TX lcore owns */
	if (p->held != NULL && p->counted != held) {
		/* one store: the link's other shards read it */
		__atomic_store_n(p->held, *p->held + held - p->counted,
				 __ATOMIC_RELAXED);
		p->counted = held;
	}
	/* a link's shards: what the others' limit and share count */
	if (p->nl_lines != NULL) {
		struct shp_link_fig *l = &p->nl_lines[p->nl_shard];
		uint64_t lim = p->tq.qlen + p->npend + p->mis_n;

		if (lim != p->nl_pub[SHP_LINK_NETEM_LIMIT]) {
			__atomic_store_n(&l->v[SHP_LINK_NETEM_LIMIT], lim,
					 __ATOMIC_RELAXED);
			p->nl_pub[SHP_LINK_NETEM_LIMIT] = lim;
		}
		if (held != p->nl_pub[SHP_LINK_NETEM_HELD]) {
			__atomic_store_n(&l->v[SHP_LINK_NETEM_HELD], held,
					 __ATOMIC_RELAXED);
			p->nl_pub[SHP_LINK_NETEM_HELD] = held;
		}
	}
}

static int
netem_init(struct shp_qdisc *q, const void *conf)
{
	struct netem_sched_data *p = netem_priv(q);
	size_t region, reserve;
	bool lean;

	p->drop_slot = q->drop_slot;
	p->xstat_slot = q->xstat_slot;
	p->link = q->env != NULL ? q->env->link : NULL;
	p->default_limit = shp_netem_default_limit(q->pool != NULL ?
						   q->pool->size : 0);
	if (q->env != NULL && q->env->held != NULL) {
		p->held = q->env->held;
		p->hold_cap = q->env->hold_cap;
		p->default_limit = RTE_MIN(p->default_limit, p->hold_cap);
	}
	/* a link's shards: one limit and one share for all of them */
	if (p->link != NULL && q->env->nb_shards > 1 &&
	    q->env->shard < RTE_MIN(q->env->nb_shards, SHP_MAX_QUEUES)) {
		p->nl_lines = p->link->netem;
		p->nl_shard = q->env->shard;
		p->nl_nb = RTE_MIN(q->env->nb_shards, SHP_MAX_QUEUES);
		if (p->held != NULL && q->env->link_held != NULL) {
			p->nl_held = q->env->link_held;
			p->nl_stride = q->env->held_stride;
		}
	}
	/* a queued packet is an mbuf of the pool or a record of the byte
	 * store: the two bound the calendar (whose chunks become resident
	 * as used); none for one of thousands of classes (env) until it
	 * holds packets (shp_netem_grow): megabytes each, idle */
	lean = q->env != NULL && q->env->lean;
	region = lean || q->pool == NULL ? 0 :
		netem_region_of(conf, netem_gate_rate(q), netem_line_rate(q));
	/* the most any profile may use, so that a later one can grow the
	 * store (address space only; the first profile's bound applies) */
	reserve = region != 0 ? NETEM_STORE_MAX : 0;
	if (!shp_tq_init(&p->tq, lean ? 0 : shp_netem_tq_buckets,
			 (q->pool != NULL ? q->pool->size : p->default_limit) +
			 (uint32_t)RTE_MIN(reserve / shp_tq_store_rec_size(60),
					   (size_t)1 << 24),
			 q->pool != NULL ? q->pool->socket_id : SOCKET_ID_ANY))
		RTE_LOG(WARNING, USER1, "netem: port %u: no memory for the "
			"time calendar, jitter goes through the rbtree "
			"(slower; give EAL more memory with -m)\n", q->port);
	/* the byte store goes with the calendar (its entries point at the
	 * records): none for a lean one, which holds few packets */
	if (region != 0 && p->tq.nb_bkt != 0 &&
	    !shp_tq_store_init(&p->tq, reserve, q->pool) &&
	    !shp_tq_store_init(&p->tq, region, q->pool))
		RTE_LOG(WARNING, USER1, "netem: port %u: no address space "
			"for the byte store, every packet waits in its "
			"mbuf\n", q->port);
	if (!lean)
		p->mis = rte_zmalloc_socket("netem_mis", NETEM_MIS_CAP *
					    sizeof(*p->mis), 0, q->pool != NULL ?
					    q->pool->socket_id : SOCKET_ID_ANY);
	p->conf = conf;
	netem_reset_state(q, p, conf);
	return 0;
}

static const void *
netem_change(struct shp_qdisc *q, const void *conf)
{
	struct netem_sched_data *p = netem_priv(q);

	return __atomic_exchange_n(&p->conf, (const struct shp_netem_conf *)conf,
				   __ATOMIC_ACQ_REL);
}

static uint16_t
netem_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	      struct shp_ctx *ctx)
{
	struct netem_sched_data *p = netem_priv(q);
	const struct shp_netem_conf *c = netem_sync_conf(q, p, ctx);
	uint16_t ok;

	if (unlikely(p->tq.nb_bkt == 0) &&
	    unlikely(__atomic_load_n(&p->offer, __ATOMIC_RELAXED) != NULL)) {
		shp_tq_adopt(&p->tq, __atomic_load_n(&p->offer,
						     __ATOMIC_ACQUIRE));
		/* after nb_bkt is set: the control side, which reads offer
		 * first, never offers a second one */
		__atomic_store_n(&p->offer, NULL, __ATOMIC_RELEASE);
	}
	ok = netem_enqueue_vec(q, p, c, pkts, n, ctx);
	netem_gauge(p, ctx);
	return ok;
}

/* Release due packets, honouring slots. A slot is an instant at which up to
 * N packets / B bytes that are due leave; its timing is derived from packet
 * times only, so the result does not depend on how often we are polled. */
static uint16_t
netem_release_slotted(struct netem_sched_data *p,
		      const struct shp_netem_conf *c, struct rte_mbuf **pkts,
		      uint16_t n, uint64_t now)
{
	uint16_t out = 0;

	while (out < n) {
		struct rte_mbuf *m = shp_tq_peek(&p->tq);
		uint64_t tts;

		if (m == NULL)
			break;
		tts = shp_meta(m)->time_to_send;
		if (tts > now)
			break;
		/* the slot went by with nothing due: next one from here */
		if (!p->slot.armed || p->slot.next < tts) {
			netem_slot_next(p, c, tts);
			p->slot.armed = true;
		}
		if (p->slot.next > now)
			break;
		pkts[out++] = shp_tq_pop(&p->tq);
		/* its slot is when it is due: TX measures lateness from it
		 * (only once out of the queue, which is ordered by it) */
		shp_meta(m)->time_to_send = p->slot.next;
		p->slot.bytes_left -= m->pkt_len;
		if (--p->slot.packets_left <= 0 || p->slot.bytes_left <= 0)
			netem_slot_next(p, c, p->slot.next);
	}
	return out;
}

/* The link's slot stream at the position w (its state's second word)
 * says, for conf tag tag: drawn from its start if w is another conf's. */
static inline void
slot_link_stream(uint64_t x0, uint64_t w, uint64_t tag, struct shp_rand *r)
{
	r->x = stream_at(x0, (w >> LINK_TAG_SHIFT) == tag ?
			     (w & LINK_K_MASK) : 0);
}

/* The slot after the link's state old, drawn from `from` at the link's
 * position in the port's slot stream: what one netem would draw there. */
static inline rte_int128_t
slot_link_next(const struct netem_sched_data *p,
	       const struct shp_netem_conf *c, uint64_t tag, rte_int128_t old,
	       uint64_t from)
{
	struct shp_rand r;
	rte_int128_t nw;

	slot_link_stream(p->slot_x0, (uint64_t)old.val[1], tag, &r);
	nw.val[0] = from + netem_slot_draw(c, &r);
	nw.val[1] = tag << LINK_TAG_SHIFT | stream_pos(p->slot_x0, &r);
	return nw;
}

static inline bool
link_cas(rte_int128_t *v, rte_int128_t *old, rte_int128_t nw)
{
	return rte_atomic128_cmp_exchange(v, old, &nw, 0, __ATOMIC_ACQ_REL,
					  __ATOMIC_ACQUIRE);
}

/*
 * Where the due head of a shard's queue leaves on the link's slots: 1,
 * in the slot *old now says (drawn from the head's due time and
 * published, if the slot had gone by); 0, *old moved by another shard
 * (look again); -1, nothing leaves now (nothing due, the slot later, or
 * this shard's conf on its way out).
 */
static inline int
slot_link_head(struct netem_sched_data *p, const struct shp_netem_conf *c,
	       uint64_t tag, rte_int128_t *old, uint64_t now)
{
	struct rte_mbuf *m = shp_tq_peek(&p->tq);
	uint64_t tts, otag = (uint64_t)old->val[1] >> LINK_TAG_SHIFT;

	if (m == NULL)
		return -1;
	tts = shp_meta(m)->time_to_send;
	if (tts > now)
		return -1;
	if (otag != tag && otag != 0 && (int16_t)(tag - otag) < 0)
		return -1;
	if (otag != tag || (uint64_t)old->val[0] < tts) {
		/* the slot went by with nothing due: the next from here,
		 * the link's if this shard sends in it now */
		rte_int128_t nw = slot_link_next(p, c, tag, *old, tts);

		if ((uint64_t)nw.val[0] > now)
			return -1;
		if (!link_cas(&p->link->slot.st, old, nw))
			return 0;   /* *old: what another shard left */
		*old = nw;
	}
	return (uint64_t)old->val[0] <= now ? 1 : -1;
}

/*
 * netem_release_slotted on a link's shards (issue 24), a slot without
 * budgets: the slots are the link's (shp_link_slot). A shard whose due
 * head finds the link's slot gone by draws the next from its head's due
 * time, as one netem does, from the port's slot stream at the link's
 * position (its k-th draw is a function of k), and publishes it with one
 * swap only if it sends in it now: a slot drawn for a later instant is
 * left undrawn, so that a shard whose packet came due earlier draws it
 * from its own, as one netem would (offline, where every shard runs at
 * each one's next time, the very slots of one queue). A shard on a conf
 * older than the link's sends nothing until its copy of the change
 * arrives.
 */
static uint16_t
netem_release_slotted_link(struct netem_sched_data *p,
			   const struct shp_netem_conf *c,
			   struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	struct shp_link_slot *ls = &p->link->slot;
	const uint64_t tag = link_tag(c);
	rte_int128_t old = shp_link_load(&ls->st);
	uint16_t out = 0;

	while (out < n) {
		struct rte_mbuf *m;
		int rc = slot_link_head(p, c, tag, &old, now);

		if (rc < 0)
			break;
		if (rc == 0)
			continue;
		m = shp_tq_pop(&p->tq);
		pkts[out++] = m;
		shp_meta(m)->time_to_send = (uint64_t)old.val[0];
	}
	return out;
}

/* A slot's use (shp_link_slot's .used[1]): packets (high half) and bytes
 * (low half, saturated: a slot past 4 GiB is spent whatever its budget) */
static inline bool
slot_has_room(const struct shp_netem_conf *c, uint64_t use)
{
	return (c->slot_packets == 0 || (use >> 32) < c->slot_packets) &&
	       (c->slot_bytes == 0 || (uint32_t)use < c->slot_bytes);
}

static inline uint64_t
slot_use_add(uint64_t use, uint32_t len)
{
	uint64_t bytes = (uint64_t)(uint32_t)use + len;

	return ((use >> 32) + 1) << 32 | RTE_MIN(bytes, (uint64_t)UINT32_MAX);
}

static inline bool
i128_eq(rte_int128_t a, rte_int128_t b)
{
	return a.val[0] == b.val[0] && a.val[1] == b.val[1];
}

/*
 * The same with budgets: a slot of the link takes up to N packets / B
 * bytes of all its shards together (a frame goes while the slot has
 * packets and bytes left, as one netem's). A shard takes the due frames
 * of its own the slot has room for, as the link's use of the slot says,
 * and claims them with one swap of the use; if another shard took part
 * of the slot meanwhile, it keeps what still fits and puts the rest back
 * at the head of its queue (shp_tq_unpop), for the next slot. The slot a
 * spent one is followed by is drawn from it, the same draw whichever
 * shard makes it, so a saturated link has the very slots of one queue;
 * which shard's frames fill a slot is the order the shards came in.
 */
static uint16_t
netem_release_budget_link(struct netem_sched_data *p,
			  const struct shp_netem_conf *c,
			  struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	struct shp_link_slot *ls = &p->link->slot;
	const uint64_t tag = link_tag(c);
	rte_int128_t old = shp_link_load(&ls->st);
	uint16_t out = 0;

	while (out < n) {
		struct rte_mbuf *m;
		uint64_t slot, u, w;
		rte_int128_t use, nu;
		uint16_t got, keep, i;
		int rc = slot_link_head(p, c, tag, &old, now);

		if (rc < 0)
			break;
		if (rc == 0)
			continue;
		slot = (uint64_t)old.val[0];
		w = (uint64_t)old.val[1];
		/* what the slot took: nothing if the use is an earlier
		 * slot's (the link's slots have not moved since old: a use
		 * names a slot some shard read, never a later one) */
		use = shp_link_load(&ls->used);
		u = (uint64_t)use.val[1];
		if ((uint64_t)use.val[0] != w) {
			rte_int128_t cur = shp_link_load(&ls->st);

			if (!i128_eq(cur, old)) {
				old = cur;
				continue;
			}
			u = 0;
		}
		if (!slot_has_room(c, u)) {
			/* spent: the slot after it, whoever draws it */
			rte_int128_t nw = slot_link_next(p, c, tag, old, slot);

			if (link_cas(&ls->st, &old, nw))
				old = nw;
			continue;
		}
		/* take what the slot has room for, then claim it */
		got = 0;
		while (out + got < n && slot_has_room(c, u)) {
			m = shp_tq_peek(&p->tq);
			if (m == NULL || shp_meta(m)->time_to_send > slot)
				break;
			pkts[out + got++] = shp_tq_pop(&p->tq);
			u = slot_use_add(u, m->pkt_len);
		}
		keep = got;
		for (;;) {
			nu.val[0] = (int64_t)w;
			nu.val[1] = (int64_t)u;
			if (link_cas(&ls->used, &use, nu))
				break;
			if ((uint64_t)use.val[0] != w) {
				keep = 0;   /* the slot is another's now */
				break;
			}
			/* another shard took part of the slot */
			u = (uint64_t)use.val[1];
			for (keep = 0; keep < got && slot_has_room(c, u); keep++)
				u = slot_use_add(u,
						 pkts[out + keep]->pkt_len);
			if (keep == 0)
				break;
		}
		for (i = got; i > keep; i--)
			shp_tq_unpop(&p->tq, pkts[out + i - 1]);
		if (keep == 0) {
			old = shp_link_load(&ls->st);
			continue;
		}
		/* their slot is when they are due: TX measures lateness
		 * from it */
		for (i = 0; i < keep; i++)
			shp_meta(pkts[out + i])->time_to_send = slot;
		out += keep;
		if (!slot_has_room(c, u)) {
			rte_int128_t nw = slot_link_next(p, c, tag, old, slot);

			if (link_cas(&ls->st, &old, nw))
				old = nw;
		}
	}
	return out;
}

static inline uint16_t
netem_release(struct netem_sched_data *p, const struct shp_netem_conf *c,
	      struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	if (c != NULL && c->slot_mode != SHP_NETEM_SLOT_OFF) {
		if (p->link == NULL)
			return netem_release_slotted(p, c, pkts, n, now);
		if (c->slot_packets != 0 || c->slot_bytes != 0)
			return netem_release_budget_link(p, c, pkts, n, now);
		return netem_release_slotted_link(p, c, pkts, n, now);
	}
	return shp_tq_dequeue_due(&p->tq, now, pkts, n);
}

/*
 * Due packets first: what is due leaves before anything new is pulled
 * from the child, and the child is asked only for the room the due ones
 * left. So the delay line never takes in more than it gives out in one
 * call, and a caller that loops while ctx->more drains every due packet
 * before it polls RX again (a backlog of overdue packets shrinks instead
 * of being carried from call to call).
 */
static uint16_t
netem_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	      struct shp_ctx *ctx)
{
	struct netem_sched_data *p = netem_priv(q);
	const struct shp_netem_conf *c = netem_sync_conf(q, p, ctx);
	uint64_t backlog, bytes, lost = p->tq.st_stats.no_mbuf_bytes;
	uint16_t k, out;

	if (unlikely(p->mis_n != 0))
		netem_mis_release(p, c, ctx, false);
	backlog = p->tq.backlog;
	if (c == NULL && p->tq.qlen == 0 && p->mis_n == 0 &&
	    q->child != NULL) {
		/* off and empty: straight through, bytes as the child says */
		k = q->child->ops->dequeue(q->child, pkts, n, ctx);
		if (k == n)
			ctx->more = true;
		shp_meta_gate_sent(pkts, k, ctx->now);
		netem_gauge(p, ctx);
		return k;
	}
	out = netem_release(p, c, pkts, n, ctx->now);
	/* the queue counts the bytes leaving: TX need not again */
	bytes = backlog - p->tq.backlog;
	if (out == n) {
		ctx->more = true;
	} else if (q->child != NULL) {
		/* pkts[out..n) doubles as the input vector: consumed
		 * before the output is written there */
		k = q->child->ops->dequeue(q->child, pkts + out, n - out, ctx);
		if (k == n - out && k > 0)
			ctx->more = true;
		netem_enqueue_vec(q, p, c, pkts + out, k, ctx);
		backlog = p->tq.backlog;
		out += netem_release(p, c, pkts + out, n - out, ctx->now);
		bytes += backlog - p->tq.backlog;
	}
	/* what the store dropped left the backlog without being sent */
	ctx->bytes = bytes - (p->tq.st_stats.no_mbuf_bytes - lost);
	netem_gauge(p, ctx);
	return out;
}

/*
 * The instant netem_release_slotted lets a packet due at tts go (as the
 * head of the queue, with the slot state as it is now): the armed slot if
 * it is not before tts, else a slot drawn from tts. The draw is made on a
 * copy of the stream; a conf not seen yet starts from fresh streams and
 * no slot, as netem_sync_conf will.
 */
static uint64_t
netem_slot_time(const struct shp_qdisc *q, const struct netem_sched_data *p,
		const struct shp_netem_conf *c, uint64_t tts)
{
	struct shp_rand rs[RS_MAX];

	if (p->link != NULL) {
		/* the link's slot, or the one netem_release_slotted_link
		 * would draw from tts */
		rte_int128_t v = shp_link_load(&p->link->slot.st);
		uint64_t tag = link_tag(c), w = (uint64_t)v.val[1];
		uint64_t x0 = p->slot_x0, from = tts;

		if ((w >> LINK_TAG_SHIFT) == tag &&
		    (uint64_t)v.val[0] >= tts) {
			rte_int128_t use;

			if (c->slot_packets == 0 && c->slot_bytes == 0)
				return (uint64_t)v.val[0];
			use = shp_link_load(&p->link->slot.used);
			if ((uint64_t)use.val[0] != w ||
			    slot_has_room(c, (uint64_t)use.val[1]))
				return (uint64_t)v.val[0];
			from = (uint64_t)v.val[0];   /* spent: the next */
		}
		if (c->hdr.id != p->seen) {
			netem_seed_streams_of(c, q->port, rs);
			x0 = rs[RS_SLOT].x;
		}
		slot_link_stream(x0, w, tag, &rs[RS_SLOT]);
		return from + netem_slot_draw(c, &rs[RS_SLOT]);
	}
	if (c->hdr.id == p->seen) {
		if (p->slot.armed && p->slot.next >= tts)
			return p->slot.next;
		rs[RS_SLOT] = p->rs[RS_SLOT];
	} else {
		netem_seed_streams(q, c, rs);
	}
	return tts + netem_slot_draw(c, &rs[RS_SLOT]);
}

/*
 * The earlier of: when the head of the time queue leaves (its
 * time_to_send, or its slot), and the child's next time (what the child
 * releases enters here on that dequeue, due at or after it).
 */
static uint64_t
netem_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct netem_sched_data *p = netem_priv(q);
	const struct shp_netem_conf *c = netem_conf(p);
	uint64_t t = UINT64_MAX;

	/* the head's time only: a stored frame stays bytes until it leaves */
	if (shp_tq_head_time(&p->tq, &t)) {
		if (c != NULL && c->slot_mode != SHP_NETEM_SLOT_OFF)
			t = netem_slot_time(q, p, c, t);
		t = RTE_MAX(t, ctx->now);
	}
	/* a held frame's wait ends */
	if (p->mis_n != 0)
		t = RTE_MIN(t, RTE_MAX(p->mis[p->mis_head].deadline, ctx->now));
	if (q->child != NULL)
		t = RTE_MIN(t, shp_qdisc_next_time(q->child, ctx));
	return t;
}

static struct rte_mbuf *
netem_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct netem_sched_data *p = netem_priv(q);
	struct rte_mbuf *m = shp_tq_peek(&p->tq);

	if (m == NULL || shp_meta(m)->time_to_send > ctx->now)
		return NULL;
	return m;
}

static void
netem_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct netem_sched_data *p = netem_priv(q);
	uint32_t n = shp_tq_flush(&p->tq);

	for (; p->mis_n != 0; p->mis_n--, n++) {
		rte_pktmbuf_free(p->mis[p->mis_head].m);
		p->mis_head = (p->mis_head + 1) % NETEM_MIS_CAP;
	}
	ctx->ctr->drops[SHP_DROP_FLUSHED] += n;
	netem_gauge(p, ctx);
}

/* Off and empty: a packet would leave at once, untouched. */
static bool
netem_idle(const struct shp_qdisc *q)
{
	struct netem_sched_data *p = netem_priv(q);

	return netem_conf(p) == NULL && p->tq.qlen == 0 && p->mis_n == 0;
}

static void
netem_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	const struct netem_sched_data *p = netem_priv(q);

	st->qlen = p->tq.qlen + p->mis_n;
	st->backlog = p->tq.backlog;
}

static int
netem_carrier(const struct shp_qdisc *q)
{
	struct netem_sched_data *p = netem_priv(q);
	const struct shp_netem_conf *c = netem_conf(p);

	if (c == NULL || !c->outage_carrier)
		return -1;
	return __atomic_load_n(&p->outage.armed, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&p->outage.up, __ATOMIC_RELAXED);
}

static void
netem_dump(const struct shp_qdisc *q, FILE *f)
{
	struct netem_sched_data *p = netem_priv(q);
	const struct shp_netem_conf *c = netem_conf(p);
	/* a `loss sequence` alone may take 4096 characters */
	char buf[SHP_NETEM_LOSS_SEQ_MAX + 1024];

	if (c == NULL) {
		fprintf(f, "off");
		return;
	}
	shp_netem_conf_format(c, buf, sizeof(buf));
	/* (a trace's rows set the limit) */
	if (!c->limit_set && c->trace == NULL)
		fprintf(f, "limit %u%s%s", p->default_limit,
			buf[0] ? " " : "", buf);
	else
		fprintf(f, "%s", buf);
}

static void
netem_fini(struct shp_qdisc *q)
{
	struct netem_sched_data *p = netem_priv(q);

	shp_tq_fini(&p->tq);
	shp_tq_cal_free(p->offer);
	p->offer = NULL;
	for (; p->mis_n != 0; p->mis_n--) {
		rte_pktmbuf_free(p->mis[p->mis_head].m);
		p->mis_head = (p->mis_head + 1) % NETEM_MIS_CAP;
	}
	rte_free(p->mis);
	p->mis = NULL;
}

bool
shp_netem_wants_calendar(const struct shp_qdisc *q, uint32_t min_qlen)
{
	struct netem_sched_data *p;

	if (q == NULL || q->ops != &shp_netem_ops || shp_netem_tq_buckets == 0)
		return false;
	p = netem_priv(q);
	/* the owner's fields, read as a hint (a stale one delays the offer
	 * by a call); offer first, which the owner clears after taking it */
	return __atomic_load_n(&p->offer, __ATOMIC_ACQUIRE) == NULL &&
	       __atomic_load_n(&p->tq.nb_bkt, __ATOMIC_RELAXED) == 0 &&
	       __atomic_load_n(&p->tq.qlen, __ATOMIC_RELAXED) >= min_qlen;
}

size_t
shp_netem_calendar_size(const struct shp_qdisc *q)
{
	return shp_tq_cal_size(shp_netem_tq_buckets, q->pool != NULL ?
			       q->pool->size :
			       netem_priv(q)->default_limit);
}

static size_t
netem_grow_size(const struct shp_qdisc *q, uint32_t min_qlen)
{
	return shp_netem_wants_calendar(q, min_qlen) ?
	       shp_netem_calendar_size(q) : 0;
}

size_t
shp_netem_grow_heap(unsigned int pool_size)
{
	return shp_tq_cal_size(shp_netem_tq_buckets, pool_size);
}

int
shp_netem_grow(struct shp_qdisc *q)
{
	struct netem_sched_data *p = netem_priv(q);
	struct shp_tq_cal *c;

	c = shp_tq_cal_new(shp_netem_tq_buckets, q->pool != NULL ?
			   q->pool->size : p->default_limit,
			   q->pool != NULL ? q->pool->socket_id :
			   SOCKET_ID_ANY);
	if (c == NULL)
		return -1;
	__atomic_store_n(&p->offer, c, __ATOMIC_RELEASE);
	return 0;
}

const struct shp_qdisc_ops shp_netem_ops = {
	.id = "netem",
	.priv_size = sizeof(struct netem_sched_data),
	.init = netem_init,
	.change = netem_change,
	.enqueue = netem_enqueue,
	.dequeue = netem_dequeue,
	.peek = netem_peek,
	.next_time = netem_next_time,
	.reset = netem_reset,
	.idle = netem_idle,
	.grow_size = netem_grow_size,
	.grow = shp_netem_grow,
	.stats = netem_stats,
	.dump = netem_dump,
	.carrier = netem_carrier,
	.fini = netem_fini,
};

static void *
netem_kind_parse(const char *args, const struct shp_kind_env *env,
		 char *err)
{
	struct shp_netem_conf *c = shp_netem_parse(args, err);

	/* the global --seed, unless the profile has its own */
	if (c != NULL && env != NULL && env->seed_set && !c->seed_set) {
		c->seed = env->seed;
		c->seed_set = true;
	}
	return c;
}

static int
netem_kind_format(const void *conf, char *buf, size_t len)
{
	return shp_netem_conf_format(conf, buf, len);
}

/* as tc prints netem (shp_netem_tc_print); args has its limit (`show`
 * adds the default one) */
static int
netem_kind_tc_print(const char *args, const struct shp_kind_env *env,
		    const char **tc_name, char *buf, size_t len)
{
	char err[SHP_ERR_LEN];
	struct shp_netem_conf *c = netem_kind_parse(args, env, err);
	int n;

	RTE_SET_USED(tc_name);
	if (c == NULL)
		return snprintf(buf, len, "%s", args);   /* not ours */
	n = shp_netem_tc_print(c, 1000, buf, len);
	shp_netem_conf_free(c);
	return n;
}

static void
netem_kind_free(void *conf)
{
	shp_netem_conf_free(conf);
}

/* its limit when given; the default (half the pool) is the pool's own
 * reserve (SHP_DELAY_RESERVE) */
static uint64_t
netem_kind_capacity(const void *conf, const struct shp_kind_env *env)
{
	const struct shp_netem_conf *c = conf;

	RTE_SET_USED(env);
	return c != NULL && c->limit_set ? c->limit : 0;
}

/*
 * The lossless budget (shp_budget.h): the mbufs netem may hold (its
 * default limit: half the pool, at most the port's share) and what the
 * byte store holds at its most (NETEM_STORE_MAX of records of the frame,
 * when such frames are stored: the default stores any that fits a
 * record; a `store` given, those up to its size); a `limit` given
 * bounds the sum. A link's shards: a store each, one limit and share.
 */
static void
netem_kind_budget(const void *conf, const struct shp_budget_in *in,
		  struct shp_budget *b)
{
	const struct shp_netem_conf *c = conf;
	uint32_t lim = shp_netem_default_limit(in->pool);
	uint64_t shards = in->shards > 1 ? in->shards : 1;
	bool stored;

	if (in->hold_cap != 0)
		lim = RTE_MIN(lim, in->hold_cap);
	stored = c == NULL || !c->store_set ?
		in->frame <= SHP_TQ_STORE_LEN_MAX :
		c->store != 0 && in->frame <= c->store;
	b->mbufs = lim;
	b->store_reserved = in->pool != 0 && stored ? NETEM_STORE_MAX : 0;
	b->store_bound = b->store_reserved != 0 ?
		netem_store_region(c, netem_feed_rate(c, in->gate_rate,
						      in->line_rate)) : 0;
	b->frames = lim + shp_tq_store_frames(b->store_reserved, in->frame) *
		    shards;
	b->store_reserved *= shards;
	if (c != NULL && c->limit_set && c->limit < b->frames)
		b->frames = c->limit;
	b->delay_ns = c == NULL ? 0 : c->latency + c->jitter + c->accumulate;
}

const struct shp_kind shp_kind_netem = {
	.name = "netem",
	.slot = SHP_SLOT_DELAY,
	.ops = &shp_netem_ops,
	.parse = netem_kind_parse,
	.format = netem_kind_format,
	.tc_print = netem_kind_tc_print,
	.conf_free = netem_kind_free,
	.capacity = netem_kind_capacity,
	.budget = netem_kind_budget,
	.note = shp_netem_note,
	.grow_heap = shp_netem_grow_heap,
	.lean_mem = 8u << 10,   /* a class's, on its tfifo alone */
	.drops = netem_drops,
	.xstats = netem_xstats,
	.usage = "netem [delay TIME [JITTER [CORR]] [distribution NAME]] "
		 "[loss ...] [duplicate P] [corrupt P] [reorder P [CORR] "
		 "[gap N]] [rate RATE ...] [slot ...] [ecn] [limit N] "
		 "[outage ON_MEAN OFF_MEAN [carrier]] "
		 "[ber RATE [drop|corrupt]] "
		 "[accumulate TIME] [store BYTES|off] [seed N] "
		 "[trace FILE [once|loop]]",
	.words = "delay#loss#duplicate#corrupt#reorder#rate#slot#limit#"
		 "ecn#distribution#seed#noreorder#outage#ber#accumulate#"
		 "store#inorder#misorder#misorder_timeout#trace",
};
