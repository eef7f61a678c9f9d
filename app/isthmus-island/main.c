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
#include <unistd.h>

#include <arpa/inet.h>

#include "isth_clock.h"
#include "isth_island.h"
#include "isth_notify.h"
#include "isth_text.h"
#include "isth_wire.h"
#include "isth_version.h"

#define EXIT_USAGE 2

/* printf format: its %u are the default port (ISTH_WIRE_PORT) */
#define USAGE \
	"usage: isthmus-island --island ID --islands N --edge IP[:PORT]\n" \
	"                      (--key-file PATH | --auth off) [options]\n" \
	"\n" \
	"Plays one island of an isthmus job for R rounds. Each round it waits for\n" \
	"the edge's ROUND, sends its tensor as DATA (unless silenced by\n" \
	"--stop-after), collects the AGGs (NACKing gaps), and verifies every\n" \
	"chunk's aggregate against the exact sum, computed here from the formula\n" \
	"below, over the contributors the chunk's bitmap reports.\n" \
	"\n" \
	"Tensor values, element i of island k in round r (uint32 arithmetic):\n" \
	"  int32: (k+1)*1000003 + r*7919 + i*31            (wrapping)\n" \
	"  fp32:  (((k+1)*131 + r*17 + i*7) mod 1024 - 512) / 16\n" \
	"         sixteenths in [-32, 32): sums of up to 64 islands are exact in\n" \
	"         binary32 in any order, so fp32 is checked exactly too.\n" \
	"  bf16:  ((k+1)*131 + r*17 + i*7) mod 4 - 2\n" \
	"         integers in [-2, 1]: every partial sum of up to 64 is exact in\n" \
	"         bf16, so sums are exact whether the edge returns them as fp32\n" \
	"         or as bf16 ([agg] bf16_out); results are fp32.\n" \
	"\n" \
	"Options (numbers are decimal: \"010\" is ten):\n" \
	"  --job N          job id (default 1)\n" \
	"  --island ID      this island's id, 0..N-1 (required)\n" \
	"  --islands N      islands in the job, 1..64 (required)\n" \
	"  --edge IP[:PORT] the edge's access address (required; PORT default %u,\n" \
	"                   isthmusd's [isthmusd] udp_port)\n" \
	"  --key-file PATH  this island's key file, island-<i>.key from\n" \
	"                   'isthmus-keys split' (or the job file; another\n" \
	"                   island's is refused), mode 0600 (doc/protocol.md,\n" \
	"                   \"Keys\"): wire version 2, DATA and NACK tagged, every\n" \
	"                   AGG, GONE and ROUND verified before use (refusals\n" \
	"                   counted by name: auth_format, auth_epoch, auth_tag, ...)\n" \
	"  --auth off       no authentication, wire version 1 (labs only; logged\n" \
	"                   as a WARNING). One of --key-file and --auth off is\n" \
	"                   required\n" \
	"                   SIGHUP reloads the key file (key rotation: isthmus-keys\n" \
	"                   rotate and split, the new file here, then signal);\n" \
	"                   a refused file keeps the keys in use\n" \
	"  --bind IP[:PORT] local address the edge sends ROUND and AGG to (default\n" \
	"                   0.0.0.0:%u, isthmusd's default [access] island_port)\n" \
	"  --rounds R       rounds to play (default 10)\n" \
	"  --dtype T        int32, fp32 or bf16 (default int32)\n" \
	"  --elems N        tensor elements; must match the edge's ROUND\n" \
	"                   (n_chunks * chunk_elems covers it; default 1024)\n" \
	"  --mtu M          IP MTU, sets the chunk size (default 1500: 358 elems\n" \
	"                   with --auth off; with --key-file 356 - 4 min(N-1, 15)\n" \
	"                   for N islands, room for the edge's WAN tag list:\n" \
	"                   348 for 3, 324 for 9)\n" \
	"  --timeout S      seconds to wait for each ROUND (default 10); when none\n" \
	"                   comes, the message says what arrived instead: datagrams\n" \
	"                   from another address or port than --edge, of another\n" \
	"                   wire version (--key-file against --auth off), tags that\n" \
	"                   do not verify (another key file), another --job or\n" \
	"                   --island; or that nothing arrived at all on --bind\n" \
	"  --overlap K      rounds in flight, 1..3 (default 2): round r+1's DATA\n" \
	"                   leaves as soon as its ROUND arrives (the edge paces it\n" \
	"                   to its planned offset), whether or not round r has\n" \
	"                   ended; late rounds are still collected, in order.\n" \
	"                   1: wait for each round's end before the next\n" \
	"  --stop-after K   send DATA in the first K rounds taken only, then keep\n" \
	"                   receiving and verifying but stay silent: an island\n" \
	"                   that died as a sender (peers see partials naming it)\n" \
	"  --grace MS       keep collecting AGGs MS ms past the deadline (default:\n" \
	"                   one period of the round, for the AGGs an edge sends up\n" \
	"                   to its [agg] round_slack late; a complete round ends\n" \
	"                   at once all the same; 0: end at the deadline)\n" \
	"  --nack-interval MS  re-NACK a missing AGG at most every MS ms (default 5)\n" \
	"  --probe MS       tail-loss probe after MS quiet ms (default 10; 0: off)\n" \
	"  --sockets N      sockets (and sending threads) of the session, 1..16\n" \
	"                   (default 1): socket i is bound to PORT + i and sends\n" \
	"                   the i-th of N chunk ranges of every round's DATA\n" \
	"  --gso on|off     UDP GSO on send (default off): the kernel cuts one\n" \
	"                   buffer into up to 64 DATA datagrams; the same bytes on\n" \
	"                   the wire; falls back to plain sends if refused\n" \
	"  --gro on|off     UDP GRO on receive (default off): read coalesced AGGs\n" \
	"  --rx-threads on|off  a receive thread per socket (default off): socket\n" \
	"                   i reads, verifies and sums the AGG streams k with\n" \
	"                   k %% N == i (N = --sockets), which the edge sends to\n" \
	"                   PORT + k %% N: its [access] island_sockets must be N.\n" \
	"                   off: every socket is read by the main thread\n" \
	"  --hosts K        hosts of this island, 1..16 (default 1): the island is\n" \
	"                   K processes, each with its own address (the edge's\n" \
	"                   [access] island_hosts), each sending and receiving\n" \
	"                   its own part of every round. Host k owns the chunk\n" \
	"                   ids [floor(k*C/K), floor((k+1)*C/K)) of a round of C\n" \
	"                   chunks (C = the ROUND's n_chunks), i.e. the elements\n" \
	"                   from floor(k*C/K)*chunk_elems on; it sends DATA for\n" \
	"                   those chunks only, takes and NACKs AGGs for those only\n" \
	"                   (others are refused as agg_range) and verifies them.\n" \
	"                   --elems stays the whole tensor's, the same on every\n" \
	"                   host; K must not exceed C. E.g. C = 3, K = 2: host 0\n" \
	"                   owns chunk 0, host 1 chunks 1-2\n" \
	"  --host k         this process's host, 0..K-1 (default 0)\n" \
	"  --die-with-parent  exit (SIGTERM) when the parent process exits; also\n" \
	"                   with ISTH_DIE_WITH_PARENT=1 or ISTH_TESTBED set\n" \
	"  --help           this text\n" \
	"  --version        print the version on one line and exit\n" \
	"\n" \
	"Output: one line per round\n" \
	"  round R clique {..} chunks N complete C partial P missing <who/which>\n" \
	"  (N the chunks of this host's range; <which> names chunk ids)\n" \
	"  nacks N resent N ms X tx_ms Y\n" \
	"or, for a round this process came back to only after the library had\n" \
	"reused its slot (it keeps 4 rounds; e.g. the process was stopped),\n" \
	"  round R clique {..} chunks N lost: no longer kept\n" \
	"then the summary\n" \
	"  ISLAND island= rounds= aggregates= verified= wrong= partial= missing=\n" \
	"  nacks= resent= round_ms_mean= lost=\n" \
	"aggregates counts chunk results, verified those equal to the exact sum\n" \
	"over their bitmap, wrong the others, partial those missing contributors,\n" \
	"missing the contributions reported missing; a lost round's chunks count\n" \
	"as aggregates, partial and not verified, all its peers as missing, and\n" \
	"the round in lost (round_ms_mean is over the rounds not lost). Round\n" \
	"time is from the\n" \
	"ROUND's start_ns to the end of the round (complete, or the deadline);\n" \
	"tx_ms from start_ns to when the DATA was handed to the socket.\n" \
	"Exit status: 0 if wrong=0 and every round finished, 1 otherwise, 2 for\n" \
	"usage errors.\n"


