/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Backend conformance: the contract of isth_backend.h, checked against a
 * scalar model written here. Every case runs once per backend name in
 * `backends[]`; a new backend is qualified by adding its name.
 *
 * "fpga" runs against the device model (lib/fpga_model) started in-process
 * on its own thread by the fixture. The device works asynchronously, so
 * the cases wait for it: settle() spins (yielding, bounded) until the
 * backend's "dev_pending" gauge is 0; a backend without that gauge (sw)
 * is synchronous and never waits. Time is the caller's clock in both.
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sched.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "isth_backend.h"
#include "isth_fpga_model.h"
#include "isth_wire.h"
#include "isth_test_eal.h"

#define N_ISLANDS 5
#define LOCAL 0
#define JOB 7
#define ELEMS 64

static struct rte_mempool *pool, *hdr_pool;
static struct isth_wire_limits lim;
static struct isth_fpga_model *model;
static char model_name[64];

static void
eal_up(void)
{
	char prefix[64];
	char *argv[] = {"backend_test", "--no-huge", "-m", "128", "--no-pci", "--no-telemetry",
		"--log-level=lib.*:error", "-l", "0", prefix};

	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-be-%d", getpid());
	cr_assert_geq(rte_eal_init(RTE_DIM(argv), argv), 0, "EAL: %s", rte_strerror(rte_errno));
	pool = rte_pktmbuf_pool_create("be_pool", 1023, 0, 0, 2048 + 128, SOCKET_ID_ANY);
	hdr_pool = rte_pktmbuf_pool_create("be_hdr", 1023, 0, 0, 256, SOCKET_ID_ANY);
	cr_assert_not_null(pool);
	cr_assert_not_null(hdr_pool);
	isth_wire_limits_init(&lim, N_ISLANDS, 1500);
}

static void
eal_down(void)
{
	isth_fpga_model_destroy(model);
	model = NULL;
	rte_mempool_free(pool);
	rte_mempool_free(hdr_pool);
	isth_test_eal_cleanup();
}

static struct isth_backend *
make(const char *name, uint64_t mem, uint64_t timeout)
{
	struct isth_backend_conf c;
	struct isth_backend *be;

	memset(&c, 0, sizeof(c));
	c.socket_id = SOCKET_ID_ANY;
	c.island = LOCAL;
	c.n_islands = N_ISLANDS;
	c.max_elems = ELEMS;
	c.max_chunks = 1024;
	c.mem_bytes = mem;
	c.timeout_ns = timeout;
	c.agg_pool = pool;
	c.mcast.socket_id = SOCKET_ID_ANY;
	c.mcast.src_ip = 0x0a000001;
	c.mcast.src_port = ISTH_WIRE_PORT;
	c.mcast.mode = ISTH_MCAST_ZEROCOPY;
	c.mcast.hdr_pool = hdr_pool;
	c.mcast.clone_pool = hdr_pool;
	c.mcast.copy_pool = pool;
	if (strcmp(name, "fpga") == 0) {
		/* The device: a model on its own thread, fresh per test. */
		struct isth_fpga_model_params mp = {.replace = 1};

		snprintf(model_name, sizeof(model_name), "/isth-be-test-%d", getpid());
		mp.shm_name = model_name;
		mp.dma_bytes = 4u << 20;
		model = isth_fpga_model_create(&mp);
		cr_assert_not_null(model, "model: %s", strerror(errno));
		cr_assert_eq(isth_fpga_model_start(model), 0);
		c.device = model_name;
	}
	be = isth_backend_create(name, &c);
	cr_assert_not_null(be, "create %s: %s", name, rte_strerror(rte_errno));
	return be;
}

/* Deterministic contribution: a function of sender, round, chunk, index. */
static int32_t
value(unsigned int sender, uint32_t round, uint32_t chunk, unsigned int i)
{
	return (int32_t)(sender * 1000003u + round * 7919u + chunk * 104729u + i * 31u) - 50000;
}

/* A DATA frame of job @job from @sender as a peer edge sends it. */
static struct rte_mbuf *
job_frame(uint32_t job, unsigned int sender, uint32_t round, uint32_t chunk,
	struct isth_wire_pkt *parsed)
{
	struct isth_wire_addr a = {
		.src_ip = 0x0a000000 + sender,
		.dst_ip = 0x0a000001,
		.src_port = ISTH_WIRE_PORT,
		.dst_port = ISTH_WIRE_PORT,
	};
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_DATA,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.sender = (uint8_t)sender,
		.count = ELEMS,
		.job = job,
		.round = round,
		.chunk = chunk,
		.seq = chunk,
		.bitmap = 1ull << sender,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	int32_t body[ELEMS];
	size_t hs = isth_wire_frame_hdr_size(&a);
	uint8_t *p;
	int n;

