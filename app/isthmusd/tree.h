/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHD_TREE_H
#define ISTHD_TREE_H

/*
 * Tree rounds (tree.c; doc/isthmusd.md, "Tree rounds"): a round whose
 * schedule has trees is reduced up the chunk's tree of edges and its
 * result sent down it, instead of every island's DATA going to every peer.
 * Included by isthd.h, after its constants.
 *
 * Who writes what: the tables (struct isthd_tree_round) are built at
 * set-up from the schedule and are read-only after (a reload that changes
 * them is refused); everything else is the RX worker's (ISTHD_ROLE_RX),
 * which receives every message a tree round brings (the island's DATA, the
 * peers' PARTIALs) and hands the island's AGGs to worker 0's emitter
 * through a ring it alone fills.
 */
#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "isth_agg.h"
#include "isth_sched.h"
#include "isth_wire.h"

#include "config.h"

struct isthd;
struct isthd_worker;

/* Trees of one round at most (the schedule format's bound). */
#define ISTHD_TREE_MAX 8
/* Rounds whose chunk state is kept, slot r % ISTHD_TREE_SLOTS: the round
 * before the running one (its result may still travel down), the running
 * one and the next (the island's DATA may come early). */
#define ISTHD_TREE_SLOTS 4
/* Frames to peer edges staged for one TX burst (tree.c, tx_stage). */
#define ISTHD_TREE_TX 64
/* The tree pacer's bucket, in chunks: what may leave at once after the
 * stream waited (a child's late part), never at a round's start. */
#define ISTHD_TREE_PACE_BURST 4
/* Repair (tree.c, "Repair"): a chunk this many of its tree's chunks
 * behind one that came from the same edge, and still missing from it, is
 * overdue (the pace sends a tree's chunks lowest first; a chunk held up
 * by a grandchild leaves late, hence not the one just before) */
#define ISTHD_TREE_NACK_LAG 8
/* NACKs an edge sends for one chunk of one round, at most */
#define ISTHD_TREE_ASKS 3
/* Chunks one tree NACK may name in all (an edge names one; the bound
 * keeps a neighbour's NACK from making the RX worker walk the round's
 * chunk ids, ranges of up to 2^32, per packet) */
#define ISTHD_TREE_NACK_CHUNKS 8
/* resends an edge makes of one chunk of one round, at most, whoever asks:
 * a peer's NACKs cannot make it send more than this */
#define ISTHD_TREE_RESENDS 8
/* a last call's margin over the hop's round trip (tree.c, last_call):
 * the sender's pass and queue, the receiver's */
#define ISTHD_TREE_ASK_MARGIN_NS 10000000ull

/* The local edge's place in one tree of one round. init. */
struct isthd_tree_node {
	int parent; /* the parent edge's island, -1: the local edge is the root */
	int root; /* the root edge's island */
	uint8_t depth; /* hops from the root */
	uint8_t height; /* the tree's: hops from its root to its deepest edge */
	uint8_t sub_height; /* the local edge's subtree's: hops down to its deepest edge */
	uint64_t children; /* islands whose parent is the local island */
	uint64_t sub; /* the local island's subtree, itself included */
	uint64_t sub_of[ISTHD_MAX_PEERS]; /* a child's subtree (0: not a child) */
};

/* One cycle round's trees as the local edge sees them, and its send line
 * (doc/schedule-file.md: in a tree round, when the island's contribution
 * starts entering the edge and the rate the edge forwards its tree
 * traffic at). init. */
struct isthd_tree_round {
	unsigned int n_trees; /* 0: a clique round (no tree) */
	uint64_t offset_ns; /* the send line's offset */
	uint64_t ps_per_byte; /* its rate (a profile's mean) as picoseconds a payload byte */
	uint64_t span_ns; /* the round's payload at that rate: the stream's planned length */
	struct isthd_tree_node t[ISTHD_TREE_MAX];
};

