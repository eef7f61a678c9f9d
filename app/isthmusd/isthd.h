/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHD_H
#define ISTHD_H

/*
 * isthmusd internals shared by its parts (doc/isthmusd.md, "Source
 * layout"): this header (constants, struct isthd, the one TX path), and
 * by concern worker.h (struct isthd_worker, roles, the loop), repair.h
 * (WAN repair), auth.h (keys and replay windows).
 *
 *   setup.c       pools, backend, rings, rings' first seqs; teardown
 *   ports.c       ports: lookup, queues, XDP programs, close; EAL cleanup
 *   clock.c       wall clock and TSC, conversions
 *   workers.c     the worker array: set-up, roles, launch, RCU readers
 *   worker.c      the loop every worker runs: expire, emit AGGs, release
 *                 its pacer, relay; shutdown drain
 *   rx.c          the RX worker: both ports' RX, parse, verify, admit
 *   handoff.c     the rings between workers: steering, relaying
 *   island.c      frames to the island: headers, GONE, NACK serving
 *   repair.c      WAN repair: state, tables, keeping, frames to peers
 *   repair_serve.c WAN repair, serving side: peers' NACKs, tail copies
 *   repair_nack.c WAN repair, asking side: track peers, NACK with back-off
 *   tree.c        tree rounds: sums up the chunk's tree, results down it
 *   control.c     the controller: round clock, per-round tables, ROUND,
 *                 schedule reload, per-round log
 *   auth.c        [auth]: keys, tag engines, replay windows, seal/verify
 *   auth_dev.c    [auth] on the backend's device
 *   stats.c       counters and drop reasons by name, the exit print, the
 *                 sums over workers
 *   supervise.c   systemd's notify protocol: READY, STATUS, WATCHDOG
 *   telemetry.c   /isthmus/... telemetry commands
 *   metrics.c     [metrics]: GET /metrics from a thread of its own
 *   main.c        command line, EAL, signals, exit codes
 *
 * Ownership notes on each field say who writes it: "init" set-up before
 * launch (read-only after), "ctl" the controller thread, a worker "self"
 * (its own struct isthd_worker), "the RX worker" the one holding
 * ISTHD_ROLE_RX (worker.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_branch_prediction.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "isth_auth.h"
#include "isth_backend.h"
#include "isth_ctr.h"
#include "isth_mbuf.h"
#include "isth_pace.h"
#include "isth_resend.h"
#include "isth_rtab.h"
#include "isth_sched.h"
#include "isth_wire.h"
#include "isth_xdp.h"

#include "config.h"

#define ISTHD_BURST 32
/* Bytes of Ethernet + IPv4 + UDP headers on every frame to the island. */
#define ISTHD_ISLAND_HDR \
	(ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE)
/* Ranges read from one NACK: above max_ranges of a 9216-byte MTU. */
#define ISTHD_MAX_RANGES 576
/* Worker lcores at most (EAL -l: the main lcore plus up to this many). */
#define ISTHD_MAX_WORKERS 16

/* Exit codes (doc/isthmusd.md, "Exit codes"). */
enum {
	ISTHD_EXIT_OK = 0,
	ISTHD_EXIT_RUNTIME = 1, /* failure after start-up */
	ISTHD_EXIT_USAGE = 2, /* bad command line or config */
	ISTHD_EXIT_INIT = 3, /* EAL, port or memory set-up failed */
};

