/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedules: the parser, the order of occurrences, the link state.
 * See schedule.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "schedule.h"
#include "shp_file.h"

#define MAX_WORDS 4   /* TIME VERB KEY PORT, then the rest */

static int
line_fail(char *err, const char *path, unsigned int line, const char *fmt,
	  const char *a, const char *b)
{
	char msg[SHP_ERR_LEN], safe[SHP_ERR_LEN];
	size_t i, n = 0;

	snprintf(msg, sizeof(msg), fmt, a, b);
	/* the words quoted come from the file: a binary one must not send
	 * its bytes to the terminal */
	for (i = 0; msg[i] != '\0' && n + 5 < sizeof(safe); i++) {
		unsigned char c = (unsigned char)msg[i];

		if (c >= 0x20 && c < 0x7f)
			safe[n++] = (char)c;
		else
			n += (size_t)snprintf(safe + n, sizeof(safe) - n,
					      "\\x%02x", c);
	}
	safe[n] = '\0';
	snprintf(err, SHP_ERR_LEN, "%s:%u: %s", path, line, safe);
	return -1;
}

void
shp_sched_fmt_time(char *buf, size_t len, uint64_t ns)
{
	if (ns == 0)
		snprintf(buf, len, "0s");
	else
		shp_fmt_time(buf, len, ns);
}

/* "0" or a tc time */
static int
parse_when(const char *w, uint64_t *ns, char *err)
{
	if (strcmp(w, "0") == 0) {
		*ns = 0;
		return 0;
	}
	return shp_parse_time(w, ns, err);
}

/* "all" -> -1, a known port -> it, else -2 */
static int
parse_port(const char *w, const uint16_t *ports, unsigned int nb)
{
	char *end;
	unsigned long v;
	unsigned int i;

	if (strcmp(w, "all") == 0)
		return -1;
	errno = 0;
	v = strtoul(w, &end, 10);
	if (end == w || *end != '\0' || errno != 0 || w[0] == '-')
		return -2;
	for (i = 0; i < nb; i++)
		if (ports[i] == v)
			return (int)v;
	return -2;
}

static void
ports_text(const uint16_t *ports, unsigned int nb, char *buf, size_t len)
{
	size_t n;
	unsigned int i;

	n = (size_t)snprintf(buf, len, nb == 1 ? "the port is" :
			     "the ports are");
	for (i = 0; i < nb && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s %u", i ? "," : "",
				      ports[i]);
	if (nb == 0)
		snprintf(buf, len, "there are no ports");
}

static char *
next_word(char **p)
{
	char *w;

	*p += strspn(*p, " \t");
	if (**p == '\0')
		return NULL;
	w = *p;
	*p += strcspn(*p, " \t");
	if (**p != '\0')
		*(*p)++ = '\0';
	return w;
}

