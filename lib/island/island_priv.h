/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISLAND_PRIV_H
#define ISLAND_PRIV_H

/*
 * libisthmus internals: the session struct and what its files call in one
 * another. Only lib/island/island_*.c include this; the API is isth_island.h.
 *
 * Files, by concern, each calling only the files listed above it (no
 * file calls back into one that calls it; the prototypes below are in
 * the same order):
 *   island_slot.c     round slots and the summation into them
 *   island_auth.c     wire v2: key files, replay windows, tag checks, reload
 *   island_send.c     DATA and NACK out (GSO, sending threads), send()
 *   island_repair.c   AGG seq windows: gaps, NACKs, probes, GONE, streams
 *   island_rx.c       reading and judging packets, receive threads (GRO)
 *   island_session.c  the round API: wait_round/result/ready/poll, stats
 *   island_open.c     open and close: parameters, buffers, sockets, threads
 *
 * The session: UDP sockets to the edge (socket 0, and with
 * n_sockets > 1 more, each sending a chunk range from a thread of the
 * session; optional UDP GSO on send and GRO on receive), a few round slots
 * (ROUND info, accumulator, per-chunk contributor bitmaps) and the AGG
 * stream's sequence window (what is missing, what was NACKed when).
 *
 * Everything below the "guarded by mu" line of struct isth_island is read
 * and written with the mutex held. Waiting callers drop the mutex: one of
 * them (the "reader") blocks in ppoll() on the socket, the others on the
 * condition variable; after each batch the reader broadcasts.
 *
 * With conf.rx_threads a thread per socket is the reader of its socket:
 * it reads a burst and checks its tags without mu, then takes mu once per
 * burst to judge it (seq windows of the streams it owns, which AGGs are
 * summed) and run its streams' timers, and broadcasts; callers only wait
 * on cv. It adds the AGGs it accepted into the round's accumulator after
 * it dropped mu ("Summation outside mu" below).
 *
 * Summation outside mu (receive threads). Under mu a thread decides
 * everything about an AGG as before (replay and seq windows, the slot,
 * the exactly-once bitmap, the completion counts) and queues the sum in
 * its rx_ctx (pend[]), counting it in the slot's busy; after mu it adds
 * the queued AGGs and drops busy (release). The rules:
 *  - a chunk's accumulator is written by one thread per round: slot.owner
 *    [c] is claimed under mu by the first socket that sums chunk c in the
 *    round (stream c % N is read on socket (c % N) % S alone, so that is
 *    always the same socket); an AGG of chunk c on another socket is
 *    dropped as agg_owner, so no input can make two threads write one
 *    chunk;
 *  - acc is read (result()), reset (isl_slot_get() taking the slot over) or
 *    added to by send() (own contribution, every chunk) only under mu and
 *    with busy seen 0 (acquire): no AGG judged under mu is then still
 *    being added, and none is judged while mu is held;
 *  - whoever waits for busy 0 holds no queued sums of its own (a thread
 *    adds its queue under mu first), so every busy count drops without
 *    waiting on anything: no deadlock.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "isth_clock.h"
#include "isth_ctr.h"
#include "isth_island.h"

#define BURST 32u
#define MAX_TICK_NS 10000000ull /* longest unattended wait: 10 ms */
#define PROBE_SPAN 32u /* seqs a tail probe asks for */

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103 /* linux/udp.h, Linux >= 4.18 */
#endif
#ifndef UDP_GRO
#define UDP_GRO 104 /* linux/udp.h, Linux >= 5.0 */
#endif
/* DATA a socket encodes before it sends them (one send buffer): 256 KB */
#define TXBUF_BYTES (4u * 65536u)
#define TX_CAP_MAX 512u /* and at most this many (tiny chunks) */
/* One segmented send: at most 64 segments (UDP_MAX_SEGMENTS on every
 * kernel with UDP_SEGMENT) and one IPv4 datagram's 65507 bytes. */
