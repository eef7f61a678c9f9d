/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Time: rounds are wall-clock (CLOCK_REALTIME ns from the job's epoch, the
 * same on every edge), the data path runs on the TSC. setup.c samples both
 * once (clk.tsc0 at clk.rt0); these convert between them. Any thread.
 */
#include <time.h>

#include <rte_cycles.h>

#include "isth_clock.h"
#include "isthd.h"

/* A (TSC, CLOCK_MONOTONIC) pair: of five tries, the one whose clock read
 * the two TSC reads bracket most tightly (a preempted try is discarded). */
static void
tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t a = rte_rdtsc(), n = isth_clock_mono_ns(), b = rte_rdtsc();

		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
}

/*
 * The TSC's rate against the system clock, measured over @span_ns. Why not
 * rte_get_tsc_hz(): where the CPU does not tell its TSC rate (AMD, most
 * VMs), DPDK 22.11 measures it and rounds to 10 MHz: 2100 MHz for a TSC of
 * 2096.05 MHz here, 0.19 %, so an edge's rounds drifted 57 ms from the
 * islands' (CLOCK_REALTIME) 30 s after its start (doc/isthmusd.md, "Rounds
 * and clocks"). CLOCK_MONOTONIC runs at CLOCK_REALTIME's rate (both
 * follow NTP's frequency) without its steps. Returns @fallback if the
 * measure is off from it by more than 5 % (a clock stepped meanwhile).
 */
uint64_t
isthd_tsc_hz_measure(uint64_t span_ns, uint64_t fallback)
{
	struct timespec ts = {.tv_sec = (time_t)(span_ns / 1000000000ull),
		.tv_nsec = (long)(span_ns % 1000000000ull)};
	uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0, hz;

	tsc_pair(&t0, &n0);
	while (nanosleep(&ts, &ts) != 0)
		;
	tsc_pair(&t1, &n1);
	if (n1 <= n0 || t1 <= t0)
		return fallback;
	hz = (uint64_t)((__uint128_t)(t1 - t0) * 1000000000ull / (n1 - n0));
	if (fallback && (hz > fallback + fallback / 20 || hz < fallback - fallback / 20))
		return fallback;
	return hz;
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