	cr_assert_not_null(m);
	for (unsigned int i = 0; i < ELEMS; i++)
		body[i] = value(sender, round, chunk, i);
	p = (uint8_t *)rte_pktmbuf_append(m, hs + 40 + sizeof(body));
	n = isth_wire_build_msg(p + hs, 40 + sizeof(body), &h, body, sizeof(body), NULL);
	cr_assert_gt(n, 0);
	cr_assert_gt(isth_wire_put_frame_hdr(p, hs + n, &a, (size_t)n), 0);
	cr_assert_eq(isth_wire_parse_frame(p, hs + n, &lim, parsed), ISTH_WIRE_OK);
	return m;
}

static struct rte_mbuf *
data_frame(unsigned int sender, uint32_t round, uint32_t chunk, struct isth_wire_pkt *parsed)
{
	return job_frame(JOB, sender, round, chunk, parsed);
}

/* Counter @name, or @dflt when the backend has none of that name. */
static uint64_t
stat_or(struct isth_backend *be, const char *name, uint64_t dflt)
{
	struct isth_backend_stats st;

	isth_backend_stats(be, &st);
	for (unsigned int i = 0; i < st.n; i++)
		if (strcmp(st.names[i], name) == 0)
			return st.values[i];
	return dflt;
}

static bool
is_async(struct isth_backend *be)
{
	return stat_or(be, "dev_pending", UINT64_MAX) != UINT64_MAX;
}

/* Wait (bounded, no sleep) until the device has answered all posted work. */
static void
settle(struct isth_backend *be)
{
	unsigned long spins = 0;

	while (stat_or(be, "dev_pending", 0) != 0) {
		cr_assert_lt(spins++, 50000000ul, "device does not settle");
		sched_yield();
	}
}

static uint64_t stat(struct isth_backend *be, const char *name);

/*
 * aggregate_burst() and its verdict: @want contributions are accepted
 * (the "accepted" counter moves by @want). A synchronous backend returns
 * @want; an asynchronous one returns what it handed to the device (@n).
 */
static void
aggregate(struct isth_backend *be, struct rte_mbuf **m, const struct isth_wire_pkt *parsed,
	unsigned int n, uint64_t now, unsigned int want)
{
	uint64_t before = stat(be, "accepted");
	unsigned int ret = isth_backend_aggregate_burst(be, m, parsed, n, now);

	settle(be);
	cr_expect_eq(ret, is_async(be) ? n : want, "aggregate_burst returned %u", ret);
	cr_expect_eq(stat(be, "accepted") - before, want, "accepted");
}

struct got {
	uint64_t bitmap;
	uint16_t flags;
	int32_t sum[ELEMS];
	uint32_t round, chunk;
};

/* Drain every AGG, check its header, decode it into @g. */
static unsigned int
drain_all(struct isth_backend *be, uint64_t now, struct got *g, unsigned int cap)
{
	struct rte_mbuf *out[64];
	unsigned int n, total = 0;
	unsigned long spins = 0;
	struct isth_wire_pkt p;

	for (;;) {
		n = isth_backend_drain(be, now, out, 64);
		if (n == 0) {
			/* Done once the device has nothing in flight and a
			 * drain after that finds nothing either. */
			if (stat_or(be, "dev_pending", 0) == 0 &&
				(n = isth_backend_drain(be, now, out, 64)) == 0)
				break;
			if (n == 0) {
				cr_assert_lt(spins++, 50000000ul, "device does not settle");
				sched_yield();
				continue;
			}
		}
		for (unsigned int i = 0; i < n; i++) {
			const uint8_t *msg = rte_pktmbuf_mtod(out[i], const uint8_t *);

			cr_assert_geq(rte_pktmbuf_headroom(out[i]), 46u);
			enum isth_wire_reason r =
				isth_wire_parse_msg(msg, rte_pktmbuf_data_len(out[i]), &lim, &p);

			cr_assert_eq(r, ISTH_WIRE_OK, "AGG refused: %s", isth_wire_reason_name(r));
			cr_assert_eq(p.hdr.type, ISTH_WIRE_AGG);
			cr_assert_eq(p.hdr.sender, LOCAL);
			cr_assert_eq(p.hdr.job, JOB);
			cr_assert_eq(p.hdr.count, ELEMS);
			cr_assert_lt(total, cap);
			g[total].bitmap = p.hdr.bitmap;
			g[total].flags = p.hdr.flags;
			g[total].round = p.hdr.round;
			g[total].chunk = p.hdr.chunk;
			memcpy(g[total].sum, p.payload, sizeof(g[total].sum));
			total++;
		}
		rte_pktmbuf_free_bulk(out, n);
	}
	return total;
}

