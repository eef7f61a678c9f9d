/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-island against a fake edge on loopback: the test plays the edge
 * (ROUND, AGGs computed here from the documented formula, a lost AGG that
 * must be NACKed, a contributor that never arrives, a silent island, a
 * corrupted sum) and asserts the CLI's summary line and exit status.
 * Time is real here (the CLI uses CLOCK_REALTIME), but every wait is a
 * poll on a socket or a pipe with a bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "isth_auth.h"
#include "isth_wire.h"

#define JOB 5u
#define SELF 1u
#define N 3u
#define CE 358u
#define ELEMS 400u /* chunks of 358 and 42 */
#define NCH 2u
#define MS 1000000ull

/* Elements per chunk the fake edge uses: CE, or 348 when it speaks v2 (the
 * tag and room for a WAN tag list of 2 peers, 3 islands). */
static uint32_t ce = CE;
/* Set: the fake edge speaks version 2, sealing with this engine's DOWN
 * key of SELF and checking the island's packets with its UP key. */
static struct isth_auth_engine *auth_e;
/* Set: the child's stderr goes to the same pipe as its stdout. */
static bool with_stderr;
/* Non-zero: send_round() writes this wire version into its ROUNDs. */
static uint8_t round_version;

static uint32_t
val_i32(unsigned int k, uint32_t r, uint32_t i)
{
	return (uint32_t)(k + 1) * 1000003u + r * 7919u + i * 31u;
}

static uint64_t
rt_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct cli {
	pid_t pid;
	int out; /* child's stdout */
	int edge; /* our socket */
	uint16_t island_port;
	uint64_t seq; /* next AGG seq */
	char head[4096]; /* stdout read so far (the banner, at least) */
	size_t head_len;
	struct isth_wire_limits lim;
};

