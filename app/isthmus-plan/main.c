/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-plan: topology in, schedules out. See --help and doc/planner.md.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isth_clock.h"
#include "isth_plan.h"
#include "isth_sched.h"
#include "isth_text.h"
#include "plan_app.h"
#include "isth_version.h"

#define EXIT_USAGE 1
#define EXIT_TOPO 2
#define EXIT_INPUT 2 /* a bad option value: the same class as a bad topology file */
#define PAYLOAD_MAX 1e15 /* bytes: the model's range (see doc/planner.md) */
#define EXIT_NONE 3
#define EXIT_OUTPUT 4
#define EXIT_SOLVER 5

static const char *families[] = {"all-to-all", "regional", "pairs", "triangles", "tree", "search"};
#define NFAM 6

/* A size flag, by the project's one convention (lib/text: 32G = 32e9, 32Gi = 32 * 2^30). */
static int
size_arg(const char *s, double *out)
{
	uint64_t v;

	if (isth_text_parse_size(s, &v) < 0)
		return -EINVAL;
	*out = (double)v;
	return 0;
}

static void usage_questions(FILE *f);

/* The Model options on loss and repair: the headroom, from a loss or given. */
static void
usage_loss(FILE *f)
{
	fprintf(f,
		"  --expected-loss P     the share of frames every WAN link is expected to\n"
		"                        lose, 0 <= P <= 0.5 (default 0.01, 1 %%): the planner\n"
		"                        keeps a headroom F = 3P/(1+2P) of every WAN link free\n"
		"                        for the repairs and NACKs of that loss (at most 0.45;\n"
		"                        0.01: F = 0.029, 0.05: 0.136, 0.1: 0.25; model in\n"
		"                        doc/planner.md) and --out records P. 0: no headroom.\n"
		"                        Declare the loss your WAN has: a plan for more loss\n"
		"                        costs T in every round, one for less costs partials\n"
		"  --repair-headroom F   plan every WAN link at (1-F) of its capacity, so a\n"
		"                        share F stays free for repairs and NACKs under loss\n"
		"                        (access links keep their full capacity); 0 <= F < 0.5\n"
		"                        (default 0). With --expected-loss the larger of the\n"
		"                        two F wins. Cost: a round bound by link capacity\n"
		"                        grows by up to 1/(1-F) (F = 0.2: +25 %%); a round\n"
		"                        bound by latency or access does not change.\n"
		"                        Measured on the testbed (doc/notes/performance-log.md,\n"
		"                        section 9, 2026-12-02): at 10 %% random loss per\n"
		"                        link F = 0.2-0.3 (2p-3p) cut partial results from\n"
		"                        1.8-2.6 %% to 0.2-0.8 %% for T +17-30 %%; at 5 %%\n"
		"                        F = 0.2 lowered them in 3 runs of 4; below, F only\n"
		"                        costs its T. The F planned at is a last CSV\n"
		"                        column repair_headroom when above 0\n");
}

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: isthmus-plan --sites FILE --links FILE [options]\n"
		"\n"
		"Plans rotating-clique synchronisation schedules for islands joined by a WAN:\n"
		"for each schedule and aggregation memory it finds the minimum round time T\n"
		"(a GLPK linear program over per-sender offsets and rates), the average\n"
		"disagreement lifetime A from survival curves, and the objective T*(A+1/2).\n"
		"\n"
		"Topology:\n"
		"  --sites FILE          CSV 'site,region[,city]'; island id = row order (max 64)\n"
		"  --links FILE          CSV 'a,b,one_way_ms,capacity_gbps[,source]', full "
		"duplex,\n"
		"                        capacity per direction; '#' lines are comments.\n"
		"                        Routing: see --routing.\n"
		"Model (sizes take K,M,G,T = 1000^k and Ki,Mi,Gi,Ti = 1024^k, e.g. 32G, 512Mi):\n"
		"  --payload-bytes SIZE  bytes each island sends per round (default 1G)\n"
		"  --memory-bytes LIST   aggregation memory per receiver edge; comma list sweeps,\n"
		"                        e.g. 0,1G,32G (default 0: streams must arrive aligned)\n"
		"  --access-gbps X       island<->edge access link, each direction (default 100)\n"
		"  --access-ms X         access link one-way latency (default 0)\n"
		"  --chunk-bytes SIZE    aggregation chunk; the last one is delivered after the\n"
		"                        last byte arrives (default 1Mi)\n"
		"  --routing MODE        capacity: each stream takes one of the 4 lowest-latency\n"
		"                        paths, chosen to spread load (kept only where the LP\n"
		"                        confirms it); shortest: lowest latency only\n"
		"                        (default capacity)\n"
		"  --replication MODE    network: multicast trees, a link carries a stream once;\n"
		"                        edge: unicast fan-out at the sender edge (default "
		"network).\n"
		"                        --out records it; isthmusd refuses the file unless\n"
		"                        its [wan] replication is the same\n"
		"  --dtype TYPE          element type of the job: fp32, bf16 or int32. Changes\n"
		"                        no figure: --payload-bytes is what crosses the links,\n"
		"                        elements x 2 for bf16 (isthmusd sizes the tensor by\n"
		"                        it); --out records it and isthmusd refuses the file\n"
		"                        unless its [isthmusd] dtype is the same or any\n"
		"                        (default: not recorded, not checked)\n"
		"  --max-round-ms X      rounds longer than X are infeasible (default: no limit)\n"
		"  --max-lps N           cutting-plane LPs per round before the round is given\n"
		"                        up with a warning (default 400)\n"
		"  --threads N           rounds solved in parallel, 1..16; the output does not\n"
		"                        depend on it (default: one per online CPU)\n");
	usage_loss(f);
	fprintf(f,
		"Schedules:\n"
		"  --schedule NAME|all   all-to-all, regional, pairs, triangles, tree, search,\n"
		"                        or a comma list; all = every one of them but tree\n"
		"                        (default all).\n"
		"                        tree: an exact sum every round (A = 1) up and down 1-8\n"
		"                        spanning trees of the edges. Named only: isthmusd meets\n"
		"                        its T on a clean WAN but does not repair a lost partial\n"
		"                        sum per hop; --trees puts it in all and search\n"
		"  --trees               weigh the tree family in all and in search\n"
		"  --search-iters N      annealing steps of 'search' per memory value; the\n"
		"                        temperature follows them, so --seed fixes the result\n"
		"                        (default 4000)\n"
		"  --time-budget S       wall-clock budget of the searches, counted from the\n"
		"                        command's start (default 40: on 64 sites and 2 loaded\n"
		"                        cores search then took 37 s, all 41 s). It bounds\n"
		"                        search only: other families are always planned in\n"
		"                        full (64 sites: at most about 11 s each), also when\n"
		"                        listed after a search or at a later memory value, and\n"
		"                        each row's schedule is solved once more in full. Each\n"
		"                        search gets an equal share of what is left of 7/8 of\n"
		"                        the budget when it starts.\n"
		"                        Within it the seed families are solved cheapest\n"
		"                        first: one that would not finish in the time left is\n"
		"                        skipped, one still running at the end is dropped, and\n"
		"                        the annealing gets what remains, less the time to\n"
		"                        solve its result again (a step's LPs may still run\n"
		"                        to the share's end). The previous memory value's best\n"
		"                        (feasible with more memory) is weighed first and in\n"
		"                        full. What the budget cut is a warning on stderr\n"
		"                        (even with --quiet), as the result then depends on\n"
		"                        the machine's speed; a search left no time and no\n"
		"                        previous best is a row 'time budget: ...' (a sweep of\n"
		"                        memory values at 64 sites wants a larger budget)\n"
		"  --search-seconds S    also bound each search (seeds included) to S seconds\n"
		"                        (default: only --time-budget)\n"
		"  --seed N              search seed, 0..4294967295 (default 1)\n"
		"Synchronous baseline:\n"
		"  --compute-ms X        compute time per training step; 0 = the winner's T, i.e.\n"
		"                        compute sized to hide the rotating schedule's traffic\n"
		"                        (default 0)\n"
		"Output:\n"
		"  --format table|csv    table for people (winner marked '*', infeasible ones\n"
		"                        with their binding constraint) or CSV (default table).\n"
		"                        CSV columns: schedule,memory_bytes,feasible,round_ms,\n"
		"                        A_flood,A_avg,objective_ms,binding,staleness_ms,rounds,\n"
		"                        allreduce_ms,allreduce_idle,speedup_vs_allreduce,\n"
		"                        sync_a2a_ms,speedup_vs_sync_a2a,ring_allreduce_ms,\n"
		"                        rd_allreduce_ms (allreduce = the better of ring and\n"
		"                        recursive doubling); infeasible rows have feasible=0\n"
		"                        and empty numbers; regional has A_flood=inf.\n"
		"  --out FILE            write the overall winner as a schedule file for isthmusd\n"
		"                        (doc/schedule-file.md); with one --schedule NAME and\n"
		"                        one memory value, that schedule even if it never\n"
		"                        mixes (regional)\n"
		"  --epoch-ns N          epoch written to --out (default: 'runtime', given to\n"
		"                        isthmusd when it starts)\n"
		"  --plot DIR            gnuplot PNGs: survival curves, arrival timeline and\n"
		"                        memory occupancy of each memory value's winner\n"
		"  --quiet               no progress on stderr\n"
		"  --help                this text\n"
		"  --version             print the version on one line and exit\n"
		"\n");
	usage_questions(f);
}

