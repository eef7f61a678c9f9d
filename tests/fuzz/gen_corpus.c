/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed corpus for the wire-parser fuzz harnesses, built with the project's
 * own encoder (isth_wire_build_msg, isth_wire_put_frame_hdr, ...).
 *
 *   gen_corpus --out DIR [--stamp FILE]   write seeds into DIR/frame and DIR/msg
 *   gen_corpus --verify                   write nothing, check verdicts
 *
 * Every seed carries the verdict it was built to get: valid packets of
 * every type and element type (VLAN and untagged, with and without IPv4
 * options and UDP checksums, Ethernet padding, auth trailers), and near
 * misses that each break exactly one rule. The generator runs the parser
 * on every seed; --verify fails if any verdict differs from the intended
 * one, so the seeds are known to reach the branch they are named after.
 * Each file is the fuzz configuration prefix (fuzz_common.h) + packet.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"

#define BUF_SIZE 16384u

struct gen {
	const char *out; /* NULL: verify only */
	unsigned int n_seeds;
	unsigned int n_wrong;
	int err;
};

static void
die(const char *what)
{
	fprintf(stderr, "gen_corpus: %s\n", what);
	exit(2);
}

/* Record one seed: check its verdict, write prefix + bytes. */
static void
emit(struct gen *g, bool frame, const char *name, const struct isth_wire_limits *lim,
	const uint8_t *pkt, size_t len, enum isth_wire_reason expect)
{
	uint8_t cfg[ISTH_FUZZ_CFG_SIZE];
	struct isth_wire_limits back;
	enum isth_wire_reason r;
	struct isth_wire_pkt p;
	char path[4096];
	FILE *f;

	isth_fuzz_put_limits(cfg, lim);
	isth_fuzz_limits(cfg, &back);
	if (memcmp(&back, lim, sizeof(back)) != 0)
		die("limits do not survive the configuration prefix");
	r = frame ? isth_wire_parse_frame(pkt, len, lim, &p)
		  : isth_wire_parse_msg(pkt, len, lim, &p);
	g->n_seeds++;
	if (r != expect) {
		g->n_wrong++;
		fprintf(stderr, "gen_corpus: %s/%s: expected %s, parser says %s\n",
			frame ? "frame" : "msg", name, isth_wire_reason_name(expect),
			isth_wire_reason_name(r));
	}
	if (g->out == NULL)
		return;
	snprintf(path, sizeof(path), "%s/%s/%s", g->out, frame ? "frame" : "msg", name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(cfg, 1, sizeof(cfg), f) != sizeof(cfg) ||
		(len && fwrite(pkt, 1, len, f) != len) || fclose(f) != 0) {
		fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
		g->err = 1;
	}
}

/* ---- messages ---------------------------------------------------------- */

static void
put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t
f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* count elements of @dtype, little-endian, varied but deterministic. */
static size_t
mk_elems(uint8_t *p, unsigned int dtype, unsigned int count)
{
	unsigned int i;

	for (i = 0; i < count; i++) {
		float v = (float)i * 0.5f - 3.25f;

		switch (dtype) {
		case ISTH_WIRE_DTYPE_FP32:
			put_le32(p + 4 * i, f32_bits(v));
			break;
		case ISTH_WIRE_DTYPE_INT32:
			put_le32(p + 4 * i, (uint32_t)(i * 2654435761u));
			break;
		case ISTH_WIRE_DTYPE_BF16:
			p[2 * i] = (uint8_t)(f32_bits(v) >> 16);
			p[2 * i + 1] = (uint8_t)(f32_bits(v) >> 24);
			break;
		}
	}
	return (size_t)count * isth_wire_dtype_size(dtype);
}

static const uint8_t trailer_bytes[255] = {
	0xde,
	0xad,
	0xbe,
	0xef,
	0x01,
	0x23,
	0x45,
	0x67,
	0x89,
	0xab,
	0xcd,
	0xef,
	0xfe,
	0xdc,
	0xba,
	0x98,
};

static void
base_hdr(struct isth_wire_hdr *h, unsigned int type, unsigned int dtype, unsigned int count)
{
	memset(h, 0, sizeof(*h));
	h->type = (uint8_t)type;
	h->dtype = (uint8_t)dtype;
	h->count = (uint16_t)count;
	h->job = 0x01020304;
	h->round = 7;
	h->chunk = 42;
	h->sender = 3;
	h->seq = 1000;
	h->bitmap = UINT64_C(1) << 3;
}

