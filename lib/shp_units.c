/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <inttypes.h>

#include "shp_units.h"

struct unit {
	const char *name;
	double scale;
};

static const struct unit time_units[] = {
	{"s", 1e9}, {"sec", 1e9}, {"secs", 1e9},
	{"ms", 1e6}, {"msec", 1e6}, {"msecs", 1e6},
	{"us", 1e3}, {"usec", 1e3}, {"usecs", 1e3},
	{"ns", 1}, {"nsec", 1}, {"nsecs", 1},
	{NULL, 0}
};

static const struct unit size_units[] = {
	{"", 1}, {"b", 1},
	{"k", 1024}, {"kb", 1024}, {"m", 1024 * 1024}, {"mb", 1024 * 1024},
	{"g", 1024.0 * 1024 * 1024}, {"gb", 1024.0 * 1024 * 1024},
	{"kbit", 1024 / 8.0}, {"mbit", 1024 * 1024 / 8.0},
	{"gbit", 1024.0 * 1024 * 1024 / 8.0},
	{NULL, 0}
};

static const struct unit rate_units[] = {
	{"", 1}, /* tc: a bare rate is bytes per second */
	{"bit", 1 / 8.0}, {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8},
	{"gbit", 1e9 / 8}, {"tbit", 1e12 / 8},
	{"kibit", 1024 / 8.0}, {"mibit", 1024.0 * 1024 / 8},
	{"gibit", 1024.0 * 1024 * 1024 / 8},
	{"bps", 1}, {"kbps", 1e3}, {"mbps", 1e6}, {"gbps", 1e9},
	{"tbps", 1e12},
	{"kibps", 1024}, {"mibps", 1024.0 * 1024},
	{"gibps", 1024.0 * 1024 * 1024},
	{NULL, 0}
};

static int
lookup(const struct unit *u, const char *name, double *scale)
{
	for (; u->name != NULL; u++) {
		if (strcasecmp(u->name, name) == 0) {
			*scale = u->scale;
			return 0;
		}
	}
	return -1;
}

/* Number then unit; the number must be finite and non-negative. */
static int
number_unit(const char *s, double *v, const char **unit, const char *what,
	    char *err)
{
	char *end;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s)) {
		snprintf(err, SHP_ERR_LEN, "missing %s", what);
		return -1;
	}
	errno = 0;
	*v = strtod(s, &end);
	if (end == s || errno != 0 || !isfinite(*v) ||
	    strncasecmp(s, "nan", 3) == 0 || strncasecmp(s, "inf", 3) == 0) {
		snprintf(err, SHP_ERR_LEN, "'%s' is not a %s", s, what);
		return -1;
	}
	if (*v < 0 || s[0] == '-') {
		snprintf(err, SHP_ERR_LEN, "'%s': a %s cannot be negative",
			 s, what);
		return -1;
	}
	*unit = end;
	return 0;
}

int
shp_parse_time(const char *s, uint64_t *ns, char *err)
{
	const char *unit;
	double v, scale;

	if (number_unit(s, &v, &unit, "time", err) < 0)
		return -1;
	if (*unit == '\0') {
		snprintf(err, SHP_ERR_LEN,
			 "'%s': a time needs a unit (s, ms, us or ns)", s);
		return -1;
	}
	if (lookup(time_units, unit, &scale) < 0) {
		snprintf(err, SHP_ERR_LEN,
			 "'%s': unknown time unit '%s' (use s, ms, us or ns)",
			 s, unit);
		return -1;
	}
	v *= scale;
	if (v > 3.6e12 * 24) { /* a day of delay is surely a typo */
		snprintf(err, SHP_ERR_LEN, "'%s': time too large", s);
		return -1;
	}
	*ns = (uint64_t)llround(v);
	return 0;
}

