/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker lcore (worker 0 of several: worker.c). One loop serves both
 * ports:
 *
 *   access RX -> parse -> DATA: pacer queue | NACK: resend ring -> access TX
 *   pacer     -> backend replicate -> WAN TX
 *   WAN RX    -> parse -> DATA: backend aggregate
 *   backend drain -> number (seq), keep (resend ring) -> seal -> access TX (stream 0)
 *   other workers' finished (numbered, sealed) frames -> access TX (streams 1..N-1),
 *     only where the access port has one TX queue (else worker k sends on queue k)
 *   controller ring (ROUND) -> access TX
 *
 * WAN repair (keeping released DATA, tracking peers' chunks, NACKing and
 * serving repairs) is repair.c's; this file calls it.
 *
 * Everything it touches was allocated at set-up; it takes no lock and
 * makes no syscall except the optional idle sleep (shared hosts only).
 * Every packet it drops is counted under a named reason.
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "isthd.h"

static inline void
drop(struct isthd *d, struct rte_mbuf *m, enum isthd_drop reason)
{
	isth_ctr_add(&d->st.drop[reason], 1);
	rte_pktmbuf_free(m);
}

/* A frame the wire parser refused. With auth on, a packet that is not
 * version 2 with AUTH and a 16-byte trailer is an auth_format refusal. */
static inline void
wire_refused(struct isthd *d, struct rte_mbuf *m, enum isth_wire_reason r)
{
	if (d->auth.on && (r == ISTH_WIRE_E_VERSION || r == ISTH_WIRE_E_TRAILER))
		isth_ctr_add(&d->st.drop[ISTHD_DROP_auth_format], 1);
	else
		isth_ctr_add(&d->st.wire_drop[r], 1);
	rte_pktmbuf_free(m);
}

/*
 * The island's Ethernet/IPv4/UDP headers, built once at set-up (setup.c,
 * before the lcores start; read-only after): every frame to the island
 * has the same addresses, so a frame copies them and writes its lengths
 * and the IPv4 checksum (the template's sum plus the total length).
 */
void
isthd_frame_template(struct isthd *d)
{
	uint8_t *ip = d->island_frame + ISTH_WIRE_ETH_HDR_SIZE;
	struct isth_wire_addr a;
	uint32_t sum = 0;
	unsigned int i, ns;

	memset(&a, 0, sizeof(a));
	memcpy(a.dst_mac, d->cfg.island_mac, 6);
	memcpy(a.src_mac, d->access_mac, 6);
	a.src_ip = d->cfg.access.ip;
	a.dst_ip = d->cfg.island_ip;
	a.src_port = d->cfg.udp_port;
	a.dst_port = d->cfg.island_port;
	/* no VLAN: the template is exactly ISTHD_ISLAND_HDR bytes */
	isth_wire_put_frame_hdr(d->island_frame, sizeof(d->island_frame), &a, 0);
	/* the IPv4 header's sum without its total length and checksum */
	ip[2] = ip[3] = ip[10] = ip[11] = 0;
	for (i = 0; i < ISTH_WIRE_IPV4_MIN_HDR_SIZE; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	d->island_frame_sum = sum;
	/* the island's socket of each AGG stream; the template's UDP checksum
	 * is 0 (none), so patching the port leaves nothing to recompute */
	ns = d->cfg.island_sockets ? d->cfg.island_sockets : 1; /* 0: a config not parsed */
	for (i = 0; i < ISTH_WIRE_MAX_STREAMS; i++)
		d->island_dport_be[i] = rte_cpu_to_be_16((uint16_t)(d->cfg.island_port + i % ns));
}

/* The island's address on every frame to it (AGG, GONE, ROUND): prepend
 * Ethernet/IPv4/UDP to the message in @m. Per packet: lives here. AGG and
 * GONE go to the island socket of their stream ([access] island_sockets;
 * a resend keeps the frame, so the port, it was first sent with); a
 * ROUND's stream field is a count, it goes to island_port. */
int
isthd_frame_to_island(const struct isthd *d, struct rte_mbuf *m)
{
	uint32_t msg = rte_pktmbuf_pkt_len(m);
	uint32_t tot = ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE + msg;
	uint32_t sum = d->island_frame_sum + tot;
	uint8_t *p, *ip, *udp, type;
	uint16_t dport = 0;

	if (tot > 65535)
		return -EINVAL;
	if (likely(rte_pktmbuf_data_len(m) > ISTH_WIRE_OFF_FLAGS)) {
		const uint8_t *w = rte_pktmbuf_mtod(m, const uint8_t *);

		type = w[ISTH_WIRE_OFF_TYPE];
		if (type == ISTH_WIRE_AGG || type == ISTH_WIRE_GONE)
			dport = d->island_dport_be[isth_wire_get_stream(w)];
	}
	p = (uint8_t *)rte_pktmbuf_prepend(m, ISTHD_ISLAND_HDR);
	if (p == NULL)
		return -ENOSPC;
	memcpy(p, d->island_frame, ISTHD_ISLAND_HDR);
	ip = p + ISTH_WIRE_ETH_HDR_SIZE;
	udp = ip + ISTH_WIRE_IPV4_MIN_HDR_SIZE;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = ~((sum & 0xffff) + (sum >> 16)) & 0xffff;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
	udp[4] = (uint8_t)((tot - ISTH_WIRE_IPV4_MIN_HDR_SIZE) >> 8);
	udp[5] = (uint8_t)(tot - ISTH_WIRE_IPV4_MIN_HDR_SIZE);
	if (dport != 0)
		memcpy(udp + 2, &dport, 2);
	return 0;
}

/*
 * Admission of a DATA before it may claim a pacer entry or an aggregation
 * slot: its chunk id, element count and dtype must be the round's (struct
 * isthd_shape), so that a slot's shape is the round's, never the first
 * packet's. @return ISTHD_DROP_MAX if admitted, else the reason.
 */
static inline enum isthd_drop
data_shape(const struct isthd *d, const struct isth_wire_pkt *p)
{
	const struct isthd_shape *sh = &d->shape;

	if (unlikely(p->hdr.chunk >= sh->n_chunks))
		return ISTHD_DROP_data_bad_chunk;
	if (unlikely(p->hdr.count !=
		    (p->hdr.chunk + 1 == sh->n_chunks ? sh->last_elems : sh->chunk_elems)))
		return ISTHD_DROP_data_bad_count;
	if (unlikely(sh->dtype != ISTH_WIRE_DTYPE_NONE && p->hdr.dtype != sh->dtype))
		return ISTHD_DROP_data_bad_dtype;
	return ISTHD_DROP_MAX;
}

/* Strip Ethernet/IPv4/UDP and padding: keep the message only. */
static inline void
to_msg(struct rte_mbuf *m, const struct isth_wire_pkt *p)
{
	rte_pktmbuf_adj(m, (uint16_t)(p->msg - rte_pktmbuf_mtod(m, uint8_t *)));
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_pkt_len(m) - p->msg_size));
}

