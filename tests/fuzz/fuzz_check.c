/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Invariants the wire parsers promise, checked on every accepted input.
 *
 * The checks decode the bytes again with their own readers and their own
 * tables (written from isth_wire.h and doc/protocol.md, not from
 * isth_wire.c), so a parser that fills a field from the wrong offset, or
 * accepts a flag, dtype or bitmap the header says it refuses, is caught
 * even when it does not crash.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

#define FUZZ_CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, \
				#cond); \
			abort(); \
		} \
	} while (0)

/* Largest UDP payload an IPv4 datagram can carry. */
#define MAX_UDP_PAYLOAD (65535u - ISTH_WIRE_IPV4_MIN_HDR_SIZE - ISTH_WIRE_UDP_HDR_SIZE)

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(((unsigned int)p[0] << 8) | p[1]);
}

static uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)rd16(p) << 16 | rd16(p + 2);
}

static uint64_t
rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

void
isth_fuzz_limits(const uint8_t *p, struct isth_wire_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->n_islands = (p[0] % ISTH_WIRE_MAX_ISLANDS) + 1;
	lim->check_udp_csum = (p[1] & 1) != 0;
	lim->auth = (p[1] & 2) != 0;
	lim->max_elems = rd16(p + 2);
	lim->max_ranges = rd16(p + 4);
	lim->udp_port = ISTH_WIRE_PORT;
	lim->n_streams = (uint8_t)((p[1] >> 4) + 1);
}

void
isth_fuzz_put_limits(uint8_t *p, const struct isth_wire_limits *lim)
{
	p[0] = (uint8_t)(lim->n_islands - 1);
	p[1] = (uint8_t)((lim->check_udp_csum ? 1 : 0) | (lim->auth ? 2 : 0) |
		((lim->n_streams ? lim->n_streams - 1 : 0) & 0x0f) << 4);
	p[2] = lim->max_elems >> 8;
	p[3] = (uint8_t)lim->max_elems;
	p[4] = lim->max_ranges >> 8;
	p[5] = (uint8_t)lim->max_ranges;
}

/* Flags each type may carry, from the comments on enum isth_wire_flag. */
static uint16_t
allowed_flags(unsigned int type)
{
	switch (type) {
	case ISTH_WIRE_DATA:
		return ISTH_WIRE_F_RESENT | ISTH_WIRE_F_LAST | ISTH_WIRE_F_AUTH;
	case ISTH_WIRE_AGG:
		return ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT | ISTH_WIRE_F_LAST |
			ISTH_WIRE_F_AUTH;
	case ISTH_WIRE_NACK:
		return ISTH_WIRE_F_CHUNKS | ISTH_WIRE_F_AUTH | ISTH_WIRE_F_ECHO;
	case ISTH_WIRE_GONE:
		return ISTH_WIRE_F_CHUNKS | ISTH_WIRE_F_AUTH;
	case ISTH_WIRE_ROUND:
		return ISTH_WIRE_F_AUTH;
	case ISTH_WIRE_PARTIAL:
		return ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT | ISTH_WIRE_F_LAST |
			ISTH_WIRE_F_AUTH | ISTH_WIRE_F_DOWN;
	default:
		return 0;
	}
}

static uint64_t
mask_of(uint32_t n)
{
	return n >= 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1;
}

/* Reads every byte so that ASan sees an overrun of the reported size. */
static unsigned int
touch(const uint8_t *p, size_t n)
{
	unsigned int x = 0;
	size_t i;

	for (i = 0; i < n; i++)
		x += p[i];
	return x;
}

static volatile unsigned int sink;

void
isth_fuzz_check_reject(enum isth_wire_reason r)
{
	FUZZ_CHECK(r > ISTH_WIRE_OK && r < ISTH_WIRE_REASON_MAX);
	FUZZ_CHECK(strcmp(isth_wire_reason_name(r), "unknown") != 0);
	FUZZ_CHECK(strcmp(isth_wire_reason_str(r), "unknown reason") != 0);
}

static void
check_ranges(const struct isth_wire_pkt *pkt)
{
	const struct isth_wire_hdr *h = &pkt->hdr;
	struct isth_wire_range r;
	unsigned int i;

	for (i = 0; i < h->count; i++) {
		const uint8_t *p = pkt->payload + (size_t)i * 16;

		isth_wire_get_range(pkt, i, &r);
		FUZZ_CHECK(r.first == rd64(p));
		FUZZ_CHECK(r.last == rd64(p + 8));
		FUZZ_CHECK(r.first <= r.last);
		if (h->flags & ISTH_WIRE_F_CHUNKS)
			FUZZ_CHECK(r.last <= UINT32_MAX);
	}
}

