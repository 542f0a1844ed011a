/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kinds this build has, for the registry (core/shp_kinds.c, which
 * names none): a new kind is one line here and its own file.
 */
#include <stddef.h>

#include "shp_kind.h"

extern const struct shp_kind shp_kind_pfifo_fast;
extern const struct shp_kind shp_kind_fq_codel;
extern const struct shp_kind shp_kind_pie;
extern const struct shp_kind shp_kind_red;
extern const struct shp_kind shp_kind_dualpi2;
extern const struct shp_kind shp_kind_prio;
extern const struct shp_kind shp_kind_tbf;
extern const struct shp_kind shp_kind_trace;
extern const struct shp_kind shp_kind_netem;
extern const struct shp_kind shp_kind_police;

const struct shp_kind *const shp_kinds[] = {
	&shp_kind_pfifo_fast,   /* the first of a slot is its default */
	&shp_kind_fq_codel,
	&shp_kind_prio,      /* the bands under Linux's prio's name */
	&shp_kind_pie,        /* RFC 8033 (issue 59) */
	&shp_kind_red,        /* Floyd and Jacobson, as Linux (issue 59) */
	&shp_kind_dualpi2,    /* RFC 9332's coupled L4S AQM (issue 59) */
	&shp_kind_tbf,
	&shp_kind_trace,     /* trace-driven rate (issue 14) */
	&shp_kind_netem,
	&shp_kind_police,    /* the ingress slot (issue 28) */
	NULL
};
