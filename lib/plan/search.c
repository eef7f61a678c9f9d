/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedule search: simulated annealing over cyclic sequences of partitions
 * (any clique sizes, 1..LMAX rounds), minimising T * (A_flood + 1/2). The
 * round LP is the expensive part, so its result is cached per partition.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "isth_clock.h"
#include "plan_internal.h"

#define LMAX 16
#define CACHE (1 << 15)

struct cent {
	uint64_t key;
	double T; /* INFINITY: infeasible */
};

struct sstate {
	int L;
	uint8_t lab[LMAX][NMAX];
};

struct ctx {
	const struct isth_topo *t;
	const struct isth_plan_params *p;
	struct cent *cache;
	long evals;
	int err;
};

static uint64_t rs;

static uint64_t
rnd(void)
{
	return plan_xorshift(&rs);
}

/* Seconds since @p t0_ns on the monotonic clock (lib/clock). */
static double
since_s(uint64_t t0_ns)
{
	return (double)(isth_clock_mono_ns() - t0_ns) * 1e-9;
}

/* Canonical cliques of one round: bitmaps sorted by lowest member. */
static int
round_cliques(int n, const uint8_t *lab, uint64_t *cl)
{
	int nc = 0, i, c;
	int map[NMAX];

	for (i = 0; i < NMAX; i++)
		map[i] = -1;
	for (i = 0; i < n; i++) {
		if (map[lab[i]] < 0) {
			map[lab[i]] = nc;
			cl[nc++] = 0;
		}
		c = map[lab[i]];
		cl[c] |= 1ULL << i;
	}
	return nc;
}

static double
round_T(struct ctx *C, int n, const uint8_t *lab)
{
	uint64_t cl[NMAX], h = 1469598103934665603ULL;
	int nc = round_cliques(n, lab, cl), c;
	struct plan_round o;
	double T;
	struct cent *e;

	for (c = 0; c < nc; c++) {
		h ^= cl[c];
		h *= 1099511628211ULL;
		h ^= h >> 29;
	}
	h |= 1;
	e = &C->cache[h & (CACHE - 1)];
	if (e->key == h)
		return e->T;
	C->evals++;
	o.iters = 0;
	if (plan_solve_round(C->t, nc, cl, C->p, &o) < 0) {
		C->err = 1;
		o.feasible = 0;
	}
	/* a round whose cut loop hit its cap is not trusted: treat as infeasible */
	T = o.feasible && !o.warn[0] ? o.T : INFINITY;
	e->key = h;
	e->T = T;
	return T;
}

static struct isth_plan_cliques *
to_sched(int n, const struct sstate *s)
{
	uint64_t cl[LMAX][NMAX];
	const uint64_t *pp[LMAX];
	int nc[LMAX], r;

	for (r = 0; r < s->L; r++) {
		nc[r] = round_cliques(n, s->lab[r], cl[r]);
		pp[r] = cl[r];
	}
	return isth_plan_cliques_new("search", n, s->L, nc, pp);
}

static double
objective(struct ctx *C, int n, const struct sstate *s)
{
	struct isth_plan_cliques *sc;
	double T = 0, A;
	int r;

	for (r = 0; r < s->L; r++) {
		double x = round_T(C, n, s->lab[r]);

		if (!isfinite(x))
			return INFINITY;
		T = fmax(T, x);
	}
	sc = to_sched(n, s);
	if (sc == NULL)
		return INFINITY;
	A = isth_plan_A(sc, ISTH_PLAN_SURV_FLOOD);
	isth_plan_cliques_free(sc);
	return T * (A + 0.5);
}

static void
from_sched(const struct isth_plan_cliques *sc, struct sstate *s)
{
	int r, i;

	s->L = sc->nrounds < LMAX ? sc->nrounds : LMAX;
	for (r = 0; r < s->L; r++)
		for (i = 0; i < sc->n; i++)
			s->lab[r][i] = sc->of[r * NMAX + i];
}

static void
mutate(int n, struct sstate *s)
{
	int kind = rnd() % 10, r = rnd() % s->L, a = rnd() % n, b = rnd() % n, i;

	if (kind < 4) { /* swap two islands between cliques */
		uint8_t x = s->lab[r][a];

		s->lab[r][a] = s->lab[r][b];
		s->lab[r][b] = x;
	} else if (kind < 7) { /* move an island into another's clique */
		s->lab[r][a] = s->lab[r][b];
	} else if (kind == 7) { /* split an island off on its own */
		uint8_t used[NMAX] = {0};

		for (i = 0; i < n; i++)
			used[s->lab[r][i]] = 1;
		for (i = 0; i < n && used[i]; i++)
			;
		if (i < n)
			s->lab[r][a] = i;
	} else if (kind == 8 && s->L < LMAX) { /* insert a perturbed copy of a round */
		int q;

		for (q = s->L; q > r + 1; q--)
			memcpy(s->lab[q], s->lab[q - 1], NMAX);
		memcpy(s->lab[r + 1], s->lab[r], NMAX);
		s->L++;
		for (q = 0; q < 3; q++) {
			uint8_t x;

			a = rnd() % n;
			b = rnd() % n;
			x = s->lab[r + 1][a];
			s->lab[r + 1][a] = s->lab[r + 1][b];
			s->lab[r + 1][b] = x;
		}
	} else if (s->L > 1) { /* drop a round */
		int q;

		for (q = r; q < s->L - 1; q++)
			memcpy(s->lab[q], s->lab[q + 1], NMAX);
		s->L--;
	}
}

