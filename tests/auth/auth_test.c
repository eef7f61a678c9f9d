/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/auth: AES-256-GMAC through OpenSSL and intel-ipsec-mb against
 * published vectors and against each other, HKDF and the direction keys
 * against an independent computation (tests/auth/vectors.py, Python
 * `cryptography`), sealing and verifying v2 messages, epochs, every
 * malformed key file, and a replay-window table.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "isth_auth.h"

static const enum isth_auth_impl impls[] = {ISTH_AUTH_OPENSSL, ISTH_AUTH_IPSEC_MB};

/* Hex string to bytes; returns the byte count. */
static size_t
unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = strlen(s) / 2;

	cr_assert_leq(n, cap);
	for (size_t i = 0; i < n; i++) {
		unsigned int v;

		cr_assert_eq(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

static void
assert_hex(const uint8_t *got, size_t n, const char *want, const char *what)
{
	uint8_t w[128];

	cr_assert_eq(unhex(want, w, sizeof(w)), n, "%s: length", what);
	cr_assert(memcmp(got, w, n) == 0, "%s differs", what);
}

/* Deterministic PRNG (xorshift64*), so a failing case can be replayed. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1du;
}

/* ---- key files -------------------------------------------------------- */

#define MASTER_HEX "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

/* Write @text into a fresh file of mode @mode; returns its path (static). */
static const char *
keyfile(const char *text, mode_t mode)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/isth-auth-test-%d-XXXXXX", getpid());
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

static struct isth_auth *
load(const char *text, uint32_t job, uint32_t n)
{
	const char *p = keyfile(text, 0600);
	struct isth_auth_conf c = {.key_file = p, .job = job, .n_islands = n};
	struct isth_auth *a = NULL;
	char err[256] = "";
	int r = isth_auth_create(&c, &a, err, sizeof(err));

	unlink(p);
	cr_assert_eq(r, 0, "create: %d %s", r, err);
	return a;
}

/* ---- published vectors -------------------------------------------------- */

/*
 * NIST CAVP GCM test vectors, gcmEncryptExtIV256.rsp (GCMVS,
 * https://csrc.nist.gov/projects/cryptographic-algorithm-validation-program,
 * "GCM Test Vectors"), groups [Keylen = 256] [IVlen = 96] [PTlen = 0]
 * [Taglen = 128] with [AADlen = 0] and [AADlen = 128], Count 0 and 1:
 * AES-256-GCM with empty plaintext is AES-256-GMAC over the AAD.
 */
static const struct {
	const char *key, *iv, *aad, *tag;
} nist[] = {
	{"b52c505a37d78eda5dd34f20c22540ea1b58963cf8e5bf8ffa85f9f2492505b4",
		"516c33929df5a3284ff463d7", "", "bdc1ac884d332457a1d2664f168c76f0"},
	{"5fe0861cdc2690ce69b3658c7f26f8458eec1c9243c5ba0845305d897e96ca0f",
		"770ac1a5a3d476d5d96944a1", "", "196d691e1047093ca4b3d2ef4baba216"},
	{"78dc4e0aaf52d935c3c01eea57428f00ca1fd475f5da86a49c8dd73d68c8e223",
		"d79cf22d504cc793c3fb6c8a", "b96baa8c1c75a671bfb2d08d06be5f36",
		"3e5d486aa2e30b22e040b85723a06e76"},
	{"4457ff33683cca6ca493878bdc00373893a9763412eef8cddb54f91318e0da88",
		"699d1f29d7b8c55300bb1fd2", "6749daeea367d0e9809e2dc2f309e6e3",
		"d60c74d2517fde4a74e0cd4709ed43a9"},
};

Test(auth, nist_gcm_vectors_both_impls)
{
	for (size_t v = 0; v < sizeof(nist) / sizeof(nist[0]); v++)
		for (size_t i = 0; i < 2; i++) {
			uint8_t key[32], iv[12], aad[64], tag[16];
			size_t alen;

			unhex(nist[v].key, key, sizeof(key));
			unhex(nist[v].iv, iv, sizeof(iv));
			alen = unhex(nist[v].aad, aad, sizeof(aad));
			cr_assert_eq(isth_auth_gmac_raw(impls[i], key, iv, aad, alen, tag), 0);
			assert_hex(tag, 16, nist[v].tag, isth_auth_impl_name(impls[i]));
		}
}

/* RFC 5869, appendix A.1 (test case 1, SHA-256). */
Test(auth, hkdf_rfc5869_case1)
{
	uint8_t ikm[22], salt[13], info[10], okm[42];

	memset(ikm, 0x0b, sizeof(ikm));
	for (int i = 0; i < 13; i++)
		salt[i] = (uint8_t)i;
	for (int i = 0; i < 10; i++)
		info[i] = (uint8_t)(0xf0 + i);
	cr_assert_eq(isth_auth_hkdf(ikm, sizeof(ikm), salt, sizeof(salt), info, sizeof(info), okm,
			     sizeof(okm)),
		0);
	assert_hex(okm, 42,
		"3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db0"
		"2d56ecc4c5bf34007208d5b887185865",
		"okm");
}

/* Direction keys of job 42, epoch 1, master 00..1f (tests/auth/vectors.py). */
Test(auth, derive_matches_independent_hkdf)
{
	static const struct {
		enum isth_auth_dir d;
		unsigned int o;
		const char *k;
	} v[] = {
		{ISTH_AUTH_UP, 0,
			"ef7fdb99caf7e9339705277b1f1f97d9bb7c1fd7d9ebb2a7512787c70244e1c7"},
		{ISTH_AUTH_UP, 2,
			"4d30c32a9e7a823c315e30255dfbc809b8cff55fa269af8ae8f557dcabad6ae2"},
		{ISTH_AUTH_DOWN, 0,
			"54478d82a4a1438783c942673e1d98ba193f3431e0cab58457a706917766d940"},
		{ISTH_AUTH_DOWN, 2,
			"1e5c9af2c9915e3de49a512cf3b3cff7aa0b9252f1b1c1e7550c3234f6574e9f"},
		{ISTH_AUTH_WAN, 0,
			"2bfbbf81d00c69da7fd4a8ccce8c2309a68901a025d32462585d306fe2557178"},
		{ISTH_AUTH_WAN, 2,
			"1a7af300b170bbe093f64b19f6bc6df421ad03ea1ebc68ac5169cb1e1ef07c2f"},
	};
	uint8_t master[32], k[32];

	unhex(MASTER_HEX, master, sizeof(master));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cr_assert_eq(isth_auth_derive(master, 42, 1, v[i].d, v[i].o, k), 0);
		assert_hex(k, 32, v[i].k, "direction key");
	}
	cr_assert_eq(isth_auth_derive(master, 42, 1, 0, 0, k), -EINVAL);
	cr_assert_eq(isth_auth_derive(master, 42, 1, 4, 0, k), -EINVAL);
	cr_assert_eq(isth_auth_derive(master, 42, 1, ISTH_AUTH_UP, 64, k), -EINVAL);
}

/* Pairwise WAN keys of job 42, epoch 1, master 00..1f: tests/auth/vectors.py
 * (Python `cryptography`); (0, 1) also from `openssl kdf ... HKDF`. */
Test(auth, derive_pair_matches_independent_hkdf)
{
	static const struct {
		unsigned int s, t;
		const char *k;
	} v[] = {
		{0, 1, "f019d569f7aa7cfdbcfa0c466de2679d47608374af5f438f6ccdb60492024b23"},
		{1, 0, "ce622a13bcbe9773141c3713062290d9299e0bbeea59da8360aa440c11143ef9"},
		{2, 63, "8a6078fd2501b3ae940d95581f3959b3f2171c387804b5f420d0ac2ec22b37e7"},
	};
	uint8_t master[32], k[32], w[32];

	unhex(MASTER_HEX, master, sizeof(master));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cr_assert_eq(isth_auth_derive_pair(master, 42, 1, v[i].s, v[i].t, k), 0);
		assert_hex(k, 32, v[i].k, "pairwise WAN key");
	}
	/* not the per-sender WAN key of either end */
	cr_assert_eq(isth_auth_derive(master, 42, 1, ISTH_AUTH_WAN, 0, w), 0);
	cr_assert_eq(isth_auth_derive_pair(master, 42, 1, 0, 1, k), 0);
	cr_assert(memcmp(k, w, 32) != 0);
	cr_assert_eq(isth_auth_derive_pair(master, 42, 1, 3, 3, k), -EINVAL);
	cr_assert_eq(isth_auth_derive_pair(master, 42, 1, 64, 0, k), -EINVAL);
	cr_assert_eq(isth_auth_derive_pair(master, 42, 1, 0, 64, k), -EINVAL);
}

/* ---- sealing and verifying ----------------------------------------------- */

static const char *const KF_ONE = "job 42\nepoch 1 round 0 key " MASTER_HEX "\n";

/* The DATA message of tests/auth/vectors.py, unsealed: version 1, no AUTH,
 * trailer_len 0, epoch byte 0 (seal writes them). */
static size_t
data_msg(uint8_t *buf, uint16_t flags)
{
	static const uint8_t hdr[40] = {
		0x49,
		0x53,
		0x01,
		0x01,
		0x00,
		0x00,
		0x03,
		0x00,
		0x00,
		0x00,
		0x00,
		0x2a,
		0x00,
		0x00,
		0x00,
		0x07,
		0x00,
		0x00,
		0x00,
		0x03,
		0x02,
		0x00,
		0x00,
		0x04,
		0x00,
		0x00,
		0x00,
		0x00,
		0x00,
		0x00,
		0x03,
		0xe8,
		0x00,
		0x00,
		0x00,
		0x00,
		0x00,
		0x00,
		0x00,
		0x04,
	};
	static const uint8_t body[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0};

	memcpy(buf, hdr, 40);
	buf[4] = (uint8_t)(flags >> 8);
	buf[5] = (uint8_t)flags;
	memcpy(buf + 40, body, 16);
	return 56;
}

