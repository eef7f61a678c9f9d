/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reference kernels. Auto-vectorisation is off so that "scalar" in the
 * benchmarks means one element per instruction, and so that the
 * differential tests compare the vector kernels against code that is
 * obviously element by element. Elements are little-endian on the wire and
 * on x86, so a memcpy load is the decode.
 */
#include <string.h>

#include "agg_kernels.h"

#define AGG_SCALAR __attribute__((optimize("no-tree-vectorize")))

AGG_SCALAR void
agg_scalar_add_fp32(float *acc, const void *src, size_t n)
{
	const uint8_t *s = src;
	size_t i;

	for (i = 0; i < n; i++) {
		float x, a;

		memcpy(&x, s + 4 * i, 4);
		memcpy(&a, (uint8_t *)acc + 4 * i, 4);
		a += x;
		memcpy((uint8_t *)acc + 4 * i, &a, 4);
	}
}

static inline float
bf16_to_f32(const uint8_t *p)
{
	uint32_t u = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 24;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

AGG_SCALAR void
agg_scalar_add_bf16(float *acc, const void *src, size_t n)
{
	const uint8_t *s = src;
	size_t i;

	for (i = 0; i < n; i++) {
		float a;

		memcpy(&a, (uint8_t *)acc + 4 * i, 4);
		a += bf16_to_f32(s + 2 * i);
		memcpy((uint8_t *)acc + 4 * i, &a, 4);
	}
}

AGG_SCALAR void
agg_scalar_add_int32(int32_t *acc, const void *src, size_t n)
{
	const uint8_t *s = src;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t x, a;

		memcpy(&x, s + 4 * i, 4);
		memcpy(&a, (uint8_t *)acc + 4 * i, 4);
		a += x; /* unsigned: wraps modulo 2^32 by definition */
		memcpy((uint8_t *)acc + 4 * i, &a, 4);
	}
}

AGG_SCALAR void
agg_scalar_load_bf16(float *acc, const void *src, size_t n)
{
	const uint8_t *s = src;
	size_t i;

	for (i = 0; i < n; i++) {
		float a = bf16_to_f32(s + 2 * i);

		memcpy((uint8_t *)acc + 4 * i, &a, 4);
	}
}

AGG_SCALAR void
agg_scalar_store_bf16(void *dst, const float *acc, size_t n)
{
	uint8_t *d = dst;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t u;
		uint16_t b;

		memcpy(&u, (const uint8_t *)acc + 4 * i, 4);
		b = agg_f32_to_bf16(u);
		d[2 * i] = (uint8_t)b;
		d[2 * i + 1] = (uint8_t)(b >> 8);
	}
}

/* Every element's magnitude bits (sign off) at most @lim: with @lim the
 * largest finite value's, every element finite (an exponent of all ones
 * is NaN or +-Inf; zeros, -0 and denormals are finite); with a smaller
 * @lim, also |x| <= the value of @lim (the bits of non-negative floats
 * order as their values). */
AGG_SCALAR bool
agg_scalar_within_fp32(const void *src, size_t n, uint32_t lim)
{
	const uint8_t *s = src;
	uint32_t bad = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, s + 4 * i, 4);
		bad |= (u & 0x7fffffffu) > lim;
	}
	return bad == 0;
}

AGG_SCALAR bool
agg_scalar_within_bf16(const void *src, size_t n, uint16_t lim)
{
	const uint8_t *s = src;
	uint32_t bad = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		uint16_t u;

		memcpy(&u, s + 2 * i, 2);
		bad |= (u & 0x7fffu) > lim;
	}
	return bad == 0;
}

const struct isth_agg_kernels agg_kernels_scalar = {
	.id = ISTH_AGG_KERNEL_SCALAR,
	.add_fp32 = agg_scalar_add_fp32,
	.add_bf16 = agg_scalar_add_bf16,
	.add_int32 = agg_scalar_add_int32,
	.load_bf16 = agg_scalar_load_bf16,
	.store_bf16 = agg_scalar_store_bf16,
	.within_fp32 = agg_scalar_within_fp32,
	.within_bf16 = agg_scalar_within_bf16,
};
