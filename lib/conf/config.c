/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <getopt.h>
#include <string.h>
#include <rte_cfgfile.h>
#include <rte_log.h>

#include "config.h"

void
shp_options_init(struct shp_options *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->bands = SHP_DEFAULT_BANDS;
	o->classify = SHP_CLASSIFY_TOS;
	o->ring_size = SHP_DEFAULT_RING_SIZE;
	o->burst = SHP_DEFAULT_BURST;
	o->rxd = SHP_NB_RXD;
	o->txd = SHP_NB_TXD;
	o->link_wait_ns = 5000000000ull;
	o->max_late_ns = SHP_DEFAULT_MAX_LATE_NS;
	for (i = 0; i < SHP_MAX_PORTS; i++)
		o->pair_of[i] = -1;
}

unsigned int
shp_options_mtu(const struct shp_options *o, int port)
{
	if (o->mtu_cli != 0)
		return o->mtu_cli;
	if (port >= 0 && port < SHP_MAX_PORTS && o->mtu_port[port] != 0)
		return o->mtu_port[port];
	return o->mtu_file;
}

static void
layer_free(struct shp_layer *l)
{
	int i;

	unsigned int k;

	for (k = 0; k < SHP_MAX_KEYS; k++) {
		free(l->all[k]);
		for (i = 0; i < SHP_MAX_PORTS; i++)
			free(l->port[k][i]);
	}
}

void
shp_options_free(struct shp_options *o)
{
	layer_free(&o->file);
	layer_free(&o->cli);
	free(o->priomap_text);
	free(o->priomap_origin);
	free(o->stats_file);
	free(o->rx_lcores);
	free(o->tx_lcores);
	free(o->config_file);
	free(o->cmdline_file);
	free(o->schedule_file);
	shp_class_set_free(o->classes);
	memset(o, 0, sizeof(*o));
}

