/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in schedule families. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

struct rounds {
	int nr;
	int ncl[4 * NMAX];
	uint64_t cl[4 * NMAX][NMAX];
};

static struct isth_plan_cliques *
finish(const char *name, int n, struct rounds *R)
{
	const uint64_t *p[4 * NMAX];
	int r;

	for (r = 0; r < R->nr; r++)
		p[r] = R->cl[r];
	return isth_plan_cliques_new(name, n, R->nr, R->ncl, p);
}

/*
 * Round-robin by rotation: island 0 stays, the others (with a dummy when n
 * is odd: its partner has the bye) sit on a circle that turns one place per
 * round; round r pairs 0 with the island at the head and the rest
 * across the circle. n-1 (even n) or n (odd n) perfect matchings, every
 * pair once. Fixing a real island, not the dummy, matters for odd n: with
 * the dummy fixed (round r pairs a with 2r-a) the bye walks one step a
 * round and information spreads to about two islands a round; A_flood on
 * nine islands is 3.833 that way and 3.306 this way.
 */
static void
pairs(int n, struct rounds *R)
{
	int m = n % 2 ? n + 1 : n; /* vertices 0..m-1; m-1 is the dummy when n is odd */
	int r, k;

	R->nr = m - 1;
	for (r = 0; r < m - 1; r++) {
		int nc = 0;
		/* circle position q (0..m-2) holds vertex 1 + (q + r) mod (m-1) */
#define POS(q) (1 + ((q) + r) % (m - 1))
		for (k = 0; k < m / 2; k++) {
			int a = k == 0 ? 0 : POS(k), b = k == 0 ? POS(0) : POS(m - 1 - k);

			if (a < n && b < n)
				R->cl[r][nc++] = 1ULL << a | 1ULL << b;
			else
				R->cl[r][nc++] = 1ULL << (a < n ? a : b); /* bye */
		}
#undef POS
		R->ncl[r] = nc;
	}
}

/* AG(2,3): point (a,b) is island 3a+b; the four parallel classes. */
static void
ag23(const int *id, struct rounds *R)
{
	int cls, c, a;

	R->nr = 4;
	for (cls = 0; cls < 4; cls++) {
		R->ncl[cls] = 3;
		for (c = 0; c < 3; c++) {
			uint64_t m = 0;

			for (a = 0; a < 3; a++) {
				int b;

				switch (cls) {
				case 0: /* a = c: the regions */
					m |= 1ULL << id[3 * c + a];
					continue;
				case 1: /* b = c */
					b = c;
					break;
				case 2: /* b = a + c */
					b = (a + c) % 3;
					break;
				default: /* b = 2a + c */
					b = (2 * a + c) % 3;
					break;
				}
				m |= 1ULL << id[3 * a + b];
			}
			R->cl[cls][c] = m;
		}
	}
}

static uint64_t rng_state;

static uint64_t
rng(void)
{
	return plan_xorshift(&rng_state);
}

/*
 * General n: greedy rounds of triples (plus one or two pairs when n is not
 * a multiple of three), each chosen among random tries to cover the most
 * pairs not yet covered, so consecutive rounds are as orthogonal as the
 * size allows. The first round groups islands by region.
 */
