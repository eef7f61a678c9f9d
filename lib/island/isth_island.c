/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libisthmus session: UDP sockets to the edge (socket 0, and with
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
 *  - acc is read (result()), reset (slot_get() taking the slot over) or
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
 * contribution) and slot_get() (reset), those two only with busy 0; and
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
	uint32_t n_chunks;
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
	struct isth_island_stats st;

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

static const char *const drop_names[ISTH_ISLAND_DROP_MAX] = {
#define X(n, s) #n,
	ISTH_ISLAND_DROPS(X)
#undef X
};

const char *
isth_island_drop_name(unsigned int reason)
{
	return reason < ISTH_ISLAND_DROP_MAX ? drop_names[reason] : "unknown";
}

static uint64_t
realtime_ns(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

static inline uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
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
	s->st.drop[why]++;
}

/* The socket that owns AGG stream @k: receives it, NACKs and probes it
 * (k % n_socks with receive threads; socket 0 reads for all without). */
static inline unsigned int
stream_sock(const struct isth_island *s, unsigned int k)
{
	return s->rx_threads ? k % s->n_socks : 0;
}

#define ALL_SOCKS UINT32_MAX /* run_timers(): every stream (no rx threads) */

/* Stream @k arrived on socket @sock, which does not own it: only with
 * receive threads (without, the caller reads any stream on any socket). */
static inline bool
stream_foreign(const struct isth_island *s, unsigned int k, unsigned int sock)
{
	return s->rx_threads && k % s->n_socks != sock;
}

/* ---- sending ---------------------------------------------------------- */

static void
tx_msg(struct isth_island *s, struct mmsghdr *m, struct iovec *v, void *base, size_t len)
{
	v->iov_base = base;
	v->iov_len = len;
	memset(m, 0, sizeof(*m));
	m->msg_hdr.msg_name = &s->edge;
	m->msg_hdr.msg_namelen = sizeof(s->edge);
	m->msg_hdr.msg_iov = v;
	m->msg_hdr.msg_iovlen = 1;
}

/* sendmmsg @n prepared messages; returns how many were sent (all, or up
 * to the one that failed, errno set). */
static unsigned int
tx_mmsg(int fd, struct mmsghdr *m, unsigned int n)
{
	unsigned int done = 0;

	while (done < n) {
		int k = sendmmsg(fd, m + done, n - done, 0);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		done += (unsigned int)k;
	}
	return done;
}

/* Plain: packets [from, k) of @so's buffer, one datagram each, in
 * sendmmsg calls of BURST (what a session without GSO always did). */
static int
tx_plain(struct isth_island *s, struct isl_sock *so, unsigned int from, unsigned int k)
{
	unsigned int i, j;

	for (i = from; i < k; i += BURST) {
		unsigned int n = k - i < BURST ? k - i : BURST, sent;

		for (j = 0; j < n; j++)
			tx_msg(s, &so->m[j], &so->v[j], so->buf + (size_t)(i + j) * s->pkt_stride,
				so->len[i + j]);
		sent = tx_mmsg(so->fd, so->m, n);
		for (j = 0; j < sent; j++)
			so->bytes += so->len[i + j] - s->pkt_over;
		so->pkts += sent;
		if (sent < n) {
			so->errors += k - i - sent;
			return -EIO;
		}
	}
	return 0;
}

/* May a send refused with @err be sent again without GSO? What Linux
 * answers a UDP_SEGMENT it will not do: EINVAL (no checksum, sizes),
 * EIO (the device cannot checksum), EOPNOTSUPP/ENOPROTOOPT (old kernel). */
static bool
gso_refusal(int err)
{
	return err == EINVAL || err == EIO || err == EOPNOTSUPP || err == ENOPROTOOPT;
}

/*
 * Send the @k DATA in @so's buffer. GSO: up to gso_segs of them (all
 * pkt_stride long but the tensor's last chunk, which is last) in one
 * buffer that the kernel cuts into datagrams of pkt_stride bytes, so the
 * wire carries exactly the datagrams the plain path sends. If the kernel
 * refuses, GSO is off for the session and the rest goes out plain.
 */
static int
tx_packets(struct isth_island *s, struct isl_sock *so, unsigned int k)
{
	unsigned int i = 0, n = 0, g, j, sent, first[TX_CAP_MAX + 1];

	if (!atomic_load_explicit(&s->gso_on, memory_order_relaxed))
		return tx_plain(s, so, 0, k);
	while (i < k) {
		size_t len = 0;

		g = k - i < s->gso_segs ? k - i : s->gso_segs;
		for (j = 0; j < g; j++)
			len += so->len[i + j];
		tx_msg(s, &so->m[n], &so->v[n], so->buf + (size_t)i * s->pkt_stride, len);
		if (g > 1) {
			struct cmsghdr *c = &so->cm[n].align;
			uint16_t seg = (uint16_t)s->pkt_stride;

			memset(&so->cm[n], 0, sizeof(so->cm[n]));
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(seg));
			memcpy(CMSG_DATA(c), &seg, sizeof(seg));
			so->m[n].msg_hdr.msg_control = so->cm[n].buf;
			so->m[n].msg_hdr.msg_controllen = sizeof(so->cm[n].buf);
		}
		first[n++] = i;
		i += g;
	}
	first[n] = k;
	sent = tx_mmsg(so->fd, so->m, n);
	for (j = 0; j < sent; j++) {
		so->pkts += first[j + 1] - first[j];
		so->bytes += so->v[j].iov_len - (first[j + 1] - first[j]) * s->pkt_over;
		so->gso_sends += first[j + 1] - first[j] > 1;
	}
	if (sent == n)
		return 0;
	if (first[sent + 1] - first[sent] > 1 && gso_refusal(errno)) {
		/* nothing of that send left: the kernel refuses a segmented
		 * send before it builds any datagram */
		atomic_store_explicit(&s->gso_on, false, memory_order_relaxed);
		so->gso_refused++;
		return tx_plain(s, so, first[sent], k);
	}
	so->errors += k - first[sent];
	return -EIO;
}

/* One NACK (or probe) naming @n ranges of AGG seqs of AGG stream @stream. */
static int
send_nack(struct isth_island *s, const struct isth_wire_range *r, unsigned int n, uint32_t round,
	unsigned int stream)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_NACK,
		.stream = (uint8_t)stream,
		.sender = s->conf.island,
		.count = (uint16_t)n,
		.job = s->conf.job,
		.round = round,
		/* v2: NACKs have their own stream (the IV needs it) */
		.seq = s->eng ? s->nack_seq++ : 0,
	};
	uint8_t *p = s->nackbuf;
	size_t len = ISTH_WIRE_HDR_SIZE + (size_t)n * ISTH_WIRE_RANGE_SIZE;

	isth_wire_put_hdr(p, s->msg_max, &h);
	isth_wire_put_ranges(p + ISTH_WIRE_HDR_SIZE, s->msg_max - ISTH_WIRE_HDR_SIZE, r, n);
	if (s->eng) {
		int k = isth_auth_seal(s->eng, ISTH_AUTH_UP, s->conf.island, p, len, s->msg_max);

		if (k < 0) {
			s->st.tx_errors++;
			return k;
		}
		len = (size_t)k;
	}
	tx_msg(s, &s->nackm, &s->nackv, p, len);
	/* from the stream's own socket: that is where its repairs are read */
	if (tx_mmsg(s->socks[stream_sock(s, stream)].fd, &s->nackm, 1) != 1) {
		s->st.tx_errors++;
		return -EIO;
	}
	return 0;
}

/* ---- round slots ------------------------------------------------------ */

static struct slot *
slot_find(struct isth_island *s, uint32_t round)
{
	struct slot *sl = &s->slots[round % ISTH_ISLAND_ROUNDS];

	return sl->state != SLOT_FREE && sl->round == round ? sl : NULL;
}

/* A round no slot can hold any more, or never again. */
static bool
round_is_old(const struct isth_island *s, uint32_t round)
{
	const struct slot *sl = &s->slots[round % ISTH_ISLAND_ROUNDS];

	if (s->have_newest && (uint64_t)round + ISTH_ISLAND_ROUNDS <= s->newest_round)
		return true;
	return sl->state != SLOT_FREE && sl->round > round;
}

/* Every AGG judged into @sl's acc is added (mu held): acc may be read,
 * reset or added to. Acquire: pairs with pend_run()'s release. */
static inline bool
slot_summed(struct slot *sl)
{
	return atomic_load_explicit(&sl->busy, memory_order_acquire) == 0;
}

/*
 * Wait once (mu held, dropped while waiting) for @sl's queued AGGs to be
 * added by the receive threads; the caller looks at the slot again after
 * (it may have changed) and holds no queued AGGs of its own. sum_waiters
 * is raised before busy is read, and pend_run() lowers busy before it
 * reads sum_waiters (both seq_cst): either this sees busy 0 or the last
 * adder sees a waiter and broadcasts, which it can only do (taking mu)
 * once this waits.
 */
