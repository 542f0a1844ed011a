/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Start-up and exit around the EAL: what can be checked in its arguments
 * before it starts (so a mistake costs one line, not a start-up and a
 * cascade of EAL messages), and the run directory it leaves behind.
 */
#define _GNU_SOURCE  /* nftw */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shaper.h"

/* An option of ours among the EAL options (`--` forgotten) would end in
 * the EAL's hundred-line usage and "Invalid argument": name it instead. */
int
shaper_check_misplaced(int eal_argc, char **argv)
{
	int i;

	for (i = 1; i < eal_argc; i++)
		if (shaper_is_app_option(argv[i])) {
			fprintf(stderr, "dpdk-shaper: '%s' is a dpdk-shaper "
				"option: it goes after '--' (dpdk-shaper [EAL "
				"options] -- [dpdk-shaper options])\n",
				argv[i]);
			return -1;
		}
	return 0;
}

/* The value of an EAL option given as `--name V` or `--name=V`. */
static const char *
eal_value(int eal_argc, char **argv, const char *name)
{
	size_t n = strlen(name);
	const char *v = NULL;
	int i;

	for (i = 1; i < eal_argc; i++) {
		if (strcmp(argv[i], name) == 0 && i + 1 < eal_argc)
			v = argv[++i];
		else if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
			v = argv[i] + n + 1;
	}
	return v;
}

static bool
eal_flag(int eal_argc, char **argv, const char *name)
{
	int i;

	for (i = 1; i < eal_argc; i++)
		if (strcmp(argv[i], name) == 0)
			return true;
	return false;
}

/*
 * A primary process with the same --file-prefix holds a lock on its
 * runtime directory's config file; the EAL would fail with "Cannot create
 * lock ... Is another primary process running?" and rte_errno 0. Say it
 * in one line before starting anything. The directory is the EAL's:
 * /var/run/dpdk/PREFIX for root, else $XDG_RUNTIME_DIR (or /tmp)/dpdk.
 */
int
shaper_check_prefix_free(int eal_argc, char **argv)
{
	const char *prefix = eal_value(eal_argc, argv, "--file-prefix");
	const char *base = "/var/run", *xdg = getenv("XDG_RUNTIME_DIR");
	char path[PATH_MAX];
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd, rc;

	if (eal_flag(eal_argc, argv, "--no-shconf") ||
	    eal_flag(eal_argc, argv, "--in-memory") ||
	    eal_value(eal_argc, argv, "--proc-type") != NULL)
		return 0;  /* no lock taken, or secondary on purpose */
	if (getuid() != 0)
		base = xdg != NULL ? xdg : "/tmp";
	snprintf(path, sizeof(path), "%s/dpdk/%s/config", base,
		 prefix != NULL ? prefix : "rte");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	rc = fcntl(fd, F_GETLK, &lk);
	close(fd);
	if (rc == 0 && lk.l_type != F_UNLCK) {
		fprintf(stderr, "dpdk-shaper: another DPDK process (pid %d) "
			"runs with file prefix '%s': give this one its own, "
			"e.g. --file-prefix shaper2\n", (int)lk.l_pid,
			prefix != NULL ? prefix : "rte");
		return -1;
	}
	return 0;
}

static int
check_tx_pcap(const char *v)
{
	const char *p;

	for (p = strstr(v, "tx_pcap="); p != NULL;
	     p = strstr(p + 1, "tx_pcap=")) {
		char path[4096], dir[4096];
		size_t len = strcspn(p + 8, ",");

		if (len >= sizeof(path))
			len = sizeof(path) - 1;
		memcpy(path, p + 8, len);
		path[len] = '\0';
		snprintf(dir, sizeof(dir), "%s", path);
		if (access(path, F_OK) == 0 ? access(path, W_OK) != 0 :
		    access(dirname(dir), W_OK) != 0) {
			fprintf(stderr, "dpdk-shaper: tx_pcap %s: cannot write "
				"it: %s\n", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* net_pcap opens tx_pcap= at probe time and, if it cannot, the port is
 * just missing ("no ports"): say which file instead. */
int
shaper_check_tx_pcaps(int eal_argc, char **argv)
{
	int i;

	for (i = 1; i < eal_argc; i++) {
		const char *v = NULL;

		if (strcmp(argv[i], "--vdev") == 0 && i + 1 < eal_argc)
			v = argv[++i];
		else if (strncmp(argv[i], "--vdev=", 7) == 0)
			v = argv[i] + 7;
		if (v != NULL && check_tx_pcap(v) < 0)
			return -1;
	}
	return 0;
}

/*
 * The EAL's run directory (/var/run/dpdk/PREFIX, about 12 MB of memory
 * maps and sockets): rte_eal_cleanup() leaves it behind, so every run
 * would leave one. Removed after the cleanup, when nothing of ours uses
 * it; after a crash it remains (docs/usage.md).
 */
static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

void
shaper_run_dir_remove(const char *dir)
{
	if (dir[0] != '\0' &&
	    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 &&
	    errno != ENOENT)
		fprintf(stderr, "dpdk-shaper: warning: cannot remove %s: %s\n",
			dir, strerror(errno));
}
