/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/island's UDP GSO (send), UDP GRO (receive), the fallback when the
 * kernel refuses GSO, and several sockets per session: each against the
 * plain path of the same library, with a fake edge on loopback.
 *
 * - Sending: the fake edge reads every DATA of a round (a plain socket:
 *   the kernel cuts GSO buffers into datagrams before it), and they must
 *   be byte for byte the datagrams a plain session sends, each chunk once,
 *   with GSO really used (gso_sends > 0) or really refused (gso_refused).
 * - Receiving: the fake edge sends a round's AGGs as one GSO buffer, which
 *   loopback hands whole to a UDP_GRO socket; the sums (computed here from
 *   the closed form, not from packets) must be exact either way.
 * - With a key file every segment must be one whole sealed message: each
 *   datagram the edge reads verifies with lib/auth.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <criterion/criterion.h>

#include "isth_auth.h"
#include "isth_island.h"
#include "isth_wire.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define JOB 7u
#define SELF 1u
#define PEER 0u
#define N_ISLANDS 4u
#define CE 358u /* int32 elements per chunk at MTU 1500 */
#define CE_AUTH 344u /* with the tag and room for a WAN tag list of 3 peers */
#define NCH 100u /* chunks: several GSO buffers, several sockets */
#define LAST_ELEMS 50u
#define ELEMS ((NCH - 1) * CE + LAST_ELEMS)
#define ELEMS_AUTH ((NCH - 1) * CE_AUTH + LAST_ELEMS)
#define LOOPBACK 0x7f000001u
#define MS 1000000ull
#define T0 (1000ull * 1000000000ull)
#define KEY1 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define MSG 1472u
/* a full sealed AGG: header, CE_AUTH elements, the tag */
#define MSG_AUTH (40u + 4u * CE_AUTH + 16u)

static uint32_t
val_i32(unsigned int k, uint32_t r, uint32_t i)
{
	return (uint32_t)(k + 1) * 1000003u + r * 7919u + i * 31u;
}

static uint64_t
fake_clock(void *arg)
{
	(void)arg;
	return T0;
}

static int
udp_socket(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0), buf = 8 << 20;

	cr_assert_geq(fd, 0);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	a.sin_addr.s_addr = htonl(LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static struct isth_island_conf
conf_for(uint16_t edge_port, uint32_t elems)
{
	struct isth_island_conf c = {
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = LOOPBACK,
		.edge_port = edge_port,
		.bind_ip = LOOPBACK,
		.elems = elems,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.probe_ns = UINT64_MAX,
		.clock = fake_clock,
	};
	return c;
}

/* What the edge read of one round: each chunk's datagram and the port
 * of the island socket it came from. */
struct capture {
	uint8_t msg[NCH][MSG];
	size_t len[NCH];
	uint16_t from[NCH];
	unsigned int got, dup;
};

/* Read @n datagrams (at most 2 s of silence), filed by chunk id. */
static void
capture(int fd, struct capture *cap, unsigned int n, const struct isth_wire_limits *lim)
{
	memset(cap, 0, sizeof(*cap));
	while (cap->got + cap->dup < n) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		struct sockaddr_in a;
		socklen_t al = sizeof(a);
		struct isth_wire_pkt pkt;
		uint8_t buf[2048];
		ssize_t k;

		cr_assert_gt(poll(&p, 1, 2000), 0, "only %u of %u DATA came", cap->got, n);
		k = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&a, &al);
		cr_assert_gt(k, 0);
		cr_assert_leq((size_t)k, MSG, "a datagram of %zd bytes: not cut by GSO", k);
		cr_assert_eq(isth_wire_parse_msg(buf, (size_t)k, lim, &pkt), ISTH_WIRE_OK);
		cr_assert_eq(pkt.hdr.type, ISTH_WIRE_DATA);
		cr_assert_lt(pkt.hdr.chunk, NCH);
		if (cap->len[pkt.hdr.chunk]) {
			cap->dup++;
			continue;
		}
		memcpy(cap->msg[pkt.hdr.chunk], buf, (size_t)k);
		cap->len[pkt.hdr.chunk] = (size_t)k;
		cap->from[pkt.hdr.chunk] = ntohs(a.sin_port);
		cap->got++;
	}
}

