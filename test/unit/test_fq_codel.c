/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fq_codel on a virtual clock, against RFC 8290 / RFC 8289 and Linux's
 * sch_fq_codel: the sparse flow's priority, byte fairness, the control
 * law's drop schedule, ECN marks, the fat-flow overflow drop, the
 * grammar, and that nothing is lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_udp.h>

#include "shp_kind.h"
#include "shp_link.h"
#include "shp_qdisc.h"
#include "shp_units.h"
#include "shp_rig.h"

#define MS 1000000ULL
#define US 1000ULL

static struct rte_mempool *pool;
static struct shp_lcore_ctr *ctr;
static const struct shp_kind *fqc;

struct rig {
	unsigned int avail;   /* mbufs in the pool before */
	void *conf;
	struct shp_qdisc *q;
	struct shp_ctx ctx;
};

static void
rig_init(struct rig *r, const char *args)
{
	char err[SHP_ERR_LEN];

	memset(r, 0, sizeof(*r));
	memset(ctr, 0, sizeof(*ctr));
	r->avail = rte_mempool_avail_count(pool);
	r->conf = fqc->parse(args, NULL, err);
	if (r->conf == NULL)
		fail_msg("%s", err);
	r->q = shp_qdisc_create(fqc->ops, NULL, pool, 0, SOCKET_ID_ANY,
				r->conf);
	assert_non_null(r->q);
	r->ctx.now = 1000 * MS;
	r->ctx.ctr = &ctr->port[0];
}

static void
rig_fini(struct rig *r)
{
	shp_qdisc_reset_all(r->q, &r->ctx);
	shp_qdisc_destroy(r->q);
	fqc->conf_free(r->conf);
	/* every mbuf back: nothing leaked by the stage */
	assert_int_equal(rte_mempool_avail_count(pool), r->avail);
}

/* The counter of drop cause `name`. */
static uint64_t
drops(const char *name)
{
	unsigned int i;

	for (i = 0; i < shp_drop_nb(); i++)
		if (strcmp(shp_drop_names[i], name) == 0)
			return ctr->port[0].drops[i];
	fail_msg("no drop cause %s", name);
	return 0;
}

/* fq_codel's statistic `name`. */
static uint64_t
xs(const char *name)
{
	unsigned int i;

	for (i = 0; i < shp_xstat_nb(); i++)
		if (shp_xstat_kind(i) == fqc &&
		    strcmp(shp_xstat_desc(i)->name, name) == 0)
			return ctr->port[0].xstats[i];
	fail_msg("no fq_codel statistic %s", name);
	return 0;
}

/* What a test packet is. */
struct pspec {
	unsigned int flow;    /* UDP source port 1000 + flow */
	uint16_t len;         /* frame length */
	uint8_t ecn;          /* 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE */
	bool v6;
	uint16_t tpid[2];     /* VLAN tags (0: none) */
	uint32_t seq;         /* written in the payload */
};

#define SEQ_OFF(hl) ((hl) + sizeof(struct rte_udp_hdr))

/* An Ethernet [/ VLAN...] / IPv4 or IPv6 / UDP frame. */
static struct rte_mbuf *
mkpkt(const struct pspec *s, uint64_t now)
{
	struct rte_mbuf *m = shp_rig_pkt_from(pool, s->len, 0, now);
	uint8_t *p;
	uint32_t off = 12, l3, l4;
	struct rte_udp_hdr *udp;
	int t;

	assert_non_null(m);
	p = rte_pktmbuf_mtod(m, uint8_t *);
	memset(p, 0x02, 12);
	for (t = 0; t < 2 && s->tpid[t]; t++) {
		*(rte_be16_t *)(p + off) = rte_cpu_to_be_16(s->tpid[t]);
		*(rte_be16_t *)(p + off + 2) = rte_cpu_to_be_16(100 + t);
		off += 4;
	}
	*(rte_be16_t *)(p + off) = rte_cpu_to_be_16(s->v6 ?
		RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
	l3 = off + 2;
	if (!s->v6) {
		struct rte_ipv4_hdr *ip = (void *)(p + l3);

		memset(ip, 0, sizeof(*ip));
		ip->version_ihl = 0x45;
		ip->type_of_service = s->ecn;
		ip->total_length = rte_cpu_to_be_16(s->len - l3);
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		ip->src_addr = rte_cpu_to_be_32(0x0a000001);
		ip->dst_addr = rte_cpu_to_be_32(0x0a000002);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		l4 = l3 + sizeof(*ip);
	} else {
		struct rte_ipv6_hdr *ip6 = (void *)(p + l3);

		memset(ip6, 0, sizeof(*ip6));
		ip6->vtc_flow = rte_cpu_to_be_32(6u << 28 |
						 (uint32_t)s->ecn << 20);
		ip6->payload_len = rte_cpu_to_be_16(s->len - l3 -
						    sizeof(*ip6));
		ip6->proto = IPPROTO_UDP;
		ip6->hop_limits = 64;
		ip6->src_addr[15] = 1;
		ip6->dst_addr[15] = 2;
		l4 = l3 + sizeof(*ip6);
	}
	udp = (void *)(p + l4);
	udp->src_port = rte_cpu_to_be_16(1000 + s->flow);
	udp->dst_port = rte_cpu_to_be_16(9);
	udp->dgram_len = rte_cpu_to_be_16(s->len - l4);
	udp->dgram_cksum = 0;
	memcpy(p + l4 + sizeof(*udp), &s->seq, sizeof(s->seq));
	return m;
}

/* Parsed back from a frame mkpkt made (untagged). */
static unsigned int
pkt_flow(struct rte_mbuf *m)
{
	struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m,
		struct rte_udp_hdr *, 14 + sizeof(struct rte_ipv4_hdr));

	return rte_be_to_cpu_16(udp->src_port) - 1000;
}

static uint32_t
pkt_seq(struct rte_mbuf *m)
{
	uint32_t seq;

	memcpy(&seq, rte_pktmbuf_mtod_offset(m, uint8_t *, 14 +
		sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr)),
	       sizeof(seq));
	return seq;
}

static uint8_t
pkt_ecn(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m,
		struct rte_ipv4_hdr *, 14);

	return ip->type_of_service & 3;
}

static void
put(struct rig *r, const struct pspec *s)
{
	struct rte_mbuf *m = mkpkt(s, r->ctx.now);

	assert_int_equal(shp_qdisc_enqueue(r->q, &m, 1, &r->ctx), 1);
}

static void
put_n(struct rig *r, struct pspec s, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++, s.seq++)
		put(r, &s);
}

static struct rte_mbuf *
take(struct rig *r)
{
	struct rte_mbuf *m = NULL;

	if (shp_qdisc_dequeue(r->q, &m, 1, &r->ctx) == 0)
		return NULL;
	return m;
}

