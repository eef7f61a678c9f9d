/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmusd: the isthmus edge appliance.
 *
 *   isthmusd [EAL options] -- --config FILE [--schedule FILE] [--epoch E]
 *            [--rounds N] [--check] [--die-with-parent] [--log-level L]
 *
 * The main lcore runs the controller; every other lcore is a worker (N >= 1),
 * all running one loop (worker.c): worker k sums the peer DATA of chunks
 * with chunk % N == k, and worker 0 also holds the roles only one worker
 * may (RX of both ports, steering; workers.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "isth_clock.h"
#include "isth_log.h"
#include "isth_notify.h"
#include "isth_text.h"
#include "isthd.h"
#include "isth_version.h"
#include "metrics.h"

static struct isthd daemon_state;

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: isthmusd [EAL options] -- --config FILE [options]\n"
		"\n"
		"The isthmus edge appliance: replicates the island's DATA to the peers of\n"
		"its clique, sums the peers' DATA in-line, sends the island its AGG streams\n"
		"(one per worker), answers its NACKs, and follows the schedule's rounds.\n"
		"\n"
		"EAL options (before --): the usual DPDK ones. At least two lcores: the\n"
		"main one runs the controller, every other one is a worker (-l 0,1,2: two;\n"
		"worker k sums the chunks with chunk %% workers == k). Without hugepages:\n"
		"  --no-huge -m 512 --file-prefix=<unique> -l 0,1\n"
		"Ports: physical NICs (-a PCI), or --vdev net_pcap0,iface=veth0,\n"
		"net_af_packet0,iface=veth0, net_af_xdp0,iface=veth0, net_tap0, net_ring0.\n"
		"The config names them ([access] port, [wan] port) by name or port id.\n"
		"\n"
		"Options (after --):\n"
		"  -c, --config FILE     configuration (required; see conf/isthmusd/ and\n"
		"                        doc/isthmusd.md)\n"
		"  -s, --schedule FILE   schedule file from isthmus-plan --out (overrides\n"
		"                        [isthmusd] schedule); refused, with its file:line,\n"
		"                        if planned for another [wan] replication or\n"
		"                        [isthmusd] dtype than the config's\n"
		"  -e, --epoch E         start of round 0: ns since the Unix epoch, or\n"
		"                        now+S (S seconds from now, rounded up to a whole\n"
		"                        second so that edges started together agree)\n"
		"  -r, --rounds N        stop after N rounds (0: run until signalled)\n"
		"      --check           validate config and schedule, print a summary, exit\n"
		"      --config-keys     print every config key the loader reads (section,\n"
		"                        key, type, default, range, an enum's names;\n"
		"                        tab-separated) and exit;\n"
		"                        no EAL options needed (doc/operator.md lists them)\n"
		"      --die-with-parent stop (SIGTERM) when the parent process exits; also\n"
		"                        with ISTH_DIE_WITH_PARENT=1 or ISTH_TESTBED set (the\n"
		"                        testbed). Without it isthmusd outlives the shell\n"
		"                        that started it (nohup, ssh)\n"
		"      --log-level L     err, warning, notice, info (default) or debug\n"
		"  -h, --help            this text\n"
		"  --version             print the version on one line and exit\n"
		"\n"
		"Signals: SIGINT/SIGTERM stop cleanly (flush partial aggregates, print\n"
		"counters); SIGHUP reloads the schedule file at the next round boundary\n"
		"and, with [auth] mode = on, the key file (a new epoch for a future round)\n"
		"(also: /isthmus/reload over telemetry).\n"
		"\n"
		"Logs: stderr, one line each: RFC 3339 UTC time, level, isthmusd: message;\n"
		"under systemd (JOURNAL_STREAM) \"<N>message\" for the journal. The counters\n"
		"at the end and the per-round lines go to stdout. With NOTIFY_SOCKET set\n"
		"(systemd Type=notify) isthmusd sends READY=1 once the first round's\n"
		"tables are out, STATUS=, WATCHDOG=1 from the controller at half\n"
		"WatchdogSec (only while each round's tables are published), RELOADING=1\n"
		"on SIGHUP, STOPPING=1 (conf/systemd/).\n"
		"\n"
		"Metrics: [metrics] listen = IPv4:PORT (off by default) serves GET /metrics\n"
		"(OpenMetrics or Prometheus text) from a thread of its own.\n"
		"\n"
		"Exit codes: 0 clean stop; 1 failure while running; 2 bad command line,\n"
		"config or schedule; 3 EAL, port or memory set-up failed.\n");
}

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		daemon_state.reload = true;
	else
		daemon_state.stop = true;
}

