/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHD_REPAIR_H
#define ISTHD_REPAIR_H

/*
 * WAN repair between edges (doc/isthmusd.md, "WAN repair"): the state of
 * the asking side (repair_nack.c: the RX worker tracks every peer's chunks
 * and NACKs what is missing) and of the serving side (repair.c,
 * repair_serve.c: each worker keeps the island's DATA it sent to its
 * peers and serves their NACKs), and the per-round repair tables the
 * controller publishes (lib/rtab). Included by isthd.h, after its
 * constants.
 */
#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_mbuf.h>

#include "isth_pace.h"
#include "isth_resend.h"
#include "isth_rtab.h"
#include "isth_sched.h"
#include "isth_wire.h"

#include "config.h"

struct isthd;
struct isthd_worker;
struct isth_auth_engine;

/* The RX worker only (writes and reads): one sender's chunks of one
 * round, seen so far, and when to NACK what is missing (repair_nack.c). */
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
	uint16_t tags; /* the last NACK event's tag (next_tag; 0: none yet) */
	/* DATA (not repairs) that came below next: out of chunk order */
	uint16_t below;
	uint8_t tail_due; /* the tail was due: NACK every missing chunk */
	/* its first DATA was chunk 8 or above (isthd_repair_track): its
	 * tail is due by the chunks still to come, not by the ids */
	uint8_t jumped;
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
 * Repair budget of one peer (or of the island's NACKs) for one round,
 * written and read by the one worker that serves them: chunks repaired so
 * far.
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
	uint16_t serves; /* repairs of the chunk to the peer */
	/* the tag of the last NACK event a NACK of which named it (served
	 * or refused): an echo of that event (ISTH_WIRE_F_ECHO) is skipped */
	uint16_t tag;
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
	/* init, [access] island_hosts > 1 only (else NULL): per slot, the
	 * ring seq of each chunk of the round base[slot] holds, as 1 + its
	 * distance from seq_first[slot] (0: not kept). The hosts' ranges
	 * reach the pacer interleaved (chunk 0, 50, 1, 51, ...), which the
	 * segments of base[] cannot map; 4 bytes a chunk a slot. */
	uint32_t *chunk_seq[2];
	uint64_t seq_first[2];
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
	/* the RX worker only: chunks received per (round & 3, sender) */
	struct isthd_rx_track *rx;
	uint64_t *rx_bits;
	/* the RX worker only: senders (bit s) whose DATA comes out of chunk
	 * order, an island of several hosts (its hosts' ranges interleave):
	 * no gap NACKs, the tail asked for when due (isthd_repair_track) */
	uint64_t unordered;
	/* the RX worker only: per sender, rounds in a row that came whole
	 * and in order since it was last found unordered (8 clear it) */
	uint8_t ordered_rounds[ISTHD_MAX_PEERS];
	/* init: chunks one peer may get repaired per round (one round's
	 * stream plus an allowance for repairs that were lost) */
	uint32_t budget_chunks;
	uint32_t served_chunks; /* init: min(n_chunks, ISTHD_SERVED_CHUNKS) */
	/* init: the most chunk repairs NACKs can get one peer per round
	 * (isthd_repair_serve; doc/security.md); 0: [wan] repair = no */
	uint64_t peer_max;
	/* init: AGG repairs one island NACK may get (half a round's AGGs),
	 * and the island per round of the edge's clock (one round's; each
	 * worker's share in its nack_budget, struct isthd_worker) */
	uint32_t island_nack_cap;
	uint32_t island_budget;
	/* round r's repair table (struct isthd_repair_round) in slot r & 3
	 * (lib/rtab): ctl writes (isthd_repair_publish, before published),
	 * every worker reads through isthd_repair_round() */
	struct isth_rtab *rtab;
	/* init: environment ISTHD_REPAIR_TRACE set: every NACK sent, chunk
	 * served or refused and repair received goes to stderr, one line
	 * each (a diagnosis aid, isthd_repair_trace(); off: one predictable
	 * branch on the repair paths, none per in-order DATA) */
	bool trace;
	/* the RX worker only: oldest round with tails to check; on a cache
	 * line of its own (the struct's last, padded), away from the init
	 * fields every worker reads */
	uint64_t tail_next __rte_cache_aligned;
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

/* repair.c: state, the tables, keeping, frames to peers */
int isthd_repair_init(struct isthd *d, char *err, size_t err_size);
void isthd_repair_fini(struct isthd *d);
/* ctl: round @r's repair table from the round view @v. 0, or -EBUSY while
 * a worker has not passed a quiescent state since a spare table was
 * replaced (nothing published: the controller retries at its next tick). */
int isthd_repair_publish(struct isthd *d, const struct isth_sched_round_view *v, uint64_t r);
/* The repair tables (init, before isthd_repair_init's early exits; tests
 * that publish without the rest of repair). 0 or -ENOMEM. */
int isthd_repair_tables_init(struct isthd *d);
/* A linear frame to a peer edge carrying @msg, UDP-checksummed, sealed
 * (auth on) with the calling worker's engine @eng, marked DSCP @dscp.
 * NULL: no mbuf, too long, or the seal failed. */
struct rte_mbuf *isthd_frame_to_peer(struct isthd *d, struct isth_auth_engine *eng,
	const struct isthd_peer *peer, const struct rte_mbuf *msg, uint8_t dscp);
/* isthd_frame_to_peer() marked [wan] repair_dscp: repairs and NACKs to
 * peers, which a WAN's priority class sends ahead of queued DATA. */
struct rte_mbuf *isthd_repair_frame_to_peer(struct isthd *d, struct isth_auth_engine *eng,
	const struct isthd_peer *peer, const struct rte_mbuf *msg);
/* Worker @w: keep the island's DATA its pacer released, for its peers'
 * NACKs and tail copies. */
void
isthd_repair_keep(struct isthd_worker *w, struct rte_mbuf **m, unsigned int n, uint64_t now_ns);
void isthd_repair_trace(const struct isthd *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The most chunk repairs NACKs can get one peer per round (0 without
 * WAN repair): rep.peer_max once isthd_repair_init ran. */
uint64_t isthd_repair_peer_max(const struct isthd *d);
/* Worker k's egress: its pacer and, [wan] repair on, its ring and budget
 * tables; setup, after isthd_repair_init. 0 or -errno with @err set. */
int isthd_egress_init(struct isthd *d, unsigned int k, char *err, size_t err_size);
/* Free what isthd_egress_init made, the mbufs its pacer holds too. */
void isthd_egress_fini(struct isthd_egress *eg);

/* repair_nack.c: the asking side, the RX worker's (ISTHD_ROLE_RX) */
void isthd_repair_track(struct isthd_worker *w, const struct isth_wire_pkt *p, uint64_t now_ns);
unsigned int isthd_repair_tail_check(struct isthd_worker *w, uint64_t now_ns);

/* repair_serve.c: the serving side */
/* The RX worker: a peer's chunk NACK received (counted peer_nacks_rx):
 * false if refused (no WAN repair, not from the peer's address, the peer
 * not in the round's clique: counted), else true with *@k the worker that
 * sends the round to that peer (isthd_egress_worker), which serves it. */
bool isthd_repair_admit(struct isthd_worker *w, const struct isth_wire_pkt *p, unsigned int *k);
/* Worker @w: an admitted chunk NACK of one of its peers, served from its
 * ring within the peer's budget (the RX worker hands it over). */
void isthd_repair_serve(struct isthd_worker *w, const struct isth_wire_pkt *p, uint64_t now_ns);
/* Worker @w: send the last [wan] tail_copies chunks of a round again to
 * its peers, when due. */
unsigned int isthd_repair_tail_copies(struct isthd_worker *w, uint64_t now_ns);

#endif
