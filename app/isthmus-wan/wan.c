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
 * planned paths of the source's round (build_routes()), so a multicast copy
 * follows the source's tree, and the set splits by next link: one copy per
 * link of the tree, one per member site.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_telemetry.h>

#include "isth_ctr.h"
#include "isth_sched.h"

#include "wan.h"
#include "wan_prng.h"

#define RX_BURST 32
#define TX_BURST 32
#define LANE_DEFAULT 16384
#define LANES 3 /* 0: in order; 1: reordered (extra delay); 2: priority class */
#define LANE_PRIO 2

struct ent {
	struct rte_mbuf *m;
	uint64_t t; /* model time of arrival at the link's far node */
	double start; /* model time the transmitter starts sending it */
	uint64_t dests; /* sites this copy must still reach */
	uint32_t src; /* routing tree: the ingress site, or a routed tree (w->tree_site) */
};

struct lane {
	struct ent *ring;
	uint32_t mask;
	uint32_t head; /* next to pop */
	uint32_t tail; /* next free */
	uint64_t last_t; /* arrival of the newest entry: keeps the lane sorted */
	int hpos; /* index in the heap, -1 when empty */
	int link;
};

struct link {
	int from, to;
	double lat_cyc;
	double cyc_per_byte; /* at the scaled capacity */
	double jitter_cyc;
	double reorder_cyc;
	double busy; /* model time the transmitter is free again */
	uint64_t qlimit;
	/* priority class (doc/wan.md, "Priority class"): 0 = none */
	uint64_t pqlimit;
	double pbusy; /* model time the priority class's FIFO is empty */
	struct isth_wan_impair imp;
	bool ge_bad; /* Gilbert-Elliott state */
	uint64_t rng[4];
	struct lane lane[LANES];
	/* written by: lcore; read by: telemetry (relaxed) */
	struct isth_wan_link_stats st;
	char name[2 * ISTH_TOPO_NAME_MAX + 4];
};

struct site {
	bool present;
	bool mac_learn;
	bool mac_known; /* written by: lcore (learning) */
	uint16_t port;
	struct rte_ether_addr mac; /* edge MAC */
	struct rte_ether_addr gw_mac; /* ours */
	uint32_t gw_ip;
	int nnets;
	uint32_t net[ISTH_WAN_MAX_NETS];
	uint32_t mask[ISTH_WAN_MAX_NETS];
	uint16_t ntx;
	struct rte_mbuf *txb[TX_BURST];
	/* written by: lcore; read by: telemetry (relaxed) */
	struct isth_wan_port_stats st;
};

struct isth_wan {
	const struct isth_topo *t;
	int n;
	int ndl;
	uint64_t hz;
	bool dec_ttl;
	struct rte_mempool *pool;
	struct rte_lpm *lpm;
	int ngroups;
	uint32_t *group_ip; /* sorted */
	uint64_t *group_members;
	int16_t *nh; /* nh[(tree * n + v) * n + d]: link out of v towards d on the tree */
	int ntrees; /* n shortest-path trees (tree s: ingress site s), then routed ones */
	int *tree_site; /* ingress site of each tree */
	/* per-round routes (params.sched): tree of ingress site s in cycle
	 * round r = rtree[r * n + s]; NULL: shortest paths only */
	int *rtree;
	int nrc; /* rounds in the cycle */
	double round_cyc; /* T in cycles */
	uint64_t epoch_tsc;
	struct link *links;
	struct lane **heap;
	int nheap;
	struct site site[ISTH_WAN_MAX_SITES];
};

/* written by: main thread (register, free); read by: telemetry thread */
static struct isth_wan *tel_wan;

static const char *const link_ctr_names[ISTH_WAN_L_NCTR] = {
	[ISTH_WAN_L_QUEUE_FULL] = "queue_full",
	[ISTH_WAN_L_LOSS] = "loss",
	[ISTH_WAN_L_TTL] = "ttl",
	[ISTH_WAN_L_RING_FULL] = "ring_full",
	[ISTH_WAN_L_NOMBUF] = "nombuf",
	[ISTH_WAN_L_CORRUPTED] = "corrupted",
	[ISTH_WAN_L_DUPLICATED] = "duplicated",
	[ISTH_WAN_L_REORDERED] = "reordered",
	[ISTH_WAN_L_PRIO_FULL] = "prio_queue_full",
	[ISTH_WAN_L_PRIO] = "priority",
};

