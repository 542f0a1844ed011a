/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A text file a user names (a command file for `load`, a netem table, a
 * trace, a --schedule, a --config), read line by line, bounded.
 *
 * These files are read on the main lcore, which also serves the prompt and
 * the control socket: a path that never ends (/dev/zero) or never answers
 * (a FIFO without writer) would stop the control plane and the shutdown
 * with it. So only a regular file is read, opened without waiting, and its
 * size and line length have a bound each; a NUL byte is refused (what
 * follows it would be ignored unseen).
 *
 * Errors name the file and the line number, never the line: the reply of
 * a control socket or REST request must not print a file its client could
 * not read (/etc/shadow). When a control socket client's command runs, the
 * file is opened with that client's identity (shp_file_peer_set).
 */
#ifndef SHP_FILE_H
#define SHP_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "shp_units.h"

#define SHP_FILE_PEER_GROUPS 64

/* Whom a file is opened for: a control socket's peer (SO_PEERCRED and
 * SO_PEERGROUPS). known false: the peer could not be told, no file. */
struct shp_file_peer {
	bool known;
	uid_t uid;
	gid_t gid;
	unsigned int ngroups;
	gid_t groups[SHP_FILE_PEER_GROUPS];
};

struct shp_file {
	FILE *f;
	bool own;            /* opened here: closed by shp_file_close */
	const char *what;    /* the errors' first word: "load", "trace" */
	const char *path;
	size_t size_max, line_max;
	size_t read;         /* bytes read so far */
	unsigned int line;   /* the number of the line last returned */
	char *buf;
	size_t cap;
	char *err;           /* SHP_ERR_LEN */
};

/*
 * Opens path for shp_file_line: a regular file of at most size_max bytes,
 * as the current peer if there is one. 0, or -1 with err ("WHAT PATH:
 * not a regular file (a FIFO)").
 */
int shp_file_open(struct shp_file *sf, const char *what, const char *path,
		  size_t size_max, size_t line_max, char *err);

/* The checks of shp_file_open alone: a descriptor of the regular file
 * path, read-only, for a reader of its own (a capture). -1 with err. */
int shp_file_fd(const char *what, const char *path, size_t size_max,
		char *err);

/* The same bounds on a stream opened elsewhere (a test's, stdin). */
void shp_file_wrap(struct shp_file *sf, FILE *f, const char *what,
		   const char *path, size_t size_max, size_t line_max,
		   char *err);

/*
 * The next line, NUL-terminated, without its '\n', in *line (valid until
 * the next call); sf->line is its number. 1, 0 at the end of the file, -1
 * with err ("WHAT PATH:LINE: longer than N bytes").
 */
int shp_file_line(struct shp_file *sf, char **line);

void shp_file_close(struct shp_file *sf);

/*
 * The identity the files opened on this thread are opened as, until set
 * again (NULL: the process's own). The control socket sets its client's
 * around the client's commands.
 */
void shp_file_peer_set(const struct shp_file_peer *p);

#endif
