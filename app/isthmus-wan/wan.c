/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulator's data path (doc/wan.md, "Model").
 *
 * Every directed link is a transmitter with a FIFO in front of it and a
 * propagation delay behind it. A packet offered to link e at model time t
 * starts serialising at max(t, busy_e), finishes len * 8 / C_e later and
 * reaches the far node lat_e (+ jitter) after that. The backlog seen by an
 * arriving packet is (busy_e - t) * C_e / 8 bytes, so tail drop needs no
 * per-packet queue walk. In-flight packets sit in a per-link lane (a ring
 * of (mbuf, arrival time)); arrival times in a lane never decrease, so the
 * lane's head is its earliest packet and a binary heap of lane heads gives
 * the global order. Events are processed at their model times, not at the
 * time the loop notices them, so a late poll does not accumulate into the
 * delays of later hops.
 *
 * At a node a packet carries the set of sites it must still reach (one bit
 * for unicast, the group's members for multicast). Routes are the planner's
 * shortest-latency paths from the *source* site, or, with a schedule, the
 * planned paths of the source's round (build_routes() in wan_setup.c), so
 * a multicast copy follows the source's tree, and the set splits by next
 * link: one copy per link of the tree, one per member site.
 *
 * isth_wan_poll() and what it calls run once per packet or per burst on
 * the polling lcore: no allocation but mbuf copies, no locks, no syscalls.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lpm.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "isth_ctr.h"

#include "wan_priv.h"
#include "wan_prng.h"

#define RX_BURST 32

/* ------------------------------------------------------------------ */
/* Heap of lane heads                                                  */
/* ------------------------------------------------------------------ */

static inline uint64_t
lane_key(const struct lane *l)
{
	return l->ring[l->head & l->mask].t;
}

static void
heap_swap(struct isth_wan *w, int a, int b)
{
	struct lane *x = w->heap[a];

	w->heap[a] = w->heap[b];
	w->heap[b] = x;
	w->heap[a]->hpos = a;
	w->heap[b]->hpos = b;
}

static void
heap_up(struct isth_wan *w, int i)
{
	while (i > 0) {
		int p = (i - 1) / 2;

		if (lane_key(w->heap[p]) <= lane_key(w->heap[i]))
			break;
		heap_swap(w, i, p);
		i = p;
	}
}

static void
heap_down(struct isth_wan *w, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < w->nheap && lane_key(w->heap[l]) < lane_key(w->heap[m]))
			m = l;
		if (r < w->nheap && lane_key(w->heap[r]) < lane_key(w->heap[m]))
			m = r;
		if (m == i)
			break;
		heap_swap(w, i, m);
		i = m;
	}
}

/* @return 0, or -ENOSPC when the lane is full. */
static inline int
lane_push(struct isth_wan *w, struct lane *l, struct rte_mbuf *m, uint64_t t, double start,
	uint64_t dests, uint32_t src)
{
	struct ent *e;

	if (l->tail - l->head > l->mask)
		return -ENOSPC;
	e = &l->ring[l->tail & l->mask];
	e->m = m;
	e->t = t;
	e->start = start;
	e->dests = dests;
	e->src = src;
	l->tail++;
	l->last_t = t;
	if (l->hpos < 0) {
		l->hpos = w->nheap;
		w->heap[w->nheap++] = l;
		heap_up(w, l->hpos);
	}
	return 0;
}

/* Pop the earliest entry of the whole emulator; the caller checked nheap. */
static inline struct ent
heap_pop(struct isth_wan *w, int *link)
{
	struct lane *l = w->heap[0];
	struct ent e = l->ring[l->head & l->mask];

	*link = l->link;
	l->head++;
	if (l->head == l->tail) {
		l->hpos = -1;
		w->nheap--;
		if (w->nheap > 0) {
			w->heap[0] = w->heap[w->nheap];
			w->heap[0]->hpos = 0;
			heap_down(w, 0);
		}
	} else {
		heap_down(w, 0);
	}
	return e;
}

