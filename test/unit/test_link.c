/* SPDX-License-Identifier: BSD-3-Clause */
/* A port's link state as the control lcore tracks it (issue 29): the
 * first reading is no change, a change up <-> down is counted and
 * stamped, a new speed alone is not a change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "shp_stats.h"

static void
test_link_changes(void **state)
{
	struct shp_link l = { 0 };

	(void)state;
	assert_false(shp_link_update(&l, false, false, 0, 100));
	assert_true(l.known);
	assert_false(l.up);
	assert_int_equal(l.changes, 0);
	assert_int_equal(l.changed_ns, 0);
	assert_true(shp_link_update(&l, true, true, 25000, 200));
	assert_true(l.up && l.full_duplex);
	assert_int_equal(l.speed_mbps, 25000);
	assert_int_equal(l.changes, 1);
	assert_int_equal(l.changed_ns, 200);
	/* renegotiated at another speed, still up: no change */
	assert_false(shp_link_update(&l, true, true, 10000, 300));
	assert_int_equal(l.speed_mbps, 10000);
	assert_int_equal(l.changes, 1);
	assert_int_equal(l.changed_ns, 200);
	assert_true(shp_link_update(&l, false, false, 0, 400));
	assert_int_equal(l.changes, 2);
	assert_int_equal(l.changed_ns, 400);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_changes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
