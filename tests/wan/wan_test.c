/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-wan tests. Configuration parsers are tested EAL-free with
 * table-driven bad input. The emulator runs in-process on net_ring ports:
 * most tests drive it with an injected clock (1 cycle = 1 ns) and advance
 * from event to event, so every delivery time is exact and compared with a
 * hand calculation; one test uses the real TSC with a stated tolerance.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_ip.h>

#include "wan.h"
#include "isth_sched.h"
#include "wan_harness.h"
#include "isth_test_eal.h"

#define NS 1ull
#define US (1000 * NS)
#define MS (1000 * US)

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

struct rec {
	int site;
	uint32_t seq;
	uint64_t t;
	bool corrupt;
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint8_t ttl;
	bool cksum_ok;
};

struct log {
	int n;
	struct rec r[32768];
};

/* True if the payload differs from what h_udp wrote for this frame. */
static bool
is_corrupt(struct harness *h, const struct rte_mbuf *m)
{
	struct rte_mbuf *ref = h_udp(h, 0, 0, h_seq(m), rte_pktmbuf_pkt_len(m));
	const uint8_t *a = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint8_t *b = rte_pktmbuf_mtod(ref, const uint8_t *);
	uint32_t off = 14 + 20, len = rte_pktmbuf_pkt_len(m); /* UDP header and payload */
	bool c = memcmp(a + off, b + off, len - off) != 0;

	rte_pktmbuf_free(ref);
	return c;
}

static void
collect(struct harness *h, uint64_t now, struct log *lg)
{
	struct rte_mbuf *m[64];
	unsigned int n, i;
	int s;

	for (s = 0; s < h->n; s++) {
		while ((n = h_recv(h, s, m, 64)) > 0) {
			for (i = 0; i < n; i++) {
				const struct rte_ether_hdr *eth =
					rte_pktmbuf_mtod(m[i], const struct rte_ether_hdr *);

				if (lg->n < (int)RTE_DIM(lg->r)) {
					struct rec *r = &lg->r[lg->n++];

					r->site = s;
					r->seq = h_seq(m[i]);
					r->t = now;
					r->corrupt = is_corrupt(h, m[i]);
					memcpy(r->dst_mac, eth->dst_addr.addr_bytes, 6);
					memcpy(r->src_mac, eth->src_addr.addr_bytes, 6);
					struct rte_ipv4_hdr iph;

					memcpy(&iph, eth + 1, sizeof(iph));
					r->ttl = iph.time_to_live;
					uint16_t ck = iph.hdr_checksum;
					iph.hdr_checksum = 0;
					r->cksum_ok = rte_ipv4_cksum(&iph) == ck;
				}
				rte_pktmbuf_free(m[i]);
			}
		}
	}
}

/*
 * Process every event up to @p until. Call it before injecting frames that
 * arrive at @p until, then take_at(): a poll at an earlier event time would
 * otherwise receive them early.
 */
static void
events_until(struct harness *h, uint64_t until, struct log *lg)
{
	uint64_t next;

	while ((next = isth_wan_next_event(h->w)) <= until) {
		isth_wan_poll(h->w, next);
		collect(h, next, lg);
	}
}

/* Receive what was injected, with arrival time @p now. */
static void
take_at(struct harness *h, uint64_t now, struct log *lg)
{
	isth_wan_poll(h->w, now);
	collect(h, now, lg);
}

/* Process every event until nothing is in flight. */
static void
drain(struct harness *h, struct log *lg)
{
	uint64_t next;

	while ((next = isth_wan_next_event(h->w)) != UINT64_MAX) {
		isth_wan_poll(h->w, next);
		collect(h, next, lg);
	}
}

static struct log *
log_new(void)
{
	struct log *lg = calloc(1, sizeof(*lg));

	cr_assert_not_null(lg);
	return lg;
}

/* |a - b| <= tol, for uint64 */
static bool
near(uint64_t a, uint64_t b, uint64_t tol)
{
	return a > b ? a - b <= tol : b - a <= tol;
}

static const char two_sites[] = "site,region\nA,r1\nB,r2\n";

static void
start(void)
{
	h_opt_decrement_ttl = false;
	h_opt_sched = NULL;
	h_opt_epoch_tsc = 0;
	h_eal_init();
}

static void
stop(struct harness *h)
{
	h_destroy(h);
	isth_test_eal_cleanup();
}

/* ------------------------------------------------------------------ */
/* Configuration (EAL-free)                                            */
/* ------------------------------------------------------------------ */

static struct isth_topo *
topo3(void)
{
	char err[256];
	struct isth_topo *t = isth_topo_parse("s", "site,region\nA,r\nB,r\nC,r\n", "l",
		"a,b,one_way_ms,capacity_gbps\nA,B,1,1\nB,C,2,1\n", err, sizeof(err));

	cr_assert_not_null(t, "%s", err);
	return t;
}

Test(wan_conf, sitemap_valid)
{
	struct isth_topo *t = topo3();
	struct isth_wan_sitemap m;
	char err[256] = "";

	cr_assert_eq(
		isth_wan_sitemap_parse(t, "map",
			"# comment\n"
			"A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24 net=10.9.0.1   # trailing\n"
			"\n"
			"B port=net_ring1 mac=learn gw_mac=02:00:00:00:ff:02 gw=10.0.1.254 "
			"net=10.0.1.0/24\n",
			&m, err, sizeof(err)),
		0, "%s", err);
	cr_assert(m.site[0].present && m.site[1].present && !m.site[2].present);
	cr_assert_str_eq(m.site[0].dev, "0");
	cr_assert_str_eq(m.site[1].dev, "net_ring1");
	cr_assert_eq(m.site[0].mac[5], 1);
	cr_assert(!m.site[0].mac_learn && m.site[1].mac_learn);
	cr_assert(!m.site[0].gw_mac_set && m.site[1].gw_mac_set);
	cr_assert_eq(m.site[1].gw_mac[4], 0xff);
	cr_assert_eq(m.site[1].gw_ip, (10u << 24) | (1 << 8) | 254);
	cr_assert_eq(m.site[0].nnets, 2);
	cr_assert_eq(m.site[0].net[0], 10u << 24);
	cr_assert_eq(m.site[0].plen[0], 24);
	cr_assert_eq(m.site[0].net[1], (10u << 24) | (9 << 16) | 1);
	cr_assert_eq(m.site[0].plen[1], 32);
	cr_assert_eq(m.site[1].line, 4);
	isth_topo_free(t);
}

struct bad {
	const char *text;
	const char *err;
};

static const char A0[] = "A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24\n";

Test(wan_conf, sitemap_bad)
{
	static const struct bad cases[] = {
		{"X port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24\n", "map:1: unknown site 'X'"},
		{"A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24\n"
		 "A port=1 mac=02:00:00:00:00:02 net=10.0.1.0/24\n",
			"map:2: duplicate site 'A' (first on line 1)"},
		{"A port=0 mac=02:00:00:00:00 net=10.0.0.0/24\n", "map:1: bad mac"},
		{"A port=0 mac=03:00:00:00:00:01 net=10.0.0.0/24\n", "map:1: bad mac"},
		{"A port=0 mac=02:00:00:00:00:01 gw_mac=zz:00:00:00:00:01 net=10.0.0.0/24\n",
			"map:1: bad gw_mac"},
		{"A port=0 mac=02:00:00:00:00:01 net=10.0.0.1/24\n",
			"map:1: bad net '10.0.0.1/24': host bits set"},
		{"A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/33\n", "prefix length must be 1..32"},
		{"A port=0 mac=02:00:00:00:00:01 net=10.0.0/24\n", "expected A.B.C.D"},
		{"A port=0 mac=02:00:00:00:00:01 net=239.0.0.0/8\n", "multicast"},
		{"A port=0 mac=02:00:00:00:00:01\n", "map:1: site 'A' needs at least one net="},
		{"A mac=02:00:00:00:00:01 net=10.0.0.0/24\n", "map:1: site 'A' needs port="},
		{"A port=0 net=10.0.0.0/24\n", "map:1: site 'A' needs mac="},
		{"A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24 foo=1\n",
			"map:1: unknown key 'foo'"},
		{"A port=0 mac=02:00:00:00:00:01 10.0.0.0/24\n", "map:1: expected key=value"},
		{"A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24 gw=300.1.1.1\n", "map:1: bad gw"},
		{"A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24\n"
		 "\n"
		 "B port=1 mac=02:00:00:00:00:02 net=10.0.0.0/24\n",
			"map:3: net 10.0.0.0/24 also given for site 'A' (line 1)"},
		{"A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24\n"
		 "B port=0 mac=02:00:00:00:00:02 net=10.0.1.0/24\n",
			"map:2: port 0 also used by site 'A' (line 1)"},
		{"A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24\n", "need at least 2 sites"},
		{"", "need at least 2 sites"},
	};
	struct isth_topo *t = topo3();
	struct isth_wan_sitemap *m = malloc(sizeof(*m));
	char err[256];
	size_t i;

	for (i = 0; i < RTE_DIM(cases); i++) {
		err[0] = '\0';
		cr_expect_eq(isth_wan_sitemap_parse(t, "map", cases[i].text, m, err, sizeof(err)),
			-EINVAL, "case %zu accepted", i);
		cr_expect(strstr(err, cases[i].err) != NULL, "case %zu: got '%s', want '%s'", i,
			err, cases[i].err);
	}
	free(m);
	isth_topo_free(t);
}

