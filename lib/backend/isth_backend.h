/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_BACKEND_H
#define ISTH_BACKEND_H

/**
 * @file
 * Backends: the one interface through which isthmusd has inbound DATA
 * aggregated and outbound DATA replicated. The software backend ("sw",
 * lib/agg + lib/mcast on the calling lcore) is the default; an FPGA
 * backend drives a device through the interface of doc/fpga-interface.md.
 * Resend rings, the pacer, telemetry and the controller sit above this
 * interface and are the same whatever the backend.
 *
 * Contract (every backend keeps it; tests/backend checks it):
 *
 * - Threads. A backend handle has one *data-path owner* (the lcore that
 *   calls isth_backend_aggregate_burst(), isth_backend_drain(),
 *   isth_backend_replicate_burst() and isth_backend_flush()) and one
 *   *control* thread (the one that calls isth_backend_set_round()).
 *   isth_backend_stats() and isth_backend_caps() may be called from any
 *   thread. Nothing on the data path blocks, allocates from the heap or
 *   makes a syscall; set_round never blocks either (it may ask for a
 *   retry with -EBUSY).
 *
 * - mbuf ownership. aggregate_burst() *takes* every mbuf passed to it,
 *   accepted or refused: the backend frees it once its elements are
 *   summed (sw: immediately; fpga: when the device's DMA completes).
 *   drain() *gives* the caller new mbufs, each holding one AGG message
 *   whose data starts at the isthmus header, with enough headroom for
 *   Ethernet + 802.1Q + IPv4 + UDP; its seq field is 0 and its sender is
 *   the local island: the caller numbers it (resend ring) and frames it.
 *   replicate_burst() does *not* take the input mbufs (the caller frees
 *   them or keeps them for resends) and gives the caller one new frame per
 *   destination, ready to transmit.
 *
 * - Exactly once. A contribution is summed at most once into what drain()
 *   returns; the partial aggregates of one chunk carry disjoint bitmaps.
 *   Every refused contribution is counted under a named reason.
 *
 * - Rounds. set_round() publishes, for one round, the expected
 *   contributors (the local island's clique minus itself) and the peers
 *   to replicate to. Publish round r + 1 before round r ends. Inbound DATA
 *   for rounds never published, or older than the window, is refused and
 *   counted; outbound DATA whose round has no published peer table is
 *   dropped and counted.
 */

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>

#include "isth_mcast.h"
#include "isth_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct isth_backend;

/** What a backend can do. */
struct isth_backend_caps {
	const char *name; /**< "sw", "fpga" */
	uint64_t mem_bytes; /**< aggregation memory (the HBM), bytes */
	uint32_t dtypes; /**< bit (1 << dtype) per supported dtype */
	uint32_t max_islands; /**< contributor bitmap width */
	uint32_t max_elems; /**< elements per chunk */
	uint32_t max_chunks; /**< chunk ids per round */
	uint32_t n_slots; /**< aggregation slots in the memory */
	bool replicates; /**< fans out outbound DATA itself */
	/** verifies the tags of the DATA aggregate_burst() is given (wire
	 * v2): the caller hands it DATA whose tag it has not checked */
	bool verifies;
	/** drain() returns sealed AGGs (v2, tag under the local island's
	 * DOWN key, seq from isth_backend_auth.agg_seq on, one per AGG) */
	bool seals;
};

struct isth_auth;

/**
 * Authentication offload (doc/fpga-interface.md 3.8): a backend that can
 * (fpga on a 1.1 device) verifies inbound DATA tags and seals AGGs; the
 * others ignore this. keys NULL: no offload.
 */
struct isth_backend_auth {
	/** the job's keys (the caller's; read at create and set_keys only) */
	const struct isth_auth *keys;
	bool seal; /**< also seal AGGs */
	uint64_t agg_seq; /**< seal: seq of the first AGG (the caller's resend ring's first) */
	/** WAN address of each island's edge, 0 if none: a DATA's key is the
	 * WAN key of the island whose edge its source address is (the site
	 * table), never the header's sender */
	uint32_t site_ip[64];
	/**
	 * Data path, from aggregate_burst() and drain(): the device has
	 * judged the tag of DATA @p msg (its header, 40 bytes, readable for
	 * the call only): @p status is an enum isth_auth_status, ISTH_AUTH_OK
	 * (the tag verified: the caller may record the seq in its replay
	 * window) or E_FORMAT, E_EPOCH, E_TAG (refused, never summed).
	 */
	void (*verdict)(void *arg, const uint8_t *msg, int status);
	void *arg;
};