/* One chunk of one round: the RX worker's. */
struct isthd_tree_chunk {
	uint64_t round1; /* round + 1 whose chunk this is, 0: none yet */
	uint64_t have; /* contributors summed into its accumulator */
	/* who of the chunk's tree node's children and the local island has
	 * been summed (a child's PARTIAL, whatever its bitmap: a child sends
	 * once, so what it left out is not coming) */
	uint64_t heard;
	uint64_t down; /* the result's contributors handed to the island, 0: none yet */
	bool up; /* ready to go on (to the parent; the root: its result down),
		  * queued for the pace (tree.c, pace_push) */
	/* sent on (the root: its result fixed), or its result came down, or
	 * the round fell: nothing more is summed. A chunk queued and not yet
	 * let go by the pace still takes a late contribution. */
	bool gone;
	bool cut; /* its cutoff passed with nothing in: what comes goes on at once */
	bool fell; /* the round ended without a result: the subtree's sum to the island */
	/* its pace let it go: the PARTIAL up (the root: its result down) was
	 * sent, from the accumulator, which keeps it for a resend */
	bool sent;
	/* its result came down: the accumulator holds it as received (the
	 * payload bytes, dtype @dtype), for a child's NACK */
	bool kept;
	uint8_t asks; /* NACKs sent for it (ISTHD_TREE_ASKS) */
	uint8_t resends; /* resends of it served (ISTHD_TREE_RESENDS) */
	uint8_t dtype; /* of its first contribution; @kept: of the result */
};

/* Cutoffs of one round slot: the RX worker's. */
struct isthd_tree_cut {
	uint64_t round1; /* round + 1 the fields are of */
	/* bit t: tree t's cutoff passed; ISTHD_TREE_FINAL: the last;
	 * ISTHD_TREE_FIRST << t: tree t's first cutoff passed */
	uint32_t done;
	/* per tree, of the local edge's children and its island: who has
	 * contributed to any chunk of the round */
	uint64_t seen[ISTHD_TREE_MAX];
	/* per tree: who had contributed nothing at its first cutoff, so
	 * that no chunk waits for them (tree.c, first_cutoff) */
	uint64_t absent[ISTHD_TREE_MAX];
	/* per tree: the children (their PARTIALs up) and the parent (its
	 * results down) whose last call passed: asked for (tree.c, scan) */
	uint64_t called[ISTHD_TREE_MAX];
};
#define ISTHD_TREE_FINAL (1u << ISTHD_TREE_MAX)
#define ISTHD_TREE_FIRST (1u << 16)

/* Chunks of one round slot ready to go on: a bit per chunk (its words in
 * struct isthd_tree .pace_ready), the lowest first. The RX worker's. */
struct isthd_tree_pq {
	uint64_t round1; /* round + 1 they are of (0: none yet) */
	uint32_t lo; /* no bit set in the words below this one */
	uint32_t n; /* bits set */
};

struct isthd_tree {
	/* init: read-only after launch */
	unsigned int n_rounds; /* the schedule's cycle; 0: no tree round */
	struct isthd_tree_round *rounds; /* [n_rounds] */
	uint64_t all; /* every island */

	uint32_t slot_bytes; /* accumulator bytes per chunk */
	struct isth_agg_kernels k; /* the summation kernels */
	/* init: the RX worker (SP) -> worker 0's emitter (SC, the same
	 * lcore): AGGs for the island, messages not yet framed */
	struct rte_ring *agg;
	/* the RX worker's */
	struct isthd_tree_chunk *chunk; /* [ISTHD_TREE_SLOTS * n_chunks] */
	uint8_t *acc; /* [ISTHD_TREE_SLOTS * n_chunks * slot_bytes] */
	/* the island's own DATA of each chunk, as acc: its AGGs leave it out */
	uint8_t *own;
	struct isthd_tree_cut cut[ISTHD_TREE_SLOTS];
	uint64_t next_cut; /* oldest round whose cutoffs are not all past, +1 (0: unset) */
	uint64_t seq; /* auth on: next PARTIAL seq, a stream of its own */
	/* the pace (tree.c, "Pace"): chunks ready to go on, by round slot,
	 * [ISTHD_TREE_SLOTS * pace_words] words, and the bucket's empty
	 * instant (ns, the edge's clock): one stream at the send line's rate */
	struct isthd_tree_pq pq[ISTHD_TREE_SLOTS];
	uint64_t *pace_ready;
	uint32_t pace_words; /* init: words of a slot's bits, n_chunks / 64 up */
	uint64_t pace_t;
	/* frames to peer edges staged for one TX burst a pass; what the
	 * queue did not take stays for the next pass */
	struct rte_mbuf *tx[ISTHD_TREE_TX];
	unsigned int n_tx;
};

