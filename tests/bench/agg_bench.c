/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Aggregation benchmarks, ratios measured side by side in one run.
 *
 * 1. Summation: TSC cycles per payload byte of each kernel set (scalar,
 *    AVX2, AVX-512) for fp32, bf16 and int32, against memcpy of the same
 *    payload bytes, in L1-, L2- and memory-sized working sets. Both go
 *    1 KiB of payload per call, as packets do. Working set = payload +
 *    accumulator (the kernels) or payload + destination (memcpy).
 * 2. Engine end to end: chunks per second for 1 KiB fp32 contributions
 *    from 2, 4 and 8 senders, slot table (16 MiB) larger than L2, including
 *    drain, copy-out of each aggregate and release. "aligned": senders send
 *    the chunks of a round in the same order (few slots live); "skewed":
 *    sender j starts its round at chunk j * n_chunks / S, so every chunk of
 *    the round is live at once and the live accumulators (12 MiB) exceed L2.
 *
 * Best of several repetitions (the host is shared); cycles are TSC cycles.
 * Usage: bench_agg [--quick]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <x86intrin.h>

#include "isth_agg.h"

#define PKT_PAYLOAD 1024u
#define REPS 5

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *
xalloc(size_t size)
{
	void *p = aligned_alloc(64, (size + 63) & ~(size_t)63);

	if (p == NULL) {
		fprintf(stderr, "out of memory (%zu bytes)\n", size);
		exit(1);
	}
	memset(p, 0, size);
	return p;
}

enum op { OP_MEMCPY, OP_VCOPY, OP_FP32, OP_BF16, OP_INT32, OP_MAX };
static const char *const op_names[OP_MAX] = {
	"memcpy",
	"vcopy",
	"fp32",
	"bf16",
	"int32",
};

/*
 * A second baseline: an AVX-512 copy loop with the kernels' own load and
 * store shape (libc memcpy pays a dispatch and size-class cost per call).
 */
__attribute__((target("avx512f"))) static void
vcopy(uint8_t *dst, const uint8_t *src, size_t size)
{
	size_t i;

	for (i = 0; i + 256 <= size; i += 256) {
		__m512i a = _mm512_loadu_si512(src + i);
		__m512i b = _mm512_loadu_si512(src + i + 64);
		__m512i c = _mm512_loadu_si512(src + i + 128);
		__m512i d = _mm512_loadu_si512(src + i + 192);

		_mm512_storeu_si512(dst + i, a);
		_mm512_storeu_si512(dst + i + 64, b);
		_mm512_storeu_si512(dst + i + 128, c);
		_mm512_storeu_si512(dst + i + 192, d);
	}
}

/* Bytes of accumulator (or memcpy destination) per payload byte. */
static size_t
acc_per_payload(enum op op)
{
	return op == OP_BF16 ? 2 : 1;
}

/*
 * One pass over n_pkts 1 KiB payloads into their accumulators.
 * src + i * 1024 is misaligned by 4 bytes on purpose (a payload after a
 * 40-byte header in an mbuf is not 64-byte aligned).
 */
static void
pass(enum op op, const struct isth_agg_kernels *k, uint8_t *acc, const uint8_t *src, size_t n_pkts)
{
	size_t i, ab = PKT_PAYLOAD * acc_per_payload(op);

	for (i = 0; i < n_pkts; i++) {
		const uint8_t *s = src + i * PKT_PAYLOAD;
		uint8_t *a = acc + i * ab;

		switch (op) {
		case OP_MEMCPY:
			memcpy(a, s, PKT_PAYLOAD);
			break;
		case OP_VCOPY:
			vcopy(a, s, PKT_PAYLOAD);
			break;
		case OP_FP32:
			k->add_fp32((float *)a, s, PKT_PAYLOAD / 4);
			break;
		case OP_BF16:
			k->add_bf16((float *)a, s, PKT_PAYLOAD / 2);
			break;
		default:
			k->add_int32((int32_t *)a, s, PKT_PAYLOAD / 4);
			break;
		}
	}
}

/* Best TSC cycles per payload byte over REPS timed runs. */
static double
measure(enum op op, const struct isth_agg_kernels *k, uint8_t *acc, const uint8_t *src,
	size_t payload, uint64_t min_bytes)
{
	size_t n_pkts = payload / PKT_PAYLOAD;
	uint64_t passes = (min_bytes + payload - 1) / payload, p;
	double best = 1e30;
	int r;

	pass(op, k, acc, src, n_pkts); /* warm up, fault pages in */
	for (r = 0; r < REPS; r++) {
		uint64_t t0 = __rdtsc(), t1;
		double c;

		for (p = 0; p < passes; p++)
			pass(op, k, acc, src, n_pkts);
		t1 = __rdtsc();
		c = (double)(t1 - t0) / ((double)passes * payload);
		if (c < best)
			best = c;
	}
	return best;
}

