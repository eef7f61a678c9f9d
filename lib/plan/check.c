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
	const struct isth_plan_cliques *s, int round, int i)
{
	uint64_t c = isth_plan_cliques_clique_of(s, round, i) & ~(1ULL << i);
	double peak = 0;
	int j, e;

	if (s->ntree[round] > 0) {
		static _Thread_local double lat[NMAX][NMAX];

		/* a tree round's peak is its model's, by construction */
		plan_tree_latencies(t, lat);
		return plan_tree_held(r->n, s->ntree[round], (const int8_t(*)[NMAX])s->tpar[round],
			(const double(*)[NMAX])lat, &r->t[round * r->n], r->D[round * r->n],
			r->payload, fmin(r->chunk, r->payload), i, NULL);
	}
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
	const struct isth_plan_cliques *s, int i)
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

/* The check of one solved schedule: its inputs, and scratch per directed link. */
struct chk {
	const struct isth_topo *t;
	const struct isth_plan_cliques *s;
	const struct isth_plan_params *p;
	const struct isth_plan_result *r;
	int n, nl; /* islands, directed links */
	double P; /* payload bytes */
	double Dacc; /* ms: the shortest duration the access link allows */
	double delta; /* ms: access latency both ways plus the last chunk's delivery */
	int *mult; /* per link: copies of one sender's stream */
	double *load; /* per link: bit/ms of the round so far */
	int *load_n; /* per link: streams of the round so far */
	char *err;
	size_t errlen;
};

/* Network replication counts a link of j's union once: true only if the
 * union is a tree (what isthmus-wan forwards as one copy per link). */
static int
check_tree(struct chk *C, int k, uint64_t m, int j)
{
	const struct isth_topo *t = C->t;
	char n1[96], n2[96];
	int e1, e2, v;

	v = plan_route_tree_conflict(
		t, j, m & ~(1ULL << j), &C->r->route[((size_t)k * C->n + j) * C->n], &e1, &e2);
	if (v < 0)
		return 0;
	isth_topo_dlink_name(t, e1, n1, sizeof(n1));
	isth_topo_dlink_name(t, e2, n2, sizeof(n2));
	snprintf(C->err, C->errlen,
		"round %d: sender %s's routes are not a tree (network replication): site %s is "
		"entered over %s and %s",
		k, isth_topo_name(t, j), isth_topo_name(t, v), n1, n2);
	return -ERANGE;
}

/*
 * Sender j of clique @p m in round @p k: a valid offset and duration, the
 * shape of its routes before their timing, its access link, its last byte
 * by T; then its streams' load is added to the round's links.
 */
static int
check_sender(struct chk *C, int k, uint64_t m, int j)
{
	const struct isth_topo *t = C->t;
	const struct isth_plan_result *r = C->r;
	int n = C->n, i, e;
	double o = r->t[k * n + j], D = r->D[k * n + j], last = 0;

	if (!isfinite(o) || !isfinite(D) || o < -CHK_TIME_TOL || D <= 0) {
		snprintf(C->err, C->errlen, "round %d: %s has no valid offset/duration", k,
			isth_topo_name(t, j));
		return -ERANGE;
	}
	if (C->p->repl == ISTH_PLAN_REPL_NETWORK && check_tree(C, k, m, j) < 0)
		return -ERANGE;
	if (D < C->Dacc * (1 - CHK_CAP_TOL)) {
		snprintf(C->err, C->errlen,
			"round %d: %s sends faster than its access link (%.9g ms < %.9g ms)", k,
			isth_topo_name(t, j), D, C->Dacc);
		return -ERANGE;
	}
	for (i = 0; i < n; i++)
		if (i != j && (m >> i & 1))
			last = fmax(last, plan_result_lat(r, t, k, j, i));
	if (o + D + last + C->delta > r->T + CHK_TIME_TOL + 1e-12 * r->T) {
		snprintf(C->err, C->errlen,
			"round %d: %s's last byte is delivered at %.6f ms > T = %.6f ms", k,
			isth_topo_name(t, j), o + D + last + C->delta, r->T);
		return -ERANGE;
	}
	/* the links of the routes the plan chose (the result's) */
	if (plan_route_stream(t, j, m & ~(1ULL << j), C->p->repl,
		    &r->route[((size_t)k * n + j) * n], C->mult, NULL) < 0) {
		snprintf(C->err, C->errlen, "round %d: %s's routes are not valid", k,
			isth_topo_name(t, j));
		return -ERANGE;
	}
	for (e = 0; e < C->nl; e++)
		if (C->mult[e]) {
			C->load[e] += C->mult[e] * 8 * C->P / D;
			C->load_n[e] += C->mult[e];
		}
	return 0;
}

