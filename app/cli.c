/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The command line interface, on librte_cmdline.
 *
 * Parsing, completion (TAB) and help (?) are librte_cmdline's. We drive its
 * line editor (rdline) ourselves instead of cmdline_interact() so that:
 *  - a wrong command gets one line saying what is wrong (not "Bad
 *    arguments"): values are read by our own "word" tokens, which accept
 *    any word and offer the valid ones for completion, and are checked by
 *    the command, which names the bad value;
 *  - the main lcore keeps doing its control duties (end of a replay,
 *    periodic stats, signals) between key presses: we poll() stdin;
 *  - command output goes through stdout in every mode (prompt, command
 *    file, `load`): cmdline_printf() to an fd of -1 would lose it.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_parse_string.h>
#include <cmdline_rdline.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "classify.h"
#include "cli.h"
#include "control.h"
#include "ctl_socket.h"
#include "ctl_update.h"

#define PROMPT "shaper> "
#define MAX_LOAD_DEPTH 8
#define CLI_LINE_MAX 2048        /* a command file's line, a piped line */
#define REST_LEN (CLI_LINE_MAX + 1)
/* rdline (librte_cmdline 22.11) keeps RDLINE_BUF_SIZE = 512 characters of
 * a typed line and drops every further key without a word; the constant
 * is not in its public headers. */
#define TTY_LINE_MAX 512

static struct shaper *S;
static struct cmdline *cl;      /* parser state only: fds -1 */
static bool failed;             /* set by a command that failed */
static int load_depth;

/* An --atomic file being checked: the stage changes its lines make,
 * recorded by cmd_set_stage instead of applied (cli_exec_atomic). */
struct batch {
	unsigned int n;
	struct ctl_change ch[CTL_BATCH_MAX];
	const char *args_of[CTL_BATCH_MAX][SHP_MAX_PORTS];
	char text[CTL_BATCH_MAX][SHP_MAX_PORTS][CTL_TEXT_LEN];
	char key[CTL_BATCH_MAX][32];
};
static struct batch *batch;

static void __rte_format_printf(1, 2)
out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
}

void
cli_set_failed(void)
{
	failed = true;
}

static void __rte_format_printf(1, 2)
fail(const char *fmt, ...)
{
	va_list ap;

	fputs("error: ", stdout);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	failed = true;
}

/* ---- our tokens ---------------------------------------------------- */

enum word_kind {
	WORD_CHOICE,   /* one word; completion from `choices` */
	WORD_PORT,     /* one word; completion: all and the port ids */
	WORD_REST,     /* the rest of the line; completion of its 1st word */
};

struct tok_word {
	struct cmdline_token_hdr hdr;
	enum word_kind kind;
	const char *choices;   /* "a#b#c" */
	const char *help;
};

static int
word_parse(cmdline_parse_token_hdr_t *tk, const char *buf, void *res,
	   unsigned int ressize)
{
	const struct tok_word *t = (const struct tok_word *)tk;
	size_t len, cap;

	if (buf == NULL)
		return -1;
	if (t->kind == WORD_REST) {
		len = strcspn(buf, "\n\r");
		while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
			len--;
		cap = REST_LEN;
	} else {
		len = strcspn(buf, " \t\n\r");
		cap = STR_TOKEN_SIZE;
	}
	if (len == 0)
		return -1;
	if (res != NULL) {
		if (ressize < cap || len >= cap)
			return -1;
		memcpy(res, buf, len);
		((char *)res)[len] = '\0';
	}
	return (int)len;
}

static int
nb_choices(const char *c)
{
	int n = 1;

	if (c == NULL)
		return 0;
	for (; *c; c++)
		n += *c == '#';
	return n;
}

static int
word_complete_nb(cmdline_parse_token_hdr_t *tk)
{
	const struct tok_word *t = (const struct tok_word *)tk;

	if (t->kind == WORD_PORT)
		return 1 + S->nb_ports;
	return nb_choices(t->choices);
}

static int
word_complete_elt(cmdline_parse_token_hdr_t *tk, int idx, char *dst,
		  unsigned int size)
{
	const struct tok_word *t = (const struct tok_word *)tk;
	const char *c = t->choices;
	size_t len;

	if (t->kind == WORD_PORT) {
		if (idx == 0)
			snprintf(dst, size, "all");
		else if (idx <= S->nb_ports)
			snprintf(dst, size, "%u", S->port_ids[idx - 1]);
		else
			return -1;
		return 0;
	}
	if (c == NULL)
		return -1;
	while (idx-- > 0) {
		c = strchr(c, '#');
		if (c == NULL)
			return -1;
		c++;
	}
	len = strcspn(c, "#");
	if (len + 1 > size)
		return -1;
	memcpy(dst, c, len);
	dst[len] = '\0';
	return 0;
}

static int
word_help(cmdline_parse_token_hdr_t *tk, char *dst, unsigned int size)
{
	const struct tok_word *t = (const struct tok_word *)tk;

	snprintf(dst, size, "%s", t->help);
	return 0;
}

static struct cmdline_token_ops word_ops = {
	.parse = word_parse,
	.complete_get_nb = word_complete_nb,
	.complete_get_elt = word_complete_elt,
	.get_help = word_help,
};

#define TOKEN_WORD(st, field, k, ch, hlp) \
	{ { &word_ops, offsetof(st, field) }, (k), (ch), (hlp) }
#define TOKEN_KW(st, field, str) TOKEN_STRING_INITIALIZER(st, field, str)

/* ---- results ---------------------------------------------------- */

typedef char rest_t[REST_LEN];

struct r_w1 { cmdline_fixed_string_t w1; };
struct r_w2 { cmdline_fixed_string_t w1, w2; };
struct r_w3 { cmdline_fixed_string_t w1, w2, w3; };
struct r_w4 { cmdline_fixed_string_t w1, w2, w3, w4; };
struct r_w5 { cmdline_fixed_string_t w1, w2, w3, w4, w5; };
struct r_set { cmdline_fixed_string_t w1, w2, port; rest_t args; };
struct r_rest2 { cmdline_fixed_string_t w1, w2; rest_t args; };
struct r_rest1 { cmdline_fixed_string_t w1; rest_t args; };
struct r_class { cmdline_fixed_string_t w1, w2, name; rest_t args; };

/* ---- helpers ---------------------------------------------------- */

static void
for_ports(int port, void (*fn)(struct shaper *, uint16_t))
{
	unsigned int i;

	for (i = 0; i < S->nb_ports; i++)
		if (port < 0 || port == S->port_ids[i])
			fn(S, S->port_ids[i]);
}

/* The port word of a command, or -2 after saying why not. */
static int
port_of(const char *cmd, const char *word)
{
	char err[SHP_ERR_LEN];
	int p = ctl_port_arg(S, word, err);

	if (p == -2)
		fail("%s: %s", cmd, err);
	return p;
}

/* ---- help ---------------------------------------------------- */

static const char help_show[] =
"show config                 profile of every port, classifier, lcores\n"
"show qdisc [all|P]          each port's chain as tc -s qdisc show\n"
"show port stats all|P       counters, and pps and bit/s since the last\n"
"                            show port stats\n"
"show port info [all|P]      driver, link (speed, duplex), MTU, socket,\n"
"                            link changes and when the last one was\n"
"show port xstats P [all]    the NIC's extended statistics (non-zero)\n"
"show port latency [all|P]   lateness and sojourn: count, min, p50, p90,\n"
"                            p99, p99.9, max (ns, since clear stats)\n"
"show bands all|P            depth and counters of each band\n"
"show netem all|P            netem profile, delay queue, impairments\n"
"show tbf all|P              token bucket profile and its drops\n"
"show KEY all|P              any stage (queue, tbf, netem...): profile,\n"
"                            its own counters and drops\n"
"show class [NAME]           classes: stages, counters (docs/classes.md)\n"
"show drops                  drops per port and cause\n"
"show lcores                 lcore roles, queues, poll loops\n"
"show schedule               links up or down, the next --schedule events\n";

static const char help_set_fixed[] =
"set priomap P0 ... P15      band of each priority (16 values)\n"
"set classify tos|dscp|pcp|none\n"
"clear KEY all|P             set KEY all|P off (a queue: its defaults)\n"
"set class NAME WORDS        define or change a class: match 'RULE' (OR\n"
"                            when repeated; replace its rules), queue,\n"
"                            tbf, netem 'ARGS', ports P,Q, quantum B,\n"
"                            prio N (docs/classes.md)\n"
"clear class NAME            remove a class (what it holds still leaves)\n"
"update class NAME WORDS     as set class, a stage's words merged over its\n"
"                            own (the others kept)\n";

/* The set lines of every key, from the registry (cli_init). */
static char help_set[4096];

