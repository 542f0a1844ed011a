/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netem delay distributions.
 *
 * A table holds the inverse CDF of a distribution with zero mean, scaled by
 * SHP_NETEM_DIST_SCALE, sampled at SIZE equally likely points; a delay is
 * mu + sigma * table[i] / SCALE with i uniform. This is iproute2's format,
 * but we generate the built-in tables here from their formulas instead of
 * shipping the files, sampling each quantile at the middle of its cell
 * ((i + 0.5) / SIZE) so the tables are symmetric where the law is.
 *
 *   normal        Phi^-1(u)                    (sd 1, cut at about +-3.67)
 *   pareto        (X - 1.5) * 4/3, X = (1-u)^(-1/3)   (Pareto a = 3, x_m = 1:
 *                 mean 1.5, so the entry has mean 0 and sd 4/3 * sqrt(3)/2
 *                 = 1.155 before the cut at +4 that int16 imposes, as in tc;
 *                 after it the table has mean -0.033 and sd 0.821)
 *   paretonormal  (normal + 3 * pareto) / 4, entry by entry (comonotonic,
 *                 as iproute2 builds it)
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "shp_file.h"
#include "shp_netem.h"

static struct shp_netem_dist *
dist_alloc(const char *name, uint32_t size, bool builtin)
{
	struct shp_netem_dist *d;

	d = calloc(1, sizeof(*d) + size * sizeof(d->table[0]));
	if (d == NULL)
		return NULL;
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->builtin = builtin;
	d->size = size;
	return d;
}

static int16_t
to_entry(double x)
{
	x = rint(x * SHP_NETEM_DIST_SCALE);
	if (x > INT16_MAX)
		return INT16_MAX;
	if (x < INT16_MIN)
		return INT16_MIN;
	return (int16_t)x;
}

/* Phi^-1(u) by bisection on erfc: 4096 calls at parse time, no hurry. */
static double
normal_quantile(double u)
{
	double lo = -12, hi = 12, mid;
	int i;

	for (i = 0; i < 80; i++) {
		mid = (lo + hi) / 2;
		if (0.5 * erfc(-mid / M_SQRT2) < u)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

static double
pareto_value(double u)
{
	return (pow(1.0 - u, -1.0 / 3.0) - 1.5) * 4.0 / 3.0;
}

struct shp_netem_dist *
shp_netem_dist_builtin(const char *name)
{
	struct shp_netem_dist *d;
	enum { NORMAL, PARETO, PARETONORMAL } kind;
	uint32_t i, n = SHP_NETEM_DIST_SIZE;

	if (strcmp(name, "normal") == 0)
		kind = NORMAL;
	else if (strcmp(name, "pareto") == 0)
		kind = PARETO;
	else if (strcmp(name, "paretonormal") == 0)
		kind = PARETONORMAL;
	else
		return NULL;

	d = dist_alloc(name, n, true);
	if (d == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		double u = (i + 0.5) / n;
		int16_t nv = to_entry(normal_quantile(u));
		int16_t pv = to_entry(pareto_value(u));

		switch (kind) {
		case NORMAL:
			d->table[i] = nv;
			break;
		case PARETO:
			d->table[i] = pv;
			break;
		case PARETONORMAL:
			/* mix the scaled entries, as iproute2 does */
			d->table[i] = (int16_t)((nv + 3 * (int)pv) / 4);
			break;
		}
	}
	return d;
}

/* A table file's line: iproute2's hold 8 values, comments a sentence. */
#define DIST_LINE_MAX 4096

struct shp_netem_dist *
shp_netem_dist_load(const char *path, char *err)
{
	struct shp_netem_dist *d = NULL;
	struct shp_file sf;
	int16_t *data = NULL;
	char *line;
	uint32_t n = 0;
	int rc;

	/* parsed on the control thread: only a regular file, bounded */
	if (shp_file_open(&sf, "distribution", path, SHP_NETEM_DIST_FILE_MAX,
			  DIST_LINE_MAX, err) < 0)
		return NULL;
	data = malloc(SHP_NETEM_DIST_MAX * sizeof(*data));
	if (data == NULL) {
		snprintf(err, SHP_ERR_LEN, "distribution %s: out of memory",
			 path);
		goto out;
	}
	while ((rc = shp_file_line(&sf, &line)) > 0) {
		char *p = line + strspn(line, " \t\r"), *end;

		if (*p == '#' || *p == '\0')
			continue;
		while (*p != '\0') {
			long x;

			errno = 0;
			x = strtol(p, &end, 0);
			if (end == p || errno != 0 || x < INT16_MIN ||
			    x > INT16_MAX ||
			    (*end != '\0' && strchr(" \t\r", *end) == NULL)) {
				/* the file may be anyone's: its line is not
				 * quoted in a reply */
				snprintf(err, SHP_ERR_LEN,
					 "distribution %s:%u: a value that is "
					 "not an integer in -32768..32767",
					 path, sf.line);
				goto out;
			}
			if (n == SHP_NETEM_DIST_MAX) {
				snprintf(err, SHP_ERR_LEN,
					 "distribution %s:%u: more than %d "
					 "values", path, sf.line,
					 SHP_NETEM_DIST_MAX);
				goto out;
			}
			data[n++] = (int16_t)x;
			p = end + strspn(end, " \t\r");
		}
	}
	if (rc < 0)
		goto out;
	if (n == 0) {
		snprintf(err, SHP_ERR_LEN, "distribution '%s': no values", path);
		goto out;
	}
	d = dist_alloc(path, n, false);
	if (d == NULL)
		snprintf(err, SHP_ERR_LEN, "distribution '%s': out of memory",
			 path);
	else
		memcpy(d->table, data, n * sizeof(*data));
out:
	shp_file_close(&sf);
	free(data);
	return d;
}

struct shp_netem_dist *
shp_netem_dist_find(const char *name, char *err)
{
	const char *dirs[] = {
		getenv("TC_LIB_DIR"),
#ifdef SHP_MULTIARCH
		"/usr/lib/" SHP_MULTIARCH "/tc",
#endif
		"/usr/lib/tc",
	};
	char path[4096], tried[SHP_ERR_LEN] = "";
	struct shp_netem_dist *d;
	size_t i, n = 0;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (dirs[i] == NULL || dirs[i][0] == '\0')
			continue;
		snprintf(path, sizeof(path), "%s/%s.dist", dirs[i], name);
		if (access(path, F_OK) == 0) {
			d = shp_netem_dist_load(path, err);
			if (d != NULL)
				snprintf(d->name, sizeof(d->name), "%s", name);
			return d;
		}
		n += snprintf(tried + n, n < sizeof(tried) ? sizeof(tried) - n :
			      0, "%s%s%s", n ? ", " : "", i == 0 ?
			      "$TC_LIB_DIR=" : "", dirs[i]);
		if (n >= sizeof(tried))
			n = sizeof(tried) - 1;
	}
	snprintf(err, SHP_ERR_LEN, "unknown distribution '%s': no %s.dist in "
		 "%s (built in: uniform, normal, pareto, paretonormal; or give "
		 "a table file's path)", name, name, tried);
	return NULL;
}
