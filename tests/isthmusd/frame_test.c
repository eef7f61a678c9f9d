/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames to the island (app/isthmusd/island.c): isthd_frame_to_island()
 * copies a template built once at set-up and writes only the lengths and
 * the IPv4 checksum. Every frame it builds must be byte for byte what
 * lib/wire's isth_wire_put_frame_hdr() (the general builder, computing the
 * checksum from scratch) builds for the same addresses and message size,
 * for every message size from 0 to the largest an IPv4 datagram holds and
 * for addresses that make the checksum's carries wrap; one byte more is
 * refused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <rte_mbuf.h>

#include "isthd.h"
#include "isth_test_isthd.h"

#define HEADROOM 128u
#define MAX_MSG (65535u - ISTH_WIRE_IPV4_MIN_HDR_SIZE - ISTH_WIRE_UDP_HDR_SIZE)

/* A single-segment mbuf over a heap buffer: prepend only moves data_off
 * and the lengths, no pool needed. */
static void
mbuf_over(struct rte_mbuf *m, uint8_t *buf, uint32_t msg)
{
	memset(m, 0, sizeof(*m));
	m->buf_addr = buf;
	m->buf_len = (uint16_t)RTE_MIN(HEADROOM + msg, (uint32_t)UINT16_MAX);
	m->data_off = HEADROOM;
	m->data_len = (uint16_t)msg;
	m->pkt_len = msg;
	m->nb_segs = 1;
	m->refcnt = 1;
}

static void
check(struct isthd *d, uint32_t msg, uint8_t *buf)
{
	struct isth_wire_addr a;
	uint8_t want[ISTHD_ISLAND_HDR + 4];
	struct rte_mbuf m;

	memset(&a, 0, sizeof(a));
	memcpy(a.dst_mac, d->cfg.island_mac, 6);
	memcpy(a.src_mac, d->access_mac, 6);
	a.src_ip = d->cfg.access.ip;
	a.dst_ip = d->cfg.island_ip;
	a.src_port = d->cfg.udp_port;
	a.dst_port = d->cfg.island_port;
	/* the reference writes its headers before a message it is told
	 * the size of; cap covers headers + message */
	cr_assert_eq(isth_wire_put_frame_hdr(want, ISTHD_ISLAND_HDR + (size_t)msg, &a, msg),
		(int)(ISTHD_ISLAND_HDR + msg));
	mbuf_over(&m, buf, msg);
	cr_assert_eq(isthd_frame_to_island(d, &m), 0, "message of %u bytes", msg);
	cr_assert_eq(m.data_off, HEADROOM - ISTHD_ISLAND_HDR);
	cr_assert_eq(m.pkt_len, msg + ISTHD_ISLAND_HDR);
	cr_assert_arr_eq(buf + HEADROOM - ISTHD_ISLAND_HDR, want, ISTHD_ISLAND_HDR,
		"message of %u bytes: headers differ from isth_wire_put_frame_hdr()'s", msg);
	/* and the checksum verifies (RFC 1071: the header sums to 0) */
	cr_assert_eq(isth_wire_cksum(buf + HEADROOM - ISTHD_ISLAND_HDR + ISTH_WIRE_ETH_HDR_SIZE,
			     ISTH_WIRE_IPV4_MIN_HDR_SIZE),
		0);
}

Test(isthmusd_frame, template_frames_equal_the_general_builder)
{
	/* addresses whose sums carry (0xff..), the testbed's, and zeros */
	static const uint32_t ips[][2] = {{0x0a0a0001, 0x0a0a0002}, {0xffffffff, 0xfffffffe},
		{0, 0}, {0xc0a80101, 0x7f000001}};
	static const uint16_t ports[][2] = {{4791, 4791}, {0xffff, 0xfffe}, {1, 0}};
	struct isthd *d = isth_test_isthd_new();
	uint8_t *buf = malloc(HEADROOM + MAX_MSG);

	cr_assert_not_null(d);
	cr_assert_not_null(buf);
	for (unsigned int i = 0; i < RTE_DIM(ips); i++)
		for (unsigned int p = 0; p < RTE_DIM(ports); p++) {
			memcpy(d->cfg.island_mac, "\x02\x00\x00\x00\x00\x02", 6);
			memcpy(d->access_mac,
				i & 1 ? "\xff\xff\xff\xff\xff\xff" : "\x02\x01\x02\x03\x04\x05", 6);
			d->cfg.access.ip = ips[i][0];
			d->cfg.island_ip = ips[i][1];
			d->cfg.udp_port = ports[p][0];
			d->cfg.island_port = ports[p][1];
			isthd_frame_template(d);
			/* every size: the checksum's end-around carry
			 * depends on the total length */
			for (uint32_t s = 0; s <= MAX_MSG; s++)
				check(d, s, buf);
		}
	free(buf);
	free(d);
}