struct rte_mbuf *
isthd_island_gone(struct isthd *d, struct isthd_dp_stats *st, const struct isth_wire_pkt *nack,
	const struct isth_wire_range *r, unsigned int n, uint64_t *seq_gone,
	struct isth_auth_engine *seal)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_GONE,
		.flags = nack->hdr.flags & ISTH_WIRE_F_CHUNKS,
		/* the NACK's AGG stream (0 for chunk ranges, by the parser) */
		.stream = nack->hdr.stream,
		.sender = d->island,
		.count = (uint16_t)n,
		.job = d->cfg.job,
		.round = nack->hdr.round,
		/* version 2: GONE is a stream of its own per AGG stream (IV
		 * uniqueness); its writer is the stream's worker */
		.seq = d->auth.on ? *seq_gone : 0,
		.bitmap = nack->hdr.bitmap,
	};
	size_t size = ISTH_WIRE_HDR_SIZE + (size_t)n * ISTH_WIRE_RANGE_SIZE;
	size_t tag = d->auth.on ? ISTH_AUTH_TAG_SIZE : 0;
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->ctl_pool);
	uint8_t *p;

	if (m == NULL || size + tag > rte_pktmbuf_tailroom(m)) {
		isth_ctr_add(&st->drop[ISTHD_DROP_nack_no_mbuf], 1);
		rte_pktmbuf_free(m);
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(size + tag));
	isth_wire_put_hdr(p, ISTH_WIRE_HDR_SIZE, &h);
	isth_wire_put_ranges(p + ISTH_WIRE_HDR_SIZE, size - ISTH_WIRE_HDR_SIZE, r, n);
	if (tag) {
		(*seq_gone)++;
		if (unlikely(seal == NULL ||
			    isthd_auth_seal_msg(d, seal, ISTH_AUTH_DOWN, p, size, size + tag) <
				    0)) {
			isth_ctr_add(&st->drop[ISTHD_DROP_auth_seal], 1);
			rte_pktmbuf_free(m);
			return NULL;
		}
		isth_ctr_add(&st->sealed, 1);
	}
	if (isthd_frame_to_island(d, m) < 0) {
		isth_ctr_add(&st->drop[ISTHD_DROP_nack_no_mbuf], 1);
		rte_pktmbuf_free(m);
		return NULL;
	}
	isth_ctr_add(&st->gone, 1);
	return m;
}

/* GONE reply to the island (stream 0, worker 0) for the ranges a NACK
 * could not be served. */
static void
send_gone(struct isthd *d, const struct isth_wire_pkt *nack, const struct isth_wire_range *r,
	unsigned int n, struct rte_mbuf **out, uint16_t *n_out)
{
	struct rte_mbuf *m =
		isthd_island_gone(d, &d->st, nack, r, n, &d->auth.seq_gone, d->auth.dp);

	if (m != NULL)
		out[(*n_out)++] = m;
}

/*
 * AGGs the ring resends carry RESENT, which is in the IV: seal them again
 * (the same bytes every time, so every retransmission is identical). A
 * resend the ring holds alone is resealed in place; one whose original is
 * still referenced elsewhere (a header copy chained to the shared body
 * and tag) is copied first, so that the original's tag stays intact.
 * Worker 0 for stream 0, worker k for stream k (worker.c), each with its
 * own engine @e and counters @st. @return resends left in @out.
 */