/* Round @p k's load on each directed link against its (1 - F) capacity. */
static int
check_links(struct chk *C, int k)
{
	char name[96];
	int e;

	for (e = 0; e < C->nl; e++) {
		/* load[] is in bit/ms: compare with capacity in bit/ms */
		double cap = plan_wan_cap(C->t, C->p, e) / 1000;

		if (C->load[e] > cap * (1 + CHK_CAP_TOL)) {
			isth_topo_dlink_name(C->t, e, name, sizeof(name));
			snprintf(C->err, C->errlen,
				"round %d: link %s carries %d streams at %.9f of its capacity "
				"(%.1f ppm over)",
				k, name, C->load_n[e], C->load[e] / cap,
				(C->load[e] / cap - 1) * 1e6);
			return -ERANGE;
		}
	}
	return 0;
}

/* Round @p k's peak occupancy at each receiver edge against M. */
static int
check_memory(struct chk *C, int k)
{
	const struct isth_plan_result *r = C->r;
	int n = C->n, i, j;

	for (i = 0; i < n; i++) {
		double peak = peak_at(r, C->t, C->s, k, i), tol = 1e-6 * C->P, dmin = INFINITY;
		uint64_t m = isth_plan_cliques_clique_of(C->s, k, i) & ~(1ULL << i);

		for (j = 0; j < n; j++)
			if (m >> j & 1)
				dmin = fmin(dmin, r->D[k * n + j]);
		/* plus what the fastest stream delivers in one clock tick */
		tol += C->P * CHK_TIME_TOL / dmin;
		if (peak > r->memory + tol) {
			snprintf(C->err, C->errlen,
				"round %d: the edge of %s holds %.0f B at its peak > M = %.0f B", k,
				isth_topo_name(C->t, i), peak, r->memory);
			return -ERANGE;
		}
	}
	return 0;
}

/*
 * A round of reduction trees: each tree spanning, acyclic, one root; one
 * duration D for every island, no faster than access; each directed link's
 * load (the tree edges crossing it, up and down, each at 8P/(kD)) within
 * capacity; the last chunk down to the farthest edge by T; each edge's held
 * bytes within M (check_memory()).
 */
static int
check_tree_round(struct chk *C, int k)
{
	static _Thread_local double lat[NMAX][NMAX];
	const struct isth_plan_cliques *s = C->s;
	const struct isth_plan_result *r = C->r;
	int n = C->n, nt = s->ntree[k], tt, i, e, *uses = C->load_n;
	double D = r->D[k * n], cs, tail[ISTH_PLAN_MAX_TREES];
	char why[96], name[96];

	for (tt = 0; tt < nt; tt++)
		if (plan_tree_invalid(n, s->tpar[k][tt], why, sizeof(why)) < 0) {
			snprintf(C->err, C->errlen, "round %d: tree %d is not a spanning tree: %s",
				k, tt, why);
			return -ERANGE;
		}
	for (i = 0; i < n; i++)
		if (!isfinite(r->t[k * n + i]) || r->t[k * n + i] < -CHK_TIME_TOL ||
			r->D[k * n + i] != D || !(D > 0)) {
			snprintf(C->err, C->errlen,
				"round %d: %s has no valid offset or not the round's duration", k,
				isth_topo_name(C->t, i));
			return -ERANGE;
		}
	if (D < C->Dacc * (1 - CHK_CAP_TOL)) {
		snprintf(C->err, C->errlen,
			"round %d: faster than the access link (%.9g ms < %.9g ms)", k, D, C->Dacc);
		return -ERANGE;
	}
	if (plan_tree_link_uses(C->t, nt, (const int8_t(*)[NMAX])s->tpar[k], uses) < 0) {
		snprintf(C->err, C->errlen, "round %d: a tree edge has no path", k);
		return -ERANGE;
	}
	for (e = 0; e < C->nl; e++) {
		double cap = plan_wan_cap(C->t, C->p, e) / 1000,
		       load = uses[e] * 8 * C->P / (nt * D);

		if (load > cap * (1 + CHK_CAP_TOL)) {
			isth_topo_dlink_name(C->t, e, name, sizeof(name));
			snprintf(C->err, C->errlen,
				"round %d: link %s carries %d tree edges at %.9f of its capacity",
				k, name, uses[e], load / cap);
			return -ERANGE;
		}
	}
	plan_tree_latencies(C->t, lat);
	cs = fmin(C->p->chunk_bytes, C->P);
	plan_tree_held(n, nt, (const int8_t(*)[NMAX])s->tpar[k], (const double(*)[NMAX])lat,
		&r->t[k * n], D, C->P, cs, 0, tail);
	for (tt = 0; tt < nt; tt++) {
		double end = D - (cs > 0 ? D * cs / C->P : 0) + tail[tt] + C->delta;

		if (end > r->T + CHK_TIME_TOL + 1e-12 * r->T) {
			snprintf(C->err, C->errlen,
				"round %d: tree %d delivers its last chunk at %.6f ms > T = %.6f "
				"ms",
				k, tt, end, r->T);
			return -ERANGE;
		}
	}
	return check_memory(C, k);
}

