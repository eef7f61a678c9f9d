/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_AGG_H
#define ISTH_AGG_H

/**
 * @file
 * The aggregation engine: sums the DATA contributions of a round's
 * contributors, chunk by chunk, in a slot table sized from a memory budget
 * (the software stand-in for the FPGA's HBM), and emits one aggregate per
 * slot when the slot completes, times out or is evicted by a conflict.
 *
 * Thread model: one engine per data-path lcore, no locks. Every function
 * except isth_agg_set_round() and isth_agg_stats_get() must be called by
 * the engine's owner thread only. isth_agg_set_round() is the control
 * plane's single writer of the round tables (one control thread per engine);
 * isth_agg_stats_get() and isth_agg_round_stats_get() may be called from any
 * thread at any time. The round tables reach the owner through lib/rtab
 * (rte_rcu_qsbr): when the writer is another thread, the owner is a reader
 * registered on isth_agg_params.qs and reports quiescent states between
 * bursts (doc/isthmusd.md, "Round tables").
 * The engine needs no EAL: plain C, memory allocated once in
 * isth_agg_create(), nothing allocated, locked or asked of the kernel after.
 *
 * Memory budget, precisely: every slot owns one accumulator of
 * isth_agg_info.slot_size = round_up(max_elems * 4, 64) bytes (4 bytes per
 * element for every dtype: bf16 is accumulated in fp32). The engine has
 * n_slots = floor(mem_budget / slot_size) slots, so the accumulator region,
 * n_slots * slot_size bytes, never exceeds mem_budget. A slot's whole
 * accumulator is "in use" from the first contribution of its chunk until the
 * caller releases its emission, whatever the chunk's element count;
 * mem_in_use and mem_hwm count those bytes. Slot metadata, hash buckets,
 * the emitted-record tables and queues are not part of the budget (on an
 * FPGA they live in on-chip SRAM); isth_agg_info.meta_size reports them.
 *
 * Exactly once: a contribution whose sender bit is already in its slot is a
 * duplicate. Once a slot is emitted, its chunk's emitted bitmap is kept for
 * the rest of the round (see isth_agg_params.n_records), so a later
 * contribution of an already emitted contributor is also a duplicate, and
 * the partial aggregates of one chunk carry disjoint bitmaps whose union is
 * every contribution accepted for it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isth_ctr.h"
#include "isth_rtab.h"

#include "isth_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct isth_agg;

/** Summation kernel sets. */
enum isth_agg_kernel {
	ISTH_AGG_KERNEL_AUTO = 0, /**< best this CPU supports */
	ISTH_AGG_KERNEL_SCALAR, /**< portable reference */
	ISTH_AGG_KERNEL_AVX2,
	ISTH_AGG_KERNEL_AVX512, /**< AVX-512F + AVX-512BW */
	ISTH_AGG_KERNEL_MAX
};

/** Engine configuration, fixed at creation. */
struct isth_agg_params {
	uint64_t mem_budget; /**< accumulator bytes (the HBM), see @file */
	uint32_t max_elems; /**< elements per chunk, 1..65535 */
	uint32_t max_chunks; /**< chunk ids per round: 0..max_chunks-1 */
	uint32_t n_islands; /**< senders are 0..n_islands-1, 1..64 */
	uint32_t max_jobs; /**< jobs served at once; 0 means 1 */
	/**
	 * Rounds accepted per job: newest published round R and the
	 * window - 1 before it. Older rounds are stale. 0 means 4.
	 */
	uint32_t window;
	/**
	 * Emitted-bitmap records for partially emitted chunks, shared by all
	 * rounds in the window; 0 means n_slots * 4. Each costs 24 bytes;
	 * a chunk needs one from its first partial emission until its
	 * contributors have all been emitted or its round leaves the window.
	 * When none is free the chunk is *closed*: counted in record_full, and
	 * every later contribution to it is dropped and counted in
	 * chunk_closed (at most once is kept; the emitted bitmaps tell the
	 * island who is missing).
	 */
	uint32_t n_records;
	/**
	 * Accumulators kept free for the chunks that arrive while emissions
	 * await release: a new chunk evicts the oldest active slot (conflict
	 * pool) once n_slots - reserve slots are active. A caller that
	 * releases every emission after each burst of at most reserve
	 * contributions never sees no_slot. ISTH_AGG_RESERVE_DEFAULT means
	 * min(32, n_slots / 8), at least 1 when n_slots > 1.
	 */
	uint32_t reserve;
	/**
	 * Hash buckets, a power of two; 0: enough for 4 * n_slots ways (a
	 * bucket overflows at 9 live chunks; at 1/4 load that is rare).
	 */
	uint32_t n_buckets;
	uint64_t timeout_ns; /**< a slot times out this long after its first arrival */
	/** Output type of bf16 chunks: ISTH_WIRE_DTYPE_BF16 (default if 0) or ISTH_WIRE_DTYPE_FP32. */
	uint8_t bf16_out;
	enum isth_agg_kernel kernel; /**< force a kernel set (tests, bench) */
	/**
	 * The readers of the round tables (lib/rtab): the owner lcore,
	 * registered and reporting quiescent states. NULL: the owner thread
	 * is also the one that calls isth_agg_set_round().
	 */
	struct rte_rcu_qsbr *qs;
};

