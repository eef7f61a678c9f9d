/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-wan: the WAN emulator's command line (doc/wan.md). Everything is
 * parsed and checked before the first port starts; the main lcore then
 * polls every site's port and advances the links until SIGINT or SIGTERM.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "isth_text.h"
#include "isth_sched.h"
#include "wan.h"

#define NB_RXD 1024
#define NB_TXD 1024

static volatile sig_atomic_t quit;
/* SIGHUP: read --epoch-file again (set by the handler, cleared by the loop) */
static volatile sig_atomic_t reread_epoch;

static void
on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void
on_hup(int sig)
{
	(void)sig;
	reread_epoch = 1;
}

/* CLOCK_REALTIME ns -> poll clock (TSC): now_tsc + (epoch - now); 0 if
 * the epoch lies before the TSC's own start. */
static uint64_t
epoch_to_tsc(uint64_t epoch_ns)
{
	struct timespec ts;
	uint64_t tsc_hz = rte_get_tsc_hz(), now_tsc, now_ns;

	clock_gettime(CLOCK_REALTIME, &ts);
	now_tsc = rte_rdtsc();
	now_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (epoch_ns >= now_ns)
		return now_tsc + (uint64_t)((double)(epoch_ns - now_ns) * 1e-9 * tsc_hz);
	if ((double)(now_ns - epoch_ns) * 1e-9 * tsc_hz < (double)now_tsc)
		return now_tsc - (uint64_t)((double)(now_ns - epoch_ns) * 1e-9 * tsc_hz);
	return 0;
}

/*
 * The epoch file (--epoch-file): one line, the epoch in CLOCK_REALTIME ns
 * (a '#' comment and blank lines allowed). @return 0 and *ns; -ENOENT if
 * the file does not exist; -EINVAL with "file:line: reason" in @p err.
 */
static int
read_epoch_file(const char *path, uint64_t *ns, char *err, size_t errlen)
{
	char *text, *line, *save = NULL;
	int ln = 0, rc = -EINVAL;
	bool found = false;

	if (access(path, F_OK) != 0 && errno == ENOENT)
		return -ENOENT;
	text = isth_text_read(path, 4096, NULL, err, errlen);
	if (text == NULL)
		return -EINVAL;
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long x;
		char *c = strchr(line, '#'), *end;

		ln++;
		if (c != NULL)
			*c = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		end = line + strlen(line);
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			*--end = '\0';
		if (*line == '\0')
			continue;
		if (found) {
			snprintf(err, errlen, "%s:%d: a second epoch (one line only)", path, ln);
			goto out;
		}
		errno = 0;
		x = strtoull(line, &end, 10);
		if (*line < '0' || *line > '9' || *end != '\0' || errno != 0 || x == 0) {
			snprintf(err, errlen,
				"%s:%d: '%s' is no epoch (CLOCK_REALTIME ns, a positive integer)",
				path, ln, line);
			goto out;
		}
		*ns = x;
		found = true;
	}
	if (!found) {
		snprintf(err, errlen, "%s:%d: no epoch in the file", path, ln);
		goto out;
	}
	rc = 0;