static int
bound_socket(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void
cli_start(struct cli *c, const char *const *extra)
{
	const char *bin = getenv("ISLAND_BIN");
	char edge[64], bind_[64];
	const char *argv[40];
	uint16_t ep;
	int p[2], k = 0, tmp;

	cr_assert_not_null(bin, "ISLAND_BIN not set");
	memset(c, 0, sizeof(c[0]));
	cr_assert_eq(isth_wire_limits_init_auth(&c->lim, N, 1500, auth_e != NULL), 0);
	c->edge = bound_socket(&ep);
	/* an ephemeral port for the island: take one, free it, pass it on */
	tmp = bound_socket(&c->island_port);
	close(tmp);
	snprintf(edge, sizeof(edge), "127.0.0.1:%u", ep);
	snprintf(bind_, sizeof(bind_), "127.0.0.1:%u", c->island_port);
	argv[k++] = bin;
	argv[k++] = "--job";
	argv[k++] = "5";
	argv[k++] = "--island";
	argv[k++] = "1";
	argv[k++] = "--islands";
	argv[k++] = "3";
	argv[k++] = "--edge";
	argv[k++] = edge;
	argv[k++] = "--bind";
	argv[k++] = bind_;
	argv[k++] = "--elems";
	argv[k++] = "400";
	argv[k++] = "--timeout";
	argv[k++] = "5";
	argv[k++] = "--probe";
	argv[k++] = "0";
	/* rounds end at their deadline, which the tests time (the CLI's
	 * default is one round period later; a test may give its own) */
	argv[k++] = "--grace";
	argv[k++] = "0";
	/* version 1 unless the test gives a key file (auth_e) */
	if (auth_e == NULL) {
		argv[k++] = "--auth";
		argv[k++] = "off";
	}
	while (extra && *extra)
		argv[k++] = *extra++;
	argv[k] = NULL;
	cr_assert_eq(pipe(p), 0);
	c->pid = fork();
	if (c->pid == 0) {
		/* no Criterion calls here: with --full-stats even a passing
		 * assertion is reported, and this process is not the test's */
		dup2(p[1], 1);
		if (with_stderr)
			dup2(p[1], 2);
		close(p[0]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	cr_assert_gt(c->pid, 0);
	close(p[1]);
	c->out = p[0];
	/* the banner comes once the socket is bound: only then send to it */
	while (c->head_len == 0 || c->head[c->head_len - 1] != '\n') {
		struct pollfd pf = {.fd = c->out, .events = POLLIN};
		ssize_t n;

		cr_assert_gt(poll(&pf, 1, 10000), 0, "no banner from the CLI");
		n = read(c->out, c->head + c->head_len, sizeof(c->head) - 1 - c->head_len);
		cr_assert_gt(n, 0, "CLI exited before its banner");
		c->head_len += (size_t)n;
	}
}

/* Read the child's stdout until @text has appeared in it. */
static void
cli_wait_for(struct cli *c, const char *text)
{
	c->head[c->head_len] = '\0';
	while (strstr(c->head, text) == NULL) {
		struct pollfd pf = {.fd = c->out, .events = POLLIN};
		ssize_t n;

		cr_assert_gt(
			poll(&pf, 1, 10000), 0, "no '%s' from the CLI; so far:\n%s", text, c->head);
		cr_assert_lt(c->head_len, sizeof(c->head) - 1, "output too long");
		n = read(c->out, c->head + c->head_len, sizeof(c->head) - 1 - c->head_len);
		cr_assert_gt(n, 0, "CLI exited; output:\n%s", c->head);
		c->head_len += (size_t)n;
		c->head[c->head_len] = '\0';
	}
}

/* Wait for the child; returns its exit status, output in @buf. */
static int
cli_finish(struct cli *c, char *buf, size_t size)
{
	size_t off = c->head_len;
	int st;

	memcpy(buf, c->head, off);
	for (;;) {
		struct pollfd pf = {.fd = c->out, .events = POLLIN};
		ssize_t n;

		cr_assert_gt(
			poll(&pf, 1, 10000), 0, "CLI hangs; output so far:\n%.*s", (int)off, buf);
		n = read(c->out, buf + off, size - 1 - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	buf[off] = '\0';
	cr_assert_eq(waitpid(c->pid, &st, 0), c->pid);
	close(c->out);
	close(c->edge);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void
to_island(struct cli *c, const void *msg, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	uint8_t buf[2048];

	memcpy(buf, msg, len);
	if (auth_e) {
		int n = isth_auth_seal(auth_e, ISTH_AUTH_DOWN, SELF, buf, len, sizeof(buf));

		cr_assert_gt(n, 0);
		len = (size_t)n;
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(c->island_port);
	cr_assert_eq(sendto(c->edge, buf, len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
}

static size_t
from_island(struct cli *c, uint8_t *buf, size_t cap, struct isth_wire_pkt *p)
{
	struct pollfd pf = {.fd = c->edge, .events = POLLIN};
	ssize_t n;

	cr_assert_gt(poll(&pf, 1, 5000), 0, "nothing from the island");
	n = recv(c->edge, buf, cap, 0);
	cr_assert_gt(n, 0);
	if (auth_e)
		cr_assert_eq(isth_auth_verify(auth_e, ISTH_AUTH_UP, SELF, buf, (size_t)n),
			ISTH_AUTH_OK, "the island's packet does not verify");
	cr_assert_eq(isth_wire_parse_msg(buf, (size_t)n, &c->lim, p), ISTH_WIRE_OK);
	return (size_t)n;
}

static void
send_round(struct cli *c, uint32_t r, uint64_t expected, uint64_t deadline_in_ns)
{
	uint64_t now = rt_ns();
	struct isth_wire_round b = {
		.start_ns = now,
		.deadline_ns = now + deadline_in_ns,
		.period_ns = deadline_in_ns,
		.clique = expected | 1u << SELF,
		.n_chunks = NCH,
		.chunk_elems = ce,
	};
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_ROUND,
		.sender = SELF,
		.job = JOB,
		.round = r,
		.bitmap = expected,
	};
	uint8_t body[40], buf[128];
	int n;

	isth_wire_put_round(body, sizeof(body), &b);
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, 40, NULL);
	if (round_version)
		buf[ISTH_WIRE_OFF_VERSION] = round_version;
	to_island(c, buf, (size_t)n);
}

/* Build (and unless @lose, send) an AGG for chunk @ch of round @r summing
 * @set; @delta corrupts element 0. Returns its seq. */
static uint64_t
send_agg(struct cli *c, uint32_t r, uint32_t ch, uint64_t set, uint16_t flags, bool lose,
	uint32_t delta, int64_t seq)
{
	uint32_t count = ch == 0 ? ce : ELEMS - ce;
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.flags = flags,
		.sender = SELF,
		.count = (uint16_t)count,
		.job = JOB,
		.round = r,
		.chunk = ch,
		.bitmap = set,
	};
	uint8_t body[4 * CE], buf[2048];
	int n;

	h.seq = seq >= 0 ? (uint64_t)seq : c->seq++;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t v = 0;

		for (unsigned int k = 0; k < N; k++)
			if (set & (1u << k))
				v += val_i32(k, r, ch * ce + i);
		if (i == 0)
			v += delta;
		body[4 * i] = (uint8_t)v;
		body[4 * i + 1] = (uint8_t)(v >> 8);
		body[4 * i + 2] = (uint8_t)(v >> 16);
		body[4 * i + 3] = (uint8_t)(v >> 24);
	}
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, (size_t)count * 4, NULL);
	cr_assert_gt(n, 0);
	if (!lose)
		to_island(c, buf, (size_t)n);
	return h.seq;
}

/* The island's DATA for round @r: both chunks, with the formula's values. */
static void
expect_data(struct cli *c, uint32_t r)
{
	for (uint32_t k = 0; k < NCH; k++) {
		uint8_t buf[2048];
		struct isth_wire_pkt p;

		from_island(c, buf, sizeof(buf), &p);
		cr_assert_eq(p.hdr.type, ISTH_WIRE_DATA);
		cr_assert_eq(p.hdr.round, r);
		cr_assert_eq(p.hdr.chunk, k);
		cr_assert_eq(p.hdr.sender, SELF);
		for (uint32_t i = 0; i < p.hdr.count; i++) {
			const uint8_t *q = p.payload + 4 * i;

			cr_assert_eq(
				(uint32_t)(q[0] | q[1] << 8 | q[2] << 16 | (uint32_t)q[3] << 24),
				val_i32(SELF, r, k * ce + i));
		}
	}
}

static const char *
summary(const char *out)
{
	const char *s = strstr(out, "ISLAND ");

	cr_assert_not_null(s, "no summary in:\n%s", out);
	return s;
}

TestSuite(island_cli, .timeout = 30);

Test(island_cli, nack_partial_and_silent_rounds_verify)
{
	static const char *const extra[] = {
		"--rounds", "3", "--stop-after", "2", "--nack-interval", "1000", NULL};
	const uint64_t peers = 1u << 0 | 1u << 2;
	char out[8192];
	uint8_t buf[2048];
	struct isth_wire_pkt p;
	struct isth_wire_range r;
	struct cli c;
	uint64_t lost;

	cli_start(&c, extra);
	/* round 10: the AGG of chunk 1 from island 0 is lost, then resent */
	send_round(&c, 10, peers, 3000 * MS);
	expect_data(&c, 10);
	send_agg(&c, 10, 0, peers, 0, false, 0, -1);
	lost = send_agg(&c, 10, 1, 1u << 0, ISTH_WIRE_F_PARTIAL, true, 0, -1);
	send_agg(&c, 10, 1, 1u << 2, ISTH_WIRE_F_PARTIAL, false, 0, -1);
	from_island(&c, buf, sizeof(buf), &p);
	cr_assert_eq(p.hdr.type, ISTH_WIRE_NACK);
	cr_assert_eq(p.hdr.count, 1);
	isth_wire_get_range(&p, 0, &r);
	cr_expect_eq(r.first, lost);
	cr_expect_eq(r.last, lost);
	send_agg(&c, 10, 1, 1u << 0, ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT, false, 0,
		(int64_t)lost);
	/* round 11: island 2 never delivers chunk 1 */
	send_round(&c, 11, peers, 300 * MS);
	expect_data(&c, 11);
	send_agg(&c, 11, 0, peers, 0, false, 0, -1);
	send_agg(&c, 11, 1, 1u << 0, ISTH_WIRE_F_PARTIAL, false, 0, -1);
	/* round 12: the island is silent (--stop-after 2) */
	send_round(&c, 12, peers, 3000 * MS);
	send_agg(&c, 12, 0, peers, 0, false, 0, -1);
	send_agg(&c, 12, 1, peers, 0, false, 0, -1);
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 0, "output:\n%s", out);
	cr_expect(strstr(out,
			  "round 11 clique {0,1,2} chunks 2 complete 1 partial 1 "
			  "missing island 2 chunk 1 verified 2") != NULL,
		"output:\n%s", out);
	cr_expect(strstr(out, "(silent)") != NULL, "output:\n%s", out);
	cr_expect(strncmp(summary(out),
			  "ISLAND island=1 rounds=3 aggregates=6 verified=6 wrong=0 "
			  "partial=1 missing=1 nacks=1 resent=1 round_ms_mean=",
			  strlen("ISLAND island=1 rounds=3 aggregates=6 verified=6 wrong=0 "
				 "partial=1 missing=1 nacks=1 resent=1 round_ms_mean=")) == 0,
		"output:\n%s", out);
}

/*
 * Round 20 stays partial until its deadline. With --overlap 2, round 21's
 * DATA must leave when its ROUND comes, before round 20's deadline; with
 * --overlap 1 only after it. Both rounds are collected and verified, in
 * order, either way.
 */
static void
play_late_round(const char *overlap, bool early)
{
	const char *const extra[] = {"--rounds", "2", "--overlap", overlap, NULL};
	const uint64_t peers = 1u << 0 | 1u << 2;
	char out[8192];
	const char *l20, *l21;
	uint64_t dl20, t21;
	struct cli c;

	cli_start(&c, extra);
	dl20 = rt_ns() + 800 * MS;
	send_round(&c, 20, peers, 800 * MS);
	expect_data(&c, 20);
	send_agg(&c, 20, 0, peers, 0, false, 0, -1); /* chunk 1 never comes */
	send_round(&c, 21, peers, 3000 * MS);
	expect_data(&c, 21);
	t21 = rt_ns();
	if (early)
		cr_expect_lt(t21, dl20, "round 21's DATA waited for round 20's deadline");
	else
		cr_expect_geq(t21, dl20, "--overlap 1 sent round 21 before round 20 ended");
	send_agg(&c, 21, 0, peers, 0, false, 0, -1);
	send_agg(&c, 21, 1, peers, 0, false, 0, -1);
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 0, "output:\n%s", out);
	l20 = strstr(out,
		"round 20 clique {0,1,2} chunks 2 complete 1 partial 1 "
		"missing island 0 chunk 1; island 2 chunk 1 verified 2");
	l21 = strstr(out,
		"round 21 clique {0,1,2} chunks 2 complete 2 partial 0 "
		"missing - verified 2");
	cr_expect_not_null(l20, "output:\n%s", out);
	cr_expect_not_null(l21, "output:\n%s", out);
	cr_expect_lt(l20, l21, "rounds collected out of order:\n%s", out);
	cr_expect(strncmp(summary(out),
			  "ISLAND island=1 rounds=2 aggregates=4 "
			  "verified=4 wrong=0 partial=1 missing=2 ",
			  strlen("ISLAND island=1 rounds=2 aggregates=4 verified=4 "
				 "wrong=0 partial=1 missing=2 ")) == 0,
		"output:\n%s", out);
}

Test(island_cli, next_round_leaves_on_time_while_one_is_late)
{
	play_late_round("2", true);
}

Test(island_cli, overlap_1_waits_for_the_late_round)
{
	play_late_round("1", false);
}

/*
 * The process is stopped (SIGSTOP: a starved or paused trainer) past
 * round 30's deadline while rounds 31-34 are announced; round 34 takes
 * round 30's slot (the library keeps 4). On SIGCONT the CLI must count
 * round 30 as lost and go on with 31-34, not end the run on -ESTALE.
 */
Test(island_cli, a_round_lost_while_stopped_is_counted_and_the_run_goes_on)
{
	static const char *const extra[] = {"--rounds", "5", "--overlap", "2", NULL};
	const uint64_t peers = 1u << 0 | 1u << 2;
	struct timespec until;
	char out[8192];
	uint64_t dl30;
	struct cli c;
	int st;

	cli_start(&c, extra);
	dl30 = rt_ns() + 2000 * MS;
	send_round(&c, 30, peers, 2000 * MS);
	expect_data(&c, 30);
	cr_assert_eq(kill(c.pid, SIGSTOP), 0);
	cr_assert_eq(waitpid(c.pid, &st, WUNTRACED), c.pid);
	cr_assert(WIFSTOPPED(st));
	c.head[c.head_len] = '\0';
	cr_assert_null(strstr(c.head, "round 30"), "round 30 ended before the stop:\n%s", c.head);
	/* the condition is the clock itself: round 30's deadline has passed */
	until.tv_sec = (time_t)((dl30 + 50 * MS) / 1000000000ull);
	until.tv_nsec = (long)((dl30 + 50 * MS) % 1000000000ull);
	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
	for (uint32_t r = 31; r <= 34; r++)
		send_round(&c, r, peers, 3000 * MS);
	cr_assert_eq(kill(c.pid, SIGCONT), 0);
	for (uint32_t r = 31; r <= 34; r++) {
		expect_data(&c, r);
		send_agg(&c, r, 0, peers, 0, false, 0, -1);
		send_agg(&c, r, 1, peers, 0, false, 0, -1);
	}
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 0, "output:\n%s", out);
	cr_expect_not_null(strstr(out, "round 30 clique {0,1,2} chunks 2 lost: no longer kept\n"),
		"output:\n%s", out);
	for (uint32_t r = 31; r <= 34; r++) {
		char want[128];

		snprintf(want, sizeof(want),
			"round %u clique {0,1,2} chunks 2 complete 2 partial 0 missing - verified "
			"2",
			r);
		cr_expect_not_null(strstr(out, want), "no '%s' in:\n%s", want, out);
	}
	/* 5 rounds x 2 chunks; round 30's 2 chunks partial and unverified,
	 * each missing both peers */
	cr_expect(strncmp(summary(out),
			  "ISLAND island=1 rounds=5 aggregates=10 verified=8 wrong=0 "
			  "partial=2 missing=4 ",
			  strlen("ISLAND island=1 rounds=5 aggregates=10 verified=8 wrong=0 "
				 "partial=2 missing=4 ")) == 0,
		"output:\n%s", out);
	cr_expect_not_null(strstr(summary(out), " lost=1\n"), "output:\n%s", out);
}

/* The CLI's bf16 values: integers in [-2, 1]. */
static int
val_bf16(unsigned int k, uint32_t r, uint32_t i)
{
	return (int)(((k + 1) * 131u + r * 17u + i * 7u) % 4u) - 2;
}

/* An AGG of bf16 sums, as float32 (@dtype fp32) or bf16 words. */
static void
send_agg_bf16(struct cli *c, uint32_t r, uint32_t ch, uint64_t set, uint8_t dtype)
{
	uint32_t count = ch == 0 ? CE : ELEMS - CE;
	size_t es = dtype == ISTH_WIRE_DTYPE_BF16 ? 2 : 4;
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.dtype = dtype,
		.sender = SELF,
		.count = (uint16_t)count,
		.job = JOB,
		.round = r,
		.chunk = ch,
		.seq = c->seq++,
		.bitmap = set,
	};
	uint8_t body[4 * CE], buf[2048];
	int n;

	for (uint32_t i = 0; i < count; i++) {
		float f = 0;
		uint32_t v;

		for (unsigned int k = 0; k < N; k++)
			if (set & (1u << k))
				f += (float)val_bf16(k, r, ch * CE + i);
		memcpy(&v, &f, 4);
		if (es == 2)
			v >>= 16; /* small integers: exact in bf16 */
		for (size_t b = 0; b < es; b++)
			body[es * i + b] = (uint8_t)(v >> (8 * b));
	}
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, count * es, NULL);
	cr_assert_gt(n, 0);
	to_island(c, buf, (size_t)n);
}

