/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tc-tbf grammar (iproute2 tc/q_tbf.c: the keywords it lets be
 * abbreviated, in its order of tests) and the bucket the kernel derives from it
 * (tbf_change, psched_ratecfg_precompute, psched_l2t_ns).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>

#include "shp_qdisc.h"
#include "shp_bucket.h"
#include "shp_tcargs.h"

#define MAX_WORDS 32
#define MAX_LEN   512

/* ns per byte << 32 at rate (bytes/s) */
static uint64_t
rate_mult(uint64_t rate)
{
	return (uint64_t)(((unsigned __int128)1000000000 << 32) / rate);
}

/*
 * As tbf_change with the burst given in bytes (what iproute2 sends): the
 * bucket holds the time to send `burst` as the length rule counts it (so
 * `overhead`, `mpu` and `linklayer` enlarge it as they enlarge every
 * packet's cost), the peak bucket likewise for `mtu`, and the largest
 * packet that may pass is burst (or min(burst, mtu) with a peak rate) in
 * raw bytes, compared with the raw length.
 */
void
shp_tbf_derive(struct shp_tbf_conf *c)
{
	c->max_size = c->peakrate ? RTE_MIN(c->burst, c->mtu) : c->burst;
	c->rate_mult = rate_mult(c->rate);
	c->buffer_t = shp_tbf_ticks(c->rate_mult, shp_tbf_wire_len(c, c->burst));
	if (c->peakrate) {
		c->peak_mult = rate_mult(c->peakrate);
		c->mtu_t = shp_tbf_ticks(c->peak_mult,
					 shp_tbf_wire_len(c, c->mtu));
	} else {
		c->peak_mult = 0;
		c->mtu_t = 0;
	}
}

/* "SIZE[/CELL]": tc's cell log only sizes its rate table, unused here. */
static int
get_burst(struct shp_tcargs *a, const char *kw, uint64_t *v)
{
	char *slash = strchr(a->argv[a->i], '/');

	if (slash != NULL)
		*slash = '\0';
	return shp_tc_size(a, kw, v);
}

static int
get_linklayer(struct shp_tcargs *a, int *atm)
{
	const char *w = shp_tc_cur(a);

	if (shp_tc_matches(w, "ethernet"))
		*atm = 0;
	else if (shp_tc_matches(w, "atm") || shp_tc_matches(w, "adsl"))
		*atm = 1;
	else
		return shp_tc_fail(a, "linklayer: '%s': use ethernet or atm",
				   w);
	return 0;
}

/* What the arithmetic can hold, refused rather than wrapped. */
static int
check_range(struct shp_tcargs *a, const struct shp_tbf_conf *c)
{
	if (c->rate > SHP_TBF_MAX_RATE || c->peakrate > SHP_TBF_MAX_RATE)
		return shp_tc_fail(a, "%s: at most %" PRIu64 " bytes/s "
				   "(32.768Tbit)", c->rate > SHP_TBF_MAX_RATE ?
				   "rate" : "peakrate", SHP_TBF_MAX_RATE);
	if (c->buffer_t > SHP_TBF_MAX_TICKS)
		return shp_tc_fail(a, "burst: %" PRIu64 " bytes take more than "
				   "%" PRIu64 " s at the rate", c->burst,
				   (SHP_TBF_MAX_TICKS >> SHP_TBF_SHIFT) /
				   1000000000);
	if (c->mtu_t > SHP_TBF_MAX_TICKS)
		return shp_tc_fail(a, "mtu: %" PRIu64 " bytes take more than "
				   "%" PRIu64 " s at the peak rate", c->mtu,
				   (SHP_TBF_MAX_TICKS >> SHP_TBF_SHIFT) /
				   1000000000);
	return 0;
}

/* police: tc police's words (m_police.c), the bucket's without a queue
 * behind it: no limit or latency, so that "l" is linklayer there */
