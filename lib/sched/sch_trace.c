/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trace-driven rate (Mahimahi's mm-link semantics): a gate in the rate
 * slot, where tbf stands, that lets its child's packets go only at the
 * delivery opportunities a trace file lists.
 *
 *   trace FILE
 *
 * FILE holds one integer a line: a time in ms, from when the stage starts
 * (the first time it runs a conf: live the port's first round, offline the
 * first packet's timestamp), at which one opportunity to deliver
 * SHP_TRACE_OPP_BYTES (1504) bytes occurs. Times never decrease; several
 * lines with one time are several opportunities at that instant. The
 * schedule repeats for ever with a period of its last time (Mahimahi's
 * base_timestamp += last).
 *
 * Sharing an opportunity, as Mahimahi's LinkQueue::rationalize: an
 * opportunity is a budget of 1504 bytes spent on the packets at the head
 * of the queue in order; a packet that fits leaves at the opportunity's
 * time and what is left serves the next one; a packet larger than what is
 * left takes the rest and carries its remaining bytes over to the next
 * opportunities (Mahimahi refuses packets above 1504 bytes; here a jumbo
 * frame simply spans several). Only packets that arrived before the
 * opportunity may use it (Mahimahi runs the link up to `now` before it
 * queues an arrival), and an opportunity no packet can use is lost.
 * The bytes counted are the frame's (rte_pktmbuf_pkt_len): a 1504-byte
 * frame uses one opportunity exactly.
 *
 * Ours, not Mahimahi's: lines starting with '#' are comments; a jumbo
 * frame is not refused. Bad input (empty file, an empty or non-numeric
 * line, a time going backwards, no opportunity, a last time of 0) is
 * refused with one line naming the file and line.
 *
 * Where a partly sent packet is kept: Mahimahi takes it off the queue; we
 * leave it at the head of the child and keep the bytes it still needs
 * (`left`). Should the head change meanwhile (a higher band), the debt
 * goes with the new head: the link's byte count stays Mahimahi's.
 *
 * A link spread over shards (issue 24, --queues N) has one schedule, not
 * one a shard: the position (period, opportunity, bytes it has left) is
 * the link's (shp_link_trace), moved with one swap per run of a shard's
 * packets that spends an opportunity. Each shard plans on a copy of it
 * and plans again when another moved it first, so an opportunity's bytes
 * go once, to frames that arrived before it. Losing opportunities is the
 * link's: one is lost when a shard spends a later one (its frame came
 * after it), never because a shard had nothing to send (the others may
 * have), and a shard waits for its first usable opportunity, not the one
 * that completes a jumbo frame, so it spends the bytes as they come. What
 * that leaves from one FIFO's schedule: which shard's frame an
 * opportunity serves follows who reaches it first (offline the shards
 * take turns; live, the first poll after it), and an opportunity before a
 * frame's arrival at one shard may be lost to a frame of another shard
 * that arrived before it only when that shard has not run between the
 * opportunity and the first shard's later spend (offline it always has:
 * the tool runs every shard at each one's next time).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_atomic.h>

#include "shp_file.h"
#include "shp_kind.h"
#include "shp_link.h"
#include "shp_meta.h"
#include "shp_qdisc.h"

#define NS_PER_MS UINT64_C(1000000)

/* What one line of the trace lets through (Mahimahi's PACKET_SIZE: the
 * largest TUN payload, a 1500-byte MTU and the 4-byte TUN header). */
#define SHP_TRACE_OPP_BYTES 1504

/* Packets of one run planned against the link's schedule at once. */
#define TRACE_RUN_MAX 64

/* A trace as read, immutable once published. */
struct shp_trace_conf {
	struct shp_conf_hdr hdr;   /* first: shp_qdisc.h */
	char *path;        /* as given: format() prints it */
	uint64_t period;   /* ns: the last time */
	uint32_t n;        /* opportunities a period */
	uint64_t t[];      /* ns from the period's start, non-decreasing */
};
SHP_CONF_HDR_FIRST(struct shp_trace_conf);

/* Bounds that keep every time sum far from 2^64 ns. */
#define TRACE_MAX_MS (UINT64_C(1) << 32)       /* 49 days */
#define TRACE_MAX_LINES (UINT32_C(1) << 24)
/* a file of TRACE_MAX_LINES times and some comments; a comment's line */
#define TRACE_FILE_MAX ((size_t)1 << 28)
#define TRACE_LINE_MAX 1024
/* A file name printed back must fit a profile's text. */
#define TRACE_PATH_MAX 1024

struct trace_priv {
	const struct shp_trace_conf *conf;  /* published by change() */
	uint64_t seen;    /* id of the conf the state belongs to */
	uint64_t base;    /* ns: start of the current period */
	uint32_t idx;     /* the next opportunity: base + t[idx] */
	uint32_t avail;   /* bytes the opportunity idx has left */
	uint32_t left;    /* bytes the head still needs (0: not started) */
	/* the link's schedule, shared with the other shards (NULL: the
	 * position above is the stage's own) */
	struct shp_link_trace *sh;
};

static inline struct trace_priv *
priv(const struct shp_qdisc *q)
{
	return q->priv;
}

/* ------------------------------------------------------------ schedule */

/* The position of an opportunity: (base, idx) with its bytes left. */
struct trace_pos {
	uint64_t base;
	uint32_t idx;
	uint32_t avail;
};

static inline uint64_t
pos_time(const struct shp_trace_conf *c, const struct trace_pos *s)
{
	return s->base + c->t[s->idx];
}

/* The opportunity k after s's. */
static inline uint64_t
pos_time_after(const struct shp_trace_conf *c, const struct trace_pos *s,
	       uint64_t k)
{
	uint64_t j = s->idx + k;

	return s->base + (j / c->n) * c->period + c->t[j % c->n];
}

static inline void
pos_next(const struct shp_trace_conf *c, struct trace_pos *s)
{
	s->avail = SHP_TRACE_OPP_BYTES;
	if (++s->idx == c->n) {
		s->idx = 0;
		s->base += c->period;
	}
}

/*
 * Lose every opportunity at or before t: the next is the first after t.
 * Whole periods are skipped at once, the rest by binary search, so that
 * an idle hour costs no more than an idle millisecond.
 */
static void
pos_skip_past(const struct shp_trace_conf *c, struct trace_pos *s,
	      uint64_t t)
{
	uint32_t lo, hi;
	uint64_t off;

	if (pos_time(c, s) > t)
		return;
	lo = s->idx;
	if (t - s->base >= c->period) {
		s->base += (t - s->base) / c->period * c->period;
		lo = 0;
	}
	/* the period's last opportunity, base + period, is after t */
	off = t - s->base;
	hi = c->n - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->t[mid] > off)
			hi = mid;
		else
			lo = mid + 1;
	}
	s->idx = lo;
	s->avail = SHP_TRACE_OPP_BYTES;
}

