/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-inject's command line: the --help text and the option parsers.
 * Numbers are decimal through lib/text's one parser ("010" is ten, never
 * octal); hex only where --help says so.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "isth_auth.h"
#include "isth_text.h"
#include "isth_wire.h"

#include "options.h"

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
	"  partial  PARTIAL of a tree round (same body), edge to edge, bitmap\n"
	"         from --bitmap; --flags down: a result from the parent\n"
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
	"  --bitmap B         bitmap, decimal or 0x hex (DATA default: the sender's\n"
	"                     own bit)\n"
	"  --flags LIST       extra flags: partial,resent,last,chunks,down,echo (a NACK\n"
	"                     by chunk's echo: --chunk sets its event tag)\n"
	"  --range A-B        a NACK/GONE range; repeat for more (at most 89)\n"
	"  --round-body S,D,P,CLIQUE,NCHUNKS,ELEMS   ROUND body (ns, ns, ns, hex\n"
	"                     clique bitmap, chunks, elements per chunk)\n"
	"  --port P           replay: destination port to pick from the capture\n"
	"                     (default 9471; 0: any)\n"
	"  --key-file F --dir up|down|wan --owner I [--islands N]\n"
	"                     seal every message as version 2 (lib/auth) with the\n"
	"                     key of (epoch of --round, dir, owner): an insider's\n"
	"                     or a key-thief's packets; N defaults to 64. wan: a\n"
	"                     WAN tag list, a tag under the pair key (owner, t)\n"
	"                     for each island t < N but the owner (at most 15)\n"
	"  --help             this text\n"
	"  --version          print the version on one line and exit\n"
	"\n"
	"Numbers are decimal (a leading zero is not octal: 010 is ten); hex only\n"
	"where said.\n"
	"\n"
	"Output: one line,\n"
	"  INJECT kind=K sent=N bytes=B errors=E\n"
	"Exit status: 0 if every message was sent, 1 otherwise, 2 for usage errors.\n";


/* --bitmap: decimal, or hex after an explicit "0x" (bitmaps read best in
 * hex; the hostile tests write "--bitmap 0x7") */
static int
parse_bitmap(const char *s, uint64_t *out)
{
	return isth_text_parse_u64_or_hex(s, out);
}

/* A header field of 32 bits, decimal */
static int
parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;

	if (isth_text_parse_u64_range(s, 0, UINT32_MAX, &v) != 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* --value: a signed decimal int32 ("-3"; "010" is ten) */
static int
parse_value(const char *s, int32_t *out)
{
	bool neg = s[0] == '-';
	uint64_t v;

	if (isth_text_parse_u64_range(s + neg, 0, (uint64_t)INT32_MAX + neg, &v) != 0)
		return -1;
	*out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
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
	if (colon != NULL && isth_text_parse_u64_range(colon + 1, 1, 65535, &p) != 0)
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
		else if (strcmp(t, "down") == 0)
			*out |= ISTH_WIRE_F_DOWN;
		else if (strcmp(t, "echo") == 0)
			*out |= ISTH_WIRE_F_ECHO;
		else
			return -1;
	}
	return 0;
}

/* --range A-B, decimal */
static int
parse_range(const char *s, struct isth_wire_range *r)
{
	const char *end;

	if (isth_text_parse_u64_prefix(s, &end, &r->first) != 0 || *end != '-' ||
		isth_text_parse_u64(end + 1, &r->last) != 0)
		return -1;
	return 0;
}

