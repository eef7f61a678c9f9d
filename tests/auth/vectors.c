/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test vectors of doc/protocol.md ("Test vectors"), computed with
 * lib/auth, and the check that the document still holds them.
 *
 *   auth_vectors                  print the vector block (markdown)
 *   auth_vectors --check DOC      recompute; exit 1 unless DOC's block
 *                                 (between the vectors:begin/end marks)
 *                                 is exactly that text
 *   auth_vectors --update DOC     write the block into DOC
 *
 * Before anything is printed or compared, lib/auth's primitives are
 * checked against their standards' own published values: HKDF-SHA256
 * against RFC 5869 appendix A.1, AES-256-GMAC against NIST CAVP
 * gcmEncryptExtIV256.rsp (GCM, NIST SP 800-38D, with an empty
 * plaintext), and the direction-key formula of doc/protocol.md ("Keys",
 * computed here from isth_auth_hkdf()) against isth_auth_derive(). A
 * failure there exits 1 before the document is looked at.
 *
 * Every vector is one row of a table below: a key row is (epoch, dir,
 * owner[, receiver]); a message row is a header, a body and the key that
 * seals it. Adding a direction is adding rows.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isth_auth.h"
#include "isth_wire.h"

#define JOB 42
#define EPOCH2_ROUND 100 /* the rotation: epoch 2 from round 100 */
#define BEGIN "<!-- vectors:begin (tests/auth/vectors.c writes this block) -->\n"
#define END "<!-- vectors:end -->\n"
#define OUT_MAX (64 * 1024)

static char out[OUT_MAX];
static size_t out_len;

static void __attribute__((format(printf, 1, 2))) put(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out + out_len, sizeof(out) - out_len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(out) - out_len) {
		fprintf(stderr, "auth_vectors: output too long\n");
		exit(1);
	}
	out_len += (size_t)n;
}

static void
die(const char *what)
{
	fprintf(stderr, "auth_vectors: %s\n", what);
	exit(1);
}

