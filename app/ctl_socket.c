/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket (ctl_socket.h, docs/control.md).
 *
 * Everything here runs on the main lcore, inside ctl_socket_poll(), which
 * the prompt and the control loop call instead of poll(): a command from a
 * client runs through cli_exec_to(), the prompt's own parser and handlers,
 * between two keys of the prompt, never during one of its commands. So a
 * change is built, published and freed after a grace period exactly as
 * from the prompt, and the workers never wait for a client.
 *
 * Clients are served in turn, one line at a time; what a client cannot be
 * trusted with is bounded: the line length (the CLI's), the number of
 * connections, the time a half line may wait, and the replies it leaves
 * unread (it is closed then). The sockets are non-blocking: a client that
 * stops reading never stops the main lcore.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* accept4 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <rte_eal.h>

#include "cli.h"
#include "ctl_body.h"
#include "ctl_client.h"
#include "ctl_socket.h"
#include "events.h"
#include "shp_file.h"
#include "shp_utf8.h"


struct ctl_socket_opts ctl_socket_opt;

static int listen_fd = -1;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static struct client clients[CTL_MAX_CLIENTS];
static bool inited;   /* clients[] hold -1 (no fd 0 closed at exit) */

int
ctl_socket_opt_group(const char *name, char *err, size_t len)
{
	struct group *g = getgrnam(name);

	if (g == NULL) {
		snprintf(err, len, "--ctl-group %s: no such group", name);
		return -1;
	}
	ctl_socket_opt.group = name;
	ctl_socket_opt.gid = g->gr_gid;
	ctl_socket_opt.group_set = true;
	return 0;
}

int
ctl_socket_opt_idle(const char *text, char *err, size_t len)
{
	char why[SHP_ERR_LEN];
	uint64_t ns;

	if (shp_parse_time(text, &ns, why) < 0) {
		snprintf(err, len, "--ctl-idle %s: %s", text, why);
		return -1;
	}
	if (ns < CTL_HALF_LINE_MS * 1000000ull ||
	    ns > CTL_IDLE_MAX_MS * 1000000ull) {
		snprintf(err, len, "--ctl-idle %s: from %us to %us", text,
			 CTL_HALF_LINE_MS / 1000, CTL_IDLE_MAX_MS / 1000);
		return -1;
	}
	ctl_socket_opt.idle_ms = ns / 1000000;
	return 0;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the line reader ---------------------------------------------- */

unsigned int
ctl_line_feed(struct ctl_line_reader *r, const char *data, size_t n,
	      void (*line)(void *arg, enum ctl_line_status st,
			   const char *text, size_t length),
	      void *arg)
{
	unsigned int lines = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)data[i];

		if (c == '\n') {
			size_t len = r->len;
			enum ctl_line_status st = CTL_LINE_OK;

			if (len > 0 && r->buf[len - 1] == '\r' &&
			    r->dropped == 0)
				len--;   /* a client sending \r\n */
			r->buf[len] = '\0';
			if (r->dropped > 0)
				st = CTL_LINE_LONG;
			else if (r->binary || !shp_utf8_valid(r->buf, len))
				st = CTL_LINE_BINARY;
			line(arg, st, r->buf, r->len + r->dropped);
			lines++;
			r->len = 0;
			r->dropped = 0;
			r->binary = false;
			continue;
		}
		/* a NUL would cut the line short, other control bytes are
		 * no word of the grammar: the line is refused whole (as is
		 * one that is not well-formed UTF-8: a JSON reply echoes it) */
		if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
			r->binary = true;
		if (r->len < CTL_LINE_MAX)
			r->buf[r->len++] = (char)c;
		else
			r->dropped++;
	}
	return lines;
}

static void
atomic_free(struct client *c)
{
	unsigned int i;

	for (i = 0; i < c->an; i++)
		free(c->alines[i]);
	free(c->alines);
	c->alines = NULL;
	c->an = c->aleft = 0;
	c->abad = false;
}