/* --epoch: ns since the Unix epoch, or now+S with S in [0, 3600] (decimal,
 * lib/text's one parser: "010" is ten) */
static int
parse_epoch(const char *s, uint64_t *out)
{
	uint64_t secs;

	if (strncmp(s, "now+", 4) == 0) {
		uint64_t now = isth_clock_real_ns();

		if (isth_text_parse_u64_range(s + 4, 0, 3600, &secs) < 0)
			return -EINVAL;
		*out = (now / 1000000000ull + 1 + secs) * 1000000000ull;
		return 0;
	}
	return isth_text_parse_u64_range(s, 1, UINT64_MAX, out) < 0 ? -EINVAL : 0;
}

/* The options after EAL's (and its "--"), before anything is loaded. */
struct args {
	const char *config;
	const char *schedule; /* NULL: [isthmusd] schedule */
	uint64_t epoch; /* 0: from the config or the schedule */
	uint64_t rounds; /* 0: until signalled */
	bool check;
	bool die_with_parent; /* acted on before the EAL, by main() */
};

/* 0, or ISTHD_EXIT_USAGE with the reason printed. */
static int
parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"schedule", required_argument, NULL, 's'},
		{"epoch", required_argument, NULL, 'e'},
		{"rounds", required_argument, NULL, 'r'},
		{"check", no_argument, NULL, 'C'},
		{"die-with-parent", no_argument, NULL, 'P'},
		{"log-level", required_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, level;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:s:e:r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 's':
			a->schedule = optarg;
			break;
		case 'e':
			if (parse_epoch(optarg, &a->epoch) == 0)
				break;
			ISTH_LOG_ERR("--epoch '%s': want ns since the Unix epoch or now+S "
				     "(decimal; S at most 3600)",
				optarg);
			return ISTHD_EXIT_USAGE;
		case 'r':
			if (isth_text_parse_u64(optarg, &a->rounds) == 0)
				break;
			ISTH_LOG_ERR("--rounds '%s': not a number (decimal, below 2^64)", optarg);
			return ISTHD_EXIT_USAGE;
		case 'C':
			a->check = true;
			break;
		case 'P':
			a->die_with_parent = true;
			break;
		case 'L':
			if (isth_log_level_parse(optarg, &level) == 0) {
				isth_log_set_level(level);
				break;
			}
			ISTH_LOG_ERR("--log-level '%s': want one of " ISTH_LOG_LEVEL_NAMES, optarg);
			return ISTHD_EXIT_USAGE;
		default:
			usage(stderr);
			return ISTHD_EXIT_USAGE;
		}
	}
	if (a->config == NULL || optind != argc) {
		ISTH_LOG_ERR("%s",
			a->config ? "unexpected argument"
				  : "--config FILE is required (isthmusd -- --help)");
		return ISTHD_EXIT_USAGE;
	}
	return 0;
}

