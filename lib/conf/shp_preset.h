/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link presets (docs/presets.md): config/presets/NAME.ini, each an INI
 * profile whose [global] section gives a link's stage keys (queue, tbf,
 * trace, netem ...) and a one-line `summary`. `--preset NAME` and
 * `--preset-port P NAME` take one at start (live and offline), `set
 * preset P|all NAME` at run time, `show presets` lists them.
 *
 * A preset is the whole link: a key it does not give is off (the queue:
 * its kind's defaults), so two presets applied one after the other leave
 * nothing of the first. A file a preset reads (trace = FILE) is found
 * relative to the preset's directory.
 */
#ifndef SHP_PRESET_H
#define SHP_PRESET_H

#include <stddef.h>

#include "config.h"

#define SHP_PRESET_NAME_MAX 64       /* with its NUL */
#define SHP_PRESET_SUMMARY_MAX 160
#define SHP_PRESETS_MAX 256          /* listed at most */
#define SHP_PRESET_DIR_ENV "SHP_PRESET_DIR"

struct shp_preset {
	char name[SHP_PRESET_NAME_MAX];
	char summary[SHP_PRESET_SUMMARY_MAX];
	char *text[SHP_MAX_KEYS];    /* by shp_key_index; NULL: not given */
};

/* --preset-dir DIR (NULL: back to the default). */
int shp_preset_dir_set(const char *dir);
/* Where presets are looked for: --preset-dir, else $SHP_PRESET_DIR, else
 * config/presets of the source tree the program was built from, else the
 * installed copy. */
const char *shp_preset_dir(void);

/* 0 if name is a preset's name (1-63 of a-z 0-9 _ -), else -1 with err. */
int shp_preset_name_check(const char *name, char *err);

/* Read preset name: 0, or -1 with err (one line, how to see the names). */
int shp_preset_load(const char *name, struct shp_preset *p, char *err);
void shp_preset_free(struct shp_preset *p);

/* The text key k takes under preset p (a key it does not give: "off";
 * a queue: NULL, the running kind's defaults). */
const char *shp_preset_text(const struct shp_preset *p, unsigned int k);

/* The presets' names, sorted, into names[0..max): how many, or -1 with
 * err (no such directory). */
int shp_preset_list(char (*names)[SHP_PRESET_NAME_MAX], unsigned int max,
		    char *err);

/* --preset NAME (port < 0) or --preset-port P NAME into the options' file
 * layer: over what --config gave, under the command line's options. */
int shp_preset_options(struct shp_options *o, const char *name, int port,
		       char *err);

#endif