static double
tsc_hz(void)
{
	double t0 = now_s(), t1;
	uint64_t c0 = __rdtsc(), c1;

	do
		t1 = now_s();
	while (t1 - t0 < 0.1);
	c1 = __rdtsc();
	return (double)(c1 - c0) / (t1 - t0);
}

static void
bench_kernels(bool quick, double hz)
{
	static const struct {
		const char *name;
		size_t ws; /* bytes: payload + accumulator */
	} sets[] = {
		{"L1 (32 KiB)", 32u << 10},
		{"L2 (1 MiB)", 1u << 20},
		{"mem (512 MiB)", 512u << 20},
	};
	struct isth_agg_kernels ks[ISTH_AGG_KERNEL_MAX];
	bool have[ISTH_AGG_KERNEL_MAX] = {false};
	bool have_vcopy = __builtin_cpu_supports("avx512f");
	unsigned int si, k, op;
	size_t i;

	for (k = ISTH_AGG_KERNEL_SCALAR; k < ISTH_AGG_KERNEL_MAX; k++)
		have[k] = isth_agg_kernels_get(k, &ks[k]) == 0;

	printf("Summation: TSC cycles per payload byte (best of %d), 1 KiB per call.\n"
	       "Ratios = kernel / copy of the same payload bytes in the same working set:\n"
	       "libc memcpy, and vcopy (an AVX-512 load/store loop, 0 if absent).\n"
	       "TSC %.2f GHz.\n\n",
		REPS, hz / 1e9);
	printf("%-14s %-6s %-7s %8s %7s %8s %7s %8s %7s\n", "working set", "dtype", "kernel",
		"cyc/B", "GB/s", "memcpy", "ratio", "vcopy", "ratio");
	for (si = 0; si < sizeof(sets) / sizeof(sets[0]); si++) {
		size_t ws = sets[si].ws;
		uint64_t min_bytes = quick ? (64u << 20) : (512u << 20);
		double mc[OP_MAX], vc[OP_MAX];
		uint8_t *src, *acc, *acc_base;

		if (quick && ws > (64u << 20))
			ws = 64u << 20;
		if (ws > (64u << 20))
			min_bytes = 2 * ws; /* a few passes at least */
		/* payload sized per op below; buffers for the largest need */
		/*
		 * Half a page between the payload's and the accumulator's page
		 * offsets: with equal offsets every load would 4K-alias the
		 * store just before it, a penalty of the layout, not the code.
		 */
		src = xalloc(ws + 64);
		acc_base = xalloc(ws + 8192 + 64);
		acc = (uint8_t *)(((uintptr_t)src + 2048) % 4096 +
			((uintptr_t)acc_base + 4095) / 4096 * 4096);
		/* normal floats near 1 (their top halves are normal bf16) */
		for (i = 0; i < (ws + 64) / 4; i++) {
			float f = 1.0f + (float)(i % 1000) / 1024.0f;

			memcpy(src + 4 * i, &f, 4);
		}

		for (op = OP_FP32; op < OP_MAX; op++) {
			size_t payload = ws / (1 + acc_per_payload(op));

			payload -= payload % PKT_PAYLOAD;
			/* memcpy baseline over the same payload bytes */
			mc[op] = measure(OP_MEMCPY, NULL, acc, src + 4, payload, min_bytes);
			vc[op] = have_vcopy
				? measure(OP_VCOPY, NULL, acc, src + 4, payload, min_bytes)
				: 0;
			for (k = ISTH_AGG_KERNEL_SCALAR; k < ISTH_AGG_KERNEL_MAX; k++) {
				double c, gbs;

				if (!have[k])
					continue;
				memset(acc, 0, ws);
				c = measure(op, &ks[k], acc, src + 4, payload, min_bytes);
				gbs = hz / c / 1e9;
				printf("%-14s %-6s %-7s %8.3f %7.2f %8.3f %7.2f %8.3f %7.2f\n",
					sets[si].name, op_names[op], isth_agg_kernel_name(k), c,
					gbs, mc[op], c / mc[op], vc[op],
					vc[op] > 0 ? c / vc[op] : 0);
			}
		}
		free(src);
		free(acc_base);
	}
	printf("\n");
}

/* Engine end to end. */

#define E_CHUNKS 12288u /* 12 MiB of live accumulators when skewed */
#define E_BUDGET (16u << 20) /* 16 Ki slots of 1 KiB, > L2 (2 MiB) */
#define E_POOL 2048u /* distinct 1 KiB payloads (2 MiB) */
#define E_BURST 32u

