/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_FPGA_IF_H
#define ISTH_FPGA_IF_H

/**
 * @file
 * The isthmus FPGA device interface, version 1.1: register map (BAR0),
 * descriptor formats and counter indices. doc/fpga-interface.md is the
 * prose of this header; the two must agree. The driver
 * (lib/backend/backend_fpga.c) and the device model (lib/fpga_model) both
 * compile against it, and a bitstream implements it.
 *
 * Conventions:
 * - Every register is 64 bits wide, 8-byte aligned, little-endian, and is
 *   accessed with one naturally aligned 64-bit load or store (one PCIe
 *   TLP). RO registers ignore writes; reserved offsets read 0.
 * - "Host" is the driver, "device" the FPGA (or the model). Each register
 *   and descriptor field says who writes it.
 * - Addresses in descriptors and ring registers are IOVAs: bus addresses
 *   the IOMMU translates (VFIO DMA map), or offsets into the DMA window of
 *   the shared-memory transport plus ISTH_FPGA_SHM_IOVA_BASE.
 * - Ring indices are free-running 32-bit counters stored in 64-bit
 *   registers; entry = index & (size - 1); producer - consumer <= size.
 */

#include <stdint.h>

#include "isth_agg.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ISTH_FPGA_REG_ID: "ISTHFPGA" in ASCII, little-endian. */
#define ISTH_FPGA_ID 0x4147504648545349ull
#define ISTH_FPGA_VERSION_MAJOR 1u
#define ISTH_FPGA_VERSION_MINOR 1u
/** Bytes of BAR0. */
#define ISTH_FPGA_BAR_SIZE 0x10000u

/* ---- Identification and capabilities (RO, device) ---------------------- */
#define ISTH_FPGA_REG_ID 0x0000 /**< ISTH_FPGA_ID */
#define ISTH_FPGA_REG_VERSION 0x0008 /**< major << 16 | minor */
#define ISTH_FPGA_REG_CAP_HBM_BYTES 0x0010 /**< aggregation memory, bytes */
#define ISTH_FPGA_REG_CAP_DTYPES 0x0018 /**< bit (1 << dtype) per dtype */
#define ISTH_FPGA_REG_CAP_MAX_ISLANDS 0x0020 /**< contributor bitmap width */
#define ISTH_FPGA_REG_CAP_MAX_ELEMS 0x0028 /**< elements per chunk */
#define ISTH_FPGA_REG_CAP_MAX_SLOTS 0x0030 /**< accumulator slots (slot table entries) */
#define ISTH_FPGA_REG_CAP_FLAGS 0x0038 /**< ISTH_FPGA_CAPF_* */
#define ISTH_FPGA_REG_CAP_MAX_RING 0x0040 /**< max entries per ring (power of 2) */
#define ISTH_FPGA_REG_CAP_RT_BANKS 0x0048 /**< round-table banks (power of 2) */
#define ISTH_FPGA_REG_CAP_MAX_PEERS 0x0050 /**< peer entries per bank */
#define ISTH_FPGA_REG_CAP_MAX_JOBS 0x0058 /**< jobs served at once */

/** The device fans out outbound DATA itself (version 1.0 model: no). */
#define ISTH_FPGA_CAPF_REPLICATE (1ull << 0)
/** The device honours time_ns in H2D descriptors and REG_TIME_NS. */
#define ISTH_FPGA_CAPF_HOST_TIME (1ull << 1)
/** 1.1: the device verifies DATA tags and seals AGGs (wire v2, AUTH_* and
 * KEY_* registers, H2D flags ISTH_FPGA_H2D_*). */
#define ISTH_FPGA_CAPF_AUTH (1ull << 2)

/* ---- Shared-memory transport only (RO, model) -------------------------- */
#define ISTH_FPGA_REG_SHM_DMA_OFFSET 0x00e0 /**< DMA window: byte offset in the object */
#define ISTH_FPGA_REG_SHM_DMA_SIZE 0x00e8 /**< DMA window bytes */
#define ISTH_FPGA_REG_SHM_DMA_IOVA 0x00f0 /**< IOVA of the window's first byte */
/** IOVA of the first byte of the shared-memory DMA window; 0 is never valid. */
#define ISTH_FPGA_SHM_IOVA_BASE 0x100000000ull