Test(auth, seal_matches_independent_vector)
{
	struct isth_auth *a = load(KF_ONE, 42, 4);

	for (size_t i = 0; i < 2; i++) {
		struct isth_auth_engine *e;
		uint8_t m[128], iv[12];
		size_t n = data_msg(m, 0);
		int r;

		cr_assert_eq(isth_auth_engine_create(a, impls[i], &e), 0);
		r = isth_auth_seal(e, ISTH_AUTH_UP, 2, m, n, sizeof(m));
		cr_assert_eq(r, 72, "%s: seal %d", isth_auth_impl_name(impls[i]), r);
		assert_hex(m, 56,
			"49530201001003100000002a0000000700000003020100040000"
			"0000000003e8000000000000000401000000020000000300000004000000",
			"sealed header+body");
		isth_auth_iv(m, iv);
		assert_hex(iv, 12, "0102001000000000000003e8", "iv");
		assert_hex(m + 56, 16, "22f62b30ab86b39abca42c4fc772d14a", "tag");
		cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_UP, 2, m, 72), ISTH_AUTH_OK);

		/* The retransmission (RESENT) has its own IV and tag. */
		n = data_msg(m, 0x0002);
		cr_assert_eq(isth_auth_seal(e, ISTH_AUTH_UP, 2, m, n, sizeof(m)), 72);
		assert_hex(m + 56, 16, "531e5f744fca2c2cb915c4e601930e1d", "resent tag");
		isth_auth_engine_free(e);
	}
	isth_auth_free(a);
}

Test(auth, seal_refuses_bad_input)
{
	struct isth_auth *a = load("job 42\nepoch 1 round 5 key " MASTER_HEX "\n", 42, 4);
	struct isth_auth_engine *e;
	uint8_t m[128];
	size_t n;

	cr_assert_eq(isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &e), 0);
	n = data_msg(m, 0);
	/* round 7 >= 5: fine; then no room for the tag */
	cr_assert_eq(isth_auth_seal(e, ISTH_AUTH_UP, 2, m, n, n + 15), -ENOSPC);
	cr_assert_eq(isth_auth_seal(e, ISTH_AUTH_UP, 4, m, n, sizeof(m)), -EINVAL);
	cr_assert_eq(isth_auth_seal(e, 0, 2, m, n, sizeof(m)), -EINVAL);
	cr_assert_eq(isth_auth_seal(e, ISTH_AUTH_UP, 2, m, 39, sizeof(m)), -EINVAL);
	m[15] = 4; /* round 4: before the only epoch starts */
	cr_assert_eq(isth_auth_seal(e, ISTH_AUTH_UP, 2, m, n, sizeof(m)), -ENOKEY);
	m[15] = 7;
	m[0] = 0; /* not an isthmus header */
	cr_assert_eq(isth_auth_seal(e, ISTH_AUTH_UP, 2, m, n, sizeof(m)), -EINVAL);
	isth_auth_engine_free(e);
	isth_auth_free(a);
}

/* ---- site files ------------------------------------------------------------ */

/* Direction keys of job 42, epoch 1, master 00..1f, from tests/auth/vectors.py
 * (independent HKDF): the site files below are written from these, not
 * from lib/auth's derivation. */
#define K_UP2 "4d30c32a9e7a823c315e30255dfbc809b8cff55fa269af8ae8f557dcabad6ae2"
#define K_DOWN2 "1e5c9af2c9915e3de49a512cf3b3cff7aa0b9252f1b1c1e7550c3234f6574e9f"
#define K_WAN0 "2bfbbf81d00c69da7fd4a8ccce8c2309a68901a025d32462585d306fe2557178"
#define K_WAN2 "1a7af300b170bbe093f64b19f6bc6df421ad03ea1ebc68ac5169cb1e1ef07c2f"

static const char *const KF_ISLAND2 = "job 42\nsite island 2\nepoch 1 round 0\n"
				      "key up " K_UP2 "\nkey down " K_DOWN2 "\n";
static const char *const KF_EDGE2 =
	"job 42\nsite edge 2\nepoch 1 round 0\nkey up " K_UP2 "\nkey down " K_DOWN2
	"\nkey wan 0 " K_WAN0 "\nkey wan 2 " K_WAN2 "\n";

/* A site's handle seals its own keys exactly as the job file's handle (the
 * published vector), and refuses every other site's key, sealing and
 * verifying, with both engines. */
