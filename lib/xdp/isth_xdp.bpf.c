/* SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only) */

/*
 * XDP steering for isthmusd on a NIC shared with the host.
 *
 * isthmus frames (IPv4/UDP to the configured port, unicast or to one of
 * the job's multicast groups) go to the AF_XDP socket bound to the frame's
 * queue; everything else (ARP, ICMP, SSH, IPv6, other UDP ports, IPv4
 * fragments) goes to the kernel, so the host stays reachable on the same
 * port. Built for the af_xdp PMD's xdp_prog= devarg: DPDK 22.11 loads this
 * object with libbpf, takes its first program, attaches it and inserts its
 * socket into the map named "xsks_map" at key = queue id. This object must
 * therefore hold exactly one program.
 *
 * bpf_redirect_map() on an XSKMAP returns XDP_REDIRECT when the queue has a
 * socket and the fallback action (XDP_PASS here) when it has none, so an
 * isthmus frame arriving on a queue nobody reads is still delivered to the
 * kernel (and counted as no_xsk) rather than dropped in the driver. A
 * redirect that succeeds here can still be dropped later if the socket's
 * RX ring is full; the PMD reports those in imissed (XDP_STATISTICS).
 *
 * With ISTH_XDP_CFG_F_PIN_SOURCES set in isth_config, an isthmus frame is
 * steered only if its IPv4 source address is in isth_sources (isthmusd
 * fills it from the site table: the peers' edges on the WAN port, the
 * island on the access port); the others are dropped here and counted
 * spoofed, so spoofed traffic costs neither the PMD nor the kernel.
 */

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "isth_xdp_shared.h"

#define IP_MF 0x2000
#define IP_OFFMASK 0x1fff
/* 802.1Q and 802.1ad; QinQ is two tags */
#define ISTH_XDP_MAX_VLAN_TAGS 2

struct vlan_tag {
	__be16 tci;
	__be16 encap_proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, ISTH_XDP_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct isth_xdp_cpu_counters);
} isth_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct isth_xdp_config);
} isth_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ISTH_XDP_MAX_GROUPS);
	__type(key, __be32);
	__type(value, struct isth_xdp_group);
} isth_groups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ISTH_XDP_MAX_SOURCES);
	__type(key, __be32);
	__type(value, struct isth_xdp_source);
} isth_sources SEC(".maps");

/* Port used while isth_config holds 0. A skeleton loader may set it before
 * load; an object loaded by the PMD keeps the compiled-in default. */
const volatile __u16 isth_default_port = ISTH_XDP_DEFAULT_PORT;

enum verdict {
	V_PASS,
	V_MALFORMED,
	V_STEER,
	V_SPOOFED,
};

static __always_inline enum verdict
classify(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	const struct isth_xdp_config *cfg;
	struct vlan_tag *vlan;
	struct iphdr *ip;
	struct udphdr *udp;
	__u32 key = 0;
	__u16 proto, port, ihl_size, tot_len, udp_len;
	int i;

	if ((void *)(eth + 1) > data_end)
		return V_MALFORMED;
	proto = eth->h_proto;
	data = eth + 1;

#pragma unroll
	for (i = 0; i < ISTH_XDP_MAX_VLAN_TAGS; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		vlan = data;
		if ((void *)(vlan + 1) > data_end)
			return V_MALFORMED;
		proto = vlan->encap_proto;
		data = vlan + 1;
	}
	if (proto != bpf_htons(ETH_P_IP))
		return V_PASS;

	ip = data;
	if ((void *)(ip + 1) > data_end)
		return V_MALFORMED;
	if (ip->version != 4 || ip->ihl < 5)
		return V_MALFORMED;
	ihl_size = ip->ihl * 4;
	tot_len = bpf_ntohs(ip->tot_len);
	/* Shorter than the frame is Ethernet padding; longer is a lie. */
	if (tot_len < ihl_size || (void *)ip + tot_len > data_end)
		return V_MALFORMED;
	/* isthmus never fragments; the kernel reassembles what others send. */
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFMASK))
		return V_PASS;
	if (ip->protocol != IPPROTO_UDP)
		return V_PASS;

	udp = (void *)ip + ihl_size;
	if ((void *)(udp + 1) > data_end)
		return V_MALFORMED;
	udp_len = bpf_ntohs(udp->len);
	if (udp_len < sizeof(*udp) || udp_len > tot_len - ihl_size)
		return V_MALFORMED;

	cfg = bpf_map_lookup_elem(&isth_config, &key);
	port = cfg != NULL && cfg->udp_port != 0 ? cfg->udp_port : isth_default_port;
	if (udp->dest != bpf_htons(port))
		return V_PASS;

	/* 224.0.0.0/4: only the job's groups are ours. */
	if ((ip->daddr & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000) &&
		!(cfg != NULL && (cfg->flags & ISTH_XDP_CFG_F_ANY_GROUP)) &&
		bpf_map_lookup_elem(&isth_groups, &ip->daddr) == NULL)
		return V_PASS;

	/* Source pinning: an isthmus frame from an address the site table
	 * does not name never reaches the PMD (nor the kernel: the port is
	 * isthmus's, a spoofed frame has no business anywhere). */
	if (cfg != NULL && (cfg->flags & ISTH_XDP_CFG_F_PIN_SOURCES) &&
		bpf_map_lookup_elem(&isth_sources, &ip->saddr) == NULL)
		return V_SPOOFED;

	return V_STEER;
}

SEC("xdp")
int
isth_xdp_steer(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct isth_xdp_cpu_counters *cnt;
	enum verdict v;
	__u32 key = 0;
	int act;

	v = classify(data, data_end);
	cnt = bpf_map_lookup_elem(&isth_counters, &key);

	if (v == V_SPOOFED) {
		if (cnt != NULL)
			cnt->spoofed++;
		return XDP_DROP;
	}
	if (v != V_STEER) {
		if (cnt != NULL) {
			if (v == V_MALFORMED)
				cnt->malformed++;
			else
				cnt->passed++;
		}
		return XDP_PASS;
	}

	act = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
	if (cnt != NULL) {
		if (act == XDP_REDIRECT)
			cnt->steered++;
		else
			cnt->no_xsk++;
	}
	return act;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
