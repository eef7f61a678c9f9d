/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file wan.h
 * The core of isthmus-wan, the user-space WAN emulator (doc/wan.md).
 *
 * The core is built as a static library so that tests drive exactly the
 * code the binary runs: configuration parsers (EAL-free), and the emulator
 * proper, which polls one DPDK port per site and moves packets over the
 * topology's directed links.
 *
 * Threading: one lcore calls isth_wan_poll(); it is the only writer of every
 * field of struct isth_wan after isth_wan_create(). Counters are read by the
 * telemetry thread with relaxed loads.
 *
 * Time: every time is in TSC cycles of the clock the caller passes to
 * isth_wan_poll() (rte_rdtsc() in the binary, an injected clock in tests),
 * at isth_wan_params.tsc_hz cycles per second.
 */
#ifndef ISTH_WAN_H
#define ISTH_WAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "isth_topo.h"

struct isth_sched;

struct rte_mempool;

/** Maximum number of sites (the topology's limit). */
#define ISTH_WAN_MAX_SITES ISTH_TOPO_MAX_SITES
/** Maximum prefixes per site in the site map. */
#define ISTH_WAN_MAX_NETS 8
/** Maximum rows of a group table. */
#define ISTH_WAN_MAX_GROUPS 1024
/** Maximum length of a DPDK port name or id in the site map, with the NUL. */
#define ISTH_WAN_DEV_MAX 64

/* ------------------------------------------------------------------ */
/* Configuration (EAL-free)                                            */
/* ------------------------------------------------------------------ */

/** One site's row of the site map. */
struct isth_wan_site_conf {
	bool present; /**< the site has a port; false: transit only */
	char dev[ISTH_WAN_DEV_MAX]; /**< DPDK port name or numeric id */
	bool mac_learn; /**< edge MAC learnt from received frames */
	uint8_t mac[6]; /**< edge MAC (destination on egress) */
	bool gw_mac_set; /**< false: the port's own MAC */
	uint8_t gw_mac[6]; /**< emulator-side MAC: source on egress, ARP answers */
	uint32_t gw_ip; /**< 0, or a local address answered by ARP (a kernel gateway) */
	int nnets;
	uint32_t net[ISTH_WAN_MAX_NETS]; /**< prefixes, host order */
	uint8_t plen[ISTH_WAN_MAX_NETS];
	int line; /**< line in the site map */
};

/** The site map, indexed by the topology's site index. */
struct isth_wan_sitemap {
	struct isth_wan_site_conf site[ISTH_WAN_MAX_SITES];
};

/** One row of the group table. */
struct isth_wan_group {
	uint32_t ip; /**< group address, host order */
	uint64_t members; /**< bitmap of topology site indices */
	int line;
};

/** The group table. */
struct isth_wan_groups {
	int n;
	struct isth_wan_group g[ISTH_WAN_MAX_GROUPS];
};

/** Impairments and queue of one directed link. */
struct isth_wan_impair {
	double loss; /**< random loss probability */
	bool ge; /**< Gilbert-Elliott bursty loss instead of @c loss */
	double ge_p; /**< P(good -> bad) per packet */
	double ge_r; /**< P(bad -> good) per packet */
	double ge_loss_good; /**< loss probability in the good state */
	double ge_loss_bad; /**< loss probability in the bad state */
	double dup; /**< duplication probability */
	double reorder; /**< probability of an extra @c reorder_ms delay */
	double reorder_ms; /**< extra delay of reordered packets */
	double corrupt; /**< probability of flipping one byte */
	double jitter_ms; /**< extra delay uniform in [0, jitter_ms], order kept */
	uint64_t queue_bytes; /**< tail-drop limit of the link's FIFO */
	/**
	 * 0: one FIFO for every frame. Otherwise frames marked DSCP EF
	 * (ISTH_WAN_DSCP_EF) are a priority class served strictly before the
	 * rest, with a FIFO of their own limited to this many bytes
	 * (doc/wan.md, "Priority class").
	 */
	uint64_t prio_queue_bytes;
};

/** The DSCP of the priority class: Expedited Forwarding (RFC 3246). */
#define ISTH_WAN_DSCP_EF 46

/** Defaults of isth_wan_impair: nothing impaired, 1 MiB queue. */
#define ISTH_WAN_QUEUE_BYTES_DEFAULT (1u << 20)

/**
 * Parse a site map (doc/wan.md, "Site map").
 * @param err receives "name:line: reason" on failure
 * @return 0, or -EINVAL.
 */
int isth_wan_sitemap_parse(const struct isth_topo *t, const char *name, const char *text,
	struct isth_wan_sitemap *out, char *err, size_t errlen);

/**
 * Parse a group table (doc/wan.md, "Group table"); members must be sites
 * that have a port in @p map.
 * @return 0, or -EINVAL.
 */