static void
help_set_build(void)
{
	size_t n = 0;
	unsigned int k, i;

	for (k = 0; k < shp_key_nb(); k++) {
		const char *key = shp_key_name(k);
		bool queue = shp_key_slot(k) == SHP_SLOT_QUEUE;

		n += (size_t)snprintf(help_set + n, sizeof(help_set) - n,
				      "set %s all|P %s [for TIME]\n", key,
				      queue ? "KIND ARGS" : "ARGS|off");
		n += (size_t)snprintf(help_set + n, sizeof(help_set) - n,
				      "update %s all|P WORDS [for TIME]  only "
				      "the words named; the others kept (for: "
				      "back after TIME)\n", key);
		for (i = 0; shp_kinds[i] != NULL; i++)
			if (strcmp(shp_kind_key(shp_kinds[i]), key) == 0)
				n += (size_t)snprintf(help_set + n,
					sizeof(help_set) - n,
					"                            %s\n",
					shp_kinds[i]->usage);
		if (n >= sizeof(help_set))
			break;
	}
	snprintf(help_set + RTE_MIN(n, sizeof(help_set)),
		 sizeof(help_set) - RTE_MIN(n, sizeof(help_set)), "%s",
		 help_set_fixed);
}

static const char help_control[] =
"clear stats                 counters shown (show, telemetry) start at 0\n"
"start                       resume forwarding\n"
"stop                        pause forwarding (queued packets wait)\n"
"load FILE                   run a command file\n"
"link down|up all|P          drop what is offered to a port (link_down)\n"
"                            from now on, or stop\n"
"quit, exit                  stop and exit (also Ctrl-D)\n"
"help [show|set|control]     this text\n";

static void
cmd_help(void *res, struct cmdline *c, void *data)
{
	struct r_w2 *r = res;
	const char *sec = data != NULL ? r->w2 : "all";

	(void)c;
	if (strcmp(sec, "show") == 0)
		out("%s", help_show);
	else if (strcmp(sec, "set") == 0)
		out("%s", help_set);
	else if (strcmp(sec, "control") == 0)
		out("%s", help_control);
	else if (strcmp(sec, "all") == 0)
		out("Commands (TAB completes, ? lists the choices):\n%s%s%s",
		    help_show, help_set, help_control);
	else
		fail("help: no section '%s' (show, set, control or all)", sec);
}

/* ---- show ---------------------------------------------------- */

static void
show_config(void)
{
	struct ctl_config c;
	char late[32], drop[32];
	unsigned int i, k;

	ctl_config_snapshot(&c);
	out("forwarding: %s\n", c.paused ? "stopped" : "started");
	out("bands: %u  ring_size: %u  burst: %u\n", c.bands,
	    S->opt.ring_size, S->opt.burst);
	out("classify: %s\n", c.classify);
	out("priomap: %s\n", c.priomap);
	/* the seed netem profiles without their own use (the default is
	 * not 0: --seed 0 is another seed) */
	out("seed: %" PRIu64 "%s\n", c.seed, S->opt.seed_set ? "" :
	    " (default; --seed sets another)");
	/* when the emulator's own drops (overload, late) begin */
	shp_fmt_time(late, sizeof(late), S->opt.max_late_ns);
	shp_fmt_time(drop, sizeof(drop), S->opt.late_drop_ns);
	out("max-late: %s  late-drop: %s\n",
	    S->opt.max_late_ns != 0 ? late : "off",
	    S->opt.late_drop_ns != 0 ? drop : "off");
	out("mbufs: %u  store: %s\n", S->nb_mbufs, shaper_pool_store(S));
	for (i = 0; i < c.nb_ports; i++) {
		out("port %u (peer %d)\n", c.port_ids[i], c.pair_of[i]);
		/* the gates as before, then the queue they take from */
		for (k = 1; k <= SHP_SLOT_MAX; k++)
			out("  %s: %s\n", c.key[i][k % SHP_SLOT_MAX],
			    c.stage[i][k % SHP_SLOT_MAX]);
	}
}

static void
show_port(struct shaper *s, uint16_t p)
{
	struct shp_port_sum sum;
	const struct shp_port_ctr *c = &sum.c;
	struct ctl_rate r;
	unsigned int d;

	ctl_port_sum(s, p, &sum);
	ctl_port_rate(s, CTL_RATE_SHOW, p, &sum, &r);
	out("  ######################## port %-2u ########################\n",
	    p);
	out("  rx_packets: %-14" PRIu64 " rx_bytes: %" PRIu64 "\n",
	    c->rx_packets, c->rx_bytes);
	out("  tx_packets: %-14" PRIu64 " tx_bytes: %" PRIu64 "\n",
	    c->tx_packets, c->tx_bytes);
	out("  egress_in: %-15" PRIu64 " queued: %-12" PRIu64 " dropped: %"
	    PRIu64 "\n", sum.egress_in, sum.queued, sum.dropped);
	out("  tx_pending: %-14" PRIu64 " rx_pool_empty: %" PRIu64 "\n",
	    c->tx_pending, c->rx_pool_empty);
	/* each kind's own statistics, by their stats-file top-level name
	 * or KIND_NAME as telemetry has them */
	for (d = 0; d < shp_xstat_nb(); d++) {
		const struct shp_xstat_desc *x = shp_xstat_desc(d);

		if (x->alias != NULL)
			out("  %s: %" PRIu64, x->alias, c->xstats[d]);
		else
			out("  %s_%s: %" PRIu64, shp_xstat_kind(d)->name,
			    x->name, c->xstats[d]);
		if (d % 4 == 3 || d + 1 == shp_xstat_nb())
			out("\n");
	}
	out("  NIC drops: imissed: %-9" PRIu64 " ierrors: %-9" PRIu64
	    " rx_nombuf: %-9" PRIu64 " oerrors: %" PRIu64 "\n",
	    sum.nic.imissed, sum.nic.ierrors, sum.nic.rx_nombuf,
	    sum.nic.oerrors);
	out("  Throughput (since last show, %.3f s)\n", r.secs);
	out("  rx_pps: %-18.0f rx_bps: %.0f\n", r.rx_pps, r.rx_bps);
	out("  tx_pps: %-18.0f tx_bps: %.0f\n", r.tx_pps, r.tx_bps);
	out("  ##########################################################\n");
}

/* The distributions since `clear stats`, in ns, as the stats file keys
 * them (there: since start). */
static void
show_latency(struct shaper *s, uint16_t p)
{
	struct shp_latency *lat = malloc(sizeof(*lat));
	struct shp_port_sum sum;

	if (lat == NULL) {
		fail("show port latency: out of memory");
		return;
	}
	ctl_port_latency(s, p, lat);
	shp_latency_summarize(lat, &sum);
	free(lat);
	out("port %u latency (ns):\n", p);
	shp_hist_summary_print(stdout, "  lateness_ns:", &sum.lateness);
	shp_hist_summary_print(stdout, "  sojourn_ns: ", &sum.sojourn);
}

static void
show_bands(struct shaper *s, uint16_t p)
{
	const struct shp_qdisc *q = s->chain[p].queue;
	struct shp_port_sum sum;
	char state[64] = "";
	unsigned int b;

	ctl_port_sum(s, p, &sum);
	/* the queue's own word on its state: past a stage that reports
	 * nothing (the classes in front of the port's bands) */
	while (q != NULL && q->ops->report == NULL)
		q = q->child;
	if (q != NULL)
		q->ops->report(q, state, sizeof(state));
	out("port %u: %u bands%s%s\n", p, s->opt.bands, state[0] ? ", " : "",
	    state);
	out("  %-4s %10s %14s %14s %12s %12s %12s %10s\n", "band", "depth",
	    "enqueued", "dequeued", "dropped", "full", "pushed_out",
	    "flushed");
	for (b = 0; b < s->opt.bands; b++)
		out("  %-4u %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %12"
		    PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64 "\n", b,
		    sum.band_depth[b], sum.c.band[b].enqueued,
		    sum.c.band[b].dequeued, sum.band_dropped[b],
		    sum.c.band[b].full, sum.c.band[b].pushed_out,
		    sum.c.band[b].flushed);
}

/* " (reverts in 12.3 s)" after a profile a `for` change set; with
 * `to`, on a line of its own, with the profile it goes back to (the
 * profile's line stays the profile alone: scripts parse it) */
static void
reverts_note(uint16_t p, const char *key, bool to)
{
	const char *text;
	uint64_t left;

	if (!ctl_revert_left(S, p, key, &left, &text))
		return;
	if (to)
		out("  (reverts in %.1f s, to %s)\n", left / 1e9, text);
	else
		out(" (reverts in %.1f s)", left / 1e9);
}

/* `show netem|tbf|queue|KEY PORT`: the profile, then the kind's own
 * statistics (their stats-file alias when they have one) and its drop
 * causes. */
