/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals of lib/plan shared between its source files. */
#ifndef PLAN_INTERNAL_H
#define PLAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "isth_plan.h"

#define NMAX ISTH_PLAN_MAX_ISLANDS

struct isth_plan_cliques {
	char name[32];
	int n;
	int nrounds;
	int *ncl; /* per round */
	uint64_t *cl; /* nrounds * NMAX, clique bitmaps */
	uint8_t *of; /* nrounds * NMAX: clique index of island i */
	/* reduction trees (isth_plan_cliques_set_tree()): per round their
	 * number (0: a clique round) and parents, -1 for a root */
	int *ntree;
	int8_t (*tpar)[ISTH_PLAN_MAX_TREES][NMAX]; /* nrounds */
};

struct isth_plan_result {
	int feasible;
	int n;
	int nrounds;
	double T;
	char binding[160];
	double *t; /* nrounds * n offsets */
	double *D; /* nrounds * n durations */
	double *Tr; /* per-round minimum */
	double payload, memory;
	double chunk; /* chunk bytes it was solved with (tree rounds' chunk time) */
	int lp_iters;
	char (*warn)[160]; /* per round: "" or why the round is not trusted */
	uint8_t *route; /* nrounds * n * n: route[j][i] as in struct plan_round */
	int nwarn; /* rounds with a warning */
};

/* One round's LP outcome (lp.c writes all of it). */
struct plan_round {
	int feasible;
	double T;
	double off[NMAX]; /* NAN for islands that do not send */
	double dur[NMAX];
	char binding[160];
	char warn[160]; /* "" unless the cut cap was hit */
	int iters; /* LPs solved, added to by plan_solve_round */
	uint8_t route[NMAX]
		     [NMAX]; /* route[j][i]: candidate path (plan_kpaths) of j's stream to i */
};

/* lp.c: solve one round (partition) into @o; 0 or a negative errno
 * (-ETIMEDOUT: GLPK hit its iteration or time limit, -EIO: GLPK failed). */
int plan_solve_round(const struct isth_topo *t, int ncl, const uint64_t *cl,
	const struct isth_plan_params *p, struct plan_round *o);
/* tree.c: the model of a round of @k reduction trees (parents @par) into
 * @o: offsets, D for every island, T, binding; 0 or -EINVAL (a bad tree). */
int plan_tree_round(const struct isth_topo *t, int k, const int8_t (*par)[NMAX],
	const struct isth_plan_params *p, struct plan_round *o);
/* tree.c: why @par (n parents, -1 the root) is not a spanning tree, into
 * @why; 0 if it is one, else -EINVAL. */
int plan_tree_invalid(int n, const int8_t *par, char *why, size_t len);
/* tree.c: latencies between islands (0 on the diagonal) into @lat. */
void plan_tree_latencies(const struct isth_topo *t, double (*lat)[NMAX]);
/* tree.c: bytes edge @u holds at its peak in a tree round (offsets @off,
 * duration @D, payload @P, chunk @C); @tail (may be NULL) receives per
 * tree a_root + H_down, the round ends at D - s + tail + delta. */
double plan_tree_held(int n, int k, const int8_t (*par)[NMAX], const double (*lat)[NMAX],
	const double *off, double D, double P, double C, int u, double tail[]);
/* tree.c: bytes edge @u holds at time @tau of a tree round. */
double plan_tree_occupancy(int n, int k, const int8_t (*par)[NMAX], const double (*lat)[NMAX],
	const double *off, double D, double P, double C, int u, double tau);
/* tree.c: per directed link, the tree edges whose path crosses it, up or
 * down, over the @k trees; 0 or a negative errno. */
int plan_tree_link_uses(const struct isth_topo *t, int k, const int8_t (*par)[NMAX], int *uses);

/* search.c: whether a seed family of @units cost units (seed_units())
 * should start with @left_s seconds left, when the seeds weighed before it
 * took @spent_s for @spent_units: at their pace it must fit; with nothing
 * measured yet it starts (the deadline stops it). */
int plan_seed_fits(double units, double spent_units, double spent_s, double left_s);

/* lp.c: 0 if at M = 0 the round's arrivals cannot align on shortest paths
 * (the round is then infeasible without an LP), else 1. */
int plan_round_aligns(
	const struct isth_topo *t, int ncl, const uint64_t *cl, const struct isth_plan_params *p);

/* lp.c: threads isth_plan_solve() uses for @nrounds rounds. */
int plan_nthreads(const struct isth_plan_params *p, int nrounds);
/* Default cap on cutting-plane LPs per round. */
#define PLAN_MAX_LPS 400

/* kpath.c: candidate paths per ordered pair of sites (path 0 = shortest). */
#define PLAN_KPATHS 4
struct plan_path {
	int nl; /* directed links */
	int link[NMAX];
	double lat; /* ms */
};
/* Up to PLAN_KPATHS paths from a to b (*np of them); NULL on ENOMEM. */
const struct plan_path *plan_kpaths(const struct isth_topo *t, int a, int b, int *np);

/* Build the table for @t and trust it without re-checking @t until
 * plan_kpaths_pin(NULL) (isth_plan_solve() brackets its workers with
 * them); 0 or -ENOMEM. */
int plan_kpaths_pin(const struct isth_topo *t);
/* Links (copies per directed link, in mult) and path latencies (lat[i],
 * may be NULL) of j's stream to dests along route[i]; 0 or -errno. */
int plan_route_stream(const struct isth_topo *t, int j, uint64_t dests, enum isth_plan_repl repl,
	const uint8_t *route, int *mult, double *lat);
/* -1 if j's routes to @dests are a tree rooted at j (one entering link per
 * site, network replication's invariant), else the first site entered
 * over two links (*e1, *e2: the two; either may be NULL). */
int plan_route_tree_conflict(
	const struct isth_topo *t, int j, uint64_t dests, const uint8_t *route, int *e1, int *e2);
/* Latency of j's stream to i in round @round of a result, along its route. */
double plan_result_lat(
	const struct isth_plan_result *r, const struct isth_topo *t, int round, int j, int i);
/* Capacity-aware routes for one round (--routing capacity); 0 or -errno. */
int plan_choose_routes(const struct isth_topo *t, int ncl, const uint64_t *cl,
	const struct isth_plan_params *p, uint8_t route[NMAX][NMAX]);

/* Capacity (bit/s) of directed link @e. */
static inline double
plan_cap(const struct isth_topo *t, int e)
{
	double c = 0;

	isth_topo_dlink(t, e, NULL, NULL, NULL, &c);
	return c;
}

/*
 * Capacity of directed link e the plan may fill: (1 - F) of it, F the
 * repair headroom, the larger of the one given and the one the expected
 * loss asks for (isth_plan_headroom(); the rest stays free for repairs and NACKs, which the
 * plan does not model). F = 0 multiplies by exactly 1, so the plan is
 * bit-identical to one without the option. The synchronous baselines keep
 * plan_cap(): they model other systems, which reserve nothing.
 */
static inline double
plan_wan_cap(const struct isth_topo *t, const struct isth_plan_params *p, int e)
{
	return plan_cap(t, e) * (1 - isth_plan_headroom(p));
}

/*
 * One xorshift64 step of *state (never 0): the planner's randomness, fixed
 * by its seed. family.c and search.c each keep a state of their own, so
 * that one's draws never shift the other's.
 */
static inline uint64_t
plan_xorshift(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

static inline int
plan_popcount(uint64_t x)
{
	return __builtin_popcountll(x);
}

#endif
