/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AVX2 kernels. The target pragma compiles this file for AVX2 without
 * changing the flags of the rest of the library; isth_agg.c calls these
 * only after __builtin_cpu_supports("avx2").
 */
#pragma GCC target("avx2")

#include <immintrin.h>

#include "agg_kernels.h"

static void
avx2_add_fp32(float *acc, const void *src, size_t n)
{
	const float *s = src;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256 a0 = _mm256_loadu_ps(acc + i);
		__m256 a1 = _mm256_loadu_ps(acc + i + 8);
		__m256 a2 = _mm256_loadu_ps(acc + i + 16);
		__m256 a3 = _mm256_loadu_ps(acc + i + 24);

		a0 = _mm256_add_ps(a0, _mm256_loadu_ps(s + i));
		a1 = _mm256_add_ps(a1, _mm256_loadu_ps(s + i + 8));
		a2 = _mm256_add_ps(a2, _mm256_loadu_ps(s + i + 16));
		a3 = _mm256_add_ps(a3, _mm256_loadu_ps(s + i + 24));
		_mm256_storeu_ps(acc + i, a0);
		_mm256_storeu_ps(acc + i + 8, a1);
		_mm256_storeu_ps(acc + i + 16, a2);
		_mm256_storeu_ps(acc + i + 24, a3);
	}
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(
			acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), _mm256_loadu_ps(s + i)));
	agg_scalar_add_fp32(acc + i, s + i, n - i);
}

static void
avx2_add_int32(int32_t *acc, const void *src, size_t n)
{
	const int32_t *s = src;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256i a0 = _mm256_loadu_si256((const __m256i *)(acc + i));
		__m256i a1 = _mm256_loadu_si256((const __m256i *)(acc + i + 8));
		__m256i a2 = _mm256_loadu_si256((const __m256i *)(acc + i + 16));
		__m256i a3 = _mm256_loadu_si256((const __m256i *)(acc + i + 24));

		a0 = _mm256_add_epi32(a0, _mm256_loadu_si256((const __m256i *)(s + i)));
		a1 = _mm256_add_epi32(a1, _mm256_loadu_si256((const __m256i *)(s + i + 8)));
		a2 = _mm256_add_epi32(a2, _mm256_loadu_si256((const __m256i *)(s + i + 16)));
		a3 = _mm256_add_epi32(a3, _mm256_loadu_si256((const __m256i *)(s + i + 24)));
		_mm256_storeu_si256((__m256i *)(acc + i), a0);
		_mm256_storeu_si256((__m256i *)(acc + i + 8), a1);
		_mm256_storeu_si256((__m256i *)(acc + i + 16), a2);
		_mm256_storeu_si256((__m256i *)(acc + i + 24), a3);
	}
	for (; i + 8 <= n; i += 8) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(acc + i));

		a = _mm256_add_epi32(a, _mm256_loadu_si256((const __m256i *)(s + i)));
		_mm256_storeu_si256((__m256i *)(acc + i), a);
	}
	agg_scalar_add_int32(acc + i, s + i, n - i);
}

/* 8 bf16 at p -> 8 fp32: the bf16 bits are the top half of the fp32. */
static inline __m256
bf16x8_to_f32(const uint16_t *p)
{
	__m128i h = _mm_loadu_si128((const __m128i *)p);

	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static void
avx2_add_bf16(float *acc, const void *src, size_t n)
{
	const uint16_t *s = src;
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256 a0 = _mm256_loadu_ps(acc + i);
		__m256 a1 = _mm256_loadu_ps(acc + i + 8);

		a0 = _mm256_add_ps(a0, bf16x8_to_f32(s + i));
		a1 = _mm256_add_ps(a1, bf16x8_to_f32(s + i + 8));
		_mm256_storeu_ps(acc + i, a0);
		_mm256_storeu_ps(acc + i + 8, a1);
	}
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(
			acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), bf16x8_to_f32(s + i)));
	agg_scalar_add_bf16(acc + i, s + i, n - i);
}

static void
avx2_load_bf16(float *acc, const void *src, size_t n)
{
	const uint16_t *s = src;
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(acc + i, bf16x8_to_f32(s + i));
	agg_scalar_load_bf16(acc + i, s + i, n - i);
}

/* 8 fp32 -> 8 bf16 in the low 16 bits of each lane, nearest even. */
static inline __m256i
f32x8_to_bf16(__m256i u)
{
	const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
	const __m256i inf = _mm256_set1_epi32(0x7f800000);
	__m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
	__m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
	__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
	__m256i qnan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));

	return _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), qnan, nan);
}

static void
avx2_store_bf16(void *dst, const float *acc, size_t n)
{
	uint16_t *d = dst;
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256i lo = f32x8_to_bf16(_mm256_loadu_si256((const __m256i *)(acc + i)));
		__m256i hi = f32x8_to_bf16(_mm256_loadu_si256((const __m256i *)(acc + i + 8)));
		/* packus works per 128-bit lane: lo0 hi0 lo1 hi1 -> reorder */
		__m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);

		_mm256_storeu_si256((__m256i *)(d + i), p);
	}
	agg_scalar_store_bf16(d + i, acc + i, n - i);
}

/* Magnitude bits (sign off: non-negative, so the signed compare orders
 * them) above @lim; four vectors per step, one test at the end. */
static bool
avx2_within_fp32(const void *src, size_t n, uint32_t lim)
{
	const uint8_t *s = src;
	const __m256i m = _mm256_set1_epi32(0x7fffffff), l = _mm256_set1_epi32((int)lim);
	__m256i bad = _mm256_setzero_si256();
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256i v0 = _mm256_loadu_si256((const __m256i *)(s + 4 * i));
		__m256i v1 = _mm256_loadu_si256((const __m256i *)(s + 4 * i + 32));
		__m256i v2 = _mm256_loadu_si256((const __m256i *)(s + 4 * i + 64));
		__m256i v3 = _mm256_loadu_si256((const __m256i *)(s + 4 * i + 96));

		bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_and_si256(v0, m), l));
		bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_and_si256(v1, m), l));
		bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_and_si256(v2, m), l));
		bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_and_si256(v3, m), l));
	}
	for (; i + 8 <= n; i += 8) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(s + 4 * i));

		bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_and_si256(v, m), l));
	}
	if (!_mm256_testz_si256(bad, bad))
		return false;
	return agg_scalar_within_fp32(s + 4 * i, n - i, lim);
}

static bool
avx2_within_bf16(const void *src, size_t n, uint16_t lim)
{
	const uint8_t *s = src;
	const __m256i m = _mm256_set1_epi16(0x7fff), l = _mm256_set1_epi16((short)lim);
	__m256i bad = _mm256_setzero_si256();
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(s + 2 * i));

		bad = _mm256_or_si256(bad, _mm256_cmpgt_epi16(_mm256_and_si256(v, m), l));
	}
	if (!_mm256_testz_si256(bad, bad))
		return false;
	return agg_scalar_within_bf16(s + 2 * i, n - i, lim);
}

const struct isth_agg_kernels agg_kernels_avx2 = {
	.id = ISTH_AGG_KERNEL_AVX2,
	.add_fp32 = avx2_add_fp32,
	.add_bf16 = avx2_add_bf16,
	.add_int32 = avx2_add_int32,
	.load_bf16 = avx2_load_bf16,
	.store_bf16 = avx2_store_bf16,
	.within_fp32 = avx2_within_fp32,
	.within_bf16 = avx2_within_bf16,
};
