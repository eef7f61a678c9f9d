/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shortest-latency routing. Ties are broken by hop count and then by the
 * lower link index, so that routes (and therefore plans) are deterministic.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "topo_priv.h"

static void
dijkstra(struct isth_topo *t, int src)
{
	int done[NMAX] = {0};
	int k, v, e;

	for (v = 0; v < t->n; v++) {
		t->dist[src][v] = INFINITY;
		t->hops[src][v] = 0;
		t->pred[src][v] = -1;
	}
	t->dist[src][src] = 0;
	for (k = 0; k < t->n; k++) {
		int u = -1;

		for (v = 0; v < t->n; v++)
			if (!done[v] && isfinite(t->dist[src][v]) &&
				(u < 0 || t->dist[src][v] < t->dist[src][u] ||
					(t->dist[src][v] == t->dist[src][u] &&
						t->hops[src][v] < t->hops[src][u])))
				u = v;
		if (u < 0)
			break;
		done[u] = 1;
		for (e = 0; e < t->ndl; e++) {
			double d;

			if (t->dl_from[e] != u)
				continue;
			v = t->dl_to[e];
			d = t->dist[src][u] + t->dl_lat_ms[e];
			/* 1e-9 ms: equal-latency alternatives count as ties */
			if (d < t->dist[src][v] - 1e-9 ||
				(fabs(d - t->dist[src][v]) <= 1e-9 && !done[v] &&
					t->hops[src][u] + 1 < t->hops[src][v])) {
				t->dist[src][v] = d;
				t->hops[src][v] = t->hops[src][u] + 1;
				t->pred[src][v] = e;
			}
		}
	}
}

int
topo_route(struct isth_topo *t, char *err, size_t errlen, const char *sites_name)
{
	int s, v;

	for (s = 0; s < t->n; s++)
		dijkstra(t, s);
	for (v = 0; v < t->n; v++) {
		if (!isfinite(t->dist[0][v])) {
			if (err && errlen)
				snprintf(err, errlen,
					"%s:%d: site '%s' is not connected to '%s' (disconnected "
					"graph)",
					sites_name, t->line[v], t->name[v], t->name[0]);
			return -EINVAL;
		}
	}
	return 0;
}

void
isth_topo_stream_links(const struct isth_topo *t, int j, uint64_t dests, int unicast, int *mult)
{
	int i, v, e;

	memset(mult, 0, t->ndl * sizeof(int));
	for (i = 0; i < t->n; i++) {
		if (i == j || !(dests >> i & 1))
			continue;
		for (v = i; v != j; v = t->dl_from[e]) {
			e = t->pred[j][v];
			if (unicast) {
				mult[e]++;
			} else {
				/* the paths from j form a tree: once a link is on it, so is the rest */
				if (mult[e])
					break;
				mult[e] = 1;
			}
		}
	}
}
