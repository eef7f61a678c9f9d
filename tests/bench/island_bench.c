/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libisthmus send and receive rate over loopback, each beside a
 * plain sendmmsg/recvmmsg of the same datagrams in the same run.
 *
 * fp32 sessions at MTU 1500: 358 elements (1432 bytes of payload) per
 * chunk, NCH chunks per tensor. With T threads (1 and 2), each thread owns
 * its own session and sockets; the threads run each phase together
 * (pthread barrier between phases) and the phases are interleaved per
 * repetition so that each ratio sees the same load on a shared host.
 *
 *   send lib      isth_island_send() of round after round (never announced,
 *                 so each send takes its slot over): the library's whole
 *                 cost per round (accumulate own contribution, encode,
 *                 sendmmsg in bursts of 32) to a sink socket drained by a
 *                 sink thread
 *   send ref      sendmmsg in bursts of 32 of NCH prebuilt DATA datagrams
 *                 of the same sizes to the same sink
 *   recv lib      a fake edge thread sends ROUND r + NCH AGGs (one peer)
 *                 per round; the island thread takes isth_island_result()
 *                 of every round (must return 0: all chunks complete). The
 *                 edge sends round r+1 while the island sums round r.
 *   recv ref      the same edge traffic read by recvmmsg in bursts of 32
 *   send auth,    send lib and recv lib with authentication on (wire v2,
 *   recv auth     conf.key_file): DATA sealed with AES-256-GMAC, every AGG
 *                 and ROUND verified and checked against its replay window
 *                 (the edge thread seals them; its cost is not measured).
 *                 The tag takes 16 bytes of each packet: 354 elements
 *                 (1416 bytes) per chunk instead of 358, same chunk count.
 *                 Interleaved with the others in every repetition, so
 *                 auth_ns_per_pkt (per-packet cost of authentication on
 *                 the island: 1/rate(auth) - 1/rate(lib), in packets) is
 *                 taken under the same load.
 *
 *   send gso      send lib with conf.gso on: up to 44 DATA (1472 bytes) per
 *                 UDP_SEGMENT buffer, cut into the same datagrams by the
 *                 kernel (the sink is a plain socket unless --sink-gro)
 *   send gso s2   send gso over 2 sockets: the library's own thread sends
 *                 the second half of the chunks; its CPU is counted in
 *                 the *_proc figures (process CPU less the sink and edge
 *                 threads), the only per-core figure that sees it
 *   send gso auth send auth with GSO: every segment one sealed DATA
 *   recv gro      recv lib with conf.gro on; the fake edge sends the AGGs
 *                 in GSO buffers, which loopback (and veth) hand whole to
 *                 the GRO socket, as a NIC's GRO would coalesce them
 *   recv auth t1, recv auth with receive threads (conf.rx_threads) over 1,
 *   recv auth s2, 2 and 4 sockets: the fake edge sends S AGG streams (chunk
 *   recv auth s4  c in stream c % S, a seq each) and stream k to socket k,
 *                 as isthmusd with [access] island_sockets = S; the caller
 *                 only waits for the results. Per core: the *_proc figure
 *                 (the receive threads are the library's)
 *   recv t1,      the same without auth over 1 and 2 sockets: the edge
 *   recv s2       seals nothing (a faster sender) and the summation is a
 *                 larger share of the island's work per datagram
 *
 * --veth puts the fake edge and the sink in a network namespace of the run
 * behind a veth pair (10.214.0.1 <-> 10.214.0.2; removed at exit), the
 * island in this one: a plain UDP receiver, not a DPDK sink. --sink-gro
 * gives the sink UDP_GRO, so that GSO buffers reach it whole: the sender's
 * cost without the per-datagram delivery loopback charges it (what a NIC
 * with UDP segmentation offload spares it). Datagrams the sink dropped
 * (SO_MEMINFO) are reported per send phase (sink_drop_frac).
 *
 * Rates are payload bytes (1432 per chunk; headers excluded). "per core"
 * divides by the CPU time of the measured threads (CLOCK_THREAD_CPUTIME_ID:
 * on loopback the kernel's delivery runs in the sender's context, so the
 * send figures include it); "wall" is the aggregate over the slowest
 * thread's wall time. Best of REPS per figure.
 *
 * Output: one line per figure, "name value unit".
 * Usage: bench_island [--quick] [--rounds N] [--reps N] [--veth] [--sink-gro]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>

#include "isth_auth.h"
#include "isth_island.h"
#include "isth_wire.h"

#define LOOPBACK 0x7f000001u
#define JOB 14u
#define SELF 1u
#define PEER 0u
#define N_ISLANDS 2u
#define CE 358u /* fp32 elements per chunk at MTU 1500: 1432 bytes */
#define PAYLOAD (CE * 4u)
#define CE_AUTH 354u /* with the 16-byte tag: 1416 bytes */
#define BURST 32u
#define MAX_THREADS 2u
#define DGRAM 2048u

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static unsigned int nch = 256; /* chunks per tensor: 366 KB of payload */
static unsigned int rounds = 400; /* rounds per phase and thread */
static unsigned int reps = 5;

static void
die(const char *what, int err)
{
	fprintf(stderr, "bench_island: %s: %s\n", what, strerror(err));
	exit(1);
}

static double
clk(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t
real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Where the island is and where its edge and sink are: both 127.0.0.1
 * (loopback), or with --veth the island in this namespace and the fake
 * edge and the sink behind a veth pair in a namespace of their own.
 */
static uint32_t near_ip = LOOPBACK, far_ip = LOOPBACK;
static int home_ns = -1, far_ns = -1; /* --veth: namespace fds */
static char ns_name[32], veth_name[16];
static bool sink_gro; /* --sink-gro: the sink takes GSO buffers whole */

/* A UDP socket, ephemeral port, big receive buffer: on the island's side,
 * or (@far) on the edge's, in its namespace with --veth. */
static int
udp_socket_at(uint16_t *port, bool far)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd, buf = 16 << 20;

	if (far && far_ns >= 0 && setns(far_ns, CLONE_NEWNET) < 0)
		die("setns (far)", errno);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (far && far_ns >= 0 && setns(home_ns, CLONE_NEWNET) < 0)
		die("setns (home)", errno);
	if (fd < 0)
		die("socket", errno);
	/* root may pass rmem_max: a sink that keeps up (drops are reported) */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	a.sin_addr.s_addr = htonl(far ? far_ip : near_ip);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		die("bind", errno);
	*port = ntohs(a.sin_port);
	return fd;
}

static int
udp_socket(uint16_t *port)
{
	return udp_socket_at(port, false);
}

/* A port on the island's side (near) or the edge's (far). */
static struct sockaddr_in
addr_at(uint16_t port, bool far)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};

	a.sin_addr.s_addr = htonl(far ? far_ip : near_ip);
	return a;
}

