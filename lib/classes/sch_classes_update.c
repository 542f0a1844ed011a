/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The classes stage built, attached, changed (prepare, publish, finish)
 * and detached (shp_classes.h). Never on the data path.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <rte_log.h>
#include <rte_malloc.h>

#include "sch_classes_priv.h"

struct shp_qdisc *shp_cls_stage[SHP_MAX_PORTS][SHP_MAX_QUEUES];
pthread_mutex_t shp_cls_lock = PTHREAD_MUTEX_INITIALIZER;
struct shp_port_ctr shp_cls_retired[SHP_MAX_PORTS][SHP_MAX_QUEUES];

/* Classes count in blocks of their own: the core's sums and stats file
 * take them through this. Registered here, the file every use of classes
 * links (shp_classes_attach), before any port is summed. */
static const struct shp_stats_source classes_counters = {
	.add_port = shp_classes_add_port,
	.json = shp_classes_json,
};

RTE_INIT(shp_classes_register_counters)
{
	shp_stats_source_register(&classes_counters);
}

/* Free a class no data path sees any more; what it still holds is
 * flushed, what it counted stays in the port's sums. */
static void
cls_free(struct cls *k, struct shp_ctx *ctx)
{
	struct shp_port_ctr *r;

	if (k == NULL)
		return;
	if (k->chain.root != NULL) {
		struct shp_ctx c = *ctx;

		c.ctr = k->ctr;
		shp_cls_sq_flush(&k->sq, &c);
		shp_chain_destroy(&k->chain, &c);
	}
	if (k->ctr != NULL && k->port < SHP_MAX_PORTS) {
		pthread_mutex_lock(&shp_cls_lock);
		r = &shp_cls_retired[k->port][k->shard];
		shp_port_ctr_add_stages(r, k->ctr, SHP_MAX_BANDS, false);
		pthread_mutex_unlock(&shp_cls_lock);
	}
	if (k->link != NULL && --k->link->refs == 0)
		rte_free(k->link);
	free(k->base);
	free(k->base_hist);
	rte_free(k->blk);
	rte_free(k);
}

/* Class d on port's chain port_chain; first: the same class made on
 * shard 0 by this change (NULL: this is shard 0, or the port has one
 * queue), whose link block and conf ids it shares. */
static struct cls *
cls_new(const struct shp_class_def *d, const struct shp_chain *port_chain,
	struct rte_mempool *pool, uint16_t port,
	const struct shp_kind_env *kenv, const struct cls *first, char *err)
{
	static unsigned int serial;   /* ring names never come back */
	struct shp_ctx ctx = { 0 };
	struct shp_chain_spec spec;
	int socket = port_chain->env.socket;
	struct cls *k;

	k = rte_zmalloc_socket("shp_class", sizeof(*k), 0, socket);
	if (k == NULL)
		goto nomem;
	/* the block up to the port's counters: 32 ports' would be 50 kB a
	 * class */
	k->blk = rte_zmalloc_socket("shp_class_ctr",
				    offsetof(struct shp_lcore_ctr, port) +
				    (port + 1u) * sizeof(struct shp_port_ctr),
				    RTE_CACHE_LINE_SIZE, socket);
	if (k->blk == NULL)
		goto nomem;
	shp_hist_init(&k->sojourn);
	k->ctr = &k->blk->port[port];
	k->port = port;
	k->shard = port_chain->env.shard;
	snprintf(k->name, sizeof(k->name), "%s", d->name);
	snprintf(k->ring, sizeof(k->ring), "p%uc%u", port, serial++);
	/* its own rings' names, one producer (the classes stage), its own
	 * counter block for what sums producer-side counters */
	k->env = port_chain->env;
	k->env.name = k->ring;
	k->env.single_producer = true;
	k->env.ctr_blocks = k->blk;
	k->env.nb_ctr_blocks = 1;
	k->env.link_ctr_blocks = NULL;   /* its limits are the shard's */
	k->env.nb_link_ctr_blocks = 0;
	k->env.lean = true;   /* thousands: no memzone each */
	if (port_chain->env.link != NULL) {
		/* its rates are the link's, apart from the port's */
		if (first != NULL) {
			k->link = first->link;
		} else {
			k->link = rte_zmalloc_socket("shp_class_link",
						     sizeof(*k->link),
						     RTE_CACHE_LINE_SIZE,
						     socket);
			if (k->link == NULL)
				goto nomem;
		}
		k->link->refs++;
		k->env.link = &k->link->l;
	}
	if (shp_class_spec(d, kenv, &spec, err) < 0)
		goto fail;
	if (first != NULL)
		shp_chain_spec_twin(&spec, &first->chain);
	if (shp_chain_build(&k->chain, &spec, pool, port, &k->env, NULL,
			    kenv) < 0) {
		snprintf(err, SHP_ERR_LEN, "class %s: cannot create its "
			 "stages: %s", d->name, strerror(errno));
		goto fail;
	}
	return k;
nomem:
	snprintf(err, SHP_ERR_LEN, "class %s: out of memory", d->name);
fail:
	ctx.ctr = k != NULL && k->blk != NULL ? k->ctr : NULL;
	if (k != NULL && ctx.ctr == NULL) {
		rte_free(k);
		return NULL;
	}
	cls_free(k, &ctx);
	return NULL;
}

