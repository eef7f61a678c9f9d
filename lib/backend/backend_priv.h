/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_BACKEND_PRIV_H
#define ISTH_BACKEND_PRIV_H

#include "isth_backend.h"

/* Single-writer counter (owner lcore): relaxed load and store, no atomic
 * read-modify-write; readers load relaxed. */
static inline void
backend_bump(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
}

/* The backends isth_backend.c knows, one line each. */
extern const struct isth_backend_ops isth_backend_sw_ops;
extern const struct isth_backend_ops isth_backend_fpga_ops;

#endif
