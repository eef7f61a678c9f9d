/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/wire: every packet type round-trips through build and parse, and every
 * malformed frame in the table is refused with its exact reason.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "isth_wire.h"

#define N_ISLANDS 9

static struct isth_wire_limits lim;

static void
setup(void)
{
	cr_assert_eq(isth_wire_limits_init(&lim, N_ISLANDS, 1500), 0);
}

TestSuite(wire, .init = setup);

/* Hand-written big-endian reads, independent of the library's helpers. */
static uint64_t
be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static const struct isth_wire_addr addr = {
	.dst_mac = {0x02, 0, 0, 0, 0, 0x02},
	.src_mac = {0x02, 0, 0, 0, 0, 0x01},
	.src_ip = 0x0a000001,
	.dst_ip = 0x0a000002,
	.src_port = 40000,
	.dst_port = ISTH_WIRE_PORT,
};

/* Build a frame around a message; returns its length. */
static size_t
frame(uint8_t *buf, size_t cap, const struct isth_wire_addr *a, const struct isth_wire_hdr *h,
	const void *body, size_t bsize)
{
	size_t hs = isth_wire_frame_hdr_size(a);
	int m, f;

	m = isth_wire_build_msg(buf + hs, cap - hs, h, body, bsize, NULL);
	cr_assert_gt(m, 0, "build_msg: %d", m);
	f = isth_wire_put_frame_hdr(buf, cap, a, (size_t)m);
	cr_assert_eq(f, (int)(hs + (size_t)m));
	return (size_t)f;
}

static struct isth_wire_hdr
data_hdr(uint8_t dtype, uint16_t count)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_DATA,
		.dtype = dtype,
		.flags = ISTH_WIRE_F_LAST,
		.sender = 3,
		.count = count,
		.job = 0xdeadbeef,
		.round = 0x01020304,
		.chunk = 77,
		.seq = 0x1122334455667788ull,
		.bitmap = 1u << 3,
	};
	return h;
}

Test(wire, header_layout_is_the_documented_one)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 2);
	uint8_t buf[64];

	cr_assert_eq(isth_wire_put_hdr(buf, sizeof(buf), &h), 40);
	/* doc/protocol.md byte diagram, offset by offset */
	cr_expect_eq(be(buf + 0, 2), 0x4953);
	cr_expect_eq(buf[2], 1);
	cr_expect_eq(buf[3], ISTH_WIRE_DATA);
	cr_expect_eq(be(buf + 4, 2), ISTH_WIRE_F_LAST);
	cr_expect_eq(buf[6], ISTH_WIRE_DTYPE_INT32);
	cr_expect_eq(buf[7], 0);
	cr_expect_eq(be(buf + 8, 4), 0xdeadbeef);
	cr_expect_eq(be(buf + 12, 4), 0x01020304);
	cr_expect_eq(be(buf + 16, 4), 77);
	cr_expect_eq(buf[20], 3);
	cr_expect_eq(buf[21], 0);
	cr_expect_eq(be(buf + 22, 2), 2);
	cr_expect_eq(be(buf + 24, 8), 0x1122334455667788ull);
	cr_expect_eq(be(buf + 32, 8), 1u << 3);
	cr_expect_eq(isth_wire_put_hdr(buf, 39, &h), -ENOSPC);
}

static void
check_hdr_eq(const struct isth_wire_hdr *a, const struct isth_wire_hdr *b)
{
	cr_expect_eq(a->type, b->type);
	cr_expect_eq(a->dtype, b->dtype);
	cr_expect_eq(a->flags, b->flags);
	cr_expect_eq(a->stream, b->stream);
	cr_expect_eq(a->trailer_len, b->trailer_len);
	cr_expect_eq(a->sender, b->sender);
	cr_expect_eq(a->count, b->count);
	cr_expect_eq(a->job, b->job);
	cr_expect_eq(a->round, b->round);
	cr_expect_eq(a->chunk, b->chunk);
	cr_expect_eq(a->seq, b->seq);
	cr_expect_eq(a->bitmap, b->bitmap);
}

static void
roundtrip_elems(uint8_t type, uint8_t dtype)
{
	unsigned int es = isth_wire_dtype_size(dtype);
	struct isth_wire_hdr h = data_hdr(dtype, lim.max_elems);
	uint8_t body[9000], buf[9200];
	struct isth_wire_pkt p;
	size_t n;

	if (type == ISTH_WIRE_AGG) {
		h.type = ISTH_WIRE_AGG;
		h.flags = ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT;
		h.bitmap = 0x1f6; /* islands 1,2,4..8 */
	}
	for (size_t i = 0; i < h.count * es; i++)
		body[i] = (uint8_t)(i * 7 + 1);
	n = frame(buf, sizeof(buf), &addr, &h, body, h.count * es);
	/* fp32 at max_elems fills a 1500-byte IP packet exactly */
	if (es == 4)
		cr_expect_eq(n - ISTH_WIRE_ETH_HDR_SIZE, 1500 - (1500 - 68) % 4);
	cr_assert_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_OK);
	check_hdr_eq(&p.hdr, &h);
	cr_expect_eq(p.payload_size, h.count * es);
	cr_expect(memcmp(p.payload, body, p.payload_size) == 0);
	cr_expect_null(p.trailer);
	cr_expect_eq(p.addr.src_ip, addr.src_ip);
	cr_expect_eq(p.addr.dst_ip, addr.dst_ip);
	cr_expect_eq(p.addr.src_port, addr.src_port);
	cr_expect_eq(p.addr.dst_port, addr.dst_port);
	cr_expect(memcmp(p.addr.dst_mac, addr.dst_mac, 6) == 0);
	cr_expect(memcmp(p.addr.src_mac, addr.src_mac, 6) == 0);
	cr_expect_eq(p.addr.ttl, 64);
}

Test(wire, roundtrip_data_fp32)
{
	roundtrip_elems(ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32);
}
Test(wire, roundtrip_data_bf16)
{
	roundtrip_elems(ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_BF16);
}
Test(wire, roundtrip_data_int32)
{
	roundtrip_elems(ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_INT32);
}
Test(wire, roundtrip_agg_fp32)
{
	roundtrip_elems(ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_FP32);
}
Test(wire, roundtrip_agg_bf16)
{
	roundtrip_elems(ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_BF16);
}
Test(wire, roundtrip_agg_int32)
{
	roundtrip_elems(ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_INT32);
}

static void
roundtrip_ranges(uint8_t type, uint16_t flags)
{
	struct isth_wire_range r[3] = {
		{5, 5},
		{10, 20},
		{0xfffffff0ull, 0xffffffffull},
	};
	struct isth_wire_hdr h = {
		.type = type,
		.flags = flags,
		.sender = 8,
		.count = 3,
		.job = 1,
		.round = 2,
		.seq = 0,
	};
	uint8_t body[64], buf[256];
	struct isth_wire_range got;
	struct isth_wire_pkt p;
	size_t n;

	cr_assert_eq(isth_wire_put_ranges(body, sizeof(body), r, 3), 48);
	cr_expect_eq(be(body + 16, 8), 10);
	cr_expect_eq(be(body + 24, 8), 20);
	n = frame(buf, sizeof(buf), &addr, &h, body, 48);
	cr_assert_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_OK);
	check_hdr_eq(&p.hdr, &h);
	for (unsigned int i = 0; i < 3; i++) {
		isth_wire_get_range(&p, i, &got);
		cr_expect_eq(got.first, r[i].first);
		cr_expect_eq(got.last, r[i].last);
	}
}