static void
show_stage(struct shaper *s, const char *key, uint16_t p)
{
	struct shp_port_sum sum;
	const struct shp_port_ctr *c = &sum.c;
	struct ctl_config *cfg = malloc(sizeof(*cfg));
	const struct shp_chain *ch = &s->chain[p];
	const struct shp_kind *k = NULL;
	const uint8_t *map;
	unsigned int i, d;

	ctl_port_sum(s, p, &sum);
	if (cfg == NULL)
		return;
	ctl_config_snapshot(cfg);
	for (i = 0; i < cfg->nb_ports; i++)
		if (cfg->port_ids[i] == p &&
		    ctl_config_stage(cfg, i, key) != NULL) {
			out("port %u: %s %s\n", p, key,
			    ctl_config_stage(cfg, i, key));
			reverts_note(p, key, true);
		}
	free(cfg);
	for (i = 0; i < SHP_SLOT_MAX; i++)
		if (strcmp(shp_kind_key(ch->kind[i]), key) == 0)
			k = ch->kind[i];
	if (k == NULL)
		return;
	for (d = 0; d < shp_xstat_nb(); d++)
		if (shp_xstat_kind(d) == k)
			out("  %s: %" PRIu64, shp_xstat_desc(d)->alias ?
			    shp_xstat_desc(d)->alias : shp_xstat_desc(d)->name,
			    c->xstats[d]);
	map = shp_kind_drop_map(k);
	for (d = 0; k->drops != NULL && k->drops[d] != NULL; d++)
		out("  %s: %" PRIu64, k->drops[d], c->drops[map[d]]);
	out("\n");
}

static void
show_drops(void)
{
	unsigned int i, d;

	out("%-4s", "port");
	for (d = 0; d < shp_drop_nb(); d++)
		out(" %12s", shp_drop_names[d]);
	out(" %12s\n", "dropped");
	for (i = 0; i < S->nb_ports; i++) {
		struct shp_port_sum sum;

		ctl_port_sum(S, S->port_ids[i], &sum);
		out("%-4u", S->port_ids[i]);
		for (d = 0; d < shp_drop_nb(); d++)
			out(" %12" PRIu64, sum.c.drops[d]);
		out(" %12" PRIu64 "\n", sum.dropped);
	}
}

static void
show_lcores(void)
{
	unsigned int i, k;

	out("lcore %u: main (control plane, prompt, telemetry data), "
	    "socket %u\n", rte_get_main_lcore(),
	    rte_lcore_to_socket_id(rte_get_main_lcore()));
	for (i = 0; i < S->nb_workers; i++) {
		const struct worker *w = &S->workers[S->worker_ids[i]];

		out("lcore %u: %s, socket %u", w->lcore, w->rx && w->tx ?
		    "rx+tx" : w->rx ? "rx" : "tx",
		    rte_lcore_to_socket_id(w->lcore));
		if (w->rx) {
			out(", rx queues");
			for (k = 0; k < w->nb_rxq; k++)
				out(" %u/%u->%u", w->rxq[k].port,
				    w->rxq[k].queue, w->rxq[k].egress);
		}
		if (w->tx) {
			out(", egress ports");
			for (k = 0; k < w->nb_egress; k++)
				out(" %u", w->egress[k]);
		}
		out(", loops %" PRIu64 "\n",
		    __atomic_load_n(&w->loops, __ATOMIC_RELAXED));
	}
}

static void
show_qdisc(struct shaper *s, uint16_t p)
{
	cli_show_qdisc(s, p, true, stdout);
}

static void
show_qdisc_one(struct shaper *s, uint16_t p)
{
	cli_show_qdisc(s, p, false, stdout);
}

static void
cmd_show1(void *res, struct cmdline *c, void *data)
{
	struct r_w2 *r = res;

	(void)c; (void)data;
	if (strcmp(r->w2, "config") == 0)
		show_config();
	else if (strcmp(r->w2, "drops") == 0)
		show_drops();
	else if (strcmp(r->w2, "qdisc") == 0)
		for_ports(-1, show_qdisc);
	else
		show_lcores();
}

static void
cmd_show_port(void *res, struct cmdline *c, void *data)
{
	struct r_w4 *r = res;
	int p = port_of("show port stats", r->w4);

	(void)c; (void)data;
	if (p != -2)
		for_ports(p, show_port);
}

static void
cmd_show_latency(void *res, struct cmdline *c, void *data)
{
	struct r_w4 *r = res;
	int p = data != NULL ? port_of("show port latency", r->w4) : -1;

	(void)c;
	if (p != -2)
		for_ports(p, show_latency);
}

static void
cmd_show_stage(void *res, struct cmdline *c, void *data)
{
	struct r_w3 *r = res;
	char what[32];
	int p;

	(void)c; (void)data;
	snprintf(what, sizeof(what), "show %s", r->w2);
	p = port_of(what, r->w3);
	if (p == -2)
		return;
	if (strcmp(r->w2, "bands") == 0) {
		for_ports(p, show_bands);
	} else if (strcmp(r->w2, "qdisc") == 0) {
		for_ports(p, p < 0 ? show_qdisc : show_qdisc_one);
	} else {
		unsigned int i;

		for (i = 0; i < S->nb_ports; i++)
			if (p < 0 || p == S->port_ids[i])
				show_stage(S, r->w2, S->port_ids[i]);
	}
}

/* `show class [NAME]`: every egress port's classes (shp_classes.h) */
static void
cmd_show_class(void *res, struct cmdline *c, void *data)
{
	struct r_w3 *r = res;
	const char *name = data != NULL ? r->w3 : NULL;
	unsigned int i, n = 0;

	(void)c;
	if (name != NULL && shp_class_find(S->opt.classes, name) == NULL) {
		fail("show class: no class '%s'", name);
		return;
	}
	for (i = 0; i < S->nb_ports; i++)
		n += shp_classes_show(stdout, S->port_ids[i], name);
	if (n == 0)
		out("no class%s\n", name != NULL ? " on any port" : "");
}

/* ---- set ---------------------------------------------------- */

/* Say what a `set` changed, port by port, from the config texts before
 * and after (the profile as the stage prints it back). */
static void
confirm_stage(const char *stage, int port, const struct ctl_config *was)
{
	struct ctl_config *now = malloc(sizeof(*now));
	/* (a key other than queue is its kind's name) */
	const struct shp_kind *k = shp_kind_find(stage);
	unsigned int i;

	if (now == NULL)
		return;
	ctl_config_snapshot(now);
	for (i = 0; i < now->nb_ports; i++) {
		const char *a, *b;

		if (port >= 0 && port != now->port_ids[i])
			continue;
		a = ctl_config_stage(was, i, stage);
		b = ctl_config_stage(now, i, stage);
		if (a == NULL || b == NULL)
			continue;
		/* a file's profile was read again: it is what the file
		 * says now, which the same name does not tell */
		if (strcmp(a, b) == 0 && k != NULL && k->reads_file &&
		    strcmp(b, "off") != 0)
			out("port %u: %s %s (reloaded from the file)",
			    now->port_ids[i], stage, b);
		else if (strcmp(a, b) == 0)
			out("port %u: %s %s (unchanged)", now->port_ids[i],
			    stage, b);
		else
			out("port %u: %s %s (was %s)", now->port_ids[i],
			    stage, b, a);
		reverts_note(now->port_ids[i], stage, false);
		out("\n");
	}
	free(now);
}

/* One stage change of an --atomic file, as the texts it sets. */
static void
batch_add(const char *what, const struct r_set *r, int p)
{
	unsigned int j = batch->n, i;
	char err[SHP_ERR_LEN];
	int ki = shp_key_index(r->w2);

	if (j == CTL_BATCH_MAX) {
		fail("%s %s: more than %d changes in one atomic file", what,
		     r->port, CTL_BATCH_MAX);
		return;
	}
	for (i = 0; i < j; i++)
		if (strcmp(batch->key[i], r->w2) == 0 &&
		    (batch->ch[i].port < 0 || p < 0 ||
		     batch->ch[i].port == p)) {
			fail("%s %s: the same stage changed again (change %u):"
			     " one change per stage and port", what, r->port,
			     i + 1);
			return;
		}
	snprintf(batch->key[j], sizeof(batch->key[j]), "%s", r->w2);
	memset(batch->args_of[j], 0, sizeof(batch->args_of[j]));
	if (strncmp(what, "update", 6) == 0) {
		if (ctl_update_texts(S, r->w2, p, r->args, batch->text[j],
				     batch->args_of[j], err) < 0) {
			fail("%s %s: %s (nothing changed)", what, r->port, err);
			return;
		}
	} else {
		for (i = 0; i < S->nb_ports; i++) {
			uint16_t q = S->port_ids[i];
			const char *t = r->args;

			if (p >= 0 && p != q)
				continue;
			if (strncmp(what, "clear", 5) == 0)
				t = ki >= 0 && shp_key_slot((unsigned int)ki) ==
				    SHP_SLOT_QUEUE ?
				    S->chain[q].kind[SHP_SLOT_QUEUE]->name :
				    "off";
			snprintf(batch->text[j][i], CTL_TEXT_LEN, "%s", t);
			batch->args_of[j][i] = batch->text[j][i];
		}
	}
	batch->ch[j] = (struct ctl_change){ batch->key[j], p,
					    batch->args_of[j] };
	batch->n++;
}