static struct sockaddr_in
loop_addr(uint16_t port)
{
	return addr_at(port, false);
}

static void
veth_down(void)
{
	char cmd[128];

	if (ns_name[0] == '\0')
		return;
	/* deleting the namespace deletes its end of the pair, and the pair */
	snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", ns_name);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_island: %s failed\n", cmd);
	ns_name[0] = '\0';
}

static void
on_signal(int sig)
{
	veth_down();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* --veth: a namespace named for this run, a veth pair 10.214.0.1 (here)
 * <-> 10.214.0.2 (there); removed at exit, on a signal and on die(). */
static void
veth_up(void)
{
	char cmd[512], path[64];
	int rc;

	snprintf(ns_name, sizeof(ns_name), "islb%d", (int)getpid());
	snprintf(veth_name, sizeof(veth_name), "vib%d", (int)getpid());
	atexit(veth_down);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	snprintf(cmd, sizeof(cmd),
		"ip netns add %s && ip link add %s type veth peer name eth0 netns %s && "
		"ip addr add 10.214.0.1/24 dev %s && ip link set %s up && "
		"ip -n %s addr add 10.214.0.2/24 dev eth0 && ip -n %s link set eth0 up && "
		"ip -n %s link set lo up",
		ns_name, veth_name, ns_name, veth_name, veth_name, ns_name, ns_name, ns_name);
	rc = system(cmd);
	if (rc != 0) {
		fprintf(stderr, "bench_island: --veth: setup failed (root and iproute2 needed)\n");
		exit(1);
	}
	snprintf(path, sizeof(path), "/var/run/netns/%s", ns_name);
	home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	far_ns = open(path, O_RDONLY | O_CLOEXEC);
	if (home_ns < 0 || far_ns < 0)
		die("open netns", errno);
	near_ip = 0x0ad60001u;
	far_ip = 0x0ad60002u;
}

/* sendmmsg of @n datagrams of @buf (DGRAM apart) to @to, in bursts. */
static void
send_all(int fd, uint8_t *buf, const size_t *len, unsigned int n, struct sockaddr_in *to)
{
	struct mmsghdr m[BURST];
	struct iovec v[BURST];
	unsigned int i = 0;

	while (i < n) {
		unsigned int k = n - i < BURST ? n - i : BURST, j;
		int r;

		for (j = 0; j < k; j++) {
			v[j].iov_base = buf + (size_t)(i + j) * DGRAM;
			v[j].iov_len = len[i + j];
			memset(&m[j], 0, sizeof(m[j]));
			m[j].msg_hdr.msg_name = to;
			m[j].msg_hdr.msg_namelen = sizeof(*to);
			m[j].msg_hdr.msg_iov = &v[j];
			m[j].msg_hdr.msg_iovlen = 1;
		}
		r = sendmmsg(fd, m, k, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("sendmmsg", errno);
		}
		i += (unsigned int)r;
	}
}

/* @n datagrams of @seg bytes each, DGRAM apart in @buf, to @to: packed
 * into GSO buffers of up to 40 segments (the kernel cuts them). */
static void
send_gso(int fd, uint8_t *buf, size_t seg, unsigned int n, struct sockaddr_in *to)
{
	static __thread uint8_t *pack;
	unsigned int i, j;

	if (pack == NULL && (pack = malloc(40 * DGRAM)) == NULL)
		die("malloc", ENOMEM);
	for (i = 0; i < n; i += 40) {
		unsigned int k = n - i < 40 ? n - i : 40;
		union {
			char b[CMSG_SPACE(sizeof(uint16_t))];
			struct cmsghdr al;
		} cm;
		struct iovec v = {pack, k * seg};
		struct msghdr m = {
			.msg_name = to,
			.msg_namelen = sizeof(*to),
			.msg_iov = &v,
			.msg_iovlen = 1,
			.msg_control = cm.b,
			.msg_controllen = sizeof(cm.b),
		};
		struct cmsghdr *h;
		uint16_t sz = (uint16_t)seg;

		for (j = 0; j < k; j++)
			memcpy(pack + j * seg, buf + (size_t)(i + j) * DGRAM, seg);
		memset(&cm, 0, sizeof(cm));
		h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_UDP;
		h->cmsg_type = UDP_SEGMENT;
		h->cmsg_len = CMSG_LEN(sizeof(sz));
		memcpy(CMSG_DATA(h), &sz, sizeof(sz));
		while (sendmsg(fd, &m, 0) < 0)
			if (errno != EINTR)
				die("sendmsg (GSO)", errno);
	}
}

/* Read @n datagrams from @fd with recvmmsg in bursts (blocking). */
static void
recv_n(int fd, uint8_t *buf, unsigned int n)
{
	struct mmsghdr m[BURST];
	struct iovec v[BURST];
	unsigned int got = 0, j;

	for (j = 0; j < BURST; j++) {
		v[j].iov_base = buf + (size_t)j * DGRAM;
		v[j].iov_len = DGRAM;
		memset(&m[j], 0, sizeof(m[j]));
		m[j].msg_hdr.msg_iov = &v[j];
		m[j].msg_hdr.msg_iovlen = 1;
	}
	while (got < n) {
		/* never into the next round's datagrams: they are counted there */
		unsigned int want = n - got < BURST ? n - got : BURST;
		int r = recvmmsg(fd, m, want, MSG_WAITFORONE, NULL);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("recvmmsg", errno);
		}
		got += (unsigned int)r;
	}
}

/* ---- per-thread state ---------------------------------------------------- */

