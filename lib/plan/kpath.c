/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Candidate paths for capacity-aware routing: for every ordered pair of
 * sites, up to PLAN_KPATHS loop-free paths of lowest latency. Path 0 is
 * lib/topo's shortest path (so --routing shortest is path 0 everywhere);
 * the others are the shortest paths that avoid one link of path 0 (the
 * first deviations of Yen's algorithm), deduplicated, in order of latency.
 * Deterministic: ties keep link order. The table is cached per topology
 * (isth_plan_solve() builds it before starting its workers, which only
 * read it; see isth_plan.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

struct plan_kpaths {
	const struct isth_topo *t; /* the topology it was built for */
	int n, ndl;
	double sig; /* a checksum of latencies: a new topology at the same address */
	struct plan_path *p; /* n * n * PLAN_KPATHS */
	int *np; /* n * n: paths per pair */
};

static struct plan_kpaths cache;
/* Set by plan_kpaths_pin() while isth_plan_solve() runs: the topology
 * cannot change under it, so lookups skip the signature (an O(links) sum
 * that was 7 % of a 64-site plan). Written only outside the workers. */
static const struct isth_topo *pinned;

static double
signature(const struct isth_topo *t)
{
	double s = isth_topo_n(t) * 1e6 + isth_topo_ndlinks(t);
	int e;

	for (e = 0; e < isth_topo_ndlinks(t); e++) {
		int a, b;
		double l, c;

		isth_topo_dlink(t, e, &a, &b, &l, &c);
		s += (e + 1) * (l * 1.000001 + c * 1e-12 + a * 7 + b * 13);
	}
	return s;
}

/*
 * The directed links by source site, read from lib/topo once per build:
 * Dijkstra below looks at a site's own links only (it scanned every link
 * of the topology per site, through isth_topo_dlink(): 85 % of a 64-site
 * plan that had nothing else to do).
 */
struct adj {
	int nout[NMAX];
	int *out; /* NMAX rows of ndl: the links leaving each site */
	int *to; /* per link */
	double *lat; /* per link */
};

static int
adj_build(const struct isth_topo *t, struct adj *A)
{
	int ndl = isth_topo_ndlinks(t), e, from;

	memset(A->nout, 0, sizeof(A->nout));
	A->out = malloc((size_t)NMAX * ndl * sizeof(int));
	A->to = malloc(ndl * sizeof(int));
	A->lat = malloc(ndl * sizeof(double));
	if (A->out == NULL || A->to == NULL || A->lat == NULL)
		return -ENOMEM;
	for (e = 0; e < ndl; e++) {
		isth_topo_dlink(t, e, &from, &A->to[e], &A->lat[e], NULL);
		A->out[(size_t)from * ndl + A->nout[from]++] = e;
	}
	return 0;
}

static void
adj_free(struct adj *A)
{
	free(A->out);
	free(A->to);
	free(A->lat);
}

/* Dijkstra from a to b avoiding link `ban` (and its reverse); -1 if none. */
static int
shortest_avoiding(const struct isth_topo *t, const struct adj *A, int a, int b, int ban,
	struct plan_path *out)
{
	int n = isth_topo_n(t), ndl = isth_topo_ndlinks(t), done[NMAX] = {0}, pred[NMAX], k, v, e;
	double dist[NMAX];

	for (v = 0; v < n; v++) {
		dist[v] = INFINITY;
		pred[v] = -1;
	}
	dist[a] = 0;
	for (k = 0; k < n; k++) {
		int u = -1;

		for (v = 0; v < n; v++)
			if (!done[v] && isfinite(dist[v]) && (u < 0 || dist[v] < dist[u]))
				u = v;
		if (u < 0 || u == b)
			break;
		done[u] = 1;
		/* u's links in link order, as the scan of every link visited them */
		for (int q = 0; q < A->nout[u]; q++) {
			int to;
			double l;

			e = A->out[(size_t)u * ndl + q];
			if (e == ban || e == (ban ^ 1))
				continue;
			to = A->to[e];
			l = A->lat[e];
			if (dist[u] + l < dist[to] - 1e-9) {
				dist[to] = dist[u] + l;
				pred[to] = e;
			}
		}
	}
	if (!isfinite(dist[b]))
		return -1;
	out->nl = 0;
	for (v = b; v != a;) {
		int from;

		e = pred[v];
		isth_topo_dlink(t, e, &from, NULL, NULL, NULL);
		out->link[out->nl++] = e;
		v = from;
		if (out->nl >= NMAX)
			return -1;
	}
	/* reverse into source-to-destination order */
	for (k = 0; k < out->nl / 2; k++) {
		int x = out->link[k];

		out->link[k] = out->link[out->nl - 1 - k];
		out->link[out->nl - 1 - k] = x;
	}
	out->lat = dist[b];
	return 0;
}

static int
same_path(const struct plan_path *x, const struct plan_path *y)
{
	return x->nl == y->nl && memcmp(x->link, y->link, x->nl * sizeof(int)) == 0;
}

static int
build(const struct isth_topo *t)
{
	int n = isth_topo_n(t), a, b, q;
	struct adj A = {.out = NULL, .to = NULL, .lat = NULL};

	free(cache.p);
	free(cache.np);
	memset(&cache, 0, sizeof(cache));
	cache.p = calloc((size_t)n * n * PLAN_KPATHS, sizeof(*cache.p));
	cache.np = calloc((size_t)n * n, sizeof(int));
	if (cache.p == NULL || cache.np == NULL || adj_build(t, &A) < 0) {
		adj_free(&A);
		free(cache.p);
		free(cache.np);
		memset(&cache, 0, sizeof(cache));
		return -ENOMEM;
	}
	for (a = 0; a < n; a++)
		for (b = 0; b < n; b++) {
			struct plan_path *P = &cache.p[((size_t)a * n + b) * PLAN_KPATHS], cand;
			int *np = &cache.np[a * n + b];

			if (a == b)
				continue;
			P[0].nl = isth_topo_path(t, a, b, P[0].link, NMAX);
			P[0].lat = isth_topo_latency(t, a, b);
			*np = 1;
			for (q = 0; q < P[0].nl; q++) {
				int k, pos, dup = 0;

				if (shortest_avoiding(t, &A, a, b, P[0].link[q], &cand) < 0)
					continue;
				for (k = 0; k < *np; k++)
					dup |= same_path(&P[k], &cand);
				if (dup)
					continue;
				/* insert by latency among 1..np-1, dropping the longest if full */
				for (pos = *np; pos > 1 && P[pos - 1].lat > cand.lat + 1e-9; pos--)
					;
				if (pos >= PLAN_KPATHS)
					continue;
				for (k = (*np < PLAN_KPATHS ? *np : PLAN_KPATHS - 1); k > pos; k--)
					P[k] = P[k - 1];
				P[pos] = cand;
				if (*np < PLAN_KPATHS)
					(*np)++;
			}
		}
	adj_free(&A);
	cache.t = t;
	cache.n = n;
	cache.ndl = isth_topo_ndlinks(t);
	cache.sig = signature(t);
	return 0;
}

const struct plan_path *
plan_kpaths(const struct isth_topo *t, int a, int b, int *np)
{
	int n = isth_topo_n(t);

	if (pinned == t && cache.t == t) {
		*np = cache.np[a * n + b];
		return &cache.p[((size_t)a * n + b) * PLAN_KPATHS];
	}
	if (cache.t != t || cache.n != n || cache.ndl != isth_topo_ndlinks(t) ||
		cache.sig != signature(t))
		if (build(t) < 0) {
			*np = 0;
			return NULL;
		}
	*np = cache.np[a * n + b];
	return &cache.p[((size_t)a * n + b) * PLAN_KPATHS];
}

int
plan_kpaths_pin(const struct isth_topo *t)
{
	int np;

	pinned = NULL;
	if (t == NULL)
		return 0;
	if (plan_kpaths(t, 0, 0, &np) == NULL)
		return -ENOMEM;
	pinned = t;
	return 0;
}

int
plan_route_stream(const struct isth_topo *t, int j, uint64_t dests, enum isth_plan_repl repl,
	const uint8_t *route, int *mult, double *lat)
{
	int n = isth_topo_n(t), i, q, np;

	memset(mult, 0, isth_topo_ndlinks(t) * sizeof(int));
	for (i = 0; i < n; i++) {
		const struct plan_path *P;

		if (i == j || !(dests >> i & 1))
			continue;
		P = plan_kpaths(t, j, i, &np);
		if (P == NULL)
			return -ENOMEM;
		if (route[i] >= np)
			return -EINVAL;
		P += route[i];
		if (lat)
			lat[i] = P->lat;
		for (q = 0; q < P->nl; q++) {
			/* network replication: one copy per link of the tree, however
			 * many of j's paths share it; edge: one per destination */
			if (repl == ISTH_PLAN_REPL_EDGE)
				mult[P->link[q]]++;
			else
				mult[P->link[q]] = 1;
		}
	}
	return 0;
}

/*
 * Network replication's invariant: j's paths to @dests form a tree rooted
 * at j (an arborescence: every site on their union is entered over
 * exactly one link). isthmus-wan forwards a multicast copy by next hop per
 * destination, so where two paths of one sender part and meet again it
 * sends two copies over the shared links, while the planner counts one
 * (m_je in {0,1}); keeping the routes trees makes both agree. -1 if they
 * are a tree, else the first site (by destination, then hop) entered over
 * two links, those links in *e1 (the earlier) and *e2 (may be NULL).
 */
int
plan_route_tree_conflict(
	const struct isth_topo *t, int j, uint64_t dests, const uint8_t *route, int *e1, int *e2)
{
	int in[NMAX], n = isth_topo_n(t), i, q, np, v;

	for (v = 0; v < n; v++)
		in[v] = -1;
	for (i = 0; i < n; i++) {
		const struct plan_path *P;

		if (i == j || !(dests >> i & 1))
			continue;
		P = plan_kpaths(t, j, i, &np);
		if (P == NULL || route[i] >= np)
			continue;
		P += route[i];
		for (q = 0; q < P->nl; q++) {
			isth_topo_dlink(t, P->link[q], NULL, &v, NULL, NULL);
			if (in[v] < 0) {
				in[v] = P->link[q];
			} else if (in[v] != P->link[q]) {
				if (e1)
					*e1 = in[v];
				if (e2)
					*e2 = P->link[q];
				return v;
			}
		}
	}
	return -1;
}

/*
 * Capacity-aware choice among the candidate paths, in the fluid model's
 * terms without the LP: sender j's stream cannot finish before
 * max_i l_ji + max(access, max over its links of u_e 8P/c_e), u_e the
 * streams (copies) on link e sharing it fairly. Starting from shortest
 * paths, repeatedly take the sender with the latest estimate, and move one
 * of the paths through its bottleneck link (any sender's) to another
 * candidate, the best move in one of two orders (greedy()); stop when no
 * move helps. With network replication a move is admissible only if the
 * sender's routes stay a tree (plan_route_tree_conflict()); shortest
 * paths, the start, are one (one Dijkstra tree per sender).
 */
struct gstate {
	int n, ndl;
	uint64_t rx[NMAX];
	int *cnt; /* n * ndl: j's paths on link e */
	double *dmin; /* ndl */
	double Dacc;
	enum isth_plan_repl repl;
};

static int
cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y) - (x > y);
}

