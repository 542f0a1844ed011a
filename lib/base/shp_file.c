/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * User-named text files, bounded (shp_file.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shp_file.h"

static __thread const struct shp_file_peer *peer;

void
shp_file_peer_set(const struct shp_file_peer *p)
{
	peer = p;
}

static const char *
kind_of(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" :
		S_ISCHR(m) ? "a character device" :
		S_ISBLK(m) ? "a block device" :
		S_ISSOCK(m) ? "a socket" : "not a file";
}

/* The thread's filesystem identity: setfsuid, setfsgid and the raw
 * setgroups system call change the calling thread only (glibc's
 * setgroups() would change every thread of the process). */
static int
fs_ids_set(uid_t uid, gid_t gid, size_t n, const gid_t *groups)
{
	if (syscall(SYS_setgroups, n, groups) < 0)
		return -1;
	setfsgid(gid);
	setfsuid(uid);
	/* an invalid id changes nothing and tells the current one */
	if ((uid_t)setfsuid((uid_t)-1) != uid ||
	    (gid_t)setfsgid((gid_t)-1) != gid) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/*
 * open() as the peer: the kernel checks the path (every directory's search
 * right, the file's mode, ACLs, LSMs) as it would for the client itself,
 * rather than a copy of these rules here. A peer of the process's own
 * user needs no switch.
 */
static int
open_as_peer(const struct shp_file_peer *p, const char *path, int flags,
	     int *switch_errno)
{
	uid_t fsuid = (uid_t)setfsuid((uid_t)-1);
	gid_t fsgid = (gid_t)setfsgid((gid_t)-1);
	gid_t *saved;
	int n, fd, e;

	*switch_errno = 0;
	if (p->uid == geteuid())
		return open(path, flags);
	n = getgroups(0, NULL);
	saved = malloc(sizeof(*saved) * (size_t)(n > 0 ? n : 1));
	if (n < 0 || saved == NULL || getgroups(n, saved) != n) {
		free(saved);
		*switch_errno = ENOMEM;
		return -1;
	}
	if (fs_ids_set(p->uid, p->gid, p->ngroups, p->groups) < 0) {
		*switch_errno = errno;
		fd = -1;
	} else {
		fd = open(path, flags);
	}
	e = errno;
	if (fs_ids_set(fsuid, fsgid, (size_t)n, saved) < 0) {
		/* the main lcore must not go on as a client */
		fprintf(stderr, "dpdk-shaper: cannot take back the process's "
			"identity after opening %s as uid %u: %s\n", path,
			(unsigned int)p->uid, strerror(errno));
		abort();
	}
	free(saved);
	errno = e;
	return fd;
}

void
shp_file_wrap(struct shp_file *sf, FILE *f, const char *what,
	      const char *path, size_t size_max, size_t line_max, char *err)
{
	memset(sf, 0, sizeof(*sf));
	sf->f = f;
	sf->what = what;
	sf->path = path;
	sf->size_max = size_max;
	sf->line_max = line_max;
	sf->err = err;
}

int
shp_file_fd(const char *what, const char *path, size_t size_max, char *err)
{
	/* O_NONBLOCK: open() does not wait for a FIFO's writer (nor a
	 * device's carrier); fstat then tells what the path is */
	const int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	const struct shp_file_peer *p = peer;
	char who[SHP_ERR_LEN];
	struct stat st;
	int fd, serr = 0;

	/* "load PATH", or PATH alone for a caller that says what it is */
	snprintf(who, sizeof(who), "%s%s%s", what, what[0] ? " " : "", path);
	if (p != NULL && !p->known) {
		snprintf(err, SHP_ERR_LEN, "%s: the client's identity is "
			 "unknown: no file is read for it", who);
		return -1;
	}
	fd = p != NULL ? open_as_peer(p, path, flags, &serr) :
		open(path, flags);
	if (fd < 0 && serr != 0) {
		snprintf(err, SHP_ERR_LEN, "%s: cannot open it as the "
			 "client (uid %u): %s", who,
			 (unsigned int)p->uid, strerror(serr));
		return -1;
	}
	if (fd < 0) {
		snprintf(err, SHP_ERR_LEN, "%s: %s%s", who,
			 strerror(errno), p != NULL && p->uid != geteuid() ?
			 " (as the client)" : "");
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, SHP_ERR_LEN, "%s: %s", who, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, SHP_ERR_LEN, "%s: not a regular file (%s)",
			 who, kind_of(st.st_mode));
		close(fd);
		return -1;
	}
	if ((unsigned long long)st.st_size > size_max) {
		snprintf(err, SHP_ERR_LEN, "%s: %lld bytes, more than the "
			 "%zu it may have", who, (long long)st.st_size,
			 size_max);
		close(fd);
		return -1;
	}
	return fd;
}

int
shp_file_open(struct shp_file *sf, const char *what, const char *path,
	      size_t size_max, size_t line_max, char *err)
{
	FILE *f;
	int fd;

	shp_file_wrap(sf, NULL, what, path, size_max, line_max, err);
	fd = shp_file_fd(what, path, size_max, err);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "r");
	if (f == NULL) {
		snprintf(err, SHP_ERR_LEN, "%s %s: %s", what, path,
			 strerror(errno));
		close(fd);
		return -1;
	}
	sf->f = f;
	sf->own = true;
	return 0;
}

