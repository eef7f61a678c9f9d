/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames to the island (doc/isthmusd.md, "Data path"): the Ethernet/IPv4/
 * UDP headers every frame to one of its hosts carries (AGG, GONE, ROUND;
 * [access] island_hosts, "An island of several hosts"), the ROUND to
 * every host, and the one server of the island's NACKs: worker k serves
 * those of host h's AGG stream k from its resend ring of host h, within
 * its share of that host's budget, resends resealed and GONEs sealed with
 * its own engine (auth on), out through its TX path (doc/protocol.md,
 * "AGG streams").
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_mbuf.h>

#include "isthd.h"

/*
 * The island's Ethernet/IPv4/UDP headers, one per host ([access]
 * island_hosts), built once at set-up (setup.c, before the lcores start;
 * read-only after): every frame to a host has the same addresses, so a
 * frame copies them and writes its lengths and the IPv4 checksum (the
 * template's sum plus the total length).
 */
void
isthd_frame_template(struct isthd *d)
{
	unsigned int i, h, ns, nh = RTE_MAX(d->cfg.n_island_hosts, 1u);

	for (h = 0; h < nh; h++) {
		uint8_t *ip = d->island_frame[h] + ISTH_WIRE_ETH_HDR_SIZE;
		struct isth_wire_addr a;
		uint32_t sum = 0;

		memset(&a, 0, sizeof(a));
		/* a config not parsed (tests): island_ip/island_mac, host 0 */
		memcpy(a.dst_mac,
			d->cfg.n_island_hosts ? d->cfg.island_hosts[h].mac : d->cfg.island_mac, 6);
		memcpy(a.src_mac, d->access_mac, 6);
		a.src_ip = d->cfg.access.ip;
		a.dst_ip = d->cfg.n_island_hosts ? d->cfg.island_hosts[h].ip : d->cfg.island_ip;
		a.src_port = d->cfg.udp_port;
		a.dst_port = d->cfg.island_port;
		/* no VLAN: the template is exactly ISTHD_ISLAND_HDR bytes */
		isth_wire_put_frame_hdr(d->island_frame[h], ISTHD_ISLAND_HDR, &a, 0);
		/* the IPv4 header's sum without its total length and checksum */
		ip[2] = ip[3] = ip[10] = ip[11] = 0;
		for (i = 0; i < ISTH_WIRE_IPV4_MIN_HDR_SIZE; i += 2)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
		d->island_frame_sum[h] = sum;
	}
	/* the island's socket of each AGG stream; the template's UDP checksum
	 * is 0 (none), so patching the port leaves nothing to recompute */
	ns = d->cfg.island_sockets ? d->cfg.island_sockets : 1; /* 0: a config not parsed */
	for (i = 0; i < ISTH_WIRE_MAX_STREAMS; i++)
		d->island_dport_be[i] = rte_cpu_to_be_16((uint16_t)(d->cfg.island_port + i % ns));
}

/* Host @host's address on a frame to it (AGG, GONE, ROUND): prepend
 * Ethernet/IPv4/UDP to the message in @m. Per packet: lives here. AGG and
 * GONE go to the island socket of their stream ([access] island_sockets;
 * a resend keeps the frame, so the port, it was first sent with); a
 * ROUND's stream field is a count, it goes to island_port. */