unsigned int
isthd_reseal_resent(struct isthd *d, struct isthd_dp_stats *st, struct isth_auth_engine *e,
	struct rte_mbuf **out, unsigned int n)
{
	const unsigned int off =
		ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE;
	unsigned int i, k = 0;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = out[i];
		uint32_t len = rte_pktmbuf_pkt_len(m);
		size_t ml;

		if (m->nb_segs > 1 || !RTE_MBUF_DIRECT(m)) {
			struct rte_mbuf *c = rte_pktmbuf_alloc(d->pool);
			const void *src;
			uint8_t *p;

			if (c == NULL || len > rte_pktmbuf_tailroom(c)) {
				rte_pktmbuf_free(c);
				isth_ctr_add(&st->drop[ISTHD_DROP_nack_no_mbuf], 1);
				rte_pktmbuf_free(m);
				continue;
			}
			p = (uint8_t *)rte_pktmbuf_append(c, (uint16_t)len);
			src = rte_pktmbuf_read(m, 0, len, p);
			if (src != p)
				memcpy(p, src, len);
			rte_pktmbuf_free(m);
			m = c;
		}
		/* a resend is sealed already (version 2: seal_msg reuses the
		 * tag's room), but one whose original failed to seal (counted
		 * auth_seal, the ring kept it) is still version 1, with the
		 * tag's room at its end */
		ml = len > off ? len - off : 0;
		if (ml >= ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE &&
			rte_pktmbuf_mtod_offset(m, uint8_t *, off)[ISTH_WIRE_OFF_VERSION] !=
				ISTH_WIRE_VERSION_AUTH)
			ml -= ISTH_AUTH_TAG_SIZE;
		if (unlikely(len <= off ||
			    isthd_auth_seal_msg(d, e, ISTH_AUTH_DOWN,
				    rte_pktmbuf_mtod_offset(m, uint8_t *, off), ml,
				    len - off) < 0)) {
			isth_ctr_add(&st->drop[ISTHD_DROP_auth_seal], 1);
			rte_pktmbuf_free(m);
			continue;
		}
		out[k++] = m;
	}
	isth_ctr_add(&st->sealed, k);
	return k;
}

/*
 * An island NACK of seqs of one AGG stream, served from that stream's
 * resend ring @ring within the island allowance @b: resends resealed and
 * GONEs sealed with @e (auth on), counted in @st, handed to @emit. Worker
 * 0 for stream 0 (serve_nack), worker k for stream k (worker.c). Bounded:
 * the ring looks at most its size of in-window sequences per NACK.
 */
void
isthd_serve_seq_nack(struct isthd *d, struct isthd_dp_stats *st, struct isth_resend *ring,
	struct isthd_repair_budget *b, struct isth_auth_engine *e, uint64_t *seq_gone,
	const struct isth_wire_pkt *p, uint64_t now_ns, isthd_emit_fn emit, void *arg)
{
	struct isth_wire_range ranges[ISTHD_MAX_RANGES];
	struct isth_wire_range gone[ISTHD_BURST];
	struct rte_mbuf *out[ISTHD_BURST + 1];
	struct isth_resend_cursor cur;
	unsigned int i, n = p->hdr.count, n_gone, k;
	uint32_t left;

	isth_ctr_add(&st->nacks, 1);
	if (n > ISTHD_MAX_RANGES)
		n = ISTHD_MAX_RANGES; /* the parser's max_ranges is lower */
	for (i = 0; i < n; i++)
		isth_wire_get_range(p, i, &ranges[i]);
	if (isth_resend_nack_begin(ring, &cur, ranges, n) < 0)
		return; /* counted bad_nack by the ring */
	left = isthd_repair_island_allowance(d, b); /* repair.c */
	while (!isth_resend_nack_done(&cur)) {
		if (left == 0) {
			isth_ctr_add(&st->drop[ISTHD_DROP_nack_budget], 1);
			break;
		}
		k = isth_resend_nack_serve(ring, &cur, now_ns, out,
			RTE_MIN(left, (uint32_t)ISTHD_BURST), gone, RTE_DIM(gone), &n_gone);
		/* the budget counts what the ring served, sealed or not */
		left -= k;
		b->used += k;
		if (d->auth.on)
			k = isthd_reseal_resent(d, st, e, out, k);
		isth_ctr_add(&st->resent, k);
		if (n_gone) {
			struct rte_mbuf *g = isthd_island_gone(d, st, p, gone, n_gone, seq_gone, e);

			if (g != NULL)
				out[k++] = g;
		}
		emit(arg, out, k);
		if (k == 0)
			break; /* hdr_pool empty: the island NACKs again */
	}
}

static void
emit_access(void *arg, struct rte_mbuf **m, unsigned int n)
{
	struct isthd *d = arg;

	isthd_tx(d, d->access_port, m, (uint16_t)n, ISTHD_DROP_tx_access, &d->st.access_tx);
}

/* One NACK from the island for AGG stream 0. Chunk ranges name a round's
 * chunks; the ring is indexed by sequence, so chunk NACKs are answered
 * GONE in full. */
