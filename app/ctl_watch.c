/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket's watchers (ctl_client.h): a connection that asked
 * `watch` gets the applied changes' events as lines until it hangs up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <rte_common.h>

#include "ctl_client.h"
/* ---- watchers: the event stream (events.h) --------------------------
 *
 * `watch [since ID]` makes the connection a watcher: after its reply,
 * one line an event (the JSON form after `json watch`), as they are
 * applied, until it hangs up or the shaper ends. It leaves the
 * connection slots (CTL_MAX_CLIENTS) for commands, and the idle close:
 * it sends nothing. A watcher is a cursor into the kept events: `since`
 * replays from there as its buffer empties. One that does not read is
 * dropped when a new event finds its buffer full (or the event it is due
 * is no longer kept), and the events it missed are counted
 * (`events_lost`): the main lcore never waits for it.
 */
#define WATCH_BUF (64u << 10)
#define WATCH_SNDBUF (32 << 10)

struct watcher {
	int fd;
	bool json;
	uint64_t next;        /* the id it is due next */
	uint64_t replay_end;  /* the last id it asked to be replayed */
	size_t off, len;
	char buf[WATCH_BUF];
};

static struct watcher watchers[CTL_WATCHERS];

static void
watcher_close(struct watcher *w)
{
	close(w->fd);
	w->fd = -1;
	w->off = w->len = 0;
	shp_events_watchers--;
}

static void
watcher_drop(struct watcher *w)
{
	uint64_t last = shp_events_last();

	shp_events_lost += last >= w->next ? last - w->next + 1 : 0;
	watcher_close(w);
}

static void
watcher_flush(struct watcher *w)
{
	while (w->off < w->len) {
		ssize_t n = send(w->fd, w->buf + w->off, w->len - w->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				watcher_close(w);
			return;
		}
		w->off += (size_t)n;
	}
	w->off = w->len = 0;
}

/* Its due events into its buffer, as many as fit. */
static void
watcher_pump(struct watcher *w)
{
	static char line[16384];

	while (w->fd >= 0 && w->next <= shp_events_last()) {
		const struct shp_event *e = shp_event_get(w->next);
		size_t n;

		if (e == NULL) {   /* it fell more than the kept behind */
			watcher_drop(w);
			return;
		}
		n = shp_event_format(e, w->json, line, sizeof(line));
		if (w->off > 0 && w->len + n > WATCH_BUF) {
			memmove(w->buf, w->buf + w->off, w->len - w->off);
			w->len -= w->off;
			w->off = 0;
		}
		if (w->len + n > WATCH_BUF) {
			/* a replay waits for room; a new event does not */
			if (w->next > w->replay_end)
				watcher_drop(w);
			return;
		}
		memcpy(w->buf + w->len, line, n);
		w->len += n;
		w->next++;
	}
}

/* What it sends is read and dropped (it has nothing to say); its
 * hang-up ends it. */
static void
watcher_poll(struct watcher *w, short re)
{
	if (re & (POLLIN | POLLHUP | POLLERR)) {
		char junk[512];
		ssize_t n = recv(w->fd, junk, sizeof(junk), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN &&
			       errno != EWOULDBLOCK && errno != EINTR)) {
			watcher_close(w);
			return;
		}
	}
	if (re & POLLOUT) {
		watcher_flush(w);
		if (w->fd >= 0)
			watcher_pump(w);
		if (w->fd >= 0)
			watcher_flush(w);
	}
}

static void
watch_sink(const struct shp_event *e)
{
	unsigned int i;

	(void)e;
	for (i = 0; i < CTL_WATCHERS; i++)
		if (watchers[i].fd >= 0) {
			watcher_pump(&watchers[i]);
			if (watchers[i].fd >= 0)
				watcher_flush(&watchers[i]);
		}
}

