/* SPDX-License-Identifier: BSD-3-Clause */
/* Class definitions from the options and the INI file (shp_classes.h). */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "shp_classes.h"

struct shp_class_set *
shp_class_set_new(void)
{
	struct shp_class_set *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->match = shp_match_set_new();
	if (s->match == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void
shp_class_set_free(struct shp_class_set *s)
{
	unsigned int i, k;

	if (s == NULL)
		return;
	for (i = 0; i < s->nb; i++)
		for (k = 0; k < SHP_MAX_KEYS; k++)
			free(s->def[i].text[k]);
	free(s->def);
	shp_match_set_free(s->match);
	free(s);
}

/* "class-netem" -> "netem"; NULL for a word that is not class-KEY */
static const char *
opt_key(const char *opt)
{
	if (strncmp(opt, "class-", 6) == 0 && shp_kind_is_key(opt + 6))
		return opt + 6;
	if (strncmp(opt, "class_", 6) == 0 && shp_kind_is_key(opt + 6))
		return opt + 6;
	return NULL;
}

static bool
opt_is(const char *opt, const char *word)
{
	return strncmp(opt, "class", 5) == 0 &&
	       (opt[5] == '-' || opt[5] == '_') &&
	       strcmp(opt + 6, word) == 0;
}

bool
shp_class_is_option(const char *opt)
{
	return strcmp(opt, "class") == 0 || opt_key(opt) != NULL ||
	       opt_is(opt, "ports") || opt_is(opt, "quantum") ||
	       opt_is(opt, "prio");
}

size_t
shp_classes_link_note(const struct shp_chain_spec *spec,
		      const struct shp_class_set *s, uint16_t port,
		      char *buf, size_t len)
{
	size_t at = shp_chain_shards_note(spec, buf, len);
	unsigned int i;
	int w;

	for (i = 0; s != NULL && i < s->nb; i++)
		if (s->def[i].ports == 0 || (s->def[i].ports & (1u << port)))
			break;
	if (s == NULL || i == s->nb || at + 1 >= len)
		return at;
	/* each shard runs every class (shp_classes_attach): test_classes
	 * at --queues 4, a:b 1.0 for 3.0, and 500/500 where the high class
	 * took 1000/0 */
	w = snprintf(buf + at, len - at, "%sclasses: their DRR shares and "
		     "priority hold within a shard only: each shard's classes "
		     "share out what the link's rate gives that shard",
		     at ? "; " : "");
	return w < 0 ? at : RTE_MIN(len - 1, at + (size_t)w);
}

int
shp_class_set_check_ports(const struct shp_class_set *s, uint32_t have,
			  char *err)
{
	unsigned int i, p, n;
	char list[SHP_MAX_PORTS * 3 + 1];

	for (i = 0; s != NULL && i < s->nb; i++) {
		uint32_t bad = s->def[i].ports & ~have;

		if (bad == 0)
			continue;
		for (p = 0, n = 0; p < SHP_MAX_PORTS; p++)
			if (s->def[i].ports & (1u << p))
				n += snprintf(list + n, sizeof(list) - n,
					      "%s%u", n ? "," : "", p);
		snprintf(err, SHP_ERR_LEN, "class %s: ports %s: there is no "
			 "port %u", s->def[i].name, list,
			 (unsigned int)__builtin_ctz(bad));
		return -1;
	}
	return 0;
}

const struct shp_class_def *
shp_class_find(const struct shp_class_set *s, const char *name)
{
	unsigned int i;

	for (i = 0; s != NULL && i < s->nb; i++)
		if (strcmp(s->def[i].name, name) == 0)
			return &s->def[i];
	return NULL;
}

static struct shp_class_def *
def_get(struct shp_class_set *s, const char *opt, const char *name,
	char *err)
{
	struct shp_class_def *d =
		(struct shp_class_def *)(uintptr_t)shp_class_find(s, name);
	size_t n = strlen(name), i;

	if (d != NULL)
		return d;
	if (n == 0 || n >= SHP_MATCH_NAME_LEN) {
		snprintf(err, SHP_ERR_LEN, "--%s '%s': a class name has 1 to "
			 "%d characters", opt, name, SHP_MATCH_NAME_LEN - 1);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (!(name[i] == '_' || (name[i] >= '0' && name[i] <= '9') ||
		      (name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= 'A' && name[i] <= 'Z'))) {
			snprintf(err, SHP_ERR_LEN, "--%s '%s': a class name "
				 "is letters, digits and '_'", opt, name);
			return NULL;
		}
	if (s->nb == SHP_MAX_CLASSES) {
		snprintf(err, SHP_ERR_LEN, "--%s %s: more than %d classes",
			 opt, name, SHP_MAX_CLASSES);
		return NULL;
	}
	if (s->nb == s->cap) {
		unsigned int cap = s->cap ? 2 * s->cap : 16;
		struct shp_class_def *v = realloc(s->def, cap * sizeof(*v));

		if (v == NULL) {
			snprintf(err, SHP_ERR_LEN, "--%s %s: out of memory",
				 opt, name);
			return NULL;
		}
		s->def = v;
		s->cap = cap;
	}
	d = &s->def[s->nb++];
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->quantum = SHP_CLASS_DEFAULT_QUANTUM;
	return d;
}

static int
parse_ports(const char *opt, const char *name, const char *v, uint32_t *out,
	    char *err)
{
	const char *p = v;
	uint32_t mask = 0;

	if (strcmp(v, "all") == 0) {
		*out = 0;
		return 0;
	}
	while (*p != '\0') {
		char *end;
		unsigned long x = strtoul(p, &end, 10);

		if (end == p || x >= SHP_MAX_PORTS ||
		    (*end != ',' && *end != '\0')) {
			snprintf(err, SHP_ERR_LEN, "--%s %s '%s': expected "
				 "port numbers P,Q... below %d, or all", opt,
				 name, v, SHP_MAX_PORTS);
			return -1;
		}
		mask |= 1u << x;
		p = *end == ',' ? end + 1 : end;
	}
	if (mask == 0) {
		snprintf(err, SHP_ERR_LEN, "--%s %s: no port given", opt,
			 name);
		return -1;
	}
	*out = mask;
	return 0;
}

static int
parse_num(const char *opt, const char *name, const char *v, uint64_t min,
	  uint64_t max, uint64_t *out, char *err)
{
	char *end;
	unsigned long long x;

	x = strtoull(v, &end, 10);
	if (end == v || *end != '\0' || v[0] == '-' || x < min || x > max) {
		snprintf(err, SHP_ERR_LEN, "--%s %s '%s': expected an integer "
			 "within %" PRIu64 "..%" PRIu64, opt, name, v, min,
			 max);
		return -1;
	}
	*out = x;
	return 0;
}

int
shp_class_option(struct shp_class_set *s, const char *opt, const char *name,
		 const char *value, char *err)
{
	const char *key = opt_key(opt);
	struct shp_class_def *d;
	char sub[SHP_ERR_LEN];
	uint64_t x;

	if (!shp_class_is_option(opt)) {
		snprintf(err, SHP_ERR_LEN, "unknown option '%s'", opt);
		return -1;
	}
	if (strcmp(opt, "class") == 0) {
		if (shp_match_set_add(s->match, name, value, sub) < 0) {
			/* sub starts "class NAME: " */
			snprintf(err, SHP_ERR_LEN, "--%s", sub);
			return -1;
		}
		d = def_get(s, opt, name, err);
		if (d == NULL)
			return -1;  /* unreachable: the match set took it */
		d->nb_rules++;
		return 0;
	}
	d = def_get(s, opt, name, err);
	if (d == NULL)
		return -1;
	if (key != NULL) {
		const struct shp_kind *k;
		void *c;
		char *t;
		int ki = shp_key_index(key);

		if (strcmp(value, "off") != 0) {
			if (shp_kind_parse(key, value, NULL, &k, &c, sub) < 0) {
				snprintf(err, SHP_ERR_LEN, "--%s %s: %s", opt,
					 name, sub);
				return -1;
			}
			shp_kind_conf_free(k, c);
		} else if (shp_key_slot((unsigned int)ki) == SHP_SLOT_QUEUE) {
			snprintf(err, SHP_ERR_LEN, "--%s %s off: a queue "
				 "cannot be off", opt, name);
			return -1;
		}
		t = strdup(value);
		if (t == NULL) {
			snprintf(err, SHP_ERR_LEN, "out of memory");
			return -1;
		}
		free(d->text[ki]);
		d->text[ki] = t;
		return 0;
	}
	if (opt_is(opt, "ports"))
		return parse_ports(opt, name, value, &d->ports, err);
	if (opt_is(opt, "quantum")) {
		if (parse_num(opt, name, value, 64, 1u << 24, &x, err) < 0)
			return -1;
		d->quantum = (uint32_t)x;
		return 0;
	}
	if (parse_num(opt, name, value, 0, SHP_CLASS_MAX_PRIO, &x, err) < 0)
		return -1;
	d->prio = (unsigned int)x;
	return 0;
}

int
shp_class_set_check(const struct shp_class_set *s, char *err)
{
	unsigned int i;

	for (i = 0; s != NULL && i < s->nb; i++)
		if (s->def[i].nb_rules == 0) {
			snprintf(err, SHP_ERR_LEN, "class %s has no match: "
				 "define it with --class %s 'MATCH' (or "
				 "match = in [class %s])", s->def[i].name,
				 s->def[i].name, s->def[i].name);
			return -1;
		}
	return 0;
}

int
shp_class_spec(const struct shp_class_def *d, const struct shp_kind_env *env,
	       struct shp_chain_spec *spec, char *err)
{
	const char *text[SHP_MAX_KEYS];
	char what[SHP_ERR_LEN];
	unsigned int k;

	/* "off" leaves the slot to its default, as if not set */
	for (k = 0; k < shp_key_nb(); k++)
		text[k] = d->text[k] != NULL && strcmp(d->text[k], "off") != 0 ?
			  d->text[k] : NULL;
	snprintf(what, sizeof(what), "class %s", d->name);
	return shp_chain_spec_parse(spec, text, env, what, err);
}

void
shp_class_describe(const struct shp_class_set *s, unsigned int i, FILE *f)
{
	const struct shp_class_def *d = &s->def[i];
	uint32_t r, cls;
	int ci = shp_match_set_find(s->match, d->name);
	unsigned int k;
	char buf[SHP_MATCH_TEXT_LEN];

	fprintf(f, "class %s:", d->name);
	for (r = 0; r < shp_match_set_rules(s->match); r++) {
		const struct shp_match_rule *rule =
			shp_match_set_rule(s->match, r, &cls);

		if ((int)cls != ci)
			continue;
		shp_match_format(rule, buf, sizeof(buf));
		fprintf(f, " match '%s'", buf);
	}
	for (k = 0; k < shp_key_nb(); k++)
		if (d->text[k] != NULL)
			fprintf(f, " %s '%s'", shp_key_name(k), d->text[k]);
	fprintf(f, " quantum %u prio %u", d->quantum, d->prio);
	if (d->ports != 0) {
		const char *sep = " ports ";

		for (k = 0; k < SHP_MAX_PORTS; k++)
			if (d->ports & (1u << k)) {
				fprintf(f, "%s%u", sep, k);
				sep = ",";
			}
	}
	fputc('\n', f);
}

unsigned int
shp_class_longopts(struct option *out, int base)
{
	static char names[SHP_MAX_KEYS][40];
	static const char *const fixed[] = {
		"class", "class-ports", "class-quantum", "class-prio"
	};
	unsigned int i, n = 0;

	for (i = 0; i < RTE_DIM(fixed); i++, n++)
		out[n] = (struct option){ fixed[i], required_argument, NULL,
					  base + (int)n };
	for (i = 0; i < shp_key_nb(); i++, n++) {
		snprintf(names[i], sizeof(names[i]), "class-%s",
			 shp_key_name(i));
		out[n] = (struct option){ names[i], required_argument, NULL,
					  base + (int)n };
	}
	return n;
}

void
shp_class_usage(FILE *f)
{
	fprintf(f,
"\nPer-class profiles (docs/classes.md; each takes a class NAME, then a\n"
"value; [class NAME] sections in --config take the same words):\n"
"  --class NAME 'MATCH'   tc flower words: src_ip/dst_ip A[/LEN], ip_proto\n"
"                         tcp|udp|sctp|icmp|icmpv6|N, src_port/dst_port\n"
"                         N[-M], vlan_id N, ip_tos X[/MASK], eth_type\n"
"                         ipv4|ipv6|arp|0xNNNN; words AND, repeated --class\n"
"                         lines OR; the first class that matches wins\n"
"  --class-KEY NAME '..'  the class's own stage for KEY (queue, tbf, netem,\n"
"                         any stage kind's key), as --KEY takes it\n"
"  --class-ports NAME P,Q egress ports the class is on (default: all)\n"
"  --class-quantum NAME B bytes per deficit round robin turn (default %u)\n"
"  --class-prio NAME N    strict priority 0..%d, 0 served first (default 0)\n",
		SHP_CLASS_DEFAULT_QUANTUM, SHP_CLASS_MAX_PRIO);
}

/* The word at *p (quotes group, and are taken off), into buf. */
static const char *
next_word(const char *p, char *buf, size_t len, bool *quoted)
{
	size_t n = 0;
	char q = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	*quoted = *p == '\'' || *p == '"';
	if (*p == '\0')
		return NULL;
	for (; *p != '\0'; p++) {
		if (q != 0 && *p == q) {
			q = 0;
			continue;
		}
		if (q == 0 && (*p == '\'' || *p == '"')) {
			q = *p;
			continue;
		}
		if (q == 0 && (*p == ' ' || *p == '\t'))
			break;
		if (n + 1 < len)
			buf[n++] = *p;
	}
	buf[n] = '\0';
	return p;
}

/* A word of `set class NAME ...` that names what follows. */
static bool
is_class_word(const char *w)
{
	char opt[48];

	if (strcmp(w, "match") == 0)
		return true;
	snprintf(opt, sizeof(opt), "class-%s", w);
	return strcmp(w, "class") != 0 && shp_class_is_option(opt);
}

/* Copy the rules of every class but `skip` into n, the rules `repl` (for
 * class skip, nrepl of them) where its first rule was (or last); with
 * drop, class skip gets none. */
static int
copy_rules(struct shp_class_set *n, const struct shp_class_set *o,
	   const char *skip, char (*repl)[SHP_MATCH_TEXT_LEN],
	   unsigned int nrepl, bool drop, char *err)
{
	uint32_t r, cls;
	unsigned int i;
	bool done = false;
	char buf[SHP_MATCH_TEXT_LEN];

	for (r = 0; o != NULL && r < shp_match_set_rules(o->match); r++) {
		const struct shp_match_rule *rule =
			shp_match_set_rule(o->match, r, &cls);
		const char *name = shp_match_set_name(o->match, cls);

		if (skip != NULL && strcmp(name, skip) == 0) {
			if (drop)
				continue;
			for (i = 0; !done && i < nrepl; i++)
				if (shp_class_option(n, "class", skip, repl[i],
						     err) < 0)
					return -1;
			done = done || nrepl > 0;
			if (nrepl > 0)
				continue;
			/* no new rules: the old ones stay */
		}
		shp_match_format(rule, buf, sizeof(buf));
		if (shp_class_option(n, "class", name, buf, err) < 0)
			return -1;
	}
	for (i = 0; !done && i < nrepl; i++)
		if (shp_class_option(n, "class", skip, repl[i], err) < 0)
			return -1;
	return 0;
}

int
shp_class_set_edit(const struct shp_class_set *o, const char *name,
		   const char *words, struct shp_class_set **out, char *err)
{
	static char repl[16][SHP_MATCH_TEXT_LEN];
	struct shp_class_set *n = shp_class_set_new();
	const struct shp_class_def *od = shp_class_find(o, name);
	unsigned int i, k, nrepl = 0;
	char word[64], val[512], opt[64];
	const char *p = words;
	bool quoted;

	*out = NULL;
	if (n == NULL) {
		snprintf(err, SHP_ERR_LEN, "out of memory");
		return -1;
	}
	if (words == NULL && od == NULL) {
		snprintf(err, SHP_ERR_LEN, "no class '%s'", name);
		goto fail;
	}
	/* the new rules of the class first: they replace its old ones */
	while (words != NULL &&
	       (p = next_word(p, word, sizeof(word), &quoted)) != NULL) {
		size_t len = 0;
		const char *q;
		char w[512 + 1];   /* one more than val: a word cut shows */

		if (quoted || !is_class_word(word)) {
			snprintf(err, SHP_ERR_LEN, "set class %s: '%s': "
				 "expected match, queue, tbf, netem, ports, "
				 "quantum or prio", name, word);
			goto fail;
		}
		/* its value: one quoted word, or the words up to the next
		 * of those */
		val[0] = '\0';
		while ((q = next_word(p, w, sizeof(w), &quoted)) != NULL &&
		       (quoted || !is_class_word(w))) {
			if (strlen(w) + 1 >= sizeof(w))
				len = sizeof(val);   /* cut: refused below */
			else if (len < sizeof(val))
				len += (size_t)snprintf(val + len,
							sizeof(val) - len,
							"%s%s", len ? " " : "",
							w);
			p = q;
			if (quoted)
				break;
		}
		if (len >= sizeof(val)) {
			/* never run a profile cut short (a long `loss
			 * sequence`): --netem, schedules take any length */
			snprintf(err, SHP_ERR_LEN, "set class %s %s: its value "
				 "is longer than %zu characters", name, word,
				 sizeof(val) - 1);
			goto fail;
		}
		if (len == 0) {
			snprintf(err, SHP_ERR_LEN, "set class %s %s: missing "
				 "its value", name, word);
			goto fail;
		}
		if (strcmp(word, "match") == 0) {
			if (nrepl == RTE_DIM(repl)) {
				snprintf(err, SHP_ERR_LEN, "set class %s: more "
					 "than %zu match words", name,
					 RTE_DIM(repl));
				goto fail;
			}
			snprintf(repl[nrepl++], sizeof(repl[0]), "%s", val);
		}
	}
	if (copy_rules(n, o, name, repl, nrepl, words == NULL, err) < 0)
		goto fail;
	/* the definitions as they were (the cleared class left out) */
	for (i = 0; o != NULL && i < o->nb; i++) {
		const struct shp_class_def *d = &o->def[i];
		char q[16];

		if (words == NULL && strcmp(d->name, name) == 0)
			continue;
		for (k = 0; k < SHP_MAX_KEYS; k++) {
			if (d->text[k] == NULL)
				continue;
			snprintf(opt, sizeof(opt), "class-%s", shp_key_name(k));
			if (shp_class_option(n, opt, d->name, d->text[k],
					     err) < 0)
				goto fail;
		}
		snprintf(q, sizeof(q), "%u", d->quantum);
		if (shp_class_option(n, "class-quantum", d->name, q, err) < 0)
			goto fail;
		snprintf(q, sizeof(q), "%u", d->prio);
		if (shp_class_option(n, "class-prio", d->name, q, err) < 0)
			goto fail;
		if (d->ports != 0) {
			struct shp_class_def *nd =
				(struct shp_class_def *)(uintptr_t)
				shp_class_find(n, d->name);

			if (nd != NULL)
				nd->ports = d->ports;
		}
	}
	/* then the words given for the class */
	p = words;
	while (words != NULL &&
	       (p = next_word(p, word, sizeof(word), &quoted)) != NULL) {
		size_t len = 0;
		const char *q;
		char w[512];

		val[0] = '\0';
		while ((q = next_word(p, w, sizeof(w), &quoted)) != NULL &&
		       (quoted || !is_class_word(w))) {
			len += (size_t)snprintf(val + len, sizeof(val) - len,
						"%s%s", len ? " " : "", w);
			p = q;
			if (quoted)
				break;
		}
		if (strcmp(word, "match") == 0)
			continue;
		snprintf(opt, sizeof(opt), "class-%s", word);
		if (shp_class_option(n, opt, name, val, err) < 0)
			goto fail;
	}
	if (shp_class_set_check(n, err) < 0)
		goto fail;
	*out = n;
	return 0;
fail:
	shp_class_set_free(n);
	return -1;
}