out:
	free(text);
	return rc;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: isthmus-wan [EAL options] -- --sites FILE --links FILE --site-map FILE "
		"[options]\n"
		"\n"
		"User-space WAN emulator: one DPDK port per site; IPv4 packets are routed over\n"
		"the topology's physical links on the planner's shortest-latency paths and\n"
		"delayed on every link by propagation + serialisation + queueing (a FIFO per\n"
		"directed link at the link's capacity, tail drop). Multicast is replicated at\n"
		"the branch points of the source's shortest-path tree. See doc/wan.md.\n"
		"\n"
		"Topology and addressing:\n"
		"  --sites FILE          planner sites CSV (site,region[,city])\n"
		"  --links FILE          planner links CSV "
		"(a,b,one_way_ms,capacity_gbps[,source])\n"
		"  --site-map FILE       one line per site with a port:\n"
		"                          SITE port=DEV mac=EDGE_MAC|learn net=A.B.C.D/LEN "
		"[net=...]\n"
		"                               [gw_mac=MAC] [gw=A.B.C.D]\n"
		"                        DEV is a DPDK port name (net_ring0) or id. Packets to an\n"
		"                        address in SITE's nets leave on DEV with destination\n"
		"                        EDGE_MAC (or the source MAC last received there: learn)\n"
		"                        and source gw_mac (default: the port's MAC). ARP "
		"requests\n"
		"                        for any address outside SITE's nets, or for gw, are\n"
		"                        answered with gw_mac. Sites without a line are transit "
		"only.\n"
		"  --groups FILE         multicast group table, one line per group:\n"
		"                          GROUP_IP SITE [SITE...]    ('*': every site with a "
		"port)\n"
		"                        a packet to GROUP_IP reaches every member but its "
		"source.\n"
		"  --schedule FILE       route by the schedule file's 'route' lines (isthmus-plan\n"
		"                        --out): a packet entering at site j in cycle round r\n"
		"                        follows the planned path of (r, j, i) to each\n"
		"                        destination i, the shortest path where the file has\n"
		"                        none. Islands are matched to sites by name\n"
		"  --epoch-ns NS         start of round 0, CLOCK_REALTIME ns (required when the\n"
		"                        file says 'epoch runtime'; the same epoch as the edges')\n"
		"  --epoch-file FILE     the epoch, chosen after the emulator started: FILE holds\n"
		"                        one line, CLOCK_REALTIME ns; read at start if it exists\n"
		"                        and again on SIGHUP (shortest paths until an epoch is\n"
		"                        known); each epoch taken is logged 'isthmus-wan: epoch "
		"NS'\n"
		"\n"
		"Model:\n"
		"  --scale K             divide every capacity by K (100 Gbps -> 100 Mbps at "
		"1000);\n"
		"                        latencies stay real. Default 1\n"
		"  --queue-ms D          tail-drop limit per directed link in time: D ms at the\n"
		"                        link's (scaled) capacity, at least 16 full frames.\n"
		"                        Default 100 (125 KB at 10 Mbit/s): a queue sized in "
		"bytes\n"
		"                        is seconds of delay at a scaled capacity (bufferbloat)\n"
		"  --queue-bytes B       tail-drop limit per directed link in bytes (K/M/G/Ki/Mi\n"
		"                        suffixes), instead of --queue-ms\n"
		"  --prio-queue-ms D     a priority class on every directed link: frames marked\n"
		"                        DSCP EF (46) are sent before the others, from a FIFO\n"
		"                        of their own of D ms at the link's capacity (at least\n"
		"                        4 full frames). Default 0: no priority class\n"
		"  --decrement-ttl       decrement the IPv4 TTL on each link, drop at 0 (counted\n"
		"                        'ttl'). Off by default: senders' multicast TTL is often "
		"1\n"
		"\n"
		"Impairments (seeded: same seed and same packets => same decisions):\n"
		"  --seed S              PRNG seed (default 1); each directed link has its own "
		"stream\n"
		"  --loss P              random loss probability on every link\n"
		"  --ge P/R/LB[/LG]      Gilbert-Elliott bursty loss on every link: P(good->bad),\n"
		"                        P(bad->good), loss in bad [, loss in good] per packet\n"
		"  --dup P               duplication probability\n"
		"  --reorder P           probability of an extra --reorder-ms delay (reorders)\n"
		"  --reorder-ms D        extra delay of reordered packets (default 1 ms)\n"
		"  --corrupt P           probability of flipping one byte after the IPv4 header\n"
		"  --jitter-ms J         extra delay uniform in [0, J] ms; never reorders\n"
		"  --impair SPEC         per link: [LINK:]key=value[,key=value...], LINK is A->B\n"
		"                        (one direction) or A-B (both); keys loss, ge, dup, "
		"reorder,\n"
		"                        reorder-ms, corrupt, jitter-ms, queue-bytes. Repeatable;\n"
		"                        these and the global options apply in command-line "
		"order.\n"
		"                        e.g. --impair NYC-LON:loss=0.01,jitter-ms=0.5\n"
		"\n"
		"Running:\n"
		"  --mbufs N             packet pool size (default 32767)\n"
		"  --lane-entries N      packets in flight per link lane, a power of two (default "
		"16384)\n"
		"  --idle-polls N        empty polls before sleeping (default 256; 0: never "
		"sleep)\n"
		"  --idle-us U           longest idle sleep, cut short by the next due packet "
		"(default 50)\n"
		"  --stats-interval S    print the counters every S seconds (default 0: only at "
		"exit)\n"
		"  --print-routes        print links, unicast routes and multicast trees at start\n"
		"  --help                this text\n"
		"\n"
		"Counters per link (pkts, bytes, queue_hw_bytes, queue_full, loss, ttl, "
		"ring_full,\n"
		"nombuf, corrupted, duplicated, reordered) and per port (rx/tx, not_ipv4, "
		"bad_ipv4,\n"
		"no_route, no_group, same_site, link_local, no_mac, tx_full, nombuf, arp_replies,\n"
		"arp_ignored) are printed at exit and served by DPDK telemetry as\n"
		"/isthmus_wan/links [LINK] and /isthmus_wan/ports (dpdk-telemetry.py).\n"
		"\n"
		"Example (two sites on ring ports):\n"
		"  isthmus-wan --no-huge -m 256 --no-pci --vdev=net_ring0 --vdev=net_ring1 -- \\\n"
		"      --sites conf/topologies/six-site-sites.csv --links "
		"conf/topologies/six-site-links.csv \\\n"
		"      --site-map conf/wan/example.map --groups conf/wan/example.groups --scale "
		"1000\n");
}