/* --check's summary of a prepared daemon. */
static void
print_check(const struct isthd *d)
{
	printf("isthmusd: %s: island %s (%u of %u), job %u, schedule %s: T %.3f ms, %d "
	       "rounds per cycle, epoch %" PRIu64 "\n",
		d->cfg.path, isth_sched_island_name(d->sched, d->island), d->island, d->n_islands,
		d->cfg.job, d->cfg.schedule, (double)isth_sched_round_ns(d->sched) / 1e6,
		isth_sched_n_rounds(d->sched), d->clk.epoch_ns);
	/* an older or hand-written file: run, but say what went unchecked */
	{
		bool no_repl = isth_sched_replication(d->sched, NULL) == ISTH_SCHED_REPL_UNSTATED;
		/* [isthmusd] dtype = any checks no type: nothing went unchecked */
		bool no_dtype = isth_sched_dtype(d->sched, NULL) == NULL &&
			d->cfg.dtype != ISTH_WIRE_DTYPE_NONE;

		if (no_repl || no_dtype)
			printf("isthmusd: notice: %s does not state the %s it was planned for "
			       "(older or hand-written): not checked against %s\n",
				d->cfg.schedule,
				no_repl && no_dtype ? "replication and element type"
					: no_repl   ? "replication"
						    : "element type",
				no_repl && no_dtype ? "[wan] replication and [isthmusd] dtype"
					: no_repl   ? "[wan] replication"
						    : "[isthmusd] dtype");
	}
	for (unsigned int h = 0; d->cfg.n_island_hosts > 1 && h < d->cfg.n_island_hosts; h++) {
		uint32_t first, n, ip = d->cfg.island_hosts[h].ip;

		isthd_host_chunks(d, h, &first, &n);
		printf("isthmusd: island host %u of %u: %u.%u.%u.%u, chunks %u-%u of %u\n", h,
			d->cfg.n_island_hosts, ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255,
			first, first + n - 1, d->shape.n_chunks);
	}
	if (d->cfg.n_island_hosts > 1 && d->cfg.auth)
		printf("isthmusd: island hosts with auth: each host's DATA and NACKs in its own "
		       "replay windows (by its address), its AGG streams in its own seq lane "
		       "(host h: 2^56 ns x h below the clock), the island's DATA forwarded "
		       "with this edge's own WAN seq (doc/protocol.md, \"An island of several "
		       "hosts\")\n");
	/* the payload is the bytes that cross the links: a bf16 job's
	 * tensor has payload / 2 elements (setup.c, elem_bytes_of) */
	printf("isthmusd: payload %" PRIu64 " B a round: %" PRIu64
	       " elements of %u B (%s), %u chunks\n",
		isth_sched_payload_bytes(d->sched),
		d->shape.n_chunks ? (uint64_t)(d->shape.n_chunks - 1) * d->shape.chunk_elems +
				d->shape.last_elems
				  : 0,
		d->shape.elem_bytes,
		d->cfg.dtype != ISTH_WIRE_DTYPE_NONE ? isth_wire_dtype_name(d->cfg.dtype) : "any",
		d->shape.n_chunks);
	if (d->auth.on)
		printf("isthmusd: auth on: key file %s, %u key epochs, %u elements per chunk\n",
			d->cfg.key_file, isth_auth_n_epochs(d->auth.keys), d->lim.max_elems);
	else
		printf("isthmusd: auth: off (wire version 1, unauthenticated)\n");
}

/* How a port's TX is shared by several workers (chosen once by setup from
 * the PMD's TX queues, doc/isthmusd.md "Workers"). */
static void
print_tx(const char *what, uint16_t port, unsigned int txq)
{
	struct rte_eth_dev_info info;
	unsigned int mq;

	if (txq > 1) {
		ISTH_LOG_INFO("%s TX: a queue per worker (%u TX queues)", what, txq);
		return;
	}
	mq = rte_eth_dev_info_get(port, &info) == 0 ? info.max_tx_queues : 1;
	ISTH_LOG_INFO(
		"%s TX: through worker 0 (PMD has %u TX queue%s)", what, mq, mq == 1 ? "" : "s");
}

/* The start-up lines (scripts/testbed.sh waits for the first one's
 * "epoch ... (in" to know the ports are up). */
static void
print_start(const struct isthd *d)
{
	ISTH_LOG_INFO("island %s (%u), job %u, %u islands, backend %s, auth %s, %u worker%s, "
		      "T %.3f ms, epoch %" PRIu64 " (in %.3f s)",
		isth_sched_island_name(d->sched, d->island), d->island, d->cfg.job, d->n_islands,
		d->cfg.backend, d->auth.on ? "on" : "OFF", d->n_workers,
		d->n_workers == 1 ? "" : "s", (double)isth_sched_round_ns(d->sched) / 1e6,
		d->clk.epoch_ns, ((double)d->clk.epoch_ns - (double)isth_clock_real_ns()) / 1e9);
	/* with one worker there is no TX to share */
	if (d->n_workers > 1) {
		print_tx("access", d->access_port, d->access_txq);
		print_tx("WAN", d->wan_port, d->wan_txq);
	}
	if (d->wan_rxq > 1)
		ISTH_LOG_INFO(
			"WAN RX: %u queues (af_packet qpairs), all polled by worker 0", d->wan_rxq);
	ISTH_LOG_INFO("WAN RX: UDP checksums checked %s",
		d->wan_rx_csum ? "by the NIC (RX offload)" : "in software");
	if (d->access_rxq > 1)
		ISTH_LOG_INFO("access RX: %u queues (af_packet qpairs), all polled by worker 0",
			d->access_rxq);
}