/** Configuration shared by all backends. */
struct isth_backend_conf {
	int socket_id;
	uint8_t island; /**< local island id */
	uint32_t n_islands; /**< islands in the job, 1..64 */
	uint32_t max_jobs; /**< jobs served at once (0: 1) */
	uint32_t max_elems; /**< elements per chunk (from the MTU) */
	uint32_t max_chunks; /**< chunks per round */
	uint64_t mem_bytes; /**< aggregation memory budget */
	uint64_t timeout_ns; /**< slot timeout after first arrival */
	uint32_t window; /**< rounds accepted (0: default) */
	uint8_t bf16_out; /**< ISTH_WIRE_DTYPE_BF16 or ISTH_WIRE_DTYPE_FP32 */
	/** Pool for the AGG mbufs drain() returns (data room >= 128 + 40 + 4 * max_elems). */
	struct rte_mempool *agg_pool;
	/** Replication: source addresses, mode and pools (struct isth_mcast_conf). */
	struct isth_mcast_conf mcast;
	/** Backend-specific: the device ("fpga": shared-memory name or PCI address). */
	const char *device;
	/** Authentication offload (fpga); zeroed: none. */
	struct isth_backend_auth auth;
	/**
	 * The readers of the round tables (lib/rtab, doc/isthmusd.md "Round
	 * tables"): the data-path owner is registered on it and reports a
	 * quiescent state once per poll-loop iteration. NULL: set_round() is
	 * called on the owner's own thread.
	 */
	struct rte_rcu_qsbr *qs;
};

/**
 * Counters of a backend, as name/value pairs (names are stable and end up
 * in telemetry as /isthmus/backend).
 */
#define ISTH_BACKEND_MAX_STATS 64
struct isth_backend_stats {
	unsigned int n;
	const char *names[ISTH_BACKEND_MAX_STATS];
	uint64_t values[ISTH_BACKEND_MAX_STATS];
};

/**
 * The few counters a caller acts on, by type: the controller's round log
 * and the shutdown drain read these, not names in isth_backend_stats.
 */
struct isth_backend_counts {
	uint64_t completed; /**< aggregates emitted complete */
	/** aggregates emitted partial: timeout and conflict (pool, bucket);
	 * flushes at shutdown are not counted here */
	uint64_t partial;
	/** aggregates still inside an asynchronous device (0: synchronous) */
	uint64_t dev_pending;
};

/**
 * Create a backend by name ("sw" or "fpga").
 * @return the handle, or NULL with rte_errno: EINVAL (bad conf), ENOENT
 *         (no such backend), ENODEV (device absent), ENOMEM.
 */
struct isth_backend *isth_backend_create(const char *name, const struct isth_backend_conf *conf);

/** Free a backend and every mbuf it still holds; NULL is fine. */
void isth_backend_destroy(struct isth_backend *be);

/** Names of the registered backends, NULL-terminated. */
const char *const *isth_backend_names(void);

/** Capabilities. Any thread. */
void isth_backend_caps(const struct isth_backend *be, struct isth_backend_caps *caps);

/**
 * Control thread: publish round @p round of job @p job: the contributors to
 * expect inbound and the peers outbound DATA of this round goes to.
 * Network replication: @p peers is exactly one entry whose ip is an IPv4
 * multicast group (224.0.0.0/4; island and mac are ignored): each DATA
 * leaves once, to that group, and the WAN replicates it to the clique.
 * @return 0; -EINVAL (bad sets); -EBUSY (retry shortly: the data path may
 *         still read the table this would overwrite).
 */
int isth_backend_set_round(struct isth_backend *be, uint32_t job, uint32_t round, uint64_t expected,
	const struct isth_mcast_peer *peers, unsigned int n_peers);

