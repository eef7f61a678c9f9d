/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The FPGA device model. One poll iteration is what the device's control
 * FSM does per clock batch:
 *
 *   read TIME_NS, FLUSH_REQ, H2D_TAIL, RT_PROD (acquire, in this order:
 *   whatever the host published before a later register is visible)
 *   -> apply round-table banks -> D2H: write pending aggregates -> H2D:
 *   consume descriptors (latency, throughput, back-pressure) -> apply the
 *   time (timeouts) and a flush once every descriptor seen before them is
 *   consumed -> publish counters, then heads and acks (release).
 *
 * The host therefore sees counters and completions at least as new as any
 * head or ack it reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "isth_agg.h"
#include "isth_auth.h"
#include "isth_clock.h"
#include "isth_fpga_if.h"
#include "isth_fpga_model.h"
#include "isth_wire.h"

#define MODEL_RT_BANKS 8u
#define MODEL_MAX_PEERS 64u
/* Descriptors consumed per poll: the device's burst. */
#define MODEL_BURST 64u
/* Bytes the throughput limiter may bank: one burst of full messages. */
#define MODEL_BUCKET_MIN (64u * 1024u)

_Static_assert(ISTH_AGG_STATS_N == ISTH_FPGA_CNT_H2D_DESC,
	"the first counters block mirrors struct isth_agg_stats");
_Static_assert(
	ISTH_FPGA_REG_RT_BANK + MODEL_RT_BANKS * ISTH_FPGA_RT_BANK_STRIDE <= ISTH_FPGA_REG_COUNTERS,
	"round-table banks overlap the counters");
_Static_assert(ISTH_FPGA_REG_COUNTERS + 8 * ISTH_FPGA_CNT_MAX <= ISTH_FPGA_REG_RT_PEERS,
	"counters overlap the peer tables");
_Static_assert(ISTH_FPGA_REG_RT_PEERS + MODEL_RT_BANKS * MODEL_MAX_PEERS * 16 <= ISTH_FPGA_REG_KEYS,
	"peer tables overlap the key table");
_Static_assert(ISTH_FPGA_REG_KEY_EPOCH + 8 * ISTH_FPGA_KEY_SLOTS <= ISTH_FPGA_REG_COUNTERS,
	"key epoch slots overlap the counters");
_Static_assert(ISTH_FPGA_REG_KEYS + ISTH_FPGA_KEY_SLOTS * 3 * 64 * ISTH_FPGA_KEY_BYTES <=
		ISTH_FPGA_BAR_SIZE,
	"key table past BAR0");
/* 1.1 as first written put AUTH_CTRL and KEY_EPOCH inside banks 2 and 3:
 * a driver publishing its third round overwrote the key slots */
_Static_assert(ISTH_FPGA_REG_RT_BANK + ISTH_FPGA_RT_BANKS_MAX * ISTH_FPGA_RT_BANK_STRIDE <=
		ISTH_FPGA_REG_AUTH_CTRL,
	"round-table banks overlap the authentication registers");
_Static_assert(MODEL_RT_BANKS <= ISTH_FPGA_RT_BANKS_MAX, "more banks than the map has room for");
_Static_assert(ISTH_FPGA_KEY_SLOTS == ISTH_AUTH_MAX_EPOCHS, "a key file's epochs fit the slots");

struct ring {
	uint64_t base; /* IOVA */
	uint32_t size; /* entries */
	uint32_t head; /* device's consumer/completion index */
	uint64_t wb; /* IOVA of the head write-back, 0: none */
	void *desc; /* base translated */
	uint64_t *wb_ptr;
};

struct isth_fpga_model {
	struct isth_fpga_model_params p;
	char name[256];
	uint8_t *map;
	size_t map_size;
	uint64_t *bar; /* BAR0, host and device */
	uint8_t *dma; /* DMA window */
	uint64_t dma_size;

	pthread_t thread;
	bool running;
	int stop; /* written by: stop(); read by: the thread */

	/* Settable behaviour. Written by: any thread (relaxed); read by: poll. */
	uint64_t latency_ns;
	uint64_t rate_bps;

	/* Device state: poll() only. */
	bool enabled;
	struct isth_agg *agg;
	struct isth_agg_info info;
	struct isth_wire_limits lim;
	uint8_t island;
	uint64_t auth_ctrl; /* AUTH_CTRL latched at ENABLE */
	uint64_t agg_seq; /* AUTH_SEAL: next AGG seq */
	uint32_t max_msg; /* largest DATA message a slot takes */
	uint32_t d2h_min; /* smallest D2H buffer: the largest AGG */
	struct ring h2d, d2h;
	uint32_t h2d_seen; /* tail value up to which seen_ns is stamped */
	uint64_t *seen_ns; /* wall time each H2D descriptor became visible */
	uint64_t dev_now; /* device clock: max of host times seen */
	uint64_t tokens; /* throughput limiter, bytes */
	uint64_t tokens_ns; /* wall time of the last refill */
	bool gated; /* descriptors wait for latency or tokens */
	uint32_t rt_cons;
	uint64_t cnt[ISTH_FPGA_CNT_MAX];
	struct isth_agg_emit emit;
};

