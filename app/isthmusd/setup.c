/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Start-up and teardown: everything the data path uses is created here,
 * before any lcore is launched, and sized from the configuration.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "isth_clock.h"
#include "isth_log.h"
#include "isthd.h"

static int
resolve_island(struct isthd *d, char *err, size_t err_size)
{
	const struct isthd_config *c = &d->cfg;
	char *end;
	long v;
	int id;

	id = isth_sched_island_id(d->sched, c->island);
	if (id < 0) {
		v = strtol(c->island, &end, 10);
		if (*end == '\0' && v >= 0 && v < (long)d->n_islands)
			id = (int)v;
	}
	if (id < 0) {
		snprintf(err, err_size,
			"%s: [isthmusd] island: '%s' is not an island of the schedule", c->path,
			c->island);
		return -EINVAL;
	}
	d->island = (uint8_t)id;
	return 0;
}

/* Every other island of the schedule needs a [peer NAME] section, and
 * every [peer NAME] must name an island of the schedule. */
static int
check_peers(struct isthd *d, char *err, size_t err_size)
{
	const struct isthd_config *c = &d->cfg;
	uint64_t seen = 0;
	unsigned int i;

	for (i = 0; i < c->n_peers; i++) {
		int id = isth_sched_island_id(d->sched, c->peers[i].name);

		if (id < 0) {
			snprintf(err, err_size, "%s:%u: [peer %s]: not an island of the schedule",
				c->path, c->peers[i].line, c->peers[i].name);
			return -EINVAL;
		}
		if (id == d->island) {
			snprintf(err, err_size, "%s:%u: [peer %s]: that is the local island",
				c->path, c->peers[i].line, c->peers[i].name);
			return -EINVAL;
		}
		seen |= 1ull << id;
	}
	for (i = 0; i < d->n_islands; i++) {
		if (i == d->island || (seen & (1ull << i)))
			continue;
		snprintf(err, err_size, "%s: [peer %s] missing: the schedule has that island",
			c->path, isth_sched_island_name(d->sched, (int)i));
		return -EINVAL;
	}
	return 0;
}

/* The lib/wire dtype named @name (a schedule's dtype line), or NONE. */
static unsigned int
dtype_by_name(const char *name)
{
	unsigned int k;

	for (k = 1; name != NULL && k <= ISTH_WIRE_DTYPE_MAX; k++)
		if (strcmp(isth_wire_dtype_name(k), name) == 0)
			return k;
	return ISTH_WIRE_DTYPE_NONE;
}

/*
 * Bytes of one element in the schedule's payload: the payload is the
 * bytes that cross each link (isthmus-plan --dtype), so a bf16 job's is 2
 * per element although the edge sums in fp32. The job's type is
 * [isthmusd] dtype, or under 'any' the schedule's dtype line; a job whose
 * type neither states is planned at 4 (fp32, int32, or bf16 planned as
 * its accumulator, as before the dtype line).
 */
static unsigned int
elem_bytes_of(const struct isthd_config *cfg, const struct isth_sched *s)
{
	unsigned int k = cfg->dtype;

	if (k == ISTH_WIRE_DTYPE_NONE)
		k = dtype_by_name(isth_sched_dtype(s, NULL));
	return k == ISTH_WIRE_DTYPE_NONE ? 4 : isth_wire_dtype_size(k);
}

/*
 * The round's shape for DATA admission (doc/isthmusd.md, "Admission"): the
 * figures ROUND gives the island (control.c: n_chunks of max_elems
 * elements), the island's tensor being ceil(payload / elem_bytes)
 * elements. And the repair budget: one round's stream per peer plus a
 * quarter (at least two chunks) for repairs that were lost in turn.
 */
static void
admission_init(struct isthd *d)
{
	struct isthd_shape *sh = &d->shape;
	uint64_t payload = isth_sched_payload_bytes(d->sched);
	uint64_t elems = (payload + sh->elem_bytes - 1) / sh->elem_bytes;

	sh->chunk_elems = (uint16_t)d->lim.max_elems;
	sh->n_chunks = (uint32_t)((elems + sh->chunk_elems - 1) / sh->chunk_elems);
	sh->last_elems = sh->n_chunks
		? (uint16_t)(elems - (uint64_t)(sh->n_chunks - 1) * sh->chunk_elems)
		: 0;
	sh->dtype = d->cfg.dtype;
	d->rep.budget_chunks = sh->n_chunks + RTE_MAX(sh->n_chunks / 4, 2u);
}

