/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Backends side by side: 1 KiB fp32 contributions (256 elements) from 8
 * senders, aggregated by "sw" (lib/agg on this lcore) and by "fpga" (the
 * driver plus the device model on its own thread, unlimited and then with
 * a 200 MB/s throughput limit), in one run. The frame handling (mbuf
 * allocation, copy of a template, header patch) is the same for all.
 * The fpga figures are properties of the model on this host, not of any
 * FPGA.
 */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "isth_backend.h"
#include "isth_fpga_model.h"
#include "isth_wire.h"
#include "isth_test_eal.h"

#define SENDERS 8
#define ELEMS 256
#define CHUNKS 1024
#define BURST 32
#define JOB 1

static struct rte_mempool *pool, *hdr_pool;
static struct isth_wire_limits lim;
static uint8_t tmpl[SENDERS][2048];
static size_t tmpl_len;
static struct isth_wire_pkt tmpl_pkt[SENDERS];

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

static void
build_templates(void)
{
	struct isth_wire_addr a = {
		.src_ip = 0x0a000002,
		.dst_ip = 0x0a000001,
		.src_port = ISTH_WIRE_PORT,
		.dst_port = ISTH_WIRE_PORT,
	};
	float body[ELEMS];
	size_t hs = isth_wire_frame_hdr_size(&a);

	for (unsigned int s = 0; s < SENDERS; s++) {
		struct isth_wire_hdr h = {
			.type = ISTH_WIRE_DATA,
			.dtype = ISTH_WIRE_DTYPE_FP32,
			.sender = (uint8_t)(s + 1),
			.count = ELEMS,
			.job = JOB,
			.bitmap = 1ull << (s + 1),
		};
		int n;

		for (unsigned int i = 0; i < ELEMS; i++)
			body[i] = (float)(s + 1) * 0.5f + (float)i;
		n = isth_wire_build_msg(
			tmpl[s] + hs, sizeof(tmpl[s]) - hs, &h, body, sizeof(body), NULL);
		isth_wire_put_frame_hdr(tmpl[s], sizeof(tmpl[s]), &a, (size_t)n);
		tmpl_len = hs + (size_t)n;
		if (isth_wire_parse_frame(tmpl[s], tmpl_len, &lim, &tmpl_pkt[s]) != ISTH_WIRE_OK)
			rte_exit(1, "template does not parse\n");
	}
}

struct result {
	double contrib_per_s;
	double gbit_per_s; /* DATA payload bits summed */
	uint64_t accepted, aggs, refused;
};

static unsigned int
drain(struct isth_backend *be, uint64_t now)
{
	struct rte_mbuf *out[64];
	unsigned int n, total = 0;

	while ((n = isth_backend_drain(be, now, out, 64)) > 0) {
		rte_pktmbuf_free_bulk(out, n);
		total += n;
	}
	return total;
}

static struct result
run(const char *name, const char *device, unsigned int rounds)
{
	const uint64_t expected = ((1ull << SENDERS) - 1) << 1;
	struct isth_wire_pkt parsed[BURST];
	struct rte_mbuf *m[BURST];
	struct isth_backend_conf c;
	struct isth_backend *be;
	struct result res;
	uint64_t t0, t1, aggs = 0, hz = rte_get_tsc_hz();
	unsigned int k = 0;

	memset(&c, 0, sizeof(c));
	c.socket_id = SOCKET_ID_ANY;
	c.island = 0;
	c.n_islands = SENDERS + 1;
	c.max_elems = ELEMS;
	c.max_chunks = CHUNKS;
	c.mem_bytes = 64u << 20;
	c.timeout_ns = 10ull * 1000000000ull;
	c.window = 4;
	c.agg_pool = pool;
	c.mcast.socket_id = SOCKET_ID_ANY;
	c.mcast.src_port = ISTH_WIRE_PORT;
	c.mcast.hdr_pool = hdr_pool;
	c.mcast.clone_pool = hdr_pool;
	c.mcast.copy_pool = pool;
	c.device = device;
	be = isth_backend_create(name, &c);
	if (be == NULL)
		rte_exit(1, "create %s: %s\n", name, rte_strerror(rte_errno));
	t0 = rte_rdtsc();
	for (uint32_t r = 1; r <= rounds; r++) {
		while (isth_backend_set_round(be, JOB, r, expected, NULL, 0) == -EBUSY)
			drain(be, r);
		for (uint32_t ch = 0; ch < CHUNKS; ch++) {
			for (unsigned int s = 0; s < SENDERS; s++) {
				struct rte_mbuf *b = rte_pktmbuf_alloc(pool);
				uint8_t *p;
				ptrdiff_t off;

				if (b == NULL)
					rte_exit(1, "pool empty\n");
				p = (uint8_t *)rte_pktmbuf_append(b, (uint16_t)tmpl_len);
				memcpy(p, tmpl[s], tmpl_len);
				off = tmpl_pkt[s].msg - tmpl[s];
				isth_wire_set_hdr_round(p + off, r);
				isth_wire_set_hdr_chunk(p + off, ch);
				parsed[k] = tmpl_pkt[s];
				parsed[k].hdr.round = r;
				parsed[k].hdr.chunk = ch;
				parsed[k].msg = p + off;
				parsed[k].payload = p + off + ISTH_WIRE_HDR_SIZE;
				m[k++] = b;
				if (k == BURST) {
					isth_backend_aggregate_burst(be, m, parsed, k, r);
					k = 0;
					aggs += drain(be, r);
					/* Keep within the device's ring instead
					 * of dropping (sw: no gauge, no wait). */
					while (stat_or(be, "dev_pending", 0) > 512)
						aggs += drain(be, r);
				}
			}
		}
	}
	if (k)
		isth_backend_aggregate_burst(be, m, parsed, k, rounds);
	do {
		aggs += drain(be, rounds);
	} while (stat_or(be, "dev_pending", 0) != 0 || drain(be, rounds) != 0);
	t1 = rte_rdtsc();
	res.accepted = stat_or(be, "accepted", 0);
	res.refused = (uint64_t)rounds * CHUNKS * SENDERS - res.accepted;
	res.aggs = aggs;
	res.contrib_per_s = (double)res.accepted * (double)hz / (double)(t1 - t0);
	res.gbit_per_s = res.contrib_per_s * ELEMS * 4 * 8 / 1e9;
	isth_backend_destroy(be);
	return res;
}

