/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_XDP_H
#define ISTH_XDP_H

/**
 * @file
 * Loader and control of the isthmus XDP steering program (isth_xdp.bpf.c).
 *
 * The program is usually loaded by DPDK's af_xdp PMD (devarg
 * xdp_prog=build/lib/xdp/isth_xdp.bpf.o), so its maps live in the PMD's
 * process and are reached here by *interface*: isth_xdp_open_iface() finds
 * the program attached to the interface, then its maps by name among the
 * program's map ids. Tests and tools can instead load their own copy with
 * isth_xdp_create() and attach it. Both give the same handle, through
 * which the counters are read and the port and multicast groups are set.
 * The maps can also be pinned in bpffs, by default under
 * /sys/fs/bpf/isthmus/<iface>/ (counters, config, groups, sources), for other
 * processes and for `bpftool map dump pinned ...`.
 *
 * EAL-free, control plane only: every call makes system calls. Errors are
 * negative errno; constructors return NULL and set errno. Needs
 * CAP_BPF + CAP_NET_ADMIN (or root); CAP_SYS_ADMIN to open another
 * process's maps by id.
 */

#include <stdbool.h>
#include <stdint.h>

#include "isth_xdp_shared.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Where isth_xdp_pin() puts an interface's maps when given no directory. */
#define ISTH_XDP_PIN_ROOT "/sys/fs/bpf/isthmus"

/** A handle on the steering program's maps (opaque). */
struct isth_xdp;

/** Summed per-CPU verdict counters (see struct isth_xdp_cpu_counters). */
struct isth_xdp_counters {
	uint64_t steered; /**< redirected to an AF_XDP socket */
	uint64_t passed; /**< not isthmus: left to the kernel */
	uint64_t malformed; /**< truncated/inconsistent headers: kernel */
	uint64_t no_xsk; /**< isthmus, but no socket on the queue */
	uint64_t spoofed; /**< isthmus, source not pinned: dropped */
};

/** How isth_xdp_attach() attaches. */
enum isth_xdp_mode {
	ISTH_XDP_MODE_AUTO = 0, /**< native if the driver has it, else generic */
	ISTH_XDP_MODE_SKB, /**< generic (skb) XDP: any netdev */
	ISTH_XDP_MODE_DRV, /**< native (driver) XDP; veth has it */
};

/**
 * Load a private copy of the program (not attached).
 *
 * @param default_port
 *   UDP port steered while the config map holds 0 (written into .rodata
 *   before load); 0 means ISTH_XDP_DEFAULT_PORT.
 * @return
 *   A handle, or NULL with errno set (EPERM without BPF privileges, or the
 *   errno of the failed bpf() call).
 */
struct isth_xdp *isth_xdp_create(uint16_t default_port);

/**
 * Open the maps of the isthmus program attached to an interface, whoever
 * loaded it (typically the af_xdp PMD). The handle keeps the maps alive:
 * reopen after the port is restarted, or the counters read are those of
 * the old, detached program.
 *
 * @param iface
 *   Interface name.
 * @return
 *   A handle, or NULL with errno: EINVAL (NULL or too long a name), ENODEV
 *   (no such interface), ENOENT (no XDP program attached), ESRCH (the
 *   attached program is not isthmus's: no maps of its names and sizes).
 */
struct isth_xdp *isth_xdp_open_iface(const char *iface);

/**
 * Open maps pinned by isth_xdp_pin().
 *
 * @param dir
 *   The directory given to isth_xdp_pin() (e.g.
 *   /sys/fs/bpf/isthmus/eth0).
 * @return
 *   A handle, or NULL with errno (ENOENT if nothing is pinned there,
 *   ESRCH if the pinned maps do not have the expected layout).
 */
struct isth_xdp *isth_xdp_open_pinned(const char *dir);

/**
 * Release a handle; a program loaded by isth_xdp_create() and still
 * attached is detached first. NULL is accepted.
 */
void isth_xdp_destroy(struct isth_xdp *x);

/**
 * Attach a program loaded by isth_xdp_create() to an interface. Fails if
 * the interface already has an XDP program in that mode.
 *
 * @return
 *   0; -EINVAL (bad argument, handle not from isth_xdp_create(), already
 *   attached), -ENODEV, -EBUSY (another program attached) or the errno of
 *   the netlink request.
 */
int isth_xdp_attach(struct isth_xdp *x, const char *iface, enum isth_xdp_mode mode);

