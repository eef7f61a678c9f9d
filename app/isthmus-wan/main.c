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
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "isth_clock.h"
#include "isth_sched.h"
#include "isth_notify.h"
#include "isth_text.h"
#include "wan.h"
#include "isth_version.h"

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
	uint64_t tsc_hz = rte_get_tsc_hz(), now_ns = isth_clock_real_ns(), now_tsc = rte_rdtsc();

	if (epoch_ns >= now_ns)
		return now_tsc + (uint64_t)((double)(epoch_ns - now_ns) * 1e-9 * tsc_hz);
	if ((double)(now_ns - epoch_ns) * 1e-9 * tsc_hz < (double)now_tsc)
		return now_tsc - (uint64_t)((double)(now_ns - epoch_ns) * 1e-9 * tsc_hz);
	return 0;
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
		"  --version             print the version on one line and exit\n"
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

/* What the command line sets (parse_args()); read-only after set-up but
 * for epoch_ns, which the epoch file and the schedule may set. */
struct wan_opts {
	const char *sites, *links, *mapf, *groupsf; /* --sites --links --site-map --groups */
	const char *schedf, *epochf; /* --schedule --epoch-file */
	uint64_t epoch_ns; /* --epoch-ns, the epoch file's or the schedule's; 0: none yet */
	uint64_t mbufs, lanes, idle_polls, idle_us, stats_s;
	double queue_ms, prio_queue_ms;
	bool print_routes;
	struct isth_wan_params p; /* scale, seed, decrement_ttl; pool and lanes at start */
	/* impairment options, replayed in order once the topology is loaded */
	int nspecs;
	char *specs[256];
};

/* What set-up allocates and main() frees (conf_free()). */
struct wan_conf {
	struct isth_topo *t;
	struct isth_wan_sitemap *map;
	struct isth_wan_groups *groups;
	struct isth_wan_impair *imp;
	struct rte_mempool *pool;
	struct isth_sched *sched;
	uint16_t started[ISTH_WAN_MAX_SITES]; /* ports to stop and close */
	int nstarted;
};

/* A decimal count of option --@p opt within [lo, hi] (lib/text: "010" is ten). */
static int
opt_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	if (isth_text_parse_u64_range(s, lo, hi, v) < 0) {
		fprintf(stderr, "isthmus-wan: --%s: bad value '%s' (%" PRIu64 "..%" PRIu64 ")\n",
			opt, s, lo, hi);
		return -EINVAL;
	}
	return 0;
}

/* A finite real of option --@p opt in [lo, hi], above lo if @p lo_open;
 * @p range describes it in the error. */
static int
opt_real(const char *opt, const char *s, double lo, bool lo_open, double hi, const char *range,
	double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || errno || !isfinite(*v) || *v < lo ||
		(lo_open && *v == lo) || *v > hi) {
		fprintf(stderr, "isthmus-wan: --%s: bad value '%s' (%s)\n", opt, s, range);
		return -EINVAL;
	}
	return 0;
}

static int
add_spec(struct wan_opts *o, const char *key, const char *val)
{
	char buf[600];

	if (o->nspecs == (int)RTE_DIM(o->specs)) {
		fprintf(stderr, "isthmus-wan: too many impairment options\n");
		return -EINVAL;
	}
	if (key)
		snprintf(buf, sizeof(buf), "%s=%s", key, val);
	else
		snprintf(buf, sizeof(buf), "%s", val);
	o->specs[o->nspecs] = strdup(buf);
	if (o->specs[o->nspecs] == NULL)
		return -ENOMEM;
	o->nspecs++;
	return 0;
}

/* The --impair key of each global impairment option. */
static const char *const impair_key[] = {
	[O_LOSS - O_LOSS] = "loss",
	[O_GE - O_LOSS] = "ge",
	[O_DUP - O_LOSS] = "dup",
	[O_REORDER - O_LOSS] = "reorder",
	[O_REORDER_MS - O_LOSS] = "reorder-ms",
	[O_CORRUPT - O_LOSS] = "corrupt",
	[O_JITTER - O_LOSS] = "jitter-ms",
};

