/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/sched tests: round trip through a file, queries, malformed files. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isth_sched.h"

static const char *names[4] = {"NYC", "LON", "TYO", "SIN"};

/* Two rounds: {NYC,LON} {TYO,SIN}, then {NYC,TYO,SIN} and LON alone (bye). */
static struct isth_sched *
build(void)
{
	struct isth_sched *s = isth_sched_new(4, names, 500000000, 0, 1000000000, 1048576, 0, 2);
	uint64_t r0[2] = {0x3, 0xc}, r1[2] = {0xd, 0x2};
	uint64_t rate = 100000000000ULL, rates[2] = {50000000000ULL, 100000000000ULL};
	/* 1e9 B = 8e9 bit: 100 ms at 50 Gbit/s carries 5e9 bit, 30 ms at 100 Gbit/s 3e9 */
	uint64_t durs[2] = {100000000, 30000000};

	cr_assert_not_null(s);
	cr_assert_eq(isth_sched_set_round(s, 0, 2, r0), 0);
	cr_assert_eq(isth_sched_set_round(s, 1, 2, r1), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(isth_sched_set_sender(s, 0, i, 1000 * (uint64_t)i, 1, NULL, &rate), 0);
	cr_assert_eq(isth_sched_set_sender(s, 1, 0, 5, 1, NULL, &rate), 0);
	cr_assert_eq(isth_sched_set_sender(s, 1, 2, 7, 2, durs, rates), 0);
	cr_assert_eq(isth_sched_set_sender(s, 1, 3, 0, 1, NULL, &rate), 0);
	return s;
}

static void
check(const struct isth_sched *s)
{
	uint64_t off, rate, dur;

	cr_assert_eq(isth_sched_n_islands(s), 4);
	cr_assert_str_eq(isth_sched_island_name(s, 2), "TYO");
	cr_assert_eq(isth_sched_island_id(s, "SIN"), 3);
	cr_assert_eq(isth_sched_island_id(s, "XXX"), -ENOENT);
	cr_assert_eq(isth_sched_n_rounds(s), 2);
	cr_assert_eq(isth_sched_round_ns(s), 500000000);
	cr_assert_eq(isth_sched_epoch_ns(s), 0);
	cr_assert_eq(isth_sched_payload_bytes(s), 1000000000);
	cr_assert_eq(isth_sched_chunk_bytes(s), 1048576);
	/* r is taken modulo the cycle, negative too */
	cr_assert_eq(isth_sched_clique(s, 0, 1), 0x3);
	cr_assert_eq(isth_sched_clique(s, 2, 1), 0x3);
	cr_assert_eq(isth_sched_clique(s, -1, 0), 0xd);
	cr_assert_eq(isth_sched_peers(s, 1, 0), 0xc);
	cr_assert_eq(isth_sched_peers(s, 1, 1), 0);
	cr_assert_eq(isth_sched_n_cliques(s, 3), 2);
	cr_assert_eq(isth_sched_sender(s, 0, 3, &off, &rate), 1);
	cr_assert_eq(off, 3000);
	cr_assert_eq(rate, 100000000000ULL);
	cr_assert_eq(isth_sched_sender(s, 1, 1, &off, &rate), -ENOENT);
	cr_assert_eq(isth_sched_sender(s, 1, 2, &off, &rate), 2);
	cr_assert_eq(off, 7);
	cr_assert_eq(isth_sched_segment(s, 1, 2, 1, &dur, &rate), 0);
	cr_assert_eq(dur, 30000000);
	cr_assert_eq(rate, 100000000000ULL);
	/* constant rate: one segment lasting 8e9 bit / 1e11 bit/s = 80 ms */
	cr_assert_eq(isth_sched_segment(s, 0, 0, 0, &dur, &rate), 0);
	cr_assert_eq(dur, 80000000);
	cr_assert_eq(isth_sched_segment(s, 0, 0, 1, &dur, &rate), -EINVAL);
}

Test(sched, round_trip)
{
	char path[] = "/tmp/isth-sched-test-XXXXXX", err[256] = "";
	int fd = mkstemp(path);
	struct isth_sched *s = build(), *l;
	uint64_t round, into;

	cr_assert_geq(fd, 0);
	close(fd);
	check(s);
	cr_assert_eq(isth_sched_save(s, path, err, sizeof(err)), 0, "%s", err);
	l = isth_sched_load(path, err, sizeof(err));
	cr_assert_not_null(l, "%s", err);
	check(l);
	/* 1.25 s after the epoch with T = 0.5 s: round 2 (cycle index 0), 250 ms in */
	isth_sched_round_at(l, 1250000000ULL, &round, &into);
	cr_assert_eq(round, 2);
	cr_assert_eq(into, 250000000ULL);
	isth_sched_free(l);
	isth_sched_free(s);
	unlink(path);
}

Test(sched, save_refuses_inconsistent)
{
	struct isth_sched *s = build();
	uint64_t rate =
		1000; /* 8e9 bit at 1 kbit/s takes 8e6 s = 8e15 ns: never fits a 0.5 s round;
	 * the send line is line 15 (magic, comment, islands, 4 names, 6 keys, round) */
	char err[256] = "";

	cr_assert_eq(isth_sched_set_sender(s, 0, 0, 0, 1, NULL, &rate), 0);
	cr_assert_eq(
		isth_sched_save(s, "/tmp/isth-sched-never-written", err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err,
		"<schedule being written>:15: stream of island 0 in round 0 ends at "
		"8000000000000000 ns, after round-ns 500000000");
	cr_assert_eq(access("/tmp/isth-sched-never-written", F_OK), -1);
	isth_sched_free(s);
	cr_assert_null(isth_sched_new(65, names, 1, 0, 1, 0, 0, 1));
	cr_assert_null(isth_sched_new(4, names, 0, 0, 1, 0, 0, 1));
}

#define HEAD \
	"isthmus-schedule 1\nislands 3\nisland 0 A\nisland 1 B\nisland 2 C\n" \
	"round-ns 1000\nepoch runtime\npayload-bytes 10\nchunk-bytes 0\nmemory-bytes 0\n"
/* a valid body: 80 bit at 1e9 bit/s = 80 ns */
#define BODY \
	"rounds 1\nround 0 0x7\nsend 0 0 0 1000000000\nsend 0 1 0 1000000000\n" \
	"send 0 2 0 1000000000\n"

#define V2HEAD \
	"isthmus-schedule 2\nislands 3\nisland 0 A\nisland 1 B\nisland 2 C\n" \
	"round-ns 1000\nepoch runtime\npayload-bytes 10\nchunk-bytes 0\nmemory-bytes 0\n"

#define V3HEAD \
	"isthmus-schedule 3\nislands 3\nisland 0 A\nisland 1 B\nisland 2 C\n" \
	"round-ns 1000\nepoch runtime\npayload-bytes 10\nchunk-bytes 0\nmemory-bytes 0\n"

#define V4HEAD \
	"isthmus-schedule 4\nislands 3\nisland 0 A\nisland 1 B\nisland 2 C\n" \
	"round-ns 1000\nepoch runtime\npayload-bytes 10\nchunk-bytes 0\nmemory-bytes 0\n"

struct badsched {
	const char *text;
	const char *err;
};

static const struct badsched bad[] = {
	/* version 2's peak-bytes: not in version 1, island in range, once each */
	{HEAD "peak-bytes 0 5\n",
		"f:11: 'peak-bytes' needs 'isthmus-schedule 2' or later on line 1"},
	{"isthmus-schedule 2\nislands 2\nisland 0 A\npeak-bytes 2 5\n",
		"f:4: peak-bytes: bad island '2'"},
	{"isthmus-schedule 2\nislands 2\npeak-bytes 1 5\npeak-bytes 1 6\n",
		"f:4: duplicate peak-bytes for island 1 (first on line 3)"},
	{"isthmus-schedule 2\nislands 2\npeak-bytes 1 x\n", "f:3: bad peak-bytes 'x'"},
	/* version 3's planned-for lines: not before 3, known values, once each */
	{V2HEAD "replication edge\n",
		"f:11: 'replication' needs 'isthmus-schedule 3' or later on line 1"},
	{HEAD "dtype fp32\n", "f:11: 'dtype' needs 'isthmus-schedule 3' or later on line 1"},
	{V3HEAD "replication multicast\n", "f:11: bad replication 'multicast' (edge or network)"},
	{V3HEAD "replication Edge\n", "f:11: bad replication 'Edge' (edge or network)"},
	{V3HEAD "replication\n", "f:11: unknown or malformed line 'replication'"},
	{V3HEAD "replication edge\nreplication network\n",
		"f:12: duplicate 'replication' (first on line 11)"},
	{V3HEAD "dtype float\n", "f:11: bad dtype 'float' (an element type: fp32, bf16 or int32)"},
	{V3HEAD "dtype none\n", "f:11: bad dtype 'none' (an element type: fp32, bf16 or int32)"},
	{V3HEAD "dtype 4\n", "f:11: bad dtype '4' (an element type: fp32, bf16 or int32)"},
	{V3HEAD "dtype fp32 int32\n", "f:11: unknown or malformed line 'dtype'"},
	{V3HEAD "dtype bf16\ndtype bf16\n", "f:12: duplicate 'dtype' (first on line 11)"},
	{V3HEAD BODY "replication edge\n", "f:16: unknown or malformed line 'replication'"},
	/* the expected loss: a decimal fraction 0 to 0.5, version 3, once */
	{V2HEAD "expected-loss 0.01\n",
		"f:11: 'expected-loss' needs 'isthmus-schedule 3' or later on line 1"},
	{V3HEAD "expected-loss 0.6\n",
		"f:11: bad expected-loss '0.6' (a fraction of the frames lost, 0 to 0.5)"},
	{V3HEAD "expected-loss -0.01\n",
		"f:11: bad expected-loss '-0.01' (a fraction of the frames lost, 0 to 0.5)"},
	{V3HEAD "expected-loss 1%\n",
		"f:11: bad expected-loss '1%' (a fraction of the frames lost, 0 to 0.5)"},
	{V3HEAD "expected-loss 0x0.1p0\n",
		"f:11: bad expected-loss '0x0.1p0' (a fraction of the frames lost, 0 to 0.5)"},
	{V3HEAD "expected-loss nan\n",
		"f:11: bad expected-loss 'nan' (a fraction of the frames lost, 0 to 0.5)"},
	{V3HEAD "expected-loss .\n",
		"f:11: bad expected-loss '.' (a fraction of the frames lost, 0 to 0.5)"},
	{V3HEAD "expected-loss\n", "f:11: unknown or malformed line 'expected-loss'"},
	{V3HEAD "expected-loss 0.01 0.02\n", "f:11: unknown or malformed line 'expected-loss'"},
	{V3HEAD "expected-loss 0.01\nexpected-loss 0.01\n",
		"f:12: duplicate 'expected-loss' (first on line 11)"},
	{V3HEAD BODY "expected-loss 0.01\n", "f:16: unknown or malformed line 'expected-loss'"},
	{"isthmus-schedule 5\n", "f:1: unsupported version '5' (this loader reads 1 to 4)"},
	/* version 4's tree lines: a spanning tree of a round of one clique of all */
	{V3HEAD BODY "tree 0 0 -,0,0\n",
		"f:16: 'tree' needs 'isthmus-schedule 4' or later on line 1"},
	{V4HEAD BODY "tree 0 0 -,0\n", "f:16: tree 0 0: 2 parents for 3 islands (not spanning)"},
	{V4HEAD BODY "tree 0 0 -,0,0,1\n", "f:16: tree 0 0: 4 parents for 3 islands"},
	{V4HEAD BODY "tree 0 0 -,0,3\n",
		"f:16: tree 0 0: bad parent list '-,0,3' (island ids and one '-')"},
	{V4HEAD BODY "tree 0 0 -,x,0\n",
		"f:16: tree 0 0: bad parent list '-,x,0' (island ids and one '-')"},
	{V4HEAD BODY "tree 0 0 -,,0\n",
		"f:16: tree 0 0: bad parent list '-,,0' (island ids and one '-')"},
	{V4HEAD BODY "tree 0 0 -,0,0,\n",
		"f:16: tree 0 0: bad parent list '-,0,0,' (island ids and one '-')"},
	{V4HEAD BODY "tree 0 0 -,0,-\n", "f:16: tree 0 0: two roots (islands 0 and 2)"},
	{V4HEAD BODY "tree 0 0 1,2,0\n", "f:16: tree 0 0: no root ('-'): a cycle"},
	{V4HEAD BODY "tree 0 0 -,2,1\n", "f:16: tree 0 0: cycle through island 1: not spanning"},
	{V4HEAD BODY "tree 0 0 -,1,0\n", "f:16: tree 0 0: cycle: island 1 is its own parent"},
	{V4HEAD BODY "tree 0 0 -,0,0\ntree 0 0 -,0,1\n",
		"f:17: tree 0 0: duplicate (first on line 16)"},
	{V4HEAD BODY "tree 0 1 -,0,0\n", "f:16: tree 0 1: out of order (expected tree 0)"},
	{V4HEAD BODY "tree 0 8 -,0,0\n", "f:16: tree: bad tree '8' (0..7)"},
	{V4HEAD BODY "tree 1 0 -,0,0\n", "f:16: tree: bad round '1' (a round defined above)"},
	{V4HEAD "rounds 1\ntree 0 0 -,0,0\n", "f:12: tree: bad round '0' (a round defined above)"},
	{V4HEAD "rounds 1\nround 0 0x3 0x4\ntree 0 0 -,0,0\n",
		"f:13: tree 0 0: a tree needs a round that is one clique of all islands"},
	{V4HEAD BODY "tree 0 0\n", "f:16: unknown or malformed line 'tree'"},
	/* version 2's route lines: a loop-free path inside the sender's clique, once */
	{HEAD BODY "route 0 0 1 0,1\n", "f:16: unknown or malformed line 'route'"},
	{V2HEAD BODY "route 1 0 1 0,1\n", "f:16: route: bad round '1' (a round defined above)"},
	{V2HEAD BODY "route 0 0 1 0,2\n",
		"f:16: route 0 0 1: path must run from the sender to the receiver"},
	{V2HEAD BODY "route 0 0 1 0,2,0,1\n", "f:16: route 0 0 1: path visits an island twice"},
	{V2HEAD BODY "route 0 0 1 0,,1\n", "f:16: route: bad path '0,,1'"},
	{V2HEAD BODY "route 0 0 1 0,1\nroute 0 0 1 0,2,1\n", "f:17: route 0 0 1: duplicate"},
	{"", "f:1: empty file"},
	{"isthmus-plan 1\n", "f:1: not a schedule file (expected 'isthmus-schedule 1')"},
	{HEAD BODY, "f:16: truncated: no 'end' line"},
	{HEAD BODY "end\nround 1 0x7\n", "f:17: content after 'end'"},
	{"isthmus-schedule 1\nislands 65\n", "f:2: bad islands '65' (1..64)"},
	{"isthmus-schedule 1\nislands 2\nisland 2 X\n", "f:3: island 2 out of range (0..1)"},
	{"isthmus-schedule 1\nislands 2\nisland 0 X\nisland 1 X\n",
		"f:4: duplicate island name 'X'"},
	{"isthmus-schedule 1\nislands 2\nisland 0 X\nrounds 1\n",
		"f:4: 'round-ns' missing before 'rounds'"},
	{"isthmus-schedule 1\nislands 2\nisland 0 X\nround-ns 1\nepoch runtime\npayload-bytes 1\n"
	 "chunk-bytes 0\nmemory-bytes 0\nrounds 1\n",
		"f:9: island 1 has no 'island' line"},
	{HEAD "rounds 1\nround 0 0x3 0x6\n", "f:12: cliques overlap: island 1 (B) in two cliques"},
	{HEAD "rounds 1\nround 0 0xf\n", "f:12: clique 0xf: island 3 out of range (0..2)"},
	{HEAD "rounds 1\nround 0 0x3\n", "f:12: not a partition: island 2 (C) in no clique"},
	{HEAD "rounds 1\nround 1 0x7\n", "f:12: round '1' out of order (expected 0)"},
	{HEAD "rounds 1\nround 0 zz\n", "f:12: bad clique bitmap 'zz'"},
	{HEAD "rounds 1\nround 0 0x7\nsend 0 0 1000 1000000000\n",
		"f:13: offset 1000 >= round-ns 1000"},
	{HEAD "rounds 1\nround 0 0x7\nsend 0 3 0 1000000000\n",
		"f:13: island 3 out of range (0..2)"},
	{HEAD "rounds 1\nround 0 0x7\nsend 0 0 0 0\n", "f:13: bad rate-bps '0' (must be > 0)"},
	{HEAD "rounds 1\nround 0 0x7\nsend 0 0 0 1000000000\nsend 0 0 1 1000000000\n",
		"f:14: duplicate send for island 0 in round 0 (first on line 13)"},
	{HEAD "rounds 1\nround 0 0x7\nsend 0 0 0 1000000000\nsend 0 1 0 1000000000\nend\n",
		"f:12: round 0: island 2 (C) has peers but no send line"},
	{HEAD "rounds 1\nround 0 0x3 0x4\nsend 0 2 0 1000000000\n",
		"f:13: island 2 sends in round 0 but has no peers"},
	{HEAD "rounds 2\nround 0 0x7\nsend 1 0 0 1000000000\n",
		"f:13: send for round 1 before its 'round' line"},
	{HEAD "rounds 1\nround 0 0x7\nsend 0 0 0 10000000\n",
		"f:13: stream of island 0 in round 0 ends at 8000 ns, after round-ns 1000"},
	{HEAD "rounds 1\nround 0 0x7\nsend 0 0 0 profile 10:1000000000\n",
		"f:13: profile of island 0 in round 0 carries 10 bits, payload needs 80"},
	{HEAD "rounds 1\nround 0 0x7\nsend 0 0 0 profile 10-1000\n",
		"f:13: bad profile segment '10-1000' (want <dur-ns>:<rate-bps>)"},
	{HEAD "rounds 2\nround 0 0x7\nsend 0 0 0 1000000000\nsend 0 1 0 1000000000\n"
	      "send 0 2 0 1000000000\nend\n",
		"f:16: only 1 of 2 rounds defined"},
	{HEAD "rounds 1\nround 0 0x7\nfrobnicate 1\n",
		"f:13: unknown or malformed line 'frobnicate'"},
	{HEAD "rounds 1\nend\n", "f:12: only 0 of 1 rounds defined"},
	{HEAD "rounds 1\nround 0 0x7\nsend 0 0 0\n",
		"f:13: expected 'send <round> <island> <offset-ns> <rate-bps>' or '... profile "
		"<dur-ns>:<rate-bps>,...'"},
};

Test(sched, malformed_files)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "";
		struct isth_sched *s;

		errno = 0;
		s = isth_sched_parse("f", bad[i].text, err, sizeof(err));
		cr_expect_null(s, "case %zu", i);
		cr_expect_eq(errno, EINVAL, "case %zu", i);
		cr_expect_str_eq(err, bad[i].err, "case %zu: %s", i, err);
		isth_sched_free(s);
	}
}

