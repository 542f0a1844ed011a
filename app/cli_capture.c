/* SPDX-License-Identifier: BSD-3-Clause */
/* The CLI's `capture drops start|stop` and `show capture` (capture.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "cli_priv.h"

/* FILE [snaplen BYTES] [limit BYTES], at most once each */
static int
capture_words(char *args, const char **path, uint32_t *snaplen,
	      uint64_t *limit, char *err)
{
	char *w[6];
	int n = shp_split_words(args, w, (int)RTE_DIM(w)), i;
	bool got_snap = false, got_limit = false;

	if (n < 1 || n % 2 == 0) {
		snprintf(err, SHP_ERR_LEN, "expected FILE [snaplen BYTES] "
			 "[limit BYTES]");
		return -1;
	}
	*path = w[0];
	for (i = 1; i < n; i += 2) {
		if (strcmp(w[i], "snaplen") == 0 && !got_snap) {
			if (shp_capture_parse_snaplen(w[i + 1], snaplen,
						      err) < 0)
				return -1;
			got_snap = true;
		} else if (strcmp(w[i], "limit") == 0 && !got_limit) {
			if (shp_capture_parse_limit(w[i + 1], limit, err) < 0)
				return -1;
			got_limit = true;
		} else {
			snprintf(err, SHP_ERR_LEN, "'%s': expected snaplen "
				 "BYTES or limit BYTES (each once)", w[i]);
			return -1;
		}
	}
	return 0;
}

/* shaper_capture_show through out() (a socket client's, or stdout) */
static void
show_out(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL) {
		fail("show capture: out of memory");
		return;
	}
	shaper_capture_show(S, f);
	fclose(f);
	out("%s", buf);
	free(buf);
}

void
cmd_capture_start(void *res, struct cmdline *c, void *data)
{
	struct r_class *r = res;
	char err[SHP_ERR_LEN], words[REST_LEN];
	const char *path = NULL;
	uint32_t snaplen = 0;
	uint64_t limit = 0;

	(void)c; (void)data;
	snprintf(words, sizeof(words), "%s", r->args);
	if (capture_words(words, &path, &snaplen, &limit, err) < 0 ||
	    shaper_capture_start(S, path, snaplen, limit, true, err) < 0) {
		fail("capture drops start: %s", err);
		return;
	}
	out("drop capture: started, to %s (snaplen %u, limit %" PRIu64
	    " bytes)\n", path, snaplen ? snaplen : SHP_CAP_SNAPLEN_DEFAULT,
	    limit ? limit : SHP_CAP_LIMIT_DEFAULT);
}

void
cmd_capture_stop(void *res, struct cmdline *c, void *data)
{
	char err[SHP_ERR_LEN];

	(void)res; (void)c; (void)data;
	if (shaper_capture_stop(S, err) < 0) {
		fail("capture drops stop: %s", err);
		return;
	}
	show_out();
}

void
cmd_show_capture(void *res, struct cmdline *c, void *data)
{
	(void)res; (void)c; (void)data;
	show_out();
}