uint64_t
shp_classes_mem(const struct shp_class_set *s, unsigned int bands,
		unsigned int ring_size)
{
	uint64_t per, sum = 0;
	unsigned int i, k;

	if (s == NULL || s->nb == 0)
		return 0;
	per = (uint64_t)bands * (uint64_t)rte_ring_get_memsize(
			rte_align32pow2(ring_size + 1)) +
	      sizeof(struct cls) + 2 * sizeof(struct shp_port_ctr) +
	      16 * 1024 +                    /* stages, heap overhead */
	      2 * MAX_MEMBERS / SHP_MAX_CLASSES * 64;   /* conf arrays */
	for (i = 0; i < s->nb; i++) {
		sum += per;
		/* the stages that take memory of their own when lean (a
		 * netem's tfifo): the keys that name a kind */
		for (k = 0; k < shp_key_nb(); k++) {
			const struct shp_kind *kd =
				shp_kind_find(shp_key_name(k));

			if (kd != NULL && s->def[i].text[k] != NULL)
				sum += kd->lean_mem;
		}
	}
	return sum;
}

/* What shp_classes_grow has seen so far in a call. */
struct grow {
	unsigned int max, made, no;
	struct rte_malloc_socket_stats st;
	size_t reserve;
	int socket;
};

/* Calendars for the lean stages of the classes of cf: -1 when the call
 * is done (max made, or the heap unreadable). */
static int
grow_conf(const struct classes_conf *cf, struct grow *g)
{
	unsigned int i, sl;

	for (i = 0; cf != NULL && i < cf->nb; i++) {
		const struct shp_chain *ch = &cf->cls[i]->chain;

		for (sl = 0; sl < SHP_SLOT_MAX; sl++) {
			struct shp_qdisc *q = ch->stage[sl];
			size_t size;

			if (q == NULL || q->ops->grow_size == NULL ||
			    (size = q->ops->grow_size(q,
						      SHP_CLASS_GROW_QLEN)) == 0)
				continue;
			if (g->socket < 0) {
				/* once a call: it walks the heap's free
				 * lists */
				g->socket = q->pool != NULL &&
					    q->pool->socket_id >= 0 ?
					    q->pool->socket_id : 0;
				if (rte_malloc_get_socket_stats(g->socket,
								&g->st) < 0)
					return -1;
				g->reserve = RTE_MAX(
					(size_t)SHP_CLASS_HEAP_RESERVE,
					(size_t)(g->st.heap_totalsz_bytes / 8));
			}
			if (g->made >= g->max)
				return -1;
			/* what is left stays for changes (set class, the
			 * match table's rebuilds): a calendar makes jitter
			 * cheaper, it is not needed for exactness */
			if (g->st.heap_freesz_bytes < size + g->reserve ||
			    g->st.greatest_free_size < size ||
			    q->ops->grow(q) < 0) {
				g->no++;
				continue;
			}
			g->made++;
			g->st.heap_freesz_bytes -= size;
		}
	}
	return 0;
}