static void
expect_sum(const struct got *g)
{
	for (unsigned int i = 0; i < ELEMS; i++) {
		uint32_t want = 0;

		for (unsigned int s = 0; s < N_ISLANDS; s++)
			if (g->bitmap & (1ull << s))
				want += (uint32_t)value(s, g->round, g->chunk, i);
		cr_expect_eq((uint32_t)g->sum[i], want, "chunk %u elem %u", g->chunk, i);
	}
}

static uint64_t
stat(struct isth_backend *be, const char *name)
{
	struct isth_backend_stats st;

	isth_backend_stats(be, &st);
	if (getenv("BE_DEBUG"))
		for (unsigned int i = 0; i < st.n; i++)
			fprintf(stderr, "%s=%lu\n", st.names[i], (unsigned long)st.values[i]);
	for (unsigned int i = 0; i < st.n; i++)
		if (strcmp(st.names[i], name) == 0)
			return st.values[i];
	cr_assert_fail("no counter %s", name);
	return 0;
}

struct be_name {
	char name[16];
};

static struct be_name backends[] = {{"sw"}, {"fpga"}};

ParameterizedTestParameters(backend, complete_sums)
{
	return cr_make_param_array(struct be_name, backends, RTE_DIM(backends));
}

/* Three peers, 8 chunks, shuffled and duplicated: one complete AGG each. */
ParameterizedTest(struct be_name *b, backend, complete_sums, .init = eal_up, .fini = eal_down)
{
	const uint64_t expected = (1u << 1) | (1u << 2) | (1u << 4);
	unsigned int avail = rte_mempool_avail_count(pool);
	struct isth_backend *be = make(b->name, 1 << 20, 1000000000);
	struct isth_wire_pkt parsed[64];
	struct rte_mbuf *m[64];
	struct got g[16];
	unsigned int n = 0, k;

	cr_assert_eq(isth_backend_set_round(be, JOB, 3, expected, NULL, 0), 0);
	for (uint32_t c = 0; c < 8; c++) {
		m[n] = data_frame(4, 3, c, &parsed[n]);
		n++;
		m[n] = data_frame(1, 3, c, &parsed[n]);
		n++;
		m[n] = data_frame(1, 3, c, &parsed[n]);
		n++; /* duplicate */
		m[n] = data_frame(2, 3, 7 - c, &parsed[n]);
		n++;
	}
	aggregate(be, m, parsed, n, 1000, 24);
	k = drain_all(be, 2000, g, 16);
	cr_assert_eq(k, 8);
	for (unsigned int i = 0; i < k; i++) {
		cr_expect_eq(g[i].bitmap, expected);
		cr_expect_eq(g[i].flags & ISTH_WIRE_F_PARTIAL, 0);
		expect_sum(&g[i]);
	}
	/* chunks 4..7 complete at sender 1's first copy (sender 2 came
	 * first), so their repeat meets an emitted bit, not a live slot */
	cr_expect_eq(stat(be, "duplicate"), 4);
	cr_expect_eq(stat(be, "duplicate_emitted"), 4);
	cr_expect_eq(stat(be, "completed"), 8);
	isth_backend_destroy(be);
	cr_expect_eq(rte_mempool_avail_count(pool), avail, "mbufs leaked");
}

ParameterizedTestParameters(backend, timeout_partial_then_late)
{
	return cr_make_param_array(struct be_name, backends, RTE_DIM(backends));
}

/* A slot that times out leaves as a partial; the late contributor's data
 * leaves in a second partial with a disjoint bitmap, and the two sum to
 * the full aggregate. */
ParameterizedTest(
	struct be_name *b, backend, timeout_partial_then_late, .init = eal_up, .fini = eal_down)
{
	const uint64_t expected = (1u << 1) | (1u << 2) | (1u << 3);
	struct isth_backend *be = make(b->name, 1 << 20, 5000);
	struct isth_wire_pkt parsed[4];
	struct rte_mbuf *m[4];
	struct got g[4];

	cr_assert_eq(isth_backend_set_round(be, JOB, 1, expected, NULL, 0), 0);
	m[0] = data_frame(1, 1, 9, &parsed[0]);
	m[1] = data_frame(3, 1, 9, &parsed[1]);
	aggregate(be, m, parsed, 2, 100, 2);
	cr_expect_eq(drain_all(be, 4000, g, 4), 0, "nothing before timeout");
	cr_assert_eq(drain_all(be, 5100, g, 4), 1);
	cr_expect_eq(g[0].bitmap, (1u << 1) | (1u << 3));
	cr_expect_neq(g[0].flags & ISTH_WIRE_F_PARTIAL, 0);
	expect_sum(&g[0]);
	/* the late one, plus a repeat of an emitted one */
	m[0] = data_frame(2, 1, 9, &parsed[0]);
	m[1] = data_frame(1, 1, 9, &parsed[1]);
	aggregate(be, m, parsed, 2, 6000, 1);
	cr_assert_eq(drain_all(be, 20000, g + 1, 3), 1);
	cr_expect_eq(g[1].bitmap, 1u << 2);
	cr_expect_eq(g[0].bitmap & g[1].bitmap, 0, "partials overlap");
	expect_sum(&g[1]);
	cr_expect_eq(stat(be, "partial_timeout"), 1);
	cr_expect_eq(stat(be, "duplicate_emitted"), 1);
	isth_backend_destroy(be);
}