/* Named drop reasons beyond the wire parser's (enum isth_wire_reason). */
#define ISTHD_DROPS(X) \
	X(unknown_job, "job not served by this edge") \
	X(access_not_island, "access-port packet not from the local island") \
	X(access_bad_type, "access-port packet of a type the island does not send") \
	X(access_bad_source, "access-port packet not from the island's configured address") \
	X(access_wrong_host, \
		"island DATA for a chunk another host of the island owns ([access] island_hosts)") \
	X(wan_bad_type, "WAN packet of a type peer edges do not send") \
	X(wan_from_self, "WAN DATA claiming the local island as sender") \
	X(round_early, "DATA for a round not yet published") \
	X(round_late, "DATA for a round already over (WAN: left the aggregation window)") \
	X(pace_full, "pacer queue full") \
	X(pace_oversize, "DATA larger than the pacer burst") \
	X(tx_access, "access port TX queue full") \
	X(tx_wan, "WAN port TX queue full") \
	X(nack_no_mbuf, "no mbuf for a GONE reply") \
	X(ctl_ring_full, "controller message ring full") \
	X(round_no_mbuf, "no mbuf for a ROUND message") \
	X(repair_gone, "peer NACK for DATA no longer (or never) kept") \
	X(repair_mismatch, "kept DATA is not the chunk a NACK names") \
	X(repair_no_mbuf, "no mbuf for a repair or a NACK to a peer") \
	X(data_bad_source, "WAN DATA not from its sender's peer edge address") \
	X(data_bad_chunk, "DATA chunk id not below the round's n_chunks") \
	X(data_bad_count, "DATA element count not the round's for its chunk") \
	X(data_bad_dtype, "DATA element type not the job's") \
	X(data_nonfinite, "peer DATA with a NaN or infinite element (fp32, bf16): not summed") \
	X(data_too_large, "peer DATA with an element above [agg] max_abs: not summed") \
	X(nack_bad_source, "peer NACK not from its sender's peer edge address") \
	X(nack_not_clique, "peer NACK from an island outside the round's clique") \
	X(repair_budget, \
		"chunk repairs refused: the peer's budget (or repeat allowance) for the round is " \
		"spent") \
	X(repair_attempts, \
		"chunk repairs refused: repaired [wan] repair_attempts times to the peer") \
	X(nack_budget, \
		"island NACK cut short: its AGG repair budget (per NACK, per round) is spent") \
	X(auth_format, \
		"auth on: not wire version 2, AUTH not set, or trailer_len not 16 (access) / not " \
		"8 + 16k for k receivers (WAN)") \
	X(auth_key, \
		"auth on: no key (WAN: source address not a peer edge of the site table, or no " \
		"tag for this edge in the list)") \
	X(auth_epoch, "auth on: key epoch not the round's, or not loaded") \
	X(auth_tag, "auth on: the tag does not verify") \
	X(auth_replay, "auth on: seq already accepted in its stream (replay)") \
	X(auth_stale, "auth on: seq older than its stream's replay window") \
	X(auth_ahead, "auth on: seq further ahead of the edge's clock than [auth] seq_ahead") \
	X(auth_host_seq, \
		"auth on, several island hosts: an UP seq not in its host's lane (seq mod hosts " \
		"!= host)") \
	X(auth_seal, "auth on: a message to send could not be sealed") \
	X(tree_not_tree, "PARTIAL for a round without trees") \
	X(tree_not_child, \
		"PARTIAL up from an edge that is not a child of this edge in the chunk's tree") \
	X(tree_not_parent, \
		"tree result down from an edge that is not this edge's parent in the chunk's " \
		"tree") \
	X(tree_bad_bitmap, \
		"PARTIAL up whose bitmap names islands outside its sender's subtree, or a " \
		"result down naming of this edge's subtree neither what it sent up nor " \
		"nothing") \
	X(tree_duplicate, \
		"tree contribution (island DATA, PARTIAL) whose contributors are all summed " \
		"already, " \
		"or a second result") \
	X(tree_overlap, "PARTIAL up whose bitmap overlaps contributors summed already") \
	X(tree_late, \
		"tree contribution after its chunk went on (complete, or its cutoff), or a " \
		"result after the round ended without it") \
	X(tree_no_room, "no mbuf for a PARTIAL or a tree AGG, or the tree AGG ring full") \
	X(tree_nack_bad, \
		"tree NACK not from its sender's peer edge address, not to this edge, " \
		"naming a chunk outside the round, or more than 8 chunks") \
	X(tree_nack_not_edge, \
		"tree NACK naming a chunk whose tree has its sender neither this edge's " \
		"parent nor its child") \
	X(tree_nack_budget, "tree NACK for a chunk resent its most times this round") \
	X(tree_unsent, \
		"PARTIAL or result down still waiting for its pace when its round ended or its " \
		"result came down: not sent") \
	X(worker_ring_full, \
		"several workers: a ring between workers was full (to a chunk's or a peer's " \
		"worker, or back to worker 0)")

