/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two ports (doc/isthmusd.md, "Workers"): found by name or id, started
 * with a TX queue per worker where the PMD has them, their MACs, their XDP
 * programs ([access|wan] xdp_iface); closed at exit. And the EAL's cleanup.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
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
	/* every host of the island ([access] island_hosts) */
	for (unsigned int h = 0; i == 0 && rc == 0 && h < d->cfg.n_island_hosts; h++)
		rc = isth_xdp_source_add(
			d->xdp[i], rte_cpu_to_be_32(d->cfg.island_hosts[h].ip), d->island);
	for (unsigned int s = 0; i == 1 && rc == 0 && s < d->n_islands && s < ISTHD_MAX_PEERS; s++)
		if (d->peer_of[s] != NULL)
			rc = isth_xdp_source_add(d->xdp[i], rte_cpu_to_be_32(d->peer_of[s]->ip), s);
	if (rc < 0)
		snprintf(err, err_size, "%s: [%s] xdp_pin_sources: %s", d->cfg.path,
			i ? "wan" : "access", strerror(-rc));
	return rc;
}

/* The af_xdp PMD loaded lib/xdp's program (xdp_prog devarg) when the port
 * started: point it at our UDP port so that only isthmus traffic leaves
 * the kernel. */
static int
xdp_start(struct isthd *d, char *err, size_t err_size)
{
	const struct isthd_port *ports[2] = {&d->cfg.access, &d->cfg.wan};

	for (int i = 0; i < 2; i++) {
		if (ports[i]->xdp_iface[0] == '\0')
			continue;
		d->xdp[i] = isth_xdp_open_iface(ports[i]->xdp_iface);
		if (d->xdp[i] == NULL || isthd_xdp_pin_sources(d, i, err, err_size) < 0 ||
			isth_xdp_configure(d->xdp[i], d->cfg.udp_port,
				ports[i]->xdp_pin_sources ? ISTH_XDP_CFG_F_PIN_SOURCES : 0) < 0) {
			if (d->xdp[i] != NULL && err[0] != '\0')
				return -EINVAL;
			snprintf(err, err_size,
				"%s: [%s] xdp_iface: no isthmus XDP program on %s (%s); start the "
				"port with xdp_prog=<build>/lib/xdp/isth_xdp.bpf.o",
				d->cfg.path, i ? "wan" : "access", ports[i]->xdp_iface,
				strerror(errno));
			return -EINVAL;
		}
	}
	return 0;
}

int
isthd_ports_start(struct isthd *d, char *err, size_t err_size)
{
	struct rte_ether_addr mac;
	static const uint8_t zero[6];
	int rc;

	/* a TX queue per worker on both ports where the PMD has them (worker
	 * k sends AGG stream k to the island, and the island's DATA to its
	 * peers, itself), else the hand-off to worker 0; chosen here, once,
	 * per port */
	d->access_txq = (uint16_t)RTE_MAX(d->n_workers, 1u);
	d->wan_txq = d->access_txq;
	rc = port_start(d->access_port, d->pool, d->cfg.mtu, &d->access_txq, &d->access_rxq, NULL,
		err, err_size);
	if (rc == 0)
		rc = port_start(d->wan_port, d->pool, d->cfg.mtu, &d->wan_txq, &d->wan_rxq,
			&d->wan_rx_csum, err, err_size);
	if (rc)
		return rc;
	rte_eth_macaddr_get(d->access_port, &mac);
	memcpy(d->access_mac,
		memcmp(d->cfg.access.mac, zero, 6) ? d->cfg.access.mac : mac.addr_bytes, 6);
	rte_eth_macaddr_get(d->wan_port, &mac);
	memcpy(d->wan_mac, memcmp(d->cfg.wan.mac, zero, 6) ? d->cfg.wan.mac : mac.addr_bytes, 6);
	isthd_frame_template(d); /* island.c: frames to the island */
	return xdp_start(d, err, err_size);
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
