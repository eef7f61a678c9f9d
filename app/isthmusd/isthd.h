/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHD_H
#define ISTHD_H

/*
 * isthmusd internals shared by its parts:
 *
 *   setup.c      pools, ports, backend, pacer, resend rings; teardown
 *   clock.c      wall clock and TSC, conversions
 *   datapath.c   the worker lcore: RX both ports, classify, pace,
 *                replicate, aggregate, emit, serve the island's NACKs
 *   repair.c     WAN repair between edges: keep, due times, serve NACKs
 *   repair_nack.c WAN repair between edges: track peers, NACK with back-off
 *   control.c    the controller: round clock, per-round tables, ROUND,
 *                schedule reload, per-round log
 *   auth.c       [auth]: keys, tag engines, replay windows, seal/verify
 *   stats.c      counters and drop reasons by name, the exit print
 *   telemetry.c  /isthmus/... telemetry commands
 *   worker.c     several workers: steering chunks to the worker that
 *                aggregates them, the other workers' loop, sums
 *   main.c       command line, EAL, signals, exit codes
 *
 * Ownership notes on each field say who writes it. "dp" is worker 0 (the
 * only worker when there is one), "ctl" the controller thread, "init" setup
 * before launch; struct isthd_shard is another worker's.
 */
#include <stdbool.h>
#include <stdint.h>

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
	X(wan_bad_type, "WAN packet of a type peer edges do not send") \
	X(wan_from_self, "WAN DATA claiming the local island as sender") \
	X(round_early, "island DATA for a round not yet published") \
	X(round_late, "island DATA for a round already over") \
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
	X(nack_bad_source, "peer NACK not from its sender's peer edge address") \
	X(nack_not_clique, "peer NACK from an island outside the round's clique") \
	X(repair_budget, \
		"chunk repairs refused: the peer's budget (or repeat allowance) for the round is " \
		"spent") \
	X(repair_attempts, \
		"chunk repairs refused: repaired [wan] repair_attempts times to the peer") \
	X(nack_budget, \
		"island NACK cut short: its AGG repair budget (per NACK, per round) is spent") \
	X(auth_format, "auth on: not wire version 2, AUTH not set or trailer_len not 16") \
	X(auth_key, "auth on: no key (WAN: source address not a peer edge of the site table)") \
	X(auth_epoch, "auth on: key epoch not the round's, or not loaded") \
	X(auth_tag, "auth on: the tag does not verify") \
	X(auth_replay, "auth on: seq already accepted in its stream (replay)") \
	X(auth_stale, "auth on: seq older than its stream's replay window") \
	X(auth_seal, "auth on: a message to send could not be sealed") \
	X(worker_ring_full, \
		"several workers: a ring between workers was full (to a chunk's or a peer's " \
		"worker, or back to worker 0)")

enum isthd_drop {
#define X(n, s) ISTHD_DROP_##n,
	ISTHD_DROPS(X)
#undef X
		ISTHD_DROP_MAX
};

/*
 * Data-path counters, one list: the struct, /isthmus/stats and the final
 * print are generated from it (lib/ctr convention).
 */
#define ISTHD_COUNTERS(X) \
	X(access_rx, "frames received on the access port") \
	X(wan_rx, "frames received on the WAN port") \
	X(access_tx, "frames sent to the island") \
	X(wan_tx, "frames sent to peer edges") \
	X(data_in, "island DATA accepted for the pacer") \
	X(data_in_bytes, "payload bytes of data_in") \
	X(data_out, "island DATA released by the pacer") \
	X(peer_data, "peer DATA handed to the backend") \
	X(peer_data_bytes, "payload bytes of peer_data") \
	X(agg_out, "AGG messages sent to the island") \
	X(agg_out_bytes, "payload bytes of agg_out") \
	X(agg_host_sealed, \
		"auth on, AGGs sealed by the device: sealed again on the host (seq out of step)") \
	X(nacks, "NACKs from the island") \
	X(resent, "AGGs resent to the island") \
	X(gone, "GONE replies sent to the island") \
	X(round_msgs, "ROUND messages sent") \
	X(idle_sleeps, "idle sleeps of the worker") \
	X(peer_nacks_sent, "chunk NACKs sent to peer edges") \
	X(peer_nack_retries, \
		"NACK rounds to a peer after the first for the same round (back-off)") \
	X(peer_chunks_unrepaired, "peer chunks still missing when NACKing stopped") \
	X(peer_nacks_rx, "chunk NACKs received from peer edges") \
	X(repairs_sent, "DATA resent to a peer edge") \
	X(peer_unrepaired_tail, \
		"of peer_chunks_unrepaired: after the last chunk seen from that peer (a tail)") \
	X(peer_unrepaired_unasked, "of peer_chunks_unrepaired: of a (round, peer) never NACKed") \
	X(peer_repairs_rx, "repairs from peer edges that filled a missing chunk") \
	X(peer_repairs_late, "of peer_repairs_rx: arrived after NACKing stopped (cutoff)") \
	X(peer_data_late, "peer DATA (not a repair) first seen after NACKing stopped") \
	X(tail_copies_sent, "last chunks of the island's DATA sent again to a peer unasked") \
	X(sealed, \
		"auth on: frames to the island this worker's tag engine sealed (its AGG " \
		"stream's AGGs, resends, GONEs)")

enum { ISTHD_N_COUNTERS = 0 ISTHD_COUNTERS(ISTH_CTR_ONE) };

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

/* Written by: dp (relaxed stores), except drop[ctl_ring_full] and
 * drop[round_no_mbuf], which only ctl writes (one writer per counter);
 * read by: ctl, telemetry (relaxed loads). */