/* Send round 3's tensor from a session opened with @c and capture it. */
static void
send_round_capture(struct isth_island_conf *c, int edge_fd, struct capture *cap,
	struct isth_island_stats *st, uint16_t ports[ISTH_ISLAND_MAX_SOCKETS])
{
	static uint32_t t[ELEMS];
	struct isth_wire_limits lim;
	struct isth_island *s;

	cr_assert_eq(isth_wire_limits_init(&lim, N_ISLANDS, 1500), 0);
	for (uint32_t i = 0; i < ELEMS; i++)
		t[i] = val_i32(SELF, 3, i);
	s = isth_island_open(c);
	cr_assert_not_null(s, "open: %s", strerror(errno));
	for (unsigned int i = 0; i < ISTH_ISLAND_MAX_SOCKETS; i++)
		ports[i] = isth_island_socket_port(s, i);
	cr_assert_eq(isth_island_send(s, 3, t, sizeof(t)), 0);
	capture(edge_fd, cap, NCH, &lim);
	isth_island_stats(s, st);
	isth_island_close(s);
}

/* The DATA of chunk @c, built here from the closed form and lib/wire. */
static size_t
expected_data(uint8_t *buf, uint32_t c)
{
	uint32_t n = c + 1 < NCH ? CE : LAST_ELEMS;
	uint8_t body[4 * CE];
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_DATA,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.flags = c + 1 == NCH ? ISTH_WIRE_F_LAST : 0,
		.sender = SELF,
		.count = (uint16_t)n,
		.job = JOB,
		.round = 3,
		.chunk = c,
		.seq = c, /* v1: the DATA stream starts at 0 */
		.bitmap = 1u << SELF,
	};
	int k;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = val_i32(SELF, 3, c * CE + i);

		body[4 * i] = (uint8_t)v;
		body[4 * i + 1] = (uint8_t)(v >> 8);
		body[4 * i + 2] = (uint8_t)(v >> 16);
		body[4 * i + 3] = (uint8_t)(v >> 24);
	}
	k = isth_wire_build_msg(buf, MSG, &h, body, (size_t)n * 4, NULL);
	cr_assert_gt(k, 0);
	return (size_t)k;
}

static void
expect_every_chunk_once(const struct capture *cap)
{
	uint8_t want[MSG];

	cr_expect_eq(cap->got, NCH);
	cr_expect_eq(cap->dup, 0, "a chunk came twice");
	for (uint32_t c = 0; c < NCH; c++) {
		size_t n = expected_data(want, c);

		cr_assert_eq(cap->len[c], n, "chunk %u: %zu bytes, want %zu", c, cap->len[c], n);
		cr_assert_eq(memcmp(cap->msg[c], want, n), 0, "chunk %u differs", c);
	}
}

TestSuite(island_offload, .timeout = 30);

