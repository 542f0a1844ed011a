/* SPDX-License-Identifier: BSD-3-Clause */
/* `update KEY all|P WORDS`: change only the parameters named (ctl_update.c). */
#ifndef SHAPER_CTL_UPDATE_H
#define SHAPER_CTL_UPDATE_H

#include <stddef.h>

#include "control.h"
#include "shaper.h"

/* words merged over cur (tc words of kind k, without the kind's name)
 * into out. 0, or -1 with err. */
int ctl_update_merge(const struct shp_kind *k, const char *cur,
		     const char *words, char *out, size_t len, char *err);

/* words merged over cur, a profile of port p's stage at slot (kind k;
 * a queue's starts with its kind's name), into out: the text `update`
 * sets. 0, or -1 with err. */
int ctl_update_over(const struct shp_kind *k, enum shp_slot slot, uint16_t p,
		    const char *cur, const char *words, char *out, size_t len,
		    char *err);

/* Every selected port's current profile with words merged over it, then
 * checked and published as `set` (nothing changes on an error). port < 0:
 * every port. 0, or -1 with err. */
int ctl_update_stage(struct shaper *s, const char *key, int port,
		     const char *words, char *err);

/* The texts ctl_update_stage would set: text[i] for port index i, and
 * args_of[i] pointing to it (NULL for the ports not selected). */
int ctl_update_texts(struct shaper *s, const char *key, int port,
		     const char *words, char (*text)[CTL_TEXT_LEN],
		     const char **args_of, char *err);

/* `update class NAME WORDS`: a stage text given (queue, tbf, netem
 * 'ARGS') is merged over the class's own; match, ports, quantum and prio
 * as `set class` (which keeps what is not named but replaces a stage's
 * whole text). 0, or -1 with err. */
int ctl_update_class(struct shaper *s, const char *name, const char *words,
		     char *err);

#endif