static inline struct trace_pos
priv_pos(const struct trace_priv *p)
{
	return (struct trace_pos){
		.base = p->base, .idx = p->idx, .avail = p->avail,
	};
}

static inline void
priv_set_pos(struct trace_priv *p, const struct trace_pos *s)
{
	p->base = s->base;
	p->idx = s->idx;
	p->avail = s->avail;
}

/*
 * A conf not seen yet starts its schedule now. Done by whichever call
 * first sees the conf, next_time included: the offline tool asks
 * next_time at the first packet's arrival, and the schedule must start
 * there, not at the first dequeue (an opportunity later).
 */
static inline void
trace_sync(struct trace_priv *p, const struct shp_trace_conf *c,
	   uint64_t now)
{
	if (likely(c->hdr.id == p->seen))
		return;
	p->seen = c->hdr.id;
	p->base = now;
	p->idx = 0;
	p->avail = SHP_TRACE_OPP_BYTES;
	p->left = 0;
}

static inline uint64_t
rx_time(struct rte_mbuf *m)
{
	return shp_meta(m)->rx_ns;
}

/* ------------------------------------------------- the link's schedule */

#define LT_STARTED (UINT64_C(1) << 47)
#define LT_IDX_SHIFT 16
#define LT_IDX_MASK ((UINT64_C(1) << 24) - 1)   /* TRACE_MAX_LINES */

static inline uint16_t
conf_tag(const struct shp_trace_conf *c)
{
	return (uint16_t)c->hdr.id;
}

