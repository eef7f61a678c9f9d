/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_ISLAND_H
#define ISTH_ISLAND_H

/**
 * @file
 * libisthmus: the island side of isthmus, what a training job links.
 *
 * Plain POSIX UDP, no DPDK. A session talks to the island's edge
 * (isthmusd) from a local UDP socket (or several, conf.n_sockets, each
 * sending a chunk range from its own thread; UDP GSO/GRO optional):
 *
 *     edge -> island   ROUND (a round has begun), AGG (aggregates), GONE
 *     island -> edge   DATA (the island's contribution), NACK (lost AGGs)
 *
 * Per round r the caller typically does
 *
 *     isth_island_wait_round(s, timeout, &ri);          // ROUND r
 *     isth_island_send(s, ri.round, tensor, size);       // DATA, chunked
 *     isth_island_result(s, ri.round, out, ...);         // sum + bitmaps
 *
 * The result of a chunk is the island's own contribution (if it sent one for
 * that round) plus every AGG received for the chunk: the clique sum. Its
 * bitmap names exactly the contributors summed in; chunks missing any
 * expected contributor are reported with the missing set, never as a
 * silently wrong sum. doc/island.md explains sequence tracking, NACKs,
 * probes and the float tolerance.
 *
 * Threads: every function taking a session may be called from any thread,
 * concurrently with any other, except isth_island_close(), which must be
 * the last call and must not race with any other call on the handle. One
 * mutex serialises the state; at most one caller at a time blocks in
 * poll(2) on the socket, the others wait on a condition variable and are
 * woken after each batch of packets (leader/follower). With
 * conf.rx_threads a thread per socket reads it instead and callers only
 * wait. Blocking calls do not hold the mutex while waiting. There is no global state: two sessions
 * are independent.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isth_auth.h"
#include "isth_ctr.h"
#include "isth_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct isth_island;

/** Rounds a session keeps at once (ROUND info, accumulator, bitmaps). */
#define ISTH_ISLAND_ROUNDS 4u
/** AGG sequence numbers tracked behind the newest one (power of two). */
#define ISTH_ISLAND_SEQ_WINDOW 8192u
/**
 * conf.grace_ns: wait one period of the round past its deadline (the
 * ROUND's period_ns), for AGGs an edge sends up to its [agg] round_slack
 * late. A complete round still ends at once; only a partial one ends
 * later. The default of the Python binding and isthmus-island.
 */
#define ISTH_ISLAND_GRACE_PERIOD UINT64_MAX
/** Most sockets (and sending threads) one session may use. */
#define ISTH_ISLAND_MAX_SOCKETS 16u
/** Most hosts one island may have (conf.hosts). */
#define ISTH_ISLAND_MAX_HOSTS 16u

/**
 * UDP segmentation offload on send (conf.gso) and receive offload on
 * receive (conf.gro); doc/island.md, "GSO, GRO and several sockets".
 */
enum isth_island_offload {
	/** Not used (the default): one datagram per syscall entry. */
	ISTH_ISLAND_OFFLOAD_OFF = 0,
	/** Used if the kernel takes it; if it refuses (at open, or the first
	 * send it fails with EINVAL/EIO/EOPNOTSUPP), the session falls back
	 * to plain datagrams for good and counts it (gso_refused,
	 * gro_refused). Nothing on the wire changes either way. */
	ISTH_ISLAND_OFFLOAD_ON,
	/** Tests: as ON, but make the kernel refuse: GSO sockets get
	 * SO_NO_CHECK, with which Linux refuses every UDP_SEGMENT send
	 * (EINVAL), so the real fallback runs; GRO is treated as refused
	 * at open. */
	ISTH_ISLAND_OFFLOAD_TEST_REFUSE,
};

