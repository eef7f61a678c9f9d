/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/text: the size convention as a table (expected values written as
 * products of the powers the convention names, not by the parser's own
 * tables), and the reader on files written here: BOM, directory, empty,
 * CRLF, no final newline, NUL byte, a line of 1 MiB.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "isth_test_tmpdir.h"
#include "isth_text.h"

#define KB 1000ull
#define KiB 1024ull

Test(text, size_table)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{"0", 0},
		{"7", 7},
		{"7B", 7},
		{"010", 10}, /* decimal, not octal */
		{"1K", KB},
		{"1KB", KB},
		{"1Ki", KiB},
		{"1KiB", KiB},
		{"32G", 32 * KB * KB * KB},
		{"32GB", 32 * KB * KB * KB},
		{"32Gi", 32 * KiB * KiB * KiB},
		{"64Mi", 64 * KiB * KiB},
		{"130K", 130 * KB},
		{"1.3G", 13 * KB * KB * 100},
		{"1.5Mi", 3 * KiB * KiB / 2},
		{"0.5Ki", 512},
		{"2T", 2 * KB * KB * KB * KB},
		{"1Ti", KiB * KiB * KiB * KiB},
		{"18446744073709551615", UINT64_MAX},
		{"16777215Ti", 16777215ull * KiB * KiB * KiB * KiB},
	};
	static const char *const bad[] = {
		"",
		" 1",
		"1 ",
		"1 K",
		"K",
		"B",
		"Ki",
		"-1",
		"+1",
		"-0",
		"1X",
		"1Gx",
		"1GiBB",
		"1k",
		"1g",
		"1E",
		"1Ei",
		"1e9",
		"1e300T",
		"inf",
		"nan",
		"infinity",
		"0x10",
		"1.5",
		"1.",
		".5K",
		"1.0001K",
		"1.2.3",
		"1,5K",
		"33,669,100",
		"18446744073709551616",
		"16777216Ti",
		"99999999999999999999999",
		"20000000T",
		"0.0000000000000000001K",
	};
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 12345;
		cr_expect_eq(isth_text_parse_size(ok[i].s, &v), 0, "'%s' refused", ok[i].s);
		cr_expect_eq(v, ok[i].v, "'%s' = %llu, want %llu", ok[i].s, (unsigned long long)v,
			(unsigned long long)ok[i].v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 12345;
		cr_expect_eq(isth_text_parse_size(bad[i], &v), -EINVAL, "'%s' accepted", bad[i]);
		cr_expect_eq(v, 12345, "'%s' wrote the output on failure", bad[i]);
	}
	cr_expect_eq(isth_text_parse_size(NULL, &v), -EINVAL);
}

Test(text, seterr_format)
{
	char err[64];

	cr_expect_eq(isth_text_seterr(err, sizeof(err), "a.csv", 3, 7, "bad %s", "x"), -EINVAL);
	cr_expect_str_eq(err, "a.csv:3:7: bad x");
	isth_text_seterr(err, sizeof(err), "a.csv", 3, 0, "bad");
	cr_expect_str_eq(err, "a.csv:3: bad");
	isth_text_seterr(err, sizeof(err), "a.csv", 0, 0, "bad");
	cr_expect_str_eq(err, "a.csv: bad");
	cr_expect_eq(isth_text_seterr(NULL, 0, "a", 1, 1, "x"), -EINVAL);
	/* truncation keeps the NUL */
	isth_text_seterr(err, 8, "abcdefgh", 1, 0, "x");
	cr_expect_str_eq(err, "abcdefg");
}

