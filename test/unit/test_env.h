/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared set-up for the C unit tests: an EAL without hugepages, PCI or
 * shared config (so tests run side by side), and an mbuf pool with our
 * private area.
 */
#ifndef SHP_TEST_ENV_H
#define SHP_TEST_ENV_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_lcore.h>
#include <rte_errno.h>

#include "shp_meta.h"

static char test_run_dir[PATH_MAX];

/* The EAL makes /var/run/dpdk/PREFIX (files only) even with --no-shconf,
 * and leaves it: a test run must not. */
static void
test_run_dir_remove(void)
{
	DIR *d = opendir(test_run_dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(test_run_dir);
}

static inline void
test_eal_init(const char *name)
{
	char prefix[64];
	char *argv[] = {
		(char *)name, "--no-huge", "--no-pci", "--no-shconf",
		"-m", "512", "--log-level=error", "-l", "0", prefix, NULL
	};

	snprintf(prefix, sizeof(prefix), "--file-prefix=t_%s_%d", name,
		 (int)getpid());
	if (rte_eal_init(10, argv) < 0) {
		fprintf(stderr, "%s: rte_eal_init failed\n", name);
		exit(1);
	}
	snprintf(test_run_dir, sizeof(test_run_dir), "%s",
		 rte_eal_get_runtime_dir());
	atexit(test_run_dir_remove);
}

static inline struct rte_mempool *
test_pool(const char *name, unsigned int n)
{
	struct rte_mempool *mp;

	mp = rte_pktmbuf_pool_create(name, n, 0, SHP_MBUF_PRIV_SIZE,
				     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (mp == NULL) {
		fprintf(stderr, "pool %s: %s\n", name,
			rte_strerror(rte_errno));
		exit(1);
	}
	return mp;
}

/* An mbuf of `len` bytes, payload filled with `fill`, meta initialised. */
static inline struct rte_mbuf *
test_pkt(struct rte_mempool *mp, uint16_t len, uint8_t fill, uint64_t now)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	char *p;

	if (m == NULL)
		return NULL;
	p = rte_pktmbuf_append(m, len);
	if (p == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(p, fill, len);
	shp_meta_init(m, now);
	return m;
}

#endif
