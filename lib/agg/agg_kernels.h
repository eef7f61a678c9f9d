/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef AGG_KERNELS_H
#define AGG_KERNELS_H

/* Internal: the kernel sets of isth_agg, one file per ISA. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isth_agg.h"

extern const struct isth_agg_kernels agg_kernels_scalar;
extern const struct isth_agg_kernels agg_kernels_avx2;
extern const struct isth_agg_kernels agg_kernels_avx512;

/* fp32 bits -> bf16 bits, round to nearest even; NaN stays a quiet NaN. */
static inline uint16_t
agg_f32_to_bf16(uint32_t u)
{
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Scalar tails shared by the vector kernels. */
void agg_scalar_add_fp32(float *acc, const void *src, size_t n);
void agg_scalar_add_bf16(float *acc, const void *src, size_t n);
void agg_scalar_add_int32(int32_t *acc, const void *src, size_t n);
void agg_scalar_load_bf16(float *acc, const void *src, size_t n);
void agg_scalar_store_bf16(void *dst, const float *acc, size_t n);
bool agg_scalar_within_fp32(const void *src, size_t n, uint32_t lim);
bool agg_scalar_within_bf16(const void *src, size_t n, uint16_t lim);

#endif /* AGG_KERNELS_H */
