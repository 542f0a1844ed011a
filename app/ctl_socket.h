/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket: /var/run/dpdk/PREFIX/shaper_ctl.sock (the EAL runtime
 * directory), a UNIX stream socket speaking the CLI's grammar, one command
 * per line, with framed replies (docs/control.md). It is served on the main
 * lcore, between the prompt's keys or in the control loop, through
 * cli_exec(): a change from the socket is the same call, and the same RCU
 * publication, as one typed at the prompt.
 */
#ifndef SHAPER_CTL_SOCKET_H
#define SHAPER_CTL_SOCKET_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "shaper.h"

#define CTL_SOCK_NAME "shaper_ctl.sock"
/* The longest command line (the CLI's, for command files and pipes). */
#define CTL_LINE_MAX 2048
#define CTL_MAX_CLIENTS 16
/* The lines of one `atomic N` block (blank and comment lines too). */
#define CTL_ATOMIC_LINES 1024
/* A request (a line, a body, an atomic block) not whole this long after
 * its first byte is refused and its client closed; a client that sent no
 * byte for --ctl-idle (default CTL_IDLE_MS, at most CTL_IDLE_MAX_MS) is
 * closed, its unread replies dropped (a client scripting runs keeps its
 * connection busy or opens one per command). */
#define CTL_HALF_LINE_MS 5000
#define CTL_IDLE_MS 60000
#define CTL_IDLE_MAX_MS 3600000

/* --no-ctl, --ctl-group NAME, --ctl-idle TIME (opts.c, before the EAL) */
struct ctl_socket_opts {
	bool off;
	bool group_set;
	gid_t gid;
	const char *group;
	uint64_t idle_ms;   /* 0: CTL_IDLE_MS */
};
extern struct ctl_socket_opts ctl_socket_opt;
/* --ctl-group NAME: 0, or -1 with err when there is no such group. */
int ctl_socket_opt_group(const char *name, char *err, size_t len);
/* --ctl-idle TIME: 0, or -1 with err (a time from CTL_HALF_LINE_MS to
 * CTL_IDLE_MAX_MS). */
int ctl_socket_opt_idle(const char *text, char *err, size_t len);

/* Listen (unless --no-ctl). 0, or -1 after one line saying why. */
int ctl_socket_init(struct shaper *s);
void ctl_socket_fini(void);

/*
 * poll() on the caller's fds and the socket's for up to timeout_ms,
 * serving every client that is ready. Returns what poll() would for the
 * caller's fds alone (their revents set): 0 when none is ready.
 */
int ctl_socket_poll(struct pollfd *fds, nfds_t n, int timeout_ms);

/* ---- the line reader (no I/O: fuzz/fuzz_ctl_line.c) ---- */

struct ctl_line_reader {
	char buf[CTL_LINE_MAX + 1];
	size_t len;
	size_t dropped;   /* characters of the line beyond CTL_LINE_MAX */
	bool binary;      /* the line holds a NUL or another control byte */
};

enum ctl_line_status {
	CTL_LINE_OK,        /* a command line, NUL-terminated, no \r\n */
	CTL_LINE_LONG,      /* longer than CTL_LINE_MAX: not run */
	CTL_LINE_BINARY,    /* holds a byte that is not text: not run */
};

/* Feed n bytes; for each complete line, line(arg, status, text, length)
 * (text is the reader's buffer, valid during the call; for CTL_LINE_LONG
 * its first CTL_LINE_MAX characters; length the line's full length).
 * Returns the number of lines. */
unsigned int ctl_line_feed(struct ctl_line_reader *r, const char *data,
			   size_t n,
			   void (*line)(void *arg, enum ctl_line_status st,
					const char *text, size_t length),
			   void *arg);

#endif