enum isthd_drop {
#define X(n, s) ISTHD_DROP_##n,
	ISTHD_DROPS(X)
#undef X
		ISTHD_DROP_MAX
};

#include "auth.h"
#include "repair.h"
#include "tree.h"
#include "worker.h"

/*
 * The per-round log line (doc/isthmusd.md, "Telemetry"): for each entry,
 * label, source (st: struct isthd_dp_stats, be: struct isth_backend_counts),
 * counter and unit; the value printed is the counter's change over the
 * round. Tests and the testbed read "partial N" and "unrepaired N".
 */
#define ISTHD_ROUND_LOG(X) \
	X("in ", st, peer_data, " pkts") \
	X("", st, peer_data_bytes, " B") \
	X("out ", st, data_out, " pkts") \
	X("agg ", st, agg_out, "") \
	X("complete ", be, completed, "") \
	X("partial ", be, partial, "") \
	X("nacks ", st, nacks, "") \
	X("resent ", st, resent, "") \
	X("peer_nacks ", st, peer_nacks_sent, "") \
	X("retries ", st, peer_nack_retries, "") \
	X("unrepaired ", st, peer_chunks_unrepaired, "")

/*
 * The shape every contribution of a round must have (doc/isthmusd.md,
 * "Admission"), from the schedule's payload bytes and the MTU's chunk size:
 * the same figures ROUND tells the island. init writes; read-only after.
 */
struct isthd_shape {
	uint32_t n_chunks; /* chunk ids 0..n_chunks-1 */
	uint16_t chunk_elems; /* elements of every chunk but the last */
	uint16_t last_elems; /* elements of chunk n_chunks-1 */
	uint8_t dtype; /* [isthmusd] dtype; ISTH_WIRE_DTYPE_NONE: any */
	/* bytes of one element in the schedule's payload: 2 when the job is
	 * bf16 ([isthmusd] dtype, or the schedule's dtype line under any),
	 * else 4; the payload is what crosses the links (doc/isthmusd.md) */
	uint8_t elem_bytes;
};

/* Clocks (clock.c). init writes, before launch; read-only after. */
struct isthd_clock {
	uint64_t tsc_hz;
	uint64_t tsc0; /* TSC at rt0 */
	uint64_t rt0; /* CLOCK_REALTIME ns at tsc0 */
	uint64_t epoch_ns; /* start of round 0 */
	uint64_t round_ns; /* T; a reload may not change it */
};

