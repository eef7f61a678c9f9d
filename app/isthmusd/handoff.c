/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rings between workers (doc/isthmusd.md, "Workers"). The RX worker
 * (ISTHD_ROLE_STEER with several workers) stages for worker k what belongs
 * to it, a burst at a time: each admitted peer DATA whose chunk is k's,
 * each island NACK of AGG stream k, each chunk NACK of one of k's peers
 * (the frame and its parse: struct isthd_msg, ring `in`), and the island's
 * DATA (a reference) for every worker with peers in its round (ring
 * pace_in). Worker k takes them at each pass (isthd_handoff_in,
 * isthd_handoff_pace_in). Where a port has one TX queue, worker k's
 * frames for it come back through its access_out / wan_out ring, and the
 * owner of queue 0 puts them on the wire unchanged (isthd_handoff_relay).
 * Every ring is SP/SC: one writer, one reader, no lock.
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "isth_mcast.h"
#include "isthd.h"

void
isthd_handoff_stage(
	struct isthd_worker *w, unsigned int k, struct rte_mbuf *m, const struct isth_wire_pkt *p)
{
	struct isthd_msg *s;

	if (w->n_stage[k] == ISTHD_BURST)
		isthd_handoff_flush(w);
	s = &w->stage[k * ISTHD_BURST + w->n_stage[k]++];
	s->m = m;
	s->p = *p;
}

/* Staged entries @n of @s (@esize bytes each, an mbuf pointer first) onto
 * ring @r; what it cannot take is freed and counted worker_ring_full. */
static void
flush_one(struct isthd_worker *w, struct rte_ring *r, void *s, unsigned int esize, unsigned int n)
{
	unsigned int sent = rte_ring_enqueue_burst_elem(r, s, esize, n, NULL);

	if (unlikely(sent < n)) {
		isth_ctr_add(&w->st.drop[ISTHD_DROP_worker_ring_full], n - sent);
		for (unsigned int i = sent; i < n; i++) {
			struct rte_mbuf *m;

			memcpy(&m, (uint8_t *)s + (size_t)i * esize, sizeof(m));
			rte_pktmbuf_free(m);
		}
	}
}

void
isthd_handoff_flush(struct isthd_worker *w)
{
	struct isthd *d = w->d;

	for (unsigned int k = 1; k < d->n_workers; k++) {
		if (w->n_pstage[k]) {
			flush_one(w, d->workers[k].pace_in, &w->pstage[k * ISTHD_BURST],
				sizeof(struct isthd_pace_msg), w->n_pstage[k]);
			w->n_pstage[k] = 0;
		}
		if (w->n_stage[k]) {
			flush_one(w, d->workers[k].in, &w->stage[k * ISTHD_BURST],
				sizeof(struct isthd_msg), w->n_stage[k]);
			w->n_stage[k] = 0;
		}
	}
}

/*
 * The island's DATA of round @r, admitted and sealed for the WAN by the RX
 * worker, goes to every worker with peers in the round (the round's repair
 * table names them; with n of them, workers 0..min(n, N)-1 each send to
 * some, isthd_egress_worker): each paces, replicates and keeps it for its
 * own peers, holding a reference of its own (the mbuf's refcount, atomic
 * across lcores; the DATA is only read once sealed, but for a repair's
 * RESENT flag, which lib/resend sets in place only when its ring holds the
 * last reference, and otherwise sets in a header copy). The RX worker's
 * own goes into its pacer here, the others' are staged for their pace_in
 * rings (flushed at the end of the RX burst). A round with no peer (a bye)
 * or no table goes to the RX worker alone, as with one worker.
 */
int
isthd_egress_steer(struct isthd_worker *w, struct rte_mbuf *m, uint32_t bytes, uint64_t r)
{
	struct isthd *d = w->d;
	const struct isthd_repair_round *rt = isthd_repair_round(d, r);
	unsigned int n = 1, k;
	int rc;

	if (rt != NULL && !d->cfg.wan_repl_network)
		n = RTE_MIN((unsigned int)__builtin_popcountll(rt->expected), d->n_workers);
	if (n <= 1)
		return isth_pace_enqueue(w->eg.pace, m, bytes);
	/* the UDP checksum's sum of the message, once here rather than once
	 * per worker that fans it out (lib/mcast reuses it) */
	if (d->cfg.wan_udp_csum)
		isth_mcast_sum_attach(m);
	rte_mbuf_refcnt_update(m, (int16_t)(n - 1));
	for (k = 1; k < n; k++) {
		struct isthd_pace_msg *pm;

		if (w->n_pstage[k] == ISTHD_BURST)
			isthd_handoff_flush(w);
		pm = &w->pstage[k * ISTHD_BURST + w->n_pstage[k]++];
		pm->m = m;
		pm->bytes = bytes;
	}
	/* the others took theirs: the own pacer's refusal is counted here,
	 * and the DATA still leaves for the others' peers */
	rc = isth_pace_enqueue(w->eg.pace, m, bytes);
	if (unlikely(rc < 0)) {
		isth_ctr_add(&w->st.drop[isthd_pace_refusal(rc)], 1);
		rte_pktmbuf_free(m);
	}
	return 0;
}

