/* SPDX-License-Identifier: BSD-3-Clause */
/* The band stage: strict priority, FIFO, bitmap vs scan, full rings,
 * the byte limit's pushout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "classify.h"
#include "sch_bands.h"
#include "shp_kind.h"
#include "shp_netem.h"
#include "shp_tbf.h"
#include "shp_rig.h"

static unsigned int seq;

/* A rig of the bands alone, the clock at 1. */
static struct shp_qdisc *
mkbands(struct shp_rig *r, unsigned int nb, unsigned int ring)
{
	char spec[64];

	snprintf(spec, sizeof(spec), "bands %u ring %u", nb, ring);
	shp_rig_chain(r, spec);
	r->ctx.now = 1;
	return r->root;
}

/* A packet in band b carrying a sequence number in its first bytes. */
static struct rte_mbuf *
pkt(uint8_t band, uint16_t len)
{
	struct rte_mbuf *m;

	shp_rig_pkts(&m, 1, len, band, NULL, 0);
	*rte_pktmbuf_mtod(m, uint32_t *) = seq++;
	return m;
}

static uint32_t
seqof(struct rte_mbuf *m)
{
	return *rte_pktmbuf_mtod(m, uint32_t *);
}

static void
test_strict_priority_fifo(void **state)
{
	struct shp_rig r;
	struct shp_qdisc *q = mkbands(&r, 3, 256);
	struct rte_mbuf *in[90], *out[128];
	uint32_t last[3] = {0};
	int i, n, seen_band = 0;

	(void)state;
	/* interleave bands 2,1,0 */
	for (i = 0; i < 90; i++)
		in[i] = pkt(2 - i % 3, 64);
	assert_int_equal(shp_qdisc_enqueue(q, in, 90, &r.ctx), 90);
	assert_int_equal(shp_bands_bitmap(q), 7);
	n = shp_qdisc_dequeue(q, out, 128, &r.ctx);
	assert_int_equal(n, 90);
	for (i = 0; i < n; i++) {
		uint8_t b = shp_meta(out[i])->band;

		assert_true(b >= seen_band);   /* never back to a higher one */
		seen_band = b;
		if (last[b] != 0)
			assert_true(seqof(out[i]) > last[b]); /* FIFO */
		last[b] = seqof(out[i]);
		rte_pktmbuf_free(out[i]);
	}
	assert_int_equal(shp_bands_bitmap(q), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r.c->band[i].enqueued, 30);
		assert_int_equal(r.c->band[i].dequeued, 30);
	}
	shp_rig_fini(&r);
}

/* A band-0 arrival overtakes queued band-1 packets at the next dequeue. */
static void
test_preemption(void **state)
{
	struct shp_rig r;
	struct shp_qdisc *q = mkbands(&r, 3, 256);
	struct rte_mbuf *m, *out[4];
	int i;

	(void)state;
	for (i = 0; i < 10; i++) {
		m = pkt(1, 64);
		shp_qdisc_enqueue(q, &m, 1, &r.ctx);
	}
	assert_int_equal(shp_qdisc_dequeue(q, out, 1, &r.ctx), 1);
	assert_int_equal(shp_meta(out[0])->band, 1);
	rte_pktmbuf_free(out[0]);
	m = pkt(0, 64);
	shp_qdisc_enqueue(q, &m, 1, &r.ctx);
	assert_ptr_equal(q->ops->peek(q, &r.ctx), m);
	assert_int_equal(shp_qdisc_dequeue(q, out, 1, &r.ctx), 1);
	assert_ptr_equal(out[0], m);
	rte_pktmbuf_free(out[0]);
	shp_qdisc_reset_all(q, &r.ctx);
	assert_int_equal(r.c->drops[SHP_DROP_FLUSHED], 9);
	assert_int_equal(shp_qdisc_qlen_total(q), 0);
	shp_rig_fini(&r);
}