Test(text, valid_name)
{
	static const struct {
		const char *s;
		bool ok;
	} t[] = {
		{"NYC", true},
		{"w_1.a-B", true},
		{"a", true},
		{"", false},
		{"a b", false},
		{"a,b", false},
		{"é", false},
		{"1234567", true},
		{"12345678", false},
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		cr_expect_eq(isth_text_valid_name(t[i].s, 8), t[i].ok, "'%s'", t[i].s);
	cr_expect(!isth_text_valid_name(NULL, 8));
}

Test(text, tokens_and_comments)
{
	char line[] = "  send 1\t2  3 # four five";
	char *tok[4];

	isth_text_strip_comment(line, '#');
	cr_assert_eq(isth_text_tokens(line, tok, 4), 4);
	cr_expect_str_eq(tok[0], "send");
	cr_expect_str_eq(tok[3], "3");
	{
		char l2[] = "a b c d e";

		cr_expect_eq(isth_text_tokens(l2, tok, 4), 5, "more than max is max + 1");
	}
	{
		char l3[] = " \t x y \r\n";

		cr_expect_str_eq(isth_text_trim(l3), "x y");
	}
}

/* ---- the reader, on files in a directory unique to this run ---- */

static char dir[64];

static void
mkdir_run(void)
{
	cr_assert_eq(isth_test_tmpdir_make(dir, sizeof(dir), "text-test"), 0);
}

static void
rm_run(void)
{
	cr_expect_eq(isth_test_tmpdir_remove(dir), 0);
}

static const char *
put(const char *name, const char *data, size_t len)
{
	static char path[128];

	cr_assert_eq(isth_test_tmpdir_put(dir, name, data, len, path, sizeof(path)), 0);
	return path;
}

TestSuite(reader, .init = mkdir_run, .fini = rm_run);

/* all lines of @p text, "|"-joined, with the number of the last */
static void
join_lines(const char *text, char *out, size_t size, unsigned int *last)
{
	struct isth_text_lines it;
	const char *s;
	size_t l, o = 0;

	out[0] = '\0';
	isth_text_lines_init(&it, text);
	while (isth_text_next(&it, &s, &l))
		o += snprintf(out + o, size - o, "%s%.*s", o ? "|" : "", (int)l, s);
	*last = it.line;
}

Test(reader, bom_is_stripped)
{
	static const char data[] = "\xEF\xBB\xBFsite,region\nNYC,us\n";
	char err[256], joined[64];
	unsigned int last;
	size_t len = 99;
	char *t;

	t = isth_text_read(put("bom.csv", data, sizeof(data) - 1), 0, &len, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_expect_str_eq(t, "site,region\nNYC,us\n");
	cr_expect_eq(len, sizeof(data) - 1 - 3);
	free(t);
	/* the iterator skips it too, for text that did not come from a file */
	join_lines(data, joined, sizeof(joined), &last);
	cr_expect_str_eq(joined, "site,region|NYC,us");
	cr_expect_eq(last, 2);
}

Test(reader, directory_refused)
{
	char err[256], want[256];

	errno = 0;
	cr_expect_null(isth_text_read(dir, 0, NULL, err, sizeof(err)));
	cr_expect_eq(errno, EISDIR);
	snprintf(want, sizeof(want), "%s: is a directory, not a file", dir);
	cr_expect_str_eq(err, want);
}

Test(reader, missing_file)
{
	char err[256], path[128], want[256];

	snprintf(path, sizeof(path), "%s/absent", dir);
	errno = 0;
	cr_expect_null(isth_text_read(path, 0, NULL, err, sizeof(err)));
	cr_expect_eq(errno, ENOENT);
	snprintf(want, sizeof(want), "%s: %s", path, strerror(ENOENT));
	cr_expect_str_eq(err, want);
}

Test(reader, empty_file)
{
	char err[256], joined[8];
	unsigned int last;
	size_t len = 99;
	char *t;

	t = isth_text_read(put("empty", "", 0), 0, &len, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_expect_str_eq(t, "");
	cr_expect_eq(len, 0);
	join_lines(t, joined, sizeof(joined), &last);
	cr_expect_eq(last, 0, "an empty file has no lines");
	free(t);
}

Test(reader, crlf_and_no_final_newline)
{
	static const char data[] = "a,b\r\n\r\nc\rd\r\nlast";
	char err[256], joined[64];
	unsigned int last;
	char *t;

	t = isth_text_read(put("crlf", data, sizeof(data) - 1), 0, NULL, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	join_lines(t, joined, sizeof(joined), &last);
	/* a CR inside a line is data; only the one before LF goes */
	cr_expect_str_eq(joined, "a,b||c\rd|last");
	cr_expect_eq(last, 4);
	free(t);
}

Test(reader, nul_byte_names_its_line)
{
	static const char data[] = "one\ntwo\nth\0ree\n";
	char err[256], want[256];
	const char *path = put("nul", data, sizeof(data) - 1);

	errno = 0;
	cr_expect_null(isth_text_read(path, 0, NULL, err, sizeof(err)));
	cr_expect_eq(errno, EINVAL);
	snprintf(want, sizeof(want), "%s:3: binary file (NUL byte)", path);
	cr_expect_str_eq(err, want);
}

Test(reader, size_limit)
{
	char err[256], want[256];
	const char *path = put("big", "0123456789", 10);
	char *t;

	errno = 0;
	cr_expect_null(isth_text_read(path, 9, NULL, err, sizeof(err)));
	cr_expect_eq(errno, EFBIG);
	snprintf(want, sizeof(want), "%s: larger than 9 bytes", path);
	cr_expect_str_eq(err, want);
	t = isth_text_read(path, 10, NULL, err, sizeof(err));
	cr_expect_not_null(t, "exactly the limit is accepted: %s", err);
	free(t);
}

Test(reader, very_long_line)
{
	const size_t n = 1u << 20;
	char *data = malloc(n + 8), err[256], buf[16];
	struct isth_text_lines it;
	const char *s;
	size_t l, len;
	char *t;

	cr_assert_not_null(data);
	memset(data, 'x', n);
	memcpy(data + n, "\nshort\n", 7);
	t = isth_text_read(put("long", data, n + 7), 0, &len, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_expect_eq(len, n + 7);
	isth_text_lines_init(&it, t);
	cr_assert_eq(isth_text_next(&it, &s, &l), 1);
	cr_expect_eq(l, n);
	cr_expect_eq(memcmp(s, data, n), 0);
	/* a fixed buffer: the long line is refused with its number, the next one read */
	isth_text_lines_init(&it, t);
	cr_expect_eq(isth_text_next_copy(&it, buf, sizeof(buf)), -E2BIG);
	cr_expect_eq(it.line, 1);
	cr_expect_eq(isth_text_next_copy(&it, buf, sizeof(buf)), 1);
	cr_expect_str_eq(buf, "short");
	cr_expect_eq(it.line, 2);
	cr_expect_eq(isth_text_next_copy(&it, buf, sizeof(buf)), 0);
	free(t);
	free(data);
}

/* isth_text_parse_u64: decimal only, whole string; each expected value is
 * written out by hand, the largest as 2^64 - 1. */
Test(text, parse_u64_decimal_only)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} cases[] = {
		{"0", 0, 0},
		{"7", 0, 7},
		{"010", 0, 10}, /* not octal */
		{"0010", 0, 10},
		{"18446744073709551615", 0, UINT64_MAX},
		{"18446744073709551616", -ERANGE, 0},
		{"99999999999999999999", -ERANGE, 0},
		{"", -EINVAL, 0},
		{"-1", -EINVAL, 0},
		{"+1", -EINVAL, 0},
		{" 1", -EINVAL, 0},
		{"1 ", -EINVAL, 0},
		{"0x10", -EINVAL, 0},
		{"1e3", -EINVAL, 0},
		{"12ab", -EINVAL, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = isth_text_parse_u64(cases[i].s, &v);

		cr_expect_eq(
			rc, cases[i].rc, "\"%s\": rc %d, want %d", cases[i].s, rc, cases[i].rc);
		cr_expect_eq(v, cases[i].rc == 0 ? cases[i].v : 12345u, "\"%s\": %llu", cases[i].s,
			(unsigned long long)v);
	}
	cr_expect_eq(isth_text_parse_u64(NULL, &(uint64_t){0}), -EINVAL);
}

Test(text, parse_u64_prefix_and_range)
{
	const char *end = NULL;
	uint64_t v = 0;

	cr_assert_eq(isth_text_parse_u64_prefix("250ms", &end, &v), 0);
	cr_expect_eq(v, 250);
	cr_expect_str_eq(end, "ms");
	cr_expect_eq(isth_text_parse_u64_prefix("ms", &end, &v), -EINVAL);
	cr_expect_eq(isth_text_parse_u64_range("65535", 1, 65535, &v), 0);
	cr_expect_eq(v, 65535);
	cr_expect_eq(isth_text_parse_u64_range("65536", 1, 65535, &v), -ERANGE);
	cr_expect_eq(isth_text_parse_u64_range("0", 1, 65535, &v), -ERANGE);
	cr_expect_eq(v, 65535, "untouched on error");
}

/* The fields written in hex: "0x" and hex digits, or decimal; values by
 * hand (0x7 = 7, 0xFF = 255, 0x10 = 16, 2^64 - 1 as sixteen f's). */
Test(text, parse_u64_or_hex)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} cases[] = {
		{"0x7", 0, 7},
		{"0XfF", 0, 255},
		{"0x10", 0, 16},
		{"010", 0, 10}, /* a bare leading zero is decimal, not octal */
		{"0xffffffffffffffff", 0, UINT64_MAX},
		{"0x0000000000000000001", 0, 1},
		{"0x10000000000000000", -ERANGE, 0},
		{"0x", -EINVAL, 0},
		{"0x-1", -EINVAL, 0},
		{"0x 1", -EINVAL, 0},
		{"0x1g", -EINVAL, 0},
		{"ff", -EINVAL, 0}, /* hex only after 0x */
		{"-0x1", -EINVAL, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = isth_text_parse_u64_or_hex(cases[i].s, &v);

		cr_expect_eq(
			rc, cases[i].rc, "\"%s\": rc %d, want %d", cases[i].s, rc, cases[i].rc);
		cr_expect_eq(v, cases[i].rc == 0 ? cases[i].v : 12345u, "\"%s\": %llu", cases[i].s,
			(unsigned long long)v);
	}
}

Test(text, parse_hex_prefix_stops_at_non_hex)
{
	const char *end = NULL;
	uint64_t v = 0;

	cr_assert_eq(isth_text_parse_hex_prefix("1f,5", &end, &v), 0);
	cr_expect_eq(v, 31);
	cr_expect_str_eq(end, ",5");
	cr_assert_eq(isth_text_parse_hex_prefix("0xA,", &end, &v), 0);
	cr_expect_eq(v, 10);
	cr_expect_eq(isth_text_parse_hex_prefix(",", &end, &v), -EINVAL);
}
