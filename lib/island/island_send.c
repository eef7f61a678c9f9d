/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the island sends: DATA (isth_island_send(), one chunk range per
 * socket, sockets 1.. from threads of their own; UDP GSO with a fallback
 * to plain datagrams) and NACKs (for island_repair.c). Calls island_slot.c.
 */
#include "island_priv.h"

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
int
isl_send_nack(struct isth_island *s, const struct isth_wire_range *r, unsigned int n,
	uint32_t round, unsigned int stream)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_NACK,
		.stream = (uint8_t)stream,
		.sender = s->conf.island,
		.count = (uint16_t)n,
		.job = s->conf.job,
		.round = round,
		/* v2: NACKs have their own stream (the IV needs it) */
		.seq = s->eng ? s->nack_seq : 0,
	};
	uint8_t *p = s->nackbuf;
	size_t len = ISTH_WIRE_HDR_SIZE + (size_t)n * ISTH_WIRE_RANGE_SIZE;

	/* host k of an island's K: seqs k modulo K (island_open.c) */
	if (s->eng)
		s->nack_seq += s->hosts;
	isth_wire_put_hdr(p, s->msg_max, &h);
	isth_wire_put_ranges(p + ISTH_WIRE_HDR_SIZE, s->msg_max - ISTH_WIRE_HDR_SIZE, r, n);
	if (s->eng) {
		int k = isth_auth_seal(s->eng, ISTH_AUTH_UP, s->conf.island, p, len, s->msg_max);

		if (k < 0) {
			isth_ctr_add(&s->st.tx_errors, 1);
			return k;
		}
		len = (size_t)k;
	}
	tx_msg(s, &s->nackm, &s->nackv, p, len);
	/* from the stream's own socket: that is where its repairs are read */
	if (tx_mmsg(s->socks[stream_sock(s, stream)].fd, &s->nackm, 1) != 1) {
		isth_ctr_add(&s->st.tx_errors, 1);
		return -EIO;
	}
	return 0;
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
 * chunks c0 + [idx * n / n_socks, (idx + 1) * n / n_socks) of the host's
 * n = rc_n from c0; chunk c0 + i has seq seq0 + i * hosts and is element
 * (c0 + i) * chunk_elems - e0 of the caller's tensor. Runs without mu
 * (txmu is held by send()): it reads only the caller's tensor and what
 * open() wrote, and writes only @so.
 */
