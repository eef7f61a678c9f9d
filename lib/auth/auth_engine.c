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
	uint8_t *out[BURST]; /* where entry i's tag is written */
	const uint8_t *want[BURST]; /* verify: the tag entry i must match */
	unsigned int op[BURST]; /* index into the caller's ops */
	/* seal: the ops staged in the scratch, each with its entries
	 * [first, first + k) (k tags of a WAN tag list, else 1) */
	struct {
		unsigned int op, first, k, tlen;
	} pend[BURST];
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
	uint8_t *const *tag)
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

/* Tags of the e->key/iv/src/len scratch entries [0, n) into e->out[i].
 * Returns the bitmask of entries whose tag was computed. */
static uint64_t
compute(struct isth_auth_engine *e, unsigned int n)
{
	uint8_t *const *out = e->out;

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
	return imb_run(e->mgr, n, kd, e->iv, e->src, e->len, e->out);
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

static inline unsigned int
popcount64(uint64_t v)
{
	return (unsigned int)__builtin_popcountll(v);
}

static inline uint64_t
get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* Trailer size of a well-formed WAN tag list at the end of @msg (version
 * 2, AUTH, trailer_len 8 + 16k, k = the bitmap's bits, 1..15), else 0. */
static size_t
list_trailer(const uint8_t *msg, size_t len, uint64_t *bitmap)
{
	size_t tl;

	if (!is_isthmus_hdr(msg, len) || msg[ISTH_WIRE_OFF_VERSION] != ISTH_AUTH_VERSION ||
		!(isth_wire_get_flags(msg) & ISTH_WIRE_F_AUTH))
		return 0;
	tl = msg[ISTH_WIRE_OFF_TRAILER];
	if (tl < isth_auth_list_size(1) || (tl - ISTH_AUTH_LIST_HDR) % ISTH_AUTH_TAG_SIZE != 0 ||
		len < ISTH_WIRE_HDR_SIZE + tl)
		return 0;
	*bitmap = get_be64(msg + len - tl);
	if (popcount64(*bitmap) != (tl - ISTH_AUTH_LIST_HDR) / ISTH_AUTH_TAG_SIZE)
		return 0;
	return tl;
}

/*
 * Verify side of a WAN tag list: stage receiver @peers' own tag (the one
 * at its rank among the bitmap's receivers) as scratch entry @i.
 */
static enum isth_auth_status
stage_verify_list(struct isth_auth_engine *e, unsigned int i, unsigned int sender, uint64_t peers,
	const uint8_t *msg, size_t len)
{
	const struct isth_auth *a = e->a;
	uint64_t bitmap = 0;
	size_t tl = list_trailer(msg, len, &bitmap);
	unsigned int receiver;
	int slot;

	if (tl == 0)
		return ISTH_AUTH_E_FORMAT;
	if (popcount64(peers) != 1 || sender >= a->n_islands)
		return ISTH_AUTH_E_KEY;
	receiver = (unsigned int)__builtin_ctzll(peers);
	/* not addressed to this receiver: no tag of its key in the list */
	if (receiver >= a->n_islands || !(bitmap & peers))
		return ISTH_AUTH_E_KEY;
	slot = a->slot_of[msg[ISTH_AUTH_OFF_EPOCH]];
	if (slot < 0 || slot != slot_of_round(a, isth_wire_get_hdr_round(msg)))
		return ISTH_AUTH_E_EPOCH;
	e->key[i] = pair_index(a, (unsigned int)slot, sender, receiver);
	if (!a->have[e->key[i]])
		return ISTH_AUTH_E_KEY;
	isth_auth_iv(msg, e->iv[i]);
	e->src[i] = msg;
	e->len[i] = len - tl;
	e->out[i] = e->tag[i];
	e->want[i] = msg + len - tl + ISTH_AUTH_LIST_HDR +
		(size_t)popcount64(bitmap & (peers - 1)) * ISTH_AUTH_TAG_SIZE;
	return ISTH_AUTH_OK;
}

/*
 * Verify side: check the v2 framing, the epoch and the key of one
 * message, and stage it as scratch entry @i. Returns OK or the reason.
 */
static enum isth_auth_status
stage_verify(struct isth_auth_engine *e, unsigned int i, const struct isth_auth_op *op)
{
	const struct isth_auth *a = e->a;
	unsigned int dir = op->dir, owner = op->owner;
	const uint8_t *msg = op->msg;
	size_t len = op->len;
	int slot;

	if (dir == ISTH_AUTH_WAN_PAIR)
		return stage_verify_list(e, i, owner, op->peers, msg, len);
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
	e->out[i] = e->tag[i];
	e->want[i] = msg + len - ISTH_AUTH_TAG_SIZE;
	return ISTH_AUTH_OK;
}

/* Seal side of a WAN tag list: check every receiver's key before the
 * message is touched, then write the header fields and the bitmap and
 * stage one entry per receiver from @i on. Returns the entries or -errno. */
static int
stage_seal_list(struct isth_auth_engine *e, unsigned int i, const struct isth_auth_op *op)
{
	const struct isth_auth *a = e->a;
	unsigned int k = popcount64(op->peers), j = 0;
	uint64_t all = a->n_islands == 64 ? UINT64_MAX : (UINT64_C(1) << a->n_islands) - 1;
	uint8_t *msg = op->msg;
	size_t len = op->len, tl = isth_auth_list_size(k);
	int slot;

	if (!is_isthmus_hdr(msg, len) || k == 0 || k > ISTH_AUTH_MAX_TAGS ||
		op->owner >= a->n_islands || (op->peers & ~all) != 0 ||
		((op->peers >> op->owner) & 1u))
		return -EINVAL;
	if (op->cap < len + tl || len + tl > 65507)
		return -ENOSPC;
	slot = slot_of_round(a, isth_wire_get_hdr_round(msg));
	if (slot < 0)
		return -ENOKEY;
	for (uint64_t r = op->peers; r != 0; r &= r - 1)
		if (!a->have[pair_index(
			    a, (unsigned int)slot, op->owner, (unsigned int)__builtin_ctzll(r))])
			return -EPERM; /* another edge's pair: this file lacks it */
	msg[ISTH_WIRE_OFF_VERSION] = ISTH_AUTH_VERSION;
	isth_wire_or_flags(msg, ISTH_WIRE_F_AUTH);
	msg[ISTH_WIRE_OFF_TRAILER] = (uint8_t)tl;
	msg[ISTH_AUTH_OFF_EPOCH] = a->epoch_id[slot];
	for (int b = 0; b < 8; b++)
		msg[len + (size_t)b] = (uint8_t)(op->peers >> (56 - 8 * b));
	for (uint64_t r = op->peers; r != 0; r &= r - 1, j++) {
		e->key[i + j] = pair_index(
			a, (unsigned int)slot, op->owner, (unsigned int)__builtin_ctzll(r));
		isth_auth_iv(msg, e->iv[i + j]);
		e->src[i + j] = msg;
		e->len[i + j] = len;
		e->out[i + j] = msg + len + ISTH_AUTH_LIST_HDR + (size_t)j * ISTH_AUTH_TAG_SIZE;
	}
	return (int)k;
}

/* Seal side: write version, AUTH, trailer_len and epoch; stage entry @i
 * (a tag list: entries @i..). Returns the entries staged or -errno. */
static int
stage_seal(struct isth_auth_engine *e, unsigned int i, const struct isth_auth_op *op)
{
	const struct isth_auth *a = e->a;
	unsigned int dir = op->dir, owner = op->owner;
	uint8_t *msg = op->msg;
	size_t len = op->len;
	int slot;

	if (dir == ISTH_AUTH_WAN_PAIR)
		return stage_seal_list(e, i, op);
	if (!is_isthmus_hdr(msg, len) || dir < ISTH_AUTH_UP || dir > ISTH_AUTH_WAN ||
		owner >= a->n_islands)
		return -EINVAL;
	if (op->cap < len + ISTH_AUTH_TAG_SIZE || len + ISTH_AUTH_TAG_SIZE > 65507)
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
	e->out[i] = msg + len;
	return 1;
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

			s = stage_verify(e, k, op);
			op->status = (int16_t)s;
			if (s == ISTH_AUTH_OK)
				e->op[k++] = base + j;
		}
		done = compute(e, k);
		for (unsigned int j = 0; j < k; j++) {
			struct isth_auth_op *op = &ops[e->op[j]];

			if (!((done >> j) & 1u) ||
				CRYPTO_memcmp(e->tag[j], e->want[j], ISTH_AUTH_TAG_SIZE) != 0)
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

/* Compute the @used staged entries of the @np staged ops; an op is
 * sealed when every one of its tags was computed. Returns how many. */
static unsigned int
seal_flush(struct isth_auth_engine *e, struct isth_auth_op *ops, unsigned int used, unsigned int np)
{
	uint64_t done = compute(e, used);
	unsigned int sealed = 0;

	for (unsigned int p = 0; p < np; p++) {
		struct isth_auth_op *op = &ops[e->pend[p].op];
		uint64_t mask = ((UINT64_C(1) << e->pend[p].k) - 1) << e->pend[p].first;

		if ((done & mask) != mask) {
			op->status = -EIO;
			continue;
		}
		op->len += e->pend[p].tlen;
		sealed++;
	}
	return sealed;
}

unsigned int
isth_auth_seal_burst(struct isth_auth_engine *e, struct isth_auth_op *ops, unsigned int n)
{
	unsigned int sealed = 0, used = 0, np = 0;

	for (unsigned int j = 0; j < n; j++) {
		struct isth_auth_op *op = &ops[j];
		unsigned int need = op->dir == ISTH_AUTH_WAN_PAIR ? popcount64(op->peers) : 1;
		int r;

		/* the scratch holds BURST tags: a tag list that would not fit
		 * in what is left goes into the next submission */
		if (need <= ISTH_AUTH_MAX_TAGS && used + need > BURST) {
			sealed += seal_flush(e, ops, used, np);
			used = np = 0;
		}
		r = stage_seal(e, used, op);
		op->status = (int16_t)(r < 0 ? r : 0);
		if (r <= 0)
			continue;
		e->pend[np].op = j;
		e->pend[np].first = used;
		e->pend[np].k = (unsigned int)r;
		e->pend[np].tlen = op->dir == ISTH_AUTH_WAN_PAIR
			? (unsigned int)isth_auth_list_size((unsigned int)r)
			: ISTH_AUTH_TAG_SIZE;
		used += (unsigned int)r;
		np++;
	}
	return sealed + seal_flush(e, ops, used, np);
}

int
isth_auth_seal_list(struct isth_auth_engine *e, unsigned int sender, uint64_t receivers,
	uint8_t *msg, size_t len, size_t cap)
{
	struct isth_auth_op op = {
		.msg = msg,
		.len = (uint32_t)len,
		.cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap,
		.dir = ISTH_AUTH_WAN_PAIR,
		.owner = (uint8_t)sender,
		.peers = receivers,
	};

	if (len > UINT32_MAX || sender > UINT8_MAX)
		return -EINVAL;
	isth_auth_seal_burst(e, &op, 1);
	return op.status < 0 ? op.status : (int)op.len;
}

enum isth_auth_status
isth_auth_verify_list(struct isth_auth_engine *e, unsigned int sender, unsigned int receiver,
	const uint8_t *msg, size_t len)
{
	struct isth_auth_op op = {
		.msg = (uint8_t *)(uintptr_t)msg,
		.len = (uint32_t)len,
		.dir = ISTH_AUTH_WAN_PAIR,
		.owner = (uint8_t)sender,
		.peers = receiver < 64 ? UINT64_C(1) << receiver : 0,
	};

	if (len > UINT32_MAX || sender > UINT8_MAX)
		return len > UINT32_MAX ? ISTH_AUTH_E_FORMAT : ISTH_AUTH_E_KEY;
	isth_auth_verify_burst(e, &op, 1);
	return (enum isth_auth_status)op.status;
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
		uint8_t *outp = out[0];
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
		if (imb_run(mgr, 1, (const struct gcm_key_data *const *)&kd, ivb, &src, &l,
			    &outp) == 1) {
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
