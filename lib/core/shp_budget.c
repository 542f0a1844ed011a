/* SPDX-License-Identifier: BSD-3-Clause */
/* The lossless budget's arithmetic and its words (shp_budget.h). */
#include <inttypes.h>

#include "shp_budget.h"
#include "shp_units.h"

/* ns that n frames take at rate bytes/s, each `cost` bytes (saturated) */
static uint64_t
frames_ns(uint64_t n, uint64_t cost, uint64_t rate)
{
	double t;

	if (rate == 0)
		return 0;
	t = (double)n * (double)cost * 1e9 / (double)rate;
	return t >= 1.8e19 ? UINT64_MAX : (uint64_t)t;
}

void
shp_budget_finish(struct shp_budget *b)
{
	uint64_t feed;

	b->max_delay_at_line_ns = frames_ns(b->frames, (uint64_t)b->frame +
					    SHP_BUDGET_WIRE_EXTRA,
					    b->line_rate);
	b->max_delay_at_rate_ns = frames_ns(b->frames, b->frame,
					    b->gate_rate);
	/* frames held = rate x delay: the rate that fills it at that delay */
	if (b->delay_ns == 0) {
		b->max_rate_at_delay_bps = 0;
	} else {
		double r = (double)b->frames * b->frame * 8 * 1e9 /
			   (double)b->delay_ns;

		b->max_rate_at_delay_bps = r >= 1.8e19 ? UINT64_MAX :
					   (uint64_t)r;
	}
	/* what feeds the line: the rate stage if any, else the link */
	feed = b->gate_rate != 0 ? b->max_delay_at_rate_ns :
		b->max_delay_at_line_ns;
	b->over = b->delay_ns != 0 &&
		  (b->gate_rate != 0 || b->line_rate != 0) &&
		  b->delay_ns > feed;
}

static void
fmt_bps(char *buf, size_t len, double bps)
{
	if (bps >= 1e12)
		snprintf(buf, len, "%.0f Tbit/s", bps / 1e12);
	else if (bps >= 1e9)
		snprintf(buf, len, "%.3g Gbit/s", bps / 1e9);
	else if (bps >= 1e6)
		snprintf(buf, len, "%.3g Mbit/s", bps / 1e6);
	else
		snprintf(buf, len, "%.3g kbit/s", bps / 1e3);
}

static void
fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000000000ull)   /* no exponent: whole seconds */
		snprintf(buf, len, "%.0fs", (double)ns / 1e9);
	else
		shp_fmt_tc_time(buf, len, ns, false);
}

int
shp_budget_line(const struct shp_budget *b, uint16_t port, char *buf,
		size_t len)
{
	char line[32], lr[32], gate[96] = "", rate[32], at[96], d[32];

	fmt_bps(lr, sizeof(lr), (double)b->line_rate * 8);
	fmt_ns(line, sizeof(line), b->max_delay_at_line_ns);
	if (b->gate_rate != 0) {
		char gr[32], t[32];

		fmt_bps(gr, sizeof(gr), (double)b->gate_rate * 8);
		fmt_ns(t, sizeof(t), b->max_delay_at_rate_ns);
		snprintf(gate, sizeof(gate), ", %s at the rate stage's %s",
			 t, gr);
	}
	if (b->delay_ns != 0) {
		fmt_ns(d, sizeof(d), b->delay_ns);
		fmt_bps(rate, sizeof(rate), (double)b->max_rate_at_delay_bps);
		snprintf(at, sizeof(at), "; at the delay of %s, up to %s",
			 d, rate);
	} else {
		snprintf(at, sizeof(at), "; no delay configured");
	}
	return snprintf(buf, len, "port %u: lossless budget (full-size "
			"frames of %u bytes, the MTU's): %" PRIu64 " frames "
			"(%" PRIu64 " in mbufs of the pool, the rest in a "
			"byte store of %.2f GiB reserved, resident as it "
			"fills, %.2f GiB for this profile): the longest "
			"delay %s%s%s%s%s",
			port, b->frame, b->frames, b->mbufs,
			(double)b->store_reserved / (1u << 30),
			(double)b->store_bound / (1u << 30),
			b->line_rate != 0 ? line : "(link speed unknown)",
			b->line_rate != 0 ? " at the line's " : "",
			b->line_rate != 0 ? lr : "", gate, at);
}

int
shp_budget_over_line(const struct shp_budget *b, uint16_t port, char *buf,
		     size_t len)
{
	char d[32], max[32], rate[32], feed[32];
	uint64_t r = b->gate_rate != 0 ? b->gate_rate : b->line_rate;

	fmt_ns(d, sizeof(d), b->delay_ns);
	fmt_ns(max, sizeof(max), b->gate_rate != 0 ?
	       b->max_delay_at_rate_ns : b->max_delay_at_line_ns);
	fmt_bps(feed, sizeof(feed), (double)r * 8);
	fmt_bps(rate, sizeof(rate), (double)b->max_rate_at_delay_bps);
	return snprintf(buf, len, "port %u: a delay of %s at %s exceeds the "
			"lossless budget (frames of %u bytes): at most %s at "
			"%s, at most %s at %s; beyond, the delay line drops",
			port, d, feed, b->frame, max, feed, rate, d);
}

static void
json_u64_or_null(FILE *f, const char *key, uint64_t v)
{
	if (v == 0)
		fprintf(f, ", \"%s\": null", key);
	else
		fprintf(f, ", \"%s\": %" PRIu64, key, v);
}

void
shp_budget_json(FILE *f, const struct shp_budget *b)
{
	fprintf(f, "{\"frame_bytes\": %u, \"frames\": %" PRIu64
		", \"mbufs\": %" PRIu64 ", \"store_bytes\": %" PRIu64
		", \"store_reserved\": %" PRIu64 ", \"delay_ns\": %" PRIu64,
		b->frame, b->frames, b->mbufs, b->store_bound,
		b->store_reserved, b->delay_ns);
	json_u64_or_null(f, "max_delay_at_line_ns", b->max_delay_at_line_ns);
	json_u64_or_null(f, "max_delay_at_rate_ns", b->max_delay_at_rate_ns);
	json_u64_or_null(f, "max_rate_at_delay_bps",
			 b->max_rate_at_delay_bps);
	fprintf(f, ", \"over\": %s}", b->over ? "true" : "false");
}
