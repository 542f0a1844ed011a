/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tc-netem grammar (iproute2 tc/q_netem.c behaviour: same keywords,
 * abbreviations, optional numeric arguments recognised by a leading digit,
 * defaults and cross-checks), with our unit rules (a time of our own words needs a unit) and
 * one-line errors that name the offending word.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netem_trace.h"
#include "shp_kind.h"
#include "shp_netem.h"
#include "shp_qdisc.h"
#include "shp_tcargs.h"


struct parser {
	struct shp_tcargs a;        /* words, position, error */
	struct shp_netem_conf *c;
	bool loss_seen;
	bool reorder_seen;
	bool gap_seen;
};

static const char *
cur(const struct parser *p)
{
	return shp_tc_cur(&p->a);
}

static bool
next_is_number(const struct parser *p)
{
	return shp_tc_next_is_number(&p->a);
}

static bool
next_word_is(const struct parser *p, const char *w)
{
	return p->a.i + 1 < p->a.argc && strcmp(p->a.argv[p->a.i + 1], w) == 0;
}

/* Move to the argument of the current keyword, which must exist. */
static int
need_arg(struct parser *p, const char *what)
{
	return shp_tc_next(&p->a, what);
}

static int
get_time(struct parser *p, const char *kw, uint64_t *ns)
{
	return shp_tc_time(&p->a, kw, ns);
}

/* a time tc takes too: a bare number is nanoseconds, as its get_time64
 * reads delay, jitter and slot (our own words need a unit) */
static int
get_tc_time(struct parser *p, const char *kw, uint64_t *ns)
{
	return shp_tc_time_bare(&p->a, kw, SHP_TC_BARE_NS, ns);
}

static int
get_percent(struct parser *p, const char *kw, double *frac)
{
	return shp_tc_percent(&p->a, kw, frac);
}

static int
get_u32(struct parser *p, const char *kw, uint32_t *v)
{
	return shp_tc_u32(&p->a, kw, v);
}

static int
get_s32(struct parser *p, const char *kw, int32_t *v)
{
	int64_t x;

	if (shp_tc_int(&p->a, kw, INT32_MIN, INT32_MAX, &x) < 0)
		return -1;
	*v = (int32_t)x;
	return 0;
}

/* tc reads limit and slot bytes with get_size (so "10k" is allowed). */
static int
get_size32(struct parser *p, const char *kw, uint32_t *v)
{
	return shp_tc_size32(&p->a, kw, v);
}

/* 100% minus the percentage just read, computed from the number as
 * written ("0.1%" gives exactly what "99.9%" reads as), so that the
 * printer can write the default back in few digits. */
static double
complement(const struct parser *p)
{
	return (100 - strtod(cur(p), NULL)) / 100;
}

static void
prob_set(struct shp_netem_prob *pr, double p, double corr, bool corr_set)
{
	pr->p = p;
	pr->corr = corr;
	pr->corr_set = corr_set;
	pr->p_after_hit = p + corr * (1 - p);
	pr->p_after_miss = p * (1 - corr);
}

/* P [CORR] */
static int
parse_prob(struct parser *p, const char *kw, struct shp_netem_prob *pr)
{
	double v, corr = 0;
	bool corr_set = false;

	if (need_arg(p, "a percentage") < 0 || get_percent(p, kw, &v) < 0)
		return -1;
	if (next_is_number(p)) {
		p->a.i++;
		if (get_percent(p, kw, &corr) < 0)
			return -1;
		corr_set = true;
	}
	prob_set(pr, v, corr, corr_set);
	return 0;
}

static struct shp_netem_dist *
get_dist(struct parser *p, const char *kw)
{
	const char *name = cur(p);
	struct shp_netem_dist *d;
	char err[SHP_ERR_LEN];

	d = shp_netem_dist_builtin(name);
	if (d != NULL)
		return d;
	if (strchr(name, '/') != NULL) {
		d = shp_netem_dist_load(name, err);
		if (d == NULL)
			shp_tc_fail(&p->a, "%s: %s", kw, err);
		return d;
	}
	/* like tc: NAME means NAME.dist in iproute2's table directory */
	d = shp_netem_dist_find(name, err);
	if (d == NULL)
		shp_tc_fail(&p->a, "%s: %s", kw, err);
	return d;
}

static int
parse_delay(struct parser *p)
{
	struct shp_netem_conf *c = p->c;
	const char *kw = cur(p);

	if (need_arg(p, "a time") < 0 || get_tc_time(p, kw, &c->latency) < 0)
		return -1;
	if (!next_is_number(p))
		return 0;
	p->a.i++;
	if (get_tc_time(p, kw, &c->jitter) < 0)
		return -1;
	if (!next_is_number(p))
		return 0;
	p->a.i++;
	c->delay_corr_set = true;
	return get_percent(p, kw, &c->delay_corr);
}

/*
 * loss pattern N M (0 < N <= M) and loss burst LEN PERIOD (0 < LEN <=
 * PERIOD): two counts, the first not above the second.
 */