static const char *const port_ctr_names[ISTH_WAN_P_NCTR] = {
	[ISTH_WAN_P_NOT_IPV4] = "not_ipv4",
	[ISTH_WAN_P_BAD_IPV4] = "bad_ipv4",
	[ISTH_WAN_P_NO_ROUTE] = "no_route",
	[ISTH_WAN_P_NO_GROUP] = "no_group",
	[ISTH_WAN_P_SAME_SITE] = "same_site",
	[ISTH_WAN_P_LINK_LOCAL] = "link_local",
	[ISTH_WAN_P_NO_MAC] = "no_mac",
	[ISTH_WAN_P_TX_FULL] = "tx_full",
	[ISTH_WAN_P_NOMBUF] = "nombuf",
	[ISTH_WAN_P_ARP_REPLIES] = "arp_replies",
	[ISTH_WAN_P_ARP_IGNORED] = "arp_ignored",
};

const char *
isth_wan_link_ctr_name(enum isth_wan_link_ctr c)
{
	return (unsigned int)c < ISTH_WAN_L_NCTR ? link_ctr_names[c] : "?";
}

const char *
isth_wan_port_ctr_name(enum isth_wan_port_ctr c)
{
	return (unsigned int)c < ISTH_WAN_P_NCTR ? port_ctr_names[c] : "?";
}


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

/*
 * Do the planned paths of island j's stream in cycle round r (next hops
 * per destination in @tab, j's clique as destinations) form a tree, every
 * site entered over one link? Where two of them part and meet again, a
 * multicast copy is split where they part and each part crosses the
 * shared links after the meeting site: two copies where the planner
 * (network replication, m_je in {0,1}) counted one, so the plan's link
 * loads would not be what runs. lib/plan keeps such routes trees and
 * refuses others (isth_plan_check()); a file that rejoins was not written
 * by it for network replication. With a group table (@multicast: the
 * edges send to groups, network replication) it is refused: -EINVAL, the
 * message naming round, sender and site on stderr. Without one the
 * streams are unicast (edge replication: one copy per destination, each
 * on its own path, where rejoining costs nothing the plan did not count),
 * so it is only a warning, and 0.
 */
static int
rejoins(const struct isth_wan *w, const struct isth_sched *sc, int r, int j, const int *site,
	const int16_t *tab, bool multicast)
{
	int n = w->n, ni = isth_sched_n_islands(sc), in[ISTH_WAN_MAX_SITES], i, v, hop;
	uint64_t cl = isth_sched_clique(sc, r, j);

	for (v = 0; v < n; v++)
		in[v] = -1;
	for (i = 0; i < ni; i++) {
		if (i == j || !(cl >> i & 1))
			continue;
		for (v = site[j], hop = 0; v != site[i] && hop < n; hop++) {
			int e = tab[v * n + site[i]], to;

			if (e < 0)
				break;
			to = w->links[e].to;
			if (in[to] >= 0 && in[to] != e) {
				fprintf(stderr,
					"isthmus-wan: %sschedule round %d: the planned paths of "
					"%s's stream rejoin at %s (entered from %s and from %s), "
					"so a multicast copy would cross the links after it "
					"twice%s\n",
					multicast ? "" : "warning: ", r,
					isth_sched_island_name(sc, j), isth_topo_name(w->t, to),
					isth_topo_name(w->t, w->links[in[to]].from),
					isth_topo_name(w->t, w->links[e].from),
					multicast ? "; refused with a group table (network "
						    "replication): not a tree"
						  : "; harmless for unicast fan-out (edge "
						    "replication)");
				return multicast ? -EINVAL : 0;
			}
			in[to] = e;
			v = to;
		}
	}
	return 0;
}

/*
 * Per-round routes from the schedule's 'route' lines (params.sched): for
 * each cycle round r and ingress site j whose planned paths differ from
 * the shortest ones, a tree (a copy of j's shortest-path table with the
 * planned next hops towards each routed destination) is appended to w->nh,
 * and rtree[r * n + j] names it; equal tables of one site are shared.
 * Next hops are per destination, as for shortest paths: a multicast copy
 * splits where the planned paths of its destinations part, so each link of
 * a tree carries it once; routes that part and meet again are refused with
 * @multicast (a group table) and warned of without (rejoins()). 0, -EINVAL
 * (a schedule island that is no site, a route over a pair of sites with no
 * link between them, or a rejoin with @multicast; the message goes to
 * stderr), or -ENOMEM.
 */