/* Values that cannot work are refused at load: a round longer
 * than an hour would overflow the data path's epoch + q * T. */
#define HEAD_T(T) \
	"isthmus-schedule 1\nislands 3\nisland 0 A\nisland 1 B\nisland 2 C\n" \
	"round-ns " T "\nepoch runtime\npayload-bytes 10\nchunk-bytes 0\nmemory-bytes 0\n"

Test(sched, round_ns_upper_bound)
{
	static const char *const abc[] = {"A", "B", "C"};
	char err[256] = "";
	struct isth_sched *s;

	s = isth_sched_parse("f", HEAD_T("18446744073709551615") BODY "end\n", err, sizeof(err));
	cr_expect_null(s);
	cr_expect_str_eq(err,
		"f:6: round-ns 18446744073709551615 out of range (1..3600000000000, "
		"one hour)");
	s = isth_sched_parse("f", HEAD_T("3600000000001") BODY "end\n", err, sizeof(err));
	cr_expect_null(s);
	cr_expect_str_eq(
		err, "f:6: round-ns 3600000000001 out of range (1..3600000000000, one hour)");
	/* exactly one hour is the largest accepted */
	s = isth_sched_parse("f", HEAD_T("3600000000000") BODY "end\n", err, sizeof(err));
	cr_expect_not_null(s, "%s", err);
	cr_expect_eq(isth_sched_round_ns(s), 3600000000000ULL);
	isth_sched_free(s);
	/* the writer refuses what the loader would */
	cr_expect_null(isth_sched_new(3, abc, 3600000000001ULL, 0, 1, 0, 0, 1));
	cr_expect_eq(errno, EINVAL);
}