static int
parse_loss_det(struct parser *p, const char *model)
{
	struct shp_netem_conf *c = p->c;
	bool pattern = strcmp(model, "pattern") == 0;
	const char *first = pattern ? "N" : "LEN";
	const char *second = pattern ? "M" : "PERIOD";

	c->loss_model = pattern ? SHP_NETEM_LOSS_PATTERN : SHP_NETEM_LOSS_BURST;
	if (need_arg(p, pattern ? "N of 'loss pattern N M'" :
		     "LEN of 'loss burst LEN PERIOD'") < 0 ||
	    get_u32(p, model, &c->det.n) < 0)
		return -1;
	if (c->det.n == 0)
		return shp_tc_fail(&p->a, "loss %s: %s '%s' must be above 0",
				   model, first, cur(p));
	if (need_arg(p, pattern ? "M of 'loss pattern N M'" :
		     "PERIOD of 'loss burst LEN PERIOD'") < 0 ||
	    get_u32(p, model, &c->det.m) < 0)
		return -1;
	if (c->det.m < c->det.n)
		return shp_tc_fail(&p->a, "loss %s: %s '%s' is below %s "
				   "%" PRIu32, model, second, cur(p), first,
				   c->det.n);
	return 0;
}

/* loss sequence BITS: 1 to SHP_NETEM_LOSS_SEQ_MAX characters 0 or 1. */
static int
parse_loss_seq(struct parser *p)
{
	struct shp_netem_conf *c = p->c;
	const char *w;
	size_t i, len;

	c->loss_model = SHP_NETEM_LOSS_SEQUENCE;
	if (need_arg(p, "BITS of 'loss sequence BITS' (0: sent, "
		     "1: lost)") < 0)
		return -1;
	w = cur(p);
	len = strlen(w);
	if (len == 0 || len > SHP_NETEM_LOSS_SEQ_MAX)
		return shp_tc_fail(&p->a, "loss sequence: %zu characters: "
				   "give 1 to %d", len, SHP_NETEM_LOSS_SEQ_MAX);
	for (i = 0; i < len; i++)
		if (w[i] != '0' && w[i] != '1')
			return shp_tc_fail(&p->a, "loss sequence: character "
					   "%zu is '%c': only 0 (sent) and 1 "
					   "(lost)", i + 1, w[i]);
	c->seq = malloc(len);
	if (c->seq == NULL)
		return shp_tc_fail(&p->a, "out of memory");
	for (i = 0; i < len; i++)
		c->seq[i] = w[i] == '1';
	c->seq_len = (uint32_t)len;
	return 0;
}

static int
parse_loss(struct parser *p)
{
	struct shp_netem_conf *c = p->c;
	const char *kw = cur(p);
	/* the labels tc prints them with (`loss state p13 1% p31 99%
	 * ...`): taken before each value too, so its line reads back */
	static const char *const state_lb[] = { "p13", "p31", "p32", "p23",
						"p14" };
	static const char *const ge_lb[] = { "p", "r", "1-h", "1-k" };
	const char *const *lb;
	const char *model;
	double *v[5];
	int i, nv;

	if (p->loss_seen) {
		return shp_tc_fail(&p->a, "'%s' given twice", kw);
	}
	p->loss_seen = true;
	if (need_arg(p, "a percentage or random, state, gemodel") < 0)
		return -1;
	model = cur(p);
	if (strcmp(model, "random") == 0 || isdigit((unsigned char)model[0]) ||
	    model[0] == '-' || model[0] == '.') {
		if (strcmp(model, "random") != 0)
			p->a.i--;   /* old syntax: loss P [CORR] */
		c->loss_model = SHP_NETEM_LOSS_RANDOM;
		return parse_prob(p, "loss", &c->loss);
	}
	if (strcmp(model, "pattern") == 0 || strcmp(model, "burst") == 0)
		return parse_loss_det(p, model);
	if (strcmp(model, "sequence") == 0)
		return parse_loss_seq(p);
	if (strcmp(model, "state") == 0) {
		c->loss_model = SHP_NETEM_LOSS_STATE;
		v[0] = &c->state.p13;
		v[1] = &c->state.p31;
		v[2] = &c->state.p32;
		v[3] = &c->state.p23;
		v[4] = &c->state.p14;
		nv = 5;
		lb = state_lb;
	} else if (strcmp(model, "gemodel") == 0) {
		c->loss_model = SHP_NETEM_LOSS_GEMODEL;
		v[0] = &c->ge.p;
		v[1] = &c->ge.r;
		v[2] = &c->ge.h1;
		v[3] = &c->ge.k1;
		nv = 4;
		lb = ge_lb;
	} else {
		return shp_tc_fail(&p->a, "%s: unknown loss model '%s' (use "
				   "random, state, gemodel, pattern, burst, "
				   "sequence or a percentage)", kw, model);
	}
	if (next_word_is(p, lb[0]))
		p->a.i++;
	if (need_arg(p, "a percentage") < 0 || get_percent(p, model, v[0]) < 0)
		return -1;
	/* tc's defaults */
	if (c->loss_model == SHP_NETEM_LOSS_STATE) {
		c->state.p31 = complement(p);
		c->state.p32 = 0;
		c->state.p23 = 1;
		c->state.p14 = 0;
	} else {
		c->ge.r = complement(p);
		c->ge.h1 = 1;
		c->ge.k1 = 0;
	}
	for (i = 1; i < nv; i++) {
		if (next_word_is(p, lb[i])) {
			p->a.i++;
			if (need_arg(p, "a percentage") < 0)
				return -1;
		} else if (next_is_number(p)) {
			p->a.i++;
		} else {
			break;
		}
		if (get_percent(p, model, v[i]) < 0)
			return -1;
	}
	if (c->loss_model == SHP_NETEM_LOSS_STATE) {
		if (c->state.p13 + c->state.p14 > 1 + 1e-12) {
			return shp_tc_fail(&p->a, "loss state: p13 + p14 "
					   "exceed 100%% ('%s')", cur(p));
		}
		if (c->state.p31 + c->state.p32 > 1 + 1e-12) {
			return shp_tc_fail(&p->a, "loss state: p31 + p32 "
					   "exceed 100%% ('%s')", cur(p));
		}
	}
	return 0;
}

