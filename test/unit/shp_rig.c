/* SPDX-License-Identifier: BSD-3-Clause */
/* The unit tests' harness (shp_rig.h). */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <cmocka.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "sch_bands.h"
#include "shp_netem.h"
#include "shp_tbf.h"
#include "shp_rig.h"

struct rte_mempool *shp_rig_pool;
struct shp_lcore_ctr *shp_rig_ctr;

uint64_t
shp_rig_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int
shp_rig_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ------------------------------------------- a link's shards on threads */

static void *
hammer_run(void *arg)
{
	struct shp_rig_hammer *h = arg;
	struct shp_ctx *ctx = &h->r->ctx;
	uint64_t in = 0, out = 0, now;

	while ((now = shp_rig_clock_ns()) < h->give_up &&
	       (now < h->until || h->n == 0 ||
		__atomic_load_n(h->other, __ATOMIC_RELAXED) == 0)) {
		struct rte_mbuf *pkts[32];
		uint16_t k, i;

		ctx->now = now;
		while (in - out < h->backlog) {
			struct rte_mbuf *m = shp_rig_pkt(h->len, 0, now);

			if (m == NULL ||
			    shp_qdisc_enqueue(h->r->stage[0], &m, 1, ctx) != 1) {
				h->bad = true;
				return NULL;
			}
			in++;
		}
		k = shp_qdisc_dequeue(h->r->root, pkts, RTE_DIM(pkts), ctx);
		for (i = 0; i < k; i++) {
			if (h->n == RTE_DIM(h->tts)) {
				h->bad = true;
				break;
			}
			h->tts[h->n] = shp_meta(pkts[i])->time_to_send;
			__atomic_store_n(&h->n, h->n + 1, __ATOMIC_RELAXED);
		}
		rte_pktmbuf_free_bulk(pkts, k);
		out += k;
		h->last = now;
	}
	return NULL;
}

