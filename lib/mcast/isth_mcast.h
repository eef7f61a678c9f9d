/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_MCAST_H
#define ISTH_MCAST_H

/**
 * @file
 * Replication: fan an outbound isthmus message out to every peer edge of
 * the local island's clique, or to one multicast group when the WAN
 * replicates.
 *
 * Input. An mbuf (chain) whose data starts at the isthmus header: the
 * UDP payload, message only, no Ethernet/IPv4/UDP. This library owns every
 * byte in front of the message, so each destination gets its own headers
 * without touching the shared payload. A frame received from the island
 * is turned into that form with rte_pktmbuf_adj(m, l2 + l3 + l4 sizes).
 *
 * Output, per destination, one frame: Ethernet [802.1Q] IPv4 UDP message.
 * - ISTH_MCAST_ZEROCOPY: a header mbuf from the header pool holding
 *   Ethernet/IPv4/UDP for that peer, chained to an indirect clone of the
 *   payload (rte_pktmbuf_attach / rte_pktmbuf_clone), so the payload is
 *   shared and reference counted, never copied. The port must accept
 *   chained mbufs.
 * - ISTH_MCAST_COPY: one linear mbuf per destination from the copy pool,
 *   headers and payload copied in; for PMDs that cannot send chains (the
 *   22.11 af_xdp PMD).
 * IPv4 total length and header checksum are computed per frame; the UDP
 * checksum too when conf.udp_csum is set (else 0, allowed for IPv4).
 *
 * Ownership. isth_mcast_fanout_burst() never takes the caller's reference
 * to an input packet: the caller frees it (or keeps it in a resend ring)
 * afterwards, whether or not copies were made. Every output frame is a new
 * reference that the caller transmits or frees.
 *
 * Threads. One handle has exactly one data-path reader (the lcore that
 * calls isth_mcast_fanout_burst()) and one control writer (the thread that
 * calls isth_mcast_publish*()); use one handle per (lcore, port). Tables
 * reach the data path through lib/rtab (rte_rcu_qsbr; doc/isthmusd.md,
 * "Round tables"): the control thread writes a buffer no reader can see
 * and publishes it with a release store; the data path loads it with
 * acquire once per burst and may use it until its next quiescent-state
 * report on conf.qs. The control thread never blocks: while the data path
 * has not yet reported since the buffer it would reuse was replaced,
 * publishing returns -EBUSY and is retried (doc/mcast.md).
 */

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most destinations of one table: a clique has at most 64 islands. */
#define ISTH_MCAST_MAX_DESTS 64u

/** conf.island of a handle that belongs to no island (a relay). */
#define ISTH_MCAST_NO_ISLAND 0xffu

/** How copies are built. */
enum isth_mcast_mode {
	ISTH_MCAST_ZEROCOPY = 0, /**< header mbuf + indirect payload */
	ISTH_MCAST_COPY = 1, /**< one linear frame per destination */
};

