/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `update KEY all|P WORDS`: a partial change. The stage's current profile
 * is taken as its kind prints it back (shp_chain_format: text that parses
 * to the same conf), the words given are merged over it keyword by
 * keyword, and the result goes through the kind's own parser and the same
 * publication as `set` (ctl_set_stage_each): what would be an invalid
 * profile is refused by the parser, saying why, and nothing changes.
 *
 * The words of a kind are tc's: a keyword and the values up to the next
 * keyword ("delay 10ms 2ms", "loss random 1%", "ecn"). A keyword given
 * replaces that keyword's clause in place (and the clauses it excludes:
 * tbf's limit and latency, fq_codel's ecn and noecn); a new one is added
 * at the end; every other clause is kept as it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>

#include "control.h"
#include "ctl_update.h"
#include "shp_classes.h"

#define MAX_TOKENS 256
#define MAX_KEYWORDS 64

struct words {
	char buf[CTL_TEXT_LEN * 2];
	char *tok[MAX_TOKENS];
	unsigned int n;
};

static int
split(struct words *w, const char *text, char *err)
{
	char *p, *save = NULL;

	w->n = 0;
	if (snprintf(w->buf, sizeof(w->buf), "%s", text) >=
	    (int)sizeof(w->buf)) {
		snprintf(err, SHP_ERR_LEN, "the profile is too long");
		return -1;
	}
	for (p = strtok_r(w->buf, " \t", &save); p != NULL;
	     p = strtok_r(NULL, " \t", &save)) {
		if (w->n == MAX_TOKENS) {
			snprintf(err, SHP_ERR_LEN, "more than %d words",
				 MAX_TOKENS);
			return -1;
		}
		w->tok[w->n++] = p;
	}
	return 0;
}

/* The kind's keywords: its completion words, else those its usage line
 * offers in brackets ("[limit PACKETS] [ecn|noecn]"). */
static unsigned int
keywords(const struct shp_kind *k, char kw[][32])
{
	unsigned int n = 0;
	const char *p;

	if (k->words != NULL) {
		for (p = k->words; *p && n < MAX_KEYWORDS; ) {
			size_t l = strcspn(p, "#");

			snprintf(kw[n++], 32, "%.*s", (int)l, p);
			p += l + (p[l] == '#');
		}
		return n;
	}
	for (p = k->usage; p != NULL && *p && n < MAX_KEYWORDS; p++) {
		size_t l;

		if (*p != '[' && *p != '(' && *p != '|')
			continue;
		l = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_");
		if (l == 0 || l >= 32 || (p[1 + l] != ' ' && p[1 + l] != ']' &&
					  p[1 + l] != '|' && p[1 + l] != ')'))
			continue;
		snprintf(kw[n++], 32, "%.*s", (int)l, p + 1);
	}
	return n;
}

static bool
is_kw(char kw[][32], unsigned int nkw, const char *w)
{
	unsigned int i;

	for (i = 0; i < nkw; i++)
		if (strcmp(kw[i], w) == 0)
			return true;
	return false;
}

static bool
excludes(const struct shp_kind *k, const char *a, const char *b)
{
	unsigned int i;

	if (strcmp(a, b) == 0)
		return true;
	/* words of the kind that say one thing two ways */
	for (i = 0; k->exclusive != NULL && k->exclusive[i] != NULL; i += 2)
		if ((strcmp(k->exclusive[i], a) == 0 &&
		     strcmp(k->exclusive[i + 1], b) == 0) ||
		    (strcmp(k->exclusive[i + 1], a) == 0 &&
		     strcmp(k->exclusive[i], b) == 0))
			return true;
	return false;
}

struct clause {
	unsigned int first, n;   /* tokens of its words */
	const struct words *w;
	bool gone;
};

