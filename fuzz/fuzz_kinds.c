/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every registered stage kind's parser on arbitrary text, and its
 * printer (shp_kind.h: "format: conf back to arguments that parse to the
 * same conf"), through the registry as the options, the profile and `set`
 * reach them: a kind added to lib/core/shp_kinds.c is fuzzed with no harness
 * of its own. The input's first word is the key (queue, tbf, netem, ...);
 * any other first word makes the whole input a --queue text.
 *
 * The text is parsed again for a second shard of a link and twinned with
 * the first copy (shp_conf_twin, "off" included), as a change to a port
 * of two shards is: the twin has the first's id and prints the same.
 */
#include "fuzz_common.h"
#include "shp_conf_hdr.h"
#include "shp_kind.h"
#include "shp_qdisc.h"
#include "shp_units.h"

/* shard 1's copy of the change that made c (kind k) from text */
static void
check_twin(const char *key, const char *text,
	   const struct shp_kind_env *env, const struct shp_kind *k,
	   void *c, const char *t1)
{
	const struct shp_kind *kt;
	char err[SHP_ERR_LEN], t[2048];
	void *ct;

	if (shp_kind_parse(key, text, env, &kt, &ct, err) < 0)
		FUZZ_BUG("%s: parsed once, refused for the second shard: %s",
			 key, err);
	shp_conf_twin(ct, c);
	if (kt != k || (ct == NULL) != (c == NULL))
		FUZZ_BUG("%s: the second shard's copy is another kind or off",
			 key);
	if (ct != NULL && ((struct shp_conf_hdr *)ct)->id !=
			  ((struct shp_conf_hdr *)c)->id)
		FUZZ_BUG("%s: the twin has an id of its own", key);
	shp_kind_format(kt, ct, t, sizeof(t));
	if (strcmp(t, t1) != 0)
		FUZZ_BUG("%s: the shards print '%s' and '%s'", key, t1, t);
	shp_kind_conf_free(kt, ct);
}

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
	check_twin(key, text, &env, k, c, t1);
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
