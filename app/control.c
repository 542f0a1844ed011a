/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control plane. Runtime changes follow one pattern: build and check
 * every new immutable object first (a bad value changes nothing), publish
 * them (the stage's change() or a release store), wait for an RCU QSBR
 * grace period (every worker went round its loop once, so none still
 * holds an old pointer), then free the old objects.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_rcu_qsbr.h>

#include "capture.h"
#include "classify.h"
#include "control.h"
#include "ctl_for.h"
#include "events.h"
#include "shaper_batch.h"
#include "shaper_sched.h"

/* (declared in shaper.h; here, with the control plane, so that the CLI
 * harness in fuzz/ links without the ports) */
const char *
shaper_ports_text(const struct shaper *s, char *buf, size_t len)
{
	size_t n;
	unsigned int i;

	n = snprintf(buf, len, s->nb_ports == 1 ? "the port is" :
		     "the ports are");
	for (i = 0; i < s->nb_ports && n < len; i++)
		n += snprintf(buf + n, len - n, "%s %u", i ? "," : "",
			      s->port_ids[i]);
	if (s->nb_ports == 0)
		snprintf(buf, len, "there are no ports");
	return buf;
}

uint32_t
shaper_ports_mask(const struct shaper *s)
{
	uint32_t m = 0;
	unsigned int i;

	for (i = 0; i < s->nb_ports; i++)
		m |= 1u << s->port_ids[i];
	return m;
}

static bool replay_announced;
static uint64_t last_periodic;

int
ctl_init(struct shaper *s)
{
	uint64_t now = rte_get_timer_cycles();

	ctl_stats_init(now);
	shp_events_init(s);
	last_periodic = now;
	ctl_config_refresh(s);
	return 0;
}

void
ctl_grace_period(void)
{
	/* The main lcore is not a reader: it waits for every registered
	 * worker to report a quiescent state. Workers that stopped went
	 * offline and are not waited for. */
	rte_rcu_qsbr_synchronize(shaper_rcu, RTE_QSBR_THRID_INVALID);
}

int
ctl_port_arg(const struct shaper *s, const char *word, char *err)
{
	char list[SHP_ERR_LEN / 2];
	char *end;
	unsigned long v;
	unsigned int i;

	if (strcmp(word, "all") == 0)
		return -1;
	errno = 0;
	v = strtoul(word, &end, 10);
	if (end != word && *end == '\0' && errno == 0 && v < SHP_MAX_PORTS)
		for (i = 0; i < s->nb_ports; i++)
			if (s->port_ids[i] == v)
				return (int)v;
	snprintf(err, SHP_ERR_LEN, "no port '%s': give all or a port id "
		 "(%s)", word, shaper_ports_text(s, list,
							sizeof(list)));
	return -2;
}

static bool
port_selected(int port, uint16_t p)
{
	return port < 0 || port == p;
}

/* A delay limit above the port's share of the pool is capped by the
 * stages (pool_share): the reply says so, as the start does. */
void
ctl_hold_note(const struct shaper *s, uint16_t port, const struct shp_kind *k,
	  const void *conf, const char *what, const struct shp_kind_env *env)
{
	char note[SHP_ERR_LEN];

	if (k->slot != SHP_SLOT_DELAY || conf == NULL || k->capacity == NULL)
		return;
	if (*shaper_hold_note(s, port, what, k->capacity(conf, env), note,
			      sizeof(note)) != '\0')
		printf("warning: %s\n", note);
}

int
ctl_set_stage(struct shaper *s, const char *key, int port, const char *args,
	      char *err)
{
	return ctl_set_stage_each(s, key, port, NULL, args, err);
}

/* The confs of one `set KEY PORT|all`, built and checked, not yet
 * published (kind[i] NULL: nothing to change on port index i). */
struct stage_prep {
	const struct shp_kind *kind[SHP_MAX_PORTS];
	/* shard 0's (the port's), then the other shards' own copies
	 * (--queues N: a chain owns its confs) */
	void *conf[SHP_MAX_PORTS][SHP_MAX_QUEUES];
};

/* The copies of port index i's change for shards 1..: the same text
 * parsed again and checked against the shard's own running stage. */
static int
stage_prep_shards(struct shaper *s, struct stage_prep *pr, unsigned int i,
		  const char *key, const char *text,
		  const struct shp_kind_env *env, char *err)
{
	const struct shp_kind *k = pr->kind[i];
	unsigned int q;

	for (q = 1; q < shaper_queues(s); q++) {
		const struct shp_chain *c =
			shaper_shard_chain(s, s->port_ids[i], q);

		if (shp_kind_parse(key, text, env, &k,
				   &pr->conf[i][q], err) < 0)
			return -1;
		/* completed from the shard's own running stage, as shard
		 * 0's was from its */
		if (k->check_change != NULL &&
		    k->check_change(c->conf[k->slot], pr->conf[i][q], err) < 0)
			return -1;
		/* one change, one id: the shared bucket refills once */
		shp_conf_twin(pr->conf[i][q], pr->conf[i][0]);
	}
	return 0;
}

static void
stage_prep_free_port(struct stage_prep *pr, unsigned int i)
{
	unsigned int q;

	for (q = 0; q < SHP_MAX_QUEUES; q++)
		if (pr->conf[i][q] != NULL)
			shp_kind_conf_free(pr->kind[i], pr->conf[i][q]);
}

static int
stage_prepare_env(struct shaper *s, const char *key, int port,
		  const char *const *args_of, const char *args,
		  const struct shp_kind_env *envp, struct stage_prep *pr,
		  char *err)
{
	const struct shp_kind **kind = pr->kind;
	void *conf[SHP_MAX_PORTS] = { NULL };
	struct shp_kind_env env = *envp;
	unsigned int i;

	memset(pr, 0, sizeof(*pr));
	/* every conf first, checked against the port's chain: an error
	 * changes nothing */
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		const struct shp_chain *c = &s->chain[p];

		/* (args_of: a port without a text is not changed) */
		if (!port_selected(port, p) ||
		    (args_of != NULL && args_of[i] == NULL))
			continue;
		/* a text without bands keeps the running queue's: a map
		 * it gives is checked against those */
		env.bands = c->bands != 0 ? c->bands : envp->bands;
		if (shp_kind_parse(key, args_of != NULL ? args_of[i] : args,
				   &env, &kind[i], &conf[i], err) < 0)
			goto undo;
		pr->conf[i][0] = conf[i];
		if (c->kind[kind[i]->slot] != kind[i]) {
			snprintf(err, SHP_ERR_LEN, "port %u runs %s there, not "
				 "%s: a different kind takes a restart (--%s-"
				 "port %u)", p, c->kind[kind[i]->slot]->name,
				 kind[i]->name, key, p);
			i++;
			goto undo;
		}
		if (kind[i]->check_change != NULL &&
		    kind[i]->check_change(c->conf[kind[i]->slot], conf[i],
					  err) < 0) {
			i++;
			goto undo;
		}
		if (shaper_budget_check(s, p, kind[i], conf[i], err) < 0) {
			i++;
			goto undo;
		}
		if (kind[i]->ops->change == NULL) {
			char a[CTL_TEXT_LEN], b[CTL_TEXT_LEN];

			/* the same again is no change */
			shp_kind_format(kind[i], conf[i], a, sizeof(a));
			shp_chain_format(c, kind[i]->slot, b, sizeof(b));
			if (strcmp(a, b) == 0) {
				shp_kind_conf_free(kind[i], conf[i]);
				kind[i] = NULL;
				conf[i] = NULL;
				pr->conf[i][0] = NULL;
				continue;
			}
			snprintf(err, SHP_ERR_LEN, "%s cannot change while "
				 "running", kind[i]->name);
			i++;
			goto undo;
		}
		if (stage_prep_shards(s, pr, i, key, args_of != NULL ?
				      args_of[i] : args, &env, err) < 0) {
			i++;
			goto undo;
		}
	}
	return 0;
undo:
	while (i-- > 0)
		if (kind[i] != NULL)
			stage_prep_free_port(pr, i);
	memset(pr, 0, sizeof(*pr));
	return -1;
}