/* One command (after its time) into e. */
static int
parse_command(struct shp_sched_event *e, char *cmd, const char *path,
	      unsigned int line, const uint16_t *ports, unsigned int nb_ports,
	      const struct shp_kind_env *env, char *err)
{
	char sub[SHP_ERR_LEN], list[SHP_ERR_LEN / 2];
	char *p = cmd, *verb, *key, *port, *rest;
	const struct shp_kind *kind;
	void *conf;
	int pt;

	e->text = strdup(cmd);
	if (e->text == NULL)
		return line_fail(err, path, line, "out of memory", "", "");
	verb = next_word(&p);
	if (verb == NULL)
		return line_fail(err, path, line, "a time needs a command "
				 "after it (set, clear, link, disable, "
				 "enable)", "", "");
	key = next_word(&p);
	port = next_word(&p);
	rest = p + strspn(p, " \t");
	ports_text(ports, nb_ports, list, sizeof(list));
	if (strcmp(verb, "link") == 0) {
		bool carrier = strcmp(rest, "carrier") == 0;

		if (key == NULL || (strcmp(key, "down") != 0 &&
				    strcmp(key, "up") != 0) ||
		    port == NULL || (*rest != '\0' && !carrier) ||
		    (carrier && strcmp(key, "down") != 0))
			return line_fail(err, path, line, "'%s': usage: link "
					 "down|up P|all, link down P|all "
					 "carrier", e->text, "");
		pt = parse_port(port, ports, nb_ports);
		if (pt == -2)
			return line_fail(err, path, line, "no port '%s' (%s)",
					 port, list);
		e->op = SHP_SCHED_LINK;
		e->down = strcmp(key, "down") == 0;
		e->carrier = carrier;
		e->port = pt;
		return 0;
	}
	if (strcmp(verb, "disable") == 0 || strcmp(verb, "enable") == 0) {
		/* (the port is the word after the verb) */
		if (key == NULL || port != NULL)
			return line_fail(err, path, line, "'%s': usage: %s "
					 "P|all", e->text, verb);
		pt = parse_port(key, ports, nb_ports);
		if (pt == -2)
			return line_fail(err, path, line, "no port '%s' (%s)",
					 key, list);
		e->op = SHP_SCHED_TOGGLE;
		e->down = strcmp(verb, "disable") == 0;
		e->port = pt;
		return 0;
	}
	if (strcmp(verb, "set") != 0 && strcmp(verb, "clear") != 0)
		return line_fail(err, path, line, "unknown command '%s' (a "
				 "schedule takes set KEY, clear KEY, link "
				 "down|up, disable, enable)", verb, "");
	if (key == NULL || !shp_kind_is_key(key)) {
		char keys[128];
		size_t n = 0;
		unsigned int k;

		keys[0] = '\0';
		for (k = 0; k < shp_key_nb() && n < sizeof(keys); k++)
			n += (size_t)snprintf(keys + n, sizeof(keys) - n,
					      "%s%s", k ? ", " : "",
					      shp_key_name(k));
		return line_fail(err, path, line, "'%s': a schedule changes "
				 "a stage (%s) or a link", e->text, keys);
	}
	snprintf(e->key, sizeof(e->key), "%s", key);
	if (port == NULL)
		return line_fail(err, path, line, "'%s': needs a port (P or "
				 "all)", e->text, "");
	pt = parse_port(port, ports, nb_ports);
	if (pt == -2)
		return line_fail(err, path, line, "no port '%s' (%s)", port,
				 list);
	e->port = pt;
	e->op = SHP_SCHED_SET;
	if (strcmp(verb, "clear") == 0) {
		if (*rest != '\0')
			return line_fail(err, path, line, "'%s': usage: clear "
					 "%s P|all", e->text, key);
		return 0;
	}
	if (*rest != '\0' && shp_split_for(rest, &e->for_ns, sub) < 0)
		return line_fail(err, path, line, "%s", sub, "");
	if (*rest == '\0')
		return line_fail(err, path, line, "'%s': usage: set %s P|all "
				 "ARGS [for TIME]", e->text, key);
	/* the kind's own parser says what is wrong with the words */
	if (shp_kind_parse(key, rest, env, &kind, &conf, sub) < 0)
		return line_fail(err, path, line, "%s", sub, "");
	shp_kind_conf_free(kind, conf);
	e->args = strdup(rest);
	if (e->args == NULL)
		return line_fail(err, path, line, "out of memory", "", "");
	return 0;
}

static int
build_links(struct shp_sched *s)
{
	unsigned int p, i, n;

	for (p = 0; p < SHP_MAX_PORTS; p++) {
		struct shp_sched_link *l = &s->link[p];

		for (i = 0, n = 0; i < s->nb; i++)
			n += s->ev[i].op == SHP_SCHED_LINK &&
			     shp_sched_on_port(&s->ev[i], (uint16_t)p);
		if (n == 0)
			continue;
		l->t = calloc(n, sizeof(*l->t));
		l->down = calloc(n, sizeof(*l->down));
		l->carrier = calloc(n, sizeof(*l->carrier));
		if (l->t == NULL || l->down == NULL || l->carrier == NULL)
			return -1;
		for (i = 0; i < s->nb; i++)
			if (s->ev[i].op == SHP_SCHED_LINK &&
			    shp_sched_on_port(&s->ev[i], (uint16_t)p)) {
				l->t[l->nb] = s->ev[i].t;
				l->carrier[l->nb] = s->ev[i].carrier;
				l->down[l->nb++] = s->ev[i].down;
			}
	}
	return 0;
}

