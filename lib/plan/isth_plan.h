/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file isth_plan.h
 * Schedule planner: rotating-clique schedules, survival curves,
 * and the GLPK linear program for offsets, rates and the round time T.
 *
 * EAL-free plain C. GLPK is used only inside this library; its error hook is
 * installed with a longjmp so that a GLPK failure is reported as -EIO and
 * never aborts the process. isth_plan_solve() runs rounds on its own worker
 * threads (isth_plan_params.threads), each with its own GLPK environment
 * (thread-local in GLPK 5); the library's entry points themselves must not be
 * called from several threads at once (the k-path table is shared).
 *
 * The topology (sites, links, routes) is lib/topo (isth_topo.h).
 *
 * Units: times in milliseconds (double), sizes in bytes, rates in bit/s.
 * See doc/planner.md for the model and the exact LP.
 */
#ifndef ISTH_PLAN_H
#define ISTH_PLAN_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#include "isth_topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Maximum number of islands (clique bitmaps are uint64_t): one per site. */
#define ISTH_PLAN_MAX_ISLANDS ISTH_TOPO_MAX_SITES
/** Most reduction trees of one round (as many as a schedule file holds). */
#define ISTH_PLAN_MAX_TREES 8
/** A cyclic sequence of partitions of the islands into cliques. Opaque. */
struct isth_plan_cliques;
/** The solved LP of a schedule: T, offsets and rates per round. Opaque. */
struct isth_plan_result;
/** The schedule file's form (lib/sched, isth_sched.h): isth_plan_result_sched(). */
struct isth_sched;

/** Where multicast copies are made. */
enum isth_plan_repl {
	ISTH_PLAN_REPL_NETWORK = 0, /**< multicast trees: each link carries a stream once */
	ISTH_PLAN_REPL_EDGE = 1, /**< unicast fan-out at the sender's edge: once per destination */
};

/** How streams are routed. */
enum isth_plan_routing {
	ISTH_PLAN_ROUTING_CAPACITY =
		0, /**< among the k lowest-latency paths, to spread load (default) */
	ISTH_PLAN_ROUTING_SHORTEST = 1, /**< the lowest-latency path only */
};

/** Which survival curve. */
enum isth_plan_surv {
	ISTH_PLAN_SURV_FLOOD = 0, /**< fraction of the other n-1 islands not yet reached */
	ISTH_PLAN_SURV_AVG = 1, /**< (||Phi(k)||_F^2 - 1) / (n - 1) */
};

/** Model parameters. Fill with isth_plan_params_default() then override. */
struct isth_plan_params {
	double payload_bytes; /**< bytes each island sends per round */
	double memory_bytes; /**< aggregation memory per receiver edge; 0 = aligned arrivals */
	double access_bps; /**< island <-> edge access link capacity, each direction */
	double access_ms; /**< one-way latency of the access link */
	double chunk_bytes; /**< aggregation granularity: the last chunk is delivered after the last byte */
	double max_round_ms; /**< a round longer than this is infeasible; 0 = no limit */
	enum isth_plan_repl repl; /**< replication mode */
	enum isth_plan_routing routing; /**< path choice; see doc/planner.md */
	int max_lps; /**< cap on cutting-plane LPs per round; 0 = 400. A round
				     that hits it gets a warning (isth_plan_result_warning()) */
	int threads; /**< isth_plan_solve(): threads solving rounds in parallel;
				     0 = one per online CPU (at most ISTH_PLAN_MAX_THREADS).
				     The result does not depend on it */
	double repair_headroom; /**< share F of every WAN link's capacity kept free for
				     repairs and NACKs: the LP, the routing and isth_plan_check()
				     use (1 - F) c_e; access links keep their full capacity.
				     0 <= F < ISTH_PLAN_MAX_HEADROOM; 0 = the full capacity.
				     The planner uses the larger of it and the headroom
				     expected_loss asks for (isth_plan_headroom()) */
	double expected_loss; /**< share p of the frames every WAN link is expected to
				     lose, 0 <= p <= ISTH_PLAN_MAX_LOSS: planned with the
				     headroom isth_plan_loss_headroom(p) for its repairs and
				     recorded in the schedule file ('expected-loss').
				     0 here (nothing reserved); isthmus-plan's default is
				     0.01 */
	int search_trees; /**< isth_plan_search() also weighs the tree family.
				     0 by default: isthmusd paces tree rounds and meets
				     their T on a clean WAN, but a lost partial sum is not
				     repaired per hop (doc/planner.md, "search") */
	uint64_t deadline_ns; /**< isth_clock_mono_ns() time at which round LPs stop:
				     a round not finished by then fails with -ETIME
				     (isth_plan_solve() returns it). 0 = none. The
				     search sets it from its budget */
};

