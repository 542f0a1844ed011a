/* SPDX-License-Identifier: BSD-3-Clause */
/* The REST bodies to command lines (lib/conf/ctl_body.c): what is accepted,
 * the line(s) it makes, and what is refused with one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>

#include "ctl_body.h"

/* body of METHOD PATH accepted as exactly the lines want[] (NULL-ended). */
static void
accepts(const char *method, const char *path, const char *body,
	bool atomic, const char *const *want)
{
	struct ctl_body b;
	char err[256] = "";
	unsigned int i;

	if (ctl_body_parse(method, path, body, strlen(body), &b, err,
			   sizeof(err)) != 0)
		fail_msg("%s %s %s refused: %s", method, path, body, err);
	for (i = 0; want[i] != NULL; i++) {
		assert_true(i < b.n);
		assert_string_equal(b.lines[i], want[i]);
	}
	assert_int_equal(b.n, i);
	assert_int_equal(b.atomic, atomic);
	ctl_body_free(&b);
}

#define ACCEPTS(m, p, body, atomic, ...) \
	accepts(m, p, body, atomic, (const char *const[]){ __VA_ARGS__, NULL })

/* Refused with one line "body: ..." holding what (NULL: anything). */
static void
refuses_n(const char *method, const char *path, const char *body,
	  size_t len, const char *what)
{
	struct ctl_body b;
	char err[256] = "";

	assert_int_equal(ctl_body_parse(method, path, body, len, &b, err,
					sizeof(err)), -1);
	assert_true(strncmp(err, "body: ", 6) == 0);
	assert_null(strpbrk(err, "\r\n"));
	if (what != NULL && strstr(err, what) == NULL)
		fail_msg("%s: '%s' does not say '%s'", body, err, what);
	assert_null(b.lines);
	assert_int_equal(b.n, 0);
}

static void
refuses(const char *method, const char *path, const char *body,
	const char *what)
{
	refuses_n(method, path, body, strlen(body), what);
}

static void
test_text(void **state)
{
	(void)state;
	ACCEPTS("PUT", "/v1/ports/0/netem", "{\"text\": \"delay 20ms\"}",
		false, "set netem 0 delay 20ms");
	ACCEPTS("PATCH", "/v1/ports/1/queue", "{\"text\": \"\\tloss 5%  \"}",
		false, "update queue 1 loss 5%");
	ACCEPTS("PUT", "/v1/classes/voip",
		"{\"text\": \"match 'ip_proto 17' netem 'delay 5ms'\"}", false,
		"set class voip match 'ip_proto 17' netem 'delay 5ms'");
	ACCEPTS("PATCH", "/v1/classes/a.b-c_1", "{\"text\": \"prio 1\"}",
		false, "update class a.b-c_1 prio 1");
	/* other fields are ignored, a trailing / is the path */
	ACCEPTS("PUT", "/v1/ports/0/tbf/", "{\"x\": 1, \"text\": \"rate 1mbit\"}",
		false, "set tbf 0 rate 1mbit");
	/* a change that expires */
	ACCEPTS("PUT", "/v1/ports/0/netem",
		"{\"text\": \"delay 5ms\", \"for\": \"30s\"}", false,
		"set netem 0 delay 5ms for 30s");
	ACCEPTS("PATCH", "/v1/ports/1/netem",
		"{\"for\": \"1.5min\", \"text\": \"loss 1%\"}", false,
		"update netem 1 loss 1% for 1.5min");
	refuses("PUT", "/v1/ports/0/netem",
		"{\"text\": \"delay 5ms\", \"for\": \"30s off\"}", "\"for\"");
	refuses("PUT", "/v1/ports/0/netem",
		"{\"text\": \"delay 5ms\", \"for\": 30}", "\"for\"");
	refuses("PUT", "/v1/ports/0/netem",
		"{\"text\": \"delay 5ms\", \"for\": \"\"}", "\"for\"");
	refuses("PUT", "/v1/ports/0/netem", "{\"text\": 5}", "{\"text\"");
	refuses("PUT", "/v1/ports/0/netem", "[]", "{\"text\"");
	refuses("PUT", "/v1/ports/0/netem", "\"x\"", "{\"text\"");
	refuses("PUT", "/v1/ports/0/netem", "{}", "{\"text\"");
	refuses("PUT", "/v1/ports/0/netem", "{\"text\": \"  \"}", "one");
	/* one command per body: no second line, no control byte */
	refuses("PUT", "/v1/ports/0/netem",
		"{\"text\": \"delay 1ms\\nset tbf 0 off\"}", "one");
	refuses("PUT", "/v1/ports/0/netem",
		"{\"text\": \"delay 1ms\\r\"}", "one");
	refuses("PUT", "/v1/ports/0/netem",
		"{\"text\": \"delay\\u0001 1ms\"}", "one");
	refuses("PUT", "/v1/ports/0/netem",
		"{\"text\": \"delay\\u0000 1ms\"}", "not JSON");
}