static void
map2(const struct isth_topo *t, struct isth_wan_sitemap *m)
{
	char err[256], text[256];

	snprintf(text, sizeof(text), "%sB port=1 mac=02:00:00:00:00:02 net=10.0.1.0/24\n", A0);
	cr_assert_eq(isth_wan_sitemap_parse(t, "map", text, m, err, sizeof(err)), 0, "%s", err);
}

Test(wan_conf, groups)
{
	static const struct bad cases[] = {
		{"239.1.1.1 A X\n", "groups:1: unknown site 'X'"},
		{"10.0.0.1 A\n", "groups:1: group 10.0.0.1 is not a routable multicast"},
		{"224.0.0.5 A B\n", "not a routable multicast"},
		{"239.1.1.256 A\n", "groups:1: bad group address '239.1.1.256'"},
		{"239.1.1.1 A B\n# x\n239.1.1.1 B\n",
			"groups:3: duplicate group 239.1.1.1 (first on line 1)"},
		{"239.1.1.1\n", "groups:1: group 239.1.1.1 has no members"},
		{"239.1.1.1 A A\n", "site 'A' listed twice"},
		{"239.1.1.1 A C\n", "groups:1: site 'C' has no port in the site map"},
	};
	struct isth_topo *t = topo3();
	struct isth_wan_sitemap *m = malloc(sizeof(*m));
	struct isth_wan_groups *g = malloc(sizeof(*g));
	char err[256];
	size_t i;

	map2(t, m);
	cr_assert_eq(isth_wan_groups_parse(t, m, "groups",
			     "239.1.1.1 A B\n239.2.0.1 *\n239.3.0.1 B\n", g, err, sizeof(err)),
		0, "%s", err);
	cr_assert_eq(g->n, 3);
	cr_assert_eq(g->g[0].ip, (239u << 24) | (1 << 16) | (1 << 8) | 1);
	cr_assert_eq(g->g[0].members, 3);
	cr_assert_eq(g->g[1].members, 3, "'*' is every site with a port (C is transit)");
	cr_assert_eq(g->g[2].members, 2);
	for (i = 0; i < RTE_DIM(cases); i++) {
		err[0] = '\0';
		cr_expect_eq(
			isth_wan_groups_parse(t, m, "groups", cases[i].text, g, err, sizeof(err)),
			-EINVAL, "case %zu accepted", i);
		cr_expect(strstr(err, cases[i].err) != NULL, "case %zu: got '%s', want '%s'", i,
			err, cases[i].err);
	}
	free(g);
	free(m);
	isth_topo_free(t);
}

Test(wan_conf, impair)
{
	static const struct bad cases[] = {
		{"loss=2", "bad value '2' for loss"},
		{"loss=-0.1", "bad value"},
		{"loss=abc", "bad value"},
		{"foo=1", "unknown key 'foo'"},
		{"X-Y:loss=0.1", "no link 'X-Y'"},
		{"A->C:loss=0.1", "no link 'A->C'"},
		{"loss", "expected key=value"},
		{"ge=0.1", "bad value '0.1' for ge"},
		{"ge=0.1/0.2/0.3/0.4/0.5", "bad value"},
		{"queue-bytes=0", "bad value"},
		{"jitter-ms=-1", "bad value"},
		{"A-B:", "no key=value"},
	};
	struct isth_topo *t = topo3();
	int nd = isth_topo_ndlinks(t), e, ab = -1, ba = -1, bc = -1, from, to;
	struct isth_wan_impair imp[4];
	char err[256];
	size_t i;

	cr_assert_eq(nd, 4);
	for (e = 0; e < nd; e++) {
		isth_topo_dlink(t, e, &from, &to, NULL, NULL);
		if (from == 0 && to == 1)
			ab = e;
		if (from == 1 && to == 0)
			ba = e;
		if (from == 1 && to == 2)
			bc = e;
	}
	isth_wan_impair_default(imp, nd);
	cr_assert_eq(imp[0].queue_bytes, ISTH_WAN_QUEUE_BYTES_DEFAULT);
	cr_assert_eq(
		isth_wan_impair_apply(t, imp, "jitter-ms=0.5,queue-bytes=64Ki", err, sizeof(err)),
		0, "%s", err);
	cr_assert_eq(
		isth_wan_impair_apply(t, imp, "A-B:loss=0.25", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(
		isth_wan_impair_apply(t, imp, "B->C:dup=0.5,ge=0.01/0.2/0.9", err, sizeof(err)), 0,
		"%s", err);
	for (e = 0; e < nd; e++) {
		cr_expect_eq(imp[e].jitter_ms, 0.5);
		cr_expect_eq(imp[e].queue_bytes, 65536);
		cr_expect_eq(imp[e].loss, (e == ab || e == ba) ? 0.25 : 0);
		cr_expect_eq(imp[e].dup, e == bc ? 0.5 : 0);
		cr_expect_eq(imp[e].ge, e == bc);
	}
	cr_expect_eq(imp[bc].ge_p, 0.01);
	cr_expect_eq(imp[bc].ge_r, 0.2);
	cr_expect_eq(imp[bc].ge_loss_bad, 0.9);
	cr_expect_eq(imp[bc].ge_loss_good, 0);
	for (i = 0; i < RTE_DIM(cases); i++) {
		struct isth_wan_impair before[4];

		memcpy(before, imp, sizeof(imp));
		err[0] = '\0';
		cr_expect_eq(isth_wan_impair_apply(t, imp, cases[i].text, err, sizeof(err)),
			-EINVAL, "case %zu accepted", i);
		cr_expect(strstr(err, cases[i].err) != NULL, "case %zu: got '%s', want '%s'", i,
			err, cases[i].err);
		cr_expect(memcmp(before, imp, sizeof(imp)) == 0, "case %zu changed the table", i);
	}
	isth_topo_free(t);
}

/*
 * The epoch file (--epoch-file): one positive decimal integer; errors
 * carry the true line number, blank lines counted; "010" is ten, not
 * eight (lib/text's one decimal parser).
 */
Test(wan_conf, epoch_file)
{
	static const struct bad cases[] = {
		{"# epoch\n\n\n12x\n", "epoch:4: '12x' is no epoch (CLOCK_REALTIME ns"},
		{"\n1\n\n2\n", "epoch:4: a second epoch (one line only)"},
		{"0\n", "epoch:1: '0' is no epoch"},
		{"-5\n", "epoch:1: '-5' is no epoch"},
		{"0x10\n", "epoch:1: '0x10' is no epoch"},
		{"18446744073709551616\n", "epoch:1: '18446744073709551616' is no epoch"},
		{"# only a comment\n\n", "epoch:2: no epoch in the file"},
	};
	uint64_t ns = 7;
	char err[256] = "", path[] = "/tmp/isth-wan-epoch.XXXXXX";
	size_t i;
	int fd;

	cr_assert_eq(isth_wan_epoch_parse("epoch", "010\n", &ns, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(ns, 10, "010 read as %" PRIu64, ns);
	cr_assert_eq(isth_wan_epoch_parse("epoch",
			     "\n# chosen by the testbed\n"
			     "  1764640000123456789 # ns\r\n\n",
			     &ns, err, sizeof(err)),
		0, "%s", err);
	cr_expect_eq(ns, UINT64_C(1764640000123456789));
	for (i = 0; i < RTE_DIM(cases); i++) {
		err[0] = '\0';
		ns = 7;
		cr_expect_eq(isth_wan_epoch_parse("epoch", cases[i].text, &ns, err, sizeof(err)),
			-EINVAL, "case %zu accepted", i);
		cr_expect(strstr(err, cases[i].err) != NULL, "case %zu: got '%s', want '%s'", i,
			err, cases[i].err);
		cr_expect_eq(ns, 7, "case %zu changed the epoch", i);
	}
	/* from a file: a missing one is -ENOENT (no epoch yet), not an error */
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "\n\n42x\n", 6), 6);
	close(fd);
	err[0] = '\0';
	cr_expect_eq(isth_wan_epoch_read(path, &ns, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, ":3: '42x' is no epoch") != NULL, "got '%s'", err);
	unlink(path);
	cr_expect_eq(isth_wan_epoch_read(path, &ns, err, sizeof(err)), -ENOENT);
}

/* ------------------------------------------------------------------ */
/* Delay model, injected clock (1 cycle = 1 ns)                        */
/* ------------------------------------------------------------------ */

Test(wan_delay, two_sites_exact)
{
	struct harness h;
	struct log *lg = log_new();
	struct isth_wan_link_stats ls;
	int a, b, k;

	start();
	cr_assert_eq(h_create(&h, two_sites, "a,b,one_way_ms,capacity_gbps\nA,B,10,1\n", NULL, NULL,
			     1000, 1, 1000000000, 4096),
		0, "%s", h.err);
	a = h_site(&h, "A");
	b = h_site(&h, "B");
	/* 3 back-to-back frames A->B and one B->A, all at t = 0 */
	for (k = 0; k < 3; k++)
		h_inject(&h, a, h_udp(&h, a, h_ip(b), (uint32_t)k, 1000));
	h_inject(&h, b, h_udp(&h, b, h_ip(a), 9, 1000));
	take_at(&h, 0, lg);
	cr_assert_eq(lg->n, 0, "nothing is delivered at t = 0");
	drain(&h, lg);
	/*
	 * 1 Gbit/s / 1000 = 1 Mbit/s: a 1000-byte frame serialises in
	 * 8000 bit / 1e6 bit/s = 8 ms; propagation 10 ms. The k-th frame of the
	 * burst leaves the transmitter at (k + 1) * 8 ms, arrives 10 ms later:
	 * 18, 26, 34 ms. The reverse direction is an independent transmitter: 18 ms.
	 */
	cr_assert_eq(lg->n, 4);
	for (k = 0; k < 4; k++) {
		const struct rec *r = &lg->r[k];
		uint64_t want = r->seq == 9 ? 18 * MS : (10 + 8 * (r->seq + 1)) * MS;

		cr_expect(near(r->t, want, 2), "seq %u at %lu ns, want %lu", r->seq,
			(unsigned long)r->t, (unsigned long)want);
		cr_expect_eq(r->site, r->seq == 9 ? a : b);
		/* Ethernet rewritten: edge MAC of the destination, emulator MAC of its port */
		cr_expect_eq(r->dst_mac[5], r->site + 1);
		cr_expect_eq(r->src_mac[4], 0xff);
		cr_expect_eq(r->src_mac[5], r->site + 1);
		cr_expect_eq(r->ttl, 64, "TTL untouched by default");
	}
	cr_expect(lg->r[0].seq == 0 || lg->r[0].seq == 9);
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "B"), &ls);
	cr_expect_eq(ls.pkts, 3);
	cr_expect_eq(ls.bytes, 3000);
	/* the third frame found two frames (2000 B) ahead of it */
	cr_expect_eq(ls.queue_hw_bytes, 3000);
	free(lg);
	stop(&h);
}

