/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TheaterQ trace files for netem's `trace` (netem_trace.h): the reader,
 * which refuses the whole file at its first bad row, and the seek.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netem_trace.h"
#include "shp_file.h"
#include "shp_netem.h"

uint32_t
shp_netem_trace_pack(uint64_t v)
{
	uint32_t e = 0;

	while ((v >> e) >= (UINT64_C(1) << 28)) {
		e++;
	}
	if (e != 0) {
		/* the nearest: a carry into bit 28 moves to the next shift */
		uint64_t m = (v + (UINT64_C(1) << (e - 1))) >> e;

		if (m >> 28 != 0) {
			m >>= 1;
			e++;
		}
		return (uint32_t)m | e << 28;
	}
	return (uint32_t)v;
}

enum { C_KEEP, C_LATENCY, C_JITTER, C_RATE, C_LOSS, C_LIMIT, C_DUP_PROB,
       C_DUP_DELAY, C_ROUTE, C_MAX };

/* the columns of a simple line, in the extended line's order */
static const uint8_t simple_cols[] = { C_KEEP, C_LATENCY, C_RATE, C_LOSS,
				       C_LIMIT };
static const char *const col_name[C_MAX] = {
	"KEEP", "LATENCY", "JITTER", "RATE", "LOSS", "LIMIT", "DUP_PROB",
	"DUP_DELAY", "ROUTE_ID",
};

