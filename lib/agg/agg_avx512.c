/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AVX-512 kernels (F for the arithmetic, BW for the masked 16-bit loads of
 * bf16 tails). Compiled for that target by the pragma; isth_agg.c calls
 * them only after __builtin_cpu_supports("avx512f") and ("avx512bw").
 * Tails use masked loads and stores, so there is no scalar epilogue.
 */
#pragma GCC target("avx512f,avx512bw")

#include <immintrin.h>

#include "agg_kernels.h"

static inline __mmask16
tail16(size_t left)
{
	return (__mmask16)((1u << left) - 1u);
}

static void
avx512_add_fp32(float *acc, const void *src, size_t n)
{
	const float *s = src;
	size_t i = 0;

	for (; i + 64 <= n; i += 64) {
		__m512 a0 = _mm512_loadu_ps(acc + i);
		__m512 a1 = _mm512_loadu_ps(acc + i + 16);
		__m512 a2 = _mm512_loadu_ps(acc + i + 32);
		__m512 a3 = _mm512_loadu_ps(acc + i + 48);

		a0 = _mm512_add_ps(a0, _mm512_loadu_ps(s + i));
		a1 = _mm512_add_ps(a1, _mm512_loadu_ps(s + i + 16));
		a2 = _mm512_add_ps(a2, _mm512_loadu_ps(s + i + 32));
		a3 = _mm512_add_ps(a3, _mm512_loadu_ps(s + i + 48));
		_mm512_storeu_ps(acc + i, a0);
		_mm512_storeu_ps(acc + i + 16, a1);
		_mm512_storeu_ps(acc + i + 32, a2);
		_mm512_storeu_ps(acc + i + 48, a3);
	}
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(
			acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), _mm512_loadu_ps(s + i)));
	if (i < n) {
		__mmask16 m = tail16(n - i);
		__m512 a = _mm512_maskz_loadu_ps(m, acc + i);

		a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, s + i));
		_mm512_mask_storeu_ps(acc + i, m, a);
	}
}

static void
avx512_add_int32(int32_t *acc, const void *src, size_t n)
{
	const int32_t *s = src;
	size_t i = 0;

	for (; i + 64 <= n; i += 64) {
		__m512i a0 = _mm512_loadu_si512(acc + i);
		__m512i a1 = _mm512_loadu_si512(acc + i + 16);
		__m512i a2 = _mm512_loadu_si512(acc + i + 32);
		__m512i a3 = _mm512_loadu_si512(acc + i + 48);

		a0 = _mm512_add_epi32(a0, _mm512_loadu_si512(s + i));
		a1 = _mm512_add_epi32(a1, _mm512_loadu_si512(s + i + 16));
		a2 = _mm512_add_epi32(a2, _mm512_loadu_si512(s + i + 32));
		a3 = _mm512_add_epi32(a3, _mm512_loadu_si512(s + i + 48));
		_mm512_storeu_si512(acc + i, a0);
		_mm512_storeu_si512(acc + i + 16, a1);
		_mm512_storeu_si512(acc + i + 32, a2);
		_mm512_storeu_si512(acc + i + 48, a3);
	}
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_si512(acc + i,
			_mm512_add_epi32(_mm512_loadu_si512(acc + i), _mm512_loadu_si512(s + i)));
	if (i < n) {
		__mmask16 m = tail16(n - i);
		__m512i a = _mm512_maskz_loadu_epi32(m, acc + i);

		a = _mm512_add_epi32(a, _mm512_maskz_loadu_epi32(m, s + i));
		_mm512_mask_storeu_epi32(acc + i, m, a);
	}
}

static inline __m512
bf16x16_to_f32(__m256i h)
{
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static void
avx512_add_bf16(float *acc, const void *src, size_t n)
{
	const uint16_t *s = src;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m512i h = _mm512_loadu_si512(s + i);
		__m512 a0 = _mm512_loadu_ps(acc + i);
		__m512 a1 = _mm512_loadu_ps(acc + i + 16);

		a0 = _mm512_add_ps(a0, bf16x16_to_f32(_mm512_castsi512_si256(h)));
		a1 = _mm512_add_ps(a1, bf16x16_to_f32(_mm512_extracti64x4_epi64(h, 1)));
		_mm512_storeu_ps(acc + i, a0);
		_mm512_storeu_ps(acc + i + 16, a1);
	}
	for (; i < n; i += 16) {
		size_t left = n - i < 16 ? n - i : 16;
		__mmask16 m = tail16(left);
		__m512i h = _mm512_maskz_loadu_epi16((__mmask32)m, s + i);
		__m512 a = _mm512_maskz_loadu_ps(m, acc + i);

		a = _mm512_add_ps(a, bf16x16_to_f32(_mm512_castsi512_si256(h)));
		_mm512_mask_storeu_ps(acc + i, m, a);
	}
}