struct isthd {
	/* init: read-only after launch */
	struct isthd_config cfg;
	uint8_t island; /* local island id in the schedule */
	uint32_t n_islands;
	struct isth_wire_limits lim;
	struct isthd_shape shape; /* DATA admission (rx.c) */
	uint16_t access_port, wan_port;
	uint8_t access_mac[6], wan_mac[6];
	/* Ethernet/IPv4/UDP to host h of the island ([access]
	 * island_hosts) with the lengths and checksum 0, and its IPv4
	 * header's sum; written by isthd_frame_template() at set-up, read by
	 * isthd_frame_to_host() on any lcore */
	uint8_t island_frame[ISTHD_ISLAND_MAX_HOSTS][ISTHD_ISLAND_HDR];
	uint32_t island_frame_sum[ISTHD_ISLAND_MAX_HOSTS];
	/* UDP destination port (network order) of AGG/GONE stream k:
	 * island_port + k % island_sockets, from the config only; written by
	 * isthd_frame_template() at set-up, read by isthd_frame_to_island() */
	uint16_t island_dport_be[ISTH_WIRE_MAX_STREAMS];
	struct rte_mempool *pool; /* RX frames, AGG messages */
	struct rte_mempool *hdr_pool; /* fan-out headers and clones */
	struct rte_mempool *ctl_pool; /* ROUND and GONE messages */
	struct rte_ring *ctl_ring; /* ctl -> ISTHD_ROLE_ACCESS_Q0: ROUND frames */
	/* init: peer edge of each island (NULL: self or none) */
	const struct isthd_peer *peer_of[ISTHD_MAX_PEERS];
	/* init: steering programs on af_xdp ports ([access|wan] xdp_iface);
	 * telemetry reads their per-CPU counters */
	struct isth_xdp *xdp[2];
	struct isthd_clock clk;
	/* init: stop after this many rounds (0: never); ctl reads */
	uint64_t max_rounds;
	/* init (before isthd_setup; 0 counts as 1): worker lcores, workers[0
	 * .. n_workers - 1] */
	unsigned int n_workers;
	/* init (isthd_rcu_setup): the round tables' readers, worker k is
	 * reader k (doc/isthmusd.md, "Round tables"); NULL before setup */
	struct rte_rcu_qsbr *qs;
	unsigned int lcore[ISTHD_MAX_WORKERS]; /* isthd_workers_launch */
	/* init (setup.c, port_start): queues of the access port. TX: one
	 * per worker when the PMD offers n_workers of them (worker k puts
	 * AGG stream k's AGGs, resends and GONEs on queue k itself, with
	 * counters of its own), else 1 (workers k >= 1 hand them to worker
	 * 0, ISTHD_ROLE_ACCESS_RELAY). RX: 1, or every queue of an
	 * af_packet port (qpairs: the kernel spreads received frames over
	 * them by flow hash), all polled by the RX worker. The bench
	 * switches access_txq between 1 and n_workers on one edge between
	 * runs (not while workers run; then isthd_workers_roles) */
	uint16_t access_txq, access_rxq;
	/* init (setup.c, port_start): queues of the WAN port. TX: one per
	 * worker when the PMD offers n_workers of them (worker k sends the
	 * island's DATA to its peers, and their repairs, on queue k), else
	 * 1 (ISTHD_ROLE_WAN_RELAY). RX: 1, or every queue of an af_packet
	 * port, all polled by the RX worker */
	uint16_t wan_txq, wan_rxq;
	/* init (setup.c, port_start): the WAN port's PMD checks received UDP
	 * checksums (RX offload on): a frame it marks good is not summed
	 * again in software; bad, unmarked or tunnelled ones are summed
	 * in software (rx.c, wan_rx_queue). The tests set it on net_ring
	 * ports, whose frames carry the flags they were given. */
	bool wan_rx_csum;
	/* WAN repair: see the struct for who writes what */
	struct isthd_repair rep;
	/* authentication: see the struct for who writes what (three groups,
	 * each on cache lines of its own) */
	struct isthd_auth auth;
	/* tree rounds: see the struct for who writes what */
	struct isthd_tree tree;

	/* The controller's block: ctl writes, workers read only what is said */
	/* ctl writes, workers read (acquire): newest round published, +1 (0: none) */
	uint64_t published __rte_cache_aligned;
	/* ctl writes, workers read (acquire): round running now, +1 (0: before epoch) */
	uint64_t current;
	/* ctl writes: the schedule in force; a reload swaps it at a boundary */
	struct isth_sched *sched;
	/* ctl only */
	struct {
		struct isth_sched *next_sched; /* waiting for its boundary */
		uint64_t next_from; /* first round of next_sched */
		/* next round to give worker k's pacer (publish_pace) */
		uint64_t pace_published[ISTHD_MAX_WORKERS];
		/* rounds given to worker k's backend, +1 (publish_tables) */
		uint64_t be_published[ISTHD_MAX_WORKERS];
		/* the first round this edge takes part in, + 1 (0: not
		 * decided yet): round 0 when started before the epoch;
		 * after it (a restart) the first round whose tables can be
		 * published before it starts (control.c, join) */
		uint64_t join1;
		/* auth on: next ROUND seq (a stream of its own), from the
		 * wall clock at set-up */
		uint64_t seq_round;
		/* counters at the previous boundary, for the round log */
		struct isthd_dp_stats last_st;
		struct isth_backend_counts last_be;
		/* the controller's own counters: drop[ctl_ring_full] and
		 * drop[round_no_mbuf] only (summed with the workers') */
		struct isthd_dp_stats ctl_st;
	};