ParameterizedTestParameters(backend, typed_counts)
{
	return cr_make_param_array(struct be_name, backends, RTE_DIM(backends));
}

/* isth_backend_counts(): one chunk completes, another times out as a
 * partial; the typed counts say so (1 and 1), as the named counters do,
 * and nothing is pending once drained. */
ParameterizedTest(struct be_name *b, backend, typed_counts, .init = eal_up, .fini = eal_down)
{
	const uint64_t expected = (1u << 1) | (1u << 2);
	struct isth_backend *be = make(b->name, 1 << 20, 5000);
	struct isth_backend_counts c;
	struct isth_wire_pkt parsed[3];
	struct rte_mbuf *m[3];
	struct got g[4];

	cr_assert_eq(isth_backend_set_round(be, JOB, 1, expected, NULL, 0), 0);
	m[0] = data_frame(1, 1, 0, &parsed[0]);
	m[1] = data_frame(2, 1, 0, &parsed[1]);
	m[2] = data_frame(1, 1, 1, &parsed[2]);
	aggregate(be, m, parsed, 3, 100, 3);
	cr_assert_eq(drain_all(be, 6000, g, 4), 2);
	isth_backend_counts(be, &c);
	cr_expect_eq(c.completed, 1);
	cr_expect_eq(c.partial, 1);
	cr_expect_eq(c.dev_pending, 0);
	cr_expect_eq(c.completed, stat(be, "completed"));
	cr_expect_eq(c.partial, stat(be, "partial_timeout"));
	isth_backend_destroy(be);
}

ParameterizedTestParameters(backend, refusals_counted)
{
	return cr_make_param_array(struct be_name, backends, RTE_DIM(backends));
}

ParameterizedTest(struct be_name *b, backend, refusals_counted, .init = eal_up, .fini = eal_down)
{
	const uint64_t expected = (1u << 1) | (1u << 2);
	unsigned int avail = rte_mempool_avail_count(pool);
	struct isth_backend *be = make(b->name, 1 << 20, 1000000);
	struct isth_wire_pkt parsed[4];
	struct rte_mbuf *m[4];

	cr_assert_eq(isth_backend_set_round(be, JOB, 5, expected, NULL, 0), 0);
	m[0] = data_frame(3, 5, 0, &parsed[0]); /* not in clique */
	m[1] = data_frame(1, 6, 0, &parsed[1]); /* round not published */
	m[2] = job_frame(JOB + 1, 1, 5, 0, &parsed[2]); /* unknown job */
	aggregate(be, m, parsed, 3, 10, 0);
	cr_expect_eq(stat(be, "unexpected_sender"), 1);
	cr_expect_eq(stat(be, "unknown_round"), 1);
	cr_expect_eq(stat(be, "unknown_job"), 1);
	isth_backend_destroy(be);
	cr_expect_eq(rte_mempool_avail_count(pool), avail, "refused mbufs leaked");
}

ParameterizedTestParameters(backend, memory_bound_conflicts)
{
	return cr_make_param_array(struct be_name, backends, RTE_DIM(backends));
}

/* Memory for 2 slots, 6 chunks in flight: conflicts evict partials, the
 * memory high-water mark never passes the budget, and every contribution
 * is in exactly one emitted aggregate. */
ParameterizedTest(
	struct be_name *b, backend, memory_bound_conflicts, .init = eal_up, .fini = eal_down)
{
	const uint64_t expected = (1u << 1) | (1u << 2);
	const uint64_t mem = 2 * ELEMS * 4;
	struct isth_backend *be = make(b->name, mem, 1000000000);
	uint64_t seen[6] = {0};
	struct isth_backend_caps caps;
	struct isth_wire_pkt parsed[12];
	struct rte_mbuf *m[12];
	struct got g[16];
	unsigned int n = 0, k;