/* misorder P [CORR] depth K */
static int
parse_misorder(struct parser *p)
{
	struct shp_netem_conf *c = p->c;

	if (parse_prob(p, "misorder", &c->misorder) < 0)
		return -1;
	if (shp_tc_peek(&p->a) == NULL ||
	    strcmp(shp_tc_peek(&p->a), "depth") != 0)
		return shp_tc_fail(&p->a, "misorder: needs 'depth K' (how "
				   "many later frames overtake a chosen one, "
				   "1..%d)", SHP_NETEM_MISORDER_DEPTH_MAX);
	p->a.i++;
	if (need_arg(p, "a number of frames") < 0 ||
	    get_u32(p, "misorder depth", &c->misorder_depth) < 0)
		return -1;
	if (c->misorder_depth < 1 ||
	    c->misorder_depth > SHP_NETEM_MISORDER_DEPTH_MAX)
		return shp_tc_fail(&p->a, "misorder: depth '%s': 1..%d frames",
				   cur(p), SHP_NETEM_MISORDER_DEPTH_MAX);
	return 0;
}

static int
parse_reorder(struct parser *p)
{
	p->reorder_seen = true;
	return parse_prob(p, "reorder", &p->c->reorder);
}

/* outage ON_MEAN OFF_MEAN: both times, neither 0 (a link never up, or
 * never down, is not an outage model). */
static int
parse_outage(struct parser *p)
{
	struct shp_netem_conf *c = p->c;

	if (need_arg(p, "the mean up time") < 0 ||
	    get_time(p, "outage", &c->outage_on) < 0)
		return -1;
	if (c->outage_on == 0)
		goto zero;
	if (need_arg(p, "the mean down time") < 0 ||
	    get_time(p, "outage", &c->outage_off) < 0)
		return -1;
	if (c->outage_off == 0)
		goto zero;
	return 0;
zero:
	return shp_tc_fail(&p->a, "outage: '%s': the mean up and down times "
			   "must be above 0", cur(p));
}

/*
 * ber RATE [drop|corrupt]. The mode word is optional and both words are
 * netem keywords too (`drop P` is loss, `corrupt P` corrupt): it is the
 * mode unless a number, or a loss model's word, follows it.
 */
static int
parse_ber(struct parser *p)
{
	struct shp_netem_conf *c = p->c;
	const char *w, *after;
	char *end;
	double v;

	if (need_arg(p, "a bit error rate") < 0)
		return -1;
	w = cur(p);
	v = strtod(w, &end);
	if (end == w || *end != '\0' || !isdigit((unsigned char)w[0]) ||
	    !(v > 0 && v < 1))
		return shp_tc_fail(&p->a, "ber: '%s': a bit error rate is a "
				   "number between 0 and 1, both excluded "
				   "(1e-6)", w);
	c->ber = v;
	c->ber_drop = false;
	w = shp_tc_peek(&p->a);
	if (w == NULL || (strcmp(w, "drop") != 0 && strcmp(w, "corrupt") != 0))
		return 0;
	after = p->a.i + 2 < p->a.argc ? p->a.argv[p->a.i + 2] : NULL;
	if (after != NULL &&
	    (isdigit((unsigned char)after[0]) || after[0] == '.' ||
	     after[0] == '-' ||
	     (strcmp(w, "drop") == 0 &&
	      (shp_tc_matches(after, "random") ||
	       shp_tc_matches(after, "state") ||
	       shp_tc_matches(after, "gemodel") ||
	       strcmp(after, "pattern") == 0 ||
	       strcmp(after, "burst") == 0 ||
	       strcmp(after, "sequence") == 0))))
		return 0;
	p->a.i++;
	c->ber_drop = strcmp(w, "drop") == 0;
	return 0;
}

/* RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]], each optional number
 * recognised as tc does: the overheads may be negative, the cell size
 * starts with a digit ("rate 1mbit 20 -5" has a cell overhead and no
 * cell size). */
static int
parse_rate(struct parser *p)
{
	struct shp_netem_conf *c = p->c;
	const char *kw = cur(p);

	if (need_arg(p, "a rate") < 0)
		return -1;
	if (strchr(cur(p), '%') != NULL)
		return shp_tc_fail(&p->a, "%s: '%s': a rate relative to the "
				   "link is not supported, give bit/s", kw,
				   cur(p));
	if (shp_tc_rate(&p->a, kw, &c->rate) < 0)
		return -1;
	if (next_is_number(p)) {
		p->a.i++;
		if (get_s32(p, kw, &c->packet_overhead) < 0)
			return -1;
	}
	if (shp_tc_next_is_unsigned(&p->a)) {
		p->a.i++;
		if (get_u32(p, kw, &c->cell_size) < 0)
			return -1;
	}
	if (next_is_number(p)) {
		p->a.i++;
		if (get_s32(p, kw, &c->cell_overhead) < 0)
			return -1;
	}
	return 0;
}

