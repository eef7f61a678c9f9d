/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/topo input validation: each case is a file a person could write, with
 * the exact message it must get (doc/planner.md, "Accepted ranges"). The accepted
 * ranges are those of doc/planner.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "isth_test_tmpdir.h"
#include "isth_topo.h"

#define SITES_HDR "site,region,city\n"
#define LINKS_HDR "a,b,one_way_ms,capacity_gbps,source\n"
#define LINKS_HDR4 "a,b,one_way_ms,capacity_gbps\n"
#define S3 SITES_HDR "A,R,a\nB,R,b\nC,R,c\n"
#define L3 "A,B,1,10\nB,C,1,10\n"

struct bad {
	const char *sites;
	const char *links;
	const char *err;
};

static const struct bad bad[] = {
	/* a decimal comma splits a number into two fields */
	{S3, LINKS_HDR4 "A,B,33,669,100\n",
		"l.csv:2: 5 fields but the header has 4 (a decimal comma? write 33.669, not "
		"33,669; "
		"quote text that holds commas)"},
	{S3, LINKS_HDR "A,B,33,669,100,measured\n",
		"l.csv:2: 6 fields but the header has 5 (a decimal comma? write 33.669, not "
		"33,669; "
		"quote text that holds commas)"},
	{S3, LINKS_HDR "A,B,33,669,100\n",
		"l.csv:2: source '100' is a number: a decimal comma in one_way_ms or "
		"capacity_gbps? "
		"(write 33.669, not 33,669)"},
	/* more fields than the header */
	{SITES_HDR "A,R,a,extra\nB,R,b\n", LINKS_HDR "A,B,1,10\n",
		"s.csv:2: 4 fields but the header has 3 (a decimal comma? write 33.669, not "
		"33,669; "
		"quote text that holds commas)"},
	{"site,region\nA,R,a\nB,R\n", LINKS_HDR "A,B,1,10\n",
		"s.csv:2: 3 fields but the header has 2 (a decimal comma? write 33.669, not "
		"33,669; "
		"quote text that holds commas)"},
	{"site,region,city,country\nA,R,a,x\n", LINKS_HDR,
		"s.csv:1: expected header 'site,region[,city]'"},
	{S3, "a,b,one_way_ms,capacity_gbps,source,owner\n",
		"l.csv:1: expected header 'a,b,one_way_ms,capacity_gbps[,source]'"},
	/* absurd magnitudes */
	{S3,
		LINKS_HDR4 "A,B,1e308,10\n"
			   "B,C,1,10\n",
		"l.csv:2: one_way_ms 1e308 out of range [0, 10000]"},
	{S3, LINKS_HDR4 "A,B,10000.5,10\n", "l.csv:2: one_way_ms 10000.5 out of range [0, 10000]"},
	{S3, LINKS_HDR4 "A,B,1,1e-300\n",
		"l.csv:2: capacity_gbps 1e-300 out of range [0.001, 1e+06]"},
	{S3, LINKS_HDR4 "A,B,1,0.0009\n",
		"l.csv:2: capacity_gbps 0.0009 out of range [0.001, 1e+06]"},
	{S3, LINKS_HDR4 "A,B,1,2e6\n", "l.csv:2: capacity_gbps 2e6 out of range [0.001, 1e+06]"},
	{S3, LINKS_HDR4 "A,B,inf,10\n", "l.csv:2: bad one_way_ms 'inf'"},
	{S3, LINKS_HDR4 "A,B,1,nan\n", "l.csv:2: bad capacity_gbps 'nan'"},
	/* an empty file has no line to name */
	{S3, "", "l.csv: empty file (expected header 'a,b,one_way_ms,capacity_gbps[,source]')"},
};

Test(topo, bad_input_table)
{
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[512] = "";
		struct isth_topo *t;

		errno = 0;
		t = isth_topo_parse("s.csv", bad[i].sites, "l.csv", bad[i].links, err, sizeof(err));
		cr_expect_null(t, "case %zu accepted", i);
		cr_expect_eq(errno, EINVAL, "case %zu", i);
		cr_expect_str_eq(err, bad[i].err, "case %zu", i);
		isth_topo_free(t);
	}
}