/* ---- Control and status ------------------------------------------------ */
#define ISTH_FPGA_REG_CTRL 0x0080 /**< RW host: ISTH_FPGA_CTRL_* */
#define ISTH_FPGA_REG_STATUS 0x0088 /**< RO device: ISTH_FPGA_STS_* */
#define ISTH_FPGA_REG_ERROR 0x0090 /**< RO device: first fatal ISTH_FPGA_ERR_* */
#define ISTH_FPGA_REG_SCRATCH 0x0098 /**< RW host: read back as written */
#define ISTH_FPGA_REG_RESET_GEN 0x00a0 /**< RO device: resets completed */

/** Host sets: latch CFG_* and ring registers, start processing. */
#define ISTH_FPGA_CTRL_ENABLE (1ull << 0)
/**
 * Host sets (with ENABLE clear): drop every slot, ring state, round table
 * and counter; the device clears the bit and bumps REG_RESET_GEN when done.
 */
#define ISTH_FPGA_CTRL_RESET (1ull << 1)

#define ISTH_FPGA_STS_ENABLED (1ull << 0) /**< ENABLE latched, rings running */
#define ISTH_FPGA_STS_ERROR (1ull << 1) /**< fatal error: see REG_ERROR; reset to clear */

/** Fatal errors (REG_ERROR): configuration refused at ENABLE. */
enum isth_fpga_error {
	ISTH_FPGA_ERR_NONE = 0,
	ISTH_FPGA_ERR_CFG, /**< a CFG_* register out of range */
	ISTH_FPGA_ERR_MEM, /**< CFG_MEM_BYTES > HBM or below one slot */
	ISTH_FPGA_ERR_RING, /**< ring base/size/write-back outside DMA memory */
};

/* ---- Configuration (RW host while disabled; latched at ENABLE) --------- */
#define ISTH_FPGA_REG_CFG_MEM_BYTES 0x0100 /**< HBM budget for accumulators */
#define ISTH_FPGA_REG_CFG_MAX_ELEMS 0x0108 /**< elements per slot, 1..CAP_MAX_ELEMS */
#define ISTH_FPGA_REG_CFG_MAX_CHUNKS 0x0110 /**< chunk ids per round */
#define ISTH_FPGA_REG_CFG_N_ISLANDS 0x0118 /**< islands of the job, 1..CAP_MAX_ISLANDS */
#define ISTH_FPGA_REG_CFG_ISLAND 0x0120 /**< local island: AGG sender field */
#define ISTH_FPGA_REG_CFG_WINDOW 0x0128 /**< rounds accepted per job (0: 4) */
#define ISTH_FPGA_REG_CFG_TIMEOUT_NS 0x0130 /**< slot timeout after first arrival */
#define ISTH_FPGA_REG_CFG_BF16_OUT 0x0138 /**< output dtype of bf16 chunks */
#define ISTH_FPGA_REG_CFG_MAX_JOBS 0x0140 /**< jobs (0: 1) */
#define ISTH_FPGA_REG_CFG_N_SLOTS 0x0148 /**< RO device after ENABLE: slots carved */
#define ISTH_FPGA_REG_CFG_SLOT_BYTES 0x0150 /**< RO device after ENABLE: bytes per slot */

/* ---- Rings ------------------------------------------------------------- */
#define ISTH_FPGA_REG_H2D_BASE 0x0200 /**< RW host: IOVA of the H2D ring */
#define ISTH_FPGA_REG_H2D_SIZE 0x0208 /**< RW host: entries, power of 2 */
#define ISTH_FPGA_REG_H2D_TAIL 0x0210 /**< doorbell, host: descriptors posted */
#define ISTH_FPGA_REG_H2D_HEAD 0x0218 /**< RO device: descriptors consumed */
#define ISTH_FPGA_REG_H2D_WB 0x0220 /**< RW host: IOVA the device writes HEAD to */
#define ISTH_FPGA_REG_D2H_BASE 0x0280 /**< RW host: IOVA of the D2H ring */
#define ISTH_FPGA_REG_D2H_SIZE 0x0288 /**< RW host: entries, power of 2 */
#define ISTH_FPGA_REG_D2H_TAIL 0x0290 /**< doorbell, host: empty buffers posted */
#define ISTH_FPGA_REG_D2H_HEAD 0x0298 /**< RO device: descriptors completed */
#define ISTH_FPGA_REG_D2H_WB 0x02a0 /**< RW host: IOVA the device writes HEAD to */

