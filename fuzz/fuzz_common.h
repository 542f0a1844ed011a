/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the libFuzzer harnesses: the input as a C string or as
 * a file, an EAL without hugepages, and the switch of the print-and-reparse
 * checks.
 */
#ifndef SHP_FUZZ_COMMON_H
#define SHP_FUZZ_COMMON_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property the code under test broke: say which, then crash so that
 * libFuzzer keeps the input. */
#define FUZZ_BUG(...) do { \
	fprintf(stderr, "fuzz check failed (%s:%d): ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); \
	fputc('\n', stderr); \
	abort(); \
} while (0)

/* The EAL for a harness that needs mbufs or DPDK memory: no hugepages,
 * PCI or shared config, file prefix PREFIX_PID (scripts/fuzz.sh removes
 * the run directories of those that are gone). */
static inline void
fuzz_eal_init(const char *prefix)
{
	char arg[64];
	char *eal[] = {
		(char *)prefix, "--no-huge", "--no-pci", "--no-shconf",
		"-m", "64", "-l", "0", "--log-level=*:error", arg, NULL,
	};

	snprintf(arg, sizeof(arg), "--file-prefix=%s_%d", prefix,
		 (int)getpid());
	if (rte_eal_init(RTE_DIM(eal) - 1, eal) < 0) {
		fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
		abort();
	}
}

/* The input up to its first NUL, NUL-terminated (free() it). */
static inline char *
fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * The input as a regular file the code under test opens by name: one
 * memfd rewritten per input, named through /proc/self/fd (no disk, no
 * leftovers).
 */
static inline const char *
fuzz_file(const uint8_t *data, size_t size)
{
	static char path[64];
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 ||
	    (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("fuzz input file");
		abort();
	}
	return path;
}

/*
 * The print-and-reparse checks (text -> conf -> text -> the same conf)
 * abort on a difference with SHP_FUZZ_ROUNDTRIP=1 (scripts/fuzz.sh's
 * default); with 0 a difference is only noted, to look past one while
 * fuzzing for something else.
 */
static inline bool
fuzz_roundtrip_strict(void)
{
	static int strict = -1;

	if (strict < 0) {
		const char *e = getenv("SHP_FUZZ_ROUNDTRIP");

		strict = e != NULL && strcmp(e, "1") == 0;
	}
	return strict;
}

/* Report a round-trip difference: abort when strict, else note it once
 * per kind (what). */
static inline void
fuzz_roundtrip_failed(const char *what, const char *in, const char *t1,
		      const char *t2)
{
	static const char *told[16];
	unsigned int i;

	if (fuzz_roundtrip_strict()) {
		fprintf(stderr, "%s does not round-trip:\n  input:  '%s'\n"
			"  print:  '%s'\n  again:  '%s'\n", what, in, t1,
			t2 ? t2 : "(refused, or another value)");
		abort();
	}
	for (i = 0; i < 16 && told[i] != NULL; i++)
		if (strcmp(told[i], what) == 0)
			return;
	if (i < 16) {
		told[i] = what;
		fprintf(stderr, "note: %s does not round-trip for '%s' -> "
			"'%s' -> '%s' (SHP_FUZZ_ROUNDTRIP=1 makes it fatal)\n",
			what, in, t1, t2 ? t2 : "(refused, or another value)");
	}
}

#endif