Test(wan_delay, three_sites_queueing)
{
	struct harness h;
	struct log *lg = log_new();
	struct isth_wan_link_stats ls;
	int a, b, c, k;
	/*
	 * A-B: 5 ms, 1 Gbit/s; B-C: 7 ms, 0.4 Gbit/s; scale 1000. A 500-byte
	 * frame serialises in 4 ms on A->B and 10 ms on B->C.
	 * Three frames A->C at t = 0 and one B->C (seq 100) at t = 10 ms:
	 *   A->B finishes 4, 8, 12; reaches B at 9, 13, 17.
	 *   B->C in arrival order: seq0 (9): 9..19, at C 26;
	 *        seq100 (10): 19..29, at C 36; seq1 (13): 29..39, at C 46;
	 *        seq2 (17): 39..49, at C 56.
	 * Backlog seen by seq2 at 17: (39 - 17) ms * 0.4 Mbit/s / 8 = 1100 B,
	 * so the high-water is 1100 + 500 = 1600 B.
	 */
	static const struct {
		uint32_t seq;
		uint64_t t;
	} want[] = {
		{0, 26 * MS},
		{100, 36 * MS},
		{1, 46 * MS},
		{2, 56 * MS},
	};
	int path[4];

	start();
	cr_assert_eq(h_create(&h, "site,region\nA,r\nB,r\nC,r\n",
			     "a,b,one_way_ms,capacity_gbps\nA,B,5,1\nB,C,7,0.4\n", NULL, NULL, 1000,
			     1, 1000000000, 4096),
		0, "%s", h.err);
	a = h_site(&h, "A");
	b = h_site(&h, "B");
	c = h_site(&h, "C");
	cr_assert_eq(isth_topo_path(h.t, a, c, path, 4), 2);
	for (k = 0; k < 3; k++)
		h_inject(&h, a, h_udp(&h, a, h_ip(c), (uint32_t)k, 500));
	take_at(&h, 0, lg);
	events_until(&h, 10 * MS, lg);
	h_inject(&h, b, h_udp(&h, b, h_ip(c), 100, 500));
	take_at(&h, 10 * MS, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 4);
	for (k = 0; k < 4; k++) {
		cr_expect_eq(lg->r[k].site, c);
		cr_expect_eq(lg->r[k].seq, want[k].seq, "position %d: seq %u, want %u", k,
			lg->r[k].seq, want[k].seq);
		cr_expect(near(lg->r[k].t, want[k].t, 4), "seq %u at %lu ns, want %lu",
			lg->r[k].seq, (unsigned long)lg->r[k].t, (unsigned long)want[k].t);
	}
	isth_wan_link_stats(h.w, h_dlink(&h, "B", "C"), &ls);
	cr_expect_eq(ls.pkts, 4);
	cr_expect(near(ls.queue_hw_bytes, 1600, 1), "hw %lu", (unsigned long)ls.queue_hw_bytes);
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "B"), &ls);
	cr_expect_eq(ls.pkts, 3);
	isth_wan_link_stats(h.w, h_dlink(&h, "C", "B"), &ls);
	cr_expect_eq(ls.pkts, 0);
	free(lg);
	stop(&h);
}

Test(wan_delay, queue_overflow)
{
	static const char *const specs[] = {"queue-bytes=3000", NULL};
	struct harness h;
	struct log *lg = log_new();
	struct isth_wan_link_stats ls;
	int k;

	start();
	cr_assert_eq(h_create(&h, two_sites, "a,b,one_way_ms,capacity_gbps\nA,B,10,1\n", NULL,
			     specs, 1000, 1, 1000000000, 4096),
		0, "%s", h.err);
	/* ten 1000-byte frames at t = 0: the k-th sees a k * 1000 B backlog, so
	 * k = 0, 1, 2 fit in 3000 B and seven are tail-dropped */
	for (k = 0; k < 10; k++)
		h_inject(&h, 0, h_udp(&h, 0, h_ip(1), (uint32_t)k, 1000));
	take_at(&h, 0, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 3);
	for (k = 0; k < 3; k++)
		cr_expect_eq(lg->r[k].seq, (uint32_t)k);
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "B"), &ls);
	cr_expect_eq(ls.ctr[ISTH_WAN_L_QUEUE_FULL], 7);
	cr_expect_eq(ls.pkts, 3);
	cr_expect_eq(ls.queue_hw_bytes, 3000);
	free(lg);
	stop(&h);
}

/* A frame of h_udp marked DSCP EF: the priority class (doc/wan.md). */
static struct rte_mbuf *
ef_udp(struct harness *h, int s, uint32_t dst_ip, uint32_t seq, uint32_t frame_len)
{
	struct rte_mbuf *m = h_udp(h, s, dst_ip, seq, frame_len);
	struct rte_ipv4_hdr *ip =
		rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, sizeof(struct rte_ether_hdr));

	ip->type_of_service = ISTH_WAN_DSCP_EF << 2;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return m;
}

/*
 * 1 Mbit/s after scale, 10 ms: a 1000-byte frame takes 8 ms. Five
 * unmarked frames (seq 0-4) and then one marked EF (seq 100), all at
 * t = 0. Strict priority, not preemptive: seq 0 is on the wire (0-8), the
 * EF frame goes next (8-16, at B 26 ms), then seq 1-4 one frame later
 * than without it (16-24 ... 40-48: at B 34, 42, 50, 58). Without the
 * class (the same frames, prio-queue-bytes=0) the EF frame is last: 58 ms.
 */
