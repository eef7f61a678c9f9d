/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulator's state, shared by its data path (wan.c), its set-up
 * (wan_setup.c) and its counters and telemetry (wan_stats.c). Not for the
 * binary nor the tests: they see wan.h only.
 *
 * Threading (wan.h): after isth_wan_create() the polling lcore is the only
 * writer of every field below; the telemetry thread reads the counters
 * (st) with relaxed loads.
 */
#ifndef ISTH_WAN_PRIV_H
#define ISTH_WAN_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>

#include "wan.h"

struct rte_lpm;
struct rte_mbuf;

#define TX_BURST 32
#define LANES 3 /* 0: in order; 1: reordered (extra delay); 2: priority class */
#define LANE_PRIO 2

struct ent {
	struct rte_mbuf *m;
	uint64_t t; /* model time of arrival at the link's far node */
	double start; /* model time the transmitter starts sending it */
	uint64_t dests; /* sites this copy must still reach */
	uint32_t src; /* routing tree: the ingress site, or a routed tree (w->tree_site) */
};

struct lane {
	struct ent *ring;
	uint32_t mask;
	uint32_t head; /* next to pop */
	uint32_t tail; /* next free */
	uint64_t last_t; /* arrival of the newest entry: keeps the lane sorted */
	int hpos; /* index in the heap, -1 when empty */
	int link;
};

struct link {
	int from, to;
	double lat_cyc;
	double cyc_per_byte; /* at the scaled capacity */
	double jitter_cyc;
	double reorder_cyc;
	double busy; /* model time the transmitter is free again */
	uint64_t qlimit;
	/* priority class (doc/wan.md, "Priority class"): 0 = none */
	uint64_t pqlimit;
	double pbusy; /* model time the priority class's FIFO is empty */
	struct isth_wan_impair imp;
	bool ge_bad; /* Gilbert-Elliott state */
	uint64_t rng[4];
	struct lane lane[LANES];
	/* written by: lcore; read by: telemetry (relaxed) */
	struct isth_wan_link_stats st;
	char name[2 * ISTH_TOPO_NAME_MAX + 4];
};

struct site {
	bool present;
	bool mac_learn;
	bool mac_known; /* written by: lcore (learning) */
	uint16_t port;
	struct rte_ether_addr mac; /* edge MAC */
	struct rte_ether_addr gw_mac; /* ours */
	uint32_t gw_ip;
	int nnets;
	uint32_t net[ISTH_WAN_MAX_NETS];
	uint32_t mask[ISTH_WAN_MAX_NETS];
	uint16_t ntx;
	struct rte_mbuf *txb[TX_BURST];
	/* written by: lcore; read by: telemetry (relaxed) */
	struct isth_wan_port_stats st;
};

struct isth_wan {
	const struct isth_topo *t;
	int n;
	int ndl;
	uint64_t hz;
	bool dec_ttl;
	struct rte_mempool *pool;
	struct rte_lpm *lpm;
	int ngroups;
	uint32_t *group_ip; /* sorted */
	uint64_t *group_members;
	int16_t *nh; /* nh[(tree * n + v) * n + d]: link out of v towards d on the tree */
	int ntrees; /* n shortest-path trees (tree s: ingress site s), then routed ones */
	int *tree_site; /* ingress site of each tree */
	/* per-round routes (params.sched): tree of ingress site s in cycle
	 * round r = rtree[r * n + s]; NULL: shortest paths only */
	int *rtree;
	int nrc; /* rounds in the cycle */
	double round_cyc; /* T in cycles */
	uint64_t epoch_tsc;
	struct link *links;
	struct lane **heap;
	int nheap;
	struct site site[ISTH_WAN_MAX_SITES];
};

/* Forget @p w in the telemetry callbacks (wan_stats.c) before it is freed. */
void wan_telemetry_forget(struct isth_wan *w);

#endif /* ISTH_WAN_PRIV_H */