	/* anyone writes true to stop; workers read at every pass */
	volatile bool stop __rte_cache_aligned;
	/* telemetry/signal sets, ctl clears: reload the schedule file */
	volatile bool reload;

	/* the workers (worker.h): workers[k] is worker k, each on cache
	 * lines of its own */
	struct isthd_worker workers[ISTHD_MAX_WORKERS];
};

/* setup.c */
int isthd_prepare(struct isthd *d, uint64_t epoch_override, char *err, size_t err_size);
/*
 * Whether schedule @p s (file @p path) was planned for what @p cfg runs:
 * its 'replication' line against [wan] replication, its 'dtype' line
 * against [isthmusd] dtype (any: unchecked). A file that states neither
 * (older, hand-written) agrees. Start-up, --check and a reload ask.
 * @return 0, or -EINVAL with "path:line: ..." naming the config key in @p err.
 */
int isthd_sched_agrees(const struct isthd_config *cfg, const struct isth_sched *s, const char *path,
	char *err, size_t err_size);
int isthd_setup(struct isthd *d, char *err, size_t err_size);
void isthd_teardown(struct isthd *d);

/* ports.c */
/* Start both ports with a TX queue per worker where the PMD has them,
 * their MACs and XDP programs; set-up. 0 or -errno with @err set. */
int isthd_ports_start(struct isthd *d, char *err, size_t err_size);
void isthd_ports_close(struct isthd *d);
uint16_t isthd_port_lookup(const char *dev, int *rc);
/* rte_eal_cleanup() and remove the runtime directory; every exit of main */
void isthd_eal_cleanup(void);

/* clock.c */
uint64_t isthd_tsc_hz_measure(uint64_t span_ns, uint64_t fallback);
uint64_t isthd_ns_to_tsc(const struct isthd *d, uint64_t ns);
uint64_t isthd_tsc_to_ns(const struct isthd *d, uint64_t tsc);

/* control.c */
int isthd_control(struct isthd *d);
int isthd_control_step(struct isthd *d, uint64_t now_ns);

/* supervise.c: systemd's notify protocol, from the controller only */
int isthd_supervise_init(void);
void isthd_supervise_tick(struct isthd *d, bool reload);
void isthd_supervise_reloading(void);
void isthd_supervise_stopping(void);

/* telemetry.c */
int isthd_telemetry_register(struct isthd *d);
/* Stop answering /isthmus/... and wait for callbacks still running, and
 * stop the metrics thread (metrics.c); before teardown (22.11 cannot
 * unregister commands). Idempotent. */
void isthd_telemetry_close(void);

/* stats.c: the one place that sums over workers */
enum isthd_stat_kind {
	ISTHD_STAT_COUNTER, /* ISTHD_COUNTERS */
	ISTHD_STAT_DROP, /* drop_<reason>, wire parser's and ours */
	ISTHD_STAT_GAUGE, /* a value now (mempool in use) */
};
typedef void (*isthd_stat_fn)(
	void *arg, const char *name, uint64_t value, enum isthd_stat_kind kind);
/* Every counter, drop and gauge by name, in a fixed order. Any thread. */
void isthd_stats_walk(const struct isthd *d, isthd_stat_fn fn, void *arg);
/* Every worker's counters and the controller's summed into @st (relaxed
 * loads). Any thread. */