enum phase {
	SEND_LIB,
	SEND_GSO,
	SEND_GSO_S2,
	SEND_AUTH,
	SEND_GSO_AUTH,
	SEND_REF,
	RECV_LIB,
	RECV_GRO,
	RECV_AUTH,
	RECV_AUTH_T1,
	RECV_AUTH_S2,
	RECV_AUTH_S4,
	RECV_T1,
	RECV_S2,
	RECV_REF,
	N_PHASES
};
static const char *const phase_name[N_PHASES] = {"send_lib", "send_gso", "send_gso_s2", "send_auth",
	"send_gso_auth", "send_ref", "recv_lib", "recv_gro", "recv_auth", "recv_auth_t1",
	"recv_auth_s2", "recv_auth_s4", "recv_t1", "recv_s2", "recv_ref"};

/* Receive threads' phases: their index in worker.rxt[], sockets, and
 * whether auth is on (the first RXT_AUTH; without auth the summation is
 * a larger share of a datagram's cost) */
#define RXT_PHASES 5u
#define RXT_AUTH 3u
static inline int
phase_rxt(int ph)
{
	return ph >= RECV_AUTH_T1 && ph <= RECV_S2 ? ph - RECV_AUTH_T1 : -1;
}
static const unsigned int rxt_socks[RXT_PHASES] = {1, 2, 4, 1, 2};

static inline bool
phase_auth(int ph)
{
	return ph == SEND_AUTH || ph == SEND_GSO_AUTH || ph == RECV_AUTH ||
		(phase_rxt(ph) >= 0 && phase_rxt(ph) < (int)RXT_AUTH);
}

/* Elements per chunk of a phase. */
static inline uint32_t
phase_ce(int ph)
{
	return phase_auth(ph) ? CE_AUTH : CE;
}

/* The key file of the auth sessions (a temporary file, mode 0600) and the
 * edge's keys for it: sealing by the edge threads, one engine each. */
static char key_path[64];
static struct isth_auth *edge_keys;

struct worker {
	unsigned int id;
	pthread_t th, edge_th;
	/* send side: the session sends to sink_fd (drained by the sink thread) */
	struct isth_island *tx, *tx_auth;
	/* the same with UDP GSO; with GSO over 2 sockets (a second sending
	 * thread of the library's); with GSO and auth */
	struct isth_island *tx_gso, *tx_s2, *tx_gso_auth;
	int sink_fd, ref_fd;
	uint16_t sink_port;
	/* receive side: edge_fd plays the edge of session rx */
	struct isth_island *rx, *rx_auth;
	struct isth_island *rx_gro; /* UDP GRO; its edge sends with GSO */
	struct isth_auth_engine *edge_eng; /* seals for rx_auth (edge thread) */
	int edge_fd, rref_fd;
	uint16_t edge_port, rref_port;
	sem_t go, edge_done; /* island -> edge: send the next round; edge -> main */
	enum phase phase; /* written by the worker before posting go */
	uint32_t tx_round; /* next round of the tx session (worker only) */
	uint32_t rx_round; /* next round of the rx session (worker only) */
	uint32_t tx_auth_round, rx_auth_round; /* the same for the auth sessions */
	uint32_t tx_gso_round, tx_s2_round, tx_gso_auth_round, rx_gro_round;
	uint64_t agg_seq; /* edge's AGG stream (edge thread only) */
	uint64_t agg_seq_gro;
	uint64_t agg_seq_auth, round_seq_auth; /* v2 streams of the auth edge */
	/* receive threads, 1/2/4 sockets (auth on): sessions, their next
	 * round (worker), the edge's ROUND seq and per-stream AGG seqs */
	struct isth_island *rxt[RXT_PHASES];
	uint32_t rxt_round[RXT_PHASES];
	uint64_t rxt_round_seq[RXT_PHASES], rxt_seq[RXT_PHASES][4];
	float *tensor, *out;
	struct isth_island_chunk *chunks;
	uint8_t *dgram, *rbuf; /* NCH prebuilt datagrams; recv buffers */
	size_t *len;
	double wall, cpu; /* last phase, written by the worker */
};

static struct worker wk[MAX_THREADS];
static unsigned int n_threads;
static pthread_t sink_th;
/* CPU of the whole process but the sink and edge threads: counts the
 * library's own sending threads (n_sockets > 1), which the measured
 * threads' clocks do not. Sampled by worker 0 around each phase. */
static double proc_cpu0;
/* Datagrams the sink sockets dropped (full receive buffer), sampled by
 * worker 0 around each phase: a send figure counts only what arrived. */
static uint64_t sink_drops0;
static double worst_drop_frac[N_PHASES];

static uint64_t
sink_drops(void)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < n_threads; i++) {
		uint32_t mi[SK_MEMINFO_VARS];
		socklen_t len = sizeof(mi);

		if (getsockopt(wk[i].sink_fd, SOL_SOCKET, SO_MEMINFO, mi, &len) == 0)
			n += mi[SK_MEMINFO_DROPS];
	}
	return n;
}
static pthread_barrier_t bar;
static atomic_bool sink_stop;
static atomic_uint_fast64_t sink_got;

/* Drains every send-side sink socket until told to stop; the poll timeout
 * only bounds how long the stop flag can go unseen. */
static void *
sink_main(void *arg)
{
	uint8_t *buf = malloc((size_t)BURST * DGRAM);
	struct mmsghdr m[BURST];
	struct iovec v[BURST];
	struct pollfd p[MAX_THREADS];
	unsigned int i, j;

	(void)arg;
	if (buf == NULL)
		die("malloc", ENOMEM);
	for (j = 0; j < BURST; j++) {
		v[j].iov_base = buf + (size_t)j * DGRAM;
		v[j].iov_len = DGRAM;
		memset(&m[j], 0, sizeof(m[j]));
		m[j].msg_hdr.msg_iov = &v[j];
		m[j].msg_hdr.msg_iovlen = 1;
	}
	for (i = 0; i < n_threads; i++)
		p[i] = (struct pollfd){.fd = wk[i].sink_fd, .events = POLLIN};
	while (!atomic_load(&sink_stop)) {
		if (poll(p, n_threads, 20) <= 0)
			continue;
		for (i = 0; i < n_threads; i++) {
			int r;

			while ((r = recvmmsg(p[i].fd, m, BURST, MSG_DONTWAIT, NULL)) > 0)
				atomic_fetch_add(&sink_got, (uint64_t)r);
		}
	}
	free(buf);
	return NULL;
}