unsigned int
shp_classes_grow(uint16_t port, unsigned int max, unsigned int *denied)
{
	static bool warned[SHP_MAX_PORTS];
	struct grow g = { .max = max, .socket = -1 };
	unsigned int sh;

	*denied = 0;
	if (port >= SHP_MAX_PORTS)
		return 0;
	pthread_mutex_lock(&shp_cls_lock);
	/* every shard's classes */
	for (sh = 0; sh < SHP_MAX_QUEUES; sh++)
		if (shp_cls_stage[port][sh] != NULL &&
		    grow_conf(priv(shp_cls_stage[port][sh])->conf, &g) < 0)
			break;
	pthread_mutex_unlock(&shp_cls_lock);
	if (g.no > 0 && !warned[port]) {
		warned[port] = true;
		RTE_LOG(WARNING, USER1, "classes: port %u: %u class netems hold "
			"packets with no time calendar: the memory left is kept "
			"for changes, so their jitter goes through the rbtree "
			"(slower; give EAL more memory with -m)\n", port, g.no);
	}
	*denied = g.no;
	return g.made;
}

/* A stage change of a kept class, to free after the grace period. */
struct stage_old {
	const struct shp_kind *kind;
	void *conf;
};

/* A change of one chain (the port's, or one shard's). */
struct shard_update {
	struct shp_chain *chain;
	struct shp_qdisc *q;             /* the stage (new if attached) */
	bool attach;                     /* q goes into the chain */
	struct rte_ring *inbox;          /* made for the attach */
	struct classes_conf *conf, *old;
	/* new confs for the kept classes' stages, published with conf
	 * (room for SHP_SLOT_MAX a class) */
	unsigned int nb_change;
	struct stage_change {
		struct cls *cls;
		unsigned int slot;
		const struct shp_kind *kind;
		void *conf;
		struct stage_old old;
	} *change;
	/* classes of the new conf made for it (freed on abort) */
	struct cls **made;
	unsigned int nb_made;
	/* classes of the old conf the new one drops (freed at finish) */
	struct cls **gone;
	unsigned int nb_gone;
};

/* A change of a port: its shards' (one for a port of one queue), made
 * alike: member i of each new conf is the same class. */
struct shp_classes_update {
	unsigned int n;
	struct shard_update *sh[SHP_MAX_QUEUES];
};

static bool
on_port(const struct shp_class_def *d, uint16_t port)
{
	return d->ports == 0 || (d->ports & (1u << port)) != 0;
}

/* The same map of bands (the text does not say what a queue took from
 * the aliases: `set priomap` changes the map, not the text). */
static bool
same_bands(const struct shp_kind *k, const void *a, const void *b)
{
	const uint8_t *ma, *mb;

	if (k->bands == NULL || a == NULL || b == NULL)
		return true;
	return k->bands(a, &ma) == k->bands(b, &mb) &&
	       memcmp(ma, mb, 16) == 0;
}

/* The change first (shard 0's) made for its class k0's slot, or NULL. */
static const struct stage_change *
change_of(const struct shard_update *first, const struct cls *k0,
	  unsigned int slot)
{
	unsigned int i;

	for (i = 0; first != NULL && i < first->nb_change; i++)
		if (first->change[i].cls == k0 && first->change[i].slot == slot)
			return &first->change[i];
	return NULL;
}

/* Stage changes a kept class needs to run d: 0 and queued in u, or -1
 * (a different kind: a restart) with err. On shard q > 0, each change is
 * one with shard 0's of the same class k0 (in first): twinned. */