/* ---- Time, flush, back-pressure ---------------------------------------- */
#define ISTH_FPGA_REG_TIME_NS 0x0300 /**< host: its clock, ns, non-decreasing */
#define ISTH_FPGA_REG_TIME_ACK 0x0308 /**< RO device: TIME_NS fully applied */
#define ISTH_FPGA_REG_BACKLOG 0x0310 /**< RO device: aggregates awaiting a D2H buffer */
#define ISTH_FPGA_REG_FLUSH_REQ 0x0318 /**< host: write REQ + 1 to emit every slot */
#define ISTH_FPGA_REG_FLUSH_ACK 0x0320 /**< RO device: FLUSH_REQ fully applied */
#define ISTH_FPGA_REG_FLUSH_COUNT 0x0328 /**< RO device: slots the last flush emitted */

/* ---- Round tables: banks swapped by generation ------------------------- */
#define ISTH_FPGA_REG_RT_PROD 0x0400 /**< host: banks published (generation) */
#define ISTH_FPGA_REG_RT_CONS 0x0408 /**< RO device: banks applied */
/** Bank k (k < CAP_RT_BANKS) at RT_BANK + k * RT_BANK_STRIDE. At most
 * ISTH_FPGA_RT_BANKS_MAX banks: the authentication registers follow. */
#define ISTH_FPGA_REG_RT_BANK 0x0480
#define ISTH_FPGA_RT_BANK_STRIDE 0x40
#define ISTH_FPGA_RT_BANKS_MAX 8u
/* Offsets inside a bank (host writes all but STATUS before bumping RT_PROD). */
#define ISTH_FPGA_RT_JOB 0x00 /**< job id */
#define ISTH_FPGA_RT_ROUND 0x08 /**< round number */
#define ISTH_FPGA_RT_EXPECTED 0x10 /**< expected contributors (bitmap) */
#define ISTH_FPGA_RT_TIMEOUT_NS 0x18 /**< 0: CFG_TIMEOUT_NS; v1.0: must be 0 */
#define ISTH_FPGA_RT_N_PEERS 0x20 /**< peer entries used */
#define ISTH_FPGA_RT_STATUS 0x28 /**< device: 0 applied, else -errno */
/** Peers of bank k: entry j at RT_PEERS + (k * CAP_MAX_PEERS + j) * 16. */
#define ISTH_FPGA_REG_RT_PEERS 0x1000
/* Peer entry: u64 (ip << 32 | port << 16 | island), u64 reserved. */

/* ---- Authentication, 1.1 (doc/fpga-interface.md 3.8; wire v2) ---------- */
/** RW host while disabled, latched at ENABLE: ISTH_FPGA_AUTH_*. */
#define ISTH_FPGA_REG_AUTH_CTRL 0x0700
/** RW host while disabled: first seq of the AGG stream (the host writes
 * its CLOCK_REALTIME ns); RO device while enabled: next AGG seq. */
#define ISTH_FPGA_REG_AGG_SEQ 0x0708
/** Key epoch slot k (k < ISTH_FPGA_KEY_SLOTS) at KEY_EPOCH + 8 k, RW host:
 * bit 63 VALID, bits 47..16 first round, bits 7..0 epoch id. Applied
 * between two descriptors; write a slot's keys while VALID is clear. */
#define ISTH_FPGA_REG_KEY_EPOCH 0x0740
#define ISTH_FPGA_KEY_SLOTS 4u
#define ISTH_FPGA_KEY_VALID (1ull << 63)
/** Key table, WO host: the 32-byte AES-256 direction key
 * K(epoch of slot k, dir, owner) (lib/auth's HKDF, done by the host) at
 * KEYS + ((k * 3 + dir - 1) * 64 + owner) * 32, as four 64-bit stores of
 * the key bytes in order (little-endian words). */
#define ISTH_FPGA_REG_KEYS 0x8000
#define ISTH_FPGA_KEY_BYTES 32u
/** Owners per (slot, direction) in the key table. */
#define ISTH_FPGA_KEY_OWNERS 64u

/** Verify every DATA's tag before it may reach the aggregator. */
#define ISTH_FPGA_AUTH_VERIFY (1ull << 0)
/** Emit AGGs as sealed version 2 messages (seq from AGG_SEQ). */
#define ISTH_FPGA_AUTH_SEAL (1ull << 1)

/** H2D flags (1.1; 0 in 1.0): the key a DATA is verified with. The host
 * picks it from the port and, on the WAN, the site table entry of the
 * source address (doc/protocol.md, "Receiver order", step 2). */
