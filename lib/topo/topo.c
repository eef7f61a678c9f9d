/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Topology CSV parsing. Errors name the file and line because the people
 * who write these files fix them by hand.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

#define MAXF 8
#define FLEN 256

static void __attribute__((format(printf, 5, 6)))
seterr(char *err, size_t errlen, const char *file, int line, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s:%d: %s", file, line, msg);
}

/* Split one CSV line into trimmed fields; double quotes protect commas. */
static int
split_csv(const char *line, char f[MAXF][FLEN])
{
	int nf = 0, len = 0, q = 0;
	const char *c;

	memset(f, 0, MAXF * FLEN);
	for (c = line; ; c++) {
		if (*c == '"') {
			q = !q;
			continue;
		}
		if (*c == '\0' || (*c == ',' && !q)) {
			if (nf < MAXF) {
				char *s = f[nf], *e;

				s[len < FLEN ? len : FLEN - 1] = '\0';
				while (*s == ' ' || *s == '\t')
					memmove(s, s + 1, strlen(s));
				e = s + strlen(s);
				while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
					*--e = '\0';
			}
			nf++;
			len = 0;
			if (*c == '\0')
				break;
			if (nf >= MAXF)
				nf = MAXF; /* further fields are ignored (free-text sources) */
			continue;
		}
		if (nf < MAXF && len < FLEN - 1)
			f[nf][len] = *c;
		len++;
	}
	return nf > MAXF ? MAXF : nf;
}

/* Next logical line: skips comments and blank lines, counts line numbers. */
static const char *
next_line(const char **pos, int *lineno, char *buf, size_t len)
{
	while (**pos != '\0') {
		const char *s = *pos, *e = strchr(s, '\n');
		size_t l = e ? (size_t)(e - s) : strlen(s);
		const char *p;

		*pos = e ? e + 1 : s + l;
		(*lineno)++;
		if (l >= len)
			l = len - 1;
		memcpy(buf, s, l);
		buf[l] = '\0';
		for (p = buf; *p == ' ' || *p == '\t' || *p == '\r'; p++)
			;
		if (*p == '\0' || *p == '#')
			continue;
		return buf;
	}
	return NULL;
}

static int
valid_name(const char *s)
{
	size_t l = strlen(s);

	if (l == 0 || l >= ISTH_TOPO_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return 0;
	return 1;
}

static int
parse_num(const char *s, double *v)
{
	char *end;

	if (*s == '\0')
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	if (errno || *end != '\0' || !isfinite(*v))
		return -1;
	return 0;
}

static int
find_site(const struct isth_topo *t, const char *s)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->name[i], s) == 0)
			return i;
	return -1;
}

static int
parse_sites(struct isth_topo *t, const char *file, const char *text, char *err, size_t errlen)
{
	char buf[1024], f[MAXF][FLEN];
	const char *pos = text;
	int line = 0, nf, i, r;
	int header = 0;

	while (next_line(&pos, &line, buf, sizeof(buf)) != NULL) {
		nf = split_csv(buf, f);
		if (!header) {
			if (nf < 2 || strcmp(f[0], "site") != 0 || strcmp(f[1], "region") != 0) {
				seterr(err, errlen, file, line, "expected header 'site,region[,city]'");
				return -EINVAL;
			}
			header = 1;
			continue;
		}
		if (nf < 2 || f[1][0] == '\0') {
			seterr(err, errlen, file, line, "expected 'site,region[,city]', got %d field%s",
			       nf, nf == 1 ? "" : "s");
			return -EINVAL;
		}
		if (!valid_name(f[0])) {
			seterr(err, errlen, file, line, "bad site name '%s' (1-31 of [A-Za-z0-9_.-])", f[0]);
			return -EINVAL;
		}
		if (!valid_name(f[1])) {
			seterr(err, errlen, file, line, "bad region name '%s' (1-31 of [A-Za-z0-9_.-])", f[1]);
			return -EINVAL;
		}
		i = find_site(t, f[0]);
		if (i >= 0) {
			seterr(err, errlen, file, line, "duplicate site '%s' (first on line %d)",
			       f[0], t->line[i]);
			return -EINVAL;
		}
		if (t->n >= NMAX) {
			seterr(err, errlen, file, line, "too many sites (at most %d)", NMAX);
			return -EINVAL;
		}
		i = t->n++;
		snprintf(t->name[i], sizeof(t->name[i]), "%s", f[0]);
		t->line[i] = line;
		for (r = 0; r < t->nregions; r++)
			if (strcmp(t->region_name[r], f[1]) == 0)
				break;
		if (r == t->nregions)
			snprintf(t->region_name[t->nregions++], ISTH_TOPO_NAME_MAX, "%s", f[1]);
		t->region[i] = r;
	}
	if (!header) {
		seterr(err, errlen, file, line, "empty file (expected header 'site,region[,city]')");
		return -EINVAL;
	}
	if (t->n < 2) {
		seterr(err, errlen, file, line, "need at least 2 sites, found %d", t->n);
		return -EINVAL;
	}
	return 0;
}

