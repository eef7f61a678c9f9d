/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The appliance benchmark: the real isthmusd data path (isthd_worker_poll(),
 * software backend) on net_ring ports, fed by a generator in the same
 * process on the same lcore, against two baselines on the same ports and
 * the same packets, measured side by side in one run:
 *
 *   pipeline   isthd_worker_poll(): RX both ports, parse (the UDP checksum
 *              the peers' DATA carries by default with auth off verified
 *              in software),
 *              aggregate (lib/agg), build AGGs, frame them, number them
 *              (resend ring), TX
 *   nic-csum   the same with the UDP checksums checked by the NIC (frames
 *              marked good as a PMD with the RX offload marks them, the
 *              edge's wan_rx_csum on): what [wan] udp_checksum = no costs
 *   io-fwd     rte_eth_rx_burst(WAN) -> rte_eth_tx_burst(access): what
 *              dpdk-testpmd io forwarding does; touches no packet byte
 *   read-fwd   the same, but first reads every payload byte once (a vector
 *              sum of the 1 KiB payload at its fixed offset): the floor of
 *              any aggregator, since every byte must be read
 *   pipeline+auth  the same edge with [auth] on (wire version 2): every
 *              DATA carries a WAN tag list (a 16-byte AES-GMAC tag per
 *              receiving edge, 8 here) of which the worker verifies its
 *              own in bursts (ipsec-mb) with its replay window, every AGG
 *              is sealed. The edge is set up with auth on, at an MTU
 *              larger by the list, so that a chunk is 256 elements either way; the
 *              plain pipeline runs on the same edge with auth switched off
 *              (its limits and flag), on the version 1 frames.
 *
 * Traffic: 9 islands, one clique of all 9; the edge serves island 0 and
 * expects the 8 peers. Each DATA is 1 KiB of fp32 (256 elements) in a
 * 1106-byte frame. A round has K chunks (default 2048); every (round,
 * chunk) gets exactly 8 contributions, so every slot completes. Two
 * arrival layouts: "aligned" (the 8 copies of a chunk arrive together:
 * few live accumulators) and "skewed" (sender s starts its round at chunk
 * s * K / 8: 7/8 of the round, 1.8 MiB of accumulators, is live; with
 * the frames streaming through, more than the 2 MiB L2). Frames sit in a
 * compact pool (1.4 KB per mbuf: 23 MB at K = 2048, mostly L3 here;
 * --chunks 8192 puts them in DRAM). Passes more than 8x the median were
 * preempted by the shared host and are left out with their packets.
 *
 * Generator: the K * 8 frames are built once, in a pool of their own that
 * holds nothing else. They are fed with refcnt 1, as a NIC hands over
 * what it received, so the edge's free returns each to the pool (an
 * earlier harness kept a reference of its own on every frame, which made
 * every free of an input an atomic decrement that no edge pays); before
 * each round the generator takes them all back out (reclaim(): a frame
 * leaked or freed twice stops the run). Before each round the generator
 * also writes the round number into every frame's
 * header (chunk ids are reused by advancing the round), publishes the
 * round's tables to the backend (the controller's job), then, between
 * passes, puts 32 frames on the WAN RX ring. Only the isthd_worker_poll()
 * (or baseline) calls are inside rdtsc; refilling, draining the access TX
 * ring and freeing what leaves are outside.
 *
 * Stages: micro-runs over the same frames in the same order time rx_burst,
 * isth_wire_parse_frame(), isth_agg_add_burst() and the summation kernel
 * alone (lookup = add_burst - kernel), AGG building (drain, mbuf, header,
 * copy-out, release), AGG sending (frame headers, resend ring push, TX)
 * and freeing the inputs.
 *
 * Workers: the same edge with two workers (isthmusd -l 0,1,2:
 * worker 1, on the other lcore, sums the chunks c % 2 == 1 that worker 0
 * steers to it) against one, interleaved: each round is timed from its
 * first frame fed to its last AGG out (wall TSC, the generator included,
 * which feeds only while the ring to worker 1 has room), and the cycles
 * each worker spends per DATA it handles (worker 0 inside isthd_worker_poll,
 * worker 1 in passes of isthd_worker_poll that did work). The same with
 * [auth] on (version 2 frames, every DATA verified by worker 0, every AGG
 * sealed by the worker whose stream it is): worker 0's cycles per DATA
 * with two workers, auth on, is the figure sealing per worker changes.
 * The access port has two TX rings, and each two-worker run is made twice,
 * interleaved: worker 1 handing its AGGs to worker 0, which sends them
 * (one TX queue: the fallback), and worker 1 sending them on TX queue 1
 * itself (a TX queue per worker); worker 0's cycles per DATA in the two
 * is what the queue per worker takes off worker 0.
 *
 * Egress (a pacer per worker, doc/notes/isthmusd-design.md "Workers"): the island's own DATA
 * out, after both layouts. Island 0's edge gets its island's K chunks of
 * 1 KiB fp32 (sender 0, from [access] island_ip) on the access RX ring,
 * 32 per pass: worker 0 admits them (round published, shape), then each
 * worker paces the stream with its own pacer (every pacer given round r
 * at ISTH_PACE_MAX_RATE_BPS, started in the past: it never holds a chunk
 * back), keeps it in its WAN repair ring, replicates it to its share of
 * the 8 peers (its backend's fan-out table: all 8 with one worker, by rank
 * with two: peer s, the (s - 1)-th, to worker (s - 1) % 2) and sends it on
 * the WAN. The bench plays the controller
 * (egress_publish: fan-out tables, the round's repair table, the pacers'
 * plans, the round published). Three ways, interleaved: 1 worker (8
 * copies per DATA on worker 0); 2 workers with a WAN TX queue each (the
 * WAN port has two TX rings; worker 1 sends its 4 peers' copies on queue
 * 1); 2 workers through worker 0 (edge.wan_txq = 1: worker 1 hands its
 * copies to worker 0 through its wan_out ring). Per round: each worker's
 * cycles per island DATA it released (its passes that did work), and the
 * wall time from the first frame fed to the last WAN frame out. The WAN
 * TX rings are drained (counted, freed) between passes, outside the
 * timed calls, by the lcore that sends on them, as a NIC's TX
 * completions are freed by the queue's own lcore: worker 1's ring by
 * worker 1 between its passes. Exactly 8 copies per island DATA must
 * leave, on the right queues (else the bench dies); once per way, a
 * correctness run checks every frame: the island's chunk, header and
 * payload intact, to one peer, each peer's chunks in order, on its
 * worker's queue. [wan] tail_copies = 0 (the unasked copies of a
 * round's last chunks would leave during a later run); auth off.
 * --egress-only runs this section alone.
 *
 * --ratio-only: the pipeline, io-fwd and read-fwd loops alone (no auth,
 * stages, workers or egress), for A/B runs of two builds side by side.
 *
 * --huge: the EAL on 2 MiB hugepages (--in-memory), as an edge runs, rather
 * than --no-huge's 4 KiB pages (the default: a test host need not have
 * hugepages). Every cold mbuf, frame and slot then costs a TLB miss less.
 *
 * Medians of interleaved repetitions; TSC cycles. Usage:
 *   bench_isthmusd [--quick] [--chunks K] [--reps N] [--profile N]
 *                  [--egress-only | --ratio-only] [--huge]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <immintrin.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "isth_agg.h"
#include "isth_mbuf.h"
#include "isth_clock.h"
#include "isthd.h"
#include "isth_test_eal.h"

#define N_ISL 9 /* islands; the edge is island 0 */
#define N_SND 8 /* peers sending to it */
#define JOB 7
#define ELEMS 256 /* 1 KiB fp32 */
#define PAYLOAD (ELEMS * 4)
#define MTU 1092 /* max_elems 256 = ELEMS: the edge admits only chunks of the round's shape */
/* version 2: a peer's DATA carries a WAN tag list, the receivers' bitmap
 * and a tag for each of the other 8 islands (8 + 8 x 16 bytes), and the
 * edge leaves room for that list (isth_auth_wan_room): the same 256
 * elements at an MTU larger by the list */
#define LIST (8 + 16 * (N_ISL - 1))
#define MTU_AUTH (MTU + LIST)
#define BURST ISTHD_BURST
/* 1000 s rounds: round 0 runs all along, so the edge never reaches a
 * round's tail and never NACKs its peers on the WAN (a loaded host made a
 * run outlast a 10 s round: "the edge sent DATA to the WAN") */
#define T_NS 1000000000000ull
#define MSG_OFF (ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE)
#define PAY_OFF (MSG_OFF + ISTH_WIRE_HDR_SIZE)
#define FRAME (PAY_OFF + PAYLOAD)
#define FRAME2 (FRAME + LIST) /* version 2: the tag list after the payload */

static struct isthd edge;
static bool eal_is_up; /* die() cleans the EAL up once it is */
static struct rte_ring *a_in, *a_out, *w_in, *w_out;
/* the access port's second TX ring: worker 1's queue in the runs with a
 * TX queue per worker (run_workers, txq 2); a_out is queue 0 */
static struct rte_ring *a_out1;
/* the WAN port's second TX ring: worker 1's queue in the egress runs with
 * a WAN TX queue per worker (run_egress, WAN txq 2); w_out is queue 0 */
static struct rte_ring *w_out1;
static uint16_t port_a, port_w;
static struct rte_mempool *fpool; /* the generator's frames */
static struct rte_mbuf **frames; /* frame of (chunk c, sender s): c * 8 + s - 1 */
static struct rte_mbuf **frames2; /* the same, version 2, sealed by sender s's edge */
static struct rte_mbuf **reclaimed; /* reclaim()'s scratch */
static struct rte_mempool *fpool2;
/* auth: the peers' keys and engine (the generator seals as them), the
 * edge's limits with and without auth, and which the edge runs now */
static struct isth_auth *gkeys;
static struct isth_auth_engine *geng;
static struct isth_wire_limits lim_v1, lim_v2;
static bool cur_auth;
/* the version 1 frames carry UDP checksums, as the peers' edges send them
 * with auth off by default ([wan] udp_checksum); the version 2 frames
 * none, as with auth on by default. cur_nic_csum: the "NIC" has checked
 * them (feed() marks each good, as a PMD with the RX offload on does, and
 * the edge's wan_rx_csum is on): run_pipeline_nic() */
static bool cur_nic_csum;
static uint32_t *order; /* frame indices in arrival order */
static uint8_t *first_of, *last_of; /* position opens / completes its chunk */
static unsigned int K = 2048, NF;
static uint32_t next_round = 2; /* rounds 0, 1: published by the controller */
static char dir[64];
static uint64_t hz;
static volatile uint64_t sink;
/* worker 1's loop runs on lcore 1 (run_workers, run_egress): die() stops
 * it before the EAL is cleaned up */
static volatile bool w1_stop, w1_running;

static void
die(const char *what)
{
	fprintf(stderr, "bench_isthmusd: %s\n", what);
	if (w1_running) {
		w1_stop = true;
		rte_eal_wait_lcore(1);
		w1_running = false;
	}
	/* a failed run must not leave its files in /tmp (those main()
	 * writes) or /var/run/dpdk/<prefix> behind either */
	if (dir[0] != '\0') {
		static const char *const files[] = {"edge.conf", "bench.sched", "bench.keys"};
		char path[128];

		for (unsigned int i = 0; i < RTE_DIM(files); i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
			unlink(path);
		}
		rmdir(dir);
	}
	if (eal_is_up)
		isth_test_eal_cleanup();
	exit(1);
}