static inline rte_int128_t
lt_pack(uint16_t tag, const struct trace_pos *s)
{
	rte_int128_t v;

	v.val[0] = s->base;
	v.val[1] = (uint64_t)tag << 48 | LT_STARTED |
		   (uint64_t)s->idx << LT_IDX_SHIFT | s->avail;
	return v;
}

/* The position v holds for c, kept inside c's schedule whatever was read
 * (a torn pair, a file changed between two shards' loads of it). */
static inline struct trace_pos
lt_unpack(const struct shp_trace_conf *c, rte_int128_t v)
{
	struct trace_pos s = {
		.base = v.val[0],
		.idx = (uint32_t)((v.val[1] >> LT_IDX_SHIFT) & LT_IDX_MASK),
		.avail = (uint32_t)(v.val[1] & 0xffff),
	};

	if (unlikely(s.idx >= c->n || s.avail > SHP_TRACE_OPP_BYTES)) {
		s.idx = c->n - 1;
		s.avail = SHP_TRACE_OPP_BYTES;
	}
	return s;
}

/* Does v hold the link's schedule for the conf tagged tag? */
static inline bool
lt_is(rte_int128_t v, uint16_t tag)
{
	return (v.val[1] & LT_STARTED) && (uint16_t)(v.val[1] >> 48) == tag;
}

/*
 * The link's schedule for c, in *cur: started at now by the first shard
 * to run c (one swap), as trace_sync starts a stage's own. False when the
 * link already runs a newer conf than c: this shard's copy of the change
 * is about to be replaced, and it spends nothing meanwhile.
 */
static bool
lt_sync(struct shp_link_trace *sh, const struct shp_trace_conf *c,
	uint64_t now, rte_int128_t *cur)
{
	const struct trace_pos s0 = {
		.base = now, .idx = 0, .avail = SHP_TRACE_OPP_BYTES,
	};
	uint16_t tag = conf_tag(c);

	*cur = shp_link_load(&sh->st);
	for (;;) {
		rte_int128_t fresh;

		if (cur->val[1] & LT_STARTED) {
			int16_t d = (int16_t)(tag - (uint16_t)(cur->val[1] >>
							       48));

			if (d < 0)
				return false;
			if (d == 0)
				return true;
		}
		fresh = lt_pack(tag, &s0);
		if (rte_atomic128_cmp_exchange(&sh->st, cur, &fresh, 0,
					       __ATOMIC_ACQ_REL,
					       __ATOMIC_ACQUIRE)) {
			*cur = fresh;
			return true;
		}
	}
}

/* ---------------------------------------------------------- data path */

static int
trace_init(struct shp_qdisc *q, const void *conf)
{
	if (q->child == NULL) {
		errno = EINVAL;
		return -1;
	}
	priv(q)->conf = conf;
	priv(q)->seen = UINT64_MAX;
	priv(q)->sh = q->env != NULL && q->env->link != NULL ?
		      &q->env->link->trace : NULL;
	return 0;
}

static const void *
trace_change(struct shp_qdisc *q, const void *conf)
{
	const void *old = priv(q)->conf;

	__atomic_store_n(&priv(q)->conf, conf, __ATOMIC_RELEASE);
	return old;
}


/*
 * trace_dequeue on the link's schedule: per run of the child's packets,
 * which of them go at which opportunity is planned on a copy of the
 * link's position, which then moves with one swap (planned again when
 * another shard moved it first). Only a plan that spends bytes is
 * published: the opportunities it skips (before its frame's arrival) are
 * lost with it, those a shard with nothing to send passes are not.
 */
static uint16_t
trace_dequeue_link(struct shp_qdisc *q, const struct shp_trace_conf *c,
		   struct rte_mbuf **pkts, uint16_t n, struct shp_ctx *ctx)
{
	struct trace_priv *p = priv(q);
	struct shp_qdisc *child = q->child;
	uint64_t now = ctx->now, bytes = 0;
	uint64_t when[TRACE_RUN_MAX];
	uint16_t got = 0, tag = conf_tag(c);
	rte_int128_t cur;

