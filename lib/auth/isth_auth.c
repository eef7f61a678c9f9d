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

/* HKDF of @master with info = label || job (u32 BE) || epoch || @tail. */
static int
derive_info(const uint8_t master[ISTH_AUTH_KEY_SIZE], uint32_t job, uint8_t epoch,
	const uint8_t *tail, size_t tail_len, uint8_t out[ISTH_AUTH_KEY_SIZE])
{
	uint8_t info[sizeof(KDF_LABEL) - 1 + 5 + 3];
	size_t n = sizeof(KDF_LABEL) - 1;

	memcpy(info, KDF_LABEL, n);
	info[n++] = (uint8_t)(job >> 24);
	info[n++] = (uint8_t)(job >> 16);
	info[n++] = (uint8_t)(job >> 8);
	info[n++] = (uint8_t)job;
	info[n++] = epoch;
	memcpy(info + n, tail, tail_len);
	n += tail_len;
	return isth_auth_hkdf(master, ISTH_AUTH_KEY_SIZE, (const uint8_t *)KDF_SALT,
		sizeof(KDF_SALT) - 1, info, n, out, ISTH_AUTH_KEY_SIZE);
}

int
isth_auth_derive(const uint8_t master[ISTH_AUTH_KEY_SIZE], uint32_t job, uint8_t epoch,
	enum isth_auth_dir dir, unsigned int owner, uint8_t out[ISTH_AUTH_KEY_SIZE])
{
	const uint8_t tail[2] = {(uint8_t)dir, (uint8_t)owner};

	if (dir < ISTH_AUTH_UP || dir > ISTH_AUTH_WAN || owner >= ISTH_AUTH_MAX_ISLANDS)
		return -EINVAL;
	return derive_info(master, job, epoch, tail, sizeof(tail), out);
}

