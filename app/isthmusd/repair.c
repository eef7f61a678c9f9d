/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * WAN repair between edges (doc/isthmusd.md, "WAN repair"), the serving
 * side: keep the island's DATA as it leaves, publish each round's due
 * times, and serve peers' NACKs from what was kept, within each peer's
 * budget. The asking side (track, NACK with back-off) is repair_nack.c. State: struct isthd_repair (isthd.h). Called by the worker
 * (datapath.c) and, for the per-round due times, by the controller.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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
	uint64_t chunk_bytes = (uint64_t)d->lim.max_elems * 4;

	rp->n_chunks =
		(uint32_t)((isth_sched_payload_bytes(d->sched) + chunk_bytes - 1) / chunk_bytes);
	/* the island's NACK budget: a round's AGGs per round, half per NACK
	 * (the island NACKs again nack_interval later) */
	rp->island_budget = RTE_MAX(rp->n_chunks, 1u);
	rp->island_nack_cap = (rp->island_budget + 1) / 2;
	memset(&rp->island, 0, sizeof(rp->island));
	rp->rx_words = rp->n_chunks / 64 + 1;
	if (isthd_repair_tables_init(d) < 0) {
		snprintf(err, err_size, "WAN repair: round tables: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	rp->trace = getenv("ISTHD_REPAIR_TRACE") != NULL;
	if (!d->cfg.wan_repair)
		return 0;
	rp->rx = rte_zmalloc("isthd_rx", 4 * d->n_islands * sizeof(*rp->rx), 0);
	rp->rx_bits = rte_zmalloc(
		"isthd_rx_bits", 4ull * d->n_islands * rp->rx_words * sizeof(uint64_t), 0);
	/* a round's first ISTHD_SERVED_CHUNKS chunks only: beyond them
	 * (a payload of more than ~5.6 MB at mtu 1500) every repair is
	 * charged, so that the state stays small (at most 4 MiB a worker) */
	rp->served_chunks = rp->n_chunks < ISTHD_SERVED_CHUNKS ? rp->n_chunks : ISTHD_SERVED_CHUNKS;
	if (rp->served_chunks == 0)
		rp->served_chunks = 1;
	if (rp->rx == NULL || rp->rx_bits == NULL) {
		snprintf(err, err_size, "WAN repair state (%u chunks x %u islands): %s",
			rp->n_chunks, d->n_islands, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < 4 * d->n_islands; i++)
		rp->rx[i].round = UINT64_MAX;
	rp->peer_max = isthd_repair_peer_max(d);
	return 0;
}

/*
 * Worker k's egress (struct isthd_egress): a pacer of its own, fed the
 * round's whole plan by the controller (control.c, publish_pace), and
 * with [wan] repair a ring of the DATA it released and the budget tables
 * of its peers. The ring: a peer may NACK a chunk until the round's end +
 * round_slack (isthd_repair_publish), and a round's first chunk leaves at
 * its start, so every chunk is kept at least that long. No linger: the
 * ring is shared by the worker's peers, and a linger would refuse peer B
 * a chunk repaired to peer A just before; and the copies of a last-chance
 * NACK (last_nack_copies) each bring a repair, so that one lost repair
 * does not cost the chunk. The per-peer budget still bounds what NACKs
 * can get.
 */
int
isthd_egress_init(struct isthd *d, unsigned int k, char *err, size_t err_size)
{
	struct isthd_egress *eg = isthd_egress_of(d, k);
	struct isth_pace_conf pc;
	struct isth_resend_conf rc;

	memset(eg, 0, sizeof(*eg));
	eg->base[0].round = eg->base[1].round = UINT64_MAX;
	eg->tail[0].round = eg->tail[1].round = UINT64_MAX;
	memset(&pc, 0, sizeof(pc));
	pc.tsc_hz = d->clk.tsc_hz;
	pc.queue_size = d->cfg.pace_queue;
	pc.burst_bytes = d->cfg.pace_burst;
	pc.late_tol_ns = d->cfg.pace_late_ns;
	/* plans per round slot on lib/rtab; the worker, the owner, reports
	 * on d->qs like every round table's reader */
	pc.plan_slots = ISTH_PACE_PLAN_SLOTS;
	pc.qs = d->qs;
	eg->pace = isth_pace_create(&pc);
	if (eg->pace == NULL) {
		snprintf(err, err_size, "pacer of worker %u: %s", k, strerror(errno));
		return -errno;
	}
	if (!d->cfg.wan_repair)
		return 0;
	memset(&rc, 0, sizeof(rc));
	rc.size = d->cfg.resend_entries;
	rc.window_ns =
		RTE_MAX(d->cfg.resend_window_ns, d->clk.round_ns + d->cfg.agg_round_slack_ns);
	rc.linger_ns = 0;
	rc.socket_id = (int)rte_socket_id();
	rc.hdr_off = 0; /* bare messages */
	rc.hdr_pool = d->hdr_pool;
	eg->ring = isth_resend_create(&rc);
	eg->served = rte_zmalloc("isthd_served",
		2ull * d->n_islands * d->rep.served_chunks * sizeof(*eg->served), 0);
	if (eg->ring == NULL || eg->served == NULL) {
		snprintf(err, err_size, "WAN repair ring of worker %u (%u chunks x %u islands): %s",
			k, d->rep.n_chunks, d->n_islands, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	return 0;
}

void
isthd_egress_fini(struct isthd_egress *eg)
{
	void *objs[64];
	unsigned int n;

	if (eg->pace) {
		while ((n = isth_pace_flush(eg->pace, objs, RTE_DIM(objs))) > 0)
			rte_pktmbuf_free_bulk((struct rte_mbuf **)objs, n);
		isth_pace_destroy(eg->pace);
		eg->pace = NULL;
	}
	isth_resend_destroy(eg->ring);
	eg->ring = NULL;
	rte_free(eg->served);
	eg->served = NULL;
}

int
isthd_repair_tables_init(struct isthd *d)
{
	/* a spare per slot: a worker may hold round r's table while r + 4
	 * is published */
	struct isth_rtab_params p = {
		.n_slots = 4,
		.n_spare = 4,
		.size = sizeof(struct isthd_repair_round),
		.qs = d->qs,
	};

	if (d->rep.rtab != NULL)
		return 0;
	d->rep.rtab = isth_rtab_create(&p);
	return d->rep.rtab != NULL ? 0 : -ENOMEM;
}

void
isthd_repair_fini(struct isthd *d)
{
	isth_rtab_destroy(d->rep.rtab);
	d->rep.rtab = NULL;
	rte_free(d->rep.rx);
	rte_free(d->rep.rx_bits);
	d->rep.rx = NULL;
	d->rep.rx_bits = NULL;
}

/* Keep the island's DATA @m[0..n) as worker k's pacer releases it (@eg:
 * worker k's; every chunk of the rounds it has peers in, in order): chunk
 * c of round r is kept as sequence base(r) + c (struct isthd_keep_map). */
void
isthd_repair_keep(struct isthd *d, struct isthd_egress *eg, struct rte_mbuf **m, unsigned int n,
	uint64_t now_ns)
{
	for (unsigned int i = 0; i < n; i++) {
		const uint8_t *h = rte_pktmbuf_mtod(m[i], const uint8_t *);
		uint64_t r = isth_wire_get_hdr_round(h);
		uint32_t c = isth_wire_get_hdr_chunk(h);
		uint64_t seq = isth_resend_next_seq(eg->ring);
		struct isthd_keep_map *b = &eg->base[r & 1];

		if (b->round != r) {
			b->round = r;
			b->n_seg = 1;
			b->seg[0].from = c;
			b->seg[0].base = seq - c;
		} else if (b->seg[b->n_seg - 1].base + c != seq && b->n_seg < ISTHD_KEEP_SEGS) {
			/* a chunk before it never got here: a new segment */
			b->seg[b->n_seg].from = c;
			b->seg[b->n_seg].base = seq - c;
			b->n_seg++;
		}
		isth_resend_push(eg->ring, m[i], now_ns, NULL);
		/* the stream's last chunk: its tail goes again, unasked,
		 * tail_copies_after from now (isthd_repair_tail_copies) */
		if (d->cfg.wan_tail_copies && isth_wire_get_hdr_chunk(h) + 1 == d->rep.n_chunks) {
			eg->tail[r & 1].round = r;
			eg->tail[r & 1].at_ns = now_ns + d->cfg.wan_tail_copies_after_ns;
			if (eg->tail[r & 1].at_ns == 0)
				eg->tail[r & 1].at_ns = 1;
		}
	}
}

/*
 * Controller, before round @r is published: the expected senders (@v's
 * peers) and, per sender, the times WAN repair works with (struct
 * isthd_repair_round), from the round view @v and the peer's latency.
 * Written in a table no worker sees, published with release (lib/rtab).
 */
int
isthd_repair_publish(struct isthd *d, const struct isth_sched_round_view *v, uint64_t r)
{
	struct isthd_repair *rp = &d->rep;
	uint64_t T = v->round_ns, bits = v->payload_bytes * 8;
	uint64_t chunk_bits = (uint64_t)d->lim.max_elems * 32;
	struct isthd_repair_round *rt;
	unsigned int i;

	rt = isth_rtab_prepare(rp->rtab);
	if (rt == NULL)
		return -EBUSY;
	memset(rt, 0, sizeof(*rt));
	rt->round = r;
	rt->expected = v->peers;
	for (i = 0; i < d->n_islands && i < ISTHD_MAX_PEERS; i++) {
		uint64_t off = v->snd[i].offset_ns, rate = v->snd[i].rate_bps;
		uint64_t lat = 0, at, cut, bo;
		bool planned;

		if (!(v->peers & (1ull << i)))
			continue;
		if (d->peer_of[i])
			lat = d->peer_of[i]->latency_ns;
		planned = v->snd[i].n_segs >= 1 && rate > 0;
		/* A repair is summed until the round's unfinished chunks leave
		 * (its end + round_slack): the last NACK that can still bring
		 * one leaves a round trip and repair_before (queueing, the
		 * worker's pass) before that. Without a latency, NACKing
		 * stops repair_before the end. */
		if (lat) {
			/* the serving edge keeps a round's base for two rounds */
			uint64_t end = T + RTE_MIN(d->cfg.agg_round_slack_ns, T);
			uint64_t need = 2 * lat + d->cfg.wan_repair_before_ns;

			cut = end > need ? end - need : 0;
		} else {
			cut = T > d->cfg.wan_repair_before_ns ? T - d->cfg.wan_repair_before_ns : 0;
		}
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
		rt->tail_at[i] = at;
		rt->cutoff[i] = cut;
		rt->chunk_ns[i] =
			planned ? (uint64_t)((__uint128_t)chunk_bits * 1000000000ull / rate) : 0;
		rt->backoff_ns[i] = bo;
	}
	return isth_rtab_publish(rp->rtab, (uint32_t)(r & 3), rt);
}

/* The ring seq at which @b keeps chunk @c, or UINT64_MAX if none. */
static inline uint64_t
keep_seq(const struct isthd_keep_map *b, uint64_t r, uint64_t c)
{
	if (b->round != r || b->n_seg == 0 || c < b->seg[0].from)
		return UINT64_MAX;
	for (unsigned int i = b->n_seg; i-- > 0;) {
		if (b->seg[i].from > c)
			continue;
		/* a chunk between two segments never reached the ring: its
		 * seq would be the next segment's first */
		if (i + 1 < b->n_seg &&
			b->seg[i].base + c >= b->seg[i + 1].base + b->seg[i + 1].from)
			return UINT64_MAX;
		return b->seg[i].base + c;
	}
	return UINT64_MAX;
}

/*
 * A linear frame to peer edge @peer carrying the message in @msg (any
 * chain), with a UDP checksum: repairs and NACKs are rare, so they are
 * copied rather than chained (which also suits PMDs without chains).
 */
struct rte_mbuf *
isthd_repair_frame_to_peer(struct isthd *d, struct isth_auth_engine *eng,
	const struct isthd_peer *peer, const struct rte_mbuf *msg)
{
	uint32_t len = rte_pktmbuf_pkt_len(msg), cap;
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
	/* [wan] repair_dscp (EF): a WAN with a priority class sends repairs
	 * and NACKs ahead of the DATA queued at its bottlenecks, so that a
	 * repair's round trip is the path's, not its queue's */
	a.dscp = d->cfg.wan_repair_dscp;
	hs = isth_wire_frame_hdr_size(&a);
	/* auth on: a message not sealed yet (a NACK) gains its tag here */
	cap = len +
		(d->auth.on && len > ISTH_WIRE_OFF_VERSION &&
					rte_pktmbuf_mtod(
						msg, const uint8_t *)[ISTH_WIRE_OFF_VERSION] !=
						ISTH_WIRE_VERSION_AUTH
				? ISTH_AUTH_TAG_SIZE
				: 0);
	m = rte_pktmbuf_alloc(d->pool);
	if (m == NULL || hs + cap > rte_pktmbuf_tailroom(m)) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(hs + cap));
	/* rte_pktmbuf_read copies only a chain; a single segment it points at */
	src = rte_pktmbuf_read(msg, 0, len, p + hs);
	if (src != p + hs)
		rte_memcpy(p + hs, src, len);
	/* sealed after the last header change (a repair's RESENT): the same
	 * bytes for every retransmission of one message */
	if (d->auth.on) {
		int sl = eng != NULL ? isthd_auth_seal_msg(d, eng, ISTH_AUTH_WAN, p + hs, len, cap)
				     : -EINVAL;

		if (sl < 0) {
			rte_pktmbuf_free(m);
			return NULL;
		}
		len = (uint32_t)sl;
	}
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

static uint32_t serve_chunks(struct isthd *d, unsigned int k, const struct isthd_peer *peer,
	uint64_t r, struct isth_wire_range *want, unsigned int n, uint64_t now_ns);

/*
 * The most chunk repairs NACKs can get one peer per round of our island's
 * DATA (isthd_repair_serve): a first repair of a tracked chunk (the first
 * served_chunks), and any repair of another chunk, is charged to the
 * budget (budget_chunks); a tracked chunk's further repairs, at most
 * repair_attempts - 1 of them, to the repeat allowance (budget_chunks
 * too). With t of the round's n chunks tracked:
 *   (t < n ? budget_chunks : n) + min(budget_chunks, (repair_attempts - 1) x t)
 * For n <= 4096 (t = n) and repair_attempts >= 3 that is n +
 * budget_chunks = 2 n + max(n / 4, 2): 2.25 times one round's stream
 * (n >= 8).
 */
uint64_t
isthd_repair_peer_max(const struct isthd *d)
{
	uint64_t n = d->shape.n_chunks, budget = d->rep.budget_chunks;
	uint64_t tracked = RTE_MIN((uint64_t)d->rep.served_chunks, n);
	uint64_t repeats = (uint64_t)(d->cfg.wan_repair_attempts - 1) * tracked;
	/* charged: each tracked chunk once, an untracked one any number of
	 * times, if the round has any */
	uint64_t first = n > tracked ? budget : RTE_MIN(n, budget);

	if (!d->cfg.wan_repair)
		return 0;
	return first + RTE_MIN(repeats, budget);
}

/*
 * A peer edge NACKs chunks of our island's DATA: resend them to it, if the
 * NACK is from that peer's configured address, the peer is in the round's
 * clique, and within its repair allowance for the round, each chunk at
 * most once per NACK. Per peer and round:
 *  - a chunk's first repair is charged to the peer's budget (budget_chunks:
 *    one round's stream and a quarter), so a round's every chunk can be
 *    repaired once whatever came before;
 *  - a chunk repaired already (of the round's first served_chunks) is
 *    repaired again from a repeat allowance of as many (budget_chunks),
 *    and at most [wan] repair_attempts times in all (drop_repair_attempts
 *    beyond): a NACK's retry (the asker's back-off is a configured round
 *    trip; a repair that queued takes longer) and a last-chance NACK's
 *    copies ask for the same chunks again. Until session 13 those were
 *    charged to the one budget and spent it before a burst's later
 *    chunks were repaired once (doc/performance.md, section 9);
 *  - any repair of a chunk beyond served_chunks is charged to the budget.
 * What is over the budget or the allowance is refused (drop_repair_budget).
 * So no NACK stream can get a peer more than rep.peer_max repairs a round
 * (isthd_repair_peer_max; doc/isthmusd.md, "Admission"; doc/security.md).
 */
bool
isthd_repair_admit(struct isthd *d, const struct isth_wire_pkt *p, unsigned int *k)
{
	const struct isthd_peer *peer = d->peer_of[p->hdr.sender];
	const struct isthd_repair_round *rt;

	isth_ctr_add(&d->st.peer_nacks_rx, 1);
	if (!d->cfg.wan_repair)
		return false;
	if (peer == NULL || p->addr.src_ip != peer->ip) {
		isth_ctr_add(&d->st.drop[ISTHD_DROP_nack_bad_source], 1);
		return false;
	}
	rt = isthd_repair_round(d, p->hdr.round);
	if (rt == NULL || !(rt->expected & (1ull << p->hdr.sender))) {
		isth_ctr_add(&d->st.drop[ISTHD_DROP_nack_not_clique], 1);
		return false;
	}
	*k = isthd_egress_worker(d, rt->expected, p->hdr.sender);
	return true;
}

void
isthd_repair_serve(struct isthd *d, unsigned int k0, const struct isth_wire_pkt *p, uint64_t now_ns)
{
	struct isth_wire_range want[ISTHD_BURST], acc[ISTHD_BURST];
	struct isthd_egress *eg = isthd_egress_of(d, k0);
	struct isthd_dp_stats *st = isthd_stats_of(d, k0);
	const struct isthd_peer *peer = d->peer_of[p->hdr.sender];
	unsigned int i, k, n = p->hdr.count, cut;
	struct isthd_repair_served *sv;
	struct isthd_repair_budget *b;
	uint64_t r = p->hdr.round, over, spent;
	uint32_t attempts = d->cfg.wan_repair_attempts;

	/* isthd_repair_admit passed it: the peer's address, in the clique */
	if (eg->ring == NULL || eg->base[r & 1].round != r) {
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_gone], 1);
		return;
	}
	if (n > RTE_DIM(want))
		n = RTE_DIM(want);
	for (i = 0; i < n; i++)
		isth_wire_get_range(p, i, &want[i]);
	n = merge_ranges(want, n, d->shape.n_chunks, &cut);
	if (cut) /* chunk ids the round does not have */
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_gone], cut);
	b = &eg->budget[p->hdr.sender][r & 1];
	sv = eg->served + ((size_t)p->hdr.sender * 2 + (r & 1)) * d->rep.served_chunks;
	if (b->round1 != r + 1) {
		b->round1 = r + 1;
		b->used = 0;
		b->repeats = 0;
	}
	over = 0;
	spent = 0;
	k = 0;
	for (i = 0; i < n; i++) {
		for (uint64_t c = want[i].first; c <= want[i].last; c++) {
			struct isthd_repair_served *e = c < d->rep.served_chunks ? &sv[c] : NULL;

			if (e && e->round1 != (uint32_t)(r + 1)) {
				e->round1 = (uint32_t)(r + 1);
				e->serves = 0;
			}
			if (e && e->serves >= attempts) {
				spent++;
				continue;
			}
			if (e && e->serves > 0) {
				if (b->repeats >= d->rep.budget_chunks) {
					over++;
					continue;
				}
				b->repeats++;
			} else {
				if (b->used >= d->rep.budget_chunks) {
					over++;
					continue;
				}
				b->used++;
			}
			if (e)
				e->serves++;
			if (k > 0 && acc[k - 1].last + 1 == c) {
				acc[k - 1].last++;
				continue;
			}
			if (k == RTE_DIM(acc)) {
				serve_chunks(d, k0, peer, r, acc, k, now_ns);
				k = 0;
			}
			acc[k].first = acc[k].last = c;
			k++;
		}
	}
	if (unlikely(d->rep.trace))
		isthd_repair_trace(d,
			"serve r %" PRIu64 " to %u ranges %u first %" PRIu64 " over %" PRIu64
			" spent %" PRIu64 " used %u repeats %u worker %u",
			r, p->hdr.sender, n, n ? want[0].first : 0, over, spent, b->used,
			b->repeats, k0);
	if (over)
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_budget], over);
	if (spent)
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_attempts], spent);
	serve_chunks(d, k0, peer, r, acc, k, now_ns);
}

