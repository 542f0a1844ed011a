/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <pcap/pcap.h>

#include "pcap_io.h"
#include "shp_file.h"

int
shp_pcap_check(const char *path, uint64_t *packets, char *err)
{
	char perr[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	uint64_t n = 0;
	pcap_t *p;
	FILE *f;
	int rc, fd;

	/* read whole before the start: a FIFO would be drained (or wait
	 * for a writer), a device would not end */
	fd = shp_file_fd("", path, SIZE_MAX, err);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "rb");
	if (f == NULL) {
		snprintf(err, SHP_ERR_LEN, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	p = pcap_fopen_offline_with_tstamp_precision(f,
			PCAP_TSTAMP_PRECISION_NANO, perr);
	if (p == NULL) {
		fclose(f);
		snprintf(err, SHP_ERR_LEN, "%s: not a readable capture: %s",
			 path, perr);
		return -1;
	}
	if (pcap_datalink(p) != DLT_EN10MB) {
		snprintf(err, SHP_ERR_LEN, "%s: link type %s (%d) is not "
			 "Ethernet", path,
			 pcap_datalink_val_to_name(pcap_datalink(p)) ?
			 pcap_datalink_val_to_name(pcap_datalink(p)) : "?",
			 pcap_datalink(p));
		pcap_close(p);
		return -1;
	}
	while ((rc = pcap_next_ex(p, &h, &data)) == 1)
		n++;
	if (rc == PCAP_ERROR) {
		snprintf(err, SHP_ERR_LEN, "%s: broken after %" PRIu64
			 " packets: %s", path, n, pcap_geterr(p));
		pcap_close(p);
		return -1;
	}
	pcap_close(p);
	*packets = n;
	return 0;
}

int
shp_pcap_time_ns(pcap_t *p, const struct pcap_pkthdr *h, uint64_t *ns)
{
	uint64_t sec;

	/* libpcap reports pcapng as version 1, pcap as 2 */
	if (pcap_major_version(p) == 2)
		sec = (uint32_t)h->ts.tv_sec;
	else if (h->ts.tv_sec < 0)
		return -1;
	else
		sec = (uint64_t)h->ts.tv_sec;
	/* tv_usec holds nanoseconds (< 1e9) at nanosecond precision */
	if (sec > SHP_PCAP_TIME_LIMIT / 1000000000u)
		return -1;
	*ns = sec * 1000000000u + (uint64_t)h->ts.tv_usec;
	return *ns < SHP_PCAP_TIME_LIMIT ? 0 : -1;
}