/* The second half of --help: the questions it answers, exit codes, an example. */
static void
usage_questions(FILE *f)
{
	fprintf(f,
		"Questions this answers:\n"
		"  Which schedule?       the row marked '*' (lowest T*(A+1/2)) per memory value.\n"
		"  What round time?      round_ms: last byte aggregated and delivered to every\n"
		"                        receiver, under link, access and memory limits.\n"
		"  How much memory?      sweep --memory-bytes 0,1G,4G,16G,32G and read where the\n"
		"                        winner changes; 'memory: ...' names a clique whose\n"
		"                        arrivals cannot be aligned with that little memory.\n"
		"  Why is it slow?       the binding column names the constraint with the largest\n"
		"                        dual: capacity A->B, memory @X, access, or latency.\n"
		"  Regional?             never mixes globally: A_flood = inf, no objective.\n"
		"  How long?             about --time-budget (default 40 s) if search is listed\n"
		"                        last at one memory value; more by the families planned\n"
		"                        after a search. The search gives way; stderr says what\n"
		"                        it left out.\n"
		"  Exact sum each step?  tree (A = 1); its 'reduction trees' line sits by the "
		"ring's.\n"
		"  Versus all-reduce?    the baseline lines give ring all-reduce (and its ring\n"
		"                        order) and recursive doubling per step, GPU idle\n"
		"                        fraction and the throughput ratio against the better.\n"
		"\n"
		"Exit status: 0 results printed; 1 usage error (unknown option, missing\n"
		"argument); 2 bad input: a topology error (file:line: reason on stderr) or a\n"
		"bad option value; 3 no schedule was feasible; 4 --out/--plot failed;\n"
		"5 the LP solver failed, a round hit the cutting-plane cap (a warning per\n"
		"round on stderr), or the final check of the schedule to write failed.\n"
		"\n"
		"Example:\n"
		"  isthmus-plan --sites conf/topologies/nine-city-sites.csv \\\n"
		"    --links conf/topologies/nine-city-links.csv --payload-bytes 5G \\\n"
		"    --memory-bytes 0,32G --out nine.sched --plot plots/\n");
}

