/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Time: rounds are wall-clock (CLOCK_REALTIME ns from the job's epoch, the
 * same on every edge), the data path runs on the TSC. setup.c samples both
 * once (clk.tsc0 at clk.rt0); these convert between them. Any thread.
 */
#include <time.h>

#include "isthd.h"

uint64_t
isthd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t
isthd_ns_to_tsc(const struct isthd *d, uint64_t ns)
{
	if (ns <= d->clk.rt0)
		return d->clk.tsc0 -
			(uint64_t)((__uint128_t)(d->clk.rt0 - ns) * d->clk.tsc_hz / 1000000000ull);
	return d->clk.tsc0 +
		(uint64_t)((__uint128_t)(ns - d->clk.rt0) * d->clk.tsc_hz / 1000000000ull);
}

uint64_t
isthd_tsc_to_ns(const struct isthd *d, uint64_t tsc)
{
	return d->clk.rt0 +
		(uint64_t)((__uint128_t)(tsc - d->clk.tsc0) * 1000000000ull / d->clk.tsc_hz);
}