static void
test_not_json(void **state)
{
	static const char nul[] = "{\"text\": \"a\0b\"}";

	(void)state;
	refuses("PUT", "/v1/ports/0/netem", "{", "not JSON");
	refuses("PUT", "/v1/ports/0/netem", "", "not JSON");
	refuses("PUT", "/v1/ports/0/netem", "\xff\xfe", "not JSON");
	refuses("PUT", "/v1/ports/0/netem", "{\"text\": \"\xc3\x28\"}",
		"not JSON");
	refuses_n("PUT", "/v1/ports/0/netem", nul, sizeof(nul) - 1,
		  "not JSON");
	refuses("PUT", "/v1/ports/0/netem", "{\"text\": \"a\"} x", "not JSON");
}

static void
test_link(void **state)
{
	(void)state;
	ACCEPTS("POST", "/v1/links/1", "{\"up\": false}", false,
		"link down 1");
	ACCEPTS("POST", "/v1/links/0", "{\"up\": true}", false, "link up 0");
	refuses("POST", "/v1/links/1", "{\"up\": \"no\"}", "\"up\"");
	refuses("POST", "/v1/links/1", "{\"up\": 0}", "\"up\"");
	refuses("POST", "/v1/links/1", "{}", "\"up\"");
	/* the carrier too (issue 61); ignored on the way up */
	ACCEPTS("POST", "/v1/links/1", "{\"up\": false, \"carrier\": true}",
		false, "link down 1 carrier");
	ACCEPTS("POST", "/v1/links/1", "{\"up\": true, \"carrier\": true}",
		false, "link up 1");
	ACCEPTS("POST", "/v1/links/1",
		"{\"up\": false, \"carrier\": false}", false, "link down 1");
	refuses("POST", "/v1/links/1", "{\"up\": false, \"carrier\": 1}",
		"\"carrier\"");
}

static void
test_capture(void **state)
{
	(void)state;
	ACCEPTS("POST", "/v1/capture/drops", "{\"file\": \"/tmp/d.pcapng\"}",
		false, "capture drops start /tmp/d.pcapng");
	ACCEPTS("POST", "/v1/capture/drops", "{\"file\": \"d.pcapng\", "
		"\"snaplen\": 64, \"limit\": \"1mb\"}", false,
		"capture drops start d.pcapng snaplen 64 limit 1mb");
	ACCEPTS("POST", "/v1/capture/drops", "{\"file\": \"d\", "
		"\"limit\": 1048576}", false,
		"capture drops start d limit 1048576");
	/* no word can bring words of its own */
	refuses("POST", "/v1/capture/drops", "{\"file\": \"a b\"}", "blanks");
	refuses("POST", "/v1/capture/drops", "{\"file\": \"a\\nstop\"}",
		"blanks");
	refuses("POST", "/v1/capture/drops", "{\"file\": 5}", "\"file\"");
	refuses("POST", "/v1/capture/drops", "{\"file\": \"a\", "
		"\"snaplen\": \"64 limit 1\"}", "\"snaplen\"");
	refuses("POST", "/v1/capture/drops", "{\"file\": \"a\", "
		"\"limit\": \"1 mb\"}", "\"limit\"");
	refuses("PUT", "/v1/capture/drops", "{\"file\": \"a\"}", "no body");
}