/* Build header + body + trailer with isth_wire_build_msg(). */
static size_t
mk_msg(uint8_t *buf, const struct isth_wire_hdr *h, const uint8_t *body, size_t body_size)
{
	bool tag = h->trailer_len || h->version == ISTH_WIRE_VERSION_AUTH;
	int n = isth_wire_build_msg(buf, BUF_SIZE, h, body, body_size, tag ? trailer_bytes : NULL);

	if (n < 0)
		die("isth_wire_build_msg refused a seed");
	return (size_t)n;
}

static size_t
mk_data(uint8_t *buf, unsigned int type, unsigned int dtype, unsigned int count, uint16_t flags,
	uint8_t trailer_len, uint8_t sender, uint64_t bitmap)
{
	static uint8_t body[BUF_SIZE];
	struct isth_wire_hdr h;
	size_t n;

	base_hdr(&h, type, dtype, count);
	h.flags = flags;
	h.trailer_len = trailer_len;
	h.sender = sender;
	h.bitmap = bitmap;
	n = mk_elems(body, dtype, count);
	return mk_msg(buf, &h, body, n);
}

static size_t
mk_ranges(uint8_t *buf, unsigned int type, uint16_t flags, uint8_t trailer_len,
	const struct isth_wire_range *r, unsigned int n)
{
	uint8_t body[64 * ISTH_WIRE_RANGE_SIZE];
	struct isth_wire_hdr h;
	int sz;

	base_hdr(&h, type, ISTH_WIRE_DTYPE_NONE, n);
	h.flags = flags;
	h.trailer_len = trailer_len;
	h.bitmap = 0;
	sz = isth_wire_put_ranges(body, sizeof(body), r, n);
	if (sz < 0)
		die("isth_wire_put_ranges");
	return mk_msg(buf, &h, body, (size_t)sz);
}

static size_t
mk_round(uint8_t *buf, uint16_t flags, uint8_t trailer_len, const struct isth_wire_round *rd,
	uint64_t bitmap)
{
	uint8_t body[ISTH_WIRE_ROUND_SIZE];
	struct isth_wire_hdr h;

	base_hdr(&h, ISTH_WIRE_ROUND, ISTH_WIRE_DTYPE_NONE, 0);
	h.flags = flags;
	h.trailer_len = trailer_len;
	h.bitmap = bitmap;
	if (isth_wire_put_round(body, sizeof(body), rd) < 0)
		die("isth_wire_put_round");
	return mk_msg(buf, &h, body, sizeof(body));
}

static const struct isth_wire_round good_round = {
	.start_ns = UINT64_C(1700000000000000000),
	.deadline_ns = UINT64_C(1700000000250000000),
	.period_ns = UINT64_C(1) << 29, /* one non-zero byte: see period-0 */
	.clique = 0x1b, /* islands 0, 1, 3, 4 */
	.n_chunks = 64,
	.chunk_elems = 358,
};

/* ---- frames ------------------------------------------------------------ */

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void
wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t
sum_words(const uint8_t *p, size_t n, uint32_t s)
{
	for (; n >= 2; p += 2, n -= 2)
		s += rd16(p);
	if (n)
		s += (uint32_t)p[0] << 8;
	return s;
}

static uint16_t
fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static size_t
ip_off(const uint8_t *f)
{
	return rd16(f + 12) == 0x8100 ? 18 : 14;
}

static void
fix_ip_csum(uint8_t *f)
{
	uint8_t *ip = f + ip_off(f);

	wr16(ip + 10, 0);
	wr16(ip + 10, isth_wire_cksum(ip, (size_t)(ip[0] & 0x0f) * 4));
}

static void
set_udp_csum(uint8_t *f)
{
	uint8_t *ip = f + ip_off(f);
	uint8_t *udp = ip + (size_t)(ip[0] & 0x0f) * 4;
	uint16_t ulen = rd16(udp + 4), c;
	uint32_t s;

	wr16(udp + 6, 0);
	s = sum_words(ip + 12, 8, 0) + 17 + ulen;
	c = fold(sum_words(udp, ulen, s));
	wr16(udp + 6, c ? c : 0xffff); /* 0 means "no checksum" */
}

