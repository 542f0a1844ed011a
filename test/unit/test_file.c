/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * User-named files (lib/base/shp_file.h): only a regular file is read, a
 * FIFO or a device is refused at once, lines and sizes are bounded, errors
 * name the file and the line and never quote it, and a control socket
 * client's file is opened as that client.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "shp_file.h"
#include "shp_kind.h"
#include "shp_netem.h"

#define SECRET "s3cr3t-hash-Xy7"

static char dir[64];

static const char *
file_with(const char *name, const char *text, size_t len, mode_t mode)
{
	static char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static const char *
text_file(const char *name, const char *text)
{
	return file_with(name, text, strlen(text), 0644);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Lines as written, without '\n', numbered; the last without its '\n'. */
static void
test_regular_file(void **state)
{
	const char *path = text_file("r.txt", "one\n\n  three\r\nfour");
	const char *want[] = { "one", "", "  three\r", "four" };
	char err[SHP_ERR_LEN], *line;
	struct shp_file sf;
	unsigned int i;

	(void)state;
	assert_int_equal(shp_file_open(&sf, "load", path, 1024, 64, err), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(shp_file_line(&sf, &line), 1);
		assert_string_equal(line, want[i]);
		assert_int_equal(sf.line, i + 1);
	}
	assert_int_equal(shp_file_line(&sf, &line), 0);
	shp_file_close(&sf);
	path = text_file("e.txt", "");
	assert_int_equal(shp_file_open(&sf, "load", path, 1024, 64, err), 0);
	assert_int_equal(shp_file_line(&sf, &line), 0);
	shp_file_close(&sf);
}

/* A FIFO without a writer, a device that never ends, a directory: refused
 * at open, at once, said as what they are. */
static void
test_not_regular(void **state)
{
	const struct { const char *path, *what; } bad[] = {
		{ "/dev/zero", "not a regular file (a character device)" },
		{ "/dev/null", "not a regular file (a character device)" },
		{ "/tmp", "not a regular file (a directory)" },
		{ NULL, "not a regular file (a FIFO)" },
	};
	char err[SHP_ERR_LEN], fifo[128];
	struct shp_file sf;
	unsigned int i;

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0666), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *path = bad[i].path ? bad[i].path : fifo;
		double t0 = now_s();

		err[0] = '\0';
		assert_int_equal(shp_file_open(&sf, "load", path, 1 << 20,
					       2048, err), -1);
		assert_true(now_s() - t0 < 1.0);
		if (strstr(err, bad[i].what) == NULL ||
		    strstr(err, path) == NULL || strncmp(err, "load ", 5) != 0)
			fail_msg("%s: %s", path, err);
	}
	unlink(fifo);
	assert_int_equal(shp_file_open(&sf, "load", "/nonexistent/f", 1024,
				       64, err), -1);
	assert_non_null(strstr(err, "No such file"));
}

/* An over-long line, a NUL byte, a file over its size (at open, and one
 * that grows past it): the file and the line are named, the content is
 * not. */
static void
test_bounds(void **state)
{
	char err[SHP_ERR_LEN], *line, big[600], where[200];
	struct shp_file sf;
	const char *path;
	FILE *mem;
	size_t i;

	(void)state;
	for (i = 0; i + sizeof(SECRET) < sizeof(big); i += sizeof(SECRET) - 1)
		memcpy(big + i, SECRET, sizeof(SECRET) - 1);
	big[i] = '\0';
	/* a line longer than line_max */
	{
		char text[700];

		snprintf(text, sizeof(text), "ok\n%s\n", big);
		path = text_file("long.txt", text);
	}
	assert_int_equal(shp_file_open(&sf, "load", path, 4096, 64, err), 0);
	assert_int_equal(shp_file_line(&sf, &line), 1);
	assert_int_equal(shp_file_line(&sf, &line), -1);
	shp_file_close(&sf);
	snprintf(where, sizeof(where), "load %s:2: a line longer than 64 bytes",
		 path);
	assert_string_equal(err, where);
	/* a NUL byte: what follows it would go unseen */
	path = file_with("nul.txt", "a\n" SECRET "\0x\n",
			 2 + sizeof(SECRET) + 2, 0644);
	assert_int_equal(shp_file_open(&sf, "trace:", path, 4096, 64, err), 0);
	assert_int_equal(shp_file_line(&sf, &line), 1);
	assert_int_equal(shp_file_line(&sf, &line), -1);
	shp_file_close(&sf);
	snprintf(where, sizeof(where), "trace: %s:2: not text (a NUL byte)",
		 path);
	assert_string_equal(err, where);
	/* a file larger than size_max: refused before a byte is read */
	path = text_file("size.txt", big);
	assert_int_equal(shp_file_open(&sf, "load", path, 100, 4096, err), -1);
	assert_non_null(strstr(err, "bytes, more than the 100 it may have"));
	assert_null(strstr(err, SECRET));
	/* a stream longer than it said (a file that grew): bounded too */
	mem = fmemopen(big, strlen(big), "r");
	assert_non_null(mem);
	shp_file_wrap(&sf, mem, "--schedule", "grown.txt", 100, 4096, err);
	assert_int_equal(shp_file_line(&sf, &line), -1);
	shp_file_close(&sf);
	fclose(mem);
	assert_string_equal(err, "--schedule grown.txt: more than the 100 "
			    "bytes it may have");
}

