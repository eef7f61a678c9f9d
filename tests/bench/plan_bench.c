/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Planning time for 9, 16, 32 and 64 islands: a synthetic WAN per size
 * (regions of three-ish islands on rings, joined by a ring of long links
 * plus chords), every built-in family, M = 0 and M = P/4. Prints one line
 * per (n, schedule, M) with wall time and LP solves, so the growth is visible.
 *
 * "plan_bench scale [seconds]": the scale case, 64 sites in 8 regions
 * of 8 (each region a ring, the regions on a ring of long links plus
 * chords), every family at M = 0 and M = P/4, planned with 1 thread and
 * with 2 threads one after the other (the machine is shared: interleaving
 * keeps the comparison fair). Each plan runs in a child process killed
 * after the time limit (default 300 s); the 1- and 2-thread results must
 * agree (T and LPs), or the bench fails. Wall time and CPU time (all
 * threads) are printed: on a shared machine the wall time mostly measures
 * the other processes.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* 64 sites: 8 regions of 8. Site 8r+k is member k of region r. */
static struct isth_topo *
synth8x8(void)
{
	static char sites[8192], links[32768];
	char err[256];
	int i, r, so, lo;
	struct isth_topo *t;

	so = snprintf(sites, sizeof(sites), "site,region,city\n");
	lo = snprintf(links, sizeof(links), "a,b,one_way_ms,capacity_gbps\n");
	for (i = 0; i < 64; i++)
		so += snprintf(sites + so, sizeof(sites) - so, "S%d,R%d,x\n", i, i / 8);
	/* inside a region: a ring of short links, uneven latencies */
	for (i = 0; i < 64; i++)
		lo += snprintf(links + lo, sizeof(links) - lo, "S%d,S%d,%.3f,100\n", i,
			8 * (i / 8) + (i + 1) % 8, 2.0 + (i * 37 % 11));
	for (r = 0; r < 8; r++) {
		/* the regions on a ring: member 0 of r to member 4 of r+1 */
		lo += snprintf(links + lo, sizeof(links) - lo, "S%d,S%d,%.3f,100\n", 8 * r,
			8 * ((r + 1) % 8) + 4, 20.0 + (r * 53 % 60));
		/* chords across the ring: member 2 of r to member 6 of r+3 */
		if (r % 2 == 0)
			lo += snprintf(links + lo, sizeof(links) - lo, "S%d,S%d,%.3f,40\n",
				8 * r + 2, 8 * ((r + 3) % 8) + 6, 60.0 + r * 7);
	}
	t = isth_topo_parse("synth8x8-sites", sites, "synth8x8-links", links, err, sizeof(err));
	if (t == NULL)
		fprintf(stderr, "plan_bench: %s\n", err);
	return t;
}

/* One plan in a child process (a runaway plan is killed after @limit s);
 * returns 0 and fills ms, lps and T, 1 on timeout, -1 on failure. */
static int
timed_plan(const struct isth_topo *t, const char *fam, double M, int threads, int limit, double *ms,
	double *cpu, int *lps, double *T)
{
	int fd[2], st, ok;
	pid_t pid;
	double buf[4];

	if (pipe(fd) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct isth_plan_params p;
		struct isth_plan_cliques *sc = isth_plan_cliques_family(t, fam);
		struct isth_plan_result *r = NULL;
		double t0;

		close(fd[0]);
		alarm(limit);
		isth_plan_params_default(&p);
		p.payload_bytes = 1e9;
		p.memory_bytes = M;
		p.threads = threads;
		t0 = now();
		if (sc == NULL || isth_plan_solve(t, sc, &p, &r) < 0)
			_exit(1);
		buf[0] = (now() - t0) * 1e3;
		buf[1] = isth_plan_result_lp_iterations(r);
		buf[2] = isth_plan_result_T(r);
		{
			/* CPU of all threads: on a shared machine wall time
			 * mostly measures the other builders */
			struct rusage ru;

			getrusage(RUSAGE_SELF, &ru);
			buf[3] = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
				ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
		}
		_exit(write(fd[1], buf, sizeof(buf)) == sizeof(buf) ? 0 : 1);
	}
	close(fd[1]);
	ok = read(fd[0], buf, sizeof(buf)) == sizeof(buf);
	close(fd[0]);
	*ms = NAN;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	if (!ok)
		return WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? 1 : -1;
	*ms = buf[0];
	*cpu = buf[3];
	*lps = (int)buf[1];
	*T = buf[2];
	return 0;
}