/* Plain, GSO, and GSO over 3 and 4 sockets: the same datagrams. */
Test(island_offload, gso_and_several_sockets_send_exactly_the_plain_datagrams)
{
	static struct capture cap;
	uint16_t ports[ISTH_ISLAND_MAX_SOCKETS], edge_port;
	struct isth_island_stats st;
	struct isth_island_conf c;
	int fd = udp_socket(&edge_port);
	static const struct {
		uint8_t gso;
		unsigned int socks;
	} cases[] = {
		{ISTH_ISLAND_OFFLOAD_OFF, 1},
		{ISTH_ISLAND_OFFLOAD_ON, 1},
		{ISTH_ISLAND_OFFLOAD_OFF, 3},
		{ISTH_ISLAND_OFFLOAD_ON, 4},
	};

	for (unsigned int k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		c = conf_for(edge_port, ELEMS);
		c.gso = cases[k].gso;
		c.n_sockets = cases[k].socks;
		send_round_capture(&c, fd, &cap, &st, ports);
		expect_every_chunk_once(&cap);
		cr_expect_eq(st.data_tx, NCH);
		cr_expect_eq(st.data_tx_bytes, (uint64_t)ELEMS * 4);
		cr_expect_eq(st.tx_errors, 0);
		cr_expect_eq(st.n_sockets, cases[k].socks);
		cr_expect_eq(st.gso_refused, 0);
		if (cases[k].gso == ISTH_ISLAND_OFFLOAD_ON) {
			cr_expect(st.gso, "case %u: GSO not in use", k);
			/* 1472-byte DATA: 44 to a buffer, so at least
			 * ceil(NCH / 44 / socks) buffers per socket */
			cr_expect_geq(st.gso_sends, 3, "case %u: %lu GSO sends", k,
				(unsigned long)st.gso_sends);
		} else {
			cr_expect_not(st.gso);
			cr_expect_eq(st.gso_sends, 0);
		}
		/* socket i sent exactly the i-th contiguous chunk range */
		for (unsigned int i = 0; i < cases[k].socks; i++) {
			uint32_t c0 = i * NCH / cases[k].socks, c1 = (i + 1) * NCH / cases[k].socks;

			cr_assert_neq(ports[i], 0);
			for (unsigned int j = 0; j < i; j++)
				cr_assert_neq(ports[i], ports[j], "two sockets on one port");
			for (uint32_t ch = c0; ch < c1; ch++)
				cr_assert_eq(cap.from[ch], ports[i],
					"case %u: chunk %u from port %u, want socket %u's %u", k,
					ch, cap.from[ch], i, ports[i]);
		}
		cr_expect_eq(ports[cases[k].socks], 0, "no socket past n_sockets");
	}
	close(fd);
}

/* The kernel refuses GSO (SO_NO_CHECK makes Linux answer EINVAL): the
 * first send falls back to plain datagrams, all delivered, once. */
Test(island_offload, a_refused_gso_falls_back_to_plain_once)
{
	static struct capture cap;
	uint16_t ports[ISTH_ISLAND_MAX_SOCKETS], edge_port;
	struct isth_wire_limits lim;
	struct isth_island_stats st;
	struct isth_island_conf c;
	struct isth_island *s;
	static uint32_t t[ELEMS];
	int fd = udp_socket(&edge_port);

	c = conf_for(edge_port, ELEMS);
	c.gso = ISTH_ISLAND_OFFLOAD_TEST_REFUSE;
	send_round_capture(&c, fd, &cap, &st, ports);
	expect_every_chunk_once(&cap);
	cr_expect_eq(st.data_tx, NCH);
	cr_expect_eq(st.tx_errors, 0);
	cr_expect_eq(st.gso_refused, 1);
	cr_expect_not(st.gso, "GSO stays off after a refusal");
	cr_expect_eq(st.gso_sends, 0);

	/* detected once: later rounds go plain without asking again */
	cr_assert_eq(isth_wire_limits_init(&lim, N_ISLANDS, 1500), 0);
	s = isth_island_open(&c);
	cr_assert_not_null(s);
	for (uint32_t r = 3; r < 6; r++) {
		for (uint32_t i = 0; i < ELEMS; i++)
			t[i] = val_i32(SELF, 3, i); /* round 3's values every time */
		cr_assert_eq(isth_island_send(s, r, t, sizeof(t)), 0);
		capture(fd, &cap, NCH, &lim);
		cr_expect_eq(cap.got, NCH);
	}
	isth_island_stats(s, &st);
	cr_expect_eq(st.gso_refused, 1, "refused %lu times", (unsigned long)st.gso_refused);
	cr_expect_eq(st.data_tx, 3 * NCH);
	isth_island_close(s);
	close(fd);
}

