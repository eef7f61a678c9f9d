/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/island for an island of K hosts (conf.hosts, conf.host): the rule
 * that splits a round's chunks among the hosts against ranges worked out
 * by hand, the refusals of bad K/k, and sessions of two and three hosts
 * against a fake edge on loopback: each host sends DATA for its own chunks
 * only (seqs k modulo K, so no two hosts of an island use one IV), sums
 * the AGGs of its own chunks only (others dropped as agg_range), NACKs the
 * gaps of its own AGG stream and returns exact sums of its range. Expected
 * sums come from the closed-form tensor formula (island_fix.c); time is an
 * injected clock; waits poll conditions, no sleeps.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>

#include "isth_auth.h"
#include "isth_island.h"
#include "isth_wire.h"

#include "island_fix.h"

#define JOB FIX_JOB
#define SELF 1u
#define N_ISLANDS FIX_N_ISLANDS
#define LOOPBACK 0x7f000001u
#define MS 1000000ull
#define T0 FIX_T0
#define PEERS (1u << 0 | 1u << 2 | 1u << 3)
/* with auth at MTU 1500 and 4 islands (island_auth_test.c): 344 a chunk */
#define CE_AUTH 344u
#define CE_PLAIN 358u
/* five chunks, the last of 50 */
#define NCH 5u
#define KEY1 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

static const char file1[] = "job 7\nepoch 1 round 0 key " KEY1 "\n";

static void
setup(void)
{
	__atomic_store_n(&fake_now, T0, __ATOMIC_SEQ_CST);
}

TestSuite(island_hosts, .init = setup, .fini = key_files_remove, .timeout = 30);

/* ---- the rule ------------------------------------------------------------- */

/* (C, K) and the first chunk of each host, then C: worked out by hand from
 * floor(k * C / K). */
