/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket's replies (ctl_client.h, docs/control.md): into the
 * client's buffer, which ctl_socket.c sends as the socket takes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <rte_common.h>

#include "ctl_client.h"

static int
out_room(struct client *c, size_t more)
{
	char *p;
	size_t cap;

	if (c->out_len + more <= c->out_cap)
		return 0;
	if (c->out_len - c->out_off + more > CTL_OUT_MAX)
		return -1;
	if (c->out_off > 0) {   /* what is sent already goes first */
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
		if (c->out_len + more <= c->out_cap)
			return 0;
	}
	cap = c->out_cap ? c->out_cap : 4096;
	while (cap < c->out_len + more)
		cap *= 2;
	p = realloc(c->out, cap);
	if (p == NULL)
		return -1;
	c->out = p;
	c->out_cap = cap;
	return 0;
}

static void
out_put(struct client *c, const char *s, size_t n)
{
	if (out_room(c, n) < 0) {
		/* it does not read its replies: it gets no more */
		c->out_len = c->out_off = 0;
		c->closing = true;
		return;
	}
	memcpy(c->out + c->out_len, s, n);
	c->out_len += n;
}

static void
out_str(struct client *c, const char *s)
{
	out_put(c, s, strlen(s));
}

/* Text form: the status line, the text with a '.' doubled at the start
 * of a line (so no line of it is the end marker), then ".". */
void
reply_text(struct client *c, bool ok, const char *text, size_t n)
{
	size_t i = 0;

	out_str(c, ok ? "ok\n" : "error\n");
	while (i < n) {
		size_t l = i;

		while (l < n && text[l] != '\n')
			l++;
		if (text[i] == '.')
			out_put(c, ".", 1);
		out_put(c, text + i, l - i);
		out_put(c, "\n", 1);
		i = l + 1;
	}
	out_str(c, ".\n");
}

static void
json_string(struct client *c, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	out_put(c, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		char e[6] = { '\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15] };

		if (ch == '"' || ch == '\\') {
			out_put(c, "\\", 1);
			out_put(c, s + i, 1);
		} else if (ch == '\n') {
			out_put(c, "\\n", 2);
		} else if (ch < 0x20 || ch == 0x7f) {
			out_put(c, e, sizeof(e));
		} else {
			out_put(c, s + i, 1);
		}
	}
	out_put(c, "\"", 1);
}

/* JSON form: one line, {"status": "ok"|"error", "command": ...,
 * "output": ...}. Bytes that are not UTF-8 cannot come from the grammar:
 * the line reader refuses a line holding them before it runs. */
static void
reply_json(struct client *c, bool ok, const char *cmd, const char *text,
	   size_t n)
{
	out_str(c, ok ? "{\"status\": \"ok\", \"command\": " :
		"{\"status\": \"error\", \"command\": ");
	json_string(c, cmd, strlen(cmd));
	out_str(c, ", \"output\": ");
	json_string(c, text, n);
	out_str(c, "}\n");
}

void
reply(struct client *c, bool json, bool ok, const char *cmd,
      const char *text, size_t n)
{
	c->replied = true;
	if (json)
		reply_json(c, ok, cmd, text, n);
	else
		reply_text(c, ok, text, n);
}

void
run_output(struct client *c, bool json, const char *cmd, int rc, char *buf,
	   size_t blen)
{
	reply(c, json, rc == 0, cmd, buf != NULL ? buf : "", blen);
	free(buf);
}
