/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/auth tag engines: AES-256-GMAC over a message's header and body,
 * through OpenSSL EVP or through intel-ipsec-mb's burst job API. Both are
 * driven by the same per-message checks (msg_prepare) so that the only
 * difference between them is who computes the 16 bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "auth_priv.h"

/* Jobs per ipsec-mb submission; also the unit the burst entry points
 * process at a time. */
#define BURST 32u

struct isth_auth_engine {
	const struct isth_auth *a; /* keys; outlives the engine */
	enum isth_auth_impl impl;
	IMB_MGR *mgr; /* ipsec-mb: this thread's manager */
	EVP_CIPHER_CTX **ctx; /* openssl: [n_keys], key set once */
	/* Scratch of one burst, written and read by the owning thread. */
	uint8_t iv[BURST][ISTH_AUTH_IV_SIZE];
	uint8_t tag[BURST][ISTH_AUTH_TAG_SIZE];
	size_t key[BURST];
	const uint8_t *src[BURST];
	uint64_t len[BURST];
	unsigned int op[BURST]; /* index into the caller's ops */
};

IMB_MGR *
auth_imb_mgr(void)
{
	IMB_MGR *mgr = alloc_mb_mgr(0);

	if (mgr == NULL)
		return NULL;
	init_mb_mgr_auto(mgr, NULL);
	if (imb_get_errno(mgr) != 0) {
		free_mb_mgr(mgr);
		return NULL;
	}
	return mgr;
}

/* A whole isthmus header (lib/wire layout) with the magic at @msg. */
static inline bool
is_isthmus_hdr(const uint8_t *msg, size_t len)
{
	return len >= ISTH_WIRE_HDR_SIZE &&
		(msg[ISTH_WIRE_OFF_MAGIC] << 8 | msg[ISTH_WIRE_OFF_MAGIC + 1]) == ISTH_WIRE_MAGIC;
}

/* ---- the two implementations: n tags into out[] -------------------- */

static int
ossl_gmac(EVP_CIPHER_CTX *ctx, const uint8_t *iv, const uint8_t *src, size_t len, uint8_t *tag)
{
	uint8_t none[16];
	int outl;

	if (EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv) != 1)
		return -EIO;
	/* AAD in pieces below INT_MAX (a message is at most 64 KiB). */
	if (len > 0 && EVP_EncryptUpdate(ctx, NULL, &outl, src, (int)len) != 1)
		return -EIO;
	if (EVP_EncryptFinal_ex(ctx, none, &outl) != 1)
		return -EIO;
	if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, ISTH_AUTH_TAG_SIZE, tag) != 1)
		return -EIO;
	return 0;
}

static EVP_CIPHER_CTX *
ossl_ctx_new(const uint8_t key[ISTH_AUTH_KEY_SIZE])
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

	if (ctx == NULL)
		return NULL;
	if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
		EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, ISTH_AUTH_IV_SIZE, NULL) != 1 ||
		EVP_EncryptInit_ex(ctx, NULL, NULL, key, NULL) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static void
imb_fill(IMB_JOB *job, const struct gcm_key_data *kd, const uint8_t *iv, const uint8_t *src,
	uint64_t len, uint8_t *tag, unsigned int i)
{
	job->cipher_mode = IMB_CIPHER_NULL;
	job->cipher_direction = IMB_DIR_ENCRYPT;
	job->chain_order = IMB_ORDER_HASH_CIPHER;
	job->hash_alg = IMB_AUTH_AES_GMAC_256;
	job->src = src;
	job->dst = NULL;
	job->cipher_start_src_offset_in_bytes = 0;
	job->msg_len_to_cipher_in_bytes = 0;
	job->hash_start_src_offset_in_bytes = 0;
	job->msg_len_to_hash_in_bytes = len;
	job->u.GMAC._key = kd;
	job->u.GMAC._iv = iv;
	job->u.GMAC.iv_len_in_bytes = ISTH_AUTH_IV_SIZE;
	job->auth_tag_output = tag;
	job->auth_tag_output_len_in_bytes = ISTH_AUTH_TAG_SIZE;
	job->user_data = (void *)(uintptr_t)i;
}

/*
 * n <= BURST GMAC jobs on one manager. Returns a bitmask of the jobs that
 * completed; a job the library refused (it validates each one) is left
 * out, so its message is refused, never accepted.
 */