/* A line of an `atomic N` block; the last one runs them all. */
static void
atomic_line(struct client *c, enum ctl_line_status st, const char *text)
{
	enum shp_event_src src;
	char msg[160], *buf = NULL;
	size_t blen = 0;
	FILE *f;
	int rc;

	if (st != CTL_LINE_OK)
		c->abad = true;
	else if ((c->alines[c->an] = strdup(text)) == NULL)
		c->abad = true;
	else
		c->an++;
	if (--c->aleft > 0)
		return;
	if (c->abad) {
		int m = snprintf(msg, sizeof(msg), "error: atomic: a line is "
				 "too long or not text: nothing applied\n");
		reply(c, c->ajson, false, "atomic", msg, (size_t)m);
		atomic_free(c);
		return;
	}
	f = open_memstream(&buf, &blen);
	if (f == NULL) {
		int m = snprintf(msg, sizeof(msg), "error: out of memory: "
				 "nothing applied\n");
		reply(c, c->ajson, false, "atomic", msg, (size_t)m);
		atomic_free(c);
		return;
	}
	src = shp_event_source_set(c->src);
	rc = cli_exec_atomic(c->alines, c->an, f);
	shp_event_source_set(src);
	fclose(f);
	run_output(c, c->ajson, "atomic", rc, buf, blen);
	atomic_free(c);
}

static void
body_free(struct client *c)
{
	free(c->body);
	c->body = NULL;
	c->body_len = c->body_left = 0;
}

/* A whole body: the command line(s) it stands for (lib/conf/ctl_body.c), run
 * as one line or as an atomic block, one reply. */
static void
body_run(struct client *c)
{
	enum shp_event_src src;
	struct ctl_body b;
	char err[512], *buf = NULL;
	size_t blen = 0;
	FILE *f;
	int rc;

	if (ctl_body_parse(c->bmethod, c->bpath, c->body, c->body_len, &b,
			   err, sizeof(err)) < 0) {
		char msg[sizeof(err) + 32];
		size_t m = (size_t)snprintf(msg, sizeof(msg), "error: %s "
					    "(nothing changed)\n", err);
		reply(c, c->bjson, false, "body", msg, m);
		body_free(c);
		return;
	}
	body_free(c);
	f = open_memstream(&buf, &blen);
	if (f == NULL) {
		static const char m[] = "error: out of memory: not run "
			"(nothing changed)\n";

		reply(c, c->bjson, false, "body", m, sizeof(m) - 1);
		ctl_body_free(&b);
		return;
	}
	src = shp_event_source_set(c->src);
	if (b.atomic)
		rc = cli_exec_atomic(b.lines, b.n, f);
	else
		rc = cli_exec_to(b.lines[0], f);
	shp_event_source_set(src);
	fclose(f);
	run_output(c, c->bjson, b.atomic ? "atomic" : b.lines[0], rc, buf,
		   blen);
	ctl_body_free(&b);
}

/* `body METHOD PATH LENGTH`: the next LENGTH bytes are a REST body, not
 * lines. -1 with msg on a bad header. */
static int
body_header(struct client *c, const char *args, bool json, char *msg,
	    size_t len)
{
	char method[8], path[CTL_LINE_MAX];
	unsigned long n;
	char *end;
	int used = 0;

	if (sscanf(args, "%7s %2047s %n", method, path, &used) != 2 ||
	    used == 0 || (n = strtoul(args + used, &end, 10),
			  *end != '\0') || args[used] < '0' ||
	    args[used] > '9' || n > CTL_BODY_MAX) {
		snprintf(msg, len, "error: usage: body METHOD PATH LENGTH "
			 "(0..%d), then LENGTH bytes\n", CTL_BODY_MAX);
		return -1;
	}
	c->body = malloc(n > 0 ? n : 1);
	if (c->body == NULL) {
		snprintf(msg, len, "error: out of memory\n");
		return -1;
	}
	memcpy(c->bmethod, method, sizeof(method));
	memcpy(c->bpath, path, sizeof(path));
	c->body_len = 0;
	c->body_left = n;
	c->bjson = json;
	if (n == 0)
		body_run(c);
	return 0;
}