Test(auth, site_file_holds_only_its_keys)
{
	struct isth_auth *job = load(KF_ONE, 42, 4), *isl = load(KF_ISLAND2, 42, 4);
	struct isth_auth *edge = load(KF_EDGE2, 42, 4);
	unsigned int id = 99;
	uint8_t k[32];
	char err[256] = "";

	cr_assert_eq(isth_auth_site(job, &id), ISTH_AUTH_SITE_JOB);
	cr_assert_eq(isth_auth_site(isl, &id), ISTH_AUTH_SITE_ISLAND);
	cr_assert_eq(id, 2);
	cr_assert_eq(isth_auth_site(edge, &id), ISTH_AUTH_SITE_EDGE);
	cr_assert(isth_auth_has_key(isl, ISTH_AUTH_UP, 2) &&
		isth_auth_has_key(isl, ISTH_AUTH_DOWN, 2));
	cr_assert(!isth_auth_has_key(isl, ISTH_AUTH_UP, 1) &&
		!isth_auth_has_key(isl, ISTH_AUTH_WAN, 2));
	cr_assert(isth_auth_has_key(edge, ISTH_AUTH_WAN, 0) &&
		!isth_auth_has_key(edge, ISTH_AUTH_WAN, 1));
	cr_assert(isth_auth_has_key(job, ISTH_AUTH_WAN, 3));
	cr_assert_eq(isth_auth_epoch_key(isl, 0, ISTH_AUTH_UP, 0, k), -ENOKEY);
	cr_assert_eq(isth_auth_epoch_key(edge, 0, ISTH_AUTH_WAN, 2, k), 0);
	assert_hex(k, 32, K_WAN2, "edge's own WAN key");
	cr_assert_eq(isth_auth_check_site(isl, ISTH_AUTH_SITE_ISLAND, 2, "f", err, sizeof(err)), 0);
	cr_assert_eq(isth_auth_check_site(job, ISTH_AUTH_SITE_EDGE, 1, "f", err, sizeof(err)), 0);
	cr_assert_eq(isth_auth_check_site(isl, ISTH_AUTH_SITE_ISLAND, 1, "f", err, sizeof(err)),
		-EINVAL);
	cr_assert_str_eq(err,
		"f: the key file of island 2, not of island 1 (isthmus-keys split "
		"writes one file per site)");
	cr_assert_eq(isth_auth_check_site(edge, ISTH_AUTH_SITE_ISLAND, 2, "f", err, sizeof(err)),
		-EINVAL);
	/* the edge's file holds no pairwise WAN key: its peers' tag lists
	 * would all be refused */
	cr_assert_eq(
		isth_auth_check_site(edge, ISTH_AUTH_SITE_EDGE, 2, "f", err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err,
		"f: holds no 'key pair 2 0' (the job has 4 islands; was it split for "
		"fewer, or by an isthmus-keys without pairwise WAN keys?)");
	for (size_t i = 0; i < 2; i++) {
		struct isth_auth_engine *ej, *ei, *ee;
		uint8_t m[128], forged[128];
		size_t n = data_msg(m, 0);

		cr_assert_eq(isth_auth_engine_create(job, impls[i], &ej), 0);
		cr_assert_eq(isth_auth_engine_create(isl, impls[i], &ei), 0);
		cr_assert_eq(isth_auth_engine_create(edge, impls[i], &ee), 0);
		cr_assert_eq(isth_auth_seal(ei, ISTH_AUTH_UP, 2, m, n, sizeof(m)), 72);
		assert_hex(m + 56, 16, "22f62b30ab86b39abca42c4fc772d14a", "site-sealed tag");
		cr_assert_eq(isth_auth_verify(ee, ISTH_AUTH_UP, 2, m, 72), ISTH_AUTH_OK);
		/* another site's keys: refused before any byte is written */
		n = data_msg(forged, 0);
		for (unsigned int d = ISTH_AUTH_UP; d <= ISTH_AUTH_WAN; d++)
			for (unsigned int o = 0; o < 4; o++)
				if (!(o == 2 && d != ISTH_AUTH_WAN))
					cr_assert_eq(
						isth_auth_seal(ei, d, o, forged, n, sizeof(forged)),
						-EPERM, "island 2 sealed dir %u owner %u", d, o);
		cr_assert_eq(forged[2], 1, "a refused seal wrote the header");
		cr_assert_eq(
			isth_auth_seal(ee, ISTH_AUTH_WAN, 1, forged, n, sizeof(forged)), -EPERM);
		/* a genuine tag under a key this site lacks: auth_key, not a verdict */
		cr_assert_eq(isth_auth_seal(ej, ISTH_AUTH_UP, 1, forged, n, sizeof(forged)), 72);
		cr_assert_eq(isth_auth_verify(ee, ISTH_AUTH_UP, 1, forged, 72), ISTH_AUTH_E_KEY);
		cr_assert_eq(isth_auth_verify(ei, ISTH_AUTH_UP, 1, forged, 72), ISTH_AUTH_E_KEY);
		cr_assert_eq(isth_auth_verify(ej, ISTH_AUTH_UP, 1, forged, 72), ISTH_AUTH_OK);
		/* the island verifies its DOWN; the edge a peer's WAN it holds */
		n = data_msg(m, 0);
		cr_assert_eq(isth_auth_seal(ej, ISTH_AUTH_DOWN, 2, m, n, sizeof(m)), 72);
		cr_assert_eq(isth_auth_verify(ei, ISTH_AUTH_DOWN, 2, m, 72), ISTH_AUTH_OK);
		n = data_msg(m, 0);
		cr_assert_eq(isth_auth_seal(ej, ISTH_AUTH_WAN, 0, m, n, sizeof(m)), 72);
		cr_assert_eq(isth_auth_verify(ee, ISTH_AUTH_WAN, 0, m, 72), ISTH_AUTH_OK);
		cr_assert_eq(isth_auth_verify(ei, ISTH_AUTH_WAN, 0, m, 72), ISTH_AUTH_E_KEY);
		isth_auth_engine_free(ej);
		isth_auth_engine_free(ei);
		isth_auth_engine_free(ee);
	}
	isth_auth_free(job);
	isth_auth_free(isl);
	isth_auth_free(edge);
}

/* ---- WAN tag lists -------------------------------------------------------- */

/* Pairwise keys of job 42, epoch 1, master 00..1f from tests/auth/vectors.py
 * (independent HKDF; doc/protocol.md's key table). */
#define K_PAIR01 "f019d569f7aa7cfdbcfa0c466de2679d47608374af5f438f6ccdb60492024b23"
#define K_PAIR10 "ce622a13bcbe9773141c3713062290d9299e0bbeea59da8360aa440c11143ef9"

/* @m (the 56-byte data_msg) sealed by sender 0 for @rcv: the trailer is the
 * bitmap (BE) and one GMAC per receiver, ascending, each computed here by
 * the raw primitive under the pair key of the job file. */
static void
assert_list(const uint8_t *m, int len, unsigned int snd, uint64_t rcv, enum isth_auth_impl impl)
{
	uint8_t master[32], k[32], iv[12], t[16];
	unsigned int j = 0;

	unhex(MASTER_HEX, master, sizeof(master));
	cr_assert_eq(len, 56 + 8 + 16 * __builtin_popcountll(rcv));
	cr_assert_eq(m[7], len - 56, "trailer_len");
	cr_assert_eq(m[2], 2);
	for (int b = 0; b < 8; b++)
		cr_assert_eq(m[56 + b], (uint8_t)(rcv >> (56 - 8 * b)), "bitmap byte %d", b);
	isth_auth_iv(m, iv);
	for (unsigned int r = 0; r < 64; r++) {
		if (!((rcv >> r) & 1u))
			continue;
		cr_assert_eq(isth_auth_derive_pair(master, 42, 1, snd, r, k), 0);
		cr_assert_eq(isth_auth_gmac_raw(impl, k, iv, m, 56, t), 0);
		cr_assert(memcmp(m + 64 + 16 * j, t, 16) == 0, "tag of receiver %u", r);
		j++;
	}
}

Test(auth, tag_list_each_receiver_verifies_its_own)
{
	struct isth_auth *a = load(KF_ONE, 42, 5);

	for (size_t i = 0; i < 2; i++) {
		struct isth_auth_engine *e;
		uint8_t m[256], x[256];
		int len;

		cr_assert_eq(isth_auth_engine_create(a, impls[i], &e), 0);
		data_msg(m, 0);
		m[20] = 0; /* sender 0 */
		len = isth_auth_seal_list(e, 0, 0x1a, m, 56, sizeof(m)); /* 1, 3, 4 */
		assert_list(m, len, 0, 0x1a, impls[i]);
		for (unsigned int t = 0; t < 5; t++)
			cr_assert_eq(isth_auth_verify_list(e, 0, t, m, (size_t)len),
				((0x1a >> t) & 1u) ? ISTH_AUTH_OK : ISTH_AUTH_E_KEY,
				"%s: receiver %u", isth_auth_impl_name(impls[i]), t);
		/* the claimed sender selects the key: as sender 2 it fails */
		cr_assert_eq(isth_auth_verify_list(e, 2, 1, m, (size_t)len), ISTH_AUTH_E_TAG);
		/* a bitmap edit keeping the count: {1, 2, 4}: receiver 2 reads
		 * receiver 3's tag, receiver 3 is no longer listed */
		memcpy(x, m, (size_t)len);
		x[63] = 0x16;
		cr_assert_eq(isth_auth_verify_list(e, 0, 2, x, (size_t)len), ISTH_AUTH_E_TAG);
		cr_assert_eq(isth_auth_verify_list(e, 0, 3, x, (size_t)len), ISTH_AUTH_E_KEY);
		cr_assert_eq(isth_auth_verify_list(e, 0, 1, x, (size_t)len), ISTH_AUTH_OK);
		/* a receiver removed from the bitmap alone: the count no longer fits */
		x[63] = 0x0a;
		cr_assert_eq(isth_auth_verify_list(e, 0, 1, x, (size_t)len), ISTH_AUTH_E_FORMAT);
		/* two tags swapped: both receivers refuse */
		memcpy(x, m, (size_t)len);
		memcpy(x + 64, m + 80, 16);
		memcpy(x + 80, m + 64, 16);
		cr_assert_eq(isth_auth_verify_list(e, 0, 1, x, (size_t)len), ISTH_AUTH_E_TAG);
		cr_assert_eq(isth_auth_verify_list(e, 0, 3, x, (size_t)len), ISTH_AUTH_E_TAG);
		cr_assert_eq(isth_auth_verify_list(e, 0, 4, x, (size_t)len), ISTH_AUTH_OK);
		/* a receiver dropped with its tag: trailer_len is covered */
		memcpy(x, m, (size_t)len);
		x[7] = 40;
		x[63] = 0x12;
		memcpy(x + 80, m + 96, 16);
		cr_assert_eq(isth_auth_verify_list(e, 0, 4, x, (size_t)len - 16), ISTH_AUTH_E_TAG);
		/* the one-tag format is no tag list, and the reverse */
		cr_assert_eq(
			isth_auth_verify(e, ISTH_AUTH_WAN, 0, m, (size_t)len), ISTH_AUTH_E_FORMAT);
		/* every body or header byte flipped: refused by every receiver */
		for (int b = 0; b < 56; b++) {
			memcpy(x, m, (size_t)len);
			x[b] ^= 0x01;
			cr_assert_neq(isth_auth_verify_list(e, 0, 3, x, (size_t)len), ISTH_AUTH_OK,
				"byte %d", b);
		}
		/* a list of one (a unicast repair) */
		data_msg(m, 0x0002);
		m[20] = 0;
		len = isth_auth_seal_list(e, 0, 0x4, m, 56, sizeof(m));
		assert_list(m, len, 0, 0x4, impls[i]);
		cr_assert_eq(isth_auth_verify_list(e, 0, 2, m, (size_t)len), ISTH_AUTH_OK);
		isth_auth_engine_free(e);
	}
	isth_auth_free(a);
}

Test(auth, tag_list_limits)
{
	struct isth_auth *a = load(KF_ONE, 42, 64);
	struct isth_auth_engine *e;
	uint8_t m[512];

	cr_assert_eq(isth_auth_engine_create(a, ISTH_AUTH_IPSEC_MB, &e), 0);
	data_msg(m, 0);
	cr_assert_eq(isth_auth_seal_list(e, 0, 0, m, 56, sizeof(m)), -EINVAL, "no receiver");
	cr_assert_eq(isth_auth_seal_list(e, 0, 0x3, m, 56, sizeof(m)), -EINVAL, "sender listed");
	cr_assert_eq(isth_auth_seal_list(e, 0, 0xfffe, m, 56, sizeof(m)), 56 + 8 + 15 * 16);
	cr_assert_eq(m[7], 248, "15 tags: the largest trailer_len");
	cr_assert_eq(isth_auth_verify_list(e, 0, 15, m, 56 + 8 + 15 * 16), ISTH_AUTH_OK);
	data_msg(m, 0);
	cr_assert_eq(isth_auth_seal_list(e, 0, 0x1fffe, m, 56, sizeof(m)), -EINVAL, "16 tags");
	cr_assert_eq(isth_auth_seal_list(e, 0, 0x6, m, 56, 56 + 8 + 31), -ENOSPC);
	cr_assert_eq(m[2], 1, "a refused seal wrote the header");
	isth_auth_engine_free(e);
	isth_auth_free(a);
}

/* A burst mixing one-tag seals and tag lists of 15, more tags than one
 * submission holds: every message sealed as a lone seal would. */
Test(auth, tag_list_bursts)
{
	struct isth_auth *a = load(KF_ONE, 42, 64);

	for (size_t i = 0; i < 2; i++) {
		struct isth_auth_engine *e;
		struct isth_auth_op ops[7];
		uint8_t m[7][320], one[320];

		cr_assert_eq(isth_auth_engine_create(a, impls[i], &e), 0);
		for (unsigned int j = 0; j < 7; j++) {
			data_msg(m[j], 0);
			m[j][31] = (uint8_t)j; /* its own seq */
			ops[j] = (struct isth_auth_op){.msg = m[j], .len = 56, .cap = 320};
			if (j % 3 == 2) {
				ops[j].dir = ISTH_AUTH_UP;
				ops[j].owner = 2;
			} else {
				ops[j].dir = ISTH_AUTH_WAN_PAIR;
				ops[j].owner = (uint8_t)j;
				ops[j].peers = (UINT64_C(0x7fff) << 20) >> j;
			}
		}
		cr_assert_eq(isth_auth_seal_burst(e, ops, 7), 7);
		for (unsigned int j = 0; j < 7; j++) {
			int r;

			data_msg(one, 0);
			one[31] = (uint8_t)j;
			r = ops[j].dir == ISTH_AUTH_UP
				? isth_auth_seal(e, ISTH_AUTH_UP, 2, one, 56, sizeof(one))
				: isth_auth_seal_list(e, j, ops[j].peers, one, 56, sizeof(one));
			cr_assert_eq((uint32_t)r, ops[j].len, "op %u", j);
			cr_assert(memcmp(one, m[j], ops[j].len) == 0, "op %u differs", j);
			/* verified in a burst too, by the receiver of the last tag */
			if (ops[j].dir == ISTH_AUTH_WAN_PAIR)
				ops[j].peers = UINT64_C(1) << (63 - __builtin_clzll(ops[j].peers));
		}
		cr_assert_eq(isth_auth_verify_burst(e, ops, 7), 7);
		isth_auth_engine_free(e);
	}
	isth_auth_free(a);
}

/* Edge 1's site file: it seals tag lists as edge 1 only, and verifies only
 * its own tag; it cannot produce a tag that edge 2 accepts as edge 0's. */
Test(auth, site_file_pairs_only_its_own)
{
	static const char kf[] =
		"job 42\nsite edge 1\nepoch 1 round 0\nkey up " K_UP2 "\nkey down " K_DOWN2
		"\nkey wan 1 " K_WAN0 "\nkey pair 1 0 " K_PAIR10 "\nkey pair 0 1 " K_PAIR01 "\n";
	struct isth_auth *job = load(KF_ONE, 42, 3), *e1 = load(kf, 42, 3);
	struct isth_auth_engine *ej, *ee;
	uint8_t m[256];
	int len;

	cr_assert(isth_auth_has_pair(e1, 1, 0) && isth_auth_has_pair(e1, 0, 1));
	cr_assert(!isth_auth_has_pair(e1, 0, 2) && !isth_auth_has_pair(e1, 1, 2) &&
		!isth_auth_has_pair(e1, 1, 1));
	cr_assert(isth_auth_has_pair(job, 2, 0) && !isth_auth_has_pair(job, 2, 2));
	{
		char err[256] = "";

		cr_assert_eq(
			isth_auth_check_site(e1, ISTH_AUTH_SITE_EDGE, 1, "f", err, sizeof(err)),
			-EINVAL);
		cr_assert(strstr(err, "f: holds no 'key pair 1 2'") == err, "%s", err);
	}
	cr_assert_eq(isth_auth_engine_create(job, ISTH_AUTH_IPSEC_MB, &ej), 0);
	cr_assert_eq(isth_auth_engine_create(e1, ISTH_AUTH_OPENSSL, &ee), 0);
	/* edge 0 to edges 1 and 2: edge 1 verifies its tag */
	data_msg(m, 0);
	m[20] = 0;
	len = isth_auth_seal_list(ej, 0, 0x6, m, 56, sizeof(m));
	cr_assert_eq(isth_auth_verify_list(ee, 0, 1, m, (size_t)len), ISTH_AUTH_OK);
	cr_assert_eq(isth_auth_verify_list(ee, 0, 2, m, (size_t)len), ISTH_AUTH_E_KEY);
	/* edge 1 seals as itself for edge 0 (the file's key, from vectors.py) */
	data_msg(m, 0);
	m[20] = 1;
	len = isth_auth_seal_list(ee, 1, 0x1, m, 56, sizeof(m));
	cr_assert_eq(isth_auth_verify_list(ej, 1, 0, m, (size_t)len), ISTH_AUTH_OK);
	/* ... and cannot as edge 0, nor for a peer whose pair it lacks */
	data_msg(m, 0);
	m[20] = 0;
	cr_assert_eq(isth_auth_seal_list(ee, 0, 0x4, m, 56, sizeof(m)), -EPERM);
	cr_assert_eq(isth_auth_seal_list(ee, 1, 0x5, m, 56, sizeof(m)), -EPERM);
	cr_assert_eq(m[2], 1, "a refused seal wrote the header");
	/* a frame claiming edge 0 sealed with edge 1's own pair keys:
	 * edge 2 (verifying with K(0, 2)) refuses it */
	len = isth_auth_seal_list(ee, 1, 0x1, m, 56, sizeof(m));
	m[63] = 0x4; /* relabelled for edge 2 */
	cr_assert_eq(isth_auth_verify_list(ej, 0, 2, m, (size_t)len), ISTH_AUTH_E_TAG);
	isth_auth_engine_free(ej);
	isth_auth_engine_free(ee);
	isth_auth_free(job);
	isth_auth_free(e1);
}

/* Every single-bit flip anywhere in a sealed message is refused, with the
 * framing reason for framing bytes and auth_tag everywhere else. */
Test(auth, every_bit_flip_refused)
{
	struct isth_auth *a = load("job 42\nepoch 1 round 0 key " MASTER_HEX
				   "\nepoch 9 round 1000 key " MASTER_HEX "\n",
		42, 4);

	for (size_t i = 0; i < 2; i++) {
		struct isth_auth_engine *e;
		uint8_t m[128];

		cr_assert_eq(isth_auth_engine_create(a, impls[i], &e), 0);
		cr_assert_eq(isth_auth_seal(e, ISTH_AUTH_UP, 2, m, data_msg(m, 0), sizeof(m)), 72);
		for (size_t byte = 0; byte < 72; byte++)
			for (int bit = 0; bit < 8; bit++) {
				enum isth_auth_status s, want = ISTH_AUTH_E_TAG;

				m[byte] ^= (uint8_t)(1u << bit);
				s = isth_auth_verify(e, ISTH_AUTH_UP, 2, m, 72);
				if (byte <= 2 || byte == 7 || (byte == 5 && bit == 4))
					want = ISTH_AUTH_E_FORMAT;
				else if (byte == 21 || (byte == 14 && bit == 7) || (byte == 13) ||
					(byte == 12) || (byte == 14 && bit >= 2))
					/* epoch byte, or a round in another epoch */
					want = ISTH_AUTH_E_EPOCH;
				cr_assert_eq(s, want, "%s byte %zu bit %d: %s",
					isth_auth_impl_name(impls[i]), byte, bit,
					isth_auth_status_name(s));
				m[byte] ^= (uint8_t)(1u << bit);
			}
		cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_UP, 2, m, 72), ISTH_AUTH_OK);
		/* wrong key: direction, owner; truncated */
		cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_DOWN, 2, m, 72), ISTH_AUTH_E_TAG);
		cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_WAN, 2, m, 72), ISTH_AUTH_E_TAG);
		cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_UP, 1, m, 72), ISTH_AUTH_E_TAG);
		cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_UP, 4, m, 72), ISTH_AUTH_E_KEY);
		cr_assert_eq(isth_auth_verify(e, 7, 2, m, 72), ISTH_AUTH_E_KEY);
		cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_UP, 2, m, 71), ISTH_AUTH_E_TAG);
		cr_assert_eq(isth_auth_verify(e, ISTH_AUTH_UP, 2, m, 55), ISTH_AUTH_E_FORMAT);
		isth_auth_engine_free(e);
	}
	isth_auth_free(a);
}

