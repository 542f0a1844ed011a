/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every registered stage kind's parser on arbitrary text, and its
 * printer (shp_kind.h: "format: conf back to arguments that parse to the
 * same conf"), through the registry as the options, the profile and `set`
 * reach them: a kind added to lib/core/shp_kinds.c is fuzzed with no harness
 * of its own. The input's first word is the key (queue, tbf, netem, ...);
 * any other first word makes the whole input a --queue text.
 */
#include "fuzz_common.h"
#include "shp_kind.h"
#include "shp_units.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct shp_kind_env env = {
		.bands = 3, .ring_size = 1024, .seed = 1, .seed_set = true,
	};
	char err[SHP_ERR_LEN], err2[SHP_ERR_LEN], t1[2048], t2[2048];
	char key[32] = "queue";
	char *in = fuzz_str(data, size);
	const char *text = in;
	const struct shp_kind *k, *k2;
	size_t n = strcspn(in, " \t");
	void *c, *c2;
	int len;

	if (n < sizeof(key)) {
		memcpy(key, in, n);
		key[n] = '\0';
		if (shp_kind_is_key(key))
			text = in + n;
		else
			strcpy(key, "queue");
	}
	err[0] = '\0';
	if (shp_kind_parse(key, text, &env, &k, &c, err) < 0) {
		if (err[0] == '\0' || strchr(err, '\n') != NULL)
			FUZZ_BUG("%s: refused without a one-line reason: '%s'",
				 key, err);
		free(in);
		return 0;
	}
	len = shp_kind_format(k, c, t1, sizeof(t1));
	if (len < 0 || (size_t)len >= sizeof(t1))
		FUZZ_BUG("%s format: %d", k->name, len);
	if (shp_kind_parse(key, t1, &env, &k2, &c2, err2) < 0) {
		fuzz_roundtrip_failed(k->name, in, t1, NULL);
	} else {
		shp_kind_format(k2, c2, t2, sizeof(t2));
		if (k2 != k || strcmp(t1, t2) != 0)
			fuzz_roundtrip_failed(k->name, in, t1, t2);
		shp_kind_conf_free(k2, c2);
	}
	shp_kind_conf_free(k, c);
	free(in);
	return 0;
}