int
shp_sched_parse(struct shp_sched *s, const char *path, FILE *f,
		const uint16_t *ports, unsigned int nb_ports,
		const struct shp_kind_env *env, char *err)
{
	char *buf, sub[SHP_ERR_LEN], a[32], b[32];
	unsigned int line = 0, repeat_line = 0;
	struct shp_file sf;
	uint64_t last = 0;
	size_t room = 0;
	int got;

	memset(s, 0, sizeof(*s));
	s->path = strdup(path);
	if (s->path == NULL) {
		snprintf(err, SHP_ERR_LEN, "%s: out of memory", path);
		return -1;
	}
	/* read on the control thread: bounded, NUL bytes refused */
	shp_file_wrap(&sf, f, "--schedule", path, SHP_SCHED_FILE_MAX,
		      SHP_SCHED_LINE_MAX, err);
	while ((got = shp_file_line(&sf, &buf)) > 0) {
		char *p = buf, *when;
		struct shp_sched_event *e;
		uint64_t t;
		size_t n;

		line = sf.line;
		p[strcspn(p, "#\r\n")] = '\0';
		n = strlen(p);
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			p[--n] = '\0';
		when = next_word(&p);
		if (when == NULL)
			continue;
		if (repeat_line != 0) {
			snprintf(a, sizeof(a), "%u", repeat_line);
			line_fail(err, path, line, "'repeat' (line %s) must be "
				  "the last line", a, "");
			goto fail;
		}
		if (strcmp(when, "repeat") == 0) {
			char *w = next_word(&p);

			if (w == NULL || next_word(&p) != NULL) {
				line_fail(err, path, line, "usage: repeat "
					  "PERIOD (e.g. repeat 10s)", "", "");
				goto fail;
			}
			if (parse_when(w, &t, sub) < 0) {
				line_fail(err, path, line, "repeat: %s", sub,
					  "");
				goto fail;
			}
			if (t < SHP_SCHED_MIN_REPEAT && s->nb != 0) {
				char x[4 * 24 + 4];

				shp_fmt_excerpt(x, sizeof(x), w, 24);
				line_fail(err, path, line, "repeat %s: the "
					  "period must be at least "
					  SHP_SCHED_MIN_REPEAT_TEXT " (the "
					  "program makes a change within a "
					  "poll round and parses the next "
					  "cycles every millisecond)", x, "");
				goto fail;
			}
			if (s->nb == 0 || t == 0 || t <= last) {
				shp_sched_fmt_time(a, sizeof(a), last);
				line_fail(err, path, line, "repeat %s: the "
					  "period must be longer than the last "
					  "event's time (%s)", w,
					  s->nb ? a : "none: no event");
				goto fail;
			}
			s->repeat = t;
			repeat_line = line;
			continue;
		}
		if (parse_when(when, &t, sub) < 0) {
			char x[4 * 24 + 4], msg[SHP_ERR_LEN];
			const char *why = "";

			/* a number that is not a time (too large, no unit)
			 * says why, after the parser's quote of the word */
			if ((when[0] >= '0' && when[0] <= '9') ||
			    when[0] == '.') {
				why = strstr(sub, "': ");
				why = why != NULL ? why + 1 : "";
			}
			shp_fmt_excerpt(x, sizeof(x), when, 24);
			snprintf(msg, sizeof(msg), "'%s': expected a time "
				 "(e.g. 2s, 150ms) then a command%s", x, why);
			line_fail(err, path, line, "%s", msg, "");
			goto fail;
		}
		if (t < last) {
			shp_sched_fmt_time(a, sizeof(a), t);
			shp_sched_fmt_time(b, sizeof(b), last);
			line_fail(err, path, line, "time %s goes backwards (the "
				  "line before says %s)", a, b);
			goto fail;
		}
		if (s->nb == room) {
			size_t nr = room ? 2 * room : 16;
			void *m = realloc(s->ev, nr * sizeof(*s->ev));

			if (m == NULL) {
				line_fail(err, path, line, "out of memory", "",
					  "");
				goto fail;
			}
			s->ev = m;
			room = nr;
		}
		e = &s->ev[s->nb++];
		memset(e, 0, sizeof(*e));
		e->t = t;
		e->line = line;
		last = t;
		if (parse_command(e, p, path, line, ports, nb_ports, env,
				  err) < 0)
			goto fail;
	}
	shp_file_close(&sf);
	if (got < 0)
		goto fail;
	if (build_links(s) < 0) {
		snprintf(err, SHP_ERR_LEN, "%s: out of memory", path);
		goto fail;
	}
	s->nb_lines = s->nb;
	return 0;
fail:
	shp_file_close(&sf);
	shp_sched_free(s);
	return -1;
}