static const struct {
	uint32_t c;
	unsigned int k;
	uint32_t cut[17];
} rule[] = {
	{1, 1, {0, 1}},
	{3, 1, {0, 3}},
	{3, 2, {0, 1, 3}}, /* 3/2 = 1.5 */
	{3, 3, {0, 1, 2, 3}},
	{10, 3, {0, 3, 6, 10}}, /* 3.33, 6.67 */
	{7, 4, {0, 1, 3, 5, 7}}, /* 1.75, 3.5, 5.25 */
	{16, 16, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
	/* 6.25 a host */
	{100, 16, {0, 6, 12, 18, 25, 31, 37, 43, 50, 56, 62, 68, 75, 81, 87, 93, 100}},
	/* a 1.3 GB fp32 round at 358 a chunk, 8 hosts: 113489.25 each */
	{907914, 8, {0, 113489, 226978, 340467, 453957, 567446, 680935, 794424, 907914}},
};

Test(island_hosts, split_follows_the_rule)
{
	for (unsigned int i = 0; i < sizeof(rule) / sizeof(rule[0]); i++)
		for (unsigned int h = 0; h < rule[i].k; h++) {
			uint32_t first = 99, count = 99;

			cr_assert_eq(isth_island_split(rule[i].c, rule[i].k, h, &first, &count), 0);
			cr_expect_eq(first, rule[i].cut[h], "C %u K %u host %u: first %u",
				rule[i].c, rule[i].k, h, first);
			cr_expect_eq(count, rule[i].cut[h + 1] - rule[i].cut[h],
				"C %u K %u host %u: count %u", rule[i].c, rule[i].k, h, count);
		}
}

Test(island_hosts, split_refuses_what_has_no_range)
{
	uint32_t f, n;

	cr_expect_eq(isth_island_split(10, 0, 0, &f, &n), -EINVAL);
	cr_expect_eq(isth_island_split(100, ISTH_ISLAND_MAX_HOSTS + 1, 0, &f, &n), -EINVAL);
	cr_expect_eq(isth_island_split(10, 2, 2, &f, &n), -EINVAL);
	cr_expect_eq(isth_island_split(3, 4, 0, &f, &n), -EINVAL, "a host would own nothing");
	cr_expect_eq(isth_island_split(10, 2, 0, NULL, &n), -EINVAL);
	cr_expect_eq(isth_island_split(10, 2, 0, &f, NULL), -EINVAL);
}

/* ---- sessions ------------------------------------------------------------- */

static void
send_to(int fd, uint16_t port, const void *buf, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	a.sin_addr.s_addr = htonl(LOOPBACK);
	a.sin_port = htons(port);
	cr_assert_eq(sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
}

/* One datagram within @ms (0: none), and the port it came from. */
static size_t
recv_from(int fd, uint8_t *buf, size_t cap, int ms, uint16_t *port)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return 0;
	n = recvfrom(fd, buf, cap, 0, (struct sockaddr *)&a, &alen);
	cr_assert_gt(n, 0);
	*port = ntohs(a.sin_port);
	return (size_t)n;
}

static struct isth_island_conf
conf_of(uint16_t edge_port, uint32_t elems, unsigned int hosts, unsigned int host)
{
	return (struct isth_island_conf){
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = LOOPBACK,
		.edge_port = edge_port,
		.bind_ip = LOOPBACK,
		.elems = elems,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.nack_interval_ns = 5 * MS,
		.probe_ns = UINT64_MAX,
		.clock = fake_clock,
		.hosts = hosts,
		.host = host,
	};
}

static struct isth_island *
open_conf(const struct isth_island_conf *c)
{
	char err[256];
	struct isth_island *s = isth_island_open_err(c, err, sizeof(err));

	cr_assert_not_null(s, "open: %s: %s", strerror(errno), err);
	return s;
}

Test(island_hosts, open_refuses_bad_hosts_and_says_why)
{
	static const struct {
		unsigned int hosts, host;
		uint32_t elems;
		const char *says;
	} bad[] = {
		{17, 0, 4000, "hosts 17: an island has 1..16 hosts"},
		{2, 2, 4000, "host 2 of 2 hosts: host must be 0..1"},
		{0, 1, 4000, "host 1 of 1 hosts: host must be 0..0"},
		/* 3 chunks of 358 */
		{4, 0, 2 * CE_PLAIN + 100, "hosts 4: the tensor has 3 chunks of 358 elements"},
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct isth_island_conf c = conf_of(9, bad[i].elems, bad[i].hosts, bad[i].host);
		char err[256] = "";

		errno = 0;
		cr_expect_null(isth_island_open_err(&c, err, sizeof(err)), "case %u", i);
		cr_expect_eq(errno, EINVAL, "case %u", i);
		cr_expect(strstr(err, bad[i].says) != NULL, "case %u says '%s'", i, err);
	}
}

Test(island_hosts, one_host_is_the_whole_tensor)
{
	struct isth_island_conf c = conf_of(9, 2 * CE_PLAIN + 100, 0, 0);
	struct isth_island_range rg;
	struct isth_island_stats st;
	struct isth_island *s = open_conf(&c);

	isth_island_range(s, &rg);
	cr_expect_eq(rg.first_chunk, 0);
	cr_expect_eq(rg.n_chunks, 3);
	cr_expect_eq(rg.first_elem, 0);
	cr_expect_eq(rg.n_elems, 2 * CE_PLAIN + 100);
	isth_island_stats(s, &st);
	cr_expect_eq(st.hosts, 1);
	cr_expect_eq(st.host, 0);
	isth_island_close(s);
}

/* Host @h of 3 on 7 chunks of 358 (the last of 9): chunks 0-1, 2-3, 4-6. */
Test(island_hosts, the_range_is_in_elements_too)
{
	static const uint32_t want[3][4] = {
		{0, 2, 0, 2 * CE_PLAIN},
		{2, 2, 2 * CE_PLAIN, 2 * CE_PLAIN},
		{4, 3, 4 * CE_PLAIN, 2 * CE_PLAIN + 9},
	};

	for (unsigned int h = 0; h < 3; h++) {
		struct isth_island_conf c = conf_of(9, 6 * CE_PLAIN + 9, 3, h);
		struct isth_island_range rg;
		struct isth_island_stats st;
		struct isth_island *s = open_conf(&c);

		cr_expect_eq(isth_island_n_chunks(s), 7, "the whole tensor's chunks");
		isth_island_range(s, &rg);
		cr_expect_eq(rg.first_chunk, want[h][0], "host %u", h);
		cr_expect_eq(rg.n_chunks, want[h][1], "host %u", h);
		cr_expect_eq(rg.first_elem, want[h][2], "host %u", h);
		cr_expect_eq(rg.n_elems, want[h][3], "host %u", h);
		isth_island_stats(s, &st);
		cr_expect_eq(st.hosts, 3);
		cr_expect_eq(st.host, h);
		cr_expect_eq(st.first_chunk, want[h][0]);
		cr_expect_eq(st.range_chunks, want[h][1]);
		isth_island_close(s);
	}
}

static uint32_t
clen(uint32_t ce, uint32_t elems, uint32_t c)
{
	return elems - c * ce < ce ? elems - c * ce : ce;
}

static uint32_t
le32(const uint8_t *q)
{
	return q[0] | q[1] << 8 | q[2] << 16 | (uint32_t)q[3] << 24;
}

/*
 * A pair of hosts with the island's key (wire version 2), one edge socket
 * for both as an edge has: each host's DATA is sealed with the island's UP
 * key, names its chunks only, LAST on its range's last, and its seqs are
 * its host id modulo 2 (all distinct); each host sums its own chunks' AGGs
 * exactly, refuses the other's (agg_range), and NACKs a gap in its own
 * AGG stream from its own socket.
 */
Test(island_hosts, two_hosts_with_keys_send_and_sum_their_ranges)
{
	const struct fix_shape sh = {
		.n_chunks = NCH, .ce = CE_AUTH, .elems = 4 * CE_AUTH + 50, .self = SELF};
	const uint32_t round = 4, elems = sh.elems;
	struct isth_island *s[2];
	struct isth_island_range rg[2];
	uint64_t seqs[NCH];
	bool seen[NCH] = {false};
	uint16_t eport, iport[2];
	struct keys k;
	uint8_t buf[2048];
	int fd;

	keys_load(&k, file1);
	fd = fix_udp_socket(&eport);
	for (unsigned int h = 0; h < 2; h++) {
		struct isth_island_conf c = conf_of(eport, elems, 2, h);

		c.key_file = k.path;
		s[h] = open_conf(&c);
		iport[h] = isth_island_local_port(s[h]);
		isth_island_range(s[h], &rg[h]);
		cr_assert_eq(isth_island_chunk_elems(s[h]), CE_AUTH);
	}
	/* 5 chunks, 2 hosts: chunks 0-1 and 2-4 */
	cr_assert_eq(rg[0].first_chunk, 0);
	cr_assert_eq(rg[0].n_chunks, 2);
	cr_assert_eq(rg[1].first_chunk, 2);
	cr_assert_eq(rg[1].n_chunks, 3);
	cr_assert_eq(rg[1].n_elems, 2 * CE_AUTH + 50);

	for (unsigned int h = 0; h < 2; h++) {
		uint32_t *t = malloc((size_t)rg[h].n_elems * 4);
		size_t n;

		n = fix_round(buf, &sh, round, 1, PEERS, PEERS | 1u << SELF, T0 + 100 * MS);
		n = (size_t)isth_auth_seal(k.e, ISTH_AUTH_DOWN, SELF, buf, n, sizeof(buf));
		send_to(fd, iport[h], buf, n);
		for (uint32_t i = 0; i < rg[h].n_elems; i++)
			t[i] = val_i32(SELF, round, rg[h].first_elem + i);
		cr_assert_eq(isth_island_send(s[h], round, t, (size_t)elems * 4), -EINVAL,
			"the whole tensor is not the host's range");
		cr_assert_eq(isth_island_send(s[h], round, t, (size_t)rg[h].n_elems * 4), 0);
		free(t);
	}
	for (unsigned int j = 0; j < NCH; j++) {
		uint16_t from = 0;
		size_t n = recv_from(fd, buf, sizeof(buf), 2000, &from);
		uint32_t c;
		unsigned int h;
		uint64_t seq;

		cr_assert_gt(n, 0, "DATA %u never came", j);
		cr_assert_eq(isth_auth_verify(k.e, ISTH_AUTH_UP, SELF, buf, n), ISTH_AUTH_OK);
		cr_assert_eq(buf[ISTH_WIRE_OFF_TYPE], ISTH_WIRE_DATA);
		c = (uint32_t)isth_wire_get_be_(buf + ISTH_WIRE_OFF_CHUNK, 4);
		seq = isth_wire_get_be_(buf + ISTH_WIRE_OFF_SEQ, 8);
		cr_assert_lt(c, NCH);
		cr_assert(!seen[c], "chunk %u twice", c);
		seen[c] = true;
		seqs[c] = seq;
		h = c < 2 ? 0 : 1;
		cr_expect_eq(from, iport[h], "chunk %u from its host's socket", c);
		cr_expect_eq(seq % 2, h, "chunk %u: seq %llu is host %u's", c,
			(unsigned long long)seq, h);
		cr_expect_eq(isth_wire_get_be_(buf + ISTH_WIRE_OFF_FLAGS, 2) & ISTH_WIRE_F_LAST,
			c == 1 || c == 4 ? ISTH_WIRE_F_LAST : 0, "chunk %u LAST", c);
		cr_expect_eq(
			isth_wire_get_be_(buf + ISTH_WIRE_OFF_COUNT, 2), clen(CE_AUTH, elems, c));
		for (uint32_t i = 0; i < clen(CE_AUTH, elems, c); i++)
			cr_assert_eq(le32(buf + ISTH_WIRE_HDR_SIZE + 4 * i),
				val_i32(SELF, round, c * CE_AUTH + i), "chunk %u elem %u", c, i);
	}
	/* within a host, consecutive chunks step by the host count */
	cr_expect_eq(seqs[1], seqs[0] + 2);
	cr_expect_eq(seqs[3], seqs[2] + 2);
	cr_expect_eq(seqs[4], seqs[3] + 2);

	/* host 0: chunks 0, 1 (seqs 0, 1) and chunk 2, host 1's (seq 2) */
	for (uint32_t c = 0; c < 3; c++) {
		size_t n = fix_agg(buf, &sh, ISTH_WIRE_DTYPE_INT32, round, c, PEERS, c, 0);

		n = (size_t)isth_auth_seal(k.e, ISTH_AUTH_DOWN, SELF, buf, n, sizeof(buf));
		send_to(fd, iport[0], buf, n);
	}
	/* host 1: its own seqs, 0 and 2 of chunks 2 and 4; seq 1 lost */
	for (uint32_t c = 2; c < 5; c += 2) {
		size_t n = fix_agg(buf, &sh, ISTH_WIRE_DTYPE_INT32, round, c, PEERS, c - 2, 0);

		n = (size_t)isth_auth_seal(k.e, ISTH_AUTH_DOWN, SELF, buf, n, sizeof(buf));
		send_to(fd, iport[1], buf, n);
	}
	{
		struct isth_island_stats st;
		uint16_t from = 0;
		size_t n = 0;

		POLL_UNTIL(s[1], st.aggs_summed == 2);
		for (int i = 0; i < 200 && n == 0; i++) {
			isth_island_poll(s[1], 1 * MS);
			__atomic_add_fetch(&fake_now, 5 * MS, __ATOMIC_SEQ_CST);
			n = recv_from(fd, buf, sizeof(buf), 5, &from);
		}
		cr_assert_gt(n, 0, "host 1 never NACKed its gap");
		cr_assert_eq(isth_auth_verify(k.e, ISTH_AUTH_UP, SELF, buf, n), ISTH_AUTH_OK);
		cr_expect_eq(buf[ISTH_WIRE_OFF_TYPE], ISTH_WIRE_NACK);
		cr_expect_eq(from, iport[1]);
		cr_expect_eq(isth_wire_get_be_(buf + ISTH_WIRE_OFF_SEQ, 8) % 2, 1,
			"host 1's NACK seqs are 1 modulo 2");
		/* one range, [1, 1] */
		cr_expect_eq(isth_wire_get_be_(buf + ISTH_WIRE_OFF_COUNT, 2), 1);
		cr_expect_eq(isth_wire_get_be_(buf + ISTH_WIRE_HDR_SIZE, 8), 1);
		cr_expect_eq(isth_wire_get_be_(buf + ISTH_WIRE_HDR_SIZE + 8, 8), 1);
		/* the repair: seq 1, chunk 3 */
		n = fix_agg(
			buf, &sh, ISTH_WIRE_DTYPE_INT32, round, 3, PEERS, 1, ISTH_WIRE_F_RESENT);
		n = (size_t)isth_auth_seal(k.e, ISTH_AUTH_DOWN, SELF, buf, n, sizeof(buf));
		send_to(fd, iport[1], buf, n);
	}
	for (unsigned int h = 0; h < 2; h++) {
		struct isth_island_chunk ch[NCH];
		struct isth_island_result res;
		struct isth_island_stats st;
		uint32_t *out = malloc((size_t)rg[h].n_elems * 4);

		cr_assert_eq(isth_island_result(s[h], round, out, (size_t)rg[h].n_elems * 4, ch,
				     rg[h].n_chunks, &res, 2000 * MS),
			0, "host %u complete", h);
		cr_expect_eq(res.n_chunks, rg[h].n_chunks);
		cr_expect_eq(res.complete, rg[h].n_chunks);
		for (uint32_t j = 0; j < rg[h].n_chunks; j++) {
			uint32_t c = rg[h].first_chunk + j;

			cr_expect_eq(ch[j].bitmap, PEERS | 1u << SELF, "host %u chunk %u", h, c);
			cr_expect_eq(ch[j].count, clen(CE_AUTH, elems, c));
			for (uint32_t i = 0; i < ch[j].count; i++)
				cr_assert_eq(out[c * CE_AUTH - rg[h].first_elem + i],
					sum_i32(PEERS | 1u << SELF, round, c * CE_AUTH + i),
					"host %u chunk %u elem %u", h, c, i);
		}
		isth_island_stats(s[h], &st);
		cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_range], h == 0 ? 1 : 0, "host %u", h);
		cr_expect_eq(st.aggs_summed, rg[h].n_chunks);
		free(out);
		isth_island_close(s[h]);
	}
	close(fd);
	keys_free(&k);
}