static uint32_t
qlen(struct rig *r)
{
	struct shp_qstats st = { 0, 0 };

	r->q->ops->stats(r->q, &st);
	return st.qlen;
}

/* --- the grammar ---------------------------------------------------- */

static void
fmt(const void *conf, char *buf, size_t len)
{
	assert_true(fqc->format(conf, buf, len) < (int)len);
}

static void
test_parse_defaults_and_round_trip(void **state)
{
	static const char *const texts[] = {
		"",
		"limit 100 flows 16 target 2ms interval 50ms quantum 300 "
		"noecn ce_threshold 1ms memory_limit 1mb",
		"ecn target 500us interval 20ms",
		"memory_limit 12345 quantum 9000 flows 65536 limit 1",
		"ce_threshold 0ns target 0ms",
	};
	char err[SHP_ERR_LEN], a[256], b[256];
	const struct shp_kind *k;
	unsigned int i;
	void *c, *c2;

	(void)state;
	assert_ptr_equal(shp_kind_find("fq_codel"), fqc);
	assert_int_equal(fqc->slot, SHP_SLOT_QUEUE);
	assert_null(fqc->ops->set_limit);   /* tbf's limit is not ours */
	assert_false(fqc->ops->mp_enqueue);
	c = fqc->parse("", NULL, err);
	assert_non_null(c);
	fmt(c, a, sizeof(a));
	/* tc's defaults */
	assert_string_equal(a, "limit 10240 flows 1024 quantum 1514 target "
			    "5ms interval 100ms memory_limit 32Mb ecn");
	fqc->conf_free(c);
	for (i = 0; i < RTE_DIM(texts); i++) {
		c = fqc->parse(texts[i], NULL, err);
		if (c == NULL)
			fail_msg("'%s': %s", texts[i], err);
		fmt(c, a, sizeof(a));
		c2 = fqc->parse(a, NULL, err);
		if (c2 == NULL)
			fail_msg("'%s' (from '%s'): %s", a, texts[i], err);
		fmt(c2, b, sizeof(b));
		assert_string_equal(a, b);
		fqc->conf_free(c);
		fqc->conf_free(c2);
	}
	/* the parsed values, not just a stable text */
	c = fqc->parse(texts[1], NULL, err);
	fmt(c, a, sizeof(a));
	assert_string_equal(a, "limit 100 flows 16 quantum 300 target 2ms "
			    "ce_threshold 1ms interval 50ms memory_limit 1Mb "
			    "noecn");
	fqc->conf_free(c);
	/* through the registry, as --queue / `set queue` give it */
	assert_int_equal(shp_kind_parse("queue", "fq_codel limit 5", NULL, &k,
					&c, err), 0);
	assert_ptr_equal(k, fqc);
	assert_true(shp_kind_format(k, c, a, sizeof(a)) > 0);
	assert_string_equal(a, "fq_codel limit 5 flows 1024 quantum 1514 "
			    "target 5ms interval 100ms memory_limit 32Mb ecn");
	shp_kind_conf_free(k, c);
}

/* tc's words: bare times in microseconds (its get_time), drop_batch, and
 * `show qdisc`'s line as the newest tc prints it */
static void
test_tc_grammar_and_print(void **state)
{
	static const char *const same[][2] = {
		{ "target 2000", "target 2ms" },
		{ "interval 5000", "interval 5ms" },
		{ "ce_threshold 1024000", "ce_threshold 1024ms" },
		{ "memory_limit 100000", "memory_limit 100000b" },
		{ "limit 1000p", "limit 1000" },
	};
	char err[SHP_ERR_LEN], a[256], b[256];
	const char *name = "fq_codel";
	unsigned int i;
	void *c;

	(void)state;
	for (i = 0; i < RTE_DIM(same); i++) {
		c = fqc->parse(same[i][0], NULL, err);
		if (c == NULL)
			fail_msg("'%s': %s", same[i][0], err);
		fmt(c, a, sizeof(a));
		fqc->conf_free(c);
		c = fqc->parse(same[i][1], NULL, err);
		assert_non_null(c);
		fmt(c, b, sizeof(b));
		fqc->conf_free(c);
		assert_string_equal(a, b);
	}
	/* the default batch is not in the text (show's is as it was) */
	c = fqc->parse("drop_batch 64", NULL, err);
	fmt(c, a, sizeof(a));
	fqc->conf_free(c);
	assert_null(strstr(a, "drop_batch"));
	c = fqc->parse("drop_batch 100", NULL, err);
	fmt(c, a, sizeof(a));
	fqc->conf_free(c);
	assert_non_null(strstr(a, " drop_batch 100"));
	c = fqc->parse(a, NULL, err);
	assert_non_null(c);
	fqc->conf_free(c);
	c = fqc->parse("drop_batch 0", NULL, err);   /* Linux: 1 */
	fmt(c, a, sizeof(a));
	fqc->conf_free(c);
	assert_non_null(strstr(a, " drop_batch 1"));
	assert_non_null(fqc->tc_print);
	fqc->tc_print("", NULL, &name, a, sizeof(a));
	assert_string_equal(a, "limit 10240p flows 1024 quantum 1514 target "
			    "5ms interval 100ms memory_limit 32Mb ecn "
			    "drop_batch 64");
	fqc->tc_print("noecn ce_threshold 1024000 limit 1000", NULL, &name,
		      a, sizeof(a));
	assert_string_equal(a, "limit 1000p flows 1024 quantum 1514 target "
			    "5ms ce_threshold 1.02s interval 100ms "
			    "memory_limit 32Mb drop_batch 64");
	assert_string_equal(name, "fq_codel");
}

static void
test_parse_refusals(void **state)
{
	static const struct { const char *text, *want; } bad[] = {
		{ "limit 0", "fq_codel: limit: '0'" },
		{ "limit", "fq_codel: 'limit' needs" },
		{ "limit 5x", "fq_codel: limit:" },
		{ "flows 0", "fq_codel: flows: '0'" },
		{ "flows 65537", "fq_codel: flows: '65537'" },
		{ "quantum 255", "fq_codel: quantum: '255'" },
		{ "quantum 2000000", "fq_codel: quantum: '2000000'" },
		{ "target 5x", "fq_codel: target: '5x'" },
		{ "drop_batch", "fq_codel: 'drop_batch' needs" },
		{ "drop_batch -1", "fq_codel: drop_batch:" },
		{ "interval 0ms", "fq_codel: interval: '0ms'" },
		{ "interval -1ms", "fq_codel: interval:" },
		{ "ce_threshold", "fq_codel: 'ce_threshold' needs" },
		{ "memory_limit 0", "fq_codel: memory_limit: '0'" },
		{ "memory_limit 3gb", "fq_codel: memory_limit: '3gb'" },
		{ "memory_limit lots", "fq_codel: memory_limit:" },
		{ "lim 5", "fq_codel: unknown word 'lim'" },   /* no prefixes */
		{ "ecn bogus", "fq_codel: unknown word 'bogus'" },
	};
	char err[SHP_ERR_LEN];
	unsigned int i;

	(void)state;
	for (i = 0; i < RTE_DIM(bad); i++) {
		void *c = fqc->parse(bad[i].text, NULL, err);

		if (c != NULL)
			fail_msg("'%s' was accepted", bad[i].text);
		if (strncmp(err, bad[i].want, strlen(bad[i].want)) != 0)
			fail_msg("'%s': '%s', want '%s...'", bad[i].text, err,
				 bad[i].want);
		assert_null(strchr(err, '\n'));
	}
}