/** Session parameters. Zero means "the default" wherever a default is named. */
struct isth_island_conf {
	uint32_t job; /**< training job id */
	uint8_t island; /**< own island id, < n_islands */
	uint32_t n_islands; /**< islands in the job, 1..64 */
	uint32_t edge_ip; /**< edge access address, host order; required */
	uint16_t edge_port; /**< edge UDP port; 0: ISTH_WIRE_PORT */
	uint32_t bind_ip; /**< local address, host order; 0: any */
	uint16_t bind_port; /**< local port; 0: ephemeral */
	unsigned int mtu; /**< IP MTU; 0: 1500. Sets the chunk size */
	uint32_t elems; /**< elements in the tensor, every round; > 0 */
	/** ISTH_WIRE_DTYPE_INT32, ISTH_WIRE_DTYPE_FP32 or ISTH_WIRE_DTYPE_BF16. A bf16
	 * session sends bf16 DATA and sums in fp32: its results are fp32. */
	uint8_t dtype;
	/** Re-NACK a still-missing AGG at most this often; 0: 5 ms. */
	uint64_t nack_interval_ns;
	/** A missing AGG is NACKed until the deadline (+grace) of the round
	 * whose AGG revealed the gap; NACKs per missing AGG before giving it
	 * up as lost only when that round was not announced; 0: 16. */
	unsigned int nack_retries;
	/** Tail-loss probe after this long without an AGG while a round is
	 * incomplete; 0: 10 ms; UINT64_MAX: never probe. */
	uint64_t probe_ns;
	/** A round ends at ROUND deadline_ns + grace_ns (0: at the deadline;
	 * ISTH_ISLAND_GRACE_PERIOD: + the ROUND's period_ns). An edge
	 * sends AGGs until the deadline + its [agg] round_slack, so a
	 * grace of 0 may cut off the tail of an edge's round. */
	uint64_t grace_ns;
	/** SO_RCVBUF to ask for; 0: 4 MiB. */
	int rcvbuf;
	/** Clock for deadlines and NACK timing, ns on the CLOCK_REALTIME
	 * scale; NULL: clock_gettime(CLOCK_REALTIME). Tests inject one. Must
	 * be callable from any thread calling into the session. */
	uint64_t (*clock)(void *arg);
	void *clock_arg; /**< passed to @ref clock */
	/**
	 * Key file of the job (doc/protocol.md, "Key file"; mode 0600):
	 * the session speaks wire version 2, seals DATA and NACK with the
	 * UP key of this island and verifies every AGG, GONE and ROUND with
	 * its DOWN key before anything else looks at it. NULL: version 1,
	 * no authentication (labs only; isth_island_stats() reports it).
	 */
	const char *key_file;
	/**
	 * Sockets of the session, 1..ISTH_ISLAND_MAX_SOCKETS; 0: 1. Socket i
	 * is bound to bind_port + i (each on an ephemeral port if bind_port
	 * is 0) and sends the DATA of the i-th of n_sockets contiguous chunk
	 * ranges; sockets 1.. are driven by threads the session starts, so a
	 * send() uses n_sockets cores. Every socket is read for AGGs; which
	 * port the edge sends a stream to is its [access] island_sockets.
	 */
	unsigned int n_sockets;
	uint8_t gso; /**< enum isth_island_offload: UDP_SEGMENT on send */
	uint8_t gro; /**< enum isth_island_offload: UDP_GRO on receive */
	/**
	 * Receive on a thread per socket (doc/island.md, "Receive threads"):
	 * socket i's thread reads it, verifies tags with an engine of its
	 * own, and runs the gap NACKs and tail probes of the AGG streams it
	 * owns, k % n_sockets == i, from socket i. The edge must send stream
	 * k to port bind_port + k % n_sockets ([access] island_sockets =
	 * n_sockets): an AGG or GONE on another socket is dropped as
	 * agg_socket. The caller's blocking calls then only wait. false:
	 * the caller of poll/wait/result/ready reads every socket (any
	 * stream on any socket), as before.
	 */
	bool rx_threads;
	/**
	 * An island of several hosts (doc/island.md, "An island of K
	 * hosts"): hosts K, 1..ISTH_ISLAND_MAX_HOSTS (0: 1), and this
	 * session's host k, 0..K-1. Host k owns the chunk ids
	 * [floor(k * C / K), floor((k + 1) * C / K)) of every round, C the
	 * round's chunks (isth_island_n_chunks(), the ROUND's n_chunks;
	 * isth_island_split()): it sends DATA for those chunks only, takes
	 * AGGs for those only, and send() and result() take and give that
	 * range's elements (isth_island_range()). conf.elems stays the whole
	 * tensor's, the same on every host. K = 1: the whole tensor. Every
	 * host needs at least one chunk: K <= C.
	 */
	unsigned int hosts;
	unsigned int host; /**< this host, < hosts (0 when hosts is 0 or 1) */
};

/** The part of every round one host of an island owns. */
struct isth_island_range {
	uint32_t first_chunk; /**< chunk id of its first chunk */
	uint32_t n_chunks; /**< chunks it owns (>= 1) */
	uint32_t first_elem; /**< the tensor's element where they start */
	uint32_t n_elems; /**< elements they hold: what send()/result() take */
};

