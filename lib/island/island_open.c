/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Opening and closing a session: parameters and their defaults, the
 * buffers, round slots and sockets, the key file, and the threads; on a
 * failure everything taken so far is given back in reverse order. Calls
 * island_auth.c, island_send.c and island_rx.c (the threads' bodies).
 */
#include "island_priv.h"

/* The default conf.clock: CLOCK_REALTIME, the scale of ROUND deadlines. */
static uint64_t
clock_real(void *arg)
{
	(void)arg;
	return isth_clock_real_ns();
}

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
	if (c->hosts > ISTH_ISLAND_MAX_HOSTS || c->host >= (c->hosts ? c->hosts : 1))
		return EINVAL;
	return 0;
}

/* What check_conf() refused, for isth_island_open_err(). */
static void
conf_err(const struct isth_island_conf *c, char *errbuf, size_t errlen)
{
	if (errbuf == NULL || errlen == 0)
		return;
	if (c != NULL && c->hosts > ISTH_ISLAND_MAX_HOSTS)
		snprintf(errbuf, errlen, "hosts %u: an island has 1..%u hosts", c->hosts,
			ISTH_ISLAND_MAX_HOSTS);
	else if (c != NULL && c->host >= (c->hosts ? c->hosts : 1))
		snprintf(errbuf, errlen, "host %u of %u hosts: host must be 0..%u", c->host,
			c->hosts ? c->hosts : 1, (c->hosts ? c->hosts : 1) - 1);
	else
		snprintf(errbuf, errlen, "bad session parameters");
}

static void
streams_free(struct isth_island *s)
{
	for (unsigned int k = 0; k < ISTH_WIRE_MAX_STREAMS; k++) {
		free(s->as[k].seqs);
		free(s->as[k].win_words);
	}
}

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
		isth_ctr_add(&s->st.gso_refused, 1);
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

		/* any socket refusing it turns it off for all: isl_rx_drain
		 * reads every socket the same way */
		for (j = 0; j < i; j++)
			(void)setsockopt(s->socks[j].fd, SOL_UDP, UDP_GRO, &zero, sizeof(zero));
		s->gro = false;
		isth_ctr_add(&s->st.gro_refused, 1);
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

/* After isl_rx_threads_stop(): the receive threads' mutexes and wake_fd. */
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

/*
 * The session's parameters, from @conf with its defaults filled in, and
 * what follows from them: chunk geometry, timer tick, the DATA buffers'
 * shape, the offloads asked for, the host's chunk range. No allocation.
 * @return 0 or EINVAL (@err says why if it is the range).
 */
static int
session_params(
	struct isth_island *s, const struct isth_island_conf *conf, char *errbuf, size_t errlen)
{
	unsigned int i;

