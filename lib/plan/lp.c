/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The round LP (doc/planner.md, "The LP"). Variables per sender j: the
 * offset t_j and the transmission duration D_j (rate = 8P / D_j), plus T.
 * Completion and memory are linear in (t, D); link capacity
 * sum_j m_je * 8P / D_j <= c_e is convex in D: it is split into one exact
 * linear row per link over per-stream rate columns y_j >= 1/u_j, and that
 * one-dimensional convex bound is imposed by tangents (cutting planes),
 * added lazily with the memory rows until the LP optimum satisfies
 * everything. GLPK is confined to this file. Rounds of reduction trees
 * are not LPs: tree.c models them.
 */
#include <errno.h>
#include <float.h>
#include <glpk.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isth_clock.h"
#include "plan_internal.h"

#define MEM_TOL 1e-7 /* ms, at most; scaled down with the stream length */
#define CAP_TOL 1e-6 /* relative overload accepted: the pacer shaves far more */
#define EPS_OBJ 1e-6 /* tie-break: earliest offsets, fastest streams */
#define POLISH_EVERY 4 /* LPs between two polish attempts (try_polish()) */
#define GAP_TOL 1e-6 /* a polish within this (relative) of the LP bound ends the loop */
/* GLPK limits per simplex call: a cycling or stalling simplex ends with
 * GLP_EITLIM/GLP_ETMLIM instead of spinning forever (payloads of
 * 50-200 B did). The iteration limit grows with the rows. */
#define LP_IT_BASE 20000
#define LP_IT_PER_ROW 50
#define LP_TM_MS 30000
#define ALIGN_TOL 1e-6 /* ms (1 ns): lp_can_align()'s tolerance on equal arrivals */

enum rowkind { ROW_COMPL, ROW_MEM, ROW_CAP, ROW_TAN };

struct rowmeta {
	int kind;
	int a; /* ROW_COMPL, ROW_TAN: sender; ROW_MEM: receiver; ROW_CAP: link */
};

/* Per thread: isth_plan_solve() runs rounds on several threads, each with
 * its own GLPK environment (GLPK 5 keeps it in thread-local storage). */
static _Thread_local jmp_buf glpk_jb;

static void
glpk_hook(void *info)
{
	(void)info;
	longjmp(glpk_jb, 1);
}

/*
 * Scaling: T and the offsets t_j are in ms (latencies are 1-300 ms);
 * durations are columns u_j = D_j / Dsc with Dsc the longest lower bound of
 * the round, so u_j is about 1 whatever the payload (10 B or 32 GB). The
 * capacity cuts are written in u, which keeps their coefficients near 1:
 * unscaled, a 10 B payload put 1e6 next to 1e-6 in one basis and GLPK gave
 * up (GLP_ESING), and 50-200 B made the simplex cycle.
 */
struct lpstate {
	int n, nsend;
	int snd[NMAX]; /* sender index -> island */
	int col_t[NMAX], col_D[NMAX], col_y[NMAX];
	double Dlow[NMAX]; /* ms */
	double Dsc; /* ms per unit of a u column */
	double memtol; /* ms */
	uint64_t deadline; /* isth_plan_params.deadline_ns: 0, or when the cut loop gives up */
	int lowcap[NMAX]; /* link that sets Dlow, -1 if access */
	uint64_t rx[NMAX]; /* contributors heard by receiver i */
	int kof[NMAX]; /* island -> sender index */
	int polink[NMAX]; /* polish: the link that slowed sender k, -1 if none */
	int ndl; /* directed links */
	double lat[NMAX][NMAX]; /* lat[j][i]: path latency from j to i, ms */
	int *mult; /* nsend * ndl */
	uint8_t *haslink; /* per link: its capacity row is in the LP */
	double *dmin; /* per link: 8P/c_e in ms */
	uint8_t *memadd; /* n*n*n*2: memory row already added */
	struct rowmeta *meta;
	int nmeta, capmeta;
	int *ind;
	double *val;
};

static int
add_meta(struct lpstate *S, int kind, int a)
{
	if (S->nmeta == S->capmeta) {
		int nc = S->capmeta ? 2 * S->capmeta : 256;
		void *p = realloc(S->meta, nc * sizeof(*S->meta));

		if (p == NULL)
			return -ENOMEM;
		S->meta = p;
		S->capmeta = nc;
	}
	S->meta[S->nmeta].kind = kind;
	S->meta[S->nmeta].a = a;
	S->nmeta++;
	return 0;
}

/* Add row sum val*x >= lb. */
static int
add_row(glp_prob *lp, struct lpstate *S, int kind, int a, int nz, double lb)
{
	int r = glp_add_rows(lp, 1);

	glp_set_row_bnds(lp, r, GLP_LO, lb, 0);
	glp_set_mat_row(lp, r, nz, S->ind, S->val);
	return add_meta(S, kind, a);
}

static int
lp_optimal(int ret, glp_prob *lp)
{
	return ret == 0 && glp_get_status(lp) == GLP_OPT;
}

/*
 * 1 optimal, 0 proven infeasible, -ETIMEDOUT a limit was hit on every
 * attempt, -EIO GLPK failed otherwise. Attempts: warm start (dual simplex
 * after rows were added), a fresh basis with primal simplex, then the
 * presolver (its own scaling and start; it cannot warm start).
 */
static int
solve_lp(glp_prob *lp, int first)
{
	glp_smcp parm;
	int ret, limit = 0;

	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.it_lim = LP_IT_BASE + LP_IT_PER_ROW * glp_get_num_rows(lp);
	parm.tm_lim = LP_TM_MS;
	parm.meth = first ? GLP_PRIMAL : GLP_DUALP;
	glp_scale_prob(lp, GLP_SF_AUTO);
	ret = glp_simplex(lp, &parm);
	if (lp_optimal(ret, lp))
		return 1;
	limit |= ret == GLP_EITLIM || ret == GLP_ETMLIM;
	/* a warm start can stall: retry from scratch before calling it infeasible */
	glp_adv_basis(lp, 0);
	parm.meth = GLP_PRIMAL;
	ret = glp_simplex(lp, &parm);
	if (lp_optimal(ret, lp))
		return 1;
	if (ret == 0 && glp_get_status(lp) == GLP_NOFEAS)
		return 0;
	limit |= ret == GLP_EITLIM || ret == GLP_ETMLIM;
	parm.presolve = GLP_ON;
	ret = glp_simplex(lp, &parm);
	if (lp_optimal(ret, lp))
		return 1;
	if (ret == GLP_ENOPFS || (ret == 0 && glp_get_status(lp) == GLP_NOFEAS))
		return 0;
	limit |= ret == GLP_EITLIM || ret == GLP_ETMLIM;
	return limit ? -ETIMEDOUT : -EIO;
}

