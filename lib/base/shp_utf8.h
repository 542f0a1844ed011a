/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UTF-8 as RFC 3629 defines it: the shortest form of a code point up to
 * U+10FFFF that is not a surrogate. Text that reaches a JSON reply must be
 * this (a decoder refuses or alters anything else), so the control
 * socket refuses any other line before it runs or is echoed. No I/O:
 * test/unit/test_utf8.c.
 */
#ifndef SHP_UTF8_H
#define SHP_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length (1..4) of the well-formed character at s (n bytes left), or
 * 0 when there is none: a stray continuation byte, a cut sequence, an
 * overlong form, a surrogate, a code point above U+10FFFF. */
unsigned int shp_utf8_char(const unsigned char *s, size_t n);

/* Whether the n bytes of s are well-formed UTF-8 throughout. */
bool shp_utf8_valid(const char *s, size_t n);

#endif
