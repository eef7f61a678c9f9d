/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_FUZZ_COMMON_H
#define ISTH_FUZZ_COMMON_H

/**
 * @file
 * Shared parts of the wire-parser fuzz harnesses (tests/fuzz/README.md).
 *
 * Every fuzz input is a ISTH_FUZZ_CFG_SIZE-byte configuration prefix that
 * selects the parser limits, followed by the bytes handed to the parser.
 * Fuzzing the limits too reaches the island, bitmap and count checks with
 * every island count instead of one fixed configuration.
 *
 *   byte 0     n_islands - 1 (taken modulo 64)
 *   byte 1     bit 0: check_udp_csum; bit 1: auth (version 2); others ignored
 *   bytes 2-3  max_elems, big-endian
 *   bytes 4-5  max_ranges, big-endian
 *
 * udp_port is always ISTH_WIRE_PORT.
 */

#include <stddef.h>
#include <stdint.h>

#include "isth_wire.h"

#define ISTH_FUZZ_CFG_SIZE 6u

/** Decode the configuration prefix at @p p (ISTH_FUZZ_CFG_SIZE bytes). */
void isth_fuzz_limits(const uint8_t *p, struct isth_wire_limits *lim);

/** Encode @p lim as a configuration prefix at @p p. */
void isth_fuzz_put_limits(uint8_t *p, const struct isth_wire_limits *lim);

/**
 * Check everything isth_wire_parse_msg() promises about an accepted
 * message at @p buf / @p len, including that isth_wire_build_msg()
 * re-encodes it to the same bytes. abort()s on the first violation.
 */
void isth_fuzz_check_msg(const uint8_t *buf, size_t len, const struct isth_wire_limits *lim,
	const struct isth_wire_pkt *pkt);

/**
 * Check an accepted frame: the Ethernet/IPv4/UDP layers re-validated by
 * independent code, the message located where the headers say, the same
 * verdict and header from isth_wire_parse_msg() on the UDP payload, then
 * everything isth_fuzz_check_msg() checks. abort()s on violation.
 */
void isth_fuzz_check_frame(const uint8_t *buf, size_t len, const struct isth_wire_limits *lim,
	const struct isth_wire_pkt *pkt);

/** Check a rejection: a named reason other than ISTH_WIRE_OK. */
void isth_fuzz_check_reject(enum isth_wire_reason r);

/** The libFuzzer entry point each harness defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* ISTH_FUZZ_COMMON_H */
