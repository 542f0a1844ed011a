/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The INI profile loader (lib/conf/config_ini.c over librte_cfgfile) on arbitrary
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
		struct shp_chain_spec spec;

		/* every profile was checked when set: each port's chain
		 * must build from them */
		if (shp_options_chain_spec(&o, p, &spec, err) < 0 &&
		    strstr(err, "take the same place") == NULL)
			FUZZ_BUG("port %u: accepted, then: %s", p, err);
		shp_chain_spec_free(&spec);
	}
	shp_options_free(&o);
	return 0;
}