int
isth_auth_derive_pair(const uint8_t master[ISTH_AUTH_KEY_SIZE], uint32_t job, uint8_t epoch,
	unsigned int sender, unsigned int receiver, uint8_t out[ISTH_AUTH_KEY_SIZE])
{
	const uint8_t tail[3] = {(uint8_t)ISTH_AUTH_WAN_PAIR, (uint8_t)sender, (uint8_t)receiver};

	/* an edge never sends to itself: no key for the pair (s, s) */
	if (sender >= ISTH_AUTH_MAX_ISLANDS || receiver >= ISTH_AUTH_MAX_ISLANDS ||
		sender == receiver)
		return -EINVAL;
	return derive_info(master, job, epoch, tail, sizeof(tail), out);
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

struct kf {
	const char *path;
	unsigned int line; /* 0: an error about the whole file */
	char *err;
	size_t errlen;
	bool have_job;
	bool have_site;
	struct isth_auth_file *f; /* caller's; n_epochs counts epochs read */
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

/* 64 hex digits @v into @out; nothing after them on the line. */
static int
kf_hexkey(struct kf *k, char *v, char **save, uint8_t out[ISTH_AUTH_KEY_SIZE])
{
	size_t len = v == NULL ? 0 : strlen(v);

	if (len != 2 * ISTH_AUTH_KEY_SIZE)
		return kf_error(
			k, "key: expected %u hex digits, got %zu", 2 * ISTH_AUTH_KEY_SIZE, len);
	for (unsigned int i = 0; i < ISTH_AUTH_KEY_SIZE; i++) {
		int hi = hexval(v[2 * i]), lo = hexval(v[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			OPENSSL_cleanse(out, ISTH_AUTH_KEY_SIZE);
			/* Say where, never what: the digit is key material. */
			return kf_error(k, "key: non-hex digit at position %u",
				hi < 0 ? 2 * i + 1 : 2 * i + 2);
		}
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	if (strtok_r(NULL, " \t\r\n", save) != NULL) {
		OPENSSL_cleanse(out, ISTH_AUTH_KEY_SIZE);
		return kf_error(k, "key: unexpected text after the key");
	}
	return 0;
}

/* "job N" */
static int
kf_job(struct kf *k, char **save)
{
	char *v = strtok_r(NULL, " \t\r\n", save);
	uint64_t x;

	if (k->have_job)
		return kf_error(k, "job: given twice");
	if (k->f->n_epochs > 0)
		return kf_error(k, "job: must come before the first epoch");
	if (isth_text_parse_u64_range(v, 0, UINT32_MAX, &x) != 0)
		return kf_error(k, "job: expected a number 0..4294967295");
	if (strtok_r(NULL, " \t\r\n", save) != NULL)
		return kf_error(k, "job: unexpected text after the job id");
	k->have_job = true;
	k->f->job = (uint32_t)x;
	return 0;
}

/* "site island|edge I": a site file, between the job and the first epoch */
static int
kf_site(struct kf *k, char **save)
{
	char *v = strtok_r(NULL, " \t\r\n", save);
	uint64_t id;

	if (!k->have_job)
		return kf_error(k, "site: the job line must come first");
	if (k->have_site)
		return kf_error(k, "site: given twice");
	if (k->f->n_epochs > 0)
		return kf_error(k, "site: must come before the first epoch");
	if (v != NULL && strcmp(v, "island") == 0)
		k->f->site = ISTH_AUTH_SITE_ISLAND;
	else if (v != NULL && strcmp(v, "edge") == 0)
		k->f->site = ISTH_AUTH_SITE_EDGE;
	else
		return kf_error(k, "site: expected 'island' or 'edge'");
	v = strtok_r(NULL, " \t\r\n", save);
	if (isth_text_parse_u64_range(v, 0, ISTH_AUTH_MAX_ISLANDS - 1, &id) != 0)
		return kf_error(k, "site: expected an island id 0..%u", ISTH_AUTH_MAX_ISLANDS - 1);
	if (strtok_r(NULL, " \t\r\n", save) != NULL)
		return kf_error(k, "site: unexpected text after the island id");
	k->have_site = true;
	k->f->site_id = (unsigned int)id;
	return 0;
}

/* "epoch E round R key HEX" (job file) or "epoch E round R" (site file) */
static int
kf_epoch(struct kf *k, char **save)
{
	char *v = strtok_r(NULL, " \t\r\n", save);
	struct isth_auth_file *f = k->f;
	struct isth_auth_file_epoch *ep;
	uint64_t id, start;
	int rc;

	if (!k->have_job)
		return kf_error(k, "epoch: the job line must come first");
	if (f->n_epochs >= ISTH_AUTH_MAX_EPOCHS)
		return kf_error(k, "epoch: more than %u epochs", ISTH_AUTH_MAX_EPOCHS);
	if (isth_text_parse_u64_range(v, 0, 255, &id) != 0)
		return kf_error(k, "epoch: expected an epoch id 0..255");
	for (unsigned int i = 0; i < f->n_epochs; i++)
		if (f->ep[i].id == id)
			return kf_error(k, "epoch: epoch %u given twice", (unsigned int)id);
	v = strtok_r(NULL, " \t\r\n", save);
	if (v == NULL || strcmp(v, "round") != 0)
		return kf_error(k, "epoch: expected 'round' after the epoch id");
	v = strtok_r(NULL, " \t\r\n", save);
	if (isth_text_parse_u64_range(v, 0, UINT32_MAX, &start) != 0)
		return kf_error(k, "round: expected a round number 0..4294967295");
	if (f->n_epochs > 0 && start <= f->ep[f->n_epochs - 1].start)
		return kf_error(k, "round: must be above the previous epoch's (%u)",
			f->ep[f->n_epochs - 1].start);
	v = strtok_r(NULL, " \t\r\n", save);
	ep = &f->ep[f->n_epochs];
	if (k->have_site) {
		/* a site's keys follow on 'key' lines; a master key here would
		 * hand the site every other site's keys */
		if (v != NULL)
			return kf_error(k,
				"epoch: a site file's epoch holds no master key "
				"(its keys are on 'key' lines)");
	} else {
		if (v == NULL || strcmp(v, "key") != 0)
			return kf_error(k, "epoch: expected 'key' after the round");
		rc = kf_hexkey(k, strtok_r(NULL, " \t\r\n", save), save, ep->master);
		if (rc != 0)
			return rc;
	}
	ep->id = (uint8_t)id;
	ep->start = (uint32_t)start;
	f->n_epochs++;
	return 0;
}

/* "key pair S T HEX" (edge I: S == I, sealing; or T == I, verifying) */
static int
kf_key_pair(struct kf *k, struct isth_auth_file_epoch *ep, char **save)
{
	const struct isth_auth_file *f = k->f;
	uint64_t s, t, *have;
	uint8_t(*key)[ISTH_AUTH_KEY_SIZE];
	unsigned int o;
	int rc;

	if (f->site != ISTH_AUTH_SITE_EDGE)
		return kf_error(k, "key pair: an island's file holds no WAN key");
	if (isth_text_parse_u64_range(
		    strtok_r(NULL, " \t\r\n", save), 0, ISTH_AUTH_MAX_ISLANDS - 1, &s) != 0 ||
		isth_text_parse_u64_range(
			strtok_r(NULL, " \t\r\n", save), 0, ISTH_AUTH_MAX_ISLANDS - 1, &t) != 0)
		return kf_error(k, "key pair: expected a sender and a receiver edge 0..%u",
			ISTH_AUTH_MAX_ISLANDS - 1);
	if (s == t || (s != f->site_id && t != f->site_id))
		return kf_error(k,
			"key pair %u %u: edge %u's file holds only pairs from or to "
			"edge %u, sender != receiver",
			(unsigned int)s, (unsigned int)t, f->site_id, f->site_id);
	/* from this edge: it seals with it; to it: it verifies with it */
	have = s == f->site_id ? &ep->pair_out : &ep->pair_in;
	key = s == f->site_id ? ep->key_out : ep->key_in;
	o = (unsigned int)(s == f->site_id ? t : s);
	if ((*have >> o) & 1u)
		return kf_error(k, "key: given twice in epoch %u", ep->id);
	rc = kf_hexkey(k, strtok_r(NULL, " \t\r\n", save), save, key[o]);
	if (rc != 0)
		return rc;
	*have |= UINT64_C(1) << o;
	return 0;
}

/* "key up|down HEX" (a site's own), "key wan O HEX" (edge: owner O's),
 * "key pair S T HEX" (edge: kf_key_pair) */
static int
kf_key(struct kf *k, char **save)
{
	char *v = strtok_r(NULL, " \t\r\n", save);
	struct isth_auth_file *f = k->f;
	struct isth_auth_file_epoch *ep;
	unsigned int dir, owner = f->site_id;
	uint64_t o;
	int rc;

	if (!k->have_site)
		return kf_error(k,
			"key: only a site file has 'key' lines (the job file's "
			"keys are on its epoch lines)");
	if (f->n_epochs == 0)
		return kf_error(k, "key: comes before the first epoch line");
	ep = &f->ep[f->n_epochs - 1];
	if (v != NULL && strcmp(v, "up") == 0)
		dir = ISTH_AUTH_UP;
	else if (v != NULL && strcmp(v, "down") == 0)
		dir = ISTH_AUTH_DOWN;
	else if (v != NULL && strcmp(v, "wan") == 0)
		dir = ISTH_AUTH_WAN;
	else if (v != NULL && strcmp(v, "pair") == 0)
		return kf_key_pair(k, ep, save);
	else
		return kf_error(k, "key: expected 'up', 'down', 'wan' or 'pair'");
	if (dir == ISTH_AUTH_WAN) {
		if (f->site != ISTH_AUTH_SITE_EDGE)
			return kf_error(k, "key wan: an island's file holds no WAN key");
		v = strtok_r(NULL, " \t\r\n", save);
		if (isth_text_parse_u64_range(v, 0, ISTH_AUTH_MAX_ISLANDS - 1, &o) != 0)
			return kf_error(k, "key wan: expected an owner island 0..%u",
				ISTH_AUTH_MAX_ISLANDS - 1);
		owner = (unsigned int)o;
	}
	if ((ep->have[dir - 1] >> owner) & 1u)
		return kf_error(k, "key: given twice in epoch %u", ep->id);
	rc = kf_hexkey(k, strtok_r(NULL, " \t\r\n", save), save, ep->key[dir - 1][owner]);
	if (rc != 0)
		return rc;
	ep->have[dir - 1] |= UINT64_C(1) << owner;
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
	if (strcmp(kw, "site") == 0)
		return kf_site(k, &save);
	if (strcmp(kw, "epoch") == 0)
		return kf_epoch(k, &save);
	if (strcmp(kw, "key") == 0)
		return kf_key(k, &save);
	return kf_error(k, "unknown keyword (expected 'job', 'site', 'epoch' or 'key')");
}

/* Every epoch of a site file holds the site's own keys, UP and DOWN (an
 * edge's pairwise WAN keys are checked against the job's islands by
 * isth_auth_check_site()). */
static int
kf_check_site(struct kf *k)
{
	const struct isth_auth_file *f = k->f;
	uint64_t me = UINT64_C(1) << f->site_id;

	if (!k->have_site)
		return 0;
	for (unsigned int i = 0; i < f->n_epochs; i++) {
		const struct isth_auth_file_epoch *ep = &f->ep[i];

		if (!(ep->have[0] & me) || !(ep->have[1] & me))
			return kf_error(k, "epoch %u: needs 'key up' and 'key down'", ep->id);
	}
	return 0;
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
	if (k->f->n_epochs == 0)
		return kf_error(k, "no 'epoch' line: at least one key is needed");
	return kf_check_site(k);
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

int
isth_auth_file_read(const char *path, struct isth_auth_file *f, char *err, size_t errlen)
{
	struct kf k = {.path = path, .err = err, .errlen = errlen, .f = f};
	int ret;

	if (path == NULL || f == NULL)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	ret = kf_load(&k);
	if (ret != 0)
		isth_auth_file_wipe(f);
	return ret;
}

void
isth_auth_file_wipe(struct isth_auth_file *f)
{
	if (f != NULL)
		OPENSSL_cleanse(f, sizeof(*f));
}

/* ---- handle ------------------------------------------------------------ */

static const char *const site_names[] = {
	[ISTH_AUTH_SITE_JOB] = "job",
	[ISTH_AUTH_SITE_ISLAND] = "island",
	[ISTH_AUTH_SITE_EDGE] = "edge",
};

const char *
isth_auth_site_name(enum isth_auth_site s)
{
	return (unsigned int)s <= ISTH_AUTH_SITE_EDGE ? site_names[s] : "unknown";
}

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

/* The checks that need the job's conf: its id, its islands. */
static int
file_fits(
	const struct isth_auth_conf *conf, const struct isth_auth_file *f, char *err, size_t errlen)
{
	uint64_t all = conf->n_islands == 64 ? UINT64_MAX : (UINT64_C(1) << conf->n_islands) - 1;

	if (f->job != conf->job) {
		set_err(err, errlen, "%s: keys are for job %u, not job %u", conf->key_file, f->job,
			conf->job);
		return -EINVAL;
	}
	if (f->site == ISTH_AUTH_SITE_JOB)
		return 0;
	if (f->site_id >= conf->n_islands) {
		set_err(err, errlen, "%s: a file for %s %u, but the job has %u islands",
			conf->key_file, isth_auth_site_name(f->site), f->site_id, conf->n_islands);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < f->n_epochs; i++)
		if (((f->ep[i].have[2] | f->ep[i].pair_out | f->ep[i].pair_in) & ~all) != 0) {
			set_err(err, errlen,
				"%s: epoch %u: a 'key wan' owner or a 'key pair' edge is "
				"not below the job's %u islands",
				conf->key_file, f->ep[i].id, conf->n_islands);
			return -EINVAL;
		}
	return 0;
}

/* Key @i held: copied from @src (a site file's; NULL: derived into
 * a->raw[i] already) and expanded for ipsec-mb. Returns 0. */
static int
hold_key(struct isth_auth *a, size_t i, const uint8_t *src, IMB_MGR *mgr)
{
	if (src != NULL)
		memcpy(a->raw[i], src, ISTH_AUTH_KEY_SIZE);
	a->have[i] = 1;
	IMB_AES256_GCM_PRE(mgr, a->raw[i], &a->imb[i]);
	return 0;
}

/* Key @i of epoch slot @s, direction @d, owner @o, from the file: derived
 * from the master (job file) or copied (site file; absent: not held). */
static int
fill_key(struct isth_auth *a, const struct isth_auth_file *f, unsigned int s, unsigned int d,
	unsigned int o, IMB_MGR *mgr)
{
	size_t i = key_index(a, s, d, o);
	const struct isth_auth_file_epoch *ep = &f->ep[s];

	if (f->site == ISTH_AUTH_SITE_JOB) {
		if (isth_auth_derive(ep->master, f->job, ep->id, d, o, a->raw[i]) != 0)
			return -EIO;
		return hold_key(a, i, NULL, mgr);
	}
	return (ep->have[d - 1] >> o) & 1u ? hold_key(a, i, ep->key[d - 1][o], mgr) : 0;
}

/* Pair key K(slot @s, WAN_PAIR, @snd, @rcv) from the file, as fill_key(). */
static int
fill_pair(struct isth_auth *a, const struct isth_auth_file *f, unsigned int s, unsigned int snd,
	unsigned int rcv, IMB_MGR *mgr)
{
	size_t i = pair_index(a, s, snd, rcv);
	const struct isth_auth_file_epoch *ep = &f->ep[s];

	if (snd == rcv)
		return 0;
	if (f->site == ISTH_AUTH_SITE_JOB) {
		if (isth_auth_derive_pair(ep->master, f->job, ep->id, snd, rcv, a->raw[i]) != 0)
			return -EIO;
		return hold_key(a, i, NULL, mgr);
	}
	if (snd == f->site_id && ((ep->pair_out >> rcv) & 1u))
		return hold_key(a, i, ep->key_out[rcv], mgr);
	if (rcv == f->site_id && ((ep->pair_in >> snd) & 1u))
		return hold_key(a, i, ep->key_in[snd], mgr);
	return 0;
}

/* Every key of the file into @a: direction keys, then pairs. */
static int
fill_keys(struct isth_auth *a, const struct isth_auth_file *f, IMB_MGR *mgr)
{
	for (unsigned int s = 0; s < f->n_epochs; s++) {
		for (unsigned int d = ISTH_AUTH_UP; d <= ISTH_AUTH_WAN; d++)
			for (unsigned int o = 0; o < a->n_islands; o++)
				if (fill_key(a, f, s, d, o, mgr) != 0)
					return -EIO;
		for (unsigned int snd = 0; snd < a->n_islands; snd++)
			for (unsigned int rcv = 0; rcv < a->n_islands; rcv++)
				if (fill_pair(a, f, s, snd, rcv, mgr) != 0)
					return -EIO;
	}
	return 0;
}

static struct isth_auth *
handle_alloc(const struct isth_auth_file *f, uint32_t n_islands)
{
	struct isth_auth *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	a->job = f->job;
	a->site = f->site;
	a->site_id = f->site_id;
	a->n_islands = n_islands;
	a->n_epochs = f->n_epochs;
	memset(a->slot_of, -1, sizeof(a->slot_of));
	for (unsigned int i = 0; i < f->n_epochs; i++) {
		a->epoch_id[i] = f->ep[i].id;
		a->start[i] = f->ep[i].start;
		a->slot_of[f->ep[i].id] = (int8_t)i;
	}
	a->n_keys = (size_t)f->n_epochs * (3u + a->n_islands) * a->n_islands;
	a->raw = calloc(a->n_keys, sizeof(*a->raw));
	a->have = calloc(a->n_keys, sizeof(*a->have));
	a->imb = aligned_alloc(64, ((a->n_keys * sizeof(*a->imb) + 63) / 64) * 64);
	if (a->raw == NULL || a->have == NULL || a->imb == NULL) {
		isth_auth_free(a);
		return NULL;
	}
	memset(a->imb, 0, a->n_keys * sizeof(*a->imb));
	return a;
}

int
isth_auth_create(
	const struct isth_auth_conf *conf, struct isth_auth **out, char *err, size_t errlen)
{
	struct isth_auth_file *f = NULL;
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
	f = malloc(sizeof(*f));
	if (f == NULL) {
		set_err(err, errlen, "%s: out of memory", conf->key_file);
		return -ENOMEM;
	}
	ret = isth_auth_file_read(conf->key_file, f, err, errlen);
	if (ret == 0)
		ret = file_fits(conf, f, err, errlen);
	if (ret != 0)
		goto out;
	ret = -ENOMEM;
	a = handle_alloc(f, conf->n_islands);
	mgr = auth_imb_mgr();
	if (a == NULL || mgr == NULL)
		goto out;
	if (fill_keys(a, f, mgr) != 0) {
		set_err(err, errlen, "%s: key derivation failed", conf->key_file);
		ret = -EIO;
		goto out;
	}
	*out = a;
	a = NULL;
	ret = 0;
out:
	if (mgr != NULL)
		free_mb_mgr(mgr);
	isth_auth_file_wipe(f);
	free(f);
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
	free(a->have);
	OPENSSL_cleanse(a, sizeof(*a));
	free(a);
}

uint32_t
isth_auth_job(const struct isth_auth *a)
{
	return a->job;
}

enum isth_auth_site
isth_auth_site(const struct isth_auth *a, unsigned int *id)
{
	if (id != NULL)
		*id = a->site_id;
	return a->site;
}

bool
isth_auth_has_key(const struct isth_auth *a, enum isth_auth_dir dir, unsigned int owner)
{
	if (a == NULL || dir < ISTH_AUTH_UP || dir > ISTH_AUTH_WAN || owner >= a->n_islands)
		return false;
	for (unsigned int s = 0; s < a->n_epochs; s++)
		if (!a->have[key_index(a, s, dir, owner)])
			return false;
	return true;
}

bool
isth_auth_has_pair(const struct isth_auth *a, unsigned int sender, unsigned int receiver)
{
	if (a == NULL || sender >= a->n_islands || receiver >= a->n_islands || sender == receiver)
		return false;
	for (unsigned int s = 0; s < a->n_epochs; s++)
		if (!a->have[pair_index(a, s, sender, receiver)])
			return false;
	return true;
}

int
isth_auth_check_site(const struct isth_auth *a, enum isth_auth_site want, unsigned int id,
	const char *path, char *err, size_t errlen)
{
	if (a->site == ISTH_AUTH_SITE_JOB)
		return 0;
	if (a->site == want && a->site_id == id) {
		/* an edge seals a tag list for its peers and verifies its own
		 * tag in theirs: a file split for fewer islands than the job
		 * has (or before the WAN used pairwise keys) would refuse
		 * every such frame all run long; say so now */
		for (unsigned int o = 0; want == ISTH_AUTH_SITE_EDGE && o < a->n_islands; o++) {
			unsigned int s = o, t = id;

			if (o == id)
				continue;
			if (!isth_auth_has_pair(a, id, o)) {
				s = id;
				t = o;
			} else if (isth_auth_has_pair(a, o, id)) {
				continue;
			}
			set_err(err, errlen,
				"%s: holds no 'key pair %u %u' (the job has %u islands; "
				"was it split for fewer, or by an isthmus-keys without "
				"pairwise WAN keys?)",
				path, s, t, a->n_islands);
			return -EINVAL;
		}
		return 0;
	}
	set_err(err, errlen,
		"%s: the key file of %s %u, not of %s %u (isthmus-keys split "
		"writes one file per site)",
		path, isth_auth_site_name(a->site), a->site_id, isth_auth_site_name(want), id);
	return -EINVAL;
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
	if (!a->have[key_index(a, i, dir, owner)])
		return -ENOKEY;
	memcpy(out, a->raw[key_index(a, i, dir, owner)], ISTH_AUTH_KEY_SIZE);
	return 0;
}