/*
 * The packet a peek returned is the one the next dequeue returns, even if
 * a higher band filled in between (another lcore's RX): the token bucket
 * charges what it peeked, so it must take that packet.
 */
static void
test_peek_then_dequeue_same(void **state)
{
	struct shp_rig r;
	struct shp_qdisc *q = mkbands(&r, 3, 256);
	struct rte_mbuf *m, *hi, *peeked, *out[4];
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		m = pkt(2, 64 + i);
		shp_qdisc_enqueue(q, &m, 1, &r.ctx);
	}
	peeked = q->ops->peek(q, &r.ctx);
	assert_non_null(peeked);
	assert_int_equal(shp_meta(peeked)->band, 2);
	hi = pkt(0, 100);
	shp_qdisc_enqueue(q, &hi, 1, &r.ctx);
	assert_int_equal(shp_qdisc_dequeue(q, out, 1, &r.ctx), 1);
	assert_ptr_equal(out[0], peeked);
	assert_int_equal(r.ctx.bytes, 64);
	rte_pktmbuf_free(out[0]);
	/* then priority again: the band-0 packet, then band 2 */
	assert_int_equal(shp_qdisc_dequeue(q, out, 4, &r.ctx), 3);
	assert_ptr_equal(out[0], hi);
	assert_int_equal(shp_meta(out[1])->band, 2);
	rte_pktmbuf_free_bulk(out, 3);
	/* a peek that found nothing leaves nothing pending */
	assert_null(q->ops->peek(q, &r.ctx));
	m = pkt(1, 64);
	shp_qdisc_enqueue(q, &m, 1, &r.ctx);
	assert_int_equal(shp_qdisc_dequeue(q, out, 4, &r.ctx), 1);
	assert_ptr_equal(out[0], m);
	rte_pktmbuf_free(out[0]);
	shp_rig_fini(&r);
}

/* Random traffic: after every step the band dequeue picks equals the
 * lowest band whose ring (scanned directly) holds packets. */
static void
test_bitmap_equals_scan(void **state)
{
	struct shp_rig r;
	struct shp_qdisc *q = mkbands(&r, 16, 64);
	uint64_t x = 88172645463325252ULL;
	int step;

	(void)state;
	for (step = 0; step < 20000; step++) {
		unsigned int b, want = 16;
		struct rte_mbuf *m;

		shp_rig_xorshift(&x);
		if (x % 3 != 0) {
			m = pkt((uint8_t)((x >> 8) % 16), 64);
			shp_qdisc_enqueue(q, &m, 1, &r.ctx);
			continue;
		}
		for (b = 0; b < 16; b++)
			if (shp_bands_count(q, b) > 0) {
				want = b;
				break;
			}
		m = q->ops->peek(q, &r.ctx);
		if (want == 16) {
			assert_null(m);
			assert_int_equal(shp_bands_bitmap(q), 0);
			continue;
		}
		assert_non_null(m);
		assert_int_equal(shp_meta(m)->band, want);
		assert_int_equal(shp_qdisc_dequeue(q, &m, 1, &r.ctx), 1);
		assert_int_equal(shp_meta(m)->band, want);
		rte_pktmbuf_free(m);
	}
	shp_rig_fini(&r);
}

static void
test_ring_full_counted(void **state)
{
	struct shp_rig r;
	struct shp_qdisc *q = mkbands(&r, 3, 8);
	struct rte_mbuf *in[12], *out[16];
	int i;

	(void)state;
	for (i = 0; i < 12; i++)
		in[i] = pkt(2, 100);
	assert_int_equal(shp_qdisc_enqueue(q, in, 12, &r.ctx), 8);
	assert_int_equal(r.c->band[2].enqueued, 8);
	assert_int_equal(r.c->band[2].full, 4);
	assert_int_equal(r.c->drops[shp_drop_index("band_full")], 4);
	assert_int_equal(shp_qdisc_dequeue(q, out, 16, &r.ctx), 8);
	rte_pktmbuf_free_bulk(out, 8);
	shp_rig_fini(&r);   /* and every mbuf is back in the pool */
}