/* One line from a client: `json ` before a command asks for the JSON
 * form of its reply; `atomic N`, that the N lines that follow are
 * checked, then applied in one publication or not at all. */
static void
client_line(void *arg, enum ctl_line_status st, const char *text,
	    size_t length)
{
	struct client *c = arg;
	const char *cmd = text + strspn(text, " \t");
	enum shp_event_src src;
	bool json = false;
	char msg[160];
	char *buf = NULL;
	size_t blen = 0;
	FILE *f;
	int rc;

	if (c->closing)
		return;
	if (c->aleft > 0) {
		atomic_line(c, st, text);
		return;
	}
	/* a line refused as not text is still answered in the form asked;
	 * `json` and `from SOURCE` before the command, in either order */
	c->src = SHP_EV_CTL;
	for (;;) {
		if (st != CTL_LINE_LONG && word_is(cmd, "json")) {
			json = true;
			cmd += 4;
		} else if (st == CTL_LINE_OK && word_is(cmd, "from")) {
			cmd += 4;
			cmd += strspn(cmd, " \t");
			if (word_is(cmd, "rest")) {
				c->src = SHP_EV_REST;
				cmd += 4;
			} else if (word_is(cmd, "ctl")) {
				c->src = SHP_EV_CTL;
				cmd += 3;
			} else {
				static const char m[] = "error: usage: from "
					"rest|ctl COMMAND: where the change "
					"comes from (not run, nothing "
					"changed)\n";

				reply(c, json, false, cmd, m, sizeof(m) - 1);
				return;
			}
		} else {
			break;
		}
		cmd += strspn(cmd, " \t");
	}
	if (st == CTL_LINE_LONG) {
		int m = snprintf(msg, sizeof(msg), "error: line of %zu "
				 "characters, more than %d: not run (nothing "
				 "changed)\n", length, CTL_LINE_MAX);
		reply(c, false, false, "", msg, (size_t)m);
		return;
	}
	if (st == CTL_LINE_BINARY) {
		int m = snprintf(msg, sizeof(msg), "error: the line holds "
				 "bytes that are not text: not run (nothing "
				 "changed)\n");
		reply(c, json, false, "", msg, (size_t)m);
		return;
	}
	if (strncmp(cmd, "atomic", 6) == 0 &&
	    (cmd[6] == ' ' || cmd[6] == '\0')) {
		char *end;
		unsigned long k = strtoul(cmd + 6, &end, 10);

		if (cmd[6] == '\0' || *end != '\0' || k == 0 ||
		    k > CTL_ATOMIC_LINES) {
			int m = snprintf(msg, sizeof(msg), "error: usage: "
					 "atomic N (1..%d), then N lines\n",
					 CTL_ATOMIC_LINES);
			reply(c, json, false, cmd, msg, (size_t)m);
			return;
		}
		c->alines = calloc(k, sizeof(*c->alines));
		if (c->alines == NULL) {
			int m = snprintf(msg, sizeof(msg), "error: out of "
					 "memory\n");
			reply(c, json, false, cmd, msg, (size_t)m);
			return;
		}
		c->aleft = (unsigned int)k;
		c->ajson = json;
		return;
	}
	if (word_is(cmd, "watch")) {
		ctl_watch_start(c, cmd, json);
		return;
	}
	if (strncmp(cmd, "body", 4) == 0 && cmd[4] == ' ') {
		if (body_header(c, cmd + 5, json, msg, sizeof(msg)) < 0)
			reply(c, json, false, cmd, msg, strlen(msg));
		return;
	}
	if (*cmd == '\0' || *cmd == '#') {   /* as in a command file */
		reply(c, json, true, cmd, "", 0);
		return;
	}
	f = open_memstream(&buf, &blen);
	if (f == NULL) {
		int m = snprintf(msg, sizeof(msg), "error: out of memory: not "
				 "run (nothing changed)\n");
		reply(c, json, false, cmd, msg, (size_t)m);
		return;
	}
	src = shp_event_source_set(c->src);
	rc = cli_exec_to(cmd, f);
	shp_event_source_set(src);
	fclose(f);
	reply(c, json, rc == 0, cmd, buf, blen);
	free(buf);
}

