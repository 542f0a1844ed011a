/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "shp_kind.h"
#include "shp_qdisc.h"

struct rte_ring *
shp_ring_new(const char *name, unsigned int count, int socket,
	     unsigned int flags, bool anon)
{
	struct rte_ring *r;
	ssize_t sz;

	if (!anon)
		return rte_ring_create(name, count, socket, flags);
	sz = rte_ring_get_memsize_elem(sizeof(void *), (flags &
				       RING_F_EXACT_SZ) ? rte_align32pow2(
				       count + 1) : count);
	if (sz < 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	r = rte_zmalloc_socket("shp_ring", (size_t)sz, RTE_CACHE_LINE_SIZE,
			       socket);
	if (r == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	if (rte_ring_init(r, name, count, flags) < 0) {
		rte_free(r);
		rte_errno = EINVAL;
		return NULL;
	}
	return r;
}

void
shp_ring_free(struct rte_ring *r)
{
	/* rte_ring_free refuses (and logs) a ring it did not create */
	if (r != NULL && r->memzone == NULL)
		rte_free(r);
	else
		rte_ring_free(r);
}

uint64_t
shp_conf_new_id(void)
{
	static uint64_t last;

	return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

void
shp_conf_twin(void *copy, const void *orig)
{
	if (copy != NULL && orig != NULL)
		((struct shp_conf_hdr *)copy)->id =
			((const struct shp_conf_hdr *)orig)->id;
}

/* No kind (a private stage): no counters of its own. */
static const uint8_t no_slots[1];

static struct shp_qdisc *
qdisc_create(const struct shp_qdisc_ops *ops, struct shp_qdisc *child,
	     struct rte_mempool *pool, uint16_t port, int socket,
	     const struct shp_stage_env *env, const void *conf)
{
	/* The private area starts on its own cache line: stages lay their
	 * state out by cache line (the bands' consumer fields apart from
	 * the producers'), which needs it aligned as the block is. */
	size_t priv_off = RTE_ALIGN_CEIL(sizeof(struct shp_qdisc),
					  RTE_CACHE_LINE_SIZE);
	const struct shp_kind *k = shp_kind_of(ops);
	struct shp_qdisc *q;

	q = rte_zmalloc_socket(ops->id, priv_off + ops->priv_size,
			       RTE_CACHE_LINE_SIZE, socket);
	if (q == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	q->ops = ops;
	q->child = child;
	q->pool = pool;
	q->port = port;
	q->env = env;
	q->drop_slot = k != NULL ? shp_kind_drop_map(k) : no_slots;
	q->xstat_slot = k != NULL ? shp_kind_xstat_map(k) : no_slots;
	q->priv = (char *)q + priv_off;
	if (ops->init != NULL && ops->init(q, conf) < 0) {
		rte_free(q);
		return NULL;
	}
	return q;
}

struct shp_qdisc *
shp_qdisc_create(const struct shp_qdisc_ops *ops, struct shp_qdisc *child,
		 struct rte_mempool *pool, uint16_t port, int socket,
		 const void *conf)
{
	return qdisc_create(ops, child, pool, port, socket, NULL, conf);
}

struct shp_qdisc *
shp_qdisc_create_env(const struct shp_qdisc_ops *ops, struct shp_qdisc *child,
		     struct rte_mempool *pool, uint16_t port,
		     const struct shp_stage_env *env, const void *conf)
{
	return qdisc_create(ops, child, pool, port, env->socket, env, conf);
}

void
shp_qdisc_destroy(struct shp_qdisc *q)
{
	if (q == NULL)
		return;
	if (q->ops->fini != NULL)
		q->ops->fini(q);
	rte_free(q);
}

uint16_t
shp_gate_enqueue(struct shp_qdisc *q, struct rte_mbuf **pkts, uint16_t n,
		 struct shp_ctx *ctx)
{
	return q->child->ops->enqueue(q->child, pkts, n, ctx);
}

struct rte_mbuf *
shp_gate_peek(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	return q->child->ops->peek(q->child, ctx);
}

void
shp_gate_stats(const struct shp_qdisc *q, struct shp_qstats *st)
{
	RTE_SET_USED(q);
	st->qlen = 0;
	st->backlog = 0;
}

uint32_t
shp_qdisc_qlen_total(const struct shp_qdisc *q)
{
	struct shp_qstats st;
	uint32_t n = 0;

	for (; q != NULL; q = q->child) {
		st.qlen = 0;
		st.backlog = 0;
		q->ops->stats(q, &st);
		n += st.qlen;
	}
	return n;
}

uint64_t
shp_qdisc_next_time(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	if (q->ops->next_time != NULL)
		return q->ops->next_time(q, ctx);
	return shp_qdisc_qlen_total(q) > 0 ? ctx->now : UINT64_MAX;
}

void
shp_qdisc_reset_all(struct shp_qdisc *q, struct shp_ctx *ctx)
{
	for (; q != NULL; q = q->child)
		if (q->ops->reset != NULL)
			q->ops->reset(q, ctx);
}
