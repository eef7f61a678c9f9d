/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xoshiro256** (Blackman and Vigna), seeded through splitmix64: one stream
 * per directed link, so that a link's decisions depend only on the seed,
 * the link and the sequence of packets offered to that link.
 */
#ifndef WAN_PRNG_H
#define WAN_PRNG_H

#include <stdint.h>

static inline uint64_t
wan_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Stream @p stream of seed @p seed. */
static inline void
wan_prng_seed(uint64_t s[4], uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream + 1) * UINT64_C(0xd1342543de82ef95);
	int i;

	for (i = 0; i < 4; i++)
		s[i] = wan_splitmix64(&x);
}

static inline uint64_t
wan_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t
wan_prng_next(uint64_t s[4])
{
	uint64_t r = wan_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = wan_rotl(s[3], 45);
	return r;
}

/* Uniform in [0, 1). */
static inline double
wan_prng_unit(uint64_t s[4])
{
	return (double)(wan_prng_next(s) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), n > 0 (Lemire's multiply; bias < n / 2^64). */
static inline uint32_t
wan_prng_below(uint64_t s[4], uint32_t n)
{
	return (uint32_t)(((unsigned __int128)wan_prng_next(s) * n) >> 64);
}

#endif /* WAN_PRNG_H */