static void
clique_str(const struct isth_topo *t, uint64_t m, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	o += snprintf(buf + o, len - o, "{");
	for (i = 0; i < isth_topo_n(t) && o < len; i++)
		if (m >> i & 1)
			o += snprintf(
				buf + o, len - o, "%s%s", o > 1 ? "," : "", isth_topo_name(t, i));
	if (o < len)
		snprintf(buf + o, len - o, "}");
}

/* Read the LP point: x[col] holds t in ms and D in ms (not u). */
static void
read_x(glp_prob *lp, const struct lpstate *S, double *x)
{
	int k;

	for (k = 0; k < S->nsend; k++) {
		x[S->col_t[k]] = glp_get_col_prim(lp, S->col_t[k]);
		x[S->col_D[k]] = glp_get_col_prim(lp, S->col_D[k]) * S->Dsc;
		x[S->col_y[k]] = glp_get_col_prim(lp, S->col_y[k]);
	}
}

/*
 * Memory rows violated at x, for receiver i and contributors j != k:
 *   t_j + l_ji + mu D_j >= t_k + l_ki
 *   t_j + l_ji + D_j >= t_k + l_ki + (1 - mu) D_k
 * Returns the number added or -ENOMEM.
 */
static int
add_mem_rows(glp_prob *lp, struct lpstate *S, const struct isth_topo *t, double mu, const double *x)
{
	int n = isth_topo_n(t), i, j, q, added = 0;
	double Dsc = S->Dsc;

	for (i = 0; i < n && mu < 1; i++) {
		if (plan_popcount(S->rx[i]) < 2)
			continue;
		for (j = 0; j < n; j++) {
			int kj = S->kof[j];

			if (!(S->rx[i] >> j & 1))
				continue;
			for (q = 0; q < n; q++) {
				int kq = S->kof[q];
				double tj, tq, Dj, Dq, v1, v2;
				size_t b = (((size_t)i * n + j) * n + q) * 2;

				if (q == j || !(S->rx[i] >> q & 1))
					continue;
				tj = x[S->col_t[kj]];
				tq = x[S->col_t[kq]];
				Dj = x[S->col_D[kj]];
				Dq = x[S->col_D[kq]];
				v1 = tj + S->lat[j][i] + mu * Dj - tq - S->lat[q][i];
				v2 = tj + S->lat[j][i] + Dj - tq - S->lat[q][i] - (1 - mu) * Dq;
				if (v1 < -S->memtol && !S->memadd[b]) {
					S->memadd[b] = 1;
					S->ind[1] = S->col_t[kj];
					S->val[1] = 1;
					S->ind[2] = S->col_D[kj];
					S->val[2] = mu * Dsc;
					S->ind[3] = S->col_t[kq];
					S->val[3] = -1;
					if (add_row(lp, S, ROW_MEM, i, 3,
						    S->lat[q][i] - S->lat[j][i]) < 0)
						return -ENOMEM;
					added++;
				}
				if (v2 < -S->memtol && !S->memadd[b + 1]) {
					S->memadd[b + 1] = 1;
					S->ind[1] = S->col_t[kj];
					S->val[1] = 1;
					S->ind[2] = S->col_D[kj];
					S->val[2] = Dsc;
					S->ind[3] = S->col_t[kq];
					S->val[3] = -1;
					S->ind[4] = S->col_D[kq];
					S->val[4] = -(1 - mu) * Dsc;
					if (add_row(lp, S, ROW_MEM, i, 4,
						    S->lat[q][i] - S->lat[j][i]) < 0)
						return -ENOMEM;
					added++;
				}
			}
		}
	}
	return added;
}

/* Load of link e (fraction of capacity) at x. */
static double
link_load(const struct lpstate *S, const struct isth_topo *t __attribute__((unused)),
	const double *x, int e)
{
	double load = 0;
	int k;

	for (k = 0; k < S->nsend; k++)
		if (S->mult[k * S->ndl + e])
			load += S->mult[k * S->ndl + e] * S->dmin[e] / x[S->col_D[k]];
	return load;
}

/* Largest link load at x; per sender, the largest load on its links (>= 1). */
static double
max_load(const struct lpstate *S, const struct isth_topo *t, const double *x, double *Lk)
{
	double worst = 0;
	int e, k;

	if (Lk)
		for (k = 0; k < S->nsend; k++)
			Lk[k] = 1;
	for (e = 0; e < S->ndl; e++) {
		double load = link_load(S, t, x, e);

		worst = fmax(worst, load);
		if (Lk)
			for (k = 0; k < S->nsend; k++)
				if (S->mult[k * S->ndl + e])
					Lk[k] = fmax(Lk[k], load);
	}
	return worst;
}

/* Add the tangent y_k >= 2/u0 - u_k/u0^2 of y = 1/u at u0 (see add_cap_cuts). */
static int
add_tangent(glp_prob *lp, struct lpstate *S, int k, double u0)
{
	S->ind[1] = S->col_y[k];
	S->val[1] = 1;
	S->ind[2] = S->col_D[k];
	S->val[2] = 1 / (u0 * u0);
	return add_row(lp, S, ROW_TAN, S->snd[k], 2, 2 / u0);
}

