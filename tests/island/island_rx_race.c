/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive threads under concurrency, without Criterion (whose runner does
 * not start under ThreadSanitizer here): for it, build with
 * -Db_sanitize=thread and run this. Per session (S sockets, N streams,
 * auth on and off): a fake edge sends R rounds of AGGs, stream k to socket
 * k % S (every other round with a gap per stream, which the receive
 * threads NACK and the edge repairs), while the caller waits for each
 * result, a third thread reads the counters, and (auth on) a fourth
 * reloads the key file. Every sum is
 * checked against the closed form computed here; then the session is
 * closed with the threads busy.
 *
 * Pipelined runs (the receive threads add outside the session mutex): an
 * edge thread keeps up to ISTH_ISLAND_ROUNDS rounds in flight, so every
 * slot is reused, while the caller send()s its own contribution into a
 * round the threads are adding to and collects each result as the last
 * AGGs are added; after the last checked round the edge keeps sending
 * and the session is closed under it. Eviction runs: AGGs of rounds no
 * ROUND announces, each four rounds after the last so all take the same
 * slot, on every socket at once: each round takes the slot over from the
 * last while another thread may still be adding into it; then a round
 * announced after them sums exactly. Exit 0 if every check held.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "isth_auth.h"
#include "isth_island.h"
#include "isth_wire.h"

#define JOB 7u
#define SELF 1u
#define N_ISLANDS 4u
#define NCH 24u
#define ROUNDS 12u
#define LOOPBACK 0x7f000001u
#define MS 1000000ull
#define PEERS (1u << 0 | 1u << 2 | 1u << 3)
#define KEY1 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

static atomic_int failures;

#define CHECK(c, ...) \
	do { \
		if (!(c)) { \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #c); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
			atomic_fetch_add(&failures, 1); \
		} \
	} while (0)

static uint32_t
val(unsigned int k, uint32_t r, uint32_t i)
{
	return (uint32_t)(k + 1) * 1000003u + r * 7919u + i * 31u;
}

struct run {
	unsigned int n, s;
	bool auth;
	char key_path[64];
	struct isth_auth *a;
	struct isth_auth_engine *e;
	int fd;
	uint16_t port, isl[ISTH_ISLAND_MAX_SOCKETS];
	uint32_t ce, elems;
	struct isth_island *sess;
	atomic_bool done;
	/* pipelined runs: rounds the caller collected (edge waits on it) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t collected;
	uint32_t rounds;
};

static void
tx(struct run *r, unsigned int sock, uint8_t *buf, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	if (r->auth) {
		int n = isth_auth_seal(r->e, ISTH_AUTH_DOWN, SELF, buf, len, 2048);

		CHECK(n > 0, "seal %d", n);
		len = (size_t)n;
	}
	a.sin_addr.s_addr = htonl(LOOPBACK);
	a.sin_port = htons(r->isl[sock]);
	while (sendto(r->fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == EINTR)
		;
}

static uint32_t
clen(const struct run *r, uint32_t c)
{
	return c + 1 < NCH ? r->ce : r->elems - (NCH - 1) * r->ce;
}

static void
send_round(struct run *r, uint32_t round)
{
	struct isth_wire_round b = {
		.start_ns = 0,
		.deadline_ns = UINT64_MAX / 2,
		.period_ns = 100 * MS,
		.clique = PEERS | 1u << SELF,
		.n_chunks = NCH,
		.chunk_elems = r->ce,
	};
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_ROUND,
		.sender = SELF,
		.job = JOB,
		.round = round,
		.seq = 1000 + round,
		.bitmap = PEERS,
	};
	uint8_t body[ISTH_WIRE_ROUND_SIZE], buf[2048];
	int n;

	isth_wire_put_round(body, sizeof(body), &b);
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, sizeof(body), NULL);
	buf[4] |= (uint8_t)((r->n - 1) << 4);
	tx(r, 0, buf, (size_t)n);
}

static void
send_agg(struct run *r, unsigned int k, uint32_t round, uint32_t c, unsigned int peer, uint64_t q,
	uint16_t flags)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.flags = ISTH_WIRE_F_PARTIAL | flags,
		.sender = SELF,
		.count = (uint16_t)clen(r, c),
		.job = JOB,
		.round = round,
		.chunk = c,
		.seq = q,
		.bitmap = 1ull << peer,
	};
	uint8_t body[4 * 358], buf[2048];
	int n;

	for (uint32_t i = 0; i < clen(r, c); i++) {
		uint32_t v = htole32(val(peer, round, c * r->ce + i));

		memcpy(body + 4 * i, &v, 4);
	}
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, (size_t)clen(r, c) * 4, NULL);
	buf[4] |= (uint8_t)(k << 4);
	tx(r, k % r->s, buf, (size_t)n);
}

static void *
stats_thread(void *arg)
{
	struct run *r = arg;
	struct isth_island_stats st;

	while (!atomic_load(&r->done)) {
		isth_island_stats(r->sess, &st);
		CHECK(st.drop[ISTH_ISLAND_DROP_agg_socket] == 0, "agg_socket");
		usleep(200); /* load, not synchronisation */
	}
	return NULL;
}

