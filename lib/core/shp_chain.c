/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <rte_errno.h>
#include <rte_ring.h>

#include "shp_chain.h"
#include "shp_stats.h"   /* SHP_MAX_PORTS */
#include "shp_units.h"

void
shp_chain_spec_free(struct shp_chain_spec *spec)
{
	unsigned int s;

	for (s = 0; s < SHP_SLOT_MAX; s++) {
		if (spec->kind[s] != NULL)
			shp_kind_conf_free(spec->kind[s], spec->conf[s]);
		spec->conf[s] = NULL;
	}
}

void
shp_chain_spec_twin(struct shp_chain_spec *spec, const struct shp_chain *first)
{
	unsigned int s;

	for (s = 0; s < SHP_SLOT_MAX; s++) {
		const struct shp_kind *k = spec->kind[s] != NULL ?
			spec->kind[s] : shp_kind_default((enum shp_slot)s);

		if (k != NULL && first->kind[s] == k)
			shp_conf_twin(spec->conf[s], first->conf[s]);
	}
}

void
shp_chain_spec_kinds(const struct shp_chain_spec *spec,
		     struct shp_chain *kinds)
{
	unsigned int s;

	memset(kinds, 0, sizeof(*kinds));
	for (s = 0; s < SHP_SLOT_MAX; s++) {
		kinds->kind[s] = spec->kind[s] != NULL ? spec->kind[s] :
			shp_kind_default((enum shp_slot)s);
		kinds->conf[s] = spec->conf[s];
	}
}

int
shp_chain_spec_parse(struct shp_chain_spec *spec, const char *const *text,
		     const struct shp_kind_env *env, const char *what,
		     char *err)
{
	const char *by[SHP_SLOT_MAX] = { NULL };
	char sub[SHP_ERR_LEN];
	unsigned int k;

	memset(spec, 0, sizeof(*spec));
	for (k = 0; k < shp_key_nb(); k++) {
		const char *key = shp_key_name(k);
		enum shp_slot slot = shp_key_slot(k);
		const struct shp_kind *kind;
		void *conf;

		if (text[k] == NULL)
			continue;
		if (by[slot] != NULL) {
			snprintf(err, SHP_ERR_LEN, "%s: %s and %s both set: "
				 "they take the same place in the chain",
				 what, by[slot], key);
			goto fail;
		}
		if (shp_kind_parse(key, text[k], env, &kind, &conf, sub) < 0) {
			snprintf(err, SHP_ERR_LEN, "%s: %s", what, sub);
			goto fail;
		}
		by[slot] = key;
		spec->kind[slot] = kind;
		spec->conf[slot] = conf;
	}
	return 0;
fail:
	shp_chain_spec_free(spec);
	return -1;
}

/* The queue's bands from its conf, for the RX pass. */
static void
queue_bands(struct shp_chain *c)
{
	const struct shp_kind *k = c->kind[SHP_SLOT_QUEUE];
	const uint8_t *map = NULL;
	unsigned int n = 0;

	if (k->bands != NULL && c->conf[SHP_SLOT_QUEUE] != NULL)
		n = k->bands(c->conf[SHP_SLOT_QUEUE], &map);
	c->bands = n;
	__atomic_store_n(&c->priomap, map, __ATOMIC_RELEASE);
}

/* What the rate stage passes at most (shp_stage_env.gate_rate). */
static uint64_t
chain_gate_rate(const struct shp_kind *k, const void *conf)
{
	return conf != NULL && k->rate != NULL ? k->rate(conf) : 0;
}