/** Upper bound (exclusive) of isth_plan_params.repair_headroom. */
#define ISTH_PLAN_MAX_HEADROOM 0.5

/** Upper bound (inclusive) of isth_plan_params.expected_loss. */
#define ISTH_PLAN_MAX_LOSS 0.5

/**
 * Repair traffic the planner reserves per lost frame, in frames: a WAN link
 * losing p of its frames is planned with ISTH_PLAN_REPAIR_FACTOR * p / (1 - p)
 * of its DATA again free (doc/planner.md, "Headroom from the expected loss",
 * gives the model and the measurements behind 3).
 */
#define ISTH_PLAN_REPAIR_FACTOR 3

/** Largest headroom an expected loss asks for (reached at p = 0.45 / 2.1, about 0.214). */
#define ISTH_PLAN_MAX_LOSS_HEADROOM 0.45

/**
 * The repair headroom F for a WAN that loses a share @p loss of its frames:
 * repairs r = ISTH_PLAN_REPAIR_FACTOR * loss / (1 - loss) of the DATA must fit
 * beside the DATA planned at (1 - F) c, so F = r / (1 + r) (= 3p / (1 + 2p)),
 * at most ISTH_PLAN_MAX_LOSS_HEADROOM.
 * @return F, or NAN when @p loss is outside 0..ISTH_PLAN_MAX_LOSS.
 */
double isth_plan_loss_headroom(double loss);

/**
 * The headroom the planner plans every WAN link at: the larger of
 * @p p->repair_headroom and isth_plan_loss_headroom(@p p->expected_loss).
 * @return F, or NAN when either is out of range.
 */
double isth_plan_headroom(const struct isth_plan_params *p);

/** Most threads isth_plan_solve() uses. */
#define ISTH_PLAN_MAX_THREADS 16

/** Set @p p to the documented defaults (100 Gbit/s access, 0 ms, 1 MiB chunks, network replication). */
void isth_plan_params_default(struct isth_plan_params *p);

/* ------------------------------------------------------------------ */
/* Schedules                                                           */
/* ------------------------------------------------------------------ */

/**
 * Build a schedule from explicit rounds. @p cliques[r] lists @p ncliques[r]
 * bitmaps that must partition {0..n-1}.
 * @return the schedule, or NULL with errno = EINVAL (not a partition) / ENOMEM.
 */
struct isth_plan_cliques *isth_plan_cliques_new(
	const char *name, int n, int nrounds, const int *ncliques, const uint64_t *const *cliques);

/**
 * Build a built-in family: "all-to-all", "regional", "pairs", "triangles",
 * or "tree" (isth_plan_tree() under isth_plan_params_default()).
 * @return the schedule, or NULL with errno = EINVAL (unknown name or size).
 */
struct isth_plan_cliques *isth_plan_cliques_family(const struct isth_topo *t, const char *name);

/**
 * Reduction trees (doc/planner.md, "Reduction trees"): make round @p r,
 * which must be one clique of all islands, reduce up and broadcast down
 * tree @p t, @p parent[i] the parent of island i, -1 for the root. Trees are
 * numbered 0..k-1 in order (@p t is the number so far, or below it to
 * replace one); chunk c rides tree c mod k. Only ranges are checked here:
 * isth_plan_solve() refuses (-EINVAL) and isth_plan_check() names a tree
 * that is not spanning, has a cycle or two roots.
 * @return 0 or -EINVAL.
 */
int isth_plan_cliques_set_tree(struct isth_plan_cliques *s, int r, int t, const int *parent);
/** Reduction trees of round @p r (modulo the cycle); 0 for a clique round. */
int isth_plan_cliques_ntrees(const struct isth_plan_cliques *s, int r);
/** Parents (n entries, -1 the root) of tree @p t of round @p r; 0 or -EINVAL. */
int isth_plan_cliques_tree(const struct isth_plan_cliques *s, int r, int t, int *parent);

