/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RX worker's ports (ISTHD_ROLE_RX; doc/isthmusd.md, "Data path"):
 *
 *   access RX -> parse -> verify -> admit -> DATA: seal for the WAN, pacers
 *                                         | NACK: the island NACK server
 *   WAN RX    -> parse -> verify -> admit -> DATA: track (WAN repair), sum
 *                                         | chunk NACK: the repair server
 *
 * With several workers, what another worker sums or serves is handed to it
 * (handoff.c) at the end of the burst. Every packet it drops is counted
 * under a named reason, in the RX worker's counters.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "isth_agg.h"
#include "isthd.h"

static inline void
drop(struct isthd_worker *w, struct rte_mbuf *m, enum isthd_drop reason)
{
	isth_ctr_add(&w->st.drop[reason], 1);
	rte_pktmbuf_free(m);
}

/* A frame the wire parser refused. With auth on, a packet that is not
 * version 2 with AUTH and a 16-byte trailer is an auth_format refusal. */
static inline void
wire_refused(struct isthd_worker *w, struct rte_mbuf *m, enum isth_wire_reason r)
{
	if (w->d->auth.on && (r == ISTH_WIRE_E_VERSION || r == ISTH_WIRE_E_TRAILER))
		isth_ctr_add(&w->st.drop[ISTHD_DROP_auth_format], 1);
	else
		isth_ctr_add(&w->st.wire_drop[r], 1);
	rte_pktmbuf_free(m);
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

/*
 * One island DATA from the access port, from host @host of the island
 * (@cur, @pub: the controller's current and published, +1): admitted if
 * its round is the running one or the next, its shape the round's and its
 * chunk the host's ([access] island_hosts), sealed for the WAN (auth on)
 * and handed to the pacers. Takes @m.
 */
static inline void
access_data(struct isthd_worker *w, struct rte_mbuf *m, const struct isth_wire_pkt *p,
	unsigned int host, uint64_t cur, uint64_t pub)
{
	struct isthd *d = w->d;
	enum isthd_drop why;
	bool tree;
	int rc;

	/* Rounds are published one ahead: accept the running round and the
	 * next, refuse the rest. */
	if (p->hdr.round >= pub) {
		drop(w, m, ISTHD_DROP_round_early);
		return;
	}
	if (cur && p->hdr.round + 1 < cur) {
		drop(w, m, ISTHD_DROP_round_late);
		return;
	}
	why = data_shape(d, p);
	/* another host's chunk: that host is the one whose range it is */
	if (likely(why == ISTHD_DROP_MAX) && unlikely(isthd_chunk_host(d, p->hdr.chunk) != host)) {
		isth_ctr_add(&w->st.host[host][ISTHD_HOST_wrong_host], 1);
		why = ISTHD_DROP_access_wrong_host;
	}
	/* admitted: only now may its seq move the replay window, the one of
	 * its host's stream (a DATA refused above, another host's chunk
	 * included, leaves every window where it was); in a tree round,
	 * once the tree's checks passed too (tree.c) */
	tree = isthd_tree_round(&d->tree, p->hdr.round) != NULL;
	if (likely(why == ISTHD_DROP_MAX) && likely(!tree))
		why = isthd_auth_commit(w, ISTH_AUTH_UP, p, host);
	if (unlikely(why != ISTHD_DROP_MAX)) {
		drop(w, m, why);
		return;
	}
	/* a tree round: summed here, up the chunk's tree (tree.c) */
	if (unlikely(tree)) {
		/* summed: taken from the island, as a clique round's paced DATA */
		if (isthd_tree_island_data(w, m, p, host)) {
			isth_ctr_add(&w->st.data_in, 1);
			isth_ctr_add(&w->st.data_in_bytes, p->payload_size);
			isth_ctr_add(&w->st.host[host][ISTHD_HOST_data_in], 1);
		}
		return;
	}
	/* a bye (no peer in the round): nothing takes this DATA, and paced
	 * it would only hold the next round's behind it */
	{
		const struct isthd_repair_round *rt = isthd_repair_round(d, p->hdr.round);

		if (rt != NULL && rt->expected == 0) {
			isth_ctr_add(&w->st.data_in, 1);
			isth_ctr_add(&w->st.data_in_bytes, p->payload_size);
			isth_ctr_add(&w->st.host[host][ISTHD_HOST_data_in], 1);
			rte_pktmbuf_free(m);
			return;
		}
	}
	to_msg(m, p);
	/* onto the WAN: same header, same IV, the UP tag replaced by a tag
	 * list, one tag per peer of the round under its pair key; one frame
	 * for every peer, so the fan-out stays zero-copy. Several hosts: the
	 * seq of the edge's own DATA stream instead of the host's, so that
	 * peers see one stream (one replay window) per edge */
	if (d->auth.on) {
		/* one host: not even the call (the island's seq goes on) */
		if (unlikely(d->cfg.n_island_hosts > 1))
			isthd_auth_wan_seq(d, rte_pktmbuf_mtod(m, uint8_t *));
		if (unlikely(isthd_auth_seal_wan(d, w->eng, m, p->hdr.round) < 0)) {
			drop(w, m, ISTHD_DROP_auth_seal);
			return;
		}
	}
	/* The schedule's rates are payload rates (the planner's unit): pace
	 * payload bytes. Headers add 82 bytes per chunk on the wire, which a
	 * plan must budget for. Several workers: every worker with peers in
	 * the round paces it for them (handoff.c). */
	if (w->role & ISTHD_ROLE_STEER)
		rc = isthd_egress_steer(w, m, (uint32_t)p->payload_size, p->hdr.round);
	else
		rc = isth_pace_enqueue(w->eg.pace, m, (uint32_t)p->payload_size);
	if (unlikely(rc < 0)) {
		drop(w, m, isthd_pace_refusal(rc));
		return;
	}
	isth_ctr_add(&w->st.data_in, 1);
	isth_ctr_add(&w->st.data_in_bytes, p->payload_size);
	isth_ctr_add(&w->st.host[host][ISTHD_HOST_data_in], 1);
}

/* One burst from access RX queue @q. */
static unsigned int
access_rx_queue(struct isthd_worker *w, uint16_t q, uint64_t now_ns)
{
	struct isthd *d = w->d;
	uint64_t cur = __atomic_load_n(&d->current, __ATOMIC_ACQUIRE);
	uint64_t pub = __atomic_load_n(&d->published, __ATOMIC_ACQUIRE);
	struct rte_mbuf *rx[ISTHD_BURST];
	struct isth_wire_pkt parsed[ISTHD_BURST];
	uint8_t owner[ISTHD_BURST], hosts[ISTHD_BURST];
	uint16_t n, i, k = 0;

	n = rte_eth_rx_burst(d->access_port, q, rx, ISTHD_BURST);
	if (n == 0)
		return 0;
	isth_ctr_add(&w->st.access_rx, n);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = rx[i];
		enum isth_wire_reason r;

		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(rx[i + 1], void *));
		r = isth_wire_parse_frame(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m),
			&d->lim, &parsed[k]);
		if (unlikely(r != ISTH_WIRE_OK)) {
			wire_refused(w, m, r);
			continue;
		}
		/* the access link's key is the local island's UP key; the
		 * replay window is the one of the host its source address
		 * names (checked whole, MAC too, below) */
		owner[k] = d->island;
		{
			int h = isthd_island_host_of(d, parsed[k].addr.src_ip);

			hosts[k] = h < 0 ? ISTHD_AUTH_NO_HOST : (uint8_t)h;
		}
		rx[k++] = m;
	}
	/* verify before anything else looks at the packet */
	if (d->auth.on)
		k = (uint16_t)isthd_auth_verify_rx(w, ISTH_AUTH_UP, rx, parsed, owner, hosts, k);
	for (i = 0; i < k; i++) {
		struct rte_mbuf *m = rx[i];
		struct isth_wire_pkt *p = &parsed[i];
		int host;

		if (unlikely(p->hdr.job != d->cfg.job)) {
			drop(w, m, ISTHD_DROP_unknown_job);
			continue;
		}
		if (unlikely(p->hdr.sender != d->island)) {
			drop(w, m, ISTHD_DROP_access_not_island);
			continue;
		}
		/* DATA and NACKs only from the island's configured addresses
		 * (island_ip, or one of island_hosts). Several hosts: the
		 * host's MAC too, so that one host cannot send in another's
		 * name by its IP alone (with auth on, the hosts share the
		 * island's UP key: the address picks the host's window). */
		host = hosts[i] == ISTHD_AUTH_NO_HOST ? -1 : hosts[i];
		if (unlikely(host < 0 ||
			    (d->cfg.n_island_hosts > 1 &&
				    memcmp(p->addr.src_mac, d->cfg.island_hosts[host].mac, 6) !=
					    0))) {
			drop(w, m, ISTHD_DROP_access_bad_source);
			continue;
		}
		if (p->hdr.type == ISTH_WIRE_DATA) {
			access_data(w, m, p, (unsigned int)host, cur, pub);
		} else if (p->hdr.type == ISTH_WIRE_NACK) {
			enum isthd_drop why =
				isthd_auth_commit(w, ISTH_AUTH_UP, p, (unsigned int)host);

			if (unlikely(why != ISTHD_DROP_MAX)) {
				drop(w, m, why);
				continue;
			}
			/* AGG stream k's seqs: worker k's ring (the parser
			 * refused k >= n_workers, and chunk NACKs are 0) */
			if (p->hdr.stream != w->id) {
				isthd_handoff_stage(w, p->hdr.stream, m, p);
				continue;
			}
			isthd_island_nack(w, p, now_ns);
			rte_pktmbuf_free(m);
		} else {
			drop(w, m, ISTHD_DROP_access_bad_type);
		}
	}
	if (w->role & ISTHD_ROLE_STEER)
		isthd_handoff_flush(w); /* the island's DATA for the others */
	return n;
}