void isthd_stats_sum(const struct isthd *d, struct isthd_dp_stats *st);
void isthd_print_counters(const struct isthd *d, FILE *f);
/* Every worker's pacer (doc/isthmusd.md, "Workers"): counters summed,
 * the round_* gauges of the one furthest in the newest round, the
 * earliest start lag. Any thread. */
void isthd_pace_stats_sum(const struct isthd *d, struct isth_pace_stats *ps);
/* Sums over every worker's backend: counters, named stats, caps. */
void isthd_backend_counts_sum(const struct isthd *d, struct isth_backend_counts *c);
void isthd_backend_stats_sum(const struct isthd *d, struct isth_backend_stats *st);
void isthd_backend_caps_sum(const struct isthd *d, struct isth_backend_caps *caps);
const char *isthd_drop_name(unsigned int i);
/* [access] island_hosts: host @host's counters (ISTHD_HOST_*) summed over
 * workers, and its chunk range [first, first + n) of every round. Any
 * thread. */
const char *isthd_host_counter_name(unsigned int i);
void isthd_host_stats(const struct isthd *d, unsigned int host, uint64_t v[ISTHD_N_HOST_COUNTERS]);
void isthd_host_chunks(const struct isthd *d, unsigned int host, uint32_t *first, uint32_t *n);

/* Bytes of a chunk as the schedule's payload counts them: max_elems
 * elements of the job's type (shape.elem_bytes, set by isthd_prepare; a
 * daemon assembled without it, as unit tests do, counts 4-byte ones). */
static inline uint64_t
isthd_chunk_bytes(const struct isthd *d)
{
	return (uint64_t)d->lim.max_elems * (d->shape.elem_bytes ? d->shape.elem_bytes : 4u);
}

/* Any worker: round @r's repair table, or NULL if not published; valid until
 * its next quiescent state (doc/isthmusd.md, "Round tables"). */
static inline const struct isthd_repair_round *
isthd_repair_round(const struct isthd *d, uint64_t r)
{
	const struct isthd_repair_round *t = isth_rtab_get(d->rep.rtab, (uint32_t)(r & 3));

	return t != NULL && t->round == r ? t : NULL;
}

/* Worker k: the round tables it read are no longer in use (once per
 * poll-loop iteration); offline around an idle sleep and after its loop,
 * so a sleeping or stopped worker never holds the writer up. */
static inline void
isthd_rcu_quiescent(const struct isthd *d, unsigned int k)
{
	if (d->qs != NULL)
		rte_rcu_qsbr_quiescent(d->qs, k);
}
static inline void
isthd_rcu_online(const struct isthd *d, unsigned int k)
{
	if (d->qs != NULL)
		rte_rcu_qsbr_thread_online(d->qs, k);
}
static inline void
isthd_rcu_offline(const struct isthd *d, unsigned int k)
{
	if (d->qs != NULL)
		rte_rcu_qsbr_thread_offline(d->qs, k);
}

/*
 * The worker that sends the island's DATA of a round whose peers are
 * @peers to peer island @s (doc/isthmusd.md, "Workers"): @s's rank among
 * them, mod N, so that every round's peers spread evenly over the
 * workers; 0 with one worker or [wan] replication = network (one copy to
 * the clique's group). Any thread.
 */
static inline unsigned int
isthd_egress_worker(const struct isthd *d, uint64_t peers, unsigned int s)
{
	if (d->n_workers <= 1 || d->cfg.wan_repl_network)
		return 0;
	return (unsigned int)__builtin_popcountll(peers & ((1ull << s) - 1)) % d->n_workers;
}

/* The peers of @peers (a round's) that worker @k sends to. */
static inline uint64_t
isthd_egress_peers(const struct isthd *d, uint64_t peers, unsigned int k)
{
	uint64_t mine = 0, left = peers;

	if (d->n_workers <= 1 || d->cfg.wan_repl_network)
		return k == 0 ? peers : 0;
	for (unsigned int rank = 0; left != 0; rank++, left &= left - 1)
		if (rank % d->n_workers == k)
			mine |= left & -left;
	return mine;
}

