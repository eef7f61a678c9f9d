/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A resend ring is an array of 2^k entries indexed by seq & mask. Packets
 * are pushed at consecutive sequence numbers, so the held packets are
 * exactly the sequences [tail, head): a NACKed sequence below tail has
 * left the window, one at or above head was never sent, and everything in
 * between is held. That makes the GONE part of any range O(1) to compute.
 */

#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "isth_ctr.h"
#include "isth_mbuf.h"
#include "isth_resend.h"

struct resend_entry {
	struct rte_mbuf *m;
	uint64_t ts; /* push time, ns */
	uint64_t repair_ts; /* last repair time, ns; valid if repaired */
	uint8_t repaired;
	uint8_t marked; /* ISTH_WIRE_F_RESENT is set in the stored bytes */
};

struct isth_resend {
	/* Immutable after create. */
	uint32_t size;
	uint32_t mask;
	uint64_t window_ns;
	uint64_t linger_ns;
	uint16_t hdr_off;
	uint16_t hdr_len; /* hdr_off + ISTH_WIRE_HDR_SIZE */
	uint32_t flags;
	struct rte_mempool *hdr_pool;
	struct resend_entry *ring;

	/* Owner only. */
	uint64_t head; /* next sequence number */
	uint64_t tail; /* oldest held sequence */

	/* written by: owner (relaxed stores); read by: anyone */
	struct isth_resend_stats st;
};

/* Sequences in [a, b], saturating (b - a + 1 overflows for [0, MAX]). */
static inline uint64_t
span(uint64_t a, uint64_t b)
{
	return b - a == UINT64_MAX ? UINT64_MAX : b - a + 1;
}

/*
 * What one refused range adds to gone or future: its sequences, but at
 * most the ring's size. A range may name up to 2^64 sequences that were
 * never kept; counting them all would saturate the counter from a single
 * NACK and make it useless afterwards, while no more than `size` of them
 * can ever have been held (or be about to be) at once.
 */
static inline uint64_t
refused(const struct isth_resend *r, uint64_t n)
{
	return n < r->size ? n : r->size;
}

