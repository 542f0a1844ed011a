/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-class profiles (lib/classes/shp_classes.h, lib/classes/sch_classes.c): the class
 * options, editing a class set, and the classes stage on a port's chain
 * at a bottleneck (the port's tbf): DRR shares by quantum, strict
 * priority, a class with nothing due never blocking another, conservation
 * through a change and a clear, the pool full at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <rte_malloc.h>

#include "shp_chain.h"
#include "shp_classes.h"
#include "shp_link.h"
#include "shp_rig.h"

#define MS 1000000ull
/* one port of one queue: its one chain */
#define CHAINS(c) ((struct shp_chain *[]){ (c) })
#define PORT 3
#define LEN 1000

static struct shp_class_set *
set_of(const char *const *opts)
{
	struct shp_class_set *s = shp_class_set_new();
	char err[SHP_ERR_LEN];
	unsigned int i;

	assert_non_null(s);
	for (i = 0; opts[i] != NULL; i += 3)
		if (shp_class_option(s, opts[i], opts[i + 1], opts[i + 2],
				     err) < 0)
			fail_msg("%s %s %s: %s", opts[i], opts[i + 1],
				 opts[i + 2], err);
	assert_int_equal(shp_class_set_check(s, err), 0);
	return s;
}

#define SET(...) set_of((const char *const[]){ __VA_ARGS__, NULL })

static void
refused(const char *opt, const char *name, const char *v, const char *word)
{
	struct shp_class_set *s = shp_class_set_new();
	char err[SHP_ERR_LEN] = "";

	assert_non_null(s);
	assert_int_equal(shp_class_option(s, opt, name, v, err), -1);
	if (strstr(err, word) == NULL || strchr(err, '\n') != NULL)
		fail_msg("%s %s '%s': '%s' does not name '%s'", opt, name, v,
			 err, word);
	shp_class_set_free(s);
}

static void
test_options(void **state)
{
	struct shp_class_set *s;
	const struct shp_class_def *d;
	char err[SHP_ERR_LEN];

	(void)state;
	s = SET("class", "web", "dst_ip 10.1.0.0/16",
		"class", "web", "dst_port 443",
		"class-netem", "web", "delay 40ms",
		"class-tbf", "web", "rate 5mbit burst 10kb limit 100kb",
		"class-queue", "web", "fq_codel",
		"class-ports", "web", "1,3",
		"class-quantum", "web", "3000",
		"class-prio", "web", "2");
	d = shp_class_find(s, "web");
	assert_non_null(d);
	assert_int_equal(d->nb_rules, 2);
	assert_int_equal(d->ports, (1u << 1) | (1u << 3));
	assert_int_equal(d->quantum, 3000);
	assert_int_equal(d->prio, 2);
	assert_string_equal(d->text[shp_key_index("netem")], "delay 40ms");
	shp_class_set_free(s);

	refused("class", "x", "dst_ipp 10.0.0.0/8", "dst_ipp");
	refused("class", "x", "dst_port 90-80", "90-80");
	refused("class", "x", "", "x");
	refused("class", "bad-name", "dst_ip 10.0.0.0/8", "bad-name");
	refused("class-netem", "x", "delay 1parsec", "1parsec");
	refused("class-tbf", "x", "rate 1mbit", "burst");
	refused("class-queue", "x", "off", "off");
	refused("class-ports", "x", "1,99", "1,99");
	refused("class-quantum", "x", "10", "10");
	refused("class-prio", "x", "8", "8");
	refused("class-colour", "x", "blue", "class-colour");

	/* a class with stages but no match */
	s = shp_class_set_new();
	assert_int_equal(shp_class_option(s, "class-netem", "lost",
					  "delay 1ms", err), 0);
	assert_int_equal(shp_class_set_check(s, err), -1);
	assert_non_null(strstr(err, "lost"));
	/* the same rule in two classes */
	assert_int_equal(shp_class_option(s, "class", "a", "dst_ip 10.0.0.0/8",
					  err), 0);
	assert_int_equal(shp_class_option(s, "class", "b",
					  "eth_type ipv4 dst_ip 10.0.0.0/8",
					  err), -1);
	assert_non_null(strstr(err, "a"));
	shp_class_set_free(s);
}

static void
test_edit(void **state)
{
	struct shp_class_set *s, *n, *m;
	const struct shp_class_def *d;
	char err[SHP_ERR_LEN];
	uint32_t cls;

	(void)state;
	s = SET("class", "a", "dst_ip 10.1.0.0/16",
		"class", "b", "dst_ip 10.2.0.0/16",
		"class-netem", "b", "delay 5ms",
		"class-prio", "b", "1");
	/* rules replaced where they were, stages set, the rest kept */
	assert_int_equal(shp_class_set_edit(s, "a", "match 'dst_ip 10.7.0.0/16'"
					    " match 'src_ip 10.7.0.0/16' netem "
					    "delay 1ms quantum 4000", &n, err),
			 0);
	assert_int_equal(shp_match_set_classes(n->match), 2);
	assert_string_equal(shp_match_set_name(n->match, 0), "a");
	assert_int_equal(shp_match_set_rules(n->match), 3);
	shp_match_set_rule(n->match, 2, &cls);
	assert_int_equal(cls, 1);   /* b's rule after a's two */
	d = shp_class_find(n, "a");
	assert_int_equal(d->quantum, 4000);
	assert_string_equal(d->text[shp_key_index("netem")], "delay 1ms");
	d = shp_class_find(n, "b");
	assert_int_equal(d->prio, 1);
	assert_string_equal(d->text[shp_key_index("netem")], "delay 5ms");
	/* the original is untouched */
	assert_int_equal(shp_match_set_rules(s->match), 2);
	/* a new class goes last; a cleared one is gone */
	assert_int_equal(shp_class_set_edit(n, "c", "match 'ip_proto udp'",
					    &m, err), 0);
	assert_string_equal(shp_match_set_name(m->match, 2), "c");
	shp_class_set_free(n);
	assert_int_equal(shp_class_set_edit(m, "a", NULL, &n, err), 0);
	assert_null(shp_class_find(n, "a"));
	assert_int_equal(shp_match_set_classes(n->match), 2);
	assert_string_equal(shp_match_set_name(n->match, 0), "b");
	shp_class_set_free(n);
	/* refusals: nothing made */
	assert_int_equal(shp_class_set_edit(m, "z", NULL, &n, err), -1);
	assert_null(n);
	assert_non_null(strstr(err, "z"));
	assert_int_equal(shp_class_set_edit(m, "z", "netem delay 1ms", &n,
					    err), -1);
	assert_non_null(strstr(err, "no match"));
	assert_int_equal(shp_class_set_edit(m, "a", "colour blue", &n, err),
			 -1);
	assert_non_null(strstr(err, "colour"));
	assert_int_equal(shp_class_set_edit(m, "a", "netem", &n, err), -1);
	assert_non_null(strstr(err, "netem"));
	shp_class_set_free(m);
	shp_class_set_free(s);
}

/* ---- the stage on a port's chain ---- */

struct port {
	struct shp_chain chain;
	struct shp_ctx ctx;
	uint64_t out[4];     /* packets out by destination 10.N.0.1 */
	uint64_t tx;
};

/* the port's bound on what its delay stages hold (NULL: none) */
static uint32_t *rig_held, rig_cap;

static void
port_build(struct port *p, const char *port_tbf, struct shp_class_set *s)
{
	struct shp_chain_spec spec;
	struct shp_stage_env env = {
		.socket = SOCKET_ID_ANY, .single_producer = true,
		.ring_size = 4096, .ctr_blocks = shp_rig_ctr,
		.nb_ctr_blocks = 1, .held = rig_held, .hold_cap = rig_cap,
	};
	struct shp_kind_env kenv = { .bands = 3, .ring_size = 4096 };
	char err[SHP_ERR_LEN];

	memset(p, 0, sizeof(*p));
	memset(&shp_rig_ctr->port[PORT], 0, sizeof(shp_rig_ctr->port[PORT]));
	memset(&spec, 0, sizeof(spec));
	if (port_tbf != NULL &&
	    shp_kind_parse("tbf", port_tbf, &kenv, &spec.kind[SHP_SLOT_RATE],
			   &spec.conf[SHP_SLOT_RATE], err) < 0)
		fail_msg("%s", err);
	assert_int_equal(shp_chain_build(&p->chain, &spec, shp_rig_pool, PORT,
					 &env, NULL, &kenv), 0);
	if (shp_classes_attach(CHAINS(&p->chain), 1, s, shp_rig_pool, PORT,
			       &kenv, err) < 0)
		fail_msg("%s", err);
	p->ctx.ctr = &shp_rig_ctr->port[PORT];
}

static void
port_fini(struct port *p)
{
	shp_classes_detach(&p->chain, &p->ctx);
	shp_chain_destroy(&p->chain, &p->ctx);
	shp_rig_assert_pool_full(shp_rig_pool);
}

/* n packets to 10.net.0.1 arriving at now */
static void
offer(struct port *p, unsigned int net, unsigned int n, uint64_t now)
{
	struct shp_rig_flow f = { .src = 0xc0a80001,
				  .dst = (10u << 24) | (net << 16) | 1,
				  .sport = 1000, .dport = 2000 };
	struct rte_mbuf *pkts[64];

	while (n > 0) {
		unsigned int k = RTE_MIN(n, RTE_DIM(pkts));

		shp_rig_pkts(pkts, (uint16_t)k, LEN, 1, &f, now);
		p->ctx.now = now;
		p->ctx.ctr->egress_in += k;
		shp_qdisc_enqueue(p->chain.queue, pkts, (uint16_t)k, &p->ctx);
		n -= k;
	}
}

/* dequeue the root at now until it gives nothing */
static void
poll_at(struct port *p, uint64_t now)
{
	struct rte_mbuf *pkts[32];
	uint16_t k, i;

	p->ctx.now = now;
	while ((k = shp_qdisc_dequeue(p->chain.root, pkts, 32, &p->ctx)) > 0) {
		for (i = 0; i < k; i++) {
			const uint8_t *d = rte_pktmbuf_mtod(pkts[i],
							    const uint8_t *);

			p->out[d[14 + 17] & 3]++;   /* 10.N.0.1: N */
		}
		p->tx += k;
		p->ctx.ctr->tx_packets += k;
		rte_pktmbuf_free_bulk(pkts, k);
	}
}

static uint64_t
conserved(struct port *p)
{
	struct shp_port_sum sum;

	shp_stats_sum(shp_rig_ctr, 1, PORT, 3, &sum);
	assert_int_equal(sum.egress_in + sum.created,
			 sum.c.tx_packets + sum.dropped + sum.queued);
	return sum.queued;
}

static void
test_drr_shares_at_a_bottleneck(void **state)
{
	struct shp_class_set *s = SET(
		"class", "a", "dst_ip 10.1.0.0/16",
		"class-quantum", "a", "3000",
		"class", "b", "dst_ip 10.2.0.0/16",
		"class-quantum", "b", "1000",
		"class", "c", "dst_ip 10.3.0.0/16",
		"class-prio", "c", "1");
	struct port p;
	uint64_t t;

	(void)state;
	/* 8 Mbit/s: 1000 packets of 1000 bytes a second */
	port_build(&p, "rate 8mbit burst 2kb limit 10mb", s);
	/* 2000 to each: a and b share the bucket 3:1, c waits for both */
	offer(&p, 1, 2000, 0);
	offer(&p, 2, 2000, 0);
	offer(&p, 3, 2000, 0);
	for (t = 0; t <= 1000 * MS; t += MS)
		poll_at(&p, t);
	assert_in_range(p.tx, 999, 1003);
	/* 3:1 within a packet or two a round */
	assert_in_range(p.out[1], 745, 755);
	assert_in_range(p.out[2], 245, 255);
	assert_int_equal(p.out[3], 0);
	assert_int_equal(p.out[0], 0);
	conserved(&p);
	/* once a is empty b has the bucket, then c */
	for (; t <= 7000 * MS; t += MS)
		poll_at(&p, t);
	assert_int_equal(p.out[1], 2000);
	assert_int_equal(p.out[2], 2000);
	assert_int_equal(p.out[3], 2000);
	assert_int_equal(conserved(&p), 0);
	port_fini(&p);
	shp_class_set_free(s);
}

static void
test_nothing_due_blocks_nothing(void **state)
{
	struct shp_class_set *s = SET(
		"class", "slow", "dst_ip 10.1.0.0/16",
		"class-netem", "slow", "delay 100ms",
		"class-quantum", "slow", "64");
	struct port p;

	(void)state;
	port_build(&p, NULL, s);
	offer(&p, 1, 100, 0);      /* held 100 ms by its netem */
	offer(&p, 2, 100, 0);      /* unmatched: the port's queue */
	poll_at(&p, 0);
	assert_int_equal(p.out[2], 100);
	assert_int_equal(p.out[1], 0);
	assert_int_equal(conserved(&p), 100);
	poll_at(&p, 100 * MS - 1);
	assert_int_equal(p.out[1], 0);   /* never before its send time */
	poll_at(&p, 100 * MS);
	assert_int_equal(p.out[1], 100);
	assert_int_equal(conserved(&p), 0);
	port_fini(&p);
	shp_class_set_free(s);
}

static void
test_change_and_clear_keep_what_is_queued(void **state)
{
	struct shp_class_set *s = SET(
		"class", "a", "dst_ip 10.1.0.0/16",
		"class-netem", "a", "delay 10ms"), *n;
	struct shp_kind_env kenv = { .bands = 3, .ring_size = 4096 };
	struct shp_classes_update *u;
	struct shp_class_sum cs;
	char err[SHP_ERR_LEN];
	struct port p;

	(void)state;
	port_build(&p, NULL, s);
	offer(&p, 1, 50, 0);
	/* a's delay changes in place: what it holds stays */
	assert_int_equal(shp_class_set_edit(s, "a", "netem 'delay 20ms'", &n,
					    err), 0);
	assert_int_equal(shp_classes_prepare(CHAINS(&p.chain), 1, n,
					     shp_rig_pool, PORT, &kenv, &u,
					     err), 0);
	assert_non_null(u);
	shp_classes_publish(u);
	shp_classes_finish(u);
	shp_class_set_free(s);
	s = n;
	assert_int_equal(shp_classes_nb(PORT), 1);
	assert_int_equal(conserved(&p), 50);
	offer(&p, 1, 50, 1 * MS);
	/* a refused change changes nothing */
	assert_int_equal(shp_class_set_edit(s, "a", "queue fq_codel", &n,
					    err), 0);
	assert_int_equal(shp_classes_prepare(CHAINS(&p.chain), 1, n,
					     shp_rig_pool, PORT, &kenv, &u,
					     err), -1);
	assert_non_null(strstr(err, "fq_codel"));
	shp_class_set_free(n);
	/* cleared: served until empty, new packets to the port's queue */
	assert_int_equal(shp_class_set_edit(s, "a", NULL, &n, err), 0);
	assert_int_equal(shp_classes_prepare(CHAINS(&p.chain), 1, n,
					     shp_rig_pool, PORT, &kenv, &u,
					     err), 0);
	shp_classes_publish(u);
	shp_classes_finish(u);
	assert_int_equal(shp_classes_sum(PORT, 0, &cs), 0);
	assert_true(cs.retiring);
	offer(&p, 1, 10, 2 * MS);
	poll_at(&p, 2 * MS);
	assert_int_equal(p.out[1], 10);      /* the new ones, at once */
	/* the 100 it held left the bands for its netem at 2 ms, under the
	 * new delay, counted from when they arrived (0 and 1 ms: the wait
	 * in the bands is not the profile's) */
	poll_at(&p, 20 * MS - 1);
	assert_int_equal(p.out[1], 10);
	poll_at(&p, 20 * MS);
	assert_int_equal(p.out[1], 60);
	poll_at(&p, 21 * MS - 1);
	assert_int_equal(p.out[1], 60);
	poll_at(&p, 21 * MS);
	assert_int_equal(p.out[1], 110);
	assert_int_equal(conserved(&p), 0);
	/* an empty retiring class goes at the next change */
	assert_int_equal(shp_classes_prepare(CHAINS(&p.chain), 1, n,
					     shp_rig_pool, PORT, &kenv, &u,
					     err), 0);
	shp_classes_publish(u);
	shp_classes_finish(u);
	assert_int_equal(shp_classes_nb(PORT), 0);
	port_fini(&p);
	shp_class_set_free(s);
	shp_class_set_free(n);
}

/* ---- a port of two shards (--queues 2) ---- */

static struct shp_link_shared *two_link;

/* shard q of a port whose link two_link is, with classes s */
static void
shard_build(struct port *p, unsigned int q)
{
	struct shp_chain_spec spec;
	struct shp_stage_env env = {
		.socket = SOCKET_ID_ANY, .single_producer = true,
		.ring_size = 4096, .ctr_blocks = shp_rig_ctr,
		.nb_ctr_blocks = 1, .shard = (uint16_t)q, .link = two_link,
	};
	struct shp_kind_env kenv = { .bands = 3, .ring_size = 4096 };
	char name[16];

	memset(p, 0, sizeof(*p));
	memset(&spec, 0, sizeof(spec));
	snprintf(name, sizeof(name), "sh%u", q);
	env.name = name;
	assert_int_equal(shp_chain_build(&p->chain, &spec, shp_rig_pool, PORT,
					 &env, NULL, &kenv), 0);
	p->ctx.ctr = &shp_rig_ctr->port[PORT];
}

static void
classes_apply(struct port *sh, struct shp_class_set *s)
{
	struct shp_chain *c[2] = { &sh[0].chain, &sh[1].chain };
	struct shp_kind_env kenv = { .bands = 3, .ring_size = 4096 };
	struct shp_classes_update *u;
	char err[SHP_ERR_LEN];

	if (shp_classes_prepare(c, 2, s, shp_rig_pool, PORT, &kenv, &u,
				err) < 0)
		fail_msg("%s", err);
	assert_non_null(u);
	shp_classes_publish(u);
	shp_classes_finish(u);
}

/* both shards polled each ms from t to end; what they sent */
static uint64_t
poll_both(struct port *sh, uint64_t t, uint64_t end)
{
	uint64_t before = sh[0].tx + sh[1].tx;

	for (; t <= end; t += MS) {
		poll_at(&sh[0], t);
		poll_at(&sh[1], t);
	}
	return sh[0].tx + sh[1].tx - before;
}

/*
 * A class on a port of two shards: one class with state on each shard,
 * its rate one for the link (not one bucket a shard), a change made on
 * both as one (one refill of the shared bucket, not one a shard), its
 * counters summed over the shards, and a cleared class kept until it is
 * empty on both.
 */
static void
test_class_on_two_shards(void **state)
{
	struct shp_class_set *s = SET(
		"class", "a", "dst_ip 10.1.0.0/16",
		"class-tbf", "a", "rate 8mbit burst 2kb limit 10mb"), *n;
	struct shp_class_sum cs;
	char err[SHP_ERR_LEN];
	struct port sh[2];
	uint64_t sent;

	(void)state;
	two_link = rte_zmalloc(NULL, sizeof(*two_link), RTE_CACHE_LINE_SIZE);
	assert_non_null(two_link);
	memset(&shp_rig_ctr->port[PORT], 0, sizeof(shp_rig_ctr->port[PORT]));
	shard_build(&sh[0], 0);
	shard_build(&sh[1], 1);
	classes_apply(sh, s);
	assert_int_equal(shp_classes_nb(PORT), 1);
	/* 8 Mbit/s: 1000 packets of 1000 bytes a second for the link */
	offer(&sh[0], 1, 2000, 0);
	offer(&sh[1], 1, 2000, 0);
	sent = poll_both(sh, 0, 1000 * MS);
	assert_in_range(sent, 999, 1003);
	assert_true(sh[0].tx > 300 && sh[1].tx > 300);
	assert_int_equal(shp_classes_sum(PORT, 0, &cs), 0);
	assert_int_equal(cs.in_packets, 4000);
	assert_int_equal(cs.out_packets, sent);
	/* (with what each shard's tbf holds out of its queue for the link's
	 * place it reserved) */
	assert_int_equal(cs.queued, 4000 - sent);
	conserved(&sh[0]);
	/* twice the rate, a bucket of 100 packets: the shards' new confs
	 * are one change, which fills the link's bucket once */
	assert_int_equal(shp_class_set_edit(s, "a",
					    "tbf 'rate 16mbit burst 100kb "
					    "limit 10mb'", &n, err), 0);
	classes_apply(sh, n);
	shp_class_set_free(s);
	s = n;
	sent = poll_both(sh, 1001 * MS, 2000 * MS);
	assert_in_range(sent, 2000 + 100 - 3, 2000 + 100 + 3);
	sent = poll_both(sh, 2001 * MS, 4000 * MS);
	assert_int_equal(sh[0].tx + sh[1].tx, 4000);
	assert_int_equal(conserved(&sh[0]), 0);
	/* cleared while shard 0 holds some: kept on both until both are
	 * empty, then freed by the next change */
	offer(&sh[0], 1, 10, 4001 * MS);
	assert_int_equal(shp_class_set_edit(s, "a", NULL, &n, err), 0);
	classes_apply(sh, n);
	assert_int_equal(shp_classes_nb(PORT), 1);
	assert_int_equal(shp_classes_drained(PORT), 0);
	classes_apply(sh, n);
	assert_int_equal(shp_classes_nb(PORT), 1);
	poll_both(sh, 4001 * MS, 4100 * MS);
	assert_int_equal(sh[0].out[1], sh[0].tx);
	assert_int_equal(sh[0].tx + sh[1].tx, 4010);
	assert_int_equal(shp_classes_drained(PORT), 1);
	classes_apply(sh, n);
	assert_int_equal(shp_classes_nb(PORT), 0);
	assert_int_equal(conserved(&sh[0]), 0);
	shp_classes_detach(&sh[0].chain, &sh[0].ctx);
	shp_classes_detach(&sh[1].chain, &sh[1].ctx);
	shp_chain_destroy(&sh[0].chain, &sh[0].ctx);
	shp_chain_destroy(&sh[1].chain, &sh[1].ctx);
	shp_rig_assert_pool_full(shp_rig_pool);
	rte_free(two_link);
	shp_class_set_free(s);
	shp_class_set_free(n);
}

/* the class's own counter of drop cause `name` */
static uint64_t
class_drops(unsigned int i, const char *name)
{
	struct shp_class_sum cs;

	assert_int_equal(shp_classes_sum(PORT, i, &cs), 0);
	return cs.drops[shp_drop_index(name)];
}

/* What class a (netem text) sends of 600 packets by 1 ms, from a fresh
 * port. */
static unsigned int
class_out(const char *text)
{
	struct shp_class_set *s = SET("class", "a", "dst_ip 10.1.0.0/16",
				      "class-netem", "a", text);
	struct port p;
	unsigned int out;

	port_build(&p, NULL, s);
	offer(&p, 1, 600, 0);
	poll_at(&p, 1 * MS);
	out = p.out[1];
	poll_at(&p, 2 * MS);
	assert_int_equal(conserved(&p), 0);
	port_fini(&p);
	shp_class_set_free(s);
	return out;
}

/*
 * A change whose text differs from the running one only past what a
 * 512-byte buffer holds is a change: the texts were compared cut short,
 * and a long `loss sequence` (issue 28) followed by a new seed never ran.
 * (`lo`, `de` and `se` print as `loss`, `delay` and `seed`: the printed
 * text is longer than the 511 characters `set class` takes.)
 */
static void
test_long_text_change_applies(void **state)
{
	static char bits[484], t1[600], t2[600];
	struct shp_kind_env kenv = { .bands = 3, .ring_size = 4096 };
	struct shp_classes_update *u = NULL;
	struct shp_class_set *s, *n;
	char err[SHP_ERR_LEN];
	unsigned int want;
	struct port p;

	(void)state;
	memset(bits, '0', 483);
	snprintf(t1, sizeof(t1), "lo sequence %s de 1ms 1ms se 1", bits);
	snprintf(t2, sizeof(t2), "lo sequence %s de 1ms 1ms se 2", bits);
	want = class_out(t2);
	assert_int_not_equal(class_out(t1), want);   /* the seed shows */
	s = SET("class", "a", "dst_ip 10.1.0.0/16", "class-netem", "a", t1);
	port_build(&p, NULL, s);
	snprintf(t1, sizeof(t1), "netem '%s'", t2);
	assert_int_equal(shp_class_set_edit(s, "a", t1, &n, err), 0);
	assert_int_equal(shp_classes_prepare(CHAINS(&p.chain), 1, n,
					     shp_rig_pool, PORT, &kenv, &u,
					     err), 0);
	assert_non_null(u);
	shp_classes_publish(u);
	shp_classes_finish(u);
	shp_class_set_free(s);
	s = n;
	offer(&p, 1, 600, 0);
	poll_at(&p, 1 * MS);
	assert_int_equal(p.out[1], want);
	poll_at(&p, 2 * MS);
	assert_int_equal(conserved(&p), 0);
	/* a value `set class` cannot hold is refused, not run cut short */
	memset(bits, '1', 483);
	snprintf(t1, sizeof(t1), "netem 'loss sequence %s%s'", bits,
		 "0110011001100110");   /* 513 characters: 2 too many */
	n = NULL;
	assert_int_equal(shp_class_set_edit(s, "a", t1, &n, err), -1);
	assert_null(n);
	assert_non_null(strstr(err, "netem: its value is longer than 511"));
	assert_null(strchr(err, '\n'));
	port_fini(&p);
	shp_class_set_free(s);
}

/*
 * Whether a full queue is the emulator's overload: only with no gate
 * after it (shp_chain_unthrottled for the port, as the worker sets
 * ctx.unthrottled per burst), and on a class port only for a class
 * without a gate of its own; a class with a tbf keeps the profile's
 * cause. 5000 packets into rings of 4096, nothing polled.
 */
static void
test_unthrottled(void **state)
{
	struct shp_class_set *s = SET("class", "a", "dst_ip 10.1.0.0/16",
				      "class", "b", "dst_ip 10.2.0.0/16",
				      "class-tbf", "b",
				      "rate 1gbit burst 1mb limit 100mb");
	struct port p;
	uint64_t t;

	(void)state;
	port_build(&p, NULL, NULL);
	assert_true(shp_chain_unthrottled(&p.chain));
	port_fini(&p);
	port_build(&p, "rate 1gbit burst 10kb limit 100kb", NULL);
	assert_false(shp_chain_unthrottled(&p.chain));
	port_fini(&p);
	port_build(&p, NULL, s);
	p.ctx.unthrottled = shp_chain_unthrottled(&p.chain);
	assert_true(p.ctx.unthrottled);
	offer(&p, 1, 5000, MS);
	offer(&p, 2, 5000, MS);
	assert_int_equal(class_drops(0, "overload"), 904);
	assert_int_equal(class_drops(0, "band_full"), 0);
	assert_int_equal(class_drops(1, "band_full"), 904);
	assert_int_equal(class_drops(1, "overload"), 0);
	for (t = MS; t <= 100 * MS; t += MS)
		poll_at(&p, t);
	/* the rest left (conserved() would count the retired classes of
	 * the tests before) */
	assert_int_equal(p.out[1], 4096);
	assert_int_equal(p.out[2], 4096);
	port_fini(&p);
	shp_class_set_free(s);
}

/* what the port's own queue pushed out for the tbf limit */
static uint64_t
port_pushed_out(struct port *p)
{
	uint64_t n = 0;
	unsigned int b;

	for (b = 0; b < SHP_MAX_BANDS; b++)
		n += p->ctx.ctr->band[b].pushed_out;
	return n;
}

static uint64_t
class_dropped(unsigned int i)
{
	struct shp_class_sum cs;

	assert_int_equal(shp_classes_sum(PORT, i, &cs), 0);
	return cs.dropped;
}

/* packets its bands took, over every band (b[0..SHP_MAX_BANDS)) */
static uint64_t
enqueued(const struct shp_band_ctr *b)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < SHP_MAX_BANDS; i++)
		n += b[i].enqueued;
	return n;
}