int
shp_sched_load(struct shp_sched *s, const char *path, const uint16_t *ports,
	       unsigned int nb_ports, const struct shp_kind_env *env,
	       char *err)
{
	struct shp_file sf;
	int rc;

	memset(s, 0, sizeof(*s));
	if (shp_file_open(&sf, "--schedule", path, SHP_SCHED_FILE_MAX,
			  SHP_SCHED_LINE_MAX, err) < 0)
		return -1;
	rc = shp_sched_parse(s, path, sf.f, ports, nb_ports, env, err);
	shp_file_close(&sf);
	return rc;
}

void
shp_sched_free(struct shp_sched *s)
{
	unsigned int i;

	for (i = 0; i < s->nb; i++) {
		free(s->ev[i].args);
		free(s->ev[i].text);
	}
	for (i = 0; i < SHP_MAX_PORTS; i++) {
		free(s->link[i].t);
		free(s->link[i].down);
		free(s->link[i].carrier);
	}
	free(s->ev);
	free(s->path);
	memset(s, 0, sizeof(*s));
}

uint64_t
shp_sched_cursor_time(const struct shp_sched *s,
		      const struct shp_sched_cursor *c)
{
	if (s == NULL || c->i >= s->nb || (s->repeat == 0 && c->cycle > 0))
		return SHP_SCHED_NONE;
	if (s->repeat != 0 && c->cycle > (SHP_SCHED_NONE - 1 - s->ev[c->i].t) /
	    s->repeat)
		return SHP_SCHED_NONE;
	return c->cycle * s->repeat + s->ev[c->i].t;
}

void
shp_sched_cursor_next(const struct shp_sched *s, struct shp_sched_cursor *c)
{
	if (++c->i < s->nb)
		return;
	if (s->repeat == 0) {
		c->i = s->nb;
		return;
	}
	c->i = 0;
	c->cycle++;
}

void
shp_sched_cursor_seek(const struct shp_sched *s, uint64_t t,
		      struct shp_sched_cursor *c)
{
	c->cycle = s->repeat != 0 ? t / s->repeat : 0;
	c->i = 0;
	if (s->repeat == 0 && t > 0) {
		while (c->i < s->nb && s->ev[c->i].t < t)
			c->i++;
		return;
	}
	while (shp_sched_cursor_time(s, c) < t)
		shp_sched_cursor_next(s, c);
}

/* The index of port p's last link event at or before t (-1: none) and
 * when it happened. */
static int
link_last(const struct shp_sched *s, uint16_t p, uint64_t t, uint64_t *since)
{
	const struct shp_sched_link *l;
	uint64_t cycle = 0, ph = t;
	unsigned int lo, hi;

	*since = SHP_SCHED_NONE;
	if (!shp_sched_has_link(s, p))
		return -1;
	l = &s->link[p];
	if (s->repeat != 0) {
		cycle = t / s->repeat;
		ph = t - cycle * s->repeat;
	}
	/* the first event after ph */
	lo = 0;
	hi = l->nb;
	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (l->t[mid] <= ph)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0) {
		*since = cycle * s->repeat + l->t[lo - 1];
		return (int)lo - 1;
	}
	if (cycle == 0)
		return -1;
	/* the previous cycle's last word still holds */
	*since = (cycle - 1) * s->repeat + l->t[l->nb - 1];
	return (int)l->nb - 1;
}

bool
shp_sched_link_down(const struct shp_sched *s, uint16_t p, uint64_t t,
		    uint64_t *since)
{
	int i = link_last(s, p, t, since);

	return i >= 0 && s->link[p].down[i];
}

bool
shp_sched_link_carrier(const struct shp_sched *s, uint16_t p, uint64_t t)
{
	uint64_t since;
	int i = link_last(s, p, t, &since);

	return i >= 0 && s->link[p].down[i] && s->link[p].carrier[i];
}

enum shp_slot
shp_sched_slot(const struct shp_sched_event *e)
{
	int k = shp_key_index(e->key);

	return k < 0 ? SHP_SLOT_MAX : shp_key_slot((unsigned int)k);
}

void
shp_sched_last_at_instant(const struct shp_sched *s, uint16_t p, bool *last)
{
	bool seen[SHP_SLOT_MAX + 1] = { false };
	unsigned int i = s->nb;
	uint64_t t = 0;

	/* backwards: the first seen of a slot at a time is its last */
	while (i-- > 0) {
		const struct shp_sched_event *e = &s->ev[i];
		enum shp_slot sl;

		last[i] = false;
		if (e->op != SHP_SCHED_SET || !shp_sched_on_port(e, p))
			continue;
		if (e->t != t) {
			memset(seen, 0, sizeof(seen));
			t = e->t;
		}
		sl = shp_sched_slot(e);
		last[i] = !seen[sl];
		seen[sl] = true;
	}
}