	isth_backend_caps(be, &caps);
	cr_assert_eq(caps.n_slots, 2);
	cr_assert_leq(caps.mem_bytes, mem);
	cr_assert_eq(isth_backend_set_round(be, JOB, 2, expected, NULL, 0), 0);
	for (uint32_t c = 0; c < 6; c++) {
		m[n] = data_frame(1, 2, c, &parsed[n]);
		n++;
	}
	for (uint32_t c = 0; c < 6; c++) {
		m[n] = data_frame(2, 2, c, &parsed[n]);
		n++;
	}
	for (unsigned int i = 0; i < n; i++) {
		aggregate(be, &m[i], &parsed[i], 1, 10 + i, 1);
		k = drain_all(be, 10 + i, g, 16);
		for (unsigned int j = 0; j < k; j++) {
			cr_expect_eq(seen[g[j].chunk] & g[j].bitmap, 0);
			seen[g[j].chunk] |= g[j].bitmap;
			expect_sum(&g[j]);
		}
	}
	isth_backend_flush(be);
	k = drain_all(be, 100, g, 16);
	for (unsigned int j = 0; j < k; j++) {
		cr_expect_eq(seen[g[j].chunk] & g[j].bitmap, 0);
		seen[g[j].chunk] |= g[j].bitmap;
	}
	for (unsigned int c = 0; c < 6; c++)
		cr_expect_eq(seen[c], expected, "chunk %u lost a contribution", c);
	cr_expect_leq(stat(be, "mem_hwm"), mem);
	cr_expect_gt(stat(be, "partial_conflict_pool") + stat(be, "partial_conflict_bucket"), 0);
	isth_backend_destroy(be);
}

ParameterizedTestParameters(backend, replicate_by_round)
{
	return cr_make_param_array(struct be_name, backends, RTE_DIM(backends));
}

/* Outbound DATA goes to the peers of its own round, never another's. */
ParameterizedTest(struct be_name *b, backend, replicate_by_round, .init = eal_up, .fini = eal_down)
{
	struct isth_mcast_peer r4[2] = {
		{.island = 1, .ip = 0x0a000101, .port = ISTH_WIRE_PORT},
		{.island = 2, .ip = 0x0a000102, .port = ISTH_WIRE_PORT},
	};
	struct isth_mcast_peer r5[1] = {
		{.island = 3, .ip = 0x0a000103, .port = ISTH_WIRE_PORT},
	};
	unsigned int avail = rte_mempool_avail_count(pool);
	unsigned int havail = rte_mempool_avail_count(hdr_pool);
	struct isth_backend *be = make(b->name, 1 << 20, 1000000);
	struct rte_mbuf *in[3], *out[16];
	struct isth_wire_pkt parsed, fp;
	uint16_t n_out = 0;

	cr_assert_eq(isth_backend_set_round(be, JOB, 4, 0x6, r4, 2), 0);
	cr_assert_eq(isth_backend_set_round(be, JOB, 5, 0x8, r5, 1), 0);
	for (int i = 0; i < 3; i++) {
		/* the island's DATA, stripped to the message */
		in[i] = data_frame(LOCAL, i == 2 ? 5 : 4, i, &parsed);
		rte_pktmbuf_adj(in[i], 42);
	}
	in[0] = in[0];
	cr_expect_eq(isth_backend_replicate_burst(be, in, 3, out, 16, &n_out), 3);
	cr_assert_eq(n_out, 5);
	for (int i = 0; i < 5; i++) {
		uint8_t flat[2048];
		const uint8_t *f = rte_pktmbuf_read(out[i], 0, rte_pktmbuf_pkt_len(out[i]), flat);

		cr_assert_eq(isth_wire_parse_frame(f, rte_pktmbuf_pkt_len(out[i]), &lim, &fp),
			ISTH_WIRE_OK);
		if (fp.hdr.round == 4)
			cr_expect(fp.addr.dst_ip == 0x0a000101 || fp.addr.dst_ip == 0x0a000102);
		else
			cr_expect_eq(fp.addr.dst_ip, 0x0a000103);
	}
	rte_pktmbuf_free_bulk(out, n_out);
	/* round 6 has no table: dropped and counted, nothing emitted */
	rte_pktmbuf_free(in[2]);
	in[2] = data_frame(LOCAL, 6, 0, &parsed);
	rte_pktmbuf_adj(in[2], 42);
	cr_expect_eq(isth_backend_replicate_burst(be, in + 2, 1, out, 16, &n_out), 1);
	cr_expect_eq(n_out, 0);
	cr_expect_eq(stat(be, "repl_no_table"), 1);
	rte_pktmbuf_free_bulk(in, 3);
	isth_backend_destroy(be);
	cr_expect_eq(rte_mempool_avail_count(pool), avail);
	cr_expect_eq(rte_mempool_avail_count(hdr_pool), havail);
}

ParameterizedTestParameters(backend, replicate_to_group)
{
	return cr_make_param_array(struct be_name, backends, RTE_DIM(backends));
}

/*
 * Network replication: one multicast destination is the round's group;
 * each DATA leaves once, to the group address and its RFC 1112 MAC
 * (01:00:5e + the low 23 bits), with the message unchanged; a round with
 * unicast peers beside it still fans out per peer.
 */
