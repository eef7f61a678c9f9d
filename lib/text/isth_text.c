/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one text reader and the one size parser (isth_text.h). Messages name
 * the file and line because the people who read them fix the file by hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isth_text.h"

static const char bom[] = "\xEF\xBB\xBF";

int
isth_text_seterr(char *err, size_t errlen, const char *file, unsigned int line, unsigned int col,
	const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	if (err == NULL || errlen == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (file == NULL)
		file = "<input>";
	if (line && col)
		snprintf(err, errlen, "%s:%u:%u: %s", file, line, col, msg);
	else if (line)
		snprintf(err, errlen, "%s:%u: %s", file, line, msg);
	else
		snprintf(err, errlen, "%s: %s", file, msg);
	return -EINVAL;
}

/* errno-preserving failure exit of isth_text_read() */
static char *
read_fail(int fd, char *buf, int e)
{
	if (fd >= 0)
		close(fd);
	free(buf);
	errno = e;
	return NULL;
}

char *
isth_text_read(const char *path, size_t max_bytes, size_t *lenp, char *err, size_t errlen)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nul;
	struct stat st;
	int fd;

	if (path == NULL) {
		isth_text_seterr(err, errlen, "<input>", 0, 0, "no file name");
		errno = EINVAL;
		return NULL;
	}
	if (max_bytes == 0)
		max_bytes = ISTH_TEXT_MAX_DEFAULT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		isth_text_seterr(err, errlen, path, 0, 0, "%s", strerror(e));
		return read_fail(-1, NULL, e);
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;

		isth_text_seterr(err, errlen, path, 0, 0, "%s", strerror(e));
		return read_fail(fd, NULL, e);
	}
	/* open(2) succeeds on a directory and read(2) then fails with EISDIR:
	 * say what is wrong instead of "empty file" or a bare errno */
	if (S_ISDIR(st.st_mode)) {
		isth_text_seterr(err, errlen, path, 0, 0, "is a directory, not a file");
		return read_fail(fd, NULL, EISDIR);
	}
	/* pipes and character devices report no size: read until EOF */
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb;

			if (ncap > max_bytes + 4097)
				ncap = max_bytes + 4097;
			nb = realloc(buf, ncap);
			if (nb == NULL) {
				isth_text_seterr(err, errlen, path, 0, 0, "out of memory");
				return read_fail(fd, buf, ENOMEM);
			}
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			isth_text_seterr(err, errlen, path, 0, 0, "read error: %s", strerror(e));
			return read_fail(fd, buf, e);
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max_bytes) {
			isth_text_seterr(
				err, errlen, path, 0, 0, "larger than %zu bytes", max_bytes);
			return read_fail(fd, buf, EFBIG);
		}
	}
	close(fd);
	buf[len] = '\0';
	nul = memchr(buf, '\0', len);
	if (nul != NULL) {
		unsigned int line = 1;
		const char *p;

		for (p = buf; p < nul; p++)
			line += *p == '\n';
		isth_text_seterr(err, errlen, path, line, 0, "binary file (NUL byte)");
		return read_fail(-1, buf, EINVAL);
	}
	if (len >= 3 && memcmp(buf, bom, 3) == 0) {
		memmove(buf, buf + 3, len - 3 + 1);
		len -= 3;
	}
	if (lenp)
		*lenp = len;
	return buf;
}

void
isth_text_lines_init(struct isth_text_lines *it, const char *text)
{
	if (text != NULL && strncmp(text, bom, 3) == 0)
		text += 3;
	it->pos = text;
	it->line = 0;
}

int
isth_text_next(struct isth_text_lines *it, const char **s, size_t *len)
{
	const char *p = it->pos, *nl;
	size_t l;

	if (p == NULL || *p == '\0') {
		it->pos = NULL;
		return 0;
	}
	nl = strchr(p, '\n');
	l = nl ? (size_t)(nl - p) : strlen(p);
	it->pos = nl ? nl + 1 : p + l;
	it->line++;
	*s = p;
	/* CRLF files (written on Windows) read like LF ones */
	*len = (l > 0 && p[l - 1] == '\r') ? l - 1 : l;
	return 1;
}

int
isth_text_next_copy(struct isth_text_lines *it, char *buf, size_t size)
{
	const char *s;
	size_t l;

	if (!isth_text_next(it, &s, &l))
		return 0;
	if (l >= size)
		return -E2BIG;
	memcpy(buf, s, l);
	buf[l] = '\0';
	return 1;
}

void
isth_text_strip_comment(char *line, char c)
{
	char *h = strchr(line, c);

	if (h != NULL)
		*h = '\0';
}

