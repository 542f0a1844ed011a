/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Well-formed UTF-8 (lib/base/shp_utf8.c): every boundary of RFC 3629's
 * table accepted, every form one step outside it refused (issue 58).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "shp_utf8.h"

#define OK(s)  assert_true(shp_utf8_valid(s, sizeof(s) - 1))
#define BAD(s) assert_false(shp_utf8_valid(s, sizeof(s) - 1))

static void
test_well_formed(void **state)
{
	(void)state;
	OK("");
	OK("set class voip match 'ip_proto 17'");
	OK("\x7f");
	OK("\xc2\x80");                  /* U+0080 */
	OK("\xdf\xbf");                  /* U+07FF */
	OK("\xe0\xa0\x80");              /* U+0800 */
	OK("\xed\x9f\xbf");              /* U+D7FF, below the surrogates */
	OK("\xee\x80\x80");              /* U+E000, above them */
	OK("\xef\xbf\xbf");              /* U+FFFF */
	OK("\xf0\x90\x80\x80");          /* U+10000 */
	OK("\xf4\x8f\xbf\xbf");          /* U+10FFFF */
	OK("d\xc3\xa9lai \xe2\x82\xac \xf0\x9f\x98\x80");
	assert_int_equal(shp_utf8_char((const unsigned char *)"\xf4\x8f\xbf\xbf",
				       4), 4);
}

static void
test_overlong(void **state)
{
	(void)state;
	BAD("\xc0\x80");                 /* NUL in two bytes */
	BAD("\xc0\xaf");                 /* '/' */
	BAD("\xc1\xbf");
	BAD("\xe0\x80\x80");
	BAD("\xe0\x9f\xbf");             /* U+07FF in three bytes */
	BAD("\xf0\x80\x80\x80");
	BAD("\xf0\x8f\xbf\xbf");         /* U+FFFF in four bytes */
}

static void
test_surrogates_and_beyond(void **state)
{
	(void)state;
	BAD("\xed\xa0\x80");             /* U+D800 */
	BAD("\xed\xbf\xbf");             /* U+DFFF */
	BAD("\xed\xa0\xbd\xed\xb8\x80"); /* a pair, CESU-8 */
	BAD("\xf4\x90\x80\x80");         /* U+110000 */
	BAD("\xf5\x80\x80\x80");
	BAD("\xf7\xbf\xbf\xbf");
	BAD("\xf8\x88\x80\x80\x80");     /* five bytes */
	BAD("\xfe");
	BAD("\xff");
}

static void
test_cut_and_stray(void **state)
{
	(void)state;
	BAD("\x80");
	BAD("a\xbfz");
	BAD("\xc3");                     /* cut at the end */
	BAD("\xc3\x28");                 /* the second byte no continuation */
	BAD("\xe2\x82");
	BAD("\xe2\x82(");
	BAD("\xf0\x9f\x98");
	BAD("\xf0\x9f\x98(");
	/* the length bounds the look-ahead: a well-formed character beyond
	 * it is not read */
	assert_int_equal(shp_utf8_char((const unsigned char *)"\xc3\xa9", 1),
			 0);
	assert_false(shp_utf8_valid("\xc3\xa9", 1));
	assert_int_equal(shp_utf8_char((const unsigned char *)"", 0), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_well_formed),
		cmocka_unit_test(test_overlong),
		cmocka_unit_test(test_surrogates_and_beyond),
		cmocka_unit_test(test_cut_and_stray),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
