/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fan-out cost: zero-copy (header mbuf + indirect clone) against deep copy
 * (one linear frame per destination), D = 1, 2, 4, 8 destinations, 1 KiB
 * of elements per message (1064-byte isthmus message, 1106-byte frames),
 * bursts of 32 packets, measured side by side in one run: repetitions
 * interleave every (mode, D) pair so both see the same machine state, and
 * the median repetition is reported.
 *
 * "fanout" is the cycles of isth_mcast_fanout_burst() alone: table load,
 * header/clone/copy allocation, header writes, payload copy (COPY).
 * "free" is rte_pktmbuf_free_bulk() of its output, what TX completion
 * costs (for zero-copy: header, clone and the payload refcnt). Hot: the
 * same 32 payloads every burst (in L1/L2). Cold: 8192 payloads in
 * rotation (about 18 MB of mbufs, past L2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "isth_mcast.h"
#include "isth_wire.h"
#include "isth_test_eal.h"

#define BURST 32
#define MAX_D 8
#define N_HOT BURST
#define N_COLD 8192
#define BURSTS_PER_REP 200
#define REPS 31
#define ELEMS 256 /* 1 KiB of int32 */

static const unsigned int dests[] = {1, 2, 4, 8};
#define N_D RTE_DIM(dests)

struct sample {
	uint64_t fanout;
	uint64_t freed;
};

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
median(uint64_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static struct rte_mempool *
mkpool(const char *name, unsigned int n, uint16_t room)
{
	struct rte_mempool *mp;

	mp = rte_pktmbuf_pool_create(name, n, 256, 0, room, rte_socket_id());
	if (mp == NULL)
		rte_exit(1, "pool %s: %s\n", name, rte_strerror(rte_errno));
	return mp;
}

static struct rte_mbuf **
mkmsgs(struct rte_mempool *mp, unsigned int n)
{
	static uint8_t buf[2048];
	struct rte_mbuf **v = calloc(n, sizeof(*v));
	uint32_t el[ELEMS];
	struct isth_wire_hdr h;
	unsigned int i;
	int size;

	memset(&h, 0, sizeof(h));
	h.type = ISTH_WIRE_DATA;
	h.dtype = ISTH_WIRE_DTYPE_INT32;
	h.count = ELEMS;
	h.bitmap = 1;
	for (i = 0; i < ELEMS; i++)
		el[i] = i;
	size = isth_wire_build_msg(buf, sizeof(buf), &h, el, sizeof(el), NULL);
	if (v == NULL || size < 0)
		rte_exit(1, "message\n");
	for (i = 0; i < n; i++) {
		v[i] = rte_pktmbuf_alloc(mp);
		if (v[i] == NULL)
			rte_exit(1, "payload pool too small\n");
		memcpy(rte_pktmbuf_append(v[i], (uint16_t)size), buf, size);
	}
	return v;
}

/* One repetition: BURSTS_PER_REP bursts, cycles per input packet. */
static struct sample
run(struct isth_mcast *mc, struct rte_mbuf **pkts, unsigned int n_pkts, unsigned int *cursor)
{
	struct rte_mbuf *out[BURST * MAX_D];
	uint64_t t0, t1, t2, fo = 0, fr = 0;
	struct sample s;
	uint16_t n_out;
	unsigned int b;

	for (b = 0; b < BURSTS_PER_REP; b++) {
		struct rte_mbuf **in = pkts + *cursor;

		*cursor = (*cursor + BURST) % n_pkts;
		t0 = rte_rdtsc();
		if (isth_mcast_fanout_burst(mc, in, BURST, out, RTE_DIM(out), &n_out) != BURST)
			rte_exit(1, "short fan-out\n");
		t1 = rte_rdtsc();
		rte_pktmbuf_free_bulk(out, n_out);
		t2 = rte_rdtsc();
		fo += t1 - t0;
		fr += t2 - t1;
	}
	s.fanout = fo / (BURSTS_PER_REP * BURST);
	s.freed = fr / (BURSTS_PER_REP * BURST);
	return s;
}

int
main(int argc, char **argv)
{
	static uint64_t fo[2][N_D][REPS], fr[2][N_D][REPS], tot[2][N_D][REPS];
	static const char *const mode_names[2] = {"zerocopy", "copy"};
	struct rte_mempool *pkt_pool, *hdr_pool, *clone_pool, *copy_pool;
	struct isth_mcast *mc[2][N_D];
	uint64_t med[2][N_D];
	struct isth_mcast_peer peers[MAX_D];
	struct rte_mbuf **hot, **cold;
	struct isth_mcast_stats st;
	unsigned int m, d, r, i, set;
	char prefix[64];
	char *eal_argv[] = {
		argv[0],
		"-l",
		"0",
		"--no-huge",
		"-m",
		"256",
		"--no-pci",
		"--no-telemetry",
		prefix,
		"--log-level=*:error",
		NULL,
	};

	(void)argc;
	/* what a run killed before its cleanup left (a second run
	 * beside this one keeps its own: its pid is alive) */
	isth_test_reap_stale("/var/run/dpdk", "isth-mcast-bench-");
	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-mcast-bench-%d", (int)getpid());
	if (rte_eal_init((int)RTE_DIM(eal_argv) - 1, eal_argv) < 0)
		rte_exit(1, "EAL init\n");

	pkt_pool = mkpool("pkt", N_COLD + N_HOT + 512, 2048 + 128);
	hdr_pool = mkpool("hdr", 4 * BURST * MAX_D, RTE_PKTMBUF_HEADROOM + 64);
	clone_pool = mkpool("clone", 4 * BURST * MAX_D, 0);
	copy_pool = mkpool("copy", 4 * BURST * MAX_D, 2048 + 128);
	hot = mkmsgs(pkt_pool, N_HOT);
	cold = mkmsgs(pkt_pool, N_COLD);

	for (i = 0; i < MAX_D; i++) {
		memset(&peers[i], 0, sizeof(peers[i]));
		peers[i].island = (uint8_t)(i + 1);
		peers[i].mac[0] = 0x02;
		peers[i].mac[5] = (uint8_t)(i + 1);
		peers[i].ip = 0x0a000001u + i + 1;
		peers[i].port = ISTH_WIRE_PORT;
	}
	for (m = 0; m < 2; m++) {
		for (d = 0; d < N_D; d++) {
			struct isth_mcast_conf c = {
				.socket_id = (int)rte_socket_id(),
				.island = 0,
				.src_mac = {0x02, 0, 0, 0, 0, 0x01},
				.src_ip = 0x0a000001u,
				.src_port = ISTH_WIRE_PORT,
				.mode = m == 0 ? ISTH_MCAST_ZEROCOPY : ISTH_MCAST_COPY,
				.hdr_pool = hdr_pool,
				.clone_pool = clone_pool,
				.copy_pool = copy_pool,
			};

			mc[m][d] = isth_mcast_create(&c);
			if (mc[m][d] == NULL ||
				isth_mcast_publish(mc[m][d], 1, peers, dests[d]) != 0)
				rte_exit(1, "mcast setup\n");
		}
	}

	printf("mcast fan-out, %u-byte messages (1 KiB int32 + 40-byte "
	       "header), bursts of %u, median of %u reps x %u bursts, TSC "
	       "%.2f GHz\n",
		(unsigned int)(ISTH_WIRE_HDR_SIZE + ELEMS * 4), BURST, REPS, BURSTS_PER_REP,
		rte_get_tsc_hz() / 1e9);
	for (set = 0; set < 2; set++) {
		struct rte_mbuf **pkts = set == 0 ? hot : cold;
		unsigned int n_pkts = set == 0 ? N_HOT : N_COLD, cursor = 0;

		/* Warm-up: fill caches, pool caches, branch predictors. */
		for (m = 0; m < 2; m++)
			for (d = 0; d < N_D; d++)
				run(mc[m][d], pkts, n_pkts, &cursor);
		for (r = 0; r < REPS; r++) {
			for (d = 0; d < N_D; d++) {
				for (m = 0; m < 2; m++) {
					struct sample s;

					s = run(mc[m][d], pkts, n_pkts, &cursor);
					fo[m][d][r] = s.fanout;
					fr[m][d][r] = s.freed;
					tot[m][d][r] = s.fanout + s.freed;
				}
			}
		}

		printf("\n%s payloads (%s)\n", set == 0 ? "hot" : "cold",
			set == 0 ? "32 messages, cache-resident"
				 : "8192 messages in rotation, past L2");
		printf("%-9s %2s %8s %8s %8s %10s %12s\n", "mode", "D", "fanout", "free", "total",
			"per-dest", "per-extra");
		printf("%-9s %2s %8s %8s %8s %10s %12s\n", "", "", "cyc/pkt", "cyc/pkt", "cyc/pkt",
			"cyc/copy", "cyc/dest");
		for (m = 0; m < 2; m++) {
			for (d = 0; d < N_D; d++) {
				uint64_t a = median(fo[m][d], REPS);
				uint64_t b = median(fr[m][d], REPS);
				uint64_t t = median(tot[m][d], REPS);

				med[m][d] = t;
				printf("%-9s %2u %8lu %8lu %8lu %10.1f ", mode_names[m], dests[d],
					(unsigned long)a, (unsigned long)b, (unsigned long)t,
					(double)t / dests[d]);
				if (d == 0)
					printf("%12s\n", "-");
				else
					printf("%12.1f\n",
						((double)t - (double)med[m][0]) / (dests[d] - 1));
			}
		}
		printf("copy / zerocopy, total cycles per packet:");
		for (d = 0; d < N_D; d++)
			printf("  D=%u %.2fx", dests[d], (double)med[1][d] / (double)med[0][d]);
		printf("\n");
	}

	for (m = 0; m < 2; m++) {
		for (d = 0; d < N_D; d++) {
			isth_mcast_stats_get(mc[m][d], &st);
			if (st.copies != st.pkts * dests[d])
				rte_exit(1, "drops during the benchmark\n");
			isth_mcast_destroy(mc[m][d]);
		}
	}
	rte_pktmbuf_free_bulk(hot, N_HOT);
	rte_pktmbuf_free_bulk(cold, N_COLD);
	free(hot);
	free(cold);
	isth_test_eal_cleanup();
	return 0;
}
