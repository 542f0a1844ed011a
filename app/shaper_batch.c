/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A batch of stage changes made in one publish: see shaper_batch.h.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_pause.h>

#include "shaper_batch.h"

struct shaper_batch *shaper_batch_of[SHP_MAX_PORTS];
/* made, withdrawn, to free after a grace period (main lcore only) */
static struct shaper_batch *retired;

/*
 * How far after the hand-over T lies: long enough for the main lcore to
 * hand the batch to every port before any burst is stamped at T, so that
 * every lcore that sees a stamp from T on sees the batch too.
 */
#define BATCH_LEAD_NS 20000

static void
make(struct shaper *s, uint16_t p, struct shaper_batch *b)
{
	char err[SHP_ERR_LEN];
	unsigned int i;

	for (i = 0; i < b->n; i++) {
		b->old[i] = NULL;
		b->refused[i] = shp_chain_change(&s->chain[p], b->kind[i],
						 b->conf[i], &b->old[i],
						 err) < 0;
		if (b->refused[i])   /* (the running stage's check_change) */
			b->old[i] = b->conf[i];
	}
}

void
shaper_batch_run(struct shaper *s, uint16_t p, uint64_t now)
{
	struct shaper_batch *b = __atomic_load_n(&shaper_batch_of[p],
						 __ATOMIC_ACQUIRE);
	uint32_t st = BATCH_POSTED;

	if (b == NULL || now < b->at ||
	    !__atomic_compare_exchange_n(&b->state, &st, BATCH_TAKEN, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	make(s, p, b);
	__atomic_store_n(&b->state, BATCH_DONE, __ATOMIC_RELEASE);
}

void
shaper_batch_wait(struct shaper *s, uint16_t p, uint64_t now)
{
	struct shaper_batch *b;

	/* the owner makes it at the start of its next TX round: a round
	 * at most, once per batch */
	while ((b = __atomic_load_n(&shaper_batch_of[p], __ATOMIC_ACQUIRE)) !=
	       NULL && now >= b->at &&
	       __atomic_load_n(&b->state, __ATOMIC_ACQUIRE) < BATCH_DONE &&
	       !s->paused && !s->quit)
		rte_pause();
}

unsigned int
shaper_batch_apply(struct shaper *s, unsigned int n, const uint16_t *port,
		   const struct shp_kind *const *kind, void *const *conf,
		   void **old)
{
	struct shaper_batch *b[SHP_MAX_PORTS] = { NULL };
	unsigned int i, j, refused = 0;
	bool direct = !s->running || s->paused || s->quit;
	uint64_t at;

	/* each port's share, in the order given (a later change to the same
	 * stage takes the earlier one's place: its old conf is that one) */
	for (j = 0; j < n; j++) {
		uint16_t p = port[j];

		if (b[p] == NULL) {
			b[p] = calloc(1, sizeof(*b[p]));
			if (b[p] == NULL) {
				direct = true;   /* (memory: one at a time) */
				break;
			}
		}
		if (b[p]->n == SHAPER_BATCH_MAX) {
			direct = true;
			break;
		}
		b[p]->kind[b[p]->n] = kind[j];
		b[p]->conf[b[p]->n++] = conf[j];
	}
	if (direct) {
		char err[SHP_ERR_LEN];

		for (i = 0; i < SHP_MAX_PORTS; i++)
			free(b[i]);
		for (j = 0; j < n; j++)
			if (shp_chain_change(&s->chain[port[j]], kind[j],
					     conf[j], &old[j], err) < 0) {
				old[j] = conf[j];
				refused++;
			}
		return refused;
	}
	at = shp_clock_now(&s->clock) + BATCH_LEAD_NS;
	for (i = 0; i < SHP_MAX_PORTS; i++)
		if (b[i] != NULL) {
			b[i]->at = at;
			b[i]->state = BATCH_POSTED;
			__atomic_store_n(&shaper_batch_of[i], b[i],
					 __ATOMIC_RELEASE);
		}
	/* the owners make them within a round from T; at the end, what no
	 * owner took is made here (no packet moves any more) */
	for (i = 0; i < SHP_MAX_PORTS; i++) {
		uint32_t st = BATCH_POSTED;

		if (b[i] == NULL)
			continue;
		while (__atomic_load_n(&b[i]->state, __ATOMIC_ACQUIRE) !=
		       BATCH_DONE) {
			if (s->quit &&
			    __atomic_compare_exchange_n(&b[i]->state, &st,
							BATCH_WITHDRAWN, false,
							__ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED)) {
				make(s, (uint16_t)i, b[i]);
				break;
			}
			st = BATCH_POSTED;
			rte_pause();
		}
		__atomic_store_n(&shaper_batch_of[i], NULL, __ATOMIC_RELEASE);
	}
	/* the old confs, in the order given */
	{
		unsigned int k[SHP_MAX_PORTS] = { 0 };

		for (j = 0; j < n; j++) {
			struct shaper_batch *pb = b[port[j]];

			old[j] = pb->old[k[port[j]]];
			refused += pb->refused[k[port[j]]++];
		}
	}
	/* an RX-only lcore or an owner may still read a batch it loaded
	 * before the pointer went: shaper_batch_reclaim frees them after
	 * the caller's grace period */
	for (i = 0; i < SHP_MAX_PORTS; i++)
		if (b[i] != NULL) {
			b[i]->next = retired;
			retired = b[i];
		}
	return refused;
}

void
shaper_batch_reclaim(void)
{
	while (retired != NULL) {
		struct shaper_batch *b = retired;

		retired = b->next;
		free(b);
	}
}