static int
parse_slot(struct parser *p)
{
	struct shp_netem_conf *c = p->c;
	const char *kw = cur(p);

	if (next_is_number(p)) {
		p->a.i++;
		c->slot_mode = SHP_NETEM_SLOT_RANGE;
		/* nothing of an earlier `slot distribution` stays */
		free(c->slot_dist);
		c->slot_dist = NULL;
		c->slot_delay = c->slot_jitter = 0;
		if (get_tc_time(p, kw, &c->slot_min) < 0)
			return -1;
		c->slot_max = c->slot_min;
		if (next_is_number(p)) {
			p->a.i++;
			if (get_tc_time(p, kw, &c->slot_max) < 0)
				return -1;
			if (c->slot_max < c->slot_min) {
				return shp_tc_fail(&p->a, "%s: max '%s' is "
						   "below min", kw, cur(p));
			}
		}
	} else {
		if (need_arg(p, "a time or 'distribution'") < 0)
			return -1;
		if (strcmp(cur(p), "distribution") != 0) {
			return shp_tc_fail(&p->a, "%s: unknown slot "
					   "parameter '%s'", kw, cur(p));
		}
		c->slot_mode = SHP_NETEM_SLOT_DIST;
		free(c->slot_dist);   /* the last one given counts */
		c->slot_dist = NULL;
		c->slot_min = c->slot_max = 0;   /* nor of an earlier range */
		/* a time at once: tc's printed line, which names no
		 * table (uniform here) */
		if (next_is_number(p)) {
			/* (need_arg below moves to it) */
		} else if (need_arg(p, "a distribution") < 0) {
			return -1;
		} else if (strcmp(cur(p), "uniform") != 0) {
			c->slot_dist = get_dist(p, "slot distribution");
			if (c->slot_dist == NULL)
				return -1;
		}
		if (need_arg(p, "a delay") < 0 ||
		    get_tc_time(p, kw, &c->slot_delay) < 0 ||
		    need_arg(p, "a jitter") < 0 ||
		    get_tc_time(p, kw, &c->slot_jitter) < 0)
			return -1;
		if (c->slot_jitter == 0) {
			return shp_tc_fail(&p->a, "%s: jitter '%s' must be "
					   "positive", kw, cur(p));
		}
	}
	if (shp_tc_peek(&p->a) != NULL &&
	    shp_tc_matches(shp_tc_peek(&p->a), "packets")) {
		p->a.i++;
		if (need_arg(p, "a number of packets") < 0 ||
		    get_u32(p, "slot packets", &c->slot_packets) < 0)
			return -1;
	}
	if (shp_tc_peek(&p->a) != NULL &&
	    shp_tc_matches(shp_tc_peek(&p->a), "bytes")) {
		p->a.i++;
		if (need_arg(p, "a size") < 0 ||
		    get_size32(p, "slot bytes", &c->slot_bytes) < 0)
			return -1;
	}
	return 0;
}

/* trace FILE [once|loop] */
static int
parse_trace(struct parser *p)
{
	struct shp_netem_conf *c = p->c;
	char err[SHP_ERR_LEN];
	const char *path, *w;
	bool loop = true;

	if (need_arg(p, "a trace file (TheaterQ's format)") < 0)
		return -1;
	path = cur(p);
	w = shp_tc_peek(&p->a);
	if (w != NULL && (strcmp(w, "once") == 0 || strcmp(w, "loop") == 0)) {
		loop = strcmp(w, "loop") == 0;
		p->a.i++;
	}
	shp_netem_trace_free(c->trace);
	c->trace = shp_netem_trace_load(path, loop, err);
	if (c->trace == NULL)
		return shp_tc_fail(&p->a, "%s", err);
	return 0;
}

/* a trace's rows set these: the text may not set them too */
static int
check_trace(struct parser *p)
{
	struct shp_netem_conf *c = p->c;
	const char *kw = NULL;

	if (c->latency != 0 || c->jitter != 0 || c->delay_corr_set)
		kw = "delay";
	else if (c->rate != 0)
		kw = "rate";
	else if (c->loss_model != SHP_NETEM_LOSS_NONE)
		kw = "loss";
	else if (c->duplicate.p > 0)
		kw = "duplicate";
	else if (c->limit_set)
		kw = "limit";
	if (kw != NULL)
		return shp_tc_fail(&p->a, "'trace' sets delay, jitter, rate, "
				   "loss, duplicate and limit row by row: "
				   "'%s' cannot be given with it", kw);
	/* JITTER is TheaterQ's standard deviation: netem's normal table
	 * unless the text names one */
	if (c->dist == NULL) {
		c->dist = shp_netem_dist_builtin("normal");
		if (c->dist == NULL)
			return shp_tc_fail(&p->a, "out of memory");
	}
	return 0;
}