unsigned int
shp_rig_hammer_two(struct shp_rig_hammer h[2], unsigned int ms,
		   uint64_t *start, uint64_t *all)
{
	pthread_t th[2];
	unsigned int i, n = 0;

	*start = shp_rig_clock_ns();
	for (i = 0; i < 2; i++) {
		h[i].until = *start + (uint64_t)ms * 1000000u;
		h[i].give_up = *start + UINT64_C(10000000000);
		h[i].other = &h[!i].n;
		h[i].n = 0;
		h[i].bad = false;
		assert_int_equal(pthread_create(&th[i], NULL, hammer_run,
						&h[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_false(h[i].bad);
		assert_true(h[i].n > 0);
		memcpy(all + n, h[i].tts, h[i].n * sizeof(all[0]));
		n += h[i].n;
	}
	qsort(all, n, sizeof(all[0]), shp_rig_cmp_u64);
	return n;
}

/* ------------------------------------------------------ the environment */

static char run_dir[PATH_MAX];

/* The EAL makes /var/run/dpdk/PREFIX (files only) even with --no-shconf,
 * and leaves it: a test run must not. (Without --no-telemetry, the
 * telemetry thread could make its socket there after this ran.) */
static void
run_dir_remove(void)
{
	DIR *d = opendir(run_dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(run_dir);
}

struct rte_mempool *
shp_rig_pool_create(const char *name, unsigned int n, uint16_t data_room)
{
	struct rte_mempool *mp;

	mp = rte_pktmbuf_pool_create(name, n, 0, SHP_MBUF_PRIV_SIZE,
				     data_room, SOCKET_ID_ANY);
	if (mp == NULL) {
		fprintf(stderr, "pool %s: %s\n", name,
			rte_strerror(rte_errno));
		exit(1);
	}
	return mp;
}

struct rte_mempool *
shp_rig_env(const char *name, unsigned int nb_mbufs)
{
	char prefix[64];
	char *argv[] = {
		(char *)name, "--no-huge", "--no-pci", "--no-shconf",
		"--no-telemetry", "-m", "512", "--log-level=error", "-l", "0",
		prefix, NULL
	};

	snprintf(prefix, sizeof(prefix), "--file-prefix=t_%s_%d", name,
		 (int)getpid());
	if (rte_eal_init(RTE_DIM(argv) - 1, argv) < 0) {
		fprintf(stderr, "%s: rte_eal_init failed\n", name);
		exit(1);
	}
	snprintf(run_dir, sizeof(run_dir), "%s", rte_eal_get_runtime_dir());
	atexit(run_dir_remove);
	shp_rig_pool = shp_rig_pool_create(name, nb_mbufs,
					   RTE_MBUF_DEFAULT_BUF_SIZE);
	shp_rig_ctr = rte_zmalloc("shp_rig_ctr", sizeof(*shp_rig_ctr),
				  RTE_CACHE_LINE_SIZE);
	if (shp_rig_ctr == NULL) {
		fprintf(stderr, "%s: no memory for the counters\n", name);
		exit(1);
	}
	return shp_rig_pool;
}

void
shp_rig_assert_pool_full(struct rte_mempool *mp)
{
	unsigned int avail = rte_mempool_avail_count(mp);

	if (avail != mp->size)
		fail_msg("pool %s: %u of %u mbufs are not back", mp->name,
			 mp->size - avail, mp->size);
}

/* ------------------------------------------------------------ packets */

struct rte_mbuf *
shp_rig_pkt_from(struct rte_mempool *mp, uint16_t len, uint8_t fill,
		 uint64_t now)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	char *p;

	assert_non_null(m);
	p = rte_pktmbuf_append(m, len);
	assert_non_null(p);
	memset(p, fill, len);
	shp_meta_init(m, now);
	return m;
}

struct rte_mbuf *
shp_rig_pkt(uint16_t len, uint8_t fill, uint64_t now)
{
	return shp_rig_pkt_from(shp_rig_pool, len, fill, now);
}

struct rte_mbuf *
shp_rig_pkt_due(uint64_t tts, uint16_t len)
{
	struct rte_mbuf *m = shp_rig_pkt(len, 0, 0);

	shp_meta(m)->time_to_send = tts;
	return m;
}

/* Writes the headers of f into a frame of len bytes at p. */
static void
write_flow(uint8_t *p, uint16_t len, const struct shp_rig_flow *f)
{
	struct rte_ether_hdr *eh = (void *)p;
	uint8_t proto = f->proto != 0 ? f->proto : IPPROTO_UDP;
	uint16_t l4_len = proto == IPPROTO_TCP ? sizeof(struct rte_tcp_hdr) :
			  sizeof(struct rte_udp_hdr);
	uint32_t off = sizeof(*eh);

	memset(eh->src_addr.addr_bytes, 0x02, RTE_ETHER_ADDR_LEN);
	memset(eh->dst_addr.addr_bytes, 0x02, RTE_ETHER_ADDR_LEN);
	eh->dst_addr.addr_bytes[5] = 1;
	if (f->vlan != 0) {
		struct rte_vlan_hdr *vh = (void *)(p + off);

		eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vh->vlan_tci = rte_cpu_to_be_16(f->vlan);
		vh->eth_proto = rte_cpu_to_be_16(f->ipv6 ?
			RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
		off += sizeof(*vh);
	} else {
		eh->ether_type = rte_cpu_to_be_16(f->ipv6 ?
			RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
	}
	if (f->ipv6) {
		struct rte_ipv6_hdr *ip6 = (void *)(p + off);
		uint32_t src = rte_cpu_to_be_32(f->src);
		uint32_t dst = rte_cpu_to_be_32(f->dst);

		assert_true(len >= off + sizeof(*ip6) + l4_len);
		ip6->vtc_flow = rte_cpu_to_be_32(6u << 28 |
						 (uint32_t)f->tos << 20 |
						 (f->flow_label & 0xfffff));
		ip6->payload_len = rte_cpu_to_be_16(len - off - sizeof(*ip6));
		ip6->proto = proto;
		ip6->hop_limits = 64;
		memcpy(ip6->src_addr + 12, &src, 4);
		memcpy(ip6->dst_addr + 12, &dst, 4);
		off += sizeof(*ip6);
	} else {
		struct rte_ipv4_hdr *ip = (void *)(p + off);

		assert_true(len >= off + sizeof(*ip) + l4_len);
		ip->version_ihl = 0x45;
		ip->type_of_service = f->tos;
		ip->total_length = rte_cpu_to_be_16(len - off);
		ip->time_to_live = 64;
		ip->next_proto_id = proto;
		ip->src_addr = rte_cpu_to_be_32(f->src);
		ip->dst_addr = rte_cpu_to_be_32(f->dst);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		off += sizeof(*ip);
	}
	if (proto == IPPROTO_TCP) {
		struct rte_tcp_hdr *th = (void *)(p + off);

		th->src_port = rte_cpu_to_be_16(f->sport);
		th->dst_port = rte_cpu_to_be_16(f->dport);
		th->data_off = 5 << 4;
	} else {
		struct rte_udp_hdr *uh = (void *)(p + off);

		uh->src_port = rte_cpu_to_be_16(f->sport);
		uh->dst_port = rte_cpu_to_be_16(f->dport);
		uh->dgram_len = rte_cpu_to_be_16(len - off);
	}
}

void
shp_rig_pkts(struct rte_mbuf **pkts, uint16_t n, uint16_t len, uint8_t band,
	     const struct shp_rig_flow *flow, uint64_t now)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		pkts[i] = shp_rig_pkt(len, 0, now);
		shp_meta(pkts[i])->band = band;
		if (flow != NULL)
			write_flow(rte_pktmbuf_mtod(pkts[i], uint8_t *), len,
				   flow);
	}
}

/* ---------------------------------------------------- the fifo stage */

#define FIFO_CAP 8192

struct fifo {
	struct rte_mbuf *m[FIFO_CAP];
	unsigned int head, tail;
};

static uint16_t
fifo_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	     struct shp_ctx *ctx)
{
	struct fifo *f = q->priv;
	uint16_t i;

	(void)ctx;
	assert_true(f->tail - f->head + n <= FIFO_CAP);
	for (i = 0; i < n; i++)
		f->m[f->tail++ % FIFO_CAP] = pkts[i];
	return n;
}

static uint16_t
fifo_dequeue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
	     struct shp_ctx *ctx)
{
	struct fifo *f = q->priv;
	uint16_t i;

	ctx->bytes = 0;
	for (i = 0; i < n && f->head != f->tail; i++) {
		pkts[i] = f->m[f->head++ % FIFO_CAP];
		ctx->bytes += rte_pktmbuf_pkt_len(pkts[i]);
	}
	return i;
}

static struct rte_mbuf *
fifo_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct fifo *f = q->priv;

	(void)ctx;
	return f->head != f->tail ? f->m[f->head % FIFO_CAP] : NULL;
}