static void
overtake_case(int pass)
{
	static const char *const on[] = {"prio-queue-bytes=4000", NULL};
	static const char *const off[] = {"prio-queue-bytes=0", NULL};
	static const struct {
		uint32_t seq;
		uint64_t t_on, t_off;
	} want[] = {
		{0, 18 * MS, 18 * MS},
		{100, 26 * MS, 58 * MS},
		{1, 34 * MS, 26 * MS},
		{2, 42 * MS, 34 * MS},
		{3, 50 * MS, 42 * MS},
		{4, 58 * MS, 50 * MS},
	};
	struct harness h;
	struct log *lg = log_new();
	struct isth_wan_link_stats ls;
	int k, j;

	start();
	cr_assert_eq(h_create(&h, two_sites, "a,b,one_way_ms,capacity_gbps\nA,B,10,1\n", NULL,
			     pass == 0 ? on : off, 1000, 1, 1000000000, 4096),
		0, "%s", h.err);
	for (k = 0; k < 5; k++)
		h_inject(&h, 0, h_udp(&h, 0, h_ip(1), (uint32_t)k, 1000));
	h_inject(&h, 0, ef_udp(&h, 0, h_ip(1), 100, 1000));
	take_at(&h, 0, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 6);
	for (k = 0; k < 6; k++) {
		for (j = 0; j < 6 && want[j].seq != lg->r[k].seq; j++)
			;
		cr_assert_lt(j, 6, "unknown seq %u", lg->r[k].seq);
		uint64_t w = pass == 0 ? want[j].t_on : want[j].t_off;

		cr_expect(near(lg->r[k].t, w, 2), "seq %u at %lu ns, want %lu", lg->r[k].seq,
			(unsigned long)lg->r[k].t, (unsigned long)w);
	}
	cr_expect_eq(lg->r[1].seq, pass == 0 ? 100u : 1u, "second is %u", lg->r[1].seq);
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "B"), &ls);
	cr_expect_eq(ls.ctr[ISTH_WAN_L_PRIO], pass == 0 ? 1u : 0u);
	cr_expect_eq(ls.pkts, 6);
	free(lg);
	stop(&h);
}

Test(wan_prio, marked_frame_overtakes_a_queue)
{
	overtake_case(0);
}

Test(wan_prio, without_the_class_a_marked_frame_waits)
{
	overtake_case(1);
}

/*
 * The priority class's own limit bounds what a burst of it takes from the
 * rest: prio-queue-bytes=2000 at 1 Mbit/s admits two 1000-byte EF frames
 * queued at once (16 ms of the link), the others are tail-dropped
 * (prio_queue_full), so an unmarked frame already queued waits at most
 * 2000 B (16 ms) longer. Three unmarked (seq 0-2), then four EF (100-103)
 * at t = 0: seq 0 0-8 (at B 18); EF 100 8-16 (26), EF 101 16-24 (34); EF
 * 102 and 103 find their class holding 2000 B and are dropped; seq 1
 * 24-32 (42), seq 2 32-40 (50). Later, at
 * t = 40 ms (the class empty again), one more EF frame goes at once
 * (40-48, at B 58): the limit is on the backlog, not on a count.
 */
Test(wan_prio, own_queue_limit_bounds_a_burst)
{
	static const char *const specs[] = {"prio-queue-bytes=2000", NULL};
	static const struct {
		uint32_t seq;
		uint64_t t;
	} want[] = {
		{0, 18 * MS},
		{100, 26 * MS},
		{101, 34 * MS},
		{1, 42 * MS},
		{2, 50 * MS},
		{104, 58 * MS},
	};
	struct harness h;
	struct log *lg = log_new();
	struct isth_wan_link_stats ls;
	int k;

	start();
	cr_assert_eq(h_create(&h, two_sites, "a,b,one_way_ms,capacity_gbps\nA,B,10,1\n", NULL,
			     specs, 1000, 1, 1000000000, 4096),
		0, "%s", h.err);
	for (k = 0; k < 3; k++)
		h_inject(&h, 0, h_udp(&h, 0, h_ip(1), (uint32_t)k, 1000));
	for (k = 0; k < 4; k++)
		h_inject(&h, 0, ef_udp(&h, 0, h_ip(1), 100 + (uint32_t)k, 1000));
	take_at(&h, 0, lg);
	events_until(&h, 40 * MS, lg);
	h_inject(&h, 0, ef_udp(&h, 0, h_ip(1), 104, 1000));
	take_at(&h, 40 * MS, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 6);
	for (k = 0; k < 6; k++) {
		cr_expect_eq(lg->r[k].seq, want[k].seq, "position %d: seq %u, want %u", k,
			lg->r[k].seq, want[k].seq);
		cr_expect(near(lg->r[k].t, want[k].t, 2), "seq %u at %lu ns, want %lu",
			lg->r[k].seq, (unsigned long)lg->r[k].t, (unsigned long)want[k].t);
	}
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "B"), &ls);
	cr_expect_eq(ls.ctr[ISTH_WAN_L_PRIO_FULL], 2);
	cr_expect_eq(ls.ctr[ISTH_WAN_L_PRIO], 3);
	cr_expect_eq(ls.pkts, 6);
	free(lg);
	stop(&h);
}

/* ------------------------------------------------------------------ */
/* Delay model, real TSC                                               */
/* ------------------------------------------------------------------ */

/*
 * A-B 2 ms at 1 Gbit/s / 100 = 10 Mbit/s: 1250 B serialise in 1 ms.
 * Sends: three at 0 (queueing: model 3, 4, 5 ms), then one at 10 ms and
 * one at 20 ms (no queue: 3 ms each).
 */
static const struct {
	uint64_t at_ms;
	double model_ms;
} tsc_plan[] = {
	{0, 3},
	{0, 4},
	{0, 5},
	{10, 3},
	{20, 3},
};

/*
 * One attempt. @p clean[i] says whether this thread ran without a gap of
 * more than 0.5 ms between loop iterations while packet i was in flight.
 */
static void
tsc_attempt(struct harness *h, double *delay_ms, bool *clean)
{
	uint64_t sent[5] = {0}, got[5] = {0}, hz = rte_get_tsc_hz(), t0, now, prev;
	uint64_t gap_from[64], gap_to[64], stall = hz / 2000;
	unsigned int n, i, k, ngot = 0, next = 0, ngaps = 0;
	struct rte_mbuf *m[8];

	t0 = prev = rte_rdtsc();
	while (ngot < 5 && (now = rte_rdtsc()) < t0 + hz) {
		if (now - prev > stall && ngaps < RTE_DIM(gap_from)) {
			gap_from[ngaps] = prev;
			gap_to[ngaps++] = now;
		}
		prev = now; /* a gap spans a whole iteration, body included */
		while (next < 5 && now >= t0 + tsc_plan[next].at_ms * hz / 1000) {
			sent[next] = rte_rdtsc();
			h_inject(h, 0, h_udp(h, 0, h_ip(1), next, 1250));
			next++;
		}
		isth_wan_poll(h->w, rte_rdtsc());
		n = h_recv(h, 1, m, 8);
		now = rte_rdtsc();
		for (i = 0; i < n; i++) {
			uint32_t s = h_seq(m[i]);

			if (s < 5 && got[s] == 0) {
				got[s] = now;
				ngot++;
			}
			rte_pktmbuf_free(m[i]);
		}
	}
	cr_assert_eq(ngot, 5, "only %u of 5 delivered within 1 s", ngot);
	for (i = 0; i < 5; i++) {
		delay_ms[i] = (double)(got[i] - sent[i]) * 1e3 / (double)hz;
		clean[i] = ngaps < RTE_DIM(gap_from);
		for (k = 0; k < ngaps; k++)
			if (gap_to[k] >= sent[i] && gap_from[k] <= got[i])
				clean[i] = false;
	}
}

Test(wan_delay, real_tsc, .timeout = 60)
{
	bool clean[5], judged[5] = {false};
	struct harness h;
	double d[5], best[5] = {0};
	int attempt, i, njudged = 0;

	start();
	cr_assert_eq(h_create(&h, two_sites, "a,b,one_way_ms,capacity_gbps\nA,B,2,1\n", NULL, NULL,
			     100, 1, 0, 4096),
		0, "%s", h.err);
	/*
	 * Never earlier than the model (1 us for rounding), in every attempt.
	 * At most 2 ms later, judged for each packet on its best attempt among
	 * those during which this thread was never descheduled for more than
	 * 0.5 ms while that packet was in flight: on this shared two-core
	 * machine the scheduler (and the hypervisor, which the gap check cannot
	 * always see) stalls a thread for tens of ms, which says nothing about
	 * the emulator. An emulator that adds delay fails every attempt.
	 */
	for (attempt = 0; attempt < 40 && njudged < 5; attempt++) {
		tsc_attempt(&h, d, clean);
		for (i = 0; i < 5; i++) {
			cr_expect(d[i] >= tsc_plan[i].model_ms - 0.001,
				"packet %d: one-way delay %.4f ms < model %.3f ms", i, d[i],
				tsc_plan[i].model_ms);
			if (!clean[i] || judged[i])
				continue;
			if (best[i] == 0 || d[i] < best[i])
				best[i] = d[i];
			if (d[i] <= tsc_plan[i].model_ms + 2.0) {
				judged[i] = true;
				njudged++;
			}
		}
	}
	for (i = 0; i < 5; i++)
		cr_expect(judged[i] || best[i] == 0,
			"packet %d: one-way delay at best %.4f ms over the undisturbed attempts, "
			"model %.3f ms (+2 ms allowed)",
			i, best[i], tsc_plan[i].model_ms);
	for (i = 0, njudged = 0; i < 5; i++)
		njudged += best[i] != 0;
	stop(&h);
	if (njudged < 5)
		cr_skip_test("descheduled during every attempt for %d of 5 packets: upper bound "
			     "not judged for them",
			5 - njudged);
	cr_log_info("real TSC: delays %.4f %.4f %.4f %.4f %.4f ms (model 3 4 5 3 3), %d attempts",
		best[0], best[1], best[2], best[3], best[4], attempt);
}

