/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>

#include "shp_qdisc.h"
#include "shp_tbf.h"

#define MAX_WORDS 32

static int
need_arg(char **argv, int i, int argc, char *err)
{
	if (i + 1 >= argc) {
		snprintf(err, SHP_ERR_LEN, "tbf: '%s' needs a value", argv[i]);
		return -1;
	}
	return 0;
}

static int
parse_int(const char *w, const char *what, long min, long max, long *v,
	  char *err)
{
	char *end;

	*v = strtol(w, &end, 10);
	if (end == w || *end != '\0' || *v < min || *v > max) {
		snprintf(err, SHP_ERR_LEN, "tbf: %s '%s' must be an integer "
			 "within %ld..%ld", what, w, min, max);
		return -1;
	}
	return 0;
}

uint64_t
shp_tbf_wire_len(const struct shp_tbf_conf *c, uint64_t len)
{
	int64_t l = (int64_t)len + c->overhead;

	if (l < (int64_t)c->mpu)
		l = c->mpu;
	if (l < 0)
		l = 0;
	if (c->atm)
		l = (l + 47) / 48 * 53;
	return (uint64_t)l;
}

void
shp_tbf_derive(struct shp_tbf_conf *c)
{
	/* The largest frame whose wire length fits the bucket(s). */
	uint64_t cap = c->peakrate ? RTE_MIN(c->burst, c->mtu) : c->burst;
	uint64_t lo = 0, hi = 65535;

	while (lo < hi) {
		uint64_t mid = (lo + hi + 1) / 2;

		if (shp_tbf_wire_len(c, mid) <= cap)
			lo = mid;
		else
			hi = mid - 1;
	}
	c->max_size = lo;
	c->rate_mult = (uint64_t)(((unsigned __int128)1000000000 << 32) /
				  c->rate);
	c->buffer_t = shp_tbf_ticks(c->rate_mult, c->burst);
	if (c->peakrate) {
		c->peak_mult = (uint64_t)(((unsigned __int128)1000000000
					   << 32) / c->peakrate);
		c->mtu_t = shp_tbf_ticks(c->peak_mult, c->mtu);
	} else {
		c->peak_mult = 0;
		c->mtu_t = 0;
	}
}

