/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes a pcap of isthmus frames built with the project's encoder, and a
 * TSV of what each frame must decode to in Wireshark (scripts/isthmus.lua).
 *
 *   pcap_gen OUT.pcap EXPECTED.tsv KEYS.conf
 *
 * The TSV's first line names the dissector fields, one column each; every
 * further line is one frame, in capture order. Multi-valued fields are
 * comma-separated, absent ones empty. Values are what was encoded, except
 * isthmus.verdict, which is isth_wire_parse_frame()'s reason name: the
 * dissector must refuse exactly what the parser refuses. The parser runs
 * with 8 islands and no element/range limit (tshark -o isthmus.islands:8).
 *
 * Version 2 frames are sealed by lib/auth (isth_auth_seal: UP, DOWN, WAN)
 * with the key file written to KEYS.conf (job 42, two epochs), for the
 * dissector to verify with -o isthmus.key_file:KEYS.conf; the per-receiver
 * WAN trailer (receiver bitmap, then one tag per receiver under
 * K(e, 4, s, t)) is sealed here from lib/auth's HKDF and GMAC primitives.
 * So the expected tags come from lib/auth's OpenSSL code, never from the
 * dissector's Lua. SITE.key is edge 2's site file (its keys derived by
 * isth_auth_derive: UP 2, DOWN 2, WAN of every island) and SITE.tsv what
 * the dissector must say of each tag with it instead: a tag under a key
 * the site lacks is "no key for ...", not WRONG.
 *
 * The pcap is the classic libpcap format (not pcapng), written by hand:
 * a 24-byte file header, then a 16-byte record header per frame, all
 * little-endian, LINKTYPE_ETHERNET.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isth_auth.h"
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
	"isthmus.epoch",
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
	"isthmus.trailer.receivers",
	"isthmus.trailer.receiver",
	"isthmus.tag",
	"isthmus.tag.status",
	"isthmus.tag.key",
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
	C_EPOCH,
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
	C_RECEIVERS,
	C_RECEIVER,
	C_TAG,
	C_TAG_STATUS,
	C_TAG_KEY,
	C_VERDICT,
	C_DSTPORT,
	N_COLS
};

struct row {
	char col[N_COLS][512];
};

/* How finish() ends a version 2 message (NULL: version 1). */
struct seal {
	enum isth_auth_dir dir; /* one tag under (dir, owner); 0: per receiver */
	unsigned int owner;
	uint64_t receivers; /* dir 0: the receiver bitmap */
	uint64_t spoil; /* receivers (dir 0) or bit 0 (one tag): tag bit flipped */
	size_t cut; /* bytes cut off the sealed message's end */
	const char *status; /* expected isthmus.tag.status (NULL: computed) */
	const char *key; /* expected isthmus.tag.key for one tag */
	bool raw; /* not sealed: hdr.epoch and the constant trailer as tag */
};

struct out {
	FILE *pcap;
	FILE *tsv;
	unsigned int n;
	struct isth_auth *auth; /* KEYS.conf */
	struct isth_auth_engine *eng;
	const struct seal *seal; /* the next message's, NULL: version 1 */
	/* the parser predates the per-receiver trailer: its expected verdict */
	const char *verdict;
	FILE *site_tsv; /* with edge 2's site file: tag status and key */
	char site[2][512]; /* the next frame's row of it */
};

#define JOB 42
/* KEYS.conf: epoch 1 from round 0 (master 00 01 .. 1f), epoch 2 from
 * round EPOCH2_ROUND (master 20 21 .. 3f) */
