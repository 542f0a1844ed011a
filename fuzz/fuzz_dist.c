/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The netem distribution table reader (lib/sched/netem/netem_dist.c) on arbitrary
 * files: a table is within its bounds, or refused in one line.
 */
#include "fuzz_common.h"
#include "shp_netem.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	char err[SHP_ERR_LEN];
	struct shp_netem_dist *d;

	err[0] = '\0';
	d = shp_netem_dist_load(path, err);
	if (d == NULL) {
		if (err[0] == '\0' || strchr(err, '\n') != NULL)
			FUZZ_BUG("refused without a one-line reason: '%s'", err);
		return 0;
	}
	if (d->size == 0 || d->size > SHP_NETEM_DIST_MAX || d->builtin ||
	    size > SHP_NETEM_DIST_FILE_MAX)
		FUZZ_BUG("table of %u values from %zu bytes", d->size, size);
	free(d);
	return 0;
}