/** isth_agg_params.reserve: let the engine choose. */
#define ISTH_AGG_RESERVE_DEFAULT UINT32_MAX

/** Sizes the engine derived from its parameters. */
struct isth_agg_info {
	uint32_t n_slots; /**< accumulators */
	uint32_t slot_size; /**< bytes per accumulator */
	uint64_t acc_size; /**< n_slots * slot_size <= mem_budget */
	uint64_t meta_size; /**< everything else allocated, bytes */
	uint32_t n_buckets; /**< hash buckets of ISTH_AGG_BUCKET_WAYS */
	uint32_t n_records;
	uint32_t window;
	uint32_t reserve;
	enum isth_agg_kernel kernel; /**< the kernel set in use */
};

/** Ways per hash bucket: a ninth chunk hashing to a full bucket is a conflict. */
#define ISTH_AGG_BUCKET_WAYS 8

/** One DATA contribution, as the parser hands it over. */
struct isth_agg_contrib {
	uint32_t job;
	uint32_t round;
	uint32_t chunk;
	uint8_t sender; /**< island id */
	uint8_t dtype; /**< enum isth_wire_dtype */
	uint16_t count; /**< elements */
	const void *data; /**< count little-endian elements, any alignment */
};

/** Why a slot was emitted. */
enum isth_agg_reason {
	ISTH_AGG_COMPLETE = 0, /**< every expected contributor is now emitted */
	ISTH_AGG_TIMEOUT, /**< timeout_ns after first arrival */
	ISTH_AGG_CONFLICT_POOL, /**< evicted: no free accumulator (oldest slot) */
	ISTH_AGG_CONFLICT_BUCKET, /**< evicted: hash bucket full (its oldest slot) */
	ISTH_AGG_FLUSH, /**< isth_agg_flush() */
	ISTH_AGG_REASON_MAX
};

/**
 * An emitted aggregate. Valid from isth_agg_drain() until
 * isth_agg_release(); the accumulator is not reused before that.
 */
struct isth_agg_emit {
	uint32_t job;
	uint32_t round;
	uint32_t chunk;
	uint16_t count; /**< elements */
	uint8_t dtype; /**< output dtype, the AGG header's */
	uint8_t reason; /**< enum isth_agg_reason */
	uint16_t flags; /**< ISTH_WIRE_F_PARTIAL unless bitmap == expected */
	uint16_t n_contrib; /**< bits in bitmap */
	uint64_t bitmap; /**< contributors summed into this aggregate */
	uint64_t expected; /**< the round's expected set */
	/**
	 * The accumulator, 64-byte aligned: count fp32 for fp32 and bf16
	 * chunks, count int32 for int32. When dtype is bf16 use
	 * isth_agg_emit_copy() to get the rounded payload.
	 */
	const void *acc;
	uint32_t size; /**< payload bytes in the output dtype */
	uint32_t slot; /**< engine's handle, for release */
};

/**
 * Counters. Written by: the owner lcore only (relaxed stores, no atomic
 * read-modify-write); read by: anyone through isth_agg_stats_get().
 * Every dropped contribution lands in exactly one drop counter.
 */
#define ISTH_AGG_STATS(X) \
	X(accepted, "contributions summed") \
	X(completed, "emitted, reason complete") \
	X(partial_timeout, "emitted, reason timeout") \
	X(partial_conflict_pool, "emitted, reason conflict_pool") \
	X(partial_conflict_bucket, "emitted, reason conflict_bucket") \
	X(partial_flush, "emitted, reason flush") \
	X(duplicate, "drop: bit already in the slot") \
	X(duplicate_emitted, "drop: bit already emitted for the chunk") \
	X(unexpected_sender, "drop: sender not in the round's expected set") \
	X(stale_round, "drop: round older than the window") \
	X(unknown_round, "drop: round not (yet) published") \
	X(unknown_job, "drop: job not published") \
	X(mismatch, "drop: dtype or count differ from the slot's") \
	X(bad_input, "drop: dtype, count, chunk id or sender out of range") \
	X(no_slot, "drop: every accumulator awaits release") \
	X(record_full, "chunks closed: no emitted record free") \
	X(chunk_closed, "drop: contribution to a closed chunk") \
	X(slots_in_use, "gauge: active + awaiting release") \
	X(slots_hwm, "high-water mark of slots_in_use") \
	X(mem_in_use, "gauge: slots_in_use * slot_size") \
	X(mem_hwm, "high-water mark, <= mem_budget")