/* Whole-conf checks tc makes after the words, plus ours. */
static int
check_conf(struct parser *p)
{
	struct shp_netem_conf *c = p->c;

	if (c->reorder.p > 0) {
		if (c->latency == 0) {
			return shp_tc_fail(&p->a, "'reorder' needs a "
					   "'delay': reordering is not "
					   "possible without one");
		}
		if (c->gap == 0)
			c->gap = 1;
		if (c->noreorder || c->inorder) {
			return shp_tc_fail(&p->a, c->noreorder ?
					   "'noreorder' contradicts 'reorder'" :
					   "'inorder' contradicts 'reorder'");
		}
	} else if (c->gap > 0) {
		return shp_tc_fail(&p->a, "'gap' needs a 'reorder' "
				   "probability");
	} else if (p->reorder_seen) {
		/* reorder 0%: nothing to do, as in tc */
		prob_set(&c->reorder, 0, 0, false);
	}
	if (c->misorder.p > 0 && (c->reorder.p > 0 || c->noreorder ||
				  c->inorder)) {
		return shp_tc_fail(&p->a, "'misorder' contradicts '%s'",
				   c->reorder.p > 0 ? "reorder" :
				   c->noreorder ? "noreorder" : "inorder");
	}
	if (c->misorder.p <= 0)
		c->misorder_depth = 0;
	if (c->misorder_timeout != 0 && c->misorder.p <= 0)
		return shp_tc_fail(&p->a, "'misorder_timeout' needs a "
				   "'misorder' probability");
	/* 0%: off whatever the correlation, so that the printer, which
	 * leaves it out, reads back the same conf */
	if (c->duplicate.p == 0)
		prob_set(&c->duplicate, 0, 0, false);
	if (c->corrupt.p == 0)
		prob_set(&c->corrupt, 0, 0, false);
	if (c->ecn && c->loss_model == SHP_NETEM_LOSS_NONE) {
		return shp_tc_fail(&p->a, "'ecn' needs a 'loss' model");
	}
	if (c->accumulate != 0 && c->slot_mode != SHP_NETEM_SLOT_OFF) {
		/* both decide when a due packet leaves: which one rounds the
		 * other's instants is a choice not made yet */
		return shp_tc_fail(&p->a, "'accumulate' and 'slot' cannot "
				   "be combined");
	}
	if (c->trace != NULL && check_trace(p) < 0)
		return -1;
	if (c->dist != NULL && c->trace == NULL &&
	    (c->latency == 0 || c->jitter == 0)) {
		return shp_tc_fail(&p->a, "'distribution' needs a 'delay' "
				   "with a jitter");
	}
	return 0;
}

static int
netem_words(struct parser *p)
{
	struct shp_netem_conf *c = p->c;
	int rc = 0;

	for (p->a.i = 0; p->a.i < p->a.argc && rc == 0; p->a.i++) {
		const char *w = cur(p);

		/* tc's order decides what an abbreviation means */
		if (shp_tc_matches(w, "limit")) {
			rc = need_arg(p, "a number of packets");
			if (rc == 0)
				rc = get_size32(p, "limit", &c->limit);
			c->limit_set = true;
		} else if (shp_tc_matches(w, "latency") ||
			   shp_tc_matches(w, "delay")) {
			rc = parse_delay(p);
		} else if (shp_tc_matches(w, "loss") ||
			   shp_tc_matches(w, "drop")) {
			rc = parse_loss(p);
		} else if (shp_tc_matches(w, "seed")) {
			rc = need_arg(p, "a number");
			if (rc == 0)
				rc = shp_tc_u64(&p->a, "seed", &c->seed);
			c->seed_set = true;
		} else if (shp_tc_matches(w, "ecn")) {
			c->ecn = true;
		} else if (shp_tc_matches(w, "reorder")) {
			rc = parse_reorder(p);
		} else if (shp_tc_matches(w, "corrupt")) {
			rc = parse_prob(p, "corrupt", &c->corrupt);
		} else if (shp_tc_matches(w, "gap")) {
			rc = need_arg(p, "a number of packets");
			if (rc == 0)
				rc = get_u32(p, "gap", &c->gap);
			p->gap_seen = true;
		} else if (shp_tc_matches(w, "duplicate")) {
			rc = parse_prob(p, "duplicate", &c->duplicate);
		} else if (shp_tc_matches(w, "distribution")) {
			rc = need_arg(p, "a distribution");
			if (rc == 0) {
				free(c->dist);
				c->dist = NULL;
			}
			if (rc == 0 && strcmp(cur(p), "uniform") != 0) {
				c->dist = get_dist(p, "distribution");
				if (c->dist == NULL)
					rc = -1;
			}
		} else if (shp_tc_matches(w, "rate")) {
			rc = parse_rate(p);
		} else if (shp_tc_matches(w, "slot")) {
			rc = parse_slot(p);
		} else if (strcmp(w, "noreorder") == 0) {
			c->noreorder = true;
		} else if (strcmp(w, "inorder") == 0) {
			c->inorder = true;
		} else if (strcmp(w, "misorder") == 0) {
			rc = parse_misorder(p);
		} else if (strcmp(w, "misorder_timeout") == 0) {
			rc = need_arg(p, "a time");
			if (rc == 0)
				rc = get_time(p, "misorder_timeout",
					      &c->misorder_timeout);
			if (rc == 0 && c->misorder_timeout == 0)
				rc = shp_tc_fail(&p->a, "misorder_timeout: "
						 "'%s': must be above 0",
						 cur(p));
		} else if (strcmp(w, "outage") == 0) {
			rc = parse_outage(p);
		} else if (strcmp(w, "ber") == 0) {
			rc = parse_ber(p);
		} else if (strcmp(w, "store") == 0) {
			rc = need_arg(p, "a size in bytes, or 'off'");
			if (rc == 0 && strcmp(cur(p), "off") == 0)
				c->store = 0;
			else if (rc == 0)
				rc = get_size32(p, "store", &c->store);
			c->store_set = true;
			if (rc == 0 && c->store != 0 &&
			    shp_tc_peek(&p->a) != NULL &&
			    strcmp(shp_tc_peek(&p->a), "after") == 0) {
				p->a.i++;
				rc = need_arg(p, "a number of packets");
				if (rc == 0)
					rc = get_u32(p, "store after",
						     &c->store_after);
				c->store_after_set = rc == 0;
			}
		} else if (strcmp(w, "trace") == 0) {
			rc = parse_trace(p);
		} else if (strcmp(w, "accumulate") == 0) {
			rc = need_arg(p, "a time (the window)");
			if (rc == 0)
				rc = get_time(p, "accumulate", &c->accumulate);
			if (rc == 0 && c->accumulate == 0)
				rc = shp_tc_fail(&p->a, "accumulate: '%s': the "
						 "window must be above 0",
						 cur(p));
		} else {
			rc = shp_tc_fail(&p->a, "unknown keyword '%s'", w);
		}
	}
	return rc;
}