/* The parsers' errors on a file that is not theirs name its line, never
 * quote it (a reply through the socket printed /etc/shadow's first). */
static void
test_errors_never_quote(void **state)
{
	const struct shp_kind *trace = shp_kind_find("trace");
	char err[SHP_ERR_LEN], where[200];
	const char *path;

	(void)state;
	path = text_file("shadow", "# x\nroot:" SECRET ":19000:0:99999:7:::\n");
	err[0] = '\0';
	assert_null(shp_netem_dist_load(path, err));
	snprintf(where, sizeof(where), "%s:2:", path);
	if (strstr(err, where) == NULL || strstr(err, SECRET) != NULL ||
	    strstr(err, "root") != NULL)
		fail_msg("distribution: %s", err);
	assert_non_null(trace);
	err[0] = '\0';
	assert_null(trace->parse(path, NULL, err));
	if (strstr(err, where) == NULL || strstr(err, SECRET) != NULL ||
	    strstr(err, "root") != NULL)
		fail_msg("trace: %s", err);
}

/*
 * A control socket client's file is opened as the client: what it could
 * not open itself (a file of mode 0600, a file under a directory it
 * cannot search) is refused as such; what it can, is read; and the
 * thread is itself again after.
 */
static void
test_peer(void **state)
{
	struct shp_file_peer nobody = { .known = true, .uid = 65534,
		.gid = 65534, .ngroups = 1, .groups = { 65534 } };
	struct shp_file_peer member = nobody, unknown = { .known = false };
	struct shp_file_peer root = { .known = true };
	char err[SHP_ERR_LEN], pub[128], path[200], *line;
	struct shp_file sf;

	(void)state;
	if (geteuid() != 0) {
		/* a process that is not root cannot take another identity:
		 * a peer other than its own user is refused */
		print_message("test_peer: not root: only the refusal of "
			      "another user's request is checked\n");
		shp_file_peer_set(&nobody);
		assert_int_equal(shp_file_open(&sf, "load",
					       text_file("p", "x\n"), 64, 64,
					       err), -1);
		shp_file_peer_set(NULL);
		assert_non_null(strstr(err, "as the client"));
		return;
	}
	snprintf(pub, sizeof(pub), "%s/pub", dir);
	assert_int_equal(mkdir(pub, 0755), 0);
	assert_int_equal(chmod(pub, 0755), 0);
	assert_int_equal(chmod(dir, 0711), 0);   /* searchable, not listed */
	text_file("pub/open", "x\n");
	text_file("pub/grp", "x\n");
	file_with("pub/root", SECRET "\n", sizeof(SECRET), 0600);
	snprintf(path, sizeof(path), "%s/pub/grp", dir);
	assert_int_equal(chown(path, 0, 4242), 0);
	assert_int_equal(chmod(path, 0640), 0);

	shp_file_peer_set(&nobody);
	/* readable by all */
	snprintf(path, sizeof(path), "%s/pub/open", dir);
	assert_int_equal(shp_file_open(&sf, "load", path, 64, 64, err), 0);
	assert_int_equal(shp_file_line(&sf, &line), 1);
	shp_file_close(&sf);
	/* the owner's only */
	snprintf(path, sizeof(path), "%s/pub/root", dir);
	assert_int_equal(shp_file_open(&sf, "load", path, 64, 64, err), -1);
	assert_non_null(strstr(err, "Permission denied (as the client)"));
	assert_null(strstr(err, SECRET));
	/* a group's: not nobody's, a member's */
	snprintf(path, sizeof(path), "%s/pub/grp", dir);
	assert_int_equal(shp_file_open(&sf, "load", path, 64, 64, err), -1);
	member.groups[member.ngroups++] = 4242;
	shp_file_peer_set(&member);
	assert_int_equal(shp_file_open(&sf, "load", path, 64, 64, err), 0);
	shp_file_close(&sf);
	/* readable by all, under a directory nobody may search */
	assert_int_equal(chmod(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/pub/open", dir);
	shp_file_peer_set(&nobody);
	assert_int_equal(shp_file_open(&sf, "load", path, 64, 64, err), -1);
	assert_non_null(strstr(err, "Permission denied"));
	/* a peer not told: nothing */
	shp_file_peer_set(&unknown);
	assert_int_equal(shp_file_open(&sf, "load", path, 64, 64, err), -1);
	assert_non_null(strstr(err, "identity is unknown"));
	/* root, the process's own user */
	shp_file_peer_set(&root);
	snprintf(path, sizeof(path), "%s/pub/root", dir);
	assert_int_equal(shp_file_open(&sf, "load", path, 64, 64, err), 0);
	shp_file_close(&sf);
	/* no peer: the process itself, which is root again */
	shp_file_peer_set(&nobody);
	assert_int_equal(shp_file_open(&sf, "load", path, 64, 64, err), -1);
	shp_file_peer_set(NULL);
	assert_int_equal(shp_file_open(&sf, "load", path, 64, 64, err), 0);
	shp_file_close(&sf);
	assert_int_equal(getgroups(0, NULL) >= 0, 1);
	unlink(path);
	snprintf(path, sizeof(path), "%s/pub/open", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/pub/grp", dir);
	unlink(path);
	rmdir(pub);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/shp_file_XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	const char *names[] = { "r.txt", "e.txt", "long.txt", "nul.txt",
				"size.txt", "shadow", "p" };
	char path[160];
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	return rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regular_file),
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_errors_never_quote),
		cmocka_unit_test(test_peer),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