static int
set_str(char **dst, const char *v)
{
	char *s = strdup(v);

	if (s == NULL)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

static int
parse_uint(const char *name, const char *v, uint64_t min, uint64_t max,
	   unsigned int *out, char *err)
{
	uint64_t x;

	if (shp_parse_u64(v, &x, err) < 0 || x < min || x > max) {
		snprintf(err, SHP_ERR_LEN, "--%s '%s': expected an integer "
			 "within %" PRIu64 "..%" PRIu64, name, v, min, max);
		return -1;
	}
	*out = (unsigned int)x;
	return 0;
}

/* A span of time, tc time syntax, or "0" (off). */
static int
parse_span(const char *name, const char *v, uint64_t *out, char *err)
{
	char sub[SHP_ERR_LEN];
	uint64_t x = 0;

	if (strcmp(v, "0") != 0 && shp_parse_time(v, &x, sub) < 0) {
		snprintf(err, SHP_ERR_LEN, "--%s '%s': %s", name, v, sub);
		return -1;
	}
	*out = x;
	return 0;
}

/* Validate a profile text now so a bad one is refused before anything
 * starts (and, from the CLI, before anything changes). The seed and the
 * bands do not change what is valid. */
static int
check_profile(const char *key, const char *v, char *err)
{
	const struct shp_kind *k;
	void *c;

	if (shp_kind_parse(key, v, NULL, &k, &c, err) < 0)
		return -1;
	shp_kind_conf_free(k, c);
	return 0;
}

int
shp_pairs_parse(const char *s, int pair_of[SHP_MAX_PORTS], char *err)
{
	int map[SHP_MAX_PORTS];
	const char *p = s;
	int i;

	for (i = 0; i < SHP_MAX_PORTS; i++)
		map[i] = -1;
	while (*p != '\0') {
		unsigned int a, b;
		int n = 0;

		if (sscanf(p, "%u:%u%n", &a, &b, &n) != 2 || n == 0 ||
		    (p[n] != '\0' && p[n] != ',')) {
			snprintf(err, SHP_ERR_LEN, "--pairs '%s': expected "
				 "A:B[,C:D...] with port numbers", s);
			return -1;
		}
		if (a >= SHP_MAX_PORTS || b >= SHP_MAX_PORTS) {
			snprintf(err, SHP_ERR_LEN, "--pairs '%s': port "
				 "numbers must be below %d", s, SHP_MAX_PORTS);
			return -1;
		}
		if (map[a] != -1 || (a != b && map[b] != -1)) {
			snprintf(err, SHP_ERR_LEN, "--pairs '%s': port %u "
				 "appears twice", s, map[a] != -1 ? a : b);
			return -1;
		}
		map[a] = b;
		map[b] = a;
		p += n;
		if (*p == ',')
			p++;
	}
	memcpy(pair_of, map, sizeof(map));
	return 0;
}

static int
set_port_profile(struct shp_layer *l, const char *key, int port,
		 const char *v, char *err)
{
	int k = shp_key_index(key);

	if (port < 0 || port >= SHP_MAX_PORTS) {
		snprintf(err, SHP_ERR_LEN, "--%s-port: port %d out of range "
			 "0..%d", key, port, SHP_MAX_PORTS - 1);
		return -1;
	}
	if (check_profile(key, v, err) < 0)
		return -1;
	return set_str(&l->port[k][port], v);
}

int
shp_option_set(struct shp_options *o, const char *name, int port,
	       const char *v, bool cli, char *err)
{
	struct shp_layer *l = cli ? &o->cli : &o->file;
	uint64_t x;

	if (strcmp(name, "bands") == 0)
		return parse_uint(name, v, 1, SHP_MAX_BANDS, &o->bands, err);
	if (strcmp(name, "priomap") == 0) {
		if (cli) {   /* the command line's priomap is its own */
			free(o->priomap_origin);
			o->priomap_origin = NULL;
		}
		return set_str(&o->priomap_text, v);
	}
	if (strcmp(name, "classify") == 0) {
		char sub[SHP_ERR_LEN];

		if (shp_classify_mode_parse(v, &o->classify, sub) < 0) {
			snprintf(err, SHP_ERR_LEN, "--%s", sub);
			return -1;
		}
		return 0;
	}
	if (strcmp(name, "seed") == 0) {
		if (shp_parse_u64(v, &x, err) < 0) {
			snprintf(err, SHP_ERR_LEN, "--seed '%s': expected a "
				 "non-negative integer", v);
			return -1;
		}
		o->seed = x;
		o->seed_set = true;
		return 0;
	}
	if (shp_kind_is_key(name)) {
		if (check_profile(name, v, err) < 0)
			return -1;
		return set_str(&l->all[shp_key_index(name)], v);
	}
	{
		size_t n = strlen(name);
		char key[32];

		if (n > 5 && n - 5 < sizeof(key) &&
		    strcmp(name + n - 5, "-port") == 0) {
			memcpy(key, name, n - 5);
			key[n - 5] = '\0';
			if (shp_kind_is_key(key))
				return set_port_profile(l, key, port, v, err);
		}
	}
	if (strcmp(name, "pairs") == 0) {
		if (shp_pairs_parse(v, o->pair_of, err) < 0)
			return -1;
		o->pairs_set = true;
		return 0;
	}
	if (strcmp(name, "mbufs") == 0)
		return parse_uint(name, v, 1024, 1u << 30, &o->mbufs, err);
	if (strcmp(name, "ring-size") == 0 || strcmp(name, "ring_size") == 0)
		return parse_uint("ring-size", v, 2, 1u << 24, &o->ring_size,
				  err);
	if (strcmp(name, "burst") == 0)
		return parse_uint(name, v, 1, SHP_MAX_BURST, &o->burst, err);
	/* a port's own limits (rx_desc_lim) are checked once it exists */
	if (strcmp(name, "rxd") == 0)
		return parse_uint(name, v, 1, UINT16_MAX, &o->rxd, err);
	if (strcmp(name, "txd") == 0)
		return parse_uint(name, v, 1, UINT16_MAX, &o->txd, err);
	if (strcmp(name, "max-late") == 0 || strcmp(name, "max_late") == 0) {
		if (parse_span("max-late", v, &o->max_late_ns, err) < 0)
			return -1;
		o->max_late_set = true;
		return 0;
	}
	if (strcmp(name, "link-wait") == 0 || strcmp(name, "link_wait") == 0)
		return parse_span("link-wait", v, &o->link_wait_ns, err);
	/* a port's own limits (max_mtu, max_rx_pktlen) once it exists */
	if (strcmp(name, "mtu") == 0)
		return parse_uint(name, v, SHP_MTU_MIN, SHP_MTU_MAX,
				  cli ? &o->mtu_cli : port < 0 ? &o->mtu_file :
				  &o->mtu_port[port], err);
	if (strcmp(name, "mbuf-size") == 0 || strcmp(name, "mbuf_size") == 0)
		return parse_uint("mbuf-size", v, 256, 65535, &o->mbuf_size,
				  err);
	if (strcmp(name, "late-drop") == 0 || strcmp(name, "late_drop") == 0)
		return parse_span("late-drop", v, &o->late_drop_ns, err);
	if (strcmp(name, "stats-period") == 0)
		return parse_uint(name, v, 0, 86400, &o->stats_period, err);
	if (strcmp(name, "stats-file") == 0)
		return set_str(&o->stats_file, v);
	if (strcmp(name, "rx-lcores") == 0)
		return set_str(&o->rx_lcores, v);
	if (strcmp(name, "tx-lcores") == 0)
		return set_str(&o->tx_lcores, v);
	if (strcmp(name, "cmdline-file") == 0)
		return set_str(&o->cmdline_file, v);
	if (strcmp(name, "schedule") == 0)
		return set_str(&o->schedule_file, v);
	snprintf(err, SHP_ERR_LEN, "unknown option '%s'", name);
	return -1;
}

/* Keys allowed in [global]: the command-line names, '_' for '-'. */
static const char *const global_keys[] = {
	"bands", "priomap", "classify", "seed", "ring_size", "burst",
	"mbufs", "pairs", "max_late", "late_drop", "schedule", "rxd", "txd",
	"link_wait", "mtu", "mbuf_size", NULL
};

/*
 * librte_cfgfile stores the file but checks little: it cuts names at
 * CFG_NAME_LEN - 1 and values at CFG_VALUE_LEN - 1 characters, keeps
 * duplicate sections and keys (and reads only the first), skips a line
 * without '=' (a typo is silently a no-op), and says what it refuses only
 * in log lines without the file name. So the raw text is checked first,
 * line by line, and cfgfile is only given files it reads exactly.
 *
 * Comments: from a ';' (cfgfile's comment character) or a '#' (what users
 * of other INI files type) to the end of the line. cfgfile knows one
 * character: a '#' line reaches it as a key starting with '#' (skipped),
 * a '#' after a value as part of the value (cut here).
 */
#define INI_LINE_MAX (CFG_NAME_LEN + CFG_VALUE_LEN + 2)  /* cfgfile's fgets */

/* The NAME of a [class NAME] section, or NULL. */
static const char *
class_section(const char *sec)
{
	if (strncmp(sec, "class ", 6) != 0)
		return NULL;
	sec += 6;
	while (*sec == ' ')
		sec++;
	return *sec != '\0' ? sec : NULL;
}

/*
 * A [class NAME] key: match (several rules OR together, separated by
 * ','), a stage kind's key (queue, tbf, netem ...), ports, quantum, prio.
 */
static int
class_key(struct shp_options *o, const char *name, const char *k,
	  const char *v, char *err)
{
	char opt[48];

	if (strcmp(k, "match") == 0) {
		char *dup = strdup(v), *save = NULL, *r;
		int rc = 0;

		if (dup == NULL) {
			snprintf(err, SHP_ERR_LEN, "out of memory");
			return -1;
		}
		for (r = strtok_r(dup, ",", &save); r != NULL && rc == 0;
		     r = strtok_r(NULL, ",", &save)) {
			while (*r == ' ')
				r++;
			rc = shp_option_class(o, "class", name, r, err);
		}
		free(dup);
		return rc;
	}
	snprintf(opt, sizeof(opt), "class-%s", k);
	if (!shp_class_is_option(opt) || strcmp(k, "class") == 0) {
		snprintf(err, SHP_ERR_LEN, "unknown key '%s'", k);
		return -1;
	}
	return shp_option_class(o, opt, name, v, err);
}

int
shp_option_class(struct shp_options *o, const char *opt, const char *name,
		 const char *value, char *err)
{
	if (o->classes == NULL) {
		o->classes = shp_class_set_new();
		if (o->classes == NULL) {
			snprintf(err, SHP_ERR_LEN, "out of memory");
			return -1;
		}
	}
	return shp_class_option(o->classes, opt, name, value, err);
}

/* A section's identity: "global", or its port number. */
static int
section_id(const char *name)
{
	int port;
	char tail;

	if (strcmp(name, "global") == 0)
		return SHP_MAX_PORTS;
	if (sscanf(name, "port %d%c", &port, &tail) == 1 && port >= 0 &&
	    port < SHP_MAX_PORTS)
		return port;
	return -1;
}

static size_t
trim(char **p, size_t len)
{
	while (len > 0 && (**p == ' ' || **p == '\t')) {
		(*p)++;
		len--;
	}
	while (len > 0 && strchr(" \t\r\n", (*p)[len - 1]) != NULL)
		len--;
	return len;
}

static int
ini_lint(const char *path, FILE *f, char *err)
{
	int seen[SHP_MAX_PORTS + 1] = { 0 };   /* line of each section */
	char (*keys)[CFG_NAME_LEN] = NULL;     /* keys of this section */
	int *key_line = NULL;
	unsigned int nkeys = 0, cap = 0;
	char sec[CFG_NAME_LEN] = "";
	char *line = NULL;
	size_t lcap = 0;
	ssize_t n;
	int lineno = 0, rc = -1;

	while ((n = getline(&line, &lcap, f)) > 0) {
		char *p = line, *eq, *key, *val;
		size_t len = trim(&p, (size_t)n), klen, vlen;
		unsigned int i;

		lineno++;
		len = trim(&p, RTE_MIN(len, strcspn(p, "#;")));
		if (len == 0)
			continue;   /* blank or a comment */
		if (*p == '[') {
			char *end = memchr(p, ']', len);
			char *name = p + 1;
			size_t nlen;
			int id;

			if (end == NULL) {
				snprintf(err, SHP_ERR_LEN, "%s:%d: a section "
					 "header needs its closing ']'", path,
					 lineno);
				goto out;
			}
			nlen = trim(&name, (size_t)(end - name));
			if (nlen >= CFG_NAME_LEN) {
				snprintf(err, SHP_ERR_LEN, "%s:%d: section name "
					 "longer than %d characters", path,
					 lineno, CFG_NAME_LEN - 1);
				goto out;
			}
			memcpy(sec, name, nlen);
			sec[nlen] = '\0';
			id = section_id(sec);
			if (class_section(sec) != NULL) {
				/* each [class NAME] once is the class set's
				 * business: a name given twice ORs rules */
				nkeys = 0;
				continue;
			}
			if (id < 0) {
				snprintf(err, SHP_ERR_LEN, "%s:%d: unknown "
					 "section [%s] (use [global], [port N], "
					 "N < %d, or [class NAME])", path, lineno,
					 sec,
					 SHP_MAX_PORTS);
				goto out;
			}
			if (seen[id] != 0) {
				snprintf(err, SHP_ERR_LEN, "%s:%d: section [%s] "
					 "again (first at line %d): give each "
					 "section once", path, lineno, sec,
					 seen[id]);
				goto out;
			}
			seen[id] = lineno;
			nkeys = 0;
			continue;
		}
		eq = memchr(p, '=', len);
		if (eq == NULL) {
			snprintf(err, SHP_ERR_LEN, "%s:%d: '%.*s': expected "
				 "key = value, a [section] or a # comment",
				 path, lineno, (int)RTE_MIN(len, (size_t)40), p);
			goto out;
		}
		key = p;
		klen = trim(&key, (size_t)(eq - p));
		val = eq + 1;
		vlen = trim(&val, (size_t)(p + len - val));
		if (sec[0] == '\0') {
			snprintf(err, SHP_ERR_LEN, "%s:%d: key '%.*s' before "
				 "any [global] or [port N] section", path,
				 lineno, (int)RTE_MIN(klen, 40u), key);
			goto out;
		}
		if (klen == 0 || klen >= CFG_NAME_LEN) {
			snprintf(err, SHP_ERR_LEN, "%s:%d: [%s]: %s key", path,
				 lineno, sec, klen ? "over-long" : "empty");
			goto out;
		}
		if (vlen == 0 || vlen >= CFG_VALUE_LEN) {
			snprintf(err, SHP_ERR_LEN, vlen ? "%s:%d: [%s] %.*s: "
				 "value of %zu characters, more than the %d "
				 "an INI value may have" : "%s:%d: [%s] %.*s: "
				 "empty value", path, lineno, sec, (int)klen,
				 key, vlen, CFG_VALUE_LEN - 1);
			goto out;
		}
		if ((size_t)n > INI_LINE_MAX) {
			snprintf(err, SHP_ERR_LEN, "%s:%d: [%s] %.*s: line of "
				 "%zd characters, more than %d", path, lineno,
				 sec, (int)klen, key, n, INI_LINE_MAX);
			goto out;
		}
		for (i = 0; i < nkeys; i++)
			if (strlen(keys[i]) == klen &&
			    memcmp(keys[i], key, klen) == 0) {
				snprintf(err, SHP_ERR_LEN, "%s:%d: [%s] %s "
					 "again (first at line %d): give each "
					 "key once", path, lineno, sec, keys[i],
					 key_line[i]);
				goto out;
			}
		if (nkeys == cap) {
			unsigned int ncap = cap ? 2 * cap : 16;
			void *nk = realloc(keys, ncap * sizeof(*keys));

			if (nk == NULL)
				goto nomem;
			keys = nk;
			nk = realloc(key_line, ncap * sizeof(*key_line));
			if (nk == NULL)
				goto nomem;
			key_line = nk;
			cap = ncap;
		}
		memcpy(keys[nkeys], key, klen);
		keys[nkeys][klen] = '\0';
		key_line[nkeys++] = lineno;
	}
	if (ferror(f)) {
		snprintf(err, SHP_ERR_LEN, "--config %s: %s", path,
			 strerror(errno));
		goto out;
	}
	rc = 0;
	goto out;
nomem:
	snprintf(err, SHP_ERR_LEN, "%s: out of memory", path);
out:
	free(line);
	free(keys);
	free(key_line);
	return rc;
}

/* An option's message as the file should say it: without the "--NAME"
 * the user did not type. */
static const char *
without_flag(const char *sub)
{
	const char *sp = strchr(sub, ' ');

	return strncmp(sub, "--", 2) == 0 && sp != NULL ? sp + 1 : sub;
}

int
shp_config_load(struct shp_options *o, const char *path, char *err)
{
	struct rte_cfgfile *cfg;
	char sub[SHP_ERR_LEN];
	int nsec, s, rc = -1;
	FILE *f;

	f = fopen(path, "r");
	if (f == NULL) {
		if (errno == ENOENT)
			snprintf(err, SHP_ERR_LEN, "--config %s: no such file",
				 path);
		else
			snprintf(err, SHP_ERR_LEN, "--config %s: %s", path,
				 strerror(errno));
		return -1;
	}
	rc = ini_lint(path, f, err);
	fclose(f);
	if (rc < 0)
		return -1;
	rc = -1;
	/* Whatever cfgfile would still say, we said first and better. */
	rte_log_set_level_pattern("lib.cfgfile", RTE_LOG_EMERG);
	cfg = rte_cfgfile_load(path, 0);
	if (cfg == NULL) {
		snprintf(err, SHP_ERR_LEN, "--config %s: cannot read it as an "
			 "INI file", path);
		return -1;
	}
	nsec = rte_cfgfile_num_sections(cfg, NULL, 0);
	for (s = 0; s < nsec; s++) {
		char sec[CFG_NAME_LEN];
		int nent = rte_cfgfile_section_num_entries_by_index(cfg, sec,
								      s);
		struct rte_cfgfile_entry *ent;
		int e, port = section_id(sec);
		const char *cls = class_section(sec);

		if (port == SHP_MAX_PORTS)
			port = -1;
		ent = calloc(nent > 0 ? nent : 1, sizeof(*ent));
		if (ent == NULL)
			goto out;
		rte_cfgfile_section_entries_by_index(cfg, s, sec, ent, nent);
		for (e = 0; e < nent; e++) {
			const char *k = ent[e].name;
			char *v = ent[e].value;
			int ok = 0, i;

			if (k[0] == '#')
				continue;   /* a comment line with a '=' */
			v[trim(&v, strcspn(v, "#"))] = '\0';

			if (cls != NULL) {
				ok = 1;
				if (class_key(o, cls, k, v, sub) < 0)
					goto bad_value;
			} else if (port < 0) {
				for (i = 0; global_keys[i]; i++)
					ok |= strcmp(k, global_keys[i]) == 0;
				ok |= shp_kind_is_key(k);
				if (ok && shp_option_set(o, k, -1, v, false,
							 sub) < 0)
					goto bad_value;
				if (ok && strcmp(k, "priomap") == 0 &&
				    set_str(&o->priomap_origin, path) < 0)
					goto bad_value;
			} else if (shp_kind_is_key(k)) {
				ok = 1;
				if (set_port_profile(&o->file, k, port, v,
						     sub) < 0)
					goto bad_value;
			} else if (strcmp(k, "mtu") == 0) {
				ok = 1;
				if (shp_option_set(o, k, port, v, false,
						   sub) < 0)
					goto bad_value;
			}
			if (!ok) {
				snprintf(err, SHP_ERR_LEN, "%s: [%s] unknown "
					 "key '%s'", path, sec, k);
				free(ent);
				goto out;
			}
			continue;
bad_value:
			snprintf(err, SHP_ERR_LEN, "%s: [%s] %s: %s", path,
				 sec, k, without_flag(sub));
			free(ent);
			goto out;
		}
		free(ent);
	}
	rc = 0;
out:
	rte_cfgfile_close(cfg);
	return rc;
}

int
shp_config_preload(struct shp_options *o, int argc, char **argv, char *err)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *file = NULL;

		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			file = argv[++i];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			file = argv[i] + 9;
		if (file == NULL)
			continue;
		if (shp_config_load(o, file, err) < 0 ||
		    set_str(&o->config_file, file) < 0)
			return -1;
	}
	return 0;
}

