/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes a pcap of isthmus frames built with the project's encoder, and a
 * TSV of what each frame must decode to in Wireshark (scripts/isthmus.lua).
 *
 *   pcap_gen OUT.pcap EXPECTED.tsv
 *
 * The TSV's first line names the dissector fields, one column each; every
 * further line is one frame, in capture order. Multi-valued fields are
 * comma-separated, absent ones empty. Values are what was encoded, except
 * isthmus.verdict, which is isth_wire_parse_frame()'s reason name: the
 * dissector must refuse exactly what the parser refuses. The parser runs
 * with 8 islands and no element/range limit (tshark -o isthmus.islands:8).
 *
 * The pcap is the classic libpcap format (not pcapng), written by hand:
 * a 24-byte file header, then a 16-byte record header per frame, all
 * little-endian, LINKTYPE_ETHERNET.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isth_wire.h"

#define N_ISLANDS 8
#define ELEMS_SHOWN 8 /* the dissector's default "elems_shown" */
#define FRAME_MAX 2048

static const char *const fields[] = {
	"isthmus.magic",
	"isthmus.version",
	"isthmus.type",
	"isthmus.flags",
	"isthmus.dtype",
	"isthmus.trailer_len",
	"isthmus.job",
	"isthmus.round",
	"isthmus.chunk",
	"isthmus.sender",
	"isthmus.reserved",
	"isthmus.count",
	"isthmus.seq",
	"isthmus.bitmap",
	"isthmus.island",
	"isthmus.fp32",
	"isthmus.bf16",
	"isthmus.int32",
	"isthmus.range.first",
	"isthmus.range.last",
	"isthmus.round.start_ns",
	"isthmus.round.deadline_ns",
	"isthmus.round.period_ns",
	"isthmus.round.clique",
	"isthmus.round.clique_island",
	"isthmus.round.n_chunks",
	"isthmus.round.chunk_elems",
	"isthmus.trailer",
	"isthmus.verdict",
	"udp.dstport",
};
enum {
	C_MAGIC,
	C_VERSION,
	C_TYPE,
	C_FLAGS,
	C_DTYPE,
	C_TLEN,
	C_JOB,
	C_ROUND,
	C_CHUNK,
	C_SENDER,
	C_RESERVED,
	C_COUNT,
	C_SEQ,
	C_BITMAP,
	C_ISLAND,
	C_FP32,
	C_BF16,
	C_INT32,
	C_FIRST,
	C_LAST,
	C_START,
	C_DEADLINE,
	C_PERIOD,
	C_CLIQUE,
	C_CLIQUE_ISLAND,
	C_NCHUNKS,
	C_CHUNK_ELEMS,
	C_TRAILER,
	C_VERDICT,
	C_DSTPORT,
	N_COLS
};

struct row {
	char col[N_COLS][512];
};

struct out {
	FILE *pcap;
	FILE *tsv;
	unsigned int n;
};

static void
die(const char *what)
{
	fprintf(stderr, "pcap_gen: %s\n", what);
	exit(1);
}

