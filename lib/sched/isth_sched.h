/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file isth_sched.h
 * The schedule file: what `isthmus-plan --out` writes and `isthmusd` loads.
 *
 * A versioned, line-oriented text format (doc/schedule-file.md): islands,
 * round time T, epoch handling, a cyclic sequence of rounds, each a
 * partition of the islands into cliques (uint64_t bitmaps of island ids),
 * and per round per sender an offset and a rate or a piecewise-constant
 * rate profile. Plain C, EAL-free, no GLPK: the appliance links it.
 *
 * This library is the one reader and writer of the format. Build one with
 * isth_sched_new() + isth_sched_set_round() + isth_sched_set_sender()
 * (lib/plan's isth_plan_result_sched() does, from a solved plan) and write
 * it with isth_sched_save(); read one with isth_sched_load(). Writing goes
 * through the loader, so a file that is written is always one that loads.
 */
#ifndef ISTH_SCHED_H
#define ISTH_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Format version written by this library when no peak memory is recorded. */
#define ISTH_SCHED_VERSION 1
/** Version 2 adds 'peak-bytes' header lines; written when any peak is set. Both are read. */
#define ISTH_SCHED_VERSION_PEAK 2
/**
 * Version 3 adds what the plan was made for ('replication', 'dtype',
 * 'expected-loss' header lines); written when any is set. Versions 1 to 3
 * are read.
 */
#define ISTH_SCHED_VERSION_PLANNED 3
/**
 * Version 4 adds 'tree' lines (reduction trees of a round); written when any
 * round has a tree. Versions 1 to 4 are read.
 */
#define ISTH_SCHED_VERSION_TREE 4
/** Maximum reduction trees of one round. */
#define ISTH_SCHED_MAX_TREES 8
/** Maximum islands (bitmaps are uint64_t). */
#define ISTH_SCHED_MAX_ISLANDS 64
/** Maximum rounds in a cycle. */
#define ISTH_SCHED_MAX_ROUNDS 1024
/** Maximum segments of a rate profile. */
#define ISTH_SCHED_MAX_SEGS 8
/** Maximum island name length including the NUL. */
#define ISTH_SCHED_NAME_MAX 32
/**
 * Longest round accepted: one hour in ns. Far above any WAN round (seconds)
 * and far below where the data path's ns arithmetic (epoch + round * T)
 * could overflow.
 */
#define ISTH_SCHED_MAX_ROUND_NS 3600000000000ULL

/** Longest note (isth_sched_set_note()), including the NUL. */
#define ISTH_SCHED_NOTE_MAX 256

/** A loaded or built schedule. Opaque. */
struct isth_sched;

/**
 * Start building a schedule.
 * @param n         islands, 1..64
 * @param names     n names (1-31 of [A-Za-z0-9_.-], unique)
 * @param round_ns  round time T in ns, 1..ISTH_SCHED_MAX_ROUND_NS
 * @param epoch_ns  start of round 0 in CLOCK_REALTIME ns, or 0 for "runtime"
 *                  (isthmusd is given the epoch when it starts)
 * @param payload_bytes bytes each sender sends per round
 * @param chunk_bytes   aggregation chunk size (informative, 0 = unspecified)
 * @param memory_bytes  aggregation memory the plan assumed per edge
 * @param nrounds   rounds in the cycle, 1..ISTH_SCHED_MAX_ROUNDS
 * @return the schedule or NULL with errno (EINVAL, ENOMEM).
 */
struct isth_sched *
isth_sched_new(int n, const char *const *names, uint64_t round_ns, uint64_t epoch_ns,
	uint64_t payload_bytes, uint64_t chunk_bytes, uint64_t memory_bytes, int nrounds);

/**
 * Set round @p r's partition. Checked at save time (and here for range).
 * Setting it again removes the round's trees (isth_sched_set_tree()).
 * @return 0 or -EINVAL.
 */
int isth_sched_set_round(struct isth_sched *s, int r, int ncliques, const uint64_t *cliques);

/**
 * Set the stream of sender @p i in round @p r: it starts @p offset_ns after
 * the round start; with @p nseg == 1 and @p dur_ns NULL it runs at
 * rate_bps[0] until the payload is sent, otherwise segment k lasts
 * dur_ns[k] at rate_bps[k].
 * @return 0 or -EINVAL.
 */
int isth_sched_set_sender(struct isth_sched *s, int r, int i, uint64_t offset_ns, int nseg,
	const uint64_t *dur_ns, const uint64_t *rate_bps);

/**
 * Write @p text as a comment line ("# text") right after the magic line:
 * what a writer wants a reader of the file to know that the format has no
 * directive for (isthmus-plan: its repair headroom). Loaders skip comments,
 * so a loaded schedule has no note; a second call replaces the first.
 * @return 0, or -EINVAL (a line break in @p text, or ISTH_SCHED_NOTE_MAX
 *         bytes or more).
 */
int isth_sched_set_note(struct isth_sched *s, const char *text);

/**
 * Write @p s to @p path in the current format version, after checking it
 * with the loader's rules.
 * @param err receives the reason on failure ("<schedule>:line: reason" or "path: errno text")
 * @return 0, -EINVAL (inconsistent schedule), -errno (I/O).
 */
int isth_sched_save(const struct isth_sched *s, const char *path, char *err, size_t errlen);

/**
 * Write @p s to a stream without checking it.
 * @return 0 or -EIO.
 */
int isth_sched_write(const struct isth_sched *s, FILE *f);

/**
 * Load and validate a schedule file.
 * @param err receives "file:line: reason" on failure
 * @return the schedule, or NULL with errno (EINVAL: bad file, ENOENT...).
 */
struct isth_sched *isth_sched_load(const char *path, char *err, size_t errlen);

/** Same as isth_sched_load() from text; @p name is used in messages. */
struct isth_sched *isth_sched_parse(const char *name, const char *text, char *err, size_t errlen);

/** Free a schedule; NULL is accepted. */
void isth_sched_free(struct isth_sched *s);

/** Number of islands. */
int isth_sched_n_islands(const struct isth_sched *s);
/** Name of island @p i, or NULL. */
const char *isth_sched_island_name(const struct isth_sched *s, int i);
/** Island id of @p name, or -ENOENT. */
int isth_sched_island_id(const struct isth_sched *s, const char *name);
/** Rounds in the cycle. */
int isth_sched_n_rounds(const struct isth_sched *s);
/** Round time T in ns. */
uint64_t isth_sched_round_ns(const struct isth_sched *s);
/** Epoch in CLOCK_REALTIME ns, or 0 when it is given at run time. */
uint64_t isth_sched_epoch_ns(const struct isth_sched *s);
/** Payload bytes per sender per round. */
uint64_t isth_sched_payload_bytes(const struct isth_sched *s);
/** Chunk bytes (0 = unspecified). */
uint64_t isth_sched_chunk_bytes(const struct isth_sched *s);
/** Aggregation memory per edge the plan assumed. */
uint64_t isth_sched_memory_bytes(const struct isth_sched *s);
/**
 * Record the peak aggregation memory the plan needs at island @p i's edge
 * (the file then is written as version 2, with a 'peak-bytes' line).
 * @return 0, or -EINVAL.
 */
int isth_sched_set_peak(struct isth_sched *s, int i, uint64_t bytes);
/**
 * Peak aggregation memory at island @p i's edge and the file line that
 * gave it (0 if set by isth_sched_set_peak()); either pointer may be NULL.
 * @return 0, -ENOENT if the schedule records none (version 1), -EINVAL.
 */
int isth_sched_peak(const struct isth_sched *s, int i, uint64_t *bytes, int *line);
/**
 * Record the planned path of sender @p j's stream to receiver @p i in round
 * @p r (islands from j to i, both included; version 2 'route' line). The
 * round's cliques must be set first.
 * @return 0, -EINVAL (not a loop-free path within j's clique), -EEXIST, -ENOMEM.
 */
int isth_sched_set_route(struct isth_sched *s, int r, int j, int i, const int *hops, int nh);
/**
 * The planned path of j's stream to i in cycle round @p r: up to @p max
 * islands into @p hops.
 * @return the path's length, -ENOENT if the file gives none (shortest
 *         path then), or -EINVAL.
 */
int isth_sched_route(const struct isth_sched *s, int r, int j, int i, int *hops, int max);
/** The replication a schedule was planned for ('replication' line, version 3). */
enum isth_sched_repl {
	ISTH_SCHED_REPL_UNSTATED = 0, /**< no 'replication' line (older or hand-written file) */
	ISTH_SCHED_REPL_EDGE, /**< unicast fan-out at the sender's edge */
	ISTH_SCHED_REPL_NETWORK, /**< one copy to a multicast group, the WAN replicates */
};

/** "edge", "network" or "unstated". */
const char *isth_sched_repl_name(enum isth_sched_repl repl);
/**
 * Record the replication the plan was made for (the file then is written as
 * version 3, with a 'replication' line). ISTH_SCHED_REPL_UNSTATED removes it.
 * @return 0, or -EINVAL.
 */
int isth_sched_set_replication(struct isth_sched *s, enum isth_sched_repl repl);
/**
 * The replication the schedule was planned for and the file line that gave
 * it (0 if set by isth_sched_set_replication() or unstated); @p line may be NULL.
 */
enum isth_sched_repl isth_sched_replication(const struct isth_sched *s, int *line);
/** Whether @p name is an element type of lib/wire (fp32, bf16, int32: isth_wire_dtype_name()). */
int isth_sched_dtype_known(const char *name);
/**
 * Record the element type the plan was made for, a lib/wire dtype name
 * (version 3 'dtype' line); NULL removes it.
 * @return 0, or -EINVAL (not an element type of lib/wire).
 */
int isth_sched_set_dtype(struct isth_sched *s, const char *name);
/**
 * The element type the schedule was planned for, or NULL when the file does
 * not state one; @p line (may be NULL) receives its file line (0 if set by
 * isth_sched_set_dtype()).
 */
const char *isth_sched_dtype(const struct isth_sched *s, int *line);
/** Largest expected loss a schedule records ('expected-loss', version 3). */
#define ISTH_SCHED_MAX_LOSS 0.5
/** isth_sched_expected_loss() of a schedule that states none; removes it in the setter. */
#define ISTH_SCHED_LOSS_UNSTATED (-1.0)
/**
 * Record the WAN loss rate the plan was made for, a fraction 0..ISTH_SCHED_MAX_LOSS
 * of the frames on every WAN link (version 3 'expected-loss' line, from
 * isthmus-plan --expected-loss); ISTH_SCHED_LOSS_UNSTATED removes it.
 * @return 0, or -EINVAL (out of range, not finite).
 */
int isth_sched_set_expected_loss(struct isth_sched *s, double loss);
/**
 * The WAN loss rate the schedule was planned for, or ISTH_SCHED_LOSS_UNSTATED
 * (negative) when the file states none (older or hand-written); @p line (may
 * be NULL) receives its file line (0 if set by isth_sched_set_expected_loss()).
 */
double isth_sched_expected_loss(const struct isth_sched *s, int *line);

/**
 * Make round @p r reduce up (and broadcast down) spanning tree @p t of the
 * islands (version 4 'tree' line): @p parent[i] is island i's parent, -1 for
 * the one root. Chunk c of the round's stream belongs to tree c mod k, k the
 * round's number of trees. The round must be set first and be one clique of
 * all islands (a tree round is an exact global sum); trees are numbered
 * 0..k-1 in order: @p t is the round's number of trees so far (a new tree)
 * or below it (replacing that tree).
 * @return 0, or -EINVAL (not spanning, a cycle, no or two roots, a parent
 *         out of range, @p t out of order or >= ISTH_SCHED_MAX_TREES, the
 *         round not one clique of all islands).
 */
int isth_sched_set_tree(struct isth_sched *s, int r, int t, const int *parent);
/**
 * Number of reduction trees of cycle round @p r (taken modulo the cycle,
 * negative allowed): 0 for a clique round.
 */
int isth_sched_n_trees(const struct isth_sched *s, int r);
/**
 * Tree @p t of cycle round @p r (modulo the cycle): every island's parent
 * into @p parent (n entries, -1 for the root), and the file line that gave
 * it into @p line (may be NULL; 0 if set by isth_sched_set_tree()).
 * @return 0, or -EINVAL (no such tree, NULL arguments).
 */
int isth_sched_tree(const struct isth_sched *s, int r, int t, int *parent, int *line);
/**
 * The tree that chunk @p chunk of cycle round @p r (modulo the cycle)
 * travels: chunk mod the round's number of trees.
 * @return the tree index, -ENOENT for a clique round (no trees), -EINVAL.
 */
int isth_sched_tree_of_chunk(const struct isth_sched *s, int r, uint32_t chunk);

/** Number of cliques in round @p r (r modulo the cycle, negative allowed). */
int isth_sched_n_cliques(const struct isth_sched *s, int64_t r);
/** Bitmap of clique @p c in round @p r, or 0. */
uint64_t isth_sched_clique_at(const struct isth_sched *s, int64_t r, int c);
/** Bitmap of the clique of island @p i in round @p r (includes i), or 0. */
uint64_t isth_sched_clique(const struct isth_sched *s, int64_t r, int i);
/** Peers of island @p i in round @p r: its clique without itself. */
uint64_t isth_sched_peers(const struct isth_sched *s, int64_t r, int i);
/**
 * Offset and (first-segment) rate of sender @p i in round @p r.
 * @return number of profile segments (>= 1), or -ENOENT if i does not
 *         send in that round (no peers), -EINVAL on bad arguments.
 */
int isth_sched_sender(
	const struct isth_sched *s, int64_t r, int i, uint64_t *offset_ns, uint64_t *rate_bps);
/**
 * Segment @p k of the rate profile of sender @p i in round @p r.
 * A constant-rate sender has one segment whose duration is the payload time.
 * @return 0, -ENOENT, -EINVAL.
 */
int isth_sched_segment(
	const struct isth_sched *s, int64_t r, int i, int k, uint64_t *dur_ns, uint64_t *rate_bps);
/**
 * Which round is running @p ns_since_epoch after the epoch.
 * @param round receives the absolute round number (its cycle index is round % n_rounds)
 * @param into_ns receives the time since that round's start
 */
void isth_sched_round_at(
	const struct isth_sched *s, uint64_t ns_since_epoch, uint64_t *round, uint64_t *into_ns);

/** Round @p r as island @p self's edge needs it (isth_sched_round_view()). */
struct isth_sched_round_view {
	uint64_t round_ns; /**< T */
	uint64_t payload_bytes; /**< per sender */
	uint64_t clique; /**< self's clique, self included */
	uint64_t peers; /**< clique without self */
	unsigned int n_peers;
	uint8_t peer[ISTH_SCHED_MAX_ISLANDS]; /**< peer island ids, ascending */
	/** per island id, for self and its peers (zero elsewhere) */
	struct {
		uint64_t offset_ns; /**< start offset in the round */
		uint64_t rate_bps; /**< first-segment rate */
		int n_segs; /**< profile segments; 0: sends nothing */
	} snd[ISTH_SCHED_MAX_ISLANDS];
	/** reduction trees of the round (0: a clique round; isth_sched_tree()) */
	unsigned int n_trees;
	/** per tree: self's parent island id, -1 where self is the root */
	int tree_parent[ISTH_SCHED_MAX_TREES];
	/** per tree: bitmap of self's children */
	uint64_t tree_children[ISTH_SCHED_MAX_TREES];
	/** self's rate profile: snd[self].n_segs segments */
	struct {
		uint64_t dur_ns;
		uint64_t rate_bps;
	} seg[ISTH_SCHED_MAX_SEGS];
};

/**
 * Fill @p v with round @p r (modulo the cycle, negative allowed) as seen by
 * island @p self: T, payload, clique, peers, every clique member's offset
 * and rate, self's rate profile, and its parent and children in each of
 * the round's trees, in one call.
 * @return 0, or -EINVAL (bad arguments)
 */
int isth_sched_round_view(
	const struct isth_sched *s, int64_t r, int self, struct isth_sched_round_view *v);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_SCHED_H */
