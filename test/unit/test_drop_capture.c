/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The drop capture (lib/core/drop_capture.c, pcapng_write.c): the drop
 * funnel hands each dropped frame to a producer once, with its cause; a
 * live producer's records go round without loss until they run out,
 * then each drop is counted lost; the pcapng file is what the format
 * says, bounded by its limit to whole blocks.
 */
#define _GNU_SOURCE   /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "drop_capture.h"
#include "pcapng_write.h"
#include "shp_qdisc.h"
#include "shp_rig.h"

struct seen {
	unsigned int n;
	struct {
		unsigned int slot, band, caplen, len, port, shard;
		uint64_t t;
		uint8_t first;
		bool copy;
	} r[64];
};

static void
on_drop(void *arg, const struct shp_caprec *rec, struct rte_mbuf *m)
{
	struct seen *s = arg;

	assert_non_null(m);
	assert_true(s->n < RTE_DIM(s->r));
	s->r[s->n].slot = rec->slot;
	s->r[s->n].band = rec->band;
	s->r[s->n].caplen = rec->caplen;
	s->r[s->n].len = rec->orig_len;
	s->r[s->n].port = rec->port;
	s->r[s->n].shard = rec->shard;
	s->r[s->n].t = rec->time_ns;
	s->r[s->n].first = rec->data[0];
	s->r[s->n].copy = rec->copy;
	s->n++;
}

/* The funnel: counted and captured once each, with its cause and tag;
 * without a producer only counted. */
