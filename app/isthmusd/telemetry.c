/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * /isthmus/... commands on DPDK's telemetry socket, readable with
 * dpdk-telemetry.py (doc/isthmusd.md, "Telemetry"). Callbacks run on the
 * telemetry thread and only read: counters with relaxed loads, tables the
 * controller owns with acquire loads of its published indices.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>

#include <rte_telemetry.h>

#include "isth_version.h"
#include "isthd.h"
#include "metrics.h"

/* The telemetry API of 22.11 passes no user pointer: one daemon per
 * process, set once before the commands are registered. */
static struct isthd *tel;

/*
 * 22.11 cannot unregister a command, and every callback reads state that
 * teardown frees (pacer, rings, backend, pools, schedule). So each callback
 * runs inside enter/leave, and isthd_telemetry_close() - called before
 * anything is torn down - stops the metrics endpoint's thread, refuses new
 * callbacks and waits for running ones. Both sides use sequentially
 * consistent operations: either a callback sees `closed`, or close sees
 * its reader count.
 */
static uint32_t tel_readers;
static bool tel_closed = true;

static bool
tel_enter(void)
{
	__atomic_add_fetch(&tel_readers, 1, __ATOMIC_SEQ_CST);
	if (tel == NULL || __atomic_load_n(&tel_closed, __ATOMIC_SEQ_CST)) {
		__atomic_sub_fetch(&tel_readers, 1, __ATOMIC_SEQ_CST);
		return false;
	}
	return true;
}

static void
tel_leave(void)
{
	__atomic_sub_fetch(&tel_readers, 1, __ATOMIC_SEQ_CST);
}

void
isthd_telemetry_close(void)
{
	/* the metrics endpoint reads the same state: its thread ends first */
	isthd_metrics_stop();
	__atomic_store_n(&tel_closed, true, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&tel_readers, __ATOMIC_SEQ_CST) != 0)
		sched_yield();
}

#define ADD(dict, name, v) rte_tel_data_add_dict_u64(dict, name, v)

static void
add_stat(void *arg, const char *name, uint64_t v, enum isthd_stat_kind kind __rte_unused)
{
	ADD(arg, name, v);
}

static int
do_stats(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *t)
{
	rte_tel_data_start_dict(t);
	/* "off" stays visible wherever counters are read ([auth] mode) */
	rte_tel_data_add_dict_string(t, "auth", tel->auth.on ? "on" : "off");
	isthd_stats_walk(tel, add_stat, t);
	return 0;
}

static int
do_round(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *t)
{
	uint64_t cur = __atomic_load_n(&tel->current, __ATOMIC_ACQUIRE);
	uint64_t pub = __atomic_load_n(&tel->published, __ATOMIC_ACQUIRE);

	rte_tel_data_start_dict(t);
	/* which build answers (lib/version: project version, git revision) */
	rte_tel_data_add_dict_string(t, "version", ISTH_VERSION);
	ADD(t, "island", tel->island);
	ADD(t, "job", tel->cfg.job);
	ADD(t, "started", cur != 0);
	ADD(t, "round", cur ? cur - 1 : 0);
	ADD(t, "published_through", pub ? pub - 1 : 0);
	ADD(t, "epoch_ns", tel->clk.epoch_ns);
	ADD(t, "round_ns", isth_sched_round_ns(tel->sched));
	ADD(t, "clique", cur ? isth_sched_clique(tel->sched, (int64_t)(cur - 1), tel->island) : 0);
	ADD(t, "agg_seq", __atomic_load_n(&tel->workers[0].agg_seq, __ATOMIC_RELAXED));
	return 0;
}

static int
do_backend(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *t)
{
	struct isth_backend_stats st;
	struct isth_backend_caps caps;
	unsigned int i;

	isthd_backend_caps_sum(tel, &caps); /* every worker's */
	isthd_backend_stats_sum(tel, &st);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_string(t, "name", caps.name);
	ADD(t, "mem_bytes", caps.mem_bytes);
	ADD(t, "n_slots", caps.n_slots);
	ADD(t, "max_elems", caps.max_elems);
	for (i = 0; i < st.n; i++)
		ADD(t, st.names[i], st.values[i]);
	return 0;
}

static int
do_pace(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *t)
{
	struct isth_pace_stats ps;

	isthd_pace_stats_sum(tel, &ps);
	rte_tel_data_start_dict(t);
#define S(name, help) ADD(t, #name, ps.name);
	ISTH_PACE_STATS(S)
#undef S
	return 0;
}

static int
do_resend(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *t)
{
	struct isth_resend_stats rs;

	isth_resend_stats(tel->workers[0].agg_ring, &rs);
	rte_tel_data_start_dict(t);
#define S(x, help) ADD(t, #x, rs.x);
	ISTH_RESEND_COUNTERS(S)
#undef S
	ADD(t, "next_seq", isth_resend_next_seq(tel->workers[0].agg_ring));
	ADD(t, "oldest_seq", isth_resend_oldest_seq(tel->workers[0].agg_ring));
	return 0;
}

static int
do_xdp(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *t)
{
	static const char *const names[2] = {"access", "wan"};
	struct isth_xdp_counters c;
	char key[64];

	rte_tel_data_start_dict(t);
	for (int i = 0; i < 2; i++) {
		if (tel->xdp[i] == NULL || isth_xdp_read(tel->xdp[i], &c) < 0)
			continue;
		snprintf(key, sizeof(key), "%s_steered", names[i]);
		ADD(t, key, c.steered);
		snprintf(key, sizeof(key), "%s_passed", names[i]);
		ADD(t, key, c.passed);
		snprintf(key, sizeof(key), "%s_malformed", names[i]);
		ADD(t, key, c.malformed);
		snprintf(key, sizeof(key), "%s_no_xsk", names[i]);
		ADD(t, key, c.no_xsk);
		snprintf(key, sizeof(key), "%s_spoofed", names[i]);
		ADD(t, key, c.spoofed);
	}
	return 0;
}

