/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --queues N (issue 24): every port has N RX and N TX queues and every
 * egress port runs N shards, shard q sending on TX queue q. Run to
 * completion: the worker that owns queue q polls RX queue q of every port
 * and transmits shard q of every port, so a flow (which the port's RSS,
 * or net_null's per-queue generator, keeps on one queue) stays on one
 * shard and one lcore. The shards of a port share its tbf bucket
 * (tbf_shared.h); netem's streams take the shard into their key.
 *
 * Each shard counts into a block of its own (SHAPER_CTR_BLOCKS), written
 * by its owner only: the port's figures are the sum of every block as
 * before, a shard's its block alone, however the queues are dealt.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "shaper.h"
#include "shp_link.h"

/* Shard q >= 1 of a port: what shard 0 keeps in struct shaper. */
struct shard {
	struct egress e;
	struct shp_chain chain;
} __rte_cache_aligned;

/* What of the options does not run on shards (one line), or NULL. */
static const char *
shards_unsupported(const struct shaper *s)
{
	if (s->opt.pace)
		return "--pace replays net_pcap captures, which have one queue";
	return NULL;
}

int
shaper_shards_check(const struct shaper *s)
{
	unsigned int n = s->opt.queues;
	const char *why;

	if (n <= 1)
		return 0;
	/* what a sharded port does not split yet: refused, not run wrong */
	why = shards_unsupported(s);
	if (why == NULL)
		return 0;
	fprintf(stderr, "dpdk-shaper: --queues %u: %s (use --queues 1)\n", n,
		why);
	return -1;
}

/* Each rx_pcap= is a queue of its own, read whole: a pcap port has no
 * RSS to spread a capture by flow over N queues. */
static bool
port_is_pcap(const struct rte_eth_dev_info *info)
{
	return info->driver_name != NULL &&
	       strcmp(info->driver_name, "net_pcap") == 0;
}

/* Can port give n RX and n TX queues? One line when it cannot. */
static int
port_queues_check(uint16_t port, unsigned int n)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(port, &info) != 0) {
		fprintf(stderr, "dpdk-shaper: port %u: cannot read its "
			"device info\n", port);
		return -1;
	}
	if (port_is_pcap(&info)) {
		fprintf(stderr, "dpdk-shaper: port %u (net_pcap): --queues "
			"%u: a pcap port has one queue per capture and no "
			"RSS to keep a flow on one of them (use --queues 1)\n",
			port, n);
		return -1;
	}
	if (info.max_rx_queues < n || info.max_tx_queues < n) {
		fprintf(stderr, "dpdk-shaper: port %u (%s): --queues %u: the "
			"port gives at most %u RX and %u TX queues\n", port,
			info.driver_name, n, info.max_rx_queues,
			info.max_tx_queues);
		return -1;
	}
	return 0;
}

/*
 * The default --queues (issue 24): with nw workers and no lcore roles
 * given, one queue a worker, so that every worker serves the link (each
 * its own shard of every port, run to completion). Where a port cannot
 * give nw queues, or the options do not run on shards yet,
 * the workers keep the pipeline layout, one queue a port, and a line
 * says why. Roles given, or --queues, are kept as they are.
 */
void
shaper_queues_default(struct shaper *s, unsigned int nw)
{
	const char *why;
	char line[160];
	unsigned int i;

	if (s->opt.queues_given || nw <= 1 || s->opt.rx_lcores != NULL ||
	    s->opt.tx_lcores != NULL)
		return;
	why = shards_unsupported(s);
	if (why != NULL)
		snprintf(line, sizeof(line), "%s", why);
	for (i = 0; why == NULL && i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		struct rte_eth_dev_info info;
		unsigned int rxq, txq;

		if (rte_eth_dev_info_get(p, &info) != 0)
			return;   /* (port set-up says what is wrong) */
		rxq = port_is_pcap(&info) ? 1 : info.max_rx_queues;
		txq = port_is_pcap(&info) ? 1 : info.max_tx_queues;
		if (rxq < nw || txq < nw) {
			snprintf(line, sizeof(line), "port %u (%s) gives at "
				 "most %u RX and %u TX queues", p,
				 info.driver_name, rxq, txq);
			why = line;
		}
	}
	if (why != NULL) {
		printf("dpdk-shaper: %u workers: RX and TX lcores, one queue "
		       "a port (%s)\n", nw, line);
		return;
	}
	s->opt.queues = nw;
	printf("dpdk-shaper: %u workers: --queues %u by default, each "
	       "worker a shard of every port (--queues 1 for RX and TX "
	       "lcores)\n", nw, nw);
}