Test(wire, roundtrip_nack_seq)
{
	roundtrip_ranges(ISTH_WIRE_NACK, 0);
}
Test(wire, roundtrip_nack_chunks)
{
	roundtrip_ranges(ISTH_WIRE_NACK, ISTH_WIRE_F_CHUNKS);
}
Test(wire, roundtrip_gone_seq)
{
	roundtrip_ranges(ISTH_WIRE_GONE, 0);
}
Test(wire, roundtrip_gone_chunks)
{
	roundtrip_ranges(ISTH_WIRE_GONE, ISTH_WIRE_F_CHUNKS);
}

static const struct isth_wire_round round_body = {
	.start_ns = 1700000000123456789ull,
	.deadline_ns = 1700000000623456789ull,
	.period_ns = 565000000ull,
	.clique = 0x007, /* islands 0, 1, 2 */
	.n_chunks = 1024,
	.chunk_elems = 358,
};

static size_t
round_frame(uint8_t *buf, size_t cap, const struct isth_wire_round *rb, uint64_t expected)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_ROUND,
		.sender = 1,
		.job = 9,
		.round = 41,
		.bitmap = expected,
	};
	uint8_t body[ISTH_WIRE_ROUND_SIZE];

	cr_assert_eq(isth_wire_put_round(body, sizeof(body), rb), 40);
	return frame(buf, cap, &addr, &h, body, sizeof(body));
}

Test(wire, roundtrip_round)
{
	struct isth_wire_round got;
	uint8_t buf[256];
	struct isth_wire_pkt p;
	size_t n;

	n = round_frame(buf, sizeof(buf), &round_body, 0x005);
	cr_assert_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.round, 41);
	cr_expect_eq(p.hdr.bitmap, 0x005);
	isth_wire_get_round(&p, &got);
	cr_expect_eq(got.start_ns, round_body.start_ns);
	cr_expect_eq(got.deadline_ns, round_body.deadline_ns);
	cr_expect_eq(got.period_ns, round_body.period_ns);
	cr_expect_eq(got.clique, round_body.clique);
	cr_expect_eq(got.n_chunks, round_body.n_chunks);
	cr_expect_eq(got.chunk_elems, round_body.chunk_elems);
}

Test(wire, vlan_tag_and_padding)
{
	struct isth_wire_addr a = addr;
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 1);
	uint8_t buf[128] = {0};
	struct isth_wire_pkt p;
	uint32_t v = 42;
	size_t n;

	a.vlan = 100;
	n = frame(buf, sizeof(buf), &a, &h, &v, 4);
	cr_expect_eq(n, 14 + 4 + 20 + 8 + 40 + 4);
	cr_expect_eq(be(buf + 12, 2), 0x8100);
	/* Ethernet padding after the IP packet is ignored */
	cr_assert_eq(isth_wire_parse_frame(buf, n + 10, &lim, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.addr.vlan, 100);
	cr_expect_eq(p.payload_size, 4);
}

/* Insert @opt_len bytes of IPv4 options and fix IHL, lengths, checksum. */
static size_t
add_ip_options(uint8_t *buf, size_t n, size_t opt_len)
{
	uint8_t *ip = buf + 14;
	uint16_t tot;

	memmove(ip + 20 + opt_len, ip + 20, n - 34);
	memset(ip + 20, 1, opt_len); /* NOP options */
	ip[0] = 0x40 | (uint8_t)((20 + opt_len) / 4);
	tot = (uint16_t)(be(ip + 2, 2) + opt_len);
	ip[2] = tot >> 8;
	ip[3] = tot & 0xff;
	ip[10] = ip[11] = 0;
	uint16_t c = isth_wire_cksum(ip, 20 + opt_len);
	ip[10] = c >> 8;
	ip[11] = c & 0xff;
	return n + opt_len;
}

Test(wire, ipv4_options_are_skipped)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_FP32, 2);
	float v[2] = {1.5f, -2.25f};
	uint8_t buf[256];
	struct isth_wire_pkt p;
	size_t n;

	n = frame(buf, sizeof(buf), &addr, &h, v, 8);
	n = add_ip_options(buf, n, 12);
	cr_assert_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_OK);
	cr_expect(memcmp(p.payload, v, 8) == 0);
}

/* The UDP checksum, computed here from RFC 768 independently. */
static void
set_udp_csum(uint8_t *buf, size_t n)
{
	uint8_t *ip = buf + 14, *udp = buf + 34;
	size_t ulen = n - 34;
	uint32_t s = 0;

	udp[6] = udp[7] = 0;
	for (int i = 12; i < 20; i += 2)
		s += be(ip + i, 2);
	s += 17 + ulen;
	for (size_t i = 0; i + 1 < ulen; i += 2)
		s += be(udp + i, 2);
	if (ulen & 1)
		s += udp[ulen - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	s = ~s & 0xffff;
	if (s == 0)
		s = 0xffff;
	udp[6] = s >> 8;
	udp[7] = s & 0xff;
}

Test(wire, udp_checksum_checked_when_present)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 3);
	uint32_t v[3] = {1, 2, 3};
	uint8_t buf[256];
	struct isth_wire_pkt p;
	size_t n;

	n = frame(buf, sizeof(buf), &addr, &h, v, 12);
	set_udp_csum(buf, n);
	cr_expect_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_OK);
	buf[n - 1] ^= 0x40;
	cr_expect_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_E_UDP_CSUM);
	lim.check_udp_csum = false;
	cr_expect_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_OK);
}

/* RFC 1071 by the book: 16-bit big-endian words, a last odd byte as the
 * high half of a word, end-around carries; folded, not complemented. */
