/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tree rounds (app/isthmusd/tree.c): an edge's place in each tree of
 * tests/system/tree-nine.sched, and who may send it a PARTIAL. The
 * expected subtrees, depths and children are worked out here by hand from
 * the file's three parent lists (the comments), not by the code tested.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "isthd.h"

#define SCHED SOURCE_ROOT "/tests/system/tree-nine.sched"
enum { NYC, CHI, LAX, LON, AMS, FRA, TYO, SIN, HKG };
#define B(i) (1ull << (i))

/* static: struct isthd holds every worker */
static struct isthd d;
static struct isthd_worker w;

static struct isth_sched *
load(void)
{
	char err[256];
	struct isth_sched *s = isth_sched_load(SCHED, err, sizeof(err));

	cr_assert_not_null(s, "%s", err);
	return s;
}

/* Edge @self of the file's trees, set up as tree.c's tables. */
static void
edge_of(int self)
{
	struct isth_sched *s = load();
	char err[256];

	memset(&d, 0, sizeof(d));
	d.island = (uint8_t)self;
	d.n_islands = 9;
	cr_assert_eq(isthd_tree_tables(s, self, &d.tree.rounds, &d.tree.n_rounds, err, sizeof(err)),
		0, "%s", err);
	d.tree.all = B(9) - 1;
	isth_sched_free(s);
}

static struct isth_wire_pkt
partial(unsigned int sender, uint32_t chunk, uint64_t bitmap, bool down)
{
	struct isth_wire_pkt p;

	memset(&p, 0, sizeof(p));
	p.hdr.type = ISTH_WIRE_PARTIAL;
	p.hdr.sender = (uint8_t)sender;
	p.hdr.chunk = chunk;
	p.hdr.bitmap = bitmap;
	p.hdr.flags = down ? ISTH_WIRE_F_DOWN : 0;
	return p;
}

Test(isthmusd_tree, sin_in_each_tree)
{
	const struct isthd_tree_node *t;

	edge_of(SIN);
	cr_assert_eq(d.tree.n_rounds, 1);
	cr_assert_eq(d.tree.rounds[0].n_trees, 3);
	/* tree 0 (3,0,0,-,3,3,7,3,7): LON root; SIN under LON with TYO and
	 * HKG below; NYC (CHI, LAX), AMS, FRA under LON: height 2 */
	t = &d.tree.rounds[0].t[0];
	cr_expect_eq(t->parent, LON);
	cr_expect_eq(t->depth, 1);
	cr_expect_eq(t->height, 2);
	cr_expect_eq(t->children, B(TYO) | B(HKG));
	cr_expect_eq(t->sub, B(SIN) | B(TYO) | B(HKG));
	cr_expect_eq(t->sub_of[TYO], B(TYO));
	cr_expect_eq(t->sub_of[LON], 0);
	/* tree 1 (-,0,0,0,3,3,2,8,6): NYC, LAX, TYO, HKG, SIN: a leaf at depth 4 */
	t = &d.tree.rounds[0].t[1];
	cr_expect_eq(t->parent, HKG);
	cr_expect_eq(t->depth, 4);
	cr_expect_eq(t->height, 4);
	cr_expect_eq(t->children, 0);
	cr_expect_eq(t->sub, B(SIN));
	/* tree 2 (2,0,6,7,3,3,-,6,6): TYO root; SIN, LON, AMS/FRA; TYO, LAX,
	 * NYC, CHI: height 3 */
	t = &d.tree.rounds[0].t[2];
	cr_expect_eq(t->parent, TYO);
	cr_expect_eq(t->depth, 1);
	cr_expect_eq(t->height, 3);
	cr_expect_eq(t->children, B(LON));
	cr_expect_eq(t->sub_of[LON], B(LON) | B(AMS) | B(FRA));
	cr_expect_eq(t->sub, B(SIN) | B(LON) | B(AMS) | B(FRA));
	free(d.tree.rounds);
}

Test(isthmusd_tree, root_of_tree_one)
{
	edge_of(NYC);
	cr_expect_eq(d.tree.rounds[0].t[1].parent, -1);
	cr_expect_eq(d.tree.rounds[0].t[1].depth, 0);
	cr_expect_eq(d.tree.rounds[0].t[1].sub, B(9) - 1);
	cr_expect_eq(d.tree.rounds[0].t[1].children, B(CHI) | B(LAX) | B(LON));
	free(d.tree.rounds);
}

