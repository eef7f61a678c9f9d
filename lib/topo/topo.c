/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Topology CSV parsing. Errors name the file and line because the people
 * who write these files fix them by hand; files are read, BOMs and CRLF
 * handled, by lib/text.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isth_text.h"
#include "topo_priv.h"

/* every message names the file and line being parsed */
#define SETERR(...) isth_text_seterr(err, errlen, file, line, 0, __VA_ARGS__)

#define MAXF 8
#define FLEN 256

/* Accepted ranges (doc/planner.md): wide enough for any real WAN, narrow
 * enough that T and the schedule's integer ns and bit/s stay finite. */
#define LAT_MAX_MS 10000.0 /* 10 s one way */
#define CAP_MIN_GBPS 0.001 /* 1 Mbit/s */
#define CAP_MAX_GBPS 1000000.0 /* 1 Pbit/s */

/*
 * Split one CSV line into trimmed fields; double quotes protect commas.
 * Stores the first MAXF fields and returns how many there are in all, so
 * that a row with more fields than its header is seen.
 */
static int
split_csv(const char *line, char f[MAXF][FLEN])
{
	int nf = 0, len = 0, q = 0;
	const char *c;

	memset(f, 0, MAXF * FLEN);
	for (c = line;; c++) {
		if (*c == '"') {
			q = !q;
			continue;
		}
		if (*c == '\0' || (*c == ',' && !q)) {
			if (nf < MAXF) {
				char *t = isth_text_trim(f[nf]);

				memmove(f[nf], t, strlen(t) + 1);
			}
			nf++;
			len = 0;
			if (*c == '\0')
				break;
			continue;
		}
		if (nf < MAXF && len < FLEN - 1)
			f[nf][len] = *c;
		len++;
	}
	return nf;
}