static void
serve_nack(struct isthd *d, const struct isth_wire_pkt *p, uint64_t now_ns)
{
	struct isth_wire_range ranges[ISTHD_MAX_RANGES];
	struct rte_mbuf *out[ISTHD_BURST + 1];
	unsigned int i, n = p->hdr.count;
	uint16_t n_out;

	if (!(p->hdr.flags & ISTH_WIRE_F_CHUNKS)) {
		isthd_serve_seq_nack(d, &d->st, d->agg_ring, &d->rep.island, d->auth.dp,
			&d->auth.seq_gone, p, now_ns, emit_access, d);
		return;
	}
	isth_ctr_add(&d->st.nacks, 1);
	if (n > ISTHD_MAX_RANGES)
		n = ISTHD_MAX_RANGES; /* the parser's max_ranges is lower */
	for (i = 0; i < n; i++)
		isth_wire_get_range(p, i, &ranges[i]);
	for (i = 0; i < n; i += ISTHD_BURST) {
		n_out = 0;
		send_gone(d, p, ranges + i, RTE_MIN(n - i, (unsigned int)ISTHD_BURST), out, &n_out);
		isthd_tx(d, d->access_port, out, n_out, ISTHD_DROP_tx_access, &d->st.access_tx);
	}
}

/* One burst from access RX queue @q. */
static unsigned int
access_rx_queue(struct isthd *d, uint16_t q, uint64_t now_ns)
{
	uint64_t cur = __atomic_load_n(&d->current, __ATOMIC_ACQUIRE);
	uint64_t pub = __atomic_load_n(&d->published, __ATOMIC_ACQUIRE);
	struct rte_mbuf *rx[ISTHD_BURST];
	struct isth_wire_pkt parsed[ISTHD_BURST];
	uint8_t owner[ISTHD_BURST];
	uint16_t n, i, k = 0;

	n = rte_eth_rx_burst(d->access_port, q, rx, ISTHD_BURST);
	if (n == 0)
		return 0;
	isth_ctr_add(&d->st.access_rx, n);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = rx[i];
		enum isth_wire_reason r;

		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(rx[i + 1], void *));
		r = isth_wire_parse_frame(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m),
			&d->lim, &parsed[k]);
		if (unlikely(r != ISTH_WIRE_OK)) {
			wire_refused(d, m, r);
			continue;
		}
		/* the access link's key is the local island's UP key */
		owner[k] = d->island;
		rx[k++] = m;
	}
	/* verify before anything else looks at the packet */
	if (d->auth.on)
		k = (uint16_t)isthd_auth_verify_rx(d, ISTH_AUTH_UP, rx, parsed, owner, k);
	for (i = 0; i < k; i++) {
		struct rte_mbuf *m = rx[i];
		struct isth_wire_pkt *p = &parsed[i];

		if (unlikely(p->hdr.job != d->cfg.job)) {
			drop(d, m, ISTHD_DROP_unknown_job);
			continue;
		}
		if (unlikely(p->hdr.sender != d->island)) {
			drop(d, m, ISTHD_DROP_access_not_island);
			continue;
		}
		/* DATA and NACKs only from the island's configured address */
		if (unlikely(p->addr.src_ip != d->cfg.island_ip)) {
			drop(d, m, ISTHD_DROP_access_bad_source);
			continue;
		}
		switch (p->hdr.type) {
		case ISTH_WIRE_DATA: {
			enum isthd_drop why;
			int rc;

			/* Rounds are published one ahead: accept the running
			 * round and the next, refuse the rest. */
			if (p->hdr.round >= pub) {
				drop(d, m, ISTHD_DROP_round_early);
				break;
			}
			if (cur && p->hdr.round + 1 < cur) {
				drop(d, m, ISTHD_DROP_round_late);
				break;
			}
			why = data_shape(d, p);
			if (unlikely(why != ISTHD_DROP_MAX)) {
				drop(d, m, why);
				break;
			}
			to_msg(m, p);
			/* onto the WAN under the edge's WAN key: same header,
			 * same IV, a new tag in place of the UP one; one tag
			 * for every peer, so the fan-out stays zero-copy */
			if (d->auth.on &&
				unlikely(isthd_auth_seal_msg(d, d->auth.dp, ISTH_AUTH_WAN,
						 rte_pktmbuf_mtod(m, uint8_t *), p->msg_size,
						 p->msg_size) < 0)) {
				drop(d, m, ISTHD_DROP_auth_seal);
				break;
			}
			/* The schedule's rates are payload rates (the planner's
			 * unit): pace payload bytes. Headers add 82 bytes per
			 * chunk on the wire, which a plan must budget for.
			 * Several workers: every worker with peers in the
			 * round paces it for them (worker.c). */
			if (d->n_workers > 1)
				rc = isthd_egress_steer(
					d, m, (uint32_t)p->payload_size, p->hdr.round);
			else
				rc = isth_pace_enqueue(d->eg.pace, m, (uint32_t)p->payload_size);
			if (unlikely(rc < 0)) {
				drop(d, m, isthd_pace_refusal(rc));
				break;
			}
			isth_ctr_add(&d->st.data_in, 1);
			isth_ctr_add(&d->st.data_in_bytes, p->payload_size);
			break;
		}
		case ISTH_WIRE_NACK:
			/* AGG stream k's seqs: worker k's ring (the parser
			 * refused k >= n_workers, and chunk NACKs are 0) */
			if (p->hdr.stream != 0) {
				isthd_shard_stage(d, p->hdr.stream, m, p);
				break;
			}
			serve_nack(d, p, now_ns);
			rte_pktmbuf_free(m);
			break;
		default:
			drop(d, m, ISTHD_DROP_access_bad_type);
			break;
		}
	}
	if (d->n_workers > 1)
		isthd_shard_flush(d); /* the island's DATA for the others */
	return n;
}

