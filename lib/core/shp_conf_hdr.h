/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SHP_CONF_HDR_H
#define SHP_CONF_HDR_H

#include <stddef.h>
#include <stdint.h>

/*
 * What every kind's conf starts with (its first member, `hdr`): what the
 * core reads of a conf without knowing its kind.
 */
struct shp_conf_hdr {
	/* shp_conf_new_id() at parse; the shards' copies of one change
	 * share their first copy's (shp_conf_twin) */
	uint64_t id;
};
/* in a kind's file, beside its conf: the header stands first */
#define SHP_CONF_HDR_FIRST(type) \
	_Static_assert(offsetof(type, hdr) == 0, #type ": hdr first")

#endif