Test(isthmusd_frame, a_message_no_ipv4_datagram_holds_is_refused)
{
	struct isthd *d = isth_test_isthd_new();
	uint8_t *buf = malloc(HEADROOM + MAX_MSG + 1);
	struct rte_mbuf m;

	cr_assert_not_null(d);
	cr_assert_not_null(buf);
	isthd_frame_template(d);
	mbuf_over(&m, buf, MAX_MSG + 1);
	cr_assert_eq(isthd_frame_to_island(d, &m), -EINVAL);
	cr_assert_eq(m.data_off, HEADROOM, "a refused frame is left as it was");
	free(buf);
	free(d);
}

/* [access] island_hosts: host k of K owns [floor(k*C/K), floor((k+1)*C/K)),
 * checked against the ranges enumerated host by host, for every C up to
 * 300 and every K up to 16 (at most C): each chunk has exactly the host
 * whose range holds it, and the ranges tile [0, C) in host order. */
Test(isthmusd_frame, a_chunks_host_is_the_one_whose_range_holds_it)
{
	struct isthd *d = isth_test_isthd_new();

	cr_assert_not_null(d);
	for (uint32_t c = 1; c <= 300; c++)
		for (uint32_t k = 1; k <= 16 && k <= c; k++) {
			uint32_t next = 0;

			d->cfg.n_island_hosts = k;
			d->shape.n_chunks = c;
			for (uint32_t h = 0; h < k; h++) {
				uint64_t lo = (uint64_t)h * c / k, hi = (uint64_t)(h + 1) * c / k;
				uint32_t first, n;

				isthd_host_chunks(d, h, &first, &n);
				cr_assert_eq(first, lo, "C %u K %u host %u", c, k, h);
				cr_assert_eq(n, hi - lo, "C %u K %u host %u", c, k, h);
				cr_assert_eq(
					first, next, "C %u K %u: host %u does not follow", c, k, h);
				cr_assert_geq(n, 1, "C %u K %u: host %u owns nothing", c, k, h);
				next = first + n;
				for (uint64_t id = lo; id < hi; id++)
					cr_assert_eq(isthd_chunk_host(d, (uint32_t)id), h,
						"C %u K %u chunk %lu", c, k, (unsigned long)id);
			}
			cr_assert_eq(next, c, "C %u K %u: ranges end at %u", c, k, next);
		}
	free(d);
}

/* An AGG is framed to the host owning its chunk, a ROUND (or anything
 * else) to host 0; each host's frame carries its own MAC and address. */
Test(isthmusd_frame, an_agg_goes_to_its_chunks_host)
{
	static const uint8_t want_host[10] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 2}; /* C 10, K 3 */
	struct isthd *d = isth_test_isthd_new();
	uint8_t *buf = malloc(HEADROOM + ISTH_WIRE_HDR_SIZE);
	struct rte_mbuf m;

	cr_assert_not_null(d);
	cr_assert_not_null(buf);
	d->cfg.n_island_hosts = 3;
	d->shape.n_chunks = 10;
	for (unsigned int h = 0; h < 3; h++) {
		d->cfg.island_hosts[h].ip = 0x0a0a0002u + h;
		memcpy(d->cfg.island_hosts[h].mac, "\x02\x00\x00\x00\x00\x00", 6);
		d->cfg.island_hosts[h].mac[5] = (uint8_t)(0x10 + h);
	}
	isthd_frame_template(d);
	for (uint32_t c = 0; c <= 10; c++) {
		struct isth_wire_hdr hdr = {
			.type = c < 10 ? ISTH_WIRE_AGG : ISTH_WIRE_ROUND, .chunk = c < 10 ? c : 0};
		unsigned int h = c < 10 ? want_host[c] : 0;
		const uint8_t *f = buf + HEADROOM - ISTHD_ISLAND_HDR;

		mbuf_over(&m, buf, ISTH_WIRE_HDR_SIZE);
		isth_wire_put_hdr(buf + HEADROOM, ISTH_WIRE_HDR_SIZE, &hdr);
		cr_assert_eq(isthd_frame_to_island(d, &m), 0);
		cr_assert_eq(
			f[5], 0x10 + h, "chunk %u: to MAC ..:%02x, want host %u's", c, f[5], h);
		cr_assert_eq(f[ISTH_WIRE_ETH_HDR_SIZE + 19], 2 + h, "chunk %u: to 10.10.0.%u", c,
			f[ISTH_WIRE_ETH_HDR_SIZE + 19]);
	}
	free(buf);
	free(d);
}
