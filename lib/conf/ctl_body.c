/* SPDX-License-Identifier: BSD-3-Clause */
/* REST bodies to command lines (ctl_body.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "ctl_body.h"

static int __attribute__((format(printf, 3, 4)))
bad(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(err, len, "body: ");
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < len)
		vsnprintf(err + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* A whole word of the allowed characters, 1..max long. */
static bool
word_of(const char *s, size_t max, const char *allowed)
{
	size_t n = strlen(s);

	return n >= 1 && n <= max && strspn(s, allowed) == n;
}

#define KEY_CHARS "abcdefghijklmnopqrstuvwxyz_"
#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" \
		   "0123456789_.-"
#define TIME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789."

/* A port id of the path: 0..1023, digits only. */
static bool
port_word(const char *s)
{
	return word_of(s, 4, "0123456789") && atoi(s) < 1024;
}

/*
 * One line of words, its blanks trimmed: a newline would make two
 * commands of one, a NUL or another control byte is no word of the grammar
 * (a tab is a blank). Returns the trimmed text's length, 0 when refused.
 */
static size_t
one_line(const char *s, const char **start)
{
	size_t n;

	for (n = 0; s[n] != '\0'; n++) {
		unsigned char c = (unsigned char)s[n];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return 0;
	}
	while (*s == ' ' || *s == '\t')
		s++, n--;
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	*start = s;
	return n;
}

static int
add_line(struct ctl_body *b, char *err, size_t elen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
add_line(struct ctl_body *b, char *err, size_t elen, const char *fmt, ...)
{
	char buf[CTL_BODY_LINE_MAX + 1];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n > CTL_BODY_LINE_MAX)
		return bad(err, elen, "the command would be longer than %d "
			   "characters", CTL_BODY_LINE_MAX);
	if ((b->lines[b->n] = strdup(buf)) == NULL)
		return bad(err, elen, "out of memory");
	b->n++;
	return 0;
}

/* {"text": T[, "for": TIME]} after the command's first words (pre). */
static int
text_body(struct ctl_body *b, json_t *j, const char *pre, char *err,
	  size_t elen)
{
	json_t *t = json_is_object(j) ? json_object_get(j, "text") : NULL;
	json_t *f = json_is_object(j) ? json_object_get(j, "for") : NULL;
	const char *s, *tm = NULL;
	size_t n;

	if (!json_is_string(t))
		return bad(err, elen, "the body must be {\"text\": \"...\"}");
	n = one_line(json_string_value(t), &s);
	if (n == 0)
		return bad(err, elen, "\"text\" must be one non-empty line");
	if (f != NULL) {
		/* one word: it cannot add words of its own to the line */
		if (!json_is_string(f) ||
		    !word_of(json_string_value(f), 31, TIME_CHARS))
			return bad(err, elen, "\"for\" must be a time, e.g. "
				   "\"30s\"");
		tm = json_string_value(f);
	}
	return add_line(b, err, elen, "%s %.*s%s%s", pre, (int)n, s,
			tm ? " for " : "", tm ? tm : "");
}

static int
link_body(struct ctl_body *b, json_t *j, const char *port, char *err,
	  size_t elen)
{
	json_t *u = json_is_object(j) ? json_object_get(j, "up") : NULL;
	json_t *c = json_is_object(j) ? json_object_get(j, "carrier") : NULL;

	if (!json_is_boolean(u))
		return bad(err, elen, "the body must be {\"up\": true|false}");
	if (c != NULL && !json_is_boolean(c))
		return bad(err, elen, "\"carrier\" must be true or false");
	return add_line(b, err, elen, "link %s %s%s",
			json_is_true(u) ? "up" : "down", port,
			json_is_true(c) && !json_is_true(u) ? " carrier" : "");
}