static int
plan_stages(struct shard_update *u, struct cls *k,
	    const struct shp_class_def *d, const struct shp_kind_env *kenv,
	    const struct shard_update *first, const struct cls *k0,
	    char *err)
{
	struct shp_chain_spec spec;
	unsigned int s;

	if (shp_class_spec(d, kenv, &spec, err) < 0)
		return -1;
	for (s = 0; s < SHP_SLOT_MAX; s++) {
		const struct shp_kind *want = spec.kind[s] != NULL ?
			spec.kind[s] : shp_kind_default((enum shp_slot)s);
		char a[512], b[512], sub[SHP_ERR_LEN];
		const struct stage_change *tw;
		int na, nb;

		if (spec.conf[s] == NULL && s == SHP_SLOT_QUEUE) {
			/* the queue's defaults, owned by spec from now */
			spec.kind[s] = want;
			spec.conf[s] = want->parse("", kenv, err);
		}
		if (want != k->chain.kind[s]) {
			snprintf(err, SHP_ERR_LEN, "class %s runs %s there, "
				 "not %s: a different kind takes clear class "
				 "%s first", d->name, k->chain.kind[s]->name,
				 want->name, d->name);
			goto fail;
		}
		/* (completes what the text leaves to the running stage,
		 * before the texts are compared) */
		if (want->check_change != NULL &&
		    want->check_change(k->chain.conf[s], spec.conf[s],
				       sub) < 0) {
			snprintf(err, SHP_ERR_LEN, "class %s: %s", d->name,
				 sub);
			goto fail;
		}
		na = shp_kind_format(want, spec.conf[s], a, sizeof(a));
		nb = shp_chain_format(&k->chain, (enum shp_slot)s, b,
				      sizeof(b));
		/* a text cut short (a long `loss sequence`) may hide a
		 * difference: it is a change */
		if (na == nb && na < (int)sizeof(a) && strcmp(a, b) == 0 &&
		    same_bands(want, spec.conf[s], k->chain.conf[s]))
			continue;   /* the same: left as it runs */
		if (want->ops->change == NULL) {
			snprintf(err, SHP_ERR_LEN, "class %s: %s cannot change "
				 "while running", d->name, want->name);
			goto fail;
		}
		tw = change_of(first, k0, s);
		if (tw != NULL && tw->kind == want)
			shp_conf_twin(spec.conf[s], tw->conf);
		u->change[u->nb_change].cls = k;
		u->change[u->nb_change].slot = s;
		u->change[u->nb_change].kind = want;
		u->change[u->nb_change++].conf = spec.conf[s];
		spec.conf[s] = NULL;
	}
	shp_chain_spec_free(&spec);
	return 0;
fail:
	shp_chain_spec_free(&spec);
	return -1;
}

/* A conf for nb_match match indices and up to cap members (one block:
 * freed with rte_free). */
static struct classes_conf *
conf_new(uint32_t nb_match, unsigned int cap, int socket)
{
	static uint64_t ids;
	size_t ring = (size_t)(cap + 1) * sizeof(uint16_t), sz;
	struct classes_conf *c;
	unsigned int l;
	uint32_t i;
	char *p;

	sz = RTE_ALIGN_CEIL(sizeof(*c), 8) +
	     (size_t)cap * (sizeof(struct cls *) + sizeof(uint32_t)) +
	     (size_t)nb_match * sizeof(uint16_t) +
	     (size_t)cap * (sizeof(uint16_t) + sizeof(uint8_t)) +
	     NB_LEVELS * ring;
	c = rte_zmalloc_socket("shp_classes_conf", sz, 0, socket);
	if (c == NULL)
		return NULL;
	c->id = __atomic_add_fetch(&ids, 1, __ATOMIC_RELAXED);
	c->cap = cap;
	c->nb_match = nb_match;
	/* the 8-byte arrays first, then the narrower */
	p = (char *)c + RTE_ALIGN_CEIL(sizeof(*c), 8);
	c->cls = (struct cls **)(void *)p;
	p += (size_t)cap * sizeof(struct cls *);
	c->quantum = (uint32_t *)(void *)p;
	p += (size_t)cap * sizeof(uint32_t);
	c->map = (uint16_t *)(void *)p;
	p += (size_t)nb_match * sizeof(uint16_t);
	c->busy = (uint16_t *)(void *)p;
	p += (size_t)cap * sizeof(uint16_t);
	for (l = 0; l < NB_LEVELS; l++) {
		c->act[l].v = (uint16_t *)(void *)p;
		c->act[l].size = cap + 1;
		p += ring;
	}
	c->prio = (uint8_t *)p;
	for (i = 0; i < nb_match; i++)
		c->map[i] = NO_MEMBER;
	return c;
}

static void
conf_add(struct classes_conf *c, struct cls *k, uint32_t quantum,
	 unsigned int prio)
{
	unsigned int i = c->nb++;

	c->cls[i] = k;
	c->quantum[i] = quantum;
	c->prio[i] = (uint8_t)prio;
}

