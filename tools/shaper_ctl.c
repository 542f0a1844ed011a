/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-ctl: one command to a running dpdk-shaper through its control
 * socket (docs/control.md), its reply printed, and an exit status a script
 * can trust:
 *   0  the command applied (or showed what it was asked)
 *   1  the shaper refused it (its one-line error printed; nothing changed)
 *   2  a usage error of this program
 *   3  no shaper answers at that prefix (one line naming the socket)
 *
 * Runs without the EAL: it only needs the runtime directory's path, which
 * it finds as DPDK 22.11 does (eal_create_runtime_dir()), and for a user
 * other than root, root's next (a root shaper's --ctl-group).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* asprintf */
#endif
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "shp_file.h"

#define DEFAULT_PREFIX "rte"   /* DPDK's own default --file-prefix */
#define SOCK_NAME "shaper_ctl.sock"
#define LINE_MAX_LEN 2048      /* the shaper's command line */
#define REPLY_TIMEOUT_MS 120000
#define MAX_ATOMIC_LINES 1024  /* the shaper's CTL_ATOMIC_LINES */
/* an --atomic file: its lines at their longest, and one more line */
#define ATOMIC_FILE_MAX ((size_t)(LINE_MAX_LEN + 2) * (MAX_ATOMIC_LINES + 1))

static void
usage(FILE *f)
{
	fprintf(f,
"Usage: dpdk-shaper-ctl [-f PREFIX] [--json] COMMAND WORDS...\n"
"       dpdk-shaper-ctl [-f PREFIX] [--json] --atomic FILE|-\n"
"       dpdk-shaper-ctl [-f PREFIX] watch [--json] [since ID]\n"
"\n"
"Runs one command of the shaper's CLI (docs/cli.md) on the dpdk-shaper\n"
"started with --file-prefix PREFIX, through its control socket, and prints\n"
"its reply, e.g.\n"
"    dpdk-shaper-ctl -f shp1 set netem 0 delay 50ms\n"
"\n"
"  -f, --file-prefix PREFIX  the shaper's EAL --file-prefix (default %s)\n"
"  --json                    the reply as one JSON object: status, command,\n"
"                            output\n"
"  --atomic FILE|-           the stage changes of a command file (set, update,\n"
"                            clear KEY all|P; - : stdin): every line checked\n"
"                            first, then all applied in one publication, or\n"
"                            none\n"
"  watch [--json] [since ID] every change the shaper applies, one a line\n"
"                            as it happens (after event ID: those kept),\n"
"                            until the shaper ends\n"
"  -h, --help                this text\n"
"\n"
"Words holding spaces are sent quoted ('...'), as the CLI's class rules\n"
"take them. A user other than root looks for the socket in its own runtime\n"
"directory, then in root's (/var/run/dpdk/PREFIX: a member of a root\n"
"shaper's --ctl-group). Exit status: 0 applied, 1 refused (nothing\n"
"changed), 2 usage error, 3 no shaper answers at that prefix.\n",
		DEFAULT_PREFIX);
}

/* As DPDK's eal_create_runtime_dir(): root's in /var/run, others' in
 * $XDG_RUNTIME_DIR or /tmp; root's own when as_root. */
