/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The REST API's body parser (lib/conf/ctl_body.c) on arbitrary bodies, and
 * the command lines it makes run by the CLI (app/cli.c and its handlers,
 * on the shaper of fuzz_shaper.h), as the control socket runs them. The
 * first byte of the input picks the request (method and path), the rest is
 * its body. Checked on every input:
 *  - a refused body gets one line, "body: ...", of text (it becomes the
 *    400 message), and no lines;
 *  - an accepted one makes 1 line (a batch: 1..CTL_BODY_LINES, atomic),
 *    each at most CTL_BODY_LINE_MAX characters, with no control byte but a
 *    tab and no blank at either end, starting with the command the request
 *    stands for;
 *  - the CLI applies those lines or refuses them with a first line
 *    "error: ..." (one line in all for a single command), and never
 *    crashes.
 * Each input starts from the same state (fuzz_shaper.h's reset, links up).
 */
#include "fuzz_shaper.h"
#include "ctl_body.h"

static const struct {
	const char *method, *path, *cmd;   /* cmd: what each line starts with */
} routes[] = {
	{ "PUT", "/v1/ports/0/netem", "set netem 0 " },
	{ "PATCH", "/v1/ports/1/netem", "update netem 1 " },
	{ "PUT", "/v1/ports/1/tbf", "set tbf 1 " },
	{ "PATCH", "/v1/ports/0/tbf", "update tbf 0 " },
	{ "PATCH", "/v1/ports/1/queue", "update queue 1 " },
	{ "PUT", "/v1/classes/c", "set class c " },
	{ "PATCH", "/v1/classes/c", "update class c " },
	{ "POST", "/v1/links/1", "link " },
	{ "POST", "/v1/batch", NULL },
	{ "POST", "/v1/batch", NULL },
	/* what takes no body */
	{ "GET", "/v1/batch", "" },
	{ "PUT", "/v1/ports/x/netem", "" },
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	fuzz_eal_init("fuzz_cli");
	setup_shaper(&shaper);
	return 0;
}

static void
check_text(const char *s, size_t max, const char *what)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max)
		FUZZ_BUG("%s of %zu characters", what, n);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			FUZZ_BUG("%s holds byte 0x%02x: '%s'", what, c, s);
	}
}

static void
check_line(const char *line, const char *cmd)
{
	size_t n = strlen(line);

	check_text(line, CTL_BODY_LINE_MAX, "a line");
	if (line[0] == ' ' || line[0] == '\t' || line[n - 1] == ' ' ||
	    line[n - 1] == '\t')
		FUZZ_BUG("a blank at an end of '%s'", line);
	if (cmd != NULL && strncmp(line, cmd, strlen(cmd)) != 0)
		FUZZ_BUG("'%s' is not a '%s'", line, cmd);
	if (cmd == NULL && strncmp(line, "set ", 4) != 0 &&
	    strncmp(line, "update ", 7) != 0 &&
	    strncmp(line, "clear ", 6) != 0)
		FUZZ_BUG("'%s' is no stage change", line);
	if (cmd != NULL && strcmp(cmd, "link ") == 0 &&
	    strcmp(line, "link up 1") != 0 && strcmp(line, "link down 1") != 0)
		FUZZ_BUG("'%s' is no link change", line);
}

/* The CLI's answer: applied, or refused with a first line "error: ". */
static void
run(const struct ctl_body *b)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int rc;

	if (f == NULL)
		abort();
	if (b->atomic)
		rc = cli_exec_atomic(b->lines, b->n, f);
	else
		rc = cli_exec_to(b->lines[0], f);
	fclose(f);
	if (rc != 0) {
		if (strncmp(out, "error: ", 7) != 0)
			FUZZ_BUG("'%s' refused without an error line: '%s'",
				 b->lines[0], out);
		if (!b->atomic && strchr(out, '\n') != out + len - 1)
			FUZZ_BUG("'%s' refused with more than one line: '%s'",
				 b->lines[0], out);
	}
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_body b;
	char err[512];
	unsigned int r, i;
	FILE *null;

	if (size < 1 || size - 1 > CTL_BODY_MAX)
		return 0;
	r = data[0] % RTE_DIM(routes);
	if (ctl_body_parse(routes[r].method, routes[r].path,
			   (const char *)data + 1, size - 1, &b, err,
			   sizeof(err)) < 0) {
		if (strncmp(err, "body: ", 6) != 0)
			FUZZ_BUG("a refusal not starting 'body: ': '%s'", err);
		check_text(err, sizeof(err) - 1, "the refusal");
		if (b.lines != NULL || b.n != 0)
			FUZZ_BUG("lines left after a refusal");
		return 0;
	}
	if (routes[r].cmd != NULL && routes[r].cmd[0] == '\0')
		FUZZ_BUG("%s %s took a body", routes[r].method,
			 routes[r].path);
	if (b.n == 0 || b.n > CTL_BODY_LINES ||
	    (b.n > 1 && !b.atomic) || b.atomic != (routes[r].cmd == NULL))
		FUZZ_BUG("%u lines, atomic %d", b.n, b.atomic);
	for (i = 0; i < b.n; i++)
		check_line(b.lines[i], routes[r].cmd);
	run(&b);
	ctl_body_free(&b);
	reset(&shaper);
	null = fopen("/dev/null", "w");
	if (null == NULL || cli_exec_to("link up all", null) != 0)
		abort();
	fclose(null);
	return 0;
}
