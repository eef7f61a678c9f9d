/* SPDX-License-Identifier: BSD-3-Clause */

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "isth_xdp.h"
#include "isth_xdp.skel.h"

/* Maps a program may use besides ours; more than enough for ours (5). */
#define MAX_PROG_MAPS 32

/*
 * A handle either owns a loaded skeleton (isth_xdp_create(), used by tests
 * and tools) or borrows the maps of a program someone else loaded (the
 * PMD), by fds obtained from map ids or pins. The map fds below are ours
 * to close only in the borrowed case: the skeleton owns its own.
 * Written by: the caller's control thread only; handles are not shared.
 */
struct isth_xdp {
	struct isth_xdp_bpf *skel; /* NULL for borrowed maps */
	int counters_fd;
	int config_fd;
	int groups_fd;
	int sources_fd;
	int xsks_fd; /* -1 for borrowed maps */
	int ncpus; /* possible CPUs: per-CPU value count */
	struct isth_xdp_cpu_counters *percpu; /* scratch for reads */
	int ifindex; /* attached (owned) or opened on; 0 */
	uint32_t attach_flags; /* XDP_FLAGS_* used to attach */
	bool attached;
	char ifname[IF_NAMESIZE];
};

static struct isth_xdp *
handle_alloc(void)
{
	struct isth_xdp *x;
	int ncpus;

	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		errno = ncpus < 0 ? -ncpus : EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	x->percpu = calloc(ncpus, sizeof(*x->percpu));
	if (x->percpu == NULL) {
		free(x);
		errno = ENOMEM;
		return NULL;
	}
	x->ncpus = ncpus;
	x->counters_fd = -1;
	x->config_fd = -1;
	x->groups_fd = -1;
	x->sources_fd = -1;
	x->xsks_fd = -1;
	return x;
}

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void
isth_xdp_destroy(struct isth_xdp *x)
{
	if (x == NULL)
		return;
	if (x->skel != NULL) {
		if (x->attached)
			(void)isth_xdp_detach(x);
		isth_xdp_bpf__destroy(x->skel);
	} else {
		close_fd(&x->counters_fd);
		close_fd(&x->config_fd);
		close_fd(&x->groups_fd);
		close_fd(&x->sources_fd);
	}
	free(x->percpu);
	free(x);
}

struct isth_xdp *
isth_xdp_create(uint16_t default_port)
{
	struct isth_xdp *x;
	int rc;

	x = handle_alloc();
	if (x == NULL)
		return NULL;

	x->skel = isth_xdp_bpf__open();
	if (x->skel == NULL) {
		rc = -errno;
		goto free_handle;
	}
	x->skel->rodata->isth_default_port =
		default_port != 0 ? default_port : ISTH_XDP_DEFAULT_PORT;
	rc = isth_xdp_bpf__load(x->skel);
	if (rc != 0)
		goto destroy_skel;

	x->counters_fd = bpf_map__fd(x->skel->maps.isth_counters);
	x->config_fd = bpf_map__fd(x->skel->maps.isth_config);
	x->groups_fd = bpf_map__fd(x->skel->maps.isth_groups);
	x->sources_fd = bpf_map__fd(x->skel->maps.isth_sources);
	x->xsks_fd = bpf_map__fd(x->skel->maps.xsks_map);
	return x;

destroy_skel:
	isth_xdp_bpf__destroy(x->skel);
free_handle:
	free(x->percpu);
	free(x);
	errno = rc < 0 ? -rc : EINVAL;
	return NULL;
}

/* Check that a map fd has the layout the program's map of that name has. */
static int
map_matches(int fd, const char *name, uint32_t type, uint32_t value_size, struct bpf_map_info *info)
{
	uint32_t len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	if (bpf_obj_get_info_by_fd(fd, info, &len) != 0)
		return -errno;
	if (name != NULL && strncmp(info->name, name, sizeof(info->name)) != 0)
		return 0;
	return info->type == type && info->value_size == value_size;
}

static const struct {
	const char *name;
	uint32_t type;
	uint32_t value_size;
	size_t fd_off;
} isth_maps[] = {
	{ISTH_XDP_MAP_COUNTERS, BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(struct isth_xdp_cpu_counters),
		offsetof(struct isth_xdp, counters_fd)},
	{ISTH_XDP_MAP_CONFIG, BPF_MAP_TYPE_ARRAY, sizeof(struct isth_xdp_config),
		offsetof(struct isth_xdp, config_fd)},
	{ISTH_XDP_MAP_GROUPS, BPF_MAP_TYPE_HASH, sizeof(struct isth_xdp_group),
		offsetof(struct isth_xdp, groups_fd)},
	{ISTH_XDP_MAP_SOURCES, BPF_MAP_TYPE_HASH, sizeof(struct isth_xdp_source),
		offsetof(struct isth_xdp, sources_fd)},
};

