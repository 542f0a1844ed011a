/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CLI's command table for librte_cmdline: our "word" token, the help
 * texts, every instruction (those of the stage keys made at start-up from
 * the kind registry, so that a new kind gets set/clear/update/show and
 * completion without an edit here), and the usage line said when the
 * parser refuses a line. What the commands do is in cli_show.c and
 * cli_set.c; a command, its help and its usage stay side by side here so
 * that they cannot drift apart.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_parse_string.h>
#include <rte_common.h>

#include "cli.h"
#include "cli_priv.h"
#include "control.h"

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

/* ---- help ---------------------------------------------------- */

static const char help_show[] =
"show config                 profile of every port, classifier, lcores\n"
"show capture                the drop capture: its file, captured and\n"
"                            capture_lost\n"
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
"show schedule               links up or down, the next --schedule events\n"
"show presets                the link presets (set preset), a line each\n";

static const char help_set_fixed[] =
"set priomap P0 ... P15      band of each priority (16 values), for every\n"
"                            queue without its own (set queue P pfifo_fast\n"
"                            priomap P0 ... P15: port P's own)\n"
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
"set preset all|P NAME       a link preset's whole profile at once\n"
"                            (docs/presets.md)\n"
"link down|up all|P          drop what is offered to a port (link_down)\n"
"                            from now on, or stop\n"
"link down all|P carrier     the same, and the port's carrier down where\n"
"                            its driver can (link up brings it back)\n"
"disable|enable all|P        a bare wire (no stage) keeping the profile,\n"
"                            or the profile back, at one instant\n"
"capture drops start FILE [snaplen BYTES] [limit BYTES]\n"
"                            write every dropped frame to FILE (pcapng)\n"
"                            with its cause (default snaplen 128, limit\n"
"                            256mb)\n"
"capture drops stop          end the drop capture, close its file\n"
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
	TOKEN_KW(struct r_w2, w2, "config#drops#lcores#qdisc#events");
INST(i_show1, cmd_show1, NULL, "show config|drops|lcores|qdisc|events",
     (void *)&t_show, (void *)&t_show1);

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
static cmdline_parse_token_string_t t_show_p_shards =
	TOKEN_KW(struct r_w4, w3, "shards");
INST(i_show_shards, cmd_show_port_shards, NULL,
     "show port shards: each port's shards (--queues): lcore, sent, "
     "queued, drops, sojourn",
     (void *)&t_show, (void *)&t_show_p, (void *)&t_show_p_shards);
INST(i_show_shards_port, cmd_show_port_shards, (void *)1,
     "show port shards all|P: the port's shards (--queues)",
     (void *)&t_show, (void *)&t_show_p, (void *)&t_show_p_shards,
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

/* the drop capture (cli_capture.c) */
static cmdline_parse_token_string_t t_cap =
	TOKEN_KW(struct r_class, w1, "capture");
static cmdline_parse_token_string_t t_cap_drops =
	TOKEN_KW(struct r_class, w2, "drops");
static cmdline_parse_token_string_t t_cap_start =
	TOKEN_KW(struct r_class, name, "start");
static struct tok_word t_cap_args =
	TOKEN_WORD(struct r_class, args, WORD_REST, NULL,
		   "FILE [snaplen BYTES] [limit BYTES]");
INST(i_cap_start, cmd_capture_start, NULL,
     "capture drops start FILE [snaplen BYTES] [limit BYTES]: write every "
     "dropped frame to FILE (pcapng) with its cause",
     (void *)&t_cap, (void *)&t_cap_drops, (void *)&t_cap_start,
     (void *)&t_cap_args);
static cmdline_parse_token_string_t t_cap_stop =
	TOKEN_KW(struct r_class, name, "stop");
INST(i_cap_stop, cmd_capture_stop, NULL,
     "capture drops stop: end the drop capture",
     (void *)&t_cap, (void *)&t_cap_drops, (void *)&t_cap_stop);
static cmdline_parse_token_string_t t_show_cap =
	TOKEN_KW(struct r_w2, w2, "capture");
INST(i_show_cap, cmd_show_capture, NULL,
     "show capture: the drop capture's state, what it kept and lost",
     (void *)&t_show, (void *)&t_show_cap);

cmdline_parse_ctx_t main_ctx[32 + MAX_KEY_INSTS] = {
	&i_help, &i_help_sec, &i_show1, &i_show_port, &i_show_lat,
	&i_show_lat_port, &i_show_info, &i_show_info_port,
	&i_show_shards, &i_show_shards_port,
	&i_show_xstats, &i_show_xstats_all, &i_show_stage, &i_show_class, &i_show_class_name,
	&i_set_priomap, &i_set_classify, &i_set_class, &i_clear_class,
	&i_update_class,
	&i_clear, &i_start, &i_stop, &i_load, &i_quit,
	&cli_link_inst, &cli_link_carrier_inst, &cli_toggle_inst,
	&cli_show_schedule_inst, &cli_set_preset_inst,
	&cli_show_presets_inst, &i_cap_start, &i_cap_stop, &i_show_cap, NULL,
};

/* ---- errors the parser finds ---------------------------------------- */

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
	{ "show events", "show events" },
	{ "show schedule", "show schedule" },
	{ "show presets", "show presets" },
	{ "set preset", "set preset all|P NAME" },
	{ "link", "link down|up all|P, link down all|P carrier" },
	{ "disable", "disable all|P" },
	{ "enable", "enable all|P" },
	{ "show capture", "show capture" },
	{ "capture drops start", "capture drops start FILE [snaplen BYTES] "
	  "[limit BYTES]" },
	{ "capture drops stop", "capture drops stop" },
	{ "capture", "capture drops start FILE [snaplen BYTES] "
	  "[limit BYTES] | capture drops stop" },
	{ "show", "show config|port stats|bands|qdisc|drops|lcores|events|"
		  "schedule|capture, "
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
bool
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

void
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

/* Only the stage changes (set, update, clear KEY all|P): the parser an
 * --atomic file is read with (ctx_init). */
cmdline_parse_ctx_t stage_ctx[MAX_KEY_INSTS + 1];

/* The commands of the stage kinds, help and usage: once, before the
 * first parser (a command file is checked before the EAL starts). */
int
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
