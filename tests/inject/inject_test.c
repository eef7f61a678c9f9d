/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-inject: the frame builder makes messages that lib/wire's parser
 * accepts with the fields asked for (each attack kind), frames carry the
 * spoofed addresses, the pcap reader finds the isthmus datagrams of a
 * capture and nothing else, sealing gives v2 messages lib/auth verifies,
 * and the binary sends what it says on a local UDP socket.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <criterion/criterion.h>

#include "inject.h"
#include "isth_auth.h"
#include "isth_wire.h"

extern char **environ;

static struct isth_wire_limits lim;

static void
setup(void)
{
	cr_assert_eq(isth_wire_limits_init(&lim, 9, 1500), 0);
}

TestSuite(inject, .init = setup);

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static struct isth_wire_pkt
parse(const uint8_t *m, int len)
{
	struct isth_wire_pkt p;
	enum isth_wire_reason r;

	cr_assert_gt(len, 0, "build: %d", len);
	r = isth_wire_parse_msg(m, (size_t)len, &lim, &p);
	cr_assert_eq(r, ISTH_WIRE_OK, "parse: %s", isth_wire_reason_name(r));
	return p;
}

Test(inject, data_spoofed_island)
{
	struct inject_spec s = {.kind = INJ_DATA,
		.job = 7,
		.round = 12,
		.chunk = 40,
		.chunk_step = 1,
		.sender = 5,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.count = 358,
		.seq = 1000,
		.seq_step = 1,
		.value = -3};
	uint8_t m[2048];

	for (uint64_t i = 0; i < 3; i++) {
		struct isth_wire_pkt p = parse(m, inject_build(&s, i, m, sizeof(m)));

		cr_assert_eq(p.hdr.type, ISTH_WIRE_DATA);
		cr_assert_eq(p.hdr.job, 7);
		cr_assert_eq(p.hdr.round, 12);
		cr_assert_eq(p.hdr.chunk, 40 + i);
		cr_assert_eq(p.hdr.sender, 5);
		cr_assert_eq(p.hdr.seq, 1000 + i);
		cr_assert_eq(p.hdr.bitmap, 1u << 5);
		cr_assert_eq(p.hdr.count, 358);
		cr_assert_eq(p.payload_size, 358 * 4);
		for (unsigned int k = 0; k < 358; k++)
			cr_assert_eq((int32_t)le32(p.payload + 4 * k), -3);
	}
}

Test(inject, fp32_and_bf16_values)
{
	struct inject_spec s = {.kind = INJ_AGG,
		.sender = 2,
		.count = 4,
		.bitmap = 0x7,
		.value = 3,
		.dtype = ISTH_WIRE_DTYPE_FP32};
	uint8_t m[256];
	struct isth_wire_pkt p = parse(m, inject_build(&s, 0, m, sizeof(m)));

	cr_assert_eq(p.hdr.type, ISTH_WIRE_AGG);
	cr_assert_eq(p.hdr.bitmap, 0x7);
	cr_assert_eq(le32(p.payload + 12), 0x40400000u); /* 3.0f */
	s.dtype = ISTH_WIRE_DTYPE_BF16;
	p = parse(m, inject_build(&s, 0, m, sizeof(m)));
	cr_assert_eq(p.payload_size, 8);
	cr_assert_eq(p.payload[6], 0x40); /* bf16 3.0 = 0x4040, LE */
	cr_assert_eq(p.payload[7], 0x40);
}

Test(inject, tiny_data_fresh_chunk_ids)
{
	struct inject_spec s = {.kind = INJ_TINY,
		.chunk = 1000000,
		.sender = 3,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.count = 358,
		.seq = 1,
		.seq_step = 1,
		.value = 9};
	uint8_t m[256];

	for (uint64_t i = 0; i < 100; i++) {
		struct isth_wire_pkt p = parse(m, inject_build(&s, i, m, sizeof(m)));

		cr_assert_eq(p.hdr.count, 1);
		cr_assert_eq(p.hdr.chunk, 1000000 + i);
		cr_assert_eq(p.payload_size, 4);
	}
}