Test(island_cli, bf16_goes_out_as_bf16_and_verifies)
{
	static const char *const extra[] = {"--rounds", "2", "--dtype", "bf16", NULL};
	char out[8192];
	struct cli c;

	cli_start(&c, extra);
	for (uint32_t r = 30; r < 32; r++) {
		send_round(&c, r, 1u << 0 | 1u << 2, 3000 * MS);
		for (uint32_t k = 0; k < NCH; k++) {
			uint8_t buf[2048];
			struct isth_wire_pkt p;

			from_island(&c, buf, sizeof(buf), &p);
			cr_assert_eq(p.hdr.type, ISTH_WIRE_DATA);
			cr_assert_eq(p.hdr.dtype, ISTH_WIRE_DTYPE_BF16);
			cr_assert_eq(p.payload_size, 2u * p.hdr.count);
			for (uint32_t i = 0; i < p.hdr.count; i++) {
				float f = (float)val_bf16(SELF, r, k * CE + i);
				uint32_t u;

				memcpy(&u, &f, 4);
				cr_assert_eq(p.payload[2 * i] | p.payload[2 * i + 1] << 8,
					(int)(u >> 16), "round %u chunk %u elem %u", r, k, i);
			}
		}
		/* round 30: fp32 sums ([agg] bf16_out = fp32); 31: bf16 sums */
		for (uint32_t ch = 0; ch < NCH; ch++)
			send_agg_bf16(&c, r, ch, 1u << 0 | 1u << 2,
				r == 30 ? ISTH_WIRE_DTYPE_FP32 : ISTH_WIRE_DTYPE_BF16);
	}
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 0, "output:\n%s", out);
	cr_expect(strstr(out, "bf16 x 400") != NULL, "output:\n%s", out);
	cr_expect(strncmp(summary(out),
			  "ISLAND island=1 rounds=2 aggregates=4 "
			  "verified=4 wrong=0 partial=0 ",
			  strlen("ISLAND island=1 rounds=2 aggregates=4 verified=4 "
				 "wrong=0 partial=0 ")) == 0,
		"output:\n%s", out);
}