/* ------------------------------------------------------------------ */
/* Multicast                                                           */
/* ------------------------------------------------------------------ */

/* The square of the wan_route cases: A-B-D (2 + 2 ms), A-C-D (3 + 3 ms). */
static const char square_sites[] = "site,region\nA,r\nB,r\nC,r\nD,r\n";
static const char square_links[] = "a,b,one_way_ms,capacity_gbps\nA,B,2,1000\nB,D,2,1000\n"
				   "A,C,3,1000\nC,D,3,1000\n";
/* Two rounds of 100 ms; in round 1 A's stream to D goes through C. */
static const char square_sched[] = "isthmus-schedule 2\nislands 4\nisland 0 A\nisland 1 B\n"
				   "island 2 C\nisland 3 D\nround-ns 100000000\nepoch runtime\n"
				   "payload-bytes 1000\nchunk-bytes 0\nmemory-bytes 0\nrounds 2\n"
				   "round 0 0x9 0x2 0x4\nround 1 0x9 0x2 0x4\n"
				   "send 0 0 0 1000000\nsend 0 3 0 1000000\n"
				   "send 1 0 0 1000000\nsend 1 3 0 1000000\n"
				   "route 1 0 3 0,2,3\nend\n";

/* EAL and an emulator on the square routed by square_sched from
 * @p epoch_tsc; the schedule is returned (free it after stop()). */
static struct isth_sched *
square_start(struct harness *h, uint64_t epoch_tsc)
{
	struct isth_sched *sc;
	char err[256] = "";

	start();
	sc = isth_sched_parse("route.sched", square_sched, err, sizeof(err));
	cr_assert_not_null(sc, "%s", err);
	h_opt_sched = sc;
	h_opt_epoch_tsc = epoch_tsc;
	cr_assert_eq(h_create(h, square_sites, square_links, NULL, NULL, 1, 1, 1000000000, 4096), 0,
		"%s", h->err);
	return sc;
}

/*
 * Planned routes (schedule 'route' lines) are what runs. Square A-B-D and
 * A-C-D: A->B->D is 2 + 2 = 4 ms, A->C->D 3 + 3 = 6 ms, so shortest paths
 * take B. The schedule (T = 100 ms, 2 rounds, epoch at t = 1 s on the
 * injected 1 GHz clock) routes A's stream to D through C in round 1 only.
 * A frame sent at t = 0.5 s (before the epoch) and in round 0 (t = 1.05 s)
 * crosses B, arriving 4 ms later; one sent in round 1 (t = 1.15 s) crosses
 * C and arrives 6 ms later; in round 2 (= cycle round 0, t = 1.25 s) B
 * again. A frame in flight when the round changes keeps its tree: the
 * one sent at 1.199 s (round 1) is on A->C at the boundary and still
 * reaches D through C. D->A (no route line) stays on shortest paths.
 * Capacity 1000 Gbit/s: serialisation of 100 B is 0.8 ns, below the 2 ns
 * matching tolerance.
 */
Test(wan_route, planned_routes_by_round)
{
	static const uint64_t at[] = {500 * MS, 1050 * MS, 1150 * MS, 1199 * MS, 1250 * MS};
	static const int via_c[] = {0, 0, 1, 1, 0};
	struct isth_sched *sc;
	struct harness h;
	struct log *lg = log_new();
	struct isth_wan_link_stats ab, ac, da_b, da_c;
	int a, d;
	size_t k;

	sc = square_start(&h, 1000 * MS);
	a = h_site(&h, "A");
	d = h_site(&h, "D");
	for (k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		uint64_t want = at[k] + (via_c[k] ? 6 : 4) * MS;

		lg->n = 0;
		h_inject(&h, a, h_udp(&h, a, h_ip(d), (uint32_t)k, 100));
		take_at(&h, at[k], lg);
		drain(&h, lg);
		cr_assert_eq(lg->n, 1, "frame %zu", k);
		cr_expect_eq(lg->r[0].site, d);
		cr_expect(near(lg->r[0].t, want, 2), "frame %zu at %lu ns, want %lu", k,
			(unsigned long)lg->r[0].t, (unsigned long)want);
	}
	/* the reverse direction has no route line: shortest, through B */
	lg->n = 0;
	h_inject(&h, d, h_udp(&h, d, h_ip(a), 99, 100));
	take_at(&h, 1150 * MS, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 1);
	cr_expect(near(lg->r[0].t, 1154 * MS, 2));
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "B"), &ab);
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "C"), &ac);
	isth_wan_link_stats(h.w, h_dlink(&h, "D", "B"), &da_b);
	isth_wan_link_stats(h.w, h_dlink(&h, "D", "C"), &da_c);
	cr_expect_eq(ab.pkts, 3);
	cr_expect_eq(ac.pkts, 2);
	cr_expect_eq(da_b.pkts, 1);
	cr_expect_eq(da_c.pkts, 0);
	free(lg);
	stop(&h);
	isth_sched_free(sc);
}

/*
 * The epoch arrives at run time (the testbed chooses it after the emulator
 * is up): created without one (UINT64_MAX), every frame takes shortest
 * paths, even at t = 1.15 s, which would be round 1 of an epoch at 1 s;
 * after isth_wan_set_epoch(1 s) a frame at 1.35 s (round 3 = cycle round
 * 1) follows the planned detour through C (6 ms), one at 1.45 s (cycle
 * round 0) B (4 ms); moving the epoch to UINT64_MAX again gives shortest
 * paths. Same square and schedule as planned_routes_by_round.
 */
Test(wan_route, epoch_set_at_run_time)
{
	/* send time, epoch to set before it (0: leave), via C? */
	static const struct {
		uint64_t at, epoch;
		int via_c;
	} step[] = {
		{1150 * MS, 0, 0},
		{1350 * MS, 1000 * MS, 1},
		{1450 * MS, 0, 0},
		{1550 * MS, UINT64_MAX, 0},
	};
	struct isth_wan_link_stats ab, ac;
	struct isth_sched *sc;
	struct harness h;
	struct log *lg = log_new();
	int a, d;
	size_t k;

	sc = square_start(&h, UINT64_MAX);
	a = h_site(&h, "A");
	d = h_site(&h, "D");
	for (k = 0; k < sizeof(step) / sizeof(step[0]); k++) {
		uint64_t want = step[k].at + (step[k].via_c ? 6 : 4) * MS;

		if (step[k].epoch != 0)
			cr_assert_eq(isth_wan_set_epoch(h.w, step[k].epoch), 0);
		lg->n = 0;
		h_inject(&h, a, h_udp(&h, a, h_ip(d), (uint32_t)k, 100));
		take_at(&h, step[k].at, lg);
		drain(&h, lg);
		cr_assert_eq(lg->n, 1, "frame %zu", k);
		cr_expect(near(lg->r[0].t, want, 2), "frame %zu at %lu ns, want %lu", k,
			(unsigned long)lg->r[0].t, (unsigned long)want);
	}
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "B"), &ab);
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "C"), &ac);
	cr_expect_eq(ab.pkts, 3);
	cr_expect_eq(ac.pkts, 1);
	free(lg);
	stop(&h);
	isth_sched_free(sc);
}

/* Without a schedule there is no epoch to set. */
Test(wan_route, epoch_needs_schedule)
{
	static const char sites[] = "site,region\nA,r\nB,r\n";
	static const char links[] = "a,b,one_way_ms,capacity_gbps\nA,B,2,1000\n";
	struct harness h;

	start();
	cr_assert_eq(
		h_create(&h, sites, links, NULL, NULL, 1, 1, 1000000000, 4096), 0, "%s", h.err);
	cr_expect_eq(isth_wan_set_epoch(h.w, 0), -ENOENT);
	stop(&h);
}

/* A route over two sites with no link between them is refused at creation. */
Test(wan_route, route_without_link_refused)
{
	/* A->D directly: no such link in this topology */
	static const char schedtxt[] =
		"isthmus-schedule 2\nislands 4\nisland 0 A\nisland 1 B\n"
		"island 2 C\nisland 3 D\nround-ns 100000000\nepoch runtime\n"
		"payload-bytes 1000\nchunk-bytes 0\nmemory-bytes 0\nrounds 1\n"
		"round 0 0x9 0x2 0x4\nsend 0 0 0 1000000\nsend 0 3 0 1000000\n"
		"route 0 0 3 0,3\nend\n";
	struct isth_sched *sc;
	struct harness h;
	char err[256] = "";

	start();
	sc = isth_sched_parse("bad.sched", schedtxt, err, sizeof(err));
	cr_assert_not_null(sc, "%s", err);
	h_opt_sched = sc;
	cr_assert_neq(
		h_create(&h, square_sites, square_links, NULL, NULL, 1, 1, 1000000000, 4096), 0);
	stop(&h);
	isth_sched_free(sc);
}

