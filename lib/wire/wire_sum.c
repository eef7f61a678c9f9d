/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ones'-complement sum of a payload (RFC 1071), the part of a UDP
 * checksum that costs: every byte of every DATA a peer edge sends is
 * summed once on receipt ([wan] udp_checksum, on by default with auth
 * off), and once when an edge sends its island's DATA. A loop over 16-bit
 * big-endian words costs about 200 cycles for 1 KiB; here 32-bit words are
 * added into 64-bit lanes (no carry is lost below 2^32 words), 64 bytes a
 * step with AVX-512, 32 with AVX2, 8 without, then folded to 16 bits:
 * 27-28 cycles with AVX2 or AVX-512, 20 with AVX-512 VNNI, which adds
 * biased 16-bit words in pairs (doc/notes/performance-log.md section 6, "Sixth
 * pass").
 *
 * The sum of little-endian words is the byte swap of the big-endian
 * words' sum (RFC 1071 section 2(B)): one swap at the end. Words start at
 * even offsets from @buf everywhere (vector steps and 8-byte steps both),
 * so the tail's bytes keep their place in their words. The masked load of
 * the AVX-512 tail reads only the bytes it is given (no fault past the
 * end, so ASan and a page boundary are both fine).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <immintrin.h>

#include "isth_wire.h"

/* 32-bit words of @p, @len < 8 or a multiple of 8 left: the scalar steps
 * and the tail, zero-padded to a word */
static inline uint64_t
sum_words(const uint8_t *p, size_t len, uint64_t acc)
{
	uint64_t w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		acc += (w & 0xffffffffu) + (w >> 32);
	}
	if (len != 0) {
		w = 0;
		memcpy(&w, p, len);
		acc += (w & 0xffffffffu) + (w >> 32);
	}
	return acc;
}

static uint64_t
sum_scalar(const uint8_t *p, size_t len)
{
	return sum_words(p, len, 0);
}

__attribute__((target("avx2"))) static uint64_t
sum_avx2(const uint8_t *p, size_t len)
{
	const __m256i lo = _mm256_set1_epi64x(0xffffffff);
	__m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
	uint64_t l[4];

	for (; len >= 64; p += 64, len -= 64) {
		__m256i x = _mm256_loadu_si256((const __m256i *)p);
		__m256i y = _mm256_loadu_si256((const __m256i *)(p + 32));

		a = _mm256_add_epi64(a, _mm256_and_si256(x, lo));
		b = _mm256_add_epi64(b, _mm256_srli_epi64(x, 32));
		a = _mm256_add_epi64(a, _mm256_and_si256(y, lo));
		b = _mm256_add_epi64(b, _mm256_srli_epi64(y, 32));
	}
	_mm256_storeu_si256((__m256i *)l, _mm256_add_epi64(a, b));
	return sum_words(p, len, l[0] + l[1] + l[2] + l[3]);
}

/* Two loads a step, each into its own pair of lanes (the low and high
 * words of every 64-bit lane), so that no add waits on another; the last
 * partial line in one masked load, zero-filled past the end. */
__attribute__((target("avx512f,avx512bw"))) static uint64_t
sum_avx512(const uint8_t *p, size_t len)
{
	const __m512i lo = _mm512_set1_epi64(0xffffffff);
	__m512i a0 = _mm512_setzero_si512(), b0 = a0, a1 = a0, b1 = a0, x, y;

	for (; len >= 128; p += 128, len -= 128) {
		x = _mm512_loadu_si512(p);
		y = _mm512_loadu_si512(p + 64);
		a0 = _mm512_add_epi64(a0, _mm512_and_si512(x, lo));
		b0 = _mm512_add_epi64(b0, _mm512_srli_epi64(x, 32));
		a1 = _mm512_add_epi64(a1, _mm512_and_si512(y, lo));
		b1 = _mm512_add_epi64(b1, _mm512_srli_epi64(y, 32));
	}
	if (len >= 64) {
		x = _mm512_loadu_si512(p);
		a0 = _mm512_add_epi64(a0, _mm512_and_si512(x, lo));
		b0 = _mm512_add_epi64(b0, _mm512_srli_epi64(x, 32));
		p += 64;
		len -= 64;
	}
	if (len != 0) {
		x = _mm512_maskz_loadu_epi8((__mmask64)((UINT64_C(1) << len) - 1), p);
		a1 = _mm512_add_epi64(a1, _mm512_and_si512(x, lo));
		b1 = _mm512_add_epi64(b1, _mm512_srli_epi64(x, 32));
	}
	a0 = _mm512_add_epi64(_mm512_add_epi64(a0, b0), _mm512_add_epi64(a1, b1));
	return (uint64_t)_mm512_reduce_add_epi64(a0);
}