unsigned int
isthd_access_rx(struct isthd_worker *w, uint64_t now_ns)
{
	unsigned int n = access_rx_queue(w, 0, now_ns);

	/* an af_packet port's qpairs, over which the kernel spreads the
	 * island's flows (ports.c, port_start) */
	for (uint16_t q = 1; q < w->d->access_rxq; q++)
		n += access_rx_queue(w, q, now_ns);
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
 * doc/notes/performance-log.md section 6). Jumbo frames are prefetched up to
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

/*
 * Parse the @n frames of @rx in place, the ones kept (and their key owner,
 * auth on) compacted to the front of @rx, @parsed and @owner. @return how
 * many are kept.
 */
static inline uint16_t
wan_parse(struct isthd_worker *w, struct rte_mbuf **rx, uint16_t n, struct isth_wire_pkt *parsed,
	uint8_t *owner)
{
	const struct isthd *d = w->d;
	/* frames whose UDP checksum the NIC found good: parsed without
	 * summing them again (d->wan_rx_csum) */
	struct isth_wire_limits nic_lim = d->lim;
	uint16_t i, v = 0;

	nic_lim.check_udp_csum = false;
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
			wire_refused(w, m, r);
			continue;
		}
		if (d->auth.on) {
			/* the WAN key is the sending edge's: its owner comes
			 * from the site table entry of the source address */
			int o = peer_by_ip(d, parsed[v].addr.src_ip);

			if (unlikely(o < 0)) {
				drop(w, m, ISTHD_DROP_auth_key);
				continue;
			}
			owner[v] = (uint8_t)o;
		}
		rx[v++] = m;
	}
	return v;
}