const char *
shp_sched_args(const struct shp_sched_event *e, const struct shp_chain *c)
{
	int k;

	if (e->args != NULL)
		return e->args;
	k = shp_key_index(e->key);
	if (k >= 0 && shp_key_slot((unsigned int)k) == SHP_SLOT_QUEUE)
		return c->kind[SHP_SLOT_QUEUE]->name;
	return "off";
}

int
shp_sched_check_chain(const struct shp_sched *s, uint16_t p,
		      const struct shp_chain *c,
		      const struct shp_kind_env *env, char *err)
{
	unsigned int i;

	for (i = 0; i < s->nb; i++) {
		const struct shp_sched_event *e = &s->ev[i];
		const struct shp_kind *k;
		void *conf;
		char sub[SHP_ERR_LEN];

		if (e->op != SHP_SCHED_SET || !shp_sched_on_port(e, p))
			continue;
		if (shp_kind_parse(e->key, shp_sched_args(e, c), env, &k,
				   &conf, sub) < 0)
			return line_fail(err, s->path, e->line, "%s", sub, "");
		/* what a kind keeps for the whole run (fq_codel's flows)
		 * is what the chain starts with: a line the data path
		 * would refuse (not applied, not counted) is refused here */
		if (c->kind[k->slot] == k && k->check_change != NULL &&
		    k->check_change(c->conf[k->slot], conf, sub) < 0) {
			shp_kind_conf_free(k, conf);
			return line_fail(err, s->path, e->line, "%s", sub, "");
		}
		shp_kind_conf_free(k, conf);
		if (c->kind[k->slot] != k) {
			snprintf(sub, sizeof(sub), "port %u runs %s there, not "
				 "%s: a schedule changes a stage's profile, "
				 "not its kind", p, c->kind[k->slot]->name,
				 k->name);
			return line_fail(err, s->path, e->line, "%s", sub, "");
		}
		if (k->ops->change == NULL)
			return line_fail(err, s->path, e->line, "%s cannot "
					 "change while running", k->name, "");
	}
	return 0;
}

int
shp_sched_apply_shards(const struct shp_sched_event *e, struct shp_chain *c,
		       unsigned int n, const struct shp_kind_env *env,
		       char *err)
{
	const struct shp_kind *k = NULL;
	void *conf[SHP_MAX_QUEUES], *old;
	unsigned int q;

	if (e->op != SHP_SCHED_SET)
		return 0;
	if (n == 0 || n > SHP_MAX_QUEUES) {
		snprintf(err, SHP_ERR_LEN, "%u shards: at most %u", n,
			 SHP_MAX_QUEUES);
		return -1;
	}
	for (q = 0; q < n; q++) {
		if (shp_kind_parse(e->key, shp_sched_args(e, &c[q]), env, &k,
				   &conf[q], err) < 0) {
			while (q-- > 0)
				shp_kind_conf_free(k, conf[q]);
			return -1;
		}
		if (q > 0)
			shp_conf_twin(conf[q], conf[0]);
	}
	for (q = 0; q < n; q++) {
		if (shp_chain_change(&c[q], k, conf[q], &old, err) < 0) {
			/* (checked against the chain before: memory only) */
			for (; q < n; q++)
				shp_kind_conf_free(k, conf[q]);
			return -1;
		}
		shp_kind_conf_free(k, old);
	}
	return 0;
}

int
shp_sched_apply(const struct shp_sched_event *e, struct shp_chain *c,
		const struct shp_kind_env *env, char *err)
{
	return shp_sched_apply_shards(e, c, 1, env, err);
}

/* ---- `for TIME`: the change back ------------------------------------ */

#define FOR_TEXT_LEN 1024

struct back {
	uint64_t t;
	unsigned int seq, line;
	uint16_t port;
	char key[16];
	char text[FOR_TEXT_LEN];
};

struct backs {
	struct back *b;
	unsigned int n, room;
};

/* The profile as the stage prints it back: texts compare */
static int
canon(const char *key, const char *args, const struct shp_kind_env *env,
      char *out, char *err)
{
	const struct shp_kind *k;
	void *conf;

	if (shp_kind_parse(key, args, env, &k, &conf, err) < 0)
		return -1;
	shp_kind_format(k, conf, out, FOR_TEXT_LEN);
	shp_kind_conf_free(k, conf);
	return 0;
}

