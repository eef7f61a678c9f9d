/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one place isthmus-wan looks inside lib/plan: the public header names
 * directed links and routes but does not yet export a link's endpoints,
 * latency and capacity, which the emulator needs per link. When lib/plan
 * grows an accessor for them, this file becomes a call to it.
 */
#include <errno.h>

#include "plan_internal.h"
#include "wan.h"

int
isth_wan_topo_dlink(const struct isth_plan_topo *t, int e, int *from, int *to,
		    double *lat_ms, double *cap_bps)
{
	if (t == NULL || e < 0 || e >= t->ndl)
		return -EINVAL;
	if (from)
		*from = t->dl_from[e];
	if (to)
		*to = t->dl_to[e];
	if (lat_ms)
		*lat_ms = t->dl_lat_ms[e];
	if (cap_bps)
		*cap_bps = t->dl_cap_bps[e];
	return 0;
}
