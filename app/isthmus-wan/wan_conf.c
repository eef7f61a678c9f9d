/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Site maps, group tables and impairment specs. EAL-free, so the tests can
 * feed them table-driven bad input; every error names file and line (or the
 * offending spec) because people write these by hand.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isth_text.h"
#include "wan.h"

#define MAXTOK 64
#define LINE_MAX_LEN 1024

/* "file:line: msg", or "file: msg" when line is 0 (lib/text formats it) */
#define SETERR(file, line, ...) isth_text_seterr(err, errlen, file, line, 0, __VA_ARGS__)

/*
 * Next line of the text split on blanks, '#' starting a comment. Returns the
 * number of tokens (0 at the end of the text), -1 for an overlong line, -2
 * for too many fields.
 */
static int
next_tokens(struct isth_text_lines *it, int *lineno, char *buf, char **tok)
{
	int rc, n;

	while ((rc = isth_text_next_copy(it, buf, LINE_MAX_LEN)) != 0) {
		*lineno = (int)it->line;
		if (rc < 0)
			return -1;
		isth_text_strip_comment(buf, '#');
		n = isth_text_tokens(buf, tok, MAXTOK);
		if (n > MAXTOK)
			return -2;
		if (n > 0)
			return n;
	}
	return 0;
}

static int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char c;
	int i;

	if (strlen(s) != 17 ||
		sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
			&c) != 6)
		return -1;
	for (i = 0; i < 6; i++) {
		if (s[3 * i] == ' ' || s[3 * i + 1] == ' ' || (i < 5 && s[3 * i + 2] != ':'))
			return -1;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

/* Dotted quad, exactly four decimal parts 0..255. */
static int
parse_ip(const char *s, uint32_t *ip)
{
	uint32_t v = 0;
	int part, i;

	for (i = 0; i < 4; i++) {
		if (*s < '0' || *s > '9')
			return -1;
		part = 0;
		while (*s >= '0' && *s <= '9') {
			part = part * 10 + (*s++ - '0');
			if (part > 255)
				return -1;
		}
		v = v << 8 | (uint32_t)part;
		if (i < 3 && *s++ != '.')
			return -1;
	}
	if (*s != '\0')
		return -1;
	*ip = v;
	return 0;
}

static int
parse_prefix(const char *s, uint32_t *net, uint8_t *plen, const char **why)
{
	char buf[32];
	const char *slash = strchr(s, '/');
	size_t l = slash ? (size_t)(slash - s) : strlen(s);
	uint64_t len = 32;

	*why = "expected A.B.C.D[/LEN]";
	if (l >= sizeof(buf))
		return -1;
	memcpy(buf, s, l);
	buf[l] = '\0';
	if (parse_ip(buf, net) < 0)
		return -1;
	if (slash && isth_text_parse_u64_range(slash + 1, 1, 32, &len) < 0) {
		*why = "prefix length must be 1..32";
		return -1;
	}
	if (len < 32 && (*net & ~(~0u << (32 - len))) != 0) {
		*why = "host bits set";
		return -1;
	}
	if ((*net >> 28) == 0xe || (*net >> 28) == 0xf) {
		*why = "multicast or reserved address as a site prefix";
		return -1;
	}
	*plen = (uint8_t)len;
	return 0;
}

/* The site that already has prefix @p net/@p plen (the line's own site included), or -1. */
static int
net_owner(const struct isth_wan_sitemap *map, uint32_t net, uint8_t plen)
{
	int o, k;

	for (o = 0; o < ISTH_WAN_MAX_SITES; o++)
		for (k = 0; k < map->site[o].nnets; k++)
			if (map->site[o].net[k] == net && map->site[o].plen[k] == plen)
				return o;
	return -1;
}

/* Site map keys a line has given so far (a line needs the first three). */
enum { HAVE_PORT = 1, HAVE_MAC = 2 };

/*
 * One "key=value" of site @p sc's line into @p sc; @p have collects the
 * keys seen. @return 0, or -EINVAL with "name:line: reason" in @p err.
 */
static int
site_key(const struct isth_topo *t, const struct isth_wan_sitemap *map,
	struct isth_wan_site_conf *sc, char *kv, unsigned int *have, const char *name, int line,
	char *err, size_t errlen)
{
	char *eq = strchr(kv, '=');
	const char *key = kv, *val, *why;
	int o;

	if (eq == NULL)
		return SETERR(name, line, "expected key=value, got '%s'", kv);
	*eq = '\0';
	val = eq + 1;
	if (strcmp(key, "port") == 0) {
		if (*val == '\0' || strlen(val) >= ISTH_WAN_DEV_MAX)
			return SETERR(name, line, "bad port '%s'", val);
		snprintf(sc->dev, sizeof(sc->dev), "%s", val);
		*have |= HAVE_PORT;
	} else if (strcmp(key, "mac") == 0) {
		if (strcmp(val, "learn") == 0)
			sc->mac_learn = true;
		else if (parse_mac(val, sc->mac) < 0 || (sc->mac[0] & 1))
			return SETERR(name, line,
				"bad mac '%s' (unicast xx:xx:xx:xx:xx:xx or 'learn')", val);
		*have |= HAVE_MAC;
	} else if (strcmp(key, "gw_mac") == 0) {
		if (parse_mac(val, sc->gw_mac) < 0 || (sc->gw_mac[0] & 1))
			return SETERR(
				name, line, "bad gw_mac '%s' (unicast xx:xx:xx:xx:xx:xx)", val);
		sc->gw_mac_set = true;
	} else if (strcmp(key, "gw") == 0) {
		if (parse_ip(val, &sc->gw_ip) < 0 || sc->gw_ip == 0 || (sc->gw_ip >> 28) >= 0xe)
			return SETERR(name, line, "bad gw '%s' (unicast A.B.C.D)", val);
	} else if (strcmp(key, "net") == 0) {
		if (sc->nnets == ISTH_WAN_MAX_NETS)
			return SETERR(name, line, "more than %d net= prefixes", ISTH_WAN_MAX_NETS);
		if (parse_prefix(val, &sc->net[sc->nnets], &sc->plen[sc->nnets], &why) < 0)
			return SETERR(name, line, "bad net '%s': %s", val, why);
		/* an exact duplicate would make the route ambiguous */
		o = net_owner(map, sc->net[sc->nnets], sc->plen[sc->nnets]);
		if (o >= 0)
			return SETERR(name, line, "net %s also given for site '%s' (line %d)", val,
				isth_topo_name(t, o), map->site[o].line);
		sc->nnets++;
	} else {
		return SETERR(name, line, "unknown key '%s' (port, mac, gw_mac, gw, net)", key);
	}
	return 0;
}

int
isth_wan_sitemap_parse(const struct isth_topo *t, const char *name, const char *text,
	struct isth_wan_sitemap *out, char *err, size_t errlen)
{
	char buf[LINE_MAX_LEN], *tok[MAXTOK];
	struct isth_text_lines it;
	struct isth_wan_site_conf *sc;
	int line = 0, n, i, s, o, nsites = 0;
	unsigned int have;

	if (t == NULL || name == NULL || text == NULL || out == NULL) {
		SETERR(name ? name : "site map", 0, "invalid argument");
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	isth_text_lines_init(&it, text);
	while ((n = next_tokens(&it, &line, buf, tok)) != 0) {
		if (n < 0) {
			SETERR(name, line, n == -1 ? "line too long" : "too many fields");
			return -EINVAL;
		}
		s = isth_topo_find(t, tok[0]);
		if (s < 0) {
			SETERR(name, line, "unknown site '%s' (not in the topology)", tok[0]);
			return -EINVAL;
		}
		sc = &out->site[s];
		if (sc->present) {
			SETERR(name, line, "duplicate site '%s' (first on line %d)", tok[0],
				sc->line);
			return -EINVAL;
		}
		sc->present = true;
		sc->line = line;
		have = 0;
		for (i = 1; i < n; i++)
			if (site_key(t, out, sc, tok[i], &have, name, line, err, errlen) < 0)
				return -EINVAL;
		if (!(have & HAVE_PORT) || !(have & HAVE_MAC) || sc->nnets == 0) {
			SETERR(name, line, "site '%s' needs %s", tok[0],
				!(have & HAVE_PORT)          ? "port="
					: !(have & HAVE_MAC) ? "mac="
							     : "at least one net=");
			return -EINVAL;
		}
		for (o = 0; o < ISTH_WAN_MAX_SITES; o++) {
			if (o != s && out->site[o].present &&
				strcmp(out->site[o].dev, sc->dev) == 0) {
				SETERR(name, line, "port %s also used by site '%s' (line %d)",
					sc->dev, isth_topo_name(t, o), out->site[o].line);
				return -EINVAL;
			}
		}
		nsites++;
	}
	if (nsites < 2) {
		SETERR(name, line, "need at least 2 sites with a port, found %d", nsites);
		return -EINVAL;
	}
	return 0;
}

int
isth_wan_groups_parse(const struct isth_topo *t, const struct isth_wan_sitemap *map,
	const char *name, const char *text, struct isth_wan_groups *out, char *err, size_t errlen)
{
	char buf[LINE_MAX_LEN], *tok[MAXTOK];
	struct isth_text_lines it;
	struct isth_wan_group *g;
	int line = 0, n, i, s, k;
	uint32_t ip;

	if (t == NULL || map == NULL || name == NULL || text == NULL || out == NULL) {
		SETERR(name ? name : "group table", 0, "invalid argument");
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	isth_text_lines_init(&it, text);
	while ((n = next_tokens(&it, &line, buf, tok)) != 0) {
		if (n < 0) {
			SETERR(name, line, n == -1 ? "line too long" : "too many fields");
			return -EINVAL;
		}
		if (parse_ip(tok[0], &ip) < 0) {
			SETERR(name, line, "bad group address '%s'", tok[0]);
			return -EINVAL;
		}
		if ((ip >> 28) != 0xe || (ip >> 8) == 0xe00000) {
			SETERR(name, line,
				"group %s is not a routable multicast address "
				"(224.0.1.0-239.255.255.255)",
				tok[0]);
			return -EINVAL;
		}
		for (k = 0; k < out->n; k++) {
			if (out->g[k].ip == ip) {
				SETERR(name, line, "duplicate group %s (first on line %d)", tok[0],
					out->g[k].line);
				return -EINVAL;
			}
		}
		if (out->n == ISTH_WAN_MAX_GROUPS) {
			SETERR(name, line, "too many groups (at most %d)", ISTH_WAN_MAX_GROUPS);
			return -EINVAL;
		}
		if (n < 2) {
			SETERR(name, line, "group %s has no members", tok[0]);
			return -EINVAL;
		}
		g = &out->g[out->n];
		g->ip = ip;
		g->line = line;
		g->members = 0;
		for (i = 1; i < n; i++) {
			if (strcmp(tok[i], "*") == 0) {
				for (s = 0; s < isth_topo_n(t); s++)
					if (map->site[s].present)
						g->members |= UINT64_C(1) << s;
				continue;
			}
			s = isth_topo_find(t, tok[i]);
			if (s < 0) {
				SETERR(name, line, "unknown site '%s'", tok[i]);
				return -EINVAL;
			}
			if (!map->site[s].present) {
				SETERR(name, line, "site '%s' has no port in the site map", tok[i]);
				return -EINVAL;
			}
			if (g->members >> s & 1) {
				SETERR(name, line, "site '%s' listed twice", tok[i]);
				return -EINVAL;
			}
			g->members |= UINT64_C(1) << s;
		}
		out->n++;
	}
	return 0;
}

void
isth_wan_impair_default(struct isth_wan_impair *imp, int ndlinks)
{
	int e;

	for (e = 0; e < ndlinks; e++) {
		memset(&imp[e], 0, sizeof(imp[e]));
		imp[e].reorder_ms = 1.0;
		imp[e].queue_bytes = ISTH_WAN_QUEUE_BYTES_DEFAULT;
	}
}

/* A finite real number in [@p lo, @p hi], the whole of @p s. */
static int
parse_real(const char *s, double lo, double hi, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || errno || !isfinite(*v) || *v < lo || *v > hi)
		return -1;
	return 0;
}

/* A probability. */
static int
parse_prob(const char *s, double *p)
{
	return parse_real(s, 0, 1, p);
}

/* A delay in ms, at most a minute. */
static int
parse_ms(const char *s, double *v)
{
	return parse_real(s, 0, 60000, v);
}

/* Resolve "A->B" or "A-B" into a bitmap of directed links (at most 2). */
static int
parse_link(const struct isth_topo *t, const char *s, int *dl, int *ndl)
{
	char a[ISTH_TOPO_NAME_MAX * 2 + 4];
	const char *arrow = strstr(s, "->");
	int nd = isth_topo_ndlinks(t), e, from, to, sa, sb;
	size_t i, l = strlen(s);

	*ndl = 0;
	if (l >= sizeof(a))
		return -1;
	if (arrow) {
		memcpy(a, s, (size_t)(arrow - s));
		a[arrow - s] = '\0';
		sa = isth_topo_find(t, a);
		sb = isth_topo_find(t, arrow + 2);
		if (sa < 0 || sb < 0)
			return -1;
		for (e = 0; e < nd; e++) {
			isth_topo_dlink(t, e, &from, &to, NULL, NULL);
			if (from == sa && to == sb)
				dl[(*ndl)++] = e;
		}
		return *ndl ? 0 : -1;
	}
	/* site names may contain '-': try every split */
	for (i = 1; i + 1 < l; i++) {
		if (s[i] != '-')
			continue;
		memcpy(a, s, i);
		a[i] = '\0';
		sa = isth_topo_find(t, a);
		sb = isth_topo_find(t, s + i + 1);
		if (sa < 0 || sb < 0)
			continue;
		for (e = 0; e < nd; e++) {
			isth_topo_dlink(t, e, &from, &to, NULL, NULL);
			if ((from == sa && to == sb) || (from == sb && to == sa))
				dl[(*ndl)++] = e;
		}
		if (*ndl)
			return 0;
	}
	return -1;
}

/* The keys an impairment spec set, so that only those are copied. */
enum {
	K_LOSS = 1,
	K_GE = 2,
	K_DUP = 4,
	K_REO = 8,
	K_REOMS = 16,
	K_COR = 32,
	K_JIT = 64,
	K_Q = 128,
	K_PQ = 256
};

/* ge=P/R/LB[/LG]: three or four probabilities. */
static int
parse_ge(const char *val, struct isth_wan_impair *one)
{
	double g[4] = {0, 0, 0, 0};
	const char *p = val;
	char *end;
	int i;

	for (i = 0; i < 4; i++) {
		errno = 0;
		g[i] = strtod(p, &end);
		if (end == p || errno || !isfinite(g[i]) || g[i] < 0 || g[i] > 1)
			return -1;
		p = end;
		if (*p == '\0')
			break;
		if (*p++ != '/' || i == 3)
			return -1;
	}
	if (i < 2)
		return -1;
	one->ge_p = g[0];
	one->ge_r = g[1];
	one->ge_loss_bad = g[2];
	one->ge_loss_good = i == 3 ? g[3] : 0;
	return 0;
}

/*
 * One "key=value" of --impair @p spec into @p one; @p set collects the
 * keys given. @return 0, or -EINVAL with a message in @p err.
 */
static int
impair_key(const char *spec, char *kv, struct isth_wan_impair *one, unsigned int *set, char *err,
	size_t errlen)
{
	char *eq = strchr(kv, '=');
	const char *val;
	uint64_t qb = 0;
	int bad = 0;

	if (eq == NULL)
		return SETERR("--impair", 0, "'%s': expected key=value, got '%s'", spec, kv);
	*eq = '\0';
	val = eq + 1;
	if (strcmp(kv, "loss") == 0) {
		bad = parse_prob(val, &one->loss);
		*set |= K_LOSS;
	} else if (strcmp(kv, "ge") == 0) {
		bad = parse_ge(val, one);
		*set |= K_GE;
	} else if (strcmp(kv, "dup") == 0) {
		bad = parse_prob(val, &one->dup);
		*set |= K_DUP;
	} else if (strcmp(kv, "reorder") == 0) {
		bad = parse_prob(val, &one->reorder);
		*set |= K_REO;
	} else if (strcmp(kv, "reorder-ms") == 0) {
		bad = parse_ms(val, &one->reorder_ms);
		*set |= K_REOMS;
	} else if (strcmp(kv, "corrupt") == 0) {
		bad = parse_prob(val, &one->corrupt);
		*set |= K_COR;
	} else if (strcmp(kv, "jitter-ms") == 0) {
		bad = parse_ms(val, &one->jitter_ms);
		*set |= K_JIT;
	} else if (strcmp(kv, "queue-bytes") == 0) {
		bad = isth_text_parse_size(val, &qb) < 0 || qb < 1 || qb > 1000000000000ull;
		one->queue_bytes = qb;
		*set |= K_Q;
	} else if (strcmp(kv, "prio-queue-bytes") == 0) {
		/* 0 turns the priority class off */
		bad = isth_text_parse_size(val, &qb) < 0 || qb > 1000000000000ull;
		one->prio_queue_bytes = qb;
		*set |= K_PQ;
	} else {
		return SETERR("--impair", 0,
			"'%s': unknown key '%s' (loss, ge, dup, reorder, reorder-ms, corrupt, "
			"jitter-ms, queue-bytes, prio-queue-bytes)",
			spec, kv);
	}
	if (bad)
		return SETERR("--impair", 0, "'%s': bad value '%s' for %s", spec, val, kv);
	return 0;
}

/* Copy the keys in @p set from @p one to the directed link @p d. */
static void
impair_copy(struct isth_wan_impair *d, const struct isth_wan_impair *one, unsigned int set)
{
	if (set & K_LOSS) {
		d->loss = one->loss;
		d->ge = false;
	}
	if (set & K_GE) {
		d->ge = true;
		d->ge_p = one->ge_p;
		d->ge_r = one->ge_r;
		d->ge_loss_bad = one->ge_loss_bad;
		d->ge_loss_good = one->ge_loss_good;
	}
	if (set & K_DUP)
		d->dup = one->dup;
	if (set & K_REO)
		d->reorder = one->reorder;
	if (set & K_REOMS)
		d->reorder_ms = one->reorder_ms;
	if (set & K_COR)
		d->corrupt = one->corrupt;
	if (set & K_JIT)
		d->jitter_ms = one->jitter_ms;
	if (set & K_Q)
		d->queue_bytes = one->queue_bytes;
	if (set & K_PQ)
		d->prio_queue_bytes = one->prio_queue_bytes;
}

int
isth_wan_impair_apply(const struct isth_topo *t, struct isth_wan_impair *imp, const char *spec,
	char *err, size_t errlen)
{
	char buf[512], *kv, *save, *colon, *eq, *body;
	int dl[2], ndl = 0, e, all = 1;
	struct isth_wan_impair one;
	unsigned int set = 0;

	if (t == NULL || imp == NULL || spec == NULL) {
		SETERR("--impair", 0, "invalid argument");
		return -EINVAL;
	}
	if (strlen(spec) >= sizeof(buf)) {
		SETERR("--impair", 0, "spec too long");
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	body = buf;
	colon = strchr(buf, ':');
	eq = strchr(buf, '=');
	if (colon && (eq == NULL || colon < eq)) {
		*colon = '\0';
		if (parse_link(t, buf, dl, &ndl) < 0) {
			SETERR("--impair", 0, "'%s': no link '%s' in the topology (A->B or A-B)",
				spec, buf);
			return -EINVAL;
		}
		all = 0;
		body = colon + 1;
	}
	/* Parse into a scratch copy of the first link so that a bad key
	 * changes nothing; then apply the keys given to every selected link. */
	one = imp[all ? 0 : dl[0]];
	for (kv = strtok_r(body, ",", &save); kv != NULL; kv = strtok_r(NULL, ",", &save))
		if (impair_key(spec, kv, &one, &set, err, errlen) < 0)
			return -EINVAL;
	if (set == 0) {
		SETERR("--impair", 0, "'%s': no key=value given", spec);
		return -EINVAL;
	}
	for (e = 0; e < isth_topo_ndlinks(t); e++)
		if (all || e == dl[0] || (ndl == 2 && e == dl[1]))
			impair_copy(&imp[e], &one, set);
	return 0;
}

int
isth_wan_epoch_parse(const char *name, const char *text, uint64_t *ns, char *err, size_t errlen)
{
	char buf[LINE_MAX_LEN], *line;
	struct isth_text_lines it;
	bool found = false;
	uint64_t x, v = 0;
	int rc;

	isth_text_lines_init(&it, text);
	while ((rc = isth_text_next_copy(&it, buf, sizeof(buf))) != 0) {
		if (rc < 0)
			return SETERR(name, it.line, "line too long");
		isth_text_strip_comment(buf, '#');
		line = isth_text_trim(buf);
		if (*line == '\0')
			continue;
		if (found)
			return SETERR(name, it.line, "a second epoch (one line only)");
		if (isth_text_parse_u64(line, &x) < 0 || x == 0)
			return SETERR(name, it.line,
				"'%s' is no epoch (CLOCK_REALTIME ns, a positive integer)", line);
		v = x;
		found = true;
	}
	if (!found)
		return SETERR(name, it.line, "no epoch in the file");
	*ns = v;
	return 0;
}

int
isth_wan_epoch_read(const char *path, uint64_t *ns, char *err, size_t errlen)
{
	char *text;
	int rc;

	if (access(path, F_OK) != 0 && errno == ENOENT)
		return -ENOENT;
	text = isth_text_read(path, 4096, NULL, err, errlen);
	if (text == NULL)
		return -EINVAL;
	rc = isth_wan_epoch_parse(path, text, ns, err, errlen);
	free(text);
	return rc;
}