static void
slot_wait_sums(struct isth_island *s, struct slot *sl)
{
	struct timespec ts;
	uint64_t t;

	atomic_fetch_add(&s->sum_waiters, 1);
	if (atomic_load(&sl->busy) != 0) {
		t = mono_ns() + s->tick_ns;
		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	atomic_fetch_sub(&s->sum_waiters, 1);
}

static void pend_run(struct isth_island *s, struct rx_ctx *x, bool locked, bool wake);

/*
 * The slot of @round, taking it over if needed. A slot is taken from an
 * older round only when that round is done, or its deadline (+grace) has
 * passed, or it was never announced: a live round is never evicted; and
 * only once no receive thread still adds into it (its own queue, @x, is
 * added first; NULL: a caller, which queues nothing).
 */
static struct slot *
slot_get(struct isth_island *s, uint32_t round, uint64_t now, enum isth_island_drop *why,
	struct rx_ctx *x)
{
	struct slot *sl = &s->slots[round % ISTH_ISLAND_ROUNDS];

again:
	if (sl->state != SLOT_FREE && sl->round == round)
		return sl;
	if (round_is_old(s, round)) {
		*why = ISTH_ISLAND_DROP_round_old;
		return NULL;
	}
	if (sl->state == SLOT_OPEN && sl->announced &&
		now < sat_add(sl->info.deadline_ns, s->conf.grace_ns)) {
		*why = ISTH_ISLAND_DROP_round_busy;
		return NULL;
	}
	if (!slot_summed(sl)) {
		if (x != NULL && x->n_pend)
			pend_run(s, x, true, false);
		slot_wait_sums(s, sl);
		goto again;
	}
	memset(sl->acc, 0, (size_t)s->conf.elems * 4);
	memset(sl->bitmap, 0, (size_t)s->n_chunks * sizeof(*sl->bitmap));
	memset(sl->aggs, 0, (size_t)s->n_chunks * sizeof(*sl->aggs));
	if (sl->owner != NULL)
		memset(sl->owner, 0, s->n_chunks);
	memset(&sl->info, 0, sizeof(sl->info));
	memset(&sl->res, 0, sizeof(sl->res));
	sl->round = round;
	sl->state = SLOT_OPEN;
	sl->announced = false;
	sl->sent = false;
	sl->chunks_done = 0;
	sl->rc = 0;
	if (!s->have_newest || round > s->newest_round) {
		s->have_newest = true;
		s->newest_round = round;
	}
	return sl;
}

/* Add @n little-endian elements of type @dtype at @src into the
 * accumulator at @dst (int32, or fp32 for fp32 and bf16 sessions). */
static void
sum_le(const struct isth_island *s, uint8_t dtype, void *dst, const uint8_t *src, uint32_t n)
{
	uint32_t i, v;

	(void)s;
	if (dtype == ISTH_WIRE_DTYPE_BF16) {
		float *d = dst;
		uint16_t b;

		for (i = 0; i < n; i++) {
			memcpy(&b, src + 2 * (size_t)i, 2);
			d[i] += bf16_to_f32(le16toh(b));
		}
	} else if (dtype == ISTH_WIRE_DTYPE_INT32) {
		uint32_t *d = dst;

		for (i = 0; i < n; i++) {
			memcpy(&v, src + 4 * (size_t)i, 4);
			d[i] += le32toh(v); /* wraps modulo 2^32 */
		}
	} else {
		float *d = dst, f;

		for (i = 0; i < n; i++) {
			memcpy(&v, src + 4 * (size_t)i, 4);
			v = le32toh(v);
			memcpy(&f, &v, 4);
			d[i] += f;
		}
	}
}

/*
 * Add the AGGs receive thread context @x queued (after the thread dropped
 * mu; or under mu, @locked, before it waits on a slot or when its queue is
 * full) and release them: each slot's busy drops by what was added, with
 * release order, so whoever sees 0 (slot_summed()) sees the sums. The
 * thread that brings a busy to 0 wakes the waiters (slot_wait_sums()),
 * and so does @wake (a caller waits for what the burst judged: one
 * wake-up once the sums are in, not one before and one after).
 */
static void
pend_run(struct isth_island *s, struct rx_ctx *x, bool locked, bool wake)
{
	unsigned int cnt[ISTH_ISLAND_ROUNDS] = {0}, i;
	bool zero = false;

	for (i = 0; i < x->n_pend; i++) {
		const struct pend_sum *q = &x->pend[i];

		sum_le(s, q->dtype, q->dst, q->src, q->n);
		cnt[q->slot]++;
	}
	x->n_pend = 0;
	for (i = 0; i < ISTH_ISLAND_ROUNDS; i++)
		if (cnt[i] && atomic_fetch_sub(&s->slots[i].busy, cnt[i]) == cnt[i])
			zero = true;
	if (wake || (zero && atomic_load(&s->sum_waiters) != 0)) {
		if (!locked)
			pthread_mutex_lock(&s->mu);
		pthread_cond_broadcast(&s->cv);
		if (!locked)
			pthread_mutex_unlock(&s->mu);
	}
}

/* The queue of the receive thread that reads socket @sock, or NULL: the
 * caller reads (no receive threads) and adds each AGG at once. */
static inline struct rx_ctx *
sum_ctx(const struct isth_island *s, unsigned int sock)
{
	return s->rx_threads ? s->socks[sock].rx : NULL;
}

/* ---- the AGG sequence window ------------------------------------------ */

static inline struct seq_ent *
seq_ent(struct agg_stream *a, uint64_t q)
{
	return &a->seqs[q & SEQ_MASK];
}

static inline uint64_t
seq_low(const struct agg_stream *a)
{
	return a->next_seq > ISTH_ISLAND_SEQ_WINDOW ? a->next_seq - ISTH_ISLAND_SEQ_WINDOW : 0;
}

/* Start stream @a afresh at @q (first AGG, or the edge restarted). */
static void
seq_base(struct agg_stream *a, uint64_t q, uint32_t round)
{
	memset(a->seqs, 0, ISTH_ISLAND_SEQ_WINDOW * sizeof(*a->seqs));
	a->have_seq = true;
	a->n_missing = 0;
	a->next_seq = q + 1;
	a->seq_round = round;
	seq_ent(a, q)->state = SEQ_RECEIVED;
}

/* Move next_seq to @to (an AGG of @round arrived): [next_seq, to) become
 * missing; what falls out of the window while still missing is lost. */
static void
seq_advance(struct isth_island *s, struct agg_stream *a, uint64_t to, uint32_t round)
{
	uint64_t from = a->next_seq, x;

	if (to - from > ISTH_ISLAND_SEQ_WINDOW) {
		s->st.lost_seqs += to - ISTH_ISLAND_SEQ_WINDOW - from;
		from = to - ISTH_ISLAND_SEQ_WINDOW;
	}
	for (x = from; x < to; x++) {
		struct seq_ent *e = seq_ent(a, x);

		if (e->state == SEQ_MISSING) {
			a->n_missing--;
			s->st.lost_seqs++;
		}
		e->state = SEQ_MISSING;
		e->nacks = 0;
		e->last_nack_ns = 0;
		e->round = round;
		a->n_missing++;
	}
	a->next_seq = to;
}

/*
 * Sequence bookkeeping of one AGG. Returns true if the AGG is new (go on
 * with it), false if it is a duplicate or refused (already counted).
 *
 * An edge that restarts numbers from 0 again with fresh (not RESENT) AGGs
 * of a newer round: a non-RESENT AGG behind the stream for a round newer
 * than the stream's newest is taken as such a restart. A genuine duplicate
 * carries the round of its original, never a newer one.
 */
static bool
seq_accept(struct isth_island *s, struct agg_stream *a, const struct isth_wire_hdr *h)
{
	bool fresh_newer = !(h->flags & ISTH_WIRE_F_RESENT) && h->round > a->seq_round;
	uint64_t q = h->seq;
	struct seq_ent *e;

	if (!a->have_seq) {
		seq_base(a, q, h->round);
		return true;
	}
	if (q >= a->next_seq) {
		if (q - a->next_seq >= ISTH_ISLAND_SEQ_WINDOW && h->round <= a->seq_round) {
			drop(s, ISTH_ISLAND_DROP_seq_jump);
			return false;
		}
		/* A restarted v2 edge starts its stream at its clock, far
		 * ahead: past the window, fresh and for a newer round, it is a
		 * restart, not a gap of millions of lost AGGs to NACK. */
		if (q - a->next_seq >= ISTH_ISLAND_SEQ_WINDOW && fresh_newer) {
			s->st.seq_resyncs++;
			seq_base(a, q, h->round);
			return true;
		}
		seq_advance(s, a, q + 1, h->round);
		e = seq_ent(a, q);
		e->state = SEQ_RECEIVED;
		a->n_missing--;
		if (h->round > a->seq_round)
			a->seq_round = h->round;
		return true;
	}
	if (q < seq_low(a)) {
		if (fresh_newer) {
			s->st.seq_resyncs++;
			seq_base(a, q, h->round);
			return true;
		}
		drop(s, ISTH_ISLAND_DROP_seq_old);
		return false;
	}
	e = seq_ent(a, q);
	switch (e->state) {
	case SEQ_MISSING:
		a->n_missing--;
		e->state = SEQ_RECEIVED;
		return true;
	case SEQ_RECEIVED:
		if (fresh_newer) {
			s->st.seq_resyncs++;
			seq_base(a, q, h->round);
			return true;
		}
		s->st.duplicates++;
		return false;
	default:
		if (fresh_newer) {
			s->st.seq_resyncs++;
			seq_base(a, q, h->round);
			return true;
		}
		/* LOST (GONE or given up) but here after all, or before the
		 * base (reordered): the contribution is welcome. */
		e->state = SEQ_RECEIVED;
		return true;
	}
}

/*
 * Whether missing seq @e is still worth a NACK at @now: until the deadline
 * (+grace) of the round that revealed it (no seq of an older round is
 * summed later than that), or that round's result is done; when that
 * round is unknown here (never announced, or its slot reused), for
 * nack_retries NACKs.
 */
static bool
seq_nack_budget(struct isth_island *s, const struct seq_ent *e, uint64_t now)
{
	const struct slot *sl = slot_find(s, e->round);

	if (sl != NULL && sl->announced)
		return sl->state == SLOT_OPEN &&
			now < sat_add(sl->info.deadline_ns, s->conf.grace_ns);
	return e->nacks < s->conf.nack_retries;
}

/* NACK every missing seq not NACKed in the last nack_interval; give up on
 * those whose budget (seq_nack_budget) is spent. */
static void
run_nacks(struct isth_island *s, unsigned int k, uint64_t now)
{
	struct agg_stream *a = &s->as[k];
	struct isth_wire_range r[64];
	unsigned int n = 0, max = s->lim.max_ranges < 64 ? s->lim.max_ranges : 64;
	uint64_t x, seqs = 0;
	bool open = false;

	for (x = seq_low(a); x < a->next_seq && a->n_missing; x++) {
		struct seq_ent *e = seq_ent(a, x);
		bool due;

		if (e->state != SEQ_MISSING) {
			open = false;
			continue;
		}
		due = e->nacks == 0 || now - e->last_nack_ns >= s->conf.nack_interval_ns;
		if (!due) {
			open = false;
			continue;
		}
		if (!seq_nack_budget(s, e, now)) {
			e->state = SEQ_LOST;
			a->n_missing--;
			s->st.lost_seqs++;
			open = false;
			continue;
		}
		if (e->nacks < UINT8_MAX)
			e->nacks++;
		e->last_nack_ns = now;
		seqs++;
		if (open) {
			r[n - 1].last = x;
			continue;
		}
		if (n == max) {
			if (send_nack(s, r, n, a->seq_round, k) == 0)
				s->st.nacks_sent++;
			n = 0;
		}
		r[n].first = r[n].last = x;
		n++;
		open = true;
	}
	if (n && send_nack(s, r, n, a->seq_round, k) == 0)
		s->st.nacks_sent++;
	s->st.nack_seqs += seqs;
}

/*
 * Tail loss: the last AGGs of a round leave no gap behind them until the
 * next round's arrive, too late. While an announced round is incomplete
 * and the stream has been quiet for probe_ns, ask for the seqs after the
 * newest: the edge resends what it has and answers GONE for seqs it has
 * not sent yet, which the island ignores.
 */
static void
run_probe(struct isth_island *s, uint64_t now, unsigned int sock)
{
	struct isl_sock *so = &s->socks[sock == ALL_SOCKS ? 0 : sock];
	struct isth_wire_range r;
	const struct slot *live = NULL;
	unsigned int i;

	if (s->conf.probe_ns == UINT64_MAX || now - s->quiet_since_ns < s->conf.probe_ns ||
		now - so->last_probe_ns < s->conf.probe_ns)
		return;
	for (i = 0; i < ISTH_ISLAND_ROUNDS; i++) {
		const struct slot *sl = &s->slots[i];

		if (sl->state == SLOT_OPEN && sl->announced && sl->chunks_done < s->n_chunks &&
			now < sat_add(sl->info.deadline_ns, s->conf.grace_ns))
			live = sl;
	}
	if (live == NULL)
		return;
	so->last_probe_ns = now;
	/* each stream's tail: which stream the last AGGs are in is unknown;
	 * with receive threads, socket @sock probes the streams it owns */
	for (i = 0; i < s->n_streams; i++) {
		const struct agg_stream *a = &s->as[i];

		if (sock != ALL_SOCKS && stream_sock(s, i) != sock)
			continue;
		r.first = a->have_seq ? a->next_seq : 0;
		r.last = r.first + PROBE_SPAN - 1;
		if (send_nack(s, &r, 1, live->round, i) == 0)
			s->st.probes_sent++;
	}
}

/* Timers of the streams socket @sock owns (ALL_SOCKS: every stream). */
static void
run_timers(struct isth_island *s, uint64_t now, unsigned int sock)
{
	for (unsigned int k = 0; k < s->n_streams; k++)
		if (s->as[k].n_missing && (sock == ALL_SOCKS || stream_sock(s, k) == sock))
			run_nacks(s, k, now);
	run_probe(s, now, sock);
}

/* ---- receiving -------------------------------------------------------- */

static void streams_add(struct isth_island *s, unsigned int count);

static void
on_round(struct isth_island *s, const struct isth_wire_pkt *p, uint64_t now, unsigned int sock)
{
	enum isth_island_drop why;
	struct isth_wire_round b;
	struct slot *sl;
	uint32_t c;

	isth_wire_get_round(p, &b);
	if (b.n_chunks != s->n_chunks || b.chunk_elems != s->chunk_elems) {
		drop(s, ISTH_ISLAND_DROP_round_shape);
		s->shape_err = true;
		s->rx_wake = true;
		s->shape_info = (struct isth_island_round){
			.round = p->hdr.round,
			.start_ns = b.start_ns,
			.deadline_ns = b.deadline_ns,
			.period_ns = b.period_ns,
			.clique = b.clique,
			.expected = p->hdr.bitmap,
			.n_chunks = b.n_chunks,
			.chunk_elems = b.chunk_elems,
		};
		return;
	}
	/* the edge's AGG stream count (its field is streams - 1): from a
	 * ROUND of this session's job and island, verified when auth is on;
	 * at most 16 by the field's width */
	if ((unsigned int)p->hdr.stream + 1 > s->n_streams)
		streams_add(s, (unsigned int)p->hdr.stream + 1);
	sl = slot_get(s, p->hdr.round, now, &why, sum_ctx(s, sock));
	if (sl == NULL) {
		drop(s, why);
		return;
	}
	if (sl->announced) {
		drop(s, ISTH_ISLAND_DROP_round_dup);
		return;
	}
	sl->info = (struct isth_island_round){
		.round = p->hdr.round,
		.start_ns = b.start_ns,
		.deadline_ns = b.deadline_ns,
		.period_ns = b.period_ns,
		.clique = b.clique,
		.expected = p->hdr.bitmap,
		.n_chunks = b.n_chunks,
		.chunk_elems = b.chunk_elems,
	};
	sl->announced = true;
	/* AGGs may have come before their ROUND */
	sl->chunks_done = 0;
	for (c = 0; c < s->n_chunks; c++)
		if ((sl->bitmap[c] & sl->info.expected) == sl->info.expected)
			sl->chunks_done++;
	s->quiet_since_ns = now;
	s->st.rounds_announced++;
	s->rx_wake = true;
}

static void
on_agg(struct isth_island *s, const struct isth_wire_pkt *p, uint64_t now, unsigned int sock)
{
	const struct isth_wire_hdr *h = &p->hdr;
	struct rx_ctx *x = sum_ctx(s, sock);
	enum isth_island_drop why;
	struct slot *sl;
	uint64_t before;
	uint8_t *dst;

	/* a stream no ROUND announced (auth off: auth on drops it before) */
	if (h->stream >= s->n_streams) {
		drop(s, ISTH_ISLAND_DROP_agg_stream);
		return;
	}
	if (!seq_accept(s, &s->as[h->stream], h))
		return;
	s->st.sock_streams[sock] |= (uint16_t)(1u << h->stream);
	s->quiet_since_ns = now;
	if (h->flags & ISTH_WIRE_F_RESENT)
		s->st.resent++;
	/* bf16 DATA is summed in fp32 at the edge, which sends the sums as
	 * bf16 or fp32 ([agg] bf16_out): a bf16 session takes either. */
	if (h->dtype != s->conf.dtype &&
		!(s->conf.dtype == ISTH_WIRE_DTYPE_BF16 && h->dtype == ISTH_WIRE_DTYPE_FP32)) {
		drop(s, ISTH_ISLAND_DROP_agg_dtype);
		return;
	}
	if (h->chunk >= s->n_chunks) {
		drop(s, ISTH_ISLAND_DROP_agg_chunk);
		return;
	}
	if (h->count != chunk_len(s, h->chunk)) {
		drop(s, ISTH_ISLAND_DROP_agg_count);
		return;
	}
	if (h->bitmap & self_bit(s)) {
		drop(s, ISTH_ISLAND_DROP_agg_self);
		return;
	}
	sl = slot_get(s, h->round, now, &why, x);
	if (sl == NULL) {
		drop(s, why);
		return;
	}
	if (sl->state == SLOT_DONE) {
		drop(s, ISTH_ISLAND_DROP_round_done);
		return;
	}
	if (sl->announced && (h->bitmap & ~sl->info.expected)) {
		drop(s, ISTH_ISLAND_DROP_agg_clique);
		return;
	}
	before = sl->bitmap[h->chunk];
	/* Exactly once: whatever the seqs say, a contributor already in the
	 * chunk's sum is never added again. */
	if (h->bitmap & before) {
		drop(s, ISTH_ISLAND_DROP_agg_overlap);
		return;
	}
	dst = (uint8_t *)sl->acc + (size_t)h->chunk * s->chunk_elems * 4;
	if (x == NULL) {
		sum_le(s, h->dtype, dst, p->payload, h->count);
	} else {
		/* one thread writes a chunk's sum per round (see the top) */
		if (sl->owner[h->chunk] == 0) {
			sl->owner[h->chunk] = (uint8_t)(sock + 1);
		} else if (sl->owner[h->chunk] != sock + 1) {
			drop(s, ISTH_ISLAND_DROP_agg_owner);
			return;
		}
		if (x->n_pend == x->max_pend)
			pend_run(s, x, true, false);
		x->pend[x->n_pend++] = (struct pend_sum){
			.dst = dst,
			.src = p->payload,
			.n = h->count,
			.dtype = h->dtype,
			.slot = (uint8_t)(sl - s->slots),
		};
		/* under mu: a waiter reads busy under mu too */
		atomic_fetch_add_explicit(&sl->busy, 1, memory_order_relaxed);
	}
	sl->bitmap[h->chunk] = before | h->bitmap;
	sl->aggs[h->chunk]++;
	s->st.aggs_summed++;
	if (sl->announced && (sl->bitmap[h->chunk] & sl->info.expected) == sl->info.expected &&
		++sl->chunks_done == s->n_chunks)
		s->rx_wake = true;
}

static void
on_gone(struct isth_island *s, const struct isth_wire_pkt *p)
{
	struct agg_stream *a;
	unsigned int i;

	s->st.gone++;
	if (p->hdr.stream >= s->n_streams) {
		drop(s, ISTH_ISLAND_DROP_agg_stream);
		return;
	}
	a = &s->as[p->hdr.stream];
	if ((p->hdr.flags & ISTH_WIRE_F_CHUNKS) || !a->have_seq)
		return; /* the island never asks for chunk ranges */
	for (i = 0; i < p->hdr.count; i++) {
		struct isth_wire_range r;
		uint64_t x, lo = seq_low(a);

		isth_wire_get_range(p, i, &r);
		/* seqs at or past next_seq were not sent yet (a probe) */
		if (r.last >= a->next_seq)
			r.last = a->next_seq - 1;
		if (r.first < lo)
			r.first = lo;
		for (x = r.first; x <= r.last && r.first <= r.last; x++) {
			struct seq_ent *e = seq_ent(a, x);

			if (e->state == SEQ_MISSING) {
				e->state = SEQ_LOST;
				a->n_missing--;
				s->st.gone_seqs++;
			}
		}
	}
}

/* ---- authentication ---------------------------------------------------- */

static struct auth_win *
win_find(struct isth_island *s, uint8_t epoch)
{
	unsigned int i;

	for (i = 0; i < ISTH_AUTH_MAX_EPOCHS; i++)
		if (s->win[i].used && s->win[i].epoch == epoch)
			return &s->win[i];
	return NULL;
}

/* Start the replay windows of AGG stream @k (>= 1) in epoch slot @j. */
static void
stream_win_init(struct isth_island *s, unsigned int j, unsigned int k)
{
	struct agg_stream *a = &s->as[k];
	uint64_t *words = a->win_words + j * a->win_stride;

	(void)isth_auth_replay_init(&s->win[j].sw[k][0], words, a->win_agg_bits);
	words += isth_auth_replay_words(a->win_agg_bits);
	(void)isth_auth_replay_init(&s->win[j].sw[k][1], words, WIN_SMALL_BITS);
}

static uint32_t agg_win_bits(const struct isth_island *s, unsigned int n_streams);

/*
 * Follow @count AGG streams (a ROUND said so): give streams n_streams ..
 * count - 1 their seq window and, auth on, replay windows sized for their
 * share of the chunks. Bounded by the 4-bit field (16 streams); a stream
 * that cannot be allocated is not followed (its AGGs are dropped as
 * agg_stream, visibly). Under mu.
 */
static void
streams_add(struct isth_island *s, unsigned int count)
{
	unsigned int j;

	while (s->n_streams < count && s->n_streams < ISTH_WIRE_MAX_STREAMS) {
		struct agg_stream *a = &s->as[s->n_streams];

		if (a->seqs == NULL)
			a->seqs = calloc(ISTH_ISLAND_SEQ_WINDOW, sizeof(*a->seqs));
		if (a->seqs == NULL)
			return;
		if (s->eng != NULL && a->win_words == NULL) {
			a->win_agg_bits = agg_win_bits(s, count);
			a->win_stride = isth_auth_replay_words(a->win_agg_bits) +
				isth_auth_replay_words(WIN_SMALL_BITS);
			a->win_words =
				calloc(ISTH_AUTH_MAX_EPOCHS * a->win_stride, sizeof(*a->win_words));
			if (a->win_words == NULL)
				return;
		}
		if (s->eng != NULL)
			for (j = 0; j < ISTH_AUTH_MAX_EPOCHS; j++)
				if (s->win[j].used)
					stream_win_init(s, j, s->n_streams);
		s->n_streams++;
	}
}

/*
 * Give every epoch of s->auth a replay window set: windows of epochs that
 * stay are kept (a reload does not reopen them to replays), those of
 * epochs that went are freed, new epochs start empty.
 */
static void
win_sync(struct isth_island *s)
{
	unsigned int n = isth_auth_n_epochs(s->auth), i, j, t;
	bool keep[ISTH_AUTH_MAX_EPOCHS] = {false};
	uint8_t ids[ISTH_AUTH_MAX_EPOCHS];

	for (i = 0; i < n; i++) {
		uint32_t start;

		(void)isth_auth_epoch_info(s->auth, i, &ids[i], &start);
	}
	for (j = 0; j < ISTH_AUTH_MAX_EPOCHS; j++)
		for (i = 0; i < n && s->win[j].used; i++)
			if (s->win[j].epoch == ids[i])
				keep[j] = true;
	for (j = 0; j < ISTH_AUTH_MAX_EPOCHS; j++)
		if (!keep[j])
			s->win[j].used = false;
	for (i = 0; i < n; i++) {
		struct auth_win *w;
		uint64_t *words;

		if (win_find(s, ids[i]) != NULL)
			continue;
		for (j = 0; s->win[j].used; j++)
			; /* at most ISTH_AUTH_MAX_EPOCHS epochs: one is free */
		w = &s->win[j];
		w->used = true;
		w->epoch = ids[i];
		words = s->win_words + j * s->win_stride;
		for (t = 0; t < WIN_TYPES; t++) {
			(void)isth_auth_replay_init(&w->w[t], words, s->win_bits[t]);
			words += isth_auth_replay_words(s->win_bits[t]);
		}
		for (t = 1; t < s->n_streams; t++)
			stream_win_init(s, j, t);
	}
}

static inline uint64_t
get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

/*
 * Verify a datagram from the edge with the DOWN key of this island, then
 * its replay window: true if it may go on to the parser. Refusals are
 * counted by reason; the window moves only for a verified tag.
 */
static bool
auth_rx(struct isth_island *s, const uint8_t *buf, size_t len, unsigned int sock,
	struct isth_auth_engine *eng, uint8_t vst)
{
	enum isth_auth_status st;
	struct isth_auth_replay *rw;
	struct auth_win *w;
	unsigned int k = 0;
	int t = -1;

	/* a receive thread verified it before it took mu, or does it now */
	st = vst != VST_NONE ? (enum isth_auth_status)vst
			     : isth_auth_verify(eng, ISTH_AUTH_DOWN, s->conf.island, buf, len);
	if (st == ISTH_AUTH_OK) {
		switch (buf[ISTH_WIRE_OFF_TYPE]) { /* type; the edge sends an island nothing else */
		case ISTH_WIRE_AGG:
			t = WIN_AGG;
			break;
		case ISTH_WIRE_GONE:
			t = WIN_GONE;
			break;
		case ISTH_WIRE_ROUND:
			t = WIN_ROUND;
			break;
		default:
			break; /* dropped as `type` after the parser */
		}
	}
	/* AGG and GONE: the window of their AGG stream, which must be one a
	 * (verified) ROUND announced; a ROUND's field is a count, not a stream */
	if (st == ISTH_AUTH_OK && t >= 0 && t != WIN_ROUND) {
		k = isth_wire_get_stream(buf);
		if (k >= s->n_streams) {
			drop(s, ISTH_ISLAND_DROP_agg_stream);
			return false;
		}
		/* before its replay window: only the owner's thread moves it */
		if (stream_foreign(s, k, sock)) {
			drop(s, ISTH_ISLAND_DROP_agg_socket);
			return false;
		}
	}
	if (st == ISTH_AUTH_OK && t >= 0) {
		w = win_find(s, buf[ISTH_AUTH_OFF_EPOCH]);
		rw = w == NULL ? NULL : k == 0 ? &w->w[t] : &w->sw[k][t == WIN_GONE];
		st = rw ? isth_auth_replay_accept(rw, get_be64(buf + ISTH_WIRE_OFF_SEQ))
			: ISTH_AUTH_E_EPOCH;
	}
	if (st != ISTH_AUTH_OK) {
		s->st.auth_drop[st]++;
		return false;
	}
	return true;
}

/*
 * One datagram read on socket @sock, under mu. Auth on: @vst is its tag
 * status if a receive thread verified it already, else VST_NONE and it is
 * verified here with @eng.
 */
static void
on_datagram(struct isth_island *s, const uint8_t *buf, size_t len, const struct sockaddr_in *from,
	int flags, uint64_t now, unsigned int sock, struct isth_auth_engine *eng, uint8_t vst)
{
	enum isth_wire_reason r;
	struct isth_wire_pkt p;

	s->st.rx_packets++;
	s->st.rx_bytes += len;
	s->st.sock_rx[sock]++;
	if (flags & MSG_TRUNC) {
		drop(s, ISTH_ISLAND_DROP_truncated);
		return;
	}
	if (from->sin_addr.s_addr != s->edge.sin_addr.s_addr ||
		from->sin_port != s->edge.sin_port) {
		drop(s, ISTH_ISLAND_DROP_source);
		return;
	}
	/* auth on: nothing below sees a packet whose tag did not verify */
	if (s->auth_on && !auth_rx(s, buf, len, sock, eng, vst))
		return;
	memset(&p, 0, sizeof(p));
	r = isth_wire_parse_msg(buf, len, &s->lim, &p);
	if (r != ISTH_WIRE_OK) {
		s->st.wire_drop[r]++;
		return;
	}
	s->st.rx_type[p.hdr.type]++;
	if (p.hdr.job != s->conf.job) {
		drop(s, ISTH_ISLAND_DROP_job);
		return;
	}
	if (p.hdr.sender != s->conf.island) {
		drop(s, ISTH_ISLAND_DROP_sender);
		return;
	}
	/* with receive threads stream k is read on socket k % n_socks
	 * alone: its seq window and timers are that thread's */
	if ((p.hdr.type == ISTH_WIRE_AGG || p.hdr.type == ISTH_WIRE_GONE) &&
		stream_foreign(s, p.hdr.stream, sock)) {
		drop(s, ISTH_ISLAND_DROP_agg_socket);
		return;
	}
	switch (p.hdr.type) {
	case ISTH_WIRE_AGG:
		on_agg(s, &p, now, sock);
		break;
	case ISTH_WIRE_GONE:
		on_gone(s, &p);
		break;
	case ISTH_WIRE_ROUND:
		on_round(s, &p, now, sock);
		break;
	default:
		drop(s, ISTH_ISLAND_DROP_type);
		break;
	}
}

/* The segment size of a buffer the kernel coalesced (UDP_GRO), or 0. */
static int
rx_gro_size(struct msghdr *h)
{
	struct cmsghdr *c;
	int seg = 0;

	for (c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO)
			memcpy(&seg, CMSG_DATA(c), sizeof(seg));
	return seg;
}

/*
 * One buffer read on socket @sock: a datagram, or with GRO several of one
 * flow back to back, each @seg bytes but the last. Each datagram is
 * counted and judged on its own, exactly as if it had come alone. @vst:
 * tag statuses of its first RX_VST_SEGS datagrams (receive threads), or
 * NULL (verified here with @eng).
 */
static int
rx_buffer(struct isth_island *s, uint8_t *buf, size_t len, const struct sockaddr_in *from,
	int flags, int seg, uint64_t now, unsigned int sock, struct isth_auth_engine *eng,
	const uint8_t *vst)
{
	size_t off = 0;
	int n = 0;

	if (seg <= 0 || (size_t)seg >= len) {
		/* with GRO the buffer holds any datagram whole: one larger
		 * than the MTU allows is what MSG_TRUNC says without */
		if (len > s->msg_max)
			flags |= MSG_TRUNC;
		on_datagram(s, buf, len, from, flags, now, sock, eng, vst ? vst[0] : VST_NONE);
		return 1;
	}
	s->st.gro_rx++;
	for (off = 0; off < len; off += (size_t)seg, n++) {
		size_t l = len - off < (size_t)seg ? len - off : (size_t)seg;

		on_datagram(s, buf + off, l, from, l > s->msg_max ? MSG_TRUNC : 0, now, sock, eng,
			vst && (unsigned int)n < RX_VST_SEGS ? vst[n] : VST_NONE);
	}
	return n;
}

/* One recvmmsg on @fd into @x, without blocking: buffers read, 0 if none,
 * or -errno. */
static int
rx_recv(struct isth_island *s, struct rx_ctx *x, int fd)
{
	unsigned int i;
	int n;

	for (i = 0; i < s->rx_n; i++) {
		x->v[i].iov_base = x->buf + (size_t)i * s->rx_size;
		x->v[i].iov_len = s->rx_size;
		memset(&x->m[i], 0, sizeof(x->m[i]));
		x->m[i].msg_hdr.msg_name = &x->a[i];
		x->m[i].msg_hdr.msg_namelen = sizeof(x->a[i]);
		x->m[i].msg_hdr.msg_iov = &x->v[i];
		x->m[i].msg_hdr.msg_iovlen = 1;
		if (s->gro) {
			x->m[i].msg_hdr.msg_control = x->c[i].buf;
			x->m[i].msg_hdr.msg_controllen = sizeof(x->c[i].buf);
		}
	}
	do
		n = recvmmsg(fd, x->m, s->rx_n, MSG_DONTWAIT, NULL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	return n;
}

/* Judge the @n buffers of @x read on socket @sock, under mu. */
static int
rx_judge(struct isth_island *s, struct rx_ctx *x, int n, unsigned int sock,
	struct isth_auth_engine *eng, bool verified)
{
	uint64_t now = now_ns(s);
	int i, total = 0;

	for (i = 0; i < n; i++)
		total += rx_buffer(s, x->buf + (size_t)i * s->rx_size, x->m[i].msg_len, &x->a[i],
			x->m[i].msg_hdr.msg_flags, s->gro ? rx_gro_size(&x->m[i].msg_hdr) : 0, now,
			sock, eng, verified ? x->vst + (size_t)i * RX_VST_SEGS : NULL);
	return total;
}

/* Read everything queued on socket @sock, without blocking (the caller's
 * reads, under mu). */
static int
rx_drain_fd(struct isth_island *s, unsigned int sock)
{
	int total = 0;

	for (;;) {
		int n = rx_recv(s, &s->rx, s->socks[sock].fd);

		if (n < 0)
			return total ? total : n;
		total += rx_judge(s, &s->rx, n, sock, s->eng, false);
		if ((unsigned int)n < s->rx_n)
			break;
	}
	return total;
}

/* Read everything queued on every socket, without blocking. */
static int
rx_drain(struct isth_island *s)
{
	unsigned int i;
	int total = 0, n;

	for (i = 0; i < s->n_socks; i++) {
		n = rx_drain_fd(s, i);
		if (n < 0)
			return total ? total : n;
		total += n;
	}
	return total;
}

/*
 * A receive thread's tag checks of the @n buffers it read, before it
 * takes mu (the costly part of a datagram with auth on, so in parallel):
 * what the datagrams checked under mu would be judged with, in
 * on_datagram()'s order (a truncated datagram or one from elsewhere is
 * refused before its tag is looked at, so it is not verified here).
 */
static void
rx_verify(struct isth_island *s, struct isl_sock *so, int n)
{
	struct rx_ctx *x = so->rx;
	int i;

	pthread_mutex_lock(&so->rxmu);
	for (i = 0; i < n; i++) {
		uint8_t *buf = x->buf + (size_t)i * s->rx_size,
			*st = x->vst + (size_t)i * RX_VST_SEGS;
		size_t len = x->m[i].msg_len, off, seg = 0;
		bool ok = x->a[i].sin_addr.s_addr == s->edge.sin_addr.s_addr &&
			x->a[i].sin_port == s->edge.sin_port &&
			!(x->m[i].msg_hdr.msg_flags & MSG_TRUNC);
		unsigned int j;

		if (s->gro)
			seg = (size_t)rx_gro_size(&x->m[i].msg_hdr);
		if (seg == 0 || seg >= len)
			seg = len;
		for (off = 0, j = 0; j < RX_VST_SEGS && off < len; off += seg, j++) {
			size_t l = len - off < seg ? len - off : seg;

			st[j] = ok && l <= s->msg_max
				? (uint8_t)isth_auth_verify(
					  so->rx_eng, ISTH_AUTH_DOWN, s->conf.island, buf + off, l)
				: VST_NONE;
		}
		if (len == 0)
			st[0] = VST_NONE;
	}
	pthread_mutex_unlock(&so->rxmu);
}

/*
 * The receive thread of socket so->idx (conf.rx_threads): read a burst
 * without mu, verify its tags without mu, then take mu once to judge the
 * burst (seq windows, which AGGs are summed) and run the timers of the
 * streams the socket owns; drop mu, add the AGGs it accepted into their
 * rounds (pend_run()) and wake the waiting callers. Until close() sets
 * rx_quit; a burst's additions are always finished before it looks.
 */
static void *
rx_thread(void *arg)
{
	struct isl_sock *so = arg;
	struct isth_island *s = so->sess;
	struct pollfd pfd[2] = {
		{.fd = so->fd, .events = POLLIN},
		{.fd = s->wake_fd, .events = POLLIN},
	};
	struct timespec ts = {
		.tv_sec = (time_t)(s->tick_ns / 1000000000ull),
		.tv_nsec = (long)(s->tick_ns % 1000000000ull),
	};
	bool more = false, wake;

	while (!atomic_load_explicit(&s->rx_quit, memory_order_acquire)) {
		int n;

		if (!more)
			(void)ppoll(pfd, 2, &ts, NULL);
		n = rx_recv(s, so->rx, so->fd);
		if (n > 0 && s->auth_on)
			rx_verify(s, so, n);
		pthread_mutex_lock(&s->mu);
		if (n > 0)
			rx_judge(s, so->rx, n, so->idx, so->rx_eng, s->auth_on);
		run_timers(s, now_ns(s), so->idx);
		wake = s->rx_wake;
		s->rx_wake = false;
		/* with sums queued, wake the callers once they are added */
		if (wake && so->rx->n_pend == 0)
			pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		/* the per-byte work, in parallel with the other threads */
		if (so->rx->n_pend)
			pend_run(s, so->rx, false, wake);
		more = n == (int)s->rx_n; /* a full burst: more may be queued */
	}
	return NULL;
}

/* close() and a failed open(): stop the receive threads and wait for them. */
static void
rx_threads_stop(struct isth_island *s)
{
	uint64_t one = 1;
	unsigned int i;

	atomic_store_explicit(&s->rx_quit, true, memory_order_release);
	/* if the write fails the threads still see rx_quit within a tick */
	if (s->wake_fd >= 0)
		(void)!write(s->wake_fd, &one, sizeof(one));
	for (i = 0; i < s->n_socks; i++)
		if (s->socks[i].rx_started) {
			pthread_join(s->socks[i].rx_th, NULL);
			s->socks[i].rx_started = false;
		}
}

/*
 * Wait up to @slice_ns for packets, with mu held (dropped while waiting).
 * The first waiter blocks on the socket and processes what comes; others
 * sleep on cv until it broadcasts. With receive threads every caller
 * sleeps on cv (reading stays set). Returns packets processed by this
 * caller, or a negative errno from the socket.
 */
static int
wait_io(struct isth_island *s, uint64_t slice_ns)
{
	struct timespec ts;
	int n;

	if (slice_ns > s->tick_ns)
		slice_ns = s->tick_ns;
	if (!s->reading) {
		unsigned int i;

		for (i = 0; i < s->n_socks; i++) {
			s->pfd[i].fd = s->socks[i].fd;
			s->pfd[i].events = POLLIN;
			s->pfd[i].revents = 0;
		}
		s->reading = true;
		pthread_mutex_unlock(&s->mu);
		ts.tv_sec = (time_t)(slice_ns / 1000000000ull);
		ts.tv_nsec = (long)(slice_ns % 1000000000ull);
		/* pfd[] is the reader's alone while reading is set */
		(void)ppoll(s->pfd, s->n_socks, &ts, NULL);
		pthread_mutex_lock(&s->mu);
		s->reading = false;
		n = rx_drain(s);
		run_timers(s, now_ns(s), ALL_SOCKS);
		pthread_cond_broadcast(&s->cv);
		return n;
	}
	{
		uint64_t t = mono_ns() + slice_ns;

		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	return 0;
}

/* ---- public API ------------------------------------------------------- */

static int
check_conf(const struct isth_island_conf *c)
{
	if (c == NULL)
		return EINVAL;
	if (c->n_islands == 0 || c->n_islands > ISTH_WIRE_MAX_ISLANDS || c->island >= c->n_islands)
		return EINVAL;
	if (c->dtype != ISTH_WIRE_DTYPE_INT32 && c->dtype != ISTH_WIRE_DTYPE_FP32 &&
		c->dtype != ISTH_WIRE_DTYPE_BF16)
		return EINVAL;
	if (c->elems == 0 || c->edge_ip == 0 || c->rcvbuf < 0)
		return EINVAL;
	if (c->n_sockets > ISTH_ISLAND_MAX_SOCKETS || c->gso > ISTH_ISLAND_OFFLOAD_TEST_REFUSE ||
		c->gro > ISTH_ISLAND_OFFLOAD_TEST_REFUSE)
		return EINVAL;
	if (c->n_sockets > 1 && c->bind_port != 0 &&
		(uint32_t)c->bind_port + c->n_sockets - 1 > UINT16_MAX)
		return EINVAL;
	return 0;
}

/* Load a key file for this session's job and make its tag engine. */
static int
auth_load(const struct isth_island *s, const char *path, struct isth_auth **a,
	struct isth_auth_engine **e, char *err, size_t errlen)
{
	struct isth_auth_conf ac = {
		.key_file = path,
		.job = s->conf.job,
		.n_islands = s->conf.n_islands,
	};
	int rc;

	*a = NULL;
	*e = NULL;
	rc = isth_auth_create(&ac, a, err, errlen);
	if (rc < 0)
		return rc;
	rc = isth_auth_engine_create(*a, ISTH_AUTH_OPENSSL, e);
	if (rc < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s: tag engine: %s", path, strerror(-rc));
		isth_auth_free(*a);
		*a = NULL;
	}
	return rc;
}

static uint32_t
pow2_at_least(uint64_t x)
{
	uint32_t p = 64;

	while (p < x && p < (UINT32_C(1) << 31))
		p <<= 1;
	return p;
}

/*
 * The AGG replay window of one of @n_streams streams: at most one AGG per
 * chunk and peer per round (partials have disjoint bitmaps; resends reuse
 * the seq), a stream carrying ceil(n_chunks / n_streams) chunks, kept for
 * every round a session holds, and never less than the seq window the
 * session NACKs over: a repair of the oldest round is still inside.
 */
static uint32_t
agg_win_bits(const struct isth_island *s, unsigned int n_streams)
{
	uint32_t peers = s->conf.n_islands > 1 ? s->conf.n_islands - 1 : 1;
	uint64_t chunks = ((uint64_t)s->n_chunks + n_streams - 1) / n_streams;
	uint32_t bits = pow2_at_least((uint64_t)ISTH_ISLAND_ROUNDS * chunks * peers);

	return bits < ISTH_ISLAND_SEQ_WINDOW ? ISTH_ISLAND_SEQ_WINDOW : bits;
}

/* Size the replay windows of stream 0 and allocate their storage for
 * every epoch (streams_add() does the others'). */
static int
win_alloc(struct isth_island *s)
{
	unsigned int t;

	s->win_bits[WIN_AGG] = agg_win_bits(s, 1);
	s->win_bits[WIN_GONE] = WIN_SMALL_BITS;
	s->win_bits[WIN_ROUND] = WIN_SMALL_BITS;
	s->win_stride = 0;
	for (t = 0; t < WIN_TYPES; t++)
		s->win_stride += isth_auth_replay_words(s->win_bits[t]);
	s->win_words = calloc(ISTH_AUTH_MAX_EPOCHS * s->win_stride, sizeof(*s->win_words));
	return s->win_words ? 0 : -ENOMEM;
}

static void
streams_free(struct isth_island *s)
{
	for (unsigned int k = 0; k < ISTH_WIRE_MAX_STREAMS; k++) {
		free(s->as[k].seqs);
		free(s->as[k].win_words);
	}
}

static void *tx_thread(void *arg);
static void tx_threads_stop(struct isth_island *s);
static void rx_socks_free(struct isth_island *s);

/*
 * Open, configure and bind socket @i: port bind_port + i (ephemeral if
 * bind_port is 0), SO_RCVBUF, and the offloads the session asked for.
 * @return 0 or an errno (@err says which socket and why).
 */
static int
sock_open(struct isth_island *s, unsigned int i, char *errbuf, size_t errlen)
{
	struct isl_sock *so = &s->socks[i];
	struct sockaddr_in local;
	socklen_t alen = sizeof(local);
	int fd, one = 1, zero = 0, err;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	so->fd = fd;
	/* best effort: the kernel caps it at rmem_max */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &s->conf.rcvbuf, sizeof(s->conf.rcvbuf));
	/* GSO: a kernel without UDP_SEGMENT says so here (ENOPROTOOPT);
	 * one that has it but cannot segment for this route says so at
	 * the first send (tx_packets) */
	if (s->conf.gso != ISTH_ISLAND_OFFLOAD_OFF && atomic_load(&s->gso_on) &&
		setsockopt(fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof(zero)) < 0) {
		atomic_store(&s->gso_on, false);
		s->st.gso_refused++;
	}
	/* tests: with no UDP checksum Linux refuses every segmented send
	 * (EINVAL), so the fallback below runs against the real kernel */
	if (s->conf.gso == ISTH_ISLAND_OFFLOAD_TEST_REFUSE &&
		setsockopt(fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)) < 0) {
		err = errno;
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "socket %u: SO_NO_CHECK: %s", i, strerror(err));
		return err;
	}
	if (s->gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) < 0) {
		unsigned int j;

		/* any socket refusing it turns it off for all: rx_drain
		 * reads every socket the same way */
		for (j = 0; j < i; j++)
			(void)setsockopt(s->socks[j].fd, SOL_UDP, UDP_GRO, &zero, sizeof(zero));
		s->gro = false;
		s->st.gro_refused++;
	}
	memset(&local, 0, sizeof(local));
	local.sin_family = AF_INET;
	local.sin_addr.s_addr = htonl(s->conf.bind_ip);
	local.sin_port = htons(s->conf.bind_port ? (uint16_t)(s->conf.bind_port + i) : 0);
	if (bind(fd, (struct sockaddr *)&local, sizeof(local)) < 0 ||
		getsockname(fd, (struct sockaddr *)&local, &alen) < 0) {
		err = errno;
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "socket %u: bind port %u: %s", i,
				(unsigned int)ntohs(local.sin_port), strerror(err));
		return err;
	}
	so->port = ntohs(local.sin_port);
	return 0;
}

