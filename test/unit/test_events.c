/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event stream's ring and its two printed forms (app/events.c,
 * issue 60): the last SHP_EVENTS_KEEP kept by id, each handed to the
 * sink once, a text that would break a line or a JSON string escaped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "events.h"

static unsigned int sunk;
static uint64_t sunk_last;

static void
sink(const struct shp_event *e)
{
	sunk++;
	sunk_last = e->id;
}

static void
test_ring_keeps_the_last(void **state)
{
	unsigned int i;
	uint64_t first = shp_events_last() + 1;

	(void)state;
	shp_event_sink = sink;
	sunk = 0;
	for (i = 0; i < SHP_EVENTS_KEEP + 500; i++)
		assert_int_equal(shp_event_emit(SHP_EV_CTL, 0, "netem",
						"delay 1ms", "delay 2ms"),
				 first + i);
	shp_event_sink = NULL;
	assert_int_equal(sunk, SHP_EVENTS_KEEP + 500);
	assert_int_equal(sunk_last, shp_events_last());
	assert_null(shp_event_get(0));
	assert_null(shp_event_get(shp_events_last() + 1));
	assert_null(shp_event_get(shp_events_last() - SHP_EVENTS_KEEP));
	assert_non_null(shp_event_get(shp_events_last() - SHP_EVENTS_KEEP + 1));
	assert_int_equal(shp_event_get(first + 600)->id, first + 600);
}

static void
test_forms(void **state)
{
	char buf[16384];
	const struct shp_event *e;
	uint64_t id;
	size_t n;

	(void)state;
	id = shp_event_emit(SHP_EV_REST, -1, "class \"q\"", "",
			    "match 'a\\b'\nx");
	e = shp_event_get(id);
	assert_non_null(e);
	n = shp_event_format(e, 1, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_non_null(strstr(buf, "\"port\": null, \"shards\": [], "
			       "\"what\": \"class \\\"q\\\"\", \"old\": \"\", "
			       "\"new\": \"match 'a\\\\b'\\u000ax\", "
			       "\"source\": \"rest\"}\n"));
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
	n = shp_event_format(e, 0, buf, sizeof(buf));
	assert_non_null(strstr(buf, " rest port all class \"q\": - -> "
			       "match 'a\\b' x\n"));
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
	/* one line, however long its texts */
	n = shp_event_format(e, 0, buf, 40);
	assert_int_equal(n, 39);
	assert_int_equal(buf[38], '\n');
	assert_null(memchr(buf, '\n', 38));
}

static void
test_source(void **state)
{
	enum shp_event_src was;

	(void)state;
	was = shp_event_source_set(SHP_EV_REVERT);
	assert_int_equal(shp_event_source(), SHP_EV_REVERT);
	assert_string_equal(shp_event_src_name(shp_event_source()), "revert");
	shp_event_source_set(was);
	assert_int_equal(shp_event_source(), was);
	assert_string_equal(shp_event_src_name(SHP_EV_SCHEDULE), "schedule");
	assert_string_equal(shp_event_src_name(SHP_EV_START), "start");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_keeps_the_last),
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_source),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
