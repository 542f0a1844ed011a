/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CLI (app/cli*.c: librte_cmdline parsing of our instruction table, and
 * the handlers behind it, app/control.c) on arbitrary command lines, one
 * per input line, against a shaper of two egress ports whose stages exist
 * but whose ethdevs do not: every command but `load` runs for real
 * (parsing, reconfiguration with RCU publication, show, clear, stop). `load`
 * reads files by name, so inputs naming it are skipped: the command file
 * reader is the same code as the lines given here; `capture drops start`
 * writes one, so inputs naming `capture` are skipped too (its words are
 * unit-tested: test/cli/test_capture_live.py).
 *
 * Each input starts from the same state (no tbf, no netem, tos, default
 * priomap, forwarding started), so a crash reproduces from its input alone.
 */
#include "fuzz_shaper.h"

#define MAX_LINES 16

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	fuzz_eal_init("fuzz_cli");
	setup_shaper(&shaper);
	/* command output is exercised, not read (SHP_FUZZ_CLI_OUT=1 keeps
	 * it, to see what an input does) */
	if (getenv("SHP_FUZZ_CLI_OUT") == NULL &&
	    freopen("/dev/null", "w", stdout) == NULL)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_str(data, size), *line, *next;
	int n = 0;

	if (strstr(in, "load") != NULL || strstr(in, "capture") != NULL) {
		free(in);
		return 0;
	}
	for (line = in; *line != '\0' && n < MAX_LINES; line = next, n++) {
		next = line + strcspn(line, "\n");
		if (*next == '\n')
			*next++ = '\0';
		cli_exec(line);
	}
	reset(&shaper);
	free(in);
	return 0;
}