/* After rx_threads_stop(): the receive threads' mutexes and wake_fd. */
static void
rx_socks_free(struct isth_island *s)
{
	unsigned int i;

	for (i = 0; i < ISTH_ISLAND_MAX_SOCKETS; i++)
		if (s->socks[i].rxmu_init) {
			pthread_mutex_destroy(&s->socks[i].rxmu);
			s->socks[i].rxmu_init = false;
		}
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	s->wake_fd = -1;
}

static void
socks_free(struct isth_island *s)
{
	unsigned int i;

	for (i = 0; i < ISTH_ISLAND_MAX_SOCKETS; i++) {
		if (s->socks[i].rx) {
			free(s->socks[i].rx->buf);
			free(s->socks[i].rx->vst);
			free(s->socks[i].rx->pend);
			free(s->socks[i].rx);
		}
		free(s->socks[i].buf);
		free(s->socks[i].len);
		free(s->socks[i].m);
		free(s->socks[i].v);
		free(s->socks[i].cm);
	}
}

struct isth_island *
isth_island_open(const struct isth_island_conf *conf)
{
	return isth_island_open_err(conf, NULL, 0);
}

struct isth_island *
isth_island_open_err(const struct isth_island_conf *conf, char *errbuf, size_t errlen)
{
	pthread_condattr_t ca;
	struct isth_island *s;
	unsigned int i;
	int err;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	err = check_conf(conf);
	if (err) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "bad session parameters");
		errno = err;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->conf = *conf;
	if (s->conf.mtu == 0)
		s->conf.mtu = 1500;
	/* v2 (a key file): the parser takes version 2 only, and the
	 * 16-byte tag comes out of every packet's body (354 elements, 88
	 * ranges at MTU 1500) */
	if (isth_wire_limits_init_auth(
		    &s->lim, conf->n_islands, s->conf.mtu, conf->key_file != NULL) < 0 ||
		s->lim.max_elems == 0 || s->lim.max_ranges == 0) {
		err = EINVAL;
		goto free_s;
	}
	/* the parser takes every stream the field can name; which of them
	 * the edge sends, ROUNDs say (streams_add), and on_agg/auth_rx
	 * drop the rest */
	s->lim.n_streams = ISTH_WIRE_MAX_STREAMS;
	if (s->conf.edge_port == 0)
		s->conf.edge_port = ISTH_WIRE_PORT;
	if (s->conf.nack_interval_ns == 0)
		s->conf.nack_interval_ns = 5000000ull;
	if (s->conf.nack_retries == 0)
		s->conf.nack_retries = 16;
	if (s->conf.nack_retries > 255)
		s->conf.nack_retries = 255;
	if (s->conf.probe_ns == 0)
		s->conf.probe_ns = 10000000ull;
	if (s->conf.rcvbuf == 0)
		s->conf.rcvbuf = 4 << 20;
	if (s->conf.clock == NULL)
		s->conf.clock = realtime_ns;
	s->chunk_elems = s->lim.max_elems;
	s->n_chunks = (uint32_t)(((uint64_t)conf->elems + s->chunk_elems - 1) / s->chunk_elems);
	s->msg_max = s->conf.mtu - ISTH_WIRE_IPV4_MIN_HDR_SIZE - ISTH_WIRE_UDP_HDR_SIZE;
	s->tick_ns = s->conf.nack_interval_ns;
	if (s->conf.probe_ns < s->tick_ns)
		s->tick_ns = s->conf.probe_ns;
	if (s->tick_ns > MAX_TICK_NS)
		s->tick_ns = MAX_TICK_NS;
	s->edge.sin_family = AF_INET;
	s->edge.sin_addr.s_addr = htonl(conf->edge_ip);
	s->edge.sin_port = htons(s->conf.edge_port);

	s->n_socks = conf->n_sockets ? conf->n_sockets : 1;
	for (i = 0; i < ISTH_ISLAND_MAX_SOCKETS; i++) {
		s->socks[i].fd = -1;
		s->socks[i].sess = s;
		s->socks[i].idx = i;
	}
	/* a full chunk's DATA: every DATA but the tensor's last is this
	 * long, which is what lets GSO cut a buffer of them evenly */
	s->pkt_stride = ISTH_WIRE_HDR_SIZE + (size_t)s->chunk_elems * wire_esize(s) +
		(conf->key_file ? ISTH_AUTH_TAG_SIZE : 0);
	s->pkt_over = ISTH_WIRE_HDR_SIZE + (conf->key_file ? ISTH_AUTH_TAG_SIZE : 0);
	s->tx_cap = (unsigned int)(TXBUF_BYTES / s->pkt_stride);
	if (s->tx_cap > TX_CAP_MAX)
		s->tx_cap = TX_CAP_MAX;
	s->gso_segs = (unsigned int)(GSO_MAX_BYTES / s->pkt_stride);
	if (s->gso_segs > GSO_MAX_SEGS)
		s->gso_segs = GSO_MAX_SEGS;
	if (s->gso_segs > s->tx_cap)
		s->gso_segs = s->tx_cap;
	s->gro = conf->gro == ISTH_ISLAND_OFFLOAD_ON;
	if (conf->gro == ISTH_ISLAND_OFFLOAD_TEST_REFUSE)
		s->st.gro_refused++;
	atomic_init(&s->gso_on, conf->gso != ISTH_ISLAND_OFFLOAD_OFF && s->gso_segs > 1);

	err = ENOMEM;
	s->n_streams = 1;
	s->as[0].seqs = calloc(ISTH_ISLAND_SEQ_WINDOW, sizeof(*s->as[0].seqs));
	s->rx_n = BURST;
	s->rx_size = s->msg_max;
	if (s->gro) {
		s->rx_n = RX_GRO_MSGS;
		s->rx_size = RX_GRO_BYTES;
	}
	s->rx.buf = malloc(s->rx_n * s->rx_size);
	s->nackbuf = malloc(s->msg_max);
	if (s->as[0].seqs == NULL || s->rx.buf == NULL || s->nackbuf == NULL)
		goto free_bufs;
	s->auth_on = conf->key_file != NULL;
	s->rx_threads = conf->rx_threads;
	s->st.rx_threads = conf->rx_threads;
	s->wake_fd = -1;
	atomic_init(&s->rx_quit, false);
	atomic_init(&s->sum_waiters, 0);
	for (i = 0; s->rx_threads && i < s->n_socks; i++) {
		struct isl_sock *so = &s->socks[i];

		so->rx = calloc(1, sizeof(*so->rx));
		if (so->rx == NULL)
			goto free_bufs;
		so->rx->buf = malloc(s->rx_n * s->rx_size);
		so->rx->vst = malloc((size_t)s->rx_n * RX_VST_SEGS);
		/* an AGG per datagram: GRO buffers hold up to RX_VST_SEGS
		 * (more are added under mu when the queue is full) */
		so->rx->max_pend = s->gro ? s->rx_n * RX_VST_SEGS : s->rx_n;
		so->rx->pend = calloc(so->rx->max_pend, sizeof(*so->rx->pend));
		if (so->rx->buf == NULL || so->rx->vst == NULL || so->rx->pend == NULL)
			goto free_bufs;
	}
	for (i = 0; i < s->n_socks; i++) {
		struct isl_sock *so = &s->socks[i];

		so->buf = malloc((size_t)s->tx_cap * s->pkt_stride);
		so->len = calloc(s->tx_cap, sizeof(*so->len));
		so->m = calloc(s->tx_cap, sizeof(*so->m));
		so->v = calloc(s->tx_cap, sizeof(*so->v));
		so->cm = calloc(s->tx_cap, sizeof(*so->cm));
		if (so->buf == NULL || so->len == NULL || so->m == NULL || so->v == NULL ||
			so->cm == NULL)
			goto free_bufs;
	}
	if (conf->key_file) {
		int rc = auth_load(s, conf->key_file, &s->auth, &s->eng, errbuf, errlen);

		if (rc < 0) {
			err = -rc;
			goto free_bufs;
		}
		for (i = 0; i < s->n_socks; i++) {
			rc = isth_auth_engine_create(s->auth, ISTH_AUTH_OPENSSL, &s->socks[i].eng);
			/* receive threads verify in parallel: an engine each */
			if (rc == 0 && s->rx_threads)
				rc = isth_auth_engine_create(
					s->auth, ISTH_AUTH_OPENSSL, &s->socks[i].rx_eng);
			if (rc < 0) {
				err = -rc;
				goto free_auth;
			}
		}
		if (win_alloc(s) < 0)
			goto free_auth;
		win_sync(s);
		s->st.auth = true;
		s->st.auth_epochs = (uint8_t)isth_auth_n_epochs(s->auth);
		/* every stream starts at the real clock (doc/protocol.md,
		 * "IV"): a restarted island never reuses a seq, so never an
		 * IV. The injected clock is for deadlines only. */
		s->data_seq = realtime_ns(NULL);
		s->nack_seq = s->data_seq;
	}
	s->conf.key_file = NULL; /* the caller's string; not kept */
	for (i = 0; i < ISTH_ISLAND_ROUNDS; i++) {
		struct slot *sl = &s->slots[i];

		sl->bitmap = calloc(s->n_chunks, sizeof(*sl->bitmap));
		sl->aggs = calloc(s->n_chunks, sizeof(*sl->aggs));
		sl->acc = calloc(conf->elems, 4);
		if (s->rx_threads)
			sl->owner = calloc(s->n_chunks, 1);
		atomic_init(&sl->busy, 0);
		if (sl->bitmap == NULL || sl->aggs == NULL || sl->acc == NULL ||
			(s->rx_threads && sl->owner == NULL))
			goto free_slots;
	}

	for (i = 0; i < s->n_socks; i++) {
		err = sock_open(s, i, errbuf, errlen);
		if (err)
			goto close_fd;
	}

	if (pthread_condattr_init(&ca) != 0) {
		err = ENOMEM;
		goto close_fd;
	}
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = pthread_cond_init(&s->cv, &ca);
	if (err == 0) {
		err = pthread_cond_init(&s->jcv, &ca);
		if (err)
			pthread_cond_destroy(&s->cv);
	}
	pthread_condattr_destroy(&ca);
	if (err)
		goto close_fd;
	err = pthread_mutex_init(&s->mu, NULL);
	if (err)
		goto destroy_cv;
	err = pthread_mutex_init(&s->txmu, NULL);
	if (err)
		goto destroy_mu;
	err = pthread_mutex_init(&s->jmu, NULL);
	if (err)
		goto destroy_txmu;
	if (s->rx_threads) {
		/* callers only wait: the threads read (wait_io) */
		s->reading = true;
		s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (s->wake_fd < 0) {
			err = errno;
			goto stop_threads;
		}
		for (i = 0; i < s->n_socks && err == 0; i++) {
			err = pthread_mutex_init(&s->socks[i].rxmu, NULL);
			s->socks[i].rxmu_init = err == 0;
		}
		for (i = 0; i < s->n_socks && err == 0; i++) {
			err = pthread_create(&s->socks[i].rx_th, NULL, rx_thread, &s->socks[i]);
			s->socks[i].rx_started = err == 0;
		}
		if (err) {
			if (errbuf && errlen)
				snprintf(errbuf, errlen, "receive threads: %s", strerror(err));
			goto stop_threads;
		}
	}
	for (i = 1; i < s->n_socks; i++) {
		err = pthread_create(&s->socks[i].th, NULL, tx_thread, &s->socks[i]);
		if (err) {
			if (errbuf && errlen)
				snprintf(errbuf, errlen, "sending thread %u: %s", i, strerror(err));
			goto stop_threads;
		}
		s->socks[i].th_started = true;
	}
	return s;