/*
 * A planned tree is crossed once per link (one copy per link per
 * tree). Sites A..E: A-B 2 ms, B-D 2 ms, A-C 3 ms, C-D 3 ms, D-E 1 ms,
 * B-E 5 ms, 1000 Gbit/s (100 B: 0.8 ns a hop, rounded up per hop: a
 * 4 ns tolerance covers E's three hops). One
 * clique of all five, group 239.1.1.1 = all five. Shortest paths from A:
 * B (2 ms), D via B (4 ms), E via B-D (5 ms), C (3 ms). The planned tree
 * of A (route lines, as lib/plan writes them: a tree): B direct, C direct,
 * D via C, E via C-D. One multicast frame from A at t = 1.05 s (round 0,
 * epoch 1 s): B at +2 ms, C at +3 ms, D at +6 ms, E at +7 ms, one copy
 * each; A->B, A->C, C->D, D->E carry exactly one packet, every other
 * link none (shortest paths would put D's and E's copy on A->B, B->D).
 */
#define PT_SITES "site,region\nA,r\nB,r\nC,r\nD,r\nE,r\n"
#define PT_LINKS \
	"a,b,one_way_ms,capacity_gbps\nA,B,2,1000\nB,D,2,1000\nA,C,3,1000\nC,D,3,1000\n" \
	"D,E,1,1000\nB,E,5,1000\n"
#define PT_SCHED(route_d, route_e) \
	"isthmus-schedule 2\nislands 5\nisland 0 A\nisland 1 B\nisland 2 C\nisland 3 D\n" \
	"island 4 E\nround-ns 100000000\nepoch runtime\npayload-bytes 1000\nchunk-bytes 0\n" \
	"memory-bytes 0\nrounds 1\nround 0 0x1f\nsend 0 0 0 1000000\nsend 0 1 0 1000000\n" \
	"send 0 2 0 1000000\nsend 0 3 0 1000000\nsend 0 4 0 1000000\nroute 0 0 1 0,1\n" \
	"route 0 0 2 0,2\nroute 0 0 3 " route_d "\nroute 0 0 4 " route_e "\nend\n"

Test(wan_mcast, planned_tree_one_copy_per_link)
{
	static const char schedtxt[] = PT_SCHED("0,2,3", "0,2,3,4");
	static const char *const tree[][2] = {{"A", "B"}, {"A", "C"}, {"C", "D"}, {"D", "E"}};
	static const uint64_t after[5] = {0, 2 * MS, 3 * MS, 6 * MS, 7 * MS};
	uint32_t g = (239u << 24) | (1 << 16) | (1 << 8) | 1;
	struct isth_wan_link_stats ls;
	struct isth_sched *sc;
	struct harness h;
	struct log *lg = log_new();
	int per_site[5] = {0}, e, k;
	char err[256] = "";

	start();
	sc = isth_sched_parse("tree.sched", schedtxt, err, sizeof(err));
	cr_assert_not_null(sc, "%s", err);
	h_opt_sched = sc;
	h_opt_epoch_tsc = 1000 * MS;
	cr_assert_eq(h_create(&h, PT_SITES, PT_LINKS, "239.1.1.1 A B C D E\n", NULL, 1, 1,
			     1000000000, 4096),
		0, "%s", h.err);
	events_until(&h, 1050 * MS, lg);
	h_inject(&h, 0, h_udp(&h, 0, g, 1, 100));
	take_at(&h, 1050 * MS, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 4, "copies: %d", lg->n);
	for (k = 0; k < lg->n; k++) {
		const struct rec *r = &lg->r[k];

		per_site[r->site]++;
		cr_expect(near(r->t, 1050 * MS + after[r->site], 4), "site %d at %lu", r->site,
			(unsigned long)r->t);
	}
	cr_expect(per_site[0] == 0 && per_site[1] == 1 && per_site[2] == 1 && per_site[3] == 1 &&
		per_site[4] == 1);
	for (e = 0; e < isth_topo_ndlinks(h.t); e++) {
		uint64_t want = 0;
		char name[80];

		for (k = 0; k < (int)RTE_DIM(tree); k++)
			want |= e == h_dlink(&h, tree[k][0], tree[k][1]);
		isth_wan_link_stats(h.w, e, &ls);
		isth_topo_dlink_name(h.t, e, name, sizeof(name));
		cr_expect_eq(ls.pkts, want, "%s carried %lu, want %lu", name,
			(unsigned long)ls.pkts, (unsigned long)want);
	}
	free(lg);
	stop(&h);
	isth_sched_free(sc);
}

/*
 * Routes of one tree that rejoin: A's stream to D through C (A-C-D) and
 * to E through B and D (A-B-D-E) meet again at D, entered from C and from
 * B; a copy would reach D twice and cross D->E twice. With a group table
 * (network replication) the emulator refuses the schedule; without one
 * (edge replication: unicast copies) it only warns and runs.
 */
Test(wan_mcast, rejoining_routes_refused_with_groups)
{
	static const char schedtxt[] = PT_SCHED("0,2,3", "0,1,3,4");
	struct isth_sched *sc;
	struct harness h;
	char err[256] = "";

	start();
	sc = isth_sched_parse("rejoin.sched", schedtxt, err, sizeof(err));
	cr_assert_not_null(sc, "%s", err);
	h_opt_sched = sc;
	h_opt_epoch_tsc = 1000 * MS;
	cr_assert_neq(h_create(&h, PT_SITES, PT_LINKS, "239.1.1.1 A B C D E\n", NULL, 1, 1,
			      1000000000, 4096),
		0);
	h_destroy(&h);
	cr_assert_eq(h_create(&h, PT_SITES, PT_LINKS, NULL, NULL, 1, 1, 1000000000, 4096), 0, "%s",
		h.err);
	stop(&h);
	isth_sched_free(sc);
}

Test(wan_mcast, tree_replication)
{
	/*
	 * A-B 1 ms, B-C 2 ms, B-D 3 ms, C-D 10 ms, 1 Gbit/s, scale 1 (1000 B:
	 * 8 us per link). Group 239.1.1.1 = {A, C, D}.
	 * From A: tree A->B, B->C, B->D; one copy to C (3.016 ms), one to D
	 * (4.016 ms), none to A or B.
	 * From C: members A, D; shortest paths C-B-A (3 ms) and C-B-D (5 ms
	 * < 10 ms direct): C->B carries one copy that splits at B.
	 */
	struct harness h;
	struct log *lg = log_new();
	struct isth_wan_link_stats ls;
	struct isth_wan_port_stats ps;
	uint32_t g = (239u << 24) | (1 << 16) | (1 << 8) | 1;
	int A, B, C, D, k, e, nd;
	int per_site[4] = {0};
	static const char *const links[][2] = {
		{"A", "B"},
		{"B", "C"},
		{"B", "D"},
		{"C", "B"},
		{"B", "A"},
	};
	static const uint64_t want_pkts[] = {1, 1, 2, 1, 1};

	start();
	cr_assert_eq(h_create(&h, "site,region\nA,r\nB,r\nC,r\nD,r\n",
			     "a,b,one_way_ms,capacity_gbps\nA,B,1,1\nB,C,2,1\nB,D,3,1\nC,D,10,1\n",
			     "239.1.1.1 A C D\n", NULL, 1, 1, 1000000000, 4096),
		0, "%s", h.err);
	A = h_site(&h, "A");
	B = h_site(&h, "B");
	C = h_site(&h, "C");
	D = h_site(&h, "D");
	h_inject(&h, A, h_udp(&h, A, g, 1, 1000));
	take_at(&h, 0, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 2, "copies from A: %d", lg->n);
	for (k = 0; k < 2; k++) {
		const struct rec *r = &lg->r[k];

		cr_expect(r->site == C || r->site == D);
		cr_expect(!r->corrupt);
		cr_expect(near(r->t, r->site == C ? 3 * MS + 16 * US : 4 * MS + 16 * US, 4),
			"site %d at %lu", r->site, (unsigned long)r->t);
		/* RFC 1112 multicast MAC of 239.1.1.1 */
		cr_expect(memcmp(r->dst_mac, (uint8_t[]){0x01, 0x00, 0x5e, 0x01, 0x01, 0x01}, 6) ==
			0);
		cr_expect_eq(r->src_mac[5], r->site + 1);
	}
	cr_expect_neq(lg->r[0].site, lg->r[1].site);

	lg->n = 0;
	events_until(&h, 100 * MS, lg);
	h_inject(&h, C, h_udp(&h, C, g, 2, 1000));
	take_at(&h, 100 * MS, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 2, "copies from C: %d", lg->n);
	for (k = 0; k < 2; k++) {
		const struct rec *r = &lg->r[k];

		per_site[r->site]++;
		cr_expect(near(r->t, 100 * MS + (r->site == A ? 3 * MS : 5 * MS) + 16 * US, 4),
			"site %d at %lu", r->site, (unsigned long)r->t);
	}
	cr_expect(per_site[A] == 1 && per_site[D] == 1 && per_site[B] == 0 && per_site[C] == 0);

	/* one copy per link of each tree, nothing elsewhere */
	nd = isth_topo_ndlinks(h.t);
	for (e = 0; e < nd; e++) {
		uint64_t want = 0;
		char name[80];

		for (k = 0; k < (int)RTE_DIM(links); k++)
			if (e == h_dlink(&h, links[k][0], links[k][1]))
				want = want_pkts[k];
		isth_wan_link_stats(h.w, e, &ls);
		isth_topo_dlink_name(h.t, e, name, sizeof(name));
		cr_expect_eq(ls.pkts, want, "%s carried %lu, want %lu", name,
			(unsigned long)ls.pkts, (unsigned long)want);
	}
	/* an unknown group is dropped and counted at the ingress port */
	events_until(&h, 200 * MS, lg);
	h_inject(&h, A, h_udp(&h, A, (239u << 24) | 9, 3, 100));
	take_at(&h, 200 * MS, lg);
	isth_wan_port_stats(h.w, A, &ps);
	cr_expect_eq(ps.ctr[ISTH_WAN_P_NO_GROUP], 1);
	cr_expect_eq(ps.rx_pkts, 2);
	isth_wan_port_stats(h.w, C, &ps);
	cr_expect_eq(ps.tx_pkts, 1);
	free(lg);
	stop(&h);
}

