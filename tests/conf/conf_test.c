/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/conf: values parse as documented; every bad file names line and key. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "isth_conf.h"

static const char good[] = "# isthmusd test config\n"
			   "[edge]\n"
			   "island = 3          # trailing comment\n"
			   "job = 0x10\n"
			   "memory = 32Gi\n"
			   "memory_dec = 32G\n"
			   "timeout = 1.5ms\n"
			   "rate = 10Gbps\n"
			   "backoff = yes\n"
			   "ip = 10.1.2.3\n"
			   "mac = 02:00:00:ab:cd:ef\n"
			   "mode = fpga\n"
			   "name = a#b\n"
			   "\n"
			   "; another comment style\n"
			   "[peer NYC]\n"
			   "ip = 10.0.0.1\n"
			   "[  peer    LON ]\n"
			   "ip = 10.0.0.2\n";

Test(conf, values_parse)
{
	static const char *const modes[] = {"sw", "fpga", NULL};
	char err[ISTH_CONF_ERR_SIZE];
	const char *names[4], *s;
	struct isth_conf *c;
	uint64_t v;
	unsigned int e;
	uint8_t mac[6];
	uint32_t ip;
	bool b;

	c = isth_conf_parse(good, "t.conf", err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	cr_expect_eq(isth_conf_u64(c, "edge", "island", true, 0, 0, 63, &v), 0);
	cr_expect_eq(v, 3);
	cr_expect_eq(isth_conf_u64(c, "edge", "job", true, 0, 0, UINT32_MAX, &v), 0);
	cr_expect_eq(v, 16);
	cr_expect_eq(isth_conf_size(c, "edge", "memory", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 32ull * 1024 * 1024 * 1024);
	cr_expect_eq(isth_conf_size(c, "edge", "memory_dec", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 32000000000ull);
	cr_expect_eq(isth_conf_duration(c, "edge", "timeout", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 1500000);
	cr_expect_eq(isth_conf_rate(c, "edge", "rate", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 10000000000ull);
	cr_expect_eq(isth_conf_bool(c, "edge", "backoff", true, false, &b), 0);
	cr_expect(b);
	cr_expect_eq(isth_conf_ipv4(c, "edge", "ip", true, 0, &ip), 0);
	cr_expect_eq(ip, (10u << 24) | (1u << 16) | (2u << 8) | 3u);
	cr_expect_eq(isth_conf_mac(c, "edge", "mac", true, NULL, mac), 0);
	cr_expect_eq(mac[0], 0x02);
	cr_expect_eq(mac[5], 0xef);
	cr_expect_eq(isth_conf_enum(c, "edge", "mode", true, 0, modes, &e), 0);
	cr_expect_eq(e, 1);
	cr_expect_eq(isth_conf_str(c, "edge", "name", true, NULL, &s), 0);
	cr_expect_str_eq(s, "a#b");
	/* absent, not required: default */
	cr_expect_eq(isth_conf_u64(c, "edge", "absent", false, 77, 0, 100, &v), 0);
	cr_expect_eq(v, 77);
	cr_expect_eq(isth_conf_sections(c, "peer", names, 4), 2);
	cr_expect_str_eq(names[0], "NYC");
	cr_expect_str_eq(names[1], "LON");
	cr_expect_eq(isth_conf_ipv4(c, "peer NYC", "ip", true, 0, &ip), 0);
	cr_expect_eq(isth_conf_ipv4(c, "peer LON", "ip", true, 0, &ip), 0);
	cr_expect_eq(ip, (10u << 24) | 2u);
	cr_expect_eq(isth_conf_line(c, "peer LON", "ip"), 19);
	cr_expect_eq(isth_conf_check_unused(c), 0, "%s", isth_conf_error(c));
	isth_conf_free(c);
	isth_conf_free(NULL);
}

/* sizes are lib/text's table (tests/text); isth_conf_size() uses it (above) */
Test(conf, durations)
{
	uint64_t v;

	cr_expect_eq(isth_conf_parse_duration("5", &v), -EINVAL, "unit required");
	cr_expect_eq(isth_conf_parse_duration("250us", &v), 0);
	cr_expect_eq(v, 250000);
	cr_expect_eq(isth_conf_parse_duration("2s", &v), 0);
	cr_expect_eq(v, 2000000000ull);
	cr_expect_eq(isth_conf_parse_duration("0.000000001s", &v), 0);
	cr_expect_eq(v, 1);
}

/* A leading zero is not octal: "010" is ten in every number lib/conf reads
 * (lib/text's one parser); hex only after an explicit "0x", in integers. */
Test(conf, leading_zero_is_decimal)
{
	static const char text[] = "[s]\n"
				   "ten = 010\n"
				   "zero = 00\n"
				   "hex = 0x010\n"
				   "max = 0xffffffffffffffff\n"
				   "over = 0x10000000000000000\n"
				   "bare = 0x\n"
				   "bad = 0x1g\n"
				   "wait = 010ms\n"
				   "frac = 010.5us\n"
				   "rate = 010Mbps\n"
				   "size = 010K\n";
	char err[ISTH_CONF_ERR_SIZE];
	struct isth_conf *c;
	uint64_t v;

	c = isth_conf_parse(text, "z.conf", err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	cr_expect_eq(isth_conf_u64(c, "s", "ten", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 10);
	cr_expect_eq(isth_conf_u64(c, "s", "zero", true, 7, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 0);
	cr_expect_eq(isth_conf_u64(c, "s", "hex", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 16);
	cr_expect_eq(isth_conf_u64(c, "s", "max", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 18446744073709551615ull);
	cr_expect_eq(isth_conf_u64(c, "s", "over", true, 0, 0, UINT64_MAX, &v), -EINVAL);
	cr_expect_eq(isth_conf_u64(c, "s", "bare", true, 0, 0, UINT64_MAX, &v), -EINVAL);
	cr_expect_str_eq(isth_conf_error(c), "z.conf:7: [s] bare: '0x' is not an unsigned integer");
	cr_expect_eq(isth_conf_u64(c, "s", "bad", true, 0, 0, UINT64_MAX, &v), -EINVAL);
	cr_expect_eq(isth_conf_duration(c, "s", "wait", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 10000000);
	cr_expect_eq(isth_conf_duration(c, "s", "frac", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 10500);
	cr_expect_eq(isth_conf_rate(c, "s", "rate", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 10000000);
	cr_expect_eq(isth_conf_size(c, "s", "size", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 10000);
	isth_conf_free(c);
	cr_expect_eq(isth_conf_parse_duration("010s", &v), 0);
	cr_expect_eq(v, 10000000000ull);
	cr_expect_eq(isth_conf_parse_duration("0x10ms", &v), -EINVAL, "hex: integers only");
}

/* Syntax errors: refused at parse time with file:line. */
struct syntax_case {
	char text[96];
	char want[128];
};

static struct syntax_case syntax_cases[] = {
	{"[a]\nkey value\n", "x.conf:2: expected 'key = value', '[section]' or a comment"},
	{"key = 1\n", "x.conf:1: key 'key' outside any [section]"},
	{"[a]\n = 1\n", "x.conf:2: empty key"},
	{"[a\nk = 1\n", "x.conf:1: section header must be '[name]' alone on its line"},
	{"[a] x\n", "x.conf:1: section header must be '[name]' alone on its line"},
	{"[]\n", "x.conf:1: empty or overlong section name"},
	{"[a]\nk = 1\n\nk = 2\n", "x.conf:4: [a] k set twice (first at line 2)"},
	{"[a]\n[b]\n[a]\n", "x.conf:3: section [a] repeated (first at line 1)"},
};

ParameterizedTestParameters(conf, syntax)
{
	return cr_make_param_array(
		struct syntax_case, syntax_cases, sizeof(syntax_cases) / sizeof(syntax_cases[0]));
}

ParameterizedTest(struct syntax_case *tc, conf, syntax)
{
	char err[ISTH_CONF_ERR_SIZE] = "";
	struct isth_conf *c;

	c = isth_conf_parse(tc->text, "x.conf", err, sizeof(err));
	cr_expect_null(c);
	cr_expect_eq(errno, EINVAL);
	cr_expect_str_eq(err, tc->want);
	isth_conf_free(c);
}

/* Value errors: each getter names file, line, section and key. */
enum kind { K_U64, K_SIZE, K_DUR, K_RATE, K_BOOL, K_IP, K_MAC, K_ENUM, K_STR, K_UNUSED };

struct value_case {
	char text[96];
	enum kind kind;
	int rc;
	char want[160];
};

static struct value_case value_cases[] = {
	{"[s]\nk = 12x\n", K_U64, -EINVAL, "x.conf:2: [s] k: '12x' is not an unsigned integer"},
	{"[s]\nk = 101\n", K_U64, -EINVAL, "x.conf:2: [s] k: 101 out of range [1, 100]"},
	{"[s]\nk = 0\n", K_U64, -EINVAL, "x.conf:2: [s] k: 0 out of range [1, 100]"},
	{"[s]\nother = 1\n", K_U64, -ENOENT, "x.conf:1: [s] k: required key missing"},
	{"[t]\nk = 1\n", K_U64, -ENOENT, "x.conf: [s] k: required key missing"},
	{"[s]\nk = 3Q\n", K_SIZE, -EINVAL,
		"x.conf:2: [s] k: '3Q' is not a size (bytes, or with K/M/G/T or Ki/Mi/Gi/Ti)"},
	{"[s]\nk = 10\n", K_DUR, -EINVAL,
		"x.conf:2: [s] k: '10' is not a duration with a unit (ns, us, ms, s)"},
	{"[s]\nk = 10 Gb\n", K_RATE, -EINVAL,
		"x.conf:2: [s] k: '10 Gb' is not a rate with a unit (bps, Kbps, Mbps, Gbps, Tbps)"},
	{"[s]\nk = maybe\n", K_BOOL, -EINVAL,
		"x.conf:2: [s] k: 'maybe' is not a boolean (true/false, yes/no, on/off, 1/0)"},
	{"[s]\nk = 10.0.0.256\n", K_IP, -EINVAL,
		"x.conf:2: [s] k: '10.0.0.256' is not an IPv4 address"},
	{"[s]\nk = 10.0.0\n", K_IP, -EINVAL, "x.conf:2: [s] k: '10.0.0' is not an IPv4 address"},
	{"[s]\nk = 10.0.0.1 x\n", K_IP, -EINVAL,
		"x.conf:2: [s] k: '10.0.0.1 x' is not an IPv4 address"},
	{"[s]\nk = 02:00:00:00:00\n", K_MAC, -EINVAL,
		"x.conf:2: [s] k: '02:00:00:00:00' is not a MAC address (aa:bb:cc:dd:ee:ff)"},
	{"[s]\nk = hw\n", K_ENUM, -EINVAL, "x.conf:2: [s] k: 'hw' is not one of: sw, fpga"},
	{"[s]\nk =\n", K_STR, -EINVAL, "x.conf:2: [s] k: empty value"},
	{"[s]\nk = 5\nkk = 6\n", K_UNUSED, -EINVAL, "x.conf:3: unknown key 'kk' in [s]"},
	{"[s]\nk = 5\n[typo]\n", K_UNUSED, -EINVAL, "x.conf:3: unknown section [typo]"},
};

ParameterizedTestParameters(conf, values)
{
	return cr_make_param_array(
		struct value_case, value_cases, sizeof(value_cases) / sizeof(value_cases[0]));
}

ParameterizedTest(struct value_case *tc, conf, values)
{
	static const char *const modes[] = {"sw", "fpga", NULL};
	char err[ISTH_CONF_ERR_SIZE];
	struct isth_conf *c;
	const char *s;
	unsigned int e;
	uint8_t mac[6];
	uint32_t ip;
	uint64_t v;
	bool b;
	int rc = 0;

	c = isth_conf_parse(tc->text, "x.conf", err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	switch (tc->kind) {
	case K_U64:
		rc = isth_conf_u64(c, "s", "k", true, 0, 1, 100, &v);
		break;
	case K_SIZE:
		rc = isth_conf_size(c, "s", "k", true, 0, 0, UINT64_MAX, &v);
		break;
	case K_DUR:
		rc = isth_conf_duration(c, "s", "k", true, 0, 0, UINT64_MAX, &v);
		break;
	case K_RATE:
		rc = isth_conf_rate(c, "s", "k", true, 0, 0, UINT64_MAX, &v);
		break;
	case K_BOOL:
		rc = isth_conf_bool(c, "s", "k", true, false, &b);
		break;
	case K_IP:
		rc = isth_conf_ipv4(c, "s", "k", true, 0, &ip);
		break;
	case K_MAC:
		rc = isth_conf_mac(c, "s", "k", true, NULL, mac);
		break;
	case K_ENUM:
		rc = isth_conf_enum(c, "s", "k", true, 0, modes, &e);
		break;
	case K_STR:
		rc = isth_conf_str(c, "s", "k", true, NULL, &s);
		break;
	case K_UNUSED:
		cr_assert_eq(isth_conf_u64(c, "s", "k", true, 0, 0, 100, &v), 0);
		rc = isth_conf_check_unused(c);
		break;
	}
	cr_expect_eq(rc, tc->rc);
	cr_expect_str_eq(isth_conf_error(c), tc->want);
	isth_conf_free(c);
}

Test(conf, load_missing_file)
{
	char err[ISTH_CONF_ERR_SIZE];

	cr_expect_null(isth_conf_load("/nonexistent/isthmus.conf", err, sizeof(err)));
	cr_expect_eq(errno, ENOENT);
	cr_expect_str_eq(err, "/nonexistent/isthmus.conf: No such file or directory");
}

Test(conf, load_file_with_nul_refused)
{
	char path[] = "/tmp/isth-conf-XXXXXX", err[ISTH_CONF_ERR_SIZE];
	int fd = mkstemp(path);
	static const char bytes[] = "[a]\nk = 1\0\n";

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, bytes, sizeof(bytes) - 1), (ssize_t)sizeof(bytes) - 1);
	close(fd);
	cr_expect_null(isth_conf_load(path, err, sizeof(err)));
	cr_expect_eq(errno, EINVAL);
	unlink(path);
}

/* Trailing blanks are whitespace, not a NUL byte (the trim of a line
 * must not be mistaken for a NUL in the file). */
Test(conf, trailing_whitespace_accepted)
{
	char err[ISTH_CONF_ERR_SIZE] = "";
	struct isth_conf *c;
	uint64_t v;

	c = isth_conf_parse("[a] \t\nk = 7  \t \n", "t.conf", err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	cr_expect_eq(isth_conf_u64(c, "a", "k", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 7);
	isth_conf_free(c);
}

Test(conf, load_directory_refused)
{
	char err[ISTH_CONF_ERR_SIZE];

	errno = 0;
	cr_expect_null(isth_conf_load("/", err, sizeof(err)));
	cr_expect_eq(errno, EISDIR);
	cr_expect_str_eq(err, "/: is a directory, not a file");
}

Test(conf, bom_and_crlf)
{
	char err[ISTH_CONF_ERR_SIZE] = "";
	struct isth_conf *c;
	uint64_t v;

	/* as a Windows editor saves it: the key on line 3 keeps its number */
	c = isth_conf_parse("\xEF\xBB\xBF[a]\r\n# note\r\nk = 5Ki\r\n", "w.conf", err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	cr_expect_eq(isth_conf_size(c, "a", "k", true, 0, 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, 5 * 1024);
	cr_expect_eq(isth_conf_line(c, "a", "k"), 3);
	isth_conf_free(c);
}

/*
 * isth_conf_record(): every key a getter asks for, set in the file or not,
 * with its type, default and range; the first ask of a key is kept, and
 * nothing is recorded before recording starts.
 */
Test(conf, schema_records_every_key_asked)
{
	static const char *const modes[] = {"sw", "fpga", NULL};
	static const uint8_t gw[6] = {2, 0, 0, 0, 0, 1};
	const struct isth_conf_key *k;
	char err[ISTH_CONF_ERR_SIZE];
	struct isth_conf *c =
		isth_conf_parse("[a]\nn = 5\n[peer X]\nip = 10.0.0.1\n", "t", err, sizeof(err));
	uint64_t v;
	uint32_t ip;
	uint8_t mac[6];
	unsigned int e;
	const char *s;
	bool b;

	cr_assert_not_null(c, "%s", err);
	cr_assert_eq(isth_conf_u64(c, "a", "before", false, 1, 0, 9, &v), 0);
	isth_conf_record(c, true);
	cr_assert_eq(isth_conf_u64(c, "a", "n", false, 7, 1, 9, &v), 0);
	cr_assert_eq(v, 5);
	cr_assert_eq(isth_conf_duration(c, "a", "wait", false, 20000000, 0, 1000000000, &v), 0);
	cr_assert_eq(isth_conf_size(c, "a", "mem", false, 64 << 20, 0, 1ull << 40, &v), 0);
	cr_assert_eq(isth_conf_bool(c, "a", "on", false, true, &b), 0);
	cr_assert_eq(isth_conf_str(c, "a", "name", false, NULL, &s), 0);
	cr_assert_eq(isth_conf_enum(c, "a", "mode", false, 1, modes, &e), 0);
	cr_assert_eq(isth_conf_ipv4(c, "peer X", "ip", true, 0, &ip), 0);
	cr_assert_eq(isth_conf_mac(c, "peer X", "mac", false, gw, mac), 0);
	cr_assert_eq(isth_conf_ipv4(c, "a", "group", false, 0xefc00000u, &ip), 0);
	/* asked again, as another type: the first record stays */
	cr_assert_eq(isth_conf_str(c, "a", "n", false, "x", &s), 0);
	isth_conf_record(c, false);
	cr_assert_eq(isth_conf_u64(c, "a", "after", false, 1, 0, 9, &v), 0);

	/* not "before", "after", nor the second ask of "n" */
	cr_assert_eq(isth_conf_schema(c, &k), 9);
	cr_assert_str_eq(k[0].section, "a");
	cr_assert_str_eq(k[0].key, "n");
	cr_assert_str_eq(k[0].type, "u64");
	cr_assert_str_eq(k[0].def, "7");
	cr_assert(k[0].ranged && k[0].min == 1 && k[0].max == 9);
	cr_assert_str_eq(k[1].type, "duration");
	cr_assert_str_eq(k[1].def, "20000000");
	cr_assert_eq(k[1].max, 1000000000);
	cr_assert_str_eq(k[2].type, "size");
	cr_assert_str_eq(k[2].def, "67108864");
	cr_assert_str_eq(k[3].type, "bool");
	cr_assert_str_eq(k[3].def, "true");
	cr_assert_not(k[3].ranged);
	cr_assert_str_eq(k[4].type, "str");
	cr_assert_str_eq(k[4].def, "");
	cr_assert_str_eq(k[5].type, "enum");
	cr_assert_str_eq(k[5].def, "fpga");
	cr_assert_str_eq(k[5].choices, "sw|fpga");
	cr_assert_str_eq(k[4].choices, "");
	cr_assert_str_eq(k[6].section, "peer X");
	cr_assert_str_eq(k[6].type, "ipv4");
	cr_assert(k[6].required);
	cr_assert_str_eq(k[7].type, "mac");
	cr_assert_str_eq(k[7].def, "02:00:00:00:00:01");
	cr_assert_str_eq(k[8].def, "239.192.0.0");
	isth_conf_free(c);
}