static int
build_routes(struct isth_wan *w, const struct isth_sched *sc, uint64_t epoch_tsc, bool multicast)
{
	int n = w->n, ni = isth_sched_n_islands(sc), r, j, i, k, e, np;
	int site[ISTH_WAN_MAX_SITES], hops[ISTH_WAN_MAX_SITES], path[ISTH_WAN_MAX_SITES];
	int16_t *lk = NULL, *tab = NULL;
	size_t tsz = (size_t)n * n;
	int ret = -ENOMEM;

	w->nrc = isth_sched_n_rounds(sc);
	w->round_cyc = (double)isth_sched_round_ns(sc) * 1e-9 * (double)w->hz;
	w->epoch_tsc = epoch_tsc;
	if (ni > n || w->nrc < 1 || !(w->round_cyc > 0))
		goto inval_msg;
	for (i = 0; i < ni; i++) {
		site[i] = -1;
		for (k = 0; k < n; k++)
			if (strcmp(isth_sched_island_name(sc, i), isth_topo_name(w->t, k)) == 0)
				site[i] = k;
		if (site[i] < 0) {
			fprintf(stderr,
				"isthmus-wan: schedule island %s is no site of the topology\n",
				isth_sched_island_name(sc, i));
			return -EINVAL;
		}
	}
	lk = malloc(tsz * sizeof(*lk));
	tab = malloc(tsz * sizeof(*tab));
	w->rtree = malloc((size_t)w->nrc * n * sizeof(*w->rtree));
	if (lk == NULL || tab == NULL || w->rtree == NULL)
		goto out;
	for (k = 0; k < (int)tsz; k++)
		lk[k] = -1;
	for (e = 0; e < w->ndl; e++)
		lk[w->links[e].from * n + w->links[e].to] = (int16_t)e;
	for (r = 0; r < w->nrc; r++) {
		for (k = 0; k < n; k++)
			w->rtree[(size_t)r * n + k] = k;
		for (j = 0; j < ni; j++) {
			int sj = site[j], changed = 0, tr;

			memcpy(tab, &w->nh[(size_t)sj * tsz], tsz * sizeof(*tab));
			for (i = 0; i < ni; i++) {
				if (i == j)
					continue;
				np = isth_sched_route(sc, r, j, i, hops, ISTH_WAN_MAX_SITES);
				if (np == -ENOENT)
					continue;
				if (np < 2)
					goto inval_msg;
				for (k = 0; k + 1 < np; k++) {
					int a = site[hops[k]], b = site[hops[k + 1]];

					if (lk[a * n + b] < 0) {
						fprintf(stderr,
							"isthmus-wan: schedule round %d route "
							"%s->%s: no "
							"link %s->%s in the topology\n",
							r, isth_sched_island_name(sc, j),
							isth_sched_island_name(sc, i),
							isth_topo_name(w->t, a),
							isth_topo_name(w->t, b));
						ret = -EINVAL;
						goto out;
					}
					path[k] = lk[a * n + b];
					changed |= tab[a * n + site[i]] != path[k];
					tab[a * n + site[i]] = (int16_t)path[k];
				}
			}
			if (rejoins(w, sc, r, j, site, tab, multicast) < 0) {
				ret = -EINVAL;
				goto out;
			}
			if (!changed)
				continue;
			/* share a table equal to one already built for this site */
			for (tr = n; tr < w->ntrees; tr++)
				if (w->tree_site[tr] == sj &&
					memcmp(&w->nh[(size_t)tr * tsz], tab, tsz * sizeof(*tab)) ==
						0)
					break;
			if (tr == w->ntrees) {
				int16_t *nh = realloc(w->nh, (size_t)(tr + 1) * tsz * sizeof(*nh));
				int *ts = realloc(w->tree_site, (size_t)(tr + 1) * sizeof(*ts));

				if (nh != NULL)
					w->nh = nh;
				if (ts != NULL)
					w->tree_site = ts;
				if (nh == NULL || ts == NULL)
					goto out;
				memcpy(&w->nh[(size_t)tr * tsz], tab, tsz * sizeof(*tab));
				w->tree_site[tr] = sj;
				w->ntrees++;
			}
			w->rtree[(size_t)r * n + sj] = tr;
		}
	}
	ret = 0;
	goto out;
inval_msg:
	fprintf(stderr, "isthmus-wan: schedule does not fit the topology\n");
	ret = -EINVAL;
out:
	free(lk);
	free(tab);
	return ret;
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

/* ------------------------------------------------------------------ */
/* Control path                                                        */
/* ------------------------------------------------------------------ */

static int
port_lookup(const char *dev, uint16_t *port)
{
	unsigned long v;
	char *end;

	if (rte_eth_dev_get_port_by_name(dev, port) == 0)
		return 0;
	errno = 0;
	v = strtoul(dev, &end, 10);
	if (*dev != '\0' && *end == '\0' && errno == 0 && v < RTE_MAX_ETHPORTS &&
		rte_eth_dev_is_valid_port((uint16_t)v)) {
		*port = (uint16_t)v;
		return 0;
	}
	return -ENODEV;
}

static int
cmp_group(const void *a, const void *b)
{
	const struct isth_wan_group *x = a, *y = b;

	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

void
isth_wan_free(struct isth_wan *w)
{
	struct isth_wan *expect = w;
	int e, k, s;

	if (w == NULL)
		return;
	/* the caller has stopped polling; telemetry may still be asked */
	__atomic_compare_exchange_n(
		&tel_wan, &expect, NULL, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	for (e = 0; w->links != NULL && e < w->ndl; e++) {
		for (k = 0; k < LANES; k++) {
			struct lane *l = &w->links[e].lane[k];

			if (l->ring == NULL)
				continue;
			for (; l->head != l->tail; l->head++)
				rte_pktmbuf_free(l->ring[l->head & l->mask].m);
			free(l->ring);
		}
	}
	for (s = 0; s < ISTH_WAN_MAX_SITES; s++)
		for (k = 0; k < w->site[s].ntx; k++)
			rte_pktmbuf_free(w->site[s].txb[k]);
	rte_lpm_free(w->lpm);
	free(w->links);
	free(w->heap);
	free(w->nh);
	free(w->tree_site);
	free(w->rtree);
	free(w->group_ip);
	free(w->group_members);
	free(w);
}

struct isth_wan *
isth_wan_create(const struct isth_topo *t, const struct isth_wan_sitemap *map,
	const struct isth_wan_groups *groups, const struct isth_wan_impair *imp,
	const struct isth_wan_params *p)
{
	static unsigned int instance;
	struct rte_lpm_config lc = {.max_rules = ISTH_WAN_MAX_SITES * ISTH_WAN_MAX_NETS,
		.number_tbl8s = ISTH_WAN_MAX_SITES * ISTH_WAN_MAX_NETS};
	int path[ISTH_WAN_MAX_SITES], n, ndl, e, k, s, d, np, i, err;
	struct isth_wan_group *sorted = NULL;
	uint32_t lanes = LANE_DEFAULT;
	struct isth_wan *w;
	char name[RTE_LPM_NAMESIZE];

	if (t == NULL || map == NULL || imp == NULL || p == NULL || p->pool == NULL ||
		!(p->scale > 0) || !isfinite(p->scale) ||
		(p->lane_entries != 0 && !rte_is_power_of_2(p->lane_entries)) ||
		(groups != NULL && (groups->n < 0 || groups->n > ISTH_WAN_MAX_GROUPS))) {
		rte_errno = EINVAL;
		return NULL;
	}
	n = isth_topo_n(t);
	ndl = isth_topo_ndlinks(t);
	if (n < 2 || n > ISTH_WAN_MAX_SITES || ndl < 2 || ndl > INT16_MAX) {
		rte_errno = EINVAL;
		return NULL;
	}
	for (s = 0; s < n; s++) {
		const struct isth_wan_site_conf *sc = &map->site[s];
		uint16_t port;

		if (!sc->present)
			continue;
		if (sc->nnets < 1 || sc->nnets > ISTH_WAN_MAX_NETS) {
			rte_errno = EINVAL;
			return NULL;
		}
		if (port_lookup(sc->dev, &port) < 0) {
			rte_errno = ENODEV;
			return NULL;
		}
	}
	if (p->lane_entries)
		lanes = p->lane_entries;

	w = calloc(1, sizeof(*w));
	if (w == NULL)
		goto nomem;
	w->t = t;
	w->n = n;
	w->ndl = ndl;
	w->hz = p->tsc_hz ? p->tsc_hz : rte_get_tsc_hz();
	w->dec_ttl = p->decrement_ttl;
	w->pool = p->pool;
	w->links = calloc(ndl, sizeof(*w->links));
	w->heap = calloc((size_t)ndl * LANES, sizeof(*w->heap));
	w->nh = malloc((size_t)n * n * n * sizeof(*w->nh));
	if (w->links == NULL || w->heap == NULL || w->nh == NULL)
		goto nomem;

	for (e = 0; e < ndl; e++) {
		struct link *L = &w->links[e];
		double lat_ms, cap_bps;

		isth_topo_dlink(t, e, &L->from, &L->to, &lat_ms, &cap_bps);
		L->imp = imp[e];
		L->lat_cyc = lat_ms * 1e-3 * (double)w->hz;
		L->cyc_per_byte = 8.0 * (double)w->hz / (cap_bps / p->scale);
		L->jitter_cyc = imp[e].jitter_ms * 1e-3 * (double)w->hz;
		L->reorder_cyc = imp[e].reorder_ms * 1e-3 * (double)w->hz;
		L->qlimit = imp[e].queue_bytes;
		L->pqlimit = imp[e].prio_queue_bytes;
		wan_prng_seed(L->rng, p->seed, (uint64_t)e);
		isth_topo_dlink_name(t, e, L->name, sizeof(L->name));
		for (k = 0; k < LANES; k++) {
			L->lane[k].ring = calloc(lanes, sizeof(struct ent));
			if (L->lane[k].ring == NULL)
				goto nomem;
			L->lane[k].mask = lanes - 1;
			L->lane[k].hpos = -1;
			L->lane[k].link = e;
		}
	}

	w->tree_site = malloc((size_t)n * sizeof(*w->tree_site));
	if (w->tree_site == NULL)
		goto nomem;
	w->ntrees = n;
	for (s = 0; s < n; s++)
		w->tree_site[s] = s;
	for (i = 0; i < n * n * n; i++)
		w->nh[i] = -1;
	for (s = 0; s < n; s++) {
		for (d = 0; d < n; d++) {
			int v = s;

			if (d == s)
				continue;
			np = isth_topo_path(t, s, d, path, ISTH_WAN_MAX_SITES);
			for (k = 0; k < np; k++) {
				w->nh[((size_t)s * n + v) * n + d] = (int16_t)path[k];
				v = w->links[path[k]].to;
			}
		}
	}

	if (p->sched != NULL) {
		err = build_routes(w, p->sched, p->epoch_tsc, groups != NULL && groups->n > 0);
		if (err == -ENOMEM)
			goto nomem;
		if (err < 0)
			goto fail_inval;
	}

	snprintf(name, sizeof(name), "isth_wan_%u", instance++);
	w->lpm = rte_lpm_create(name, SOCKET_ID_ANY, &lc);
	if (w->lpm == NULL)
		goto fail;
	for (s = 0; s < n; s++) {
		const struct isth_wan_site_conf *sc = &map->site[s];
		struct site *S = &w->site[s];

		if (!sc->present)
			continue;
		S->present = true;
		port_lookup(sc->dev, &S->port);
		S->mac_learn = sc->mac_learn;
		S->mac_known = !sc->mac_learn;
		memcpy(S->mac.addr_bytes, sc->mac, 6);
		if (sc->gw_mac_set)
			memcpy(S->gw_mac.addr_bytes, sc->gw_mac, 6);
		else if (rte_eth_macaddr_get(S->port, &S->gw_mac) != 0)
			goto fail_inval;
		S->gw_ip = sc->gw_ip;
		S->nnets = sc->nnets;
		for (k = 0; k < sc->nnets; k++) {
			S->mask[k] = sc->plen[k] == 32 ? UINT32_MAX : ~(UINT32_MAX >> sc->plen[k]);
			S->net[k] = sc->net[k] & S->mask[k];
			err = rte_lpm_add(w->lpm, S->net[k], sc->plen[k], (uint32_t)s);
			if (err < 0) {
				rte_errno = -err;
				goto fail;
			}
		}
	}

	if (groups != NULL && groups->n > 0) {
		sorted = malloc(groups->n * sizeof(*sorted));
		w->group_ip = malloc(groups->n * sizeof(*w->group_ip));
		w->group_members = malloc(groups->n * sizeof(*w->group_members));
		if (sorted == NULL || w->group_ip == NULL || w->group_members == NULL)
			goto nomem;
		memcpy(sorted, groups->g, groups->n * sizeof(*sorted));
		qsort(sorted, groups->n, sizeof(*sorted), cmp_group);
		for (i = 0; i < groups->n; i++) {
			if (i > 0 && sorted[i].ip == sorted[i - 1].ip)
				goto fail_inval;
			w->group_ip[i] = sorted[i].ip;
			/* only sites with a port can receive */
			w->group_members[i] = 0;
			for (s = 0; s < n; s++)
				if ((sorted[i].members >> s & 1) && map->site[s].present)
					w->group_members[i] |= UINT64_C(1) << s;
		}
		w->ngroups = groups->n;
		free(sorted);
	}
	return w;

nomem:
	rte_errno = ENOMEM;
	goto fail;
fail_inval:
	rte_errno = EINVAL;
fail:
	free(sorted);
	isth_wan_free(w);
	return NULL;
}

uint64_t
isth_wan_hz(const struct isth_wan *w)
{
	return w->hz;
}

const struct isth_topo *
isth_wan_topo(const struct isth_wan *w)
{
	return w->t;
}

int
isth_wan_site_port(const struct isth_wan *w, int s)
{
	if (w == NULL || s < 0 || s >= w->n || !w->site[s].present)
		return -ENODEV;
	return w->site[s].port;
}

int
isth_wan_link_stats(const struct isth_wan *w, int e, struct isth_wan_link_stats *out)
{
	const struct isth_wan_link_stats *st;
	int k;

	if (w == NULL || out == NULL || e < 0 || e >= w->ndl)
		return -EINVAL;
	st = &w->links[e].st;
	out->pkts = isth_ctr_get(&st->pkts);
	out->bytes = isth_ctr_get(&st->bytes);
	out->queue_hw_bytes = isth_ctr_get(&st->queue_hw_bytes);
	for (k = 0; k < ISTH_WAN_L_NCTR; k++)
		out->ctr[k] = isth_ctr_get(&st->ctr[k]);
	return 0;
}

int
isth_wan_port_stats(const struct isth_wan *w, int s, struct isth_wan_port_stats *out)
{
	const struct isth_wan_port_stats *st;
	int k;

	if (w == NULL || out == NULL || s < 0 || s >= w->n)
		return -EINVAL;
	if (!w->site[s].present)
		return -ENODEV;
	st = &w->site[s].st;
	out->rx_pkts = isth_ctr_get(&st->rx_pkts);
	out->rx_bytes = isth_ctr_get(&st->rx_bytes);
	out->tx_pkts = isth_ctr_get(&st->tx_pkts);
	out->tx_bytes = isth_ctr_get(&st->tx_bytes);
	for (k = 0; k < ISTH_WAN_P_NCTR; k++)
		out->ctr[k] = isth_ctr_get(&st->ctr[k]);
	return 0;
}

void
isth_wan_print_stats(const struct isth_wan *w, FILE *f)
{
	struct isth_wan_link_stats ls;
	struct isth_wan_port_stats ps;
	int e, s, k;

	fprintf(f, "%-20s %12s %14s %12s", "link", "pkts", "bytes", "queue_hw_B");
	for (k = 0; k < ISTH_WAN_L_NCTR; k++)
		fprintf(f, " %s", link_ctr_names[k]);
	fprintf(f, "\n");
	for (e = 0; e < w->ndl; e++) {
		isth_wan_link_stats(w, e, &ls);
		fprintf(f, "%-20s %12" PRIu64 " %14" PRIu64 " %12" PRIu64, w->links[e].name,
			ls.pkts, ls.bytes, ls.queue_hw_bytes);
		for (k = 0; k < ISTH_WAN_L_NCTR; k++)
			fprintf(f, " %*" PRIu64, (int)strlen(link_ctr_names[k]), ls.ctr[k]);
		fprintf(f, "\n");
	}
	fprintf(f, "%-12s %5s %12s %14s %12s %14s", "site", "port", "rx_pkts", "rx_bytes",
		"tx_pkts", "tx_bytes");
	for (k = 0; k < ISTH_WAN_P_NCTR; k++)
		fprintf(f, " %s", port_ctr_names[k]);
	fprintf(f, "\n");
	for (s = 0; s < w->n; s++) {
		if (isth_wan_port_stats(w, s, &ps) < 0)
			continue;
		fprintf(f, "%-12s %5u %12" PRIu64 " %14" PRIu64 " %12" PRIu64 " %14" PRIu64,
			isth_topo_name(w->t, s), w->site[s].port, ps.rx_pkts, ps.rx_bytes,
			ps.tx_pkts, ps.tx_bytes);
		for (k = 0; k < ISTH_WAN_P_NCTR; k++)
			fprintf(f, " %*" PRIu64, (int)strlen(port_ctr_names[k]), ps.ctr[k]);
		fprintf(f, "\n");
	}
}

void
isth_wan_print_routes(const struct isth_wan *w, FILE *f)
{
	int e, s, d, g, v;

	fprintf(f, "links (capacity after --scale):\n");
	for (e = 0; e < w->ndl; e++) {
		const struct link *L = &w->links[e];

		fprintf(f, "  %-20s %9.3f ms %12.0f bit/s queue %" PRIu64 " B", L->name,
			L->lat_cyc * 1e3 / (double)w->hz, 8.0 * (double)w->hz / L->cyc_per_byte,
			L->qlimit);
		if (L->pqlimit)
			fprintf(f, " priority (EF) queue %" PRIu64 " B", L->pqlimit);
		fprintf(f, "\n");
	}
	fprintf(f, "unicast routes:\n");
	for (s = 0; s < w->n; s++) {
		if (!w->site[s].present)
			continue;
		for (d = 0; d < w->n; d++) {
			if (d == s || !w->site[d].present)
				continue;
			fprintf(f, "  %s -> %s:", isth_topo_name(w->t, s), isth_topo_name(w->t, d));
			for (v = s; v != d;
				v = w->links[w->nh[((size_t)s * w->n + v) * w->n + d]].to)
				fprintf(f, " %s",
					w->links[w->nh[((size_t)s * w->n + v) * w->n + d]].name);
			fprintf(f, " (%.3f ms)\n", isth_topo_latency(w->t, s, d));
		}
	}
	fprintf(f, "multicast trees:\n");
	for (g = 0; g < w->ngroups; g++) {
		uint32_t ip = w->group_ip[g];

		for (s = 0; s < w->n; s++) {
			uint64_t used[(INT16_MAX + 64) / 64];
			uint64_t m = w->group_members[g] & ~(UINT64_C(1) << s);

			if (!w->site[s].present || !(w->group_members[g] >> s & 1))
				continue;
			memset(used, 0, sizeof(uint64_t) * ((w->ndl + 63) / 64));
			fprintf(f, "  %u.%u.%u.%u from %s:", ip >> 24, (ip >> 16) & 0xff,
				(ip >> 8) & 0xff, ip & 0xff, isth_topo_name(w->t, s));
			for (d = 0; d < w->n; d++) {
				if (!(m >> d & 1))
					continue;
				for (v = s; v != d;) {
					int16_t x = w->nh[((size_t)s * w->n + v) * w->n + d];

					if (!(used[x / 64] >> (x % 64) & 1)) {
						used[x / 64] |= UINT64_C(1) << (x % 64);
						fprintf(f, " %s", w->links[x].name);
					}
					v = w->links[x].to;
				}
			}
			fprintf(f, "\n");
		}
	}
}

/* ------------------------------------------------------------------ */
/* Telemetry                                                           */
/* ------------------------------------------------------------------ */


/* Telemetry names allow [A-Za-z0-9_/] only. */
static void
tel_name(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i] != '\0'; i++) {
		char c = src[i];

		dst[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				 (c >= '0' && c <= '9') || c == '_' || c == '/')
			? c
			: '_';
	}
	dst[i] = '\0';
}

static void
tel_link(const struct isth_wan *w, int e, struct rte_tel_data *d)
{
	struct isth_wan_link_stats ls;
	int k;

	isth_wan_link_stats(w, e, &ls);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "pkts", ls.pkts);
	rte_tel_data_add_dict_u64(d, "bytes", ls.bytes);
	rte_tel_data_add_dict_u64(d, "queue_hw_bytes", ls.queue_hw_bytes);
	for (k = 0; k < ISTH_WAN_L_NCTR; k++)
		rte_tel_data_add_dict_u64(d, link_ctr_names[k], ls.ctr[k]);
}