/* --sockets 2 --gso on --gro on: chunk 0 from socket 0 (the --bind
 * port), chunk 1 from socket 1 (port + 1), each once; sums verified. */
Test(island_cli, sockets_gso_gro_send_each_chunk_once_and_verify)
{
	static const char *const extra[] = {
		"--rounds", "2", "--sockets", "2", "--gso", "on", "--gro", "on", NULL};
	char out[8192];
	struct cli c;

	cli_start(&c, extra);
	for (uint32_t r = 7; r < 9; r++) {
		bool seen[NCH] = {false};

		send_round(&c, r, 1u << 0, 3000 * MS);
		for (uint32_t k = 0; k < NCH; k++) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			struct pollfd pf = {.fd = c.edge, .events = POLLIN};
			struct isth_wire_pkt p;
			uint8_t buf[2048];
			ssize_t n;

			cr_assert_gt(poll(&pf, 1, 5000), 0, "nothing from the island");
			n = recvfrom(c.edge, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
			cr_assert_gt(n, 0);
			cr_assert_eq(isth_wire_parse_msg(buf, (size_t)n, &c.lim, &p), ISTH_WIRE_OK);
			cr_assert_eq(p.hdr.type, ISTH_WIRE_DATA);
			cr_assert_lt(p.hdr.chunk, NCH);
			cr_assert_not(seen[p.hdr.chunk], "chunk %u twice", p.hdr.chunk);
			seen[p.hdr.chunk] = true;
			cr_assert_eq(ntohs(from.sin_port), c.island_port + p.hdr.chunk,
				"chunk %u from port %u", p.hdr.chunk, ntohs(from.sin_port));
			for (uint32_t i = 0; i < p.hdr.count; i++) {
				const uint8_t *q = p.payload + 4 * i;

				cr_assert_eq((uint32_t)(q[0] | q[1] << 8 | q[2] << 16 |
						     (uint32_t)q[3] << 24),
					val_i32(SELF, r, p.hdr.chunk * ce + i));
			}
		}
		for (uint32_t ch = 0; ch < NCH; ch++)
			send_agg(&c, r, ch, 1u << 0, 0, false, 0, -1);
	}
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 0, "output:\n%s", out);
	cr_expect(strstr(summary(out), "aggregates=4 verified=4 wrong=0 partial=0 ") != NULL,
		"output:\n%s", out);
}