	ctx->bytes = 0;
	if (!lt_sync(p->sh, c, now, &cur))
		return 0;
	while (got < n) {
		struct rte_mbuf *const *run;
		struct rte_mbuf *one;
		struct trace_pos s, pub;
		rte_int128_t next;
		uint32_t left;
		uint16_t cnt, k, i;
		bool spent;

		cnt = shp_qdisc_peek_run(child, &one, &run, ctx);
		if (cnt == 0) {
			/* a partly sent head has gone (dropped) */
			p->left = 0;
			break;
		}
		cnt = RTE_MIN(cnt, (uint16_t)(n - got));
		cnt = RTE_MIN(cnt, (uint16_t)RTE_DIM(when));
		do {
			s = lt_unpack(c, cur);
			pub = s;
			left = p->left;
			spent = false;
			k = 0;
			while (k < cnt && pos_time(c, &s) <= now) {
				uint64_t t = pos_time(c, &s);
				uint32_t need;

				if (rx_time(run[k]) >= t) {
					/* frame k came after it */
					pos_skip_past(c, &s, rx_time(run[k]));
					continue;
				}
				need = left ? left : rte_pktmbuf_pkt_len(run[k]);
				if (need > s.avail) {
					/* takes the rest, needs more */
					left = need - s.avail;
					pos_next(c, &s);
				} else {
					s.avail -= need;
					left = 0;
					when[k++] = t;
					if (s.avail == 0)
						pos_next(c, &s);
				}
				spent = true;
				pub = s;
			}
			if (!spent)
				break;
			next = lt_pack(tag, &pub);
			if (rte_atomic128_cmp_exchange(&p->sh->st, &cur, &next,
						       0, __ATOMIC_ACQ_REL,
						       __ATOMIC_ACQUIRE)) {
				cur = next;
				break;
			}
			/* another shard spent first: plan again on what it
			 * left, unless it runs a newer conf already */
			spent = false;
		} while (lt_is(cur, tag));
		if (!spent)
			break;
		p->left = left;
		if (k > 0) {
			bytes += shp_qdisc_take_run(child, k, pkts + got, ctx);
			/* each opportunity says when its packets may go */
			for (i = 0; i < k; i++)
				shp_meta_released(pkts + got + i, 1, when[i]);
			got += k;
		}
		if (k < cnt)
			break;   /* the rest waits for a later opportunity */
	}
	if (got == n)
		ctx->more = true;
	ctx->bytes = bytes;
	return got;
}

/*
 * Run the opportunities up to now, in order, each on the packets that
 * arrived before it; stop when the vector is full (the opportunity being
 * spent stays open for the next call).
 */
static uint16_t
trace_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	      struct shp_ctx *ctx)
{
	struct trace_priv *p = priv(q);
	const struct shp_trace_conf *c;
	struct shp_qdisc *child = q->child;
	uint64_t now = ctx->now, bytes = 0;
	struct trace_pos s;
	uint16_t got = 0, k;

	c = __atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
	if (c == NULL)
		return child->ops->dequeue(child, pkts, n, ctx);
	trace_sync(p, c, now);
	if (p->sh != NULL)
		return trace_dequeue_link(q, c, pkts, n, ctx);
	s = priv_pos(p);
	while (pos_time(c, &s) <= now) {
		uint64_t t = pos_time(c, &s);
		struct rte_mbuf *const *run;
		struct rte_mbuf *one;
		uint16_t cnt;
		bool spent = false;

		if (got == n) {
			ctx->more = true;
			break;
		}
		cnt = shp_qdisc_peek_run(child, &one, &run, ctx);
		if (cnt == 0) {
			/* nothing queued: every opportunity up to now is
			 * lost, and a partly sent head has gone (dropped) */
			p->left = 0;
			pos_skip_past(c, &s, now);
			break;
		}
		if (rx_time(run[0]) >= t) {
			/* the head came after this opportunity */
			pos_skip_past(c, &s, rx_time(run[0]));
			continue;
		}
		cnt = RTE_MIN(cnt, (uint16_t)(n - got));
		for (k = 0; k < cnt && !spent; k++) {
			uint32_t need = p->left;

			if (rx_time(run[k]) >= t) {
				spent = true;
				break;
			}
			if (need == 0)
				need = rte_pktmbuf_pkt_len(run[k]);
			if (need > s.avail) {
				p->left = need - s.avail;
				spent = true;
				break;
			}
			s.avail -= need;
			p->left = 0;
			spent = s.avail == 0;
		}
		if (k > 0) {
			bytes += shp_qdisc_take_run(child, k, pkts + got, ctx);
			/* the opportunity says when a packet may go */
			shp_meta_released(pkts + got, k, t);
			got += k;
		}
		if (spent)
			pos_next(c, &s);
	}
	priv_set_pos(p, &s);
	ctx->bytes = bytes;
	return got;
}