/**
 * The tree family for @p t under @p p: one round, one clique of all
 * islands (A = 1, an exact global sum every round) and 1 to
 * ISTH_PLAN_MAX_TREES spanning trees rooted at different edges, chosen by
 * the tree model's T (doc/planner.md): per root and capacity floor a
 * shortest-latency tree, and for k > 1 trees built in turn with the links
 * earlier trees use made dearer. Named "tree".
 * @return the schedule, or NULL with errno (EINVAL: fewer than 2 islands
 *         or a disconnected topology, ENOMEM; ENOENT: no tree set fits
 *         the memory).
 */
struct isth_plan_cliques *
isth_plan_tree(const struct isth_topo *t, const struct isth_plan_params *p);

/** Copy of a schedule. */
struct isth_plan_cliques *isth_plan_cliques_dup(const struct isth_plan_cliques *s);
/** Free a schedule; NULL is accepted. */
void isth_plan_cliques_free(struct isth_plan_cliques *s);
/** Name of the schedule. */
const char *isth_plan_cliques_name(const struct isth_plan_cliques *s);
/** Number of islands. */
int isth_plan_cliques_n(const struct isth_plan_cliques *s);
/** Number of rounds in the cycle. */
int isth_plan_cliques_nrounds(const struct isth_plan_cliques *s);
/** Number of cliques in round @p r (taken modulo the cycle). */
int isth_plan_cliques_ncliques(const struct isth_plan_cliques *s, int r);
/** Bitmap of clique @p c of round @p r. */
uint64_t isth_plan_cliques_clique(const struct isth_plan_cliques *s, int r, int c);
/** Bitmap of the clique containing island @p i in round @p r. */
uint64_t isth_plan_cliques_clique_of(const struct isth_plan_cliques *s, int r, int i);

/**
 * Survival curve averaged over origins i and phases s: out[k] for
 * k = 0..kmax-1 (out[0] = 1).
 * @return 0, or -EINVAL.
 */
int isth_plan_survival(
	const struct isth_plan_cliques *s, enum isth_plan_surv kind, double *out, int kmax);

/**
 * A = mean over i and s of sum_{k>=0} S(k). INFINITY if the schedule never
 * mixes globally (the union of its cliques does not connect all islands).
 */
double isth_plan_A(const struct isth_plan_cliques *s, enum isth_plan_surv kind);

/* ------------------------------------------------------------------ */
/* The LP                                                              */
/* ------------------------------------------------------------------ */

/**
 * Minimise the round time T of @p s on @p t under @p p (doc/planner.md).
 * @param out receives the result (also when infeasible); free with isth_plan_result_free().
 * @return 0 (feasible or not, see isth_plan_result_feasible()), -EINVAL,
 *         -ENOMEM, or -EIO if GLPK failed (its error was caught).
 */
int isth_plan_solve(const struct isth_topo *t, const struct isth_plan_cliques *s,
	const struct isth_plan_params *p, struct isth_plan_result **out);

/** Free a result; NULL is accepted. */
void isth_plan_result_free(struct isth_plan_result *r);
/** 1 if feasible. */
int isth_plan_result_feasible(const struct isth_plan_result *r);
/** Round time T in ms (max over the rounds of the cycle); NAN if infeasible. */
double isth_plan_result_T(const struct isth_plan_result *r);
/**
 * The binding constraint: for infeasible results the reason
 * ("memory: ..."), for feasible ones the constraint with the largest dual
 * ("latency", "capacity NYC->LON", "memory @LON", "access").
 */
const char *isth_plan_result_binding(const struct isth_plan_result *r);
/** Offset (ms from the round start) of sender @p i in round @p r; NAN if it does not send. */
double isth_plan_result_offset(const struct isth_plan_result *r, int round, int i);
/** Transmission duration (ms) of sender @p i in round @p r (rate = 8 * payload / duration); NAN if none. */
double isth_plan_result_duration(const struct isth_plan_result *r, int round, int i);
/** Number of LP solves (simplex calls) used, for benchmarks. */
int isth_plan_result_lp_iterations(const struct isth_plan_result *r);