struct isth_resend *
isth_resend_create(const struct isth_resend_conf *conf)
{
	struct isth_resend *r;

	if (conf == NULL || conf->size < 2 || conf->size > ISTH_RESEND_MAX_SIZE ||
		(conf->size & (conf->size - 1)) != 0 || conf->window_ns == 0 ||
		(conf->flags & ~ISTH_RESEND_F_STAMP) != 0 ||
		conf->first_seq > UINT64_MAX - (UINT64_C(1) << 62) ||
		(conf->hdr_pool != NULL &&
			rte_pktmbuf_data_room_size(conf->hdr_pool) <
				RTE_PKTMBUF_HEADROOM + conf->hdr_off + ISTH_WIRE_HDR_SIZE)) {
		rte_errno = EINVAL;
		return NULL;
	}
	r = rte_zmalloc_socket("isth_resend", sizeof(*r), RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (r == NULL)
		goto fail;
	r->ring = rte_zmalloc_socket("isth_resend_ring", (size_t)conf->size * sizeof(*r->ring),
		RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (r->ring == NULL)
		goto free_resend;
	r->size = conf->size;
	r->mask = conf->size - 1;
	r->window_ns = conf->window_ns;
	r->linger_ns = conf->linger_ns;
	r->hdr_off = conf->hdr_off;
	r->hdr_len = conf->hdr_off + ISTH_WIRE_HDR_SIZE;
	r->flags = conf->flags;
	r->hdr_pool = conf->hdr_pool;
	r->head = conf->first_seq;
	r->tail = conf->first_seq;
	return r;

free_resend:
	rte_free(r);
fail:
	rte_errno = ENOMEM;
	return NULL;
}

/*
 * A release frees an mbuf pushed a whole ring ago: its entry and its
 * struct are long out of cache, and the free reads the struct's first
 * line (refcnt, nb_segs, pool: lib/mbuf) after the entry's pointer, one
 * miss after the other. Each release therefore prefetches for the ones
 * after it: the struct of the entry TAIL_AHEAD on (its pointer
 * prefetched TAIL_AHEAD releases earlier) and the entry 2 * TAIL_AHEAD
 * on. Releases come in runs (a burst's AGGs pushed into a full ring, a
 * prefix expiring), so one ahead would not hide the latency (measured:
 * doc/notes/performance-log.md section 6, "Sixth pass").
 */
#define TAIL_AHEAD 4

static inline void
prefetch_tail(const struct isth_resend *r)
{
	uint64_t held = r->head - r->tail;

	if (held > TAIL_AHEAD)
		rte_prefetch0(r->ring[(r->tail + TAIL_AHEAD) & r->mask].m);
	if (held > 2 * TAIL_AHEAD)
		rte_prefetch0(&r->ring[(r->tail + 2 * TAIL_AHEAD) & r->mask]);
}

/* Drop the ring's reference on the oldest packet. */
static inline void
release_tail(struct isth_resend *r)
{
	struct resend_entry *e = &r->ring[r->tail & r->mask];

	isth_mbuf_free(e->m); /* from its first line alone: lib/mbuf */
	e->m = NULL;
	r->tail++;
	prefetch_tail(r);
}

void
isth_resend_destroy(struct isth_resend *r)
{
	if (r == NULL)
		return;
	while (r->tail != r->head)
		release_tail(r);
	rte_free(r->ring);
	rte_free(r);
}

uint64_t
isth_resend_next_seq(const struct isth_resend *r)
{
	return r->head;
}

uint64_t
isth_resend_oldest_seq(const struct isth_resend *r)
{
	return r->tail;
}

unsigned int
isth_resend_expire(struct isth_resend *r, uint64_t now_ns)
{
	unsigned int n = 0;

	/* Push times are non-decreasing in sequence order (one writer, one
	 * clock), so the expired packets are a prefix. */
	while (r->tail != r->head) {
		const struct resend_entry *e = &r->ring[r->tail & r->mask];

		if (now_ns - e->ts < r->window_ns || now_ns < e->ts)
			break;
		release_tail(r);
		n++;
	}
	if (n != 0) {
		isth_ctr_add(&r->st.expired, n);
		__atomic_store_n(&r->st.held, r->head - r->tail, __ATOMIC_RELAXED);
	}
	return n;
}

/*
 * The UDP checksum sits 2 bytes before the isthmus header when hdr_off
 * >= 8. Zero means "no checksum" (IPv4) and stays zero; with TX checksum
 * offload the field holds the pseudo-header sum and the NIC finishes it.
 * Both 16-bit words we change are at even offsets from the UDP header.
 */
static inline uint8_t *
udp_csum(struct isth_resend *r, uint8_t *frame, uint64_t ol_flags)
{
	uint8_t *cs;

	if (r->hdr_off < ISTH_WIRE_UDP_HDR_SIZE ||
		(ol_flags & RTE_MBUF_F_TX_L4_MASK) == RTE_MBUF_F_TX_UDP_CKSUM)
		return NULL;
	cs = frame + r->hdr_off - 2;
	return cs[0] == 0 && cs[1] == 0 ? NULL : cs;
}

/*
 * RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'). One's complement sums do not
 * depend on byte order as long as all words are taken the same way, so
 * the words are used as they lie in memory. memcpy: no alignment assumed.
 */
static inline void
csum_replace(uint8_t *csp, uint16_t old_w, uint16_t new_w)
{
	uint16_t hc;
	uint32_t s;

	memcpy(&hc, csp, 2);
	s = (uint16_t)~hc + (uint32_t)(uint16_t)~old_w + new_w;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	hc = (uint16_t)~s;
	if (hc == 0)
		hc = 0xffff; /* 0 would mean "no checksum" */
	memcpy(csp, &hc, 2);
}

/*
 * The UDP checksum at @cs after a header field of @nwords 16-bit words
 * went from @old to @neu (lib/wire's accessors give the field's values):
 * the field lies big-endian in memory, so its words as they lie there are
 * the big-endian ones, the form csum_replace() takes.
 */
static inline void
csum_replace_field(uint8_t *cs, uint64_t old, uint64_t neu, unsigned int nwords)
{
	unsigned int i;

	for (i = 0; i < nwords; i++) {
		unsigned int shift = 16 * (nwords - 1 - i);
		uint16_t o = rte_cpu_to_be_16((uint16_t)(old >> shift));
		uint16_t n = rte_cpu_to_be_16((uint16_t)(neu >> shift));

		if (o != n)
			csum_replace(cs, o, n);
	}
}

static inline void
set_resent(struct isth_resend *r, uint8_t *frame, uint64_t ol_flags)
{
	uint8_t *msg = frame + r->hdr_off;
	uint8_t *cs = udp_csum(r, frame, ol_flags);
	uint16_t old = isth_wire_get_flags(msg);

	isth_wire_or_flags(msg, ISTH_WIRE_F_RESENT);
	if (cs != NULL)
		csum_replace_field(cs, old, isth_wire_get_flags(msg), 1);
}

static inline void
stamp_seq(struct isth_resend *r, struct rte_mbuf *m, uint64_t seq)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	uint8_t *msg = frame + r->hdr_off;
	uint8_t *cs = udp_csum(r, frame, m->ol_flags);
	uint64_t old = isth_wire_get_seq(msg);

	isth_wire_set_seq(msg, seq);
	if (cs != NULL)
		csum_replace_field(cs, old, seq, 4);
}

int
isth_resend_push(struct isth_resend *r, struct rte_mbuf *m, uint64_t now_ns, uint64_t *seq)
{
	struct resend_entry *e;
	const uint8_t *msg;

	if (unlikely(m == NULL || m->data_len < r->hdr_len)) {
		isth_ctr_add(&r->st.push_bad, 1);
		return -EINVAL;
	}
	isth_resend_expire(r, now_ns);
	if (unlikely(r->head - r->tail == r->size)) {
		release_tail(r);
		isth_ctr_add(&r->st.overwritten, 1);
	}
	if (r->flags & ISTH_RESEND_F_STAMP)
		stamp_seq(r, m, r->head);
	msg = rte_pktmbuf_mtod_offset(m, const uint8_t *, r->hdr_off);
	rte_pktmbuf_refcnt_update(m, 1);
	e = &r->ring[r->head & r->mask];
	e->m = m;
	e->ts = now_ns;
	e->repaired = 0;
	e->marked = (isth_wire_get_flags(msg) & ISTH_WIRE_F_RESENT) != 0;
	if (seq != NULL)
		*seq = r->head;
	r->head++;
	isth_ctr_add(&r->st.stored, 1);
	__atomic_store_n(&r->st.held, r->head - r->tail, __ATOMIC_RELAXED);
	return 0;
}

unsigned int
isth_resend_push_burst(
	struct isth_resend *r, struct rte_mbuf **pkts, unsigned int n, uint64_t now_ns)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (isth_resend_push(r, pkts[i], now_ns, NULL) != 0)
			break;
	return i;
}