int
shp_file_line(struct shp_file *sf, char **line)
{
	size_t n = 0;
	int c;

	while ((c = getc_unlocked(sf->f)) != EOF) {
		/* a file that grew since fstat is bounded all the same */
		if (++sf->read > sf->size_max) {
			snprintf(sf->err, SHP_ERR_LEN, "%s %s: more than the "
				 "%zu bytes it may have", sf->what, sf->path,
				 sf->size_max);
			return -1;
		}
		if (c == '\n')
			break;
		if (c == '\0') {
			snprintf(sf->err, SHP_ERR_LEN, "%s %s:%u: not text (a "
				 "NUL byte)", sf->what, sf->path, sf->line + 1);
			return -1;
		}
		if (n == sf->line_max) {
			snprintf(sf->err, SHP_ERR_LEN, "%s %s:%u: a line "
				 "longer than %zu bytes", sf->what, sf->path,
				 sf->line + 1, sf->line_max);
			return -1;
		}
		if (n + 1 >= sf->cap) {
			size_t cap = sf->cap ? 2 * sf->cap : 256;
			char *b = realloc(sf->buf, cap);

			if (b == NULL) {
				snprintf(sf->err, SHP_ERR_LEN, "%s %s:%u: out "
					 "of memory", sf->what, sf->path,
					 sf->line + 1);
				return -1;
			}
			sf->buf = b;
			sf->cap = cap;
		}
		sf->buf[n++] = (char)c;
	}
	if (c == EOF && ferror(sf->f)) {
		snprintf(sf->err, SHP_ERR_LEN, "%s %s:%u: %s", sf->what,
			 sf->path, sf->line + 1, strerror(errno));
		return -1;
	}
	if (c == EOF && n == 0)
		return 0;
	if (sf->cap == 0) {   /* an empty first line */
		sf->buf = malloc(1);
		if (sf->buf == NULL) {
			snprintf(sf->err, SHP_ERR_LEN, "%s %s:%u: out of "
				 "memory", sf->what, sf->path, sf->line + 1);
			return -1;
		}
		sf->cap = 1;
	}
	sf->buf[n] = '\0';
	sf->line++;
	*line = sf->buf;
	return 1;
}

void
shp_file_close(struct shp_file *sf)
{
	if (sf->own && sf->f != NULL)
		fclose(sf->f);
	free(sf->buf);
	sf->f = NULL;
	sf->buf = NULL;
	sf->cap = 0;
}
