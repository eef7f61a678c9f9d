/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_CONF_H
#define ISTH_CONF_H

/**
 * @file
 * INI configuration files whose every error names file, line and key.
 *
 * Grammar (one per line; leading/trailing blanks ignored):
 *
 *     # comment             ; comment
 *     [section]             [section name]     (a named section, e.g. [peer NYC])
 *     key = value           value runs to end of line; a trailing
 *                           " # comment" is stripped; no quoting
 *
 * A file is parsed whole first (syntax errors stop there); the caller then
 * reads typed values with the getters below, and finally calls
 * isth_conf_check_unused() so that a misspelt key or section is an error
 * rather than silently ignored. A key may appear once per section.
 *
 * Not for the data path: control-plane only, not thread-safe per handle.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct isth_conf;

/** Longest message isth_conf_error() returns, including the NUL. */
#define ISTH_CONF_ERR_SIZE 512

/**
 * Parse a file. On failure returns NULL, sets errno, and writes
 * "file:line: reason" into @p err (may be NULL).
 */
struct isth_conf *isth_conf_load(const char *path, char *err, size_t err_size);

/** Parse text held in memory; @p name stands for the file name in errors. */
struct isth_conf *isth_conf_parse(const char *text, const char *name, char *err, size_t err_size);

/** Free a handle; NULL is fine. */
void isth_conf_free(struct isth_conf *c);

/** The message of the last failed getter ("file:line: [sec] key: ..."). */
const char *isth_conf_error(const struct isth_conf *c);

/** True if @p section exists (it is then marked used). */
bool isth_conf_has_section(struct isth_conf *c, const char *section);

/** True if @p key is set in @p section. Does not mark it used. */
bool isth_conf_has(const struct isth_conf *c, const char *section, const char *key);

/**
 * Names of sections of the form "[@p kind NAME]": stores up to @p max
 * pointers to the NAME parts (owned by @p c) in file order.
 * @return number of such sections (may exceed @p max).
 */
unsigned int
isth_conf_sections(struct isth_conf *c, const char *kind, const char **names, unsigned int max);

/** Line of @p key in @p section, or of the section header if key is NULL; 0 if absent. */
unsigned int isth_conf_line(const struct isth_conf *c, const char *section, const char *key);

/*
 * Typed getters. Each returns 0 and stores the value; if the key is absent
 * it stores @p def and returns 0, unless @p required, when it returns
 * -ENOENT. A value that does not parse or is out of [min, max] returns
 * -EINVAL. Every failure sets the error message with file, line and key.
 */

/**
 * Unsigned integer: decimal (lib/text's isth_text_parse_u64(): a leading
 * zero is not octal, "010" is ten), or hex after an explicit "0x" (ids
 * such as the job). Durations, rates and sizes below are decimal only.
 */
int isth_conf_u64(struct isth_conf *c, const char *section, const char *key, bool required,
	uint64_t def, uint64_t min, uint64_t max, uint64_t *out);

/** A size in bytes as isth_text_parse_size() reads it: plain, or with K/M/G/T (x1000^k) or Ki/Mi/Gi/Ti (x1024^k). */
int isth_conf_size(struct isth_conf *c, const char *section, const char *key, bool required,
	uint64_t def, uint64_t min, uint64_t max, uint64_t *out);

/** A duration in ns: a number with unit ns, us, ms or s (unit required). */
int isth_conf_duration(struct isth_conf *c, const char *section, const char *key, bool required,
	uint64_t def, uint64_t min, uint64_t max, uint64_t *out);

/** A rate in bits/s: a number with unit bps, Kbps, Mbps, Gbps (x1000^k). */
int isth_conf_rate(struct isth_conf *c, const char *section, const char *key, bool required,
	uint64_t def, uint64_t min, uint64_t max, uint64_t *out);

/** true/false, yes/no, on/off, 1/0. */
int isth_conf_bool(struct isth_conf *c, const char *section, const char *key, bool required,
	bool def, bool *out);

/** A string; the pointer is owned by @p c. */
int isth_conf_str(struct isth_conf *c, const char *section, const char *key, bool required,
	const char *def, const char **out);

/** One of @p names (NULL-terminated); stores the index. */
int isth_conf_enum(struct isth_conf *c, const char *section, const char *key, bool required,
	unsigned int def, const char *const *names, unsigned int *out);

/** Dotted-quad IPv4 address, stored in host byte order. */
int isth_conf_ipv4(struct isth_conf *c, const char *section, const char *key, bool required,
	uint32_t def, uint32_t *out);

/** MAC address aa:bb:cc:dd:ee:ff. @p def may be NULL (all zero). */
int isth_conf_mac(struct isth_conf *c, const char *section, const char *key, bool required,
	const uint8_t *def, uint8_t out[6]);

/**
 * Record a caller-detected error against a key ("file:line: [sec] key: msg").
 * @return -EINVAL, for `return isth_conf_fail(...)`.
 */
int isth_conf_fail(struct isth_conf *c, const char *section, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/**
 * After all getters: fail with the first key or section never read
 * ("file:line: unknown key 'x' in [sec]").
 * @return 0 or -EINVAL.
 */
int isth_conf_check_unused(struct isth_conf *c);

/**
 * A key a getter was asked for, recorded while isth_conf_record() is on:
 * the reader's own description of its keys (isthmusd --config-keys prints
 * it, and doc/operator.md is checked against it).
 */
struct isth_conf_key {
	const char *section; /**< as the getter was given it; owned by the handle */
	const char *key; /**< owned by the handle */
	/** the getter: u64, size, duration, rate, bool, str, enum, ipv4, mac */
	const char *type;
	bool required; /**< asked for as required (then def is unused) */
	/** the default as text: decimal (duration: ns, size: bytes, rate:
	 * bit/s), true/false, the enum's name, a dotted quad, a MAC; "" none */
	char def[64];
	bool ranged; /**< min and max apply (u64, size, duration, rate) */
	uint64_t min, max;
	/** enum: its names, '|'-separated ("edge|network"); "" otherwise */
	char choices[128];
};

/**
 * Record (@p on) or stop recording every key the getters are asked for,
 * whether set in the file or not. A key asked for again keeps its first
 * record. Not for the data path: allocates.
 */
void isth_conf_record(struct isth_conf *c, bool on);

/**
 * The keys recorded so far, in the order first asked (@p keys points into
 * @p c, valid until it is freed).
 * @return their number, or -ENOMEM if recording ran out of memory.
 */
int isth_conf_schema(const struct isth_conf *c, const struct isth_conf_key **keys);

/** Parse a duration string as isth_conf_duration() does. */
int isth_conf_parse_duration(const char *s, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_CONF_H */