static void
progress(const char *what, double el, long evals, double best, void *arg)
{
	const char *m = arg;

	fprintf(stderr,
		"isthmus-plan: search (M=%s): %.1f s, %ld round LPs, best T*(A+1/2) = %.3f "
		"ms%s%s\n",
		m, el, evals, best, strcmp(what, "annealing") ? ": " : "",
		strcmp(what, "annealing") ? what : "");
}

static int
is_family(const char *s)
{
	int i;

	for (i = 0; i < NFAM; i++)
		if (strcmp(s, families[i]) == 0)
			return 1;
	return 0;
}

#define CLI_GO -1 /* parse_args(): plan; any other value is the exit status */

static int
opt_payload(struct cli *c, const char *arg)
{
	if (size_arg(arg, &c->prm.payload_bytes) < 0 || c->prm.payload_bytes < 1) {
		fprintf(stderr,
			"isthmus-plan: --payload-bytes: bad size '%s' (at least 1 B, below 1e15 "
			"B)\n",
			arg);
		return EXIT_INPUT;
	}
	if (c->prm.payload_bytes >= PAYLOAD_MAX) {
		fprintf(stderr,
			"isthmus-plan: --payload-bytes: %s is %.3g B, beyond the model's range "
			"(below 1e15 B: one round would last hours and the LP's durations lose "
			"their precision)\n",
			arg, c->prm.payload_bytes);
		return EXIT_INPUT;
	}
	return 0;
}

/* --access-gbps, --access-ms, --max-round-ms, --search-seconds, --time-budget, --compute-ms */
static int
opt_number(struct cli *c, int opt, const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || *end || !isfinite(v) || v < 0 || ((opt == 'a' || opt == 'B') && v == 0)) {
		fprintf(stderr, "isthmus-plan: --%s: bad number '%s' (a decimal %s 0)\n",
			opt == 'a'           ? "access-gbps"
				: opt == 'A' ? "access-ms"
				: opt == 'x' ? "max-round-ms"
				: opt == 'z' ? "search-seconds"
				: opt == 'B' ? "time-budget"
					     : "compute-ms",
			arg, opt == 'a' || opt == 'B' ? "above" : "at least");
		return EXIT_INPUT;
	}
	if (opt == 'a')
		c->prm.access_bps = v * 1e9;
	else if (opt == 'A')
		c->prm.access_ms = v;
	else if (opt == 'x')
		c->prm.max_round_ms = v;
	else if (opt == 'z')
		c->search_s = v;
	else if (opt == 'B')
		c->budget_s = v;
	else
		c->compute_ms = v;
	return 0;
}