struct isthd_dp_stats {
	ISTHD_COUNTERS(ISTH_CTR_FIELD)
	uint64_t wire_drop[ISTH_WIRE_REASON_MAX];
	uint64_t drop[ISTHD_DROP_MAX];
};

/* dp only: one sender's chunks of one round, seen so far, and when to
 * NACK what is missing (repair.c, tail_check). */
struct isthd_rx_track {
	uint64_t round; /* UINT64_MAX: unused */
	uint64_t last_due; /* ns: when its last chunk is due here, from
				 * the newest in-order arrival and its rate,
				 * planned or observed, whichever is slower
				 * (0: nothing arrived, the plan decides) */
	uint64_t nack_at; /* ns: next NACK of what is missing (0: none) */
	uint64_t backoff_ns; /* a round trip + tail_wait: the least wait
				 * after a NACK (+ its repair train) */
	uint32_t next; /* highest chunk seen + 1 */
	uint32_t n_rx; /* distinct chunks seen */
	uint16_t nacks; /* NACK rounds sent (gap, tail, retries) */
	uint8_t tail_due; /* the tail was due: NACK every missing chunk */
	uint8_t done; /* complete, or NACKing stopped at the cutoff */
	/* the stream's observed rate (isthd_repair_track): when its first
	 * DATA that was not a repair arrived (0: none yet), and its chunk */
	uint64_t first_ns;
	uint32_t first_chunk;
	/* a last-chance NACK's copies still to leave (last_nack_copies - 1
	 * at most) and when the next one is due: tail_copies_after apart,
	 * not back to back, so that one loss burst does not take every copy
	 * and every copy's repairs (isthd_repair_tail_check) */
	uint8_t copies_left;
	uint32_t copy_from; /* the first chunk the copies name */
	uint64_t copy_at;
	/* the chunk after the last one the copies name (0: up to the
	 * stream's end, or its newest chunk before the tail is due): a gap
	 * NACK's copies name that gap only (isthd_repair_track) */
	uint32_t copy_to;
};

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
};

/*
 * Repair budget of one peer for one round of our island's DATA (dp only):
 * chunks repaired to it so far. Two rounds are kept, like rep.base.
 */
/* Chunks of a round whose repairs to a peer are tracked one by one
 * (isthd_repair_serve: charged once, served up to repair_attempts times):
 * 4096 x 8 B x 2 rounds x 64 peers = 4 MiB at most. */
#define ISTHD_SERVED_CHUNKS 4096u

struct isthd_repair_budget {
	uint64_t round1; /* round + 1; 0: unused */
	uint32_t used; /* chunks repaired to the peer */
	/* peers only: repairs of a chunk already repaired to the peer in
	 * the round (isthd_repair_serve; at most budget_chunks) */
	uint32_t repeats;
};

/* Per (peer island, round & 1, chunk): the chunk's repairs to that peer in
 * the round (isthd_repair_serve: the first one is charged to
 * budget[][].used, the others to budget[][].repeats, up to [wan]
 * repair_attempts in all). */
struct isthd_repair_served {
	/* (uint32_t)(round + 1) the entry holds: any other value reads as
	 * empty, so a new round needs no clearing pass */
	uint32_t round1;
	uint32_t serves; /* repairs of the chunk to the peer */
};

/* Segments of a round's chunk -> ring seq map (struct isthd_egress). */
#define ISTHD_KEEP_SEGS 4

/* Where a worker's WAN repair ring keeps the chunks of one round
 * (isthd_repair_keep): chunk c at seq seg[i].base + c, seg[i] the last
 * segment with from <= c. Chunks leave in order, so one segment, unless a
 * chunk never reached the ring (a full queue on the way): the next one
 * starts a segment, so that what follows keeps its own seq; beyond
 * ISTHD_KEEP_SEGS the serve's check refuses what no longer maps
 * (repair_mismatch). */
struct isthd_keep_map {
	uint64_t round;
	uint32_t n_seg;
	struct {
		uint32_t from;
		uint64_t base;
	} seg[ISTHD_KEEP_SEGS];
};

/*
 * The island's DATA as one worker sends it (doc/isthmusd.md, "Workers"):
 * worker k sends each round to the peers of rank k, k + N, ... among the
 * round's peers (isthd_egress_worker; all of them with one worker or
 * network replication). It paces the stream
 * with a pacer of its own (the round's whole plan: every peer gets the
 * stream at the planned rate), replicates it to its peers, keeps it for
 * their NACKs and serves those within each peer's budget, and sends their
 * tail copies. A peer's flow so stays on one worker and one WAN TX queue,
 * in chunk order, which the peer edge's WAN repair relies on (it NACKs a
 * gap at once). Created by init; written by that worker only.
 */
struct isthd_egress {
	struct isth_pace *pace; /* init: the worker's pacer */
	/* init: the island's DATA as released, for peer NACKs; NULL:
	 * [wan] repair = no */
	struct isth_resend *ring;
	/* where the ring keeps the round each slot (r & 1) holds */
	struct isthd_keep_map base[2];
	/* when the last [wan] tail_copies chunks of round tail[i].round
	 * (slot r & 1) go again to this worker's peers unasked (0: sent, or
	 * not due yet) */
	struct {
		uint64_t round;
		uint64_t at_ns;
	} tail[2];
	/* per peer island (this worker's only), per round & 1 */
	struct isthd_repair_budget budget[ISTHD_MAX_PEERS][2];
	/* init: n_islands * 2 * served_chunks entries, the round's first
	 * served_chunks chunks (beyond: every repair charged to .used) */
	struct isthd_repair_served *served;
};