/*
 * Capacity, disaggregated. Each stream k has a column y_k >= 1/u_k
 * (u_k = D_k/Dsc, so y_k = Dsc/D_k: its rate in units of the slowest
 * lower bound), and each link e one exact linear row
 *   sum_k m_ke (dmin_e/Dsc) y_k <= 1,
 * added the first time e is overloaded. The convex part is then one
 * function of one variable per stream, y_k >= 1/u_k, approximated from
 * below by tangents: where an overloaded link carries a stream whose y_k
 * is below 1/u_k, the tangents at u_k and at 1/y_k (the point of the curve
 * at the same y) are added. Why: the earlier Kelley cuts were tangents of
 * the whole n-dimensional load function of one link, which needs many
 * cuts per link before the point settles (64-site pairs: hundreds of LPs a
 * round, thousands of dense rows); a one-dimensional curve is pinned by a
 * few tangents, the rows are sparse, and the link rows are exact. Every
 * row is valid, so each LP stays a relaxation, and the loop still ends on
 * the true loads (every link within CAP_TOL). Returns the number of rows
 * added or -ENOMEM; *lmax the largest load.
 */
static int
add_cap_cuts(
	glp_prob *lp, struct lpstate *S, const struct isth_topo *t, const double *x, double *lmax)
{
	uint8_t cut[NMAX] = {0};
	int e, k, added = 0;

	*lmax = 0;
	for (e = 0; e < S->ndl; e++) {
		double load = link_load(S, t, x, e);
		int nz = 0;

		*lmax = fmax(*lmax, load);
		if (load <= 1 + CAP_TOL)
			continue;
		if (!S->haslink[e]) {
			/* -sum_k m_ke (dmin_e/Dsc) y_k >= -1 */
			for (k = 0; k < S->nsend; k++) {
				if (!S->mult[k * S->ndl + e])
					continue;
				nz++;
				S->ind[nz] = S->col_y[k];
				S->val[nz] = -S->mult[k * S->ndl + e] * S->dmin[e] / S->Dsc;
			}
			if (add_row(lp, S, ROW_CAP, e, nz, -1) < 0)
				return -ENOMEM;
			S->haslink[e] = 1;
			added++;
		}
		{
			/* and the earlier Kelley cut of the link's whole load
			 * function, tangent at the boundary point D * load: it
			 * is not implied by the rows above and settles a round
			 * with one big clique in a few LPs (64-site all-to-all:
			 * 6 LPs with it, 18 without, each costly for its memory
			 * rows) */
			double rhs = -1;

			nz = 0;
			for (k = 0; k < S->nsend; k++) {
				double D0 = x[S->col_D[k]] * load, a;

				if (!S->mult[k * S->ndl + e])
					continue;
				a = S->mult[k * S->ndl + e] * S->dmin[e];
				nz++;
				S->ind[nz] = S->col_D[k];
				S->val[nz] = a * S->Dsc / (D0 * D0);
				rhs += 2 * a / D0;
			}
			if (add_row(lp, S, ROW_CAP, e, nz, rhs) < 0)
				return -ENOMEM;
			added++;
		}
		for (k = 0; k < S->nsend; k++) {
			double u = x[S->col_D[k]] / S->Dsc, y = x[S->col_y[k]];

			if (!S->mult[k * S->ndl + e] || cut[k] || y * u >= 1 - CAP_TOL / 4)
				continue;
			cut[k] = 1;
			if (add_tangent(lp, S, k, u) < 0)
				return -ENOMEM;
			added++;
			/* the second tangent only near the curve: far from it,
			 * 1/y is huge and its nearly flat row made GLPK's warm
			 * basis singular */
			if (y * u > 0.25 && 1 / y > u * (1 + 1e-9)) {
				if (add_tangent(lp, S, k, 1 / y) < 0)
					return -ENOMEM;
				added++;
			}
		}
	}
	return added;
}

/*
 * Polish: a feasible point near the (infeasible) LP point x. Each stream
 * is slowed by the largest overload on its links (D_j >= L_j D_j), which
 * fits every link (load is decreasing in every D), and the LP is re-solved
 * with those lower bounds, adding memory rows until none is violated: the
 * result meets every constraint, and its T is an upper bound to set
 * against the LP's lower bound. 1 solved, 0 infeasible, negative errno.
 */
static int
polish(glp_prob *lp, struct lpstate *S, const struct isth_topo *t, double mu, double *x,
	struct plan_round *o)
{
	double Lk[NMAX];
	int k, ok, nmem, guard;

	max_load(S, t, x, Lk);
	for (k = 0; k < S->nsend; k++) {
		double best = 0;
		int e;

		S->polink[k] = -1;
		for (e = 0; e < S->ndl; e++)
			if (S->mult[k * S->ndl + e] && link_load(S, t, x, e) > fmax(best, 1)) {
				best = link_load(S, t, x, e);
				S->polink[k] = e;
			}
	}
	for (k = 0; k < S->nsend; k++)
		glp_set_col_bnds(lp, S->col_D[k], GLP_LO,
			fmax(S->Dlow[k], Lk[k] * (1 + 4 * DBL_EPSILON) * x[S->col_D[k]]) / S->Dsc,
			0);
	for (guard = 0; guard < 4 * NMAX; guard++) {
		ok = solve_lp(lp, 0);
		o->iters++;
		if (ok <= 0)
			return ok;
		read_x(lp, S, x);
		nmem = add_mem_rows(lp, S, t, mu, x);
		if (nmem <= 0)
			return nmem < 0 ? nmem : 1;
	}
	return 1;
}

/*
 * Polish a copy of the LP at its current point x. 1: the polish is within
 * GAP_TOL of the LP's lower bound, and *lpp is now the polished copy (the
 * original is freed); 0: it is not (or the polish is infeasible), and
 * *lpp, the memory-row flags and the row metadata are as they were, so the
 * cutting-plane loop continues exactly as without the attempt; negative
 * errno. Polishing the problem itself and then restoring its bounds (as
 * before) also worked, but moved the simplex to another vertex and so
 * changed the rest of the cut sequence, sometimes for the worse.
 */
