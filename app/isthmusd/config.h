/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHD_CONFIG_H
#define ISTHD_CONFIG_H

/*
 * isthmusd's configuration (doc/isthmusd.md, "Configuration"): loaded and
 * validated completely before any port starts. Everything here is plain
 * data, written once by isthd_config_load() and read-only afterwards.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define ISTHD_MAX_PEERS 64
/* [access] island_sockets: the island's receiving sockets, one per AGG
 * stream at most (the 4-bit stream field, doc/protocol.md) */
#define ISTHD_ISLAND_MAX_SOCKETS 16u
/* [access] island_hosts: hosts of an island at most (doc/isthmusd.md,
 * "An island of several hosts") */
#define ISTHD_ISLAND_MAX_HOSTS 16u
/* [wan] group_base default: 239.192.0.0, organisation-local scope (RFC 2365) */
#define ISTHD_GROUP_BASE_DEFAULT 0xefc00000u
/* Cycle rounds a schedule may have with replication = network: one /16 */
#define ISTHD_GROUP_MAX_ROUNDS 1024u

/*
 * The WAN multicast group of a clique (doc/isthmusd.md, "Network
 * replication"): base + cycle round * 64 + the clique's lowest island id.
 * Every member computes the same address, and the testbed's group table
 * (scripts/testbed.sh) lists the clique's sites under it.
 */
static inline uint32_t
isthd_group_ip(uint32_t base, uint32_t cycle_round, uint64_t clique)
{
	return base + cycle_round * 64u + (uint32_t)__builtin_ctzll(clique);
}
#define ISTHD_NAME_MAX 32

enum isthd_epoch_mode {
	ISTHD_EPOCH_SCHEDULE = 0, /* the schedule file's epoch */
	ISTHD_EPOCH_FIXED, /* epoch_ns from the config or --epoch */
};

struct isthd_peer {
	char name[ISTHD_NAME_MAX]; /* island name, as in the schedule */
	uint32_t ip; /* peer edge's WAN address, host order */
	uint8_t mac[6]; /* next hop; default [wan] gateway_mac */
	uint16_t port; /* UDP port */
	uint64_t latency_ns; /* one-way, for WAN repair timing; 0: unknown */
	unsigned int line; /* of its [peer NAME] header */
};

/* One host of the island ([access] island_hosts): host k of K sends the
 * DATA of, and receives the AGGs of, chunk ids [k*C/K, (k+1)*C/K) of
 * every round (isthd_chunk_host) */
struct isthd_island_host {
	uint32_t ip; /* host order */
	uint8_t mac[6];
};

struct isthd_port {
	char dev[64]; /* DPDK port name ("net_ring_access") or id ("0") */
	char xdp_iface[32]; /* net_af_xdp: interface running lib/xdp's program */
	/* xdp_pin_sources: the program drops isthmus frames from addresses
	 * the site table does not name (access: the island; wan: the peers) */
	bool xdp_pin_sources;
	uint32_t ip; /* this edge's address on the port */
	uint8_t mac[6]; /* zero: the port's own MAC */
};