static struct shp_netem_conf *
netem_parse(struct parser *p)
{
	struct shp_netem_conf *c;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		shp_tc_fail(&p->a, "out of memory");
		return NULL;
	}
	c->hdr.id = shp_conf_new_id();
	p->c = c;
	if (netem_words(p) < 0 || check_conf(p) < 0) {
		shp_netem_conf_free(c);
		return NULL;
	}
	return c;
}

struct shp_netem_conf *
shp_netem_parse_argv(int argc, char **argv, char *err)
{
	struct parser p = {
		.a = { .argc = argc, .argv = argv, .qdisc = "netem",
		       .err = err },
	};

	err[0] = '\0';
	return netem_parse(&p);
}

struct shp_netem_conf *
shp_netem_parse(const char *args, char *err)
{
	struct parser p = { .a = { .qdisc = "netem", .err = err } };
	char *copy, *argv[SHP_TC_MAX_WORDS];
	struct shp_netem_conf *c;
	size_t len = strlen(args != NULL ? args : "") + 1;

	err[0] = '\0';
	copy = malloc(len);
	if (copy == NULL) {
		shp_tc_fail(&p.a, "out of memory");
		return NULL;
	}
	c = shp_tc_split(&p.a, args, copy, len, argv, SHP_TC_MAX_WORDS) < 0 ?
		NULL : netem_parse(&p);
	free(copy);
	return c;
}

void
shp_netem_conf_free(struct shp_netem_conf *c)
{
	if (c == NULL)
		return;
	free(c->dist);
	free(c->slot_dist);
	free(c->seq);
	shp_netem_trace_free(c->trace);
	free(c);
}

uint32_t
shp_netem_default_limit(unsigned int pool_size)
{
	if (pool_size == 0)
		return 1000;
	return pool_size / 2 > 0 ? pool_size / 2 : 1;
}

/* ---- printing: exact, so that the text parses back to the same conf ---- */

struct out {
	char *buf;
	size_t len;
	size_t pos;   /* what would have been written */
};

static void __attribute__((format(printf, 2, 3)))
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	size_t room = o->pos < o->len ? o->len - o->pos : 0;
	int n;

	/* every word is put with a blank before it, but the first */
	if (o->pos == 0 && fmt[0] == ' ')
		fmt++;
	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->pos : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n;
}

static void
put_time(struct out *o, uint64_t ns)
{
	char t[32];

	shp_fmt_time(t, sizeof(t), ns);
	put(o, " %s", t);
}

/* Shortest %g that reads back to the same fraction. */
static void
put_percent(struct out *o, double frac)
{
	char s[64];
	int prec;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(s, sizeof(s), "%.*g", prec, frac * 100);
		if (strtod(s, NULL) / 100 == frac &&
		    (strchr(s, 'e') == NULL || prec == 17))
			break;
	}
	put(o, " %s%%", s);
}

/* Shortest %g that reads back to the same number. */
static void
put_number(struct out *o, double v)
{
	char s[64];
	int prec;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(s, sizeof(s), "%.*g", prec, v);
		if (strtod(s, NULL) == v)
			break;
	}
	put(o, " %s", s);
}

static void
put_prob(struct out *o, const char *kw, const struct shp_netem_prob *pr)
{
	put(o, " %s", kw);
	put_percent(o, pr->p);
	if (pr->corr_set || pr->corr != 0)
		put_percent(o, pr->corr);
}

/* A sequence's bits as its 0/1 characters (up to 4096: no format). */
static void
put_bits(struct out *o, const uint8_t *bits, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (o->pos + 1 < o->len) {
			o->buf[o->pos] = bits[i] ? '1' : '0';
			o->buf[o->pos + 1] = '\0';
		}
		o->pos++;
	}
}

static void
put_rate(struct out *o, uint64_t bps)
{
	char r[32];

	shp_fmt_rate(r, sizeof(r), bps);
	put(o, " %s", r);
}

