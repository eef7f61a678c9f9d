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

#include "isth_plan.h"
#include "isth_sched.h"
#include "isth_text.h"
#include "plan_app.h"

#define EXIT_USAGE 1
#define EXIT_TOPO 2
#define EXIT_INPUT 2 /* a bad option value: the same class as a bad topology file */
#define PAYLOAD_MAX 1e15 /* bytes: the model's range (see doc/planner.md) */
#define EXIT_NONE 3
#define EXIT_OUTPUT 4
#define EXIT_SOLVER 5

static const char *families[] = {"all-to-all", "regional", "pairs", "triangles", "search"};
#define NFAM 5

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
		"network)\n"
		"  --max-round-ms X      rounds longer than X are infeasible (default: no limit)\n"
		"  --max-lps N           cutting-plane LPs per round before the round is given\n"
		"                        up with a warning (default 400)\n"
		"  --threads N           rounds solved in parallel, 1..16; the output does not\n"
		"                        depend on it (default: one per online CPU)\n"
		"  --repair-headroom F   plan every WAN link at (1-F) of its capacity, so a\n"
		"                        share F stays free for repairs and NACKs under loss\n"
		"                        (access links keep their full capacity); 0 <= F < 0.5\n"
		"                        (default 0). Cost: a round bound by link capacity\n"
		"                        grows by up to 1/(1-F) (F = 0.2: +25 %%); a round\n"
		"                        bound by latency or access does not change.\n"
		"                        Measured on the testbed (doc/performance.md,\n"
		"                        section 9, session 14): at 10 %% random loss per\n"
		"                        link F = 0.2-0.3 (2p-3p) cut partial results from\n"
		"                        1.8-2.6 %% to 0.2-0.8 %% for T +17-30 %%; at 5 %%\n"
		"                        F = 0.2 lowered them in 3 runs of 4; below, F only\n"
		"                        costs its T\n"
		"Schedules:\n"
		"  --schedule NAME|all   all-to-all, regional, pairs, triangles, search, or a "
		"comma\n"
		"                        list; all = every one of them (default all)\n"
		"  --search-iters N      annealing steps of 'search' per memory value; the\n"
		"                        temperature follows them, so --seed fixes the result\n"
		"                        (default 4000)\n"
		"  --search-seconds S    wall-time bound of 'search' per memory value; a search\n"
		"                        it cuts short is reported on stderr, as its result\n"
		"                        then depends on the machine (default 60)\n"
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
		"\n"
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

