/* SPDX-License-Identifier: BSD-3-Clause */
/* The drop capture's producers (drop_capture.h). */
#include <inttypes.h>
#include <string.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "drop_capture.h"
#include "shp_meta.h"
#include "shp_qdisc.h"
#include "shp_units.h"

struct shp_capture_count shp_capture_counts[SHP_MAX_PORTS];
bool shp_capture_ran;

void
shp_dropcap_account(struct shp_dropcap *c)
{
	unsigned int p;

	for (p = 0; p < SHP_MAX_PORTS; p++) {
		uint64_t l = __atomic_load_n(&c->lost[p], __ATOMIC_RELAXED);

		__atomic_store_n(&shp_capture_counts[p].lost,
				 shp_capture_counts[p].lost + l -
				 c->lost_seen[p], __ATOMIC_RELAXED);
		c->lost_seen[p] = l;
	}
}

/* ports.N.capture in the stats file, once a capture ran */
static void
capture_json(FILE *f, uint16_t port)
{
	if (!shp_capture_ran || port >= SHP_MAX_PORTS)
		return;
	fprintf(f, ",\n    \"capture\": {\"captured\": %" PRIu64
		", \"capture_lost\": %" PRIu64 "}",
		__atomic_load_n(&shp_capture_counts[port].captured,
				__ATOMIC_RELAXED),
		__atomic_load_n(&shp_capture_counts[port].lost,
				__ATOMIC_RELAXED));
}

static void
capture_add_port(uint16_t port, int shard, struct shp_port_ctr *s)
{
	(void)port; (void)shard; (void)s;
}

static const struct shp_stats_source capture_source = {
	.add_port = capture_add_port,
	.json = capture_json,
};

RTE_INIT(capture_source_init)
{
	shp_stats_source_register(&capture_source);
}

/* what one producer's records may take: a burst of drops between two
 * visits of the writer, without pinning much memory per lcore */
#define CAP_MEM_BUDGET (UINT64_C(8) << 20)
#define CAP_RECS_MIN 64u
#define CAP_RECS_MAX 65536u
#define CAP_BURST 64

static size_t
rec_size(uint32_t snaplen)
{
	return RTE_ALIGN_CEIL(sizeof(struct shp_caprec) + snaplen,
			      RTE_CACHE_LINE_SIZE);
}