Test(inject, nack_whole_round_by_chunk)
{
	struct inject_spec s = {.kind = INJ_NACK,
		.sender = 1,
		.round = 5,
		.flags = ISTH_WIRE_F_CHUNKS,
		.bitmap = 1u << 4,
		.n_ranges = 2,
		.ranges = {{0, UINT32_MAX}, {7, 7}}};
	uint8_t m[2048];
	struct isth_wire_range r;
	struct isth_wire_pkt p = parse(m, inject_build(&s, 0, m, sizeof(m)));

	cr_assert_eq(p.hdr.type, ISTH_WIRE_NACK);
	cr_assert_eq(p.hdr.flags, ISTH_WIRE_F_CHUNKS);
	cr_assert_eq(p.hdr.count, 2);
	cr_assert_eq(p.hdr.bitmap, 1u << 4);
	isth_wire_get_range(&p, 0, &r);
	cr_assert_eq(r.first, 0);
	cr_assert_eq(r.last, UINT32_MAX);
	isth_wire_get_range(&p, 1, &r);
	cr_assert_eq(r.first, 7);
	/* GONE by sequence, 89 ranges: the most a 1500-byte MTU carries */
	s.kind = INJ_GONE;
	s.flags = 0;
	s.n_ranges = 89;
	for (unsigned int k = 0; k < 89; k++)
		s.ranges[k] = (struct isth_wire_range){k * 10, k * 10 + 5};
	p = parse(m, inject_build(&s, 0, m, sizeof(m)));
	cr_assert_eq(p.hdr.type, ISTH_WIRE_GONE);
	isth_wire_get_range(&p, 88, &r);
	cr_assert_eq(r.last, 885);
}

Test(inject, round_body)
{
	struct inject_spec s = {.kind = INJ_ROUND,
		.sender = 0,
		.round = 3,
		.bitmap = 0x6,
		.rb = {.start_ns = 100,
			.deadline_ns = 200,
			.period_ns = 50,
			.clique = 0x7,
			.n_chunks = 91,
			.chunk_elems = 358}};
	uint8_t m[256];
	struct isth_wire_round rb;
	struct isth_wire_pkt p = parse(m, inject_build(&s, 0, m, sizeof(m)));

	cr_assert_eq(p.hdr.type, ISTH_WIRE_ROUND);
	isth_wire_get_round(&p, &rb);
	cr_assert_eq(rb.deadline_ns, 200);
	cr_assert_eq(rb.clique, 0x7);
	cr_assert_eq(rb.n_chunks, 91);
	cr_assert_eq(rb.chunk_elems, 358);
}

Test(inject, bad_specs_refused)
{
	struct inject_spec s = {.kind = INJ_NACK, .n_ranges = 0};
	uint8_t m[2048];

	cr_assert_eq(inject_build(&s, 0, m, sizeof(m)), -EINVAL);
	s.n_ranges = 90;
	cr_assert_eq(inject_build(&s, 0, m, sizeof(m)), -EINVAL);
	s = (struct inject_spec){.kind = INJ_DATA, .dtype = ISTH_WIRE_DTYPE_INT32, .count = 0};
	cr_assert_eq(inject_build(&s, 0, m, sizeof(m)), -EINVAL);
	s.count = 358;
	cr_assert_eq(inject_build(&s, 0, m, 1000), -ENOSPC);
	cr_assert_eq(inject_build(&s, 0, m, 20), -ENOSPC);
	s.dtype = 0;
	cr_assert_eq(inject_build(&s, 0, m, sizeof(m)), -EINVAL);
	s.dtype = ISTH_WIRE_DTYPE_INT32;
	s.sender = 64;
	cr_assert_eq(inject_build(&s, 0, m, sizeof(m)), -EINVAL);
	cr_assert_eq(inject_kind_parse("tiny"), INJ_TINY);
	cr_assert_eq(inject_kind_parse("bogus"), -1);
	cr_assert_str_eq(inject_kind_name(INJ_GONE), "gone");
}

Test(inject, frame_carries_spoofed_source)
{
	struct inject_spec s = {.kind = INJ_DATA,
		.sender = 5,
		.count = 10,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.value = 1};
	uint8_t f[2048];
	int m = inject_build(&s, 0, f + ISTH_INJECT_L2, sizeof(f) - ISTH_INJECT_L2);
	int n = inject_frame(f, sizeof(f), 0x0a000105, 9471, 0x0a000001, 9471, (size_t)m);
	struct isth_wire_pkt p;

	cr_assert_eq(n, (int)ISTH_INJECT_L2 + m);
	cr_assert_eq(isth_wire_parse_frame(f, (size_t)n, &lim, &p), ISTH_WIRE_OK);
	cr_assert_eq(p.addr.src_ip, 0x0a000105);
	cr_assert_eq(p.addr.dst_ip, 0x0a000001);
	cr_assert_eq(p.hdr.sender, 5);
}

