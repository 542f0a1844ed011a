/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The JSON bodies of the REST API's changes (scripts/shaper-api,
 * docs/control.md), turned into the CLI command lines they stand for. The
 * API adds no grammar of its own: what a body says is checked here only
 * for its shape (the right JSON types, one line of text, a port id or
 * "all", a stage key); the words themselves go to the CLI's parser.
 *
 *   PUT   /v1/ports/P/KEY   {"text": T}           set KEY P T
 *   PATCH /v1/ports/P/KEY   {"text": T}           update KEY P T
 *   PUT   /v1/classes/NAME  {"text": T}           set class NAME T
 *   PATCH /v1/classes/NAME  {"text": T}           update class NAME T
 *   POST  /v1/links/P       {"up": B}             link up|down P
 *   POST  /v1/batch         [{"op": "set"|"update"|"clear", "port": N|"all",
 *                             "key": KEY, "text": T}, ...]
 *                           the lines, to apply at once (atomic)
 *
 * A PUT or PATCH body may carry "for": "TIME" (a change that expires):
 * the line gets " for TIME". Other fields are ignored. No I/O, no EAL:
 * fuzz/fuzz_ctl_body.c, test/unit/test_ctl_body.c.
 */
#ifndef SHP_CTL_BODY_H
#define SHP_CTL_BODY_H

#include <stdbool.h>
#include <stddef.h>

/* The largest body (shaper-api answers 413 beyond). */
#define CTL_BODY_MAX 65536
/* The changes of one batch (the control socket's `atomic N` bound). */
#define CTL_BODY_LINES 1024
/* The longest command line made (the CLI's). */
#define CTL_BODY_LINE_MAX 2048

struct ctl_body {
	char **lines;     /* n command lines, each malloc'ed, no newline */
	unsigned int n;
	bool atomic;      /* a batch: checked, then applied in one publish */
};

/*
 * The command lines of the body (len bytes, not NUL-terminated) of
 * METHOD PATH. 0 with out filled (ctl_body_free() it), or -1 with err: one
 * line starting "body: " (the 400 message; nothing is to run).
 */
int ctl_body_parse(const char *method, const char *path, const char *body,
		   size_t len, struct ctl_body *out, char *err,
		   size_t errlen);

void ctl_body_free(struct ctl_body *b);

#endif