/* The shard struct of port's shard q >= 1, on socket. */
static struct egress *
shard_alloc(uint16_t port, unsigned int q, int socket)
{
	struct shard *sh;

	sh = rte_zmalloc_socket("shard", sizeof(*sh), RTE_CACHE_LINE_SIZE,
				socket);
	if (sh == NULL)
		return NULL;
	sh->e.port = port;
	sh->e.txq = (uint16_t)q;
	sh->e.chain = &sh->chain;
	return &sh->e;
}

int
shaper_shards_alloc(struct shaper *s, uint16_t port, int socket, bool link)
{
	unsigned int q;

	/* shard 0 is the port's own */
	s->shard[port][0] = &s->egress[port];
	for (q = 1; q < shaper_queues(s); q++) {
		s->shard[port][q] = shard_alloc(port, q, socket);
		if (s->shard[port][q] == NULL)
			return -1;
	}
	if (!link)
		return 0;
	/* zeroed: the first claim fills it (its conf_id 0) */
	s->link[port] = rte_zmalloc_socket("shp_link", sizeof(*s->link[port]),
					   RTE_CACHE_LINE_SIZE, socket);
	return s->link[port] != NULL ? 0 : -1;
}

/* Too many lcores of a role for n queues: one would have nothing. */
static int
role_check(unsigned int n, unsigned int nb, const char *role,
	   const char *how)
{
	if (nb <= n)
		return 0;
	fprintf(stderr, "dpdk-shaper: --queues %u with %u %s: one would have "
		"no queue to serve; give at most %u %s or --queues %u\n", n,
		nb, role, n, how, nb);
	return -1;
}

