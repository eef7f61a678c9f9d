/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The aggregation engine. Layout:
 *
 *   acc[]      n_slots accumulators of slot_size bytes, 64-byte aligned:
 *              the memory budget ("HBM"), nothing else counts against it.
 *   slots[]    one 64-byte descriptor per accumulator.
 *   buckets[]  set-associative index (job, round, chunk) -> slot, 8 ways
 *              of (signature, slot) per 64-byte bucket.
 *   age list   active slots in first-arrival order: its head is both the
 *              next to time out and the pool-conflict victim.
 *   emitq[]    emitted slots waiting for isth_agg_drain().
 *   rtab       per job, `window` round-table slots (lib/rtab) written by the
 *              control plane; next to each, the data path's own per-round
 *              chunk states (2 bits per chunk) and the shared emitted records.
 *
 * A slot is FREE -> ACTIVE (in the index and age list) -> QUEUED (emitted,
 * in emitq) -> DRAINED (caller holds the descriptor) -> FREE on release.
 * Its accumulator is in use from ACTIVE until release.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agg_kernels.h"
#include "isth_ctr.h"
#include "isth_agg.h"

#define AGG_NONE UINT32_MAX
#define AGG_CACHE_LINE 64u
#define AGG_REC_WAYS 8u

enum agg_slot_state {
	SLOT_FREE = 0,
	SLOT_ACTIVE,
	SLOT_QUEUED,
	SLOT_DRAINED,
};

/* Per-chunk state within a round, 2 bits each. */
enum agg_chunk_state {
	CHUNK_OPEN = 0, /* nothing emitted yet */
	CHUNK_PARTIAL = 1, /* some contributors emitted: see its record */
	CHUNK_DONE = 2, /* every expected contributor emitted */
	CHUNK_CLOSED = 3, /* a partial found no record: refuse the rest */
};

/* Written by: owner lcore only. */
struct agg_slot {
	uint32_t job;
	uint32_t round;
	uint32_t chunk;
	uint16_t count;
	uint8_t dtype; /* wire dtype of the contributions */
	uint8_t state; /* enum agg_slot_state */
	uint64_t bitmap; /* contributors summed here */
	uint64_t seen; /* bitmap | contributors emitted before */
	uint64_t expected;
	uint64_t first_ns;
	uint32_t prev; /* age list */
	uint32_t next;
	uint32_t bucket;
	uint8_t way;
	uint8_t reason; /* enum isth_agg_reason once emitted */
	uint16_t job_idx;
} __attribute__((aligned(AGG_CACHE_LINE)));

/* Written by: owner lcore only. sig 0 marks an empty way. */
struct agg_bucket {
	uint32_t sig[ISTH_AGG_BUCKET_WAYS];
	uint32_t idx[ISTH_AGG_BUCKET_WAYS];
} __attribute__((aligned(AGG_CACHE_LINE)));

/*
 * One round's table. Written by: control plane (isth_agg_set_round) in a
 * buffer no reader sees (lib/rtab); read-only once published; read by:
 * owner lcore until its next quiescent state.
 */
struct agg_round {
	uint32_t round;
	uint32_t pad;
	uint64_t expected; /* never 0 */
};

/* Written by: control plane; read by: owner lcore (acquire on used, newest). */
struct agg_job {
	uint32_t job;
	uint32_t used;
	uint32_t newest;
};

/* Written by: owner lcore only. Which round each chunk-state array holds. */
struct agg_rstate {
	uint32_t round;
	uint32_t valid;
};

/*
 * Emitted record of a partially emitted chunk. Written by: owner lcore.
 * emitted == 0 marks a free entry; an entry whose round no longer owns
 * its rstate has left the window and is free too.
 */
struct agg_record {
	uint32_t job_idx;
	uint32_t round;
	uint32_t chunk;
	uint32_t pad;
	uint64_t emitted;
};

struct isth_agg {
	struct isth_agg_params p;
	struct isth_agg_kernels k;
	uint32_t n_slots;
	uint32_t slot_size;
	uint32_t bucket_mask;
	uint32_t rec_mask; /* record buckets - 1 */
	uint32_t emitq_mask;
	uint32_t max_active; /* n_slots - reserve */
	uint32_t n_active;
	uint32_t n_free;
	uint32_t age_head;
	uint32_t age_tail;
	uint32_t emitq_head; /* next to drain */
	uint32_t emitq_tail; /* next to fill */
	uint32_t chunk_state_size; /* bytes per round entry */
	uint32_t last_job; /* cache of the last job index looked up */
	uint64_t meta_size;
	uint8_t *acc;
	struct agg_slot *slots;
	struct agg_bucket *buckets;
	uint32_t *free_stack;
	uint32_t *emitq;
	struct agg_job *jobs; /* max_jobs */
	struct isth_rtab *rtab; /* max_jobs * window slots of struct agg_round */
	struct agg_rstate *rstates; /* max_jobs * window */
	uint8_t *chunk_states; /* max_jobs * window * chunk_state_size */
	struct agg_record *records; /* (rec_mask + 1) * AGG_REC_WAYS */
	struct isth_agg_stats stats;
};

static const char *const stats_names[ISTH_AGG_STATS_N] = {ISTH_AGG_STATS(ISTH_CTR_NAME)};

static const char *const reason_names[ISTH_AGG_REASON_MAX] = {
	"complete",
	"timeout",
	"conflict_pool",
	"conflict_bucket",
	"flush",
};

static const char *const kernel_names[ISTH_AGG_KERNEL_MAX] = {
	"auto",
	"scalar",
	"avx2",
	"avx512",
};