static void
print(const char *what, const struct result *r, const struct result *base)
{
	printf("%-26s %10.0f contrib/s %7.2f Gbit/s  x%.2f of sw   (accepted %" PRIu64
	       ", refused %" PRIu64 ", AGGs %" PRIu64 ")\n",
		what, r->contrib_per_s, r->gbit_per_s, r->contrib_per_s / base->contrib_per_s,
		r->accepted, r->refused, r->aggs);
}

int
main(int argc, char **argv)
{
	char prefix[64], name[64];
	char *eal[] = {"backend_bench", "--no-huge", "-m", "256", "--no-pci", "--no-telemetry",
		"--log-level=lib.*:error", "-l", "0", prefix};
	struct isth_fpga_model_params mp = {.replace = 1};
	struct isth_fpga_model *model;
	struct result sw, fpga, fpga_lim;
	unsigned int rounds = argc > 1 ? (unsigned int)atoi(argv[1]) : 64;

	/* what a run killed before its cleanup left (a second run
	 * beside this one keeps its own: its pid is alive) */
	isth_test_reap_stale("/var/run/dpdk", "isth-bebench-");
	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-bebench-%d", getpid());
	if (rte_eal_init(RTE_DIM(eal), eal) < 0)
		rte_exit(1, "EAL: %s\n", rte_strerror(rte_errno));
	pool = rte_pktmbuf_pool_create("bench_pool", 8191, 256, 0, 2048 + 128, SOCKET_ID_ANY);
	hdr_pool = rte_pktmbuf_pool_create("bench_hdr", 1023, 0, 0, 256, SOCKET_ID_ANY);
	if (pool == NULL || hdr_pool == NULL)
		rte_exit(1, "pools: %s\n", rte_strerror(rte_errno));
	isth_wire_limits_init(&lim, SENDERS + 1, 1500);
	build_templates();

	snprintf(name, sizeof(name), "/isth-bebench-%d", getpid());
	mp.shm_name = name;
	model = isth_fpga_model_create(&mp);
	if (model == NULL || isth_fpga_model_start(model) != 0)
		rte_exit(1, "model: %s\n", strerror(errno));

	printf("backend bench: %u rounds x %u chunks x %u senders, %u B fp32 each, 2 threads for "
	       "fpga (driver + model)\n",
		rounds, CHUNKS, SENDERS, ELEMS * 4);
	sw = run("sw", NULL, rounds);
	fpga = run("fpga", name, rounds);
	isth_fpga_model_set_rate(model, 200000000ull);
	fpga_lim = run("fpga", name, rounds > 8 ? 8 : rounds);
	isth_fpga_model_set_rate(model, 0);
	print("sw (lib/agg, this lcore)", &sw, &sw);
	print("fpga (model, unlimited)", &fpga, &sw);
	print("fpga (model, 200 MB/s cap)", &fpga_lim, &sw);
	printf("fpga with the limit: %.3f GB/s of H2D messages (limit 0.200; %zu B each incl. "
	       "header)\n",
		fpga_lim.contrib_per_s * (double)(tmpl_len - 42) / 1e9, tmpl_len - 42);
	printf("note: the fpga figures are properties of the device model (a thread running "
	       "lib/agg behind\n"
	       "      shared-memory rings on this host), not of an FPGA.\n");
	isth_fpga_model_destroy(model);
	rte_mempool_free(pool);
	rte_mempool_free(hdr_pool);
	isth_test_eal_cleanup();
	return 0;
}