static void
shard_abort(struct shard_update *u)
{
	struct shp_ctx ctx = { 0 };
	unsigned int i;

	if (u == NULL)
		return;
	for (i = 0; i < u->nb_change; i++)
		shp_kind_conf_free(u->change[i].kind, u->change[i].conf);
	for (i = 0; i < u->nb_made; i++) {
		ctx.ctr = u->made[i]->ctr;
		cls_free(u->made[i], &ctx);
	}
	if (u->conf != NULL)
		shp_match_table_free(u->conf->table);
	rte_free(u->conf);
	if (u->attach)
		shp_qdisc_destroy(u->q);
	rte_ring_free(u->inbox);
	free(u->change);
	free(u->made);
	free(u->gone);
	free(u);
}

void
shp_classes_abort(struct shp_classes_update *u)
{
	unsigned int q;

	if (u == NULL)
		return;
	/* the other shards' first: their classes name shard 0's links */
	for (q = u->n; q-- > 0;)
		shard_abort(u->sh[q]);
	free(u);
}

/* The class of match index i in the conf shard 0's change made (NULL: no
 * such class on the port, or this is shard 0). */
static const struct cls *
first_cls(const struct shard_update *first, uint32_t i)
{
	if (first == NULL || first->conf->map[i] == NO_MEMBER)
		return NULL;
	return first->conf->cls[first->conf->map[i]];
}

/*
 * Chain c's change to s. old: its conf (NULL: no classes yet); drained:
 * by old member, whether it may go (cleared and empty on every shard);
 * first: shard 0's change (NULL on shard 0), whose classes this one's
 * share their links and conf ids with. 0 and *out, or -1 with err.
 */
static int
shard_prepare(struct shp_chain *c, const struct classes_conf *old,
	      const bool *drained, const struct shp_class_set *s, bool any,
	      struct rte_mempool *pool, uint16_t port,
	      const struct shp_kind_env *kenv,
	      const struct shard_update *first, struct shard_update **out,
	      char *err)
{
	struct shard_update *u;
	bool *keep = NULL;
	uint32_t i, j, nb_match;
	unsigned int cap;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (u == NULL)
		goto nomem;
	u->chain = c;
	u->old = (struct classes_conf *)(uintptr_t)old;
	nb_match = any ? shp_match_set_classes(s->match) : 0;
	cap = nb_match + (old != NULL ? old->nb : 0);
	u->conf = conf_new(nb_match, cap, c->env.socket);
	u->change = calloc((size_t)nb_match * SHP_SLOT_MAX + 1,
			   sizeof(*u->change));
	u->made = calloc(nb_match + 1, sizeof(*u->made));
	u->gone = calloc(cap + 1, sizeof(*u->gone));
	keep = calloc(cap + 1, sizeof(*keep));
	if (u->conf == NULL || u->change == NULL || u->made == NULL ||
	    u->gone == NULL || keep == NULL)
		goto nomem;
	if (old == NULL) {
		u->attach = true;
		u->q = shp_qdisc_create_env(&shp_cls_ops,
					    c->stage[SHP_SLOT_QUEUE], pool,
					    port, &c->env, NULL);
		if (u->q == NULL)
			goto nomem;
		priv(u->q)->shard = c->env.shard;
		if (c->inbox == NULL) {
			char name[RTE_RING_NAMESIZE];

			snprintf(name, sizeof(name), "%s_cinbox", c->name);
			u->inbox = rte_ring_create(name, rte_align32pow2(
						c->env.ring_size + 1),
						c->env.socket, RING_F_SC_DEQ);
			if (u->inbox == NULL)
				goto nomem;
		}
	} else {
		u->q = c->queue;
	}
	if (any) {
		u->conf->table = shp_match_table_create(s->match,
							c->env.socket, err);
		if (u->conf->table == NULL)
			goto fail;
	}
	/* the classes in the match order: kept ones by name, new ones made */
	for (i = 0; any && i < u->conf->nb_match; i++) {
		const char *name = shp_match_set_name(s->match, i);
		const struct shp_class_def *d = shp_class_find(s, name);
		const struct cls *k0 = first_cls(first, i);
		struct cls *k = NULL;

		if (d == NULL || !on_port(d, port))
			continue;
		for (j = 0; old != NULL && j < old->nb; j++)
			if (!old->cls[j]->retiring &&
			    strcmp(old->cls[j]->name, name) == 0) {
				k = old->cls[j];
				keep[j] = true;
				if (plan_stages(u, k, d, kenv, first, k0,
						err) < 0)
					goto fail;
			}
		if (k == NULL) {
			k = cls_new(d, c, pool, port, kenv, k0, err);
			if (k == NULL)
				goto fail;
			u->made[u->nb_made++] = k;
		}
		u->conf->map[i] = (uint16_t)u->conf->nb;
		conf_add(u->conf, k, d->quantum, d->prio);
	}
	/* what the old conf had and this one drops: served (no new
	 * packets) until empty, so that nothing queued is lost */
	for (j = 0; old != NULL && j < old->nb; j++) {
		struct cls *k = old->cls[j];

		if (keep[j])
			continue;
		if (drained[j]) {
			u->gone[u->nb_gone++] = k;
			continue;
		}
		if (u->conf->nb == MAX_MEMBERS) {
			snprintf(err, SHP_ERR_LEN, "port %u: more than %d "
				 "classes still draining: retry later", port,
				 MAX_MEMBERS);
			goto fail;
		}
		conf_add(u->conf, k, old->quantum[j], old->prio[j]);
	}
	free(keep);
	*out = u;
	return 0;
nomem:
	snprintf(err, SHP_ERR_LEN, "port %u: classes: out of memory", port);
fail:
	free(keep);
	shard_abort(u);
	return -1;
}