	s->conf = *conf;
	if (s->conf.mtu == 0)
		s->conf.mtu = 1500;
	/* v2 (a key file): the parser takes version 2 only, and the
	 * 16-byte tag comes out of every packet's body (354 elements, 88
	 * ranges at MTU 1500) */
	if (isth_wire_limits_init_auth(
		    &s->lim, conf->n_islands, s->conf.mtu, conf->key_file != NULL) < 0 ||
		s->lim.max_elems == 0 || s->lim.max_ranges == 0)
		return EINVAL;
	/* the parser takes every stream the field can name; which of them
	 * the edge sends, ROUNDs say (isl_streams_add), and on_agg/isl_auth_rx
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
		s->conf.clock = clock_real;
	/* v2: the edge reseals this DATA for the WAN with a tag list (a tag
	 * per peer edge): the room for the longest the job allows, by the
	 * rule the edge's ROUND follows (isth_auth_wan_room) */
	if (conf->key_file != NULL)
		s->lim.max_elems =
			(uint16_t)((s->lim.max_elems * 4u -
					   (unsigned int)isth_auth_wan_room(conf->n_islands)) /
				4u);
	s->chunk_elems = s->lim.max_elems;
	s->n_chunks = (uint32_t)(((uint64_t)conf->elems + s->chunk_elems - 1) / s->chunk_elems);
	s->hosts = conf->hosts ? conf->hosts : 1;
	s->host = conf->host;
	if (isth_island_split(s->n_chunks, s->hosts, s->host, &s->c0, &s->rc_n) < 0) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen,
				"hosts %u: the tensor has %u chunk%s of %u elements, fewer "
				"than the hosts (each host owns at least one chunk)",
				s->hosts, s->n_chunks, s->n_chunks == 1 ? "" : "s", s->chunk_elems);
		return EINVAL;
	}
	s->e0 = s->c0 * s->chunk_elems;
	s->data_seq = s->host; /* version 1; auth_open() starts v2's at the clock */
	s->r_elems = (uint32_t)((uint64_t)(s->c0 + s->rc_n) * s->chunk_elems < conf->elems
			? (uint64_t)s->rc_n * s->chunk_elems
			: conf->elems - s->e0);
	s->st.hosts = s->hosts;
	s->st.host = s->host;
	s->st.first_chunk = s->c0;
	s->st.range_chunks = s->rc_n;
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
		isth_ctr_add(&s->st.gro_refused, 1);
	atomic_init(&s->gso_on, conf->gso != ISTH_ISLAND_OFFLOAD_OFF && s->gso_segs > 1);
	s->n_streams = 1;
	s->rx_n = BURST;
	s->rx_size = s->msg_max;
	if (s->gro) {
		s->rx_n = RX_GRO_MSGS;
		s->rx_size = RX_GRO_BYTES;
	}
	s->auth_on = conf->key_file != NULL;
	s->rx_threads = conf->rx_threads;
	s->st.rx_threads = conf->rx_threads;
	s->wake_fd = -1;
	atomic_init(&s->rx_quit, false);
	atomic_init(&s->sum_waiters, 0);
	return 0;
}

/* What receive thread @so reads into (conf.rx_threads). @return 0 or -1. */
static int
rx_ctx_alloc(struct isth_island *s, struct isl_sock *so)
{
	so->rx = calloc(1, sizeof(*so->rx));
	if (so->rx == NULL)
		return -1;
	so->rx->buf = malloc(s->rx_n * s->rx_size);
	so->rx->vst = malloc((size_t)s->rx_n * RX_VST_SEGS);
	/* an AGG per datagram: GRO buffers hold up to RX_VST_SEGS
	 * (more are added under mu when the queue is full) */
	so->rx->max_pend = s->gro ? s->rx_n * RX_VST_SEGS : s->rx_n;
	so->rx->pend = calloc(so->rx->max_pend, sizeof(*so->rx->pend));
	return so->rx->buf == NULL || so->rx->vst == NULL || so->rx->pend == NULL ? -1 : 0;
}

/* Socket @so's DATA buffer and what sendmmsg needs. @return 0 or -1. */
static int
tx_bufs_alloc(struct isth_island *s, struct isl_sock *so)
{
	so->buf = malloc((size_t)s->tx_cap * s->pkt_stride);
	so->len = calloc(s->tx_cap, sizeof(*so->len));
	so->m = calloc(s->tx_cap, sizeof(*so->m));
	so->v = calloc(s->tx_cap, sizeof(*so->v));
	so->cm = calloc(s->tx_cap, sizeof(*so->cm));
	return so->buf == NULL || so->len == NULL || so->m == NULL || so->v == NULL ||
			so->cm == NULL
		? -1
		: 0;
}

/* Stream 0's seq window, the read and NACK buffers, and each socket's
 * (bufs_free() gives back what was taken). @return 0 or ENOMEM. */
static int
bufs_alloc(struct isth_island *s)
{
	unsigned int i;

	s->as[0].seqs = calloc(ISTH_ISLAND_SEQ_WINDOW, sizeof(*s->as[0].seqs));
	s->rx.buf = malloc(s->rx_n * s->rx_size);
	s->nackbuf = malloc(s->msg_max);
	if (s->as[0].seqs == NULL || s->rx.buf == NULL || s->nackbuf == NULL)
		return ENOMEM;
	for (i = 0; s->rx_threads && i < s->n_socks; i++)
		if (rx_ctx_alloc(s, &s->socks[i]) < 0)
			return ENOMEM;
	for (i = 0; i < s->n_socks; i++)
		if (tx_bufs_alloc(s, &s->socks[i]) < 0)
			return ENOMEM;
	return 0;
}

