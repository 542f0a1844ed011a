/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry of stage kinds (its list: lib/sched/kinds.c), and the
 * numbering of their counters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>

#include "shp_kind.h"
#include "shp_units.h"

/* the registry (lib/sched/kinds.c: the kinds are a layer above) holds
 * at most this many */
#define KINDS_MAX 32
#define KIND_MAX_COUNTERS 16

/* The core's own causes, before any kind's. */
static const char *const core_drops[SHP_DROP_CORE] = {
	[SHP_DROP_NO_MBUF] = "no_mbuf",
	[SHP_DROP_FLUSHED] = "flushed",
	[SHP_DROP_OVERLOAD] = "overload",
	[SHP_DROP_INBOX_FULL] = "inbox_full",
	[SHP_DROP_LINK_DOWN] = "link_down",
	[SHP_DROP_LATE] = "late",
	[SHP_DROP_OVERSIZE] = "oversize",
};

const char *shp_drop_names[SHP_DROP_SLOTS];
static unsigned int nb_kinds, nb_drops, nb_xstats;
static uint8_t drop_map[KINDS_MAX][KIND_MAX_COUNTERS];
static uint8_t xstat_map[KINDS_MAX][KIND_MAX_COUNTERS];
static const struct shp_kind *xstat_kind[SHP_XSTAT_SLOTS];
static const struct shp_xstat_desc *xstat_desc[SHP_XSTAT_SLOTS];
static uint8_t delayed[SHP_XSTAT_SLOTS];
static unsigned int nb_delayed;
static const struct shp_kind *key_kind[SHP_MAX_KEYS];
static unsigned int nb_keys;

static unsigned int
drop_slot(const char *name)
{
	unsigned int i;

	for (i = 0; i < nb_drops; i++)
		if (strcmp(shp_drop_names[i], name) == 0)
			return i;
	if (nb_drops == SHP_DROP_SLOTS)
		rte_panic("more drop causes than SHP_DROP_SLOTS\n");
	shp_drop_names[nb_drops] = name;
	return nb_drops++;
}

/* Numbered before main(), so that every user (the program, the offline
 * tool, the tests) sees one numbering without calling anything. */
RTE_INIT(shp_kinds_number)
{
	unsigned int k, i;

	while (shp_kinds[nb_kinds] != NULL)
		if (++nb_kinds > KINDS_MAX)
			rte_panic("more kinds than KINDS_MAX\n");
	for (i = 0; i < SHP_DROP_CORE; i++)
		drop_slot(core_drops[i]);
	for (k = 0; k < nb_kinds; k++) {
		const struct shp_kind *kind = shp_kinds[k];

		if (shp_key_index(shp_kind_key(kind)) < 0) {
			if (nb_keys == SHP_MAX_KEYS)
				rte_panic("more keys than SHP_MAX_KEYS\n");
			key_kind[nb_keys++] = kind;
		}
		for (i = 0; kind->drops != NULL && kind->drops[i]; i++) {
			if (i == KIND_MAX_COUNTERS)
				rte_panic("%s: too many drop causes\n",
					  kind->name);
			drop_map[k][i] = (uint8_t)drop_slot(kind->drops[i]);
		}
		for (i = 0; kind->xstats != NULL && kind->xstats[i].name;
		     i++) {
			if (i == KIND_MAX_COUNTERS ||
			    nb_xstats == SHP_XSTAT_SLOTS)
				rte_panic("%s: too many statistics\n",
					  kind->name);
			if (kind->xstats[i].flags & SHP_XS_DELAYED)
				delayed[nb_delayed++] = (uint8_t)nb_xstats;
			xstat_kind[nb_xstats] = kind;
			xstat_desc[nb_xstats] = &kind->xstats[i];
			xstat_map[k][i] = (uint8_t)nb_xstats++;
		}
	}
}

static int
kind_index(const struct shp_kind *k)
{
	unsigned int i;

	for (i = 0; i < nb_kinds; i++)
		if (shp_kinds[i] == k)
			return (int)i;
	return -1;
}

const struct shp_kind *
shp_kind_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < nb_kinds; i++)
		if (strcmp(shp_kinds[i]->name, name) == 0)
			return shp_kinds[i];
	return NULL;
}

const struct shp_kind *
shp_kind_of(const struct shp_qdisc_ops *ops)
{
	unsigned int i;

	for (i = 0; i < nb_kinds; i++)
		if (shp_kinds[i]->ops == ops)
			return shp_kinds[i];
	return NULL;
}

const struct shp_kind *
shp_kind_default(enum shp_slot slot)
{
	unsigned int i;

	for (i = 0; i < nb_kinds; i++)
		if (shp_kinds[i]->slot == slot)
			return shp_kinds[i];
	return NULL;
}

const char *
shp_kind_key(const struct shp_kind *k)
{
	return k->slot == SHP_SLOT_QUEUE ? "queue" : k->name;
}

bool
shp_kind_is_key(const char *word)
{
	unsigned int i;

	for (i = 0; i < nb_kinds; i++)
		if (strcmp(shp_kind_key(shp_kinds[i]), word) == 0)
			return true;
	return false;
}

