/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The netem parser on arbitrary text, and its printer: what parses must
 * print to text that parses back to the same conf (shp_netem.h promises
 * it), and that text must be a fixed point.
 */
#include "fuzz_common.h"
#include "netem_trace.h"
#include "shp_netem.h"

static bool
prob_eq(const struct shp_netem_prob *a, const struct shp_netem_prob *b)
{
	return a->p == b->p && a->corr == b->corr &&
	       a->corr_set == b->corr_set;
}

static bool
dist_eq(const struct shp_netem_dist *a, const struct shp_netem_dist *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return a->builtin == b->builtin && a->size == b->size &&
	       strcmp(a->name, b->name) == 0 &&
	       memcmp(a->table, b->table, a->size * sizeof(a->table[0])) == 0;
}

/* a trace read twice from one file (the fuzzer's inputs name files) */
static bool
trace_eq(const struct shp_netem_trace *a, const struct shp_netem_trace *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a->path, b->path) == 0 && a->loop == b->loop &&
	       a->n == b->n && a->total_ns == b->total_ns;
}

/* Every field the text sets (not the id, which is new per parse). */
static bool
conf_eq(const struct shp_netem_conf *a, const struct shp_netem_conf *b)
{
	return a->limit_set == b->limit_set && a->limit == b->limit &&
	       a->latency == b->latency && a->jitter == b->jitter &&
	       a->delay_corr == b->delay_corr &&
	       a->delay_corr_set == b->delay_corr_set &&
	       dist_eq(a->dist, b->dist) && a->noreorder == b->noreorder &&
	       a->loss_model == b->loss_model && prob_eq(&a->loss, &b->loss) &&
	       a->state.p13 == b->state.p13 && a->state.p31 == b->state.p31 &&
	       a->state.p32 == b->state.p32 && a->state.p23 == b->state.p23 &&
	       a->state.p14 == b->state.p14 && a->ge.p == b->ge.p &&
	       a->ge.r == b->ge.r && a->ge.h1 == b->ge.h1 &&
	       a->ge.k1 == b->ge.k1 && a->ecn == b->ecn &&
	       prob_eq(&a->duplicate, &b->duplicate) &&
	       prob_eq(&a->corrupt, &b->corrupt) &&
	       prob_eq(&a->reorder, &b->reorder) && a->gap == b->gap &&
	       a->rate == b->rate && a->packet_overhead == b->packet_overhead &&
	       a->cell_size == b->cell_size &&
	       a->cell_overhead == b->cell_overhead &&
	       a->slot_mode == b->slot_mode && a->slot_min == b->slot_min &&
	       a->slot_max == b->slot_max &&
	       dist_eq(a->slot_dist, b->slot_dist) &&
	       a->slot_delay == b->slot_delay &&
	       a->slot_jitter == b->slot_jitter &&
	       a->slot_packets == b->slot_packets &&
	       a->slot_bytes == b->slot_bytes && a->seed_set == b->seed_set &&
	       a->seed == b->seed && a->outage_on == b->outage_on &&
	       a->outage_off == b->outage_off && a->ber == b->ber &&
	       a->ber_drop == b->ber_drop && a->det.n == b->det.n &&
	       a->det.m == b->det.m && a->seq_len == b->seq_len &&
	       (a->seq_len == 0 || memcmp(a->seq, b->seq, a->seq_len) == 0) &&
	       a->accumulate == b->accumulate &&
	       a->store_set == b->store_set && a->store == b->store &&
	       trace_eq(a->trace, b->trace);
}

/*
 * The printed text (free() it). shp_netem_conf_format() returns the
 * length snprintf would: a buffer of that + 1 must hold all of it, which
 * is checked against a roomier one.
 */
static char *
print(const struct shp_netem_conf *c, const char *in)
{
	int n = shp_netem_conf_format(c, NULL, 0);
	char *t, *exact;

	if (n < 0)
		FUZZ_BUG("a conf the parser built does not print");
	t = malloc((size_t)n + 64);
	exact = malloc((size_t)n + 1);
	if (t == NULL || exact == NULL ||
	    shp_netem_conf_format(c, t, (size_t)n + 64) != n ||
	    shp_netem_conf_format(c, exact, (size_t)n + 1) != n)
		FUZZ_BUG("format length differs with the buffer size");
	if (strcmp(t, exact) != 0)
		fuzz_roundtrip_failed("netem (format into its own length + 1)",
				      in, t, exact);
	free(exact);
	return t;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[SHP_ERR_LEN], err2[SHP_ERR_LEN];
	char *in = fuzz_str(data, size), *t1, *t2 = NULL;
	struct shp_netem_conf *a, *b;

	err[0] = '\0';
	a = shp_netem_parse(in, err);
	if (a == NULL) {
		/* refused: with one line saying why */
		if (err[0] == '\0' || strchr(err, '\n') != NULL)
			FUZZ_BUG("refused without a one-line reason: '%s'", err);
		free(in);
		return 0;
	}
	t1 = print(a, in);
	b = shp_netem_parse(t1, err2);
	if (b != NULL)
		t2 = print(b, in);
	if (b == NULL || !conf_eq(a, b) || strcmp(t1, t2) != 0)
		fuzz_roundtrip_failed("netem", in, t1, b ? t2 : NULL);
	shp_netem_conf_free(b);
	shp_netem_conf_free(a);
	free(t2);
	free(t1);
	free(in);
	return 0;
}
