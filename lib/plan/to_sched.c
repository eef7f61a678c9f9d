/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A solved plan in the schedule file's form: a struct isth_sched of
 * lib/sched, the one owner of the file format, which the caller saves.
 * lib/plan keeps its own struct isth_plan_cliques for what it searches and
 * solves (partitions only, no times or rates); this is the one place where
 * a plan becomes a schedule.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isth_sched.h"
#include "plan_internal.h"

/* Round @p round's cliques, senders and routes into @p S; 0 or -EINVAL with @p err. */
static int
add_round(struct isth_sched *S, const struct isth_topo *t, const struct isth_plan_cliques *s,
	const struct isth_plan_params *p, const struct isth_plan_result *r, int round, char *err,
	size_t errlen)
{
	uint64_t cl[NMAX];
	int n = isth_topo_n(t), nc = isth_plan_cliques_ncliques(s, round), i, c;

	for (c = 0; c < nc; c++)
		cl[c] = isth_plan_cliques_clique(s, round, c);
	if (isth_sched_set_round(S, round, nc, cl) < 0) {
		snprintf(err, errlen, "cannot build schedule: round %d", round);
		return -EINVAL;
	}
	/* a tree round: its trees (version 4); a tree link is one path, no routes */
	for (c = 0; c < isth_plan_cliques_ntrees(s, round); c++) {
		int par[NMAX];

		if (isth_plan_cliques_tree(s, round, c, par) < 0 ||
			isth_sched_set_tree(S, round, c, par) < 0) {
			snprintf(err, errlen, "cannot record tree %d of round %d", c, round);
			return -EINVAL;
		}
	}
	for (i = 0; i < n; i++) {
		double off = isth_plan_result_offset(r, round, i);
		double dur = isth_plan_result_duration(r, round, i);
		uint64_t rate, peers = isth_plan_cliques_clique_of(s, round, i) & ~(1ULL << i);

		if (isnan(off))
			continue;
		/* round the rate down so the stream never outruns the plan */
		rate = (uint64_t)floor(8.0 * p->payload_bytes * 1000.0 / dur);
		if (isth_sched_set_sender(
			    S, round, i, (uint64_t)llround(off * 1e6), 1, NULL, &rate) < 0) {
			snprintf(err, errlen, "cannot build schedule: sender %d in round %d", i,
				round);
			return -EINVAL;
		}
		/* the path of each of its streams, as planned (version 2) */
		for (c = 0; c < n && isth_plan_cliques_ntrees(s, round) == 0; c++) {
			int hops[NMAX + 1], nh;

			if (!(peers >> c & 1))
				continue;
			nh = isth_plan_result_route(r, t, round, i, c, hops, NMAX + 1);
			if (nh < 0 || isth_sched_set_route(S, round, i, c, hops, nh) < 0) {
				snprintf(err, errlen, "cannot record route %d %d %d", round, i, c);
				return -EINVAL;
			}
		}
	}
	return 0;
}

struct isth_sched *
isth_plan_result_sched(const struct isth_topo *t, const struct isth_plan_cliques *s,
	const struct isth_plan_params *p, const struct isth_plan_result *r, uint64_t epoch_ns,
	char *err, size_t errlen)
{
	const char *names[NMAX];
	char note[ISTH_SCHED_NOTE_MAX];
	double f;
	struct isth_sched *S;
	int n, nr, i, rd, e;

	if (t == NULL || s == NULL || p == NULL || r == NULL || !isth_plan_result_feasible(r) ||
		isth_plan_cliques_n(s) != isth_topo_n(t)) {
		snprintf(err, errlen, "cannot build schedule: %s", strerror(EINVAL));
		errno = EINVAL;
		return NULL;
	}
	n = isth_topo_n(t);
	nr = isth_plan_cliques_nrounds(s);
	for (i = 0; i < n; i++)
		names[i] = isth_topo_name(t, i);
	/* T up to the next ns, +1 ns: every planned stream ends inside the round */
	S = isth_sched_new(n, names, (uint64_t)ceil(isth_plan_result_T(r) * 1e6) + 1, epoch_ns,
		(uint64_t)llround(p->payload_bytes), (uint64_t)llround(p->chunk_bytes),
		(uint64_t)llround(p->memory_bytes), nr);
	if (S == NULL) {
		e = errno;
		snprintf(err, errlen, "cannot build schedule: %s", strerror(e));
		errno = e;
		return NULL;
	}
	/* each edge's peak aggregation memory over the cycle (fluid model,
	 * rounded up): isthmusd --check refuses an edge with less */
	for (i = 0; i < n; i++) {
		double pk = isth_plan_result_peak_memory(r, t, s, i);

		if (isfinite(pk))
			isth_sched_set_peak(S, i, (uint64_t)ceil(pk));
	}
	/* what it was planned for: isthmusd refuses to run it with the other
	 * replication ([wan] replication), as its rates and routes assume this one */
	isth_sched_set_replication(
		S, p->repl == ISTH_PLAN_REPL_EDGE ? ISTH_SCHED_REPL_EDGE : ISTH_SCHED_REPL_NETWORK);
	for (rd = 0; rd < nr; rd++)
		if (add_round(S, t, s, p, r, rd, err, errlen) < 0) {
			isth_sched_free(S);
			errno = EINVAL;
			return NULL;
		}
	/* the loss it was planned for (version 3 'expected-loss': what the
	 * rates and T are for); F, which follows from it or from
	 * --repair-headroom, rides as a note, and the rates and T above
	 * already are the ones planned at (1 - F) */
	isth_sched_set_expected_loss(S, p->expected_loss);
	f = isth_plan_headroom(p);
	if (f > 0) {
		snprintf(note, sizeof(note),
			"repair-headroom %g: planned at %g of every WAN link's capacity "
			"(isthmus-plan %s)",
			f, 1 - f, f > p->repair_headroom ? "--expected-loss" : "--repair-headroom");
		isth_sched_set_note(S, note);
	}
	return S;
}
