/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef MCAST_PRIV_H
#define MCAST_PRIV_H

/*
 * Internals of lib/mcast, shared by isth_mcast.c and the unit tests (which
 * look at a published table while they hold it).
 */

#include <stdint.h>

#include <rte_common.h>

#include "isth_mcast.h"
#include "isth_rtab.h"

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
	uint32_t n_rounds; /* round-table slots: round % n_rounds */

	/*
	 * The tables: slot round % n_rounds holds a struct mcast_table
	 * (lib/rtab). Written by: control (a buffer no reader sees, then a
	 * release store); read by: the data path (acquire, once per run of
	 * one round), valid until its next quiescent state.
	 */
	struct isth_rtab *rtab;
	/* Written by: control (release); read by: any: publications so far */
	uint32_t gen;
	/* control only: slot of the newest publication */
	uint32_t last_slot;

	/* Written by: data path (relaxed); read by: anyone. */
	struct isth_mcast_stats stats __rte_cache_aligned;
};

#endif /* MCAST_PRIV_H */