/*
 * Issue 27.1: the classes join the port's chain through shp_chain_insert,
 * in front of its queue: RX enqueues into them, the rate stage pulls from
 * them, they pull from the port's queue and keep the limit the rate
 * stage gave it (20 kb: 20480 bytes); detach (shp_chain_remove) puts the
 * chain back as it was, and the port's sums take their counters from the
 * source the classes registered.
 */
static void
test_attach_wires_the_chain(void **state)
{
	struct shp_class_set *s = SET("class", "a", "dst_ip 10.1.0.0/16");
	struct shp_qdisc *queue, *cls;
	struct shp_port_sum before, after;
	struct port p;
	uint64_t own, t;

	(void)state;
	port_build(&p, "rate 8mbit burst 2kb limit 20kb", s);
	queue = p.chain.stage[SHP_SLOT_QUEUE];
	cls = p.chain.queue;
	assert_ptr_not_equal(cls, queue);
	assert_ptr_equal(cls->child, queue);
	assert_ptr_equal(p.chain.stage[SHP_SLOT_RATE]->child, cls);
	assert_int_equal(queue->limit, 20480);
	assert_int_equal(cls->limit, 20480);
	assert_non_null(cls->ops->delayed);
	shp_stats_sum(shp_rig_ctr, 1, PORT, 3, &before);
	own = enqueued(&p.ctx.ctr->band[0]);
	offer(&p, 1, 10, MS);
	shp_stats_sum(shp_rig_ctr, 1, PORT, 3, &after);
	/* a's 10 packets counted by a's bands in a's own block, summed
	 * into the port's */
	assert_int_equal(enqueued(&p.ctx.ctr->band[0]), own);
	assert_int_equal(enqueued(&after.c.band[0]) -
			 enqueued(&before.c.band[0]), 10);
	/* all of them out before the classes go (what they flush would
	 * count in the next test's sums) */
	for (t = MS; t <= 100 * MS; t += MS)
		poll_at(&p, t);
	assert_int_equal(conserved(&p), 0);
	assert_int_equal(p.out[1], 10);
	shp_classes_detach(&p.chain, &p.ctx);
	assert_ptr_equal(p.chain.queue, queue);
	assert_ptr_equal(p.chain.stage[SHP_SLOT_RATE]->child, queue);
	shp_chain_destroy(&p.chain, &p.ctx);
	shp_rig_assert_pool_full(shp_rig_pool);
	shp_class_set_free(s);
}