static uint64_t
imb_run(IMB_MGR *mgr, unsigned int n, const struct gcm_key_data *const *kd,
	uint8_t (*iv)[ISTH_AUTH_IV_SIZE], const uint8_t *const *src, const uint64_t *len,
	uint8_t (*tag)[ISTH_AUTH_TAG_SIZE])
{
	IMB_JOB *jobs[BURST];
	uint64_t done = 0;
	unsigned int got, c, total = 0;

	got = IMB_GET_NEXT_BURST(mgr, n, jobs);
	if (got < n) {
		/* The queue still holds someone's jobs: drain and retry. */
		IMB_FLUSH_BURST(mgr, BURST, jobs);
		got = IMB_GET_NEXT_BURST(mgr, n, jobs);
		if (got < n)
			return 0;
	}
	for (unsigned int i = 0; i < n; i++)
		imb_fill(jobs[i], kd[i], iv[i], src[i], len[i], tag[i], i);
	c = IMB_SUBMIT_BURST(mgr, n, jobs);
	for (;;) {
		for (unsigned int j = 0; j < c; j++)
			if (jobs[j]->status == IMB_STATUS_COMPLETED)
				done |= UINT64_C(1) << (uintptr_t)jobs[j]->user_data;
		total += c;
		if (total >= n || c == 0)
			break;
		c = IMB_FLUSH_BURST(mgr, n - total, jobs);
	}
	return done;
}

/* Tags of the e->key/iv/src/len scratch entries [0, n) into out[].
 * Returns the bitmask of entries whose tag was computed. */
static uint64_t
compute(struct isth_auth_engine *e, unsigned int n, uint8_t (*out)[ISTH_AUTH_TAG_SIZE])
{
	const struct gcm_key_data *kd[BURST];
	uint64_t done = 0;

	if (n == 0)
		return 0;
	if (e->impl == ISTH_AUTH_OPENSSL) {
		for (unsigned int i = 0; i < n; i++)
			if (ossl_gmac(e->ctx[e->key[i]], e->iv[i], e->src[i], e->len[i], out[i]) ==
				0)
				done |= UINT64_C(1) << i;
		return done;
	}
	for (unsigned int i = 0; i < n; i++)
		kd[i] = &e->a->imb[e->key[i]];
	return imb_run(e->mgr, n, kd, e->iv, e->src, e->len, out);
}

/* ---- engine ------------------------------------------------------------ */

int
isth_auth_engine_create(
	const struct isth_auth *a, enum isth_auth_impl impl, struct isth_auth_engine **out)
{
	struct isth_auth_engine *e;

	if (a == NULL || out == NULL || (impl != ISTH_AUTH_OPENSSL && impl != ISTH_AUTH_IPSEC_MB))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	e->a = a;
	e->impl = impl;
	if (impl == ISTH_AUTH_IPSEC_MB) {
		e->mgr = auth_imb_mgr();
		if (e->mgr == NULL)
			goto fail;
	} else {
		e->ctx = calloc(a->n_keys, sizeof(*e->ctx));
		if (e->ctx == NULL)
			goto fail;
		for (size_t i = 0; i < a->n_keys; i++) {
			if (!a->have[i])
				continue; /* never used: stage_*() refuse the key */
			e->ctx[i] = ossl_ctx_new(a->raw[i]);
			if (e->ctx[i] == NULL)
				goto fail;
		}
	}
	*out = e;
	return 0;
fail:
	isth_auth_engine_free(e);
	return -ENOMEM;
}

void
isth_auth_engine_free(struct isth_auth_engine *e)
{
	if (e == NULL)
		return;
	if (e->mgr != NULL)
		free_mb_mgr(e->mgr);
	if (e->ctx != NULL) {
		for (size_t i = 0; i < e->a->n_keys; i++)
			EVP_CIPHER_CTX_free(e->ctx[i]);
		free(e->ctx);
	}
	OPENSSL_cleanse(e, sizeof(*e));
	free(e);
}

enum isth_auth_impl
isth_auth_engine_impl(const struct isth_auth_engine *e)
{
	return e->impl;
}

/* ---- per-message checks -------------------------------------------------- */

/*
 * Verify side: check the v2 framing, the epoch and the key of one
 * message, and stage it as scratch entry @i. Returns OK or the reason.
 */