struct shp_dropcap *
shp_dropcap_new(uint32_t snaplen, int socket)
{
	size_t sz = rec_size(snaplen);
	unsigned int n, i;
	struct shp_dropcap *c;
	static unsigned int seq;
	char name[RTE_RING_NAMESIZE];

	n = (unsigned int)RTE_MIN((uint64_t)CAP_RECS_MAX,
				  CAP_MEM_BUDGET / sz);
	n = RTE_MAX(n, CAP_RECS_MIN);
	n = rte_align32prevpow2(n);
	c = rte_zmalloc_socket("shp_dropcap", sizeof(*c), RTE_CACHE_LINE_SIZE,
			       socket);
	if (c == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	c->snaplen = snaplen;
	c->drops = true;
	c->mem = rte_malloc_socket("shp_dropcap_recs", sz * n,
				   RTE_CACHE_LINE_SIZE, socket);
	snprintf(name, sizeof(name), "cap_f%u", seq);
	c->full = shp_ring_new(name, n, socket, RING_F_SP_ENQ | RING_F_SC_DEQ |
			       RING_F_EXACT_SZ, true);
	snprintf(name, sizeof(name), "cap_e%u", seq++);
	c->free = shp_ring_new(name, n, socket, RING_F_SP_ENQ | RING_F_SC_DEQ |
			       RING_F_EXACT_SZ, true);
	if (c->mem == NULL || c->full == NULL || c->free == NULL) {
		shp_dropcap_free(c);
		rte_errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		void *r = (char *)c->mem + (size_t)i * sz;

		rte_ring_sp_enqueue(c->free, r);
	}
	return c;
}

struct shp_dropcap *
shp_dropcap_new_direct(uint32_t snaplen, shp_cap_direct_t direct, void *arg)
{
	struct shp_dropcap *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->snaplen = snaplen;
	c->direct = direct;
	c->arg = arg;
	c->rec = malloc(rec_size(snaplen));
	if (c->rec == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

void
shp_dropcap_free(struct shp_dropcap *c)
{
	if (c == NULL)
		return;
	if (c->direct != NULL) {
		free(c->rec);
		free(c);
		return;
	}
	shp_ring_free(c->full);
	shp_ring_free(c->free);
	rte_free(c->mem);
	rte_free(c);
}

static void
rec_fill(struct shp_caprec *r, const struct shp_captag *t, uint64_t now,
	 unsigned int slot, unsigned int band, uint32_t len)
{
	r->time_ns = now;
	r->orig_len = len;
	r->port = t->port;
	r->shard = t->shard;
	r->slot = (uint8_t)slot;
	r->band = (uint8_t)band;
	r->copy = t->copy;
	r->kind = SHP_CAP_K_DROP;
	if (t->cls != NULL)
		snprintf(r->cls, sizeof(r->cls), "%s", t->cls);
	else
		r->cls[0] = '\0';
}

/* The first caplen bytes of m into r (a chain: rte_pktmbuf_read). */
static void
rec_copy(struct shp_caprec *r, uint32_t snaplen, const struct rte_mbuf *m)
{
	uint32_t len = RTE_MIN(rte_pktmbuf_pkt_len(m), snaplen);
	const void *p = rte_pktmbuf_read(m, 0, len, r->data);

	if (p != r->data)
		memcpy(r->data, p, len);
	r->caplen = (uint16_t)len;
}

/* A packet log record, no bytes: a fate (slot: its drop cause, or
 * SHP_CAP_SENT) at now of a frame that arrived at rx. */
static void
log_one(struct shp_dropcap *c, const struct shp_captag *t, uint64_t now,
	unsigned int slot, uint64_t rx, unsigned int band, bool copy)
{
	struct shp_caprec *r;

	if (rte_ring_sc_dequeue(c->free, (void **)&r) != 0) {
		c->lost[t->port]++;
		return;
	}
	rec_fill(r, t, now, slot, band, 0);
	r->kind = SHP_CAP_K_LOG;
	r->rx_ns = rx;
	r->copy = copy;
	r->caplen = 0;
	rte_ring_sp_enqueue(c->full, r);
}

/* The drops of pkts[0..n) the log samples: one fate in log_every,
 * pkts[log_left] the next. */
static void
log_drops(struct shp_dropcap *c, const struct shp_captag *t, uint64_t now,
	  unsigned int slot, struct rte_mbuf *const *pkts, uint16_t n)
{
	uint32_t i;

	for (i = c->log_left; i < n; i += c->log_every) {
		const struct shp_meta *m = shp_meta(pkts[i]);

		if (t->fresh)
			log_one(c, t, now, slot, now, SHP_CAP_NO_BAND, t->copy);
		else
			log_one(c, t, now, slot, m->rx_ns, m->band, t->copy ||
				(m->flags & SHP_META_F_DUP));
	}
	c->log_left = i - n;
}

void
shp_dropcap_log_sent(struct shp_dropcap *c, const struct shp_captag *t,
		     uint64_t now, const uint64_t *soj, const uint8_t *band,
		     const uint8_t *flags, uint16_t n)
{
	uint32_t i;

	if (c->log_every == 0)
		return;
	for (i = c->log_left; i < n; i += c->log_every)
		log_one(c, t, now, SHP_CAP_SENT,
			soj != NULL ? now - RTE_MIN(soj[i], now) : now,
			band != NULL ? band[i] : SHP_CAP_NO_BAND,
			flags != NULL && (flags[i] & SHP_META_F_DUP));
	c->log_left = i - n;
}

void
shp_dropcap_put(struct shp_dropcap *c, const struct shp_captag *t,
		uint64_t now, unsigned int slot, unsigned int band,
		struct rte_mbuf *const *pkts, uint16_t n)
{
	struct shp_caprec *recs[CAP_BURST];
	unsigned int got, i;

	if (c->log_every != 0 && c->direct == NULL)
		log_drops(c, t, now, slot, pkts, n);
	if (!c->drops && c->direct == NULL)
		return;
	if (c->direct != NULL) {
		for (i = 0; i < n; i++) {
			rec_fill(c->rec, t, now, slot, band,
				 rte_pktmbuf_pkt_len(pkts[i]));
			rec_copy(c->rec, c->snaplen, pkts[i]);
			c->direct(c->arg, c->rec, pkts[i]);
		}
		return;
	}
	if (__atomic_load_n(&c->file_full, __ATOMIC_RELAXED)) {
		c->lost[t->port] += n;
		return;
	}
	while (n > 0) {
		uint16_t k = RTE_MIN(n, (uint16_t)CAP_BURST);

		got = rte_ring_sc_dequeue_burst(c->free, (void **)recs, k,
						NULL);
		c->lost[t->port] += k - got;
		for (i = 0; i < got; i++) {
			rec_fill(recs[i], t, now, slot, band,
				 rte_pktmbuf_pkt_len(pkts[i]));
			rec_copy(recs[i], c->snaplen, pkts[i]);
		}
		/* as many slots as records: never short */
		rte_ring_sp_enqueue_burst(c->full, (void **)recs, got, NULL);
		pkts += k;
		n -= k;
	}
}

void
shp_dropcap_put_raw(struct shp_dropcap *c, const struct shp_captag *t,
		    uint64_t now, unsigned int slot, const void *data,
		    uint32_t len)
{
	struct shp_caprec *r = c->rec;

	if (c->direct == NULL) {
		if (rte_ring_sc_dequeue(c->free, (void **)&r) != 0) {
			c->lost[t->port]++;
			return;
		}
	}
	rec_fill(r, t, now, slot, SHP_CAP_NO_BAND, len);
	r->caplen = (uint16_t)RTE_MIN(len, c->snaplen);
	memcpy(r->data, data, r->caplen);
	if (c->direct != NULL)
		c->direct(c->arg, r, NULL);
	else
		rte_ring_sp_enqueue(c->full, r);
}

unsigned int
shp_dropcap_take(struct shp_dropcap *c, struct shp_caprec **recs,
		 unsigned int n)
{
	return rte_ring_sc_dequeue_burst(c->full, (void **)recs, n, NULL);
}

void
shp_dropcap_give(struct shp_dropcap *c, struct shp_caprec **recs,
		 unsigned int n)
{
	rte_ring_sp_enqueue_burst(c->free, (void **)recs, n, NULL);
}

int
shp_capture_parse_snaplen(const char *s, uint32_t *v, char *err)
{
	uint64_t n;

	if (shp_parse_u64(s, &n, err) < 0 || n == 0 ||
	    n > SHP_CAP_SNAPLEN_MAX) {
		snprintf(err, SHP_ERR_LEN, "snaplen '%s': expected bytes, "
			 "1..%u", s, SHP_CAP_SNAPLEN_MAX);
		return -1;
	}
	*v = (uint32_t)n;
	return 0;
}

int
shp_capture_parse_limit(const char *s, uint64_t *v, char *err)
{
	uint64_t n;

	if (shp_parse_size(s, &n, err) < 0 || n < 4096) {
		snprintf(err, SHP_ERR_LEN, "limit '%s': expected a size of "
			 "at least 4kb (e.g. 256mb)", s);
		return -1;
	}
	*v = n;
	return 0;
}