enum {
	F_VLAN = 1 << 0, /* 802.1Q tag, VLAN 10, PCP 5 */
	F_IPOPT = 1 << 1, /* 4 bytes of IPv4 options: router alert */
	F_IPOPT3 = 1 << 2, /* 12 bytes of options: RA, NOPs, EOL */
	F_UCSUM = 1 << 3, /* a real UDP checksum instead of 0 */
	F_PAD = 1 << 4, /* 6 bytes of Ethernet padding after IP */
};

/* Wrap a message into a frame with isth_wire_put_frame_hdr(), then add
 * what the encoder does not write itself: options, checksum, padding. */
static size_t
mk_frame(uint8_t *f, const uint8_t *msg, size_t msg_size, unsigned int how)
{
	static const uint8_t opts[12] = {
		0x94,
		0x04,
		0x00,
		0x00,
		0x01,
		0x01,
		0x01,
		0x01,
		0x01,
		0x01,
		0x01,
		0x00,
	};
	struct isth_wire_addr a = {
		.dst_mac = {0x01, 0x00, 0x5e, 0x01, 0x02, 0x03},
		.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x03},
		.src_ip = 0x0a000003,
		.dst_ip = 0xef010203,
		.src_port = 4791,
		.dst_port = ISTH_WIRE_PORT,
		.ttl = 32,
		.dscp = 46,
	};
	size_t hs, len, olen = 0;
	uint8_t *ip;
	int n;

	if (how & F_VLAN)
		a.vlan = 10;
	hs = isth_wire_frame_hdr_size(&a);
	memcpy(f + hs, msg, msg_size);
	n = isth_wire_put_frame_hdr(f, BUF_SIZE, &a, msg_size);
	if (n < 0)
		die("isth_wire_put_frame_hdr");
	len = (size_t)n;
	if (how & F_VLAN)
		f[14] |= 5 << 5; /* PCP: not part of the VLAN id */
	ip = f + ip_off(f);
	if (how & (F_IPOPT | F_IPOPT3))
		olen = (how & F_IPOPT3) ? 12 : 4;
	if (olen) {
		memmove(ip + 20 + olen, ip + 20, len - (size_t)(ip - f) - 20);
		memcpy(ip + 20, opts, olen);
		ip[0] = (uint8_t)(0x40 | (5 + olen / 4));
		wr16(ip + 2, (uint16_t)(rd16(ip + 2) + olen));
		len += olen;
	}
	fix_ip_csum(f);
	if (how & F_UCSUM)
		set_udp_csum(f);
	if (how & F_PAD) {
		memset(f + len, 0, 6);
		len += 6;
	}
	return len;
}

/* ---- the catalogue ----------------------------------------------------- */

struct valid {
	const char *name;
	size_t len;
	uint8_t bytes[BUF_SIZE];
	struct isth_wire_limits lim;
};

static struct valid valids[32];
static unsigned int n_valid;

static struct valid *
add_valid(const char *name, const struct isth_wire_limits *lim)
{
	struct valid *v = &valids[n_valid++];

	if (n_valid > sizeof(valids) / sizeof(valids[0]))
		die("too many valid seeds");
	v->name = name;
	v->lim = *lim;
	return v;
}