int
shp_chain_build(struct shp_chain *c, const struct shp_chain_spec *spec,
		struct rte_mempool *pool, uint16_t port,
		const struct shp_stage_env *env,
		const struct shp_qdisc_ops *tap,
		const struct shp_kind_env *kenv)
{
	struct shp_qdisc *below = NULL;
	char err[SHP_ERR_LEN];
	unsigned int s;
	int e;

	memset(c, 0, sizeof(*c));
	c->env = *env;
	/* rings are named after the chain: the port's, or the name given
	 * (a class's chain on that port, shp_classes.h) */
	if (env->name != NULL && env->name[0] != '\0')
		snprintf(c->name, sizeof(c->name), "%s", env->name);
	else
		snprintf(c->name, sizeof(c->name), "p%u", port);
	c->env.name = c->name;
	for (s = 0; s < SHP_SLOT_MAX; s++) {
		c->kind[s] = spec->kind[s] != NULL ? spec->kind[s] :
			     shp_kind_default((enum shp_slot)s);
		c->conf[s] = spec->conf[s];
	}
	c->env.gate_rate = chain_gate_rate(c->kind[SHP_SLOT_RATE],
					   c->conf[SHP_SLOT_RATE]);
	/* a queue is never off: its kind's defaults */
	if (c->conf[SHP_SLOT_QUEUE] == NULL) {
		c->conf[SHP_SLOT_QUEUE] = c->kind[SHP_SLOT_QUEUE]->parse(
			"", kenv, err);
		if (c->conf[SHP_SLOT_QUEUE] == NULL) {
			errno = EINVAL;
			goto fail;
		}
	}
	queue_bands(c);
	for (s = 0; s < SHP_SLOT_MAX; s++) {
		/* the ingress stage has no child: it hands nothing on
		 * itself (shp_chain_ingress) */
		bool filter = s == SHP_SLOT_INGRESS;

		c->stage[s] = shp_qdisc_create_env(c->kind[s]->ops,
						   filter ? NULL : below,
						   pool, port, &c->env,
						   c->conf[s]);
		if (c->stage[s] == NULL)
			goto fail;
		if (filter)
			continue;
		below = c->stage[s];
	}
	c->queue = c->stage[SHP_SLOT_QUEUE];
	c->root = below;
	if (tap != NULL) {
		c->tap = shp_qdisc_create_env(tap, c->stage[SHP_SLOT_RATE],
					      pool, port, &c->env, NULL);
		if (c->tap == NULL)
			goto fail;
		shp_chain_insert(c, c->stage[SHP_SLOT_RATE], c->tap, NULL);
	}
	/* a class's chain is fed by its port's TX lcore only, and an RX
	 * lcore that alone feeds a port runs its policer itself: none */
	if (!c->queue->ops->mp_enqueue ||
	    (!env->lean && !env->single_producer)) {
		char name[RTE_RING_NAMESIZE];

		snprintf(name, sizeof(name), "%s_inbox", c->name);
		c->inbox = shp_ring_new(name, rte_align32pow2(
						env->ring_size + 1),
					env->socket, RING_F_SC_DEQ,
					env->lean);
		if (c->inbox == NULL) {
			errno = rte_errno;
			goto fail;
		}
	}
	return 0;
fail:
	e = errno;
	for (s = SHP_SLOT_MAX; s-- > 0;) {
		if (s == SHP_SLOT_RATE && c->tap != NULL)
			shp_qdisc_destroy(c->tap);
		shp_qdisc_destroy(c->stage[s]);
		if (c->kind[s] != NULL)
			shp_kind_conf_free(c->kind[s], c->conf[s]);
	}
	memset(c, 0, sizeof(*c));
	errno = e;
	return -1;
}

/* The stage of c whose child is q, or NULL (q is the root). */
static struct shp_qdisc *
chain_parent(const struct shp_chain *c, const struct shp_qdisc *q)
{
	struct shp_qdisc *p;

	for (p = c->root; p != NULL && p->child != q; p = p->child)
		;
	return p;
}

void
shp_chain_insert(struct shp_chain *c, struct shp_qdisc *below,
		 struct shp_qdisc *q, struct rte_ring *inbox)
{
	struct shp_qdisc *parent = chain_parent(c, below);

	if (below == c->queue) {
		shp_qdisc_set_limit(q, below->limit);
		if (inbox != NULL)
			__atomic_store_n(&c->inbox, inbox, __ATOMIC_RELEASE);
	}
	if (parent != NULL)
		__atomic_store_n(&parent->child, q, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&c->root, q, __ATOMIC_RELEASE);
	if (below == c->queue)
		__atomic_store_n(&c->queue, q, __ATOMIC_RELEASE);
}