#define EPOCH2_ROUND 100

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
	bool v2 = h->version == ISTH_WIRE_VERSION_AUTH;

	addf(r, C_VERSION, "%u", v2 ? ISTH_WIRE_VERSION_AUTH : ISTH_WIRE_VERSION);
	addf(r, C_TYPE, "%u", h->type);
	addf(r, C_FLAGS, "%u", v2 ? h->flags | ISTH_WIRE_F_AUTH : h->flags);
	addf(r, C_DTYPE, "%u", h->dtype);
	addf(r, C_TLEN, "%u", h->trailer_len);
	addf(r, C_JOB, "%u", h->job);
	addf(r, C_ROUND, "%u", h->round);
	addf(r, C_CHUNK, "%u", h->chunk);
	addf(r, C_SENDER, "%u", h->sender);
	if (v2)
		addf(r, C_EPOCH, "%u", h->epoch);
	else
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
	/* a version 2 message is judged by a version 2 link's parser */
	if (isth_wire_limits_init_auth(
		    &lim, N_ISLANDS, 1500, msg_size > 2 && msg[2] == ISTH_WIRE_VERSION_AUTH))
		die("isth_wire_limits_init");
	lim.max_elems = UINT16_MAX;
	lim.max_ranges = UINT16_MAX;
	addf(r, C_VERDICT, "%s",
		o->verdict
			? o->verdict
			: isth_wire_reason_name(isth_wire_parse_frame(f, (size_t)n, &lim, &pkt)));
	o->verdict = NULL;
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
	fprintf(o->site_tsv, "%s\t%s\n", o->site[0], o->site[1]);
	o->site[0][0] = o->site[1][0] = '\0';
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


