/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The repair headroom the planner plans WAN links at (doc/planner.md,
 * "Repair headroom", "Headroom from the expected loss"). Calls nothing
 * else of lib/plan: the LP, routing and check read it through
 * plan_wan_cap() (plan_internal.h).
 */
#include <math.h>
#include <stddef.h>

#include "isth_plan.h"

double
isth_plan_loss_headroom(double loss)
{
	double r, f;

	if (!(loss >= 0 && loss <= ISTH_PLAN_MAX_LOSS))
		return NAN;
	/* repairs per DATA frame; the DATA at (1 - F) c and its repairs
	 * r (1 - F) c fill the link: F = r / (1 + r) */
	r = ISTH_PLAN_REPAIR_FACTOR * loss / (1 - loss);
	f = r / (1 + r);
	return f < ISTH_PLAN_MAX_LOSS_HEADROOM ? f : ISTH_PLAN_MAX_LOSS_HEADROOM;
}

double
isth_plan_headroom(const struct isth_plan_params *p)
{
	double f;

	if (p == NULL || !(p->repair_headroom >= 0 && p->repair_headroom < ISTH_PLAN_MAX_HEADROOM))
		return NAN;
	f = isth_plan_loss_headroom(p->expected_loss);
	if (isnan(f))
		return NAN;
	return f > p->repair_headroom ? f : p->repair_headroom;
}
