/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The carrier of a net_tap port's kernel side, as a pulled cable takes
 * it: `ip link` shows NO-CARRIER while the interface stays up.
 * rte_eth_dev_set_link_down would take the interface administratively
 * down instead (state DOWN), which is the host's own setting, not what a
 * device under test sees of its link.
 */
#ifndef CARRIER_TAP_H
#define CARRIER_TAP_H

#include <stdbool.h>
#include <stdint.h>

/* Port p's carrier down or up: 0, or -ENOTSUP when p is not a net_tap
 * port (the caller uses ethdev's), or another -errno. Main lcore. */
int carrier_tap_set(uint16_t p, bool down);

#endif