Test(inject, sealed_messages_verify)
{
	static const char kf[] =
		"job 7\nepoch 2 round 0 key "
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
	struct inject_spec s = {.kind = INJ_DATA,
		.job = 7,
		.sender = 5,
		.count = 358,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.seq = 1,
		.seq_step = 1};
	char path[64];
	struct isth_auth_conf c = {.key_file = path, .job = 7, .n_islands = 9};
	struct isth_auth *a;
	struct isth_auth_engine *e;
	uint8_t m[2048];
	int fd, n;

	snprintf(path, sizeof(path), "/tmp/isth-inject-test-%d-XXXXXX", getpid());
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, kf, sizeof(kf) - 1), (ssize_t)sizeof(kf) - 1);
	close(fd);
	cr_assert_eq(isth_auth_create(&c, &a, NULL, 0), 0);
	unlink(path);
	cr_assert_eq(isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &e), 0);
	n = inject_build(&s, 0, m, sizeof(m));
	n = isth_auth_seal(e, ISTH_AUTH_WAN, 5, m, (size_t)n, sizeof(m));
	cr_assert_eq(n, 40 + 358 * 4 + 16);
	cr_assert_eq(m[2], 2);
	cr_assert_eq(m[21], 2);
	cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_WAN, 5, m, (size_t)n), ISTH_AUTH_OK);
	cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_WAN, 4, m, (size_t)n), ISTH_AUTH_E_TAG);
	isth_auth_engine_free(e);
	isth_auth_free(a);
}

/* ---- pcap reader ---------------------------------------------------------- */

static void
put32le(FILE *f, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};

	cr_assert_eq(fwrite(b, 1, 4, f), 4);
}

static void
put_rec(FILE *f, const uint8_t *frame, uint32_t len)
{
	put32le(f, 1);
	put32le(f, 0);
	put32le(f, len);
	put32le(f, len);
	cr_assert_eq(fwrite(frame, 1, len, f), len);
}

Test(inject, pcap_finds_isthmus_datagrams)
{
	char path[64], err[256] = "";
	uint8_t f[2048], out[2048], msg1[2048], arp[60] = {0};
	struct inject_spec s = {.kind = INJ_TINY,
		.chunk = 77,
		.sender = 2,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.value = 5,
		.seq = 9,
		.seq_step = 1};
	struct inject_pcap pc;
	int fd, m1, n, eof;
	FILE *fp;

	snprintf(path, sizeof(path), "/tmp/isth-inject-test-%d-XXXXXX", getpid());
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	fp = fdopen(fd, "wb");
	put32le(fp, 0xa1b2c3d4u);
	put32le(fp, 0x00040002u); /* version 2.4 */
	put32le(fp, 0);
	put32le(fp, 0);
	put32le(fp, 65535);
	put32le(fp, 1); /* Ethernet */
	/* 1: an ARP frame (skipped) */
	arp[12] = 0x08, arp[13] = 0x06;
	put_rec(fp, arp, sizeof(arp));
	/* 2: isthmus message 0 to port 9471 */
	m1 = inject_build(&s, 0, f + ISTH_INJECT_L2, sizeof(f) - ISTH_INJECT_L2);
	memcpy(msg1, f + ISTH_INJECT_L2, (size_t)m1);
	n = inject_frame(f, sizeof(f), 0x0a000002, 40000, 0x0a000001, 9471, (size_t)m1);
	put_rec(fp, f, (uint32_t)n);
	/* 3: the same message to port 53 (skipped) */
	n = inject_frame(f, sizeof(f), 0x0a000002, 40000, 0x0a000001, 53, (size_t)m1);
	put_rec(fp, f, (uint32_t)n);
	/* 4: message 1, truncated record header after it */
	m1 = inject_build(&s, 1, f + ISTH_INJECT_L2, sizeof(f) - ISTH_INJECT_L2);
	n = inject_frame(f, sizeof(f), 0x0a000002, 40000, 0x0a000001, 9471, (size_t)m1);
	put_rec(fp, f, (uint32_t)n);
	fclose(fp);

	cr_assert_eq(inject_pcap_open(&pc, path, err, sizeof(err)), 0, "%s", err);
	n = inject_pcap_next_udp(&pc, 9471, out, sizeof(out), &eof, err, sizeof(err));
	cr_assert_eq(n, m1);
	cr_assert_eq(eof, 0);
	cr_assert(memcmp(out, msg1, (size_t)n) == 0);
	cr_assert_eq(pc.records, 2);
	n = inject_pcap_next_udp(&pc, 9471, out, sizeof(out), &eof, err, sizeof(err));
	cr_assert_eq(n, m1);
	cr_assert_eq(parse(out, n).hdr.chunk, 78);
	cr_assert_eq(pc.records, 4);
	n = inject_pcap_next_udp(&pc, 9471, out, sizeof(out), &eof, err, sizeof(err));
	cr_assert_eq(n, 0);
	cr_assert_eq(eof, 1);
	inject_pcap_close(&pc);

	/* Any port: the port-53 copy is found too. */
	cr_assert_eq(inject_pcap_open(&pc, path, err, sizeof(err)), 0, "%s", err);
	for (int k = 0; k < 3; k++) {
		n = inject_pcap_next_udp(&pc, 0, out, sizeof(out), &eof, err, sizeof(err));
		cr_assert_eq(n, m1);
	}
	inject_pcap_close(&pc);

	/* A truncated file: the last record loses bytes. */
	cr_assert_eq(truncate(path, 24 + 16 + 60 + 16 + 10), 0);
	cr_assert_eq(inject_pcap_open(&pc, path, err, sizeof(err)), 0);
	n = inject_pcap_next_udp(&pc, 9471, out, sizeof(out), &eof, err, sizeof(err));
	cr_assert_eq(n, -EINVAL);
	cr_assert_not_null(strstr(err, "record 2: truncated"), "%s", err);
	inject_pcap_close(&pc);

	/* Not a pcap. */
	fp = fopen(path, "wb");
	fputs("0123456789abcdef0123456789abcdef", fp);
	fclose(fp);
	cr_assert_eq(inject_pcap_open(&pc, path, err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, "not a pcap file"), "%s", err);
	unlink(path);
	cr_assert_eq(inject_pcap_open(&pc, path, err, sizeof(err)), -ENOENT);
}

