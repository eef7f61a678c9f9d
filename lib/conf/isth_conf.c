/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The parser keeps every entry with its line so that any later complaint,
 * by a getter or by the caller's own validation, can point at the source.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isth_conf.h"
#include "isth_text.h"

struct conf_entry {
	char *section; /* "" before the first section header */
	char *key; /* NULL: a section header */
	char *value;
	unsigned int line;
	bool used;
};

struct isth_conf {
	char *name;
	struct conf_entry *entries;
	unsigned int n_entries;
	unsigned int cap;
	char err[ISTH_CONF_ERR_SIZE];
	/* isth_conf_record(): the keys asked for (schema[0..n_schema)) */
	bool recording;
	bool schema_nomem; /* a record was lost: isth_conf_schema() fails */
	struct isth_conf_key *schema;
	unsigned int n_schema;
	unsigned int schema_cap;
};

static int
add_entry(struct isth_conf *c, const char *sec, const char *key, const char *val, unsigned int line)
{
	struct conf_entry *e;

	if (c->n_entries == c->cap) {
		unsigned int ncap = c->cap ? c->cap * 2 : 32;

		e = realloc(c->entries, ncap * sizeof(*e));
		if (e == NULL)
			return -ENOMEM;
		c->entries = e;
		c->cap = ncap;
	}
	e = &c->entries[c->n_entries];
	memset(e, 0, sizeof(*e));
	e->section = strdup(sec);
	e->key = key ? strdup(key) : NULL;
	e->value = val ? strdup(val) : NULL;
	e->line = line;
	if (e->section == NULL || (key && !e->key) || (val && !e->value)) {
		free(e->section);
		free(e->key);
		free(e->value);
		return -ENOMEM;
	}
	c->n_entries++;
	return 0;
}

static struct conf_entry *
find(const struct isth_conf *c, const char *sec, const char *key)
{
	unsigned int i;

	for (i = 0; i < c->n_entries; i++) {
		struct conf_entry *e = &c->entries[i];

		if (strcmp(e->section, sec) != 0)
			continue;
		if (key == NULL ? e->key == NULL : (e->key != NULL && strcmp(e->key, key) == 0))
			return e;
	}
	return NULL;
}

/* Normalise "[ peer   NYC ]" to "peer NYC". */
static void
squeeze(char *s)
{
	char *r = s, *w = s;
	bool blank = false;

	for (; *r; r++) {
		if (isspace((unsigned char)*r)) {
			blank = true;
			continue;
		}
		if (blank && w != s)
			*w++ = ' ';
		blank = false;
		*w++ = *r;
	}
	*w = '\0';
}

/*
 * A "[name]" line (@s trimmed, written on): the normalised name goes to
 * @section. 0, -EINVAL (@err written) or -ENOMEM.
 */
static int
read_section(struct isth_conf *c, char *s, char *section, size_t size, unsigned int line, char *err,
	size_t err_size)
{
	char *end = strchr(s, ']');
	char *rest = end ? isth_text_trim(end + 1) : NULL;
	const struct conf_entry *first;

	/* "[section]   # comment" is fine */
	if (end == NULL || (rest[0] != '\0' && rest[0] != '#' && rest[0] != ';'))
		return isth_text_seterr(err, err_size, c->name, line, 0,
			"section header must be '[name]' alone on its line");
	*end = '\0';
	s = isth_text_trim(s + 1);
	squeeze(s);
	if (*s == '\0' || strlen(s) >= size)
		return isth_text_seterr(
			err, err_size, c->name, line, 0, "empty or overlong section name");
	first = find(c, s, NULL);
	if (first != NULL)
		return isth_text_seterr(err, err_size, c->name, line, 0,
			"section [%s] repeated (first at line %u)", s, first->line);
	strcpy(section, s);
	return add_entry(c, section, NULL, NULL, line);
}

/*
 * A "key = value" line (@s trimmed, written on) in @section ("" before
 * the first header). 0, -EINVAL (@err written) or -ENOMEM.
 */