static int
try_polish(glp_prob **lpp, struct lpstate *S, const struct isth_topo *t, double mu, double *x,
	struct plan_round *o)
{
	glp_prob *cp = glp_create_prob();
	double Tlb = glp_get_col_prim(*lpp, 1), xs[3 * NMAX + 2];
	int nmeta = S->nmeta, ok, n = S->n;
	size_t memlen = mu < 1 ? (size_t)n * n * n * 2 : 0;
	uint8_t *memsave = NULL;

	if (memlen) {
		memsave = malloc(memlen);
		if (memsave == NULL) {
			glp_delete_prob(cp);
			return -ENOMEM;
		}
		memcpy(memsave, S->memadd, memlen);
	}
	memcpy(xs, x, sizeof(xs));
	glp_copy_prob(cp, *lpp, GLP_OFF);
	ok = polish(cp, S, t, mu, x, o);
	if (ok > 0 && glp_get_col_prim(cp, 1) <= Tlb * (1 + GAP_TOL) + 1e-9) {
		glp_delete_prob(*lpp);
		*lpp = cp;
		free(memsave);
		return 1;
	}
	glp_delete_prob(cp);
	if (memlen)
		memcpy(S->memadd, memsave, memlen);
	free(memsave);
	S->nmeta = nmeta;
	memcpy(x, xs, sizeof(xs));
	for (int k = 0; k < S->nsend; k++)
		S->polink[k] = -1;
	return ok < 0 ? ok : 0;
}

/* Reset a round's outcome to "not solved". */
static void
round_reset(struct plan_round *o)
{
	int i;

	o->feasible = 0;
	o->T = NAN;
	for (i = 0; i < NMAX; i++)
		o->off[i] = o->dur[i] = NAN;
	o->binding[0] = '\0';
	o->warn[0] = '\0';
}

/* The senders of the round (members of cliques of two or more) and whom each hears. */
static void
lp_senders(struct lpstate *S, int ncl, const uint64_t *cl)
{
	int c, i;

	for (c = 0; c < ncl; c++) {
		if (plan_popcount(cl[c]) < 2)
			continue;
		for (i = 0; i < S->n; i++)
			if (cl[c] >> i & 1) {
				S->rx[i] = cl[c] & ~(1ULL << i);
				S->snd[S->nsend++] = i;
			}
	}
}

/* Longest path latency from sender island @p j to one of its receivers, ms. */
static double
lp_max_lat(const struct lpstate *S, int j)
{
	double lmax = 0;
	int i;

	for (i = 0; i < S->n; i++)
		if (S->rx[j] >> i & 1)
			lmax = fmax(lmax, S->lat[j][i]);
	return lmax;
}

/*
 * What the LP is built from, for the senders lp_senders() found: latencies
 * along the routes (o->route), links per stream, each stream's lower bound
 * on D and the link (or access) that sets it, the scaling S->Dsc and the
 * memory-row tolerance. 0 or a negative errno.
 */
static int
lp_state(struct lpstate *S, const struct isth_topo *t, const struct isth_plan_params *p, double mu,
	double Dacc, const struct plan_round *o)
{
	int n = S->n, ndl = isth_topo_ndlinks(t), i, j, k, e, ret;
	double P = p->payload_bytes;

	S->ndl = ndl;
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			S->lat[i][j] = isth_topo_latency(t, i, j);
	S->mult = calloc((size_t)S->nsend * ndl, sizeof(int));
	S->dmin = calloc(ndl, sizeof(double));
	S->haslink = calloc(ndl, 1);
	S->ind = calloc(3 * NMAX + 2, sizeof(int));
	S->val = calloc(3 * NMAX + 2, sizeof(double));
	S->memadd = mu < 1 ? calloc((size_t)n * n * n * 2, 1) : NULL;
	if (S->mult == NULL || S->dmin == NULL || S->haslink == NULL || S->ind == NULL ||
		S->val == NULL || (mu < 1 && S->memadd == NULL))
		return -ENOMEM;
	for (e = 0; e < ndl; e++)
		S->dmin[e] = 8 * P * 1000 / plan_wan_cap(t, p, e);
	S->Dsc = 0;
	for (k = 0; k < S->nsend; k++) {
		j = S->snd[k];
		ret = plan_route_stream(
			t, j, S->rx[j], p->repl, o->route[j], &S->mult[k * ndl], S->lat[j]);
		if (ret < 0)
			return ret;
		S->Dlow[k] = Dacc;
		S->lowcap[k] = -1;
		for (e = 0; e < ndl; e++)
			if (S->mult[k * ndl + e] * S->dmin[e] > S->Dlow[k]) {
				S->Dlow[k] = S->mult[k * ndl + e] * S->dmin[e];
				S->lowcap[k] = e;
			}
		S->Dsc = fmax(S->Dsc, S->Dlow[k]);
	}
	/* a memory row violated by less than this is not added: 1e-7 ms, or
	 * 1e-7 of the shortest stream when streams are shorter than 1 ms */
	S->memtol = MEM_TOL;
	for (k = 0; k < S->nsend; k++)
		S->memtol = fmin(S->memtol, MEM_TOL * S->Dlow[k]);
	for (k = 0; k < S->nsend; k++) {
		S->kof[S->snd[k]] = k;
		S->polink[k] = -1;
	}
	return 0;
}

/*
 * With M = 0 the memory rows of receiver i are equalities: every
 * contributor's first byte arrives at once (t_j + l_ji = c_i for all j it
 * hears, @p rx[i], and then equal durations). T and the durations are free
 * above, so the round is feasible exactly when this system of differences
 * is: one pass over its graph (senders and receivers, one edge per
 * equation) sets potentials along a spanning forest and checks every other
 * edge. O(n^2), where proving it with the LP took minutes at 64 islands
 * (the cut loop adds O(n^3) memory rows and GLPK hit its limit). 1 if the
 * arrivals can align (within ALIGN_TOL), else 0.
 */