struct isthd_config {
	char path[PATH_MAX];
	/* [isthmusd] */
	char island[ISTHD_NAME_MAX]; /* name in the schedule, or a number */
	uint32_t job;
	char schedule[PATH_MAX]; /* may be overridden by --schedule */
	enum isthd_epoch_mode epoch_mode;
	uint64_t epoch_ns;
	/* the job's element type: DATA of another is dropped before it may
	 * claim a slot; ISTH_WIRE_DTYPE_NONE ("any"): not checked */
	uint8_t dtype;
	char backend[16];
	char fpga_device[64]; /* [fpga] device: the device (model: shm name) */
	uint32_t mtu;
	uint16_t udp_port;
	uint32_t mbufs; /* mbufs in the packet pool */
	/* [access] */
	struct isthd_port access;
	/* the island's hosts, 1..ISTHD_ISLAND_MAX_HOSTS: island_hosts, or
	 * island_ip/island_mac as the one host; island_ip/island_mac are
	 * host 0's either way */
	struct isthd_island_host island_hosts[ISTHD_ISLAND_MAX_HOSTS];
	unsigned int n_island_hosts;
	uint32_t island_ip;
	uint8_t island_mac[6];
	uint16_t island_port;
	/* sockets the island receives on, 1..ISTHD_ISLAND_MAX_SOCKETS: its
	 * ports are island_port + i; AGG/GONE of stream k go to socket k % it */
	uint32_t island_sockets;
	/* [wan] */
	struct isthd_port wan;
	uint8_t gateway_mac[6];
	bool wan_udp_csum; /* UDP checksums on DATA to peers (default: auth off) */
	bool wan_repair; /* NACK peers for lost DATA, serve theirs */
	uint64_t wan_repair_before_ns; /* last NACK this long before a round ends */
	uint64_t wan_tail_wait_ns; /* NACK a tail this long after it was due */
	unsigned int wan_last_nack_copies; /* copies of a peer NACK with no
					    * retry left before the cutoff */
	unsigned int wan_nack_echoes; /* echoes (ISTH_WIRE_F_ECHO) sent
				       * right after each such NACK and copy */
	unsigned int wan_repair_attempts; /* repairs of one chunk to one
					   * peer per round, at most */
	/* [wan] replication = network: the island's DATA leaves once, to the
	 * round's group (isthd_round_group()), and the WAN replicates; edge
	 * (false): one unicast copy per peer */
	bool wan_repl_network;
	uint32_t wan_group_base; /* [wan] group_base, host order, a /16 */
	unsigned int wan_tail_copies; /* last chunks of the island's DATA
				       * sent again to every peer, unasked */
	uint64_t wan_tail_copies_after_ns; /* that long after they left */
	uint8_t wan_repair_dscp; /* DSCP of repairs and NACKs to peers */
	/* [peer NAME] */
	struct isthd_peer peers[ISTHD_MAX_PEERS];
	unsigned int n_peers;
	/* [agg] */
	uint64_t agg_memory;
	uint64_t agg_timeout_ns;
	uint64_t agg_round_slack_ns;
	uint32_t agg_window;
	uint32_t agg_max_chunks;
	bool agg_max_abs_on; /* max_abs set: peers' fp32/bf16 elements bounded */
	float agg_max_abs; /* that bound, > 0 and finite */
	uint8_t bf16_out; /* ISTH_WIRE_DTYPE_BF16 or ISTH_WIRE_DTYPE_FP32 */
	/* [resend] */
	uint64_t resend_window_ns;
	uint32_t resend_entries;
	uint64_t resend_linger_ns;
	/* [pace] */
	uint32_t pace_queue;
	uint32_t pace_burst;
	uint64_t pace_late_ns;
	/* [poll] */
	uint32_t idle_polls; /* 0: never back off */
	uint64_t idle_sleep_ns;
	/* [telemetry] */
	bool telemetry;
	bool round_log;
	/* [auth] (doc/isthmusd.md, "Authentication") */
	bool auth; /* mode = on: wire version 2; off: version 1, loudly */
	char key_file[PATH_MAX]; /* required when on; checked when loaded */
	/* [metrics] listen = A.B.C.D:PORT (doc/isthmusd.md, "Metrics"): off
	 * unless set, as it opens a TCP port */
	bool metrics;
	uint32_t metrics_ip; /* host order */
	uint16_t metrics_port; /* 0: the kernel picks one (printed at start) */
	uint64_t seq_ahead_ns; /* seq_ahead: a seq further ahead of the clock is auth_ahead */
};

/*
 * Load @path into @cfg. On error returns a negative errno and writes
 * "file:line: [section] key: reason" into @err.
 */
int isthd_config_load(const char *path, struct isthd_config *cfg, char *err, size_t err_size);

/* Same, from text in memory; @name stands for the file name. */
int isthd_config_parse(
	const char *text, const char *name, struct isthd_config *cfg, char *err, size_t err_size);

/*
 * Print every key the loader reads, one line each: section, key, type
 * (lib/conf's getter), default ("required", "none", or as struct
 * isth_conf_key's def says), range ("min..max" or "-") and an enum's
 * names ("a|b" or "-"), tab-separated.
 * 0 or a negative errno.
 */
int isthd_config_keys(FILE *f);

#endif
