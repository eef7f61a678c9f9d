/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHD_WORKER_H
#define ISTHD_WORKER_H

/*
 * The worker lcores (doc/isthmusd.md, "Workers"): one struct isthd_worker
 * per lcore, all of them in struct isthd's workers[] (worker 0 is
 * workers[0]), all running one loop (isthd_worker_poll). What only one
 * worker may do is a role it holds (ISTHD_ROLE_*, set by
 * isthd_workers_roles at set-up), not another type. Included by isthd.h,
 * after its constants.
 *
 * Every field says who writes it and who reads it:
 *   init   set-up, before launch (isthd_workers_setup/roles); read-only
 *          after, by any thread
 *   self   this worker only (its lcore; the controller and telemetry read
 *          counters and gauges with relaxed loads where said)
 *   rx     the RX worker (ISTHD_ROLE_RX), through the hand-off rings
 */
#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "isth_backend.h"
#include "isth_ctr.h"
#include "isth_resend.h"
#include "isth_wire.h"

#include "repair.h"

struct isthd;
struct isthd_dp_stats;

/*
 * Roles (doc/isthmusd.md, "Workers"): the work one worker must do for all,
 * because a port has one RX queue (no steering by chunk on these PMDs) or
 * one TX queue, or because a stream must have one writer. Worker 0 holds
 * all that apply (with one worker: RX and ACCESS_Q0 only; the relays only
 * where a port has one TX queue); workers 1..N-1 none.
 */
enum {
	/* poll every RX queue of both ports: parse, verify (the replay
	 * windows), admit, track peers' chunks and NACK them (WAN repair's
	 * asking side, whose NACK stream it numbers), seal the island's DATA
	 * once for the WAN */
	ISTHD_ROLE_RX = 1u << 0,
	/* several workers: hand each peer DATA, island NACK and peer NACK to
	 * the worker it belongs to, and the island's DATA to every worker
	 * with peers in its round (handoff.c) */
	ISTHD_ROLE_STEER = 1u << 1,
	/* owner of access TX queue 0: the controller's ROUND frames, and the
	 * other workers' frames to the island where the port has one TX
	 * queue (their access_out rings) */
	ISTHD_ROLE_ACCESS_Q0 = 1u << 2,
	/* owner of WAN TX queue 0 where the WAN port has one TX queue: the
	 * other workers' frames to the WAN (their wan_out rings) */
	ISTHD_ROLE_WAN_RELAY = 1u << 3,
	/* the access port has one TX queue and several workers: put the
	 * others' access_out frames on queue 0 (with ISTHD_ROLE_ACCESS_Q0) */
	ISTHD_ROLE_ACCESS_RELAY = 1u << 4,
};

/* The sides of the one TX path (isthd_worker_tx). */
enum isthd_side { ISTHD_ACCESS = 0, ISTHD_WAN = 1 };

/* Where a worker's frames for one port go: TX queue q of the port, which
 * only this worker uses, or, where the port has one TX queue and this is
 * not its owner, the ring to the owner (ISTHD_ROLE_*_RELAY), which puts
 * them on queue 0 unchanged. init. */
struct isthd_tx {
	uint16_t port;
	uint16_t q;
	struct rte_ring *ring; /* NULL: send on queue q */
};

/* A message the RX worker hands to another worker: the frame and its parse
 * (whose pointers point into the frame): a peer DATA of its chunks, an
 * island NACK of its AGG stream, a chunk NACK of one of its peers. */
struct isthd_msg {
	struct rte_mbuf *m;
	struct isth_wire_pkt p;
};

/* The island's DATA handed by the RX worker to another worker's pacer: a
 * reference, and its payload bytes as the RX worker's admission counted. */
struct isthd_pace_msg {
	struct rte_mbuf *m;
	uint64_t bytes;
};