static void addf(struct row *r, int c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Append one value to a column, comma-separated. */
static void
addf(struct row *r, int c, const char *fmt, ...)
{
	size_t n = strlen(r->col[c]);
	va_list ap;

	if (n)
		r->col[c][n++] = ',';
	va_start(ap, fmt);
	vsnprintf(r->col[c] + n, sizeof(r->col[c]) - n, fmt, ap);
	va_end(ap);
}

static void
put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

static void
pcap_header(FILE *f)
{
	uint8_t h[24];

	put_le32(h, 0xa1b2c3d4); /* microsecond timestamps */
	put_le16(h + 4, 2);
	put_le16(h + 6, 4);
	put_le32(h + 8, 0); /* thiszone */
	put_le32(h + 12, 0); /* sigfigs */
	put_le32(h + 16, 65535); /* snaplen */
	put_le32(h + 20, 1); /* LINKTYPE_ETHERNET */
	if (fwrite(h, 1, sizeof(h), f) != sizeof(h))
		die("cannot write the pcap header");
}

/* The expected header columns, from the values handed to the encoder. */
static void
hdr_cols(struct row *r, const struct isth_wire_hdr *h)
{
	unsigned int i;

	addf(r, C_MAGIC, "%u", ISTH_WIRE_MAGIC);
	addf(r, C_VERSION, "%u", ISTH_WIRE_VERSION);
	addf(r, C_TYPE, "%u", h->type);
	addf(r, C_FLAGS, "%u", h->flags);
	addf(r, C_DTYPE, "%u", h->dtype);
	addf(r, C_TLEN, "%u", h->trailer_len);
	addf(r, C_JOB, "%u", h->job);
	addf(r, C_ROUND, "%u", h->round);
	addf(r, C_CHUNK, "%u", h->chunk);
	addf(r, C_SENDER, "%u", h->sender);
	addf(r, C_RESERVED, "0");
	addf(r, C_COUNT, "%u", h->count);
	addf(r, C_SEQ, "%llu", (unsigned long long)h->seq);
	addf(r, C_BITMAP, "%llu", (unsigned long long)h->bitmap);
	for (i = 0; i < 64; i++)
		if (h->bitmap >> i & 1)
			addf(r, C_ISLAND, "%u", i);
}

/* Wrap @msg in a frame, record it, run the parser for the verdict. */
static void
emit(struct out *o, struct row *r, const uint8_t *msg, size_t msg_size, uint16_t vlan,
	uint16_t src_port)
{
	struct isth_wire_addr a = {
		.dst_mac = {0x01, 0x00, 0x5e, 0x0a, 0x00, 0x01},
		.src_mac = {0x02, 0x15, 0x74, 0x68, 0x00, 0x02},
		.vlan = vlan,
		.src_ip = 0x0a000002,
		.dst_ip = 0xef0a0001,
		.src_port = src_port,
		.dst_port = ISTH_WIRE_PORT,
		.dscp = 46,
	};
	struct isth_wire_limits lim;
	uint8_t f[FRAME_MAX], rec[16];
	struct isth_wire_pkt pkt;
	size_t hs = isth_wire_frame_hdr_size(&a);
	int n, c;

	if (hs + msg_size > sizeof(f))
		die("frame too large");
	memcpy(f + hs, msg, msg_size);
	n = isth_wire_put_frame_hdr(f, sizeof(f), &a, msg_size);
	if (n < 0)
		die("isth_wire_put_frame_hdr");
	if (isth_wire_limits_init(&lim, N_ISLANDS, 1500))
		die("isth_wire_limits_init");
	lim.max_elems = UINT16_MAX;
	lim.max_ranges = UINT16_MAX;
	addf(r, C_VERDICT, "%s",
		isth_wire_reason_name(isth_wire_parse_frame(f, (size_t)n, &lim, &pkt)));
	addf(r, C_DSTPORT, "%u", ISTH_WIRE_PORT);

	put_le32(rec, 1700000000 + o->n);
	put_le32(rec + 4, 1000 * o->n);
	put_le32(rec + 8, (uint32_t)n);
	put_le32(rec + 12, (uint32_t)n);
	if (fwrite(rec, 1, sizeof(rec), o->pcap) != sizeof(rec) ||
		fwrite(f, 1, (size_t)n, o->pcap) != (size_t)n)
		die("cannot write a pcap record");
	for (c = 0; c < N_COLS; c++)
		fprintf(o->tsv, "%s%s", c ? "\t" : "", r->col[c]);
	fputc('\n', o->tsv);
	o->n++;
}

static uint32_t
f32_bits(float v)
{
	uint32_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

static float
bits_f32(uint32_t u)
{
	float v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static const uint8_t trailer[16] = {
	0xa0,
	0xa1,
	0xa2,
	0xa3,
	0xa4,
	0xa5,
	0xa6,
	0xa7,
	0xa8,
	0xa9,
	0xaa,
	0xab,
	0xac,
	0xad,
	0xae,
	0xaf,
};

static void
trailer_col(struct row *r, unsigned int n)
{
	char hex[2 * sizeof(trailer) + 1];
	unsigned int i;

	for (i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", trailer[i]);
	hex[2 * n] = '\0';
	addf(r, C_TRAILER, "%s", hex);
}

static void
hdr_init(struct isth_wire_hdr *h, unsigned int type, unsigned int dtype, unsigned int count)
{
	memset(h, 0, sizeof(*h));
	h->type = (uint8_t)type;
	h->dtype = (uint8_t)dtype;
	h->count = (uint16_t)count;
	h->job = 0xdeadbeef; /* above 2^31: unsigned everywhere */
	h->round = 4000000000u;
	h->chunk = 17;
	h->sender = 2;
	h->seq = UINT64_C(123456789012); /* above 2^32 */
	h->bitmap = UINT64_C(1) << 2;
}

/* A DATA/AGG message: header columns, element columns, frame. */
static void
elems(struct out *o, struct isth_wire_hdr *h, const float *fv, const int32_t *iv, uint16_t vlan,
	uint16_t sport)
{
	uint8_t body[1024], msg[1500];
	struct row r;
	unsigned int i, es = isth_wire_dtype_size(h->dtype);
	int n;

	memset(&r, 0, sizeof(r));
	for (i = 0; i < h->count; i++) {
		switch (h->dtype) {
		case ISTH_WIRE_DTYPE_FP32:
			put_le32(body + 4 * i, f32_bits(fv[i]));
			if (i < ELEMS_SHOWN)
				addf(&r, C_FP32, "%.9g", fv[i]);
			break;
		case ISTH_WIRE_DTYPE_BF16:
			put_le16(body + 2 * i, (uint16_t)(f32_bits(fv[i]) >> 16));
			if (i < ELEMS_SHOWN)
				addf(&r, C_BF16, "%.9g", bits_f32(f32_bits(fv[i]) & 0xffff0000u));
			break;
		case ISTH_WIRE_DTYPE_INT32:
			put_le32(body + 4 * i, (uint32_t)iv[i]);
			if (i < ELEMS_SHOWN)
				addf(&r, C_INT32, "%d", iv[i]);
			break;
		}
	}
	hdr_cols(&r, h);
	if (h->trailer_len)
		trailer_col(&r, h->trailer_len);
	n = isth_wire_build_msg(msg, sizeof(msg), h, body, (size_t)h->count * es, trailer);
	if (n < 0)
		die("isth_wire_build_msg (elements)");
	emit(o, &r, msg, (size_t)n, vlan, sport);
}

static void
ranges(struct out *o, struct isth_wire_hdr *h, const struct isth_wire_range *rg, uint16_t sport)
{
	uint8_t body[256], msg[512];
	struct row r;
	unsigned int i;
	int n;

	memset(&r, 0, sizeof(r));
	for (i = 0; i < h->count; i++) {
		addf(&r, C_FIRST, "%llu", (unsigned long long)rg[i].first);
		addf(&r, C_LAST, "%llu", (unsigned long long)rg[i].last);
	}
	hdr_cols(&r, h);
	if (h->trailer_len)
		trailer_col(&r, h->trailer_len);
	n = isth_wire_put_ranges(body, sizeof(body), rg, h->count);
	if (n < 0)
		die("isth_wire_put_ranges");
	n = isth_wire_build_msg(msg, sizeof(msg), h, body, (size_t)n, trailer);
	if (n < 0)
		die("isth_wire_build_msg (ranges)");
	emit(o, &r, msg, (size_t)n, 0, sport);
}

static void
round_msg(struct out *o, struct isth_wire_hdr *h, const struct isth_wire_round *rd)
{
	uint8_t body[ISTH_WIRE_ROUND_SIZE], msg[256];
	struct row r;
	unsigned int i;
	int n;

	memset(&r, 0, sizeof(r));
	hdr_cols(&r, h);
	addf(&r, C_START, "%llu", (unsigned long long)rd->start_ns);
	addf(&r, C_DEADLINE, "%llu", (unsigned long long)rd->deadline_ns);
	addf(&r, C_PERIOD, "%llu", (unsigned long long)rd->period_ns);
	addf(&r, C_CLIQUE, "%llu", (unsigned long long)rd->clique);
	for (i = 0; i < 64; i++)
		if (rd->clique >> i & 1)
			addf(&r, C_CLIQUE_ISLAND, "%u", i);
	addf(&r, C_NCHUNKS, "%u", rd->n_chunks);
	addf(&r, C_CHUNK_ELEMS, "%u", rd->chunk_elems);
	if (isth_wire_put_round(body, sizeof(body), rd) < 0)
		die("isth_wire_put_round");
	n = isth_wire_build_msg(msg, sizeof(msg), h, body, sizeof(body), trailer);
	if (n < 0)
		die("isth_wire_build_msg (round)");
	emit(o, &r, msg, (size_t)n, 0, ISTH_WIRE_PORT);
}

/* A message with one byte overwritten after encoding: the expected
 * columns are rebuilt from the header as it now reads. */
static void
poked(struct out *o, const struct isth_wire_hdr *h0, unsigned int off, uint8_t val, long resize)
{
	uint8_t body[64] = {0}, msg[256];
	struct isth_wire_hdr h = *h0;
	size_t size = 0;
	struct row r;
	int n;

	switch (h.type) {
	case ISTH_WIRE_DATA:
	case ISTH_WIRE_AGG:
		size = (size_t)h.count * isth_wire_dtype_size(h.dtype);
		break;
	case ISTH_WIRE_NACK:
	case ISTH_WIRE_GONE:
		size = (size_t)h.count * ISTH_WIRE_RANGE_SIZE;
		break;
	case ISTH_WIRE_ROUND:
		size = ISTH_WIRE_ROUND_SIZE;
		break;
	}
	n = isth_wire_build_msg(msg, sizeof(msg), &h, body, size, trailer);
	if (n < 0)
		die("isth_wire_build_msg (poked)");
	msg[off] = val;
	n = (int)(n + resize);
	/* Only header columns: the malformed body is not compared. */
	memset(&r, 0, sizeof(r));
	h.type = msg[3];
	h.flags = (uint16_t)(msg[4] << 8 | msg[5]);
	h.dtype = msg[6];
	h.trailer_len = msg[7];
	h.sender = msg[20];
	h.count = (uint16_t)(msg[22] << 8 | msg[23]);
	h.bitmap = 0;
	for (unsigned int i = 0; i < 8; i++)
		h.bitmap = h.bitmap << 8 | msg[32 + i];
	hdr_cols(&r, &h);
	snprintf(r.col[C_MAGIC], sizeof(r.col[C_MAGIC]), "%u", msg[0] << 8 | msg[1]);
	snprintf(r.col[C_VERSION], sizeof(r.col[C_VERSION]), "%u", msg[2]);
	snprintf(r.col[C_RESERVED], sizeof(r.col[C_RESERVED]), "%u", msg[21]);
	/* The body columns of a broken message are not compared ("*"). */
	for (int c = C_FP32; c <= C_TRAILER; c++)
		strcpy(r.col[c], "*");
	/* Below the header size nothing but the verdict is decoded. */
	if (n < (int)ISTH_WIRE_HDR_SIZE)
		memset(&r, 0, sizeof(r));
	emit(o, &r, msg, (size_t)n, 0, 50000);
}

int
main(int argc, char **argv)
{
	static const float fv[10] = {
		1.5f,
		-0.125f,
		1024.75f,
		0.0f,
		-3.5f,
		-3.25f,
		0.5f,
		1.0f,
		65536.0f,
		2.0f,
	};
	static const int32_t iv[4] = {0, -1, INT32_MAX, INT32_MIN};
	const struct isth_wire_range seqs[3] = {
		{10, 19},
		{UINT64_C(1) << 40, UINT64_C(1) << 40},
		{UINT64_C(9223372036854775813), UINT64_MAX},
	};
	const struct isth_wire_range chunk_rg[1] = {{0, UINT32_MAX}};
	const struct isth_wire_round rd = {
		.start_ns = UINT64_C(1700000000123456789),
		.deadline_ns = UINT64_C(1700000000373456789),
		.period_ns = 500000000,
		.clique = 0x1b,
		.n_chunks = 64,
		.chunk_elems = 358,
	};
	const struct isth_wire_range bad_seqs[3] = {
		{1, 2},
		{5, 4},
		{7, 7},
	};
	struct isth_wire_round bad_rd = rd;
	struct out o = {0};
	struct isth_wire_hdr h;
	unsigned int c;

	if (argc != 3) {
		fprintf(stderr, "usage: %s OUT.pcap EXPECTED.tsv\n", argv[0]);
		return 2;
	}
	o.pcap = fopen(argv[1], "wb");
	o.tsv = fopen(argv[2], "w");
	if (o.pcap == NULL || o.tsv == NULL)
		die(strerror(errno));
	bad_rd.deadline_ns = bad_rd.start_ns - 1;
	pcap_header(o.pcap);
	for (c = 0; c < N_COLS; c++)
		fprintf(o.tsv, "%s%s", c ? "\t" : "", fields[c]);
	fputc('\n', o.tsv);

	/* One valid packet of each type, each element type. */
	hdr_init(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, 5);
	h.flags = ISTH_WIRE_F_LAST;
	elems(&o, &h, fv, iv, 10, ISTH_WIRE_PORT);
	hdr_init(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_BF16, 10);
	h.sender = 7;
	h.bitmap = UINT64_C(1) << 7;
	elems(&o, &h, fv, iv, 0, 50000);
	hdr_init(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_INT32, 4);
	h.flags = ISTH_WIRE_F_RESENT;
	elems(&o, &h, fv, iv, 4095, ISTH_WIRE_PORT);
	hdr_init(&h, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_FP32, 3);
	h.flags = ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_AUTH;
	h.trailer_len = 16;
	h.bitmap = 0x15;
	elems(&o, &h, fv + 2, iv, 0, ISTH_WIRE_PORT);
	hdr_init(&h, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_BF16, 2);
	h.flags = ISTH_WIRE_F_LAST | ISTH_WIRE_F_RESENT;
	h.bitmap = 0xff;
	h.seq = 0;
	elems(&o, &h, fv + 5, iv, 0, ISTH_WIRE_PORT);
	hdr_init(&h, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_INT32, 1);
	h.bitmap = 0x81;
	elems(&o, &h, fv, iv + 2, 0, ISTH_WIRE_PORT);
	hdr_init(&h, ISTH_WIRE_NACK, ISTH_WIRE_DTYPE_NONE, 3);
	h.bitmap = 0;
	ranges(&o, &h, seqs, 50001);
	hdr_init(&h, ISTH_WIRE_GONE, ISTH_WIRE_DTYPE_NONE, 1);
	h.flags = ISTH_WIRE_F_CHUNKS | ISTH_WIRE_F_AUTH;
	h.trailer_len = 8;
	h.bitmap = 0x6;
	ranges(&o, &h, chunk_rg, ISTH_WIRE_PORT);
	hdr_init(&h, ISTH_WIRE_ROUND, ISTH_WIRE_DTYPE_NONE, 0);
	h.sender = 3;
	h.bitmap = 0x13;
	round_msg(&o, &h, &rd);

	/* Malformed: each must get the parser's reason as its verdict. */
	hdr_init(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, 4);
	poked(&o, &h, 1, 'T', 0); /* magic */
	poked(&o, &h, 2, 2, 0); /* version */
	poked(&o, &h, 3, 9, 0); /* type */
	poked(&o, &h, 5, ISTH_WIRE_F_CHUNKS, 0); /* flags */
	poked(&o, &h, 6, ISTH_WIRE_DTYPE_NONE, 0); /* dtype */
	poked(&o, &h, 20, N_ISLANDS, 0); /* island */
	poked(&o, &h, 21, 1, 0); /* reserved */
	poked(&o, &h, 7, 4, 0); /* trailer */
	poked(&o, &h, 23, 0, 0); /* count */
	poked(&o, &h, 23, 4, 1); /* length */
	poked(&o, &h, 39, 0x05, 0); /* bitmap */
	poked(&o, &h, 0, 0x49, -(4 * 4 + 21)); /* hdr_trunc */
	hdr_init(&h, ISTH_WIRE_NACK, ISTH_WIRE_DTYPE_NONE, 1);
	h.bitmap = 0;
	poked(&o, &h, 6, ISTH_WIRE_DTYPE_FP32, 0); /* dtype */
	poked(&o, &h, 40 + 7, 1, 0); /* range: 1 > 0 */
	hdr_init(&h, ISTH_WIRE_NACK, ISTH_WIRE_DTYPE_NONE, 3);
	h.bitmap = 0;
	ranges(&o, &h, bad_seqs, ISTH_WIRE_PORT); /* range */
	hdr_init(&h, ISTH_WIRE_ROUND, ISTH_WIRE_DTYPE_NONE, 0);
	h.sender = 3;
	h.bitmap = 0x13;
	round_msg(&o, &h, &bad_rd); /* round_body */
	h.bitmap = 0x17;
	round_msg(&o, &h, &rd); /* bitmap */
	hdr_init(&h, ISTH_WIRE_ROUND, ISTH_WIRE_DTYPE_NONE, 0);
	h.sender = 0;
	poked(&o, &h, 40 + 31, 0, 0); /* bitmap: clique 0 */

	if (fclose(o.pcap) != 0 || fclose(o.tsv) != 0)
		die(strerror(errno));
	printf("pcap_gen: %u frames\n", o.n);
	return 0;
}
