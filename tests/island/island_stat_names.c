/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prints, one per line, the keys the Python binding's Session.counters()
 * must have, expanded here straight from the library's lists
 * (isth_island.h: ISTH_ISLAND_COUNTERS, ISTH_ISLAND_STATE, the drop
 * reasons; the auth statuses, wire types and parser reasons by their
 * name functions), with the help of each counter and state field after a
 * tab. tests/python/test_counters.py compares them with what Python sees:
 * a list and the binding that disagree fail there.
 */
#include <stdio.h>

#include "isth_auth.h"
#include "isth_island.h"
#include "isth_wire.h"

int
main(void)
{
	unsigned int i;

#define COUNTER(name, help) printf("%s\t%s\n", #name, help);
#define STATE(type, name, help) COUNTER(name, help)
	ISTH_ISLAND_COUNTERS(COUNTER)
	ISTH_ISLAND_STATE(STATE)
#undef STATE
#undef COUNTER
	for (i = 1; i < ISTH_AUTH_STATUS_MAX; i++)
		printf("%s\n", isth_auth_status_name(i));
	for (i = 1; i <= ISTH_WIRE_TYPE_MAX; i++)
		printf("rx_%s\n", isth_wire_type_name(i));
	for (i = 1; i < ISTH_WIRE_REASON_MAX; i++)
		printf("wire_drop_%s\n", isth_wire_reason_name(i));
#define DROP(name, help) printf("drop_%s\n", #name);
	ISTH_ISLAND_DROPS(DROP)
#undef DROP
	return 0;
}