/* --- the scheduler -------------------------------------------------- */

/* RFC 8290 section 1.2: a flow that sends sparsely is served before the
 * flows that have built a queue. */
static void
test_sparse_flow_priority(void **state)
{
	struct pspec bulk = { .flow = 1, .len = 1000 };
	struct pspec sparse = { .flow = 2, .len = 100 };
	struct rig r;
	struct rte_mbuf *m;
	int i;

	(void)state;
	rig_init(&r, "");
	put_n(&r, bulk, 100);
	/* the bulk flow spends its first quantum (2 x 1000 > 1514) and
	 * goes to the old list */
	for (i = 0; i < 3; i++) {
		m = take(&r);
		assert_int_equal(pkt_flow(m), 1);
		rte_pktmbuf_free(m);
	}
	put(&r, &sparse);
	assert_int_equal(xs("new_flows"), 2);
	m = take(&r);
	assert_int_equal(pkt_flow(m), 2);   /* ahead of 97 bulk packets */
	rte_pktmbuf_free(m);
	/* and again, once it has emptied and gone through the old list */
	for (i = 0; i < 3; i++)
		rte_pktmbuf_free(take(&r));
	put(&r, &sparse);
	m = take(&r);
	assert_int_equal(pkt_flow(m), 2);
	rte_pktmbuf_free(m);
	rig_fini(&r);
}

/*
 * Two unresponsive flows over their share of a 10 Mbit/s link, 1500-byte
 * packets at 20 Mbit/s and 500-byte ones at 8 Mbit/s: DRR by bytes gives
 * each half the link. Jain's index over 10 s of virtual time >= 0.99.
 */
static void
test_fair_share(void **state)
{
	const uint64_t step = 10 * US, end = 10000 * MS;
	struct pspec a = { .flow = 1, .len = 1500 };
	struct pspec b = { .flow = 2, .len = 500 };
	uint64_t t0, next_a, next_b, link_free, bytes[3] = { 0, 0, 0 };
	uint64_t per_a = 1500 * 8 * 1000000000ULL / 20000000;
	uint64_t per_b = 500 * 8 * 1000000000ULL / 8000000;
	double x1, x2, jain;
	struct rig r;

	(void)state;
	rig_init(&r, "");
	t0 = r.ctx.now;
	next_a = next_b = link_free = t0;
	for (; r.ctx.now < t0 + end; r.ctx.now += step) {
		struct rte_mbuf *m;

		for (; next_a <= r.ctx.now; next_a += per_a)
			put(&r, &a);
		for (; next_b <= r.ctx.now; next_b += per_b)
			put(&r, &b);
		if (link_free > r.ctx.now)
			continue;
		m = take(&r);
		if (m == NULL)
			continue;
		bytes[pkt_flow(m)] += rte_pktmbuf_pkt_len(m);
		/* 10 Mbit/s: 800 ns a byte */
		link_free = r.ctx.now + rte_pktmbuf_pkt_len(m) * 800ULL;
		rte_pktmbuf_free(m);
	}
	x1 = (double)bytes[1];
	x2 = (double)bytes[2];
	jain = (x1 + x2) * (x1 + x2) / (2 * (x1 * x1 + x2 * x2));
	print_message("fair share: %.3f and %.3f Mbit/s, Jain %.4f; codel "
		      "drops %" PRIu64 ", overlimit drops %" PRIu64 "\n",
		      x1 * 8 / 10e6, x2 * 8 / 10e6, jain, drops("codel"),
		      drops("fq_overlimit"));
	assert_true(jain >= 0.99);
	/* and the link was kept busy */
	assert_true((x1 + x2) * 8 / 10 > 0.98 * 10e6);
	rig_fini(&r);
}

/*
 * One flow at twice the dequeue rate, its sojourn growing past target:
 * CoDel enters the dropping state one interval after the sojourn first
 * reached target, then drops at times interval / sqrt(count) apart
 * (RFC 8289 section 5.5; Linux codel_dequeue). With ecn, ECT packets are
 * marked on the same schedule instead, and none is dropped.
 * Dequeues happen every millisecond; each drop (mark) must come at the
 * first one at or after its scheduled time.
 */
static void
check_schedule(const char *args, uint8_t ecn, bool marks)
{
	const uint64_t slot = 1 * MS, interval = 100 * MS;
	const unsigned int nb = 20;
	struct pspec s = { .flow = 1, .len = 1000, .ecn = ecn };
	uint64_t times[20], first_above = 0, next_arrival, sched = 0;
	uint64_t before = 0, seen = 0, delivered = 0, ce = 0;
	unsigned int k = 0, j;
	struct rig r;

	rig_init(&r, args);
	next_arrival = r.ctx.now;
	while (k < nb) {
		struct rte_mbuf *m;
		uint64_t now_events;

		r.ctx.now += slot;
		assert_true(r.ctx.now < 1000 * MS + 10000 * MS);
		for (; next_arrival <= r.ctx.now; next_arrival += slot / 2) {
			s.seq++;
			put(&r, &s);
		}
		m = take(&r);
		now_events = marks ? xs("ecn_marked") : drops("codel");
		if (now_events > seen) {
			assert_int_equal(now_events - seen, 1);
			times[k++] = r.ctx.now;
			seen = now_events;
		}
		if (m == NULL)
			continue;
		delivered++;
		if (pkt_ecn(m) == 3)
			ce++;
		if (first_above == 0 &&
		    r.ctx.now - shp_meta(m)->rx_ns >= 5 * MS)
			first_above = r.ctx.now;
		if (marks) {
			/* the header checksum follows the TOS change */
			struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m,
				struct rte_ipv4_hdr *, 14);
			uint16_t sum = ip->hdr_checksum;

			ip->hdr_checksum = 0;
			assert_int_equal(rte_ipv4_cksum(ip), sum);
		}
		rte_pktmbuf_free(m);
		(void)before;
	}
	assert_true(first_above != 0);
	/* strictly after first_above + interval: the next dequeue */
	assert_int_equal(times[0], first_above + interval + slot);
	sched = times[0];
	for (j = 1; j < nb; j++) {
		sched += (uint64_t)((double)interval / sqrt((double)j));
		if (!(times[j] >= sched && times[j] < sched + slot))
			fail_msg("drop %u at %" PRIu64 " ns, scheduled %"
				 PRIu64 " (previous at %" PRIu64 ")", j + 1,
				 times[j] - times[0], sched - times[0],
				 times[j - 1] - times[0]);
	}
	if (marks) {
		assert_int_equal(drops("codel"), 0);
		assert_int_equal(ce, nb);
	} else {
		assert_int_equal(xs("ecn_marked"), 0);
		assert_int_equal(ce, 0);
	}
	assert_int_equal(drops("fq_overlimit"), 0);
	rig_fini(&r);
}