static int
parse_links(struct isth_topo *t, const char *file, const char *text, char *err, size_t errlen)
{
	char buf[1024], f[MAXF][FLEN];
	const char *pos = text;
	int line = 0, nf, a, b, l, cap = 0, header = 0;
	int *lline = NULL;
	int ret = -EINVAL;
	double lat, gbps;

	while (next_line(&pos, &line, buf, sizeof(buf)) != NULL) {
		nf = split_csv(buf, f);
		if (!header) {
			if (nf < 4 || strcmp(f[0], "a") != 0 || strcmp(f[1], "b") != 0 ||
			    strcmp(f[2], "one_way_ms") != 0 || strcmp(f[3], "capacity_gbps") != 0) {
				seterr(err, errlen, file, line,
				       "expected header 'a,b,one_way_ms,capacity_gbps[,source]'");
				goto out;
			}
			header = 1;
			continue;
		}
		if (nf < 4) {
			seterr(err, errlen, file, line,
			       "expected 'a,b,one_way_ms,capacity_gbps[,source]', got %d field%s",
			       nf, nf == 1 ? "" : "s");
			goto out;
		}
		a = find_site(t, f[0]);
		if (a < 0) {
			seterr(err, errlen, file, line, "unknown site '%s'", f[0]);
			goto out;
		}
		b = find_site(t, f[1]);
		if (b < 0) {
			seterr(err, errlen, file, line, "unknown site '%s'", f[1]);
			goto out;
		}
		if (a == b) {
			seterr(err, errlen, file, line, "link from '%s' to itself", f[0]);
			goto out;
		}
		for (l = 0; l < t->ndl / 2; l++) {
			if ((t->dl_from[2 * l] == a && t->dl_to[2 * l] == b) ||
			    (t->dl_from[2 * l] == b && t->dl_to[2 * l] == a)) {
				seterr(err, errlen, file, line, "duplicate link %s-%s (first on line %d)",
				       f[0], f[1], lline[l]);
				goto out;
			}
		}
		if (parse_num(f[2], &lat) < 0) {
			seterr(err, errlen, file, line, "bad one_way_ms '%s'", f[2]);
			goto out;
		}
		if (lat < 0) {
			seterr(err, errlen, file, line, "negative one_way_ms %s", f[2]);
			goto out;
		}
		if (parse_num(f[3], &gbps) < 0) {
			seterr(err, errlen, file, line, "bad capacity_gbps '%s'", f[3]);
			goto out;
		}
		if (gbps <= 0) {
			seterr(err, errlen, file, line, "non-positive capacity_gbps %s", f[3]);
			goto out;
		}
		if (t->ndl + 2 > cap) {
			int nc = cap ? 2 * cap : 32;
			void *p1 = realloc(t->dl_from, nc * sizeof(int));

			if (p1 == NULL)
				goto nomem;
			t->dl_from = p1;
			p1 = realloc(t->dl_to, nc * sizeof(int));
			if (p1 == NULL)
				goto nomem;
			t->dl_to = p1;
			p1 = realloc(t->dl_lat_ms, nc * sizeof(double));
			if (p1 == NULL)
				goto nomem;
			t->dl_lat_ms = p1;
			p1 = realloc(t->dl_cap_bps, nc * sizeof(double));
			if (p1 == NULL)
				goto nomem;
			t->dl_cap_bps = p1;
			p1 = realloc(lline, nc / 2 * sizeof(int));
			if (p1 == NULL)
				goto nomem;
			lline = p1;
			cap = nc;
		}
		l = t->ndl / 2;
		lline[l] = line;
		t->dl_from[2 * l] = a;
		t->dl_to[2 * l] = b;
		t->dl_from[2 * l + 1] = b;
		t->dl_to[2 * l + 1] = a;
		t->dl_lat_ms[2 * l] = t->dl_lat_ms[2 * l + 1] = lat;
		t->dl_cap_bps[2 * l] = t->dl_cap_bps[2 * l + 1] = gbps * 1e9;
		t->ndl += 2;
	}
	if (!header) {
		seterr(err, errlen, file, line,
		       "empty file (expected header 'a,b,one_way_ms,capacity_gbps[,source]')");
		goto out;
	}
	ret = 0;
	goto out;
nomem:
	ret = -ENOMEM;
	seterr(err, errlen, file, line, "out of memory");
out:
	free(lline);
	return ret;
}

