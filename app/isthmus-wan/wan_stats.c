/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulator's counters: copies for the caller, the tables printed at
 * exit (and with --print-routes), and the /isthmus_wan telemetry
 * commands. Counters are written by the polling lcore only and read here
 * with relaxed loads, from the main or the telemetry thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_telemetry.h>

#include "isth_ctr.h"

#include "wan_priv.h"

/* written by: main thread (register, free); read by: telemetry thread */
static struct isth_wan *tel_wan;

static const char *const link_ctr_names[ISTH_WAN_L_NCTR] = {
	[ISTH_WAN_L_QUEUE_FULL] = "queue_full",
	[ISTH_WAN_L_LOSS] = "loss",
	[ISTH_WAN_L_TTL] = "ttl",
	[ISTH_WAN_L_RING_FULL] = "ring_full",
	[ISTH_WAN_L_NOMBUF] = "nombuf",
	[ISTH_WAN_L_CORRUPTED] = "corrupted",
	[ISTH_WAN_L_DUPLICATED] = "duplicated",
	[ISTH_WAN_L_REORDERED] = "reordered",
	[ISTH_WAN_L_PRIO_FULL] = "prio_queue_full",
	[ISTH_WAN_L_PRIO] = "priority",
};

static const char *const port_ctr_names[ISTH_WAN_P_NCTR] = {
	[ISTH_WAN_P_NOT_IPV4] = "not_ipv4",
	[ISTH_WAN_P_BAD_IPV4] = "bad_ipv4",
	[ISTH_WAN_P_NO_ROUTE] = "no_route",
	[ISTH_WAN_P_NO_GROUP] = "no_group",
	[ISTH_WAN_P_SAME_SITE] = "same_site",
	[ISTH_WAN_P_LINK_LOCAL] = "link_local",
	[ISTH_WAN_P_NO_MAC] = "no_mac",
	[ISTH_WAN_P_TX_FULL] = "tx_full",
	[ISTH_WAN_P_NOMBUF] = "nombuf",
	[ISTH_WAN_P_ARP_REPLIES] = "arp_replies",
	[ISTH_WAN_P_ARP_IGNORED] = "arp_ignored",
};

const char *
isth_wan_link_ctr_name(enum isth_wan_link_ctr c)
{
	return (unsigned int)c < ISTH_WAN_L_NCTR ? link_ctr_names[c] : "?";
}

const char *
isth_wan_port_ctr_name(enum isth_wan_port_ctr c)
{
	return (unsigned int)c < ISTH_WAN_P_NCTR ? port_ctr_names[c] : "?";
}


int
isth_wan_link_stats(const struct isth_wan *w, int e, struct isth_wan_link_stats *out)
{
	const struct isth_wan_link_stats *st;
	int k;

	if (w == NULL || out == NULL || e < 0 || e >= w->ndl)
		return -EINVAL;
	st = &w->links[e].st;
	out->pkts = isth_ctr_get(&st->pkts);
	out->bytes = isth_ctr_get(&st->bytes);
	out->queue_hw_bytes = isth_ctr_get(&st->queue_hw_bytes);
	for (k = 0; k < ISTH_WAN_L_NCTR; k++)
		out->ctr[k] = isth_ctr_get(&st->ctr[k]);
	return 0;
}

int
isth_wan_port_stats(const struct isth_wan *w, int s, struct isth_wan_port_stats *out)
{
	const struct isth_wan_port_stats *st;
	int k;

	if (w == NULL || out == NULL || s < 0 || s >= w->n)
		return -EINVAL;
	if (!w->site[s].present)
		return -ENODEV;
	st = &w->site[s].st;
	out->rx_pkts = isth_ctr_get(&st->rx_pkts);
	out->rx_bytes = isth_ctr_get(&st->rx_bytes);
	out->tx_pkts = isth_ctr_get(&st->tx_pkts);
	out->tx_bytes = isth_ctr_get(&st->tx_bytes);
	for (k = 0; k < ISTH_WAN_P_NCTR; k++)
		out->ctr[k] = isth_ctr_get(&st->ctr[k]);
	return 0;
}