int
ctl_update_merge(const struct shp_kind *k, const char *cur,
		 const char *words, char *out, size_t len, char *err)
{
	static struct words a, b;
	static char kw[MAX_KEYWORDS][32];
	static struct clause cl[2 * MAX_TOKENS];
	unsigned int nkw = keywords(k, kw), ncl = 0, i, j, first_new;
	size_t off = 0;

	if (split(&a, cur, err) < 0 || split(&b, words, err) < 0)
		return -1;
	if (b.n == 0) {
		snprintf(err, SHP_ERR_LEN, "no words to change");
		return -1;
	}
	if (nkw == 0 || !is_kw(kw, nkw, b.tok[0])) {
		if (nkw == 0) {   /* positional (trace FILE): the words */
			if (snprintf(out, len, "%s", words) >= (int)len) {
				snprintf(err, SHP_ERR_LEN, "too long");
				return -1;
			}
			return 0;
		}
		snprintf(err, SHP_ERR_LEN, "'%s' is not a word of %s (%s)",
			 b.tok[0], k->name, k->usage);
		return -1;
	}
	/* the current profile's clauses, then the new ones */
	for (i = 0; i < a.n; i++) {
		if (is_kw(kw, nkw, a.tok[i]) || ncl == 0)
			cl[ncl++] = (struct clause){ i, 0, &a, false };
		cl[ncl - 1].n++;
	}
	first_new = ncl;
	for (i = 0; i < b.n; i++) {
		if (is_kw(kw, nkw, b.tok[i]))
			cl[ncl++] = (struct clause){ i, 0, &b, false };
		cl[ncl - 1].n++;
	}
	for (j = first_new; j < ncl; j++) {
		const char *nk = b.tok[cl[j].first];

		for (i = first_new; i < j; i++)
			if (strcmp(b.tok[cl[i].first], nk) == 0) {
				snprintf(err, SHP_ERR_LEN, "'%s' given twice",
					 nk);
				return -1;
			}
	}
	/* a new clause takes the place of the first current clause it
	 * replaces; the others it replaces go */
	for (j = first_new; j < ncl; j++) {
		const char *nk = b.tok[cl[j].first];
		bool placed = false;

		for (i = 0; i < first_new; i++) {
			/* (a current clause an earlier new one took the place
			 * of is that new one: two new clauses both stay, and
			 * the kind's parser says if they cannot) */
			if (cl[i].gone || cl[i].w != &a ||
			    !excludes(k, a.tok[cl[i].first], nk))
				continue;
			if (!placed) {
				cl[i] = cl[j];
				placed = true;
			} else {
				cl[i].gone = true;
			}
		}
		if (placed)
			cl[j].gone = true;
	}
	out[0] = '\0';
	for (i = 0; i < ncl; i++) {
		if (cl[i].gone)
			continue;
		for (j = 0; j < cl[i].n; j++) {
			int m = snprintf(out + off, len - off, "%s%s",
					 off ? " " : "",
					 cl[i].w->tok[cl[i].first + j]);

			if (m < 0 || (size_t)m >= len - off) {
				snprintf(err, SHP_ERR_LEN, "the profile is "
					 "too long");
				return -1;
			}
			off += (size_t)m;
		}
	}
	return 0;
}

int
ctl_update_stage(struct shaper *s, const char *key, int port,
		 const char *words, char *err)
{
	static char text[SHP_MAX_PORTS][CTL_TEXT_LEN];
	const char *args_of[SHP_MAX_PORTS] = { NULL };

	if (ctl_update_texts(s, key, port, words, text, args_of, err) < 0)
		return -1;
	return ctl_set_stage_each(s, key, port, args_of, NULL, err);
}

int
ctl_update_texts(struct shaper *s, const char *key, int port,
		 const char *words, char (*text)[CTL_TEXT_LEN],
		 const char **args_of, char *err)
{
	int ki = shp_key_index(key);
	enum shp_slot slot;
	unsigned int i;

	if (ki < 0) {
		snprintf(err, SHP_ERR_LEN, "no stage '%s'", key);
		return -1;
	}
	slot = shp_key_slot((unsigned int)ki);
	words += strspn(words, " \t");
	if (strcmp(words, "off") == 0) {
		snprintf(err, SHP_ERR_LEN, "update changes the parameters it "
			 "names: set %s ... off (or clear %s) turns it off",
			 key, key);
		return -1;
	}
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		const struct shp_chain *c = &s->chain[p];
		const struct shp_kind *k = c->kind[slot];
		char cur[CTL_TEXT_LEN];

		if (port >= 0 && port != p)
			continue;
		if (strcmp(shp_kind_key(k), key) != 0) {
			snprintf(err, SHP_ERR_LEN, "port %u runs %s there, not "
				 "%s: a different kind takes a restart", p,
				 k->name, key);
			return -1;
		}
		shp_chain_format(c, slot, cur, sizeof(cur));
		if (ctl_update_over(k, slot, p, cur, words, text[i],
				    sizeof(text[i]), err) < 0)
			return -1;
		args_of[i] = text[i];
	}
	return 0;
}

int
ctl_update_over(const struct shp_kind *k, enum shp_slot slot, uint16_t p,
		const char *cur, const char *words, char *out, size_t len,
		char *err)
{
	char merged[CTL_TEXT_LEN];
	const char *w = words, *cw = cur;
	bool queue = slot == SHP_SLOT_QUEUE;

	if (queue) {
		/* the kind's name first: the one the port runs */
		size_t l = strcspn(w, " \t");
		const struct shp_kind *wk = NULL;
		char name[32];

		cw += strcspn(cw, " \t");
		cw += strspn(cw, " \t");
		if (l < sizeof(name)) {
			snprintf(name, sizeof(name), "%.*s", (int)l, w);
			wk = shp_kind_find(name);
		}
		if (wk != NULL && wk != k) {
			snprintf(err, SHP_ERR_LEN, "port %u runs %s, not %s: a "
				 "different kind takes a restart (--queue-port "
				 "%u)", p, k->name, wk->name, p);
			return -1;
		}
		if (wk != NULL) {
			w += l;
			w += strspn(w, " \t");
		}
	} else if (strcmp(cur, "off") == 0) {
		cw = "";
	}
	if (ctl_update_merge(k, cw, w, merged, sizeof(merged), err) < 0)
		return -1;
	if (snprintf(out, len, "%s%s%s", queue ? k->name : "",
		     queue && *merged ? " " : "", merged) >= (int)len) {
		snprintf(err, SHP_ERR_LEN, "the profile is too long");
		return -1;
	}
	return 0;
}

