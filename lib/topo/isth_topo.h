/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file isth_topo.h
 * WAN topology: sites (one island each), regions, full-duplex links, and
 * the shortest-latency routes between sites.
 *
 * EAL-free plain C, no solver: used by the planner (lib/plan), the WAN
 * emulator (app/isthmus-wan) and the tests. A topology is immutable once
 * loaded, so concurrent readers need no lock.
 *
 * Units: latencies in milliseconds (double), capacities in bit/s.
 * The CSV formats and accepted ranges are in doc/planner.md.
 */
#ifndef ISTH_TOPO_H
#define ISTH_TOPO_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Maximum number of sites (site sets are uint64_t bitmaps). */
#define ISTH_TOPO_MAX_SITES 64
/** Maximum length of a site or region name, including the NUL. */
#define ISTH_TOPO_NAME_MAX 32

/** A topology: sites (islands) and full-duplex links. Opaque. */
struct isth_topo;

/**
 * Load a topology from a sites CSV (site,region[,city]) and a links CSV
 * (a,b,one_way_ms,capacity_gbps[,source]); '#' lines are comments. The
 * island id of a site is its row order (0-based).
 * @param err  receives "file:line: reason" on failure (may be NULL)
 * @return the topology, or NULL with errno set (EINVAL bad input, ENOENT, ENOMEM).
 */
struct isth_topo *
isth_topo_load(const char *sites_path, const char *links_path, char *err, size_t errlen);

/**
 * Same as isth_topo_load() from in-memory text; @p sites_name and
 * @p links_name are used in error messages.
 */
struct isth_topo *isth_topo_parse(const char *sites_name, const char *sites_text,
	const char *links_name, const char *links_text, char *err, size_t errlen);

/** Free a topology; NULL is accepted. */
void isth_topo_free(struct isth_topo *t);
/** Number of sites (islands). */
int isth_topo_n(const struct isth_topo *t);
/** Name of site @p i, or NULL if out of range. */
const char *isth_topo_name(const struct isth_topo *t, int i);
/** Index of the site named @p name, or -1 (no such site, or NULL). */
int isth_topo_find(const struct isth_topo *t, const char *name);
/** Region id (0..nregions-1, in order of first appearance) of site @p i, or -1. */
int isth_topo_region(const struct isth_topo *t, int i);
/** Number of regions. */
int isth_topo_nregions(const struct isth_topo *t);
/** Name of region @p r, or NULL. */
const char *isth_topo_region_name(const struct isth_topo *t, int r);
/** Shortest-path (Dijkstra, latency) one-way latency in ms from @p a to @p b; -1 if out of range. */
double isth_topo_latency(const struct isth_topo *t, int a, int b);
/** Number of directed links (twice the physical links). */
int isth_topo_ndlinks(const struct isth_topo *t);
/**
 * Directed link @p e: its endpoints (site ids), one-way latency in ms and
 * capacity in bit/s; any output pointer may be NULL.
 * @return 0, or -EINVAL if @p e is not a directed link of @p t.
 */
int isth_topo_dlink(
	const struct isth_topo *t, int e, int *from, int *to, double *lat_ms, double *cap_bps);
/** Describe directed link @p e as "A->B" into @p buf. */
void isth_topo_dlink_name(const struct isth_topo *t, int e, char *buf, size_t len);
/**
 * Directed links on the shortest path from @p a to @p b, in order.
 * @return number of links written (at most @p max), or -EINVAL.
 */
int isth_topo_path(const struct isth_topo *t, int a, int b, int *links, int max);

/**
 * How many copies of site @p j's stream to the sites in bitmap @p dests
 * cross each directed link: @p mult (isth_topo_ndlinks() entries) receives
 * 0 or 1 per link on the multicast tree of shortest paths if @p unicast is
 * 0 (network replication), or the number of destinations whose unicast path
 * uses the link if @p unicast is 1 (replication at the sender's edge).
 */
void
isth_topo_stream_links(const struct isth_topo *t, int j, uint64_t dests, int unicast, int *mult);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_TOPO_H */