static int
can_align(int n, const uint64_t *rx, const double (*lat)[NMAX])
{
	double tv[NMAX], cv[NMAX];
	uint64_t tset = 0, cset = 0, recv = 0, send = 0;
	int queue[2 * NMAX], qh, qt, i, j;

	for (i = 0; i < n; i++)
		if (plan_popcount(rx[i]) >= 2) {
			recv |= 1ULL << i;
			send |= rx[i];
		}
	for (j = 0; j < n; j++) {
		if (!(send >> j & 1) || (tset >> j & 1))
			continue;
		tv[j] = 0;
		tset |= 1ULL << j;
		qh = qt = 0;
		queue[qt++] = j; /* 0..n-1: a sender, n..2n-1: a receiver */
		while (qh < qt) {
			int v = queue[qh++];

			for (i = 0; i < n; i++) {
				/* sender v and receiver i, or receiver v - n and sender i */
				int snd = v < n ? v : i, rcv = v < n ? i : v - n;

				if (!(recv >> rcv & 1) || !(rx[rcv] >> snd & 1))
					continue;
				if (v < n && !(cset >> rcv & 1)) {
					cv[rcv] = tv[snd] + lat[snd][rcv];
					cset |= 1ULL << rcv;
					queue[qt++] = n + rcv;
				} else if (v >= n && !(tset >> snd & 1)) {
					tv[snd] = cv[rcv] - lat[snd][rcv];
					tset |= 1ULL << snd;
					queue[qt++] = snd;
				} else if (fabs(tv[snd] + lat[snd][rcv] - cv[rcv]) > ALIGN_TOL) {
					return 0;
				}
			}
		}
	}
	return 1;
}

/*
 * The LP before any memory row or capacity cut: columns T, t_j, u_j, y_j,
 * the tangent of each y_j at u_j's lower bound and each sender's
 * completion row. NULL on ENOMEM. A GLPK error longjmps to glpk_jb, set by
 * the caller (solve_routed()).
 */
static glp_prob *
lp_build(struct lpstate *S, double delta)
{
	glp_prob *lp = glp_create_prob();
	double Dsc = S->Dsc;
	int k, j;

	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_cols(lp, 1 + 3 * S->nsend);
	glp_set_col_bnds(lp, 1, GLP_LO, 0, 0);
	glp_set_obj_coef(lp, 1, 1);
	for (k = 0; k < S->nsend; k++) {
		S->col_t[k] = 2 + 2 * k;
		S->col_D[k] = 3 + 2 * k;
		glp_set_col_bnds(lp, S->col_t[k], GLP_LO, 0, 0);
		glp_set_col_bnds(lp, S->col_D[k], GLP_LO, S->Dlow[k] / Dsc, 0);
		glp_set_obj_coef(lp, S->col_t[k], EPS_OBJ);
		/* EPS_OBJ per unit of u (not per ms): the pull towards faster
		 * streams must stay visible to GLPK whatever Dsc is, or the cut
		 * loop wanders along a cut instead of converging */
		glp_set_obj_coef(lp, S->col_D[k], EPS_OBJ);
		S->col_y[k] = 2 + 2 * S->nsend + k;
		glp_set_col_bnds(lp, S->col_y[k], GLP_LO, 0, 0);
	}
	/* y_k >= 1/u_k is exact at u_k's lower bound from the start */
	for (k = 0; k < S->nsend; k++)
		if (add_tangent(lp, S, k, S->Dlow[k] / Dsc) < 0)
			goto nomem;
	/* completion: T - t_j - Dsc u_j >= max_i l_ji + delta */
	for (k = 0; k < S->nsend; k++) {
		j = S->snd[k];
		S->ind[1] = 1;
		S->val[1] = 1;
		S->ind[2] = S->col_t[k];
		S->val[2] = -1;
		S->ind[3] = S->col_D[k];
		S->val[3] = -Dsc;
		if (add_row(lp, S, ROW_COMPL, j, 3, lp_max_lat(S, j) + delta) < 0)
			goto nomem;
	}
	return lp;
nomem:
	glp_delete_prob(lp);
	return NULL;
}

/*
 * Solve *lpp, adding violated memory rows and capacity cuts, until its
 * point satisfies everything or @p max_lps LPs were solved (then: a
 * feasible polish and a warning in o->warn). *lpp may become a polished
 * copy. 1 solved, 0 infeasible, negative errno.
 */
static int
cut_loop(glp_prob **lpp, struct lpstate *S, const struct isth_topo *t, double mu, int max_lps,
	struct plan_round *o)
{
	glp_prob *lp = *lpp;
	double x[3 * NMAX + 2];
	int it, ok = 0;

	for (it = 0; it < max_lps; it++) {
		int added, nmem;
		double lmax;

		/* the caller's budget (a search) ends the round, not the result */
		if (S->deadline && isth_clock_mono_ns() >= S->deadline)
			return -ETIME;

		ok = solve_lp(lp, it == 0);
		o->iters++;
		if (ok <= 0)
			break;
		read_x(lp, S, x);
		nmem = add_mem_rows(lp, S, t, mu, x);
		if (nmem < 0)
			return nmem;
		added = add_cap_cuts(lp, S, t, x, &lmax);
		if (added < 0)
			return added;
		if (added == 0 && nmem == 0)
			break;
		/* Kelley converges slowly once T no longer pulls on the rates
		 * (tiny payloads, many streams on shared links): every
		 * POLISH_EVERY LPs, bound the gap with a feasible polish of a
		 * copy of the LP and stop if it is closed. The copy leaves the
		 * cutting-plane sequence itself untouched, so a polish that
		 * does not close the gap costs one LP and nothing else. */
		if (nmem == 0 && it >= POLISH_EVERY && it % POLISH_EVERY == 0) {
			int tried = try_polish(&lp, S, t, mu, x, o);

			*lpp = lp;
			if (tried < 0)
				return tried;
			if (tried > 0)
				return 1;
		}
	}
	if (ok > 0 && it == max_lps) {
		/* the cap: a feasible polish of the last LP, and a warning
		 * with the gap to the LP's lower bound */
		double Tlb = glp_get_col_prim(lp, 1), lmax;

		read_x(lp, S, x);
		lmax = max_load(S, t, x, NULL);
		ok = polish(lp, S, t, mu, x, o);
		if (ok > 0)
			snprintf(o->warn, sizeof(o->warn),
				"cutting-plane cap of %d LPs hit (links up to %.1f ppm over); "
				"rates lowered to fit: T %.6f ms, at most %.1f ppm above optimal",
				max_lps, (lmax - 1) * 1e6, glp_get_col_prim(lp, 1),
				(glp_get_col_prim(lp, 1) / Tlb - 1) * 1e6);
	}
	return ok;
}