static size_t
build(uint8_t *buf, uint8_t type, uint32_t round, uint32_t chunk, uint64_t seq, uint64_t bitmap,
	const void *body, size_t body_len)
{
	struct isth_wire_hdr h = {
		.type = type,
		.dtype = type == ISTH_WIRE_ROUND ? 0 : ISTH_WIRE_DTYPE_FP32,
		.sender = SELF, /* the edge addresses the island it talks to */
		.count = type == ISTH_WIRE_ROUND ? 0 : (uint16_t)(body_len / 4),
		.job = JOB,
		.round = round,
		.chunk = chunk,
		.seq = seq,
		.bitmap = bitmap,
	};
	int n;

	n = isth_wire_build_msg(buf, DGRAM, &h, body, body_len, NULL);
	if (n <= 0)
		die("isth_wire_build_msg", n < 0 ? -n : EINVAL);
	return (size_t)n;
}

/* The body of a ROUND of nch chunks of @ce elements, from PEER to SELF,
 * starting now, with a deadline far away: the round ends by completeness
 * only. */
static void
round_body(uint8_t *body, uint32_t ce)
{
	uint64_t now = real_ns();
	struct isth_wire_round rb = {
		.start_ns = now,
		.deadline_ns = now + 60000000000ull,
		.period_ns = 1000000000ull,
		.clique = 1u << PEER | 1u << SELF,
		.n_chunks = nch,
		.chunk_elems = ce,
	};

	isth_wire_put_round(body, ISTH_WIRE_ROUND_SIZE, &rb);
}

/*
 * The fake edge of a receive-threads phase (index @t, S = rxt_socks[t]
 * sockets and streams): ROUND (announcing S streams) to socket 0, then
 * stream k's AGGs (chunks c % S == k, a seq each) to socket k, all sealed.
 * The first round waits until the ROUND was taken: on another socket an
 * AGG could overtake it before the stream count is known.
 */
static void
edge_rxt(struct worker *w, unsigned int t, struct sockaddr_in *to, uint8_t *buf, size_t *len,
	uint8_t *sb, size_t *sl, uint8_t *body)
{
	unsigned int S = rxt_socks[t], k, c, n;
	uint32_t round = w->rxt_round[t], ce = t < RXT_AUTH ? CE_AUTH : CE;
	int r;

	round_body(body, ce);
	len[0] = build(buf, ISTH_WIRE_ROUND, round, 0, w->rxt_round_seq[t]++, 1u << PEER, body,
		ISTH_WIRE_ROUND_SIZE);
	buf[4] |= (uint8_t)((S - 1) << 4);
	if (t < RXT_AUTH) {
		r = isth_auth_seal(w->edge_eng, ISTH_AUTH_DOWN, SELF, buf, len[0], DGRAM);
		if (r < 0)
			die("isth_auth_seal", -r);
		len[0] = (size_t)r;
	}
	send_all(w->edge_fd, buf, len, 1, &to[0]);
	if (w->rxt_round_seq[t] == 1) {
		struct isth_island_stats st;

		for (int i = 0; i < 10000; i++) { /* 10 s at most */
			isth_island_stats(w->rxt[t], &st);
			if (st.rounds_announced)
				break;
			(void)poll(NULL, 0, 1);
		}
	}
	for (k = 0; k < S; k++) {
		for (c = k, n = 0; c < nch; c += S, n++) {
			uint8_t *b = sb + (size_t)n * DGRAM;

			sl[n] = build(b, ISTH_WIRE_AGG, round, c, w->rxt_seq[t][k]++, 1u << PEER,
				w->tensor + (size_t)c * ce, (size_t)ce * 4);
			b[4] |= (uint8_t)(k << 4);
			if (t >= RXT_AUTH)
				continue;
			r = isth_auth_seal(w->edge_eng, ISTH_AUTH_DOWN, SELF, b, sl[n], DGRAM);
			if (r < 0)
				die("isth_auth_seal", -r);
			sl[n] = (size_t)r;
		}
		send_all(w->edge_fd, sb, sl, n, &to[k]);
	}
}

/* The fake edge of worker @w: per go, ROUND + NCH AGGs of one round. */
static void *
edge_main(void *arg)
{
	struct worker *w = arg;
	uint8_t *buf = malloc((size_t)(nch + 1) * DGRAM);
	size_t *len = malloc(sizeof(*len) * (nch + 1));
	struct sockaddr_in lib = loop_addr(isth_island_local_port(w->rx));
	struct sockaddr_in libauth = loop_addr(isth_island_local_port(w->rx_auth));
	struct sockaddr_in libgro = loop_addr(isth_island_local_port(w->rx_gro));
	struct sockaddr_in ref = loop_addr(w->rref_port);
	struct sockaddr_in rxt[RXT_PHASES][4];
	uint8_t body[ISTH_WIRE_ROUND_SIZE];
	size_t *sl = malloc(sizeof(*sl) * (nch + 1));
	uint8_t *sb = malloc((size_t)(nch + 1) * DGRAM);

	if (sl == NULL || sb == NULL)
		die("malloc", ENOMEM);
	for (unsigned int t = 0; t < RXT_PHASES; t++)
		for (unsigned int k = 0; k < rxt_socks[t]; k++)
			rxt[t][k] = loop_addr(isth_island_socket_port(w->rxt[t], k));

	if (buf == NULL || len == NULL)
		die("malloc", ENOMEM);
	for (;;) {
		uint32_t round, ce;
		unsigned int c;
		bool to_lib, auth, gro;

		sem_wait(&w->go);
		if (w->phase == N_PHASES)
			break;
		int t = phase_rxt(w->phase);

		auth = w->phase == RECV_AUTH;
		gro = w->phase == RECV_GRO;
		to_lib = w->phase == RECV_LIB;
		round = auth ? w->rx_auth_round : gro ? w->rx_gro_round : w->rx_round;
		if (t >= 0) {
			edge_rxt(w, (unsigned int)t, rxt[t], buf, len, sb, sl, body);
			sem_post(&w->edge_done);
			continue;
		}
		ce = phase_ce(w->phase);
		round_body(body, ce);
		len[0] = build(buf, ISTH_WIRE_ROUND, round, 0, auth ? w->round_seq_auth++ : 0,
			1u << PEER, body, sizeof(body));
		for (c = 0; c < nch; c++)
			len[c + 1] = build(buf + (size_t)(c + 1) * DGRAM, ISTH_WIRE_AGG, round, c,
				auth             ? w->agg_seq_auth++
					: gro    ? w->agg_seq_gro++
					: to_lib ? w->agg_seq++
						 : c,
				1u << PEER, w->tensor + (size_t)c * ce, (size_t)ce * 4);
		if (auth) {
			for (c = 0; c <= nch; c++) {
				int k = isth_auth_seal(w->edge_eng, ISTH_AUTH_DOWN, SELF,
					buf + (size_t)c * DGRAM, len[c], DGRAM);

				if (k < 0)
					die("isth_auth_seal", -k);
				len[c] = (size_t)k;
			}
		}
		if (gro) {
			/* the ROUND, then the AGGs (all DGRAM apart, all as
			 * long) in GSO sends, which loopback hands whole to a
			 * GRO socket: what a NIC's GRO would make of them */
			send_all(w->edge_fd, buf, len, 1, &libgro);
			send_gso(w->edge_fd, buf + DGRAM, len[1], nch, &libgro);
		} else {
			send_all(w->edge_fd, buf, len, nch + 1,
				auth             ? &libauth
					: to_lib ? &lib
						 : &ref);
		}
		sem_post(&w->edge_done);
	}
	free(buf);
	free(len);
	free(sb);
	free(sl);
	return NULL;
}