static int
scale(int limit)
{
	static const char *fam[] = {"triangles", "pairs", "all-to-all"};
	struct isth_topo *t = synth8x8();
	int bad = 0;

	if (t == NULL)
		return 1;
	printf("64 sites, 8 regions of 8; limit %d s per plan\n", limit);
	printf("%-11s %5s %12s %12s %10s %10s %8s %10s\n", "schedule", "M/P", "1 thread ms",
		"2 threads ms", "1 cpu s", "2 cpu s", "LPs", "round_ms");
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++)
		for (int m = 0; m < 2; m++) {
			double ms1, ms2, c1 = NAN, c2 = NAN, T1 = NAN, T2 = NAN;
			int l1 = 0, l2 = 0, r1, r2;

			r1 = timed_plan(t, fam[f], m ? 0.25e9 : 0, 1, limit, &ms1, &c1, &l1, &T1);
			r2 = timed_plan(t, fam[f], m ? 0.25e9 : 0, 2, limit, &ms2, &c2, &l2, &T2);
			{
				char a[32], b[32];

				snprintf(a, sizeof(a),
					r1 > 0           ? "timeout"
						: r1 < 0 ? "failed"
							 : "%.1f",
					ms1);
				snprintf(b, sizeof(b),
					r2 > 0           ? "timeout"
						: r2 < 0 ? "failed"
							 : "%.1f",
					ms2);
				printf("%-11s %5.2f %12s %12s %10.2f %10.2f %8d %10.1f\n", fam[f],
					m ? 0.25 : 0.0, a, b, c1, c2, r2 ? l1 : l2, r2 ? T1 : T2);
			}
			fflush(stdout);
			bad |= r1 < 0 || r2 < 0;
			if (r1 == 0 && r2 == 0 &&
				(l1 != l2 || !(T1 == T2 || (isnan(T1) && isnan(T2))))) {
				fprintf(stderr, "plan_bench: %s: 1 and 2 threads disagree\n",
					fam[f]);
				bad = 1;
			}
		}
	isth_topo_free(t);
	return bad;
}

int
main(int argc, char **argv)
{
	static const int sizes[] = {9, 16, 32, 64};
	static const char *fam[] = {"all-to-all", "pairs", "triangles"};
	/* --quick (scripts/bench.sh): 9 and 16 islands, seconds not hours */
	size_t n_sizes = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 2 : 4;
	size_t s, f;

	if (argc > 1 && strcmp(argv[1], "scale") == 0)
		return scale(argc > 2 ? atoi(argv[2]) : 300);
	printf("%4s %-11s %8s %10s %8s %10s\n", "n", "schedule", "M/P", "plan_ms", "LPs",
		"round_ms");
	for (s = 0; s < n_sizes; s++) {
		struct isth_topo *t = synth(sizes[s]);

		if (t == NULL)
			return 1;
		for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++)
			for (int m = 0; m < 2; m++) {
				struct isth_plan_params p;
				struct isth_plan_cliques *sc = isth_plan_cliques_family(t, fam[f]);
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
				printf("%4d %-11s %8.2f %10.2f %8d %10.1f\n", sizes[s], fam[f],
					m ? 0.25 : 0.0, el, isth_plan_result_lp_iterations(r),
					isth_plan_result_T(r));
				fflush(stdout);
				isth_plan_result_free(r);
				isth_plan_cliques_free(sc);
			}
		isth_topo_free(t);
	}
	return 0;
}