/* -1, 0, 1: @a before, equal to (within 1e-9 ms) or after @b in the
 * lexicographic order of the senders' estimates, largest first */
static int
lex_cmp(const double *a, const double *b, int n)
{
	int k;

	for (k = 0; k < n; k++) {
		if (a[k] < b[k] - 1e-9)
			return -1;
		if (a[k] > b[k] + 1e-9)
			return 1;
	}
	return 0;
}

/* @vec: every sender's estimate, largest first (0 for islands that do
 * not send), so vec[0] is *score */
static void
g_eval(const struct isth_topo *t, const struct gstate *G, uint8_t route[NMAX][NMAX], double *score,
	double *second, int *jworst, int *eworst, double *vec)
{
	int n = G->n, ndl = G->ndl, j, i, e, np;
	int u[4 * NMAX * NMAX];
	double best = -1;

	memset(u, 0, ndl * sizeof(int));
	for (j = 0; j < n; j++)
		for (e = 0; e < ndl; e++)
			u[e] += G->repl == ISTH_PLAN_REPL_EDGE ? G->cnt[j * ndl + e]
							       : !!G->cnt[j * ndl + e];
	*second = 0;
	for (e = 0; e < ndl; e++)
		*second += (double)u[e] * u[e] * G->dmin[e];
	*jworst = -1;
	*eworst = -1;
	for (j = 0; j < n; j++) {
		double L = 0, D = G->Dacc, est;
		int eb = -1;

		vec[j] = 0;
		if (!G->rx[j])
			continue;
		for (i = 0; i < n; i++)
			if (G->rx[j] >> i & 1)
				L = fmax(L, plan_kpaths(t, j, i, &np)[route[j][i]].lat);
		for (e = 0; e < ndl; e++)
			if (G->cnt[j * ndl + e] && u[e] * G->dmin[e] > D) {
				D = u[e] * G->dmin[e];
				eb = e;
			}
		est = L + D;
		vec[j] = est;
		if (est > best) {
			best = est;
			*jworst = j;
			*eworst = eb;
		}
	}
	*score = best;
	qsort(vec, n, sizeof(*vec), cmp_desc);
}