/* Who may send SIN's edge a PARTIAL, by chunk (tree = chunk mod 3). */
Test(isthmusd_tree, admission)
{
	struct isth_wire_pkt p;

	edge_of(SIN);
	/* a child's own subtree, up: taken */
	p = partial(TYO, 0, B(TYO), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_MAX);
	p = partial(LON, 2, B(LON) | B(FRA), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_MAX);
	/* TYO is SIN's child in tree 0 only: chunk 1 (tree 1), chunk 2
	 * (tree 2, where TYO is the root) */
	p = partial(TYO, 1, B(TYO), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_not_child);
	p = partial(TYO, 5, B(TYO), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_not_child);
	/* the parent cannot send up; a stranger neither */
	p = partial(LON, 3, B(LON), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_not_child);
	p = partial(CHI, 0, B(CHI), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_not_child);
	/* a child claiming outside its subtree; without itself is its
	 * subtree's sum when its island's DATA was late */
	p = partial(HKG, 0, B(HKG) | B(LON), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_bad_bitmap);
	p = partial(HKG, 0, B(TYO), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_bad_bitmap);
	p = partial(LON, 2, B(AMS) | B(FRA), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_MAX);
	p = partial(LON, 2, B(LON) | B(AMS) | B(FRA) | B(SIN), false);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_bad_bitmap);
	/* results come down from the chunk tree's parent only */
	p = partial(LON, 0, B(9) - 1, true);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_MAX);
	p = partial(HKG, 1, B(9) - 1, true);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_MAX);
	p = partial(HKG, 0, B(9) - 1, true); /* HKG is SIN's child in tree 0 */
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_not_parent);
	p = partial(LON, 2, B(9) - 1, true);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_not_parent);
	free(d.tree.rounds);
}

/* A schedule without trees: no tables, every PARTIAL refused; a reload
 * may keep the trees, not change them. */