static void
make_valids(const struct isth_wire_limits *l8, const struct isth_wire_limits *l64,
	const struct isth_wire_limits *ljumbo)
{
	const struct isth_wire_range seqs[3] = {
		{10, 19},
		{25, 25},
		{1000, UINT64_MAX},
	};
	const struct isth_wire_range chunks[2] = {
		{0, 7},
		{100, UINT32_MAX},
	};
	struct valid *v;

#define DATA(nm, lim, ty, dt, cnt, fl, tl, snd, bm) \
	do { \
		v = add_valid(nm, lim); \
		v->len = mk_data(v->bytes, ty, dt, cnt, fl, tl, snd, bm); \
	} while (0)
	DATA("ok-data-fp32", l8, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, 16, 0, 0, 3, 1u << 3);
	DATA("ok-data-bf16-last", l8, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_BF16, 33, ISTH_WIRE_F_LAST, 0,
		0, 1u);
	DATA("ok-data-int32-resent", l8, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_INT32, 8,
		ISTH_WIRE_F_RESENT, 0, 7, 1u << 7);
	DATA("ok-data-fp32-auth", l8, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, 4, ISTH_WIRE_F_AUTH, 16,
		3, 1u << 3);
	DATA("ok-data-fp32-max", l8, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, l8->max_elems, 0, 0, 3,
		1u << 3);
	DATA("ok-data-fp32-island63", l64, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, 2, 0, 0, 63,
		UINT64_C(1) << 63);
	DATA("ok-agg-fp32", l8, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_FP32, 12, 0, 0, 1, 0xff);
	DATA("ok-agg-bf16-partial", l8, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_BF16, 9, ISTH_WIRE_F_PARTIAL,
		0, 2, 0x15);
	DATA("ok-agg-int32-resent-last", l8, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_INT32, 5,
		ISTH_WIRE_F_RESENT | ISTH_WIRE_F_LAST, 0, 4, 0x3c);
	DATA("ok-agg-fp32-partial-auth", l8, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_FP32, 3,
		ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_AUTH, 32, 0, 0x81);
	DATA("ok-agg-fp32-all64", l64, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_FP32, 6, 0, 0, 5, UINT64_MAX);
	DATA("ok-agg-fp32-jumbo", ljumbo, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_FP32, 2000,
		ISTH_WIRE_F_LAST, 0, 1, 0x3);
#undef DATA
	v = add_valid("ok-nack-seq", l8);
	v->len = mk_ranges(v->bytes, ISTH_WIRE_NACK, 0, 0, seqs, 3);
	v = add_valid("ok-nack-chunks", l8);
	v->len = mk_ranges(v->bytes, ISTH_WIRE_NACK, ISTH_WIRE_F_CHUNKS, 0, chunks, 2);
	v = add_valid("ok-gone-seq", l8);
	v->len = mk_ranges(v->bytes, ISTH_WIRE_GONE, 0, 0, seqs, 1);
	v = add_valid("ok-gone-chunks-auth", l8);
	v->len = mk_ranges(
		v->bytes, ISTH_WIRE_GONE, ISTH_WIRE_F_CHUNKS | ISTH_WIRE_F_AUTH, 8, chunks, 2);
	v = add_valid("ok-round", l8);
	v->len = mk_round(v->bytes, 0, 0, &good_round, 0x13);
	v = add_valid("ok-round-auth", l8);
	v->len = mk_round(v->bytes, ISTH_WIRE_F_AUTH, 255, &good_round, 0);
}

/* Version 2 seeds, built by isth_wire_build_msg() from h.version = 2 (it
 * sets AUTH, trailer_len 16 and the epoch byte), on a version 2 link. */
static void
make_valids_v2(const struct isth_wire_limits *l8a)
{
	static const struct isth_wire_range chunks[2] = {{0, 7}, {100, UINT32_MAX}};
	static uint8_t body[BUF_SIZE];
	struct isth_wire_hdr h;
	struct valid *v;
	int sz;

	v = add_valid("ok-v2-data-fp32", l8a);
	base_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, 4);
	h.version = ISTH_WIRE_VERSION_AUTH;
	h.epoch = 7;
	v->len = mk_msg(v->bytes, &h, body, mk_elems(body, ISTH_WIRE_DTYPE_FP32, 4));
	v = add_valid("ok-v2-gone-chunks", l8a);
	base_hdr(&h, ISTH_WIRE_GONE, ISTH_WIRE_DTYPE_NONE, 2);
	h.version = ISTH_WIRE_VERSION_AUTH;
	h.epoch = 255;
	h.flags = ISTH_WIRE_F_CHUNKS;
	h.bitmap = 0;
	sz = isth_wire_put_ranges(body, sizeof(body), chunks, 2);
	if (sz < 0)
		die("isth_wire_put_ranges");
	v->len = mk_msg(v->bytes, &h, body, (size_t)sz);
}

/* A valid message with one rule broken. */
struct bad_msg {
	const char *name;
	unsigned int base; /* index into valids[] */
	int off; /* byte to overwrite, -1: none */
	uint8_t val;
	long resize; /* bytes added (or removed when < 0) at the end */
	enum isth_wire_reason expect;
};

/* Indexes of valids[], in make_valids() order. */
enum {
	V_DATA_FP32,
	V_DATA_BF16,
	V_DATA_INT32,
	V_DATA_AUTH,
	V_DATA_MAX,
	V_DATA_I63,
	V_AGG_FP32,
	V_AGG_BF16,
	V_AGG_INT32,
	V_AGG_AUTH,
	V_AGG_64,
	V_AGG_JUMBO,
	V_NACK_SEQ,
	V_NACK_CHUNKS,
	V_GONE_SEQ,
	V_GONE_AUTH,
	V_ROUND,
	V_ROUND_AUTH,
	V_V2_DATA,
	V_V2_GONE,
};

