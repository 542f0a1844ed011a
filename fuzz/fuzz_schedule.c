/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A --schedule file to shp_sched_parse (lib/conf/schedule.h), with ports 0 and
 * 1: a refusal is one line naming the file and the line; an accepted
 * schedule's times never go backwards, its repeat is longer than its last
 * time, its link state is defined at any time, and a cursor walks its
 * occurrences in order.
 */
#include "fuzz_common.h"
#include "schedule.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t ports[] = { 0, 1 };
	static const struct shp_kind_env env = {
		.bands = 3, .ring_size = 1024, .seed = 1, .seed_set = true,
	};
	struct shp_sched s;
	struct shp_sched_cursor c = { 0, 0 };
	char err[SHP_ERR_LEN];
	uint64_t last = 0, since;
	unsigned int i;
	FILE *f;

	if (size == 0)
		return 0;
	f = fmemopen((void *)(uintptr_t)data, size, "r");
	if (f == NULL)
		return 0;
	err[0] = '\0';
	if (shp_sched_parse(&s, "s", f, ports, 2, &env, err) < 0) {
		fclose(f);
		if (strncmp(err, "s:", 2) != 0 || strchr(err, '\n') != NULL)
			FUZZ_BUG("refused without a one-line reason naming the "
				 "file: '%s'", err);
		return 0;
	}
	fclose(f);
	for (i = 0; i < s.nb; i++) {
		if (s.ev[i].t < last)
			FUZZ_BUG("line %u goes backwards", s.ev[i].line);
		last = s.ev[i].t;
		if (s.ev[i].port > 1)
			FUZZ_BUG("port %d accepted", s.ev[i].port);
	}
	if (s.repeat != 0 && s.repeat <= last)
		FUZZ_BUG("repeat %" PRIu64 " not after %" PRIu64, s.repeat,
			 last);
	last = 0;
	for (i = 0; i < 64; i++) {
		uint64_t t = shp_sched_cursor_time(&s, &c);

		if (t == SHP_SCHED_NONE)
			break;
		if (t < last)
			FUZZ_BUG("occurrence %u before the one before", i);
		last = t;
		shp_sched_link_down(&s, (uint16_t)(i & 1), t, &since);
		if (since != SHP_SCHED_NONE && since > t)
			FUZZ_BUG("a link event after the time asked");
		shp_sched_cursor_next(&s, &c);
	}
	shp_sched_free(&s);
	return 0;
}
