/* SPDX-License-Identifier: BSD-3-Clause */
#include <time.h>
#include <rte_cycles.h>
#include "shp_clock.h"

/* One (tsc, ns) pair: the kernel's time read between two TSC reads, the
 * tightest of a few tries (vDSO: tens of ns; a preempted try is wide). */
static void
pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < 8; i++) {
		struct timespec ts;
		uint64_t a, b;

		a = rte_rdtsc_precise();
		clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
		b = rte_rdtsc_precise();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = (uint64_t)ts.tv_sec * 1000000000ull +
			      (uint64_t)ts.tv_nsec;
		}
	}
}

uint64_t
shp_tsc_hz_measure(unsigned int ms)
{
	struct timespec req = { ms / 1000, (long)(ms % 1000) * 1000000 };
	uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0, hz, dpdk = rte_get_tsc_hz();

	pair(&t0, &n0);
	nanosleep(&req, NULL);
	pair(&t1, &n1);
	if (n1 <= n0 || t1 <= t0)
		return dpdk;
	hz = (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000ull /
			(n1 - n0));
	if (hz < dpdk - dpdk / 20 || hz > dpdk + dpdk / 20)
		return dpdk;
	return hz;
}

void
shp_clock_init_hz(struct shp_clock *c, uint64_t hz)
{
	c->hz = hz != 0 ? hz : shp_tsc_hz_measure(SHP_CLOCK_CALIBRATE_MS);
	c->mult = (uint64_t)(((unsigned __int128)1000000000 << 32) / c->hz);
	c->tsc0 = rte_rdtsc();
}