/* `watch [since ID]`: the reply, then the client is a watcher. */
void
ctl_watch_start(struct client *c, const char *cmd, bool json)
{
	uint64_t last = shp_events_last(), from = last + 1, oldest;
	const char *a = cmd + 5 + strspn(cmd + 5, " \t");
	struct watcher *w = NULL;
	int sndbuf = WATCH_SNDBUF;
	char msg[200];
	unsigned int i;
	size_t m;

	if (*a != '\0') {
		unsigned long long id;
		char *end;

		if (!word_is(a, "since") ||
		    (a += 5 + strspn(a + 5, " \t"), *a < '0' || *a > '9') ||
		    (errno = 0, id = strtoull(a, &end, 10), errno != 0) ||
		    end[strspn(end, " \t")] != '\0') {
			m = (size_t)snprintf(msg, sizeof(msg), "error: usage: "
					     "watch [since ID]\n");
			reply(c, json, false, cmd, msg, m);
			return;
		}
		from = id < last ? id + 1 : last + 1;
	}
	for (i = 0; i < CTL_WATCHERS; i++)
		if (watchers[i].fd < 0) {
			w = &watchers[i];
			break;
		}
	if (w == NULL) {
		m = (size_t)snprintf(msg, sizeof(msg), "error: too many "
				     "watchers (%d): try again later\n",
				     CTL_WATCHERS);
		reply(c, json, false, cmd, msg, m);
		return;
	}
	oldest = last >= SHP_EVENTS_KEEP ? last - SHP_EVENTS_KEEP + 1 : 1;
	if (from < oldest)
		m = (size_t)snprintf(msg, sizeof(msg), "watching from event "
				     "%" PRIu64 " (the oldest kept: those "
				     "before are gone), the newest %" PRIu64
				     "\n", oldest, last);
	else
		m = (size_t)snprintf(msg, sizeof(msg), "watching from event "
				     "%" PRIu64 ", the newest %" PRIu64 "\n",
				     from, last);
	reply(c, json, true, cmd, msg, m);
	/* its reply goes first; then it is a watcher, its slot a client's */
	if (c->closing || c->out_len - c->out_off > WATCH_BUF)
		return;
	memcpy(w->buf, c->out + c->out_off, c->out_len - c->out_off);
	w->off = 0;
	w->len = c->out_len - c->out_off;
	w->fd = c->fd;
	w->json = json;
	w->next = RTE_MAX(from, oldest);
	w->replay_end = last;
	shp_events_watchers++;
	/* a small kernel buffer: one that does not read is found soon */
	setsockopt(w->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	c->fd = -1;
	c->out_len = c->out_off = 0;
	c->closing = true;   /* the slot, not the connection: no fd */
	shp_event_sink = watch_sink;
	watcher_pump(w);
	if (w->fd >= 0)
		watcher_flush(w);
}

void
ctl_watch_init(void)
{
	unsigned int i;

	for (i = 0; i < CTL_WATCHERS; i++)
		watchers[i].fd = -1;
}

void
ctl_watch_fini(void)
{
	unsigned int i;

	for (i = 0; i < CTL_WATCHERS; i++)
		if (watchers[i].fd >= 0) {
			watcher_flush(&watchers[i]);
			if (watchers[i].fd >= 0)
				watcher_close(&watchers[i]);
		}
}

unsigned int
ctl_watch_pollfds(struct pollfd *pfd, int *wmap)
{
	unsigned int k, m = 0;

	for (k = 0; k < CTL_WATCHERS; k++) {
		struct watcher *w = &watchers[k];

		wmap[k] = -1;
		if (w->fd < 0)
			continue;
		wmap[k] = (int)m;
		/* its hang-up, and room for what waits */
		pfd[m++] = (struct pollfd){ .fd = w->fd, .events = POLLIN |
			(w->len > w->off ? POLLOUT : 0) };
	}
	return m;
}

void
ctl_watch_polled(const struct pollfd *pfd, const int *wmap)
{
	unsigned int k;

	for (k = 0; k < CTL_WATCHERS; k++)
		if (watchers[k].fd >= 0 && wmap[k] >= 0)
			watcher_poll(&watchers[k], pfd[wmap[k]].revents);
}
