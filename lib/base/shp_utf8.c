/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Well-formed UTF-8 (shp_utf8.h). The table of RFC 3629, section 4: the
 * lead byte fixes the length and the range of the second byte; that range
 * is what excludes the overlong forms (E0 80..9F, F0 80..8F), the
 * surrogates (ED A0..BF) and what lies above U+10FFFF (F4 90..BF, F5..FF).
 */
#include "shp_utf8.h"

unsigned int
shp_utf8_char(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	unsigned int len, i;

	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2)          /* a continuation byte, or C0/C1: overlong */
		return 0;
	if (s[0] < 0xe0) {
		len = 2;
	} else if (s[0] < 0xf0) {
		len = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else if (s[0] < 0xf5) {
		len = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

bool
shp_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	while (n > 0) {
		unsigned int k = shp_utf8_char(p, n);

		if (k == 0)
			return false;
		p += k;
		n -= k;
	}
	return true;
}
