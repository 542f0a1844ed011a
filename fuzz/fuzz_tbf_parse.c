/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tbf parser on arbitrary text, and its printer: what parses must print
 * to text that parses back to the same conf (shp_tbf.h promises it). The
 * same input goes to the policer's parser (shp_police.h), which shares
 * tbf's words, with the same promise.
 */
#include "fuzz_common.h"
#include "shp_police.h"
#include "shp_tbf.h"

/* What the text sets, and what is derived from it. */
static bool
conf_eq(const struct shp_tbf_conf *a, const struct shp_tbf_conf *b)
{
	return a->rate == b->rate && a->burst == b->burst &&
	       a->limit == b->limit && a->latency == b->latency &&
	       a->peakrate == b->peakrate && a->mtu == b->mtu &&
	       a->overhead == b->overhead && a->mpu == b->mpu &&
	       a->atm == b->atm && a->max_size == b->max_size &&
	       a->rate_mult == b->rate_mult && a->peak_mult == b->peak_mult &&
	       a->buffer_t == b->buffer_t && a->mtu_t == b->mtu_t;
}

/* tc police on the same text: what it takes, tbf given a limit too reads
 * as the same bucket (unless the limit's words no longer fit) */
static void
police(const char *in)
{
	char err[SHP_ERR_LEN], err2[SHP_ERR_LEN], t1[512], t2[512];
	struct shp_tbf_conf a, b, tbf;
	char *lim;
	int n;

	err[0] = '\0';
	if (shp_police_parse(in, &a, err) < 0) {
		if (err[0] == '\0' || strchr(err, '\n') != NULL)
			FUZZ_BUG("police refused without a one-line reason: "
				 "'%s'", err);
		return;
	}
	if (a.rate == 0 || a.burst == 0 || a.buffer_t < 0 || a.limit != 0 ||
	    a.max_size == 0)
		FUZZ_BUG("police accepted an unusable bucket: rate %" PRIu64
			 " burst %" PRIu64 " depth %" PRId64 " ticks", a.rate,
			 a.burst, a.buffer_t);
	if (asprintf(&lim, "%s limit 1", in) < 0)
		abort();
	if (shp_tbf_parse(lim, &tbf, err2) == 0 &&
	    (tbf.buffer_t != a.buffer_t || tbf.mtu_t != a.mtu_t ||
	     tbf.rate_mult != a.rate_mult || tbf.peak_mult != a.peak_mult))
		FUZZ_BUG("tbf and police read '%s' as different buckets", in);
	free(lim);
	n = shp_police_format(&a, t1, sizeof(t1));
	if (n < 0 || (size_t)n >= sizeof(t1))
		FUZZ_BUG("police format: %d", n);
	if (shp_police_parse(t1, &b, err2) < 0) {
		fuzz_roundtrip_failed("police", in, t1, NULL);
	} else {
		shp_police_format(&b, t2, sizeof(t2));
		if (!conf_eq(&a, &b) || strcmp(t1, t2) != 0)
			fuzz_roundtrip_failed("police", in, t1, t2);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[SHP_ERR_LEN], err2[SHP_ERR_LEN], t1[512], t2[512];
	char *in = fuzz_str(data, size);
	struct shp_tbf_conf a, b;
	int n;

	err[0] = '\0';
	if (shp_tbf_parse(in, &a, err) < 0) {
		if (err[0] == '\0' || strchr(err, '\n') != NULL)
			FUZZ_BUG("refused without a one-line reason: '%s'", err);
		police(in);
		free(in);
		return 0;
	}
	/* a conf that passes must be usable: a bucket that holds at least
	 * the largest frame it lets through */
	if (a.rate == 0 || a.burst == 0 || a.buffer_t < 0)
		FUZZ_BUG("accepted an unusable bucket: rate %" PRIu64
			 " burst %" PRIu64 " depth %" PRId64 " ticks", a.rate,
			 a.burst, a.buffer_t);
	n = shp_tbf_format(&a, t1, sizeof(t1));
	if (n < 0 || (size_t)n >= sizeof(t1))
		FUZZ_BUG("tbf format: %d", n);
	if (shp_tbf_parse(t1, &b, err2) < 0)
		fuzz_roundtrip_failed("tbf", in, t1, NULL);
	else {
		shp_tbf_format(&b, t2, sizeof(t2));
		if (!conf_eq(&a, &b) || strcmp(t1, t2) != 0)
			fuzz_roundtrip_failed("tbf", in, t1, t2);
	}
	police(in);
	free(in);
	return 0;
}