static inline uint64_t
rd(const struct isth_fpga_model *m, uint32_t off)
{
	return __atomic_load_n(&m->bar[off / 8], __ATOMIC_ACQUIRE);
}

static inline void
wr(struct isth_fpga_model *m, uint32_t off, uint64_t v)
{
	__atomic_store_n(&m->bar[off / 8], v, __ATOMIC_RELEASE);
}

/* Host memory at @iova for @len bytes, or NULL when any byte is outside
 * the DMA window (the IOMMU would fault; the device refuses first). */
static void *
dma_ptr(const struct isth_fpga_model *m, uint64_t iova, uint64_t len)
{
	uint64_t off;

	if (iova < ISTH_FPGA_SHM_IOVA_BASE)
		return NULL;
	off = iova - ISTH_FPGA_SHM_IOVA_BASE;
	if (off > m->dma_size || len > m->dma_size - off)
		return NULL;
	return m->dma + off;
}

/* Every register to its reset value except RESET_GEN, which the host
 * watches: it only ever moves forward. */
static void
power_on_registers(struct isth_fpga_model *m)
{
	memset(m->bar, 0, ISTH_FPGA_REG_RESET_GEN);
	memset(m->bar + ISTH_FPGA_REG_RESET_GEN / 8 + 1, 0,
		ISTH_FPGA_BAR_SIZE - ISTH_FPGA_REG_RESET_GEN - 8);
	m->bar[ISTH_FPGA_REG_ID / 8] = ISTH_FPGA_ID;
	m->bar[ISTH_FPGA_REG_VERSION / 8] = ISTH_FPGA_VERSION_MAJOR << 16 | ISTH_FPGA_VERSION_MINOR;
	m->bar[ISTH_FPGA_REG_CAP_HBM_BYTES / 8] = m->p.hbm_bytes;
	m->bar[ISTH_FPGA_REG_CAP_DTYPES / 8] = (1u << ISTH_WIRE_DTYPE_FP32) |
		(1u << ISTH_WIRE_DTYPE_BF16) | (1u << ISTH_WIRE_DTYPE_INT32);
	m->bar[ISTH_FPGA_REG_CAP_MAX_ISLANDS / 8] = ISTH_WIRE_MAX_ISLANDS;
	m->bar[ISTH_FPGA_REG_CAP_MAX_ELEMS / 8] = m->p.max_elems;
	m->bar[ISTH_FPGA_REG_CAP_MAX_SLOTS / 8] = m->p.max_slots;
	m->bar[ISTH_FPGA_REG_CAP_FLAGS / 8] = ISTH_FPGA_CAPF_HOST_TIME | ISTH_FPGA_CAPF_AUTH;
	m->bar[ISTH_FPGA_REG_CAP_MAX_RING / 8] = m->p.max_ring;
	m->bar[ISTH_FPGA_REG_CAP_RT_BANKS / 8] = MODEL_RT_BANKS;
	m->bar[ISTH_FPGA_REG_CAP_MAX_PEERS / 8] = MODEL_MAX_PEERS;
	m->bar[ISTH_FPGA_REG_CAP_MAX_JOBS / 8] = m->p.max_jobs;
	m->bar[ISTH_FPGA_REG_SHM_DMA_OFFSET / 8] = ISTH_FPGA_BAR_SIZE;
	m->bar[ISTH_FPGA_REG_SHM_DMA_SIZE / 8] = m->dma_size;
	m->bar[ISTH_FPGA_REG_SHM_DMA_IOVA / 8] = ISTH_FPGA_SHM_IOVA_BASE;
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static bool
is_pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/* Latch a ring's registers; false if any address is outside DMA memory. */
static bool
ring_latch(struct isth_fpga_model *m, struct ring *r, uint32_t reg_base, size_t desc_size)
{
	r->base = rd(m, reg_base + 0x00);
	r->size = (uint32_t)rd(m, reg_base + 0x08);
	r->wb = rd(m, reg_base + 0x20);
	r->head = 0;
	if (!is_pow2(r->size) || r->size > m->p.max_ring || (r->base & 63) != 0)
		return false;
	r->desc = dma_ptr(m, r->base, (uint64_t)r->size * desc_size);
	if (r->desc == NULL)
		return false;
	r->wb_ptr = NULL;
	if (r->wb != 0) {
		if ((r->wb & 7) != 0)
			return false;
		r->wb_ptr = dma_ptr(m, r->wb, 8);
		if (r->wb_ptr == NULL)
			return false;
	}
	return true;
}

static void
fail(struct isth_fpga_model *m, enum isth_fpga_error e)
{
	wr(m, ISTH_FPGA_REG_ERROR, e);
	wr(m, ISTH_FPGA_REG_STATUS, ISTH_FPGA_STS_ERROR);
}

static void
do_enable(struct isth_fpga_model *m)
{
	struct isth_agg_params ap;
	uint64_t bf16;

	memset(&ap, 0, sizeof(ap));
	ap.mem_budget = rd(m, ISTH_FPGA_REG_CFG_MEM_BYTES);
	ap.max_elems = (uint32_t)rd(m, ISTH_FPGA_REG_CFG_MAX_ELEMS);
	ap.max_chunks = (uint32_t)rd(m, ISTH_FPGA_REG_CFG_MAX_CHUNKS);
	ap.n_islands = (uint32_t)rd(m, ISTH_FPGA_REG_CFG_N_ISLANDS);
	ap.window = (uint32_t)rd(m, ISTH_FPGA_REG_CFG_WINDOW);
	ap.timeout_ns = rd(m, ISTH_FPGA_REG_CFG_TIMEOUT_NS);
	ap.max_jobs = (uint32_t)rd(m, ISTH_FPGA_REG_CFG_MAX_JOBS);
	bf16 = rd(m, ISTH_FPGA_REG_CFG_BF16_OUT);
	m->island = (uint8_t)rd(m, ISTH_FPGA_REG_CFG_ISLAND);
	m->auth_ctrl = rd(m, ISTH_FPGA_REG_AUTH_CTRL);
	m->agg_seq = rd(m, ISTH_FPGA_REG_AGG_SEQ);
	ap.bf16_out = (uint8_t)bf16;
	ap.reserve = ISTH_AGG_RESERVE_DEFAULT;
	ap.kernel = m->p.kernel;
	if (ap.max_elems == 0 || ap.max_elems > m->p.max_elems || ap.max_chunks == 0 ||
		ap.n_islands == 0 || ap.n_islands > ISTH_WIRE_MAX_ISLANDS ||
		rd(m, ISTH_FPGA_REG_CFG_ISLAND) >= ap.n_islands || ap.max_jobs > m->p.max_jobs ||
		ap.timeout_ns == 0 ||
		(m->auth_ctrl & ~(ISTH_FPGA_AUTH_VERIFY | ISTH_FPGA_AUTH_SEAL)) != 0 ||
		(bf16 != 0 && bf16 != ISTH_WIRE_DTYPE_BF16 && bf16 != ISTH_WIRE_DTYPE_FP32)) {
		fail(m, ISTH_FPGA_ERR_CFG);
		return;
	}
	/* Byte for byte: the budget is HBM the device has, and holds at
	 * least one slot of round_up(4 * max_elems, 64) bytes. */
	if (ap.mem_budget > m->p.hbm_bytes ||
		ap.mem_budget < ((4ull * ap.max_elems + 63) & ~63ull)) {
		fail(m, ISTH_FPGA_ERR_MEM);
		return;
	}
	if (!ring_latch(m, &m->h2d, ISTH_FPGA_REG_H2D_BASE, sizeof(struct isth_fpga_h2d_desc)) ||
		!ring_latch(
			m, &m->d2h, ISTH_FPGA_REG_D2H_BASE, sizeof(struct isth_fpga_d2h_desc))) {
		fail(m, ISTH_FPGA_ERR_RING);
		return;
	}
	m->agg = isth_agg_create(&ap);
	if (m->agg == NULL) {
		fail(m, ISTH_FPGA_ERR_CFG);
		return;
	}
	isth_agg_info_get(m->agg, &m->info);
	if (m->info.n_slots > m->p.max_slots) {
		isth_agg_destroy(m->agg);
		m->agg = NULL;
		fail(m, ISTH_FPGA_ERR_MEM);
		return;
	}
	m->seen_ns = calloc(m->h2d.size, sizeof(*m->seen_ns));
	if (m->seen_ns == NULL) {
		isth_agg_destroy(m->agg);
		m->agg = NULL;
		fail(m, ISTH_FPGA_ERR_CFG);
		return;
	}
	/* AUTH_VERIFY: DATA is version 2 only (the tag is checked first) */
	isth_wire_limits_init_auth(
		&m->lim, ap.n_islands, 1500, (m->auth_ctrl & ISTH_FPGA_AUTH_VERIFY) != 0);
	m->lim.max_elems = (uint16_t)ap.max_elems;
	m->max_msg = ISTH_WIRE_HDR_SIZE + 4 * ap.max_elems + 255;
	m->d2h_min = ISTH_WIRE_HDR_SIZE + 4 * ap.max_elems +
		(m->auth_ctrl & ISTH_FPGA_AUTH_SEAL ? ISTH_AUTH_TAG_SIZE : 0);
	m->h2d_seen = 0;
	m->dev_now = 0;
	m->rt_cons = 0;
	m->tokens = 0;
	m->tokens_ns = isth_clock_mono_ns();
	memset(m->cnt, 0, sizeof(m->cnt));
	wr(m, ISTH_FPGA_REG_CFG_N_SLOTS, m->info.n_slots);
	wr(m, ISTH_FPGA_REG_CFG_SLOT_BYTES, m->info.slot_size);
	m->enabled = true;
	wr(m, ISTH_FPGA_REG_STATUS, ISTH_FPGA_STS_ENABLED);
}

static void
do_reset(struct isth_fpga_model *m)
{
	uint64_t gen = rd(m, ISTH_FPGA_REG_RESET_GEN);

	isth_agg_destroy(m->agg);
	m->agg = NULL;
	free(m->seen_ns);
	m->seen_ns = NULL;
	m->enabled = false;
	memset(&m->h2d, 0, sizeof(m->h2d));
	memset(&m->d2h, 0, sizeof(m->d2h));
	memset(m->cnt, 0, sizeof(m->cnt));
	power_on_registers(m);
	wr(m, ISTH_FPGA_REG_RESET_GEN, gen + 1);
}

/* Apply published round-table banks in order. */
static unsigned int
apply_rounds(struct isth_fpga_model *m, uint32_t prod)
{
	unsigned int n = 0;

	if ((uint32_t)(prod - m->rt_cons) > MODEL_RT_BANKS) {
		m->cnt[ISTH_FPGA_CNT_DOORBELL_BAD]++;
		return 0;
	}
	while (m->rt_cons != prod) {
		uint32_t b = ISTH_FPGA_REG_RT_BANK +
			(m->rt_cons & (MODEL_RT_BANKS - 1)) * ISTH_FPGA_RT_BANK_STRIDE;
		uint64_t job = rd(m, b + ISTH_FPGA_RT_JOB);
		uint64_t round = rd(m, b + ISTH_FPGA_RT_ROUND);
		int rc;

		if (job > UINT32_MAX || round > UINT32_MAX ||
			rd(m, b + ISTH_FPGA_RT_TIMEOUT_NS) != 0 ||
			rd(m, b + ISTH_FPGA_RT_N_PEERS) > MODEL_MAX_PEERS)
			rc = -EINVAL;
		else
			rc = isth_agg_set_round(m->agg, (uint32_t)job, (uint32_t)round,
				rd(m, b + ISTH_FPGA_RT_EXPECTED));
		wr(m, b + ISTH_FPGA_RT_STATUS, (uint64_t)(int64_t)rc);
		m->cnt[rc == 0 ? ISTH_FPGA_CNT_RT_APPLIED : ISTH_FPGA_CNT_RT_REFUSED]++;
		m->rt_cons++;
		n++;
	}
	wr(m, ISTH_FPGA_REG_RT_CONS, m->rt_cons);
	return n;
}

/* ---- authentication (1.1) ------------------------------------------------ */

/* The VALID key slot whose epoch tags @round (largest first round <= it),
 * or -1: the key file's epoch_of(). */
static int
key_slot_of_round(const struct isth_fpga_model *m, uint32_t round)
{
	uint64_t best_start = 0;
	int best = -1;

	for (unsigned int k = 0; k < ISTH_FPGA_KEY_SLOTS; k++) {
		uint64_t v = rd(m, ISTH_FPGA_REG_KEY_EPOCH + 8 * k);
		uint64_t start = (v >> 16) & 0xffffffffull;

		if (!(v & ISTH_FPGA_KEY_VALID) || start > round)
			continue;
		if (best < 0 || start > best_start) {
			best = (int)k;
			best_start = start;
		}
	}
	return best;
}

static inline uint8_t
key_slot_epoch(const struct isth_fpga_model *m, int k)
{
	return (uint8_t)rd(m, ISTH_FPGA_REG_KEY_EPOCH + 8 * (unsigned int)k);
}

/* GMAC of @msg[0, @len) under the key table entry (@k, @dir, @owner). */
static int
model_gmac(const struct isth_fpga_model *m, int k, unsigned int dir, unsigned int owner,
	const uint8_t *msg, size_t len, uint8_t tag[ISTH_AUTH_TAG_SIZE])
{
	uint32_t off = ISTH_FPGA_REG_KEYS +
		(((uint32_t)k * 3 + dir - 1) * 64 + owner) * ISTH_FPGA_KEY_BYTES;
	uint8_t key[ISTH_AUTH_KEY_SIZE], iv[ISTH_AUTH_IV_SIZE];
	int rc;

	for (unsigned int i = 0; i < 4; i++) {
		uint64_t w = rd(m, off + 8 * i);

		for (unsigned int b = 0; b < 8; b++)
			key[8 * i + b] = (uint8_t)(w >> (8 * b));
	}
	isth_auth_iv(msg, iv);
	/* a device runs GHASH over the bytes as it reads them; the model
	 * takes lib/auth's OpenSSL primitive (allocates: a model, not a
	 * data path) */
	rc = isth_auth_gmac_raw(ISTH_AUTH_OPENSSL, key, iv, msg, len, tag);
	OPENSSL_cleanse(key, sizeof(key));
	return rc;
}

/*
 * AUTH_VERIFY: the receiver order of doc/protocol.md steps 3-5 for one
 * DATA, with the key the host named in the descriptor's flags. The replay
 * window (step 6) is the host's. @return 0 or an ISTH_FPGA_DESC_E_AUTH_*.
 */
static uint16_t
verify_data(struct isth_fpga_model *m, uint8_t *msg, uint32_t len, uint16_t flags)
{
	unsigned int dir = flags & ISTH_FPGA_H2D_DIR_MASK;
	unsigned int owner = (flags & ISTH_FPGA_H2D_OWNER_MASK) >> ISTH_FPGA_H2D_OWNER_SHIFT;
	uint8_t tag[ISTH_AUTH_TAG_SIZE];
	size_t body = len - ISTH_AUTH_TAG_SIZE;
	int k;

	if (len < ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE ||
		msg[ISTH_WIRE_OFF_VERSION] != ISTH_WIRE_VERSION_AUTH ||
		!(msg[ISTH_WIRE_OFF_FLAGS + 1] & ISTH_WIRE_F_AUTH) ||
		msg[ISTH_WIRE_OFF_TRAILER] != ISTH_AUTH_TAG_SIZE ||
		(dir != ISTH_AUTH_UP && dir != ISTH_AUTH_WAN) || owner >= m->lim.n_islands ||
		((flags & ISTH_FPGA_H2D_RESEAL_WAN) && dir != ISTH_AUTH_UP)) {
		m->cnt[ISTH_FPGA_CNT_AUTH_FORMAT]++;
		return ISTH_FPGA_DESC_E_AUTH_FORMAT;
	}
	k = key_slot_of_round(m, isth_wire_get_hdr_round(msg));
	if (k < 0 || key_slot_epoch(m, k) != msg[ISTH_WIRE_OFF_EPOCH]) {
		m->cnt[ISTH_FPGA_CNT_AUTH_EPOCH]++;
		return ISTH_FPGA_DESC_E_AUTH_EPOCH;
	}
	if (model_gmac(m, k, dir, owner, msg, body, tag) != 0 ||
		CRYPTO_memcmp(tag, msg + body, ISTH_AUTH_TAG_SIZE) != 0) {
		m->cnt[ISTH_FPGA_CNT_AUTH_TAG]++;
		return ISTH_FPGA_DESC_E_AUTH_TAG;
	}
	/* Same bytes, same IV, the WAN key of this edge: the tag the peers
	 * verify, written where the host forwards the message from. */
	if ((flags & ISTH_FPGA_H2D_RESEAL_WAN) &&
		model_gmac(m, k, ISTH_AUTH_WAN, m->island, msg, body, msg + body) == 0)
		m->cnt[ISTH_FPGA_CNT_AUTH_RESEALED]++;
	return 0;
}

/*
 * Write queued aggregates into posted D2H buffers. A buffer must hold the
 * largest AGG message (d2h_min bytes) whatever the next aggregate's size,
 * so that the device checks it before committing an aggregate to it.
 * @return aggregates written
 */
static unsigned int
push_emissions(struct isth_fpga_model *m)
{
	struct isth_fpga_d2h_desc *ring = m->d2h.desc;
	uint32_t tail = (uint32_t)rd(m, ISTH_FPGA_REG_D2H_TAIL);
	const struct isth_agg_emit *e = &m->emit;
	unsigned int n = 0;
	struct isth_wire_hdr h;
	int seal_k;

	if ((uint32_t)(tail - m->d2h.head) > m->d2h.size) {
		m->cnt[ISTH_FPGA_CNT_DOORBELL_BAD]++;
		return 0;
	}
	while (isth_agg_pending(m->agg) > 0 && m->d2h.head != tail) {
		struct isth_fpga_d2h_desc *d = &ring[m->d2h.head & (m->d2h.size - 1)];
		uint32_t cap = d->cap;
		uint8_t *buf;

		buf = dma_ptr(m, d->addr, cap);
		if (buf == NULL || cap < m->d2h_min) {
			/* Refused: returned to the host without an aggregate. */
			d->len = 0;
			d->status = ISTH_FPGA_DESC_DONE |
				(buf == NULL ? ISTH_FPGA_DESC_E_ADDR : ISTH_FPGA_DESC_E_LEN);
			m->cnt[buf == NULL ? ISTH_FPGA_CNT_DESC_BAD_ADDR
					   : ISTH_FPGA_CNT_DESC_BAD_LEN]++;
			m->d2h.head++;
			continue;
		}
		isth_agg_drain(m->agg, &m->emit, 1);
		memset(&h, 0, sizeof(h));
		isth_agg_emit_hdr(e, &h);
		h.sender = m->island;
		h.seq = 0;
		seal_k = -1;
		if (m->auth_ctrl & ISTH_FPGA_AUTH_SEAL) {
			seal_k = key_slot_of_round(m, e->round);
			if (seal_k < 0) {
				/* no key for the round: the aggregate is not
				 * sent unsealed; the descriptor says which */
				d->len = 0;
				d->job = e->job;
				d->round = e->round;
				d->chunk = e->chunk;
				d->status = ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_EPOCH;
				m->cnt[ISTH_FPGA_CNT_AUTH_SEAL_NOKEY]++;
				isth_agg_release(m->agg, e);
				m->d2h.head++;
				continue;
			}
			h.version = ISTH_WIRE_VERSION_AUTH;
			h.epoch = key_slot_epoch(m, seal_k);
			h.seq = m->agg_seq++;
		}
		isth_wire_put_hdr(buf, cap, &h);
		isth_agg_emit_copy(m->agg, e, buf + ISTH_WIRE_HDR_SIZE, cap - ISTH_WIRE_HDR_SIZE);
		d->len = ISTH_WIRE_HDR_SIZE + e->size;
		if (seal_k >= 0) {
			/* after the last header byte: DOWN key of this island */
			if (model_gmac(m, seal_k, ISTH_AUTH_DOWN, m->island, buf, d->len,
				    buf + d->len) != 0)
				memset(buf + d->len, 0, ISTH_AUTH_TAG_SIZE); /* never verifies */
			d->len += ISTH_AUTH_TAG_SIZE;
			m->cnt[ISTH_FPGA_CNT_AUTH_SEALED]++;
			wr(m, ISTH_FPGA_REG_AGG_SEQ, m->agg_seq);
		}
		d->bitmap = e->bitmap;
		d->expected = e->expected;
		d->job = e->job;
		d->round = e->round;
		d->chunk = e->chunk;
		d->reason = e->reason;
		d->dtype = e->dtype;
		d->count = e->count;
		d->time_ns = m->dev_now;
		d->status = ISTH_FPGA_DESC_DONE;
		m->cnt[ISTH_FPGA_CNT_D2H_DESC]++;
		m->cnt[ISTH_FPGA_CNT_D2H_BYTES] += d->len;
		isth_agg_release(m->agg, e);
		m->d2h.head++;
		n++;
	}
	return n;
}

/* Check and sum one H2D descriptor. @return its status (without DONE). */
static uint16_t
h2d_one(struct isth_fpga_model *m, const struct isth_fpga_h2d_desc *d, uint32_t len)
{
	struct isth_agg_contrib c;
	uint8_t *msg;
	struct isth_wire_pkt pkt;

	msg = dma_ptr(m, d->addr, len);
	if (msg == NULL) {
		m->cnt[ISTH_FPGA_CNT_DESC_BAD_ADDR]++;
		return ISTH_FPGA_DESC_E_ADDR;
	}
	if (len < ISTH_WIRE_HDR_SIZE || len > m->max_msg) {
		m->cnt[ISTH_FPGA_CNT_DESC_BAD_LEN]++;
		return ISTH_FPGA_DESC_E_LEN;
	}
	m->cnt[ISTH_FPGA_CNT_H2D_BYTES] += len;
	/* 1.0 flags are 0; with AUTH_VERIFY they name the key, which is
	 * checked before anything else reads the message */
	if (m->auth_ctrl & ISTH_FPGA_AUTH_VERIFY) {
		uint16_t st = verify_data(m, msg, len, d->flags);

		if (st != 0)
			return st;
	} else if (d->flags != 0) {
		m->cnt[ISTH_FPGA_CNT_AUTH_FORMAT]++;
		return ISTH_FPGA_DESC_E_AUTH_FORMAT;
	}
	if (isth_wire_parse_msg(msg, len, &m->lim, &pkt) != ISTH_WIRE_OK) {
		m->cnt[ISTH_FPGA_CNT_DESC_BAD_MSG]++;
		return ISTH_FPGA_DESC_E_MSG;
	}
	if (pkt.hdr.type != ISTH_WIRE_DATA) {
		m->cnt[ISTH_FPGA_CNT_DESC_BAD_TYPE]++;
		return ISTH_FPGA_DESC_E_TYPE;
	}
	/* The header was parsed into pkt: a host rewriting the buffer now
	 * can change the sum, never the bytes read (count was checked
	 * against len). */
	isth_agg_contrib_from_pkt(&c, &pkt);
	return isth_agg_add_burst(m->agg, &c, 1, m->dev_now) == 1 ? ISTH_FPGA_DESC_OK
								  : ISTH_FPGA_DESC_E_REFUSED;
}

static void
refill(struct isth_fpga_model *m, uint64_t rate, uint64_t now_w)
{
	uint64_t dt = now_w - m->tokens_ns, cap;

	/* Burst: 10 ms worth at the rate (a host thread is descheduled for
	 * milliseconds at a time), at least a bucket of messages. */
	cap = rate / 100;
	if (cap < MODEL_BUCKET_MIN)
		cap = MODEL_BUCKET_MIN;
	if (cap < m->max_msg)
		cap = m->max_msg;
	if (dt > 1000000000ull)
		dt = 1000000000ull;
	/* rate <= 2^40 B/s keeps dt * rate below 2^70 / 2^6: split it. */
	m->tokens += dt / 1000 * rate / 1000000 + dt % 1000 * rate / 1000000000;
	if (m->tokens > cap)
		m->tokens = cap;
	m->tokens_ns = now_w;
}

/* Consume H2D descriptors up to @tail. @return descriptors consumed. */
static unsigned int
process_h2d(struct isth_fpga_model *m, uint32_t tail)
{
	struct isth_fpga_h2d_desc *ring = m->h2d.desc;
	uint64_t lat = __atomic_load_n(&m->latency_ns, __ATOMIC_RELAXED);
	uint64_t rate = __atomic_load_n(&m->rate_bps, __ATOMIC_RELAXED);
	uint32_t mask = m->h2d.size - 1;
	unsigned int n = 0;
	uint64_t now_w = 0;

	m->gated = false;
	if ((uint32_t)(tail - m->h2d.head) > m->h2d.size ||
		(uint32_t)(tail - m->h2d_seen) > m->h2d.size) {
		/* Beyond the ring, or moved backwards: ignored until sane. */
		m->cnt[ISTH_FPGA_CNT_DOORBELL_BAD]++;
		return 0;
	}
	if (m->h2d.head == tail)
		return 0;
	if (lat != 0 || rate != 0)
		now_w = isth_clock_mono_ns();
	while (m->h2d_seen != tail)
		m->seen_ns[m->h2d_seen++ & mask] = now_w;
	if (rate != 0)
		refill(m, rate, now_w);
	while (m->h2d.head != tail && n < MODEL_BURST) {
		struct isth_fpga_h2d_desc *d = &ring[m->h2d.head & mask];
		uint32_t len = d->len;
		uint16_t st;

		if (lat != 0 && now_w - m->seen_ns[m->h2d.head & mask] < lat) {
			m->gated = true;
			break;
		}
		if (rate != 0) {
			uint32_t cost = len < m->max_msg ? len : m->max_msg;

			if (m->tokens < cost) {
				m->gated = true;
				break;
			}
			m->tokens -= cost;
		}
		/* Back-pressure: an aggregate that found no D2H buffer holds
		 * its slot; consuming more could need that slot. */
		if (isth_agg_pending(m->agg) > 0 && push_emissions(m) == 0 &&
			isth_agg_pending(m->agg) > 0) {
			m->cnt[ISTH_FPGA_CNT_D2H_STALL]++;
			break;
		}
		if (d->time_ns > m->dev_now)
			m->dev_now = d->time_ns;
		st = h2d_one(m, d, len);
		d->status = ISTH_FPGA_DESC_DONE | st;
		m->cnt[ISTH_FPGA_CNT_H2D_DESC]++;
		m->h2d.head++;
		n++;
	}
	return n;
}

static void
put_wb(uint64_t *wb, uint64_t v)
{
	if (wb != NULL)
		__atomic_store_n(wb, v, __ATOMIC_RELEASE);
}

/* Counters first, then completions, then acks: what the host reads after
 * an ack is at least that new. */
static void
publish(struct isth_fpga_model *m, uint64_t time_ack, uint64_t flush_ack)
{
	struct isth_agg_stats as;
	const uint64_t *v = (const uint64_t *)&as;
	unsigned int i;

	isth_agg_stats_get(m->agg, &as);
	for (i = 0; i < ISTH_AGG_STATS_N; i++)
		m->cnt[i] = v[i];
	for (i = 0; i < ISTH_FPGA_CNT_MAX; i++)
		__atomic_store_n(
			&m->bar[ISTH_FPGA_REG_COUNTERS / 8 + i], m->cnt[i], __ATOMIC_RELAXED);
	wr(m, ISTH_FPGA_REG_D2H_HEAD, m->d2h.head);
	put_wb(m->d2h.wb_ptr, m->d2h.head);
	wr(m, ISTH_FPGA_REG_H2D_HEAD, m->h2d.head);
	put_wb(m->h2d.wb_ptr, m->h2d.head);
	wr(m, ISTH_FPGA_REG_BACKLOG, isth_agg_pending(m->agg));
	wr(m, ISTH_FPGA_REG_TIME_ACK, time_ack);
	wr(m, ISTH_FPGA_REG_FLUSH_ACK, flush_ack);
}

unsigned int
isth_fpga_model_poll(struct isth_fpga_model *m)
{
	uint64_t ctrl, time, flush, time_ack, flush_ack;
	unsigned int work = 0;
	uint32_t tail, prod;

	ctrl = rd(m, ISTH_FPGA_REG_CTRL);
	if (ctrl & ISTH_FPGA_CTRL_RESET) {
		do_reset(m);
		return 1;
	}
	if (!m->enabled) {
		if ((ctrl & ISTH_FPGA_CTRL_ENABLE) &&
			!(rd(m, ISTH_FPGA_REG_STATUS) & ISTH_FPGA_STS_ERROR)) {
			do_enable(m);
			return 1;
		}
		return 0;
	}
	if (!(ctrl & ISTH_FPGA_CTRL_ENABLE))
		return 0; /* paused: state kept, nothing consumed */
	/* Acquire order matters: see the file comment. */
	time = rd(m, ISTH_FPGA_REG_TIME_NS);
	flush = rd(m, ISTH_FPGA_REG_FLUSH_REQ);
	tail = (uint32_t)rd(m, ISTH_FPGA_REG_H2D_TAIL);
	prod = (uint32_t)rd(m, ISTH_FPGA_REG_RT_PROD);
	time_ack = rd(m, ISTH_FPGA_REG_TIME_ACK);
	flush_ack = rd(m, ISTH_FPGA_REG_FLUSH_ACK);

	if (prod != m->rt_cons)
		work += apply_rounds(m, prod);
	work += push_emissions(m);
	work += process_h2d(m, tail);
	/* Time and flush apply once every descriptor posted before them
	 * has been consumed (the host posted those first). */
	if (m->h2d.head == tail) {
		if (time != time_ack) {
			if (time > m->dev_now)
				m->dev_now = time;
			isth_agg_poll(m->agg, m->dev_now);
			time_ack = time;
			work++;
		}
		if (flush != flush_ack) {
			wr(m, ISTH_FPGA_REG_FLUSH_COUNT, isth_agg_flush(m->agg));
			flush_ack = flush;
			work++;
		}
	}
	work += push_emissions(m);
	if (work != 0)
		publish(m, time_ack, flush_ack);
	return work;
}

static void *
model_main(void *arg)
{
	struct isth_fpga_model *m = arg;
	unsigned int idle = 0;

	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		if (isth_fpga_model_poll(m) != 0) {
			idle = 0;
			continue;
		}
		/* Idle back-off: spin briefly, then share the core (two
		 * cores run several pollers here), then sleep. */
		/* Waiting on the latency or rate gate is not idleness: the
		 * wall clock must be watched closely. */
		if (m->gated) {
			idle = 0;
			sched_yield();
			continue;
		}
		if (++idle < 64) {
			__builtin_ia32_pause();
		} else if (idle < 4096) {
			sched_yield();
		} else {
			/* Asleep: 50 us for the first ~100 ms, then 1 ms. */
			struct timespec ts = {0, idle < 4096 + 2000 ? 50000 : 1000000};

			nanosleep(&ts, NULL);
			if (idle > 4096 + 2000)
				idle = 4096 + 2000;
		}
	}
	return NULL;
}