static int
stage_prepare(struct shaper *s, const char *key, int port,
	      const char *const *args_of, const char *args,
	      struct stage_prep *pr, char *err)
{
	struct shp_kind_env env;

	shaper_kind_env(s, &env);
	return stage_prepare_env(s, key, port, args_of, args, &env, pr, err);
}

static void
stage_prep_free(struct stage_prep *pr, unsigned int nb_ports)
{
	unsigned int i;

	for (i = 0; i < nb_ports; i++)
		if (pr->kind[i] != NULL)
			stage_prep_free_port(pr, i);
}

/* An event for each port each change of pr[0..n) made, in their order
 * (a batch: one for each of its changes, with consecutive ids). */
static void
stage_events(struct shaper *s, const struct stage_prep *pr, unsigned int n,
	     char (*was)[CTL_TEXT_LEN])
{
	char now[CTL_TEXT_LEN];
	unsigned int i, j, e = 0;

	for (j = 0; j < n; j++)
		for (i = 0; i < s->nb_ports; i++) {
			uint16_t p = s->port_ids[i];
			const struct shp_kind *k = pr[j].kind[i];

			if (k == NULL)
				continue;
			shp_chain_format(&s->chain[p], k->slot, now,
					 sizeof(now));
			shp_event_emit(shp_event_source(), p, shp_kind_key(k),
				       was != NULL ? was[e++] : "?", now);
		}
}

