/* SPDX-License-Identifier: BSD-3-Clause */
/* Capture files: checks before a replay, shared by the app and tools. */
#ifndef SHP_PCAP_IO_H
#define SHP_PCAP_IO_H

#include <stdint.h>

#include "shp_units.h"

/*
 * Read a whole capture (pcap or pcapng) and refuse what net_pcap would
 * replay wrongly or partly: unreadable, not a capture, a link type other
 * than Ethernet, a truncated last record. 0 with *packets set, or -1 with
 * a one-line err.
 */
int shp_pcap_check(const char *path, uint64_t *packets, char *err);

#endif
