/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The final check of a solved schedule (isth_plan_check): every round is
 * re-evaluated from the fluid model alone (offsets, durations, routes),
 * never from the LP's rows, so a solver that stopped early, a cut loop that
 * hit its cap or a scaling slip cannot pass. isthmus-plan runs it before it
 * writes any file; the tests run it on every schedule they produce.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan_internal.h"

#define CHK_CAP_TOL 1e-6 /* relative: what the LP accepts (lp.c CAP_TOL) */
#define CHK_TIME_TOL 1e-6 /* ms (1 ns): below any clock the edge has */

/*
 * Peak of max_j prog_j(tau) - min_k prog_k(tau) over the round. Each
 * prog_j is piecewise linear with breakpoints at its first and last
 * arrival, so the spread (a difference of a convex max and a concave min
 * of such functions... in general piecewise linear) peaks at one of those
 * breakpoints: evaluating there is exact.
 */
static double
peak_at(const struct isth_plan_result *r, const struct isth_topo *t,
	const struct isth_plan_sched *s, int round, int i)
{
	uint64_t c = isth_plan_sched_clique_of(s, round, i) & ~(1ULL << i);
	double peak = 0;
	int j, e;

	if (plan_popcount(c) < 2)
		return 0;
	for (j = 0; j < r->n; j++) {
		double a;

		if (!(c >> j & 1))
			continue;
		a = isth_plan_result_offset(r, round, j) + plan_result_lat(r, t, round, j, i);
		for (e = 0; e < 2; e++) {
			double tau = a + e * isth_plan_result_duration(r, round, j);

			peak = fmax(peak, isth_plan_result_occupancy(r, t, s, round, i, tau));
		}
	}
	return peak;
}

double
isth_plan_result_peak_memory(const struct isth_plan_result *r, const struct isth_topo *t,
	const struct isth_plan_sched *s, int i)
{
	double peak = 0;
	int k;

	if (r == NULL || t == NULL || s == NULL || !r->feasible || i < 0 || i >= r->n ||
		s->n != r->n || s->nrounds != r->nrounds)
		return NAN;
	for (k = 0; k < r->nrounds; k++)
		peak = fmax(peak, peak_at(r, t, s, k, i));
	return peak;
}