/* ---- the binary -------------------------------------------------------------- */

static int
run(char *const argv[])
{
	pid_t pid;
	int st;

	cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, argv, environ), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

Test(inject, binary_sends_what_it_says)
{
	const char *bin = getenv("ISTHMUS_INJECT");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	struct timeval tv = {.tv_sec = 5};
	char to[64];
	int fd;

	cr_assert_not_null(bin, "ISTHMUS_INJECT not set");
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	snprintf(to, sizeof(to), "127.0.0.1:%u", ntohs(a.sin_port));
	{
		char *argv[] = {(char *)bin, "--to", to, "--count", "5", "--chunk", "100",
			"--sender", "4", "--job", "3", "--round", "2", "tiny", NULL};

		cr_assert_eq(run(argv), 0);
	}
	/* The datagrams are queued on our socket before the child exits. */
	for (int k = 0; k < 5; k++) {
		uint8_t buf[2048];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct isth_wire_pkt p;

		cr_assert_gt(n, 0, "datagram %d: %s", k, strerror(errno));
		p = parse(buf, (int)n);
		cr_assert_eq(p.hdr.chunk, 100u + (unsigned int)k);
		cr_assert_eq(p.hdr.sender, 4);
		cr_assert_eq(p.hdr.job, 3);
		cr_assert_eq(p.hdr.round, 2);
	}
	close(fd);
	{
		char *argv[] = {(char *)bin, "--to", to, "nack", NULL};
		char *argv2[] = {(char *)bin, "--to", "nowhere", "data", NULL};
		char *argv3[] = {(char *)bin, "--to", to, "bogus", NULL};
		char *argv4[] = {(char *)bin, "--to", to, "--key-file", "/x", "data", NULL};

		cr_assert_eq(run(argv), 2); /* nack without --range */
		cr_assert_eq(run(argv2), 2);
		cr_assert_eq(run(argv3), 2);
		cr_assert_eq(run(argv4), 2); /* --key-file without --dir/--owner */
	}
}

/* --from: a raw socket with a spoofed source address (needs CAP_NET_RAW;
 * skipped otherwise). The receiver sees the forged address. */
Test(inject, binary_spoofs_source_address)
{
	const char *bin = getenv("ISTHMUS_INJECT");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in from;
	socklen_t al = sizeof(a), fl = sizeof(from);
	struct timeval tv = {.tv_sec = 5};
	uint8_t buf[2048];
	char to[64];
	ssize_t n;
	int fd, probe;

	cr_assert_not_null(bin, "ISTHMUS_INJECT not set");
	probe = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (probe < 0)
		cr_skip_test("no CAP_NET_RAW: %s", strerror(errno));
	close(probe);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	snprintf(to, sizeof(to), "127.0.0.1:%u", ntohs(a.sin_port));
	{
		char *argv[] = {(char *)bin, "--to", to, "--from", "127.0.0.9:4242", "--sender",
			"5", "--elems", "10", "data", NULL};

		cr_assert_eq(run(argv), 0);
	}
	n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
	cr_assert_gt(n, 0, "%s", strerror(errno));
	cr_assert_eq(ntohl(from.sin_addr.s_addr), 0x7f000009);
	cr_assert_eq(ntohs(from.sin_port), 4242);
	cr_assert_eq(parse(buf, (int)n).hdr.sender, 5);
	close(fd);
}