int
shp_options_finalize(struct shp_options *o, char *err)
{
	struct shp_classifier *c = &o->classifier;
	char sub[SHP_ERR_LEN];

	if (shp_class_set_check(o->classes, err) < 0)
		return -1;
	c->mode = o->classify;
	c->nb_bands = (uint8_t)o->bands;
	if (o->priomap_text == NULL) {
		shp_priomap_default(c->nb_bands, c->priomap);
	} else if (shp_priomap_parse(o->priomap_text, c->nb_bands,
				     c->priomap, sub) < 0) {
		if (o->priomap_origin != NULL)
			snprintf(err, SHP_ERR_LEN, "%s: [global] priomap: %s",
				 o->priomap_origin, sub);
		else
			snprintf(err, SHP_ERR_LEN, "--%s", sub);
		return -1;
	}
	return 0;
}

static const char *
pick(const char *cli_port, const char *cli_all, const char *file_port,
     const char *file_all)
{
	const char *v = cli_port ? cli_port : cli_all ? cli_all :
			file_port ? file_port : file_all;

	return (v != NULL && strcmp(v, "off") == 0) ? NULL : v;
}

const char *
shp_options_profile(const struct shp_options *o, const char *key,
		    uint16_t port)
{
	int k = shp_key_index(key);

	if (k < 0)
		return NULL;
	return pick(o->cli.port[k][port], o->cli.all[k],
		    o->file.port[k][port], o->file.all[k]);
}