Test(sched, crlf_and_bom_read_like_lf)
{
	char err[256] = "";
	struct isth_sched *s;

	s = isth_sched_parse("f",
		"\xEF\xBB\xBFisthmus-schedule 1\r\nislands 2\r\nisland 0 A\r\n"
		"island 1 B\r\nround-ns 10\r\nepoch runtime\r\npayload-bytes 1\r\n"
		"chunk-bytes 0\r\nmemory-bytes 0\r\nrounds 1\r\nround 0 0x1 0x2\r\n"
		"end\r\n",
		err, sizeof(err));
	cr_expect_not_null(s, "%s", err);
	isth_sched_free(s);
}

Test(sched, directory_refused)
{
	char err[256] = "";

	errno = 0;
	cr_expect_null(isth_sched_load("/", err, sizeof(err)));
	cr_expect_eq(errno, EISDIR);
	cr_expect_str_eq(err, "/: is a directory, not a file");
}

Test(sched, valid_minimal_with_comments_and_epoch)
{
	char err[256] = "";
	struct isth_sched *s =
		isth_sched_parse("f", "# a comment\n" HEAD BODY "end  # done\n", err, sizeof(err));

	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_peers(s, 5, 1), 0x5);
	isth_sched_free(s);
	s = isth_sched_parse("f",
		"isthmus-schedule 1\nislands 2\nisland 0 A\nisland 1 B\nround-ns 10\n"
		"epoch 1700000000000000000\npayload-bytes 1\nchunk-bytes 0\n"
		"memory-bytes 0\nrounds 1\nround 0 0x1 0x2\nend\n",
		err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_epoch_ns(s), 1700000000000000000ULL);
	cr_assert_eq(isth_sched_sender(s, 0, 0, NULL, NULL), -ENOENT);
	isth_sched_free(s);
}