/* Every RX queue of the access port: one, or an af_packet port's qpairs,
 * over which the kernel spreads the island's flows (setup.c, port_start). */
static unsigned int
access_rx(struct isthd *d, uint64_t now_ns)
{
	unsigned int n = access_rx_queue(d, 0, now_ns);

	for (uint16_t q = 1; q < d->access_rxq; q++)
		n += access_rx_queue(d, q, now_ns);
	return n;
}

/*
 * Worker k's pacer: the island's DATA due now, kept for its peers' NACKs,
 * replicated to its peers by its backend (which has this worker's share
 * of the round's fan-out table: control.c, publish_tables) and sent on
 * its WAN TX queue (or through worker 0). Worker 0 with one worker: all
 * of it.
 */
unsigned int
isthd_egress_release(struct isthd *d, unsigned int w, uint64_t now_tsc)
{
	struct isthd_egress *eg = isthd_egress_of(d, w);
	struct isthd_dp_stats *st = isthd_stats_of(d, w);
	struct isth_backend *be = w ? d->shard[w]->be : d->be;
	struct rte_mbuf *out[ISTHD_BURST * 4];
	void *objs[ISTHD_BURST];
	unsigned int n, done = 0, max = ISTHD_BURST;

	if (w != 0 && d->wan_txq == 1) {
		/* through worker 0: release only what the ring can take, a
		 * copy per peer of the worker (at most), so that paced DATA
		 * waits in the pacer rather than being dropped on the way */
		unsigned int per = (d->n_islands - 1 + d->n_workers - 1) / d->n_workers;
		unsigned int fit = rte_ring_free_count(d->shard[w]->wan_out) / (per ? per : 1u);

		max = RTE_MIN(max, fit);
		if (max == 0)
			return 0;
	}
	n = isth_pace_dequeue_burst(eg->pace, now_tsc, objs, max);
	if (n == 0)
		return 0;
	isth_ctr_add(&st->data_out, n);
	if (eg->ring)
		isthd_repair_keep(d, eg, (struct rte_mbuf **)objs, n, isthd_tsc_to_ns(d, now_tsc));
	while (done < n) {
		uint16_t n_out = 0, k;

		k = isth_backend_replicate_burst(be, (struct rte_mbuf **)objs + done,
			(uint16_t)(n - done), out, RTE_DIM(out), &n_out);
		isthd_wan_tx(d, w, out, n_out, ISTHD_DROP_tx_wan);
		done += k;
	}
	isth_mbuf_free_bulk((struct rte_mbuf **)objs, n);
	return n;
}

/* The island whose peer edge has WAN address @ip (the site table), or -1. */
static inline int
peer_by_ip(const struct isthd *d, uint32_t ip)
{
	for (unsigned int s = 0; s < d->n_islands; s++)
		if (d->peer_of[s] != NULL && d->peer_of[s]->ip == ip)
			return (int)s;
	return -1;
}

/*
 * Frames ahead of the one being parsed that are prefetched whole. The
 * parse reads lines 0-1 (Ethernet to the isthmus header's end, bytes
 * 0-81); the tag verify (auth on) or the sum (auth off) then reads every
 * line. Prefetching only line 0 of the next frame left both to wait on
 * the frame's misses one line at a time (measured with 1.1 KB frames: 4
 * frames ahead, whole frames, cut the pipeline's cycles per DATA by about
 * a quarter; 2 ahead was about the same, 1, 8 and 16 ahead slower;
 * doc/performance.md section 6). Jumbo frames are prefetched up to
 * RX_PREFETCH_MAX bytes (4 frames stay within L1); the hardware
 * prefetcher follows the rest of a sequential read (not measured).
 */
#define RX_AHEAD 4
#define RX_PREFETCH_MAX 2048

static inline void
prefetch_frame(const struct rte_mbuf *m)
{
	const char *p = rte_pktmbuf_mtod(m, const char *);
	uint16_t len = RTE_MIN(rte_pktmbuf_data_len(m), RX_PREFETCH_MAX), off;

	for (off = 0; off < len; off += RTE_CACHE_LINE_SIZE)
		rte_prefetch0(p + off);
}

