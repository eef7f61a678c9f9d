/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "backend_fanout.h"
#include "backend_priv.h"

#define TAG_NONE UINT64_MAX

int
backend_fanout_init(struct backend_fanout *fo, const struct isth_mcast_conf *conf, uint8_t island,
	struct rte_rcu_qsbr *qs)
{
	struct isth_mcast_conf mcc = *conf;

	memset(fo, 0, sizeof(*fo));
	fo->published[0] = fo->published[1] = TAG_NONE;
	mcc.island = island;
	mcc.n_rounds = 2; /* round parity */
	mcc.qs = qs;
	fo->mc = isth_mcast_create(&mcc);
	if (fo->mc == NULL)
		return -rte_errno;
	return 0;
}

void
backend_fanout_fini(struct backend_fanout *fo)
{
	isth_mcast_destroy(fo->mc);
	fo->mc = NULL;
}

int
backend_fanout_publish(struct backend_fanout *fo, uint32_t round,
	const struct isth_mcast_peer *peers, unsigned int n)
{
	int rc;

	if (fo->published[round & 1] == round)
		return 0;
	/* one multicast destination: the WAN replicates (network replication) */
	if (n == 1 && peers[0].ip >> 28 == 0xe)
		rc = isth_mcast_publish_group(fo->mc, round, peers[0].ip, peers[0].port);
	else
		rc = isth_mcast_publish(fo->mc, round, peers, n);
	if (rc < 0)
		return rc;
	fo->published[round & 1] = round;
	return 0;
}

static inline uint32_t
msg_round(const struct rte_mbuf *m)
{
	return isth_wire_get_hdr_round(rte_pktmbuf_mtod(m, const uint8_t *));
}

uint16_t
backend_fanout_burst(struct backend_fanout *fo, struct rte_mbuf **pkts, uint16_t n,
	struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out)
{
	uint16_t i = 0, total = 0;

	while (i < n) {
		uint16_t j = i, done, run, k = 0;
		uint32_t round;

		if (unlikely(rte_pktmbuf_data_len(pkts[i]) < ISTH_WIRE_HDR_SIZE)) {
			isth_ctr_add(&fo->bad_msg, 1);
			i++;
			continue;
		}
		/* one table generation per run of packets of one round */
		round = msg_round(pkts[i]);
		while (j < n && rte_pktmbuf_data_len(pkts[j]) >= ISTH_WIRE_HDR_SIZE &&
			msg_round(pkts[j]) == round)
			j++;
		/* a table published between the two looks (round + 2 in
		 * the same slot) leaves the run to mcast's pkts_no_table */
		if (!isth_mcast_has_round(fo->mc, round)) {
			isth_ctr_add(&fo->no_table, j - i);
			i = j;
			continue;
		}
		run = j - i;
		done = isth_mcast_fanout_round(
			fo->mc, round, pkts + i, run, out + total, out_cap - total, &k);
		total += k;
		i += done;
		if (done < run)
			break; /* out is full */
	}
	*n_out = total;
	return i;
}

void
backend_fanout_stats(const struct backend_fanout *fo, struct isth_backend_stats *st)
{
	static const char *const mc_names[] = {
		"mcast_pkts",
		"mcast_pkts_no_table",
		"mcast_pkts_no_peers",
		"mcast_copies",
		"mcast_drop_hdr_alloc",
		"mcast_drop_clone",
		"mcast_drop_copy_alloc",
		"mcast_drop_too_big",
		"mcast_drop_len",
	};
	struct isth_mcast_stats ms;
	unsigned int i;

	isth_mcast_stats_get(fo->mc, &ms);
	for (i = 0; i < RTE_DIM(mc_names) && st->n < ISTH_BACKEND_MAX_STATS; i++) {
		st->names[st->n] = mc_names[i];
		st->values[st->n++] = ((const uint64_t *)&ms)[i];
	}
	if (st->n < ISTH_BACKEND_MAX_STATS) {
		st->names[st->n] = "repl_no_table";
		st->values[st->n++] = __atomic_load_n(&fo->no_table, __ATOMIC_RELAXED);
	}
	if (st->n < ISTH_BACKEND_MAX_STATS) {
		st->names[st->n] = "repl_bad_msg";
		st->values[st->n++] = __atomic_load_n(&fo->bad_msg, __ATOMIC_RELAXED);
	}
}
