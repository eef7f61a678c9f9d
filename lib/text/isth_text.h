/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file isth_text.h
 * Reading the text files people write by hand (configs, schedules,
 * topologies, site maps), and the one size convention of the project.
 *
 * Every reader in the tree goes through this module so that they all
 * refuse the same things the same way: a directory or a binary file is
 * refused, a UTF-8 byte-order mark is stripped, CRLF line ends are read as
 * LF, and every error reads "file:line[:column]: message".
 *
 * Sizes (isth_text_parse_size()): a non-negative decimal number of bytes,
 * optionally with a fraction and one suffix: K, M, G, T = 1000^1..4 (SI),
 * Ki, Mi, Gi, Ti = 1024^1..4 (IEC), optionally followed by "B". So 32G is
 * 32 x 10^9 bytes and 32Gi is 32 x 2^30. doc/contributing.md states the
 * convention.
 *
 * EAL-free plain C, no global state: thread-safe.
 */
#ifndef ISTH_TEXT_H
#define ISTH_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest file isth_text_read() accepts when asked for the default (0). */
#define ISTH_TEXT_MAX_DEFAULT (64u << 20)

/**
 * Read the whole file @p path into a NUL-terminated buffer (free() it).
 * A leading UTF-8 byte-order mark is removed. Refuses a directory
 * (EISDIR), a file larger than @p max_bytes (0: ISTH_TEXT_MAX_DEFAULT;
 * EFBIG) and a file holding a NUL byte (EINVAL, with the line of the byte).
 * An empty file is returned as "" (callers decide whether that is an error).
 * @param len  receives the length without the NUL (may be NULL)
 * @param err  receives "path: reason" or "path:line: reason" (may be NULL)
 * @return the text, or NULL with errno set.
 */
char *isth_text_read(const char *path, size_t max_bytes, size_t *len, char *err, size_t errlen);

/** Iterator over the lines of a NUL-terminated text. */
struct isth_text_lines {
	const char *pos; /**< next unread byte; NULL when done */
	unsigned int line; /**< 1-based number of the line last returned */
};

/** Start iterating @p text; a leading UTF-8 byte-order mark is skipped. */
void isth_text_lines_init(struct isth_text_lines *it, const char *text);

/**
 * Next line, without its "\n" or "\r\n": @p *s points into the text (not
 * NUL-terminated), @p *len is its length. A last line without a final
 * newline is returned like the others; an empty text has no lines.
 * @return 1, or 0 at the end.
 */
int isth_text_next(struct isth_text_lines *it, const char **s, size_t *len);

/**
 * Same as isth_text_next() but copies the line NUL-terminated into @p buf.
 * @return 1, 0 at the end, or -E2BIG if the line does not fit in @p size
 *         (it->line is then the number of the overlong line, which is skipped).
 */
int isth_text_next_copy(struct isth_text_lines *it, char *buf, size_t size);

/** Cut @p line at the first @p c (a comment character). */
void isth_text_strip_comment(char *line, char c);

/** Remove leading and trailing blanks (space, tab, CR, LF) in place; returns the start. */
char *isth_text_trim(char *s);

/**
 * Split @p line in place at runs of blanks (space, tab, CR) into at most
 * @p max tokens.
 * @return the number of tokens, or max + 1 if there are more than @p max.
 */
int isth_text_tokens(char *line, char **tok, int max);

/**
 * Write "file:line:col: msg" into @p err (":col" left out when @p col is 0,
 * ":line" too when @p line is 0). Does nothing if @p err is NULL or
 * @p errlen 0.
 * @return -EINVAL, so that `return isth_text_seterr(...)` reads naturally.
 */
int isth_text_seterr(char *err, size_t errlen, const char *file, unsigned int line,
	unsigned int col, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/**
 * True if @p s is a usable name for a site, island or region: 1 to
 * @p size - 1 characters of [A-Za-z0-9_.-].
 */
bool isth_text_valid_name(const char *s, size_t size);

/**
 * Parse a size in bytes (convention above). Refuses an empty string,
 * blanks, a sign, exponents, inf/nan, hexadecimal, an unknown suffix,
 * trailing characters, a value that is not a whole number of bytes
 * (1.5 or 1.0001K) and anything above UINT64_MAX.
 * @return 0, or -EINVAL (and @p out untouched).
 */
int isth_text_parse_size(const char *s, uint64_t *out);

/**
 * The project's one unsigned integer parser: decimal digits only, the
 * whole of @p s. No sign, blank, "0x" or exponent; a leading zero is not
 * octal ("010" is ten). Every command-line and file reader of counts,
 * ports, ids and seconds uses it, so that they all read the same way.
 * @return 0, -EINVAL (not a number) or -ERANGE (above UINT64_MAX);
 *         @p out untouched on error.
 */
int isth_text_parse_u64(const char *s, uint64_t *out);

/**
 * Same as isth_text_parse_u64() but stops at the first non-digit and
 * stores its address in @p end (a number followed by a unit: "5ms").
 * @return 0, -EINVAL (no digit at @p s) or -ERANGE.
 */
int isth_text_parse_u64_prefix(const char *s, const char **end, uint64_t *out);

/** isth_text_parse_u64() within [@p min, @p max]: -ERANGE outside. */
int isth_text_parse_u64_range(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/**
 * Hexadecimal digits (either case, at most 16 significant ones), an
 * optional leading "0x"/"0X", up to the first non-hex-digit, whose address
 * goes to @p end. For the few fields written in hex (clique bitmaps, ids):
 * no sign, no blank.
 * @return 0, -EINVAL (no hex digit) or -ERANGE (above UINT64_MAX).
 */
int isth_text_parse_hex_prefix(const char *s, const char **end, uint64_t *out);

/**
 * A number that may be written in hex: decimal as isth_text_parse_u64()
 * ("010" is ten), or hex after an explicit "0x"/"0X" (never a bare leading
 * zero), the whole of @p s. The one reader of the fields documented as
 * "decimal or 0x hex" (schedule-file bitmaps, [isthmusd] job, inject's
 * --bitmap). @return 0, -EINVAL or -ERANGE.
 */
int isth_text_parse_u64_or_hex(const char *s, uint64_t *out);

/** What isth_text_parse_size() accepts, for error messages. */
#define ISTH_TEXT_SIZE_HELP \
	"bytes, optionally with K/M/G/T (x1000^n) or Ki/Mi/Gi/Ti (x1024^n), e.g. 32G, 64Mi"

#ifdef __cplusplus
}
#endif

#endif /* ISTH_TEXT_H */