Test(isthmusd_tree, clique_rounds_and_reload)
{
	char err[256], *text;
	struct isth_sched *s;
	struct isth_wire_pkt p = partial(TYO, 0, B(TYO), false);
	size_t n;
	FILE *f = fopen(SCHED, "r");

	cr_assert_not_null(f);
	text = calloc(1, 8192);
	n = fread(text, 1, 8191, f);
	fclose(f);
	cr_assert_gt(n, 0);

	edge_of(SIN);
	s = isth_sched_parse("same", text, err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_expect(isthd_tree_same(&d, s));
	isth_sched_free(s);
	/* HKG's parent in tree 2 moved from TYO to SIN */
	cr_assert_not_null(strstr(text, "tree 0 2 2,0,6,7,3,3,-,6,6"));
	memcpy(strstr(text, "tree 0 2 2,0,6,7,3,3,-,6,6") + strlen("tree 0 2 2,0,6,7,3,3,-,6,"),
		"7", 1);
	s = isth_sched_parse("moved", text, err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	cr_expect_not(isthd_tree_same(&d, s));
	isth_sched_free(s);
	free(d.tree.rounds);

	/* the same file without its tree lines: a clique round */
	*strstr(text, "tree 0 0") = '\0';
	strcat(text, "end\n");
	s = isth_sched_parse("clique", text, err, sizeof(err));
	cr_assert_not_null(s, "%s", err);
	memset(&d, 0, sizeof(d));
	cr_assert_eq(
		isthd_tree_tables(s, SIN, &d.tree.rounds, &d.tree.n_rounds, err, sizeof(err)), 0);
	cr_expect_eq(d.tree.n_rounds, 0);
	cr_expect_null(d.tree.rounds);
	cr_expect_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_tree_not_tree);
	/* no tree round: no accumulators beside [agg] memory */
	cr_expect_eq(isthd_tree_bytes(s, 51, 324), 0);
	isth_sched_free(s);
	free(text);
}

/* The tree's accumulators, beside [agg] memory: 4 round slots x the
 * chunks x 2 (the sums, the island's own DATA) x a slot of 4 bytes an
 * element rounded up to 64. The fixture's chunk-bytes 1296 is 324 int32
 * elements (1296 B, a 1344 B slot), its payload 65536 B 51 chunks. */
Test(isthmusd_tree, accumulator_bytes)
{
	struct isth_sched *s = load();

	cr_expect_eq(isthd_tree_bytes(s, 51, 324), 4ull * 51 * 2 * 1344);
	cr_expect_eq(isthd_tree_bytes(s, 51, 324), 548352);
	/* a slot of 4 elements is one cache line */
	cr_expect_eq(isthd_tree_bytes(s, 27, 4), 4ull * 27 * 2 * 64);
	isth_sched_free(s);
}

#define ELEMS 4
#define CHUNKS 27

/* Edge @self with chunk state as isthd_tree_setup sets it up (without the
 * AGG ring and the mbuf pool: nothing below may send), fp32 chunks of
 * ELEMS elements. */
static void
edge_with_state(int self)
{
	edge_of(self);
	memset(&w, 0, sizeof(w));
	w.d = &d;
	d.shape.n_chunks = CHUNKS;
	d.shape.chunk_elems = ELEMS;
	d.shape.last_elems = ELEMS;
	d.shape.dtype = ISTH_WIRE_DTYPE_FP32;
	d.tree.slot_bytes = 64;
	cr_assert_eq(isth_agg_kernels_get(ISTH_AGG_KERNEL_AUTO, &d.tree.k), 0);
	d.tree.chunk = calloc(ISTHD_TREE_SLOTS * CHUNKS, sizeof(*d.tree.chunk));
	d.tree.acc = calloc(ISTHD_TREE_SLOTS * CHUNKS, d.tree.slot_bytes);
	d.tree.own = calloc(ISTHD_TREE_SLOTS * CHUNKS, d.tree.slot_bytes);
	d.tree.pace_words = 1;
	d.tree.pace_ready = calloc(ISTHD_TREE_SLOTS, sizeof(uint64_t));
	cr_assert(d.tree.chunk != NULL && d.tree.acc != NULL && d.tree.own != NULL &&
		d.tree.pace_ready != NULL);
}

static void
edge_free(void)
{
	free(d.tree.chunk);
	free(d.tree.acc);
	free(d.tree.own);
	free(d.tree.pace_ready);
	free(d.tree.rounds);
}

/* fp32 DATA or PARTIAL of chunk @chunk, round 0, elements @v */
static struct isth_wire_pkt
with_values(struct isth_wire_pkt p, uint32_t chunk, const float *v)
{
	p.hdr.dtype = ISTH_WIRE_DTYPE_FP32;
	p.hdr.chunk = chunk;
	p.hdr.count = ELEMS;
	p.payload = (const uint8_t *)v;
	p.payload_size = ELEMS * sizeof(float);
	return p;
}

/* The island's DATA of a tree round: a NaN or an element above max_abs is
 * refused (counted) and summed into nothing; finite DATA is summed. SIN,
 * tree 0 (chunk 0): SIN has children, so its own DATA alone sends nothing. */
Test(isthmusd_tree, island_data_values)
{
	static const float bad[ELEMS] = {1, NAN, 2, 3}, big[ELEMS] = {1, 2, 300, 4};
	static const float good[ELEMS] = {1, 2, 3, 4};
	struct isth_wire_pkt p;

	edge_with_state(SIN);
	p = with_values(partial(SIN, 0, 0, false), 0, bad);
	p.hdr.type = ISTH_WIRE_DATA;
	cr_expect_not(isthd_tree_island_data(&w, NULL, &p, 0));
	cr_expect_eq(w.st.drop[ISTHD_DROP_data_nonfinite], 1);
	cr_expect_eq(d.tree.chunk[0].have, 0, "a NaN summed into the subtree");

	d.cfg.agg_max_abs_on = true;
	d.cfg.agg_max_abs = 100;
	p = with_values(p, 0, big);
	cr_expect_not(isthd_tree_island_data(&w, NULL, &p, 0));
	cr_expect_eq(w.st.drop[ISTHD_DROP_data_too_large], 1);
	cr_expect_eq(d.tree.chunk[0].have, 0);

	p = with_values(p, 0, good);
	cr_expect(isthd_tree_island_data(&w, NULL, &p, 0));
	cr_expect_eq(d.tree.chunk[0].have, B(SIN));
	cr_expect_eq(w.st.tree_data, 1);
	edge_free();
}

/* [agg] max_abs bounds one island's elements; a PARTIAL (up, or a result
 * down) is the sum of its bitmap's islands: bounded by max_abs x that
 * many, and never NaN or infinite. */
Test(isthmusd_tree, partial_values)
{
	static const float three[ELEMS] = {250, -290, 1, 0}, nan[ELEMS] = {1, NAN, 0, 0};
	static const float inf[ELEMS] = {INFINITY, 0, 0, 0};
	struct isth_wire_pkt p;

	memset(&d, 0, sizeof(d));
	d.cfg.agg_max_abs_on = true;
	d.cfg.agg_max_abs = 100;
	/* 290 <= 3 x 100: three islands' sum, up and down */
	p = with_values(partial(LON, 2, B(LON) | B(AMS) | B(FRA), false), 2, three);
	cr_expect_eq(isthd_tree_values(&d, &p), ISTHD_DROP_MAX);
	p = with_values(partial(LON, 0, B(9) - 1, true), 0, three);
	cr_expect_eq(isthd_tree_values(&d, &p), ISTHD_DROP_MAX);
	/* 290 > 2 x 100 */
	p = with_values(partial(LON, 2, B(AMS) | B(FRA), false), 2, three);
	cr_expect_eq(isthd_tree_values(&d, &p), ISTHD_DROP_data_too_large);
	p = with_values(partial(LON, 2, B(9) - 1, true), 2, nan);
	cr_expect_eq(isthd_tree_values(&d, &p), ISTHD_DROP_data_nonfinite);
	d.cfg.agg_max_abs_on = false;
	p = with_values(partial(TYO, 0, B(TYO), false), 0, inf);
	cr_expect_eq(isthd_tree_values(&d, &p), ISTHD_DROP_data_nonfinite);
	p = with_values(partial(TYO, 0, B(TYO), false), 0, three);
	cr_expect_eq(isthd_tree_values(&d, &p), ISTHD_DROP_MAX);
}

/* A result down names of this edge's subtree what the edge sent up, or
 * none of it (its PARTIAL lost): anything else is refused before the
 * island's own values are taken out of it. SIN, tree 0 (chunk 0): parent
 * LON, subtree SIN, TYO, HKG. Refusals only: a result taken is sent on,
 * which needs the mbuf pool this test has not. */
Test(isthmusd_tree, result_down_bitmap)
{
	static const float v[ELEMS] = {1, 2, 3, 4};
	struct isthd_tree_chunk *ch;
	struct isth_wire_pkt p;

	edge_with_state(SIN);
	ch = &d.tree.chunk[0]; /* round 0, chunk 0 */
	ch->round1 = 1;
	/* sent up TYO and HKG without SIN's own (its DATA missed the cutoff) */
	ch->have = B(TYO) | B(HKG);
	ch->up = ch->gone = true;
	p = with_values(partial(LON, 0, B(9) - 1, true), 0, v);
	isthd_tree_partial(&w, &p);
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_bad_bitmap], 1,
		"SIN's own taken out of a sum without it");
	cr_expect_eq(ch->down, 0);
	/* a part of what it sent */
	p = with_values(partial(LON, 0, (B(9) - 1) & ~B(SIN) & ~B(HKG), true), 0, v);
	isthd_tree_partial(&w, &p);
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_bad_bitmap], 2);
	/* nothing sent up yet: the result cannot hold any of the subtree */
	ch->have = B(SIN);
	ch->up = ch->gone = false;
	p = with_values(partial(LON, 0, B(LON) | B(SIN), true), 0, v);
	isthd_tree_partial(&w, &p);
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_bad_bitmap], 3);
	cr_expect_eq(ch->down, 0);
	cr_expect_not(ch->up);
	edge_free();
}