int
isthd_sched_agrees(const struct isthd_config *cfg, const struct isth_sched *s, const char *path,
	char *err, size_t err_size)
{
	const char *run_repl = cfg->wan_repl_network ? "network" : "edge";
	const char *run_dtype = isth_wire_dtype_name(cfg->dtype), *dt;
	enum isth_sched_repl repl;
	int line;

	/* the rates, routes and T were planned for one replication: the
	 * other puts another load on every WAN link */
	repl = isth_sched_replication(s, &line);
	if (repl != ISTH_SCHED_REPL_UNSTATED && strcmp(isth_sched_repl_name(repl), run_repl)) {
		snprintf(err, err_size,
			"%s:%d: planned for replication %s, but [wan] replication = %s in %s: "
			"plan again with isthmus-plan --replication %s, or set [wan] replication "
			"= %s",
			path, line, isth_sched_repl_name(repl), run_repl, cfg->path, run_repl,
			isth_sched_repl_name(repl));
		return -EINVAL;
	}
	/* [isthmusd] dtype = any admits every type: nothing to disagree with */
	dt = isth_sched_dtype(s, &line);
	if (dt != NULL && cfg->dtype != ISTH_WIRE_DTYPE_NONE && strcmp(dt, run_dtype) != 0) {
		unsigned int size = isth_wire_dtype_size(dtype_by_name(dt));

		snprintf(err, err_size,
			"%s:%d: planned for dtype %s (%u B per element), but [isthmusd] dtype = %s "
			"(%u B) in %s: plan again with isthmus-plan --dtype %s, or set [isthmusd] "
			"dtype = %s",
			path, line, dt, size, run_dtype, isth_wire_dtype_size(cfg->dtype),
			cfg->path, run_dtype, dt);
		return -EINVAL;
	}
	return 0;
}