/* WAN repair between edges (repair.c; doc/isthmusd.md, "WAN repair"). */
struct isthd_repair {
	/* init: read-only after launch */
	uint32_t n_chunks; /* chunks per contribution per round */
	uint32_t rx_words; /* 64-bit words per (round slot, sender) bitmap */
	/* dp only: chunks received per (round & 3, sender) */
	struct isthd_rx_track *rx;
	uint64_t *rx_bits;
	uint64_t tail_next; /* dp only: oldest round with tails to check */
	/* init: chunks one peer may get repaired per round (one round's
	 * stream plus an allowance for repairs that were lost) */
	uint32_t budget_chunks;
	uint32_t served_chunks; /* init: min(n_chunks, ISTHD_SERVED_CHUNKS) */
	/* init: the most chunk repairs NACKs can get one peer per round
	 * (isthd_repair_serve; doc/security.md); 0: [wan] repair = no */
	uint64_t peer_max;
	/* init: AGG repairs one island NACK may get (half a round's AGGs),
	 * and the island per round of the edge's clock (one round's) */
	uint32_t island_nack_cap;
	uint32_t island_budget;
	/* dp only: the island's budget for the round running (+1) */
	struct isthd_repair_budget island;
	/* round r's repair table (struct isthd_repair_round) in slot r & 3
	 * (lib/rtab): ctl writes (isthd_repair_publish, before published),
	 * every worker reads through isthd_repair_round() */
	struct isth_rtab *rtab;
	/* init: environment ISTHD_REPAIR_TRACE set: every NACK sent, chunk
	 * served or refused and repair received goes to stderr, one line
	 * each (a diagnosis aid, isthd_repair_trace(); off: one predictable
	 * branch on the repair paths, none per in-order DATA) */
	bool trace;
};

/* One repair event to stderr when d->rep.trace (isthd_repair_trace). */
#define ISTHD_REPAIR_TRACE(d, ...) \
	do { \
		if (unlikely((d)->rep.trace)) \
			isthd_repair_trace(d, __VA_ARGS__); \
	} while (0)

/* One round's WAN-repair table. Written by: ctl, in a buffer no worker
 * sees; read-only once published (lib/rtab); read by: any worker, until its
 * next quiescent state. */
struct isthd_repair_round {
	uint64_t round;
	uint64_t expected;
	/* per sender s, ns from the round's start: when its last
		 * chunk is due here by the plan (offset + payload at its
		 * rate + latency; until its DATA arrives), and the last
		 * moment to NACK it (deadline - one-way latency) */
	uint64_t tail_at[ISTHD_MAX_PEERS];
	uint64_t cutoff[ISTHD_MAX_PEERS];
	/* ns per chunk at s's planned rate (0: unknown), and the
		 * first wait between NACKs (a round trip + tail_wait) */
	uint64_t chunk_ns[ISTHD_MAX_PEERS];
	uint64_t backoff_ns[ISTHD_MAX_PEERS];
};

/*
 * One load of the key file: its keys and a tag engine for each thread
 * that seals or verifies (an ipsec-mb engine per worker, an OpenSSL one
 * for the controller). It lives in a buffer of auth.sets (lib/rtab):
 * filled by ctl before it is published, read-only after; worker k uses
 * dp[k] only within one pass of its loop, and ctl frees the engines only
 * once every worker has passed a quiescent state since the set was
 * replaced (doc/isthmusd.md, "Authentication").
 */
struct isthd_keyset {
	struct isth_auth *keys;
	struct isth_auth_engine *ctl; /* the controller's (ROUND) */
	uint64_t gen; /* 1 at start-up, +1 per reload: worker 0 sees a new set */
	unsigned int n_dp;
	struct isth_auth_engine *dp[ISTHD_MAX_WORKERS]; /* worker k's (ipsec-mb) */
};

/* Authentication (auth.c; doc/isthmusd.md, "Authentication"). */
struct isthd_auth {
	/* init: read-only after launch */
	bool on; /* [auth] mode = on: wire version 2 on both ports */
	struct isth_auth
		*keys; /* init: loaded by prepare, for --check and setup; NULL after setup */
	/* dp writes (at the start of each pass, isthd_auth_dp_step), dp
	 * reads: the key set worker 0 uses in this pass, its engine, the
	 * generation its replay window slots follow, and the epoch each
	 * slot holds (-1: free) */
	const struct isthd_keyset *ks_dp;
	struct isth_auth_engine *dp;
	int16_t slot_epoch[ISTH_AUTH_MAX_EPOCHS];
	/* ctl only: the key set published (the controller's), its engine,
	 * and the set it replaced while it waits for every worker's
	 * quiescent state (NULL: none) */
	struct isthd_keyset *ks_ctl;
	struct isth_auth_engine *ctl;
	struct isthd_keyset *ks_old;
	/* the key sets (lib/rtab, one slot, one spare buffer, readers d->qs):
	 * ctl publishes, every worker reads slot 0 once per pass */
	struct isth_rtab *sets;
	uint64_t gen_dp; /* dp only: gen of the set the windows follow */
	/* dp only: replay windows per (epoch slot, dir, sender, type) of
	 * every stream received, sized at start-up (isthd_auth_window) */
	struct isth_auth_replay *win;
	uint64_t *words;
	uint32_t win_bits;
	unsigned int n_win;
	/* next seq of the streams the edge starts, from CLOCK_REALTIME ns
	 * at start-up: NACK and GONE (dp writes), ROUND (ctl writes) */
	uint64_t seq_nack, seq_gone, seq_round;
	/* init (setup, from the backend's caps): the backend's device
	 * verifies WAN DATA tags / seals AGGs (auth_dev.c) */
	bool dev_verify, dev_seal;
};