/* Every change of pr[0..n) is made by the ports' owners in one publish
 * (shaper_batch.h), then the old confs go after a grace period. A change
 * that holds (not fors_hold: every change but a `for`'s own) drops the
 * `for`s running on its stages. */
static void
stage_publish(struct shaper *s, struct stage_prep *pr, unsigned int n,
	      bool fors_hold)
{
	static uint16_t port[CTL_BATCH_MAX * SHP_MAX_PORTS * SHP_MAX_QUEUES];
	static uint16_t shard[RTE_DIM(port)];
	static const struct shp_kind *kind[RTE_DIM(port)];
	static void *conf[RTE_DIM(port)], *old[RTE_DIM(port)];
	struct shp_kind_env env;
	unsigned int i, j, q, m = 0;

	char (*was)[CTL_TEXT_LEN];
	unsigned int e = 0;

	shaper_kind_env(s, &env);
	/* the events' old texts: what each stage ran before (out of memory:
	 * the changes are made all the same, their events say "?") */
	was = malloc(sizeof(*was) * n * s->nb_ports);
	/* every shard of a port in the same publish */
	for (j = 0; j < n; j++)
		for (i = 0; i < s->nb_ports; i++) {
			uint16_t p = s->port_ids[i];

			if (pr[j].kind[i] == NULL)
				continue;
			if (was != NULL)
				shp_chain_format(&s->chain[p],
						 pr[j].kind[i]->slot, was[e++],
						 CTL_TEXT_LEN);
			for (q = 0; q < shaper_queues(s); q++) {
				port[m] = p;
				shard[m] = (uint16_t)q;
				kind[m] = pr[j].kind[i];
				conf[m++] = pr[j].conf[i][q];
			}
			if (!fors_hold)
				ctl_for_forget(p, pr[j].kind[i]->slot);
		}
	if (shaper_batch_apply(s, m, port, shard, kind, conf, old) != 0)
		printf("warning: a running stage refused a change it had "
		       "taken when checked (a schedule changed it since)\n");
	stage_events(s, pr, n, was);
	free(was);
	shaper_sched_seen(s);
	for (j = 0; j < m; j++)
		if (shard[j] == 0) {
			ctl_hold_note(s, port[j], kind[j], conf[j], kind[j]->name,
				  &env);
			if (kind[j]->slot == SHP_SLOT_DELAY ||
			    kind[j]->slot == SHP_SLOT_RATE)
				shaper_budget_report(s, port[j]);
		}
	ctl_grace_period();
	shaper_batch_reclaim();
	for (j = 0; j < m; j++)
		shp_kind_conf_free(kind[j], old[j]);
	ctl_config_refresh(s);
}

