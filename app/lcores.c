/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lcore roles: which lcores receive, which shape and send, for which
 * ports and shards (--rx-lcores, --tx-lcores, or one lcore a shard by
 * default: shaper_lcores_assign, shaper.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "shaper.h"

/* Parse an lcore list like "1,3-4" into a mask of enabled worker lcores. */
static int
lcore_list(const char *what, const char *s, bool set[RTE_MAX_LCORE])
{
	const char *p = s;

	while (*p != '\0') {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p)
				goto bad;
		}
		if (a < 0 || b < a || b >= RTE_MAX_LCORE)
			goto bad;
		for (; a <= b; a++) {
			if (!rte_lcore_is_enabled(a) ||
			    (unsigned int)a == rte_get_main_lcore()) {
				fprintf(stderr, "dpdk-shaper: --%s: lcore %ld "
					"is not an enabled worker lcore\n",
					what, a);
				return -1;
			}
			set[a] = true;
		}
		p = end;
		if (*p == ',')
			p++;
		else if (*p != '\0')
			goto bad;
	}
	return 0;
bad:
	fprintf(stderr, "dpdk-shaper: --%s '%s': expected a list like 1,2-3\n",
		what, s);
	return -1;
}

/* Each worker's role, from --rx-lcores and --tx-lcores (neither: the
 * first half RX, the rest TX; one worker: both). */
static int
lcore_roles(struct shaper *s, unsigned int n, struct lcore_roles *ro)
{
	static bool rx[RTE_MAX_LCORE], tx[RTE_MAX_LCORE];
	unsigned int lc, i;

	if (s->opt.rx_lcores && lcore_list("rx-lcores", s->opt.rx_lcores, rx))
		return -1;
	if (s->opt.tx_lcores && lcore_list("tx-lcores", s->opt.tx_lcores, tx))
		return -1;
	for (i = 0; i < n; i++) {
		lc = s->worker_ids[i];
		if (s->opt.rx_lcores == NULL)
			rx[lc] = n == 1 || i < (n + 1) / 2;
		if (s->opt.tx_lcores == NULL)
			tx[lc] = n == 1 || i >= (n + 1) / 2 ||
				 (s->opt.rx_lcores != NULL && !rx[lc]);
	}
	/* With one list given, the other role goes to the rest. */
	if (s->opt.rx_lcores != NULL && s->opt.tx_lcores == NULL)
		for (i = 0; i < n; i++)
			tx[s->worker_ids[i]] = !rx[s->worker_ids[i]] || n == 1;
	if (s->opt.tx_lcores != NULL && s->opt.rx_lcores == NULL)
		for (i = 0; i < n; i++)
			rx[s->worker_ids[i]] = !tx[s->worker_ids[i]] || n == 1;
	ro->nb_rx = ro->nb_tx = 0;
	for (i = 0; i < n; i++) {
		lc = s->worker_ids[i];
		s->workers[lc].lcore = lc;
		s->workers[lc].rx = rx[lc];
		s->workers[lc].tx = tx[lc];
		if (rx[lc])
			ro->rx[ro->nb_rx++] = lc;
		if (tx[lc])
			ro->tx[ro->nb_tx++] = lc;
	}
	if (ro->nb_rx == 0 || ro->nb_tx == 0) {
		fprintf(stderr, "dpdk-shaper: needs at least one RX and one TX "
			"lcore\n");
		return -1;
	}
	return 0;
}

int
shaper_lcores_assign(struct shaper *s)
{
	static struct lcore_roles ro;
	unsigned int lc, n = 0, nrx, ntx, i;
	const unsigned int *rx_ids = ro.rx, *tx_ids = ro.tx;

	RTE_LCORE_FOREACH_WORKER(lc)
		s->worker_ids[n++] = lc;
	if (n == 0) {
		fprintf(stderr, "dpdk-shaper: needs at least one worker lcore "
			"besides the main one (e.g. -l 0-1)\n");
		return -1;
	}
	s->nb_workers = n;
	shaper_queues_default(s, n);
	if (shaper_queues(s) > 1 && s->opt.rx_lcores == NULL &&
	    s->opt.tx_lcores == NULL)
		return shaper_shards_assign(s, NULL);
	if (lcore_roles(s, n, &ro) < 0)
		return -1;
	/* --queues N with lcore roles: a pipeline of shards */
	if (shaper_queues(s) > 1)
		return shaper_shards_assign(s, &ro);
	nrx = ro.nb_rx;
	ntx = ro.nb_tx;
	/* Egress ports round robin over TX lcores; RX queues of each port
	 * round robin over RX lcores. */
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t port = s->port_ids[i];
		struct worker *w = &s->workers[tx_ids[i % ntx]];

		w->eg[w->nb_egress] = &s->egress[port];
		w->egress[w->nb_egress++] = port;
		s->egress[port].owner = w->lcore;
		s->egress[port].ctr = &s->ctr[w->lcore];
		s->shard[port][0] = &s->egress[port];
	}
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t port = s->port_ids[i];
		struct rte_eth_dev_info info;
		uint16_t q, nq;

		rte_eth_dev_info_get(port, &info);
		nq = RTE_MIN((uint16_t)nrx, info.max_rx_queues);
		if (nq == 0)
			nq = 1;
		for (q = 0; q < nq; q++) {
			struct worker *w = &s->workers[rx_ids[(i + q) % nrx]];
			struct rxq_ref *r;

			if (w->nb_rxq == MAX_RXQ_PER_LCORE) {
				fprintf(stderr, "dpdk-shaper: too many RX "
					"queues for lcore %u\n", w->lcore);
				return -1;
			}
			r = &w->rxq[w->nb_rxq++];
			r->port = port;
			r->queue = q;
			r->egress = (uint16_t)s->opt.pair_of[port];
			r->eg = &s->egress[r->egress];
			r->ctr = &s->ctr[w->lcore];
			r->tx_here = w->tx &&
				     s->egress[r->egress].owner == w->lcore;
			r->mtu = shaper_rx_mtu(s, port, r->egress);
		}
	}
	return 0;
}
