/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-shaper-replay's drop capture and packet log (issue 60).
 *
 * --capture-drops: the stages hand each frame they drop to a direct
 * producer (drop_capture.h) whose function writes it to the pcapng file
 * at once: offline nothing is lost, and the file's counts by cause are
 * the stats file's.
 *
 * --packet-log: one line per input frame, written at the end from what
 * was kept for each (its arrival, its fate, what happened to it on the
 * way), in the order of the input. A frame is known by an mbuf field
 * holding its index, which netem's copies carry: a copy marks its
 * original duplicated and changes no fate.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_errno.h>
#include <rte_hash_crc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include "class_match.h"
#include "shp_classes.h"
#include "shp_pkthdr.h"
#include "replay.h"

#define FATE_PENDING 0xff    /* neither sent nor seen dropped (yet) */
#define FATE_SENT    0xfe

#define PL_DUP     0x01
#define PL_CORRUPT 0x02
#define PL_REORDER 0x04
#define PL_ECN     0x08

struct plog_ent {
	uint64_t arrival;
	uint64_t done;        /* departure, or the drop's instant */
	uint32_t crc;         /* the frame but its ECN bits and checksum */
	uint16_t cls;         /* SHP_MATCH_NONE: the port's own */
	uint8_t shard;
	uint8_t band;
	uint8_t fate;         /* a drop slot, FATE_SENT or FATE_PENDING */
	uint8_t flags;        /* PL_* */
	uint8_t ecn;          /* the ECN bits it arrived with */
};

static int idx_off = -1;

static inline uint64_t *
frame_idx(struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, idx_off, uint64_t *);
}

/* What a marking may change (the ECN bits, an IPv4 checksum) left out:
 * a frame whose digest moved was corrupted. */
static uint32_t
frame_digest(struct replay *r, struct rte_mbuf *m, uint8_t *ecn)
{
	uint32_t len = rte_pktmbuf_pkt_len(m);
	struct shp_pkthdr h;
	uint8_t *b;

	if (len > r->cap.buf_len) {
		uint8_t *nb = realloc(r->cap.buf, len);

		if (nb == NULL)
			return 0;
		r->cap.buf = nb;
		r->cap.buf_len = len;
	}
	b = r->cap.buf;
	memcpy(b, rte_pktmbuf_read(m, 0, len, b), len);
	shp_pkthdr_parse(m, &h, SHP_PKTHDR_L3);
	*ecn = (uint8_t)shp_pkthdr_ecn(&h);
	if (h.l3_type == SHP_PKTHDR_IPV4 && h.l3_off + 12u <= len) {
		b[h.l3_off + 1] &= ~3;
		b[h.l3_off + 10] = b[h.l3_off + 11] = 0;
	} else if (h.l3_type == SHP_PKTHDR_IPV6 && h.l3_off + 2u <= len) {
		b[h.l3_off + 1] &= ~0x30;
	}
	return rte_hash_crc(b, len, 0);
}

/* ------------------------------------------------------------ drops */

static void
on_drop(void *arg, const struct shp_caprec *rec, struct rte_mbuf *m)
{
	struct replay *r = arg;
	struct plog_ent *e;
	uint64_t i;

	if (r->cap.w.f != NULL)
		shp_pcapng_write(&r->cap.w, rec);
	if (r->cap.ents == NULL)
		return;
	/* no mbuf: the frame being read */
	i = m != NULL ? *frame_idx(m) : r->in_pkts - 1;
	if (i >= r->cap.nb_ents)
		return;
	e = &r->cap.ents[i];
	if (rec->copy || (m != NULL &&
			  (shp_meta(m)->flags & SHP_META_F_DUP))) {
		e->flags |= PL_DUP;
		return;
	}
	e->fate = rec->slot;
	e->done = rec->time_ns;
}

int
rcap_parse(struct replay *r, int opt, const char *arg)
{
	char err[SHP_ERR_LEN];
	uint64_t v;

	switch (opt) {
	case RCAP_OPT_DROPS:
		r->cap.drops_path = arg;
		return 0;
	case RCAP_OPT_LOG:
		r->cap.log_path = arg;
		return 0;
	case RCAP_OPT_SNAPLEN:
		if (shp_capture_parse_snaplen(arg, &r->cap.snaplen, err) < 0)
			return fail(EXIT_USAGE, "--capture-snaplen: %s", err);
		return 0;
	case RCAP_OPT_LIMIT:
		if (shp_capture_parse_limit(arg, &v, err) < 0)
			return fail(EXIT_USAGE, "--capture-limit: %s", err);
		r->cap.limit = v;
		return 0;
	}
	return fail(EXIT_USAGE, "internal error: option %d", opt);
}

