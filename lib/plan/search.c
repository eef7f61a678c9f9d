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
	double sec; /* wall seconds its LP took: what solving it again costs */
};

struct sstate {
	int L;
	uint8_t lab[LMAX][NMAX];
};

struct ctx {
	const struct isth_topo *t;
	const struct isth_plan_params *p; /* the caller's, with deadline_ns set */
	const struct isth_plan_params *p_caller; /* as given: the warm start's LPs */
	struct cent *cache;
	long evals;
	int err; /* a round LP failed: the search fails (EIO) */
	int late; /* a round LP was stopped by the deadline: the search ends */
	uint64_t t0; /* when the search started */
	struct isth_plan_search_report *rep;
	isth_plan_progress_fn progress;
	void *arg;
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

/* The cache slot of one round (its cliques @p cl, @p nc of them, canonical). */
static struct cent *
round_slot(struct ctx *C, int nc, const uint64_t *cl, uint64_t *key)
{
	uint64_t h = 1469598103934665603ULL;
	int c;

	for (c = 0; c < nc; c++) {
		h ^= cl[c];
		h *= 1099511628211ULL;
		h ^= h >> 29;
	}
	h |= 1;
	*key = h;
	return &C->cache[h & (CACHE - 1)];
}

static double
round_T(struct ctx *C, int n, const uint8_t *lab)
{
	uint64_t cl[NMAX], h, t1;
	int nc = round_cliques(n, lab, cl), ret;
	struct plan_round o;
	double T;
	struct cent *e = round_slot(C, nc, cl, &h);

	if (e->key == h)
		return e->T;
	if (C->late)
		return INFINITY;
	C->evals++;
	o.iters = 0;
	t1 = isth_clock_mono_ns();
	ret = plan_solve_round(C->t, nc, cl, C->p, &o);
	if (ret == -ETIME) {
		C->late = 1; /* not known, so not cached */
		return INFINITY;
	}
	if (ret < 0) {
		C->err = 1;
		o.feasible = 0;
	}
	/* a round whose cut loop hit its cap is not trusted: treat as infeasible */
	T = o.feasible && !o.warn[0] ? o.T : INFINITY;
	e->key = h;
	e->T = T;
	e->sec = since_s(t1);
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

/*
 * T (A_flood + 1/2) of @p s. A first: it needs no LP, and a sequence that
 * never mixes (A infinite) is worth none.
 */
static double
objective(struct ctx *C, int n, const struct sstate *s)
{
	struct isth_plan_cliques *sc;
	double T = 0, A;
	int r;

	sc = to_sched(n, s);
	if (sc == NULL)
		return INFINITY;
	A = isth_plan_A(sc, ISTH_PLAN_SURV_FLOOD);
	isth_plan_cliques_free(sc);
	if (!isfinite(A))
		return INFINITY;
	for (r = 0; r < s->L; r++) {
		double x = round_T(C, n, s->lab[r]);

		if (!isfinite(x))
			return INFINITY;
		T = fmax(T, x);
	}
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
 * What weighing @p s costs, roughly, in units of one pair's LP: per clique
 * of k >= 2 islands 1 + k (k - 1) / 8 (a clique's routing and LP block,
 * and its streams, of which a clique of 64 has 4032 with O(n^3) memory
 * rows). Fitted on 64 sites at M = 0: 16 rounds of pairs (640 units)
 * took 1.1 s, of triangles (608) 0.7 s. A round that cannot align at
 * M = 0 ends it: that round needs no LP, and none after it is solved.
 */
static double
seed_units(struct ctx *C, int n, const struct sstate *s)
{
	uint64_t cl[NMAX];
	double u = 0;
	int r, c, nc;

	for (r = 0; r < s->L; r++) {
		nc = round_cliques(n, s->lab[r], cl);
		if (!plan_round_aligns(C->t, nc, cl, C->p))
			break;
		for (c = 0; c < nc; c++) {
			int k = plan_popcount(cl[c]);

			u += k < 2 ? 0 : 1 + (double)k * (k - 1) / 8;
		}
	}
	return u;
}

int
plan_seed_fits(double units, double spent_units, double spent_s, double left_s)
{
	if (!(left_s > 0))
		return 0;
	if (!(spent_units > 0) || !(spent_s > 0))
		return 1; /* nothing measured yet: try it, the deadline stops it */
	return units * (spent_s / spent_units) <= left_s;
}

/*
 * Weigh seed @p s (a family as the search sees it, at most LMAX rounds):
 * A first (no LP if it never mixes), then its rounds on p->threads at
 * once (isth_plan_solve(): the same round LPs round_T() would solve, so
 * the same objective), each round's T cached for the annealing.
 */
static double
seed_weigh(struct ctx *C, int n, const struct sstate *s, enum isth_plan_seed_state *state)
{
	struct isth_plan_cliques *sc = to_sched(n, s);
	struct isth_plan_result *r = NULL;
	double A, v = INFINITY;
	uint64_t t1 = isth_clock_mono_ns();
	int ret, k;

	*state = ISTH_PLAN_SEED_WEIGHED;
	if (sc == NULL)
		return INFINITY;
	A = isth_plan_A(sc, ISTH_PLAN_SURV_FLOOD);
	if (!isfinite(A)) {
		*state = ISTH_PLAN_SEED_NO_MIX;
		isth_plan_cliques_free(sc);
		return INFINITY;
	}
	ret = isth_plan_solve(C->t, sc, C->p, &r);
	if (ret == -ETIME) {
		*state = ISTH_PLAN_SEED_CUT;
		C->late = 1;
	} else if (ret < 0) {
		C->err = 1;
	} else {
		C->evals += s->L;
		for (k = 0; k < s->L && r->feasible; k++) {
			uint64_t cl[NMAX], h;
			int nc = round_cliques(n, s->lab[k], cl);
			struct cent *e = round_slot(C, nc, cl, &h);

			e->key = h;
			e->T = r->warn[k][0] ? INFINITY : r->Tr[k];
			/* solved side by side: each round is charged its share */
			e->sec = since_s(t1) / s->L;
		}
		if (r->feasible && r->nwarn == 0)
			v = r->T * (A + 0.5);
	}
	isth_plan_result_free(r);
	isth_plan_cliques_free(sc);
	return v;
}

/* Tell the caller what became of seed @p f (report and progress line). */
static void
seed_note(struct ctx *C, int f, const char *name, enum isth_plan_seed_state st, double sec,
	double v, double best)
{
	static const char *what[] = {
		"weighed", "absent", "never mixes", "skipped (budget)", "cut by the budget"};
	char msg[96];

	if (C->rep) {
		C->rep->seed[f].state = st;
		C->rep->seed[f].seconds = sec;
		C->rep->seed[f].obj_ms = v;
	}
	if (C->progress == NULL || st == ISTH_PLAN_SEED_ABSENT)
		return;
	snprintf(msg, sizeof(msg), "seed %s %s in %.1f s", name, what[st], sec);
	C->progress(msg, since_s(C->t0), C->evals, best, C->arg);
}

/*
 * The starting point: the best of the built-in families (the first one
 * that exists if none is feasible) and @p init. Returns its objective.
 * The families are weighed cheapest first under @p deadline (see
 * isth_plan_search()); the choice is made in their fixed order, as when
 * they were weighed in it.
 */
static double
search_start(struct ctx *C, int n, const struct isth_plan_cliques *init, struct sstate *cur,
	uint64_t deadline)
{
	static const char *fam[ISTH_PLAN_SEARCH_SEEDS] = {
		"all-to-all", "triangles", "pairs", "regional"};
	struct sstate s[ISTH_PLAN_SEARCH_SEEDS], one;
	double v[ISTH_PLAN_SEARCH_SEEDS], u[ISTH_PLAN_SEARCH_SEEDS], fbest = INFINITY;
	double spent_u = 0, spent_s = 0, vinit = INFINITY;
	const struct isth_plan_params *p_own = C->p;
	int have[ISTH_PLAN_SEARCH_SEEDS], ord[ISTH_PLAN_SEARCH_SEEDS], f, q;

	for (f = 0; f < ISTH_PLAN_SEARCH_SEEDS; f++) {
		struct isth_plan_cliques *sc = isth_plan_cliques_family(C->t, fam[f]);

		have[f] = sc != NULL;
		v[f] = INFINITY;
		u[f] = 0;
		if (sc) {
			from_sched(sc, &s[f]);
			u[f] = seed_units(C, n, &s[f]);
		}
		isth_plan_cliques_free(sc);
		if (C->rep) {
			snprintf(C->rep->seed[f].name, sizeof(C->rep->seed[f].name), "%s", fam[f]);
			C->rep->seed[f].state =
				have[f] ? ISTH_PLAN_SEED_SKIPPED : ISTH_PLAN_SEED_ABSENT;
			C->rep->seed[f].seconds = 0;
			C->rep->seed[f].obj_ms = INFINITY;
		}
		/* insertion by cost units, ties in the fixed order */
		for (q = f; q > 0 && u[ord[q - 1]] > u[f]; q--)
			ord[q] = ord[q - 1];
		ord[q] = f;
	}
	/* The warm start first and past the search's own deadline (not the
	 * caller's): a seed the deadline stops ends every later LP, and the
	 * best found with less memory must not be lost to that. Its LPs are
	 * the ones the caller solves again for the result, a bounded cost. */
	if (init) {
		from_sched(init, &one);
		C->p = C->p_caller;
		vinit = objective(C, n, &one);
		C->p = p_own;
	}
	for (q = 0; q < ISTH_PLAN_SEARCH_SEEDS && !C->err; q++) {
		enum isth_plan_seed_state st = ISTH_PLAN_SEED_SKIPPED;
		uint64_t t1 = isth_clock_mono_ns();
		double left = deadline ? ((double)deadline - (double)t1) * 1e-9 : INFINITY;

		f = ord[q];
		if (!have[f])
			continue;
		if (!C->late && plan_seed_fits(u[f], spent_u, spent_s, left)) {
			v[f] = seed_weigh(C, n, &s[f], &st);
			if (st == ISTH_PLAN_SEED_WEIGHED) {
				spent_u += u[f];
				spent_s += since_s(t1);
			}
		}
		fbest = fmin(fbest, v[f]);
		seed_note(C, f, fam[f], st, since_s(t1), v[f], fbest);
	}
	fbest = INFINITY;
	memset(cur, 0, sizeof(*cur));
	for (f = 0; f < ISTH_PLAN_SEARCH_SEEDS; f++) {
		if (!have[f])
			continue;
		if (v[f] < fbest || cur->L == 0) {
			if (v[f] < fbest)
				fbest = v[f];
			*cur = s[f];
		}
	}
	if (isfinite(vinit) && vinit < fbest) {
		fbest = vinit;
		*cur = one;
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

/*
 * Seconds solving @p s again would take (its rounds' LPs, one after the
 * other, as they took here): the caller solves the result once more, so
 * the annealing leaves it that much of the budget.
 */
static double
resolve_s(struct ctx *C, int n, const struct sstate *s)
{
	double sum = 0;
	int r;

	for (r = 0; r < s->L; r++) {
		uint64_t cl[NMAX], h;
		int nc = round_cliques(n, s->lab[r], cl);
		const struct cent *e = round_slot(C, nc, cl, &h);

		if (e->key == h)
			sum += e->sec;
	}
	return sum;
}

/*
 * The annealing from @p cur (objective @p fcur) until @p iterations or the
 * deadline; the best into @p best, its objective returned. 1 in *cut if
 * the deadline ended it first.
 */
static double
anneal(struct ctx *C, int n, long iterations, double seconds, struct sstate *cur, double fcur,
	struct sstate *best, int *cut)
{
	struct sstate cand;
	double fbest = fcur, again = resolve_s(C, n, cur);
	uint64_t last = C->t0;
	long it;

	*best = *cur;
	/* The temperature follows the iteration count, never the clock, so a
	 * seed fixes the result; the clock only bounds the run (cut_short). */
	for (it = 0; it < iterations && !C->err; it++) {
		double temp = 0.05 * (1 - (double)it / iterations) + 0.001, v;
		int m, nm = 1 + rnd() % 3;

		/* every step: at 64 islands one step can take seconds */
		if (C->late || since_s(C->t0) + again >= seconds) {
			*cut = 1;
			break;
		}
		cand = *cur;
		for (m = 0; m < nm; m++)
			mutate(n, &cand);
		v = objective(C, n, &cand);
		if (isfinite(v) &&
			(!isfinite(fcur) || v < fcur ||
				(double)(rnd() % 1000000) / 1e6 <
					exp(-(log(v) - log(fcur)) / temp))) {
			*cur = cand;
			fcur = v;
			if (v < fbest - 1e-9) {
				*best = cand;
				fbest = v;
				again = resolve_s(C, n, best);
			}
		}
		if (C->progress && since_s(last) >= 1.0) {
			last = isth_clock_mono_ns();
			C->progress("annealing", since_s(C->t0), C->evals, fbest, C->arg);
		}
	}
	return fbest;
}

struct isth_plan_cliques *
isth_plan_search(const struct isth_topo *t, const struct isth_plan_params *p,
	const struct isth_plan_cliques *init, long iterations, double seconds, unsigned seed,
	struct isth_plan_search_report *rep, isth_plan_progress_fn progress, void *arg)
{
	struct ctx C = {0};
	struct isth_plan_params pd;
	struct sstate cur, best;
	struct isth_plan_cliques *tree;
	double fbest, ftree = INFINITY;
	int n, cut = 0;

	if (rep)
		memset(rep, 0, sizeof(*rep));
	if (iterations <= 0)
		iterations = ISTH_PLAN_SEARCH_ITERS;
	if (t == NULL || p == NULL || !(seconds >= 0) || isth_topo_n(t) < 2 ||
		(init && init->n != isth_topo_n(t))) {
		errno = EINVAL;
		return NULL;
	}
	n = isth_topo_n(t);
	C.t = t;
	C.t0 = isth_clock_mono_ns();
	/* one deadline for the seeds' LPs, the annealing's and the caller's own */
	pd = *p;
	if (seconds < 1e9) {
		uint64_t d = C.t0 + (uint64_t)(seconds * 1e9);

		if (pd.deadline_ns == 0 || d < pd.deadline_ns)
			pd.deadline_ns = d;
	}
	C.p = &pd;
	C.p_caller = p;
	C.rep = rep;
	C.progress = progress;
	C.arg = arg;
	C.cache = calloc(CACHE, sizeof(*C.cache));
	if (C.cache == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	rs = 0x2545F4914F6CDD1DULL ^ ((uint64_t)seed * 0x9E3779B97F4A7C15ULL);
	if (rs == 0)
		rs = 1;
	if (rep)
		rep->nseeds = ISTH_PLAN_SEARCH_SEEDS;
	fbest = search_start(&C, n, init, &cur, pd.deadline_ns);
	if (rep)
		rep->seeds_s = since_s(C.t0);
	tree = p->search_trees ? tree_candidate(&C, &ftree) : NULL;
	fbest = anneal(&C, n, iterations,
		pd.deadline_ns ? ((double)pd.deadline_ns - (double)C.t0) * 1e-9 : INFINITY, &cur,
		fbest, &best, &cut);
	if (progress)
		progress("annealing", since_s(C.t0), C.evals, fbest, arg);
	if (rep) {
		rep->cut_short = cut || C.late;
		rep->evals = C.evals;
		rep->total_s = since_s(C.t0);
	}
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
		errno = cut || C.late ? ETIME : ENOENT;
		return NULL;
	}
	return to_sched(n, &best);
}