/* A result after the round's end (the island had its subtree's sum) is
 * late; a second result is a duplicate. */
Test(isthmusd_tree, result_after_fallback_is_late)
{
	static const float v[ELEMS] = {1, 2, 3, 4};
	struct isth_wire_pkt p = with_values(partial(LON, 0, B(9) - 1, true), 0, v);
	struct isthd_tree_chunk *ch;

	edge_with_state(SIN);
	ch = &d.tree.chunk[0];
	ch->round1 = 1;
	ch->have = ch->down = B(SIN) | B(TYO);
	ch->up = ch->gone = ch->fell = true;
	isthd_tree_partial(&w, &p);
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_late], 1);
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_duplicate], 0);
	ch->fell = false;
	isthd_tree_partial(&w, &p);
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_duplicate], 1);
	edge_free();
}

/* The send line of a tree round: what the pace runs at. The fixture's
 * SIN line is 'send 0 7 0 852527' with payload-bytes 65536: 8e12 / 852527
 * ps a byte, 65536 bytes of them. */
Test(isthmusd_tree, send_line)
{
	edge_of(SIN);
	cr_expect_eq(d.tree.rounds[0].offset_ns, 0);
	cr_expect_eq(d.tree.rounds[0].ps_per_byte, 8000000000000ull / 852527);
	cr_expect_eq(d.tree.rounds[0].span_ns, 65536ull * 8 * 1000000000 / 852527);
	free(d.tree.rounds);
}

/* The pace's step: nothing before the round's start + offset (@floor)
 * plus a chunk's time, then one chunk per cost; after a wait, at most the
 * bucket's depth at once. Times worked out by hand: floor 1000, cost 100,
 * depth 400 (four chunks). */