/**
 * Detach a program attached by isth_xdp_attach(), if it is still the one
 * on the interface.
 *
 * @return 0, or -EINVAL if not attached, or the netlink errno.
 */
int isth_xdp_detach(struct isth_xdp *x);

/**
 * File descriptor of the program (isth_xdp_create() handles only), for
 * bpf_prog_test_run_opts() and the like.
 *
 * @return The fd, or -EINVAL.
 */
int isth_xdp_prog_fd(const struct isth_xdp *x);

/**
 * Put an AF_XDP socket into xsks_map at a queue id, as the PMD does for
 * its own sockets (isth_xdp_create() handles only).
 *
 * @return 0, -EINVAL, or the errno of the map update.
 */
int isth_xdp_xsk_set(struct isth_xdp *x, uint32_t queue, int xsk_fd);

/**
 * Read the counters, summed over all CPUs.
 *
 * @return 0, -EINVAL, or the errno of the map lookup.
 */
int isth_xdp_read(const struct isth_xdp *x, struct isth_xdp_counters *out);

/**
 * Set the steered UDP port and flags (takes effect on the next frame).
 *
 * @param udp_port
 *   Host byte order; 0 returns to the program's default port.
 * @param flags
 *   ISTH_XDP_CFG_F_* (ISTH_XDP_CFG_F_ANY_GROUP: steer every multicast
 *   group, not only those added; ISTH_XDP_CFG_F_PIN_SOURCES: drop isthmus
 *   frames whose source address was not added with
 *   isth_xdp_source_add(), counted spoofed).
 * @return 0, -EINVAL (unknown flag), or the errno of the map update.
 */
int isth_xdp_configure(struct isth_xdp *x, uint16_t udp_port, uint16_t flags);

/**
 * Steer a multicast group (IPv4, network byte order, in 224.0.0.0/4).
 *
 * @return 0, -EINVAL (not multicast), -E2BIG (ISTH_XDP_MAX_GROUPS groups
 *   already), or the errno of the map update.
 */
int isth_xdp_group_add(struct isth_xdp *x, uint32_t group_be, uint32_t job);

/**
 * Stop steering a multicast group.
 *
 * @return 0, -EINVAL, -ENOENT (not in the map).
 */
int isth_xdp_group_del(struct isth_xdp *x, uint32_t group_be);

/**
 * Accept isthmus frames from an IPv4 source address (network byte order)
 * while source pinning is on (ISTH_XDP_CFG_F_PIN_SOURCES). Add every
 * address before turning pinning on: frames from the others are dropped.
 *
 * @param island  the island the address speaks for (informational)
 * @return 0, -EINVAL (0.0.0.0 or a multicast address), -E2BIG
 *   (ISTH_XDP_MAX_SOURCES addresses already), or the errno of the update.
 */
int isth_xdp_source_add(struct isth_xdp *x, uint32_t addr_be, uint32_t island);

/**
 * Stop accepting a source address.
 *
 * @return 0, -EINVAL, -ENOENT (not in the map).
 */
int isth_xdp_source_del(struct isth_xdp *x, uint32_t addr_be);

/**
 * Pin the counters, config, groups and sources maps as <dir>/counters,
 * <dir>/config, <dir>/groups and <dir>/sources, replacing stale pins. bpffs must be
 * mounted (mount -t bpf bpf /sys/fs/bpf).
 *
 * @param dir
 *   Directory in bpffs, created if missing (with its parent); NULL means
 *   ISTH_XDP_PIN_ROOT/<iface> for a handle attached or opened on <iface>.
 * @return 0, -EINVAL, or the errno of mkdir/pin (EPERM or EINVAL when the
 *   directory is not on bpffs).
 */
int isth_xdp_pin(const struct isth_xdp *x, const char *dir);

/**
 * Remove the pins made by isth_xdp_pin() and the directory. Missing pins
 * are not an error.
 *
 * @return 0, -EINVAL, or the errno of unlink/rmdir.
 */
int isth_xdp_unpin(const struct isth_xdp *x, const char *dir);

/**
 * One-shot read for telemetry: open the program attached to @p iface, read
 * its counters, close. About ten system calls; keep a handle from
 * isth_xdp_open_iface() for frequent reads.
 *
 * @return 0 or the negative errno of isth_xdp_open_iface() /
 *   isth_xdp_read().
 */
int isth_xdp_counters(const char *iface, struct isth_xdp_counters *out);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_XDP_H */