Test(topo, range_edges_accepted)
{
	char err[256] = "";
	struct isth_topo *t;
	double cap;

	/* the bounds themselves are inside; a quoted field keeps its comma */
	t = isth_topo_parse("s.csv", "site,region,city\nA,R,\"Washington, D.C.\"\nB,R,b\nC,R,c\n",
		"l.csv", LINKS_HDR "A,B,10000,0.001,x\nB,C,0,1e6,\"a, b\"\n", err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_expect_float_eq(isth_topo_latency(t, 0, 2), 10000.0, 1e-9);
	cr_assert_eq(isth_topo_dlink(t, 2, NULL, NULL, NULL, &cap), 0);
	cr_expect_float_eq(cap, 1e15, 1, "1e6 Gbit/s");
	isth_topo_free(t);
}

/* Sites by name: the index the files gave them, -1 for any other name. */
Test(topo, find_by_name)
{
	char err[256] = "";
	struct isth_topo *t;

	t = isth_topo_parse("s.csv", "site,region\nA,R\nB-2,R\nC,S\n", "l.csv",
		LINKS_HDR "A,B-2,1,1\nB-2,C,1,1\n", err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_expect_eq(isth_topo_find(t, "A"), 0);
	cr_expect_eq(isth_topo_find(t, "B-2"), 1);
	cr_expect_eq(isth_topo_find(t, "C"), 2);
	cr_expect_eq(isth_topo_find(t, "B"), -1);
	cr_expect_eq(isth_topo_find(t, "a"), -1, "names are case-sensitive");
	cr_expect_eq(isth_topo_find(t, NULL), -1);
	cr_expect_eq(isth_topo_find(NULL, "A"), -1);
	isth_topo_free(t);
}

Test(topo, long_line)
{
	char links[4096], err[256] = "";
	size_t o = snprintf(links, sizeof(links), LINKS_HDR "A,B,1,10,");

	memset(links + o, 'x', 2000);
	snprintf(links + o + 2000, sizeof(links) - o - 2000, "\nB,C,1,10\n");
	cr_expect_null(isth_topo_parse("s.csv", S3, "l.csv", links, err, sizeof(err)));
	cr_expect_str_eq(err, "l.csv:2: line too long (at most 1023 bytes)");
}

/* ---- files: a directory, a BOM, CRLF ---- */

static char dir[64];

static void
mkdir_run(void)
{
	cr_assert_eq(isth_test_tmpdir_make(dir, sizeof(dir), "topo-test"), 0);
}

static void
rm_run(void)
{
	cr_expect_eq(isth_test_tmpdir_remove(dir), 0);
}

TestSuite(topo_files, .init = mkdir_run, .fini = rm_run);

static void
put(const char *name, const char *data, char *path, size_t len)
{
	cr_assert_eq(isth_test_tmpdir_put(dir, name, data, strlen(data), path, len), 0);
}

Test(topo_files, directory_refused)
{
	char links[128], err[256] = "", want[256];

	put("l.csv", LINKS_HDR L3, links, sizeof(links));
	errno = 0;
	cr_expect_null(isth_topo_load(dir, links, err, sizeof(err)));
	cr_expect_eq(errno, EISDIR);
	snprintf(want, sizeof(want), "%s: is a directory, not a file", dir);
	cr_expect_str_eq(err, want);
}

Test(topo_files, bom_and_crlf_read_like_plain)
{
	char s1[128], l1[128], s2[128], l2[128], err[256] = "";
	struct isth_topo *a, *b;
	int i;

	put("s1.csv", S3, s1, sizeof(s1));
	put("l1.csv", LINKS_HDR L3, l1, sizeof(l1));
	/* what a spreadsheet exports: BOM, CRLF */
	put("s2.csv",
		"\xEF\xBB\xBF"
		"site,region,city\r\nA,R,a\r\nB,R,b\r\nC,R,c\r\n",
		s2, sizeof(s2));
	put("l2.csv",
		"\xEF\xBB\xBF"
		"a,b,one_way_ms,capacity_gbps,source\r\nA,B,1,10\r\nB,C,1,10",
		l2, sizeof(l2));
	a = isth_topo_load(s1, l1, err, sizeof(err));
	cr_assert_not_null(a, "%s", err);
	b = isth_topo_load(s2, l2, err, sizeof(err));
	cr_assert_not_null(b, "%s", err);
	cr_assert_eq(isth_topo_n(b), 3);
	cr_assert_eq(isth_topo_ndlinks(b), 4);
	for (i = 0; i < 3; i++)
		cr_expect_str_eq(isth_topo_name(b, i), isth_topo_name(a, i));
	cr_expect_float_eq(isth_topo_latency(b, 0, 2), 2.0, 1e-12);
	isth_topo_free(a);
	isth_topo_free(b);
}
