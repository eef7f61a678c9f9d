/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/auth: key file, key derivation, epochs. The tag engines are in
 * auth_engine.c, the replay window in auth_replay.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "auth_priv.h"
#include "isth_text.h"

static const char *const status_names[ISTH_AUTH_STATUS_MAX] = {
	[ISTH_AUTH_OK] = "ok",
	[ISTH_AUTH_E_FORMAT] = "auth_format",
	[ISTH_AUTH_E_KEY] = "auth_key",
	[ISTH_AUTH_E_EPOCH] = "auth_epoch",
	[ISTH_AUTH_E_TAG] = "auth_tag",
	[ISTH_AUTH_E_REPLAY] = "auth_replay",
	[ISTH_AUTH_E_STALE] = "auth_stale",
	[ISTH_AUTH_E_AHEAD] = "auth_ahead",
};

const char *
isth_auth_status_name(enum isth_auth_status s)
{
	if ((unsigned int)s >= ISTH_AUTH_STATUS_MAX)
		return "unknown";
	return status_names[s];
}

const char *
isth_auth_impl_name(enum isth_auth_impl impl)
{
	switch (impl) {
	case ISTH_AUTH_OPENSSL:
		return "openssl";
	case ISTH_AUTH_IPSEC_MB:
		return "ipsec-mb";
	}
	return "unknown";
}

/* ---- key derivation --------------------------------------------------- */

int
isth_auth_hkdf(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
	const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len)
{
	EVP_KDF *kdf;
	EVP_KDF_CTX *kctx = NULL;
	OSSL_PARAM p[5];
	int ret = -EIO;

	kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	if (kdf == NULL)
		return -EIO;
	kctx = EVP_KDF_CTX_new(kdf);
	EVP_KDF_free(kdf);
	if (kctx == NULL)
		return -EIO;
	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
	p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len);
	p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
	p[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
	p[4] = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(kctx, out, out_len, p) == 1)
		ret = 0;
	EVP_KDF_CTX_free(kctx);
	return ret;
}

#define KDF_SALT "isthmus/v2"
#define KDF_LABEL "isthmus/v2 gmac"

int
isth_auth_derive(const uint8_t master[ISTH_AUTH_KEY_SIZE], uint32_t job, uint8_t epoch,
	enum isth_auth_dir dir, unsigned int owner, uint8_t out[ISTH_AUTH_KEY_SIZE])
{
	uint8_t info[sizeof(KDF_LABEL) - 1 + 7];
	size_t n = sizeof(KDF_LABEL) - 1;

	if (dir < ISTH_AUTH_UP || dir > ISTH_AUTH_WAN || owner >= ISTH_AUTH_MAX_ISLANDS)
		return -EINVAL;
	memcpy(info, KDF_LABEL, n);
	info[n++] = (uint8_t)(job >> 24);
	info[n++] = (uint8_t)(job >> 16);
	info[n++] = (uint8_t)(job >> 8);
	info[n++] = (uint8_t)job;
	info[n++] = epoch;
	info[n++] = (uint8_t)dir;
	info[n++] = (uint8_t)owner;
	return isth_auth_hkdf(master, ISTH_AUTH_KEY_SIZE, (const uint8_t *)KDF_SALT,
		sizeof(KDF_SALT) - 1, info, n, out, ISTH_AUTH_KEY_SIZE);
}

/* ---- key file ---------------------------------------------------------- */

/*
 * The key file goes through lib/text for its lines (true line numbers, CRLF
 * read like LF, a byte-order mark skipped) and for its "file:line: msg"
 * errors, but it is not read by isth_text_read(): that opens the file by
 * name, whereas the mode and owner must be checked on the descriptor the
 * keys are then read from (a file swapped in between the check and the
 * read would defeat it), and its buffer grows by realloc() and is freed
 * unwiped when a file is refused, which would leave key text in the heap.
 * So kf_read() reads the checked descriptor into one buffer of the file's
 * size, wiped before it is freed on every path, and kf_parse() walks it
 * with isth_text_next().
 */

#define LINE_MAX_LEN 256 /* characters, newline included */

struct kf_epoch {
	uint8_t id;
	uint32_t start;
	uint8_t master[ISTH_AUTH_KEY_SIZE];
};

struct kf {
	const char *path;
	unsigned int line; /* 0: an error about the whole file */
	char *err;
	size_t errlen;
	bool have_job;
	uint32_t job;
	unsigned int n;
	struct kf_epoch ep[ISTH_AUTH_MAX_EPOCHS];
};

