/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-plan's report on stdout: the table for people or the CSV, each
 * row set against the synchronous all-reduce baselines. Reads what
 * main.c planned; plans nothing.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan_app.h"

void
fmt_bytes(double b, char *buf, size_t len)
{
	static const char *si[] = {"", "K", "M", "G", "T"};
	static const char *bi[] = {"", "Ki", "Mi", "Gi", "Ti"};
	int k;

	/* the exact spelling a user would have typed, SI first */
	for (k = 4; k > 0; k--)
		if (b >= pow(1000, k) && fmod(b, pow(1000, k)) == 0) {
			snprintf(buf, len, "%.0f%s", b / pow(1000, k), si[k]);
			return;
		}
	for (k = 4; k > 0; k--)
		if (b >= pow(1024, k) && fmod(b, pow(1024, k)) == 0) {
			snprintf(buf, len, "%.0f%s", b / pow(1024, k), bi[k]);
			return;
		}
	for (k = 4; k > 0; k--)
		if (b >= pow(1000, k)) {
			snprintf(buf, len, "%.4g%s", b / pow(1000, k), si[k]);
			return;
		}
	snprintf(buf, len, "%.0f", b);
}

void
report_baseline(const struct isth_topo *topo, const struct cli *c, const struct plan_run *run,
	struct baseline *b)
{
	b->ring_ms = isth_plan_ring_allreduce_ms(topo, &c->prm, b->ring_order);
	b->rd_ms = isth_plan_rd_allreduce_ms(topo, &c->prm, b->rd_order);
	/* every comparison is against the better synchronous all-reduce */
	b->base_ms = b->rd_ms >= 0 && b->rd_ms < b->ring_ms ? b->rd_ms : b->ring_ms;
	b->base_name = b->base_ms == b->ring_ms ? "ring" : "recursive doubling";
	b->C = c->compute_ms > 0 ? c->compute_ms
				 : (run->overall >= 0 ? run->rows[run->overall].T : 0);
}

/* T of all-to-all at @p memory, or NAN if it is not feasible there (or not planned). */
static double
a2a_T(const struct plan_run *run, double memory)
{
	double a2a = NAN;
	int k;

	for (k = 0; k < run->nrows; k++)
		if (strcmp(run->rows[k].name, "all-to-all") == 0 && run->rows[k].memory == memory &&
			run->rows[k].feasible)
			a2a = run->rows[k].T;
	return a2a;
}

static void
print_csv_row(const struct cli *c, const struct plan_run *run, const struct baseline *b,
	const struct row *R, int headroom)
{
	double a2a = a2a_T(run, R->memory), C = b->C;

	printf("%s,%.0f,%d,", R->name, R->memory, R->feasible);
	if (!R->feasible) {
		printf(",,,,\"%s\",,,%.3f,,,,,%.3f,%.3f", R->binding, b->base_ms, b->ring_ms,
			b->rd_ms);
		if (headroom)
			printf(",%g", isth_plan_headroom(&c->prm));
		printf("\n");
		return;
	}
	printf("%.3f,", R->T);
	if (isfinite(R->Af))
		printf("%.6f,%.6f,%.3f,", R->Af, R->Aa, R->obj);
	else
		printf("inf,inf,inf,");
	printf("\"%s\",", R->binding);
	if (isfinite(R->obj))
		printf("%.3f,", R->obj);
	else
		printf("inf,");
	printf("%d,%.3f,%.4f,", isth_plan_cliques_nrounds(R->s), b->base_ms,
		b->base_ms / (C + b->base_ms));
	if (isfinite(R->obj) && C > 0)
		printf("%.3f,", (C + b->base_ms) / fmax(C, R->T));
	else
		printf(",");
	if (!isnan(a2a))
		printf("%.3f,", a2a);
	else
		printf(",");
	if (isfinite(R->obj) && !isnan(a2a) && C > 0)
		printf("%.3f,", (C + a2a) / fmax(C, R->T));
	else
		printf(",");
	printf("%.3f,%.3f", b->ring_ms, b->rd_ms);
	if (headroom)
		printf(",%g", isth_plan_headroom(&c->prm));
	printf("\n");
}