int
shaper_shards_assign(struct shaper *s, const struct lcore_roles *roles)
{
	unsigned int n = s->opt.queues, nw = s->nb_workers, i, q;
	const unsigned int *rx_ids = s->worker_ids, *tx_ids = s->worker_ids;
	unsigned int nrx = nw, ntx = nw;
	/*
	 * A benchmark build's only (meson -Dbench_private_link=true, for
	 * bench-scale.sh): the link block left out, so each shard keeps a
	 * bucket (and netem clock) of its own, as N independent qdiscs
	 * would: the shared rate's cost is then read against the very thing
	 * the issue compares it with. The link's rate is then N times its
	 * profile's: never in a shipped program.
	 */
#ifdef SHP_BENCH_PRIVATE_LINK
	const bool private_link = true;
#else
	const bool private_link = false;
#endif

	if (shaper_shards_check(s) < 0)
		return -1;
	if (roles != NULL) {
		rx_ids = roles->rx;
		tx_ids = roles->tx;
		nrx = roles->nb_rx;
		ntx = roles->nb_tx;
		if (role_check(n, nrx, "RX lcores", "in --rx-lcores") < 0 ||
		    role_check(n, ntx, "TX lcores", "in --tx-lcores") < 0)
			return -1;
	} else if (role_check(n, nw, "workers", "workers (-l)") < 0) {
		return -1;
	}
	for (i = 0; i < s->nb_ports; i++)
		if (port_queues_check(s->port_ids[i], n) < 0)
			return -1;
	for (i = 0; roles == NULL && i < nw; i++) {
		unsigned int lc = s->worker_ids[i];

		s->workers[lc].lcore = lc;
		s->workers[lc].rx = true;
		s->workers[lc].tx = true;
	}
	if (private_link && n > 1)
		fprintf(stderr, "dpdk-shaper: built with -Dbench_private_link"
			"=true: each shard has its own bucket, so a port's rate "
			"is %u times its profile's (a benchmark's build)\n", n);
	/* the shards, each port's bucket: shard 0 is the port's own */
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t port = s->port_ids[i];

		if (shaper_shards_alloc(s, port, rte_eth_dev_socket_id(port),
					!private_link) < 0)
			goto nomem;
	}
	/* queue q: RX lcore q mod nrx polls RX queue q of every port,
	 * counting in shard q's RX block; TX lcore q mod ntx sends shard q
	 * of every port, counting in its TX block. Run to completion both
	 * are worker q mod W, and the TX block has it all. */
	for (q = 0; q < n; q++) {
		struct worker *rw = &s->workers[rx_ids[q % nrx]];
		struct worker *tw = &s->workers[tx_ids[q % ntx]];
		struct shp_lcore_ctr *blk = SHAPER_SHARD_BLOCK(s->ctr, q);
		struct shp_lcore_ctr *rblk = rw == tw ? blk : blk + 1;

		for (i = 0; i < s->nb_ports; i++) {
			uint16_t port = s->port_ids[i];
			uint16_t out = (uint16_t)s->opt.pair_of[port];
			struct egress *e = s->shard[port][q];
			struct rxq_ref *r;

			if (rw->nb_rxq == MAX_RXQ_PER_LCORE ||
			    tw->nb_egress == MAX_EGRESS_PER_LCORE) {
				fprintf(stderr, "dpdk-shaper: too many queues "
					"for lcore %u\n", rw->nb_rxq ==
					MAX_RXQ_PER_LCORE ? rw->lcore :
					tw->lcore);
				return -1;
			}
			e->owner = tw->lcore;
			e->ctr = blk;
			tw->eg[tw->nb_egress] = e;
			tw->egress[tw->nb_egress++] = port;
			r = &rw->rxq[rw->nb_rxq++];
			r->port = port;
			r->queue = (uint16_t)q;
			r->egress = out;
			r->shard = (uint16_t)q;
			r->ctr = rblk;
			r->mtu = shaper_rx_mtu(s, port, out);
		}
	}
	/* (once every shard exists: a port's peer may come later) */
	for (i = 0; i < nw; i++) {
		struct worker *w = &s->workers[s->worker_ids[i]];
		uint16_t k;

		for (k = 0; k < w->nb_rxq; k++) {
			struct rxq_ref *r = &w->rxq[k];

			r->eg = s->shard[r->egress][r->shard];
			r->tx_here = w->tx && r->eg->owner == w->lcore;
		}
	}
	if (roles != NULL)
		printf("dpdk-shaper: --queues %u: RX queue q on RX lcore q mod "
		       "%u, shard q on TX lcore q mod %u (a pipeline of "
		       "shards)\n", n, nrx, ntx);
	else if (nw < n)
		printf("dpdk-shaper: --queues %u over %u workers: queues dealt "
		       "round robin (worker i serves queues i, i+%u, ...)\n",
		       n, nw, nw);
	return 0;
nomem:
	fprintf(stderr, "dpdk-shaper: no memory for the shards\n");
	return -1;
}

int
shaper_shards_init(struct shaper *s, uint16_t port,
		   const struct shp_stage_env *penv,
		   const struct shp_kind_env *kenv)
{
	struct egress *e = s->shard[port][penv->shard];
	struct shp_stage_env env = *penv;
	struct shp_chain_spec spec;
	char name[24], err[SHP_ERR_LEN];

	/* unique ring names; the shard's own counter block */
	snprintf(name, sizeof(name), "p%uq%u", port, penv->shard);
	env.name = name;
	env.ctr_blocks = SHAPER_SHARD_BLOCK(s->ctr, penv->shard);
	env.nb_ctr_blocks = SHAPER_SHARD_BLOCKS;
	env.single_producer = true;
	e->hold_cap = env.hold_cap;
	/* a chain owns its confs: each shard parses the profile again */
	if (shp_options_chain_spec(&s->opt, port, &spec, err) < 0) {
		fprintf(stderr, "dpdk-shaper: %s\n", err);
		return -1;
	}
	shp_chain_spec_twin(&spec, &s->chain[port]);
	if (shp_chain_build(e->chain, &spec, s->pool_of[port], port, &env,
			    NULL, kenv) < 0)
		goto fail;
	e->pend.pkts = rte_zmalloc_socket("pending", SHP_MAX_BURST *
					  sizeof(struct rte_mbuf *), 0,
					  env.socket);
	if (e->pend.pkts == NULL)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "dpdk-shaper: port %u: cannot create the stages of "
		"shard %u: %s\n", port, penv->shard, strerror(errno));
	return -1;
}