#define ISTH_FPGA_H2D_DIR_MASK 0x0003u /**< enum isth_auth_dir: 1 UP, 3 WAN */
#define ISTH_FPGA_H2D_OWNER_SHIFT 8
#define ISTH_FPGA_H2D_OWNER_MASK 0x3f00u /**< owner island of the key */
/** After an UP DATA verified: overwrite its tag in host memory with the
 * tag under WAN key of CFG_ISLAND, ready to forward to the peers. */
#define ISTH_FPGA_H2D_RESEAL_WAN 0x8000u

/* ---- Counters (RO device, 64-bit, cleared by reset) -------------------- */
#define ISTH_FPGA_REG_COUNTERS 0x0800 /**< counter i at COUNTERS + 8 * i */

/**
 * Counter indices. The first block has the names and meaning of
 * struct isth_agg_stats, in that order, so the two backends report the
 * same names; the second block is the device's own.
 */
enum isth_fpga_counter {
	ISTH_FPGA_CNT_ACCEPTED = 0,
	ISTH_FPGA_CNT_COMPLETED,
	ISTH_FPGA_CNT_PARTIAL_TIMEOUT,
	ISTH_FPGA_CNT_PARTIAL_CONFLICT_POOL,
	ISTH_FPGA_CNT_PARTIAL_CONFLICT_BUCKET,
	ISTH_FPGA_CNT_PARTIAL_FLUSH,
	ISTH_FPGA_CNT_DUPLICATE,
	ISTH_FPGA_CNT_DUPLICATE_EMITTED,
	ISTH_FPGA_CNT_UNEXPECTED_SENDER,
	ISTH_FPGA_CNT_STALE_ROUND,
	ISTH_FPGA_CNT_UNKNOWN_ROUND,
	ISTH_FPGA_CNT_UNKNOWN_JOB,
	ISTH_FPGA_CNT_MISMATCH,
	ISTH_FPGA_CNT_BAD_INPUT,
	ISTH_FPGA_CNT_NO_SLOT,
	ISTH_FPGA_CNT_RECORD_FULL,
	ISTH_FPGA_CNT_CHUNK_CLOSED,
	ISTH_FPGA_CNT_SLOTS_IN_USE, /* gauge */
	ISTH_FPGA_CNT_SLOTS_HWM,
	ISTH_FPGA_CNT_MEM_IN_USE, /* gauge, bytes of HBM */
	ISTH_FPGA_CNT_MEM_HWM,
	/* device */
	ISTH_FPGA_CNT_H2D_DESC, /**< H2D descriptors consumed */
	ISTH_FPGA_CNT_H2D_BYTES, /**< bytes read through H2D buffers */
	ISTH_FPGA_CNT_D2H_DESC, /**< D2H descriptors completed with an AGG */
	ISTH_FPGA_CNT_D2H_BYTES, /**< AGG bytes written */
	ISTH_FPGA_CNT_DESC_BAD_ADDR, /**< descriptor buffer outside DMA memory */
	ISTH_FPGA_CNT_DESC_BAD_LEN, /**< H2D len 0 or above a slot's message; D2H cap too small */
	ISTH_FPGA_CNT_DESC_BAD_MSG, /**< H2D message refused by the header check */
	ISTH_FPGA_CNT_DESC_BAD_TYPE, /**< H2D message is not DATA */
	ISTH_FPGA_CNT_DOORBELL_BAD, /**< doorbell beyond ring size: ignored */
	ISTH_FPGA_CNT_D2H_STALL, /**< polls that found aggregates and no D2H buffer */
	ISTH_FPGA_CNT_RT_APPLIED, /**< round-table banks applied */
	ISTH_FPGA_CNT_RT_REFUSED, /**< banks refused (status < 0) */
	/* 1.1, authentication */
	ISTH_FPGA_CNT_AUTH_FORMAT, /**< DATA not v2 / AUTH / 16-byte tag, or flags without a key */
	ISTH_FPGA_CNT_AUTH_EPOCH, /**< epoch byte not the round's, or no VALID slot */
	ISTH_FPGA_CNT_AUTH_TAG, /**< the tag does not verify */
	ISTH_FPGA_CNT_AUTH_SEALED, /**< AGGs sealed */
	ISTH_FPGA_CNT_AUTH_SEAL_NOKEY, /**< AGGs not emitted: no epoch for their round */
	ISTH_FPGA_CNT_AUTH_RESEALED, /**< DATA tags rewritten with the WAN key */
	ISTH_FPGA_CNT_MAX
};
/* The first counters are the engine's (struct isth_agg_stats), in order. */
_Static_assert(ISTH_FPGA_CNT_MEM_HWM + 1 == ISTH_AGG_STATS_N, "FPGA counters mirror lib/agg's");