static void
test_funnel(void **state)
{
	struct seen seen = { 0 };
	struct shp_dropcap *c = shp_dropcap_new_direct(100, on_drop, &seen);
	struct shp_port_ctr ctr = { 0 };
	struct shp_ctx ctx = { .ctr = &ctr, .now = 777, .cap = c,
			       .tag = { .port = 3, .shard = 2 } };
	struct rte_mbuf *pkts[4];
	unsigned int i;

	(void)state;
	assert_non_null(c);
	for (i = 0; i < 4; i++)
		pkts[i] = shp_rig_pkt(60 + 100 * i, (uint8_t)(0x10 + i), 0);
	shp_drop_burst(&ctx, SHP_DROP_LATE, pkts, 3);
	shp_drop(&ctx, SHP_DROP_OVERSIZE, pkts[3]);
	assert_int_equal(ctr.drops[SHP_DROP_LATE], 3);
	assert_int_equal(ctr.drops[SHP_DROP_OVERSIZE], 1);
	assert_int_equal(seen.n, 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(seen.r[i].slot, i < 3 ? SHP_DROP_LATE :
				 SHP_DROP_OVERSIZE);
		assert_int_equal(seen.r[i].len, 60 + 100 * i);
		assert_int_equal(seen.r[i].caplen, RTE_MIN(100u, 60 + 100 * i));
		assert_int_equal(seen.r[i].first, 0x10 + i);
		assert_int_equal(seen.r[i].port, 3);
		assert_int_equal(seen.r[i].shard, 2);
		assert_int_equal(seen.r[i].band, SHP_CAP_NO_BAND);
		assert_int_equal(seen.r[i].t, 777);
	}
	/* off: counted, nothing handed over */
	ctx.cap = NULL;
	pkts[0] = shp_rig_pkt(64, 0, 0);
	shp_drop(&ctx, SHP_DROP_LATE, pkts[0]);
	assert_int_equal(ctr.drops[SHP_DROP_LATE], 4);
	assert_int_equal(seen.n, 4);
	shp_dropcap_free(c);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/* A live producer: records queue in order; when none is free each drop
 * is lost (counted by port), and records handed back serve again. */
static void
test_ring(void **state)
{
	struct shp_dropcap *c = shp_dropcap_new(64, SOCKET_ID_ANY);
	struct shp_captag tag = { .port = 1, .shard = 0 };
	struct shp_caprec *recs[256];
	struct rte_mbuf *m;
	unsigned int n = 0, k, got;

	(void)state;
	assert_non_null(c);
	/* until the records run out */
	while (c->lost[1] == 0) {
		m = shp_rig_pkt(200, (uint8_t)n, 0);
		shp_dropcap_put(c, &tag, n, 5, 1, &m, 1);
		rte_pktmbuf_free(m);
		n++;
		assert_true(n < 100000);
	}
	n--;   /* the last found none */
	assert_true(n >= 64);
	assert_int_equal(c->lost[0], 0);
	for (k = 0; k < n; k += got) {
		unsigned int i;

		got = shp_dropcap_take(c, recs, RTE_DIM(recs));
		assert_true(got > 0);
		for (i = 0; i < got; i++) {
			assert_int_equal(recs[i]->time_ns, k + i);
			assert_int_equal(recs[i]->caplen, 64);
			assert_int_equal(recs[i]->orig_len, 200);
			assert_int_equal(recs[i]->data[0], (uint8_t)(k + i));
			assert_int_equal(recs[i]->data[63], (uint8_t)(k + i));
			assert_int_equal(recs[i]->slot, 5);
			assert_int_equal(recs[i]->band, 1);
		}
		shp_dropcap_give(c, recs, got);
	}
	assert_int_equal(k, n);
	assert_int_equal(shp_dropcap_take(c, recs, 1), 0);
	/* free again */
	m = shp_rig_pkt(30, 0xab, 0);
	shp_dropcap_put(c, &tag, 1, 5, SHP_CAP_NO_BAND, &m, 1);
	rte_pktmbuf_free(m);
	assert_int_equal(c->lost[1], 1);
	assert_int_equal(shp_dropcap_take(c, recs, 4), 1);
	assert_int_equal(recs[0]->caplen, 30);
	shp_dropcap_give(c, recs, 1);
	shp_dropcap_account(c);
	assert_int_equal(shp_capture_counts[1].lost, 1);
	shp_dropcap_account(c);   /* counted once */
	assert_int_equal(shp_capture_counts[1].lost, 1);
	shp_dropcap_free(c);
	shp_rig_assert_pool_full(shp_rig_pool);
}

static uint32_t
le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The file: a section header, an interface per port with if_tsresol 9,
 * an enhanced packet block per frame with its comment; the limit ends
 * it after the last whole block and counts the rest lost. */
static void
test_pcapng(void **state)
{
	char path[] = "/tmp/shp_test_pcapngXXXXXX";
	uint8_t buf[4096];
	union {
		struct shp_caprec h;
		uint8_t raw[sizeof(struct shp_caprec) + 64];
	} rec;
	struct shp_pcapng w;
	char err[256], comment[128];
	size_t len, off;
	unsigned int epb = 0, idb = 0, i;
	FILE *f;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(shp_pcapng_open(&w, path, 2, 64, 600, false, err,
					 sizeof(err)), 0);
	/* a command's capture makes its file: this one exists */
	{
		struct shp_pcapng w2;

		assert_int_equal(shp_pcapng_open(&w2, path, 1, 64, 600, true,
						 err, sizeof(err)), -1);
		assert_non_null(strstr(err, "exists"));
	}
	rec.h.slot = SHP_DROP_OVERSIZE;
	rec.h.port = 1;
	rec.h.shard = 3;
	rec.h.band = SHP_CAP_NO_BAND;
	snprintf(rec.h.cls, sizeof(rec.h.cls), "web");
	rec.h.caplen = 61;
	rec.h.orig_len = 1600;
	for (i = 0; i < 10; i++) {
		rec.h.time_ns = UINT64_C(0x100000005) + i;
		memset(rec.h.data, (int)i, 64);
		shp_pcapng_write(&w, &rec.h);
	}
	assert_true(w.written >= 2 && w.written < 10);
	assert_int_equal(w.written + w.lost, 10);
	assert_true(w.full);
	assert_int_equal(shp_pcapng_close(&w), 0);
	f = fopen(path, "rb");
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	unlink(path);
	assert_true(len <= 600);
	assert_int_equal(le32(buf), 0x0A0D0D0A);
	assert_int_equal(le32(buf + 8), 0x1A2B3C4D);
	shp_pcapng_comment(&rec.h, comment, sizeof(comment));
	assert_string_equal(comment, "cause=oversize port=1 shard=3 "
			    "class=web");
	for (off = 0; off < len; ) {
		uint32_t type = le32(buf + off), bl = le32(buf + off + 4);

		assert_true(bl % 4 == 0 && off + bl <= len);
		assert_int_equal(le32(buf + off + bl - 4), bl);
		if (type == 1) {
			/* if_tsresol 9 among its options */
			assert_non_null(memmem(buf + off + 16, bl - 20,
					       "\x09\x00\x01\x00\x09", 5));
			idb++;
		} else if (type == 6) {
			const uint8_t *b = buf + off + 8;

			assert_int_equal(le32(b), 1);
			assert_int_equal(le32(b + 4), 1);
			assert_int_equal(le32(b + 8), 5 + epb);
			assert_int_equal(le32(b + 12), 61);
			assert_int_equal(le32(b + 16), 1600);
			assert_int_equal(b[20], epb);
			assert_non_null(memmem(b + 20, bl - 28, comment,
					       strlen(comment)));
			epb++;
		}
		off += bl;
	}
	assert_int_equal(off, len);
	assert_int_equal(idb, 2);
	assert_int_equal(epb, w.written);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_funnel),
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_pcapng),
	};

	shp_rig_env("dropcap", 4096);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