/*
 * --hosts 2 --host 1 of a 2-chunk tensor: the host owns chunk 1 alone. Its
 * DATA is chunk 1 only; the AGG of chunk 0 (host 0's) is not summed; each
 * round verifies chunk 1, and a partial names the tensor's chunk id 1.
 */
Test(island_cli, host_1_of_2_sends_and_verifies_its_chunk_only)
{
	static const char *const extra[] = {"--rounds", "2", "--hosts", "2", "--host", "1", NULL};
	const uint64_t peers = 1u << 0 | 1u << 2;
	char out[8192];
	uint8_t buf[2048];
	struct isth_wire_pkt p;
	struct cli c;

	cli_start(&c, extra);
	cli_wait_for(&c, "host 1 of 2: chunks 1-1, elements 358-399\n");
	send_round(&c, 4, peers, 3000 * MS);
	from_island(&c, buf, sizeof(buf), &p);
	cr_assert_eq(p.hdr.type, ISTH_WIRE_DATA);
	cr_assert_eq(p.hdr.chunk, 1, "host 1 sent chunk %u", p.hdr.chunk);
	cr_assert_eq(p.hdr.count, ELEMS - CE);
	cr_expect_eq(p.hdr.flags & ISTH_WIRE_F_LAST, ISTH_WIRE_F_LAST);
	for (uint32_t i = 0; i < p.hdr.count; i++) {
		const uint8_t *q = p.payload + 4 * i;

		cr_assert_eq((uint32_t)(q[0] | q[1] << 8 | q[2] << 16 | (uint32_t)q[3] << 24),
			val_i32(SELF, 4, CE + i));
	}
	send_agg(&c, 4, 0, peers, 0, false, 0, -1); /* host 0's: refused */
	send_agg(&c, 4, 1, peers, 0, false, 0, -1);
	/* round 5: island 2 never delivers chunk 1 */
	send_round(&c, 5, peers, 300 * MS);
	from_island(&c, buf, sizeof(buf), &p);
	cr_assert_eq(p.hdr.chunk, 1);
	send_agg(&c, 5, 1, 1u << 0, ISTH_WIRE_F_PARTIAL, false, 0, -1);
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 0, "output:\n%s", out);
	cr_expect(strstr(out,
			  "round 4 clique {0,1,2} chunks 1 complete 1 partial 0 missing - "
			  "verified 1") != NULL,
		"output:\n%s", out);
	cr_expect(strstr(out,
			  "round 5 clique {0,1,2} chunks 1 complete 0 partial 1 "
			  "missing island 2 chunk 1 verified 1") != NULL,
		"output:\n%s", out);
	cr_expect(strstr(summary(out), "aggregates=2 verified=2 wrong=0 partial=1 missing=1 ") !=
			NULL,
		"output:\n%s", out);
}