void
report_csv(const struct cli *c, const struct plan_run *run, const struct baseline *b)
{
	/* F = 0 (no --repair-headroom, --expected-loss 0) prints exactly what
	 * it printed before the options; else the F planned at, whichever set it */
	int headroom = isth_plan_headroom(&c->prm) > 0, i;

	printf("schedule,memory_bytes,feasible,round_ms,A_flood,A_avg,objective_ms,binding,"
	       "staleness_ms,rounds,allreduce_ms,allreduce_idle,speedup_vs_allreduce,sync_"
	       "a2a_ms,speedup_vs_sync_a2a,ring_allreduce_ms,rd_allreduce_ms%s\n",
		headroom ? ",repair_headroom" : "");
	for (i = 0; i < run->nrows; i++)
		print_csv_row(c, run, b, &run->rows[i], headroom);
}

/* The table's head: the topology and the model, then the column names. */
static void
print_table_head(const struct isth_topo *topo, const struct cli *c)
{
	const struct isth_plan_params *prm = &c->prm;
	double f = isth_plan_headroom(prm);
	char pb[32];

	fmt_bytes(prm->payload_bytes, pb, sizeof(pb));
	printf("topology: %d islands, %d regions, %d links; payload %sB/round, access %.4g "
	       "Gbit/s, replication %s, routing %s",
		isth_topo_n(topo), isth_topo_nregions(topo), isth_topo_ndlinks(topo) / 2, pb,
		prm->access_bps / 1e9, prm->repl == ISTH_PLAN_REPL_EDGE ? "edge" : "network",
		prm->routing == ISTH_PLAN_ROUTING_SHORTEST ? "shortest" : "capacity");
	/* F = 0 prints exactly what it printed before the options */
	if (f > prm->repair_headroom)
		printf(";\nrepair headroom %g: every WAN link planned at %g of its capacity "
		       "(for an expected loss of %g %%)",
			f, 1 - f, 100 * prm->expected_loss);
	else if (f > 0)
		printf(";\nrepair headroom %g: every WAN link planned at %g of its capacity "
		       "(--repair-headroom; an expected loss of %g %% asks for %g)",
			f, 1 - f, 100 * prm->expected_loss,
			isth_plan_loss_headroom(prm->expected_loss));
	printf("\n\n");
	printf("  %-11s %8s %5s %10s %8s %8s %13s  %s\n", "schedule", "memory", "ok", "round_ms",
		"A_flood", "A_avg", "T(A+1/2)_ms", "binding constraint / reason");
}

static void
print_table_rows(const struct cli *c, const struct plan_run *run)
{
	int i, m;

	for (i = 0; i < run->nrows; i++) {
		const struct row *R = &run->rows[i];
		char mb[32];
		int win = 0;

		for (m = 0; m < c->nmem; m++)
			win |= run->winners[m] == i;
		fmt_bytes(R->memory, mb, sizeof(mb));
		if (i > 0 && R->memory != run->rows[i - 1].memory)
			printf("\n");
		printf("%c %-11s %8s %5s ", win ? '*' : ' ', R->name, mb,
			R->feasible ? "yes" : "NO");
		if (!R->feasible) {
			printf("%10s %8s %8s %13s  %s\n", "-", "-", "-", "-", R->binding);
			continue;
		}
		if (isfinite(R->Af))
			printf("%10.1f %8.3f %8.3f %13.1f  %s\n", R->T, R->Af, R->Aa, R->obj,
				R->binding);
		else
			printf("%10.1f %8s %8s %13s  %s; never mixes globally (A = inf)\n", R->T,
				"inf", "inf", "-", R->binding);
	}
	printf("\n* = lowest T*(A_flood+1/2) at that memory");
	if (run->overall >= 0) {
		const struct row *W = &run->rows[run->overall];
		char mb[32];

		fmt_bytes(W->memory, mb, sizeof(mb));
		printf("; overall winner: %s with M=%s (T=%.1f ms, staleness T(A+1/2)=%.1f ms)",
			W->name, mb, W->T, W->obj);
	}
	printf("\n\n");
}