/*
 * With AVX-512 VNNI: each 16-bit word w, biased to a signed one (w ^
 * 0x8000 is w - 32768), summed in pairs into 32-bit lanes by one vpdpwssd
 * against ones: two operations a line instead of four. The bias, 32768
 * for every word a load covered (the masked tail's zero words included,
 * which then add 0), is given back at the end, so the result is the exact
 * sum of the words. No lane can overflow: at most 2^24 in magnitude for
 * 64 KiB.
 */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static uint64_t
sum_avx512_vnni(const uint8_t *p, size_t len)
{
	const __m512i bias = _mm512_set1_epi16((short)0x8000), one = _mm512_set1_epi16(1);
	__m512i a[4], x;
	uint64_t words = 0;
	unsigned int i = 0;
	int64_t s;

	/* four chains: vpdpwssd's latency, not its throughput, would
	 * bound one or two */
	for (i = 0; i < 4; i++)
		a[i] = _mm512_setzero_si512();
	for (; len >= 256; p += 256, len -= 256) {
		for (i = 0; i < 4; i++)
			a[i] = _mm512_dpwssd_epi32(
				a[i], _mm512_xor_si512(_mm512_loadu_si512(p + 64 * i), bias), one);
		words += 128;
	}
	for (i = 0; len >= 64; i++, p += 64, len -= 64) {
		a[i] = _mm512_dpwssd_epi32(
			a[i], _mm512_xor_si512(_mm512_loadu_si512(p), bias), one);
		words += 32;
	}
	if (len != 0) {
		x = _mm512_maskz_loadu_epi8((__mmask64)((UINT64_C(1) << len) - 1), p);
		a[3] = _mm512_dpwssd_epi32(a[3], _mm512_xor_si512(x, bias), one);
		words += 32;
	}
	/* in 32 bits: at most 2^24 a lane of a[i] for 64 KiB, 2^30 over all */
	s = _mm512_reduce_add_epi32(
		_mm512_add_epi32(_mm512_add_epi32(a[0], a[1]), _mm512_add_epi32(a[2], a[3])));
	return (uint64_t)(s + (int64_t)(words * 32768));
}

static const struct {
	const char *name;
	uint64_t (*fn)(const uint8_t *, size_t);
	const char *cpu; /* __builtin_cpu_supports() name, NULL: any */
} kernels[] = {
	{"scalar", sum_scalar, NULL},
	{"avx2", sum_avx2, "avx2"},
	{"avx512", sum_avx512, "avx512bw"},
	{"avx512vnni", sum_avx512_vnni, "avx512vnni"},
};

/* written by: the constructor, isth_wire_sum_use() (tests, benchmarks,
 * before any data path runs); read by: every isth_wire_sum() */
static unsigned int kernel;

static int
supported(unsigned int k)
{
	/* __builtin_cpu_supports() needs a literal name */
	if (kernels[k].cpu == NULL)
		return 1;
	if (strcmp(kernels[k].cpu, "avx2") == 0)
		return __builtin_cpu_supports("avx2");
	if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw"))
		return 0;
	if (strcmp(kernels[k].cpu, "avx512vnni") == 0)
		return __builtin_cpu_supports("avx512vnni");
	return 1;
}

__attribute__((constructor)) static void
pick_kernel(void)
{
	unsigned int k;

	__builtin_cpu_init();
	for (k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++)
		if (supported(k))
			kernel = k;
}

static inline uint16_t
fold64(uint64_t s)
{
	s = (s & 0xffffffffu) + (s >> 32); /* < 2^33 */
	s = (s & 0xffffffffu) + (s >> 32); /* <= 2^32 */
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

uint16_t
isth_wire_sum(const void *buf, size_t len)
{
	uint16_t s = fold64(kernels[kernel].fn(buf, len));

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	s = (uint16_t)(s << 8 | s >> 8);
#endif
	return s;
}

const char *
isth_wire_sum_kernel(void)
{
	return kernels[kernel].name;
}

int
isth_wire_sum_use(const char *name)
{
	unsigned int k;

	if (name == NULL) {
		pick_kernel();
		return 0;
	}
	for (k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++)
		if (strcmp(kernels[k].name, name) == 0) {
			if (!supported(k))
				return -ENOTSUP;
			kernel = k;
			return 0;
		}
	return -EINVAL;
}