/*
 * --max-lps, --threads: whole numbers read as decimals (strtod), as they
 * always were, so that "4.0" still reads as 4.
 */
static int
opt_whole(const char *name, const char *arg, int max, int *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || *end || end == arg || v < 1 || v > max || v != floor(v)) {
		fprintf(stderr, "isthmus-plan: --%s: an integer 1..%d, not '%s'\n", name, max, arg);
		return EXIT_INPUT;
	}
	*out = (int)v;
	return 0;
}

/* A decimal (digits, '.', an exponent: no hex, inf, nan or '%'), or NAN. */
static double
parse_decimal(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || *end || end == arg || strspn(arg, "0123456789.eE+-") != strlen(arg))
		return NAN;
	return v + 0.0; /* -0 is 0 */
}

static int
opt_headroom(struct cli *c, const char *arg)
{
	double v = parse_decimal(arg);

	if (!(v >= 0 && v < ISTH_PLAN_MAX_HEADROOM)) {
		fprintf(stderr,
			"isthmus-plan: --repair-headroom: a share of each WAN link's capacity, 0 "
			"<= F < %g, not '%s'\n",
			ISTH_PLAN_MAX_HEADROOM, arg);
		return EXIT_INPUT;
	}
	c->prm.repair_headroom = v;
	return 0;
}

/* --expected-loss: a fraction 0..ISTH_PLAN_MAX_LOSS (not a percentage) */
static int
opt_loss(struct cli *c, const char *arg)
{
	double v = parse_decimal(arg);

	if (!(v >= 0 && v <= ISTH_PLAN_MAX_LOSS)) {
		fprintf(stderr,
			"isthmus-plan: --expected-loss: the share of frames a WAN link loses, 0 "
			"<= P <= %g (0.01 is 1 %%), not '%s'\n",
			ISTH_PLAN_MAX_LOSS, arg);
		return EXIT_INPUT;
	}
	c->prm.expected_loss = v;
	return 0;
}

/* --seed, --search-iters, --epoch-ns: decimal integers (lib/text) */
static int
opt_count(struct cli *c, int opt, const char *arg)
{
	uint64_t u;

	if (opt == 'e') {
		if (isth_text_parse_u64_range(arg, 0, 4294967295ULL, &u) < 0) {
			fprintf(stderr,
				"isthmus-plan: --seed: an integer 0..4294967295, not '%s'\n", arg);
			return EXIT_INPUT;
		}
		c->seed = (unsigned)u;
	} else if (opt == 'I') {
		if (isth_text_parse_u64_range(arg, 1, 100000000ULL, &u) < 0) {
			fprintf(stderr,
				"isthmus-plan: --search-iters: an integer 1..100000000, not '%s'\n",
				arg);
			return EXIT_INPUT;
		}
		c->search_iters = (long)u;
	} else {
		if (isth_text_parse_u64_range(arg, 1, UINT64_MAX, &u) < 0) {
			fprintf(stderr, "isthmus-plan: --epoch-ns: bad value '%s'\n", arg);
			return EXIT_INPUT;
		}
		c->epoch = u;
	}
	return 0;
}

/* One of two words (@p a: 0, @p b: 1) into *out. */
static int
opt_choice(const char *name, const char *arg, const char *a, const char *b, int *out)
{
	if (strcmp(arg, a) == 0)
		*out = 0;
	else if (strcmp(arg, b) == 0)
		*out = 1;
	else {
		fprintf(stderr, "isthmus-plan: --%s: '%s' or '%s', not '%s'\n", name, a, b, arg);
		return EXIT_INPUT;
	}
	return 0;
}