int
ctl_set_stage_each(struct shaper *s, const char *key, int port,
		   const char *const *args_of, const char *args, char *err)
{
	struct stage_prep pr;

	if (stage_prepare(s, key, port, args_of, args, &pr, err) < 0)
		return -1;
	stage_publish(s, &pr, 1, false);
	return 0;
}

static int
set_stages(struct shaper *s, const struct ctl_change *ch, unsigned int n,
	   bool fors_hold, char *err)
{
	static struct stage_prep pr[CTL_BATCH_MAX];
	char e[SHP_ERR_LEN];
	unsigned int j;

	if (n > CTL_BATCH_MAX) {
		snprintf(err, SHP_ERR_LEN, "more than %d changes",
			 CTL_BATCH_MAX);
		return -1;
	}
	for (j = 0; j < n; j++)
		if (stage_prepare(s, ch[j].key, ch[j].port, ch[j].args_of,
				  NULL, &pr[j], e) < 0) {
			if (n == 1 && fors_hold)
				snprintf(err, SHP_ERR_LEN, "%s", e);
			else
				snprintf(err, SHP_ERR_LEN, "change %u: %s",
					 j + 1, e);
			while (j-- > 0)
				stage_prep_free(&pr[j], s->nb_ports);
			return -1;
		}
	stage_publish(s, pr, n, fors_hold);
	return 0;
}

int
ctl_set_stages(struct shaper *s, const struct ctl_change *ch, unsigned int n,
	       char *err)
{
	return set_stages(s, ch, n, false, err);
}

int
ctl_for_set_stages(struct shaper *s, const struct ctl_change *ch,
		   unsigned int n, char *err)
{
	return set_stages(s, ch, n, true, err);
}

int
ctl_clear_stage(struct shaper *s, const char *key, int port, char *err)
{
	unsigned int i;
	int k = shp_key_index(key);

	if (k < 0) {
		snprintf(err, SHP_ERR_LEN, "unknown stage '%s'", key);
		return -1;
	}
	if (shp_key_slot((unsigned int)k) != SHP_SLOT_QUEUE)
		return ctl_set_stage(s, key, port, "off", err);
	/* a queue is never off: its kind again, with the defaults (port by
	 * port: each may run its own kind) */
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		if (port_selected(port, p) &&
		    ctl_set_stage(s, key, p,
				  s->chain[p].kind[SHP_SLOT_QUEUE]->name,
				  err) < 0)
			return -1;
	}
	return 0;
}

static void
publish_classifier(struct shaper *s, struct shp_classifier *n)
{
	const struct shp_classifier *old = s->classifier;

	__atomic_store_n(&s->classifier, n, __ATOMIC_RELEASE);
	ctl_grace_period();
	if (old != &s->opt.classifier)
		free((void *)(uintptr_t)old);
	ctl_config_refresh(s);
}

static void
priomap_text(const uint8_t *map, char *buf, size_t len)
{
	size_t n = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < 16 && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%u", i ? " " : "",
				      map[i]);
}

/*
 * The priomap alias: every port's queue that gives no map of its own
 * (its kind's bands op: pfifo_fast) takes the new one, reparsed from its
 * own text with it; one that cannot (fewer bands of its own) is named,
 * and nothing changes.
 */