/* One peer DATA handed by worker 0 to the worker of its chunk: the frame
 * and its parse (whose pointers point into the frame). */
struct isthd_shard_msg {
	struct rte_mbuf *m;
	struct isth_wire_pkt p;
};

/* The island's DATA handed by worker 0 to another worker's pacer: a
 * reference, and its payload bytes as worker 0's admission counted them. */
struct isthd_pace_msg {
	struct rte_mbuf *m;
	uint64_t bytes;
};

/*
 * Worker k >= 1 of several (worker.c; doc/isthmusd.md, "Workers"): it
 * aggregates the peer DATA of the chunks with chunk % n_workers == k in a
 * backend instance of its own. One per worker, on cache lines of its own:
 * nothing here is written by two threads.
 */
struct isthd_shard {
	/* init: read-only after launch */
	struct isthd *d; /* the edge: configuration, clock, stop flag */
	unsigned int id; /* k */
	struct isth_backend *be; /* this worker's aggregation state */
	struct rte_ring *in; /* worker 0 (SP) -> k (SC): struct isthd_shard_msg */
	/* k (SP) -> worker 0 (SC): finished frames to the island (AGGs of
	 * stream k numbered, resends, GONEs; sealed by k, auth on), which
	 * worker 0 puts on the wire; used only when the access port has one
	 * TX queue (d->access_txq == 1), else k sends on TX queue k */
	struct rte_ring *out;
	/* worker 0 (SP) -> k (SC): the island's DATA for k's pacer (struct
	 * isthd_pace_msg: a reference each, sealed; [pace] queue entries,
	 * as deep as the pacer's queue) */
	struct rte_ring *pace_in;
	/* k (SP) -> worker 0 (SC): frames for the WAN port (the island's
	 * DATA replicated, repairs), which worker 0 puts on WAN TX queue 0;
	 * used only when the WAN port has one TX queue (d->wan_txq == 1),
	 * else k sends on WAN TX queue k */
	struct rte_ring *wan_out;
	/* what follows worker k writes: cache lines of its own, away from
	 * the pointers above that worker 0 reads at every hand-off */
	/* k only: next round whose deadline it enforces on its backend */
	uint64_t expire_next __rte_cache_aligned;
	/* AGG stream k (doc/protocol.md, "AGG streams"): created by setup,
	 * then k only (ctl reads its stats): numbers stream k's AGGs (seq
	 * from CLOCK_REALTIME ns with auth on) and serves the island's
	 * NACKs of stream k */
	struct isth_resend *agg_ring;
	/* k only: next GONE seq of stream k (auth on; from CLOCK_REALTIME) */
	uint64_t seq_gone;
	/* k only (auth on): its tag engine in this pass, from the key set
	 * published (isthd_auth_shard_step at the start of each pass); it
	 * seals stream k's AGGs, resends and GONEs */
	struct isth_auth_engine *eng;
	/* k only: resends to the island this round (its share of the edge's
	 * [repair] island budget) */
	struct isthd_repair_budget nack_budget;
	/* the island's DATA to this worker's peers (struct isthd_egress) */
	struct isthd_egress eg;
	/* k writes (relaxed), ctl and telemetry read: what it summed
	 * (peer_data, peer_data_bytes), idle_sleeps, and its stream's
	 * agg_out, nacks, resent, gone, sealed and their drops; with a TX
	 * queue of its own, access_tx and drop[tx_access] of that queue;
	 * for its peers data_out, repairs_sent, tail_copies_sent, the pacer
	 * and repair drops, and with a WAN TX queue of its own wan_tx and
	 * drop[tx_wan] */
	struct isthd_dp_stats st __rte_cache_aligned;
} __rte_cache_aligned;

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
	struct isthd_shape shape; /* DATA admission (datapath.c) */
	uint16_t access_port, wan_port;
	uint8_t access_mac[6], wan_mac[6];
	/* Ethernet/IPv4/UDP to the island with the lengths and checksum 0,
	 * and its IPv4 header's sum; written by isthd_frame_template() at
	 * set-up, read by isthd_frame_to_island() on any lcore */
	uint8_t island_frame[ISTHD_ISLAND_HDR];
	uint32_t island_frame_sum;
	/* UDP destination port (network order) of AGG/GONE stream k:
	 * island_port + k % island_sockets, from the config only; written by
	 * isthd_frame_template() at set-up, read by isthd_frame_to_island() */
	uint16_t island_dport_be[ISTH_WIRE_MAX_STREAMS];
	struct rte_mempool *pool; /* RX frames, AGG messages */
	struct rte_mempool *hdr_pool; /* fan-out headers and clones */
	struct rte_mempool *ctl_pool; /* ROUND and GONE messages */
	struct isth_backend *be;
	struct isth_resend *agg_ring; /* AGGs sent to the island */
	struct rte_ring *ctl_ring; /* ctl -> dp: frames to send to the island */
	/* init: peer edge of each island (NULL: self or none) */
	const struct isthd_peer *peer_of[ISTHD_MAX_PEERS];
	/* init: steering programs on af_xdp ports ([access|wan] xdp_iface);
	 * telemetry reads their per-CPU counters */
	struct isth_xdp *xdp[2];
	struct isthd_clock clk;
	/* init: stop after this many rounds (0: never); ctl reads */
	uint64_t max_rounds;
	/* init (before isthd_setup; 0 counts as 1): worker lcores. Worker 0
	 * is this struct's data path; worker k >= 1 is shard[k] (worker.c) */
	unsigned int n_workers;
	/* init (isthd_rcu_setup): the round tables' readers, worker k is
	 * reader k (doc/isthmusd.md, "Round tables"); NULL before setup */
	struct rte_rcu_qsbr *qs;
	struct isthd_shard *shard[ISTHD_MAX_WORKERS];
	unsigned int lcore[ISTHD_MAX_WORKERS]; /* isthd_workers_launch */
	/* dp only: peer DATA for worker k, staged for one ring burst */
	struct isthd_shard_msg *stage; /* [n_workers][ISTHD_BURST] */
	uint16_t n_stage[ISTHD_MAX_WORKERS];
	/* dp only: the island's DATA for worker k's pacer, likewise */
	struct isthd_pace_msg *pstage; /* [n_workers][ISTHD_BURST] */
	uint16_t n_pstage[ISTHD_MAX_WORKERS];

	/* WAN repair: see the struct for who writes what */
	struct isthd_repair rep;
	/* authentication: see the struct for who writes what */
	struct isthd_auth auth;

	/* ctl writes, dp reads (acquire): newest round published, +1 (0: none) */
	uint64_t published;
	/* ctl writes, dp reads (acquire): round running now, +1 (0: before epoch) */
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
		/* counters at the previous boundary, for the round log */
		struct isthd_dp_stats last_st;
		struct isth_backend_counts last_be;
	};

	/* dp writes */
	/* the island's DATA to worker 0's peers (all of them with one
	 * worker): its pacer, WAN repair ring and budgets */
	struct isthd_egress eg;
	uint64_t agg_seq; /* next AGG sequence number (telemetry reads) */
	uint64_t expire_next; /* next round whose deadline the dp enforces */
	struct isthd_dp_stats st; /* see struct isthd_dp_stats */

	/* anyone writes true to stop */
	volatile bool stop;
	/* telemetry/signal sets, ctl clears: reload the schedule file */
	volatile bool reload;

	/* init (setup.c, port_start): queues of the access port. TX: one
	 * per worker when the PMD offers n_workers of them (worker k puts
	 * AGG stream k's AGGs, resends and GONEs on queue k itself, with
	 * counters of its own), else 1 (workers k >= 1 hand them to worker
	 * 0 through their out ring, and worker 0 sends every frame on queue
	 * 0). RX: 1, or every queue of an af_packet port (qpairs: the
	 * kernel spreads received frames over them by flow hash), all
	 * polled by worker 0. The bench
	 * switches access_txq between 1 and n_workers on one edge between
	 * runs (not while workers run) */
	uint16_t access_txq, access_rxq;
	/* init (setup.c, port_start): queues of the WAN port. TX: one per
	 * worker when the PMD offers n_workers of them (worker k sends the
	 * island's DATA to its peers, and their repairs, on queue k), else
	 * 1 (worker k hands them to worker 0 through its wan_out ring). RX:
	 * 1, or every queue of an af_packet port, all polled by worker 0 */
	uint16_t wan_txq, wan_rxq;
	/* init (setup.c, port_start): the WAN port's PMD checks received UDP
	 * checksums (RX offload on): a frame it marks good is not summed
	 * again in software; bad, unmarked or tunnelled ones are summed
	 * in software (datapath.c, wan_rx_queue). The tests set it on net_ring ports,
	 * whose frames carry the flags they were given. */
	bool wan_rx_csum;
};