/* Several sockets: every one bound for the session, released at close. */
Test(island_offload, sockets_bind_consecutive_ports_and_close)
{
	struct isth_island_conf c;
	struct isth_island *s;
	uint16_t edge_port, base, ports[5];
	int fd = udp_socket(&edge_port), probe;
	struct sockaddr_in a = {.sin_family = AF_INET};

	/* a base port whose next four are free: find one by binding */
	probe = udp_socket(&base);
	close(probe);
	c = conf_for(edge_port, ELEMS);
	c.n_sockets = 5;
	c.bind_port = base;
	s = isth_island_open(&c);
	if (s == NULL && errno == EADDRINUSE)
		cr_skip_test("ports %u.. taken meanwhile", base);
	cr_assert_not_null(s, "open: %s", strerror(errno));
	for (unsigned int i = 0; i < 5; i++) {
		ports[i] = isth_island_socket_port(s, i);
		cr_expect_eq(ports[i], base + i);
	}
	cr_expect_eq(isth_island_local_port(s), base);
	isth_island_close(s);
	/* closed: each port can be bound again */
	a.sin_addr.s_addr = htonl(LOOPBACK);
	for (unsigned int i = 0; i < 5; i++) {
		int f = socket(AF_INET, SOCK_DGRAM, 0);

		a.sin_port = htons(ports[i]);
		cr_expect_eq(bind(f, (struct sockaddr *)&a, sizeof(a)), 0, "port %u still bound",
			ports[i]);
		close(f);
	}
	c.n_sockets = ISTH_ISLAND_MAX_SOCKETS + 1;
	c.bind_port = 0;
	cr_expect_null(isth_island_open(&c));
	cr_expect_eq(errno, EINVAL);
	c.n_sockets = 2;
	c.bind_port = UINT16_MAX;
	cr_expect_null(isth_island_open(&c), "bind_port + 1 would wrap");
	c.bind_port = 0;
	c.gso = 9;
	cr_expect_null(isth_island_open(&c));
	close(fd);
}

/* @off bytes of @msg-byte messages (the last may be shorter) to @to, as
 * GSO buffers of 40: the kernel cuts them into the datagrams. */
static void
gso_sendto(int fd, struct sockaddr_in *to, uint8_t *buf, size_t off, uint16_t msg)
{
	for (size_t at = 0; at < off; at += 40 * (size_t)msg) {
		size_t len = off - at < 40 * (size_t)msg ? off - at : 40 * (size_t)msg;
		union {
			char b[CMSG_SPACE(sizeof(uint16_t))];
			struct cmsghdr al;
		} cm;
		struct iovec v = {buf + at, len};
		struct msghdr m = {
			.msg_name = to,
			.msg_namelen = sizeof(*to),
			.msg_iov = &v,
			.msg_iovlen = 1,
			.msg_control = cm.b,
			.msg_controllen = sizeof(cm.b),
		};
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		uint16_t seg = msg;

		memset(&cm, 0, sizeof(cm));
		h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_UDP;
		h->cmsg_type = UDP_SEGMENT;
		h->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(h), &seg, sizeof(seg));
		cr_assert_eq(
			sendmsg(fd, &m, 0), (ssize_t)len, "edge GSO send: %s", strerror(errno));
	}
}

/* Round 5's AGGs from peer 0 (seq = chunk), as an edge builds them. */
static size_t
mk_agg(uint8_t *buf, uint32_t c)
{
	uint32_t n = c + 1 < NCH ? CE : LAST_ELEMS;
	uint8_t body[4 * CE];
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.sender = SELF,
		.count = (uint16_t)n,
		.job = JOB,
		.round = 5,
		.chunk = c,
		.seq = c,
		.bitmap = 1u << PEER,
	};
	int k;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = val_i32(PEER, 5, c * CE + i);

		body[4 * i] = (uint8_t)v;
		body[4 * i + 1] = (uint8_t)(v >> 8);
		body[4 * i + 2] = (uint8_t)(v >> 16);
		body[4 * i + 3] = (uint8_t)(v >> 24);
	}
	k = isth_wire_build_msg(buf, MSG, &h, body, (size_t)n * 4, NULL);
	cr_assert_gt(k, 0);
	return (size_t)k;
}