/*
 * An infeasible round: without memory rows the LP is always feasible (T
 * and D are unbounded above), so the memory rows are what binds; name the
 * first clique that cannot meet them on its own. 0 or -ENOMEM.
 */
static int
name_infeasible(const struct isth_topo *t, int ncl, const uint64_t *cl,
	const struct isth_plan_params *p, struct plan_round *o)
{
	char cs[512] = "";
	int c;

	if (ncl > 1) {
		for (c = 0; c < ncl; c++) {
			struct plan_round *o2;

			if (plan_popcount(cl[c]) < 3)
				continue;
			o2 = calloc(1, sizeof(*o2));
			if (o2 == NULL)
				return -ENOMEM;
			if (plan_solve_round(t, 1, &cl[c], p, o2) == 0 && !o2->feasible)
				clique_str(t, cl[c], cs, sizeof(cs));
			o->iters += o2->iters;
			free(o2);
			if (cs[0])
				break;
		}
	} else {
		clique_str(t, cl[0], cs, sizeof(cs));
	}
	snprintf(o->binding, sizeof(o->binding),
		"memory: M=%.6g B cannot hold clique %s (arrivals cannot align)", p->memory_bytes,
		cs[0] ? cs : "(several cliques together)");
	return 0;
}

/*
 * Offsets, durations and T from the solved LP. GLPK meets bounds to its
 * tolerance in its scaled space; when streams last nanoseconds next to
 * 100 ms latencies that is a relative 1e-4 of D. Clamp to the bounds (a
 * polish's bounds fit every link exactly) and let T follow, so the written
 * plan never outruns a link.
 */
static void
read_solution(glp_prob *lp, const struct lpstate *S, double delta, struct plan_round *o)
{
	double Dsc = S->Dsc;
	int k, j;

	o->T = glp_get_col_prim(lp, 1);
	for (k = 0; k < S->nsend; k++) {
		double lb = glp_get_col_lb(lp, S->col_D[k]) * Dsc;

		j = S->snd[k];
		o->off[j] = fmax(0, glp_get_col_prim(lp, S->col_t[k]));
		o->dur[j] = fmax(glp_get_col_prim(lp, S->col_D[k]) * Dsc, fmax(lb, S->Dlow[k]));
		o->T = fmax(o->T, o->off[j] + o->dur[j] + lp_max_lat(S, j) + delta);
	}
}

/* o->binding: the non-completion constraint with the largest dual. */
static void
name_binding(glp_prob *lp, const struct lpstate *S, const struct isth_topo *t, struct plan_round *o)
{
	double best = 1e-4;
	char name[96];
	int r, k;

	snprintf(o->binding, sizeof(o->binding), "latency");
	for (r = 1; r <= glp_get_num_rows(lp); r++) {
		double d = fabs(glp_get_row_dual(lp, r));
		const struct rowmeta *m = &S->meta[r - 1];

		if (m->kind == ROW_COMPL || m->kind == ROW_TAN || d <= best)
			continue;
		best = d;
		if (m->kind == ROW_MEM) {
			snprintf(o->binding, sizeof(o->binding), "memory @%s",
				isth_topo_name(t, m->a));
		} else {
			isth_topo_dlink_name(t, m->a, name, sizeof(name));
			snprintf(o->binding, sizeof(o->binding), "capacity %s", name);
		}
	}
	for (k = 0; k < S->nsend; k++) {
		/* the dual of u_j's bound, per ms of D */
		double d = fabs(glp_get_col_dual(lp, S->col_D[k])) / S->Dsc;
		int e = S->polink[k] >= 0 ? S->polink[k] : S->lowcap[k];

		if (d <= best)
			continue;
		best = d;
		if (e < 0) {
			snprintf(o->binding, sizeof(o->binding), "access");
		} else {
			isth_topo_dlink_name(t, e, name, sizeof(name));
			snprintf(o->binding, sizeof(o->binding), "capacity %s", name);
		}
	}
}