enum {
	O_SITES = 256,
	O_LINKS,
	O_MAP,
	O_GROUPS,
	O_SCALE,
	O_QUEUE,
	O_TTL,
	O_SEED,
	O_LOSS,
	O_GE,
	O_DUP,
	O_REORDER,
	O_REORDER_MS,
	O_CORRUPT,
	O_JITTER,
	O_IMPAIR,
	O_MBUFS,
	O_LANES,
	O_IDLE_POLLS,
	O_IDLE_US,
	O_STATS,
	O_ROUTES,
	O_HELP,
	O_QUEUE_MS,
	O_PRIO_QUEUE_MS,
	O_SCHED,
	O_EPOCH,
	O_EPOCH_FILE,
};

static const struct option opts[] = {
	{"sites", required_argument, NULL, O_SITES},
	{"links", required_argument, NULL, O_LINKS},
	{"site-map", required_argument, NULL, O_MAP},
	{"groups", required_argument, NULL, O_GROUPS},
	{"scale", required_argument, NULL, O_SCALE},
	{"queue-bytes", required_argument, NULL, O_QUEUE},
	{"queue-ms", required_argument, NULL, O_QUEUE_MS},
	{"prio-queue-ms", required_argument, NULL, O_PRIO_QUEUE_MS},
	{"decrement-ttl", no_argument, NULL, O_TTL},
	{"seed", required_argument, NULL, O_SEED},
	{"loss", required_argument, NULL, O_LOSS},
	{"ge", required_argument, NULL, O_GE},
	{"dup", required_argument, NULL, O_DUP},
	{"reorder", required_argument, NULL, O_REORDER},
	{"reorder-ms", required_argument, NULL, O_REORDER_MS},
	{"corrupt", required_argument, NULL, O_CORRUPT},
	{"jitter-ms", required_argument, NULL, O_JITTER},
	{"impair", required_argument, NULL, O_IMPAIR},
	{"mbufs", required_argument, NULL, O_MBUFS},
	{"lane-entries", required_argument, NULL, O_LANES},
	{"idle-polls", required_argument, NULL, O_IDLE_POLLS},
	{"idle-us", required_argument, NULL, O_IDLE_US},
	{"stats-interval", required_argument, NULL, O_STATS},
	{"print-routes", no_argument, NULL, O_ROUTES},
	{"schedule", required_argument, NULL, O_SCHED},
	{"epoch-ns", required_argument, NULL, O_EPOCH},
	{"epoch-file", required_argument, NULL, O_EPOCH_FILE},
	{"help", no_argument, NULL, O_HELP},
	{NULL, 0, NULL, 0},
};