/* Side-effect free: would isthd_repair_admit take chunk NACK @p by its
 * source and round (the same tests, without counting)? */
static inline bool
wan_nack_admissible(const struct isthd *d, const struct isth_wire_pkt *p)
{
	const struct isthd_peer *peer = d->peer_of[p->hdr.sender];
	const struct isthd_repair_round *rt;

	if (peer == NULL || p->addr.src_ip != peer->ip)
		return false;
	rt = isthd_repair_round(d, p->hdr.round);
	return rt != NULL && (rt->expected & (1ull << p->hdr.sender));
}

/* A WAN frame that is not DATA: a peer edge's chunk NACK for our island's
 * DATA is checked here and served by the worker that sends the round to
 * that peer, from its ring ("Workers"); anything else is refused. Takes @m. */
static inline void
wan_nack(struct isthd_worker *w, struct rte_mbuf *m, const struct isth_wire_pkt *p, uint64_t now_ns)
{
	const struct isthd *d = w->d;
	enum isthd_drop why;
	unsigned int k = 0;

	if (!(p->hdr.type == ISTH_WIRE_NACK && (p->hdr.flags & ISTH_WIRE_F_CHUNKS) &&
		    p->hdr.sender != d->island && p->hdr.bitmap == (1ull << d->island))) {
		drop(w, m, ISTHD_DROP_wan_bad_type);
		return;
	}
	/* The window moves only for a NACK admission would take: the tag's
	 * key is chosen by the source address, the window by the sender
	 * field, so a peer's NACK naming another sender (or a round it was
	 * not in) must not move that sender's window before admission
	 * refuses it. A refused one falls through to admission, which
	 * counts it as before. */
	if (wan_nack_admissible(d, p)) {
		why = isthd_auth_commit(w, ISTH_AUTH_WAN, p, 0);
		if (unlikely(why != ISTHD_DROP_MAX)) {
			drop(w, m, why);
			return;
		}
	}
	if (isthd_repair_admit(w, p, &k)) {
		if (k != w->id) {
			isthd_handoff_stage(w, k, m, p);
			return;
		}
		isthd_repair_serve(w, p, now_ns);
	}
	rte_pktmbuf_free(m);
}