static unsigned int
wan_rx_queue(struct isthd *d, uint16_t q, uint64_t now_ns)
{
	struct rte_mbuf *rx[ISTHD_BURST], *keep[ISTHD_BURST];
	/* parsed in place; the DATA kept are compacted to the front (a
	 * parse is 136 bytes: copied only once something before it left) */
	struct isth_wire_pkt parsed[ISTHD_BURST];
	uint8_t owner[ISTHD_BURST];
	/* frames whose UDP checksum the NIC found good: parsed without
	 * summing them again (d->wan_rx_csum) */
	struct isth_wire_limits nic_lim = d->lim;
	uint16_t n, i, k = 0, v = 0;

	n = rte_eth_rx_burst(d->wan_port, q, rx, ISTHD_BURST);
	if (n == 0)
		return 0;
	nic_lim.check_udp_csum = false;
	isth_ctr_add(&d->st.wan_rx, n);
	for (i = 0; i < n && i < RX_AHEAD; i++)
		prefetch_frame(rx[i]);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = rx[i];
		const struct isth_wire_limits *lim = &d->lim;
		enum isth_wire_reason r;

		if (i + RX_AHEAD < n)
			prefetch_frame(rx[i + RX_AHEAD]);
		/* GOOD, or NONE (the data's integrity checked, the field left
		 * partial: virtio), the two marks with the GOOD bit: not
		 * summed again, unless the NIC parsed a tunnel (its mark is
		 * then the inner L4's, as for a udp_port of 4789). BAD and
		 * UNKNOWN are summed in software: some NICs mark an absent
		 * (zero) IPv4 UDP checksum bad (the 82599 erratum), and with
		 * auth on peers send none. */
		RTE_BUILD_BUG_ON((RTE_MBUF_F_RX_L4_CKSUM_NONE & RTE_MBUF_F_RX_L4_CKSUM_GOOD) == 0 ||
			(RTE_MBUF_F_RX_L4_CKSUM_BAD & RTE_MBUF_F_RX_L4_CKSUM_GOOD) != 0);
		if (d->wan_rx_csum && (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_GOOD) != 0 &&
			(m->packet_type & RTE_PTYPE_TUNNEL_MASK) == 0)
			lim = &nic_lim;
		r = isth_wire_parse_frame(
			rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m), lim, &parsed[v]);
		if (unlikely(r != ISTH_WIRE_OK)) {
			wire_refused(d, m, r);
			continue;
		}
		if (d->auth.on) {
			/* the WAN key is the sending edge's: its owner comes
			 * from the site table entry of the source address */
			int o = peer_by_ip(d, parsed[v].addr.src_ip);

			if (unlikely(o < 0)) {
				drop(d, m, ISTHD_DROP_auth_key);
				continue;
			}
			owner[v] = (uint8_t)o;
		}
		rx[v++] = m;
	}
	if (d->auth.dev_verify) /* DATA: the device verifies (auth_dev.c) */
		v = isthd_auth_dev_rx(d, rx, parsed, owner, v);
	else if (d->auth.on)
		v = (uint16_t)isthd_auth_verify_rx(d, ISTH_AUTH_WAN, rx, parsed, owner, v);
	for (i = 0; i < v; i++) {
		struct rte_mbuf *m = rx[i];
		struct isth_wire_pkt *p = &parsed[i];

		if (unlikely(p->hdr.job != d->cfg.job)) {
			drop(d, m, ISTHD_DROP_unknown_job);
			continue;
		}
		if (unlikely(p->hdr.type != ISTH_WIRE_DATA)) {
			/* a peer edge asking for our island's chunks again */
			if (p->hdr.type == ISTH_WIRE_NACK && (p->hdr.flags & ISTH_WIRE_F_CHUNKS) &&
				p->hdr.sender != d->island &&
				p->hdr.bitmap == (1ull << d->island)) {
				/* checked here, served by the worker that
				 * sends the round to that peer, from its ring
				 * ("Workers") */
				unsigned int w = 0;

				if (isthd_repair_admit(d, p, &w)) {
					if (w != 0) {
						isthd_shard_stage(d, w, m, p);
						continue;
					}
					isthd_repair_serve(d, 0, p, now_ns);
				}
				rte_pktmbuf_free(m);
				continue;
			}
			drop(d, m, ISTHD_DROP_wan_bad_type);
			continue;
		}
		if (unlikely(p->hdr.sender == d->island)) {
			drop(d, m, ISTHD_DROP_wan_from_self);
			continue;
		}
		/* the site table: a sender's DATA comes from its peer edge */
		if (unlikely(d->peer_of[p->hdr.sender] == NULL ||
			    p->addr.src_ip != d->peer_of[p->hdr.sender]->ip)) {
			drop(d, m, ISTHD_DROP_data_bad_source);
			continue;
		}
		{
			enum isthd_drop why = data_shape(d, p);

			if (unlikely(why != ISTHD_DROP_MAX)) {
				drop(d, m, why);
				continue;
			}
		}
		isthd_repair_track(d, p, now_ns);
		/* several workers: chunk % n_workers sums it (worker.c) */
		if (d->n_workers > 1 && isthd_shard_steer(d, m, p))
			continue;
		isth_ctr_add(&d->st.peer_data_bytes, p->payload_size);
		if (k != i)
			parsed[k] = *p;
		keep[k++] = m;
	}
	if (d->n_workers > 1)
		isthd_shard_flush(d);
	if (k) {
		isth_ctr_add(&d->st.peer_data, k);
		/* Takes the mbufs; refusals (clique, round) are counted by
		 * the backend under their names. */
		isth_backend_aggregate_burst(d->be, keep, parsed, k, now_ns);
	}
	return n;
}