/*
 * When trace_dequeue would first let the child's head go: the opportunity
 * that completes it, the first it may use being the first after its
 * arrival. Works on a copy of the schedule position.
 */
static uint64_t
trace_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct trace_priv *p = priv(q);
	const struct shp_trace_conf *c;
	struct shp_qdisc *child = q->child;
	uint64_t now = ctx->now, t_child, t;
	struct trace_pos s;
	struct rte_mbuf *m;
	rte_int128_t cur = { .val = { 0, 0 } };
	uint32_t need;

	c = __atomic_load_n(&p->conf, __ATOMIC_ACQUIRE);
	if (c != NULL) {
		trace_sync(p, c, now);
		if (p->sh != NULL && !lt_sync(p->sh, c, now, &cur))
			return now;   /* this shard's conf is on its way out */
	}
	t_child = shp_qdisc_next_time(child, ctx);
	if (c == NULL || t_child == UINT64_MAX)
		return t_child;
	m = child->ops->peek(child, ctx);
	if (m == NULL)   /* nothing at now: the child's time is all we know */
		return t_child > now ? t_child : UINT64_MAX;
	s = p->sh != NULL ? lt_unpack(c, cur) : priv_pos(p);
	if (pos_time(c, &s) <= rx_time(m))
		pos_skip_past(c, &s, rx_time(m));
	need = p->left ? p->left : rte_pktmbuf_pkt_len(m);
	if (need <= s.avail || p->sh != NULL) {
		/* on a link's schedule, the first opportunity it can spend
		 * (a jumbo frame's first part) */
		t = pos_time(c, &s);
	} else {
		need -= s.avail;
		t = pos_time_after(c, &s, (need + SHP_TRACE_OPP_BYTES - 1) /
					  SHP_TRACE_OPP_BYTES);
	}
	return RTE_MAX(RTE_MAX(t, now), t_child);
}


static bool
trace_idle(const struct shp_qdisc *q)
{
	return __atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE) == NULL;
}


static void
trace_dump(const struct shp_qdisc *q, FILE *f)
{
	const struct shp_trace_conf *c =
		__atomic_load_n(&priv(q)->conf, __ATOMIC_ACQUIRE);

	fprintf(f, "%s", c == NULL ? "off" : c->path);
}

static const struct shp_qdisc_ops shp_trace_ops = {
	.id = "trace",
	.priv_size = sizeof(struct trace_priv),
	.init = trace_init,
	.change = trace_change,
	.enqueue = shp_gate_enqueue,
	.dequeue = trace_dequeue,
	.peek = shp_gate_peek,
	.next_time = trace_next_time,
	.idle = trace_idle,
	.stats = shp_gate_stats,
	.dump = trace_dump,
};

/* -------------------------------------------------------------- parser */

/* One line of FILE: a time in ms, or a comment (-1 with *ms untouched). */
static int
trace_line(char *line, uint64_t *ms, bool *comment)
{
	char *s = line, *end;
	size_t len = strlen(s);

	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r' ||
			   s[len - 1] == ' ' || s[len - 1] == '\t'))
		s[--len] = '\0';
	while (*s == ' ' || *s == '\t')
		s++;
	*comment = *s == '#';
	if (*comment)
		return 0;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*ms = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || *ms > TRACE_MAX_MS)
		return -1;
	return 0;
}

