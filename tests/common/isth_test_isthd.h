/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_TEST_ISTHD_H
#define ISTH_TEST_ISTHD_H

/*
 * A zeroed struct isthd on the heap for tests that build an edge by hand.
 * Its groups are cache-line aligned (__rte_cache_aligned, isthd.h), which
 * calloc() does not promise: a compiler may use aligned vector stores on
 * them. Include after isthd.h. NULL if out of memory.
 */
#include <stdlib.h>
#include <string.h>

static inline struct isthd *
isth_test_isthd_new(void)
{
	size_t a = _Alignof(struct isthd);
	size_t n = (sizeof(struct isthd) + a - 1) / a * a;
	struct isthd *d = aligned_alloc(a, n);

	if (d != NULL)
		memset(d, 0, n);
	return d;
}

#endif