static void
cmd_set_stage(void *res, struct cmdline *c, void *data)
{
	struct r_set *r = res;
	struct ctl_config *was;
	char err[SHP_ERR_LEN], what[32];
	uint64_t for_ns = 0;
	int p, rc;

	(void)c; (void)data;
	snprintf(what, sizeof(what), "%s %s", data == NULL ? "set" :
		 data == (void *)1 ? "clear" : "update", r->w2);
	p = port_of(what, r->port);
	if (p == -2)
		return;
	/* `... for TIME`: the change expires (clear takes no words) */
	if (data != (void *)1 &&
	    shp_split_for(r->args, &for_ns, err) < 0) {
		fail("%s %s: %s (nothing changed)", what, r->port, err);
		return;
	}
	if (batch != NULL && for_ns != 0) {
		fail("%s %s: for: an atomic file's changes do not expire "
		     "(nothing changed)", what, r->port);
		return;
	}
	if (batch != NULL) {
		batch_add(what, r, p);
		return;
	}
	was = malloc(sizeof(*was));
	if (was == NULL) {
		fail("%s: out of memory (nothing changed)", what);
		return;
	}
	ctl_config_snapshot(was);
	err[0] = '\0';
	if (data == (void *)2) {   /* update KEY P WORDS */
		static char text[SHP_MAX_PORTS][CTL_TEXT_LEN];
		const char *args_of[SHP_MAX_PORTS] = { NULL };

		rc = ctl_update_texts(S, r->w2, p, r->args, text, args_of,
				      err);
		if (rc == 0)
			rc = ctl_set_stage_for(S, r->w2, p, args_of, NULL,
					       for_ns, err);
	} else if (data != NULL) {   /* clear KEY P */
		rc = ctl_clear_stage(S, r->w2, p, err);
	} else {
		rc = ctl_set_stage_for(S, r->w2, p, NULL, r->args, for_ns,
				       err);
	}
	if (rc < 0)
		fail("%s %s: %s (nothing changed)", what, r->port, err);
	else
		confirm_stage(r->w2, p, was);
	free(was);
}

static void
cmd_set_priomap(void *res, struct cmdline *c, void *data)
{
	struct r_rest2 *r = res;
	char err[SHP_ERR_LEN];

	char was[sizeof(((struct ctl_config *)0)->priomap)];
	struct ctl_config *now = malloc(sizeof(*now));

	(void)c; (void)data;
	if (now == NULL) {
		fail("set priomap: out of memory (nothing changed)");
		return;
	}
	ctl_config_snapshot(now);
	snprintf(was, sizeof(was), "%s", now->priomap);
	if (ctl_set_priomap(S, r->args, err) < 0) {
		fail("set priomap: %s (nothing changed)", err);
	} else {
		ctl_config_snapshot(now);
		out("priomap %s (was %s)\n", now->priomap, was);
	}
	free(now);
}

/* `set class NAME WORDS` and `clear class NAME` (data 1) */
static void
cmd_set_class(void *res, struct cmdline *c, void *data)
{
	struct r_class *r = res;
	char err[SHP_ERR_LEN];
	const char *e = err;

	(void)c;
	if ((data == (void *)2 ?
	     ctl_update_class(S, r->name, r->args, err) :
	     ctl_set_class(S, r->name, data != NULL ? NULL : r->args,
			   err)) < 0) {
		if (strncmp(e, "--", 2) == 0)   /* an option's message */
			e += 2;
		if (strncmp(e, "class", 5) == 0)   /* names the class */
			fail("%s (nothing changed)", e);
		else
			fail("%s class %s: %s (nothing changed)", data == NULL ?
			     "set" : data == (void *)1 ? "clear" : "update",
			     r->name, e);
		return;
	}
	if (data == (void *)1)
		out("class %s cleared (what it holds still leaves)\n",
		    r->name);
	else
		shp_class_describe(S->opt.classes,
				   (unsigned int)(shp_class_find(
					   S->opt.classes, r->name) -
					   S->opt.classes->def), stdout);
}

static void
cmd_set_classify(void *res, struct cmdline *c, void *data)
{
	struct r_w3 *r = res;
	char err[SHP_ERR_LEN];

	const char *was = shp_classify_mode_name(S->classifier->mode);

	(void)c; (void)data;
	if (ctl_set_classify(S, r->w3, err) < 0)
		fail("set classify: %s (nothing changed)", err);
	else
		out("classify %s (was %s)\n",
		    shp_classify_mode_name(S->classifier->mode), was);
}

/* ---- control ---------------------------------------------------- */

static void
cmd_word(void *res, struct cmdline *c, void *data)
{
	struct r_w1 *r = res;

	(void)c; (void)data;
	if (strcmp(r->w1, "start") == 0) {
		if (!S->paused) {
			out("forwarding is already started\n");
			return;
		}
		ctl_pause(S, false);
		out("forwarding started\n");
	} else if (strcmp(r->w1, "stop") == 0) {
		if (S->paused) {
			out("forwarding is already stopped (start resumes)\n");
			return;
		}
		ctl_pause(S, true);
		out("forwarding stopped (queued packets wait; start resumes)\n");
	} else {   /* quit, exit */
		S->quit = true;
	}
}

static void
cmd_clear(void *res, struct cmdline *c, void *data)
{
	(void)res; (void)c; (void)data;
	ctl_clear_stats(S);
	out("counters cleared\n");
}

static void
cmd_load(void *res, struct cmdline *c, void *data)
{
	struct r_rest1 *r = res;
	bool outer_failed;

	(void)c; (void)data;
	if (load_depth >= MAX_LOAD_DEPTH) {
		fail("load %s: files nested more than %d deep", r->args,
		     MAX_LOAD_DEPTH);
		return;
	}
	load_depth++;
	outer_failed = cli_run_file(r->args) < 0;
	load_depth--;
	failed = outer_failed;
}

/* ---- the instruction table ---------------------------------------- */

#define INST(name, fn, dat, hlp, ...) \
	static cmdline_parse_inst_t name = { \
		.f = fn, .data = dat, .help_str = hlp, \
		.tokens = { __VA_ARGS__, NULL }, \
	}

static cmdline_parse_token_string_t t_help =
	TOKEN_KW(struct r_w2, w1, "help");
static struct tok_word t_help_sec =
	TOKEN_WORD(struct r_w2, w2, WORD_CHOICE, "show#set#control#all",
		   "section: show|set|control|all");
INST(i_help, cmd_help, NULL, "help: list the commands", (void *)&t_help);
INST(i_help_sec, cmd_help, (void *)1, "help SECTION: the commands of a "
     "section", (void *)&t_help, (void *)&t_help_sec);

static cmdline_parse_token_string_t t_show =
	TOKEN_KW(struct r_w2, w1, "show");
static cmdline_parse_token_string_t t_show1 =
	TOKEN_KW(struct r_w2, w2, "config#drops#lcores#qdisc");
INST(i_show1, cmd_show1, NULL, "show config|drops|lcores|qdisc",
     (void *)&t_show, (void *)&t_show1);

/* `show port info [all|P]`: what the port is and its link (issue 29) */
static void
show_port_info(struct shaper *s, uint16_t port)
{
	struct rte_eth_dev_info info = { 0 };
	struct shp_link l;
	char text[64], when[40] = "never";
	uint16_t mtu = 0;

	(void)s;
	rte_eth_dev_info_get(port, &info);
	rte_eth_dev_get_mtu(port, &mtu);
	shaper_link_get(port, &l);
	if (l.changed_ns != 0) {
		time_t t = (time_t)(l.changed_ns / 1000000000ull);
		struct tm tm;
		size_t n;

		gmtime_r(&t, &tm);
		n = strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		snprintf(when + n, sizeof(when) - n, ".%03u UTC",
			 (unsigned int)(l.changed_ns % 1000000000ull /
					1000000));
	}
	out("port %u (%s): link %s, mtu %u, socket %d\n", port,
	    info.driver_name != NULL ? info.driver_name : "?",
	    shaper_link_text(&l, text, sizeof(text)), mtu,
	    rte_eth_dev_socket_id(port));
	out("  link changes: %" PRIu64 "  last change: %s\n", l.changes, when);
}

static void
cmd_show_port_info(void *res, struct cmdline *c, void *data)
{
	struct r_w4 *r = res;
	int p = data != NULL ? port_of("show port info", r->w4) : -1;

	(void)c;
	if (p != -2)
		for_ports(p, show_port_info);
}

/* `show port xstats P [all]`: the NIC's extended statistics, the
 * non-zero ones unless all (issue 29) */
static void
cmd_show_xstats(void *res, struct cmdline *c, void *data)
{
	struct r_w4 *r = res;
	struct rte_eth_xstat_name *names;
	uint64_t *values;
	int p = port_of("show port xstats", r->w4), n, i, shown = 0;

	(void)c;
	if (p == -2)
		return;
	if (p < 0) {
		fail("show port xstats: give one port (show port xstats P)");
		return;
	}
	n = shaper_nic_xstats((uint16_t)p, &names, &values);
	if (n < 0) {
		fail("show port xstats: port %d gives no extended statistics",
		     p);
		return;
	}
	out("port %d: NIC extended statistics (%s)\n", p,
	    data != NULL ? "all" : "non-zero; all: every one");
	for (i = 0; i < n; i++)
		if (data != NULL || values[i] != 0) {
			out("  %-32s %" PRIu64 "\n", names[i].name, values[i]);
			shown++;
		}
	if (shown == 0)
		out("  (all %d are 0)\n", n);
	free(names);
	free(values);
}