static uint16_t
ref_sum(const uint8_t *p, size_t len)
{
	uint64_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += be(p + i, 2);
	if (len & 1)
		s += (uint64_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Every kernel this CPU has against ref_sum(), over lengths 0-600 and
 * the sizes frames have, at every alignment of a cache line's first 8
 * bytes and at 61, on random bytes, all ones (the sums that fold to
 * 0xffff) and zeros. */
/* every kernel isth_wire_sum_use() knows, each tried where the CPU has it */
static const char *const kernel_names[] = {"scalar", "avx2", "avx512", "avx512vnni"};

Test(wire, sum_kernels_match_rfc1071)
{
	static const size_t big[] = {1024, 1064, 1066, 1472, 1500, 4096, 9000, 65535};
	static uint8_t buf[65535 + 64 + 7], ones[65535 + 64], zeros[65535 + 64];
	unsigned int seed = 12345, tried = 0;

	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	memset(ones, 0xff, sizeof(ones));
	for (unsigned int k = 0; k < sizeof(kernel_names) / sizeof(kernel_names[0]); k++) {
		int rc = isth_wire_sum_use(kernel_names[k]);

		if (rc == -ENOTSUP) {
			cr_log_info("sum kernel %s: not on this CPU", kernel_names[k]);
			continue;
		}
		cr_assert_eq(rc, 0);
		cr_assert_str_eq(isth_wire_sum_kernel(), kernel_names[k]);
		tried++;
		for (size_t len = 0; len < 600 + sizeof(big) / sizeof(big[0]); len++) {
			size_t n = len < 600 ? len : big[len - 600];

			for (size_t off = 0; off < 9; off++) {
				size_t o = off == 8 ? 61 : off;

				cr_assert_eq(isth_wire_sum(buf + o, n), ref_sum(buf + o, n),
					"%s: %zu bytes at +%zu: %#x, want %#x", kernel_names[k], n,
					o, isth_wire_sum(buf + o, n), ref_sum(buf + o, n));
			}
			cr_assert_eq(isth_wire_sum(ones + 3, n), ref_sum(ones + 3, n),
				"%s: ones, %zu", kernel_names[k], n);
			cr_assert_eq(
				isth_wire_sum(zeros, n), 0, "%s: zeros, %zu", kernel_names[k], n);
		}
	}
	cr_assert_geq(tried, 1);
	cr_assert_eq(isth_wire_sum_use("avx1024"), -EINVAL);
	cr_assert_eq(isth_wire_sum_use(NULL), 0);
}

/* Every kernel reads no byte past the end: the data ends at a page mapped
 * PROT_NONE, so an over-read (the vector kernels' masked tail, a word
 * loaded whole for an odd last byte) faults and crashes the test. Lengths
 * 0-700, around 4 KiB and to 65535, each ending flush at the guard. */
Test(wire, sum_kernels_read_nothing_past_the_end)
{
	static const size_t far[] = {4095, 4096, 4097, 9000, 65533, 65534, 65535};
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), data = (65535 + pg - 1) / pg * pg;
	uint8_t *map, *end;
	unsigned int tried = 0;

	map = mmap(NULL, data + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(map, MAP_FAILED);
	end = map + data;
	cr_assert_eq(mprotect(end, pg, PROT_NONE), 0);
	for (size_t i = 0; i < data; i++)
		map[i] = (uint8_t)(i * 131 + 7);
	for (unsigned int k = 0; k < sizeof(kernel_names) / sizeof(kernel_names[0]); k++) {
		int rc = isth_wire_sum_use(kernel_names[k]);

		if (rc == -ENOTSUP)
			continue;
		cr_assert_eq(rc, 0, "%s: %d", kernel_names[k], rc);
		cr_assert_str_eq(isth_wire_sum_kernel(), kernel_names[k]);
		tried++;
		for (size_t j = 0; j < 701 + sizeof(far) / sizeof(far[0]); j++) {
			size_t n = j < 701 ? j : far[j - 701];

			cr_assert_eq(isth_wire_sum(end - n, n), ref_sum(end - n, n),
				"%s: %zu bytes ending at the guard page", kernel_names[k], n);
		}
	}
	cr_assert_geq(tried, 1);
	cr_assert_eq(isth_wire_sum_use(NULL), 0);
	munmap(map, data + pg);
}

/* isth_wire_put_udp_cksum() against set_udp_csum(), RFC 768 written out
 * in this file: even and odd datagrams, with and without a VLAN tag; the
 * frames then verify, and a flipped bit does not. */
Test(wire, put_udp_cksum_is_rfc768)
{
	uint8_t v[301], buf[512], want[512];
	struct isth_wire_addr va = addr;
	struct isth_wire_pkt p;

	for (size_t i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(i * 7 + 1);
	va.vlan = 5;
	for (unsigned int c = 1; c <= 75; c += 37) {
		for (int tag = 0; tag < 2; tag++) {
			struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, (uint16_t)c);
			size_t n = frame(buf, sizeof(buf), tag ? &va : &addr, &h, v, 4 * c);

			cr_assert_gt(n, 0);
			if (!tag) {
				memcpy(want, buf, n);
				set_udp_csum(want, n);
			}
			cr_assert_eq(isth_wire_put_udp_cksum(buf, n), 0);
			if (!tag)
				cr_assert(
					memcmp(buf, want, n) == 0, "%u elements: not RFC 768's", c);
			cr_assert_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_OK);
			buf[n - 1 - c % 3] ^= 0x01;
			cr_assert_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_E_UDP_CSUM);
		}
	}
	/* an odd datagram: a NACK-free way to get one is to cut a byte off
	 * and fix the lengths; the checksum must still be RFC 768's */
	{
		struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 3);
		size_t n = frame(buf, sizeof(buf), &addr, &h, v, 12) + 1;

		buf[n - 1] = 0xa5;
		buf[14 + 3] = (uint8_t)(buf[14 + 3] + 1); /* IPv4 total length */
		buf[34 + 5] = (uint8_t)(buf[34 + 5] + 1); /* UDP length */
		memcpy(want, buf, n);
		set_udp_csum(want, n);
		cr_assert_eq(isth_wire_put_udp_cksum(buf, n), 0);
		cr_assert(memcmp(buf, want, n) == 0, "odd datagram");
	}
	cr_assert_eq(isth_wire_put_udp_cksum(NULL, 100), -EINVAL);
	cr_assert_eq(isth_wire_put_udp_cksum(buf, 20), -EINVAL);
	buf[12] = 0x86; /* not IPv4 */
	cr_assert_eq(isth_wire_put_udp_cksum(buf, 100), -EINVAL);
}

Test(wire, auth_trailer_is_delimited)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 2);
	uint8_t trailer[16], buf[256];
	uint32_t v[2] = {7, 8};
	struct isth_wire_pkt p;
	int m;

	memset(trailer, 0xab, sizeof(trailer));
	h.flags |= ISTH_WIRE_F_AUTH;
	h.trailer_len = 16;
	m = isth_wire_build_msg(buf, sizeof(buf), &h, v, 8, trailer);
	cr_assert_eq(m, 40 + 8 + 16);
	cr_assert_eq(isth_wire_parse_msg(buf, (size_t)m, &lim, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.payload_size, 8);
	cr_expect_eq(p.trailer, buf + 48);
	cr_expect_eq(p.hdr.trailer_len, 16);
}

Test(wire, builder_refuses_inconsistent_input)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_FP32, 4);
	uint8_t buf[128], body[16] = {0};

	cr_expect_eq(isth_wire_build_msg(buf, sizeof(buf), &h, body, 12, NULL), -EINVAL);
	cr_expect_eq(isth_wire_build_msg(buf, 50, &h, body, 16, NULL), -ENOSPC);
	h.trailer_len = 4;
	cr_expect_eq(isth_wire_build_msg(buf, sizeof(buf), &h, body, 16, NULL), -EINVAL);
	cr_expect_eq(isth_wire_limits_init(&lim, 0, 1500), -EINVAL);
	cr_expect_eq(isth_wire_limits_init(&lim, 65, 1500), -EINVAL);
	cr_expect_eq(isth_wire_limits_init(&lim, 9, 60), -EINVAL);
	cr_expect_eq(isth_wire_limits_init(&lim, 9, 9000), 0);
	cr_expect_eq(lim.max_elems, (9000 - 68) / 4);
}

/*
 * AGG streams (doc/protocol.md): the stream field is flag bits 12..15,
 * read here with hand-written big-endian reads; limits that know n
 * streams take 0..n-1 and refuse n as `stream`; stream 0 is the
 * single-stream wire byte for byte.
 */