/* Version 2 records each edge's peak memory with its line; version 1 has none;
 * a writer that sets a peak writes version 2, and it reads back. */
Test(sched, peak_memory_v2)
{
	char err[256] = "", path[] = "/tmp/isth-sched-peak-XXXXXX";
	struct isth_sched *s = isth_sched_parse("f",
		"isthmus-schedule 2\nislands 3\nisland 0 A\n"
		"island 1 B\nisland 2 C\nround-ns 1000\nepoch runtime\n"
		"payload-bytes 10\nchunk-bytes 0\nmemory-bytes 0\n"
		"peak-bytes 2 7\npeak-bytes 0 4\n" BODY "end\n",
		err, sizeof(err));
	uint64_t b = 0;
	int line = 0, fd;
	FILE *f;

	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_peak(s, 2, &b, &line), 0);
	cr_assert_eq(b, 7);
	cr_assert_eq(line, 11);
	cr_assert_eq(isth_sched_peak(s, 0, &b, &line), 0);
	cr_assert_eq(b, 4);
	cr_assert_eq(line, 12);
	cr_assert_eq(isth_sched_peak(s, 1, &b, NULL), -ENOENT);
	cr_assert_eq(isth_sched_peak(s, 3, &b, NULL), -EINVAL);
	cr_assert_eq(isth_sched_set_peak(s, 1, 9), 0);
	{
		int via[3] = {0, 2, 1}, loop[2] = {0, 0}, h[4];

		cr_assert_eq(isth_sched_set_route(s, 0, 0, 1, via, 3), 0);
		cr_assert_eq(isth_sched_set_route(s, 0, 0, 1, via, 3), -EEXIST);
		cr_assert_eq(isth_sched_set_route(s, 0, 0, 1, loop, 2), -EINVAL);
		cr_assert_eq(isth_sched_route(s, 0, 0, 1, h, 4), 3);
		cr_assert_eq(h[1], 2);
		cr_assert_eq(isth_sched_route(s, 0, 1, 0, h, 4), -ENOENT);
	}
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(isth_sched_save(s, path, err, sizeof(err)), 0, "%s", err);
	isth_sched_free(s);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(err, sizeof(err), f));
	cr_assert_str_eq(err, "isthmus-schedule 2\n");
	fclose(f);
	s = isth_sched_load(path, err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_peak(s, 1, &b, NULL), 0);
	cr_assert_eq(b, 9);
	{
		int h[4];

		/* the route read back from the file */
		cr_assert_eq(isth_sched_route(s, 0, 0, 1, h, 4), 3);
		cr_assert(h[0] == 0 && h[1] == 2 && h[2] == 1);
	}
	isth_sched_free(s);
	unlink(path);
	/* version 1 still loads, with no peaks */
	s = isth_sched_parse("f", HEAD BODY "end\n", err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_peak(s, 0, &b, NULL), -ENOENT);
	isth_sched_free(s);
}

