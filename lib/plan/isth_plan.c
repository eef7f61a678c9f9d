/* SPDX-License-Identifier: BSD-3-Clause */
/* Public entry points of lib/plan that are not the LP, routing or search. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan_internal.h"

void
isth_plan_params_default(struct isth_plan_params *p)
{
	if (p == NULL)
		return;
	memset(p, 0, sizeof(*p));
	p->payload_bytes = 1e9;
	p->memory_bytes = 0;
	p->access_bps = 100e9;
	p->access_ms = 0;
	p->chunk_bytes = 1048576;
	p->max_round_ms = 0;
	p->repl = ISTH_PLAN_REPL_NETWORK;
}

/* ---- schedules ---- */

static int rmod(const struct isth_plan_cliques *s, int r);

static struct isth_plan_cliques *
sched_alloc(const char *name, int n, int nrounds)
{
	struct isth_plan_cliques *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	snprintf(s->name, sizeof(s->name), "%s", name ? name : "custom");
	s->n = n;
	s->nrounds = nrounds;
	s->ncl = calloc(nrounds, sizeof(int));
	s->cl = calloc((size_t)nrounds * NMAX, sizeof(uint64_t));
	s->of = calloc((size_t)nrounds * NMAX, 1);
	s->ntree = calloc(nrounds, sizeof(int));
	s->tpar = calloc(nrounds, sizeof(*s->tpar));
	if (s->ncl == NULL || s->cl == NULL || s->of == NULL || s->ntree == NULL ||
		s->tpar == NULL) {
		isth_plan_cliques_free(s);
		return NULL;
	}
	return s;
}

void
isth_plan_cliques_free(struct isth_plan_cliques *s)
{
	if (s == NULL)
		return;
	free(s->ncl);
	free(s->cl);
	free(s->of);
	free(s->ntree);
	free(s->tpar);
	free(s);
}

