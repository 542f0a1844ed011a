/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The --config INI file: the raw text checked line by line first (what
 * librte_cfgfile would take silently, see below), then every key handed to
 * the options code (config.c) as the command line hands it, so that a key
 * means the same in the file and as an option. Apart from the options
 * because how a file is read is not what an option means.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_cfgfile.h>
#include <rte_common.h>
#include <rte_log.h>

#include "config.h"
#include "config_priv.h"
#include "shp_file.h"
#include "shp_preset.h"

/* Keys allowed in [global]: the command-line names, '_' for '-'. */
static const char *const global_keys[] = {
	"bands", "priomap", "classify", "seed", "ring_size", "burst",
	"mbufs", "pairs", "max_late", "late_drop", "schedule", "rxd", "txd",
	"link_wait", "mtu", "mbuf_size", "queues", NULL
};

/* [global] summary = TEXT: what the file is, one line (a preset's line
 * in `show presets`, shp_preset.h); it sets nothing. */
#define SUMMARY_KEY "summary"

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
/* What is read at most: a longer line is said with its key (ini_lint). */
#define INI_READ_MAX 4096
#define INI_FILE_MAX ((size_t)1 << 20)

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
ini_lint(const char *path, struct shp_file *sf, char *err)
{
	int seen[SHP_MAX_PORTS + 1] = { 0 };   /* line of each section */
	char (*keys)[CFG_NAME_LEN] = NULL;     /* keys of this section */
	int *key_line = NULL;
	unsigned int nkeys = 0, cap = 0;
	char sec[CFG_NAME_LEN] = "";
	char *line;
	int lineno = 0, rc = -1, got;

	while ((got = shp_file_line(sf, &line)) > 0) {
		char *p = line, *eq, *key, *val;
		size_t n = strlen(line) + 1;   /* with its '\n', as cfgfile */
		size_t len = trim(&p, n - 1), klen, vlen;
		unsigned int i;

		lineno = (int)sf->line;
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
			/* not quoted: a file that is no INI file may be
			 * anyone's (issue 58) */
			snprintf(err, SHP_ERR_LEN, "%s:%d: expected key = "
				 "value, a [section] or a # comment", path,
				 lineno);
			goto out;
		}
		key = p;
		klen = trim(&key, (size_t)(eq - p));
		val = eq + 1;
		vlen = trim(&val, (size_t)(p + len - val));
		if (sec[0] == '\0') {
			snprintf(err, SHP_ERR_LEN, "%s:%d: a key before "
				 "any [global] or [port N] section", path,
				 lineno);
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
				 "%zu characters, more than %d", path, lineno,
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
	if (got < 0)
		goto out;
	rc = 0;
	goto out;
nomem:
	snprintf(err, SHP_ERR_LEN, "%s: out of memory", path);
out:
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

/*
 * v as the kind of key reads it: a file a relative path names is found in
 * base (a preset's directory), where base is given; into buf.
 */
static const char *
file_in(const char *base, const char *k, const char *v, char *buf,
	size_t len)
{
	const struct shp_kind *kind = shp_kind_find(k);

	if (base == NULL || kind == NULL || !kind->reads_file ||
	    v[0] == '/' || strcmp(v, "off") == 0)
		return v;
	if ((size_t)snprintf(buf, len, "%s/%s", base, v) >= len)
		return v;   /* the parser says the path it cannot open */
	return buf;
}

int
shp_config_load(struct shp_options *o, const char *path, char *err)
{
	return shp_config_load_in(o, path, NULL, err);
}

int
shp_config_load_in(struct shp_options *o, const char *path,
		   const char *base, char *err)
{
	char file[CFG_VALUE_LEN + 4096];
	struct rte_cfgfile *cfg;
	char sub[SHP_ERR_LEN];
	char fdpath[32];
	struct shp_file sf;
	int nsec, s, rc = -1;

	/* a FIFO or a device would stop the start: refused as they are */
	errno = 0;
	if (shp_file_open(&sf, "--config", path, INI_FILE_MAX, INI_READ_MAX,
			  err) < 0) {
		if (errno == ENOENT)
			snprintf(err, SHP_ERR_LEN, "--config %s: no such file",
				 path);
		return -1;
	}
	rc = ini_lint(path, &sf, err);
	if (rc < 0) {
		shp_file_close(&sf);
		return -1;
	}
	rc = -1;
	/* Whatever cfgfile would still say, we said first and better. It
	 * reads the file checked, not what the path names now (a FIFO put
	 * there since would stop the start). */
	rte_log_set_level_pattern("lib.cfgfile", RTE_LOG_EMERG);
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fileno(sf.f));
	cfg = rte_cfgfile_load(fdpath, 0);
	shp_file_close(&sf);
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

			if (cls == NULL)
				v = (char *)file_in(base, k, v, file,
						    sizeof(file));
			if (cls != NULL) {
				ok = 1;
				if (class_key(o, cls, k, v, sub) < 0)
					goto bad_value;
			} else if (port < 0) {
				if (strcmp(k, SUMMARY_KEY) == 0)
					continue;
				for (i = 0; global_keys[i]; i++)
					ok |= strcmp(k, global_keys[i]) == 0;
				ok |= shp_kind_is_key(k);
				if (ok && shp_option_set(o, k, -1, v, false,
							 sub) < 0)
					goto bad_value;
				if (ok && strcmp(k, "priomap") == 0 &&
				    shp_config_set_str(&o->priomap_origin,
						       path) < 0)
					goto bad_value;
			} else if (shp_kind_is_key(k)) {
				ok = 1;
				if (shp_config_set_port_profile(&o->file, k,
								port, v,
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

/* The value of option `name` at argv[*i] (--name V or --name=V), or
 * NULL; *i moves past it. */
static const char *
opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

/*
 * --preset-dir, then every --preset NAME and --preset-port P NAME in
 * their order, after the --config files (a preset is the whole link:
 * what a file gave its stages goes) and before the other options (the
 * command line wins over a preset).
 */
static int
preset_preload(struct shp_options *o, int argc, char **argv, char *err)
{
	const char *v;
	int i, pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
			if (pass == 0) {
				v = opt_value(argc, argv, &i, "--preset-dir");
				if (v != NULL && shp_preset_dir_set(v) < 0)
					return -1;
				continue;
			}
			if (strcmp(argv[i], "--preset-port") == 0) {
				char *end;
				long port;

				if (i + 2 >= argc)
					continue;   /* getopt says it */
				port = strtol(argv[i + 1], &end, 10);
				if (end == argv[i + 1] || *end != '\0' ||
				    port < 0 || port >= SHP_MAX_PORTS) {
					snprintf(err, SHP_ERR_LEN, "--preset-"
						 "port '%s': expected a port "
						 "number 0..%d", argv[i + 1],
						 SHP_MAX_PORTS - 1);
					return -1;
				}
				if (shp_preset_options(o, argv[i + 2],
						       (int)port, err) < 0)
					return -1;
				i += 2;
				continue;
			}
			if (strncmp(argv[i], "--preset-", 9) == 0)
				continue;
			v = opt_value(argc, argv, &i, "--preset");
			if (v != NULL && shp_preset_options(o, v, -1, err) < 0)
				return -1;
		}
	return 0;
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
		    shp_config_set_str(&o->config_file, file) < 0)
			return -1;
	}
	return preset_preload(o, argc, argv, err);
}