const char *
isth_agg_stats_name(unsigned int i)
{
	return i < ISTH_AGG_STATS_N ? stats_names[i] : "unknown";
}

const char *
isth_agg_reason_name(unsigned int r)
{
	return r < ISTH_AGG_REASON_MAX ? reason_names[r] : "unknown";
}

const char *
isth_agg_kernel_name(enum isth_agg_kernel k)
{
	return (unsigned int)k < ISTH_AGG_KERNEL_MAX ? kernel_names[k] : "unknown";
}

/* Kernels. */

bool
isth_agg_kernel_supported(enum isth_agg_kernel k)
{
	__builtin_cpu_init();
	switch (k) {
	case ISTH_AGG_KERNEL_AUTO:
	case ISTH_AGG_KERNEL_SCALAR:
		return true;
	case ISTH_AGG_KERNEL_AVX2:
		return __builtin_cpu_supports("avx2");
	case ISTH_AGG_KERNEL_AVX512:
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
	default:
		return false;
	}
}

int
isth_agg_kernels_get(enum isth_agg_kernel k, struct isth_agg_kernels *out)
{
	if ((unsigned int)k >= ISTH_AGG_KERNEL_MAX || out == NULL)
		return -EINVAL;
	if (k == ISTH_AGG_KERNEL_AUTO) {
		if (isth_agg_kernel_supported(ISTH_AGG_KERNEL_AVX512))
			k = ISTH_AGG_KERNEL_AVX512;
		else if (isth_agg_kernel_supported(ISTH_AGG_KERNEL_AVX2))
			k = ISTH_AGG_KERNEL_AVX2;
		else
			k = ISTH_AGG_KERNEL_SCALAR;
	}
	if (!isth_agg_kernel_supported(k))
		return -ENOTSUP;
	switch (k) {
	case ISTH_AGG_KERNEL_AVX2:
		*out = agg_kernels_avx2;
		break;
	case ISTH_AGG_KERNEL_AVX512:
		*out = agg_kernels_avx512;
		break;
	default:
		*out = agg_kernels_scalar;
		break;
	}
	return 0;
}

/* The kernels of isth_agg_finite(): this CPU's best, chosen at load. */
static struct isth_agg_kernels finite_k = {
	.within_fp32 = agg_scalar_within_fp32, .within_bf16 = agg_scalar_within_bf16};

__attribute__((constructor)) static void
finite_init(void)
{
	(void)isth_agg_kernels_get(ISTH_AGG_KERNEL_AUTO, &finite_k);
}

bool
isth_agg_finite(uint8_t dtype, const void *src, size_t n)
{
	if (dtype == ISTH_WIRE_DTYPE_FP32)
		return finite_k.within_fp32(src, n, ISTH_AGG_FP32_MAX_BITS);
	if (dtype == ISTH_WIRE_DTYPE_BF16)
		return finite_k.within_bf16(src, n, ISTH_AGG_BF16_MAX_BITS);
	return true;
}

bool
isth_agg_within(uint8_t dtype, const void *src, size_t n, float max_abs)
{
	uint32_t lim;

	memcpy(&lim, &max_abs, 4);
	lim &= 0x7fffffffu;
	if (lim > ISTH_AGG_FP32_MAX_BITS)
		lim = ISTH_AGG_FP32_MAX_BITS; /* NaN or Inf given: finite only */
	if (dtype == ISTH_WIRE_DTYPE_FP32)
		return finite_k.within_fp32(src, n, lim);
	if (dtype == ISTH_WIRE_DTYPE_BF16)
		return finite_k.within_bf16(src, n, (uint16_t)(lim >> 16));
	return true;
}

/* Helpers. */

static uint32_t
next_pow2(uint64_t x)
{
	uint32_t p = 1;

	while (p < x && p < (1u << 31))
		p <<= 1;
	return p;
}

static inline uint64_t
key_hash(uint32_t job, uint32_t round, uint32_t chunk)
{
	uint64_t h = ((uint64_t)round << 32 | chunk) * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)job * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

static void *
zalloc(size_t size, uint64_t *meta)
{
	void *p;

	size = (size + AGG_CACHE_LINE - 1) & ~(size_t)(AGG_CACHE_LINE - 1);
	p = aligned_alloc(AGG_CACHE_LINE, size);
	if (p != NULL) {
		memset(p, 0, size);
		if (meta != NULL)
			*meta += size;
	}
	return p;
}

static inline void *
slot_acc(const struct isth_agg *agg, uint32_t idx)
{
	return agg->acc + (size_t)idx * agg->slot_size;
}

/* Create / destroy. */

/* The parameters isth_agg_create() refuses before sizing anything. */
static bool
params_valid(const struct isth_agg_params *p)
{
	return p != NULL && p->max_elems != 0 && p->max_elems <= UINT16_MAX && p->max_chunks != 0 &&
		p->n_islands != 0 && p->n_islands <= ISTH_WIRE_MAX_ISLANDS && p->timeout_ns != 0 &&
		p->max_jobs <= 256 && p->window <= 1024 &&
		(p->bf16_out == 0 || p->bf16_out == ISTH_WIRE_DTYPE_BF16 ||
			p->bf16_out == ISTH_WIRE_DTYPE_FP32) &&
		(p->n_buckets & (p->n_buckets - 1)) == 0 &&
		(unsigned int)p->kernel < ISTH_AGG_KERNEL_MAX;
}

/* ISTH_AGG_RESERVE_DEFAULT: an eighth of the slots, at most 32, at least 1
 * when there are two slots or more. */
