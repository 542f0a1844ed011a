/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tc's units (iproute2 lib/utils.c semantics), with one deliberate change:
 * a time without a unit is refused instead of being read as nanoseconds.
 *
 * All parsers return 0, or -1 with a one-line message in err naming the bad
 * word and what would be accepted.
 */
#ifndef SHP_UNITS_H
#define SHP_UNITS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define SHP_ERR_LEN 256

/* "10ms", "1.5s", "250us", "100ns" (s/sec/secs, ms/msec/msecs, us/usec/usecs,
 * ns/nsec/nsecs). Result in ns. Negative refused. */
int shp_parse_time(const char *s, uint64_t *ns, char *err);
/* The same, a bare number taken in units of bare_ns nanoseconds, as tc
 * reads a keyword's bare number (get_time: microseconds, get_time64:
 * nanoseconds); bare_ns 0: a unit is needed. */
int shp_parse_time_bare(const char *s, uint64_t bare_ns, uint64_t *ns,
			char *err);

/*
 * A change that expires: `... for TIME` at the end of a stage's words
 * (set/update at the prompt, a schedule's set). The bounds are the
 * schedule's: at least 1 ms (the control tick), at most 24 hours.
 */
#define SHP_FOR_MIN_NS UINT64_C(1000000)
#define SHP_FOR_MAX_NS (UINT64_C(86400) * 1000000000)
/* The `for`s that may run at once on one stage of a port (each one
 * ending makes the others again over the profile from before the first:
 * docs/cli.md). */
#define SHP_FOR_STACK 8
#define SHP_FOR_STACK_TEXT "8 changes that expire run on the stage " \
	"already: at most 8 at once"
/* Cut a trailing `for TIME` off words (in place) and give TIME in *ns.
 * 1: it was there; 0: not (*ns 0, words untouched); -1 with err: `for`
 * without a valid time, out of bounds, or with nothing before it. */
int shp_split_for(char *words, uint64_t *ns, char *err);

/* "10kb" = 10240 bytes, "1mb", "10kbit" = 1280 bytes, bare = bytes
 * (b, k/kb, m/mb, g/gb, kbit, mbit, gbit). */
int shp_parse_size(const char *s, uint64_t *bytes, char *err);

/* "10mbit" -> bytes per second, as iproute2 get_rate (bits / 8,
 * truncated): a bare number and bit/kbit/mbit/gbit/tbit are bits per
 * second (SI), kibit..tibit binary; bps/kbps/mbps/gbps/tbps and
 * kibps..tibps are bytes. Case-insensitive. Below 1 byte/s or from 2^64
 * bytes/s refused. */
int shp_parse_rate(const char *s, uint64_t *bytes_per_sec, char *err);

/* "5%", "5", "0.5%" -> 0.05. Outside 0..100 refused. */
int shp_parse_percent(const char *s, double *frac, char *err);

/* Plain unsigned integer (decimal), whole string. */
int shp_parse_u64(const char *s, uint64_t *v, char *err);

/* Format helpers for dumps: "10ms", "10Mbit", "10Kb". Exact: the text
 * parses back to the same value with the parsers above. */
void shp_fmt_time(char *buf, size_t len, uint64_t ns);
/* a time as tc prints it (not exact): shp_units.c */
void shp_fmt_tc_time(char *buf, size_t len, uint64_t ns, bool us_res);
void shp_fmt_rate(char *buf, size_t len, uint64_t bytes_per_sec);
void shp_fmt_size(char *buf, size_t len, uint64_t bytes);

/* At most max bytes of s for an error line: a byte outside printable
 * ASCII, a quote or a backslash as \xNN, "..." after when s went on; buf
 * is NUL-terminated and holds 4 * max + 4 bytes at most. What a file
 * said wrongly is shown, never sent raw to the terminal. */
void shp_fmt_excerpt(char *buf, size_t len, const char *s, size_t max);

/* Split a string into whitespace-separated words in place.
 * Returns the number of words (at most max), -1 if more than max. */
int shp_split_words(char *s, char **argv, int max);

#endif
