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

/* iproute2 get_rate: a bare number is bits per second (tc(8)), as are
 * the *bit units; the *bps units are bytes. Scales here are to bits. */
static const struct unit rate_units[] = {
	{"", 1}, {"bit", 1},
	{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12},
	{"kibit", 0x1p10}, {"mibit", 0x1p20}, {"gibit", 0x1p30},
	{"tibit", 0x1p40},
	{"bps", 8}, {"kbps", 8e3}, {"mbps", 8e6}, {"gbps", 8e9},
	{"tbps", 8e12},
	{"kibps", 0x1p13}, {"mibps", 0x1p23}, {"gibps", 0x1p33},
	{"tibps", 0x1p43},
	{NULL, 0}
};

/*
 * number * scale / div, truncated, into 64 bits (-1 if it does not fit).
 * A whole number is computed exactly (a double would round what the
 * printers write beyond 2^53); a fraction goes through the double v.
 */
static int
scaled(const char *num, const char *unit, double v, double scale,
       unsigned int div, uint64_t *out)
{
	unsigned __int128 r = 0;
	const char *d;

	if (strspn(num, "0123456789") == (size_t)(unit - num)) {
		for (d = num; d < unit; d++) {
			r = r * 10 + (unsigned int)(*d - '0');
			if (r > (unsigned __int128)UINT64_MAX << 16)
				return -1;
		}
		r = r * (uint64_t)scale / div;
		if (r > UINT64_MAX)
			return -1;
		*out = (uint64_t)r;
		return 0;
	}
	v = floor(v * scale / div);
	if (!(v < 0x1p64))   /* llround would stop at 2^63 */
		return -1;
	*out = (uint64_t)v;
	return 0;
}

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
	return shp_parse_time_bare(s, 0, ns, err);
}

int
shp_parse_time_bare(const char *s, uint64_t bare_ns, uint64_t *ns,
		    char *err)
{
	const char *unit;
	double v, scale = (double)bare_ns;

	if (number_unit(s, &v, &unit, "time", err) < 0)
		return -1;
	if (*unit == '\0' && bare_ns == 0) {
		snprintf(err, SHP_ERR_LEN,
			 "'%s': a time needs a unit (s, ms, us or ns)", s);
		return -1;
	}
	if (*unit != '\0' && lookup(time_units, unit, &scale) < 0) {
		snprintf(err, SHP_ERR_LEN,
			 "'%s': unknown time unit '%s' (use s, ms, us or ns)",
			 s, unit);
		return -1;
	}
	/* a day of delay is surely a typo */
	if (scaled(s, unit, v + 0.5 / scale, scale, 1, ns) < 0 ||
	    *ns > 86400ULL * 1000000000) {
		snprintf(err, SHP_ERR_LEN, "'%s': time too large (at most "
			 "24 hours)", s);
		return -1;
	}
	return 0;
}

int
shp_split_for(char *words, uint64_t *ns, char *err)
{
	char sub[SHP_ERR_LEN];
	size_t n = strlen(words), last, prev, end;

	*ns = 0;
	while (n > 0 && (words[n - 1] == ' ' || words[n - 1] == '\t'))
		n--;
	last = n;
	while (last > 0 && words[last - 1] != ' ' && words[last - 1] != '\t')
		last--;
	if (n - last == 3 && strncmp(words + last, "for", 3) == 0) {
		snprintf(err, SHP_ERR_LEN, "for: needs a TIME after it (e.g. "
			 "for 10s)");
		return -1;
	}
	end = last;
	while (end > 0 && (words[end - 1] == ' ' || words[end - 1] == '\t'))
		end--;
	prev = end;
	while (prev > 0 && words[prev - 1] != ' ' && words[prev - 1] != '\t')
		prev--;
	if (end == last || end - prev != 3 ||
	    strncmp(words + prev, "for", 3) != 0)
		return 0;
	words[n] = '\0';
	if (shp_parse_time(words + last, ns, sub) < 0) {
		snprintf(err, SHP_ERR_LEN, "for: %s", sub);
		return -1;
	}
	if (*ns < SHP_FOR_MIN_NS) {
		snprintf(err, SHP_ERR_LEN, "for %s: at least 1ms (the control "
			 "tick makes the change back)", words + last);
		return -1;
	}
	if (*ns > SHP_FOR_MAX_NS) {   /* (the parser's bound today) */
		snprintf(err, SHP_ERR_LEN, "for %s: at most 24 hours",
			 words + last);
		return -1;
	}
	while (prev > 0 && (words[prev - 1] == ' ' || words[prev - 1] == '\t'))
		prev--;
	if (prev == 0) {
		snprintf(err, SHP_ERR_LEN, "for %s: the profile comes before "
			 "it (e.g. loss 100%% for 1s)", words + last);
		return -1;
	}
	words[prev] = '\0';
	return 1;
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
	if (scaled(s, unit, v + 0.5 / scale, scale, 1, bytes) < 0) {
		snprintf(err, SHP_ERR_LEN, "'%s': size too large (at most "
			 "2^64 - 1 bytes)", s);
		return -1;
	}
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
			 "gbit, tbit, or bps, kbps, mbps, gbps, tbps for bytes)",
			 s, unit);
		return -1;
	}
	/* bits to bytes, truncated as get_rate does */
	if (scaled(s, unit, v, scale, 8, bps) < 0) {
		snprintf(err, SHP_ERR_LEN, "'%s': rate too large (at most "
			 "2^64 - 1 bytes/s)", s);
		return -1;
	}
	if (*bps == 0) {
		snprintf(err, SHP_ERR_LEN,
			 "'%s': rate must be at least 8 bit/s (1 byte/s)", s);
		return -1;
	}
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