/* ---- the socket ---------------------------------------------------- */

/*
 * --ctl-group: what the group may reach, and nothing more. The EAL makes
 * the runtime directory PREFIX and the dpdk one above it 0700 (as root
 * /var/run/dpdk/PREFIX): the group is given search (x) on these two, so
 * that it can open a name it knows in PREFIX, never list or write them;
 * others get nothing. What the group may then open is each file's own
 * mode: the socket (0660), and what another control surface puts beside
 * it for the group (shaper-api's token). The directories above dpdk
 * (/var/run, /tmp, $XDG_RUNTIME_DIR) are the system's or the user's.
 *
 * dpdk is shared by every prefix, and a directory has one group: another
 * --ctl-group's (a run before, or one still running, whose members then
 * lose their way in) is taken over, saying so. Left as is at exit (other
 * runs may still use it).
 */
static int
run_dirs_share(const char *dir, gid_t gid)
{
	char d[sizeof(sock_path)], *slash;
	struct stat st;
	int i;

	snprintf(d, sizeof(d), "%s", dir);
	for (i = 0; i < 2; i++) {
		if (stat(d, &st) < 0)
			return -1;
		if (st.st_gid != gid && st.st_gid != getegid() &&
		    (st.st_mode & 0010)) {
			struct group *g = getgrgid(st.st_gid);

			printf("dpdk-shaper: warning: --ctl-group %s: %s was "
			       "group %s's (another --ctl-group): now %s's "
			       "only\n", ctl_socket_opt.group, d,
			       g != NULL ? g->gr_name : "?",
			       ctl_socket_opt.group);
		}
		if (chown(d, (uid_t)-1, gid) < 0 ||
		    chmod(d, (st.st_mode & 07707) | 0010) < 0)
			return -1;
		slash = strrchr(d, '/');
		if (slash == NULL || slash == d)
			return 0;
		*slash = '\0';
	}
	/* above dpdk: not ours to open, but say when it shuts the group out
	 * ($XDG_RUNTIME_DIR is its user's alone) */
	if (stat(d, &st) == 0 && !(st.st_mode & 0001) &&
	    !(st.st_gid == gid && (st.st_mode & 0010)))
		printf("dpdk-shaper: warning: --ctl-group %s: %s (mode %04o) "
		       "does not let the group pass: its members cannot reach "
		       "the socket\n", ctl_socket_opt.group, d,
		       (unsigned int)(st.st_mode & 07777));
	return 0;
}

int
ctl_socket_init(struct shaper *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *dir = rte_eal_get_runtime_dir();
	mode_t old;
	int n, i;

	(void)s;
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		clients[i].fd = -1;
	ctl_watch_init();
	inited = true;
	if (ctl_socket_opt.off)
		return 0;
	n = snprintf(sock_path, sizeof(sock_path), "%s/%s", dir,
		     CTL_SOCK_NAME);
	if (n < 0 || (size_t)n >= sizeof(sock_path)) {
		fprintf(stderr, "dpdk-shaper: control socket %s/%s: the path "
			"is longer than a UNIX socket's (%zu): use a shorter "
			"--file-prefix, or --no-ctl\n", dir, CTL_SOCK_NAME,
			sizeof(sock_path) - 1);
		sock_path[0] = '\0';
		return -1;
	}
	memcpy(sa.sun_path, sock_path, (size_t)n + 1);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			   0);
	if (listen_fd < 0)
		goto fail;
	/* the runtime directory is ours (the prefix was free at start): a
	 * socket left there by a run that was killed is stale */
	unlink(sock_path);
	/* created with the final mode, never wider for a moment */
	old = umask(ctl_socket_opt.group_set ? 0117 : 0177);
	n = bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (n < 0)
		goto fail;
	if (ctl_socket_opt.group_set &&
	    (chown(sock_path, (uid_t)-1, ctl_socket_opt.gid) < 0 ||
	     chmod(sock_path, 0660) < 0 ||
	     run_dirs_share(dir, ctl_socket_opt.gid) < 0))
		goto fail;
	if (!ctl_socket_opt.group_set && chmod(sock_path, 0600) < 0)
		goto fail;
	if (listen(listen_fd, CTL_MAX_CLIENTS) < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "dpdk-shaper: control socket %s: %s (--no-ctl runs "
		"without it)\n", sock_path, strerror(errno));
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	unlink(sock_path);
	sock_path[0] = '\0';
	return -1;
}