int
isth_fpga_model_start(struct isth_fpga_model *m)
{
	int rc;

	if (m->running)
		return -EALREADY;
	__atomic_store_n(&m->stop, 0, __ATOMIC_RELEASE);
	rc = pthread_create(&m->thread, NULL, model_main, m);
	if (rc != 0)
		return -rc;
	m->running = true;
	return 0;
}

void
isth_fpga_model_stop(struct isth_fpga_model *m)
{
	if (m == NULL || !m->running)
		return;
	__atomic_store_n(&m->stop, 1, __ATOMIC_RELEASE);
	pthread_join(m->thread, NULL);
	m->running = false;
}

void
isth_fpga_model_set_latency(struct isth_fpga_model *m, uint64_t ns)
{
	__atomic_store_n(&m->latency_ns, ns, __ATOMIC_RELAXED);
}

void
isth_fpga_model_set_rate(struct isth_fpga_model *m, uint64_t bytes_per_s)
{
	if (bytes_per_s > (1ull << 40))
		bytes_per_s = 1ull << 40;
	__atomic_store_n(&m->rate_bps, bytes_per_s, __ATOMIC_RELAXED);
}

volatile void *
isth_fpga_model_bar(struct isth_fpga_model *m)
{
	return m->bar;
}

void *
isth_fpga_model_dma(struct isth_fpga_model *m, uint64_t *size, uint64_t *iova)
{
	if (size != NULL)
		*size = m->dma_size;
	if (iova != NULL)
		*iova = ISTH_FPGA_SHM_IOVA_BASE;
	return m->dma;
}