/*
 * Send peer edge @peer chunks @want[0..n) (chunk ids, merged ranges) of
 * round @r of the island's DATA from worker @w's ring, as repairs
 * (RESENT), one chunk at a time: each kept message must be the chunk
 * asked for (its round and chunk id, not only where the map puts it),
 * else it is refused (repair_mismatch). @return chunks sent.
 */
static uint32_t
serve_chunks(struct isthd *d, unsigned int w, const struct isthd_peer *peer, uint64_t r,
	struct isth_wire_range *want, unsigned int n, uint64_t now_ns)
{
	struct isthd_egress *eg = isthd_egress_of(d, w);
	struct isthd_dp_stats *st = isthd_stats_of(d, w);
	struct isth_auth_engine *eng = isthd_engine_of(d, w);
	struct rte_mbuf *out[ISTHD_BURST];
	uint64_t gone = 0, mismatch = 0;
	unsigned int i, n_out = 0;
	uint32_t sent = 0;

	for (i = 0; i < n; i++) {
		for (uint64_t c = want[i].first; c <= want[i].last; c++) {
			uint64_t seq = keep_seq(&eg->base[r & 1], r, c);
			struct isth_wire_range one = {seq, seq}, g;
			struct isth_resend_cursor cur;
			struct rte_mbuf *m, *f = NULL;
			unsigned int n_gone = 0;
			const uint8_t *h;

			if (seq == UINT64_MAX ||
				isth_resend_nack_begin(eg->ring, &cur, &one, 1) < 0 ||
				isth_resend_nack_serve(
					eg->ring, &cur, now_ns, &m, 1, &g, 1, &n_gone) == 0) {
				gone++; /* not kept, gone from the window, or no mbuf */
				continue;
			}
			h = rte_pktmbuf_mtod(m, const uint8_t *);
			if (isth_wire_get_hdr_round(h) == r && isth_wire_get_hdr_chunk(h) == c)
				f = isthd_repair_frame_to_peer(d, eng, peer, m);
			else
				mismatch++;
			rte_pktmbuf_free(m);
			if (f == NULL)
				continue;
			out[n_out++] = f;
			if (n_out == RTE_DIM(out)) {
				isthd_wan_tx(d, w, out, (uint16_t)n_out, ISTHD_DROP_tx_wan);
				sent += n_out;
				n_out = 0;
			}
		}
	}
	isthd_wan_tx(d, w, out, (uint16_t)n_out, ISTHD_DROP_tx_wan);
	sent += n_out;
	isth_ctr_add(&st->repairs_sent, sent);
	if (gone)
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_gone], gone);
	if (mismatch)
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_mismatch], mismatch);
	return sent;
}

