/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the shards of one link share (issue 24): one block a port, made
 * zeroed by whoever spreads the port over shards (the program's
 * app/shards.c, the offline tool) and named by every shard chain's env
 * (shp_stage_env's link; NULL for a port of one queue, whose stages keep
 * their own). Each member sits on lines of its own: a shard touches one
 * once a burst.
 */
#ifndef SHP_LINK_H
#define SHP_LINK_H

#include "link_serial.h"
#include "tbf_shared.h"

struct shp_link_shared {
	struct shp_tbf_shared rate;     /* tbf's bucket */
	struct shp_tbf_shared police;   /* the policer's */
	struct shp_link_serial serial;  /* netem rate's clock */
};

#endif
