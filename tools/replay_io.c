/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-replay's captures: the input read into mbufs and the
 * output written, each frame stamped with its departure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <pcap/pcap.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>

#include "classify.h"
#include "config.h"
#include "pcap_io.h"
#include "schedule.h"
#include "shp_meta.h"
#include "shp_pkthdr.h"
#include "shp_pool.h"
#include "shp_qdisc.h"
#include "shp_stats.h"
#include "shp_link.h"

#include "replay.h"

/* stdio buffer of the input and output captures */
#define IO_BUF_SIZE (1u << 20)

/* The latest time a pcap record can hold: unsigned 32-bit seconds. */
#define PCAP_SEC_MAX UINT32_MAX

/* ------------------------------------------------------------- input */

int
open_input(struct replay *r)
{
	char perr[PCAP_ERRBUF_SIZE];
	struct stat st;
	FILE *fp;
	int dlt;

	if (strcmp(r->in_path, "-") == 0) {
		if (isatty(STDIN_FILENO))
			return fail(EXIT_USAGE, "IN is `-` but standard input "
				    "is a terminal, not a capture");
		fp = stdin;
		goto opened;
	}
	if (stat(r->in_path, &st) == 0 && S_ISDIR(st.st_mode))
		return fail(EXIT_USAGE, "%s: is a directory, not a capture",
			    r->in_path);
	if (stat(r->in_path, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == 0)
		return fail(EXIT_USAGE, "%s: empty file, not a capture",
			    r->in_path);
	fp = fopen(r->in_path, "rb");
	if (fp == NULL)
		return fail(EXIT_USAGE, "%s: not a readable capture: %s",
			    r->in_path, strerror(errno));
opened:
	if (fstat(fileno(fp), &r->in_st) < 0)
		memset(&r->in_st, 0, sizeof(r->in_st));
	r->inbuf = malloc(IO_BUF_SIZE);
	if (r->inbuf != NULL)
		setvbuf(fp, r->inbuf, _IOFBF, IO_BUF_SIZE);
	r->in = pcap_fopen_offline_with_tstamp_precision(fp,
			PCAP_TSTAMP_PRECISION_NANO, perr);
	if (r->in == NULL) {
		if (fp != stdin)
			fclose(fp);
		return fail(EXIT_USAGE, "%s: not a readable capture: %s",
			    r->in_path, perr);
	}
	dlt = pcap_datalink(r->in);
	if (dlt != DLT_EN10MB)
		return fail(EXIT_USAGE, "%s: link type %s (%d) is not "
			    "Ethernet", r->in_path,
			    pcap_datalink_val_to_name(dlt) ?
			    pcap_datalink_val_to_name(dlt) : "?", dlt);
	r->snaplen = pcap_snapshot(r->in);
	if (r->snaplen < 65535)
		r->snaplen = 65535;
	if (r->snaplen > 262144)
		r->snaplen = 262144;
	return 0;
}

/* OUT names IN's file (a link, the same path, stdout redirected to it):
 * writing it would destroy the input. */
static bool
same_file(const struct replay *r, const struct stat *st)
{
	return r->in_st.st_ino != 0 && S_ISREG(st->st_mode) &&
	       st->st_dev == r->in_st.st_dev && st->st_ino == r->in_st.st_ino;
}

bool
replay_names_input(const struct replay *r, const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && same_file(r, &st);
}

/* OUT is written to a temporary name next to it and renamed when
 * complete, so a failed run leaves nothing (and an old OUT untouched).
 * A non-regular OUT (a FIFO, /dev/null) is written directly, `-` to
 * standard output. */
int
open_output(struct replay *r)
{
	const char *path = r->out_path;
	struct stat st;
	size_t len;
	FILE *fp;

	if (r->out_stdout) {
		if (isatty(STDOUT_FILENO))
			return fail(EXIT_USAGE, "OUT is `-` but standard "
				    "output is a terminal: redirect it or "
				    "pipe it (e.g. | tcpdump -r -)");
		if (fstat(STDOUT_FILENO, &st) == 0 && same_file(r, &st))
			return fail(EXIT_USAGE, "OUT (standard output) is the "
				    "input capture %s: refusing to overwrite "
				    "it", r->in_path);
		fp = stdout;
		goto opened;
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return fail(EXIT_USAGE, "%s: is a directory", path);
	if (stat(path, &st) == 0 && same_file(r, &st))
		return fail(EXIT_USAGE, "OUT %s is the same file as IN %s: "
			    "refusing to overwrite the input", path,
			    r->in_path);
	if (stat(path, &st) < 0 || S_ISREG(st.st_mode)) {
		len = strlen(path) + 32;
		r->tmp_path = malloc(len);
		if (r->tmp_path == NULL)
			return fail(EXIT_RUNTIME, "out of memory");
		snprintf(r->tmp_path, len, "%s.partial-%d", path,
			 (int)getpid());
		path = r->tmp_path;
	}
	fp = fopen(path, "wb");
	if (fp == NULL) {
		int code = fail(EXIT_USAGE, "%s: cannot write it: %s",
				r->out_path, strerror(errno));

		free(r->tmp_path);
		r->tmp_path = NULL;
		return code;
	}
opened:
	r->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB,
			r->snaplen, PCAP_TSTAMP_PRECISION_NANO);
	if (r->dead == NULL) {
		if (fp != stdout)
			fclose(fp);
		return fail(EXIT_RUNTIME, "cannot set up the output");
	}
	r->outbuf = malloc(IO_BUF_SIZE);
	if (r->outbuf != NULL)
		setvbuf(fp, r->outbuf, _IOFBF, IO_BUF_SIZE);
	r->dump = pcap_dump_fopen(r->dead, fp);
	if (r->dump == NULL) {
		if (fp != stdout) {
			fclose(fp);
			unlink(path);
		}
		free(r->tmp_path);
		r->tmp_path = NULL;
		return fail(EXIT_RUNTIME, "%s: cannot write it: %s",
			    r->out_path, pcap_geterr(r->dead));
	}
	return 0;
}

/* An mbuf chain holding len bytes of data; NULL if the pool is empty. */
struct rte_mbuf *
pkt_build(struct rte_mempool *mp, const uint8_t *data, uint32_t len)
{
	struct rte_mbuf *head, *seg;
	uint32_t off = 0;

	head = rte_pktmbuf_alloc(mp);
	if (head == NULL)
		return NULL;
	seg = head;
	for (;;) {
		uint32_t chunk = RTE_MIN((uint32_t)rte_pktmbuf_tailroom(seg),
					 len - off);

		memcpy(rte_pktmbuf_mtod(seg, uint8_t *), data + off, chunk);
		seg->data_len = (uint16_t)chunk;
		off += chunk;
		if (off == len)
			break;
		seg->next = rte_pktmbuf_alloc(mp);
		if (seg->next == NULL) {
			rte_pktmbuf_free(head);
			return NULL;
		}
		seg = seg->next;
		head->nb_segs++;
	}
	head->pkt_len = len;
	return head;
}

/* ------------------------------------------------------------ output */

/* Time from arrival to departure, split where the packet left tbf. */
static int
record_delay(struct replay *r, struct rte_mbuf *m)
{
	uint64_t rx = shp_meta(m)->rx_ns, d = r->now - rx;
	uint64_t left = *tap_time(m, r->tap_off);

	left = RTE_MIN(RTE_MAX(left, rx), r->now);
	if (dstat_push(&r->delay, d) < 0 ||
	    dstat_push(&r->queueing, left - rx) < 0 ||
	    dstat_push(&r->netem_delay, r->now - left) < 0)
		return -1;
	return 0;
}

int
emit(struct replay *r, unsigned int shard, struct rte_mbuf *m)
{
	uint32_t len = rte_pktmbuf_pkt_len(m);
	struct shp_meta *meta = shp_meta(m);
	struct pcap_pkthdr h;
	const void *data;

	if (len > r->linbuf_len) {
		uint8_t *b = realloc(r->linbuf, len);

		if (b == NULL)
			return -1;
		r->linbuf = b;
		r->linbuf_len = len;
	}
	data = rte_pktmbuf_read(m, 0, len, r->linbuf);
	memset(&h, 0, sizeof(h));
	if (r->now / REPLAY_NS_PER_S > PCAP_SEC_MAX) {
		/* a pcap record holds 32-bit seconds: the end of 2106 is
		 * the latest time it can say, never a wrapped early one */
		h.ts.tv_sec = (time_t)PCAP_SEC_MAX;
		h.ts.tv_usec = (suseconds_t)(REPLAY_NS_PER_S - 1);
		r->saturated++;
	} else {
		h.ts.tv_sec = (time_t)(r->now / REPLAY_NS_PER_S);
		/* ns: NANO dump */
		h.ts.tv_usec = (suseconds_t)(r->now % REPLAY_NS_PER_S);
	}
	h.caplen = len;
	h.len = len;
	pcap_dump((u_char *)r->dump, &h, data);
	if (r->out_pkts == 0)
		r->first_out = r->now;
	r->last_out = r->now;
	r->out_pkts++;
	r->out_bytes += len;
	rcap_sent(r, m);
	if (meta->rx_ns < r->max_rx_out)
		r->out_of_order++;
	else
		r->max_rx_out = meta->rx_ns;
	latency_record(r, shard, meta);
	replay_trace_departure(r, meta);
	return record_delay(r, m);
}