/* the deterministic loss models, which tc's netem has not */
static void
put_det_loss(struct out *o, const struct shp_netem_conf *c)
{
	if (c->loss_model == SHP_NETEM_LOSS_PATTERN ||
	    c->loss_model == SHP_NETEM_LOSS_BURST)
		put(o, " loss %s %" PRIu32 " %" PRIu32,
		    c->loss_model == SHP_NETEM_LOSS_PATTERN ? "pattern" :
		    "burst", c->det.n, c->det.m);
	else if (c->loss_model == SHP_NETEM_LOSS_SEQUENCE) {
		put(o, " loss sequence ");
		put_bits(o, c->seq, c->seq_len);
	}
}

/* outage, ber and accumulate: ours, printed the same in either text */
static void
put_ours(struct out *o, const struct shp_netem_conf *c)
{
	if (c->outage_on != 0) {
		put(o, " outage");
		put_time(o, c->outage_on);
		put_time(o, c->outage_off);
	}
	if (c->ber > 0) {
		put(o, " ber");
		put_number(o, c->ber);
		if (c->ber_drop)
			put(o, " drop");
	}
	if (c->accumulate != 0) {
		put(o, " accumulate");
		put_time(o, c->accumulate);
	}
	if (c->misorder.p > 0) {
		put_prob(o, "misorder", &c->misorder);
		put(o, " depth %" PRIu32, c->misorder_depth);
		if (c->misorder_timeout != 0) {
			put(o, " misorder_timeout");
			put_time(o, c->misorder_timeout);
		}
	}
	if (c->trace != NULL)
		put(o, " trace %s%s", c->trace->path,
		    c->trace->loop ? "" : " once");
}

int
shp_netem_conf_format(const struct shp_netem_conf *c, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len, .pos = 0 };

	if (c == NULL)
		return -1;
	if (len > 0)
		buf[0] = '\0';
	if (c->limit_set)
		put(&o, " limit %" PRIu32, c->limit);
	if (c->latency != 0 || c->jitter != 0 || c->delay_corr_set) {
		put(&o, " delay");
		put_time(&o, c->latency);
		if (c->jitter != 0 || c->delay_corr_set) {
			put_time(&o, c->jitter);
			if (c->delay_corr_set || c->delay_corr != 0)
				put_percent(&o, c->delay_corr);
		}
	}
	if (c->dist != NULL)
		put(&o, " distribution %s", c->dist->name);
	if (c->noreorder)
		put(&o, " noreorder");
	if (c->inorder)
		put(&o, " inorder");
	switch (c->loss_model) {
	case SHP_NETEM_LOSS_RANDOM:
		put_prob(&o, "loss random", &c->loss);
		break;
	case SHP_NETEM_LOSS_STATE:
		put(&o, " loss state");
		put_percent(&o, c->state.p13);
		put_percent(&o, c->state.p31);
		put_percent(&o, c->state.p32);
		put_percent(&o, c->state.p23);
		put_percent(&o, c->state.p14);
		break;
	case SHP_NETEM_LOSS_GEMODEL:
		put(&o, " loss gemodel");
		put_percent(&o, c->ge.p);
		put_percent(&o, c->ge.r);
		put_percent(&o, c->ge.h1);
		put_percent(&o, c->ge.k1);
		break;
	case SHP_NETEM_LOSS_PATTERN:
	case SHP_NETEM_LOSS_BURST:
	case SHP_NETEM_LOSS_SEQUENCE:
		put_det_loss(&o, c);
		break;
	case SHP_NETEM_LOSS_NONE:
		break;
	}
	if (c->ecn)
		put(&o, " ecn");
	if (c->duplicate.p > 0)
		put_prob(&o, "duplicate", &c->duplicate);
	if (c->corrupt.p > 0)
		put_prob(&o, "corrupt", &c->corrupt);
	if (c->reorder.p > 0) {
		put_prob(&o, "reorder", &c->reorder);
		put(&o, " gap %" PRIu32, c->gap);
	}
	if (c->rate != 0) {
		put(&o, " rate");
		put_rate(&o, c->rate);
		if (c->packet_overhead != 0 || c->cell_size != 0 ||
		    c->cell_overhead != 0)
			put(&o, " %" PRId32, c->packet_overhead);
		if (c->cell_size != 0 || c->cell_overhead != 0)
			put(&o, " %" PRIu32, c->cell_size);
		if (c->cell_overhead != 0)
			put(&o, " %" PRId32, c->cell_overhead);
	}
	if (c->slot_mode != SHP_NETEM_SLOT_OFF) {
		if (c->slot_mode == SHP_NETEM_SLOT_RANGE) {
			put(&o, " slot");
			put_time(&o, c->slot_min);
			put_time(&o, c->slot_max);
		} else {
			put(&o, " slot distribution %s",
			    c->slot_dist ? c->slot_dist->name : "uniform");
			put_time(&o, c->slot_delay);
			put_time(&o, c->slot_jitter);
		}
		if (c->slot_packets != 0)
			put(&o, " packets %" PRIu32, c->slot_packets);
		if (c->slot_bytes != 0)
			put(&o, " bytes %" PRIu32, c->slot_bytes);
	}
	put_ours(&o, c);
	if (c->store_set) {
		if (c->store == 0)
			put(&o, " store off");
		else
			put(&o, " store %" PRIu32, c->store);
		if (c->store != 0 && c->store_after_set)
			put(&o, " after %" PRIu32, c->store_after);
	}
	if (c->seed_set)
		put(&o, " seed %" PRIu64, c->seed);

	return (int)o.pos;
}