static void
check_round(const struct isth_wire_pkt *pkt, uint64_t mask)
{
	const struct isth_wire_hdr *h = &pkt->hdr;
	const uint8_t *p = pkt->payload;
	struct isth_wire_round r;

	isth_wire_get_round(pkt, &r);
	FUZZ_CHECK(r.start_ns == rd64(p));
	FUZZ_CHECK(r.deadline_ns == rd64(p + 8));
	FUZZ_CHECK(r.period_ns == rd64(p + 16));
	FUZZ_CHECK(r.clique == rd64(p + 24));
	FUZZ_CHECK(r.n_chunks == rd32(p + 32));
	FUZZ_CHECK(r.chunk_elems == rd32(p + 36));
	FUZZ_CHECK(r.deadline_ns >= r.start_ns);
	FUZZ_CHECK(r.period_ns != 0);
	FUZZ_CHECK((r.clique & ~mask) == 0);
	FUZZ_CHECK(r.clique & (UINT64_C(1) << h->sender));
	FUZZ_CHECK((h->bitmap & ~r.clique) == 0);
}

/* Field by field: struct isth_wire_hdr has padding that nobody initialises. */
static bool
hdr_eq(const struct isth_wire_hdr *a, const struct isth_wire_hdr *b)
{
	return a->version == b->version && a->epoch == b->epoch && a->type == b->type &&
		a->dtype == b->dtype && a->flags == b->flags && a->stream == b->stream &&
		a->trailer_len == b->trailer_len && a->sender == b->sender &&
		a->count == b->count && a->job == b->job && a->round == b->round &&
		a->chunk == b->chunk && a->seq == b->seq && a->bitmap == b->bitmap;
}

/* isth_wire_build_msg() must reproduce the accepted bytes exactly, and
 * the parser must accept its own output with the same header. */
static void
check_reencode(const struct isth_wire_pkt *pkt, const struct isth_wire_limits *lim)
{
	struct isth_wire_pkt again;
	uint8_t *copy;
	int n;

	if (pkt->msg_size > MAX_UDP_PAYLOAD)
		return; /* build_msg refuses these by design; no socket gives one */
	copy = malloc(pkt->msg_size);
	FUZZ_CHECK(copy != NULL);
	n = isth_wire_build_msg(
		copy, pkt->msg_size, &pkt->hdr, pkt->payload, pkt->payload_size, pkt->trailer);
	FUZZ_CHECK(n >= 0 && (size_t)n == pkt->msg_size);
	FUZZ_CHECK(memcmp(copy, pkt->msg, pkt->msg_size) == 0);
	FUZZ_CHECK(isth_wire_build_msg(copy, pkt->msg_size - 1, &pkt->hdr, pkt->payload,
			   pkt->payload_size, pkt->trailer) == -ENOSPC);
	memset(&again, 0, sizeof(again));
	FUZZ_CHECK(isth_wire_parse_msg(copy, pkt->msg_size, lim, &again) == ISTH_WIRE_OK);
	FUZZ_CHECK(hdr_eq(&again.hdr, &pkt->hdr));
	FUZZ_CHECK(again.payload_size == pkt->payload_size);
	free(copy);
}