#define GSO_MAX_SEGS 64u
#define GSO_MAX_BYTES 65507u
/* Receive with GRO: buffers of a whole coalesced datagram */
#define RX_GRO_MSGS 16u
#define RX_GRO_BYTES 65536u
/* Tag statuses a receive thread computes per read before it takes mu:
 * datagrams per buffer (UDP GRO coalesces at most 64; more are verified
 * under mu) */
#define RX_VST_SEGS 64u
#define VST_NONE 0xffu /* not verified yet */

#define SEQ_MASK (ISTH_ISLAND_SEQ_WINDOW - 1)

/* Replay windows (auth on): one per (key epoch, type) of what the edge
 * sends an island; the sender of all of them is the edge of this island
 * and the direction DOWN, so epoch and type are the rest of the key. */
enum { WIN_AGG = 0, WIN_GONE, WIN_ROUND, WIN_TYPES };
/* ROUND: one per round; GONE: a few per round. Two rounds need far less. */
#define WIN_SMALL_BITS 256u

struct auth_win {
	bool used;
	uint8_t epoch; /* key epoch id (the header byte) */
	struct isth_auth_replay w[WIN_TYPES]; /* AGG stream 0, GONE of it, ROUND */
	/* AGG streams k >= 1 (doc/protocol.md, "AGG streams"): each stream
	 * starts its seqs at the edge worker's clock, so a window per stream;
	 * [k][0] AGG, [k][1] GONE; storage in agg_stream.win_words */
	struct isth_auth_replay sw[ISTH_WIRE_MAX_STREAMS][2];
};

_Static_assert((ISTH_ISLAND_SEQ_WINDOW & SEQ_MASK) == 0, "seq window must be a power of two");

/* State of one AGG sequence number inside the window. */
enum seq_state {
	SEQ_NONE = 0, /* not tracked (before the stream base) */
	SEQ_RECEIVED,
	SEQ_MISSING, /* a gap: NACKed until received, GONE or given up */
	SEQ_LOST, /* GONE or given up; still accepted if it turns up */
};

struct seq_ent {
	uint64_t last_nack_ns;
	uint32_t round; /* MISSING: round of the AGG that revealed the
				 * gap, the newest the seq can belong to */
	uint8_t state; /* enum seq_state */
	uint8_t nacks; /* NACKs sent for it */
};

enum slot_state {
	SLOT_FREE = 0,
	SLOT_OPEN, /* collecting */
	SLOT_DONE, /* result computed; answers result() again */
};

/*
 * A round slot. Every field but acc and busy is written under mu only
 * (by whoever judges the round's packets, send(), result()/ready()).
 * acc is written under mu by the caller's reads, send() (own
 * contribution) and isl_slot_get() (reset), those two only with busy 0; and
 * without mu by the receive thread that owns a chunk (owner[c]), for the
 * AGGs it queued (busy counts them). result() copies it under mu with
 * busy 0.
 */
struct slot {
	uint32_t round;
	uint8_t state; /* enum slot_state */
	bool announced; /* ROUND received: info valid */
	bool sent; /* own contribution added to acc */
	struct isth_island_round info;
	uint32_t chunks_done; /* announced: chunks whose bitmap == expected */
	uint64_t *bitmap; /* [n_chunks] AGG contributors summed */
	uint32_t *aggs; /* [n_chunks] AGGs summed */
	void *acc; /* [elems] uint32_t or float, host order */
	struct isth_island_result res; /* SLOT_DONE */
	int rc; /* SLOT_DONE: result()'s answer */
	/* Receive threads only. owner: [n_chunks] 1 + the socket whose
	 * thread sums chunk c this round, 0 none yet (written under mu).
	 * busy: AGGs judged into acc under mu and not added yet: raised
	 * under mu, lowered without mu (release) by the thread that adds
	 * them; acc may be read, reset or added to under mu only at 0. */
	uint8_t *owner;
	atomic_uint busy;
};

/* An AGG a receive thread accepted under mu and adds after it (its
 * payload stays in the thread's rx buffer until the next read). */