int
ctl_set_priomap(struct shaper *s, const char *text, char *err)
{
	static char texts[SHP_MAX_PORTS][CTL_TEXT_LEN];
	const char *args_of[SHP_MAX_PORTS] = { NULL };
	struct shp_classes_update *u[SHP_MAX_PORTS];
	struct shp_classifier *n = malloc(sizeof(*n));
	struct shp_kind_env env;
	struct stage_prep pr;
	char sub[SHP_ERR_LEN], was[64], now[64];
	unsigned int i;
	bool any = false;

	if (n == NULL) {
		snprintf(err, SHP_ERR_LEN, "out of memory");
		return -1;
	}
	*n = *s->classifier;
	if (shp_priomap_parse(text, n->nb_bands, n->priomap, err) < 0) {
		free(n);
		return -1;
	}
	shaper_kind_env(s, &env);
	env.priomap = n->priomap;
	for (i = 0; i < s->nb_ports; i++) {
		const struct shp_chain *c = &s->chain[s->port_ids[i]];
		const struct shp_kind *k = c->kind[SHP_SLOT_QUEUE];
		struct shp_kind_env pe = env;
		const uint8_t *map;
		void *conf = NULL;

		if (k->bands == NULL)
			continue;
		pe.bands = c->bands;   /* the running queue's */
		shp_chain_format(c, SHP_SLOT_QUEUE, texts[i], CTL_TEXT_LEN);
		if (shp_kind_parse("queue", texts[i], &pe, &k, &conf,
				   sub) < 0 ||
		    (k->check_change != NULL &&
		     k->check_change(c->conf[SHP_SLOT_QUEUE], conf, sub) < 0)) {
			if (conf != NULL)
				shp_kind_conf_free(k, conf);
			snprintf(err, SHP_ERR_LEN, "port %u: %s",
				 s->port_ids[i], sub);
			free(n);
			return -1;
		}
		/* a map of its own stays */
		k->bands(conf, &map);
		if (memcmp(map, c->priomap, 16) != 0) {
			args_of[i] = texts[i];
			any = true;
		}
		shp_kind_conf_free(k, conf);
	}
	if (any && stage_prepare_env(s, "queue", -1, args_of, NULL, &env,
				     &pr, err) < 0) {
		free(n);
		return -1;
	}
	/* the classes' queues too (the same set again: only those whose
	 * map changes change) */
	if (s->opt.classes != NULL &&
	    ctl_classes_prepare(s, s->opt.classes, &env, u, err) < 0) {
		if (any)
			stage_prep_free(&pr, s->nb_ports);
		free(n);
		return -1;
	}
	if (any)
		stage_publish(s, &pr, 1, false);
	if (s->opt.classes != NULL)
		ctl_classes_publish(s, u);
	s->priomap_set = true;
	priomap_text(s->classifier->priomap, was, sizeof(was));
	priomap_text(n->priomap, now, sizeof(now));
	publish_classifier(s, n);
	shp_event_emit(shp_event_source(), -1, "priomap", was, now);
	return 0;
}

int
ctl_set_classify(struct shaper *s, const char *mode, char *err)
{
	struct shp_classifier *n;
	enum shp_classify_mode m;

	if (shp_classify_mode_parse(mode, &m, err) < 0)
		return -1;
	n = malloc(sizeof(*n));
	if (n == NULL) {
		snprintf(err, SHP_ERR_LEN, "out of memory");
		return -1;
	}
	*n = *s->classifier;
	n->mode = m;
	publish_classifier(s, n);
	return 0;
}

/* A stop returns once every worker finished the loop it was in: what
 * `show` reads after "forwarding stopped" no longer moves. */
void
ctl_pause(struct shaper *s, bool paused)
{
	s->paused = paused;
	if (paused)
		ctl_grace_period();
	ctl_config_refresh(s);
}

static bool
all_drained(struct shaper *s)
{
	unsigned int i;

	for (i = 0; i < s->nb_workers; i++) {
		struct worker *w = &s->workers[s->worker_ids[i]];

		if (w->rx && !__atomic_load_n(&w->rx_done, __ATOMIC_ACQUIRE))
			return false;
	}
	for (i = 0; i < s->nb_ports; i++) {
		struct shp_port_sum sum;

		shaper_stats_port(s, s->port_ids[i], &sum);
		if (sum.queued != 0)
			return false;
	}
	return true;
}

/*
 * Replay ends when every RX lcore has seen its inputs run dry and nothing
 * is queued anywhere. A packet between two stages is in no queue for a few
 * nanoseconds, so "drained" must still hold after every worker has gone
 * round its loop once more.
 */
bool
shaper_replay_done(struct shaper *s)
{
	static uint64_t seen[RTE_MAX_LCORE];
	static bool armed;
	unsigned int i;

	if (!all_drained(s)) {
		armed = false;
		return false;
	}
	if (armed) {
		for (i = 0; i < s->nb_workers; i++) {
			unsigned int lc = s->worker_ids[i];

			if (__atomic_load_n(&s->workers[lc].loops,
					    __ATOMIC_ACQUIRE) < seen[lc] + 2)
				return false;
		}
		return true;
	}
	for (i = 0; i < s->nb_workers; i++) {
		unsigned int lc = s->worker_ids[i];

		seen[lc] = __atomic_load_n(&s->workers[lc].loops,
					   __ATOMIC_ACQUIRE);
	}
	armed = true;
	return false;
}