int
shp_kind_parse(const char *key, const char *text,
	       const struct shp_kind_env *env, const struct shp_kind **kind,
	       void **conf, char *err)
{
	const struct shp_kind *k = NULL;
	char sub[SHP_ERR_LEN];
	const char *args = text;
	void *c;

	/* the separators of shp_split_words, which splits the rest */
	args += strspn(args, " \t\r\n");
	if (strcmp(key, "queue") == 0) {
		char word[32];
		size_t n = strcspn(args, " \t\r\n");
		unsigned int i;

		if (n == 0 || n >= sizeof(word))
			goto unknown_queue;
		memcpy(word, args, n);
		word[n] = '\0';
		k = shp_kind_find(word);
		if (k == NULL || k->slot != SHP_SLOT_QUEUE)
			goto unknown_queue;
		args += n;
		if (0) {
unknown_queue:
			n = 0;
			for (i = 0; i < nb_kinds; i++)
				if (shp_kinds[i]->slot == SHP_SLOT_QUEUE)
					n += (size_t)snprintf(sub + n,
						sizeof(sub) - n, "%s%s",
						n ? ", " : "",
						shp_kinds[i]->name);
			snprintf(err, SHP_ERR_LEN, "--queue '%.*s': expected "
				 "a queue kind first (%s)",
				 (int)strcspn(text, "\r\n"), text, sub);
			return -1;
		}
	} else {
		k = shp_kind_find(key);
		if (k == NULL || k->slot == SHP_SLOT_QUEUE) {
			snprintf(err, SHP_ERR_LEN, "unknown stage '%s'", key);
			return -1;
		}
		if (strcmp(args, "off") == 0) {
			*kind = k;
			*conf = NULL;
			return 0;
		}
	}
	c = k->parse(args, env, sub);
	if (c == NULL) {
		/* the kinds' own parsers already say "--tbf '...': ..." */
		snprintf(err, SHP_ERR_LEN, "%s", sub);
		return -1;
	}
	*kind = k;
	*conf = c;
	return 0;
}

int
shp_kind_format(const struct shp_kind *k, const void *conf, char *buf,
		size_t len)
{
	int n = 0, m;

	if (conf == NULL && k->slot != SHP_SLOT_QUEUE)
		return snprintf(buf, len, "off");
	if (k->slot == SHP_SLOT_QUEUE)
		n = snprintf(buf, len, "%s", k->name);
	if ((size_t)n < len && k->format != NULL && conf != NULL) {
		char *p = buf + n;
		size_t room = len - (size_t)n;

		m = k->format(conf, p + (n ? 1 : 0), room > 1 ? room - 1 : 0);
		if (m > 0 && n) {
			*p = ' ';
			m++;
		} else if (n && room > 0) {
			*p = '\0';
		}
		n += m > 0 ? m : 0;
	}
	return n;
}

void
shp_kind_conf_free(const struct shp_kind *k, void *conf)
{
	if (conf != NULL && k->conf_free != NULL)
		k->conf_free(conf);
}

unsigned int
shp_drop_nb(void)
{
	return nb_drops;
}

unsigned int
shp_xstat_nb(void)
{
	return nb_xstats;
}

const struct shp_kind *
shp_xstat_kind(unsigned int i)
{
	return i < nb_xstats ? xstat_kind[i] : NULL;
}

const struct shp_xstat_desc *
shp_xstat_desc(unsigned int i)
{
	return i < nb_xstats ? xstat_desc[i] : NULL;
}

uint64_t
shp_xstat_combine(unsigned int i, uint64_t sum, uint64_t v, bool gauges)
{
	unsigned int f = i < nb_xstats ? xstat_desc[i]->flags : 0;

	if (!(f & SHP_XS_GAUGE))
		return sum + v;
	if (f & SHP_XS_LINK)
		return RTE_MAX(sum, v);
	return gauges ? sum + v : sum;
}

const uint8_t *
shp_kind_drop_map(const struct shp_kind *k)
{
	int i = kind_index(k);

	return i < 0 ? NULL : drop_map[i];
}

uint64_t
shp_kind_drops_own(const struct shp_kind *k, const struct shp_kind *other,
		   const uint64_t *drops)
{
	const uint8_t *map = shp_kind_drop_map(k);
	const uint8_t *om = other != NULL && other->drops != NULL ?
			    shp_kind_drop_map(other) : NULL;
	uint64_t n = 0;
	unsigned int i, j;

	for (i = 0; map != NULL && k->drops != NULL && k->drops[i]; i++) {
		bool shared = false;

		for (j = 0; om != NULL && other->drops[j] && !shared; j++)
			shared = om[j] == map[i];
		if (!shared)
			n += drops[map[i]];
	}
	return n;
}

const uint8_t *
shp_kind_xstat_map(const struct shp_kind *k)
{
	int i = kind_index(k);

	return i < 0 ? NULL : xstat_map[i];
}

unsigned int
shp_key_nb(void)
{
	return nb_keys;
}

const char *
shp_key_name(unsigned int i)
{
	return i < nb_keys ? shp_kind_key(key_kind[i]) : NULL;
}

int
shp_key_index(const char *word)
{
	unsigned int i;

	for (i = 0; i < nb_keys; i++)
		if (strcmp(shp_kind_key(key_kind[i]), word) == 0)
			return (int)i;
	return -1;
}

enum shp_slot
shp_key_slot(unsigned int i)
{
	return key_kind[i]->slot;
}

const uint8_t *
shp_xstat_delayed(unsigned int *nb)
{
	*nb = nb_delayed;
	return delayed;
}

int
shp_drop_index(const char *name)
{
	unsigned int i;

	for (i = 0; i < nb_drops; i++)
		if (strcmp(shp_drop_names[i], name) == 0)
			return (int)i;
	return -1;
}

int
shp_xstat_index(const struct shp_kind *k, const char *name)
{
	unsigned int i;

	for (i = 0; i < nb_xstats; i++)
		if (xstat_kind[i] == k && strcmp(xstat_desc[i]->name, name) == 0)
			return (int)i;
	return -1;
}

uint64_t
shp_kind_drops(const struct shp_kind *k, const uint64_t *drops)
{
	const uint8_t *map = shp_kind_drop_map(k);
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; map != NULL && k->drops != NULL && k->drops[i]; i++)
		n += drops[map[i]];
	return n;
}