static int
tel_links(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct isth_wan *w = __atomic_load_n(&tel_wan, __ATOMIC_ACQUIRE);
	char name[RTE_TEL_MAX_STRING_LEN];
	int e, from, to;

	(void)cmd;
	if (w == NULL)
		return -ENODEV;
	if (params != NULL && *params != '\0') {
		/* one link, by index or "A->B" */
		for (e = 0; e < w->ndl; e++) {
			char idx[16];

			snprintf(idx, sizeof(idx), "%d", e);
			if (strcmp(params, idx) == 0 || strcmp(params, w->links[e].name) == 0) {
				tel_link(w, e, d);
				return 0;
			}
		}
		return -EINVAL;
	}
	rte_tel_data_start_dict(d);
	for (e = 0; e < w->ndl && e < RTE_TEL_MAX_DICT_ENTRIES; e++) {
		struct rte_tel_data *c = rte_tel_data_alloc();
		char raw[2 * ISTH_TOPO_NAME_MAX + 2];

		if (c == NULL)
			return -ENOMEM;
		tel_link(w, e, c);
		isth_topo_dlink(w->t, e, &from, &to, NULL, NULL);
		snprintf(raw, sizeof(raw), "%s/%s", isth_topo_name(w->t, from),
			isth_topo_name(w->t, to));
		tel_name(name, sizeof(name), raw);
		if (rte_tel_data_add_dict_container(d, name, c, 0) < 0)
			rte_tel_data_free(c);
	}
	return 0;
}

