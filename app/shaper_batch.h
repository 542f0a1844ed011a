/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A batch of stage changes made in one publish (`dpdk-shaper-ctl
 * --atomic`, the socket's `atomic N`, `POST /v1/batch`, the end of a
 * `for`): the main lcore parses and checks every conf, then hands each
 * port's share to the port's owner lcore, which makes all of them in one
 * step between two of its rounds. No packet meets a mix of old and new
 * confs that the owner runs together.
 *
 * The instant: the batch carries one time T, a little after the main
 * lcore hands it on, the same for every port of the batch. The owner makes
 * it at its first TX round from T on, or, where it polls RX for the port
 * too, before the first burst it stamps at or after T; an RX-only lcore
 * (a pipeline) with a burst stamped at or after T waits for the owner
 * first, as for a schedule's change (shaper_sched.h). So a packet stamped
 * at or after T meets the new profile on every port of the batch, and no
 * stage a packet meets later is older than one it met before.
 *
 * Who writes what: the main lcore fills a batch and publishes its
 * pointer; the owner takes it (POSTED -> TAKEN), makes the changes, puts
 * the old confs in it and says DONE; the main lcore then withdraws the
 * pointer and frees the old confs and the batch after an RCU grace
 * period (a worker may still have read the pointer), the one it waits
 * for anyway before it frees the old confs. While the workers
 * are not running (before the launch, after `stop`, at the end), the main
 * lcore makes the changes itself: no packet moves then.
 *
 * A sharded port (--queues N > 1) takes a batch per shard, each with the
 * shard's own copy of every conf, all with the same T and made by each
 * shard's owner: a packet, which belongs to one shard, meets the port's
 * new profile from T on whichever shard carries it, and the old confs of
 * every shard go after the one grace period.
 */
#ifndef SHAPER_BATCH_H
#define SHAPER_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>

#include "shaper.h"

#define SHAPER_BATCH_MAX 64   /* changes to one port */

enum { BATCH_POSTED, BATCH_TAKEN, BATCH_DONE, BATCH_WITHDRAWN };

struct shaper_batch {
	uint64_t at;          /* T: clock ns */
	uint32_t state;
	unsigned int n;
	const struct shp_kind *kind[SHAPER_BATCH_MAX];
	void *conf[SHAPER_BATCH_MAX];
	void *old[SHAPER_BATCH_MAX];   /* the owner's answer */
	bool refused[SHAPER_BATCH_MAX];
	/* `disable`/`enable` of the shard at T, after the changes
	 * (shaper_wire.h): 0 none */
	uint8_t toggle;
	struct shaper_batch *next;     /* retired: the main lcore's */
};

/* By port and shard: the batch its owner has to make, or NULL. */
extern struct shaper_batch *shaper_batch_of[SHP_MAX_PORTS][SHP_MAX_QUEUES];

/* The owner of port p's shard q, at now: make its batch if one is due. */
void shaper_batch_run(struct shaper *s, uint16_t p, uint16_t q, uint64_t now);
/* An RX-only lcore, a burst stamped now for port p: wait until the owner
 * made the batch due by now (or the workers pause or stop). */
void shaper_batch_wait(struct shaper *s, uint16_t p, uint16_t q,
		       uint64_t now);

/*
 * Main lcore: make n changes (kind[j], conf[j] for port[j]'s shard
 * shard[j]), checked
 * already, in one publish; old[j] gets the conf to free after a grace
 * period, and then calls shaper_batch_reclaim. The main lcore makes
 * them itself when the workers are not running. Returns the number of
 * changes the running stage refused (their conf comes back in old[j]).
 */
unsigned int shaper_batch_apply(struct shaper *s, unsigned int n,
				const uint16_t *port, const uint16_t *shard,
				const struct shp_kind *const *kind,
				void *const *conf, void **old);
/* Main lcore: ports port[0..n) disabled (or enabled) at one instant for
 * every shard (shaper_wire.h); made by the main lcore itself when the
 * workers are not running. 0, then shaper_batch_reclaim after a grace
 * period; or -1 out of memory, nothing changed. */
int shaper_batch_toggle(struct shaper *s, const uint16_t *port,
			unsigned int n, bool disable);
/* Main lcore, after a grace period that began after shaper_batch_apply
 * returned: free what the workers may have read. */
void shaper_batch_reclaim(void);

/* TX round of port p's shard q, before anything else: a due batch. */
static inline void
shaper_batch_tx(struct shaper *s, uint16_t p, uint16_t q)
{
	if (unlikely(__atomic_load_n(&shaper_batch_of[p][q],
				     __ATOMIC_RELAXED) != NULL))
		shaper_batch_run(s, p, q, shp_clock_now(&s->clock));
}

/* RX, a burst stamped now for port p's shard q (owner: this lcore owns
 * it too; rx_only: it transmits for no port). */
static inline void
shaper_batch_rx(struct shaper *s, uint16_t p, uint16_t q, bool owner,
		bool rx_only, uint64_t now)
{
	if (likely(__atomic_load_n(&shaper_batch_of[p][q],
				   __ATOMIC_RELAXED) == NULL))
		return;
	if (owner)
		shaper_batch_run(s, p, q, now);
	else if (rx_only)
		shaper_batch_wait(s, p, q, now);
}

#endif