/*
 * The last [wan] tail_copies chunks of the island's DATA of a round go to
 * every peer of the round a second time, tail_copies_after after the last
 * one left, unasked: a chunk lost at the end of a stream is otherwise found
 * missing only when the tail is due plus tail_wait, and repaired a round
 * trip later, which near the deadline leaves one attempt or none. The
 * copies are repairs (RESENT): the aggregation drops the one that comes
 * second (exactly once), and they are not charged to the peers' budgets.
 * Cost: tail_copies / n_chunks of the DATA. @return chunks sent.
 */
unsigned int
isthd_repair_tail_copies(struct isthd *d, unsigned int w, uint64_t now_ns)
{
	struct isthd_egress *eg = isthd_egress_of(d, w);
	struct isthd_dp_stats *st = isthd_stats_of(d, w);
	uint32_t n_chunks = d->rep.n_chunks;
	unsigned int work = 0;

	for (unsigned int i = 0; i < 2; i++) {
		uint64_t r = eg->tail[i].round, expected;
		struct isth_wire_range want;
		uint32_t k;

		if (eg->tail[i].at_ns == 0 || now_ns < eg->tail[i].at_ns)
			continue;
		eg->tail[i].at_ns = 0;
		const struct isthd_repair_round *rt = isthd_repair_round(d, r);

		if (eg->base[r & 1].round != r || rt == NULL)
			continue;
		/* this worker's peers of the round (all with one worker) */
		expected = isthd_egress_peers(d, rt->expected, w);
		k = RTE_MIN(d->cfg.wan_tail_copies, n_chunks);
		for (unsigned int s = 0; s < d->n_islands && s < ISTHD_MAX_PEERS; s++) {
			uint32_t sent;

			if (!(expected & (1ull << s)) || d->peer_of[s] == NULL)
				continue;
			want.first = n_chunks - k;
			want.last = n_chunks - 1;
			sent = serve_chunks(d, w, d->peer_of[s], r, &want, 1, now_ns);
			isth_ctr_add(&st->tail_copies_sent, sent);
			work += sent;
		}
	}
	return work;
}