static void
put_tc_time(struct out *o, const char *sep, uint64_t ns)
{
	char t[32];

	shp_fmt_tc_time(t, sizeof(t), ns, false);
	put(o, "%s%s", sep, t);
}

/* a probability and its correlation, as tc: the correlation when set */
static void
put_tc_prob(struct out *o, const char *kw, const struct shp_netem_prob *pr)
{
	put(o, " %s", kw);
	put_percent(o, pr->p);
	if (pr->corr != 0)
		put_percent(o, pr->corr);
}

/*
 * As the newest iproute2 prints netem (`tc qdisc show`): limit, delay
 * and jitter (two blanks between them), loss (its model's labels),
 * duplicate, reorder, corrupt, rate, slot, ecn, gap, in tc's words and
 * units; no distribution's name (tc sees only the table). What tc has
 * not (loss pattern, outage, ber, ...) follows, in our words.
 */
int
shp_netem_tc_print(const struct shp_netem_conf *c, uint32_t limit,
		   char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len, .pos = 0 };

	if (len > 0)
		buf[0] = '\0';
	put(&o, "limit %" PRIu32, c->limit_set ? c->limit : limit);
	if (c->latency != 0 || c->jitter != 0) {
		put_tc_time(&o, " delay ", c->latency);
		if (c->jitter != 0) {
			put_tc_time(&o, "  ", c->jitter);
			if (c->delay_corr != 0)
				put_percent(&o, c->delay_corr);
		}
	}
	switch (c->loss_model) {
	case SHP_NETEM_LOSS_RANDOM:
		put_tc_prob(&o, "loss", &c->loss);
		break;
	case SHP_NETEM_LOSS_STATE:
		put(&o, " loss state p13");
		put_percent(&o, c->state.p13);
		put(&o, " p31");
		put_percent(&o, c->state.p31);
		put(&o, " p32");
		put_percent(&o, c->state.p32);
		put(&o, " p23");
		put_percent(&o, c->state.p23);
		put(&o, " p14");
		put_percent(&o, c->state.p14);
		break;
	case SHP_NETEM_LOSS_GEMODEL:
		put(&o, " loss gemodel p");
		put_percent(&o, c->ge.p);
		put(&o, " r");
		put_percent(&o, c->ge.r);
		put(&o, " 1-h");
		put_percent(&o, c->ge.h1);
		put(&o, " 1-k");
		put_percent(&o, c->ge.k1);
		break;
	default:
		break;
	}
	if (c->duplicate.p > 0)
		put_tc_prob(&o, "duplicate", &c->duplicate);
	if (c->reorder.p > 0)
		put_tc_prob(&o, "reorder", &c->reorder);
	if (c->corrupt.p > 0)
		put_tc_prob(&o, "corrupt", &c->corrupt);
	if (c->rate != 0) {
		put(&o, " rate");
		put_rate(&o, c->rate);
		if (c->packet_overhead != 0)
			put(&o, " packetoverhead %" PRId32, c->packet_overhead);
		if (c->cell_size != 0)
			put(&o, " cellsize %" PRIu32, c->cell_size);
		if (c->cell_overhead != 0)
			put(&o, " celloverhead %" PRId32, c->cell_overhead);
	}
	if (c->slot_mode == SHP_NETEM_SLOT_RANGE) {
		put_tc_time(&o, " slot ", c->slot_min);
		put_tc_time(&o, " ", c->slot_max);
	} else if (c->slot_mode == SHP_NETEM_SLOT_DIST) {
		put_tc_time(&o, " slot distribution ", c->slot_delay);
		put_tc_time(&o, " ", c->slot_jitter);
	}
	if (c->slot_mode != SHP_NETEM_SLOT_OFF) {
		if (c->slot_packets != 0)
			put(&o, " packets %" PRIu32, c->slot_packets);
		if (c->slot_bytes != 0)
			put(&o, " bytes %" PRIu32, c->slot_bytes);
	}
	if (c->ecn)
		put(&o, " ecn");
	if (c->reorder.p > 0 && c->gap != 0)
		put(&o, " gap %" PRIu32, c->gap);
	/* ours, which tc has not */
	if (c->noreorder)
		put(&o, " noreorder");
	if (c->inorder)
		put(&o, " inorder");
	put_det_loss(&o, c);
	put_ours(&o, c);
	if (c->seed_set)
		put(&o, " seed %" PRIu64, c->seed);
	return (int)o.pos;
}

/* A jitter wider than the gaps between packets reorders them, as tc's
 * does: said when most left out of order, with the word that keeps it. */
int
shp_netem_note(const void *conf, const struct shp_run_facts *run,
	       char *buf, size_t len)
{
	const struct shp_netem_conf *nc = conf;

	if (nc->jitter == 0 || nc->noreorder || nc->inorder ||
	    run->out_pkts == 0 ||
	    2 * run->out_of_order <= run->out_pkts)
		return 0;
	return snprintf(buf, len, "note: %.1f%% of packets left out of "
			"order: a jitter larger than the gap between packets "
			"reorders them (as tc's netem does); add `noreorder` "
			"to the netem profile to keep their order\n",
			100.0 * (double)run->out_of_order /
			(double)run->out_pkts);
}