/* One option @p opt with argument @p arg into @p o. @return 0 or -EINVAL. */
static int
parse_opt(struct wan_opts *o, int opt, const char *arg)
{
	uint64_t qb;

	switch (opt) {
	case O_SITES:
		o->sites = arg;
		return 0;
	case O_LINKS:
		o->links = arg;
		return 0;
	case O_MAP:
		o->mapf = arg;
		return 0;
	case O_GROUPS:
		o->groupsf = arg;
		return 0;
	case O_SCALE:
		return opt_real("scale", arg, 0, true, HUGE_VAL, "> 0", &o->p.scale);
	case O_QUEUE:
		if (isth_text_parse_size(arg, &qb) < 0 || qb < 1) {
			fprintf(stderr, "isthmus-wan: --queue-bytes: bad size '%s'\n", arg);
			return -EINVAL;
		}
		return add_spec(o, "queue-bytes", arg);
	case O_QUEUE_MS:
		return opt_real("queue-ms", arg, 0, true, 1e6, "0..1e6 ms", &o->queue_ms);
	case O_PRIO_QUEUE_MS:
		return opt_real(
			"prio-queue-ms", arg, 0, false, 1e6, "0..1e6 ms", &o->prio_queue_ms);
	case O_TTL:
		o->p.decrement_ttl = true;
		return 0;
	case O_SCHED:
		o->schedf = arg;
		return 0;
	case O_EPOCH:
		return opt_u64("epoch-ns", arg, 1, UINT64_MAX, &o->epoch_ns);
	case O_EPOCH_FILE:
		o->epochf = arg;
		return 0;
	case O_SEED:
		return opt_u64("seed", arg, 0, UINT64_MAX, &o->p.seed);
	case O_LOSS:
	case O_GE:
	case O_DUP:
	case O_REORDER:
	case O_REORDER_MS:
	case O_CORRUPT:
	case O_JITTER:
		return add_spec(o, impair_key[opt - O_LOSS], arg);
	case O_IMPAIR:
		return add_spec(o, NULL, arg);
	case O_MBUFS:
		return opt_u64("mbufs", arg, 1024, 1u << 24, &o->mbufs);
	case O_LANES:
		if (opt_u64("lane-entries", arg, 16, 1u << 24, &o->lanes) < 0)
			return -EINVAL;
		if (!rte_is_power_of_2((uint32_t)o->lanes)) {
			fprintf(stderr, "isthmus-wan: --lane-entries must be a power of two\n");
			return -EINVAL;
		}
		return 0;
	case O_IDLE_POLLS:
		return opt_u64("idle-polls", arg, 0, UINT32_MAX, &o->idle_polls);
	case O_IDLE_US:
		return opt_u64("idle-us", arg, 1, 1000000, &o->idle_us);
	case O_STATS:
		return opt_u64("stats-interval", arg, 0, 86400, &o->stats_s);
	case O_ROUTES:
		o->print_routes = true;
		return 0;
	default:
		fprintf(stderr, "isthmus-wan: unknown option (see --help)\n");
		return -EINVAL;
	}
}