/*
 * With nothing after the bands to hold packets back (no gate: the live
 * program says so per burst, ctx.unthrottled), a full ring means the
 * lcore fell behind: the refused count as overload, not band_full; the
 * band's own statistic still says its ring was full.
 */
static void
test_full_unthrottled_is_overload(void **state)
{
	struct shp_rig r;
	struct shp_qdisc *q = mkbands(&r, 3, 8);
	struct rte_mbuf *in[12], *out[16];
	uint8_t band[12];
	int i;

	(void)state;
	for (i = 0; i < 12; i++) {
		in[i] = pkt(2, 100);
		band[i] = 2;
	}
	r.ctx.unthrottled = true;
	shp_bands_enqueue_vec(q, in, band, 1u << 2, UINT64_MAX, 12, &r.ctx);
	assert_int_equal(r.c->band[2].enqueued, 8);
	assert_int_equal(r.c->band[2].full, 4);
	assert_int_equal(r.c->drops[shp_drop_index("overload")], 4);
	assert_int_equal(r.c->drops[shp_drop_index("band_full")], 0);
	/* a gate behind it: the profile's queue, its own cause */
	r.ctx.unthrottled = false;
	for (i = 0; i < 2; i++)
		in[i] = pkt(2, 100);
	assert_int_equal(shp_qdisc_enqueue(q, in, 2, &r.ctx), 0);
	assert_int_equal(r.c->drops[shp_drop_index("band_full")], 2);
	assert_int_equal(r.c->drops[shp_drop_index("overload")], 4);
	assert_int_equal(shp_qdisc_dequeue(q, out, 16, &r.ctx), 8);
	rte_pktmbuf_free_bulk(out, 8);
	shp_rig_fini(&r);
}

/* Over the byte limit, the lowest band loses from its head first. */
static void
test_limit_pushout(void **state)
{
	struct shp_rig r;
	struct shp_qdisc *q = mkbands(&r, 3, 256);
	struct rte_mbuf *in[60], *out[64];
	int i, n;

	(void)state;
	shp_bands_set_limit(q, 30 * 1000);
	for (i = 0; i < 60; i++)
		in[i] = pkt(i % 3, 1000);  /* 20 per band: 60 kB */
	assert_int_equal(shp_qdisc_enqueue(q, in, 60, &r.ctx), 60);
	r.ctx.now = 2;
	n = shp_qdisc_dequeue(q, out, 64, &r.ctx);
	assert_int_equal(n, 30);
	assert_int_equal(r.c->band[2].pushed_out, 20);
	assert_int_equal(r.c->band[1].pushed_out, 10);
	assert_int_equal(r.c->band[0].pushed_out, 0);
	assert_int_equal(r.c->drops[shp_drop_index("tbf_limit")], 30);
	/* band 0 whole, then the newest half of band 1 */
	for (i = 0; i < 20; i++)
		assert_int_equal(shp_meta(out[i])->band, 0);
	for (i = 20; i < 30; i++)
		assert_int_equal(shp_meta(out[i])->band, 1);
	rte_pktmbuf_free_bulk(out, n);
	shp_rig_fini(&r);
}

/* The RX path's one pass (classify + bands + bytes) agrees with the
 * generic classify and enqueue, and dequeue reports the bytes it hands
 * out through ctx->bytes, also through a tbf that is off. */