#define N_MAPS (sizeof(isth_maps) / sizeof(isth_maps[0]))
#define MAP_FD(x, i) ((int *)((char *)(x) + isth_maps[i].fd_off))

static bool
all_maps_found(const struct isth_xdp *x)
{
	return x->counters_fd >= 0 && x->config_fd >= 0 && x->groups_fd >= 0 && x->sources_fd >= 0;
}

/* The program on an interface: prefer native, then generic, then offload. */
static int
attached_prog_id(int ifindex, uint32_t *id)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query(ifindex, 0, &q) != 0)
		return -errno;
	if (q.drv_prog_id != 0)
		*id = q.drv_prog_id;
	else if (q.skb_prog_id != 0)
		*id = q.skb_prog_id;
	else if (q.prog_id != 0)
		*id = q.prog_id;
	else
		return -ENOENT;
	return 0;
}

static int
find_maps_of_prog(struct isth_xdp *x, uint32_t prog_id)
{
	uint32_t map_ids[MAX_PROG_MAPS];
	struct bpf_prog_info pinfo;
	struct bpf_map_info minfo;
	uint32_t len = sizeof(pinfo);
	uint32_t i, n;
	size_t k;
	int pfd, fd, rc;

	pfd = bpf_prog_get_fd_by_id(prog_id);
	if (pfd < 0)
		return -errno;
	memset(&pinfo, 0, sizeof(pinfo));
	pinfo.nr_map_ids = MAX_PROG_MAPS;
	pinfo.map_ids = (uint64_t)(uintptr_t)map_ids;
	rc = bpf_obj_get_info_by_fd(pfd, &pinfo, &len) != 0 ? -errno : 0;
	close(pfd);
	if (rc != 0)
		return rc;
	n = pinfo.nr_map_ids < MAX_PROG_MAPS ? pinfo.nr_map_ids : MAX_PROG_MAPS;

	for (i = 0; i < n; i++) {
		fd = bpf_map_get_fd_by_id(map_ids[i]);
		if (fd < 0)
			return -errno;
		for (k = 0; k < N_MAPS; k++) {
			if (*MAP_FD(x, k) >= 0)
				continue;
			rc = map_matches(fd, isth_maps[k].name, isth_maps[k].type,
				isth_maps[k].value_size, &minfo);
			if (rc < 0) {
				close(fd);
				return rc;
			}
			if (rc == 1) {
				*MAP_FD(x, k) = fd;
				fd = -1;
				break;
			}
		}
		if (fd >= 0)
			close(fd);
	}
	return all_maps_found(x) ? 0 : -ESRCH;
}

struct isth_xdp *
isth_xdp_open_iface(const char *iface)
{
	struct isth_xdp *x;
	uint32_t prog_id = 0;
	int ifindex, rc;

	if (iface == NULL || strlen(iface) >= IF_NAMESIZE) {
		errno = EINVAL;
		return NULL;
	}
	ifindex = if_nametoindex(iface);
	if (ifindex == 0) {
		errno = ENODEV;
		return NULL;
	}

	x = handle_alloc();
	if (x == NULL)
		return NULL;
	rc = attached_prog_id(ifindex, &prog_id);
	if (rc != 0)
		goto destroy;
	rc = find_maps_of_prog(x, prog_id);
	if (rc != 0)
		goto destroy;
	x->ifindex = ifindex;
	snprintf(x->ifname, sizeof(x->ifname), "%s", iface);
	return x;

destroy:
	isth_xdp_destroy(x);
	errno = -rc;
	return NULL;
}

static const char *const pin_names[] = {"counters", "config", "groups", "sources"};