static const struct bad_msg bad_msgs[] = {
	{"bad-hdr_trunc-empty", V_DATA_FP32, -1, 0, -(16 * 4 + 40), ISTH_WIRE_E_HDR_TRUNC},
	{"bad-hdr_trunc-39", V_DATA_FP32, -1, 0, -(16 * 4 + 1), ISTH_WIRE_E_HDR_TRUNC},
	{"bad-magic", V_DATA_FP32, 1, 'T', 0, ISTH_WIRE_E_MAGIC},
	{"bad-version-0", V_AGG_FP32, 2, 0, 0, ISTH_WIRE_E_VERSION},
	{"bad-version-2", V_NACK_SEQ, 2, 2, 0, ISTH_WIRE_E_VERSION},
	{"bad-version-v1-on-v2-link", V_V2_DATA, 2, 1, 0, ISTH_WIRE_E_VERSION},
	{"bad-trailer-v2-no-auth", V_V2_DATA, 5, 0, 0, ISTH_WIRE_E_TRAILER},
	{"bad-trailer-v2-len-8", V_V2_GONE, 7, 8, 0, ISTH_WIRE_E_TRAILER},
	{"bad-type-0", V_DATA_FP32, 3, 0, 0, ISTH_WIRE_E_TYPE},
	{"bad-type-7", V_DATA_FP32, 3, 7, 0, ISTH_WIRE_E_TYPE},
	{"bad-flags-data-partial", V_DATA_FP32, 5, ISTH_WIRE_F_PARTIAL, 0, ISTH_WIRE_E_FLAGS},
	{"bad-flags-unknown-bit", V_AGG_FP32, 4, 0x01, 0, ISTH_WIRE_E_FLAGS},
	{"bad-flags-nack-last", V_NACK_SEQ, 5, ISTH_WIRE_F_LAST, 0, ISTH_WIRE_E_FLAGS},
	{"bad-flags-round-chunks", V_ROUND, 5, ISTH_WIRE_F_CHUNKS, 0, ISTH_WIRE_E_FLAGS},
	{"bad-stream-agg-1", V_AGG_FP32, 4, 0x10, 0, ISTH_WIRE_E_STREAM},
	{"bad-stream-gone-15", V_GONE_SEQ, 4, 0xf0, 0, ISTH_WIRE_E_STREAM},
	{"bad-stream-data-1", V_DATA_FP32, 4, 0x10, 0, ISTH_WIRE_E_FLAGS},
	{"bad-stream-nack-chunks", V_NACK_CHUNKS, 4, 0x10, 0, ISTH_WIRE_E_FLAGS},
	{"bad-dtype-data-none", V_DATA_FP32, 6, ISTH_WIRE_DTYPE_NONE, 0, ISTH_WIRE_E_DTYPE},
	{"bad-dtype-agg-4", V_AGG_FP32, 6, 4, 0, ISTH_WIRE_E_DTYPE},
	{"bad-dtype-nack-fp32", V_NACK_SEQ, 6, ISTH_WIRE_DTYPE_FP32, 0, ISTH_WIRE_E_DTYPE},
	{"bad-island-8", V_DATA_FP32, 20, 8, 0, ISTH_WIRE_E_ISLAND},
	{"bad-island-255", V_ROUND, 20, 255, 0, ISTH_WIRE_E_ISLAND},
	{"bad-reserved", V_AGG_INT32, 21, 0x80, 0, ISTH_WIRE_E_RESERVED},
	{"bad-trailer-auth-no-len", V_DATA_AUTH, 7, 0, 0, ISTH_WIRE_E_TRAILER},
	{"bad-trailer-len-no-auth", V_DATA_FP32, 7, 4, 0, ISTH_WIRE_E_TRAILER},
	{"bad-trailer-past-end", V_ROUND_AUTH, -1, 0, -(255 + 40 - 254), ISTH_WIRE_E_TRAILER},
	{"bad-count-data-0", V_DATA_FP32, 23, 0, 0, ISTH_WIRE_E_COUNT},
	{"bad-count-data-over", V_DATA_MAX, 23, 0x67 /* 358 -> 359 */, 4, ISTH_WIRE_E_COUNT},
	{"bad-count-nack-0", V_NACK_SEQ, 23, 0, 0, ISTH_WIRE_E_COUNT},
	{"bad-count-nack-over", V_NACK_SEQ, 23, 90 /* max_ranges 89 */, 0, ISTH_WIRE_E_COUNT},
	{"bad-count-round-1", V_ROUND, 23, 1, 0, ISTH_WIRE_E_COUNT},
	{"bad-length-data-extra", V_DATA_FP32, -1, 0, 1, ISTH_WIRE_E_LENGTH},
	{"bad-length-bf16-short", V_DATA_BF16, -1, 0, -1, ISTH_WIRE_E_LENGTH},
	{"bad-length-int32-count", V_AGG_INT32, 23, 6, 0, ISTH_WIRE_E_LENGTH},
	{"bad-length-nack-short", V_NACK_SEQ, -1, 0, -15, ISTH_WIRE_E_LENGTH},
	{"bad-length-round-39", V_ROUND, -1, 0, -1, ISTH_WIRE_E_LENGTH},
	{"bad-length-round-auth", V_ROUND_AUTH, 7, 254, 0, ISTH_WIRE_E_LENGTH},
	{"bad-bitmap-data-other", V_DATA_FP32, 39, 0x09, 0, ISTH_WIRE_E_BITMAP},
	{"bad-bitmap-agg-0", V_AGG_FP32, 39, 0, 0, ISTH_WIRE_E_BITMAP},
	{"bad-bitmap-agg-island8", V_AGG_FP32, 38, 0x01, 0, ISTH_WIRE_E_BITMAP},
	{"bad-bitmap-nack-island9", V_NACK_SEQ, 38, 0x02, 0, ISTH_WIRE_E_BITMAP},
	{"bad-bitmap-round-island8", V_ROUND, 38, 0x01, 0, ISTH_WIRE_E_BITMAP},
	{"bad-bitmap-round-not-in-clique", V_ROUND, 39, 0x17, 0, ISTH_WIRE_E_BITMAP},
	{"bad-bitmap-round-sender-outside", V_ROUND, 20, 2, 0, ISTH_WIRE_E_BITMAP},
	{"bad-bitmap-round-clique-island8", V_ROUND, 40 + 30, 0x01, 0, ISTH_WIRE_E_BITMAP},
	{"bad-range-first-gt-last", V_NACK_SEQ, 40 + 16 + 15, 24, 0, ISTH_WIRE_E_RANGE},
	{"bad-range-chunk-above-u32", V_NACK_CHUNKS, 40 + 16 + 11, 1, 0, ISTH_WIRE_E_RANGE},
	{"bad-range-gone-first-gt-last", V_GONE_SEQ, 40 + 7, 20, 0, ISTH_WIRE_E_RANGE},
	{"bad-round_body-deadline", V_ROUND, 40 + 8, 0x00, 0, ISTH_WIRE_E_ROUND},
	{"bad-round_body-period-0", V_ROUND, 40 + 20, 0, 0, ISTH_WIRE_E_ROUND},
};

