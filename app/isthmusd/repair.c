/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * WAN repair between edges (doc/isthmusd.md, "WAN repair"): keep the
 * island's DATA as it leaves, track the chunks each peer sent us, NACK
 * gaps at once and tails when they are due, NACK again with back-off until
 * the round's deadline minus one one-way latency, and serve peers' NACKs
 * from what was kept. State: struct isthd_repair (isthd.h). Called by the worker
 * (datapath.c) and, for the per-round due times, by the controller.
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>

#include "isthd.h"

int
isthd_repair_init(struct isthd *d, char *err, size_t err_size)
{
	struct isthd_repair *rp = &d->rep;
	struct isth_resend_conf rc;
	uint64_t chunk_bytes = (uint64_t)d->lim.max_elems * 4;

	rp->n_chunks =
		(uint32_t)((isth_sched_payload_bytes(d->sched) + chunk_bytes - 1) / chunk_bytes);
	rp->rx_words = rp->n_chunks / 64 + 1;
	rp->base[0].round = rp->base[1].round = UINT64_MAX;
	for (unsigned int i = 0; i < RTE_DIM(rp->rtab); i++)
		rp->rtab[i].round = UINT64_MAX;
	if (!d->cfg.wan_repair)
		return 0;
	memset(&rc, 0, sizeof(rc));
	rc.size = d->cfg.resend_entries;
	rc.window_ns = d->cfg.resend_window_ns;
	rc.linger_ns = d->cfg.resend_linger_ns;
	rc.socket_id = (int)rte_socket_id();
	rc.hdr_off = 0; /* bare messages */
	rc.hdr_pool = d->hdr_pool;
	rp->ring = isth_resend_create(&rc);
	rp->rx = rte_zmalloc("isthd_rx", 4 * d->n_islands * sizeof(*rp->rx), 0);
	rp->rx_bits = rte_zmalloc(
		"isthd_rx_bits", 4ull * d->n_islands * rp->rx_words * sizeof(uint64_t), 0);
	if (rp->ring == NULL || rp->rx == NULL || rp->rx_bits == NULL) {
		snprintf(err, err_size, "WAN repair state (%u chunks x %u islands): %s",
			rp->n_chunks, d->n_islands, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < 4 * d->n_islands; i++)
		rp->rx[i].round = UINT64_MAX;
	return 0;
}

void
isthd_repair_fini(struct isthd *d)
{
	isth_resend_destroy(d->rep.ring);
	d->rep.ring = NULL;
	rte_free(d->rep.rx);
	rte_free(d->rep.rx_bits);
	d->rep.rx = NULL;
	d->rep.rx_bits = NULL;
}

/* Keep the island's DATA @m[0..n) as the pacer releases it: chunk c of
 * round r is kept as sequence base(r) + c. */
void
isthd_repair_keep(struct isthd *d, struct rte_mbuf **m, unsigned int n, uint64_t now_ns)
{
	for (unsigned int i = 0; i < n; i++) {
		const uint8_t *h = rte_pktmbuf_mtod(m[i], const uint8_t *);
		uint64_t r = isth_wire_get_hdr_round(h);
		uint64_t seq = isth_resend_next_seq(d->rep.ring);

		if (d->rep.base[r & 1].round != r) {
			d->rep.base[r & 1].round = r;
			d->rep.base[r & 1].base = seq - isth_wire_get_hdr_chunk(h);
		}
		isth_resend_push(d->rep.ring, m[i], now_ns, NULL);
	}
}

/*
 * Controller, before round @r is published: the expected senders (@v's
 * peers) and, per sender, the times WAN repair works with (struct
 * isthd_repair, rtab), from the round view @v and the peer's latency.
 * Published with release.
 */
void
isthd_repair_publish(struct isthd *d, const struct isth_sched_round_view *v, uint64_t r)
{
	struct isthd_repair *rp = &d->rep;
	uint64_t T = v->round_ns, bits = v->payload_bytes * 8;
	uint64_t chunk_bits = (uint64_t)d->lim.max_elems * 32;
	unsigned int i;

	rp->rtab[r & 3].round = UINT64_MAX; /* being rewritten */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	rp->rtab[r & 3].expected = v->peers;
	for (i = 0; i < d->n_islands && i < ISTHD_MAX_PEERS; i++) {
		uint64_t off = v->snd[i].offset_ns, rate = v->snd[i].rate_bps;
		uint64_t lat = 0, at, cut, bo;
		bool planned;

		if (!(v->peers & (1ull << i)))
			continue;
		if (d->peer_of[i])
			lat = d->peer_of[i]->latency_ns;
		planned = v->snd[i].n_segs >= 1 && rate > 0;
		/* without a latency, NACKing stops repair_before the end */
		if (lat)
			cut = T > lat ? T - lat : 0;
		else
			cut = T > d->cfg.wan_repair_before_ns ? T - d->cfg.wan_repair_before_ns : 0;
		if (planned && lat)
			at = off + (uint64_t)((__uint128_t)bits * 1000000000ull / rate) + lat;
		else /* unknown: the last moment */
			at = cut;
		/* a repair answers a NACK after a round trip; a peer serves
		 * a chunk at most once per linger (assumed equal to ours) */
		bo = 2 * lat + d->cfg.wan_tail_wait_ns;
		if (bo < d->cfg.resend_linger_ns)
			bo = d->cfg.resend_linger_ns;
		if (bo == 0)
			bo = 1000000;
		rp->rtab[r & 3].tail_at[i] = at;
		rp->rtab[r & 3].cutoff[i] = cut;
		rp->rtab[r & 3].chunk_ns[i] =
			planned ? (uint64_t)((__uint128_t)chunk_bits * 1000000000ull / rate) : 0;
		rp->rtab[r & 3].backoff_ns[i] = bo;
	}
	__atomic_store_n(&rp->rtab[r & 3].round, r, __ATOMIC_RELEASE);
}

/*
 * A linear frame to peer edge @peer carrying the message in @msg (any
 * chain), with a UDP checksum: repairs and NACKs are rare, so they are
 * copied rather than chained (which also suits PMDs without chains).
 */
static struct rte_mbuf *
frame_to_peer(struct isthd *d, const struct isthd_peer *peer, const struct rte_mbuf *msg)
{
	uint32_t len = rte_pktmbuf_pkt_len(msg);
	struct isth_wire_addr a;
	const void *src;
	struct rte_mbuf *m;
	uint32_t sum = 0;
	uint16_t raw = 0;
	size_t hs;
	uint8_t *p, *udp;

	memset(&a, 0, sizeof(a));
	memcpy(a.dst_mac, peer->mac, 6);
	memcpy(a.src_mac, d->wan_mac, 6);
	a.src_ip = d->cfg.wan.ip;
	a.dst_ip = peer->ip;
	a.src_port = d->cfg.udp_port;
	a.dst_port = peer->port;
	hs = isth_wire_frame_hdr_size(&a);
	m = rte_pktmbuf_alloc(d->pool);
	if (m == NULL || hs + len > rte_pktmbuf_tailroom(m)) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(hs + len));
	/* rte_pktmbuf_read copies only a chain; a single segment it points at */
	src = rte_pktmbuf_read(msg, 0, len, p + hs);
	if (src != p + hs)
		rte_memcpy(p + hs, src, len);
	isth_wire_put_frame_hdr(p, hs + len, &a, len);
	/* UDP checksum (RFC 768) over pseudo-header, header and message */
	udp = p + hs - ISTH_WIRE_UDP_HDR_SIZE;
	rte_raw_cksum_mbuf(
		m, (uint32_t)(hs - ISTH_WIRE_UDP_HDR_SIZE), ISTH_WIRE_UDP_HDR_SIZE + len, &raw);
	sum = rte_be_to_cpu_16(raw) + (a.src_ip >> 16) + (a.src_ip & 0xffff) + (a.dst_ip >> 16) +
		(a.dst_ip & 0xffff) + 17 + ISTH_WIRE_UDP_HDR_SIZE + len;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	if (sum == 0)
		sum = 0xffff;
	udp[6] = (uint8_t)(sum >> 8);
	udp[7] = (uint8_t)sum;
	return m;
}

