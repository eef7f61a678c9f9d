/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synchronous baseline: host-based ring all-reduce over the same WAN.
 * Reduce-scatter then all-gather, 2(n-1) lock-step steps of P/n bytes; all
 * n hops run at once, so hops whose paths share a link share its capacity.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "plan_internal.h"

static double
ring_step_ms(const struct isth_topo *t, const struct isth_plan_params *p, const int *ord)
{
	int n = isth_topo_n(t), h, k, np, path[NMAX];
	int load[4 * NMAX * NMAX];
	double worst = 0, bytes = p->payload_bytes / n;

	memset(load, 0, isth_topo_ndlinks(t) * sizeof(int));
	for (h = 0; h < n; h++) {
		np = isth_topo_path(t, ord[h], ord[(h + 1) % n], path, NMAX);
		for (k = 0; k < np; k++)
			load[path[k]]++;
	}
	for (h = 0; h < n; h++) {
		double bw = p->access_bps, ms;

		np = isth_topo_path(t, ord[h], ord[(h + 1) % n], path, NMAX);
		for (k = 0; k < np; k++) {
			double cap_bps;

			isth_topo_dlink(t, path[k], NULL, NULL, NULL, &cap_bps);
			bw = fmin(bw, cap_bps / load[path[k]]);
		}
		ms = isth_topo_latency(t, ord[h], ord[(h + 1) % n]) + 2 * p->access_ms + 8 * bytes * 1000 / bw;
		worst = fmax(worst, ms);
	}
	return worst;
}

double
isth_plan_ring_allreduce_ms(const struct isth_topo *t, const struct isth_plan_params *p,
			    int *order)
{
	int n, ord[NMAX], best[NMAX], i, j, s, improved;
	double bestv = INFINITY;

	if (t == NULL || p == NULL || p->payload_bytes <= 0 || p->access_bps <= 0)
		return -EINVAL;
	if (isth_topo_ndlinks(t) > 4 * NMAX * NMAX)
		return -EINVAL;
	n = isth_topo_n(t);
	/* nearest-neighbour tours from every start, improved by 2-opt on the
	 * step time itself (the slowest hop sets the pace) */
	for (s = 0; s < n && s < 8; s++) {
		uint64_t used = 1ULL << s;
		double v;

		ord[0] = s;
		for (i = 1; i < n; i++) {
			int bj = -1;

			for (j = 0; j < n; j++)
				if (!(used >> j & 1) &&
				    (bj < 0 || isth_topo_latency(t, ord[i - 1], j) <
						       isth_topo_latency(t, ord[i - 1], bj)))
					bj = j;
			ord[i] = bj;
			used |= 1ULL << bj;
		}
		v = ring_step_ms(t, p, ord);
		do {
			improved = 0;
			for (i = 1; i < n - 1; i++)
				for (j = i + 1; j < n; j++) {
					int a = i, b = j;
					double w;

					while (a < b) {
						int x = ord[a];

						ord[a++] = ord[b];
						ord[b--] = x;
					}
					w = ring_step_ms(t, p, ord);
					if (w < v - 1e-9) {
						v = w;
						improved = 1;
					} else {
						a = i;
						b = j;
						while (a < b) {
							int x = ord[a];

							ord[a++] = ord[b];
							ord[b--] = x;
						}
					}
				}
		} while (improved);
		if (v < bestv) {
			bestv = v;
			memcpy(best, ord, sizeof(ord));
		}
	}
	if (order)
		memcpy(order, best, n * sizeof(int));
	return 2.0 * (n - 1) * bestv;
}