int
isth_plan_check(const struct isth_topo *t, const struct isth_plan_sched *s,
	const struct isth_plan_params *p, const struct isth_plan_result *r, char *err,
	size_t errlen)
{
	double P, Dacc, delta;
	int *mult = NULL, *load_n = NULL;
	double *load = NULL;
	int n, k, c, i, j, e, ret = 0;
	char name[96];

	if (t == NULL || s == NULL || p == NULL || r == NULL || s->n != isth_topo_n(t) ||
		r->n != isth_topo_n(t) || r->nrounds != s->nrounds) {
		snprintf(err, errlen, "check: topology, schedule and result do not match");
		return -EINVAL;
	}
	if (!(p->repair_headroom >= 0 && p->repair_headroom < ISTH_PLAN_MAX_HEADROOM)) {
		snprintf(err, errlen, "check: repair headroom %g out of range [0, %g)",
			p->repair_headroom, ISTH_PLAN_MAX_HEADROOM);
		return -EINVAL;
	}
	if (!r->feasible) {
		snprintf(err, errlen, "check: the result is infeasible (%s)", r->binding);
		return -EINVAL;
	}
	n = isth_topo_n(t);
	P = r->payload;
	Dacc = 8 * P * 1000 / p->access_bps;
	delta = 2 * p->access_ms + 8 * fmin(p->chunk_bytes, P) * 1000 / p->access_bps;
	mult = calloc(isth_topo_ndlinks(t), sizeof(int));
	load = calloc(isth_topo_ndlinks(t), sizeof(double));
	load_n = calloc(isth_topo_ndlinks(t), sizeof(int));
	if (mult == NULL || load == NULL || load_n == NULL) {
		ret = -ENOMEM;
		snprintf(err, errlen, "check: out of memory");
		goto out;
	}
	for (k = 0; k < s->nrounds && ret == 0; k++) {
		for (e = 0; e < isth_topo_ndlinks(t); e++) {
			load[e] = 0;
			load_n[e] = 0;
		}
		for (c = 0; c < s->ncl[k] && ret == 0; c++) {
			uint64_t m = s->cl[k * NMAX + c];

			if (plan_popcount(m) < 2)
				continue;
			for (j = 0; j < n && ret == 0; j++) {
				double o = r->t[k * n + j], D = r->D[k * n + j], last = 0;

				if (!(m >> j & 1))
					continue;
				if (!isfinite(o) || !isfinite(D) || o < -CHK_TIME_TOL || D <= 0) {
					snprintf(err, errlen,
						"round %d: %s has no valid offset/duration", k,
						isth_topo_name(t, j));
					ret = -ERANGE;
					break;
				}
				/* network replication counts a link of j's union once:
				 * true only if the union is a tree (what isthmus-wan
				 * forwards as one copy per link); checked first, as
				 * the shape of the routes, before their timing */
				if (p->repl == ISTH_PLAN_REPL_NETWORK) {
					int e1, e2,
						v = plan_route_tree_conflict(t, j, m & ~(1ULL << j),
							&r->route[((size_t)k * n + j) * n], &e1,
							&e2);

					if (v >= 0) {
						char n1[96];

						isth_topo_dlink_name(t, e1, n1, sizeof(n1));
						isth_topo_dlink_name(t, e2, name, sizeof(name));
						snprintf(err, errlen,
							"round %d: sender %s's routes are not a "
							"tree "
							"(network replication): site %s is entered "
							"over %s and %s",
							k, isth_topo_name(t, j),
							isth_topo_name(t, v), n1, name);
						ret = -ERANGE;
						break;
					}
				}
				if (D < Dacc * (1 - CHK_CAP_TOL)) {
					snprintf(err, errlen,
						"round %d: %s sends faster than its access link "
						"(%.9g ms < %.9g ms)",
						k, isth_topo_name(t, j), D, Dacc);
					ret = -ERANGE;
					break;
				}
				for (i = 0; i < n; i++)
					if (i != j && (m >> i & 1))
						last = fmax(last, plan_result_lat(r, t, k, j, i));
				if (o + D + last + delta > r->T + CHK_TIME_TOL + 1e-12 * r->T) {
					snprintf(err, errlen,
						"round %d: %s's last byte is delivered at %.6f ms "
						"> T = %.6f ms",
						k, isth_topo_name(t, j), o + D + last + delta,
						r->T);
					ret = -ERANGE;
					break;
				}
				/* the links of the routes the plan chose (the result's) */
				if (plan_route_stream(t, j, m & ~(1ULL << j), p->repl,
					    &r->route[((size_t)k * n + j) * n], mult, NULL) < 0) {
					snprintf(err, errlen, "round %d: %s's routes are not valid",
						k, isth_topo_name(t, j));
					ret = -ERANGE;
					break;
				}
				for (e = 0; e < isth_topo_ndlinks(t); e++)
					if (mult[e]) {
						load[e] += mult[e] * 8 * P / D;
						load_n[e] += mult[e];
					}
			}
		}
		for (e = 0; e < isth_topo_ndlinks(t) && ret == 0; e++) {
			/* load[] is in bit/ms: compare with capacity in bit/ms */
			double cap = plan_wan_cap(t, p, e) / 1000;

			if (load[e] > cap * (1 + CHK_CAP_TOL)) {
				isth_topo_dlink_name(t, e, name, sizeof(name));
				snprintf(err, errlen,
					"round %d: link %s carries %d streams at %.9f of its "
					"capacity "
					"(%.1f ppm over)",
					k, name, load_n[e], load[e] / cap,
					(load[e] / cap - 1) * 1e6);
				ret = -ERANGE;
			}
		}
		for (i = 0; i < n && ret == 0; i++) {
			double peak = peak_at(r, t, s, k, i), tol = 1e-6 * P, dmin = INFINITY;
			uint64_t m = isth_plan_sched_clique_of(s, k, i) & ~(1ULL << i);

			for (j = 0; j < n; j++)
				if (m >> j & 1)
					dmin = fmin(dmin, r->D[k * n + j]);
			/* plus what the fastest stream delivers in one clock tick */
			tol += P * CHK_TIME_TOL / dmin;
			if (peak > r->memory + tol) {
				snprintf(err, errlen,
					"round %d: the edge of %s holds %.0f B at its peak > M = "
					"%.0f B",
					k, isth_topo_name(t, i), peak, r->memory);
				ret = -ERANGE;
			}
		}
	}
out:
	free(mult);
	free(load);
	free(load_n);
	return ret;
}
