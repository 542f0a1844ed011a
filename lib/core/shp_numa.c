/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <numaif.h>

#include "shp_numa.h"

/* RTE_MAX_NUMA_NODES of Debian's DPDK is 8; the mask's size is the
 * kernel's limit on the node id we can name, not the machine's */
#define MASK_WORDS 16

int
shp_numa_prefer(void *addr, size_t len, int socket)
{
	unsigned long mask[MASK_WORDS] = { 0 };
	const unsigned int bits = sizeof(mask) * 8;

	if (socket < 0)
		return 0;
	if ((unsigned int)socket >= bits)
		return -EINVAL;
	mask[socket / (8 * sizeof(mask[0]))] =
		1UL << (socket % (8 * sizeof(mask[0])));
	/* maxnode counts one more than the bits the kernel reads */
	if (mbind(addr, len, MPOL_PREFERRED, mask, bits + 1, 0) < 0)
		return -errno;
	return 0;
}