/*
 * The starting point: the best of the built-in families (the first one
 * that exists if none is feasible) and @p init. Returns its objective.
 */
static double
search_start(struct ctx *C, int n, const struct isth_plan_cliques *init, struct sstate *cur)
{
	static const char *fam[] = {"all-to-all", "triangles", "pairs", "regional"};
	double fbest = INFINITY, v;
	struct sstate s;
	int f;

	memset(cur, 0, sizeof(*cur));
	for (f = 0; f < 4; f++) {
		struct isth_plan_cliques *sc = isth_plan_cliques_family(C->t, fam[f]);

		if (sc == NULL)
			continue;
		from_sched(sc, &s);
		isth_plan_cliques_free(sc);
		v = objective(C, n, &s);
		if (v < fbest || cur->L == 0) {
			if (v < fbest)
				fbest = v;
			*cur = s;
		}
	}
	if (init) {
		from_sched(init, &s);
		v = objective(C, n, &s);
		if (v < fbest) {
			fbest = v;
			*cur = s;
		}
	}
	return fbest;
}

/*
 * The tree family as a candidate: its schedule (one round of reduction
 * trees, A = 1) and objective T * (1 + 1/2), or NULL if it has none. The
 * annealing moves partitions only, so a tree set is weighed whole: the
 * search returns it when nothing it finds does better.
 */
static struct isth_plan_cliques *
tree_candidate(struct ctx *C, double *obj)
{
	struct isth_plan_cliques *s = isth_plan_tree(C->t, C->p);
	struct isth_plan_result *r = NULL;

	*obj = INFINITY;
	if (s == NULL)
		return NULL;
	if (isth_plan_solve(C->t, s, C->p, &r) == 0 && isth_plan_result_feasible(r))
		*obj = isth_plan_result_T(r) * (isth_plan_A(s, ISTH_PLAN_SURV_FLOOD) + 0.5);
	isth_plan_result_free(r);
	if (!isfinite(*obj)) {
		isth_plan_cliques_free(s);
		return NULL;
	}
	snprintf(s->name, sizeof(s->name), "search");
	return s;
}

struct isth_plan_cliques *
isth_plan_search(const struct isth_topo *t, const struct isth_plan_params *p,
	const struct isth_plan_cliques *init, long iterations, double seconds, unsigned seed,
	int *cut_short, isth_plan_progress_fn progress, void *arg)
{
	struct ctx C = {0};
	struct sstate cur, best, cand;
	struct isth_plan_cliques *tree;
	double fcur, fbest, ftree = INFINITY;
	uint64_t t0, last;
	long it;
	int n;

	if (cut_short)
		*cut_short = 0;
	if (iterations <= 0)
		iterations = ISTH_PLAN_SEARCH_ITERS;
	if (t == NULL || p == NULL || !(seconds >= 0) || isth_topo_n(t) < 2 ||
		(init && init->n != isth_topo_n(t))) {
		errno = EINVAL;
		return NULL;
	}
	n = isth_topo_n(t);
	C.t = t;
	C.p = p;
	C.cache = calloc(CACHE, sizeof(*C.cache));
	if (C.cache == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	rs = 0x2545F4914F6CDD1DULL ^ ((uint64_t)seed * 0x9E3779B97F4A7C15ULL);
	if (rs == 0)
		rs = 1;
	t0 = last = isth_clock_mono_ns();
	fbest = fcur = search_start(&C, n, init, &cur);
	best = cur;
	tree = p->search_trees ? tree_candidate(&C, &ftree) : NULL;
	/* The temperature follows the iteration count, never the clock, so a
	 * seed fixes the result; the clock only bounds the run (cut_short). */
	for (it = 0; it < iterations && !C.err; it++) {
		double temp = 0.05 * (1 - (double)it / iterations) + 0.001, v;
		int m, nm = 1 + rnd() % 3;

		cand = cur;
		for (m = 0; m < nm; m++)
			mutate(n, &cand);
		v = objective(&C, n, &cand);
		if (isfinite(v) &&
			(!isfinite(fcur) || v < fcur ||
				(double)(rnd() % 1000000) / 1e6 <
					exp(-(log(v) - log(fcur)) / temp))) {
			cur = cand;
			fcur = v;
			if (v < fbest - 1e-9) {
				best = cand;
				fbest = v;
			}
		}
		if ((it & 15) == 15 && since_s(t0) >= seconds) {
			if (cut_short)
				*cut_short = 1;
			break;
		}
		if (progress && since_s(last) >= 1.0) {
			last = isth_clock_mono_ns();
			progress((double)(last - t0) * 1e-9, C.evals, fbest, arg);
		}
	}
	if (progress)
		progress(since_s(t0), C.evals, fbest, arg);
	free(C.cache);
	if (C.err) {
		isth_plan_cliques_free(tree);
		errno = EIO;
		return NULL;
	}
	if (tree && ftree < fbest)
		return tree;
	isth_plan_cliques_free(tree);
	if (!isfinite(fbest)) {
		errno = ENOENT;
		return NULL;
	}
	return to_sched(n, &best);
}
