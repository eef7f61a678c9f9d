/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tree family (isth_plan_tree()): which spanning trees a round of
 * reduction trees uses, chosen by the tree model's T (tree.c).
 *
 * One tree: for every root and every capacity floor (the distinct link
 * capacities), the shortest-latency tree from that root over the links at
 * or above the floor. Its height sets the latency part of T and its
 * narrowest link the rate part; the best of them is kept.
 * k trees (2..8): roots taken from the best single-tree roots, trees built
 * one after another by Dijkstra with each link's latency multiplied by
 * 1 + beta * (trees already on it), so that later trees take other links
 * and the k trees' load spreads (each tree link carries P/k each way).
 * Every candidate is scored by plan_tree_round() itself (memory included);
 * the lowest T over all k wins. Deterministic: ties keep the lower root,
 * floor and k.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

#define NBETA 3
static const double betas[NBETA] = {1, 4, 16};

/* The topology's directed links, read once. */
struct tb {
	const struct isth_topo *t;
	const struct isth_plan_params *p;
	int n, ndl;
	int *from, *to;
	double *lat, *cap;
	double floors[8];
	int nfloor;
};

/*
 * Shortest-latency tree from @p root over links of capacity >= @p floor,
 * each link's latency times 1 + beta * used[e / 2] (@p used may be NULL).
 * 0, or -1 if those links do not reach every island.
 */
static int
spt(const struct tb *B, int root, double floor, const int *used, double beta, int8_t *par)
{
	double dist[NMAX];
	int done[NMAX] = {0}, k, v, e;

	for (v = 0; v < B->n; v++) {
		dist[v] = INFINITY;
		par[v] = -1;
	}
	dist[root] = 0;
	for (k = 0; k < B->n; k++) {
		int u = -1;

		for (v = 0; v < B->n; v++)
			if (!done[v] && isfinite(dist[v]) && (u < 0 || dist[v] < dist[u]))
				u = v;
		if (u < 0)
			return -1;
		done[u] = 1;
		for (e = 0; e < B->ndl; e++) {
			double w;

			if (B->from[e] != u || B->cap[e] < floor)
				continue;
			w = B->lat[e] * (1 + (used ? beta * used[e / 2] : 0));
			if (dist[u] + w < dist[B->to[e]] - 1e-12) {
				dist[B->to[e]] = dist[u] + w;
				par[B->to[e]] = (int8_t)u;
			}
		}
	}
	return 0;
}

/* T of @p k trees under the model, INFINITY if infeasible. */
static double
score(const struct tb *B, int k, const int8_t (*par)[NMAX])
{
	static _Thread_local struct plan_round o;

	if (plan_tree_round(B->t, k, par, B->p, &o) < 0 || !o.feasible)
		return INFINITY;
	return o.T;
}

static int
tb_init(struct tb *B, const struct isth_topo *t, const struct isth_plan_params *p)
{
	int e, f;

	memset(B, 0, sizeof(*B));
	B->t = t;
	B->p = p;
	B->n = isth_topo_n(t);
	B->ndl = isth_topo_ndlinks(t);
	B->from = calloc(B->ndl, sizeof(int));
	B->to = calloc(B->ndl, sizeof(int));
	B->lat = calloc(B->ndl, sizeof(double));
	B->cap = calloc(B->ndl, sizeof(double));
	if (B->from == NULL || B->to == NULL || B->lat == NULL || B->cap == NULL)
		return -ENOMEM;
	for (e = 0; e < B->ndl; e++) {
		isth_topo_dlink(t, e, &B->from[e], &B->to[e], &B->lat[e], &B->cap[e]);
		for (f = 0; f < B->nfloor && B->floors[f] != B->cap[e]; f++)
			;
		if (f == B->nfloor && B->nfloor < 8)
			B->floors[B->nfloor++] = B->cap[e];
	}
	return 0;
}

static void
tb_free(struct tb *B)
{
	free(B->from);
	free(B->to);
	free(B->lat);
	free(B->cap);
}