static int
tx_range(struct isth_island *s, struct isl_sock *so, const struct tx_job *j)
{
	uint32_t c0 = s->c0 + (uint32_t)((uint64_t)so->idx * s->rc_n / s->n_socks);
	uint32_t c1 = s->c0 + (uint32_t)((uint64_t)(so->idx + 1) * s->rc_n / s->n_socks);
	size_t es = wire_esize(s);
	bool fast = es == 4 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
	unsigned int k = 0;
	uint32_t c, i;
	int rc = 0;

	for (c = c0; c < c1; c++) {
		uint32_t len = chunk_len(s, c), base = c * s->chunk_elems - s->e0;
		struct isth_wire_hdr h = {
			.type = ISTH_WIRE_DATA,
			.dtype = s->conf.dtype,
			.flags = c + 1 == s->c0 + s->rc_n ? ISTH_WIRE_F_LAST : 0,
			.sender = s->conf.island,
			.count = (uint16_t)len,
			.job = s->conf.job,
			.round = j->round,
			.chunk = c,
			.seq = j->seq0 + (uint64_t)(c - s->c0) * s->hosts,
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
void *
isl_tx_thread(void *arg)
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

void
isl_tx_threads_stop(struct isth_island *s)
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

/*
 * The slot @round's own contribution goes into (mu held): taken over if
 * needed, not sent to yet, and with no receive thread adding to it (the
 * contribution goes into every chunk). NULL and *rc: why not.
 */
static struct slot *
send_slot(struct isth_island *s, uint32_t round, int *rc)
{
	enum isth_island_drop why;
	struct slot *sl;

	for (;;) {
		sl = isl_slot_get(s, round, now_ns(s), &why, NULL);
		if (sl == NULL) {
			*rc = why == ISTH_ISLAND_DROP_round_busy ? -EBUSY : -ESTALE;
			return NULL;
		}
		if (sl->state == SLOT_DONE) {
			*rc = -ESTALE;
			return NULL;
		}
		if (sl->sent) {
			*rc = -EALREADY;
			return NULL;
		}
		/* auth on: a round no loaded epoch covers cannot be tagged */
		if (s->auth && isth_auth_epoch_of(s->auth, round) < 0) {
			*rc = -ENOKEY;
			return NULL;
		}
		if (slot_summed(sl))
			return sl;
		isl_slot_wait_sums(s, sl);
	}
}

/* Add the own contribution to @sl's sums, as the peers will see it
 * (bf16: rounded). mu held, no sums queued into @sl. */
static void
add_own(struct isth_island *s, struct slot *sl, const uint8_t *src, bool src_f32)
{
	uint32_t i;

	if (s->conf.dtype == ISTH_WIRE_DTYPE_INT32) {
		uint32_t *d = sl->acc;

		for (i = 0; i < s->r_elems; i++)
			d[i] += tensor_word(s, src, true, i);
	} else if (s->conf.dtype == ISTH_WIRE_DTYPE_BF16) {
		float *d = sl->acc;

		for (i = 0; i < s->r_elems; i++)
			d[i] += bf16_to_f32((uint16_t)tensor_word(s, src, src_f32, i));
	} else {
		float *d = sl->acc, f;

		for (i = 0; i < s->r_elems; i++) {
			memcpy(&f, src + 4 * (size_t)i, 4);
			d[i] += f;
		}
	}
	sl->sent = true;
}

/* Send @job from every socket: sockets 1.. on their threads, socket 0
 * here, in parallel and without mu (the reader keeps summing AGGs
 * meanwhile); returns when all are done. txmu held. */
static void
tx_all(struct isth_island *s, const struct tx_job *job)
{
	if (s->n_socks > 1) {
		pthread_mutex_lock(&s->jmu);
		s->job = *job;
		s->job_gen++;
		s->job_pending = s->n_socks - 1;
		pthread_cond_broadcast(&s->jcv);
		pthread_mutex_unlock(&s->jmu);
	}
	s->socks[0].rc = tx_range(s, &s->socks[0], job);
	if (s->n_socks > 1) {
		pthread_mutex_lock(&s->jmu);
		while (s->job_pending)
			pthread_cond_wait(&s->jcv, &s->jmu);
		pthread_mutex_unlock(&s->jmu);
	}
}

/* Fold what each socket counted in this send() into the session's
 * counters (mu held) and return the send's answer: 0, -EIO or the first
 * socket's error. */
static int
tx_fold(struct isth_island *s)
{
	unsigned int i;
	int rc = 0;

	for (i = 0; i < s->n_socks; i++) {
		struct isl_sock *so = &s->socks[i];

		if (so->rc < 0 && rc == 0)
			rc = so->rc == -EIO ? -EIO : so->rc;
		isth_ctr_add(&s->st.data_tx, so->pkts);
		isth_ctr_add(&s->st.data_tx_bytes, so->bytes);
		isth_ctr_add(&s->st.tx_errors, so->errors);
		isth_ctr_add(&s->st.gso_sends, so->gso_sends);
		isth_ctr_add(&s->st.gso_refused, so->gso_refused);
		so->pkts = so->bytes = so->errors = so->gso_sends = so->gso_refused = 0;
		so->rc = 0;
	}
	return rc;
}

int
isth_island_send(struct isth_island *s, uint32_t round, const void *tensor, size_t size)
{
	struct tx_job job;
	bool src_f32;
	struct slot *sl;
	int rc = 0;

	if (s == NULL || tensor == NULL)
		return -EINVAL;
	/* bf16 sessions take bf16 (2 bytes) or fp32 (4 bytes, rounded) */
	/* the host's range of the tensor (all of it with one host) */
	src_f32 = size == (size_t)s->r_elems * 4;
	if (!src_f32 && !(s->conf.dtype == ISTH_WIRE_DTYPE_BF16 && size == (size_t)s->r_elems * 2))
		return -EINVAL;
	pthread_mutex_lock(&s->txmu);
	pthread_mutex_lock(&s->mu);
	sl = send_slot(s, round, &rc);
	if (sl == NULL) {
		pthread_mutex_unlock(&s->mu);
		pthread_mutex_unlock(&s->txmu);
		return rc;
	}
	add_own(s, sl, tensor, src_f32);
	/* chunk c0 + i gets seq seq0 + i * hosts whichever socket sends
	 * it: one DATA stream for the host, as with one socket */
	job.round = round;
	job.src = tensor;
	job.src_f32 = src_f32;
	job.seq0 = s->data_seq;
	s->data_seq += (uint64_t)s->rc_n * s->hosts;
	pthread_mutex_unlock(&s->mu);

	tx_all(s, &job);

	pthread_mutex_lock(&s->mu);
	rc = tx_fold(s);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&s->txmu);
	return rc;
}