/* Ask peer @s's edge again for chunks @ranges of round @r of its island:
 * one NACK message (@n <= max_ranges). Returns 0 if it was sent. */
static int
nack_peer(struct isthd *d, unsigned int s, uint64_t r, const struct isth_wire_range *ranges,
	unsigned int n)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_NACK,
		.flags = ISTH_WIRE_F_CHUNKS,
		.sender = d->island,
		.count = (uint16_t)n,
		.job = d->cfg.job,
		.round = (uint32_t)r,
		.bitmap = 1ull << s,
	};
	const struct isthd_peer *peer = d->peer_of[s];
	struct rte_mbuf *msg, *f;
	uint8_t *p;

	if (peer == NULL || n == 0 || n > d->lim.max_ranges)
		return -EINVAL;
	msg = rte_pktmbuf_alloc(d->ctl_pool);
	if (msg == NULL) {
		isth_ctr_add(&d->st.drop[ISTHD_DROP_repair_no_mbuf], 1);
		return -ENOMEM;
	}
	p = (uint8_t *)rte_pktmbuf_append(
		msg, (uint16_t)(ISTH_WIRE_HDR_SIZE + n * ISTH_WIRE_RANGE_SIZE));
	isth_wire_put_hdr(p, ISTH_WIRE_HDR_SIZE, &h);
	isth_wire_put_ranges(p + ISTH_WIRE_HDR_SIZE, n * ISTH_WIRE_RANGE_SIZE, ranges, n);
	f = frame_to_peer(d, peer, msg);
	rte_pktmbuf_free(msg);
	if (f == NULL) {
		isth_ctr_add(&d->st.drop[ISTHD_DROP_repair_no_mbuf], 1);
		return -ENOMEM;
	}
	isth_ctr_add(&d->st.peer_nacks_sent, 1);
	isthd_tx(d, d->wan_port, &f, 1, ISTHD_DROP_tx_wan, &d->st.wan_tx);
	return 0;
}