/* ROUND 5, then every AGG of the round in segmented sends of 40. */
static void
edge_send_round_gso(int fd, uint16_t island_port)
{
	static uint8_t agg[NCH * MSG];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(island_port)};
	struct isth_wire_round rb = {
		.start_ns = T0,
		.deadline_ns = T0 + 1000 * MS,
		.period_ns = 100 * MS,
		.clique = (1u << PEER) | (1u << SELF),
		.n_chunks = NCH,
		.chunk_elems = CE,
	};
	struct isth_wire_hdr rh = {
		.type = ISTH_WIRE_ROUND,
		.sender = SELF,
		.job = JOB,
		.round = 5,
		.bitmap = 1u << PEER,
	};
	uint8_t body[ISTH_WIRE_ROUND_SIZE], msg[256];
	size_t off = 0;
	int n;

	to.sin_addr.s_addr = htonl(LOOPBACK);
	isth_wire_put_round(body, sizeof(body), &rb);
	n = isth_wire_build_msg(msg, sizeof(msg), &rh, body, sizeof(body), NULL);
	cr_assert_gt(n, 0);
	cr_assert_eq(sendto(fd, msg, (size_t)n, 0, (struct sockaddr *)&to, sizeof(to)), n);
	for (uint32_t c = 0; c < NCH; c++)
		off += mk_agg(agg + off, c); /* all MSG long but the last */
	gso_sendto(fd, &to, agg, off, MSG);
}

/* GRO on, off and refused: the same exact sums, every datagram counted. */
Test(island_offload, gro_receives_exactly_the_plain_sums)
{
	static const uint8_t gro[] = {
		ISTH_ISLAND_OFFLOAD_OFF,
		ISTH_ISLAND_OFFLOAD_ON,
		ISTH_ISLAND_OFFLOAD_TEST_REFUSE,
	};
	static struct isth_island_chunk ch[NCH];
	static uint32_t t[ELEMS], out[ELEMS];
	uint16_t edge_port;
	int fd = udp_socket(&edge_port);

	for (unsigned int k = 0; k < sizeof(gro); k++) {
		struct isth_island_conf c = conf_for(edge_port, ELEMS);
		struct isth_island_result res;
		struct isth_island_stats st;
		struct isth_island *s;

		c.gro = gro[k];
		c.n_sockets = k == 1 ? 2 : 1; /* and read with a second socket idle */
		s = isth_island_open(&c);
		cr_assert_not_null(s, "open: %s", strerror(errno));
		for (uint32_t i = 0; i < ELEMS; i++)
			t[i] = val_i32(SELF, 5, i);
		cr_assert_eq(isth_island_send(s, 5, t, sizeof(t)), 0);
		edge_send_round_gso(fd, isth_island_local_port(s));
		cr_assert_eq(isth_island_result(s, 5, out, sizeof(out), ch, NCH, &res, 2000 * MS),
			0, "case %u: round not complete", k);
		for (uint32_t i = 0; i < ELEMS; i++)
			cr_assert_eq(out[i], val_i32(SELF, 5, i) + val_i32(PEER, 5, i),
				"case %u: element %u", k, i);
		for (uint32_t cc = 0; cc < NCH; cc++)
			cr_assert_eq(ch[cc].bitmap, (1u << PEER) | (1u << SELF));
		isth_island_stats(s, &st);
		cr_expect_eq(st.rx_packets, 1 + NCH, "case %u: every datagram counted once", k);
		cr_expect_eq(st.aggs_summed, NCH);
		if (gro[k] == ISTH_ISLAND_OFFLOAD_ON) {
			cr_expect(st.gro);
			cr_expect_gt(st.gro_rx, 0, "loopback hands a GSO buffer whole to GRO");
			cr_expect_eq(st.gro_refused, 0);
		} else {
			cr_expect_not(st.gro);
			cr_expect_eq(st.gro_rx, 0);
			cr_expect_eq(st.gro_refused, gro[k] == ISTH_ISLAND_OFFLOAD_TEST_REFUSE);
		}
		/* drain our own DATA so the next case reads a clean socket */
		for (;;) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			uint8_t b[2048];

			if (poll(&p, 1, 0) <= 0)
				break;
			(void)recv(fd, b, sizeof(b), 0);
		}
		isth_island_close(s);
	}
	close(fd);
}

