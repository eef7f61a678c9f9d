/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Start-up and teardown: everything the data path uses is created here,
 * before any lcore is launched, and sized from the configuration.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "isthd.h"

#define NB_RXD 1024
#define NB_TXD 1024

uint16_t
isthd_port_lookup(const char *dev, int *rc)
{
	uint16_t id;
	char *end;
	unsigned long v;

	if (rte_eth_dev_get_port_by_name(dev, &id) == 0) {
		*rc = 0;
		return id;
	}
	v = strtoul(dev, &end, 10);
	if (*dev != '\0' && *end == '\0' && v < RTE_MAX_ETHPORTS &&
		rte_eth_dev_is_valid_port((uint16_t)v)) {
		*rc = 0;
		return (uint16_t)v;
	}
	*rc = -ENODEV;
	return UINT16_MAX;
}

/*
 * Configure and start @port with @*txq TX queues if the PMD offers that
 * many, else 1 (@*txq says which): both ports ask for one TX queue per
 * worker (doc/isthmusd.md, "Workers"). One RX queue (@*rxq), except on af_packet: its
 * queues are socket pairs opened at probe (qpairs=N) and the kernel
 * spreads received frames over all of them by flow hash (PACKET_FANOUT),
 * however many the application configures, so every one is configured
 * and worker 0 polls every one (a queue nobody polls keeps what the hash
 * gave it). Other PMDs without RSS configured fill queue 0 only.
 * @rx_csum (NULL: not asked for): set when the PMD checks received UDP
 * checksums (RTE_ETH_RX_OFFLOAD_UDP_CKSUM, turned on here): mlx5, ice,
 * i40e and ixgbe do; af_packet, af_xdp and net_ring do not.
 */
static int
port_start(uint16_t port, struct rte_mempool *pool, uint32_t mtu, uint16_t *txq, uint16_t *rxq,
	bool *rx_csum, char *err, size_t err_size)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t nb_rxd = NB_RXD, nb_txd = NB_TXD, q;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_info_get(port, &info);
	if (rc)
		goto fail;
	/* Fan-out sends header + payload chains where the PMD can. */
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (rx_csum != NULL) {
		*rx_csum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM) != 0;
		if (*rx_csum)
			conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	}
	if (*txq > info.max_tx_queues)
		*txq = 1;
	*rxq = 1;
	if (info.driver_name != NULL && strcmp(info.driver_name, "net_af_packet") == 0)
		*rxq = RTE_MAX(info.max_rx_queues, (uint16_t)1);
	rc = rte_eth_dev_configure(port, *rxq, *txq, &conf);
	if (rc)
		goto fail;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd);
	if (rc)
		goto fail;
	/* Not every PMD lets the MTU be set (net_ring, net_null): then the
	 * pool's data room is the limit, which setup sized for the MTU. */
	rte_eth_dev_set_mtu(port, (uint16_t)mtu);
	for (q = 0; q < *rxq; q++) {
		rc = rte_eth_rx_queue_setup(
			port, q, nb_rxd, rte_eth_dev_socket_id(port), NULL, pool);
		if (rc)
			goto fail;
	}
	for (q = 0; q < *txq; q++) {
		rc = rte_eth_tx_queue_setup(port, q, nb_txd, rte_eth_dev_socket_id(port), NULL);
		if (rc)
			goto fail;
	}
	rc = rte_eth_dev_start(port);
	if (rc)
		goto fail;
	/* Veth and pcap ports see frames for the island's and peers' MACs. */
	rte_eth_promiscuous_enable(port);
	return 0;
fail:
	snprintf(err, err_size, "port %u: %s", port, rte_strerror(-rc));
	return rc;
}

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

/*
 * The round's shape for DATA admission (doc/isthmusd.md, "Admission"): the
 * figures ROUND gives the island (control.c: n_chunks of max_elems
 * elements), the island's tensor being ceil(payload / 4) elements (4-byte
 * dtypes). And the repair budget: one round's stream per peer plus a
 * quarter (at least two chunks) for repairs that were lost in turn.
 */
static void
admission_init(struct isthd *d)
{
	uint64_t payload = isth_sched_payload_bytes(d->sched);
	uint64_t elems = (payload + 3) / 4;
	struct isthd_shape *sh = &d->shape;

	sh->chunk_elems = (uint16_t)d->lim.max_elems;
	sh->n_chunks = (uint32_t)((elems + sh->chunk_elems - 1) / sh->chunk_elems);
	sh->last_elems = sh->n_chunks
		? (uint16_t)(elems - (uint64_t)(sh->n_chunks - 1) * sh->chunk_elems)
		: 0;
	sh->dtype = d->cfg.dtype;
	d->rep.budget_chunks = sh->n_chunks + RTE_MAX(sh->n_chunks / 4, 2u);
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
	admission_init(d);
	rc = isthd_auth_prepare(d, err, err_size);
	if (rc)
		goto fail;
	return 0;
fail:
	isth_sched_free(d->sched);
	d->sched = NULL;
	return rc;
}