static int
check_round(struct chk *C, int k)
{
	const struct isth_plan_cliques *s = C->s;
	int c, j, e;

	for (e = 0; e < C->nl; e++) {
		C->load[e] = 0;
		C->load_n[e] = 0;
	}
	if (s->ntree[k] > 0)
		return check_tree_round(C, k);
	for (c = 0; c < s->ncl[k]; c++) {
		uint64_t m = s->cl[k * NMAX + c];

		if (plan_popcount(m) < 2)
			continue;
		for (j = 0; j < C->n; j++)
			if ((m >> j & 1) && check_sender(C, k, m, j) < 0)
				return -ERANGE;
	}
	if (check_links(C, k) < 0)
		return -ERANGE;
	return check_memory(C, k);
}

/* The arguments of isth_plan_check(): 0 or -EINVAL with the reason. */
static int
check_args(const struct isth_topo *t, const struct isth_plan_cliques *s,
	const struct isth_plan_params *p, const struct isth_plan_result *r, char *err,
	size_t errlen)
{
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
	if (isnan(isth_plan_loss_headroom(p->expected_loss))) {
		snprintf(err, errlen, "check: expected loss %g out of range [0, %g]",
			p->expected_loss, ISTH_PLAN_MAX_LOSS);
		return -EINVAL;
	}
	if (!r->feasible) {
		snprintf(err, errlen, "check: the result is infeasible (%s)", r->binding);
		return -EINVAL;
	}
	return 0;
}

int
isth_plan_check(const struct isth_topo *t, const struct isth_plan_cliques *s,
	const struct isth_plan_params *p, const struct isth_plan_result *r, char *err,
	size_t errlen)
{
	struct chk C = {t, s, p, r};
	int k, ret;

	ret = check_args(t, s, p, r, err, errlen);
	if (ret < 0)
		return ret;
	C.n = isth_topo_n(t);
	C.nl = isth_topo_ndlinks(t);
	C.P = r->payload;
	C.Dacc = 8 * C.P * 1000 / p->access_bps;
	C.delta = 2 * p->access_ms + 8 * fmin(p->chunk_bytes, C.P) * 1000 / p->access_bps;
	C.err = err;
	C.errlen = errlen;
	C.mult = calloc(C.nl, sizeof(int));
	C.load = calloc(C.nl, sizeof(double));
	C.load_n = calloc(C.nl, sizeof(int));
	if (C.mult == NULL || C.load == NULL || C.load_n == NULL) {
		ret = -ENOMEM;
		snprintf(err, errlen, "check: out of memory");
		goto out;
	}
	for (k = 0; k < s->nrounds && ret == 0; k++)
		ret = check_round(&C, k);
out:
	free(C.mult);
	free(C.load);
	free(C.load_n);
	return ret;
}