/*
 * Host 1 of 3 (chunks 1-2 of 5) with two sockets: its range is split
 * between them (chunk 1 from socket 0, chunk 2 from socket 1), no other
 * chunk leaves, and a bf16 session rounds its fp32 range as it should.
 * A partial result names the tensor's chunk ids.
 */
Test(island_hosts, a_host_with_two_sockets_splits_its_own_range)
{
	const uint32_t elems = 4 * CE_PLAIN + 50, round = 2;
	const struct fix_shape sh = {.n_chunks = NCH, .ce = CE_PLAIN, .elems = elems, .self = SELF};
	struct isth_island_conf c;
	struct isth_island_range rg;
	struct isth_island_chunk ch[2];
	struct isth_island_result res;
	struct isth_island *s;
	uint16_t eport, from = 0;
	uint8_t buf[2048];
	char miss[128];
	float *t, *out;
	size_t n;
	int fd;

	fd = fix_udp_socket(&eport);
	c = conf_of(eport, elems, 3, 1);
	c.n_sockets = 2;
	c.dtype = ISTH_WIRE_DTYPE_BF16;
	s = open_conf(&c);
	isth_island_range(s, &rg);
	cr_assert_eq(rg.first_chunk, 1);
	cr_assert_eq(rg.n_chunks, 2);
	t = malloc((size_t)rg.n_elems * 4);
	out = malloc((size_t)rg.n_elems * 4);
	/* small integers: exact in bf16, whose bits are the float's top half */
	for (uint32_t i = 0; i < rg.n_elems; i++)
		t[i] = (float)((int)((rg.first_elem + i) % 7u) - 3);
	cr_assert_eq(isth_island_send(s, round, t, (size_t)rg.n_elems * 4), 0);
	for (unsigned int j = 0; j < 2; j++) {
		uint32_t ck;

		n = recv_from(fd, buf, sizeof(buf), 2000, &from);
		cr_assert_gt(n, 0);
		ck = (uint32_t)isth_wire_get_be_(buf + ISTH_WIRE_OFF_CHUNK, 4);
		cr_assert(ck == 1 || ck == 2, "chunk %u is not host 1's", ck);
		cr_expect_eq(from, isth_island_socket_port(s, ck - 1), "chunk %u's socket", ck);
		cr_expect_eq(buf[ISTH_WIRE_OFF_DTYPE], ISTH_WIRE_DTYPE_BF16);
		for (uint32_t i = 0; i < CE_PLAIN; i++) {
			float f = (float)((int)((ck * CE_PLAIN + i) % 7u) - 3);
			uint32_t u;

			memcpy(&u, &f, 4);
			cr_assert_eq(buf[ISTH_WIRE_HDR_SIZE + 2 * i] |
					buf[ISTH_WIRE_HDR_SIZE + 2 * i + 1] << 8,
				u >> 16, "chunk %u elem %u", ck, i);
		}
	}
	cr_expect_eq(recv_from(fd, buf, sizeof(buf), 50, &from), 0, "nothing else leaves");

	/* chunk 1 complete; chunk 2 misses island 3; the deadline passes */
	n = fix_round(buf, &sh, round, 0, PEERS, PEERS | 1u << SELF, T0 + 100 * MS);
	send_to(fd, isth_island_local_port(s), buf, n);
	n = fix_agg(buf, &sh, ISTH_WIRE_DTYPE_FP32, round, 1, PEERS, 0, 0);
	send_to(fd, isth_island_local_port(s), buf, n);
	n = fix_agg(buf, &sh, ISTH_WIRE_DTYPE_FP32, round, 2, 1u << 0 | 1u << 2, 1,
		ISTH_WIRE_F_PARTIAL);
	send_to(fd, isth_island_local_port(s), buf, n);
	{
		struct isth_island_stats st;

		POLL_UNTIL(s, st.aggs_summed == 2);
	}
	__atomic_add_fetch(&fake_now, 200 * MS, __ATOMIC_SEQ_CST);
	cr_assert_eq(isth_island_result(s, round, out, (size_t)rg.n_elems * 4, ch, 2, &res, 0),
		-ETIMEDOUT);
	cr_expect_eq(res.n_chunks, 2);
	cr_expect_eq(res.complete, 1);
	cr_expect_eq(res.partial, 1);
	cr_expect_eq(res.missing_set, 1u << 3);
	isth_island_missing_str_at(ch, 2, rg.first_chunk, miss, sizeof(miss));
	cr_expect_str_eq(miss, "island 3 chunk 2");
	for (uint32_t i = 0; i < CE_PLAIN; i++) {
		cr_assert_eq(out[i], t[i] + sum_f32(PEERS, round, CE_PLAIN + i), "elem %u", i);
		cr_assert_eq(out[CE_PLAIN + i],
			t[CE_PLAIN + i] + sum_f32(1u << 0 | 1u << 2, round, 2 * CE_PLAIN + i),
			"elem %u", CE_PLAIN + i);
	}
	free(t);
	free(out);
	isth_island_close(s);
	close(fd);
}

