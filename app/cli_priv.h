/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the CLI's files share (not for the rest of the app: cli.h is):
 *   cli.c        the parser state, output, running lines and files
 *   cli_table.c  the token type, help, the instruction table, usage
 *   cli_show.c   the show commands
 *   cli_set.c    the commands that change something
 *   cli_term.c   the prompt: terminal, pipe, completion of tc words
 * Every handler runs on the main lcore, one command at a time.
 */
#ifndef SHAPER_CLI_PRIV_H
#define SHAPER_CLI_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <cmdline_parse.h>
#include <cmdline_parse_string.h>
#include <rte_common.h>

#include "control.h"
#include "shaper.h"

#define PROMPT "shaper> "
#define CLI_LINE_MAX 2048        /* a command file's line, a piped line */
#define REST_LEN (CLI_LINE_MAX + 1)
/* A command file's bounds: longer lines than CLI_LINE_MAX are read to say
 * how long they are (cli_exec), a line past this fails the file. */
#define CLI_FILE_LINE_MAX (64 * 1024)
#define CLI_FILE_MAX ((size_t)4 << 20)

extern struct shaper *S;
extern struct cmdline *cl;      /* parser state only: fds -1 */
extern bool failed;             /* set by a command that failed */

/* An --atomic file being checked: the stage changes its lines make,
 * recorded by cmd_set_stage instead of applied (cli_exec_atomic). */
struct batch {
	unsigned int n;
	struct ctl_change ch[CTL_BATCH_MAX];
	const char *args_of[CTL_BATCH_MAX][SHP_MAX_PORTS];
	char text[CTL_BATCH_MAX][SHP_MAX_PORTS][CTL_TEXT_LEN];
	char key[CTL_BATCH_MAX][32];
};
extern struct batch *batch;

/* cli_run_file, for `load` (set by cli_init: see cli_out.c) */
extern int (*cli_file_runner)(const char *path);

/* A command's output, to stdout (cli_exec_to points it elsewhere). */
void __rte_format_printf(1, 2) out(const char *fmt, ...);
/* "error: ..." and the command failed. */
void __rte_format_printf(1, 2) fail(const char *fmt, ...);

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


/* Each port (port < 0) or one, in the order of S->port_ids. */
void for_ports(int port, void (*fn)(struct shaper *, uint16_t));
/* The port word of a command, or -2 after saying why not. */
int port_of(const char *cmd, const char *word);

/* cli_table.c */
extern cmdline_parse_ctx_t main_ctx[];
/* only the stage changes: the parser of an --atomic file */
extern cmdline_parse_ctx_t stage_ctx[];
/* The commands of the stage kinds, help and usage, once. 0 or -1. */
int ctx_init(void);
/* Says what is wrong with a line the parser refused (rc its result). */
void parse_error(const char *line, int rc);
/* Does `line` start with the words of `prefix`? */
bool starts_with_words(const char *line, const char *prefix);

/* cli_show.c: the handlers of the show commands */
void cmd_show1(void *res, struct cmdline *c, void *data);
void cmd_show_port(void *res, struct cmdline *c, void *data);
void cmd_show_latency(void *res, struct cmdline *c, void *data);
void cmd_show_stage(void *res, struct cmdline *c, void *data);
void cmd_show_class(void *res, struct cmdline *c, void *data);
void cmd_show_port_info(void *res, struct cmdline *c, void *data);
void cmd_show_port_shards(void *res, struct cmdline *c, void *data);
void cmd_show_xstats(void *res, struct cmdline *c, void *data);
/* " (reverts in 12.3 s)" after a profile a `for` change set */
void reverts_note(uint16_t p, const char *key, bool to);

/* cli_set.c: the handlers of the commands that change something */
void cmd_set_stage(void *res, struct cmdline *c, void *data);
void cmd_set_priomap(void *res, struct cmdline *c, void *data);
void cmd_set_class(void *res, struct cmdline *c, void *data);
void cmd_set_classify(void *res, struct cmdline *c, void *data);
void cmd_word(void *res, struct cmdline *c, void *data);
void cmd_clear(void *res, struct cmdline *c, void *data);
void cmd_load(void *res, struct cmdline *c, void *data);
/* cli_capture.c: capture drops start|stop, show capture */
void cmd_capture_start(void *res, struct cmdline *c, void *data);
void cmd_capture_stop(void *res, struct cmdline *c, void *data);
void cmd_show_capture(void *res, struct cmdline *c, void *data);
/* Says what a stage change did, port by port, against `was`. */
void confirm_stage(const char *stage, int port, const struct ctl_config *was);

#endif