int
isth_resend_nack_begin(struct isth_resend *r, struct isth_resend_cursor *c,
	const struct isth_wire_range *ranges, unsigned int n)
{
	unsigned int i;

	memset(c, 0, sizeof(*c));
	if (ranges == NULL || n == 0)
		goto bad;
	for (i = 0; i < n; i++)
		if (ranges[i].first > ranges[i].last)
			goto bad;
	c->ranges = ranges;
	c->n_ranges = n;
	isth_ctr_add(&r->st.nacks, 1);
	return 0;
bad:
	isth_ctr_add(&r->st.bad_nack, 1);
	return -EINVAL;
}

/*
 * A repair for a packet someone else still holds: a copy of its headers
 * with the flag set, chained to clones of the rest. Like DPDK's
 * ipv4_multicast example, but the per-destination part is ours.
 */
static struct rte_mbuf *
hdr_seg_repair(struct isth_resend *r, struct rte_mbuf *m)
{
	struct rte_mempool *mp = r->hdr_pool != NULL ? r->hdr_pool : m->pool;
	struct rte_mbuf *h, *c = NULL;

	h = rte_pktmbuf_alloc(mp);
	if (h == NULL)
		return NULL;
	if (unlikely(rte_pktmbuf_tailroom(h) < r->hdr_len)) {
		rte_pktmbuf_free(h);
		return NULL;
	}
	if (m->pkt_len > r->hdr_len) {
		c = rte_pktmbuf_clone(m, mp);
		if (c == NULL) {
			rte_pktmbuf_free(h);
			return NULL;
		}
		rte_pktmbuf_adj(c, r->hdr_len); /* data_len >= hdr_len: push */
		if (c->data_len == 0) {
			/* the first segment was all header: drop its clone */
			struct rte_mbuf *next = c->next;

			next->nb_segs = c->nb_segs - 1;
			next->pkt_len = c->pkt_len;
			c->next = NULL;
			c->nb_segs = 1;
			rte_pktmbuf_free(c);
			c = next;
		}
	}
	memcpy(rte_pktmbuf_mtod(h, uint8_t *), rte_pktmbuf_mtod(m, const uint8_t *), r->hdr_len);
	h->data_len = r->hdr_len;
	h->pkt_len = m->pkt_len;
	h->next = c;
	h->nb_segs = 1 + (c != NULL ? c->nb_segs : 0);
	h->ol_flags |= m->ol_flags & RTE_MBUF_F_TX_OFFLOAD_MASK;
	h->tx_offload = m->tx_offload;
	h->packet_type = m->packet_type;
	set_resent(r, rte_pktmbuf_mtod(h, uint8_t *), h->ol_flags);
	return h;
}

