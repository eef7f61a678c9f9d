/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_RESEND_H
#define ISTH_RESEND_H

/**
 * @file
 * Resend rings: keep the packets of one sequenced stream for a window so
 * that NACKed sequences can be sent again at the cost of a reference
 * count, and answer what cannot be served with GONE ranges.
 *
 * One ring per stream: the AGG stream an edge sends to its island, or the
 * DATA stream it sends over the WAN (for NACKs from peer edges). The ring
 * does not parse packets; it only needs the offset of the isthmus header
 * in the stored mbufs, to mark repairs ISTH_WIRE_F_RESENT (and optionally to
 * write the sequence number when a packet is stored).
 *
 * Threads: single writer. Every function except isth_resend_stats() must
 * be called by the ring's owner (one lcore); isth_resend_stats() may be
 * called from any thread. No allocation, lock or syscall after create
 * (a busy repair takes two mbufs from a mempool, see below).
 *
 * Mbuf ownership (the contract, in the manner of OVS's netdev-provider.h):
 *
 * - isth_resend_push() takes *its own* reference on every segment of the
 *   packet (rte_pktmbuf_refcnt_update(m, 1)); the caller keeps its
 *   reference and normally passes it to rte_eth_tx_burst(). Push *before*
 *   transmitting: once the PMD has the packet it may free it at any time.
 *   After a push the packet's bytes belong to the ring: the caller must not
 *   modify them (the PMD only reads them).
 * - The ring drops its reference when the packet leaves the window (time
 *   t_resend passed, or the size bound needs the slot) and in
 *   isth_resend_destroy().
 * - Every mbuf isth_resend_nack_serve() returns carries one new reference
 *   owned by the caller, who transmits it (the PMD frees it) or frees it.
 *   It is either the stored mbuf itself, or a fresh header segment chained
 *   to indirect mbufs of the stored one.
 *
 * Marking repairs ISTH_WIRE_F_RESENT without copying the payload: if the stored
 * packet's first segment is direct and the ring holds the only reference
 * (refcnt == 1: the original transmission has completed), the flag is set
 * in place (with an incremental UDP checksum update when the checksum is
 * non-zero and not left to TX offload) and the repair costs a refcnt bump;
 * the flag then stays set, so every later repair is a bare refcnt bump
 * even while earlier ones are still in flight. If someone else still holds
 * the packet (the PMD has not completed the original, or a multicast
 * fan-out holds clones), its bytes are not touched: the repair is a new
 * header segment (a copy of the hdr_off + 40 header bytes, flag set)
 * chained to an rte_pktmbuf_clone() of the payload, both from hdr_pool
 * (counted hdr_seg; an empty pool counts nomem and the sequence is left
 * for the next NACK). The resulting chain has two segments or more: PMDs
 * that cannot send chains (af_xdp in 22.11) need it linearised.
 */

#include <stdbool.h>
#include <stdint.h>

#include "isth_ctr.h"

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "isth_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct isth_resend;

/** Largest ring (entries). */
#define ISTH_RESEND_MAX_SIZE (1u << 24)

/** isth_resend_push() writes the sequence number into the header. */
#define ISTH_RESEND_F_STAMP (1u << 0)

/** Creation parameters. */
struct isth_resend_conf {
	int socket_id; /**< NUMA socket for the ring, or SOCKET_ID_ANY */
	uint32_t size; /**< entries: power of two, 2..ISTH_RESEND_MAX_SIZE */
	uint64_t window_ns; /**< t_resend: how long a packet is kept, > 0 */
	/** least time between two repairs of one sequence; 0: no limit */
	uint64_t linger_ns;
	/**
	 * Offset of the isthmus header in stored packets: 0 for bare
	 * messages, isth_wire_frame_hdr_size() for frames. When it is 8 or
	 * more, the 8 bytes before it are the UDP header.
	 */
	uint16_t hdr_off;
	uint32_t flags; /**< ISTH_RESEND_F_* */
	/** sequence number of the first packet, at most 2^64 - 2^62 - 1 (so
	 * that sequence numbers never wrap) */
	uint64_t first_seq;
	/**
	 * Header segments and clones for busy repairs (data room at least
	 * hdr_off + 40 bytes after the headroom); NULL: the packet's pool.
	 */
	struct rte_mempool *hdr_pool;
};

/**
 * Counters, cumulative. gone and future count the sequences refused, at
 * most the ring's size per refused range (a NACK may name 2^64 sequences,
 * which would otherwise saturate them from one NACK); truncated counts
 * in-window sequences, which the window bounds.
 */
#define ISTH_RESEND_COUNTERS(X) \
	X(stored, "packets pushed") \
	X(push_bad, "push refused: first segment too short") \
	X(expired, "released after window_ns") \
	X(overwritten, "released early by the size bound") \
	X(nacks, "NACKs begun (valid ones)") \
	X(bad_nack, "NACKs refused: no range, first > last") \
	X(served, "repairs returned") \
	X(hdr_seg, "of served: with a fresh header segment") \
	X(suppressed, "repairs refused within linger_ns") \
	X(nomem, "repairs not made: hdr_pool empty") \
	X(gone, "sequences answered GONE") \
	X(gone_ranges, "GONE ranges written, after coalescing") \
	X(future, "of gone: not sent yet (>= next sequence)") \
	X(truncated, "in-window sequences skipped by the scan bound") \
	X(held, "packets held now")

