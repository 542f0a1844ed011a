/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control plane's classes (control.h): `class` changes built for
 * every port and checked first (a bad one changes nothing), published,
 * and the old set freed after a grace period; the main lcore's duties
 * for them (the cleared classes freed once empty, the growth of the
 * classes that fill).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_cycles.h>

#include "control.h"
#include "events.h"

/* A class set ns for every port, prepared (an error changes nothing),
 * then published. */
int
ctl_classes_prepare(struct shaper *s, const struct shp_class_set *ns,
		const struct shp_kind_env *env,
		struct shp_classes_update **u, char *err)
{
	unsigned int i;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		struct shp_chain *c[SHP_MAX_QUEUES];
		unsigned int n = shaper_port_chains(s, p, c);

		/* every shard of the port in the one publish */
		u[i] = NULL;
		if (shp_classes_prepare(c, n, ns, s->pool_of[p], p, env,
					&u[i], err) < 0) {
			while (i-- > 0)
				shp_classes_abort(u[i]);
			return -1;
		}
	}
	return 0;
}

void
ctl_classes_publish(struct shaper *s, struct shp_classes_update **u)
{
	unsigned int i;

	for (i = 0; i < s->nb_ports; i++)
		if (u[i] != NULL)
			shp_classes_publish(u[i]);
	ctl_grace_period();
	for (i = 0; i < s->nb_ports; i++)
		if (u[i] != NULL)
			shp_classes_finish(u[i]);
}

/*
 * `set class NAME ...` (words) and `clear class NAME` (words NULL): the
 * new class set is prepared on every port first (an error changes
 * nothing), published, and what the data path no longer sees is freed
 * after the grace period (shp_classes.h).
 */
static int
apply_classes(struct shaper *s, const struct shp_class_set *ns, char *err)
{
	struct shp_classes_update *u[SHP_MAX_PORTS];
	struct shp_kind_env env;

	shaper_kind_env(s, &env);
	if (ctl_classes_prepare(s, ns, &env, u, err) < 0)
		return -1;
	ctl_classes_publish(s, u);
	return 0;
}

static void
class_hold_notes(const struct shaper *s, const struct shp_class_set *ns,
		 const char *name)
{
	const struct shp_class_def *d = shp_class_find(ns, name);
	const struct shp_kind *kind;
	struct shp_chain_spec spec;
	struct shp_kind_env env;
	char err[SHP_ERR_LEN], what[SHP_ERR_LEN];
	unsigned int i, sl = SHP_SLOT_DELAY;

	shaper_kind_env(s, &env);
	if (d == NULL || shp_class_spec(d, &env, &spec, err) < 0)
		return;
	kind = spec.kind[sl] != NULL ? spec.kind[sl] :
	       shp_kind_default(SHP_SLOT_DELAY);
	/* the note names the class's delay stage by its own kind */
	snprintf(what, sizeof(what), "class %s %s", name, kind->name);
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		if (d->ports == 0 || (d->ports & (1u << p)))
			ctl_hold_note(s, p, kind, spec.conf[sl], what, &env);
	}
	shp_chain_spec_free(&spec);
}

/* Class name's definition as `show class` words it, or "" when the set
 * has none. */
static void
class_text(const struct shp_class_set *cs, const char *name, char *buf,
	   size_t len)
{
	unsigned int i;
	FILE *f;

	buf[0] = '\0';
	for (i = 0; cs != NULL && i < cs->nb; i++)
		if (strcmp(cs->def[i].name, name) == 0)
			break;
	if (cs == NULL || i == cs->nb)
		return;
	f = fmemopen(buf, len, "w");
	if (f == NULL)
		return;
	shp_class_describe(cs, i, f);
	fclose(f);
	buf[len - 1] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	/* the event names the class: its words only */
	if (strncmp(buf, "class ", 6) == 0 && strchr(buf, ':') != NULL) {
		const char *w = strchr(buf, ':') + 1;

		w += strspn(w, " ");
		memmove(buf, w, strlen(w) + 1);
	}
}

static void
class_event(const struct shp_class_set *o, const struct shp_class_set *n,
	    const char *name)
{
	static char was[CTL_TEXT_LEN], now[CTL_TEXT_LEN];
	char what[SHP_EVENT_WHAT];

	class_text(o, name, was, sizeof(was));
	class_text(n, name, now, sizeof(now));
	snprintf(what, sizeof(what), "class %s", name);
	shp_event_emit(shp_event_source(), -1, what, was, now);
}

int
ctl_set_class(struct shaper *s, const char *name, const char *words,
	      char *err)
{
	struct shp_class_set *ns;

	if (shp_class_set_edit(s->opt.classes, name, words, &ns, err) < 0)
		return -1;
	if (shp_class_set_check_ports(ns, shaper_ports_mask(s), err) < 0) {
		char list[SHP_ERR_LEN];
		size_t n = strlen(err);

		snprintf(err + n, SHP_ERR_LEN - n, " (%s)",
			 shaper_ports_text(s, list, sizeof(list)));
		shp_class_set_free(ns);
		return -1;
	}
	if (apply_classes(s, ns, err) < 0) {
		shp_class_set_free(ns);
		return -1;
	}
	if (words != NULL)
		class_hold_notes(s, ns, name);
	class_event(s->opt.classes, ns, name);
	shp_class_set_free(s->opt.classes);
	s->opt.classes = ns;
	ctl_config_refresh(s);
	return 0;
}

void
ctl_classes_gc(struct shaper *s)
{
	char err[SHP_ERR_LEN];
	unsigned int i, n = 0;

	for (i = 0; i < s->nb_ports; i++)
		n += shp_classes_drained(s->port_ids[i]);
	/* the same classes again: the cleared ones that emptied go */
	if (n > 0 && apply_classes(s, s->opt.classes, err) < 0)
		fprintf(stderr, "dpdk-shaper: freeing cleared classes: %s\n",
			err);
}

void
ctl_classes_grow(struct shaper *s)
{
	static uint64_t last;
	uint64_t now = rte_get_timer_cycles();
	unsigned int i, denied;

	/* a look at thousands of classes: every 10 ms is soon enough for a
	 * class that started to hold packets */
	if (now - last < rte_get_timer_hz() / 100)
		return;
	last = now;
	for (i = 0; i < s->nb_ports; i++)
		shp_classes_grow(s->port_ids[i], CTL_GROW_PER_TICK, &denied);
}