/* Per worker (worker k sums the chunks with chunk % n_workers == k): what
 * it summed, its backend's outcome, its idle sleeps. */
static int
do_workers(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *t)
{
	unsigned int n = RTE_MAX(tel->n_workers, 1u);
	char key[64];

	rte_tel_data_start_dict(t);
	ADD(t, "n_workers", n);
	/* access TX queues: n (worker k sends stream k on queue k) or 1
	 * (through worker 0); access RX queues, all polled by worker 0 */
	ADD(t, "tx_queues", tel->access_txq);
	ADD(t, "rx_queues", tel->access_rxq);
	/* WAN TX queues: n (worker k sends to its peers on queue k) or 1
	 * (through worker 0); WAN RX queues, all polled by worker 0 */
	ADD(t, "wan_tx_queues", tel->wan_txq);
	ADD(t, "wan_rx_queues", tel->wan_rxq);
	for (unsigned int k = 0; k < n; k++) {
		const struct isthd_worker *w = &tel->workers[k];
		const struct isthd_dp_stats *st = &w->st;
		struct isth_backend_counts bc;

		isth_backend_counts(w->be, &bc);
		/* the list the metrics endpoint exports too (metrics.h) */
#define W(name, counter, help, value) \
	do { \
		snprintf(key, sizeof(key), "w%u_" #name, k); \
		ADD(t, key, value); \
	} while (0);
		ISTHD_WORKER_FIGURES(W)
#undef W
	}
	return 0;
}

/* Per host of the island ([access] island_hosts): its chunk range and
 * what it sent and got (ISTHD_HOST_COUNTERS). */
static int
do_hosts(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *t)
{
	unsigned int n = RTE_MAX(tel->cfg.n_island_hosts, 1u);
	uint64_t v[ISTHD_N_HOST_COUNTERS];
	uint32_t first, nc;
	char key[64];

	rte_tel_data_start_dict(t);
	ADD(t, "n_hosts", n);
	for (unsigned int h = 0; h < n; h++) {
		isthd_host_stats(tel, h, v);
		isthd_host_chunks(tel, h, &first, &nc);
		snprintf(key, sizeof(key), "h%u_first_chunk", h);
		ADD(t, key, first);
		snprintf(key, sizeof(key), "h%u_n_chunks", h);
		ADD(t, key, nc);
		for (unsigned int i = 0; i < ISTHD_N_HOST_COUNTERS; i++) {
			snprintf(key, sizeof(key), "h%u_%s", h, isthd_host_counter_name(i));
			ADD(t, key, v[i]);
		}
	}
	return 0;
}

static int
do_reload(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *t)
{
	tel->reload = true;
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_string(t, "reload", tel->cfg.schedule);
	return 0;
}

/* Every command through tel_enter/tel_leave: after close, -EAGAIN (the
 * client gets null). */
#define GUARDED(name) \
	static int cmd_##name(const char *cmd, const char *params, struct rte_tel_data *t) \
	{ \
		int rc; \
\
		if (!tel_enter()) \
			return -EAGAIN; \
		rc = do_##name(cmd, params, t); \
		tel_leave(); \
		return rc; \
	}
GUARDED(stats)
GUARDED(round)
GUARDED(backend)
GUARDED(pace)
GUARDED(resend)
GUARDED(xdp)
GUARDED(workers)
GUARDED(hosts)
GUARDED(reload)

int
isthd_telemetry_register(struct isthd *d)
{
	int rc = 0;

	tel = d;
	__atomic_store_n(&tel_closed, false, __ATOMIC_SEQ_CST);
	rc |= rte_telemetry_register_cmd("/isthmus/stats", cmd_stats,
		"Data-path counters and drops by reason. No parameters.");
	rc |= rte_telemetry_register_cmd("/isthmus/round", cmd_round,
		"Current round, published rounds, epoch, T, clique. No parameters.");
	rc |= rte_telemetry_register_cmd("/isthmus/backend", cmd_backend,
		"Aggregation/replication backend: capabilities, slots, counters. No parameters.");
	rc |= rte_telemetry_register_cmd("/isthmus/pace", cmd_pace,
		"Egress pacer: queue, rounds, late starts, achieved rate. No parameters.");
	rc |= rte_telemetry_register_cmd("/isthmus/resend", cmd_resend,
		"AGG resend ring: stored, served, expired, GONE. No parameters.");
	rc |= rte_telemetry_register_cmd("/isthmus/xdp", cmd_xdp,
		"XDP steering counters of af_xdp ports (steered, passed, malformed, no_xsk, "
		"spoofed). No parameters.");
	rc |= rte_telemetry_register_cmd("/isthmus/workers", cmd_workers,
		"Per worker lcore: DATA summed (chunk % N), completed, partial, idle, AGG "
		"stream k (agg_out..agg_next_seq). No parameters.");
	rc |= rte_telemetry_register_cmd("/isthmus/hosts", cmd_hosts,
		"Per host of the island: chunk range, DATA in, wrong-host drops, AGGs, NACKs, "
		"resent, GONE. No parameters.");
	rc |= rte_telemetry_register_cmd("/isthmus/reload", cmd_reload,
		"Reload the schedule file; takes effect at a round boundary. No parameters.");
	return rc ? -EINVAL : 0;
}