static cmdline_parse_token_string_t t_show_p =
	TOKEN_KW(struct r_w4, w2, "port");
static cmdline_parse_token_string_t t_show_p_stats =
	TOKEN_KW(struct r_w4, w3, "stats");
static struct tok_word t_show_p_port =
	TOKEN_WORD(struct r_w4, w4, WORD_PORT, NULL, "all|P: port id");
INST(i_show_port, cmd_show_port, NULL,
     "show port stats all|P: counters and rates since the last call",
     (void *)&t_show, (void *)&t_show_p, (void *)&t_show_p_stats,
     (void *)&t_show_p_port);

static cmdline_parse_token_string_t t_show_p_lat =
	TOKEN_KW(struct r_w4, w3, "latency");
INST(i_show_lat, cmd_show_latency, NULL,
     "show port latency: lateness and sojourn percentiles of every port",
     (void *)&t_show, (void *)&t_show_p, (void *)&t_show_p_lat);
static cmdline_parse_token_string_t t_show_p_info =
	TOKEN_KW(struct r_w4, w3, "info");
INST(i_show_info, cmd_show_port_info, NULL,
     "show port info: every port's driver, link, MTU",
     (void *)&t_show, (void *)&t_show_p, (void *)&t_show_p_info);
INST(i_show_info_port, cmd_show_port_info, (void *)1,
     "show port info all|P: the port's driver, link, MTU, link changes",
     (void *)&t_show, (void *)&t_show_p, (void *)&t_show_p_info,
     (void *)&t_show_p_port);
static cmdline_parse_token_string_t t_show_p_xstats =
	TOKEN_KW(struct r_w5, w3, "xstats");
static struct tok_word t_show_p_xport =
	TOKEN_WORD(struct r_w5, w4, WORD_PORT, NULL, "P: port id");
static cmdline_parse_token_string_t t_show_p_xall =
	TOKEN_KW(struct r_w5, w5, "all");
INST(i_show_xstats, cmd_show_xstats, NULL,
     "show port xstats P: the NIC's non-zero extended statistics",
     (void *)&t_show, (void *)&t_show_p, (void *)&t_show_p_xstats,
     (void *)&t_show_p_xport);
INST(i_show_xstats_all, cmd_show_xstats, (void *)1,
     "show port xstats P all: every NIC extended statistic",
     (void *)&t_show, (void *)&t_show_p, (void *)&t_show_p_xstats,
     (void *)&t_show_p_xport, (void *)&t_show_p_xall);
INST(i_show_lat_port, cmd_show_latency, (void *)1,
     "show port latency all|P: lateness and sojourn percentiles (ns)",
     (void *)&t_show, (void *)&t_show_p, (void *)&t_show_p_lat,
     (void *)&t_show_p_port);

/* bands, qdisc and every key (show_stage_words_build) */
static char show_stage_words[256] = "bands#netem#tbf#qdisc";
static cmdline_parse_token_string_t t_show_stage =
	TOKEN_KW(struct r_w3, w2, show_stage_words);
static struct tok_word t_show_stage_port =
	TOKEN_WORD(struct r_w3, w3, WORD_PORT, NULL, "all|P: port id");
static void
show_stage_words_build(void)
{
	size_t n = (size_t)snprintf(show_stage_words,
				    sizeof(show_stage_words), "bands#qdisc");
	unsigned int k;

	for (k = 0; k < shp_key_nb() && n < sizeof(show_stage_words); k++)
		n += (size_t)snprintf(show_stage_words + n,
				      sizeof(show_stage_words) - n, "#%s",
				      shp_key_name(k));
}

static cmdline_parse_token_string_t t_show_class =
	TOKEN_KW(struct r_w3, w2, "class");
static cmdline_parse_token_string_t t_show_class_name =
	TOKEN_KW(struct r_w3, w3, NULL);
INST(i_show_class, cmd_show_class, NULL, "show class: every class's "
     "stages and counters", (void *)&t_show, (void *)&t_show_class);
INST(i_show_class_name, cmd_show_class, (void *)1, "show class NAME: one "
     "class's stages and counters", (void *)&t_show, (void *)&t_show_class,
     (void *)&t_show_class_name);

INST(i_show_stage, cmd_show_stage, NULL, "show bands|qdisc|KEY all|P",
     (void *)&t_show, (void *)&t_show_stage, (void *)&t_show_stage_port);

static cmdline_parse_token_string_t t_set =
	TOKEN_KW(struct r_set, w1, "set");
static struct tok_word t_set_port =
	TOKEN_WORD(struct r_set, port, WORD_PORT, NULL, "all|P: egress port");

/*
 * `set KEY all|P ARGS` and `clear KEY all|P` for every key of the
 * registry, made at start-up: one instance per key, so that completion
 * offers each kind's own words.
 */
#define MAX_KEY_INSTS (3 * SHP_MAX_KEYS)
static struct key_cmd {
	cmdline_parse_token_string_t kw;
	struct tok_word args;
	char kw_str[32];
	char choices[512];
	char help[128], chelp[128], uhelp[128];
	cmdline_parse_inst_t *set, *clear, *update;
} key_cmds[SHP_MAX_KEYS];

static cmdline_parse_token_string_t t_clear_kw =
	TOKEN_KW(struct r_set, w1, "clear");
static cmdline_parse_token_string_t t_update_kw =
	TOKEN_KW(struct r_set, w1, "update");

static cmdline_parse_inst_t *
inst_new(void (*f)(void *, struct cmdline *, void *), void *data, const char *help,
	 void *t0, void *t1, void *t2, void *t3)
{
	cmdline_parse_inst_t *in = calloc(1, sizeof(*in) + 5 * sizeof(void *));

	if (in == NULL)
		return NULL;
	in->f = f;
	in->data = data;
	in->help_str = help;
	in->tokens[0] = t0;
	in->tokens[1] = t1;
	in->tokens[2] = t2;
	in->tokens[3] = t3;
	return in;
}

static int
key_cmds_build(cmdline_parse_ctx_t *ctx, unsigned int room)
{
	unsigned int k, i, n = 0;

	for (k = 0; k < shp_key_nb() && n + 3 <= room; k++) {
		struct key_cmd *kc = &key_cmds[k];
		const char *key = shp_key_name(k);
		bool queue = shp_key_slot(k) == SHP_SLOT_QUEUE;
		size_t off = 0;

		snprintf(kc->kw_str, sizeof(kc->kw_str), "%s", key);
		kc->kw = (cmdline_parse_token_string_t)
			TOKEN_KW(struct r_set, w2, NULL);
		kc->kw.string_data.str = kc->kw_str;
		if (!queue)
			off = (size_t)snprintf(kc->choices, sizeof(kc->choices),
					       "off");
		for (i = 0; shp_kinds[i] != NULL; i++) {
			const struct shp_kind *kd = shp_kinds[i];

			if (strcmp(shp_kind_key(kd), key) != 0)
				continue;
			if (queue || kd->words == NULL)
				off += (size_t)snprintf(kc->choices + off,
					sizeof(kc->choices) - off, "%s%s",
					off ? "#" : "", kd->name);
			else
				off += (size_t)snprintf(kc->choices + off,
					sizeof(kc->choices) - off, "%s%s",
					off ? "#" : "", kd->words);
			if (off >= sizeof(kc->choices))
				return -1;
		}
		kc->args = (struct tok_word)TOKEN_WORD(struct r_set, args,
			WORD_REST, NULL, queue ? "KIND ARGS: a queue kind and "
			"its words" : "ARGS: the kind's words, or off");
		kc->args.choices = kc->choices;
		snprintf(kc->help, sizeof(kc->help), "set %s all|P %s: change "
			 "it live", key, queue ? "KIND ARGS" : "ARGS|off");
		snprintf(kc->chelp, sizeof(kc->chelp), "clear %s all|P: %s",
			 key, queue ? "its kind's defaults" : "off");
		kc->set = inst_new(cmd_set_stage, NULL, kc->help, &t_set,
				   &kc->kw, &t_set_port, &kc->args);
		kc->clear = inst_new(cmd_set_stage, (void *)1, kc->chelp,
				     &t_clear_kw, &kc->kw, &t_set_port, NULL);
		snprintf(kc->uhelp, sizeof(kc->uhelp), "update %s all|P WORDS: "
			 "change only the parameters named", key);
		kc->update = inst_new(cmd_set_stage, (void *)2, kc->uhelp,
				      &t_update_kw, &kc->kw, &t_set_port,
				      &kc->args);
		if (kc->set == NULL || kc->clear == NULL || kc->update == NULL)
			return -1;
		ctx[n++] = kc->set;
		ctx[n++] = kc->clear;
		ctx[n++] = kc->update;
	}
	return (int)n;
}