static void
bufs_free(struct isth_island *s)
{
	socks_free(s);
	streams_free(s);
	free(s->rx.buf);
	free(s->nackbuf);
}

/*
 * Key file @path given: load it, make the session's tag engine and one per
 * socket (two with receive threads: they seal and verify in parallel),
 * and the replay windows (auth_free() gives back what was taken).
 * @return 0 or an errno (@err says why for the key file).
 */
static int
auth_open(struct isth_island *s, const char *path, char *errbuf, size_t errlen)
{
	unsigned int i;
	int rc;

	rc = isl_auth_load(s, path, &s->auth, &s->eng, errbuf, errlen);
	if (rc < 0)
		return -rc;
	for (i = 0; i < s->n_socks; i++) {
		rc = isth_auth_engine_create(s->auth, ISTH_AUTH_OPENSSL, &s->socks[i].eng);
		if (rc == 0 && s->rx_threads)
			rc = isth_auth_engine_create(
				s->auth, ISTH_AUTH_OPENSSL, &s->socks[i].rx_eng);
		if (rc < 0)
			return -rc;
	}
	if (isl_win_alloc(s) < 0)
		return ENOMEM;
	isl_win_sync(s);
	s->st.auth = true;
	s->st.auth_epochs = (uint8_t)isth_auth_n_epochs(s->auth);
	/* every stream starts at the real clock (doc/protocol.md, "IV"): a
	 * restarted island never reuses a seq, so never an IV. The injected
	 * clock is for deadlines only. */
	s->data_seq = isth_clock_real_ns();
	/* the hosts of an island share its UP key: host k's DATA and NACK
	 * seqs are k modulo hosts (each steps by hosts), so no two hosts
	 * ever use one seq, hence one IV */
	s->data_seq = s->data_seq - s->data_seq % s->hosts + s->host;
	s->nack_seq = s->data_seq;
	return 0;
}

static void
auth_free(struct isth_island *s)
{
	unsigned int i;

	free(s->win_words);
	for (i = 0; i < s->n_socks; i++) {
		isth_auth_engine_free(s->socks[i].eng);
		isth_auth_engine_free(s->socks[i].rx_eng);
	}
	isth_auth_engine_free(s->eng);
	isth_auth_free(s->auth);
}

/* The round slots' bitmaps, counts and accumulators. @return 0 or ENOMEM. */
static int
slots_alloc(struct isth_island *s)
{
	unsigned int i;

	for (i = 0; i < ISTH_ISLAND_ROUNDS; i++) {
		struct slot *sl = &s->slots[i];

		sl->bitmap = calloc(s->n_chunks, sizeof(*sl->bitmap));
		sl->aggs = calloc(s->n_chunks, sizeof(*sl->aggs));
		sl->acc = calloc(s->r_elems, 4);
		if (s->rx_threads)
			sl->owner = calloc(s->n_chunks, 1);
		atomic_init(&sl->busy, 0);
		if (sl->bitmap == NULL || sl->aggs == NULL || sl->acc == NULL ||
			(s->rx_threads && sl->owner == NULL))
			return ENOMEM;
	}
	return 0;
}

static void
slots_free(struct isth_island *s)
{
	for (unsigned int i = 0; i < ISTH_ISLAND_ROUNDS; i++) {
		free(s->slots[i].bitmap);
		free(s->slots[i].aggs);
		free(s->slots[i].acc);
		free(s->slots[i].owner);
	}
}

static void
socks_close(struct isth_island *s)
{
	for (unsigned int i = 0; i < s->n_socks; i++)
		if (s->socks[i].fd >= 0)
			close(s->socks[i].fd);
}

/* mu, txmu, jmu and the condition variables (on the monotonic clock, as
 * every timed wait). @return 0 or an errno, with nothing left made. */