stop_threads:
	rx_threads_stop(s);
	rx_socks_free(s);
	tx_threads_stop(s);
	pthread_mutex_destroy(&s->jmu);
destroy_txmu:
	pthread_mutex_destroy(&s->txmu);
destroy_mu:
	pthread_mutex_destroy(&s->mu);
destroy_cv:
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->jcv);
close_fd:
	for (i = 0; i < s->n_socks; i++)
		if (s->socks[i].fd >= 0)
			close(s->socks[i].fd);
free_slots:
	for (i = 0; i < ISTH_ISLAND_ROUNDS; i++) {
		free(s->slots[i].bitmap);
		free(s->slots[i].aggs);
		free(s->slots[i].acc);
		free(s->slots[i].owner);
	}
free_auth:
	free(s->win_words);
	for (i = 0; i < s->n_socks; i++) {
		isth_auth_engine_free(s->socks[i].eng);
		isth_auth_engine_free(s->socks[i].rx_eng);
	}
	isth_auth_engine_free(s->eng);
	isth_auth_free(s->auth);
free_bufs:
	socks_free(s);
	streams_free(s);
	free(s->rx.buf);
	free(s->nackbuf);
free_s:
	free(s);
	errno = err;
	return NULL;
}

void
isth_island_close(struct isth_island *s)
{
	unsigned int i;

	if (s == NULL)
		return;
	/* the receive threads take mu and read the sockets: first */
	rx_threads_stop(s);
	rx_socks_free(s);
	tx_threads_stop(s);
	pthread_mutex_destroy(&s->jmu);
	pthread_mutex_destroy(&s->txmu);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->jcv);
	for (i = 0; i < s->n_socks; i++) {
		close(s->socks[i].fd);
		isth_auth_engine_free(s->socks[i].eng);
		isth_auth_engine_free(s->socks[i].rx_eng);
	}
	for (i = 0; i < ISTH_ISLAND_ROUNDS; i++) {
		free(s->slots[i].bitmap);
		free(s->slots[i].aggs);
		free(s->slots[i].acc);
		free(s->slots[i].owner);
	}
	free(s->win_words);
	isth_auth_engine_free(s->eng);
	isth_auth_free(s->auth);
	socks_free(s);
	streams_free(s);
	free(s->rx.buf);
	free(s->nackbuf);
	free(s);
}