/* Why peer DATA @p is refused (ISTHD_DROP_MAX: admitted): its job, its
 * sender not another island, its source not the sender's peer edge (the
 * site table), its round not one the aggregator holds (@pub: the
 * controller's published, +1; isthd_wan_round_refusal), its shape not
 * the round's. Auth on, all of them before the
 * replay window may move (isthd_auth_commit), so that no packet the edge
 * refuses moves it. */
static inline enum isthd_drop
wan_data_refusal(const struct isthd *d, const struct isth_wire_pkt *p, uint64_t pub)
{
	if (unlikely(p->hdr.sender == d->island))
		return ISTHD_DROP_wan_from_self;
	if (unlikely(d->peer_of[p->hdr.sender] == NULL ||
		    p->addr.src_ip != d->peer_of[p->hdr.sender]->ip))
		return ISTHD_DROP_data_bad_source;
	/* the device verifying the tags (auth_dev.c): a forged DATA is
	 * refused by its verdict first, and the verdict checks the round
	 * before the window moves */
	if (!d->auth.dev_verify) {
		enum isthd_drop why = isthd_wan_round_refusal(d, p->hdr.round, pub);

		if (unlikely(why != ISTHD_DROP_MAX))
			return why;
	}
	return data_shape(d, p);
}

/*
 * Why peer DATA @p's values are refused (ISTHD_DROP_MAX: not): a NaN or an
 * infinity (fp32, bf16) would poison the chunk's sum at every island, an
 * element above [agg] max_abs (when set) is out of what the job allows:
 * refused whole (the AGG's bitmap then lacks the sender, the island sees
 * the chunk partial). One vectorised pass over a payload the parse and
 * the tag verify have just read (lib/agg); the bound costs nothing more,
 * and only a refused chunk is read again to name the reason.
 */