void
shp_options_kind_env(const struct shp_options *o, struct shp_kind_env *env)
{
	memset(env, 0, sizeof(*env));
	env->bands = o->bands;
	env->ring_size = o->ring_size;
	env->seed = o->seed;
	env->seed_set = o->seed_set;
}

int
shp_options_chain_spec(const struct shp_options *o, uint16_t port,
		       struct shp_chain_spec *spec, char *err)
{
	const char *text[SHP_MAX_KEYS];
	struct shp_kind_env env;
	char what[16];
	unsigned int k;

	shp_options_kind_env(o, &env);
	for (k = 0; k < shp_key_nb(); k++)
		text[k] = shp_options_profile(o, shp_key_name(k), port);
	snprintf(what, sizeof(what), "port %u", port);
	return shp_chain_spec_parse(spec, text, &env, what, err);
}

unsigned int
shp_options_pool_size(const struct shp_options *o, const uint16_t *ports,
		      unsigned int nb, unsigned int nb_lcores,
		      unsigned int *need)
{
	struct shp_chain_spec spec;
	struct shp_kind_env env;
	char err[SHP_ERR_LEN];
	uint64_t held = 0;
	unsigned int i, n;

	shp_options_kind_env(o, &env);
	for (i = 0; i < nb; i++) {
		/* (the profiles parsed in shp_options_finalize) */
		if (shp_options_chain_spec(o, ports[i], &spec, err) < 0)
			continue;
		held += shp_chain_spec_capacity(&spec, &env);
		shp_chain_spec_free(&spec);
	}
	n = shp_chain_pool_size(nb, held, o->burst, nb_lcores,
				o->rxd + o->txd);
	if (need != NULL)
		*need = n;
	return o->mbufs != 0 ? o->mbufs : n;
}