static void
triples_greedy(const struct isth_topo *t, struct rounds *R)
{
	int n = isth_topo_n(t), r, i, j, try;
	static uint8_t cov[NMAX][NMAX];
	int order[NMAX], sizes[NMAX], nsz = 0, npairs;
	int maxr = (n - 1) / 2 + 2;

	if (maxr > 4 * NMAX)
		maxr = 4 * NMAX;
	memset(cov, 0, sizeof(cov));
	npairs = n % 3 == 1 ? 2 : n % 3 == 2 ? 1 : 0;
	if (n == 4)
		npairs = 2;
	for (i = 0; i < (n - 2 * npairs) / 3; i++)
		sizes[nsz++] = 3;
	for (i = 0; i < npairs; i++)
		sizes[nsz++] = 2;
	rng_state = 0x9e3779b97f4a7c15ULL;
	R->nr = 0;
	for (r = 0; r < maxr; r++) {
		int best = -1, bestnc = 0;
		uint64_t bestcl[NMAX];

		for (try = 0; try < (r == 0 ? 1 : 400); try++) {
			uint64_t cl[NMAX];
			int score = 0, c, pos = 0;

			for (i = 0; i < n; i++)
				order[i] = i;
			if (r == 0) {
				/* stable sort by region */
				for (i = 1; i < n; i++)
					for (j = i; j > 0 &&
						isth_topo_region(t, order[j]) <
							isth_topo_region(t, order[j - 1]);
						j--) {
						int x = order[j];

						order[j] = order[j - 1];
						order[j - 1] = x;
					}
			} else {
				/* greedy: repeatedly pick a random free island, complete its clique
				 * with the free islands that add the most uncovered pairs */
				uint64_t freem = n == 64 ? ~0ULL : (1ULL << n) - 1;
				int k = 0;

				for (c = 0; c < nsz; c++) {
					int first, m;

					do
						first = rng() % n;
					while (!(freem >> first & 1));
					freem &= ~(1ULL << first);
					order[k++] = first;
					for (m = 1; m < sizes[c]; m++) {
						int bi = -1, bs = -1;

						for (i = 0; i < n; i++) {
							int sc = 0, q;

							if (!(freem >> i & 1))
								continue;
							for (q = k - m; q < k; q++)
								sc += !cov[i][order[q]];
							sc = sc * 64 + (int)(rng() % 64);
							if (sc > bs) {
								bs = sc;
								bi = i;
							}
						}
						freem &= ~(1ULL << bi);
						order[k++] = bi;
					}
				}
			}
			for (c = 0; c < nsz; c++) {
				int q, w;

				cl[c] = 0;
				for (q = 0; q < sizes[c]; q++)
					cl[c] |= 1ULL << order[pos + q];
				for (q = 0; q < sizes[c]; q++)
					for (w = q + 1; w < sizes[c]; w++)
						score += !cov[order[pos + q]][order[pos + w]];
				pos += sizes[c];
			}
			if (score > best) {
				best = score;
				bestnc = nsz;
				memcpy(bestcl, cl, sizeof(cl));
			}
		}
		if (r > 0 && best == 0)
			break;
		R->ncl[R->nr] = bestnc;
		memcpy(R->cl[R->nr], bestcl, sizeof(bestcl));
		R->nr++;
		for (i = 0; i < bestnc; i++)
			for (j = 0; j < n; j++)
				if (bestcl[i] >> j & 1) {
					int q;

					for (q = 0; q < n; q++)
						if (bestcl[i] >> q & 1)
							cov[j][q] = 1;
				}
		/* stop when every pair has met */
		for (i = 0; i < n; i++)
			for (j = 0; j < n; j++)
				if (i != j && !cov[i][j])
					goto more;
		break;
	more:;
	}
}

struct isth_plan_cliques *
isth_plan_cliques_family(const struct isth_topo *t, const char *name)
{
	struct rounds *R;
	struct isth_plan_cliques *s = NULL;
	int n, i, r;

	if (t == NULL || name == NULL) {
		errno = EINVAL;
		return NULL;
	}
	n = isth_topo_n(t);
	if (strcmp(name, "tree") == 0) {
		struct isth_plan_params p;

		isth_plan_params_default(&p);
		return isth_plan_tree(t, &p);
	}
	R = calloc(1, sizeof(*R));
	if (R == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (strcmp(name, "all-to-all") == 0) {
		R->nr = 1;
		R->ncl[0] = 1;
		R->cl[0][0] = n == 64 ? ~0ULL : (1ULL << n) - 1;
	} else if (strcmp(name, "regional") == 0) {
		R->nr = 1;
		R->ncl[0] = isth_topo_nregions(t);
		for (i = 0; i < n; i++)
			R->cl[0][isth_topo_region(t, i)] |= 1ULL << i;
	} else if (strcmp(name, "pairs") == 0) {
		pairs(n, R);
	} else if (strcmp(name, "triangles") == 0) {
		if (n == 9) {
			int id[9], k = 0, ok = isth_topo_nregions(t) == 3;

			for (r = 0; r < 3 && ok; r++) {
				int cnt = 0;

				for (i = 0; i < n; i++)
					if (isth_topo_region(t, i) == r) {
						cnt++;
						id[k++] = i;
					}
				ok = cnt == 3;
			}
			if (!ok)
				for (i = 0; i < 9; i++)
					id[i] = i;
			ag23(id, R);
		} else if (n < 3) {
			errno = EINVAL;
			goto out;
		} else {
			triples_greedy(t, R);
		}
	} else {
		errno = EINVAL;
		goto out;
	}
	s = finish(name, n, R);
out:
	free(R);
	return s;
}