static cmdline_parse_token_string_t t_set2 =
	TOKEN_KW(struct r_rest2, w1, "set");
static cmdline_parse_token_string_t t_set_priomap =
	TOKEN_KW(struct r_rest2, w2, "priomap");
static struct tok_word t_priomap_args =
	TOKEN_WORD(struct r_rest2, args, WORD_REST, NULL,
		   "P0 ... P15: band of each priority");
INST(i_set_priomap, cmd_set_priomap, NULL,
     "set priomap P0 ... P15: band of each priority 0..15",
     (void *)&t_set2, (void *)&t_set_priomap, (void *)&t_priomap_args);

static cmdline_parse_token_string_t t_set3 =
	TOKEN_KW(struct r_w3, w1, "set");
static cmdline_parse_token_string_t t_set_classify =
	TOKEN_KW(struct r_w3, w2, "classify");
static struct tok_word t_classify_mode =
	TOKEN_WORD(struct r_w3, w3, WORD_CHOICE, "tos#dscp#pcp#none",
		   "tos|dscp|pcp|none");
INST(i_set_classify, cmd_set_classify, NULL,
     "set classify tos|dscp|pcp|none: what gives the priority",
     (void *)&t_set3, (void *)&t_set_classify, (void *)&t_classify_mode);

static cmdline_parse_token_string_t t_set_class_set =
	TOKEN_KW(struct r_class, w1, "set");
static cmdline_parse_token_string_t t_set_class_clear =
	TOKEN_KW(struct r_class, w1, "clear");
static cmdline_parse_token_string_t t_set_class_kw =
	TOKEN_KW(struct r_class, w2, "class");
static cmdline_parse_token_string_t t_set_class_name =
	TOKEN_KW(struct r_class, name, NULL);
static struct tok_word t_set_class_args =
	TOKEN_WORD(struct r_class, args, WORD_REST, NULL,
		   "match 'RULE' queue|tbf|netem 'ARGS' ports P,Q quantum B "
		   "prio N");
INST(i_set_class, cmd_set_class, NULL,
     "set class NAME match 'RULE' netem 'ARGS' ...: define or change a "
     "class live (docs/classes.md)", (void *)&t_set_class_set,
     (void *)&t_set_class_kw, (void *)&t_set_class_name,
     (void *)&t_set_class_args);
static cmdline_parse_token_string_t t_set_class_update =
	TOKEN_KW(struct r_class, w1, "update");
INST(i_update_class, cmd_set_class, (void *)2,
     "update class NAME queue|tbf|netem 'WORDS' ...: change only the "
     "parameters named", (void *)&t_set_class_update,
     (void *)&t_set_class_kw, (void *)&t_set_class_name,
     (void *)&t_set_class_args);
INST(i_clear_class, cmd_set_class, (void *)1,
     "clear class NAME: remove a class (what it holds still leaves)",
     (void *)&t_set_class_clear, (void *)&t_set_class_kw,
     (void *)&t_set_class_name);

static cmdline_parse_token_string_t t_clear =
	TOKEN_KW(struct r_w2, w1, "clear");
static cmdline_parse_token_string_t t_clear_stats =
	TOKEN_KW(struct r_w2, w2, "stats");
INST(i_clear, cmd_clear, NULL, "clear stats: counters shown start at 0",
     (void *)&t_clear, (void *)&t_clear_stats);

static cmdline_parse_token_string_t t_start =
	TOKEN_KW(struct r_w1, w1, "start");
static cmdline_parse_token_string_t t_stop =
	TOKEN_KW(struct r_w1, w1, "stop");
static cmdline_parse_token_string_t t_quit =
	TOKEN_KW(struct r_w1, w1, "quit#exit");
INST(i_start, cmd_word, NULL, "start: resume forwarding",
     (void *)&t_start);
INST(i_stop, cmd_word, NULL, "stop: pause forwarding, queues wait",
     (void *)&t_stop);
INST(i_quit, cmd_word, NULL, "quit|exit: stop and exit", (void *)&t_quit);

static cmdline_parse_token_string_t t_load =
	TOKEN_KW(struct r_rest1, w1, "load");
static struct tok_word t_load_file =
	TOKEN_WORD(struct r_rest1, args, WORD_REST, NULL, "FILE");
INST(i_load, cmd_load, NULL, "load FILE: run a command file",
     (void *)&t_load, (void *)&t_load_file);

static cmdline_parse_ctx_t main_ctx[32 + MAX_KEY_INSTS] = {
	&i_help, &i_help_sec, &i_show1, &i_show_port, &i_show_lat,
	&i_show_lat_port, &i_show_info, &i_show_info_port,
	&i_show_xstats, &i_show_xstats_all, &i_show_stage, &i_show_class, &i_show_class_name,
	&i_set_priomap, &i_set_classify, &i_set_class, &i_clear_class,
	&i_update_class,
	&i_clear, &i_start, &i_stop, &i_load, &i_quit,
	&cli_link_inst, &cli_show_schedule_inst, NULL,
};

/* ---- errors the parser finds ---------------------------------------- */

static int ctx_init(void);

/* "set queue|tbf|netem|priomap|classify ..." (ctx_init) */
static char set_usage[128] = "set ...";

static const struct {
	const char *prefix;
	const char *usage;
} usages[] = {
	{ "help", "help [show|set|control|all]" },
	{ "show port latency", "show port latency [all|P]" },
	{ "show port info", "show port info [all|P]" },
	{ "show port xstats", "show port xstats P [all]" },
	{ "show port", "show port stats all|P" },
	{ "show bands", "show bands all|P" },
	{ "show qdisc", "show qdisc [all|P]" },
	{ "show config", "show config" },
	{ "show drops", "show drops" },
	{ "show lcores", "show lcores" },
	{ "show schedule", "show schedule" },
	{ "link", "link down|up all|P" },
	{ "show", "show config|port stats|bands|qdisc|drops|lcores|schedule, "
		  "show KEY all|P (queue, tbf, netem...)" },
	{ "set priomap", "set priomap P0 ... P15" },
	{ "set classify", "set classify tos|dscp|pcp|none" },
	{ "set", set_usage },
	{ "clear", "clear stats | clear KEY all|P" },
	{ "update", "update KEY all|P WORDS" },
	{ "start", "start" },
	{ "stop", "stop" },
	{ "load", "load FILE" },
	{ "quit", "quit" },
	{ "exit", "exit" },
};

/* Does `line` start with the words of `prefix`? */
static bool
starts_with_words(const char *line, const char *prefix)
{
	while (*prefix) {
		size_t n = strcspn(prefix, " ");

		line += strspn(line, " \t");
		if (strncmp(line, prefix, n) != 0 ||
		    (line[n] != '\0' && strchr(" \t\r\n", line[n]) == NULL))
			return false;
		line += n;
		prefix += n;
		prefix += strspn(prefix, " ");
	}
	return true;
}

static void
parse_error(const char *line, int rc)
{
	size_t n = strcspn(line, "\r\n");
	unsigned int i;

	if (rc == CMDLINE_PARSE_BAD_ARGS) {
		char pre[48];
		unsigned int k;

		for (k = 0; k < shp_key_nb(); k++) {
			const char *key = shp_key_name(k);
			const char *u = shp_key_slot(k) == SHP_SLOT_QUEUE ?
					"KIND ARGS" : "ARGS|off";

			snprintf(pre, sizeof(pre), "set %s", key);
			if (starts_with_words(line, pre)) {
				fail("'%.*s': missing, unknown or extra "
				     "words; usage: set %s all|P %s", (int)n,
				     line, key, u);
				return;
			}
			snprintf(pre, sizeof(pre), "update %s", key);
			if (starts_with_words(line, pre)) {
				fail("'%.*s': missing, unknown or extra "
				     "words; usage: update %s all|P WORDS",
				     (int)n, line, key);
				return;
			}
			snprintf(pre, sizeof(pre), "clear %s", key);
			if (starts_with_words(line, pre)) {
				fail("'%.*s': missing, unknown or extra "
				     "words; usage: clear %s all|P", (int)n,
				     line, key);
				return;
			}
			snprintf(pre, sizeof(pre), "show %s", key);
			if (starts_with_words(line, pre)) {
				fail("'%.*s': missing, unknown or extra "
				     "words; usage: show %s all|P", (int)n,
				     line, key);
				return;
			}
		}
	}
	if (rc == CMDLINE_PARSE_BAD_ARGS)
		for (i = 0; i < RTE_DIM(usages); i++)
			if (starts_with_words(line, usages[i].prefix)) {
				fail("'%.*s': missing, unknown or extra words; "
				     "usage: %s", (int)n, line,
				     usages[i].usage);
				return;
			}
	if (rc == CMDLINE_PARSE_AMBIGUOUS)
		fail("'%.*s': ambiguous command", (int)n, line);
	else
		fail("unknown command '%.*s' (help lists the commands)",
		     (int)strcspn(line + strspn(line, " \t"), " \t\r\n"),
		     line + strspn(line, " \t"));
}