/* v2: sealed ROUND 3, then round 3's AGGs from the peer (344-element
 * chunks), sealed one by one and sent as GSO buffers of 40. */
static void
edge_send_sealed_round_gso(int fd, uint16_t island_port, struct isth_auth_engine *e)
{
	static uint8_t agg[NCH * MSG];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(island_port)};
	struct isth_wire_round rb = {
		.start_ns = T0,
		.deadline_ns = T0 + 1000 * MS,
		.period_ns = 100 * MS,
		.clique = (1u << PEER) | (1u << SELF),
		.n_chunks = NCH,
		.chunk_elems = CE_AUTH,
	};
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_ROUND,
		.sender = SELF,
		.job = JOB,
		.round = 3,
		.seq = 1,
		.bitmap = 1u << PEER,
	};
	uint8_t body[4 * CE];
	size_t off = 0;
	int n;

	to.sin_addr.s_addr = htonl(LOOPBACK);
	isth_wire_put_round(body, sizeof(body), &rb);
	n = isth_wire_build_msg(agg, MSG, &h, body, ISTH_WIRE_ROUND_SIZE, NULL);
	cr_assert_gt(n, 0);
	n = isth_auth_seal(e, ISTH_AUTH_DOWN, SELF, agg, (size_t)n, MSG);
	cr_assert_gt(n, 0);
	cr_assert_eq(sendto(fd, agg, (size_t)n, 0, (struct sockaddr *)&to, sizeof(to)), n);
	for (uint32_t c = 0; c < NCH; c++) {
		uint32_t cnt = c + 1 < NCH ? CE_AUTH : LAST_ELEMS;
		struct isth_wire_hdr a = {
			.type = ISTH_WIRE_AGG,
			.dtype = ISTH_WIRE_DTYPE_INT32,
			.sender = SELF,
			.count = (uint16_t)cnt,
			.job = JOB,
			.round = 3,
			.chunk = c,
			.seq = 1000 + c,
			.bitmap = 1u << PEER,
		};

		for (uint32_t i = 0; i < cnt; i++) {
			uint32_t v = val_i32(PEER, 3, c * CE_AUTH + i);

			body[4 * i] = (uint8_t)v;
			body[4 * i + 1] = (uint8_t)(v >> 8);
			body[4 * i + 2] = (uint8_t)(v >> 16);
			body[4 * i + 3] = (uint8_t)(v >> 24);
		}
		n = isth_wire_build_msg(agg + off, MSG, &a, body, (size_t)cnt * 4, NULL);
		cr_assert_gt(n, 0);
		n = isth_auth_seal(e, ISTH_AUTH_DOWN, SELF, agg + off, (size_t)n, MSG);
		cr_assert_gt(n, 0);
		cr_assert(c + 1 == NCH || n == (int)MSG_AUTH, "a full sealed AGG is %d bytes", n);
		off += (size_t)n;
	}
	gso_sendto(fd, &to, agg, off, MSG_AUTH);
}