/* One option into @p c; 0 or the exit status to end with (--help sets *help). */
static int
parse_opt(struct cli *c, int opt, char *arg, int *help)
{
	int v, rc;

	switch (opt) {
	case 's':
		c->sites = arg;
		return 0;
	case 'l':
		c->links = arg;
		return 0;
	case 'P':
		return opt_payload(c, arg);
	case 'M':
		c->memlist = arg;
		return 0;
	case 'a':
	case 'A':
	case 'x':
	case 'z':
	case 'B':
	case 'C':
		return opt_number(c, opt, arg);
	case 'c':
		if (size_arg(arg, &c->prm.chunk_bytes) < 0) {
			fprintf(stderr, "isthmus-plan: --chunk-bytes: bad size '%s'\n", arg);
			return EXIT_INPUT;
		}
		return 0;
	case 'r':
		rc = opt_choice("replication", arg, "network", "edge", &v);
		if (rc == 0)
			c->prm.repl = v ? ISTH_PLAN_REPL_EDGE : ISTH_PLAN_REPL_NETWORK;
		return rc;
	case 'D':
		if (!isth_sched_dtype_known(arg)) {
			fprintf(stderr, "isthmus-plan: --dtype: fp32, bf16 or int32, not '%s'\n",
				arg);
			return EXIT_INPUT;
		}
		c->dtype = arg;
		return 0;
	case 'R':
		rc = opt_choice("routing", arg, "capacity", "shortest", &v);
		if (rc == 0)
			c->prm.routing =
				v ? ISTH_PLAN_ROUTING_SHORTEST : ISTH_PLAN_ROUTING_CAPACITY;
		return rc;
	case 'f':
		rc = opt_choice("format", arg, "table", "csv", &v);
		if (rc == 0)
			c->csv = v;
		return rc;
	case 'L':
		return opt_whole("max-lps", arg, 1000000, &c->prm.max_lps);
	case 'j':
		return opt_whole("threads", arg, ISTH_PLAN_MAX_THREADS, &c->prm.threads);
	case 'H':
		return opt_headroom(c, arg);
	case 'X':
		return opt_loss(c, arg);
	case 'S':
		c->schedlist = arg;
		return 0;
	case 'e':
	case 'I':
	case 'E':
		return opt_count(c, opt, arg);
	case 'o':
		c->out = arg;
		return 0;
	case 'p':
		c->plotdir = arg;
		return 0;
	case 'q':
		c->quiet = 1;
		return 0;
	case 'T':
		c->prm.search_trees = 1;
		return 0;
	case 'h':
		*help = 1;
		return 0;
	default:
		fprintf(stderr, "Try 'isthmus-plan --help'.\n");
		return EXIT_USAGE;
	}
}