/* The round's LP with every stream on the given routes (o->route). */
static int
solve_routed(const struct isth_topo *t, int ncl, const uint64_t *cl,
	const struct isth_plan_params *p, struct plan_round *o)
{
	struct lpstate *S;
	glp_prob *volatile lp = NULL;
	double P = p->payload_bytes, mu, delta, Dacc;
	int max_lps = p->max_lps > 0 ? p->max_lps : PLAN_MAX_LPS, ret = 0, ok;

	S = calloc(1, sizeof(*S));
	if (S == NULL)
		return -ENOMEM;
	S->n = isth_topo_n(t);
	S->deadline = p->deadline_ns;
	round_reset(o);
	if (!(P > 0) || !isfinite(P) || !(p->access_bps > 0) || !(p->memory_bytes >= 0) ||
		isnan(isth_plan_headroom(p))) {
		ret = -EINVAL;
		goto out;
	}
	mu = p->memory_bytes / P;
	Dacc = 8 * P * 1000 / p->access_bps;
	delta = 2 * p->access_ms + 8 * fmin(p->chunk_bytes, P) * 1000 / p->access_bps;
	lp_senders(S, ncl, cl);
	if (S->nsend == 0) {
		o->feasible = 1;
		o->T = 0;
		snprintf(o->binding, sizeof(o->binding), "none (no island sends)");
		goto out;
	}
	ret = lp_state(S, t, p, mu, Dacc, o);
	if (ret < 0)
		goto out;
	if (mu == 0 && !can_align(S->n, S->rx, (const double(*)[NMAX])S->lat)) {
		/* structurally infeasible: no LP needed to know */
		ret = name_infeasible(t, ncl, cl, p, o);
		goto out;
	}

	glp_term_out(GLP_OFF);
	glp_error_hook(glpk_hook, NULL);
	if (setjmp(glpk_jb)) {
		/* GLPK's state is undefined after its error: drop all of it */
		glp_free_env();
		lp = NULL;
		ret = -EIO;
		goto out;
	}
	lp = lp_build(S, delta);
	if (lp == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	{
		glp_prob *cur = lp;

		ok = cut_loop(&cur, S, t, mu, max_lps, o);
		lp = cur;
	}
	if (ok < 0) {
		ret = ok;
		goto out;
	}
	if (ok == 0) {
		glp_delete_prob(lp);
		lp = NULL;
		ret = name_infeasible(t, ncl, cl, p, o);
		goto out;
	}
	o->feasible = 1;
	read_solution(lp, S, delta, o);
	name_binding(lp, S, t, o);
	if (p->max_round_ms > 0 && o->T > p->max_round_ms) {
		char why[160];

		memcpy(why, o->binding, sizeof(why));
		o->feasible = 0;
		snprintf(o->binding, sizeof(o->binding),
			"completion: T=%.3f ms > max %.3f ms (%.80s)", o->T, p->max_round_ms, why);
	}
out:
	if (lp != NULL)
		glp_delete_prob(lp);
	glp_error_hook(NULL, NULL);
	free(S->mult);
	free(S->dmin);
	free(S->haslink);
	free(S->ind);
	free(S->val);
	free(S->memadd);
	free(S->meta);
	free(S);
	return ret;
}

/*
 * Rounds are independent LPs, so isth_plan_solve() hands them to worker
 * threads (p->threads) and merges the outcomes in round order: the result
 * is the same whatever the number of threads. Each worker owns its GLPK
 * problems and environment (glp_free_env() when it ends); the k-path table
 * is built before the workers start, so they only read it.
 */
struct solve_job {
	const struct isth_topo *t;
	const struct isth_plan_cliques *s;
	const struct isth_plan_params *p;
	struct plan_round *o; /* nrounds outcomes */
	int *ret; /* per round: plan_solve_round()'s return */
	int *dup; /* per round: earlier round with the same cliques, or -1 */
	pthread_mutex_t mu;
	int next; /* next round to hand out (under mu) */
	int stop; /* first round that failed or is infeasible (under mu) */
};

static void *
solve_worker(void *arg)
{
	struct solve_job *J = arg;

	for (;;) {
		int k;

		pthread_mutex_lock(&J->mu);
		k = J->next++;
		/* rounds after an infeasible one are never read */
		if (k >= J->stop)
			k = -1;
		pthread_mutex_unlock(&J->mu);
		if (k < 0)
			break;
		if (J->dup[k] >= 0)
			continue;
		J->o[k].iters = 0;
		if (J->p->deadline_ns && isth_clock_mono_ns() >= J->p->deadline_ns)
			J->ret[k] = -ETIME; /* the budget is spent: no round starts */
		else if (J->s->ntree[k] > 0) /* a reduction-tree round: its model, no LP */
			J->ret[k] = plan_tree_round(J->t, J->s->ntree[k],
				(const int8_t(*)[NMAX])J->s->tpar[k], J->p, &J->o[k]);
		else
			J->ret[k] = plan_solve_round(
				J->t, J->s->ncl[k], &J->s->cl[k * NMAX], J->p, &J->o[k]);
		if (J->ret[k] < 0 || !J->o[k].feasible) {
			pthread_mutex_lock(&J->mu);
			if (k < J->stop)
				J->stop = k;
			pthread_mutex_unlock(&J->mu);
		}
	}
	glp_free_env();
	return NULL;
}

/* Sort a round's cliques so that equal rounds compare equal. */
static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* dup[k]: the first earlier round with the same set of cliques (it has
 * the same LP, routes included), or -1. */
static void
find_dups(const struct isth_plan_cliques *s, int *dup)
{
	uint64_t(*key)[NMAX] = calloc(s->nrounds, sizeof(*key));
	int k, q;

	for (k = 0; k < s->nrounds; k++)
		dup[k] = -1;
	if (key == NULL)
		return; /* no cache: every round is solved */
	for (k = 0; k < s->nrounds; k++) {
		if (s->ntree[k] > 0)
			continue; /* its trees make it its own round */
		memcpy(key[k], &s->cl[k * NMAX], s->ncl[k] * sizeof(uint64_t));
		qsort(key[k], s->ncl[k], sizeof(uint64_t), cmp_u64);
		for (q = 0; q < k && dup[k] < 0; q++)
			if (s->ncl[q] == s->ncl[k] && dup[q] < 0 && s->ntree[q] == 0 &&
				memcmp(key[q], key[k], s->ncl[k] * sizeof(uint64_t)) == 0)
				dup[k] = q;
	}
	free(key);
}

int
plan_nthreads(const struct isth_plan_params *p, int nrounds)
{
	long n = p->threads;

	if (n <= 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		if (n < 1)
			n = 1;
	}
	if (n > ISTH_PLAN_MAX_THREADS)
		n = ISTH_PLAN_MAX_THREADS;
	if (n > nrounds)
		n = nrounds;
	return (int)n;
}

int
isth_plan_solve(const struct isth_topo *t, const struct isth_plan_cliques *s,
	const struct isth_plan_params *p, struct isth_plan_result **out)
{
	struct isth_plan_result *r;
	struct solve_job J;
	pthread_t tid[ISTH_PLAN_MAX_THREADS];
	int k, nth, started = 0, ret = 0;

	if (t == NULL || s == NULL || p == NULL || out == NULL || s->n != isth_topo_n(t) ||
		p->threads < 0 || isnan(isth_plan_headroom(p)))
		return -EINVAL;
	*out = NULL;
	memset(&J, 0, sizeof(J));
	r = calloc(1, sizeof(*r));
	J.o = calloc(s->nrounds, sizeof(*J.o));
	J.ret = calloc(s->nrounds, sizeof(int));
	J.dup = calloc(s->nrounds, sizeof(int));
	if (r == NULL || J.o == NULL || J.ret == NULL || J.dup == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	r->n = s->n;
	r->nrounds = s->nrounds;
	r->payload = p->payload_bytes;
	r->memory = p->memory_bytes;
	r->chunk = p->chunk_bytes;
	r->t = calloc((size_t)s->nrounds * s->n, sizeof(double));
	r->D = calloc((size_t)s->nrounds * s->n, sizeof(double));
	r->Tr = calloc(s->nrounds, sizeof(double));
	r->warn = calloc(s->nrounds, sizeof(*r->warn));
	r->route = calloc((size_t)s->nrounds * s->n * s->n, 1);
	if (r->t == NULL || r->D == NULL || r->Tr == NULL || r->warn == NULL || r->route == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	/* build the shared k-path table now: workers must only read it */
	if (plan_kpaths_pin(t) < 0) {
		ret = -ENOMEM;
		goto fail;
	}
	find_dups(s, J.dup);
	J.t = t;
	J.s = s;
	J.p = p;
	J.stop = s->nrounds;
	nth = plan_nthreads(p, s->nrounds);
	if (pthread_mutex_init(&J.mu, NULL) != 0) {
		ret = -ENOMEM;
		goto fail;
	}
	for (k = 1; k < nth; k++) {
		if (pthread_create(&tid[k], NULL, solve_worker, &J) != 0)
			break; /* fewer threads: the others take the rounds */
		started++;
	}
	/* the caller's thread works too, in its own GLPK environment; it
	 * frees that environment like every worker (as before this change) */
	solve_worker(&J);
	for (k = 1; k <= started; k++)
		pthread_join(tid[k], NULL);
	pthread_mutex_destroy(&J.mu);
	plan_kpaths_pin(NULL);

	r->feasible = 1;
	r->T = 0;
	for (k = 0; k < s->nrounds; k++) {
		const struct plan_round *o = &J.o[J.dup[k] >= 0 ? J.dup[k] : k];

		ret = J.ret[J.dup[k] >= 0 ? J.dup[k] : k];
		/* a repeated round counts its LPs again: the total does not
		 * depend on the cache */
		r->lp_iters += o->iters;
		if (ret < 0)
			goto fail;
		r->Tr[k] = o->T;
		memcpy(&r->t[k * s->n], o->off, s->n * sizeof(double));
		memcpy(&r->D[k * s->n], o->dur, s->n * sizeof(double));
		for (int j = 0; j < s->n; j++)
			memcpy(&r->route[((size_t)k * s->n + j) * s->n], o->route[j], s->n);
		if (o->warn[0]) {
			snprintf(r->warn[k], sizeof(r->warn[k]), "%s", o->warn);
			r->nwarn++;
		}
		if (!o->feasible) {
			r->feasible = 0;
			snprintf(r->binding, sizeof(r->binding), "%s", o->binding);
			break;
		}
		if (r->Tr[k] >= r->T) {
			r->T = r->Tr[k];
			snprintf(r->binding, sizeof(r->binding), "%s", o->binding);
		}
	}
	if (!r->feasible)
		r->T = NAN;
	free(J.o);
	free(J.ret);
	free(J.dup);
	*out = r;
	return 0;
fail:
	plan_kpaths_pin(NULL);
	free(J.o);
	free(J.ret);
	free(J.dup);
	isth_plan_result_free(r);
	return ret;
}

/*
 * At M = 0, whether the round's arrivals can align on shortest paths
 * (can_align()); always 1 with memory. A round that cannot is refused on
 * them at once, without choosing capacity routes first (at 64 islands
 * that choice alone took seconds): rerouting changes latencies by whole
 * links, and alignment needs them equal to the nanosecond.
 */
int
plan_round_aligns(
	const struct isth_topo *t, int ncl, const uint64_t *cl, const struct isth_plan_params *p)
{
	static _Thread_local double lat[NMAX][NMAX];
	uint64_t rx[NMAX] = {0};
	int n = isth_topo_n(t), c, i, j;

	if (p->memory_bytes > 0)
		return 1;
	for (c = 0; c < ncl; c++)
		for (i = 0; i < n; i++)
			if (plan_popcount(cl[c]) >= 3 && (cl[c] >> i & 1))
				rx[i] = cl[c] & ~(1ULL << i);
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			lat[i][j] = isth_topo_latency(t, i, j);
	return can_align(n, rx, (const double(*)[NMAX])lat);
}

int
plan_solve_round(const struct isth_topo *t, int ncl, const uint64_t *cl,
	const struct isth_plan_params *p, struct plan_round *o)
{
	struct plan_round *o2;
	int ret, i, changed = 0;

	memset(o->route, 0, sizeof(o->route));
	if (p->routing == ISTH_PLAN_ROUTING_SHORTEST || !plan_round_aligns(t, ncl, cl, p))
		return solve_routed(t, ncl, cl, p, o);
	ret = plan_choose_routes(t, ncl, cl, p, o->route);
	if (ret < 0)
		return ret;
	for (i = 0; i < NMAX * NMAX; i++)
		changed |= o->route[i / NMAX][i % NMAX];
	ret = solve_routed(t, ncl, cl, p, o);
	if (ret < 0 || !changed)
		return ret;
	/* the estimate behind the routes ignores alignment: keep shortest
	 * paths when they do better in the LP itself */
	o2 = calloc(1, sizeof(*o2));
	if (o2 == NULL)
		return -ENOMEM;
	ret = solve_routed(t, ncl, cl, p, o2);
	o->iters += o2->iters;
	/* feasible beats infeasible (rerouted latencies may not align at
	 * M = 0), a trusted round beats one that hit the cap, then lower T */
	if (ret == 0 && o2->feasible &&
		(!o->feasible || (o->warn[0] && !o2->warn[0]) ||
			(!o->warn[0] == !o2->warn[0] && o2->T < o->T - 1e-9))) {
		o2->iters = o->iters;
		*o = *o2;
	}
	free(o2);
	return ret < 0 ? ret : 0;
}