static int
pin_path(char *buf, size_t size, const char *dir, size_t k)
{
	int n = snprintf(buf, size, "%s/%s", dir, pin_names[k]);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

struct isth_xdp *
isth_xdp_open_pinned(const char *dir)
{
	struct bpf_map_info minfo;
	char path[PATH_MAX];
	struct isth_xdp *x;
	size_t k;
	int rc;

	if (dir == NULL) {
		errno = EINVAL;
		return NULL;
	}
	x = handle_alloc();
	if (x == NULL)
		return NULL;
	for (k = 0; k < N_MAPS; k++) {
		rc = pin_path(path, sizeof(path), dir, k);
		if (rc != 0)
			goto destroy;
		*MAP_FD(x, k) = bpf_obj_get(path);
		if (*MAP_FD(x, k) < 0) {
			rc = -errno;
			goto destroy;
		}
		rc = map_matches(*MAP_FD(x, k), isth_maps[k].name, isth_maps[k].type,
			isth_maps[k].value_size, &minfo);
		if (rc <= 0) {
			rc = rc < 0 ? rc : -ESRCH;
			goto destroy;
		}
	}
	return x;

destroy:
	isth_xdp_destroy(x);
	errno = -rc;
	return NULL;
}

int
isth_xdp_attach(struct isth_xdp *x, const char *iface, enum isth_xdp_mode mode)
{
	uint32_t flags = XDP_FLAGS_UPDATE_IF_NOEXIST;
	int ifindex, rc;

	if (x == NULL || x->skel == NULL || x->attached || iface == NULL ||
		strlen(iface) >= IF_NAMESIZE)
		return -EINVAL;
	switch (mode) {
	case ISTH_XDP_MODE_AUTO:
		break;
	case ISTH_XDP_MODE_SKB:
		flags |= XDP_FLAGS_SKB_MODE;
		break;
	case ISTH_XDP_MODE_DRV:
		flags |= XDP_FLAGS_DRV_MODE;
		break;
	default:
		return -EINVAL;
	}
	ifindex = if_nametoindex(iface);
	if (ifindex == 0)
		return -ENODEV;

	rc = bpf_xdp_attach(ifindex, bpf_program__fd(x->skel->progs.isth_xdp_steer), flags, NULL);
	if (rc != 0)
		return rc;
	x->ifindex = ifindex;
	x->attach_flags = flags;
	x->attached = true;
	snprintf(x->ifname, sizeof(x->ifname), "%s", iface);
	return 0;
}

int
isth_xdp_detach(struct isth_xdp *x)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	int rc;

	if (x == NULL || x->skel == NULL || !x->attached)
		return -EINVAL;
	/* Only remove our own program, never one attached since. */
	opts.old_prog_fd = bpf_program__fd(x->skel->progs.isth_xdp_steer);
	rc = bpf_xdp_detach(x->ifindex, x->attach_flags & ~XDP_FLAGS_UPDATE_IF_NOEXIST, &opts);
	x->attached = false;
	return rc;
}

int
isth_xdp_prog_fd(const struct isth_xdp *x)
{
	if (x == NULL || x->skel == NULL)
		return -EINVAL;
	return bpf_program__fd(x->skel->progs.isth_xdp_steer);
}

int
isth_xdp_xsk_set(struct isth_xdp *x, uint32_t queue, int xsk_fd)
{
	if (x == NULL || x->xsks_fd < 0 || queue >= ISTH_XDP_MAX_QUEUES || xsk_fd < 0)
		return -EINVAL;
	if (bpf_map_update_elem(x->xsks_fd, &queue, &xsk_fd, BPF_ANY) != 0)
		return -errno;
	return 0;
}

int
isth_xdp_read(const struct isth_xdp *x, struct isth_xdp_counters *out)
{
	uint32_t key = 0;
	int i;

	if (x == NULL || out == NULL)
		return -EINVAL;
	if (bpf_map_lookup_elem(x->counters_fd, &key, x->percpu) != 0)
		return -errno;
	memset(out, 0, sizeof(*out));
	for (i = 0; i < x->ncpus; i++) {
		out->steered += x->percpu[i].steered;
		out->passed += x->percpu[i].passed;
		out->malformed += x->percpu[i].malformed;
		out->no_xsk += x->percpu[i].no_xsk;
		out->spoofed += x->percpu[i].spoofed;
	}
	return 0;
}

int
isth_xdp_configure(struct isth_xdp *x, uint16_t udp_port, uint16_t flags)
{
	struct isth_xdp_config cfg = {
		.udp_port = udp_port,
		.flags = flags,
	};
	uint32_t key = 0;

	if (x == NULL || (flags & ~(ISTH_XDP_CFG_F_ANY_GROUP | ISTH_XDP_CFG_F_PIN_SOURCES)) != 0)
		return -EINVAL;
	if (bpf_map_update_elem(x->config_fd, &key, &cfg, BPF_ANY) != 0)
		return -errno;
	return 0;
}

