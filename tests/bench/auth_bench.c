/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Authentication cost per packet (lib/auth), ratios measured
 * side by side in one run.
 *
 * N sealed v2 messages of S bytes (default 1432: header, body and the
 * 16-byte tag), each at a 2-byte offset from a 64-byte boundary as a
 * message after the Ethernet/IPv4/UDP headers in an mbuf is, in a working
 * set of N * S bytes (default N = 256: 367 KB, L2-sized). Per message,
 * TSC cycles of:
 *   read      sum every 64-bit word of the message (the floor: touching
 *             the bytes at all)
 *   memcpy    copy the message to a second buffer
 *   verify    isth_auth_verify(), one call per message
 *   verify32  isth_auth_verify_burst() over bursts of 32
 *   seal32    isth_auth_seal_burst() over bursts of 32 (re-seals in place)
 *   sum fp32  lib/agg's fp32 kernel adds the body into an accumulator per
 *             message (the aggregation's own work per DATA)
 *   verify32+sum  a burst of 32 verified, then its 32 bodies summed (the
 *             bytes are in L1/L2 from the verify when the kernel reads them)
 *   tag list k=2, k=8 seal32  a WAN tag list of k tags per message
 *             (isth_auth_seal_burst of WAN_PAIR ops, bursts of 32 ops, so
 *             32 k GMACs in submissions of 32); printed also
 *             as auth cycles per DATA an edge receives, beside one tag
 * for the OpenSSL EVP and the intel-ipsec-mb engine.
 *
 * Best of REPS repetitions, all variants interleaved per repetition so
 * that each ratio sees the same load on this shared host.
 * Usage: bench_auth [--size S] [--msgs N] [--quick]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <intel-ipsec-mb.h>
#include <x86intrin.h>

#include <openssl/crypto.h>

#include "isth_agg.h"
#include "isth_auth.h"

#define BURST 32u
#define OFFSET 2u /* 14-byte Ethernet + 20 IPv4 + 8 UDP = 42 = 64k + 42; mod 4 = 2 */

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double
tsc_hz(void)
{
	double t0 = now_s();
	uint64_t c0 = __rdtsc();

	while (now_s() - t0 < 0.2)
		;
	return (double)(__rdtsc() - c0) / (now_s() - t0);
}

enum variant {
	V_READ,
	V_MEMCPY,
	V_SUM,
	V_OSSL_1,
	V_OSSL_32,
	V_OSSL_SEAL,
	V_IMB_1,
	V_IMB_32,
	V_IMB_SEAL,
	V_IMB_32_SUM,
	V_IMB_SEAL_K2,
	V_IMB_SEAL_K8,
	V_MAX
};
static const char *const vname[V_MAX] = {
	"read",
	"memcpy",
	"sum fp32",
	"openssl verify",
	"openssl verify32",
	"openssl seal32",
	"ipsec-mb verify",
	"ipsec-mb verify32",
	"ipsec-mb seal32",
	"ipsec-mb verify32+sum",
	"tag list k=2 seal32",
	"tag list k=8 seal32",
};

/*
 * A WAN tag list of @k tags per message, as an edge seals its island's
 * DATA for k peers (doc/protocol.md, "WAN tag list"): isth_auth_seal_burst()
 * of ISTH_AUTH_WAN_PAIR ops from sender 4 to k receivers, each op k GMACs
 * of the same covered bytes under the k pair keys (GHASH cannot be shared
 * between keys: H differs). On copies of the messages (@ops point into the
 * second buffer, with room for 8 tags), so the verify variants still find
 * their UP tags. Returns the failed seals.
 */
static unsigned int
seal_k(struct isth_auth_engine *e, struct isth_auth_op *ops, unsigned int n, unsigned int size,
	unsigned int k)
{
	/* receivers 0..k, sender 4 left out */
	uint64_t rcv = ((UINT64_C(1) << (k + 1)) - 1) & ~(UINT64_C(1) << 4);
	unsigned int bad = 0;

	if (k < 4)
		rcv = (UINT64_C(1) << k) - 1;
	for (unsigned int i = 0; i < n; i++) {
		ops[i].len = size - ISTH_AUTH_TAG_SIZE;
		ops[i].peers = rcv;
	}
	for (unsigned int i = 0; i < n; i += BURST)
		bad += BURST - isth_auth_seal_burst(e, ops + i, BURST);
	return bad;
}

static volatile uint64_t sink;

static void __attribute__((noreturn)) die(const char *what, int r)
{
	fprintf(stderr, "bench_auth: %s: %d\n", what, r);
	exit(1);
}

int
main(int argc, char **argv)
{
	unsigned int size = 1432, n = 256, reps = 7, inner = 20;
	char path[64], err[256];
	struct isth_auth_conf conf = {.key_file = path, .job = 7, .n_islands = 9};
	struct isth_auth *a;
	struct isth_auth_engine *eng[2];
	struct isth_auth_op *ops, *ops_k;
	uint8_t *buf, *dst, *dstk, **msg;
	struct isth_agg_kernels k;
	float *acc;
	size_t elems;
	double best[V_MAX], hz;
	FILE *f;
	int fd, r;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			size = (unsigned int)atoi(argv[++i]);
		else if (strcmp(argv[i], "--msgs") == 0 && i + 1 < argc)
			n = (unsigned int)atoi(argv[++i]);
		else if (strcmp(argv[i], "--quick") == 0)
			reps = 3, inner = 5;
		else {
			fprintf(stderr, "usage: bench_auth [--size S] [--msgs N] [--quick]\n");
			return 2;
		}
	}
	if (size < 56 || size > 9000 || n == 0 || n > 65536 || n % BURST != 0) {
		fprintf(stderr, "bench_auth: size 56..9000, msgs a multiple of 32\n");
		return 2;
	}

	/* A key file of one epoch, unique to this run, removed at once. */
	snprintf(path, sizeof(path), "/tmp/isth-bench-auth-%d-XXXXXX", getpid());
	fd = mkstemp(path);
	if (fd < 0 || fchmod(fd, 0600) != 0 || (f = fdopen(fd, "w")) == NULL)
		die("key file", -errno);
	fprintf(f, "job 7\nepoch 3 round 0 key ");
	for (int i = 0; i < 32; i++)
		fprintf(f, "%02x", (unsigned int)(rand() & 0xff));
	fprintf(f, "\n");
	fclose(f);
	r = isth_auth_create(&conf, &a, err, sizeof(err));
	unlink(path);
	if (r != 0) {
		fprintf(stderr, "bench_auth: %s\n", err);
		return 1;
	}
	if ((r = isth_agg_kernels_get(ISTH_AGG_KERNEL_AUTO, &k)) != 0)
		die("agg kernels", r);
	elems = (size - 40 - ISTH_AUTH_TAG_SIZE) / 4;
	acc = aligned_alloc(64, ((n * elems * sizeof(float) + 63) / 64) * 64);
	if (acc == NULL)
		die("alloc", -ENOMEM);
	memset(acc, 0, n * elems * sizeof(float));
	if ((r = isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &eng[0])) != 0)
		die("openssl engine", r);
	if ((r = isth_auth_engine_create(a, ISTH_AUTH_IPSEC_MB, &eng[1])) != 0)
		die("ipsec-mb engine", r);

	/* Messages: random body, header of a DATA with distinct seqs. */
	{
		size_t stride = ((size + OFFSET + 63) / 64) * 64;
		size_t stride_k = ((size + OFFSET + isth_auth_list_size(8) + 63) / 64) * 64;

		buf = aligned_alloc(64, stride * n);
		dst = aligned_alloc(64, stride * n);
		dstk = aligned_alloc(64, stride_k * n);
		msg = calloc(n, sizeof(*msg));
		ops = calloc(n, sizeof(*ops));
		if (buf == NULL || dst == NULL || dstk == NULL || msg == NULL || ops == NULL)
			die("alloc", -ENOMEM);
		for (size_t i = 0; i < stride * n; i++)
			buf[i] = (uint8_t)rand();
		memset(dst, 0, stride * n);
		for (unsigned int i = 0; i < n; i++) {
			uint8_t *m = buf + i * stride + OFFSET;

			msg[i] = m;
			m[0] = 0x49, m[1] = 0x53, m[3] = 1;
			m[4] = 0, m[5] = 0;
			m[12] = m[13] = m[14] = 0, m[15] = 1; /* round 1 */
			m[20] = 4; /* sender */
			ops[i] = (struct isth_auth_op){.msg = m,
				.len = size - ISTH_AUTH_TAG_SIZE,
				.cap = size,
				.dir = ISTH_AUTH_UP,
				.owner = 4};
		}
		if (isth_auth_seal_burst(eng[1], ops, n) != n)
			die("seal", -EIO);
		/* Both engines must accept every message before we time them. */
		if (isth_auth_verify_burst(eng[0], ops, n) != n ||
			isth_auth_verify_burst(eng[1], ops, n) != n)
			die("verify", -EIO);
		/* the tag-list variants seal copies, with room for 8 tags */
		ops_k = calloc(n, sizeof(*ops_k));
		if (ops_k == NULL)
			die("alloc", -ENOMEM);
		for (unsigned int i = 0; i < n; i++) {
			uint8_t *c = dstk + i * stride_k + OFFSET;

			memcpy(c, msg[i], size);
			ops_k[i] = (struct isth_auth_op){.msg = c,
				.cap = size + (unsigned int)isth_auth_list_size(8),
				.dir = ISTH_AUTH_WAN_PAIR,
				.owner = 4};
		}
	}

	hz = tsc_hz();
	for (int v = 0; v < V_MAX; v++)
		best[v] = 1e30;
	for (unsigned int rep = 0; rep < reps; rep++) {
		for (int v = 0; v < V_MAX; v++) {
			uint64_t t0 = __rdtsc(), words = 0;
			unsigned int bad = 0;

			for (unsigned int it = 0; it < inner; it++) {
				switch (v) {
				case V_READ:
					for (unsigned int i = 0; i < n; i++) {
						const uint8_t *m = msg[i];
						uint64_t w;

						for (unsigned int b = 0; b + 8 <= size; b += 8) {
							memcpy(&w, m + b, 8);
							words += w;
						}
					}
					break;
				case V_MEMCPY:
					for (unsigned int i = 0; i < n; i++)
						memcpy(dst + (size_t)(msg[i] - buf), msg[i], size);
					break;
				case V_SUM:
					for (unsigned int i = 0; i < n; i++)
						k.add_fp32(acc + i * elems, msg[i] + 40, elems);
					break;
				case V_IMB_32_SUM:
					for (unsigned int i = 0; i < n; i += BURST) {
						bad += BURST -
							isth_auth_verify_burst(
								eng[1], ops + i, BURST);
						for (unsigned int j = i; j < i + BURST; j++)
							k.add_fp32(acc + j * elems, msg[j] + 40,
								elems);
					}
					break;
				case V_OSSL_1:
				case V_IMB_1: {
					struct isth_auth_engine *e = eng[v == V_IMB_1];

					for (unsigned int i = 0; i < n; i++)
						bad += isth_auth_verify(e, ISTH_AUTH_UP, 4, msg[i],
							       size) != ISTH_AUTH_OK;
					break;
				}
				case V_OSSL_32:
				case V_IMB_32: {
					struct isth_auth_engine *e = eng[v == V_IMB_32];

					for (unsigned int i = 0; i < n; i += BURST)
						bad += BURST -
							isth_auth_verify_burst(e, ops + i, BURST);
					break;
				}
				case V_IMB_SEAL_K2:
				case V_IMB_SEAL_K8:
					bad += seal_k(
						eng[1], ops_k, n, size, v == V_IMB_SEAL_K2 ? 2 : 8);
					break;
				default: {
					struct isth_auth_engine *e = eng[v == V_IMB_SEAL];

					for (unsigned int i = 0; i < n; i++)
						ops[i].len = size - ISTH_AUTH_TAG_SIZE;
					for (unsigned int i = 0; i < n; i += BURST)
						bad += BURST -
							isth_auth_seal_burst(e, ops + i, BURST);
					break;
				}
				}
			}
			sink += words;
			if (bad != 0)
				die(vname[v], -(int)bad);
			{
				double c = (double)(__rdtsc() - t0) / ((double)n * inner);

				if (c < best[v])
					best[v] = c;
			}
		}
	}

	{
		/* Which code path ipsec-mb picked here (lib/auth uses the same
		 * auto-detection). */
		static const char *const arch[] = {
			"none", "no-aesni", "sse", "avx", "avx2", "avx512"};
		IMB_MGR *m = alloc_mb_mgr(0);
		IMB_ARCH used = IMB_ARCH_NONE;

		if (m != NULL) {
			init_mb_mgr_auto(m, &used);
			free_mb_mgr(m);
		}
		printf("bench_auth: %s, intel-ipsec-mb %s (%s code path)\n",
			OpenSSL_version(OPENSSL_VERSION), imb_get_version_str(),
			(unsigned int)used < 6 ? arch[used] : "?");
	}
	printf("bench_auth: %u messages of %u bytes (%u covered + 16-byte tag), "
	       "working set %zu KiB, TSC %.2f GHz, best of %u\n",
		n, size, size - 16, (size_t)n * size / 1024, hz / 1e9, reps);
	printf("%-20s %10s %10s %10s %12s\n", "variant", "cycles", "x read", "x memcpy",
		"Gbit/s/core");
	for (int v = 0; v < V_MAX; v++)
		printf("%-20s %10.1f %10.2f %10.2f %12.1f\n", vname[v], best[v],
			best[v] / best[V_READ], best[v] / best[V_MEMCPY],
			size * 8.0 * hz / best[v] / 1e9);
	printf("ratio ipsec-mb verify32 / openssl verify: %.2f\n", best[V_IMB_32] / best[V_OSSL_1]);
	printf("ratio sum / (ipsec-mb verify32+sum): %.2f (rate kept by the "
	       "summing pass with auth)\n",
		best[V_SUM] / best[V_IMB_32_SUM]);
	{
		double k2 = best[V_IMB_SEAL_K2], k8 = best[V_IMB_SEAL_K8];

		printf("tag list (a tag per receiver): k=2 %.1f cycles (x%.2f one tag), k=8 %.1f "
		       "(x%.2f) per sealed DATA\n",
			k2, k2 / best[V_IMB_SEAL], k8, k8 / best[V_IMB_SEAL]);
		/* An edge in a clique of rcv + 1 seals each of its island's DATA
		 * once for rcv receivers and verifies each DATA it receives: per
		 * DATA received, one verify plus 1/rcv of a seal (one tag) or of
		 * rcv seals (a tag per receiver). */
		for (unsigned int rcv = 2; rcv <= 8; rcv += 6) {
			double one = best[V_IMB_32] + best[V_IMB_SEAL] / rcv;
			double list = best[V_IMB_32] + (rcv == 2 ? k2 : k8) / rcv;

			printf("auth cycles per DATA received, clique of %u: one tag %.1f, "
			       "tag list %.1f (x%.2f)\n",
				rcv + 1, one, list, list / one);
		}
	}

	isth_auth_engine_free(eng[0]);
	isth_auth_engine_free(eng[1]);
	isth_auth_free(a);
	free(buf);
	free(dst);
	free(dstk);
	free(msg);
	free(ops);
	free(ops_k);
	free(acc);
	return 0;
}