void
shp_chain_remove(struct shp_chain *c, struct shp_qdisc *q)
{
	struct shp_qdisc *parent = chain_parent(c, q);

	if (parent != NULL)
		parent->child = q->child;
	else
		c->root = q->child;
	if (c->queue == q)
		c->queue = q->child;
}

void
shp_chain_destroy(struct shp_chain *c, struct shp_ctx *ctx)
{
	unsigned int s;

	if (c->root == NULL)
		return;
	if (c->inbox != NULL) {
		struct rte_mbuf *m;

		while (rte_ring_dequeue(c->inbox, (void **)&m) == 0)
			shp_drop(ctx, SHP_DROP_FLUSHED, m);
		shp_ring_free(c->inbox);
	}
	if (shp_qdisc_qlen_total(c->root) > 0)
		shp_qdisc_reset_all(c->root, ctx);
	for (s = SHP_SLOT_MAX; s-- > 0;) {
		if (s == SHP_SLOT_RATE)
			shp_qdisc_destroy(c->tap);
		shp_qdisc_destroy(c->stage[s]);
		shp_kind_conf_free(c->kind[s], c->conf[s]);
	}
	memset(c, 0, sizeof(*c));
}

uint16_t
shp_chain_ingress_run(struct shp_chain *c, struct rte_mbuf **pkts, uint16_t n,
		      uint8_t *prio, uint8_t *band, uint64_t *gone_bytes,
		      struct shp_ctx *ctx)
{
	struct shp_qdisc *q = c->stage[SHP_SLOT_INGRESS];
	uint8_t verdict[n], any = 0;
	struct rte_mbuf *gone[n];
	uint16_t i, k = 0, d = 0;

	q->ops->filter(q, pkts, n, verdict, ctx);
	for (i = 0; i < n; i++)
		any |= verdict[i];
	if (any == 0)
		return n;   /* all passed: nothing moves */
	for (i = 0; i < n; i++) {
		if (verdict[i] != 0) {
			if (gone_bytes != NULL)
				*gone_bytes += rte_pktmbuf_pkt_len(pkts[i]);
			ctx->ctr->drops[q->drop_slot[verdict[i] - 1]]++;
			shp_drop_capture(ctx, q->drop_slot[verdict[i] - 1],
					 SHP_CAP_NO_BAND, &pkts[i], 1);
			gone[d++] = pkts[i];
			continue;
		}
		if (prio != NULL)
			prio[k] = prio[i];
		if (band != NULL)
			band[k] = band[i];
		pkts[k++] = pkts[i];
	}
	if (d > 0)
		rte_pktmbuf_free_bulk(gone, d);
	return k;
}

struct shp_qdisc *
shp_chain_find(const struct shp_chain *c, const struct shp_kind *k)
{
	unsigned int s;

	for (s = 0; s < SHP_SLOT_MAX; s++)
		if (c->kind[s] == k)
			return c->stage[s];
	return NULL;
}

int
shp_chain_change(struct shp_chain *c, const struct shp_kind *k, void *conf,
		 void **old, char *err)
{
	enum shp_slot s = k->slot;

	if (c->kind[s] != k) {
		snprintf(err, SHP_ERR_LEN, "port %u runs %s there: a "
			 "different kind takes a restart", c->stage[s]->port,
			 c->kind[s]->name);
		return -1;
	}
	if (k->ops->change == NULL) {
		snprintf(err, SHP_ERR_LEN, "%s cannot change while running",
			 k->name);
		return -1;
	}
	if (k->check_change != NULL &&
	    k->check_change(c->conf[s], conf, err) < 0)
		return -1;
	if (conf == NULL && s == SHP_SLOT_QUEUE) {
		snprintf(err, SHP_ERR_LEN, "a queue cannot be off");
		return -1;
	}
	rte_spinlock_lock(&c->lock);
	*old = (void *)(uintptr_t)k->ops->change(c->stage[s], conf);
	c->conf[s] = conf;
	if (s == SHP_SLOT_QUEUE)
		queue_bands(c);
	if (s == SHP_SLOT_RATE)
		__atomic_store_n(&c->env.gate_rate, chain_gate_rate(k, conf),
				 __ATOMIC_RELAXED);
	rte_spinlock_unlock(&c->lock);
	return 0;
}

