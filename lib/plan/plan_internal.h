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
};

/* lp.c: solve one round (partition). t,D are n-sized arrays. */
int plan_solve_round(const struct isth_topo *t, int ncl, const uint64_t *cl,
		     const struct isth_plan_params *p, int *feasible, double *T,
		     double *off, double *dur, char *binding, size_t blen, int *iters);

static inline int plan_popcount(uint64_t x) { return __builtin_popcountll(x); }

#endif