/** What a ROUND announced, in host order. */
struct isth_island_round {
	uint32_t round;
	uint64_t start_ns; /**< round start, CLOCK_REALTIME ns */
	uint64_t deadline_ns; /**< AGGs are due by then */
	uint64_t period_ns;
	uint64_t clique; /**< clique members, self included */
	uint64_t expected; /**< peers whose contributions to expect */
	uint32_t n_chunks;
	uint32_t chunk_elems;
};

/** The outcome of one chunk of a round. */
struct isth_island_chunk {
	uint64_t bitmap; /**< contributors summed in (self if it sent) */
	uint64_t expected; /**< contributors the round expected */
	uint64_t missing; /**< expected & ~bitmap */
	uint32_t aggs; /**< AGG messages summed into the chunk */
	uint32_t count; /**< elements in the chunk */
};

/** The outcome of a round. */
struct isth_island_result {
	uint32_t round;
	uint32_t n_chunks;
	uint32_t complete; /**< chunks with every expected contributor */
	uint32_t partial; /**< chunks missing at least one */
	uint64_t missing; /**< contributions missing, over all chunks */
	uint64_t missing_set; /**< union of the chunks' missing sets */
	bool self_sent; /**< own contribution is in the sums */
	bool early; /**< complete before the deadline */
	uint64_t end_ns; /**< session clock when the round ended */
};

/** Island-level drop reasons (after the wire parser accepted a packet). */
#define ISTH_ISLAND_DROPS(X) \
	X(source, "datagram not from the edge address") \
	X(truncated, "datagram larger than the MTU allows") \
	X(job, "job is not the session's") \
	X(sender, "header sender is not this island") \
	X(type, "packet type the edge never sends to an island") \
	X(seq_old, "AGG seq older than the tracked window") \
	X(seq_jump, "AGG seq jumps past the window within one round") \
	X(round_old, "round older than the rounds kept") \
	X(round_busy, "round slot still holds a live round") \
	X(round_done, "AGG for a round already returned") \
	X(round_shape, "ROUND n_chunks/chunk_elems disagree with the session") \
	X(round_dup, "ROUND already received") \
	X(agg_dtype, "AGG dtype is not the session's") \
	X(agg_chunk, "AGG chunk id past the tensor") \
	X(agg_range, "AGG chunk owned by another host of the island (conf.hosts)") \
	X(agg_count, "AGG count is not the chunk's length") \
	X(agg_self, "AGG bitmap contains this island") \
	X(agg_clique, "AGG bitmap outside the round's expected set") \
	X(agg_overlap, "AGG bitmap overlaps contributors already summed") \
	X(agg_stream, "AGG or GONE of a stream no ROUND announced") \
	X(agg_socket, "AGG or GONE on a socket other than its stream's (rx_threads)") \
	X(agg_owner, "AGG of a chunk another socket summed this round (rx_threads)")

/** Named island drop reasons. */
enum isth_island_drop {
#define ISTH_ISLAND_DROP_ENUM(n, s) ISTH_ISLAND_DROP_##n,
	ISTH_ISLAND_DROPS(ISTH_ISLAND_DROP_ENUM)
#undef ISTH_ISLAND_DROP_ENUM
		ISTH_ISLAND_DROP_MAX
};

/**
 * The session's counters, one list in lib/ctr's convention (isth_ctr.h):
 * (field, help). struct isth_island_stats begins with a uint64_t for each,
 * in this order (isth_ctr_at(st, i) reads the i-th), and the Python
 * binding's Session.counters() takes its keys from this list, so a counter
 * added here is a field, a name and a Python key at once. Each is written
 * by the holder of the session lock (one writer at a time) with
 * isth_ctr_add(); doc/island.md, "Counters", says more of each.
 */