/* ------------------------------------------------------------------ */
/* Data path                                                           */
/* ------------------------------------------------------------------ */

static void
site_flush(struct site *s)
{
	uint64_t bytes = 0, unsent = 0;
	uint16_t n, i;

	if (s->ntx == 0)
		return;
	for (i = 0; i < s->ntx; i++)
		bytes += rte_pktmbuf_pkt_len(s->txb[i]);
	n = rte_eth_tx_burst(s->port, 0, s->txb, s->ntx);
	for (i = n; i < s->ntx; i++) {
		unsent += rte_pktmbuf_pkt_len(s->txb[i]);
		rte_pktmbuf_free(s->txb[i]);
	}
	isth_ctr_add(&s->st.tx_pkts, n);
	isth_ctr_add(&s->st.tx_bytes, bytes - unsent);
	if (n < s->ntx)
		isth_ctr_add(&s->st.ctr[ISTH_WAN_P_TX_FULL], s->ntx - n);
	s->ntx = 0;
}

static inline void
site_tx(struct site *s, struct rte_mbuf *m)
{
	s->txb[s->ntx++] = m;
	if (s->ntx == TX_BURST)
		site_flush(s);
}

static void
deliver(struct isth_wan *w, int v, struct rte_mbuf *m)
{
	struct site *s = &w->site[v];
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	uint32_t dst = rte_be_to_cpu_32(ip->dst_addr);

	if ((dst >> 28) == 0xe) {
		/* RFC 1112 mapping, so that kernel receivers' filters accept it */
		eth->dst_addr.addr_bytes[0] = 0x01;
		eth->dst_addr.addr_bytes[1] = 0x00;
		eth->dst_addr.addr_bytes[2] = 0x5e;
		eth->dst_addr.addr_bytes[3] = (dst >> 16) & 0x7f;
		eth->dst_addr.addr_bytes[4] = (dst >> 8) & 0xff;
		eth->dst_addr.addr_bytes[5] = dst & 0xff;
	} else if (!s->mac_known) {
		isth_ctr_add(&s->st.ctr[ISTH_WAN_P_NO_MAC], 1);
		rte_pktmbuf_free(m);
		return;
	} else {
		rte_ether_addr_copy(&s->mac, &eth->dst_addr);
	}
	rte_ether_addr_copy(&s->gw_mac, &eth->src_addr);
	site_tx(s, m);
}

/*
 * Bytes of the priority class not yet sent at model time @p t (the frame
 * on the wire counts what is left of it): its own FIFO only, not the
 * frame of the other class it may wait for. Its lane holds the priority
 * frames in start order; a duplicate shares its original's start and is
 * counted once (like one frame on the wire).
 */
static double
prio_backlog(const struct link *L, uint64_t t)
{
	const struct lane *l = &L->lane[LANE_PRIO];
	double b = 0, prev = -1;

	for (uint32_t i = l->tail; i != l->head; i--) {
		const struct ent *e = &l->ring[(i - 1) & l->mask];
		double end = e->start + rte_pktmbuf_pkt_len(e->m) * L->cyc_per_byte;

		if (end <= (double)t)
			break;
		if (e->start != prev)
			b += end - (e->start > (double)t ? e->start : (double)t);
		prev = e->start;
	}
	return b / L->cyc_per_byte;
}

/*
 * A priority frame of @p len bytes reaches link @p L at model time @p t:
 * strict priority, not preemptive. It starts when the priority FIFO
 * ahead of it is sent and the frame on the wire (if any) has finished;
 * every frame of the other class that has not started by then is sent
 * len bytes later, so the link's capacity is kept. The lanes hold the
 * non-priority frames in start order, so the ones not started are a
 * suffix of each lane: shift it and re-sort the heap if its head moved.
 * A frame lost on the wire is not in a lane: the model does not see it as
 * the one on the wire (the priority frame may start up to one frame
 * early). @return the priority frame's start.
 */