static void
test_rx_fast_path(void **state)
{
	struct shp_classifier c = { .mode = SHP_CLASSIFY_TOS, .nb_bands = 3 };
	struct shp_rig r;
	struct shp_qdisc *q = mkbands(&r, 3, 16);
	struct shp_qdisc *tbf;
	const uint8_t tos[] = { 0x10, 0x00, 0x08 };
	struct rte_mbuf *in[30], *out[64];
	uint8_t band[30];
	uint64_t bytes = 0, want_bytes = 0, got_bytes = 0;
	uint32_t used;
	uint16_t k, n;
	int i;

	(void)state;
	shp_priomap_default(3, c.priomap);
	for (i = 0; i < 30; i++) {
		/* band 2 gets 20 packets: 4 more than its ring holds */
		struct shp_rig_flow f = {
			.tos = i < 20 ? 0x08 : tos[i % 2],
			.src = 0x0a000001, .dst = 0x0a000002,
			.sport = 1000 + i, .dport = 53,
		};

		shp_rig_pkts(&in[i], 1, 100 + i, 0, &f, 0);
		want_bytes += 100 + i;
	}
	used = shp_classify_burst_bands(&c, in, 30, 77, band, &bytes);
	assert_int_equal(bytes, want_bytes);
	assert_int_equal(used, 0x7);
	for (i = 0; i < 30; i++) {
		assert_int_equal(band[i], shp_meta(in[i])->band);
		assert_int_equal(shp_meta(in[i])->rx_ns, 77);
	}
	n = shp_bands_enqueue_vec(q, in, band, used, bytes, 30, &r.ctx);
	assert_int_equal(n, 26);
	assert_int_equal(r.c->band[2].full, 4);
	assert_int_equal(r.c->drops[shp_drop_index("band_full")], 4);
	assert_int_equal(r.c->band[2].enqueued, 16);
	/* byte counters match what is queued: the 4 refused are the last
	 * four band-2 packets (lengths 116..119) */
	{
		uint64_t q_bytes = 0;

		for (i = 0; i < 3; i++)
			q_bytes += r.c->band[i].enqueued_bytes;
		assert_int_equal(q_bytes, want_bytes - (116 + 117 + 118 + 119));
	}
	tbf = shp_rig_add(&r, "tbf", NULL);   /* off */
	for (;;) {
		r.ctx.bytes = UINT64_MAX;
		k = shp_qdisc_dequeue(tbf, out, 7, &r.ctx);
		if (k == 0)
			break;
		if (r.ctx.bytes != UINT64_MAX) {
			uint64_t sum = 0;

			for (i = 0; i < k; i++)
				sum += rte_pktmbuf_pkt_len(out[i]);
			assert_int_equal(r.ctx.bytes, sum);
		}
		for (i = 0; i < k; i++)
			got_bytes += rte_pktmbuf_pkt_len(out[i]);
		rte_pktmbuf_free_bulk(out, k);
	}
	assert_int_equal(got_bytes, want_bytes - (116 + 117 + 118 + 119));
	shp_rig_fini(&r);
}

/* Every stage kind gets its private area on a cache line of its own: the
 * bands' state is declared __rte_cache_aligned, and a misaligned block
 * is undefined behaviour (UBSan) and shares lines it means to keep apart. */
static void
test_priv_alignment(void **state)
{
	const struct shp_qdisc_ops *kinds[] = {
		&shp_bands_ops, &shp_tbf_ops, &shp_netem_ops,
	};
	struct shp_rig r;
	struct shp_qdisc *bands = mkbands(&r, 3, 64), *q;
	unsigned int i;

	(void)state;
	for (i = 0; i < RTE_DIM(kinds); i++) {
		q = kinds[i] == &shp_bands_ops ? bands :
			shp_qdisc_create(kinds[i], bands, shp_rig_pool, 0,
					 SOCKET_ID_ANY, NULL);
		assert_non_null(q);
		assert_int_equal((uintptr_t)q->priv % RTE_CACHE_LINE_SIZE, 0);
		assert_true((char *)q->priv >= (char *)(q + 1));
		if (q != bands)
			shp_qdisc_destroy(q);
	}
	shp_rig_fini(&r);
}

/* pfifo_fast's own words: bands and priomap, what it leaves to the
 * aliases (env), the text back, and what a running stage may take. */