Test(isthmusd_tree, pace_take)
{
	uint64_t t = 0;

	cr_expect_not(isthd_tree_pace_take(&t, 1000, 400, 100, 500), "before the floor");
	cr_expect_not(isthd_tree_pace_take(&t, 1000, 400, 100, 1099), "no burst at the start");
	cr_expect(isthd_tree_pace_take(&t, 1000, 400, 100, 1100));
	cr_expect_eq(t, 1100);
	cr_expect_not(isthd_tree_pace_take(&t, 1000, 400, 100, 1150));
	cr_expect(isthd_tree_pace_take(&t, 1000, 400, 100, 1230));
	cr_expect_eq(t, 1200, "a late pass does not lose the rate");
	/* idle until 5000: four chunks at once, not forty */
	for (int i = 0; i < 4; i++)
		cr_expect(isthd_tree_pace_take(&t, 1000, 400, 100, 5000), "chunk %d", i);
	cr_expect_eq(t, 5000);
	cr_expect_not(isthd_tree_pace_take(&t, 1000, 400, 100, 5000));
	cr_expect(isthd_tree_pace_take(&t, 1000, 400, 100, 5100));
	/* a later round's floor holds even with tokens to spare */
	cr_expect_not(isthd_tree_pace_take(&t, 9000, 400, 100, 9050));
	cr_expect(isthd_tree_pace_take(&t, 9000, 400, 100, 9100));
}

/* A chunk goes on once its island and every child were heard: a child
 * sends once, so a PARTIAL lacking part of its subtree (it cut off
 * without it) completes what this edge waits for. SIN, tree 2 (chunk 2):
 * child LON, subtree LON, AMS, FRA. Queued for the pace, nothing sent
 * yet (go_on runs at the pace's release). */
Test(isthmusd_tree, heard_child_completes)
{
	static const float v[ELEMS] = {1, 2, 3, 4};
	struct isth_wire_pkt p;
	struct isthd_tree_chunk *ch;

	edge_with_state(SIN);
	ch = &d.tree.chunk[2]; /* round 0, chunk 2 */
	p = with_values(partial(SIN, 2, 0, false), 2, v);
	p.hdr.type = ISTH_WIRE_DATA;
	cr_expect(isthd_tree_island_data(&w, NULL, &p, 0));
	cr_expect_not(ch->up, "LON not heard yet");
	p = with_values(partial(LON, 2, B(LON) | B(AMS), false), 2, v);
	isthd_tree_partial(&w, &p);
	cr_expect(ch->up, "LON heard: nothing more is coming from it");
	cr_expect_eq(ch->have, B(SIN) | B(LON) | B(AMS), "FRA named missing");
	cr_expect_eq(d.tree.pq[0].n, 1);
	cr_expect_eq(d.tree.pace_ready[0], 1ull << 2);
	/* a late part while the chunk waits for the pace: still summed
	 * (go_on sends what the chunk has when the pace lets it go) */
	p = with_values(partial(LON, 2, B(FRA), false), 2, v);
	isthd_tree_partial(&w, &p);
	cr_expect_eq(ch->have, B(SIN) | B(LON) | B(AMS) | B(FRA));
	cr_expect_eq(d.tree.pq[0].n, 1, "queued once");
	/* let go (as pace_release marks it): a part after it is late, never
	 * summed into what went on */
	ch->gone = true;
	ch->have = B(SIN) | B(LON) | B(AMS);
	p = with_values(partial(LON, 2, B(FRA), false), 2, v);
	isthd_tree_partial(&w, &p);
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_late], 1);
	cr_expect_eq(ch->have, B(SIN) | B(LON) | B(AMS));
	edge_free();
}

#define WIN_BITS 256u
#define EPOCH 1u

/* Auth on at the edge of edge_with_state: the replay windows
 * isthd_auth_setup would make (epoch 1 in slot 0, one island host),
 * without keys or engines: what isthd_auth_commit moves. */
static void
with_windows(void)
{
	struct isthd_auth *au = &d.auth;
	unsigned int i, words = isth_auth_replay_words(WIN_BITS);

	au->on = true;
	au->win_bits = WIN_BITS;
	/* UP DATA and NACK of one host; WAN DATA, NACK, GONE, PARTIAL per island */
	au->n_win = ISTH_AUTH_MAX_EPOCHS * (2 + 4 * d.n_islands);
	au->win = calloc(au->n_win, sizeof(*au->win));
	au->words = calloc((size_t)au->n_win * words, sizeof(uint64_t));
	cr_assert(au->win != NULL && au->words != NULL);
	for (i = 0; i < au->n_win; i++)
		cr_assert_eq(
			isth_auth_replay_init(&au->win[i], au->words + (size_t)i * words, WIN_BITS),
			0);
	for (i = 0; i < ISTH_AUTH_MAX_EPOCHS; i++)
		au->slot_epoch[i] = -1;
	au->slot_epoch[0] = EPOCH;
}

