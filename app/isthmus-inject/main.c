/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-inject: crafts valid-looking isthmus packets and sends them at a
 * running edge or island, for hostile-traffic tests (issue 15). See --help.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "inject.h"
#include "isth_auth.h"
#include "isth_wire.h"

#define EXIT_USAGE 2

static const char usage[] =
	"usage: isthmus-inject --to IP[:PORT] [options] KIND\n"
	"       isthmus-inject --to IP[:PORT] [options] replay FILE.pcap\n"
	"\n"
	"Crafts isthmus messages with lib/wire's encoder and sends them over UDP\n"
	"(or, with --from, over a raw IPv4 socket with a source address of your\n"
	"choice: needs CAP_NET_RAW). For hostile-traffic tests; every field can\n"
	"lie. KIND is one of:\n"
	"  data   DATA of --elems elements, all equal to --value\n"
	"  agg    AGG (same body), bitmap from --bitmap\n"
	"  nack   NACK naming the --range list (sequence numbers, or chunk ids\n"
	"         with --flags chunks); a whole-round NACK storm is e.g.\n"
	"         nack --flags chunks --range 0-4294967295 --count 1000\n"
	"  gone   GONE naming the --range list\n"
	"  round  ROUND with the --round-body fields\n"
	"  tiny   DATA of one element whose chunk id advances by one per packet\n"
	"         from --chunk (fresh ids: slot exhaustion)\n"
	"  replay resend the UDP payloads to --port found in a pcap file\n"
	"\n"
	"Options:\n"
	"  --to IP[:PORT]     destination (required; port 9471)\n"
	"  --from IP[:PORT]   spoofed source address (raw socket; port 9471)\n"
	"  --count N          messages to send (default 1; replay: default all)\n"
	"  --rate PPS         pace at PPS messages per second (default: no pacing)\n"
	"  --job N --round R --chunk C --sender S   header fields (default 1 0 0 0)\n"
	"  --chunk-step K     chunk id advance per message (default 0; tiny: 1)\n"
	"  --seq Q            first seq (default 1)\n"
	"  --seq-step K       seq advance per message (default 1)\n"
	"  --dtype T          int32, fp32 or bf16 (default int32)\n"
	"  --elems N          elements per DATA/AGG (default 358, with --key-file\n"
	"                     354: what fits a 1500-byte MTU with the tag)\n"
	"  --value V          value of every element (default 1)\n"
	"  --bitmap B         bitmap (DATA default: the sender's own bit)\n"
	"  --flags LIST       extra flags: partial,resent,last,chunks\n"
	"  --range A-B        a NACK/GONE range; repeat for more (at most 89)\n"
	"  --round-body S,D,P,CLIQUE,NCHUNKS,ELEMS   ROUND body (ns, ns, ns, hex\n"
	"                     clique bitmap, chunks, elements per chunk)\n"
	"  --port P           replay: destination port to pick from the capture\n"
	"                     (default 9471; 0: any)\n"
	"  --key-file F --dir up|down|wan --owner I [--islands N]\n"
	"                     seal every message as version 2 (lib/auth) with the\n"
	"                     key of (epoch of --round, dir, owner): an insider's\n"
	"                     or a key-thief's packets; N defaults to 64\n"
	"  --help             this text\n"
	"\n"
	"Output: one line,\n"
	"  INJECT kind=K sent=N bytes=B errors=E\n"
	"Exit status: 0 if every message was sent, 1 otherwise, 2 for usage errors.\n";

static int
parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (s == NULL || *s == '\0' || *s == '-')
		return -1;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

static int
parse_addr(const char *s, uint32_t *ip, uint16_t *port)
{
	char host[64];
	const char *colon = strchr(s, ':');
	struct in_addr a;
	uint64_t p = ISTH_WIRE_PORT;
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	if (n == 0 || n >= sizeof(host))
		return -1;
	memcpy(host, s, n);
	host[n] = '\0';
	if (inet_pton(AF_INET, host, &a) != 1)
		return -1;
	if (colon != NULL && (parse_u64(colon + 1, 65535, &p) != 0 || p == 0))
		return -1;
	*ip = ntohl(a.s_addr);
	*port = (uint16_t)p;
	return 0;
}

static int
parse_flags(const char *s, uint16_t *out)
{
	char buf[128], *save = NULL, *t;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	*out = 0;
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (strcmp(t, "partial") == 0)
			*out |= ISTH_WIRE_F_PARTIAL;
		else if (strcmp(t, "resent") == 0)
			*out |= ISTH_WIRE_F_RESENT;
		else if (strcmp(t, "last") == 0)
			*out |= ISTH_WIRE_F_LAST;
		else if (strcmp(t, "chunks") == 0)
			*out |= ISTH_WIRE_F_CHUNKS;
		else
			return -1;
	}
	return 0;
}

