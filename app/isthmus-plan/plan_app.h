/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared between the isthmus-plan CLI and its plotting code. */
#ifndef PLAN_APP_H
#define PLAN_APP_H

#include "isth_plan.h"

struct row {
	const char *name;
	double memory;
	int feasible;
	int untrusted; /* a round hit the cut cap: never a winner */
	double T, Af, Aa, obj;
	char binding[160];
	struct isth_plan_sched *s; /* owned by the row */
	struct isth_plan_result *res; /* owned by the row */
};

/* Write PNGs into dir; returns 0 or a negative errno, message in err. */
int plot_all(const char *dir, const struct isth_topo *t, const struct isth_plan_params *p,
	struct row *rows, int nrows, const int *winners, int nwinners, char *err, size_t errlen);

#endif