ParameterizedTest(struct be_name *b, backend, replicate_to_group, .init = eal_up, .fini = eal_down)
{
	struct isth_mcast_peer g[1] = {
		{.island = ISTH_MCAST_NO_ISLAND, .ip = 0xefc000c1, .port = ISTH_WIRE_PORT},
	};
	struct isth_mcast_peer r5[2] = {
		{.island = 1, .ip = 0x0a000101, .port = ISTH_WIRE_PORT},
		{.island = 3, .ip = 0x0a000103, .port = ISTH_WIRE_PORT},
	};
	static const uint8_t gmac[6] = {0x01, 0x00, 0x5e, 0x40, 0x00, 0xc1};
	struct isth_backend *be = make(b->name, 1 << 20, 1000000);
	struct rte_mbuf *in[3], *out[16];
	struct isth_wire_pkt parsed, fp;
	uint16_t n_out = 0;
	int to_group = 0, to_peers = 0;

	cr_assert_eq(isth_backend_set_round(be, JOB, 4, 0xa, g, 1), 0);
	cr_assert_eq(isth_backend_set_round(be, JOB, 5, 0xa, r5, 2), 0);
	for (int i = 0; i < 3; i++) {
		in[i] = data_frame(LOCAL, i == 2 ? 5 : 4, i, &parsed);
		rte_pktmbuf_adj(in[i], 42);
	}
	cr_expect_eq(isth_backend_replicate_burst(be, in, 3, out, 16, &n_out), 3);
	cr_assert_eq(n_out, 4, "2 DATA to the group once each, 1 DATA to 2 peers");
	for (int i = 0; i < n_out; i++) {
		uint8_t flat[2048];
		const uint8_t *f = rte_pktmbuf_read(out[i], 0, rte_pktmbuf_pkt_len(out[i]), flat);

		cr_assert_eq(isth_wire_parse_frame(f, rte_pktmbuf_pkt_len(out[i]), &lim, &fp),
			ISTH_WIRE_OK);
		if (fp.hdr.round == 4) {
			to_group++;
			cr_expect_eq(fp.addr.dst_ip, 0xefc000c1);
			cr_expect_arr_eq(f, gmac, 6);
			/* the message is what the island sent, byte for byte */
			cr_expect_eq(rte_pktmbuf_pkt_len(out[i]) - 42, rte_pktmbuf_pkt_len(in[0]));
			cr_expect_arr_eq(f + 42, rte_pktmbuf_mtod(in[fp.hdr.chunk], uint8_t *),
				rte_pktmbuf_data_len(in[fp.hdr.chunk]));
		} else {
			to_peers++;
			cr_expect(fp.addr.dst_ip == 0x0a000101 || fp.addr.dst_ip == 0x0a000103);
		}
	}
	cr_expect_eq(to_group, 2);
	cr_expect_eq(to_peers, 2);
	rte_pktmbuf_free_bulk(out, n_out);
	rte_pktmbuf_free_bulk(in, 3);
	isth_backend_destroy(be);
}

Test(backend, create_refuses_bad_conf, .init = eal_up, .fini = eal_down)
{
	struct isth_backend_conf c;

	memset(&c, 0, sizeof(c));
	cr_expect_null(isth_backend_create("sw", &c));
	cr_expect_eq(rte_errno, EINVAL);
	c.agg_pool = pool;
	c.n_islands = 4;
	c.island = 1;
	c.max_elems = ELEMS;
	c.max_chunks = 16;
	c.mem_bytes = 1 << 16;
	cr_expect_null(isth_backend_create("gpu", &c));
	cr_expect_eq(rte_errno, ENOENT);
	c.island = 4;
	cr_expect_null(isth_backend_create("sw", &c));
	cr_expect_eq(rte_errno, EINVAL);
	cr_expect_str_eq(isth_backend_names()[0], "sw");
	isth_backend_destroy(NULL);
}

/* Emitted chunks of @g[0..n) as a bitmask of chunk ids (< 64). */
static uint64_t
chunks_of(const struct got *g, unsigned int n)
{
	uint64_t c = 0;

	for (unsigned int i = 0; i < n; i++)
		c |= 1ull << g[i].chunk;
	return c;
}

ParameterizedTestParameters(backend, eviction_reasons)
{
	return cr_make_param_array(struct be_name, backends, RTE_DIM(backends));
}

/*
 * Each eviction reason, provoked on purpose, at the step it must happen,
 * with its counter. Four slots and a reserve of one: the fourth live chunk
 * evicts the oldest (conflict_pool).
 */