static inline bool
chunk_seen(const uint64_t *bits, uint32_t c)
{
	return bits[c / 64] & (1ull << (c % 64));
}

/*
 * NACK every chunk below @upto still missing from sender @s in round @r,
 * @copies times: as many messages as the ranges need (max_ranges each).
 * Returns the messages sent (0: nothing missing or nothing could leave).
 */
static unsigned int
nack_missing(struct isthd *d, unsigned int s, uint64_t r, const uint64_t *bits, uint32_t upto,
	unsigned int copies)
{
	struct isth_wire_range g[ISTHD_BURST];
	unsigned int n = 0, sent = 0, max = d->lim.max_ranges, k;
	uint32_t c = 0;

	if (max > RTE_DIM(g))
		max = RTE_DIM(g);
	while (c < upto) {
		uint32_t a;

		if (chunk_seen(bits, c)) {
			c++;
			continue;
		}
		a = c;
		while (c < upto && !chunk_seen(bits, c))
			c++;
		g[n].first = a;
		g[n].last = c - 1;
		if (++n == max) {
			for (k = 0; k < copies; k++)
				sent += nack_peer(d, s, r, g, n) == 0;
			n = 0;
		}
	}
	for (k = 0; n && k < copies; k++)
		sent += nack_peer(d, s, r, g, n) == 0;
	return sent;
}

/* The chunk-tracking slot of (round r, sender s), reset for a new round. */
static struct isthd_rx_track *
rx_slot(struct isthd *d, uint64_t r, unsigned int s, uint64_t **bits)
{
	unsigned int idx = (unsigned int)(r & 3) * d->n_islands + s;
	struct isthd_rx_track *t = &d->rep.rx[idx];

	*bits = d->rep.rx_bits + (size_t)idx * d->rep.rx_words;
	if (t->round != r) {
		memset(t, 0, sizeof(*t));
		t->round = r;
		t->backoff_ns = d->rep.rtab[r & 3].backoff_ns[s];
		memset(*bits, 0, d->rep.rx_words * sizeof(uint64_t));
	}
	return t;
}

