/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedule file writer and loader (doc/schedule-file.md). One grammar, one
 * validator: isth_sched_save() renders to text and parses it back before it
 * touches the file, so the writer cannot produce what the loader refuses.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isth_sched.h"
#include "isth_text.h"
#include "isth_wire.h"

#define NMAX ISTH_SCHED_MAX_ISLANDS

struct sender {
	uint8_t set;
	uint8_t nseg; /* 0: constant rate, rate[0]; else profile */
	uint64_t off;
	uint64_t dur[ISTH_SCHED_MAX_SEGS];
	uint64_t rate[ISTH_SCHED_MAX_SEGS];
	int line;
};

struct round {
	int set;
	int ncl;
	int line;
	uint64_t cl[NMAX];
	uint8_t of[NMAX];
	/* version 4: reduction trees, 0 for a clique round; parent id per
	 * island, -1 for the root; the lines that gave them (0: the setter) */
	int ntree;
	int8_t par[ISTH_SCHED_MAX_TREES][NMAX];
	int tree_line[ISTH_SCHED_MAX_TREES];
};

struct sroute {
	int r, j, i, nh;
	uint8_t hop[NMAX]; /* islands from j to i, both included */
};

struct isth_sched {
	int n;
	char name[NMAX][ISTH_SCHED_NAME_MAX];
	uint64_t T, epoch, payload, chunk, memory;
	uint64_t peak[NMAX]; /* version 2: peak aggregation memory per edge */
	int peak_line[NMAX]; /* its line in the file, 0 if set by the API */
	uint8_t has_peak[NMAX];
	struct sroute *route; /* version 2: the planned path of (round, sender, receiver) */
	int nroute, caproute;
	/* version 3: what the plan was made for (isthmus-plan --replication,
	 * --dtype), and the lines that said so (0 if set by the API) */
	enum isth_sched_repl repl;
	int repl_line;
	char dtype[16]; /* "" unstated, else a lib/wire dtype name */
	int dtype_line;
	double loss; /* isthmus-plan --expected-loss; ISTH_SCHED_LOSS_UNSTATED: none */
	int loss_line;
	int nrounds;
	struct round *rounds;
	struct sender *snd; /* nrounds * n */
	char note[ISTH_SCHED_NOTE_MAX]; /* isth_sched_set_note(): "" or a comment line */
};

static uint64_t
all_mask(int n)
{
	return n == 64 ? ~0ULL : (1ULL << n) - 1;
}

static int
alloc_rounds(struct isth_sched *s, int nrounds)
{
	s->nrounds = nrounds;
	s->rounds = calloc(nrounds, sizeof(*s->rounds));
	s->snd = calloc((size_t)nrounds * s->n, sizeof(*s->snd));
	return (s->rounds && s->snd) ? 0 : -ENOMEM;
}

void
isth_sched_free(struct isth_sched *s)
{
	if (s == NULL)
		return;
	free(s->rounds);
	free(s->snd);
	free(s->route);
	free(s);
}