#define ISTH_ISLAND_COUNTERS(X) \
	X(key_reloads, "isth_island_reload_keys() that succeeded") \
	X(rx_packets, "datagrams read") \
	X(rx_bytes, "bytes of the datagrams read") \
	X(aggs_summed, "AGGs added to a chunk") \
	X(duplicates, "AGG seq seen before") \
	X(resent, "RESENT AGGs accepted") \
	X(nacks_sent, "NACK packets for gaps") \
	X(nack_seqs, "seqs named by them") \
	X(probes_sent, "tail-loss probe NACKs") \
	X(gone, "GONE packets received") \
	X(gone_seqs, "missing seqs GONE named") \
	X(lost_seqs, "seqs given up (retries, window)") \
	X(seq_resyncs, "edge restarted its stream") \
	X(data_tx, "DATA packets sent") \
	X(data_tx_bytes, "payload bytes of the DATA sent") \
	X(tx_errors, "sends that failed") \
	X(rounds_announced, "ROUNDs accepted") \
	X(rounds_complete, "results, all chunks complete") \
	X(rounds_partial, "results with missing parts") \
	X(gso_sends, "segmented sends (one syscall entry, many DATA)") \
	X(gso_refused, "GSO refused by the kernel (then plain)") \
	X(gro_refused, "UDP_GRO refused at open (then plain)") \
	X(gro_rx, "coalesced buffers read (several datagrams each)")

/** Counters in ISTH_ISLAND_COUNTERS. */
#define ISTH_ISLAND_N_COUNTERS (0 ISTH_ISLAND_COUNTERS(ISTH_CTR_ONE))

/**
 * What the session is (set at open, or when keys or streams change), not
 * counts: (type, field, help). Exported as ISTH_ISLAND_COUNTERS is (a
 * field each, after the counters; Python keys, as integers).
 */
#define ISTH_ISLAND_STATE(X) \
	X(bool, auth, "wire v2, tags sealed and verified (conf.key_file)") \
	X(uint8_t, auth_epochs, "key epochs loaded (0: auth off)") \
	X(uint32_t, n_sockets, "sockets in use") \
	X(bool, gso, "UDP GSO in use now (conf.gso and not refused)") \
	X(bool, gro, "UDP GRO in use (conf.gro and not refused)") \
	X(uint32_t, agg_streams, "AGG streams followed: 1, or the most a ROUND announced") \
	X(bool, rx_threads, "a receive thread per socket (conf.rx_threads)") \
	X(uint32_t, hosts, "hosts of the island (conf.hosts, at least 1)") \
	X(uint32_t, host, "this session's host (conf.host)") \
	X(uint32_t, first_chunk, "first chunk id of the host's range") \
	X(uint32_t, range_chunks, "chunks in the host's range")

/** Expands an ISTH_ISLAND_STATE entry to its field. */
#define ISTH_ISLAND_STATE_FIELD(type, name, help) type name;

/**
 * Session counters; a snapshot taken under the session lock. The
 * counters of ISTH_ISLAND_COUNTERS first, then the families of counters
 * named by other lists (by reason, type, socket), then the state.
 */
struct isth_island_stats {
	ISTH_ISLAND_COUNTERS(ISTH_CTR_FIELD)
	/** Refused by authentication, by enum isth_auth_status
	 * (isth_auth_status_name(): auth_format, auth_epoch, auth_tag,
	 * auth_replay, auth_stale, auth_key); nothing else looked at them. */
	uint64_t auth_drop[ISTH_AUTH_STATUS_MAX];
	uint64_t rx_type[ISTH_WIRE_TYPE_MAX + 1]; /**< parsed, by wire type */
	uint64_t wire_drop[ISTH_WIRE_REASON_MAX]; /**< parser refusals */
	uint64_t drop[ISTH_ISLAND_DROP_MAX]; /**< island refusals */
	/** datagrams read, per socket */
	uint64_t sock_rx[ISTH_ISLAND_MAX_SOCKETS];
	ISTH_ISLAND_STATE(ISTH_ISLAND_STATE_FIELD)
	/** per socket: bit k set once an AGG of stream k was taken on it
	 * (with rx_threads, only streams k % n_sockets == i can be) */
	uint16_t sock_streams[ISTH_ISLAND_MAX_SOCKETS];
};

/**
 * Open a session: check @p conf, allocate the round slots, bind the socket.
 *
 * @return the handle, or NULL with errno: EINVAL (bad argument: n_islands,
 *         island, dtype, elems, mtu, edge_ip; or a key file refused),
 *         EACCES (key file mode or owner), ENOMEM, or the socket/bind
 *         errno. isth_island_open_err() also says why.
 */
struct isth_island *isth_island_open(const struct isth_island_conf *conf);

/**
 * Open a session and describe why it failed: as isth_island_open(), and on
 * failure a message in @p err (e.g. the key file's "keys.conf:3: key:
 * expected 64 hex digits" or its mode; never key bytes).
 */
struct isth_island *
isth_island_open_err(const struct isth_island_conf *conf, char *err, size_t errlen);