/*
 * The port tbf's limit bounds, as tc's tbf its fifo, every queue whose
 * packets wait for the port's tokens only: the port's own (unmatched
 * traffic) and that of each class without a rate stage of its own; a
 * class with its own tbf keeps its tbf's limit. A change of the port's
 * tbf reaches them all.
 */
static void
test_port_tbf_limit(void **state)
{
	struct shp_class_set *s = SET(
		"class", "a", "dst_ip 10.1.0.0/16",
		"class", "b", "dst_ip 10.2.0.0/16",
		"class-tbf", "b", "rate 8mbit burst 2kb limit 50kb");
	struct shp_kind_env kenv = { .bands = 3, .ring_size = 4096 };
	const struct shp_kind *tbf;
	char err[SHP_ERR_LEN];
	void *conf, *old;
	struct port p;
	uint64_t t;

	(void)state;
	/* 1000 packets of 1000 bytes a second; 20 wait for tokens (20 kb:
	 * 20480 bytes) */
	port_build(&p, "rate 8mbit burst 2kb limit 20kb", s);
	/* (from 1 ms: the bands push out once per clock value, from 0) */
	offer(&p, 1, 100, MS);
	offer(&p, 2, 100, MS);
	offer(&p, 3, 100, MS);
	poll_at(&p, MS);
	assert_int_equal(port_pushed_out(&p), 80);
	assert_int_equal(class_dropped(0), 80);   /* a: the port's limit */
	/* b: its own (tc's kb: 51200 bytes) */
	assert_int_equal(class_dropped(1), 49);
	conserved(&p);
	for (t = MS; t <= 1000 * MS; t += MS)
		poll_at(&p, t);
	assert_int_equal(conserved(&p), 0);
	assert_int_equal(p.out[1] + p.out[2] + p.out[3], 20 + 51 + 20);
	/* the port's limit doubled at run time */
	assert_int_equal(shp_kind_parse("tbf", "rate 8mbit burst 2kb "
					"limit 40kb", &kenv, &tbf, &conf,
					err), 0);
	assert_int_equal(shp_chain_change(&p.chain, tbf, conf, &old, err), 0);
	shp_kind_conf_free(tbf, old);
	offer(&p, 1, 100, t);
	offer(&p, 3, 100, t);
	poll_at(&p, t);
	assert_int_equal(port_pushed_out(&p), 80 + 60);
	assert_int_equal(class_dropped(0), 80 + 60);
	/* the port's tbf off: no limit but the rings' */
	assert_int_equal(shp_chain_change(&p.chain, tbf, NULL, &old, err), 0);
	shp_kind_conf_free(tbf, old);
	offer(&p, 1, 100, t + MS);
	offer(&p, 3, 100, t + MS);
	poll_at(&p, t + MS);
	assert_int_equal(port_pushed_out(&p), 140);
	assert_int_equal(class_dropped(0), 140);
	assert_int_equal(conserved(&p), 0);
	port_fini(&p);
	shp_class_set_free(s);
}

