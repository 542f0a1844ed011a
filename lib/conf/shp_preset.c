/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link presets: finding, naming, reading and listing them (shp_preset.h).
 * A preset is read by the INI reader (config_ini.c) into options of its
 * own, so that its keys mean what they mean in any --config file; this
 * file only adds what makes it a preset: where it lives, its name, its
 * summary and that it holds one link (stage keys in [global], nothing
 * else).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_priv.h"
#include "shp_file.h"
#include "shp_preset.h"

#ifndef SHP_PRESET_SRC_DIR
#define SHP_PRESET_SRC_DIR "config/presets"
#endif
#ifndef SHP_PRESET_DATA_DIR
#define SHP_PRESET_DATA_DIR "/usr/local/share/dpdk-shaper/presets"
#endif

#define PRESET_FILE_MAX ((size_t)1 << 20)
#define PRESET_LINE_MAX 4096

static char *dir_given;

int
shp_preset_dir_set(const char *dir)
{
	return shp_config_set_str(&dir_given, dir);
}

static bool
is_dir(const char *d)
{
	struct stat st;

	return stat(d, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *
shp_preset_dir(void)
{
	const char *env = getenv(SHP_PRESET_DIR_ENV);

	if (dir_given != NULL)
		return dir_given;
	if (env != NULL && env[0] != '\0')
		return env;
	/* a build runs from its tree; an installed program has its copy */
	if (is_dir(SHP_PRESET_SRC_DIR) || !is_dir(SHP_PRESET_DATA_DIR))
		return SHP_PRESET_SRC_DIR;
	return SHP_PRESET_DATA_DIR;
}

static bool
name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-';
}

static bool
name_ok(const char *name, size_t n)
{
	size_t i;

	if (n == 0 || n >= SHP_PRESET_NAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!name_char(name[i]))
			return false;
	return true;
}

int
shp_preset_name_check(const char *name, char *err)
{
	if (name_ok(name, strlen(name)))
		return 0;
	/* the name not quoted: it may be anything a client sent */
	snprintf(err, SHP_ERR_LEN, "a preset's name is 1 to %d of a-z, 0-9, "
		 "'_' and '-' (`show presets` or `ls %s` lists them)",
		 SHP_PRESET_NAME_MAX - 1, shp_preset_dir());
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

/*
 * What makes the file a preset, line by line (the INI reader checks the
 * rest): only [global], only stage keys and `summary` in it. The summary:
 * its `summary` key, else its first comment line.
 */
static int
preset_scan(const char *path, char *summary, size_t slen, char *err)
{
	struct shp_file sf;
	char *line, first[SHP_PRESET_SUMMARY_MAX] = "";
	int got, rc = -1;

	summary[0] = '\0';
	if (shp_file_open(&sf, "preset", path, PRESET_FILE_MAX,
			  PRESET_LINE_MAX, err) < 0)
		return -1;
	while ((got = shp_file_line(&sf, &line)) > 0) {
		char *p = line, *eq, *v;
		size_t len = trim(&p, strlen(line)), klen, vlen;

		if (len == 0)
			continue;
		if (*p == ';' || *p == '#') {
			p++;
			len = trim(&p, len - 1);
			if (first[0] == '\0' && len > 0)
				snprintf(first, sizeof(first), "%.*s",
					 (int)len, p);
			continue;
		}
		len = trim(&p, strcspn(p, ";#"));
		if (*p == '[') {
			if (len != 8 || strncmp(p, "[global]", 8) != 0) {
				snprintf(err, SHP_ERR_LEN, "%s:%u: a preset "
					 "has one [global] section, its "
					 "link's keys", path, sf.line);
				goto out;
			}
			continue;
		}
		eq = memchr(p, '=', len);
		if (eq == NULL)
			continue;   /* the INI reader says it */
		klen = trim(&p, (size_t)(eq - p));
		v = eq + 1;
		vlen = trim(&v, strcspn(v, ";#"));
		if (klen == 7 && strncmp(p, "summary", 7) == 0) {
			snprintf(summary, slen, "%.*s", (int)vlen, v);
			continue;
		}
		{
			char key[32];

			snprintf(key, sizeof(key), "%.*s", (int)klen, p);
			if (shp_kind_is_key(key))
				continue;
		}
		snprintf(err, SHP_ERR_LEN, "%s:%u: a preset gives a link's "
			 "stage keys (queue, tbf, trace, netem ...) and "
			 "summary, not '%.*s'", path, sf.line,
			 (int)(klen < 32 ? klen : 32), p);
		goto out;
	}
	if (got < 0)
		goto out;
	if (summary[0] == '\0')
		snprintf(summary, slen, "%s", first);
	rc = 0;
out:
	shp_file_close(&sf);
	return rc;
}

int
shp_preset_load(const char *name, struct shp_preset *p, char *err)
{
	const char *dir = shp_preset_dir();
	struct shp_options o;
	char path[4096], sub[SHP_ERR_LEN];
	unsigned int k;
	int rc = -1;

	memset(p, 0, sizeof(*p));
	if (shp_preset_name_check(name, err) < 0)
		return -1;
	snprintf(p->name, sizeof(p->name), "%s", name);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.ini", dir, name) >=
	    sizeof(path)) {
		snprintf(err, SHP_ERR_LEN, "preset %s: the directory's path "
			 "is too long", name);
		return -1;
	}
	if (access(path, F_OK) < 0) {
		snprintf(err, SHP_ERR_LEN, "no preset '%s' in %s (`show "
			 "presets` or `ls %s` lists them)", name, dir, dir);
		return -1;
	}
	if (preset_scan(path, p->summary, sizeof(p->summary), sub) < 0) {
		snprintf(err, SHP_ERR_LEN, "preset %s: %s", name, sub);
		return -1;
	}
	shp_options_init(&o);
	if (shp_config_load_in(&o, path, dir, sub) < 0) {
		snprintf(err, SHP_ERR_LEN, "preset %s: %s", name, sub);
		goto out;
	}
	for (k = 0; k < shp_key_nb(); k++)
		if (o.file.all[k] != NULL &&
		    shp_config_set_str(&p->text[k], o.file.all[k]) < 0) {
			snprintf(err, SHP_ERR_LEN, "preset %s: out of memory",
				 name);
			shp_preset_free(p);
			goto out;
		}
	rc = 0;
out:
	shp_options_free(&o);
	return rc;
}

void
shp_preset_free(struct shp_preset *p)
{
	unsigned int k;

	for (k = 0; k < SHP_MAX_KEYS; k++) {
		free(p->text[k]);
		p->text[k] = NULL;
	}
}

const char *
shp_preset_text(const struct shp_preset *p, unsigned int k)
{
	if (p->text[k] != NULL)
		return p->text[k];
	return shp_key_slot(k) == SHP_SLOT_QUEUE ? NULL : "off";
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int
shp_preset_list(char (*names)[SHP_PRESET_NAME_MAX], unsigned int max,
		char *err)
{
	const char *dir = shp_preset_dir();
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned int n = 0;

	if (d == NULL) {
		snprintf(err, SHP_ERR_LEN, "presets: %s: %s (--preset-dir or "
			 "$%s names another)", dir, strerror(errno),
			 SHP_PRESET_DIR_ENV);
		return -1;
	}
	while ((e = readdir(d)) != NULL && n < max) {
		size_t len = strlen(e->d_name);

		/* NAME.ini with a name a preset may have: others are not
		 * presets (an editor's backup, a trace) */
		if (len > 4 && strcmp(e->d_name + len - 4, ".ini") == 0 &&
		    name_ok(e->d_name, len - 4))
			snprintf(names[n++], SHP_PRESET_NAME_MAX, "%.*s",
				 (int)(len - 4), e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), name_cmp);
	return (int)n;
}

/* Key k of the layer, for one port or all (which then forgets every
 * port's own: the preset is the whole link of every port). */
static int
layer_set(struct shp_layer *l, unsigned int k, int port, const char *t)
{
	unsigned int q;

	if (port >= 0)
		return shp_config_set_str(&l->port[k][port], t);
	for (q = 0; q < SHP_MAX_PORTS; q++) {
		free(l->port[k][q]);
		l->port[k][q] = NULL;
	}
	if (t == NULL) {
		free(l->all[k]);
		l->all[k] = NULL;
		return 0;
	}
	return shp_config_set_str(&l->all[k], t);
}

int
shp_preset_options(struct shp_options *o, const char *name, int port,
		   char *err)
{
	struct shp_preset p;
	char sub[SHP_ERR_LEN];
	unsigned int k;
	int rc = 0;

	if (port >= SHP_MAX_PORTS) {
		snprintf(err, SHP_ERR_LEN, "--preset-port: port %d out of "
			 "range 0..%d", port, SHP_MAX_PORTS - 1);
		return -1;
	}
	if (shp_preset_load(name, &p, sub) < 0) {
		if (port < 0)
			snprintf(err, SHP_ERR_LEN, "--preset: %s", sub);
		else
			snprintf(err, SHP_ERR_LEN, "--preset-port %d: %s",
				 port, sub);
		return -1;
	}
	for (k = 0; k < shp_key_nb() && rc == 0; k++) {
		const char *t = shp_preset_text(&p, k);

		/* a port's queue not given: the default kind's, which
		 * --bands and --priomap complete */
		if (t == NULL && port >= 0)
			t = shp_kind_default(SHP_SLOT_QUEUE)->name;
		rc = layer_set(&o->file, k, port, t);
	}
	shp_preset_free(&p);
	if (rc < 0)
		snprintf(err, SHP_ERR_LEN, "--preset %s: out of memory", name);
	return rc;
}