struct isth_fpga_model *
isth_fpga_model_create(const struct isth_fpga_model_params *p)
{
	struct isth_fpga_model *m;
	size_t len;
	int fd, e;

	if (p == NULL || p->shm_name == NULL || p->shm_name[0] != '/' ||
		strchr(p->shm_name + 1, '/') != NULL || (len = strlen(p->shm_name)) < 2 ||
		len >= sizeof(m->name) || p->max_elems > UINT16_MAX ||
		(p->max_ring != 0 && !is_pow2(p->max_ring)) ||
		(p->dma_bytes != 0 && p->dma_bytes < 4096)) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	m->p = *p;
	memcpy(m->name, p->shm_name, len + 1);
	m->p.shm_name = m->name;
	if (m->p.hbm_bytes == 0)
		m->p.hbm_bytes = 8ull << 30;
	if (m->p.dma_bytes == 0)
		m->p.dma_bytes = 16u << 20;
	if (m->p.max_elems == 0)
		m->p.max_elems = UINT16_MAX;
	if (m->p.max_slots == 0)
		m->p.max_slots = 1u << 20;
	if (m->p.max_ring == 0)
		m->p.max_ring = 4096;
	if (m->p.max_jobs == 0)
		m->p.max_jobs = 16;
	m->dma_size = m->p.dma_bytes;
	m->map_size = ISTH_FPGA_BAR_SIZE + m->dma_size;
	isth_fpga_model_set_latency(m, p->latency_ns);
	isth_fpga_model_set_rate(m, p->rate_bps);

	fd = shm_open(m->name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 && errno == EEXIST && p->replace) {
		shm_unlink(m->name);
		fd = shm_open(m->name, O_RDWR | O_CREAT | O_EXCL, 0600);
	}
	if (fd < 0)
		goto free_model;
	if (ftruncate(fd, (off_t)m->map_size) != 0)
		goto unlink;
	m->map = mmap(NULL, m->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->map == MAP_FAILED)
		goto unlink;
	close(fd);
	m->bar = (uint64_t *)m->map;
	m->dma = m->map + ISTH_FPGA_BAR_SIZE;
	power_on_registers(m);
	return m;
unlink:
	e = errno;
	close(fd);
	shm_unlink(m->name);
	errno = e;
free_model:
	e = errno;
	free(m);
	errno = e;
	return NULL;
}

void
isth_fpga_model_destroy(struct isth_fpga_model *m)
{
	if (m == NULL)
		return;
	isth_fpga_model_stop(m);
	isth_agg_destroy(m->agg);
	free(m->seen_ns);
	munmap(m->map, m->map_size);
	shm_unlink(m->name);
	free(m);
}