static void
test_batch(void **state)
{
	char big[40 * (CTL_BODY_LINES + 2)];
	size_t n = 0;
	unsigned int i;

	(void)state;
	ACCEPTS("POST", "/v1/batch",
		"[{\"op\": \"set\", \"port\": 0, \"key\": \"netem\", "
		"\"text\": \"delay 30ms\"}, {\"op\": \"update\", \"port\": 1, "
		"\"key\": \"tbf\", \"text\": \"rate 2mbit\"}, {\"op\": \"clear\", "
		"\"port\": \"all\", \"key\": \"queue\"}, {\"port\": \"all\", "
		"\"key\": \"netem\", \"text\": \" loss 1% \"}]", true,
		"set netem 0 delay 30ms", "update tbf 1 rate 2mbit",
		"clear queue all", "set netem all loss 1%");
	refuses("POST", "/v1/batch", "[]", "non-empty list");
	refuses("POST", "/v1/batch", "{}", "non-empty list");
	refuses("POST", "/v1/batch", "[1]", "change 1: not an object");
	refuses("POST", "/v1/batch",
		"[{\"port\": 0, \"key\": \"netem\", \"text\": \"x\"}, "
		"{\"op\": \"drop\", \"port\": 0, \"key\": \"netem\"}]",
		"change 2: op");
	refuses("POST", "/v1/batch", "[{\"op\": 1, \"port\": 0, \"key\": "
		"\"netem\", \"text\": \"x\"}]", "change 1: op");
	refuses("POST", "/v1/batch", "[{\"port\": true, \"key\": \"netem\", "
		"\"text\": \"x\"}]", "\"port\"");
	refuses("POST", "/v1/batch", "[{\"port\": 1024, \"key\": \"netem\", "
		"\"text\": \"x\"}]", "\"port\"");
	refuses("POST", "/v1/batch", "[{\"port\": -1, \"key\": \"netem\", "
		"\"text\": \"x\"}]", "\"port\"");
	refuses("POST", "/v1/batch", "[{\"port\": 0.0, \"key\": \"netem\", "
		"\"text\": \"x\"}]", "\"port\"");
	refuses("POST", "/v1/batch", "[{\"port\": \"1\", \"key\": \"netem\", "
		"\"text\": \"x\"}]", "\"port\"");
	refuses("POST", "/v1/batch", "[{\"port\": 0, \"key\": \"net em\", "
		"\"text\": \"x\"}]", "\"key\"");
	refuses("POST", "/v1/batch", "[{\"port\": 0, \"key\": \"netem\"}]",
		"change 1: \"text\"");
	refuses("POST", "/v1/batch", "[{\"port\": 0, \"key\": \"netem\", "
		"\"text\": \"a\\nb\"}]", "change 1: \"text\"");
	/* one more change than a batch takes */
	big[n++] = '[';
	for (i = 0; i <= CTL_BODY_LINES; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "%s{\"op\": "
				      "\"clear\", \"port\": 0, \"key\": \"a\"}",
				      i ? "," : "");
	big[n++] = ']';
	refuses_n("POST", "/v1/batch", big, n, "more than");
}

static void
test_paths_and_bounds(void **state)
{
	static char body[CTL_BODY_MAX + 16];
	char text[CTL_BODY_LINE_MAX + 32];

	(void)state;
	refuses("POST", "/v1/ports/0/netem", "{\"text\": \"x\"}", "no body");
	refuses("PUT", "/v1/ports/x/netem", "{\"text\": \"x\"}", "no body");
	refuses("PUT", "/v1/ports/1024/netem", "{\"text\": \"x\"}", "no body");
	refuses("PUT", "/v1/ports/0/Netem", "{\"text\": \"x\"}", "no body");
	refuses("PUT", "/v1/classes/a b", "{\"text\": \"x\"}", "no body");
	refuses("PUT", "/v1/links/0", "{\"up\": true}", "no body");
	refuses("GET", "/v1/batch", "[]", "no body");
	refuses("PUT", "/v2/ports/0/netem", "{\"text\": \"x\"}", "no body");
	refuses("PUT", "/v1/ports/0/netem/x", "{\"text\": \"x\"}", "no body");
	refuses("PUT", "/v1//ports/0/netem", "{\"text\": \"x\"}", "no body");
	/* a command line longer than the CLI's */
	memset(text, 'x', sizeof(text));
	snprintf(body, sizeof(body), "{\"text\": \"%.*s\"}",
		 CTL_BODY_LINE_MAX, text);
	refuses("PUT", "/v1/ports/0/netem", body, "longer than");
	memset(body, ' ', sizeof(body));
	refuses_n("PUT", "/v1/ports/0/netem", body, CTL_BODY_MAX + 1, "over");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_not_json),
		cmocka_unit_test(test_link),
		cmocka_unit_test(test_capture),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_paths_and_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