/* Raw primitive: both implementations agree on random keys, IVs and AAD
 * of every length 0..1600 (both paths of each library: short tails,
 * whole 16-byte blocks, and the wide loops). */
Test(auth, cross_raw_random)
{
	static uint8_t aad[1600];

	for (size_t len = 0; len <= sizeof(aad); len += (len < 80 ? 1 : 37)) {
		uint8_t key[32], iv[12], t0[16], t1[16];

		for (size_t i = 0; i < 32; i++)
			key[i] = (uint8_t)rnd();
		for (size_t i = 0; i < 12; i++)
			iv[i] = (uint8_t)rnd();
		for (size_t i = 0; i < len; i++)
			aad[i] = (uint8_t)rnd();
		cr_assert_eq(isth_auth_gmac_raw(ISTH_AUTH_OPENSSL, key, iv, aad, len, t0), 0);
		cr_assert_eq(isth_auth_gmac_raw(ISTH_AUTH_IPSEC_MB, key, iv, aad, len, t1), 0);
		cr_assert(memcmp(t0, t1, 16) == 0, "len %zu: tags differ", len);
	}
}

#define NMSG 100
#define MSG_CAP 1536

/* Random v2 messages sealed by one implementation (single or burst) verify
 * with the other (single and burst), with identical tags. */
Test(auth, cross_seal_verify_random_messages)
{
	struct isth_auth *a = load(KF_ONE, 42, 9);
	struct isth_auth_engine *eng[2];
	static uint8_t m[2][NMSG][MSG_CAP];
	struct isth_auth_op ops[2][NMSG];

	for (size_t i = 0; i < 2; i++)
		cr_assert_eq(isth_auth_engine_create(a, impls[i], &eng[i]), 0);
	for (size_t k = 0; k < NMSG; k++) {
		size_t len = 40 + rnd() % (1472 - 40 + 1);
		uint8_t dir = (uint8_t)(1 + rnd() % 3), owner = (uint8_t)(rnd() % 9);

		for (size_t b = 0; b < len; b++)
			m[0][k][b] = (uint8_t)rnd();
		m[0][k][0] = 0x49;
		m[0][k][1] = 0x53;
		m[0][k][12] = m[0][k][13] = 0; /* round < 2^16: epoch 1 */
		memcpy(m[1][k], m[0][k], len);
		for (size_t i = 0; i < 2; i++)
			ops[i][k] = (struct isth_auth_op){.msg = m[i][k],
				.len = (uint32_t)len,
				.cap = MSG_CAP,
				.dir = dir,
				.owner = owner};
	}
	/* OpenSSL seals one by one; ipsec-mb seals as bursts. */
	for (size_t k = 0; k < NMSG; k++) {
		int r = isth_auth_seal(
			eng[0], ops[0][k].dir, ops[0][k].owner, m[0][k], ops[0][k].len, MSG_CAP);

		cr_assert_eq(r, (int)ops[0][k].len + 16);
		ops[0][k].len = (uint32_t)r;
	}
	cr_assert_eq(isth_auth_seal_burst(eng[1], ops[1], NMSG), NMSG);
	for (size_t k = 0; k < NMSG; k++) {
		cr_assert_eq(ops[1][k].len, ops[0][k].len);
		cr_assert(memcmp(m[0][k], m[1][k], ops[0][k].len) == 0,
			"message %zu differs between implementations", k);
		for (size_t i = 0; i < 2; i++)
			cr_assert_eq(isth_auth_verify(eng[i], ops[0][k].dir, ops[0][k].owner,
					     m[1 - i][k], ops[0][k].len),
				ISTH_AUTH_OK);
	}
	for (size_t i = 0; i < 2; i++)
		cr_assert_eq(isth_auth_verify_burst(eng[i], ops[1 - i], NMSG), NMSG);
	for (size_t i = 0; i < 2; i++)
		isth_auth_engine_free(eng[i]);
	isth_auth_free(a);
}

/* A burst of 40 (crossing the 32-job submission) with good, tampered,
 * misframed and wrong-key messages: each op gets its own status. */