static int
batch_body(struct ctl_body *b, json_t *j, char *err, size_t elen)
{
	size_t i;

	if (!json_is_array(j) || json_array_size(j) == 0)
		return bad(err, elen, "the body must be a non-empty list of "
			   "changes");
	if (json_array_size(j) > CTL_BODY_LINES)
		return bad(err, elen, "more than %d changes in one batch",
			   CTL_BODY_LINES);
	for (i = 0; i < json_array_size(j); i++) {
		json_t *ch = json_array_get(j, i), *op, *port, *key, *text;
		const char *o = "set", *s = "";
		char pw[8];
		size_t n = 0;

		if (!json_is_object(ch))
			return bad(err, elen, "change %zu: not an object",
				   i + 1);
		op = json_object_get(ch, "op");
		port = json_object_get(ch, "port");
		key = json_object_get(ch, "key");
		text = json_object_get(ch, "text");
		if (op != NULL)
			o = json_is_string(op) ? json_string_value(op) : "";
		if (strcmp(o, "set") != 0 && strcmp(o, "update") != 0 &&
		    strcmp(o, "clear") != 0)
			return bad(err, elen, "change %zu: op is set, update "
				   "or clear", i + 1);
		if (json_is_string(port) &&
		    strcmp(json_string_value(port), "all") == 0)
			snprintf(pw, sizeof(pw), "all");
		else if (json_is_integer(port) &&
			 json_integer_value(port) >= 0 &&
			 json_integer_value(port) < 1024)
			snprintf(pw, sizeof(pw), "%d",
				 (int)json_integer_value(port));
		else
			return bad(err, elen, "change %zu: \"port\" is a port "
				   "id or \"all\"", i + 1);
		if (!json_is_string(key) ||
		    !word_of(json_string_value(key), 15, KEY_CHARS))
			return bad(err, elen, "change %zu: \"key\" is a stage "
				   "key", i + 1);
		if (strcmp(o, "clear") != 0) {
			if (json_is_string(text))
				n = one_line(json_string_value(text), &s);
			if (n == 0)
				return bad(err, elen, "change %zu: \"text\" "
					   "must be one non-empty line", i + 1);
		}
		if (add_line(b, err, elen, "%s %s %s%s%.*s", o,
			     json_string_value(key), pw, n ? " " : "", (int)n,
			     s) < 0)
			return -1;
	}
	b->atomic = true;
	return 0;
}

/* {"file": PATH[, "snaplen": N][, "limit": N|"SIZE"]}: capture drops
 * start. Each a word: none can add words of its own to the line. */
static int
capture_body(struct ctl_body *b, json_t *j, char *err, size_t elen)
{
	json_t *f = json_is_object(j) ? json_object_get(j, "file") : NULL;
	json_t *s = json_is_object(j) ? json_object_get(j, "snaplen") : NULL;
	json_t *l = json_is_object(j) ? json_object_get(j, "limit") : NULL;
	char snap[32] = "", lim[48] = "";
	const char *path;
	size_t n;

	if (!json_is_string(f))
		return bad(err, elen, "the body must be {\"file\": \"PATH\"[, "
			   "\"snaplen\": BYTES][, \"limit\": BYTES]}");
	n = one_line(json_string_value(f), &path);
	if (n == 0 || n != strlen(path) || strcspn(path, " \t") != n)
		return bad(err, elen, "\"file\" must be a path without "
			   "blanks");
	if (s != NULL) {
		if (!json_is_integer(s))
			return bad(err, elen, "\"snaplen\" must be a number "
				   "of bytes");
		snprintf(snap, sizeof(snap), " snaplen %" JSON_INTEGER_FORMAT,
			 json_integer_value(s));
	}
	if (l != NULL) {
		if (json_is_integer(l))
			snprintf(lim, sizeof(lim), " limit %"
				 JSON_INTEGER_FORMAT, json_integer_value(l));
		else if (json_is_string(l) &&
			 word_of(json_string_value(l), 31, TIME_CHARS))
			snprintf(lim, sizeof(lim), " limit %s",
				 json_string_value(l));
		else
			return bad(err, elen, "\"limit\" must be bytes, e.g. "
				   "1048576 or \"1mb\"");
	}
	return add_line(b, err, elen, "capture drops start %.*s%s%s", (int)n,
			path, snap, lim);
}