struct e_result {
	double chunks_per_s;
	double contrib_per_s;
	double ns_per_contrib;
	uint64_t drops;
	uint64_t partials;
};

static uint64_t
drain_all(struct isth_agg *agg, struct isth_agg_emit *e, uint8_t *out)
{
	uint64_t n = 0;
	unsigned int m, i;

	while ((m = isth_agg_drain(agg, e, E_BURST * 2)) > 0) {
		for (i = 0; i < m; i++) {
			/* the copy into the AGG packet a caller must make */
			isth_agg_emit_copy(agg, &e[i], out, PKT_PAYLOAD);
			isth_agg_release(agg, &e[i]);
		}
		n += m;
	}
	return n;
}

static int
bench_engine_one(enum isth_agg_kernel kern, unsigned int n_send, bool skewed, unsigned int rounds,
	const uint8_t *pool, struct e_result *res)
{
	struct isth_agg_params p = {
		.mem_budget = E_BUDGET,
		.max_elems = PKT_PAYLOAD / 4,
		.max_chunks = E_CHUNKS,
		.n_islands = 8,
		.window = 4,
		.timeout_ns = 1000000000ull,
		.reserve = ISTH_AGG_RESERVE_DEFAULT,
		.kernel = kern,
	};
	struct isth_agg_emit e[E_BURST * 2];
	struct isth_agg_contrib c[E_BURST];
	static uint8_t out[PKT_PAYLOAD];
	uint64_t total = (uint64_t)E_CHUNKS * n_send, emitted = 0, done = 0;
	struct isth_agg_stats st;
	struct isth_agg *agg;
	unsigned int r, pi = 0;
	double t0 = 0, t1;

	agg = isth_agg_create(&p);
	if (agg == NULL)
		return -1;
	/* round 0 is a warm-up, not timed */
	for (r = 0; r <= rounds; r++) {
		uint64_t i;

		if (r == 1) {
			isth_agg_stats_get(agg, &st);
			done = st.completed;
			t0 = now_s();
		}
		isth_agg_set_round(agg, 1, r, (1ull << n_send) - 1);
		/* contribution i: sender i % S, that sender's (i / S)-th chunk */
		for (i = 0; i < total; i += E_BURST) {
			unsigned int k, n = 0;

			for (k = 0; k < E_BURST && i + k < total; k++, n++) {
				uint64_t j = i + k;
				unsigned int s = (unsigned int)(j % n_send);
				uint32_t ch = (uint32_t)(j / n_send);

				if (skewed)
					ch = (ch + s * (E_CHUNKS / n_send)) % E_CHUNKS;
				c[k] = (struct isth_agg_contrib){
					.job = 1,
					.round = r,
					.chunk = ch,
					.sender = (uint8_t)s,
					.dtype = ISTH_WIRE_DTYPE_FP32,
					.count = PKT_PAYLOAD / 4,
					.data = pool +
						(size_t)(pi++ % E_POOL) * (PKT_PAYLOAD + 64) + 4,
				};
			}
			isth_agg_add_burst(agg, c, n, 0);
			emitted += drain_all(agg, e, out);
		}
	}
	t1 = now_s();
	isth_agg_stats_get(agg, &st);
	res->chunks_per_s = (double)(st.completed - done) / (t1 - t0);
	res->contrib_per_s = res->chunks_per_s * n_send;
	res->ns_per_contrib = 1e9 / res->contrib_per_s;
	res->drops = st.duplicate + st.duplicate_emitted + st.unexpected_sender + st.stale_round +
		st.unknown_round + st.unknown_job + st.mismatch + st.bad_input + st.no_slot +
		st.chunk_closed;
	res->partials = st.partial_timeout + st.partial_conflict_pool + st.partial_conflict_bucket +
		st.partial_flush;
	(void)emitted;
	isth_agg_destroy(agg);
	return 0;
}

