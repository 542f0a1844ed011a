/* SPDX-License-Identifier: BSD-3-Clause */
/* Capture files: checks before a replay, shared by the app and tools. */
#ifndef SHP_PCAP_IO_H
#define SHP_PCAP_IO_H

#include <stdint.h>
#include <pcap/pcap.h>

#include "shp_units.h"

/* Record times are refused from here on (year 2262): below it, a time
 * plus any delay or interval the stages hold (int64 ns) cannot wrap. */
#define SHP_PCAP_TIME_LIMIT (UINT64_C(1) << 63)

/*
 * Read a whole capture (pcap or pcapng) and refuse what net_pcap would
 * replay wrongly or partly: unreadable, not a capture, a link type other
 * than Ethernet, a truncated last record. 0 with *packets set, or -1 with
 * a one-line err.
 */
int shp_pcap_check(const char *path, uint64_t *packets, char *err);

/*
 * The time of record h, in ns since the epoch, from a capture opened with
 * PCAP_TSTAMP_PRECISION_NANO. A pcap file holds unsigned 32-bit seconds
 * (valid until 2106) that libpcap hands over sign-extended: they are taken
 * unsigned. pcapng holds 64-bit times. 0, or -1 if the time is at or past
 * SHP_PCAP_TIME_LIMIT.
 */
int shp_pcap_time_ns(pcap_t *p, const struct pcap_pkthdr *h, uint64_t *ns);

#endif
