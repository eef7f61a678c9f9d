/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals of lib/topo shared between topo.c (parsing) and route.c. */
#ifndef TOPO_PRIV_H
#define TOPO_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "isth_topo.h"

#define NMAX ISTH_TOPO_MAX_SITES

/* Written once by isth_topo_parse() (topo.c fills sites and links, route.c
 * the shortest-path tables), read-only afterwards. */
struct isth_topo {
	int n;
	char name[NMAX][ISTH_TOPO_NAME_MAX];
	int region[NMAX];
	int line[NMAX]; /* line of the site in the sites file */
	int nregions;
	char region_name[NMAX][ISTH_TOPO_NAME_MAX];
	int ndl; /* directed links: 2*l is a->b, 2*l+1 is b->a */
	int *dl_from;
	int *dl_to;
	double *dl_lat_ms;
	double *dl_cap_bps;
	double dist[NMAX][NMAX]; /* shortest-path latency */
	int pred[NMAX][NMAX]; /* pred[src][v]: directed link entering v on the tree of src */
	int hops[NMAX][NMAX];
};

/* route.c: shortest paths from every site; -EINVAL (with err) if disconnected */
int topo_route(struct isth_topo *t, char *err, size_t errlen, const char *sites_name);

#endif