int
shp_chain_format(const struct shp_chain *c, enum shp_slot slot, char *buf,
		 size_t len)
{
	return shp_kind_format(c->kind[slot], c->conf[slot], buf, len);
}

uint64_t
shp_chain_spec_capacity(const struct shp_chain_spec *spec,
			const struct shp_kind_env *env)
{
	uint64_t n = 0;
	unsigned int s;

	for (s = 0; s < SHP_SLOT_MAX; s++) {
		const struct shp_kind *k = spec->kind[s] != NULL ?
			spec->kind[s] : shp_kind_default((enum shp_slot)s);

		if (spec->conf[s] == NULL && s != SHP_SLOT_QUEUE)
			continue;   /* off */
		if (k->capacity != NULL)
			n += k->capacity(spec->conf[s], env);
	}
	return n;
}

unsigned int
shp_chain_pool_size(unsigned int nb_ports, uint64_t held,
		    unsigned int burst, unsigned int nb_lcores,
		    unsigned int desc)
{
	uint64_t n = held +
		     (uint64_t)nb_ports * (desc +
					   8 * burst + SHP_DELAY_RESERVE) +
		     /* a cache holds up to 1.5 times its size */
		     (uint64_t)nb_lcores * (2 * burst + SHP_POOL_CACHE * 3 / 2);

	return n < UINT32_MAX ? (unsigned int)n : UINT32_MAX;
}

void
shp_chain_pool_shares(unsigned int pool, unsigned int nb,
		      const uint64_t *need, const uint64_t *queue,
		      unsigned int burst, unsigned int nb_lcores,
		      unsigned int desc, uint32_t *cap)
{
	/* what the pool needs besides the chains' stages */
	uint64_t fixed = shp_chain_pool_size(nb, 0, burst, nb_lcores, desc) -
			 (uint64_t)nb * SHP_DELAY_RESERVE;
	uint64_t room = pool > fixed ? pool - fixed : 0, left = room, sum = 0;
	uint64_t share[SHP_MAX_PORTS];
	bool done[SHP_MAX_PORTS] = { false };
	unsigned int i, j, k;

	nb = RTE_MIN(nb, (unsigned int)SHP_MAX_PORTS);
	/* max-min fair: the smallest needs first, each at most an even
	 * split of what is left, so that one huge need (a limit the pool
	 * was not sized for: --mbufs) takes only what the others leave */
	for (k = 0; k < nb; k++) {
		for (i = 0, j = nb; i < nb; i++)
			if (!done[i] && (j == nb || need[i] < need[j]))
				j = i;
		share[j] = RTE_MIN(need[j], left / (nb - k));
		left -= share[j];
		sum += need[j];
		done[j] = true;
	}
	for (i = 0; i < nb; i++) {
		uint64_t v = share[i];

		/* a pool beyond every need (--mbufs): the rest by need */
		if (left > 0 && sum > 0)
			v += (uint64_t)((double)left * need[i] / sum);
		v = v > queue[i] ? v - queue[i] : 0;
		cap[i] = v == 0 ? 1 : v < UINT32_MAX ? (uint32_t)v : UINT32_MAX;
	}
}

size_t
shp_chain_shards_note(const struct shp_chain_spec *spec, char *buf,
		      size_t len)
{
	size_t at = 0;
	unsigned int sl;

	if (len > 0)
		buf[0] = '\0';
	for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
		const struct shp_kind *k = spec->kind[sl];
		int w;

		/* (the queue slot runs its kind with or without a conf) */
		if (k == NULL || k->shards_note == NULL ||
		    (spec->conf[sl] == NULL && sl != SHP_SLOT_QUEUE) ||
		    at >= len)
			continue;
		w = snprintf(buf + at, len - at, "%s%s: %s", at ? "; " : "",
			     k->name, k->shards_note);
		at = w < 0 ? at : RTE_MIN(len - 1, at + (size_t)w);
	}
	return at;
}