/*
 * [access|wan] xdp_pin_sources: the addresses the program on port @i
 * (0 access, 1 wan) accepts isthmus frames from, from the site table: the
 * island's on the access port, every peer edge's on the WAN. Filled
 * before pinning is turned on. @return 0, or -errno with @err set.
 */
static int
isthd_xdp_pin_sources(struct isthd *d, int i, char *err, size_t err_size)
{
	const struct isthd_port *port = i ? &d->cfg.wan : &d->cfg.access;
	int rc = 0;

	err[0] = '\0';
	if (!port->xdp_pin_sources)
		return 0;
	if (i == 0)
		rc = isth_xdp_source_add(d->xdp[i], rte_cpu_to_be_32(d->cfg.island_ip), d->island);
	for (unsigned int s = 0; i == 1 && rc == 0 && s < d->n_islands && s < ISTHD_MAX_PEERS; s++)
		if (d->peer_of[s] != NULL)
			rc = isth_xdp_source_add(d->xdp[i], rte_cpu_to_be_32(d->peer_of[s]->ip), s);
	if (rc < 0)
		snprintf(err, err_size, "%s: [%s] xdp_pin_sources: %s", d->cfg.path,
			i ? "wan" : "access", strerror(-rc));
	return rc;
}

int
isthd_setup(struct isthd *d, char *err, size_t err_size)
{
	struct isth_backend_conf bc;
	struct isth_resend_conf rc_;
	struct timespec ts;
	uint64_t agg_seq0;
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
		rc = -ENODEV;
		goto fail;
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
		rc = -ENOMEM;
		goto fail;
	}
	{
		/* a TX queue per worker on both ports where the PMD has them
		 * (worker k sends AGG stream k to the island, and the island's
		 * DATA to its peers, itself), else the hand-off to worker 0;
		 * chosen here, once, per port */
		d->access_txq = (uint16_t)RTE_MAX(d->n_workers, 1u);
		d->wan_txq = d->access_txq;
		rc = port_start(d->access_port, d->pool, d->cfg.mtu, &d->access_txq, &d->access_rxq,
			NULL, err, err_size);
		if (rc == 0)
			rc = port_start(d->wan_port, d->pool, d->cfg.mtu, &d->wan_txq, &d->wan_rxq,
				&d->wan_rx_csum, err, err_size);
	}
	if (rc)
		goto fail;
	{
		struct rte_ether_addr mac;
		static const uint8_t zero[6];

		rte_eth_macaddr_get(d->access_port, &mac);
		memcpy(d->access_mac,
			memcmp(d->cfg.access.mac, zero, 6) ? d->cfg.access.mac : mac.addr_bytes, 6);
		rte_eth_macaddr_get(d->wan_port, &mac);
		memcpy(d->wan_mac,
			memcmp(d->cfg.wan.mac, zero, 6) ? d->cfg.wan.mac : mac.addr_bytes, 6);
	}
	isthd_frame_template(d); /* datapath.c: frames to the island */

	/* The af_xdp PMD loaded lib/xdp's program (xdp_prog devarg) when the
	 * port started: point it at our UDP port so that only isthmus
	 * traffic leaves the kernel. */
	{
		const struct isthd_port *ports[2] = {&d->cfg.access, &d->cfg.wan};

		for (int i = 0; i < 2; i++) {
			if (ports[i]->xdp_iface[0] == '\0')
				continue;
			d->xdp[i] = isth_xdp_open_iface(ports[i]->xdp_iface);
			if (d->xdp[i] == NULL || isthd_xdp_pin_sources(d, i, err, err_size) < 0 ||
				isth_xdp_configure(d->xdp[i], d->cfg.udp_port,
					ports[i]->xdp_pin_sources ? ISTH_XDP_CFG_F_PIN_SOURCES
								  : 0) < 0) {
				if (d->xdp[i] != NULL && err[0] != '\0') {
					rc = -EINVAL;
					goto fail;
				}
				snprintf(err, err_size,
					"%s: [%s] xdp_iface: no isthmus XDP program on %s (%s); "
					"start the port with "
					"xdp_prog=<build>/lib/xdp/isth_xdp.bpf.o",
					d->cfg.path, i ? "wan" : "access", ports[i]->xdp_iface,
					strerror(errno));
				rc = -EINVAL;
				goto fail;
			}
		}
	}

	/* version 2: every stream starts at CLOCK_REALTIME ns, so that a
	 * restarted edge never reuses an AGG's IV (doc/protocol.md); the
	 * AGG stream's first seq goes to the resend ring and, when the
	 * device seals AGGs, to the device */
	clock_gettime(CLOCK_REALTIME, &ts);
	agg_seq0 = d->cfg.auth ? (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec : 0;

	memset(&bc, 0, sizeof(bc));
	bc.socket_id = (int)rte_socket_id();
	bc.island = d->island;
	bc.n_islands = d->n_islands;
	bc.max_jobs = 1;
	bc.max_elems = d->lim.max_elems;
	bc.max_chunks = d->cfg.agg_max_chunks;
	bc.mem_bytes = d->cfg.agg_memory;
	bc.timeout_ns = d->cfg.agg_timeout_ns;
	bc.window = d->cfg.agg_window;
	bc.bf16_out = d->cfg.bf16_out;
	bc.agg_pool = d->pool;
	bc.device = d->cfg.fpga_device;
	bc.mcast.socket_id = (int)rte_socket_id();
	memcpy(bc.mcast.src_mac, d->wan_mac, 6);
	bc.mcast.src_ip = d->cfg.wan.ip;
	bc.mcast.src_port = d->cfg.udp_port;
	bc.mcast.udp_csum = d->cfg.wan_udp_csum;
	rc = isth_mcast_port_mode(d->wan_port);
	bc.mcast.mode = rc < 0 ? ISTH_MCAST_COPY : (enum isth_mcast_mode)rc;
	bc.mcast.hdr_pool = d->hdr_pool;
	bc.mcast.clone_pool = d->hdr_pool;
	bc.mcast.copy_pool = d->pool;
	if (d->n_workers == 0)
		d->n_workers = 1;
	/* one AGG stream per worker (doc/protocol.md, "AGG streams"): an
	 * island NACK of a stream at or above it is refused as `stream` */
	d->lim.n_streams = (uint8_t)d->n_workers;
	if (d->n_workers > 1) {
		/* worker k sums the chunks with chunk % N == k (worker.c):
		 * each instance gets its share of the memory and slots */
		if (strcmp(d->cfg.backend, "sw") != 0) {
			snprintf(err, err_size,
				"%s: [isthmusd] backend = %s runs on one worker: start isthmusd "
				"with two lcores (EAL -l 0,1), not %u workers",
				d->cfg.path, d->cfg.backend, d->n_workers);
			rc = -EINVAL;
			goto fail;
		}
		bc.mem_bytes = (bc.mem_bytes + d->n_workers - 1) / d->n_workers;
		bc.max_chunks = (bc.max_chunks + d->n_workers - 1) / d->n_workers;
	}
	isthd_auth_dev_conf(d, &bc.auth, agg_seq0);
	rc = isthd_rcu_setup(d);
	if (rc < 0) {
		snprintf(err, err_size, "round-table readers (%u workers): %s", d->n_workers,
			strerror(-rc));
		goto fail;
	}
	bc.qs = d->qs;
	d->be = isth_backend_create(d->cfg.backend, &bc);
	if (d->be == NULL) {
		snprintf(err, err_size, "%s: backend '%s': %s%s", d->cfg.path, d->cfg.backend,
			rte_strerror(rte_errno),
			d->cfg.auth && rte_errno == ENOTSUP
				? " ([auth] mode = on needs a device of interface 1.1)"
				: "");
		rc = -rte_errno;
		goto fail;
	}
	{
		struct isth_backend_caps caps;

		isth_backend_caps(d->be, &caps);
		d->auth.dev_verify = d->cfg.auth && caps.verifies;
		d->auth.dev_seal = d->cfg.auth && caps.seals;
	}
	rc = isthd_workers_setup(d, &bc, err, err_size);
	if (rc)
		goto fail;

	/* rounds are CLOCK_REALTIME's: the data path's TSC must run at its
	 * rate, which DPDK's figure may not (clock.c) */
	d->clk.tsc_hz = isthd_tsc_hz_measure(200000000ull, rte_get_tsc_hz());

	memset(&rc_, 0, sizeof(rc_));
	rc_.size = d->cfg.resend_entries;
	rc_.window_ns = d->cfg.resend_window_ns;
	rc_.linger_ns = d->cfg.resend_linger_ns;
	rc_.socket_id = (int)rte_socket_id();
	/* AGG frames to the island: Ethernet + IPv4 + UDP, no VLAN. */
	rc_.hdr_off = ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE;
	rc_.flags = ISTH_RESEND_F_STAMP;
	rc_.first_seq = agg_seq0;
	rc_.hdr_pool = d->hdr_pool;
	d->agg_ring = isth_resend_create(&rc_);
	if (d->agg_ring == NULL) {
		snprintf(err, err_size, "resend ring: %s", rte_strerror(rte_errno));
		rc = -rte_errno;
		goto fail;
	}
	/* AGG stream k >= 1: worker k's ring, of the same size ([agg]
	 * resend_entries each: a stream carries 1/N of the AGGs, so each
	 * ring keeps N times the window), its first seq the clock now (auth
	 * on; the stream is in the IV, so streams starting at nearly the
	 * same value never share one), and GONE seqs likewise */
	for (unsigned int k = 1; k < d->n_workers; k++) {
		clock_gettime(CLOCK_REALTIME, &ts);
		rc_.first_seq = d->cfg.auth
			? (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec
			: 0;
		d->shard[k]->seq_gone = rc_.first_seq;
		d->shard[k]->agg_ring = isth_resend_create(&rc_);
		if (d->shard[k]->agg_ring == NULL) {
			snprintf(err, err_size, "resend ring of worker %u: %s", k,
				rte_strerror(rte_errno));
			rc = -rte_errno;
			goto fail;
		}
	}

	/* WAN repair: the island's DATA as it leaves (bare messages, for
	 * peer NACKs) and, per round slot and sender, the chunks received. */
	rc = isthd_repair_init(d, err, err_size);
	if (rc)
		goto fail;
	/* a pacer (and a WAN repair ring) per worker: worker k sends each
	 * round's island DATA to its share of the round's peers ("Workers") */
	for (unsigned int k = 0; k < d->n_workers; k++) {
		rc = isthd_egress_init(d, k, err, err_size);
		if (rc)
			goto fail;
	}
	rc = isthd_auth_setup(d, err, err_size);
	if (rc)
		goto fail;

	clock_gettime(CLOCK_REALTIME, &ts);
	d->clk.tsc0 = rte_rdtsc();
	d->clk.rt0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	/* Started after the epoch (a restart): rounds already over are not
	 * ours to expire or repair. */
	if (d->clk.rt0 > d->clk.epoch_ns)
		d->expire_next = d->rep.tail_next =
			(d->clk.rt0 - d->clk.epoch_ns) / d->clk.round_ns;
	for (unsigned int k = 1; k < d->n_workers; k++)
		d->shard[k]->expire_next = d->expire_next;
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
isthd_ports_close(struct isthd *d)
{
	if (d->pool == NULL)
		return; /* ports were never started */
	rte_eth_dev_stop(d->access_port);
	rte_eth_dev_stop(d->wan_port);
	rte_eth_dev_close(d->access_port);
	rte_eth_dev_close(d->wan_port);
	rte_mempool_free(d->pool);
	rte_mempool_free(d->hdr_pool);
	rte_mempool_free(d->ctl_pool);
	d->pool = d->hdr_pool = d->ctl_pool = NULL;
}

void
isthd_teardown(struct isthd *d)
{
	/* telemetry callbacks read everything below: none may run past here */
	isthd_telemetry_close();
	isthd_egress_fini(&d->eg);
	for (unsigned int k = 1; k < ISTHD_MAX_WORKERS; k++)
		if (d->shard[k] != NULL)
			isthd_egress_fini(&d->shard[k]->eg);
	isth_resend_destroy(d->agg_ring);
	d->agg_ring = NULL;
	isthd_repair_fini(d);
	isthd_auth_fini(d);
	isth_xdp_destroy(d->xdp[0]);
	isth_xdp_destroy(d->xdp[1]);
	d->xdp[0] = d->xdp[1] = NULL;
	isthd_workers_teardown(d);
	isth_backend_destroy(d->be);
	d->be = NULL;
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

/*
 * rte_eal_cleanup(), then remove the runtime directory (/var/run/dpdk/
 * <prefix>: config, fbarrays, sockets) that 22.11 leaves behind, so that
 * neither --check nor a clean stop leaves a folder per run.
 */
void
isthd_eal_cleanup(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct dirent *de;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	if (dir[0] == '\0' || (dp = opendir(dir)) == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(dp);
	rmdir(dir);
}