/* Next line that is not blank or a '#' comment; 0 at the end, -E2BIG if too long. */
static int
next_line(struct isth_text_lines *it, char *buf, size_t len)
{
	int rc;

	while ((rc = isth_text_next_copy(it, buf, len)) != 0) {
		const char *p;

		if (rc < 0)
			return rc;
		for (p = buf; *p == ' ' || *p == '\t'; p++)
			;
		if (*p == '\0' || *p == '#')
			continue;
		return 1;
	}
	return 0;
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

/* A row with more fields than the header: most often a decimal comma. */
static int
too_many_fields(char *err, size_t errlen, const char *file, int line, int nf, int hf)
{
	return SETERR("%d fields but the header has %d (a decimal comma? write 33.669, "
		      "not 33,669; quote text that holds commas)",
		nf, hf);
}

int
isth_topo_find(const struct isth_topo *t, const char *name)
{
	int i;

	for (i = 0; t != NULL && name != NULL && i < t->n; i++)
		if (strcmp(t->name[i], name) == 0)
			return i;
	return -1;
}

static int
parse_sites(struct isth_topo *t, const char *file, const char *text, char *err, size_t errlen)
{
	char buf[1024], f[MAXF][FLEN];
	struct isth_text_lines it;
	int line = 0, nf, i, r, rc;
	int header = 0; /* number of columns of the header, once read */

	isth_text_lines_init(&it, text);
	while ((rc = next_line(&it, buf, sizeof(buf))) != 0) {
		line = it.line;
		if (rc < 0)
			return SETERR("line too long (at most %zu bytes)", sizeof(buf) - 1);
		nf = split_csv(buf, f);
		if (!header) {
			if (nf < 2 || nf > 3 || strcmp(f[0], "site") != 0 ||
				strcmp(f[1], "region") != 0 ||
				(nf == 3 && strcmp(f[2], "city") != 0))
				return SETERR("expected header 'site,region[,city]'");
			header = nf;
			continue;
		}
		if (nf > header)
			return too_many_fields(err, errlen, file, line, nf, header);
		if (nf < 2 || f[1][0] == '\0') {
			SETERR("expected 'site,region[,city]', got %d field%s", nf,
				nf == 1 ? "" : "s");
			return -EINVAL;
		}
		if (!isth_text_valid_name(f[0], ISTH_TOPO_NAME_MAX)) {
			SETERR("bad site name '%s' (1-31 of [A-Za-z0-9_.-])", f[0]);
			return -EINVAL;
		}
		if (!isth_text_valid_name(f[1], ISTH_TOPO_NAME_MAX)) {
			SETERR("bad region name '%s' (1-31 of [A-Za-z0-9_.-])", f[1]);
			return -EINVAL;
		}
		i = isth_topo_find(t, f[0]);
		if (i >= 0) {
			SETERR("duplicate site '%s' (first on line %d)", f[0], t->line[i]);
			return -EINVAL;
		}
		if (t->n >= NMAX) {
			SETERR("too many sites (at most %d)", NMAX);
			return -EINVAL;
		}
		i = t->n++;
		snprintf(t->name[i], sizeof(t->name[i]), "%.*s", ISTH_TOPO_NAME_MAX - 1, f[0]);
		t->line[i] = line;
		for (r = 0; r < t->nregions; r++)
			if (strcmp(t->region_name[r], f[1]) == 0)
				break;
		if (r == t->nregions)
			snprintf(t->region_name[t->nregions++], ISTH_TOPO_NAME_MAX, "%.*s",
				ISTH_TOPO_NAME_MAX - 1, f[1]);
		t->region[i] = r;
	}
	if (!header) {
		SETERR("empty file (expected header 'site,region[,city]')");
		return -EINVAL;
	}
	if (t->n < 2) {
		SETERR("need at least 2 sites, found %d", t->n);
		return -EINVAL;
	}
	return 0;
}

/*
 * one_way_ms, capacity_gbps and (when given) source of a link row, each in
 * its accepted range. @return 0, or -EINVAL with "file:line: reason".
 */
static int
link_values(char f[MAXF][FLEN], int nf, double *lat, double *gbps, const char *file, int line,
	char *err, size_t errlen)
{
	double lat_chk;

	if (parse_num(f[2], lat) < 0)
		return SETERR("bad one_way_ms '%s'", f[2]);
	if (*lat < 0)
		return SETERR("negative one_way_ms %s", f[2]);
	if (*lat > LAT_MAX_MS)
		return SETERR("one_way_ms %s out of range [0, %g]", f[2], LAT_MAX_MS);
	if (parse_num(f[3], gbps) < 0)
		return SETERR("bad capacity_gbps '%s'", f[3]);
	if (*gbps <= 0)
		return SETERR("non-positive capacity_gbps %s", f[3]);
	if (*gbps < CAP_MIN_GBPS || *gbps > CAP_MAX_GBPS)
		return SETERR(
			"capacity_gbps %s out of range [%g, %g]", f[3], CAP_MIN_GBPS, CAP_MAX_GBPS);
	/* "A,B,33,669,100" under a header with 'source': the decimal comma
	 * leaves a number where the free-text source should be */
	if (nf == 5 && parse_num(f[4], &lat_chk) == 0)
		return SETERR("source '%s' is a number: a decimal comma in one_way_ms or "
			      "capacity_gbps? (write 33.669, not 33,669)",
			f[4]);
	return 0;
}

/* realloc() array @p a to @p n elements; true on success, @p a kept on failure. */
#define GROW(a, n) \
	__extension__({ \
		__typeof__(a) g_ = realloc((a), (size_t)(n) * sizeof(*(a))); \
		if (g_ != NULL) \
			(a) = g_; \
		g_ != NULL; \
	})

/* Room for @p *cap directed links (and their rows' lines in @p *lline)
 * doubled; @return 0 or -ENOMEM (what was allocated stays for the caller
 * to free). */
static int
links_grow(struct isth_topo *t, int *cap, int **lline)
{
	int nc = *cap ? 2 * *cap : 32;

	if (!GROW(t->dl_from, nc) || !GROW(t->dl_to, nc) || !GROW(t->dl_lat_ms, nc) ||
		!GROW(t->dl_cap_bps, nc) || !GROW(*lline, nc / 2))
		return -ENOMEM;
	*cap = nc;
	return 0;
}

static int
parse_links(struct isth_topo *t, const char *file, const char *text, char *err, size_t errlen)
{
	char buf[1024], f[MAXF][FLEN];
	struct isth_text_lines it;
	int line = 0, nf, a, b, l, rc, cap = 0;
	int header = 0; /* number of columns of the header, once read */
	int *lline = NULL; /* line of each physical link's row, for duplicates */
	int ret = -EINVAL;
	double lat, gbps;

	isth_text_lines_init(&it, text);
	while ((rc = next_line(&it, buf, sizeof(buf))) != 0) {
		line = it.line;
		if (rc < 0) {
			SETERR("line too long (at most %zu bytes)", sizeof(buf) - 1);
			goto out;
		}
		nf = split_csv(buf, f);
		if (!header) {
			if (nf < 4 || nf > 5 || strcmp(f[0], "a") != 0 || strcmp(f[1], "b") != 0 ||
				strcmp(f[2], "one_way_ms") != 0 ||
				strcmp(f[3], "capacity_gbps") != 0 ||
				(nf == 5 && strcmp(f[4], "source") != 0)) {
				SETERR("expected header 'a,b,one_way_ms,capacity_gbps[,source]'");
				goto out;
			}
			header = nf;
			continue;
		}
		if (nf > header) {
			too_many_fields(err, errlen, file, line, nf, header);
			goto out;
		}
		if (nf < 4) {
			SETERR("expected 'a,b,one_way_ms,capacity_gbps[,source]', got %d field%s",
				nf, nf == 1 ? "" : "s");
			goto out;
		}
		a = isth_topo_find(t, f[0]);
		if (a < 0) {
			SETERR("unknown site '%s'", f[0]);
			goto out;
		}
		b = isth_topo_find(t, f[1]);
		if (b < 0) {
			SETERR("unknown site '%s'", f[1]);
			goto out;
		}
		if (a == b) {
			SETERR("link from '%s' to itself", f[0]);
			goto out;
		}
		for (l = 0; l < t->ndl / 2; l++) {
			if ((t->dl_from[2 * l] == a && t->dl_to[2 * l] == b) ||
				(t->dl_from[2 * l] == b && t->dl_to[2 * l] == a)) {
				SETERR("duplicate link %s-%s (first on line %d)", f[0], f[1],
					lline[l]);
				goto out;
			}
		}
		if (link_values(f, nf, &lat, &gbps, file, line, err, errlen) < 0)
			goto out;
		if (t->ndl + 2 > cap && links_grow(t, &cap, &lline) < 0) {
			ret = -ENOMEM;
			SETERR("out of memory");
			goto out;
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
		SETERR("empty file (expected header 'a,b,one_way_ms,capacity_gbps[,source]')");
		goto out;
	}
	ret = 0;
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
	s = isth_text_read(sites_path, 0, NULL, err, errlen);
	if (s == NULL)
		return NULL;
	l = isth_text_read(links_path, 0, NULL, err, errlen);
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
isth_topo_dlink(
	const struct isth_topo *t, int e, int *from, int *to, double *lat_ms, double *cap_bps)
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