/* --round-body S,D,P,CLIQUE,NCHUNKS,ELEMS: decimal but the hex clique */
static int
parse_round_body(const char *s, struct isth_wire_round *rb)
{
	const char *p = s;
	uint64_t v[6];
	int i, rc;

	for (i = 0; i < 6; i++, p++) {
		rc = i == 3 ? isth_text_parse_hex_prefix(p, &p, &v[i])
			    : isth_text_parse_u64_prefix(p, &p, &v[i]);
		if (rc != 0 || *p != (i < 5 ? ',' : '\0'))
			return -1;
	}
	if (v[4] > UINT32_MAX || v[5] > UINT32_MAX)
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
parse_dtype(const char *s, uint8_t *out)
{
	if (strcmp(s, "int32") == 0)
		*out = ISTH_WIRE_DTYPE_INT32;
	else if (strcmp(s, "fp32") == 0)
		*out = ISTH_WIRE_DTYPE_FP32;
	else if (strcmp(s, "bf16") == 0)
		*out = ISTH_WIRE_DTYPE_BF16;
	else
		return -1;
	return 0;
}

enum {
	/* what each message says: spec_option() */
	O_JOB = 256,
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
	/* where, how often and how sealed: send_option() */
	O_TO,
	O_FROM,
	O_COUNT,
	O_RATE,
	O_PORT,
	O_KEYS,
	O_DIR,
	O_OWNER,
	O_ISLANDS,
	O_HELP
};

/* An option that sets a field of the messages: 0, or -1 if @arg is bad. */
static int
spec_option(int o, const char *arg, struct inject_args *a)
{
	struct inject_spec *s = &a->s;
	uint64_t v;

	switch (o) {
	case O_JOB:
		return parse_u32(arg, &s->job);
	case O_ROUND:
		return parse_u32(arg, &s->round);
	case O_CHUNK:
		return parse_u32(arg, &s->chunk);
	case O_CSTEP:
		return parse_u32(arg, &s->chunk_step);
	case O_SENDER:
		if (isth_text_parse_u64_range(arg, 0, ISTH_WIRE_MAX_ISLANDS - 1, &v) != 0)
			return -1;
		s->sender = (uint8_t)v;
		return 0;
	case O_SEQ:
		return isth_text_parse_u64(arg, &s->seq) != 0 ? -1 : 0;
	case O_SSTEP:
		return isth_text_parse_u64(arg, &s->seq_step) != 0 ? -1 : 0;
	case O_DTYPE:
		return parse_dtype(arg, &s->dtype);
	case O_ELEMS:
		if (isth_text_parse_u64_range(arg, 1, 16000, &v) != 0)
			return -1;
		s->count = (uint16_t)v;
		a->have_elems = true;
		return 0;
	case O_VALUE:
		return parse_value(arg, &s->value);
	case O_BITMAP:
		return parse_bitmap(arg, &s->bitmap) != 0 ? -1 : 0;
	case O_FLAGS:
		return parse_flags(arg, &s->flags);
	case O_RANGE:
		if (s->n_ranges >= ISTH_INJECT_MAX_RANGES ||
			parse_range(arg, &s->ranges[s->n_ranges]) != 0)
			return -1;
		s->n_ranges++;
		return 0;
	case O_RBODY:
		return parse_round_body(arg, &s->rb);
	}
	return -1;
}

/* An option that says where, how often or how sealed: 0, or -1. */
static int
send_option(int o, const char *arg, struct inject_args *a)
{
	uint64_t v;

	switch (o) {
	case O_TO:
		a->have_to = true;
		return parse_addr(arg, &a->to_ip, &a->to_port);
	case O_FROM:
		a->have_from = true;
		return parse_addr(arg, &a->from_ip, &a->from_port);
	case O_COUNT:
		a->have_count = true;
		return isth_text_parse_u64(arg, &a->count) != 0 ? -1 : 0;
	case O_RATE:
		return isth_text_parse_u64_range(arg, 0, 100000000, &a->rate) != 0 ? -1 : 0;
	case O_PORT:
		if (isth_text_parse_u64_range(arg, 0, 65535, &v) != 0)
			return -1;
		a->port = (uint16_t)v;
		return 0;
	case O_KEYS:
		a->key_file = arg;
		return 0;
	case O_DIR:
		a->dir = strcmp(arg, "up") == 0    ? ISTH_AUTH_UP
			: strcmp(arg, "down") == 0 ? ISTH_AUTH_DOWN
			: strcmp(arg, "wan") == 0  ? ISTH_AUTH_WAN
						   : 0;
		return a->dir == 0 ? -1 : 0;
	case O_OWNER:
		if (isth_text_parse_u64_range(arg, 0, ISTH_WIRE_MAX_ISLANDS - 1, &v) != 0)
			return -1;
		a->owner = (int)v;
		return 0;
	case O_ISLANDS:
		if (isth_text_parse_u64_range(arg, 1, ISTH_AUTH_MAX_ISLANDS, &v) != 0)
			return -1;
		a->islands = (uint32_t)v;
		return 0;
	}
	return -1;
}

static int
bad(const char *opt, const char *val)
{
	fprintf(stderr, "isthmus-inject: invalid %s '%s' (see --help)\n", opt, val);
	return EXIT_USAGE;
}

/* The options: -1 to go on, else the exit status (--help: 0). */
static int
parse_options(int argc, char **argv, struct inject_args *a)
{
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
	int o, li;

	while ((o = getopt_long(argc, argv, "", lo, &li)) != -1) {
		char name[32];
		int rc;

		if (o == O_HELP) {
			fputs(usage, stdout);
			return 0;
		}
		if (o < O_JOB) {
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
		rc = o < O_TO ? spec_option(o, optarg, a) : send_option(o, optarg, a);
		if (rc != 0) {
			snprintf(name, sizeof(name), "--%s", lo[li].name);
			return bad(name, optarg);
		}
	}
	return -1;
}

/* KIND or replay FILE, and what they need: -1 to go on, else the status. */
static int
parse_operands(int argc, char **argv, struct inject_args *a)
{
	int kind;

	if (optind >= argc) {
		fprintf(stderr, "isthmus-inject: no KIND given (see --help)\n");
		return EXIT_USAGE;
	}
	if (strcmp(argv[optind], "replay") == 0) {
		if (optind + 2 != argc) {
			fprintf(stderr, "isthmus-inject: replay takes one pcap file\n");
			return EXIT_USAGE;
		}
		a->pcap_path = argv[optind + 1];
		if (!a->have_count)
			a->count = UINT64_MAX;
	} else {
		kind = inject_kind_parse(argv[optind]);
		if (kind < 0 || optind + 1 != argc)
			return bad("KIND", argv[optind]);
		a->s.kind = (enum inject_kind)kind;
		if ((a->s.kind == INJ_NACK || a->s.kind == INJ_GONE) && a->s.n_ranges == 0) {
			fprintf(stderr, "isthmus-inject: %s needs at least one --range\n",
				argv[optind]);
			return EXIT_USAGE;
		}
	}
	if (!a->have_to) {
		fprintf(stderr, "isthmus-inject: --to is required\n");
		return EXIT_USAGE;
	}
	if (a->key_file != NULL && (a->dir == 0 || a->owner < 0)) {
		fprintf(stderr, "isthmus-inject: --key-file needs --dir and --owner\n");
		return EXIT_USAGE;
	}
	if (a->key_file != NULL && !a->have_elems)
		a->s.count = 354; /* 1500 - 20 - 8 - 40 - 16 = 1416 bytes of body */
	return -1;
}

int
inject_args_parse(int argc, char **argv, struct inject_args *a)
{
	int rc;

	*a = (struct inject_args){
		.s = {.job = 1,
			.seq = 1,
			.seq_step = 1,
			.dtype = ISTH_WIRE_DTYPE_INT32,
			.count = 358,
			.value = 1},
		.port = ISTH_WIRE_PORT,
		.count = 1,
		.owner = -1,
		.islands = ISTH_AUTH_MAX_ISLANDS,
	};
	rc = parse_options(argc, argv, a);
	return rc >= 0 ? rc : parse_operands(argc, argv, a);
}