static const struct classes_conf *
chain_conf(const struct shp_chain *c)
{
	return c->queue != NULL && c->queue->ops == &shp_cls_ops ?
	       priv(c->queue)->conf : NULL;
}

int
shp_classes_prepare(struct shp_chain *const *c, unsigned int n,
		    const struct shp_class_set *s,
		    struct rte_mempool *pool, uint16_t port,
		    const struct shp_kind_env *kenv,
		    struct shp_classes_update **out, char *err)
{
	const struct classes_conf *old = chain_conf(c[0]);
	struct shp_classes_update *u;
	bool any = false, *drained = NULL;
	unsigned int q, j;

	*out = NULL;
	if (port >= SHP_MAX_PORTS || n == 0 || n > SHP_MAX_QUEUES)
		return 0;
	for (j = 0; s != NULL && j < s->nb; j++)
		any |= on_port(&s->def[j], port);
	if (old == NULL && !any)
		return 0;   /* no class here, before or after */
	u = calloc(1, sizeof(*u));
	drained = calloc((old != NULL ? old->nb : 0) + 1, sizeof(*drained));
	if (u == NULL || drained == NULL) {
		free(u);
		free(drained);
		snprintf(err, SHP_ERR_LEN, "port %u: classes: out of memory",
			 port);
		return -1;
	}
	/* a cleared class goes when it is empty on every shard: the shards
	 * keep the same members */
	for (j = 0; old != NULL && j < old->nb; j++) {
		drained[j] = true;
		for (q = 0; q < n; q++) {
			const struct classes_conf *o = chain_conf(c[q]);

			if (o == NULL || o->nb != old->nb)
				rte_panic("port %u: shard %u's classes are "
					  "not shard 0's\n", port, q);
			drained[j] &= cls_drained(o->cls[j]);
		}
	}
	for (q = 0; q < n; q++) {
		u->n = q + 1;
		if (shard_prepare(c[q], chain_conf(c[q]), drained, s, any, pool,
				  port, kenv, q > 0 ? u->sh[0] : NULL,
				  &u->sh[q], err) < 0) {
			u->n = q;
			shp_classes_abort(u);
			free(drained);
			return -1;
		}
	}
	free(drained);
	*out = u;
	return 0;
}