/*
 * What round @round's packets look like under engine @e: a probe header
 * sealed with the DOWN key (epoch byte and tag). Two engines agree on a
 * round iff they give it the same epoch and the same key.
 */
static int
probe_seal(const struct isth_island *s, struct isth_auth_engine *e, uint32_t round,
	uint8_t buf[ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE])
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.sender = s->conf.island,
		.job = s->conf.job,
		.round = round,
	};

	memset(buf, 0, ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE);
	isth_wire_put_hdr(buf, ISTH_WIRE_HDR_SIZE, &h);
	return isth_auth_seal(e, ISTH_AUTH_DOWN, s->conf.island, buf, ISTH_WIRE_HDR_SIZE,
		ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE);
}

/* Every round the session holds keeps its epoch and key under @e? */
static int
reload_compatible(const struct isth_island *s, struct isth_auth_engine *e, const char *path,
	char *err, size_t errlen)
{
	uint8_t a[ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE], b[sizeof(a)];
	unsigned int i;

	for (i = 0; i <= ISTH_ISLAND_ROUNDS; i++) {
		uint32_t r;

		if (i < ISTH_ISLAND_ROUNDS) {
			if (s->slots[i].state == SLOT_FREE)
				continue;
			r = s->slots[i].round;
		} else {
			if (!s->have_newest)
				continue;
			r = s->newest_round;
		}
		if (probe_seal(s, s->eng, r, a) < 0)
			continue; /* the old keys never covered it either */
		if (probe_seal(s, e, r, b) < 0 || memcmp(a, b, sizeof(a)) != 0) {
			if (err && errlen)
				snprintf(err, errlen,
					"%s: round %" PRIu32 " is in progress and would change key"
					" (epoch or key); a new epoch must start at a later round",
					path, r);
			return -EINVAL;
		}
	}
	return 0;
}