Test(island_cli, a_wrong_sum_fails_the_run)
{
	static const char *const extra[] = {"--rounds", "1", NULL};
	char out[8192];
	struct cli c;

	cli_start(&c, extra);
	send_round(&c, 3, 1u << 0, 3000 * MS);
	expect_data(&c, 3);
	send_agg(&c, 3, 0, 1u << 0, 0, false, 0, -1);
	send_agg(&c, 3, 1, 1u << 0, 0, false, 1, -1); /* off by one */
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 1, "output:\n%s", out);
	cr_expect(strncmp(summary(out),
			  "ISLAND island=1 rounds=1 aggregates=2 "
			  "verified=1 wrong=1 ",
			  strlen("ISLAND island=1 rounds=1 "
				 "aggregates=2 verified=1 wrong=1 ")) == 0,
		"output:\n%s", out);
}

Test(island_cli, no_round_is_a_failure)
{
	static const char *const extra[] = {"--rounds", "1", "--timeout", "1", NULL};
	char out[8192];
	struct cli c;

	cli_start(&c, extra);
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 1, "output:\n%s", out);
	cr_expect(strstr(summary(out), "rounds=0 ") != NULL, "output:\n%s", out);
}

/* The timeout's message names what came instead of a ROUND: here ROUNDs
 * of wire version 2 (an edge with [auth]) to an island with --auth off;
 * before them, nothing at all. */