/* A NACK for (r, s) went out at @now: the next one waits the back-off,
 * which doubles up to 8 times the first. */
static void
nack_sent(struct isthd *d, struct isthd_rx_track *t, uint64_t r, unsigned int s, uint64_t now_ns)
{
	uint64_t cap = 8 * d->rep.rtab[r & 3].backoff_ns[s];

	if (t->nacks)
		isth_ctr_add(&d->st.peer_nack_retries, 1);
	if (t->nacks < UINT16_MAX)
		t->nacks++;
	t->nack_at = now_ns + t->backoff_ns;
	t->backoff_ns = t->backoff_ns * 2 > cap ? cap : t->backoff_ns * 2;
}

/*
 * A peer's DATA arrived at @now_ns: note it, NACK a gap in its chunk order
 * at once (chunks leave an island in order; reordering costs a duplicate
 * only), and, from its arrival and the sender's rate, when its last chunk
 * is due here.
 */
void
isthd_repair_track(struct isthd *d, const struct isth_wire_pkt *p, uint64_t now_ns)
{
	uint64_t r = p->hdr.round, *bits, cns;
	unsigned int s = p->hdr.sender;
	struct isthd_rx_track *t;
	uint32_t c = p->hdr.chunk;

	if (d->rep.rx == NULL || c >= d->rep.n_chunks ||
		__atomic_load_n(&d->rep.rtab[r & 3].round, __ATOMIC_ACQUIRE) != r ||
		!(d->rep.rtab[r & 3].expected & (1ull << s)))
		return;
	t = rx_slot(d, r, s, &bits);
	if (chunk_seen(bits, c))
		return; /* a duplicate: the backend counts it */
	bits[c / 64] |= 1ull << (c % 64);
	t->n_rx++;
	if (p->hdr.flags & ISTH_WIRE_F_RESENT)
		return; /* a repair says nothing about the stream */
	/* the sender's stream is here now at chunk c: the rest follows at
	 * its rate (a late or slow sender moves its tail's due time) */
	cns = d->rep.rtab[r & 3].chunk_ns[s];
	if (cns && c + 1 >= t->next) {
		t->last_due = now_ns + (uint64_t)(d->rep.n_chunks - 1 - c) * cns;
		/* a stream still coming after the plan's due time (a late
		 * sender): its tail is not due yet, retries ask for gaps only */
		if (c + 1 < d->rep.n_chunks)
			t->tail_due = 0;
	}
	if (c > t->next && !t->done) {
		struct isth_wire_range g = {t->next, c - 1};

		if (nack_peer(d, s, r, &g, 1) == 0 && t->nack_at == 0)
			nack_sent(d, t, r, s, now_ns);
	}
	if (c + 1 > t->next)
		t->next = c + 1;
}

/*
 * Per (round, sender), until its chunks are complete or the cutoff
 * (deadline minus one one-way latency: a later NACK's repair cannot be
 * summed in time) passes:
 *  - when its tail is due (from its arrivals and rate, else the plan) plus
 *    tail_wait, NACK every chunk still missing: lost tails, and gaps whose
 *    repair was lost;
 *  - after each NACK, wait a back-off (a round trip + tail_wait, doubling,
 *    capped) and NACK what is still missing again;
 *  - a NACK with no retry left before the cutoff leaves last_nack_copies
 *    times (a lost NACK then does not cost the chunk);
 *  - at the cutoff, what is still missing is counted (peer_chunks_unrepaired).
 */