static int
tbf_words(struct shp_tcargs *a, struct shp_tbf_conf *c, int *have_limit,
	  bool police)
{
	int64_t v;

	for (a->i = 0; a->i < a->argc; a->i++) {
		const char *w = shp_tc_cur(a);

		/* as q_tbf.c: these may be abbreviated (in this order of
		 * precedence), buffer, maxburst, mtu, minburst, mpu and
		 * rate may not */
		if (police && (strcmp(w, "limit") == 0 ||
			       strcmp(w, "latency") == 0)) {
			return shp_tc_fail(a, "'%s': a policer holds no "
					   "packets (no limit or latency)", w);
		} else if (!police && shp_tc_matches(w, "limit")) {
			if (shp_tc_next(a, "a size") ||
			    shp_tc_size(a, "limit", &c->limit))
				return -1;
			*have_limit |= 1;
		} else if (!police && shp_tc_matches(w, "latency")) {
			if (shp_tc_next(a, "a time") ||
			    shp_tc_time_bare(a, "latency", SHP_TC_BARE_US,
					     &c->latency))
				return -1;
			*have_limit |= 2;
		} else if (shp_tc_matches(w, "burst") ||
			   strcmp(w, "buffer") == 0 ||
			   strcmp(w, "maxburst") == 0) {
			if (shp_tc_next(a, "a size") ||
			    get_burst(a, "burst", &c->burst))
				return -1;
		} else if (strcmp(w, "mtu") == 0 ||
			   strcmp(w, "minburst") == 0) {
			if (shp_tc_next(a, "a size") ||
			    get_burst(a, "mtu", &c->mtu))
				return -1;
		} else if (strcmp(w, "mpu") == 0) {
			uint64_t mpu;

			if (shp_tc_next(a, "a size") ||
			    shp_tc_size(a, "mpu", &mpu))
				return -1;
			if (mpu > UINT16_MAX)
				return shp_tc_fail(a, "mpu: '%s' is above %u",
						   shp_tc_cur(a), UINT16_MAX);
			c->mpu = (uint32_t)mpu;
		} else if (strcmp(w, "rate") == 0) {
			if (shp_tc_next(a, "a rate") ||
			    shp_tc_rate(a, "rate", &c->rate))
				return -1;
		} else if (shp_tc_matches(w, "peakrate")) {
			if (shp_tc_next(a, "a rate") ||
			    shp_tc_rate(a, "peakrate", &c->peakrate))
				return -1;
		} else if (shp_tc_matches(w, "overhead")) {
			/* tc: 0..65535; a negative overhead is ours (to
			 * count less than the frame, e.g. its own header) */
			if (shp_tc_next(a, "a number of bytes") ||
			    shp_tc_int(a, "overhead", -1024, UINT16_MAX, &v))
				return -1;
			c->overhead = (int32_t)v;
		} else if (shp_tc_matches(w, "linklayer")) {
			if (shp_tc_next(a, "ethernet or atm") ||
			    get_linklayer(a, &c->atm))
				return -1;
		} else {
			return shp_tc_fail(a, "unknown word '%s' (%sburst, "
					   "mtu, mpu, rate, peakrate, "
					   "overhead, linklayer)", w,
					   police ? "" : "limit, latency, ");
		}
	}
	return 0;
}

/* What tbf and police share: the words, then a rate and a burst. argv
 * points into buf, both the caller's. */
static int
bucket_words(struct shp_tcargs *a, const char *args, char *buf, char **argv,
	     struct shp_tbf_conf *c, int *have_limit, bool police)
{
	memset(c, 0, sizeof(*c));
	a->err[0] = '\0';
	if (shp_tc_split(a, args, buf, MAX_LEN, argv, MAX_WORDS) < 0 ||
	    tbf_words(a, c, have_limit, police) < 0)
		return -1;
	if (c->rate == 0)
		return shp_tc_fail(a, "'rate' is required");
	if (c->burst == 0)
		return shp_tc_fail(a, "'burst' is required (and must be more "
				   "than 0)");
	return 0;
}

int
shp_tbf_parse(const char *args, struct shp_tbf_conf *conf, char *err)
{
	struct shp_tcargs a = { .qdisc = "tbf", .err = err };
	struct shp_tbf_conf c;
	char buf[MAX_LEN], *argv[MAX_WORDS];
	int have_limit = 0;

	if (bucket_words(&a, args, buf, argv, &c, &have_limit, false) < 0)
		return -1;
	if (have_limit == 0)
		return shp_tc_fail(&a, "'limit' or 'latency' is required");
	if (have_limit == 3)
		return shp_tc_fail(&a, "give either 'limit' or 'latency', not "
				   "both");
	if (c.peakrate != 0 && c.mtu == 0)
		return shp_tc_fail(&a, "'peakrate' needs 'mtu'");
	if (c.peakrate != 0 && c.peakrate <= c.rate)
		return shp_tc_fail(&a, "'peakrate' must be greater than "
				   "'rate'");
	if (c.rate > SHP_TBF_MAX_RATE || c.peakrate > SHP_TBF_MAX_RATE)
		return check_range(&a, &c);
	if (have_limit == 2) {
		/* iproute2: limit = rate * latency + burst, and the same
		 * with peakrate/mtu, the smaller of the two; capped at
		 * what a size can be (which is no limit at all). */
		double lim = (double)c.rate * c.latency / 1e9 + c.burst;

		if (c.peakrate != 0) {
			double lim2 = (double)c.peakrate * c.latency / 1e9 +
				      c.mtu;
			if (lim2 < lim)
				lim = lim2;
		}
		c.limit = lim < 0x1p64 ? (uint64_t)lim : UINT64_MAX;
	}
	shp_tbf_derive(&c);
	if (check_range(&a, &c) < 0)
		return -1;
	c.hdr.id = shp_conf_new_id();
	*conf = c;
	return 0;
}