static double
prio_admit(struct isth_wan *w, struct link *L, uint64_t t, uint32_t len)
{
	double s = L->pbusy > (double)t ? L->pbusy : (double)t;
	double delta = len * L->cyc_per_byte;
	int k;

	for (k = 0; k < LANE_PRIO; k++) {
		struct lane *l = &L->lane[k];
		uint32_t i = l->tail;

		while (i != l->head) {
			struct ent *e = &l->ring[(i - 1) & l->mask];

			if (e->start <= (double)t) {
				/* started: the one on the wire if it is not done */
				double end = e->start + rte_pktmbuf_pkt_len(e->m) * L->cyc_per_byte;

				if (end > s)
					s = end;
				break;
			}
			i--;
		}
		if (i == l->tail)
			continue;
		/* ring[i .. tail) had not started: len bytes later */
		for (uint32_t j = i; j != l->tail; j++) {
			struct ent *e = &l->ring[j & l->mask];

			e->start += delta;
			e->t += (uint64_t)ceil(delta);
		}
		l->last_t = l->ring[(l->tail - 1) & l->mask].t;
		if (i == l->head && l->hpos >= 0)
			heap_down(w, l->hpos);
	}
	L->pbusy = s + delta;
	/* frames of the other class after s (queued, or lost on the wire
	 * after being scheduled) now end delta later */
	L->busy = L->busy > s ? L->busy + delta : L->pbusy;
	return s;
}

/* RFC 1624 incremental update for a TTL decrement. */
static inline void
ttl_decrement(struct rte_ipv4_hdr *ip)
{
	uint32_t sum;

	ip->time_to_live--;
	sum = (uint32_t)rte_be_to_cpu_16(ip->hdr_checksum) + 0x0100;
	sum = (sum & 0xffff) + (sum >> 16);
	ip->hdr_checksum = rte_cpu_to_be_16((uint16_t)sum);
}