static uint64_t
wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double
median(uint64_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n & 1 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Pass log: cycles of each timed column per pass, and the DATA packets the
 * pass was given. The host is shared: a pass that took more than
 * PREEMPT_X times the round's median pass was preempted, and is left out
 * with its packets (counted in pl_dropped).
 */
#define PREEMPT_X 8
#define NCOL 8
static uint64_t *pl_cyc[NCOL], *pl_scratch;
static uint32_t *pl_pkts;
static unsigned int pl_n, pl_cap;
static uint64_t pl_dropped, pl_total;

static void
pl_init(unsigned int cap)
{
	unsigned int c;

	pl_cap = cap;
	for (c = 0; c < NCOL; c++)
		if ((pl_cyc[c] = calloc(cap, sizeof(uint64_t))) == NULL)
			die("pass log");
	pl_scratch = calloc(cap, sizeof(uint64_t));
	pl_pkts = calloc(cap, sizeof(uint32_t));
	if (pl_scratch == NULL || pl_pkts == NULL)
		die("pass log");
}

static void
pl_reset(void)
{
	unsigned int c;

	for (c = 0; c < NCOL; c++)
		memset(pl_cyc[c], 0, pl_cap * sizeof(uint64_t));
	memset(pl_pkts, 0, pl_cap * sizeof(uint32_t));
	pl_n = 0;
}

/* Start pass pl_n with @p pkts DATA packets; returns its index. */
static unsigned int
pl_pass(uint32_t pkts)
{
	if (pl_n == pl_cap)
		die("pass log full");
	pl_pkts[pl_n] = pkts;
	return pl_n++;
}

/* Cycles per DATA packet of columns 0..ncol-1 over the kept passes. */
static void
pl_reduce(unsigned int ncol, double *out)
{
	uint64_t sum[NCOL] = {0}, kept = 0, thr;
	unsigned int i, c, m = 0;

	for (i = 0; i < pl_n; i++) {
		uint64_t t = 0;

		for (c = 0; c < ncol; c++)
			t += pl_cyc[c][i];
		if (pl_pkts[i])
			pl_scratch[m++] = t;
	}
	thr = m ? (uint64_t)(PREEMPT_X * median(pl_scratch, m)) : UINT64_MAX;
	for (i = 0; i < pl_n; i++) {
		uint64_t t = 0;

		for (c = 0; c < ncol; c++)
			t += pl_cyc[c][i];
		pl_total += pl_pkts[i];
		if (t > thr) {
			pl_dropped += pl_pkts[i];
			continue;
		}
		for (c = 0; c < ncol; c++)
			sum[c] += pl_cyc[c][i];
		kept += pl_pkts[i];
	}
	if (kept == 0)
		die("every pass was preempted");
	for (c = 0; c < ncol; c++)
		out[c] = (double)sum[c] / (double)kept;
}

/* Element i of sender s's contribution to chunk c: small integers, so
 * that every fp32 sum is exact whatever the order. */
static float
value(unsigned int s, unsigned int c, unsigned int i)
{
	return (float)((s * 37u + c * 11u + i) & 1023u);
}

/* ---- set-up ---------------------------------------------------------- */

static void
write_files(const char *cfg_path, const char *sched_path)
{
	static const char *const names[N_ISL] = {
		"I0",
		"I1",
		"I2",
		"I3",
		"I4",
		"I5",
		"I6",
		"I7",
		"I8",
	};
	uint64_t all = (1u << N_ISL) - 1, rate = 100000000000ull;
	/* in the past by less than a round: round 0 is current */
	uint64_t epoch = wall_ns() - 1000000000ull;
	struct isth_sched *s;
	char err[256];
	FILE *f;
	int i;

	s = isth_sched_new(
		N_ISL, names, T_NS, epoch, (uint64_t)K * PAYLOAD, PAYLOAD, 64ull << 20, 1);
	if (s == NULL || isth_sched_set_round(s, 0, 1, &all) != 0)
		die("schedule");
	for (i = 0; i < N_ISL; i++)
		if (isth_sched_set_sender(s, 0, i, 0, 1, NULL, &rate) != 0)
			die("schedule sender");
	if (isth_sched_save(s, sched_path, err, sizeof(err)) != 0)
		die(err);
	isth_sched_free(s);

	f = fopen(cfg_path, "w");
	if (f == NULL)
		die("config file");
	fprintf(f,
		"[isthmusd]\nisland = I0\njob = %u\nschedule = %s\nepoch = %" PRIu64 "\n"
		"mtu = %u\nmbufs = 16383\n"
		"[access]\nport = net_ring_access\nip = 10.10.0.1\n"
		"island_ip = 10.10.0.2\nisland_mac = 02:00:00:00:00:02\n"
		"[wan]\nport = net_ring_wan\nip = 10.0.0.1\n"
		"replication = edge\n" /* frames counted per peer (unicast) */
		"gateway_mac = 02:00:00:00:ff:01\n"
		/* the egress runs: no unasked copies of a round's last
		 * chunks 20 ms after it (they would leave during a later
		 * run, which counts exactly 8 frames per island DATA) */
		"tail_copies = 0\n",
		JOB, sched_path, epoch, MTU_AUTH);
	for (i = 1; i < N_ISL; i++)
		fprintf(f, "[peer I%d]\nip = 10.0.0.%d\n", i, i + 1);
	fprintf(f,
		"[agg]\nmemory = 64Mi\ntimeout = 5s\nmax_chunks = %u\n"
		"[resend]\nwindow = 2s\nentries = 4096\nlinger = 0ns\n"
		"[poll]\nidle_polls = 0\n"
		"[telemetry]\nenabled = no\nround_log = no\n"
		"[auth]\nmode = on\nkey_file = %s/bench.keys\n",
		K, dir);
	fclose(f);
}

/* --huge: hugepages (as an edge runs), not --no-huge's 4 KiB pages */
static bool huge;

static void
eal_up(const char *argv0)
{
	char prefix[64];
	char *argv[] = {(char *)(uintptr_t)argv0, huge ? "--in-memory" : "--no-huge", "-m", "1024",
		"--no-pci", "--no-telemetry", "--log-level=lib.*:error", "--lcores=0@0,1@1",
		prefix};

	/* what a run killed before its cleanup left (a second run
	 * beside this one keeps its own: its pid is alive) */
	isth_test_reap_stale("/var/run/dpdk", "isth-bench-");
	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-bench-%d", getpid());
	if (rte_eal_init(RTE_DIM(argv), argv) < 0) {
		char run[PATH_MAX];

		/* the runtime folder a failed init leaves */
		snprintf(run, sizeof(run), "/var/run/dpdk/isth-bench-%d", getpid());
		isth_test_rm_dir(run);
		if (huge)
			fprintf(stderr,
				"--huge: the EAL needs 1 GiB of 2 MiB hugepages: as root, "
				"echo 600 > /proc/sys/vm/nr_hugepages; mount -t hugetlbfs "
				"nodev /dev/hugepages\n");
		die(rte_strerror(rte_errno));
	}
	eal_is_up = true;
	a_in = rte_ring_create("a_in", 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	a_out = rte_ring_create("a_out", 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	a_out1 = rte_ring_create("a_out1", 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	w_in = rte_ring_create("w_in", 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	/* the egress runs put 8 frames per island DATA on the WAN TX rings,
	 * drained between worker 0's passes; worker 1 (its own queue) may
	 * run ahead of the drain: room for a round's frames of one worker */
	w_out = rte_ring_create("w_out", 16384, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	w_out1 = rte_ring_create("w_out1", 16384, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!a_in || !a_out || !a_out1 || !w_in || !w_out || !w_out1)
		die("rings");
	if (rte_eth_from_rings("access", &a_in, 1, (struct rte_ring *[]){a_out, a_out1}, 2, 0) <
			0 ||
		rte_eth_from_rings("wan", &w_in, 1, (struct rte_ring *[]){w_out, w_out1}, 2, 0) < 0)
		die("ring ports");
	hz = rte_get_tsc_hz();
}

/* The K * 8 DATA frames, each held by the generator (refcnt 1). */
static void
build_frames(void)
{
	struct isth_wire_addr a = {
		.dst_mac = {2, 0, 0, 0, 0, 1},
		.src_mac = {2, 0, 0, 0, 0xff, 1},
		.dst_ip = 0x0a000001,
		.src_port = ISTH_WIRE_PORT,
		.dst_port = ISTH_WIRE_PORT,
	};
	float body[ELEMS];
	unsigned int c, s, i;

	NF = K * N_SND;
	/* data room for the frame only: a compact working set, as a NIC
	 * pool sized for the MTU would be */
	/* exactly the frames, no cache: reclaim() counts them back */
	fpool = rte_pktmbuf_pool_create("bench_frames", NF, 0, 0,
		RTE_PKTMBUF_HEADROOM + RTE_ALIGN_CEIL(FRAME, RTE_CACHE_LINE_SIZE), 0);
	frames = calloc(NF, sizeof(*frames));
	fpool2 = rte_pktmbuf_pool_create("bench_frames2", NF, 0, 0,
		RTE_PKTMBUF_HEADROOM + RTE_ALIGN_CEIL(FRAME2, RTE_CACHE_LINE_SIZE), 0);
	frames2 = calloc(NF, sizeof(*frames2));
	reclaimed = calloc(NF, sizeof(*reclaimed));
	if (fpool == NULL || frames == NULL || fpool2 == NULL || frames2 == NULL ||
		reclaimed == NULL)
		die("frame pool");
	for (c = 0; c < K; c++)
		for (s = 1; s <= N_SND; s++) {
			struct isth_wire_hdr h = {
				.type = ISTH_WIRE_DATA,
				.dtype = ISTH_WIRE_DTYPE_FP32,
				.sender = (uint8_t)s,
				.count = ELEMS,
				.job = JOB,
				.round = 0,
				.chunk = c,
				.seq = c,
				.bitmap = 1ull << s,
				.flags = c == K - 1 ? ISTH_WIRE_F_LAST : 0,
			};
			struct rte_mbuf *m = rte_pktmbuf_alloc(fpool);
			uint8_t *p;

			if (m == NULL)
				die("frame alloc");
			for (i = 0; i < ELEMS; i++)
				body[i] = value(s, c, i);
			a.src_ip = 0x0a000001 + s;
			p = (uint8_t *)rte_pktmbuf_append(m, FRAME);
			if (isth_wire_frame_hdr_size(&a) != MSG_OFF ||
				isth_wire_build_msg(p + MSG_OFF, FRAME - MSG_OFF, &h, body,
					sizeof(body), NULL) != (int)(FRAME - MSG_OFF) ||
				isth_wire_put_frame_hdr(p, FRAME, &a, FRAME - MSG_OFF) !=
					(int)FRAME ||
				/* kept up to date by set_round_v1() */
				isth_wire_put_udp_cksum(p, FRAME) != 0)
				die("frame build");
			frames[c * N_SND + s - 1] = m;
			/* the version 2 copy: its tag is written (for each
			 * round) by new_round() */
			h.version = ISTH_WIRE_VERSION_AUTH;
			m = rte_pktmbuf_alloc(fpool2);
			if (m == NULL)
				die("frame alloc (v2)");
			p = (uint8_t *)rte_pktmbuf_append(m, FRAME2);
			if (isth_wire_build_msg(p + MSG_OFF, FRAME2 - MSG_OFF, &h, body,
				    sizeof(body), NULL) != (int)(FRAME - MSG_OFF) ||
				isth_wire_put_frame_hdr(p, FRAME2, &a, FRAME2 - MSG_OFF) !=
					(int)FRAME2)
				die("frame build (v2)");
			frames2[c * N_SND + s - 1] = m;
		}
}

/* Switch the edge between version 1 (auth off) and 2 (auth on): its
 * flag and its parser limits; both give 256-element chunks. */
static void
edge_auth(bool on)
{
	edge.auth.on = on;
	edge.lim = on ? lim_v2 : lim_v1;
	cur_auth = on;
}

/*
 * Arrival order: sender s (0-based j = s - 1) sends chunk (t + j * lag) % K
 * at step t; the 8 senders take turns. lag 0: aligned; K / 8: skewed.
 */
static void
make_order(unsigned int lag)
{
	unsigned int *seen = calloc(K, sizeof(*seen));
	unsigned int t, j, n = 0;

	if (seen == NULL)
		die("order");
	for (t = 0; t < K; t++)
		for (j = 0; j < N_SND; j++) {
			unsigned int c = (t + j * lag) % K;

			order[n] = c * N_SND + j;
			first_of[n] = seen[c] == 0;
			last_of[n] = ++seen[c] == N_SND;
			n++;
		}
	free(seen);
}

/*
 * The frames the edge (or a baseline, or the harness's drain) freed are
 * back in their pool: take them all out again. The pool holds the frames
 * and nothing else, so what comes out is frames[] itself (in another
 * order), bytes and lengths intact: a free of a single-segment mbuf with
 * refcnt 1 writes neither. None back means they are all still held;
 * any other count is a frame leaked or freed twice.
 */
static void
reclaim(struct rte_mempool *p)
{
	unsigned int n = rte_mempool_avail_count(p);

	if (n == 0)
		return;
	if (n != NF || rte_mempool_get_bulk(p, (void **)reclaimed, NF) != 0) {
		fprintf(stderr, "%s: %u of %u frames back\n", p->name, n, NF);
		die("frames leaked or freed twice");
	}
}

/* Ones'-complement add of two 16-bit values. */
static inline uint16_t
oc_add(uint32_t a, uint32_t b)
{
	a += b;
	return (uint16_t)((a & 0xffff) + (a >> 16));
}

/*
 * Round @r into a version 1 frame whose UDP checksum was set at build:
 * the checksum adjusted for the two changed 16-bit words (RFC 1624, eqn.
 * 3: HC' = ~(~HC + ~m + m')), not recomputed, so that the generator
 * touches only the header lines of each frame between rounds, as it did
 * before the frames had checksums (reading every payload here would warm
 * the cache for whichever loop runs next). A result of 0 is sent as
 * 0xffff (RFC 768: 0 means none). check_pipeline() has the edge verify
 * every frame, so a wrong adjustment would stop the run.
 */
static void
set_round_v1(struct rte_mbuf *m, uint32_t r)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *), *msg = f + MSG_OFF, *ck = msg - 2;
	uint32_t old = isth_wire_get_hdr_round(msg);
	uint16_t hc = (uint16_t)(ck[0] << 8 | ck[1]), x;

	isth_wire_set_hdr_round(msg, r);
	x = oc_add((uint16_t)~hc, (uint16_t) ~(old >> 16));
	x = oc_add(x, (uint16_t) ~(old & 0xffff));
	x = oc_add(x, r >> 16);
	x = oc_add(x, r & 0xffff);
	x = (uint16_t)~x;
	if (x == 0)
		x = 0xffff;
	ck[0] = (uint8_t)(x >> 8);
	ck[1] = (uint8_t)x;
}

/* The next round: written into every frame, published to the backend. */
static uint32_t
new_round(bool publish)
{
	uint32_t r = next_round++;
	unsigned int i;

	reclaim(fpool);
	reclaim(fpool2);

	for (i = 0; i < NF; i++)
		set_round_v1(frames[i], r);
	if (cur_auth)
		for (i = 0; i < NF; i++) {
			uint8_t *msg = rte_pktmbuf_mtod(frames2[i], uint8_t *) + MSG_OFF;

			/* each sender's stream: seq = round * K + chunk */
			isth_wire_set_hdr_round(msg, r);
			isth_wire_set_seq(msg, (uint64_t)r * K + i / N_SND);
			if (isth_auth_seal_list(geng, i % N_SND + 1,
				    ((1u << N_ISL) - 1) & ~(1u << (i % N_SND + 1)), msg,
				    FRAME2 - MSG_OFF - LIST,
				    FRAME2 - MSG_OFF) != (int)(FRAME2 - MSG_OFF))
				die("seal");
			/* no UDP checksum: with auth on the edges send none by
			 * default (the tag covers the message) */
		}
	if (publish) {
		struct isth_mcast_peer peers[ISTHD_MAX_PEERS];
		unsigned int n = 0;
		int rc;

		for (i = 0; i < edge.cfg.n_peers; i++) {
			const struct isthd_peer *p = &edge.cfg.peers[i];

			peers[n].island = (uint8_t)isth_sched_island_id(edge.sched, p->name);
			memcpy(peers[n].mac, p->mac, 6);
			peers[n].ip = p->ip;
			peers[n].port = p->port;
			n++;
		}
		while ((rc = isth_backend_set_round(edge.workers[0].be, JOB, r,
				((1u << N_ISL) - 1) & ~1u, peers, n)) == -EBUSY)
			isthd_worker_poll(&edge.workers[0]);
		if (rc < 0)
			die("set_round");
		/* and marked published, as the controller does: the WAN path
		 * refuses DATA of a round not yet published (round_early)
		 * before it may move a replay window */
		__atomic_store_n(&edge.published, (uint64_t)r + 1, __ATOMIC_RELEASE);
	}
	return r;
}

/* Put frames order[pos..pos+n) on the WAN RX ring: whoever consumes them
 * frees them (back to their pool, for reclaim()). */
static unsigned int
feed(unsigned int pos)
{
	struct rte_mbuf *b[BURST];
	unsigned int n = RTE_MIN((unsigned int)BURST, NF - pos), i;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = (cur_auth ? frames2 : frames)[order[pos + i]];

		/* What a PMD's rx_burst writes into each mbuf's first line
		 * (port, offload flags, packet type; the lengths are the
		 * frame's): net_ring writes nothing, and without this every
		 * loop would read a struct colder than any NIC hands over. */
		m->port = port_w;
		m->ol_flags = cur_nic_csum ? RTE_MBUF_F_RX_L4_CKSUM_GOOD : 0;
		m->packet_type = 0;
		b[i] = m;
	}
	if (rte_ring_enqueue_bulk(w_in, (void **)b, n, NULL) != n)
		die("WAN RX ring full");
	return n;
}

/* Drain what the edge (or a baseline) sent to the island: free it. */
static unsigned int
drain_access(void)
{
	struct rte_mbuf *m[64];
	unsigned int n, total = 0;

	while ((n = rte_ring_dequeue_burst(a_out, (void **)m, 64, NULL)) > 0) {
		rte_pktmbuf_free_bulk(m, n);
		total += n;
	}
	/* worker 1's own TX queue (a queue per worker) */
	while ((n = rte_ring_dequeue_burst(a_out1, (void **)m, 64, NULL)) > 0) {
		rte_pktmbuf_free_bulk(m, n);
		total += n;
	}
	if (rte_ring_count(w_out) != 0 || rte_ring_count(w_out1) != 0)
		die("the edge sent DATA to the WAN: no island DATA was given");
	return total;
}

/* ---- the three loops ------------------------------------------------- */

/* One round through the pipeline; @return TSC cycles inside
 * isthd_worker_poll() per DATA packet. */
static double
run_pipeline(uint64_t *aggs)
{
	unsigned int pos = 0, work, n, i;
	uint64_t t0;
	double c;

	new_round(true);
	pl_reset();
	do {
		n = pos < NF ? feed(pos) : 0;
		pos += n;
		i = pl_pass(n);
		t0 = rte_rdtsc();
		work = isthd_worker_poll(&edge.workers[0]);
		pl_cyc[0][i] = rte_rdtsc() - t0;
		*aggs += drain_access();
	} while (pos < NF || work);
	pl_reduce(1, &c);
	return c;
}

/* The same with the UDP checksums checked by the NIC (isthmusd turns the
 * RX offload on where the PMD has it: mlx5, ice, i40e): the parse does not
 * read the payload. Costs what [wan] udp_checksum = no would. */
static double
run_pipeline_nic(uint64_t *aggs)
{
	double c;

	cur_nic_csum = true;
	edge.wan_rx_csum = true;
	c = run_pipeline(aggs);
	edge.wan_rx_csum = false;
	cur_nic_csum = false;
	return c;
}

/* The same with auth on: version 2 frames, verified and sealed. */
static double
run_pipeline_auth(uint64_t *aggs)
{
	double c;

	edge_auth(true);
	c = run_pipeline(aggs);
	edge_auth(false);
	return c;
}

static double
run_iofwd(void)
{
	struct rte_mbuf *b[BURST];
	unsigned int pos = 0, f, p;
	uint16_t n, k;
	uint64_t t0;
	double c;

	new_round(false);
	pl_reset();
	while (pos < NF) {
		f = feed(pos);
		pos += f;
		p = pl_pass(f);
		t0 = rte_rdtsc();
		n = rte_eth_rx_burst(port_w, 0, b, BURST);
		k = rte_eth_tx_burst(port_a, 0, b, n);
		if (unlikely(k < n))
			rte_pktmbuf_free_bulk(b + k, n - k);
		pl_cyc[0][p] = rte_rdtsc() - t0;
		drain_access();
	}
	pl_reduce(1, &c);
	return c;
}

__attribute__((target("avx512f"))) static uint64_t
read_payload_avx512(const uint8_t *p, unsigned int len)
{
	__m512i acc = _mm512_setzero_si512();
	unsigned int i;

	for (i = 0; i + 64 <= len; i += 64)
		acc = _mm512_add_epi64(acc, _mm512_loadu_si512(p + i));
	return (uint64_t)_mm512_reduce_add_epi64(acc);
}

static uint64_t
read_payload_scalar(const uint8_t *p, unsigned int len)
{
	uint64_t acc = 0, v;
	unsigned int i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&v, p + i, 8);
		acc += v;
	}
	return acc;
}

static bool have_avx512;

static double
run_readfwd(void)
{
	struct rte_mbuf *b[BURST];
	uint64_t t0, sum = 0;
	unsigned int pos = 0, f, ps;
	uint16_t n, k, i;
	double c;

	new_round(false);
	pl_reset();
	while (pos < NF) {
		f = feed(pos);
		pos += f;
		ps = pl_pass(f);
		t0 = rte_rdtsc();
		n = rte_eth_rx_burst(port_w, 0, b, BURST);
		for (i = 0; i < n; i++) {
			/* fixed offset: the floor parses nothing */
			const uint8_t *p = rte_pktmbuf_mtod(b[i], uint8_t *) + PAY_OFF;
			unsigned int len = rte_pktmbuf_data_len(b[i]) - PAY_OFF;

			sum += have_avx512 ? read_payload_avx512(p, len)
					   : read_payload_scalar(p, len);
		}
		k = rte_eth_tx_burst(port_a, 0, b, n);
		if (unlikely(k < n))
			rte_pktmbuf_free_bulk(b + k, n - k);
		pl_cyc[0][ps] = rte_rdtsc() - t0;
		drain_access();
	}
	sink += sum;
	pl_reduce(1, &c);
	return c;
}

/* ---- stage micro-runs ------------------------------------------------ */

enum stage {
	ST_RX, /* rte_eth_rx_burst from the WAN ring */
	ST_PARSE, /* isth_wire_parse_frame */
	ST_ADD, /* isth_agg_add_burst (lookup + sum + slot bookkeeping) */
	ST_SUM, /* the summation kernel alone (memcpy first, add rest) */
	ST_BUILD, /* per AGG: drain, mbuf, header, copy-out, release */
	ST_SEND, /* per AGG: frame headers, resend push, TX */
	ST_FREE, /* rte_pktmbuf_free_bulk of the inputs */
	ST_MAX
};

static const char *const stage_names[ST_MAX] = {
	"rx_burst",
	"parse",
	"add_burst",
	"sum kernel",
	"AGG build",
	"AGG send",
	"free inputs",
};

struct stage_run {
	double cyc[ST_MAX]; /* per DATA packet */
	uint64_t n_aggs;
};

static struct isth_agg *s_agg;
static struct isth_resend *s_ring;
static struct isth_agg_kernels s_k;
static uint8_t *s_acc; /* emulated slot accumulators */
static uint32_t *s_free, s_nfree, *s_slot_of;
static struct isth_wire_pkt *s_parsed;

static void
stages_init(void)
{
	struct isth_agg_params ap;
	struct isth_resend_conf rc;
	struct isth_agg_info info;
	unsigned int i;

	memset(&ap, 0, sizeof(ap));
	ap.mem_budget = edge.cfg.agg_memory;
	ap.max_elems = edge.lim.max_elems;
	ap.max_chunks = edge.cfg.agg_max_chunks;
	ap.n_islands = N_ISL;
	ap.max_jobs = 1;
	ap.window = edge.cfg.agg_window;
	ap.timeout_ns = edge.cfg.agg_timeout_ns;
	ap.reserve = ISTH_AGG_RESERVE_DEFAULT;
	s_agg = isth_agg_create(&ap);
	if (s_agg == NULL || isth_agg_kernels_get(ISTH_AGG_KERNEL_AUTO, &s_k) != 0)
		die("stage engine");
	isth_agg_info_get(s_agg, &info);
	memset(&rc, 0, sizeof(rc));
	rc.size = edge.cfg.resend_entries;
	rc.window_ns = edge.cfg.resend_window_ns;
	rc.socket_id = (int)rte_socket_id();
	rc.hdr_off = MSG_OFF;
	rc.flags = ISTH_RESEND_F_STAMP;
	rc.hdr_pool = edge.hdr_pool;
	s_ring = isth_resend_create(&rc);
	/* as many slots as the engine, same stride, LIFO free stack */
	s_acc = aligned_alloc(64, (size_t)info.n_slots * info.slot_size);
	s_free = calloc(info.n_slots, sizeof(*s_free));
	s_slot_of = calloc(K, sizeof(*s_slot_of));
	s_parsed = calloc(NF, sizeof(*s_parsed));
	if (!s_ring || !s_acc || !s_free || !s_slot_of || !s_parsed)
		die("stage memory");
	memset(s_acc, 0, (size_t)info.n_slots * info.slot_size);
	for (i = 0; i < info.n_slots; i++)
		s_free[i] = info.n_slots - 1 - i;
	s_nfree = info.n_slots;
}

/* AGG building as the sw backend does it, on the stage engine. */
static unsigned int
build_aggs(struct rte_mbuf **out, unsigned int cap)
{
	struct isth_agg_emit e[BURST];
	unsigned int n = RTE_MIN(isth_agg_pending(s_agg), cap), got, i;

	n = RTE_MIN(n, (unsigned int)BURST);
	if (n == 0 || rte_pktmbuf_alloc_bulk(edge.pool, out, n) != 0)
		return 0;
	got = isth_agg_drain(s_agg, e, n);
	for (i = 0; i < got; i++) {
		struct isth_wire_hdr h;
		uint8_t *p = (uint8_t *)rte_pktmbuf_append(out[i], ISTH_WIRE_HDR_SIZE + e[i].size);

		memset(&h, 0, sizeof(h));
		isth_agg_emit_hdr(&e[i], &h);
		isth_wire_put_hdr(p, ISTH_WIRE_HDR_SIZE, &h);
		isth_agg_emit_copy(s_agg, &e[i], p + ISTH_WIRE_HDR_SIZE, e[i].size);
		isth_agg_release(s_agg, &e[i]);
	}
	if (got < n)
		rte_pktmbuf_free_bulk(out + got, n - got);
	return got;
}

static inline void
prefetch_frame(const struct rte_mbuf *m)
{
	const char *p = rte_pktmbuf_mtod(m, const char *);

	for (unsigned int off = 0; off < rte_pktmbuf_data_len(m); off += 64)
		rte_prefetch0(p + off);
}

static void
run_stages(struct stage_run *sr)
{
	struct rte_mbuf *b[BURST], *aggs[BURST];
	struct isth_agg_contrib contrib[BURST];
	uint64_t t0, now = isthd_tsc_to_ns(&edge, rte_rdtsc());
	unsigned int pos, i, n, k, sent;
	uint32_t r = new_round(false), step = BURST;
	struct isth_agg_info info;

	memset(sr, 0, sizeof(*sr));
	pl_reset();
	if (isth_agg_set_round(s_agg, JOB, r, ((1u << N_ISL) - 1) & ~1u) != 0)
		die("stage set_round");
	isth_agg_info_get(s_agg, &info);
	step = RTE_MIN(info.reserve, (uint32_t)BURST); /* as the sw backend */

	for (pos = 0; pos < NF; pos += n) {
		unsigned int fed = feed(pos), ps = pl_pass(fed);

		/* rx */
		t0 = rte_rdtsc();
		n = rte_eth_rx_burst(port_w, 0, b, BURST);
		pl_cyc[ST_RX][ps] += rte_rdtsc() - t0;
		if (n != fed)
			die("stage rx");
		/* parse */
		t0 = rte_rdtsc();
		/* whole frames 4 ahead, as wan_rx() prefetches them */
		for (i = 0; i < n && i < 4; i++)
			prefetch_frame(b[i]);
		for (i = 0; i < n; i++) {
			if (i + 4 < n)
				prefetch_frame(b[i + 4]);
			if (isth_wire_parse_frame(rte_pktmbuf_mtod(b[i], uint8_t *),
				    rte_pktmbuf_data_len(b[i]), &edge.lim,
				    &s_parsed[pos + i]) != ISTH_WIRE_OK)
				die("stage parse");
		}
		pl_cyc[ST_PARSE][ps] += rte_rdtsc() - t0;
		/* lookup + sum in the engine, then AGG build and send */
		for (i = 0; i < n; i += k) {
			unsigned int j;

			k = RTE_MIN(n - i, step);
			for (j = 0; j < k; j++)
				isth_agg_contrib_from_pkt(&contrib[j], &s_parsed[pos + i + j]);
			t0 = rte_rdtsc();
			isth_agg_add_burst(s_agg, contrib, k, now);
			pl_cyc[ST_ADD][ps] += rte_rdtsc() - t0;

			t0 = rte_rdtsc();
			sent = build_aggs(aggs, BURST);
			pl_cyc[ST_BUILD][ps] += rte_rdtsc() - t0;
			sr->n_aggs += sent;

			t0 = rte_rdtsc();
			for (j = 0; j < sent; j++)
				if (isthd_frame_to_island(&edge, aggs[j]) < 0 ||
					isth_resend_push(s_ring, aggs[j], now, NULL) < 0)
					die("stage AGG send");
			j = rte_eth_tx_burst(port_a, 0, aggs, (uint16_t)sent);
			pl_cyc[ST_SEND][ps] += rte_rdtsc() - t0;
			if (j < sent)
				die("stage TX");
		}
		/* free the inputs, as the sw backend does */
		t0 = rte_rdtsc();
		isth_mbuf_free_bulk(b, n);
		pl_cyc[ST_FREE][ps] += rte_rdtsc() - t0;
		drain_access();
	}

	/* the kernel alone: same payloads, same order, LIFO slots; timed per
	 * 32 positions, logged with the pass that fed them */
	for (pos = 0; pos < NF; pos++) {
		const struct isth_wire_pkt *p = &s_parsed[pos];
		uint32_t c = order[pos] / N_SND, slot;
		float *acc;

		if (pos % BURST == 0)
			t0 = rte_rdtsc();
		if (first_of[pos])
			s_slot_of[c] = s_free[--s_nfree];
		slot = s_slot_of[c];
		acc = (float *)(s_acc + (size_t)slot * info.slot_size);
		/* the engine prefetches the next contribution's accumulator */
		if (pos + 1 < NF && !first_of[pos + 1]) {
			const uint8_t *na =
				s_acc + (size_t)s_slot_of[order[pos + 1] / N_SND] * info.slot_size;

			for (unsigned int off = 0; off < PAYLOAD; off += 64)
				__builtin_prefetch(na + off, 1);
		}
		if (first_of[pos])
			memcpy(acc, p->payload, PAYLOAD);
		else
			s_k.add_fp32(acc, p->payload, ELEMS);
		if (last_of[pos])
			s_free[s_nfree++] = slot;
		if (pos % BURST == BURST - 1 || pos + 1 == NF)
			pl_cyc[ST_SUM][pos / BURST] += rte_rdtsc() - t0;
	}
	pl_reduce(ST_MAX, sr->cyc);

	if (sr->n_aggs != K || isth_agg_pending(s_agg) != 0)
		die("stage engine did not complete every chunk");
}

/* ---- checks ---------------------------------------------------------- */

static uint64_t
be_stat_of(struct isth_backend *be, const char *name)
{
	struct isth_backend_stats st;
	unsigned int i;

	isth_backend_stats(be, &st);
	for (i = 0; i < st.n; i++)
		if (strcmp(st.names[i], name) == 0)
			return st.values[i];
	die("no backend counter");
	return 0;
}

static uint64_t
be_stat(const char *name)
{
	return be_stat_of(edge.workers[0].be, name);
}

/* One round through the pipeline, checking every AGG's sum. */
static void
check_pipeline(void)
{
	uint64_t done = be_stat("completed"), bad = 0, aggs = 0;
	unsigned int pos = 0, work, n, i, e;
	struct rte_mbuf *m[64];
	struct isth_wire_pkt p;
	struct isth_wire_limits lim = cur_auth ? lim_v2 : lim_v1;

	new_round(true);
	do {
		if (pos < NF)
			pos += feed(pos);
		work = isthd_worker_poll(&edge.workers[0]);
		while ((n = rte_ring_dequeue_burst(a_out, (void **)m, 64, NULL)) > 0) {
			for (i = 0; i < n; i++) {
				const float *v;

				if (rte_pktmbuf_is_contiguous(m[i]) == 0 ||
					isth_wire_parse_frame(rte_pktmbuf_mtod(m[i], uint8_t *),
						rte_pktmbuf_data_len(m[i]), &lim,
						&p) != ISTH_WIRE_OK)
					die("edge sent a bad frame");
				if (cur_auth &&
					isth_auth_verify(geng, ISTH_AUTH_DOWN, 0, p.msg,
						p.msg_size) != ISTH_AUTH_OK)
					die("the edge sent a frame that does not verify");
				if (p.hdr.type != ISTH_WIRE_AGG)
					continue; /* ROUND */
				aggs++;
				v = (const float *)p.payload;
				if (p.hdr.bitmap != (((1u << N_ISL) - 1) & ~1u) ||
					p.hdr.count != ELEMS) {
					bad++;
					continue;
				}
				for (e = 0; e < ELEMS; e++) {
					float want = 0;

					for (unsigned int s = 1; s <= N_SND; s++)
						want += value(s, p.hdr.chunk, e);
					if (v[e] != want) {
						bad++;
						break;
					}
				}
			}
			rte_pktmbuf_free_bulk(m, n);
		}
	} while (pos < NF || work);
	if (bad || aggs != K || be_stat("completed") - done != K)
		die("pipeline check: AGGs missing, partial or wrong");
}

/* ---- two workers ----------------------------------------------------- */

/* Per-pass logs of the two workers: cycles and DATA handled. */
#define WLOG_CAP (1u << 20)
struct wlog {
	uint64_t *cyc;
	uint32_t *pkts;
	unsigned int n;
};
static struct wlog wlog0, wlog1;
static uint64_t *wlog_scratch;

static void
wlog_add(struct wlog *l, uint64_t cyc, uint32_t pkts)
{
	if (l->n < WLOG_CAP) {
		l->cyc[l->n] = cyc;
		l->pkts[l->n] = pkts;
		l->n++;
	}
}

/* Cycles per DATA over the passes of @l, leaving out passes longer than
 * PREEMPT_X times the median pass that handled DATA (as pl_reduce). */
static double
wlog_reduce(const struct wlog *l)
{
	uint64_t sum = 0, kept = 0, thr;
	unsigned int i, m = 0;

	for (i = 0; i < l->n; i++)
		if (l->pkts[i])
			wlog_scratch[m++] = l->cyc[i];
	thr = m ? (uint64_t)(PREEMPT_X * median(wlog_scratch, m)) : UINT64_MAX;
	for (i = 0; i < l->n; i++) {
		if (l->cyc[i] > thr)
			continue;
		sum += l->cyc[i];
		kept += l->pkts[i];
	}
	return kept ? (double)sum / (double)kept : 0;
}

/* worker 1's loop on lcore 1: isthd_worker_poll, logging the passes that
 * did work with the DATA they summed (peer DATA, run_workers) or, in the
 * egress runs (w1_egress), the island's DATA its pacer released */
static volatile bool w1_egress;
/* the egress runs with a WAN TX queue per worker: worker 1's lcore drains
 * its queue's ring itself (between its passes, not timed), as a NIC's TX
 * completions are freed by the lcore that sends on the queue; the frames
 * it drained (written by lcore 1, read by the bench) */
static volatile bool w1_drains;
static volatile uint64_t w1_drained;
static unsigned int drain_ring(unsigned int i);

static int
w1_loop(void *arg)
{
	struct isthd_worker *w = arg;
	uint64_t *ctr = w1_egress ? &w->st.data_out : &w->st.peer_data;

	while (!w1_stop) {
		uint64_t p0 = isth_ctr_get(ctr), t0 = rte_rdtsc(), t1;

		if (isthd_worker_poll(w)) {
			t1 = rte_rdtsc();
			wlog_add(&wlog1, t1 - t0, (uint32_t)(isth_ctr_get(ctr) - p0));
		}
		if (w1_drains)
			__atomic_store_n(&w1_drained, w1_drained + drain_ring(1), __ATOMIC_RELEASE);
	}
	return 0;
}

struct wrun {
	double wall; /* TSC cycles per DATA, first frame in to last AGG out */
	double c0; /* worker 0: cycles in isthd_worker_poll per DATA (all of them) */
	double c1; /* worker 1: cycles of its passes per DATA it summed */
};

/* One round with @nw workers (1 or 2) on the edge set up with two; with
 * two, @txq access TX queues: 1, worker 1 hands its AGGs to worker 0 (the
 * fallback), or 2, worker 1 sends them on queue 1 itself. */
static struct wrun
run_workers(unsigned int nw, uint16_t txq)
{
	struct isthd_worker *w = &edge.workers[1];
	struct isth_backend_counts b0, b1, a0, a1;
	unsigned int pos = 0, got = 0, n;
	uint64_t t0, t, full0;
	uint64_t limit = rte_rdtsc() + 30 * hz;
	struct wrun res = {0, 0, 0};
	uint32_t r;

	edge.n_workers = nw;
	edge.access_txq = nw == 2 ? txq : 1;
	isthd_workers_roles(&edge);
	r = new_round(true);
	if (nw == 2) {
		/* the controller's job, for worker 1's backend too */
		while (isth_backend_set_round(w->be, JOB, r, ((1u << N_ISL) - 1) & ~1u, NULL, 0) ==
			-EBUSY)
			isthd_worker_poll(w);
		w1_stop = false;
		w1_egress = false;
		if (rte_eal_remote_launch(w1_loop, w, 1) != 0)
			die("worker 1 launch");
		w1_running = true;
	}
	isth_backend_counts(edge.workers[0].be, &b0);
	isth_backend_counts(w->be, &b1);
	full0 = isth_ctr_get(&edge.workers[0].st.drop[ISTHD_DROP_worker_ring_full]);
	wlog0.n = wlog1.n = 0;
	t0 = rte_rdtsc();
	while (got < K) {
		uint32_t fed = 0;

		/* feed only what worker 1 can take: a throughput, not drops */
		if (pos < NF && (nw == 1 || rte_ring_free_count(w->in) >= 2 * BURST))
			fed = feed(pos);
		pos += fed;
		/* passes with nothing to do are a worker waiting for the
		 * other (a real one would idle): not its cost */
		t = rte_rdtsc();
		if (isthd_worker_poll(&edge.workers[0]))
			wlog_add(&wlog0, rte_rdtsc() - t, fed);
		n = drain_access();
		got += n;
		if (rte_rdtsc() > limit)
			die("workers: AGGs missing after 30 s");
	}
	res.wall = (double)(rte_rdtsc() - t0) / NF;
	if (nw == 2) {
		w1_stop = true;
		rte_eal_wait_lcore(1);
		w1_running = false;
	}
	isth_backend_counts(edge.workers[0].be, &a0);
	isth_backend_counts(w->be, &a1);
	/* every chunk completed once, on its worker: c % nw */
	if (got != K || a0.completed - b0.completed != (nw == 2 ? K / 2 : K) ||
		a1.completed - b1.completed != (nw == 2 ? K / 2 : 0) ||
		isth_ctr_get(&edge.workers[0].st.drop[ISTHD_DROP_worker_ring_full]) != full0 ||
		isth_ctr_get(&w->st.drop[ISTHD_DROP_worker_ring_full]) != 0 ||
		isth_ctr_get(&w->st.drop[ISTHD_DROP_tx_access]) != 0)
		die("workers: a chunk not summed once by its worker, or a ring or TX drop");
	res.c0 = wlog_reduce(&wlog0);
	if (nw == 2)
		res.c1 = wlog_reduce(&wlog1);
	edge.n_workers = 1;
	edge.access_txq = 1;
	isthd_workers_roles(&edge);
	return res;
}

/* The same with [auth] on: version 2 frames, verify and seal. */
static struct wrun
run_workers_auth(unsigned int nw, uint16_t txq)
{
	struct wrun r;

	edge_auth(true);
	r = run_workers(nw, txq);
	edge_auth(false);
	return r;
}

/* ---- the island's DATA out ------------------------------------------- */

/*
 * The island's own DATA, island 0's stream to its 8 peers: K chunks of 1
 * KiB fp32 (sender 0, from [access] island_ip to the edge's access
 * address), built once as bytes; each run copies them into fresh mbufs
 * of their own pool, as a NIC would have received them (the edge strips
 * their headers, paces them, keeps them in its WAN repair ring for its
 * peers' NACKs and sends zero-copy clones of them to the WAN).
 */
static uint8_t *isl_tmpl; /* K frames of FRAME bytes */
static struct rte_mbuf **isl; /* this run's */
static struct rte_mempool *ipool;
/* the start TSC of the last plan the bench gave worker k's pacer: a
 * pacer's plans start strictly later one after the other */
static uint64_t pace_last[2];

static void
build_island_frames(void)
{
	struct isth_wire_addr a = {
		.dst_mac = {2, 0, 0, 0, 0, 3},
		.src_mac = {2, 0, 0, 0, 0, 2},
		.src_ip = edge.cfg.island_ip,
		.dst_ip = edge.cfg.access.ip,
		.src_port = ISTH_WIRE_PORT,
		.dst_port = edge.cfg.udp_port,
	};
	float body[ELEMS];
	unsigned int c, i;

	isl_tmpl = malloc((size_t)K * FRAME);
	isl = calloc(K, sizeof(*isl));
	/* a run's K, what the two workers' WAN repair rings keep of the
	 * runs before (resend_entries each), and the lcores' caches */
	ipool = rte_pktmbuf_pool_create("bench_island", K + 2 * edge.cfg.resend_entries + 2048, 256,
		0, RTE_PKTMBUF_HEADROOM + RTE_ALIGN_CEIL(FRAME, RTE_CACHE_LINE_SIZE), 0);
	if (isl_tmpl == NULL || isl == NULL || ipool == NULL)
		die("island frames");
	for (c = 0; c < K; c++) {
		struct isth_wire_hdr h = {
			.type = ISTH_WIRE_DATA,
			.dtype = ISTH_WIRE_DTYPE_FP32,
			.sender = edge.island,
			.count = ELEMS,
			.job = JOB,
			.round = 0,
			.chunk = c,
			.seq = c,
			.bitmap = 1ull << edge.island,
			.flags = c == K - 1 ? ISTH_WIRE_F_LAST : 0,
		};
		uint8_t *p = isl_tmpl + (size_t)c * FRAME;

		for (i = 0; i < ELEMS; i++)
			body[i] = value(edge.island, c, i);
		if (isth_wire_build_msg(p + MSG_OFF, FRAME - MSG_OFF, &h, body, sizeof(body),
			    NULL) != (int)(FRAME - MSG_OFF) ||
			isth_wire_put_frame_hdr(p, FRAME, &a, FRAME - MSG_OFF) != (int)FRAME)
			die("island frame build");
	}
}

/* This run's K frames of the island's DATA, of round @r. */
static void
island_frames(uint32_t r)
{
	unsigned int c;

	if (rte_pktmbuf_alloc_bulk(ipool, isl, K) != 0)
		die("island frames: pool empty (the edge holds more than it should)");
	for (c = 0; c < K; c++) {
		uint8_t *p = (uint8_t *)rte_pktmbuf_append(isl[c], FRAME);

		memcpy(p, isl_tmpl + (size_t)c * FRAME, FRAME);
		isth_wire_set_hdr_round(p + MSG_OFF, r);
	}
}

/* Put the island's frames [pos, pos + 32) on the access RX ring: the
 * edge takes them over. */
static unsigned int
feed_island(unsigned int pos)
{
	unsigned int n = RTE_MIN((unsigned int)BURST, K - pos);

	if (rte_ring_enqueue_bulk(a_in, (void **)(isl + pos), n, NULL) != n)
		die("access RX ring full");
	return n;
}

/* One pass of worker k's loop, for a publication it waits on (the bench
 * runs both loops on this thread between runs). */
static void
poll_owner(unsigned int k)
{
	if (k == 0)
		isthd_worker_poll(&edge.workers[0]);
	else
		isthd_worker_poll(&edge.workers[k]);
}

/*
 * The controller's job for round @r of an egress run with @nw workers
 * (control.c, publish_tables and publish_pace): each worker's backend its
 * share of the peers (nw = 1: all 8 on worker 0's; nw = 2: by rank in the
 * round's peers, isthd_egress_worker: peer s is the (s - 1)-th of islands
 * 1..8, worker (s - 1) % 2's), the round's repair table (isthd_egress_steer reads the clique
 * from it), every running worker's pacer round @r at the largest rate,
 * started a millisecond ago (the pacer never holds a chunk back), and the
 * round marked published (access_rx_queue admits the rounds below it).
 * No worker reads round tables while the bench publishes (worker 1 is
 * stopped, worker 0 is this thread), and neither is a qsbr reader online.
 */
static void
egress_publish(uint32_t r, unsigned int nw)
{
	struct isth_mcast_peer peers[2][ISTHD_MAX_PEERS];
	struct isth_sched_round_view v;
	uint64_t expected = ((1u << N_ISL) - 1) & ~1u;
	unsigned int n[2] = {0, 0}, i, k, tries;
	int rc;

	for (i = 0; i < edge.cfg.n_peers; i++) {
		const struct isthd_peer *p = &edge.cfg.peers[i];
		int s = isth_sched_island_id(edge.sched, p->name);

		if (s <= 0 || s >= N_ISL)
			die("egress: a peer not in the schedule");
		k = nw == 2 ? isthd_egress_worker(&edge, expected, (unsigned int)s) : 0;
		peers[k][n[k]].island = (uint8_t)s;
		memcpy(peers[k][n[k]].mac, p->mac, 6);
		peers[k][n[k]].ip = p->ip;
		peers[k][n[k]].port = p->port;
		n[k]++;
	}
	if (n[0] + n[1] != N_SND || (nw == 2 && (n[0] != N_SND / 2 || n[1] != N_SND / 2)))
		die("egress: the peers are not 8, or not 4 per worker");
	for (k = 0; k < nw; k++) {
		struct isth_backend *be = edge.workers[k].be;

		for (tries = 0; (rc = isth_backend_set_round(
					 be, JOB, r, expected, peers[k], n[k])) == -EBUSY &&
			tries < 1000;
			tries++)
			poll_owner(k);
		if (rc < 0)
			die("egress: set_round");
	}
	if (isth_sched_round_view(edge.sched, (int64_t)r, edge.island, &v) != 0 ||
		v.peers != expected)
		die("egress: the round's view is not the clique of 9");
	for (tries = 0; (rc = isthd_repair_publish(&edge, &v, r)) == -EBUSY && tries < 1000;
		tries++)
		isthd_worker_poll(&edge.workers[0]);
	if (rc < 0)
		die("egress: repair table");
	for (k = 0; k < nw; k++) {
		struct isth_pace *pace = (&edge.workers[k].eg)->pace;
		uint64_t start = RTE_MAX(rte_rdtsc() - hz / 1000, pace_last[k] + 1);

		for (tries = 0; (rc = isth_pace_set_round(
					 pace, r, start, ISTH_PACE_MAX_RATE_BPS)) == -EBUSY &&
			tries < 1000;
			tries++)
			poll_owner(k);
		if (rc < 0)
			die("egress: pacer plan");
		pace_last[k] = start;
	}
	__atomic_store_n(&edge.published, (uint64_t)r + 1, __ATOMIC_RELEASE);
}

/* Every drop reason of both workers, the wire parser's included. */
static uint64_t
drops_total(void)
{
	const struct isthd_dp_stats *st[2] = {&edge.workers[0].st, &edge.workers[1].st};
	uint64_t t = 0;
	unsigned int w, i;

	for (w = 0; w < 2; w++) {
		for (i = 0; i < ISTHD_DROP_MAX; i++)
			t += isth_ctr_get(&st[w]->drop[i]);
		for (i = 0; i < ISTH_WIRE_REASON_MAX; i++)
			t += isth_ctr_get(&st[w]->wire_drop[i]);
	}
	return t;
}

/* Every drop reason that moved since @base (drops_snap), to stderr. */
static uint64_t drop_base[2][ISTHD_DROP_MAX];

static void
drops_snap(void)
{
	for (unsigned int i = 0; i < ISTHD_DROP_MAX; i++) {
		drop_base[0][i] = isth_ctr_get(&edge.workers[0].st.drop[i]);
		drop_base[1][i] = isth_ctr_get(&edge.workers[1].st.drop[i]);
	}
}

static void
drops_print(void)
{
	for (unsigned int i = 0; i < ISTHD_DROP_MAX; i++) {
		uint64_t d0 = isth_ctr_get(&edge.workers[0].st.drop[i]) - drop_base[0][i];
		uint64_t d1 = isth_ctr_get(&edge.workers[1].st.drop[i]) - drop_base[1][i];

		if (d0 || d1)
			fprintf(stderr,
				"bench_isthmusd: egress: drop_%s: worker 0 %" PRIu64
				", worker 1 %" PRIu64 "\n",
				isthd_drop_name(i), d0, d1);
	}
}

/* The correctness run (run_egress with @check): what each peer got so
 * far, the run's round and where peer s's frames must leave. */
static struct {
	bool on;
	uint32_t round;
	unsigned int per_worker; /* 1: peer s's frames on WAN TX queue (s - 1) % 2 */
	uint32_t next[N_ISL]; /* peer s's next chunk */
} ck;

/* Every frame to the WAN, in the correctness run: the island's chunk
 * (header and payload as the island sent them) to one peer, that peer's
 * chunks in order, on its worker's WAN TX queue. */
static void
egress_check(unsigned int q, struct rte_mbuf **m, unsigned int n)
{
	uint8_t buf[2048];
	struct isth_wire_pkt p;
	unsigned int i, s;

	for (i = 0; i < n; i++) {
		uint32_t len = rte_pktmbuf_pkt_len(m[i]);
		const uint8_t *f;

		if (len > sizeof(buf) || (f = rte_pktmbuf_read(m[i], 0, len, buf)) == NULL ||
			isth_wire_parse_frame(f, len, &edge.lim, &p) != ISTH_WIRE_OK)
			die("egress: the edge sent a WAN frame that does not parse");
		for (s = 1; s < N_ISL; s++)
			if (edge.peer_of[s] != NULL && edge.peer_of[s]->ip == p.addr.dst_ip)
				break;
		if (s == N_ISL)
			die("egress: a WAN frame to no peer");
		/* peer s is the (s - 1)-th peer of the clique of 9: its
		 * worker is (s - 1) % 2 (doc/isthmusd.md, "Workers") */
		if (q != (ck.per_worker ? (s - 1) % 2 : 0))
			die("egress: a peer's frame on another worker's WAN TX queue");
		if (p.hdr.type != ISTH_WIRE_DATA || p.hdr.sender != edge.island ||
			p.hdr.round != ck.round || p.hdr.chunk != ck.next[s] ||
			p.payload_size != PAYLOAD ||
			memcmp(p.payload, isl_tmpl + (size_t)p.hdr.chunk * FRAME + PAY_OFF,
				PAYLOAD) != 0) {
			char msg[200];

			snprintf(msg, sizeof(msg),
				"egress: peer %u did not get the island's chunks in order, intact: "
				"chunk %u of round %u on WAN TX queue %u, after chunk %d of round "
				"%u",
				s, p.hdr.chunk, p.hdr.round, q, (int)ck.next[s] - 1, ck.round);
			drops_print();
			die(msg);
		}
		ck.next[s]++;
	}
}

/* Drain WAN TX ring @i (queue 0: w_out, 1: w_out1): check in the
 * correctness run, free. @return frames drained. */
static unsigned int
drain_ring(unsigned int i)
{
	struct rte_ring *ring = i ? w_out1 : w_out;
	struct rte_mbuf *m[64];
	unsigned int n, total = 0;

	while ((n = rte_ring_dequeue_burst(ring, (void **)m, 64, NULL)) > 0) {
		if (ck.on)
			egress_check(i, m, n);
		rte_pktmbuf_free_bulk(m, n);
		total += n;
	}
	return total;
}

/* The WAN TX rings this lcore drains (ring 1 unless worker 1 drains it),
 * counted in @q per queue. @return frames drained. */
static unsigned int
drain_wan(uint64_t q[2])
{
	unsigned int n0 = drain_ring(0), n1 = w1_drains ? 0 : drain_ring(1);

	q[0] += n0;
	q[1] += n1;
	return n0 + n1;
}

struct erun {
	double c0; /* worker 0: cycles of its passes that did work per DATA it released */
	double c1; /* worker 1: the same (0 with one worker) */
	double wall; /* TSC cycles per DATA, first frame fed to last WAN frame out */
};

/*
 * One round of the island's DATA out with @nw workers (1 or 2) on the
 * edge set up with two; with two, @wtxq WAN TX queues: 2, worker 1 sends
 * its 4 peers' copies on WAN TX queue 1 itself, or 1, it hands them to
 * worker 0 (its wan_out ring), which sends them on queue 0. Worker 0 is
 * this thread: feed 32 frames, one isthd_worker_poll (timed), drain the WAN
 * rings (not timed); worker 1 runs isthd_worker_poll on lcore 1. The
 * generator feeds worker 1 only as much as its rings can take (worker 0's
 * ring to it, and the 4 copies per DATA it has yet to send plus what
 * waits in its WAN ring, within that ring's capacity): a throughput with
 * no drop, as run_workers. @check: the correctness run (egress_check).
 */
static struct erun
run_egress(unsigned int nw, uint16_t wtxq, bool check)
{
	struct isthd_worker *w = &edge.workers[1];
	struct rte_ring *w1_ring;
	uint64_t q[2] = {0, 0}, want = (uint64_t)K * N_SND, got = 0;
	uint64_t o0, o1, in0, dr0, cp0, cp1, t0, t, cap, limit = rte_rdtsc() + 30 * hz;
	struct erun res = {0, 0, 0};
	unsigned int pos = 0, s;
	uint32_t r = next_round++;
	char msg[256];

	edge.n_workers = nw;
	edge.wan_txq = nw == 2 ? wtxq : 1;
	isthd_workers_roles(&edge);
	egress_publish(r, nw);
	island_frames(r);
	memset(&ck, 0, sizeof(ck));
	ck.on = check;
	ck.round = r;
	ck.per_worker = edge.wan_txq > 1;
	o0 = isth_ctr_get(&edge.workers[0].st.data_out);
	o1 = isth_ctr_get(&w->st.data_out);
	in0 = isth_ctr_get(&edge.workers[0].st.data_in);
	dr0 = drops_total();
	drops_snap();
	cp0 = be_stat_of(edge.workers[0].be, "mcast_copies");
	cp1 = be_stat_of(w->be, "mcast_copies");
	w1_ring = edge.wan_txq > 1 ? w_out1 : w->wan_out;
	cap = rte_ring_get_capacity(w->wan_out);
	wlog0.n = wlog1.n = 0;
	w1_drained = 0;
	w1_drains = nw == 2 && edge.wan_txq > 1;
	if (nw == 2) {
		w1_stop = false;
		w1_egress = true;
		if (rte_eal_remote_launch(w1_loop, w, 1) != 0)
			die("worker 1 launch");
		w1_running = true;
	}
	t0 = rte_rdtsc();
	while (got < want) {
		uint32_t fed = 0;
		uint64_t out0;

		/* worker 1's copies not yet drained: of the DATA it has
		 * not released, in its WAN ring, and of one burst it has
		 * released (counted) but not yet replicated; and this burst */
		if (pos < K &&
			(nw == 1 ||
				(rte_ring_free_count(w->in) >= 2 * BURST &&
					(pos - (isth_ctr_get(&w->st.data_out) - o1)) * (N_SND / 2) +
							rte_ring_count(w1_ring) + N_SND * BURST <=
						cap)))
			fed = feed_island(pos);
		pos += fed;
		/* passes with nothing to do are worker 0 waiting (a real one
		 * would idle): not its cost */
		out0 = isth_ctr_get(&edge.workers[0].st.data_out);
		t = rte_rdtsc();
		if (isthd_worker_poll(&edge.workers[0]))
			wlog_add(&wlog0, rte_rdtsc() - t,
				(uint32_t)(isth_ctr_get(&edge.workers[0].st.data_out) - out0));
		got += drain_wan(q);
		if (w1_drains) {
			uint64_t d1 = __atomic_load_n(&w1_drained, __ATOMIC_ACQUIRE);

			got += d1 - q[1];
			q[1] = d1;
		}
		if (rte_rdtsc() > limit) {
			snprintf(msg, sizeof(msg),
				"egress: %" PRIu64 " of %" PRIu64 " WAN frames after 30 s (%u "
				"workers, %u WAN TX queues)",
				got, want, nw, edge.wan_txq);
			drops_print();
			die(msg);
		}
	}
	res.wall = (double)(rte_rdtsc() - t0) / K;
	if (nw == 2) {
		w1_stop = true;
		rte_eal_wait_lcore(1);
		w1_running = false;
	}
	if (w1_drains) {
		got += w1_drained - q[1];
		q[1] = w1_drained;
	}
	w1_drains = false;
	/* anything more the edge would send now is a copy too many */
	for (s = 0; s < 4; s++) {
		isthd_worker_poll(&edge.workers[0]);
		if (nw == 2)
			isthd_worker_poll(w);
		got += drain_wan(q);
	}
	if (got != want || isth_ctr_get(&edge.workers[0].st.data_in) - in0 != K ||
		isth_ctr_get(&edge.workers[0].st.data_out) - o0 != K ||
		isth_ctr_get(&w->st.data_out) - o1 != (nw == 2 ? K : 0) || drops_total() != dr0 ||
		be_stat_of(edge.workers[0].be, "mcast_copies") - cp0 !=
			(nw == 2 ? want / 2 : want) ||
		be_stat_of(w->be, "mcast_copies") - cp1 != (nw == 2 ? want / 2 : 0) ||
		q[0] != (ck.per_worker ? want / 2 : want) ||
		q[1] != (ck.per_worker ? want / 2 : 0)) {
		snprintf(msg, sizeof(msg),
			"egress (%u workers, %u WAN TX queues): %" PRIu64
			" WAN frames for %u island "
			"DATA (queue 0 %" PRIu64 ", queue 1 %" PRIu64
			"; want 8 per DATA), admitted "
			"%" PRIu64 ", released %" PRIu64 " + %" PRIu64 ", %" PRIu64 " drops",
			nw, edge.wan_txq, got, K, q[0], q[1],
			isth_ctr_get(&edge.workers[0].st.data_in) - in0,
			isth_ctr_get(&edge.workers[0].st.data_out) - o0,
			isth_ctr_get(&w->st.data_out) - o1, drops_total() - dr0);
		drops_print();
		die(msg);
	}
	if (check)
		for (s = 1; s < N_ISL; s++)
			if (ck.next[s] != K)
				die("egress: a peer did not get every chunk of the round");
	ck.on = false;
	res.c0 = wlog_reduce(&wlog0);
	if (nw == 2)
		res.c1 = wlog_reduce(&wlog1);
	edge.n_workers = 1;
	edge.wan_txq = 1;
	isthd_workers_roles(&edge);
	return res;
}

/* The egress runs' figures: per rep, then medians (cycles per DATA). */
struct eresult {
	/* 1 worker; 2 workers, a WAN TX queue each; 2 workers, through worker 0 */
	uint64_t *c0[3], *c1[3], *wall[3];
	double c0_m[3], c1_m[3], wall_m[3];
};

static const char *const egress_mode[3] = {
	"1 worker",
	"2 workers (WAN queue each)",
	"2 workers (through worker 0)",
};

static void
run_egress_all(unsigned int reps, struct eresult *e)
{
	static const unsigned int nw[3] = {1, 2, 2};
	static const uint16_t txq[3] = {1, 2, 1};
	unsigned int rep, i;

	for (i = 0; i < 3; i++) {
		e->c0[i] = calloc(reps, sizeof(uint64_t));
		e->c1[i] = calloc(reps, sizeof(uint64_t));
		e->wall[i] = calloc(reps, sizeof(uint64_t));
		if (!e->c0[i] || !e->c1[i] || !e->wall[i])
			die("egress results");
	}
	edge_auth(false);
	build_island_frames();
	/* every peer gets every chunk, in order, on its worker's queue;
	 * then one of each as a warm-up */
	for (i = 0; i < 3; i++)
		run_egress(nw[i], txq[i], true);
	for (i = 0; i < 3; i++)
		run_egress(nw[i], txq[i], false);
	for (rep = 0; rep < reps; rep++) {
		struct erun x[3];

		/* 1 worker, then the two 2-worker modes in turn, so that
		 * neither always runs after the other */
		x[0] = run_egress(1, 1, false);
		if (rep & 1) {
			x[2] = run_egress(2, 1, false);
			x[1] = run_egress(2, 2, false);
		} else {
			x[1] = run_egress(2, 2, false);
			x[2] = run_egress(2, 1, false);
		}
		for (i = 0; i < 3; i++) {
			e->c0[i][rep] = (uint64_t)(x[i].c0 * 1000);
			e->c1[i][rep] = (uint64_t)(x[i].c1 * 1000);
			e->wall[i][rep] = (uint64_t)(x[i].wall * 1000);
		}
	}
	for (i = 0; i < 3; i++) {
		e->c0_m[i] = median(e->c0[i], reps) / 1000;
		e->c1_m[i] = median(e->c1[i], reps) / 1000;
		e->wall_m[i] = median(e->wall[i], reps) / 1000;
	}

	printf("\n== egress: the island's DATA (%u chunks/round, 1 KiB fp32) to its 8 peers, "
	       "%u WAN frames/round, %u rounds/loop ==\n",
		K, K * N_SND, reps);
	printf("access RX -> admission (worker 0) -> pacer (max rate) -> WAN repair ring ->\n"
	       "fan-out to the worker's peers -> WAN TX; cycles per island DATA of each\n"
	       "worker's passes that did work (preempted passes left out); wall = first\n"
	       "frame fed to last WAN frame out, per DATA (the generator and the WAN drain\n"
	       "on worker 0's lcore included, preemption included):\n");
	for (i = 0; i < 3; i++) {
		printf("  %-29s worker 0 %8.1f cyc/DATA", egress_mode[i], e->c0_m[i]);
		if (i)
			printf(", worker 1 %8.1f cyc/DATA", e->c1_m[i]);
		printf("; wall %8.1f cyc/DATA\n", e->wall_m[i]);
	}
	for (i = 1; i < 3; i++)
		printf("  %-29s rate / 1 worker's: from the workers' cycles %.3f "
		       "(= 1w worker 0 / max(2w worker 0, 2w worker 1)); wall %.3f\n",
			egress_mode[i], e->c0_m[0] / RTE_MAX(e->c0_m[i], e->c1_m[i]),
			e->wall_m[0] / e->wall_m[i]);
	printf("egress: 1 worker: worker 0 %.1f cyc/DATA; 2 workers (WAN queue each): worker 0 "
	       "%.1f, worker 1 %.1f cyc/DATA, wall ratio %.3f; 2 workers (through worker 0): "
	       "worker 0 %.1f, worker 1 %.1f cyc/DATA, wall ratio %.3f\n",
		e->c0_m[0], e->c0_m[1], e->c1_m[1], e->wall_m[0] / e->wall_m[1], e->c0_m[2],
		e->c1_m[2], e->wall_m[0] / e->wall_m[2]);
	fflush(stdout);
}

/* ---- main ------------------------------------------------------------ */

struct result {
	/* two workers against one (run_workers), cycles per DATA x 1000 */
	uint64_t *w1wall, *w2wall, *w1c0, *w2c0, *w2c1;
	double w1wall_c, w2wall_c, w1c0_c, w2c0_c, w2c1_c;
	/* the same with auth on (run_workers_auth) */
	uint64_t *a1c0, *a2c0, *a2c1, *a1wall, *a2wall;
	double a1c0_c, a2c0_c, a2c1_c, a1wall_c, a2wall_c;
	/* two workers with a TX queue each (worker 1 sends its own AGGs),
	 * auth off and on, interleaved with the hand-off runs above */
	uint64_t *q2wall, *q2c0, *q2c1, *qa2wall, *qa2c0, *qa2c1;
	double q2wall_c, q2c0_c, q2c1_c, qa2wall_c, qa2c0_c, qa2c1_c;
	uint64_t *pipe, *pa, *io, *rd; /* cycles per DATA packet x 1000, per rep */
	uint64_t *pn; /* the pipeline with the NIC's UDP checksums, the same */
	struct stage_run *st;
	double pipe_c, pa_c, io_c, rd_c, pn_c; /* median cycles per DATA packet */
	double stage_c[ST_MAX]; /* per DATA packet */
};

static double
mpps(double c)
{
	return (double)hz / c / 1e6;
}

static double
gbps(double c)
{
	return mpps(c) * PAYLOAD * 8 / 1000;
}

/* --profile N: only the pipeline loop, N rounds per layout, for `perf
 * record` (nothing else in the process then costs cycles worth a look). */
static unsigned int profile_rounds;
/* --egress-only: the egress section alone (run_egress_all) */
static bool egress_only;
/* --ratio-only: pipeline, io-fwd and read-fwd alone, interleaved, for
 * A/B runs of two builds (a run takes seconds, not minutes) */
static bool ratio_only;

static void
run_layout(const char *name, unsigned int lag, unsigned int reps, struct result *res)
{
	uint64_t aggs = 0, drops0, v[ST_MAX][64];
	unsigned int rep, s;

	make_order(lag);
	check_pipeline();
	if (profile_rounds) {
		for (rep = 0; rep < profile_rounds; rep++)
			run_pipeline(&aggs);
		if (aggs != (uint64_t)K * profile_rounds)
			die("pipeline: not every chunk gave one AGG");
		printf("%s: %u pipeline rounds profiled\n", name, profile_rounds);
		return;
	}
	if (ratio_only)
		goto loops;
	edge_auth(true);
	check_pipeline();
	edge_auth(false);
loops:
	pl_dropped = pl_total = 0;
	drops0 = be_stat("partial_timeout") + be_stat("partial_conflict_pool") +
		be_stat("partial_conflict_bucket") + be_stat("duplicate") + be_stat("no_slot") +
		be_stat("unknown_round") + be_stat("stale_round");
	/* warm-up: one of each */
	run_pipeline(&aggs);
	run_pipeline_nic(&aggs);
	if (!ratio_only) {
		run_pipeline_auth(&aggs);
		run_stages(&res->st[0]);
	}
	run_iofwd();
	run_readfwd();
	aggs = 0;
	for (rep = 0; rep < reps; rep++) {
		res->pipe[rep] = (uint64_t)(run_pipeline(&aggs) * 1000);
		res->pn[rep] = (uint64_t)(run_pipeline_nic(&aggs) * 1000);
		if (ratio_only) {
			res->io[rep] = (uint64_t)(run_iofwd() * 1000);
			res->rd[rep] = (uint64_t)(run_readfwd() * 1000);
			continue;
		}
		res->pa[rep] = (uint64_t)(run_pipeline_auth(&aggs) * 1000);
		res->io[rep] = (uint64_t)(run_iofwd() * 1000);
		res->rd[rep] = (uint64_t)(run_readfwd() * 1000);
		run_stages(&res->st[rep]);
		{
			/* the two 2-worker modes in turn first, so that
			 * neither always runs after the other */
			struct wrun a = run_workers(1, 1), b, q;

			if (rep & 1) {
				q = run_workers(2, 2);
				b = run_workers(2, 1);
			} else {
				b = run_workers(2, 1);
				q = run_workers(2, 2);
			}

			res->w1wall[rep] = (uint64_t)(a.wall * 1000);
			res->w1c0[rep] = (uint64_t)(a.c0 * 1000);
			res->w2wall[rep] = (uint64_t)(b.wall * 1000);
			res->w2c0[rep] = (uint64_t)(b.c0 * 1000);
			res->w2c1[rep] = (uint64_t)(b.c1 * 1000);
			res->q2wall[rep] = (uint64_t)(q.wall * 1000);
			res->q2c0[rep] = (uint64_t)(q.c0 * 1000);
			res->q2c1[rep] = (uint64_t)(q.c1 * 1000);
			a = run_workers_auth(1, 1);
			if (rep & 1) {
				q = run_workers_auth(2, 2);
				b = run_workers_auth(2, 1);
			} else {
				b = run_workers_auth(2, 1);
				q = run_workers_auth(2, 2);
			}
			res->a1wall[rep] = (uint64_t)(a.wall * 1000);
			res->a1c0[rep] = (uint64_t)(a.c0 * 1000);
			res->a2wall[rep] = (uint64_t)(b.wall * 1000);
			res->a2c0[rep] = (uint64_t)(b.c0 * 1000);
			res->a2c1[rep] = (uint64_t)(b.c1 * 1000);
			res->qa2wall[rep] = (uint64_t)(q.wall * 1000);
			res->qa2c0[rep] = (uint64_t)(q.c0 * 1000);
			res->qa2c1[rep] = (uint64_t)(q.c1 * 1000);
		}
	}
	res->a1wall_c = median(res->a1wall, reps) / 1000;
	res->a2wall_c = median(res->a2wall, reps) / 1000;
	res->a1c0_c = median(res->a1c0, reps) / 1000;
	res->a2c0_c = median(res->a2c0, reps) / 1000;
	res->a2c1_c = median(res->a2c1, reps) / 1000;
	res->w1wall_c = median(res->w1wall, reps) / 1000;
	res->w2wall_c = median(res->w2wall, reps) / 1000;
	res->w1c0_c = median(res->w1c0, reps) / 1000;
	res->w2c0_c = median(res->w2c0, reps) / 1000;
	res->w2c1_c = median(res->w2c1, reps) / 1000;
	res->q2wall_c = median(res->q2wall, reps) / 1000;
	res->q2c0_c = median(res->q2c0, reps) / 1000;
	res->q2c1_c = median(res->q2c1, reps) / 1000;
	res->qa2wall_c = median(res->qa2wall, reps) / 1000;
	res->qa2c0_c = median(res->qa2c0, reps) / 1000;
	res->qa2c1_c = median(res->qa2c1, reps) / 1000;
	/* a round of the pipeline, one without checksums and one with auth
	 * on per rep */
	if (aggs != (uint64_t)K * (ratio_only ? 2 : 3) * reps)
		die("pipeline: not every chunk gave one AGG");
	if (be_stat("partial_timeout") + be_stat("partial_conflict_pool") +
			be_stat("partial_conflict_bucket") + be_stat("duplicate") +
			be_stat("no_slot") + be_stat("unknown_round") + be_stat("stale_round") !=
		drops0)
		die("pipeline: partials or drops during the run");
	for (s = ISTHD_DROP_auth_format; s <= ISTHD_DROP_auth_seal; s++)
		if (isth_ctr_get(&edge.workers[0].st.drop[s]) != 0)
			die("pipeline+auth: a refusal by auth during the run");
	res->pipe_c = median(res->pipe, reps) / 1000;
	res->pn_c = median(res->pn, reps) / 1000;
	res->pa_c = median(res->pa, reps) / 1000;
	res->io_c = median(res->io, reps) / 1000;
	res->rd_c = median(res->rd, reps) / 1000;
	for (s = 0; s < ST_MAX; s++) {
		for (rep = 0; rep < reps; rep++)
			v[s][rep] = (uint64_t)(res->st[rep].cyc[s] * 1000);
		res->stage_c[s] = median(v[s], reps) / 1000;
	}

	printf("\n== layout %s (%u chunks/round, %u DATA/round, %u rounds/loop) ==\n", name, K, NF,
		reps);
	printf("%-10s %10s %8s %12s %14s\n", "loop", "cyc/pkt", "Mpps", "Gbps(in)", "lcores@100G");
	printf("%-10s %10.1f %8.2f %12.1f %14.2f\n", "pipeline", res->pipe_c, mpps(res->pipe_c),
		gbps(res->pipe_c), 100 / gbps(res->pipe_c));
	printf("%-10s %10.1f %8.2f %12.1f %14.2f\n", "nic-csum", res->pn_c, mpps(res->pn_c),
		gbps(res->pn_c), 100 / gbps(res->pn_c));
	if (!ratio_only)
		printf("%-10s %10.1f %8.2f %12.1f %14.2f\n", "pipe+auth", res->pa_c,
			mpps(res->pa_c), gbps(res->pa_c), 100 / gbps(res->pa_c));
	printf("%-10s %10.1f %8.2f %12.1f %14.2f\n", "io-fwd", res->io_c, mpps(res->io_c),
		gbps(res->io_c), 100 / gbps(res->io_c));
	printf("%-10s %10.1f %8.2f %12.1f %14.2f\n", "read-fwd", res->rd_c, mpps(res->rd_c),
		gbps(res->rd_c), 100 / gbps(res->rd_c));
	printf("passes left out as preempted: %.2f %% of packets\n",
		100.0 * (double)pl_dropped / (double)pl_total);
	printf("pipeline rate / io-fwd rate   = %.3f\n", res->io_c / res->pipe_c);
	/* the targets: 0.5 aligned, 0.45 skewed (the accumulators'
	 * misses are the skewed layout's own cost) */
	printf("pipeline rate / read-fwd rate = %.3f   (target >= %s)\n", res->rd_c / res->pipe_c,
		strcmp(name, "skewed") == 0 ? "0.45" : "0.5");
	printf("pipeline, UDP checksums checked by the NIC, rate / read-fwd rate = %.3f\n",
		res->rd_c / res->pn_c);
	if (ratio_only) {
		fflush(stdout);
		return;
	}
	printf("pipeline+auth rate / pipeline rate = %.3f   (target >= 0.6)\n",
		res->pipe_c / res->pa_c);
	printf("pipeline+auth rate / read-fwd rate = %.3f\n", res->rd_c / res->pa_c);
	printf("stages (micro-runs, cycles per DATA packet; AGG stages are per AGG / 8):\n");
	for (s = 0; s < ST_MAX; s++)
		printf("  %-12s %8.1f%s\n", stage_names[s], res->stage_c[s],
			s == ST_ADD ? "   (lookup + sum + bookkeeping)" : "");
	printf("workers (same edge, interleaved; cycles per DATA of each worker's passes,\n"
	       "preempted passes left out; wall = first frame in to last AGG out, the\n"
	       "generator on worker 0's lcore included, preemption included):\n");
	printf("  1 worker : worker 0 %8.1f cyc/DATA; wall %8.1f cyc/DATA\n", res->w1c0_c,
		res->w1wall_c);
	printf("  2 workers: worker 0 %8.1f cyc/DATA (all DATA), worker 1 %8.1f cyc/DATA "
	       "(its half); wall %8.1f cyc/DATA\n",
		res->w2c0_c, res->w2c1_c, res->w2wall_c);
	printf("  2-worker rate / 1-worker rate: from the workers' cycles %.3f "
	       "(= 1w worker 0 / max(2w worker 0, 2w worker 1 / 2)); wall %.3f\n",
		res->w1c0_c / RTE_MAX(res->w2c0_c, res->w2c1_c / 2), res->w1wall_c / res->w2wall_c);
	printf("  2 workers, a TX queue each: worker 0 %8.1f cyc/DATA, worker 1 %8.1f "
	       "cyc/DATA; wall %8.1f cyc/DATA\n",
		res->q2c0_c, res->q2c1_c, res->q2wall_c);
	printf("  2-worker rate / 1-worker rate, a TX queue each: from the workers' cycles "
	       "%.3f; wall %.3f\n",
		res->w1c0_c / RTE_MAX(res->q2c0_c, res->q2c1_c / 2), res->w1wall_c / res->q2wall_c);
	printf("  worker 0 cyc/DATA, a TX queue each / hand-off: %.3f\n",
		res->q2c0_c / res->w2c0_c);
	printf("  auth on, 1 worker : worker 0 %8.1f cyc/DATA; wall %8.1f cyc/DATA\n", res->a1c0_c,
		res->a1wall_c);
	printf("  auth on, 2 workers: worker 0 %8.1f cyc/DATA (all DATA), worker 1 %8.1f "
	       "cyc/DATA (its half); wall %8.1f cyc/DATA\n",
		res->a2c0_c, res->a2c1_c, res->a2wall_c);
	printf("  auth on, 2 workers, a TX queue each: worker 0 %8.1f cyc/DATA, worker 1 "
	       "%8.1f cyc/DATA; wall %8.1f cyc/DATA\n",
		res->qa2c0_c, res->qa2c1_c, res->qa2wall_c);
	printf("  %-12s %8.1f   (add_burst - sum kernel)\n", "lookup etc.",
		res->stage_c[ST_ADD] - res->stage_c[ST_SUM]);
	{
		double tot = res->stage_c[ST_RX] + res->stage_c[ST_PARSE] + res->stage_c[ST_ADD] +
			res->stage_c[ST_BUILD] + res->stage_c[ST_SEND] + res->stage_c[ST_FREE];

		printf("  %-12s %8.1f   (rx + parse + add_burst + build + send + free)\n",
			"sum of parts", tot);
		printf("  %-12s %8.1f   (pipeline - sum of parts: the pass's other\n"
		       "                          polls, counters, prefetch, cache interplay)\n",
			"rest", res->pipe_c - tot);
	}
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	unsigned int reps = 15, i;
	struct result res[2];
	struct eresult eg;
	char cfg[128], sched[128], err[1024];
	int a;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--quick") == 0) {
			reps = 3;
			K = 1024;
		} else if (strcmp(argv[a], "--chunks") == 0 && a + 1 < argc) {
			K = (unsigned int)strtoul(argv[++a], NULL, 0);
		} else if (strcmp(argv[a], "--reps") == 0 && a + 1 < argc) {
			reps = (unsigned int)strtoul(argv[++a], NULL, 0);
		} else if (strcmp(argv[a], "--profile") == 0 && a + 1 < argc) {
			profile_rounds = (unsigned int)strtoul(argv[++a], NULL, 0);
		} else if (strcmp(argv[a], "--egress-only") == 0) {
			egress_only = true;
		} else if (strcmp(argv[a], "--ratio-only") == 0) {
			ratio_only = true;
		} else if (strcmp(argv[a], "--huge") == 0) {
			huge = true;
		} else {
			fprintf(stderr,
				"usage: %s [--quick] [--chunks K] [--reps N] [--profile N] "
				"[--egress-only | --ratio-only] [--huge]\n",
				argv[0]);
			return 2;
		}
	}
	if (K < 64 || K % N_SND || reps < 1 || reps > 64) {
		fprintf(stderr, "--chunks: multiple of 8, >= 64; --reps 1..64\n");
		return 2;
	}
	have_avx512 = __builtin_cpu_supports("avx512f");
	eal_up(argv[0]);
	build_frames();
	pl_init(NF / BURST + 1024);
	wlog0.cyc = calloc(WLOG_CAP, sizeof(uint64_t));
	wlog0.pkts = calloc(WLOG_CAP, sizeof(uint32_t));
	wlog1.cyc = calloc(WLOG_CAP, sizeof(uint64_t));
	wlog1.pkts = calloc(WLOG_CAP, sizeof(uint32_t));
	wlog_scratch = calloc(WLOG_CAP, sizeof(uint64_t));
	if (!wlog0.cyc || !wlog0.pkts || !wlog1.cyc || !wlog1.pkts || !wlog_scratch)
		die("worker logs");
	order = calloc(NF, sizeof(*order));
	first_of = calloc(NF, 1);
	last_of = calloc(NF, 1);
	if (!order || !first_of || !last_of)
		die("order");

	snprintf(dir, sizeof(dir), "/tmp/isth-bench-%d", getpid());
	mkdir(dir, 0700);
	snprintf(cfg, sizeof(cfg), "%s/edge.conf", dir);
	snprintf(sched, sizeof(sched), "%s/bench.sched", dir);
	write_files(cfg, sched);
	{
		/* the job's key file (mode 0600), and the peers' side of it */
		struct isth_auth_conf ac = {.job = JOB, .n_islands = N_ISL};
		char kf[160];
		FILE *f;

		snprintf(kf, sizeof(kf), "%s/bench.keys", dir);
		f = fopen(kf, "w");
		if (f == NULL)
			die("key file");
		fprintf(f, "job %u\nepoch 1 round 0 key %064x\n", JOB, 0x5eed);
		fclose(f);
		if (chmod(kf, 0600) != 0)
			die("key file mode");
		ac.key_file = kf;
		if (isth_auth_create(&ac, &gkeys, err, sizeof(err)) != 0)
			die(err);
		if (isth_auth_engine_create(gkeys, ISTH_AUTH_IPSEC_MB, &geng) != 0)
			die("generator engine");
	}
	if (isthd_config_load(cfg, &edge.cfg, err, sizeof(err)) != 0)
		die(err);
	/* two workers (run_workers), each backend as large as one worker's
	 * would be: the 1-worker runs use worker 0's alone (n_workers = 1) */
	edge.n_workers = 2;
	edge.cfg.agg_memory *= 2;
	edge.cfg.agg_max_chunks *= 2;
	if (isthd_prepare(&edge, 0, err, sizeof(err)) != 0 ||
		isthd_setup(&edge, err, sizeof(err)) != 0)
		die(err);
	edge.n_workers = 1;
	/* the port has a TX queue per worker (two rings): set-up chose them;
	 * each workers run picks its mode (run_workers), the rest use 1 */
	if (edge.access_txq != 2)
		die("access port: not a TX queue per worker");
	edge.access_txq = 1;
	/* the WAN port likewise (two rings): the egress runs pick 1 or 2
	 * (run_egress), the rest use 1, as before the port had two */
	if (edge.wan_txq != 2)
		die("WAN port: not a TX queue per worker");
	edge.wan_txq = 1;
	isthd_workers_roles(&edge); /* the modes above: worker 0's roles, TX paths */
	/* a loaded host may take longer than a round to set the edge up:
	 * round 0 starts a second before now, whatever set-up took */
	edge.clk.epoch_ns = wall_ns() - 1000000000ull;
	edge.workers[0].expire_next = edge.rep.tail_next = 0;
	edge.workers[1].expire_next = 0;
	lim_v2 = edge.lim;
	if (isth_wire_limits_init(&lim_v1, N_ISL, MTU) != 0 || lim_v2.max_elems != ELEMS ||
		lim_v1.max_elems != ELEMS)
		die("limits: a chunk is not 256 elements with and without auth");
	lim_v1.udp_port = lim_v2.udp_port;
	edge_auth(false);
	port_a = edge.access_port;
	port_w = edge.wan_port;
	/* The controller's first step, round 0 current. Started after the
	 * epoch, it would join at round 1 (control.c, join) and give worker
	 * 0's pacer round 1's plan, which starts a round (1000 s) from now: a
	 * pacer's plans start one after the other, so the egress runs' plans,
	 * which start now (egress_publish), could never follow it. The bench
	 * joins for it, at round 1, and leaves every pacer's plans to the
	 * egress runs: the controller publishes round 1's tables only. */
	edge.join1 = 2;
	__atomic_store_n(&edge.published, 1, __ATOMIC_RELEASE);
	for (i = 0; i < ISTHD_MAX_WORKERS; i++)
		edge.pace_published[i] = 2;
	if (isthd_control_step(&edge, isth_clock_real_ns()) != 0 ||
		__atomic_load_n(&edge.current, __ATOMIC_RELAXED) != 1)
		die("controller: round 0 is not current");
	isthd_worker_poll(&edge.workers[0]);
	drain_access();
	stages_init();

	printf("isthmusd appliance benchmark: sw backend (%s kernels), 1 lcore,\n"
	       "9 islands, 8 senders, 1 KiB fp32 DATA (%u-byte frames), bursts of %u,\n"
	       "TSC %.2f GHz; read-fwd reads with %s loads; UDP checksums in software with "
	       "the %s kernel;\nmemory on %s\n",
		isth_agg_kernel_name(s_k.id), FRAME, BURST, hz / 1e9,
		have_avx512 ? "AVX-512" : "scalar 64-bit", isth_wire_sum_kernel(),
		huge ? "2 MiB hugepages (--huge)"
		     : "4 KiB pages (--no-huge; --huge for hugepages)");
	for (i = 0; i < 2; i++) {
		res[i].pipe = calloc(reps, sizeof(uint64_t));
		res[i].pn = calloc(reps, sizeof(uint64_t));
		res[i].pa = calloc(reps, sizeof(uint64_t));
		res[i].io = calloc(reps, sizeof(uint64_t));
		res[i].rd = calloc(reps, sizeof(uint64_t));
		res[i].st = calloc(reps, sizeof(struct stage_run));
		if (!res[i].pipe || !res[i].pn || !res[i].pa || !res[i].io || !res[i].rd ||
			!res[i].st)
			die("results");
		res[i].w1wall = calloc(reps, sizeof(uint64_t));
		res[i].w2wall = calloc(reps, sizeof(uint64_t));
		res[i].w1c0 = calloc(reps, sizeof(uint64_t));
		res[i].w2c0 = calloc(reps, sizeof(uint64_t));
		res[i].w2c1 = calloc(reps, sizeof(uint64_t));
		res[i].a1wall = calloc(reps, sizeof(uint64_t));
		res[i].a2wall = calloc(reps, sizeof(uint64_t));
		res[i].a1c0 = calloc(reps, sizeof(uint64_t));
		res[i].a2c0 = calloc(reps, sizeof(uint64_t));
		res[i].a2c1 = calloc(reps, sizeof(uint64_t));
		res[i].q2wall = calloc(reps, sizeof(uint64_t));
		res[i].q2c0 = calloc(reps, sizeof(uint64_t));
		res[i].q2c1 = calloc(reps, sizeof(uint64_t));
		res[i].qa2wall = calloc(reps, sizeof(uint64_t));
		res[i].qa2c0 = calloc(reps, sizeof(uint64_t));
		res[i].qa2c1 = calloc(reps, sizeof(uint64_t));
		if (!res[i].q2wall || !res[i].q2c0 || !res[i].q2c1 || !res[i].qa2wall ||
			!res[i].qa2c0 || !res[i].qa2c1)
			die("results");
		if (!res[i].w1wall || !res[i].w2wall || !res[i].w1c0 || !res[i].w2c0 ||
			!res[i].w2c1 || !res[i].a1wall || !res[i].a2wall || !res[i].a1c0 ||
			!res[i].a2c0 || !res[i].a2c1)
			die("results");
	}
	if (egress_only) {
		run_egress_all(reps, &eg);
		goto egress_summary;
	}
	run_layout("aligned", 0, reps, &res[0]);
	run_layout("skewed", K / N_SND, reps, &res[1]);
	if (profile_rounds)
		goto teardown;
	if (ratio_only) {
		printf("\nsummary: pipeline/read-fwd = %.3f (aligned), %.3f (skewed); "
		       "UDP checksums checked by the NIC %.3f, %.3f\n",
			res[0].rd_c / res[0].pipe_c, res[1].rd_c / res[1].pipe_c,
			res[0].rd_c / res[0].pn_c, res[1].rd_c / res[1].pn_c);
		goto teardown;
	}
	run_egress_all(reps, &eg);

	printf("\nsummary: pipeline+auth/pipeline = %.3f (aligned), %.3f (skewed) (target >= "
	       "0.6)\n",
		res[0].pipe_c / res[0].pa_c, res[1].pipe_c / res[1].pa_c);
	printf("summary: pipeline, UDP checksums checked by the NIC, /read-fwd = %.3f "
	       "(aligned), %.3f (skewed)\n",
		res[0].rd_c / res[0].pn_c, res[1].rd_c / res[1].pn_c);
	printf("summary: pipeline/read-fwd = %.3f (aligned), %.3f (skewed); "
	       "pipeline/io-fwd = %.3f, %.3f;\n"
	       "Gbps of aggregated input per lcore = %.1f, %.1f (target: 100 on <= 2 lcores)\n",
		res[0].rd_c / res[0].pipe_c, res[1].rd_c / res[1].pipe_c,
		res[0].io_c / res[0].pipe_c, res[1].io_c / res[1].pipe_c, gbps(res[0].pipe_c),
		gbps(res[1].pipe_c));
	printf("summary: 2-worker rate / 1-worker rate from the workers' cycles = %.3f "
	       "(aligned), %.3f (skewed); wall %.3f, %.3f;\n"
	       "cyc/DATA with 2 workers: worker 0 %.1f, %.1f, worker 1 %.1f, %.1f "
	       "(1 worker: %.1f, %.1f)\n",
		res[0].w1c0_c / RTE_MAX(res[0].w2c0_c, res[0].w2c1_c / 2),
		res[1].w1c0_c / RTE_MAX(res[1].w2c0_c, res[1].w2c1_c / 2),
		res[0].w1wall_c / res[0].w2wall_c, res[1].w1wall_c / res[1].w2wall_c, res[0].w2c0_c,
		res[1].w2c0_c, res[0].w2c1_c, res[1].w2c1_c, res[0].w1c0_c, res[1].w1c0_c);
	printf("summary: auth on, cyc/DATA with 2 workers: worker 0 %.1f, %.1f, worker 1 %.1f, "
	       "%.1f (1 worker: %.1f, %.1f); wall 2w/1w rate %.3f, %.3f\n",
		res[0].a2c0_c, res[1].a2c0_c, res[0].a2c1_c, res[1].a2c1_c, res[0].a1c0_c,
		res[1].a1c0_c, res[0].a1wall_c / res[0].a2wall_c,
		res[1].a1wall_c / res[1].a2wall_c);
	printf("summary: a TX queue per worker vs hand-off, 2 workers: worker 0 cyc/DATA %.1f vs "
	       "%.1f (aligned), %.1f vs %.1f (skewed), ratio %.3f, %.3f; 2w/1w rate from the "
	       "workers' cycles %.3f vs %.3f, %.3f vs %.3f; auth on worker 0 %.1f vs %.1f, "
	       "%.1f vs %.1f\n",
		res[0].q2c0_c, res[0].w2c0_c, res[1].q2c0_c, res[1].w2c0_c,
		res[0].q2c0_c / res[0].w2c0_c, res[1].q2c0_c / res[1].w2c0_c,
		res[0].w1c0_c / RTE_MAX(res[0].q2c0_c, res[0].q2c1_c / 2),
		res[0].w1c0_c / RTE_MAX(res[0].w2c0_c, res[0].w2c1_c / 2),
		res[1].w1c0_c / RTE_MAX(res[1].q2c0_c, res[1].q2c1_c / 2),
		res[1].w1c0_c / RTE_MAX(res[1].w2c0_c, res[1].w2c1_c / 2), res[0].qa2c0_c,
		res[0].a2c0_c, res[1].qa2c0_c, res[1].a2c0_c);