unsigned int
isthd_repair_tail_check(struct isthd *d, uint64_t now_ns)
{
	unsigned int work = 0;

	if (d->rep.rx == NULL || now_ns < d->clk.epoch_ns)
		return 0;
	for (uint64_t r = d->rep.tail_next;; r++) {
		uint64_t start = d->clk.epoch_ns + r * d->clk.round_ns, expected, *bits;
		bool pending = false;

		if (now_ns < start)
			break;
		if (__atomic_load_n(&d->rep.rtab[r & 3].round, __ATOMIC_ACQUIRE) != r) {
			if (r == d->rep.tail_next && now_ns >= start + 2 * d->clk.round_ns)
				d->rep.tail_next++; /* never published (a bye) */
			continue;
		}
		expected = d->rep.rtab[r & 3].expected;
		for (unsigned int s = 0; s < d->n_islands; s++) {
			uint64_t cut, due, upto;
			struct isthd_rx_track *t;
			unsigned int copies = 1, k;

			if (!(expected & (1ull << s)))
				continue;
			t = rx_slot(d, r, s, &bits);
			if (t->done)
				continue;
			if (t->n_rx == d->rep.n_chunks) {
				t->done = 1;
				continue;
			}
			cut = start + d->rep.rtab[r & 3].cutoff[s];
			if (now_ns > cut) {
				t->done = 1;
				isth_ctr_add(
					&d->st.peer_chunks_unrepaired, d->rep.n_chunks - t->n_rx);
				continue;
			}
			pending = true;
			due = (t->last_due ? t->last_due : start + d->rep.rtab[r & 3].tail_at[s]) +
				d->cfg.wan_tail_wait_ns;
			/* a tail due after the cutoff is asked for at it */
			if (due > cut)
				due = cut;
			if (!t->tail_due && now_ns >= due)
				t->tail_due = 1;
			else if (t->nack_at == 0 || now_ns < t->nack_at)
				continue;
			upto = t->tail_due ? d->rep.n_chunks : t->next;
			if (now_ns + t->backoff_ns > cut)
				copies = d->cfg.wan_last_nack_copies;
			k = nack_missing(d, s, r, bits, (uint32_t)upto, copies);
			if (k) {
				nack_sent(d, t, r, s, now_ns);
				work += k;
			} else if (t->tail_due) {
				/* nothing could leave (no mbuf): try again */
				t->nack_at = now_ns + t->backoff_ns;
			} else {
				/* nothing below next missing: wait for the tail */
				t->nack_at = 0;
			}
		}
		if (!pending && r == d->rep.tail_next)
			d->rep.tail_next++;
		if (r > d->rep.tail_next + 2)
			break;
	}
	return work;
}

/*
 * Clip @n chunk ranges to [0, n_chunks), sort them and merge the ones that
 * overlap or touch, in place: each chunk is named once however the NACK
 * repeats it. @return ranges left; *cut counts ranges naming no chunk.
 */
static unsigned int
merge_ranges(struct isth_wire_range *g, unsigned int n, uint32_t n_chunks, unsigned int *cut)
{
	unsigned int i, j, k = 0;

	*cut = 0;
	for (i = 0; i < n; i++) {
		if (g[i].first >= n_chunks) {
			(*cut)++;
			continue;
		}
		if (g[i].last >= n_chunks)
			g[i].last = n_chunks - 1;
		g[k++] = g[i];
	}
	for (i = 1; i < k; i++) { /* insertion sort: k <= ISTHD_BURST */
		struct isth_wire_range x = g[i];

		for (j = i; j > 0 && g[j - 1].first > x.first; j--)
			g[j] = g[j - 1];
		g[j] = x;
	}
	for (i = 0, j = 0; i < k; i++) {
		if (j > 0 && g[i].first <= g[j - 1].last + 1) {
			if (g[i].last > g[j - 1].last)
				g[j - 1].last = g[i].last;
			continue;
		}
		g[j++] = g[i];
	}
	return j;
}

/*
 * A peer edge NACKs chunks of our island's DATA: resend them to it, if the
 * NACK is from that peer's configured address, the peer is in the round's
 * clique, and its budget for the round is not spent: at most budget_chunks
 * chunks (one round's stream and an allowance) per peer and round, each
 * chunk at most once per NACK. So no NACK stream can make this edge send a
 * peer more than about what the peer could have lost (doc/isthmusd.md,
 * "Admission").
 */