static enum isth_auth_status
stage_verify(struct isth_auth_engine *e, unsigned int i, unsigned int dir, unsigned int owner,
	const uint8_t *msg, size_t len)
{
	const struct isth_auth *a = e->a;
	int slot;

	if (len < ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE || !is_isthmus_hdr(msg, len) ||
		msg[ISTH_WIRE_OFF_VERSION] != ISTH_AUTH_VERSION ||
		!(isth_wire_get_flags(msg) & ISTH_WIRE_F_AUTH) ||
		msg[ISTH_WIRE_OFF_TRAILER] != ISTH_AUTH_TAG_SIZE)
		return ISTH_AUTH_E_FORMAT;
	if (dir < ISTH_AUTH_UP || dir > ISTH_AUTH_WAN || owner >= a->n_islands)
		return ISTH_AUTH_E_KEY;
	slot = a->slot_of[msg[ISTH_AUTH_OFF_EPOCH]];
	if (slot < 0 || slot != slot_of_round(a, isth_wire_get_hdr_round(msg)))
		return ISTH_AUTH_E_EPOCH;
	e->key[i] = key_index(a, (unsigned int)slot, dir, owner);
	if (!a->have[e->key[i]])
		return ISTH_AUTH_E_KEY; /* another site's key: this file lacks it */
	isth_auth_iv(msg, e->iv[i]);
	e->src[i] = msg;
	e->len[i] = len - ISTH_AUTH_TAG_SIZE;
	return ISTH_AUTH_OK;
}

/* Seal side: write version, AUTH, trailer_len and epoch; stage entry @i. */
static int
stage_seal(struct isth_auth_engine *e, unsigned int i, unsigned int dir, unsigned int owner,
	uint8_t *msg, size_t len, size_t cap)
{
	const struct isth_auth *a = e->a;
	int slot;

	if (!is_isthmus_hdr(msg, len) || dir < ISTH_AUTH_UP || dir > ISTH_AUTH_WAN ||
		owner >= a->n_islands)
		return -EINVAL;
	if (cap < len + ISTH_AUTH_TAG_SIZE || len + ISTH_AUTH_TAG_SIZE > 65507)
		return -ENOSPC;
	slot = slot_of_round(a, isth_wire_get_hdr_round(msg));
	if (slot < 0)
		return -ENOKEY;
	e->key[i] = key_index(a, (unsigned int)slot, dir, owner);
	if (!a->have[e->key[i]])
		return -EPERM; /* another site's key: this file lacks it */
	msg[ISTH_WIRE_OFF_VERSION] = ISTH_AUTH_VERSION;
	isth_wire_or_flags(msg, ISTH_WIRE_F_AUTH);
	msg[ISTH_WIRE_OFF_TRAILER] = ISTH_AUTH_TAG_SIZE;
	msg[ISTH_AUTH_OFF_EPOCH] = a->epoch_id[slot];
	isth_auth_iv(msg, e->iv[i]);
	e->src[i] = msg;
	e->len[i] = len;
	return 0;
}

/* ---- entry points ---------------------------------------------------------- */

unsigned int
isth_auth_verify_burst(struct isth_auth_engine *e, struct isth_auth_op *ops, unsigned int n)
{
	unsigned int ok = 0;

	for (unsigned int base = 0; base < n; base += BURST) {
		unsigned int m = n - base < BURST ? n - base : BURST, k = 0;
		uint64_t done;

		for (unsigned int j = 0; j < m; j++) {
			struct isth_auth_op *op = &ops[base + j];
			enum isth_auth_status s;

			s = stage_verify(e, k, op->dir, op->owner, op->msg, op->len);
			op->status = (int16_t)s;
			if (s == ISTH_AUTH_OK)
				e->op[k++] = base + j;
		}
		done = compute(e, k, e->tag);
		for (unsigned int j = 0; j < k; j++) {
			struct isth_auth_op *op = &ops[e->op[j]];
			const uint8_t *want = op->msg + e->len[j];

			if (!((done >> j) & 1u) ||
				CRYPTO_memcmp(e->tag[j], want, ISTH_AUTH_TAG_SIZE) != 0)
				op->status = ISTH_AUTH_E_TAG;
			else
				ok++;
		}
	}
	return ok;
}