static inline enum isthd_drop
data_values(const struct isthd *d, const struct isth_wire_pkt *p)
{
	enum isthd_drop why = isthd_values_refusal(&d->cfg, p, 1);

	if (likely(why == ISTHD_DROP_MAX))
		return why;
	ISTHD_REPAIR_TRACE(d, "%s r %u s %u c %u seq %" PRIu64,
		why == ISTHD_DROP_data_nonfinite ? "data_nonfinite" : "data_too_large",
		p->hdr.round, p->hdr.sender, p->hdr.chunk, (uint64_t)p->hdr.seq);
	return why;
}

/* A PARTIAL of a tree round (tree.c): the checks of a peer DATA (source,
 * round, shape, values), then the tree's (its sender a child of this edge,
 * its bitmap within the child's subtree; a result from the parent; then
 * its chunk's state), and only then may its seq move the replay window
 * (isthd_tree_partial). Takes @m. */
static void
wan_partial(struct isthd_worker *w, struct rte_mbuf *m, const struct isth_wire_pkt *p, uint64_t pub)
{
	enum isthd_drop why = wan_data_refusal(w->d, p, pub);

	/* wan_data_refusal leaves the round to the device's verdict when the
	 * device verifies, but only DATA goes to the device (auth_dev.c): a
	 * PARTIAL's round is checked here whoever verified its tag */
	if (likely(why == ISTHD_DROP_MAX) && w->d->auth.dev_verify)
		why = isthd_wan_round_refusal(w->d, p->hdr.round, pub);
	/* a sum of its bitmap's islands: max_abs scaled (tree.c) */
	if (likely(why == ISTHD_DROP_MAX))
		why = isthd_tree_values(w->d, p);
	if (likely(why == ISTHD_DROP_MAX))
		why = isthd_tree_admit(w->d, p);
	if (unlikely(why != ISTHD_DROP_MAX)) {
		drop(w, m, why);
		return;
	}
	isthd_tree_partial(w, p);
	rte_pktmbuf_free(m);
}

/* A chunk NACK of a tree round: a peer edge asks again for a PARTIAL this
 * edge sent it (tree.c, "Repair"); only the chunk's parent or child edge,
 * from its address, and only then may its seq move the replay window.
 * Takes @m. */
static void
wan_tree_nack(struct isthd_worker *w, struct rte_mbuf *m, const struct isth_wire_pkt *p)
{
	enum isthd_drop why = isthd_tree_nack_admit(w->d, p);

	if (likely(why == ISTHD_DROP_MAX))
		why = isthd_auth_commit(w, ISTH_AUTH_WAN, p, 0);
	if (unlikely(why != ISTHD_DROP_MAX)) {
		drop(w, m, why);
		return;
	}
	isthd_tree_nack(w, p);
	rte_pktmbuf_free(m);
}