static int
tel_ports(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct isth_wan *w = __atomic_load_n(&tel_wan, __ATOMIC_ACQUIRE);
	char name[RTE_TEL_MAX_STRING_LEN];
	struct isth_wan_port_stats ps;
	int s, k;

	(void)cmd;
	(void)params;
	if (w == NULL)
		return -ENODEV;
	rte_tel_data_start_dict(d);
	for (s = 0; s < w->n; s++) {
		struct rte_tel_data *c;

		if (isth_wan_port_stats(w, s, &ps) < 0)
			continue;
		c = rte_tel_data_alloc();
		if (c == NULL)
			return -ENOMEM;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_u64(c, "port", w->site[s].port);
		rte_tel_data_add_dict_u64(c, "rx_pkts", ps.rx_pkts);
		rte_tel_data_add_dict_u64(c, "rx_bytes", ps.rx_bytes);
		rte_tel_data_add_dict_u64(c, "tx_pkts", ps.tx_pkts);
		rte_tel_data_add_dict_u64(c, "tx_bytes", ps.tx_bytes);
		for (k = 0; k < ISTH_WAN_P_NCTR; k++)
			rte_tel_data_add_dict_u64(c, port_ctr_names[k], ps.ctr[k]);
		tel_name(name, sizeof(name), isth_topo_name(w->t, s));
		if (rte_tel_data_add_dict_container(d, name, c, 0) < 0)
			rte_tel_data_free(c);
	}
	return 0;
}

int
isth_wan_telemetry_register(struct isth_wan *w)
{
	int rc;

	if (w == NULL)
		return -EINVAL;
	__atomic_store_n(&tel_wan, w, __ATOMIC_RELEASE);
	rc = rte_telemetry_register_cmd("/isthmus_wan/links", tel_links,
		"Per directed link: pkts, bytes, queue_hw_bytes and drops by reason. "
		"Parameter: optional link index or name A->B");
	if (rc < 0)
		return rc;
	return rte_telemetry_register_cmd("/isthmus_wan/ports", tel_ports,
		"Per site port: rx/tx packets and bytes, drops by reason, ARP replies. No "
		"parameters");
}