void *
shp_tbf_conf_new(int (*parse)(const char *, struct shp_tbf_conf *, char *),
		 const char *args, char *err)
{
	struct shp_tbf_conf *c = malloc(sizeof(*c));

	if (c == NULL) {
		snprintf(err, SHP_ERR_LEN, "out of memory");
		return NULL;
	}
	if (parse(args, c, err) < 0) {
		free(c);
		return NULL;
	}
	return c;
}

int
shp_tbf_format(const struct shp_tbf_conf *c, char *buf, size_t len)
{
	char r[32], l[32], p[32];
	int n;

	shp_fmt_rate(r, sizeof(r), c->rate);
	if (c->latency != 0)
		shp_fmt_time(l, sizeof(l), c->latency);
	else
		snprintf(l, sizeof(l), "%" PRIu64 "b", c->limit);
	n = snprintf(buf, len, "rate %s burst %" PRIu64 "b %s %s", r,
		     c->burst, c->latency ? "latency" : "limit", l);
	if (c->peakrate) {
		shp_fmt_rate(p, sizeof(p), c->peakrate);
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " peakrate %s", p);
	}
	if (c->mtu)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " mtu %" PRIu64 "b", c->mtu);
	if (c->overhead)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " overhead %d", c->overhead);
	if (c->mpu)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " mpu %u", c->mpu);
	if (c->atm)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " linklayer atm");
	return n;
}

int
shp_police_parse(const char *args, struct shp_tbf_conf *conf, char *err)
{
	struct shp_tcargs a = { .qdisc = "police", .err = err };
	struct shp_tbf_conf c;
	char buf[MAX_LEN], *argv[MAX_WORDS];
	int have_limit = 0;

	if (bucket_words(&a, args, buf, argv, &c, &have_limit, true) < 0)
		return -1;
	/* m_police.c: "mtu is required, if peakrate is requested" */
	if (c.peakrate != 0 && c.mtu == 0)
		return shp_tc_fail(&a, "'peakrate' needs 'mtu'");
	if (c.peakrate != 0 && c.peakrate <= c.rate)
		return shp_tc_fail(&a, "'peakrate' must be greater than "
				   "'rate'");
	if (c.rate > SHP_TBF_MAX_RATE || c.peakrate > SHP_TBF_MAX_RATE)
		return check_range(&a, &c);
	shp_tbf_derive(&c);
	if (check_range(&a, &c) < 0)
		return -1;
	/* act_police: a packet longer than its mtu never conforms; without
	 * one the kernel takes 255 << cell_log of the rate table tc sent,
	 * which tc sized for an mtu of 2047 (cell_log 3) */
	c.max_size = c.mtu != 0 ? c.mtu : SHP_POLICE_DEFAULT_MTU;
	c.hdr.id = shp_conf_new_id();
	*conf = c;
	return 0;
}

int
shp_police_format(const struct shp_tbf_conf *c, char *buf, size_t len)
{
	char r[32], p[32];
	int n;

	shp_fmt_rate(r, sizeof(r), c->rate);
	n = snprintf(buf, len, "rate %s burst %" PRIu64 "b", r, c->burst);
	if (c->peakrate) {
		shp_fmt_rate(p, sizeof(p), c->peakrate);
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " peakrate %s", p);
	}
	if (c->mtu)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " mtu %" PRIu64 "b", c->mtu);
	if (c->overhead)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " overhead %d", c->overhead);
	if (c->mpu)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " mpu %u", c->mpu);
	if (c->atm)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " linklayer atm");
	return n;
}