/* Every RX queue of the WAN port: one, or an af_packet port's qpairs
 * (setup.c, port_start), as access_rx. */
static unsigned int
wan_rx(struct isthd *d, uint64_t now_ns)
{
	unsigned int n = wan_rx_queue(d, 0, now_ns);

	for (uint16_t q = 1; q < d->wan_rxq; q++)
		n += wan_rx_queue(d, q, now_ns);
	return n;
}

/*
 * AGGs out, a burst at a time: each is framed and numbered by the resend
 * ring, then (auth on) the burst is sealed in one ipsec-mb submission, not
 * one per AGG, and sent in one TX burst.
 */
static unsigned int
emit_aggs(struct isthd *d, uint64_t now_ns)
{
	struct rte_mbuf *out[ISTHD_BURST];
	unsigned int n, i, ok = 0;

	n = isth_backend_drain(d->be, now_ns, out, ISTHD_BURST);
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = out[i];
		uint32_t len = rte_pktmbuf_pkt_len(m);
		uint64_t seq, dev_seq = 0;

		/* sealed by the device: its tag is in the message already */
		if (d->auth.dev_seal) {
			len -= ISTH_AUTH_TAG_SIZE;
			dev_seq = isth_wire_get_seq(rte_pktmbuf_mtod(m, uint8_t *));
		}
		isth_ctr_add(&d->st.agg_out_bytes, len - ISTH_WIRE_HDR_SIZE);
		/* room for the tag, inside the frame's lengths */
		if (d->auth.on && !d->auth.dev_seal &&
			unlikely(m->nb_segs > 1 ||
				rte_pktmbuf_append(m, ISTH_AUTH_TAG_SIZE) == NULL)) {
			drop(d, m, ISTHD_DROP_auth_seal);
			continue;
		}
		if (unlikely(isthd_frame_to_island(d, m) < 0)) {
			drop(d, m, ISTHD_DROP_tx_access);
			continue;
		}
		/* The ring numbers the AGG (seq written into its header) and
		 * keeps its own reference for resends; push before TX. */
		if (unlikely(isth_resend_push(d->agg_ring, m, now_ns, &seq) < 0)) {
			drop(d, m, ISTHD_DROP_tx_access);
			continue;
		}
		if (d->auth.dev_seal && unlikely(seq != dev_seq)) {
			/* The device numbered it from the ring's first seq, one
			 * per AGG: the ring wrote the same seq and the tag
			 * holds. Out of step (an AGG the device sealed was lost
			 * on its way to the ring), the host seals it (counted). */
			isth_ctr_add(&d->st.agg_host_sealed, 1);
			if (unlikely(
				    isthd_auth_seal_msg(d, d->auth.dp, ISTH_AUTH_DOWN,
					    rte_pktmbuf_mtod_offset(m, uint8_t *, ISTHD_ISLAND_HDR),
					    len + ISTH_AUTH_TAG_SIZE,
					    len + ISTH_AUTH_TAG_SIZE) < 0)) {
				drop(d, m, ISTHD_DROP_auth_seal);
				continue;
			}
			isth_ctr_add(&d->st.sealed, 1);
		}
		out[ok++] = m;
	}
	/* sealed after their last header change, the seq (the ring's
	 * references see the same bytes: resends start from them) */
	if (d->auth.on && !d->auth.dev_seal)
		ok = isthd_auth_seal_frames(
			d, &d->st, d->auth.dp, ISTH_AUTH_DOWN, out, ok, ISTHD_ISLAND_HDR);
	__atomic_store_n(&d->agg_seq, isth_resend_next_seq(d->agg_ring), __ATOMIC_RELAXED);
	isth_ctr_add(&d->st.agg_out, ok);
	isthd_tx(d, d->access_port, out, (uint16_t)ok, ISTHD_DROP_tx_access, &d->st.access_tx);
	return n;
}

/*
 * Several workers, access port with one TX queue (the fallback): the
 * frames workers 1..N-1 finished (their streams' AGGs numbered, resends,
 * GONEs) onto the wire. With auth on each was sealed by its worker with
 * that worker's engine after its last header change (worker.c): worker 0
 * changes nothing, it only transmits. With a TX queue per worker
 * (d->access_txq > 1) each worker sends its own and nothing comes here.
 */
static unsigned int
stream_frames(struct isthd *d)
{
	struct rte_mbuf *in[ISTHD_BURST];
	unsigned int n;

	if (d->access_txq > 1)
		return 0;
	n = isthd_shard_collect(d, false, in, ISTHD_BURST);
	if (n)
		isthd_tx(
			d, d->access_port, in, (uint16_t)n, ISTHD_DROP_tx_access, &d->st.access_tx);
	return n;
}

#define WAN_BURSTS 8

/*
 * Several workers, WAN port with one TX queue (the fallback): what
 * workers 1..N-1 built for the WAN (the island's DATA replicated to their
 * peers, repairs and tail copies, sealed) onto queue 0 unchanged. A
 * peer's frames come from one worker through one FIFO ring, so they keep
 * their order.
 */