int
isthd_prepare(struct isthd *d, uint64_t epoch_override, char *err, size_t err_size)
{
	const char *sched_path = d->cfg.schedule;
	int rc;

	if (sched_path[0] == '\0') {
		snprintf(err, err_size,
			"%s: [isthmusd] schedule: not set (or give --schedule FILE)", d->cfg.path);
		return -EINVAL;
	}
	d->sched = isth_sched_load(sched_path, err, err_size);
	if (d->sched == NULL)
		return -EINVAL;
	rc = isthd_sched_agrees(&d->cfg, d->sched, sched_path, err, err_size);
	if (rc)
		goto fail;
	d->shape.elem_bytes = (uint8_t)elem_bytes_of(&d->cfg, d->sched);
	d->n_islands = (uint32_t)isth_sched_n_islands(d->sched);
	rc = resolve_island(d, err, err_size);
	if (rc == 0)
		rc = check_peers(d, err, err_size);
	if (rc == 0 && d->cfg.wan_repl_network &&
		(unsigned int)isth_sched_n_rounds(d->sched) > ISTHD_GROUP_MAX_ROUNDS) {
		/* the groups of the cycle's rounds must fit [wan] group_base's /16 */
		snprintf(err, err_size,
			"%s: %d rounds in the cycle; [wan] replication = network in %s allows %u",
			sched_path, isth_sched_n_rounds(d->sched), d->cfg.path,
			ISTHD_GROUP_MAX_ROUNDS);
		rc = -EINVAL;
	}
	if (rc)
		goto fail;
	{
		/* the plan's peak at this edge (schedule version 2) must fit
		 * the aggregation memory the edge has */
		uint64_t peak;
		int line;

		if (isth_sched_peak(d->sched, d->island, &peak, &line) == 0 &&
			peak > d->cfg.agg_memory) {
			snprintf(err, err_size,
				"%s:%d: island %s needs %" PRIu64
				" B of aggregation memory at its peak, more than [agg] memory = "
				"%" PRIu64 " B in %s",
				sched_path, line, isth_sched_island_name(d->sched, d->island), peak,
				d->cfg.agg_memory, d->cfg.path);
			rc = -EINVAL;
			goto fail;
		}
	}
	for (unsigned int i = 0; i < d->cfg.n_peers; i++)
		d->peer_of[isth_sched_island_id(d->sched, d->cfg.peers[i].name)] = &d->cfg.peers[i];
	if (epoch_override)
		d->clk.epoch_ns = epoch_override;
	else if (d->cfg.epoch_mode == ISTHD_EPOCH_FIXED)
		d->clk.epoch_ns = d->cfg.epoch_ns;
	else
		d->clk.epoch_ns = isth_sched_epoch_ns(d->sched);
	if (d->clk.epoch_ns == 0) {
		snprintf(err, err_size,
			"%s: the schedule leaves the epoch to run time: set [isthmusd] epoch in %s "
			"or pass --epoch",
			sched_path, d->cfg.path);
		rc = -EINVAL;
		goto fail;
	}
	d->clk.round_ns = isth_sched_round_ns(d->sched);
	/* [auth] mode = on: both ports speak version 2, whose tag leaves
	 * 16 bytes less for elements and ranges */
	rc = isth_wire_limits_init_auth(&d->lim, d->n_islands, d->cfg.mtu, d->cfg.auth);
	if (rc) {
		snprintf(
			err, err_size, "%s: [isthmusd] mtu: %u too small", d->cfg.path, d->cfg.mtu);
		goto fail;
	}
	d->lim.udp_port = d->cfg.udp_port;
	/* before the round's shape: auth also leaves room in max_elems for
	 * the WAN tag list (isthd_auth_list_room) */
	rc = isthd_auth_prepare(d, err, err_size);
	if (rc)
		goto fail;
	admission_init(d);
	{
		/* tree rounds sum in accumulators of their own, beside the
		 * backend's [agg] memory: said here, so that --check tells
		 * the operator what the hugepages must hold besides */
		uint64_t tree = isthd_tree_bytes(d->sched, d->shape.n_chunks, d->lim.max_elems);

		if (tree)
			ISTH_LOG_INFO("%s: tree rounds: %" PRIu64
				      " B of accumulators (%u rounds x %u chunks x 2), "
				      "from hugepages beside [agg] memory = %" PRIu64 " B",
				sched_path, tree, ISTHD_TREE_SLOTS, d->shape.n_chunks,
				d->cfg.agg_memory);
	}
	/* [access] island_hosts: every host owns at least one chunk */
	if (d->cfg.n_island_hosts > d->shape.n_chunks) {
		snprintf(err, err_size,
			"%s: [access] island_hosts: %u hosts, but a round has %u chunks (the "
			"schedule's payload): at most one host per chunk",
			d->cfg.path, d->cfg.n_island_hosts, d->shape.n_chunks);
		rc = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	isth_sched_free(d->sched);
	d->sched = NULL;
	return rc;
}

/* The ports by name or id, the pools and the controller's ring. */
static int
pools_create(struct isthd *d, char *err, size_t err_size)
{
	uint32_t room;
	int rc;

	d->access_port = isthd_port_lookup(d->cfg.access.dev, &rc);
	if (rc == 0)
		d->wan_port = isthd_port_lookup(d->cfg.wan.dev, &rc);
	if (rc) {
		snprintf(err, err_size,
			"%s: no DPDK port '%s' (give it with --vdev or -a; %u ports present)",
			d->cfg.path,
			d->access_port == UINT16_MAX ? d->cfg.access.dev : d->cfg.wan.dev,
			rte_eth_dev_count_avail());
		return -ENODEV;
	}
	/* One pool for received frames and AGG messages: room for a full
	 * MTU frame with a VLAN tag, or a header + max chunk. */
	room = RTE_PKTMBUF_HEADROOM + d->cfg.mtu + ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_VLAN_TAG_SIZE;
	if (room < RTE_MBUF_DEFAULT_BUF_SIZE)
		room = RTE_MBUF_DEFAULT_BUF_SIZE;
	d->pool = rte_pktmbuf_pool_create(
		"isthd_pkt", d->cfg.mbufs, 256, 0, (uint16_t)room, rte_socket_id());
	/* Fan-out headers (Ethernet+VLAN+IPv4+UDP) and resend header
	 * segments (frame headers + the isthmus header), plus clones. */
	/* 8191 per worker: each worker's WAN TX queue can hold NB_TXD
	 * fan-out copies of two of these (header, clone) until sent */
	d->hdr_pool = rte_pktmbuf_pool_create("isthd_hdr", 8192 * RTE_MAX(d->n_workers, 1u) - 1,
		256, 0, RTE_PKTMBUF_HEADROOM + 128, rte_socket_id());
	d->ctl_pool = rte_pktmbuf_pool_create(
		"isthd_ctl", 1023, 32, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	d->ctl_ring =
		rte_ring_create("isthd_ctl", 1024, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!d->pool || !d->hdr_pool || !d->ctl_pool || !d->ctl_ring) {
		snprintf(err, err_size, "mempool/ring: %s (try a larger -m)",
			rte_strerror(rte_errno));
		return -ENOMEM;
	}
	return 0;
}

/* Every worker's backend configuration (@agg_seq0: the AGG stream 0's
 * first seq, for a device that seals); each of N workers gets 1/N of the
 * memory and slots. */
static int
backend_conf(struct isthd *d, struct isth_backend_conf *bc, uint64_t agg_seq0, char *err,
	size_t err_size)
{
	int rc;

	memset(bc, 0, sizeof(*bc));
	bc->socket_id = (int)rte_socket_id();
	bc->island = d->island;
	bc->n_islands = d->n_islands;
	bc->max_jobs = 1;
	bc->max_elems = d->lim.max_elems;
	bc->max_chunks = d->cfg.agg_max_chunks;
	bc->mem_bytes = d->cfg.agg_memory;
	bc->timeout_ns = d->cfg.agg_timeout_ns;
	bc->window = d->cfg.agg_window;
	bc->bf16_out = d->cfg.bf16_out;
	bc->agg_pool = d->pool;
	bc->device = d->cfg.fpga_device;
	bc->mcast.socket_id = (int)rte_socket_id();
	memcpy(bc->mcast.src_mac, d->wan_mac, 6);
	bc->mcast.src_ip = d->cfg.wan.ip;
	bc->mcast.src_port = d->cfg.udp_port;
	bc->mcast.udp_csum = d->cfg.wan_udp_csum;
	rc = isth_mcast_port_mode(d->wan_port);
	bc->mcast.mode = rc < 0 ? ISTH_MCAST_COPY : (enum isth_mcast_mode)rc;
	bc->mcast.hdr_pool = d->hdr_pool;
	bc->mcast.clone_pool = d->hdr_pool;
	bc->mcast.copy_pool = d->pool;
	if (d->n_workers > 1) {
		/* worker k sums the chunks with chunk % N == k (workers.c):
		 * each instance gets its share of the memory and slots */
		if (strcmp(d->cfg.backend, "sw") != 0) {
			snprintf(err, err_size,
				"%s: [isthmusd] backend = %s runs on one worker: start isthmusd "
				"with two lcores (EAL -l 0,1), not %u workers",
				d->cfg.path, d->cfg.backend, d->n_workers);
			return -EINVAL;
		}
		bc->mem_bytes = (bc->mem_bytes + d->n_workers - 1) / d->n_workers;
		bc->max_chunks = (bc->max_chunks + d->n_workers - 1) / d->n_workers;
	}
	isthd_auth_dev_conf(d, &bc->auth, agg_seq0);
	return 0;
}

/*
 * AGG stream k's resend ring, worker k's, each of [agg] resend_entries (a
 * stream carries 1/N of the AGGs, so each ring keeps N times the window):
 * stream 0's first seq is @agg_seq0 (the device's too, if it seals), the
 * others' the wall clock now (auth on; the stream is in the IV, so streams
 * starting at nearly the same value never share one).
 */
static int
agg_rings_create(struct isthd *d, uint64_t agg_seq0, char *err, size_t err_size)
{
	struct isth_resend_conf rc;

	memset(&rc, 0, sizeof(rc));
	rc.size = d->cfg.resend_entries;
	rc.window_ns = d->cfg.resend_window_ns;
	rc.linger_ns = d->cfg.resend_linger_ns;
	rc.socket_id = (int)rte_socket_id();
	/* AGG frames to the island: Ethernet + IPv4 + UDP, no VLAN. */
	rc.hdr_off = ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE;
	rc.flags = ISTH_RESEND_F_STAMP;
	rc.hdr_pool = d->hdr_pool;
	/* host h's AGG lane starts h x 2^56 ns below the clock: a clock
	 * that reads less (unset, near 1970) would wrap it */
	if (d->cfg.auth && d->cfg.n_island_hosts > 1 &&
		isth_clock_real_ns() / ISTHD_AUTH_HOST_LANE < d->cfg.n_island_hosts - 1) {
		snprintf(err, err_size,
			"%s: [access] island_hosts: %u hosts with auth need a wall clock past "
			"%u x 2^56 ns (the hosts' AGG seq lanes start below it): set the clock",
			d->cfg.path, d->cfg.n_island_hosts, d->cfg.n_island_hosts - 1);
		return -EINVAL;
	}
	for (unsigned int k = 0; k < d->n_workers; k++) {
		uint64_t now = d->cfg.auth ? isth_clock_real_ns() : 0;

		rc.first_seq = k == 0 ? agg_seq0 : now;
		d->workers[k].agg_ring = isth_resend_create(&rc);
		if (d->workers[k].agg_ring == NULL) {
			if (k == 0)
				snprintf(err, err_size, "resend ring: %s", rte_strerror(rte_errno));
			else
				snprintf(err, err_size, "resend ring of worker %u: %s", k,
					rte_strerror(rte_errno));
			return -rte_errno;
		}
		d->workers[k].host_ring[0] = d->workers[k].agg_ring;
		/* [access] island_hosts: host h's AGG stream k. Auth on, the
		 * hosts share the island's DOWN key and stream k's IVs differ
		 * by seq alone: host h's lane starts h * 2^56 ns below host
		 * 0's (isthd_auth_host_seq0); auth off, from 0 like every
		 * stream */
		for (unsigned int h = 1; h < d->cfg.n_island_hosts; h++) {
			rc.first_seq = d->cfg.auth ? isthd_auth_host_seq0(now, h) : 0;
			d->workers[k].host_ring[h] = isth_resend_create(&rc);
			if (d->workers[k].host_ring[h] == NULL) {
				snprintf(err, err_size,
					"resend ring of worker %u, island host %u: %s", k, h,
					rte_strerror(rte_errno));
				return -rte_errno;
			}
		}
	}
	return 0;
}

/* The backends, the workers and what they send from: WAN repair, a pacer
 * (and a WAN repair ring) per worker, the AGG rings, the keys. */
static int
workers_create(struct isthd *d, char *err, size_t err_size)
{
	struct isth_backend_conf bc;
	struct isth_backend_caps caps;
	/* version 2: every stream starts at the wall clock's ns, so that a
	 * restarted edge never reuses an AGG's IV (doc/protocol.md); the AGG
	 * stream's first seq goes to the resend ring and, when the device
	 * seals AGGs, to the device */
	uint64_t agg_seq0 = d->cfg.auth ? isth_clock_real_ns() : 0;
	int rc;

	/* one AGG stream per worker (doc/protocol.md, "AGG streams"): an
	 * island NACK of a stream at or above it is refused as `stream` */
	d->lim.n_streams = (uint8_t)d->n_workers;
	rc = backend_conf(d, &bc, agg_seq0, err, err_size);
	if (rc)
		return rc;
	rc = isthd_rcu_setup(d);
	if (rc < 0) {
		snprintf(err, err_size, "round-table readers (%u workers): %s", d->n_workers,
			strerror(-rc));
		return rc;
	}
	bc.qs = d->qs;
	rc = isthd_workers_setup(d, &bc, err, err_size);
	if (rc)
		return rc;
	isth_backend_caps(d->workers[0].be, &caps);
	d->auth.dev_verify = d->cfg.auth && caps.verifies;
	d->auth.dev_seal = d->cfg.auth && caps.seals;
	/* a device numbers the AGGs it seals as one stream from agg_seq0;
	 * several hosts get one stream (lane) each, so every AGG would be
	 * out of step and sealed again on the host: refused, not slow */
	if (d->auth.dev_seal && d->cfg.n_island_hosts > 1) {
		snprintf(err, err_size,
			"%s: [access] island_hosts: %u hosts with a backend whose device seals "
			"AGGs: it numbers one AGG stream, each host needs its own; use "
			"backend = sw",
			d->cfg.path, d->cfg.n_island_hosts);
		return -ENOTSUP;
	}
	/* rounds are the wall clock's: the data path's TSC must run at its
	 * rate, which DPDK's figure may not (clock.c) */
	d->clk.tsc_hz = isthd_tsc_hz_measure(200000000ull, rte_get_tsc_hz());
	rc = agg_rings_create(d, agg_seq0, err, err_size);
	if (rc)
		return rc;
	/* WAN repair: the island's DATA as it leaves (bare messages, for
	 * peer NACKs) and, per round slot and sender, the chunks received. */
	rc = isthd_repair_init(d, err, err_size);
	if (rc)
		return rc;
	/* a pacer (and a WAN repair ring) per worker: worker k sends each
	 * round's island DATA to its share of the round's peers ("Workers") */
	for (unsigned int k = 0; k < d->n_workers; k++) {
		rc = isthd_egress_init(d, k, err, err_size);
		if (rc)
			return rc;
	}
	rc = isthd_tree_setup(d, err, err_size); /* tree rounds' state */
	if (rc)
		return rc;
	return isthd_auth_setup(d, err, err_size);
}

int
isthd_setup(struct isthd *d, char *err, size_t err_size)
{
	int rc;

	if (d->n_workers == 0)
		d->n_workers = 1;
	rc = pools_create(d, err, err_size);
	if (rc == 0)
		rc = isthd_ports_start(d, err, err_size);
	if (rc == 0)
		rc = workers_create(d, err, err_size);
	if (rc)
		goto fail;
	d->clk.tsc0 = rte_rdtsc();
	d->clk.rt0 = isth_clock_real_ns();
	/* Started after the epoch (a restart): rounds already over are not
	 * ours to expire or repair. */
	if (d->clk.rt0 > d->clk.epoch_ns)
		d->rep.tail_next = (d->clk.rt0 - d->clk.epoch_ns) / d->clk.round_ns;
	for (unsigned int k = 0; k < d->n_workers; k++)
		d->workers[k].expire_next = d->rep.tail_next;
	return 0;
fail:
	isthd_teardown(d);
	return rc;
}

static void
free_ring_mbufs(struct rte_ring *r)
{
	void *objs[64];
	unsigned int n;

	while ((n = rte_ring_dequeue_burst(r, objs, 64, NULL)) > 0)
		rte_pktmbuf_free_bulk((struct rte_mbuf **)objs, n);
}

void
isthd_teardown(struct isthd *d)
{
	/* telemetry callbacks read everything below: none may run past here */
	isthd_telemetry_close();
	isthd_repair_fini(d);
	isthd_tree_fini(d);
	isthd_auth_fini(d);
	isth_xdp_destroy(d->xdp[0]);
	isth_xdp_destroy(d->xdp[1]);
	d->xdp[0] = d->xdp[1] = NULL;
	/* pacers, rings, backends, AGG rings */
	isthd_workers_teardown(d);
	/* after every backend: their round tables are registered on it */
	isth_rtab_qs_free(d->qs);
	d->qs = NULL;
	if (d->ctl_ring) {
		free_ring_mbufs(d->ctl_ring);
		rte_ring_free(d->ctl_ring);
		d->ctl_ring = NULL;
	}
	isth_sched_free(d->next_sched);
	d->next_sched = NULL;
	isth_sched_free(d->sched);
	d->sched = NULL;
}