static void
test_drop_schedule(void **state)
{
	(void)state;
	/* ecn on, but Not-ECT packets are dropped */
	check_schedule("limit 100000", 0, false);
}

static void
test_ecn_marks_instead(void **state)
{
	(void)state;
	check_schedule("limit 100000", 2, true);   /* ECT(0) */
	check_schedule("limit 100000", 1, true);   /* ECT(1) */
	/* noecn: ECT packets are dropped like the rest */
	check_schedule("limit 100000 noecn", 2, false);
}

/* One flow at twice the dequeue rate (a packet every 500 us, a dequeue
 * every ms) until CoDel has dropped `until` in all; the times of the
 * first two drops from the `from`-th go to t[0..1]. */
static void
overload(struct rig *r, uint64_t *next_arrival, unsigned int until,
	 unsigned int from, uint64_t *t)
{
	struct pspec s = { .flow = 1, .len = 1000 };
	uint64_t seen = drops("codel");

	while (seen < until) {
		struct rte_mbuf *m;

		r->ctx.now += MS;
		for (; *next_arrival <= r->ctx.now; *next_arrival += MS / 2)
			put(r, &s);
		m = take(r);
		if (m != NULL)
			rte_pktmbuf_free(m);
		if (drops("codel") > seen) {
			assert_int_equal(drops("codel"), seen + 1);
			if (seen >= from && seen - from < 2)
				t[seen - from] = r->ctx.now;
			seen++;
		}
	}
}

/*
 * Back above target soon after leaving the dropping state, CoDel resumes
 * near the drop rate that controlled the queue: count restarts at what
 * the last episode added (RFC 8289 5.5, Linux codel_dequeue's delta), so
 * the second drop comes interval / sqrt(delta) after the first.
 */
static void
test_codel_resumes_rate(void **state)
{
	const uint64_t interval = 100 * MS;
	struct rte_mbuf *pk[64];
	uint64_t next_arrival, t[2];
	unsigned int first, delta;
	struct rig r;
	uint16_t n;

	(void)state;
	rig_init(&r, "limit 100000");
	next_arrival = r.ctx.now;
	overload(&r, &next_arrival, 10, 0, t);
	/* drain at once: the flow empties, CoDel leaves the dropping
	 * state (count: every drop of the episode, lastcount 1) */
	while ((n = shp_qdisc_dequeue(r.q, pk, RTE_DIM(pk), &r.ctx)) > 0)
		rte_pktmbuf_free_bulk(pk, n);
	first = drops("codel");
	delta = first - 1;
	assert_true(delta > 1);
	r.ctx.now += 10 * MS;
	next_arrival = r.ctx.now;
	overload(&r, &next_arrival, first + 2, first, t);
	if (!(t[1] >= t[0] + (uint64_t)(interval / sqrt(delta)) &&
	      t[1] < t[0] + (uint64_t)(interval / sqrt(delta)) + MS))
		fail_msg("second drop %" PRIu64 " ns after the first, want "
			 "interval / sqrt(%u)", t[1] - t[0], delta);
	rig_fini(&r);
}

/* CoDel leaves a queue of at most one MTU alone, however old (Linux:
 * backlog <= mtu), so a sparse flow never loses its last packets. */
static void
test_codel_spares_one_mtu(void **state)
{
	struct pspec s = { .flow = 1, .len = 700 };
	struct rte_mbuf *m;
	unsigned int got = 0;
	struct rig r;

	(void)state;
	rig_init(&r, "");
	put_n(&r, s, 3);
	while (r.ctx.now += 200 * MS, (m = take(&r)) != NULL) {
		rte_pktmbuf_free(m);
		got++;
	}
	assert_int_equal(got, 3);
	assert_int_equal(drops("codel"), 0);
	rig_fini(&r);
}

/* IPv6 behind two tags: the traffic class gets CE. */
static void
test_ecn_ipv6_tagged(void **state)
{
	struct pspec s = { .flow = 1, .len = 1000, .ecn = 2, .v6 = true,
			   .tpid = { RTE_ETHER_TYPE_QINQ, 0x9200 } };
	uint64_t next_arrival;
	unsigned int ce = 0;
	struct rig r;

	(void)state;
	rig_init(&r, "limit 100000");
	next_arrival = r.ctx.now;
	while (xs("ecn_marked") < 5) {
		struct rte_mbuf *m;

		r.ctx.now += MS;
		assert_true(r.ctx.now < 10000 * MS);
		for (; next_arrival <= r.ctx.now; next_arrival += MS / 2)
			put(&r, &s);
		m = take(&r);
		if (m != NULL) {
			struct rte_ipv6_hdr *ip6 = rte_pktmbuf_mtod_offset(m,
				struct rte_ipv6_hdr *, 14 + 8);
			uint32_t v = rte_be_to_cpu_32(ip6->vtc_flow);

			ce += ((v >> 20) & 3) == 3;
			assert_int_equal(v >> 28, 6);
			rte_pktmbuf_free(m);
		}
	}
	assert_int_equal(ce, 5);
	assert_int_equal(drops("codel"), 0);
	rig_fini(&r);
}

/* ce_threshold: every packet whose sojourn is above it is marked, from
 * the first, without CoDel's interval. */
static void
test_ce_threshold(void **state)
{
	struct pspec ect = { .flow = 1, .len = 1000, .ecn = 2 };
	struct pspec notect = { .flow = 2, .len = 1000, .ecn = 0 };
	struct rte_mbuf *m;
	struct rig r;

	(void)state;
	rig_init(&r, "ce_threshold 1ms");
	put_n(&r, ect, 2);
	put_n(&r, notect, 2);
	r.ctx.now += 1 * MS;   /* not above */
	m = take(&r);
	assert_int_equal(pkt_ecn(m), 2);
	rte_pktmbuf_free(m);
	r.ctx.now += 1;        /* above */
	while ((m = take(&r)) != NULL) {
		assert_int_equal(pkt_ecn(m), pkt_flow(m) == 1 ? 3 : 0);
		rte_pktmbuf_free(m);
	}
	assert_int_equal(xs("ce_marked"), 1);
	assert_int_equal(drops("codel"), 0);
	rig_fini(&r);
}

