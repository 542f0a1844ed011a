/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CLI's commands that change something: set/clear/update of a stage
 * (or, in an --atomic file, recorded into the batch instead), priomap,
 * classify and classes, then start, stop, quit, clear stats and load.
 * Each says what it changed, or why nothing changed.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmdline.h>

#include "classify.h"
#include "cli.h"
#include "cli_priv.h"
#include "control.h"
#include "ctl_update.h"

#define MAX_LOAD_DEPTH 8

static int load_depth;


/* ---- set ---------------------------------------------------- */

/* Say what a `set` changed, port by port, from the config texts before
 * and after (the profile as the stage prints it back). */
void
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

void
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
					       r->args, for_ns, err);
	} else if (data != NULL) {   /* clear KEY P */
		rc = ctl_clear_stage(S, r->w2, p, err);
	} else {
		rc = ctl_set_stage_for(S, r->w2, p, NULL, r->args, NULL,
				       for_ns, err);
	}
	if (rc < 0)
		fail("%s %s: %s (nothing changed)", what, r->port, err);
	else
		confirm_stage(r->w2, p, was);
	free(was);
}

void
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
void
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

void
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

void
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

void
cmd_clear(void *res, struct cmdline *c, void *data)
{
	(void)res; (void)c; (void)data;
	ctl_clear_stats(S);
	out("counters cleared\n");
}

void
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
	outer_failed = cli_file_runner(r->args) < 0;
	load_depth--;
	failed = outer_failed;
}