static unsigned int
wan_frames(struct isthd *d)
{
	struct rte_mbuf *in[ISTHD_BURST];
	unsigned int n, all = 0, i;

	if (d->wan_txq > 1)
		return 0;
	/* a burst of DATA released by a worker is a copy per peer: up to
	 * WAN_BURSTS bursts a pass, so that worker 0 keeps pace */
	for (i = 0; i < WAN_BURSTS; i++) {
		n = isthd_shard_collect(d, true, in, ISTHD_BURST);
		if (n == 0)
			break;
		isthd_tx(d, d->wan_port, in, (uint16_t)n, ISTHD_DROP_tx_wan, &d->st.wan_tx);
		all += n;
	}
	return all;
}

static unsigned int
ctl_msgs(struct isthd *d)
{
	struct rte_mbuf *m[8];
	unsigned int n;

	n = rte_ring_dequeue_burst(d->ctl_ring, (void **)m, RTE_DIM(m), NULL);
	if (n) {
		isth_ctr_add(&d->st.round_msgs, n);
		isthd_tx(d, d->access_port, m, (uint16_t)n, ISTHD_DROP_tx_access, &d->st.access_tx);
	}
	return n;
}

/* Rounds whose end (+ slack) has passed: their unfinished aggregates in
 * @be leave as partials now, while the island still waits for them.
 * @next: the next round to expire, owned by the calling worker (worker 0's
 * d->expire_next, worker k's shard->expire_next). */
unsigned int
isthd_expire_rounds(const struct isthd *d, struct isth_backend *be, uint64_t *next, uint64_t now_ns)
{
	unsigned int n = 0;

	if (now_ns < d->clk.epoch_ns)
		return 0;
	for (;;) {
		uint64_t end =
			d->clk.epoch_ns + (*next + 1) * d->clk.round_ns + d->cfg.agg_round_slack_ns;

		if (now_ns < end)
			break;
		if (isth_backend_expire_round(be, d->cfg.job, (uint32_t)*next) > 0)
			n++;
		(*next)++;
	}
	return n;
}

/* One pass over every source of work; returns packets handled. */
unsigned int
isthd_dp_poll(struct isthd *d)
{
	uint64_t tsc = rte_rdtsc();
	uint64_t now_ns = isthd_tsc_to_ns(d, tsc);
	unsigned int work = 0;

	if (d->auth.on)
		isthd_auth_dp_step(d); /* a reloaded key file */
	work += isthd_expire_rounds(d, d->be, &d->expire_next, now_ns);
	work += isthd_repair_tail_check(d, now_ns);
	work += access_rx(d, now_ns);
	work += isthd_egress_release(d, 0, tsc);
	work += wan_rx(d, now_ns);
	work += emit_aggs(d, now_ns);
	if (d->n_workers > 1) {
		work += stream_frames(d);
		work += wan_frames(d);
	}
	work += ctl_msgs(d);
	isth_resend_expire(d->agg_ring, now_ns);
	if (d->eg.ring)
		isth_resend_expire(d->eg.ring, now_ns);
	return work;
}

int
isthd_worker(void *arg)
{
	struct isthd *d = arg;
	uint32_t idle = 0;

	isthd_rcu_online(d, 0);
	while (!d->stop) {
		/* round tables are read only within one pass (worker.c) */
		isthd_rcu_quiescent(d, 0);
		if (isthd_dp_poll(d)) {
			idle = 0;
			continue;
		}
		/* Shared hosts: after idle_polls empty passes, sleep briefly
		 * so other processes on the core get to run. */
		if (d->cfg.idle_polls && ++idle >= d->cfg.idle_polls) {
			isth_ctr_add(&d->st.idle_sleeps, 1);
			isthd_rcu_offline(d, 0);
			rte_delay_us_sleep((unsigned int)(d->cfg.idle_sleep_ns / 1000));
			isthd_rcu_online(d, 0);
		}
	}
	isthd_rcu_offline(d, 0);
	return 0;
}

/* Shutdown, on the worker after it stopped: partial aggregates out. */
void
isthd_dp_drain_final(struct isthd *d)
{
	struct isth_backend_counts bc;
	unsigned int spins = 0;

	/* the workers have stopped: the key set published now, for the
	 * seals below (the one of their last pass may have been freed) */
	if (d->auth.on) {
		isthd_auth_dp_step(d);
		for (unsigned int k = 1; k < d->n_workers; k++)
			isthd_auth_shard_step(d->shard[k]);
	}
	isth_backend_flush(d->be);
	/* several workers: what they hold is summed and flushed too */
	if (d->n_workers > 1)
		isthd_shard_drain_final(d, true);
	/* An asynchronous backend (fpga) may still hold aggregates when a
	 * drain returns nothing: wait for its dev_pending gauge, bounded. */
	do {
		while (emit_aggs(d, isthd_tsc_to_ns(d, rte_rdtsc())) > 0 ||
			(d->n_workers > 1 &&
				(isthd_shard_drain_final(d, false) > 0 || stream_frames(d) > 0 ||
					wan_frames(d) > 0)))
			;
		isth_backend_counts(d->be, &bc);
		if (bc.dev_pending)
			rte_delay_us_sleep(100);
	} while (bc.dev_pending && ++spins < 20000);
	ctl_msgs(d);
}