void
shp_options_pool_plan(const struct shp_options *o, const uint16_t *ports,
		      const int *port_socket, unsigned int nb,
		      int main_socket, unsigned int nb_lcores,
		      struct shp_pool_plan *plan)
{
	unsigned int i, k, given = 0;

	memset(plan, 0, sizeof(*plan));
	for (i = 0; i < nb && i < SHP_MAX_PORTS; i++) {
		int sock = port_socket[i] < 0 ? main_socket : port_socket[i];

		for (k = 0; k < plan->nb && plan->socket[k] != sock; k++)
			;
		if (k == plan->nb)
			plan->socket[plan->nb++] = sock;
		plan->ports[k][plan->nb_ports[k]++] = ports[i];
		plan->port_pool[i] = (uint8_t)k;
	}
	for (k = 0; k < plan->nb; k++) {
		plan->mbufs[k] = shp_options_pool_size(o, plan->ports[k],
						       plan->nb_ports[k],
						       nb_lcores,
						       &plan->need[k]);
		if (o->mbufs == 0 || plan->nb == 1)
			continue;
		/* --mbufs shared by ports; the last pool takes the rest */
		plan->mbufs[k] = k + 1 < plan->nb ?
			(unsigned int)((uint64_t)o->mbufs * plan->nb_ports[k] /
				       nb) : o->mbufs - given;
		given += plan->mbufs[k];
	}
}