Test(wire, stream_field_in_flag_bits_12_to_15)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 4);
	struct isth_wire_range r = {100, 164};
	uint32_t v[4] = {1, 2, 3, 4};
	uint8_t buf[256], zero[256], body[16];
	struct isth_wire_limits l4;
	struct isth_wire_pkt p;
	int m, m0;

	cr_assert_eq(isth_wire_limits_init(&l4, N_ISLANDS, 1500), 0);
	cr_expect_eq(l4.n_streams, 1);
	l4.n_streams = 4;
	h.type = ISTH_WIRE_AGG;
	h.bitmap = 0x0e;
	h.flags = ISTH_WIRE_F_LAST | ISTH_WIRE_F_RESENT;
	m0 = isth_wire_build_msg(zero, sizeof(zero), &h, v, 16, NULL);
	h.stream = 3;
	m = isth_wire_build_msg(buf, sizeof(buf), &h, v, 16, NULL);
	cr_assert_eq(m, 56);
	cr_assert_eq(m0, 56);
	cr_expect_eq(be(buf + 4, 2), 0x3000u | ISTH_WIRE_F_LAST | ISTH_WIRE_F_RESENT);
	cr_expect_eq(isth_wire_get_stream(buf), 3);
	/* stream 0: the bytes of a header without the field */
	cr_expect_eq(be(zero + 4, 2), ISTH_WIRE_F_LAST | ISTH_WIRE_F_RESENT);
	cr_expect_eq(memcmp(buf, zero, 4), 0);
	cr_expect_eq(memcmp(buf + 6, zero + 6, 50), 0);
	cr_assert_eq(isth_wire_parse_msg(buf, (size_t)m, &l4, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.stream, 3);
	cr_expect_eq(p.hdr.flags, ISTH_WIRE_F_LAST | ISTH_WIRE_F_RESENT);
	/* one stream known (the default): refused by reason */
	cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &lim, &p), ISTH_WIRE_E_STREAM);
	/* n_streams 0 (limits not from limits_init) counts as 1 */
	l4.n_streams = 0;
	cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &l4, &p), ISTH_WIRE_E_STREAM);
	l4.n_streams = 3;
	cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &l4, &p), ISTH_WIRE_E_STREAM);
	l4.n_streams = 4;

	/* NACK and GONE by seq name the stream; by chunk they may not */
	cr_assert_eq(isth_wire_put_ranges(body, sizeof(body), &r, 1), 16);
	for (uint8_t t = ISTH_WIRE_NACK; t <= ISTH_WIRE_GONE; t++) {
		struct isth_wire_hdr n = {
			.type = t, .sender = 2, .count = 1, .job = 1, .round = 1, .stream = 2};

		m = isth_wire_build_msg(buf, sizeof(buf), &n, body, 16, NULL);
		cr_assert_eq(m, 56);
		cr_expect_eq(be(buf + 4, 2), 0x2000u);
		cr_assert_eq(isth_wire_parse_msg(buf, (size_t)m, &l4, &p), ISTH_WIRE_OK);
		cr_expect_eq(p.hdr.stream, 2);
		cr_expect_eq(p.hdr.flags, 0);
		n.flags = ISTH_WIRE_F_CHUNKS;
		m = isth_wire_build_msg(buf, sizeof(buf), &n, body, 16, NULL);
		cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &l4, &p), ISTH_WIRE_E_FLAGS);
		/* an echo (a NACK by chunk's copy, its event's tag in the
		 * chunk field): on a chunk NACK only, never on a GONE */
		n.stream = 0;
		n.chunk = 7;
		n.flags = ISTH_WIRE_F_CHUNKS | ISTH_WIRE_F_ECHO;
		m = isth_wire_build_msg(buf, sizeof(buf), &n, body, 16, NULL);
		cr_assert_eq(m, 56);
		if (t == ISTH_WIRE_NACK) {
			cr_assert_eq(isth_wire_parse_msg(buf, (size_t)m, &l4, &p), ISTH_WIRE_OK);
			cr_expect_eq(p.hdr.flags, ISTH_WIRE_F_CHUNKS | ISTH_WIRE_F_ECHO);
			cr_expect_eq(p.hdr.chunk, 7);
		} else {
			cr_expect_eq(
				isth_wire_parse_msg(buf, (size_t)m, &l4, &p), ISTH_WIRE_E_FLAGS);
		}
	}
	/* the builder refuses what the field cannot hold */
	h.stream = ISTH_WIRE_MAX_STREAMS;
	cr_expect_eq(isth_wire_build_msg(buf, sizeof(buf), &h, v, 16, NULL), -EINVAL);
	cr_expect_eq(isth_wire_put_hdr(buf, sizeof(buf), &h), -EINVAL);
	h.stream = ISTH_WIRE_MAX_STREAMS - 1;
	l4.n_streams = ISTH_WIRE_MAX_STREAMS;
	m = isth_wire_build_msg(buf, sizeof(buf), &h, v, 16, NULL);
	cr_assert_eq(isth_wire_parse_msg(buf, (size_t)m, &l4, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.stream, 15);
}

Test(wire, reason_names_are_complete_and_unique)
{
	for (int i = 0; i < ISTH_WIRE_REASON_MAX; i++) {
		const char *a = isth_wire_reason_name(i);

		cr_assert_not_null(a, "reason %d has no name", i);
		cr_expect_str_neq(a, "unknown");
		cr_expect_str_neq(isth_wire_reason_str(i), "unknown reason");
		for (int j = 0; j < i; j++)
			cr_expect_str_neq(a, isth_wire_reason_name(j));
	}
	cr_expect_str_eq(isth_wire_reason_name(ISTH_WIRE_REASON_MAX), "unknown");
}

/*
 * The malformed-frame table. Each case starts from a valid DATA int32 frame
 * of 4 elements (14 + 20 + 8 + 40 + 16 = 98 bytes), applies one mutation,
 * and kernel_names the reason the parser must give.
 */
enum base_kind { BASE_DATA, BASE_AGG, BASE_NACK, BASE_ROUND };

/* No pointers in parameters: Criterion runs each case in a fresh process
 * image where addresses of the parent's static data need not be valid. */
struct bad_case {
	char name[24];
	enum base_kind base;
	int off; /* byte offset to overwrite, -1: none */
	int width; /* 1, 2, 4 or 8 bytes, big-endian */
	uint64_t val;
	int trunc; /* >= 0: cut the frame to this length */
	int fix_ip_csum; /* recompute IPv4 checksum after mutation */
	enum isth_wire_reason want;
};

#define M 42 /* offset of the isthmus header in the frame */