/* ------------------------------------------------------------------ */
/* Impairments                                                         */
/* ------------------------------------------------------------------ */

#define NIMP 4000

/* NIMP 200-byte frames A->B, one every microsecond; returns the log. */
static struct log *
run_impaired(const char *spec, uint64_t seed, struct isth_wan_link_stats *ls, int nframes,
	uint64_t spacing)
{
	const char *specs[] = {spec, NULL};
	struct log *lg = log_new();
	struct rte_mbuf *group[16];
	struct harness h;
	int k, j, ng = 0;

	cr_assert_eq(h_create(&h, two_sites, "a,b,one_way_ms,capacity_gbps\nA,B,1,100\n", NULL,
			     specs, 1, seed, 1000000000, 16384),
		0, "%s", h.err);
	/* frames are offered in groups of 16, all at the last one's time */
	for (k = 0; k < nframes; k++) {
		group[ng] = h_udp(&h, 0, h_ip(1), (uint32_t)k, 200);
		cr_assert_not_null(group[ng]);
		ng++;
		if (k % 16 == 15 || k == nframes - 1) {
			events_until(&h, (uint64_t)k * spacing, lg);
			for (j = 0; j < ng; j++)
				cr_assert_eq(h_inject(&h, 0, group[j]), 0);
			take_at(&h, (uint64_t)k * spacing, lg);
			ng = 0;
		}
	}
	drain(&h, lg);
	isth_wan_link_stats(h.w, h_dlink(&h, "A", "B"), ls);
	h_destroy(&h);
	return lg;
}

static bool
same_log(const struct log *x, const struct log *y)
{
	int i;

	if (x->n != y->n)
		return false;
	for (i = 0; i < x->n; i++)
		if (x->r[i].seq != y->r[i].seq || x->r[i].t != y->r[i].t ||
			x->r[i].corrupt != y->r[i].corrupt)
			return false;
	return true;
}

/* k within mean +- 5 sigma of Binomial(n, p) */
static bool
binomial_ok(uint64_t k, double n, double p)
{
	double mu = n * p, sd = sqrt(n * p * (1 - p));

	return fabs((double)k - mu) <= 5 * sd;
}

Test(wan_impair, reproducible, .timeout = 60)
{
	const char *spec = "loss=0.1,dup=0.05,corrupt=0.05";
	struct isth_wan_link_stats s1, s2, s3;
	struct log *l1, *l2, *l3;
	uint64_t lost, dup, cor;
	int i, ncor = 0;

	start();
	l1 = run_impaired(spec, 42, &s1, NIMP, US);
	l2 = run_impaired(spec, 42, &s2, NIMP, US);
	l3 = run_impaired(spec, 43, &s3, NIMP, US);
	cr_expect(same_log(l1, l2), "same seed, same input: different deliveries");
	cr_expect(memcmp(s1.ctr, s2.ctr, sizeof(s1.ctr)) == 0);
	cr_expect(!same_log(l1, l3), "a different seed made the same decisions");
	lost = s1.ctr[ISTH_WAN_L_LOSS];
	dup = s1.ctr[ISTH_WAN_L_DUPLICATED];
	cor = s1.ctr[ISTH_WAN_L_CORRUPTED];
	cr_expect(binomial_ok(lost, NIMP, 0.1), "lost %lu of %d at p = 0.1", (unsigned long)lost,
		NIMP);
	cr_expect(binomial_ok(dup, (double)(NIMP - lost), 0.05), "duplicated %lu",
		(unsigned long)dup);
	cr_expect(
		binomial_ok(cor, (double)(NIMP - lost), 0.05), "corrupted %lu", (unsigned long)cor);
	/* every frame the link admitted arrives once, duplicates twice */
	cr_expect_eq((uint64_t)l1->n, NIMP - lost + dup);
	for (i = 0; i < l1->n; i++)
		ncor += l1->r[i].corrupt;
	/* a corrupted frame that was also duplicated arrives corrupted twice */
	cr_expect((uint64_t)ncor >= cor && (uint64_t)ncor <= 2 * cor, "%d corrupt frames for %lu",
		ncor, (unsigned long)cor);
	cr_expect(cor > 0 && dup > 0 && lost > 0);
	free(l1);
	free(l2);
	free(l3);
	isth_test_eal_cleanup();
}

Test(wan_impair, gilbert_elliott_bursts, .timeout = 60)
{
	/* p = 0.01, r = 0.1, loss 1 in bad, 0 in good: stationary loss
	 * p / (p + r) = 0.0909 and losses come in runs of mean 1 / r = 10;
	 * independent loss at that rate would give runs of mean 1.1. */
	struct isth_wan_link_stats ls;
	struct log *lg;
	uint32_t prev = UINT32_MAX, runs = 0, lost_in_runs = 0;
	double frac, mean_run;
	int i, n = 20000;

	start();
	lg = run_impaired("ge=0.01/0.1/1", 5, &ls, n, US);
	frac = (double)ls.ctr[ISTH_WAN_L_LOSS] / n;
	for (i = 0; i < lg->n; i++) {
		uint32_t s = lg->r[i].seq, gap = s - (prev + 1);

		if (gap > 0) {
			runs++;
			lost_in_runs += gap;
		}
		prev = s;
	}
	if ((uint32_t)(n - 1) != prev) {
		runs++;
		lost_in_runs += (uint32_t)(n - 1) - prev;
	}
	cr_expect_eq(lost_in_runs, ls.ctr[ISTH_WAN_L_LOSS]);
	mean_run = runs ? (double)lost_in_runs / runs : 0;
	cr_expect(frac > 0.06 && frac < 0.12, "loss fraction %.4f, model 0.0909", frac);
	cr_expect(mean_run > 5 && mean_run < 20, "mean loss run %.2f, model 10", mean_run);
	free(lg);
	isth_test_eal_cleanup();
}

Test(wan_impair, reorder_and_jitter, .timeout = 60)
{
	/* 1000 frames 100 us apart on a 1 ms, 100 Gbit/s link (16 ns per
	 * 200-byte frame): base delay 1 ms + 16 ns. */
	struct isth_wan_link_stats ls;
	struct log *lg;
	uint64_t base = MS + 16, sent, d;
	int i, n = 1000, inversions = 0, late = 0;
	bool seen[1000] = {false};

	start();
	lg = run_impaired("reorder=0.2,reorder-ms=0.5", 3, &ls, n, 100 * US);
	cr_assert_eq(lg->n, n);
	for (i = 0; i < n; i++) {
		const struct rec *r = &lg->r[i];

		/* frames are taken in groups of 16 at the last one's time */
		sent = (uint64_t)(r->seq | 15) * 100 * US;
		if (r->seq >= (uint32_t)(n / 16 * 16))
			sent = (uint64_t)(n - 1) * 100 * US;
		d = r->t - sent;
		cr_expect(!seen[r->seq], "seq %u twice", r->seq);
		seen[r->seq] = true;
		if (i > 0 && r->seq < lg->r[i - 1].seq)
			inversions++;
		/* exactly the base delay (+ the serialisation of the group), or 0.5 ms more */
		if (d >= base + 500 * US - 2)
			late++;
		cr_expect((d >= base - 2 && d <= base + 16 * 16 + 2) ||
				(d >= base + 500 * US - 2 && d <= base + 500 * US + 16 * 16 + 2),
			"seq %u delay %lu", r->seq, (unsigned long)d);
	}
	cr_expect_eq((uint64_t)late, ls.ctr[ISTH_WAN_L_REORDERED]);
	cr_expect(binomial_ok(ls.ctr[ISTH_WAN_L_REORDERED], n, 0.2), "reordered %lu",
		(unsigned long)ls.ctr[ISTH_WAN_L_REORDERED]);
	cr_expect(inversions > 0);
	free(lg);
	late = 0;

	/* jitter: delay in [base, base + 0.3 ms] and order kept */
	lg = run_impaired("jitter-ms=0.3", 3, &ls, n, 100 * US);
	cr_assert_eq(lg->n, n);
	for (i = 0; i < n; i++) {
		const struct rec *r = &lg->r[i];

		sent = (uint64_t)(r->seq | 15) * 100 * US;
		if (r->seq >= (uint32_t)(n / 16 * 16))
			sent = (uint64_t)(n - 1) * 100 * US;
		d = r->t - sent;
		cr_expect_eq(r->seq, (uint32_t)i, "jitter reordered");
		cr_expect(d >= base - 2 && d <= base + 300 * US + 16 * 16 + 2, "seq %u delay %lu",
			r->seq, (unsigned long)d);
		if (d > base + 150 * US)
			late++;
	}
	/* the clamp that keeps order must not collapse the jitter: about half
	 * of the frames are more than 0.15 ms late */
	cr_expect(late > n / 4, "only %d of %d jittered past 0.15 ms", late, n);
	free(lg);
	isth_test_eal_cleanup();
}

