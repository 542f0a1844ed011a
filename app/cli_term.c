/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CLI's prompt: rdline driven key by key on a terminal (a line longer
 * than rdline keeps is refused, not cut), whole lines from a pipe, and
 * the tc words completed after `set netem|tbf PORT`; between keys the
 * main lcore's control duties go on (ctl_tick). Running a line is
 * cli.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_rdline.h>

#include "cli.h"
#include "cli_priv.h"
#include "control.h"
#include "ctl_socket.h"


/* rdline (librte_cmdline 22.11) keeps RDLINE_BUF_SIZE = 512 characters of
 * a typed line and drops every further key without a word; the constant
 * is not in its public headers. */
#define TTY_LINE_MAX 512

/* ---- the prompt ---------------------------------------------------- */

/*
 * After `set netem|tbf PORT WORD ...`, librte_cmdline sees the rest of the
 * line as one token and completes only its first word: TAB and `?` on the
 * next words are ours.
 */
struct tc_word {
	const char *word;
	const char *help;
};

static const struct tc_word netem_words[] = {
	{ "delay", "TIME [JITTER [CORRELATION]]" },
	{ "distribution", "uniform|normal|pareto|paretonormal|FILE" },
	{ "loss", "[random] PERCENT [CORR] | state P13 ... | gemodel P ..." },
	{ "duplicate", "PERCENT [CORRELATION]" },
	{ "corrupt", "PERCENT [CORRELATION]" },
	{ "reorder", "PERCENT [CORRELATION] [gap DISTANCE]" },
	{ "gap", "DISTANCE (after reorder)" },
	{ "rate", "RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]" },
	{ "slot", "MIN_DELAY [MAX_DELAY] [packets N] [bytes N]" },
	{ "limit", "PACKETS" },
	{ "ecn", "mark ECN-capable packets instead of dropping them" },
	{ "seed", "N (random streams)" },
	{ "noreorder", "jitter keeps the packet order" },
	{ "inorder", "jitter keeps the order, its mean and deviation" },
	{ "misorder", "PERCENT [CORRELATION] depth FRAMES (overtaken by)" },
	{ "misorder_timeout", "TIME (the longest a frame waits)" },
	{ NULL, NULL },
};

static const struct tc_word tbf_words[] = {
	{ "rate", "RATE" },
	{ "burst", "SIZE (also buffer, maxburst)" },
	{ "limit", "SIZE (or latency)" },
	{ "latency", "TIME (or limit)" },
	{ "peakrate", "RATE (with mtu)" },
	{ "mtu", "SIZE (also minburst)" },
	{ "overhead", "BYTES" },
	{ "mpu", "BYTES" },
	{ "linklayer", "ethernet|atm" },
	{ NULL, NULL },
};

/* The tc words for `buf` (the line left of the cursor), and where its last,
 * partial word starts; NULL when the line is not after the first tc word
 * of a `set netem|tbf PORT`. */
static const struct tc_word *
tc_words_for(const char *buf, const char **partial)
{
	const struct tc_word *words;
	const char *p = buf;
	int nw = 0;

	if (starts_with_words(buf, "set netem"))
		words = netem_words;
	else if (starts_with_words(buf, "set tbf"))
		words = tbf_words;
	else
		return NULL;
	/* count the complete words: set, netem|tbf, PORT, >= 1 tc word */
	for (;;) {
		p += strspn(p, " \t");
		if (*p == '\0')
			break;
		p += strcspn(p, " \t");
		if (*p == '\0') {   /* a word with no blank after: partial */
			break;
		}
		nw++;
	}
	if (nw < 4)
		return NULL;
	*partial = buf + strlen(buf);
	while (*partial > buf && (*partial)[-1] != ' ' &&
	       (*partial)[-1] != '\t')
		(*partial)--;
	return words;
}

/* rdline's completion contract (cmdline_complete): *state 0 for TAB, -1
 * for `?`; called again while it returns 1 (a choice in dst), 2 when dst
 * holds characters to add, 0 when done. Our states for a listing: -2 - i
 * is "next, look from word i". */
static int
tc_complete(const struct tc_word *words, const char *partial, char *dst,
	    unsigned int size, int *state)
{
	size_t plen = strlen(partial);
	int i, nmatch = 0, first = -1;

	if (*state == 0) {   /* TAB: the unique completion, or a listing */
		size_t common = 0;

		for (i = 0; words[i].word != NULL; i++) {
			if (strncmp(words[i].word, partial, plen) != 0)
				continue;
			if (nmatch++ == 0) {
				first = i;
				common = strlen(words[i].word);
			} else {
				size_t k = 0;

				while (k < common && words[first].word[k] ==
				       words[i].word[k])
					k++;
				common = k;
			}
		}
		if (nmatch == 0)
			return 0;
		if (nmatch == 1 || common > plen) {
			snprintf(dst, size, "%.*s%s", (int)(common - plen),
				 words[first].word + plen,
				 nmatch == 1 ? " " : "");
			return 2;
		}
		*state = -1;   /* several, nothing in common: list them */
	}
	i = *state == -1 ? 0 : -2 - *state;
	for (; words[i].word != NULL; i++)
		if (strncmp(words[i].word, partial, plen) == 0) {
			snprintf(dst, size, "%-13s %s", words[i].word,
				 words[i].help);
			*state = -2 - (i + 1);
			return 1;
		}
	return 0;
}

static bool tty_overflow;   /* rdline dropped keys of this line */