static struct bad_case bad_cases[] = {
	{"empty", BASE_DATA, -1, 0, 0, 0, 0, ISTH_WIRE_E_ETH_TRUNC},
	{"eth_13", BASE_DATA, -1, 0, 0, 13, 0, ISTH_WIRE_E_ETH_TRUNC},
	{"vlan_cut", BASE_DATA, 12, 2, 0x8100, 16, 0, ISTH_WIRE_E_VLAN_TRUNC},
	{"arp", BASE_DATA, 12, 2, 0x0806, -1, 0, ISTH_WIRE_E_ETHERTYPE},
	{"ipv6", BASE_DATA, 12, 2, 0x86dd, -1, 0, ISTH_WIRE_E_ETHERTYPE},
	{"ip_cut", BASE_DATA, -1, 0, 0, 30, 0, ISTH_WIRE_E_IP_TRUNC},
	{"ip_v6", BASE_DATA, 14, 1, 0x65, -1, 1, ISTH_WIRE_E_IP_VERSION},
	{"ihl_4", BASE_DATA, 14, 1, 0x44, -1, 0, ISTH_WIRE_E_IP_IHL},
	{"ihl_past", BASE_DATA, 14, 1, 0x4f, 50, 0, ISTH_WIRE_E_IP_IHL},
	{"totlen_small", BASE_DATA, 16, 2, 19, -1, 1, ISTH_WIRE_E_IP_TOTLEN},
	{"totlen_past", BASE_DATA, 16, 2, 85, -1, 1, ISTH_WIRE_E_IP_TOTLEN},
	{"ip_csum", BASE_DATA, 24, 2, 0x1234, -1, 0, ISTH_WIRE_E_IP_CSUM},
	{"more_frags", BASE_DATA, 20, 2, 0x2000, -1, 1, ISTH_WIRE_E_IP_FRAG},
	{"frag_off", BASE_DATA, 20, 2, 0x0010, -1, 1, ISTH_WIRE_E_IP_FRAG},
	{"tcp", BASE_DATA, 23, 1, 6, -1, 1, ISTH_WIRE_E_IP_PROTO},
	{"udp_cut", BASE_DATA, 16, 2, 27, 41, 1, ISTH_WIRE_E_UDP_TRUNC},
	{"udp_len_short", BASE_DATA, 38, 2, 60, -1, 0, ISTH_WIRE_E_UDP_LEN},
	{"udp_len_long", BASE_DATA, 38, 2, 70, -1, 0, ISTH_WIRE_E_UDP_LEN},
	{"udp_port", BASE_DATA, 36, 2, 4791, -1, 0, ISTH_WIRE_E_UDP_PORT},
	{"udp_csum", BASE_DATA, 40, 2, 0x0001, -1, 0, ISTH_WIRE_E_UDP_CSUM},
	{"magic", BASE_DATA, M + 0, 2, 0x4954, -1, 0, ISTH_WIRE_E_MAGIC},
	{"version_0", BASE_DATA, M + 2, 1, 0, -1, 0, ISTH_WIRE_E_VERSION},
	{"version_2", BASE_DATA, M + 2, 1, 2, -1, 0, ISTH_WIRE_E_VERSION},
	{"type_0", BASE_DATA, M + 3, 1, 0, -1, 0, ISTH_WIRE_E_TYPE},
	{"type_7", BASE_DATA, M + 3, 1, 7, -1, 0, ISTH_WIRE_E_TYPE},
	{"flag_unknown", BASE_DATA, M + 4, 2, 0x0100, -1, 0, ISTH_WIRE_E_FLAGS},
	{"data_partial", BASE_DATA, M + 4, 2, ISTH_WIRE_F_PARTIAL, -1, 0, ISTH_WIRE_E_FLAGS},
	{"nack_last", BASE_NACK, M + 4, 2, ISTH_WIRE_F_LAST, -1, 0, ISTH_WIRE_E_FLAGS},
	/* an echo copies a NACK by chunk only (this NACK is by seq) */
	{"nack_seq_echo", BASE_NACK, M + 4, 2, ISTH_WIRE_F_ECHO, -1, 0, ISTH_WIRE_E_FLAGS},
	{"data_echo", BASE_DATA, M + 4, 2, ISTH_WIRE_F_ECHO, -1, 0, ISTH_WIRE_E_FLAGS},
	/* the stream field (flag bits 12..15); these limits know 1 stream */
	{"data_stream_1", BASE_DATA, M + 4, 2, 0x1004, -1, 0, ISTH_WIRE_E_FLAGS},
	{"agg_stream_1", BASE_AGG, M + 4, 2, 0x1004, -1, 0, ISTH_WIRE_E_STREAM},
	{"agg_stream_15", BASE_AGG, M + 4, 2, 0xf000, -1, 0, ISTH_WIRE_E_STREAM},
	{"nack_stream_1", BASE_NACK, M + 4, 2, 0x1000, -1, 0, ISTH_WIRE_E_STREAM},
	{"nack_chunks_stream", BASE_NACK, M + 4, 2, 0x1008, -1, 0, ISTH_WIRE_E_FLAGS},
	{"round_stream_1", BASE_ROUND, M + 4, 2, 0x1000, -1, 0, ISTH_WIRE_E_STREAM},
	{"dtype_0", BASE_DATA, M + 6, 1, 0, -1, 0, ISTH_WIRE_E_DTYPE},
	{"dtype_4", BASE_DATA, M + 6, 1, 4, -1, 0, ISTH_WIRE_E_DTYPE},
	{"nack_dtype", BASE_NACK, M + 6, 1, ISTH_WIRE_DTYPE_FP32, -1, 0, ISTH_WIRE_E_DTYPE},
	{"island_9", BASE_DATA, M + 20, 1, N_ISLANDS, -1, 0, ISTH_WIRE_E_ISLAND},
	{"island_255", BASE_DATA, M + 20, 1, 255, -1, 0, ISTH_WIRE_E_ISLAND},
	{"reserved", BASE_DATA, M + 21, 1, 1, -1, 0, ISTH_WIRE_E_RESERVED},
	{"trailer_no_flag", BASE_DATA, M + 7, 1, 4, -1, 0, ISTH_WIRE_E_TRAILER},
	{"auth_no_trailer", BASE_DATA, M + 4, 2, ISTH_WIRE_F_AUTH, -1, 0, ISTH_WIRE_E_TRAILER},
	{"count_0", BASE_DATA, M + 22, 2, 0, -1, 0, ISTH_WIRE_E_COUNT},
	{"count_huge", BASE_DATA, M + 22, 2, 60000, -1, 0, ISTH_WIRE_E_COUNT},
	{"count_5", BASE_DATA, M + 22, 2, 5, -1, 0, ISTH_WIRE_E_LENGTH},
	{"count_3", BASE_DATA, M + 22, 2, 3, -1, 0, ISTH_WIRE_E_LENGTH},
	{"data_bf16_len", BASE_DATA, M + 6, 1, ISTH_WIRE_DTYPE_BF16, -1, 0, ISTH_WIRE_E_LENGTH},
	{"data_two_bits", BASE_DATA, M + 32, 8, 0x0c, -1, 0, ISTH_WIRE_E_BITMAP},
	{"data_other_bit", BASE_DATA, M + 32, 8, 0x10, -1, 0, ISTH_WIRE_E_BITMAP},
	{"agg_bitmap_0", BASE_AGG, M + 32, 8, 0, -1, 0, ISTH_WIRE_E_BITMAP},
	{"agg_bitmap_far", BASE_AGG, M + 32, 8, 1ull << 9, -1, 0, ISTH_WIRE_E_BITMAP},
	{"nack_count_0", BASE_NACK, M + 22, 2, 0, -1, 0, ISTH_WIRE_E_COUNT},
	{"nack_count_big", BASE_NACK, M + 22, 2, 1000, -1, 0, ISTH_WIRE_E_COUNT},
	{"nack_len", BASE_NACK, M + 22, 2, 1, -1, 0, ISTH_WIRE_E_LENGTH},
	{"nack_inverted", BASE_NACK, M + 40, 8, 100, -1, 0, ISTH_WIRE_E_RANGE},
	{"nack_chunk_big", BASE_NACK, M + 4, 2, ISTH_WIRE_F_CHUNKS, -1, 0, ISTH_WIRE_E_RANGE},
	{"round_count", BASE_ROUND, M + 22, 2, 1, -1, 0, ISTH_WIRE_E_COUNT},
	{"round_deadline", BASE_ROUND, M + 40 + 8, 8, 1, -1, 0, ISTH_WIRE_E_ROUND},
	{"round_period_0", BASE_ROUND, M + 40 + 16, 8, 0, -1, 0, ISTH_WIRE_E_ROUND},
	{"round_not_member", BASE_ROUND, M + 40 + 24, 8, 0x05, -1, 0, ISTH_WIRE_E_BITMAP},
	{"round_expect_out", BASE_ROUND, M + 32, 8, 0x09, -1, 0, ISTH_WIRE_E_BITMAP},
	{"round_cut", BASE_ROUND, 16, 2, 20 + 8 + 40 + 39, 14 + 20 + 8 + 40 + 39, 1,
		ISTH_WIRE_E_UDP_LEN},
};