/*
 * isth_sched_round_view(): one call gives what was set. Round 0: cliques
 * {0,1,2} and {3} (a bye); round 1: {0,1,2,3}, island 2 on a two-segment
 * profile. Expected values are the inputs, not the getters.
 */
Test(sched, round_view_is_what_was_set)
{
	uint64_t cl0[2] = {0x7, 0x8}, cl1 = 0xf, rate = 8000000000ull;
	uint64_t durs[2] = {300000, 700000}, rates[2] = {4000000000ull, 2000000000ull};
	struct isth_sched_round_view v;
	struct isth_sched *s = isth_sched_new(4, names, 500000000, 0, 1000000, 1024, 0, 2);

	cr_assert_not_null(s);
	cr_assert_eq(isth_sched_set_round(s, 0, 2, cl0), 0);
	cr_assert_eq(isth_sched_set_round(s, 1, 1, &cl1), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(
			isth_sched_set_sender(s, 0, i, 1000 * (uint64_t)(i + 1), 1, NULL, &rate),
			0);
	cr_assert_eq(isth_sched_set_sender(s, 1, 0, 5, 1, NULL, &rate), 0);
	cr_assert_eq(isth_sched_set_sender(s, 1, 1, 6, 1, NULL, &rate), 0);
	cr_assert_eq(isth_sched_set_sender(s, 1, 2, 7, 2, durs, rates), 0);
	cr_assert_eq(isth_sched_set_sender(s, 1, 3, 8, 1, NULL, &rate), 0);

	/* round 0 from island 1: peers 0 and 2 */
	cr_assert_eq(isth_sched_round_view(s, 0, 1, &v), 0);
	cr_expect_eq(v.round_ns, 500000000);
	cr_expect_eq(v.payload_bytes, 1000000);
	cr_expect_eq(v.clique, 0x7);
	cr_expect_eq(v.peers, 0x5);
	cr_assert_eq(v.n_peers, 2);
	cr_expect_eq(v.peer[0], 0);
	cr_expect_eq(v.peer[1], 2);
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(v.snd[i].offset_ns, 1000 * (uint64_t)(i + 1));
		cr_expect_eq(v.snd[i].rate_bps, rate);
		cr_expect_eq(v.snd[i].n_segs, 1);
	}
	cr_expect_eq(v.snd[3].n_segs, 0, "not in the clique");
	/* payload at the rate: 1e6 B * 8 / 8e9 bit/s = 1 ms */
	cr_expect_eq(v.seg[0].dur_ns, 1000000);
	cr_expect_eq(v.seg[0].rate_bps, rate);

	/* round 0 from island 3: a bye */
	cr_assert_eq(isth_sched_round_view(s, 0, 3, &v), 0);
	cr_expect_eq(v.clique, 0x8);
	cr_expect_eq(v.peers, 0);
	cr_expect_eq(v.n_peers, 0);
	cr_expect_eq(v.snd[3].n_segs, 0, "a bye sends nothing");

	/* round 3 = cycle round 1, from island 2: its profile */
	cr_assert_eq(isth_sched_round_view(s, 3, 2, &v), 0);
	cr_expect_eq(v.peers, 0xb);
	cr_assert_eq(v.n_peers, 3);
	cr_expect_eq(v.peer[2], 3);
	cr_expect_eq(v.snd[2].offset_ns, 7);
	cr_expect_eq(v.snd[2].n_segs, 2);
	cr_expect_eq(v.snd[2].rate_bps, rates[0]);
	cr_expect_eq(v.seg[0].dur_ns, durs[0]);
	cr_expect_eq(v.seg[1].dur_ns, durs[1]);
	cr_expect_eq(v.seg[1].rate_bps, rates[1]);
	cr_expect_eq(v.snd[3].offset_ns, 8);

	cr_expect_eq(isth_sched_round_view(s, 0, 4, &v), -EINVAL);
	cr_expect_eq(isth_sched_round_view(NULL, 0, 0, &v), -EINVAL);
	isth_sched_free(s);
}