/*
 * The worker paces arrivals while the port holds packets for a later send
 * time: a class's netem holds them too, on a port without a netem of its
 * own (the port's gauges alone said nothing: no pacing).
 */
static void
test_class_netem_holds(void **state)
{
	struct shp_class_set *s = SET(
		"class", "far", "dst_ip 10.1.0.0/16",
		"class-netem", "far", "delay 100ms");
	struct port p;

	(void)state;
	port_build(&p, NULL, s);
	assert_false(shp_chain_holds_delayed(&p.chain, p.ctx.ctr));
	offer(&p, 2, 10, MS);            /* unmatched: straight through */
	poll_at(&p, MS);
	assert_false(shp_chain_holds_delayed(&p.chain, p.ctx.ctr));
	offer(&p, 1, 10, 2 * MS);
	poll_at(&p, 2 * MS);
	assert_int_equal(p.out[1], 0);
	assert_int_equal(shp_stats_delayed(p.ctx.ctr), 0);   /* the port's */
	assert_true(shp_chain_holds_delayed(&p.chain, p.ctx.ctr));
	poll_at(&p, 102 * MS);
	assert_int_equal(p.out[1], 10);
	assert_false(shp_chain_holds_delayed(&p.chain, p.ctx.ctr));
	assert_int_equal(p.tx, 20);
	port_fini(&p);
	shp_class_set_free(s);
}