void
shp_options_hold_caps(const struct shp_options *o, const uint16_t *ports,
		      unsigned int nb, unsigned int nb_lcores,
		      unsigned int pool, uint32_t *cap)
{
	uint64_t need[SHP_MAX_PORTS] = { 0 }, queue[SHP_MAX_PORTS] = { 0 };
	struct shp_chain_spec spec;
	struct shp_kind_env env;
	char err[SHP_ERR_LEN];
	unsigned int i;

	shp_options_kind_env(o, &env);
	for (i = 0; i < nb && i < SHP_MAX_PORTS; i++) {
		struct shp_chain_spec q = { { NULL } };

		need[i] = SHP_NETEM_RESERVE;
		if (shp_options_chain_spec(o, ports[i], &spec, err) < 0)
			continue;
		need[i] += shp_chain_spec_capacity(&spec, &env);
		/* what the port's queue holds is its own: not the delay's */
		q.kind[SHP_SLOT_QUEUE] = spec.kind[SHP_SLOT_QUEUE];
		q.conf[SHP_SLOT_QUEUE] = spec.conf[SHP_SLOT_QUEUE];
		queue[i] = shp_chain_spec_capacity(&q, &env);
		shp_chain_spec_free(&spec);
	}
	shp_chain_pool_shares(pool, nb, need, queue, o->burst, nb_lcores,
			      o->rxd + o->txd, cap);
}

unsigned int
shp_kind_longopts(struct option *out, int base)
{
	static char names[SHP_MAX_KEYS][40];
	unsigned int k;

	for (k = 0; k < shp_key_nb(); k++) {
		snprintf(names[k], sizeof(names[k]), "%s-port",
			 shp_key_name(k));
		out[2 * k] = (struct option){ shp_key_name(k),
					      required_argument, NULL,
					      base + 2 * (int)k };
		out[2 * k + 1] = (struct option){ names[k], required_argument,
						  NULL, base + 2 * (int)k + 1 };
	}
	return 2 * k;
}

void
shp_kinds_usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "\nStage kinds (--KEY 'ARGS', --KEY-port P 'ARGS', [port N] "
		"KEY = ARGS,\nCLI set KEY all|P ARGS; KEY is queue for a "
		"queue kind):\n");
	for (i = 0; shp_kinds[i] != NULL; i++)
		fprintf(f, "  %-6s %s\n", shp_kind_key(shp_kinds[i]),
			shp_kinds[i]->usage);
}