Test(island_cli, no_round_names_what_came_instead)
{
	static const char *const extra[] = {"--rounds", "1", "--timeout", "1", NULL};
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	char out[8192], want[256];
	struct cli c;

	with_stderr = true;
	cli_start(&c, extra);
	cr_assert_eq(getsockname(c.edge, (struct sockaddr *)&a, &alen), 0);
	round_version = 2;
	send_round(&c, 7, 1u << 0, 500 * MS);
	send_round(&c, 8, 1u << 0, 500 * MS);
	round_version = 0;
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 1, "output:\n%s", out);
	snprintf(want, sizeof(want),
		"isthmus-island: no ROUND within 1 s after 0 rounds; received 2 ROUND from "
		"127.0.0.1:%u with wire version 2, but this session has no key file (auth off",
		(unsigned int)ntohs(a.sin_port));
	cr_expect_not_null(strstr(out, want), "no '%s' in:\n%s", want, out);

	cli_start(&c, extra);
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 1, "output:\n%s", out);
	snprintf(want, sizeof(want), "after 0 rounds; nothing received on 127.0.0.1:%u ",
		(unsigned int)c.island_port);
	cr_expect_not_null(strstr(out, want), "no '%s' in:\n%s", want, out);
	with_stderr = false;
}

Test(island_cli, usage_errors_exit_2)
{
	const char *bin = getenv("ISLAND_BIN");
	char cmd[512];

	cr_assert_not_null(bin);
	snprintf(cmd, sizeof(cmd), "%s --island 3 --islands 3 --edge 127.0.0.1 2>/dev/null", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd), "%s --islands 3 --edge 127.0.0.1 --auth off 2>/dev/null", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --dtype fp16 2>/dev/null",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --overlap 4 2>/dev/null",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	/* authentication must be chosen: neither, both, or "--auth on" */
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 2>&1 | grep -q -- '--key-file PATH' "
		"&& exit 2",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2, "no --key-file/--auth off: no clear error");
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 2>/dev/null; exit $?", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --key-file k 2>/dev/null",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth on 2>/dev/null", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	/* --sockets 1..16, --gso/--gro on|off */
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --sockets 0 2>/dev/null",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --sockets 17 2>/dev/null",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --gso yes 2>&1 | "
		"grep -q -- \"bad value for --gso: 'yes'\" && exit 2",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2, "--gso yes: no clear error");
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --gro 1 2>/dev/null", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	/* --hosts 1..16, --host below it, and a tensor with a chunk a host */
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --hosts 17 2>/dev/null",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --hosts 0 2>/dev/null", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --auth off --hosts 2 --host 2 2>&1 | "
		"grep -q -- '--host 2 is not below --hosts 2' && exit 2",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2, "--host 2 --hosts 2: no clear error");
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 3 --edge 127.0.0.1 --bind 127.0.0.1:9 --auth off "
		"--elems 400 --hosts 3 2>&1 | grep -q -- 'hosts 3: the tensor has 2 chunks' "
		"&& exit 3",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 3, "more hosts than chunks: no clear error");
	snprintf(cmd, sizeof(cmd), "%s --help | grep -q -- 'floor(k\\*C/K), floor((k+1)\\*C/K)'",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 0, "--help does not state the chunk-range rule");
	snprintf(cmd, sizeof(cmd), "%s --help | grep -q -- '--gso on|off'", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 0, "--help does not name --gso");
	snprintf(cmd, sizeof(cmd), "%s --help | grep -q -- '--sockets N'", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 0, "--help does not name --sockets");
	snprintf(cmd, sizeof(cmd), "%s --help | grep -q -- '--key-file PATH'", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 0, "--help does not name --key-file");
	snprintf(cmd, sizeof(cmd), "%s --help >/dev/null", bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 0);
}

/* Numbers are decimal (lib/text): "010" is ten, not eight (base 0 read it
 * as octal, and took "0x10" as sixteen). */
Test(island_cli, numbers_are_decimal)
{
	const char *bin = getenv("ISLAND_BIN");
	char cmd[512];

	cr_assert_not_null(bin);
	/* ten is not below 9 (eight would be, and the run would start) */
	snprintf(cmd, sizeof(cmd),
		"%s --island 010 --islands 9 --edge 127.0.0.1 --auth off 2>&1 | "
		"grep -q -- '--island 10 is not below --islands 9' && exit 2",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2, "--island 010 is not ten");
	snprintf(cmd, sizeof(cmd),
		"%s --island 0 --islands 0x10 --edge 127.0.0.1 --auth off 2>&1 | "
		"grep -q -- \"bad value for --islands: '0x10'\" && exit 2",
		bin);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 2, "--islands 0x10 taken");
}