int
isth_island_reload_keys(struct isth_island *s, const char *key_file, char *err, size_t errlen)
{
	struct isth_auth_engine *e, *old_e, *tx_e[ISTH_ISLAND_MAX_SOCKETS];
	struct isth_auth_engine *rx_e[ISTH_ISLAND_MAX_SOCKETS];
	struct isth_auth *a, *old_a;
	unsigned int i;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (s == NULL || key_file == NULL)
		return -EINVAL;
	/* auth on or off is fixed at open; s->auth is never NULL when on */
	if (!s->st.auth) {
		if (err && errlen)
			snprintf(err, errlen, "session opened without a key file (auth off)");
		return -ENOTCONN;
	}
	rc = auth_load(s, key_file, &a, &e, err, errlen);
	if (rc < 0)
		return rc;
	/* the senders' engines, one per socket (they seal in parallel) */
	memset(tx_e, 0, sizeof(tx_e));
	memset(rx_e, 0, sizeof(rx_e));
	for (i = 0; i < s->n_socks && rc == 0; i++) {
		rc = isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &tx_e[i]);
		if (rc == 0 && s->rx_threads)
			rc = isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &rx_e[i]);
	}
	if (rc < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s: tag engine: %s", key_file, strerror(-rc));
		for (i = 0; i < s->n_socks; i++) {
			isth_auth_engine_free(tx_e[i]);
			isth_auth_engine_free(rx_e[i]);
		}
		isth_auth_engine_free(e);
		isth_auth_free(a);
		return rc;
	}
	/* txmu first: no send() is sealing with the engines swapped here */
	pthread_mutex_lock(&s->txmu);
	pthread_mutex_lock(&s->mu);
	rc = reload_compatible(s, e, key_file, err, errlen);
	if (rc == 0) {
		old_a = s->auth;
		old_e = s->eng;
		s->auth = a;
		s->eng = e;
		for (i = 0; i < s->n_socks; i++) {
			struct isth_auth_engine *t = s->socks[i].eng;

			s->socks[i].eng = tx_e[i];
			tx_e[i] = t; /* the old one, freed below */
			if (!s->rx_threads)
				continue;
			/* the receive thread verifies with it outside mu,
			 * holding rxmu (lock order: txmu, mu, rxmu) */
			pthread_mutex_lock(&s->socks[i].rxmu);
			t = s->socks[i].rx_eng;
			s->socks[i].rx_eng = rx_e[i];
			rx_e[i] = t;
			pthread_mutex_unlock(&s->socks[i].rxmu);
		}
		win_sync(s);
		s->st.key_reloads++;
		s->st.auth_epochs = (uint8_t)isth_auth_n_epochs(a);
	} else {
		old_a = a;
		old_e = e;
	}
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&s->txmu);
	for (i = 0; i < s->n_socks; i++) {
		isth_auth_engine_free(tx_e[i]);
		isth_auth_engine_free(rx_e[i]);
	}
	isth_auth_engine_free(old_e);
	isth_auth_free(old_a);
	return rc;
}

