/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tc's unit parsers (lib/base/shp_units.c): the first byte picks the parser,
 * the rest is the word. Results must be in their documented range; a
 * refusal must say why in one line.
 */
#include <math.h>

#include "fuzz_common.h"
#include "shp_units.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[SHP_ERR_LEN], buf[64];
	char *s, *words[8], *copy;
	uint64_t v = 0, w = 0;
	double f = -1;
	int rc = 0, n;

	if (size == 0)
		return 0;
	s = fuzz_str(data + 1, size - 1);
	err[0] = '\0';
	switch (data[0] % 6) {
	case 0:
		rc = shp_parse_time(s, &v, err);
		if (rc == 0) {
			shp_fmt_time(buf, sizeof(buf), v);
			if (shp_parse_time(buf, &w, err) < 0 || w != v)
				fuzz_roundtrip_failed("time", s, buf, NULL);
		}
		break;
	case 1:
		rc = shp_parse_size(s, &v, err);
		if (rc == 0) {
			shp_fmt_size(buf, sizeof(buf), v);
			if (shp_parse_size(buf, &w, err) < 0 || w != v)
				fuzz_roundtrip_failed("size", s, buf, NULL);
		}
		break;
	case 2:
		rc = shp_parse_rate(s, &v, err);
		if (rc == 0) {
			if (v == 0)
				FUZZ_BUG("rate 0 accepted");
			shp_fmt_rate(buf, sizeof(buf), v);
			if (shp_parse_rate(buf, &w, err) < 0 || w != v)
				fuzz_roundtrip_failed("rate", s, buf, NULL);
		}
		break;
	case 3:
		rc = shp_parse_percent(s, &f, err);
		if (rc == 0 && !(f >= 0 && f <= 1))
			FUZZ_BUG("percentage %g out of 0..1", f);
		break;
	case 4:
		rc = shp_parse_u64(s, &v, err);
		break;
	case 5:
		copy = strdup(s);
		if (copy == NULL)
			abort();
		n = shp_split_words(copy, words, 8);
		if (n > 8)
			FUZZ_BUG("%d words of at most 8", n);
		while (n-- > 0)
			if (words[n][0] == '\0' ||
			    strpbrk(words[n], " \t\r\n") != NULL)
				FUZZ_BUG("word %d '%s'", n, words[n]);
		free(copy);
		break;
	}
	/* a word never holds a line break (the callers split on them), so
	 * a message quoting one may span lines */
	if (rc < 0 && (err[0] == '\0' || (strchr(err, '\n') != NULL &&
					  strpbrk(s, "\r\n") == NULL)))
		FUZZ_BUG("refused without a one-line reason: '%s'", err);
	free(s);
	return 0;
}
