/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An island of K hosts (conf.hosts): the island's send and receive rate
 * against K, K = 1, 2, 3 side by side in one run, over loopback.
 *
 * Each host is a thread with its own libisthmus session and socket
 * (hosts=K, host=k): it owns the chunk ids [k*C/K, (k+1)*C/K) of a
 * C-chunk fp32 tensor (358 elements, 1432 bytes of payload a chunk at MTU
 * 1500). C = 768 by default, so every K of 1, 2, 3 splits it evenly.
 *
 *   send   every host isth_island_send()s its range, round after round
 *          (never announced, so each send takes its slot over: the
 *          library's whole cost per round), to one sink socket, the edge's
 *          one address, drained by a sink thread
 *   recv   an edge thread per host (the edge serves each host from its
 *          own cores) sends ROUND r and one AGG (one peer) per chunk of
 *          the host's range, numbered per host; the host takes
 *          isth_island_result() of every round (must be 0, every chunk
 *          complete). The edge runs at most two rounds ahead of its host.
 *          The edge threads' send rate is printed beside (edge_tx).
 *
 * Rates are payload bytes (headers excluded) in Gbit/s: "wall" is the
 * island's total over the slowest host's wall time (what the island moves
 * per second), "core" divides by the hosts' thread CPU time
 * (CLOCK_THREAD_CPUTIME_ID; on loopback the kernel's delivery runs in the
 * sender's context, so send figures include it). The phases for every K
 * are interleaved in each repetition, so the figures of one K beside
 * another's see the same load; best of REPS per figure. On a machine with
 * fewer cores than K hosts plus their sink or edge threads the wall
 * figures cannot grow with K: the per-core figure (which should stay flat
 * in K) times K is what K hosts with a core each would move. The run
 * prints the cores online and the load average before and after.
 *
 * Output: one line per figure, "name value unit", then a table.
 * Usage: bench_island_hosts [--quick] [--rounds N] [--reps N] [--chunks C]
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
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
#include <sys/socket.h>

#include "isth_island.h"
#include "isth_wire.h"

#define LOOPBACK 0x7f000001u
#define JOB 15u
#define SELF 1u
#define PEER 0u
#define N_ISLANDS 2u
#define CE 358u /* fp32 elements per chunk at MTU 1500 */
#define BURST 32u
#define MAX_K 3u
#define DGRAM 2048u

static unsigned int nch = 768; /* chunks per tensor: 1.1 MB of payload */
static unsigned int rounds = 300; /* rounds per phase */
static unsigned int reps = 5;

static uint64_t
ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
die(const char *what)
{
	fprintf(stderr, "bench_island_hosts: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int
udp_socket(uint16_t *port, int rcvbuf)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		die("socket");
	if (rcvbuf)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	a.sin_addr.s_addr = htonl(LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		die("bind");
	*port = ntohs(a.sin_port);
	return fd;
}

/* ---- one host, one phase ---------------------------------------------- */

struct host {
	unsigned int k, n_hosts;
	bool recv; /* the phase: receive (else send) */
	struct isth_island *s;
	struct isth_island_range rg;
	float *tensor, *out;
	struct isth_island_chunk *ch;
	pthread_barrier_t *go;
	/* recv: the edge thread of this host and its credit (rounds it may
	 * run ahead) */
	int edge_fd;
	uint16_t edge_port, port;
	sem_t credit;
	uint64_t edge_wall_ns, edge_bytes;
	/* written by the host thread */
	uint64_t wall_ns, cpu_ns, bytes;
	int rc;
};

static void
host_open(struct host *h, uint16_t edge_port)
{
	struct isth_island_conf c = {
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = LOOPBACK,
		.edge_port = edge_port,
		.bind_ip = LOOPBACK,
		.elems = nch * CE,
		.dtype = ISTH_WIRE_DTYPE_FP32,
		.probe_ns = UINT64_MAX,
		.grace_ns = 0,
		.rcvbuf = 8 << 20,
		.hosts = h->n_hosts,
		.host = h->k,
	};
	char err[256];

	h->s = isth_island_open_err(&c, err, sizeof(err));
	if (h->s == NULL) {
		fprintf(stderr, "bench_island_hosts: open host %u of %u: %s\n", h->k, h->n_hosts,
			err);
		exit(1);
	}
	isth_island_range(h->s, &h->rg);
	h->port = isth_island_local_port(h->s);
	h->tensor = malloc((size_t)h->rg.n_elems * 4);
	h->out = malloc((size_t)h->rg.n_elems * 4);
	h->ch = calloc(h->rg.n_chunks, sizeof(*h->ch));
	if (h->tensor == NULL || h->out == NULL || h->ch == NULL)
		die("malloc");
	for (uint32_t i = 0; i < h->rg.n_elems; i++)
		h->tensor[i] = (float)((h->rg.first_elem + i) % 64u);
}

static void
host_close(struct host *h)
{
	isth_island_close(h->s);
	free(h->tensor);
	free(h->out);
	free(h->ch);
}

static void *
host_thread(void *arg)
{
	struct host *h = arg;
	uint64_t w0, c0;

	pthread_barrier_wait(h->go);
	w0 = ns_of(CLOCK_MONOTONIC);
	c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
	for (uint32_t r = 0; r < rounds && h->rc == 0; r++) {
		if (!h->recv) {
			h->rc = isth_island_send(h->s, r, h->tensor, (size_t)h->rg.n_elems * 4);
			continue;
		}
		h->rc = isth_island_result(h->s, r, h->out, (size_t)h->rg.n_elems * 4, h->ch,
			h->rg.n_chunks, NULL, 5000000000ull);
		sem_post(&h->credit);
	}
	h->cpu_ns = ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
	h->wall_ns = ns_of(CLOCK_MONOTONIC) - w0;
	h->bytes = h->rc ? 0 : (uint64_t)rounds * h->rg.n_elems * 4;
	return NULL;
}

/* ---- the edge: a thread per host (recv) or one sink (send) -------------- */

static size_t
mk_round(uint8_t *buf, uint32_t r)
{
	uint64_t now = ns_of(CLOCK_REALTIME);
	struct isth_wire_round b = {
		.start_ns = now,
		.deadline_ns = now + 10000000000ull,
		.period_ns = 10000000000ull,
		.clique = 1u << PEER | 1u << SELF,
		.n_chunks = nch,
		.chunk_elems = CE,
	};
	struct isth_wire_hdr hd = {
		.type = ISTH_WIRE_ROUND,
		.sender = SELF,
		.job = JOB,
		.round = r,
		.bitmap = 1u << PEER,
	};
	uint8_t body[40];

	isth_wire_put_round(body, sizeof(body), &b);
	return (size_t)isth_wire_build_msg(buf, DGRAM, &hd, body, sizeof(body), NULL);
}

/* Round @r's AGGs of host @h's range in @buf (one DGRAM each). */
static void
mk_aggs(const struct host *h, uint8_t *buf, size_t *len, uint32_t r, uint64_t *seq)
{
	for (uint32_t j = 0; j < h->rg.n_chunks; j++) {
		uint32_t c = h->rg.first_chunk + j;
		uint32_t n = c + 1 == nch ? nch * CE - c * CE : CE;
		struct isth_wire_hdr hd = {
			.type = ISTH_WIRE_AGG,
			.dtype = ISTH_WIRE_DTYPE_FP32,
			.sender = SELF,
			.count = (uint16_t)n,
			.job = JOB,
			.round = r,
			.chunk = c,
			.seq = (*seq)++,
			.bitmap = 1u << PEER,
		};

		isth_wire_put_hdr(buf + (size_t)j * DGRAM, DGRAM, &hd);
		len[j] = ISTH_WIRE_HDR_SIZE + (size_t)n * 4;
	}
}

static void
send_burst(int fd, const struct sockaddr_in *to, uint8_t *buf, const size_t *len, uint32_t n)
{
	struct mmsghdr m[BURST];
	struct iovec v[BURST];

	for (uint32_t i = 0; i < n; i += BURST) {
		uint32_t b = n - i < BURST ? n - i : BURST, done = 0;

		memset(m, 0, sizeof(m));
		for (uint32_t j = 0; j < b; j++) {
			v[j].iov_base = buf + (size_t)(i + j) * DGRAM;
			v[j].iov_len = len[i + j];
			m[j].msg_hdr.msg_name = (void *)to;
			m[j].msg_hdr.msg_namelen = sizeof(*to);
			m[j].msg_hdr.msg_iov = &v[j];
			m[j].msg_hdr.msg_iovlen = 1;
		}
		while (done < b) {
			int k = sendmmsg(fd, m + done, b - done, 0);

			if (k < 0 && errno != EINTR && errno != ENOBUFS && errno != EAGAIN)
				die("sendmmsg");
			if (k > 0)
				done += (uint32_t)k;
		}
	}
}

/* The edge of host @arg: every round's ROUND and AGGs, at most two rounds
 * ahead of what the host has taken (its credit). The AGG bodies are the
 * zeros calloc gave: the island's work does not depend on the values. */
static void *
edge_thread(void *arg)
{
	struct host *h = arg;
	struct sockaddr_in to = {.sin_family = AF_INET};
	uint8_t *buf = calloc(h->rg.n_chunks, DGRAM), rb[DGRAM];
	size_t *len = calloc(h->rg.n_chunks, sizeof(*len)), rl;
	uint64_t seq = 1, w0;

	if (buf == NULL || len == NULL)
		die("malloc");
	to.sin_addr.s_addr = htonl(LOOPBACK);
	to.sin_port = htons(h->port);
	pthread_barrier_wait(h->go);
	w0 = ns_of(CLOCK_MONOTONIC);
	for (uint32_t r = 0; r < rounds; r++) {
		sem_wait(&h->credit);
		if (h->rc)
			break;
		rl = mk_round(rb, r);
		send_burst(h->edge_fd, &to, rb, &rl, 1);
		mk_aggs(h, buf, len, r, &seq);
		send_burst(h->edge_fd, &to, buf, len, h->rg.n_chunks);
		h->edge_bytes += (uint64_t)h->rg.n_elems * 4;
	}
	h->edge_wall_ns = ns_of(CLOCK_MONOTONIC) - w0;
	free(buf);
	free(len);
	return NULL;
}

struct sink {
	int fd;
	atomic_bool stop;
	uint64_t pkts;
};

static void *
sink_thread(void *arg)
{
	struct sink *k = arg;
	static uint8_t buf[BURST][DGRAM];
	struct mmsghdr m[BURST];
	struct iovec v[BURST];

	for (;;) {
		struct pollfd p = {.fd = k->fd, .events = POLLIN};
		int n;

		if (poll(&p, 1, 20) <= 0) {
			if (atomic_load(&k->stop))
				break;
			continue;
		}
		memset(m, 0, sizeof(m));
		for (unsigned int i = 0; i < BURST; i++) {
			v[i].iov_base = buf[i];
			v[i].iov_len = DGRAM;
			m[i].msg_hdr.msg_iov = &v[i];
			m[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(k->fd, m, BURST, MSG_DONTWAIT, NULL);
		if (n > 0)
			k->pkts += (uint64_t)n;
	}
	return NULL;
}

/* ---- a phase: K hosts sending, or K hosts receiving ------------------------ */

struct fig {
	double wall, core, edge, drop; /* Gbit/s, Gbit/s, Gbit/s, fraction */
};

static double
gbit(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes * 8.0 / (double)ns : 0.0;
}

/* The hosts' figures once their threads are joined. */
static struct fig
phase_fig(struct host *hs, unsigned int n)
{
	uint64_t bytes = 0, cpu = 0, wall = 0, eb = 0, ew = 0;
	struct fig f;

	for (unsigned int k = 0; k < n; k++) {
		if (hs[k].rc) {
			fprintf(stderr, "bench_island_hosts: %s host %u of %u: %s\n",
				hs[k].recv ? "recv" : "send", k, n, strerror(-hs[k].rc));
			exit(1);
		}
		bytes += hs[k].bytes;
		cpu += hs[k].cpu_ns;
		wall = hs[k].wall_ns > wall ? hs[k].wall_ns : wall;
		eb += hs[k].edge_bytes;
		ew = hs[k].edge_wall_ns > ew ? hs[k].edge_wall_ns : ew;
	}
	f.wall = gbit(bytes, wall);
	f.core = gbit(bytes, cpu);
	f.edge = gbit(eb, ew);
	f.drop = 0;
	return f;
}

static struct fig
phase(unsigned int n, bool recv)
{
	struct host hs[MAX_K];
	pthread_t th[2 * MAX_K + 1];
	pthread_barrier_t go;
	struct sink sk = {.fd = -1};
	unsigned int nt = 0;
	uint16_t sport = 0;
	struct fig f;

	memset(hs, 0, sizeof(hs));
	pthread_barrier_init(&go, NULL, recv ? 2 * n : n);
	if (!recv) {
		sk.fd = udp_socket(&sport, 32 << 20);
		atomic_init(&sk.stop, false);
		pthread_create(&th[nt++], NULL, sink_thread, &sk);
	}
	for (unsigned int k = 0; k < n; k++) {
		hs[k].k = k;
		hs[k].n_hosts = n;
		hs[k].recv = recv;
		hs[k].go = &go;
		if (recv)
			hs[k].edge_fd = udp_socket(&hs[k].edge_port, 0);
		host_open(&hs[k], recv ? hs[k].edge_port : sport);
		sem_init(&hs[k].credit, 0, 2);
	}
	for (unsigned int k = 0; k < n; k++) {
		pthread_create(&th[nt++], NULL, host_thread, &hs[k]);
		if (recv)
			pthread_create(&th[nt++], NULL, edge_thread, &hs[k]);
	}
	for (unsigned int i = recv ? 0 : 1; i < nt; i++)
		pthread_join(th[i], NULL);
	f = phase_fig(hs, n);
	if (!recv) {
		uint64_t sent = (uint64_t)rounds * nch;

		atomic_store(&sk.stop, true);
		pthread_join(th[0], NULL);
		close(sk.fd);
		f.drop = sent ? 1.0 - (double)sk.pkts / (double)sent : 0;
	}
	for (unsigned int k = 0; k < n; k++) {
		host_close(&hs[k]);
		sem_destroy(&hs[k].credit);
		if (recv)
			close(hs[k].edge_fd);
	}
	pthread_barrier_destroy(&go);
	return f;
}

/* ---- main --------------------------------------------------------------- */

static void
best(struct fig *b, const struct fig *f)
{
	b->wall = f->wall > b->wall ? f->wall : b->wall;
	b->core = f->core > b->core ? f->core : b->core;
	b->edge = f->edge > b->edge ? f->edge : b->edge;
	b->drop = f->drop > b->drop ? f->drop : b->drop; /* the worst */
}

static void
args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			rounds = 40;
			reps = 2;
		} else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
			rounds = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			reps = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--chunks") == 0 && i + 1 < argc) {
			nch = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else {
			fprintf(stderr,
				"usage: bench_island_hosts [--quick] [--rounds N] [--reps N] "
				"[--chunks C]\n");
			exit(2);
		}
	}
	if (rounds == 0 || reps == 0 || nch < MAX_K || nch > 65535) {
		fprintf(stderr,
			"bench_island_hosts: need rounds, reps >= 1, 3 <= chunks <= 65535\n");
		exit(2);
	}
}

static void
print_load(const char *when)
{
	double la[3] = {0, 0, 0};

	if (getloadavg(la, 3) < 0)
		la[0] = -1;
	printf("load_%s %.2f loadavg\n", when, la[0]);
}

int
main(int argc, char **argv)
{
	struct fig snd[MAX_K + 1] = {{0}}, rcv[MAX_K + 1] = {{0}};

	args(argc, argv);
	printf("cores_online %ld cores\n", sysconf(_SC_NPROCESSORS_ONLN));
	printf("tensor_chunks %u chunks\nrounds %u rounds\nreps %u reps\n", nch, rounds, reps);
	print_load("before");
	for (unsigned int rep = 0; rep < reps; rep++)
		for (unsigned int k = 1; k <= MAX_K; k++) {
			struct fig f = phase(k, false);

			best(&snd[k], &f);
			f = phase(k, true);
			best(&rcv[k], &f);
		}
	for (unsigned int k = 1; k <= MAX_K; k++) {
		printf("island_send_k%u_wall %.3f Gbit/s\n", k, snd[k].wall);
		printf("island_send_k%u_core %.3f Gbit/s\n", k, snd[k].core);
		printf("island_send_k%u_sink_drop_frac %.4f frac\n", k, snd[k].drop);
		printf("island_recv_k%u_wall %.3f Gbit/s\n", k, rcv[k].wall);
		printf("island_recv_k%u_core %.3f Gbit/s\n", k, rcv[k].core);
		printf("edge_tx_k%u_wall %.3f Gbit/s\n", k, rcv[k].edge);
	}
	print_load("after");
	printf("\n K  send wall  send/core  recv wall  recv/core  edge tx   (Gbit/s payload, best "
	       "of "
	       "%u)\n",
		reps);
	for (unsigned int k = 1; k <= MAX_K; k++)
		printf(" %u  %9.2f  %9.2f  %9.2f  %9.2f  %7.2f\n", k, snd[k].wall, snd[k].core,
			rcv[k].wall, rcv[k].core, rcv[k].edge);
	return 0;
}