static int
read_key(struct isth_conf *c, char *s, const char *section, unsigned int line, char *err,
	size_t err_size)
{
	const struct conf_entry *dup;
	char *eq = strchr(s, '='), *hash, *key, *val;

	if (eq == NULL)
		return isth_text_seterr(err, err_size, c->name, line, 0,
			"expected 'key = value', '[section]' or a comment");
	*eq = '\0';
	/* " # comment" after a value; '#' inside a value is kept */
	hash = strstr(eq + 1, " #");
	if (hash)
		*hash = '\0';
	key = isth_text_trim(s);
	val = isth_text_trim(eq + 1);
	if (*key == '\0')
		return isth_text_seterr(err, err_size, c->name, line, 0, "empty key");
	if (section[0] == '\0')
		return isth_text_seterr(
			err, err_size, c->name, line, 0, "key '%s' outside any [section]", key);
	dup = find(c, section, key);
	if (dup != NULL)
		return isth_text_seterr(err, err_size, c->name, line, 0,
			"[%s] %s set twice (first at line %u)", section, key, dup->line);
	return add_entry(c, section, key, val, line);
}

struct isth_conf *
isth_conf_parse(const char *text, const char *name, char *err, size_t err_size)
{
	char section[256] = "";
	struct isth_conf *c;
	struct isth_text_lines it;
	unsigned int line = 0;
	const char *p;
	size_t len;
	char *buf = NULL;
	int rc = -ENOMEM;

	if (text == NULL || name == NULL) {
		isth_text_seterr(err, err_size, name ? name : "?", 0, 0, "no input");
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto fail;
	c->name = strdup(name);
	if (c->name == NULL)
		goto free_conf;

	isth_text_lines_init(&it, text);
	while (isth_text_next(&it, &p, &len)) {
		char *s;

		line = it.line;
		free(buf);
		buf = strndup(p, len);
		if (buf == NULL)
			goto free_conf;
		/* Before trimming: isth_text_trim() writes a NUL over trailing
		 * whitespace, which must not read as a NUL byte of the file. */
		if (memchr(p, '\0', len) != NULL) {
			rc = isth_text_seterr(err, err_size, name, line, 0, "NUL byte in line");
			goto free_conf;
		}
		s = isth_text_trim(buf);
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		if (*s == '[')
			rc = read_section(c, s, section, sizeof(section), line, err, err_size);
		else
			rc = read_key(c, s, section, line, err, err_size);
		if (rc)
			goto free_conf;
	}
	free(buf);
	return c;

free_conf:
	free(buf);
	if (rc == -ENOMEM)
		isth_text_seterr(err, err_size, name, line, 0, "out of memory");
	isth_conf_free(c);
	errno = -rc;
	return NULL;
fail:
	isth_text_seterr(err, err_size, name, 0, 0, "out of memory");
	errno = ENOMEM;
	return NULL;
}

struct isth_conf *
isth_conf_load(const char *path, char *err, size_t err_size)
{
	struct isth_conf *c;
	char *text;
	int e;

	/* configuration files are small: 16 MiB is a mistake, not a config */
	text = isth_text_read(path, 16u << 20, NULL, err, err_size);
	if (text == NULL)
		return NULL;
	c = isth_conf_parse(text, path, err, err_size);
	e = errno;
	free(text);
	errno = e;
	return c;
}

void
isth_conf_free(struct isth_conf *c)
{
	unsigned int i;

	if (c == NULL)
		return;
	for (i = 0; i < c->n_entries; i++) {
		free(c->entries[i].section);
		free(c->entries[i].key);
		free(c->entries[i].value);
	}
	for (i = 0; i < c->n_schema; i++) {
		free((char *)c->schema[i].section);
		free((char *)c->schema[i].key);
	}
	free(c->schema);
	free(c->entries);
	free(c->name);
	free(c);
}

const char *
isth_conf_error(const struct isth_conf *c)
{
	return c ? c->err : "no configuration";
}

bool
isth_conf_has_section(struct isth_conf *c, const char *section)
{
	struct conf_entry *e = find(c, section, NULL);

	if (e)
		e->used = true;
	return e != NULL;
}

bool
isth_conf_has(const struct isth_conf *c, const char *section, const char *key)
{
	return find(c, section, key) != NULL;
}

unsigned int
isth_conf_sections(struct isth_conf *c, const char *kind, const char **names, unsigned int max)
{
	size_t klen = strlen(kind);
	unsigned int i, n = 0;

	for (i = 0; i < c->n_entries; i++) {
		struct conf_entry *e = &c->entries[i];

		if (e->key != NULL || strncmp(e->section, kind, klen) != 0 ||
			e->section[klen] != ' ')
			continue;
		e->used = true;
		if (n < max)
			names[n] = e->section + klen + 1;
		n++;
	}
	return n;
}

unsigned int
isth_conf_line(const struct isth_conf *c, const char *section, const char *key)
{
	const struct conf_entry *e = find(c, section, key);

	return e ? e->line : 0;
}

static int
vfail(struct isth_conf *c, const char *section, const char *key, const char *fmt, va_list ap)
{
	const struct conf_entry *e = key ? find(c, section, key) : NULL;
	unsigned int line;
	char msg[300];
	int n;

	if (e == NULL)
		e = find(c, section, NULL);
	line = e ? e->line : 0;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (line)
		n = snprintf(c->err, sizeof(c->err), "%s:%u: ", c->name, line);
	else
		n = snprintf(c->err, sizeof(c->err), "%s: ", c->name);
	if (n < 0 || (size_t)n >= sizeof(c->err))
		return -EINVAL;
	if (key)
		snprintf(c->err + n, sizeof(c->err) - n, "[%s] %s: %s", section, key, msg);
	else
		snprintf(c->err + n, sizeof(c->err) - n, "[%s]: %s", section, msg);
	return -EINVAL;
}

int
isth_conf_fail(struct isth_conf *c, const char *section, const char *key, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(c, section, key, fmt, ap);
	va_end(ap);
	return rc;
}

void
isth_conf_record(struct isth_conf *c, bool on)
{
	c->recording = on;
}

int
isth_conf_schema(const struct isth_conf *c, const struct isth_conf_key **keys)
{
	if (c->schema_nomem)
		return -ENOMEM;
	*keys = c->schema;
	return (int)c->n_schema;
}

/*
 * While recording, a getter's description of @key; @def_fmt formats the
 * default. Returns the new record (to add a range), or NULL when not
 * recording, already recorded or out of memory (schema_nomem).
 */
static struct isth_conf_key *
record(struct isth_conf *c, const char *section, const char *key, const char *type, bool required,
	const char *def_fmt, ...) __attribute__((format(printf, 6, 7)));

static struct isth_conf_key *
record(struct isth_conf *c, const char *section, const char *key, const char *type, bool required,
	const char *def_fmt, ...)
{
	struct isth_conf_key *k;
	unsigned int i;
	va_list ap;

	if (!c->recording)
		return NULL;
	for (i = 0; i < c->n_schema; i++)
		if (strcmp(c->schema[i].section, section) == 0 &&
			strcmp(c->schema[i].key, key) == 0)
			return NULL;
	if (c->n_schema == c->schema_cap) {
		unsigned int ncap = c->schema_cap ? c->schema_cap * 2 : 32;

		k = realloc(c->schema, ncap * sizeof(*k));
		if (k == NULL)
			goto nomem;
		c->schema = k;
		c->schema_cap = ncap;
	}
	k = &c->schema[c->n_schema];
	memset(k, 0, sizeof(*k));
	k->section = strdup(section);
	k->key = strdup(key);
	if (k->section == NULL || k->key == NULL) {
		free((char *)k->section);
		free((char *)k->key);
		goto nomem;
	}
	k->type = type;
	k->required = required;
	va_start(ap, def_fmt);
	vsnprintf(k->def, sizeof(k->def), def_fmt, ap);
	va_end(ap);
	c->n_schema++;
	return k;
nomem:
	c->schema_nomem = true;
	return NULL;
}

/* Look a key up for a getter: marks it used. NULL if absent. */
static const char *
lookup(struct isth_conf *c, const char *section, const char *key, bool required, int *rc)
{
	struct conf_entry *e = find(c, section, NULL);

	/* A section the caller asks about is a known one, even if the key
	 * is absent: a misspelt key in it is then reported as such. */
	if (e)
		e->used = true;
	e = find(c, section, key);
	*rc = 0;
	if (e == NULL) {
		if (required) {
			isth_conf_fail(c, section, key, "required key missing");
			*rc = -ENOENT;
		}
		return NULL;
	}
	e->used = true;
	return e->value;
}

struct unit {
	const char *name;
	uint64_t mult;
};

static int
parse_with_units(const char *s, const struct unit *units, bool unit_required, uint64_t *out)
{
	const char *end;
	uint64_t v, frac_num = 0, frac_den = 1;
	int i;

	/* decimal: lib/text's one parser ("010" is ten, never octal) */
	if (isth_text_parse_u64_prefix(s, &end, &v))
		return -EINVAL;
	if (*end == '.') {
		/* decimal fraction, e.g. 0.5ms: up to 9 digits */
		end++;
		for (i = 0; isdigit((unsigned char)*end); i++, end++) {
			if (i >= 9)
				return -EINVAL;
			frac_num = frac_num * 10 + (uint64_t)(*end - '0');
			frac_den *= 10;
		}
		if (i == 0)
			return -EINVAL;
	}
	while (*end == ' ')
		end++;
	if (*end == '\0') {
		if (unit_required || frac_num)
			return -EINVAL;
		*out = v;
		return 0;
	}
	for (i = 0; units[i].name; i++) {
		if (strcmp(end, units[i].name) == 0) {
			__uint128_t t = (__uint128_t)v * units[i].mult +
				(__uint128_t)units[i].mult * frac_num / frac_den;

			if (t > UINT64_MAX)
				return -EINVAL;
			*out = (uint64_t)t;
			return 0;
		}
	}
	return -EINVAL;
}

static const struct unit time_units[] = {
	{"ns", 1},
	{"us", 1000},
	{"ms", 1000000},
	{"s", 1000000000ull},
	{NULL, 0},
};

static const struct unit rate_units[] = {
	{"bps", 1},
	{"Kbps", 1000},
	{"Mbps", 1000000},
	{"Gbps", 1000000000ull},
	{"Tbps", 1000000000000ull},
	{NULL, 0},
};

int
isth_conf_parse_duration(const char *s, uint64_t *out)
{
	return parse_with_units(s, time_units, true, out);
}

static int
parse_rate(const char *s, uint64_t *out)
{
	return parse_with_units(s, rate_units, true, out);
}

/*
 * isth_conf_u64()'s numbers: decimal through lib/text's one parser ("010"
 * is ten, never octal), or "0x" and hex digits. The 0x branch stays on
 * purpose: ids are written in hex as often as not ([isthmusd] job, "job =
 * 0x10" in tests/conf), and unlike a leading zero the prefix cannot be
 * misread. Durations, rates and sizes are decimal only.
 */
static int
parse_plain(const char *s, uint64_t *out)
{
	return isth_text_parse_u64_or_hex(s, out);
}

static int
ranged(struct isth_conf *c, const char *section, const char *key, bool required, uint64_t def,
	uint64_t min, uint64_t max, uint64_t *out, int (*parse)(const char *, uint64_t *),
	const char *type, const char *what)
{
	struct isth_conf_key *k = record(c, section, key, type, required, "%" PRIu64, def);
	const char *v;
	uint64_t x;
	int rc;

	if (k != NULL) {
		k->ranged = true;
		k->min = min;
		k->max = max;
	}
	v = lookup(c, section, key, required, &rc);
	if (v == NULL) {
		if (rc == 0)
			*out = def;
		return rc;
	}
	if (parse(v, &x))
		return isth_conf_fail(c, section, key, "'%s' is not %s", v, what);
	if (x < min || x > max)
		return isth_conf_fail(
			c, section, key, "%s out of range [%" PRIu64 ", %" PRIu64 "]", v, min, max);
	*out = x;
	return 0;
}

int
isth_conf_u64(struct isth_conf *c, const char *section, const char *key, bool required,
	uint64_t def, uint64_t min, uint64_t max, uint64_t *out)
{
	return ranged(c, section, key, required, def, min, max, out, parse_plain, "u64",
		"an unsigned integer");
}

int
isth_conf_size(struct isth_conf *c, const char *section, const char *key, bool required,
	uint64_t def, uint64_t min, uint64_t max, uint64_t *out)
{
	/* the project's one size convention (lib/text) */
	return ranged(c, section, key, required, def, min, max, out, isth_text_parse_size, "size",
		"a size (bytes, or with K/M/G/T or Ki/Mi/Gi/Ti)");
}

int
isth_conf_duration(struct isth_conf *c, const char *section, const char *key, bool required,
	uint64_t def, uint64_t min, uint64_t max, uint64_t *out)
{
	return ranged(c, section, key, required, def, min, max, out, isth_conf_parse_duration,
		"duration", "a duration with a unit (ns, us, ms, s)");
}

int
isth_conf_rate(struct isth_conf *c, const char *section, const char *key, bool required,
	uint64_t def, uint64_t min, uint64_t max, uint64_t *out)
{
	return ranged(c, section, key, required, def, min, max, out, parse_rate, "rate",
		"a rate with a unit (bps, Kbps, Mbps, Gbps, Tbps)");
}

int
isth_conf_bool(struct isth_conf *c, const char *section, const char *key, bool required, bool def,
	bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};
	const char *v;
	unsigned int i;
	int rc;

	record(c, section, key, "bool", required, "%s", def ? "true" : "false");
	v = lookup(c, section, key, required, &rc);
	if (v == NULL) {
		if (rc == 0)
			*out = def;
		return rc;
	}
	for (i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return isth_conf_fail(
		c, section, key, "'%s' is not a boolean (true/false, yes/no, on/off, 1/0)", v);
}

int
isth_conf_str(struct isth_conf *c, const char *section, const char *key, bool required,
	const char *def, const char **out)
{
	const char *v;
	int rc;

	record(c, section, key, "str", required, "%s", def ? def : "");
	v = lookup(c, section, key, required, &rc);
	if (v == NULL) {
		if (rc == 0)
			*out = def;
		return rc;
	}
	if (*v == '\0')
		return isth_conf_fail(c, section, key, "empty value");
	*out = v;
	return 0;
}

int
isth_conf_enum(struct isth_conf *c, const char *section, const char *key, bool required,
	unsigned int def, const char *const *names, unsigned int *out)
{
	struct isth_conf_key *k;
	char list[200] = "";
	const char *v;
	unsigned int i;
	int rc;

	for (i = 0; names[i] && i < def; i++)
		;
	k = record(c, section, key, "enum", required, "%s", names[i] ? names[i] : "");
	for (i = 0; k != NULL && names[i]; i++) {
		size_t len = strlen(k->choices);

		snprintf(
			k->choices + len, sizeof(k->choices) - len, "%s%s", i ? "|" : "", names[i]);
	}
	v = lookup(c, section, key, required, &rc);
	if (v == NULL) {
		if (rc == 0)
			*out = def;
		return rc;
	}
	for (i = 0; names[i]; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
		if (strlen(list) + strlen(names[i]) + 3 < sizeof(list)) {
			if (i)
				strcat(list, ", ");
			strcat(list, names[i]);
		}
	}
	return isth_conf_fail(c, section, key, "'%s' is not one of: %s", v, list);
}

int
isth_conf_ipv4(struct isth_conf *c, const char *section, const char *key, bool required,
	uint32_t def, uint32_t *out)
{
	unsigned int a[4], i;
	const char *v;
	char tail;
	int rc;

	record(c, section, key, "ipv4", required, "%u.%u.%u.%u", def >> 24, (def >> 16) & 0xff,
		(def >> 8) & 0xff, def & 0xff);
	v = lookup(c, section, key, required, &rc);
	if (v == NULL) {
		if (rc == 0)
			*out = def;
		return rc;
	}
	if (sscanf(v, "%3u.%3u.%3u.%3u%c", &a[0], &a[1], &a[2], &a[3], &tail) != 4)
		goto bad;
	for (i = 0; i < 4; i++)
		if (a[i] > 255)
			goto bad;
	for (i = 0; v[i]; i++)
		if (!isdigit((unsigned char)v[i]) && v[i] != '.')
			goto bad;
	*out = (a[0] << 24) | (a[1] << 16) | (a[2] << 8) | a[3];
	return 0;
bad:
	return isth_conf_fail(c, section, key, "'%s' is not an IPv4 address", v);
}

int
isth_conf_mac(struct isth_conf *c, const char *section, const char *key, bool required,
	const uint8_t *def, uint8_t out[6])
{
	unsigned int m[6], i;
	const char *v;
	char tail;
	int rc;

	if (def)
		record(c, section, key, "mac", required, "%02x:%02x:%02x:%02x:%02x:%02x", def[0],
			def[1], def[2], def[3], def[4], def[5]);
	else
		record(c, section, key, "mac", required, "%s", "");
	v = lookup(c, section, key, required, &rc);
	if (v == NULL) {
		if (rc == 0) {
			if (def)
				memcpy(out, def, 6);
			else
				memset(out, 0, 6);
		}
		return rc;
	}
	if (strlen(v) != 17 ||
		sscanf(v, "%2x:%2x:%2x:%2x:%2x:%2x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5],
			&tail) != 6)
		return isth_conf_fail(
			c, section, key, "'%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", v);
	for (i = 0; i < 6; i++)
		out[i] = (uint8_t)m[i];
	return 0;
}

int
isth_conf_check_unused(struct isth_conf *c)
{
	unsigned int i;

	for (i = 0; i < c->n_entries; i++) {
		const struct conf_entry *e = &c->entries[i];

		if (e->used)
			continue;
		if (e->key == NULL) {
			snprintf(c->err, sizeof(c->err), "%s:%u: unknown section [%s]", c->name,
				e->line, e->section);
			return -EINVAL;
		}
		snprintf(c->err, sizeof(c->err), "%s:%u: unknown key '%s' in [%s]", c->name,
			e->line, e->key, e->section);
		return -EINVAL;
	}
	return 0;
}