/* The command line after the EAL's options. @return 0 or -EINVAL. */
static int
parse_args(int argc, char **argv, struct wan_opts *o)
{
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if (parse_opt(o, opt, optarg) < 0)
			return -EINVAL;
	if (optind < argc) {
		fprintf(stderr, "isthmus-wan: unexpected argument '%s' (see --help)\n",
			argv[optind]);
		return -EINVAL;
	}
	if (o->sites == NULL || o->links == NULL || o->mapf == NULL) {
		fprintf(stderr,
			"isthmus-wan: --sites, --links and --site-map are required (see --help)\n");
		return -EINVAL;
	}
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

/* The topology, the site map and the group table, from the files in @p o. */
static int
load_maps(const struct wan_opts *o, struct wan_conf *c)
{
	char err[512], *text;
	int rc;

	err[0] = '\0';
	c->t = isth_topo_load(o->sites, o->links, err, sizeof(err));
	if (c->t == NULL) {
		fprintf(stderr, "isthmus-wan: %s\n", err[0] ? err : strerror(errno));
		return -EINVAL;
	}
	c->map = calloc(1, sizeof(*c->map));
	c->groups = calloc(1, sizeof(*c->groups));
	c->imp = calloc(isth_topo_ndlinks(c->t), sizeof(*c->imp));
	if (c->map == NULL || c->groups == NULL || c->imp == NULL) {
		fprintf(stderr, "isthmus-wan: out of memory\n");
		return -ENOMEM;
	}
	text = isth_text_read(o->mapf, 0, NULL, err, sizeof(err));
	if (text == NULL) {
		fprintf(stderr, "isthmus-wan: %s\n", err);
		return -EINVAL;
	}
	rc = isth_wan_sitemap_parse(c->t, o->mapf, text, c->map, err, sizeof(err));
	free(text);
	if (rc < 0) {
		fprintf(stderr, "isthmus-wan: %s\n", err);
		return rc;
	}
	if (o->groupsf == NULL)
		return 0;
	text = isth_text_read(o->groupsf, 0, NULL, err, sizeof(err));
	if (text == NULL) {
		fprintf(stderr, "isthmus-wan: %s\n", err);
		return -EINVAL;
	}
	rc = isth_wan_groups_parse(c->t, c->map, o->groupsf, text, c->groups, err, sizeof(err));
	free(text);
	if (rc < 0)
		fprintf(stderr, "isthmus-wan: %s\n", err);
	return rc;
}

/* Every directed link's impairments and queue limits: the defaults, the
 * impairment options in command-line order, then queues sized in time. */
static int
load_impairments(const struct wan_opts *o, struct wan_conf *c)
{
	int nd = isth_topo_ndlinks(c->t), i;
	char err[512];

	isth_wan_impair_default(c->imp, nd);
	/* 0: not set by --queue-bytes or --impair queue-bytes= (which refuse 0) */
	/* UINT64_MAX: not set by --impair prio-queue-bytes= (which takes 0) */
	for (i = 0; i < nd; i++) {
		c->imp[i].queue_bytes = 0;
		c->imp[i].prio_queue_bytes = UINT64_MAX;
	}
	for (i = 0; i < o->nspecs; i++) {
		if (isth_wan_impair_apply(c->t, c->imp, o->specs[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "isthmus-wan: %s\n", err);
			return -EINVAL;
		}
	}
	queue_by_time(c->t, c->imp, o->p.scale, o->queue_ms, o->prio_queue_ms);
	return 0;
}

/* The mbuf pool and the port of every site the map gives one. */
static int
start_ports(struct wan_opts *o, struct wan_conf *c)
{
	int s, rc;

	c->pool = rte_pktmbuf_pool_create("isth_wan_pool", (unsigned int)o->mbufs, 256, 0,
		RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (c->pool == NULL) {
		fprintf(stderr, "isthmus-wan: mbuf pool of %" PRIu64 ": %s\n", o->mbufs,
			rte_strerror(rte_errno));
		return -ENOMEM;
	}
	for (s = 0; s < isth_topo_n(c->t); s++) {
		const struct isth_wan_site_conf *sc = &c->map->site[s];
		uint16_t port;

		if (!sc->present)
			continue;
		if (isth_wan_port_lookup(sc->dev, &port) < 0) {
			fprintf(stderr,
				"isthmus-wan: %s:%d: site '%s': no DPDK port '%s' (%u ports; add "
				"--vdev?)\n",
				o->mapf, sc->line, isth_topo_name(c->t, s), sc->dev,
				rte_eth_dev_count_avail());
			return -ENODEV;
		}
		rc = port_start(port, c->pool);
		if (rc < 0) {
			fprintf(stderr, "isthmus-wan: %s:%d: site '%s': port %u: %s\n", o->mapf,
				sc->line, isth_topo_name(c->t, s), port, rte_strerror(-rc));
			return rc;
		}
		c->started[c->nstarted++] = port;
	}
	o->p.pool = c->pool;
	o->p.lane_entries = (uint32_t)o->lanes;
	return 0;
}

/* --schedule and its epoch (--epoch-ns, --epoch-file or the file's own). */
static int
load_schedule(struct wan_opts *o, struct wan_conf *c)
{
	char err[512];

	if (o->schedf == NULL) {
		if (o->epoch_ns == 0 && o->epochf == NULL)
			return 0;
		fprintf(stderr, "isthmus-wan: --epoch-ns and --epoch-file need --schedule\n");
		return -EINVAL;
	}
	c->sched = isth_sched_load(o->schedf, err, sizeof(err));
	if (c->sched == NULL) {
		fprintf(stderr, "isthmus-wan: %s\n", err);
		return -EINVAL;
	}
	if (o->epochf != NULL && o->epoch_ns != 0) {
		fprintf(stderr, "isthmus-wan: --epoch-ns or --epoch-file, not both\n");
		return -EINVAL;
	}
	if (o->epochf != NULL &&
		isth_wan_epoch_read(o->epochf, &o->epoch_ns, err, sizeof(err)) == -EINVAL) {
		fprintf(stderr, "isthmus-wan: %s\n", err);
		return -EINVAL;
	}
	if (o->epoch_ns == 0)
		o->epoch_ns = isth_sched_epoch_ns(c->sched);
	if (o->epoch_ns == 0 && o->epochf == NULL) {
		fprintf(stderr,
			"isthmus-wan: %s says 'epoch runtime': give the job's epoch with "
			"--epoch-ns or --epoch-file\n",
			o->schedf);
		return -EINVAL;
	}
	/* no epoch yet (--epoch-file): shortest paths until SIGHUP */
	o->p.epoch_tsc = o->epoch_ns != 0 ? epoch_to_tsc(o->epoch_ns) : UINT64_MAX;
	o->p.sched = c->sched;
	return 0;
}

static void
conf_free(struct wan_conf *c)
{
	int i;

	for (i = 0; i < c->nstarted; i++) {
		rte_eth_dev_stop(c->started[i]);
		rte_eth_dev_close(c->started[i]);
	}
	rte_mempool_free(c->pool);
	free(c->imp);
	free(c->groups);
	free(c->map);
	isth_topo_free(c->t);
	isth_sched_free(c->sched);
}

/* The polling loop's state (main lcore only). */
struct wan_loop {
	struct isth_wan *w;
	struct wan_opts *o; /* o->epoch_ns: the epoch in force */
	uint64_t hz;
	uint64_t next_anchor; /* TSC of the next re-anchoring of the epoch; UINT64_MAX: none */
	uint64_t next_stats; /* TSC of the next --stats-interval print; UINT64_MAX: none */
	uint64_t idle; /* empty polls in a row */
};

/* SIGHUP: read --epoch-file again. The control path of this one-lcore
 * loop: a file read per SIGHUP, never per packet; a bad file keeps the
 * old epoch. */
static void
epoch_reread(struct wan_loop *L, uint64_t now)
{
	char err[512];
	uint64_t e = 0;
	int rc;

	rc = isth_wan_epoch_read(L->o->epochf, &e, err, sizeof(err));
	if (rc == -ENOENT) {
		fprintf(stderr, "isthmus-wan: %s: no such file; epoch unchanged\n", L->o->epochf);
	} else if (rc < 0) {
		fprintf(stderr, "isthmus-wan: %s; epoch unchanged\n", err);
	} else {
		/* what came before (a job's earlier try) can be told from what
		 * comes after: counters at the change */
		printf("isthmus-wan: counters before the new epoch\n");
		isth_wan_print_stats(L->w, stdout);
		L->o->epoch_ns = e;
		isth_wan_set_epoch(L->w, epoch_to_tsc(e));
		L->next_anchor = now + L->hz / 100;
		printf("isthmus-wan: epoch %" PRIu64 "\n", e);
	}
	fflush(stdout);
	fflush(stderr);
}

/* Nothing was due and no port had a packet for --idle-polls polls: sleep
 * for at most --idle-us, never past the next packet that is due. */
static void
idle_sleep(const struct wan_loop *L, uint64_t now)
{
	uint64_t ns = L->o->idle_us * 1000, next = isth_wan_next_event(L->w);

	if (next != UINT64_MAX) {
		if (next <= now)
			return;
		if ((double)(next - now) * 1e9 / (double)L->hz < (double)ns)
			ns = (uint64_t)((double)(next - now) * 1e9 / (double)L->hz);
	}
	/* below a few microseconds the sleep itself overshoots */
	if (ns >= 5000)
		sleep_ns(ns);
}

/* The one polling loop, until SIGINT or SIGTERM: due packets and a burst
 * from every port (isth_wan_poll()), the rare control events in between. */
static void
run(struct wan_loop *L)
{
	while (!quit) {
		uint64_t now = rte_rdtsc();

		if (unlikely(now >= L->next_anchor)) {
			/* The epoch is CLOCK_REALTIME; the TSC rate EAL measured
			 * is off by up to ~0.1 % on a loaded VM, tens of ms over
			 * the seconds before the epoch, and the edges measured
			 * theirs apart: re-anchor every 10 ms so that round
			 * boundaries follow the real-time clock the edges follow. */
			isth_wan_set_epoch(L->w, epoch_to_tsc(L->o->epoch_ns));
			L->next_anchor = now + L->hz / 100;
		}
		if (unlikely(reread_epoch)) {
			reread_epoch = 0;
			epoch_reread(L, now);
			continue;
		}
		if (isth_wan_poll(L->w, now) != 0) {
			L->idle = 0;
			continue;
		}
		if (unlikely(now >= L->next_stats)) {
			isth_wan_print_stats(L->w, stdout);
			fflush(stdout);
			L->next_stats = now + L->o->stats_s * L->hz;
		}
		if (L->o->idle_polls != 0 && ++L->idle >= L->o->idle_polls)
			idle_sleep(L, now);
	}
}

int
main(int argc, char **argv)
{
	struct wan_opts o = {.mbufs = 32767,
		.lanes = 16384,
		.idle_polls = 256,
		.idle_us = 50,
		.queue_ms = 100,
		.p = {.scale = 1, .seed = 1}};
	struct wan_conf c = {0};
	struct wan_loop L = {0};
	struct isth_wan *w = NULL;
	bool eal = false;
	int rc, i, ret = 1;

	if (isth_version_args("isthmus-wan", argc, argv))
		return 0;
	/* Die with the parent only when asked (ISTH_DIE_WITH_PARENT=1, or
	 * ISTH_TESTBED: a kill -9 of scripts/testbed.sh leaves nothing
	 * running); a parent gone before the prctl cannot signal us: leave. */
	if (isth_notify_die_with_parent(false, getppid()) < 0)
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
	/* everything is parsed and checked before the emulator starts */
	if (parse_args(argc, argv, &o) < 0 || load_maps(&o, &c) < 0 ||
		load_impairments(&o, &c) < 0 || start_ports(&o, &c) < 0 ||
		load_schedule(&o, &c) < 0)
		goto out;
	w = isth_wan_create(c.t, c.map, c.groups, c.imp, &o.p);
	if (w == NULL) {
		fprintf(stderr, "isthmus-wan: %s\n", rte_strerror(rte_errno));
		goto out;
	}
	if (o.print_routes)
		isth_wan_print_routes(w, stdout);
	if (isth_wan_telemetry_register(w) < 0)
		fprintf(stderr, "isthmus-wan: telemetry commands not registered\n");

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (o.epochf != NULL)
		signal(SIGHUP, on_hup);
	/* idle sleeps of tens of microseconds need a tight timer slack */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	printf("isthmus-wan: %d sites, %d directed links, scale %g, seed %" PRIu64
	       ", %d groups; running\n",
		isth_topo_n(c.t), isth_topo_ndlinks(c.t), o.p.scale, o.p.seed, c.groups->n);
	if (o.epoch_ns != 0 && o.p.sched != NULL)
		printf("isthmus-wan: epoch %" PRIu64 "\n", o.epoch_ns);
	fflush(stdout);
	L.w = w;
	L.o = &o;
	L.hz = isth_wan_hz(w);
	L.next_stats = o.stats_s ? rte_rdtsc() + o.stats_s * L.hz : UINT64_MAX;
	L.next_anchor = o.p.sched != NULL && o.epoch_ns != 0 ? 0 : UINT64_MAX;
	run(&L);
	printf("isthmus-wan: stopping\n");
	isth_wan_print_stats(w, stdout);
	fflush(stdout);
	ret = 0;
out:
	isth_wan_free(w);
	conf_free(&c);
	for (i = 0; i < o.nspecs; i++)
		free(o.specs[i]);
	if (eal)
		rte_eal_cleanup();
	return ret;
}