static size_t
mk_bad(uint8_t *buf, const struct bad_msg *b)
{
	const struct valid *v = &valids[b->base];
	size_t len = v->len;

	memcpy(buf, v->bytes, v->len);
	if (b->off >= 0) {
		if ((size_t)b->off >= len)
			die("bad seed offset past the message");
		buf[b->off] = b->val;
	}
	if (b->resize > 0)
		memset(buf + len, 0x5a, (size_t)b->resize);
	if (b->resize < 0 && (size_t)-b->resize > len)
		die("bad seed shrinks below zero");
	len = (size_t)((long)len + b->resize);
	return len;
}

/* A valid frame with one lower-layer rule broken. */
static void
frame_faults(struct gen *g, const struct isth_wire_limits *lim)
{
	static uint8_t f[BUF_SIZE], m[BUF_SIZE];
	const struct valid *v = &valids[V_DATA_FP32];
	struct isth_wire_limits nocsum = *lim;
	size_t len, ipo;
	uint8_t *ip;

#define FRESH(how) \
	do { \
		len = mk_frame(f, v->bytes, v->len, how); \
		ipo = ip_off(f); \
		ip = f + ipo; \
	} while (0)
	FRESH(0);
	emit(g, true, "bad-eth_trunc", lim, f, 13, ISTH_WIRE_E_ETH_TRUNC);
	emit(g, true, "bad-eth_trunc-empty", lim, f, 0, ISTH_WIRE_E_ETH_TRUNC);
	FRESH(F_VLAN);
	emit(g, true, "bad-vlan_trunc", lim, f, 17, ISTH_WIRE_E_VLAN_TRUNC);
	FRESH(0);
	wr16(f + 12, 0x86dd);
	emit(g, true, "bad-ethertype-ipv6", lim, f, len, ISTH_WIRE_E_ETHERTYPE);
	FRESH(F_VLAN);
	wr16(f + 16, 0x8100); /* QinQ: only one tag is allowed */
	emit(g, true, "bad-ethertype-qinq", lim, f, len, ISTH_WIRE_E_ETHERTYPE);
	FRESH(0);
	emit(g, true, "bad-ip_trunc", lim, f, ipo + 19, ISTH_WIRE_E_IP_TRUNC);
	FRESH(0);
	ip[0] = 0x65;
	emit(g, true, "bad-ip_version", lim, f, len, ISTH_WIRE_E_IP_VERSION);
	FRESH(0);
	ip[0] = 0x44;
	emit(g, true, "bad-ip_ihl-4", lim, f, len, ISTH_WIRE_E_IP_IHL);
	FRESH(F_IPOPT);
	emit(g, true, "bad-ip_ihl-past-end", lim, f, ipo + 22, ISTH_WIRE_E_IP_IHL);
	FRESH(0);
	wr16(ip + 2, (uint16_t)(len - ipo + 1));
	emit(g, true, "bad-ip_totlen-past-end", lim, f, len, ISTH_WIRE_E_IP_TOTLEN);
	FRESH(F_IPOPT);
	wr16(ip + 2, 23);
	emit(g, true, "bad-ip_totlen-below-ihl", lim, f, len, ISTH_WIRE_E_IP_TOTLEN);
	FRESH(F_VLAN | F_IPOPT3);
	ip[11] ^= 0x01;
	emit(g, true, "bad-ip_csum", lim, f, len, ISTH_WIRE_E_IP_CSUM);
	FRESH(0);
	ip[13] ^= 0x40; /* source address changed after the checksum */
	emit(g, true, "bad-ip_csum-addr", lim, f, len, ISTH_WIRE_E_IP_CSUM);
	FRESH(0);
	wr16(ip + 6, 0x2000);
	fix_ip_csum(f);
	emit(g, true, "bad-ip_frag-mf", lim, f, len, ISTH_WIRE_E_IP_FRAG);
	FRESH(0);
	wr16(ip + 6, 0x4001);
	fix_ip_csum(f);
	emit(g, true, "bad-ip_frag-offset", lim, f, len, ISTH_WIRE_E_IP_FRAG);
	FRESH(0);
	ip[9] = 6;
	fix_ip_csum(f);
	emit(g, true, "bad-ip_proto-tcp", lim, f, len, ISTH_WIRE_E_IP_PROTO);
	FRESH(0);
	wr16(ip + 2, 27);
	fix_ip_csum(f);
	emit(g, true, "bad-udp_trunc", lim, f, len, ISTH_WIRE_E_UDP_TRUNC);
	FRESH(0);
	wr16(ip + 24, (uint16_t)(rd16(ip + 24) + 1));
	emit(g, true, "bad-udp_len", lim, f, len, ISTH_WIRE_E_UDP_LEN);
	FRESH(F_PAD);
	wr16(ip + 24, (uint16_t)(rd16(ip + 24) + 2)); /* counts the padding */
	emit(g, true, "bad-udp_len-padding", lim, f, len, ISTH_WIRE_E_UDP_LEN);
	FRESH(F_IPOPT);
	wr16(ip + 24 + 2, ISTH_WIRE_PORT + 1);
	emit(g, true, "bad-udp_port", lim, f, len, ISTH_WIRE_E_UDP_PORT);
	FRESH(F_UCSUM);
	f[len - 1] ^= 0x10; /* an element bit flipped in flight */
	emit(g, true, "bad-udp_csum", lim, f, len, ISTH_WIRE_E_UDP_CSUM);
	/* An odd UDP length: the checksum pads the last byte. */
	len = mk_frame(f, valids[V_ROUND_AUTH].bytes, valids[V_ROUND_AUTH].len, F_UCSUM);
	emit(g, true, "ok-round-auth-udpcsum-odd", lim, f, len, ISTH_WIRE_OK);
	f[len - 1] ^= 0x01;
	emit(g, true, "bad-udp_csum-odd", lim, f, len, ISTH_WIRE_E_UDP_CSUM);
	nocsum.check_udp_csum = false;
	emit(g, true, "ok-udp_csum-unchecked", &nocsum, f, len, ISTH_WIRE_OK);
#undef FRESH

	/* Message faults reach the message parser through a valid frame. */
	for (size_t i = 0; i < sizeof(bad_msgs) / sizeof(bad_msgs[0]); i += 5) {
		char name[128];
		size_t n = mk_bad(m, &bad_msgs[i]);

		len = mk_frame(f, m, n, ((i & 1) ? F_VLAN : 0) | ((i & 2) ? F_UCSUM : 0));
		snprintf(name, sizeof(name), "%s", bad_msgs[i].name);
		emit(g, true, name, &valids[bad_msgs[i].base].lim, f, len, bad_msgs[i].expect);
	}
}

