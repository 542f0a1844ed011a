/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The capture check of the program and the offline tool (lib/pkt/pcap_io.c,
 * over libpcap) on arbitrary files: a count, or a one-line refusal.
 */
#include "fuzz_common.h"
#include "pcap_io.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	char err[SHP_ERR_LEN];
	uint64_t n = UINT64_MAX;

	err[0] = '\0';
	if (shp_pcap_check(path, &n, err) < 0) {
		if (err[0] == '\0')
			FUZZ_BUG("refused without a reason");
		return 0;
	}
	/* a record has a 16-byte header at least, after a 24-byte file
	 * header (pcapng blocks are bigger) */
	if (n > size / 16)
		FUZZ_BUG("%" PRIu64 " packets in %zu bytes", n, size);
	return 0;
}