/* The path's parts after /v1/: up to 3, each at most 63 characters. */
static unsigned int
path_parts(const char *path, char part[3][64])
{
	unsigned int k = 0;

	if (strncmp(path, "/v1/", 4) != 0)
		return 0;
	path += 4;
	while (*path != '\0') {
		size_t n = strcspn(path, "/");

		if (k == 3 || n == 0 || n >= 64)
			return 0;
		memcpy(part[k], path, n);
		part[k++][n] = '\0';
		path += n;
		if (*path == '/' && path[1] != '\0')
			path++;
		else if (*path == '/')
			break;   /* a trailing / */
	}
	return k;
}

static int
dispatch(struct ctl_body *b, json_t *j, const char *method, const char *path,
	 char *err, size_t elen)
{
	char part[3][64], pre[160];
	unsigned int k = path_parts(path, part);
	bool put = strcmp(method, "PUT") == 0;
	bool patch = strcmp(method, "PATCH") == 0;
	bool post = strcmp(method, "POST") == 0;

	if ((put || patch) && k == 3 && strcmp(part[0], "ports") == 0 &&
	    port_word(part[1]) && word_of(part[2], 15, KEY_CHARS)) {
		snprintf(pre, sizeof(pre), "%s %s %s", put ? "set" : "update",
			 part[2], part[1]);
		return text_body(b, j, pre, err, elen);
	}
	if ((put || patch) && k == 2 && strcmp(part[0], "classes") == 0 &&
	    word_of(part[1], 31, NAME_CHARS)) {
		snprintf(pre, sizeof(pre), "%s class %s",
			 put ? "set" : "update", part[1]);
		return text_body(b, j, pre, err, elen);
	}
	if (post && k == 2 && strcmp(part[0], "links") == 0 &&
	    port_word(part[1]))
		return link_body(b, j, part[1], err, elen);
	if (post && k == 1 && strcmp(part[0], "batch") == 0)
		return batch_body(b, j, err, elen);
	if (post && k == 2 && strcmp(part[0], "capture") == 0 &&
	    strcmp(part[1], "drops") == 0)
		return capture_body(b, j, err, elen);
	return bad(err, elen, "no body is taken by %.10s %.200s", method,
		   path);
}

int
ctl_body_parse(const char *method, const char *path, const char *body,
	       size_t len, struct ctl_body *out, char *err, size_t errlen)
{
	json_error_t je;
	json_t *j;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > CTL_BODY_MAX)
		return bad(err, errlen, "over %d bytes", CTL_BODY_MAX);
	/* any value at the top (a string is refused below, not here); a
	 * \u0000 in a string is refused by jansson (no JSON_ALLOW_NUL) */
	j = json_loadb(body, len, JSON_DECODE_ANY, &je);
	if (j == NULL) {
		char *c;

		bad(err, errlen, "not JSON: %s (line %d, column %d)",
		    je.text, je.line, je.column);
		/* jansson quotes the bytes near the error: the message is
		 * one line of text whatever they were */
		for (c = err; *c != '\0'; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
				*c = '?';
		return -1;
	}
	out->lines = calloc(CTL_BODY_LINES, sizeof(*out->lines));
	if (out->lines == NULL) {
		json_decref(j);
		return bad(err, errlen, "out of memory");
	}
	rc = dispatch(out, j, method, path, err, errlen);
	json_decref(j);
	if (rc < 0)
		ctl_body_free(out);
	return rc;
}

void
ctl_body_free(struct ctl_body *b)
{
	unsigned int i;

	for (i = 0; b->lines != NULL && i < b->n; i++)
		free(b->lines[i]);
	free(b->lines);
	memset(b, 0, sizeof(*b));
}