static void
progress(double el, long evals, double best, void *arg)
{
	const char *m = arg;

	fprintf(stderr,
		"isthmus-plan: search (M=%s): %.1f s, %ld round LPs, best T*(A+1/2) = %.3f ms\n", m,
		el, evals, best);
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

/*
 * Record the repair headroom in a written schedule file: a comment line
 * after the magic (the format has no directive for planning parameters,
 * and a comment keeps every loader of version 1 and 2 reading it). The
 * rates and T in the file already are the ones planned at (1 - F).
 */
static int
note_headroom(const char *path, double F, char *err, size_t errlen)
{
	char *buf = NULL, *nl;
	long len;
	FILE *f;
	int ret = 0;

	f = fopen(path, "r");
	if (f == NULL || fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 ||
		fseek(f, 0, SEEK_SET) < 0 || (buf = malloc((size_t)len + 1)) == NULL ||
		fread(buf, 1, (size_t)len, f) != (size_t)len) {
		ret = errno ? -errno : -EIO;
		goto out;
	}
	fclose(f);
	f = NULL;
	buf[len] = '\0';
	nl = strchr(buf, '\n');
	if (nl == NULL) {
		ret = -EIO;
		goto out;
	}
	f = fopen(path, "w");
	if (f == NULL) {
		ret = -errno;
		goto out;
	}
	if (fwrite(buf, 1, (size_t)(nl + 1 - buf), f) != (size_t)(nl + 1 - buf) ||
		fprintf(f,
			"# repair-headroom %g: planned at %g of every WAN link's capacity "
			"(isthmus-plan --repair-headroom)\n",
			F, 1 - F) < 0 ||
		fwrite(nl + 1, 1, strlen(nl + 1), f) != strlen(nl + 1)) {
		ret = errno ? -errno : -EIO;
		goto out;
	}
	if (fclose(f) != 0) {
		f = NULL;
		ret = errno ? -errno : -EIO;
		goto out;
	}
	f = NULL;
out:
	if (f)
		fclose(f);
	free(buf);
	if (ret < 0)
		snprintf(err, errlen, "%s: cannot record the repair headroom: %s", path,
			strerror(-ret));
	return ret;
}

static int
write_sched(const char *path, const struct isth_topo *t, const struct isth_plan_params *p,
	const struct row *w, unsigned long long epoch, char *err, size_t errlen)
{
	const char *names[ISTH_PLAN_MAX_ISLANDS];
	int n = isth_topo_n(t), nr = isth_plan_sched_nrounds(w->s), r, i, c, ret;
	struct isth_sched *S;
	uint64_t Tns = (uint64_t)ceil(w->T * 1e6) + 1;

	for (i = 0; i < n; i++)
		names[i] = isth_topo_name(t, i);
	S = isth_sched_new(n, names, Tns, epoch, (uint64_t)llround(p->payload_bytes),
		(uint64_t)llround(p->chunk_bytes), (uint64_t)llround(w->memory), nr);
	if (S == NULL) {
		snprintf(err, errlen, "%s: cannot build schedule: %s", path, strerror(errno));
		return -errno;
	}
	/* each edge's peak aggregation memory over the cycle (fluid model,
	 * rounded up): isthmusd --check refuses an edge with less */
	for (i = 0; i < n; i++) {
		double pk = isth_plan_result_peak_memory(w->res, t, w->s, i);

		if (isfinite(pk))
			isth_sched_set_peak(S, i, (uint64_t)ceil(pk));
	}
	for (r = 0; r < nr; r++) {
		uint64_t cl[ISTH_PLAN_MAX_ISLANDS];
		int nc = isth_plan_sched_ncliques(w->s, r);

		for (c = 0; c < nc; c++)
			cl[c] = isth_plan_sched_clique(w->s, r, c);
		isth_sched_set_round(S, r, nc, cl);
		for (i = 0; i < n; i++) {
			double off = isth_plan_result_offset(w->res, r, i);
			double dur = isth_plan_result_duration(w->res, r, i);
			uint64_t rate;

			if (isnan(off))
				continue;
			/* round the rate down so the stream never outruns the plan */
			rate = (uint64_t)floor(8.0 * p->payload_bytes * 1000.0 / dur);
			isth_sched_set_sender(
				S, r, i, (uint64_t)llround(off * 1e6), 1, NULL, &rate);
			/* the path of each of its streams, as planned (version 2) */
			for (c = 0; c < n; c++) {
				int hops[ISTH_PLAN_MAX_ISLANDS + 1], nh;

				if (c == i || !(isth_plan_sched_clique_of(w->s, r, i) >> c & 1))
					continue;
				nh = isth_plan_result_route(
					w->res, t, r, i, c, hops, ISTH_PLAN_MAX_ISLANDS + 1);
				if (nh < 0 || isth_sched_set_route(S, r, i, c, hops, nh) < 0) {
					snprintf(err, errlen, "%s: cannot record route %d %d %d",
						path, r, i, c);
					isth_sched_free(S);
					return -EINVAL;
				}
			}
		}
	}
	ret = isth_sched_save(S, path, err, errlen);
	isth_sched_free(S);
	if (ret == 0 && p->repair_headroom > 0)
		ret = note_headroom(path, p->repair_headroom, err, errlen);
	return ret;
}

int
main(int argc, char **argv)
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
		{"routing", required_argument, NULL, 'R'},
		{"max-round-ms", required_argument, NULL, 'x'},
		{"max-lps", required_argument, NULL, 'L'},
		{"threads", required_argument, NULL, 'j'},
		{"repair-headroom", required_argument, NULL, 'H'},
		{"schedule", required_argument, NULL, 'S'},
		{"search-seconds", required_argument, NULL, 'z'},
		{"seed", required_argument, NULL, 'e'},
		{"search-iters", required_argument, NULL, 'I'},
		{"compute-ms", required_argument, NULL, 'C'},
		{"format", required_argument, NULL, 'f'},
		{"out", required_argument, NULL, 'o'},
		{"epoch-ns", required_argument, NULL, 'E'},
		{"plot", required_argument, NULL, 'p'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct isth_plan_params prm;
	const char *sites = NULL, *links = NULL, *out = NULL, *plotdir = NULL;
	char *memlist = NULL, *schedlist = NULL, *end;
	double mems[64], search_s = 60, compute_ms = 0, v;
	int nmem = 0, csv = 0, quiet = 0, opt, i, k, m, headroom;
	unsigned seed = 1;
	long search_iters = ISTH_PLAN_SEARCH_ITERS;
	unsigned long long epoch = 0;
	const char *scheds[16];
	int nsched = 0;
	char err[512];
	struct isth_topo *topo;
	struct row *rows;
	int nrows = 0, rc = 0, winners[64], overall = -1;
	double ring_ms, rd_ms, base_ms, C;
	int ring_order[ISTH_PLAN_MAX_ISLANDS], rd_order[ISTH_PLAN_MAX_ISLANDS];
	const char *base_name;
	const struct isth_plan_sched *prev_search = NULL;

	isth_plan_params_default(&prm);
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sites = optarg;
			break;
		case 'l':
			links = optarg;
			break;
		case 'P':
			if (size_arg(optarg, &prm.payload_bytes) < 0 || prm.payload_bytes < 1) {
				fprintf(stderr,
					"isthmus-plan: --payload-bytes: bad size '%s' (at least 1 "
					"B, below 1e15 B)\n",
					optarg);
				return EXIT_INPUT;
			}
			if (prm.payload_bytes >= PAYLOAD_MAX) {
				fprintf(stderr,
					"isthmus-plan: --payload-bytes: %s is %.3g B, beyond the "
					"model's "
					"range (below 1e15 B: one round would last hours and the "
					"LP's "
					"durations lose their precision)\n",
					optarg, prm.payload_bytes);
				return EXIT_INPUT;
			}
			break;
		case 'M':
			memlist = optarg;
			break;
		case 'a':
		case 'A':
		case 'x':
		case 'z':
		case 'C':
			errno = 0;
			v = strtod(optarg, &end);
			if (errno || *end || !isfinite(v) || v < 0 || (opt == 'a' && v == 0)) {
				fprintf(stderr, "isthmus-plan: bad number '%s'\n", optarg);
				return EXIT_INPUT;
			}
			if (opt == 'a')
				prm.access_bps = v * 1e9;
			else if (opt == 'A')
				prm.access_ms = v;
			else if (opt == 'x')
				prm.max_round_ms = v;
			else if (opt == 'z')
				search_s = v;
			else
				compute_ms = v;
			break;
		case 'c':
			if (size_arg(optarg, &prm.chunk_bytes) < 0) {
				fprintf(stderr, "isthmus-plan: --chunk-bytes: bad size '%s'\n",
					optarg);
				return EXIT_INPUT;
			}
			break;
		case 'r':
			if (strcmp(optarg, "network") == 0)
				prm.repl = ISTH_PLAN_REPL_NETWORK;
			else if (strcmp(optarg, "edge") == 0)
				prm.repl = ISTH_PLAN_REPL_EDGE;
			else {
				fprintf(stderr,
					"isthmus-plan: --replication: 'network' or 'edge', not "
					"'%s'\n",
					optarg);
				return EXIT_INPUT;
			}
			break;
		case 'L':
			errno = 0;
			v = strtod(optarg, &end);
			if (errno || *end || end == optarg || v < 1 || v > 1e6 || v != floor(v)) {
				fprintf(stderr,
					"isthmus-plan: --max-lps: an integer 1..1000000, not "
					"'%s'\n",
					optarg);
				return EXIT_INPUT;
			}
			prm.max_lps = (int)v;
			break;
		case 'j':
			errno = 0;
			v = strtod(optarg, &end);
			if (errno || *end || end == optarg || v < 1 || v > ISTH_PLAN_MAX_THREADS ||
				v != floor(v)) {
				fprintf(stderr,
					"isthmus-plan: --threads: an integer 1..%d, not '%s'\n",
					ISTH_PLAN_MAX_THREADS, optarg);
				return EXIT_INPUT;
			}
			prm.threads = (int)v;
			break;
		case 'H':
			errno = 0;
			v = strtod(optarg, &end);
			if (errno || *end || end == optarg ||
				!(v >= 0 && v < ISTH_PLAN_MAX_HEADROOM)) {
				fprintf(stderr,
					"isthmus-plan: --repair-headroom: a share of each WAN "
					"link's capacity, 0 <= F < %g, not '%s'\n",
					ISTH_PLAN_MAX_HEADROOM, optarg);
				return EXIT_INPUT;
			}
			prm.repair_headroom = v;
			break;
		case 'R':
			if (strcmp(optarg, "capacity") == 0)
				prm.routing = ISTH_PLAN_ROUTING_CAPACITY;
			else if (strcmp(optarg, "shortest") == 0)
				prm.routing = ISTH_PLAN_ROUTING_SHORTEST;
			else {
				fprintf(stderr,
					"isthmus-plan: --routing: 'capacity' or 'shortest', not "
					"'%s'\n",
					optarg);
				return EXIT_INPUT;
			}
			break;
		case 'S':
			schedlist = optarg;
			break;
		case 'e':
		case 'I': {
			unsigned long long u;

			errno = 0;
			u = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg || optarg[0] == '-' ||
				u > (opt == 'e' ? 4294967295ULL : 100000000ULL) ||
				(opt == 'I' && u == 0)) {
				fprintf(stderr, "isthmus-plan: --%s: %s, not '%s'\n",
					opt == 'e' ? "seed" : "search-iters",
					opt == 'e' ? "an integer 0..4294967295"
						   : "an integer 1..100000000",
					optarg);
				return EXIT_INPUT;
			}
			if (opt == 'e')
				seed = (unsigned)u;
			else
				search_iters = (long)u;
			break;
		}
		case 'E':
			errno = 0;
			epoch = strtoull(optarg, &end, 0);
			if (errno || *end || epoch == 0) {
				fprintf(stderr, "isthmus-plan: --epoch-ns: bad value '%s'\n",
					optarg);
				return EXIT_INPUT;
			}
			break;
		case 'f':
			if (strcmp(optarg, "csv") == 0)
				csv = 1;
			else if (strcmp(optarg, "table") == 0)
				csv = 0;
			else {
				fprintf(stderr,
					"isthmus-plan: --format: 'table' or 'csv', not '%s'\n",
					optarg);
				return EXIT_INPUT;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'p':
			plotdir = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'isthmus-plan --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "isthmus-plan: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (sites == NULL || links == NULL) {
		fprintf(stderr, "isthmus-plan: --sites and --links are required (see --help)\n");
		return EXIT_USAGE;
	}
	if (memlist == NULL) {
		mems[nmem++] = 0;
	} else {
		char *save = NULL, *tok;

		for (tok = strtok_r(memlist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (nmem == 64 || size_arg(tok, &mems[nmem]) < 0) {
				fprintf(stderr, "isthmus-plan: --memory-bytes: bad size '%s'\n",
					tok);
				return EXIT_INPUT;
			}
			nmem++;
		}
		if (nmem == 0) {
			fprintf(stderr, "isthmus-plan: --memory-bytes: empty list\n");
			return EXIT_INPUT;
		}
	}
	if (schedlist == NULL || strcmp(schedlist, "all") == 0) {
		for (i = 0; i < NFAM; i++)
			scheds[nsched++] = families[i];
	} else {
		char *save = NULL, *tok;

		for (tok = strtok_r(schedlist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!is_family(tok) || nsched == 16) {
				fprintf(stderr,
					"isthmus-plan: --schedule: unknown '%s' (all-to-all, "
					"regional, pairs, triangles, search, all)\n",
					tok);
				return EXIT_INPUT;
			}
			scheds[nsched++] = tok;
		}
		if (nsched == 0) {
			fprintf(stderr,
				"isthmus-plan: --schedule: empty list (all-to-all, regional, "
				"pairs, "
				"triangles, search, all)\n");
			return EXIT_INPUT;
		}
	}

	topo = isth_topo_load(sites, links, err, sizeof(err));
	if (topo == NULL) {
		fprintf(stderr, "isthmus-plan: %s\n", err);
		return EXIT_TOPO;
	}
	rows = calloc((size_t)nmem * nsched, sizeof(*rows));
	if (rows == NULL) {
		fprintf(stderr, "isthmus-plan: out of memory\n");
		return EXIT_SOLVER;
	}

	for (m = 0; m < nmem; m++) {
		struct isth_plan_params p = prm;

		p.memory_bytes = mems[m];
		winners[m] = -1;
		for (k = 0; k < nsched; k++) {
			struct row *R = &rows[nrows];
			int ret;

			R->name = scheds[k];
			R->memory = mems[m];
			if (strcmp(scheds[k], "search") == 0) {
				char mb[32];

				fmt_bytes(mems[m], mb, sizeof(mb));
				/* the best found with less memory stays feasible with more */
				int cut = 0;

				R->s = isth_plan_search(topo, &p, prev_search, search_iters,
					search_s, seed, &cut, quiet ? NULL : progress, mb);
				if (R->s)
					prev_search = R->s;
				if (cut)
					fprintf(stderr,
						"isthmus-plan: warning: search (M=%s) stopped by "
						"--search-seconds %g before its %ld iterations: "
						"its result "
						"depends on this machine's speed\n",
						mb, search_s, search_iters);
			} else {
				R->s = isth_plan_sched_family(topo, scheds[k]);
			}
			if (R->s == NULL) {
				R->feasible = 0;
				snprintf(R->binding, sizeof(R->binding), "%s",
					errno == ENOENT        ? "search found nothing feasible"
						: errno == EIO ? "solver error"
							       : "not defined for this topology");
				if (errno == EIO)
					rc = EXIT_SOLVER;
				nrows++;
				continue;
			}
			ret = isth_plan_solve(topo, R->s, &p, &R->res);
			if (ret < 0) {
				const char *why = ret == -ETIMEDOUT
					? "GLPK hit its iteration or time limit"
					: strerror(-ret);

				fprintf(stderr, "isthmus-plan: %s: LP failed: %s\n", scheds[k],
					why);
				snprintf(R->binding, sizeof(R->binding), "solver error: %s", why);
				rc = EXIT_SOLVER;
				nrows++;
				continue;
			}
			R->feasible = isth_plan_result_feasible(R->res);
			R->T = isth_plan_result_T(R->res);
			R->Af = isth_plan_A(R->s, ISTH_PLAN_SURV_FLOOD);
			R->Aa = isth_plan_A(R->s, ISTH_PLAN_SURV_AVG);
			R->obj = R->feasible ? R->T * (R->Af + 0.5) : NAN;
			snprintf(R->binding, sizeof(R->binding), "%s",
				isth_plan_result_binding(R->res));
			if (isth_plan_result_nwarnings(R->res) > 0) {
				char mb[32];
				int r;

				fmt_bytes(mems[m], mb, sizeof(mb));
				for (r = 0; r < isth_plan_sched_nrounds(R->s); r++)
					if (isth_plan_result_warning(R->res, r)[0])
						fprintf(stderr,
							"isthmus-plan: warning: %s M=%s round %d: "
							"%s\n",
							scheds[k], mb, r,
							isth_plan_result_warning(R->res, r));
				R->untrusted = 1;
				snprintf(R->binding, sizeof(R->binding),
					"UNTRUSTED: cut cap hit in %d round(s), see warnings",
					isth_plan_result_nwarnings(R->res));
				rc = EXIT_SOLVER;
			}
			if (R->feasible && !R->untrusted && isfinite(R->obj) &&
				(winners[m] < 0 || R->obj < rows[winners[m]].obj))
				winners[m] = nrows;
			nrows++;
		}
		if (winners[m] >= 0 && (overall < 0 || rows[winners[m]].obj < rows[overall].obj))
			overall = winners[m];
	}

	/* F = 0 prints exactly what it printed before the option */
	headroom = prm.repair_headroom > 0;
	ring_ms = isth_plan_ring_allreduce_ms(topo, &prm, ring_order);
	rd_ms = isth_plan_rd_allreduce_ms(topo, &prm, rd_order);
	/* every comparison is against the better synchronous all-reduce */
	base_ms = rd_ms >= 0 && rd_ms < ring_ms ? rd_ms : ring_ms;
	base_name = base_ms == ring_ms ? "ring" : "recursive doubling";
	C = compute_ms > 0 ? compute_ms : (overall >= 0 ? rows[overall].T : 0);

	if (csv) {
		printf("schedule,memory_bytes,feasible,round_ms,A_flood,A_avg,objective_ms,binding,"
		       "staleness_ms,rounds,allreduce_ms,allreduce_idle,speedup_vs_allreduce,sync_"
		       "a2a_ms,"
		       "speedup_vs_sync_a2a,ring_allreduce_ms,rd_allreduce_ms%s\n",
			headroom ? ",repair_headroom" : "");
		for (i = 0; i < nrows; i++) {
			struct row *R = &rows[i];
			double a2a = NAN;

			for (k = 0; k < nrows; k++)
				if (strcmp(rows[k].name, "all-to-all") == 0 &&
					rows[k].memory == R->memory && rows[k].feasible)
					a2a = rows[k].T;
			printf("%s,%.0f,%d,", R->name, R->memory, R->feasible);
			if (!R->feasible) {
				printf(",,,,\"%s\",,,%.3f,,,,,%.3f,%.3f", R->binding, base_ms,
					ring_ms, rd_ms);
				if (headroom)
					printf(",%g", prm.repair_headroom);
				printf("\n");
				continue;
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
			printf("%d,%.3f,%.4f,", isth_plan_sched_nrounds(R->s), base_ms,
				base_ms / (C + base_ms));
			if (isfinite(R->obj) && C > 0)
				printf("%.3f,", (C + base_ms) / fmax(C, R->T));
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
			printf("%.3f,%.3f", ring_ms, rd_ms);
			if (headroom)
				printf(",%g", prm.repair_headroom);
			printf("\n");
		}
	} else {
		char pb[32];

		fmt_bytes(prm.payload_bytes, pb, sizeof(pb));
		printf("topology: %d islands, %d regions, %d links; payload %sB/round, access %.4g "
		       "Gbit/s, "
		       "replication %s, routing %s",
			isth_topo_n(topo), isth_topo_nregions(topo), isth_topo_ndlinks(topo) / 2,
			pb, prm.access_bps / 1e9,
			prm.repl == ISTH_PLAN_REPL_EDGE ? "edge" : "network",
			prm.routing == ISTH_PLAN_ROUTING_SHORTEST ? "shortest" : "capacity");
		if (headroom)
			printf(";\nrepair headroom %g: every WAN link planned at %g of its "
			       "capacity",
				prm.repair_headroom, 1 - prm.repair_headroom);
		printf("\n\n");
		printf("  %-11s %8s %5s %10s %8s %8s %13s  %s\n", "schedule", "memory", "ok",
			"round_ms", "A_flood", "A_avg", "T(A+1/2)_ms",
			"binding constraint / reason");
		for (i = 0; i < nrows; i++) {
			struct row *R = &rows[i];
			char mb[32];
			int win = 0;

			for (m = 0; m < nmem; m++)
				win |= winners[m] == i;
			fmt_bytes(R->memory, mb, sizeof(mb));
			if (i > 0 && R->memory != rows[i - 1].memory)
				printf("\n");
			printf("%c %-11s %8s %5s ", win ? '*' : ' ', R->name, mb,
				R->feasible ? "yes" : "NO");
			if (!R->feasible) {
				printf("%10s %8s %8s %13s  %s\n", "-", "-", "-", "-", R->binding);
				continue;
			}
			if (isfinite(R->Af))
				printf("%10.1f %8.3f %8.3f %13.1f  %s\n", R->T, R->Af, R->Aa,
					R->obj, R->binding);
			else
				printf("%10.1f %8s %8s %13s  %s; never mixes globally (A = inf)\n",
					R->T, "inf", "inf", "-", R->binding);
		}
		printf("\n* = lowest T*(A_flood+1/2) at that memory");
		if (overall >= 0) {
			char mb[32];

			fmt_bytes(rows[overall].memory, mb, sizeof(mb));
			printf("; overall winner: %s with M=%s (T=%.1f ms, staleness T(A+1/2)=%.1f "
			       "ms)",
				rows[overall].name, mb, rows[overall].T, rows[overall].obj);
		}
		printf("\n\n");
		if (overall >= 0 && base_ms > 0) {
			int q, n = isth_topo_n(topo);

			printf("synchronous baseline (compute %.1f ms per step%s):\n", C,
				compute_ms > 0 ? "" : ", = winner's T");
			printf("  ring all-reduce (host-based, %d dependent steps, ring",
				2 * (n - 1));
			for (q = 0; q < n; q++)
				printf(" %s", isth_topo_name(topo, ring_order[q]));
			printf("): %.1f ms per step\n", ring_ms);
			printf("  recursive doubling (host-based, ranks on");
			for (q = 0; q < n; q++)
				printf(" %s", isth_topo_name(topo, rd_order[q]));
			printf("): %.1f ms per step\n", rd_ms);
			printf("  best synchronous all-reduce (%s): %.1f ms communication per "
			       "step, "
			       "GPU idle %.1f %%\n",
				base_name, base_ms, 100 * base_ms / (C + base_ms));
			for (m = 0; m < nmem; m++) {
				char mb[32];

				fmt_bytes(mems[m], mb, sizeof(mb));
				for (k = 0; k < nrows; k++)
					if (strcmp(rows[k].name, "all-to-all") == 0 &&
						rows[k].memory == mems[m]) {
						if (rows[k].feasible)
							printf("  all-to-all multicast + in-line "
							       "aggregation, M=%s: "
							       "%.1f ms per step, GPU idle %.1f "
							       "%%\n",
								mb, rows[k].T,
								100 * rows[k].T / (C + rows[k].T));
						else
							printf("  all-to-all multicast + in-line "
							       "aggregation, M=%s: "
							       "infeasible\n",
								mb);
					}
			}
			{
				const struct row *W = &rows[overall];
				double step = fmax(C, W->T);

				printf("  rotating %s (overlaps compute, staleness %.1f ms): step "
				       "%.1f ms, "
				       "GPU idle %.1f %%, throughput %.2fx %s all-reduce\n\n",
					W->name, W->obj, step, 100 * (step - C) / step,
					(C + base_ms) / step, base_name);
			}
		}
	}

	/* One schedule at one memory asked for by name (e.g. regional, which
	 * has no objective): --out writes it if it is feasible at all. */
	int pick = overall;

	if (pick < 0 && nrows == 1 && rows[0].feasible)
		pick = 0;
	if (pick < 0 && rc == 0)
		rc = EXIT_NONE;
	if (out) {
		struct isth_plan_params pp = prm;

		if (pick >= 0)
			pp.memory_bytes = rows[pick].memory;
		if (pick < 0) {
			fprintf(stderr,
				"isthmus-plan: --out: no feasible mixing schedule to write\n");
			rc = EXIT_OUTPUT;
		} else if (rows[pick].untrusted) {
			fprintf(stderr,
				"isthmus-plan: --out: %s hit the cutting-plane cap; %s not "
				"written\n",
				rows[pick].name, out);
			rc = EXIT_SOLVER;
		} else if (isth_plan_check(
				   topo, rows[pick].s, &pp, rows[pick].res, err, sizeof(err)) < 0) {
			/* never write a schedule the edges could not keep */
			fprintf(stderr,
				"isthmus-plan: --out: %s (M=%.0f B) fails the final check: %s; "
				"%s not written\n",
				rows[pick].name, rows[pick].memory, err, out);
			rc = EXIT_SOLVER;
		} else if (write_sched(out, topo, &prm, &rows[pick], epoch, err, sizeof(err)) < 0) {
			fprintf(stderr, "isthmus-plan: --out: %s\n", err);
			rc = EXIT_OUTPUT;
		} else if (!quiet || pick != overall) {
			fprintf(stderr, "isthmus-plan: wrote %s (%s%s)\n", out, rows[pick].name,
				pick != overall ? "; it never mixes globally" : "");
		}
	}
	if (plotdir) {
		if (plot_all(plotdir, topo, &prm, rows, nrows, winners, nmem, err, sizeof(err)) <
			0) {
			fprintf(stderr, "isthmus-plan: --plot: %s\n", err);
			rc = EXIT_OUTPUT;
		} else if (!quiet) {
			fprintf(stderr, "isthmus-plan: plots in %s\n", plotdir);
		}
	}
	for (i = 0; i < nrows; i++) {
		isth_plan_sched_free(rows[i].s);
		isth_plan_result_free(rows[i].res);
	}
	free(rows);
	isth_topo_free(topo);
	return rc;
}
