/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-island: plays one island for R rounds with deterministic tensors
 * and checks every aggregate against the exact sum over the contributors
 * its bitmap names (doc/island.md, "isthmus-island").
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "isth_island.h"
#include "isth_wire.h"

#define EXIT_USAGE 2

static const char usage[] =
"usage: isthmus-island --island ID --islands N --edge IP[:PORT] [options]\n"
"\n"
"Plays one island of an isthmus job for R rounds. Each round it waits for\n"
"the edge's ROUND, sends its tensor as DATA (unless silenced by\n"
"--stop-after), collects the AGGs (NACKing gaps), and verifies every\n"
"chunk's aggregate against the exact sum, computed here from the formula\n"
"below, over the contributors the chunk's bitmap reports.\n"
"\n"
"Tensor values, element i of island k in round r (uint32 arithmetic):\n"
"  int32: (k+1)*1000003 + r*7919 + i*31            (wrapping)\n"
"  fp32:  (((k+1)*131 + r*17 + i*7) mod 1024 - 512) / 16\n"
"         sixteenths in [-32, 32): sums of up to 64 islands are exact in\n"
"         binary32 in any order, so fp32 is checked exactly too.\n"
"\n"
"Options:\n"
"  --job N          job id (default 1)\n"
"  --island ID      this island's id, 0..N-1 (required)\n"
"  --islands N      islands in the job, 1..64 (required)\n"
"  --edge IP[:PORT] the edge's access address (required; port 9471)\n"
"  --bind IP[:PORT] local address the edge sends to (default 0.0.0.0:9471)\n"
"  --rounds R       rounds to play (default 10)\n"
"  --dtype T        int32 or fp32 (default int32)\n"
"  --elems N        tensor elements; must match the edge's ROUND\n"
"                   (n_chunks * chunk_elems covers it; default 1024)\n"
"  --mtu M          IP MTU, sets the chunk size (default 1500: 358 elems)\n"
"  --timeout S      seconds to wait for each ROUND (default 10)\n"
"  --stop-after K   send DATA in the first K rounds played only, then keep\n"
"                   receiving and verifying but stay silent: an island\n"
"                   that died as a sender (peers see partials naming it)\n"
"  --grace MS       keep collecting AGGs MS ms past the deadline (default 0)\n"
"  --nack-interval MS  re-NACK a missing AGG at most every MS ms (default 5)\n"
"  --probe MS       tail-loss probe after MS quiet ms (default 10; 0: off)\n"
"  --help           this text\n"
"\n"
"Output: one line per round\n"
"  round R clique {..} chunks N complete C partial P missing <who/which>\n"
"  nacks N resent N ms X\n"
"then the summary\n"
"  ISLAND island= rounds= aggregates= verified= wrong= partial= missing=\n"
"  nacks= resent= round_ms_mean=\n"
"aggregates counts chunk results, verified those equal to the exact sum\n"
"over their bitmap, wrong the others, partial those missing contributors,\n"
"missing the contributions reported missing. Round time is from the\n"
"ROUND's start_ns to the end of the round (complete, or the deadline).\n"
"Exit status: 0 if wrong=0 and every round finished, 1 otherwise, 2 for\n"
"usage errors.\n";