static void *
reload_thread(void *arg)
{
	struct run *r = arg;
	char err[256];

	while (!atomic_load(&r->done)) {
		int rc = isth_island_reload_keys(r->sess, r->key_path, err, sizeof(err));

		CHECK(rc == 0, "reload: %d %s", rc, err);
		usleep(1000);
	}
	return NULL;
}

/* The expected sum of element @i of round @rd: every peer and self. */
static uint32_t
want_sum(uint32_t rd, uint32_t i)
{
	uint32_t want = 0;

	for (unsigned int p = 0; p < N_ISLANDS; p++)
		if ((PEERS | 1u << SELF) & 1u << p)
			want += val(p, rd, i);
	return want;
}

/* result()'s answer @rc, @res, @out for round @rd: complete and exact. */
static void
check_out(const struct run *r, uint32_t rd, int rc, const struct isth_island_result *res,
	const uint32_t *out)
{
	CHECK(rc == 0 && res->complete == NCH, "round %u: rc %d complete %u", rd, rc,
		res->complete);
	for (uint32_t i = 0; i < r->elems && rc == 0; i++)
		if (out[i] != want_sum(rd, i)) {
			CHECK(out[i] == want_sum(rd, i), "round %u elem %u: %u want %u", rd, i,
				out[i], want_sum(rd, i));
			break;
		}
}

static struct isth_island *
race_open(struct run *r, unsigned int n, unsigned int s)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	char err[256];

	r->n = n;
	r->s = s;
	r->fd = socket(AF_INET, SOCK_DGRAM, 0);
	a.sin_addr.s_addr = htonl(LOOPBACK);
	if (r->fd < 0 || bind(r->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		getsockname(r->fd, (struct sockaddr *)&a, &alen) < 0) {
		perror("edge socket");
		exit(2);
	}
	r->port = ntohs(a.sin_port);
	r->ce = 358;
	r->elems = (NCH - 1) * r->ce + 77;
	{
		struct isth_island_conf c = {
			.job = JOB,
			.island = SELF,
			.n_islands = N_ISLANDS,
			.edge_ip = LOOPBACK,
			.edge_port = r->port,
			.bind_ip = LOOPBACK,
			.elems = r->elems,
			.dtype = ISTH_WIRE_DTYPE_INT32,
			.probe_ns = UINT64_MAX,
			.n_sockets = s,
			.rx_threads = true,
			.rcvbuf = 4 << 20, /* 4 rounds in flight: ~0.4 MB */
		};

		r->sess = isth_island_open_err(&c, err, sizeof(err));
		if (r->sess == NULL) {
			fprintf(stderr, "open: %s %s\n", strerror(errno), err);
			exit(2);
		}
	}
	for (unsigned int i = 0; i < s; i++)
		r->isl[i] = isth_island_socket_port(r->sess, i);
	return r->sess;
}

/*
 * Pipelined edge: round rd (ROUND, then every peer's AGG of every chunk,
 * the streams interleaved so every socket's thread adds at once) once the
 * caller collected round rd - ISTH_ISLAND_ROUNDS, whose slot rd takes
 * over; past r->rounds without waiting once all are collected, until
 * done (the close).
 */
