/* SPDX-License-Identifier: BSD-3-Clause */
/* A port's schedule as its shards walk it: see sched_walk.h. */
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>

#include "sched_walk.h"
#include "shp_qdisc.h"   /* shp_conf_new_id */

int
shp_sched_port_init(struct shp_sched_port *sp, const struct shp_sched *s,
		    uint16_t p)
{
	int cur[SHP_SLOT_MAX];
	uint64_t t = 0, lines = 0;
	unsigned int k, sl;
	bool *last;

	memset(sp, 0, sizeof(*sp));
	sp->sched = s;
	last = calloc(s->nb ? s->nb : 1, sizeof(*last));
	sp->ch = calloc(s->nb ? s->nb : 1, sizeof(*sp->ch));
	if (last == NULL || sp->ch == NULL) {
		free(last);
		free(sp->ch);
		sp->ch = NULL;
		return -1;
	}
	shp_sched_last_at_instant(s, p, last);
	for (sl = 0; sl < SHP_SLOT_MAX; sl++)
		cur[sl] = -1;
	for (k = 0; k < s->nb; k++) {
		const struct shp_sched_event *e = &s->ev[k];
		struct shp_sched_change *g;

		if (e->op != SHP_SCHED_SET || !shp_sched_on_port(e, p))
			continue;
		if (e->t != t) {
			for (sl = 0; sl < SHP_SLOT_MAX; sl++)
				cur[sl] = -1;
			t = e->t;
		}
		sl = shp_sched_slot(e);
		if (cur[sl] < 0) {
			cur[sl] = (int)sp->nb;
			g = &sp->ch[sp->nb++];
			g->slot = (enum shp_slot)sl;
			g->before = lines;
		}
		g = &sp->ch[cur[sl]];
		g->n++;
		lines++;
		if (last[k])
			g->ev = e;
	}
	free(last);
	sp->nb_lines = lines;
	return 0;
}

int
shp_sched_ids_init(struct shp_sched_port *sp, uint64_t cycles)
{
	if (sp->nb == 0)
		return 0;
	if (sp->sched->repeat == 0)
		cycles = 1;
	sp->size = cycles * sp->nb;
	sp->id = calloc(sp->size, sizeof(*sp->id));
	sp->lo = sp->hi = 0;
	return sp->id == NULL ? -1 : 0;
}

void
shp_sched_port_free(struct shp_sched_port *sp)
{
	free(sp->ch);
	free(sp->id);
	memset(sp, 0, sizeof(*sp));
}

void
shp_sched_ids_arm(struct shp_sched_port *sp, uint64_t rel, uint64_t ahead)
{
	uint64_t repeat = sp->sched->repeat, lo, want, next, c;

	if (sp->id == NULL)
		return;
	if (repeat == 0) {
		lo = 0;
		want = sp->nb;
	} else {
		c = rel / repeat;
		lo = (c > SHP_SCHED_IDS_BEHIND ? c - SHP_SCHED_IDS_BEHIND :
		      0) * sp->nb;
		want = (c + ahead + 1) * sp->nb;
	}
	/* the window moves on first: a slot is written again for n only
	 * once n - size is out of it (an owner that read the slot then
	 * finds n below lo) */
	if (lo > sp->lo)
		__atomic_store_n(&sp->lo, lo, __ATOMIC_RELEASE);
	next = RTE_MAX(sp->hi, sp->lo);
	while (next < want && next < sp->lo + sp->size) {
		__atomic_store_n(&sp->id[next % sp->size], shp_conf_new_id(),
				 __ATOMIC_RELEASE);
		next++;
	}
	if (next != sp->hi)
		__atomic_store_n(&sp->hi, next, __ATOMIC_RELEASE);
}

void
shp_sched_ids_redraw(struct shp_sched_port *sp, uint64_t rel)
{
	uint64_t repeat = sp->sched->repeat, x, c = 0, n, hi = sp->hi;
	unsigned int j = 0;

	if (sp->id == NULL || rel > UINT64_MAX - SHP_SCHED_IDS_REDRAW)
		return;
	/* the first occurrence after x */
	x = rel + SHP_SCHED_IDS_REDRAW;
	if (repeat != 0) {
		c = x / repeat;
		x %= repeat;
	}
	while (j < sp->nb && sp->ch[j].ev->t <= x)
		j++;
	if (j == sp->nb) {
		if (repeat == 0)
			return;
		c++;
		j = 0;
	}
	n = c * sp->nb + j;
	if (n >= hi)
		return;
	n = RTE_MAX(n, sp->lo);
	__atomic_store_n(&sp->hi, n, __ATOMIC_RELEASE);
	for (; n < hi; n++)
		__atomic_store_n(&sp->id[n % sp->size], shp_conf_new_id(),
				 __ATOMIC_RELEASE);
	__atomic_store_n(&sp->hi, hi, __ATOMIC_RELEASE);
}

int
shp_sched_ids_get(const struct shp_sched_port *sp, uint64_t n, uint64_t *id)
{
	uint64_t v;

	if (sp->id == NULL || n >= __atomic_load_n(&sp->hi, __ATOMIC_ACQUIRE))
		return n < __atomic_load_n(&sp->lo, __ATOMIC_ACQUIRE) ? -1 : 0;
	v = __atomic_load_n(&sp->id[n % sp->size], __ATOMIC_ACQUIRE);
	/* (after the slot: a slot written for a later n had lo moved past
	 * n before) */
	if (n < __atomic_load_n(&sp->lo, __ATOMIC_ACQUIRE))
		return -1;
	*id = v;
	return 1;
}

void
shp_sched_walk_init(struct shp_sched_walk *w)
{
	unsigned int sl;

	memset(w, 0, sizeof(*w));
	for (sl = 0; sl < SHP_SLOT_MAX; sl++)
		w->due[sl] = SHP_SCHED_NO_OCC;
}

uint64_t
shp_sched_walk_time(const struct shp_sched_port *sp,
		    const struct shp_sched_walk *w)
{
	uint64_t repeat = sp->sched->repeat, t;

	if (sp->nb == 0 || (repeat == 0 && w->cycle > 0))
		return UINT64_MAX;
	t = sp->ch[w->j].ev->t;
	if (repeat != 0 && w->cycle > (UINT64_MAX - 1 - t) / repeat)
		return UINT64_MAX;
	return w->cycle * repeat + t;
}

void
shp_sched_walk_run(const struct shp_sched_port *sp, struct shp_sched_walk *w,
		   uint64_t rel)
{
	uint64_t repeat = sp->sched->repeat;

	if (sp->nb == 0)
		return;
	/* (the work of a pass stays two cycles, whatever the stall) */
	if (repeat != 0 && rel / repeat > w->cycle + 1) {
		uint64_t to = rel / repeat - 1;

		w->missed += (to - w->cycle) * sp->nb_lines -
			     sp->ch[w->j].before;
		w->cycle = to;
		w->j = 0;
	}
	while (shp_sched_walk_time(sp, w) <= rel) {
		const struct shp_sched_change *e = &sp->ch[w->j];

		/* a change to the same stage came due after it: its time
		 * went by before the data path got to it */
		if (w->due[e->slot] != SHP_SCHED_NO_OCC)
			w->missed += shp_sched_occ_change(sp,
							  w->due[e->slot])->n;
		w->due[e->slot] = w->cycle * sp->nb + w->j;
		if (++w->j == sp->nb) {
			w->j = 0;
			w->cycle++;
		}
	}
}
