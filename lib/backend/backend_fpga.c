/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fpga backend: a driver for the device of doc/fpga-interface.md
 * (isth_fpga_if.h), reached through the bus layer (fpga_bus.h).
 *
 * Inbound DATA: each message is copied into the H2D buffer that belongs
 * to its ring entry (the DMA memory is the shared-memory window; with
 * vfio the mempool is DMA-mapped and the descriptor can name the mbuf's
 * data IOVA instead, see the document), a descriptor is written and the
 * H2D_TAIL doorbell rung once per burst; the mbufs are freed at once, the
 * copy being the device's. Outbound AGG: the device writes complete AGG
 * messages into posted D2H buffers; drain() copies each into an mbuf from
 * agg_pool and reposts the buffer. The device judges each contribution
 * itself, so aggregate_burst() returns the contributions handed to the
 * device; refusals are in the device's counters under the sw names.
 *
 * Replication is not offloaded (the model has no CAPF_REPLICATE):
 * replicate_burst() fans out on the calling lcore with lib/mcast exactly
 * as the sw backend does, two handles alternating by round parity.
 *
 * Time: the caller's `now` goes into every H2D descriptor and into
 * TIME_NS at drain(); the device's timeouts run on that clock only.
 *
 * Authentication (interface 1.1, section 3.8), when the caller gives keys
 * (conf->auth.keys): the driver loads every epoch of the key file into
 * the device's key slots (derived direction keys, never the master),
 * names the key of each DATA in its descriptor (WAN key of the island
 * whose edge the source address is: conf->auth.site_ip), and reports the
 * device's verdict on each tag to the caller (conf->auth.verdict) when it
 * reaps the descriptor, so that the caller records the seq in its replay
 * window only for a tag the device verified. With conf->auth.seal the
 * device seals every AGG with the DOWN key, numbering them from
 * conf->auth.agg_seq. RESEAL_WAN is not used: the island's outbound DATA
 * does not pass through the device (replication is on the host).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_pause.h>

#include "isth_auth.h"
#include "isth_backend.h"
#include "isth_fpga_if.h"
#include "isth_mbuf.h"
#include "backend_priv.h"
#include "backend_fanout.h"
#include "fpga_bus.h"

#define FPGA_BURST 32
/* Ring entries at most; fewer if the DMA window is small. */
#define FPGA_RING_MAX 1024u
#define FPGA_RING_MIN 32u
#define FPGA_DEFAULT_DEVICE "/isthmus-fpga0"
/* Control-path waits for the device (reset, enable, flush), ms. */
#define FPGA_WAIT_MS 2000u
#define TAG_NONE UINT64_MAX

struct fpga_backend {
	struct fpga_bus bus;
	struct backend_fanout fo; /* host replication by round parity */
	struct rte_mempool *agg_pool;
	uint8_t island;
	uint32_t n_islands;
	uint32_t max_elems;
	uint32_t max_chunks;

	/* Capabilities and derived sizes, read once at create. */
	uint64_t cap_dtypes;
	uint32_t cap_max_islands;
	uint32_t rt_banks;
	uint32_t max_peers;
	uint32_t n_slots;
	uint32_t slot_bytes;

	/* Control only. */
	uint64_t agg_published; /* newest round given a round-table bank */
	uint32_t rt_prod; /* banks published; RT_PROD mirror */

	/* H2D ring. tail: written by the data path (relaxed store, read by
	 * stats); the device owns entries [*h2d_wb, tail). */
	struct isth_fpga_h2d_desc *h2d;
	uint8_t *h2d_buf;
	uint32_t h2d_size;
	uint32_t h2d_buf_size;
	uint32_t h2d_tail;
	uint64_t *h2d_wb; /* device writes its H2D head here */
	/* D2H ring. The device owns entries [next, tail) until it has
	 * completed them (*d2h_wb); next and tail: data path only. */
	struct isth_fpga_d2h_desc *d2h;
	uint8_t *d2h_buf;
	uint32_t d2h_size;
	uint32_t d2h_buf_size;
	uint32_t d2h_next;
	uint32_t d2h_tail;
	uint64_t *d2h_wb;
	/* Host clock last written to TIME_NS and flush generation. Written
	 * by: data path (relaxed); read by: stats. */
	uint64_t time_written;
	uint64_t flush_req;

	/* Authentication (1.1). auth_ctrl: AUTH_CTRL as enabled (create);
	 * auth: the caller's site table and verdict callback (create);
	 * h2d_reaped: data path, H2D descriptors whose verdict was given;
	 * slot_epoch: control, the epoch id each key slot holds (-1 free). */
	uint64_t auth_ctrl;
	struct isth_backend_auth auth;
	uint32_t h2d_reaped;
	int16_t slot_epoch[ISTH_FPGA_KEY_SLOTS];

