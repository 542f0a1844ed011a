/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How: TUNSETCARRIER, on a queue of our own attached to the tap (DPDK's
 * tap driver makes it multi-queue; its own file descriptors are not
 * ours to use). The queue is held while the carrier is down, when the
 * kernel sends nothing to any queue, and closed once it is back up.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_tun.h>
#include <rte_ethdev.h>

#include "carrier_tap.h"
#include "shaper.h"

static int queue_fd[SHP_MAX_PORTS];   /* +1: 0 is none */

static int
tap_name(uint16_t p, char *name)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(p, &info) != 0 || info.driver_name == NULL ||
	    strcmp(info.driver_name, "net_tap") != 0 || info.if_index == 0)
		return -ENOTSUP;
	if (if_indextoname(info.if_index, name) == NULL)
		return -errno;
	return 0;
}

static int
queue_open(const char *name)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

int
carrier_tap_set(uint16_t p, bool down)
{
	char name[IF_NAMESIZE];
	int on = !down, fd, rc;

	if (p >= SHP_MAX_PORTS)
		return -EINVAL;
	rc = tap_name(p, name);
	if (rc < 0)
		return rc;
	fd = queue_fd[p] - 1;
	if (fd < 0) {
		if (!down)
			return 0;   /* never taken down here */
		fd = queue_open(name);
		if (fd < 0)
			return fd;
		queue_fd[p] = fd + 1;
	}
	rc = ioctl(fd, TUNSETCARRIER, &on) < 0 ? -errno : 0;
	if (!down || rc < 0) {
		close(fd);
		queue_fd[p] = 0;
	}
	return rc;
}