/* The tree family at memory @p mem: the same semantics as the ring (an exact sum each step). */
static void
print_tree_lines(
	const struct plan_run *run, const struct baseline *b, double mem, const char *mb, double C)
{
	int k;

	for (k = 0; k < run->nrows; k++) {
		const struct row *R = &run->rows[k];

		if (strcmp(R->name, "tree") != 0 || R->memory != mem)
			continue;
		if (R->feasible)
			printf("  reduction trees (%d), exact global sum each step, M=%s: %.1f ms "
			       "per "
			       "step, %.2f of the ring's, GPU idle %.1f %%\n",
				isth_plan_cliques_ntrees(R->s, 0), mb, R->T, R->T / b->ring_ms,
				100 * R->T / (C + R->T));
		else
			printf("  reduction trees, M=%s: infeasible\n", mb);
	}
}

/* The table's last part: the synchronous all-reduce against the winner. */
static void
print_table_baseline(const struct isth_topo *topo, const struct cli *c, const struct plan_run *run,
	const struct baseline *b)
{
	const struct row *W = &run->rows[run->overall];
	double C = b->C, step = fmax(C, W->T);
	int q, m, k, n = isth_topo_n(topo);

	printf("synchronous baseline (compute %.1f ms per step%s):\n", C,
		c->compute_ms > 0 ? "" : ", = winner's T");
	printf("  ring all-reduce (host-based, %d dependent steps, ring", 2 * (n - 1));
	for (q = 0; q < n; q++)
		printf(" %s", isth_topo_name(topo, b->ring_order[q]));
	printf("): %.1f ms per step\n", b->ring_ms);
	printf("  recursive doubling (host-based, ranks on");
	for (q = 0; q < n; q++)
		printf(" %s", isth_topo_name(topo, b->rd_order[q]));
	printf("): %.1f ms per step\n", b->rd_ms);
	printf("  best synchronous all-reduce (%s): %.1f ms communication per step, GPU idle "
	       "%.1f %%\n",
		b->base_name, b->base_ms, 100 * b->base_ms / (C + b->base_ms));
	for (m = 0; m < c->nmem; m++) {
		char mb[32];

		fmt_bytes(c->mems[m], mb, sizeof(mb));
		print_tree_lines(run, b, c->mems[m], mb, C);
		for (k = 0; k < run->nrows; k++) {
			const struct row *R = &run->rows[k];

			if (strcmp(R->name, "all-to-all") != 0 || R->memory != c->mems[m])
				continue;
			if (R->feasible)
				printf("  all-to-all multicast + in-line aggregation, M=%s: %.1f "
				       "ms per step, GPU idle %.1f %%\n",
					mb, R->T, 100 * R->T / (C + R->T));
			else
				printf("  all-to-all multicast + in-line aggregation, M=%s: "
				       "infeasible\n",
					mb);
		}
	}
	printf("  %s%s (overlaps compute, staleness %.1f ms): step %.1f ms, GPU idle "
	       "%.1f %%, throughput %.2fx %s all-reduce\n\n",
		strcmp(W->name, "tree") == 0 ? "" : "rotating ", W->name, W->obj, step,
		100 * (step - C) / step, (C + b->base_ms) / step, b->base_name);
}

void
report_table(const struct isth_topo *topo, const struct cli *c, const struct plan_run *run,
	const struct baseline *b)
{
	print_table_head(topo, c);
	print_table_rows(c, run);
	if (run->overall >= 0 && b->base_ms > 0)
		print_table_baseline(topo, c, run, b);
}