static void
shard_publish(struct shard_update *u)
{
	struct shp_chain *c = u->chain;
	unsigned int i, j;

	for (i = 0; i < u->nb_change; i++) {
		char err[SHP_ERR_LEN];

		if (shp_chain_change(&u->change[i].cls->chain,
				     u->change[i].kind, u->change[i].conf,
				     &u->change[i].old.conf, err) < 0)
			rte_panic("checked by prepare: %s\n", err);
		u->change[i].old.kind = u->change[i].kind;
	}
	/* the members the new conf keeps from the old that it dropped:
	 * those no match index names */
	for (i = 0; i < u->conf->nb; i++)
		u->conf->cls[i]->retiring = true;
	for (j = 0; j < u->conf->nb_match; j++)
		if (u->conf->map[j] != NO_MEMBER)
			u->conf->cls[u->conf->map[j]]->retiring = false;
	pthread_mutex_lock(&shp_cls_lock);
	if (u->attach) {
		priv(u->q)->conf = u->conf;
		/* in front of the port's queue, with the byte limit the
		 * rate stage gave it (tbf's): ours now */
		shp_chain_insert(c, c->queue, u->q, u->inbox);
		u->inbox = NULL;
		shp_cls_stage[u->q->port][priv(u->q)->shard] = u->q;
	} else {
		__atomic_store_n(&priv(u->q)->conf, u->conf, __ATOMIC_RELEASE);
	}
	/* new classes, and kept ones whose tbf went off (its change set
	 * their queue's limit to 0), wait for the port's tokens only */
	shp_cls_apply_limit(u->q, u->conf);
	pthread_mutex_unlock(&shp_cls_lock);
}

void
shp_classes_publish(struct shp_classes_update *u)
{
	unsigned int q;

	/* every shard before the caller's one grace period */
	for (q = 0; q < u->n; q++)
		shard_publish(u->sh[q]);
}

static void
shard_finish(struct shard_update *u)
{
	struct shp_ctx ctx = { 0 };
	unsigned int i;

	for (i = 0; i < u->nb_change; i++)
		shp_kind_conf_free(u->change[i].old.kind,
				   u->change[i].old.conf);
	for (i = 0; i < u->nb_gone; i++) {
		ctx.ctr = u->gone[i]->ctr;
		cls_free(u->gone[i], &ctx);
	}
	if (u->old != NULL) {
		shp_match_table_free(u->old->table);
		rte_free(u->old);
	}
	free(u->change);
	free(u->made);
	free(u->gone);
	free(u);
}

void
shp_classes_finish(struct shp_classes_update *u)
{
	unsigned int q;

	for (q = 0; q < u->n; q++)
		shard_finish(u->sh[q]);
	free(u);
}

int
shp_classes_attach(struct shp_chain *const *c, unsigned int n,
		   const struct shp_class_set *s,
		   struct rte_mempool *pool, uint16_t port,
		   const struct shp_kind_env *kenv, char *err)
{
	struct shp_classes_update *u;
	unsigned int q;

	for (q = 0; q < n; q++)
		if (chain_conf(c[q]) != NULL) {
			snprintf(err, SHP_ERR_LEN, "port %u: classes attached "
				 "twice", port);
			return -1;
		}
	if (shp_classes_prepare(c, n, s, pool, port, kenv, &u, err) < 0)
		return -1;
	if (u == NULL)
		return 0;
	shp_classes_publish(u);
	shp_classes_finish(u);   /* nothing ran: no grace period needed */
	return 0;
}

void
shp_classes_detach(struct shp_chain *c, struct shp_ctx *ctx)
{
	struct shp_qdisc *q = c->queue;
	const struct classes_conf *cf;
	unsigned int i;

	if (q == NULL || q->ops != &shp_cls_ops)
		return;
	shp_cls_reset(q, ctx);
	pthread_mutex_lock(&shp_cls_lock);
	shp_chain_remove(c, q);
	if (shp_cls_stage[q->port][priv(q)->shard] == q)
		shp_cls_stage[q->port][priv(q)->shard] = NULL;
	pthread_mutex_unlock(&shp_cls_lock);
	cf = priv(q)->conf;
	for (i = 0; i < cf->nb; i++)
		cls_free(cf->cls[i], ctx);
	shp_match_table_free(cf->table);
	rte_free((void *)(uintptr_t)cf);
	shp_qdisc_destroy(q);
}