static uint64_t
drops_named(const struct shp_port_sum *sum, const char *name)
{
	unsigned int d;

	for (d = 0; d < shp_drop_nb(); d++)
		if (strcmp(shp_drop_names[d], name) == 0)
			return sum->c.drops[d];
	fail_msg("no drop cause %s", name);
	return 0;
}

/*
 * Two classes' netems, each within its own limit, together hold no more
 * than the port's share of the pool (shp_stage_env's hold_cap): beyond
 * it they drop as pool_share, and what they hold is what *held says.
 */
static void
test_class_netems_share_the_port_bound(void **state)
{
	struct shp_class_set *s = SET(
		"class", "a", "dst_ip 10.1.0.0/16",
		"class-netem", "a", "delay 1s",
		"class", "b", "dst_ip 10.2.0.0/16",
		"class-netem", "b", "delay 1s limit 5000");
	struct shp_port_sum s0, s1;
	uint32_t held = 0;
	struct port p;

	(void)state;
	rig_held = &held;
	rig_cap = 700;
	port_build(&p, NULL, s);
	shp_stats_sum(shp_rig_ctr, 1, PORT, 3, &s0);
	offer(&p, 1, 500, MS);
	poll_at(&p, MS);
	offer(&p, 2, 500, 2 * MS);
	poll_at(&p, 2 * MS);
	shp_stats_sum(shp_rig_ctr, 1, PORT, 3, &s1);
	/* a took 500, b only the 200 the port's share had left */
	assert_int_equal(held, 700);
	assert_int_equal(s1.queued - s0.queued, 700);
	assert_int_equal(drops_named(&s1, "pool_share") -
			 drops_named(&s0, "pool_share"), 300);
	assert_int_equal(drops_named(&s1, "netem_limit") -
			 drops_named(&s0, "netem_limit"), 0);
	assert_int_equal(p.tx, 0);
	/* what leaves gives the room back */
	poll_at(&p, 1002 * MS);
	assert_int_equal(p.tx, 700);
	assert_int_equal(held, 0);
	offer(&p, 2, 100, 1003 * MS);
	poll_at(&p, 1003 * MS);
	assert_int_equal(held, 100);
	poll_at(&p, 2003 * MS);
	assert_int_equal(held, 0);
	port_fini(&p);
	rig_held = NULL;
	rig_cap = 0;
	shp_class_set_free(s);
}