enum isth_auth_status
isth_auth_verify(struct isth_auth_engine *e, enum isth_auth_dir dir, unsigned int owner,
	const uint8_t *msg, size_t len)
{
	struct isth_auth_op op = {
		.msg = (uint8_t *)(uintptr_t)msg,
		.len = (uint32_t)len,
		.dir = (uint8_t)dir,
		.owner = (uint8_t)owner,
	};

	if (len > UINT32_MAX || owner > UINT8_MAX)
		return len > UINT32_MAX ? ISTH_AUTH_E_FORMAT : ISTH_AUTH_E_KEY;
	isth_auth_verify_burst(e, &op, 1);
	return (enum isth_auth_status)op.status;
}

unsigned int
isth_auth_seal_burst(struct isth_auth_engine *e, struct isth_auth_op *ops, unsigned int n)
{
	uint8_t(*tags)[ISTH_AUTH_TAG_SIZE] = e->tag;
	unsigned int sealed = 0;

	for (unsigned int base = 0; base < n; base += BURST) {
		unsigned int m = n - base < BURST ? n - base : BURST, k = 0;
		uint64_t done;

		for (unsigned int j = 0; j < m; j++) {
			struct isth_auth_op *op = &ops[base + j];
			int r = stage_seal(e, k, op->dir, op->owner, op->msg, op->len, op->cap);

			op->status = (int16_t)r;
			if (r == 0)
				e->op[k++] = base + j;
		}
		done = compute(e, k, tags);
		for (unsigned int j = 0; j < k; j++) {
			struct isth_auth_op *op = &ops[e->op[j]];

			if (!((done >> j) & 1u)) {
				op->status = -EIO;
				continue;
			}
			memcpy(op->msg + op->len, tags[j], ISTH_AUTH_TAG_SIZE);
			op->len += ISTH_AUTH_TAG_SIZE;
			sealed++;
		}
	}
	return sealed;
}

int
isth_auth_seal(struct isth_auth_engine *e, enum isth_auth_dir dir, unsigned int owner, uint8_t *msg,
	size_t len, size_t cap)
{
	struct isth_auth_op op = {
		.msg = msg,
		.len = (uint32_t)len,
		.cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap,
		.dir = (uint8_t)dir,
		.owner = (uint8_t)owner,
	};

	if (len > UINT32_MAX || owner > UINT8_MAX)
		return -EINVAL;
	isth_auth_seal_burst(e, &op, 1);
	return op.status < 0 ? op.status : (int)op.len;
}

/* ---- raw primitive ---------------------------------------------------------- */

int
isth_auth_gmac_raw(enum isth_auth_impl impl, const uint8_t key[ISTH_AUTH_KEY_SIZE],
	const uint8_t iv[ISTH_AUTH_IV_SIZE], const void *aad, size_t len,
	uint8_t tag[ISTH_AUTH_TAG_SIZE])
{
	int ret = -EIO;

	if (impl == ISTH_AUTH_OPENSSL) {
		EVP_CIPHER_CTX *ctx;

		if (len > INT32_MAX)
			return -EINVAL;
		ctx = ossl_ctx_new(key);
		if (ctx == NULL)
			return -ENOMEM;
		ret = ossl_gmac(ctx, iv, aad, len, tag);
		EVP_CIPHER_CTX_free(ctx);
		return ret;
	}
	if (impl == ISTH_AUTH_IPSEC_MB) {
		IMB_MGR *mgr = auth_imb_mgr();
		struct gcm_key_data *kd;
		uint8_t ivb[1][ISTH_AUTH_IV_SIZE];
		uint8_t out[1][ISTH_AUTH_TAG_SIZE];
		const uint8_t *src = aad;
		uint64_t l = len;

		if (mgr == NULL)
			return -ENOTSUP;
		kd = aligned_alloc(64, ((sizeof(*kd) + 63) / 64) * 64);
		if (kd == NULL) {
			free_mb_mgr(mgr);
			return -ENOMEM;
		}
		IMB_AES256_GCM_PRE(mgr, key, kd);
		memcpy(ivb[0], iv, ISTH_AUTH_IV_SIZE);
		if (imb_run(mgr, 1, (const struct gcm_key_data *const *)&kd, ivb, &src, &l, out) ==
			1) {
			memcpy(tag, out[0], ISTH_AUTH_TAG_SIZE);
			ret = 0;
		}
		OPENSSL_cleanse(kd, sizeof(*kd));
		free(kd);
		free_mb_mgr(mgr);
		return ret;
	}
	return -EINVAL;
}