/* --memory-bytes: a comma list of sizes; none given is M = 0. */
static int
parse_mems(struct cli *c)
{
	char *save = NULL, *tok;

	if (c->memlist == NULL) {
		c->mems[c->nmem++] = 0;
		return 0;
	}
	for (tok = strtok_r(c->memlist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (c->nmem == 64 || size_arg(tok, &c->mems[c->nmem]) < 0) {
			fprintf(stderr, "isthmus-plan: --memory-bytes: bad size '%s'\n", tok);
			return EXIT_INPUT;
		}
		c->nmem++;
	}
	if (c->nmem == 0) {
		fprintf(stderr, "isthmus-plan: --memory-bytes: empty list\n");
		return EXIT_INPUT;
	}
	return 0;
}

/* --schedule: a comma list of families, or all of them. */
static int
parse_scheds(struct cli *c)
{
	char *save = NULL, *tok;
	int i;

	if (c->schedlist == NULL || strcmp(c->schedlist, "all") == 0) {
		for (i = 0; i < NFAM; i++)
			if (c->prm.search_trees || strcmp(families[i], "tree") != 0)
				c->scheds[c->nsched++] = families[i];
		return 0;
	}
	for (tok = strtok_r(c->schedlist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!is_family(tok) || c->nsched == 16) {
			fprintf(stderr,
				"isthmus-plan: --schedule: unknown '%s' (all-to-all, regional, "
				"pairs, triangles, tree, search, all)\n",
				tok);
			return EXIT_INPUT;
		}
		c->scheds[c->nsched++] = tok;
	}
	if (c->nsched == 0) {
		fprintf(stderr,
			"isthmus-plan: --schedule: empty list (all-to-all, regional, pairs, "
			"triangles, tree, search, all)\n");
		return EXIT_INPUT;
	}
	return 0;
}

/* The command line into @p c; CLI_GO, or the exit status to end with. */
static int
parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option opts[] = {
		{"sites", required_argument, NULL, 's'},
		{"links", required_argument, NULL, 'l'},
		{"payload-bytes", required_argument, NULL, 'P'},
		{"memory-bytes", required_argument, NULL, 'M'},
		{"access-gbps", required_argument, NULL, 'a'},
		{"access-ms", required_argument, NULL, 'A'},
		{"chunk-bytes", required_argument, NULL, 'c'},
		{"replication", required_argument, NULL, 'r'},
		{"dtype", required_argument, NULL, 'D'},
		{"routing", required_argument, NULL, 'R'},
		{"max-round-ms", required_argument, NULL, 'x'},
		{"max-lps", required_argument, NULL, 'L'},
		{"threads", required_argument, NULL, 'j'},
		{"repair-headroom", required_argument, NULL, 'H'},
		{"expected-loss", required_argument, NULL, 'X'},
		{"schedule", required_argument, NULL, 'S'},
		{"search-seconds", required_argument, NULL, 'z'},
		{"time-budget", required_argument, NULL, 'B'},
		{"seed", required_argument, NULL, 'e'},
		{"search-iters", required_argument, NULL, 'I'},
		{"compute-ms", required_argument, NULL, 'C'},
		{"format", required_argument, NULL, 'f'},
		{"out", required_argument, NULL, 'o'},
		{"epoch-ns", required_argument, NULL, 'E'},
		{"plot", required_argument, NULL, 'p'},
		{"quiet", no_argument, NULL, 'q'},
		{"trees", no_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt, rc, help = 0;

	memset(c, 0, sizeof(*c));
	isth_plan_params_default(&c->prm);
	/* a realistic WAN loses some frames: plan room for their repairs
	 * unless told otherwise (--expected-loss 0: none) */
	c->prm.expected_loss = PLAN_APP_EXPECTED_LOSS;
	c->search_s = INFINITY;
	c->budget_s = 40;
	c->seed = 1;
	c->search_iters = ISTH_PLAN_SEARCH_ITERS;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		rc = parse_opt(c, opt, optarg, &help);
		if (rc != 0)
			return rc;
		if (help) {
			usage(stdout);
			return 0;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "isthmus-plan: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (c->sites == NULL || c->links == NULL) {
		fprintf(stderr, "isthmus-plan: --sites and --links are required (see --help)\n");
		return EXIT_USAGE;
	}
	rc = parse_mems(c);
	if (rc == 0)
		rc = parse_scheds(c);
	return rc ? rc : CLI_GO;
}

/*
 * Seconds the search of this row may take: an equal share, among the
 * @p searches_left searches still to run, of what is left of the
 * command's --time-budget less 1/8 of it (kept for what follows a search:
 * solving its result again, A, the baselines, the output), and at most
 * --search-seconds. 0 when nothing is left.
 */
static double
search_share(const struct cli *c, int searches_left)
{
	double left = c->budget_s * 7 / 8 - (double)(isth_clock_mono_ns() - c->t0_ns) * 1e-9;

	left /= searches_left > 0 ? searches_left : 1;
	return fmax(0, fmin(left, c->search_s));
}

/* The warnings a search's budget earns: they say why its result depends on the machine. */
static void
search_warn(
	const struct cli *c, const char *mb, double sec, const struct isth_plan_search_report *rep)
{
	int f;

	for (f = 0; f < rep->nseeds; f++) {
		if (rep->seed[f].state == ISTH_PLAN_SEED_SKIPPED)
			fprintf(stderr,
				"isthmus-plan: warning: search (M=%s): seed %s skipped: what was "
				"left of its %.1f s would not cover it (at the pace of the seeds "
				"before it)\n",
				mb, rep->seed[f].name, sec);
		else if (rep->seed[f].state == ISTH_PLAN_SEED_CUT)
			fprintf(stderr,
				"isthmus-plan: warning: search (M=%s): seed %s dropped: still "
				"solving when its %.1f s ran out (after %.1f s on it)\n",
				mb, rep->seed[f].name, sec, rep->seed[f].seconds);
	}
	if (rep->cut_short)
		fprintf(stderr,
			"isthmus-plan: warning: search (M=%s) stopped by its time (%.1f s: "
			"--time-budget %g%s) after %.1f s of seeds, before its %ld iterations: its "
			"result depends on this machine's speed\n",
			mb, sec, c->budget_s, isfinite(c->search_s) ? ", --search-seconds" : "",
			rep->seeds_s, c->search_iters);
}

/*
 * Row @p R's schedule: a family, or the search (warm-started from the last
 * one found) in its share of the time budget.
 */
static void
make_sched(const struct isth_topo *topo, const struct cli *c, const struct isth_plan_params *p,
	struct row *R, const struct isth_plan_cliques **prev_search, int searches_left)
{
	struct isth_plan_search_report rep;
	char mb[32];
	double sec;
	int err;

	if (strcmp(R->name, "tree") == 0) {
		/* its trees depend on the payload, memory and access: plan them for p */
		R->s = isth_plan_tree(topo, p);
		return;
	}
	if (strcmp(R->name, "search") != 0) {
		R->s = isth_plan_cliques_family(topo, R->name);
		return;
	}
	fmt_bytes(R->memory, mb, sizeof(mb));
	sec = search_share(c, searches_left);
	if (!c->quiet)
		fprintf(stderr,
			"isthmus-plan: search (M=%s): %.1f s of the time budget: seed families "
			"first, cheapest first, then the annealing\n",
			mb, sec);
	/* the best found with less memory stays feasible with more */
	R->s = isth_plan_search(topo, p, *prev_search, c->search_iters, sec, c->seed, &rep,
		c->quiet ? NULL : progress, mb);
	err = errno; /* plan_row() reads why it failed; the warnings' stdio may change errno */
	if (R->s)
		*prev_search = R->s;
	search_warn(c, mb, sec, &rep);
	errno = err;
}

/* A row whose LP hit the cutting-plane cap: a warning per round, never a winner. */
static void
mark_untrusted(struct row *R)
{
	char mb[32];
	int r;

	fmt_bytes(R->memory, mb, sizeof(mb));
	for (r = 0; r < isth_plan_cliques_nrounds(R->s); r++)
		if (isth_plan_result_warning(R->res, r)[0])
			fprintf(stderr, "isthmus-plan: warning: %s M=%s round %d: %s\n", R->name,
				mb, r, isth_plan_result_warning(R->res, r));
	R->untrusted = 1;
	snprintf(R->binding, sizeof(R->binding),
		"UNTRUSTED: cut cap hit in %d round(s), see warnings",
		isth_plan_result_nwarnings(R->res));
}

/* Plan row @p R (name and memory set): its schedule, LP and figures; 0 or EXIT_SOLVER. */
static int
plan_row(const struct isth_topo *topo, const struct cli *c, const struct isth_plan_params *p,
	struct row *R, const struct isth_plan_cliques **prev_search, int searches_left)
{
	int ret;

	make_sched(topo, c, p, R, prev_search, searches_left);
	if (R->s == NULL) {
		R->feasible = 0;
		snprintf(R->binding, sizeof(R->binding), "%s",
			errno == ENOENT && strcmp(R->name, "tree") == 0
				? "memory: no tree set fits this memory (arrivals cannot align)"
				: errno == ENOENT ? "search found nothing feasible"
				: errno == ETIME
				? "time budget: spent before search found a feasible "
				  "schedule"
				: errno == EIO ? "solver error"
					       : "not defined for this topology");
		return errno == EIO ? EXIT_SOLVER : 0;
	}
	ret = isth_plan_solve(topo, R->s, p, &R->res);
	if (ret < 0) {
		const char *why =
			ret == -ETIMEDOUT ? "GLPK hit its iteration or time limit" : strerror(-ret);

		fprintf(stderr, "isthmus-plan: %s: LP failed: %s\n", R->name, why);
		snprintf(R->binding, sizeof(R->binding), "solver error: %s", why);
		return EXIT_SOLVER;
	}
	R->feasible = isth_plan_result_feasible(R->res);
	R->T = isth_plan_result_T(R->res);
	R->Af = isth_plan_A(R->s, ISTH_PLAN_SURV_FLOOD);
	R->Aa = isth_plan_A(R->s, ISTH_PLAN_SURV_AVG);
	R->obj = R->feasible ? R->T * (R->Af + 0.5) : NAN;
	snprintf(R->binding, sizeof(R->binding), "%s", isth_plan_result_binding(R->res));
	if (isth_plan_result_nwarnings(R->res) > 0) {
		mark_untrusted(R);
		return EXIT_SOLVER;
	}
	return 0;
}

/* Every schedule at every memory value, each memory's winner and the overall one. */
static void
plan_all(const struct isth_topo *topo, const struct cli *c, struct plan_run *run)
{
	const struct isth_plan_cliques *prev_search = NULL;
	int m, k, *w, searches_left = 0;

	for (k = 0; k < c->nsched; k++)
		searches_left += strcmp(c->scheds[k], "search") == 0 ? c->nmem : 0;
	run->overall = -1;
	for (m = 0; m < c->nmem; m++) {
		struct isth_plan_params p = c->prm;

		p.memory_bytes = c->mems[m];
		w = &run->winners[m];
		*w = -1;
		for (k = 0; k < c->nsched; k++) {
			struct row *R = &run->rows[run->nrows];
			uint64_t t1 = isth_clock_mono_ns();
			int rc;
			double el;

			R->name = c->scheds[k];
			R->memory = c->mems[m];
			rc = plan_row(topo, c, &p, R, &prev_search, searches_left);
			searches_left -= strcmp(R->name, "search") == 0;
			el = (double)(isth_clock_mono_ns() - t1) * 1e-9;
			if (!c->quiet && el >= 1) { /* long work says where the time went */
				char mb[32];

				fmt_bytes(R->memory, mb, sizeof(mb));
				fprintf(stderr, "isthmus-plan: %s (M=%s) planned in %.1f s\n",
					R->name, mb, el);
			}
			if (rc)
				run->rc = rc;
			if (R->feasible && !R->untrusted && isfinite(R->obj) &&
				(*w < 0 || R->obj < run->rows[*w].obj))
				*w = run->nrows;
			run->nrows++;
		}
		if (*w >= 0 &&
			(run->overall < 0 || run->rows[*w].obj < run->rows[run->overall].obj))
			run->overall = *w;
	}
}

/* --out: the chosen row as a schedule file, through lib/sched, once. */
static int
write_sched(const char *path, const struct isth_topo *t, const struct isth_plan_params *p,
	const struct row *w, uint64_t epoch, const char *dtype, char *err, size_t errlen)
{
	char why[400];
	struct isth_sched *S;
	int ret;

	S = isth_plan_result_sched(t, w->s, p, w->res, epoch, why, sizeof(why));
	if (S == NULL) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, why);
		return ret;
	}
	/* the replication is recorded by lib/plan; the element type only the
	 * command line knows (validated when parsed) */
	isth_sched_set_dtype(S, dtype);
	ret = isth_sched_save(S, path, err, errlen);
	isth_sched_free(S);
	return ret;
}