static int
sync_init(struct isth_island *s)
{
	pthread_condattr_t ca;
	int err;

	if (pthread_condattr_init(&ca) != 0)
		return ENOMEM;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = pthread_cond_init(&s->cv, &ca);
	if (err == 0) {
		err = pthread_cond_init(&s->jcv, &ca);
		if (err)
			pthread_cond_destroy(&s->cv);
	}
	pthread_condattr_destroy(&ca);
	if (err)
		return err;
	err = pthread_mutex_init(&s->mu, NULL);
	if (err)
		goto destroy_cv;
	err = pthread_mutex_init(&s->txmu, NULL);
	if (err)
		goto destroy_mu;
	err = pthread_mutex_init(&s->jmu, NULL);
	if (err)
		goto destroy_txmu;
	return 0;

destroy_txmu:
	pthread_mutex_destroy(&s->txmu);
destroy_mu:
	pthread_mutex_destroy(&s->mu);
destroy_cv:
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->jcv);
	return err;
}

static void
sync_destroy(struct isth_island *s)
{
	pthread_mutex_destroy(&s->jmu);
	pthread_mutex_destroy(&s->txmu);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->jcv);
}

/*
 * The receive threads (conf.rx_threads) and the sending threads of
 * sockets 1..: @return 0 or an errno (@err says which); on failure the
 * caller stops those started (threads_stop()).
 */
static int
threads_start(struct isth_island *s, char *errbuf, size_t errlen)
{
	unsigned int i;
	int err = 0;

	if (s->rx_threads) {
		/* callers only wait: the threads read (isl_wait_io) */
		s->reading = true;
		s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (s->wake_fd < 0)
			return errno;
		for (i = 0; i < s->n_socks && err == 0; i++) {
			err = pthread_mutex_init(&s->socks[i].rxmu, NULL);
			s->socks[i].rxmu_init = err == 0;
		}
		for (i = 0; i < s->n_socks && err == 0; i++) {
			err = pthread_create(&s->socks[i].rx_th, NULL, isl_rx_thread, &s->socks[i]);
			s->socks[i].rx_started = err == 0;
		}
		if (err) {
			if (errbuf && errlen)
				snprintf(errbuf, errlen, "receive threads: %s", strerror(err));
			return err;
		}
	}
	for (i = 1; i < s->n_socks; i++) {
		err = pthread_create(&s->socks[i].th, NULL, isl_tx_thread, &s->socks[i]);
		if (err) {
			if (errbuf && errlen)
				snprintf(errbuf, errlen, "sending thread %u: %s", i, strerror(err));
			return err;
		}
		s->socks[i].th_started = true;
	}
	return 0;
}

/* The receive threads take mu and read the sockets: first. */
static void
threads_stop(struct isth_island *s)
{
	isl_rx_threads_stop(s);
	rx_socks_free(s);
	isl_tx_threads_stop(s);
}

struct isth_island *
isth_island_open(const struct isth_island_conf *conf)
{
	return isth_island_open_err(conf, NULL, 0);
}

struct isth_island *
isth_island_open_err(const struct isth_island_conf *conf, char *errbuf, size_t errlen)
{
	struct isth_island *s;
	unsigned int i;
	int err;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	err = check_conf(conf);
	if (err) {
		conf_err(conf, errbuf, errlen);
		errno = err;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	err = session_params(s, conf, errbuf, errlen);
	if (err)
		goto free_s;
	err = bufs_alloc(s);
	if (err)
		goto free_bufs;
	if (conf->key_file) {
		err = auth_open(s, conf->key_file, errbuf, errlen);
		if (err)
			goto free_auth;
	}
	s->conf.key_file = NULL; /* the caller's string; not kept */
	err = slots_alloc(s);
	if (err)
		goto free_slots;
	for (i = 0; i < s->n_socks; i++) {
		err = sock_open(s, i, errbuf, errlen);
		if (err)
			goto close_fd;
	}
	err = sync_init(s);
	if (err)
		goto close_fd;
	err = threads_start(s, errbuf, errlen);
	if (err)
		goto stop_threads;
	return s;

stop_threads:
	threads_stop(s);
	sync_destroy(s);
close_fd:
	socks_close(s);
free_slots:
	slots_free(s);
free_auth:
	auth_free(s);
free_bufs:
	bufs_free(s);
free_s:
	free(s);
	errno = err;
	return NULL;
}

void
isth_island_close(struct isth_island *s)
{
	if (s == NULL)
		return;
	threads_stop(s);
	sync_destroy(s);
	socks_close(s);
	slots_free(s);
	auth_free(s);
	bufs_free(s);
	free(s);
}
