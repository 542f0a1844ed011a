/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket's line reader (app/ctl_socket.c, ctl_line_feed) on
 * arbitrary bytes, cut into arbitrary pieces as recv() may return them:
 * the first byte of the input seeds the cuts. Checked on every input:
 *  - the lines are the same however the bytes were cut (fed whole, byte
 *    by byte, and in the seeded pieces);
 *  - a line given as a command (CTL_LINE_OK) holds at most CTL_LINE_MAX
 *    characters, no newline, no NUL or other control byte but a tab, and
 *    no \r at its end, well-formed UTF-8; it is exactly the input's line
 *    (a \r before the newline removed);
 *  - a line longer than CTL_LINE_MAX is CTL_LINE_LONG with its full length,
 *    never run cut; one with a control byte, or not well-formed UTF-8,
 *    CTL_LINE_BINARY;
 *  - what follows the last newline is held, not given as a line.
 * The socket itself is not opened: cli_exec_to() is never called.
 */
#include "fuzz_common.h"
#include "ctl_socket.h"
#include "shp_utf8.h"

#define MAX_LINES 4096

int cli_exec_to(const char *line, FILE *f);
int cli_exec_atomic(char *const *lines, unsigned int n, FILE *f);
int
cli_exec_atomic(char *const *lines, unsigned int n, FILE *f)
{
	(void)lines; (void)n; (void)f;
	abort();
}

int
cli_exec_to(const char *line, FILE *f)
{
	(void)line; (void)f;
	abort();   /* the reader runs nothing */
}

struct got {
	unsigned int n;
	enum ctl_line_status st[MAX_LINES];
	size_t length[MAX_LINES];
	uint64_t hash[MAX_LINES];
	const uint8_t *data;   /* the whole input, to check OK lines */
	size_t size, pos;      /* where the current line starts in data */
};

static uint64_t
fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	while (n--)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static void
on_line(void *arg, enum ctl_line_status st, const char *text, size_t length)
{
	struct got *g = arg;
	const uint8_t *nl = memchr(g->data + g->pos, '\n', g->size - g->pos);
	size_t raw, tl = strlen(text), i;

	if (nl == NULL)
		FUZZ_BUG("a line without a newline in the input");
	raw = (size_t)(nl - (g->data + g->pos));
	if (length != raw)
		FUZZ_BUG("line length %zu, the input's is %zu", length, raw);
	if (st == CTL_LINE_OK) {
		size_t want = raw;

		if (raw > 0 && g->data[g->pos + raw - 1] == '\r')
			want--;
		if (raw > CTL_LINE_MAX || tl != want ||
		    memcmp(text, g->data + g->pos, want) != 0)
			FUZZ_BUG("an OK line is not the input's line");
		for (i = 0; i < tl; i++) {
			unsigned char c = (unsigned char)text[i];

			if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
				FUZZ_BUG("a control byte in an OK line");
		}
		if (!shp_utf8_valid(text, tl))
			FUZZ_BUG("an OK line is not well-formed UTF-8");
		if (tl > 0 && text[tl - 1] == '\r' &&
		    g->data[g->pos + raw - 1] != '\r')
			FUZZ_BUG("a \\r left at the end");
	} else if (st == CTL_LINE_LONG) {
		if (raw <= CTL_LINE_MAX)
			FUZZ_BUG("a line of %zu reported long", raw);
	} else if (st == CTL_LINE_BINARY) {
		if (raw > CTL_LINE_MAX ||
		    memchr(g->data + g->pos, 0, raw) == NULL) {
			for (i = 0; i < raw; i++) {
				unsigned char c = g->data[g->pos + i];

				if ((c < 0x20 && c != '\t' && c != '\r') ||
				    c == 0x7f)
					break;
			}
			if (i == raw && shp_utf8_valid((const char *)g->data +
						       g->pos, raw))
				FUZZ_BUG("a text line reported binary");
		}
	}
	if (g->n < MAX_LINES) {
		g->st[g->n] = st;
		g->length[g->n] = length;
		g->hash[g->n] = fnv(text, tl);
		g->n++;
	}
	g->pos += raw + 1;
}

static void
feed(struct got *g, struct ctl_line_reader *r, const uint8_t *data,
     size_t size, unsigned int cut)
{
	size_t off = 0;
	uint32_t x = cut * 2654435761u + 1;

	memset(r, 0, sizeof(*r));
	g->n = 0;
	g->pos = 0;
	g->data = data;
	g->size = size;
	while (off < size) {
		size_t n;

		if (cut == 0)
			n = size;
		else if (cut == 1)
			n = 1;
		else {
			x ^= x << 13; x ^= x >> 17; x ^= x << 5;
			n = 1 + x % 4096;
		}
		if (n > size - off)
			n = size - off;
		ctl_line_feed(r, (const char *)data + off, n, on_line, g);
		off += n;
	}
	if (r->len + r->dropped != size - g->pos)
		FUZZ_BUG("the rest after the last newline is not held");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctl_line_reader r;
	static struct got a, b;
	unsigned int cut, i;

	if (size < 1)
		return 0;
	cut = 2 + data[0];
	feed(&a, &r, data + 1, size - 1, 0);
	for (i = 1; i <= 2; i++) {
		feed(&b, &r, data + 1, size - 1, i == 1 ? 1 : cut);
		if (a.n != b.n ||
		    memcmp(a.st, b.st, a.n * sizeof(a.st[0])) != 0 ||
		    memcmp(a.length, b.length, a.n * sizeof(a.length[0])) ||
		    memcmp(a.hash, b.hash, a.n * sizeof(a.hash[0])) != 0)
			FUZZ_BUG("the lines depend on how the input is cut");
	}
	return 0;
}
