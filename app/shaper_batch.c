/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A batch of stage changes made in one publish: see shaper_batch.h.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_pause.h>

#include "shaper_batch.h"
#include "shaper_wire.h"

struct shaper_batch *shaper_batch_of[SHP_MAX_PORTS][SHP_MAX_QUEUES];
/* made, withdrawn, to free after a grace period (main lcore only) */
static struct shaper_batch *retired;

/*
 * How far after the hand-over T lies: long enough for the main lcore to
 * hand the batch to every port before any burst is stamped at T, so that
 * every lcore that sees a stamp from T on sees the batch too.
 */
#define BATCH_LEAD_NS 20000

enum { TOGGLE_NONE, TOGGLE_DISABLE, TOGGLE_ENABLE };

static void
make(struct shaper *s, uint16_t p, uint16_t q, struct shaper_batch *b)
{
	char err[SHP_ERR_LEN];
	unsigned int i;

	for (i = 0; i < b->n; i++) {
		b->old[i] = NULL;
		b->refused[i] = shp_chain_change(shaper_shard_chain(s, p, q),
						 b->kind[i],
						 b->conf[i], &b->old[i],
						 err) < 0;
		if (b->refused[i])   /* (the running stage's check_change) */
			b->old[i] = b->conf[i];
	}
	if (b->toggle != 0)
		shaper_wire_make(q == 0 ? &s->egress[p] : s->shard[p][q],
				 b->toggle == TOGGLE_DISABLE);
}

void
shaper_batch_run(struct shaper *s, uint16_t p, uint16_t q, uint64_t now)
{
	struct shaper_batch *b = __atomic_load_n(&shaper_batch_of[p][q],
						 __ATOMIC_ACQUIRE);
	uint32_t st = BATCH_POSTED;

	if (b == NULL || now < b->at ||
	    !__atomic_compare_exchange_n(&b->state, &st, BATCH_TAKEN, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	make(s, p, q, b);
	__atomic_store_n(&b->state, BATCH_DONE, __ATOMIC_RELEASE);
}

void
shaper_batch_wait(struct shaper *s, uint16_t p, uint16_t q, uint64_t now)
{
	struct shaper_batch *b;

	/* the owner makes it at the start of its next TX round: a round
	 * at most, once per batch */
	while ((b = __atomic_load_n(&shaper_batch_of[p][q],
				    __ATOMIC_ACQUIRE)) !=
	       NULL && now >= b->at &&
	       __atomic_load_n(&b->state, __ATOMIC_ACQUIRE) < BATCH_DONE &&
	       !s->paused && !s->quit)
		rte_pause();
}

/* A (port, shard) as one index into the batches. */
#define TARGETS (SHP_MAX_PORTS * SHP_MAX_QUEUES)
#define TARGET(p, q) ((unsigned int)(p) * SHP_MAX_QUEUES + (q))

/* Hand batches b[] (by target; NULL: none) to their owners with one T,
 * and wait until each was made. */
static void
post(struct shaper *s, struct shaper_batch *const *b)
{
	unsigned int i;
	uint64_t at;

	at = shp_clock_now(&s->clock) + BATCH_LEAD_NS;
	for (i = 0; i < TARGETS; i++)
		if (b[i] != NULL) {
			b[i]->at = at;
			b[i]->state = BATCH_POSTED;
			__atomic_store_n(&shaper_batch_of[i / SHP_MAX_QUEUES]
						       [i % SHP_MAX_QUEUES],
					 b[i], __ATOMIC_RELEASE);
		}
	/* the owners make them within a round from T; at the end, what no
	 * owner took is made here (no packet moves any more) */
	for (i = 0; i < TARGETS; i++) {
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
				make(s, (uint16_t)(i / SHP_MAX_QUEUES),
				     (uint16_t)(i % SHP_MAX_QUEUES), b[i]);
				break;
			}
			st = BATCH_POSTED;
			rte_pause();
		}
		__atomic_store_n(&shaper_batch_of[i / SHP_MAX_QUEUES]
					       [i % SHP_MAX_QUEUES], NULL,
				 __ATOMIC_RELEASE);
	}
}

/* An RX-only lcore or an owner may still read a batch it loaded before
 * the pointer went: shaper_batch_reclaim frees them after the caller's
 * grace period. */
static void
retire(struct shaper_batch *const *b)
{
	unsigned int i;

	for (i = 0; i < TARGETS; i++)
		if (b[i] != NULL) {
			b[i]->next = retired;
			retired = b[i];
		}
}

int
shaper_batch_toggle(struct shaper *s, const uint16_t *port, unsigned int n,
		    bool disable)
{
	static struct shaper_batch *b[TARGETS];
	unsigned int i, q, t;

	if (!s->running || s->paused || s->quit) {
		/* no packet moves: the main lcore makes it */
		for (i = 0; i < n; i++)
			for (q = 0; q < shaper_queues(s); q++)
				shaper_wire_make(q == 0 ? &s->egress[port[i]] :
						 s->shard[port[i]][q], disable);
		return 0;
	}
	memset(b, 0, sizeof(b));
	for (i = 0; i < n; i++)
		for (q = 0; q < shaper_queues(s); q++) {
			t = TARGET(port[i], q);
			b[t] = calloc(1, sizeof(*b[t]));
			if (b[t] == NULL) {
				for (t = 0; t < TARGETS; t++)
					free(b[t]);
				return -1;
			}
			b[t]->toggle = disable ? TOGGLE_DISABLE :
					TOGGLE_ENABLE;
		}
	post(s, b);
	retire(b);
	return 0;
}

unsigned int
shaper_batch_apply(struct shaper *s, unsigned int n, const uint16_t *port,
		   const uint16_t *shard, const struct shp_kind *const *kind,
		   void *const *conf, void **old)
{
	static struct shaper_batch *b[TARGETS];
	static unsigned int k[TARGETS];
	unsigned int i, j, refused = 0;
	bool direct = !s->running || s->paused || s->quit;

	memset(b, 0, sizeof(b));
	/* each shard's share, in the order given (a later change to the
	 * same stage takes the earlier one's place: its old conf is that
	 * one) */
	for (j = 0; j < n; j++) {
		unsigned int t = TARGET(port[j], shard[j]);

		if (b[t] == NULL) {
			b[t] = calloc(1, sizeof(*b[t]));
			if (b[t] == NULL) {
				direct = true;   /* (memory: one at a time) */
				break;
			}
		}
		if (b[t]->n == SHAPER_BATCH_MAX) {
			direct = true;
			break;
		}
		b[t]->kind[b[t]->n] = kind[j];
		b[t]->conf[b[t]->n++] = conf[j];
	}
	if (direct) {
		char err[SHP_ERR_LEN];

		for (i = 0; i < TARGETS; i++)
			free(b[i]);
		for (j = 0; j < n; j++)
			if (shp_chain_change(shaper_shard_chain(s, port[j],
								shard[j]),
					     kind[j], conf[j], &old[j],
					     err) < 0) {
				old[j] = conf[j];
				refused++;
			}
		return refused;
	}
	post(s, b);
	/* the old confs, in the order given */
	memset(k, 0, sizeof(k));
	for (j = 0; j < n; j++) {
		unsigned int t = TARGET(port[j], shard[j]);

		old[j] = b[t]->old[k[t]];
		refused += b[t]->refused[k[t]++];
	}
	retire(b);
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