/*
 * --out: the overall winner, or one schedule at one memory asked for by
 * name (e.g. regional, which has no objective) if it is feasible at all.
 * Returns the exit status @p rc becomes.
 */
static int
write_out(const struct isth_topo *topo, const struct cli *c, const struct plan_run *run, int pick,
	int rc)
{
	const struct row *P = pick >= 0 ? &run->rows[pick] : NULL;
	struct isth_plan_params pp = c->prm;
	char err[512];

	if (P == NULL) {
		fprintf(stderr, "isthmus-plan: --out: no feasible mixing schedule to write\n");
		return EXIT_OUTPUT;
	}
	pp.memory_bytes = P->memory;
	if (P->untrusted) {
		fprintf(stderr,
			"isthmus-plan: --out: %s hit the cutting-plane cap; %s not written\n",
			P->name, c->out);
		return EXIT_SOLVER;
	}
	if (isth_plan_check(topo, P->s, &pp, P->res, err, sizeof(err)) < 0) {
		/* never write a schedule the edges could not keep */
		fprintf(stderr,
			"isthmus-plan: --out: %s (M=%.0f B) fails the final check: %s; %s not "
			"written\n",
			P->name, P->memory, err, c->out);
		return EXIT_SOLVER;
	}
	if (write_sched(c->out, topo, &pp, P, c->epoch, c->dtype, err, sizeof(err)) < 0) {
		fprintf(stderr, "isthmus-plan: --out: %s\n", err);
		return EXIT_OUTPUT;
	}
	if (!c->quiet || pick != run->overall)
		fprintf(stderr, "isthmus-plan: wrote %s (%s%s)\n", c->out, P->name,
			pick != run->overall ? "; it never mixes globally" : "");
	return rc;
}