static size_t
unhex(const char *s, uint8_t *b, size_t cap)
{
	size_t n = 0;
	unsigned int v;

	while (*s) {
		if (*s == ' ') {
			s++;
			continue;
		}
		if (n == cap || sscanf(s, "%2x", &v) != 1)
			die("bad hex in a table");
		b[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static const char *
hex(const uint8_t *b, size_t n)
{
	static char s[2 * 256 + 1];

	for (size_t i = 0; i < n && i < 256; i++)
		sprintf(s + 2 * i, "%02x", b[i]);
	s[2 * (n < 256 ? n : 256)] = '\0';
	return s;
}

/* Bytes as the document shows a message: 4-byte groups, 16 bytes a line. */
static void
put_bytes(const char *label, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i % 16 == 0)
			put("%s%-6s", i ? "\n" : "", i ? "" : label);
		if (i % 4 == 0)
			put(" ");
		put("%02x", b[i]);
	}
	put("\n");
}

/* ---- the standards' own values -------------------------------------- */

static void
check(const char *what, const uint8_t *got, size_t n, const char *want)
{
	uint8_t w[64];

	if (unhex(want, w, sizeof(w)) != n || memcmp(got, w, n) != 0) {
		fprintf(stderr, "auth_vectors: %s: got %s, want %s\n", what, hex(got, n), want);
		exit(1);
	}
}

/* RFC 5869 A.1; NIST CAVP gcmEncryptExtIV256.rsp [Keylen = 256]
 * [IVlen = 96] [PTlen = 0] [AADlen = 0 and 128] [Taglen = 128] Count 0. */
#define RFC5869_OKM \
	"3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
static const struct {
	const char *key, *iv, *aad, *tag;
} cavp[] = {
	{"b52c505a37d78eda5dd34f20c22540ea1b58963cf8e5bf8ffa85f9f2492505b4",
		"516c33929df5a3284ff463d7", "", "bdc1ac884d332457a1d2664f168c76f0"},
	{"78dc4e0aaf52d935c3c01eea57428f00ca1fd475f5da86a49c8dd73d68c8e223",
		"d79cf22d504cc793c3fb6c8a", "b96baa8c1c75a671bfb2d08d06be5f36",
		"3e5d486aa2e30b22e040b85723a06e76"},
};

static void
standards(void)
{
	uint8_t ikm[22], salt[13], info[10], okm[42], k[32], iv[12], aad[16], tag[16];

	memset(ikm, 0x0b, sizeof(ikm));
	for (int i = 0; i < 13; i++)
		salt[i] = (uint8_t)i;
	for (int i = 0; i < 10; i++)
		info[i] = (uint8_t)(0xf0 + i);
	if (isth_auth_hkdf(ikm, sizeof(ikm), salt, sizeof(salt), info, sizeof(info), okm,
		    sizeof(okm)) != 0)
		die("isth_auth_hkdf");
	check("RFC 5869 A.1 OKM", okm, sizeof(okm), RFC5869_OKM);
	put("Primitives (checked by the same test against the standards' own values):\n\n");
	put("- HKDF-SHA256, RFC 5869 appendix A.1: IKM = 22 bytes 0x0b, salt = "
	    "000102..0c, info = f0f1..f9, L = 42:\n  OKM = `%s`\n",
		RFC5869_OKM);
	for (size_t v = 0; v < sizeof(cavp) / sizeof(cavp[0]); v++) {
		size_t alen = unhex(cavp[v].aad, aad, sizeof(aad));

		unhex(cavp[v].key, k, sizeof(k));
		unhex(cavp[v].iv, iv, sizeof(iv));
		for (int impl = ISTH_AUTH_OPENSSL; impl <= ISTH_AUTH_IPSEC_MB; impl++) {
			if (isth_auth_gmac_raw(impl, k, iv, aad, alen, tag) != 0)
				die("isth_auth_gmac_raw");
			check("NIST CAVP GCM", tag, sizeof(tag), cavp[v].tag);
		}
		put("- AES-256-GMAC, NIST SP 800-38D as GCM with an empty plaintext, "
		    "CAVP `gcmEncryptExtIV256.rsp`, PTlen = 0, AADlen = %zu, Count 0:\n"
		    "  key = `%s`, IV = `%s`, AAD = `%s`, tag = `%s`\n",
			8 * alen, cavp[v].key, cavp[v].iv, alen ? cavp[v].aad : "(empty)",
			cavp[v].tag);
	}
	put("\n");
}

/* ---- keys -------------------------------------------------------------- */

static void
master_of(unsigned int epoch, uint8_t m[ISTH_AUTH_KEY_SIZE])
{
	for (unsigned int i = 0; i < ISTH_AUTH_KEY_SIZE; i++)
		m[i] = (uint8_t)((epoch - 1) * 32 + i);
}

/*
 * K(e, dir, owner[, receiver]) by the formula of doc/protocol.md "Keys":
 * HKDF-SHA256(M_e, "isthmus/v2", "isthmus/v2 gmac" || job (u32 BE) || e
 * || dir || owner [|| receiver], 32). @recv < 0: no receiver byte.
 */
static void
derive(unsigned int epoch, unsigned int dir, unsigned int owner, int recv,
	uint8_t k[ISTH_AUTH_KEY_SIZE])
{
	uint8_t m[ISTH_AUTH_KEY_SIZE], info[15 + 8];
	size_t n = 15;

	master_of(epoch, m);
	memcpy(info, "isthmus/v2 gmac", 15);
	info[n++] = (uint8_t)(JOB >> 24);
	info[n++] = (uint8_t)(JOB >> 16);
	info[n++] = (uint8_t)(JOB >> 8);
	info[n++] = (uint8_t)JOB;
	info[n++] = (uint8_t)epoch;
	info[n++] = (uint8_t)dir;
	info[n++] = (uint8_t)owner;
	if (recv >= 0)
		info[n++] = (uint8_t)recv;
	if (isth_auth_hkdf(m, sizeof(m), (const uint8_t *)"isthmus/v2", 10, info, n, k,
		    ISTH_AUTH_KEY_SIZE) != 0)
		die("isth_auth_hkdf");
}

/* direction 4: the pairwise WAN key of (sending edge s, receiving edge t) */
static const char *const dir_name[] = {"", "UP", "DOWN", "WAN", "WAN_PAIR"};

/* One row per key shown: (epoch, dir, owner, receiver or -1). */
static const struct {
	unsigned int epoch, dir, owner;
	int recv;
} key_rows[] = {
	{1, ISTH_AUTH_UP, 0, -1},
	{1, ISTH_AUTH_UP, 2, -1},
	{1, ISTH_AUTH_DOWN, 0, -1},
	{1, ISTH_AUTH_DOWN, 2, -1},
	{1, ISTH_AUTH_WAN, 0, -1},
	{1, ISTH_AUTH_WAN, 1, -1},
	{1, ISTH_AUTH_WAN, 2, -1},
	{2, ISTH_AUTH_UP, 2, -1},
	{1, 4, 0, 1},
	{1, 4, 1, 0},
	{1, 4, 2, 63},
};

static void
keys(void)
{
	uint8_t k[ISTH_AUTH_KEY_SIZE], lib[ISTH_AUTH_KEY_SIZE];

	put("Key file of every vector below (masters are the bytes 00..1f and "
	    "20..3f; a real key comes from a CSPRNG):\n\n```\njob %u\n",
		JOB);
	for (unsigned int e = 1; e <= 2; e++) {
		master_of(e, k);
		put("epoch %u round %u key %s\n", e, e == 1 ? 0 : EPOCH2_ROUND, hex(k, sizeof(k)));
	}
	put("```\n\n| key | value |\n|---|---|\n");
	for (size_t i = 0; i < sizeof(key_rows) / sizeof(key_rows[0]); i++) {
		derive(key_rows[i].epoch, key_rows[i].dir, key_rows[i].owner, key_rows[i].recv, k);
		/* the formula above is lib/auth's derivation */
		if (key_rows[i].dir <= ISTH_AUTH_WAN) {
			uint8_t m[ISTH_AUTH_KEY_SIZE];

			master_of(key_rows[i].epoch, m);
			if (isth_auth_derive(m, JOB, (uint8_t)key_rows[i].epoch, key_rows[i].dir,
				    key_rows[i].owner, lib) != 0 ||
				memcmp(k, lib, sizeof(k)) != 0)
				die("isth_auth_derive differs from the documented formula");
		}
		if (key_rows[i].recv >= 0)
			put("| K(%u, %s, %u, %d) | `%s` |\n", key_rows[i].epoch,
				dir_name[key_rows[i].dir], key_rows[i].owner, key_rows[i].recv,
				hex(k, sizeof(k)));
		else
			put("| K(%u, %s, %u) | `%s` |\n", key_rows[i].epoch,
				dir_name[key_rows[i].dir], key_rows[i].owner, hex(k, sizeof(k)));
	}
	put("\n");
}

/* ---- messages ---------------------------------------------------------- */

/* A message: its header as given to lib/wire, its body, and the key
 * (dir, owner) isth_auth_seal() seals it with. */
struct msg_row {
	const char *title;
	enum isth_auth_dir dir;
	unsigned int owner;
	struct isth_wire_hdr h;
	const char *body; /* hex, spaces ignored */
};

#define HDR(ty, fl, st, dt, rnd, chk, snd, cnt, sq, bm) \
	{ \
		.version = ISTH_WIRE_VERSION_AUTH, .type = (ty), .flags = (fl), .stream = (st), \
		.dtype = (dt), .job = JOB, .round = (rnd), .chunk = (chk), .sender = (snd), \
		.count = (cnt), .seq = (sq), .bitmap = (bm) \
	}

/* a stream's first seq: CLOCK_REALTIME ns at its start (2025-12-06) */
#define SEQ0 UINT64_C(1765000000000000000)

static const struct msg_row msg_rows[] = {
	{"DATA, island 2 to its edge (UP, owner 2): round 7, chunk 3, int32 1 2 3 4, seq 1000",
		ISTH_AUTH_UP, 2,
		HDR(ISTH_WIRE_DATA, 0, 0, ISTH_WIRE_DTYPE_INT32, 7, 3, 2, 4, 1000, 4),
		"01000000 02000000 03000000 04000000"},
	{"The same DATA retransmitted by the island: RESENT, so another IV and tag", ISTH_AUTH_UP,
		2,
		HDR(ISTH_WIRE_DATA, ISTH_WIRE_F_RESENT, 0, ISTH_WIRE_DTYPE_INT32, 7, 3, 2, 4, 1000,
			4),
		"01000000 02000000 03000000 04000000"},
	{"The first DATA under island 2's one-tag WAN key (WAN, owner 2): the same bytes and "
	 "IV, another key. Direction 3 is derived for tools; no edge sends it since WAN frames "
	 "carry tag lists (vector 11)",
		ISTH_AUTH_WAN, 2,
		HDR(ISTH_WIRE_DATA, 0, 0, ISTH_WIRE_DTYPE_INT32, 7, 3, 2, 4, 1000, 4),
		"01000000 02000000 03000000 04000000"},
	{"AGG to island 2 (DOWN, owner 2): round 7, chunk 3, fp32 1.5 -2, islands 0 and 2 "
	 "summed, PARTIAL, AGG stream 1",
		ISTH_AUTH_DOWN, 2,
		HDR(ISTH_WIRE_AGG, ISTH_WIRE_F_PARTIAL, 1, ISTH_WIRE_DTYPE_FP32, 7, 3, 2, 2,
			SEQ0 + 17, 5),
		"0000c03f 000000c0"},
	{"NACK by seq, island 2 to its edge (UP, owner 2): AGG stream 1, seqs "
	 "SEQ0+3..SEQ0+5 and SEQ0+9; round = the newest round seen on that stream, chunk 0",
		ISTH_AUTH_UP, 2,
		HDR(ISTH_WIRE_NACK, 0, 1, ISTH_WIRE_DTYPE_NONE, 7, 0, 2, 2, SEQ0 + 4, 0),
		"187e8a260c908003 187e8a260c908005 187e8a260c908009 187e8a260c908009"},
	{"GONE, edge to island 2 (DOWN, owner 2): the answer to that NACK for SEQ0+9, AGG "
	 "stream 1, round and bitmap copied from the NACK",
		ISTH_AUTH_DOWN, 2,
		HDR(ISTH_WIRE_GONE, 0, 1, ISTH_WIRE_DTYPE_NONE, 7, 0, 2, 1, SEQ0 + 2, 0),
		"187e8a260c908009 187e8a260c908009"},
	{"ROUND, edge to island 2 (DOWN, owner 2): round 8, two AGG streams (field 1), "
	 "clique 0,1,2, expecting 0 and 2, 64 chunks of 354",
		ISTH_AUTH_DOWN, 2,
		HDR(ISTH_WIRE_ROUND, 0, 1, ISTH_WIRE_DTYPE_NONE, 8, 0, 2, 0, SEQ0 + 8, 5),
		"187e8a27e966d000 187e8a2807343500 000000001dcd6500 0000000000000007 00000040 "
		"00000162"},
	{"NACK by chunk, edge of island 1 to edge of island 2, under the one-tag WAN key (WAN, "
	 "owner 1): round 7, chunks 3..5 of island 2's DATA (on the wire it carries a tag list "
	 "of one, edge 2's, as vector 11 shows for DATA)",
		ISTH_AUTH_WAN, 1,
		HDR(ISTH_WIRE_NACK, ISTH_WIRE_F_CHUNKS, 0, ISTH_WIRE_DTYPE_NONE, 7, 0, 1, 1,
			SEQ0 + 30, 4),
		"0000000000000003 0000000000000005"},
	{"Rotation: the first DATA in round 99, the last round of epoch 1", ISTH_AUTH_UP, 2,
		HDR(ISTH_WIRE_DATA, 0, 0, ISTH_WIRE_DTYPE_INT32, EPOCH2_ROUND - 1, 3, 2, 4, 2000,
			4),
		"01000000 02000000 03000000 04000000"},
	{"Rotation: the same DATA in round 100, the first of epoch 2 (epoch byte 2, "
	 "epoch 2's key)",
		ISTH_AUTH_UP, 2,
		HDR(ISTH_WIRE_DATA, 0, 0, ISTH_WIRE_DTYPE_INT32, EPOCH2_ROUND, 3, 2, 4, 2001, 4),
		"01000000 02000000 03000000 04000000"},
};

/* A receiver's verdict on the last message with its epoch byte changed
 * to @epoch (tag unchanged). */
static void
refused(struct isth_auth_engine *eng, const struct msg_row *m, uint8_t *msg, size_t n,
	uint8_t epoch)
{
	uint8_t e = msg[ISTH_WIRE_OFF_EPOCH];

	msg[ISTH_WIRE_OFF_EPOCH] = epoch;
	put("The same message with epoch byte %u instead of %u is refused as `%s` (epoch "
	    "%u is not the epoch of round %u).\n\n",
		epoch, e, isth_auth_status_name(isth_auth_verify(eng, m->dir, m->owner, msg, n)),
		epoch, m->h.round);
	msg[ISTH_WIRE_OFF_EPOCH] = e;
}

static void
messages(struct isth_auth *a, struct isth_auth_engine *eng, struct isth_auth_engine *imb)
{
	for (size_t i = 0; i < sizeof(msg_rows) / sizeof(msg_rows[0]); i++) {
		const struct msg_row *m = &msg_rows[i];
		uint8_t body[256], msg[512], iv[ISTH_AUTH_IV_SIZE], k[ISTH_AUTH_KEY_SIZE];
		size_t blen = unhex(m->body, body, sizeof(body));
		int e = isth_auth_epoch_of(a, m->h.round), n;

		n = isth_wire_build_msg(msg, sizeof(msg), &m->h, body, blen, NULL);
		if (n < 0 || e < 0)
			die("isth_wire_build_msg");
		n = isth_auth_seal(eng, m->dir, m->owner, msg, (size_t)n, sizeof(msg));
		/* both of lib/auth's implementations agree */
		if (n < 0 ||
			isth_auth_verify(eng, m->dir, m->owner, msg, (size_t)n) != ISTH_AUTH_OK ||
			isth_auth_verify(imb, m->dir, m->owner, msg, (size_t)n) != ISTH_AUTH_OK)
			die("isth_auth_seal");
		derive((unsigned int)e, m->dir, m->owner, -1, k);
		isth_auth_iv(msg, iv);
		put("%zu. %s.\n\n```\n", i + 1, m->title);
		put("key   %s  K(%d, %s, %u)\n", hex(k, sizeof(k)), e, dir_name[m->dir], m->owner);
		put_bytes("msg", msg, (size_t)n - ISTH_AUTH_TAG_SIZE);
		put("iv     %s\n", hex(iv, sizeof(iv)));
		put("tag    %s\n```\n\n", hex(msg + n - ISTH_AUTH_TAG_SIZE, ISTH_AUTH_TAG_SIZE));
		if (m->h.round == EPOCH2_ROUND)
			refused(eng, m, msg, (size_t)n, 1);
	}
}

/*
 * The WAN tag list: the first DATA resealed by island 2's edge for edges 0
 * and 1, each tag computed here with the documented key formula and the
 * raw GMAC, and compared with lib/auth's isth_auth_seal_list().
 */
static void
tag_list(struct isth_auth_engine *eng, struct isth_auth_engine *imb, size_t nr)
{
	const struct msg_row *m = &msg_rows[0];
	uint8_t body[64], msg[256], iv[ISTH_AUTH_IV_SIZE], k[ISTH_AUTH_KEY_SIZE], t[16];
	size_t blen = unhex(m->body, body, sizeof(body));
	const uint64_t rcv = 0x3;
	int n = isth_wire_build_msg(msg, sizeof(msg), &m->h, body, blen, NULL);
	size_t hb;

	if (n < 0)
		die("isth_wire_build_msg");
	hb = (size_t)n;
	n = isth_auth_seal_list(eng, 2, rcv, msg, hb, sizeof(msg));
	if (n != (int)(hb + isth_auth_list_size(2)) ||
		isth_auth_verify_list(eng, 2, 0, msg, (size_t)n) != ISTH_AUTH_OK ||
		isth_auth_verify_list(imb, 2, 1, msg, (size_t)n) != ISTH_AUTH_OK)
		die("isth_auth_seal_list");
	isth_auth_iv(msg, iv);
	put("%zu. The first DATA resealed by island 2's edge for edges 0 and 1 with a WAN tag "
	    "list (WAN_PAIR, sender 2): the same bytes and IV as vectors 1 and 3 except "
	    "`trailer_len` (0x28 = 8 + 2 x 16); the trailer is the receivers (u64 BE) and, "
	    "per receiver in ascending order, the tag under K(1, WAN_PAIR, 2, t) of `msg`.\n\n"
	    "```\n",
		nr);
	put_bytes("msg", msg, hb);
	put("iv     %s\n", hex(iv, sizeof(iv)));
	for (unsigned int r = 0; r < 2; r++) {
		derive(1, ISTH_AUTH_WAN_PAIR, 2, (int)r, k);
		put("key %u  %s  K(1, WAN_PAIR, 2, %u)\n", r, hex(k, sizeof(k)), r);
	}
	put("list   %s\n", hex(msg + hb, ISTH_AUTH_LIST_HDR));
	for (unsigned int r = 0; r < 2; r++) {
		const uint8_t *tag = msg + hb + ISTH_AUTH_LIST_HDR + r * ISTH_AUTH_TAG_SIZE;

		/* the documented formula and the raw primitive agree */
		derive(1, ISTH_AUTH_WAN_PAIR, 2, (int)r, k);
		if (isth_auth_gmac_raw(ISTH_AUTH_OPENSSL, k, iv, msg, hb, t) != 0 ||
			memcmp(t, tag, sizeof(t)) != 0)
			die("tag list differs from the documented formula");
		put("tag %u  %s\n", r, hex(tag, ISTH_AUTH_TAG_SIZE));
	}
	put("```\n\nEdge 0 verifies only `tag 0` (its rank among the receivers' bits), edge 1 "
	    "only `tag 1`; any other edge finds no bit of its own and refuses the frame "
	    "(`auth_key`).\n\n");
}

/* ---- the replay window ------------------------------------------------- */

/*
 * One arrival at the window: the two-step window (check after the tag,
 * commit once every other check passed) where lib/auth has it, else its
 * one-step accept; the arrivals below are chosen so that both give the
 * same verdicts (no seq older than the window carries a newer round).
 */
static enum isth_auth_status
replay_arrive(struct isth_auth_replay *w, uint64_t seq, uint32_t round)
{
#ifdef ISTH_AUTH_SEQ_AHEAD_NS_DEFAULT
	enum isth_auth_status s = isth_auth_replay_check(w, seq, round);

	return s == ISTH_AUTH_OK ? isth_auth_replay_commit(w, seq, round) : s;
#else
	(void)round;
	return isth_auth_replay_accept(w, seq);
#endif
}

static void
replay(void)
{
	static const struct {
		uint64_t seq;
		uint32_t round;
	} arrivals[] = {{1000, 7}, {1002, 7}, {1001, 7}, {1002, 7}, {1063, 8}, {1064, 8}, {1001, 7},
		{1000, 7}, {1999, 9}, {1936, 9}, {1935, 8}, {1999, 9}};
	uint64_t words[1];
	struct isth_auth_replay w;

	if (isth_auth_replay_init(&w, words, 64) != 0)
		die("isth_auth_replay_init");
	put("Replay window, W = 64, of one (epoch, direction, sender, type, AGG stream): "
	    "the seqs and rounds of messages whose tags verified and that every other "
	    "check accepted, in arrival order, and the window's verdict (`lib/auth`):\n\n"
	    "| seq | round | verdict | highest seq accepted after |\n|---|---|---|---|\n");
	for (size_t i = 0; i < sizeof(arrivals) / sizeof(arrivals[0]); i++) {
		enum isth_auth_status s = replay_arrive(&w, arrivals[i].seq, arrivals[i].round);

		put("| %llu | %u | %s | %llu |\n", (unsigned long long)arrivals[i].seq,
			arrivals[i].round,
			s == ISTH_AUTH_OK ? "accepted" : isth_auth_status_name(s),
			(unsigned long long)w.top);
	}
	put("\n");
}

/* ---- output and the document ------------------------------------------- */

static void
generate(void)
{
	char path[] = "/tmp/auth_vectors.XXXXXX";
	struct isth_auth_conf conf = {.key_file = path, .job = JOB, .n_islands = 8};
	struct isth_auth *a = NULL;
	struct isth_auth_engine *eng = NULL, *imb = NULL;
	uint8_t m[ISTH_AUTH_KEY_SIZE];
	char err[256];
	FILE *f;
	int fd = mkstemp(path);

	if (fd < 0 || (f = fdopen(fd, "w")) == NULL)
		die(strerror(errno));
	fprintf(f, "job %u\n", JOB);
	for (unsigned int e = 1; e <= 2; e++) {
		master_of(e, m);
		fprintf(f, "epoch %u round %u key %s\n", e, e == 1 ? 0 : EPOCH2_ROUND,
			hex(m, sizeof(m)));
	}
	fclose(f);
	if (isth_auth_create(&conf, &a, err, sizeof(err)) != 0)
		die(err);
	unlink(path);
	if (isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &eng) != 0 ||
		isth_auth_engine_create(a, ISTH_AUTH_IPSEC_MB, &imb) != 0)
		die("isth_auth_engine_create");
	standards();
	keys();
	messages(a, eng, imb);
	tag_list(eng, imb, sizeof(msg_rows) / sizeof(msg_rows[0]) + 1);
	replay();
	isth_auth_engine_free(eng);
	isth_auth_engine_free(imb);
	isth_auth_free(a);
}

