/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --stats-file's ports.0.trace_rows: what became of the frames that
 * arrived in each row of the port's netem `trace` (its first
 * REPLAY_TRACE_ROWS rows; a looped trace's passes add into the same
 * rows). A frame's row is the one in force at its arrival, on the
 * trace's clock from the first arrival: with no gate before netem, the
 * row netem gave it. Its drops are those of any stage (what arrived and
 * never left), its delay arrival to departure.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "netem_trace.h"
#include "replay.h"
#include "shp_netem.h"

#define REPLAY_TRACE_ROWS 10000

struct trace_row_fig {
	uint64_t frames, out, delay_sum;
	unsigned int route;     /* the row's ROUTE_ID (reported only) */
};

static const struct shp_netem_trace *
port_trace(const struct replay *r, const void **conf)
{
	unsigned int sl;

	for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
		const struct shp_kind *k = r->chain[0].kind[sl];
		const struct shp_netem_conf *c = r->chain[0].conf[sl];

		if (k != NULL && c != NULL && strcmp(k->name, "netem") == 0 &&
		    c->trace != NULL) {
			*conf = c;
			return c->trace;
		}
	}
	return NULL;
}

int
replay_trace_init(struct replay *r)
{
	const struct shp_netem_trace *t = port_trace(r, &r->trace_conf);
	struct trace_row_fig *fig;
	uint32_t i;

	if (t == NULL)
		return 0;
	r->trace = t;
	r->trace_nrows = t->n < REPLAY_TRACE_ROWS ? t->n : REPLAY_TRACE_ROWS;
	fig = calloc(r->trace_nrows, sizeof(*fig));
	if (fig == NULL)
		return -1;
	/* kept: a schedule may free the trace before the figures print */
	for (i = 0; i < r->trace_nrows; i++)
		fig[i].route = t->rows[i].route;
	r->trace_rows = fig;
	return 0;
}

/* the row of a frame that arrived at `at`, or -1: none counted (past
 * the rows kept, or the profile no longer the one that had the trace) */
static int64_t
row_of(struct replay *r, uint64_t at)
{
	const void *conf = NULL;
	uint64_t s, e;
	uint32_t row;

	if (r->trace == NULL)
		return -1;
	if (port_trace(r, &conf) != r->trace || conf != r->trace_conf) {
		/* a schedule replaced the profile: its trace is gone */
		r->trace = NULL;
		return -1;
	}
	row = shp_netem_trace_find(r->trace, r->first_ts, at, &s, &e);
	return row < r->trace_nrows ? (int64_t)row : -1;
}

void
replay_trace_arrival(struct replay *r, uint64_t at)
{
	int64_t row = row_of(r, at);

	if (row >= 0)
		((struct trace_row_fig *)r->trace_rows)[row].frames++;
}

void
replay_trace_departure(struct replay *r, const struct shp_meta *meta)
{
	int64_t row;

	if (meta->flags & SHP_META_F_DUP)
		return;         /* netem's copy: not a frame that arrived */
	row = row_of(r, meta->rx_ns);
	if (row >= 0) {
		struct trace_row_fig *f =
			&((struct trace_row_fig *)r->trace_rows)[row];

		f->out++;
		f->delay_sum += r->now - meta->rx_ns;
	}
}

void
replay_trace_json(const struct replay *r, FILE *f)
{
	const struct trace_row_fig *fig = r->trace_rows;
	uint32_t i;

	if (fig == NULL)
		return;
	fprintf(f, ",\n    \"trace_rows\": [");
	for (i = 0; i < r->trace_nrows; i++)
		fprintf(f, "%s{\"row\": %" PRIu32 ", \"route\": %u, "
			"\"frames\": %" PRIu64 ", \"drops\": %" PRIu64
			", \"delay_mean_ns\": %.0f}",
			i ? ",\n                   " : "", i,
			fig[i].route, fig[i].frames,
			fig[i].frames > fig[i].out ?
			fig[i].frames - fig[i].out : 0,
			fig[i].out ? (double)fig[i].delay_sum /
			(double)fig[i].out : 0.0);
	fprintf(f, "]");
}

void
replay_trace_free(struct replay *r)
{
	free(r->trace_rows);
	r->trace_rows = NULL;
	r->trace = NULL;
}