/* tree.c */
/* The tree tables of schedule @s for island @self (NULL, 0 with no tree
 * round); @err says why a tree cannot be used. 0 or a negative errno. */
int isthd_tree_tables(const struct isth_sched *s, int self, struct isthd_tree_round **out,
	unsigned int *n_rounds, char *err, size_t err_size);
/*
 * Bytes of the accumulators isthd_tree_setup takes from hugepages for
 * schedule @s, a round of @n_chunks chunks of up to @max_elems elements:
 * ISTHD_TREE_SLOTS rounds x @n_chunks x 2 (the sums, the island's own
 * DATA) x a slot (4 bytes an element, 64-byte aligned); 0 when no round
 * of @s has trees. Beside [agg] memory, never out of it: that is the
 * backend's (doc/deploy.md, "Sizing"). setup.c, tree.c; unit tests.
 */
uint64_t isthd_tree_bytes(const struct isth_sched *s, uint32_t n_chunks, uint32_t max_elems);
/* Set-up: tables, chunk state, the AGG ring (after the shape and the
 * clock). 0 or a negative errno with @err set. */
int isthd_tree_setup(struct isthd *d, char *err, size_t err_size);
void isthd_tree_fini(struct isthd *d);
/* ctl, reload: does schedule @s have the trees running now? */
bool isthd_tree_same(const struct isthd *d, const struct isth_sched *s);

/* Is round @r a tree round? Any thread (init tables). */
static inline const struct isthd_tree_round *
isthd_tree_round(const struct isthd_tree *tr, uint64_t r)
{
	const struct isthd_tree_round *tb;

	if (tr->n_rounds == 0)
		return NULL;
	tb = &tr->rounds[r % tr->n_rounds];
	return tb->n_trees ? tb : NULL;
}

/*
 * Why the values of DATA or PARTIAL @p, a sum of @n islands' values, are
 * refused (ISTHD_DROP_MAX: not): a NaN or an infinity (fp32, bf16) would
 * poison every sum it reaches; with [agg] max_abs (a bound on one island's
 * elements), an element above @n x max_abs. One vectorised pass (lib/agg);
 * only a refused payload is read again to name the reason. rx.c, tree.c.
 */
static inline enum isthd_drop
isthd_values_refusal(const struct isthd_config *cfg, const struct isth_wire_pkt *p, unsigned int n)
{
	if (likely(!cfg->agg_max_abs_on))
		return likely(isth_agg_finite(p->hdr.dtype, p->payload, p->hdr.count))
			? ISTHD_DROP_MAX
			: ISTHD_DROP_data_nonfinite;
	if (likely(isth_agg_within(
		    p->hdr.dtype, p->payload, p->hdr.count, cfg->agg_max_abs * (float)n)))
		return ISTHD_DROP_MAX;
	return isth_agg_finite(p->hdr.dtype, p->payload, p->hdr.count) ? ISTHD_DROP_data_too_large
								       : ISTHD_DROP_data_nonfinite;
}

/* The RX worker: island DATA @p of a tree round from island host @host
 * (verified, its round, shape and host admitted, its replay window not
 * moved yet): its values checked as a peer's DATA (isthd_values_refusal),
 * then against its chunk's state; only if every check passed, its replay
 * window moved (isthd_auth_commit) and it is summed into its chunk.
 * Refusals counted. Takes @m. true: summed. */