int
shp_tbf_parse(const char *args, struct shp_tbf_conf *conf, char *err)
{
	struct shp_tbf_conf c;
	char buf[512], *argv[MAX_WORDS];
	char sub[SHP_ERR_LEN];
	int argc, i, have_limit = 0;
	long v;

	memset(&c, 0, sizeof(c));
	err[0] = '\0';
	sub[0] = '\0';
	if (strlen(args) >= sizeof(buf)) {
		snprintf(err, SHP_ERR_LEN, "tbf: arguments too long");
		return -1;
	}
	strcpy(buf, args);
	argc = shp_split_words(buf, argv, MAX_WORDS);
	if (argc < 0) {
		snprintf(err, SHP_ERR_LEN, "tbf: too many words");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		const char *w = argv[i];

		if (strcmp(w, "rate") == 0) {
			if (need_arg(argv, i, argc, err) ||
			    shp_parse_rate(argv[++i], &c.rate, sub))
				goto bad_sub;
		} else if (strcmp(w, "burst") == 0 ||
			   strcmp(w, "buffer") == 0 ||
			   strcmp(w, "maxburst") == 0) {
			char *slash;

			if (need_arg(argv, i, argc, err))
				return -1;
			/* tc allows SIZE/CELL; the cell log is irrelevant here */
			slash = strchr(argv[++i], '/');
			if (slash != NULL)
				*slash = '\0';
			if (shp_parse_size(argv[i], &c.burst, sub))
				goto bad_sub;
		} else if (strcmp(w, "limit") == 0) {
			if (need_arg(argv, i, argc, err) ||
			    shp_parse_size(argv[++i], &c.limit, sub))
				goto bad_sub;
			have_limit |= 1;
		} else if (strcmp(w, "latency") == 0) {
			if (need_arg(argv, i, argc, err) ||
			    shp_parse_time(argv[++i], &c.latency, sub))
				goto bad_sub;
			have_limit |= 2;
		} else if (strcmp(w, "peakrate") == 0) {
			if (need_arg(argv, i, argc, err) ||
			    shp_parse_rate(argv[++i], &c.peakrate, sub))
				goto bad_sub;
		} else if (strcmp(w, "mtu") == 0 || strcmp(w, "minburst") == 0) {
			char *slash;

			if (need_arg(argv, i, argc, err))
				return -1;
			slash = strchr(argv[++i], '/');
			if (slash != NULL)
				*slash = '\0';
			if (shp_parse_size(argv[i], &c.mtu, sub))
				goto bad_sub;
		} else if (strcmp(w, "overhead") == 0) {
			if (need_arg(argv, i, argc, err) ||
			    parse_int(argv[++i], "overhead", -1024, 1024, &v,
				      err))
				return -1;
			c.overhead = (int32_t)v;
		} else if (strcmp(w, "mpu") == 0) {
			if (need_arg(argv, i, argc, err) ||
			    parse_int(argv[++i], "mpu", 0, 65535, &v, err))
				return -1;
			c.mpu = (uint32_t)v;
		} else if (strcmp(w, "linklayer") == 0) {
			if (need_arg(argv, i, argc, err))
				return -1;
			i++;
			if (strcmp(argv[i], "atm") == 0 ||
			    strcmp(argv[i], "adsl") == 0)
				c.atm = 1;
			else if (strcmp(argv[i], "ethernet") == 0)
				c.atm = 0;
			else {
				snprintf(err, SHP_ERR_LEN, "tbf: linklayer "
					 "'%s': use ethernet or atm", argv[i]);
				return -1;
			}
		} else {
			snprintf(err, SHP_ERR_LEN, "tbf: unknown word '%s' "
				 "(rate, burst, limit, latency, peakrate, mtu, "
				 "overhead, mpu, linklayer)", w);
			return -1;
		}
	}
	if (c.rate == 0) {
		snprintf(err, SHP_ERR_LEN, "tbf: 'rate' is required");
		return -1;
	}
	if (c.burst == 0) {
		snprintf(err, SHP_ERR_LEN, "tbf: 'burst' is required "
			 "(and must be more than 0)");
		return -1;
	}
	if (have_limit == 0) {
		snprintf(err, SHP_ERR_LEN,
			 "tbf: 'limit' or 'latency' is required");
		return -1;
	}
	if (have_limit == 3) {
		snprintf(err, SHP_ERR_LEN,
			 "tbf: give either 'limit' or 'latency', not both");
		return -1;
	}
	if (c.peakrate != 0 && c.mtu == 0) {
		snprintf(err, SHP_ERR_LEN, "tbf: 'peakrate' needs 'mtu'");
		return -1;
	}
	if (c.peakrate != 0 && c.peakrate <= c.rate) {
		snprintf(err, SHP_ERR_LEN,
			 "tbf: 'peakrate' must be greater than 'rate'");
		return -1;
	}
	if (c.latency != 0 || have_limit == 2) {
		/* iproute2: limit = rate * latency + burst, and the same
		 * with peakrate/mtu, the smaller of the two. */
		double lim = (double)c.rate * c.latency / 1e9 + c.burst;

		if (c.peakrate != 0) {
			double lim2 = (double)c.peakrate * c.latency / 1e9 +
				      c.mtu;
			if (lim2 < lim)
				lim = lim2;
		}
		c.limit = (uint64_t)lim;
	}
	shp_tbf_derive(&c);
	c.id = shp_conf_new_id();
	*conf = c;
	return 0;
bad_sub:
	if (sub[0] != '\0')
		snprintf(err, SHP_ERR_LEN, "tbf: %s", sub);
	return -1;
}

int
shp_tbf_format(const struct shp_tbf_conf *c, char *buf, size_t len)
{
	char r[32], b[32], l[32], p[32], m[32];
	int n;

	shp_fmt_rate(r, sizeof(r), c->rate);
	snprintf(b, sizeof(b), "%" PRIu64 "b", c->burst);
	if (c->latency != 0)
		shp_fmt_time(l, sizeof(l), c->latency);
	else
		snprintf(l, sizeof(l), "%" PRIu64 "b", c->limit);
	n = snprintf(buf, len, "rate %s burst %s %s %s", r, b,
		     c->latency ? "latency" : "limit", l);
	if (c->peakrate) {
		shp_fmt_rate(p, sizeof(p), c->peakrate);
		snprintf(m, sizeof(m), "%" PRIu64 "b", c->mtu);
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " peakrate %s mtu %s", p, m);
	}
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