static void
g_apply(const struct isth_topo *t, struct gstate *G, int j, int i, int q, int sign)
{
	int np, k;
	const struct plan_path *P = plan_kpaths(t, j, i, &np) + q;

	for (k = 0; k < P->nl; k++)
		G->cnt[j * G->ndl + P->link[k]] += sign;
}

/*
 * One greedy descent. Which move is best: with @lex, the one that puts the
 * senders' estimates, largest first, lowest in lexicographic order (ties:
 * the sum of squares), so a move that lowers the second-latest sender
 * without raising the latest is taken (two directions of one thin link
 * that bind together: moving either alone leaves the max, moving both
 * lowers it); without, the one that lowers the largest estimate most
 * (ties: the sum of squares, if the largest does not rise). Its final
 * estimates in @fvec (largest first) and sum of squares in *fsq.
 */
static int
greedy(const struct isth_topo *t, int ncl, const uint64_t *cl, const struct isth_plan_params *p,
	uint8_t route[NMAX][NMAX], int lex, double *fvec, double *fsq)
{
	struct gstate G;
	int n = isth_topo_n(t), ndl = isth_topo_ndlinks(t), c, i, j, e, it, np;
	double score, second, vec[NMAX], v1[NMAX], bv[NMAX];
	int jw, ew;

	memset(route, 0, sizeof(uint8_t) * NMAX * NMAX);
	if (ndl > 4 * NMAX * NMAX)
		return -EINVAL;
	memset(&G, 0, sizeof(G));
	G.n = n;
	G.ndl = ndl;
	G.repl = p->repl;
	G.Dacc = 8 * p->payload_bytes * 1000 / p->access_bps;
	G.cnt = calloc((size_t)n * ndl, sizeof(int));
	G.dmin = calloc(ndl, sizeof(double));
	if (G.cnt == NULL || G.dmin == NULL) {
		free(G.cnt);
		free(G.dmin);
		return -ENOMEM;
	}
	for (e = 0; e < ndl; e++)
		G.dmin[e] = 8 * p->payload_bytes * 1000 / plan_wan_cap(t, p, e);
	for (c = 0; c < ncl; c++)
		if (plan_popcount(cl[c]) >= 2)
			for (i = 0; i < n; i++)
				if (cl[c] >> i & 1)
					G.rx[i] = cl[c] & ~(1ULL << i);
	for (j = 0; j < n; j++)
		for (i = 0; i < n; i++)
			if (G.rx[j] >> i & 1) {
				if (plan_kpaths(t, j, i, &np) == NULL) {
					free(G.cnt);
					free(G.dmin);
					return -ENOMEM;
				}
				g_apply(t, &G, j, i, 0, 1);
			}
	g_eval(t, &G, route, &score, &second, &jw, &ew, vec);
	for (it = 0; it < 8 * n && ew >= 0; it++) {
		double bs = score, b2 = second;
		int bj = -1, bi = -1, bq = -1;

		memcpy(bv, vec, sizeof(bv));

		/* every path through the worst sender's bottleneck link */
		for (j = 0; j < n; j++) {
			if (!G.rx[j] || !G.cnt[j * ndl + ew])
				continue;
			for (i = 0; i < n; i++) {
				const struct plan_path *P;
				int q, k, on = 0;

				if (!(G.rx[j] >> i & 1))
					continue;
				P = plan_kpaths(t, j, i, &np);
				for (k = 0; k < P[route[j][i]].nl; k++)
					on |= P[route[j][i]].link[k] == ew;
				if (!on)
					continue;
				for (q = 0; q < np; q++) {
					int old = route[j][i], jj, ee;
					double s1, s2;

					if (q == old)
						continue;
					route[j][i] = q;
					/* network replication: only moves that keep j's
					 * routes a tree (what isthmus-wan sends once per
					 * link), see plan_route_tree_conflict() */
					if (G.repl == ISTH_PLAN_REPL_NETWORK &&
						plan_route_tree_conflict(
							t, j, G.rx[j], route[j], NULL, NULL) >= 0) {
						route[j][i] = old;
						continue;
					}
					g_apply(t, &G, j, i, old, -1);
					g_apply(t, &G, j, i, q, 1);
					g_eval(t, &G, route, &s1, &s2, &jj, &ee, v1);
					route[j][i] = old;
					g_apply(t, &G, j, i, q, -1);
					g_apply(t, &G, j, i, old, 1);
					if (lex ? (lex_cmp(v1, bv, n) < 0 ||
							  (lex_cmp(v1, bv, n) == 0 &&
								  s2 < b2 - 1e-9))
						: (s1 < bs - 1e-9 ||
							  (s1 <= bs + 1e-9 && s2 < b2 - 1e-9 &&
								  s1 <= score + 1e-9))) {
						memcpy(bv, v1, sizeof(bv));
						bs = s1;
						b2 = s2;
						bj = j;
						bi = i;
						bq = q;
					}
				}
			}
		}
		if (bj < 0)
			break;
		g_apply(t, &G, bj, bi, route[bj][bi], -1);
		g_apply(t, &G, bj, bi, bq, 1);
		route[bj][bi] = bq;
		g_eval(t, &G, route, &score, &second, &jw, &ew, vec);
	}
	memcpy(fvec, vec, n * sizeof(*vec));
	*fsq = second;
	free(G.cnt);
	free(G.dmin);
	return 0;
}

