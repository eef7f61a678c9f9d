/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software backend: lib/agg sums inbound DATA on the calling lcore,
 * lib/mcast fans outbound DATA out. Two fan-out handles alternate by round
 * parity so that the table for round r + 1 can be published while round r
 * is still being sent, and a straggler of round r is never sent to round
 * r + 1's clique.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "isth_agg.h"
#include "isth_backend.h"
#include "isth_mbuf.h"
#include "backend_priv.h"
#include "backend_fanout.h"

#define SW_BURST 32
/* AGG messages built but not yet handed out by drain(). */
#define SW_STAGE 64
/* Tag of a fan-out handle that holds no usable table. */
#define TAG_NONE UINT64_MAX

struct sw_backend {
	struct isth_agg *agg;
	struct backend_fanout fo; /* replication by round parity */
	struct rte_mempool *agg_pool;
	uint8_t island;
	uint32_t max_elems;
	/* Control only: newest round published to the engine, per job slot. */
	uint64_t agg_published;
	/* Contributions per isth_agg_add_burst() call: at most the engine's
	 * reserve, so that a conflict always finds a free slot (isth_agg.h). */
	uint32_t step;
	/* Data-path scratch, sized at creation. */
	struct isth_agg_contrib contrib[SW_BURST];
	struct isth_agg_emit emit[SW_BURST];
	/* AGG messages built from emissions, oldest first (dp only). Turning
	 * emissions into mbufs right after each add releases their slots. */
	struct rte_mbuf *staged[SW_STAGE];
	unsigned int n_staged;
	/* Counters. Written by: data path (relaxed); read by: any thread. */
	uint64_t agg_msgs; /* AGG messages handed out */
	uint64_t agg_alloc_fail; /* drain found no mbuf: emissions wait */
};

static void sw_destroy(void *priv);