/* @n <= 256 bytes as hex, in a static buffer. */
static const char *
hexstr(const uint8_t *p, size_t n)
{
	static char hex[2 * 256 + 1];

	for (size_t i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", p[i]);
	hex[2 * n] = '\0';
	return hex;
}

static void
hex_col(struct row *r, int c, const uint8_t *p, size_t n)
{
	addf(r, c, "%s", hexstr(p, n));
}

static const char *const dir_name[] = {"", "UP", "DOWN", "WAN"};

static void addf_s(char (*site)[512], const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append a status to the site row's status column, comma-separated; its
 * key column gets an empty value beside it. */
static void
addf_s(char (*site)[512], const char *fmt, ...)
{
	size_t n = strlen(site[0]);
	va_list ap;

	if (n) {
		site[0][n++] = ',';
		strcat(site[1], ",");
	}
	va_start(ap, fmt);
	vsnprintf(site[0] + n, sizeof(site[0]) - n, fmt, ap);
	va_end(ap);
}

/* As addf_s(), with @key in the key column. */
static void
addf_sk(char (*site)[512], const char *status, const char *key)
{
	addf_s(site, "%s", status);
	strncat(site[1], key, 511 - strlen(site[1]));
}

/* One tag under (dir, owner), by lib/auth's isth_auth_seal(). */
static size_t
seal_one(struct out *o, const struct seal *sl, struct row *r, uint8_t *msg, size_t len, size_t cap)
{
	int n = isth_auth_seal(o->eng, sl->dir, sl->owner, msg, len, cap);

	if (n < 0)
		die("isth_auth_seal");
	if (sl->spoil)
		msg[n - 1] ^= 1;
	hex_col(r, C_TAG, msg + n - ISTH_AUTH_TAG_SIZE, ISTH_AUTH_TAG_SIZE);
	if (sl->status != NULL) {
		addf(r, C_TAG_STATUS, "%s", sl->status);
	} else {
		addf(r, C_TAG_STATUS, "%s", sl->spoil ? "WRONG" : "verified");
		/* a WRONG tag names every key tried, in the dissector's order */
		if (sl->key != NULL)
			addf(r, C_TAG_KEY, "%s", sl->key);
		else
			addf(r, C_TAG_KEY, "%s %u", dir_name[sl->dir], sl->owner);
	}
	return (size_t)n;
}

/*
 * The per-receiver WAN trailer: receiver bitmap (u64 BE), then for each
 * receiver t, ascending, the tag of header + body under
 * K(e, 4, s, t) = HKDF-SHA256(M_e, "isthmus/v2",
 * "isthmus/v2 gmac" || job || e || 4 || s || t), with the message's IV.
 */
static size_t
seal_pairs(const struct seal *sl, struct row *r, uint8_t *msg, size_t len)
{
	uint8_t master[ISTH_AUTH_KEY_SIZE], key[ISTH_AUTH_KEY_SIZE], iv[ISTH_AUTH_IV_SIZE];
	uint8_t info[15 + 8];
	unsigned int k = (unsigned int)__builtin_popcountll(sl->receivers), t, e;
	size_t n = len + 8;

	e = isth_wire_get_hdr_round(msg) >= EPOCH2_ROUND ? 2 : 1;
	for (unsigned int i = 0; i < sizeof(master); i++)
		master[i] = (uint8_t)((e - 1) * 32 + i);
	msg[ISTH_WIRE_OFF_EPOCH] = (uint8_t)e;
	msg[ISTH_WIRE_OFF_TRAILER] = (uint8_t)(8 + 16 * k);
	for (int i = 0; i < 8; i++)
		msg[len + (size_t)i] = (uint8_t)(sl->receivers >> (56 - 8 * i));
	addf(r, C_RECEIVERS, "%llu", (unsigned long long)sl->receivers);
	memcpy(info, "isthmus/v2 gmac", 15);
	info[15] = JOB >> 24;
	info[16] = (uint8_t)(JOB >> 16);
	info[17] = (uint8_t)(JOB >> 8);
	info[18] = (uint8_t)JOB;
	info[19] = (uint8_t)e;
	info[20] = 4;
	info[21] = msg[ISTH_WIRE_OFF_SENDER];
	isth_auth_iv(msg, iv);
	for (t = 0; t < 64; t++) {
		if (!(sl->receivers >> t & 1))
			continue;
		info[22] = (uint8_t)t;
		if (isth_auth_hkdf(master, sizeof(master), (const uint8_t *)"isthmus/v2", 10, info,
			    sizeof(info), key, sizeof(key)) != 0 ||
			isth_auth_gmac_raw(ISTH_AUTH_OPENSSL, key, iv, msg, len, msg + n) != 0)
			die("HKDF/GMAC");
		if (sl->spoil >> t & 1)
			msg[n] ^= 0x80;
		addf(r, C_RECEIVER, "%u", t);
		hex_col(r, C_TAG, msg + n, ISTH_AUTH_TAG_SIZE);
		addf(r, C_TAG_STATUS, "%s", sl->spoil >> t & 1 ? "WRONG" : "verified");
		addf(r, C_TAG_KEY, "WAN %u>%u", msg[ISTH_WIRE_OFF_SENDER], t);
		n += ISTH_AUTH_TAG_SIZE;
	}
	return n;
}

/* Edge 2's site file holds UP 2, DOWN 2 and the WAN key of every island. */
static bool
site_holds(enum isth_auth_dir d, unsigned int owner)
{
	return d == ISTH_AUTH_WAN || owner == 2;
}

/*
 * What the dissector must say of the tag of @msg (sealed as @sl) with
 * edge 2's site file: it tries the keys a tag of the type may be under,
 * in its order (UP then WAN for DATA, DOWN then WAN for GONE, ...);
 * verified by the sealing key if held, else "no key for" the keys
 * lacking, else (all held, none matches) WRONG.
 */
static void
site_expect(struct out *o, const struct seal *sl, const uint8_t *msg)
{
	unsigned int s = msg[ISTH_WIRE_OFF_SENDER], type = msg[ISTH_WIRE_OFF_TYPE], n = 0;
	bool chunks = msg[ISTH_WIRE_OFF_FLAGS + 1] & ISTH_WIRE_F_CHUNKS;
	enum isth_auth_dir cand[2];
	char lack[128] = "", tried[128] = "";

	if (sl->cut) {
		strcpy(o->site[0], "*");
		strcpy(o->site[1], "*");
		return;
	}
	if (sl->status != NULL || sl->raw) { /* not checkable with any file */
		snprintf(o->site[0], sizeof(o->site[0]), "%s", sl->status);
		return;
	}
	if (sl->dir == 0) { /* per-receiver tags: edge 2 holds the pairs from and to it */
		for (unsigned int t = 0; t < 64; t++) {
			char key[32];

			if (!(sl->receivers >> t & 1))
				continue;
			snprintf(key, sizeof(key), "WAN %u>%u", s, t);
			if (s != 2 && t != 2)
				addf_s(o->site, "no key for %s", key);
			else
				addf_sk(o->site, sl->spoil >> t & 1 ? "WRONG" : "verified", key);
		}
		return;
	}
	if (type == ISTH_WIRE_DATA || (type == ISTH_WIRE_NACK && !chunks))
		cand[n++] = ISTH_AUTH_UP;
	if (type == ISTH_WIRE_AGG || type == ISTH_WIRE_ROUND || type == ISTH_WIRE_GONE)
		cand[n++] = ISTH_AUTH_DOWN;
	if (type == ISTH_WIRE_DATA || type == ISTH_WIRE_GONE || (type == ISTH_WIRE_NACK && chunks))
		cand[n++] = ISTH_AUTH_WAN;
	for (unsigned int i = 0; i < n; i++) {
		char *list = site_holds(cand[i], s) ? tried : lack;

		if (site_holds(cand[i], s) && cand[i] == sl->dir && !sl->spoil) {
			snprintf(o->site[0], sizeof(o->site[0]), "verified");
			snprintf(o->site[1], sizeof(o->site[1]), "%s %u", dir_name[cand[i]], s);
			return;
		}
		snprintf(list + strlen(list), 128 - strlen(list), "%s%s %u", *list ? "/" : "",
			dir_name[cand[i]], s);
	}
	if (*lack)
		snprintf(o->site[0], sizeof(o->site[0]), "no key for %s", lack);
	else {
		snprintf(o->site[0], sizeof(o->site[0]), "WRONG");
		snprintf(o->site[1], sizeof(o->site[1]), "%s", tried);
	}
}

/* Build the message of header columns @r; version 1 with the constant
 * trailer, or (o->seal) version 2 sealed as it says. */
static void
finish(struct out *o, struct row *r, struct isth_wire_hdr *h, const uint8_t *body, size_t blen,
	uint16_t vlan, uint16_t sport)
{
	const struct seal *sl = o->seal;
	uint8_t msg[FRAME_MAX];
	size_t len;
	int n;

	o->seal = NULL;
	n = isth_wire_build_msg(
		msg, sizeof(msg), h, body, blen, sl == NULL || sl->raw ? trailer : NULL);
	if (n < 0)
		die("isth_wire_build_msg");
	len = (size_t)n;
	if (sl == NULL) {
		if (h->trailer_len)
			trailer_col(r, h->trailer_len);
		emit(o, r, msg, len, vlan, sport);
		return;
	}
	if (h->version != ISTH_WIRE_VERSION_AUTH)
		die("a sealed message must be version 2");
	if (sl->raw) {
		n = (int)len - ISTH_AUTH_TAG_SIZE;
		hex_col(r, C_TAG, msg + n, ISTH_AUTH_TAG_SIZE);
		addf(r, C_TAG_STATUS, "%s", sl->status);
	} else {
		n = (int)len;
		len = sl->dir ? seal_one(o, sl, r, msg, len, sizeof(msg))
			      : seal_pairs(sl, r, msg, len);
	}
	hex_col(r, C_TRAILER, msg + n, len - (size_t)n);
	/* what sealing wrote: the epoch of the round, the trailer length */
	snprintf(r->col[C_EPOCH], sizeof(r->col[C_EPOCH]), "%u", msg[ISTH_WIRE_OFF_EPOCH]);
	snprintf(r->col[C_TLEN], sizeof(r->col[C_TLEN]), "%u", msg[ISTH_WIRE_OFF_TRAILER]);
	site_expect(o, sl, msg);
	if (sl->cut) {
		len -= sl->cut;
		for (int c = C_FP32; c <= C_TAG_KEY; c++)
			strcpy(r->col[c], "*");
	}
	emit(o, r, msg, len, vlan, sport);
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
	uint8_t body[1024];
	struct row r;
	unsigned int i, es = isth_wire_dtype_size(h->dtype);

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
	finish(o, &r, h, body, (size_t)h->count * es, vlan, sport);
}

static void
ranges(struct out *o, struct isth_wire_hdr *h, const struct isth_wire_range *rg, uint16_t sport)
{
	uint8_t body[256];
	struct row r;
	unsigned int i;
	int n;

	memset(&r, 0, sizeof(r));
	for (i = 0; i < h->count; i++) {
		addf(&r, C_FIRST, "%llu", (unsigned long long)rg[i].first);
		addf(&r, C_LAST, "%llu", (unsigned long long)rg[i].last);
	}
	hdr_cols(&r, h);
	n = isth_wire_put_ranges(body, sizeof(body), rg, h->count);
	if (n < 0)
		die("isth_wire_put_ranges");
	finish(o, &r, h, body, (size_t)n, 0, sport);
}

static void
round_msg(struct out *o, struct isth_wire_hdr *h, const struct isth_wire_round *rd)
{
	uint8_t body[ISTH_WIRE_ROUND_SIZE];
	struct row r;
	unsigned int i;

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
	finish(o, &r, h, body, sizeof(body), 0, ISTH_WIRE_PORT);
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
	h.version = msg[2];
	h.epoch = msg[21];
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
	snprintf(r.col[C_FLAGS], sizeof(r.col[C_FLAGS]), "%u", h.flags);
	if (msg[2] != ISTH_WIRE_VERSION_AUTH) /* version 2: the epoch column */
		snprintf(r.col[C_RESERVED], sizeof(r.col[C_RESERVED]), "%u", msg[21]);
	/* The body columns of a broken message are not compared ("*"). */
	for (int c = C_FP32; c <= C_TAG_KEY; c++)
		strcpy(r.col[c], "*");
	/* Below the header size nothing but the verdict is decoded. */
	if (n < (int)ISTH_WIRE_HDR_SIZE)
		memset(&r, 0, sizeof(r));
	emit(o, &r, msg, (size_t)n, 0, 50000);
}


/* SITE.key beside KEYS.conf: edge 2's site file (doc/protocol.md, "Key
 * file"), its keys derived with isth_auth_derive(). */
static void
site_file(const char *keys)
{
	char path[4096];
	uint8_t m[ISTH_AUTH_KEY_SIZE], k[ISTH_AUTH_KEY_SIZE];
	FILE *f;

	snprintf(path, sizeof(path), "%s.site", keys);
	f = fopen(path, "w");
	if (f == NULL)
		die(strerror(errno));
	fprintf(f, "job %u\nsite edge 2\n", JOB);
	for (unsigned int e = 1; e <= 2; e++) {
		fprintf(f, "epoch %u round %u\n", e, e == 1 ? 0 : EPOCH2_ROUND);
		for (unsigned int i = 0; i < sizeof(m); i++)
			m[i] = (uint8_t)((e - 1) * 32 + i);
		for (unsigned int d = ISTH_AUTH_UP; d <= ISTH_AUTH_WAN; d++)
			for (unsigned int s = 0; s < N_ISLANDS; s++) {
				if (d != ISTH_AUTH_WAN && s != 2)
					continue;
				if (isth_auth_derive(m, JOB, (uint8_t)e, d, s, k) != 0)
					die("isth_auth_derive");
				if (d == ISTH_AUTH_WAN)
					fprintf(f, "key wan %u %s\n", s, hexstr(k, sizeof(k)));
				else
					fprintf(f, "key %s %s\n", d == ISTH_AUTH_UP ? "up" : "down",
						hexstr(k, sizeof(k)));
			}
		/* the pairs from edge 2 (it seals) and to it (it verifies) */
		for (unsigned int t = 0; t < N_ISLANDS; t++)
			for (unsigned int to = 0; to < 2 && t != 2; to++) {
				unsigned int snd = to ? t : 2, rcv = to ? 2 : t;

				if (isth_auth_derive_pair(m, JOB, (uint8_t)e, snd, rcv, k) != 0)
					die("isth_auth_derive_pair");
				fprintf(f, "key pair %u %u %s\n", snd, rcv, hexstr(k, sizeof(k)));
			}
	}
	if (fclose(f) != 0)
		die(strerror(errno));
}

/* KEYS.conf, mode 0600 (lib/auth refuses anything wider), and a handle
 * and engine on it for isth_auth_seal(). */
static void
keys_open(struct out *o, const char *path)
{
	struct isth_auth_conf conf = {.key_file = path, .job = JOB, .n_islands = N_ISLANDS};
	char err[256];
	FILE *f;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || fchmod(fd, 0600) != 0 || (f = fdopen(fd, "w")) == NULL)
		die(strerror(errno));
	fprintf(f, "# tests/wireshark: the dissector verifies with this file\njob %u\n", JOB);
	for (unsigned int e = 1; e <= 2; e++) {
		fprintf(f, "epoch %u round %u key ", e, e == 1 ? 0 : EPOCH2_ROUND);
		for (unsigned int i = 0; i < ISTH_AUTH_KEY_SIZE; i++)
			fprintf(f, "%02x", (e - 1) * 32 + i);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		die(strerror(errno));
	if (isth_auth_create(&conf, &o->auth, err, sizeof(err)) != 0)
		die(err);
	site_file(path);
	if (isth_auth_engine_create(o->auth, ISTH_AUTH_OPENSSL, &o->eng) != 0)
		die("isth_auth_engine_create");
}

static void
v2_hdr(struct isth_wire_hdr *h, unsigned int type, unsigned int dtype, unsigned int count,
	uint32_t round)
{
	hdr_init(h, type, dtype, count);
	h->version = ISTH_WIRE_VERSION_AUTH;
	h->job = JOB;
	h->round = round;
}

/* Version 2: every type under its keys, both trailer layouts, both
 * epochs, and tags the dissector must call WRONG or cannot check. */
static void
v2_frames(struct out *o, const float *fv, const int32_t *iv, const struct isth_wire_round *rd)
{
	const struct isth_wire_range seqs[2] = {{10, 19}, {UINT64_C(1) << 40, UINT64_C(1) << 40}};
	const struct isth_wire_range chunk_rg[1] = {{3, 9}};
	static const struct seal up2 = {.dir = ISTH_AUTH_UP, .owner = 2};
	static const struct seal wan2 = {.dir = ISTH_AUTH_WAN, .owner = 2};
	static const struct seal down2 = {.dir = ISTH_AUTH_DOWN, .owner = 2};
	static const struct seal down3 = {.dir = ISTH_AUTH_DOWN, .owner = 3};
	static const struct seal up3 = {.dir = ISTH_AUTH_UP, .owner = 3};
	static const struct seal wan1 = {.dir = ISTH_AUTH_WAN, .owner = 1};
	static const struct seal pairs1 = {.receivers = 0x29}; /* 0, 3, 5 */
	static const struct seal pairs4 = {.receivers = 0x4}; /* 2 */
	static const struct seal pairs_bad = {.receivers = 0x41, .spoil = 0x40};
	static const struct seal up2_bad = {
		.dir = ISTH_AUTH_UP, .owner = 2, .spoil = 1, .key = "UP 2/WAN 2"};
	static const struct seal other_job = {
		.dir = ISTH_AUTH_UP, .owner = 2, .status = "no key for job 43 (the file's is 42)"};
	static const struct seal no_epoch = {.raw = true, .status = "no key for epoch 9"};
	static const struct seal cut = {.dir = ISTH_AUTH_UP, .owner = 2, .cut = 4 * 4 + 4};
	struct isth_wire_hdr h;

	/* DATA island -> edge (UP), epoch 1; the same DATA on the WAN (WAN
	 * key), epoch 2; an AGG, a GONE and a ROUND to the island (DOWN) */
	v2_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, 4, 7);
	o->seal = &up2;
	elems(o, &h, fv, iv, 0, ISTH_WIRE_PORT);
	v2_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, 4, EPOCH2_ROUND + 5);
	h.flags = ISTH_WIRE_F_RESENT;
	o->seal = &wan2;
	elems(o, &h, fv, iv, 0, ISTH_WIRE_PORT);
	v2_hdr(&h, ISTH_WIRE_AGG, ISTH_WIRE_DTYPE_INT32, 4, 8);
	h.flags = ISTH_WIRE_F_PARTIAL;
	h.bitmap = 0x15;
	o->seal = &down2;
	elems(o, &h, fv, iv, 0, ISTH_WIRE_PORT);
	v2_hdr(&h, ISTH_WIRE_GONE, ISTH_WIRE_DTYPE_NONE, 2, 8);
	h.bitmap = 0;
	o->seal = &down2;
	ranges(o, &h, seqs, ISTH_WIRE_PORT);
	v2_hdr(&h, ISTH_WIRE_ROUND, ISTH_WIRE_DTYPE_NONE, 0, EPOCH2_ROUND);
	h.sender = 3;
	h.bitmap = 0x13;
	o->seal = &down3;
	round_msg(o, &h, rd);
	/* NACK by seq (island -> edge, UP) and by chunk (edge -> edge, WAN) */
	v2_hdr(&h, ISTH_WIRE_NACK, ISTH_WIRE_DTYPE_NONE, 2, 8);
	h.sender = 3;
	h.bitmap = 0;
	o->seal = &up3;
	ranges(o, &h, seqs, 50001);
	v2_hdr(&h, ISTH_WIRE_NACK, ISTH_WIRE_DTYPE_NONE, 1, 8);
	h.flags = ISTH_WIRE_F_CHUNKS;
	h.sender = 1;
	h.bitmap = 1u << 2;
	o->seal = &wan1;
	ranges(o, &h, chunk_rg, ISTH_WIRE_PORT);
	/* per-receiver WAN tags (the WAN tag list): DATA of island 1 for
	 * edges 0, 3, 5; a chunk NACK of edge 4 for edge 2 (edge 2's site
	 * file holds that pair: verified) */
	v2_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_BF16, 6, EPOCH2_ROUND + 1);
	h.sender = 1;
	h.bitmap = 1u << 1;
	o->seal = &pairs1;
	o->verdict = "ok";
	elems(o, &h, fv, iv, 0, ISTH_WIRE_PORT);
	v2_hdr(&h, ISTH_WIRE_NACK, ISTH_WIRE_DTYPE_NONE, 1, 9);
	h.flags = ISTH_WIRE_F_CHUNKS;
	h.sender = 4;
	o->seal = &pairs4;
	o->verdict = "ok";
	ranges(o, &h, chunk_rg, ISTH_WIRE_PORT);
	/* forged: a flipped tag bit; one of two receivers' tags flipped */
	v2_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_INT32, 4, 7);
	o->seal = &up2_bad;
	elems(o, &h, fv, iv, 0, ISTH_WIRE_PORT);
	v2_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_INT32, 4, 7);
	h.sender = 1;
	h.bitmap = 1u << 1;
	o->seal = &pairs_bad;
	o->verdict = "ok";
	elems(o, &h, fv, iv, 0, ISTH_WIRE_PORT);
	/* not checkable: another job's; an epoch the file lacks */
	v2_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_INT32, 4, 7);
	h.job = 43;
	o->seal = &other_job;
	elems(o, &h, fv, iv, 0, ISTH_WIRE_PORT);
	v2_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_INT32, 4, 7);
	h.epoch = 9;
	o->seal = &no_epoch;
	elems(o, &h, fv, iv, 0, ISTH_WIRE_PORT);
	/* malformed: the trailer cut short (4 of its 16 bytes left); a
	 * trailer of neither layout; 8 + 16 bytes whose bitmap does not name
	 * one receiver; AUTH clear */
	v2_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_INT32, 4, 7);
	o->seal = &cut;
	elems(o, &h, fv, iv, 0, ISTH_WIRE_PORT);
	v2_hdr(&h, ISTH_WIRE_DATA, ISTH_WIRE_DTYPE_FP32, 4, 7);
	poked(o, &h, 7, 20, 0);
	poked(o, &h, 7, 24, 0);
	poked(o, &h, 5, 0, 0);
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

	if (argc != 4) {
		fprintf(stderr, "usage: %s OUT.pcap EXPECTED.tsv KEYS.conf\n", argv[0]);
		return 2;
	}
	o.pcap = fopen(argv[1], "wb");
	o.tsv = fopen(argv[2], "w");
	{
		char site[4096];

		snprintf(site, sizeof(site), "%s.site", argv[2]);
		o.site_tsv = fopen(site, "w");
	}
	if (o.pcap == NULL || o.tsv == NULL || o.site_tsv == NULL)
		die(strerror(errno));
	fprintf(o.site_tsv, "isthmus.tag.status\tisthmus.tag.key\n");
	keys_open(&o, argv[3]);
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
	poked(&o, &h, 2, 3, 0); /* version */
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

	v2_frames(&o, fv, iv, &rd);
	isth_auth_engine_free(o.eng);
	isth_auth_free(o.auth);
	if (fclose(o.pcap) != 0 || fclose(o.tsv) != 0 || fclose(o.site_tsv) != 0)
		die(strerror(errno));
	printf("pcap_gen: %u frames\n", o.n);
	return 0;
}