void
isth_wan_print_stats(const struct isth_wan *w, FILE *f)
{
	struct isth_wan_link_stats ls;
	struct isth_wan_port_stats ps;
	int e, s, k;

	fprintf(f, "%-20s %12s %14s %12s", "link", "pkts", "bytes", "queue_hw_B");
	for (k = 0; k < ISTH_WAN_L_NCTR; k++)
		fprintf(f, " %s", link_ctr_names[k]);
	fprintf(f, "\n");
	for (e = 0; e < w->ndl; e++) {
		isth_wan_link_stats(w, e, &ls);
		fprintf(f, "%-20s %12" PRIu64 " %14" PRIu64 " %12" PRIu64, w->links[e].name,
			ls.pkts, ls.bytes, ls.queue_hw_bytes);
		for (k = 0; k < ISTH_WAN_L_NCTR; k++)
			fprintf(f, " %*" PRIu64, (int)strlen(link_ctr_names[k]), ls.ctr[k]);
		fprintf(f, "\n");
	}
	fprintf(f, "%-12s %5s %12s %14s %12s %14s", "site", "port", "rx_pkts", "rx_bytes",
		"tx_pkts", "tx_bytes");
	for (k = 0; k < ISTH_WAN_P_NCTR; k++)
		fprintf(f, " %s", port_ctr_names[k]);
	fprintf(f, "\n");
	for (s = 0; s < w->n; s++) {
		if (isth_wan_port_stats(w, s, &ps) < 0)
			continue;
		fprintf(f, "%-12s %5u %12" PRIu64 " %14" PRIu64 " %12" PRIu64 " %14" PRIu64,
			isth_topo_name(w->t, s), w->site[s].port, ps.rx_pkts, ps.rx_bytes,
			ps.tx_pkts, ps.tx_bytes);
		for (k = 0; k < ISTH_WAN_P_NCTR; k++)
			fprintf(f, " %*" PRIu64, (int)strlen(port_ctr_names[k]), ps.ctr[k]);
		fprintf(f, "\n");
	}
}

void
isth_wan_print_routes(const struct isth_wan *w, FILE *f)
{
	int e, s, d, g, v;

	fprintf(f, "links (capacity after --scale):\n");
	for (e = 0; e < w->ndl; e++) {
		const struct link *L = &w->links[e];

		fprintf(f, "  %-20s %9.3f ms %12.0f bit/s queue %" PRIu64 " B", L->name,
			L->lat_cyc * 1e3 / (double)w->hz, 8.0 * (double)w->hz / L->cyc_per_byte,
			L->qlimit);
		if (L->pqlimit)
			fprintf(f, " priority (EF) queue %" PRIu64 " B", L->pqlimit);
		fprintf(f, "\n");
	}
	fprintf(f, "unicast routes:\n");
	for (s = 0; s < w->n; s++) {
		if (!w->site[s].present)
			continue;
		for (d = 0; d < w->n; d++) {
			if (d == s || !w->site[d].present)
				continue;
			fprintf(f, "  %s -> %s:", isth_topo_name(w->t, s), isth_topo_name(w->t, d));
			for (v = s; v != d;
				v = w->links[w->nh[((size_t)s * w->n + v) * w->n + d]].to)
				fprintf(f, " %s",
					w->links[w->nh[((size_t)s * w->n + v) * w->n + d]].name);
			fprintf(f, " (%.3f ms)\n", isth_topo_latency(w->t, s, d));
		}
	}
	fprintf(f, "multicast trees:\n");
	for (g = 0; g < w->ngroups; g++) {
		uint32_t ip = w->group_ip[g];

		for (s = 0; s < w->n; s++) {
			uint64_t used[(INT16_MAX + 64) / 64];
			uint64_t m = w->group_members[g] & ~(UINT64_C(1) << s);

			if (!w->site[s].present || !(w->group_members[g] >> s & 1))
				continue;
			memset(used, 0, sizeof(uint64_t) * ((w->ndl + 63) / 64));
			fprintf(f, "  %u.%u.%u.%u from %s:", ip >> 24, (ip >> 16) & 0xff,
				(ip >> 8) & 0xff, ip & 0xff, isth_topo_name(w->t, s));
			for (d = 0; d < w->n; d++) {
				if (!(m >> d & 1))
					continue;
				for (v = s; v != d;) {
					int16_t x = w->nh[((size_t)s * w->n + v) * w->n + d];

					if (!(used[x / 64] >> (x % 64) & 1)) {
						used[x / 64] |= UINT64_C(1) << (x % 64);
						fprintf(f, " %s", w->links[x].name);
					}
					v = w->links[x].to;
				}
			}
			fprintf(f, "\n");
		}
	}
}

/* ------------------------------------------------------------------ */
/* Telemetry                                                           */
/* ------------------------------------------------------------------ */


/* Telemetry names allow [A-Za-z0-9_/] only. */
static void
tel_name(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i] != '\0'; i++) {
		char c = src[i];

		dst[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				 (c >= '0' && c <= '9') || c == '_' || c == '/')
			? c
			: '_';
	}
	dst[i] = '\0';
}