/* A column: digits only (blanks around), in 0..UINT64_MAX. */
static int
read_u64(const char *s, const char *end, uint64_t *v)
{
	uint64_t x = 0;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
			   end[-1] == '\r'))
		end--;
	if (s == end)
		return -1;
	for (; s < end; s++) {
		unsigned int d = (unsigned char)*s - '0';

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

/* The row of a line, or -1 with err naming the line. */
static int
read_row(struct shp_netem_trace *t, const struct shp_file *sf, char *line,
	 struct shp_netem_trace_row *r, char *err)
{
	uint64_t v[C_MAX] = { 0 };
	const char *p = line;
	unsigned int ncol = 1, i;
	char *q;

	for (q = line; *q != '\0'; q++)
		ncol += *q == ',';
	if (ncol != 5 && ncol != 9) {
		snprintf(err, SHP_ERR_LEN, "trace %s:%u: %u columns; a row "
			 "has 5 (KEEP,LATENCY,RATE,LOSS,LIMIT) or 9 (KEEP,"
			 "LATENCY,JITTER,RATE,LOSS,LIMIT,DUP_PROB,DUP_DELAY,"
			 "ROUTE_ID)", t->path, sf->line, ncol);
		return -1;
	}
	if (t->columns == 0)
		t->columns = (uint8_t)ncol;
	if (ncol != t->columns) {
		snprintf(err, SHP_ERR_LEN, "trace %s:%u: %u columns where the "
			 "first row has %u", t->path, sf->line, ncol,
			 t->columns);
		return -1;
	}
	for (i = 0; i < ncol; i++) {
		const char *comma = strchr(p, ',');
		const char *end = comma != NULL ? comma : p + strlen(p);
		unsigned int col = ncol == 5 ? simple_cols[i] : i;

		if (read_u64(p, end, &v[col]) < 0) {
			snprintf(err, SHP_ERR_LEN, "trace %s:%u: %s (column "
				 "%u) is not a whole number in 0..2^64-1",
				 t->path, sf->line, col_name[col], i + 1);
			return -1;
		}
		p = end + 1;
	}
	if (v[C_KEEP] == 0 || v[C_KEEP] > UINT32_MAX) {
		snprintf(err, SHP_ERR_LEN, "trace %s:%u: KEEP %llu: a row "
			 "holds for 1..4294967295 us (split a longer one)",
			 t->path, sf->line, (unsigned long long)v[C_KEEP]);
		return -1;
	}
	for (i = C_LATENCY; i <= C_DUP_DELAY; i++) {
		bool wide = i == C_LATENCY || i == C_JITTER || i == C_RATE ||
			    i == C_DUP_DELAY;

		if (wide ? v[i] > SHP_NETEM_TRACE_WIDE_MAX :
		    i != C_LIMIT && v[i] > UINT32_MAX) {
			snprintf(err, SHP_ERR_LEN, "trace %s:%u: %s %llu: above "
				 "%llu", t->path, sf->line, col_name[i],
				 (unsigned long long)v[i], wide ?
				 (unsigned long long)SHP_NETEM_TRACE_WIDE_MAX :
				 (unsigned long long)UINT32_MAX);
			return -1;
		}
	}
	if (v[C_ROUTE] > SHP_NETEM_TRACE_ROUTE_MAX) {
		snprintf(err, SHP_ERR_LEN, "trace %s:%u: ROUTE_ID %llu: above "
			 "%u", t->path, sf->line, (unsigned long long)v[C_ROUTE],
			 SHP_NETEM_TRACE_ROUTE_MAX);
		return -1;
	}
	r->keep_us = (uint32_t)v[C_KEEP];
	r->loss = (uint32_t)v[C_LOSS];
	r->dup_prob = (uint32_t)v[C_DUP_PROB];
	r->limit = v[C_LIMIT] > SHP_NETEM_TRACE_LIMIT_MAX ?
		   SHP_NETEM_TRACE_LIMIT_MAX : (uint32_t)v[C_LIMIT];
	r->route = (uint32_t)v[C_ROUTE];
	r->latency = shp_netem_trace_pack(v[C_LATENCY]);
	r->jitter = shp_netem_trace_pack(v[C_JITTER]);
	r->dup_delay = shp_netem_trace_pack(v[C_DUP_DELAY]);
	r->rate = shp_netem_trace_pack(v[C_RATE]);
	return 0;
}

/* rows up to n (doubling: the load stays linear), NULL if none is left */
static int
grow(struct shp_netem_trace *t, uint32_t *cap)
{
	uint32_t ncap = *cap != 0 ? *cap * 2 : 4096;
	struct shp_netem_trace_row *rows;

	if (ncap > SHP_NETEM_TRACE_ROWS_MAX)
		ncap = SHP_NETEM_TRACE_ROWS_MAX;
	rows = realloc(t->rows, (size_t)ncap * sizeof(*rows));
	if (rows == NULL)
		return -1;
	t->rows = rows;
	*cap = ncap;
	return 0;
}

static int
finish(struct shp_netem_trace *t, char *err)
{
	uint64_t at = 0;
	uint32_t i, nmark = (t->n + SHP_NETEM_TRACE_MARK - 1) /
			    SHP_NETEM_TRACE_MARK;
	struct shp_netem_trace_row *rows;

	/* exactly n rows: 32 bytes a row, not the doubling's slack */
	rows = realloc(t->rows, (size_t)t->n * sizeof(*rows));
	if (rows != NULL)
		t->rows = rows;
	t->mark = malloc((size_t)nmark * sizeof(*t->mark));
	if (t->mark == NULL) {
		snprintf(err, SHP_ERR_LEN, "trace %s: out of memory", t->path);
		return -1;
	}
	for (i = 0; i < t->n; i++) {
		const struct shp_netem_trace_row *r = &t->rows[i];
		uint64_t lat = shp_netem_trace_wide(r->latency);
		uint64_t jit = shp_netem_trace_wide(r->jitter);

		if (i % SHP_NETEM_TRACE_MARK == 0)
			t->mark[i / SHP_NETEM_TRACE_MARK] = at;
		at += (uint64_t)r->keep_us * 1000;
		if (at > UINT64_MAX / 4) {
			/* a pass's instants must not wrap */
			snprintf(err, SHP_ERR_LEN, "trace %s: the rows last "
				 "more than 146 years", t->path);
			return -1;
		}
		if (lat > t->max_latency)
			t->max_latency = lat;
		if (jit > t->max_jitter)
			t->max_jitter = jit;
	}
	t->total_ns = at;
	return 0;
}

struct shp_netem_trace *
shp_netem_trace_load(const char *path, bool loop, char *err)
{
	struct shp_netem_trace *t;
	struct shp_file sf;
	uint32_t cap = 0;
	char *line;
	int rc;

	t = calloc(1, sizeof(*t));
	if (t == NULL || (t->path = strdup(path)) == NULL) {
		snprintf(err, SHP_ERR_LEN, "trace %s: out of memory", path);
		free(t);
		return NULL;
	}
	t->loop = loop;
	/* parsed on the control thread: only a regular file, bounded, as
	 * the control socket's client when one asked */
	if (shp_file_open(&sf, "trace", path, SHP_NETEM_TRACE_FILE_MAX,
			  SHP_NETEM_TRACE_LINE_MAX, err) < 0) {
		shp_netem_trace_free(t);
		return NULL;
	}
	while ((rc = shp_file_line(&sf, &line)) > 0) {
		/* TheaterQ's comments: a line not starting with a digit */
		if (line[0] < '0' || line[0] > '9')
			continue;
		if (t->n == cap && (cap == SHP_NETEM_TRACE_ROWS_MAX ||
				    grow(t, &cap) < 0)) {
			snprintf(err, SHP_ERR_LEN, cap ==
				 SHP_NETEM_TRACE_ROWS_MAX ? "trace %s:%u: more "
				 "than 16777216 rows" : "trace %s:%u: out of "
				 "memory", path, sf.line);
			rc = -1;
			break;
		}
		if (read_row(t, &sf, line, &t->rows[t->n], err) < 0) {
			rc = -1;
			break;
		}
		t->n++;
	}
	shp_file_close(&sf);
	if (rc == 0 && t->n == 0) {
		snprintf(err, SHP_ERR_LEN, "trace %s: no rows (a row is "
			 "KEEP,LATENCY,RATE,LOSS,LIMIT)", path);
		rc = -1;
	}
	if (rc < 0 || finish(t, err) < 0) {
		shp_netem_trace_free(t);
		return NULL;
	}
	return t;
}

void
shp_netem_trace_free(struct shp_netem_trace *t)
{
	if (t == NULL)
		return;
	free(t->rows);
	free(t->mark);
	free(t->path);
	free(t);
}

uint32_t
shp_netem_trace_find(const struct shp_netem_trace *t, uint64_t t0,
		     uint64_t at, uint64_t *start, uint64_t *end)
{
	uint64_t off = at > t0 ? at - t0 : 0, base = t0, s;
	uint32_t lo = 0, hi, i;

	if (off >= t->total_ns) {
		if (!t->loop) {
			/* `once`: the last row holds (TheaterQ's cont HOLD) */
			*start = t0 + t->total_ns -
				 (uint64_t)t->rows[t->n - 1].keep_us * 1000;
			*end = UINT64_MAX;
			return t->n - 1;
		}
		base = t0 + off / t->total_ns * t->total_ns;
		off %= t->total_ns;
	}
	/* the last mark at or before off, then the rows after it */
	hi = (t->n - 1) / SHP_NETEM_TRACE_MARK;
	while (lo < hi) {
		uint32_t mid = (lo + hi + 1) / 2;

		if (t->mark[mid] <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	i = lo * SHP_NETEM_TRACE_MARK;
	s = t->mark[lo];
	while (s + (uint64_t)t->rows[i].keep_us * 1000 <= off)
		s += (uint64_t)t->rows[i++].keep_us * 1000;
	*start = base + s;
	*end = base + s + (uint64_t)t->rows[i].keep_us * 1000;
	return i;
}

void
shp_netem_trace_arm(const struct shp_netem_trace *t,
		    struct shp_netem_trace_pos *pos, uint64_t t0)
{
	pos->armed = true;
	pos->t0 = t0;
	pos->passes = 0;
	pos->row = shp_netem_trace_find(t, t0, t0, &pos->start, &pos->end);
}

/* a probability of TheaterQ's scale, without correlation */
static void
prob_of(struct shp_netem_prob *pr, uint32_t scaled)
{
	double p = (double)scaled / UINT32_MAX;

	pr->p = p;
	pr->corr = 0;
	pr->corr_set = false;
	pr->p_after_hit = p;
	pr->p_after_miss = p;
}

void
shp_netem_trace_apply(const struct shp_netem_trace *t, uint32_t row,
		      struct shp_netem_conf *c)
{
	const struct shp_netem_trace_row *r = &t->rows[row];
	uint64_t bps = shp_netem_trace_wide(r->rate);

	c->latency = shp_netem_trace_wide(r->latency);
	c->jitter = shp_netem_trace_wide(r->jitter);
	/* netem's rate is in bytes/s: a rate below 8 bit/s is still one */
	c->rate = bps == 0 ? 0 : bps < 8 ? 1 : bps / 8;
	c->loss_model = r->loss != 0 ? SHP_NETEM_LOSS_RANDOM :
		SHP_NETEM_LOSS_NONE;
	prob_of(&c->loss, r->loss);
	prob_of(&c->duplicate, r->dup_prob);
	c->dup_delay = shp_netem_trace_wide(r->dup_delay);
	c->limit_set = true;
	c->limit = r->limit;
}