/** Configuration of one fan-out handle (one per data-path lcore and port). */
struct isth_mcast_conf {
	int socket_id; /**< NUMA socket for the handle */
	/**
	 * Local island id, < 64, refused as a peer; or ISTH_MCAST_NO_ISLAND
	 * for a replicator that belongs to no island (every island may then
	 * be a destination, 64 at most).
	 */
	uint8_t island;
	uint8_t src_mac[6]; /**< MAC of the WAN port */
	uint32_t src_ip; /**< IPv4 of this edge, host order */
	uint16_t src_port; /**< UDP source port, host order */
	uint16_t vlan; /**< 0: untagged; else VLAN id 1..4095 */
	uint8_t ttl; /**< 0 means 64 */
	uint8_t dscp; /**< 0..63 */
	enum isth_mcast_mode mode; /**< per port: can its PMD send chains? */
	/**
	 * Compute the UDP checksum of every frame (the message is summed
	 * once per packet, each destination adds its pseudo-header). Off:
	 * the checksum is 0, which IPv4 allows, and corruption on the way
	 * goes unnoticed by the receiver's parser.
	 */
	bool udp_csum;
	/**
	 * ZEROCOPY: header segments; data room >= RTE_PKTMBUF_HEADROOM + 46.
	 * Unused in COPY mode.
	 */
	struct rte_mempool *hdr_pool;
	/**
	 * ZEROCOPY: indirect mbufs (data room may be 0). May be the same
	 * pool as hdr_pool. Unused in COPY mode.
	 */
	struct rte_mempool *clone_pool;
	/** COPY: linear frames; data room bounds the frame size. */
	struct rte_mempool *copy_pool;
	/**
	 * Tables kept at once, one per round modulo n_rounds (0 means 1, at
	 * most 64). With 1, isth_mcast_fanout_burst() uses the newest table;
	 * with more, isth_mcast_fanout_round() uses its round's, so round
	 * r + 1's peers can be published while round r is still sent.
	 */
	uint32_t n_rounds;
	/**
	 * The data-path reader, registered on it and reporting quiescent
	 * states (lib/rtab). NULL: the control and data-path calls come
	 * from one thread.
	 */
	struct rte_rcu_qsbr *qs;
};

/**
 * The message's ones'-complement sum (the UDP checksum's share of it),
 * computed once and kept in @p m (an mbuf dynamic field and flag), so that
 * every handle fanning the same message out (several lcores, each with its
 * own destinations) reuses it instead of reading the whole message again.
 * Call it after the message's last change and before @p m is shared (the
 * thread that hands it to the others); a handle with conf.udp_csum off
 * ignores it. The flag is cleared with the mbuf's other offload flags when
 * the mbuf is reused.
 *
 * @return 0, or -ENOSPC (rte_errno) if the dynamic field could not be
 *         registered (the handles then sum the message themselves).
 */
int isth_mcast_sum_attach(struct rte_mbuf *m);

/** One peer edge of the clique. */
struct isth_mcast_peer {
	uint8_t island; /**< peer island id, < 64 */
	uint8_t mac[6]; /**< next-hop MAC toward the peer */
	uint32_t ip; /**< peer edge IPv4, host order, unicast */
	uint16_t port; /**< peer edge UDP port, host order, != 0 */
};

/**
 * Counters. Written by: the data-path lcore only (relaxed stores, no
 * atomic read-modify-write); read by: anyone via isth_mcast_stats_get().
 * Everything counted in copies, except the pkts_* fields: for every
 * processed packet with a table of D destinations,
 * D == copies + drop_hdr_alloc + drop_clone + drop_copy_alloc +
 *      drop_too_big + drop_len.
 */
struct isth_mcast_stats {
	uint64_t pkts; /**< input packets processed */
	uint64_t pkts_no_table; /**< dropped: nothing published yet */
	uint64_t pkts_no_peers; /**< table with 0 destinations */
	uint64_t copies; /**< frames handed to the caller */
	uint64_t drop_hdr_alloc; /**< header mbuf allocation failed */
	uint64_t drop_clone; /**< indirect clone allocation failed */
	uint64_t drop_copy_alloc; /**< COPY: frame allocation failed */
	uint64_t drop_too_big; /**< COPY: frame larger than a copy mbuf */
	uint64_t drop_len; /**< empty message or IPv4 length > 65535 */
};

struct isth_mcast;

/**
 * Create a fan-out handle. Checks every argument before allocating.
 *
 * @return the handle, or NULL with rte_errno = EINVAL (bad conf, pool
 *         missing for the mode, header pool data room too small) or
 *         ENOMEM.
 */
struct isth_mcast *isth_mcast_create(const struct isth_mcast_conf *conf);

/** Free a handle. Accepts NULL. Frees no mbufs: the caller owns them. */
void isth_mcast_destroy(struct isth_mcast *mc);

