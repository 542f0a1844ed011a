/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CPU time a worker lost, as the kernel counts it.
 *
 * Why: a worker's own loop clock (shp_stall.h) sees a loss only when a
 * loop is far longer than its work (200 us and more), yet the losses that
 * shed packets start at --max-late (50 us): a preemption of 100 us on a
 * lcore at 4 Mpps makes 400 packets late with no loop the worker can tell
 * from work. The kernel knows better: a thread's run-queue wait (what it
 * was runnable and not running, schedstat's run_delay) and the times it
 * was put on a CPU, and a vCPU's steal (what the hypervisor ran others
 * on it). Read by the control side when it reports, never on the packet
 * path; a worker that busy-polls never sleeps, so every wait is a loss.
 *
 * Steal is per CPU: it is a worker's only when the worker is pinned to
 * one CPU (an EAL lcore is, unless --lcores gave it a set).
 */
#ifndef SHP_CPU_LOST_H
#define SHP_CPU_LOST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct shp_cpu_lost {
	bool have_wait;       /* the kernel keeps schedstat (CONFIG_SCHED_INFO) */
	bool have_steal;      /* pinned to one CPU whose steal is known */
	uint64_t wait_ns;     /* run-queue wait */
	uint64_t slices;      /* times put on a CPU */
	uint64_t steal_ns;    /* the CPU's steal */
};

/* "RUN_NS WAIT_NS SLICES" of /proc/.../schedstat; 0, or -1 if malformed. */
int shp_schedstat_parse(const char *line, uint64_t *wait_ns,
			uint64_t *slices);

/* CPU cpu's steal, in clock ticks, from the text of /proc/stat; 0, or -1
 * if that CPU has no line or no steal field. */
int shp_procstat_steal(const char *text, int cpu, uint64_t *ticks);

/* An EAL lcore's CPU when it may run on one only, else -1. */
int shp_cpu_lost_lcore_cpu(unsigned int lcore);

/* Now, for thread tid (0: the caller, -1: none) and CPU cpu (-1: none). */
void shp_cpu_lost_read(pid_t tid, int cpu, struct shp_cpu_lost *out);

/* What was lost between two reads (now - then); unknowns stay unknown. */
void shp_cpu_lost_since(const struct shp_cpu_lost *then,
			const struct shp_cpu_lost *now,
			struct shp_cpu_lost *out);

#endif