Test(auth, verify_burst_mixed_statuses)
{
	struct isth_auth *a = load(KF_ONE, 42, 4);
	enum { N = 40 };
	static uint8_t m[N][128];
	struct isth_auth_op ops[N];
	enum isth_auth_status want[N];

	for (size_t i = 0; i < 2; i++) {
		struct isth_auth_engine *e;
		unsigned int n_ok = 0;

		cr_assert_eq(isth_auth_engine_create(a, impls[i], &e), 0);
		for (size_t k = 0; k < N; k++) {
			data_msg(m[k], 0);
			m[k][31] = (uint8_t)k; /* distinct seqs */
			cr_assert_eq(isth_auth_seal(e, ISTH_AUTH_UP, 2, m[k], 56, 128), 72);
			ops[k] = (struct isth_auth_op){
				.msg = m[k], .len = 72, .dir = ISTH_AUTH_UP, .owner = 2};
			want[k] = ISTH_AUTH_OK;
			switch (k % 5) {
			case 1:
				m[k][50] ^= 0x80; /* body */
				want[k] = ISTH_AUTH_E_TAG;
				break;
			case 2:
				m[k][2] = 1; /* version 1 */
				want[k] = ISTH_AUTH_E_FORMAT;
				break;
			case 3:
				ops[k].owner = 3; /* another island's key */
				want[k] = ISTH_AUTH_E_TAG;
				break;
			default:
				n_ok++;
			}
		}
		cr_assert_eq(isth_auth_verify_burst(e, ops, N), n_ok);
		for (size_t k = 0; k < N; k++)
			cr_assert_eq(ops[k].status, (int16_t)want[k], "%s op %zu: %s",
				isth_auth_impl_name(impls[i]), k,
				isth_auth_status_name(ops[k].status));
		isth_auth_engine_free(e);
	}
	isth_auth_free(a);
}

/* Rotation: epoch 1 from round 0, epoch 2 from round 100. Packets of round
 * 99 carry epoch 1 and packets of round 100 epoch 2, both verify at a site
 * holding both keys (no loss at the boundary); an old key file (epoch 1
 * only) tags round 100 with epoch 1, which the new site refuses. */
Test(auth, epoch_rotation_at_round_boundary)
{
	char two[512];
	struct isth_auth *both, *old;
	struct isth_auth_engine *eb, *eo;
	uint8_t m[128];
	uint8_t ep;
	uint32_t start;

	snprintf(two, sizeof(two),
		"job 42\n# rotation\nepoch 1 round 0 key %s\n"
		"epoch 2 round 100 key %s\n",
		MASTER_HEX, "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100");
	both = load(two, 42, 4);
	old = load(KF_ONE, 42, 4);
	cr_assert_eq(isth_auth_n_epochs(both), 2);
	cr_assert_eq(isth_auth_epoch_info(both, 1, &ep, &start), 0);
	cr_assert_eq(ep, 2);
	cr_assert_eq(start, 100);
	cr_assert_eq(isth_auth_epoch_info(both, 2, &ep, &start), -EINVAL);
	cr_assert_eq(isth_auth_epoch_of(both, 0), 1);
	cr_assert_eq(isth_auth_epoch_of(both, 99), 1);
	cr_assert_eq(isth_auth_epoch_of(both, 100), 2);
	cr_assert_eq(isth_auth_epoch_of(both, UINT32_MAX), 2);
	cr_assert_eq(isth_auth_job(both), 42);

	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(isth_auth_engine_create(both, impls[i], &eb), 0);
		cr_assert_eq(isth_auth_engine_create(old, impls[1 - i], &eo), 0);
		for (uint32_t round = 98; round <= 101; round++) {
			data_msg(m, 0);
			m[14] = (uint8_t)(round >> 8);
			m[15] = (uint8_t)round;
			cr_assert_eq(isth_auth_seal(eb, ISTH_AUTH_DOWN, 1, m, 56, 128), 72);
			cr_assert_eq(m[21], round < 100 ? 1 : 2);
			cr_assert_eq(isth_auth_verify(eb, ISTH_AUTH_DOWN, 1, m, 72), ISTH_AUTH_OK);
			/* The old site verifies old rounds and refuses new ones. */
			cr_assert_eq(isth_auth_verify(eo, ISTH_AUTH_DOWN, 1, m, 72),
				round < 100 ? ISTH_AUTH_OK : ISTH_AUTH_E_EPOCH);
			/* The old site's own tag on a new round is refused. */
			data_msg(m, 0);
			m[14] = (uint8_t)(round >> 8);
			m[15] = (uint8_t)round;
			cr_assert_eq(isth_auth_seal(eo, ISTH_AUTH_DOWN, 1, m, 56, 128), 72);
			cr_assert_eq(m[21], 1);
			cr_assert_eq(isth_auth_verify(eb, ISTH_AUTH_DOWN, 1, m, 72),
				round < 100 ? ISTH_AUTH_OK : ISTH_AUTH_E_EPOCH);
		}
		isth_auth_engine_free(eb);
		isth_auth_engine_free(eo);
	}
	isth_auth_free(both);
	isth_auth_free(old);
}

/* Keys are per job: another job's handle with the same master refuses. */
Test(auth, keys_are_per_job)
{
	struct isth_auth *a = load(KF_ONE, 42, 4);
	struct isth_auth *b = load("job 43\nepoch 1 round 0 key " MASTER_HEX "\n", 43, 4);
	struct isth_auth_engine *ea, *eb;
	uint8_t m[128];

	cr_assert_eq(isth_auth_engine_create(a, ISTH_AUTH_IPSEC_MB, &ea), 0);
	cr_assert_eq(isth_auth_engine_create(b, ISTH_AUTH_IPSEC_MB, &eb), 0);
	cr_assert_eq(isth_auth_seal(ea, ISTH_AUTH_UP, 2, m, data_msg(m, 0), 128), 72);
	cr_assert_eq(isth_auth_verify(eb, ISTH_AUTH_UP, 2, m, 72), ISTH_AUTH_E_TAG);
	isth_auth_engine_free(ea);
	isth_auth_engine_free(eb);
	isth_auth_free(a);
	isth_auth_free(b);
}

/* ---- malformed key files ---------------------------------------------------- */

#define BADKEY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeZ"

struct kf_case {
	char name[32];
	char text[600];
	int ret;
	char msg[96]; /* expected substring after "<path>:" */
};