void
isthd_repair_serve(struct isthd *d, const struct isth_wire_pkt *p, uint64_t now_ns)
{
	struct isth_wire_range want[ISTHD_BURST], gone[ISTHD_BURST];
	const struct isthd_peer *peer = d->peer_of[p->hdr.sender];
	struct rte_mbuf *rep[ISTHD_BURST], *out[ISTHD_BURST];
	unsigned int i, n = p->hdr.count, k, n_gone, n_out, cut;
	struct isthd_repair_budget *b;
	struct isth_resend_cursor cur;
	uint64_t r = p->hdr.round, left, base;

	isth_ctr_add(&d->st.peer_nacks_rx, 1);
	if (d->rep.ring == NULL)
		return;
	if (peer == NULL || p->addr.src_ip != peer->ip) {
		isth_ctr_add(&d->st.drop[ISTHD_DROP_nack_bad_source], 1);
		return;
	}
	if (__atomic_load_n(&d->rep.rtab[r & 3].round, __ATOMIC_ACQUIRE) != r ||
		!(d->rep.rtab[r & 3].expected & (1ull << p->hdr.sender))) {
		isth_ctr_add(&d->st.drop[ISTHD_DROP_nack_not_clique], 1);
		return;
	}
	if (d->rep.base[r & 1].round != r) {
		isth_ctr_add(&d->st.drop[ISTHD_DROP_repair_gone], 1);
		return;
	}
	if (n > RTE_DIM(want))
		n = RTE_DIM(want);
	for (i = 0; i < n; i++)
		isth_wire_get_range(p, i, &want[i]);
	n = merge_ranges(want, n, d->shape.n_chunks, &cut);
	if (cut) /* chunk ids the round does not have */
		isth_ctr_add(&d->st.drop[ISTHD_DROP_repair_gone], cut);
	b = &d->rep.budget[p->hdr.sender][r & 1];
	if (b->round1 != r + 1) {
		b->round1 = r + 1;
		b->used = 0;
	}
	left = d->rep.budget_chunks - b->used;
	base = d->rep.base[r & 1].base;
	for (i = 0; i < n; i++) {
		uint64_t len = want[i].last - want[i].first + 1;

		if (len > left) {
			/* the rest of this NACK is over the budget */
			uint64_t over = len - left;

			for (unsigned int j = i + 1; j < n; j++)
				over += want[j].last - want[j].first + 1;
			isth_ctr_add(&d->st.drop[ISTHD_DROP_repair_budget], over);
			if (left == 0) {
				n = i;
				break;
			}
			want[i].last = want[i].first + left - 1;
			n = i + 1;
		}
		left -= want[i].last - want[i].first + 1;
		want[i].first += base;
		want[i].last += base;
	}
	if (n == 0 || isth_resend_nack_begin(d->rep.ring, &cur, want, n) < 0)
		return;
	while (!isth_resend_nack_done(&cur)) {
		k = isth_resend_nack_serve(
			d->rep.ring, &cur, now_ns, rep, RTE_DIM(rep), gone, RTE_DIM(gone), &n_gone);
		if (n_gone)
			isth_ctr_add(&d->st.drop[ISTHD_DROP_repair_gone], n_gone);
		n_out = 0;
		for (i = 0; i < k; i++) {
			const uint8_t *h = rte_pktmbuf_mtod(rep[i], const uint8_t *);
			struct rte_mbuf *f = NULL;

			/* the ring maps chunk c to base + c only if the island
			 * sent its chunks in order: check before sending */
			if (isth_wire_get_hdr_round(h) == r)
				f = frame_to_peer(d, peer, rep[i]);
			else
				isth_ctr_add(&d->st.drop[ISTHD_DROP_repair_mismatch], 1);
			rte_pktmbuf_free(rep[i]);
			if (f)
				out[n_out++] = f;
		}
		b->used += n_out;
		isth_ctr_add(&d->st.repairs_sent, n_out);
		isthd_tx(d, d->wan_port, out, (uint16_t)n_out, ISTHD_DROP_tx_wan, &d->st.wan_tx);
		if (k == 0 && n_gone == 0)
			break;
	}
}