/* Workers and controller until a signal or --rounds; then the counters. */
static int
run(struct isthd *d)
{
	int ret = ISTHD_EXIT_OK;

	if (isthd_workers_launch(d) < 0) {
		ISTH_LOG_ERR("workers not launched");
		ret = ISTHD_EXIT_RUNTIME;
	} else if (isthd_control(d) < 0) {
		ret = ISTHD_EXIT_RUNTIME;
	}
	/* a signal, --rounds or a failure: systemd sees the stop begin */
	isthd_supervise_stopping();
	d->stop = true;
	isthd_workers_wait(d);
	isthd_dp_drain_final(d);
	isthd_print_counters(d, stdout);
	return ret;
}

int
main(int argc, char **argv)
{
	struct isthd *d = &daemon_state;
	struct args a = {0};
	pid_t ppid0 = getppid(); /* before anything can re-parent us */
	bool die_with_parent = false;
	unsigned int workers;
	char err[1024];
	int rc, c, ret = ISTHD_EXIT_OK;

	if (isth_version_args("isthmusd", argc, argv))
		return 0;
	isth_log_init("isthmusd");
	for (c = 1; c < argc; c++) {
		if (strcmp(argv[c], "-h") == 0 || strcmp(argv[c], "--help") == 0) {
			usage(stdout);
			return ISTHD_EXIT_OK;
		} else if (strcmp(argv[c], "--config-keys") == 0) {
			/* the loader alone: no EAL, no hugepages, no ports */
			return isthd_config_keys(stdout) ? ISTHD_EXIT_RUNTIME : ISTHD_EXIT_OK;
		}
		die_with_parent |= strcmp(argv[c], "--die-with-parent") == 0;
	}
	/* Die with the parent only when asked (the option, or the testbed: a
	 * kill -9 of scripts/testbed.sh leaves nothing running); a parent
	 * already gone before the prctl cannot signal us: leave. */
	if (isth_notify_die_with_parent(die_with_parent, ppid0) < 0)
		return 1;
	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		ISTH_LOG_ERR("EAL init failed: %s", rte_strerror(rte_errno));
		return ISTHD_EXIT_INIT;
	}
	ret = parse_args(argc - rc, argv + rc, &a);
	if (ret != 0)
		goto eal;
	rc = isthd_config_load(a.config, &d->cfg, err, sizeof(err));
	if (rc) {
		ISTH_LOG_ERR("%s", err);
		ret = ISTHD_EXIT_USAGE;
		goto eal;
	}
	if (a.schedule)
		snprintf(d->cfg.schedule, sizeof(d->cfg.schedule), "%s", a.schedule);
	d->max_rounds = a.rounds;
	rc = isthd_prepare(d, a.epoch, err, sizeof(err));
	if (rc) {
		ISTH_LOG_ERR("%s", err);
		ret = ISTHD_EXIT_USAGE;
		goto eal;
	}
	if (a.check) {
		print_check(d);
		isthd_teardown(d);
		goto eal;
	}
	workers = rte_lcore_count() - 1; /* every lcore but the main one */
	if (workers < 1 || workers > ISTHD_MAX_WORKERS) {
		ISTH_LOG_ERR("need 2 to %u lcores (EAL -l 0,1 or -l 0,1,2,...), given %u: "
			     "the main one runs the controller, each other one a worker",
			ISTHD_MAX_WORKERS + 1, workers + 1);
		isthd_teardown(d);
		ret = ISTHD_EXIT_USAGE;
		goto eal;
	}
	d->n_workers = workers;
	rc = isthd_setup(d, err, sizeof(err));
	if (rc) {
		ISTH_LOG_ERR("%s", err);
		ret = rc == -EINVAL ? ISTHD_EXIT_USAGE : ISTHD_EXIT_INIT;
		goto ports;
	}
	if (d->cfg.telemetry && isthd_telemetry_register(d) < 0)
		ISTH_LOG_WARN("telemetry commands not registered");
	/* [metrics]: its own thread; isthd_teardown stops it */
	if (isthd_metrics_start(d, err, sizeof(err)) < 0) {
		ISTH_LOG_ERR("%s", err);
		ret = ISTHD_EXIT_INIT;
		goto ports;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (isthd_supervise_init() < 0) {
		ret = ISTHD_EXIT_USAGE;
		goto ports;
	}
	print_start(d);
	ret = run(d);
ports:
	isthd_teardown(d);
	isthd_ports_close(d);
eal:
	isthd_eal_cleanup();
	return ret;
}