uint16_t
isth_island_local_port(const struct isth_island *s)
{
	return s ? s->socks[0].port : 0;
}

uint16_t
isth_island_socket_port(const struct isth_island *s, unsigned int i)
{
	return s && i < s->n_socks ? s->socks[i].port : 0;
}

uint32_t
isth_island_chunk_elems(const struct isth_island *s)
{
	return s ? s->chunk_elems : 0;
}

uint32_t
isth_island_n_chunks(const struct isth_island *s)
{
	return s ? s->n_chunks : 0;
}

int
isth_island_wait_round(struct isth_island *s, uint64_t timeout_ns, struct isth_island_round *out)
{
	uint64_t end = sat_add(mono_ns(), timeout_ns);
	bool first = true;
	int rc;

	if (s == NULL || out == NULL)
		return -EINVAL;
	pthread_mutex_lock(&s->mu);
	for (;; first = false) {
		const struct slot *best = NULL;
		uint64_t t;
		unsigned int i;

		if (s->shape_err) {
			s->shape_err = false;
			*out = s->shape_info;
			rc = -EPROTO;
			break;
		}
		for (i = 0; i < ISTH_ISLAND_ROUNDS; i++) {
			const struct slot *sl = &s->slots[i];

			if (sl->state == SLOT_FREE || !sl->announced)
				continue;
			if (s->have_waited && sl->round <= s->last_waited)
				continue;
			if (best == NULL || sl->round < best->round)
				best = sl;
		}
		if (best) {
			*out = best->info;
			s->have_waited = true;
			s->last_waited = best->round;
			rc = 0;
			break;
		}
		t = mono_ns();
		if (!first && t >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		rc = wait_io(s, t < end ? end - t : 0);
		if (rc < 0)
			break;
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/*
 * Element @i of the caller's tensor as it goes on the wire, in host order:
 * a 32-bit word (int32, fp32) or a bf16 (a bf16 session's tensor is bf16,
 * or fp32 that is rounded here).
 */
static inline uint32_t
tensor_word(const struct isth_island *s, const uint8_t *src, bool src_f32, uint32_t i)
{
	uint32_t v;
	uint16_t b;
	float f;

	if (s->conf.dtype != ISTH_WIRE_DTYPE_BF16) {
		memcpy(&v, src + 4 * (size_t)i, 4);
		return v;
	}
	if (src_f32) {
		memcpy(&f, src + 4 * (size_t)i, 4);
		return f32_to_bf16(f);
	}
	memcpy(&b, src + 2 * (size_t)i, 2);
	return b;
}

/*
 * Encode, seal and send the DATA of socket @so's chunk range of job @j:
 * chunks [idx * n / n_socks, (idx + 1) * n / n_socks). Runs without mu
 * (txmu is held by send()): it reads only the caller's tensor and what
 * open() wrote, and writes only @so.
 */
static int
tx_range(struct isth_island *s, struct isl_sock *so, const struct tx_job *j)
{
	uint32_t c0 = (uint32_t)((uint64_t)so->idx * s->n_chunks / s->n_socks);
	uint32_t c1 = (uint32_t)((uint64_t)(so->idx + 1) * s->n_chunks / s->n_socks);
	size_t es = wire_esize(s);
	bool fast = es == 4 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
	unsigned int k = 0;
	uint32_t c, i;
	int rc = 0;

	for (c = c0; c < c1; c++) {
		uint32_t len = chunk_len(s, c), base = c * s->chunk_elems;
		struct isth_wire_hdr h = {
			.type = ISTH_WIRE_DATA,
			.dtype = s->conf.dtype,
			.flags = c + 1 == s->n_chunks ? ISTH_WIRE_F_LAST : 0,
			.sender = s->conf.island,
			.count = (uint16_t)len,
			.job = s->conf.job,
			.round = j->round,
			.chunk = c,
			.seq = j->seq0 + c,
			.bitmap = self_bit(s),
		};
		uint8_t *p = so->buf + (size_t)k * s->pkt_stride;
		uint8_t *body = p + ISTH_WIRE_HDR_SIZE;
		size_t mlen = ISTH_WIRE_HDR_SIZE + (size_t)len * es;

		isth_wire_put_hdr(p, s->pkt_stride, &h);
		if (fast) /* int32/fp32 on a little-endian host: as is */
			memcpy(body, j->src + 4 * (size_t)base, 4 * (size_t)len);
		else
			for (i = 0; i < len; i++) {
				uint32_t v = tensor_word(s, j->src, j->src_f32, base + i);

				if (es == 2) {
					uint16_t b = htole16((uint16_t)v);

					memcpy(body + 2 * (size_t)i, &b, 2);
				} else {
					v = htole32(v);
					memcpy(body + 4 * (size_t)i, &v, 4);
				}
			}
		if (so->eng) {
			/* after the last header change; the epoch is there */
			int t = isth_auth_seal(
				so->eng, ISTH_AUTH_UP, s->conf.island, p, mlen, s->pkt_stride);

			if (t < 0) { /* not expected: round and sizes checked */
				so->errors += c1 - c;
				if (k && tx_packets(s, so, k) < 0)
					return -EIO;
				return t;
			}
			mlen = (size_t)t;
		}
		so->len[k] = mlen;
		if (++k == s->tx_cap || c + 1 == c1) {
			if (tx_packets(s, so, k) < 0)
				rc = -EIO;
			k = 0;
		}
	}
	return rc;
}

/* Thread of socket i > 0: send its range of every job send() posts. */
static void *
tx_thread(void *arg)
{
	struct isl_sock *so = arg;
	struct isth_island *s = so->sess;
	uint64_t seen = 0;

	pthread_mutex_lock(&s->jmu);
	for (;;) {
		struct tx_job j;

		while (!s->job_quit && s->job_gen == seen)
			pthread_cond_wait(&s->jcv, &s->jmu);
		if (s->job_quit)
			break;
		seen = s->job_gen;
		j = s->job;
		pthread_mutex_unlock(&s->jmu);
		so->rc = tx_range(s, so, &j);
		pthread_mutex_lock(&s->jmu);
		if (--s->job_pending == 0)
			pthread_cond_broadcast(&s->jcv);
	}
	pthread_mutex_unlock(&s->jmu);
	return NULL;
}

static void
tx_threads_stop(struct isth_island *s)
{
	unsigned int i;

	pthread_mutex_lock(&s->jmu);
	s->job_quit = true;
	pthread_cond_broadcast(&s->jcv);
	pthread_mutex_unlock(&s->jmu);
	for (i = 1; i < s->n_socks; i++)
		if (s->socks[i].th_started) {
			pthread_join(s->socks[i].th, NULL);
			s->socks[i].th_started = false;
		}
}

int
isth_island_send(struct isth_island *s, uint32_t round, const void *tensor, size_t size)
{
	enum isth_island_drop why;
	const uint8_t *src = tensor;
	struct tx_job job;
	bool src_f32;
	struct slot *sl;
	uint32_t i;
	int rc = 0;

	if (s == NULL || tensor == NULL)
		return -EINVAL;
	/* bf16 sessions take bf16 (2 bytes) or fp32 (4 bytes, rounded) */
	src_f32 = size == (size_t)s->conf.elems * 4;
	if (!src_f32 &&
		!(s->conf.dtype == ISTH_WIRE_DTYPE_BF16 && size == (size_t)s->conf.elems * 2))
		return -EINVAL;
	pthread_mutex_lock(&s->txmu);
	pthread_mutex_lock(&s->mu);
	for (;;) {
		sl = slot_get(s, round, now_ns(s), &why, NULL);
		if (sl == NULL) {
			rc = why == ISTH_ISLAND_DROP_round_busy ? -EBUSY : -ESTALE;
			goto out;
		}
		if (sl->state == SLOT_DONE) {
			rc = -ESTALE;
			goto out;
		}
		if (sl->sent) {
			rc = -EALREADY;
			goto out;
		}
		/* auth on: a round no loaded epoch covers cannot be tagged */
		if (s->auth && isth_auth_epoch_of(s->auth, round) < 0) {
			rc = -ENOKEY;
			goto out;
		}
		/* the own contribution goes into every chunk: no receive
		 * thread may be adding to one meanwhile */
		if (slot_summed(sl))
			break;
		slot_wait_sums(s, sl);
	}
	/* Own contribution, as the peers will see it (bf16: rounded). */
	if (s->conf.dtype == ISTH_WIRE_DTYPE_INT32) {
		uint32_t *d = sl->acc;

		for (i = 0; i < s->conf.elems; i++)
			d[i] += tensor_word(s, src, true, i);
	} else if (s->conf.dtype == ISTH_WIRE_DTYPE_BF16) {
		float *d = sl->acc;

		for (i = 0; i < s->conf.elems; i++)
			d[i] += bf16_to_f32((uint16_t)tensor_word(s, src, src_f32, i));
	} else {
		float *d = sl->acc, f;

		for (i = 0; i < s->conf.elems; i++) {
			memcpy(&f, src + 4 * (size_t)i, 4);
			d[i] += f;
		}
	}
	sl->sent = true;
	/* chunk c gets seq seq0 + c whichever socket sends it: one DATA
	 * stream for the island, as with one socket */
	job.round = round;
	job.src = src;
	job.src_f32 = src_f32;
	job.seq0 = s->data_seq;
	s->data_seq += s->n_chunks;
	pthread_mutex_unlock(&s->mu);

	/* the sockets send their ranges in parallel, without mu: the
	 * reader keeps summing AGGs meanwhile */
	if (s->n_socks > 1) {
		pthread_mutex_lock(&s->jmu);
		s->job = job;
		s->job_gen++;
		s->job_pending = s->n_socks - 1;
		pthread_cond_broadcast(&s->jcv);
		pthread_mutex_unlock(&s->jmu);
	}
	s->socks[0].rc = tx_range(s, &s->socks[0], &job);
	if (s->n_socks > 1) {
		pthread_mutex_lock(&s->jmu);
		while (s->job_pending)
			pthread_cond_wait(&s->jcv, &s->jmu);
		pthread_mutex_unlock(&s->jmu);
	}

	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->n_socks; i++) {
		struct isl_sock *so = &s->socks[i];

		if (so->rc < 0 && rc == 0)
			rc = so->rc == -EIO ? -EIO : so->rc;
		s->st.data_tx += so->pkts;
		s->st.data_tx_bytes += so->bytes;
		s->st.tx_errors += so->errors;
		s->st.gso_sends += so->gso_sends;
		s->st.gso_refused += so->gso_refused;
		so->pkts = so->bytes = so->errors = so->gso_sends = so->gso_refused = 0;
		so->rc = 0;
	}
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&s->txmu);
	return rc;

out:
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&s->txmu);
	return rc;
}