static int
parse_round_body(const char *s, struct isth_wire_round *rb)
{
	unsigned long long v[6];
	char tail;

	if (sscanf(s, "%llu,%llu,%llu,%llx,%llu,%llu%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		    &tail) != 6 ||
		v[4] > UINT32_MAX || v[5] > UINT32_MAX)
		return -1;
	rb->start_ns = v[0];
	rb->deadline_ns = v[1];
	rb->period_ns = v[2];
	rb->clique = v[3];
	rb->n_chunks = (uint32_t)v[4];
	rb->chunk_elems = (uint32_t)v[5];
	return 0;
}

static int
bad(const char *opt, const char *val)
{
	fprintf(stderr, "isthmus-inject: invalid %s '%s' (see --help)\n", opt, val);
	return EXIT_USAGE;
}

static void
pace(const struct timespec *t0, uint64_t i, uint64_t rate)
{
	struct timespec t;
	uint64_t ns;

	if (rate == 0)
		return;
	ns = (uint64_t)t0->tv_nsec + i * 1000000000ull / rate;
	t.tv_sec = t0->tv_sec + (time_t)(ns / 1000000000ull);
	t.tv_nsec = (long)(ns % 1000000000ull);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
}

int
main(int argc, char **argv)
{
	enum {
		O_TO = 256,
		O_FROM,
		O_COUNT,
		O_RATE,
		O_JOB,
		O_ROUND,
		O_CHUNK,
		O_SENDER,
		O_CSTEP,
		O_SEQ,
		O_SSTEP,
		O_DTYPE,
		O_ELEMS,
		O_VALUE,
		O_BITMAP,
		O_FLAGS,
		O_RANGE,
		O_RBODY,
		O_PORT,
		O_KEYS,
		O_DIR,
		O_OWNER,
		O_ISLANDS,
		O_HELP
	};
	static const struct option lo[] = {
		{"to", 1, NULL, O_TO},
		{"from", 1, NULL, O_FROM},
		{"count", 1, NULL, O_COUNT},
		{"rate", 1, NULL, O_RATE},
		{"job", 1, NULL, O_JOB},
		{"round", 1, NULL, O_ROUND},
		{"chunk", 1, NULL, O_CHUNK},
		{"sender", 1, NULL, O_SENDER},
		{"chunk-step", 1, NULL, O_CSTEP},
		{"seq", 1, NULL, O_SEQ},
		{"seq-step", 1, NULL, O_SSTEP},
		{"dtype", 1, NULL, O_DTYPE},
		{"elems", 1, NULL, O_ELEMS},
		{"value", 1, NULL, O_VALUE},
		{"bitmap", 1, NULL, O_BITMAP},
		{"flags", 1, NULL, O_FLAGS},
		{"range", 1, NULL, O_RANGE},
		{"round-body", 1, NULL, O_RBODY},
		{"port", 1, NULL, O_PORT},
		{"key-file", 1, NULL, O_KEYS},
		{"dir", 1, NULL, O_DIR},
		{"owner", 1, NULL, O_OWNER},
		{"islands", 1, NULL, O_ISLANDS},
		{"help", 0, NULL, O_HELP},
		{NULL, 0, NULL, 0},
	};
	struct inject_spec s = {
		.job = 1,
		.seq = 1,
		.seq_step = 1,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.count = 358,
		.value = 1,
	};
	uint32_t to_ip = 0, from_ip = 0;
	uint16_t to_port = 0, from_port = 0, port = ISTH_WIRE_PORT;
	uint64_t count = 1, rate = 0, v, sent = 0, bytes = 0, errors = 0;
	bool have_to = false, have_from = false, have_count = false;
	bool have_elems = false;
	const char *key_file = NULL, *pcap_path = NULL;
	int dir = 0, owner = -1, kind, o, fd, ret = 1;
	uint32_t islands = ISTH_AUTH_MAX_ISLANDS;
	struct isth_auth *auth = NULL;
	struct isth_auth_engine *eng = NULL;
	struct inject_pcap pc = {0};
	static uint8_t frame[65536 + 64];
	uint8_t *msg = frame + ISTH_INJECT_L2;
	size_t msg_cap = sizeof(frame) - ISTH_INJECT_L2;
	struct sockaddr_in dst = {.sin_family = AF_INET};
	struct timespec t0;
	char err[256];

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case O_TO:
			if (parse_addr(optarg, &to_ip, &to_port) != 0)
				return bad("--to", optarg);
			have_to = true;
			break;
		case O_FROM:
			if (parse_addr(optarg, &from_ip, &from_port) != 0)
				return bad("--from", optarg);
			have_from = true;
			break;
		case O_COUNT:
			if (parse_u64(optarg, UINT64_MAX, &count) != 0)
				return bad("--count", optarg);
			have_count = true;
			break;
		case O_RATE:
			if (parse_u64(optarg, 100000000, &rate) != 0)
				return bad("--rate", optarg);
			break;
		case O_JOB:
			if (parse_u64(optarg, UINT32_MAX, &v) != 0)
				return bad("--job", optarg);
			s.job = (uint32_t)v;
			break;
		case O_ROUND:
			if (parse_u64(optarg, UINT32_MAX, &v) != 0)
				return bad("--round", optarg);
			s.round = (uint32_t)v;
			break;
		case O_CHUNK:
			if (parse_u64(optarg, UINT32_MAX, &v) != 0)
				return bad("--chunk", optarg);
			s.chunk = (uint32_t)v;
			break;
		case O_SENDER:
			if (parse_u64(optarg, ISTH_WIRE_MAX_ISLANDS - 1, &v) != 0)
				return bad("--sender", optarg);
			s.sender = (uint8_t)v;
			break;
		case O_CSTEP:
			if (parse_u64(optarg, UINT32_MAX, &v) != 0)
				return bad("--chunk-step", optarg);
			s.chunk_step = (uint32_t)v;
			break;
		case O_SEQ:
			if (parse_u64(optarg, UINT64_MAX, &s.seq) != 0)
				return bad("--seq", optarg);
			break;
		case O_SSTEP:
			if (parse_u64(optarg, UINT64_MAX, &s.seq_step) != 0)
				return bad("--seq-step", optarg);
			break;
		case O_DTYPE:
			if (strcmp(optarg, "int32") == 0)
				s.dtype = ISTH_WIRE_DTYPE_INT32;
			else if (strcmp(optarg, "fp32") == 0)
				s.dtype = ISTH_WIRE_DTYPE_FP32;
			else if (strcmp(optarg, "bf16") == 0)
				s.dtype = ISTH_WIRE_DTYPE_BF16;
			else
				return bad("--dtype", optarg);
			break;
		case O_ELEMS:
			if (parse_u64(optarg, 16000, &v) != 0 || v == 0)
				return bad("--elems", optarg);
			s.count = (uint16_t)v;
			have_elems = true;
			break;
		case O_VALUE: {
			char *end;
			long x;

			errno = 0;
			x = strtol(optarg, &end, 0);
			if (errno != 0 || *end != '\0' || x < INT32_MIN || x > INT32_MAX)
				return bad("--value", optarg);
			s.value = (int32_t)x;
			break;
		}
		case O_BITMAP:
			if (parse_u64(optarg, UINT64_MAX, &s.bitmap) != 0)
				return bad("--bitmap", optarg);
			break;
		case O_FLAGS:
			if (parse_flags(optarg, &s.flags) != 0)
				return bad("--flags", optarg);
			break;
		case O_RANGE: {
			unsigned long long a, b;
			char tail;

			if (s.n_ranges >= ISTH_INJECT_MAX_RANGES ||
				sscanf(optarg, "%llu-%llu%c", &a, &b, &tail) != 2)
				return bad("--range", optarg);
			s.ranges[s.n_ranges].first = a;
			s.ranges[s.n_ranges].last = b;
			s.n_ranges++;
			break;
		}
		case O_RBODY:
			if (parse_round_body(optarg, &s.rb) != 0)
				return bad("--round-body", optarg);
			break;
		case O_PORT:
			if (parse_u64(optarg, 65535, &v) != 0)
				return bad("--port", optarg);
			port = (uint16_t)v;
			break;
		case O_KEYS:
			key_file = optarg;
			break;
		case O_DIR:
			dir = strcmp(optarg, "up") == 0       ? ISTH_AUTH_UP
				: strcmp(optarg, "down") == 0 ? ISTH_AUTH_DOWN
				: strcmp(optarg, "wan") == 0  ? ISTH_AUTH_WAN
							      : 0;
			if (dir == 0)
				return bad("--dir", optarg);
			break;
		case O_OWNER:
			if (parse_u64(optarg, ISTH_WIRE_MAX_ISLANDS - 1, &v) != 0)
				return bad("--owner", optarg);
			owner = (int)v;
			break;
		case O_ISLANDS:
			if (parse_u64(optarg, ISTH_AUTH_MAX_ISLANDS, &v) != 0 || v == 0)
				return bad("--islands", optarg);
			islands = (uint32_t)v;
			break;
		case O_HELP:
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "isthmus-inject: no KIND given (see --help)\n");
		return EXIT_USAGE;
	}
	if (strcmp(argv[optind], "replay") == 0) {
		kind = -1;
		if (optind + 2 != argc) {
			fprintf(stderr, "isthmus-inject: replay takes one pcap file\n");
			return EXIT_USAGE;
		}
		pcap_path = argv[optind + 1];
		if (!have_count)
			count = UINT64_MAX;
	} else {
		kind = inject_kind_parse(argv[optind]);
		if (kind < 0 || optind + 1 != argc)
			return bad("KIND", argv[optind]);
		s.kind = (enum inject_kind)kind;
		if ((s.kind == INJ_NACK || s.kind == INJ_GONE) && s.n_ranges == 0) {
			fprintf(stderr, "isthmus-inject: %s needs at least one --range\n",
				argv[optind]);
			return EXIT_USAGE;
		}
	}
	if (!have_to) {
		fprintf(stderr, "isthmus-inject: --to is required\n");
		return EXIT_USAGE;
	}
	if (key_file != NULL && (dir == 0 || owner < 0)) {
		fprintf(stderr, "isthmus-inject: --key-file needs --dir and --owner\n");
		return EXIT_USAGE;
	}

	if (key_file != NULL && !have_elems)
		s.count = 354; /* 1500 - 20 - 8 - 40 - 16 = 1416 bytes of body */
	if (key_file != NULL) {
		struct isth_auth_conf c = {
			.key_file = key_file, .job = s.job, .n_islands = islands};
		int r = isth_auth_create(&c, &auth, err, sizeof(err));

		if (r != 0) {
			fprintf(stderr, "isthmus-inject: %s\n", err);
			return 1;
		}
		if ((uint32_t)owner >= islands ||
			isth_auth_engine_create(auth, ISTH_AUTH_OPENSSL, &eng) != 0) {
			fprintf(stderr, "isthmus-inject: --owner %d: no key (islands %u)\n", owner,
				islands);
			goto out;
		}
	}
	if (pcap_path != NULL && inject_pcap_open(&pc, pcap_path, err, sizeof(err)) != 0) {
		fprintf(stderr, "isthmus-inject: %s\n", err);
		goto out;
	}

	fd = have_from ? socket(AF_INET, SOCK_RAW, IPPROTO_RAW) : socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		fprintf(stderr, "isthmus-inject: socket: %s%s\n", strerror(errno),
			have_from ? " (--from needs CAP_NET_RAW)" : "");
		goto out;
	}
	dst.sin_addr.s_addr = htonl(to_ip);
	dst.sin_port = have_from ? 0 : htons(to_port);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < count; i++) {
		int len;
		ssize_t w;

		if (pcap_path != NULL) {
			int eof;

			len = inject_pcap_next_udp(&pc, port, msg, msg_cap, &eof, err, sizeof(err));
			if (len < 0) {
				fprintf(stderr, "isthmus-inject: %s: %s\n", pcap_path, err);
				break;
			}
			if (eof)
				break;
		} else {
			len = inject_build(&s, i, msg, msg_cap);
			if (len < 0) {
				fprintf(stderr, "isthmus-inject: cannot build %s: %s\n",
					inject_kind_name(s.kind), strerror(-len));
				break;
			}
		}
		if (eng != NULL) {
			len = isth_auth_seal(eng, (enum isth_auth_dir)dir, (unsigned int)owner, msg,
				(size_t)len, msg_cap);
			if (len < 0) {
				fprintf(stderr, "isthmus-inject: seal: %s\n", strerror(-len));
				break;
			}
		}
		pace(&t0, i, rate);
		if (have_from) {
			int f = inject_frame(frame, sizeof(frame), from_ip, from_port, to_ip,
				to_port, (size_t)len);

			if (f < 0) {
				errors++;
				continue;
			}
			w = sendto(fd, frame + ISTH_WIRE_ETH_HDR_SIZE,
				(size_t)f - ISTH_WIRE_ETH_HDR_SIZE, 0, (struct sockaddr *)&dst,
				sizeof(dst));
		} else {
			w = sendto(fd, msg, (size_t)len, 0, (struct sockaddr *)&dst, sizeof(dst));
		}
		if (w < 0) {
			errors++;
			continue;
		}
		sent++;
		bytes += (uint64_t)len;
	}
	close(fd);
	printf("INJECT kind=%s sent=%" PRIu64 " bytes=%" PRIu64 " errors=%" PRIu64 "\n",
		pcap_path != NULL ? "replay" : inject_kind_name(s.kind), sent, bytes, errors);
	ret = errors == 0 && (pcap_path != NULL || sent == count) ? 0 : 1;
out:
	inject_pcap_close(&pc);
	isth_auth_engine_free(eng);
	isth_auth_free(auth);
	return ret;
}