/* Why the session refused what the fake edge sent (the bench's own bug). */
static void
report_drops(struct isth_island *s)
{
	struct isth_island_stats st;
	unsigned int i;

	isth_island_stats(s, &st);
	fprintf(stderr, "bench_island: rx %llu packets, %llu AGGs summed\n",
		(unsigned long long)st.rx_packets, (unsigned long long)st.aggs_summed);
	for (i = 0; i < ISTH_WIRE_REASON_MAX; i++)
		if (st.wire_drop[i])
			fprintf(stderr, "  wire drop %s: %llu\n", isth_wire_reason_name(i),
				(unsigned long long)st.wire_drop[i]);
	for (i = 0; i < ISTH_ISLAND_DROP_MAX; i++)
		if (st.drop[i])
			fprintf(stderr, "  island drop %s: %llu\n", isth_island_drop_name(i),
				(unsigned long long)st.drop[i]);
	for (i = 1; i < ISTH_AUTH_STATUS_MAX; i++)
		if (st.auth_drop[i])
			fprintf(stderr, "  auth refused %s: %llu\n", isth_auth_status_name(i),
				(unsigned long long)st.auth_drop[i]);
}

static double
thread_cpu(pthread_t t)
{
	clockid_t id;

	return pthread_getcpuclockid(t, &id) == 0 ? clk(id) : 0;
}

static double
proc_cpu(void)
{
	double c = clk(CLOCK_PROCESS_CPUTIME_ID) - thread_cpu(sink_th);

	for (unsigned int i = 0; i < n_threads; i++)
		c -= thread_cpu(wk[i].edge_th);
	return c;
}

static void
run_phase(struct worker *w, enum phase ph)
{
	struct sockaddr_in sink = addr_at(w->sink_port, true);
	size_t size = (size_t)nch * phase_ce(ph) * 4;
	double w0, c0;
	unsigned int r;
	int rc;

	pthread_barrier_wait(&bar);
	if (w->id == 0) {
		proc_cpu0 = proc_cpu();
		sink_drops0 = sink_drops();
	}
	w0 = clk(CLOCK_MONOTONIC);
	c0 = clk(CLOCK_THREAD_CPUTIME_ID);
	switch (ph) {
	case SEND_LIB:
		for (r = 0; r < rounds; r++) {
			/* rounds never announced: each send takes its slot over */
			rc = isth_island_send(w->tx, w->tx_round++, w->tensor, size);
			if (rc < 0)
				die("isth_island_send", -rc);
		}
		break;
	case SEND_AUTH:
		for (r = 0; r < rounds; r++) {
			rc = isth_island_send(w->tx_auth, w->tx_auth_round++, w->tensor, size);
			if (rc < 0)
				die("isth_island_send (auth)", -rc);
		}
		break;
	case SEND_GSO:
	case SEND_GSO_S2:
	case SEND_GSO_AUTH: {
		struct isth_island *s = ph == SEND_GSO ? w->tx_gso
			: ph == SEND_GSO_S2            ? w->tx_s2
						       : w->tx_gso_auth;
		uint32_t *rr = ph == SEND_GSO ? &w->tx_gso_round
			: ph == SEND_GSO_S2   ? &w->tx_s2_round
					      : &w->tx_gso_auth_round;

		for (r = 0; r < rounds; r++) {
			rc = isth_island_send(s, (*rr)++, w->tensor, size);
			if (rc < 0)
				die("isth_island_send (gso)", -rc);
		}
		break;
	}
	case SEND_REF:
		for (r = 0; r < rounds; r++)
			send_all(w->ref_fd, w->dgram, w->len, nch, &sink);
		break;
	case RECV_LIB:
	case RECV_GRO:
	case RECV_AUTH:
	case RECV_AUTH_T1:
	case RECV_AUTH_S2:
	case RECV_AUTH_S4:
	case RECV_T1:
	case RECV_S2:
	case RECV_REF:
		/* the edge sends round r+1 while this thread reads round r */
		w->phase = ph;
		sem_post(&w->go);
		for (r = 0; r < rounds; r++) {
			struct isth_island_result res;

			sem_wait(&w->edge_done);
			if (ph != RECV_REF) {
				int t = phase_rxt(ph);
				struct isth_island *s = t >= 0 ? w->rxt[t]
					: ph == RECV_AUTH      ? w->rx_auth
					: ph == RECV_GRO       ? w->rx_gro
							       : w->rx;
				uint32_t round = t >= 0   ? w->rxt_round[t]++
					: ph == RECV_AUTH ? w->rx_auth_round++
					: ph == RECV_GRO  ? w->rx_gro_round++
							  : w->rx_round++;

				if (r + 1 < rounds)
					sem_post(&w->go);
				rc = isth_island_result(s, round, w->out, size, w->chunks, nch,
					&res, 10000000000ull);
				if (rc != 0) {
					report_drops(s);
					die("isth_island_result (round not complete)",
						rc < 0 ? -rc : EPROTO);
				}
			} else {
				if (r + 1 < rounds)
					sem_post(&w->go);
				recv_n(w->rref_fd, w->rbuf, nch + 1);
			}
		}
		break;
	default:
		break;
	}
	w->cpu = clk(CLOCK_THREAD_CPUTIME_ID) - c0;
	w->wall = clk(CLOCK_MONOTONIC) - w0;
}