ParameterizedTest(struct be_name *b, backend, eviction_reasons, .init = eal_up, .fini = eal_down)
{
	const uint64_t expected = (1u << 1) | (1u << 2);
	unsigned int avail = rte_mempool_avail_count(pool);
	struct isth_backend *be = make(b->name, 4 * ELEMS * 4, 1000);
	struct isth_backend_caps caps;
	struct isth_wire_pkt parsed[8];
	struct rte_mbuf *m[8];
	struct got g[8];
	unsigned int k;

	isth_backend_caps(be, &caps);
	cr_assert_eq(caps.n_slots, 4);
	cr_assert_eq(isth_backend_set_round(be, JOB, 1, expected, NULL, 0), 0);
	/* complete: chunk 0 from both; chunk 1 from one */
	m[0] = data_frame(1, 1, 0, &parsed[0]);
	m[1] = data_frame(2, 1, 0, &parsed[1]);
	m[2] = data_frame(1, 1, 1, &parsed[2]);
	aggregate(be, m, parsed, 3, 10, 3);
	k = drain_all(be, 10, g, 8);
	cr_assert_eq(k, 1);
	cr_expect_eq(g[0].chunk, 0);
	cr_expect_eq(g[0].bitmap, expected);
	cr_expect_eq(g[0].flags & ISTH_WIRE_F_PARTIAL, 0);
	expect_sum(&g[0]);
	cr_expect_eq(stat(be, "completed"), 1);
	/* timeout: chunk 1 arrived at 10, times out at 1010, not 1009 */
	cr_expect_eq(drain_all(be, 1009, g, 8), 0);
	k = drain_all(be, 1010, g, 8);
	cr_assert_eq(k, 1);
	cr_expect_eq(g[0].chunk, 1);
	cr_expect_eq(g[0].bitmap, 1u << 1);
	cr_expect_neq(g[0].flags & ISTH_WIRE_F_PARTIAL, 0);
	expect_sum(&g[0]);
	cr_expect_eq(stat(be, "partial_timeout"), 1);
	/* conflict_pool: chunks 2, 3, 4 fill what the reserve leaves; 5
	 * evicts 2, the oldest */
	for (unsigned int i = 0; i < 4; i++)
		m[i] = data_frame(1, 1, 2 + i, &parsed[i]);
	aggregate(be, m, parsed, 4, 2000, 4);
	k = drain_all(be, 2000, g, 8);
	cr_assert_eq(k, 1);
	cr_expect_eq(g[0].chunk, 2);
	cr_expect_eq(g[0].bitmap, 1u << 1);
	cr_expect_neq(g[0].flags & ISTH_WIRE_F_PARTIAL, 0);
	cr_expect_eq(stat(be, "partial_conflict_pool"), 1);
	cr_expect_eq(stat(be, "partial_conflict_bucket"), 0);
	cr_expect_leq(stat(be, "mem_hwm"), caps.mem_bytes);
	cr_expect_eq(stat(be, "slots_in_use"), 3);
	/* flush: the three live chunks */
	isth_backend_flush(be);
	k = drain_all(be, 2001, g, 8);
	cr_assert_eq(k, 3);
	cr_expect_eq(chunks_of(g, k), (1u << 3) | (1u << 4) | (1u << 5));
	for (unsigned int i = 0; i < k; i++) {
		cr_expect_eq(g[i].bitmap, 1u << 1);
		expect_sum(&g[i]);
	}
	cr_expect_eq(stat(be, "partial_flush"), 3);
	cr_expect_eq(stat(be, "slots_in_use"), 0);
	cr_expect_eq(stat(be, "mem_in_use"), 0);
	cr_expect_eq(stat(be, "agg_msgs"), 6);
	isth_backend_destroy(be);
	cr_expect_eq(rte_mempool_avail_count(pool), avail, "mbufs leaked");
}

ParameterizedTestParameters(backend, counters_account)
{
	return cr_make_param_array(struct be_name, backends, RTE_DIM(backends));
}

/*
 * Every contribution lands in exactly one place: summed (and then in an
 * emitted bitmap) or under one refusal counter. Rounds 1..5 published with
 * a window of 4 make round 1 stale.
 */
