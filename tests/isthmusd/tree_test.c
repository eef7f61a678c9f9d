/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tree rounds (app/isthmusd/tree.c): an edge's place in each tree of
 * tests/system/tree-nine.sched, and who may send it a PARTIAL. The
 * expected subtrees, depths and children are worked out here by hand from
 * the file's three parent lists (the comments), not by the code tested.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "isthd.h"

#define SCHED SOURCE_ROOT "/tests/system/tree-nine.sched"
enum { NYC, CHI, LAX, LON, AMS, FRA, TYO, SIN, HKG };
#define B(i) (1ull << (i))

/* static: struct isthd holds every worker */
static struct isthd d;

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
	isth_sched_free(s);
	free(text);
}
