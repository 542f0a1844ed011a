/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A control socket's client, as the socket's three files share it (all on
 * the main lcore, inside ctl_socket_poll): ctl_socket.c accepts it and
 * reads its requests, ctl_reply.c writes its replies, ctl_watch.c turns
 * it into a watcher of the event stream. Private to app/ctl_*.c.
 */
#ifndef SHAPER_CTL_CLIENT_H
#define SHAPER_CTL_CLIENT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctl_socket.h"
#include "events.h"
#include "shp_file.h"

/* Replies a client leaves unread beyond this: it is closed. */
#define CTL_OUT_MAX (1u << 20)


struct client {
	int fd;
	struct ctl_line_reader rd;
	char *out;
	size_t out_len, out_off, out_cap;
	uint64_t last_ms;   /* the last byte received, or the connect */
	uint64_t part_ms;   /* the first byte of the request not yet whole
			     * (a line, a body, an atomic block), or 0 */
	bool replied;       /* a request was answered in this read */
	bool closing;       /* close once the replies are sent */
	/* `atomic N`: the N lines that follow, applied at once or not */
	char **alines;
	unsigned int an, aleft;
	bool abad, ajson;
	/* `body METHOD PATH LENGTH`: the LENGTH bytes that follow */
	char *body;
	size_t body_len, body_left;
	char bmethod[8], bpath[CTL_LINE_MAX];
	bool bjson;
	struct shp_file_peer peer;   /* whom its commands open files as */
	/* whom its changes come from (`from rest`): the events' source */
	enum shp_event_src src;
};

/* ctl_reply.c. A reply in the text form (a status line, the text with a
 * '.' doubled at a line's start, a '.' line) or the JSON form (one line);
 * what does not fit the client's buffer (CTL_OUT_MAX) closes it. */
void reply(struct client *c, bool json, bool ok, const char *cmd,
	   const char *text, size_t n);
void reply_text(struct client *c, bool ok, const char *text, size_t n);
/* a command's output, then buf freed: ok if rc is 0 */
void run_output(struct client *c, bool json, const char *cmd, int rc,
		char *buf, size_t blen);

/* s starts with the word w (then a blank or its end) */
static inline bool
word_is(const char *s, const char *w)
{
	size_t n = strlen(w);

	return strncmp(s, w, n) == 0 &&
	       (s[n] == ' ' || s[n] == '\t' || s[n] == '\0');
}

/* ctl_watch.c: the event stream's watchers (`watch [since ID]`). */
#define CTL_WATCHERS 16
void ctl_watch_init(void);
/* what their buffers hold is sent if it can be, then they are closed */
void ctl_watch_fini(void);
/* the reply, then the client's connection is a watcher's and its slot
 * free (c->closing) */
void ctl_watch_start(struct client *c, const char *cmd, bool json);
/* each open watcher's pollfd from pfd[0] on, its index in wmap (-1 for
 * none); returns how many */
unsigned int ctl_watch_pollfds(struct pollfd *pfd, int *wmap);
/* after poll(): each watcher's revents (pfd as ctl_watch_pollfds filled
 * it, at the same base) */
void ctl_watch_polled(const struct pollfd *pfd, const int *wmap);

#endif /* SHAPER_CTL_CLIENT_H */