/* Before the run, after the options: the files can be written (else a
 * usage error and nothing run). */
int
rcap_open(struct replay *r)
{
	char err[SHP_ERR_LEN + PATH_MAX];

	if (r->cap.snaplen == 0)
		r->cap.snaplen = SHP_CAP_SNAPLEN_DEFAULT;
	if (r->cap.limit == 0)
		r->cap.limit = SHP_CAP_LIMIT_DEFAULT;
	/* neither may take the place of IN, OUT or the other */
	if (r->cap.drops_path != NULL &&
	    (replay_names_input(r, r->cap.drops_path) ||
	     strcmp(r->cap.drops_path, r->out_path) == 0 ||
	     (r->cap.log_path != NULL &&
	      strcmp(r->cap.drops_path, r->cap.log_path) == 0)))
		return fail(EXIT_USAGE, "--capture-drops %s: is the input, "
			    "the output or the packet log", r->cap.drops_path);
	if (r->cap.log_path != NULL &&
	    (replay_names_input(r, r->cap.log_path) ||
	     strcmp(r->cap.log_path, r->out_path) == 0))
		return fail(EXIT_USAGE, "--packet-log %s: is the input or the "
			    "output", r->cap.log_path);
	if (r->cap.log_path != NULL) {
		r->cap.log = fopen(r->cap.log_path, "w");
		if (r->cap.log == NULL)
			return fail(EXIT_USAGE, "--packet-log %s: cannot "
				    "write it: %s", r->cap.log_path,
				    strerror(errno));
	}
	if (r->cap.drops_path != NULL &&
	    shp_pcapng_open(&r->cap.w, r->cap.drops_path, 1, r->cap.snaplen,
			    r->cap.limit, false, err, sizeof(err)) < 0)
		return fail(EXIT_USAGE, "--capture-drops %s", err);
	return 0;
}

/* Once the stages are made (EAL up): the producer on every shard's
 * ctx, the frame index field, the class lookup. */
int
rcap_start(struct replay *r)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = "shp_replay_frame",
		.size = sizeof(uint64_t),
		.align = __alignof__(uint64_t),
	};
	char err[SHP_ERR_LEN];
	unsigned int q;

	if (r->cap.drops_path == NULL && r->cap.log == NULL)
		return 0;
	r->cap.dc = shp_dropcap_new_direct(r->cap.snaplen, on_drop, r);
	if (r->cap.dc == NULL)
		return fail(EXIT_RUNTIME, "out of memory");
	for (q = 0; q < r->queues; q++) {
		r->ctx[q].cap = r->cap.dc;
		r->ctx[q].tag = (struct shp_captag){ .port = 0,
						     .shard = (uint16_t)q };
	}
	if (r->cap.log == NULL)
		return 0;
	idx_off = rte_mbuf_dynfield_register(&desc);
	if (idx_off < 0)
		return fail(EXIT_RUNTIME, "cannot register an mbuf field: %s",
			    rte_strerror(rte_errno));
	if (r->opt.classes != NULL) {
		r->cap.match = shp_match_table_create(r->opt.classes->match,
						      rte_socket_id(), err);
		if (r->cap.match == NULL)
			return fail(EXIT_RUNTIME, "%s", err);
	}
	return 0;
}

/* Frame index i (the capture's, from 0) arrives as m at t on shard q,
 * band band. 0, or -1 out of memory. */
int
rcap_arrival(struct replay *r, struct rte_mbuf *m, uint64_t t,
	     unsigned int q, uint8_t band)
{
	uint64_t i = r->in_pkts - 1;
	struct plog_ent *e;

	if (r->cap.log == NULL)
		return 0;
	if (i >= r->cap.cap_ents) {
		size_t n = r->cap.cap_ents ? r->cap.cap_ents * 2 : 4096;
		struct plog_ent *ne = realloc(r->cap.ents, n * sizeof(*ne));

		if (ne == NULL)
			return -1;
		r->cap.ents = ne;
		r->cap.cap_ents = n;
	}
	e = &r->cap.ents[i];
	memset(e, 0, sizeof(*e));
	e->arrival = t;
	e->fate = FATE_PENDING;
	e->cls = SHP_MATCH_NONE;
	e->shard = (uint8_t)q;
	e->band = band;
	r->cap.nb_ents = i + 1;
	if (m == NULL)
		return 0;
	*frame_idx(m) = i;
	e->crc = frame_digest(r, m, &e->ecn);
	/* a frame dropped before the chain (oversize) met no class */
	if (r->cap.match != NULL && band != SHP_CAP_NO_BAND)
		shp_match_lookup_burst(r->cap.match, &m, 1, &e->cls);
	return 0;
}