static int
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

char *
isth_text_trim(char *s)
{
	char *e;

	while (is_blank(*s))
		s++;
	e = s + strlen(s);
	while (e > s && is_blank(e[-1]))
		*--e = '\0';
	return s;
}

int
isth_text_tokens(char *line, char **tok, int max)
{
	char *save = NULL, *p;
	int n = 0;

	for (p = strtok_r(line, " \t\r", &save); p != NULL; p = strtok_r(NULL, " \t\r", &save)) {
		if (n == max)
			return max + 1;
		tok[n++] = p;
	}
	return n;
}

bool
isth_text_valid_name(const char *s, size_t size)
{
	size_t l;

	if (s == NULL)
		return false;
	l = strlen(s);
	if (l == 0 || l >= size)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			    (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

int
isth_text_parse_u64_prefix(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (s == NULL || out == NULL || !(*p >= '0' && *p <= '9'))
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned int dgt = (unsigned int)(*p - '0');

		if (v > (UINT64_MAX - dgt) / 10)
			return -ERANGE;
		v = v * 10 + dgt;
	}
	if (end != NULL)
		*end = p;
	*out = v;
	return 0;
}

/* A number parsed by @prefix that must be the whole of @s. */
static int
parse_whole(int (*prefix)(const char *, const char **, uint64_t *), const char *s, uint64_t *out)
{
	const char *end;
	uint64_t v;
	int rc = prefix(s, &end, &v);

	if (rc < 0)
		return rc;
	if (*end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

int
isth_text_parse_u64(const char *s, uint64_t *out)
{
	return parse_whole(isth_text_parse_u64_prefix, s, out);
}

int
isth_text_parse_u64_range(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int rc = isth_text_parse_u64(s, &v);

	if (rc < 0)
		return rc;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int
isth_text_parse_hex_prefix(const char *s, const char **end, uint64_t *out)
{
	const char *p;
	uint64_t v = 0;

	if (s == NULL || out == NULL)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (p = s;; p++) {
		unsigned int dgt;

		if (*p >= '0' && *p <= '9')
			dgt = (unsigned int)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			dgt = (unsigned int)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			dgt = (unsigned int)(*p - 'A' + 10);
		else
			break;
		if (v >> 60)
			return -ERANGE;
		v = v << 4 | dgt;
	}
	if (p == s)
		return -EINVAL;
	if (end != NULL)
		*end = p;
	*out = v;
	return 0;
}

int
isth_text_parse_u64_or_hex(const char *s, uint64_t *out)
{
	if (s == NULL || out == NULL)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return parse_whole(isth_text_parse_hex_prefix, s, out);
	return isth_text_parse_u64(s, out);
}

int
isth_text_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suf;
		uint64_t mult;
	} sufs[] = {
		/* longest first: "Ki" before "K" */
		{"Ki", 1ull << 10},
		{"Mi", 1ull << 20},
		{"Gi", 1ull << 30},
		{"Ti", 1ull << 40},
		{"K", 1000ull},
		{"M", 1000000ull},
		{"G", 1000000000ull},
		{"T", 1000000000000ull},
		{"", 1},
	};
	unsigned __int128 v = 0, frac = 0, den = 1, total;
	const char *p = s;
	int nint = 0, nfrac = 0;
	size_t i, l;

	if (s == NULL || out == NULL)
		return -EINVAL;
	/* digits only: no sign, blank, hex, exponent, inf or nan gets past here */
	for (; *p >= '0' && *p <= '9'; p++, nint++) {
		v = v * 10 + (unsigned)(*p - '0');
		if (v > UINT64_MAX)
			return -EINVAL;
	}
	if (nint == 0)
		return -EINVAL;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, nfrac++) {
			if (nfrac == 18) /* finer than any suffix can make whole */
				return -EINVAL;
			frac = frac * 10 + (unsigned)(*p - '0');
			den *= 10;
		}
		if (nfrac == 0)
			return -EINVAL;
	}
	for (i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++) {
		l = strlen(sufs[i].suf);
		if (strncmp(p, sufs[i].suf, l) != 0)
			continue;
		if (strcmp(p + l, "") != 0 && strcmp(p + l, "B") != 0)
			continue;
		/* v < 2^64 and mult <= 2^40, so the products fit in 128 bits */
		if ((frac * sufs[i].mult) % den != 0)
			return -EINVAL; /* not a whole number of bytes */
		total = v * sufs[i].mult + frac * sufs[i].mult / den;
		if (total > UINT64_MAX)
			return -EINVAL;
		*out = (uint64_t)total;
		return 0;
	}
	return -EINVAL;
}