static void
test_pfifo_fast_words(void **state)
{
	const struct shp_kind *k = shp_kind_find("pfifo_fast");
	static const uint8_t own[16] = { 3, 2, 1, 0, 3, 2, 1, 0,
					 3, 2, 1, 0, 3, 2, 1, 0 };
	uint8_t alias[16] = { 0 }, def[16];
	struct shp_kind_env env = { .bands = 3, .ring_size = 64 };
	const uint8_t *map, *map2;
	char err[SHP_ERR_LEN], buf[256];
	void *a, *b;

	(void)state;
	assert_non_null(k->bands);
	a = k->parse("bands 4 priomap 3 2 1 0 3 2 1 0 3 2 1 0 3 2 1 0",
		     &env, err);
	assert_non_null(a);
	assert_int_equal(k->bands(a, &map), 4);
	assert_memory_equal(map, own, 16);
	assert_int_equal(k->capacity(a, &env), 4 * 64);
	k->format(a, buf, sizeof(buf));
	assert_string_equal(buf, "bands 4 priomap 3,2,1,0,3,2,1,0,3,2,1,0,"
			    "3,2,1,0");
	b = k->parse(buf, &env, err);
	assert_non_null(b);
	assert_int_equal(k->bands(b, &map2), 4);
	assert_memory_equal(map2, own, 16);
	k->conf_free(b);

	/* nothing given: the aliases, and nothing to print back */
	b = k->parse("", &env, err);
	assert_int_equal(k->bands(b, &map2), 3);
	shp_priomap_default(3, def);
	assert_memory_equal(map2, def, 16);
	assert_int_equal(k->format(b, buf, sizeof(buf)), 0);
	k->conf_free(b);
	alias[15] = 2;
	env.priomap = alias;
	b = k->parse("", &env, err);
	k->bands(b, &map2);
	assert_memory_equal(map2, alias, 16);
	k->conf_free(b);
	/* its own bands against the alias's map */
	assert_null(k->parse("bands 2", &env, err));
	assert_non_null(strstr(err, "own priomap"));
	b = k->parse("bands 2 priomap 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1", &env,
		     err);
	assert_non_null(b);
	k->conf_free(b);
	env.priomap = NULL;

	/* bad words, each named */
	assert_null(k->parse("priomap 1 2", &env, err));
	assert_non_null(strstr(err, "needs 16 values"));
	assert_null(k->parse("bands 2 priomap 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,2",
			     &env, err));
	assert_non_null(strstr(err, "band 2 out of range 0..1"));
	assert_null(k->parse("bands 0", &env, err));
	assert_non_null(strstr(err, "bands"));
	assert_null(k->parse("limit 5", &env, err));
	assert_non_null(strstr(err, "unknown word 'limit'"));

	/* running with 4 bands: the number stays, the map may change */
	b = k->parse("bands 3", &env, err);
	assert_int_equal(k->check_change(a, b, err), -1);
	assert_non_null(strstr(err, "bands cannot change"));
	k->conf_free(b);
	b = k->parse("", &env, err);
	assert_int_equal(k->check_change(a, b, err), 0);
	assert_int_equal(k->bands(b, &map2), 4);
	shp_priomap_default(4, def);
	assert_memory_equal(map2, def, 16);
	k->conf_free(b);
	k->conf_free(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strict_priority_fifo),
		cmocka_unit_test(test_preemption),
		cmocka_unit_test(test_peek_then_dequeue_same),
		cmocka_unit_test(test_bitmap_equals_scan),
		cmocka_unit_test(test_ring_full_counted),
		cmocka_unit_test(test_full_unthrottled_is_overload),
		cmocka_unit_test(test_limit_pushout),
		cmocka_unit_test(test_rx_fast_path),
		cmocka_unit_test(test_priv_alignment),
		cmocka_unit_test(test_pfifo_fast_words),
	};

	shp_rig_env("bands", 16384);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