struct isth_plan_cliques *
isth_plan_cliques_new(
	const char *name, int n, int nrounds, const int *ncliques, const uint64_t *const *cliques)
{
	struct isth_plan_cliques *s;
	uint64_t all, seen;
	int r, c, i;

	if (n < 1 || n > NMAX || nrounds < 1 || ncliques == NULL || cliques == NULL) {
		errno = EINVAL;
		return NULL;
	}
	all = n == 64 ? ~0ULL : ((1ULL << n) - 1);
	for (r = 0; r < nrounds; r++) {
		if (ncliques[r] < 1 || ncliques[r] > n || cliques[r] == NULL) {
			errno = EINVAL;
			return NULL;
		}
		seen = 0;
		for (c = 0; c < ncliques[r]; c++) {
			uint64_t m = cliques[r][c];

			if (m == 0 || (m & ~all) || (m & seen)) {
				errno = EINVAL;
				return NULL;
			}
			seen |= m;
		}
		if (seen != all) {
			errno = EINVAL;
			return NULL;
		}
	}
	s = sched_alloc(name, n, nrounds);
	if (s == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (r = 0; r < nrounds; r++) {
		s->ncl[r] = ncliques[r];
		for (c = 0; c < ncliques[r]; c++) {
			s->cl[r * NMAX + c] = cliques[r][c];
			for (i = 0; i < n; i++)
				if (cliques[r][c] >> i & 1)
					s->of[r * NMAX + i] = c;
		}
	}
	return s;
}

struct isth_plan_cliques *
isth_plan_cliques_dup(const struct isth_plan_cliques *s)
{
	struct isth_plan_cliques *d;

	if (s == NULL) {
		errno = EINVAL;
		return NULL;
	}
	d = sched_alloc(s->name, s->n, s->nrounds);
	if (d == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(d->ncl, s->ncl, s->nrounds * sizeof(int));
	memcpy(d->cl, s->cl, (size_t)s->nrounds * NMAX * sizeof(uint64_t));
	memcpy(d->of, s->of, (size_t)s->nrounds * NMAX);
	memcpy(d->ntree, s->ntree, s->nrounds * sizeof(int));
	memcpy(d->tpar, s->tpar, s->nrounds * sizeof(*s->tpar));
	return d;
}

int
isth_plan_cliques_set_tree(struct isth_plan_cliques *s, int r, int t, const int *parent)
{
	uint64_t all;
	int i;

	if (s == NULL || parent == NULL || r < 0 || r >= s->nrounds || t < 0 ||
		t >= ISTH_PLAN_MAX_TREES || t > s->ntree[r])
		return -EINVAL;
	all = s->n == 64 ? ~0ULL : (1ULL << s->n) - 1;
	if (s->ncl[r] != 1 || s->cl[r * NMAX] != all)
		return -EINVAL;
	for (i = 0; i < s->n; i++)
		if (parent[i] < -1 || parent[i] >= s->n)
			return -EINVAL;
	for (i = 0; i < s->n; i++)
		s->tpar[r][t][i] = (int8_t)parent[i];
	if (t == s->ntree[r])
		s->ntree[r]++;
	return 0;
}

int
isth_plan_cliques_ntrees(const struct isth_plan_cliques *s, int r)
{
	return s ? s->ntree[rmod(s, r)] : 0;
}

int
isth_plan_cliques_tree(const struct isth_plan_cliques *s, int r, int t, int *parent)
{
	int i;

	if (s == NULL || parent == NULL)
		return -EINVAL;
	r = rmod(s, r);
	if (t < 0 || t >= s->ntree[r])
		return -EINVAL;
	for (i = 0; i < s->n; i++)
		parent[i] = s->tpar[r][t][i];
	return 0;
}

const char *
isth_plan_cliques_name(const struct isth_plan_cliques *s)
{
	return s ? s->name : NULL;
}

int
isth_plan_cliques_n(const struct isth_plan_cliques *s)
{
	return s ? s->n : 0;
}

int
isth_plan_cliques_nrounds(const struct isth_plan_cliques *s)
{
	return s ? s->nrounds : 0;
}

static int
rmod(const struct isth_plan_cliques *s, int r)
{
	r %= s->nrounds;
	return r < 0 ? r + s->nrounds : r;
}

int
isth_plan_cliques_ncliques(const struct isth_plan_cliques *s, int r)
{
	return s ? s->ncl[rmod(s, r)] : 0;
}

uint64_t
isth_plan_cliques_clique(const struct isth_plan_cliques *s, int r, int c)
{
	if (s == NULL)
		return 0;
	r = rmod(s, r);
	return (c >= 0 && c < s->ncl[r]) ? s->cl[r * NMAX + c] : 0;
}

uint64_t
isth_plan_cliques_clique_of(const struct isth_plan_cliques *s, int r, int i)
{
	if (s == NULL || i < 0 || i >= s->n)
		return 0;
	r = rmod(s, r);
	return s->cl[r * NMAX + s->of[r * NMAX + i]];
}

/* ---- results ---- */

void
isth_plan_result_free(struct isth_plan_result *r)
{
	if (r == NULL)
		return;
	free(r->t);
	free(r->D);
	free(r->Tr);
	free(r->warn);
	free(r->route);
	free(r);
}

int
isth_plan_result_feasible(const struct isth_plan_result *r)
{
	return r ? r->feasible : 0;
}

double
isth_plan_result_T(const struct isth_plan_result *r)
{
	return (r && r->feasible) ? r->T : NAN;
}

const char *
isth_plan_result_binding(const struct isth_plan_result *r)
{
	return r ? r->binding : "";
}

double
isth_plan_result_offset(const struct isth_plan_result *r, int round, int i)
{
	if (r == NULL || !r->feasible || i < 0 || i >= r->n)
		return NAN;
	round %= r->nrounds;
	if (round < 0)
		round += r->nrounds;
	return r->t[round * r->n + i];
}

double
isth_plan_result_duration(const struct isth_plan_result *r, int round, int i)
{
	if (r == NULL || !r->feasible || i < 0 || i >= r->n)
		return NAN;
	round %= r->nrounds;
	if (round < 0)
		round += r->nrounds;
	return r->D[round * r->n + i];
}

int
isth_plan_result_nwarnings(const struct isth_plan_result *r)
{
	return r ? r->nwarn : 0;
}

const char *
isth_plan_result_warning(const struct isth_plan_result *r, int round)
{
	if (r == NULL || r->warn == NULL || round < 0 || round >= r->nrounds)
		return "";
	return r->warn[round];
}

int
isth_plan_result_lp_iterations(const struct isth_plan_result *r)
{
	return r ? r->lp_iters : 0;
}

/*
 * Fluid model: sender j's byte x reaches receiver i at
 * t_j + l_ji + x * D_j / P. A chunk's accumulator lives from its first
 * contribution to its last, so the bytes held are the spread between the
 * most and least advanced contributor.
 */
double
isth_plan_result_occupancy(const struct isth_plan_result *r, const struct isth_topo *t,
	const struct isth_plan_cliques *s, int round, int i, double tau)
{
	double lo = INFINITY, hi = -INFINITY;
	uint64_t c;
	int j, k = 0;

	if (r == NULL || t == NULL || s == NULL || !r->feasible || i < 0 || i >= r->n)
		return NAN;
	round = rmod(s, round);
	if (s->ntree[round] > 0) {
		static _Thread_local double lat[NMAX][NMAX];

		/* a tree round: its own model (tree.c) */
		plan_tree_latencies(t, lat);
		return plan_tree_occupancy(r->n, s->ntree[round],
			(const int8_t(*)[NMAX])s->tpar[round], (const double(*)[NMAX])lat,
			&r->t[round * r->n], r->D[round * r->n], r->payload,
			fmin(r->chunk, r->payload), i, tau);
	}
	c = isth_plan_cliques_clique_of(s, round, i) & ~(1ULL << i);
	for (j = 0; j < r->n; j++) {
		double x;

		if (!(c >> j & 1))
			continue;
		x = (tau - isth_plan_result_offset(r, round, j) -
			    plan_result_lat(r, t, round, j, i)) /
			isth_plan_result_duration(r, round, j) * r->payload;
		if (x < 0)
			x = 0;
		if (x > r->payload)
			x = r->payload;
		if (x < lo)
			lo = x;
		if (x > hi)
			hi = x;
		k++;
	}
	return k < 2 ? 0 : hi - lo;
}