ParameterizedTestParameters(auth, keyfile_errors)
{
	static struct kf_case c[] = {
		{"empty", "", -EINVAL, ": no 'job' line"},
		{"comments_only", "# nothing\n\n", -EINVAL, ": no 'job' line"},
		{"no_epoch", "job 42\n", -EINVAL, ": no 'epoch' line"},
		{"unknown_kw", "job 42\nkeys 1\n", -EINVAL, ":2: unknown keyword"},
		{"job_twice", "job 42\njob 42\n", -EINVAL, ":2: job: given twice"},
		{"job_nan", "job forty\n", -EINVAL, ":1: job: expected a number"},
		{"job_missing", "job\n", -EINVAL, ":1: job: expected a number"},
		{"job_big", "job 4294967296\n", -EINVAL, ":1: job: expected a number"},
		{"job_neg", "job -1\n", -EINVAL, ":1: job: expected a number"},
		{"job_trailing", "job 42 43\n", -EINVAL, ":1: job: unexpected text"},
		{"job_mismatch", "job 41\nepoch 1 round 0 key " MASTER_HEX "\n", -EINVAL,
			": keys are for job 41, not job 42"},
		{"epoch_first", "epoch 1 round 0 key " MASTER_HEX "\njob 42\n", -EINVAL,
			":1: epoch: the job line must come first"},
		{"job_after_epoch", "job 42\nepoch 1 round 0 key " MASTER_HEX "\njob 42\n", -EINVAL,
			":3: job: given twice"},
		{"epoch_big", "job 42\nepoch 256 round 0 key " MASTER_HEX "\n", -EINVAL,
			":2: epoch: expected an epoch id 0..255"},
		{"epoch_dup",
			"job 42\nepoch 1 round 0 key " MASTER_HEX
			"\nepoch 1 round 5 key " MASTER_HEX "\n",
			-EINVAL, ":3: epoch: epoch 1 given twice"},
		{"no_round_kw", "job 42\nepoch 1 0 key " MASTER_HEX "\n", -EINVAL,
			":2: epoch: expected 'round'"},
		{"round_nan", "job 42\nepoch 1 round x key " MASTER_HEX "\n", -EINVAL,
			":2: round: expected a round number"},
		{"round_order",
			"job 42\nepoch 1 round 10 key " MASTER_HEX
			"\nepoch 2 round 10 key " MASTER_HEX "\n",
			-EINVAL, ":3: round: must be above the previous epoch's (10)"},
		{"no_key_kw", "job 42\nepoch 1 round 0 " MASTER_HEX "\n", -EINVAL,
			":2: epoch: expected 'key'"},
		{"key_missing", "job 42\nepoch 1 round 0 key\n", -EINVAL,
			":2: key: expected 64 hex digits, got 0"},
		{"key_short", "job 42\nepoch 1 round 0 key 0011\n", -EINVAL,
			":2: key: expected 64 hex digits, got 4"},
		{"key_long", "job 42\nepoch 1 round 0 key " MASTER_HEX "00\n", -EINVAL,
			":2: key: expected 64 hex digits, got 66"},
		{"key_nonhex", "job 42\nepoch 1 round 0 key " BADKEY "\n", -EINVAL,
			":2: key: non-hex digit at position 64"},
		{"key_trailing", "job 42\nepoch 1 round 0 key " MASTER_HEX " x\n", -EINVAL,
			":2: key: unexpected text after the key"},
		{"five_epochs",
			"job 42\nepoch 1 round 0 key " MASTER_HEX
			"\nepoch 2 round 1 key " MASTER_HEX "\nepoch 3 round 2 key " MASTER_HEX
			"\nepoch 4 round 3 key " MASTER_HEX "\nepoch 5 round 4 key " MASTER_HEX
			"\n",
			-EINVAL, ":6: epoch: more than 4 epochs"},
		{"site_before_job", "site island 1\njob 42\n", -EINVAL,
			":1: site: the job line must come first"},
		{"site_twice", "job 42\nsite island 1\nsite island 1\n", -EINVAL,
			":3: site: given twice"},
		{"site_after_epoch", "job 42\nepoch 1 round 0 key " MASTER_HEX "\nsite edge 1\n",
			-EINVAL, ":3: site: must come before the first epoch"},
		{"site_kind", "job 42\nsite wan 1\n", -EINVAL,
			":2: site: expected 'island' or 'edge'"},
		{"site_id_big", "job 42\nsite edge 64\n", -EINVAL,
			":2: site: expected an island id 0..63"},
		{"site_trailing", "job 42\nsite edge 1 2\n", -EINVAL,
			":2: site: unexpected text after the island id"},
		{"site_master", "job 42\nsite island 1\nepoch 1 round 0 key " MASTER_HEX "\n",
			-EINVAL, ":3: epoch: a site file's epoch holds no master key"},
		{"key_in_job_file",
			"job 42\nepoch 1 round 0 key " MASTER_HEX "\nkey up " MASTER_HEX "\n",
			-EINVAL, ":3: key: only a site file has 'key' lines"},
		{"key_before_epoch", "job 42\nsite island 1\nkey up " MASTER_HEX "\n", -EINVAL,
			":3: key: comes before the first epoch line"},
		{"key_dir", "job 42\nsite island 1\nepoch 1 round 0\nkey sideways " MASTER_HEX "\n",
			-EINVAL, ":4: key: expected 'up', 'down', 'wan' or 'pair'"},
		{"key_pair_island",
			"job 42\nsite island 1\nepoch 1 round 0\nkey pair 1 0 " MASTER_HEX "\n",
			-EINVAL, ":4: key pair: an island's file holds no WAN key"},
		{"key_pair_ids",
			"job 42\nsite edge 1\nepoch 1 round 0\nkey pair 1 " MASTER_HEX "\n",
			-EINVAL, ":4: key pair: expected a sender and a receiver edge 0..63"},
		{"key_pair_other",
			"job 42\nsite edge 1\nepoch 1 round 0\nkey pair 0 2 " MASTER_HEX "\n",
			-EINVAL,
			":4: key pair 0 2: edge 1's file holds only pairs from or to edge 1, "
			"sender != receiver"},
		{"key_pair_self",
			"job 42\nsite edge 1\nepoch 1 round 0\nkey pair 1 1 " MASTER_HEX "\n",
			-EINVAL, ":4: key pair 1 1: edge 1's file"},
		{"key_pair_twice",
			"job 42\nsite edge 1\nepoch 1 round 0\nkey pair 1 0 " MASTER_HEX
			"\nkey pair 1 0 " MASTER_HEX "\n",
			-EINVAL, ":5: key: given twice in epoch 1"},
		{"key_pair_not_in_job",
			"job 42\nsite edge 1\nepoch 1 round 0\nkey up " MASTER_HEX
			"\nkey down " MASTER_HEX "\nkey wan 1 " MASTER_HEX
			"\nkey pair 1 5 " MASTER_HEX "\n",
			-EINVAL, ": epoch 1: a 'key wan' owner or a 'key pair' edge is not below"},
		{"key_wan_island",
			"job 42\nsite island 1\nepoch 1 round 0\nkey wan 1 " MASTER_HEX "\n",
			-EINVAL, ":4: key wan: an island's file holds no WAN key"},
		{"key_wan_owner",
			"job 42\nsite edge 1\nepoch 1 round 0\nkey wan x " MASTER_HEX "\n", -EINVAL,
			":4: key wan: expected an owner island 0..63"},
		{"key_twice",
			"job 42\nsite island 1\nepoch 1 round 0\nkey up " MASTER_HEX
			"\nkey up " MASTER_HEX "\n",
			-EINVAL, ":5: key: given twice in epoch 1"},
		{"site_key_short", "job 42\nsite island 1\nepoch 1 round 0\nkey up 00\n", -EINVAL,
			":4: key: expected 64 hex digits, got 2"},
		{"site_key_nonhex", "job 42\nsite island 1\nepoch 1 round 0\nkey down " BADKEY "\n",
			-EINVAL, ":4: key: non-hex digit at position 64"},
		{"island_no_down",
			"job 42\nsite island 1\nepoch 1 round 0\nkey up " MASTER_HEX "\n", -EINVAL,
			": epoch 1: needs 'key up' and 'key down'"},
		{"site_not_in_job",
			"job 42\nsite island 4\nepoch 1 round 0\nkey up " MASTER_HEX
			"\nkey down " MASTER_HEX "\n",
			-EINVAL, ": a file for island 4, but the job has 4 islands"},
		{"wan_owner_not_in_job",
			"job 42\nsite edge 1\nepoch 1 round 0\nkey up " MASTER_HEX
			"\nkey down " MASTER_HEX "\nkey wan 1 " MASTER_HEX "\nkey wan 5 " MASTER_HEX
			"\n",
			-EINVAL,
			": epoch 1: a 'key wan' owner or a 'key pair' edge is not below the job's "
			"4 "
			"islands"},
		{"long_line",
			"job 42\n# "
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxxxxxxx"
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxxxxxxxxxx\n",
			-EINVAL, ":2: line longer than 256 characters"},
	};

	return cr_make_param_array(struct kf_case, c, sizeof(c) / sizeof(c[0]));
}

ParameterizedTest(struct kf_case *tc, auth, keyfile_errors)
{
	const char *p = keyfile(tc->text, 0600);
	struct isth_auth_conf c = {.key_file = p, .job = 42, .n_islands = 4};
	struct isth_auth *a = NULL;
	char err[256] = "", want[700];
	int r = isth_auth_create(&c, &a, err, sizeof(err));

	unlink(p);
	cr_assert_eq(r, tc->ret, "%s: ret %d (%s)", tc->name, r, err);
	cr_assert_null(a);
	snprintf(want, sizeof(want), "%s%s", p, tc->msg);
	cr_assert(strstr(err, want) == err, "%s: message '%s', want '%s...'", tc->name, err, want);
	/* Never any key material in a message. */
	cr_assert_null(strstr(err, "0123456789abcdef"), "%s: key in message", tc->name);
	cr_assert_null(strstr(err, "000102030405"), "%s: key in message", tc->name);
}

Test(auth, keyfile_nul_byte)
{
	static const char text[] = "job 42\nepoch 1 round 0 key " MASTER_HEX "\0junk\n";
	char path[64], err[256] = "";
	struct isth_auth_conf c = {.key_file = path, .job = 42, .n_islands = 4};
	struct isth_auth *a = NULL;
	int fd;

	snprintf(path, sizeof(path), "/tmp/isth-auth-test-%d-XXXXXX", getpid());
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	cr_assert_eq(isth_auth_create(&c, &a, err, sizeof(err)), -EINVAL);
	unlink(path);
	cr_assert_not_null(strstr(err, ":2: NUL byte in line"), "%s", err);
}

/* Errors name the line as the file numbers it: blank lines, comments and
 * CRLF ends count like any other line. */
Test(auth, keyfile_true_line_numbers)
{
	static const struct {
		const char *text;
		const char *msg;
	} c[] = {
		{"\n# keys\n\n   \njob 42\n\n# epoch one\nepoch 1 round 0 key 0011\n",
			":8: key: expected 64 hex digits, got 4"},
		{"\r\n# keys\r\n\r\n \t\r\njob 42\r\n\r\n# epoch one\r\nepoch 1 round 0 key "
		 "0011\r\n",
			":8: key: expected 64 hex digits, got 4"},
		{"# keys\n\njob 42\n\n\nkeys 1\n", ":6: unknown keyword"},
		{"job 42\n\n# x\n\n\0\n", ":5: NUL byte in line"},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char path[64], err[256] = "", want[128];
		struct isth_auth_conf conf = {.key_file = path, .job = 42, .n_islands = 4};
		struct isth_auth *a = NULL;
		size_t len = strlen(c[i].text);
		int fd;

		/* the NUL case: its text goes on after the NUL */
		if (strstr(c[i].msg, "NUL") != NULL)
			len += 1 + strlen(c[i].text + len + 1);
		snprintf(path, sizeof(path), "/tmp/isth-auth-test-%d-XXXXXX", getpid());
		fd = mkstemp(path);
		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, c[i].text, len), (ssize_t)len);
		close(fd);
		cr_assert_eq(isth_auth_create(&conf, &a, err, sizeof(err)), -EINVAL, "case %zu", i);
		unlink(path);
		cr_assert_null(a);
		snprintf(want, sizeof(want), "%s%s", path, c[i].msg);
		cr_assert(strstr(err, want) == err, "case %zu: '%s', want '%s...'", i, err, want);
	}
}

/* Load a one-epoch key file whose line 3 is a comment of @n characters
 * ("#" included) ended by @end ("": the last line, without an end). */
static int
load_with_comment(size_t n, const char *end, char *err, size_t errlen)
{
	char text[1024], *p = text;
	const char *path;
	struct isth_auth_conf c = {.job = 42, .n_islands = 4};
	struct isth_auth *a = NULL;
	int r;

	p += sprintf(p, "job 42\nepoch 1 round 0 key %s\n#", MASTER_HEX);
	memset(p, 'x', n - 1);
	p += n - 1;
	strcpy(p, end);
	path = keyfile(text, 0600);
	c.key_file = path;
	r = isth_auth_create(&c, &a, err, errlen);
	unlink(path);
	isth_auth_free(a);
	return r;
}