struct pend_sum {
	void *dst; /* chunk's place in the slot's acc */
	const uint8_t *src; /* little-endian payload */
	uint32_t n; /* elements */
	uint8_t dtype;
	uint8_t slot; /* index in slots[]: whose busy it holds */
};

union tx_cmsg {
	char buf[CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};

/*
 * One socket of a session and what it needs to send its chunk range:
 * socket 0 is driven by the caller of send(), socket i > 0 by the
 * session's thread i. The buffers and counters below are written only by
 * whoever sends on the socket, while send() holds txmu; send() folds the
 * counters into the stats after the socket's part is done.
 */
/*
 * One AGG stream of the edge (doc/protocol.md, "AGG streams"): its seq
 * window, what is missing and NACKed. Stream 0 exists from open; streams
 * 1..n_streams-1 are added (allocated once, never freed before close) when
 * a ROUND, verified when auth is on, says the edge sends them. Guarded by
 * the session's mu.
 */
struct agg_stream {
	bool have_seq; /* the stream has a base */
	uint64_t next_seq; /* highest AGG seq received + 1 */
	uint32_t seq_round; /* round of that AGG */
	uint64_t n_missing; /* SEQ_MISSING entries in the window */
	struct seq_ent *seqs; /* [ISTH_ISLAND_SEQ_WINDOW] */
	/* auth on, k >= 1: replay windows [ISTH_AUTH_MAX_EPOCHS][win_stride]
	 * (AGG of win_agg_bits, then GONE); stream 0 uses win_words */
	uint64_t *win_words;
	uint32_t win_agg_bits;
	size_t win_stride;
};

/* What one reader needs to read a burst: the caller's (session) or a
 * receive thread's (socket), each used by its owner alone. */
struct rx_ctx {
	uint8_t *buf; /* [rx_n][rx_size] */
	struct mmsghdr m[BURST];
	struct iovec v[BURST];
	struct sockaddr_in a[BURST];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c[BURST];
	uint8_t *vst; /* receive threads: [rx_n * RX_VST_SEGS] tag statuses */
	/* receive threads: AGGs judged under mu, added after it */
	struct pend_sum *pend; /* [max_pend] */
	unsigned int n_pend, max_pend;
};

struct isl_sock {
	struct isth_island *sess; /* written by: open */
	unsigned int idx; /* written by: open; chunk range idx of n_socks */
	int fd; /* written by: open */
	uint16_t port; /* written by: open */
	uint8_t *buf; /* [tx_cap][pkt_stride]: DATA, back to back */
	size_t *len; /* [tx_cap] */
	struct mmsghdr *m; /* [tx_cap] */
	struct iovec *v; /* [tx_cap] */
	union tx_cmsg *cm; /* [tx_cap] */
	/* seals this socket's DATA (auth on); own OpenSSL context, so the
	 * sockets seal in parallel; replaced by reload_keys() under txmu */
	struct isth_auth_engine *eng;
	pthread_t th;
	bool th_started;
	/* conf.rx_threads: the receive thread of this socket and what it
	 * reads with (written by open; rx used by the thread alone) */
	pthread_t rx_th;
	bool rx_started;
	struct rx_ctx *rx;
	/* verifies this socket's datagrams outside mu: own OpenSSL context;
	 * the thread holds rxmu while it uses it, reload_keys() swaps it
	 * holding mu and rxmu (under mu alone the thread may use it too) */
	struct isth_auth_engine *rx_eng;
	pthread_mutex_t rxmu;
	bool rxmu_init;
	uint64_t last_probe_ns; /* tail probes of its streams; under mu */
	/* per send(): written by the sender, read by send() after it */
	int rc;
	uint64_t pkts, bytes, errors, gso_sends, gso_refused;
};

/* What the threads of a send() are asked to send (under jmu). */
struct tx_job {
	uint32_t round;
	const uint8_t *src;
	bool src_f32;
	uint64_t seq0; /* DATA seq of chunk 0 */
};

/*
 * Datagrams refused for a reason that looks like a misconfiguration of
 * this session or its edge, for isth_island_diagnose(): how many of each
 * type, and what the last one said. Written on those drop paths only
 * (never for an accepted datagram), under mu.
 */
enum isl_odd {
	ODD_SOURCE, /* not from the edge address and port (drop source) */
	ODD_VERSION, /* another wire version (wire E_VERSION, or auth_format) */
	ODD_JOB, /* another job (drop job) */
	ODD_SENDER, /* for another island (drop sender) */
	ODD_MAX
};

struct isl_odd_seen {
	uint64_t n_round, n_agg, n_other; /* by header type */
	uint32_t ip; /* the last one's source, network order */
	uint16_t port; /* network order */
	uint8_t version; /* header byte 2; 0: not an isthmus header */
	uint8_t sender;
	uint32_t job;
};

struct isth_island {
	/* written by: open; read-only afterwards */
	struct isth_island_conf conf;
	struct isth_wire_limits lim;
	struct sockaddr_in edge;
	unsigned int n_socks;
	struct isl_sock socks[ISTH_ISLAND_MAX_SOCKETS];
	size_t pkt_stride; /* a full chunk's DATA message, tag included */
	size_t pkt_over; /* bytes of a DATA that are not payload */
	unsigned int tx_cap; /* DATA one send buffer holds */
	unsigned int gso_segs; /* DATA per segmented send */
	bool gro; /* UDP_GRO on every socket */
	unsigned int rx_n; /* rx buffers */
	size_t rx_size; /* bytes per rx buffer */
	uint32_t chunk_elems;
	uint32_t n_chunks; /* the whole tensor's: every ROUND's */
	/* the chunks this host owns, [c0, c0 + rc_n), and the elements they
	 * hold, [e0, e0 + r_elems): what send() takes, acc holds and
	 * result() gives (conf.hosts; the whole tensor with one host) */
	uint32_t c0, rc_n;
	uint32_t e0, r_elems;
	unsigned int hosts, host;
	size_t msg_max; /* largest message the MTU allows */
	uint64_t tick_ns; /* longest wait between timer runs */
	bool auth_on; /* conf.key_file given (fixed at open) */
	/* conf.rx_threads: a receive thread per socket, stream k owned by
	 * socket k % n_socks; close() sets rx_quit and signals wake_fd */
	bool rx_threads;
	atomic_bool rx_quit;
	int wake_fd;

