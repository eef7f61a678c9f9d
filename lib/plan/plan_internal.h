/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals of lib/plan shared between its source files. */
#ifndef PLAN_INTERNAL_H
#define PLAN_INTERNAL_H

#include <stdint.h>
#include "isth_plan.h"

#define NMAX ISTH_PLAN_MAX_ISLANDS

struct isth_plan_sched {
	char name[32];
	int n;
	int nrounds;
	int *ncl;                       /* per round */
	uint64_t *cl;                   /* nrounds * NMAX, clique bitmaps */
	uint8_t *of;                    /* nrounds * NMAX: clique index of island i */
};

struct isth_plan_result {
	int feasible;
	int n;
	int nrounds;
	double T;
	char binding[160];
	double *t;                      /* nrounds * n offsets */
	double *D;                      /* nrounds * n durations */
	double *Tr;                     /* per-round minimum */
	double payload, memory;
	int lp_iters;
	char (*warn)[160];              /* per round: "" or why the round is not trusted */
	int nwarn;                      /* rounds with a warning */
};

/* One round's LP outcome (lp.c writes all of it). */
struct plan_round {
	int feasible;
	double T;
	double off[NMAX];               /* NAN for islands that do not send */
	double dur[NMAX];
	char binding[160];
	char warn[160];                 /* "" unless the cut cap was hit */
	int iters;                      /* LPs solved, added to by plan_solve_round */
};

/* lp.c: solve one round (partition) into @o; 0 or a negative errno
 * (-ETIMEDOUT: GLPK hit its iteration or time limit, -EIO: GLPK failed). */
int plan_solve_round(const struct isth_topo *t, int ncl, const uint64_t *cl,
		     const struct isth_plan_params *p, struct plan_round *o);
/* Default cap on cutting-plane LPs per round. */
#define PLAN_MAX_LPS 400

/* Capacity (bit/s) of directed link @e. */
static inline double
plan_cap(const struct isth_topo *t, int e)
{
	double c = 0;

	isth_topo_dlink(t, e, NULL, NULL, NULL, &c);
	return c;
}

static inline int plan_popcount(uint64_t x) { return __builtin_popcountll(x); }

#endif