ParameterizedTest(struct be_name *b, backend, counters_account, .init = eal_up, .fini = eal_down)
{
	static const char *const drops[] = {
		"duplicate",
		"duplicate_emitted",
		"unexpected_sender",
		"stale_round",
		"unknown_round",
		"unknown_job",
		"mismatch",
		"bad_input",
		"no_slot",
		"chunk_closed",
	};
	const uint64_t expected = (1u << 1) | (1u << 2) | (1u << 3);
	unsigned int avail = rte_mempool_avail_count(pool);
	struct isth_backend *be = make(b->name, 1 << 20, 1000000);
	uint64_t summed = 0, dropped = 0;
	struct isth_wire_pkt parsed[16];
	struct rte_mbuf *m[16];
	struct got g[16];
	unsigned int n = 0, k;

	for (uint32_t r = 1; r <= 5; r++)
		cr_assert_eq(isth_backend_set_round(be, JOB, r, expected, NULL, 0), 0);
	m[n] = data_frame(1, 1, 0, &parsed[n]);
	n++; /* stale */
	m[n] = data_frame(1, 5, 0, &parsed[n]);
	n++;
	m[n] = data_frame(1, 5, 0, &parsed[n]);
	n++; /* duplicate */
	m[n] = data_frame(4, 5, 0, &parsed[n]);
	n++; /* unexpected */
	m[n] = data_frame(2, 5, 0, &parsed[n]);
	n++;
	m[n] = data_frame(3, 5, 0, &parsed[n]);
	n++; /* completes 0 */
	m[n] = data_frame(3, 5, 0, &parsed[n]);
	n++; /* duplicate_emitted */
	m[n] = data_frame(2, 9, 1, &parsed[n]);
	n++; /* unknown round */
	m[n] = job_frame(JOB + 3, 2, 5, 1, &parsed[n]);
	n++; /* unknown job */
	m[n] = data_frame(2, 4, 1, &parsed[n]);
	n++;
	m[n] = data_frame(3, 3, 2, &parsed[n]);
	n++;
	aggregate(be, m, parsed, n, 50, 5);
	cr_expect_eq(stat(be, "stale_round"), 1);
	cr_expect_eq(stat(be, "duplicate"), 1);
	cr_expect_eq(stat(be, "unexpected_sender"), 1);
	cr_expect_eq(stat(be, "duplicate_emitted"), 1);
	cr_expect_eq(stat(be, "unknown_round"), 1);
	cr_expect_eq(stat(be, "unknown_job"), 1);
	isth_backend_flush(be);
	k = drain_all(be, 60, g, 16);
	cr_assert_eq(k, 3);
	for (unsigned int i = 0; i < k; i++) {
		summed += (uint64_t)__builtin_popcountll(g[i].bitmap);
		expect_sum(&g[i]);
	}
	for (unsigned int i = 0; i < RTE_DIM(drops); i++)
		dropped += stat(be, drops[i]);
	cr_expect_eq(stat(be, "accepted"), summed);
	cr_expect_eq(summed + dropped, n, "a contribution is unaccounted for");
	cr_expect_eq(stat(be, "completed"), 1);
	cr_expect_eq(stat(be, "partial_flush"), 2);
	cr_expect_eq(stat(be, "agg_msgs"), 3);
	isth_backend_destroy(be);
	cr_expect_eq(rte_mempool_avail_count(pool), avail, "mbufs leaked");
}

Test(backend, fpga_refuses_absent_device, .init = eal_up, .fini = eal_down)
{
	struct isth_backend_conf c;

	memset(&c, 0, sizeof(c));
	c.agg_pool = pool;
	c.n_islands = 4;
	c.max_elems = ELEMS;
	c.max_chunks = 16;
	c.mem_bytes = 1 << 16;
	c.device = "/isth-be-test-nobody-here";
	cr_expect_null(isth_backend_create("fpga", &c));
	cr_expect_eq(rte_errno, ENODEV);
	c.device = "0000:3b:00.0"; /* vfio transport: not built here */
	cr_expect_null(isth_backend_create("fpga", &c));
	cr_expect_eq(rte_errno, ENOTSUP);
	cr_expect_str_eq(isth_backend_names()[1], "fpga");
}

/* The device's HBM is a hard limit: a budget above it is refused. */
Test(backend, fpga_budget_above_hbm, .init = eal_up, .fini = eal_down)
{
	struct isth_fpga_model_params mp = {.replace = 1};
	struct isth_backend_conf c;

	snprintf(model_name, sizeof(model_name), "/isth-be-test-%d", getpid());
	mp.shm_name = model_name;
	mp.hbm_bytes = 1 << 20;
	model = isth_fpga_model_create(&mp);
	cr_assert_not_null(model);
	cr_assert_eq(isth_fpga_model_start(model), 0);
	memset(&c, 0, sizeof(c));
	c.agg_pool = pool;
	c.n_islands = 4;
	c.max_elems = ELEMS;
	c.max_chunks = 16;
	c.device = model_name;
	c.timeout_ns = 1000;
	c.mcast.src_port = ISTH_WIRE_PORT;
	c.mcast.hdr_pool = hdr_pool;
	c.mcast.clone_pool = hdr_pool;
	c.mcast.copy_pool = pool;
	c.mem_bytes = (1 << 20) + 1;
	cr_expect_null(isth_backend_create("fpga", &c));
	cr_expect_eq(rte_errno, EINVAL);
	c.mem_bytes = 1 << 20;
	struct isth_backend *be = isth_backend_create("fpga", &c);
	struct isth_backend_caps caps;

	cr_assert_not_null(be, "%s", rte_strerror(rte_errno));
	isth_backend_caps(be, &caps);
	cr_expect_eq(caps.n_slots, (1u << 20) / (ELEMS * 4));
	cr_expect_eq(caps.mem_bytes, 1u << 20);
	isth_backend_destroy(be);
}