static struct shp_trace_conf *
trace_load(const char *path, char *err)
{
	struct shp_trace_conf *c = NULL;
	size_t lines = 0, room = 0;
	uint64_t prev = 0, ms = 0;
	struct shp_file sf;
	char *line;
	int rc;

	if (path[0] == '\0') {
		snprintf(err, SHP_ERR_LEN, "trace: needs a FILE (Mahimahi's "
			 "format: one time in ms a line)");
		return NULL;
	}
	/* read on the control thread: only a regular file, bounded */
	if (shp_file_open(&sf, "trace:", path, TRACE_FILE_MAX, TRACE_LINE_MAX,
			  err) < 0)
		return NULL;
	c = malloc(sizeof(*c));
	if (c == NULL)
		goto oom;
	c->n = 0;
	while ((rc = shp_file_line(&sf, &line)) > 0) {
		bool comment;

		lines = sf.line;
		if (trace_line(line, &ms, &comment) < 0) {
			/* the file may be anyone's: its line is not quoted
			 * in a reply */
			snprintf(err, SHP_ERR_LEN, "trace: %s:%zu: not a time "
				 "in ms (0..%" PRIu64 ")", path, lines,
				 TRACE_MAX_MS);
			goto fail;
		}
		if (comment)
			continue;
		if (c->n > 0 && ms < prev) {
			snprintf(err, SHP_ERR_LEN, "trace: %s:%zu: %" PRIu64
				 " ms is before the line above (%" PRIu64
				 " ms): times never decrease", path, lines,
				 ms, prev);
			goto fail;
		}
		if (c->n == TRACE_MAX_LINES) {
			snprintf(err, SHP_ERR_LEN, "trace: %s:%zu: more than "
				 "%" PRIu32 " opportunities", path, lines,
				 TRACE_MAX_LINES);
			goto fail;
		}
		if (c->n == room) {
			struct shp_trace_conf *g;

			room = room ? room * 2 : 1024;
			g = realloc(c, sizeof(*c) + room * sizeof(c->t[0]));
			if (g == NULL)
				goto oom;
			c = g;
		}
		c->t[c->n++] = ms * NS_PER_MS;
		prev = ms;
	}
	if (rc < 0)
		goto fail;
	lines = sf.line;
	if (lines == 0) {
		snprintf(err, SHP_ERR_LEN, "trace: %s:1: empty file: no "
			 "opportunity", path);
		goto fail;
	}
	if (c->n == 0) {
		snprintf(err, SHP_ERR_LEN, "trace: %s:%zu: no opportunity "
			 "at all (only comments)", path, lines);
		goto fail;
	}
	if (prev == 0) {
		snprintf(err, SHP_ERR_LEN, "trace: %s:%zu: the last time is "
			 "0 ms: a trace must last (its period is its last "
			 "time)", path, lines);
		goto fail;
	}
	c->period = prev * NS_PER_MS;
	c->hdr.id = shp_conf_new_id();
	c->path = strdup(path);
	if (c->path == NULL)
		goto oom;
	shp_file_close(&sf);
	return c;
oom:
	snprintf(err, SHP_ERR_LEN, "trace: %s: out of memory", path);
fail:
	free(c);
	shp_file_close(&sf);
	return NULL;
}

static void
trace_conf_free(struct shp_trace_conf *c)
{
	if (c == NULL)
		return;
	free(c->path);
	free(c);
}

static void *
trace_kind_parse(const char *args, const struct shp_kind_env *env,
		 char *err)
{
	char path[TRACE_PATH_MAX];
	size_t len;

	RTE_SET_USED(env);
	while (*args == ' ' || *args == '\t')
		args++;
	len = strlen(args);
	while (len > 0 && (args[len - 1] == ' ' || args[len - 1] == '\t'))
		len--;
	if (len >= sizeof(path) || memchr(args, '\n', len) != NULL) {
		snprintf(err, SHP_ERR_LEN, "trace: '%.*s...': not a file "
			 "name (one line, below %d bytes)",
			 (int)RTE_MIN(strcspn(args, "\r\n"), (size_t)40), args,
			 TRACE_PATH_MAX);
		return NULL;
	}
	memcpy(path, args, len);
	path[len] = '\0';
	return trace_load(path, err);
}

static int
trace_kind_format(const void *conf, char *buf, size_t len)
{
	const struct shp_trace_conf *c = conf;

	return snprintf(buf, len, "%s", c->path);
}

static void
trace_kind_free(void *conf)
{
	trace_conf_free(conf);
}

const struct shp_kind shp_kind_trace = {
	.name = "trace",
	.slot = SHP_SLOT_RATE,
	.ops = &shp_trace_ops,
	.parse = trace_kind_parse,
	.format = trace_kind_format,
	.conf_free = trace_kind_free,
	.reads_file = true,
	.usage = "trace FILE (Mahimahi: one time in ms a line, each an "
		 "opportunity for 1504 bytes; repeats)",
};