static int
prepare_dir(const char *dir)
{
	struct dirent *e;
	char path[4096];
	DIR *d;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -1;
	/* Drop seeds an older generator wrote: the names are the catalogue. */
	d = opendir(dir);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},
		{"stamp", required_argument, NULL, 's'},
		{"verify", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0},
	};
	struct isth_wire_limits l8, l64, ljumbo, l8a;
	static uint8_t buf[BUF_SIZE], f[BUF_SIZE];
	const char *stamp = NULL;
	struct gen g = {0};
	bool verify = false;
	char path[4096];
	unsigned int i;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			g.out = optarg;
			break;
		case 's':
			stamp = optarg;
			break;
		case 'v':
			verify = true;
			break;
		default:
			return 2;
		}
	}
	if ((g.out == NULL) == !verify || optind != argc) {
		fprintf(stderr, "usage: %s --out DIR [--stamp FILE] | --verify\n", argv[0]);
		return 2;
	}
	if (g.out) {
		if (mkdir(g.out, 0755) != 0 && errno != EEXIST)
			die("cannot create the output directory");
		snprintf(path, sizeof(path), "%s/frame", g.out);
		if (prepare_dir(path))
			die("cannot prepare DIR/frame");
		snprintf(path, sizeof(path), "%s/msg", g.out);
		if (prepare_dir(path))
			die("cannot prepare DIR/msg");
	}

	if (isth_wire_limits_init(&l8, 8, 1500) || isth_wire_limits_init(&l64, 64, 1500) ||
		isth_wire_limits_init(&ljumbo, 8, 9000))
		die("isth_wire_limits_init");
	if (isth_wire_limits_init_auth(&l8a, 8, 1500, true))
		die("isth_wire_limits_init_auth");
	make_valids(&l8, &l64, &ljumbo);
	make_valids_v2(&l8a);

	for (i = 0; i < n_valid; i++) {
		static const unsigned int how[] = {
			0,
			F_VLAN,
			F_IPOPT,
			F_VLAN | F_IPOPT3 | F_UCSUM,
			F_UCSUM,
			F_PAD,
			F_VLAN | F_UCSUM | F_PAD,
			F_IPOPT3,
		};
		const struct valid *v = &valids[i];
		unsigned int h = how[i % (sizeof(how) / sizeof(how[0]))];
		char name[128];
		size_t len;

		emit(&g, false, v->name, &v->lim, v->bytes, v->len, ISTH_WIRE_OK);
		len = mk_frame(f, v->bytes, v->len, h);
		snprintf(name, sizeof(name), "%s%s%s%s%s", v->name, h & F_VLAN ? "-vlan" : "",
			h & (F_IPOPT | F_IPOPT3) ? "-ipopt" : "", h & F_UCSUM ? "-udpcsum" : "",
			h & F_PAD ? "-pad" : "");
		emit(&g, true, name, &v->lim, f, len, ISTH_WIRE_OK);
	}
	for (i = 0; i < sizeof(bad_msgs) / sizeof(bad_msgs[0]); i++) {
		size_t len = mk_bad(buf, &bad_msgs[i]);

		emit(&g, false, bad_msgs[i].name, &valids[bad_msgs[i].base].lim, buf, len,
			bad_msgs[i].expect);
	}
	frame_faults(&g, &l8);

	printf("gen_corpus: %u seeds, %u with an unexpected verdict\n", g.n_seeds, g.n_wrong);
	if (stamp) {
		FILE *s = fopen(stamp, "w");

		if (s == NULL || fprintf(s, "%u\n", g.n_seeds) < 0 || fclose(s) != 0)
			die("cannot write the stamp file");
	}
	if (g.err)
		return 1;
	/* Writing mode warns only: a parser bug must fail a test, not the
	 * build that produces the corpus showing it. */
	return verify && g.n_wrong ? 1 : 0;
}