static double best_gbps_core[N_PHASES], best_gbps_wall[N_PHASES], best_gbps_proc[N_PHASES];

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	for (unsigned int rep = 0; rep < reps; rep++) {
		for (int ph = 0; ph < N_PHASES; ph++) {
			run_phase(w, (enum phase)ph);
			pthread_barrier_wait(&bar);
			if (w->id == 0) {
				double bytes = 0, cpu = 0, wall = 0, pcpu = proc_cpu() - proc_cpu0;
				double drop = (double)(sink_drops() - sink_drops0) /
					((double)n_threads * rounds * nch);

				for (unsigned int i = 0; i < n_threads; i++) {
					bytes += (double)rounds * nch * phase_ce(ph) * 4;
					cpu += wk[i].cpu;
					if (wk[i].wall > wall)
						wall = wk[i].wall;
				}
				if (bytes * 8 / cpu / 1e9 > best_gbps_core[ph])
					best_gbps_core[ph] = bytes * 8 / cpu / 1e9;
				if (bytes * 8 / wall / 1e9 > best_gbps_wall[ph])
					best_gbps_wall[ph] = bytes * 8 / wall / 1e9;
				if (drop > worst_drop_frac[ph])
					worst_drop_frac[ph] = drop;
				if (bytes * 8 / pcpu / 1e9 > best_gbps_proc[ph])
					best_gbps_proc[ph] = bytes * 8 / pcpu / 1e9;
			}
			pthread_barrier_wait(&bar);
		}
	}
	w->phase = N_PHASES;
	sem_post(&w->go);
	return NULL;
}

/* The kernel took GSO (the session would fall back silently). */
static void
gso_check(struct isth_island *s)
{
	struct isth_island_stats st;

	isth_island_stats(s, &st);
	if (!st.gso)
		die("UDP GSO not available here", EOPNOTSUPP);
}

static void
worker_open(struct worker *w, unsigned int id)
{
	size_t size = (size_t)nch * CE * 4;
	uint16_t port;
	unsigned int c;

	/* run(2) reuses run(1)'s workers: every round and seq counter
	 * starts again with the new sessions (edge_rxt() waits for the first
	 * ROUND of a session by its count) */
	memset(w, 0, sizeof(*w));
	w->id = id;
	w->sink_fd = udp_socket_at(&w->sink_port, true);
	w->ref_fd = udp_socket(&port);
	w->edge_fd = udp_socket_at(&w->edge_port, true);
	if (sink_gro) {
		int one = 1;

		if (setsockopt(w->sink_fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) < 0)
			die("sink UDP_GRO", errno);
	}
	w->rref_fd = udp_socket(&w->rref_port);
	w->tensor = malloc(size);
	w->out = malloc(size);
	w->chunks = calloc(nch, sizeof(*w->chunks));
	w->dgram = malloc((size_t)nch * DGRAM);
	w->rbuf = malloc((size_t)BURST * DGRAM);
	w->len = calloc(nch, sizeof(*w->len));
	if (!w->tensor || !w->out || !w->chunks || !w->dgram || !w->rbuf || !w->len)
		die("malloc", ENOMEM);
	for (size_t i = 0; i < (size_t)nch * CE; i++)
		w->tensor[i] = (float)(i % 1000) * 0.25f;
	/* the reference: DATA datagrams as the library builds them */
	for (c = 0; c < nch; c++)
		w->len[c] = build(w->dgram + (size_t)c * DGRAM, ISTH_WIRE_DATA, 1, c, c, 1u << SELF,
			w->tensor + (size_t)c * CE, PAYLOAD);

	struct isth_island_conf conf = {
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = far_ip,
		.edge_port = w->sink_port,
		.bind_ip = near_ip,
		.elems = nch * CE,
		.dtype = ISTH_WIRE_DTYPE_FP32,
		.probe_ns = UINT64_MAX,
		.rcvbuf = 16 << 20,
	};
	w->tx = isth_island_open(&conf);
	if (w->tx == NULL)
		die("isth_island_open (send)", errno);
	conf.edge_port = w->edge_port;
	w->rx = isth_island_open(&conf);
	if (w->rx == NULL)
		die("isth_island_open (receive)", errno);
	if (isth_island_chunk_elems(w->rx) != CE || isth_island_n_chunks(w->rx) != nch)
		die("unexpected chunking", EPROTO);
	/* the same two with authentication on */
	conf.key_file = key_path;
	conf.elems = nch * CE_AUTH;
	conf.edge_port = w->sink_port;
	w->tx_auth = isth_island_open(&conf);
	if (w->tx_auth == NULL)
		die("isth_island_open (send, auth)", errno);
	conf.edge_port = w->edge_port;
	w->rx_auth = isth_island_open(&conf);
	if (w->rx_auth == NULL)
		die("isth_island_open (receive, auth)", errno);
	if (isth_island_chunk_elems(w->rx_auth) != CE_AUTH ||
		isth_island_n_chunks(w->rx_auth) != nch)
		die("unexpected chunking (auth)", EPROTO);
	/* receive threads over 1, 2, 4 sockets */
	conf.rx_threads = true;
	for (unsigned int t = 0; t < RXT_PHASES; t++) {
		conf.n_sockets = rxt_socks[t];
		conf.key_file = t < RXT_AUTH ? key_path : NULL;
		conf.elems = nch * (t < RXT_AUTH ? CE_AUTH : CE);
		w->rxt[t] = isth_island_open(&conf);
		if (w->rxt[t] == NULL)
			die("isth_island_open (receive threads)", errno);
	}
	conf.rx_threads = false;
	conf.n_sockets = 1;
	conf.key_file = key_path;
	conf.elems = nch * CE_AUTH;
	conf.gso = ISTH_ISLAND_OFFLOAD_ON;
	conf.edge_port = w->sink_port;
	w->tx_gso_auth = isth_island_open(&conf);
	conf.key_file = NULL;
	conf.elems = nch * CE;
	w->tx_gso = isth_island_open(&conf);
	conf.n_sockets = 2;
	w->tx_s2 = isth_island_open(&conf);
	conf.n_sockets = 1;
	conf.gso = ISTH_ISLAND_OFFLOAD_OFF;
	conf.gro = ISTH_ISLAND_OFFLOAD_ON;
	conf.edge_port = w->edge_port;
	w->rx_gro = isth_island_open(&conf);
	if (!w->tx_gso_auth || !w->tx_gso || !w->tx_s2 || !w->rx_gro)
		die("isth_island_open (gso/gro)", errno);
	gso_check(w->tx_gso);
	if (isth_auth_engine_create(edge_keys, ISTH_AUTH_OPENSSL, &w->edge_eng) < 0)
		die("isth_auth_engine_create", ENOMEM);
	if (sem_init(&w->go, 0, 0) < 0 || sem_init(&w->edge_done, 0, 0) < 0)
		die("sem_init", errno);
}

