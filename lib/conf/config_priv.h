/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the options code (config.c) lends the INI reader (config_ini.c):
 * not part of config.h, so that no caller sets an option around
 * shp_option_set's checks.
 */
#ifndef SHP_CONFIG_PRIV_H
#define SHP_CONFIG_PRIV_H

#include "config.h"

/* *dst becomes a copy of v (the old one freed); -1 if out of memory. */
int shp_config_set_str(char **dst, const char *v);

/* --KEY-port / [port N] KEY = v into layer l, the profile checked first;
 * err says why not. */
int shp_config_set_port_profile(struct shp_layer *l, const char *key,
				int port, const char *v, char *err);

#endif /* SHP_CONFIG_PRIV_H */
