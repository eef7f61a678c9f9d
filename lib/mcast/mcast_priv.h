/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef MCAST_PRIV_H
#define MCAST_PRIV_H

/*
 * Internals of lib/mcast, shared by isth_mcast.c and the unit tests (which
 * drive the reader side by hand to simulate a burst in progress).
 */

#include <stdint.h>

#include <rte_common.h>

#include "isth_mcast.h"

/* Ethernet + 802.1Q + IPv4 (no options) + UDP. */
#define MCAST_MAX_HDR_SIZE 46u
#define MCAST_TMPL_SIZE 48u

/*
 * One destination, one cache line. tmpl holds the frame headers with the
 * IPv4 total length, IPv4 checksum and UDP length zeroed; csum_part is the
 * ones'-complement sum of the IPv4 header words in that state, so a packet
 * only adds its total length and folds.
 */
struct mcast_dest {
	uint8_t tmpl[MCAST_TMPL_SIZE];
	uint32_t csum_part;
	/* UDP checksum: pseudo-header addresses + protocol + both ports */
	uint32_t udp_part;
	struct isth_mcast_peer peer;
} __rte_cache_aligned;

struct mcast_table {
	uint32_t round;
	uint16_t n_dests;
	uint8_t group; /* 1: multicast-group mode */
	struct mcast_dest dests[ISTH_MCAST_MAX_DESTS];
};

struct isth_mcast {
	/* Written by: create only. */
	struct isth_mcast_conf conf;
	uint16_t hdr_size; /* bytes of Ethernet..UDP per frame */
	uint16_t l3_off; /* offset of the IPv4 header in tmpl */
	uint32_t copy_room; /* COPY: bytes a copy mbuf holds */

	/*
	 * Written by: control (release store after filling
	 * tables[gen & 1]); read by: data path (acquire, once per burst).
	 */
	uint32_t gen __rte_cache_aligned;

	/*
	 * Written by: data path only. rd_seq is odd while a burst is in
	 * progress; rd_gen is the generation that burst loaded. Read by:
	 * control, to know whether the inactive copy is free.
	 */
	uint64_t rd_seq __rte_cache_aligned;
	uint32_t rd_gen;

	/* Written by: data path (relaxed); read by: anyone. */
	struct isth_mcast_stats stats __rte_cache_aligned;

	/* tables[g & 1] is generation g. Written by: control (inactive). */
	struct mcast_table tables[2];
};

/*
 * Reader side of the double buffer. A burst announces itself (rd_seq odd),
 * then loads the generation. The seq_cst fence pairs with the one in
 * mcast_inactive_free(): either the control thread sees the burst in
 * progress, or the burst sees the newest generation (store-buffering).
 */
static inline const struct mcast_table *
mcast_read_begin(struct isth_mcast *mc, uint32_t *genp)
{
	uint64_t s = mc->rd_seq + 1;
	uint32_t g;

	__atomic_store_n(&mc->rd_seq, s, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	g = __atomic_load_n(&mc->gen, __ATOMIC_ACQUIRE);
	__atomic_store_n(&mc->rd_gen, g, __ATOMIC_RELEASE);
	*genp = g;
	return g == 0 ? NULL : &mc->tables[g & 1];
}

/* The table reads of the burst happen before the release. */
static inline void
mcast_read_end(struct isth_mcast *mc)
{
	__atomic_store_n(&mc->rd_seq, mc->rd_seq + 1, __ATOMIC_RELEASE);
}

#endif /* MCAST_PRIV_H */