static uint32_t
default_reserve(uint32_t n_slots)
{
	uint32_t reserve = n_slots / 8;

	if (reserve > 32)
		reserve = 32;
	if (reserve == 0 && n_slots > 1)
		reserve = 1;
	return reserve;
}

/*
 * Check @p and size an engine from it in @a (zeroed first): slots from
 * the budget, the reserve, the kernels, buckets and records, with the
 * defaults written into a->p. @return 0, -EINVAL or -ENOTSUP (kernel).
 */
static int
agg_size(const struct isth_agg_params *p, struct isth_agg *a)
{
	uint32_t n_records, n_rec_buckets;
	int rc;

	if (!params_valid(p))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->slot_size = (p->max_elems * 4u + AGG_CACHE_LINE - 1) & ~(AGG_CACHE_LINE - 1);
	if (p->mem_budget / a->slot_size == 0 || p->mem_budget / a->slot_size > (1u << 24))
		return -EINVAL;
	a->n_slots = (uint32_t)(p->mem_budget / a->slot_size);
	a->p = *p;
	if (p->reserve == ISTH_AGG_RESERVE_DEFAULT)
		a->p.reserve = default_reserve(a->n_slots);
	if (a->p.reserve >= a->n_slots)
		return -EINVAL;
	rc = isth_agg_kernels_get(p->kernel, &a->k);
	if (rc < 0)
		return rc;
	a->p.kernel = a->k.id;
	a->p.window = p->window ? p->window : 4;
	a->p.max_jobs = p->max_jobs ? p->max_jobs : 1;
	if (p->n_buckets == 0)
		a->p.n_buckets = next_pow2(((uint64_t)a->n_slots * 4 + ISTH_AGG_BUCKET_WAYS - 1) /
			ISTH_AGG_BUCKET_WAYS);
	n_records = p->n_records ? p->n_records : a->n_slots * 4;
	n_rec_buckets = next_pow2((n_records + AGG_REC_WAYS - 1) / AGG_REC_WAYS);
	a->p.n_records = n_rec_buckets * AGG_REC_WAYS;
	if (a->p.bf16_out == 0)
		a->p.bf16_out = ISTH_WIRE_DTYPE_BF16;
	a->bucket_mask = a->p.n_buckets - 1;
	a->rec_mask = n_rec_buckets - 1;
	a->emitq_mask = next_pow2(a->n_slots) - 1;
	a->max_active = a->n_slots - a->p.reserve;
	a->chunk_state_size = ((p->max_chunks + 3) / 4 + 7) & ~7u;
	a->age_head = AGG_NONE;
	a->age_tail = AGG_NONE;
	a->meta_size = sizeof(*a);
	return 0;
}

/*
 * Every table of the sized engine @agg, zeroed; meta_size counts all but
 * the budget, acc[]. @return 0 or -ENOMEM (isth_agg_destroy() frees what
 * was allocated).
 */
static int
agg_alloc(struct isth_agg *agg, struct rte_rcu_qsbr *qs)
{
	size_t n_rounds = (size_t)agg->p.max_jobs * agg->p.window;
	/* as many spares as slots: a whole window can be published again
	 * while the owner has not yet passed a quiescent state */
	struct isth_rtab_params rp = {
		.n_slots = (uint32_t)n_rounds,
		.n_spare = (uint32_t)n_rounds,
		.size = sizeof(struct agg_round),
		.qs = qs,
	};
	uint64_t *meta = &agg->meta_size;

	/* the budget: one allocation, not counted in meta_size */
	agg->acc = zalloc((size_t)agg->n_slots * agg->slot_size, NULL);
	agg->slots = zalloc((size_t)agg->n_slots * sizeof(*agg->slots), meta);
	agg->buckets = zalloc((size_t)agg->p.n_buckets * sizeof(*agg->buckets), meta);
	agg->free_stack = zalloc((size_t)agg->n_slots * sizeof(uint32_t), meta);
	agg->emitq = zalloc((size_t)(agg->emitq_mask + 1) * sizeof(uint32_t), meta);
	agg->jobs = zalloc(agg->p.max_jobs * sizeof(*agg->jobs), meta);
	agg->rtab = isth_rtab_create(&rp);
	/* its buffers are cache-line aligned, plus a slot pointer each */
	*meta += n_rounds * (2 * AGG_CACHE_LINE + sizeof(void *));
	agg->rstates = zalloc(n_rounds * sizeof(*agg->rstates), meta);
	agg->chunk_states = zalloc(n_rounds * agg->chunk_state_size, meta);
	agg->records = zalloc((size_t)agg->p.n_records * sizeof(*agg->records), meta);
	if (agg->acc == NULL || agg->slots == NULL || agg->buckets == NULL ||
		agg->free_stack == NULL || agg->emitq == NULL || agg->jobs == NULL ||
		agg->rtab == NULL || agg->rstates == NULL || agg->chunk_states == NULL ||
		agg->records == NULL)
		return -ENOMEM;
	return 0;
}

struct isth_agg *
isth_agg_create(const struct isth_agg_params *p)
{
	struct isth_agg sized, *agg;
	uint32_t i;
	int rc;

	rc = agg_size(p, &sized);
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	agg = zalloc(sizeof(*agg), NULL);
	if (agg == NULL)
		goto nomem;
	*agg = sized;
	if (agg_alloc(agg, p->qs) < 0)
		goto free_agg;
	/* pop order low index first keeps tests readable */
	for (i = 0; i < agg->n_slots; i++)
		agg->free_stack[i] = agg->n_slots - 1 - i;
	agg->n_free = agg->n_slots;
	return agg;

free_agg:
	isth_agg_destroy(agg);
nomem:
	errno = ENOMEM;
	return NULL;
}