ParameterizedTestParameters(wire, malformed)
{
	return cr_make_param_array(
		struct bad_case, bad_cases, sizeof(bad_cases) / sizeof(bad_cases[0]));
}

static size_t
base_frame(enum base_kind k, uint8_t *buf, size_t cap)
{
	switch (k) {
	case BASE_DATA: {
		struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 4);
		uint32_t v[4] = {1, 2, 3, 4};

		return frame(buf, cap, &addr, &h, v, 16);
	}
	case BASE_AGG: {
		struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 4);
		uint32_t v[4] = {1, 2, 3, 4};

		h.type = ISTH_WIRE_AGG;
		h.bitmap = 0x0e;
		return frame(buf, cap, &addr, &h, v, 16);
	}
	case BASE_NACK: {
		/* range 0: 5..7; range 1: 1..(2^32) (too big for chunk ids) */
		struct isth_wire_range r[2] = {{5, 7}, {1, 1ull << 32}};
		struct isth_wire_hdr h = {
			.type = ISTH_WIRE_NACK, .sender = 2, .count = 2, .job = 1, .round = 1};
		uint8_t body[32];

		isth_wire_put_ranges(body, sizeof(body), r, 2);
		return frame(buf, cap, &addr, &h, body, 32);
	}
	case BASE_ROUND:
		/* sender 1, clique {0,1,2}, expected {0,2} */
		return round_frame(buf, cap, &round_body, 0x005);
	}
	return 0;
}

static void
put_be(uint8_t *p, int width, uint64_t v)
{
	for (int i = width - 1; i >= 0; i--) {
		p[i] = v & 0xff;
		v >>= 8;
	}
}

ParameterizedTest(struct bad_case *c, wire, malformed, .init = setup)
{
	uint8_t buf[512];
	struct isth_wire_pkt p;
	size_t n;

	memset(buf, 0, sizeof(buf));
	cr_log_info("case %s", c->name);
	n = base_frame(c->base, buf, sizeof(buf));
	cr_assert_eq(isth_wire_parse_frame(buf, n, &lim, &p), ISTH_WIRE_OK,
		"%s: base frame invalid", c->name);
	if (c->off >= 0)
		put_be(buf + c->off, c->width, c->val);
	if (c->fix_ip_csum) {
		buf[24] = buf[25] = 0;
		put_be(buf + 24, 2, isth_wire_cksum(buf + 14, 20));
	}
	if (c->trunc >= 0)
		n = (size_t)c->trunc;
	cr_expect_eq(isth_wire_parse_frame(buf, n, &lim, &p), c->want, "%s: got %s, want %s",
		c->name, isth_wire_reason_name(isth_wire_parse_frame(buf, n, &lim, &p)),
		isth_wire_reason_name(c->want));
}

/* Every strict prefix of every valid frame is refused, never accepted. */
Test(wire, every_prefix_is_refused)
{
	uint8_t buf[512];
	struct isth_wire_pkt p;

	for (int k = BASE_DATA; k <= BASE_ROUND; k++) {
		size_t n = base_frame(k, buf, sizeof(buf));

		for (size_t cut = 0; cut < n; cut++)
			cr_expect_neq(isth_wire_parse_frame(buf, cut, &lim, &p), ISTH_WIRE_OK,
				"kind %d prefix %zu", k, cut);
	}
}

/* A message shorter than its fixed header: every cut below 40 bytes. */
Test(wire, short_message_is_hdr_trunc)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 1);
	uint8_t buf[64];
	struct isth_wire_pkt p;
	uint32_t v = 5;

	cr_assert_eq(isth_wire_build_msg(buf, sizeof(buf), &h, &v, 4, NULL), 44);
	for (size_t cut = 0; cut < 40; cut++)
		cr_expect_eq(isth_wire_parse_msg(buf, cut, &lim, &p), ISTH_WIRE_E_HDR_TRUNC,
			"cut %zu", cut);
	/* header complete, body missing: a length problem, not truncation */
	cr_expect_eq(isth_wire_parse_msg(buf, 40, &lim, &p), ISTH_WIRE_E_LENGTH);
	cr_expect_eq(isth_wire_parse_msg(buf, 44, &lim, &p), ISTH_WIRE_OK);
}

Test(wire, patch_helpers_edit_only_their_field)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 1);
	uint8_t a[44], b[44];
	uint32_t v = 9;
	struct isth_wire_pkt p;

	h.type = ISTH_WIRE_AGG;
	h.bitmap = 0x6;
	cr_assert_eq(isth_wire_build_msg(a, sizeof(a), &h, &v, 4, NULL), 44);
	memcpy(b, a, sizeof(a));
	isth_wire_set_seq(b, 0x0102030405060708ull);
	isth_wire_or_flags(b, ISTH_WIRE_F_RESENT);
	cr_expect_eq(isth_wire_get_seq(b), 0x0102030405060708ull);
	cr_assert_eq(isth_wire_parse_msg(b, sizeof(b), &lim, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.seq, 0x0102030405060708ull);
	cr_expect_eq(p.hdr.flags, ISTH_WIRE_F_LAST | ISTH_WIRE_F_RESENT);
	for (size_t i = 0; i < sizeof(a); i++)
		if (i != 5 && (i < 24 || i >= 32))
			cr_expect_eq(a[i], b[i], "byte %zu changed", i);
}

/* Round and chunk accessors: what the parser reads, and only their bytes
 * (12..15 and 16..19 in doc/protocol.md's diagram) change when set. */
Test(wire, round_chunk_accessors_match_the_parser)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 1);
	uint8_t a[44], b[44];
	uint32_t v = 9;
	struct isth_wire_pkt p;

	cr_assert_eq(isth_wire_build_msg(a, sizeof(a), &h, &v, 4, NULL), 44);
	cr_expect_eq(isth_wire_get_hdr_round(a), 0x01020304u);
	cr_expect_eq(isth_wire_get_hdr_chunk(a), 77u);
	cr_expect_eq(isth_wire_get_flags(a), ISTH_WIRE_F_LAST);
	memcpy(b, a, sizeof(a));
	isth_wire_set_hdr_round(b, 0xfedcba98u);
	isth_wire_set_hdr_chunk(b, 0x00a0b0c0u);
	cr_assert_eq(isth_wire_parse_msg(b, sizeof(b), &lim, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.round, 0xfedcba98u);
	cr_expect_eq(p.hdr.chunk, 0x00a0b0c0u);
	cr_expect_eq(isth_wire_get_hdr_round(b), 0xfedcba98u);
	cr_expect_eq(isth_wire_get_hdr_chunk(b), 0x00a0b0c0u);
	for (size_t i = 0; i < sizeof(a); i++)
		if (i < 12 || i >= 20)
			cr_expect_eq(a[i], b[i], "byte %zu changed", i);
}