/*
 * Both descents, and the routes whose final estimates are lower (largest
 * first, lexicographically; then the sum of squares; a tie keeps the
 * max-only descent's). Each is a local optimum of its own order, and
 * neither dominates: on the 3-site detour with edge replication only the
 * lexicographic one leaves the thin link (T 60 -> 32 ms in
 * tests/plan), on sixteen-site all-to-all at M = P/4 only the max-only one
 * finds 1724.9 ms (2104.4 the other). Deterministic: no randomness, fixed
 * order.
 */
int
plan_choose_routes(const struct isth_topo *t, int ncl, const uint64_t *cl,
	const struct isth_plan_params *p, uint8_t route[NMAX][NMAX])
{
	uint8_t(*alt)[NMAX] = malloc(sizeof(uint8_t) * NMAX * NMAX);
	double va[NMAX], vb[NMAX], sa, sb;
	int n = isth_topo_n(t), ret, c;

	if (alt == NULL)
		return -ENOMEM;
	ret = greedy(t, ncl, cl, p, route, 0, va, &sa);
	if (ret == 0)
		ret = greedy(t, ncl, cl, p, alt, 1, vb, &sb);
	if (ret == 0) {
		c = lex_cmp(vb, va, n);
		if (c < 0 || (c == 0 && sb < sa - 1e-9))
			memcpy(route, alt, sizeof(uint8_t) * NMAX * NMAX);
	}
	free(alt);
	return ret;
}

