/* SPDX-License-Identifier: BSD-3-Clause */
/* Changes that expire, `set|update KEY P ... for TIME` (ctl_for.c). */
#ifndef SHAPER_CTL_FOR_H
#define SHAPER_CTL_FOR_H

#include <stdbool.h>
#include <stdint.h>

#include "control.h"

/* A change that holds was made to port p's stage at slot: the `for`s
 * running there are dropped (their ends change nothing). */
void ctl_for_forget(uint16_t p, unsigned int slot);

/* The `for`s that came due ended, every port and stage of them in one
 * publication; true when it printed what changed. */
bool ctl_for_run(struct shaper *s);

/* (control.c) ctl_set_stages for the `for`s' own changes: they keep the
 * `for`s running on their stages. */
int ctl_for_set_stages(struct shaper *s, const struct ctl_change *ch,
		       unsigned int n, char *err);

#endif