int isth_wan_groups_parse(const struct isth_topo *t, const struct isth_wan_sitemap *map,
	const char *name, const char *text, struct isth_wan_groups *out, char *err, size_t errlen);

/** Set every directed link of @p imp (ndlinks entries) to the defaults. */
void isth_wan_impair_default(struct isth_wan_impair *imp, int ndlinks);

/**
 * Apply one impairment spec "[LINK:]key=value[,key=value...]" where LINK is
 * "A->B" (one direction), "A-B" (both) or absent (every link).
 * Keys: loss, ge (p/r/loss_bad[/loss_good]), dup, reorder, reorder-ms,
 * corrupt, jitter-ms, queue-bytes, prio-queue-bytes (0: no priority class).
 * @return 0, or -EINVAL with a message in @p err.
 */
int isth_wan_impair_apply(const struct isth_topo *t, struct isth_wan_impair *imp, const char *spec,
	char *err, size_t errlen);

/**
 * Parse an epoch file (--epoch-file, doc/wan.md): one line holding the
 * epoch in CLOCK_REALTIME ns, a positive decimal integer ("010" is ten);
 * '#' comments and blank lines allowed.
 * @param name  the file's name, for "name:line: reason" in @p err
 * @return 0 and *ns, or -EINVAL (@p ns untouched).
 */
int
isth_wan_epoch_parse(const char *name, const char *text, uint64_t *ns, char *err, size_t errlen);

/**
 * Read and parse the epoch file @p path (isth_wan_epoch_parse()).
 * @return 0 and *ns; -ENOENT if the file does not exist (not an error
 *         before the job's epoch is chosen); -EINVAL with the reason in @p err.
 */
