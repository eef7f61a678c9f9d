/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_CLOCK_H
#define ISTH_CLOCK_H

/**
 * @file
 * The project's two clocks, in nanoseconds, one helper each (header only).
 *
 * - isth_clock_mono_ns(): CLOCK_MONOTONIC, for intervals, timeouts and
 *   progress (it never steps back when NTP or PTP sets the wall clock).
 * - isth_clock_real_ns(): CLOCK_REALTIME, for what is shared between hosts:
 *   round epochs and deadlines, and the wall-clock sequence numbers of wire
 *   version 2 (doc/protocol.md).
 *
 * The data path of isthmusd reads neither: it runs on the TSC, converted
 * with a pair sampled at start-up (app/isthmusd/clock.c). Any thread.
 */
#include <stdint.h>
#include <time.h>

static inline uint64_t
isth_clock_ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** CLOCK_MONOTONIC in ns: intervals and timeouts. */
static inline uint64_t
isth_clock_mono_ns(void)
{
	return isth_clock_ns_of(CLOCK_MONOTONIC);
}

/** CLOCK_REALTIME in ns: epochs, deadlines and v2 seqs shared between hosts. */
static inline uint64_t
isth_clock_real_ns(void)
{
	return isth_clock_ns_of(CLOCK_REALTIME);
}

#endif /* ISTH_CLOCK_H */