/* m leaves at r->now (before the replay counts it out of order). */
void
rcap_sent(struct replay *r, struct rte_mbuf *m)
{
	struct plog_ent *e;
	uint64_t i;
	uint8_t ecn;

	if (r->cap.log == NULL)
		return;
	i = *frame_idx(m);
	if (i >= r->cap.nb_ents)
		return;
	e = &r->cap.ents[i];
	if (shp_meta(m)->flags & SHP_META_F_DUP) {
		e->flags |= PL_DUP;
		return;
	}
	e->fate = FATE_SENT;
	e->done = r->now;
	if (frame_digest(r, m, &ecn) != e->crc)
		e->flags |= PL_CORRUPT;
	if (ecn == 3 && e->ecn != 3)
		e->flags |= PL_ECN;
	if (shp_meta(m)->rx_ns < r->max_rx_out)
		e->flags |= PL_REORDER;
}

/* The frame being read found no mbuf: its fate, no_mbuf. */
void
rcap_no_mbuf(struct replay *r)
{
	if (r->cap.log != NULL && r->in_pkts - 1 < r->cap.nb_ents)
		r->cap.ents[r->in_pkts - 1].fate = SHP_DROP_NO_MBUF;
}

static const char *
class_name(const struct replay *r, uint16_t cls)
{
	if (cls == SHP_MATCH_NONE || r->opt.classes == NULL)
		return "";
	return shp_match_set_name(r->opt.classes->match, cls);
}

static int
write_log(struct replay *r)
{
	FILE *f = r->cap.log;
	uint64_t i;

	fprintf(f, "index,arrival_ns,port,shard,class,band,fate,"
		"departure_ns,sojourn_ns,dropped_ns,duplicated,corrupted,"
		"reordered,ecn_marked\n");
	for (i = 0; i < r->cap.nb_ents; i++) {
		const struct plog_ent *e = &r->cap.ents[i];
		const char *fate;

		/* what no stage gave back was freed at the end (flushed
		 * from a delay queue, which names no frame) */
		if (e->fate == FATE_SENT)
			fate = "sent";
		else if (e->fate == FATE_PENDING)
			fate = shp_drop_names[SHP_DROP_FLUSHED];
		else
			fate = shp_drop_names[e->fate];
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",0,%u,%s,", i,
			e->arrival, e->shard, class_name(r, e->cls));
		if (e->band != SHP_CAP_NO_BAND)
			fprintf(f, "%u", e->band);
		fprintf(f, ",%s,", fate);
		if (e->fate == FATE_SENT)
			fprintf(f, "%" PRIu64 ",%" PRIu64 ",,", e->done,
				e->done - e->arrival);
		else if (e->fate == FATE_PENDING)
			fprintf(f, ",,,");
		else
			fprintf(f, ",,%" PRIu64 ",", e->done);
		fprintf(f, "%d,%d,%d,%d\n", !!(e->flags & PL_DUP),
			!!(e->flags & PL_CORRUPT), !!(e->flags & PL_REORDER),
			!!(e->flags & PL_ECN));
	}
	return ferror(f) ? -1 : 0;
}

/* After the run: write the log, close both files. ok: the run went to
 * its end (else the files are removed). 0, or a failure's exit code. */
int
rcap_finish(struct replay *r, bool ok)
{
	int code = 0;

	if (r->cap.log != NULL) {
		if (ok && write_log(r) < 0)
			code = fail(EXIT_RUNTIME, "--packet-log %s: write "
				    "error", r->cap.log_path);
		if (fclose(r->cap.log) != 0 && code == 0 && ok)
			code = fail(EXIT_RUNTIME, "--packet-log %s: write "
				    "error: %s", r->cap.log_path,
				    strerror(errno));
		r->cap.log = NULL;
		if (!ok)
			unlink(r->cap.log_path);
	}
	if (r->cap.w.f != NULL) {
		if (shp_pcapng_close(&r->cap.w) < 0 && code == 0 && ok)
			code = fail(EXIT_RUNTIME, "--capture-drops %s: write "
				    "error", r->cap.drops_path);
		if (!ok)
			unlink(r->cap.drops_path);
	}
	return code;
}

void
rcap_release(struct replay *r)
{
	unsigned int q;

	for (q = 0; q < REPLAY_MAX_QUEUES; q++)
		r->ctx[q].cap = NULL;
	shp_dropcap_free(r->cap.dc);
	r->cap.dc = NULL;
	shp_match_table_free(r->cap.match);
	r->cap.match = NULL;
	free(r->cap.ents);
	r->cap.ents = NULL;
	free(r->cap.buf);
	r->cap.buf = NULL;
}
