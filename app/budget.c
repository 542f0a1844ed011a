/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Each port's lossless budget (lib/core/shp_budget.h): at start and after
 * each change of its profile, one line, kept for the stats file; a
 * profile over it is warned of, or refused with --strict-budget.
 */
#include <stdio.h>
#include <rte_ethdev.h>
#include <rte_ether.h>

#include "shaper.h"
#include "shp_budget.h"

/* bytes/s of port's link (0: not known) */
static uint64_t
line_rate(uint16_t port)
{
	struct rte_eth_link el;

	memset(&el, 0, sizeof(el));
	if (rte_eth_link_get_nowait(port, &el) != 0 ||
	    el.link_speed == RTE_ETH_SPEED_NUM_NONE ||
	    el.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN)
		return 0;
	return (uint64_t)el.link_speed * 1000000 / 8;
}

void
shaper_line_rates(struct shaper *s)
{
	unsigned int i, q;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t port = s->port_ids[i];
		uint64_t r = line_rate(port);

		for (q = 0; q < shaper_queues(s); q++)
			__atomic_store_n(&shaper_shard_chain(s, port, q)->
					 env.line_rate, r, __ATOMIC_RELAXED);
	}
}

int
shaper_budget_of(struct shaper *s, uint16_t port, const struct shp_kind *k,
		 const void *conf, struct shp_budget *b)
{
	const struct shp_chain *c = &s->chain[port];
	const struct shp_kind *dk = c->kind[SHP_SLOT_DELAY];
	const void *dconf = c->conf[SHP_SLOT_DELAY];
	const struct shp_kind *rk = c->kind[SHP_SLOT_RATE];
	const void *rconf = c->conf[SHP_SLOT_RATE];
	struct shp_budget_in in;
	uint16_t mtu = RTE_ETHER_MTU;

	/* a change not yet made: what the port would run */
	if (k != NULL && k->slot == SHP_SLOT_DELAY) {
		dk = k;
		dconf = conf;
	} else if (k != NULL && k->slot == SHP_SLOT_RATE) {
		rk = k;
		rconf = conf;
	}
	memset(b, 0, sizeof(*b));
	if (dk->budget == NULL || s->pool_of[port] == NULL)
		return -1;
	(void)rte_eth_dev_get_mtu(port, &mtu);
	in = (struct shp_budget_in){
		.frame = (uint32_t)mtu + RTE_ETHER_HDR_LEN,
		.line_rate = line_rate(port),
		.gate_rate = rconf != NULL && rk->rate != NULL ?
			     rk->rate(rconf) : 0,
		.pool = s->pool_of[port]->size,
		.hold_cap = s->egress[port].hold_cap,
		.shards = (uint16_t)shaper_queues(s),
	};
	/* a link's shards: one limit and share of the pool (issue 56), a
	 * byte store each */
	dk->budget(dconf, &in, b);
	b->frame = in.frame;
	b->line_rate = in.line_rate;
	b->gate_rate = in.gate_rate;
	shp_budget_finish(b);
	b->known = true;
	return 0;
}

/* port's budget as it runs now, kept for the stats file, and its line;
 * at start the start's way (dpdk-shaper: ..., a warning or, strict, the
 * refusal on stderr), else a command's (on stdout). True when over. */
static bool
budget_say(struct shaper *s, uint16_t port, bool start)
{
	struct shp_budget *b = &s->budget[port];
	char line[512];

	if (shaper_budget_of(s, port, NULL, NULL, b) < 0)
		return false;
	shp_budget_line(b, port, line, sizeof(line));
	printf("%s%s\n", start ? "dpdk-shaper: " : "", line);
	if (!b->over)
		return false;
	shp_budget_over_line(b, port, line, sizeof(line));
	if (!start)
		printf("warning: %s\n", line);
	else if (s->opt.strict_budget)
		fprintf(stderr, "dpdk-shaper: %s (--strict-budget)\n", line);
	else
		fprintf(stderr, "dpdk-shaper: warning: %s\n", line);
	return true;
}

int
shaper_budget_start(struct shaper *s)
{
	unsigned int i;
	int rc = 0;

	shaper_line_rates(s);
	for (i = 0; i < s->nb_ports; i++)
		if (budget_say(s, s->port_ids[i], true) &&
		    s->opt.strict_budget)
			rc = -1;
	return rc;
}

/* ports changed by the command being run, said after its own output */
static bool due[SHP_MAX_PORTS];

void
shaper_budget_report(struct shaper *s, uint16_t port)
{
	/* kept now: the stats file has it even if nothing flushes */
	(void)shaper_budget_of(s, port, NULL, NULL, &s->budget[port]);
	due[port] = true;
}

void
shaper_budget_flush(struct shaper *s)
{
	unsigned int i;

	for (i = 0; i < s->nb_ports; i++)
		if (due[s->port_ids[i]]) {
			due[s->port_ids[i]] = false;
			(void)budget_say(s, s->port_ids[i], false);
		}
}

int
shaper_budget_check(struct shaper *s, uint16_t port, const struct shp_kind *k,
		    const void *conf, char *err)
{
	struct shp_budget b;
	char line[SHP_ERR_LEN];

	if (!s->opt.strict_budget ||
	    (k->slot != SHP_SLOT_DELAY && k->slot != SHP_SLOT_RATE) ||
	    shaper_budget_of(s, port, k, conf, &b) < 0 || !b.over)
		return 0;
	shp_budget_over_line(&b, port, line, sizeof(line));
	snprintf(err, SHP_ERR_LEN, "%s (--strict-budget: nothing changed)",
		 line);
	return -1;
}