static void
fifo_reset(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	struct fifo *f = q->priv;

	while (f->head != f->tail)
		shp_drop(ctx, SHP_DROP_FLUSHED, f->m[f->head++ % FIFO_CAP]);
}

static void
fifo_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	const struct fifo *f = q->priv;
	unsigned int i;

	st->qlen = f->tail - f->head;
	st->backlog = 0;
	for (i = f->head; i != f->tail; i++)
		st->backlog += rte_pktmbuf_pkt_len(f->m[i % FIFO_CAP]);
}

const struct shp_qdisc_ops shp_rig_fifo_ops = {
	.id = "fifo",
	.priv_size = sizeof(struct fifo),
	.enqueue = fifo_enqueue,
	.dequeue = fifo_dequeue,
	.peek = fifo_peek,
	.reset = fifo_reset,
	.stats = fifo_stats,
};

/* ------------------------------------------------------------ kinds */

/*
 * What the rig knows of each kind: its ops, and how to make and free a
 * conf from tc arguments. (When lib/ registers its kinds by name, this
 * table gives way to the registry's lookup.)
 */
struct shp_rig_kind {
	const char *name;
	const struct shp_qdisc_ops *ops;
	void *(*parse)(const char *args, char *err);
	void (*free)(void *conf);
	const struct shp_kind *reg;   /* a registered kind: its parse */
};

/* bands: [N] [ring SIZE] [sp]; the ring name is made unique here */
struct bands_conf {
	struct shp_bands_conf c;
	char name[16];
};

static void *
bands_parse(const char *args, char *err)
{
	static unsigned int id;
	struct bands_conf *b = calloc(1, sizeof(*b));
	char buf[128], *w, *save = NULL;

	assert_non_null(b);
	snprintf(b->name, sizeof(b->name), "rig%u", id++);
	b->c = (struct shp_bands_conf){
		.name = b->name, .nb_bands = 3, .ring_size = 4096,
		.socket = SOCKET_ID_ANY, .ctr_blocks = shp_rig_ctr,
		.nb_ctr_blocks = 1,
	};
	snprintf(buf, sizeof(buf), "%s", args != NULL ? args : "");
	for (w = strtok_r(buf, " ", &save); w != NULL;
	     w = strtok_r(NULL, " ", &save)) {
		if (strcmp(w, "ring") == 0 &&
		    (w = strtok_r(NULL, " ", &save)) != NULL)
			b->c.ring_size = (unsigned int)atoi(w);
		else if (strcmp(w, "sp") == 0)
			b->c.single_producer = 1;
		else if (w[0] >= '1' && w[0] <= '9')
			b->c.nb_bands = (unsigned int)atoi(w);
		else {
			snprintf(err, SHP_ERR_LEN, "bands: what is '%s'?", w);
			free(b);
			return NULL;
		}
	}
	return b;
}