/* One sequence in the window. @return the repair, or NULL (no output). */
static inline struct rte_mbuf *
repair(struct isth_resend *r, uint64_t seq, uint64_t now_ns)
{
	struct resend_entry *e = &r->ring[seq & r->mask];
	struct rte_mbuf *m = e->m, *out;

	if (e->repaired && now_ns - e->repair_ts < r->linger_ns && now_ns >= e->repair_ts) {
		isth_ctr_add(&r->st.suppressed, 1);
		return NULL;
	}
	if (e->marked) {
		rte_pktmbuf_refcnt_update(m, 1);
		out = m;
	} else if (RTE_MBUF_DIRECT(m) && rte_mbuf_refcnt_read(m) == 1) {
		set_resent(r, rte_pktmbuf_mtod(m, uint8_t *), m->ol_flags);
		e->marked = 1;
		rte_pktmbuf_refcnt_update(m, 1);
		out = m;
	} else {
		out = hdr_seg_repair(r, m);
		if (out == NULL) {
			isth_ctr_add(&r->st.nomem, 1);
			return NULL;
		}
		isth_ctr_add(&r->st.hdr_seg, 1);
	}
	e->repaired = 1;
	e->repair_ts = now_ns;
	isth_ctr_add(&r->st.served, 1);
	return out;
}

/* Append [a, b] to the GONE list, merging it into the last range when
 * they overlap or touch. @return false if the list is full. */
static inline bool
gone_add(struct isth_resend *r, struct isth_wire_range *g, unsigned int max, unsigned int *n,
	uint64_t a, uint64_t b)
{
	if (*n > 0) {
		struct isth_wire_range *l = &g[*n - 1];

		if ((a <= l->last || a - 1 == l->last) && (b >= l->first || b + 1 == l->first)) {
			uint64_t before = span(l->first, l->last), after;

			l->first = RTE_MIN(l->first, a);
			l->last = RTE_MAX(l->last, b);
			after = span(l->first, l->last);
			isth_ctr_add(&r->st.gone, refused(r, after - before));
			return true;
		}
	}
	if (*n == max)
		return false;
	g[*n].first = a;
	g[*n].last = b;
	(*n)++;
	isth_ctr_add(&r->st.gone_ranges, 1);
	isth_ctr_add(&r->st.gone, refused(r, span(a, b)));
	return true;
}

unsigned int
isth_resend_nack_serve(struct isth_resend *r, struct isth_resend_cursor *c, uint64_t now_ns,
	struct rte_mbuf **pkts, unsigned int max_pkts, struct isth_wire_range *gone,
	unsigned int max_gone, unsigned int *n_gone)
{
	unsigned int n = 0, ng = 0;
	uint64_t tail, head;

	isth_resend_expire(r, now_ns);
	tail = r->tail;
	head = r->head;

	while (c->idx < c->n_ranges) {
		const struct isth_wire_range *rg = &c->ranges[c->idx];
		uint64_t lo = c->started ? c->pos : rg->first;
		uint64_t hi = rg->last, e;

		c->started = true;
		c->pos = lo;
		/* Before the window: gone (expired, or before first_seq). */
		if (lo < tail) {
			e = RTE_MIN(hi, tail - 1);
			if (!gone_add(r, gone, max_gone, &ng, lo, e))
				goto out;
			if (e == hi)
				goto next;
			lo = tail;
			c->pos = lo;
		}
		/* In the window: every sequence is held. */
		if (lo < head) {
			e = RTE_MIN(hi, head - 1);
			if (c->scanned >= r->size) {
				isth_ctr_add(&r->st.truncated, span(lo, e));
			} else {
				while (lo <= e) {
					struct rte_mbuf *m;

					if (c->scanned >= r->size) {
						isth_ctr_add(&r->st.truncated, span(lo, e));
						break;
					}
					if (n == max_pkts) {
						c->pos = lo;
						goto out;
					}
					if (lo + 1 <= e)
						rte_prefetch0(&r->ring[(lo + 1) & r->mask]);
					m = repair(r, lo, now_ns);
					if (m != NULL)
						pkts[n++] = m;
					c->scanned++;
					lo++; /* e < head <= 2^63: no wrap */
				}
			}
			if (e == hi)
				goto next;
			lo = head;
			c->pos = lo;
		}
		/* Never sent. */
		if (!gone_add(r, gone, max_gone, &ng, lo, hi))
			goto out;
		isth_ctr_add(&r->st.future, refused(r, span(lo, hi)));
	next:
		c->idx++;
		c->started = false;
	}
out:
	*n_gone = ng;
	return n;
}

void
isth_resend_stats(const struct isth_resend *r, struct isth_resend_stats *st)
{
#define X(n, help) st->n = isth_ctr_get(&r->st.n);
	ISTH_RESEND_COUNTERS(X)
#undef X
}