static void
client_close(struct client *c)
{
	atomic_free(c);
	body_free(c);
	close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void
ctl_socket_fini(void)
{
	unsigned int i;

	for (i = 0; inited && i < CTL_MAX_CLIENTS; i++)
		if (clients[i].fd >= 0)
			client_close(&clients[i]);
	/* what is in their buffers is theirs to have: a last try */
	if (inited)
		ctl_watch_fini();
	shp_event_sink = NULL;
	inited = false;
	if (listen_fd >= 0) {
		close(listen_fd);
		listen_fd = -1;
	}
	if (sock_path[0] != '\0')
		unlink(sock_path);
	sock_path[0] = '\0';
}

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/* The client's identity when it connected: a file its commands name is
 * opened as this (shp_file.h). Not told: no file is opened for it. */
static void
peer_get(int fd, struct shp_file_peer *p)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	memset(p, 0, sizeof(*p));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 ||
	    len != sizeof(uc))
		return;
	p->uid = uc.uid;
	p->gid = uc.gid;
	len = sizeof(p->groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &len) < 0)
		return;   /* more groups than we keep: unknown */
	p->ngroups = len / sizeof(p->groups[0]);
	p->known = true;
}

static void
accept_clients(void)
{
	static const char busy[] = "error\nerror: too many control clients "
		"(" RTE_STR(CTL_MAX_CLIENTS) "): try again later\n.\n";
	int fd;

	while ((fd = accept4(listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		unsigned int i;

		for (i = 0; i < CTL_MAX_CLIENTS; i++)
			if (clients[i].fd < 0)
				break;
		if (i == CTL_MAX_CLIENTS) {
			/* a best effort: it is closed either way */
			ssize_t w = send(fd, busy, sizeof(busy) - 1,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			(void)w;
			close(fd);
			continue;
		}
		memset(&clients[i], 0, sizeof(clients[i]));
		clients[i].fd = fd;
		clients[i].last_ms = now_ms();
		peer_get(fd, &clients[i].peer);
	}
}

static void
client_write(struct client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				return;
			c->closing = true;
			c->out_off = c->out_len = 0;
			return;
		}
		c->out_off += (size_t)w;
	}
	c->out_off = c->out_len = 0;
}

/* Part of a request and not all of it: a line, a body, an atomic block. */
static bool
request_begun(const struct client *c)
{
	return c->rd.len + c->rd.dropped + c->body_left + c->aleft > 0;
}

static void
client_read(struct client *c, uint64_t now)
{
	char buf[4096];
	ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
	size_t off;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
		      errno == EINTR))
		return;
	if (n <= 0) {
		/* hung up, or only its sending half: a half line is
		 * dropped, never run (it may be cut); the replies to its
		 * whole lines are still sent */
		c->closing = true;
		return;
	}
	c->last_ms = now;
	shp_file_peer_set(&c->peer);
	c->replied = false;
	/* line by line: after a `body` line, its bytes are no lines */
	for (off = 0; off < (size_t)n && !c->closing; ) {
		const char *nl;
		size_t k;

		if (c->body_left > 0) {
			k = RTE_MIN(c->body_left, (size_t)n - off);
			memcpy(c->body + c->body_len, buf + off, k);
			c->body_len += k;
			c->body_left -= k;
			off += k;
			if (c->body_left == 0)
				body_run(c);
			continue;
		}
		nl = memchr(buf + off, '\n', (size_t)n - off);
		k = nl != NULL ? (size_t)(nl - (buf + off)) + 1 :
			(size_t)n - off;
		ctl_line_feed(&c->rd, buf + off, k, client_line, c);
		off += k;
	}
	shp_file_peer_set(NULL);
	/* a request's deadline runs from its first byte: more bytes of it
	 * do not put it off (a byte every 2 s would hold the slot for
	 * ever); one begun in this read, after a reply, starts afresh */
	if (!request_begun(c))
		c->part_ms = 0;
	else if (c->part_ms == 0 || c->replied)
		c->part_ms = now;
}