static void *
pipe_edge(void *arg)
{
	struct run *r = arg;
	uint64_t q[ISTH_WIRE_MAX_STREAMS] = {0};

	for (uint32_t rd = 1; !atomic_load(&r->done); rd++) {
		/* past the checked rounds: only once all are collected (a
		 * socket's thread may run rounds ahead of socket 0's ROUNDs
		 * and evict the unannounced ones) */
		uint32_t need = rd > r->rounds    ? r->rounds
			: rd > ISTH_ISLAND_ROUNDS ? rd - ISTH_ISLAND_ROUNDS
						  : 0;

		pthread_mutex_lock(&r->mu);
		while (r->collected < need && !atomic_load(&r->done))
			pthread_cond_wait(&r->cv, &r->mu);
		pthread_mutex_unlock(&r->mu);
		if (rd > 1) /* round 1's ROUND: sent before this thread */
			send_round(r, rd);
		for (uint32_t c = 0; c < NCH; c++)
			for (unsigned int p = 0; p < N_ISLANDS; p++)
				if (PEERS & 1u << p)
					send_agg(r, c % r->n, rd, c, p, 100 + q[c % r->n]++, 0);
	}
	return NULL;
}

static void
pipe_run(unsigned int n, unsigned int s, uint32_t rounds)
{
	struct run r = {.rounds = rounds};
	pthread_t ed_th;
	struct isth_island_round ri;
	uint32_t *t, *out;

	race_open(&r, n, s);
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	t = malloc((size_t)r.elems * 4);
	out = malloc((size_t)r.elems * 4);
	/* the stream count first: an AGG of stream k before any ROUND
	 * announced k would be dropped (doc/island.md) */
	send_round(&r, 1);
	CHECK(isth_island_wait_round(r.sess, 2000 * MS, &ri) == 0 && ri.round == 1, "round 1");
	pthread_create(&ed_th, NULL, pipe_edge, &r);
	for (uint32_t rd = 1; rd <= rounds; rd++) {
		struct isth_island_chunk ch[NCH];
		struct isth_island_result res;
		int rc;

		if (rd > 1) {
			rc = isth_island_wait_round(r.sess, 2000 * MS, &ri);
			CHECK(rc == 0 && ri.round == rd, "wait_round %u: %d (%u)", rd, rc,
				ri.round);
		}
		for (uint32_t i = 0; i < r.elems; i++)
			t[i] = val(SELF, rd, i);
		/* while the threads may be adding this round's AGGs */
		rc = isth_island_send(r.sess, rd, t, (size_t)r.elems * 4);
		CHECK(rc == 0, "send %u: %d", rd, rc);
		rc = isth_island_result(
			r.sess, rd, out, (size_t)r.elems * 4, ch, NCH, &res, 2000 * MS);
		check_out(&r, rd, rc, &res, out);
		pthread_mutex_lock(&r.mu);
		r.collected = rd;
		pthread_cond_broadcast(&r.cv);
		pthread_mutex_unlock(&r.mu);
		if (atomic_load(&failures))
			break;
	}
	{
		struct isth_island_stats st;

		isth_island_stats(r.sess, &st);
		CHECK(st.drop[ISTH_ISLAND_DROP_agg_socket] == 0 &&
				st.drop[ISTH_ISLAND_DROP_agg_owner] == 0,
			"agg_socket %" PRIu64 " agg_owner %" PRIu64,
			st.drop[ISTH_ISLAND_DROP_agg_socket], st.drop[ISTH_ISLAND_DROP_agg_owner]);
	}
	/* close under the edge: it keeps sending the next rounds */
	isth_island_close(r.sess);
	atomic_store(&r.done, true);
	pthread_mutex_lock(&r.mu);
	pthread_cond_broadcast(&r.cv);
	pthread_mutex_unlock(&r.mu);
	pthread_join(ed_th, NULL);
	pthread_mutex_destroy(&r.mu);
	pthread_cond_destroy(&r.cv);
	free(t);
	free(out);
	close(r.fd);
	printf("pipelined N=%u S=%u: %u rounds checked, %u slot reuses\n", n, s, rounds,
		rounds > ISTH_ISLAND_ROUNDS ? rounds - ISTH_ISLAND_ROUNDS : 0);
}

/* Round @rd announced, every peer's AGG, own contribution: exact sum. */
static void
check_round(struct run *r, uint32_t rd, uint64_t *q)
{
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_round ri;
	uint32_t *t = malloc((size_t)r->elems * 4), *out = malloc((size_t)r->elems * 4);
	int rc;

	send_round(r, rd);
	rc = isth_island_wait_round(r->sess, 2000 * MS, &ri);
	CHECK(rc == 0 && ri.round == rd, "wait_round %u: %d", rd, rc);
	for (uint32_t c = 0; c < NCH; c++)
		for (unsigned int p = 0; p < N_ISLANDS; p++)
			if (PEERS & 1u << p)
				send_agg(r, c % r->n, rd, c, p, 100 + q[c % r->n]++, 0);
	for (uint32_t i = 0; i < r->elems; i++)
		t[i] = val(SELF, rd, i);
	CHECK(isth_island_send(r->sess, rd, t, (size_t)r->elems * 4) == 0, "send %u", rd);
	rc = isth_island_result(r->sess, rd, out, (size_t)r->elems * 4, ch, NCH, &res, 2000 * MS);
	check_out(r, rd, rc, &res, out);
	free(t);
	free(out);
}