/* Over the limit with nothing after the queue to hold packets back
 * (ctx.unthrottled, no gate), the same packets go, counted as overload:
 * only the lcore's lag can have filled it. */
static void
test_overflow_unthrottled_is_overload(void **state)
{
	struct pspec a = { .flow = 1, .len = 1000 };
	struct rig r;

	(void)state;
	rig_init(&r, "limit 100");
	r.ctx.unthrottled = true;
	put_n(&r, a, 101);
	assert_true(drops("overload") > 0);
	assert_int_equal(drops("fq_overlimit"), 0);
	assert_int_equal(qlen(&r) + drops("overload"), 101);
	rig_fini(&r);
}

/* Over the limit, the flow with the largest backlog loses packets from
 * its head: half its backlog, at most 64 at a time (fq_codel_drop). */
static void
test_overflow_hits_fattest(void **state)
{
	struct pspec a = { .flow = 1, .len = 1000 };
	struct pspec b = { .flow = 2, .len = 1000 };
	struct pspec c = { .flow = 3, .len = 100 };
	unsigned int got_a = 0, got_b = 0;
	/* what an mbuf of the pool holds of memory */
	unsigned int ts = sizeof(struct rte_mbuf) + SHP_MBUF_PRIV_SIZE +
			  RTE_MBUF_DEFAULT_BUF_SIZE;
	struct rte_mbuf *m;
	char args[64];
	struct rig r;

	(void)state;
	rig_init(&r, "limit 100");
	put_n(&r, a, 60);
	/* flow c has more packets than a, but fewer bytes */
	put_n(&r, c, 30);
	put_n(&r, b, 10);
	assert_int_equal(drops("fq_overlimit"), 0);
	b.seq = 10;
	put(&r, &b);
	/* half of a's 60000 bytes: its 30 oldest */
	assert_int_equal(drops("fq_overlimit"), 30);
	assert_int_equal(qlen(&r), 71);
	assert_int_equal(xs("queued"), 71);
	while ((m = take(&r)) != NULL) {
		if (pkt_flow(m) == 1)
			assert_int_equal(pkt_seq(m), 30 + got_a++);
		else if (pkt_flow(m) == 2)
			assert_int_equal(pkt_seq(m), got_b++);
		rte_pktmbuf_free(m);
	}
	assert_int_equal(got_a, 30);
	assert_int_equal(got_b, 11);
	rig_fini(&r);

	/* a batch stops at 64 packets */
	rig_init(&r, "limit 300");
	a.seq = 0;
	put_n(&r, a, 250);
	put_n(&r, b, 50);
	put(&r, &b);
	assert_int_equal(drops("fq_overlimit"), 64);
	assert_int_equal(xs("overmemory"), 0);
	rig_fini(&r);

	/* drop_batch sets it, as Linux's: fewer, or more than 64 (half
	 * a's 250000 bytes is 125 packets) */
	rig_init(&r, "limit 300 drop_batch 10");
	a.seq = 0;
	put_n(&r, a, 250);
	put_n(&r, b, 50);
	put(&r, &b);
	assert_int_equal(drops("fq_overlimit"), 10);
	assert_int_equal(qlen(&r), 291);
	rig_fini(&r);
	rig_init(&r, "limit 300 drop_batch 100");
	put_n(&r, a, 250);
	put_n(&r, b, 50);
	put(&r, &b);
	assert_int_equal(drops("fq_overlimit"), 100);
	assert_int_equal(qlen(&r), 201);
	rig_fini(&r);

	/* memory_limit counts the buffers, whatever the frame length:
	 * room for 9 and a half */
	snprintf(args, sizeof(args), "memory_limit %u", 9 * ts + ts / 2);
	rig_init(&r, args);
	put_n(&r, c, 8);
	put(&r, &a);
	assert_int_equal(drops("fq_overlimit"), 0);
	assert_int_equal(xs("memory_usage"), 9 * ts);
	b.len = 500;
	put(&r, &b);   /* the 10th buffer */
	/* a (1000 bytes) is the fattest, not b (500) nor c (8 x 100) */
	assert_int_equal(drops("fq_overlimit"), 1);
	assert_int_equal(xs("overmemory"), 1);
	assert_int_equal(qlen(&r), 9);
	rig_fini(&r);
}

/* Flows through VLAN tags (any TPID) and IPv6 get buckets of their own;
 * one 5-tuple always the same. */