/**
 * Aggregation-memory occupancy (bytes) at receiver @p i's edge at time
 * @p tau (ms from the round start) in round @p r, from the fluid model.
 */
double isth_plan_result_occupancy(const struct isth_plan_result *r, const struct isth_topo *t,
	const struct isth_plan_cliques *s, int round, int i, double tau);

/**
 * Number of rounds whose LP is not trusted (the cutting-plane cap was hit,
 * see isth_plan_params.max_lps); their T and rates may overload a link.
 */
int isth_plan_result_nwarnings(const struct isth_plan_result *r);
/** The warning of round @p round ("" if none). */
const char *isth_plan_result_warning(const struct isth_plan_result *r, int round);

/**
 * The path of sender @p j's stream to receiver @p i in round @p round, as
 * the plan routed it: the islands from j to i (both included) into @p hops.
 * @return the number of islands, or a negative errno.
 */
int isth_plan_result_route(const struct isth_plan_result *r, const struct isth_topo *t, int round,
	int j, int i, int *hops, int max);

/**
 * Peak aggregation memory (bytes) that receiver @p i's edge holds over the
 * cycle, from the fluid model (the maximum of
 * isth_plan_result_occupancy() over every round, evaluated exactly at the
 * arrival breakpoints); NAN if @p r is infeasible or does not match.
 */
double isth_plan_result_peak_memory(const struct isth_plan_result *r, const struct isth_topo *t,
	const struct isth_plan_cliques *s, int i);

/**
 * Check every round of a solved schedule against the model, independently
 * of the LP: each directed link's load sum_j m_je 8P / D_j <= capacity
 * (1 ppm tolerance), each sender's last byte delivered (offset + duration
 * + path latency + delivery tail) by T, no sender faster than its access
 * link, and each receiver edge's peak occupancy <= M (tolerance 1 ppm of P
 * plus what one stream delivers in 1 ns); with network replication, also
 * that each sender's routes form a tree rooted at it (every site on them
 * entered over one link: what isthmus-wan sends once per link).
 * @param err receives "round r: ..." naming the first violation.
 * @return 0 if every round holds, -ERANGE on a violation, -EINVAL if the
 *         arguments do not match or @p r is infeasible, -ENOMEM.
 */
int isth_plan_check(const struct isth_topo *t, const struct isth_plan_cliques *s,
	const struct isth_plan_params *p, const struct isth_plan_result *r, char *err,
	size_t errlen);

/**
 * The solved plan @p r of @p s as a schedule of lib/sched, the one writer of
 * the schedule file (save it with isth_sched_save()): the islands named as
 * in @p t, T rounded up to the next ns plus 1 ns, offsets to the nearest ns,
 * constant rates rounded down to whole bit/s (a stream never outruns the
 * plan), payload, chunk and memory from @p p, each edge's peak aggregation
 * memory (isth_plan_result_peak_memory(), rounded up) and the route of every
 * stream (version 2), and with repair headroom F > 0 a note recording F
 * (doc/schedule-file.md).
 * @param p the parameters @p r was solved with (memory_bytes included)
 * @param epoch_ns the file's epoch, or 0 for "runtime"
 * @param err receives the reason on failure
 * @return the schedule (isth_sched_free()), or NULL with errno (EINVAL:
 *         infeasible or not matching, ENOMEM).
 */
