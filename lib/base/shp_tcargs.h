/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tc word parser shared by the netem and tbf grammars (iproute2's
 * matches()/NEXT_ARG()/NEXT_IS_NUMBER() conventions):
 *
 *  - a keyword may be abbreviated to any prefix, the grammar's order of
 *    tests deciding what an ambiguous prefix means (tc: "l" is "limit");
 *  - a keyword's value is the next word; an optional numeric value is
 *    recognised by its first character;
 *  - every error is one line "QDISC: KEYWORD: what is wrong", naming the
 *    word at fault.
 *
 * Values are read with shp_units.h (our one deviation from tc there: a time
 * needs a unit).
 */
#ifndef SHP_TCARGS_H
#define SHP_TCARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "shp_units.h"

#define SHP_TC_MAX_WORDS 128

struct shp_tcargs {
	int argc;
	char **argv;
	int i;                 /* the current word */
	const char *qdisc;     /* "netem", "tbf": the prefix of every error */
	char *err;             /* SHP_ERR_LEN bytes */
};

/* tc's matches(): word is a non-empty prefix of keyword. */
bool shp_tc_matches(const char *word, const char *keyword);

static inline const char *
shp_tc_cur(const struct shp_tcargs *a)
{
	return a->argv[a->i];
}

static inline const char *
shp_tc_peek(const struct shp_tcargs *a)
{
	return a->i + 1 < a->argc ? a->argv[a->i + 1] : NULL;
}

/* The next word is an optional number: a digit (tc's NEXT_IS_NUMBER); with
 * signed, also '-' then a digit (NEXT_IS_SIGNED_NUMBER). '.' then a digit
 * and '-' then a digit always count, so that ".5%" and "-5%" get a precise
 * error instead of "unknown keyword". */
bool shp_tc_next_is_number(const struct shp_tcargs *a);
bool shp_tc_next_is_unsigned(const struct shp_tcargs *a);

/* NEXT_ARG(): move to the current keyword's value, `what`; -1 if none. */
int shp_tc_next(struct shp_tcargs *a, const char *what);

/* Write "QDISC: " + the message to err; returns -1. */
int shp_tc_fail(struct shp_tcargs *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The current word as a value of keyword kw ("QDISC: kw: ..." on error). */
int shp_tc_time(struct shp_tcargs *a, const char *kw, uint64_t *ns);
/* a time whose bare number tc reads in units of bare_ns (shp_units.h) */
#define SHP_TC_BARE_US 1000      /* tc's get_time: fq_codel, tbf */
#define SHP_TC_BARE_NS 1         /* get_time64: netem's delay, slot */
int shp_tc_time_bare(struct shp_tcargs *a, const char *kw, uint64_t bare_ns,
		     uint64_t *ns);
int shp_tc_size(struct shp_tcargs *a, const char *kw, uint64_t *bytes);
int shp_tc_size32(struct shp_tcargs *a, const char *kw, uint32_t *bytes);
int shp_tc_rate(struct shp_tcargs *a, const char *kw, uint64_t *bps);
int shp_tc_percent(struct shp_tcargs *a, const char *kw, double *frac);
int shp_tc_u64(struct shp_tcargs *a, const char *kw, uint64_t *v);
int shp_tc_u32(struct shp_tcargs *a, const char *kw, uint32_t *v);
/* An integer within min..max (decimal, or 0x hex as tc's get_s32). */
int shp_tc_int(struct shp_tcargs *a, const char *kw, int64_t min,
	       int64_t max, int64_t *v);

/* Split args into buf (a copy) and argv; -1 with the error set when they
 * are too long or too many. */
int shp_tc_split(struct shp_tcargs *a, const char *args, char *buf,
		 size_t buflen, char **argv, int max);

#endif