/* ------------------------------------------------------------------ */
/* Ingress: drops by reason, ARP, TTL                                  */
/* ------------------------------------------------------------------ */

Test(wan_ingress, drops_by_reason)
{
	struct harness h;
	struct log *lg = log_new();
	struct isth_wan_port_stats ps;
	struct rte_mbuf *m;
	struct rte_ipv4_hdr *ip;

	start();
	cr_assert_eq(h_create(&h, two_sites, "a,b,one_way_ms,capacity_gbps\nA,B,1,1\n", NULL, NULL,
			     1, 1, 1000000000, 4096),
		0, "%s", h.err);
	h_inject(&h, 0, h_udp(&h, 0, (192u << 24) | (168 << 16) | 1, 1, 100)); /* no_route */
	h_inject(&h, 0, h_udp(&h, 0, h_ip(0) + 5, 2, 100)); /* same_site */
	h_inject(&h, 0, h_udp(&h, 0, (224u << 24) | 5, 3, 100)); /* link_local */
	h_inject(&h, 0, h_udp(&h, 0, UINT32_MAX, 4, 100)); /* link_local */
	h_inject(&h, 0, h_udp(&h, 0, (239u << 24) | 1, 5, 100)); /* no_group */
	m = h_udp(&h, 0, h_ip(1), 6, 100); /* not_ipv4 */
	rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->ether_type = rte_cpu_to_be_16(0x86dd);
	h_inject(&h, 0, m);
	m = h_udp(&h, 0, h_ip(1), 7, 100); /* bad_ipv4 */
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
	ip->total_length = rte_cpu_to_be_16(200);
	h_inject(&h, 0, m);
	m = h_udp(&h, 0, h_ip(1), 8, 100); /* bad_ipv4 */
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
	ip->version_ihl = 0x44;
	h_inject(&h, 0, m);
	h_inject(&h, 0, h_udp(&h, 0, h_ip(1) + 77, 9, 100)); /* delivered */
	take_at(&h, 0, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 1);
	cr_expect_eq(lg->r[0].seq, 9);
	isth_wan_port_stats(h.w, 0, &ps);
	cr_expect_eq(ps.rx_pkts, 9);
	cr_expect_eq(ps.ctr[ISTH_WAN_P_NO_ROUTE], 1);
	cr_expect_eq(ps.ctr[ISTH_WAN_P_SAME_SITE], 1);
	cr_expect_eq(ps.ctr[ISTH_WAN_P_LINK_LOCAL], 2);
	cr_expect_eq(ps.ctr[ISTH_WAN_P_NO_GROUP], 1);
	cr_expect_eq(ps.ctr[ISTH_WAN_P_NOT_IPV4], 1);
	cr_expect_eq(ps.ctr[ISTH_WAN_P_BAD_IPV4], 2);
	isth_wan_port_stats(h.w, 1, &ps);
	cr_expect_eq(ps.tx_pkts, 1);
	cr_expect_eq(ps.tx_bytes, 100);
	free(lg);
	stop(&h);
}

static struct rte_mbuf *
arp_request(struct harness *h, uint32_t sip, uint32_t tip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(h->pool);
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *a;

	cr_assert_not_null(m);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, 60);
	cr_assert_not_null(eth);
	a = (struct rte_arp_hdr *)(eth + 1);
	memset(eth, 0, 60);
	memset(eth->dst_addr.addr_bytes, 0xff, 6);
	eth->src_addr.addr_bytes[0] = 0x02;
	eth->src_addr.addr_bytes[5] = 0x01;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	a->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	a->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	a->arp_hlen = 6;
	a->arp_plen = 4;
	a->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	rte_ether_addr_copy(&eth->src_addr, &a->arp_data.arp_sha);
	a->arp_data.arp_sip = rte_cpu_to_be_32(sip);
	a->arp_data.arp_tip = rte_cpu_to_be_32(tip);
	return m;
}

Test(wan_ingress, arp_proxy)
{
	struct harness h;
	struct isth_wan_port_stats ps;
	struct rte_mbuf *m[4];
	const struct rte_ether_hdr *eth;
	const struct rte_arp_hdr *a;

	start();
	cr_assert_eq(h_create(&h, two_sites, "a,b,one_way_ms,capacity_gbps\nA,B,1,1\n", NULL, NULL,
			     1, 1, 1000000000, 4096),
		0, "%s", h.err);
	h_inject(&h, 0, arp_request(&h, h_ip(0), h_ip(1))); /* remote: answered */
	h_inject(&h, 0, arp_request(&h, h_ip(0), h_ip(0) + 1)); /* local: not ours */
	isth_wan_poll(h.w, 0);
	cr_assert_eq(h_recv(&h, 0, m, 4), 1);
	eth = rte_pktmbuf_mtod(m[0], const struct rte_ether_hdr *);
	a = (const struct rte_arp_hdr *)(eth + 1);
	cr_expect_eq(a->arp_opcode, rte_cpu_to_be_16(RTE_ARP_OP_REPLY));
	cr_expect(memcmp(eth->dst_addr.addr_bytes, (uint8_t[]){2, 0, 0, 0, 0, 1}, 6) == 0);
	cr_expect(memcmp(eth->src_addr.addr_bytes, (uint8_t[]){2, 0, 0, 0, 0xff, 1}, 6) == 0);
	cr_expect(memcmp(a->arp_data.arp_sha.addr_bytes, (uint8_t[]){2, 0, 0, 0, 0xff, 1}, 6) == 0);
	cr_expect(memcmp(a->arp_data.arp_tha.addr_bytes, (uint8_t[]){2, 0, 0, 0, 0, 1}, 6) == 0);
	cr_expect_eq(a->arp_data.arp_sip, rte_cpu_to_be_32(h_ip(1)));
	cr_expect_eq(a->arp_data.arp_tip, rte_cpu_to_be_32(h_ip(0)));
	rte_pktmbuf_free(m[0]);
	isth_wan_port_stats(h.w, 0, &ps);
	cr_expect_eq(ps.ctr[ISTH_WAN_P_ARP_REPLIES], 1);
	cr_expect_eq(ps.ctr[ISTH_WAN_P_ARP_IGNORED], 1);
	stop(&h);
}

Test(wan_ingress, ttl_decrement)
{
	struct harness h;
	struct log *lg = log_new();
	struct isth_wan_link_stats ls;
	struct rte_mbuf *m;
	struct rte_ipv4_hdr *ip;

	start();
	h_opt_decrement_ttl = true;
	cr_assert_eq(h_create(&h, "site,region\nA,r\nB,r\nC,r\n",
			     "a,b,one_way_ms,capacity_gbps\nA,B,1,1\nB,C,1,1\n", NULL, NULL, 1, 1,
			     1000000000, 4096),
		0, "%s", h.err);
	h_inject(&h, 0, h_udp(&h, 0, h_ip(2), 1, 100)); /* TTL 64 -> 62 over two links */
	m = h_udp(&h, 0, h_ip(2), 2, 100); /* TTL 2: dies on B->C */
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
	ip->time_to_live = 2;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	h_inject(&h, 0, m);
	take_at(&h, 0, lg);
	drain(&h, lg);
	cr_assert_eq(lg->n, 1);
	cr_expect_eq(lg->r[0].ttl, 62);
	cr_expect(lg->r[0].cksum_ok, "IPv4 checksum not updated with the TTL");
	isth_wan_link_stats(h.w, h_dlink(&h, "B", "C"), &ls);
	cr_expect_eq(ls.ctr[ISTH_WAN_L_TTL], 1);
	free(lg);
	stop(&h);
}