/*
 * The start and the end of `overload` shedding on a port, as events: the
 * main lcore looks at the ports' counters every OVERLOAD_POLL_MS (the
 * workers count the drops anyway, and do nothing more for this): they
 * moved since the last look and did not before, shedding began; they
 * stood still since, it ended.
 */
#define OVERLOAD_POLL_MS 100

static void
overload_watch(struct shaper *s)
{
	static uint64_t last, seen[SHP_MAX_PORTS], began[SHP_MAX_PORTS];
	static bool shedding[SHP_MAX_PORTS];
	uint64_t now = rte_get_timer_cycles();
	unsigned int i, b;

	if (s->ctr == NULL ||
	    now - last < rte_get_timer_hz() * OVERLOAD_POLL_MS / 1000)
		return;
	last = now;
	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];
		uint64_t n = 0;
		char text[96];

		for (b = 0; b < SHAPER_CTR_BLOCKS; b++)
			n += __atomic_load_n(&s->ctr[b].port[p].drops[
					SHP_DROP_OVERLOAD], __ATOMIC_RELAXED);
		if (n > seen[p] && !shedding[p]) {
			shedding[p] = true;
			began[p] = seen[p];
			snprintf(text, sizeof(text), "shedding (%" PRIu64
				 " packets so far)", n - seen[p]);
			shp_event_emit(SHP_EV_SHAPER, p, "overload", "off",
				       text);
		} else if (n == seen[p] && shedding[p]) {
			shedding[p] = false;
			snprintf(text, sizeof(text), "shedding (%" PRIu64
				 " packets)", n - began[p]);
			shp_event_emit(SHP_EV_SHAPER, p, "overload", text,
				       "off");
		}
		/* (a `clear stats` only rebases what is shown) */
		seen[p] = n;
	}
}

bool
ctl_tick(struct shaper *s, bool interactive, bool *printed)
{
	enum shp_event_src src;

	if (printed != NULL)
		*printed = false;
	if (s->quit)
		return true;
	shaper_sched_tick(s);
	src = shp_event_source_set(SHP_EV_REVERT);
	if (ctl_for_run(s) && printed != NULL)
		*printed = true;
	shp_event_source_set(src);
	overload_watch(s);
	shaper_carrier_tick(s);
	shaper_link_poll(s);
	if (s->opt.replay && !replay_announced && shaper_replay_done(s)) {
		if (!interactive)
			return true;
		replay_announced = true;
		printf("\nreplay done: every input exhausted, every queue "
		       "empty (quit to exit)\n");
		if (printed != NULL)
			*printed = true;
	}
	ctl_classes_gc(s);
	ctl_classes_grow(s);
	shaper_capture_poll(s);
	if (s->opt.stats_period != 0 &&
	    rte_get_timer_cycles() - last_periodic >=
	    s->opt.stats_period * rte_get_timer_hz()) {
		last_periodic = rte_get_timer_cycles();
		if (interactive)
			printf("\n");
		ctl_print_periodic(s, stdout);
		if (printed != NULL)
			*printed = true;
	}
	return false;
}

void
ctl_fini(struct shaper *s)
{
	unsigned int i;

	for (i = 0; i < s->nb_ports; i++) {
		uint16_t p = s->port_ids[i];

		static struct shp_port_ctr spare;   /* no counters (failed
						     * set-up): nothing held */
		struct shp_ctx ctx = { .ctr = s->ctr == NULL ? &spare :
				       &s->ctr[rte_get_main_lcore()].port[p] };

		shp_classes_detach(&s->chain[p], &ctx);
		shp_chain_destroy(&s->chain[p], &ctx);
	}
	shaper_shards_fini(s);
	ctl_stats_fini();
	if (s->classifier != NULL && s->classifier != &s->opt.classifier) {
		free((void *)(uintptr_t)s->classifier);
		s->classifier = &s->opt.classifier;
	}
}