unsigned int
shaper_port_chains(struct shaper *s, uint16_t port, struct shp_chain **c)
{
	unsigned int q, n = shaper_queues(s);

	c[0] = &s->chain[port];
	for (q = 1; q < n; q++)
		c[q] = s->shard[port][q]->chain;
	return n;
}

int
shaper_classes_attach(struct shaper *s, uint16_t port,
		      const struct shp_kind_env *kenv, char *err)
{
	struct shp_chain *c[SHP_MAX_QUEUES];
	unsigned int n = shaper_port_chains(s, port, c);

	return shp_classes_attach(c, n, s->opt.classes, s->pool_of[port],
				  port, kenv, err);
}

void
shaper_shards_fini(struct shaper *s)
{
	unsigned int i, q;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t port = s->port_ids[i];

		for (q = 1; q < SHP_MAX_QUEUES; q++) {
			/* no counters (a set-up that failed): nothing held */
			static struct shp_port_ctr spare;
			struct egress *e = s->shard[port][q];
			struct shp_ctx ctx;

			if (e == NULL)
				continue;
			ctx = (struct shp_ctx){ .ctr = e->ctr != NULL ?
						&e->ctr->port[port] : &spare };
			shp_classes_detach(e->chain, &ctx);
			if (e->chain->root != NULL)
				shp_chain_destroy(e->chain, &ctx);
			rte_free(e->pend.pkts);
			rte_free(container_of(e, struct shard, e));
			s->shard[port][q] = NULL;
		}
		rte_free(s->link[port]);
		s->link[port] = NULL;
	}
}

void
shaper_shard_sum(struct shaper *s, uint16_t port, unsigned int q,
		 struct shp_port_sum *out)
{
	struct shp_latency *lat;

	if (shaper_queues(s) <= 1) {
		shaper_stats_port(s, port, out);
		lat = malloc(sizeof(*lat));
		if (lat != NULL) {
			shaper_stats_latency(s, port, lat);
			shp_latency_summarize(lat, out);
		}
		free(lat);
		return;
	}
	shaper_shard_counters(s, port, q, out);
	lat = SHAPER_SHARD_BLOCK(s->ctr, q)->port[port].lat;
	if (lat != NULL)
		shp_latency_summarize(lat, out);
}

void
shaper_shard_counters(struct shaper *s, uint16_t port, unsigned int q,
		      struct shp_port_sum *out)
{
	shp_stats_sum_shard(SHAPER_SHARD_BLOCK(s->ctr, q), SHAPER_SHARD_BLOCKS,
			    port, (int)q, shaper_bands(s, port), out);
}

const struct shp_latency *
shaper_shard_latency(struct shaper *s, uint16_t port, unsigned int q)
{
	return SHAPER_SHARD_BLOCK(s->ctr, q)->port[port].lat;
}

/* --stats-file's ports.N.shards: one object per shard (one for a port
 * of one queue), their figures summing to the port's. */
static struct shaper *shards_of;

static void
add_nothing(uint16_t port, int shard, struct shp_port_ctr *c)
{
	RTE_SET_USED(port);
	RTE_SET_USED(shard);
	RTE_SET_USED(c);
}

static void
shards_json(FILE *f, uint16_t port)
{
	unsigned int q;

	if (shards_of == NULL)
		return;
	fprintf(f, ",\n    \"shards\": [");
	for (q = 0; q < shaper_queues(shards_of); q++) {
		struct shp_port_sum sum;

		shaper_shard_sum(shards_of, port, q, &sum);
		fprintf(f, "%s", q ? ",\n               " : "");
		shp_stats_write_shard_json(f, &sum, q,
					   (int)shaper_shard_lcore(shards_of,
								   port, q));
	}
	fprintf(f, "]");
}

static const struct shp_stats_source shards_source = {
	.add_port = add_nothing,
	.json = shards_json,
};

int
shaper_shards_stats_register(struct shaper *s)
{
	if (shards_of != NULL)
		return 0;
	shards_of = s;
	return shp_stats_source_register(&shards_source);
}
