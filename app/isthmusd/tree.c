/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tree rounds (doc/isthmusd.md, "Tree rounds"): in a round whose schedule
 * has trees, chunk c belongs to tree c mod k, and the edges reduce it up
 * that tree and send the result down it:
 *
 *   island DATA ----\
 *   children's PARTIALs -> sum (disjoint bitmaps, each once) -> complete
 *                        (own island and the whole subtree) or the cutoff:
 *                        PARTIAL to the parent; the root: its result
 *   parent's result (F_DOWN) -> to each child, and to the island as an AGG
 *
 * The RX worker does it all, in state of its own allocated at set-up: a
 * chunk's accumulator per round slot. A child that never sends leaves its
 * subtree out of the bitmap (never in the sum); every edge sends what it
 * has at its cutoff, deeper edges earlier (one hop's allowance per level),
 * and an edge whose result never comes hands its island its own subtree's
 * sum at the last cutoff, a partial naming who is missing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "isth_clock.h"
#include "isthd.h"

static inline uint64_t
bit(unsigned int i)
{
	return 1ull << i;
}

/* The subtree of every island under @parent (n entries, -1 the root) into
 * @sub and every island's depth into @depth. -EINVAL if it is not one tree. */
static int
subtrees(const int *parent, int n, uint64_t *sub, uint8_t *depth)
{
	int roots = 0;

	memset(sub, 0, sizeof(*sub) * (size_t)n);
	for (int i = 0; i < n; i++) {
		int x = i, steps = 0;

		roots += parent[i] < 0;
		while (x >= 0) {
			if (steps > n || x >= n)
				return -EINVAL; /* a cycle, or a parent outside */
			sub[x] |= bit((unsigned int)i);
			x = parent[x];
			steps++;
		}
		depth[i] = (uint8_t)(steps - 1);
	}
	return roots == 1 ? 0 : -EINVAL;
}

/* Tree @t of cycle round @r into @node, as island @self sees it. */
static int
node_of(const struct isth_sched *s, int r, int t, int self, struct isthd_tree_node *node, char *err,
	size_t err_size)
{
	int n = isth_sched_n_islands(s), parent[ISTHD_MAX_PEERS], line = 0, rc;
	uint64_t sub[ISTHD_MAX_PEERS] = {0};
	uint8_t depth[ISTHD_MAX_PEERS] = {0};

	rc = isth_sched_tree(s, r, t, parent, &line);
	if (rc == 0)
		rc = subtrees(parent, n, sub, depth);
	if (rc < 0) {
		snprintf(err, err_size, "schedule line %d: round %d tree %d is not one tree", line,
			r, t);
		return rc;
	}
	memset(node, 0, sizeof(*node));
	node->parent = parent[self];
	for (node->root = self; parent[node->root] >= 0;)
		node->root = parent[node->root];
	node->depth = depth[self];
	node->sub = sub[self];
	for (int i = 0; i < n; i++) {
		if (depth[i] > node->height)
			node->height = depth[i];
		if ((sub[self] & bit((unsigned int)i)) && depth[i] - depth[self] > node->sub_height)
			node->sub_height = (uint8_t)(depth[i] - depth[self]);
		if (parent[i] == self) {
			node->children |= bit((unsigned int)i);
			node->sub_of[i] = sub[i];
		}
	}
	return 0;
}

/*
 * Round @r's send line for island @self into @tb: its offset, its rate as
 * picoseconds a payload byte (a profile: its mean, the payload over the
 * profile's length) and the payload's time at it. A tree round's send
 * line is when the island's DATA starts entering the edge and the rate
 * the edge forwards its tree traffic at (doc/schedule-file.md).
 */
static int
send_line(const struct isth_sched *s, int r, int self, struct isthd_tree_round *tb, char *err,
	size_t err_size)
{
	uint64_t off, rate, dur, sum = 0, bits = 8 * isth_sched_payload_bytes(s);
	int n = isth_sched_sender(s, r, self, &off, &rate);

	for (int k = 1; n > 1 && k <= n; k++) {
		if (isth_sched_segment(s, r, self, k - 1, &dur, &rate) < 0)
			break;
		sum += dur;
	}
	if (n > 1 && sum > 0)
		rate = (uint64_t)((unsigned __int128)bits * 1000000000u / sum);
	if (n < 1 || rate == 0 || bits == 0) {
		snprintf(err, err_size,
			"round %d: island %d has no send line (a tree round's pace)", r, self);
		return -EINVAL;
	}
	tb->offset_ns = off;
	tb->ps_per_byte = (uint64_t)(8000000000000ull / rate);
	tb->span_ns = (uint64_t)((unsigned __int128)bits * 1000000000u / rate);
	return 0;
}

int
isthd_tree_tables(const struct isth_sched *s, int self, struct isthd_tree_round **out,
	unsigned int *n_rounds, char *err, size_t err_size)
{
	int nr = isth_sched_n_rounds(s), any = 0, rc;
	struct isthd_tree_round *tb;

	*out = NULL;
	*n_rounds = 0;
	for (int r = 0; r < nr; r++)
		any |= isth_sched_n_trees(s, r) > 0;
	if (!any)
		return 0;
	if (isth_sched_n_islands(s) > ISTHD_MAX_PEERS) {
		snprintf(err, err_size, "tree rounds: more than %d islands", ISTHD_MAX_PEERS);
		return -EINVAL;
	}
	tb = calloc((size_t)nr, sizeof(*tb));
	if (tb == NULL) {
		snprintf(err, err_size, "tree rounds: %d round tables: no memory", nr);
		return -ENOMEM;
	}
	for (int r = 0; r < nr; r++) {
		int k = isth_sched_n_trees(s, r);

		if (k < 0 || k > ISTHD_TREE_MAX) {
			snprintf(err, err_size, "round %d: %d trees (at most %d)", r, k,
				ISTHD_TREE_MAX);
			free(tb);
			return -EINVAL;
		}
		tb[r].n_trees = (unsigned int)k;
		rc = k > 0 ? send_line(s, r, self, &tb[r], err, err_size) : 0;
		if (rc < 0) {
			free(tb);
			return rc;
		}
		for (int t = 0; t < k; t++) {
			rc = node_of(s, r, t, self, &tb[r].t[t], err, err_size);
			if (rc < 0) {
				free(tb);
				return rc;
			}
		}
	}
	*out = tb;
	*n_rounds = (unsigned int)nr;
	return 0;
}

bool
isthd_tree_same(const struct isthd *d, const struct isth_sched *s)
{
	struct isthd_tree_round *tb;
	unsigned int n;
	char err[128];
	bool same;

	if (isthd_tree_tables(s, d->island, &tb, &n, err, sizeof(err)) < 0)
		return false;
	same = n == d->tree.n_rounds &&
		(n == 0 || memcmp(tb, d->tree.rounds, sizeof(*tb) * n) == 0);
	free(tb);
	return same;
}

uint64_t
isthd_tree_bytes(const struct isth_sched *s, uint32_t n_chunks, uint32_t max_elems)
{
	int r, n = isth_sched_n_rounds(s);

	for (r = 0; r < n; r++)
		if (isth_sched_n_trees(s, r) > 0)
			return 2ull * ISTHD_TREE_SLOTS * n_chunks *
				RTE_ALIGN_CEIL((uint64_t)max_elems * 4u, 64u);
	return 0;
}

int
isthd_tree_setup(struct isthd *d, char *err, size_t err_size)
{
	static unsigned int created; /* ring names must be unique in the process */
	struct isthd_tree *tr = &d->tree;
	size_t n, acc;
	char name[RTE_RING_NAMESIZE];
	int rc;

	memset(tr, 0, sizeof(*tr));
	rc = isthd_tree_tables(d->sched, d->island, &tr->rounds, &tr->n_rounds, err, err_size);
	if (rc < 0 || tr->n_rounds == 0)
		return rc;
	/* worker.c (agg_prepare) takes every AGG as sealed by the device when
	 * it seals; the tree's AGGs never pass it. (Today auth.c refuses
	 * fpga with auth on, so this guards a device that learns tag lists.) */
	if (d->auth.dev_seal) {
		snprintf(err, err_size,
			"tree rounds: the schedule has trees, and the device seals the AGGs "
			"([isthmusd] backend = fpga, [auth] mode = on): use backend = sw");
		return -ENOTSUP;
	}
	tr->all = d->n_islands >= 64 ? UINT64_MAX : bit(d->n_islands) - 1;

	tr->slot_bytes = RTE_ALIGN_CEIL((uint32_t)d->lim.max_elems * 4u, 64u);
	if (isth_agg_kernels_get(ISTH_AGG_KERNEL_AUTO, &tr->k) < 0) {
		snprintf(err, err_size, "tree rounds: no summation kernels");
		return -ENOTSUP;
	}
	n = (size_t)ISTHD_TREE_SLOTS * d->shape.n_chunks;
	acc = n * tr->slot_bytes; /* isthd_tree_bytes() / 2 */
	tr->chunk = rte_zmalloc("isthd_tree_chunk", n * sizeof(*tr->chunk), RTE_CACHE_LINE_SIZE);
	tr->acc = rte_zmalloc("isthd_tree_acc", acc, RTE_CACHE_LINE_SIZE);
	tr->own = rte_zmalloc("isthd_tree_own", acc, RTE_CACHE_LINE_SIZE);
	tr->pace_words = (d->shape.n_chunks + 63) / 64;
	tr->pace_ready = rte_zmalloc("isthd_tree_pace",
		(size_t)ISTHD_TREE_SLOTS * tr->pace_words * sizeof(uint64_t), RTE_CACHE_LINE_SIZE);
	snprintf(name, sizeof(name), "isthd_tree%u", created++);
	/* a round's AGGs and the next's, before the emitter runs */
	tr->agg = rte_ring_create(name, rte_align32pow2((uint32_t)d->shape.n_chunks * 2 + 64),
		(int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (tr->chunk == NULL || tr->acc == NULL || tr->own == NULL || tr->pace_ready == NULL ||
		tr->agg == NULL) {
		snprintf(err, err_size,
			"tree rounds: 2 x %zu B of accumulators (%d rounds of %u chunks): no "
			"memory",
			acc, ISTHD_TREE_SLOTS, d->shape.n_chunks);
		return -ENOMEM;
	}
	/* auth on: PARTIAL is a stream of its own, numbered from the clock */
	tr->seq = isth_clock_real_ns();
	return 0;
}

void
isthd_tree_fini(struct isthd *d)
{
	struct isthd_tree *tr = &d->tree;
	struct rte_mbuf *m;

	if (tr->agg != NULL) {
		while (rte_ring_dequeue(tr->agg, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(tr->agg);
	}
	rte_pktmbuf_free_bulk(tr->tx, tr->n_tx);
	rte_free(tr->chunk);
	rte_free(tr->acc);
	rte_free(tr->own);
	rte_free(tr->pace_ready);

	free(tr->rounds);
	memset(tr, 0, sizeof(*tr));
}

/* Chunk @c of round @r and its accumulator, claimed for @r if its slot
 * holds an older round; NULL if it holds a later one (@r is over). */
static struct isthd_tree_chunk *
chunk_of(struct isthd *d, uint64_t r, uint32_t c, uint8_t **acc)
{
	struct isthd_tree *tr = &d->tree;
	size_t i = (size_t)(r % ISTHD_TREE_SLOTS) * d->shape.n_chunks + c;
	struct isthd_tree_chunk *ch = &tr->chunk[i];

	*acc = tr->acc + i * tr->slot_bytes;
	if (likely(ch->round1 == r + 1))
		return ch;
	if (ch->round1 > r + 1)
		return NULL;
	memset(ch, 0, sizeof(*ch));
	ch->round1 = r + 1;
	return ch;
}

/* Round @r's cutoff state, claimed for @r if its slot holds an older
 * round; NULL if it holds a later one (@r is over). */
static struct isthd_tree_cut *
cut_of(struct isthd_tree *tr, uint64_t r)
{
	struct isthd_tree_cut *cut = &tr->cut[r % ISTHD_TREE_SLOTS];

	if (likely(cut->round1 == r + 1))
		return cut;
	if (cut->round1 > r + 1)
		return NULL;
	memset(cut, 0, sizeof(*cut));
	cut->round1 = r + 1;
	return cut;
}

/* Does chunk @ch of tree @t (round state @cut) have every contribution it
 * waits for at @node: its island's and every child's, but those absent? */
static inline bool
chunk_ready(const struct isthd *d, const struct isthd_tree_node *node,
	const struct isthd_tree_cut *cut, unsigned int t, const struct isthd_tree_chunk *ch)
{
	uint64_t want = node->children | bit(d->island);

	return ((ch->heard | cut->absent[t]) & want) == want;
}

/* The island's own DATA of the chunk whose accumulator is @acc. */
static inline uint8_t *
own_of(const struct isthd_tree *tr, const uint8_t *acc)
{
	return tr->own + (acc - tr->acc);
}

static inline float
bf16_to_f32(const uint8_t *p)
{
	uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* @n elements of @dtype at @dst less the island's own at @own: the sum
 * the island expects (its AGGs never include itself; it adds its own).
 * int32 wraps back exactly; fp32 and bf16 are rounded once more. */
static void
payload_sub(uint8_t *dst, const uint8_t *own, uint8_t dtype, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		if (dtype == ISTH_WIRE_DTYPE_INT32) {
			uint32_t a, b;

			memcpy(&a, dst + 4 * i, 4);
			memcpy(&b, own + 4 * i, 4);
			a -= b;
			memcpy(dst + 4 * i, &a, 4);
		} else if (dtype == ISTH_WIRE_DTYPE_FP32) {
			float a, b;

			memcpy(&a, dst + 4 * i, 4);
			memcpy(&b, own + 4 * i, 4);
			a -= b;
			memcpy(dst + 4 * i, &a, 4);
		} else {
			float a = bf16_to_f32(dst + 2 * i) - bf16_to_f32(own + 2 * i);
			uint32_t u;

			memcpy(&u, &a, 4);
			/* round to nearest even (NaN: quiet) */
			u = (u & 0x7fffffffu) > 0x7f800000u
				? (u >> 16) | 0x40u
				: (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
			dst[2 * i] = (uint8_t)u;
			dst[2 * i + 1] = (uint8_t)(u >> 8);
		}
	}
}

/* Sum the elements of @p into @acc (the chunk's first: copied). */
static void
acc_add(const struct isthd_tree *tr, uint8_t *acc, const struct isth_wire_pkt *p, bool first)
{
	uint16_t n = p->hdr.count;

	switch (p->hdr.dtype) {
	case ISTH_WIRE_DTYPE_INT32:
		if (first)
			memcpy(acc, p->payload, (size_t)n * 4);
		else
			tr->k.add_int32((int32_t *)acc, p->payload, n);
		break;
	case ISTH_WIRE_DTYPE_FP32:
		if (first)
			memcpy(acc, p->payload, (size_t)n * 4);
		else
			tr->k.add_fp32((float *)acc, p->payload, n);
		break;
	default: /* bf16, summed in fp32 */
		if (first)
			tr->k.load_bf16((float *)acc, p->payload, n);
		else
			tr->k.add_bf16((float *)acc, p->payload, n);
		break;
	}
}

/* A message of chunk @c of round @r with header fields @type, @flags,
 * @bitmap, @dtype, its payload from the accumulator @acc (@src NULL) or
 * copied from @src (a received payload). NULL: no mbuf (counted). */
static struct rte_mbuf *
msg_new(struct isthd_worker *w, uint8_t type, uint16_t flags, uint64_t r, uint32_t c,
	uint64_t bitmap, uint8_t dtype, const uint8_t *acc, const uint8_t *src, const uint8_t *own)
{
	struct isthd *d = w->d;
	uint16_t count = c + 1 == d->shape.n_chunks ? d->shape.last_elems : d->shape.chunk_elems;
	size_t size = (size_t)count * isth_wire_dtype_size(dtype);
	struct isth_wire_hdr h = {
		.type = type,
		.flags = flags,
		.dtype = dtype,
		.sender = d->island,
		.count = count,
		.job = d->cfg.job,
		.round = (uint32_t)r,
		.chunk = c,
		/* PARTIAL, auth on: the edge's own stream (IV uniqueness); an
		 * AGG is numbered by its stream's ring */
		.seq = type == ISTH_WIRE_PARTIAL && d->auth.on ? d->tree.seq++ : 0,
		.bitmap = bitmap,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
	uint8_t *p;

	if (unlikely(m == NULL ||
		    (p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(ISTH_WIRE_HDR_SIZE + size))) ==
			    NULL)) {
		rte_pktmbuf_free(m);
		isth_ctr_add(&w->st.drop[ISTHD_DROP_tree_no_room], 1);
		return NULL;
	}
	isth_wire_put_hdr(p, ISTH_WIRE_HDR_SIZE, &h);
	if (src != NULL)
		memcpy(p + ISTH_WIRE_HDR_SIZE, src, size);
	else if (dtype == ISTH_WIRE_DTYPE_BF16)
		d->tree.k.store_bf16(p + ISTH_WIRE_HDR_SIZE, (const float *)acc, count);
	else
		memcpy(p + ISTH_WIRE_HDR_SIZE, acc, size);
	if (own != NULL)
		payload_sub(p + ISTH_WIRE_HDR_SIZE, own, dtype, count);
	return m;
}

/* One TX burst of the frames staged (a pass's, or a full stage's);
 * what the queue did not take stays staged for the next. Relayed (the
 * WAN port's one TX queue is another worker's): as isthd_worker_tx. */
static void
tx_flush(struct isthd_worker *w)
{
	struct isthd_tree *tr = &w->d->tree;
	const struct isthd_tx *t = &w->tx[ISTHD_WAN];
	unsigned int k;

	if (tr->n_tx == 0)
		return;
	if (t->ring != NULL) {
		isthd_worker_tx(w, ISTHD_WAN, tr->tx, tr->n_tx);
		tr->n_tx = 0;
		return;
	}
	k = rte_eth_tx_burst(t->port, t->q, tr->tx, (uint16_t)tr->n_tx);
	isth_ctr_add(&w->st.wan_tx, k);
	if (k > 0 && k < tr->n_tx)
		memmove(tr->tx, tr->tx + k, (tr->n_tx - k) * sizeof(tr->tx[0]));
	tr->n_tx -= k;
}

/* Frame @f (NULL: none, counted) staged for the pass's TX burst. */
static void
stage(struct isthd_worker *w, struct rte_mbuf *f)
{
	struct isthd_tree *tr = &w->d->tree;

	if (unlikely(f == NULL)) {
		isth_ctr_add(&w->st.drop[ISTHD_DROP_tree_no_room], 1);
		return;
	}
	if (unlikely(tr->n_tx == ISTHD_TREE_TX))
		tx_flush(w);
	if (unlikely(tr->n_tx == ISTHD_TREE_TX)) {
		rte_pktmbuf_free(f);
		isth_ctr_add(&w->st.drop[ISTHD_DROP_tx_wan], 1);
		return;
	}
	tr->tx[tr->n_tx++] = f;
}

/* Message @msg to island @s's edge, framed and sealed for it alone, and
 * staged for the pass's TX burst. */
static void
to_peer(struct isthd_worker *w, unsigned int s, const struct rte_mbuf *msg)
{
	struct isthd *d = w->d;
	const struct isthd_peer *peer = d->peer_of[s];

	stage(w, peer != NULL ? isthd_frame_to_peer(d, w->eng, peer, msg, 0) : NULL);
}

/* Chunk @c of round @r's result (@bitmap) to the island, as an AGG of
 * stream 0 (worker 0's emitter numbers, keeps and seals it): without the
 * island's own DATA (@own, when summed in), as every AGG. Chunk
 * accumulator @acc, or a received payload @src. */
static void
to_island(struct isthd_worker *w, uint64_t r, uint32_t c, uint64_t bitmap, uint8_t dtype,
	const uint8_t *acc, const uint8_t *src, const uint8_t *own)
{
	struct isthd_tree *tr = &w->d->tree;
	uint64_t self = bit(w->d->island);
	bool partial = (bitmap | self) != tr->all;
	struct rte_mbuf *m;

	if ((bitmap & ~self) == 0)
		return; /* only the island's own: nothing it lacks */
	m = msg_new(w, ISTH_WIRE_AGG, partial ? ISTH_WIRE_F_PARTIAL : 0, r, c, bitmap & ~self,
		dtype, acc, src, (bitmap & self) ? own : NULL);
	if (m == NULL)
		return;
	if (unlikely(rte_ring_sp_enqueue(tr->agg, m) != 0)) {
		rte_pktmbuf_free(m);
		isth_ctr_add(&w->st.drop[ISTHD_DROP_tree_no_room], 1);
		return;
	}
	isth_ctr_add(partial ? &w->st.tree_result_partial : &w->st.tree_result, 1);
}

/* The result of chunk @c of round @r (@bitmap; payload @acc or @src) to
 * every child of @node. */
static void
to_children(struct isthd_worker *w, const struct isthd_tree_node *node, uint64_t r, uint32_t c,
	uint64_t bitmap, uint8_t dtype, const uint8_t *acc, const uint8_t *src)
{
	uint16_t flags = ISTH_WIRE_F_DOWN | (bitmap != w->d->tree.all ? ISTH_WIRE_F_PARTIAL : 0);
	struct rte_mbuf *msg;

	if (node->children == 0)
		return;
	msg = msg_new(w, ISTH_WIRE_PARTIAL, flags, r, c, bitmap, dtype, acc, src, NULL);
	if (msg == NULL)
		return;
	for (unsigned int s = 0; s < w->d->n_islands; s++) {
		if (!(node->children & bit(s)))
			continue;
		to_peer(w, s, msg);
		isth_ctr_add(&w->st.tree_down, 1);
	}
	rte_pktmbuf_free(msg);
}

/*
 * Pace. What an edge starts on the WAN in a tree round (its PARTIALs up,
 * and at a root its results down) is one stream at its send line's rate,
 * from the round's start + its offset on, chunk after chunk
 * (doc/schedule-file.md): the planner counted each tree link's load at
 * that rate, and the offsets align a chunk's parts at every edge.
 * Unpaced, a subtree complete early left at once, and the WAN's queues
 * held ~265 ms of PARTIALs (doc/isthmusd.md, "Tree rounds"). A result
 * passing down an edge goes on at once: its root paced it. Ready chunks
 * wait by round slot, an older round first, and in a round the lowest
 * chunk first, as planned: in the order they became ready, a leaf's
 * chunks of one tree (all ready at once) held up its chunks of another
 * that waited for a child, past its parent's first cutoff.
 */

/* Chunk @c of round @r is ready to go on: queued for the pace. */
static void
pace_push(struct isthd_worker *w, uint64_t r, uint32_t c)
{
	struct isthd *d = w->d;
	struct isthd_tree *tr = &d->tree;
	unsigned int slot = (unsigned int)(r % ISTHD_TREE_SLOTS);
	struct isthd_tree_pq *q = &tr->pq[slot];
	uint64_t *bits = tr->pace_ready + (size_t)slot * tr->pace_words;

	if (q->round1 != r + 1) {
		/* a round four rounds older: what it never let go is moot */
		isth_ctr_add(&w->st.drop[ISTHD_DROP_tree_unsent], q->n);
		if (q->n)
			memset(bits, 0, tr->pace_words * sizeof(*bits));
		q->round1 = r + 1;
		q->n = 0;
		q->lo = tr->pace_words;
	}
	/* a chunk becomes ready once a round (struct isthd_tree_chunk .up) */
	bits[c / 64] |= 1ull << (c % 64);
	q->n++;
	if (c / 64 < q->lo)
		q->lo = c / 64;
}

/* The lowest chunk ready in @q (slot @slot; not empty). */
static inline uint32_t
pace_lowest(struct isthd_tree *tr, struct isthd_tree_pq *q, unsigned int slot)
{
	const uint64_t *bits = tr->pace_ready + (size_t)slot * tr->pace_words;

	while (bits[q->lo] == 0)
		q->lo++;
	return q->lo * 64u + (uint32_t)__builtin_ctzll(bits[q->lo]);
}

/* Chunk @c of @q (slot @slot) off the pace's bits. */
static inline void
pace_pop(struct isthd_tree *tr, struct isthd_tree_pq *q, unsigned int slot, uint32_t c)
{
	tr->pace_ready[(size_t)slot * tr->pace_words + c / 64] &= ~(1ull << (c % 64));
	q->n--;
}

/* The round slot with the oldest round that has chunks queued, or NULL. */
static struct isthd_tree_pq *
pace_head(struct isthd_tree *tr)
{
	struct isthd_tree_pq *q = NULL;

	for (unsigned int i = 0; i < ISTHD_TREE_SLOTS; i++)
		if (tr->pq[i].n != 0 && (q == NULL || tr->pq[i].round1 < q->round1))
			q = &tr->pq[i];
	return q;
}

/* The chunk ready and let go by the pace (@c of round @r, state @ch,
 * accumulator @acc): its sum to the parent, or from the root down. */
static void
go_on(struct isthd_worker *w, const struct isthd_tree_node *node, uint64_t r, uint32_t c,
	struct isthd_tree_chunk *ch, uint8_t dtype, const uint8_t *acc)
{
	struct rte_mbuf *msg;

	ch->sent = true; /* the accumulator keeps what leaves, for a NACK */
	if (node->parent < 0) {
		to_children(w, node, r, c, ch->have, dtype, acc, NULL);
		return;
	}
	msg = msg_new(w, ISTH_WIRE_PARTIAL, ch->have != node->sub ? ISTH_WIRE_F_PARTIAL : 0, r, c,
		ch->have, dtype, acc, NULL, NULL);
	if (msg == NULL)
		return;
	to_peer(w, (unsigned int)node->parent, msg);
	rte_pktmbuf_free(msg);
	isth_ctr_add(ch->have != node->sub ? &w->st.tree_up_partial : &w->st.tree_up, 1);
}

/* What the pace lets go at @now, while the stage has room for it; a chunk
 * whose round ended, or whose result came down meanwhile, is not sent
 * (tree_unsent). @return chunks taken off the queues. */
static unsigned int
pace_release(struct isthd_worker *w, uint64_t now)
{
	struct isthd *d = w->d;
	struct isthd_tree *tr = &d->tree;
	uint32_t n_chunks = d->shape.n_chunks;
	struct isthd_tree_pq *q;
	unsigned int n = 0;

	while ((q = pace_head(tr)) != NULL) {
		uint64_t r = q->round1 - 1, start = d->clk.epoch_ns + r * d->clk.round_ns;
		unsigned int slot = (unsigned int)(r % ISTHD_TREE_SLOTS);
		size_t i = (size_t)slot * n_chunks;
		uint32_t c = pace_lowest(tr, q, slot);
		const struct isthd_tree_round *tb = isthd_tree_round(tr, r);
		const struct isthd_tree_node *node = &tb->t[c % tb->n_trees];
		struct isthd_tree_chunk *ch = &tr->chunk[i + c];
		uint8_t dtype = d->shape.dtype != ISTH_WIRE_DTYPE_NONE ? d->shape.dtype : ch->dtype;
		uint64_t size = isth_wire_dtype_size(dtype);
		uint64_t cost = (c + 1 == n_chunks ? d->shape.last_elems : d->shape.chunk_elems) *
			size * tb->ps_per_byte / 1000u;
		uint64_t depth = ISTHD_TREE_PACE_BURST * d->shape.chunk_elems * size *
			tb->ps_per_byte / 1000u;

		if (ch->round1 != r + 1 ||
			now >= start + d->clk.round_ns + d->cfg.agg_round_slack_ns ||
			(node->parent >= 0 && (ch->down != 0 || ch->fell))) {
			isth_ctr_add(&w->st.drop[ISTHD_DROP_tree_unsent], 1);
			pace_pop(tr, q, slot, c);
			n++;
			continue;
		}
		if (ISTHD_TREE_TX - tr->n_tx <
				(node->parent < 0
						? (unsigned int)__builtin_popcountll(node->children)
						: 1u) ||
			!isthd_tree_pace_take(&tr->pace_t, start + tb->offset_ns, depth, cost, now))
			break;
		pace_pop(tr, q, slot, c);
		n++;
		ch->gone = true;
		go_on(w, node, r, c, ch, dtype, tr->acc + (i + c) * tr->slot_bytes);
	}
	return n;
}

/* Chunk @ch (@c of round @r, accumulator @acc) has every contribution it
 * waits for, or its cutoff passed: queued for the pace (until it lets the
 * chunk go, a late contribution is still summed); at the root, closed and
 * its result to the island at once. */
static void
send_on(struct isthd_worker *w, const struct isthd_tree_node *node, uint64_t r, uint32_t c,
	struct isthd_tree_chunk *ch, uint8_t dtype, const uint8_t *acc)
{
	ch->up = true;
	if (node->parent < 0) {
		ch->gone = true; /* the island has it: every child gets the same */
		ch->down = ch->have;
		to_island(w, r, c, ch->have, dtype, acc, NULL, own_of(&w->d->tree, acc));
		if (node->children == 0)
			return;
	}
	pace_push(w, r, c);
}

/*
 * Repair. A PARTIAL lost on a hop is asked for again by the hop's
 * receiver, with a chunk NACK (doc/protocol.md, "Tree rounds"): a parent
 * of a child's PARTIAL up, a child of its parent's result down. It is
 * overdue when a later chunk of its tree came from the same edge
 * (isthd_tree_overdue: the pace sends a tree's chunks lowest first, but a
 * chunk that waited for a grandchild leaves late: several chunks back),
 * or at the hop's last call (scan): one round trip (the peer's
 * configured latency, twice) and a margin before what it waits for is
 * given up (a parent's cutoff, a child's fallback at the round's end).
 * The sender resends from what it kept: the accumulator holds a chunk's
 * sum after it went on (nothing more is summed into it) and, at a
 * non-root edge, the result as it came down. A repair that arrives after
 * the chunk's contributors were summed is counted (tree_repairs_wasted),
 * never summed twice.
 */

/* Chunk @c of round @r, not claimed: NULL unless its slot holds @r. */
static struct isthd_tree_chunk *
chunk_peek(struct isthd *d, uint64_t r, uint32_t c, uint8_t **acc)
{
	struct isthd_tree *tr = &d->tree;
	size_t i = (size_t)(r % ISTHD_TREE_SLOTS) * d->shape.n_chunks + c;

	*acc = tr->acc + i * tr->slot_bytes;
	return tr->chunk[i].round1 == r + 1 ? &tr->chunk[i] : NULL;
}

/* Ask island @s's edge again for chunk @c of round @r (state @ch), within
 * the chunk's budget of NACKs: one chunk NACK, sealed for it. */
static void
ask(struct isthd_worker *w, unsigned int s, uint64_t r, uint32_t c, struct isthd_tree_chunk *ch)
{
	struct isthd *d = w->d;
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_NACK,
		.flags = ISTH_WIRE_F_CHUNKS,
		.sender = d->island,
		.count = 1,
		.job = d->cfg.job,
		.round = (uint32_t)r,
		/* the worker's NACK stream, as its clique chunk NACKs */
		.seq = d->auth.on ? w->seq_nack++ : 0,
		.bitmap = bit(s),
	};
	const struct isth_wire_range range = {.first = c, .last = c};
	const struct isthd_peer *peer = d->peer_of[s];
	struct rte_mbuf *msg;
	uint8_t *p;

	if (ch->asks >= ISTHD_TREE_ASKS)
		return;
	ch->asks++; /* spent even without a peer edge to ask (none configured) */
	if (peer == NULL)
		return;
	msg = rte_pktmbuf_alloc(d->ctl_pool);
	if (unlikely(msg == NULL ||
		    (p = (uint8_t *)rte_pktmbuf_append(
			     msg, ISTH_WIRE_HDR_SIZE + ISTH_WIRE_RANGE_SIZE)) == NULL)) {
		rte_pktmbuf_free(msg);
		isth_ctr_add(&w->st.drop[ISTHD_DROP_tree_no_room], 1);
		return;
	}
	isth_wire_put_hdr(p, ISTH_WIRE_HDR_SIZE, &h);
	isth_wire_put_ranges(p + ISTH_WIRE_HDR_SIZE, ISTH_WIRE_RANGE_SIZE, &range, 1);
	stage(w, isthd_repair_frame_to_peer(d, w->eng, peer, msg));
	rte_pktmbuf_free(msg);
	isth_ctr_add(&w->st.tree_nacks_sent, 1);
}

/* A PARTIAL of chunk @c of round @r came from the edge whose bit is
 * @from (@down: the result from the parent): is the chunk it makes
 * overdue (isthd_tree_overdue) still missing from that edge? Asked for. */
static void
overdue(struct isthd_worker *w, const struct isthd_tree_round *tb, uint64_t r, uint32_t c,
	uint64_t from, bool down)
{
	int64_t o = isthd_tree_overdue(c, tb->n_trees);
	struct isthd_tree_chunk *ch;
	uint8_t *acc;

	if (o < 0 || (ch = chunk_peek(w->d, r, (uint32_t)o, &acc)) == NULL)
		return;
	if (down ? ch->down == 0 : !ch->gone && !(ch->heard & from))
		ask(w, (unsigned int)__builtin_ctzll(from), r, (uint32_t)o, ch);
}

/* Island @s's edge asked for chunk @c of round @r (its tree node @node)
 * again: the PARTIAL this edge sent it, if it has one and the budget. */
static void
resend(struct isthd_worker *w, const struct isthd_tree_node *node, uint64_t r, uint32_t c,
	unsigned int s)
{
	struct isthd *d = w->d;
	uint8_t *acc;
	struct isthd_tree_chunk *ch = chunk_peek(d, r, c, &acc);
	uint8_t dtype;
	bool up = node->parent == (int)s;
	struct rte_mbuf *msg;

	/* up: what it sent, while no result came down (then the parent has
	 * gone on, and the accumulator holds the result); down: a result */
	if (ch == NULL ||
		(up ? !ch->sent || ch->down != 0
		    : ch->down == 0 || ch->fell || (node->parent < 0 && !ch->sent))) {
		isth_ctr_add(&w->st.tree_nacks_unserved, 1);
		return;
	}
	if (ch->resends >= ISTHD_TREE_RESENDS) {
		isth_ctr_add(&w->st.drop[ISTHD_DROP_tree_nack_budget], 1);
		return;
	}
	ch->resends++;
	dtype = d->shape.dtype != ISTH_WIRE_DTYPE_NONE && !ch->kept ? d->shape.dtype : ch->dtype;
	if (up)
		msg = msg_new(w, ISTH_WIRE_PARTIAL,
			ISTH_WIRE_F_RESENT | (ch->have != node->sub ? ISTH_WIRE_F_PARTIAL : 0), r,
			c, ch->have, dtype, acc, NULL, NULL);
	else
		msg = msg_new(w, ISTH_WIRE_PARTIAL,
			ISTH_WIRE_F_RESENT | ISTH_WIRE_F_DOWN |
				(ch->down != d->tree.all ? ISTH_WIRE_F_PARTIAL : 0),
			r, c, ch->down, dtype, ch->kept ? NULL : acc, ch->kept ? acc : NULL, NULL);
	if (msg == NULL)
		return;
	to_peer(w, s, msg);
	rte_pktmbuf_free(msg);
	isth_ctr_add(&w->st.tree_resent, 1);
}

enum isthd_drop
isthd_tree_nack_admit(const struct isthd *d, const struct isth_wire_pkt *p)
{
	const struct isthd_tree_round *tb = isthd_tree_round(&d->tree, p->hdr.round);
	const struct isthd_peer *peer = d->peer_of[p->hdr.sender];
	int s = p->hdr.sender;
	struct isth_wire_range rg;
	uint64_t named = 0;

	if (tb == NULL)
		return ISTHD_DROP_tree_not_tree;
	if (peer == NULL || p->addr.src_ip != peer->ip || p->hdr.bitmap != bit(d->island))
		return ISTHD_DROP_tree_nack_bad;
	/* sizes first, before any walk over the chunks (first <= last: wire) */
	for (unsigned int i = 0; i < p->hdr.count; i++) {
		isth_wire_get_range(p, i, &rg);
		named += rg.last - rg.first + 1;
		if (rg.last >= d->shape.n_chunks || named > ISTHD_TREE_NACK_CHUNKS)
			return ISTHD_DROP_tree_nack_bad;
	}
	for (unsigned int i = 0; i < p->hdr.count; i++) {
		isth_wire_get_range(p, i, &rg);
		for (uint64_t c = rg.first; c <= rg.last; c++) {
			const struct isthd_tree_node *node = &tb->t[c % tb->n_trees];

			if (node->parent != s && !(node->children & bit((unsigned int)s)))
				return ISTHD_DROP_tree_nack_not_edge;
		}
	}
	return ISTHD_DROP_MAX;
}

void
isthd_tree_nack(struct isthd_worker *w, const struct isth_wire_pkt *p)
{
	const struct isthd_tree_round *tb = isthd_tree_round(&w->d->tree, p->hdr.round);
	struct isth_wire_range rg;

	for (unsigned int i = 0; i < p->hdr.count; i++) {
		isth_wire_get_range(p, i, &rg);
		for (uint64_t c = rg.first; c <= rg.last; c++)
			resend(w, &tb->t[c % tb->n_trees], p->hdr.round, (uint32_t)c,
				p->hdr.sender);
	}
}

/* Contribution @p refused for @why: counted. A repair (F_RESENT) that
 * finds its chunk summed or gone on was asked for while the first copy
 * was on its way: not summed, counted as such (tree_repairs_wasted). */
static void
refused(struct isthd_worker *w, const struct isth_wire_pkt *p, enum isthd_drop why)
{
	if ((p->hdr.flags & ISTH_WIRE_F_RESENT) &&
		(why == ISTHD_DROP_tree_duplicate || why == ISTHD_DROP_tree_late))
		isth_ctr_add(&w->st.tree_repairs_wasted, 1);
	else
		isth_ctr_add(&w->st.drop[why], 1);
}

/* The dtype a chunk's sums are sent in: the DATA's (the round's shape,
 * or with dtype = any the first contribution's). */
static inline uint8_t
chunk_dtype(const struct isthd *d, const struct isth_wire_pkt *p)
{
	return d->shape.dtype != ISTH_WIRE_DTYPE_NONE ? d->shape.dtype : p->hdr.dtype;
}

/* Chunk @c of round @r as chunk_of would find it, claiming nothing: NULL
 * if its slot holds a later round (@r is over), a chunk with nothing in
 * if it holds an older one (chunk_of would clear it for @r). */
static const struct isthd_tree_chunk *
chunk_state(const struct isthd *d, uint64_t r, uint32_t c)
{
	static const struct isthd_tree_chunk fresh;
	const struct isthd_tree_chunk *ch =
		&d->tree.chunk[(size_t)(r % ISTHD_TREE_SLOTS) * d->shape.n_chunks + c];

	if (likely(ch->round1 == r + 1))
		return ch;
	return ch->round1 > r + 1 ? NULL : &fresh;
}

/* Why the chunk's state refuses contribution @p (the island's DATA or a
 * child's PARTIAL, bitmap @bm) now, without side effects (ISTHD_DROP_MAX:
 * it would be summed): so that its seq moves the replay window only once
 * it will be (doc/protocol.md, receive step 8). */
static enum isthd_drop
up_refusal(const struct isthd *d, const struct isth_wire_pkt *p, uint64_t bm)
{
	const struct isthd_tree_chunk *ch = chunk_state(d, p->hdr.round, p->hdr.chunk);

	if (unlikely(ch == NULL ||
		    d->tree.cut[p->hdr.round % ISTHD_TREE_SLOTS].round1 > p->hdr.round + 1))
		return ISTHD_DROP_round_late;
	if (unlikely(ch->gone))
		return ISTHD_DROP_tree_late; /* sent on without it */
	if (unlikely((ch->have & bm) == bm))
		return ISTHD_DROP_tree_duplicate;
	if (unlikely(ch->have & bm))
		return ISTHD_DROP_tree_overlap;
	if (unlikely(d->shape.dtype == ISTH_WIRE_DTYPE_NONE && ch->have &&
		    p->hdr.dtype != ch->dtype))
		return ISTHD_DROP_data_bad_dtype;
	return ISTHD_DROP_MAX;
}

/* Why the chunk's state refuses result @p (a PARTIAL down from the
 * parent, tree node @node) now, without side effects. Of this edge's
 * subtree the result holds what this edge sent up, or nothing (that
 * PARTIAL lost, or never sent): anything else is not a sum it can hand
 * on, and the island's own values (taken out of its AGG when the bitmap
 * names it) would be taken out of a sum without them. */
static enum isthd_drop
down_refusal(
	const struct isthd *d, const struct isthd_tree_node *node, const struct isth_wire_pkt *p)
{
	const struct isthd_tree_chunk *ch = chunk_state(d, p->hdr.round, p->hdr.chunk);
	uint64_t sent, mine;

	if (unlikely(ch == NULL))
		return ISTHD_DROP_round_late;
	if (unlikely(ch->down != 0))
		return ch->fell ? ISTHD_DROP_tree_late : ISTHD_DROP_tree_duplicate;
	sent = ch->gone ? ch->have : 0;
	mine = p->hdr.bitmap & node->sub;
	if (unlikely(mine != 0 && mine != sent))
		return ISTHD_DROP_tree_bad_bitmap;
	return ISTHD_DROP_MAX;
}

/* Sum contribution @p (the island's DATA or a child's PARTIAL, bitmap
 * @bm, from the edge whose bit is @from; up_refusal passed, its replay
 * window moved) into its chunk, once; send it on when the island and
 * every child have been heard: a child sends once, so what its bitmap
 * lacks is not coming (it cut off without it). */
static void
sum_up(struct isthd_worker *w, const struct isth_wire_pkt *p, uint64_t bm, uint64_t from)
{
	struct isthd *d = w->d;
	const struct isthd_tree_round *tb = isthd_tree_round(&d->tree, p->hdr.round);
	unsigned int t = p->hdr.chunk % tb->n_trees;
	const struct isthd_tree_node *node = &tb->t[t];
	struct isthd_tree_cut *cut = cut_of(&d->tree, p->hdr.round);
	struct isthd_tree_chunk *ch;
	uint8_t *acc;

	/* up_refusal saw neither slot hold a later round: both claimed */
	ch = chunk_of(d, p->hdr.round, p->hdr.chunk, &acc);
	if (ch->have == 0)
		ch->dtype = p->hdr.dtype;
	acc_add(&d->tree, acc, p, ch->have == 0);
	ch->have |= bm;
	ch->heard |= from;
	cut->seen[t] |= from;
	/* alive after all: what is not ready yet waits for it again */
	cut->absent[t] &= ~from;
	/* the island's own, as it sent it: taken out of its AGG again */
	if (bm == bit(d->island))
		memcpy(own_of(&d->tree, acc), p->payload, p->payload_size);
	if (!ch->up && (chunk_ready(d, node, cut, t, ch) || ch->cut))
		send_on(w, node, p->hdr.round, p->hdr.chunk, ch, chunk_dtype(d, p), acc);
	if (from != bit(d->island))
		overdue(w, tb, p->hdr.round, p->hdr.chunk, from, false);
}

bool
isthd_tree_island_data(struct isthd_worker *w, struct rte_mbuf *m, const struct isth_wire_pkt *p,
	unsigned int host)
{
	/* as a clique round's peer DATA: one island's NaN would poison its
	 * subtree's sum and the root's result */
	enum isthd_drop why = isthd_values_refusal(&w->d->cfg, p, 1);
	uint64_t me = bit(w->d->island);

	if (likely(why == ISTHD_DROP_MAX))
		why = up_refusal(w->d, p, me);
	/* every check passed: only now may its seq move the window */
	if (likely(why == ISTHD_DROP_MAX))
		why = isthd_auth_commit(w, ISTH_AUTH_UP, p, host);
	if (unlikely(why != ISTHD_DROP_MAX))
		refused(w, p, why);
	else
		sum_up(w, p, me, me); /* reads @m's payload */
	rte_pktmbuf_free(m);
	if (why != ISTHD_DROP_MAX)
		return false;
	isth_ctr_add(&w->st.tree_data, 1);
	return true;
}

enum isthd_drop
isthd_tree_values(const struct isthd *d, const struct isth_wire_pkt *p)
{
	return isthd_values_refusal(&d->cfg, p, (unsigned int)__builtin_popcountll(p->hdr.bitmap));
}

enum isthd_drop
isthd_tree_admit(const struct isthd *d, const struct isth_wire_pkt *p)
{
	const struct isthd_tree_round *tb = isthd_tree_round(&d->tree, p->hdr.round);
	const struct isthd_tree_node *node;
	unsigned int s = p->hdr.sender;

	if (tb == NULL)
		return ISTHD_DROP_tree_not_tree;
	node = &tb->t[p->hdr.chunk % tb->n_trees];
	if (p->hdr.flags & ISTH_WIRE_F_DOWN)
		return node->parent == (int)s ? ISTHD_DROP_MAX : ISTHD_DROP_tree_not_parent;
	if (!(node->children & bit(s)))
		return ISTHD_DROP_tree_not_child;
	/* a child speaks for its own subtree only (without itself when its
	 * island's DATA missed its cutoff) */
	if ((p->hdr.bitmap & ~node->sub_of[s]) != 0)
		return ISTHD_DROP_tree_bad_bitmap;
	return ISTHD_DROP_MAX;
}

bool
isthd_tree_partial(struct isthd_worker *w, const struct isth_wire_pkt *p)
{
	struct isthd *d = w->d;
	const struct isthd_tree_round *tb = isthd_tree_round(&d->tree, p->hdr.round);
	const struct isthd_tree_node *node = &tb->t[p->hdr.chunk % tb->n_trees];
	bool down = (p->hdr.flags & ISTH_WIRE_F_DOWN) != 0;
	enum isthd_drop why = down ? down_refusal(d, node, p) : up_refusal(d, p, p->hdr.bitmap);
	struct isthd_tree_chunk *ch;
	uint8_t *acc;

	/* every check passed: only now may its seq move the window */
	if (likely(why == ISTHD_DROP_MAX))
		why = isthd_auth_commit(w, ISTH_AUTH_WAN, p, 0);
	if (unlikely(why != ISTHD_DROP_MAX)) {
		refused(w, p, why);
		return false;
	}
	isth_ctr_add(&w->st.tree_in, 1);
	if (!down) {
		sum_up(w, p, p->hdr.bitmap, bit(p->hdr.sender));
		return true;
	}
	/* down_refusal saw the slot hold no later round: claimed */
	ch = chunk_of(d, p->hdr.round, p->hdr.chunk, &acc);
	/* closed: nothing more goes up once the result came down */
	ch->up = ch->gone = true;
	ch->down = p->hdr.bitmap;
	to_children(
		w, node, p->hdr.round, p->hdr.chunk, p->hdr.bitmap, p->hdr.dtype, NULL, p->payload);
	to_island(w, p->hdr.round, p->hdr.chunk, p->hdr.bitmap, p->hdr.dtype, NULL, p->payload,
		own_of(&d->tree, acc));
	/* kept for a child's NACK: the accumulator sums nothing more */
	memcpy(acc, p->payload, p->payload_size);
	ch->kept = true;
	ch->dtype = p->hdr.dtype;
	overdue(w, tb, p->hdr.round, p->hdr.chunk, bit(p->hdr.sender), true);
	return true;
}

/*
 * Tree @t of round @r: its first cutoff at this edge passed. Who of its
 * children and its island has contributed nothing yet is absent for the
 * round: no chunk waits for them, and what became ready without them
 * goes on now (a chunk with nothing in stays open, as at the cutoff).
 * So a dead child costs its parent a share of the slack, not the whole
 * stream's wait until the cutoff, which then left in one paced batch that
 * took the payload's time again and ran past the cutoffs above it.
 */
static void
first_cutoff(struct isthd_worker *w, uint64_t r, const struct isthd_tree_round *tb, unsigned int t,
	struct isthd_tree_cut *cut)
{
	struct isthd *d = w->d;
	const struct isthd_tree_node *node = &tb->t[t];

	cut->absent[t] = (node->children | bit(d->island)) & ~cut->seen[t];
	if (cut->absent[t] == 0)
		return;
	for (uint32_t c = t; c < d->shape.n_chunks; c += tb->n_trees) {
		uint8_t *acc;
		struct isthd_tree_chunk *ch = chunk_of(d, r, c, &acc);

		if (ch == NULL || ch->up || !chunk_ready(d, node, cut, t, ch))
			continue;
		/* nothing in: left open, not cut. Its first contribution
		 * finds the others absent and goes on at once (chunk_ready),
		 * but one who shows up after all clears its absent bit and is
		 * waited for again; a cut chunk would go on without it */
		if (ch->have == 0)
			continue;
		send_on(w, node, r, c, ch,
			d->shape.dtype != ISTH_WIRE_DTYPE_NONE ? d->shape.dtype : ch->dtype, acc);
	}
}

/* Tree @t of round @r: its cutoff at this edge passed. What its chunks
 * have goes on as partials; a chunk with nothing is closed (the parent
 * names this subtree missing). */
static void
cutoff(struct isthd_worker *w, uint64_t r, const struct isthd_tree_round *tb, unsigned int t)
{
	struct isthd *d = w->d;

	for (uint32_t c = t; c < d->shape.n_chunks; c += tb->n_trees) {
		uint8_t *acc;
		struct isthd_tree_chunk *ch = chunk_of(d, r, c, &acc);

		if (ch == NULL || ch->up)
			continue;
		if (ch->have == 0) {
			ch->cut = true; /* open: what comes goes on at once */
			continue;
		}
		send_on(w, &tb->t[t], r, c, ch,
			d->shape.dtype != ISTH_WIRE_DTYPE_NONE ? d->shape.dtype : ch->dtype, acc);
	}
}

/* Round @r's last cutoff: a chunk whose result never came down (its
 * parent, or an edge above, gone) is handed to the island as what this
 * subtree summed, a partial naming everyone else missing. */
static void
fallback(struct isthd_worker *w, uint64_t r)
{
	struct isthd *d = w->d;

	for (uint32_t c = 0; c < d->shape.n_chunks; c++) {
		uint8_t *acc;
		struct isthd_tree_chunk *ch = chunk_of(d, r, c, &acc);

		if (ch == NULL || ch->down != 0 || ch->have == 0)
			continue;
		ch->up = ch->gone = true;
		ch->down = ch->have;
		ch->fell = true; /* a result after it is late, not a second one */
		isth_ctr_add(&w->st.tree_fallback, 1);
		to_island(w, r, c, ch->have,
			d->shape.dtype != ISTH_WIRE_DTYPE_NONE ? d->shape.dtype : ch->dtype, acc,
			NULL, own_of(&d->tree, acc));
	}
}

/*
 * When this edge's cutoff of tree @nd in round @r (table @tb) is: the end
 * of its stream as planned (the round's start + its offset + the payload
 * at its rate: with the planner's aligned offsets every part of its last
 * chunk is in by then) plus a share of [agg] round_slack for each level
 * of its subtree, h of H + 1 (H the tree's height): a child's cutoff
 * comes a share before its parent's, and the root's leaves one share of
 * the slack for its result's way down (the plan's T covers the way down
 * itself). Never after the round's end + slack. (The even shares of
 * T + slack used before cut deep edges off before their children's last
 * chunks were due: on nine cities LON's at 109 ms, AMS's last chunk due
 * at 136 ms.)
 * @first: its first cutoff (first_cutoff), the same shares from the
 * stream's start instead of its end.
 */
static uint64_t
cut_at(const struct isthd *d, const struct isthd_tree_round *tb, const struct isthd_tree_node *nd,
	uint64_t r, bool first)
{
	uint64_t start = d->clk.epoch_ns + r * d->clk.round_ns, slack = d->cfg.agg_round_slack_ns;
	uint64_t at = start + tb->offset_ns + (first ? 0 : tb->span_ns) +
		slack * nd->sub_height / (nd->height + 1u);

	return RTE_MIN(at, start + d->clk.round_ns + slack);
}

/* Ask again for what chunks of tree @t of round @r (table @tb, state
 * @cut) still miss from @who: its children's PARTIALs up (those not
 * absent), its parent's result down. */
static void
ask_tree(struct isthd_worker *w, uint64_t r, const struct isthd_tree_round *tb, unsigned int t,
	const struct isthd_tree_cut *cut, uint64_t who)
{
	struct isthd *d = w->d;
	const struct isthd_tree_node *node = &tb->t[t];
	bool down = node->parent >= 0 && (who & bit((unsigned int)node->parent));

	for (uint32_t c = t; c < d->shape.n_chunks; c += tb->n_trees) {
		struct isthd_tree_chunk *ch;
		uint64_t miss;
		uint8_t *acc;

		if ((ch = chunk_peek(d, r, c, &acc)) == NULL)
			continue;
		miss = ch->gone ? 0 : who & node->children & ~ch->heard & ~cut->absent[t];
		for (; miss != 0; miss &= miss - 1)
			ask(w, (unsigned int)__builtin_ctzll(miss), r, c, ch);
		if (down && ch->down == 0)
			ask(w, (unsigned int)node->parent, r, c, ch);
	}
}

/* Is it island @s's edge's last call at @now for something due at @at:
 * a NACK now, and the resend, one round trip later, just make it? */
static inline bool
last_call(const struct isthd *d, unsigned int s, uint64_t at, uint64_t now)
{
	const struct isthd_peer *peer = d->peer_of[s];
	uint64_t rtt = peer != NULL ? 2 * peer->latency_ns : 0;

	return now + rtt + ISTHD_TREE_ASK_MARGIN_NS >= at;
}

/* The repair's scans of round @r (table @tb, state @cut) due at @now:
 * at each child's last call before this edge's cutoff of the tree, that
 * child's chunks still missing; at the parent's last call before the
 * round's end (the fallback), the results that have not come down. (A
 * scan at the stream's planned end too asked for chunks on their way: 30
 * NACKs a clean testbed run at two edges, no fewer partials at 2 % loss.) */
static void
scan(struct isthd_worker *w, uint64_t r, const struct isthd_tree_round *tb,
	struct isthd_tree_cut *cut, uint64_t now)
{
	struct isthd *d = w->d;
	uint64_t end = d->clk.epoch_ns + (r + 1) * d->clk.round_ns + d->cfg.agg_round_slack_ns;

	for (unsigned int t = 0; t < tb->n_trees; t++) {
		const struct isthd_tree_node *node = &tb->t[t];
		uint64_t at = cut_at(d, tb, node, r, false), due = 0;
		uint64_t open = node->children & ~cut->called[t] & ~cut->absent[t];

		for (; open != 0; open &= open - 1)
			if (last_call(d, (unsigned int)__builtin_ctzll(open), at, now))
				due |= open & -open;
		if (node->parent >= 0 && !(cut->called[t] & bit((unsigned int)node->parent)) &&
			last_call(d, (unsigned int)node->parent, end, now))
			due |= bit((unsigned int)node->parent);
		cut->called[t] |= due;
		if (due != 0)
			ask_tree(w, r, tb, t, cut, due);
	}
}

/* Round @r's cutoffs that passed at @now; true when all of them have. */
static bool
round_cutoffs(struct isthd_worker *w, uint64_t r, uint64_t now, unsigned int *work)
{
	struct isthd *d = w->d;
	struct isthd_tree *tr = &d->tree;
	const struct isthd_tree_round *tb = isthd_tree_round(tr, r);
	struct isthd_tree_cut *cut = cut_of(tr, r);
	/* the round's end as the aggregator sees it */
	uint64_t end = d->clk.epoch_ns + (r + 1) * d->clk.round_ns + d->cfg.agg_round_slack_ns;
	uint32_t want = ISTHD_TREE_FINAL;

	if (cut == NULL)
		return true; /* a later round holds the slot: long over */
	if (tb == NULL) {
		cut->done = want;
		return true;
	}
	want |= ((1u << tb->n_trees) - 1) * (1u + ISTHD_TREE_FIRST);
	for (unsigned int t = 0; t < tb->n_trees; t++) {
		if (!(cut->done & (ISTHD_TREE_FIRST << t)) &&
			now >= cut_at(d, tb, &tb->t[t], r, true)) {
			first_cutoff(w, r, tb, t, cut);
			cut->done |= ISTHD_TREE_FIRST << t;
			(*work)++;
		}
		if ((cut->done & (1u << t)) || now < cut_at(d, tb, &tb->t[t], r, false))
			continue;
		cutoff(w, r, tb, t);
		cut->done |= 1u << t;
		(*work)++;
	}
	if (!(cut->done & ISTHD_TREE_FINAL))
		scan(w, r, tb, cut, now);
	/* the result is due by the end: an island waits a little past it */
	if (!(cut->done & ISTHD_TREE_FINAL) && now >= end) {
		fallback(w, r);
		cut->done |= ISTHD_TREE_FINAL;
		(*work)++;
	}
	return cut->done == want;
}

/* The RX worker: cutoffs of tree rounds that passed at @now_ns. */
static unsigned int
expire(struct isthd_worker *w, uint64_t now_ns)
{
	struct isthd *d = w->d;
	struct isthd_tree *tr = &d->tree;
	uint64_t pub, T = d->clk.round_ns;
	unsigned int work = 0;

	if (tr->n_rounds == 0 || now_ns < d->clk.epoch_ns)
		return 0;
	if (tr->next_cut == 0) /* the round running when the worker started */
		tr->next_cut = (now_ns - d->clk.epoch_ns) / T + 1;
	pub = __atomic_load_n(&d->published, __ATOMIC_ACQUIRE);
	for (uint64_t r = tr->next_cut - 1; r < pub; r++) {
		if (now_ns < d->clk.epoch_ns + r * T)
			break;
		if (round_cutoffs(w, r, now_ns, &work) && r + 1 == tr->next_cut)
			tr->next_cut++;
	}
	return work;
}

unsigned int
isthd_tree_poll(struct isthd_worker *w, uint64_t now_ns)
{
	unsigned int work;

	if (w->d->tree.n_rounds == 0)
		return 0;
	work = expire(w, now_ns);
	work += pace_release(w, now_ns);
	tx_flush(w);
	return work;
}

unsigned int
isthd_tree_drain(struct isthd_worker *w, struct rte_mbuf **out, unsigned int cap)
{
	struct rte_ring *ring = w->d->tree.agg;

	if (ring == NULL || cap == 0 || !(w->role & ISTHD_ROLE_RX))
		return 0;
	return rte_ring_sc_dequeue_burst(ring, (void **)out, cap, NULL);
}