void
isth_fuzz_check_msg(const uint8_t *buf, size_t len, const struct isth_wire_limits *lim,
	const struct isth_wire_pkt *pkt)
{
	const struct isth_wire_hdr *h = &pkt->hdr;
	uint64_t mask = mask_of(lim->n_islands);
	const uint8_t *m = pkt->msg;
	unsigned int esize;

	/* Everything the packet points at lies inside the caller's buffer. */
	FUZZ_CHECK(m >= buf && pkt->msg_size <= len && (size_t)(m - buf) <= len - pkt->msg_size);
	FUZZ_CHECK(pkt->msg_size >= ISTH_WIRE_HDR_SIZE);
	FUZZ_CHECK(pkt->payload == m + ISTH_WIRE_HDR_SIZE);
	FUZZ_CHECK(ISTH_WIRE_HDR_SIZE + pkt->payload_size + h->trailer_len == pkt->msg_size);
	if (h->trailer_len)
		FUZZ_CHECK(pkt->trailer == pkt->payload + pkt->payload_size);
	else
		FUZZ_CHECK(pkt->trailer == NULL);
	sink += touch(m, pkt->msg_size);

	/* The header view is the bytes at the documented offsets. */
	FUZZ_CHECK(rd16(m) == ISTH_WIRE_MAGIC);
	FUZZ_CHECK(m[2] == (lim->auth ? 2 : 1));
	FUZZ_CHECK(h->version == m[2]);
	FUZZ_CHECK(h->type == m[3]);
	/* flags bits 12..15 are the stream field, not flags */
	FUZZ_CHECK(h->flags == (rd16(m + 4) & 0x0fff));
	FUZZ_CHECK(h->stream == m[4] >> 4);
	FUZZ_CHECK(h->dtype == m[6]);
	FUZZ_CHECK(h->trailer_len == m[7]);
	FUZZ_CHECK(h->job == rd32(m + 8));
	FUZZ_CHECK(h->round == rd32(m + 12));
	FUZZ_CHECK(h->chunk == rd32(m + 16));
	FUZZ_CHECK(h->sender == m[20]);
	if (lim->auth) {
		/* version 2: byte 21 is the epoch; AUTH and a 16-byte tag */
		FUZZ_CHECK(h->epoch == m[21]);
		FUZZ_CHECK(h->trailer_len == 16);
		FUZZ_CHECK((h->flags & ISTH_WIRE_F_AUTH) != 0);
	} else {
		FUZZ_CHECK(m[21] == 0);
		FUZZ_CHECK(h->epoch == 0);
	}
	FUZZ_CHECK(h->count == rd16(m + 22));
	FUZZ_CHECK(h->seq == rd64(m + 24));
	FUZZ_CHECK(h->bitmap == rd64(m + 32));

	/* What the parser says it refuses, it refused. */
	FUZZ_CHECK(h->type >= ISTH_WIRE_DATA && h->type <= ISTH_WIRE_PARTIAL);
	FUZZ_CHECK((h->flags & ~allowed_flags(h->type)) == 0);
	/* an echo copies a NACK by chunk only */
	FUZZ_CHECK(!(h->flags & ISTH_WIRE_F_ECHO) || (h->flags & ISTH_WIRE_F_CHUNKS));
	FUZZ_CHECK((h->trailer_len != 0) == ((h->flags & ISTH_WIRE_F_AUTH) != 0));
	FUZZ_CHECK(h->sender < lim->n_islands);
	FUZZ_CHECK((h->bitmap & ~mask) == 0);
	FUZZ_CHECK(h->stream < (lim->n_streams ? lim->n_streams : 1));
	if (h->type == ISTH_WIRE_DATA || h->type == ISTH_WIRE_PARTIAL ||
		(h->flags & ISTH_WIRE_F_CHUNKS))
		FUZZ_CHECK(h->stream == 0);

	switch (h->type) {
	case ISTH_WIRE_DATA:
	case ISTH_WIRE_AGG:
	case ISTH_WIRE_PARTIAL:
		esize = h->dtype == ISTH_WIRE_DTYPE_BF16 ? 2 : 4;
		FUZZ_CHECK(h->dtype >= ISTH_WIRE_DTYPE_FP32 && h->dtype <= ISTH_WIRE_DTYPE_INT32);
		FUZZ_CHECK(isth_wire_dtype_size(h->dtype) == esize);
		FUZZ_CHECK(h->count >= 1 && h->count <= lim->max_elems);
		FUZZ_CHECK((size_t)h->count * esize == pkt->payload_size);
		FUZZ_CHECK(h->bitmap != 0);
		if (h->type == ISTH_WIRE_DATA)
			FUZZ_CHECK(h->bitmap == UINT64_C(1) << h->sender);
		break;
	case ISTH_WIRE_NACK:
	case ISTH_WIRE_GONE:
		FUZZ_CHECK(h->dtype == ISTH_WIRE_DTYPE_NONE);
		FUZZ_CHECK(h->count >= 1 && h->count <= lim->max_ranges);
		FUZZ_CHECK((size_t)h->count * ISTH_WIRE_RANGE_SIZE == pkt->payload_size);
		check_ranges(pkt);
		break;
	case ISTH_WIRE_ROUND:
		FUZZ_CHECK(h->dtype == ISTH_WIRE_DTYPE_NONE);
		FUZZ_CHECK(h->count == 0);
		FUZZ_CHECK(pkt->payload_size == ISTH_WIRE_ROUND_SIZE);
		check_round(pkt, mask);
		break;
	}
	check_reencode(pkt, lim);
}