/* At most 256 characters a line, its "\n" or "\r\n" included. */
Test(auth, keyfile_line_length)
{
	char err[256] = "";

	cr_assert_eq(load_with_comment(255, "\n", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load_with_comment(256, "\n", err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, ":3: line longer than 256 characters"), "%s", err);
	cr_assert_eq(load_with_comment(254, "\r\n", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load_with_comment(255, "\r\n", err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, ":3: line longer than 256 characters"), "%s", err);
	cr_assert_eq(load_with_comment(256, "", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load_with_comment(257, "", err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, ":3: line longer than 256 characters"), "%s", err);
	cr_assert_eq(load_with_comment(600, "\n", err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, ":3: line longer than 256 characters"), "%s", err);
}

Test(auth, keyfile_modes_refused)
{
	static const mode_t bad[] = {0640, 0604, 0660, 0644, 0602, 0620, 0666, 0601};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *p = keyfile(KF_ONE, bad[i]);
		struct isth_auth_conf c = {.key_file = p, .job = 42, .n_islands = 4};
		struct isth_auth *a = NULL;
		char err[256] = "", want[32];

		cr_assert_eq(isth_auth_create(&c, &a, err, sizeof(err)), -EACCES, "mode %o: %s",
			(unsigned int)bad[i], err);
		unlink(p);
		snprintf(want, sizeof(want), "mode %04o", (unsigned int)bad[i]);
		cr_assert_not_null(strstr(err, want), "%s", err);
		cr_assert_not_null(strstr(err, "chmod 600"), "%s", err);
	}
	/* 0400 and 0600 are fine. */
	{
		const char *p = keyfile(KF_ONE, 0400);
		struct isth_auth_conf c = {.key_file = p, .job = 42, .n_islands = 4};
		struct isth_auth *a = NULL;

		cr_assert_eq(isth_auth_create(&c, &a, NULL, 0), 0);
		unlink(p);
		isth_auth_free(a);
	}
}

Test(auth, keyfile_owner_missing_dir_and_conf)
{
	struct isth_auth_conf c = {.key_file = "/nonexistent/isth-keys", .job = 42, .n_islands = 4};
	struct isth_auth *a = NULL;
	char err[256] = "";

	cr_assert_eq(isth_auth_create(&c, &a, err, sizeof(err)), -ENOENT);
	cr_assert_not_null(strstr(err, "/nonexistent/isth-keys: cannot open key file"), "%s", err);
	c.key_file = "/tmp";
	cr_assert_eq(isth_auth_create(&c, &a, err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, "/tmp: not a regular file"), "%s", err);
	c.n_islands = 0;
	cr_assert_eq(isth_auth_create(&c, &a, err, sizeof(err)), -EINVAL);
	c.n_islands = 65;
	cr_assert_eq(isth_auth_create(&c, &a, err, sizeof(err)), -EINVAL);
	c.key_file = NULL;
	c.n_islands = 4;
	cr_assert_eq(isth_auth_create(&c, &a, err, sizeof(err)), -EINVAL);

	/* Owned by someone else (needs root to chown). */
	if (geteuid() == 0) {
		const char *p = keyfile(KF_ONE, 0600);

		cr_assert_eq(chown(p, 65534, 65534), 0);
		c.key_file = p;
		cr_assert_eq(isth_auth_create(&c, &a, err, sizeof(err)), -EACCES);
		unlink(p);
		cr_assert_not_null(strstr(err, "owned by uid 65534"), "%s", err);
	}
}

/* ---- replay window ------------------------------------------------------------ */

struct replay_step {
	uint64_t seq;
	enum isth_auth_status want;
};

/* Window of 64 seqs. Expected statuses follow from the definition: a seq
 * is new if above the highest accepted (top), stale if top - seq >= 64,
 * else a replay iff it was accepted before. */
static const struct replay_step replay_table[] = {
	{1000, ISTH_AUTH_OK}, /* first seq sets the base */
	{1000, ISTH_AUTH_E_REPLAY},
	{999, ISTH_AUTH_OK}, /* below top, inside, unseen */
	{999, ISTH_AUTH_E_REPLAY},
	{937, ISTH_AUTH_OK}, /* top - 63: oldest inside */
	{936, ISTH_AUTH_E_STALE}, /* top - 64 */
	{1001, ISTH_AUTH_OK}, /* slides by one: 937 now stale */
	{937, ISTH_AUTH_E_STALE},
	{938, ISTH_AUTH_OK},
	{1063, ISTH_AUTH_OK}, /* slides by 62: 1000, 1001 still inside */
	{999, ISTH_AUTH_E_STALE}, /* 1063 - 999 = 64 */
	{1000, ISTH_AUTH_E_REPLAY}, /* 1063 - 1000 = 63: inside, seen */
	{1001, ISTH_AUTH_E_REPLAY},
	{1002, ISTH_AUTH_OK}, /* never seen, inside */
	{1200, ISTH_AUTH_OK}, /* jump beyond the window: all cleared */
	{1137, ISTH_AUTH_OK}, /* top - 63, unseen after the clear */
	{1136, ISTH_AUTH_E_STALE},
	{1063, ISTH_AUTH_E_STALE},
	{1200, ISTH_AUTH_E_REPLAY},
	{1264, ISTH_AUTH_OK}, /* slide by exactly 64 */
	{1200, ISTH_AUTH_E_STALE},
	{1201, ISTH_AUTH_OK}, /* its bit was cleared by the slide */
	{UINT64_MAX, ISTH_AUTH_OK}, /* the end of the seq space */
	{UINT64_MAX, ISTH_AUTH_E_REPLAY},
	{UINT64_MAX - 63, ISTH_AUTH_OK},
	{UINT64_MAX - 64, ISTH_AUTH_E_STALE},
	{0, ISTH_AUTH_E_STALE},
};

Test(auth, replay_window_table)
{
	uint64_t words[1];
	struct isth_auth_replay w;

	cr_assert_eq(isth_auth_replay_words(64), 1);
	cr_assert_eq(isth_auth_replay_init(&w, words, 64), 0);
	for (size_t i = 0; i < sizeof(replay_table) / sizeof(replay_table[0]); i++) {
		const struct replay_step *s = &replay_table[i];

		/* one round throughout: no restart applies */
		cr_assert_eq(isth_auth_replay_check(&w, s->seq, 7), s->want,
			"step %zu seq %llu: check", i, (unsigned long long)s->seq);
		cr_assert_eq(isth_auth_replay_commit(&w, s->seq, 7), s->want,
			"step %zu seq %llu: commit", i, (unsigned long long)s->seq);
	}
}

/* Against a reference model (a plain set of accepted seqs) on a long
 * random walk with reordering, for window sizes 64..1024. */
Test(auth, replay_window_matches_model)
{
	static uint8_t seen[1u << 16]; /* model: accepted seqs, seq < 2^16 */
	static uint64_t words[1024 / 64];
	static const uint32_t sizes[] = {64, 128, 256, 1024};

	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		struct isth_auth_replay w;
		uint64_t top = 0, base = 100;
		bool started = false;

		memset(seen, 0, sizeof(seen));
		cr_assert_eq(isth_auth_replay_init(&w, words, sizes[z]), 0);
		for (int i = 0; i < 40000; i++) {
			/* Mostly forward, sometimes back by up to 1.5 windows. */
			uint64_t back = rnd() % (sizes[z] + sizes[z] / 2);
			uint64_t seq =
				rnd() % 4 ? base + rnd() % 8 : (base > back ? base - back : 0);
			enum isth_auth_status want;

			if (seq >= sizeof(seen))
				break;
			if (!started || seq > top)
				want = ISTH_AUTH_OK;
			else if (top - seq >= sizes[z])
				want = ISTH_AUTH_E_STALE;
			else
				want = seen[seq] ? ISTH_AUTH_E_REPLAY : ISTH_AUTH_OK;
			cr_assert_eq(isth_auth_replay_commit(&w, seq, 3), want,
				"W=%u step %d seq %llu", sizes[z], i, (unsigned long long)seq);
			if (want == ISTH_AUTH_OK) {
				seen[seq] = 1;
				if (!started || seq > top)
					top = seq;
				started = true;
			}
			base += rnd() % 2;
		}
	}
}

/* Check changes nothing: the one-packet attack (a verified seq far ahead
 * whose packet a later check refuses, so it is never committed) leaves
 * the genuine stream's seqs acceptable. */
Test(auth, replay_check_moves_nothing)
{
	uint64_t words[1];
	struct isth_auth_replay w;

	cr_assert_eq(isth_auth_replay_init(&w, words, 64), 0);
	for (uint64_t q = 1000; q < 1010; q++)
		cr_assert_eq(isth_auth_replay_commit(&w, q, 4), ISTH_AUTH_OK);
	/* the attack: checked OK, then refused by the round checks */
	cr_assert_eq(isth_auth_replay_check(&w, UINT64_C(1) << 62, 4), ISTH_AUTH_OK);
	cr_assert_eq(w.top, 1009);
	for (uint64_t q = 1010; q < 1200; q++)
		cr_assert_eq(isth_auth_replay_commit(&w, q, 4), ISTH_AUTH_OK, "seq %llu",
			(unsigned long long)q);
	/* two copies in one burst: both checked before either commits; the
	 * second commit sees the first */
	cr_assert_eq(isth_auth_replay_check(&w, 1200, 4), ISTH_AUTH_OK);
	cr_assert_eq(isth_auth_replay_check(&w, 1200, 4), ISTH_AUTH_OK);
	cr_assert_eq(isth_auth_replay_commit(&w, 1200, 4), ISTH_AUTH_OK);
	cr_assert_eq(isth_auth_replay_commit(&w, 1200, 4), ISTH_AUTH_E_REPLAY);
}

/* A sender restarted after its clock stepped back: its seqs start below
 * the window. Accepted with a round newer than every round accepted
 * (the window restarts there); an old packet (its round at most the
 * newest accepted) stays refused, before and after the restart. */
Test(auth, replay_restart_on_newer_round)
{
	uint64_t words[1];
	struct isth_auth_replay w;

	cr_assert_eq(isth_auth_replay_init(&w, words, 64), 0);
	for (uint64_t q = 5000; q < 5100; q++)
		cr_assert_eq(isth_auth_replay_commit(&w, q, 9 + (q >= 5050)), ISTH_AUTH_OK);
	/* rounds 9 and 10 accepted, top 5099: seq 100 is older than the window */
	cr_assert_eq(isth_auth_replay_check(&w, 100, 9), ISTH_AUTH_E_STALE);
	cr_assert_eq(isth_auth_replay_check(&w, 100, 10), ISTH_AUTH_E_STALE);
	cr_assert_eq(isth_auth_replay_check(&w, 5030, 9), ISTH_AUTH_E_STALE);
	/* inside the window, seen: a replay whatever round it claims */
	cr_assert_eq(isth_auth_replay_check(&w, 5090, 11), ISTH_AUTH_E_REPLAY);
	/* the restarted sender's first packet, round 11 */
	cr_assert_eq(isth_auth_replay_check(&w, 100, 11), ISTH_AUTH_OK);
	cr_assert_eq(w.top, 5099, "check moved the window");
	cr_assert_eq(isth_auth_replay_commit(&w, 100, 11), ISTH_AUTH_OK);
	cr_assert_eq(w.top, 100);
	cr_assert_eq(isth_auth_replay_commit(&w, 101, 11), ISTH_AUTH_OK);
	cr_assert_eq(isth_auth_replay_commit(&w, 100, 11), ISTH_AUTH_E_REPLAY);
	/* the ended incarnation's packets (rounds 9, 10; seqs above the new
	 * top) are refused: replays of them cannot come back */
	cr_assert_eq(isth_auth_replay_check(&w, 5099, 10), ISTH_AUTH_E_STALE);
	cr_assert_eq(isth_auth_replay_commit(&w, 5200, 10), ISTH_AUTH_E_STALE);
	cr_assert_eq(isth_auth_replay_commit(&w, 5020, 9), ISTH_AUTH_E_STALE);
	/* the new incarnation goes on, into round 12 */
	cr_assert_eq(isth_auth_replay_commit(&w, 102, 12), ISTH_AUTH_OK);
	/* a second restart needs a round newer than 12 */
	cr_assert_eq(isth_auth_replay_commit(&w, 102 - 64, 12), ISTH_AUTH_E_STALE);
	cr_assert_eq(isth_auth_replay_commit(&w, 102 - 64, 13), ISTH_AUTH_OK);
}

/* The seq bound: ahead of the clock by more than the slack. */
Test(auth, seq_ahead)
{
	const uint64_t now = UINT64_C(1765000000000000000), slack = 1000000000;

	cr_assert(!isth_auth_seq_ahead(now, now, slack));
	cr_assert(!isth_auth_seq_ahead(now - 5, now, slack)); /* behind: the window's job */
	cr_assert(!isth_auth_seq_ahead(0, now, slack));
	cr_assert(!isth_auth_seq_ahead(now + slack, now, slack));
	cr_assert(isth_auth_seq_ahead(now + slack + 1, now, slack));
	cr_assert(isth_auth_seq_ahead(UINT64_MAX, now, slack));
	cr_assert(isth_auth_seq_ahead(UINT64_MAX, UINT64_MAX - slack - 1, slack));
	cr_assert(!isth_auth_seq_ahead(UINT64_MAX, UINT64_MAX - slack, slack));
	cr_assert_eq(ISTH_AUTH_SEQ_AHEAD_NS_DEFAULT, 1000000000ull);
}

Test(auth, replay_init_and_names)
{
	uint64_t words[2];
	struct isth_auth_replay w;

	cr_assert_eq(isth_auth_replay_init(&w, words, 32), -EINVAL);
	cr_assert_eq(isth_auth_replay_init(&w, words, 96), -EINVAL);
	cr_assert_eq(isth_auth_replay_init(&w, NULL, 64), -EINVAL);
	cr_assert_eq(isth_auth_replay_init(&w, words, 128), 0);
	cr_assert_str_eq(isth_auth_status_name(ISTH_AUTH_E_TAG), "auth_tag");
	cr_assert_str_eq(isth_auth_status_name(ISTH_AUTH_E_REPLAY), "auth_replay");
	cr_assert_str_eq(isth_auth_status_name(ISTH_AUTH_E_STALE), "auth_stale");
	cr_assert_str_eq(isth_auth_status_name(ISTH_AUTH_E_AHEAD), "auth_ahead");
	cr_assert_str_eq(isth_auth_status_name(ISTH_AUTH_E_EPOCH), "auth_epoch");
	cr_assert_str_eq(isth_auth_status_name(ISTH_AUTH_E_FORMAT), "auth_format");
	cr_assert_str_eq(isth_auth_status_name(ISTH_AUTH_E_KEY), "auth_key");
	cr_assert_str_eq(isth_auth_status_name(ISTH_AUTH_STATUS_MAX), "unknown");
	cr_assert_str_eq(isth_auth_impl_name(ISTH_AUTH_IPSEC_MB), "ipsec-mb");
}

/* Edge sizes and jumbo frames: both implementations agree on messages of
 * every length around the 16-byte block boundaries and up to a 9000-byte
 * MTU's payload. */
Test(auth, cross_sizes_and_jumbo)
{
	static const size_t sizes[] = {40, 41, 47, 48, 49, 55, 56, 57, 63, 64, 65, 127, 128, 129,
		255, 256, 257, 1416, 1456, 4096, 8956};
	struct isth_auth *a = load(KF_ONE, 42, 4);
	struct isth_auth_engine *eo, *ei;
	static uint8_t m0[9000], m1[9000];

	cr_assert_eq(isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &eo), 0);
	cr_assert_eq(isth_auth_engine_create(a, ISTH_AUTH_IPSEC_MB, &ei), 0);
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		size_t len = sizes[z];
		int r0, r1;

		for (size_t b = 0; b < len; b++)
			m0[b] = (uint8_t)rnd();
		m0[0] = 0x49;
		m0[1] = 0x53;
		m0[12] = m0[13] = m0[14] = 0; /* round < 256 */
		memcpy(m1, m0, len);
		r0 = isth_auth_seal(eo, ISTH_AUTH_WAN, 3, m0, len, sizeof(m0));
		r1 = isth_auth_seal(ei, ISTH_AUTH_WAN, 3, m1, len, sizeof(m1));
		cr_assert_eq(r0, (int)len + 16);
		cr_assert_eq(r1, r0);
		cr_assert(memcmp(m0, m1, (size_t)r0) == 0, "len %zu: differs", len);
		cr_assert_eq(isth_auth_verify(ei, ISTH_AUTH_WAN, 3, m0, (size_t)r0), ISTH_AUTH_OK);
		cr_assert_eq(isth_auth_verify(eo, ISTH_AUTH_WAN, 3, m1, (size_t)r1), ISTH_AUTH_OK);
	}
	isth_auth_engine_free(eo);
	isth_auth_engine_free(ei);
	isth_auth_free(a);
}