egress_summary:
	printf("summary: egress (the island's DATA to 8 peers), cyc/DATA: 1 worker: worker 0 "
	       "%.1f; 2 workers, WAN queue each: worker 0 %.1f, worker 1 %.1f, 2w/1w rate from "
	       "the workers' cycles %.3f, wall %.3f; 2 workers, through worker 0: worker 0 %.1f, "
	       "worker 1 %.1f, 2w/1w rate %.3f, wall %.3f\n",
		eg.c0_m[0], eg.c0_m[1], eg.c1_m[1], eg.c0_m[0] / RTE_MAX(eg.c0_m[1], eg.c1_m[1]),
		eg.wall_m[0] / eg.wall_m[1], eg.c0_m[2], eg.c1_m[2],
		eg.c0_m[0] / RTE_MAX(eg.c0_m[2], eg.c1_m[2]), eg.wall_m[0] / eg.wall_m[2]);

teardown: /* every frame back to its pool */
	isthd_dp_drain_final(&edge);
	drain_access();
	isth_resend_destroy(s_ring);
	isth_agg_destroy(s_agg);
	isthd_teardown(&edge);
	reclaim(fpool);
	reclaim(fpool2);
	for (i = 0; i < NF; i++) {
		rte_pktmbuf_free(frames[i]);
		rte_pktmbuf_free(frames2[i]);
	}
	isth_auth_engine_free(geng);
	isth_auth_free(gkeys);
	isthd_ports_close(&edge);
	snprintf(cfg, sizeof(cfg), "rm -rf %s", dir);
	if (system(cfg) != 0)
		fprintf(stderr, "cleanup of %s failed\n", dir);
	isth_test_eal_cleanup();
	return 0;
}