/* Exact: the largest unit that divides the value, so the text parses back
 * to the same number (what `show` prints can be pasted into `set`). */
void
shp_fmt_time(char *buf, size_t len, uint64_t ns)
{
	if (ns != 0 && ns % 1000000000 == 0)
		snprintf(buf, len, "%" PRIu64 "s", ns / 1000000000);
	else if (ns != 0 && ns % 1000000 == 0)
		snprintf(buf, len, "%" PRIu64 "ms", ns / 1000000);
	else if (ns != 0 && ns % 1000 == 0)
		snprintf(buf, len, "%" PRIu64 "us", ns / 1000);
	else
		snprintf(buf, len, "%" PRIu64 "ns", ns);
}

/* As tc prints a time (iproute2's sprint_time, sprint_time64): three
 * significant digits in the largest unit under it; below a millisecond,
 * whole microseconds (us_res: a time tc keeps in microseconds, as
 * fq_codel's and tbf's) or %.3g of them, else whole nanoseconds. Not
 * exact: for reading, `show qdisc`'s. */
void
shp_fmt_tc_time(char *buf, size_t len, uint64_t ns, bool us_res)
{
	double v = (double)ns;

	if (ns >= 1000000000)
		snprintf(buf, len, "%.3gs", v / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, "%.3gms", v / 1e6);
	else if (us_res)
		snprintf(buf, len, "%" PRIu64 "us", ns / 1000);
	else if (ns >= 1000)
		snprintf(buf, len, "%.3gus", v / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 "ns", ns);
}

void
shp_fmt_excerpt(char *buf, size_t len, const char *s, size_t max)
{
	size_t i, n = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; s[i] != '\0' && i < max; i++) {
		unsigned char c = (unsigned char)s[i];
		int w;

		if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
			w = snprintf(buf + n, len - n, "%c", c);
		else
			w = snprintf(buf + n, len - n, "\\x%02x", c);
		if (w < 0 || (size_t)w >= len - n) {
			buf[n] = '\0';
			return;
		}
		n += (size_t)w;
	}
	if (s[i] != '\0')
		snprintf(buf + n, len - n, "...");
}

/* Exact as well, in tc's spelling (Kbit, Mbit, ...); a rate whose bits
 * do not fit 64 bits and that no unit divides is printed in bytes (Bps). */
void
shp_fmt_rate(char *buf, size_t len, uint64_t bps)
{
	static const struct { const char *name; uint64_t div; } u[] = {
		{"Tbit", 1000000000000ULL}, {"Gbit", 1000000000},
		{"Mbit", 1000000}, {"Kbit", 1000}, {"bit", 1},
	};
	unsigned __int128 bits = (unsigned __int128)bps * 8;
	size_t i;

	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		if (bits >= u[i].div && bits % u[i].div == 0 &&
		    bits / u[i].div <= UINT64_MAX) {
			snprintf(buf, len, "%" PRIu64 "%s",
				 (uint64_t)(bits / u[i].div), u[i].name);
			return;
		}
	}
	snprintf(buf, len, "%" PRIu64 "Bps", bps);
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