static int
rdl_write(struct rdline *rdl, char c)
{
	(void)rdl;
	return write(STDOUT_FILENO, &c, 1) == 1 ? 0 : -1;
}

static void
rdl_validate(struct rdline *rdl, const char *buf, unsigned int size)
{
	(void)rdl; (void)size;
	if (tty_overflow) {
		tty_overflow = false;
		failed = false;
		fail("line longer than %d characters, the prompt's limit: not "
		     "run (nothing changed); put long commands in a file "
		     "(load FILE)", TTY_LINE_MAX);
		fflush(stdout);
		return;
	}
	cli_exec(buf);
}

static int
rdl_complete(struct rdline *rdl, const char *buf, char *dst,
	     unsigned int size, int *state)
{
	const struct tc_word *words;
	const char *partial;

	(void)rdl;
	words = tc_words_for(buf, &partial);
	if (words != NULL)
		return tc_complete(words, partial, dst, size, state);
	return cmdline_complete(cl, buf, state, dst, size);
}

/* Feed keys to rdline, noticing a key it drops because the line is full
 * (it says nothing). `esc` follows VT100 sequences, whose keys are not
 * characters of the line. */
static void
tty_keys(struct shaper *s, struct rdline *rdl, const char *buf, ssize_t n)
{
	static int esc;
	ssize_t i;

	for (i = 0; i < n && !s->quit; i++) {
		unsigned char k = (unsigned char)buf[i];
		int rc;

		if (k == 0x1b) {
			esc = 1;
		} else if (esc) {
			if (esc == 1 && (k == '[' || k == 'O'))
				esc = 2;
			else if (esc == 2 && (isdigit(k) || k == ';'))
				;
			else
				esc = 0;
		} else if (isprint(k) && k != '?' &&
			   strlen(rdline_get_buffer(rdl)) > TTY_LINE_MAX) {
			/* rdline_get_buffer adds a '\n': > is full */
			tty_overflow = true;
		} else if (k == 0x03) {   /* Ctrl-C clears the line */
			tty_overflow = false;
		}
		rc = rdline_char_in(rdl, buf[i]);
		if (rc == RDLINE_RES_VALIDATED) {
			const char *b = rdline_get_buffer(rdl);

			if (b != NULL && strspn(b, " \t\r\n") < strlen(b))
				rdline_add_history(rdl, b);
			if (!s->quit)
				rdline_newline(rdl, PROMPT);
		} else if (rc == RDLINE_RES_EOF || rc == RDLINE_RES_EXITED) {
			out("\n");
			s->quit = true;
		}
	}
}

/* A pipe: whole lines, echoed after the prompt as a terminal would show
 * them, and no terminal control sequences in the output. */
struct line_in {
	char buf[CLI_LINE_MAX + 2];
	size_t len;
	size_t dropped;     /* characters beyond the limit */
	unsigned int lineno;
};

static void
pipe_line(struct line_in *li)
{
	li->lineno++;
	li->buf[li->len] = '\0';
	out(PROMPT "%s%s\n", li->buf, li->dropped ? " ..." : "");
	if (li->dropped) {
		failed = false;
		fail("input line %u: %zu characters, more than %d: not run "
		     "(nothing changed)", li->lineno, li->len + li->dropped,
		     CLI_LINE_MAX);
		fflush(stdout);
	} else {
		cli_exec(li->buf);
	}
	li->len = 0;
	li->dropped = 0;
}

static void
pipe_keys(struct shaper *s, struct line_in *li, const char *buf, ssize_t n)
{
	ssize_t i;

	for (i = 0; i < n && !s->quit; i++) {
		if (buf[i] == '\n') {
			pipe_line(li);
		} else if (li->len < CLI_LINE_MAX) {
			li->buf[li->len++] = buf[i];
		} else {
			li->dropped++;
		}
	}
}

void
cli_interact(struct shaper *s)
{
	struct termios saved, raw;
	bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
	struct rdline *rdl = NULL;
	struct line_in *li = NULL;

	if (tty)
		rdl = rdline_new(rdl_write, rdl_validate, rdl_complete, NULL);
	else
		li = calloc(1, sizeof(*li));
	if (rdl == NULL && li == NULL) {
		fprintf(stderr, "dpdk-shaper: cannot start the prompt\n");
		s->exit_code = 1;
		return;
	}
	if (tty) {
		/* As cmdline_stdin_new(): keys one by one, no echo (rdline
		 * echoes), Ctrl-C a key (clears the line) not a signal. */
		raw = saved;
		raw.c_lflag &= ~(ICANON | ECHO | ISIG);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	fflush(stdout);
	if (tty)
		rdline_newline(rdl, PROMPT);
	while (!s->quit) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		char buf[256];
		bool printed;
		ssize_t n;
		int rc;

		/* a `for` change goes back on its time, not a poll later */
		rc = ctl_socket_poll(&pfd, 1, ctl_tick_wait_ms(s, 50));
		if (ctl_tick(s, true, &printed))
			break;
		if (printed && tty)
			rdline_redisplay(rdl);
		if (rc <= 0)
			continue;   /* timeout, or a signal (EINTR) */
		n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {       /* end of input: quit */
			if (!tty && li->len + li->dropped > 0)
				pipe_line(li);   /* a last line without \n */
			out(tty ? "\n" : "");
			break;
		}
		if (tty)
			tty_keys(s, rdl, buf, n);
		else
			pipe_keys(s, li, buf, n);
	}
	fflush(stdout);
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
		rdline_free(rdl);
	}
	free(li);
}