/* @p as a version 2 message with seq @seq, its header written to @buf
 * (what the replay windows read) */
static struct isth_wire_pkt
sealed(struct isth_wire_pkt p, uint8_t *buf, uint64_t seq)
{
	p.hdr.version = 2;
	p.hdr.epoch = EPOCH;
	p.hdr.seq = seq;
	cr_assert_eq(isth_wire_put_hdr(buf, ISTH_WIRE_HDR_SIZE, &p.hdr), ISTH_WIRE_HDR_SIZE);
	p.msg = buf;
	p.msg_size = ISTH_WIRE_HDR_SIZE;
	return p;
}

/* Is @seq of @p's stream (direction @dir) still one the window would take? */
static bool
window_takes(const struct isth_wire_pkt *p, enum isth_auth_dir dir, uint64_t seq)
{
	const struct isth_auth_replay *win = isthd_auth_window(&d, dir, p->msg, 0);

	cr_assert_not_null(win);
	return isth_auth_replay_check(win, seq, p->hdr.round) == ISTH_AUTH_OK;
}

/* A packet the tree refuses (its chunk's state: a duplicate, a result
 * down whose bitmap disagrees with what this edge sent) leaves its replay
 * window where it was (doc/protocol.md, receive step 8): a genuine packet
 * with that seq, or one below it, is still taken. One the tree takes
 * moves it. SIN, tree 0 (chunk 0): parent LON, children TYO and HKG; SIN
 * waits for both, so nothing below is sent. */
Test(isthmusd_tree, refused_leaves_the_replay_window)
{
	static const float v[ELEMS] = {1, 2, 3, 4};
	uint8_t buf[ISTH_WIRE_HDR_SIZE];
	struct isth_wire_pkt p;

	edge_with_state(SIN);
	with_windows();
	/* the island's DATA: taken, its seq committed */
	p = with_values(partial(SIN, 0, B(SIN), false), 0, v);
	p.hdr.type = ISTH_WIRE_DATA;
	p = sealed(p, buf, 10);
	cr_assert(isthd_tree_island_data(&w, NULL, &p, 0));
	cr_expect_not(window_takes(&p, ISTH_AUTH_UP, 10), "a taken DATA's seq not committed");
	/* a second copy under a new seq: tree_duplicate, window unmoved */
	p = sealed(p, buf, 12);
	cr_expect_not(isthd_tree_island_data(&w, NULL, &p, 0));
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_duplicate], 1);
	cr_expect(window_takes(&p, ISTH_AUTH_UP, 12), "a refused DATA moved the window");
	cr_expect(window_takes(&p, ISTH_AUTH_UP, 11));

	/* TYO's PARTIAL up: taken, committed; its copy refused, not */
	p = sealed(with_values(partial(TYO, 0, B(TYO), false), 0, v), buf, 30);
	cr_assert_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_MAX);
	cr_assert(isthd_tree_partial(&w, &p));
	cr_expect_eq(d.tree.chunk[0].have, B(SIN) | B(TYO));
	cr_expect_not(window_takes(&p, ISTH_AUTH_WAN, 30));
	p = sealed(p, buf, 40);
	cr_expect_not(isthd_tree_partial(&w, &p));
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_duplicate], 2);
	cr_expect(window_takes(&p, ISTH_AUTH_WAN, 40), "a refused PARTIAL moved the window");
	cr_expect(window_takes(&p, ISTH_AUTH_WAN, 31));

	/* LON's result down naming SIN, nothing sent up yet: tree_bad_bitmap */
	p = sealed(with_values(partial(LON, 0, B(9) - 1, true), 0, v), buf, 50);
	cr_assert_eq(isthd_tree_admit(&d, &p), ISTHD_DROP_MAX);
	cr_expect_not(isthd_tree_partial(&w, &p));
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_bad_bitmap], 1);
	/* a result already down: tree_duplicate */
	d.tree.chunk[0].down = B(9) - 1;
	p = sealed(p, buf, 60);
	cr_expect_not(isthd_tree_partial(&w, &p));
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_duplicate], 3);
	cr_expect_eq(w.st.tree_in, 1, "only TYO's first PARTIAL taken");
	cr_expect_not(isthd_auth_window(&d, ISTH_AUTH_WAN, p.msg, 0)->started,
		"a refused result moved LON's window");
	free(d.auth.win);
	free(d.auth.words);
	edge_free();
}