static int
sock_path(const char *prefix, bool as_root, char *dst, size_t len)
{
	const char *base = "/var/run";
	int n;

	if (!as_root) {
		const char *x = getenv("XDG_RUNTIME_DIR");

		base = x != NULL ? x : "/tmp";
	}
	n = snprintf(dst, len, "%s/dpdk/%s/%s", base, prefix, SOCK_NAME);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A connected socket, or -1 with errno (sa: the path that said why). */
static int
try_connect(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0 || connect(fd, (const struct sockaddr *)sa,
			      sizeof(*sa)) == 0)
		return fd;
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/* A user other than root looks in its own runtime directory, then in
 * root's: a root shaper's --ctl-group lets its members in there. Its own
 * has no shaper when the socket or a directory is not there, or when
 * another user's /tmp/dpdk shuts it out; a socket nobody listens on is
 * its own shaper's, gone. -1 with why (naming both when both refused). */
static int
ctl_connect(const char *prefix, struct sockaddr_un *sa, char *why,
	    size_t len)
{
	struct sockaddr_un root = { .sun_family = AF_UNIX };
	int fd = try_connect(sa), err = errno;

	snprintf(why, len, "%s", err == ENOENT ? "no such socket (is it "
		 "running with this --file-prefix?)" : strerror(err));
	if (fd >= 0 || getuid() == 0 ||
	    (err != ENOENT && err != EACCES && err != ENOTDIR) ||
	    sock_path(prefix, true, root.sun_path, sizeof(root.sun_path)) < 0)
		return fd;
	fd = try_connect(&root);
	if (fd >= 0)
		memcpy(sa, &root, sizeof(root));
	else if (errno != ENOENT)   /* a root shaper, maybe, not for us */
		snprintf(why + strlen(why), len - strlen(why), "; nor at %s: "
			 "%s", root.sun_path, strerror(errno));
	return fd;
}

/* The words as one line: a word with a blank in it (or none at all) is
 * quoted, as `set class NAME match 'RULE'` takes it. */
static int
join(int argc, char **argv, char *line, size_t len)
{
	size_t off = 0;
	int i;

	for (i = 0; i < argc; i++) {
		const char *w = argv[i];
		bool q = *w == '\0' || strpbrk(w, " \t") != NULL;
		int n;

		if (strpbrk(w, "\n\r") != NULL) {
			fprintf(stderr, "dpdk-shaper-ctl: word %d holds a "
				"newline: one command per call\n", i + 1);
			return -1;
		}
		if (q && strchr(w, '\'') != NULL) {
			fprintf(stderr, "dpdk-shaper-ctl: word '%s' holds "
				"both a blank and a quote\n", w);
			return -1;
		}
		n = snprintf(line + off, len - off, "%s%s%s%s",
			     i ? " " : "", q ? "'" : "", w, q ? "'" : "");
		if (n < 0 || (size_t)n >= len - off) {
			fprintf(stderr, "dpdk-shaper-ctl: the command is "
				"longer than %d characters\n", LINE_MAX_LEN);
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/* "atomic N\n" and the N lines of path (- : stdin). A path is read only
 * if it is a regular file (a FIFO or /dev/zero would never end), and
 * either is bounded: a block the shaper would take at most. */
static int
read_block(const char *path, char **out)
{
	char *body = NULL, *line, *res, err[SHP_ERR_LEN];
	size_t blen = 0;
	unsigned int n = 0;
	struct shp_file sf;
	FILE *m;
	int got;

	if (strcmp(path, "-") == 0)
		shp_file_wrap(&sf, stdin, "--atomic", "-", ATOMIC_FILE_MAX,
			      LINE_MAX_LEN + 1, err);
	else if (shp_file_open(&sf, "--atomic", path, ATOMIC_FILE_MAX,
			       LINE_MAX_LEN + 1, err) < 0) {
		fprintf(stderr, "dpdk-shaper-ctl: %s\n", err);
		return -1;
	}
	m = open_memstream(&body, &blen);
	if (m == NULL) {
		shp_file_close(&sf);
		return -1;
	}
	while ((got = shp_file_line(&sf, &line)) > 0) {
		line[strcspn(line, "\r")] = '\0';
		if (strlen(line) > LINE_MAX_LEN) {
			got = -1;
			snprintf(err, sizeof(err), "--atomic %s:%u: more than "
				 "%d characters", path, n + 1, LINE_MAX_LEN);
			break;
		}
		fprintf(m, "%s\n", line);
		if (++n > MAX_ATOMIC_LINES)
			break;
	}
	shp_file_close(&sf);
	fclose(m);
	if (got < 0 || n == 0 || n > MAX_ATOMIC_LINES) {
		if (got < 0)
			fprintf(stderr, "dpdk-shaper-ctl: %s\n", err);
		else if (n == 0)
			fprintf(stderr, "dpdk-shaper-ctl: --atomic %s: no "
				"line to run\n", path);
		else
			fprintf(stderr, "dpdk-shaper-ctl: --atomic %s: more "
				"than %d lines\n", path, MAX_ATOMIC_LINES);
		free(body);
		return -1;
	}
	if (asprintf(&res, "atomic %u\n%s", n, body) < 0) {
		free(body);
		return -1;
	}
	free(body);
	*out = res;
	return 0;
}

static int
no_shaper(const char *path, const char *why)
{
	fprintf(stderr, "dpdk-shaper-ctl: no shaper answers at %s: %s\n",
		path, why);
	return 3;
}

/*
 * `watch [--json] [since ID]`: the shaper's events, one a line on stdout
 * as they are applied (docs/monitoring.md), until the shaper ends or drops
 * this watcher for not reading (0; a refused watch: 1). Its first reply
 * goes to stderr, so stdout holds only events.
 */
static int
watch(int fd, const char *path, bool json)
{
	char buf[65536], *hold = NULL;
	size_t hlen = 0;
	bool head = true;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		char *p, *q;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (!head) {
			fwrite(buf, 1, (size_t)n, stdout);
			fflush(stdout);
			continue;
		}
		/* the reply to `watch` first: a JSON line, or framed */
		q = realloc(hold, hlen + (size_t)n + 1);
		if (q == NULL || hlen + (size_t)n > 1 << 20) {
			free(q != NULL ? q : hold);
			return no_shaper(path, "the reply was too long");
		}
		hold = q;
		memcpy(hold + hlen, buf, (size_t)n);
		hlen += (size_t)n;
		hold[hlen] = '\0';
		p = json ? strchr(hold, '\n') : strstr(hold, "\n.\n");
		if (p == NULL)
			continue;
		p += json ? 1 : 3;
		head = false;
		if (json ? strncmp(hold, "{\"status\": \"ok\"", 15) != 0 :
		    strncmp(hold, "ok\n", 3) != 0) {
			fwrite(hold, 1, (size_t)(p - hold), stderr);
			free(hold);
			return 1;
		}
		fwrite(hold, 1, (size_t)(p - hold), stderr);
		fwrite(p, 1, hlen - (size_t)(p - hold), stdout);
		fflush(stdout);
	}
	close(fd);
	if (head) {
		free(hold);
		return no_shaper(path, "the reply was cut");
	}
	free(hold);
	fprintf(stderr, "dpdk-shaper-ctl: watch: the shaper closed the "
		"stream (it ended, or this watcher did not read fast enough: "
		"events_lost in `show events`)\n");
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "file-prefix", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "atomic", required_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	const char *prefix = DEFAULT_PREFIX;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[LINE_MAX_LEN + 8], why[sizeof(sa.sun_path) + 160];
	char *reply = NULL;
	size_t rlen = 0, rcap = 0;
	bool json = false, done = false, watching = false;
	const char *atomic = NULL;
	char *block = NULL;
	int c, fd, rc;

	/* '+': the command's own words (`-f` in a rule...) are not ours */
	while ((c = getopt_long(argc, argv, "+f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			prefix = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'a':
			atomic = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (atomic != NULL && optind < argc) {
		fprintf(stderr, "dpdk-shaper-ctl: --atomic takes its commands "
			"from the file, not the command line\n");
		return 2;
	}
	if (atomic == NULL && optind >= argc) {
		fprintf(stderr, "dpdk-shaper-ctl: no command (e.g. "
			"dpdk-shaper-ctl -f PREFIX show config; --help)\n");
		return 2;
	}
	if (*prefix == '\0' || strchr(prefix, '/') != NULL) {
		fprintf(stderr, "dpdk-shaper-ctl: --file-prefix '%s': not a "
			"prefix\n", prefix);
		return 2;
	}
	if (sock_path(prefix, getuid() == 0, sa.sun_path,
		      sizeof(sa.sun_path)) < 0) {
		fprintf(stderr, "dpdk-shaper-ctl: --file-prefix '%s': too "
			"long for a socket path\n", prefix);
		return 2;
	}
	strcpy(line, json ? "json " : "");
	if (atomic == NULL && strcmp(argv[optind], "watch") == 0) {
		/* watch [--json] [since ID] */
		int i;

		for (i = optind + 1; i < argc; i++)
			if (strcmp(argv[i], "--json") == 0) {
				json = true;
				memmove(&argv[i], &argv[i + 1],
					sizeof(*argv) * (size_t)(argc - i));
				argc--;
				i--;
			}
		strcpy(line, json ? "json " : "");
		watching = true;
	}
	if (atomic != NULL) {
		if (read_block(atomic, &block) < 0)
			return 2;
	} else {
		if (join(argc - optind, argv + optind, line + strlen(line),
			 LINE_MAX_LEN + 1) < 0)
			return 2;
		strcat(line, "\n");
	}

	fd = ctl_connect(prefix, &sa, why, sizeof(why));
	if (fd < 0)
		return no_shaper(sa.sun_path, why);
	if (block != NULL) {
		size_t len = strlen(block), off = 0;

		if (json)
			send(fd, "json ", 5, MSG_NOSIGNAL);
		while (off < len) {
			ssize_t w = send(fd, block + off, len - off,
					 MSG_NOSIGNAL);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return no_shaper(sa.sun_path, strerror(errno));
			off += (size_t)w;
		}
		free(block);
	} else if (send(fd, line, strlen(line), MSG_NOSIGNAL) !=
		   (ssize_t)strlen(line)) {
		return no_shaper(sa.sun_path, strerror(errno));
	}
	if (watching)
		return watch(fd, sa.sun_path, json);

	while (!done) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (rcap - rlen < 4096) {
			char *q = realloc(reply, rcap ? rcap * 2 : 8192);

			if (q == NULL) {
				fprintf(stderr, "dpdk-shaper-ctl: out of "
					"memory\n");
				return 3;
			}
			reply = q;
			rcap = rcap ? rcap * 2 : 8192;
		}
		if (poll(&p, 1, REPLY_TIMEOUT_MS) <= 0)
			return no_shaper(sa.sun_path, "no reply");
		n = recv(fd, reply + rlen, rcap - rlen - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		rlen += (size_t)n;
		reply[rlen] = '\0';
		if (json)
			done = strchr(reply, '\n') != NULL;
		else
			done = rlen >= 3 &&
			       memcmp(reply + rlen - 3, "\n.\n", 3) == 0;
	}
	close(fd);
	if (!done)
		return no_shaper(sa.sun_path, "the reply was cut");
	if (json) {
		fputs(reply, stdout);
		rc = strncmp(reply, "{\"status\": \"ok\"", 15) == 0 ? 0 : 1;
	} else {
		/* "ok\n" or "error\n", then the text, a leading '.' doubled,
		 * then ".\n" */
		char *p = strchr(reply, '\n') + 1;
		char *end = reply + rlen - 2;   /* the end marker */

		rc = strncmp(reply, "ok\n", 3) == 0 ? 0 : 1;
		while (p < end) {
			char *nl = strchr(p, '\n');

			if (*p == '.')
				p++;
			fwrite(p, 1, (size_t)(nl - p + 1), rc ? stderr :
			       stdout);
			p = nl + 1;
		}
	}
	free(reply);
	return rc;
}