static bool
is_multicast(uint32_t addr_be)
{
	const uint8_t *b = (const uint8_t *)&addr_be;

	return (b[0] & 0xf0) == 0xe0;
}

int
isth_xdp_group_add(struct isth_xdp *x, uint32_t group_be, uint32_t job)
{
	struct isth_xdp_group g = {.job = job};

	if (x == NULL || !is_multicast(group_be))
		return -EINVAL;
	if (bpf_map_update_elem(x->groups_fd, &group_be, &g, BPF_ANY) != 0)
		return errno == ENOSPC ? -E2BIG : -errno;
	return 0;
}

int
isth_xdp_group_del(struct isth_xdp *x, uint32_t group_be)
{
	if (x == NULL || !is_multicast(group_be))
		return -EINVAL;
	if (bpf_map_delete_elem(x->groups_fd, &group_be) != 0)
		return -errno;
	return 0;
}

int
isth_xdp_source_add(struct isth_xdp *x, uint32_t addr_be, uint32_t island)
{
	struct isth_xdp_source v = {.island = island};

	if (x == NULL || addr_be == 0 || is_multicast(addr_be))
		return -EINVAL;
	if (bpf_map_update_elem(x->sources_fd, &addr_be, &v, BPF_ANY) != 0)
		return errno == ENOSPC || errno == E2BIG ? -E2BIG : -errno;
	return 0;
}

int
isth_xdp_source_del(struct isth_xdp *x, uint32_t addr_be)
{
	if (x == NULL)
		return -EINVAL;
	if (bpf_map_delete_elem(x->sources_fd, &addr_be) != 0)
		return -errno;
	return 0;
}

static int
default_pin_dir(const struct isth_xdp *x, const char *dir, char *buf, size_t size)
{
	int n;

	if (dir != NULL) {
		n = snprintf(buf, size, "%s", dir);
	} else {
		if (x->ifname[0] == '\0')
			return -EINVAL;
		n = snprintf(buf, size, "%s/%s", ISTH_XDP_PIN_ROOT, x->ifname);
	}
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int
isth_xdp_pin(const struct isth_xdp *x, const char *dir)
{
	char path[PATH_MAX];
	char d[PATH_MAX];
	char *slash;
	size_t k;
	int rc;

	if (x == NULL)
		return -EINVAL;
	rc = default_pin_dir(x, dir, d, sizeof(d));
	if (rc != 0)
		return rc;

	/* mkdir -p of the last two levels (root and <iface>) is enough. */
	slash = strrchr(d, '/');
	if (slash != NULL && slash != d) {
		*slash = '\0';
		if (mkdir(d, 0700) != 0 && errno != EEXIST)
			return -errno;
		*slash = '/';
	}
	if (mkdir(d, 0700) != 0 && errno != EEXIST)
		return -errno;

	for (k = 0; k < N_MAPS; k++) {
		rc = pin_path(path, sizeof(path), d, k);
		if (rc != 0)
			return rc;
		/* A pin left by an earlier run holds the old map. */
		if (unlink(path) != 0 && errno != ENOENT)
			return -errno;
		if (bpf_obj_pin(*MAP_FD(x, k), path) != 0)
			return -errno;
	}
	return 0;
}

int
isth_xdp_unpin(const struct isth_xdp *x, const char *dir)
{
	char path[PATH_MAX];
	char d[PATH_MAX];
	size_t k;
	int rc;

	if (x == NULL)
		return -EINVAL;
	rc = default_pin_dir(x, dir, d, sizeof(d));
	if (rc != 0)
		return rc;
	for (k = 0; k < N_MAPS; k++) {
		rc = pin_path(path, sizeof(path), d, k);
		if (rc != 0)
			return rc;
		if (unlink(path) != 0 && errno != ENOENT)
			return -errno;
	}
	if (rmdir(d) != 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int
isth_xdp_counters(const char *iface, struct isth_xdp_counters *out)
{
	struct isth_xdp *x;
	int rc;

	if (out == NULL)
		return -EINVAL;
	x = isth_xdp_open_iface(iface);
	if (x == NULL)
		return -errno;
	rc = isth_xdp_read(x, out);
	isth_xdp_destroy(x);
	return rc;
}