struct opts {
	bool die_with_parent; /* --die-with-parent */
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
	unsigned int overlap; /* rounds in flight */
	int64_t stop_after; /* -1: never */
	uint64_t grace_ns, nack_ns, probe_ns;
	const char *key_file; /* NULL with --auth off */
	bool auth_off;
	unsigned int n_sockets;
	uint8_t gso, gro; /* enum isth_island_offload */
	bool rx_threads;
	unsigned int hosts, host; /* --hosts, --host */
};

/* "on" or "off" for --gso/--gro. */
static int
parse_onoff(const char *s, uint8_t *out)
{
	if (strcmp(s, "on") == 0)
		*out = ISTH_ISLAND_OFFLOAD_ON;
	else if (strcmp(s, "off") == 0)
		*out = ISTH_ISLAND_OFFLOAD_OFF;
	else
		return -EINVAL;
	return 0;
}

/* Numbers on the command line are decimal (lib/text): "010" is ten. */
static int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return isth_text_parse_u64_range(s, min, max, out);
}

static int
parse_addr(const char *s, uint32_t *ip, uint16_t *port)
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

static const struct option long_opts[] = {
	{"job", required_argument, NULL, 'j'},
	{"island", required_argument, NULL, 'i'},
	{"islands", required_argument, NULL, 'n'},
	{"edge", required_argument, NULL, 'e'},
	{"bind", required_argument, NULL, 'b'},
	{"rounds", required_argument, NULL, 'r'},
	{"dtype", required_argument, NULL, 'd'},
	{"elems", required_argument, NULL, 'E'},
	{"mtu", required_argument, NULL, 'm'},
	{"timeout", required_argument, NULL, 't'},
	{"stop-after", required_argument, NULL, 's'},
	{"grace", required_argument, NULL, 'g'},
	{"nack-interval", required_argument, NULL, 'k'},
	{"probe", required_argument, NULL, 'p'},
	{"overlap", required_argument, NULL, 'o'},
	{"key-file", required_argument, NULL, 'K'},
	{"auth", required_argument, NULL, 'A'},
	{"sockets", required_argument, NULL, 'S'},
	{"gso", required_argument, NULL, 'G'},
	{"gro", required_argument, NULL, 'R'},
	{"die-with-parent", no_argument, NULL, 'P'},
	{"rx-threads", required_argument, NULL, 'T'},
	{"hosts", required_argument, NULL, 'H'},
	{"host", required_argument, NULL, 'O'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int
parse_dtype(const char *a, uint8_t *dtype)
{
	if (strcmp(a, "int32") == 0)
		*dtype = ISTH_WIRE_DTYPE_INT32;
	else if (strcmp(a, "fp32") == 0)
		*dtype = ISTH_WIRE_DTYPE_FP32;
	else if (strcmp(a, "bf16") == 0)
		*dtype = ISTH_WIRE_DTYPE_BF16;
	else
		return -EINVAL;
	return 0;
}

/* The numeric options: option @c's value @a into @o; nonzero if bad. */
static int
parse_number(int c, const char *a, struct opts *o)
{
	uint64_t v = 0;
	int bad = 0;

	switch (c) {
	case 'j':
		bad = parse_u64(a, 0, UINT32_MAX, &v);
		o->job = (uint32_t)v;
		break;
	case 'i':
		bad = parse_u64(a, 0, 63, &v);
		o->island = (int)v;
		break;
	case 'n':
		bad = parse_u64(a, 1, 64, &v);
		o->n_islands = (uint32_t)v;
		break;
	case 'r':
		bad = parse_u64(a, 1, UINT32_MAX, &v);
		o->rounds = (uint32_t)v;
		break;
	case 'E':
		bad = parse_u64(a, 1, UINT32_MAX / 4, &v);
		o->elems = (uint32_t)v;
		break;
	case 'm':
		bad = parse_u64(a, 72, 65535, &v);
		o->mtu = (unsigned int)v;
		break;
	case 't':
		bad = parse_u64(a, 1, 86400, &v);
		o->timeout_ns = v * 1000000000ull;
		break;
	case 's':
		bad = parse_u64(a, 0, UINT32_MAX, &v);
		o->stop_after = (int64_t)v;
		break;
	case 'g':
		bad = parse_u64(a, 0, 3600000, &v);
		o->grace_ns = v * 1000000ull;
		break;
	case 'k':
		bad = parse_u64(a, 1, 60000, &v);
		o->nack_ns = v * 1000000ull;
		break;
	case 'o':
		bad = parse_u64(a, 1, ISTH_ISLAND_ROUNDS - 1, &v);
		o->overlap = (unsigned int)v;
		break;
	case 'p':
		bad = parse_u64(a, 0, 60000, &v);
		o->probe_ns = v ? v * 1000000ull : UINT64_MAX;
		break;
	case 'S':
		bad = parse_u64(a, 1, ISTH_ISLAND_MAX_SOCKETS, &v);
		o->n_sockets = (unsigned int)v;
		break;
	case 'H':
		bad = parse_u64(a, 1, ISTH_ISLAND_MAX_HOSTS, &v);
		o->hosts = (unsigned int)v;
		break;
	case 'O':
		bad = parse_u64(a, 0, ISTH_ISLAND_MAX_HOSTS - 1, &v);
		o->host = (unsigned int)v;
		break;
	default:
		bad = -EINVAL;
		break;
	}
	return bad;
}

/* Option @c with value @a (getopt_long's answer) into @o: nonzero if the
 * value is bad. */
static int
parse_opt(int c, const char *a, struct opts *o, bool *have_edge)
{
	uint8_t on = 0;
	int bad;

	switch (c) {
	case 'e':
		*have_edge = true;
		return parse_addr(a, &o->edge_ip, &o->edge_port);
	case 'b':
		return parse_addr(a, &o->bind_ip, &o->bind_port);
	case 'd':
		return parse_dtype(a, &o->dtype);
	case 'K':
		o->key_file = a;
		return a[0] == '\0';
	case 'A':
		/* only "off": authentication on is --key-file */
		bad = strcmp(a, "off") != 0;
		o->auth_off = !bad;
		return bad;
	case 'P':
		o->die_with_parent = true;
		return 0;
	case 'G':
		return parse_onoff(a, &o->gso);
	case 'R':
		return parse_onoff(a, &o->gro);
	case 'T':
		bad = parse_onoff(a, &on);
		o->rx_threads = on == ISTH_ISLAND_OFFLOAD_ON;
		return bad;
	default:
		return parse_number(c, a, o);
	}
}

/* What the options say together: the required ones, one way to choose
 * authentication, the island inside the job. */
static int
check_opts(const struct opts *o, bool have_edge)
{
	if (o->island < 0 || o->n_islands == 0 || !have_edge) {
		fprintf(stderr,
			"isthmus-island: --island, --islands and --edge are required (see "
			"--help)\n");
		return -EINVAL;
	}
	if ((o->key_file == NULL) == !o->auth_off) {
		fprintf(stderr,
			o->key_file
				? "isthmus-island: --key-file and --auth off exclude each other\n"
				: "isthmus-island: authentication: give --key-file PATH (the job's "
				  "key file) or --auth off (no authentication, labs only)\n");
		return -EINVAL;
	}
	if ((uint32_t)o->island >= o->n_islands) {
		fprintf(stderr, "isthmus-island: --island %d is not below --islands %u\n",
			o->island, o->n_islands);
		return -EINVAL;
	}
	if (o->host >= o->hosts) {
		fprintf(stderr,
			"isthmus-island: --host %u is not below --hosts %u (hosts are 0..%u)\n",
			o->host, o->hosts, o->hosts - 1);
		return -EINVAL;
	}
	return 0;
}

static int
parse_args(int argc, char **argv, struct opts *o)
{
	bool have_edge = false;
	int c, li = 0;

	*o = (struct opts){
		.job = 1,
		.island = -1,
		.edge_port = ISTH_WIRE_PORT,
		.bind_port = ISTH_WIRE_PORT,
		.rounds = 10,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.elems = 1024,
		.mtu = 1500,
		.timeout_ns = 10000000000ull,
		.stop_after = -1,
		.overlap = 2,
		.nack_ns = 5000000ull,
		.probe_ns = 10000000ull,
		.grace_ns = ISTH_ISLAND_GRACE_PERIOD,
		.n_sockets = 1,
		.hosts = 1,
	};
	while ((c = getopt_long(argc, argv, "h", long_opts, &li)) != -1) {
		if (c == 'h') {
			printf(USAGE, ISTH_WIRE_PORT, ISTH_WIRE_PORT);
			exit(0);
		}
		if (c == '?' || c == ':') {
			fprintf(stderr, USAGE, ISTH_WIRE_PORT, ISTH_WIRE_PORT);
			return -EINVAL;
		}
		if (parse_opt(c, optarg, o, &have_edge)) {
			fprintf(stderr, "isthmus-island: bad value for --%s: '%s'\n",
				long_opts[li].name, optarg);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "isthmus-island: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return check_opts(o, have_edge);
}

static uint32_t
val_i32(unsigned int k, uint32_t r, uint32_t i)
{
	return (uint32_t)(k + 1) * 1000003u + r * 7919u + i * 31u;
}

/* In sixteenths, so that references are summed exactly as integers. */
static int
val_f32_16(unsigned int k, uint32_t r, uint32_t i)
{
	return (int)(((uint32_t)(k + 1) * 131u + r * 17u + i * 7u) % 1024u) - 512;
}

/* Small integers: every partial sum of up to 64 is exact in bf16. */
static int
val_bf16(unsigned int k, uint32_t r, uint32_t i)
{
	return (int)(((uint32_t)(k + 1) * 131u + r * 17u + i * 7u) % 4u) - 2;
}

/* bf16 tensors are handed over as fp32; the library rounds them (here
 * exactly) to bf16 on the wire. The host's range: @n elements from
 * element @e0 of the tensor (the formula takes the tensor's index). */
static void
make_tensor(const struct opts *o, uint32_t r, void *t, uint32_t e0, uint32_t n)
{
	unsigned int k = (unsigned int)o->island;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (o->dtype == ISTH_WIRE_DTYPE_INT32)
			((uint32_t *)t)[i] = val_i32(k, r, e0 + i);
		else if (o->dtype == ISTH_WIRE_DTYPE_BF16)
			((float *)t)[i] = (float)val_bf16(k, r, e0 + i);
		else
			((float *)t)[i] = (float)val_f32_16(k, r, e0 + i) / 16.0f;
	}
}

/* Is every element of the chunk at tensor elements [first, first +
 * count) the exact sum over @set? @out holds the range from element @e0. */
static bool
chunk_ok(const struct opts *o, uint32_t r, const void *out, uint32_t e0, uint32_t first,
	uint32_t count, uint64_t set)
{
	uint32_t i;

	for (i = first; i < first + count; i++) {
		uint32_t si = 0;
		int sf = 0, sb = 0;
		unsigned int k;

		for (k = 0; k < 64; k++) {
			if (!(set & (UINT64_C(1) << k)))
				continue;
			si += val_i32(k, r, i);
			sf += val_f32_16(k, r, i);
			sb += val_bf16(k, r, i);
		}
		if (o->dtype == ISTH_WIRE_DTYPE_INT32) {
			if (((const uint32_t *)out)[i - e0] != si)
				return false;
		} else if (o->dtype == ISTH_WIRE_DTYPE_BF16) {
			if (((const float *)out)[i - e0] != (float)sb)
				return false;
		} else if (((const float *)out)[i - e0] != (float)sf / 16.0f) {
			return false;
		}
	}
	return true;
}

static void
set_str(uint64_t set, char *buf, size_t size)
{
	size_t off = 0;
	unsigned int k;

	off += (size_t)snprintf(buf, size, "{");
	for (k = 0; k < 64 && off < size; k++)
		if (set & (UINT64_C(1) << k))
			off += (size_t)snprintf(
				buf + off, size - off, "%s%u", off > 1 ? "," : "", k);
	if (off < size)
		snprintf(buf + off, size - off, "}");
}

/* A round taken (its ROUND arrived) and not yet collected. */
struct flight {
	struct isth_island_round ri;
	struct isth_island_stats st0; /* counters when it was taken */
	double tx_ms; /* DATA handed over, from start_ns */
	bool sent;
};

struct run {
	struct opts o;
	struct isth_island *s;
	uint32_t n_chunks, ce; /* the host's range's chunks; elements per chunk */
	struct isth_island_range rg; /* the host's range */
	void *tensor; /* this island's contribution, one round at a time */
	void *out;
	struct isth_island_chunk *ch;
	uint64_t aggregates, verified, wrong, partial, missing;
	double ms_sum;
	uint32_t played;
	uint32_t taken; /* rounds whose ROUND was taken */
	uint32_t lost; /* rounds whose slot was reused before collection */
};

/* Take the result of an ended round, verify it and print its line.
 * Returns false on an error that ends the run. */
static bool
collect(struct run *u, const struct flight *f)
{
	const struct isth_island_round *ri = &f->ri;
	struct isth_island_result res;
	struct isth_island_stats st;
	char clique[200], miss[512];
	uint32_t ok = 0, c;
	double ms;
	int rc;

	rc = isth_island_result(u->s, ri->round, u->out, (size_t)u->rg.n_elems * 4, u->ch,
		u->n_chunks, &res, u->o.timeout_ns);
	if (rc == -ESTALE) {
		/*
		 * The library reused the round's slot for a newer round
		 * before this process came back for it (it was stopped or
		 * starved for several rounds). Ending the run here would turn
		 * one late wake-up into a lost job: count the round as lost,
		 * every chunk partial and unverified, and go on with the
		 * rounds still kept.
		 */
		set_str(ri->clique, clique, sizeof(clique));
		u->aggregates += u->n_chunks;
		u->partial += u->n_chunks;
		u->missing += (uint64_t)__builtin_popcountll(ri->expected) * u->n_chunks;
		u->lost++;
		u->played++;
		printf("round %u clique %s chunks %u lost: no longer kept\n", ri->round, clique,
			u->n_chunks);
		fflush(stdout);
		return true;
	}
	if (rc < 0 && rc != -ETIMEDOUT) {
		fprintf(stderr, "isthmus-island: round %u: result: %s\n", ri->round, strerror(-rc));
		return false;
	}
	isth_island_stats(u->s, &st);
	for (c = 0; c < u->n_chunks; c++) {
		uint32_t id = u->rg.first_chunk + c; /* the tensor's chunk id */

		u->aggregates++;
		if (chunk_ok(&u->o, ri->round, u->out, u->rg.first_elem, id * u->ce, u->ch[c].count,
			    u->ch[c].bitmap)) {
			u->verified++;
			ok++;
		} else {
			u->wrong++;
			fprintf(stderr,
				"isthmus-island: round %u chunk %u: WRONG sum for bitmap 0x%" PRIx64
				"\n",
				ri->round, id, u->ch[c].bitmap);
		}
	}
	u->partial += res.partial;
	u->missing += res.missing;
	ms = res.end_ns > ri->start_ns ? (double)(res.end_ns - ri->start_ns) / 1e6 : 0.0;
	u->ms_sum += ms;
	u->played++;
	set_str(ri->clique, clique, sizeof(clique));
	isth_island_missing_str_at(u->ch, u->n_chunks, u->rg.first_chunk, miss, sizeof(miss));
	printf("round %u clique %s chunks %u complete %u partial %u missing %s "
	       "verified %u nacks %" PRIu64 " resent %" PRIu64 " ms %.3f tx_ms %.3f%s\n",
		ri->round, clique, u->n_chunks, res.complete, res.partial, res.partial ? miss : "-",
		ok, st.nacks_sent - f->st0.nacks_sent, st.resent - f->st0.resent, ms, f->tx_ms,
		res.self_sent ? "" : " (silent)");
	fflush(stdout);
	return true;
}

/* How often the loop looks for ended rounds while it also waits for the
 * next ROUND. */
#define SLICE_NS 2000000ull
/* Longest wait before a SIGHUP (key reload) is acted on. */
#define HUP_SLICE_NS 100000000ull

static volatile sig_atomic_t hup;

static void
on_hup(int sig)
{
	(void)sig;
	hup = 1;
}

/* SIGHUP came: load the key file again between two calls (the library
 * takes it between two packets and refuses a file that would re-key a
 * round in progress; the keys in use then stay). */
static void
reload_if_hup(struct run *u)
{
	struct isth_island_stats st;
	char err[512];
	int rc;

	if (!hup)
		return;
	hup = 0;
	if (u->o.key_file == NULL) {
		fprintf(stderr, "isthmus-island: SIGHUP: no key file to reload (--auth off)\n");
		return;
	}
	rc = isth_island_reload_keys(u->s, u->o.key_file, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "isthmus-island: key reload refused, keys unchanged: %s\n",
			err[0] ? err : strerror(-rc));
		return;
	}
	isth_island_stats(u->s, &st);
	printf("isthmus-island: keys reloaded from %s: %u epochs\n", u->o.key_file, st.auth_epochs);
	fflush(stdout);
}

/* isth_island_wait_round() in slices, so that a SIGHUP is acted on
 * within HUP_SLICE_NS however long the wait. */
static int
wait_round_hup(struct run *u, uint64_t timeout_ns, struct isth_island_round *ri)
{
	uint64_t end = isth_clock_mono_ns() + timeout_ns;

	for (;;) {
		uint64_t now = isth_clock_mono_ns(), slice = end > now ? end - now : 0;
		int rc;

		reload_if_hup(u);
		if (slice > HUP_SLICE_NS)
			slice = HUP_SLICE_NS;
		rc = isth_island_wait_round(u->s, slice, ri);
		if (rc != -ETIMEDOUT || isth_clock_mono_ns() >= end)
			return rc;
	}
}

/* Open the session the options describe and the buffers of a run.
 * @return 0, or -1 after saying why. */
static int
run_open(struct run *u)
{
	struct isth_island_stats st;
	struct isth_island_conf conf = {
		.job = u->o.job,
		.island = (uint8_t)u->o.island,
		.n_islands = u->o.n_islands,
		.edge_ip = u->o.edge_ip,
		.edge_port = u->o.edge_port,
		.bind_ip = u->o.bind_ip,
		.bind_port = u->o.bind_port,
		.mtu = u->o.mtu,
		.elems = u->o.elems,
		.dtype = u->o.dtype,
		.nack_interval_ns = u->o.nack_ns,
		.probe_ns = u->o.probe_ns,
		.grace_ns = u->o.grace_ns,
		.key_file = u->o.key_file,
		.n_sockets = u->o.n_sockets,
		.gso = u->o.gso,
		.gro = u->o.gro,
		.rx_threads = u->o.rx_threads,
		.hosts = u->o.hosts,
		.host = u->o.host,
	};
	char err[512];

	u->s = isth_island_open_err(&conf, err, sizeof(err));
	if (u->s == NULL) {
		fprintf(stderr, "isthmus-island: cannot open the session: %s%s%s\n",
			strerror(errno), err[0] ? ": " : "", err);
		return -1;
	}
	if (u->o.auth_off)
		fprintf(stderr,
			"isthmus-island: WARNING: --auth off: wire version 1, no "
			"authentication; anyone who reaches this socket can forge "
			"aggregates\n");
	isth_island_range(u->s, &u->rg);
	u->n_chunks = u->rg.n_chunks;
	u->ce = isth_island_chunk_elems(u->s);
	u->tensor = malloc((size_t)u->rg.n_elems * 4);
	u->out = malloc((size_t)u->rg.n_elems * 4);
	u->ch = calloc(u->n_chunks, sizeof(*u->ch));
	if (u->tensor == NULL || u->out == NULL || u->ch == NULL) {
		fprintf(stderr, "isthmus-island: out of memory\n");
		return -1;
	}
	isth_island_stats(u->s, &st);
	printf("isthmus-island: island %d of %u, job %u, %s x %u = %u chunks of %u, %u rounds, "
	       "overlap %u, auth %s\n",
		u->o.island, u->o.n_islands, u->o.job, isth_wire_dtype_name(u->o.dtype), u->o.elems,
		isth_island_n_chunks(u->s), u->ce, u->o.rounds, u->o.overlap,
		st.auth ? "on" : "off");
	if (u->o.hosts > 1)
		printf("isthmus-island: host %u of %u: chunks %u-%u, elements %u-%u\n", u->o.host,
			u->o.hosts, u->rg.first_chunk, u->rg.first_chunk + u->rg.n_chunks - 1,
			u->rg.first_elem, u->rg.first_elem + u->rg.n_elems - 1);
	fflush(stdout);
	return 0;
}

/*
 * Wait for the next ROUND (up to @timeout_ns) and, unless --stop-after
 * silenced this island, send its DATA at once: the round joins the
 * flights. @return 1 (taken), 0 (no ROUND yet) or -1 (the run fails).
 */
static int
take_round(struct run *u, struct flight *f, uint64_t timeout_ns)
{
	int rc = wait_round_hup(u, timeout_ns, &f->ri);

	if (rc == -EPROTO) {
		fprintf(stderr,
			"isthmus-island: round %u: ROUND has %u chunks of %u elements, "
			"this island %u of %u (check --elems and --mtu)\n",
			f->ri.round, f->ri.n_chunks, f->ri.chunk_elems, isth_island_n_chunks(u->s),
			u->ce);
		return -1;
	}
	if (rc != 0)
		return 0;
	isth_island_stats(u->s, &f->st0);
	f->sent = u->o.stop_after < 0 || u->taken < (uint64_t)u->o.stop_after;
	f->tx_ms = 0;
	if (f->sent) {
		uint64_t t;

		make_tensor(&u->o, f->ri.round, u->tensor, u->rg.first_elem, u->rg.n_elems);
		rc = isth_island_send(u->s, f->ri.round, u->tensor, (size_t)u->rg.n_elems * 4);
		if (rc < 0)
			fprintf(stderr, "isthmus-island: round %u: send: %s\n", f->ri.round,
				strerror(-rc));
		t = isth_clock_real_ns();
		f->tx_ms = t > f->ri.start_ns ? (double)(t - f->ri.start_ns) / 1e6 : 0.0;
	}
	u->taken++;
	return 1;
}

/* Collect the flights that have ended, oldest first; block only when
 * there is nothing else to wait for. @return 0, or -1 if the run fails. */
static int
collect_ended(struct run *u, struct flight *fl, unsigned int *nfl)
{
	while (*nfl) {
		bool more = u->taken < u->o.rounds && *nfl < u->o.overlap;
		int rc;

		reload_if_hup(u);
		rc = isth_island_ready(u->s, fl[0].ri.round, more ? 0 : SLICE_NS);
		if (rc == -EAGAIN)
			break;
		if (rc < 0 && rc != -ESTALE) {
			fprintf(stderr, "isthmus-island: round %u: %s\n", fl[0].ri.round,
				strerror(-rc));
			return -1;
		}
		if (!collect(u, &fl[0]))
			return -1;
		memmove(&fl[0], &fl[1], (*nfl - 1) * sizeof(fl[0]));
		(*nfl)--;
	}
	return 0;
}

/* No ROUND came within --timeout: say so, and what arrived instead
 * (isth_island_diagnose()), if anything. */
static void
no_round(const struct run *u)
{
	char d[1024];

	isth_island_diagnose(u->s, d, sizeof(d));
	fprintf(stderr, "isthmus-island: no ROUND within %" PRIu64 " s after %u rounds%s%s\n",
		(uint64_t)(u->o.timeout_ns / 1000000000ull), u->played, d[0] ? "; " : "", d);
}

/*
 * Keep to the schedule: a round's DATA goes out when its ROUND comes,
 * while up to --overlap earlier rounds are still collecting. Ended rounds
 * are collected in order; waiting for the next ROUND is cut into slices
 * so that an ended round is not left waiting. @return false if it failed.
 */
static bool
play(struct run *u)
{
	struct flight fl[ISTH_ISLAND_ROUNDS];
	unsigned int nfl = 0;

	while (u->played < u->o.rounds) {
		if (u->taken < u->o.rounds && nfl < u->o.overlap) {
			int rc = take_round(u, &fl[nfl], nfl ? SLICE_NS : u->o.timeout_ns);

			if (rc < 0)
				return false;
			if (rc > 0) {
				nfl++;
			} else if (nfl == 0) {
				no_round(u);
				return false;
			}
		}
		if (collect_ended(u, fl, &nfl) < 0)
			return false;
	}
	return true;
}

/* The receive threads' word on sockets and streams: stream k is read on
 * socket k % N alone, so an edge whose island_sockets differs loses
 * streams (a clear word), and what each thread read. */
static void
report_sockets(const struct run *u, const struct isth_island_stats *st)
{
	unsigned int i, j, seen = 0;

	if (st->drop[ISTH_ISLAND_DROP_agg_socket])
		fprintf(stderr,
			"isthmus-island: %" PRIu64 " AGG/GONE arrived on a socket other than "
			"their stream's: this island has --sockets %u --rx-threads on (stream k "
			"on port %u + k %% %u); the edge's [access] island_sockets must be %u\n",
			st->drop[ISTH_ISLAND_DROP_agg_socket], st->n_sockets,
			(unsigned int)isth_island_local_port(u->s), st->n_sockets, st->n_sockets);
	if (!st->rx_threads)
		return;
	for (i = 0; i < st->n_sockets; i++)
		fprintf(stderr,
			"isthmus-island: socket %u (port %u): %" PRIu64 " datagrams, AGG streams "
			"%#x\n",
			i, (unsigned int)isth_island_socket_port(u->s, i), st->sock_rx[i],
			(unsigned int)st->sock_streams[i]);
	for (j = 0; j < st->n_sockets; j++)
		seen |= st->sock_streams[j];
	for (i = 0; i < st->agg_streams; i++)
		if (!(seen & 1u << i) && st->rounds_announced)
			fprintf(stderr,
				"isthmus-island: AGG stream %u never arrived on socket %u "
				"(port %u): is the edge's [access] island_sockets %u, as "
				"--sockets here?\n",
				i, i % st->n_sockets,
				(unsigned int)isth_island_socket_port(u->s, i % st->n_sockets),
				st->n_sockets);
}

/* What went wrong on the way, by name (non-zero drop counters), then the
 * summary line. */
static void
report(const struct run *u)
{
	struct isth_island_stats st;
	unsigned int i;

	isth_island_stats(u->s, &st);
	for (i = 1; i < ISTH_WIRE_REASON_MAX; i++)
		if (st.wire_drop[i])
			fprintf(stderr, "isthmus-island: dropped %" PRIu64 " packets: %s\n",
				st.wire_drop[i], isth_wire_reason_name(i));
	for (i = 1; i < ISTH_AUTH_STATUS_MAX; i++)
		if (st.auth_drop[i])
			fprintf(stderr, "isthmus-island: refused %" PRIu64 " packets: %s\n",
				st.auth_drop[i], isth_auth_status_name(i));
	for (i = 0; i < ISTH_ISLAND_DROP_MAX; i++)
		if (st.drop[i])
			fprintf(stderr, "isthmus-island: dropped %" PRIu64 " packets: %s\n",
				st.drop[i], isth_island_drop_name(i));
	report_sockets(u, &st);
	if (st.gso_refused)
		fprintf(stderr,
			"isthmus-island: the kernel refused UDP GSO: sent plain datagrams\n");
	if (st.gro_refused)
		fprintf(stderr,
			"isthmus-island: the kernel refused UDP GRO: read plain datagrams\n");
	printf("ISLAND island=%d rounds=%u aggregates=%" PRIu64 " verified=%" PRIu64
	       " wrong=%" PRIu64 " partial=%" PRIu64 " missing=%" PRIu64 " nacks=%" PRIu64
	       " resent=%" PRIu64 " round_ms_mean=%.3f lost=%u\n",
		u->o.island, u->played, u->aggregates, u->verified, u->wrong, u->partial,
		u->missing, st.nacks_sent, st.resent,
		u->played > u->lost ? u->ms_sum / (u->played - u->lost) : 0.0, u->lost);
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	/* no SA_RESTART: a blocked wait returns and the loop reloads */
	struct sigaction sa = {.sa_handler = on_hup};
	pid_t ppid0 = getppid(); /* before anything can re-parent us */
	struct run u;
	bool ok;

	if (isth_version_args("isthmus-island", argc, argv))
		return 0;
	memset(&u, 0, sizeof(u));
	if (parse_args(argc, argv, &u.o) < 0)
		return EXIT_USAGE;
	/* Die with the parent only when asked (--die-with-parent,
	 * ISTH_DIE_WITH_PARENT=1, or ISTH_TESTBED: a kill -9 of
	 * scripts/testbed.sh leaves nothing running); a parent gone before
	 * the prctl cannot signal us: leave. */
	if (isth_notify_die_with_parent(u.o.die_with_parent, ppid0) < 0)
		return 1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	if (run_open(&u) < 0)
		return EXIT_FAILURE;
	/* systemd (Type=notify): the session is open, rounds can come */
	isth_notify_ready();
	ok = play(&u);
	isth_notify_stopping();
	report(&u);
	isth_island_close(u.s);
	free(u.tensor);
	free(u.out);
	free(u.ch);
	return u.wrong == 0 && ok && u.played == u.o.rounds ? 0 : 1;
}