/*
 * Data-path counters, one list: the struct, /isthmus/stats and the final
 * print are generated from it (lib/ctr convention). Each worker has its
 * own (struct isthd_worker .st), the controller its own (its two drops);
 * stats.c sums them.
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
	X(peer_nack_echoes, \
		"echoes of last-chance chunk NACKs sent to peer edges (served only if the " \
		"NACK they copy was lost)") \
	X(peer_chunks_unrepaired, "peer chunks still missing when NACKing stopped") \
	X(peer_nacks_rx, "chunk NACKs received from peer edges") \
	X(repairs_sent, "DATA resent to a peer edge") \
	X(repair_echoes_skipped, \
		"chunks a peer's NACK echo named that a NACK of the same event had named " \
		"already, or beyond the first 4096 (not sent)") \
	X(peer_unrepaired_tail, \
		"of peer_chunks_unrepaired: after the last chunk seen from that peer (a tail)") \
	X(peer_unrepaired_unasked, "of peer_chunks_unrepaired: of a (round, peer) never NACKed") \
	X(peer_repairs_rx, "repairs from peer edges that filled a missing chunk") \
	X(peer_repairs_late, "of peer_repairs_rx: arrived after NACKing stopped (cutoff)") \
	X(peer_data_late, "peer DATA (not a repair) first seen after NACKing stopped") \
	X(tail_copies_sent, "last chunks of the island's DATA sent again to a peer unasked") \
	X(tree_data, "tree rounds: island DATA summed into its chunk's tree") \
	X(tree_in, \
		"tree rounds: PARTIALs from peer edges taken into a chunk (up and down; refusals " \
		"counted under their drop reason)") \
	X(tree_up, "tree rounds: complete subtree sums sent to the parent edge") \
	X(tree_up_partial, \
		"tree rounds: subtree sums sent to the parent at the cutoff, incomplete") \
	X(tree_down, "tree rounds: results sent down to child edges (one per child)") \
	X(tree_result, "tree rounds: complete results handed to the island") \
	X(tree_result_partial, "tree rounds: partial results handed to the island") \
	X(tree_fallback, \
		"tree rounds: of tree_result_partial, the subtree's own sum (no result came " \
		"down)") \
	X(tree_nacks_sent, \
		"tree rounds: NACKs to the parent or a child edge for an overdue PARTIAL") \
	X(tree_resent, "tree rounds: PARTIALs sent again for a NACK (up or down)") \
	X(tree_repairs_wasted, \
		"tree rounds: PARTIALs resent for a NACK that came after their chunk was " \
		"summed or went on (the first copy was late, not lost): not summed") \
	X(tree_nacks_unserved, \
		"tree rounds: chunks a NACK named that this edge had not sent (yet), or whose " \
		"round it no longer holds") \
	X(peer_streams_unordered, \
		"peers found sending DATA out of chunk order (an island of several hosts): " \
		"their gaps are asked for when the tail is due, not at once") \
	X(peer_streams_queued, \
		"peer streams none of whose DATA had come when their tail fell due: " \
		"asked for once, at the cutoff (queued on the way, rarely lost whole)") \
	X(sealed, \
		"auth on: frames to the island this worker's tag engine sealed (its AGG " \
		"stream's AGGs, resends, GONEs)")

enum { ISTHD_N_COUNTERS = 0 ISTHD_COUNTERS(ISTH_CTR_ONE) };

/*
 * Per host of the island ([access] island_hosts; doc/isthmusd.md, "An
 * island of several hosts"): /isthmus/hosts (key hK_NAME), the metrics
 * endpoint (isthmus_edge_island_host_NAME{host="K"}) and the exit print
 * are generated from it.
 */
#define ISTHD_HOST_COUNTERS(X) \
	X(data_in, "island DATA from the host accepted for the pacer") \
	X(wrong_host, "DATA from the host for a chunk another host owns (drop_access_wrong_host)") \
	X(agg_out, "AGG messages sent to the host (its chunks)") \
	X(nacks, "NACKs from the host") \
	X(resent, "AGGs resent to the host") \
	X(gone, "GONE replies sent to the host") \
	X(replay, \
		"DATA and NACKs from the host's address refused by its replay windows " \
		"(auth_replay, auth_stale, auth_ahead)")

enum {
#define X(n, s) ISTHD_HOST_##n,
	ISTHD_HOST_COUNTERS(X)
#undef X
		ISTHD_N_HOST_COUNTERS
};

/* One writer per instance (a worker's, or the controller's), relaxed
 * stores; read by the controller and telemetry (relaxed loads, summed by
 * stats.c). */