bool isthd_tree_island_data(struct isthd_worker *w, struct rte_mbuf *m,
	const struct isth_wire_pkt *p, unsigned int host);
/* Why PARTIAL @p's values are refused (ISTHD_DROP_MAX: not): a NaN or an
 * infinity, or, [agg] max_abs set, an element above max_abs x the islands
 * its bitmap sums (max_abs bounds one island's DATA; a PARTIAL is a sum). */
enum isthd_drop isthd_tree_values(const struct isthd *d, const struct isth_wire_pkt *p);
/* The RX worker: why PARTIAL @p (parsed, its tag verified, its round and
 * shape the aggregator's) is refused by the trees, without side effects:
 * ISTHD_DROP_MAX if its sender may send it. */
enum isthd_drop isthd_tree_admit(const struct isthd *d, const struct isth_wire_pkt *p);
/* The RX worker: admitted PARTIAL @p (isthd_tree_values, isthd_tree_admit;
 * its replay window not moved yet): checked against its chunk's state
 * (round_late, tree_late, tree_duplicate, tree_overlap, tree_bad_bitmap
 * of a result down, ...); only if every check passed, its replay window
 * moved (isthd_auth_commit) and it is summed (up) or handed on (down).
 * Refusals counted. Does not take the mbuf. true: taken. */
bool isthd_tree_partial(struct isthd_worker *w, const struct isth_wire_pkt *p);
/* The RX worker: why a peer edge's chunk NACK @p of a tree round (parsed,
 * its tag verified) is refused, without side effects (ISTHD_DROP_MAX: its
 * sender is this edge's parent or child in the tree of every chunk it
 * names, from its peer address). */
enum isthd_drop isthd_tree_nack_admit(const struct isthd *d, const struct isth_wire_pkt *p);
/* The RX worker: admitted tree NACK @p (replay window moved): the
 * PARTIALs it names sent again, as far as this edge has them and the
 * chunk's resend budget allows. Does not take the mbuf. */
void isthd_tree_nack(struct isthd_worker *w, const struct isth_wire_pkt *p);
/*
 * Which chunk a PARTIAL of chunk @c (tree of @k) makes overdue from the
 * same edge: the one ISTHD_TREE_NACK_LAG chunks of its tree before, or
 * -1. tree.c; unit tests.
 */
static inline int64_t
isthd_tree_overdue(uint32_t c, unsigned int k)
{
	uint64_t back = (uint64_t)ISTHD_TREE_NACK_LAG * k;

	return c >= back ? (int64_t)(c - back) : -1;
}
/* The RX worker, once a pass after its WAN RX: cutoffs of tree rounds
 * that passed at @now_ns, the chunks the pace lets go, and one TX burst
 * of what it staged (PARTIALs, results down). */
unsigned int isthd_tree_poll(struct isthd_worker *w, uint64_t now_ns);

/*
 * The pace's step (a GCRA): may a chunk costing @cost_ns at the rate leave
 * at @now, the bucket empty at *@t (ns), the round's stream starting at
 * @floor, its depth @depth_ns? Tokens accrue from max(*@t, @floor) and
 * at most @depth_ns of them: never a burst at the start, a few chunks
 * after a wait. Moves *@t when it may. tree.c; unit tests.
 */
static inline bool
isthd_tree_pace_take(uint64_t *t, uint64_t floor, uint64_t depth_ns, uint64_t cost_ns, uint64_t now)
{
	uint64_t t0 = RTE_MAX(*t, floor);

	if (now > depth_ns && now - depth_ns > t0)
		t0 = now - depth_ns;
	if (now < t0 + cost_ns)
		return false;
	*t = t0 + cost_ns;
	return true;
}
/* Worker 0's emitter: up to @cap AGG messages for the island. */
unsigned int isthd_tree_drain(struct isthd_worker *w, struct rte_mbuf **out, unsigned int cap);

#endif