void
isth_topo_free(struct isth_topo *t)
{
	if (t == NULL)
		return;
	free(t->dl_from);
	free(t->dl_to);
	free(t->dl_lat_ms);
	free(t->dl_cap_bps);
	free(t);
}

struct isth_topo *
isth_topo_parse(const char *sites_name, const char *sites_text, const char *links_name,
		     const char *links_text, char *err, size_t errlen)
{
	struct isth_topo *t;
	int ret;

	if (sites_name == NULL || sites_text == NULL || links_name == NULL || links_text == NULL) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ret = parse_sites(t, sites_name, sites_text, err, errlen);
	if (ret < 0)
		goto fail;
	ret = parse_links(t, links_name, links_text, err, errlen);
	if (ret < 0)
		goto fail;
	ret = topo_route(t, err, errlen, sites_name);
	if (ret < 0)
		goto fail;
	return t;
fail:
	isth_topo_free(t);
	errno = -ret;
	return NULL;
}

static char *
slurp(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (f == NULL) {
		int e = errno;

		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	for (;;) {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);

			if (nb == NULL) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	buf[len] = '\0';
	fclose(f);
	if (memchr(buf, '\0', len) != NULL) {
		if (err && errlen)
			snprintf(err, errlen, "%s:1: binary file (NUL byte)", path);
		free(buf);
		errno = EINVAL;
		return NULL;
	}
	return buf;
}

struct isth_topo *
isth_topo_load(const char *sites_path, const char *links_path, char *err, size_t errlen)
{
	char *s, *l;
	struct isth_topo *t;
	int e;

	if (sites_path == NULL || links_path == NULL) {
		errno = EINVAL;
		return NULL;
	}
	s = slurp(sites_path, err, errlen);
	if (s == NULL)
		return NULL;
	l = slurp(links_path, err, errlen);
	if (l == NULL) {
		e = errno;
		free(s);
		errno = e;
		return NULL;
	}
	t = isth_topo_parse(sites_path, s, links_path, l, err, errlen);
	e = errno;
	free(s);
	free(l);
	errno = e;
	return t;
}

int
isth_topo_n(const struct isth_topo *t)
{
	return t ? t->n : 0;
}

const char *
isth_topo_name(const struct isth_topo *t, int i)
{
	return (t && i >= 0 && i < t->n) ? t->name[i] : NULL;
}

int
isth_topo_region(const struct isth_topo *t, int i)
{
	return (t && i >= 0 && i < t->n) ? t->region[i] : -1;
}

int
isth_topo_nregions(const struct isth_topo *t)
{
	return t ? t->nregions : 0;
}

const char *
isth_topo_region_name(const struct isth_topo *t, int r)
{
	return (t && r >= 0 && r < t->nregions) ? t->region_name[r] : NULL;
}

double
isth_topo_latency(const struct isth_topo *t, int a, int b)
{
	if (t == NULL || a < 0 || b < 0 || a >= t->n || b >= t->n)
		return -1;
	return t->dist[a][b];
}

int
isth_topo_dlink(const struct isth_topo *t, int e, int *from, int *to,
		     double *lat_ms, double *cap_bps)
{
	if (t == NULL || e < 0 || e >= t->ndl)
		return -EINVAL;
	if (from)
		*from = t->dl_from[e];
	if (to)
		*to = t->dl_to[e];
	if (lat_ms)
		*lat_ms = t->dl_lat_ms[e];
	if (cap_bps)
		*cap_bps = t->dl_cap_bps[e];
	return 0;
}

int
isth_topo_ndlinks(const struct isth_topo *t)
{
	return t ? t->ndl : 0;
}

void
isth_topo_dlink_name(const struct isth_topo *t, int e, char *buf, size_t len)
{
	if (t == NULL || e < 0 || e >= t->ndl) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf, len, "%s->%s", t->name[t->dl_from[e]], t->name[t->dl_to[e]]);
}

int
isth_topo_path(const struct isth_topo *t, int a, int b, int *links, int max)
{
	int rev[NMAX], n = 0, v, i;

	if (t == NULL || a < 0 || b < 0 || a >= t->n || b >= t->n || (links == NULL && max > 0))
		return -EINVAL;
	for (v = b; v != a; v = t->dl_from[t->pred[a][v]])
		rev[n++] = t->pred[a][v];
	for (i = 0; i < n && i < max; i++)
		links[i] = rev[n - 1 - i];
	return n < max ? n : max;
}