/* Impairment options are replayed in order once the topology is loaded. */
struct spec_list {
	int n;
	char *s[256];
};

static int
parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	unsigned long long x;
	char *end;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (*s == '\0' || *s == '-' || *end != '\0' || errno || x < lo || x > hi) {
		fprintf(stderr, "isthmus-wan: --%s: bad value '%s' (%" PRIu64 "..%" PRIu64 ")\n",
			opt, s, lo, hi);
		return -EINVAL;
	}
	*v = x;
	return 0;
}

static int
add_spec(struct spec_list *l, const char *key, const char *val)
{
	char buf[600];

	if (l->n == (int)RTE_DIM(l->s)) {
		fprintf(stderr, "isthmus-wan: too many impairment options\n");
		return -EINVAL;
	}
	if (key)
		snprintf(buf, sizeof(buf), "%s=%s", key, val);
	else
		snprintf(buf, sizeof(buf), "%s", val);
	l->s[l->n] = strdup(buf);
	if (l->s[l->n] == NULL)
		return -ENOMEM;
	l->n++;
	return 0;
}

static int
port_start(uint16_t port, struct rte_mempool *pool)
{
	struct rte_eth_conf conf;
	uint16_t nb_rxd = NB_RXD, nb_txd = NB_TXD;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(
			port, 0, nb_rxd, rte_eth_dev_socket_id(port), NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, nb_txd, rte_eth_dev_socket_id(port), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc == 0) {
		/* frames arrive for edge-chosen MACs; not every PMD can (net_ring) */
		rte_eth_promiscuous_enable(port);
		rte_eth_allmulticast_enable(port);
	}
	return rc;
}

/*
 * Links whose queue limit no option set (0 here) get --queue-ms of their
 * scaled capacity, at least QUEUE_MIN_FRAMES full frames so that a slow
 * link still takes a burst.
 */
#define QUEUE_MIN_FRAMES 16
#define QUEUE_FRAME_BYTES 1514

#define PRIO_QUEUE_MIN_FRAMES 4

static void
queue_by_time(const struct isth_topo *t, struct isth_wan_impair *imp, double scale, double queue_ms,
	double prio_queue_ms)
{
	int e, from, to;
	double lat_ms, cap_bps, b;

	for (e = 0; e < isth_topo_ndlinks(t); e++) {
		isth_topo_dlink(t, e, &from, &to, &lat_ms, &cap_bps);
		if (imp[e].prio_queue_bytes == UINT64_MAX) {
			b = cap_bps / scale / 8.0 * prio_queue_ms * 1e-3;
			if (prio_queue_ms > 0 && b < PRIO_QUEUE_MIN_FRAMES * QUEUE_FRAME_BYTES)
				b = PRIO_QUEUE_MIN_FRAMES * QUEUE_FRAME_BYTES;
			imp[e].prio_queue_bytes = (uint64_t)b;
		}
		if (imp[e].queue_bytes != 0)
			continue;
		b = cap_bps / scale / 8.0 * queue_ms * 1e-3;
		if (b < QUEUE_MIN_FRAMES * QUEUE_FRAME_BYTES)
			b = QUEUE_MIN_FRAMES * QUEUE_FRAME_BYTES;
		imp[e].queue_bytes = (uint64_t)b;
	}
}

static void
sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};

	nanosleep(&ts, NULL);
}