int
cli_exec(const char *line)
{
	char buf[CLI_LINE_MAX + 2];
	size_t len = strcspn(line, "\r\n");
	int rc;

	failed = false;
	if (len > CLI_LINE_MAX) {
		/* cut, it would lose its newline and do nothing, or half */
		fail("line of %zu characters, more than %d: not run (nothing "
		     "changed)", len, CLI_LINE_MAX);
		fflush(stdout);
		return -1;
	}
	/* cmdline_parse wants one line ending in a newline */
	snprintf(buf, sizeof(buf), "%.*s\n", (int)len, line);
	rc = cmdline_parse(cl, buf);
	if (rc == CMDLINE_PARSE_AMBIGUOUS || rc == CMDLINE_PARSE_NOMATCH ||
	    rc == CMDLINE_PARSE_BAD_ARGS)
		parse_error(buf, rc);
	fflush(stdout);
	return failed ? -1 : 0;
}

int
cli_exec_to(const char *line, FILE *f)
{
	FILE *saved = stdout;
	int rc;

	/* every handler, and what it calls (the stages' printers, the
	 * schedule), writes to stdout: glibc's stdout is a variable */
	fflush(stdout);
	stdout = f;
	rc = cli_exec(line);
	fflush(f);
	stdout = saved;
	return rc;
}

/* Only the stage changes (set, update, clear KEY all|P): the parser an
 * --atomic file is read with (ctx_init). */
static cmdline_parse_ctx_t stage_ctx[MAX_KEY_INSTS + 1];
static struct cmdline *stage_cl;

int
cli_exec_atomic(char *const *lines, unsigned int n, FILE *f)
{
	FILE *saved = stdout;
	struct ctl_config *was = NULL;
	char err[SHP_ERR_LEN], buf[CLI_LINE_MAX + 2];
	unsigned int i, j;
	int rc = 0;

	fflush(stdout);
	stdout = f;
	failed = false;
	batch = calloc(1, sizeof(*batch));
	was = malloc(sizeof(*was));
	if (batch == NULL || was == NULL || stage_cl == NULL) {
		fail("atomic: out of memory (nothing changed)");
		goto out;
	}
	ctl_config_snapshot(was);
	for (i = 0; i < n && !failed; i++) {
		const char *p = lines[i] + strspn(lines[i], " \t");
		size_t len = strcspn(p, "\r\n");
		int prc;

		if (*p == '\0' || *p == '#')
			continue;
		if (len > CLI_LINE_MAX) {
			fail("atomic line %u: more than %d characters (nothing "
			     "changed)", i + 1, CLI_LINE_MAX);
			break;
		}
		snprintf(buf, sizeof(buf), "%.*s\n", (int)len, p);
		prc = cmdline_parse(stage_cl, buf);
		/* a command, but not a stage change (check: < 0 is an
		 * error, as in cli_check_file) */
		if (prc == CMDLINE_PARSE_NOMATCH &&
		    cmdline_parse_check(cl, buf) >= 0)
			fail("atomic line %u: '%.*s': an atomic file holds only "
			     "stage changes (set, update, clear KEY all|P) "
			     "(nothing changed)", i + 1, (int)len, p);
		else if (prc == CMDLINE_PARSE_AMBIGUOUS ||
			 prc == CMDLINE_PARSE_NOMATCH ||
			 prc == CMDLINE_PARSE_BAD_ARGS)
			parse_error(buf, prc);
		if (failed)
			out("atomic line %u failed: nothing applied\n", i + 1);
	}
	if (!failed && batch->n == 0)
		fail("atomic: no change in the file");
	if (!failed && ctl_set_stages(S, batch->ch, batch->n, err) < 0)
		fail("atomic: %s (nothing changed)", err);
	if (!failed) {
		for (j = 0; j < batch->n; j++)
			confirm_stage(batch->key[j], batch->ch[j].port, was);
		out("atomic: %u change%s applied at once\n", batch->n,
		    batch->n == 1 ? "" : "s");
	}
out:
	rc = failed ? -1 : 0;
	free(batch);
	batch = NULL;
	free(was);
	fflush(f);
	stdout = saved;
	return rc;
}

int
cli_run_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	unsigned int lineno = 0;
	int rc = 0;

	if (f == NULL) {
		fail("load %s: %s", path, strerror(errno));
		fflush(stdout);
		return -1;
	}
	while (!S->quit && getline(&line, &cap, f) > 0) {
		const char *p = line + strspn(line, " \t");

		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (*p == '\0' || *p == '#')
			continue;
		out(PROMPT "%s\n", p);
		if (cli_exec(p) < 0) {
			out("%s:%u: command failed: skipping the rest of %s\n",
			    path, lineno, path);
			rc = -1;
			break;
		}
	}
	free(line);
	fclose(f);
	fflush(stdout);
	failed = rc < 0;
	return rc;
}