static int
back_add(struct backs *bs, const struct back *b)
{
	if (bs->n == bs->room) {
		unsigned int nr = bs->room ? 2 * bs->room : 8;
		void *m = realloc(bs->b, nr * sizeof(*bs->b));

		if (m == NULL)
			return -1;
		bs->b = m;
		bs->room = nr;
	}
	bs->b[bs->n] = *b;
	bs->b[bs->n].seq = bs->n;
	bs->n++;
	return 0;
}

/* The `for` lines running on one stage of a port, in the order given,
 * over the profile from before the first (base): the stage runs the
 * latest of them, the base once they have all ended. */
struct stage_fors {
	unsigned int n;
	char base[FOR_TEXT_LEN];
	struct {
		uint64_t t;             /* when it ends */
		unsigned int line;
		char text[FOR_TEXT_LEN];
	} ch[SHP_FOR_STACK];
};

/* The `for`s of slot sl that end by t, taken out (the earliest end
 * first, those ending together at once): a change back to what is left
 * on top, when the stage changes. */
static int
fors_end(const struct shp_sched *s, uint16_t p, const char *key,
	 struct stage_fors *f, uint64_t t, char *cur, struct backs *bs,
	 char *err)
{
	while (f->n > 0) {
		uint64_t first = UINT64_MAX;
		unsigned int i, j, line = 0;
		const char *top;
		struct back b;

		for (i = 0; i < f->n; i++)
			if (f->ch[i].t < first) {
				first = f->ch[i].t;
				line = f->ch[i].line;
			}
		if (first > t)
			return 0;
		for (i = 0, j = 0; i < f->n; i++)
			if (f->ch[i].t != first)
				f->ch[j++] = f->ch[i];
		f->n = j;
		top = f->n > 0 ? f->ch[f->n - 1].text : f->base;
		if (strcmp(top, cur) == 0)
			continue;   /* a later one holds: no change */
		b.t = first;
		b.line = line;
		b.port = p;
		snprintf(b.key, sizeof(b.key), "%s", key);
		snprintf(b.text, sizeof(b.text), "%s", top);
		if (back_add(bs, &b) < 0)
			return line_fail(err, s->path, line, "out of memory",
					 "", "");
		snprintf(cur, FOR_TEXT_LEN, "%s", top);
	}
	return 0;
}

/* One cycle of port p from the texts cur[] (left as the cycle ends):
 * the changes back it makes, into bs. */
static int
for_walk(const struct shp_sched *s, uint16_t p, const struct shp_chain *c,
	 char (*cur)[FOR_TEXT_LEN], const struct shp_kind_env *env,
	 struct backs *bs, char *err)
{
	static struct stage_fors run[SHP_SLOT_MAX];
	static char key[SHP_SLOT_MAX][16];
	char sub[SHP_ERR_LEN], a[32];
	unsigned int i, sl;

	for (sl = 0; sl < SHP_SLOT_MAX; sl++)
		run[sl].n = 0;
	for (i = 0; i <= s->nb; i++) {
		const struct shp_sched_event *e = i < s->nb ? &s->ev[i] : NULL;
		uint64_t t = e != NULL ? e->t : UINT64_MAX;
		struct stage_fors *f;

		if (e != NULL && (e->op != SHP_SCHED_SET || e->revert ||
				  !shp_sched_on_port(e, p)))
			continue;
		/* the changes back due by now come before the line */
		for (sl = 0; sl < SHP_SLOT_MAX; sl++)
			if (fors_end(s, p, key[sl], &run[sl], t, cur[sl], bs,
				     err) < 0)
				return -1;
		if (e == NULL)
			break;
		sl = shp_sched_slot(e);
		f = &run[sl];
		if (e->for_ns == 0)
			f->n = 0;   /* a change that holds */
		else if (f->n == SHP_FOR_STACK)
			return line_fail(err, s->path, e->line, "for: %s",
					 SHP_FOR_STACK_TEXT, "");
		else if (s->repeat != 0 && e->t + e->for_ns > s->repeat) {
			shp_sched_fmt_time(a, sizeof(a), s->repeat);
			return line_fail(err, s->path, e->line, "for: the "
					 "change back would be in the next "
					 "cycle (repeat %s): a shorter TIME, "
					 "or a later line", a, "");
		} else if (f->n++ == 0) {
			snprintf(f->base, sizeof(f->base), "%s", cur[sl]);
		}
		if (canon(e->key, shp_sched_args(e, c), env, cur[sl], sub) < 0)
			return line_fail(err, s->path, e->line, "%s", sub, "");
		if (e->for_ns != 0) {
			f->ch[f->n - 1].t = e->t + e->for_ns;
			f->ch[f->n - 1].line = e->line;
			snprintf(f->ch[f->n - 1].text, FOR_TEXT_LEN, "%s",
				 cur[sl]);
			snprintf(key[sl], sizeof(key[sl]), "%s", e->key);
		}
	}
	return 0;
}