int
shp_parse_size(const char *s, uint64_t *bytes, char *err)
{
	const char *unit;
	double v, scale;

	if (number_unit(s, &v, &unit, "size", err) < 0)
		return -1;
	if (lookup(size_units, unit, &scale) < 0) {
		snprintf(err, SHP_ERR_LEN,
			 "'%s': unknown size unit '%s' (use b, kb, mb, gb, "
			 "kbit, mbit, gbit)", s, unit);
		return -1;
	}
	v *= scale;
	if (v >= 1.8e19) {
		snprintf(err, SHP_ERR_LEN, "'%s': size too large", s);
		return -1;
	}
	*bytes = (uint64_t)llround(v);
	return 0;
}

int
shp_parse_rate(const char *s, uint64_t *bps, char *err)
{
	const char *unit;
	double v, scale;

	if (number_unit(s, &v, &unit, "rate", err) < 0)
		return -1;
	if (lookup(rate_units, unit, &scale) < 0) {
		snprintf(err, SHP_ERR_LEN,
			 "'%s': unknown rate unit '%s' (use bit, kbit, mbit, "
			 "gbit, or bps, kbps, mbps, gbps for bytes)", s, unit);
		return -1;
	}
	v *= scale;
	if (v < 1) {
		snprintf(err, SHP_ERR_LEN,
			 "'%s': rate must be at least 1 byte per second", s);
		return -1;
	}
	if (v >= 1.8e19) {
		snprintf(err, SHP_ERR_LEN, "'%s': rate too large", s);
		return -1;
	}
	*bps = (uint64_t)llround(v);
	return 0;
}

int
shp_parse_percent(const char *s, double *frac, char *err)
{
	const char *unit;
	double v;

	if (number_unit(s, &v, &unit, "percentage", err) < 0)
		return -1;
	if (*unit != '\0' && strcmp(unit, "%") != 0) {
		snprintf(err, SHP_ERR_LEN, "'%s' is not a percentage", s);
		return -1;
	}
	if (v > 100) {
		snprintf(err, SHP_ERR_LEN,
			 "'%s': a percentage must be within 0..100", s);
		return -1;
	}
	*frac = v / 100;
	return 0;
}

int
shp_parse_u64(const char *s, uint64_t *v, char *err)
{
	char *end;
	unsigned long long x;

	if (s == NULL || !isdigit((unsigned char)*s)) {
		snprintf(err, SHP_ERR_LEN, "'%s' is not a non-negative integer",
			 s ? s : "");
		return -1;
	}
	errno = 0;
	x = strtoull(s, &end, 10);
	if (*end != '\0' || errno != 0) {
		snprintf(err, SHP_ERR_LEN, "'%s' is not a non-negative integer",
			 s);
		return -1;
	}
	*v = x;
	return 0;
}

void
shp_fmt_time(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000000 && ns % 1000000 == 0)
		snprintf(buf, len, "%gs", ns / 1e9);
	else if (ns >= 1000000 && ns % 1000 == 0)
		snprintf(buf, len, "%gms", ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, len, "%gus", ns / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 "ns", ns);
}

void
shp_fmt_rate(char *buf, size_t len, uint64_t bps)
{
	double bits = bps * 8.0;

	if (bits >= 1e9)
		snprintf(buf, len, "%gGbit", bits / 1e9);
	else if (bits >= 1e6)
		snprintf(buf, len, "%gMbit", bits / 1e6);
	else if (bits >= 1e3)
		snprintf(buf, len, "%gKbit", bits / 1e3);
	else
		snprintf(buf, len, "%gbit", bits);
}

void
shp_fmt_size(char *buf, size_t len, uint64_t bytes)
{
	if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
		snprintf(buf, len, "%" PRIu64 "Mb", bytes / (1024 * 1024));
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, len, "%" PRIu64 "Kb", bytes / 1024);
	else
		snprintf(buf, len, "%" PRIu64 "b", bytes);
}

int
shp_split_words(char *s, char **argv, int max)
{
	int n = 0;
	char *save = NULL, *w;

	for (w = strtok_r(s, " \t\r\n", &save); w != NULL;
	     w = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return -1;
		argv[n++] = w;
	}
	return n;
}