/* RFC 1071 sum, written out again rather than borrowed from the parser. */
static uint32_t
ones_sum(const uint8_t *p, size_t n, uint32_t s)
{
	while (n >= 2) {
		s += rd16(p);
		p += 2;
		n -= 2;
	}
	if (n)
		s += (uint32_t)p[0] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

void
isth_fuzz_check_frame(const uint8_t *buf, size_t len, const struct isth_wire_limits *lim,
	const struct isth_wire_pkt *pkt)
{
	const struct isth_wire_addr *a = &pkt->addr;
	size_t off = ISTH_WIRE_ETH_HDR_SIZE, ihl, totlen, ulen;
	const uint8_t *ip, *udp;
	struct isth_wire_pkt inner;
	uint16_t etype, vlan = 0;

	FUZZ_CHECK(len >= ISTH_WIRE_FRAME_OVERHEAD);
	FUZZ_CHECK(memcmp(a->dst_mac, buf, 6) == 0);
	FUZZ_CHECK(memcmp(a->src_mac, buf + 6, 6) == 0);
	etype = rd16(buf + 12);
	if (etype == 0x8100) {
		vlan = rd16(buf + 14) & 0x0fff;
		etype = rd16(buf + 16);
		off += ISTH_WIRE_VLAN_TAG_SIZE;
	}
	FUZZ_CHECK(etype == 0x0800);
	FUZZ_CHECK(a->vlan == vlan);

	ip = buf + off;
	FUZZ_CHECK(len - off >= ISTH_WIRE_IPV4_MIN_HDR_SIZE);
	FUZZ_CHECK(ip[0] >> 4 == 4);
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	FUZZ_CHECK(ihl >= ISTH_WIRE_IPV4_MIN_HDR_SIZE && ihl <= len - off);
	totlen = rd16(ip + 2);
	FUZZ_CHECK(totlen >= ihl + ISTH_WIRE_UDP_HDR_SIZE && totlen <= len - off);
	FUZZ_CHECK(ones_sum(ip, ihl, 0) == 0xffff);
	FUZZ_CHECK((rd16(ip + 6) & 0x3fff) == 0);
	FUZZ_CHECK(ip[9] == 17);
	FUZZ_CHECK(a->dscp == ip[1] >> 2);
	FUZZ_CHECK(a->ttl == ip[8]);
	FUZZ_CHECK(a->src_ip == rd32(ip + 12));
	FUZZ_CHECK(a->dst_ip == rd32(ip + 16));

	udp = ip + ihl;
	ulen = rd16(udp + 4);
	FUZZ_CHECK(ulen == totlen - ihl);
	FUZZ_CHECK(a->src_port == rd16(udp));
	FUZZ_CHECK(a->dst_port == rd16(udp + 2));
	FUZZ_CHECK(a->dst_port == lim->udp_port);
	if (lim->check_udp_csum && rd16(udp + 6) != 0) {
		uint32_t s = ones_sum(ip + 12, 8, 0);

		s = ones_sum((const uint8_t *)"\0\x11", 2, s);
		s = ones_sum((const uint8_t[2]){ulen >> 8, ulen & 0xff}, 2, s);
		FUZZ_CHECK(ones_sum(udp, ulen, s) == 0xffff);
	}

	FUZZ_CHECK(pkt->msg == udp + ISTH_WIRE_UDP_HDR_SIZE);
	FUZZ_CHECK(pkt->msg_size == ulen - ISTH_WIRE_UDP_HDR_SIZE);

	/* The frame parser and the message parser agree on the message. */
	memset(&inner, 0, sizeof(inner));
	FUZZ_CHECK(isth_wire_parse_msg(pkt->msg, pkt->msg_size, lim, &inner) == ISTH_WIRE_OK);
	FUZZ_CHECK(hdr_eq(&inner.hdr, &pkt->hdr));
	FUZZ_CHECK(inner.payload == pkt->payload && inner.payload_size == pkt->payload_size &&
		inner.trailer == pkt->trailer);

	isth_fuzz_check_msg(buf, len, lim, pkt);
}