	pthread_mutex_t mu;
	pthread_cond_t cv; /* broadcast after each batch */
	/* callers and threads waiting under mu for a slot's busy to reach
	 * 0; a thread whose adds bring busy to 0 broadcasts cv if any */
	atomic_uint sum_waiters;

	/* GSO in use: cleared once, for good, by the first sender the
	 * kernel refuses (any thread; read by every sender) */
	atomic_bool gso_on;
	/* one send() transmits at a time; reload_keys() takes it (before
	 * mu) to swap the senders' engines */
	pthread_mutex_t txmu;
	/* the job of send()'s threads: written under jmu */
	pthread_mutex_t jmu;
	pthread_cond_t jcv; /* job posted, or a part done */
	uint64_t job_gen; /* posted jobs */
	unsigned int job_pending; /* threads still sending the job */
	bool job_quit; /* close(): threads exit */
	struct tx_job job;

	/* guarded by mu */
	bool reading; /* a caller is blocked in ppoll() */
	/* receive threads: something a waiting caller looks for happened (a
	 * ROUND, a round complete); the thread broadcasts cv only then, so a
	 * burst that changes nothing a caller waits on wakes nobody (callers
	 * still look at least every tick_ns, for deadlines) */
	bool rx_wake;
	struct slot slots[ISTH_ISLAND_ROUNDS];
	bool have_newest;
	uint32_t newest_round; /* newest round any slot took */
	bool have_waited;
	uint32_t last_waited; /* last round wait_round() returned */
	bool shape_err; /* a ROUND of the wrong shape came */
	struct isth_island_round shape_info;

