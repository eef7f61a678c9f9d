/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reduction trees: the model of a tree round (doc/planner.md, "Reduction
 * trees"). A round of k spanning trees of the islands: chunk c belongs to
 * tree c mod k; in its tree, each edge sums its own island's chunk with its
 * children's partial sums and forwards the sum to its parent as soon as
 * all are in; the root's sum goes back down the same tree. Every edge
 * forwards at one pace: all P bytes in D ms (the send line's rate), a chunk
 * of C bytes in s = D C / P.
 *
 * Closed form, no LP: with offsets o_u (when island u's stream starts),
 * chunk c leaves edge u (up, or down from a root) at c s + a_u, where
 *   a_u = max(o_u, max over children v of a_v + l_vu) + s
 * (children before parents); the last chunk reaches the farthest edge at
 * D - s + a_root + H_down (H_down: the largest sum of l + s down the tree)
 * and its island delta later (access latency both ways plus one chunk at
 * the access rate): T = max over the trees of that. An edge holds a
 * chunk's partial sum from its first part's first byte to its last part's
 * first byte (the clique model's fluid spread): h_u = the spread of
 * {o_u, a_v + l_vu}, a window in which its tree's chunks flow at P/(kD)
 * bytes per ms, so it holds sum over trees of h_u P / (k D) bytes.
 * D is the least of: 8P over the access rate; over every directed link,
 * uses_e 8P / (k c_e), uses_e the tree edges whose path crosses e in
 * that direction (up or down); and with memory M, sum_t h_u P / (k M).
 *
 * Offsets: with one tree they align every edge's parts exactly
 * (o_u = H_up - the latency from u up to the root), so no edge holds
 * anything and T = D + 2 H (+ s per hop): what an LP over (o, D) would find
 * for that tree. With several trees one offset per island cannot align
 * them all; the model tries every island at 0 and the alignment of each
 * tree in turn, and keeps the lowest T (a heuristic, not the LP's optimum).
 *
 * Called by lp.c (a round), check.c and isth_plan.c (occupancy, peak);
 * calls nothing else of lib/plan.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan_internal.h"

#define TREE_MEM_TOL 1e-7 /* of P: held bytes the model accepts above M */
#define TREE_ITERS 200 /* memory fixed point: D grows towards its bound */

int
plan_tree_invalid(int n, const int8_t *par, char *why, size_t len)
{
	int i, k, root = -1;

	for (i = 0; i < n; i++) {
		if (par[i] < -1 || par[i] >= n) {
			snprintf(why, len, "island %d: parent %d out of range", i, par[i]);
			return -EINVAL;
		}
		if (par[i] == i) {
			snprintf(why, len, "cycle: island %d is its own parent", i);
			return -EINVAL;
		}
		if (par[i] >= 0)
			continue;
		if (root >= 0) {
			snprintf(why, len, "two roots (islands %d and %d)", root, i);
			return -EINVAL;
		}
		root = i;
	}
	if (root < 0) {
		snprintf(why, len, "no root: a cycle");
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		int at = i;

		for (k = 0; k < n && at != root; k++)
			at = par[at];
		if (at != root) {
			snprintf(why, len, "cycle through island %d: not spanning", i);
			return -EINVAL;
		}
	}
	return 0;
}

/* Islands by depth, deepest first (children before parents); returns the root. */
static int
tree_order(int n, const int8_t *par, int *order)
{
	int depth[NMAX], i, j, root = 0;

	for (i = 0; i < n; i++) {
		int at = i;

		depth[i] = 0;
		while (par[at] >= 0 && depth[i] <= n) {
			at = par[at];
			depth[i]++;
		}
		if (par[i] < 0)
			root = i;
		order[i] = i;
	}
	/* insertion sort, stable: deeper first */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && depth[order[j]] > depth[order[j - 1]]; j--) {
			int x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	return root;
}

/*
 * One tree under offsets @p off and chunk time @p s: a_u, the spread h_u
 * (first[u], last[u]: its parts' earliest and latest start), and the tail
 * a_root + H_down. @p lat: latencies between islands.
 */
struct tree_lags {
	double a[NMAX], first[NMAX], last[NMAX];
	double tail;
};

static void
tree_lags(int n, const int8_t *par, const double (*lat)[NMAX], const double *off, double s,
	struct tree_lags *L)
{
	int order[NMAX], root = tree_order(n, par, order), q, u, v;
	double down[NMAX], hd = 0;

	for (q = 0; q < n; q++) {
		u = order[q];
		L->first[u] = L->last[u] = off[u];
		for (v = 0; v < n; v++)
			if (par[v] == u) {
				double x = L->a[v] + lat[v][u];

				L->first[u] = fmin(L->first[u], x);
				L->last[u] = fmax(L->last[u], x);
			}
		L->a[u] = L->last[u] + s;
	}
	for (q = n - 1; q >= 0; q--) {
		u = order[q];
		down[u] = par[u] < 0 ? 0 : down[par[u]] + lat[par[u]][u] + s;
		hd = fmax(hd, down[u]);
	}
	L->tail = L->a[root] + hd;
}

/* Offsets that align tree @p par exactly: H_up minus u's latency up to the root. */
static void
aligned_offsets(int n, const int8_t *par, const double (*lat)[NMAX], double s, double *off)
{
	int order[NMAX], q, u;
	double up[NMAX], H = 0;

	tree_order(n, par, order);
	for (q = n - 1; q >= 0; q--) {
		u = order[q];
		up[u] = par[u] < 0 ? 0 : up[par[u]] + lat[u][par[u]] + s;
		H = fmax(H, up[u]);
	}
	for (u = 0; u < n; u++)
		off[u] = H - up[u];
}

void
plan_tree_latencies(const struct isth_topo *t, double (*lat)[NMAX])
{
	int n = isth_topo_n(t), i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			lat[i][j] = i == j ? 0 : isth_topo_latency(t, i, j);
}

/* Bytes every edge holds at its peak (@p held, n entries) and each tree's tail. */
static void
tree_held_all(int n, int k, const int8_t (*par)[NMAX], const double (*lat)[NMAX], const double *off,
	double D, double P, double C, double *held, double *tail)
{
	struct tree_lags L;
	double s = C > 0 ? D * C / P : 0;
	int tt, u;

	for (u = 0; u < n; u++)
		held[u] = 0;
	for (tt = 0; tt < k; tt++) {
		tree_lags(n, par[tt], lat, off, s, &L);
		for (u = 0; u < n; u++)
			held[u] += (L.last[u] - L.first[u]) * P / (k * D);
		if (tail)
			tail[tt] = L.tail;
	}
}

double
plan_tree_held(int n, int k, const int8_t (*par)[NMAX], const double (*lat)[NMAX],
	const double *off, double D, double P, double C, int u, double tail[])
{
	double held[NMAX];

	tree_held_all(n, k, par, lat, off, D, P, C, held, tail);
	return held[u];
}

double
plan_tree_occupancy(int n, int k, const int8_t (*par)[NMAX], const double (*lat)[NMAX],
	const double *off, double D, double P, double C, int u, double tau)
{
	struct tree_lags L;
	double s = C > 0 ? D * C / P : 0, occ = 0;
	int tt;

	for (tt = 0; tt < k; tt++) {
		tree_lags(n, par[tt], lat, off, s, &L);
		/* chunks whose first part has begun minus those whose last has */
		occ += (fmin(fmax((tau - L.first[u]) / D, 0), 1) -
			       fmin(fmax((tau - L.last[u]) / D, 0), 1)) *
			P / k;
	}
	return occ;
}

int
plan_tree_link_uses(const struct isth_topo *t, int k, const int8_t (*par)[NMAX], int *uses)
{
	int n = isth_topo_n(t), tt, u, q, np, path[NMAX];

	memset(uses, 0, isth_topo_ndlinks(t) * sizeof(int));
	for (tt = 0; tt < k; tt++)
		for (u = 0; u < n; u++) {
			int v = par[tt][u];

			if (v < 0)
				continue;
			/* up u -> v, and the result down v -> u */
			np = isth_topo_path(t, u, v, path, NMAX);
			if (np < 0)
				return np;
			for (q = 0; q < np; q++)
				uses[path[q]]++;
			np = isth_topo_path(t, v, u, path, NMAX);
			if (np < 0)
				return np;
			for (q = 0; q < np; q++)
				uses[path[q]]++;
		}
	return 0;
}

/* A tree round's inputs and the least D the links and access allow. */
struct tree_in {
	const struct isth_topo *t;
	const struct isth_plan_params *p;
	int n, k;
	const int8_t (*par)[NMAX];
	double lat[NMAX][NMAX];
	double P, C, M, delta;
	double Dmin;
	char why[96]; /* what sets Dmin: "access" or "capacity A->B" */
};

static int
tree_dmin(struct tree_in *I)
{
	int ndl = isth_topo_ndlinks(I->t), uses[2 * NMAX * NMAX], e, ret;

	if (ndl > 2 * NMAX * NMAX)
		return -EINVAL;
	I->Dmin = 8 * I->P * 1000 / I->p->access_bps;
	snprintf(I->why, sizeof(I->why), "access");
	ret = plan_tree_link_uses(I->t, I->k, I->par, uses);
	if (ret < 0)
		return ret;
	for (e = 0; e < ndl; e++) {
		double d = uses[e] * 8 * I->P * 1000 / (I->k * plan_wan_cap(I->t, I->p, e));

		if (d > I->Dmin * (1 + 1e-12)) {
			I->Dmin = d;
			isth_topo_dlink_name(I->t, e, I->why, sizeof(I->why));
			memmove(I->why + 9, I->why, strlen(I->why) + 1);
			memcpy(I->why, "capacity ", 9);
		}
	}
	return 0;
}

/* Offsets of @p mode (-1: all 0; else aligned to that tree) for chunk time @p s. */
static void
mode_offsets(const struct tree_in *I, int mode, double s, double *off)
{
	int u;

	if (mode >= 0) {
		aligned_offsets(I->n, I->par[mode], (const double(*)[NMAX])I->lat, s, off);
		return;
	}
	for (u = 0; u < I->n; u++)
		off[u] = 0;
}

/*
 * The least D of offset @p mode that fits memory (a fixed point: the
 * spreads grow with s = D C / P), its T and offsets. 1 feasible, 0 not
 * (o->binding says why).
 */
static int
tree_mode(const struct tree_in *I, int mode, struct plan_round *o)
{
	double D = I->Dmin, off[NMAX], tail[ISTH_PLAN_MAX_TREES], held[NMAX], s = 0, worst = 0;
	int it, u, tt, wu = 0, memb = 0;

	for (it = 0; it < TREE_ITERS; it++) {
		s = I->C > 0 ? D * I->C / I->P : 0;
		mode_offsets(I, mode, s, off);
		worst = 0;
		tree_held_all(I->n, I->k, I->par, (const double(*)[NMAX])I->lat, off, D, I->P, I->C,
			held, tail);
		for (u = 0; u < I->n; u++)
			if (held[u] > worst) {
				worst = held[u];
				wu = u;
			}
		if (worst <= I->M + TREE_MEM_TOL * I->P)
			break;
		if (I->M <= 0 || !isfinite(worst)) {
			it = TREE_ITERS;
			break;
		}
		D *= worst / I->M; /* held bytes fall as 1/D at fixed spreads */
		memb = 1;
	}
	if (it >= TREE_ITERS) {
		snprintf(o->binding, sizeof(o->binding),
			"memory: M=%.6g B cannot hold %d tree%s at %s (arrivals cannot align)",
			I->M, I->k, I->k > 1 ? "s" : "", isth_topo_name(I->t, wu));
		return 0;
	}
	o->T = 0;
	for (tt = 0; tt < I->k; tt++)
		o->T = fmax(o->T, D - s + tail[tt] + I->delta);
	for (u = 0; u < I->n; u++) {
		o->off[u] = off[u];
		o->dur[u] = D;
	}
	if (memb)
		snprintf(o->binding, sizeof(o->binding), "memory @%s", isth_topo_name(I->t, wu));
	else
		snprintf(o->binding, sizeof(o->binding), "%s", I->why);
	return 1;
}

int
plan_tree_round(const struct isth_topo *t, int k, const int8_t (*par)[NMAX],
	const struct isth_plan_params *p, struct plan_round *o)
{
	static _Thread_local struct tree_in I;
	struct plan_round best;
	char why[96];
	int mode, tt, ret, n = isth_topo_n(t);

	memset(o->route, 0, sizeof(o->route));
	o->feasible = 0;
	o->T = NAN;
	o->warn[0] = '\0';
	for (tt = 0; tt < NMAX; tt++)
		o->off[tt] = o->dur[tt] = NAN;
	if (k < 1 || k > ISTH_PLAN_MAX_TREES || !(p->payload_bytes > 0) || !(p->access_bps > 0))
		return -EINVAL;
	for (tt = 0; tt < k; tt++)
		if (plan_tree_invalid(n, par[tt], why, sizeof(why)) < 0)
			return -EINVAL;
	memset(&I, 0, sizeof(I));
	I.t = t;
	I.p = p;
	I.n = n;
	I.k = k;
	I.par = par;
	I.P = p->payload_bytes;
	I.C = fmin(p->chunk_bytes, I.P);
	I.M = p->memory_bytes;
	I.delta = 2 * p->access_ms + 8 * I.C * 1000 / p->access_bps;
	plan_tree_latencies(t, I.lat);
	ret = tree_dmin(&I);
	if (ret < 0)
		return ret;
	best.feasible = 0;
	/* every island at 0 (mode -1), then each tree aligned (one tree: only that) */
	for (mode = k > 1 ? -1 : 0; mode < k; mode++) {
		struct plan_round cand;

		cand.feasible = tree_mode(&I, mode, &cand);
		if (!cand.feasible && best.feasible)
			continue;
		if (!best.feasible || (cand.feasible && cand.T < best.T - 1e-9)) {
			memcpy(best.off, cand.off, sizeof(best.off));
			memcpy(best.dur, cand.dur, sizeof(best.dur));
			best.T = cand.T;
			best.feasible = cand.feasible;
			memcpy(best.binding, cand.binding, sizeof(best.binding));
		}
	}
	memcpy(o->binding, best.binding, sizeof(o->binding));
	if (!best.feasible)
		return 0;
	memcpy(o->off, best.off, sizeof(o->off));
	memcpy(o->dur, best.dur, sizeof(o->dur));
	o->T = best.T;
	o->feasible = 1;
	if (p->max_round_ms > 0 && o->T > p->max_round_ms) {
		o->feasible = 0;
		snprintf(o->binding, sizeof(o->binding),
			"completion: T=%.3f ms > max %.3f ms (%.80s)", o->T, p->max_round_ms,
			best.binding);
	}
	return 0;
}