static void
worker_close(struct worker *w)
{
	struct isth_island_stats st;

	/* GSO/GRO must really have been used, or the figures lie */
	isth_island_stats(w->tx_s2, &st);
	if (!st.gso || st.gso_sends == 0 || st.n_sockets != 2)
		die("the 2-socket session did not use GSO", EPROTO);
	isth_island_stats(w->rx_gro, &st);
	if (!st.gro || st.gro_rx == 0)
		die("the GRO session read no coalesced buffer", EPROTO);
	isth_island_close(w->tx_gso);
	isth_island_close(w->tx_s2);
	isth_island_close(w->tx_gso_auth);
	isth_island_close(w->rx_gro);
	isth_island_close(w->tx);
	isth_island_close(w->rx);
	isth_island_close(w->tx_auth);
	isth_island_close(w->rx_auth);
	for (unsigned int t = 0; t < RXT_PHASES; t++) {
		/* each socket must have read its own stream, and only it */
		isth_island_stats(w->rxt[t], &st);
		for (unsigned int k = 0; k < rxt_socks[t]; k++)
			if (st.sock_streams[k] != 1u << k)
				die("a receive thread read another socket's stream", EPROTO);
		if (st.drop[ISTH_ISLAND_DROP_agg_socket] || st.drop[ISTH_ISLAND_DROP_agg_stream])
			die("receive threads dropped AGGs", EPROTO);
		isth_island_close(w->rxt[t]);
	}
	isth_auth_engine_free(w->edge_eng);
	close(w->sink_fd);
	close(w->ref_fd);
	close(w->edge_fd);
	close(w->rref_fd);
	sem_destroy(&w->go);
	sem_destroy(&w->edge_done);
	free(w->tensor);
	free(w->out);
	free(w->chunks);
	free(w->dgram);
	free(w->rbuf);
	free(w->len);
}