struct isth_sched *isth_plan_result_sched(const struct isth_topo *t,
	const struct isth_plan_cliques *s, const struct isth_plan_params *p,
	const struct isth_plan_result *r, uint64_t epoch_ns, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Search                                                              */
/* ------------------------------------------------------------------ */

/**
 * Progress callback: what happened (@p what: "annealing", or a seed family's
 * fate, e.g. "seed pairs weighed in 3.1 s"), elapsed seconds, round LPs
 * solved, best objective (ms) so far.
 */
typedef void (*isth_plan_progress_fn)(
	const char *what, double elapsed_s, long evals, double best_obj_ms, void *arg);

/** Default number of annealing iterations of isth_plan_search(). */
#define ISTH_PLAN_SEARCH_ITERS 4000

/** Seed families isth_plan_search() starts from (all-to-all, triangles, pairs, regional). */
#define ISTH_PLAN_SEARCH_SEEDS 4

/** What became of a seed family in isth_plan_search(). */
enum isth_plan_seed_state {
	ISTH_PLAN_SEED_WEIGHED = 0, /**< solved: obj_ms is its objective (INFINITY: infeasible) */
	ISTH_PLAN_SEED_ABSENT, /**< the family is not defined for this topology */
	ISTH_PLAN_SEED_NO_MIX, /**< never mixes globally (A infinite): no LP needed */
	ISTH_PLAN_SEED_SKIPPED, /**< not started: the seconds it would take (from the
				     ones before it) exceed what was left of the budget */
	ISTH_PLAN_SEED_CUT, /**< started, stopped by the budget before its last round */
};

/** How isth_plan_search() spent its budget (every field written by it). */
struct isth_plan_search_report {
	int cut_short; /**< the budget ended the run before its iterations */
	long evals; /**< round LPs solved */
	double seeds_s; /**< wall time of the starting point: the warm start and
			  * the seed families, all together */
	double total_s; /**< wall time of the whole search */
	int nseeds;
	struct {
		char name[32];
		enum isth_plan_seed_state state;
		double seconds; /**< wall time spent on it */
		double obj_ms; /**< T (A_flood + 1/2) when weighed, else INFINITY */
	} seed[ISTH_PLAN_SEARCH_SEEDS];
};

/**
 * Simulated-annealing search over clique partitions and rotation sequences
 * for the minimum of T * (A_flood + 1/2), seeded with the built-in families.
 * The temperature falls linearly over @p iterations (0.05 -> 0.001), so the
 * result is a function of the inputs and @p seed alone, unless @p seconds
 * ends the run first: it bounds the wall time of the whole call. The seed
 * families are solved first, the cheapest (by cliques and streams) first, each
 * under the same deadline: one predicted to need more than the time left
 * (at the pace of the ones before it) is skipped, one still running at the
 * deadline is dropped (isth_plan_params.deadline_ns stops its LP); the
 * annealing gets what remains. A run the budget shortens sets cut_short
 * or names its seeds in @p rep (its result then depends on the machine).
 * @param init optional extra starting point (e.g. the best schedule found
 *             with less memory, which stays feasible with more); may be NULL.
 *             Weighed first and past @p seconds (only p->deadline_ns stops
 *             it), so a search left no time returns it if it is feasible.
 * @param iterations annealing steps; 0 = ISTH_PLAN_SEARCH_ITERS
 * @param rep may be NULL; what the search did with its time
 * @return the best schedule found (name "search"), or NULL with errno set
 *         (EINVAL, ENOMEM, EIO; ENOENT if nothing feasible was found, ETIME
 *         if the budget ended before anything feasible was).
 */
struct isth_plan_cliques *
isth_plan_search(const struct isth_topo *t, const struct isth_plan_params *p,
	const struct isth_plan_cliques *init, long iterations, double seconds, unsigned seed,
	struct isth_plan_search_report *rep, isth_plan_progress_fn progress, void *arg);

/* ------------------------------------------------------------------ */
/* Synchronous baselines                                               */
/* ------------------------------------------------------------------ */

/**
 * Communication time (ms) of one host-based ring all-reduce of
 * payload_bytes: 2(n-1) dependent steps of payload/n bytes around the ring
 * with the shortest circumference (exact TSP over latencies up to 12 sites,
 * 2-opt beyond); each step is one hop's latency (plus 2 access_ms) and one
 * chunk's serialisation at the hop's shared bottleneck, and a rank sends
 * step s once it has received step s-1 and its link is free.
 * @param order if not NULL receives the ring order (n site ids).
 * @return the time in ms, or a negative errno.
 */
double isth_plan_ring_allreduce_ms(
	const struct isth_topo *t, const struct isth_plan_params *p, int *order);

/**
 * Communication time (ms) of one recursive-doubling all-reduce: log2 steps
 * exchanging the whole payload with the rank at distance 1, 2, 4, ...
 * (plus a hand-off and a hand-back step when n is not a power of two),
 * each as long as its slowest exchange; ranks placed on sites by a swap
 * search.
 * @param order if not NULL receives the site of each rank (n entries).
 * @return the time in ms, or a negative errno.
 */
double
isth_plan_rd_allreduce_ms(const struct isth_topo *t, const struct isth_plan_params *p, int *order);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_PLAN_H */
