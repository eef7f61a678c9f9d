/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes the captured WAN input of the net_pcap replay test
 * (tests/pcap/replay_test.sh): DATA of round 0 from the edges of islands
 * B (1), C (2) and D (3) to the edge of island A (0), built with lib/wire's
 * encoder, with two losses, a duplicate and a reordering:
 *
 *   B: chunk 0, chunk 0 again (duplicate), chunk 2, chunk 1 (reordered)
 *   C: chunk 0, chunk 2 (chunk 1 lost: a gap)
 *   D: chunk 0, chunk 1 (chunk 2 lost: a tail)
 *
 *   replay_gen OUT.pcap
 *
 * The test does not trust this file for the expected sums: it decodes the
 * capture itself and sums what it finds. Classic libpcap format, written by
 * hand (as tests/wireshark/pcap_gen.c), LINKTYPE_ETHERNET.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isth_wire.h"

#define JOB 7
#define CHUNKS 3
#define CHUNK_ELEMS 358 /* max_elems at MTU 1500 */
#define LAST_ELEMS 10 /* payload 2904 B = 726 elements: 358 + 358 + 10 */
#define FRAME_MAX 2048

static void
die(const char *what)
{
	fprintf(stderr, "replay_gen: %s\n", what);
	exit(1);
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Distinct per (sender, chunk, element), negative ones included. */
static int32_t
value(unsigned int s, unsigned int c, unsigned int i)
{
	return (int32_t)(s * 1000003u + c * 7919u + i * 31u) * (i % 3 == 0 ? -1 : 1);
}

static void
data(FILE *f, unsigned int s, unsigned int c, unsigned int *n)
{
	struct isth_wire_addr a = {
		.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01},
		.src_mac = {0x02, 0x00, 0x00, 0x00, 0xff, 0x01},
		.src_ip = 0x0a000001 + s, /* the [peer] address of island s */
		.dst_ip = 0x0a000001,
		.src_port = ISTH_WIRE_PORT,
		.dst_port = ISTH_WIRE_PORT,
	};
	unsigned int count = c == CHUNKS - 1 ? LAST_ELEMS : CHUNK_ELEMS, i;
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_DATA,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.flags = c == CHUNKS - 1 ? ISTH_WIRE_F_LAST : 0,
		.job = JOB,
		.round = 0,
		.chunk = c,
		.sender = (uint8_t)s,
		.count = (uint16_t)count,
		.seq = c,
		.bitmap = UINT64_C(1) << s,
	};
	uint8_t body[4 * CHUNK_ELEMS], f_[FRAME_MAX], rec[16];
	size_t hs = isth_wire_frame_hdr_size(&a);
	int m;

	for (i = 0; i < count; i++)
		put_le32(body + 4 * i, (uint32_t)value(s, c, i));
	m = isth_wire_build_msg(f_ + hs, sizeof(f_) - hs, &h, body, 4 * count, NULL);
	if (m < 0)
		die("isth_wire_build_msg");
	m = isth_wire_put_frame_hdr(f_, sizeof(f_), &a, (size_t)m);
	if (m < 0)
		die("isth_wire_put_frame_hdr");
	put_le32(rec, 1700000000);
	put_le32(rec + 4, 1000 * *n);
	put_le32(rec + 8, (uint32_t)m);
	put_le32(rec + 12, (uint32_t)m);
	if (fwrite(rec, 1, sizeof(rec), f) != sizeof(rec) ||
		fwrite(f_, 1, (size_t)m, f) != (size_t)m)
		die("cannot write a pcap record");
	(*n)++;
}

int
main(int argc, char **argv)
{
	uint8_t h[24];
	unsigned int n = 0;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.pcap\n", argv[0]);
		return 2;
	}
	f = fopen(argv[1], "wb");
	if (f == NULL)
		die(strerror(errno));
	put_le32(h, 0xa1b2c3d4);
	h[4] = 2, h[5] = 0, h[6] = 4, h[7] = 0;
	put_le32(h + 8, 0);
	put_le32(h + 12, 0);
	put_le32(h + 16, 65535);
	put_le32(h + 20, 1);
	if (fwrite(h, 1, sizeof(h), f) != sizeof(h))
		die("cannot write the pcap header");
	data(f, 1, 0, &n);
	data(f, 2, 0, &n);
	data(f, 3, 0, &n);
	data(f, 1, 0, &n); /* duplicate */
	data(f, 1, 2, &n); /* B reordered: 2 before 1 */
	data(f, 2, 2, &n); /* C's chunk 1 lost */
	data(f, 3, 1, &n); /* D's chunk 2 (its tail) lost */
	data(f, 1, 1, &n);
	if (fclose(f) != 0)
		die(strerror(errno));
	printf("replay_gen: %u frames\n", n);
	return 0;
}