static int __attribute__((format(printf, 2, 3))) kf_error(struct kf *k, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return isth_text_seterr(k->err, k->errlen, k->path, k->line, 0, "%s", msg);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "job N" */
static int
kf_job(struct kf *k, char **save)
{
	char *v = strtok_r(NULL, " \t\r\n", save);
	uint64_t x;

	if (k->have_job)
		return kf_error(k, "job: given twice");
	if (k->n > 0)
		return kf_error(k, "job: must come before the first epoch");
	if (isth_text_parse_u64_range(v, 0, UINT32_MAX, &x) != 0)
		return kf_error(k, "job: expected a number 0..4294967295");
	if (strtok_r(NULL, " \t\r\n", save) != NULL)
		return kf_error(k, "job: unexpected text after the job id");
	k->have_job = true;
	k->job = (uint32_t)x;
	return 0;
}

/* "epoch E round R key HEX" */
static int
kf_epoch(struct kf *k, char **save)
{
	char *v = strtok_r(NULL, " \t\r\n", save);
	struct kf_epoch *ep;
	uint64_t id, start;
	size_t len;

	if (!k->have_job)
		return kf_error(k, "epoch: the job line must come first");
	if (k->n >= ISTH_AUTH_MAX_EPOCHS)
		return kf_error(k, "epoch: more than %u epochs", ISTH_AUTH_MAX_EPOCHS);
	if (isth_text_parse_u64_range(v, 0, 255, &id) != 0)
		return kf_error(k, "epoch: expected an epoch id 0..255");
	for (unsigned int i = 0; i < k->n; i++)
		if (k->ep[i].id == id)
			return kf_error(k, "epoch: epoch %u given twice", (unsigned int)id);
	v = strtok_r(NULL, " \t\r\n", save);
	if (v == NULL || strcmp(v, "round") != 0)
		return kf_error(k, "epoch: expected 'round' after the epoch id");
	v = strtok_r(NULL, " \t\r\n", save);
	if (isth_text_parse_u64_range(v, 0, UINT32_MAX, &start) != 0)
		return kf_error(k, "round: expected a round number 0..4294967295");
	if (k->n > 0 && start <= k->ep[k->n - 1].start)
		return kf_error(
			k, "round: must be above the previous epoch's (%u)", k->ep[k->n - 1].start);
	v = strtok_r(NULL, " \t\r\n", save);
	if (v == NULL || strcmp(v, "key") != 0)
		return kf_error(k, "epoch: expected 'key' after the round");
	v = strtok_r(NULL, " \t\r\n", save);
	len = v == NULL ? 0 : strlen(v);
	if (len != 2 * ISTH_AUTH_KEY_SIZE)
		return kf_error(
			k, "key: expected %u hex digits, got %zu", 2 * ISTH_AUTH_KEY_SIZE, len);
	ep = &k->ep[k->n];
	for (unsigned int i = 0; i < ISTH_AUTH_KEY_SIZE; i++) {
		int hi = hexval(v[2 * i]), lo = hexval(v[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			OPENSSL_cleanse(ep->master, sizeof(ep->master));
			/* Say where, never what: the digit is key material. */
			return kf_error(k, "key: non-hex digit at position %u",
				hi < 0 ? 2 * i + 1 : 2 * i + 2);
		}
		ep->master[i] = (uint8_t)(hi << 4 | lo);
	}
	if (strtok_r(NULL, " \t\r\n", save) != NULL) {
		OPENSSL_cleanse(ep->master, sizeof(ep->master));
		return kf_error(k, "key: unexpected text after the key");
	}
	ep->id = (uint8_t)id;
	ep->start = (uint32_t)start;
	k->n++;
	return 0;
}

static int
kf_line(struct kf *k, char *line)
{
	char *save = NULL, *kw;
	char *hash = strchr(line, '#');

	if (hash != NULL)
		*hash = '\0';
	kw = strtok_r(line, " \t\r\n", &save);
	if (kw == NULL)
		return 0;
	if (strcmp(kw, "job") == 0)
		return kf_job(k, &save);
	if (strcmp(kw, "epoch") == 0)
		return kf_epoch(k, &save);
	return kf_error(k, "unknown keyword (expected 'job' or 'epoch')");
}

/*
 * Open @path and check, on the descriptor, what must hold before a byte
 * is read: a regular file, owned by us or root, no group/other bits.
 * On success *fdp is the descriptor and *sizep the file's size.
 */
static int
kf_open(struct kf *k, int *fdp, size_t *sizep)
{
	struct stat st;
	int fd;

	fd = open(k->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;

		kf_error(k, "cannot open key file: %s", strerror(e));
		return -e;
	}
	if (fstat(fd, &st) != 0) {
		int e = errno;

		close(fd);
		kf_error(k, "cannot stat key file: %s", strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		kf_error(k, "not a regular file");
		return -EINVAL;
	}
	if ((st.st_mode & 077) != 0) {
		close(fd);
		kf_error(k,
			"mode %04o gives group or others access to the keys; "
			"refused (chmod 600)",
			(unsigned int)(st.st_mode & 07777));
		return -EACCES;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		close(fd);
		kf_error(k, "owned by uid %u, neither this user (%u) nor root; refused",
			(unsigned int)st.st_uid, (unsigned int)geteuid());
		return -EACCES;
	}
	*fdp = fd;
	*sizep = (size_t)st.st_size;
	return 0;
}

/*
 * Read the @size bytes of the checked descriptor @fd into *out
 * (NUL-terminated, @size + 1 bytes: the caller wipes and frees them, also
 * on error) and their number into *lenp. One allocation, no realloc(): no
 * copy of key text is left behind.
 */
static int
kf_read(struct kf *k, int fd, size_t size, char **out, size_t *lenp)
{
	size_t len = 0;
	ssize_t n = 0;
	char *buf, more;

	/* lib/text's limit for every text file */
	if (size > ISTH_TEXT_MAX_DEFAULT) {
		kf_error(k, "larger than %u bytes", ISTH_TEXT_MAX_DEFAULT);
		return -EFBIG;
	}
	buf = malloc(size + 1);
	if (buf == NULL) {
		kf_error(k, "out of memory");
		return -ENOMEM;
	}
	while (len < size) {
		n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (n >= 0 && len == size) {
		do
			n = read(fd, &more, 1);
		while (n < 0 && errno == EINTR);
	}
	buf[len] = '\0';
	*out = buf;
	*lenp = len;
	if (n < 0)
		return kf_error(k, "read error");
	/* the size was checked on this descriptor: a file that shrank or grew
	 * since is being rewritten, and half a file is not read as keys */
	if (len != size || n > 0)
		return kf_error(k, "changed while it was read");
	return 0;
}

/* Parse the @len bytes of @text, line by line (true line numbers). */
static int
kf_parse(struct kf *k, const char *text, size_t len)
{
	const char *nul = memchr(text, '\0', len), *s;
	unsigned int nul_line = 0;
	struct isth_text_lines it;
	char line[LINE_MAX_LEN + 1];
	size_t l;
	int ret = 0;

	/* the lines end at a NUL byte: the line that holds it is refused when
	 * every line before it has been read */
	if (nul != NULL) {
		nul_line = 1;
		for (const char *p = text; p < nul; p++)
			nul_line += *p == '\n';
	}
	isth_text_lines_init(&it, text);
	while (ret == 0 && isth_text_next(&it, &s, &l)) {
		k->line = it.line;
		if (k->line == nul_line)
			break;
		/* it.pos - s: the line as written, its "\n" or "\r\n" included */
		if ((size_t)(it.pos - s) > LINE_MAX_LEN) {
			ret = kf_error(k, "line longer than %d characters", LINE_MAX_LEN);
			break;
		}
		memcpy(line, s, l);
		line[l] = '\0';
		ret = kf_line(k, line);
	}
	OPENSSL_cleanse(line, sizeof(line));
	if (ret != 0)
		return ret;
	if (nul != NULL) {
		k->line = nul_line;
		return kf_error(k, "NUL byte in line");
	}
	k->line = 0;
	if (!k->have_job)
		return kf_error(k, "no 'job' line");
	if (k->n == 0)
		return kf_error(k, "no 'epoch' line: at least one key is needed");
	return 0;
}

static int
kf_load(struct kf *k)
{
	char *text = NULL;
	size_t size = 0, len = 0;
	int fd = -1, ret;

	ret = kf_open(k, &fd, &size);
	if (ret != 0)
		return ret;
	ret = kf_read(k, fd, size, &text, &len);
	close(fd);
	if (ret == 0)
		ret = kf_parse(k, text, len);
	if (text != NULL) {
		OPENSSL_cleanse(text, size + 1);
		free(text);
	}
	return ret;
}

/* ---- handle ------------------------------------------------------------ */

static void __attribute__((format(printf, 3, 4)))
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int
isth_auth_create(
	const struct isth_auth_conf *conf, struct isth_auth **out, char *err, size_t errlen)
{
	struct kf k = {0};
	struct isth_auth *a = NULL;
	IMB_MGR *mgr = NULL;
	int ret;

	if (conf == NULL || out == NULL || conf->key_file == NULL) {
		set_err(err, errlen, "%s", "auth: no key file given");
		return -EINVAL;
	}
	if (conf->n_islands == 0 || conf->n_islands > ISTH_AUTH_MAX_ISLANDS) {
		set_err(err, errlen, "%s: n_islands must be 1..64", conf->key_file);
		return -EINVAL;
	}
	k.path = conf->key_file;
	k.err = err;
	k.errlen = errlen;
	ret = kf_load(&k);
	if (ret != 0)
		goto out;
	if (k.job != conf->job) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: keys are for job %u, not job %u", conf->key_file,
				k.job, conf->job);
		ret = -EINVAL;
		goto out;
	}

	ret = -ENOMEM;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		goto out;
	a->job = k.job;
	a->n_islands = conf->n_islands;
	a->n_epochs = k.n;
	memset(a->slot_of, -1, sizeof(a->slot_of));
	for (unsigned int i = 0; i < k.n; i++) {
		a->epoch_id[i] = k.ep[i].id;
		a->start[i] = k.ep[i].start;
		a->slot_of[k.ep[i].id] = (int8_t)i;
	}
	a->n_keys = (size_t)k.n * 3u * a->n_islands;
	a->raw = calloc(a->n_keys, sizeof(*a->raw));
	a->imb = aligned_alloc(64, ((a->n_keys * sizeof(*a->imb) + 63) / 64) * 64);
	if (a->raw == NULL || a->imb == NULL)
		goto out;
	mgr = auth_imb_mgr();
	if (mgr == NULL)
		goto out;
	for (unsigned int s = 0; s < k.n; s++)
		for (unsigned int d = ISTH_AUTH_UP; d <= ISTH_AUTH_WAN; d++)
			for (unsigned int o = 0; o < a->n_islands; o++) {
				size_t i = key_index(a, s, d, o);

				if (isth_auth_derive(k.ep[s].master, k.job, k.ep[s].id, d, o,
					    a->raw[i]) != 0) {
					set_err(err, errlen, "%s: key derivation failed",
						conf->key_file);
					ret = -EIO;
					goto out;
				}
				IMB_AES256_GCM_PRE(mgr, a->raw[i], &a->imb[i]);
			}
	*out = a;
	a = NULL;
	ret = 0;
out:
	if (mgr != NULL)
		free_mb_mgr(mgr);
	OPENSSL_cleanse(&k, sizeof(k));
	isth_auth_free(a);
	return ret;
}

void
isth_auth_free(struct isth_auth *a)
{
	if (a == NULL)
		return;
	if (a->raw != NULL) {
		OPENSSL_cleanse(a->raw, a->n_keys * sizeof(*a->raw));
		free(a->raw);
	}
	if (a->imb != NULL) {
		OPENSSL_cleanse(a->imb, a->n_keys * sizeof(*a->imb));
		free(a->imb);
	}
	OPENSSL_cleanse(a, sizeof(*a));
	free(a);
}

uint32_t
isth_auth_job(const struct isth_auth *a)
{
	return a->job;
}

unsigned int
isth_auth_n_epochs(const struct isth_auth *a)
{
	return a->n_epochs;
}

int
isth_auth_epoch_info(
	const struct isth_auth *a, unsigned int i, uint8_t *epoch, uint32_t *start_round)
{
	if (i >= a->n_epochs)
		return -EINVAL;
	if (epoch != NULL)
		*epoch = a->epoch_id[i];
	if (start_round != NULL)
		*start_round = a->start[i];
	return 0;
}

int
isth_auth_epoch_of(const struct isth_auth *a, uint32_t round)
{
	int s = slot_of_round(a, round);

	return s < 0 ? -ENOKEY : a->epoch_id[s];
}

/* A device that computes tags (doc/fpga-interface.md 3.8) is given the
 * derived keys, never the master key; for its driver only. */
int
isth_auth_epoch_key(const struct isth_auth *a, unsigned int i, enum isth_auth_dir dir,
	unsigned int owner, uint8_t out[ISTH_AUTH_KEY_SIZE])
{
	if (a == NULL || i >= a->n_epochs || dir < ISTH_AUTH_UP || dir > ISTH_AUTH_WAN ||
		owner >= a->n_islands)
		return -EINVAL;
	memcpy(out, a->raw[key_index(a, i, dir, owner)], ISTH_AUTH_KEY_SIZE);
	return 0;
}