/* The best single tree per root (rootT, rootfloor) and overall (into best, *bestT). */
static void
one_tree(const struct tb *B, double *rootT, double *rootfloor, int8_t *best, double *bestT)
{
	int8_t par[1][NMAX];
	int r, f;

	for (r = 0; r < B->n; r++) {
		rootT[r] = INFINITY;
		rootfloor[r] = 0;
		for (f = 0; f < B->nfloor; f++) {
			double T;

			if (spt(B, r, B->floors[f], NULL, 0, par[0]) < 0)
				continue;
			T = score(B, 1, (const int8_t(*)[NMAX])par);
			if (T < rootT[r] - 1e-9) {
				rootT[r] = T;
				rootfloor[r] = B->floors[f];
			}
			if (T < *bestT - 1e-9) {
				*bestT = T;
				memcpy(best, par[0], NMAX);
			}
		}
	}
}

/* k trees from the k best roots, each beta; the best into @p best if it beats *bestT. */
static void
k_trees(const struct tb *B, int k, const int *roots, const double *rootfloor, int8_t (*best)[NMAX],
	int *bestk, double *bestT)
{
	int8_t par[ISTH_PLAN_MAX_TREES][NMAX];
	int used[2 * NMAX * NMAX / 2], b, tt, u;

	for (b = 0; b < NBETA; b++) {
		double T;
		int ok = 1;

		memset(used, 0, B->ndl / 2 * sizeof(int));
		for (tt = 0; tt < k && ok; tt++) {
			ok = spt(B, roots[tt], rootfloor[roots[tt]], used, betas[b], par[tt]) == 0;
			for (u = 0; u < B->n && ok; u++) {
				int path[NMAX], np, q;

				if (par[tt][u] < 0)
					continue;
				np = isth_topo_path(B->t, u, par[tt][u], path, NMAX);
				for (q = 0; q < np; q++)
					used[path[q] / 2]++;
			}
		}
		if (!ok)
			continue;
		T = score(B, k, (const int8_t(*)[NMAX])par);
		if (T < *bestT - 1e-9) {
			*bestT = T;
			*bestk = k;
			memcpy(best, par, sizeof(par));
		}
	}
}

struct isth_plan_cliques *
isth_plan_tree(const struct isth_topo *t, const struct isth_plan_params *p)
{
	int8_t best[ISTH_PLAN_MAX_TREES][NMAX];
	double rootT[NMAX], rootfloor[NMAX], bestT = INFINITY;
	int roots[NMAX], bestk = 1, n, k, i, j, kmax, ncl = 1, par[NMAX];
	uint64_t all;
	const uint64_t *cl[1] = {&all};
	struct isth_plan_cliques *s;
	struct tb B;

	if (t == NULL || p == NULL || isth_topo_n(t) < 2) {
		errno = EINVAL;
		return NULL;
	}
	if (tb_init(&B, t, p) < 0) {
		tb_free(&B);
		errno = ENOMEM;
		return NULL;
	}
	n = B.n;
	one_tree(&B, rootT, rootfloor, best[0], &bestT);
	/* roots by their single tree's T, best first (stable: lower id first) */
	for (i = 0; i < n; i++)
		roots[i] = i;
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && rootT[roots[j]] < rootT[roots[j - 1]]; j--) {
			int x = roots[j];

			roots[j] = roots[j - 1];
			roots[j - 1] = x;
		}
	kmax = n < ISTH_PLAN_MAX_TREES ? n : ISTH_PLAN_MAX_TREES;
	for (k = 2; k <= kmax && isfinite(rootT[roots[k - 1]]); k++)
		k_trees(&B, k, roots, rootfloor, best, &bestk, &bestT);
	tb_free(&B);
	if (!isfinite(bestT)) {
		errno = ENOENT;
		return NULL;
	}
	all = n == 64 ? ~0ULL : (1ULL << n) - 1;
	s = isth_plan_cliques_new("tree", n, 1, &ncl, cl);
	if (s == NULL)
		return NULL;
	for (k = 0; k < bestk; k++) {
		for (i = 0; i < n; i++)
			par[i] = best[k][i];
		isth_plan_cliques_set_tree(s, 0, k, par);
	}
	return s;
}