	/* Counters. Written by: data path (relaxed); read by: any thread. */
	uint64_t auth_no_site; /* DATA not posted: its source is no site's edge */
	uint64_t agg_msgs; /* AGG messages handed out */
	uint64_t agg_alloc_fail; /* drain found no mbuf: completions wait */
	uint64_t h2d_ring_full; /* DATA dropped: every H2D entry is the device's */
	uint64_t h2d_too_big; /* DATA dropped: message larger than an H2D buffer */
	uint64_t d2h_desc_err; /* D2H descriptors the device returned with an error */
};

/* Control path: wait until (reg & mask) == want or the deadline. */
static int
wait_reg(struct fpga_backend *f, uint32_t reg, uint64_t mask, uint64_t want)
{
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * FPGA_WAIT_MS;
	unsigned int spins = 0;

	while ((fpga_rd(&f->bus, reg) & mask) != want) {
		if (rte_get_timer_cycles() > end)
			return -ETIMEDOUT;
		if (++spins < 256)
			rte_pause();
		else
			sched_yield();
	}
	return 0;
}

static void fpga_destroy(void *priv);

/* Reset the device and wait for it: afterwards it touches no host memory. */
static int
dev_reset(struct fpga_backend *f)
{
	uint64_t gen = fpga_rd(&f->bus, ISTH_FPGA_REG_RESET_GEN);
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * FPGA_WAIT_MS;

	fpga_wr(&f->bus, ISTH_FPGA_REG_CTRL, ISTH_FPGA_CTRL_RESET);
	while (fpga_rd(&f->bus, ISTH_FPGA_REG_RESET_GEN) == gen) {
		if (rte_get_timer_cycles() > end)
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

static uint32_t
align64(uint64_t x)
{
	return (uint32_t)((x + 63) & ~63ull);
}

/* Lay the rings and buffers out in DMA memory: write-backs, H2D ring,
 * D2H ring, H2D buffers, D2H buffers, each 64-byte aligned. */
static int
carve(struct fpga_backend *f, uint32_t cap_ring)
{
	uint32_t n = RTE_MIN(FPGA_RING_MAX, cap_ring);
	uint64_t need;
	uint8_t *p;

	f->h2d_buf_size = align64(ISTH_WIRE_HDR_SIZE + 4ull * f->max_elems + 255);
	/* a sealed AGG carries its 16-byte tag after the payload */
	f->d2h_buf_size = align64(ISTH_WIRE_HDR_SIZE + 4ull * f->max_elems +
		(f->auth_ctrl & ISTH_FPGA_AUTH_SEAL ? ISTH_AUTH_TAG_SIZE : 0));
	for (;; n /= 2) {
		need = 64 +
			(uint64_t)n *
				(sizeof(struct isth_fpga_h2d_desc) +
					sizeof(struct isth_fpga_d2h_desc) + f->h2d_buf_size +
					f->d2h_buf_size);
		if (need <= f->bus.dma_size)
			break;
		if (n <= FPGA_RING_MIN)
			return -ENOMEM;
	}
	if (n < FPGA_RING_MIN || (n & (n - 1)) != 0)
		return -ENOMEM;
	p = f->bus.dma;
	memset(p, 0, need);
	f->h2d_wb = (uint64_t *)p;
	f->d2h_wb = (uint64_t *)(p + 8);
	p += 64;
	f->h2d = (struct isth_fpga_h2d_desc *)p;
	p += (size_t)n * sizeof(*f->h2d);
	f->d2h = (struct isth_fpga_d2h_desc *)p;
	p += (size_t)n * sizeof(*f->d2h);
	f->h2d_buf = p;
	p += (size_t)n * f->h2d_buf_size;
	f->d2h_buf = p;
	f->h2d_size = f->d2h_size = n;
	return 0;
}

/* Key slot @slot := epoch @i of @keys: every direction key of every
 * owner, VALID clear while the keys are written, then set with the epoch's
 * id and first round in one store (the device applies it between two
 * descriptors). Control path. */
static int
key_slot_load(
	struct fpga_backend *f, unsigned int slot, const struct isth_auth *keys, unsigned int i)
{
	struct fpga_bus *b = &f->bus;
	volatile uint8_t *wipe;
	uint8_t k[ISTH_AUTH_KEY_SIZE];
	uint32_t start;
	uint8_t id;
	int rc = 0;

	if (isth_auth_epoch_info(keys, i, &id, &start) < 0)
		return -EINVAL;
	fpga_wr(b, ISTH_FPGA_REG_KEY_EPOCH + 8 * slot, 0);
	for (unsigned int dir = ISTH_AUTH_UP; dir <= ISTH_AUTH_WAN && rc == 0; dir++)
		for (unsigned int o = 0; o < f->n_islands && rc == 0; o++) {
			uint32_t off = ISTH_FPGA_REG_KEYS +
				((slot * 3 + dir - 1) * ISTH_FPGA_KEY_OWNERS + o) *
					ISTH_FPGA_KEY_BYTES;

			rc = isth_auth_epoch_key(keys, i, (enum isth_auth_dir)dir, o, k);
			/* a site file holds only this edge's keys: another
			 * island's UP/DOWN slot gets a key nobody holds, so
			 * every tag claimed under it is refused */
			if (rc == -ENOKEY)
				rc = getrandom(k, sizeof(k), 0) == (ssize_t)sizeof(k) ? 0 : -EIO;
			for (unsigned int w = 0; w < 4 && rc == 0; w++) {
				uint64_t v = 0;

				for (unsigned int j = 0; j < 8; j++)
					v |= (uint64_t)k[8 * w + j] << (8 * j);
				fpga_wr(b, off + 8 * w, v);
			}
		}
	/* the host's copy of a key lives no longer than the store */
	wipe = k;
	for (size_t j = 0; j < sizeof(k); j++)
		wipe[j] = 0;
	if (rc < 0)
		return rc;
	fpga_wr(b, ISTH_FPGA_REG_KEY_EPOCH + 8 * slot,
		ISTH_FPGA_KEY_VALID | (uint64_t)start << 16 | id);
	f->slot_epoch[slot] = id;
	return 0;
}

/* Control path: the device's key slots := the epochs of @keys. Epochs gone
 * from the file free their slot first; those kept keep theirs. */
static int
fpga_set_keys(void *priv, const struct isth_auth *keys)
{
	struct fpga_backend *f = priv;
	unsigned int n = isth_auth_n_epochs(keys), i, s;
	uint8_t id;
	int rc;

	if (f->auth_ctrl == 0)
		return -ENOTSUP;
	for (s = 0; s < ISTH_FPGA_KEY_SLOTS; s++) {
		bool kept = false;

		for (i = 0; i < n; i++)
			kept |= isth_auth_epoch_info(keys, i, &id, NULL) == 0 &&
				f->slot_epoch[s] == id;
		if (f->slot_epoch[s] >= 0 && !kept) {
			fpga_wr(&f->bus, ISTH_FPGA_REG_KEY_EPOCH + 8 * s, 0);
			f->slot_epoch[s] = -1;
		}
	}
	for (i = 0; i < n; i++) {
		int free_slot = -1;
		bool have = false;

		isth_auth_epoch_info(keys, i, &id, NULL);
		for (s = 0; s < ISTH_FPGA_KEY_SLOTS; s++) {
			have |= f->slot_epoch[s] == id;
			if (f->slot_epoch[s] < 0 && free_slot < 0)
				free_slot = (int)s;
		}
		if (have)
			continue;
		if (free_slot < 0)
			return -ENOSPC;
		rc = key_slot_load(f, (unsigned int)free_slot, keys, i);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int
dev_configure(struct fpga_backend *f, const struct isth_backend_conf *conf)
{
	struct fpga_bus *b = &f->bus;
	uint32_t i;
	int rc;

	rc = carve(f, (uint32_t)fpga_rd(b, ISTH_FPGA_REG_CAP_MAX_RING));
	if (rc < 0)
		return rc;
	fpga_wr(b, ISTH_FPGA_REG_CFG_MEM_BYTES, conf->mem_bytes);
	fpga_wr(b, ISTH_FPGA_REG_CFG_MAX_ELEMS, conf->max_elems);
	fpga_wr(b, ISTH_FPGA_REG_CFG_MAX_CHUNKS, conf->max_chunks);
	fpga_wr(b, ISTH_FPGA_REG_CFG_N_ISLANDS, conf->n_islands);
	fpga_wr(b, ISTH_FPGA_REG_CFG_ISLAND, conf->island);
	fpga_wr(b, ISTH_FPGA_REG_CFG_WINDOW, conf->window);
	fpga_wr(b, ISTH_FPGA_REG_CFG_TIMEOUT_NS, conf->timeout_ns);
	fpga_wr(b, ISTH_FPGA_REG_CFG_BF16_OUT, conf->bf16_out);
	fpga_wr(b, ISTH_FPGA_REG_CFG_MAX_JOBS, conf->max_jobs);
	if (f->auth_ctrl != 0) {
		/* latched at ENABLE; the keys may change later (set_keys) */
		fpga_wr(b, ISTH_FPGA_REG_AUTH_CTRL, f->auth_ctrl);
		fpga_wr(b, ISTH_FPGA_REG_AGG_SEQ, conf->auth.agg_seq);
		for (i = 0; i < ISTH_FPGA_KEY_SLOTS; i++)
			f->slot_epoch[i] = -1;
		rc = fpga_set_keys(f, conf->auth.keys);
		if (rc < 0)
			return rc;
	}
	fpga_wr(b, ISTH_FPGA_REG_H2D_BASE, fpga_iova(b, f->h2d));
	fpga_wr(b, ISTH_FPGA_REG_H2D_SIZE, f->h2d_size);
	fpga_wr(b, ISTH_FPGA_REG_H2D_WB, fpga_iova(b, f->h2d_wb));
	fpga_wr(b, ISTH_FPGA_REG_D2H_BASE, fpga_iova(b, f->d2h));
	fpga_wr(b, ISTH_FPGA_REG_D2H_SIZE, f->d2h_size);
	fpga_wr(b, ISTH_FPGA_REG_D2H_WB, fpga_iova(b, f->d2h_wb));
	for (i = 0; i < f->d2h_size; i++) {
		f->d2h[i].addr = fpga_iova(b, f->d2h_buf + (size_t)i * f->d2h_buf_size);
		f->d2h[i].cap = f->d2h_buf_size;
	}
	fpga_wr(b, ISTH_FPGA_REG_CTRL, ISTH_FPGA_CTRL_ENABLE);
	rc = wait_reg(f, ISTH_FPGA_REG_STATUS, ISTH_FPGA_STS_ENABLED | ISTH_FPGA_STS_ERROR,
		ISTH_FPGA_STS_ENABLED);
	if (rc < 0) {
		RTE_LOG(ERR, USER1, "fpga: device did not enable (error %" PRIu64 ")\n",
			fpga_rd(b, ISTH_FPGA_REG_ERROR));
		return fpga_rd(b, ISTH_FPGA_REG_STATUS) & ISTH_FPGA_STS_ERROR ? -EINVAL : -ENODEV;
	}
	f->n_slots = (uint32_t)fpga_rd(b, ISTH_FPGA_REG_CFG_N_SLOTS);
	f->slot_bytes = (uint32_t)fpga_rd(b, ISTH_FPGA_REG_CFG_SLOT_BYTES);
	/* Every D2H buffer to the device. */
	f->d2h_next = 0;
	f->d2h_tail = f->d2h_size;
	fpga_wr(b, ISTH_FPGA_REG_D2H_TAIL, f->d2h_tail);
	return 0;
}

static void *
fpga_create(const struct isth_backend_conf *conf)
{
	const char *dev = conf->device ? conf->device : FPGA_DEFAULT_DEVICE;
	struct fpga_backend *f;
	uint64_t ver;
	uint32_t room;
	int rc;

	room = rte_pktmbuf_data_room_size(conf->agg_pool);
	if (room < RTE_PKTMBUF_HEADROOM + ISTH_WIRE_HDR_SIZE + 4 * conf->max_elems +
				(conf->auth.keys != NULL && conf->auth.seal ? ISTH_AUTH_TAG_SIZE
									    : 0) ||
		RTE_PKTMBUF_HEADROOM < ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_VLAN_TAG_SIZE +
				ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE) {
		rte_errno = EINVAL;
		return NULL;
	}
	f = rte_zmalloc_socket(
		"isth_backend_fpga", sizeof(*f), RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (f == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	f->island = conf->island;
	f->n_islands = conf->n_islands;
	f->max_elems = conf->max_elems;
	f->max_chunks = conf->max_chunks;
	f->agg_pool = conf->agg_pool;
	f->agg_published = TAG_NONE;
	if (conf->auth.keys != NULL) {
		if (conf->auth.verdict == NULL || conf->n_islands > ISTH_FPGA_KEY_OWNERS) {
			rte_free(f);
			rte_errno = EINVAL;
			return NULL;
		}
		f->auth = conf->auth;
		f->auth_ctrl = ISTH_FPGA_AUTH_VERIFY | (conf->auth.seal ? ISTH_FPGA_AUTH_SEAL : 0);
	}

	rc = fpga_bus_open(&f->bus, dev);
	if (rc < 0) {
		RTE_LOG(ERR, USER1, "fpga: %s: %s\n", dev, strerror(-rc));
		goto fail;
	}
	ver = fpga_rd(&f->bus, ISTH_FPGA_REG_VERSION);
	f->cap_dtypes = fpga_rd(&f->bus, ISTH_FPGA_REG_CAP_DTYPES);
	f->cap_max_islands = (uint32_t)fpga_rd(&f->bus, ISTH_FPGA_REG_CAP_MAX_ISLANDS);
	f->rt_banks = (uint32_t)fpga_rd(&f->bus, ISTH_FPGA_REG_CAP_RT_BANKS);
	f->max_peers = (uint32_t)fpga_rd(&f->bus, ISTH_FPGA_REG_CAP_MAX_PEERS);
	if (ver >> 16 != ISTH_FPGA_VERSION_MAJOR || f->rt_banks == 0 ||
		f->rt_banks > ISTH_FPGA_RT_BANKS_MAX || (f->rt_banks & (f->rt_banks - 1)) != 0) {
		rc = -ENODEV;
		goto fail;
	}
	if (conf->max_elems > fpga_rd(&f->bus, ISTH_FPGA_REG_CAP_MAX_ELEMS) ||
		conf->n_islands > f->cap_max_islands ||
		conf->mem_bytes > fpga_rd(&f->bus, ISTH_FPGA_REG_CAP_HBM_BYTES) ||
		conf->max_jobs > fpga_rd(&f->bus, ISTH_FPGA_REG_CAP_MAX_JOBS)) {
		rc = -EINVAL;
		goto fail;
	}
	if (f->auth_ctrl != 0 &&
		!(fpga_rd(&f->bus, ISTH_FPGA_REG_CAP_FLAGS) & ISTH_FPGA_CAPF_AUTH)) {
		RTE_LOG(ERR, USER1,
			"fpga: %s: interface %" PRIu64 ".%" PRIu64
			" without authentication (CAP_FLAGS.AUTH, 1.1)\n",
			dev, ver >> 16, ver & 0xffff);
		rc = -ENOTSUP;
		goto fail;
	}
	rc = dev_reset(f);
	if (rc == 0)
		rc = dev_configure(f, conf);
	if (rc < 0) {
		if (rc == -ETIMEDOUT) {
			RTE_LOG(ERR, USER1, "fpga: %s does not answer (is the model running?)\n",
				dev);
			rc = -ENODEV;
		}
		goto fail;
	}
	rc = backend_fanout_init(&f->fo, &conf->mcast, conf->island, conf->qs);
	if (rc < 0)
		goto fail;
	return f;
fail:
	fpga_destroy(f);
	rte_errno = -rc;
	return NULL;
}

static void
fpga_destroy(void *priv)
{
	struct fpga_backend *f = priv;

	if (f == NULL)
		return;
	/* Quiesce the device before its host memory goes away. */
	if (f->bus.bar != NULL && f->h2d != NULL)
		dev_reset(f);
	backend_fanout_fini(&f->fo);
	fpga_bus_close(&f->bus);
	rte_free(f);
}

static void
fpga_caps(const void *priv, struct isth_backend_caps *caps)
{
	const struct fpga_backend *f = priv;

	memset(caps, 0, sizeof(*caps));
	caps->name = "fpga";
	caps->mem_bytes = (uint64_t)f->n_slots * f->slot_bytes;
	caps->dtypes = (uint32_t)f->cap_dtypes;
	caps->max_islands = f->cap_max_islands;
	caps->max_elems = f->max_elems;
	caps->max_chunks = f->max_chunks;
	caps->n_slots = f->n_slots;
	/* replicate_burst() fans out (on the host, lib/mcast). */
	caps->replicates = true;
	caps->verifies = (f->auth_ctrl & ISTH_FPGA_AUTH_VERIFY) != 0;
	caps->seals = (f->auth_ctrl & ISTH_FPGA_AUTH_SEAL) != 0;
}

static int
fpga_set_round(void *priv, uint32_t job, uint32_t round, uint64_t expected,
	const struct isth_mcast_peer *peers, unsigned int n_peers)
{
	struct fpga_backend *f = priv;
	struct fpga_bus *b = &f->bus;
	uint32_t bank, pe;
	unsigned int j;
	int rc;

	if (n_peers > f->max_peers || (f->n_islands < 64 && (expected >> f->n_islands) != 0))
		return -EINVAL;
	/* The device applies banks in order; a full set of banks means it
	 * has not consumed the oldest yet. Check before changing anything. */
	if (expected != 0 &&
		(uint32_t)(f->rt_prod - (uint32_t)fpga_rd(b, ISTH_FPGA_REG_RT_CONS)) >= f->rt_banks)
		return -EBUSY;
	rc = backend_fanout_publish(&f->fo, round, peers, n_peers);
	if (rc < 0)
		return rc;
	/* A bye round expects nothing: its DATA is refused as unknown_round. */
	if (expected == 0 || (f->agg_published != TAG_NONE && round <= f->agg_published))
		return 0;
	bank = ISTH_FPGA_REG_RT_BANK + (f->rt_prod & (f->rt_banks - 1)) * ISTH_FPGA_RT_BANK_STRIDE;
	fpga_wr(b, bank + ISTH_FPGA_RT_JOB, job);
	fpga_wr(b, bank + ISTH_FPGA_RT_ROUND, round);
	fpga_wr(b, bank + ISTH_FPGA_RT_EXPECTED, expected);
	fpga_wr(b, bank + ISTH_FPGA_RT_TIMEOUT_NS, 0);
	fpga_wr(b, bank + ISTH_FPGA_RT_N_PEERS, n_peers);
	fpga_wr(b, bank + ISTH_FPGA_RT_STATUS, 0);
	for (j = 0; j < n_peers; j++) {
		pe = ISTH_FPGA_REG_RT_PEERS +
			((f->rt_prod & (f->rt_banks - 1)) * f->max_peers + j) * 16;
		fpga_wr(b, pe,
			(uint64_t)peers[j].ip << 32 | (uint64_t)peers[j].port << 16 |
				peers[j].island);
		fpga_wr(b, pe + 8, 0);
	}
	/* The generation write publishes the whole bank at once. */
	__atomic_store_n(&f->rt_prod, f->rt_prod + 1, __ATOMIC_RELAXED);
	fpga_wr(b, ISTH_FPGA_REG_RT_PROD, f->rt_prod);
	f->agg_published = round;
	return 0;
}

/*
 * Data path, with VERIFY: the verdict on every H2D descriptor the device
 * has consumed up to @head, before its entry (and buffer) is reused. A
 * tag verified when the status is past the authentication checks: OK, or
 * a later refusal (header, type, aggregator). E_ADDR and E_LEN come before
 * them: no verdict, the tag was not read.
 */
static void
reap_verdicts(struct fpga_backend *f, uint32_t head)
{
	uint32_t mask = f->h2d_size - 1;

	for (; f->h2d_reaped != head; f->h2d_reaped++) {
		const struct isth_fpga_h2d_desc *d = &f->h2d[f->h2d_reaped & mask];
		const uint8_t *msg = f->h2d_buf + (size_t)(f->h2d_reaped & mask) * f->h2d_buf_size;
		int st;

		switch (d->status & ~ISTH_FPGA_DESC_DONE) {
		case ISTH_FPGA_DESC_OK:
		case ISTH_FPGA_DESC_E_MSG:
		case ISTH_FPGA_DESC_E_TYPE:
		case ISTH_FPGA_DESC_E_REFUSED:
			st = ISTH_AUTH_OK;
			break;
		case ISTH_FPGA_DESC_E_AUTH_FORMAT:
			st = ISTH_AUTH_E_FORMAT;
			break;
		case ISTH_FPGA_DESC_E_AUTH_EPOCH:
			st = ISTH_AUTH_E_EPOCH;
			break;
		case ISTH_FPGA_DESC_E_AUTH_TAG:
			st = ISTH_AUTH_E_TAG;
			break;
		default:
			continue;
		}
		f->auth.verdict(f->auth.arg, msg, st);
	}
}

/* The owner of the WAN key of a DATA from @ip: the site table. */
static inline int
site_of(const struct fpga_backend *f, uint32_t ip)
{
	for (unsigned int s = 0; s < f->n_islands; s++)
		if (f->auth.site_ip[s] == ip && ip != 0)
			return (int)s;
	return -1;
}

static unsigned int
fpga_aggregate_burst(void *priv, struct rte_mbuf **pkts, const struct isth_wire_pkt *parsed,
	unsigned int n, uint64_t now)
{
	struct fpga_backend *f = priv;
	uint32_t head, tail = f->h2d_tail, mask = f->h2d_size - 1, space;
	unsigned int i, posted = 0;

	head = (uint32_t)__atomic_load_n(f->h2d_wb, __ATOMIC_ACQUIRE);
	if (f->auth_ctrl & ISTH_FPGA_AUTH_VERIFY)
		reap_verdicts(f, head);
	space = f->h2d_size - (tail - head);
	for (i = 0; i < n; i++) {
		const struct isth_wire_pkt *p = &parsed[i];
		struct isth_fpga_h2d_desc *d;
		uint16_t flags = 0;
		uint8_t *buf;

		if (i + 1 < n)
			rte_prefetch0(parsed[i + 1].msg);
		if (unlikely(p->msg_size > f->h2d_buf_size)) {
			isth_ctr_add(&f->h2d_too_big, 1);
			continue;
		}
		if (unlikely(space == 0)) {
			isth_ctr_add(&f->h2d_ring_full, 1);
			continue;
		}
		if (f->auth_ctrl & ISTH_FPGA_AUTH_VERIFY) {
			int o = site_of(f, p->addr.src_ip);

			if (unlikely(o < 0)) {
				isth_ctr_add(&f->auth_no_site, 1);
				f->auth.verdict(f->auth.arg, p->msg, ISTH_AUTH_E_KEY);
				continue;
			}
			flags = (uint16_t)(ISTH_AUTH_WAN |
				(unsigned int)o << ISTH_FPGA_H2D_OWNER_SHIFT);
		}
		buf = f->h2d_buf + (size_t)(tail & mask) * f->h2d_buf_size;
		rte_memcpy(buf, p->msg, p->msg_size);
		d = &f->h2d[tail & mask];
		d->addr = fpga_iova(&f->bus, buf);
		d->len = (uint32_t)p->msg_size;
		d->flags = flags;
		d->status = 0;
		d->time_ns = now;
		d->cookie = tail;
		tail++;
		space--;
		posted++;
	}
	/* The device read the copies, not the frames. */
	isth_mbuf_free_bulk(pkts, n);
	if (posted != 0) {
		__atomic_store_n(&f->h2d_tail, tail, __ATOMIC_RELAXED);
		fpga_wr(&f->bus, ISTH_FPGA_REG_H2D_TAIL, tail);
	}
	return posted;
}

static unsigned int
fpga_drain(void *priv, uint64_t now, struct rte_mbuf **out, unsigned int cap)
{
	struct fpga_backend *f = priv;
	uint32_t mask = f->d2h_size - 1, head, avail;
	unsigned int got = 0, k, i, used;
	struct rte_mbuf *m[FPGA_BURST];

	if (now > f->time_written) {
		__atomic_store_n(&f->time_written, now, __ATOMIC_RELAXED);
		fpga_wr(&f->bus, ISTH_FPGA_REG_TIME_NS, now);
	}
	/* verdicts of DATA consumed since the last burst (a quiet WAN
	 * leaves them here, not in aggregate_burst) */
	if (f->auth_ctrl & ISTH_FPGA_AUTH_VERIFY)
		reap_verdicts(f, (uint32_t)__atomic_load_n(f->h2d_wb, __ATOMIC_ACQUIRE));
	head = (uint32_t)__atomic_load_n(f->d2h_wb, __ATOMIC_ACQUIRE);
	avail = head - f->d2h_next;
	while (avail > 0 && got < cap) {
		k = RTE_MIN(avail, cap - got);
		k = RTE_MIN(k, (unsigned int)FPGA_BURST);
		if (rte_pktmbuf_alloc_bulk(f->agg_pool, m, k) != 0) {
			/* Completions stay in the ring; the device stalls
			 * (counted) once every buffer is waiting. */
			isth_ctr_add(&f->agg_alloc_fail, 1);
			break;
		}
		used = 0;
		for (i = 0; i < k; i++) {
			struct isth_fpga_d2h_desc *d = &f->d2h[f->d2h_next & mask];
			const uint8_t *src =
				f->d2h_buf + (size_t)(f->d2h_next & mask) * f->d2h_buf_size;
			uint32_t len = d->len;
			uint8_t *dst;

			if (i + 1 < k)
				rte_prefetch0(f->d2h_buf +
					(size_t)((f->d2h_next + 1) & mask) * f->d2h_buf_size);
			if (likely(d->status == ISTH_FPGA_DESC_DONE && len >= ISTH_WIRE_HDR_SIZE &&
				    len <= f->d2h_buf_size)) {
				dst = (uint8_t *)rte_pktmbuf_append(m[used], len);
				/* room was checked at creation */
				rte_memcpy(dst, src, len);
				out[got + used] = m[used];
				used++;
			} else {
				isth_ctr_add(&f->d2h_desc_err, 1);
			}
			/* Back to the device, empty. */
			d->status = 0;
			d->len = 0;
			f->d2h_next++;
			f->d2h_tail++;
		}
		if (used < k)
			rte_pktmbuf_free_bulk(m + used, k - used);
		got += used;
		avail -= k;
	}
	if (f->d2h_tail != (uint32_t)fpga_rd(&f->bus, ISTH_FPGA_REG_D2H_TAIL))
		fpga_wr(&f->bus, ISTH_FPGA_REG_D2H_TAIL, f->d2h_tail);
	isth_ctr_add(&f->agg_msgs, got);
	return got;
}

/* Host fan-out, shared with the software backend (backend_fanout.c). */
static uint16_t
fpga_replicate_burst(void *priv, struct rte_mbuf **pkts, uint16_t n, struct rte_mbuf **out,
	uint16_t out_cap, uint16_t *n_out)
{
	struct fpga_backend *f = priv;

	return backend_fanout_burst(&f->fo, pkts, n, out, out_cap, n_out);
}

/*
 * Shutdown only: ask the device to emit every slot and wait (bounded) for
 * it to have done so, so that the caller's drain loop that follows finds
 * the aggregates. @return slots the device emitted (0 if it did not answer)
 */
static unsigned int
fpga_flush(void *priv)
{
	struct fpga_backend *f = priv;
	uint64_t req = f->flush_req + 1;

	__atomic_store_n(&f->flush_req, req, __ATOMIC_RELAXED);
	fpga_wr(&f->bus, ISTH_FPGA_REG_FLUSH_REQ, req);
	if (wait_reg(f, ISTH_FPGA_REG_FLUSH_ACK, UINT64_MAX, req) < 0)
		return 0;
	return (unsigned int)fpga_rd(&f->bus, ISTH_FPGA_REG_FLUSH_COUNT);
}

/*
 * Work posted to the device and not yet answered: H2D descriptors not
 * consumed, time or flush not acknowledged, round banks not applied, and
 * aggregates waiting for D2H buffers. 0 means every completion the device
 * will make for what was posted is already in the D2H ring.
 */
static uint64_t
dev_pending(const struct fpga_backend *f)
{
	const struct fpga_bus *b = &f->bus;
	uint64_t n = 0;

	/* Acks first (acquire): the head write-backs precede them. */
	n += fpga_rd(b, ISTH_FPGA_REG_TIME_ACK) !=
		__atomic_load_n(&f->time_written, __ATOMIC_RELAXED);
	n += fpga_rd(b, ISTH_FPGA_REG_FLUSH_ACK) !=
		__atomic_load_n(&f->flush_req, __ATOMIC_RELAXED);
	n += fpga_rd(b, ISTH_FPGA_REG_BACKLOG);
	n += (uint32_t)(__atomic_load_n(&f->rt_prod, __ATOMIC_RELAXED) -
		(uint32_t)fpga_rd(b, ISTH_FPGA_REG_RT_CONS));
	n += (uint32_t)(__atomic_load_n(&f->h2d_tail, __ATOMIC_RELAXED) -
		(uint32_t)__atomic_load_n(f->h2d_wb, __ATOMIC_ACQUIRE));
	return n;
}

static void
fpga_stats(const void *priv, struct isth_backend_stats *st)
{
	const struct fpga_backend *f = priv;
	uint64_t pending;
	unsigned int i;

	st->n = 0;
	pending = dev_pending(f);
#define PUT_V(nm, v) \
	do { \
		if (st->n < ISTH_BACKEND_MAX_STATS) { \
			st->names[st->n] = (nm); \
			st->values[st->n++] = (v); \
		} \
	} while (0)
	/* The aggregation counters (sw names), as the device keeps them. */
	for (i = 0; i < ISTH_FPGA_CNT_H2D_DESC; i++)
		PUT_V(isth_fpga_counter_name(i), fpga_rd(&f->bus, ISTH_FPGA_REG_COUNTERS + 8 * i));
	backend_fanout_stats(&f->fo, st);
#define PUT(fld) PUT_V(#fld, __atomic_load_n(&f->fld, __ATOMIC_RELAXED))
	PUT(agg_msgs);
	PUT(agg_alloc_fail);
	PUT(h2d_ring_full);
	PUT(h2d_too_big);
	PUT(d2h_desc_err);
	PUT(auth_no_site);
#undef PUT
	PUT_V("dev_pending", pending);
	for (i = ISTH_FPGA_CNT_H2D_DESC; i < ISTH_FPGA_CNT_MAX; i++)
		PUT_V(isth_fpga_counter_name(i), fpga_rd(&f->bus, ISTH_FPGA_REG_COUNTERS + 8 * i));
#undef PUT_V
}

static void
fpga_counts(const void *priv, struct isth_backend_counts *c)
{
	const struct fpga_backend *f = priv;

#define CNT(i) fpga_rd(&f->bus, ISTH_FPGA_REG_COUNTERS + 8 * (i))
	c->completed = CNT(ISTH_FPGA_CNT_COMPLETED);
	c->partial = CNT(ISTH_FPGA_CNT_PARTIAL_TIMEOUT) + CNT(ISTH_FPGA_CNT_PARTIAL_CONFLICT_POOL) +
		CNT(ISTH_FPGA_CNT_PARTIAL_CONFLICT_BUCKET);
#undef CNT
	c->dev_pending = dev_pending(f);
}

const struct isth_backend_ops isth_backend_fpga_ops = {
	.name = "fpga",
	.create = fpga_create,
	.destroy = fpga_destroy,
	.caps = fpga_caps,
	.set_round = fpga_set_round,
	.aggregate_burst = fpga_aggregate_burst,
	.drain = fpga_drain,
	.replicate_burst = fpga_replicate_burst,
	.flush = fpga_flush,
	.stats = fpga_stats,
	.counts = fpga_counts,
	.set_keys = fpga_set_keys,
};