struct isthd_dp_stats {
	ISTHD_COUNTERS(ISTH_CTR_FIELD)
	uint64_t wire_drop[ISTH_WIRE_REASON_MAX];
	uint64_t drop[ISTHD_DROP_MAX];
	/* by host of the island, ISTHD_HOST_* (host 0 only with one) */
	uint64_t host[ISTHD_ISLAND_MAX_HOSTS][ISTHD_N_HOST_COUNTERS];
};

/*
 * Worker k of N (doc/isthmusd.md, "Workers"). Every worker aggregates the
 * peer DATA of the chunks with chunk % N == k in a backend instance of its
 * own, owns AGG stream k (numbers, keeps, seals and sends its AGGs, serves
 * the island's NACKs of it), and sends the island's DATA to its share of
 * each round's peers (struct isthd_egress). Its roles add the rest.
 * Three groups on cache lines of their own: what set-up writes and other
 * workers read at every hand-off, what this worker writes, its counters.
 */
struct isthd_worker {
	/* init: read-only after launch */
	struct isthd *d; /* the edge: configuration, clock, stop flag */
	unsigned int id; /* k: its chunks, its AGG stream, its RCU reader id */
	uint32_t role; /* ISTHD_ROLE_* */
	struct isth_backend *be; /* its aggregation state */
	struct isthd_tx tx[2]; /* by enum isthd_side: the one TX path */
	/* rx (SP) -> k (SC), k >= 1: struct isthd_msg */
	struct rte_ring *in;
	/* rx (SP) -> k (SC), k >= 1: the island's DATA for k's pacer
	 * (struct isthd_pace_msg; as deep as the pacer's queue) */
	struct rte_ring *pace_in;
	/* k (SP) -> owner of queue 0 (SC), k >= 1: frames to the island
	 * (stream k's AGGs, resends, GONEs, sealed) and to the WAN (the
	 * island's DATA to k's peers, their repairs and tail copies); used
	 * through tx[] only where a port has one TX queue */
	struct rte_ring *access_out;
	struct rte_ring *wan_out;

	/* self: the next round whose deadline it enforces on its backend */
	uint64_t expire_next __rte_cache_aligned;
	/* AGG stream k (doc/protocol.md, "AGG streams"): created by set-up,
	 * then self (telemetry reads its stats and seqs) */
	struct isth_resend *agg_ring;
	/* [access] island_hosts: host h's own AGG stream k, numbered and
	 * kept by host_ring[h] (host_ring[0] is agg_ring), so that every host
	 * sees consecutive seqs of its chunks; set-up creates, then self */
	struct isth_resend *host_ring[ISTHD_ISLAND_MAX_HOSTS];
	uint64_t agg_seq; /* self: next AGG seq (telemetry reads, relaxed) */
	/* self (auth on): next GONE seq of stream k, from the wall clock */
	uint64_t seq_gone;
	/* self, the RX worker (auth on): next chunk NACK seq to peers */
	uint64_t seq_nack;
	/* self (auth on): its tag engine in this pass, from the key set
	 * published (isthd_auth_step at the start of each pass) */
	struct isth_auth_engine *eng;
	/* self: resends to host h of the island this round (its share of
	 * host h's island budget; isthd_island_nack) */
	struct isthd_repair_budget nack_budget[ISTHD_ISLAND_MAX_HOSTS];
	/* self, ISTHD_ROLE_STEER: messages for worker j staged for one ring
	 * burst (stage[j * ISTHD_BURST ...], pstage likewise; handoff.c) */
	struct isthd_msg *stage;
	struct isthd_pace_msg *pstage;
	uint16_t n_stage[ISTHD_MAX_WORKERS];
	uint16_t n_pstage[ISTHD_MAX_WORKERS];
	/* self: the island's DATA to its peers (struct isthd_egress) */
	struct isthd_egress eg;

	/* self writes (relaxed), ctl and telemetry read: see struct
	 * isthd_dp_stats; what it did, on its queues and rings */
	struct isthd_dp_stats st __rte_cache_aligned;
} __rte_cache_aligned;

/* worker.c: the loop */
/* One pass of worker @w's loop over every source of work it has (its
 * roles'); benchmarks drive it from their own loop. @return work done. */