/** The counters of ISTH_RESEND_COUNTERS, in its order (lib/ctr convention). */
struct isth_resend_stats {
	ISTH_RESEND_COUNTERS(ISTH_CTR_FIELD)
};

/**
 * Progress through one NACK, owned by the caller. Start it with
 * isth_resend_nack_begin(); keep @p ranges alive until it is done.
 */
struct isth_resend_cursor {
	const struct isth_wire_range *ranges; /**< host order */
	uint32_t n_ranges;
	uint32_t idx; /**< range in progress */
	uint64_t pos; /**< next sequence of ranges[idx] */
	uint64_t scanned; /**< in-window sequences looked at */
	bool started; /**< pos is valid for ranges[idx] */
};

/**
 * Create a ring.
 *
 * @return the ring, or NULL with rte_errno EINVAL (bad @p conf) or ENOMEM.
 */
struct isth_resend *isth_resend_create(const struct isth_resend_conf *conf);

/** Release every held packet and free the ring. NULL is fine. */
void isth_resend_destroy(struct isth_resend *r);

/** Sequence number the next pushed packet gets. */
uint64_t isth_resend_next_seq(const struct isth_resend *r);

/**
 * Oldest sequence still held at the last push/serve/expire (equal to
 * isth_resend_next_seq() when the ring is empty).
 */
uint64_t isth_resend_oldest_seq(const struct isth_resend *r);

/**
 * Store a packet under the next sequence number, taking a reference (see
 * the file comment). With ISTH_RESEND_F_STAMP the sequence number is also
 * written into the isthmus header (UDP checksum kept right). Expires old
 * packets first; a full ring releases its oldest packet (overwritten).
 *
 * @param seq  if not NULL, set to the packet's sequence number
 * @return 0, or -EINVAL if the first segment is shorter than hdr_off + 40
 *         bytes (counted push_bad; the packet is not stored, no reference
 *         is taken and no sequence number is used).
 */
int isth_resend_push(struct isth_resend *r, struct rte_mbuf *m, uint64_t now_ns, uint64_t *seq);

/**
 * Push a burst. Stops at the first packet isth_resend_push() refuses.
 *
 * @return packets stored; they got consecutive sequence numbers
 */
unsigned int isth_resend_push_burst(
	struct isth_resend *r, struct rte_mbuf **pkts, unsigned int n, uint64_t now_ns);

/**
 * Release packets older than the window. push and nack_serve call it;
 * call it from an idle loop so that a quiet stream returns its mbufs.
 *
 * @return packets released
 */
unsigned int isth_resend_expire(struct isth_resend *r, uint64_t now_ns);

/**
 * Start answering a NACK of sequence ranges (inclusive, host order, e.g.
 * read with isth_wire_get_range()). Chunk-range NACKs (ISTH_WIRE_F_CHUNKS) are
 * not served by the ring: see doc/resend.md.
 *
 * @return 0, or -EINVAL (counted bad_nack) if @p n is 0 or a range has
 *         first > last; the cursor is then done and serves nothing.
 */
int isth_resend_nack_begin(struct isth_resend *r, struct isth_resend_cursor *c,
	const struct isth_wire_range *ranges, unsigned int n);

/**
 * Continue answering a NACK: classify its sequences in order into repairs
 * (returned in @p pkts, to transmit), GONE (before the window or not sent
 * yet; written to @p gone as coalesced inclusive ranges) and suppressed
 * (repaired less than linger_ns ago: no output).
 *
 * Bounded: returns when @p pkts or @p gone is full or the NACK is done.
 * Over the whole NACK at most `size` in-window sequences are looked at;
 * beyond that the in-window parts of the remaining ranges are skipped
 * (counted truncated, neither served nor GONE: the island NACKs again),
 * while their parts outside the window are still answered GONE. A NACK
 * naming 2^40 sequences thus costs O(n_ranges + size), not 2^40.
 *
 * @param gone    GONE ranges for this call, to send (may be fewer than
 *                one per call: send them whenever *n_gone > 0)
 * @param n_gone  set to the ranges written to @p gone
 * @return repairs written to @p pkts
 */
unsigned int isth_resend_nack_serve(struct isth_resend *r, struct isth_resend_cursor *c,
	uint64_t now_ns, struct rte_mbuf **pkts, unsigned int max_pkts,
	struct isth_wire_range *gone, unsigned int max_gone, unsigned int *n_gone);

/** True when every range of the NACK has been answered. */
static inline bool
isth_resend_nack_done(const struct isth_resend_cursor *c)
{
	return c->idx >= c->n_ranges;
}

/** Read the counters (any thread; fields are read one by one). */
void isth_resend_stats(const struct isth_resend *r, struct isth_resend_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_RESEND_H */
