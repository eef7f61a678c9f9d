/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiving: reading bursts (recvmmsg, UDP GRO buffers cut back into
 * datagrams), judging each datagram (auth, parser, ROUND, AGG, GONE) under
 * mu, the receive threads of conf.rx_threads, and the callers' wait for
 * packets (isl_wait_io()). Calls island_slot.c, island_auth.c and
 * island_repair.c.
 */
#include "island_priv.h"

/* What ROUND @p (body @b) announces, in host order. */
static struct isth_island_round
round_info(const struct isth_wire_pkt *p, const struct isth_wire_round *b)
{
	return (struct isth_island_round){
		.round = p->hdr.round,
		.start_ns = b->start_ns,
		.deadline_ns = b->deadline_ns,
		.period_ns = b->period_ns,
		.clique = b->clique,
		.expected = p->hdr.bitmap,
		.n_chunks = b->n_chunks,
		.chunk_elems = b->chunk_elems,
	};
}

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
		s->shape_info = round_info(p, &b);
		return;
	}
	/* the edge's AGG stream count (its field is streams - 1): from a
	 * ROUND of this session's job and island, verified when auth is on;
	 * at most 16 by the field's width */
	if ((unsigned int)p->hdr.stream + 1 > s->n_streams)
		isl_streams_add(s, (unsigned int)p->hdr.stream + 1);
	sl = isl_slot_get(s, p->hdr.round, now, &why, sum_ctx(s, sock));
	if (sl == NULL) {
		drop(s, why);
		return;
	}
	if (sl->announced) {
		drop(s, ISTH_ISLAND_DROP_round_dup);
		return;
	}
	sl->info = round_info(p, &b);
	sl->announced = true;
	/* AGGs may have come before their ROUND */
	sl->chunks_done = 0;
	for (c = s->c0; c < s->c0 + s->rc_n; c++)
		if ((sl->bitmap[c] & sl->info.expected) == sl->info.expected)
			sl->chunks_done++;
	s->quiet_since_ns = now;
	isth_ctr_add(&s->st.rounds_announced, 1);
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
	if (!isl_seq_accept(s, &s->as[h->stream], h))
		return;
	s->st.sock_streams[sock] |= (uint16_t)(1u << h->stream);
	s->quiet_since_ns = now;
	if (h->flags & ISTH_WIRE_F_RESENT)
		isth_ctr_add(&s->st.resent, 1);
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
	/* another host of the island owns it: the edge sends it there */
	if (!chunk_mine(s, h->chunk)) {
		drop(s, ISTH_ISLAND_DROP_agg_range);
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
	sl = isl_slot_get(s, h->round, now, &why, x);
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
	dst = chunk_acc(s, sl, h->chunk);
	if (x == NULL) {
		isl_sum_le(s, h->dtype, dst, p->payload, h->count);
	} else {
		/* one thread writes a chunk's sum per round (island_priv.h) */
		if (sl->owner[h->chunk] == 0) {
			sl->owner[h->chunk] = (uint8_t)(sock + 1);
		} else if (sl->owner[h->chunk] != sock + 1) {
			drop(s, ISTH_ISLAND_DROP_agg_owner);
			return;
		}
		if (x->n_pend == x->max_pend)
			isl_pend_run(s, x, true, false);
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
	isth_ctr_add(&s->st.aggs_summed, 1);
	if (sl->announced && (sl->bitmap[h->chunk] & sl->info.expected) == sl->info.expected &&
		++sl->chunks_done == s->rc_n)
		s->rx_wake = true;
}

/*
 * A datagram refused for @why, a reason that looks like a
 * misconfiguration: counted by type and remembered (the last one) for
 * isth_island_diagnose(). Drop path only, under mu.
 */
static void
note_odd(struct isth_island *s, enum isl_odd why, const uint8_t *buf, size_t len,
	const struct sockaddr_in *from)
{
	struct isl_odd_seen *o = &s->odd[why];
	bool hdr = len >= ISTH_WIRE_HDR_SIZE &&
		isth_wire_get_be_(buf + ISTH_WIRE_OFF_MAGIC, 2) == ISTH_WIRE_MAGIC;
	uint8_t type = hdr ? buf[ISTH_WIRE_OFF_TYPE] : 0;

	/* not an isthmus header at all: no version to name */
	if (why == ODD_VERSION && !hdr)
		return;
	if (type == ISTH_WIRE_ROUND)
		o->n_round++;
	else if (type == ISTH_WIRE_AGG)
		o->n_agg++;
	else
		o->n_other++;
	o->ip = from->sin_addr.s_addr;
	o->port = from->sin_port;
	o->version = hdr ? buf[ISTH_WIRE_OFF_VERSION] : 0;
	o->sender = hdr ? isth_wire_get_hdr_sender(buf) : 0;
	o->job = hdr ? (uint32_t)isth_wire_get_be_(buf + ISTH_WIRE_OFF_JOB, 4) : 0;
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
	struct isth_auth_replay *win = NULL;
	enum isth_wire_reason r;
	struct isth_wire_pkt p;

	isth_ctr_add(&s->st.rx_packets, 1);
	isth_ctr_add(&s->st.rx_bytes, len);
	isth_ctr_add(&s->st.sock_rx[sock], 1);
	if (flags & MSG_TRUNC) {
		drop(s, ISTH_ISLAND_DROP_truncated);
		return;
	}
	if (from->sin_addr.s_addr != s->edge.sin_addr.s_addr ||
		from->sin_port != s->edge.sin_port) {
		drop(s, ISTH_ISLAND_DROP_source);
		note_odd(s, ODD_SOURCE, buf, len, from);
		return;
	}
	/* auth on: nothing below sees a packet whose tag did not verify */
	if (s->auth_on && !isl_auth_rx(s, buf, len, sock, eng, vst, &win)) {
		if (len > ISTH_WIRE_OFF_VERSION &&
			buf[ISTH_WIRE_OFF_VERSION] != ISTH_WIRE_VERSION_AUTH)
			note_odd(s, ODD_VERSION, buf, len, from);
		return;
	}
	memset(&p, 0, sizeof(p));
	r = isth_wire_parse_msg(buf, len, &s->lim, &p);
	if (r != ISTH_WIRE_OK) {
		isth_ctr_add(&s->st.wire_drop[r], 1);
		if (r == ISTH_WIRE_E_VERSION)
			note_odd(s, ODD_VERSION, buf, len, from);
		return;
	}
	isth_ctr_add(&s->st.rx_type[p.hdr.type], 1);
	if (p.hdr.job != s->conf.job) {
		drop(s, ISTH_ISLAND_DROP_job);
		note_odd(s, ODD_JOB, buf, len, from);
		return;
	}
	if (p.hdr.sender != s->conf.island) {
		drop(s, ISTH_ISLAND_DROP_sender);
		note_odd(s, ODD_SENDER, buf, len, from);
		return;
	}
	/* with receive threads stream k is read on socket k % n_socks
	 * alone: its seq window and timers are that thread's */
	if ((p.hdr.type == ISTH_WIRE_AGG || p.hdr.type == ISTH_WIRE_GONE) &&
		stream_foreign(s, p.hdr.stream, sock)) {
		drop(s, ISTH_ISLAND_DROP_agg_socket);
		return;
	}
	/* accepted: only now may its seq move the replay window (a datagram
	 * refused above leaves it where it was) */
	if (!isl_auth_commit(s, win, &p))
		return;
	switch (p.hdr.type) {
	case ISTH_WIRE_AGG:
		on_agg(s, &p, now, sock);
		break;
	case ISTH_WIRE_GONE:
		isl_on_gone(s, &p);
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
	isth_ctr_add(&s->st.gro_rx, 1);
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
int
isl_rx_drain(struct isth_island *s)
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
 * rounds (isl_pend_run()) and wake the waiting callers. Until close() sets
 * rx_quit; a burst's additions are always finished before it looks.
 */
void *
isl_rx_thread(void *arg)
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
		isl_run_timers(s, now_ns(s), so->idx);
		wake = s->rx_wake;
		s->rx_wake = false;
		/* with sums queued, wake the callers once they are added */
		if (wake && so->rx->n_pend == 0)
			pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		/* the per-byte work, in parallel with the other threads */
		if (so->rx->n_pend)
			isl_pend_run(s, so->rx, false, wake);
		more = n == (int)s->rx_n; /* a full burst: more may be queued */
	}
	return NULL;
}

/* close() and a failed open(): stop the receive threads and wait for them. */
void
isl_rx_threads_stop(struct isth_island *s)
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
int
isl_wait_io(struct isth_island *s, uint64_t slice_ns)
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
		n = isl_rx_drain(s);
		isl_run_timers(s, now_ns(s), ALL_SOCKS);
		pthread_cond_broadcast(&s->cv);
		return n;
	}
	{
		uint64_t t = isth_clock_mono_ns() + slice_ns;

		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	return 0;
}