/*
 * The island's NACKs are served from the AGG rings (datapath.c serve_nack
 * for stream 0, worker.c shard_serve_nack for stream k) within a budget,
 * so that no NACK stream, even from the island's own address, makes the
 * edge send more than one round's AGGs per round: at most
 * island_nack_cap repairs per NACK, and per round of the edge's clock
 * (d->current, whatever round the NACK names) each stream's worker its
 * share of island_budget (1/N, rounded up; @b is that worker's, written by
 * it only). A NACK cut short is counted nack_budget; the island NACKs
 * again later. @return repairs the next NACK may get.
 */
uint32_t
isthd_repair_island_allowance(const struct isthd *d, struct isthd_repair_budget *b)
{
	uint64_t cur = __atomic_load_n(&d->current, __ATOMIC_ACQUIRE);
	uint32_t share = (d->rep.island_budget + d->n_workers - 1) / d->n_workers;
	uint32_t left;

	if (b->round1 != cur + 1) {
		b->round1 = cur + 1;
		b->used = 0;
	}
	left = share > b->used ? share - b->used : 0;
	return left < d->rep.island_nack_cap ? left : d->rep.island_nack_cap;
}

/*
 * One repair event to stderr (doc/isthmusd.md, "WAN repair", diagnosis):
 * only when the environment had ISTHD_REPAIR_TRACE at start-up, for a
 * run whose partial results must be put down to a cause chunk by chunk
 * (what was NACKed when, served, refused, repaired). The line starts with
 * "rt" and the time in ms since the epoch.
 */
void
isthd_repair_trace(const struct isthd *d, const char *fmt, ...)
{
	uint64_t now = isthd_tsc_to_ns(d, rte_rdtsc());
	char line[320];
	va_list ap;
	int o;

	/* one write per line: the controller's round lines share the file */
	o = snprintf(line, sizeof(line), "rt %.3f ", ((double)now - (double)d->clk.epoch_ns) / 1e6);
	va_start(ap, fmt);
	o += vsnprintf(line + o, sizeof(line) - (size_t)o - 1, fmt, ap);
	va_end(ap);
	if (o > (int)sizeof(line) - 2)
		o = (int)sizeof(line) - 2;
	line[o++] = '\n';
	fwrite(line, 1, (size_t)o, stderr);
}