/**
 * Load the key file @p key_file again (key rotation, doc/island.md): its
 * epochs replace the session's from the next packet on. Every round the
 * session holds (announced, sent to or being summed) must keep its epoch
 * and key in the new file, so a rotation is made by appending an epoch
 * that starts at a round the session has not reached yet; packets of
 * earlier rounds (late repairs) still verify with the old epoch. Replay
 * windows of epochs present in both files are kept.
 *
 * @return 0; -ENOTCONN (the session was opened without a key file);
 *         -EINVAL (file refused: parse error, job, or a live round would
 *         change key; @p err says which); -EACCES (mode/owner); -ENOMEM;
 *         the -errno of open/read.
 */
int isth_island_reload_keys(struct isth_island *s, const char *key_file, char *err, size_t errlen);

/** Close the socket and free the session; NULL is fine. Last call. */
void isth_island_close(struct isth_island *s);

/** Local port the socket is bound to (host order), e.g. after port 0. */
uint16_t isth_island_local_port(const struct isth_island *s);

/** Local port of socket @p i (host order); 0 if @p i >= n_sockets. */
uint16_t isth_island_socket_port(const struct isth_island *s, unsigned int i);

/**
 * Elements per full chunk (from the MTU) and chunks per tensor: the whole
 * tensor's, what every ROUND says (with conf.hosts > 1 the session owns a
 * part of them: isth_island_range()).
 */
uint32_t isth_island_chunk_elems(const struct isth_island *s);
uint32_t isth_island_n_chunks(const struct isth_island *s);

/**
 * The rule that splits a round among the hosts of an island: host @p host
 * of @p hosts owns the chunk ids [floor(host * n_chunks / hosts),
 * floor((host + 1) * n_chunks / hosts)). The edge splits by the same rule.
 *
 * @return 0 with *@p first and *@p count set; -EINVAL if @p hosts is 0 or
 *         above ISTH_ISLAND_MAX_HOSTS, @p host >= @p hosts, or
 *         @p n_chunks < @p hosts (a host would own no chunk).
 */
int isth_island_split(
	uint32_t n_chunks, unsigned int hosts, unsigned int host, uint32_t *first, uint32_t *count);

/**
 * This session's part of every round (conf.hosts, conf.host): its chunks
 * and the elements they hold; the whole tensor when hosts is 1. A caller
 * passes send() the @p n_elems elements from @p first_elem of its tensor,
 * and result() writes that many.
 */
void isth_island_range(const struct isth_island *s, struct isth_island_range *r);

/**
 * Wait for the next round announced by a ROUND: the oldest announced round
 * newer than any this function returned before.
 *
 * @param timeout_ns  longest wait (monotonic time); 0: just look
 * @return 0 and @p out filled; -ETIMEDOUT; -EPROTO when a ROUND whose shape
 *         (n_chunks, chunk_elems) disagrees with the session arrived since
 *         the last call (@p out then describes it; it is not usable).
 */
int
isth_island_wait_round(struct isth_island *s, uint64_t timeout_ns, struct isth_island_round *out);

/**
 * Send the island's contribution to @p round: one DATA per chunk of the
 * session's range (chunk ids 0..n_chunks-1 with one host; LAST on the
 * range's final one), and remember it so that the round's result
 * includes it. ROUND need not have arrived yet. With several hosts each
 * DATA seq is congruent to conf.host modulo conf.hosts, so hosts sharing
 * the island's key never use one IV twice.
 *
 * Rounds may overlap: the caller may send round r+1 (up to r+3) while
 * round r's AGGs still arrive; each round is summed in its own slot. Take
 * round r's result before sending round r+4, whose slot it is: once r's
 * deadline (+grace) has passed that send reuses the slot and r's result
 * is gone (-ESTALE); before then the send is refused with -EBUSY.
 *
 * @param tensor  the range's n elements in host order (isth_island_range()
 *                n_elems; conf.elems with one host), the first being
 *                element first_elem of the whole tensor (copied; the
 *                caller keeps ownership and may reuse it when this returns)
 * @param size    bytes in @p tensor: n * 4; a bf16 session also takes
 *                n * 2 (bf16 as is), and with n * 4 reads fp32 and rounds
 *                it to bf16 (nearest, ties to even)
 * @return 0; -EINVAL (size); -EALREADY (already sent for this round);
 *         -ESTALE (round already returned, or too old to keep);
 *         -EBUSY (every slot holds a live round); -EIO if a send failed
 *         (counted in tx_errors; the contribution is still kept).
 */