/*
 * Host 1 of 2 (chunks 2-4 of 5) with receive threads on two sockets and
 * an edge sending two AGG streams (chunk c in stream c % 2, to socket
 * c % 2, numbered per host): each socket's thread sums its own stream's
 * chunks of the range, an AGG of host 0's chunk 1 is dropped as
 * agg_range, and the range's sums are exact.
 */
Test(island_hosts, receive_threads_sum_a_hosts_range)
{
	const uint32_t elems = 4 * CE_PLAIN + 50, round = 6;
	const struct fix_shape sh = {.n_chunks = NCH, .ce = CE_PLAIN, .elems = elems, .self = SELF};
	uint64_t seq[2] = {0, 0};
	struct isth_island_conf c;
	struct isth_island_range rg;
	struct isth_island_chunk ch[3];
	struct isth_island_result res;
	struct isth_island_stats st;
	struct isth_island *s;
	uint8_t buf[2048];
	uint32_t *t, *out;
	uint16_t eport;
	size_t n;
	int fd;

	fd = fix_udp_socket(&eport);
	c = conf_of(eport, elems, 2, 1);
	c.n_sockets = 2;
	c.rx_threads = true;
	s = open_conf(&c);
	isth_island_range(s, &rg);
	cr_assert_eq(rg.first_chunk, 2);
	cr_assert_eq(rg.n_chunks, 3);
	t = malloc((size_t)rg.n_elems * 4);
	out = malloc((size_t)rg.n_elems * 4);
	for (uint32_t i = 0; i < rg.n_elems; i++)
		t[i] = val_i32(SELF, round, rg.first_elem + i);
	n = fix_round(buf, &sh, round, 0, PEERS, PEERS | 1u << SELF, T0 + 100 * MS);
	buf[ISTH_WIRE_OFF_FLAGS] |= (uint8_t)(1u << 4); /* 2 streams: field 1 */
	send_to(fd, isth_island_socket_port(s, 0), buf, n);
	cr_assert_eq(isth_island_send(s, round, t, (size_t)rg.n_elems * 4), 0);
	/* Stream 1 exists once socket 0's thread took the ROUND. An AGG sent
	 * before could be read first by socket 1's thread and dropped
	 * (agg_stream: no ROUND announced it), and the result then waited
	 * on this test's clock, which does not move: the test hung on a
	 * loaded host. (An edge sends a round's AGGs a WAN round trip after
	 * its ROUND.) */
	POLL_UNTIL(s, st.rounds_announced == 1);
	for (uint32_t ck = 1; ck < NCH; ck++) {
		unsigned int k = ck % 2;

		n = fix_agg(buf, &sh, ISTH_WIRE_DTYPE_INT32, round, ck, PEERS, seq[k]++, 0);
		buf[ISTH_WIRE_OFF_FLAGS] |= (uint8_t)(k << 4);
		send_to(fd, isth_island_socket_port(s, k), buf, n);
	}
	cr_assert_eq(
		isth_island_result(s, round, out, (size_t)rg.n_elems * 4, ch, 3, &res, 2000 * MS),
		0);
	for (uint32_t j = 0; j < 3; j++) {
		uint32_t ck = 2 + j;

		cr_expect_eq(ch[j].bitmap, PEERS | 1u << SELF, "chunk %u", ck);
		for (uint32_t i = 0; i < ch[j].count; i++)
			cr_assert_eq(out[j * CE_PLAIN + i],
				sum_i32(PEERS | 1u << SELF, round, ck * CE_PLAIN + i),
				"chunk %u elem %u", ck, i);
	}
	isth_island_stats(s, &st);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_range], 1);
	cr_expect_eq(st.aggs_summed, 3);
	cr_expect_eq(st.sock_streams[0], 1u << 0);
	cr_expect_eq(st.sock_streams[1], 1u << 1);
	free(t);
	free(out);
	isth_island_close(s);
	close(fd);
}