/* Which chunk a PARTIAL makes overdue from the same edge: the one eight
 * of its tree's chunks before (chunks of tree t are t, t + k, t + 2k...). */
Test(isthmusd_tree, overdue_chunk)
{
	cr_assert_eq(ISTHD_TREE_NACK_LAG, 8, "the values below are for a lag of 8");
	cr_expect_eq(isthd_tree_overdue(24, 3), 0);
	cr_expect_eq(isthd_tree_overdue(28, 3), 4);
	cr_expect_eq(isthd_tree_overdue(23, 3), -1, "chunk 23's tree has 7 chunks before it");
	cr_expect_eq(isthd_tree_overdue(0, 3), -1);
	cr_expect_eq(isthd_tree_overdue(8, 1), 0);
	cr_expect_eq(isthd_tree_overdue(7, 1), -1);
}

/* A chunk NACK of chunk @first..@last from @sender's address @ip, to @to. */
static struct isth_wire_pkt
nack(unsigned int sender, uint32_t ip, uint64_t to, uint64_t first, uint64_t last, uint8_t *buf)
{
	struct isth_wire_pkt p;
	const struct isth_wire_range r = {.first = first, .last = last};

	memset(&p, 0, sizeof(p));
	p.hdr.type = ISTH_WIRE_NACK;
	p.hdr.flags = ISTH_WIRE_F_CHUNKS;
	p.hdr.sender = (uint8_t)sender;
	p.hdr.count = 1;
	p.hdr.bitmap = to;
	p.addr.src_ip = ip;
	cr_assert_eq(isth_wire_put_ranges(buf, ISTH_WIRE_RANGE_SIZE, &r, 1), ISTH_WIRE_RANGE_SIZE);
	p.payload = buf;
	p.payload_size = ISTH_WIRE_RANGE_SIZE;
	return p;
}

/* Who may ask SIN's edge for a tree chunk again: the chunk tree's parent
 * (for SIN's PARTIAL up) or a child (for the result down), from its
 * address, naming SIN's edge and chunks of the round. */
Test(isthmusd_tree, nack_admission)
{
	static struct isthd_peer lon = {.ip = 0x0a000301}, tyo = {.ip = 0x0a000601},
				 chi = {.ip = 0x0a000101};
	uint8_t buf[ISTH_WIRE_RANGE_SIZE];
	struct isth_wire_pkt p;

	edge_of(SIN);
	d.shape.n_chunks = CHUNKS;
	d.peer_of[LON] = &lon;
	d.peer_of[TYO] = &tyo;
	d.peer_of[CHI] = &chi;
	/* tree 0 (chunk 0, 3): LON is SIN's parent, TYO its child */
	p = nack(LON, lon.ip, B(SIN), 0, 0, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_MAX);
	p = nack(TYO, tyo.ip, B(SIN), 3, 3, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_MAX);
	/* tree 2 (chunk 2): TYO is SIN's parent; LON its child */
	p = nack(TYO, tyo.ip, B(SIN), 2, 2, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_MAX);
	p = nack(LON, lon.ip, B(SIN), 2, 2, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_MAX);
	/* tree 1 (chunk 1): SIN a leaf under HKG: neither LON nor TYO */
	p = nack(TYO, tyo.ip, B(SIN), 1, 1, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_tree_nack_not_edge);
	p = nack(LON, lon.ip, B(SIN), 0, 2, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_tree_nack_not_edge,
		"one chunk of the range is not LON's to ask");
	/* CHI is in no tree next to SIN */
	p = nack(CHI, chi.ip, B(SIN), 0, 0, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_tree_nack_not_edge);
	/* LON's name from TYO's address; to another edge; past the round */
	p = nack(LON, tyo.ip, B(SIN), 0, 0, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_tree_nack_bad);
	p = nack(LON, lon.ip, B(HKG), 0, 0, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_tree_nack_bad);
	p = nack(LON, lon.ip, B(SIN), 3, CHUNKS, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_tree_nack_bad);
	/* more chunks than an edge ever asks for at once: refused by its
	 * size, before the walk (9 chunks; 8 is the bound, 1 is what an edge
	 * sends), even though every chunk of it is in the round */
	cr_assert_geq(CHUNKS, 9);
	p = nack(LON, lon.ip, B(SIN), 0, 8, buf);
	cr_expect_eq(isthd_tree_nack_admit(&d, &p), ISTHD_DROP_tree_nack_bad);
	free(d.tree.rounds);
}