/* setup.c */
int isthd_prepare(struct isthd *d, uint64_t epoch_override, char *err, size_t err_size);
int isthd_setup(struct isthd *d, char *err, size_t err_size);
void isthd_teardown(struct isthd *d);
void isthd_ports_close(struct isthd *d);
uint16_t isthd_port_lookup(const char *dev, int *rc);
/* rte_eal_cleanup() and remove the runtime directory; every exit of main */
void isthd_eal_cleanup(void);

/* clock.c */
uint64_t isthd_now_ns(void);
uint64_t isthd_tsc_hz_measure(uint64_t span_ns, uint64_t fallback);
uint64_t isthd_ns_to_tsc(const struct isthd *d, uint64_t ns);
uint64_t isthd_tsc_to_ns(const struct isthd *d, uint64_t tsc);

/* datapath.c */
int isthd_worker(void *arg);
/* A GONE to the island for @n ranges of @nack (its AGG stream), framed,
 * with room for the tag and (auth on) seq *@seq_gone++; sealed with @seal
 * (the stream's worker's engine; NULL: auth off). Counted in @st (gone,
 * sealed, drops). NULL if it could not be built. */
struct rte_mbuf *isthd_island_gone(struct isthd *d, struct isthd_dp_stats *st,
	const struct isth_wire_pkt *nack, const struct isth_wire_range *r, unsigned int n,
	uint64_t *seq_gone, struct isth_auth_engine *seal);
/* AGGs the resend ring served (RESENT set, another IV) sealed again with
 * the stream's worker's engine @e, a chained one copied first; failures
 * counted in @st and freed. @return resends left in @out. */
unsigned int isthd_reseal_resent(struct isthd *d, struct isthd_dp_stats *st,
	struct isth_auth_engine *e, struct rte_mbuf **out, unsigned int n);
/* Where isthd_serve_seq_nack puts the frames it built (@n may be 0). */
typedef void (*isthd_emit_fn)(void *arg, struct rte_mbuf **m, unsigned int n);
/* An island NACK of seqs of one AGG stream, served from the stream's ring
 * @ring within the island allowance @b, resends resealed and GONEs sealed
 * with @e (auth on; its seq *@seq_gone), counted in @st; the frames go to
 * @emit(@arg): worker 0's access TX, or worker k's ring to worker 0. */