static void
avx512_load_bf16(float *acc, const void *src, size_t n)
{
	const uint16_t *s = src;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m512i h = _mm512_loadu_si512(s + i);

		_mm512_storeu_ps(acc + i, bf16x16_to_f32(_mm512_castsi512_si256(h)));
		_mm512_storeu_ps(acc + i + 16, bf16x16_to_f32(_mm512_extracti64x4_epi64(h, 1)));
	}
	for (; i < n; i += 16) {
		size_t left = n - i < 16 ? n - i : 16;
		__mmask16 m = tail16(left);
		__m512i h = _mm512_maskz_loadu_epi16((__mmask32)m, s + i);

		_mm512_mask_storeu_ps(acc + i, m, bf16x16_to_f32(_mm512_castsi512_si256(h)));
	}
}

/* 16 fp32 -> 16 bf16, nearest even; NaN stays a quiet NaN. */
static inline __m256i
f32x16_to_bf16(__m512i u)
{
	__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
	__m512i r = _mm512_srli_epi32(
		_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
	__mmask16 nan = _mm512_cmpgt_epi32_mask(
		_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
	__m512i qnan = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));

	return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(r, nan, qnan));
}

static void
avx512_store_bf16(void *dst, const float *acc, size_t n)
{
	uint16_t *d = dst;
	size_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm256_storeu_si256(
			(__m256i *)(d + i), f32x16_to_bf16(_mm512_loadu_si512(acc + i)));
	if (i < n) {
		__mmask16 m = tail16(n - i);
		__m256i b = f32x16_to_bf16(_mm512_maskz_loadu_epi32(m, acc + i));

		/* BW: a 512-bit masked 16-bit store of the low 256 bits */
		_mm512_mask_storeu_epi16(d + i, (__mmask32)m, _mm512_castsi256_si512(b));
	}
}

/* Magnitude bits (sign off) above @lim, as compare masks; four vectors
 * (a 1 KiB chunk in four steps) per step, the tail by a masked load. */
static bool
avx512_within_fp32(const void *src, size_t n, uint32_t lim)
{
	const uint8_t *s = src;
	const __m512i m = _mm512_set1_epi32(0x7fffffff), l = _mm512_set1_epi32((int)lim);
	__mmask16 bad = 0;
	size_t i = 0;

	for (; i + 64 <= n; i += 64) {
		__m512i v0 = _mm512_loadu_si512(s + 4 * i);
		__m512i v1 = _mm512_loadu_si512(s + 4 * i + 64);
		__m512i v2 = _mm512_loadu_si512(s + 4 * i + 128);
		__m512i v3 = _mm512_loadu_si512(s + 4 * i + 192);

		bad |= _mm512_cmpgt_epi32_mask(_mm512_and_si512(v0, m), l);
		bad |= _mm512_cmpgt_epi32_mask(_mm512_and_si512(v1, m), l);
		bad |= _mm512_cmpgt_epi32_mask(_mm512_and_si512(v2, m), l);
		bad |= _mm512_cmpgt_epi32_mask(_mm512_and_si512(v3, m), l);
	}
	for (; i + 16 <= n; i += 16)
		bad |= _mm512_cmpgt_epi32_mask(
			_mm512_and_si512(_mm512_loadu_si512(s + 4 * i), m), l);
	if (i < n) {
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1u);

		bad |= _mm512_mask_cmpgt_epi32_mask(
			k, _mm512_and_si512(_mm512_maskz_loadu_epi32(k, s + 4 * i), m), l);
	}
	return bad == 0;
}

static bool
avx512_within_bf16(const void *src, size_t n, uint16_t lim)
{
	const uint8_t *s = src;
	const __m512i m = _mm512_set1_epi16(0x7fff), l = _mm512_set1_epi16((short)lim);
	__mmask32 bad = 0;
	size_t i = 0;

	for (; i + 32 <= n; i += 32)
		bad |= _mm512_cmpgt_epi16_mask(
			_mm512_and_si512(_mm512_loadu_si512(s + 2 * i), m), l);
	if (i < n) {
		__mmask32 k = (__mmask32)((1u << (n - i)) - 1u);

		bad |= _mm512_mask_cmpgt_epi16_mask(
			k, _mm512_and_si512(_mm512_maskz_loadu_epi16(k, s + 2 * i), m), l);
	}
	return bad == 0;
}

const struct isth_agg_kernels agg_kernels_avx512 = {
	.id = ISTH_AGG_KERNEL_AVX512,
	.add_fp32 = avx512_add_fp32,
	.add_bf16 = avx512_add_bf16,
	.add_int32 = avx512_add_int32,
	.load_bf16 = avx512_load_bf16,
	.store_bf16 = avx512_store_bf16,
	.within_fp32 = avx512_within_fp32,
	.within_bf16 = avx512_within_bf16,
};