/* ---- update class NAME WORDS ---------------------------------------- */

/* The word at *p (quotes group and are taken off), into buf; NULL at the
 * end. As `set class` reads its words. */
static const char *
class_word(const char *p, char *buf, size_t len, bool *quoted)
{
	size_t n = 0;
	char q = 0;

	p += strspn(p, " \t");
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

static bool
class_kw(const char *w)
{
	return strcmp(w, "match") == 0 || strcmp(w, "ports") == 0 ||
	       strcmp(w, "quantum") == 0 || strcmp(w, "prio") == 0 ||
	       shp_kind_is_key(w);
}

/* A class's stage text with words merged over it: cur NULL when the class
 * has none (the words alone). */
static int
class_stage_merge(const char *key, const char *cur, const char *words,
		  char *out, size_t len, char *err)
{
	int ki = shp_key_index(key);
	bool queue = ki >= 0 && shp_key_slot((unsigned int)ki) ==
		     SHP_SLOT_QUEUE;
	const struct shp_kind *k;
	char name[32], merged[CTL_TEXT_LEN];
	const char *w = words;

	if (cur == NULL || strcmp(cur, "off") == 0) {
		snprintf(out, len, "%s", words);
		return 0;
	}
	if (!queue) {
		k = shp_kind_find(key);
	} else {
		size_t l = strcspn(cur, " \t");

		snprintf(name, sizeof(name), "%.*s", (int)l, cur);
		k = shp_kind_find(name);
		cur += l;
		l = strcspn(w, " \t");
		if (l < sizeof(name)) {
			const struct shp_kind *wk;

			snprintf(name, sizeof(name), "%.*s", (int)l, w);
			wk = shp_kind_find(name);
			if (wk != NULL && wk != k) {
				snprintf(err, SHP_ERR_LEN, "its queue is %s, "
					 "not %s (clear the class first)",
					 k != NULL ? k->name : "?", wk->name);
				return -1;
			}
			if (wk != NULL)
				w += l;
		}
	}
	if (k == NULL) {
		snprintf(err, SHP_ERR_LEN, "no stage '%s'", key);
		return -1;
	}
	if (ctl_update_merge(k, cur, w, merged, sizeof(merged), err) < 0)
		return -1;
	if (snprintf(out, len, "%s%s%s", queue ? k->name : "",
		     queue && *merged ? " " : "", merged) >= (int)len) {
		snprintf(err, SHP_ERR_LEN, "the profile is too long");
		return -1;
	}
	return 0;
}

int
ctl_update_class(struct shaper *s, const char *name, const char *words,
		 char *err)
{
	static char line[CTL_TEXT_LEN * 4];
	const struct shp_class_def *d = s->opt.classes != NULL ?
		shp_class_find(s->opt.classes, name) : NULL;
	char word[64], val[CTL_TEXT_LEN], w[CTL_TEXT_LEN];
	char merged[CTL_TEXT_LEN];
	const char *p = words, *q;
	size_t off = 0;
	bool quoted;

	if (d == NULL) {
		snprintf(err, SHP_ERR_LEN, "no class '%s' (set class defines "
			 "one)", name);
		return -1;
	}
	line[0] = '\0';
	while ((p = class_word(p, word, sizeof(word), &quoted)) != NULL) {
		size_t len = 0;
		int ki, m;

		if (quoted || !class_kw(word)) {
			snprintf(err, SHP_ERR_LEN, "'%s': expected match, "
				 "queue, tbf, netem, ports, quantum or prio",
				 word);
			return -1;
		}
		val[0] = '\0';
		while ((q = class_word(p, w, sizeof(w), &quoted)) != NULL &&
		       (quoted || !class_kw(w))) {
			len += (size_t)snprintf(val + len, sizeof(val) - len,
						"%s%s", len ? " " : "", w);
			p = q;
			if (quoted || len >= sizeof(val))
				break;
		}
		if (len == 0 || len >= sizeof(val)) {
			snprintf(err, SHP_ERR_LEN, "%s: %s", word, len ?
				 "too long" : "missing its value");
			return -1;
		}
		ki = shp_key_index(word);
		if (ki >= 0) {
			if (class_stage_merge(word, d->text[ki], val, merged,
					      sizeof(merged), err) < 0)
				return -1;
			snprintf(val, sizeof(val), "%s", merged);
		}
		if (strchr(val, '\'') != NULL) {
			snprintf(err, SHP_ERR_LEN, "%s: a quote in its value",
				 word);
			return -1;
		}
		m = snprintf(line + off, sizeof(line) - off, "%s%s '%s'",
			     off ? " " : "", word, val);
		if (m < 0 || (size_t)m >= sizeof(line) - off) {
			snprintf(err, SHP_ERR_LEN, "too long");
			return -1;
		}
		off += (size_t)m;
	}
	if (off == 0) {
		snprintf(err, SHP_ERR_LEN, "no words to change");
		return -1;
	}
	return ctl_set_class(s, name, line, err);
}