int
main(int argc, char **argv)
{
	struct plan_run run = {0};
	struct baseline b;
	struct isth_topo *topo;
	struct cli c;
	char err[512];
	int i, pick;

	if (isth_version_args("isthmus-plan", argc, argv))
		return 0;
	i = parse_args(argc, argv, &c);
	c.t0_ns = isth_clock_mono_ns(); /* the time budget counts from here */
	if (i != CLI_GO)
		return i;
	topo = isth_topo_load(c.sites, c.links, err, sizeof(err));
	if (topo == NULL) {
		fprintf(stderr, "isthmus-plan: %s\n", err);
		return EXIT_TOPO;
	}
	run.rows = calloc((size_t)c.nmem * c.nsched, sizeof(*run.rows));
	if (run.rows == NULL) {
		fprintf(stderr, "isthmus-plan: out of memory\n");
		return EXIT_SOLVER;
	}
	plan_all(topo, &c, &run);
	report_baseline(topo, &c, &run, &b);
	if (c.csv)
		report_csv(&c, &run, &b);
	else
		report_table(topo, &c, &run, &b);

	pick = run.overall;
	if (pick < 0 && run.nrows == 1 && run.rows[0].feasible)
		pick = 0;
	if (pick < 0 && run.rc == 0)
		run.rc = EXIT_NONE;
	if (c.out)
		run.rc = write_out(topo, &c, &run, pick, run.rc);
	if (c.plotdir) {
		if (plot_all(c.plotdir, topo, &c.prm, run.rows, run.nrows, run.winners, c.nmem, err,
			    sizeof(err)) < 0) {
			fprintf(stderr, "isthmus-plan: --plot: %s\n", err);
			run.rc = EXIT_OUTPUT;
		} else if (!c.quiet) {
			fprintf(stderr, "isthmus-plan: plots in %s\n", c.plotdir);
		}
	}
	for (i = 0; i < run.nrows; i++) {
		isth_plan_cliques_free(run.rows[i].s);
		isth_plan_result_free(run.rows[i].res);
	}
	free(run.rows);
	isth_topo_free(topo);
	return run.rc;
}