int
main(int argc, char **argv)
{
	const char *sites = NULL, *links = NULL, *mapf = NULL, *groupsf = NULL;
	uint64_t mbufs = 32767, lanes = 16384, idle_polls = 256, idle_us = 50, stats_s = 0, v;
	struct isth_wan_params p = {.scale = 1, .seed = 1};
	const char *schedf = NULL;
	struct isth_sched *sched = NULL;
	uint64_t epoch_ns = 0;
	const char *epochf = NULL;
	struct isth_wan_groups *groups = NULL;
	struct isth_wan_sitemap *map = NULL;
	struct isth_wan_impair *imp = NULL;
	struct isth_topo *t = NULL;
	struct rte_mempool *pool = NULL;
	struct spec_list specs = {0};
	bool print_routes = false, eal = false;
	struct isth_wan *w = NULL;
	char err[512], *text;
	int rc, opt, i, s, ret = 1;
	uint64_t next_stats, hz, idle = 0, next_anchor = UINT64_MAX;
	uint16_t started[ISTH_WAN_MAX_SITES];
	int nstarted = 0;
	double queue_ms = 100, prio_queue_ms = 0;
	uint64_t qb;

	/* Die with the parent: nothing outlives a kill -9 of scripts/testbed.sh.
	 * Started by a testbed (ISTH_TESTBED set) whose script is already gone
	 * (we were left to init before the prctl): leave. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 ||
		(getenv("ISTH_TESTBED") != NULL && getppid() == 1))
		return 1;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
	}
	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "isthmus-wan: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	eal = true;
	argc -= rc;
	argv += rc;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case O_SITES:
			sites = optarg;
			break;
		case O_LINKS:
			links = optarg;
			break;
		case O_MAP:
			mapf = optarg;
			break;
		case O_GROUPS:
			groupsf = optarg;
			break;
		case O_SCALE: {
			char *end;

			errno = 0;
			p.scale = strtod(optarg, &end);
			if (*optarg == '\0' || *end != '\0' || errno || !isfinite(p.scale) ||
				p.scale <= 0) {
				fprintf(stderr, "isthmus-wan: --scale: bad value '%s' (> 0)\n",
					optarg);
				goto out;
			}
			break;
		}
		case O_QUEUE:
			if (isth_text_parse_size(optarg, &qb) < 0 || qb < 1) {
				fprintf(stderr, "isthmus-wan: --queue-bytes: bad size '%s'\n",
					optarg);
				goto out;
			}
			if (add_spec(&specs, "queue-bytes", optarg) < 0)
				goto out;
			break;
		case O_QUEUE_MS: {
			char *end;

			errno = 0;
			queue_ms = strtod(optarg, &end);
			if (*optarg == '\0' || *end != '\0' || errno || !isfinite(queue_ms) ||
				queue_ms <= 0 || queue_ms > 1e6) {
				fprintf(stderr,
					"isthmus-wan: --queue-ms: bad value '%s' (0..1e6 ms)\n",
					optarg);
				goto out;
			}
			break;
		}
		case O_PRIO_QUEUE_MS: {
			char *end;

			errno = 0;
			prio_queue_ms = strtod(optarg, &end);
			if (*optarg == '\0' || *end != '\0' || errno || !isfinite(prio_queue_ms) ||
				prio_queue_ms < 0 || prio_queue_ms > 1e6) {
				fprintf(stderr,
					"isthmus-wan: --prio-queue-ms: bad value '%s' (0..1e6 "
					"ms)\n",
					optarg);
				goto out;
			}
			break;
		}
		case O_TTL:
			p.decrement_ttl = true;
			break;
		case O_SCHED:
			schedf = optarg;
			break;
		case O_EPOCH:
			if (parse_u64("epoch-ns", optarg, 1, UINT64_MAX, &epoch_ns) < 0)
				goto out;
			break;
		case O_EPOCH_FILE:
			epochf = optarg;
			break;
		case O_SEED:
			if (parse_u64("seed", optarg, 0, UINT64_MAX, &p.seed) < 0)
				goto out;
			break;
		case O_LOSS:
		case O_GE:
		case O_DUP:
		case O_REORDER:
		case O_REORDER_MS:
		case O_CORRUPT:
		case O_JITTER: {
			static const char *const key[] = {
				[O_LOSS - O_LOSS] = "loss",
				[O_GE - O_LOSS] = "ge",
				[O_DUP - O_LOSS] = "dup",
				[O_REORDER - O_LOSS] = "reorder",
				[O_REORDER_MS - O_LOSS] = "reorder-ms",
				[O_CORRUPT - O_LOSS] = "corrupt",
				[O_JITTER - O_LOSS] = "jitter-ms",
			};

			if (add_spec(&specs, key[opt - O_LOSS], optarg) < 0)
				goto out;
			break;
		}
		case O_IMPAIR:
			if (add_spec(&specs, NULL, optarg) < 0)
				goto out;
			break;
		case O_MBUFS:
			if (parse_u64("mbufs", optarg, 1024, 1u << 24, &mbufs) < 0)
				goto out;
			break;
		case O_LANES:
			if (parse_u64("lane-entries", optarg, 16, 1u << 24, &lanes) < 0)
				goto out;
			if (!rte_is_power_of_2((uint32_t)lanes)) {
				fprintf(stderr,
					"isthmus-wan: --lane-entries must be a power of two\n");
				goto out;
			}
			break;
		case O_IDLE_POLLS:
			if (parse_u64("idle-polls", optarg, 0, UINT32_MAX, &idle_polls) < 0)
				goto out;
			break;
		case O_IDLE_US:
			if (parse_u64("idle-us", optarg, 1, 1000000, &idle_us) < 0)
				goto out;
			break;
		case O_STATS:
			if (parse_u64("stats-interval", optarg, 0, 86400, &stats_s) < 0)
				goto out;
			break;
		case O_ROUTES:
			print_routes = true;
			break;
		default:
			fprintf(stderr, "isthmus-wan: unknown option (see --help)\n");
			goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "isthmus-wan: unexpected argument '%s' (see --help)\n",
			argv[optind]);
		goto out;
	}
	if (sites == NULL || links == NULL || mapf == NULL) {
		fprintf(stderr,
			"isthmus-wan: --sites, --links and --site-map are required (see --help)\n");
		goto out;
	}

	err[0] = '\0';
	t = isth_topo_load(sites, links, err, sizeof(err));
	if (t == NULL) {
		fprintf(stderr, "isthmus-wan: %s\n", err[0] ? err : strerror(errno));
		goto out;
	}
	map = calloc(1, sizeof(*map));
	groups = calloc(1, sizeof(*groups));
	imp = calloc(isth_topo_ndlinks(t), sizeof(*imp));
	if (map == NULL || groups == NULL || imp == NULL) {
		fprintf(stderr, "isthmus-wan: out of memory\n");
		goto out;
	}
	text = isth_text_read(mapf, 0, NULL, err, sizeof(err));
	if (text == NULL) {
		fprintf(stderr, "isthmus-wan: %s\n", err);
		goto out;
	}
	rc = isth_wan_sitemap_parse(t, mapf, text, map, err, sizeof(err));
	free(text);
	if (rc < 0) {
		fprintf(stderr, "isthmus-wan: %s\n", err);
		goto out;
	}
	if (groupsf != NULL) {
		text = isth_text_read(groupsf, 0, NULL, err, sizeof(err));
		if (text == NULL) {
			fprintf(stderr, "isthmus-wan: %s\n", err);
			goto out;
		}
		rc = isth_wan_groups_parse(t, map, groupsf, text, groups, err, sizeof(err));
		free(text);
		if (rc < 0) {
			fprintf(stderr, "isthmus-wan: %s\n", err);
			goto out;
		}
	}
	isth_wan_impair_default(imp, isth_topo_ndlinks(t));
	/* 0: not set by --queue-bytes or --impair queue-bytes= (which refuse 0) */
	/* UINT64_MAX: not set by --impair prio-queue-bytes= (which takes 0) */
	for (i = 0; i < isth_topo_ndlinks(t); i++) {
		imp[i].queue_bytes = 0;
		imp[i].prio_queue_bytes = UINT64_MAX;
	}
	for (i = 0; i < specs.n; i++) {
		if (isth_wan_impair_apply(t, imp, specs.s[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "isthmus-wan: %s\n", err);
			goto out;
		}
	}
	queue_by_time(t, imp, p.scale, queue_ms, prio_queue_ms);

	pool = rte_pktmbuf_pool_create("isth_wan_pool", (unsigned int)mbufs, 256, 0,
		RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (pool == NULL) {
		fprintf(stderr, "isthmus-wan: mbuf pool of %" PRIu64 ": %s\n", mbufs,
			rte_strerror(rte_errno));
		goto out;
	}
	for (s = 0; s < isth_topo_n(t); s++) {
		uint16_t port;

		if (!map->site[s].present)
			continue;
		if (rte_eth_dev_get_port_by_name(map->site[s].dev, &port) != 0) {
			char *end;

			v = strtoul(map->site[s].dev, &end, 10);
			if (*end != '\0' || v >= RTE_MAX_ETHPORTS ||
				!rte_eth_dev_is_valid_port(v)) {
				fprintf(stderr,
					"isthmus-wan: %s:%d: site '%s': no DPDK port '%s' (%u "
					"ports; add --vdev?)\n",
					mapf, map->site[s].line, isth_topo_name(t, s),
					map->site[s].dev, rte_eth_dev_count_avail());
				goto out;
			}
			port = (uint16_t)v;
		}
		rc = port_start(port, pool);
		if (rc < 0) {
			fprintf(stderr, "isthmus-wan: %s:%d: site '%s': port %u: %s\n", mapf,
				map->site[s].line, isth_topo_name(t, s), port, rte_strerror(-rc));
			goto out;
		}
		started[nstarted++] = port;
	}
	p.pool = pool;
	p.lane_entries = (uint32_t)lanes;
	if (schedf != NULL) {
		char serr[512];

		sched = isth_sched_load(schedf, serr, sizeof(serr));
		if (sched == NULL) {
			fprintf(stderr, "isthmus-wan: %s\n", serr);
			goto out;
		}
		if (epochf != NULL && epoch_ns != 0) {
			fprintf(stderr, "isthmus-wan: --epoch-ns or --epoch-file, not both\n");
			goto out;
		}
		if (epochf != NULL) {
			rc = read_epoch_file(epochf, &epoch_ns, serr, sizeof(serr));
			if (rc == -EINVAL) {
				fprintf(stderr, "isthmus-wan: %s\n", serr);
				goto out;
			}
		}
		if (epoch_ns == 0)
			epoch_ns = isth_sched_epoch_ns(sched);
		if (epoch_ns == 0 && epochf == NULL) {
			fprintf(stderr,
				"isthmus-wan: %s says 'epoch runtime': give the job's epoch with "
				"--epoch-ns or --epoch-file\n",
				schedf);
			goto out;
		}
		/* no epoch yet (--epoch-file): shortest paths until SIGHUP */
		p.epoch_tsc = epoch_ns != 0 ? epoch_to_tsc(epoch_ns) : UINT64_MAX;
		p.sched = sched;
	} else if (epoch_ns != 0 || epochf != NULL) {
		fprintf(stderr, "isthmus-wan: --epoch-ns and --epoch-file need --schedule\n");
		goto out;
	}
	w = isth_wan_create(t, map, groups, imp, &p);
	if (w == NULL) {
		fprintf(stderr, "isthmus-wan: %s\n", rte_strerror(rte_errno));
		goto out;
	}
	if (print_routes)
		isth_wan_print_routes(w, stdout);
	if (isth_wan_telemetry_register(w) < 0)
		fprintf(stderr, "isthmus-wan: telemetry commands not registered\n");

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (epochf != NULL)
		signal(SIGHUP, on_hup);
	/* idle sleeps of tens of microseconds need a tight timer slack */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	hz = isth_wan_hz(w);
	printf("isthmus-wan: %d sites, %d directed links, scale %g, seed %" PRIu64
	       ", %d groups; running\n",
		isth_topo_n(t), isth_topo_ndlinks(t), p.scale, p.seed, groups->n);
	if (epoch_ns != 0 && p.sched != NULL)
		printf("isthmus-wan: epoch %" PRIu64 "\n", epoch_ns);
	fflush(stdout);
	next_stats = stats_s ? rte_rdtsc() + stats_s * hz : UINT64_MAX;
	if (p.sched != NULL && epoch_ns != 0)
		next_anchor = 0;
	while (!quit) {
		uint64_t now = rte_rdtsc(), next, ns;

		if (unlikely(now >= next_anchor)) {
			/* The epoch is CLOCK_REALTIME; the TSC rate EAL measured
			 * is off by up to ~0.1 % on a loaded VM, tens of ms over
			 * the seconds before the epoch, and the edges measured
			 * theirs apart: re-anchor every 10 ms so that round
			 * boundaries follow the real-time clock the edges follow. */
			isth_wan_set_epoch(w, epoch_to_tsc(epoch_ns));
			next_anchor = now + hz / 100;
		}
		if (unlikely(reread_epoch)) {
			/* the control path of this one-lcore loop: a file read per
			 * SIGHUP, never per packet; a bad file keeps the old epoch */
			char eerr[512];
			uint64_t e = 0;

			reread_epoch = 0;
			rc = read_epoch_file(epochf, &e, eerr, sizeof(eerr));
			if (rc == -ENOENT)
				fprintf(stderr, "isthmus-wan: %s: no such file; epoch unchanged\n",
					epochf);
			else if (rc < 0)
				fprintf(stderr, "isthmus-wan: %s; epoch unchanged\n", eerr);
			else {
				/* what came before (a job's earlier try) can be told
				 * from what comes after: counters at the change */
				printf("isthmus-wan: counters before the new epoch\n");
				isth_wan_print_stats(w, stdout);
				epoch_ns = e;
				isth_wan_set_epoch(w, epoch_to_tsc(epoch_ns));
				next_anchor = now + hz / 100;
				printf("isthmus-wan: epoch %" PRIu64 "\n", epoch_ns);
			}
			fflush(stdout);
			fflush(stderr);
			continue;
		}

		if (isth_wan_poll(w, now) != 0) {
			idle = 0;
			continue;
		}
		if (unlikely(now >= next_stats)) {
			isth_wan_print_stats(w, stdout);
			fflush(stdout);
			next_stats = now + stats_s * hz;
		}
		if (idle_polls == 0 || ++idle < idle_polls)
			continue;
		ns = idle_us * 1000;
		next = isth_wan_next_event(w);
		if (next != UINT64_MAX) {
			if (next <= now)
				continue;
			if ((double)(next - now) * 1e9 / (double)hz < (double)ns)
				ns = (uint64_t)((double)(next - now) * 1e9 / (double)hz);
		}
		/* below a few microseconds the sleep itself overshoots */
		if (ns >= 5000)
			sleep_ns(ns);
	}
	printf("isthmus-wan: stopping\n");
	isth_wan_print_stats(w, stdout);
	fflush(stdout);
	ret = 0;
out:
	isth_wan_free(w);
	for (i = 0; i < nstarted; i++) {
		rte_eth_dev_stop(started[i]);
		rte_eth_dev_close(started[i]);
	}
	rte_mempool_free(pool);
	for (i = 0; i < specs.n; i++)
		free(specs.s[i]);
	free(imp);
	free(groups);
	free(map);
	isth_topo_free(t);
	isth_sched_free(sched);
	if (eal)
		rte_eal_cleanup();
	return ret;
}