struct isth_sched *
isth_sched_new(int n, const char *const *names, uint64_t round_ns, uint64_t epoch_ns,
	uint64_t payload_bytes, uint64_t chunk_bytes, uint64_t memory_bytes, int nrounds)
{
	struct isth_sched *s;
	int i;

	if (n < 1 || n > NMAX || names == NULL || round_ns == 0 ||
		round_ns > ISTH_SCHED_MAX_ROUND_NS || nrounds < 1 ||
		nrounds > ISTH_SCHED_MAX_ROUNDS) {
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (names[i] == NULL || !isth_text_valid_name(names[i], ISTH_SCHED_NAME_MAX)) {
			errno = EINVAL;
			return NULL;
		}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	s->n = n;
	for (i = 0; i < n; i++)
		snprintf(s->name[i], sizeof(s->name[i]), "%s", names[i]);
	s->T = round_ns;
	s->loss = ISTH_SCHED_LOSS_UNSTATED;
	s->epoch = epoch_ns;
	s->payload = payload_bytes;
	s->chunk = chunk_bytes;
	s->memory = memory_bytes;
	if (alloc_rounds(s, nrounds) < 0) {
		isth_sched_free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

int
isth_sched_set_round(struct isth_sched *s, int r, int ncliques, const uint64_t *cliques)
{
	struct round *R;
	int c, i;

	if (s == NULL || r < 0 || r >= s->nrounds || ncliques < 1 || ncliques > NMAX ||
		cliques == NULL)
		return -EINVAL;
	R = &s->rounds[r];
	R->set = 1;
	R->ntree = 0; /* trees belong to the partition they were set on */
	R->ncl = ncliques;
	memcpy(R->cl, cliques, ncliques * sizeof(uint64_t));
	for (c = 0; c < ncliques; c++)
		for (i = 0; i < s->n; i++)
			if (cliques[c] >> i & 1)
				R->of[i] = c;
	return 0;
}

int
isth_sched_set_sender(struct isth_sched *s, int r, int i, uint64_t offset_ns, int nseg,
	const uint64_t *dur_ns, const uint64_t *rate_bps)
{
	struct sender *S;

	if (s == NULL || r < 0 || r >= s->nrounds || i < 0 || i >= s->n || nseg < 1 ||
		nseg > ISTH_SCHED_MAX_SEGS || rate_bps == NULL || (dur_ns == NULL && nseg != 1))
		return -EINVAL;
	S = &s->snd[(size_t)r * s->n + i];
	S->set = 1;
	S->off = offset_ns;
	S->nseg = dur_ns ? nseg : 0;
	memcpy(S->rate, rate_bps, nseg * sizeof(uint64_t));
	if (dur_ns)
		memcpy(S->dur, dur_ns, nseg * sizeof(uint64_t));
	return 0;
}

int
isth_sched_set_note(struct isth_sched *s, const char *text)
{
	if (s == NULL || text == NULL || strlen(text) >= sizeof(s->note) ||
		strpbrk(text, "\r\n") != NULL)
		return -EINVAL;
	snprintf(s->note, sizeof(s->note), "%s", text);
	return 0;
}

/* 'expected-loss P' in the fewest digits that read back as the same
 * double (0.01, not 0.01000000000000000021), so that save and load agree */
static void
write_loss(FILE *f, double loss)
{
	char b[40];
	int prec;

	for (prec = 1; prec < 17; prec++) {
		snprintf(b, sizeof(b), "%.*g", prec, loss);
		if (strtod(b, NULL) == loss)
			break;
	}
	snprintf(b, sizeof(b), "%.*g", prec, loss);
	fprintf(f, "expected-loss %s\n", b);
}

/* 'tree <r> <t> <p0>,...,<pn-1>', '-' for the root */
static void
write_tree(FILE *f, int n, int r, int t, const int8_t *par)
{
	int i;

	fprintf(f, "tree %d %d ", r, t);
	for (i = 0; i < n; i++) {
		if (par[i] < 0)
			fprintf(f, "%s-", i ? "," : "");
		else
			fprintf(f, "%s%d", i ? "," : "", par[i]);
	}
	fprintf(f, "\n");
}

int
isth_sched_write(const struct isth_sched *s, FILE *f)
{
	int i, r, c, k;

	if (s == NULL || f == NULL)
		return -EINVAL;
	for (i = 0; i < s->n && !s->has_peak[i]; i++)
		;
	for (r = 0; r < s->nrounds && s->rounds[r].ntree == 0; r++)
		;
	/* the lowest version that carries what the schedule holds */
	fprintf(f, "isthmus-schedule %d\n",
		r < s->nrounds                                   ? ISTH_SCHED_VERSION_TREE
			: s->repl || s->dtype[0] || s->loss >= 0 ? ISTH_SCHED_VERSION_PLANNED
			: i < s->n || s->nroute                  ? ISTH_SCHED_VERSION_PEAK
								 : ISTH_SCHED_VERSION);
	if (s->note[0])
		fprintf(f, "# %s\n", s->note);
	fprintf(f, "# written by isthmus; format: doc/schedule-file.md\n");
	fprintf(f, "islands %d\n", s->n);
	for (i = 0; i < s->n; i++)
		fprintf(f, "island %d %s\n", i, s->name[i]);
	fprintf(f, "round-ns %" PRIu64 "\n", s->T);
	if (s->epoch)
		fprintf(f, "epoch %" PRIu64 "\n", s->epoch);
	else
		fprintf(f, "epoch runtime\n");
	fprintf(f, "payload-bytes %" PRIu64 "\n", s->payload);
	fprintf(f, "chunk-bytes %" PRIu64 "\n", s->chunk);
	fprintf(f, "memory-bytes %" PRIu64 "\n", s->memory);
	if (s->repl)
		fprintf(f, "replication %s\n", isth_sched_repl_name(s->repl));
	if (s->dtype[0])
		fprintf(f, "dtype %s\n", s->dtype);
	if (s->loss >= 0)
		write_loss(f, s->loss);
	for (i = 0; i < s->n; i++)
		if (s->has_peak[i])
			fprintf(f, "peak-bytes %d %" PRIu64 "\n", i, s->peak[i]);
	fprintf(f, "rounds %d\n", s->nrounds);
	for (r = 0; r < s->nrounds; r++) {
		const struct round *R = &s->rounds[r];

		fprintf(f, "round %d", r);
		for (c = 0; c < R->ncl; c++)
			fprintf(f, " 0x%" PRIx64, R->cl[c]);
		fprintf(f, "\n");
		for (k = 0; k < R->ntree; k++)
			write_tree(f, s->n, r, k, R->par[k]);
		for (i = 0; i < s->n; i++) {
			const struct sender *S = &s->snd[(size_t)r * s->n + i];

			if (!S->set)
				continue;
			fprintf(f, "send %d %d %" PRIu64, r, i, S->off);
			if (S->nseg == 0) {
				fprintf(f, " %" PRIu64 "\n", S->rate[0]);
				continue;
			}
			fprintf(f, " profile");
			for (k = 0; k < S->nseg; k++)
				fprintf(f, "%s%" PRIu64 ":%" PRIu64, k ? "," : " ", S->dur[k],
					S->rate[k]);
			fprintf(f, "\n");
		}
		for (k = 0; k < s->nroute; k++) {
			const struct sroute *Q = &s->route[k];

			if (Q->r != r)
				continue;
			fprintf(f, "route %d %d %d ", r, Q->j, Q->i);
			for (c = 0; c < Q->nh; c++)
				fprintf(f, "%s%d", c ? "," : "", Q->hop[c]);
			fprintf(f, "\n");
		}
	}
	fprintf(f, "end\n");
	return ferror(f) ? -EIO : 0;
}

/* ---- loader ---- */

struct pctx {
	const char *file;
	int line;
	char *err;
	size_t errlen;
};

static int __attribute__((format(printf, 2, 3))) perr(struct pctx *P, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return isth_text_seterr(P->err, P->errlen, P->file, P->line, 0, "%s", msg);
}

/*
 * A number of the file: decimal ("010" is ten, never octal), or hex after
 * "0x", the form the clique bitmaps are written in (doc/schedule-file.md:
 * "decimal or 0x hex"): lib/text's one reader of such fields. 0 or -1.
 */
static int
parse_u64(const char *s, uint64_t *v)
{
	return isth_text_parse_u64_or_hex(s, v) < 0 ? -1 : 0;
}

/* A number in [lo, hi]; an empty range (hi < lo: no round defined yet) holds none. */
static int
parse_int(const char *s, int lo, int hi, int *v)
{
	uint64_t x;

	if (hi < lo || parse_u64(s, &x) < 0 || x < (uint64_t)lo || x > (uint64_t)hi)
		return -1;
	*v = (int)x;
	return 0;
}

#define MAXTOK (NMAX + 8)

enum { ST_MAGIC, ST_HEADER, ST_ROUNDS, ST_END };

/* Record a route; the caller has validated it. 0 or -ENOMEM / -EEXIST. */
static int
add_route(struct isth_sched *s, int r, int j, int i, const int *hops, int nh)
{
	struct sroute *Q;
	int k;

	for (k = 0; k < s->nroute; k++)
		if (s->route[k].r == r && s->route[k].j == j && s->route[k].i == i)
			return -EEXIST;
	if (s->nroute == s->caproute) {
		int nc = s->caproute ? 2 * s->caproute : 64;
		void *p = realloc(s->route, nc * sizeof(*s->route));

		if (p == NULL)
			return -ENOMEM;
		s->route = p;
		s->caproute = nc;
	}
	Q = &s->route[s->nroute++];
	Q->r = r;
	Q->j = j;
	Q->i = i;
	Q->nh = nh;
	for (k = 0; k < nh; k++)
		Q->hop[k] = (uint8_t)hops[k];
	return 0;
}

/* 0 if hops is a loop-free island path from j to i, both in one clique of round r. */
static const char *
route_invalid(const struct isth_sched *s, int r, int j, int i, const int *hops, int nh)
{
	uint64_t seen = 0;
	int k;

	if (j == i)
		return "sender and receiver are the same island";
	if (!(s->rounds[r].cl[s->rounds[r].of[j]] >> i & 1))
		return "receiver is not in the sender's clique";
	if (nh < 2 || hops[0] != j || hops[nh - 1] != i)
		return "path must run from the sender to the receiver";
	for (k = 0; k < nh; k++) {
		if (hops[k] < 0 || hops[k] >= s->n)
			return "island out of range";
		if (seen >> hops[k] & 1)
			return "path visits an island twice";
		seen |= 1ULL << hops[k];
	}
	return NULL;
}

/*
 * A comma-separated list of island ids (0..n-1), and '-' (read as -1) where
 * @p dash allows it, into @p out (at most NMAX + 1 entries, so that a list
 * one too long is seen). Its length, or -1 if malformed.
 */
static int
parse_ids(const char *c, int n, int dash, int *out)
{
	int nh = 0;

	while (*c) {
		char num[16];
		size_t l = strcspn(c, ",");

		if (nh == NMAX + 1 || l == 0 || l >= sizeof(num))
			return -1;
		memcpy(num, c, l);
		num[l] = '\0';
		if (dash && strcmp(num, "-") == 0)
			out[nh] = -1;
		else if (parse_int(num, 0, n - 1, &out[nh]) < 0)
			return -1;
		nh++;
		c += l;
		if (*c == ',' && *++c == '\0')
			return -1;
	}
	return nh;
}

static int
parse_route(struct pctx *P, struct isth_sched *s, char **tok, int nextround)
{
	int r, j, i, nh, hops[NMAX + 1], rc;
	const char *why;

	if (parse_int(tok[1], 0, nextround - 1, &r) < 0)
		return perr(P, "route: bad round '%s' (a round defined above)", tok[1]);
	if (parse_int(tok[2], 0, s->n - 1, &j) < 0 || parse_int(tok[3], 0, s->n - 1, &i) < 0)
		return perr(P, "route: bad island '%s' or '%s'", tok[2], tok[3]);
	nh = parse_ids(tok[4], s->n, 0, hops);
	if (nh < 0 || nh > NMAX)
		return perr(P, "route: bad path '%s'", tok[4]);
	why = route_invalid(s, r, j, i, hops, nh);
	if (why)
		return perr(P, "route %d %d %d: %s", r, j, i, why);
	rc = add_route(s, r, j, i, hops, nh);
	if (rc == -EEXIST)
		return perr(P, "route %d %d %d: duplicate", r, j, i);
	return rc;
}

/*
 * Why @p parent (n entries) is not a spanning tree of round @p r's islands
 * rooted at one of them, into @p why; NULL if it is one. Only a round that is
 * one clique of all islands has trees: its sum is the global sum.
 */
static const char *
tree_invalid(const struct isth_sched *s, int r, const int *parent, char *why, size_t len)
{
	const struct round *R = &s->rounds[r];
	int i, k, root = -1;

	if (R->ncl != 1 || R->cl[0] != all_mask(s->n))
		return "a tree needs a round that is one clique of all islands";
	for (i = 0; i < s->n; i++) {
		if (parent[i] < -1 || parent[i] >= s->n) {
			snprintf(why, len, "island %d: parent %d out of range", i, parent[i]);
			return why;
		}
		if (parent[i] == i) {
			snprintf(why, len, "cycle: island %d is its own parent", i);
			return why;
		}
		if (parent[i] >= 0)
			continue;
		if (root >= 0) {
			snprintf(why, len, "two roots (islands %d and %d)", root, i);
			return why;
		}
		root = i;
	}
	if (root < 0)
		return "no root ('-'): a cycle";
	/* acyclic: from every island the root is at most n - 1 parents away */
	for (i = 0; i < s->n; i++) {
		int at = i;

		for (k = 0; k < s->n && at != root; k++)
			at = parent[at];
		if (at != root) {
			snprintf(why, len, "cycle through island %d: not spanning", i);
			return why;
		}
	}
	return NULL;
}

static void
store_tree(struct round *R, int t, const int *parent, int n, int line)
{
	int i;

	for (i = 0; i < n; i++)
		R->par[t][i] = (int8_t)parent[i];
	R->tree_line[t] = line;
	if (t == R->ntree)
		R->ntree++;
}

/* 'tree <r> <t> <p0>,...,<pn-1>' (version 4) */
static int
parse_tree(struct pctx *P, struct isth_sched *s, char **tok, int nextround)
{
	int r, t, nh, parent[NMAX + 1];
	const char *why;
	char buf[96];
	struct round *R;

	if (parse_int(tok[1], 0, nextround - 1, &r) < 0)
		return perr(P, "tree: bad round '%s' (a round defined above)", tok[1]);
	R = &s->rounds[r];
	if (parse_int(tok[2], 0, ISTH_SCHED_MAX_TREES - 1, &t) < 0)
		return perr(P, "tree: bad tree '%s' (0..%d)", tok[2], ISTH_SCHED_MAX_TREES - 1);
	if (t < R->ntree)
		return perr(P, "tree %d %d: duplicate (first on line %d)", r, t, R->tree_line[t]);
	if (t > R->ntree)
		return perr(P, "tree %d %d: out of order (expected tree %d)", r, t, R->ntree);
	nh = parse_ids(tok[3], s->n, 1, parent);
	if (nh < 0)
		return perr(P, "tree %d %d: bad parent list '%s' (island ids and one '-')", r, t,
			tok[3]);
	if (nh != s->n)
		return perr(P, "tree %d %d: %d parents for %d islands%s", r, t, nh, s->n,
			nh < s->n ? " (not spanning)" : "");
	why = tree_invalid(s, r, parent, buf, sizeof(buf));
	if (why)
		return perr(P, "tree %d %d: %s", r, t, why);
	store_tree(R, t, parent, s->n, P->line);
	return 0;
}

static int
check_header_done(struct pctx *P, struct isth_sched *s, const int *have)
{
	static const char *keys[] = {
		"islands", "round-ns", "epoch", "payload-bytes", "chunk-bytes", "memory-bytes"};
	int i;

	for (i = 0; i < 6; i++)
		if (!have[i])
			return perr(P, "'%s' missing before 'rounds'", keys[i]);
	for (i = 0; i < s->n; i++)
		if (s->name[i][0] == '\0')
			return perr(P, "island %d has no 'island' line", i);
	return 0;
}

static int
parse_send(struct pctx *P, struct isth_sched *s, char **tok, int nt, int nextround)
{
	struct sender *S;
	int r, i, k;
	uint64_t off;

	if (nt != 5 && !(nt == 6 && strcmp(tok[4], "profile") == 0))
		return perr(P,
			"expected 'send <round> <island> <offset-ns> <rate-bps>' or "
			"'... profile <dur-ns>:<rate-bps>,...'");
	if (parse_int(tok[1], 0, s->nrounds - 1, &r) < 0)
		return perr(P, "bad round '%s' (0..%d)", tok[1], s->nrounds - 1);
	if (r >= nextround)
		return perr(P, "send for round %d before its 'round' line", r);
	if (parse_int(tok[2], 0, INT32_MAX, &i) < 0 || i >= s->n)
		return perr(P, "island %s out of range (0..%d)", tok[2], s->n - 1);
	if (parse_u64(tok[3], &off) < 0)
		return perr(P, "bad offset-ns '%s'", tok[3]);
	if (off >= s->T)
		return perr(P, "offset %" PRIu64 " >= round-ns %" PRIu64, off, s->T);
	S = &s->snd[(size_t)r * s->n + i];
	if (S->set)
		return perr(P, "duplicate send for island %d in round %d (first on line %d)", i, r,
			S->line);
	if (!(s->rounds[r].cl[s->rounds[r].of[i]] & ~(1ULL << i)))
		return perr(P, "island %d sends in round %d but has no peers", i, r);
	S->set = 1;
	S->line = P->line;
	S->off = off;
	if (nt == 5) {
		double dur;

		if (parse_u64(tok[4], &S->rate[0]) < 0 || S->rate[0] == 0)
			return perr(P, "bad rate-bps '%s' (must be > 0)", tok[4]);
		dur = (double)s->payload * 8e9 / (double)S->rate[0];
		if ((double)off + dur > (double)s->T)
			return perr(P,
				"stream of island %d in round %d ends at %.0f ns, after round-ns "
				"%" PRIu64,
				i, r, (double)off + dur, s->T);
		S->nseg = 0;
		return 0;
	}
	{
		char *save = NULL, *seg;
		double bits = 0, t = (double)off;

		k = 0;
		for (seg = strtok_r(tok[5], ",", &save); seg; seg = strtok_r(NULL, ",", &save)) {
			char *colon = strchr(seg, ':');

			if (k == ISTH_SCHED_MAX_SEGS)
				return perr(
					P, "more than %d profile segments", ISTH_SCHED_MAX_SEGS);
			if (colon == NULL)
				return perr(P,
					"bad profile segment '%s' (want <dur-ns>:<rate-bps>)", seg);
			*colon = '\0';
			if (parse_u64(seg, &S->dur[k]) < 0 || S->dur[k] == 0 ||
				parse_u64(colon + 1, &S->rate[k]) < 0)
				return perr(P, "bad profile segment '%s:%s'", seg, colon + 1);
			bits += (double)S->dur[k] * (double)S->rate[k] / 1e9;
			t += (double)S->dur[k];
			k++;
		}
		if (k == 0)
			return perr(P, "empty profile");
		if (t > (double)s->T)
			return perr(P,
				"profile of island %d in round %d ends at %.0f ns, after round-ns "
				"%" PRIu64,
				i, r, t, s->T);
		if (bits < (double)s->payload * 8 * (1 - 1e-9))
			return perr(P,
				"profile of island %d in round %d carries %.0f bits, payload needs "
				"%.0f",
				i, r, bits, (double)s->payload * 8);
		S->nseg = k;
	}
	return 0;
}

static int
parse_round(struct pctx *P, struct isth_sched *s, char **tok, int nt, int *nextround)
{
	struct round *R;
	uint64_t seen = 0, all = all_mask(s->n);
	int r, c, i;

	if (nt < 3)
		return perr(P, "expected 'round <index> <clique-bitmap>...'");
	if (parse_int(tok[1], 0, INT32_MAX, &r) < 0 || r != *nextround)
		return perr(P, "round '%s' out of order (expected %d)", tok[1], *nextround);
	if (r >= s->nrounds)
		return perr(P, "round %d but 'rounds %d'", r, s->nrounds);
	R = &s->rounds[r];
	R->line = P->line;
	R->ncl = nt - 2;
	for (c = 0; c < R->ncl; c++) {
		uint64_t m;

		if (parse_u64(tok[2 + c], &m) < 0 || m == 0)
			return perr(P, "bad clique bitmap '%s'", tok[2 + c]);
		if (m & ~all) {
			for (i = 0; i < 64 && !((m & ~all) >> i & 1); i++)
				;
			return perr(P, "clique %s: island %d out of range (0..%d)", tok[2 + c], i,
				s->n - 1);
		}
		if (m & seen) {
			for (i = 0; !((m & seen) >> i & 1); i++)
				;
			return perr(
				P, "cliques overlap: island %d (%s) in two cliques", i, s->name[i]);
		}
		seen |= m;
		R->cl[c] = m;
		for (i = 0; i < s->n; i++)
			if (m >> i & 1)
				R->of[i] = c;
	}
	if (seen != all) {
		for (i = 0; (seen >> i & 1); i++)
			;
		return perr(P, "not a partition: island %d (%s) in no clique", i, s->name[i]);
	}
	R->set = 1;
	(*nextround)++;
	return 0;
}

/* The parser's state between lines: the schedule so far and where in the grammar. */
struct pstate {
	struct pctx P;
	struct isth_sched *s;
	int st; /* ST_*: the magic, the header, the rounds, after 'end' */
	int version; /* from the magic line */
	int nextround; /* the next 'round' line expected */
	int have[6]; /* header keys seen, in check_header_done()'s order */
};

enum { HAVE_ISLANDS, HAVE_ROUND_NS, HAVE_EPOCH, HAVE_PAYLOAD, HAVE_CHUNK, HAVE_MEMORY };

static int
parse_magic(struct pstate *ps, char **tok, int nt)
{
	int v;

	if (strcmp(tok[0], "isthmus-schedule") != 0 || nt != 2)
		return perr(&ps->P, "not a schedule file (expected 'isthmus-schedule %d')",
			ISTH_SCHED_VERSION);
	if (parse_int(tok[1], 0, INT32_MAX, &v) < 0 || v < ISTH_SCHED_VERSION ||
		v > ISTH_SCHED_VERSION_TREE)
		return perr(&ps->P, "unsupported version '%s' (this loader reads %d to %d)", tok[1],
			ISTH_SCHED_VERSION, ISTH_SCHED_VERSION_TREE);
	ps->version = v;
	ps->st = ST_HEADER;
	return 0;
}

/* 'rounds R': the header is complete; the cycle's tables are allocated. */
static int
hdr_rounds(struct pstate *ps, char **tok)
{
	int r, ret = check_header_done(&ps->P, ps->s, ps->have);

	if (ret)
		return ret;
	if (parse_int(tok[1], 1, ISTH_SCHED_MAX_ROUNDS, &r) < 0)
		return perr(&ps->P, "bad rounds '%s' (1..%d)", tok[1], ISTH_SCHED_MAX_ROUNDS);
	if (alloc_rounds(ps->s, r) < 0)
		return -ENOMEM;
	ps->st = ST_ROUNDS;
	return 0;
}

static int
hdr_islands(struct pstate *ps, char **tok)
{
	if (ps->have[HAVE_ISLANDS])
		return perr(&ps->P, "duplicate 'islands'");
	if (parse_int(tok[1], 1, NMAX, &ps->s->n) < 0)
		return perr(&ps->P, "bad islands '%s' (1..%d)", tok[1], NMAX);
	ps->have[HAVE_ISLANDS] = 1;
	return 0;
}

static int
hdr_island(struct pstate *ps, char **tok)
{
	struct isth_sched *s = ps->s;
	int i, k;

	if (!ps->have[HAVE_ISLANDS])
		return perr(&ps->P, "'island' before 'islands'");
	if (parse_int(tok[1], 0, INT32_MAX, &i) < 0 || i >= s->n)
		return perr(&ps->P, "island %s out of range (0..%d)", tok[1], s->n - 1);
	if (!isth_text_valid_name(tok[2], ISTH_SCHED_NAME_MAX))
		return perr(&ps->P, "bad island name '%s'", tok[2]);
	if (s->name[i][0])
		return perr(&ps->P, "island %d named twice", i);
	for (k = 0; k < s->n; k++)
		if (strcmp(s->name[k], tok[2]) == 0)
			return perr(&ps->P, "duplicate island name '%s'", tok[2]);
	snprintf(s->name[i], sizeof(s->name[i]), "%s", tok[2]);
	return 0;
}

static int
hdr_round_ns(struct pstate *ps, char **tok)
{
	struct isth_sched *s = ps->s;

	if (parse_u64(tok[1], &s->T) < 0 || s->T == 0)
		return perr(&ps->P, "bad round-ns '%s' (must be > 0)", tok[1]);
	if (s->T > ISTH_SCHED_MAX_ROUND_NS)
		return perr(&ps->P, "round-ns %s out of range (1..%llu, one hour)", tok[1],
			(unsigned long long)ISTH_SCHED_MAX_ROUND_NS);
	ps->have[HAVE_ROUND_NS] = 1;
	return 0;
}

static int
hdr_epoch(struct pstate *ps, char **tok)
{
	struct isth_sched *s = ps->s;

	if (strcmp(tok[1], "runtime") == 0)
		s->epoch = 0;
	else if (parse_u64(tok[1], &s->epoch) < 0 || s->epoch == 0)
		return perr(&ps->P, "bad epoch '%s' (want 'runtime' or ns > 0)", tok[1]);
	ps->have[HAVE_EPOCH] = 1;
	return 0;
}

static int
hdr_payload(struct pstate *ps, char **tok)
{
	uint64_t v;

	if (parse_u64(tok[1], &v) < 0 || v == 0)
		return perr(&ps->P, "bad payload-bytes '%s' (must be > 0)", tok[1]);
	ps->s->payload = v;
	ps->have[HAVE_PAYLOAD] = 1;
	return 0;
}

static int
hdr_chunk(struct pstate *ps, char **tok)
{
	if (parse_u64(tok[1], &ps->s->chunk) < 0)
		return perr(&ps->P, "bad chunk-bytes '%s'", tok[1]);
	ps->have[HAVE_CHUNK] = 1;
	return 0;
}

static int
hdr_memory(struct pstate *ps, char **tok)
{
	if (parse_u64(tok[1], &ps->s->memory) < 0)
		return perr(&ps->P, "bad memory-bytes '%s'", tok[1]);
	ps->have[HAVE_MEMORY] = 1;
	return 0;
}

static int
hdr_peak(struct pstate *ps, char **tok)
{
	struct isth_sched *s = ps->s;
	int i;

	if (!ps->have[HAVE_ISLANDS] || parse_int(tok[1], 0, s->n - 1, &i) < 0)
		return perr(&ps->P, "peak-bytes: bad island '%s'%s", tok[1],
			ps->have[HAVE_ISLANDS] ? "" : " ('islands' first)");
	if (s->has_peak[i])
		return perr(&ps->P, "duplicate peak-bytes for island %d (first on line %d)", i,
			s->peak_line[i]);
	if (parse_u64(tok[2], &s->peak[i]) < 0)
		return perr(&ps->P, "bad peak-bytes '%s'", tok[2]);
	s->has_peak[i] = 1;
	s->peak_line[i] = ps->P.line;
	return 0;
}

/* 'replication edge|network': what the plan was made for (version 3). */
static int
hdr_replication(struct pstate *ps, char **tok)
{
	struct isth_sched *s = ps->s;

	if (s->repl_line)
		return perr(&ps->P, "duplicate 'replication' (first on line %d)", s->repl_line);
	if (strcmp(tok[1], "edge") == 0)
		s->repl = ISTH_SCHED_REPL_EDGE;
	else if (strcmp(tok[1], "network") == 0)
		s->repl = ISTH_SCHED_REPL_NETWORK;
	else
		return perr(&ps->P, "bad replication '%s' (edge or network)", tok[1]);
	s->repl_line = ps->P.line;
	return 0;
}

/* 'dtype NAME': the element type the plan was made for (version 3). */
static int
hdr_dtype(struct pstate *ps, char **tok)
{
	struct isth_sched *s = ps->s;

	if (s->dtype_line)
		return perr(&ps->P, "duplicate 'dtype' (first on line %d)", s->dtype_line);
	if (!isth_sched_dtype_known(tok[1]))
		return perr(
			&ps->P, "bad dtype '%s' (an element type: fp32, bf16 or int32)", tok[1]);
	snprintf(s->dtype, sizeof(s->dtype), "%s", tok[1]);
	s->dtype_line = ps->P.line;
	return 0;
}

/* 'expected-loss P': the WAN loss rate the plan was made for (version 3), a
 * decimal fraction 0..ISTH_SCHED_MAX_LOSS (no hex, inf or nan: strtod's
 * extras are refused by the character set) */
static int
hdr_loss(struct pstate *ps, char **tok)
{
	struct isth_sched *s = ps->s;
	const char *v = tok[1];
	char *end;
	double p;

	if (s->loss_line)
		return perr(&ps->P, "duplicate 'expected-loss' (first on line %d)", s->loss_line);
	errno = 0;
	p = strtod(v, &end);
	if (strspn(v, "0123456789.eE+-") != strlen(v) || end == v || *end || errno ||
		!(p >= 0 && p <= ISTH_SCHED_MAX_LOSS))
		return perr(&ps->P,
			"bad expected-loss '%s' (a fraction of the frames lost, 0 to %g)", v,
			ISTH_SCHED_MAX_LOSS);
	s->loss = p + 0.0; /* -0 is 0: never written back as '-0' */
	s->loss_line = ps->P.line;
	return 0;
}

/* The header's lines: a key, its field count, the first version that has it. */
static const struct {
	const char *key;
	int nt;
	int version;
	int (*parse)(struct pstate *ps, char **tok);
} header_keys[] = {
	{"rounds", 2, ISTH_SCHED_VERSION, hdr_rounds},
	{"islands", 2, ISTH_SCHED_VERSION, hdr_islands},
	{"island", 3, ISTH_SCHED_VERSION, hdr_island},
	{"round-ns", 2, ISTH_SCHED_VERSION, hdr_round_ns},
	{"epoch", 2, ISTH_SCHED_VERSION, hdr_epoch},
	{"payload-bytes", 2, ISTH_SCHED_VERSION, hdr_payload},
	{"chunk-bytes", 2, ISTH_SCHED_VERSION, hdr_chunk},
	{"peak-bytes", 3, ISTH_SCHED_VERSION_PEAK, hdr_peak},
	{"memory-bytes", 2, ISTH_SCHED_VERSION, hdr_memory},
	{"replication", 2, ISTH_SCHED_VERSION_PLANNED, hdr_replication},
	{"dtype", 2, ISTH_SCHED_VERSION_PLANNED, hdr_dtype},
	{"expected-loss", 2, ISTH_SCHED_VERSION_PLANNED, hdr_loss},
};

static int
parse_header_line(struct pstate *ps, char **tok, int nt)
{
	size_t k;

	for (k = 0; k < sizeof(header_keys) / sizeof(header_keys[0]); k++) {
		if (strcmp(tok[0], header_keys[k].key) != 0 || nt != header_keys[k].nt)
			continue;
		if (ps->version < header_keys[k].version)
			return perr(&ps->P, "'%s' needs 'isthmus-schedule %d' or later on line 1",
				tok[0], header_keys[k].version);
		return header_keys[k].parse(ps, tok);
	}
	return perr(&ps->P, "unknown or malformed line '%s'", tok[0]);
}

static int
parse_rounds_line(struct pstate *ps, char **tok, int nt)
{
	if (strcmp(tok[0], "round") == 0)
		return parse_round(&ps->P, ps->s, tok, nt, &ps->nextround);
	if (strcmp(tok[0], "send") == 0)
		return parse_send(&ps->P, ps->s, tok, nt, ps->nextround);
	if (strcmp(tok[0], "route") == 0 && nt == 5 && ps->version >= ISTH_SCHED_VERSION_PEAK)
		return parse_route(&ps->P, ps->s, tok, ps->nextround);
	if (strcmp(tok[0], "tree") == 0 && nt == 4) {
		if (ps->version < ISTH_SCHED_VERSION_TREE)
			return perr(&ps->P, "'tree' needs 'isthmus-schedule %d' or later on line 1",
				ISTH_SCHED_VERSION_TREE);
		return parse_tree(&ps->P, ps->s, tok, ps->nextround);
	}
	return perr(&ps->P, "unknown or malformed line '%s'", tok[0]);
}

/* One line, comment stripped and split into @p nt fields (at least one). */
static int
parse_line(struct pstate *ps, char **tok, int nt)
{
	if (nt > MAXTOK)
		return perr(&ps->P, "too many fields");
	if (ps->st == ST_END)
		return perr(&ps->P, "content after 'end'");
	if (ps->st == ST_MAGIC)
		return parse_magic(ps, tok, nt);
	if (strcmp(tok[0], "end") == 0 && nt == 1) {
		if (ps->st != ST_ROUNDS)
			return perr(&ps->P, "'end' before 'rounds'");
		ps->st = ST_END;
		return 0;
	}
	if (ps->st == ST_HEADER)
		return parse_header_line(ps, tok, nt);
	return parse_rounds_line(ps, tok, nt);
}

/* What only the whole file can tell: its end, every round, every sender. */
static int
check_complete(struct pstate *ps)
{
	const struct isth_sched *s = ps->s;
	int r, i;

	if (ps->st != ST_END) {
		ps->P.line++;
		return perr(&ps->P, ps->st == ST_MAGIC ? "empty file" : "truncated: no 'end' line");
	}
	if (ps->nextround != s->nrounds)
		return perr(&ps->P, "only %d of %d rounds defined", ps->nextround, s->nrounds);
	for (r = 0; r < s->nrounds; r++)
		for (i = 0; i < s->n; i++) {
			const struct round *R = &s->rounds[r];

			if ((R->cl[R->of[i]] & ~(1ULL << i)) && !s->snd[(size_t)r * s->n + i].set) {
				ps->P.line = R->line;
				return perr(&ps->P,
					"round %d: island %d (%s) has peers but no send line", r, i,
					s->name[i]);
			}
		}
	return 0;
}

struct isth_sched *
isth_sched_parse(const char *name, const char *text, char *err, size_t errlen)
{
	struct pstate ps = {.P = {name ? name : "<schedule>", 0, err, errlen}, .st = ST_MAGIC};
	struct isth_text_lines it;
	char buf[4096];
	int ret = 0, rc;

	if (text == NULL) {
		errno = EINVAL;
		return NULL;
	}
	ps.s = calloc(1, sizeof(*ps.s));
	if (ps.s == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ps.s->loss = ISTH_SCHED_LOSS_UNSTATED;
	isth_text_lines_init(&it, text);
	while (ret == 0 && (rc = isth_text_next_copy(&it, buf, sizeof(buf))) != 0) {
		char *tok[MAXTOK];
		int nt;

		ps.P.line = (int)it.line;
		if (rc < 0) {
			ret = perr(&ps.P, "line too long");
			break;
		}
		isth_text_strip_comment(buf, '#');
		nt = isth_text_tokens(buf, tok, MAXTOK);
		if (nt > 0)
			ret = parse_line(&ps, tok, nt);
	}
	if (ret == 0)
		ret = check_complete(&ps);
	if (ret) {
		isth_sched_free(ps.s);
		errno = -ret;
		return NULL;
	}
	return ps.s;
}

struct isth_sched *
isth_sched_load(const char *path, char *err, size_t errlen)
{
	struct isth_sched *s;
	char *buf;
	int e;

	if (path == NULL) {
		errno = EINVAL;
		return NULL;
	}
	buf = isth_text_read(path, 0, NULL, err, errlen);
	if (buf == NULL)
		return NULL;
	s = isth_sched_parse(path, buf, err, errlen);
	e = errno;
	free(buf);
	errno = e;
	return s;
}

int
isth_sched_save(const struct isth_sched *s, const char *path, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m, *f;
	struct isth_sched *chk;
	int r, e;

	if (s == NULL || path == NULL)
		return -EINVAL;
	for (r = 0; r < s->nrounds; r++)
		if (!s->rounds[r].set) {
			if (err && errlen)
				snprintf(err, errlen, "%s: round %d has no partition", path, r);
			return -EINVAL;
		}
	m = open_memstream(&buf, &len);
	if (m == NULL)
		return -errno;
	if (isth_sched_write(s, m) < 0) {
		fclose(m);
		free(buf);
		return -EIO;
	}
	fclose(m);
	chk = isth_sched_parse("<schedule being written>", buf, err, errlen);
	if (chk == NULL) {
		free(buf);
		return -EINVAL;
	}
	isth_sched_free(chk);
	f = fopen(path, "w");
	if (f == NULL) {
		e = errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		free(buf);
		return -e;
	}
	if (fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		e = errno ? errno : EIO;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		free(buf);
		return -e;
	}
	free(buf);
	return 0;
}

/* ---- queries ---- */

static int
rmod(const struct isth_sched *s, int64_t r)
{
	int64_t m = r % s->nrounds;

	return (int)(m < 0 ? m + s->nrounds : m);
}

int
isth_sched_n_islands(const struct isth_sched *s)
{
	return s ? s->n : 0;
}

const char *
isth_sched_island_name(const struct isth_sched *s, int i)
{
	return (s && i >= 0 && i < s->n) ? s->name[i] : NULL;
}

int
isth_sched_island_id(const struct isth_sched *s, const char *name)
{
	int i;

	if (s == NULL || name == NULL)
		return -EINVAL;
	for (i = 0; i < s->n; i++)
		if (strcmp(s->name[i], name) == 0)
			return i;
	return -ENOENT;
}

int
isth_sched_n_rounds(const struct isth_sched *s)
{
	return s ? s->nrounds : 0;
}

uint64_t
isth_sched_round_ns(const struct isth_sched *s)
{
	return s ? s->T : 0;
}

uint64_t
isth_sched_epoch_ns(const struct isth_sched *s)
{
	return s ? s->epoch : 0;
}

uint64_t
isth_sched_payload_bytes(const struct isth_sched *s)
{
	return s ? s->payload : 0;
}

uint64_t
isth_sched_chunk_bytes(const struct isth_sched *s)
{
	return s ? s->chunk : 0;
}

uint64_t
isth_sched_memory_bytes(const struct isth_sched *s)
{
	return s ? s->memory : 0;
}

int
isth_sched_n_cliques(const struct isth_sched *s, int64_t r)
{
	return s ? s->rounds[rmod(s, r)].ncl : 0;
}

uint64_t
isth_sched_clique_at(const struct isth_sched *s, int64_t r, int c)
{
	const struct round *R;

	if (s == NULL)
		return 0;
	R = &s->rounds[rmod(s, r)];
	return (c >= 0 && c < R->ncl) ? R->cl[c] : 0;
}

uint64_t
isth_sched_clique(const struct isth_sched *s, int64_t r, int i)
{
	const struct round *R;

	if (s == NULL || i < 0 || i >= s->n)
		return 0;
	R = &s->rounds[rmod(s, r)];
	return R->cl[R->of[i]];
}

uint64_t
isth_sched_peers(const struct isth_sched *s, int64_t r, int i)
{
	return isth_sched_clique(s, r, i) & ~(1ULL << (i & 63));
}

int
isth_sched_sender(
	const struct isth_sched *s, int64_t r, int i, uint64_t *offset_ns, uint64_t *rate_bps)
{
	const struct sender *S;

	if (s == NULL || i < 0 || i >= s->n)
		return -EINVAL;
	S = &s->snd[(size_t)rmod(s, r) * s->n + i];
	if (!S->set)
		return -ENOENT;
	if (offset_ns)
		*offset_ns = S->off;
	if (rate_bps)
		*rate_bps = S->rate[0];
	return S->nseg ? S->nseg : 1;
}

int
isth_sched_segment(
	const struct isth_sched *s, int64_t r, int i, int k, uint64_t *dur_ns, uint64_t *rate_bps)
{
	const struct sender *S;

	if (s == NULL || i < 0 || i >= s->n || k < 0)
		return -EINVAL;
	S = &s->snd[(size_t)rmod(s, r) * s->n + i];
	if (!S->set)
		return -ENOENT;
	if (S->nseg == 0) {
		if (k != 0)
			return -EINVAL;
		if (dur_ns)
			*dur_ns = (uint64_t)((double)s->payload * 8e9 / (double)S->rate[0] + 0.5);
		if (rate_bps)
			*rate_bps = S->rate[0];
		return 0;
	}
	if (k >= S->nseg)
		return -EINVAL;
	if (dur_ns)
		*dur_ns = S->dur[k];
	if (rate_bps)
		*rate_bps = S->rate[k];
	return 0;
}

void
isth_sched_round_at(
	const struct isth_sched *s, uint64_t ns_since_epoch, uint64_t *round, uint64_t *into_ns)
{
	if (s == NULL)
		return;
	if (round)
		*round = ns_since_epoch / s->T;
	if (into_ns)
		*into_ns = ns_since_epoch % s->T;
}

int
isth_sched_set_peak(struct isth_sched *s, int i, uint64_t bytes)
{
	if (s == NULL || i < 0 || i >= s->n)
		return -EINVAL;
	s->peak[i] = bytes;
	s->peak_line[i] = 0;
	s->has_peak[i] = 1;
	return 0;
}

int
isth_sched_peak(const struct isth_sched *s, int i, uint64_t *bytes, int *line)
{
	if (s == NULL || i < 0 || i >= s->n)
		return -EINVAL;
	if (!s->has_peak[i])
		return -ENOENT;
	if (bytes)
		*bytes = s->peak[i];
	if (line)
		*line = s->peak_line[i];
	return 0;
}

const char *
isth_sched_repl_name(enum isth_sched_repl repl)
{
	switch (repl) {
	case ISTH_SCHED_REPL_EDGE:
		return "edge";
	case ISTH_SCHED_REPL_NETWORK:
		return "network";
	default:
		return "unstated";
	}
}

int
isth_sched_set_replication(struct isth_sched *s, enum isth_sched_repl repl)
{
	if (s == NULL ||
		(repl != ISTH_SCHED_REPL_UNSTATED && repl != ISTH_SCHED_REPL_EDGE &&
			repl != ISTH_SCHED_REPL_NETWORK))
		return -EINVAL;
	s->repl = repl;
	s->repl_line = 0;
	return 0;
}

enum isth_sched_repl
isth_sched_replication(const struct isth_sched *s, int *line)
{
	if (line)
		*line = s ? s->repl_line : 0;
	return s ? s->repl : ISTH_SCHED_REPL_UNSTATED;
}

/* lib/wire's names of the types that carry elements (size > 0): one list */
int
isth_sched_dtype_known(const char *name)
{
	unsigned int k;

	if (name == NULL)
		return 0;
	for (k = 0; k <= ISTH_WIRE_DTYPE_MAX; k++)
		if (isth_wire_dtype_size(k) > 0 && strcmp(isth_wire_dtype_name(k), name) == 0)
			return 1;
	return 0;
}

int
isth_sched_set_dtype(struct isth_sched *s, const char *name)
{
	if (s == NULL || (name != NULL && !isth_sched_dtype_known(name)))
		return -EINVAL;
	snprintf(s->dtype, sizeof(s->dtype), "%s", name ? name : "");
	s->dtype_line = 0;
	return 0;
}

const char *
isth_sched_dtype(const struct isth_sched *s, int *line)
{
	if (line)
		*line = s ? s->dtype_line : 0;
	return s && s->dtype[0] ? s->dtype : NULL;
}

int
isth_sched_set_expected_loss(struct isth_sched *s, double loss)
{
	if (s == NULL ||
		(loss != ISTH_SCHED_LOSS_UNSTATED && !(loss >= 0 && loss <= ISTH_SCHED_MAX_LOSS)))
		return -EINVAL;
	s->loss = loss + 0.0; /* -0 is 0 */
	s->loss_line = 0;
	return 0;
}

double
isth_sched_expected_loss(const struct isth_sched *s, int *line)
{
	if (line)
		*line = s ? s->loss_line : 0;
	return s ? s->loss : ISTH_SCHED_LOSS_UNSTATED;
}

int
isth_sched_set_route(struct isth_sched *s, int r, int j, int i, const int *hops, int nh)
{
	if (s == NULL || hops == NULL || r < 0 || r >= s->nrounds || j < 0 || j >= s->n || i < 0 ||
		i >= s->n || nh > NMAX || !s->rounds[r].set || route_invalid(s, r, j, i, hops, nh))
		return -EINVAL;
	return add_route(s, r, j, i, hops, nh);
}

int
isth_sched_route(const struct isth_sched *s, int r, int j, int i, int *hops, int max)
{
	int k, q;

	if (s == NULL || r < 0 || r >= s->nrounds)
		return -EINVAL;
	for (k = 0; k < s->nroute; k++) {
		const struct sroute *Q = &s->route[k];

		if (Q->r != r || Q->j != j || Q->i != i)
			continue;
		for (q = 0; q < Q->nh && q < max; q++)
			hops[q] = Q->hop[q];
		return Q->nh;
	}
	return -ENOENT;
}

int
isth_sched_set_tree(struct isth_sched *s, int r, int t, const int *parent)
{
	char why[96];

	if (s == NULL || parent == NULL || r < 0 || r >= s->nrounds || !s->rounds[r].set || t < 0 ||
		t >= ISTH_SCHED_MAX_TREES || t > s->rounds[r].ntree ||
		tree_invalid(s, r, parent, why, sizeof(why)))
		return -EINVAL;
	store_tree(&s->rounds[r], t, parent, s->n, 0);
	return 0;
}

int
isth_sched_n_trees(const struct isth_sched *s, int r)
{
	return s ? s->rounds[rmod(s, r)].ntree : 0;
}

int
isth_sched_tree(const struct isth_sched *s, int r, int t, int *parent, int *line)
{
	const struct round *R;
	int i;

	if (s == NULL || parent == NULL)
		return -EINVAL;
	R = &s->rounds[rmod(s, r)];
	if (t < 0 || t >= R->ntree)
		return -EINVAL;
	for (i = 0; i < s->n; i++)
		parent[i] = R->par[t][i];
	if (line)
		*line = R->tree_line[t];
	return 0;
}

int
isth_sched_tree_of_chunk(const struct isth_sched *s, int r, uint32_t chunk)
{
	int k;

	if (s == NULL)
		return -EINVAL;
	k = s->rounds[rmod(s, r)].ntree;
	return k ? (int)(chunk % (uint32_t)k) : -ENOENT;
}

/* self's parent and children in each tree of round @p r, for the view */
static void
view_trees(const struct isth_sched *s, int64_t r, int self, struct isth_sched_round_view *v)
{
	const struct round *R = &s->rounds[rmod(s, r)];
	int t, i;

	v->n_trees = (unsigned int)R->ntree;
	for (t = 0; t < R->ntree; t++) {
		v->tree_parent[t] = R->par[t][self];
		for (i = 0; i < s->n; i++)
			if (R->par[t][i] == self)
				v->tree_children[t] |= 1ULL << i;
	}
}

/*
 * One round as the edge of island @p self sees it, in one call (the
 * controller's per-round tables). Built from the getters above so that it
 * cannot disagree with them.
 */
int
isth_sched_round_view(
	const struct isth_sched *s, int64_t r, int self, struct isth_sched_round_view *v)
{
	unsigned int i;
	int rc;

	if (s == NULL || v == NULL || self < 0 || self >= s->n)
		return -EINVAL;
	memset(v, 0, sizeof(*v));
	v->round_ns = s->T;
	v->payload_bytes = s->payload;
	v->clique = isth_sched_clique(s, r, self);
	v->peers = isth_sched_peers(s, r, self);
	for (i = 0; i < (unsigned int)s->n; i++) {
		if (!(v->clique & (1ULL << i)))
			continue;
		if (i != (unsigned int)self)
			v->peer[v->n_peers++] = (uint8_t)i;
		rc = isth_sched_sender(s, r, (int)i, &v->snd[i].offset_ns, &v->snd[i].rate_bps);
		v->snd[i].n_segs = rc > 0 ? rc : 0;
	}
	view_trees(s, r, self, v);
	/* the local island's rate profile, for its pacer */
	for (i = 0; i < (unsigned int)v->snd[self].n_segs; i++)
		if (isth_sched_segment(s, r, self, (int)i, &v->seg[i].dur_ns, &v->seg[i].rate_bps) <
			0)
			return -EINVAL;
	return 0;
}
