/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_FPGA_MODEL_H
#define ISTH_FPGA_MODEL_H

/**
 * @file
 * The device model: an executable specification of the FPGA interface of
 * isth_fpga_if.h, reached through a POSIX shared-memory object instead of
 * PCIe. The object holds BAR0 (ISTH_FPGA_BAR_SIZE bytes at offset 0) and,
 * after it, a DMA window that stands for the host memory the IOMMU maps:
 * the driver carves its rings and buffers out of it and names them by IOVA
 * (ISTH_FPGA_SHM_IOVA_BASE + offset in the window).
 *
 * The aggregation core of the model is lib/agg (the same engine the sw
 * backend runs), configured from the CFG_* registers: the accumulator
 * region is at most CFG_MEM_BYTES <= CAP_HBM_BYTES, byte for byte. Around
 * it the model implements what the bitstream must: doorbells, descriptor
 * validation, the round-table banks, D2H back-pressure, host-driven time,
 * per-packet latency and a throughput limit, counters.
 *
 * EAL-free. The model runs either on its own thread (isth_fpga_model_start())
 * or stepped by the caller (isth_fpga_model_poll()), never both at once.
 */

#include <stdint.h>

#include "isth_agg.h"
#include "isth_fpga_if.h"

#ifdef __cplusplus
extern "C" {
#endif

struct isth_fpga_model;

/** What the modelled device is; zero fields take the defaults shown. */
struct isth_fpga_model_params {
	const char *shm_name; /**< "/isthmus-fpga0"; required */
	uint64_t hbm_bytes; /**< CAP_HBM_BYTES (0: 8 GiB) */
	uint64_t dma_bytes; /**< DMA window bytes (0: 16 MiB) */
	uint32_t max_elems; /**< CAP_MAX_ELEMS (0: 65535) */
	uint32_t max_slots; /**< CAP_MAX_SLOTS (0: 1 << 20) */
	uint32_t max_ring; /**< CAP_MAX_RING, power of 2 (0: 4096) */
	uint32_t max_jobs; /**< CAP_MAX_JOBS (0: 16) */
	uint64_t latency_ns; /**< per-packet latency, wall clock (0: none) */
	uint64_t rate_bps; /**< H2D throughput limit, bytes/s (0: none) */
	enum isth_agg_kernel kernel; /**< summation kernel of the core */
	/** Replace an existing object of the same name (else EEXIST). */
	int replace;
};

/**
 * Create the shared-memory object, map it and power the device on
 * (registers at their reset values). The model does not run until
 * isth_fpga_model_start() or isth_fpga_model_poll().
 * @return the model, or NULL with errno: EINVAL, EEXIST, ENOMEM, or the
 *         errno of shm_open/ftruncate/mmap.
 */
struct isth_fpga_model *isth_fpga_model_create(const struct isth_fpga_model_params *p);

/** Stop the thread if running, unmap and unlink the object; NULL is fine. */
void isth_fpga_model_destroy(struct isth_fpga_model *m);

/** Run the model on its own thread. @return 0, -EALREADY, or -errno. */
int isth_fpga_model_start(struct isth_fpga_model *m);

/** Stop the model's thread (waits for it). Idempotent. */
void isth_fpga_model_stop(struct isth_fpga_model *m);

/**
 * One iteration of the device: reset/enable, round tables, H2D
 * descriptors, D2H completions, time and flush. For callers that step the
 * model themselves (tests); do not call while the thread runs.
 * @return units of work done (0: idle)
 */
unsigned int isth_fpga_model_poll(struct isth_fpga_model *m);

/** Set the per-packet latency (ns, wall clock). Any thread. */
void isth_fpga_model_set_latency(struct isth_fpga_model *m, uint64_t ns);

/** Set the H2D throughput limit (bytes/s, 0: none). Any thread. */
void isth_fpga_model_set_rate(struct isth_fpga_model *m, uint64_t bytes_per_s);

/** BAR0 as the model maps it (tests poke registers through it). */
volatile void *isth_fpga_model_bar(struct isth_fpga_model *m);

/** The DMA window as the model maps it, its size and IOVA. */
void *isth_fpga_model_dma(struct isth_fpga_model *m, uint64_t *size, uint64_t *iova);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_FPGA_MODEL_H */
