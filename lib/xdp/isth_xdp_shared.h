/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_XDP_SHARED_H
#define ISTH_XDP_SHARED_H

/**
 * @file
 * Layouts shared by the XDP steering program (isth_xdp.bpf.c) and its
 * loader (isth_xdp.c). Both sides include this file, so a map's key and
 * value cannot drift apart. Only <linux/types.h> types: the BPF side has
 * no libc.
 */

#include <linux/types.h>

/** Default UDP port steered to the AF_XDP socket (ISTH_WIRE_PORT). */
#define ISTH_XDP_DEFAULT_PORT 9471

/** Entries of xsks_map: one per NIC queue the PMD may bind (queue id). */
#define ISTH_XDP_MAX_QUEUES 64
/** Entries of the multicast group map. */
#define ISTH_XDP_MAX_GROUPS 256
/** Entries of the pinned source address map (peers' edges and the island). */
#define ISTH_XDP_MAX_SOURCES 256

/*
 * Map names. The af_xdp PMD of DPDK 22.11 looks its map up by the name
 * "xsks_map" in the object given as xdp_prog=; the others are found by
 * name among the maps of the program attached to an interface
 * (isth_xdp_counters()). BPF object names are limited to 15 characters.
 */
#define ISTH_XDP_MAP_XSKS "xsks_map"
#define ISTH_XDP_MAP_COUNTERS "isth_counters"
#define ISTH_XDP_MAP_CONFIG "isth_config"
#define ISTH_XDP_MAP_GROUPS "isth_groups"
#define ISTH_XDP_MAP_SOURCES "isth_sources"

/**
 * Verdict counters, one copy per CPU in a BPF_MAP_TYPE_PERCPU_ARRAY with
 * a single entry (key 0). Written by: the XDP program on each CPU, each
 * CPU its own copy; read by: the loader, which sums the copies. Every
 * frame the program sees increments exactly one of them.
 */
struct isth_xdp_cpu_counters {
	/** isthmus frames handed to the AF_XDP socket of their queue */
	__u64 steered;
	/** frames left to the kernel: not isthmus (ARP, ICMP, SSH, other
	 * UDP ports, groups not in the map, IPv4 fragments) */
	__u64 passed;
	/** frames whose headers are truncated or inconsistent (Ethernet,
	 * VLAN, IPv4 or UDP header beyond the frame, IHL < 5, total length
	 * beyond the frame); left to the kernel, which drops them */
	__u64 malformed;
	/** isthmus frames on a queue without an AF_XDP socket in xsks_map;
	 * left to the kernel (no socket: dropped there) */
	__u64 no_xsk;
	/** isthmus frames from a source address not in isth_sources while
	 * ISTH_XDP_CFG_F_PIN_SOURCES is set: dropped here (XDP_DROP) */
	__u64 spoofed;
};

/** Flags of struct isth_xdp_config. */
#define ISTH_XDP_CFG_F_ANY_GROUP 0x1 /**< steer every multicast group */
/** Source pinning: drop isthmus frames whose IPv4 source address is not in
 * isth_sources (the site table's peer edges and the island). */
#define ISTH_XDP_CFG_F_PIN_SOURCES 0x2

/**
 * Run-time configuration: BPF_MAP_TYPE_ARRAY, one entry (key 0).
 * Written by: the control plane (isth_xdp_configure(),
 * isth_xdp_set_port()); read by: the XDP program on every frame. A zero
 * udp_port means "the default": the program's .rodata default port
 * (ISTH_XDP_DEFAULT_PORT unless a loader changed it before load), so an
 * object loaded by the PMD steers the default port before anyone
 * configures it.
 */
struct isth_xdp_config {
	__u16 udp_port; /**< destination port, host byte order; 0: default */
	__u16 flags; /**< ISTH_XDP_CFG_F_* */
	__u32 reserved; /**< zero */
};

/**
 * Multicast groups: BPF_MAP_TYPE_HASH, key = IPv4 group address in
 * network byte order (__be32), value = struct isth_xdp_group.
 */
struct isth_xdp_group {
	__u32 job; /**< job the group belongs to (informational) */
};

/**
 * Pinned sources: BPF_MAP_TYPE_HASH, key = IPv4 source address in network
 * byte order (__be32), value = struct isth_xdp_source. Written by: the
 * control plane (isth_xdp_source_add()); read by: the XDP program on every
 * isthmus frame while ISTH_XDP_CFG_F_PIN_SOURCES is set.
 */
struct isth_xdp_source {
	__u32 island; /**< island the address speaks for (informational) */
};

#endif /* ISTH_XDP_SHARED_H */