int isth_island_send(struct isth_island *s, uint32_t round, const void *tensor, size_t size);

/**
 * Wait for the end of @p round and return its aggregate.
 *
 * The round ends when every chunk has every expected contributor, or when
 * the session clock reaches deadline_ns + grace_ns; only the chunks of
 * the session's range count. @p out receives the range's n_elems 4-byte
 * elements in host order (int32, or fp32 for fp32 and bf16 sessions; with
 * one host conf.elems): per chunk, own contribution (if sent) plus the
 * AGGs received. @p chunks receives one entry per chunk of the range,
 * chunks[i] for chunk id first_chunk + i; @p res counts the range's
 * chunks. The result stays available (the same answer) until the slot is
 * reused.
 *
 * @param timeout_ns  longest wait for the ROUND itself if it has not
 *                    arrived (monotonic time)
 * @return 0 (every chunk complete); -ETIMEDOUT (the deadline passed with
 *         contributions missing: everything is filled, the missing sets
 *         say what is missing); -ENOENT (no ROUND for @p round within
 *         @p timeout_ns); -ESTALE (round no longer kept); -EINVAL/-ENOSPC
 *         (arguments, buffers too small).
 */
int isth_island_result(struct isth_island *s, uint32_t round, void *out, size_t out_size,
	struct isth_island_chunk *chunks, unsigned int max_chunks, struct isth_island_result *res,
	uint64_t timeout_ns);

/**
 * Wait up to @p timeout_ns (monotonic) for @p round to end, without
 * taking its result: for a caller that keeps several rounds in flight and
 * must not block past its next send. A round ends as in
 * isth_island_result(); once it has, result() answers at once.
 *
 * @return 0 (ended: complete, or deadline + grace passed); -EAGAIN (still
 *         collecting, or its ROUND has not arrived); -ESTALE (no longer
 *         kept); -EINVAL; or a negative errno from the socket.
 */
int isth_island_ready(struct isth_island *s, uint32_t round, uint64_t timeout_ns);

/**
 * Process incoming packets and timers (NACKs, probes) for up to
 * @p timeout_ns of monotonic time, returning after the first batch.
 * For callers that drive the session without blocking in result().
 * With conf.rx_threads the threads do that: this waits for one of their
 * batches (or @p timeout_ns) and returns 0.
 *
 * @return packets read (>= 0), or a negative errno from the socket.
 */
int isth_island_poll(struct isth_island *s, uint64_t timeout_ns);

/** Snapshot the counters. */
void isth_island_stats(struct isth_island *s, struct isth_island_stats *st);

/**
 * Why a wait may have found nothing: one line, for a timeout's message,
 * naming what the session received and refused for reasons that look
 * like a misconfiguration, by count and type, with what the last such
 * datagram said: another source address or port than the edge's
 * ("3 ROUND from 10.0.0.1:9471 with wire version 2, not from the edge
 * ..."), another wire version than the session's (a key file or not),
 * failed authentication (another key file), another job, another island.
 * When nothing at all arrived: that, with the local address and port the
 * edge must send to. Empty when datagrams arrived and none was refused
 * for those reasons. Built from the counters and the last refused
 * datagram of each reason (kept on the drop path only); no I/O.
 *
 * @return characters the full text needs (as snprintf); the text in
 *         @p buf is truncated to @p size and ends in "..." if cut.
 */
int isth_island_diagnose(struct isth_island *s, char *buf, size_t size);

/** Name of an island drop reason ("agg_overlap"), or "unknown". */
const char *isth_island_drop_name(unsigned int reason);

/**
 * Describe what a result is missing, per contributor, with chunk ranges:
 * "island 2 chunks 0-5,9; island 4 chunk 7", or "none".
 *
 * @return characters that the full text needs (as snprintf); the text in
 *         @p buf is truncated to @p size and ends in "..." if cut.
 */
int isth_island_missing_str(
	const struct isth_island_chunk *chunks, unsigned int n_chunks, char *buf, size_t size);

/**
 * As isth_island_missing_str(), for chunks[i] being chunk id
 * @p first_chunk + i (a host's range: result()'s chunks with
 * isth_island_range()'s first_chunk), so the text names chunk ids.
 */
int isth_island_missing_str_at(const struct isth_island_chunk *chunks, unsigned int n_chunks,
	uint32_t first_chunk, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_ISLAND_H */