/* The two deadlines (docs/control.md): a request not whole
 * CTL_HALF_LINE_MS after its first byte is refused and the client closed
 * once told; no byte for CTL_IDLE_MS, and it is closed there and then,
 * whatever it left unread (a client that reads nothing is never told, and
 * would otherwise hold its slot for ever). */
static void
client_timeouts(struct client *c, uint64_t now)
{
	if (now - c->last_ms >= (ctl_socket_opt.idle_ms ?
				 ctl_socket_opt.idle_ms : CTL_IDLE_MS)) {
		c->out_len = c->out_off = 0;
		c->closing = true;
	} else if (!c->closing && c->part_ms != 0 &&
		   now - c->part_ms >= CTL_HALF_LINE_MS) {
		static const char m[] = "error: half a line: not whole "
			RTE_STR(CTL_HALF_LINE_MS) " ms after its first byte: "
			"not run, closing (nothing changed)\n";

		reply_text(c, false, m, sizeof(m) - 1);
		c->closing = true;
	}
}

int
ctl_socket_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct pollfd pfd[8 + 1 + CTL_MAX_CLIENTS + CTL_WATCHERS];
	int map[CTL_MAX_CLIENTS], wmap[CTL_WATCHERS];
	unsigned int i, m = 0, k, wbase;
	uint64_t now;
	int rc, ready = 0;

	if (listen_fd < 0 || n > 8)
		return poll(fds, n, timeout_ms);
	for (i = 0; i < n; i++)
		pfd[m++] = fds[i];
	pfd[m++] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
	for (k = 0; k < CTL_MAX_CLIENTS; k++) {
		struct client *c = &clients[k];

		map[k] = -1;
		if (c->fd < 0)
			continue;
		map[k] = (int)m;
		/* replies first: a client reading none sends no more */
		pfd[m++] = (struct pollfd){ .fd = c->fd,
			.events = c->out_len > c->out_off ? POLLOUT : POLLIN };
	}
	wbase = m;
	m += ctl_watch_pollfds(pfd + wbase, wmap);
	rc = poll(pfd, m, timeout_ms);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++) {
		fds[i].revents = pfd[i].revents;
		ready += pfd[i].revents != 0;
	}
	now = now_ms();
	for (k = 0; k < CTL_MAX_CLIENTS; k++) {
		struct client *c = &clients[k];
		short re;

		if (c->fd < 0)
			continue;
		re = map[k] >= 0 ? pfd[map[k]].revents : 0;
		if (re & POLLOUT)
			client_write(c);
		else if (re & (POLLIN | POLLHUP | POLLERR))
			client_read(c, now);
		client_timeouts(c, now);
		if (c->out_len > c->out_off)
			client_write(c);
		if (c->closing && c->out_len == c->out_off)
			client_close(c);
	}
	ctl_watch_polled(pfd + wbase, wmap);
	if (pfd[n].revents & POLLIN)
		accept_clients();
	return ready;
}