/*
 * Numbers are decimal or 0x hex, never octal: "010" is ten.
 * Expected by hand: round-ns 0100 = 100 ns (octal would make it 64),
 * payload-bytes 010 = 10 B (80 bit), island 2's offset 010 = 10 ns, its
 * rate 080000000000 = 8e10 bit/s (no octal number at all), so its stream
 * ends at 10 + 80 / 8e10 s = 11 ns; the bitmap 0x7 still reads as hex.
 */
Test(sched, leading_zero_is_decimal)
{
	char err[256] = "";
	uint64_t off = 0, rate = 0;
	struct isth_sched *s = isth_sched_parse("f",
		"isthmus-schedule 1\nislands 3\nisland 0 A\nisland 1 B\nisland 2 C\n"
		"round-ns 0100\nepoch runtime\npayload-bytes 010\nchunk-bytes 0\n"
		"memory-bytes 0\nrounds 1\nround 0 0x7\nsend 0 0 0 80000000000\n"
		"send 0 1 0 80000000000\nsend 0 2 010 080000000000\nend\n",
		err, sizeof(err));

	cr_assert_not_null(s, "%s", err);
	cr_expect_eq(isth_sched_round_ns(s), 100);
	cr_expect_eq(isth_sched_payload_bytes(s), 10);
	cr_expect_eq(isth_sched_clique(s, 0, 0), 7);
	cr_assert_eq(isth_sched_sender(s, 0, 2, &off, &rate), 1);
	cr_expect_eq(off, 10);
	cr_expect_eq(rate, 80000000000ULL);
	isth_sched_free(s);
	/* BODY's 80 bit at 1 Gbit/s take 80 ns: they fit 0100 = 100 ns (not 64) */
	s = isth_sched_parse("f", HEAD_T("0100") BODY "end\n", err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_expect_eq(isth_sched_round_ns(s), 100);
	isth_sched_free(s);
}

/* A route line before any round line names no round (was: read out of bounds). */
Test(sched, route_before_any_round)
{
	char err[256] = "";
	struct isth_sched *s =
		isth_sched_parse("f", V2HEAD "rounds 1\nroute 0 0 1 0,1\n", err, sizeof(err));

	cr_expect_null(s);
	cr_expect_str_eq(err, "f:12: route: bad round '0' (a round defined above)");
}

/* isth_sched_set_note(): one comment line after the magic, skipped by the loader. */
Test(sched, note_after_magic)
{
	char path[] = "/tmp/isth-sched-note-XXXXXX", err[256] = "", line[256];
	struct isth_sched *s = build(), *l;
	int fd = mkstemp(path);
	FILE *f;

	cr_assert_geq(fd, 0);
	close(fd);
	cr_expect_eq(isth_sched_set_note(s, "two\nlines"), -EINVAL);
	cr_assert_eq(isth_sched_set_note(s, "planned at 0.8"), 0);
	cr_assert_eq(isth_sched_save(s, path, err, sizeof(err)), 0, "%s", err);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_expect_str_eq(line, "isthmus-schedule 1\n");
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_expect_str_eq(line, "# planned at 0.8\n");
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_expect_str_eq(line, "# written by isthmus; format: doc/schedule-file.md\n");
	fclose(f);
	l = isth_sched_load(path, err, sizeof(err));
	cr_assert_not_null(l, "%s", err);
	check(l);
	isth_sched_free(l);
	isth_sched_free(s);
	unlink(path);
}

/*
 * Version 3 says what the plan was made for: read with the lines that gave
 * it, absent ("unstated") in older files, and written (as version 3, only
 * then) by a writer that sets it, reading back the same.
 */
Test(sched, planned_for_v3)
{
	char err[256] = "", path[] = "/tmp/isth-sched-planned-XXXXXX";
	struct isth_sched *s = isth_sched_parse(
		"f", V3HEAD "dtype bf16\nreplication network\n" BODY "end\n", err, sizeof(err));
	int line = -1, fd;
	FILE *f;

	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_replication(s, &line), ISTH_SCHED_REPL_NETWORK);
	cr_assert_eq(line, 12);
	cr_assert_str_eq(isth_sched_dtype(s, &line), "bf16");
	cr_assert_eq(line, 11);
	isth_sched_free(s);

	/* older and hand-written files: unstated, line 0 */
	s = isth_sched_parse("f", HEAD BODY "end\n", err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_replication(s, &line), ISTH_SCHED_REPL_UNSTATED);
	cr_assert_eq(line, 0);
	cr_assert_null(isth_sched_dtype(s, &line));
	cr_assert_str_eq(isth_sched_repl_name(ISTH_SCHED_REPL_UNSTATED), "unstated");
	isth_sched_free(s);

	/* the writer: version 1 without them, 3 with them */
	s = build();
	cr_assert_eq(isth_sched_set_dtype(s, "float"), -EINVAL);
	cr_assert_eq(isth_sched_set_dtype(s, "none"), -EINVAL);
	cr_assert_eq(isth_sched_set_replication(s, (enum isth_sched_repl)7), -EINVAL);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(isth_sched_save(s, path, err, sizeof(err)), 0, "%s", err);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(err, sizeof(err), f));
	cr_assert_str_eq(err, "isthmus-schedule 1\n");
	fclose(f);
	cr_assert_eq(isth_sched_set_replication(s, ISTH_SCHED_REPL_EDGE), 0);
	cr_assert_eq(isth_sched_set_dtype(s, "int32"), 0);
	cr_assert_eq(isth_sched_save(s, path, err, sizeof(err)), 0, "%s", err);
	isth_sched_free(s);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	{
		char line_buf[128];
		int magic = 0, repl = 0, dtype = 0;

		while (fgets(line_buf, sizeof(line_buf), f)) {
			magic += strcmp(line_buf, "isthmus-schedule 3\n") == 0;
			repl += strcmp(line_buf, "replication edge\n") == 0;
			dtype += strcmp(line_buf, "dtype int32\n") == 0;
		}
		cr_assert(magic == 1 && repl == 1 && dtype == 1, "magic %d repl %d dtype %d", magic,
			repl, dtype);
	}
	fclose(f);
	s = isth_sched_load(path, err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_replication(s, &line), ISTH_SCHED_REPL_EDGE);
	cr_assert_gt(line, 1);
	cr_assert_str_eq(isth_sched_dtype(s, NULL), "int32");
	check(s);
	/* removing them again */
	cr_assert_eq(isth_sched_set_replication(s, ISTH_SCHED_REPL_UNSTATED), 0);
	cr_assert_eq(isth_sched_set_dtype(s, NULL), 0);
	cr_assert_null(isth_sched_dtype(s, NULL));
	isth_sched_free(s);
	unlink(path);
}

