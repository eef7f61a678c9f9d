/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The counter names the code publishes, from its own lists, for
 * scripts/check-operator-doc.py: one line each, "group<TAB>name<TAB>help".
 *
 *   stats        /isthmus/stats (and isthmusd's final print): the
 *                data-path counters, then drop_<reason> for the wire
 *                parser's reasons and isthmusd's (stats.c walks the same
 *                lists; its mempool_<pool>_in_use gauges are not here)
 *   pace         /isthmus/pace (lib/pace, summed over the workers)
 *   resend       /isthmus/resend (lib/resend, AGG stream 0's ring)
 *   island       libisthmus's session counters (isthmus-island, Python)
 *   island_drop  libisthmus's drop[reason]
 *   island_auth  libisthmus's auth_drop[status] (lib/auth's names; no help
 *                text in the code: the doc's rows say what each means)
 */
#include <stdio.h>

#include "isth_auth.h"
#include "isth_island.h"
#include "isth_wire.h"
#include "isthd.h"

#define LINE(group, name, help) printf("%s\t%s\t%s\n", group, name, help)

int
main(void)
{
	unsigned int i;

#define C(name, help) LINE("stats", #name, help);
	ISTHD_COUNTERS(C)
#undef C
	/* stats.c's walk: reason 0 is ISTH_WIRE_OK, not a drop */
	for (i = 1; i < ISTH_WIRE_REASON_MAX; i++)
		printf("stats\tdrop_%s\t%s\n", isth_wire_reason_name(i), isth_wire_reason_str(i));
#define D(name, help) LINE("stats", "drop_" #name, help);
	ISTHD_DROPS(D)
#undef D
#define P(name, help) LINE("pace", #name, help);
	ISTH_PACE_STATS(P)
#undef P
#define R(name, help) LINE("resend", #name, help);
	ISTH_RESEND_COUNTERS(R)
#undef R
#define I(name, help) LINE("island", #name, help);
	ISTH_ISLAND_COUNTERS(I)
#undef I
#define ID(name, help) LINE("island_drop", #name, help);
	ISTH_ISLAND_DROPS(ID)
#undef ID
	for (i = 1; i < ISTH_AUTH_STATUS_MAX; i++)
		printf("island_auth\t%s\t\n", isth_auth_status_name(i));
	return 0;
}
