/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHMUS_INJECT_H
#define ISTHMUS_INJECT_H

/*
 * isthmus-inject's frame builder and pcap reader, in a library of their
 * own so that tests/inject checks the very code the tool runs. Pure
 * functions over caller buffers; the socket side is in main.c.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "isth_wire.h"

/* What to craft. TINY is a DATA of one element whose chunk id advances
 * with every packet (fresh ids for slot exhaustion). */
enum inject_kind {
	INJ_DATA,
	INJ_AGG,
	INJ_NACK,
	INJ_GONE,
	INJ_ROUND,
	INJ_TINY,
	INJ_PARTIAL,
	INJ_KIND_MAX
};

/*
 * A series of messages: message i of the series has chunk = chunk +
 * i * chunk_step (TINY: step at least 1) and seq = seq + i * seq_step;
 * everything else is the same in every message.
 */
struct inject_spec {
	enum inject_kind kind;
	uint32_t job;
	uint32_t round;
	uint32_t chunk; /* first chunk id */
	uint32_t chunk_step;
	uint8_t sender; /* claimed island (spoofed at will) */
	uint8_t dtype; /* DATA/AGG/TINY: enum isth_wire_dtype */
	uint16_t count; /* DATA/AGG: elements (TINY: 1) */
	uint16_t flags; /* extra header flags (ISTH_WIRE_F_*) */
	uint64_t seq; /* first seq */
	uint64_t seq_step;
	uint64_t bitmap; /* AGG: contributors; NACK/GONE: as given;
				 * ROUND: expected set; DATA: 0 = own bit */
	int32_t value; /* every int32 element; fp32: (float)value */
	unsigned int n_ranges; /* NACK/GONE: 1..ISTH_INJECT_MAX_RANGES */
	struct isth_wire_range ranges[89];
	struct isth_wire_round rb; /* ROUND body */
};
#define ISTH_INJECT_MAX_RANGES 89u

/** Name of a kind ("data", "tiny", ...) and back; -1 if unknown. */
const char *inject_kind_name(enum inject_kind k);
int inject_kind_parse(const char *s);

/*
 * Build message @i of the series into @buf: a version 1 isthmus message
 * (header + body, no trailer) that lib/wire's parser accepts whenever the
 * spec's fields are within the receiver's limits. Seal it with lib/auth
 * for version 2.
 * @return bytes written, -ENOSPC, or -EINVAL (inconsistent spec)
 */
int inject_build(const struct inject_spec *s, uint64_t i, uint8_t *buf, size_t cap);

/*
 * Put Ethernet/IPv4/UDP headers in front of a message already at
 * @buf + ISTH_INJECT_L2 (lib/wire's encoder, IPv4 checksum computed,
 * UDP checksum 0). @return the frame length or -errno. The IPv4 packet
 * (what a raw IP socket sends) starts at @buf + ISTH_WIRE_ETH_HDR_SIZE.
 */
#define ISTH_INJECT_L2 \
	(ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE)
int inject_frame(uint8_t *buf, size_t cap, uint32_t src_ip, uint16_t src_port, uint32_t dst_ip,
	uint16_t dst_port, size_t msg_len);

/* A classic pcap file (microsecond or nanosecond, either byte order;
 * link types Ethernet (1) and raw IPv4 (101, 228)). */
struct inject_pcap {
	FILE *f;
	int swapped;
	uint32_t linktype;
	uint64_t records; /* records read so far */
};

/* @return 0, or -errno / -EINVAL with a message in @err */
int inject_pcap_open(struct inject_pcap *p, const char *path, char *err, size_t errlen);
void inject_pcap_close(struct inject_pcap *p);

/*
 * Next UDP datagram of the capture whose destination port is @port (any
 * port if 0): its payload is copied to @buf. Frames that are not IPv4/UDP,
 * fragments and other ports are skipped.
 * @return payload length (>= 0), 0 with *eof = 1 at the end, or -errno /
 *         -EINVAL on a truncated or corrupt file (message in @err).
 */
int inject_pcap_next_udp(struct inject_pcap *p, uint16_t port, uint8_t *buf, size_t cap, int *eof,
	char *err, size_t errlen);

#endif /* ISTHMUS_INJECT_H */
