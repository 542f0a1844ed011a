/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where anonymous memory of a port's stages lives.
 *
 * The delay line's large regions (the calendar's chunks, the byte store)
 * are mmap()ed, not taken from the DPDK heap, so that only the pages the
 * packets in flight touch are committed. The kernel places such a page on
 * the node of the CPU that first touches it, which is the right node only
 * by luck: the owner lcore may run on another socket than the port's
 * pool. These regions ask for the pool's node instead.
 */
#ifndef SHP_NUMA_H
#define SHP_NUMA_H

#include <stddef.h>

/**
 * Ask that the pages of [addr, addr + len) come from NUMA node `socket`
 * (DPDK's socket id is the node id on Linux) when they are first touched.
 * Preferred, not bound: a node with no free page left falls back to
 * another rather than failing a page fault on the packet path.
 *
 * @param addr  page-aligned start of an anonymous mapping
 * @param socket  the node; < 0 (SOCKET_ID_ANY) asks for nothing
 * @return 0, or -errno: -EINVAL for a node out of range, -ENOSYS on a
 *   kernel without NUMA. The memory works either way: callers ignore a
 *   failure (a placement hint, not a condition of running).
 */
int shp_numa_prefer(void *addr, size_t len, int socket);

#endif