	/* AGG streams followed: 1 from open, raised (never lowered) by
	 * the ROUNDs' stream field */
	unsigned int n_streams;
	struct agg_stream as[ISTH_WIRE_MAX_STREAMS];
	uint64_t quiet_since_ns; /* last AGG or ROUND received */
	uint64_t data_seq; /* next DATA seq */
	uint64_t nack_seq; /* next NACK seq (auth on; v1 sends 0) */
	/* counters: each written with isth_ctr_add() under mu (one writer at a
	 * time; open() before any thread runs), snapshot by isth_island_stats() */
	struct isth_island_stats st;
	/* what misconfiguration-like drops said (on_datagram(), under mu) */
	struct isl_odd_seen odd[ODD_MAX];

	/* Authentication, conf.key_file (NULL when off). auth and eng are
	 * replaced together by reload_keys(); win[] follows the epochs of
	 * auth, its storage (win_words) is allocated at open. */
	struct isth_auth *auth;
	struct isth_auth_engine *eng;
	struct auth_win win[ISTH_AUTH_MAX_EPOCHS];
	uint32_t win_bits[WIN_TYPES];
	uint64_t *win_words; /* [ISTH_AUTH_MAX_EPOCHS][win_stride] */
	size_t win_stride;

	struct rx_ctx rx; /* the caller's reads (not with rx_threads) */
	struct pollfd pfd[ISTH_ISLAND_MAX_SOCKETS];
	uint8_t *nackbuf; /* [msg_max]: NACKs and probes, under mu */
	struct mmsghdr nackm;
	struct iovec nackv;
};

static inline uint64_t
now_ns(const struct isth_island *s)
{
	return s->conf.clock(s->conf.clock_arg);
}

static inline uint64_t
self_bit(const struct isth_island *s)
{
	return UINT64_C(1) << s->conf.island;
}

static inline uint32_t
chunk_len(const struct isth_island *s, uint32_t c)
{
	uint64_t off = (uint64_t)c * s->chunk_elems;
	uint64_t left = s->conf.elems - off;

	return left < s->chunk_elems ? (uint32_t)left : s->chunk_elems;
}

/* Chunk @c belongs to this host's range. */
static inline bool
chunk_mine(const struct isth_island *s, uint32_t c)
{
	return c >= s->c0 && c - s->c0 < s->rc_n;
}

/* Where chunk @c (of the range) starts in a slot's acc. */
static inline void *
chunk_acc(const struct isth_island *s, const struct slot *sl, uint32_t c)
{
	return (uint8_t *)sl->acc + ((size_t)c * s->chunk_elems - s->e0) * 4;
}

static inline uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* When round @sl ends: its ROUND's deadline + conf.grace_ns, or + its
 * period with ISTH_ISLAND_GRACE_PERIOD (a slot whose ROUND has not come
 * has period 0: it ends at its deadline, as before). */
static inline uint64_t
slot_end(const struct isth_island *s, const struct slot *sl)
{
	uint64_t g = s->conf.grace_ns == ISTH_ISLAND_GRACE_PERIOD ? sl->info.period_ns
								  : s->conf.grace_ns;

	return sat_add(sl->info.deadline_ns, g);
}

/* bfloat16 <-> binary32. Widening is exact. Narrowing rounds to nearest,
 * ties to even, and keeps a NaN a quiet NaN (never rounded into inf): the
 * same rule as the edge's bf16 output (doc/agg.md). */
static inline float
bf16_to_f32(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t
f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Bytes per element on the wire in DATA (the session's dtype). */
static inline size_t
wire_esize(const struct isth_island *s)
{
	return s->conf.dtype == ISTH_WIRE_DTYPE_BF16 ? 2 : 4;
}

static inline void
drop(struct isth_island *s, enum isth_island_drop why)
{
	isth_ctr_add(&s->st.drop[why], 1);
}

/* The socket that owns AGG stream @k: receives it, NACKs and probes it
 * (k % n_socks with receive threads; socket 0 reads for all without). */
static inline unsigned int
stream_sock(const struct isth_island *s, unsigned int k)
{
	return s->rx_threads ? k % s->n_socks : 0;
}

#define ALL_SOCKS UINT32_MAX /* isl_run_timers(): every stream (no rx threads) */

/* Stream @k arrived on socket @sock, which does not own it: only with
 * receive threads (without, the caller reads any stream on any socket). */
static inline bool
stream_foreign(const struct isth_island *s, unsigned int k, unsigned int sock)
{
	return s->rx_threads && k % s->n_socks != sock;
}

static inline struct slot *
slot_find(struct isth_island *s, uint32_t round)
{
	struct slot *sl = &s->slots[round % ISTH_ISLAND_ROUNDS];

	return sl->state != SLOT_FREE && sl->round == round ? sl : NULL;
}

/* Every AGG judged into @sl's acc is added (mu held): acc may be read,
 * reset or added to. Acquire: pairs with isl_pend_run()'s release. */
static inline bool
slot_summed(struct slot *sl)
{
	return atomic_load_explicit(&sl->busy, memory_order_acquire) == 0;
}

/* The queue of the receive thread that reads socket @sock, or NULL: the
 * caller reads (no receive threads) and adds each AGG at once. */
static inline struct rx_ctx *
sum_ctx(const struct isth_island *s, unsigned int sock)
{
	return s->rx_threads ? s->socks[sock].rx : NULL;
}

/* ---- island_slot.c: round slots, summation ---------------------------- */

bool isl_round_is_old(const struct isth_island *s, uint32_t round);
void isl_slot_wait_sums(struct isth_island *s, struct slot *sl);
struct slot *isl_slot_get(struct isth_island *s, uint32_t round, uint64_t now,
	enum isth_island_drop *why, struct rx_ctx *x);
void
isl_sum_le(const struct isth_island *s, uint8_t dtype, void *dst, const uint8_t *src, uint32_t n);
void isl_pend_run(struct isth_island *s, struct rx_ctx *x, bool locked, bool wake);

/* ---- island_auth.c: authentication (wire v2) ------------------------- */

void isl_stream_win_init(struct isth_island *s, unsigned int j, unsigned int k);
void isl_win_sync(struct isth_island *s);
bool isl_auth_rx(struct isth_island *s, const uint8_t *buf, size_t len, unsigned int sock,
	struct isth_auth_engine *eng, uint8_t vst, struct isth_auth_replay **win);
bool
isl_auth_commit(struct isth_island *s, struct isth_auth_replay *win, const struct isth_wire_pkt *p);
int isl_auth_load(const struct isth_island *s, const char *path, struct isth_auth **a,
	struct isth_auth_engine **e, char *err, size_t errlen);
uint32_t isl_agg_win_bits(const struct isth_island *s, unsigned int n_streams);
int isl_win_alloc(struct isth_island *s);

/* ---- island_send.c: DATA and NACK out -------------------------------- */

int isl_send_nack(struct isth_island *s, const struct isth_wire_range *r, unsigned int n,
	uint32_t round, unsigned int stream);
void *isl_tx_thread(void *arg);
void isl_tx_threads_stop(struct isth_island *s);

/* ---- island_repair.c: seq windows, NACKs, probes, GONE --------------- */

bool isl_seq_accept(struct isth_island *s, struct agg_stream *a, const struct isth_wire_hdr *h);
void isl_run_timers(struct isth_island *s, uint64_t now, unsigned int sock);
void isl_on_gone(struct isth_island *s, const struct isth_wire_pkt *p);
void isl_streams_add(struct isth_island *s, unsigned int count);

/* ---- island_rx.c: receiving ------------------------------------------- */

int isl_rx_drain(struct isth_island *s);
void *isl_rx_thread(void *arg);
void isl_rx_threads_stop(struct isth_island *s);
int isl_wait_io(struct isth_island *s, uint64_t slice_ns);

#endif /* ISLAND_PRIV_H */