/* Regressions found by the fuzz harnesses' checks (tests/fuzz). */
Test(wire, bare_message_has_zero_addresses)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 1);
	uint8_t buf[64];
	struct isth_wire_pkt p;
	uint32_t v = 1;

	memset(&p, 0xa5, sizeof(p));
	cr_assert_eq(isth_wire_build_msg(buf, sizeof(buf), &h, &v, 4, NULL), 44);
	cr_assert_eq(isth_wire_parse_msg(buf, 44, &lim, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.addr.src_ip, 0);
	cr_expect_eq(p.addr.vlan, 0);
	cr_expect_eq(p.addr.dst_port, 0);
}

Test(wire, limits_beyond_64_islands_refuse_senders_above_63)
{
	struct isth_wire_limits big = lim;
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 1);
	uint8_t buf[64];
	struct isth_wire_pkt p;
	uint32_t v = 1;

	big.n_islands = 100;
	h.sender = 70;
	h.bitmap = 0;
	cr_assert_eq(isth_wire_build_msg(buf, sizeof(buf), &h, &v, 4, NULL), 44);
	cr_expect_eq(isth_wire_parse_msg(buf, 44, &big, &p), ISTH_WIRE_E_ISLAND);
}

Test(wire, message_larger_than_a_datagram_is_refused)
{
	static uint8_t buf[70000];
	struct isth_wire_limits big = lim;
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 0);
	struct isth_wire_pkt p;

	big.max_elems = 20000;
	h.count = 20000;
	isth_wire_put_hdr(buf, sizeof(buf), &h);
	cr_expect_eq(isth_wire_parse_msg(
			     buf, 40 + 80000 > sizeof(buf) ? sizeof(buf) : 40 + 80000, &big, &p),
		ISTH_WIRE_E_LENGTH);
}

/* ---- version 2 (doc/protocol.md, "Authenticated format (v2)") ---------- */

static struct isth_wire_limits lim2;

static void
setup2(void)
{
	cr_assert_eq(isth_wire_limits_init_auth(&lim2, N_ISLANDS, 1500, true), 0);
}

/* 1500 - 20 (IPv4) - 8 (UDP) - 40 (header) - 16 (tag) = 1416 bytes of
 * body: 354 fp32 elements, 88 ranges of 16 bytes. */
Test(wire, auth_limits_leave_room_for_the_tag)
{
	struct isth_wire_limits l;

	cr_assert_eq(isth_wire_limits_init_auth(&l, 9, 1500, true), 0);
	cr_expect(l.auth);
	cr_expect_eq(l.max_elems, 354);
	cr_expect_eq(l.max_ranges, 88);
	cr_assert_eq(isth_wire_limits_init_auth(&l, 9, 1500, false), 0);
	cr_expect_not(l.auth);
	cr_expect_eq(l.max_elems, 358);
	cr_expect_eq(l.max_ranges, 89);
	cr_assert_eq(isth_wire_limits_init(&l, 9, 1500), 0);
	cr_expect_not(l.auth);
	cr_expect_eq(l.max_elems, 358);
	cr_assert_eq(isth_wire_limits_init_auth(&l, 9, 9000, true), 0);
	cr_expect_eq(l.max_elems, (9000 - 68 - 16) / 4);
	/* the smallest MTU still carries one element and its tag */
	cr_expect_eq(isth_wire_limits_init_auth(&l, 9, 20 + 8 + 40 + 16 + 4, true), 0);
	cr_expect_eq(l.max_elems, 1);
	cr_expect_eq(isth_wire_limits_init_auth(&l, 9, 20 + 8 + 40 + 16 + 3, true), -EINVAL);
	cr_expect_eq(isth_wire_limits_init_auth(&l, 9, 20 + 8 + 40 + 16 + 3, false), 0);
	cr_expect_eq(isth_wire_limits_init_auth(&l, 0, 1500, true), -EINVAL);
}

static struct isth_wire_hdr
data_hdr_v2(uint16_t count, uint8_t epoch)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, count);

	h.version = 2;
	h.epoch = epoch;
	return h;
}