static int
back_cmp(const void *x, const void *y)
{
	const struct back *a = x, *b = y;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int
shp_sched_expand_for(struct shp_sched *s, const uint16_t *ports,
		     unsigned int nb_ports, const struct shp_chain *chains,
		     const struct shp_kind_env *env, char *err)
{
	static char cur[SHP_SLOT_MAX][FOR_TEXT_LEN];
	struct backs bs = { NULL, 0, 0 }, again = { NULL, 0, 0 };
	struct shp_sched_event *ev = NULL;
	unsigned int i, j, k, n, sl;
	bool any = false;
	int rc = -1;

	for (i = 0; i < s->nb; i++)
		any |= s->ev[i].for_ns != 0;
	if (!any)
		return 0;
	for (k = 0; k < nb_ports; k++) {
		uint16_t p = ports[k];
		unsigned int first = bs.n;

		for (sl = 0; sl < SHP_SLOT_MAX; sl++)
			shp_chain_format(&chains[p], (enum shp_slot)sl,
					 cur[sl], FOR_TEXT_LEN);
		if (for_walk(s, p, &chains[p], cur, env, &bs, err) < 0)
			goto out;
		if (s->repeat == 0)
			continue;
		/* the next cycles start where this one ends: the same
		 * profile must come back in each */
		again.n = 0;
		if (for_walk(s, p, &chains[p], cur, env, &again, err) < 0)
			goto out;
		for (j = 0; j < again.n && first + j < bs.n; j++)
			if (strcmp(again.b[j].text, bs.b[first + j].text) != 0) {
				line_fail(err, s->path, again.b[j].line, "for: "
					  "under repeat it would go back to "
					  "'%s' in the first cycle, to '%s' "
					  "in the next: set the stage at the "
					  "start of the cycle",
					  bs.b[first + j].text,
					  again.b[j].text);
				goto out;
			}
	}
	if (bs.n > 1)   /* (bs.b is NULL when every revert was cancelled) */
		qsort(bs.b, bs.n, sizeof(*bs.b), back_cmp);
	n = s->nb + bs.n;
	ev = calloc(n, sizeof(*ev));
	if (ev == NULL) {
		snprintf(err, SHP_ERR_LEN, "%s: out of memory", s->path);
		goto out;
	}
	/* a change back before the lines of its instant: one there for
	 * the stage is the one that holds */
	for (i = 0, j = 0, k = 0; k < n; k++) {
		if (j < bs.n && (i == s->nb || bs.b[j].t <= s->ev[i].t)) {
			struct shp_sched_event *e = &ev[k];
			const struct back *b = &bs.b[j++];
			char text[FOR_TEXT_LEN + 96];

			e->t = b->t;
			e->op = SHP_SCHED_SET;
			e->port = b->port;
			snprintf(e->key, sizeof(e->key), "%s", b->key);
			e->revert = true;
			e->line = b->line;
			snprintf(text, sizeof(text), "set %s %u %s (line %u's "
				 "for ends)", b->key, b->port, b->text,
				 b->line);
			e->args = strdup(b->text);
			e->text = strdup(text);
			if (e->args == NULL || e->text == NULL) {
				snprintf(err, SHP_ERR_LEN, "%s: out of memory",
					 s->path);
				for (i = 0; i <= k; i++)
					if (ev[i].revert) {
						free(ev[i].args);
						free(ev[i].text);
					}
				free(ev);
				goto out;
			}
		} else {
			ev[k] = s->ev[i++];
		}
	}
	free(s->ev);
	s->ev = ev;
	s->nb = n;
	rc = 0;
out:
	free(bs.b);
	free(again.b);
	return rc;
}
