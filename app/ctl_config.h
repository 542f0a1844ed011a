/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The running configuration as text (ctl_config.c), for what shows or
 * records it: the CLI, telemetry, the stats file. Its own header so that
 * a reader of the configuration (stats.c, the schedule) depends on the
 * snapshot alone and not on the change code (control.c), which calls
 * those readers in turn.
 */
#ifndef SHAPER_CTL_CONFIG_H
#define SHAPER_CTL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper.h"

#define CTL_TEXT_LEN 1024

/* A copy of the configuration as text, safe to read from any thread. */
struct ctl_config {
	unsigned int bands;
	char classify[8];
	char priomap[64];
	bool paused;
	uint64_t seed;
	unsigned int nb_ports;
	uint16_t port_ids[SHP_MAX_PORTS];
	int pair_of[SHP_MAX_PORTS];
	/* by port and slot: the key that sets it (queue, tbf, netem...)
	 * and its profile as the stage prints it ("off" when none) */
	char key[SHP_MAX_PORTS][SHP_SLOT_MAX][16];
	char stage[SHP_MAX_PORTS][SHP_SLOT_MAX][CTL_TEXT_LEN];
};

/* The text of key's slot of port index i in c, or NULL when another
 * key holds that slot ("tbf" on a port whose rate is a trace). */
const char *ctl_config_stage(const struct ctl_config *c, unsigned int i,
			     const char *key);

/* A copy of the last snapshot (any thread: takes the snapshot's lock). */
void ctl_config_snapshot(struct ctl_config *c);

/* Main lcore, after every change (control.c) or one made elsewhere (a
 * schedule): the text copy again, from the stages' own printers. */
void ctl_config_refresh(struct shaper *s);

#endif