static void *
sw_create(const struct isth_backend_conf *conf)
{
	struct isth_agg_params ap;
	struct sw_backend *sw;
	uint32_t room;
	int i;

	room = rte_pktmbuf_data_room_size(conf->agg_pool);
	if (room < RTE_PKTMBUF_HEADROOM + ISTH_WIRE_HDR_SIZE + 4 * conf->max_elems ||
		RTE_PKTMBUF_HEADROOM < ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_VLAN_TAG_SIZE +
				ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE) {
		rte_errno = EINVAL;
		return NULL;
	}
	sw = rte_zmalloc_socket(
		"isth_backend_sw", sizeof(*sw), RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (sw == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	sw->island = conf->island;
	sw->max_elems = conf->max_elems;
	sw->agg_pool = conf->agg_pool;
	sw->agg_published = TAG_NONE;

	memset(&ap, 0, sizeof(ap));
	ap.mem_budget = conf->mem_bytes;
	ap.max_elems = conf->max_elems;
	ap.max_chunks = conf->max_chunks;
	ap.n_islands = conf->n_islands;
	ap.max_jobs = conf->max_jobs;
	ap.window = conf->window;
	ap.timeout_ns = conf->timeout_ns;
	ap.bf16_out = conf->bf16_out;
	ap.reserve = ISTH_AGG_RESERVE_DEFAULT;
	ap.qs = conf->qs;
	sw->agg = isth_agg_create(&ap);
	if (sw->agg == NULL) {
		rte_errno = errno;
		goto fail;
	}
	{
		struct isth_agg_info info;

		isth_agg_info_get(sw->agg, &info);
		sw->step = RTE_MIN(info.reserve, (uint32_t)SW_BURST);
		if (sw->step == 0)
			sw->step = 1;
	}
	i = backend_fanout_init(&sw->fo, &conf->mcast, conf->island, conf->qs);
	if (i < 0) {
		rte_errno = -i;
		goto fail;
	}
	return sw;
fail:
	i = rte_errno;
	sw_destroy(sw);
	rte_errno = i;
	return NULL;
}

static void
sw_destroy(void *priv)
{
	struct sw_backend *sw = priv;

	if (sw == NULL)
		return;
	if (sw->n_staged)
		rte_pktmbuf_free_bulk(sw->staged, sw->n_staged);
	backend_fanout_fini(&sw->fo);
	isth_agg_destroy(sw->agg);
	rte_free(sw);
}

static void
sw_caps(const void *priv, struct isth_backend_caps *caps)
{
	const struct sw_backend *sw = priv;
	struct isth_agg_info info;

	isth_agg_info_get(sw->agg, &info);
	memset(caps, 0, sizeof(*caps));
	caps->name = "sw";
	caps->mem_bytes = info.acc_size;
	caps->dtypes = (1u << ISTH_WIRE_DTYPE_FP32) | (1u << ISTH_WIRE_DTYPE_BF16) |
		(1u << ISTH_WIRE_DTYPE_INT32);
	caps->max_islands = ISTH_WIRE_MAX_ISLANDS;
	caps->max_elems = sw->max_elems;
	caps->n_slots = info.n_slots;
	caps->replicates = true;
}

static int
sw_set_round(void *priv, uint32_t job, uint32_t round, uint64_t expected,
	const struct isth_mcast_peer *peers, unsigned int n_peers)
{
	struct sw_backend *sw = priv;
	int rc;

	/* Fan-out first: it is the step that may ask for a retry, and the
	 * engine refuses a round published twice. */
	rc = backend_fanout_publish(&sw->fo, round, peers, n_peers);
	if (rc < 0)
		return rc;
	/* An island with no peers this round (a bye) expects nothing; the
	 * engine then refuses that round's DATA as unknown_round. */
	if (expected != 0 && (sw->agg_published == TAG_NONE || round > sw->agg_published)) {
		rc = isth_agg_set_round(sw->agg, job, round, expected);
		if (rc < 0)
			return rc;
		sw->agg_published = round;
	}
	return 0;
}

/*
 * The lines an AGG's header and copy-out will write in a new mbuf,
 * prefetched for write one AGG ahead: its data room was last written
 * when the mbuf carried an earlier AGG (held by the resend ring for its
 * window since), so the stores otherwise wait on its lines one at a
 * time. bench_isthmusd, interleaved A/B, slow-read mode: about 15
 * cycles per DATA less aligned, about 9 skewed (doc/notes/performance-log.md
 * section 6, fourth pass).
 */
static inline void
prefetch_agg_room(const struct rte_mbuf *m, uint32_t size)
{
	const char *p = rte_pktmbuf_mtod(m, const char *);
	uint32_t off;

	for (off = 0; off < ISTH_WIRE_HDR_SIZE + size; off += RTE_CACHE_LINE_SIZE)
		__builtin_prefetch(p + off, 1);
}

/* Build AGG messages for pending emissions into the staging array and
 * release their slots. */
static void
sw_materialise(struct sw_backend *sw)
{
	unsigned int n, got, i;
	struct isth_wire_hdr h;

	n = RTE_MIN(isth_agg_pending(sw->agg), SW_STAGE - sw->n_staged);
	n = RTE_MIN(n, (unsigned int)SW_BURST);
	if (n == 0)
		return;
	if (rte_pktmbuf_alloc_bulk(sw->agg_pool, sw->staged + sw->n_staged, n) != 0) {
		/* Emissions stay queued in the engine (bounded by its slots)
		 * and leave on a later call. */
		isth_ctr_add(&sw->agg_alloc_fail, 1);
		return;
	}
	got = isth_agg_drain(sw->agg, sw->emit, n);
	if (got > 0)
		prefetch_agg_room(sw->staged[sw->n_staged], sw->emit[0].size);
	for (i = 0; i < got; i++) {
		const struct isth_agg_emit *e = &sw->emit[i];
		struct rte_mbuf *m = sw->staged[sw->n_staged + i];
		uint8_t *p;

		if (i + 1 < got)
			prefetch_agg_room(sw->staged[sw->n_staged + i + 1], e[1].size);
		p = (uint8_t *)rte_pktmbuf_append(m, ISTH_WIRE_HDR_SIZE + e->size);
		/* room was checked at creation: append cannot fail */
		memset(&h, 0, sizeof(h));
		isth_agg_emit_hdr(e, &h);
		h.sender = sw->island;
		h.seq = 0;
		isth_wire_put_hdr(p, ISTH_WIRE_HDR_SIZE, &h);
		isth_agg_emit_copy(sw->agg, e, p + ISTH_WIRE_HDR_SIZE, e->size);
		isth_agg_release(sw->agg, e);
	}
	if (got < n)
		rte_pktmbuf_free_bulk(sw->staged + sw->n_staged + got, n - got);
	sw->n_staged += got;
}

static unsigned int
sw_aggregate_burst(void *priv, struct rte_mbuf **pkts, const struct isth_wire_pkt *parsed,
	unsigned int n, uint64_t now)
{
	struct sw_backend *sw = priv;
	unsigned int done = 0, acc = 0;

	while (done < n) {
		unsigned int k = RTE_MIN(n - done, sw->step), i;

		for (i = 0; i < k; i++)
			isth_agg_contrib_from_pkt(&sw->contrib[i], &parsed[done + i]);
		acc += isth_agg_add_burst(sw->agg, sw->contrib, k, now);
		/* Summed in place: the frames are no longer needed (freed
		 * from their first cache line: lib/mbuf). */
		isth_mbuf_free_bulk(pkts + done, k);
		done += k;
		sw_materialise(sw);
	}
	return acc;
}

static unsigned int
sw_drain(void *priv, uint64_t now, struct rte_mbuf **out, unsigned int cap)
{
	struct sw_backend *sw = priv;
	unsigned int n;

	isth_agg_poll(sw->agg, now);
	sw_materialise(sw);
	n = RTE_MIN(cap, sw->n_staged);
	if (n == 0)
		return 0;
	memcpy(out, sw->staged, n * sizeof(*out));
	sw->n_staged -= n;
	memmove(sw->staged, sw->staged + n, sw->n_staged * sizeof(*out));
	isth_ctr_add(&sw->agg_msgs, n);
	return n;
}

static uint16_t
sw_replicate_burst(void *priv, struct rte_mbuf **pkts, uint16_t n, struct rte_mbuf **out,
	uint16_t out_cap, uint16_t *n_out)
{
	struct sw_backend *sw = priv;

	return backend_fanout_burst(&sw->fo, pkts, n, out, out_cap, n_out);
}

static unsigned int
sw_flush(void *priv)
{
	struct sw_backend *sw = priv;

	return isth_agg_flush(sw->agg);
}

static int
sw_expire_round(void *priv, uint32_t job, uint32_t round)
{
	struct sw_backend *sw = priv;
	unsigned int n = isth_agg_expire_round(sw->agg, job, round);

	sw_materialise(sw);
	return (int)n;
}

static void
sw_stats(const void *priv, struct isth_backend_stats *st)
{
	const struct sw_backend *sw = priv;
	struct isth_agg_stats as;
	const uint64_t *v;
	unsigned int i;

	st->n = 0;
	isth_agg_stats_get(sw->agg, &as);
	v = (const uint64_t *)&as;
	for (i = 0; i < ISTH_AGG_STATS_N && st->n < ISTH_BACKEND_MAX_STATS; i++) {
		st->names[st->n] = isth_agg_stats_name(i);
		st->values[st->n++] = v[i];
	}
	{
		/* the round tables' writer counts: control thread (lib/rtab) */
		struct isth_rtab_stats rs;

		isth_agg_round_stats_get(sw->agg, &rs);
		if (st->n + 2 <= ISTH_BACKEND_MAX_STATS) {
			st->names[st->n] = "round_tables_published";
			st->values[st->n++] = rs.published;
			st->names[st->n] = "round_table_reuse_waits";
			st->values[st->n++] = rs.reuse_waits;
		}
	}
	backend_fanout_stats(&sw->fo, st);
#define PUT(f) \
	do { \
		if (st->n < ISTH_BACKEND_MAX_STATS) { \
			st->names[st->n] = #f; \
			st->values[st->n++] = __atomic_load_n(&sw->f, __ATOMIC_RELAXED); \
		} \
	} while (0)
	PUT(agg_msgs);
	PUT(agg_alloc_fail);
#undef PUT
}

static void
sw_counts(const void *priv, struct isth_backend_counts *c)
{
	const struct sw_backend *sw = priv;
	struct isth_agg_stats as;

	isth_agg_stats_get(sw->agg, &as);
	c->completed = as.completed;
	c->partial = as.partial_timeout + as.partial_conflict_pool + as.partial_conflict_bucket;
	c->dev_pending = 0;
}

const struct isth_backend_ops isth_backend_sw_ops = {
	.name = "sw",
	.create = sw_create,
	.destroy = sw_destroy,
	.caps = sw_caps,
	.set_round = sw_set_round,
	.aggregate_burst = sw_aggregate_burst,
	.drain = sw_drain,
	.replicate_burst = sw_replicate_burst,
	.flush = sw_flush,
	.expire_round = sw_expire_round,
	.stats = sw_stats,
	.counts = sw_counts,
};
