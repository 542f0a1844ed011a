/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The INI profile loader (lib/config.c over librte_cfgfile) on arbitrary
 * files, then the cross-option checks, as the program and the offline
 * tool run them.
 */
#include "fuzz_common.h"
#include "config.h"
#include "shp_netem.h"
#include "shp_tbf.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	char err[SHP_ERR_LEN];
	const char *last_t = NULL, *last_n = NULL;
	struct shp_options o;
	uint16_t p;

	shp_options_init(&o);
	err[0] = '\0';
	if (shp_config_load(&o, path, err) < 0 ||
	    shp_options_finalize(&o, err) < 0) {
		if (err[0] == '\0' || strchr(err, '\n') != NULL)
			FUZZ_BUG("refused without a one-line reason: '%s'", err);
		shp_options_free(&o);
		return 0;
	}
	if (o.classifier.nb_bands != o.bands)
		FUZZ_BUG("classifier with %u bands of %u",
			 o.classifier.nb_bands, o.bands);
	for (p = 0; p < SHP_MAX_PORTS; p++) {
		const char *t = shp_options_tbf(&o, p);
		const char *n = shp_options_netem(&o, p);
		struct shp_tbf_conf *tc;
		struct shp_netem_conf *nc;

		/* every profile was checked when set: each must build
		 * (once per text: the [global] ones repeat per port) */
		if (t != NULL && t != last_t) {
			last_t = t;
			tc = shp_profile_tbf(t, err);
			if (tc == NULL)
				FUZZ_BUG("tbf '%s' accepted, then: %s", t,
					 err);
			free(tc);
		}
		if (n != NULL && n != last_n) {
			last_n = n;
			nc = shp_profile_netem(&o, n, err);
			if (nc == NULL)
				FUZZ_BUG("netem '%s' accepted, then: %s", n,
					 err);
			shp_netem_conf_free(nc);
		}
	}
	shp_options_free(&o);
	return 0;
}
