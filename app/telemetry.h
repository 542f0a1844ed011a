/* SPDX-License-Identifier: BSD-3-Clause */
/* librte_telemetry endpoints /shaper/... (see telemetry.c). */
#ifndef SHAPER_TELEMETRY_H
#define SHAPER_TELEMETRY_H

#include "shaper.h"

int shaper_telemetry_init(struct shaper *s);
/* Before the counters are freed: callbacks answer nothing from now on. */
void shaper_telemetry_fini(void);

#endif