static void
bench_engine(bool quick)
{
	static const unsigned int senders[] = {2, 4, 8};
	unsigned int rounds = quick ? 2 : 6, si, k, sk;
	uint8_t *pool = xalloc((size_t)E_POOL * (PKT_PAYLOAD + 64));
	size_t i;

	for (i = 0; i < (size_t)E_POOL * (PKT_PAYLOAD + 64) / 4; i++) {
		float f = 1.0f + (float)(i % 1000) / 1024.0f;

		memcpy(pool + 4 * i, &f, 4);
	}

	printf("Engine end to end: 1 KiB fp32 contributions, %u chunks per round,\n"
	       "%u MiB slot table (L2 is 2 MiB per core), bursts of %u, drain + copy-out +\n"
	       "release included, best of %u timed rounds' average.\n\n",
		E_CHUNKS, E_BUDGET >> 20, E_BURST, rounds);
	printf("%-8s %-8s %-7s %12s %12s %10s %11s %6s %8s\n", "senders", "layout", "kernel",
		"chunks/s", "contrib/s", "ns/contrib", "Gbit/s in", "drops", "partials");
	for (si = 0; si < sizeof(senders) / sizeof(senders[0]); si++) {
		for (sk = 0; sk < 2; sk++) {
			for (k = ISTH_AGG_KERNEL_SCALAR; k < ISTH_AGG_KERNEL_MAX; k++) {
				struct e_result best = {0}, res;
				int rep;

				if (!isth_agg_kernel_supported(k))
					continue;
				for (rep = 0; rep < (quick ? 1 : 3); rep++) {
					if (bench_engine_one(
						    k, senders[si], sk, rounds, pool, &res) < 0) {
						perror("isth_agg_create");
						exit(1);
					}
					if (res.chunks_per_s > best.chunks_per_s)
						best = res;
				}
				printf("%-8u %-8s %-7s %12.0f %12.0f %10.1f %11.2f %6llu %8llu\n",
					senders[si], sk ? "skewed" : "aligned",
					isth_agg_kernel_name(k), best.chunks_per_s,
					best.contrib_per_s, best.ns_per_contrib,
					best.contrib_per_s * PKT_PAYLOAD * 8 / 1e9,
					(unsigned long long)best.drops,
					(unsigned long long)best.partials);
			}
		}
	}
	free(pool);
}

/* Best TSC cycles per call of one 1 KiB fp32 chunk over 64 chunks that
 * stay in L1 (the edge checks a payload its parse and tag verify have just
 * read): @what 0 add only, 1 finite check only, 2 check then add. */
static double
finite_cycles(const struct isth_agg_kernels *k, int what, uint8_t *acc, const uint8_t *src)
{
	double best = 1e30;
	unsigned int ok = 0;

	for (int r = 0; r < REPS; r++) {
		uint64_t t0 = __rdtsc(), t1;

		for (int p = 0; p < 1000; p++)
			for (size_t i = 0; i < 8; i++) {
				const uint8_t *s = src + i * PKT_PAYLOAD;
				float *a = (float *)(void *)(acc + i * PKT_PAYLOAD);

				if (what != 0)
					ok += k->within_fp32(
						s, PKT_PAYLOAD / 4, ISTH_AGG_FP32_MAX_BITS);
				if (what != 1)
					k->add_fp32(a, s, PKT_PAYLOAD / 4);
			}
		t1 = __rdtsc();
		if ((double)(t1 - t0) / 8000.0 < best)
			best = (double)(t1 - t0) / 8000.0;
	}
	if (what != 0 && ok == 0)
		printf("(every chunk non-finite?)\n");
	return best;
}

/* The cost of refusing non-finite fp32 chunks (isth_agg_finite, the
 * edge's data_nonfinite) beside the sum it guards, with the load. */
static void
bench_finite(void)
{
	uint8_t *src = (uint8_t *)xalloc(8 * PKT_PAYLOAD + 64) + 4;
	uint8_t *acc = xalloc(8 * PKT_PAYLOAD);
	double load = 0;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f != NULL) {
		if (fscanf(f, "%lf", &load) != 1)
			load = -1;
		fclose(f);
	}
	for (size_t i = 0; i < 8 * PKT_PAYLOAD / 4; i++) {
		float x = (float)(i % 977) * 0.25f;

		memcpy(src + 4 * i, &x, 4);
	}
	printf("Finite check (NaN/Inf) of a 1 KiB fp32 chunk in L1: TSC cycles per chunk, "
	       "best of %d (load %.2f)\n",
		REPS, load);
	printf("%-7s %8s %8s %12s %8s\n", "kernel", "add", "check", "check+add", "extra");
	for (enum isth_agg_kernel k = ISTH_AGG_KERNEL_SCALAR; k < ISTH_AGG_KERNEL_MAX; k++) {
		struct isth_agg_kernels ks;
		double a, c, ca;

		if (isth_agg_kernels_get(k, &ks) < 0)
			continue;
		a = finite_cycles(&ks, 0, acc, src);
		c = finite_cycles(&ks, 1, acc, src);
		ca = finite_cycles(&ks, 2, acc, src);
		printf("%-7s %8.1f %8.1f %12.1f %7.0f%%\n", isth_agg_kernel_name(k), a, c, ca,
			100.0 * (ca - a) / a);
	}
	printf("\n");
	free(src - 4);
	free(acc);
}

int
main(int argc, char **argv)
{
	bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	double hz = tsc_hz();

	bench_kernels(quick, hz);
	bench_finite();
	bench_engine(quick);
	return 0;
}
