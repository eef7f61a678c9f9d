/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --plot DIR: data files plus one gnuplot script, run once. gnuplot (the
 * gnuplot-nox package, pngcairo or png terminal) must be on PATH.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plan_app.h"

#define KMAX 16

static FILE *
open_in(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f == NULL)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return f;
}

static void
mem_tag(double m, char *buf, size_t len)
{
	snprintf(buf, len, "%.0f", m);
}

/*
 * Survival curves: one data file for the schedules of the first memory
 * value (the curves do not depend on it) and its plot. 0 or -EIO.
 */
static int
plot_survival(
	FILE *gp, const char *dir, const struct row *rows, int nrows, char *err, size_t errlen)
{
	double S[64][2][KMAX];
	FILE *f;
	int i, k, ns;

	f = open_in(dir, "survival.dat", err, errlen);
	if (f == NULL)
		return -EIO;
	fprintf(f, "# k");
	for (i = 0; i < nrows && rows[i].memory == rows[0].memory; i++)
		fprintf(f, " %s_flood %s_avg", rows[i].name, rows[i].name);
	fprintf(f, "\n");
	ns = i;
	for (i = 0; i < ns; i++)
		for (k = 0; k < 2; k++) {
			if (rows[i].s == NULL)
				memset(S[i][k], 0, sizeof(S[i][k]));
			else
				isth_plan_survival(rows[i].s,
					k ? ISTH_PLAN_SURV_AVG : ISTH_PLAN_SURV_FLOOD, S[i][k],
					KMAX);
		}
	for (k = 0; k < KMAX; k++) {
		fprintf(f, "%d", k);
		for (i = 0; i < ns; i++)
			fprintf(f, " %.9g %.9g", S[i][0][k], fmax(S[i][1][k], 1e-12));
		fprintf(f, "\n");
	}
	fclose(f);
	fprintf(gp, "set output '%s/survival.png'\n", dir);
	fprintf(gp,
		"set multiplot layout 1,2 title 'Survival curves (mean over origins and "
		"phases)'\n");
	fprintf(gp, "set xlabel 'rounds k'\nset grid\nset key top right\n");
	fprintf(gp,
		"set title 'flooding S(k)'\nset ylabel 'fraction not yet reached'\nset "
		"yrange [0:1.05]\n");
	fprintf(gp, "plot ");
	for (i = 0; i < ns; i++)
		fprintf(gp, "%s'%s/survival.dat' using 1:%d with linespoints title '%s'",
			i ? ", " : "", dir, 2 + 2 * i, rows[i].name);
	fprintf(gp,
		"\nset title 'averaging (||Phi(k)||_F^2-1)/(n-1)'\nset logscale y\n"
		"set yrange [1e-6:1.5]\nset ylabel 'disagreement'\nplot ");
	for (i = 0; i < ns; i++)
		fprintf(gp, "%s'%s/survival.dat' using 1:%d with linespoints title '%s'",
			i ? ", " : "", dir, 3 + 2 * i, rows[i].name);
	fprintf(gp, "\nunset logscale y\nunset multiplot\nset autoscale y\n");
	return 0;
}

/* Winner @p R's arrival timeline over round 0: its data file and plot. 0 or -EIO. */
static int
plot_timeline(FILE *gp, const char *dir, const struct isth_topo *t, const struct row *R,
	const char *tag, char *err, size_t errlen)
{
	int i, j, n = isth_topo_n(t), line = 0;
	char name[256];
	double T = R->T;
	FILE *f;

	snprintf(name, sizeof(name), "timeline-%s-M%s.dat", R->name, tag);
	f = open_in(dir, name, err, errlen);
	if (f == NULL)
		return -EIO;
	fprintf(f, "# receiver_y start_ms length_ms sender receiver\n");
	for (i = 0; i < n; i++) {
		uint64_t c = isth_plan_cliques_clique_of(R->s, 0, i) & ~(1ULL << i);
		int q = 0, np = __builtin_popcountll(c);

		for (j = 0; j < n; j++) {
			double o, d, y;

			if (!(c >> j & 1))
				continue;
			o = isth_plan_result_offset(R->res, 0, j);
			d = isth_plan_result_duration(R->res, 0, j);
			y = i + (np > 1 ? -0.3 + 0.6 * q / (np - 1) : 0);
			fprintf(f, "%.4f %.6f %.6f %s %s\n", y, o + isth_topo_latency(t, j, i), d,
				isth_topo_name(t, j), isth_topo_name(t, i));
			q++;
			line++;
		}
	}
	fclose(f);
	fprintf(gp, "set output '%s/timeline-%s-M%s.png'\n", dir, R->name, tag);
	fprintf(gp,
		"set title 'Round 0 of %s, M = %s B: arrival of each contributor at each "
		"receiver "
		"(T = %.1f ms)'\n",
		R->name, tag, T);
	fprintf(gp,
		"set xlabel 'ms since round start'\nset ylabel 'receiver'\nunset key\nset "
		"grid\n");
	fprintf(gp, "set ytics (");
	for (i = 0; i < n; i++)
		fprintf(gp, "%s'%s' %d", i ? ", " : "", isth_topo_name(t, i), i);
	fprintf(gp, ")\nset yrange [-0.7:%d.7]\nset xrange [0:%.3f]\n", n - 1, T * 1.02);
	fprintf(gp, "set arrow 1 from %.3f, graph 0 to %.3f, graph 1 nohead dt 2 lc rgb 'red'\n", T,
		T);
	if (line > 0)
		fprintf(gp,
			"plot '%s/%s' using 2:1:($2):($2+$3):($1-0.04):($1+0.04) with "
			"boxxyerror "
			"fs solid 0.6, '' using ($2+$3/2):1:4 with labels font ',8'\n",
			dir, name);
	else
		fprintf(gp, "plot 0 notitle\n");
	fprintf(gp, "unset arrow 1\nset autoscale x\nset autoscale y\nset ytics autofreq\n");
	return 0;
}