/**
 * Engine counters and gauges, one list (lib/ctr convention): the struct,
 * isth_agg_stats_name() and the FPGA interface's first counters
 * (isth_fpga_if.h) are generated from ISTH_AGG_STATS.
 */
struct isth_agg_stats {
	ISTH_AGG_STATS(ISTH_CTR_FIELD)
};
#define ISTH_AGG_STATS_N (sizeof(struct isth_agg_stats) / sizeof(uint64_t))

/**
 * Create an engine. Checks every parameter before allocating.
 *
 * @return the engine, or NULL with errno = EINVAL (bad parameter, budget
 *         below one slot), ENOTSUP (forced kernel not supported by this
 *         CPU) or ENOMEM.
 */
struct isth_agg *isth_agg_create(const struct isth_agg_params *p);

/** Free an engine; NULL is a no-op. Outstanding emissions become invalid. */
void isth_agg_destroy(struct isth_agg *agg);

/** Sizes derived at creation. */
void isth_agg_info_get(const struct isth_agg *agg, struct isth_agg_info *info);

/**
 * Publish round @p round of job @p job with its expected contributor set.
 * Control plane: the only writer of the round tables; safe while the owner
 * lcore adds (lib/rtab: the round's table is written in a buffer no reader
 * sees and published with a release store). Rounds of a job must be
 * published in increasing order; publishing R makes rounds <= R - window
 * stale. Publish the next round before its first DATA can arrive.
 *
 * @return 0; -EINVAL if expected is empty or names islands >= n_islands,
 *         or round is older than the job's newest; -ENOSPC if max_jobs
 *         jobs are already known; -EBUSY if every spare table still waits
 *         for the owner's quiescent state (nothing published: retry at the
 *         next tick; counted in isth_agg_round_stats_get()'s reuse_waits).
 */
int isth_agg_set_round(struct isth_agg *agg, uint32_t job, uint32_t round, uint64_t expected);

/** Any thread: the round tables' counters (lib/rtab, written by set_round). */
void isth_agg_round_stats_get(const struct isth_agg *agg, struct isth_rtab_stats *st);

/**
 * Sum a burst of contributions into their slots. Contributions that are
 * refused are counted by reason (struct isth_agg_stats) and otherwise
 * ignored. Completed and conflict-evicted slots are queued for
 * isth_agg_drain(); the queue cannot overflow (it holds at most n_slots).
 *
 * @param now  current time in ns, non-decreasing across calls
 * @return number of contributions accepted
 */
unsigned int isth_agg_add_burst(
	struct isth_agg *agg, const struct isth_agg_contrib *c, unsigned int n, uint64_t now);

/**
 * Emit, as partials, slots whose first arrival is at least timeout_ns
 * before @p now.
 * @return number of slots queued for drain
 */
unsigned int isth_agg_poll(struct isth_agg *agg, uint64_t now);

/**
 * Emit, as partials (reason timeout), the active slots of job @p job whose
 * round is @p round or older (serial order): the round's deadline passed,
 * nothing more is due. Owner only; O(active slots).
 * @return slots queued for drain
 */
unsigned int isth_agg_expire_round(struct isth_agg *agg, uint32_t job, uint32_t round);

/** Emit every active slot (reason flush), e.g. at shutdown. @return slots queued. */
unsigned int isth_agg_flush(struct isth_agg *agg);

/**
 * Take up to @p cap queued emissions, oldest first.
 * @return number written to @p out
 */
unsigned int isth_agg_drain(struct isth_agg *agg, struct isth_agg_emit *out, unsigned int cap);

/** Emissions waiting for isth_agg_drain(). */
unsigned int isth_agg_pending(const struct isth_agg *agg);

/**
 * Give an emission's accumulator back to the engine.
 * @return 0, or -EINVAL if @p e is not a drained, unreleased emission
 */
int isth_agg_release(struct isth_agg *agg, const struct isth_agg_emit *e);

