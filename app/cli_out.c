/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every command shares: the parser's state and a command's output.
 *
 * The bottom of the CLI: the commands (cli_set.c, cli_show.c, ...) and the
 * runner (cli.c) use it, and it uses none of them, so that the runner's
 * files, which parse through the command table, and the commands, which
 * the table names, do not call each other in a loop. `load` is the one
 * command that runs commands: it reaches the runner through
 * cli_file_runner, which cli_init sets.
 */
#include <stdarg.h>
#include <stdio.h>
#include <rte_common.h>

#include "cli_priv.h"
#include "control.h"

struct shaper *S;
struct cmdline *cl;      /* parser state only: fds -1 */
bool failed;             /* set by a command that failed */

/* not NULL while an --atomic file is checked (cli_exec_atomic) */
struct batch *batch;

int (*cli_file_runner)(const char *path);

void __rte_format_printf(1, 2)
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

void __rte_format_printf(1, 2)
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

/* ---- helpers ---------------------------------------------------- */

void
for_ports(int port, void (*fn)(struct shaper *, uint16_t))
{
	unsigned int i;

	for (i = 0; i < S->nb_ports; i++)
		if (port < 0 || port == S->port_ids[i])
			fn(S, S->port_ids[i]);
}

/* The port word of a command, or -2 after saying why not. */
int
port_of(const char *cmd, const char *word)
{
	char err[SHP_ERR_LEN];
	int p = ctl_port_arg(S, word, err);

	if (p == -2)
		fail("%s: %s", cmd, err);
	return p;
}