/**
 * Data path: aggregate a burst of validated DATA packets. @p pkts[i] holds
 * the frame @p parsed[i] was parsed from (the parse's pointers point into
 * it). Takes every mbuf.
 * @param now  ns, non-decreasing
 * @return contributions accepted (sw), or handed to the device
 *         (asynchronous backends: their verdicts are in the counters,
 *         under the same names)
 */
unsigned int isth_backend_aggregate_burst(struct isth_backend *be, struct rte_mbuf **pkts,
	const struct isth_wire_pkt *parsed, unsigned int n, uint64_t now);

/**
 * Data path: collect finished aggregates (completed, timed out at @p now,
 * or evicted) as AGG messages, at most @p cap.
 * @return mbufs written to @p out
 */
unsigned int
isth_backend_drain(struct isth_backend *be, uint64_t now, struct rte_mbuf **out, unsigned int cap);

/**
 * Data path: replicate a burst of outbound DATA messages (data at the
 * isthmus header). Does not take @p pkts. Writes at most @p out_cap frames.
 * @return packets processed (a prefix of @p pkts; the rest did not fit)
 */
uint16_t isth_backend_replicate_burst(struct isth_backend *be, struct rte_mbuf **pkts, uint16_t n,
	struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out);

/**
 * Data path: round @p round of job @p job (and older) is over: emit its
 * unfinished aggregates as partials now rather than at their timeout.
 * @return aggregates emitted, or -ENOTSUP if the backend relies on its
 *         slot timeout alone
 */
int isth_backend_expire_round(struct isth_backend *be, uint32_t job, uint32_t round);

/**
 * Control thread: the key file was reloaded; a backend that verifies or
 * seals loads the epochs of @p keys (those already loaded keep their
 * slot, those gone are retired). Call before the data path uses the new
 * keys, and only for epochs whose rounds have not started.
 * @return 0; -ENOTSUP (no offload); -ENOSPC (no free key slot)
 */
int isth_backend_set_keys(struct isth_backend *be, const struct isth_auth *keys);

/** Data path: emit every unfinished aggregate as a partial (shutdown). */
unsigned int isth_backend_flush(struct isth_backend *be);

/** Counters. Any thread. */
void isth_backend_stats(const struct isth_backend *be, struct isth_backend_stats *st);

/** The typed counters of struct isth_backend_counts. Any thread. */
void isth_backend_counts(const struct isth_backend *be, struct isth_backend_counts *c);

/*
 * Provider side: how a backend plugs in (like Open vSwitch's
 * netdev-provider.h). Each backend defines one struct isth_backend_ops and
 * is listed in isth_backend.c's table. Ops follow the contract above;
 * create() returns the backend's private state or NULL + rte_errno.
 */
struct isth_backend_ops {
	const char *name;
	void *(*create)(const struct isth_backend_conf *conf);
	void (*destroy)(void *priv);
	void (*caps)(const void *priv, struct isth_backend_caps *caps);
	int (*set_round)(void *priv, uint32_t job, uint32_t round, uint64_t expected,
		const struct isth_mcast_peer *peers, unsigned int n_peers);
	unsigned int (*aggregate_burst)(void *priv, struct rte_mbuf **pkts,
		const struct isth_wire_pkt *parsed, unsigned int n, uint64_t now);
	unsigned int (*drain)(void *priv, uint64_t now, struct rte_mbuf **out, unsigned int cap);
	uint16_t (*replicate_burst)(void *priv, struct rte_mbuf **pkts, uint16_t n,
		struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out);
	unsigned int (*flush)(void *priv);
	/* optional (NULL: -ENOTSUP) */
	int (*expire_round)(void *priv, uint32_t job, uint32_t round);
	void (*stats)(const void *priv, struct isth_backend_stats *st);
	void (*counts)(const void *priv, struct isth_backend_counts *c);
	/* optional (NULL: -ENOTSUP) */
	int (*set_keys)(void *priv, const struct isth_auth *keys);
};

#ifdef __cplusplus
}
#endif

#endif /* ISTH_BACKEND_H */