static void
run(unsigned int threads)
{
	unsigned int i;
	int ph;

	n_threads = threads;
	memset(best_gbps_core, 0, sizeof(best_gbps_core));
	memset(best_gbps_wall, 0, sizeof(best_gbps_wall));
	memset(best_gbps_proc, 0, sizeof(best_gbps_proc));
	memset(worst_drop_frac, 0, sizeof(worst_drop_frac));
	atomic_store(&sink_stop, false);
	if (pthread_barrier_init(&bar, NULL, threads) != 0)
		die("pthread_barrier_init", EINVAL);
	for (i = 0; i < threads; i++)
		worker_open(&wk[i], i);
	if (pthread_create(&sink_th, NULL, sink_main, NULL) != 0)
		die("pthread_create", EAGAIN);
	for (i = 0; i < threads; i++)
		if (pthread_create(&wk[i].edge_th, NULL, edge_main, &wk[i]) != 0 ||
			pthread_create(&wk[i].th, NULL, worker_main, &wk[i]) != 0)
			die("pthread_create", EAGAIN);
	for (i = 0; i < threads; i++) {
		pthread_join(wk[i].th, NULL);
		pthread_join(wk[i].edge_th, NULL);
	}
	atomic_store(&sink_stop, true);
	pthread_join(sink_th, NULL);
	for (i = 0; i < threads; i++)
		worker_close(&wk[i]);
	pthread_barrier_destroy(&bar);

	for (ph = 0; ph < N_PHASES; ph++) {
		double core = best_gbps_core[ph];

		printf("island.t%u.%s.gbps_per_core %.2f Gbit/s\n", threads, phase_name[ph], core);
		printf("island.t%u.%s.mpps_per_core %.3f Mpps\n", threads, phase_name[ph],
			core * 1e9 / 8 / (phase_ce(ph) * 4) / 1e6);
		printf("island.t%u.%s.gbps_wall %.2f Gbit/s\n", threads, phase_name[ph],
			best_gbps_wall[ph]);
		/* counts the library's sending threads too; the figure for
		 * n_sockets > 1 (its per-thread clock sees only socket 0) */
		printf("island.t%u.%s.gbps_per_core_proc %.2f Gbit/s\n", threads, phase_name[ph],
			best_gbps_proc[ph]);
		if (ph < RECV_LIB) /* send phases: did the sink get it all? */
			printf("island.t%u.%s.sink_drop_frac %.4f worst\n", threads, phase_name[ph],
				worst_drop_frac[ph]);
	}
	printf("island.t%u.send.gso_over_lib %.2f ratio\n", threads,
		best_gbps_core[SEND_GSO] / best_gbps_core[SEND_LIB]);
	printf("island.t%u.send.gso_s2_over_lib %.2f ratio\n", threads,
		best_gbps_proc[SEND_GSO_S2] / best_gbps_proc[SEND_LIB]);
	printf("island.t%u.send.gso_s2_wall_over_gso %.2f ratio\n", threads,
		best_gbps_wall[SEND_GSO_S2] / best_gbps_wall[SEND_GSO]);
	printf("island.t%u.send.gso_auth_over_auth %.2f ratio\n", threads,
		best_gbps_core[SEND_GSO_AUTH] / best_gbps_core[SEND_AUTH]);
	printf("island.t%u.send.gso_over_ref %.2f ratio\n", threads,
		best_gbps_core[SEND_GSO] / best_gbps_core[SEND_REF]);
	printf("island.t%u.recv.gro_over_lib %.2f ratio\n", threads,
		best_gbps_core[RECV_GRO] / best_gbps_core[RECV_LIB]);
	printf("island.t%u.send.lib_over_ref %.2f ratio\n", threads,
		best_gbps_core[SEND_LIB] / best_gbps_core[SEND_REF]);
	printf("island.t%u.recv.lib_over_ref %.2f ratio\n", threads,
		best_gbps_core[RECV_LIB] / best_gbps_core[RECV_REF]);
	for (int d = 0; d < 2; d++) {
		int lib = d ? RECV_LIB : SEND_LIB, au = d ? RECV_AUTH : SEND_AUTH;
		double pps_lib = best_gbps_core[lib] * 1e9 / 8 / (CE * 4);
		double pps_auth = best_gbps_core[au] * 1e9 / 8 / (CE_AUTH * 4);

		printf("island.t%u.%s.auth_ns_per_pkt %.0f ns\n", threads, d ? "recv" : "send",
			(1 / pps_auth - 1 / pps_lib) * 1e9);
		printf("island.t%u.%s.auth_over_lib %.2f ratio\n", threads, d ? "recv" : "send",
			best_gbps_core[au] / best_gbps_core[lib]);
	}
	printf("island.t%u.send.cores_for_100g %.1f cores\n", threads,
		100.0 / best_gbps_core[SEND_LIB]);
	printf("island.t%u.recv.cores_for_100g %.1f cores\n", threads,
		100.0 / best_gbps_core[RECV_LIB]);
	printf("island.t%u.send_gso.cores_for_100g %.1f cores\n", threads,
		100.0 / best_gbps_core[SEND_GSO]);
	printf("island.t%u.recv_gro.cores_for_100g %.1f cores\n", threads,
		100.0 / best_gbps_core[RECV_GRO]);
	/* receive threads: S sockets against 1 (proc: the library's threads'
	 * CPU; wall: what S cores buy, on a host that has them) */
	for (unsigned int t = 1; t < RXT_PHASES; t++) {
		bool au = t < RXT_AUTH;
		int t1 = au ? RECV_AUTH_T1 : RECV_T1;

		if (t == RXT_AUTH)
			continue; /* the t1 of the phases without auth */
		printf("island.t%u.%s.s%u_over_t1_proc %.2f ratio\n", threads,
			au ? "recv_auth" : "recv", rxt_socks[t],
			best_gbps_proc[RECV_AUTH_T1 + t] / best_gbps_proc[t1]);
		printf("island.t%u.%s.s%u_over_t1_wall %.2f ratio\n", threads,
			au ? "recv_auth" : "recv", rxt_socks[t],
			best_gbps_wall[RECV_AUTH_T1 + t] / best_gbps_wall[t1]);
	}
	printf("island.t%u.recv_auth.t1_over_caller_proc %.2f ratio\n", threads,
		best_gbps_proc[RECV_AUTH_T1] / best_gbps_proc[RECV_AUTH]);
	printf("island.t%u.recv.t1_over_caller_proc %.2f ratio\n", threads,
		best_gbps_proc[RECV_T1] / best_gbps_proc[RECV_LIB]);
	printf("island.t%u.recv_auth_s2.cores_for_100g %.1f cores\n", threads,
		100.0 / best_gbps_proc[RECV_AUTH_S2]);
	fflush(stdout);
}

/* A key file for the auth phases: random master key, mode 0600. */
static void
make_keys(void)
{
	struct isth_auth_conf ac = {.job = JOB, .n_islands = N_ISLANDS};
	char err[256], line[160];
	unsigned int i;
	int fd;
	size_t n;

	snprintf(key_path, sizeof(key_path), "/tmp/bench_island_keys.XXXXXX");
	fd = mkstemp(key_path);
	if (fd < 0)
		die("mkstemp", errno);
	n = (size_t)snprintf(line, sizeof(line), "job %u\nepoch 1 round 0 key ", JOB);
	srand((unsigned int)real_ns());
	for (i = 0; i < 32; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%02x", rand() & 0xff);
	n += (size_t)snprintf(line + n, sizeof(line) - n, "\n");
	if (write(fd, line, n) != (ssize_t)n)
		die("write", errno);
	close(fd);
	ac.key_file = key_path;
	if (isth_auth_create(&ac, &edge_keys, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_island: %s\n", err);
		exit(1);
	}
}

int
main(int argc, char **argv)
{
	bool veth = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			nch = 64;
			rounds = 50;
			reps = 2;
		} else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
			rounds = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			reps = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--veth") == 0) {
			veth = true;
		} else if (strcmp(argv[i], "--sink-gro") == 0) {
			sink_gro = true;
		} else {
			fprintf(stderr,
				"usage: bench_island [--quick] [--rounds N] [--reps N] [--veth] "
				"[--sink-gro]\n");
			return 2;
		}
	}
	if (rounds == 0 || reps == 0) {
		fprintf(stderr, "bench_island: --rounds and --reps must be > 0\n");
		return 2;
	}
	if (veth)
		veth_up();
	printf("# bench_island: fp32, %u chunks of %u bytes per round (%u with auth), %u rounds "
	       "per phase, best of %u; %s, sink %s\n",
		nch, PAYLOAD, CE_AUTH * 4, rounds, reps, veth ? "veth to a namespace" : "loopback",
		sink_gro ? "with UDP_GRO (takes GSO buffers whole)" : "plain UDP socket");
	make_keys();
	run(1);
	run(MAX_THREADS);
	isth_auth_free(edge_keys);
	unlink(key_path);
	printf("# sink datagrams %llu\n", (unsigned long long)atomic_load(&sink_got));
	return 0;
}