static void
evict_run(unsigned int n, unsigned int s, uint32_t rounds)
{
	struct run r = {0};
	uint64_t q[ISTH_WIRE_MAX_STREAMS] = {0};
	struct isth_island_round ri;
	struct isth_island_stats st;
	uint32_t last = 0;

	race_open(&r, n, s);
	send_round(&r, 1); /* the stream count */
	CHECK(isth_island_wait_round(r.sess, 2000 * MS, &ri) == 0, "round 1");
	/* rounds 8, 12, ...: slot 0, never announced, so each may take it
	 * over from the one before (slot_get()) */
	for (uint32_t j = 0; j < rounds; j++) {
		last = 8 + 4 * j;
		for (uint32_t c = 0; c < NCH; c++)
			send_agg(&r, c % n, last, c, 0, 100 + q[c % n]++, 0);
	}
	/* announced after them: its sum has nothing of theirs */
	check_round(&r, last + 4, q);
	isth_island_stats(r.sess, &st);
	CHECK(st.drop[ISTH_ISLAND_DROP_agg_socket] == 0 && st.drop[ISTH_ISLAND_DROP_agg_owner] == 0,
		"agg_socket %" PRIu64 " agg_owner %" PRIu64, st.drop[ISTH_ISLAND_DROP_agg_socket],
		st.drop[ISTH_ISLAND_DROP_agg_owner]);
	isth_island_close(r.sess);
	close(r.fd);
	printf("eviction N=%u S=%u: %u unannounced rounds, %" PRIu64 " AGGs summed\n", n, s, rounds,
		st.aggs_summed);
}