/* The rig's own (bands with ring options, a test fifo), then every kind
 * of the registry (lib/core/shp_kinds.c) by its name: a new kind needs no
 * line here. */
static const struct shp_rig_kind kinds[] = {
	{ "bands", &shp_bands_ops, bands_parse, free, NULL },
	{ "fifo", &shp_rig_fifo_ops, NULL, NULL, NULL },
};
static struct shp_rig_kind reg_kinds[16];

static const struct shp_rig_kind *
kind_find(const char *name)
{
	const struct shp_kind *k;
	unsigned int i;

	for (i = 0; i < RTE_DIM(kinds); i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	k = shp_kind_find(name);
	for (i = 0; k != NULL && i < RTE_DIM(reg_kinds); i++) {
		if (reg_kinds[i].reg == NULL)
			reg_kinds[i] = (struct shp_rig_kind){
				k->name, k->ops, NULL, k->conf_free, k };
		if (reg_kinds[i].reg == k)
			return &reg_kinds[i];
	}
	fail_msg("the rig knows no stage kind '%s'", name);
	return NULL;
}

/* ------------------------------------------------------------- the rig */

static unsigned int live_rigs;

void
shp_rig_init(struct shp_rig *r, uint16_t port)
{
	assert_non_null(shp_rig_ctr);
	assert_true(port < SHP_MAX_PORTS);
	memset(r, 0, sizeof(*r));
	r->port = port;
	r->c = &shp_rig_ctr->port[port];
	memset(r->c, 0, sizeof(*r->c));
	r->ctx.ctr = r->c;
	live_rigs++;
}

static struct shp_qdisc *
rig_push(struct shp_rig *r, const struct shp_rig_kind *k,
	 const struct shp_qdisc_ops *ops, void *conf)
{
	const void *c = conf;
	struct shp_qdisc *q;

	assert_true(r->nb_stages < SHP_RIG_MAX_STAGES);
	/* (a bands_conf starts with the shp_bands_conf the stage reads) */
	q = r->env != NULL ?
	    shp_qdisc_create_env(ops, r->root, shp_rig_pool, r->port,
				 r->env, c) :
	    shp_qdisc_create(ops, r->root, shp_rig_pool, r->port,
			     SOCKET_ID_ANY, c);
	if (q == NULL)
		fail_msg("cannot create a %s stage", ops->id);
	r->kind[r->nb_stages] = k;
	r->conf[r->nb_stages] = conf;
	r->stage[r->nb_stages++] = q;
	r->root = q;
	return q;
}

struct shp_qdisc *
shp_rig_add(struct shp_rig *r, const char *kind, const char *args)
{
	const struct shp_rig_kind *k = kind_find(kind);
	char err[SHP_ERR_LEN] = "";
	void *conf = NULL;

	if (k->reg != NULL && (k->reg->slot == SHP_SLOT_QUEUE ||
			       (args != NULL && args[0] != '\0'))) {
		conf = k->reg->parse(args != NULL ? args : "", NULL, err);
		if (conf == NULL)
			fail_msg("%s '%s': %s", kind, args, err);
	} else if (k->parse != NULL && (k->ops == &shp_bands_ops ||
				 (args != NULL && args[0] != '\0'))) {
		conf = k->parse(args, err);
		if (conf == NULL)
			fail_msg("%s '%s': %s", kind, args, err);
	}
	return rig_push(r, k, k->ops, conf);
}

struct shp_qdisc *
shp_rig_push(struct shp_rig *r, const struct shp_qdisc_ops *ops,
	     const void *conf)
{
	struct shp_qdisc *q = rig_push(r, NULL, ops, (void *)(uintptr_t)conf);

	r->conf[r->nb_stages - 1] = NULL;   /* the caller's */
	return q;
}

void
shp_rig_build(struct shp_rig *r, uint16_t port, const char *const *specs)
{
	shp_rig_init(r, port);
	for (; *specs != NULL; specs++) {
		char kind[32];
		size_t n = strcspn(*specs, " ");

		assert_true(n < sizeof(kind));
		memcpy(kind, *specs, n);
		kind[n] = '\0';
		shp_rig_add(r, kind, *specs + n + strspn(*specs + n, " "));
	}
}

struct shp_qdisc *
shp_rig_find(const struct shp_rig *r, const char *kind)
{
	unsigned int i;

	for (i = 0; i < r->nb_stages; i++)
		if (strcmp(r->stage[i]->ops->id, kind) == 0 ||
		    (r->kind[i] != NULL && strcmp(r->kind[i]->name, kind) == 0))
			return r->stage[i];
	return NULL;
}

void *
shp_rig_conf(const struct shp_rig *r, const char *kind)
{
	unsigned int i;

	for (i = 0; i < r->nb_stages; i++)
		if (r->kind[i] != NULL && strcmp(r->kind[i]->name, kind) == 0)
			return r->conf[i];
	return NULL;
}

uint16_t
shp_rig_enqueue_at(struct shp_rig *r, uint64_t t, struct rte_mbuf **pkts,
		   uint16_t n)
{
	assert_true(r->nb_stages > 0);
	r->ctx.now = t;
	return shp_qdisc_enqueue(r->stage[0], pkts, n, &r->ctx);
}

uint16_t
shp_rig_dequeue_at(struct shp_rig *r, uint64_t t, struct rte_mbuf **pkts,
		   uint16_t n)
{
	assert_non_null(r->root);
	r->ctx.now = t;
	return shp_qdisc_dequeue(r->root, pkts, n, &r->ctx);
}

uint64_t
shp_rig_poll(struct shp_rig *r)
{
	struct rte_mbuf *out[32];
	uint64_t total = 0;
	uint16_t k, i;

	do {
		k = shp_qdisc_dequeue(r->root, out, RTE_DIM(out), &r->ctx);
		for (i = 0; i < k; i++) {
			uint64_t tts = shp_meta(out[i])->time_to_send;

			if (tts > r->ctx.now || tts < r->last_tts)
				fail_msg("tts %lu now %lu last %lu",
					 (unsigned long)tts,
					 (unsigned long)r->ctx.now,
					 (unsigned long)r->last_tts);
			r->last_tts = tts;
			r->out++;
			if (r->on_pkt != NULL)
				r->on_pkt(r, out[i]);
		}
		rte_pktmbuf_free_bulk(out, k);
		total += k;
	} while (k == RTE_DIM(out));
	return total;
}

uint64_t
shp_rig_stream(struct shp_rig *r, uint64_t n, uint64_t gap,
	       struct rte_mbuf *(*mk)(uint64_t seq, uint64_t now))
{
	uint64_t i, in = 0;

	for (i = 0; i < n; i++) {
		uint64_t now = i * gap;
		struct rte_mbuf *m = mk != NULL ? mk(i, now) :
			shp_rig_pkt(100, (uint8_t)i, now);

		in += shp_rig_enqueue_at(r, now, &m, 1);
		shp_rig_poll(r);
	}
	return in;
}

uint64_t
shp_rig_drain(struct shp_rig *r)
{
	uint64_t total = 0, nt;

	for (;;) {
		uint64_t k = shp_rig_poll(r);

		total += k;
		if (shp_qdisc_qlen_total(r->root) == 0)
			return total;
		nt = shp_qdisc_next_time(r->root, &r->ctx);
		if (nt == UINT64_MAX || (nt <= r->ctx.now && k == 0))
			fail_msg("%u packets held, none released (next %lu, "
				 "now %lu)", shp_qdisc_qlen_total(r->root),
				 (unsigned long)nt, (unsigned long)r->ctx.now);
		if (nt > r->ctx.now)
			r->ctx.now = nt;
	}
}

void
shp_rig_fini(struct shp_rig *r)
{
	unsigned int i;

	if (r->root != NULL)
		shp_qdisc_reset_all(r->root, &r->ctx);
	for (i = r->nb_stages; i-- > 0;) {
		shp_qdisc_destroy(r->stage[i]);
		if (r->conf[i] != NULL && r->kind[i]->free != NULL)
			r->kind[i]->free(r->conf[i]);
	}
	r->nb_stages = 0;
	r->root = NULL;
	assert_true(live_rigs > 0);
	/* another rig may still hold packets: the pool is whole once the
	 * last one is gone */
	if (--live_rigs == 0)
		shp_rig_assert_pool_full(shp_rig_pool);
}
