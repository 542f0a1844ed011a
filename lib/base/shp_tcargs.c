/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shp_tcargs.h"

bool
shp_tc_matches(const char *word, const char *keyword)
{
	size_t n = strlen(word);

	return n > 0 && strncmp(word, keyword, n) == 0;
}

bool
shp_tc_next_is_unsigned(const struct shp_tcargs *a)
{
	const char *s = shp_tc_peek(a);

	return s != NULL && isdigit((unsigned char)s[0]);
}

bool
shp_tc_next_is_number(const struct shp_tcargs *a)
{
	const char *s = shp_tc_peek(a);

	if (s == NULL)
		return false;
	if (isdigit((unsigned char)s[0]))
		return true;
	return (s[0] == '-' || s[0] == '.') && isdigit((unsigned char)s[1]);
}

int
shp_tc_fail(struct shp_tcargs *a, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(a->err, SHP_ERR_LEN, "%s: ", a->qdisc);
	if (n < 0 || n >= SHP_ERR_LEN)
		return -1;
	va_start(ap, fmt);
	vsnprintf(a->err + n, SHP_ERR_LEN - n, fmt, ap);
	va_end(ap);
	return -1;
}

int
shp_tc_next(struct shp_tcargs *a, const char *what)
{
	if (a->i + 1 >= a->argc)
		return shp_tc_fail(a, "'%s' needs %s", shp_tc_cur(a), what);
	a->i++;
	return 0;
}

/* "QDISC: kw: " + the unit parser's message */
static int
sub(struct shp_tcargs *a, const char *kw, int rc, const char *msg)
{
	if (rc < 0)
		shp_tc_fail(a, "%s: %s", kw, msg);
	return rc;
}

int
shp_tc_time(struct shp_tcargs *a, const char *kw, uint64_t *ns)
{
	char m[SHP_ERR_LEN];

	return sub(a, kw, shp_parse_time(shp_tc_cur(a), ns, m), m);
}

int
shp_tc_time_bare(struct shp_tcargs *a, const char *kw, uint64_t bare_ns,
		 uint64_t *ns)
{
	char m[SHP_ERR_LEN];

	return sub(a, kw, shp_parse_time_bare(shp_tc_cur(a), bare_ns, ns, m),
		   m);
}

int
shp_tc_size(struct shp_tcargs *a, const char *kw, uint64_t *bytes)
{
	char m[SHP_ERR_LEN];

	return sub(a, kw, shp_parse_size(shp_tc_cur(a), bytes, m), m);
}

int
shp_tc_rate(struct shp_tcargs *a, const char *kw, uint64_t *bps)
{
	char m[SHP_ERR_LEN];

	return sub(a, kw, shp_parse_rate(shp_tc_cur(a), bps, m), m);
}

int
shp_tc_percent(struct shp_tcargs *a, const char *kw, double *frac)
{
	char m[SHP_ERR_LEN];

	return sub(a, kw, shp_parse_percent(shp_tc_cur(a), frac, m), m);
}

int
shp_tc_u64(struct shp_tcargs *a, const char *kw, uint64_t *v)
{
	char m[SHP_ERR_LEN];

	return sub(a, kw, shp_parse_u64(shp_tc_cur(a), v, m), m);
}

static int
fit_u32(struct shp_tcargs *a, const char *kw, uint64_t x, uint32_t *v)
{
	if (x > UINT32_MAX)
		return shp_tc_fail(a, "%s: '%s' is too large (at most %" PRIu32
				   ")", kw, shp_tc_cur(a), UINT32_MAX);
	*v = (uint32_t)x;
	return 0;
}

int
shp_tc_u32(struct shp_tcargs *a, const char *kw, uint32_t *v)
{
	uint64_t x;

	if (shp_tc_u64(a, kw, &x) < 0)
		return -1;
	return fit_u32(a, kw, x, v);
}

int
shp_tc_size32(struct shp_tcargs *a, const char *kw, uint32_t *v)
{
	uint64_t x;

	if (shp_tc_size(a, kw, &x) < 0)
		return -1;
	return fit_u32(a, kw, x, v);
}

int
shp_tc_int(struct shp_tcargs *a, const char *kw, int64_t min, int64_t max,
	   int64_t *v)
{
	const char *s = shp_tc_cur(a);
	char *end;
	long long x;

	errno = 0;
	x = strtoll(s, &end, 0);
	if (end == s || *end != '\0' || errno != 0 || x < min || x > max)
		return shp_tc_fail(a, "%s: '%s' must be an integer within "
				   "%" PRId64 "..%" PRId64, kw, s, min, max);
	*v = x;
	return 0;
}

int
shp_tc_split(struct shp_tcargs *a, const char *args, char *buf,
	     size_t buflen, char **argv, int max)
{
	if (args == NULL)
		args = "";
	if (strlen(args) >= buflen)
		return shp_tc_fail(a, "arguments too long (at most %zu "
				   "characters)", buflen - 1);
	strcpy(buf, args);
	a->argv = argv;
	a->i = 0;
	a->argc = shp_split_words(buf, argv, max);
	if (a->argc < 0)
		return shp_tc_fail(a, "more than %d words", max);
	return 0;
}
