/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "wan_harness.h"

static unsigned int h_instance;
bool h_opt_decrement_ttl;
const struct isth_sched *h_opt_sched;
uint64_t h_opt_epoch_tsc;

void
h_eal_init(void)
{
	char prefix[64];
	char *argv[] = {"wan_test", "--no-huge", "-m", "256", "--no-pci", "--no-telemetry", prefix,
		"--log-level=error", NULL};

	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-wan-%d", (int)getpid());
	if (rte_eal_init(8, argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		abort();
	}
}

int
h_site(const struct harness *h, const char *name)
{
	return isth_topo_find(h->t, name);
}

int
h_dlink(const struct harness *h, const char *from, const char *to)
{
	int e, a, b, f = h_site(h, from), d = h_site(h, to);

	for (e = 0; e < isth_topo_ndlinks(h->t); e++) {
		isth_topo_dlink(h->t, e, &a, &b, NULL, NULL);
		if (a == f && b == d)
			return e;
	}
	return -1;
}

uint32_t
h_ip(int s)
{
	return (10u << 24) | ((uint32_t)s << 8) | 1;
}

static int
port_start(uint16_t port, struct rte_mempool *pool)
{
	struct rte_eth_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, 1024, 0, NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, 1024, 0, NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	return rc;
}

int
h_create(struct harness *h, const char *sites_csv, const char *links_csv, const char *groups_text,
	const char *const *specs, double scale, uint64_t seed, uint64_t hz, unsigned int nmbufs)
{
	struct isth_wan_params p = {.scale = scale, .seed = seed, .tsc_hz = hz};
	char name[64], map[4096];
	size_t off = 0;
	int i, k;

	memset(h, 0, sizeof(*h));
	h->t = isth_topo_parse("sites", sites_csv, "links", links_csv, h->err, sizeof(h->err));
	if (h->t == NULL)
		return -1;
	h->n = isth_topo_n(h->t);
	if (h->n > H_MAX_SITES) {
		snprintf(h->err, sizeof(h->err), "too many sites");
		return -1;
	}
	k = h_instance++;
	snprintf(name, sizeof(name), "hpool%d", k);
	h->pool = rte_pktmbuf_pool_create(name, nmbufs, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	if (h->pool == NULL) {
		snprintf(h->err, sizeof(h->err), "pool: %s", rte_strerror(rte_errno));
		return -1;
	}
	for (i = 0; i < h->n; i++) {
		snprintf(name, sizeof(name), "h%d_to%d", k, i);
		h->to_wan[i] = rte_ring_create(name, 8192, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "h%d_from%d", k, i);
		h->from_wan[i] = rte_ring_create(name, 8192, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (h->to_wan[i] == NULL || h->from_wan[i] == NULL) {
			snprintf(h->err, sizeof(h->err), "ring: %s", rte_strerror(rte_errno));
			return -1;
		}
		snprintf(name, sizeof(name), "net_hring%d_%d", k, i);
		h->port[i] = rte_eth_from_rings(name, &h->to_wan[i], 1, &h->from_wan[i], 1, 0);
		if (h->port[i] < 0 || port_start((uint16_t)h->port[i], h->pool) != 0) {
			snprintf(h->err, sizeof(h->err), "port %d failed", i);
			return -1;
		}
		h->started[i] = true;
		off += snprintf(map + off, sizeof(map) - off,
			"%s port=%d mac=02:00:00:00:00:%02x gw_mac=02:00:00:00:ff:%02x "
			"net=10.0.%d.0/24\n",
			isth_topo_name(h->t, i), h->port[i], i + 1, i + 1, i);
	}
	if (isth_wan_sitemap_parse(h->t, "map", map, &h->map, h->err, sizeof(h->err)) < 0)
		return -1;
	if (groups_text != NULL &&
		isth_wan_groups_parse(h->t, &h->map, "groups", groups_text, &h->groups, h->err,
			sizeof(h->err)) < 0)
		return -1;
	h->imp = calloc(isth_topo_ndlinks(h->t), sizeof(*h->imp));
	if (h->imp == NULL)
		return -1;
	isth_wan_impair_default(h->imp, isth_topo_ndlinks(h->t));
	for (i = 0; specs != NULL && specs[i] != NULL; i++)
		if (isth_wan_impair_apply(h->t, h->imp, specs[i], h->err, sizeof(h->err)) < 0)
			return -1;
	p.pool = h->pool;
	p.lane_entries = 8192;
	p.decrement_ttl = h_opt_decrement_ttl;
	p.sched = h_opt_sched;
	p.epoch_tsc = h_opt_epoch_tsc;
	h->w = isth_wan_create(h->t, &h->map, &h->groups, h->imp, &p);
	if (h->w == NULL) {
		snprintf(h->err, sizeof(h->err), "create: %s", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

void
h_destroy(struct harness *h)
{
	struct rte_mbuf *m;
	int i;

	isth_wan_free(h->w);
	for (i = 0; i < h->n; i++) {
		if (h->started[i]) {
			rte_eth_dev_stop((uint16_t)h->port[i]);
			rte_eth_dev_close((uint16_t)h->port[i]);
		}
		while (h->to_wan[i] && rte_ring_dequeue(h->to_wan[i], (void **)&m) == 0)
			rte_pktmbuf_free(m);
		while (h->from_wan[i] && rte_ring_dequeue(h->from_wan[i], (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(h->to_wan[i]);
		rte_ring_free(h->from_wan[i]);
	}
	rte_mempool_free(h->pool);
	free(h->imp);
	isth_topo_free(h->t);
	memset(h, 0, sizeof(*h));
}

struct rte_mbuf *
h_udp(struct harness *h, int s, uint32_t dst_ip, uint32_t seq, uint32_t frame_len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(h->pool);
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	uint8_t *pl;
	uint32_t i;

	if (m == NULL)
		return NULL;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)frame_len);
	if (eth == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(eth, 0, frame_len);
	eth->dst_addr.addr_bytes[0] = 0x02;
	eth->dst_addr.addr_bytes[4] = 0xff;
	eth->dst_addr.addr_bytes[5] = (uint8_t)(s + 1);
	eth->src_addr.addr_bytes[0] = 0x02;
	eth->src_addr.addr_bytes[5] = (uint8_t)(s + 1);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(frame_len - sizeof(*eth)));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(h_ip(s));
	ip->dst_addr = rte_cpu_to_be_32(dst_ip);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp = (struct rte_udp_hdr *)(ip + 1);
	udp->src_port = rte_cpu_to_be_16(4000);
	udp->dst_port = rte_cpu_to_be_16(4000);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(frame_len - sizeof(*eth) - sizeof(*ip)));
	pl = (uint8_t *)(udp + 1);
	memcpy(pl, &seq, sizeof(seq));
	/* a known pattern so that corruption can be found */
	for (i = sizeof(seq); i < frame_len - (uint32_t)(pl - (uint8_t *)eth); i++)
		pl[i] = (uint8_t)(i * 7 + seq);
	return m;
}

uint32_t
h_seq(const struct rte_mbuf *m)
{
	const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t seq;

	memcpy(&seq, b + 14 + 20 + 8, sizeof(seq));
	return seq;
}

int
h_inject(struct harness *h, int s, struct rte_mbuf *m)
{
	if (m == NULL || rte_ring_enqueue(h->to_wan[s], m) != 0) {
		rte_pktmbuf_free(m);
		return -1;
	}
	return 0;
}

unsigned int
h_recv(struct harness *h, int s, struct rte_mbuf **m, unsigned int n)
{
	return rte_ring_dequeue_burst(h->from_wan[s], (void **)m, n, NULL);
}