unsigned int isthd_worker_poll(struct isthd_worker *w);
/* Worker @w's lcore loop (rte_eal_remote_launch, arg: @w). */
int isthd_worker_main(void *arg);
/* Shutdown, every worker stopped: what they hold is summed and their
 * last AGGs leave (every worker's emitter, on their queues or relayed). */
void isthd_dp_drain_final(struct isthd *d);

/* workers.c: set-up, roles, launch */
/* The round tables' readers (lib/rtab): a qsbr variable with one reader
 * per worker, registered; set-up, before the first backend. */
int isthd_rcu_setup(struct isthd *d);
/* Every worker's backend (@bc), hand-off rings and staging; set-up. */
int isthd_workers_setup(
	struct isthd *d, const struct isth_backend_conf *bc, char *err, size_t err_size);
void isthd_workers_teardown(struct isthd *d);
/* Each worker's roles and TX path from n_workers and the ports' queues
 * (set-up; a benchmark that changes those between runs calls it again,
 * workers stopped). */
void isthd_workers_roles(struct isthd *d);
/* Launch worker k on the EAL's k-th worker lcore; wait for all of them. */
int isthd_workers_launch(struct isthd *d);
void isthd_workers_wait(struct isthd *d);

/* rx.c: the RX worker's ports (ISTHD_ROLE_RX) */
unsigned int isthd_access_rx(struct isthd_worker *w, uint64_t now_ns);
unsigned int isthd_wan_rx(struct isthd_worker *w, uint64_t now_ns);

/* handoff.c: between workers (ISTHD_ROLE_STEER on the sending side) */
/* Stage a message (frame @m, parse @p) for worker @k (sent by
 * isthd_handoff_flush at the end of the RX burst). */
void isthd_handoff_stage(
	struct isthd_worker *w, unsigned int k, struct rte_mbuf *m, const struct isth_wire_pkt *p);
/* Send what @w staged (end of a burst). */
void isthd_handoff_flush(struct isthd_worker *w);
/* The island's DATA @m (sealed for the WAN, @bytes of payload) of round
 * @r to the pacer of every worker with peers in the round (a reference
 * each): @w's own, the others' staged. @return 0, or @w's own enqueue's
 * error, whose reference the caller frees. */
int isthd_egress_steer(struct isthd_worker *w, struct rte_mbuf *m, uint32_t bytes, uint64_t r);
/* Worker @w: the messages the RX worker handed it (peer DATA summed, NACKs
 * served) and the island's DATA for its pacer. @return messages taken. */
unsigned int isthd_handoff_in(struct isthd_worker *w, uint64_t now_ns);
unsigned int isthd_handoff_pace_in(struct isthd_worker *w);
/* Owner of a port's queue 0 (ISTHD_ROLE_*_RELAY): the other workers'
 * frames for @side onto it, unchanged, up to @bursts bursts. */
unsigned int isthd_handoff_relay(struct isthd_worker *w, enum isthd_side side, unsigned int bursts);

/* island.c: frames to the island */
void isthd_frame_template(struct isthd *d);
/* Ethernet/IPv4/UDP to host @host of the island prepended to the message
 * in @m. 0, or -EINVAL (too long), -ENOSPC (no headroom). */
int isthd_frame_to_host(const struct isthd *d, struct rte_mbuf *m, unsigned int host);
/* The same to the host the message is for: an AGG's, the owner of its
 * chunk (isthd_chunk_host); anything else host 0. */
int isthd_frame_to_island(const struct isthd *d, struct rte_mbuf *m);
/* The controller's ROUND @m (a message) framed to every host of the
 * island (a copy each) and put on the ctl ring; takes @m. 0, -ENOMEM (no
 * mbuf for a copy) or -ENOBUFS (not framed or not queued): none of the
 * copies leaves; the caller counts it. */
int isthd_island_round_out(struct isthd *d, struct rte_mbuf *m);
/* Worker @w: one island NACK of its AGG stream: seq ranges served from its
 * resend ring within its island allowance (resends resealed, GONEs
 * sealed, auth on), chunk ranges answered GONE; out through its TX path. */
void isthd_island_nack(struct isthd_worker *w, const struct isth_wire_pkt *p, uint64_t now_ns);

#endif