int
cli_check_file(const char *path)
{
	FILE *f = fopen(path, "r");
	struct cmdline *chk;
	char *line = NULL, buf[CLI_LINE_MAX + 2];
	size_t cap = 0;
	unsigned int lineno = 0;
	int rc = 0;

	if (f == NULL) {
		fprintf(stderr, "dpdk-shaper: --cmdline-file %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	if (ctx_init() < 0)
		return -1;
	chk = cmdline_new(main_ctx, PROMPT, -1, -1);
	if (chk == NULL) {
		fclose(f);
		return 0;   /* checked when it runs */
	}
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		const char *p = line + strspn(line, " \t");

		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (*p == '\0' || *p == '#')
			continue;
		snprintf(buf, sizeof(buf), "%s\n", p);
		if (cmdline_parse_check(chk, buf) < 0) {
			fprintf(stderr, "dpdk-shaper: --cmdline-file %s:%u: "
				"'%s' is not a command (help lists them)\n",
				path, lineno, p);
			rc = -1;
		}
	}
	free(line);
	fclose(f);
	cmdline_free(chk);
	return rc;
}

/* ---- the prompt ---------------------------------------------------- */

/*
 * After `set netem|tbf PORT WORD ...`, librte_cmdline sees the rest of the
 * line as one token and completes only its first word: TAB and `?` on the
 * next words are ours.
 */
struct tc_word {
	const char *word;
	const char *help;
};

static const struct tc_word netem_words[] = {
	{ "delay", "TIME [JITTER [CORRELATION]]" },
	{ "distribution", "uniform|normal|pareto|paretonormal|FILE" },
	{ "loss", "[random] PERCENT [CORR] | state P13 ... | gemodel P ..." },
	{ "duplicate", "PERCENT [CORRELATION]" },
	{ "corrupt", "PERCENT [CORRELATION]" },
	{ "reorder", "PERCENT [CORRELATION] [gap DISTANCE]" },
	{ "gap", "DISTANCE (after reorder)" },
	{ "rate", "RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]" },
	{ "slot", "MIN_DELAY [MAX_DELAY] [packets N] [bytes N]" },
	{ "limit", "PACKETS" },
	{ "ecn", "mark ECN-capable packets instead of dropping them" },
	{ "seed", "N (random streams)" },
	{ "noreorder", "jitter keeps the packet order" },
	{ NULL, NULL },
};

static const struct tc_word tbf_words[] = {
	{ "rate", "RATE" },
	{ "burst", "SIZE (also buffer, maxburst)" },
	{ "limit", "SIZE (or latency)" },
	{ "latency", "TIME (or limit)" },
	{ "peakrate", "RATE (with mtu)" },
	{ "mtu", "SIZE (also minburst)" },
	{ "overhead", "BYTES" },
	{ "mpu", "BYTES" },
	{ "linklayer", "ethernet|atm" },
	{ NULL, NULL },
};

/* The tc words for `buf` (the line left of the cursor), and where its last,
 * partial word starts; NULL when the line is not after the first tc word
 * of a `set netem|tbf PORT`. */
static const struct tc_word *
tc_words_for(const char *buf, const char **partial)
{
	const struct tc_word *words;
	const char *p = buf;
	int nw = 0;

	if (starts_with_words(buf, "set netem"))
		words = netem_words;
	else if (starts_with_words(buf, "set tbf"))
		words = tbf_words;
	else
		return NULL;
	/* count the complete words: set, netem|tbf, PORT, >= 1 tc word */
	for (;;) {
		p += strspn(p, " \t");
		if (*p == '\0')
			break;
		p += strcspn(p, " \t");
		if (*p == '\0') {   /* a word with no blank after: partial */
			break;
		}
		nw++;
	}
	if (nw < 4)
		return NULL;
	*partial = buf + strlen(buf);
	while (*partial > buf && (*partial)[-1] != ' ' &&
	       (*partial)[-1] != '\t')
		(*partial)--;
	return words;
}

/* rdline's completion contract (cmdline_complete): *state 0 for TAB, -1
 * for `?`; called again while it returns 1 (a choice in dst), 2 when dst
 * holds characters to add, 0 when done. Our states for a listing: -2 - i
 * is "next, look from word i". */
static int
tc_complete(const struct tc_word *words, const char *partial, char *dst,
	    unsigned int size, int *state)
{
	size_t plen = strlen(partial);
	int i, nmatch = 0, first = -1;

	if (*state == 0) {   /* TAB: the unique completion, or a listing */
		size_t common = 0;

		for (i = 0; words[i].word != NULL; i++) {
			if (strncmp(words[i].word, partial, plen) != 0)
				continue;
			if (nmatch++ == 0) {
				first = i;
				common = strlen(words[i].word);
			} else {
				size_t k = 0;

				while (k < common && words[first].word[k] ==
				       words[i].word[k])
					k++;
				common = k;
			}
		}
		if (nmatch == 0)
			return 0;
		if (nmatch == 1 || common > plen) {
			snprintf(dst, size, "%.*s%s", (int)(common - plen),
				 words[first].word + plen,
				 nmatch == 1 ? " " : "");
			return 2;
		}
		*state = -1;   /* several, nothing in common: list them */
	}
	i = *state == -1 ? 0 : -2 - *state;
	for (; words[i].word != NULL; i++)
		if (strncmp(words[i].word, partial, plen) == 0) {
			snprintf(dst, size, "%-13s %s", words[i].word,
				 words[i].help);
			*state = -2 - (i + 1);
			return 1;
		}
	return 0;
}

static bool tty_overflow;   /* rdline dropped keys of this line */

static int
rdl_write(struct rdline *rdl, char c)
{
	(void)rdl;
	return write(STDOUT_FILENO, &c, 1) == 1 ? 0 : -1;
}

static void
rdl_validate(struct rdline *rdl, const char *buf, unsigned int size)
{
	(void)rdl; (void)size;
	if (tty_overflow) {
		tty_overflow = false;
		failed = false;
		fail("line longer than %d characters, the prompt's limit: not "
		     "run (nothing changed); put long commands in a file "
		     "(load FILE)", TTY_LINE_MAX);
		fflush(stdout);
		return;
	}
	cli_exec(buf);
}

static int
rdl_complete(struct rdline *rdl, const char *buf, char *dst,
	     unsigned int size, int *state)
{
	const struct tc_word *words;
	const char *partial;

	(void)rdl;
	words = tc_words_for(buf, &partial);
	if (words != NULL)
		return tc_complete(words, partial, dst, size, state);
	return cmdline_complete(cl, buf, state, dst, size);
}

/* Feed keys to rdline, noticing a key it drops because the line is full
 * (it says nothing). `esc` follows VT100 sequences, whose keys are not
 * characters of the line. */
static void
tty_keys(struct shaper *s, struct rdline *rdl, const char *buf, ssize_t n)
{
	static int esc;
	ssize_t i;

	for (i = 0; i < n && !s->quit; i++) {
		unsigned char k = (unsigned char)buf[i];
		int rc;

		if (k == 0x1b) {
			esc = 1;
		} else if (esc) {
			if (esc == 1 && (k == '[' || k == 'O'))
				esc = 2;
			else if (esc == 2 && (isdigit(k) || k == ';'))
				;
			else
				esc = 0;
		} else if (isprint(k) && k != '?' &&
			   strlen(rdline_get_buffer(rdl)) > TTY_LINE_MAX) {
			/* rdline_get_buffer adds a '\n': > is full */
			tty_overflow = true;
		} else if (k == 0x03) {   /* Ctrl-C clears the line */
			tty_overflow = false;
		}
		rc = rdline_char_in(rdl, buf[i]);
		if (rc == RDLINE_RES_VALIDATED) {
			const char *b = rdline_get_buffer(rdl);

			if (b != NULL && strspn(b, " \t\r\n") < strlen(b))
				rdline_add_history(rdl, b);
			if (!s->quit)
				rdline_newline(rdl, PROMPT);
		} else if (rc == RDLINE_RES_EOF || rc == RDLINE_RES_EXITED) {
			out("\n");
			s->quit = true;
		}
	}
}

/* A pipe: whole lines, echoed after the prompt as a terminal would show
 * them, and no terminal control sequences in the output. */
struct line_in {
	char buf[CLI_LINE_MAX + 2];
	size_t len;
	size_t dropped;     /* characters beyond the limit */
	unsigned int lineno;
};

static void
pipe_line(struct line_in *li)
{
	li->lineno++;
	li->buf[li->len] = '\0';
	out(PROMPT "%s%s\n", li->buf, li->dropped ? " ..." : "");
	if (li->dropped) {
		failed = false;
		fail("input line %u: %zu characters, more than %d: not run "
		     "(nothing changed)", li->lineno, li->len + li->dropped,
		     CLI_LINE_MAX);
		fflush(stdout);
	} else {
		cli_exec(li->buf);
	}
	li->len = 0;
	li->dropped = 0;
}

static void
pipe_keys(struct shaper *s, struct line_in *li, const char *buf, ssize_t n)
{
	ssize_t i;

	for (i = 0; i < n && !s->quit; i++) {
		if (buf[i] == '\n') {
			pipe_line(li);
		} else if (li->len < CLI_LINE_MAX) {
			li->buf[li->len++] = buf[i];
		} else {
			li->dropped++;
		}
	}
}

void
cli_interact(struct shaper *s)
{
	struct termios saved, raw;
	bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
	struct rdline *rdl = NULL;
	struct line_in *li = NULL;

	if (tty)
		rdl = rdline_new(rdl_write, rdl_validate, rdl_complete, NULL);
	else
		li = calloc(1, sizeof(*li));
	if (rdl == NULL && li == NULL) {
		fprintf(stderr, "dpdk-shaper: cannot start the prompt\n");
		s->exit_code = 1;
		return;
	}
	if (tty) {
		/* As cmdline_stdin_new(): keys one by one, no echo (rdline
		 * echoes), Ctrl-C a key (clears the line) not a signal. */
		raw = saved;
		raw.c_lflag &= ~(ICANON | ECHO | ISIG);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	fflush(stdout);
	if (tty)
		rdline_newline(rdl, PROMPT);
	while (!s->quit) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		char buf[256];
		bool printed;
		ssize_t n;
		int rc;

		/* a `for` change goes back on its time, not a poll later */
		rc = ctl_socket_poll(&pfd, 1, ctl_tick_wait_ms(s, 50));
		if (ctl_tick(s, true, &printed))
			break;
		if (printed && tty)
			rdline_redisplay(rdl);
		if (rc <= 0)
			continue;   /* timeout, or a signal (EINTR) */
		n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {       /* end of input: quit */
			if (!tty && li->len + li->dropped > 0)
				pipe_line(li);   /* a last line without \n */
			out(tty ? "\n" : "");
			break;
		}
		if (tty)
			tty_keys(s, rdl, buf, n);
		else
			pipe_keys(s, li, buf, n);
	}
	fflush(stdout);
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
		rdline_free(rdl);
	}
	free(li);
}

/* The commands of the stage kinds, help and usage: once, before the
 * first parser (a command file is checked before the EAL starts). */
static int
ctx_init(void)
{
	static int done;
	unsigned int n = 0, k;
	int m;
	size_t off;

	if (done)
		return 0;
	help_set_build();
	while (main_ctx[n] != NULL)
		n++;
	m = key_cmds_build(main_ctx + n, RTE_DIM(main_ctx) - n - 1);
	if (m < 0) {
		fprintf(stderr, "dpdk-shaper: cannot make the commands of "
			"the stage kinds\n");
		return -1;
	}
	main_ctx[n + (unsigned int)m] = NULL;
	memcpy(stage_ctx, main_ctx + n, (size_t)m * sizeof(stage_ctx[0]));
	stage_ctx[m] = NULL;
	show_stage_words_build();
	off = (size_t)snprintf(set_usage, sizeof(set_usage), "set ");
	for (k = 0; k < shp_key_nb() && off < sizeof(set_usage); k++)
		off += (size_t)snprintf(set_usage + off,
					sizeof(set_usage) - off, "%s|",
					shp_key_name(k));
	if (off < sizeof(set_usage))
		snprintf(set_usage + off, sizeof(set_usage) - off,
			 "priomap|classify ...");
	done = 1;
	return 0;
}

int
cli_init(struct shaper *s)
{
	S = s;
	if (ctx_init() < 0)
		return -1;
	cl = cmdline_new(main_ctx, PROMPT, -1, -1);
	stage_cl = cmdline_new(stage_ctx, PROMPT, -1, -1);
	if (cl == NULL || stage_cl == NULL) {
		fprintf(stderr, "dpdk-shaper: cannot create the command "
			"parser\n");
		return -1;
	}
	return 0;
}

void
cli_fini(void)
{
	if (cl != NULL)
		cmdline_free(cl);
	if (stage_cl != NULL)
		cmdline_free(stage_cl);
	cl = NULL;
	stage_cl = NULL;
}