/* Close a round: count it and remember the answer. */
static void
finalize(struct isth_island *s, struct slot *sl, uint64_t now)
{
	struct isth_island_result *res = &sl->res;
	uint64_t self = sl->sent ? self_bit(s) : 0;
	uint32_t c;

	memset(res, 0, sizeof(*res));
	res->round = sl->round;
	res->n_chunks = s->n_chunks;
	res->self_sent = sl->sent;
	res->end_ns = now;
	for (c = 0; c < s->n_chunks; c++) {
		uint64_t miss = (sl->info.expected | self) & ~(sl->bitmap[c] | self);

		if (miss) {
			res->partial++;
			res->missing += (uint64_t)__builtin_popcountll(miss);
			res->missing_set |= miss;
		} else {
			res->complete++;
		}
	}
	res->early = res->partial == 0 && now < sat_add(sl->info.deadline_ns, s->conf.grace_ns);
	sl->rc = res->partial ? -ETIMEDOUT : 0;
	sl->state = SLOT_DONE;
	if (res->partial)
		s->st.rounds_partial++;
	else
		s->st.rounds_complete++;
}

int
isth_island_result(struct isth_island *s, uint32_t round, void *out, size_t out_size,
	struct isth_island_chunk *chunks, unsigned int max_chunks, struct isth_island_result *res,
	uint64_t timeout_ns)
{
	uint64_t end, self;
	struct slot *sl;
	bool first = true;
	uint32_t c;
	int rc;

	if (s == NULL || out == NULL || chunks == NULL)
		return -EINVAL;
	if (out_size < (size_t)s->conf.elems * 4 || max_chunks < s->n_chunks)
		return -ENOSPC;
	end = sat_add(mono_ns(), timeout_ns);
	pthread_mutex_lock(&s->mu);
	for (;; first = false) {
		uint64_t t, now = now_ns(s);

		sl = slot_find(s, round);
		/* done, and every AGG judged into it added: the hand-off */
		if (sl && sl->state == SLOT_DONE && slot_summed(sl))
			break;
		if (sl && sl->state == SLOT_DONE) {
			slot_wait_sums(s, sl);
			continue;
		}
		if (sl && sl->announced) {
			uint64_t stop = sat_add(sl->info.deadline_ns, s->conf.grace_ns);

			if (sl->chunks_done < s->n_chunks && now >= stop && !s->reading) {
				/* take what is queued before giving up; that
				 * may be a newer round's ROUND taking over the
				 * slot of this one, past its deadline */
				rx_drain(s);
				run_timers(s, now, ALL_SOCKS);
				if (slot_find(s, round) != sl) {
					pthread_mutex_unlock(&s->mu);
					return -ESTALE;
				}
			}
			if (sl->chunks_done == s->n_chunks || now >= stop) {
				finalize(s, sl, now);
				continue; /* waits for the adds above */
			}
			rc = wait_io(s, stop - now);
		} else {
			if (sl == NULL && round_is_old(s, round)) {
				pthread_mutex_unlock(&s->mu);
				return -ESTALE;
			}
			t = mono_ns();
			if (!first && t >= end) {
				pthread_mutex_unlock(&s->mu);
				return -ENOENT;
			}
			rc = wait_io(s, t < end ? end - t : 0);
		}
		if (rc < 0) {
			pthread_mutex_unlock(&s->mu);
			return rc;
		}
	}
	self = sl->sent ? self_bit(s) : 0;
	for (c = 0; c < s->n_chunks; c++) {
		struct isth_island_chunk *ch = &chunks[c];

		ch->bitmap = sl->bitmap[c] | self;
		ch->expected = sl->info.expected | self;
		ch->missing = ch->expected & ~ch->bitmap;
		ch->aggs = sl->aggs[c];
		ch->count = chunk_len(s, c);
	}
	memcpy(out, sl->acc, (size_t)s->conf.elems * 4);
	if (res)
		*res = sl->res;
	rc = sl->rc;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int
isth_island_ready(struct isth_island *s, uint32_t round, uint64_t timeout_ns)
{
	uint64_t end;
	bool first = true;
	int rc;

	if (s == NULL)
		return -EINVAL;
	end = sat_add(mono_ns(), timeout_ns);
	pthread_mutex_lock(&s->mu);
	for (;; first = false) {
		uint64_t t, now = now_ns(s);
		struct slot *sl = slot_find(s, round);

		if (sl && sl->state == SLOT_DONE) {
			rc = 0;
			break;
		}
		if (sl == NULL && round_is_old(s, round)) {
			rc = -ESTALE;
			break;
		}
		if (sl && sl->announced) {
			uint64_t stop = sat_add(sl->info.deadline_ns, s->conf.grace_ns);

			if (sl->chunks_done < s->n_chunks && now >= stop && !s->reading) {
				rx_drain(s); /* as in result() */
				run_timers(s, now, ALL_SOCKS);
				if (slot_find(s, round) != sl) {
					rc = -ESTALE;
					break;
				}
			}
			if (sl->chunks_done == s->n_chunks || now >= stop) {
				finalize(s, sl, now);
				rc = 0;
				break;
			}
		}
		t = mono_ns();
		if (!first && t >= end) {
			rc = -EAGAIN;
			break;
		}
		rc = wait_io(s, t < end ? end - t : 0);
		if (rc < 0)
			break;
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int
isth_island_poll(struct isth_island *s, uint64_t timeout_ns)
{
	uint64_t end, t;
	bool first = true;
	int n;

	if (s == NULL)
		return -EINVAL;
	end = sat_add(mono_ns(), timeout_ns);
	pthread_mutex_lock(&s->mu);
	for (;; first = false) {
		t = mono_ns();
		if (!first && t >= end) {
			n = 0;
			break;
		}
		n = wait_io(s, t < end ? end - t : 0);
		/* receive threads: one of their batches (or the time) is it */
		if (n != 0 || s->rx_threads)
			break;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

void
isth_island_stats(struct isth_island *s, struct isth_island_stats *st)
{
	if (s == NULL || st == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	*st = s->st;
	st->agg_streams = s->n_streams; /* raised under mu by a ROUND */
	pthread_mutex_unlock(&s->mu);
	st->n_sockets = s->n_socks;
	st->gso = atomic_load_explicit(&s->gso_on, memory_order_relaxed);
	st->gro = s->gro;
}

/* snprintf into buf at *off, keeping the length it would need. */
static void put(char *buf, size_t size, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
put(char *buf, size_t size, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(*off < size ? buf + *off : NULL, *off < size ? size - *off : 0, fmt, ap);
	va_end(ap);
	if (k > 0)
		*off += (size_t)k;
}

int
isth_island_missing_str(
	const struct isth_island_chunk *chunks, unsigned int n_chunks, char *buf, size_t size)
{
	uint64_t any = 0;
	size_t off = 0;
	unsigned int i, c;

	if (buf && size)
		buf[0] = '\0';
	if (buf == NULL)
		size = 0;
	for (c = 0; chunks && c < n_chunks; c++)
		any |= chunks[c].missing;
	if (any == 0) {
		put(buf, size, &off, "none");
		return (int)off;
	}
	for (i = 0; i < 64; i++) {
		unsigned int n = 0, runs = 0;

		if (!(any & (UINT64_C(1) << i)))
			continue;
		for (c = 0; c < n_chunks; c++)
			if (chunks[c].missing & (UINT64_C(1) << i))
				n++;
		put(buf, size, &off, "%sisland %u chunk%s ", off ? "; " : "", i, n > 1 ? "s" : "");
		for (c = 0; c < n_chunks; c++) {
			unsigned int e = c;

			if (!(chunks[c].missing & (UINT64_C(1) << i)))
				continue;
			while (e + 1 < n_chunks && (chunks[e + 1].missing & (UINT64_C(1) << i)))
				e++;
			if (e == c)
				put(buf, size, &off, "%s%u", runs ? "," : "", c);
			else
				put(buf, size, &off, "%s%u-%u", runs ? "," : "", c, e);
			runs++;
			c = e;
		}
	}
	if (off >= size && size >= 4)
		memcpy(buf + size - 4, "...", 4);
	return (int)off;
}