Test(wire, v2_header_layout_is_the_documented_one, .init = setup2)
{
	struct isth_wire_hdr h = data_hdr_v2(2, 0xa7);
	uint8_t buf[128], tag[16];
	uint32_t v[2] = {7, 8};
	struct isth_wire_pkt p;

	/* flags given without AUTH and trailer_len 0: the builder sets both */
	cr_assert_eq(isth_wire_put_hdr(buf, sizeof(buf), &h), 40);
	cr_expect_eq(buf[2], 2);
	cr_expect_eq(be(buf + 4, 2), ISTH_WIRE_F_LAST | ISTH_WIRE_F_AUTH);
	cr_expect_eq(buf[7], 16);
	cr_expect_eq(buf[20], 3);
	cr_expect_eq(buf[21], 0xa7);
	cr_expect_eq(be(buf + 22, 2), 2);

	for (int i = 0; i < 16; i++)
		tag[i] = (uint8_t)(0xc0 + i);
	cr_assert_eq(isth_wire_build_msg(buf, sizeof(buf), &h, v, 8, tag), 40 + 8 + 16);
	cr_expect_eq(memcmp(buf + 48, tag, 16), 0);
	cr_assert_eq(isth_wire_parse_msg(buf, 64, &lim2, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.version, 2);
	cr_expect_eq(p.hdr.epoch, 0xa7);
	cr_expect_eq(p.hdr.flags, ISTH_WIRE_F_LAST | ISTH_WIRE_F_AUTH);
	cr_expect_eq(p.hdr.trailer_len, 16);
	cr_expect_eq(p.payload_size, 8);
	cr_expect_eq(p.trailer, buf + 48);
	cr_expect_eq(p.msg_size, 64);
	/* a version 1 link refuses it by version, before anything else */
	cr_expect_eq(isth_wire_parse_msg(buf, 64, &lim, &p), ISTH_WIRE_E_VERSION);

	/* without a tag: header and body only, ready for isth_auth_seal() */
	memset(buf, 0xee, sizeof(buf));
	cr_expect_eq(isth_wire_build_msg(buf, sizeof(buf), &h, v, 8, NULL), 48);
	cr_expect_eq(buf[7], 16);
	cr_expect_eq(buf[48], 0xee);
	/* ... but the tag must still fit */
	cr_expect_eq(isth_wire_build_msg(buf, 63, &h, v, 8, NULL), -ENOSPC);
}

/* A version 1 message parsed on a version 1 link reports version 1 and
 * epoch 0, and re-encodes to the same bytes. */
Test(wire, v1_parse_reports_version_1)
{
	struct isth_wire_hdr h = data_hdr(ISTH_WIRE_DTYPE_INT32, 1);
	uint8_t a[44], b[44];
	struct isth_wire_pkt p;
	uint32_t v = 3;

	cr_assert_eq(isth_wire_build_msg(a, sizeof(a), &h, &v, 4, NULL), 44);
	cr_assert_eq(isth_wire_parse_msg(a, 44, &lim, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.version, 1);
	cr_expect_eq(p.hdr.epoch, 0);
	cr_assert_eq(isth_wire_build_msg(b, sizeof(b), &p.hdr, p.payload, 4, NULL), 44);
	cr_expect_eq(memcmp(a, b, 44), 0);
	/* epoch is ignored for version 1: byte 21 stays reserved */
	h.epoch = 9;
	cr_assert_eq(isth_wire_build_msg(b, sizeof(b), &h, &v, 4, NULL), 44);
	cr_expect_eq(b[21], 0);
}

/* Every type is accepted in version 2 at the limits of the MTU. */
Test(wire, v2_every_type_at_the_limits, .init = setup2)
{
	static uint8_t body[1500], buf[1600];
	struct isth_wire_range r[88];
	struct isth_wire_hdr h = data_hdr_v2(354, 1);
	struct isth_wire_pkt p;
	uint8_t tag[16] = {1};
	int m;

	memset(body, 0, sizeof(body));
	m = isth_wire_build_msg(buf, sizeof(buf), &h, body, 354 * 4, tag);
	cr_assert_eq(m, 1500 - 28, "a full v2 DATA is exactly the MTU");
	cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &lim2, &p), ISTH_WIRE_OK);
	h.count = 355;
	m = isth_wire_build_msg(buf, sizeof(buf), &h, body, 355 * 4, tag);
	cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &lim2, &p), ISTH_WIRE_E_COUNT);

	for (int i = 0; i < 88; i++)
		r[i] = (struct isth_wire_range){(uint64_t)i * 10, (uint64_t)i * 10 + 3};
	cr_assert_eq(isth_wire_put_ranges(body, sizeof(body), r, 88), 88 * 16);
	h = (struct isth_wire_hdr){.version = 2,
		.epoch = 4,
		.type = ISTH_WIRE_NACK,
		.sender = 2,
		.count = 88,
		.job = 1,
		.round = 1,
		.seq = 99};
	m = isth_wire_build_msg(buf, sizeof(buf), &h, body, 88 * 16, tag);
	cr_assert_eq(m, 40 + 88 * 16 + 16);
	cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &lim2, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.epoch, 4);
	h.type = ISTH_WIRE_GONE;
	m = isth_wire_build_msg(buf, sizeof(buf), &h, body, 88 * 16, tag);
	cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &lim2, &p), ISTH_WIRE_OK);
	h.count = 89;
	cr_assert_eq(isth_wire_put_ranges(body, sizeof(body), r, 88), 88 * 16);
	memcpy(body + 88 * 16, body, 16);
	m = isth_wire_build_msg(buf, sizeof(buf), &h, body, 89 * 16, tag);
	cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &lim2, &p), ISTH_WIRE_E_COUNT);

	/* ROUND: sender 1, clique {0,1,2}, expected {0,2} */
	cr_assert_eq(isth_wire_put_round(body, sizeof(body), &round_body), 40);
	h = (struct isth_wire_hdr){.version = 2,
		.type = ISTH_WIRE_ROUND,
		.sender = 1,
		.job = 1,
		.round = 1,
		.seq = 5,
		.bitmap = 0x005};
	m = isth_wire_build_msg(buf, sizeof(buf), &h, body, 40, tag);
	cr_assert_eq(m, 40 + 40 + 16);
	cr_expect_eq(isth_wire_parse_msg(buf, (size_t)m, &lim2, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.type, ISTH_WIRE_ROUND);
}

/*
 * The version 2 refusals. Each case starts from a valid version 2 DATA
 * int32 message of 4 elements with its tag (40 + 16 + 16 = 72 bytes) and
 * a link that speaks version 2 (lim2), or version 1 (v1_link).
 */
struct bad_v2_case {
	char name[24];
	int v1_link; /* parse with the version 1 limits */
	int off; /* byte offset to overwrite, -1: none */
	int width;
	uint64_t val;
	int trunc; /* >= 0: cut the message to this length */
	enum isth_wire_reason want;
};

static struct bad_v2_case bad_v2_cases[] = {
	{"valid", 0, -1, 0, 0, -1, ISTH_WIRE_OK},
	{"epoch_255_is_wire_ok", 0, 21, 1, 255, -1, ISTH_WIRE_OK},
	{"v1_on_auth_link", 0, 2, 1, 1, -1, ISTH_WIRE_E_VERSION},
	{"version_3", 0, 2, 1, 3, -1, ISTH_WIRE_E_VERSION},
	{"version_0", 0, 2, 1, 0, -1, ISTH_WIRE_E_VERSION},
	{"v2_on_v1_link", 1, -1, 0, 0, -1, ISTH_WIRE_E_VERSION},
	{"no_auth_flag", 0, 4, 2, ISTH_WIRE_F_LAST, -1, ISTH_WIRE_E_TRAILER},
	{"no_auth_no_trailer", 0, 4, 2, ISTH_WIRE_F_LAST, 56, ISTH_WIRE_E_TRAILER},
	{"trailer_8", 0, 7, 1, 8, -1, ISTH_WIRE_E_TRAILER},
	{"trailer_32", 0, 7, 1, 32, -1, ISTH_WIRE_E_TRAILER},
	{"trailer_0_auth", 0, 7, 1, 0, -1, ISTH_WIRE_E_TRAILER},
	{"tag_cut", 0, -1, 0, 0, 64, ISTH_WIRE_E_LENGTH},
	{"tag_only", 0, -1, 0, 0, 56, ISTH_WIRE_E_LENGTH},
	{"count_355", 0, 22, 2, 355, -1, ISTH_WIRE_E_COUNT},
	{"flag_unknown", 0, 4, 2, 0x0110, -1, ISTH_WIRE_E_FLAGS},
	{"data_stream_2", 0, 4, 2, 0x2014, -1, ISTH_WIRE_E_FLAGS},
	{"island_9", 0, 20, 1, N_ISLANDS, -1, ISTH_WIRE_E_ISLAND},
};

ParameterizedTestParameters(wire, malformed_v2)
{
	return cr_make_param_array(
		struct bad_v2_case, bad_v2_cases, sizeof(bad_v2_cases) / sizeof(bad_v2_cases[0]));
}

ParameterizedTest(struct bad_v2_case *c, wire, malformed_v2, .init = setup)
{
	struct isth_wire_hdr h = data_hdr_v2(4, 1);
	uint32_t v[4] = {1, 2, 3, 4};
	uint8_t buf[128], tag[16];
	struct isth_wire_limits l;
	struct isth_wire_pkt p;
	size_t n;
	int m;

	cr_assert_eq(isth_wire_limits_init_auth(&l, N_ISLANDS, 1500, !c->v1_link), 0);
	memset(tag, 0x5a, sizeof(tag));
	m = isth_wire_build_msg(buf, sizeof(buf), &h, v, 16, tag);
	cr_assert_eq(m, 72);
	n = (size_t)m;
	if (c->off >= 0)
		put_be(buf + c->off, c->width, c->val);
	if (c->trunc >= 0)
		n = (size_t)c->trunc;
	cr_expect_eq(isth_wire_parse_msg(buf, n, &l, &p), c->want, "%s: got %s, want %s", c->name,
		isth_wire_reason_name(isth_wire_parse_msg(buf, n, &l, &p)),
		isth_wire_reason_name(c->want));
}