void
isth_agg_destroy(struct isth_agg *agg)
{
	if (agg == NULL)
		return;
	free(agg->records);
	free(agg->chunk_states);
	free(agg->rstates);
	isth_rtab_destroy(agg->rtab);
	free(agg->jobs);
	free(agg->emitq);
	free(agg->free_stack);
	free(agg->buckets);
	free(agg->slots);
	free(agg->acc);
	free(agg);
}

void
isth_agg_info_get(const struct isth_agg *agg, struct isth_agg_info *info)
{
	memset(info, 0, sizeof(*info));
	info->n_slots = agg->n_slots;
	info->slot_size = agg->slot_size;
	info->acc_size = (uint64_t)agg->n_slots * agg->slot_size;
	info->meta_size = agg->meta_size;
	info->n_buckets = agg->p.n_buckets;
	info->n_records = agg->p.n_records;
	info->window = agg->p.window;
	info->reserve = agg->p.reserve;
	info->kernel = agg->p.kernel;
}

/* Control plane: round tables. */

int
isth_agg_set_round(struct isth_agg *agg, uint32_t job, uint32_t round, uint64_t expected)
{
	uint64_t valid = agg->p.n_islands == 64 ? UINT64_MAX : (1ull << agg->p.n_islands) - 1;
	struct agg_round *r;
	struct agg_job *j = NULL;
	uint32_t i;

	if (expected == 0 || (expected & ~valid) != 0)
		return -EINVAL;
	for (i = 0; i < agg->p.max_jobs; i++) {
		if (__atomic_load_n(&agg->jobs[i].used, __ATOMIC_ACQUIRE) &&
			agg->jobs[i].job == job) {
			j = &agg->jobs[i];
			break;
		}
	}
	if (j == NULL) {
		for (i = 0; i < agg->p.max_jobs; i++)
			if (!__atomic_load_n(&agg->jobs[i].used, __ATOMIC_ACQUIRE))
				break;
		if (i == agg->p.max_jobs)
			return -ENOSPC;
		j = &agg->jobs[i];
	} else if (round < __atomic_load_n(&j->newest, __ATOMIC_RELAXED)) {
		return -EINVAL;
	}
	/* a buffer no reader can see; none free yet: the caller retries */
	r = isth_rtab_prepare(agg->rtab);
	if (r == NULL)
		return -EBUSY;
	if (!__atomic_load_n(&j->used, __ATOMIC_RELAXED)) {
		j->job = job;
		__atomic_store_n(&j->newest, round, __ATOMIC_RELAXED);
	}
	r->round = round;
	r->expected = expected;
	/* the slot before newest: a reader that sees newest sees the table */
	isth_rtab_publish(agg->rtab, i * agg->p.window + round % agg->p.window, r);
	__atomic_store_n(&j->newest, round, __ATOMIC_RELEASE);
	__atomic_store_n(&j->used, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Data path: the index, the age list and emission. */

static inline uint32_t
find_job(struct isth_agg *agg, uint32_t job)
{
	uint32_t i = agg->last_job;

	if (__atomic_load_n(&agg->jobs[i].used, __ATOMIC_ACQUIRE) && agg->jobs[i].job == job)
		return i;
	for (i = 0; i < agg->p.max_jobs; i++) {
		if (__atomic_load_n(&agg->jobs[i].used, __ATOMIC_ACQUIRE) &&
			agg->jobs[i].job == job) {
			agg->last_job = i;
			return i;
		}
	}
	return AGG_NONE;
}

/*
 * The expected set of (job_idx, round), or 0 with *drop pointing at the
 * counter to bump.
 */
static inline uint64_t
round_expected(struct isth_agg *agg, uint32_t ji, uint32_t round, uint64_t **drop)
{
	const struct agg_round *r;
	uint32_t newest;

	newest = __atomic_load_n(&agg->jobs[ji].newest, __ATOMIC_ACQUIRE);
	if (round > newest) {
		*drop = &agg->stats.unknown_round;
		return 0;
	}
	if (newest - round >= agg->p.window) {
		*drop = &agg->stats.stale_round;
		return 0;
	}
	/* read-only until this lcore's next quiescent state (lib/rtab) */
	r = isth_rtab_get(agg->rtab, ji * agg->p.window + round % agg->p.window);
	*drop = &agg->stats.unknown_round;
	if (r == NULL)
		return 0;
	if (r->round == round)
		return r->expected; /* never 0 */
	/* replaced by a newer round since we read newest */
	if (r->round > round)
		*drop = &agg->stats.stale_round;
	return 0;
}

/* The chunk-state array of (ji, round), reset when the entry changes round. */
static inline uint8_t *
round_state(struct isth_agg *agg, uint32_t ji, uint32_t round)
{
	size_t e = (size_t)ji * agg->p.window + round % agg->p.window;
	struct agg_rstate *rs = &agg->rstates[e];
	uint8_t *cs = agg->chunk_states + e * agg->chunk_state_size;

	if (!rs->valid || rs->round != round) {
		/* once per round per entry: max_chunks / 4 bytes */
		memset(cs, 0, agg->chunk_state_size);
		rs->round = round;
		rs->valid = 1;
	}
	return cs;
}

/* The chunk-state array of a slot's round if it is still tracked, else NULL. */
static inline uint8_t *
round_state_if(struct isth_agg *agg, uint32_t ji, uint32_t round)
{
	size_t e = (size_t)ji * agg->p.window + round % agg->p.window;
	const struct agg_rstate *rs = &agg->rstates[e];

	if (!rs->valid || rs->round != round)
		return NULL;
	return agg->chunk_states + e * agg->chunk_state_size;
}

static inline unsigned int
chunk_get(const uint8_t *cs, uint32_t chunk)
{
	return (cs[chunk >> 2] >> ((chunk & 3) * 2)) & 3u;
}

static inline void
chunk_set(uint8_t *cs, uint32_t chunk, unsigned int st)
{
	unsigned int sh = (chunk & 3) * 2;

	cs[chunk >> 2] = (uint8_t)((cs[chunk >> 2] & ~(3u << sh)) | (st << sh));
}

static inline struct agg_record *
rec_bucket(struct isth_agg *agg, uint32_t ji, uint32_t round, uint32_t chunk)
{
	uint64_t h = key_hash(ji, round, chunk);

	return &agg->records[(size_t)(h & agg->rec_mask) * AGG_REC_WAYS];
}

static struct agg_record *
rec_find(struct isth_agg *agg, uint32_t ji, uint32_t round, uint32_t chunk)
{
	struct agg_record *b = rec_bucket(agg, ji, round, chunk);
	unsigned int w;

	for (w = 0; w < AGG_REC_WAYS; w++)
		if (b[w].emitted != 0 && b[w].job_idx == ji && b[w].round == round &&
			b[w].chunk == chunk)
			return &b[w];
	return NULL;
}

static struct agg_record *
rec_insert(struct isth_agg *agg, uint32_t ji, uint32_t round, uint32_t chunk)
{
	struct agg_record *b = rec_bucket(agg, ji, round, chunk);
	unsigned int w;

	for (w = 0; w < AGG_REC_WAYS; w++) {
		/* free, or its round has left the window (lazy reclaim) */
		if (b[w].emitted == 0 || round_state_if(agg, b[w].job_idx, b[w].round) == NULL) {
			b[w].job_idx = ji;
			b[w].round = round;
			b[w].chunk = chunk;
			return &b[w];
		}
	}
	return NULL;
}

static inline void
age_unlink(struct isth_agg *agg, struct agg_slot *s)
{
	if (s->prev != AGG_NONE)
		agg->slots[s->prev].next = s->next;
	else
		agg->age_head = s->next;
	if (s->next != AGG_NONE)
		agg->slots[s->next].prev = s->prev;
	else
		agg->age_tail = s->prev;
}

static inline void
age_append(struct isth_agg *agg, uint32_t idx)
{
	struct agg_slot *s = &agg->slots[idx];

	s->next = AGG_NONE;
	s->prev = agg->age_tail;
	if (agg->age_tail != AGG_NONE)
		agg->slots[agg->age_tail].next = idx;
	else
		agg->age_head = idx;
	agg->age_tail = idx;
}

/* Record what this emission hands out, so no contributor is emitted twice. */
static void
record_emission(struct isth_agg *agg, const struct agg_slot *s)
{
	uint8_t *cs = round_state_if(agg, s->job_idx, s->round);
	struct agg_record *r;
	unsigned int st;

	if (cs == NULL)
		return; /* round left the window: its DATA is refused as stale */
	st = chunk_get(cs, s->chunk);
	if (s->seen == s->expected) {
		if (st == CHUNK_PARTIAL) {
			r = rec_find(agg, s->job_idx, s->round, s->chunk);
			if (r != NULL)
				r->emitted = 0;
		}
		chunk_set(cs, s->chunk, CHUNK_DONE);
		return;
	}
	r = st == CHUNK_PARTIAL ? rec_find(agg, s->job_idx, s->round, s->chunk) : NULL;
	if (r == NULL)
		r = rec_insert(agg, s->job_idx, s->round, s->chunk);
	if (r == NULL) {
		isth_ctr_add(&agg->stats.record_full, 1);
		chunk_set(cs, s->chunk, CHUNK_CLOSED);
		return;
	}
	r->emitted = s->seen;
	chunk_set(cs, s->chunk, CHUNK_PARTIAL);
}

static void
emit_slot(struct isth_agg *agg, uint32_t idx, enum isth_agg_reason reason)
{
	struct agg_slot *s = &agg->slots[idx];
	struct agg_bucket *b = &agg->buckets[s->bucket];

	b->sig[s->way] = 0;
	b->idx[s->way] = AGG_NONE;
	age_unlink(agg, s);
	agg->n_active--;
	s->state = SLOT_QUEUED;
	s->reason = (uint8_t)reason;
	agg->emitq[agg->emitq_tail++ & agg->emitq_mask] = idx;
	record_emission(agg, s);

	switch (reason) {
	case ISTH_AGG_COMPLETE:
		isth_ctr_add(&agg->stats.completed, 1);
		break;
	case ISTH_AGG_TIMEOUT:
		isth_ctr_add(&agg->stats.partial_timeout, 1);
		break;
	case ISTH_AGG_CONFLICT_POOL:
		isth_ctr_add(&agg->stats.partial_conflict_pool, 1);
		break;
	case ISTH_AGG_CONFLICT_BUCKET:
		isth_ctr_add(&agg->stats.partial_conflict_bucket, 1);
		break;
	default:
		isth_ctr_add(&agg->stats.partial_flush, 1);
		break;
	}
}

static inline void
mem_gauges(struct isth_agg *agg)
{
	uint64_t used = agg->n_slots - agg->n_free;

	isth_ctr_set(&agg->stats.slots_in_use, used);
	isth_ctr_set(&agg->stats.mem_in_use, used * agg->slot_size);
	if (used > agg->stats.slots_hwm) {
		isth_ctr_set(&agg->stats.slots_hwm, used);
		isth_ctr_set(&agg->stats.mem_hwm, used * agg->slot_size);
	}
}

/* First contribution of a slot: initialise rather than add. */
static inline void
acc_load(struct isth_agg *agg, void *acc, const struct isth_agg_contrib *c)
{
	if (c->dtype == ISTH_WIRE_DTYPE_BF16)
		agg->k.load_bf16(acc, c->data, c->count);
	else
		memcpy(acc, c->data, (size_t)c->count * 4);
}

static inline void
acc_add(struct isth_agg *agg, void *acc, const struct isth_agg_contrib *c)
{
	switch (c->dtype) {
	case ISTH_WIRE_DTYPE_FP32:
		agg->k.add_fp32(acc, c->data, c->count);
		break;
	case ISTH_WIRE_DTYPE_BF16:
		agg->k.add_bf16(acc, c->data, c->count);
		break;
	default:
		agg->k.add_int32(acc, c->data, c->count);
		break;
	}
}

static inline bool
contrib_bad(const struct isth_agg *agg, const struct isth_agg_contrib *c)
{
	return c->dtype == ISTH_WIRE_DTYPE_NONE || c->dtype > ISTH_WIRE_DTYPE_MAX ||
		c->count == 0 || c->count > agg->p.max_elems || c->chunk >= agg->p.max_chunks ||
		c->sender >= agg->p.n_islands || c->data == NULL;
}

/* Oldest active slot of a full bucket. */
static inline uint32_t
bucket_victim(const struct isth_agg *agg, const struct agg_bucket *b)
{
	uint32_t v = b->idx[0];
	unsigned int w;

	for (w = 1; w < ISTH_AGG_BUCKET_WAYS; w++)
		if (agg->slots[b->idx[w]].first_ns < agg->slots[v].first_ns)
			v = b->idx[w];
	return v;
}

/*
 * The checks before the index: a well-formed contribution of a known job,
 * of a round in its window, from a sender the round expects. Counts the
 * drop and returns 0, or returns the round's expected bitmap (never 0)
 * and the job's index in *ji.
 */
static inline uint64_t
admit(struct isth_agg *agg, const struct isth_agg_contrib *c, uint32_t *ji)
{
	uint64_t expected, *drop;

	if (contrib_bad(agg, c)) {
		isth_ctr_add(&agg->stats.bad_input, 1);
		return 0;
	}
	*ji = find_job(agg, c->job);
	if (*ji == AGG_NONE) {
		isth_ctr_add(&agg->stats.unknown_job, 1);
		return 0;
	}
	expected = round_expected(agg, *ji, c->round, &drop);
	if (expected == 0) {
		isth_ctr_add(drop, 1);
		return 0;
	}
	if ((expected & (1ull << c->sender)) == 0) {
		isth_ctr_add(&agg->stats.unexpected_sender, 1);
		return 0;
	}
	return expected;
}

/*
 * The way of bucket @b whose slot holds the key of @c, or
 * ISTH_AGG_BUCKET_WAYS on a miss; *fw is then the first empty way
 * (ISTH_AGG_BUCKET_WAYS: the bucket is full).
 */
static inline unsigned int
bucket_find(const struct isth_agg *agg, const struct agg_bucket *b, uint32_t sig,
	const struct isth_agg_contrib *c, unsigned int *fw)
{
	const struct agg_slot *s;
	unsigned int w;

	*fw = ISTH_AGG_BUCKET_WAYS;
	for (w = 0; w < ISTH_AGG_BUCKET_WAYS; w++) {
		if (b->sig[w] == 0) {
			if (*fw == ISTH_AGG_BUCKET_WAYS)
				*fw = w;
			continue;
		}
		if (b->sig[w] != sig)
			continue;
		s = &agg->slots[b->idx[w]];
		if (s->chunk == c->chunk && s->round == c->round && s->job == c->job)
			return w;
	}
	return ISTH_AGG_BUCKET_WAYS;
}

/* A hit: sum @c (sender @bit) into its key's active slot @idx, unless it
 * does not match the slot or its sender is already in. */
static inline void
add_to_slot(struct isth_agg *agg, uint32_t idx, const struct isth_agg_contrib *c, uint64_t bit)
{
	struct agg_slot *s = &agg->slots[idx];

	if (s->dtype != c->dtype || s->count != c->count) {
		isth_ctr_add(&agg->stats.mismatch, 1);
		return;
	}
	if (s->seen & bit) {
		isth_ctr_add(
			s->bitmap & bit ? &agg->stats.duplicate : &agg->stats.duplicate_emitted, 1);
		return;
	}
	acc_add(agg, slot_acc(agg, idx), c);
	s->bitmap |= bit;
	s->seen |= bit;
	isth_ctr_add(&agg->stats.accepted, 1);
	if (s->seen == s->expected)
		emit_slot(agg, idx, ISTH_AGG_COMPLETE);
}

/*
 * A miss: the contributors of @c's chunk that already left in an emitted
 * partial (its record), in *prior, so that a new slot starts from them.
 * Counts and returns false when the chunk refuses @c's sender @bit
 * (emitted already, or the chunk is closed).
 */
static inline bool
chunk_prior(struct isth_agg *agg, uint32_t ji, const struct isth_agg_contrib *c, uint64_t bit,
	uint64_t *prior)
{
	const struct agg_record *r;

	*prior = 0;
	switch (chunk_get(round_state(agg, ji, c->round), c->chunk)) {
	case CHUNK_DONE:
		isth_ctr_add(&agg->stats.duplicate_emitted, 1);
		return false;
	case CHUNK_CLOSED:
		isth_ctr_add(&agg->stats.chunk_closed, 1);
		return false;
	case CHUNK_PARTIAL:
		r = rec_find(agg, ji, c->round, c->chunk);
		*prior = r != NULL ? r->emitted : 0;
		if (*prior & bit) {
			isth_ctr_add(&agg->stats.duplicate_emitted, 1);
			return false;
		}
		return true;
	default:
		return true;
	}
}

/*
 * One contribution; @h: key_hash() of its key, computed once per
 * contribution by the caller. The per-element path: the helpers above are
 * static inline and called once each, so the compiler folds them back into
 * isth_agg_add_burst() (gcc 12 -O2: 40 bytes more of it, register moves;
 * bench_agg's engine figures did not move beyond their noise).
 */
static void
add_one(struct isth_agg *agg, const struct isth_agg_contrib *c, uint64_t h, uint64_t now)
{
	uint64_t expected, bit, prior;
	struct agg_bucket *b;
	struct agg_slot *s;
	uint32_t ji, sig, idx;
	unsigned int w, fw;

	expected = admit(agg, c, &ji);
	if (expected == 0)
		return;
	bit = 1ull << c->sender; /* c->sender < 64: admit() checked it */
	sig = (uint32_t)(h >> 32) | 1u;
	b = &agg->buckets[h & agg->bucket_mask];
	w = bucket_find(agg, b, sig, c, &fw);
	if (w < ISTH_AGG_BUCKET_WAYS) {
		add_to_slot(agg, b->idx[w], c, bit);
		return;
	}
	/* miss: a new slot, unless the chunk's record refuses this sender */
	if (!chunk_prior(agg, ji, c, bit, &prior))
		return;
	if (agg->n_free == 0) {
		/* every accumulator is active or awaits release */
		isth_ctr_add(&agg->stats.no_slot, 1);
		return;
	}
	if (fw == ISTH_AGG_BUCKET_WAYS) {
		idx = bucket_victim(agg, b);
		fw = agg->slots[idx].way;
		emit_slot(agg, idx, ISTH_AGG_CONFLICT_BUCKET);
	} else if (agg->n_active >= agg->max_active) {
		emit_slot(agg, agg->age_head, ISTH_AGG_CONFLICT_POOL);
	}

	idx = agg->free_stack[--agg->n_free];
	s = &agg->slots[idx];
	s->job = c->job;
	s->round = c->round;
	s->chunk = c->chunk;
	s->count = c->count;
	s->dtype = c->dtype;
	s->state = SLOT_ACTIVE;
	s->bitmap = bit;
	s->seen = prior | bit;
	s->expected = expected;
	s->first_ns = now;
	s->bucket = (uint32_t)(h & agg->bucket_mask);
	s->way = (uint8_t)fw;
	s->job_idx = (uint16_t)ji;
	b->sig[fw] = sig;
	b->idx[fw] = idx;
	age_append(agg, idx);
	agg->n_active++;
	acc_load(agg, slot_acc(agg, idx), c);
	isth_ctr_add(&agg->stats.accepted, 1);
	mem_gauges(agg);
	if (s->seen == s->expected)
		emit_slot(agg, idx, ISTH_AGG_COMPLETE);
}

/*
 * Prefetch the slot descriptor and accumulator of the key hashed @h, if its
 * bucket has a way with the key's signature. The slot is not compared
 * (that would wait for its descriptor): a 32-bit signature shared by
 * another key only wastes a prefetch.
 */
static inline void
prefetch_slot(const struct isth_agg *agg, const struct isth_agg_contrib *c, uint64_t h)
{
	const struct agg_bucket *b = &agg->buckets[h & agg->bucket_mask];
	uint32_t sig = (uint32_t)(h >> 32) | 1u;
	const uint8_t *acc;
	size_t off, size;
	unsigned int w;

	if (c->count > agg->p.max_elems)
		return;
	for (w = 0; w < ISTH_AGG_BUCKET_WAYS; w++)
		if (b->sig[w] == sig)
			break;
	if (w == ISTH_AGG_BUCKET_WAYS)
		return;
	__builtin_prefetch(&agg->slots[b->idx[w]], 1);
	acc = slot_acc(agg, b->idx[w]);
	size = (size_t)c->count * 4;
	for (off = 0; off < size; off += AGG_CACHE_LINE)
		__builtin_prefetch(acc + off, 1);
}

static inline bool
same_key(const struct isth_agg_contrib *a, const struct isth_agg_contrib *b)
{
	return a->chunk == b->chunk && a->round == b->round && a->job == b->job;
}

/* Contributions hashed and prefetched together: a burst's worth. */
#define ADD_BLOCK 32u
/* Contributions ahead of the one summed whose slot is prefetched. */
#define ADD_AHEAD 2u

/*
 * Software pipeline over a block: every key is hashed once and its bucket
 * prefetched at the start (a new chunk's bucket is a random line of the
 * index, a miss); the slot and accumulator of c[i + ADD_AHEAD] are
 * prefetched while c[i] is summed. A contribution to the same chunk as
 * the one before it (aligned streams: 7 of 8) prefetches nothing: its
 * bucket and accumulator are the ones being written. With more live slots
 * than the cache holds, this hides most of the accumulator miss.
 */
unsigned int
isth_agg_add_burst(
	struct isth_agg *agg, const struct isth_agg_contrib *c, unsigned int n, uint64_t now)
{
	uint64_t before = agg->stats.accepted;
	uint64_t h[ADD_BLOCK];
	unsigned int i, k, base;

	for (base = 0; base < n; base += k, c += k) {
		k = n - base < ADD_BLOCK ? n - base : ADD_BLOCK;
		for (i = 0; i < k; i++) {
			h[i] = key_hash(c[i].job, c[i].round, c[i].chunk);
			if (i == 0 || !same_key(&c[i], &c[i - 1]))
				__builtin_prefetch(&agg->buckets[h[i] & agg->bucket_mask]);
		}
		for (i = 0; i < k && i < ADD_AHEAD; i++)
			if (i == 0 || !same_key(&c[i], &c[i - 1]))
				prefetch_slot(agg, &c[i], h[i]);
		for (i = 0; i < k; i++) {
			unsigned int a = i + ADD_AHEAD;

			if (a < k && !same_key(&c[a], &c[a - 1]))
				prefetch_slot(agg, &c[a], h[a]);
			add_one(agg, &c[i], h[i], now);
		}
	}
	return (unsigned int)(agg->stats.accepted - before);
}

unsigned int
isth_agg_poll(struct isth_agg *agg, uint64_t now)
{
	unsigned int n = 0;

	while (agg->age_head != AGG_NONE &&
		now - agg->slots[agg->age_head].first_ns >= agg->p.timeout_ns &&
		now >= agg->slots[agg->age_head].first_ns) {
		emit_slot(agg, agg->age_head, ISTH_AGG_TIMEOUT);
		n++;
	}
	return n;
}

unsigned int
isth_agg_expire_round(struct isth_agg *agg, uint32_t job, uint32_t round)
{
	uint32_t idx = agg->age_head, next;
	unsigned int n = 0;

	/* O(active slots), once per round: walk the age list, keeping the
	 * successor before emit_slot() unlinks the node. */
	while (idx != AGG_NONE) {
		struct agg_slot *s = &agg->slots[idx];

		next = s->next;
		if (s->job == job && (int32_t)(round - s->round) >= 0) {
			emit_slot(agg, idx, ISTH_AGG_TIMEOUT);
			n++;
		}
		idx = next;
	}
	return n;
}

unsigned int
isth_agg_flush(struct isth_agg *agg)
{
	unsigned int n = 0;

	while (agg->age_head != AGG_NONE) {
		emit_slot(agg, agg->age_head, ISTH_AGG_FLUSH);
		n++;
	}
	return n;
}

unsigned int
isth_agg_pending(const struct isth_agg *agg)
{
	return agg->emitq_tail - agg->emitq_head;
}

unsigned int
isth_agg_drain(struct isth_agg *agg, struct isth_agg_emit *out, unsigned int cap)
{
	unsigned int n = 0;

	while (n < cap && agg->emitq_head != agg->emitq_tail) {
		uint32_t idx = agg->emitq[agg->emitq_head++ & agg->emitq_mask];
		struct agg_slot *s = &agg->slots[idx];
		struct isth_agg_emit *e = &out[n++];
		uint8_t dt = s->dtype;

		if (dt == ISTH_WIRE_DTYPE_BF16)
			dt = agg->p.bf16_out;
		e->job = s->job;
		e->round = s->round;
		e->chunk = s->chunk;
		e->count = s->count;
		e->dtype = dt;
		e->reason = s->reason;
		e->flags = s->bitmap == s->expected ? 0 : ISTH_WIRE_F_PARTIAL;
		e->n_contrib = (uint16_t)__builtin_popcountll(s->bitmap);
		e->bitmap = s->bitmap;
		e->expected = s->expected;
		e->acc = slot_acc(agg, idx);
		e->size = (uint32_t)s->count * isth_wire_dtype_size(dt);
		e->slot = idx;
		s->state = SLOT_DRAINED;
	}
	return n;
}

int
isth_agg_release(struct isth_agg *agg, const struct isth_agg_emit *e)
{
	if (e == NULL || e->slot >= agg->n_slots || agg->slots[e->slot].state != SLOT_DRAINED)
		return -EINVAL;
	agg->slots[e->slot].state = SLOT_FREE;
	agg->free_stack[agg->n_free++] = e->slot;
	mem_gauges(agg);
	return 0;
}

int
isth_agg_emit_copy(const struct isth_agg *agg, const struct isth_agg_emit *e, void *dst, size_t cap)
{
	if (cap < e->size)
		return -ENOSPC;
	if (e->dtype == ISTH_WIRE_DTYPE_BF16)
		agg->k.store_bf16(dst, e->acc, e->count);
	else
		memcpy(dst, e->acc, e->size);
	return (int)e->size;
}

void
isth_agg_emit_hdr(const struct isth_agg_emit *e, struct isth_wire_hdr *h)
{
	h->type = ISTH_WIRE_AGG;
	h->dtype = e->dtype;
	h->flags = e->flags;
	h->count = e->count;
	h->job = e->job;
	h->round = e->round;
	h->chunk = e->chunk;
	h->bitmap = e->bitmap;
}

void
isth_agg_round_stats_get(const struct isth_agg *agg, struct isth_rtab_stats *st)
{
	isth_rtab_stats_get(agg->rtab, st);
}

void
isth_agg_stats_get(const struct isth_agg *agg, struct isth_agg_stats *st)
{
	const uint64_t *src = (const uint64_t *)&agg->stats;
	uint64_t *dst = (uint64_t *)st;
	unsigned int i;

	for (i = 0; i < ISTH_AGG_STATS_N; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}