static unsigned int
wan_rx_queue(struct isthd_worker *w, uint16_t q, uint64_t now_ns)
{
	struct isthd *d = w->d;
	struct rte_mbuf *rx[ISTHD_BURST], *keep[ISTHD_BURST];
	/* parsed in place; the DATA kept are compacted to the front (a
	 * parse is 136 bytes: copied only once something before it left) */
	struct isth_wire_pkt parsed[ISTHD_BURST];
	uint8_t owner[ISTHD_BURST];
	uint64_t pub;
	uint16_t n, i, k = 0, v;

	n = rte_eth_rx_burst(d->wan_port, q, rx, ISTHD_BURST);
	if (n == 0)
		return 0;
	/* read after the burst, not before: a round published while the
	 * burst was being read (or while a blocking PMD such as net_pcap on
	 * a FIFO waited for input) is one the aggregator already holds */
	pub = __atomic_load_n(&d->published, __ATOMIC_ACQUIRE);
	isth_ctr_add(&w->st.wan_rx, n);
	v = wan_parse(w, rx, n, parsed, owner);
	if (d->auth.dev_verify) /* DATA: the device verifies (auth_dev.c) */
		v = isthd_auth_dev_rx(w, rx, parsed, owner, v);
	else if (d->auth.on)
		v = (uint16_t)isthd_auth_verify_rx(w, ISTH_AUTH_WAN, rx, parsed, owner, NULL, v);
	for (i = 0; i < v; i++) {
		struct rte_mbuf *m = rx[i];
		struct isth_wire_pkt *p = &parsed[i];
		enum isthd_drop why;

		if (unlikely(p->hdr.job != d->cfg.job)) {
			drop(w, m, ISTHD_DROP_unknown_job);
			continue;
		}
		if (unlikely(p->hdr.type == ISTH_WIRE_PARTIAL)) {
			wan_partial(w, m, p, pub);
			continue;
		}
		if (unlikely(p->hdr.type == ISTH_WIRE_NACK && (p->hdr.flags & ISTH_WIRE_F_CHUNKS) &&
			    isthd_tree_round(&d->tree, p->hdr.round) != NULL)) {
			wan_tree_nack(w, m, p);
			continue;
		}
		if (unlikely(p->hdr.type != ISTH_WIRE_DATA)) {
			wan_nack(w, m, p, now_ns);
			continue;
		}
		why = wan_data_refusal(d, p, pub);
		/* a NaN or an infinity would poison the chunk's sum for every
		 * island: refused whole (the AGG's bitmap then lacks the
		 * sender, the island sees the chunk partial), one vectorised
		 * pass over a payload the parse and the tag verify just read */
		if (likely(why == ISTHD_DROP_MAX))
			why = data_values(d, p);
		/* admitted: its seq may move the replay window now; with the
		 * device verifying, only on its verdict (auth_dev.c) */
		if (likely(why == ISTHD_DROP_MAX) && !d->auth.dev_verify)
			why = isthd_auth_commit(w, ISTH_AUTH_WAN, p, 0);
		if (unlikely(why != ISTHD_DROP_MAX)) {
			/* a refused chunk value did arrive (its tag verified, or
			 * auth off): a NACK would only bring it again. With the
			 * device verifying, its tag is unchecked: NACKed. */
			if ((why == ISTHD_DROP_data_nonfinite ||
				    why == ISTHD_DROP_data_too_large) &&
				!d->auth.dev_verify)
				isthd_repair_track(w, p, now_ns);
			drop(w, m, why);
			continue;
		}
		/* With the device verifying tags (auth_dev.c), this DATA is not
		 * known to be genuine yet: WAN repair counts its chunk only on
		 * the device's verdict (isthd_auth_dev_verdict), so that a
		 * forged one can never hide a missing chunk from the NACKs. */
		if (!d->auth.dev_verify)
			isthd_repair_track(w, p, now_ns);
		/* several workers: chunk % n_workers sums it (handoff.c) */
		if (w->role & ISTHD_ROLE_STEER) {
			unsigned int c = p->hdr.chunk % d->n_workers;

			if (c != w->id) {
				isthd_handoff_stage(w, c, m, p);
				continue;
			}
		}
		isth_ctr_add(&w->st.peer_data_bytes, p->payload_size);
		if (k != i)
			parsed[k] = *p;
		keep[k++] = m;
	}
	if (w->role & ISTHD_ROLE_STEER)
		isthd_handoff_flush(w);
	if (k) {
		isth_ctr_add(&w->st.peer_data, k);
		/* Takes the mbufs; refusals (clique, round) are counted by
		 * the backend under their names. */
		isth_backend_aggregate_burst(w->be, keep, parsed, k, now_ns);
	}
	return n;
}

unsigned int
isthd_wan_rx(struct isthd_worker *w, uint64_t now_ns)
{
	unsigned int n = wan_rx_queue(w, 0, now_ns);

	/* an af_packet port's qpairs (ports.c, port_start), as access_rx */
	for (uint16_t q = 1; q < w->d->wan_rxq; q++)
		n += wan_rx_queue(w, q, now_ns);
	return n;
}