static void
link_send(struct isth_wan *w, int e, struct rte_mbuf *m, uint64_t t, uint64_t dests, uint32_t src)
{
	struct link *L = &w->links[e];
	const struct isth_wan_impair *imp = &L->imp;
	uint32_t len = rte_pktmbuf_pkt_len(m);
	struct rte_ipv4_hdr *ip =
		rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, sizeof(struct rte_ether_hdr));
	double backlog, start, fin, arr;
	struct lane *lane;
	uint64_t at;
	bool lost, prio;

	if (w->dec_ttl) {
		if (ip->time_to_live <= 1) {
			isth_ctr_add(&L->st.ctr[ISTH_WAN_L_TTL], 1);
			rte_pktmbuf_free(m);
			return;
		}
		ttl_decrement(ip);
	}
	prio = L->pqlimit && (ip->type_of_service >> 2) == ISTH_WAN_DSCP_EF;
	if (prio) {
		backlog = prio_backlog(L, t);
		if (backlog + len > (double)L->pqlimit) {
			isth_ctr_add(&L->st.ctr[ISTH_WAN_L_PRIO_FULL], 1);
			rte_pktmbuf_free(m);
			return;
		}
		start = prio_admit(w, L, t, len);
		isth_ctr_add(&L->st.ctr[ISTH_WAN_L_PRIO], 1);
		fin = L->pbusy;
	} else {
		backlog = L->busy > (double)t ? (L->busy - (double)t) / L->cyc_per_byte : 0;
		if (backlog + len > (double)L->qlimit) {
			isth_ctr_add(&L->st.ctr[ISTH_WAN_L_QUEUE_FULL], 1);
			rte_pktmbuf_free(m);
			return;
		}
		start = L->busy > (double)t ? L->busy : (double)t;
		L->busy = start + len * L->cyc_per_byte;
		fin = L->busy;
		if ((uint64_t)(backlog + len) > L->st.queue_hw_bytes)
			__atomic_store_n(
				&L->st.queue_hw_bytes, (uint64_t)(backlog + len), __ATOMIC_RELAXED);
	}
	isth_ctr_add(&L->st.pkts, 1);
	isth_ctr_add(&L->st.bytes, len);

	/* Loss on the wire: the packet used the link's capacity. The draws are
	 * made in a fixed order so that a link's decisions depend only on the
	 * seed and the packets it was offered. */
	if (imp->ge) {
		if (L->ge_bad)
			L->ge_bad = !(wan_prng_unit(L->rng) < imp->ge_r);
		else
			L->ge_bad = wan_prng_unit(L->rng) < imp->ge_p;
		lost = wan_prng_unit(L->rng) < (L->ge_bad ? imp->ge_loss_bad : imp->ge_loss_good);
	} else {
		lost = imp->loss > 0 && wan_prng_unit(L->rng) < imp->loss;
	}
	if (lost) {
		isth_ctr_add(&L->st.ctr[ISTH_WAN_L_LOSS], 1);
		rte_pktmbuf_free(m);
		return;
	}
	if (imp->corrupt > 0 && wan_prng_unit(L->rng) < imp->corrupt) {
		/* a byte after the IPv4 header, so that the packet still routes
		 * and the receiver's checksum is what catches it */
		uint32_t off = sizeof(struct rte_ether_hdr) + rte_ipv4_hdr_len(ip);

		if (len > off) {
			uint8_t *b = rte_pktmbuf_mtod_offset(m, uint8_t *, 0);
			uint32_t at_off = off + wan_prng_below(L->rng, len - off);

			b[at_off] ^= (uint8_t)(1 + wan_prng_below(L->rng, 255));
			isth_ctr_add(&L->st.ctr[ISTH_WAN_L_CORRUPTED], 1);
		}
	}
	arr = fin + L->lat_cyc;
	if (imp->jitter_ms > 0)
		arr += wan_prng_unit(L->rng) * L->jitter_cyc;
	/* the priority class has a lane of its own and is never reordered:
	 * its frames are not moved by prio_admit */
	lane = &L->lane[prio ? LANE_PRIO : 0];
	if (!prio && imp->reorder > 0 && wan_prng_unit(L->rng) < imp->reorder) {
		lane = &L->lane[1];
		arr += L->reorder_cyc;
		isth_ctr_add(&L->st.ctr[ISTH_WAN_L_REORDERED], 1);
	}
	at = (uint64_t)ceil(arr);
	/* jitter never reorders within a lane: it models queueing elsewhere */
	if (lane->tail != lane->head && at < lane->last_t)
		at = lane->last_t;
	if (lane_push(w, lane, m, at, start, dests, src) < 0) {
		isth_ctr_add(&L->st.ctr[ISTH_WAN_L_RING_FULL], 1);
		rte_pktmbuf_free(m);
		return;
	}
	if (imp->dup > 0 && wan_prng_unit(L->rng) < imp->dup) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, w->pool, 0, UINT32_MAX);

		if (c == NULL) {
			isth_ctr_add(&L->st.ctr[ISTH_WAN_L_NOMBUF], 1);
		} else if (lane_push(w, lane, c, at, start, dests, src) < 0) {
			isth_ctr_add(&L->st.ctr[ISTH_WAN_L_RING_FULL], 1);
			rte_pktmbuf_free(c);
		} else {
			isth_ctr_add(&L->st.ctr[ISTH_WAN_L_DUPLICATED], 1);
		}
	}
}

/*
 * Packet @p m, which must still reach @p dests, is at node @p v at model
 * time @p t: deliver it if @p v is a destination, and send one copy on
 * each next link of @p src's tree.
 */
