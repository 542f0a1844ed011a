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
#include "config_priv.h"

void
shp_options_init(struct shp_options *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->bands = SHP_DEFAULT_BANDS;
	o->classify = SHP_CLASSIFY_TOS;
	o->ring_size = SHP_DEFAULT_RING_SIZE;
	o->burst = SHP_DEFAULT_BURST;
	o->queues = 1;
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

int
shp_config_set_str(char **dst, const char *v)
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
	/* as many bands as any queue may have: a map checked against the
	 * bands an alias gives is checked once all options are in
	 * (shp_options_finalize) */
	const struct shp_kind_env env = { .bands = SHP_MAX_BANDS,
					  .ring_size = SHP_DEFAULT_RING_SIZE };
	const struct shp_kind *k;
	void *c;

	if (shp_kind_parse(key, v, &env, &k, &c, err) < 0)
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

int
shp_config_set_port_profile(struct shp_layer *l, const char *key, int port,
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
	return shp_config_set_str(&l->port[k][port], v);
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
		return shp_config_set_str(&o->priomap_text, v);
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
		return shp_config_set_str(&l->all[shp_key_index(name)], v);
	}
	{
		size_t n = strlen(name);
		char key[32];

		if (n > 5 && n - 5 < sizeof(key) &&
		    strcmp(name + n - 5, "-port") == 0) {
			memcpy(key, name, n - 5);
			key[n - 5] = '\0';
			if (shp_kind_is_key(key))
				return shp_config_set_port_profile(l, key, port,
								   v, err);
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
	/* a port's own limits (max_rx_queues) are checked once it exists */
	if (strcmp(name, "queues") == 0) {
		if (parse_uint(name, v, 1, SHP_MAX_QUEUES, &o->queues,
			       err) < 0)
			return -1;
		o->queues_given = true;
		return 0;
	}
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
		return shp_config_set_str(&o->stats_file, v);
	if (strcmp(name, "rx-lcores") == 0)
		return shp_config_set_str(&o->rx_lcores, v);
	if (strcmp(name, "tx-lcores") == 0)
		return shp_config_set_str(&o->tx_lcores, v);
	if (strcmp(name, "cmdline-file") == 0)
		return shp_config_set_str(&o->cmdline_file, v);
	if (strcmp(name, "schedule") == 0)
		return shp_config_set_str(&o->schedule_file, v);
	snprintf(err, SHP_ERR_LEN, "unknown option '%s'", name);
	return -1;
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

/* Each port's and class's queue text against the aliases (--bands,
 * --priomap): its own words win, and what it leaves to them must fit
 * what it gives. */
static int
check_queues(const struct shp_options *o, char *err)
{
	struct shp_kind_env env;
	char sub[SHP_ERR_LEN];
	unsigned int i;
	uint16_t p;

	shp_options_kind_env(o, &env);
	for (p = 0; p < SHP_MAX_PORTS; p++) {
		const char *t = shp_options_profile(o, "queue", p);
		const struct shp_kind *k;
		void *c;

		if (t == NULL)
			continue;
		if (shp_kind_parse("queue", t, &env, &k, &c, sub) < 0) {
			int q = shp_key_index("queue");
			bool all = t == o->cli.all[q] || t == o->file.all[q];

			if (all)
				snprintf(err, SHP_ERR_LEN, "--queue '%.*s': %s",
					 (int)strcspn(t, "\r\n"), t, sub);
			else
				snprintf(err, SHP_ERR_LEN, "--queue-port %u "
					 "'%.*s': %s", p,
					 (int)strcspn(t, "\r\n"), t, sub);
			return -1;
		}
		shp_kind_conf_free(k, c);
	}
	for (i = 0; o->classes != NULL && i < o->classes->nb; i++) {
		struct shp_chain_spec spec;

		if (shp_class_spec(&o->classes->def[i], &env, &spec, err) < 0)
			return -1;
		shp_chain_spec_free(&spec);
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
	return check_queues(o, err);
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
	env->priomap = o->priomap_text != NULL ? o->classifier.priomap : NULL;
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
	/* --queues: each shard's chain may hold what the port's would, and
	 * each queue has its descriptors */
	unsigned int i, n, q = o->queues > 1 ? o->queues : 1;

	shp_options_kind_env(o, &env);
	for (i = 0; i < nb; i++) {
		/* (the profiles parsed in shp_options_finalize) */
		if (shp_options_chain_spec(o, ports[i], &spec, err) < 0)
			continue;
		held += (uint64_t)q * shp_chain_spec_capacity(&spec, &env);
		shp_chain_spec_free(&spec);
	}
	n = shp_chain_pool_size(nb, held, o->burst, nb_lcores,
				q * (o->rxd + o->txd));
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

		need[i] = SHP_DELAY_RESERVE;
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