struct opts {
	uint32_t job;
	int island;
	uint32_t n_islands;
	uint32_t edge_ip, bind_ip;
	uint16_t edge_port, bind_port;
	uint32_t rounds;
	uint8_t dtype;
	uint32_t elems;
	unsigned int mtu;
	uint64_t timeout_ns;
	int64_t stop_after;	/* -1: never */
	uint64_t grace_ns, nack_ns, probe_ns;
};

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_addr(const char *s, uint32_t *ip, uint16_t *port)
{
	char host[64];
	const char *colon = strchr(s, ':');
	struct in_addr a;
	uint64_t p;
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	if (n == 0 || n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	if (inet_pton(AF_INET, host, &a) != 1)
		return -EINVAL;
	*ip = ntohl(a.s_addr);
	if (colon) {
		if (parse_u64(colon + 1, 1, 65535, &p))
			return -EINVAL;
		*port = (uint16_t)p;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "job", required_argument, NULL, 'j' },
		{ "island", required_argument, NULL, 'i' },
		{ "islands", required_argument, NULL, 'n' },
		{ "edge", required_argument, NULL, 'e' },
		{ "bind", required_argument, NULL, 'b' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "elems", required_argument, NULL, 'E' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 't' },
		{ "stop-after", required_argument, NULL, 's' },
		{ "grace", required_argument, NULL, 'g' },
		{ "nack-interval", required_argument, NULL, 'k' },
		{ "probe", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_edge = false;
	int c, li = 0;
	uint64_t v;

	*o = (struct opts){
		.job = 1, .island = -1, .edge_port = ISTH_WIRE_PORT,
		.bind_port = ISTH_WIRE_PORT, .rounds = 10,
		.dtype = ISTH_DTYPE_INT32, .elems = 1024, .mtu = 1500,
		.timeout_ns = 10000000000ull, .stop_after = -1,
		.nack_ns = 5000000ull, .probe_ns = 10000000ull,
	};
	while ((c = getopt_long(argc, argv, "h", lo, &li)) != -1) {
		const char *a = optarg;
		int bad = 0;

		switch (c) {
		case 'j': bad = parse_u64(a, 0, UINT32_MAX, &v); o->job = (uint32_t)v; break;
		case 'i': bad = parse_u64(a, 0, 63, &v); o->island = (int)v; break;
		case 'n': bad = parse_u64(a, 1, 64, &v); o->n_islands = (uint32_t)v; break;
		case 'e': bad = parse_addr(a, &o->edge_ip, &o->edge_port); have_edge = true; break;
		case 'b': bad = parse_addr(a, &o->bind_ip, &o->bind_port); break;
		case 'r': bad = parse_u64(a, 1, UINT32_MAX, &v); o->rounds = (uint32_t)v; break;
		case 'd':
			if (strcmp(a, "int32") == 0)
				o->dtype = ISTH_DTYPE_INT32;
			else if (strcmp(a, "fp32") == 0)
				o->dtype = ISTH_DTYPE_FP32;
			else
				bad = 1;
			break;
		case 'E': bad = parse_u64(a, 1, UINT32_MAX / 4, &v); o->elems = (uint32_t)v; break;
		case 'm': bad = parse_u64(a, 72, 65535, &v); o->mtu = (unsigned int)v; break;
		case 't': bad = parse_u64(a, 1, 86400, &v); o->timeout_ns = v * 1000000000ull; break;
		case 's': bad = parse_u64(a, 0, UINT32_MAX, &v); o->stop_after = (int64_t)v; break;
		case 'g': bad = parse_u64(a, 0, 3600000, &v); o->grace_ns = v * 1000000ull; break;
		case 'k': bad = parse_u64(a, 1, 60000, &v); o->nack_ns = v * 1000000ull; break;
		case 'p':
			bad = parse_u64(a, 0, 60000, &v);
			o->probe_ns = v ? v * 1000000ull : UINT64_MAX;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fputs(usage, stderr);
			return -EINVAL;
		}
		if (bad) {
			fprintf(stderr, "isthmus-island: bad value for --%s: '%s'\n",
				lo[li].name, a);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "isthmus-island: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (o->island < 0 || o->n_islands == 0 || !have_edge) {
		fprintf(stderr, "isthmus-island: --island, --islands and --edge are required (see --help)\n");
		return -EINVAL;
	}
	if ((uint32_t)o->island >= o->n_islands) {
		fprintf(stderr, "isthmus-island: --island %d is not below --islands %u\n",
			o->island, o->n_islands);
		return -EINVAL;
	}
	return 0;
}

static uint32_t val_i32(unsigned int k, uint32_t r, uint32_t i)
{
	return (uint32_t)(k + 1) * 1000003u + r * 7919u + i * 31u;
}

/* In sixteenths, so that references are summed exactly as integers. */
static int val_f32_16(unsigned int k, uint32_t r, uint32_t i)
{
	return (int)(((uint32_t)(k + 1) * 131u + r * 17u + i * 7u) % 1024u) - 512;
}

static void make_tensor(const struct opts *o, uint32_t r, void *t)
{
	uint32_t i;

	for (i = 0; i < o->elems; i++) {
		if (o->dtype == ISTH_DTYPE_INT32)
			((uint32_t *)t)[i] = val_i32((unsigned int)o->island, r, i);
		else
			((float *)t)[i] = (float)val_f32_16((unsigned int)o->island, r, i) / 16.0f;
	}
}

/* Is every element of chunk @c the exact sum over @set? */
static bool chunk_ok(const struct opts *o, uint32_t r, const void *out,
		     uint32_t first, uint32_t count, uint64_t set)
{
	uint32_t i;

	for (i = first; i < first + count; i++) {
		uint32_t si = 0;
		int sf = 0;
		unsigned int k;

		for (k = 0; k < 64; k++) {
			if (!(set & (UINT64_C(1) << k)))
				continue;
			si += val_i32(k, r, i);
			sf += val_f32_16(k, r, i);
		}
		if (o->dtype == ISTH_DTYPE_INT32) {
			if (((const uint32_t *)out)[i] != si)
				return false;
		} else if (((const float *)out)[i] != (float)sf / 16.0f) {
			return false;
		}
	}
	return true;
}

static void set_str(uint64_t set, char *buf, size_t size)
{
	size_t off = 0;
	unsigned int k;

	off += (size_t)snprintf(buf, size, "{");
	for (k = 0; k < 64 && off < size; k++)
		if (set & (UINT64_C(1) << k))
			off += (size_t)snprintf(buf + off, size - off, "%s%u",
						off > 1 ? "," : "", k);
	if (off < size)
		snprintf(buf + off, size - off, "}");
}

int main(int argc, char **argv)
{
	uint64_t aggregates = 0, verified = 0, wrong = 0, partial = 0, missing = 0;
	struct isth_island_stats st0, st;
	struct isth_island_conf conf;
	struct isth_island_chunk *ch;
	struct isth_island *s;
	double ms_sum = 0;
	uint32_t played = 0, n_chunks, ce, c;
	void *tensor, *out;
	struct opts o;
	bool failed = false;
	unsigned int i;

	/* Die with the parent: nothing outlives a kill -9 of scripts/testbed.sh.
	 * Started by a testbed (ISTH_TESTBED set) whose script is already gone
	 * (we were left to init before the prctl): leave. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 ||
	    (getenv("ISTH_TESTBED") != NULL && getppid() == 1))
		return 1;
	if (parse_args(argc, argv, &o) < 0)
		return EXIT_USAGE;
	conf = (struct isth_island_conf){
		.job = o.job, .island = (uint8_t)o.island, .n_islands = o.n_islands,
		.edge_ip = o.edge_ip, .edge_port = o.edge_port,
		.bind_ip = o.bind_ip, .bind_port = o.bind_port, .mtu = o.mtu,
		.elems = o.elems, .dtype = o.dtype,
		.nack_interval_ns = o.nack_ns, .probe_ns = o.probe_ns,
		.grace_ns = o.grace_ns,
	};
	s = isth_island_open(&conf);
	if (s == NULL) {
		fprintf(stderr, "isthmus-island: cannot open the session: %s\n",
			strerror(errno));
		return EXIT_FAILURE;
	}
	n_chunks = isth_island_n_chunks(s);
	ce = isth_island_chunk_elems(s);
	tensor = malloc((size_t)o.elems * 4);
	out = malloc((size_t)o.elems * 4);
	ch = calloc(n_chunks, sizeof(*ch));
	if (tensor == NULL || out == NULL || ch == NULL) {
		fprintf(stderr, "isthmus-island: out of memory\n");
		return EXIT_FAILURE;
	}
	printf("isthmus-island: island %d of %u, job %u, %s x %u = %u chunks of %u, %u rounds\n",
	       o.island, o.n_islands, o.job, o.dtype == ISTH_DTYPE_INT32 ? "int32" : "fp32",
	       o.elems, n_chunks, ce, o.rounds);
	fflush(stdout);

	while (played < o.rounds) {
		struct isth_island_result res;
		struct isth_island_round ri;
		char clique[200], miss[512];
		uint32_t ok = 0;
		double ms;
		int rc;

		rc = isth_island_wait_round(s, o.timeout_ns, &ri);
		if (rc == -EPROTO) {
			fprintf(stderr, "isthmus-island: round %u: ROUND has %u chunks of %u elements, "
				"this island %u of %u (check --elems and --mtu)\n",
				ri.round, ri.n_chunks, ri.chunk_elems, n_chunks, ce);
			failed = true;
			break;
		}
		if (rc < 0) {
			fprintf(stderr, "isthmus-island: no ROUND within %" PRIu64 " s after %u rounds\n",
				(uint64_t)(o.timeout_ns / 1000000000ull), played);
			failed = true;
			break;
		}
		isth_island_stats(s, &st0);
		if (o.stop_after < 0 || played < (uint64_t)o.stop_after) {
			make_tensor(&o, ri.round, tensor);
			rc = isth_island_send(s, ri.round, tensor, (size_t)o.elems * 4);
			if (rc < 0)
				fprintf(stderr, "isthmus-island: round %u: send: %s\n",
					ri.round, strerror(-rc));
		}
		rc = isth_island_result(s, ri.round, out, (size_t)o.elems * 4, ch,
					n_chunks, &res, o.timeout_ns);
		if (rc < 0 && rc != -ETIMEDOUT) {
			fprintf(stderr, "isthmus-island: round %u: result: %s\n",
				ri.round, strerror(-rc));
			failed = true;
			break;
		}
		isth_island_stats(s, &st);
		for (c = 0; c < n_chunks; c++) {
			aggregates++;
			if (chunk_ok(&o, ri.round, out, c * ce, ch[c].count, ch[c].bitmap)) {
				verified++;
				ok++;
			} else {
				wrong++;
				fprintf(stderr, "isthmus-island: round %u chunk %u: WRONG sum for bitmap 0x%" PRIx64 "\n",
					ri.round, c, ch[c].bitmap);
			}
		}
		partial += res.partial;
		missing += res.missing;
		ms = res.end_ns > ri.start_ns ? (double)(res.end_ns - ri.start_ns) / 1e6 : 0.0;
		ms_sum += ms;
		played++;
		set_str(ri.clique, clique, sizeof(clique));
		isth_island_missing_str(ch, n_chunks, miss, sizeof(miss));
		printf("round %u clique %s chunks %u complete %u partial %u missing %s "
		       "verified %u nacks %" PRIu64 " resent %" PRIu64 " ms %.3f%s\n",
		       ri.round, clique, n_chunks, res.complete, res.partial,
		       res.partial ? miss : "-", ok,
		       st.nacks_sent - st0.nacks_sent, st.resent - st0.resent, ms,
		       res.self_sent ? "" : " (silent)");
		fflush(stdout);
	}

	isth_island_stats(s, &st);
	for (i = 1; i < ISTH_WIRE_REASON_MAX; i++)
		if (st.wire_drop[i])
			fprintf(stderr, "isthmus-island: dropped %" PRIu64 " packets: %s\n",
				st.wire_drop[i], isth_wire_reason_name(i));
	for (i = 0; i < ISTH_ISLAND_DROP_MAX; i++)
		if (st.drop[i])
			fprintf(stderr, "isthmus-island: dropped %" PRIu64 " packets: %s\n",
				st.drop[i], isth_island_drop_name(i));
	printf("ISLAND island=%d rounds=%u aggregates=%" PRIu64 " verified=%" PRIu64
	       " wrong=%" PRIu64 " partial=%" PRIu64 " missing=%" PRIu64
	       " nacks=%" PRIu64 " resent=%" PRIu64 " round_ms_mean=%.3f\n",
	       o.island, played, aggregates, verified, wrong, partial, missing,
	       st.nacks_sent, st.resent, played ? ms_sum / played : 0.0);
	fflush(stdout);
	isth_island_close(s);
	free(tensor);
	free(out);
	free(ch);
	return wrong == 0 && !failed && played == o.rounds ? 0 : 1;
}