/** Descriptor status, written by the device. */
#define ISTH_FPGA_DESC_DONE 0x8000u /**< device finished with the descriptor */
/** Low bits of the status: 0 ok, else why the descriptor was refused. */
enum isth_fpga_desc_err {
	ISTH_FPGA_DESC_OK = 0,
	ISTH_FPGA_DESC_E_ADDR, /**< buffer outside DMA memory */
	ISTH_FPGA_DESC_E_LEN, /**< length out of range */
	ISTH_FPGA_DESC_E_MSG, /**< header check failed */
	ISTH_FPGA_DESC_E_TYPE, /**< not a DATA message */
	ISTH_FPGA_DESC_E_REFUSED, /**< valid DATA the aggregator refused (see counters) */
	ISTH_FPGA_DESC_E_AUTH_FORMAT, /**< 1.1: not a v2 message, or flags name no key */
	ISTH_FPGA_DESC_E_AUTH_EPOCH, /**< 1.1: epoch byte not the round's epoch */
	ISTH_FPGA_DESC_E_AUTH_TAG, /**< 1.1: the tag does not verify */
};

/**
 * Host-to-device descriptor: one DATA message (isthmus header, payload,
 * trailer) the device reads from host memory. 32 bytes.
 */
struct isth_fpga_h2d_desc {
	uint64_t addr; /**< host: IOVA of the message */
	uint32_t len; /**< host: message bytes */
	uint16_t flags; /**< host: 0, or with AUTH_VERIFY ISTH_FPGA_H2D_* */
	uint16_t status; /**< device: ISTH_FPGA_DESC_DONE | isth_fpga_desc_err */
	uint64_t time_ns; /**< host: its clock when posting */
	uint64_t cookie; /**< host: opaque, never read by the device */
};

/**
 * Device-to-host descriptor: an empty buffer the host posts, completed by
 * the device with one AGG message (isthmus header with seq 0 and sender
 * CFG_ISLAND, then the payload; with AUTH_SEAL a version 2 header with the
 * next AGG_SEQ, the payload, then the 16-byte tag). 64 bytes.
 */
struct isth_fpga_d2h_desc {
	uint64_t addr; /**< host: IOVA of the buffer */
	uint32_t cap; /**< host: buffer bytes */
	uint32_t len; /**< device: AGG message bytes written */
	uint64_t bitmap; /**< device: contributors summed */
	uint64_t expected; /**< device: the round's expected set */
	uint32_t job; /**< device */
	uint32_t round; /**< device */
	uint32_t chunk; /**< device */
	uint8_t reason; /**< device: enum isth_agg_reason */
	uint8_t dtype; /**< device: output dtype */
	uint16_t count; /**< device: elements */
	uint16_t status; /**< device: ISTH_FPGA_DESC_DONE | isth_fpga_desc_err; host clears */
	uint16_t rsvd0;
	uint32_t rsvd1;
	uint64_t time_ns; /**< device: its clock at emission */
};

_Static_assert(sizeof(struct isth_fpga_h2d_desc) == 32, "H2D descriptor is 32 bytes");
_Static_assert(sizeof(struct isth_fpga_d2h_desc) == 64, "D2H descriptor is 64 bytes");

/** Name of counter @p i ("accepted", ..., "rt_refused"), NULL past the end. */
static inline const char *
isth_fpga_counter_name(unsigned int i)
{
	static const char *const names[ISTH_FPGA_CNT_MAX] = {
		/* the engine's counters, in lib/agg's order */
		ISTH_AGG_STATS(ISTH_CTR_NAME) "dev_h2d_desc",
		"dev_h2d_bytes",
		"dev_d2h_desc",
		"dev_d2h_bytes",
		"dev_desc_bad_addr",
		"dev_desc_bad_len",
		"dev_desc_bad_msg",
		"dev_desc_bad_type",
		"dev_doorbell_bad",
		"dev_d2h_stall",
		"dev_rt_applied",
		"dev_rt_refused",
		"dev_auth_format",
		"dev_auth_epoch",
		"dev_auth_tag",
		"dev_auth_sealed",
		"dev_auth_seal_nokey",
		"dev_auth_resealed",
	};

	return i < ISTH_FPGA_CNT_MAX ? names[i] : (const char *)0;
}

#ifdef __cplusplus
}
#endif

#endif /* ISTH_FPGA_IF_H */