/* What SIN's edge has to resend, without sending (no mbuf pool here: the
 * cases that would send are the system test's). Chunk 0 (tree 0): LON
 * asks for SIN's PARTIAL up, TYO for the result down. */
Test(isthmusd_tree, nack_unserved_and_budget)
{
	static struct isthd_peer lon = {.ip = 0x0a000301}, tyo = {.ip = 0x0a000601};
	uint8_t buf[ISTH_WIRE_RANGE_SIZE];
	struct isthd_tree_chunk *ch;
	struct isth_wire_pkt up, down;

	edge_with_state(SIN);
	d.peer_of[LON] = &lon;
	d.peer_of[TYO] = &tyo;
	up = nack(LON, lon.ip, B(SIN), 0, 0, buf);
	ch = &d.tree.chunk[0];
	isthd_tree_nack(&w, &up);
	cr_expect_eq(w.st.tree_nacks_unserved, 1, "round 0 not held");
	ch->round1 = 1;
	ch->have = B(SIN);
	isthd_tree_nack(&w, &up);
	cr_expect_eq(w.st.tree_nacks_unserved, 2, "not sent up yet");
	ch->sent = ch->gone = ch->up = true;
	ch->down = B(9) - 1;
	isthd_tree_nack(&w, &up);
	cr_expect_eq(w.st.tree_nacks_unserved, 3, "the result came down: LON went on");
	ch->down = 0;
	ch->resends = ISTHD_TREE_RESENDS;
	isthd_tree_nack(&w, &up);
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_nack_budget], 1);
	down = nack(TYO, tyo.ip, B(SIN), 0, 0, buf);
	ch->resends = 0;
	isthd_tree_nack(&w, &down);
	cr_expect_eq(w.st.tree_nacks_unserved, 4, "no result yet");
	ch->down = ch->have;
	ch->fell = true;
	isthd_tree_nack(&w, &down);
	cr_expect_eq(w.st.tree_nacks_unserved, 5, "its own subtree's sum is no result");
	cr_expect_eq(w.st.tree_resent, 0);
	edge_free();
}

/* A child's PARTIAL of chunk c makes its chunk c - 8k overdue from that
 * child (no peer address here: the ask is spent, not sent). SIN, tree 0
 * (chunks 0, 3, ..., 24): children TYO and HKG. */
Test(isthmusd_tree, overdue_asks_the_child)
{
	static const float v[ELEMS] = {1, 2, 3, 4};
	struct isth_wire_pkt p;

	edge_with_state(SIN);
	p = with_values(partial(TYO, 0, B(TYO), false), 0, v);
	isthd_tree_partial(&w, &p);
	p = with_values(partial(HKG, 21, B(HKG), false), 21, v);
	isthd_tree_partial(&w, &p);
	cr_expect_eq(d.tree.chunk[0].asks, 0, "chunk 21 makes no chunk overdue");
	p = with_values(partial(HKG, 24, B(HKG), false), 24, v);
	isthd_tree_partial(&w, &p);
	cr_expect_eq(d.tree.chunk[0].asks, 1, "HKG's chunk 0 overdue");
	cr_expect_eq(d.tree.chunk[3].asks, 0);
	p = with_values(partial(TYO, 24, B(TYO), false), 24, v);
	isthd_tree_partial(&w, &p);
	cr_expect_eq(d.tree.chunk[0].asks, 1, "TYO's chunk 0 came");
	/* HKG's repair is summed once; again, it is counted wasted */
	p = with_values(partial(HKG, 0, B(HKG), false), 0, v);
	p.hdr.flags |= ISTH_WIRE_F_RESENT;
	isthd_tree_partial(&w, &p);
	cr_expect_eq(d.tree.chunk[0].have, B(TYO) | B(HKG));
	isthd_tree_partial(&w, &p);
	cr_expect_eq(w.st.tree_repairs_wasted, 1);
	cr_expect_eq(d.tree.chunk[0].have, B(TYO) | B(HKG), "not summed twice");
	/* not a repair: a duplicate (a replay, auth off) */
	p.hdr.flags &= (uint16_t)~ISTH_WIRE_F_RESENT;
	isthd_tree_partial(&w, &p);
	cr_expect_eq(w.st.drop[ISTHD_DROP_tree_duplicate], 1);
	edge_free();
}