/* Auth on, GSO on, 2 sockets: every datagram is one whole sealed DATA. */
Test(island_offload, with_auth_each_gso_segment_is_one_sealed_message)
{
	static uint32_t t[ELEMS_AUTH];
	struct isth_auth_conf ac = {.job = JOB, .n_islands = N_ISLANDS};
	struct isth_wire_limits lim;
	struct isth_island_stats st;
	struct isth_island_conf c;
	struct isth_auth_engine *e;
	struct isth_auth *a;
	struct isth_island *s;
	char path[64], err[256];
	const char *text = "job 7\nepoch 1 round 0 key " KEY1 "\n";
	uint16_t edge_port;
	int fd = udp_socket(&edge_port), kf;
	bool seen[NCH] = {false};
	uint64_t seq[NCH] = {0};

	snprintf(path, sizeof(path), "/tmp/isth_island_gso.XXXXXX");
	kf = mkstemp(path); /* mode 0600 */
	cr_assert_geq(kf, 0);
	cr_assert_eq(write(kf, text, strlen(text)), (ssize_t)strlen(text));
	close(kf);
	ac.key_file = path;
	cr_assert_eq(isth_auth_create(&ac, &a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &e), 0);
	cr_assert_eq(isth_wire_limits_init_auth(&lim, N_ISLANDS, 1500, true), 0);

	c = conf_for(edge_port, ELEMS_AUTH);
	c.key_file = path;
	c.gso = ISTH_ISLAND_OFFLOAD_ON;
	c.gro = ISTH_ISLAND_OFFLOAD_ON;
	c.n_sockets = 2;
	s = isth_island_open(&c);
	unlink(path);
	cr_assert_not_null(s, "open: %s", strerror(errno));
	cr_assert_eq(isth_island_n_chunks(s), NCH);
	for (uint32_t i = 0; i < ELEMS_AUTH; i++)
		t[i] = val_i32(SELF, 3, i);
	cr_assert_eq(isth_island_send(s, 3, t, sizeof(t)), 0);
	for (unsigned int n = 0; n < NCH; n++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		struct isth_wire_pkt pkt;
		uint8_t buf[2048];
		ssize_t k;
		uint32_t cnt;

		cr_assert_gt(poll(&p, 1, 2000), 0, "only %u DATA came", n);
		k = recv(fd, buf, sizeof(buf), 0);
		cr_assert_gt(k, 0);
		cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_UP, SELF, buf, (size_t)k), ISTH_AUTH_OK,
			"datagram %u (%zd bytes) does not verify", n, k);
		cr_assert_eq(isth_wire_parse_msg(buf, (size_t)k, &lim, &pkt), ISTH_WIRE_OK);
		cr_assert_lt(pkt.hdr.chunk, NCH);
		cr_assert_not(seen[pkt.hdr.chunk], "chunk %u twice", pkt.hdr.chunk);
		seen[pkt.hdr.chunk] = true;
		cnt = pkt.hdr.chunk + 1 < NCH ? CE_AUTH : LAST_ELEMS;
		cr_assert_eq(pkt.hdr.count, cnt);
		seq[pkt.hdr.chunk] = pkt.hdr.seq;
		for (uint32_t i = 0; i < cnt; i++) {
			uint32_t v;

			memcpy(&v, pkt.payload + 4 * (size_t)i, 4);
			cr_assert_eq(le32toh(v), val_i32(SELF, 3, pkt.hdr.chunk * CE_AUTH + i));
		}
	}
	/* one DATA stream whichever socket sent a chunk: seq[0] + c */
	cr_assert_neq(seq[0], 0, "v2 DATA seqs start at the real clock");
	for (uint32_t cc = 0; cc < NCH; cc++)
		cr_assert_eq(seq[cc], seq[0] + cc, "chunk %u", cc);

	/* and back: sealed ROUND, then sealed AGGs as GSO buffers to the
	 * GRO socket; each segment is verified on its own, sums exact */
	edge_send_sealed_round_gso(fd, isth_island_local_port(s), e);
	{
		static uint32_t out[ELEMS_AUTH];
		static struct isth_island_chunk ch[NCH];
		struct isth_island_result res;

		cr_assert_eq(isth_island_result(s, 3, out, sizeof(out), ch, NCH, &res, 2000 * MS),
			0, "round not complete");
		for (uint32_t i = 0; i < ELEMS_AUTH; i++)
			cr_assert_eq(
				out[i], val_i32(SELF, 3, i) + val_i32(PEER, 3, i), "element %u", i);
	}
	isth_island_stats(s, &st);
	cr_expect(st.gso);
	cr_expect_geq(st.gso_sends, 2);
	cr_expect_eq(st.data_tx, NCH);
	cr_expect(st.gro);
	cr_expect_gt(st.gro_rx, 0);
	cr_expect_eq(st.rx_packets, 1 + NCH);
	cr_expect_eq(st.aggs_summed, NCH);
	for (unsigned int i = 0; i < ISTH_AUTH_STATUS_MAX; i++)
		cr_expect_eq(st.auth_drop[i], 0, "auth refused %s", isth_auth_status_name(i));
	isth_island_close(s);
	isth_auth_engine_free(e);
	isth_auth_free(a);
	close(fd);
}