void isthd_serve_seq_nack(struct isthd *d, struct isthd_dp_stats *st, struct isth_resend *ring,
	struct isthd_repair_budget *b, struct isth_auth_engine *e, uint64_t *seq_gone,
	const struct isth_wire_pkt *p, uint64_t now_ns, isthd_emit_fn emit, void *arg);
/* One pass of the worker loop (benchmarks drive it from their own loop). */
unsigned int isthd_dp_poll(struct isthd *d);
/* Worker k: what its pacer releases now (@now_tsc), kept for its peers'
 * NACKs, replicated to its peers through its backend and sent on the
 * WAN (isthd_wan_tx). @return DATA released. */
unsigned int isthd_egress_release(struct isthd *d, unsigned int k, uint64_t now_tsc);
void isthd_dp_drain_final(struct isthd *d);
void isthd_frame_template(struct isthd *d);
/* Expire the rounds of @be whose end + slack has passed (worker.c too). */
unsigned int isthd_expire_rounds(
	const struct isthd *d, struct isth_backend *be, uint64_t *next, uint64_t now_ns);
int isthd_frame_to_island(const struct isthd *d, struct rte_mbuf *m);

/* repair.c */
int isthd_repair_init(struct isthd *d, char *err, size_t err_size);
void isthd_repair_fini(struct isthd *d);
/* ctl: round @r's repair table from the round view @v. 0, or -EBUSY while
 * worker 0 has not passed a quiescent state since a spare table was
 * replaced (nothing published: the controller retries at its next tick). */
int isthd_repair_publish(struct isthd *d, const struct isth_sched_round_view *v, uint64_t r);
/* The repair tables (init, before isthd_repair_init's early exits; tests
 * that publish without the rest of repair). 0 or -ENOMEM. */
int isthd_repair_tables_init(struct isthd *d);
/* A linear frame to a peer edge carrying @msg, UDP-checksummed, sealed
 * (auth on) with the calling worker's engine @eng (repairs and NACKs to
 * peers; repair.c). NULL: no mbuf, too long, or the seal failed. */
struct rte_mbuf *isthd_repair_frame_to_peer(struct isthd *d, struct isth_auth_engine *eng,
	const struct isthd_peer *peer, const struct rte_mbuf *msg);
/* Worker k: keep the island's DATA its pacer released, for its peers'
 * NACKs and tail copies (@eg: worker k's). */
void isthd_repair_keep(struct isthd *d, struct isthd_egress *eg, struct rte_mbuf **m,
	unsigned int n, uint64_t now_ns);
void isthd_repair_track(struct isthd *d, const struct isth_wire_pkt *p, uint64_t now_ns);
unsigned int isthd_repair_tail_check(struct isthd *d, uint64_t now_ns);
/* Worker 0: a peer's chunk NACK received (counted peer_nacks_rx): false
 * if refused (no WAN repair, not from the peer's address, the peer not in
 * the round's clique: counted), else true with *@k the worker that sends
 * the round to that peer (isthd_egress_worker), which serves it. */
bool isthd_repair_admit(struct isthd *d, const struct isth_wire_pkt *p, unsigned int *k);
/* Worker k: an admitted chunk NACK of one of its peers, served from its
 * ring within the peer's budget (worker 0 steers it there). */
