/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared between the isthmus-plan CLI (main.c), its report (report.c) and its plots (plot.c). */
#ifndef PLAN_APP_H
#define PLAN_APP_H

#include <stddef.h>
#include <stdint.h>

#include "isth_plan.h"

struct row {
	const char *name;
	double memory;
	int feasible;
	int untrusted; /* a round hit the cut cap: never a winner */
	double T, Af, Aa, obj;
	char binding[160];
	struct isth_plan_cliques *s; /* owned by the row */
	struct isth_plan_result *res; /* owned by the row */
};

/* isthmus-plan --expected-loss's default: a realistic WAN's 1 % (doc/planner.md). */
#define PLAN_APP_EXPECTED_LOSS 0.01

/* What the command line asks for: parse_args() fills it, nothing else writes it. */
struct cli {
	struct isth_plan_params prm; /* the model; memory_bytes is set per row */
	const char *sites, *links, *out, *plotdir;
	char *memlist, *schedlist; /* --memory-bytes, --schedule as given */
	double mems[64]; /* the memory values swept, from memlist */
	int nmem;
	const char *scheds[16]; /* the schedules planned, from schedlist */
	int nsched;
	double search_s; /* --search-seconds; INFINITY: not given */
	double budget_s; /* --time-budget: the command's wall clock */
	uint64_t t0_ns; /* when the command started (lib/clock, monotonic) */
	long search_iters;
	unsigned seed;
	double compute_ms; /* 0: the winner's T */
	int csv, quiet;
	uint64_t epoch; /* --epoch-ns; 0 = runtime */
	const char *dtype; /* --dtype: the element type --out records, NULL: unstated */
};

/* The rows planned (one per memory value and schedule) and their ranking. */
struct plan_run {
	struct row *rows;
	int nrows;
	int winners[64]; /* per memory value: its lowest T*(A+1/2), or -1 */
	int overall; /* the lowest of all, or -1 */
	int rc; /* exit status so far */
};

/* The synchronous all-reduce every row is compared with. */
struct baseline {
	double ring_ms, rd_ms;
	double base_ms; /* the better of the two */
	const char *base_name;
	double C; /* compute per step: --compute-ms, or the winner's T */
	int ring_order[ISTH_PLAN_MAX_ISLANDS], rd_order[ISTH_PLAN_MAX_ISLANDS];
};

/* report.c: @p b in the exact spelling a user would type (32G, 512Mi, 1.5G). */
void fmt_bytes(double b, char *buf, size_t len);
/* report.c: the baselines of the topology and model of @p c, and C. */
void report_baseline(const struct isth_topo *topo, const struct cli *c, const struct plan_run *run,
	struct baseline *b);
/* report.c: every row as CSV (header first) on stdout. */
void report_csv(const struct cli *c, const struct plan_run *run, const struct baseline *b);
/* report.c: the table for people on stdout, the baseline last. */
void report_table(const struct isth_topo *topo, const struct cli *c, const struct plan_run *run,
	const struct baseline *b);

/* Write PNGs into dir; returns 0 or a negative errno, message in err. */
int plot_all(const char *dir, const struct isth_topo *t, const struct isth_plan_params *p,
	struct row *rows, int nrows, const int *winners, int nwinners, char *err, size_t errlen);

#endif