int
isthd_frame_to_host(const struct isthd *d, struct rte_mbuf *m, unsigned int host)
{
	uint32_t msg = rte_pktmbuf_pkt_len(m);
	uint32_t tot = ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE + msg;
	uint32_t sum = d->island_frame_sum[host] + tot;
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
	memcpy(p, d->island_frame[host], ISTHD_ISLAND_HDR);
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

int
isthd_frame_to_island(const struct isthd *d, struct rte_mbuf *m)
{
	unsigned int host = 0;

	if (rte_pktmbuf_data_len(m) >= ISTH_WIRE_HDR_SIZE) {
		const uint8_t *w = rte_pktmbuf_mtod(m, const uint8_t *);

		if (w[ISTH_WIRE_OFF_TYPE] == ISTH_WIRE_AGG)
			host = isthd_chunk_host(d, isth_wire_get_hdr_chunk(w));
	}
	return isthd_frame_to_host(d, m, host);
}

/* Every host gets the ROUND (each sends its chunks of the round): copies
 * of the one message, same seq and tag, framed to each. */
int
isthd_island_round_out(struct isthd *d, struct rte_mbuf *m)
{
	unsigned int h, n = RTE_MAX(d->cfg.n_island_hosts, 1u);
	struct rte_mbuf *c[ISTHD_ISLAND_MAX_HOSTS];

	c[0] = m;
	for (h = 1; h < n; h++) {
		c[h] = rte_pktmbuf_copy(m, d->ctl_pool, 0, UINT32_MAX);
		if (c[h] == NULL)
			break;
	}
	if (h < n) {
		rte_pktmbuf_free_bulk(c, h);
		return -ENOMEM;
	}
	for (h = 0; h < n; h++)
		if (isthd_frame_to_host(d, c[h], h) < 0)
			break;
	if (h < n || rte_ring_enqueue_bulk(d->ctl_ring, (void **)c, n, NULL) != n) {
		rte_pktmbuf_free_bulk(c, n);
		return -ENOBUFS;
	}
	return 0;
}

/* A GONE to host @host of the island for @n ranges of @nack (its AGG
 * stream: worker @w's), framed, with room for the tag and (auth on) seq
 * w->seq_gone++, sealed with @w's engine. Counted in @w's counters (gone,
 * sealed, drops). NULL if it could not be built. */
static struct rte_mbuf *
island_gone(struct isthd_worker *w, const struct isth_wire_pkt *nack, unsigned int host,
	const struct isth_wire_range *r, unsigned int n)
{
	struct isthd *d = w->d;
	struct isthd_dp_stats *st = &w->st;
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
		.seq = d->auth.on ? w->seq_gone : 0,
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
		w->seq_gone++;
		if (unlikely(w->eng == NULL ||
			    isthd_auth_seal_msg(d, w->eng, ISTH_AUTH_DOWN, p, size, size + tag) <
				    0)) {
			isth_ctr_add(&st->drop[ISTHD_DROP_auth_seal], 1);
			rte_pktmbuf_free(m);
			return NULL;
		}
		isth_ctr_add(&st->sealed, 1);
	}
	if (isthd_frame_to_host(d, m, host) < 0) {
		isth_ctr_add(&st->drop[ISTHD_DROP_nack_no_mbuf], 1);
		rte_pktmbuf_free(m);
		return NULL;
	}
	isth_ctr_add(&st->gone, 1);
	isth_ctr_add(&st->host[host][ISTHD_HOST_gone], 1);
	return m;
}

/*
 * AGGs the ring resends carry RESENT, which is in the IV: seal them again
 * (the same bytes every time, so every retransmission is identical). A
 * resend the ring holds alone is resealed in place; one whose original is
 * still referenced elsewhere (a header copy chained to the shared body
 * and tag) is copied first, so that the original's tag stays intact.
 * Worker k for stream k, with its own engine and counters. @return
 * resends left in @out.
 */
static unsigned int
reseal_resent(struct isthd_worker *w, struct rte_mbuf **out, unsigned int n)
{
	struct isthd *d = w->d;
	struct isthd_dp_stats *st = &w->st;
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
			    isthd_auth_seal_msg(d, w->eng, ISTH_AUTH_DOWN,
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
 * The island's NACKs are served from the AGG rings within a budget, so that
 * no NACK stream, even from the island's own address, makes the edge send
 * more than one round's AGGs per round: per host of the island ([access]
 * island_hosts), its chunks' worth per round (one host: the round's
 * n_chunks), at most half of that per NACK, and per round of the edge's
 * clock (d->current, whatever round the NACK names) each stream's worker
 * its share (1/N, rounded up; in its nack_budget[host], written by it
 * only). One host's NACKs never spend another's. A NACK cut short is
 * counted nack_budget; the host NACKs again later. @return repairs the
 * next NACK from @host may get.
 */