/**
 * Write the payload of @p e in its output dtype (little-endian), rounding
 * fp32 to bf16 to nearest-even when dtype is bf16.
 * @return bytes written (e->size), or -ENOSPC if @p cap is too small
 */
int isth_agg_emit_copy(
	const struct isth_agg *agg, const struct isth_agg_emit *e, void *dst, size_t cap);

/**
 * Fill the AGG header fields the engine knows (type, dtype, flags, count,
 * job, round, chunk, bitmap); the caller sets sender and seq.
 */
void isth_agg_emit_hdr(const struct isth_agg_emit *e, struct isth_wire_hdr *h);

/** Snapshot the counters; any thread. Each field is read atomically. */
void isth_agg_stats_get(const struct isth_agg *agg, struct isth_agg_stats *st);

/** Name of counter @p i of struct isth_agg_stats in order, e.g. "duplicate". */
const char *isth_agg_stats_name(unsigned int i);

/** Name of a reason ("complete", "timeout", ...). */
const char *isth_agg_reason_name(unsigned int r);

/** Fill a contribution from a parsed DATA packet. */
static inline void
isth_agg_contrib_from_pkt(struct isth_agg_contrib *c, const struct isth_wire_pkt *p)
{
	c->job = p->hdr.job;
	c->round = p->hdr.round;
	c->chunk = p->hdr.chunk;
	c->sender = p->hdr.sender;
	c->dtype = p->hdr.dtype;
	c->count = p->hdr.count;
	c->data = p->payload;
}

/*
 * Kernels, exposed for tests and benchmarks. acc is fp32 or int32, src
 * little-endian elements; neither needs any alignment. n may be 0.
 */

/** One kernel set. */
struct isth_agg_kernels {
	enum isth_agg_kernel id;
	/** acc[i] += src[i], fp32 */
	void (*add_fp32)(float *acc, const void *src, size_t n);
	/** acc[i] += (float)src[i], src bf16 */
	void (*add_bf16)(float *acc, const void *src, size_t n);
	/** acc[i] += src[i], int32 wrapping */
	void (*add_int32)(int32_t *acc, const void *src, size_t n);
	/** acc[i] = (float)src[i], src bf16 (first contribution) */
	void (*load_bf16)(float *acc, const void *src, size_t n);
	/** dst[i] = bf16(acc[i]), round to nearest even, NaN stays NaN */
	void (*store_bf16)(void *dst, const float *acc, size_t n);
	/** every src[i] (fp32) has magnitude bits (sign off) <= lim:
	 * with ISTH_AGG_FP32_MAX_BITS, none is NaN or +-Inf (zeros, -0
	 * and denormals are finite); with the bits of a finite M, also
	 * |src[i]| <= M */
	bool (*within_fp32)(const void *src, size_t n, uint32_t lim);
	/** the same for bf16 (ISTH_AGG_BF16_MAX_BITS) */
	bool (*within_bf16)(const void *src, size_t n, uint16_t lim);
};

/** Does this CPU run kernel set @p k? AUTO and SCALAR always. */
bool isth_agg_kernel_supported(enum isth_agg_kernel k);

/**
 * Get kernel set @p k (AUTO: the best supported).
 * @return 0, -EINVAL (unknown k) or -ENOTSUP (CPU lacks it)
 */
int isth_agg_kernels_get(enum isth_agg_kernel k, struct isth_agg_kernels *out);

/**
 * True if none of the @p n little-endian elements of @p dtype at @p src is
 * a NaN or an infinity (fp32, bf16; every other dtype: true), with the
 * best kernel set of this CPU (chosen once, at load). For a receiver that
 * refuses non-finite contributions before it sums them (isthmusd's
 * data_nonfinite): one vectorised pass over a chunk it has just read.
 */
bool isth_agg_finite(uint8_t dtype, const void *src, size_t n);

/** Bits of the largest finite fp32 and bf16 (magnitude, sign off). */
#define ISTH_AGG_FP32_MAX_BITS 0x7f7fffffu
#define ISTH_AGG_BF16_MAX_BITS 0x7f7fu

/**
 * True if every one of the @p n elements of @p dtype at @p src is finite
 * and of magnitude at most @p max_abs (a finite, non-negative fp32; for
 * bf16 it is rounded down to a bf16), in the same one pass as
 * isth_agg_finite(); every other dtype: true.
 */
bool isth_agg_within(uint8_t dtype, const void *src, size_t n, float max_abs);

/** "scalar", "avx2", "avx512" or "auto". */
const char *isth_agg_kernel_name(enum isth_agg_kernel k);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_AGG_H */
