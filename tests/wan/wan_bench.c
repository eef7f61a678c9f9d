/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-wan throughput on net_ring ports, in one process: a generator
 * offers 64-byte frames in bursts of 32 and drains what comes out. Each
 * case is measured side by side with the generator alone (same rings, no
 * emulator), so the emulator's own cost per packet is the difference.
 * Links are 100 Gbit/s with 10 us latency, so capacity never limits.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "wan_harness.h"
#include "isth_test_eal.h"

#define BURST 32
#define NPKTS (2u << 20)

struct bcase {
	const char *name;
	const char *sites;
	const char *links;
	const char *groups;
	const char *spec;
	int src;
	uint32_t dst; /* destination IP */
	int copies; /* frames out per frame in (no impairments) */
};

/* Cycles to push NPKTS frames from site @p src; with_wan = 0: generator only. */
static uint64_t
run(struct harness *h, const struct bcase *c, int with_wan, uint64_t *out_frames)
{
	struct rte_mbuf *tmpl = h_udp(h, c->src, c->dst, 0, 64), *m[BURST], *o[4 * BURST];
	const void *tdata = rte_pktmbuf_mtod(tmpl, const void *);
	uint64_t t0, t1, out = 0;
	unsigned int sent = 0, i, n;
	int s;

	t0 = rte_rdtsc();
	while (sent < NPKTS) {
		if (rte_pktmbuf_alloc_bulk(h->pool, m, BURST) == 0) {
			for (i = 0; i < BURST; i++) {
				memcpy(rte_pktmbuf_mtod(m[i], void *), tdata, 64);
				m[i]->data_len = 64;
				m[i]->pkt_len = 64;
			}
			if (with_wan) {
				n = rte_ring_enqueue_burst(
					h->to_wan[c->src], (void **)m, BURST, NULL);
			} else {
				/* the same ring hops, without the emulator between them */
				n = rte_ring_enqueue_burst(
					h->from_wan[c->src], (void **)m, BURST, NULL);
			}
			for (i = n; i < BURST; i++)
				rte_pktmbuf_free(m[i]);
			sent += n;
		}
		if (with_wan)
			isth_wan_poll(h->w, rte_rdtsc());
		for (s = 0; s < h->n; s++) {
			while ((n = rte_ring_dequeue_burst(
					h->from_wan[s], (void **)o, RTE_DIM(o), NULL)) > 0) {
				rte_pktmbuf_free_bulk(o, n);
				out += n;
			}
		}
	}
	while (with_wan && isth_wan_next_event(h->w) != UINT64_MAX) {
		isth_wan_poll(h->w, rte_rdtsc());
		for (s = 0; s < h->n; s++) {
			while ((n = rte_ring_dequeue_burst(
					h->from_wan[s], (void **)o, RTE_DIM(o), NULL)) > 0) {
				rte_pktmbuf_free_bulk(o, n);
				out += n;
			}
		}
	}
	t1 = rte_rdtsc();
	rte_pktmbuf_free(tmpl);
	*out_frames = out;
	return t1 - t0;
}

int
main(void)
{
	static const char line4[] = "site,region\nA,r\nB,r\nC,r\nD,r\n";
	const struct bcase cases[] = {
		{"unicast, 1 link", "site,region\nA,r\nB,r\n",
			"a,b,one_way_ms,capacity_gbps\nA,B,0.01,100\n", NULL, NULL, 0, h_ip(1), 1},
		{"unicast, 3 links", line4,
			"a,b,one_way_ms,capacity_gbps\nA,B,0.01,100\nB,C,0.01,100\nC,D,0.01,100\n",
			NULL, NULL, 0, h_ip(3), 1},
		{"multicast to 3 (star)", line4,
			"a,b,one_way_ms,capacity_gbps\nA,B,0.01,100\nA,C,0.01,100\nA,D,0.01,100\n",
			"239.1.1.1 A B C D\n", NULL, 0, (239u << 24) | (1 << 16) | (1 << 8) | 1, 3},
		{"unicast, 1 link, impaired", "site,region\nA,r\nB,r\n",
			"a,b,one_way_ms,capacity_gbps\nA,B,0.01,100\n", NULL,
			"loss=0.01,dup=0.01,corrupt=0.01,jitter-ms=0.005", 0, h_ip(1), 1},
	};
	struct harness h;
	uint64_t hz, cb, cw, ob, ow;
	size_t k;

	h_eal_init();
	hz = rte_get_tsc_hz();
	printf("isthmus-wan throughput, 64-byte frames, bursts of %d, %u frames per run\n", BURST,
		NPKTS);
	printf("%-28s %12s %12s %10s %12s %8s\n", "case", "gen Mpps", "wan Mpps", "ratio",
		"wan ns/pkt", "out/in");
	for (k = 0; k < RTE_DIM(cases); k++) {
		const struct bcase *c = &cases[k];
		const char *specs[] = {c->spec, NULL};

		if (h_create(&h, c->sites, c->links, c->groups, specs, 1, 1, 0, 16384) < 0) {
			fprintf(stderr, "%s: %s\n", c->name, h.err);
			return 1;
		}
		cb = run(&h, c, 0, &ob);
		cw = run(&h, c, 1, &ow);
		printf("%-28s %12.2f %12.2f %10.2f %12.1f %8.3f\n", c->name,
			NPKTS / ((double)cb / (double)hz) / 1e6,
			NPKTS / ((double)cw / (double)hz) / 1e6, (double)cb / (double)cw,
			((double)cw - (double)cb) / (double)hz * 1e9 / NPKTS, (double)ow / NPKTS);
		h_destroy(&h);
	}
	isth_test_eal_cleanup();
	return 0;
}
