/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The round LP (doc/planner.md, "The LP"). Variables per sender j: the
 * offset t_j and the transmission duration D_j (rate = 8P / D_j), plus T.
 * Completion and memory are linear in (t, D); link capacity
 * sum_j m_je * 8P / D_j <= c_e is convex in D and is imposed by Kelley
 * cutting planes (tangents of 1/D at the boundary), added lazily with the memory rows until
 * the LP optimum satisfies everything. GLPK is confined to this file.
 */
#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

#define MAX_ITERS 400
#define MEM_TOL 1e-7     /* ms */
#define CAP_TOL 1e-6     /* relative overload accepted: the pacer shaves far more */
#define EPS_OBJ 1e-6     /* tie-break: earliest offsets, fastest streams */

enum rowkind { ROW_COMPL, ROW_MEM, ROW_CAP };

struct rowmeta {
	int kind;
	int a;                  /* ROW_COMPL: sender; ROW_MEM: receiver; ROW_CAP: link */
};

static jmp_buf glpk_jb;

static void
glpk_hook(void *info)
{
	(void)info;
	longjmp(glpk_jb, 1);
}

struct lpstate {
	int n, nsend;
	int snd[NMAX];          /* sender index -> island */
	int col_t[NMAX], col_D[NMAX];
	double Dlow[NMAX];
	int lowcap[NMAX];       /* link that sets Dlow, -1 if access */
	uint64_t rx[NMAX];      /* contributors heard by receiver i */
	int *mult;              /* nsend * ndl */
	double *dmin;           /* per link: 8P/c_e in ms */
	uint8_t *memadd;        /* n*n*n*2: memory row already added */
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
solve_lp(glp_prob *lp, int first)
{
	glp_smcp parm;
	int ret;

	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.meth = first ? GLP_PRIMAL : GLP_DUALP;
	ret = glp_simplex(lp, &parm);
	if (ret == 0 && glp_get_status(lp) == GLP_OPT)
		return 1;
	/* a warm start can stall: retry from scratch before calling it infeasible */
	glp_adv_basis(lp, 0);
	parm.meth = GLP_PRIMAL;
	ret = glp_simplex(lp, &parm);
	if (ret == 0 && glp_get_status(lp) == GLP_OPT)
		return 1;
	if (ret == 0 && (glp_get_status(lp) == GLP_NOFEAS || glp_get_status(lp) == GLP_INFEAS))
		return 0;
	return ret == 0 ? 0 : -1;
}

static void
clique_str(const struct isth_topo *t, uint64_t m, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	o += snprintf(buf + o, len - o, "{");
	for (i = 0; i < isth_topo_n(t) && o < len; i++)
		if (m >> i & 1)
			o += snprintf(buf + o, len - o, "%s%s", o > 1 ? "," : "", isth_topo_name(t, i));
	if (o < len)
		snprintf(buf + o, len - o, "}");
}

int
plan_solve_round(const struct isth_topo *t, int ncl, const uint64_t *cl,
		 const struct isth_plan_params *p, int *feasible, double *T, double *off,
		 double *dur, char *binding, size_t blen, int *iters)
{
	struct lpstate *S;
	glp_prob *volatile lp = NULL;
	double P = p->payload_bytes, mu, delta, Dacc;
	int n = isth_topo_n(t), ndl = isth_topo_ndlinks(t), c, i, j, k, e, it, ret = 0, ok;

		S = calloc(1, sizeof(*S));
	if (S == NULL)
		return -ENOMEM;
	S->n = n;
	*feasible = 0;
	*T = NAN;
	for (i = 0; i < n; i++)
		off[i] = dur[i] = NAN;
	if (binding && blen)
		binding[0] = '\0';
	if (P <= 0 || p->access_bps <= 0 || p->memory_bytes < 0) {
		ret = -EINVAL;
		goto out;
	}
	mu = p->memory_bytes / P;
	Dacc = 8 * P * 1000 / p->access_bps;
	delta = 2 * p->access_ms + 8 * fmin(p->chunk_bytes, P) * 1000 / p->access_bps;

	for (c = 0; c < ncl; c++) {
		if (plan_popcount(cl[c]) < 2)
			continue;
		for (i = 0; i < n; i++)
			if (cl[c] >> i & 1) {
				S->rx[i] = cl[c] & ~(1ULL << i);
				S->snd[S->nsend++] = i;
			}
	}
	if (S->nsend == 0) {
		*feasible = 1;
		*T = 0;
		if (binding && blen)
			snprintf(binding, blen, "none (no island sends)");
		goto out;
	}
	S->mult = calloc((size_t)S->nsend * ndl, sizeof(int));
	S->dmin = calloc(ndl, sizeof(double));
	S->ind = calloc(2 * NMAX + 2, sizeof(int));
	S->val = calloc(2 * NMAX + 2, sizeof(double));
	S->memadd = mu < 1 ? calloc((size_t)n * n * n * 2, 1) : NULL;
	if (S->mult == NULL || S->dmin == NULL || S->ind == NULL || S->val == NULL ||
	    (mu < 1 && S->memadd == NULL)) {
		ret = -ENOMEM;
		goto out;
	}
	for (e = 0; e < ndl; e++) {
		double cap_bps;

		isth_topo_dlink(t, e, NULL, NULL, NULL, &cap_bps);
		S->dmin[e] = 8 * P * 1000 / cap_bps;
	}
	for (k = 0; k < S->nsend; k++) {
		j = S->snd[k];
		isth_topo_stream_links(t, j, S->rx[j], p->repl == ISTH_PLAN_REPL_EDGE, &S->mult[k * ndl]);
		S->Dlow[k] = Dacc;
		S->lowcap[k] = -1;
		for (e = 0; e < ndl; e++)
			if (S->mult[k * ndl + e] * S->dmin[e] > S->Dlow[k]) {
				S->Dlow[k] = S->mult[k * ndl + e] * S->dmin[e];
				S->lowcap[k] = e;
			}
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
	lp = glp_create_prob();
	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_cols(lp, 1 + 2 * S->nsend);
	glp_set_col_bnds(lp, 1, GLP_LO, 0, 0);
	glp_set_obj_coef(lp, 1, 1);
	for (k = 0; k < S->nsend; k++) {
		S->col_t[k] = 2 + 2 * k;
		S->col_D[k] = 3 + 2 * k;
		glp_set_col_bnds(lp, S->col_t[k], GLP_LO, 0, 0);
		glp_set_col_bnds(lp, S->col_D[k], GLP_LO, S->Dlow[k], 0);
		glp_set_obj_coef(lp, S->col_t[k], EPS_OBJ);
		glp_set_obj_coef(lp, S->col_D[k], EPS_OBJ);
	}
	/* completion: T - t_j - D_j >= max_i l_ji + delta */
	for (k = 0; k < S->nsend; k++) {
		double lmax = 0;

		j = S->snd[k];
		for (i = 0; i < n; i++)
			if (S->rx[j] >> i & 1)
				lmax = fmax(lmax, isth_topo_latency(t, j, i));
		S->ind[1] = 1;
		S->val[1] = 1;
		S->ind[2] = S->col_t[k];
		S->val[2] = -1;
		S->ind[3] = S->col_D[k];
		S->val[3] = -1;
		if (add_row(lp, S, ROW_COMPL, j, 3, lmax + delta) < 0) {
			ret = -ENOMEM;
			goto out;
		}
	}

	{
		int kof[NMAX];

		for (k = 0; k < S->nsend; k++)
			kof[S->snd[k]] = k;
		for (it = 0; it < MAX_ITERS; it++) {
			int added = 0;
			double x[2 * NMAX + 2];

			ok = solve_lp(lp, it == 0);
			(*iters)++;
			if (ok <= 0)
				break;
			for (k = 0; k < S->nsend; k++) {
				x[S->col_t[k]] = glp_get_col_prim(lp, S->col_t[k]);
				x[S->col_D[k]] = glp_get_col_prim(lp, S->col_D[k]);
			}
			/* memory: for receiver i and contributors j != k,
			 *   t_j + l_ji + mu D_j >= t_k + l_ki
			 *   t_j + l_ji + D_j >= t_k + l_ki + (1 - mu) D_k */
			for (i = 0; i < n && mu < 1; i++) {
				if (plan_popcount(S->rx[i]) < 2)
					continue;
				for (j = 0; j < n; j++) {
					int kj = kof[j];

					if (!(S->rx[i] >> j & 1))
						continue;
					for (int q = 0; q < n; q++) {
						int kq = kof[q];
						double tj, tq, Dj, Dq, v1, v2;
						size_t b = (((size_t)i * n + j) * n + q) * 2;

						if (q == j || !(S->rx[i] >> q & 1))
							continue;
						tj = x[S->col_t[kj]];
						tq = x[S->col_t[kq]];
						Dj = x[S->col_D[kj]];
						Dq = x[S->col_D[kq]];
						v1 = tj + isth_topo_latency(t, j, i) + mu * Dj - tq - isth_topo_latency(t, q, i);
						v2 = tj + isth_topo_latency(t, j, i) + Dj - tq - isth_topo_latency(t, q, i) - (1 - mu) * Dq;
						if (v1 < -MEM_TOL && !S->memadd[b]) {
							S->memadd[b] = 1;
							S->ind[1] = S->col_t[kj];
							S->val[1] = 1;
							S->ind[2] = S->col_D[kj];
							S->val[2] = mu;
							S->ind[3] = S->col_t[kq];
							S->val[3] = -1;
							if (add_row(lp, S, ROW_MEM, i, 3,
								    isth_topo_latency(t, q, i) -
								    isth_topo_latency(t, j, i)) < 0) {
								ret = -ENOMEM;
								goto out;
							}
							added++;
						}
						if (v2 < -MEM_TOL && !S->memadd[b + 1]) {
							S->memadd[b + 1] = 1;
							S->ind[1] = S->col_t[kj];
							S->val[1] = 1;
							S->ind[2] = S->col_D[kj];
							S->val[2] = 1;
							S->ind[3] = S->col_t[kq];
							S->val[3] = -1;
							S->ind[4] = S->col_D[kq];
							S->val[4] = -(1 - mu);
							if (add_row(lp, S, ROW_MEM, i, 4,
								    isth_topo_latency(t, q, i) -
								    isth_topo_latency(t, j, i)) < 0) {
								ret = -ENOMEM;
								goto out;
							}
							added++;
						}
					}
				}
			}
			/* capacity: Kelley cut at the current D where a link is overloaded:
			 * sum_j m_je dmin_e (2/D0_j - D_j/D0_j^2) <= 1 */
			for (e = 0; e < ndl; e++) {
				double load = 0, rhs = -1;
				int nz = 0;

				for (k = 0; k < S->nsend; k++)
					if (S->mult[k * ndl + e])
						load += S->mult[k * ndl + e] * S->dmin[e] / x[S->col_D[k]];
				if (load <= 1 + CAP_TOL)
					continue;
				for (k = 0; k < S->nsend; k++) {
					/* tangent at the boundary point D * load (supporting
					 * hyperplane): far stronger than a tangent at the
					 * infeasible point itself */
					double D0 = x[S->col_D[k]] * load, a;

					if (!S->mult[k * ndl + e])
						continue;
					a = S->mult[k * ndl + e] * S->dmin[e];
					nz++;
					S->ind[nz] = S->col_D[k];
					S->val[nz] = a / (D0 * D0);
					rhs += 2 * a / D0;
				}
				if (add_row(lp, S, ROW_CAP, e, nz, rhs) < 0) {
					ret = -ENOMEM;
					goto out;
				}
				added++;
			}
			if (!added)
				break;
		}
		if (ok < 0) {
			ret = -EIO;
			goto out;
		}
		if (ok == 0) {
			char cs[512] = "";

			/* Without memory rows the LP is always feasible (T and D are
			 * unbounded above), so the memory rows are what binds; name the
			 * first clique that cannot meet them on its own. */
			glp_delete_prob(lp);
			lp = NULL;
			if (ncl > 1) {
				for (c = 0; c < ncl; c++) {
					int f2 = 0, it2 = 0;
					double T2, o2[NMAX], d2[NMAX];

					if (plan_popcount(cl[c]) < 3)
						continue;
					if (plan_solve_round(t, 1, &cl[c], p, &f2, &T2, o2, d2, NULL, 0, &it2) == 0 &&
					    !f2) {
						clique_str(t, cl[c], cs, sizeof(cs));
						break;
					}
				}
			} else {
				clique_str(t, cl[0], cs, sizeof(cs));
			}
			if (binding && blen)
				snprintf(binding, blen,
					 "memory: M=%.6g B cannot hold clique %s (arrivals cannot align)",
					 p->memory_bytes, cs[0] ? cs : "(several cliques together)");
			goto out;
		}
		if (it == MAX_ITERS && binding && blen)
			snprintf(binding, blen, "warning: cut loop hit %d iterations", MAX_ITERS);
		*feasible = 1;
		*T = glp_get_col_prim(lp, 1);
		for (k = 0; k < S->nsend; k++) {
			off[S->snd[k]] = glp_get_col_prim(lp, S->col_t[k]);
			dur[S->snd[k]] = glp_get_col_prim(lp, S->col_D[k]);
		}
		if (binding && blen && binding[0] == '\0') {
			/* the non-completion constraint with the largest dual binds */
			double best = 1e-4;
			char name[96];
			int r;

			snprintf(binding, blen, "latency");
			for (r = 1; r <= glp_get_num_rows(lp); r++) {
				double d = fabs(glp_get_row_dual(lp, r));
				struct rowmeta *m = &S->meta[r - 1];

				if (m->kind == ROW_COMPL || d <= best)
					continue;
				best = d;
				if (m->kind == ROW_MEM) {
					snprintf(binding, blen, "memory @%s", isth_topo_name(t, m->a));
				} else {
					isth_topo_dlink_name(t, m->a, name, sizeof(name));
					snprintf(binding, blen, "capacity %s", name);
				}
			}
			for (k = 0; k < S->nsend; k++) {
				double d = fabs(glp_get_col_dual(lp, S->col_D[k]));

				if (d <= best)
					continue;
				best = d;
				if (S->lowcap[k] < 0) {
					snprintf(binding, blen, "access");
				} else {
					isth_topo_dlink_name(t, S->lowcap[k], name, sizeof(name));
					snprintf(binding, blen, "capacity %s", name);
				}
			}
		}
		if (p->max_round_ms > 0 && *T > p->max_round_ms) {
			char why[96];

			snprintf(why, sizeof(why), "%s", binding ? binding : "");
			*feasible = 0;
			if (binding && blen)
				snprintf(binding, blen, "completion: T=%.3f ms > max %.3f ms (%s)", *T,
					 p->max_round_ms, why);
		}
	}
out:
	if (lp != NULL)
		glp_delete_prob(lp);
	glp_error_hook(NULL, NULL);
	free(S->mult);
	free(S->dmin);
	free(S->ind);
	free(S->val);
	free(S->memadd);
	free(S->meta);
	free(S);
	return ret;
}

int
isth_plan_solve(const struct isth_topo *t, const struct isth_plan_sched *s,
		const struct isth_plan_params *p, struct isth_plan_result **out)
{
	struct isth_plan_result *r;
	int k, ret = 0;

	if (t == NULL || s == NULL || p == NULL || out == NULL || s->n != isth_topo_n(t))
		return -EINVAL;
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	r->n = s->n;
	r->nrounds = s->nrounds;
	r->payload = p->payload_bytes;
	r->memory = p->memory_bytes;
	r->t = calloc((size_t)s->nrounds * s->n, sizeof(double));
	r->D = calloc((size_t)s->nrounds * s->n, sizeof(double));
	r->Tr = calloc(s->nrounds, sizeof(double));
	if (r->t == NULL || r->D == NULL || r->Tr == NULL) {
		isth_plan_result_free(r);
		return -ENOMEM;
	}
	r->feasible = 1;
	r->T = 0;
	for (k = 0; k < s->nrounds; k++) {
		int f = 0;
		char b[160];

		ret = plan_solve_round(t, s->ncl[k], &s->cl[k * NMAX], p, &f, &r->Tr[k],
				       &r->t[k * s->n], &r->D[k * s->n], b, sizeof(b), &r->lp_iters);
		if (ret < 0) {
			isth_plan_result_free(r);
			return ret;
		}
		if (!f) {
			r->feasible = 0;
			snprintf(r->binding, sizeof(r->binding), "%s", b);
			break;
		}
		if (r->Tr[k] >= r->T) {
			r->T = r->Tr[k];
			snprintf(r->binding, sizeof(r->binding), "%s", b);
		}
	}
	if (!r->feasible)
		r->T = NAN;
	*out = r;
	return 0;
}
