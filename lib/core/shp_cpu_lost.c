/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE   /* rte_lcore_cpuset, CPU_COUNT */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <rte_lcore.h>

#include "shp_cpu_lost.h"

int
shp_schedstat_parse(const char *line, uint64_t *wait_ns, uint64_t *slices)
{
	uint64_t run, wait, n;

	if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64, &run, &wait,
		   &n) != 3)
		return -1;
	*wait_ns = wait;
	*slices = n;
	return 0;
}

int
shp_procstat_steal(const char *text, int cpu, uint64_t *ticks)
{
	char tag[32];
	const char *p = text;
	size_t len;

	if (cpu < 0)
		return -1;
	len = (size_t)snprintf(tag, sizeof(tag), "cpu%d ", cpu);
	while (p != NULL && *p != '\0') {
		if (strncmp(p, tag, len) == 0) {
			uint64_t v[8];

			/* user nice system idle iowait irq softirq steal */
			if (sscanf(p + len, "%" SCNu64 " %" SCNu64 " %" SCNu64
				   " %" SCNu64 " %" SCNu64 " %" SCNu64
				   " %" SCNu64 " %" SCNu64, &v[0], &v[1],
				   &v[2], &v[3], &v[4], &v[5], &v[6],
				   &v[7]) != 8)
				return -1;
			*ticks = v[7];
			return 0;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return -1;
}

static size_t
read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (f == NULL)
		return 0;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n;
}

void
shp_cpu_lost_read(pid_t tid, int cpu, struct shp_cpu_lost *out)
{
	char path[64], buf[16384];
	uint64_t ticks;

	memset(out, 0, sizeof(*out));
	if (tid == 0)
		tid = (pid_t)syscall(SYS_gettid);
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	if (tid > 0 && read_text(path, buf, 128) > 0 &&
	    shp_schedstat_parse(buf, &out->wait_ns, &out->slices) == 0)
		out->have_wait = true;
	if (cpu >= 0 && read_text("/proc/stat", buf, sizeof(buf)) > 0 &&
	    shp_procstat_steal(buf, cpu, &ticks) == 0) {
		long hz = sysconf(_SC_CLK_TCK);

		out->steal_ns = ticks * (1000000000ull / (uint64_t)(hz > 0 ?
							  hz : 100));
		out->have_steal = true;
	}
}

void
shp_cpu_lost_since(const struct shp_cpu_lost *then,
		   const struct shp_cpu_lost *now, struct shp_cpu_lost *out)
{
	memset(out, 0, sizeof(*out));
	out->have_wait = then->have_wait && now->have_wait;
	out->have_steal = then->have_steal && now->have_steal;
	if (out->have_wait) {
		out->wait_ns = now->wait_ns - then->wait_ns;
		out->slices = now->slices - then->slices;
	}
	if (out->have_steal)
		out->steal_ns = now->steal_ns - then->steal_ns;
}

int
shp_cpu_lost_lcore_cpu(unsigned int lcore)
{
	rte_cpuset_t set = rte_lcore_cpuset(lcore);
	int c;

	if (CPU_COUNT(&set) != 1)
		return -1;
	for (c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return c;
	return -1;
}
