/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synchronous baselines over the same WAN (doc/planner.md, "Synchronous
 * baseline"): host-based ring all-reduce and recursive doubling.
 *
 * Ring: reduce-scatter then all-gather, 2(n-1) dependent steps of P/n bytes
 * around a ring. A rank's step-s send needs its step-(s-1) receive and its
 * own link to be free, so the time is a chain of hop latencies plus chunk
 * serialisations: with negligible serialisation, the largest sum of
 * 2(n-1) consecutive hops, about twice the ring's circumference. The ring
 * is the one with the shortest circumference (a TSP over latencies: exact
 * by Held-Karp up to 12 sites, nearest neighbour plus 2-opt beyond).
 *
 * Recursive doubling: ranks exchange the whole vector with the rank at
 * distance 1, 2, 4, ...; with n not a power of two the n - 2^k extra ranks
 * first hand their vector to a partner and get the result back at the end.
 * Each step lasts as long as its slowest exchange. Ranks are placed on
 * sites by a deterministic swap search.
 *
 * In both, a hop's serialisation uses the narrowest of the access link and
 * its path's links, each shared by the step's transfers that cross it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

#define HK_MAX 12

/* Per hop of one concurrent step: time = latency + 2 access + bytes at the
 * shared bottleneck. src/dst are site ids; nf transfers. */
static void
step_times(const struct isth_topo *t, const struct isth_plan_params *p, int nf, const int *src,
	const int *dst, double bytes, double *out, int *load)
{
	int f, k, np, path[NMAX];

	memset(load, 0, isth_topo_ndlinks(t) * sizeof(int));
	for (f = 0; f < nf; f++) {
		np = isth_topo_path(t, src[f], dst[f], path, NMAX);
		for (k = 0; k < np; k++)
			load[path[k]]++;
	}
	for (f = 0; f < nf; f++) {
		double bw = p->access_bps;

		np = isth_topo_path(t, src[f], dst[f], path, NMAX);
		for (k = 0; k < np; k++)
			bw = fmin(bw, plan_cap(t, path[k]) / load[path[k]]);
		out[f] = isth_topo_latency(t, src[f], dst[f]) + 2 * p->access_ms +
			8 * bytes * 1000 / bw;
	}
}

/* Ring of order ord: 2(n-1) dependent steps (see the file comment). */
static double
ring_time(const struct isth_topo *t, const struct isth_plan_params *p, const int *ord, int *load)
{
	int n = isth_topo_n(t), h, s, src[NMAX] = {0}, dst[NMAX] = {0};
	double tot[NMAX], ser[NMAX], lat[NMAX], start[NMAX], arr[NMAX], prev[NMAX], worst = 0;
	double bytes = p->payload_bytes / n;

	for (h = 0; h < n; h++) {
		src[h] = ord[h];
		dst[h] = ord[(h + 1) % n];
	}
	step_times(t, p, n, src, dst, bytes, tot, load);
	for (h = 0; h < n; h++) {
		lat[h] = isth_topo_latency(t, src[h], dst[h]) + 2 * p->access_ms;
		ser[h] = tot[h] - lat[h];
		start[h] = 0;
		arr[h] = ser[h] + lat[h];
	}
	for (s = 2; s <= 2 * (n - 1); s++) {
		memcpy(prev, arr, sizeof(arr));
		for (h = 0; h < n; h++) {
			/* hop h's sender got step s-1's chunk over hop h-1 */
			double st = fmax(prev[(h + n - 1) % n], start[h] + ser[h]);

			start[h] = st;
			arr[h] = st + ser[h] + lat[h];
		}
	}
	for (h = 0; h < n; h++)
		worst = fmax(worst, arr[h]);
	return worst;
}

static double
circumference(const struct isth_topo *t, const int *ord)
{
	double c = 0;
	int h;

	for (h = 0; h < isth_topo_n(t); h++)
		c += isth_topo_latency(t, ord[h], ord[(h + 1) % isth_topo_n(t)]);
	return c;
}

/* Shortest tour over latencies: Held-Karp for n <= HK_MAX. */
static int
tsp_exact(const struct isth_topo *t, int *ord)
{
	int n = isth_topo_n(t), full = 1 << (n - 1), S, j, k;
	double *D = malloc(sizeof(double) * full * n);
	int *B = malloc(sizeof(int) * full * n);
	double best = INFINITY;
	int bj = -1;

	if (D == NULL || B == NULL) {
		free(D);
		free(B);
		return -ENOMEM;
	}
	/* site 0 starts the tour; subsets S of sites 1..n-1 (bit j-1), ending at j */
	for (S = 0; S < full; S++)
		for (j = 0; j < n; j++)
			D[(size_t)S * n + j] = INFINITY;
	for (j = 1; j < n; j++)
		D[(size_t)(1 << (j - 1)) * n + j] = isth_topo_latency(t, 0, j);
	for (S = 1; S < full; S++)
		for (j = 1; j < n; j++) {
			double v = D[(size_t)S * n + j];

			if (!(S >> (j - 1) & 1) || !isfinite(v))
				continue;
			for (k = 1; k < n; k++) {
				int S2 = S | 1 << (k - 1);
				double w = v + isth_topo_latency(t, j, k);

				if ((S >> (k - 1) & 1) || w >= D[(size_t)S2 * n + k] - 1e-12)
					continue;
				D[(size_t)S2 * n + k] = w;
				B[(size_t)S2 * n + k] = j;
			}
		}
	for (j = 1; j < n; j++)
		if (D[(size_t)(full - 1) * n + j] + isth_topo_latency(t, j, 0) < best - 1e-12) {
			best = D[(size_t)(full - 1) * n + j] + isth_topo_latency(t, j, 0);
			bj = j;
		}
	ord[0] = 0;
	for (S = full - 1, k = n - 1; k >= 1; k--) {
		int pj = B[(size_t)S * n + bj];

		ord[k] = bj;
		S &= ~(1 << (bj - 1));
		bj = pj;
	}
	free(D);
	free(B);
	return 0;
}

static void
reverse(int *ord, int a, int b)
{
	while (a < b) {
		int x = ord[a];

		ord[a++] = ord[b];
		ord[b--] = x;
	}
}

/* Nearest-neighbour tours from every start, improved by 2-opt on latency. */
static void
tsp_heuristic(const struct isth_topo *t, int *best)
{
	int n = isth_topo_n(t), ord[NMAX], s, i, j, improved;
	double bestv = INFINITY;

	for (s = 0; s < n; s++) {
		uint64_t used = 1ULL << s;
		double v;

		ord[0] = s;
		for (i = 1; i < n; i++) {
			int bj = -1;

			for (j = 0; j < n; j++)
				if (!(used >> j & 1) &&
					(bj < 0 ||
						isth_topo_latency(t, ord[i - 1], j) <
							isth_topo_latency(t, ord[i - 1], bj)))
					bj = j;
			ord[i] = bj;
			used |= 1ULL << bj;
		}
		v = circumference(t, ord);
		do {
			improved = 0;
			for (i = 1; i < n - 1; i++)
				for (j = i + 1; j < n; j++) {
					double w;

					reverse(ord, i, j);
					w = circumference(t, ord);
					if (w < v - 1e-9) {
						v = w;
						improved = 1;
					} else {
						reverse(ord, i, j);
					}
				}
		} while (improved);
		if (v < bestv - 1e-9) {
			bestv = v;
			memcpy(best, ord, n * sizeof(int));
		}
	}
}

double
isth_plan_ring_allreduce_ms(const struct isth_topo *t, const struct isth_plan_params *p, int *order)
{
	int ord[NMAX], rev[NMAX], n, i, *load;
	double a, b;

	if (t == NULL || p == NULL || !(p->payload_bytes > 0) || !(p->access_bps > 0))
		return -EINVAL;
	n = isth_topo_n(t);
	load = calloc(isth_topo_ndlinks(t), sizeof(int));
	if (load == NULL)
		return -ENOMEM;
	if (n <= HK_MAX) {
		if (tsp_exact(t, ord) < 0) {
			free(load);
			return -ENOMEM;
		}
	} else {
		tsp_heuristic(t, ord);
	}
	/* the same ring both ways round: capacities may differ by direction */
	for (i = 0; i < n; i++)
		rev[i] = ord[(n - i) % n];
	a = ring_time(t, p, ord, load);
	b = ring_time(t, p, rev, load);
	free(load);
	if (order)
		memcpy(order, b < a - 1e-9 ? rev : ord, n * sizeof(int));
	return fmin(a, b);
}

/* Recursive doubling with rank r on site pos[r]. */
static double
rd_time(const struct isth_topo *t, const struct isth_plan_params *p, const int *pos, int *load)
{
	int n = isth_topo_n(t), np2 = 1, extra, d, r, nf, src[2 * NMAX], dst[2 * NMAX];
	double tm[2 * NMAX], total = 0, step;

	while (np2 * 2 <= n)
		np2 *= 2;
	extra = n - np2;
	if (extra > 0) {
		/* rank np2 + k hands its vector to rank k, and gets the result back */
		for (nf = 0; nf < extra; nf++) {
			src[nf] = pos[np2 + nf];
			dst[nf] = pos[nf];
		}
		step_times(t, p, nf, src, dst, p->payload_bytes, tm, load);
		for (step = 0, r = 0; r < nf; r++)
			step = fmax(step, tm[r]);
		total += step;
		for (r = 0; r < nf; r++) {
			src[r] = pos[r];
			dst[r] = pos[np2 + r];
		}
		step_times(t, p, nf, src, dst, p->payload_bytes, tm, load);
		for (step = 0, r = 0; r < nf; r++)
			step = fmax(step, tm[r]);
		total += step;
	}
	for (d = 1; d < np2; d *= 2) {
		for (nf = 0, r = 0; r < np2; r++) {
			src[nf] = pos[r];
			dst[nf++] = pos[r ^ d];
		}
		step_times(t, p, nf, src, dst, p->payload_bytes, tm, load);
		for (step = 0, r = 0; r < nf; r++)
			step = fmax(step, tm[r]);
		total += step;
	}
	return total;
}

double
isth_plan_rd_allreduce_ms(const struct isth_topo *t, const struct isth_plan_params *p, int *order)
{
	int n, pos[NMAX], best[NMAX], i, j, start, improved, *load;
	double v, bestv = INFINITY;

	if (t == NULL || p == NULL || !(p->payload_bytes > 0) || !(p->access_bps > 0))
		return -EINVAL;
	n = isth_topo_n(t);
	load = calloc(isth_topo_ndlinks(t), sizeof(int));
	if (load == NULL)
		return -ENOMEM;
	/* starts: sites in id order and in the ring's order; then swaps */
	for (start = 0; start < 2; start++) {
		if (start == 0) {
			for (i = 0; i < n; i++)
				pos[i] = i;
		} else if (isth_plan_ring_allreduce_ms(t, p, pos) < 0) {
			continue;
		}
		v = rd_time(t, p, pos, load);
		do {
			improved = 0;
			for (i = 0; i < n; i++)
				for (j = i + 1; j < n; j++) {
					double w;
					int x = pos[i];

					pos[i] = pos[j];
					pos[j] = x;
					w = rd_time(t, p, pos, load);
					if (w < v - 1e-9) {
						v = w;
						improved = 1;
					} else {
						pos[j] = pos[i];
						pos[i] = x;
					}
				}
		} while (improved);
		if (v < bestv - 1e-9) {
			bestv = v;
			memcpy(best, pos, n * sizeof(int));
		}
	}
	free(load);
	if (order)
		memcpy(order, best, n * sizeof(int));
	return bestv;
}