static void
forward(struct isth_wan *w, struct rte_mbuf *m, uint64_t t, uint64_t dests, uint32_t src, int v)
{
	const int16_t *nh = &w->nh[((size_t)src * w->n + v) * w->n];
	uint64_t rem = dests & ~(UINT64_C(1) << v), set, r;
	uint64_t sets[ISTH_WAN_MAX_SITES];
	int16_t outs[ISTH_WAN_MAX_SITES];
	bool here = dests >> v & 1;
	int nout = 0, i, nleft;
	struct rte_mbuf *c;

	while (rem) {
		int d = __builtin_ctzll(rem), j;
		int16_t e = nh[d];

		set = 0;
		for (r = rem; r; r &= r - 1) {
			j = __builtin_ctzll(r);
			if (nh[j] == e)
				set |= UINT64_C(1) << j;
		}
		rem &= ~set;
		if (unlikely(e < 0)) {
			/* cannot happen with a connected topology; counted anyway */
			isth_ctr_add(&w->site[w->tree_site[src]].st.ctr[ISTH_WAN_P_NO_ROUTE], 1);
			continue;
		}
		outs[nout] = e;
		sets[nout++] = set;
	}
	nleft = nout + here;
	if (nleft == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	/* copies first, from the untouched original; the original goes last */
	for (i = 0; i < nout; i++) {
		if (--nleft > 0) {
			c = rte_pktmbuf_copy(m, w->pool, 0, UINT32_MAX);
			if (c == NULL) {
				isth_ctr_add(&w->links[outs[i]].st.ctr[ISTH_WAN_L_NOMBUF], 1);
				continue;
			}
		} else {
			c = m;
		}
		link_send(w, outs[i], c, t, sets[i], src);
	}
	if (here)
		deliver(w, v, m);
}

/* The tree a packet entering at site @p si at time @p now follows: the
 * current round's routes (the planner's, params.sched) or shortest paths.
 * Chosen once at ingress and carried with the packet, so a packet in
 * flight across a round boundary stays on the tree it started on. */
static int
ingress_tree(const struct isth_wan *w, int si, uint64_t now)
{
	uint64_t q;

	if (w->rtree == NULL || now < w->epoch_tsc)
		return si;
	q = (uint64_t)((double)(now - w->epoch_tsc) / w->round_cyc);
	return w->rtree[(size_t)(q % (uint64_t)w->nrc) * w->n + si];
}

int
isth_wan_set_epoch(struct isth_wan *w, uint64_t epoch_tsc)
{
	if (w->rtree == NULL)
		return -ENOENT;
	w->epoch_tsc = epoch_tsc;
	return 0;
}

static int
group_lookup(const struct isth_wan *w, uint32_t ip, uint64_t *members)
{
	int lo = 0, hi = w->ngroups - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (w->group_ip[mid] == ip) {
			*members = w->group_members[mid];
			return 0;
		}
		if (w->group_ip[mid] < ip)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static bool
site_owns(const struct site *s, uint32_t ip)
{
	int i;

	for (i = 0; i < s->nnets; i++)
		if ((ip & s->mask[i]) == s->net[i])
			return true;
	return false;
}

/* Answer a request for any address the site does not own (proxy ARP). */
static void
arp_input(struct isth_wan *w, struct site *s, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(eth + 1);
	uint32_t sip, tip;

	(void)w;
	if (rte_pktmbuf_data_len(m) < sizeof(*eth) + sizeof(*a) ||
		a->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
		a->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || a->arp_hlen != 6 ||
		a->arp_plen != 4 || a->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST))
		goto ignore;
	sip = rte_be_to_cpu_32(a->arp_data.arp_sip);
	tip = rte_be_to_cpu_32(a->arp_data.arp_tip);
	if (sip == tip || (site_owns(s, tip) && tip != s->gw_ip) || tip == 0)
		goto ignore;
	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(&s->gw_mac, &eth->src_addr);
	a->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
	rte_ether_addr_copy(&a->arp_data.arp_sha, &a->arp_data.arp_tha);
	a->arp_data.arp_tip = a->arp_data.arp_sip;
	rte_ether_addr_copy(&s->gw_mac, &a->arp_data.arp_sha);
	a->arp_data.arp_sip = rte_cpu_to_be_32(tip);
	isth_ctr_add(&s->st.ctr[ISTH_WAN_P_ARP_REPLIES], 1);
	site_tx(s, m);
	return;
ignore:
	isth_ctr_add(&s->st.ctr[ISTH_WAN_P_ARP_IGNORED], 1);
	rte_pktmbuf_free(m);
}

static void
ingress(struct isth_wan *w, int si, struct rte_mbuf *m, uint64_t now)
{
	struct site *s = &w->site[si];
	uint32_t plen = rte_pktmbuf_data_len(m), dst, nhop, ihl, tot;
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip;
	enum isth_wan_port_ctr why;
	uint64_t dests;

	isth_ctr_add(&s->st.rx_pkts, 1);
	isth_ctr_add(&s->st.rx_bytes, rte_pktmbuf_pkt_len(m));
	if (unlikely(plen < sizeof(*eth))) {
		why = ISTH_WAN_P_NOT_IPV4;
		goto drop;
	}
	if (unlikely(s->mac_learn) && !rte_is_multicast_ether_addr(&eth->src_addr)) {
		rte_ether_addr_copy(&eth->src_addr, &s->mac);
		s->mac_known = true;
	}
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
		arp_input(w, s, m);
		return;
	}
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		why = ISTH_WAN_P_NOT_IPV4;
		goto drop;
	}
	ip = (const struct rte_ipv4_hdr *)(eth + 1);
	/* the whole IPv4 header must be in the first segment */
	if (plen < sizeof(*eth) + sizeof(*ip) || (ip->version_ihl >> 4) != 4) {
		why = ISTH_WAN_P_BAD_IPV4;
		goto drop;
	}
	ihl = rte_ipv4_hdr_len(ip);
	tot = rte_be_to_cpu_16(ip->total_length);
	if (ihl < sizeof(*ip) || plen < sizeof(*eth) + ihl || tot < ihl ||
		tot > rte_pktmbuf_pkt_len(m) - sizeof(*eth)) {
		why = ISTH_WAN_P_BAD_IPV4;
		goto drop;
	}
	dst = rte_be_to_cpu_32(ip->dst_addr);
	if ((dst >> 28) == 0xe) {
		if ((dst >> 8) == 0xe00000) {
			why = ISTH_WAN_P_LINK_LOCAL;
			goto drop;
		}
		if (group_lookup(w, dst, &dests) < 0) {
			why = ISTH_WAN_P_NO_GROUP;
			goto drop;
		}
		dests &= ~(UINT64_C(1) << si);
		if (dests == 0) {
			why = ISTH_WAN_P_SAME_SITE;
			goto drop;
		}
	} else if (dst == UINT32_MAX) {
		why = ISTH_WAN_P_LINK_LOCAL;
		goto drop;
	} else {
		if (rte_lpm_lookup(w->lpm, dst, &nhop) != 0) {
			why = ISTH_WAN_P_NO_ROUTE;
			goto drop;
		}
		if ((int)nhop == si) {
			why = ISTH_WAN_P_SAME_SITE;
			goto drop;
		}
		dests = UINT64_C(1) << nhop;
	}
	forward(w, m, now, dests, (uint32_t)ingress_tree(w, si, now), si);
	return;
drop:
	isth_ctr_add(&s->st.ctr[why], 1);
	rte_pktmbuf_free(m);
}


unsigned int
isth_wan_poll(struct isth_wan *w, uint64_t now)
{
	struct rte_mbuf *pkts[RX_BURST];
	unsigned int work = 0;
	uint16_t nb, i;
	int s;

	while (w->nheap > 0 && lane_key(w->heap[0]) <= now) {
		int link;
		struct ent e = heap_pop(w, &link);

		forward(w, e.m, e.t, e.dests, e.src, w->links[link].to);
		work++;
	}
	for (s = 0; s < w->n; s++) {
		if (!w->site[s].present)
			continue;
		nb = rte_eth_rx_burst(w->site[s].port, 0, pkts, RX_BURST);
		for (i = 0; i < nb; i++) {
			if (i + 1 < nb)
				rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
			ingress(w, s, pkts[i], now);
		}
		work += nb;
	}
	for (s = 0; s < w->n; s++)
		if (w->site[s].ntx)
			site_flush(&w->site[s]);
	return work;
}

uint64_t
isth_wan_next_event(const struct isth_wan *w)
{
	return w->nheap > 0 ? lane_key(w->heap[0]) : UINT64_MAX;
}
