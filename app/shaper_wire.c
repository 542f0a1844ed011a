/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `disable P|all`, `enable P|all`: see shaper_wire.h. The main lcore
 * makes the rings, waits for the state a toggle needs, and hands the
 * toggle to the owners as a batch (shaper_batch_toggle).
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_rcu_qsbr.h>

#include "events.h"
#include "shaper_batch.h"
#include "shaper_wire.h"

static bool disabled[SHP_MAX_PORTS];

static struct egress *
shard_of(struct shaper *s, uint16_t p, unsigned int q)
{
	return s->shard[p][q] != NULL ? s->shard[p][q] : &s->egress[p];
}

bool
shaper_wire_disabled(const struct shaper *s, uint16_t p)
{
	(void)s;
	return p < SHP_MAX_PORTS && disabled[p];
}

void
shaper_wire_make(struct egress *e, bool disable)
{
	e->wire_sealed = false;
	e->wire = disable ? SHAPER_WIRE_OFF | SHAPER_WIRE_DRAIN :
		  SHAPER_WIRE_LEFT;
}

/* Port p's ring for each shard: one the size of its pool at most, which
 * cannot hold more frames than that. 0, or -1 with err. */
static int
rings(struct shaper *s, uint16_t p, char *err)
{
	unsigned int q, size = rte_align32pow2(RTE_MAX(s->nb_mbufs, 1024u));

	size = RTE_MIN(size, 1u << 20);
	for (q = 0; q < shaper_queues(s); q++) {
		struct egress *e = shard_of(s, p, q);
		char name[32];

		if (e->wire_ring != NULL)
			continue;
		snprintf(name, sizeof(name), "wire%u_%u", p, q);
		e->wire_ring = shp_ring_new(name, size, rte_socket_id(),
					    RING_F_SC_DEQ, true);
		if (e->wire_ring == NULL) {
			snprintf(err, SHP_ERR_LEN, "port %u: out of memory "
				 "for its wire ring", p);
			return -1;
		}
	}
	return 0;
}

/* Is port p's every shard in a state the toggle can be made from? The
 * frames the stages still hold (disabled) or the ring still holds
 * (enabled, its ring not empty yet) in *held. */
static bool
settled(struct shaper *s, uint16_t p, bool disable, uint64_t *held)
{
	unsigned int q;

	*held = 0;
	for (q = 0; q < shaper_queues(s); q++) {
		struct egress *e = shard_of(s, p, q);
		uint8_t w = __atomic_load_n(&e->wire, __ATOMIC_ACQUIRE);

		uint64_t k = 0;

		/* (not only while it drains: an RX lcore that is not
		 * exact to the stamp may still have put a frame there) */
		if (!disable && (w & SHAPER_WIRE_OFF))
			k = shp_qdisc_qlen_total(e->chain->root) +
			    shp_chain_inbox_count(e->chain);
		if (disable && (w & SHAPER_WIRE_LEFT))
			k = rte_ring_count(e->wire_ring);
		*held += k;
	}
	return *held == 0;
}

int
shaper_wire_set(struct shaper *s, int port, bool disable, char *err)
{
	uint16_t todo[SHP_MAX_PORTS];
	unsigned int i, q, n = 0;
	bool moving = s->running && !s->paused && !s->quit;
	uint64_t until = rte_get_timer_cycles() +
			 rte_get_timer_hz() * SHAPER_WIRE_WAIT_MS / 1000;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		if (port >= 0 && port != p)
			continue;
		if (disabled[p] == disable) {
			printf("port %u: %s already\n", p,
			       disable ? "disabled" : "enabled");
			continue;
		}
		if (rings(s, p, err) < 0)
			return -1;
		todo[n++] = p;
	}
	/* what came before the last toggle has to be gone (shaper_wire.h) */
	for (i = 0; i < n; i++) {
		uint64_t held;

		while (!settled(s, todo[i], disable, &held)) {
			if (!moving || rte_get_timer_cycles() > until) {
				snprintf(err, SHP_ERR_LEN, "port %u still "
					 "holds %lu frame%s from before the "
					 "last %s (they leave at the %s's "
					 "pace): try again", todo[i],
					 (unsigned long)held,
					 held == 1 ? "" : "s",
					 disable ? "enable" : "disable",
					 disable ? "wire" : "profile");
				return -1;
			}
			rte_delay_us_sleep(200);
		}
	}
	if (n == 0)
		return 0;
	if (shaper_batch_toggle(s, todo, n, disable) < 0) {
		snprintf(err, SHP_ERR_LEN, "out of memory");
		return -1;
	}
	/* every burst an RX lcore read the old state for is in the ring
	 * now: the owners may find it empty for good */
	if (moving)
		rte_rcu_qsbr_synchronize(shaper_rcu, RTE_QSBR_THRID_INVALID);
	shaper_batch_reclaim();
	for (i = 0; i < n; i++) {
		for (q = 0; q < shaper_queues(s); q++)
			__atomic_store_n(&shard_of(s, todo[i], q)->wire_sealed,
					 true, __ATOMIC_RELEASE);
		disabled[todo[i]] = disable;
		printf("port %u: %s\n", todo[i],
		       disable ? "disabled (a bare wire; the profile is "
		       "kept: enable restores it)" : "enabled");
		shp_event_emit(shp_event_source(), todo[i], "port",
			       disable ? "enabled" : "disabled",
			       disable ? "disabled" : "enabled");
	}
	return 0;
}

void
shaper_wire_flush(struct shaper *s)
{
	unsigned int i, q;

	for (i = 0; i < s->nb_ports; i++)
		for (q = 0; q < shaper_queues(s); q++) {
			uint16_t p = s->port_ids[i];
			struct egress *e = s->shard[p][q];
			struct rte_mbuf *pkts[64];
			struct shp_ctx ctx;
			unsigned int k;

			if (e == NULL || e->wire_ring == NULL ||
			    e->ctr == NULL)
				continue;
			ctx = (struct shp_ctx){ .ctr = &e->ctr->port[p] };
			while ((k = rte_ring_dequeue_burst(e->wire_ring,
							   (void **)pkts,
							   RTE_DIM(pkts),
							   NULL)) > 0)
				shp_drop_burst(&ctx, SHP_DROP_FLUSHED, pkts,
					       (uint16_t)k);
		}
}

void
shaper_wire_fini(struct shaper *s)
{
	unsigned int p, q;

	for (p = 0; p < SHP_MAX_PORTS; p++)
		for (q = 0; q < SHP_MAX_QUEUES; q++) {
			struct egress *e = s->shard[p][q];

			if (e != NULL && e->wire_ring != NULL) {
				shp_ring_free(e->wire_ring);
				e->wire_ring = NULL;
			}
		}
	for (p = 0; p < SHP_MAX_PORTS; p++)
		if (s->egress[p].wire_ring != NULL) {
			shp_ring_free(s->egress[p].wire_ring);
			s->egress[p].wire_ring = NULL;
		}
}