int isth_wan_epoch_read(const char *path, uint64_t *ns, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* The emulator                                                        */
/* ------------------------------------------------------------------ */

/** Emulator parameters. */
struct isth_wan_params {
	double scale; /**< capacities are divided by this (>= 1 not required, > 0) */
	uint64_t seed; /**< impairment PRNG seed */
	uint64_t tsc_hz; /**< cycles per second of the clock given to poll (0: rte_get_tsc_hz()) */
	uint32_t lane_entries; /**< packets in flight per link lane, power of two (0: 16384) */
	bool decrement_ttl; /**< decrement the IPv4 TTL on every link */
	struct rte_mempool *pool; /**< for multicast and duplicate copies */
	/**
	 * NULL: every stream on shortest paths. Otherwise the schedule whose
	 * 'route' lines (doc/schedule-file.md) route a packet that enters at
	 * site j during cycle round r (its round number modulo the cycle)
	 * towards each destination i: the planned path of (r, j, i) where the
	 * file has one, the shortest path elsewhere. Islands are matched to
	 * sites by name. Read only in isth_wan_create().
	 */
	const struct isth_sched *sched;
	/** Clock time (cycles of the poll clock) of round 0's start; rounds
	 * before it use shortest paths. Only with @c sched. UINT64_MAX: not
	 * known yet (shortest paths until isth_wan_set_epoch()). */
	uint64_t epoch_tsc;
};

/** An emulator instance. Opaque. */
struct isth_wan;

/** Drop and event reasons of a directed link. */
enum isth_wan_link_ctr {
	ISTH_WAN_L_QUEUE_FULL = 0, /**< tail drop: backlog + packet > queue_bytes */
	ISTH_WAN_L_LOSS, /**< random or Gilbert-Elliott loss */
	ISTH_WAN_L_TTL, /**< TTL expired (with decrement_ttl) */
	ISTH_WAN_L_RING_FULL, /**< more packets in flight than lane_entries */
	ISTH_WAN_L_NOMBUF, /**< no mbuf for a copy */
	ISTH_WAN_L_CORRUPTED, /**< (not a drop) a byte was flipped */
	ISTH_WAN_L_DUPLICATED, /**< (not a drop) an extra copy was sent */
	ISTH_WAN_L_REORDERED, /**< (not a drop) extra delay applied */
	ISTH_WAN_L_PRIO_FULL, /**< tail drop: priority backlog + packet > prio_queue_bytes */
	ISTH_WAN_L_PRIO, /**< (not a drop) served in the priority class */
	ISTH_WAN_L_NCTR
};

/** Drop reasons and events of a site's port. */
enum isth_wan_port_ctr {
	ISTH_WAN_P_NOT_IPV4 = 0, /**< neither IPv4 nor ARP */
	ISTH_WAN_P_BAD_IPV4, /**< malformed IPv4 header */
	ISTH_WAN_P_NO_ROUTE, /**< unicast destination in no site's prefixes */
	ISTH_WAN_P_NO_GROUP, /**< multicast group not in the group table */
	ISTH_WAN_P_SAME_SITE, /**< destination in the ingress site itself */
	ISTH_WAN_P_LINK_LOCAL, /**< 224.0.0.0/24 or limited broadcast: not forwarded */
	ISTH_WAN_P_NO_MAC, /**< egress site MAC not learnt yet */
	ISTH_WAN_P_TX_FULL, /**< the port did not take the packet */
	ISTH_WAN_P_NOMBUF, /**< no mbuf for a multicast copy */
	ISTH_WAN_P_ARP_REPLIES, /**< (not a drop) ARP requests answered */
	ISTH_WAN_P_ARP_IGNORED, /**< ARP other than a request for a remote address */
	ISTH_WAN_P_NCTR
};

/** Counters of a directed link. */
struct isth_wan_link_stats {
	uint64_t pkts; /**< packets admitted to the link */
	uint64_t bytes;
	uint64_t queue_hw_bytes; /**< highest backlog seen, bytes (including the packet) */
	uint64_t ctr[ISTH_WAN_L_NCTR];
};

/** Counters of a site's port. */
struct isth_wan_port_stats {
	uint64_t rx_pkts, rx_bytes;
	uint64_t tx_pkts, tx_bytes;
	uint64_t ctr[ISTH_WAN_P_NCTR];
};

/** Name of a link counter ("queue_full", ...). */
const char *isth_wan_link_ctr_name(enum isth_wan_link_ctr c);
/** Name of a port counter ("no_route", ...). */
const char *isth_wan_port_ctr_name(enum isth_wan_port_ctr c);

/**
 * Create an emulator. Resolves every present site's port (which the caller
 * has configured and started), builds the route tables from @p t and the
 * LPM from @p map. @p imp has isth_topo_ndlinks(t) entries. Nothing
 * is retained from the arguments except @p t, which must outlive the
 * emulator, and the pool.
 * @return the emulator, or NULL with rte_errno set (EINVAL, ENODEV, ENOMEM).
 */
struct isth_wan *isth_wan_create(const struct isth_topo *t, const struct isth_wan_sitemap *map,
	const struct isth_wan_groups *groups, const struct isth_wan_impair *imp,
	const struct isth_wan_params *p);

/** Free an emulator and every packet still in flight; NULL is accepted. */
void isth_wan_free(struct isth_wan *w);

/**
 * One iteration: deliver every packet due at or before @p now (in the order
 * of their model times), then receive a burst from every site's port with
 * arrival time @p now, then flush the transmit buffers.
 * @return the number of packets received, moved or sent (0: idle).
 */
unsigned int isth_wan_poll(struct isth_wan *w, uint64_t now);

/**
 * Set (or move) the epoch of the planned routes: packets entering from
 * now on pick their round's tree from @p epoch_tsc (poll clock cycles;
 * UINT64_MAX: shortest paths again). Packets in flight keep theirs. The
 * job's epoch is chosen after the emulator starts (the testbed's
 * readiness), so it arrives at run time. Call from the polling lcore.
 * @return 0, or -ENOENT when the emulator has no schedule.
 */
int isth_wan_set_epoch(struct isth_wan *w, uint64_t epoch_tsc);

/** Model time of the next event, or UINT64_MAX if nothing is in flight. */
uint64_t isth_wan_next_event(const struct isth_wan *w);

/** Cycles per second the emulator converts with. */
uint64_t isth_wan_hz(const struct isth_wan *w);

/** The topology. */
const struct isth_topo *isth_wan_topo(const struct isth_wan *w);

/** Copy link @p e's counters (relaxed loads). @return 0, or -EINVAL. */
int isth_wan_link_stats(const struct isth_wan *w, int e, struct isth_wan_link_stats *out);

/** Copy site @p s's port counters. @return 0, -EINVAL, or -ENODEV (no port). */
int isth_wan_port_stats(const struct isth_wan *w, int s, struct isth_wan_port_stats *out);

/**
 * Resolve a site map's port=: a DPDK port name (net_ring0), else a decimal
 * port id of a valid port. Used by isth_wan_create() and by the binary,
 * which starts the ports before the emulator is created.
 * @return 0 and *port, or -ENODEV.
 */
int isth_wan_port_lookup(const char *dev, uint16_t *port);

/** DPDK port id of site @p s, or -ENODEV. */
int isth_wan_site_port(const struct isth_wan *w, int s);

/** Print every link's and port's counters to @p f. */
void isth_wan_print_stats(const struct isth_wan *w, FILE *f);

/** Print the routes and multicast trees to @p f (--dry-run). */
void isth_wan_print_routes(const struct isth_wan *w, FILE *f);

/**
 * Register /isthmus_wan/links and /isthmus_wan/ports on the telemetry
 * socket for @p w (one emulator per process).
 * @return 0, or a negative errno.
 */
int isth_wan_telemetry_register(struct isth_wan *w);

#endif /* ISTH_WAN_H */