/* DOC's text; *b and *e: the block between the marks (after BEGIN's line,
 * at END's). */
static char *
read_doc(const char *doc, char **b, char **e)
{
	static char text[1 << 20];
	FILE *f = fopen(doc, "r");
	size_t n;

	if (f == NULL)
		die(strerror(errno));
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	*b = strstr(text, BEGIN);
	*e = *b ? strstr(*b, END) : NULL;
	if (*b == NULL || *e == NULL) {
		fprintf(stderr, "auth_vectors: %s: no vectors block (" BEGIN " ... " END ")\n",
			doc);
		exit(1);
	}
	*b += strlen(BEGIN);
	return text;
}

int
main(int argc, char **argv)
{
	char *b, *e, *text;

	generate();
	if (argc == 1) {
		fwrite(out, 1, out_len, stdout);
		return 0;
	}
	if (argc != 3 || (strcmp(argv[1], "--check") && strcmp(argv[1], "--update"))) {
		fprintf(stderr, "usage: %s [--check DOC | --update DOC]\n", argv[0]);
		return 2;
	}
	text = read_doc(argv[2], &b, &e);
	if (strcmp(argv[1], "--check") == 0) {
		size_t have = (size_t)(e - b), i;

		for (i = 0; i < have && i < out_len && b[i] == out[i]; i++)
			;
		if (i == have && i == out_len) {
			printf("auth_vectors: %s holds the %zu bytes of vectors lib/auth "
			       "computes\n",
				argv[2], out_len);
			return 0;
		}
		fprintf(stderr,
			"auth_vectors: %s differs from lib/auth's vectors at byte %zu of the "
			"block:\n"
			"  doc:     %.60s\n  lib/auth: %.60s\n(regenerate: auth_vectors --update "
			"%s)\n",
			argv[2], i, b + i, out + i, argv[2]);
		return 1;
	}
	{
		FILE *f = fopen(argv[2], "w");

		if (f == NULL || fwrite(text, 1, (size_t)(b - text), f) != (size_t)(b - text) ||
			fwrite(out, 1, out_len, f) != out_len || fputs(e, f) < 0 || fclose(f) != 0)
			die(strerror(errno));
	}
	return 0;
}