/* A local UDP socket to send to; its "127.0.0.1:PORT" in @to. */
static int
listen_local(char *to, size_t size)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	snprintf(to, size, "127.0.0.1:%u", ntohs(a.sin_port));
	return fd;
}

/* Numbers are decimal: a leading zero is not octal ("010" is ten, not
 * eight); hex only after --bitmap's explicit "0x" and in the round body's
 * clique. The expected values are written out by hand. */
Test(inject, binary_reads_010_as_ten)
{
	const char *bin = getenv("ISTHMUS_INJECT");
	struct isth_wire_round rb;
	struct isth_wire_range r;
	struct isth_wire_pkt p;
	uint8_t buf[2048];
	char to[64];
	ssize_t n;
	int fd;

	cr_assert_not_null(bin, "ISTHMUS_INJECT not set");
	fd = listen_local(to, sizeof(to));
	{
		char *argv[] = {(char *)bin, "--to", to, "--job", "010", "--round", "010",
			"--chunk", "010", "--sender", "08", "--seq", "010", "--elems", "010",
			"--value", "010", "--bitmap", "0256", "data", NULL};

		cr_assert_eq(run(argv), 0);
	}
	n = recv(fd, buf, sizeof(buf), 0);
	p = parse(buf, (int)n);
	cr_assert_eq(p.hdr.job, 10);
	cr_assert_eq(p.hdr.round, 10);
	cr_assert_eq(p.hdr.chunk, 10);
	cr_assert_eq(p.hdr.sender, 8); /* "08": not a bad octal number */
	cr_assert_eq(p.hdr.seq, 10);
	cr_assert_eq(p.hdr.count, 10);
	cr_assert_eq(p.hdr.bitmap, 256); /* the sender's own bit, 1 << 8 */
	cr_assert_eq(le32(p.payload), 10);
	{
		char *argv[] = {(char *)bin, "--to", to, "--sender", "1", "--elems", "4", "--value",
			"-010", "--bitmap", "0x10", "agg", NULL};

		cr_assert_eq(run(argv), 0);
	}
	n = recv(fd, buf, sizeof(buf), 0);
	p = parse(buf, (int)n);
	cr_assert_eq(p.hdr.bitmap, 16);
	cr_assert_eq((int32_t)le32(p.payload), -10);
	{
		char *argv[] = {(char *)bin, "--to", to, "--flags", "chunks", "--range", "010-012",
			"nack", NULL};

		cr_assert_eq(run(argv), 0);
	}
	n = recv(fd, buf, sizeof(buf), 0);
	p = parse(buf, (int)n);
	isth_wire_get_range(&p, 0, &r);
	cr_assert_eq(r.first, 10);
	cr_assert_eq(r.last, 12);
	{
		char *argv[] = {(char *)bin, "--to", to, "--bitmap", "0x10", "--round-body",
			"010,020,030,11,011,012", "round", NULL};

		cr_assert_eq(run(argv), 0);
	}
	n = recv(fd, buf, sizeof(buf), 0);
	p = parse(buf, (int)n);
	isth_wire_get_round(&p, &rb);
	cr_assert_eq(rb.start_ns, 10);
	cr_assert_eq(rb.deadline_ns, 20);
	cr_assert_eq(rb.period_ns, 30);
	cr_assert_eq(rb.clique, 17); /* hex, as documented: islands 0 and 4 */
	cr_assert_eq(rb.n_chunks, 11);
	cr_assert_eq(rb.chunk_elems, 12);
	close(fd);
	{
		/* hex elsewhere, blanks, signs and exponents are refused */
		char *a1[] = {(char *)bin, "--to", to, "--count", "0x5", "data", NULL};
		char *a2[] = {(char *)bin, "--to", to, "--job", " 1", "data", NULL};
		char *a3[] = {(char *)bin, "--to", to, "--chunk", "-1", "data", NULL};
		char *a4[] = {(char *)bin, "--to", to, "--seq", "1e3", "data", NULL};
		char *a5[] = {(char *)bin, "--to", to, "--bitmap", "0x", "data", NULL};

		cr_assert_eq(run(a1), 2);
		cr_assert_eq(run(a2), 2);
		cr_assert_eq(run(a3), 2);
		cr_assert_eq(run(a4), 2);
		cr_assert_eq(run(a5), 2);
	}
}
