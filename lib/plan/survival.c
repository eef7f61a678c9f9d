/* SPDX-License-Identifier: BSD-3-Clause */
/* Survival curves and A (doc/planner.md, "Survival curves"). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

/* Does the union of all cliques over the cycle connect every island? */
static int
mixes(const struct isth_plan_cliques *s)
{
	uint64_t all = s->n == 64 ? ~0ULL : (1ULL << s->n) - 1, reach = 1, prev = 0;
	int r, c;

	while (reach != prev) {
		prev = reach;
		for (r = 0; r < s->nrounds; r++)
			for (c = 0; c < s->ncl[r]; c++)
				if (s->cl[r * NMAX + c] & reach)
					reach |= s->cl[r * NMAX + c];
	}
	return reach == all;
}

/* One generation: informed set after k rounds, starting at phase ph. */
static uint64_t
flood_step(const struct isth_plan_cliques *s, int ph, uint64_t inf)
{
	int r = ph % s->nrounds, c;
	uint64_t out = inf;

	for (c = 0; c < s->ncl[r]; c++)
		if (s->cl[r * NMAX + c] & inf)
			out |= s->cl[r * NMAX + c];
	return out;
}

/*
 * Phi <- W_r Phi: each row becomes the mean of its clique's rows. The
 * members are listed once per clique, lowest first, so every sum adds the
 * same rows in the same order as a scan of all n islands would, at
 * O(|clique| n) instead of O(n^2) per clique: with 32 pairs a round on
 * 64 islands that scan was three quarters of planning pairs.
 */
static void
avg_step(const struct isth_plan_cliques *s, int r, double *phi, double *tmp)
{
	int n = s->n, c, i, j, q;

	r %= s->nrounds;
	for (c = 0; c < s->ncl[r]; c++) {
		uint64_t m = s->cl[r * NMAX + c], b;
		int k = 0, mem[NMAX];

		for (b = m; b; b &= b - 1)
			mem[k++] = __builtin_ctzll(b);
		if (k < 2)
			continue; /* a singleton's row is its own mean */
		for (j = 0; j < n; j++) {
			double sum = 0;

			for (q = 0; q < k; q++)
				sum += phi[mem[q] * n + j];
			tmp[j] = sum / k;
		}
		for (q = 0; q < k; q++) {
			i = mem[q];
			memcpy(&phi[i * n], tmp, n * sizeof(double));
		}
	}
}

static double
frob_term(const double *phi, int n)
{
	double f = 0;
	int i;

	for (i = 0; i < n * n; i++)
		f += phi[i] * phi[i];
	return (f - 1) / (n - 1);
}

/* Accumulate the curve for one phase; returns the sum over k < kmax. */
static double
curve_phase(const struct isth_plan_cliques *s, enum isth_plan_surv kind, int ph, double *out,
	int kmax, double *phi, double *tmp)
{
	int n = s->n, i, k;
	double total = 0;

	if (kind == ISTH_PLAN_SURV_FLOOD) {
		uint64_t all = n == 64 ? ~0ULL : (1ULL << n) - 1;

		for (i = 0; i < n; i++) {
			uint64_t inf = 1ULL << i;

			for (k = 0; k < kmax; k++) {
				double v = (double)(n - plan_popcount(inf)) / (n - 1);

				if (out)
					out[k] += v / n;
				total += v / n;
				if (inf == all)
					break;
				inf = flood_step(s, ph + k, inf);
			}
		}
		return total;
	}
	memset(phi, 0, (size_t)n * n * sizeof(double));
	for (i = 0; i < n; i++)
		phi[i * n + i] = 1;
	for (k = 0; k < kmax; k++) {
		double v = frob_term(phi, n);

		if (v < 0)
			v = 0;
		if (out)
			out[k] += v;
		total += v;
		if (v < 1e-13)
			break;
		avg_step(s, ph + k, phi, tmp);
	}
	return total;
}

int
isth_plan_survival(
	const struct isth_plan_cliques *s, enum isth_plan_surv kind, double *out, int kmax)
{
	double *phi, *tmp;
	int ph, k;

	if (s == NULL || out == NULL || kmax < 1 || s->n < 2)
		return -EINVAL;
	phi = malloc((size_t)s->n * s->n * sizeof(double));
	tmp = malloc(s->n * sizeof(double));
	if (phi == NULL || tmp == NULL) {
		free(phi);
		free(tmp);
		return -ENOMEM;
	}
	memset(out, 0, kmax * sizeof(double));
	for (ph = 0; ph < s->nrounds; ph++)
		curve_phase(s, kind, ph, out, kmax, phi, tmp);
	for (k = 0; k < kmax; k++)
		out[k] /= s->nrounds;
	free(phi);
	free(tmp);
	return 0;
}

double
isth_plan_A(const struct isth_plan_cliques *s, enum isth_plan_surv kind)
{
	double *phi, *tmp, sum = 0;
	int ph, kmax;

	if (s == NULL || s->n < 2)
		return NAN;
	if (!mixes(s))
		return INFINITY;
	/* Flooding reaches everyone within n rounds of cycles; averaging decays
	 * geometrically: stop at 1e-13 or after a generous bound. */
	kmax = kind == ISTH_PLAN_SURV_FLOOD ? s->n * s->nrounds + 1 : 200000;
	phi = malloc((size_t)s->n * s->n * sizeof(double));
	tmp = malloc(s->n * sizeof(double));
	if (phi == NULL || tmp == NULL) {
		free(phi);
		free(tmp);
		return NAN;
	}
	for (ph = 0; ph < s->nrounds; ph++)
		sum += curve_phase(s, kind, ph, NULL, kmax, phi, tmp);
	free(phi);
	free(tmp);
	return sum / s->nrounds;
}
