/* SPDX-License-Identifier: BSD-3-Clause */
/* The command line interface (librte_cmdline): prompt and command files. */
#ifndef SHAPER_CLI_H
#define SHAPER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "shaper.h"

int cli_init(struct shaper *s);
void cli_fini(void);

/* Run one command line (no prompt). 0, or -1 if it failed. */
int cli_exec(const char *line);

/* cli_exec() with its output (what the prompt would print) to f: the
 * control socket's replies. */
int cli_exec_to(const char *line, FILE *f);

/* The stage changes of n command lines (set, update, clear KEY all|P;
 * blank and '#' lines skipped), every line checked first, then applied
 * in one publication (ctl_set_stages), or none; output to f. 0, or -1. */
int cli_exec_atomic(char *const *lines, unsigned int n, FILE *f);

/*
 * Run a command file: each command is echoed after the prompt, then its
 * output. '#' starts a comment line. The first failing command stops the
 * file (the rest is skipped, which is said). 0, or -1 if a command failed
 * or the file cannot be read.
 */
int cli_run_file(const char *path);

/* Before anything starts: the command file can be read and every line is
 * a known command with the right words (what they do is checked when
 * they run). 0, or -1 after one line naming the file, line and problem. */
int cli_check_file(const char *path);

/* The prompt on stdin/stdout until quit, EOF (Ctrl-D), a signal, or a
 * replay end without prompt. Does the control duties meanwhile. */
void cli_interact(struct shaper *s);

/* The command being run failed (for handlers in other files). */
void cli_set_failed(void);

/* app/cli_sched.c */
#include <cmdline_parse.h>
extern cmdline_parse_inst_t cli_link_inst, cli_show_schedule_inst;
/* app/cli_preset.c */
extern cmdline_parse_inst_t cli_set_preset_inst, cli_show_presets_inst;

/* `show qdisc`: the port's chain in `tc -s qdisc show` format (show_qdisc.c);
 * with_dev names the port as tc names the device when showing them all. */
void cli_show_qdisc(struct shaper *s, uint16_t port, bool with_dev, FILE *f);

#endif