static void
one_run(unsigned int n, unsigned int s, bool auth)
{
	struct run r = {.n = n, .s = s, .auth = auth};
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	uint64_t q[ISTH_WIRE_MAX_STREAMS] = {0};
	pthread_t st_th, rl_th;
	char err[256];
	uint32_t *t, *out;

	r.fd = socket(AF_INET, SOCK_DGRAM, 0);
	a.sin_addr.s_addr = htonl(LOOPBACK);
	if (r.fd < 0 || bind(r.fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		getsockname(r.fd, (struct sockaddr *)&a, &alen) < 0) {
		perror("edge socket");
		exit(2);
	}
	r.port = ntohs(a.sin_port);
	r.ce = auth ? 344 : 358; /* auth: tag and a WAN tag list of 3 peers */
	r.elems = (NCH - 1) * r.ce + 77;
	if (auth) {
		static const char text[] = "job 7\nepoch 1 round 0 key " KEY1 "\n";
		struct isth_auth_conf ac = {.job = JOB, .n_islands = N_ISLANDS};
		int fd;

		snprintf(r.key_path, sizeof(r.key_path), "/tmp/isth_island_race.XXXXXX");
		fd = mkstemp(r.key_path);
		if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
			perror("key file");
			exit(2);
		}
		close(fd);
		ac.key_file = r.key_path;
		if (isth_auth_create(&ac, &r.a, err, sizeof(err)) < 0 ||
			isth_auth_engine_create(r.a, ISTH_AUTH_OPENSSL, &r.e) < 0) {
			fprintf(stderr, "auth: %s\n", err);
			unlink(r.key_path);
			exit(2);
		}
	}
	{
		struct isth_island_conf c = {
			.job = JOB,
			.island = SELF,
			.n_islands = N_ISLANDS,
			.edge_ip = LOOPBACK,
			.edge_port = r.port,
			.bind_ip = LOOPBACK,
			.elems = r.elems,
			.dtype = ISTH_WIRE_DTYPE_INT32,
			.probe_ns = UINT64_MAX,
			.nack_interval_ns = 20 * MS, /* NACKs answered at once here */
			.key_file = auth ? r.key_path : NULL,
			.n_sockets = s,
			.rx_threads = true,
			.rcvbuf = 16 << 20,
		};

		r.sess = isth_island_open_err(&c, err, sizeof(err));
		if (r.sess == NULL) {
			fprintf(stderr, "open: %s %s\n", strerror(errno), err);
			if (auth)
				unlink(r.key_path);
			exit(2);
		}
	}
	for (unsigned int i = 0; i < s; i++)
		r.isl[i] = isth_island_socket_port(r.sess, i);
	t = malloc((size_t)r.elems * 4);
	out = malloc((size_t)r.elems * 4);
	pthread_create(&st_th, NULL, stats_thread, &r);
	if (auth)
		pthread_create(&rl_th, NULL, reload_thread, &r);
	for (uint32_t rd = 1; rd <= ROUNDS; rd++) {
		struct isth_island_chunk ch[NCH];
		struct isth_island_result res;
		struct isth_island_round ri;
		int rc;

		send_round(&r, rd);
		rc = isth_island_wait_round(r.sess, 2000 * MS, &ri);
		CHECK(rc == 0 && ri.round == rd, "wait_round %u: %d", rd, rc);
		for (uint32_t i = 0; i < r.elems; i++)
			t[i] = val(SELF, rd, i);
		CHECK(isth_island_send(r.sess, rd, t, (size_t)r.elems * 4) == 0, "send");
		/* every other round, peer 0's AGG of each stream's first
		 * chunk is held back: a gap each receive thread NACKs from
		 * its socket; the edge resends what the NACKs name */
		struct {
			uint64_t seq;
			uint32_t c;
			bool open;
		} held[ISTH_WIRE_MAX_STREAMS] = {{0}};
		unsigned int open = 0;

		for (uint32_t c = 0; c < NCH; c++)
			for (unsigned int p = 0; p < N_ISLANDS; p++) {
				uint64_t qq;

				if (!(PEERS & 1u << p))
					continue;
				qq = 100 + q[c % n]++;
				if (rd % 2 == 0 && p == 0 && c < n) {
					held[c].seq = qq;
					held[c].c = c;
					held[c].open = true;
					open++;
					continue;
				}
				send_agg(&r, c % n, rd, c, p, qq, 0);
			}
		while (open) {
			struct pollfd pf = {.fd = r.fd, .events = POLLIN};
			uint8_t b[2048];
			ssize_t len;
			unsigned int k;
			uint64_t first = 0;

			if (poll(&pf, 1, 3000) <= 0) {
				CHECK(0, "round %u: %u gaps never NACKed", rd, open);
				break;
			}
			len = recv(r.fd, b, sizeof(b), 0);
			if (len < (ssize_t)(ISTH_WIRE_HDR_SIZE + 16) ||
				b[ISTH_WIRE_OFF_TYPE] != ISTH_WIRE_NACK)
				continue; /* DATA */
			k = b[4] >> 4;
			for (int i = 0; i < 8; i++)
				first = first << 8 | b[ISTH_WIRE_HDR_SIZE + i];
			if (k < n && held[k].open && first == held[k].seq) {
				send_agg(&r, k, rd, held[k].c, 0, held[k].seq, ISTH_WIRE_F_RESENT);
				held[k].open = false;
				open--;
			}
		}
		rc = isth_island_result(
			r.sess, rd, out, (size_t)r.elems * 4, ch, NCH, &res, 2000 * MS);
		check_out(&r, rd, rc, &res, out);
	}
	/* close with the threads busy: a last round's AGGs still arriving */
	send_round(&r, ROUNDS + 1);
	for (uint32_t c = 0; c < NCH; c++)
		send_agg(&r, c % n, ROUNDS + 1, c, 0, 100 + q[c % n]++, 0);
	atomic_store(&r.done, true);
	pthread_join(st_th, NULL);
	if (auth)
		pthread_join(rl_th, NULL);
	isth_island_close(r.sess);
	free(t);
	free(out);
	close(r.fd);
	if (auth) {
		isth_auth_engine_free(r.e);
		isth_auth_free(r.a);
		unlink(r.key_path);
	}
	printf("N=%u S=%u auth=%d: %u rounds checked\n", n, s, auth, ROUNDS);
}

int
main(void)
{
	one_run(2, 2, false);
	one_run(4, 3, false);
	one_run(3, 2, true);
	one_run(4, 4, true);
	pipe_run(2, 2, 40);
	pipe_run(3, 2, 40);
	pipe_run(4, 4, 40);
	evict_run(2, 2, 300);
	evict_run(4, 3, 300);
	if (atomic_load(&failures))
		fprintf(stderr, "%d checks failed\n", atomic_load(&failures));
	return atomic_load(&failures) ? 1 : 0;
}