static uint32_t
island_allowance(struct isthd_worker *w, unsigned int host)
{
	const struct isthd *d = w->d;
	struct isthd_repair_budget *b = &w->nack_budget[host];
	uint64_t cur = __atomic_load_n(&d->current, __ATOMIC_ACQUIRE);
	uint32_t n = RTE_MAX(d->n_workers, 1u), k = RTE_MAX(d->cfg.n_island_hosts, 1u);
	uint64_t c = d->rep.n_chunks;
	/* host's chunks: [host*C/K, (host+1)*C/K) */
	uint32_t budget = (uint32_t)RTE_MAX((host + 1) * c / k - host * c / k, 1ull);
	uint32_t share = (budget + n - 1) / n;
	uint32_t cap = k == 1 ? d->rep.island_nack_cap : (budget + 1) / 2;
	uint32_t left;

	if (b->round1 != cur + 1) {
		b->round1 = cur + 1;
		b->used = 0;
	}
	left = share > b->used ? share - b->used : 0;
	return left < cap ? left : cap;
}

/* Seq ranges of host @host's AGG stream of worker @w, served from its
 * resend ring within its allowance: resends resealed and GONEs sealed with
 * its engine (auth on), out through its TX path. Bounded: the ring looks
 * at most its size of in-window sequences per NACK. */
static void
serve_seqs(struct isthd_worker *w, const struct isth_wire_pkt *p, unsigned int host,
	const struct isth_wire_range *ranges, unsigned int n, uint64_t now_ns)
{
	struct isth_wire_range gone[ISTHD_BURST];
	struct rte_mbuf *out[ISTHD_BURST + 1];
	struct isth_resend *ring = w->host_ring[host];
	struct isth_resend_cursor cur;
	unsigned int n_gone, k;
	uint32_t left;

	if (isth_resend_nack_begin(ring, &cur, ranges, n) < 0)
		return; /* counted bad_nack by the ring */
	left = island_allowance(w, host);
	while (!isth_resend_nack_done(&cur)) {
		if (left == 0) {
			isth_ctr_add(&w->st.drop[ISTHD_DROP_nack_budget], 1);
			break;
		}
		k = isth_resend_nack_serve(ring, &cur, now_ns, out,
			RTE_MIN(left, (uint32_t)ISTHD_BURST), gone, RTE_DIM(gone), &n_gone);
		/* the budget counts what the ring served, sealed or not */
		left -= k;
		w->nack_budget[host].used += k;
		if (w->d->auth.on)
			k = reseal_resent(w, out, k);
		isth_ctr_add(&w->st.resent, k);
		isth_ctr_add(&w->st.host[host][ISTHD_HOST_resent], k);
		if (n_gone) {
			struct rte_mbuf *g = island_gone(w, p, host, gone, n_gone);

			if (g != NULL)
				out[k++] = g;
		}
		isthd_worker_tx(w, ISTHD_ACCESS, out, k);
		if (k == 0)
			break; /* hdr_pool empty: the island NACKs again */
	}
}

/* One NACK from a host of the island for worker @w's AGG stream; its
 * answers go to that host (rx.c admitted its source). Chunk ranges
 * (stream 0, by the parser) name a round's chunks; the ring is indexed by
 * sequence, so chunk NACKs are answered GONE in full. */
void
isthd_island_nack(struct isthd_worker *w, const struct isth_wire_pkt *p, uint64_t now_ns)
{
	struct isth_wire_range ranges[ISTHD_MAX_RANGES];
	unsigned int i, n = p->hdr.count;
	int h = isthd_island_host_of(w->d, p->addr.src_ip);
	unsigned int host = h < 0 ? 0 : (unsigned int)h;

	isth_ctr_add(&w->st.nacks, 1);
	isth_ctr_add(&w->st.host[host][ISTHD_HOST_nacks], 1);
	if (n > ISTHD_MAX_RANGES)
		n = ISTHD_MAX_RANGES; /* the parser's max_ranges is lower */
	for (i = 0; i < n; i++)
		isth_wire_get_range(p, i, &ranges[i]);
	if (!(p->hdr.flags & ISTH_WIRE_F_CHUNKS)) {
		serve_seqs(w, p, host, ranges, n, now_ns);
		return;
	}
	for (i = 0; i < n; i += ISTHD_BURST) {
		struct rte_mbuf *g = island_gone(
			w, p, host, ranges + i, RTE_MIN(n - i, (unsigned int)ISTHD_BURST));

		if (g != NULL)
			isthd_worker_tx(w, ISTHD_ACCESS, &g, 1);
	}
}