void
isthd_repair_serve(struct isthd *d, unsigned int k, const struct isth_wire_pkt *p, uint64_t now_ns);
void isthd_repair_trace(const struct isthd *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The most chunk repairs NACKs can get one peer per round (after
 * isthd_repair_init; 0 without WAN repair): rep.peer_max. */
uint64_t isthd_repair_peer_max(const struct isthd *d);
/* Worker k: send the last [wan] tail_copies chunks of a round again to its
 * peers, when due. */
unsigned int isthd_repair_tail_copies(struct isthd *d, unsigned int k, uint64_t now_ns);
/* Worker k's egress: its pacer and, [wan] repair on, its ring and budget
 * tables; setup, after isthd_repair_init. 0 or -errno with @err set. */
int isthd_egress_init(struct isthd *d, unsigned int k, char *err, size_t err_size);
/* Free what isthd_egress_init made, the mbufs its pacer holds too. */
void isthd_egress_fini(struct isthd_egress *eg);
/* The island's NACKs (datapath.c): AGG repairs the next NACK may get, and
 * the repairs it got. */
uint32_t isthd_repair_island_allowance(const struct isthd *d, struct isthd_repair_budget *b);

/* auth.c */
/* Load the key file (or warn loudly that auth is off): --check does it. */
int isthd_auth_prepare(struct isthd *d, char *err, size_t err_size);
/* Engines, replay windows, seq counters; after isthd_prepare(). */
int isthd_auth_setup(struct isthd *d, char *err, size_t err_size);
void isthd_auth_fini(struct isthd *d);
/* ctl: the reload path (SIGHUP, /isthmus/reload) loads the key file again
 * and hands its keys to the worker; refused (logged) if the new file
 * changes the epoch of a round already published. */
void isthd_auth_reload(struct isthd *d, uint64_t cur);
/* ctl: free the key set a reload replaced, once every worker has passed a
 * quiescent state since (lib/rtab on d->qs); at every controller step. */
void isthd_auth_ctl_step(struct isthd *d);
/* Worker 0: the key set published, for this pass (start of each poll);
 * a new one also moves the replay window slots to its epochs. */
void isthd_auth_dp_step(struct isthd *d);
/* Worker k >= 1: its engine of the key set published, for this pass. */
void isthd_auth_shard_step(struct isthd_shard *w);
/* The replay window of the stream of sealed message @msg received on the
 * @dir side; NULL when the edge keeps none (types refused later). */
struct isth_auth_replay *
isthd_auth_window(struct isthd *d, enum isth_auth_dir dir, const uint8_t *msg);
/* Verify @n parsed frames (@owner: key owner of each) with the worker's
 * engine, then their replay windows; refusals are counted and freed, the
 * rest compacted to the front of @m and @p. @return how many are left. */
unsigned int isthd_auth_verify_rx(struct isthd *d, enum isth_auth_dir dir, struct rte_mbuf **m,
	struct isth_wire_pkt *p, const uint8_t *owner, unsigned int n);
/* Seal the message at @msg (@len bytes; when already version 2, its tag
 * included) with @dir's key of the local island, in place. @return the
 * sealed length or a negative errno. */
int isthd_auth_seal_msg(struct isthd *d, struct isth_auth_engine *e, enum isth_auth_dir dir,
	uint8_t *msg, size_t len, size_t cap);
/* Worker: seal @n fresh (version 1) frames in one burst with its engine
 * @e and @dir's key of the local island: each message starts @off bytes
 * into its (single-segment) mbuf and its last 16 bytes are the room for
 * the tag. Failures are counted in @st (auth_seal) and freed, the rest
 * compacted to the front of @m (DOWN: counted in @st sealed). @return
 * how many are left. */
unsigned int
isthd_auth_seal_frames(const struct isthd *d, struct isthd_dp_stats *st, struct isth_auth_engine *e,
	enum isth_auth_dir dir, struct rte_mbuf **m, unsigned int n, uint32_t off);

/* auth_dev.c: authentication offloaded to the backend's device */
/* The backend's auth configuration (keys, site table, verdict callback);
 * zeroed when auth is off. @agg_seq: the AGG resend ring's first seq. */
void isthd_auth_dev_conf(const struct isthd *d, struct isth_backend_auth *a, uint64_t agg_seq);
/* dp: the device's verdict on a DATA's tag (struct isth_backend_auth). */
void isthd_auth_dev_verdict(void *arg, const uint8_t *msg, int status);
/* dp, WAN side: DATA only through the replay check (the device verifies
 * the tag), everything else verified here (isthd_auth_verify_rx);
 * refusals counted and freed, the rest compacted. @return how many left. */
uint16_t isthd_auth_dev_rx(struct isthd *d, struct rte_mbuf **m, struct isth_wire_pkt *p,
	const uint8_t *owner, uint16_t n);

/* control.c */
int isthd_control(struct isthd *d);
int isthd_control_step(struct isthd *d, uint64_t now_ns);

/* worker.c */
/* Backend instances of workers 1..n_workers-1 (@bc as worker 0's), their
 * rings and worker 0's staging; setup, after worker 0's backend. */
int isthd_workers_setup(
	struct isthd *d, const struct isth_backend_conf *bc, char *err, size_t err_size);
void isthd_workers_teardown(struct isthd *d);
/* Launch worker 0 (isthd_worker) and the others on the EAL's worker
 * lcores, in order; wait for all of them. */
int isthd_workers_launch(struct isthd *d);
void isthd_workers_wait(struct isthd *d);
/* Worker 0: hand peer DATA @m (@p its parse) to the worker of its chunk.
 * @return false if it is worker 0's own (nothing done). */
bool isthd_shard_steer(struct isthd *d, struct rte_mbuf *m, const struct isth_wire_pkt *p);
/* Worker 0: send what isthd_shard_steer staged (end of a burst). */
void isthd_shard_flush(struct isthd *d);
/* Worker 0, a port with one TX queue: frames the other workers finished
 * for it, at most @cap: for the access port (!@wan) their streams' AGGs,
 * resends, GONEs (sealed by them, auth on); for the WAN port their peers'
 * DATA, repairs and tail copies. */
unsigned int
isthd_shard_collect(struct isthd *d, bool wan, struct rte_mbuf **out, unsigned int cap);
/* Worker 0: stage a message (its frame @m and parse @p) for worker k >= 1
 * (sent by isthd_shard_flush, at the end of the RX burst): a peer DATA of
 * its chunks, an island NACK of AGG stream k, which it serves from its
 * resend ring, or an admitted chunk NACK of one of its peers, which it
 * serves from its WAN repair ring. */
void isthd_shard_stage(
	struct isthd *d, unsigned int k, struct rte_mbuf *m, const struct isth_wire_pkt *p);
/* Worker 0, several workers: hand the island's DATA @m (sealed for the
 * WAN, @bytes of payload) to the pacer of every worker with peers in
 * round @r (a reference each): its own, through isth_pace_enqueue, the
 * others' through their pace_in rings (staged; isthd_shard_flush).
 * @return 0, or worker 0's own enqueue's error, whose reference the
 * caller frees. */
int isthd_egress_steer(struct isthd *d, struct rte_mbuf *m, uint32_t bytes, uint64_t r);

/* Any worker: round @r's repair table, or NULL if not published; valid until
 * its next quiescent state (doc/isthmusd.md, "Round tables"). */
static inline const struct isthd_repair_round *
isthd_repair_round(const struct isthd *d, uint64_t r)
{
	const struct isthd_repair_round *t = isth_rtab_get(d->rep.rtab, (uint32_t)(r & 3));

	return t != NULL && t->round == r ? t : NULL;
}

/* The round tables' readers (lib/rtab): a qsbr variable with one reader
 * per worker, registered; setup, before the first backend. */
int isthd_rcu_setup(struct isthd *d);
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
/* Worker k >= 1: its lcore loop, and one pass of it (benchmarks). */
int isthd_shard_worker(void *arg);
unsigned int isthd_shard_poll(struct isthd_shard *w);
/* Shutdown, workers stopped: sum what the rings hold, flush the others'
 * backends (first call), and send their AGGs on their access TX queues
 * (a queue per worker) or move them to worker 0. @return AGGs handled
 * (call again until 0, interleaved with worker 0's emission). */
unsigned int isthd_shard_drain_final(struct isthd *d, bool first);
/* Sums over every worker's backend: counters and named stats. */
void isthd_backend_counts_sum(const struct isthd *d, struct isth_backend_counts *c);
void isthd_backend_stats_sum(const struct isthd *d, struct isth_backend_stats *st);

/* telemetry.c */
int isthd_telemetry_register(struct isthd *d);
/* Stop answering /isthmus/... and wait for callbacks still running; before
 * teardown (22.11 cannot unregister commands). Idempotent. */
void isthd_telemetry_close(void);

/* stats.c */
enum isthd_stat_kind {
	ISTHD_STAT_COUNTER, /* ISTHD_COUNTERS */
	ISTHD_STAT_DROP, /* drop_<reason>, wire parser's and ours */
	ISTHD_STAT_GAUGE, /* a value now (mempool in use) */
};
typedef void (*isthd_stat_fn)(
	void *arg, const char *name, uint64_t value, enum isthd_stat_kind kind);
/* Every counter, drop and gauge by name, in a fixed order. Any thread. */
void isthd_stats_walk(const struct isthd *d, isthd_stat_fn fn, void *arg);
/* Every worker's counters summed into @st (relaxed loads). Any thread. */
void isthd_stats_sum(const struct isthd *d, struct isthd_dp_stats *st);
void isthd_print_counters(const struct isthd *d, FILE *f);
/* Every worker's pacer (doc/isthmusd.md, "Workers"): counters summed,
 * the round_* gauges of the one furthest in the newest round, the
 * earliest start lag. Any thread. */
void isthd_pace_stats_sum(const struct isthd *d, struct isth_pace_stats *ps);
const char *isthd_drop_name(unsigned int i);

/* Send @n frames on TX queue @q of @port; what the queue refuses is
 * freed and counted under @reason in @st, the calling worker's counters
 * (no retry: a refused AGG stays in its stream's resend ring and the
 * island NACKs it). Only the one worker that owns queue @q calls it. */
static inline void
isthd_tx_queue(struct isthd_dp_stats *st, uint16_t port, uint16_t q, struct rte_mbuf **pkts,
	uint16_t n, enum isthd_drop reason, uint64_t *sent)
{
	uint16_t k;

	if (n == 0)
		return;
	k = rte_eth_tx_burst(port, q, pkts, n);
	isth_ctr_add(sent, k);
	if (unlikely(k < n)) {
		isth_ctr_add(&st->drop[reason], n - k);
		rte_pktmbuf_free_bulk(pkts + k, n - k);
	}
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

/* The drop reason of a pacer's refusal (isth_pace_enqueue's -errno). */
static inline enum isthd_drop
isthd_pace_refusal(int rc)
{
	return rc == -ENOBUFS ? ISTHD_DROP_pace_full : ISTHD_DROP_pace_oversize;
}

/* Worker k's egress, counters and (auth on) tag engine of this pass. */
static inline struct isthd_egress *
isthd_egress_of(struct isthd *d, unsigned int k)
{
	return k ? &d->shard[k]->eg : &d->eg;
}

static inline struct isthd_dp_stats *
isthd_stats_of(struct isthd *d, unsigned int k)
{
	return k ? &d->shard[k]->st : &d->st;
}

static inline struct isth_auth_engine *
isthd_engine_of(const struct isthd *d, unsigned int k)
{
	return k ? d->shard[k]->eng : d->auth.dp;
}

/* Worker k: @n frames for the WAN port, on WAN TX queue k where the port
 * has one per worker (or k is 0), else through worker k's wan_out ring
 * to worker 0, which sends them on queue 0 (isthd_shard_collect).
 * Refusals freed and counted under @reason (the queue) or
 * worker_ring_full (the ring) in worker k's counters. */
static inline void
isthd_wan_tx(
	struct isthd *d, unsigned int k, struct rte_mbuf **m, uint16_t n, enum isthd_drop reason)
{
	struct isthd_dp_stats *st = isthd_stats_of(d, k);
	unsigned int sent;

	if (k == 0 || d->wan_txq > 1) {
		isthd_tx_queue(st, d->wan_port, (uint16_t)(d->wan_txq > 1 ? k : 0), m, n, reason,
			&st->wan_tx);
		return;
	}
	sent = n ? rte_ring_enqueue_burst(d->shard[k]->wan_out, (void **)m, n, NULL) : 0;
	if (unlikely(sent < n)) {
		isth_ctr_add(&st->drop[ISTHD_DROP_worker_ring_full], n - sent);
		rte_pktmbuf_free_bulk(m + sent, n - sent);
	}
}

/* Send @n frames on @port, queue 0; what the queue refuses is freed and
 * counted under @reason. Worker 0 only (datapath.c, repair.c). */
static inline void
isthd_tx(struct isthd *d, uint16_t port, struct rte_mbuf **pkts, uint16_t n, enum isthd_drop reason,
	uint64_t *sent)
{
	isthd_tx_queue(&d->st, port, 0, pkts, n, reason, sent);
}

#endif
