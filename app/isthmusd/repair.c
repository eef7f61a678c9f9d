/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * WAN repair between edges (doc/isthmusd.md, "WAN repair"), the serving
 * side: keep the island's DATA as it leaves, publish each round's due
 * times, and serve peers' NACKs from what was kept, within each peer's
 * budget. The asking side (track, NACK with back-off) is repair_nack.c,
 * serving peers' NACKs repair_serve.c. State: struct isthd_repair and
 * struct isthd_egress (repair.h). Called by the workers and, for the
 * per-round due times, by the controller.
 */
#include <errno.h>
#include <inttypes.h>
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
	uint64_t chunk_bytes = isthd_chunk_bytes(d);

	rp->n_chunks =
		(uint32_t)((isth_sched_payload_bytes(d->sched) + chunk_bytes - 1) / chunk_bytes);
	/* the island's NACK budget: a round's AGGs per round, half per NACK
	 * (the island NACKs again nack_interval later) */
	rp->island_budget = RTE_MAX(rp->n_chunks, 1u);
	rp->island_nack_cap = (rp->island_budget + 1) / 2;
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
	struct isthd_egress *eg = &d->workers[k].eg;
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
	if (d->cfg.n_island_hosts > 1) {
		for (unsigned int i = 0; i < 2; i++) {
			eg->chunk_seq[i] = rte_zmalloc(
				"isthd_chunk_seq", (size_t)d->rep.n_chunks * sizeof(uint32_t), 0);
			if (eg->chunk_seq[i] == NULL) {
				snprintf(err, err_size,
					"WAN repair chunk map of worker %u (%u chunks, "
					"island_hosts %u): %s",
					k, d->rep.n_chunks, d->cfg.n_island_hosts,
					rte_strerror(rte_errno));
				return -ENOMEM;
			}
		}
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
	for (unsigned int i = 0; i < 2; i++) {
		rte_free(eg->chunk_seq[i]);
		eg->chunk_seq[i] = NULL;
	}
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

/* Keep the island's DATA @m[0..n) as worker @w's pacer releases it
 * (every chunk of the rounds it has peers in, in order): chunk c of round
 * r is kept as sequence base(r) + c (struct isthd_keep_map), and with
 * several island hosts at the seq chunk_seq records (their ranges come
 * interleaved). */
void
isthd_repair_keep(struct isthd_worker *w, struct rte_mbuf **m, unsigned int n, uint64_t now_ns)
{
	const struct isthd *d = w->d;
	struct isthd_egress *eg = &w->eg;

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
			/* once a round a slot, n_chunks x 4 bytes */
			if (eg->chunk_seq[r & 1] != NULL) {
				memset(eg->chunk_seq[r & 1], 0,
					(size_t)d->rep.n_chunks * sizeof(uint32_t));
				eg->seq_first[r & 1] = seq;
			}
		} else if (b->seg[b->n_seg - 1].base + c != seq && b->n_seg < ISTHD_KEEP_SEGS) {
			/* a chunk before it never got here: a new segment */
			b->seg[b->n_seg].from = c;
			b->seg[b->n_seg].base = seq - c;
			b->n_seg++;
		}
		/* a round spans far fewer than 2^32 seqs (one per chunk) */
		if (eg->chunk_seq[r & 1] != NULL && c < d->rep.n_chunks)
			eg->chunk_seq[r & 1][c] = (uint32_t)(seq - eg->seq_first[r & 1]) + 1;
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
	uint64_t chunk_bits = isthd_chunk_bytes(d) * 8;
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

/*
 * A linear frame to peer edge @peer carrying the message in @msg (any
 * chain), with a UDP checksum: repairs and NACKs are rare, so they are
 * copied rather than chained (which also suits PMDs without chains).
 */
struct rte_mbuf *
isthd_repair_frame_to_peer(struct isthd *d, struct isth_auth_engine *eng,
	const struct isthd_peer *peer, const struct rte_mbuf *msg)
{
	return isthd_frame_to_peer(d, eng, peer, msg, d->cfg.wan_repair_dscp);
}

struct rte_mbuf *
isthd_frame_to_peer(struct isthd *d, struct isth_auth_engine *eng, const struct isthd_peer *peer,
	const struct rte_mbuf *msg, uint8_t dscp)
{
	uint32_t len = rte_pktmbuf_pkt_len(msg), cap, room;
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
	/* repairs and NACKs: [wan] repair_dscp (EF), so that a WAN with a
	 * priority class sends them ahead of the DATA queued at its
	 * bottlenecks; tree PARTIALs: 0, as DATA (they are the round's data:
	 * a priority class sized for repairs would drop a cutoff's burst) */
	a.dscp = dscp;
	hs = isth_wire_frame_hdr_size(&a);
	/* auth on: sealed here for this peer alone, a tag list of one (a
	 * NACK gains it, a kept DATA's list of the round's peers is replaced) */
	cap = len;
	if (d->auth.on && len > ISTH_WIRE_OFF_TRAILER && rte_pktmbuf_is_contiguous(msg))
		cap = (uint32_t)isthd_auth_peer_cap(rte_pktmbuf_mtod(msg, const uint8_t *), len);
	else if (d->auth.on)
		cap = len + (uint32_t)isth_auth_list_size(1);
	room = RTE_MAX(len, cap);
	m = rte_pktmbuf_alloc(d->pool);
	if (m == NULL || hs + room > rte_pktmbuf_tailroom(m)) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(hs + room));
	/* rte_pktmbuf_read copies only a chain; a single segment it points at */
	src = rte_pktmbuf_read(msg, 0, len, p + hs);
	if (src != p + hs)
		rte_memcpy(p + hs, src, len);
	/* sealed after the last header change (a repair's RESENT): the same
	 * bytes for every retransmission of one message */
	if (d->auth.on) {
		int sl = eng != NULL ? isthd_auth_seal_peer(d, eng, peer, p + hs, len, cap)
				     : -EINVAL;

		if (sl < 0) {
			rte_pktmbuf_free(m);
			return NULL;
		}
		len = (uint32_t)sl;
	}
	rte_pktmbuf_trim(m, (uint16_t)(room - len));
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
