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
 *
 * This file: running a line, an --atomic file or a command file, checking
 * a file before the start. The parser's state and a command's output are
 * cli_out.c's, which the commands use too.
 * The other jobs have their own files (cli_priv.h lists them).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmdline.h>
#include <cmdline_parse.h>
#include <rte_common.h>

#include "cli.h"
#include "cli_priv.h"
#include "control.h"
#include "shp_file.h"

/* ---- running lines and files ---------------------------------------- */

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
	/* the budget of the ports it changed, after what it said */
	shaper_budget_flush(S);
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
	shaper_budget_flush(S);
out:
	rc = failed ? -1 : 0;
	free(batch);
	batch = NULL;
	free(was);
	fflush(f);
	stdout = saved;
	return rc;
}

/* A line of a command file that is no command is not quoted: through the
 * control socket, the file may be one the client could not read. */
static bool
is_command(struct cmdline *c, const char *p)
{
	char buf[CLI_LINE_MAX + 2];
	size_t len = strlen(p);

	if (len > CLI_LINE_MAX)
		return true;   /* cli_exec says how long, not what */
	snprintf(buf, sizeof(buf), "%s\n", p);
	return cmdline_parse_check(c, buf) >= 0;
}

int
cli_run_file(const char *path)
{
	char err[SHP_ERR_LEN], *line;
	struct shp_file sf;
	int rc = 0, got = 0;

	if (shp_file_open(&sf, "load", path, CLI_FILE_MAX, CLI_FILE_LINE_MAX,
			  err) < 0) {
		fail("%s", err);
		fflush(stdout);
		failed = true;
		return -1;
	}
	while (!S->quit && (got = shp_file_line(&sf, &line)) > 0) {
		const char *p = line + strspn(line, " \t");

		line[strcspn(line, "\r")] = '\0';
		if (*p == '\0' || *p == '#')
			continue;
		if (!is_command(cl, p)) {
			fail("load %s:%u: not a command (help lists them)",
			     path, sf.line);
			rc = -1;
		} else {
			out(PROMPT "%s\n", p);
			rc = cli_exec(p);
		}
		if (rc < 0) {
			out("%s:%u: command failed: skipping the rest of %s\n",
			    path, sf.line, path);
			break;
		}
	}
	if (got < 0) {
		fail("%s", err);
		out("%s: skipping the rest of %s\n", path, path);
		rc = -1;
	}
	shp_file_close(&sf);
	fflush(stdout);
	failed = rc < 0;
	return rc;
}

int
cli_check_file(const char *path)
{
	char err[SHP_ERR_LEN], *line;
	struct cmdline *chk;
	struct shp_file sf;
	int rc = 0, got;

	if (shp_file_open(&sf, "--cmdline-file", path, CLI_FILE_MAX,
			  CLI_FILE_LINE_MAX, err) < 0) {
		fprintf(stderr, "dpdk-shaper: %s\n", err);
		return -1;
	}
	if (ctx_init() < 0) {
		shp_file_close(&sf);
		return -1;
	}
	chk = cmdline_new(main_ctx, PROMPT, -1, -1);
	if (chk == NULL) {
		shp_file_close(&sf);
		return 0;   /* checked when it runs */
	}
	while (rc == 0 && (got = shp_file_line(&sf, &line)) > 0) {
		const char *p = line + strspn(line, " \t");

		line[strcspn(line, "\r")] = '\0';
		if (*p == '\0' || *p == '#')
			continue;
		if (!is_command(chk, p)) {
			fprintf(stderr, "dpdk-shaper: --cmdline-file %s:%u: "
				"not a command (help lists them)\n", path,
				sf.line);
			rc = -1;
		}
	}
	if (rc == 0 && got < 0) {
		fprintf(stderr, "dpdk-shaper: %s\n", err);
		rc = -1;
	}
	shp_file_close(&sf);
	cmdline_free(chk);
	return rc;
}

int
cli_init(struct shaper *s)
{
	S = s;
	cli_file_runner = cli_run_file;
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