/* The shares of the pool the ports' delay stages may hold. */
static void
test_pool_shares(void **state)
{
	uint64_t need[3] = { 3072 + SHP_DELAY_RESERVE,
			     3072 + 100000 + SHP_DELAY_RESERVE,
			     3072 + SHP_DELAY_RESERVE };
	uint64_t queue[3] = { 3072, 3072, 3072 }, sum = 0;
	uint64_t room, big[3] = { 3072 + SHP_DELAY_RESERVE,
				  3072 + 5000000 + SHP_DELAY_RESERVE,
				  3072 + SHP_DELAY_RESERVE };
	unsigned int pool, fixed, i;
	uint32_t cap[3];

	(void)state;
	fixed = shp_chain_pool_size(3, 0, 32, 3, SHP_NB_RXD + SHP_NB_TXD) -
		3 * SHP_DELAY_RESERVE;
	/* a pool sized for the chains: each port exactly what it needs */
	pool = shp_chain_pool_size(3, need[0] + need[1] + need[2] -
				   3 * SHP_DELAY_RESERVE, 32, 3,
				   SHP_NB_RXD + SHP_NB_TXD);
	shp_chain_pool_shares(pool, 3, need, queue, 32, 3,
			      SHP_NB_RXD + SHP_NB_TXD, cap);
	for (i = 0; i < 3; i++)
		assert_int_equal(cap[i], need[i] - queue[i]);
	assert_int_equal(cap[1], 100000 + SHP_DELAY_RESERVE);
	/* a limit the pool was not sized for (--mbufs): it gets what the
	 * others leave, the others keep their need */
	pool = 80000;
	room = pool - fixed;
	shp_chain_pool_shares(pool, 3, big, queue, 32, 3,
			      SHP_NB_RXD + SHP_NB_TXD, cap);
	assert_int_equal(cap[0], SHP_DELAY_RESERVE);
	assert_int_equal(cap[2], SHP_DELAY_RESERVE);
	for (i = 0; i < 3; i++)
		sum += cap[i] + queue[i];
	assert_true(sum <= room);
	assert_true(sum >= room - 3);
	/* too small for anyone's need: even shares, never above room */
	pool = fixed + 9000;
	shp_chain_pool_shares(pool, 3, big, queue, 32, 3,
			      SHP_NB_RXD + SHP_NB_TXD, cap);
	for (i = 0; i < 3; i++)
		assert_int_equal(cap[i], 1);    /* the queue takes its 3000 */
	/* a pool beyond every need: the rest by need, in proportion */
	pool = shp_chain_pool_size(3, need[0] + need[1] + need[2] -
				   3 * SHP_DELAY_RESERVE, 32, 3,
				   SHP_NB_RXD + SHP_NB_TXD) +
	       (unsigned int)(need[0] + need[1] + need[2]);
	shp_chain_pool_shares(pool, 3, need, queue, 32, 3,
			      SHP_NB_RXD + SHP_NB_TXD, cap);
	for (i = 0; i < 3; i++)
		assert_int_equal(cap[i], 2 * need[i] - queue[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_edit),
		cmocka_unit_test(test_drr_shares_at_a_bottleneck),
		cmocka_unit_test(test_nothing_due_blocks_nothing),
		cmocka_unit_test(test_change_and_clear_keep_what_is_queued),
		cmocka_unit_test(test_class_on_two_shards),
		cmocka_unit_test(test_long_text_change_applies),
		cmocka_unit_test(test_attach_wires_the_chain),
		cmocka_unit_test(test_port_tbf_limit),
		cmocka_unit_test(test_class_netem_holds),
		/* last: the drops it makes stay in the port's sums after its
		 * classes are gone (shp_cls_retired), as a run's do */
		cmocka_unit_test(test_unthrottled),
		cmocka_unit_test(test_pool_shares),
		/* deltas only: the drops before it stay in the sums */
		cmocka_unit_test(test_class_netems_share_the_port_bound),
	};

	shp_rig_env("classes", 16384);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