/* Winner @p R's memory occupancy per receiver edge over round 0. 0 or -EIO. */
static int
plot_memory(FILE *gp, const char *dir, const struct isth_topo *t, const struct isth_plan_params *p,
	const struct row *R, const char *tag, char *err, size_t errlen)
{
	int i, k, n = isth_topo_n(t);
	char name[256];
	double T = R->T;
	FILE *f;

	snprintf(name, sizeof(name), "memory-%s-M%s.dat", R->name, tag);
	f = open_in(dir, name, err, errlen);
	if (f == NULL)
		return -EIO;
	fprintf(f, "# ms");
	for (i = 0; i < n; i++)
		fprintf(f, " %s_MB", isth_topo_name(t, i));
	fprintf(f, "\n");
	for (k = 0; k <= 1000; k++) {
		double tau = T * k / 1000.0;

		fprintf(f, "%.4f", tau);
		for (i = 0; i < n; i++)
			fprintf(f, " %.6f",
				isth_plan_result_occupancy(R->res, t, R->s, 0, i, tau) / 1e6);
		fprintf(f, "\n");
	}
	fclose(f);
	fprintf(gp, "set output '%s/memory-%s-M%s.png'\n", dir, R->name, tag);
	fprintf(gp,
		"set title 'Aggregation memory occupancy per receiver edge, round 0 of %s "
		"(limit M = %s B)'\n",
		R->name, tag);
	fprintf(gp,
		"set xlabel 'ms since round start'\nset ylabel 'MB held'\nset key outside "
		"right\n"
		"set yrange [0:*]\nplot ");
	for (i = 0; i < n; i++)
		fprintf(gp, "%s'%s/%s' using 1:%d with lines lw 2 title '%s'", i ? ", " : "", dir,
			name, 2 + i, isth_topo_name(t, i));
	if (R->memory > 0 && R->memory < p->payload_bytes)
		fprintf(gp, ", %.6f with lines dt 2 lc rgb 'red' title 'M'", R->memory / 1e6);
	fprintf(gp, "\nset autoscale y\n");
	return 0;
}

int
plot_all(const char *dir, const struct isth_topo *t, const struct isth_plan_params *p,
	struct row *rows, int nrows, const int *winners, int nwinners, char *err, size_t errlen)
{
	char cmd[1200], tag[64];
	FILE *gp;
	int w;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	gp = open_in(dir, "plots.gp", err, errlen);
	if (gp == NULL)
		return -EIO;
	fprintf(gp, "set terminal pngcairo size 1000,600 noenhanced\n");
	if (plot_survival(gp, dir, rows, nrows, err, errlen) < 0)
		goto fail;
	/* per winner: arrival timeline and memory occupancy over round 0 */
	for (w = 0; w < nwinners; w++) {
		const struct row *R;

		if (winners[w] < 0)
			continue;
		R = &rows[winners[w]];
		mem_tag(R->memory, tag, sizeof(tag));
		if (plot_timeline(gp, dir, t, R, tag, err, errlen) < 0 ||
			plot_memory(gp, dir, t, p, R, tag, err, errlen) < 0)
			goto fail;
	}
	fclose(gp);
	snprintf(cmd, sizeof(cmd), "gnuplot '%s/plots.gp' 2>'%s/gnuplot.log'", dir, dir);
	if (system(cmd) != 0) {
		snprintf(err, errlen, "gnuplot failed, see %s/gnuplot.log", dir);
		return -EIO;
	}
	return 0;
fail:
	fclose(gp);
	return -EIO;
}