/* One handle, one engine per thread: the handle is read-only after
 * creation, so threads verify concurrently without locks. */
struct thr_arg {
	struct isth_auth *a;
	enum isth_auth_impl impl;
	uint8_t (*m)[128];
	unsigned int n, ok;
};

static void *
thr_verify(void *p)
{
	struct thr_arg *t = p;
	struct isth_auth_engine *e;

	if (isth_auth_engine_create(t->a, t->impl, &e) != 0)
		return NULL;
	for (int rep = 0; rep < 50; rep++)
		for (unsigned int i = 0; i < t->n; i++)
			t->ok += isth_auth_verify(e, ISTH_AUTH_UP, 2, t->m[i], 72) == ISTH_AUTH_OK;
	isth_auth_engine_free(e);
	return NULL;
}

Test(auth, engines_share_a_handle_across_threads)
{
	enum { N = 64, T = 4 };
	static uint8_t m[N][128];
	struct isth_auth *a = load(KF_ONE, 42, 4);
	struct isth_auth_engine *e;
	struct thr_arg args[T];
	pthread_t th[T];

	cr_assert_eq(isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &e), 0);
	for (unsigned int i = 0; i < N; i++) {
		data_msg(m[i], 0);
		m[i][31] = (uint8_t)i;
		cr_assert_eq(isth_auth_seal(e, ISTH_AUTH_UP, 2, m[i], 56, 128), 72);
	}
	isth_auth_engine_free(e);
	for (int t = 0; t < T; t++) {
		args[t] = (struct thr_arg){.a = a, .impl = impls[t % 2], .m = m, .n = N};
		cr_assert_eq(pthread_create(&th[t], NULL, thr_verify, &args[t]), 0);
	}
	for (int t = 0; t < T; t++) {
		cr_assert_eq(pthread_join(th[t], NULL), 0);
		cr_assert_eq(args[t].ok, 50u * N, "thread %d: %u", t, args[t].ok);
	}
	isth_auth_free(a);
}

/* Mutated key files (bytes flipped, inserted, deleted, lines cut): the
 * loader never crashes and either loads or names the file in its error;
 * never leaks key digits into the message. A cheap fuzz in the unit suite
 * (the ASan build of scripts/test.sh runs it too). */
Test(auth, keyfile_mutations_never_crash)
{
	static const char good[] = "job 42\n# two epochs\nepoch 1 round 0 key " MASTER_HEX
				   "\nepoch 2 round 100 key " MASTER_HEX "\n";
	static const char alphabet[] = "job epoch round key 0123456789abcdefxyz#\n\t \r-";
	char text[512], err[256];
	unsigned int loaded = 0, refused = 0;

	for (int it = 0; it < 1500; it++) {
		size_t len = sizeof(good) - 1;
		int muts = 1 + (int)(rnd() % 4);
		const char *p;
		struct isth_auth_conf c = {.job = 42, .n_islands = 2};
		struct isth_auth *a = NULL;
		int r;

		memcpy(text, good, len);
		for (int k = 0; k < muts; k++) {
			size_t at = len ? rnd() % len : 0;

			switch (rnd() % 4) {
			case 0: /* replace */
				if (len)
					text[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
				break;
			case 1: /* insert */
				if (len + 1 < sizeof(text)) {
					memmove(text + at + 1, text + at, len - at);
					text[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
					len++;
				}
				break;
			case 2: /* delete */
				if (len) {
					memmove(text + at, text + at + 1, len - at - 1);
					len--;
				}
				break;
			default: /* cut */
				len = at;
				break;
			}
		}
		text[len] = '\0';
		p = keyfile(text, 0600);
		c.key_file = p;
		err[0] = '\0';
		r = isth_auth_create(&c, &a, err, sizeof(err));
		unlink(p);
		if (r == 0) {
			cr_assert_not_null(a);
			loaded++;
			isth_auth_free(a);
			continue;
		}
		refused++;
		cr_assert_null(a);
		cr_assert_eq(strncmp(err, p, strlen(p)), 0, "message '%s'", err);
		cr_assert_null(strstr(err, "0405060708090a0b"), "key in '%s'", err);
	}
	/* Both outcomes happened: the mutations reach past the first check. */
	cr_assert_gt(loaded, 0);
	cr_assert_gt(refused, 0);
}