/*
 * The host of the island that owns chunk @c of every round (doc/isthmusd.md,
 * "An island of several hosts"): host k of K owns [floor(k*C/K),
 * floor((k+1)*C/K)), C = the round's n_chunks (the ROUND's), so the
 * owner is the largest k with floor(k*C/K) <= c, floor(((c+1)*K - 1)/C).
 * 0 with one host. Any thread; per packet.
 */
static inline unsigned int
isthd_chunk_host(const struct isthd *d, uint32_t c)
{
	uint32_t k = d->cfg.n_island_hosts, n = d->shape.n_chunks;
	uint64_t h;

	if (likely(k <= 1) || unlikely(n == 0))
		return 0;
	h = ((uint64_t)c + 1) * k - 1;
	h /= n;
	return h < k ? (unsigned int)h : k - 1;
}

/* The island host with IPv4 address @ip (host order), or -1: one compare
 * per host ([access] island_hosts, at most 16). Per packet. */
static inline int
isthd_island_host_of(const struct isthd *d, uint32_t ip)
{
	for (unsigned int h = 0; h < d->cfg.n_island_hosts; h++)
		if (d->cfg.island_hosts[h].ip == ip)
			return (int)h;
	return -1;
}

/*
 * Why peer DATA of @round is refused by round (ISTHD_DROP_MAX: not): the
 * aggregator holds the newest round published and [agg] window - 1
 * before it (@pub: d->published, the newest published + 1). Checked
 * before a DATA may move its replay window (rx.c; auth_dev.c for the
 * device's verdicts), so that one the aggregator refuses never does.
 */
static inline enum isthd_drop
isthd_wan_round_refusal(const struct isthd *d, uint32_t round, uint64_t pub)
{
	if (unlikely(round >= pub))
		return ISTHD_DROP_round_early;
	if (unlikely(round + (uint64_t)d->cfg.agg_window < pub))
		return ISTHD_DROP_round_late;
	return ISTHD_DROP_MAX;
}

/* The drop reason of a pacer's refusal (isth_pace_enqueue's -errno). */
static inline enum isthd_drop
isthd_pace_refusal(int rc)
{
	return rc == -ENOBUFS ? ISTHD_DROP_pace_full : ISTHD_DROP_pace_oversize;
}

/*
 * The one TX path: worker @w's @n frames for @side, on its TX queue of that
 * port (only it uses that queue), or through its ring to the owner of
 * queue 0 where the port has one TX queue (ISTHD_ROLE_*_RELAY). What the
 * queue refuses is freed and counted tx_access / tx_wan, what the ring
 * refuses worker_ring_full, in @w's counters: no retry (a refused AGG stays
 * in its stream's resend ring and the island NACKs it; a refused DATA is
 * repaired on a peer's NACK). Per burst: inline.
 */
static inline void
isthd_worker_tx(struct isthd_worker *w, enum isthd_side side, struct rte_mbuf **m, unsigned int n)
{
	const struct isthd_tx *t = &w->tx[side];
	unsigned int k;

	if (n == 0)
		return;
	if (likely(t->ring == NULL)) {
		k = rte_eth_tx_burst(t->port, t->q, m, (uint16_t)n);
		isth_ctr_add(side == ISTHD_WAN ? &w->st.wan_tx : &w->st.access_tx, k);
		if (unlikely(k < n))
			isth_ctr_add(&w->st.drop[side == ISTHD_WAN ? ISTHD_DROP_tx_wan
								   : ISTHD_DROP_tx_access],
				n - k);
	} else {
		k = rte_ring_enqueue_burst(t->ring, (void **)m, n, NULL);
		if (unlikely(k < n))
			isth_ctr_add(&w->st.drop[ISTHD_DROP_worker_ring_full], n - k);
	}
	if (unlikely(k < n))
		rte_pktmbuf_free_bulk(m + k, n - k);
}

#endif
