/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_BACKEND_FANOUT_H
#define ISTH_BACKEND_FANOUT_H

/*
 * Host fan-out shared by the backends: one lib/mcast handle keeping a table
 * per round parity (n_rounds 2, lib/rtab), so that round r + 1's peers can
 * be published while round r is still being sent, and a straggler of round
 * r is never sent to round r + 1's clique.
 */
#include <stdint.h>

#include "isth_backend.h"

struct backend_fanout {
	struct isth_mcast *mc;
	/* control only: the round published in each parity's slot, so that
	 * publishing a round again is a no-op (UINT64_MAX: none) */
	uint64_t published[2];
	/* Counters. Written by: data path (relaxed); read by: any thread. */
	uint64_t no_table; /* outbound DATA with no table for its round */
	uint64_t bad_msg; /* outbound message too short to read */
};

/* Create the handle from @conf (island set from @island; the data-path
 * reader registered on @qs, NULL: one thread). 0 or -errno. */
int backend_fanout_init(struct backend_fanout *fo, const struct isth_mcast_conf *conf,
	uint8_t island, struct rte_rcu_qsbr *qs);
/* NULL-tolerant on the handles. */
void backend_fanout_fini(struct backend_fanout *fo);
/* Control: publish @round's peers (idempotent per round); a single peer
 * whose ip is an IPv4 multicast group publishes that group instead
 * (isth_mcast_publish_group()). 0, -EINVAL, -EBUSY. */
int backend_fanout_publish(struct backend_fanout *fo, uint32_t round,
	const struct isth_mcast_peer *peers, unsigned int n);
/* Data path: isth_backend_replicate_burst()'s contract. */
uint16_t backend_fanout_burst(struct backend_fanout *fo, struct rte_mbuf **pkts, uint16_t n,
	struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out);
/* Append the fan-out counters (mcast_*, repl_no_table, repl_bad_msg) to
 * @st. */
void backend_fanout_stats(const struct backend_fanout *fo, struct isth_backend_stats *st);

#endif