static void
test_flow_hash(void **state)
{
	static const uint16_t tpids[][2] = {
		{ 0, 0 }, { RTE_ETHER_TYPE_VLAN, 0 },
		{ RTE_ETHER_TYPE_QINQ, RTE_ETHER_TYPE_VLAN }, { 0x9200, 0 },
	};
	unsigned int t, f;
	struct rig r;

	(void)state;
	for (t = 0; t < RTE_DIM(tpids); t++) {
		struct pspec s = { .len = 200, .v6 = t == 3,
				   .tpid = { tpids[t][0], tpids[t][1] } };

		rig_init(&r, "");
		s.flow = 7;
		put_n(&r, s, 10);
		assert_int_equal(xs("flows_active"), 1);
		for (f = 0; f < 64; f++) {
			s.flow = 100 + f;
			put(&r, &s);
		}
		/* 65 flows in 1024 buckets: about 2 collide */
		if (xs("flows_active") < 58)
			fail_msg("tags %#x/%#x: %" PRIu64 " buckets for 65 "
				 "flows", tpids[t][0], tpids[t][1],
				 xs("flows_active"));
		rig_fini(&r);
	}
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct bottleneck {
	uint64_t light_sent, light_got, p99, heavy_got;
};

/*
 * The offline case, on the virtual clock: an unresponsive heavy
 * UDP flow at 100 Mbit/s (1000-byte frames) and a light one at 1 Mbit/s
 * (200-byte frames) into `queue` under `tbf rate 10mbit burst 10kb limit
 * 1mb`, for 10 s, the clock jumping from event to event (the offline
 * tool's way: next arrival or the chain's next_time).
 */
static void
bottleneck(const char *queue, struct bottleneck *out)
{
	static uint64_t delay[8000];
	const uint64_t heavy_every = 80 * US, light_every = 1600 * US;
	struct pspec heavy = { .flow = 1, .len = 1000 };
	struct pspec light = { .flow = 2, .len = 200 };
	struct shp_stage_env env = {
		.name = queue, .socket = SOCKET_ID_ANY,
		.single_producer = true, .ring_size = 4096,
		.ctr_blocks = ctr, .nb_ctr_blocks = 1,
	};
	const struct shp_kind_env kenv = { .bands = 3, .ring_size = 4096 };
	struct shp_ctx ctx = { .now = 1000 * MS, .ctr = &ctr->port[0] };
	const struct shp_kind *kq, *kt;
	uint64_t t0 = ctx.now, next_h = t0, next_l = t0;
	char err[SHP_ERR_LEN];
	struct shp_qdisc *q, *tbf;
	void *cq, *ct;
	unsigned int avail = rte_mempool_avail_count(pool);

	memset(ctr, 0, sizeof(*ctr));
	memset(out, 0, sizeof(*out));
	assert_int_equal(shp_kind_parse("queue", queue, &kenv, &kq, &cq,
					err), 0);
	assert_int_equal(shp_kind_parse("tbf", "rate 10mbit burst 10kb "
					"limit 1mb", &kenv, &kt, &ct, err), 0);
	q = shp_qdisc_create_env(kq->ops, NULL, pool, 0, &env, cq);
	tbf = shp_qdisc_create_env(kt->ops, q, pool, 0, &env, ct);
	assert_non_null(tbf);
	while (ctx.now < t0 + 10000 * MS) {
		struct rte_mbuf *pk[32];
		uint64_t next;
		uint16_t n, i;

		for (; next_h <= ctx.now; next_h += heavy_every) {
			struct rte_mbuf *m = mkpkt(&heavy, next_h);

			shp_qdisc_enqueue(q, &m, 1, &ctx);
		}
		for (; next_l <= ctx.now; next_l += light_every) {
			struct rte_mbuf *m = mkpkt(&light, next_l);

			shp_qdisc_enqueue(q, &m, 1, &ctx);
			out->light_sent++;
		}
		ctx.bytes = UINT64_MAX;
		n = shp_qdisc_dequeue(tbf, pk, RTE_DIM(pk), &ctx);
		for (i = 0; i < n; i++) {
			if (pkt_flow(pk[i]) == 2) {
				assert_true(out->light_got < RTE_DIM(delay));
				delay[out->light_got++] = ctx.now -
					shp_meta(pk[i])->rx_ns;
			} else {
				out->heavy_got++;
			}
		}
		rte_pktmbuf_free_bulk(pk, n);
		if (n == RTE_DIM(pk))
			continue;
		next = RTE_MIN(RTE_MIN(next_h, next_l),
			       shp_qdisc_next_time(tbf, &ctx));
		assert_true(next > ctx.now);
		ctx.now = next;
	}
	qsort(delay, out->light_got, sizeof(delay[0]), cmp_u64);
	out->p99 = out->light_got ? delay[out->light_got * 99 / 100] : 0;
	print_message("%-10s light: %" PRIu64 " of %" PRIu64 " through, p99 "
		      "%.2f ms; heavy: %" PRIu64 " through\n", queue,
		      out->light_got, out->light_sent, out->p99 / 1e6,
		      out->heavy_got);
	shp_qdisc_reset_all(tbf, &ctx);
	shp_qdisc_destroy(tbf);
	shp_qdisc_destroy(q);
	shp_kind_conf_free(kq, cq);
	shp_kind_conf_free(kt, ct);
	assert_int_equal(rte_mempool_avail_count(pool), avail);
}

/*
 * Under the flood, fq_codel serves the light flow's sparse packets first:
 * every one gets through (but those still in flight at the end), p99
 * under 5 ms, and the drops are the heavy flow's. Under pfifo_fast the
 * light packets queue behind a megabyte of the flood (838 ms at 10
 * Mbit/s) and are pushed out of its head by the tbf limit: almost none
 * gets through.
 * The heavy flow keeps the link busy either way.
 */
static void
test_light_flow_under_flood(void **state)
{
	struct bottleneck fq, pf;

	(void)state;
	bottleneck("fq_codel", &fq);
	assert_true(fq.light_got + 2 >= fq.light_sent);
	assert_true(fq.p99 < 5 * MS);
	assert_true(drops("codel") + drops("fq_overlimit") > 0);
	/* 10 Mbit/s for 10 s, less the light flow's 1 Mbit/s */
	assert_true(fq.heavy_got * 1000 * 8 > 0.98 * 9e6 * 10);
	bottleneck("pfifo_fast", &pf);
	assert_true(pf.p99 > 5 * MS);
	assert_true(pf.light_got < pf.light_sent / 2);
}

/*
 * The second offline case: one flow slightly over the rate (11
 * Mbit/s of 1000-byte frames into tbf rate 10mbit), the clock jumping
 * from event to event. CoDel judges a packet when tbf peeks it, at an
 * arrival or a departure, so each drop comes at the first event at or
 * after its scheduled time: within a packet time (800 us) of the law.
 */
static void
test_drop_schedule_under_tbf(void **state)
{
	const uint64_t interval = 100 * MS, every = 8000 * 1000 / 11;
	struct pspec s = { .flow = 1, .len = 1000 };
	struct shp_ctx ctx = { .now = 1000 * MS, .ctr = &ctr->port[0] };
	uint64_t t[20], next_a = ctx.now, sched, seen = 0;
	const struct shp_kind *kt;
	struct shp_qdisc *q, *tbf;
	char err[SHP_ERR_LEN];
	unsigned int k = 0, j;
	struct rig r;
	void *ct;

	(void)state;
	rig_init(&r, "limit 100000");
	q = r.q;
	assert_int_equal(shp_kind_parse("tbf", "rate 10mbit burst 2kb "
					"limit 1mb", NULL, &kt, &ct, err), 0);
	tbf = shp_qdisc_create(kt->ops, q, pool, 0, SOCKET_ID_ANY, ct);
	assert_non_null(tbf);
	while (k < RTE_DIM(t)) {
		struct rte_mbuf *pk[32];
		uint64_t next;
		uint16_t n;

		assert_true(ctx.now < 1000 * MS + 10000 * MS);
		for (; next_a <= ctx.now; next_a += every) {
			struct rte_mbuf *m = mkpkt(&s, next_a);

			shp_qdisc_enqueue(q, &m, 1, &ctx);
		}
		ctx.bytes = UINT64_MAX;
		n = shp_qdisc_dequeue(tbf, pk, RTE_DIM(pk), &ctx);
		rte_pktmbuf_free_bulk(pk, n);
		next = RTE_MIN(next_a, shp_qdisc_next_time(tbf, &ctx));
		/* a drop at a dequeue or at the peek next_time makes */
		if (drops("codel") > seen) {
			assert_int_equal(drops("codel"), seen + 1);
			t[k++] = ctx.now;
			seen++;
		}
		assert_true(next > ctx.now);
		ctx.now = next;
	}
	sched = t[0];
	for (j = 1; j < RTE_DIM(t); j++) {
		sched += (uint64_t)((double)interval / sqrt((double)j));
		if (!(t[j] >= sched && t[j] <= sched + 800 * US))
			fail_msg("drop %u at %" PRIu64 " ns, scheduled %"
				 PRIu64, j + 1, t[j] - t[0], sched - t[0]);
	}
	assert_int_equal(drops("fq_overlimit"), 0);
	shp_qdisc_reset_all(tbf, &ctx);
	shp_qdisc_destroy(tbf);
	kt->conf_free(ct);
	r.ctx = ctx;
	rig_fini(&r);
}

#define SEED_FLOWS 600

/* The order in which SEED_FLOWS one-packet flows come out of 256
 * buckets: flows that share a bucket come out together, so the order
 * shows the hash. */
static void
service_order(uint64_t seed, uint16_t port, uint16_t *order)
{
	const struct shp_kind_env env = { .seed = seed, .seed_set = true };
	struct shp_ctx ctx = { .now = 1000 * MS, .ctr = &ctr->port[0] };
	struct pspec s = { .len = 100 };
	char err[SHP_ERR_LEN];
	struct shp_qdisc *q;
	struct rte_mbuf *m;
	unsigned int i;
	void *c;

	c = fqc->parse("flows 256", &env, err);
	assert_non_null(c);
	q = shp_qdisc_create(fqc->ops, NULL, pool, port, SOCKET_ID_ANY, c);
	assert_non_null(q);
	for (s.flow = 0; s.flow < SEED_FLOWS; s.flow++) {
		m = mkpkt(&s, ctx.now);
		shp_qdisc_enqueue(q, &m, 1, &ctx);
	}
	for (i = 0; i < SEED_FLOWS; i++) {
		assert_int_equal(shp_qdisc_dequeue(q, &m, 1, &ctx), 1);
		order[i] = (uint16_t)pkt_flow(m);
		rte_pktmbuf_free(m);
	}
	shp_qdisc_destroy(q);
	fqc->conf_free(c);
}

/* The hash perturbation comes from --seed and the port: a run is
 * reproducible, and another seed or port hashes otherwise. */
static void
test_perturbation_seeded(void **state)
{
	static uint16_t a[SEED_FLOWS], b[SEED_FLOWS], c[SEED_FLOWS],
			d[SEED_FLOWS];

	(void)state;
	service_order(1, 0, a);
	service_order(1, 0, b);
	service_order(2, 0, c);
	service_order(1, 1, d);
	assert_memory_equal(a, b, sizeof(a));
	assert_memory_not_equal(a, c, sizeof(a));
	assert_memory_not_equal(a, d, sizeof(a));
}

/* Everything offered is sent, dropped for a named cause, or queued; a
 * reset flushes the rest and the pool is full again. Peeks on the way. */
static void
test_conservation_and_reset(void **state)
{
	struct rig r;
	uint64_t offered = 0, sent = 0, held;
	unsigned int i;
	uint32_t x = 12345;

	(void)state;
	rig_init(&r, "limit 300 target 1ms interval 10ms");
	for (i = 0; i < 20000; i++) {
		struct rte_mbuf *pk[8];
		struct pspec s;
		uint16_t n, k;

		x = x * 1103515245 + 12345;
		s = (struct pspec){ .flow = (x >> 8) % 40,
				    .len = 64 + (x >> 12) % 1400,
				    .ecn = (x >> 4) & 3 };
		r.ctx.now += 20 * US;
		put(&r, &s);
		offered++;
		if ((x & 0x30000) == 0) {
			struct rte_mbuf *p = r.q->ops->peek(r.q, &r.ctx);

			if (p != NULL) {
				n = shp_qdisc_dequeue(r.q, pk, 1, &r.ctx);
				assert_int_equal(n, 1);
				assert_ptr_equal(pk[0], p);
				rte_pktmbuf_free(pk[0]);
				sent++;
			}
		}
		if (i % 3 == 0) {
			/* a burst now and then, slower than the arrivals */
			n = shp_qdisc_dequeue(r.q, pk, i % 300 ? 1 :
					      RTE_DIM(pk), &r.ctx);
			for (k = 0; k < n; k++)
				rte_pktmbuf_free(pk[k]);
			sent += n;
		}
	}
	held = xs("queued");
	assert_int_equal(held, qlen(&r));
	assert_true(drops("codel") > 0);
	assert_true(drops("fq_overlimit") > 0);
	assert_true(xs("ecn_marked") > 0);
	assert_int_equal(offered, sent + drops("codel") +
			 drops("fq_overlimit") + held);
	shp_qdisc_reset_all(r.q, &r.ctx);
	assert_int_equal(drops("flushed"), held);
	assert_int_equal(xs("queued"), 0);
	assert_int_equal(xs("flows_active"), 0);
	assert_int_equal(xs("memory_usage"), 0);
	assert_int_equal(qlen(&r), 0);
	assert_true(r.q->ops->idle(r.q));
	assert_int_equal(shp_qdisc_next_time(r.q, &r.ctx), UINT64_MAX);
	rig_fini(&r);
}

/* A new conf is applied at the next call: a lowered limit drops what is
 * over it at once (Linux fq_codel_change), as overlimit drops. */
static void
test_change(void **state)
{
	struct pspec a = { .flow = 1, .len = 1000 };
	char err[SHP_ERR_LEN], buf[256];
	struct rig r;
	const void *old;
	void *c;
	FILE *f;

	(void)state;
	rig_init(&r, "flows 64");
	put_n(&r, a, 100);
	c = fqc->parse("limit 50 flows 4096 quantum 3000", NULL, err);
	assert_non_null(c);
	old = r.q->ops->change(r.q, c);
	assert_ptr_equal(old, r.conf);
	fqc->conf_free(r.conf);
	r.conf = c;
	assert_int_equal(drops("fq_overlimit"), 0);   /* not until a call */
	rte_pktmbuf_free(take(&r));
	assert_int_equal(drops("fq_overlimit"), 50);
	assert_int_equal(qlen(&r), 49);
	/* the dump says what is in use: the table made at start */
	f = fmemopen(buf, sizeof(buf), "w");
	r.q->ops->dump(r.q, f);
	fclose(f);
	assert_string_equal(buf, "limit 50 flows 64 quantum 3000 target 5ms "
			    "interval 100ms memory_limit 32Mb ecn");
	rig_fini(&r);
}

/* --- a link's shards (issue 56) ----------------------------------- */

/* Shard `shard` of the link of two shards `link` (zeroed by the caller),
 * counting in port block `shard` of ctr (zeroed with shard 0's). */
static void
rig_init_shard(struct rig *r, const char *args, struct shp_link_shared *link,
	       struct shp_stage_env *env, uint16_t shard)
{
	char err[SHP_ERR_LEN];

	memset(r, 0, sizeof(*r));
	if (shard == 0)
		memset(ctr, 0, sizeof(*ctr));
	*env = (struct shp_stage_env){ .socket = SOCKET_ID_ANY,
				       .shard = shard, .nb_shards = 2,
				       .link = link };
	r->avail = rte_mempool_avail_count(pool);
	r->conf = fqc->parse(args, NULL, err);
	if (r->conf == NULL)
		fail_msg("%s", err);
	r->q = shp_qdisc_create_env(fqc->ops, NULL, pool, 0, env, r->conf);
	assert_non_null(r->q);
	r->ctx.now = 1000 * MS;
	r->ctx.ctr = &ctr->port[shard];
}

static uint64_t
drops_at(unsigned int port, const char *name)
{
	unsigned int i;

	for (i = 0; i < shp_drop_nb(); i++)
		if (strcmp(shp_drop_names[i], name) == 0)
			return ctr->port[port].drops[i];
	fail_msg("no drop cause %s", name);
	return 0;
}

/*
 * Two shards of one link take frames in turn, each turn at a clock value
 * of its own (a poll): shard 0 a heavy flow of 1000-byte frames, shard 1
 * ten flows of 200 bytes. After each frame the other shard makes a call
 * too (its poll: it takes a frame every third turn, the link's rate,
 * else none). The link's packets stay within `cap` (limit, or what
 * memory_limit holds) but for the frame just taken, which the shard that
 * took it leaves to the other when that one holds the link's fattest
 * bucket, and the other sheds it in its call. With limits a shard's own
 * the link held 2 * cap.
 */
static void
link_limit_run(const char *args, unsigned int cap)
{
	static struct shp_link_shared link;
	struct shp_stage_env env[2];
	struct pspec heavy = { .flow = 1, .len = 1000 };
	struct pspec light = { .flow = 10, .len = 200 };
	unsigned int i, most = 0, over = 0, taken = 0;
	struct rig r[2];

	memset(&link, 0, sizeof(link));
	rig_init_shard(&r[0], args, &link, &env[0], 0);
	rig_init_shard(&r[1], args, &link, &env[1], 1);
	for (i = 0; i < 4000; i++) {
		unsigned int s = (i / 2) % 2 == 0 ? 0 : 1;   /* 0 0 1 1 .. */
		struct rte_mbuf *m = NULL;
		uint16_t want = i % 3 == 2;

		r[0].ctx.now = r[1].ctx.now = 1000 * MS + i * 10 * US;
		if (s == 0) {
			put(&r[0], &heavy);
			heavy.seq++;
		} else {
			light.flow = 10 + (i / 4) % 10;
			put(&r[1], &light);
			light.seq++;
		}
		if (qlen(&r[0]) + qlen(&r[1]) > cap)
			over++;
		assert_true(qlen(&r[0]) + qlen(&r[1]) <= cap + 1);
		if (shp_qdisc_dequeue(r[1 - s].q, &m, want,
				      &r[1 - s].ctx)) {
			rte_pktmbuf_free(m);
			taken++;
		}
		most = RTE_MAX(most, qlen(&r[0]) + qlen(&r[1]));
		assert_true(qlen(&r[0]) + qlen(&r[1]) <= cap);
	}
	/* the link filled, both held its fattest bucket at times, and
	 * one left the excess to the other at times */
	assert_int_equal(most, cap);
	assert_true(drops_at(0, "fq_overlimit") > 0);
	assert_true(drops_at(1, "fq_overlimit") > 0);
	assert_true(over > 0);
	/* every frame sent, dropped by the overflow or still queued */
	assert_int_equal(taken + drops_at(0, "fq_overlimit") +
			 drops_at(1, "fq_overlimit") + qlen(&r[0]) +
			 qlen(&r[1]), 4000);
	print_message("%s: fq_overlimit %" PRIu64 " + %" PRIu64 ", %u sent, "
		      "the link over by a frame after %u of 4000\n", args,
		      drops_at(0, "fq_overlimit"),
		      drops_at(1, "fq_overlimit"), taken, over);
	shp_qdisc_reset_all(r[0].q, &r[0].ctx);
	shp_qdisc_reset_all(r[1].q, &r[1].ctx);
	rig_fini(&r[1]);
	rig_fini(&r[0]);
}

static void
test_link_limits(void **state)
{
	unsigned int ts = sizeof(struct rte_mbuf) + SHP_MBUF_PRIV_SIZE +
			  RTE_MBUF_DEFAULT_BUF_SIZE;
	char args[64];

	(void)state;
	/* (CoDel kept out: every drop is the overflow's) */
	link_limit_run("limit 100 target 10s interval 20s", 100);
	/* memory_limit: room for 60 and a half buffers */
	snprintf(args, sizeof(args), "memory_limit %u target 10s "
		 "interval 20s", 60 * ts + ts / 2);
	link_limit_run(args, 60);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_defaults_and_round_trip),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_tc_grammar_and_print),
		cmocka_unit_test(test_sparse_flow_priority),
		cmocka_unit_test(test_fair_share),
		cmocka_unit_test(test_drop_schedule),
		cmocka_unit_test(test_ecn_marks_instead),
		cmocka_unit_test(test_codel_resumes_rate),
		cmocka_unit_test(test_codel_spares_one_mtu),
		cmocka_unit_test(test_ecn_ipv6_tagged),
		cmocka_unit_test(test_ce_threshold),
		cmocka_unit_test(test_overflow_hits_fattest),
		cmocka_unit_test(test_overflow_unthrottled_is_overload),
		cmocka_unit_test(test_flow_hash),
		cmocka_unit_test(test_perturbation_seeded),
		cmocka_unit_test(test_light_flow_under_flood),
		cmocka_unit_test(test_drop_schedule_under_tbf),
		cmocka_unit_test(test_conservation_and_reset),
		cmocka_unit_test(test_change),
		cmocka_unit_test(test_link_limits),
	};

	(void)argc;
	(void)argv;
	shp_rig_env("fq_codel", 1024);
	pool = shp_rig_pool_create("fq_codel_pool", 16384, RTE_MBUF_DEFAULT_BUF_SIZE);
	ctr = rte_zmalloc("ctr", sizeof(*ctr), RTE_CACHE_LINE_SIZE);
	fqc = shp_kind_find("fq_codel");
	if (fqc == NULL) {
		fprintf(stderr, "fq_codel is not registered\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
