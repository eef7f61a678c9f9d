/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Planning time for 9, 16, 32 and 64 islands: a synthetic WAN per size
 * (regions of three-ish islands on rings, joined by a ring of long links
 * plus chords), every built-in family, M = 0 and M = P/4. Prints one line
 * per (n, schedule, M) with wall time and LP solves, so the growth is visible.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "isth_plan.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct isth_topo *
synth(int n)
{
	static char sites[8192], links[32768];
	char err[256];
	int nreg = (n + 3) / 4, i, so, lo;
	struct isth_topo *t;

	so = snprintf(sites, sizeof(sites), "site,region,city\n");
	lo = snprintf(links, sizeof(links), "a,b,one_way_ms,capacity_gbps\n");
	for (i = 0; i < n; i++)
		so += snprintf(sites + so, sizeof(sites) - so, "S%d,R%d,x\n", i, i % nreg);
	/* inside a region: a ring of short links */
	for (i = 0; i < n; i++) {
		int j = i + nreg;

		if (j >= n)
			j = i % nreg;
		if (j != i && !(j < i && i - j == nreg && n / nreg <= 2))
			lo += snprintf(links + lo, sizeof(links) - lo, "S%d,S%d,%.3f,100\n", i, j,
				       2.0 + (i * 37 % 11));
	}
	/* between regions: a ring of long links plus a chord */
	for (i = 0; i < nreg && nreg > 1; i++) {
		int j = (i + 1) % nreg;

		if (nreg == 2 && i == 1)
			break;
		lo += snprintf(links + lo, sizeof(links) - lo, "S%d,S%d,%.3f,100\n", i, j,
			       20.0 + (i * 53 % 60));
	}
	if (nreg > 3)
		lo += snprintf(links + lo, sizeof(links) - lo, "S%d,S%d,90,40\n", 0, nreg / 2);
	t = isth_topo_parse("synth-sites", sites, "synth-links", links, err, sizeof(err));
	if (t == NULL)
		fprintf(stderr, "plan_bench: %s\n", err);
	return t;
}

int
main(int argc, char **argv)
{
	static const int sizes[] = {9, 16, 32, 64};
	static const char *fam[] = {"all-to-all", "pairs", "triangles"};
	/* --quick (scripts/bench.sh): 9 and 16 islands, seconds not hours */
	size_t n_sizes = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 2 : 4;
	size_t s, f;

	printf("%4s %-11s %8s %10s %8s %10s\n", "n", "schedule", "M/P", "plan_ms", "LPs", "round_ms");
	for (s = 0; s < n_sizes; s++) {
		struct isth_topo *t = synth(sizes[s]);

		if (t == NULL)
			return 1;
		for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++)
			for (int m = 0; m < 2; m++) {
				struct isth_plan_params p;
				struct isth_plan_sched *sc = isth_plan_sched_family(t, fam[f]);
				struct isth_plan_result *r = NULL;
				double t0, el;

				isth_plan_params_default(&p);
				p.payload_bytes = 1e9;
				p.memory_bytes = m ? p.payload_bytes / 4 : 0;
				t0 = now();
				if (sc == NULL || isth_plan_solve(t, sc, &p, &r) < 0) {
					fprintf(stderr, "plan_bench: %s failed\n", fam[f]);
					return 1;
				}
				el = (now() - t0) * 1e3;
				printf("%4d %-11s %8.2f %10.2f %8d %10.1f\n", sizes[s], fam[f], m ? 0.25 : 0.0, el,
				       isth_plan_result_lp_iterations(r), isth_plan_result_T(r));
				fflush(stdout);
				isth_plan_result_free(r);
				isth_plan_sched_free(sc);
			}
		isth_topo_free(t);
	}
	return 0;
}