Test(island_cli, key_file_is_checked_before_anything_runs)
{
	const char *bin = getenv("ISLAND_BIN");
	char path[] = "/tmp/isth_cli_keys.XXXXXX", cmd[1024];
	int fd;
	FILE *f;

	cr_assert_not_null(bin);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"job 5\nepoch 1 round 0 key "
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n");
	fclose(f);
	/* group-readable: refused, the error names the file, no key bytes */
	cr_assert_eq(chmod(path, 0640), 0);
	snprintf(cmd, sizeof(cmd),
		"out=$(%s --job 5 --island 0 --islands 3 --edge 127.0.0.1 --key-file %s 2>&1); "
		"rc=$?; echo \"$out\" | grep -q '%s' || exit 10; "
		"echo \"$out\" | grep -q 0405060708 && exit 11; exit $rc",
		bin, path, path);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 1, "mode 0640 key file not refused by name");
	/* the wrong job: refused */
	cr_assert_eq(chmod(path, 0600), 0);
	snprintf(cmd, sizeof(cmd),
		"%s --job 6 --island 0 --islands 3 --edge 127.0.0.1 --key-file %s 2>&1 | "
		"grep -q 'job 5, not job 6'",
		bin, path);
	cr_expect_eq(WEXITSTATUS(system(cmd)), 0, "key file of another job not refused");
	unlink(path);
}

/* Write @text to a new mode-0600 file and rename it over @path. */
static void
replace_file(const char *path, const char *text)
{
	char tmp[128];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(rename(tmp, path), 0);
}

static struct isth_auth_engine *
engine_of(const char *path, struct isth_auth **a)
{
	struct isth_auth_conf ac = {.key_file = path, .job = JOB, .n_islands = N};
	struct isth_auth_engine *e;
	char err[256];

	cr_assert_eq(isth_auth_create(&ac, a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(isth_auth_engine_create(*a, ISTH_AUTH_OPENSSL, &e), 0);
	return e;
}

#define V2_KEY "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

/*
 * --key-file: the CLI speaks version 2 (348-element chunks, DATA sealed
 * with its UP key, the edge's sealed ROUND and AGGs verified) and a
 * SIGHUP reloads the key file: epoch 2 from round 2 is appended after
 * round 1, and round 2 is tagged and verified with it both ways.
 */
Test(island_cli, key_file_speaks_v2_and_sighup_rotates_keys)
{
	char path[] = "/tmp/isth_cli_v2.XXXXXX", out[8192];
	const char *extra[] = {"--rounds", "2", "--overlap", "1", "--key-file", path, NULL};
	struct isth_auth *a1, *a2;
	struct isth_auth_engine *e1, *e2;
	struct cli c;
	int fd;

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	replace_file(path, "job 5\nepoch 1 round 0 key " V2_KEY "\n");
	e1 = engine_of(path, &a1);
	auth_e = e1;
	ce = 348;
	cli_start(&c, extra);
	cr_expect(strstr(c.head, "chunks of 348") != NULL && strstr(c.head, "auth on") != NULL,
		"banner: %s", c.head);

	send_round(&c, 1, 0x5, 2000 * MS);
	expect_data(&c, 1);
	send_agg(&c, 1, 0, 0x5, 0, false, 0, -1);
	send_agg(&c, 1, 1, 0x5, 0, false, 0, -1);
	cli_wait_for(&c, "round 1 ");

	/* the rotation: epoch 2 from round 2 appended, then SIGHUP */
	replace_file(
		path, "job 5\nepoch 1 round 0 key " V2_KEY "\nepoch 2 round 2 key " V2_KEY "\n");
	e2 = engine_of(path, &a2);
	cr_assert_eq(kill(c.pid, SIGHUP), 0);
	cli_wait_for(&c, "keys reloaded");
	auth_e = e2;
	send_round(&c, 2, 0x5, 2000 * MS);
	expect_data(&c, 2); /* verifies with epoch 2's UP key only */
	send_agg(&c, 2, 0, 0x5, 0, false, 0, -1);
	send_agg(&c, 2, 1, 0x5, 0, false, 0, -1);
	cr_assert_eq(cli_finish(&c, out, sizeof(out)), 0, "output:\n%s", out);
	cr_expect(
		strstr(summary(out), "rounds=2 aggregates=4 verified=4 wrong=0 partial=0 ") != NULL,
		"output:\n%s", out);
	auth_e = NULL;
	ce = CE;
	isth_auth_engine_free(e1);
	isth_auth_engine_free(e2);
	isth_auth_free(a1);
	isth_auth_free(a2);
	unlink(path);
}