/**
 * Control thread: publish the clique's peer set for @p round in slot
 * round % n_rounds. Writes a spare table, then makes it current with a
 * release store; the data path switches at its next burst. @p n may be 0 (an island alone
 * this round: nothing is sent).
 *
 * @return 0; -EINVAL (n > 64, peers NULL with n > 0, island >= 64 or equal
 *         to the local island, duplicate island, IP zero or multicast,
 *         port 0); -EBUSY if every spare table may still be read by the
 *         data path (nothing written: retry, e.g. on the next tick).
 */
int isth_mcast_publish(
	struct isth_mcast *mc, uint32_t round, const struct isth_mcast_peer *peers, unsigned int n);

/**
 * Control thread: publish multicast-group mode for @p round: every packet
 * leaves once, to @p group_ip, with the group MAC 01:00:5e + the low 23
 * bits of the address (RFC 1112, 6.4); the WAN replicates.
 *
 * @return 0; -EINVAL if @p group_ip is not in 224.0.0.0/4 or port is 0;
 *         -EBUSY as isth_mcast_publish().
 */
int
isth_mcast_publish_group(struct isth_mcast *mc, uint32_t round, uint32_t group_ip, uint16_t port);

/**
 * Generation of the current table: 0 before the first publication, then
 * +1 per successful publish. Any thread.
 */
uint32_t isth_mcast_generation(const struct isth_mcast *mc);

/**
 * Control thread: the current table. Copies up to @p cap peers (the group
 * as one peer with island 0xff) and the round.
 *
 * @return destinations in the table, or -ENOENT before any publication.
 */
int isth_mcast_table_get(const struct isth_mcast *mc, uint32_t *round,
	struct isth_mcast_peer *peers, unsigned int cap);

/**
 * Data path: fan out a burst with the newest table (n_rounds 1; with more,
 * the table of slot 0). For each input packet in order, while @p out
 * has room for all of that packet's copies, writes one frame per
 * destination to @p out (in table order); copies that cannot be made are
 * dropped and counted. The whole burst uses one table generation.
 *
 * @param pkts     messages (data at the isthmus header); not consumed
 * @param n_pkts   packets in @p pkts
 * @param out      output frames, to transmit or free
 * @param out_cap  room in @p out; >= 64 guarantees progress
 * @param n_out    set to the frames written to @p out
 * @return packets processed (a prefix of @p pkts); packets beyond it did
 *         not fit in @p out and were not looked at
 */
uint16_t isth_mcast_fanout_burst(struct isth_mcast *mc, struct rte_mbuf **pkts, uint16_t n_pkts,
	struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out);

/**
 * Data path, handles with n_rounds > 1: true if round @p round's table is
 * published (its slot holds it, not another round's).
 */
bool isth_mcast_has_round(const struct isth_mcast *mc, uint32_t round);

/**
 * Data path: isth_mcast_fanout_burst() with round @p round's table (slot
 * round % n_rounds); packets of a round with no table are counted in
 * pkts_no_table and not replicated.
 */
uint16_t isth_mcast_fanout_round(struct isth_mcast *mc, uint32_t round, struct rte_mbuf **pkts,
	uint16_t n_pkts, struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out);

/** Read the counters (relaxed loads; any thread). */
void isth_mcast_stats_get(const struct isth_mcast *mc, struct isth_mcast_stats *st);

/** Ethernet group MAC of an IPv4 multicast address (host order). */
void isth_mcast_group_mac(uint32_t group_ip, uint8_t mac[6]);

/**
 * Mode a port needs: ISTH_MCAST_COPY when its driver is net_af_xdp (22.11
 * cannot send chains) or it does not advertise
 * RTE_ETH_TX_OFFLOAD_MULTI_SEGS, except the in-process net_ring and
 * net_null drivers, which pass mbuf pointers and accept chains.
 *
 * @return the mode, or -ENODEV if @p port_id is not a valid port.
 */
int isth_mcast_port_mode(uint16_t port_id);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_MCAST_H */