/* The island's DATA the RX worker handed over, into this worker's pacer for
 * its peers, by payload bytes as the RX worker admitted them; refusals
 * counted here (pace_full, pace_oversize). */
unsigned int
isthd_handoff_pace_in(struct isthd_worker *w)
{
	struct isthd_pace_msg pm[ISTHD_BURST];
	unsigned int n, i;

	if (w->pace_in == NULL)
		return 0;
	n = rte_ring_dequeue_burst_elem(w->pace_in, pm, sizeof(pm[0]), ISTHD_BURST, NULL);
	for (i = 0; i < n; i++) {
		int rc = isth_pace_enqueue(w->eg.pace, pm[i].m, (uint32_t)pm[i].bytes);

		if (unlikely(rc < 0)) {
			isth_ctr_add(&w->st.drop[isthd_pace_refusal(rc)], 1);
			rte_pktmbuf_free(pm[i].m);
		}
	}
	return n;
}

/* Sum the peer DATA the RX worker handed over; serve the NACKs it steered
 * here (the island's of AGG stream k, peers' chunk NACKs of k's peers). */
unsigned int
isthd_handoff_in(struct isthd_worker *w, uint64_t now_ns)
{
	struct isthd_msg msg[ISTHD_BURST];
	struct rte_mbuf *m[ISTHD_BURST];
	struct isth_wire_pkt p[ISTHD_BURST];
	uint64_t bytes = 0;
	unsigned int n, i, k = 0;

	if (w->in == NULL)
		return 0;
	n = rte_ring_dequeue_burst_elem(w->in, msg, sizeof(msg[0]), ISTHD_BURST, NULL);
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (unlikely(msg[i].p.hdr.type == ISTH_WIRE_NACK)) {
			if (msg[i].p.hdr.flags & ISTH_WIRE_F_CHUNKS)
				isthd_repair_serve(w, &msg[i].p, now_ns);
			else
				isthd_island_nack(w, &msg[i].p, now_ns);
			rte_pktmbuf_free(msg[i].m);
			continue;
		}
		m[k] = msg[i].m;
		p[k] = msg[i].p;
		bytes += p[k++].payload_size;
	}
	if (k == 0)
		return n;
	isth_ctr_add(&w->st.peer_data, k);
	isth_ctr_add(&w->st.peer_data_bytes, bytes);
	/* takes the mbufs; refusals are the backend's counters */
	isth_backend_aggregate_burst(w->be, m, p, k, now_ns);
	return n;
}

/*
 * A port with one TX queue (the fallback): what the other workers finished
 * for @side onto queue 0, unchanged, by its owner. For the access port
 * their streams' AGGs (numbered), resends, GONEs; for the WAN the island's
 * DATA replicated to their peers, repairs, tail copies. With auth on each
 * was sealed by its worker after its last header change: nothing is
 * changed here. A peer's frames come from one worker through one FIFO
 * ring, so they keep their order. Up to @bursts bursts a pass (a burst of
 * DATA released by a worker is a copy per peer), so that the owner keeps
 * pace.
 */
unsigned int
isthd_handoff_relay(struct isthd_worker *w, enum isthd_side side, unsigned int bursts)
{
	struct isthd *d = w->d;
	struct rte_mbuf *in[ISTHD_BURST];
	unsigned int n, all = 0, b, k;

	for (b = 0; b < bursts; b++) {
		n = 0;
		for (k = 1; k < d->n_workers && n < ISTHD_BURST; k++) {
			struct isthd_worker *o = &d->workers[k];

			n += rte_ring_dequeue_burst(side == ISTHD_WAN ? o->wan_out : o->access_out,
				(void **)in + n, ISTHD_BURST - n, NULL);
		}
		if (n == 0)
			break;
		isthd_worker_tx(w, side, in, n);
		all += n;
	}
	return all;
}