static void
tel_link(const struct isth_wan *w, int e, struct rte_tel_data *d)
{
	struct isth_wan_link_stats ls;
	int k;

	isth_wan_link_stats(w, e, &ls);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "pkts", ls.pkts);
	rte_tel_data_add_dict_u64(d, "bytes", ls.bytes);
	rte_tel_data_add_dict_u64(d, "queue_hw_bytes", ls.queue_hw_bytes);
	for (k = 0; k < ISTH_WAN_L_NCTR; k++)
		rte_tel_data_add_dict_u64(d, link_ctr_names[k], ls.ctr[k]);
}

static int
tel_links(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct isth_wan *w = __atomic_load_n(&tel_wan, __ATOMIC_ACQUIRE);
	char name[RTE_TEL_MAX_STRING_LEN];
	int e, from, to;

	(void)cmd;
	if (w == NULL)
		return -ENODEV;
	if (params != NULL && *params != '\0') {
		/* one link, by index or "A->B" */
		for (e = 0; e < w->ndl; e++) {
			char idx[16];

			snprintf(idx, sizeof(idx), "%d", e);
			if (strcmp(params, idx) == 0 || strcmp(params, w->links[e].name) == 0) {
				tel_link(w, e, d);
				return 0;
			}
		}
		return -EINVAL;
	}
	rte_tel_data_start_dict(d);
	for (e = 0; e < w->ndl && e < RTE_TEL_MAX_DICT_ENTRIES; e++) {
		struct rte_tel_data *c = rte_tel_data_alloc();
		char raw[2 * ISTH_TOPO_NAME_MAX + 2];

		if (c == NULL)
			return -ENOMEM;
		tel_link(w, e, c);
		isth_topo_dlink(w->t, e, &from, &to, NULL, NULL);
		snprintf(raw, sizeof(raw), "%s/%s", isth_topo_name(w->t, from),
			isth_topo_name(w->t, to));
		tel_name(name, sizeof(name), raw);
		if (rte_tel_data_add_dict_container(d, name, c, 0) < 0)
			rte_tel_data_free(c);
	}
	return 0;
}

static int
tel_ports(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct isth_wan *w = __atomic_load_n(&tel_wan, __ATOMIC_ACQUIRE);
	char name[RTE_TEL_MAX_STRING_LEN];
	struct isth_wan_port_stats ps;
	int s, k;

	(void)cmd;
	(void)params;
	if (w == NULL)
		return -ENODEV;
	rte_tel_data_start_dict(d);
	for (s = 0; s < w->n; s++) {
		struct rte_tel_data *c;

		if (isth_wan_port_stats(w, s, &ps) < 0)
			continue;
		c = rte_tel_data_alloc();
		if (c == NULL)
			return -ENOMEM;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_u64(c, "port", w->site[s].port);
		rte_tel_data_add_dict_u64(c, "rx_pkts", ps.rx_pkts);
		rte_tel_data_add_dict_u64(c, "rx_bytes", ps.rx_bytes);
		rte_tel_data_add_dict_u64(c, "tx_pkts", ps.tx_pkts);
		rte_tel_data_add_dict_u64(c, "tx_bytes", ps.tx_bytes);
		for (k = 0; k < ISTH_WAN_P_NCTR; k++)
			rte_tel_data_add_dict_u64(c, port_ctr_names[k], ps.ctr[k]);
		tel_name(name, sizeof(name), isth_topo_name(w->t, s));
		if (rte_tel_data_add_dict_container(d, name, c, 0) < 0)
			rte_tel_data_free(c);
	}
	return 0;
}

void
wan_telemetry_forget(struct isth_wan *w)
{
	struct isth_wan *expect = w;

	__atomic_compare_exchange_n(
		&tel_wan, &expect, NULL, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

int
isth_wan_telemetry_register(struct isth_wan *w)
{
	int rc;

	if (w == NULL)
		return -EINVAL;
	__atomic_store_n(&tel_wan, w, __ATOMIC_RELEASE);
	rc = rte_telemetry_register_cmd("/isthmus_wan/links", tel_links,
		"Per directed link: pkts, bytes, queue_hw_bytes and drops by reason. "
		"Parameter: optional link index or name A->B");
	if (rc < 0)
		return rc;
	return rte_telemetry_register_cmd("/isthmus_wan/ports", tel_ports,
		"Per site port: rx/tx packets and bytes, drops by reason, ARP replies. No "
		"parameters");
}