/*
 * The expected loss (version 3 'expected-loss'): read with its line, absent
 * in older files, written in the fewest digits that read back as the same
 * double, and enough on its own to make the file version 3.
 */
Test(sched, expected_loss_v3)
{
	char err[256] = "", path[] = "/tmp/isth-sched-loss-XXXXXX", buf[128], exp[64];
	struct isth_sched *s =
		isth_sched_parse("f", V3HEAD "expected-loss 0.05\n" BODY "end\n", err, sizeof(err));
	int line = -1, fd, n;
	/* 0.1 + 0.2 is not 0.3 in binary: 17 digits are needed to keep it */
	/* -0 is 0, written as such (a '-0' in a file would read as a sign) */
	const double vals[] = {0, 0.01, 0.5, 1e-4, 0.1 + 0.2 - 0.29999, -0.0};
	const char *want[] = {"0", "0.01", "0.5", "0.0001", NULL, "0"};
	FILE *f;

	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_expected_loss(s, &line), 0.05);
	cr_assert_eq(line, 11);
	isth_sched_free(s);
	/* 0 and the bound are values, and an exponent is a decimal too */
	s = isth_sched_parse("f", V3HEAD "expected-loss 5e-1\n" BODY "end\n", err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_expected_loss(s, NULL), 0.5);
	isth_sched_free(s);
	s = isth_sched_parse("f", V3HEAD "expected-loss -0\n" BODY "end\n", err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_assert(!signbit(isth_sched_expected_loss(s, NULL)), "-0 read as -0");
	isth_sched_free(s);
	/* older files: unstated, line 0 */
	s = isth_sched_parse("f", HEAD BODY "end\n", err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_assert_eq(isth_sched_expected_loss(s, &line), ISTH_SCHED_LOSS_UNSTATED);
	cr_assert_eq(line, 0);
	isth_sched_free(s);

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	for (n = 0; n < (int)(sizeof(vals) / sizeof(vals[0])); n++) {
		int v3 = 0, lines = 0;

		s = build();
		cr_assert_eq(isth_sched_expected_loss(s, NULL), ISTH_SCHED_LOSS_UNSTATED);
		cr_assert_eq(isth_sched_set_expected_loss(s, -0.1), -EINVAL);
		cr_assert_eq(isth_sched_set_expected_loss(s, 0.51), -EINVAL);
		cr_assert_eq(isth_sched_set_expected_loss(s, NAN), -EINVAL);
		cr_assert_eq(isth_sched_set_expected_loss(s, vals[n]), 0);
		cr_assert_eq(isth_sched_save(s, path, err, sizeof(err)), 0, "%s", err);
		isth_sched_free(s);
		f = fopen(path, "r");
		cr_assert_not_null(f);
		while (fgets(buf, sizeof(buf), f)) {
			v3 += strcmp(buf, "isthmus-schedule 3\n") == 0;
			if (strncmp(buf, "expected-loss ", 14) == 0) {
				lines++;
				if (want[n] == NULL)
					continue;
				snprintf(exp, sizeof(exp), "expected-loss %s\n", want[n]);
				cr_assert_str_eq(buf, exp);
			}
		}
		fclose(f);
		cr_assert(v3 == 1 && lines == 1, "value %d: magic 3 %d, lines %d", n, v3, lines);
		s = isth_sched_load(path, err, sizeof(err));
		cr_assert_not_null(s, "%s", err);
		cr_assert_eq(isth_sched_expected_loss(s, &line), vals[n],
			"value %d read back %.17g", n, isth_sched_expected_loss(s, NULL));
		cr_assert_gt(line, 1);
		check(s);
		/* removed again: no line, version 1 */
		cr_assert_eq(isth_sched_set_expected_loss(s, ISTH_SCHED_LOSS_UNSTATED), 0);
		cr_assert_eq(isth_sched_save(s, path, err, sizeof(err)), 0, "%s", err);
		isth_sched_free(s);
		f = fopen(path, "r");
		cr_assert_not_null(f);
		cr_assert_not_null(fgets(buf, sizeof(buf), f));
		cr_assert_str_eq(buf, "isthmus-schedule 1\n");
		fclose(f);
	}
	unlink(path);
}

/*
 * Reduction trees (version 4): what is set is what is written and read
 * back, chunk c rides tree c mod k, and the writer uses version 4 only
 * when a round has a tree.
 */
Test(sched, trees_v4_round_trip)
{
	char err[256] = "", path[] = "/tmp/isth-sched-tree-XXXXXX", line_buf[128];
	struct isth_sched *s = build(), *l;
	uint64_t all = 0xf, rate = 100000000000ULL;
	/* tree 0 rooted at NYC: LON under NYC, TYO and SIN under LON;
	 * tree 1 rooted at SIN: a chain NYC -> LON -> TYO -> SIN */
	const int t0[4] = {-1, 0, 1, 1}, t1[4] = {1, 2, 3, -1};
	int par[4], line = -1, fd, lines = 0, magic = 0;
	struct isth_sched_round_view v;
	FILE *f;

	/* round 0 is two cliques: no tree there */
	cr_assert_eq(isth_sched_set_tree(s, 0, 0, t0), -EINVAL);
	cr_assert_eq(isth_sched_set_round(s, 0, 1, &all), 0);
	cr_assert_eq(isth_sched_set_tree(s, 0, 1, t1), -EINVAL, "out of order");
	cr_assert_eq(isth_sched_set_tree(s, 0, 0, t1), 0);
	cr_assert_eq(isth_sched_set_tree(s, 0, 0, t0), 0, "replacing tree 0");
	cr_assert_eq(isth_sched_set_tree(s, 0, 1, t1), 0);
	{
		const int two_roots[4] = {-1, 0, -1, 2}, cycle[4] = {-1, 2, 3, 1},
			  range[4] = {-1, 0, 4, 0}, self[4] = {-1, 1, 0, 0};

		cr_assert_eq(isth_sched_set_tree(s, 0, 2, two_roots), -EINVAL);
		cr_assert_eq(isth_sched_set_tree(s, 0, 2, cycle), -EINVAL);
		cr_assert_eq(isth_sched_set_tree(s, 0, 2, range), -EINVAL);
		cr_assert_eq(isth_sched_set_tree(s, 0, 2, self), -EINVAL);
		cr_assert_eq(isth_sched_set_tree(s, 0, ISTH_SCHED_MAX_TREES, t0), -EINVAL);
		cr_assert_eq(isth_sched_set_tree(s, 2, 0, t0), -EINVAL);
	}
	cr_assert_eq(isth_sched_n_trees(s, 0), 2);
	cr_assert_eq(isth_sched_n_trees(s, 1), 0);
	/* round 0 is now one clique: every island sends */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(isth_sched_set_sender(s, 0, i, 0, 1, NULL, &rate), 0);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(isth_sched_save(s, path, err, sizeof(err)), 0, "%s", err);
	isth_sched_free(s);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	while (fgets(line_buf, sizeof(line_buf), f)) {
		magic += strcmp(line_buf, "isthmus-schedule 4\n") == 0;
		lines += strcmp(line_buf, "tree 0 0 -,0,1,1\n") == 0;
		lines += strcmp(line_buf, "tree 0 1 1,2,3,-\n") == 0;
	}
	fclose(f);
	cr_assert(magic == 1 && lines == 2, "magic %d tree lines %d", magic, lines);

	l = isth_sched_load(path, err, sizeof(err));
	unlink(path);
	cr_assert_not_null(l, "%s", err);
	cr_assert_eq(isth_sched_n_trees(l, 0), 2);
	cr_assert_eq(isth_sched_n_trees(l, 2), 2, "modulo the cycle");
	cr_assert_eq(isth_sched_n_trees(l, 1), 0);
	cr_assert_eq(isth_sched_tree(l, 0, 0, par, &line), 0);
	cr_assert_arr_eq(par, t0, sizeof(t0));
	cr_assert_gt(line, 1);
	cr_assert_eq(isth_sched_tree(l, 0, 1, par, NULL), 0);
	cr_assert_arr_eq(par, t1, sizeof(t1));
	cr_assert_eq(isth_sched_tree(l, 0, 2, par, NULL), -EINVAL);
	cr_assert_eq(isth_sched_tree(l, 1, 0, par, NULL), -EINVAL);
	cr_assert_eq(isth_sched_tree_of_chunk(l, 0, 0), 0);
	cr_assert_eq(isth_sched_tree_of_chunk(l, 0, 7), 1);
	cr_assert_eq(isth_sched_tree_of_chunk(l, 0, 4096), 0);
	cr_assert_eq(isth_sched_tree_of_chunk(l, 1, 3), -ENOENT);
	/* the view: LON's parent is NYC in tree 0 (children TYO, SIN), TYO in tree 1 (child NYC) */
	cr_assert_eq(isth_sched_round_view(l, 0, 1, &v), 0);
	cr_assert_eq(v.n_trees, 2);
	cr_assert_eq(v.tree_parent[0], 0);
	cr_assert_eq(v.tree_children[0], 0xc);
	cr_assert_eq(v.tree_parent[1], 2);
	cr_assert_eq(v.tree_children[1], 0x1);
	cr_assert_eq(isth_sched_round_view(l, 0, 3, &v), 0);
	cr_assert_eq(v.tree_parent[1], -1);
	cr_assert_eq(v.tree_children[1], 0x4);
	cr_assert_eq(isth_sched_round_view(l, 1, 3, &v), 0);
	cr_assert_eq(v.n_trees, 0);
	/* a new partition drops the round's trees */
	cr_assert_eq(isth_sched_set_round(l, 0, 1, &all), 0);
	cr_assert_eq(isth_sched_n_trees(l, 0), 0);
	isth_sched_free(l);
}