double
plan_result_lat(
	const struct isth_plan_result *r, const struct isth_topo *t, int round, int j, int i)
{
	const struct plan_path *P;
	int n = r->n, np, q;

	round %= r->nrounds;
	if (round < 0)
		round += r->nrounds;
	q = r->route ? r->route[((size_t)round * n + j) * n + i] : 0;
	P = plan_kpaths(t, j, i, &np);
	if (P == NULL || q >= np)
		return isth_topo_latency(t, j, i);
	return P[q].lat;
}

int
isth_plan_result_route(const struct isth_plan_result *r, const struct isth_topo *t, int round,
	int j, int i, int *hops, int max)
{
	const struct plan_path *P;
	int n, np, q, k;

	if (r == NULL || t == NULL || hops == NULL || r->n != isth_topo_n(t) || j < 0 ||
		j >= r->n || i < 0 || i >= r->n || i == j || max < 2)
		return -EINVAL;
	n = r->n;
	round %= r->nrounds;
	if (round < 0)
		round += r->nrounds;
	q = r->route ? r->route[((size_t)round * n + j) * n + i] : 0;
	P = plan_kpaths(t, j, i, &np);
	if (P == NULL)
		return -ENOMEM;
	if (q >= np || P[q].nl + 1 > max)
		return -EINVAL;
	hops[0] = j;
	for (k = 0; k < P[q].nl; k++)
		isth_topo_dlink(t, P[q].link[k], NULL, &hops[k + 1], NULL, NULL);
	return P[q].nl + 1;
}
