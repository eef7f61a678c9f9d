/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Authentication at the edge (doc/isthmusd.md, "Authentication";
 * doc/protocol.md, "Authenticated format (v2)"): the key file, one tag
 * engine per thread that seals or verifies (each worker lcore: its own
 * intel-ipsec-mb engine, bursts; controller: its own engine for ROUND),
 * the replay windows of every stream the edge receives, and the seq
 * counters of the streams it starts. Everything is allocated here, at
 * start-up or by the controller at a key reload; the data path only calls
 * lib/auth's seal and verify, which allocate nothing.
 *
 * A key reload reaches every worker through lib/rtab (the round tables'
 * mechanism, on d->qs): the controller fills a key set with new engines in
 * the spare buffer, publishes it, and frees the old set's engines only
 * once every worker has passed a quiescent state since; each worker
 * reads the published set once per pass of its loop and uses its engine
 * only within that pass, so none is ever mid-seal on a freed engine.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_malloc.h>

#include "isth_clock.h"
#include "isthd.h"

static int
load_keys(const struct isthd *d, struct isth_auth **out, char *err, size_t err_size)
{
	struct isth_auth_conf ac;
	char e[512];
	int rc;

	memset(&ac, 0, sizeof(ac));
	ac.key_file = d->cfg.key_file;
	ac.job = d->cfg.job;
	ac.n_islands = d->n_islands;
	e[0] = '\0';
	*out = NULL;
	rc = isth_auth_create(&ac, out, e, sizeof(e));
	/* the job file or this edge's site file (isthmus-keys split); another
	 * site's file would refuse every seal of this edge's streams */
	if (rc == 0)
		rc = isth_auth_check_site(
			*out, ISTH_AUTH_SITE_EDGE, d->island, d->cfg.key_file, e, sizeof(e));
	if (rc) {
		/* lib/auth names the file (and line); never key bytes */
		snprintf(err, err_size, "%s: [auth] key_file: %s", d->cfg.path, e);
		isth_auth_free(*out);
		*out = NULL;
		return -EINVAL;
	}
	return 0;
}

/* ctl: free what a key set holds; its buffer (lib/rtab) stays, empty */
static void
keyset_release(struct isthd_keyset *ks)
{
	if (ks == NULL)
		return;
	for (unsigned int k = 0; k < ks->n_dp; k++)
		isth_auth_engine_free(ks->dp[k]);
	isth_auth_engine_free(ks->ctl);
	isth_auth_free(ks->keys);
	memset(ks, 0, sizeof(*ks));
}

/* ctl: fill the buffer @ks (not yet published) with @keys (taken over,
 * freed on failure) and an engine per worker and for the controller;
 * before the workers see it, so no engine is ever shared. */
static int
keyset_fill(const struct isthd *d, struct isthd_keyset *ks, struct isth_auth *keys, uint64_t gen)
{
	int rc;

	memset(ks, 0, sizeof(*ks));
	ks->keys = keys;
	ks->gen = gen;
	rc = isth_auth_engine_create(keys, ISTH_AUTH_OPENSSL, &ks->ctl);
	for (unsigned int k = 0; rc == 0 && k < RTE_MAX(d->n_workers, 1u); k++) {
		rc = isth_auth_engine_create(keys, ISTH_AUTH_IPSEC_MB, &ks->dp[k]);
		if (rc == 0)
			ks->n_dp = k + 1;
	}
	if (rc)
		keyset_release(ks);
	return rc;
}

int
isthd_auth_prepare(struct isthd *d, char *err, size_t err_size)
{
	unsigned int body;
	int rc;

	d->auth.on = d->cfg.auth;
	if (!d->auth.on) {
		fprintf(stderr,
			"isthmusd: WARNING: [auth] mode = off in %s: wire version 1, NOTHING IS "
			"AUTHENTICATED; anyone who reaches the access or WAN port can inject "
			"DATA into the sums (labs only; doc/security.md)\n",
			d->cfg.path);
		return 0;
	}
	/* the device verifies the one-tag WAN format (doc/fpga-interface.md
	 * 3.8); the WAN carries pairwise tag lists, which it cannot pick its
	 * own tag from: refused rather than every peer's DATA refused */
	if (strcmp(d->cfg.backend, "fpga") == 0) {
		snprintf(err, err_size,
			"%s: [isthmusd] backend = fpga with [auth] mode = on: the device "
			"verifies one WAN tag per frame, and WAN frames carry a tag per "
			"receiving edge (pairwise keys, doc/protocol.md \"WAN tag list\"); "
			"use backend = sw, or mode = off in a lab",
			d->cfg.path);
		return -ENOTSUP;
	}
	rc = isthd_auth_list_room(d, d->sched, err, err_size);
	if (rc < 0)
		return rc;
	/* room for the largest tag list the job's islands allow, the rule
	 * the island applies too (isth_auth_wan_room): the chunk size the
	 * ROUND announces (max_elems) is the island's, and every edge's, so
	 * its peers' DATA carries the count it expects; a NACK or repair to
	 * one peer carries a list of one, 8 bytes more than the one tag */
	body = d->lim.max_elems * 4u;
	d->lim.max_elems = (uint16_t)((body - (unsigned int)isth_auth_wan_room(d->n_islands)) / 4u);
	if (d->lim.max_ranges * 16u + 8u > body)
		d->lim.max_ranges = (uint16_t)((body - 8u) / 16u);
	return load_keys(d, &d->auth.keys, err, err_size);
}

int
isthd_auth_list_room(const struct isthd *d, const struct isth_sched *s, char *err, size_t err_size)
{
	struct isth_sched_round_view v;
	unsigned int most = 0;

	if (!d->cfg.auth)
		return 0;
	for (int r = 0; r < isth_sched_n_rounds(s); r++)
		for (int i = 0; i < isth_sched_n_islands(s); i++) {
			if (isth_sched_round_view(s, r, i, &v) != 0)
				continue;
			if (v.n_peers > ISTH_AUTH_MAX_TAGS) {
				snprintf(err, err_size,
					"%s: round %d: island %s has %u peers, but a WAN tag "
					"list holds at most %u tags (trailer_len is one "
					"byte): with [auth] mode = on a clique has at most "
					"%u islands",
					d->cfg.path, r, isth_sched_island_name(s, i), v.n_peers,
					ISTH_AUTH_MAX_TAGS, ISTH_AUTH_MAX_TAGS + 1);
				return -E2BIG;
			}
			most = RTE_MAX(most, v.n_peers);
		}
	return (int)most;
}

/* Island hosts ([access] island_hosts), at least 1. */
static inline unsigned int
n_hosts(const struct isthd *d)
{
	return RTE_MAX(d->cfg.n_island_hosts, 1u);
}

/* Window slots per key epoch: UP DATA and NACK of each host of the local
 * island, then WAN DATA, NACK, GONE and PARTIAL of every island. */
static inline unsigned int
streams_per_epoch(const struct isthd *d)
{
	/* UP, per host: DATA, NACK; per sender on the WAN: DATA, NACK,
	 * GONE, PARTIAL */
	return 2 * n_hosts(d) + 4 * d->n_islands;
}

int
isthd_auth_setup(struct isthd *d, char *err, size_t err_size)
{
	struct isthd_auth *au = &d->auth;
	uint64_t per_round, bits, now;
	unsigned int i, n_epochs;
	int rc;

	if (!au->on)
		return 0;
	/* the key sets: one published, one spare buffer for a reload's
	 * (lib/rtab, reclaimed after every worker's quiescent state) */
	{
		struct isth_rtab_params rp = {
			.n_slots = 1,
			.n_spare = 1,
			.size = sizeof(struct isthd_keyset),
			.qs = d->qs,
		};
		struct isthd_keyset *ks;

		au->sets = isth_rtab_create(&rp);
		ks = au->sets != NULL ? isth_rtab_prepare(au->sets) : NULL;
		if (ks == NULL) {
			snprintf(err, err_size, "%s: [auth]: key sets: no memory", d->cfg.path);
			return -ENOMEM;
		}
		/* the set takes the handle over */
		rc = keyset_fill(d, ks, au->keys, 1);
		au->keys = NULL;
		if (rc) {
			snprintf(err, err_size, "%s: [auth]: tag engine: %s", d->cfg.path,
				strerror(-rc));
			return rc;
		}
		isth_rtab_publish(au->sets, 0, ks);
		au->ks_ctl = ks;
	}
	au->keys = au->ks_ctl->keys;
	au->ctl = au->ks_ctl->ctl;
	au->ks_rx = au->ks_ctl;
	au->gen_rx = au->ks_ctl->gen;
	for (i = 0; i < RTE_MAX(d->n_workers, 1u); i++)
		d->workers[i].eng = au->ks_ctl->dp[i];
	/* A window covers two rounds of a stream: a sender's chunks plus
	 * what may be repaired of them (the most a peer's NACKs can get:
	 * repair.c, isthd_repair_peer_max), twice. */
	per_round = (uint64_t)d->shape.n_chunks + d->rep.peer_max;
	bits = 64;
	while (bits < 2 * per_round && bits < (1ull << 31))
		bits <<= 1;
	au->win_bits = (uint32_t)bits;
	/* a slot per epoch the key file may hold: a reload may bring new
	 * epochs while the current ones keep their windows */
	au->n_win = ISTH_AUTH_MAX_EPOCHS * streams_per_epoch(d);
	au->win = rte_zmalloc("isthd_auth_win", sizeof(*au->win) * au->n_win, 64);
	au->words = rte_zmalloc("isthd_auth_words",
		sizeof(uint64_t) * isth_auth_replay_words(au->win_bits) * au->n_win, 64);
	if (au->win == NULL || au->words == NULL) {
		snprintf(err, err_size, "%s: [auth]: %u replay windows of %u bits: no memory",
			d->cfg.path, au->n_win, au->win_bits);
		return -ENOMEM;
	}
	for (i = 0; i < au->n_win; i++)
		isth_auth_replay_init(&au->win[i],
			au->words + (size_t)i * isth_auth_replay_words(au->win_bits), au->win_bits);
	for (i = 0; i < ISTH_AUTH_MAX_EPOCHS; i++)
		au->slot_epoch[i] = -1;
	n_epochs = isth_auth_n_epochs(au->keys);
	for (i = 0; i < n_epochs; i++) {
		uint8_t id;

		isth_auth_epoch_info(au->keys, i, &id, NULL);
		au->slot_epoch[i] = id;
	}
	/* the key set owns the keys from here, and a reload frees them with
	 * the set: no second pointer that would dangle after a rotation */
	au->keys = NULL;
	/* Streams the edge starts begin at the wall clock's ns: a restarted
	 * edge starts above every seq it used before (doc/protocol.md, "IV");
	 * each stream has one writer: GONE of stream k and (the RX worker)
	 * NACK worker k's, ROUND the controller's */
	now = isth_clock_real_ns();
	d->seq_round = now;
	au->seq_data = now;
	for (i = 0; i < RTE_MAX(d->n_workers, 1u); i++)
		d->workers[i].seq_gone = d->workers[i].seq_nack = now;
	return 0;
}

void
isthd_auth_fini(struct isthd *d)
{
	struct isthd_auth *au = &d->auth;

	if (au->ks_ctl == NULL) /* prepared (--check), never set up */
		isth_auth_free(au->keys);
	/* the workers have stopped: the set published and the one a reload
	 * replaced (if its grace period had not ended) */
	keyset_release(au->ks_old);
	keyset_release(au->ks_ctl);
	isth_rtab_destroy(au->sets);
	au->sets = NULL;
	au->ks_rx = NULL;
	au->ks_ctl = au->ks_old = NULL;
	au->keys = NULL;
	au->ctl = NULL;
	for (unsigned int k = 0; k < ISTHD_MAX_WORKERS; k++)
		d->workers[k].eng = NULL;
	rte_free(au->win);
	rte_free(au->words);
	au->win = NULL;
	au->words = NULL;
}

void
isthd_auth_reload(struct isthd *d, uint64_t cur)
{
	struct isthd_auth *au = &d->auth;
	struct isthd_keyset *ks;
	struct isth_auth *keys;
	char err[PATH_MAX + 600];
	uint64_t r;
	int rc;

	if (!au->on)
		return;
	/* the set the previous reload replaced must be freed first (its
	 * buffer is the spare this one fills) */
	isthd_auth_ctl_step(d);
	if (au->ks_old != NULL) {
		fprintf(stderr,
			"isthmusd: key reload refused: the previous one is not done (a worker "
			"has not passed a quiescent state since)\n");
		return;
	}
	if (load_keys(d, &keys, err, sizeof(err)) != 0) {
		fprintf(stderr, "isthmusd: key reload refused: %s\n", err);
		return;
	}
	/* rounds already running or published keep their epoch: only a
	 * future round may start a new one */
	for (r = cur; r <= cur + 1; r++)
		if (isth_auth_epoch_of(keys, (uint32_t)r) !=
			isth_auth_epoch_of(au->ks_ctl->keys, (uint32_t)r)) {
			fprintf(stderr,
				"isthmusd: key reload refused: %s changes the key epoch of round "
				"%" PRIu64 ", already running or published\n",
				d->cfg.key_file, r);
			isth_auth_free(keys);
			return;
		}
	/* a device that verifies or seals gets the new epochs first
	 * (auth_dev.c); those of running rounds keep their key slot */
	if ((au->dev_verify || au->dev_seal) &&
		(rc = isth_backend_set_keys(d->workers[0].be, keys)) < 0) {
		fprintf(stderr, "isthmusd: key reload refused: backend key slots: %s\n",
			strerror(-rc));
		isth_auth_free(keys);
		return;
	}
	/* the spare buffer: free, since no set waits for its grace period */
	ks = isth_rtab_prepare(au->sets);
	if (ks == NULL) {
		fprintf(stderr, "isthmusd: key reload refused: no free key set\n");
		isth_auth_free(keys);
		return;
	}
	rc = keyset_fill(d, ks, keys, au->ks_ctl->gen + 1);
	if (rc) {
		fprintf(stderr, "isthmusd: key reload refused: tag engine: %s\n", strerror(-rc));
		return;
	}
	/* every worker takes it at the start of its next pass (release
	 * store; the old set is retired with an rte_rcu_qsbr_start() token
	 * and freed by isthd_auth_ctl_step once every worker reported) */
	isth_rtab_publish(au->sets, 0, ks);
	au->ks_old = au->ks_ctl;
	au->ks_ctl = ks;
	au->ctl = ks->ctl;
	printf("isthmusd: key file %s reloaded: %u key epochs\n", d->cfg.key_file,
		isth_auth_n_epochs(keys));
}

void
isthd_auth_ctl_step(struct isthd *d)
{
	struct isthd_auth *au = &d->auth;

	/* the only retired buffer is ks_old's: it comes back free once
	 * every online worker has reported since the reload published its
	 * successor (a worker offline, asleep or stopped, holds none) */
	if (!au->on || au->ks_old == NULL || isth_rtab_reclaim(au->sets) == 0)
		return;
	keyset_release(au->ks_old);
	au->ks_old = NULL;
}

void
isthd_auth_step(struct isthd_worker *w)
{
	struct isthd *d = w->d;
	struct isthd_auth *au = &d->auth;
	const struct isthd_keyset *ks = isth_rtab_get(au->sets, 0);
	unsigned int i, j, n, words = isth_auth_replay_words(au->win_bits);
	uint8_t ids[ISTH_AUTH_MAX_EPOCHS];

	/* used until the next quiescent report (top of the loop) only: the
	 * controller may free the set once a newer one is published */
	w->eng = ks->dp[w->id];
	if (!(w->role & ISTHD_ROLE_RX))
		return;
	/* the RX worker: its replay windows follow the set's epochs */
	au->ks_rx = ks;
	if (likely(ks->gen == au->gen_rx))
		return;
	n = isth_auth_n_epochs(ks->keys);
	for (i = 0; i < n; i++)
		isth_auth_epoch_info(ks->keys, i, &ids[i], NULL);
	/* epochs gone from the file free their slot; new ones take a free
	 * slot with empty windows; the others keep theirs */
	for (j = 0; j < ISTH_AUTH_MAX_EPOCHS; j++) {
		bool kept = false;

		for (i = 0; i < n; i++)
			kept |= au->slot_epoch[j] == ids[i];
		if (!kept)
			au->slot_epoch[j] = -1;
	}
	for (i = 0; i < n; i++) {
		int free_slot = -1;
		bool have = false;

		for (j = 0; j < ISTH_AUTH_MAX_EPOCHS; j++) {
			have |= au->slot_epoch[j] == ids[i];
			if (au->slot_epoch[j] < 0 && free_slot < 0)
				free_slot = (int)j;
		}
		if (have || free_slot < 0)
			continue;
		au->slot_epoch[free_slot] = ids[i];
		for (j = 0; j < streams_per_epoch(d); j++) {
			unsigned int x = (unsigned int)free_slot * streams_per_epoch(d) + j;

			memset(au->words + (size_t)x * words, 0, words * sizeof(uint64_t));
			isth_auth_replay_init(
				&au->win[x], au->words + (size_t)x * words, au->win_bits);
		}
	}
	au->gen_rx = ks->gen;
}

struct isth_auth_replay *
isthd_auth_window(struct isthd *d, enum isth_auth_dir dir, const uint8_t *msg, unsigned int host)
{
	struct isthd_auth *au = &d->auth;
	unsigned int e, s, type = msg[ISTH_WIRE_OFF_TYPE], sender = isth_wire_get_hdr_sender(msg);
	unsigned int wan = 2 * n_hosts(d); /* the first WAN slot */

	for (e = 0; e < ISTH_AUTH_MAX_EPOCHS; e++)
		if (au->slot_epoch[e] == msg[ISTH_WIRE_OFF_EPOCH])
			break;
	if (e == ISTH_AUTH_MAX_EPOCHS || sender >= d->n_islands)
		return NULL;
	if (dir == ISTH_AUTH_UP) {
		/* each island host is a sender of its own, with its own seq
		 * base: its own windows, chosen by the source address the
		 * caller matched against [access] island_hosts */
		if (host >= n_hosts(d))
			return NULL; /* refused later as access_bad_source */
		if (type == ISTH_WIRE_DATA)
			s = 2 * host;
		else if (type == ISTH_WIRE_NACK)
			s = 2 * host + 1;
		else
			return NULL; /* refused later as access_bad_type */
	} else {
		if (type == ISTH_WIRE_DATA)
			s = wan + 4 * sender;
		else if (type == ISTH_WIRE_NACK)
			s = wan + 1 + 4 * sender;
		else if (type == ISTH_WIRE_GONE)
			s = wan + 2 + 4 * sender;
		else if (type == ISTH_WIRE_PARTIAL)
			s = wan + 3 + 4 * sender; /* tree rounds: up and down, one stream */
		else
			return NULL; /* refused later as wan_bad_type */
	}
	return &au->win[e * streams_per_epoch(d) + s];
}

void
isthd_auth_wan_seq(struct isthd *d, uint8_t *msg)
{
	/* one host: its seq goes on, as it always did (nothing to pay) */
	if (likely(d->cfg.n_island_hosts <= 1))
		return;
	/* before the tag list is computed: the seq is under it and in the
	 * IV; one writer (the RX worker), one seq per DATA it forwards, so
	 * under each pair key no two of its DATA share an IV */
	isth_wire_set_seq(msg, d->auth.seq_data++);
}

uint64_t
isthd_auth_host_seq0(uint64_t now, unsigned int host)
{
	/* host h's streams start h lanes of 2^56 ns (2.3 years) below the
	 * clock: below it, so an island never finds them ahead (auth_ahead),
	 * and a lane reaches the next one's seqs only after 2^56 ns of one
	 * key epoch, since every stream advances slower than the clock */
	return now - (uint64_t)host * ISTHD_AUTH_HOST_LANE;
}

static const enum isthd_drop status_drop[ISTH_AUTH_STATUS_MAX] = {
	[ISTH_AUTH_OK] = ISTHD_DROP_MAX,
	[ISTH_AUTH_E_FORMAT] = ISTHD_DROP_auth_format,
	[ISTH_AUTH_E_KEY] = ISTHD_DROP_auth_key,
	[ISTH_AUTH_E_EPOCH] = ISTHD_DROP_auth_epoch,
	[ISTH_AUTH_E_TAG] = ISTHD_DROP_auth_tag,
	[ISTH_AUTH_E_REPLAY] = ISTHD_DROP_auth_replay,
	[ISTH_AUTH_E_STALE] = ISTHD_DROP_auth_stale,
	[ISTH_AUTH_E_AHEAD] = ISTHD_DROP_auth_ahead,
};

/*
 * Several island hosts share the island's UP key and each has its own
 * replay window, chosen by the source address, which the tag does not
 * cover. A genuine host k of K only ever uses seqs = k mod K (lib/island
 * steps its DATA and NACK seqs by K from there), so a seq of another
 * lane is refused: a packet of one host re-sent from another's address
 * can then never be accepted into the other's window, and no seq (hence
 * no IV under the shared key) is ever used by two hosts.
 */
static inline bool
host_lane_ok(const struct isthd *d, enum isth_auth_dir dir, uint64_t seq, unsigned int host)
{
	unsigned int k = n_hosts(d);

	return dir != ISTH_AUTH_UP || k <= 1 || seq % k == host;
}

/* The replay check of protocol step 6 without a change (lib/auth): the
 * window moves only at isthd_auth_commit(), once the packet passed every
 * check. A seq further ahead of @now_ns than [auth] seq_ahead is refused
 * first: a genuine sender's never is. */
static enum isth_auth_status
replay_check(struct isthd *d, enum isth_auth_dir dir, const struct isth_wire_pkt *p,
	unsigned int host, uint64_t now_ns)
{
	const struct isth_auth_replay *win;

	if (unlikely(isth_auth_seq_ahead(p->hdr.seq, now_ns, d->cfg.seq_ahead_ns)))
		return ISTH_AUTH_E_AHEAD;
	win = isthd_auth_window(d, dir, p->msg, host);
	return win != NULL ? isth_auth_replay_check(win, p->hdr.seq, p->hdr.round) : ISTH_AUTH_OK;
}

enum isthd_drop
isthd_auth_commit(struct isthd_worker *w, enum isth_auth_dir dir, const struct isth_wire_pkt *p,
	unsigned int host)
{
	struct isth_auth_replay *win;
	enum isth_auth_status s;

	if (!w->d->auth.on)
		return ISTHD_DROP_MAX;
	win = isthd_auth_window(w->d, dir, p->msg, host);
	if (win == NULL)
		return ISTHD_DROP_MAX;
	/* checked again: a copy earlier in the same burst may have taken
	 * the seq since the check */
	s = isth_auth_replay_commit(win, p->hdr.seq, p->hdr.round);
	return s == ISTH_AUTH_OK ? ISTHD_DROP_MAX : status_drop[s];
}

unsigned int
isthd_auth_verify_rx(struct isthd_worker *w, enum isth_auth_dir dir, struct rte_mbuf **m,
	struct isth_wire_pkt *p, const uint8_t *owner, uint8_t *host, unsigned int n)
{
	struct isthd *d = w->d;
	struct isth_auth_op ops[ISTHD_BURST];
	/* once per burst: a vDSO read, no system call */
	uint64_t now_ns = isth_clock_real_ns();
	unsigned int i, k = 0;

	for (i = 0; i < n; i++) {
		ops[i].msg = (uint8_t *)(uintptr_t)p[i].msg;
		ops[i].len = (uint32_t)p[i].msg_size;
		ops[i].cap = ops[i].len;
		/* the WAN speaks tag lists: this edge checks its own tag, under
		 * the pair key of (sender edge, this edge) */
		ops[i].dir = (uint8_t)(dir == ISTH_AUTH_WAN ? ISTH_AUTH_WAN_PAIR : dir);
		ops[i].owner = owner[i];
		ops[i].peers = UINT64_C(1) << d->island;
		ops[i].status = 0;
	}
	isth_auth_verify_burst(w->eng, ops, n);
	for (i = 0; i < n; i++) {
		enum isth_auth_status s = (enum isth_auth_status)ops[i].status;
		enum isthd_drop drop = ISTHD_DROP_MAX;

		/* the tag verified: the replay check, no change yet (the
		 * caller commits once the packet is accepted) */
		if (s == ISTH_AUTH_OK)
			s = replay_check(d, dir, &p[i], host != NULL ? host[i] : 0, now_ns);
		if (s != ISTH_AUTH_OK)
			drop = s < ISTH_AUTH_STATUS_MAX ? status_drop[s] : ISTHD_DROP_auth_tag;
		else if (unlikely(host != NULL && !host_lane_ok(d, dir, p[i].hdr.seq, host[i])))
			drop = ISTHD_DROP_auth_host_seq;
		if (unlikely(drop != ISTHD_DROP_MAX)) {
			isth_ctr_add(&w->st.drop[drop], 1);
			/* the tag verified, the seq did not: the host's own
			 * stream refused it (its address chose the window) */
			if (host != NULL && host[i] < ISTHD_ISLAND_MAX_HOSTS &&
				(s == ISTH_AUTH_E_REPLAY || s == ISTH_AUTH_E_STALE ||
					s == ISTH_AUTH_E_AHEAD || drop == ISTHD_DROP_auth_host_seq))
				isth_ctr_add(&w->st.host[host[i]][ISTHD_HOST_replay], 1);
			ISTHD_REPAIR_TRACE(d,
				"auth_drop %d type %u flags 0x%x r %u s %u c %u seq %" PRIu64,
				(int)s, p[i].hdr.type, p[i].hdr.flags, p[i].hdr.round,
				p[i].hdr.sender, p[i].hdr.chunk, (uint64_t)p[i].hdr.seq);
			rte_pktmbuf_free(m[i]);
			continue;
		}
		m[k] = m[i];
		if (k != i) {
			p[k] = p[i];
			if (host != NULL)
				host[k] = host[i];
		}
		k++;
	}
	return k;
}

/* @len without the trailer of @msg if it is sealed already (a repair or
 * resend whose flags changed: its room is reused); 0 if malformed. */
static size_t
unsealed_len(const uint8_t *msg, size_t len)
{
	size_t tl;

	if (msg[ISTH_WIRE_OFF_VERSION] != ISTH_WIRE_VERSION_AUTH)
		return len;
	tl = msg[ISTH_WIRE_OFF_TRAILER];
	return tl != 0 && len >= ISTH_WIRE_HDR_SIZE + tl ? len - tl : 0;
}

int
isthd_auth_seal_msg(struct isthd *d, struct isth_auth_engine *e, enum isth_auth_dir dir,
	uint8_t *msg, size_t len, size_t cap)
{
	len = unsealed_len(msg, len);
	if (len == 0)
		return -EINVAL;
	return isth_auth_seal(e, dir, d->island, msg, len, cap);
}

size_t
isthd_auth_peer_cap(const uint8_t *msg, size_t len)
{
	size_t u = unsealed_len(msg, len);

	return (u != 0 ? u : len) + isth_auth_list_size(1);
}

int
isthd_auth_seal_peer(struct isthd *d, struct isth_auth_engine *e, const struct isthd_peer *peer,
	uint8_t *msg, size_t len, size_t cap)
{
	unsigned int t;

	len = unsealed_len(msg, len);
	if (len == 0)
		return -EINVAL;
	/* the peer's island: peer_of[] is by island (a frame to one peer,
	 * a repair or a NACK, is rare next to the DATA: a short scan) */
	for (t = 0; t < d->n_islands && d->peer_of[t] != peer; t++)
		;
	if (t >= d->n_islands)
		return -EINVAL;
	return isth_auth_seal_list(e, d->island, UINT64_C(1) << t, msg, len, cap);
}

int
isthd_auth_seal_wan(struct isthd *d, struct isth_auth_engine *e, struct rte_mbuf *m, uint64_t r)
{
	const struct isthd_repair_round *rt = isthd_repair_round(d, r);
	uint32_t len = rte_pktmbuf_pkt_len(m);
	unsigned int k;
	size_t grow;
	uint8_t *msg;

	if (rt == NULL)
		return -ENOENT;
	/* a bye: no peer receives it, nothing to seal it for */
	if (rt->expected == 0)
		return 0;
	k = (unsigned int)__builtin_popcountll(rt->expected);
	if (k > ISTH_AUTH_MAX_TAGS || !rte_pktmbuf_is_contiguous(m) ||
		len < ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE)
		return -EINVAL;
	/* the island's one tag becomes the list: the room setup reserved
	 * (isthd_auth_list_room) is in the mbuf's tailroom */
	grow = isth_auth_list_size(k) - ISTH_AUTH_TAG_SIZE;
	/* a reloaded schedule with more peers than the room set at start-up
	 * would leave a frame above the MTU: refused (auth_seal), not sent */
	if (len + grow > d->cfg.mtu - ISTH_WIRE_IPV4_MIN_HDR_SIZE - ISTH_WIRE_UDP_HDR_SIZE)
		return -EMSGSIZE;
	if (rte_pktmbuf_append(m, (uint16_t)grow) == NULL)
		return -ENOSPC;
	msg = rte_pktmbuf_mtod(m, uint8_t *);
	return isth_auth_seal_list(
		e, d->island, rt->expected, msg, len - ISTH_AUTH_TAG_SIZE, len + grow);
}

unsigned int
isthd_auth_seal_frames(const struct isthd *d, struct isthd_dp_stats *st, struct isth_auth_engine *e,
	enum isth_auth_dir dir, struct rte_mbuf **m, unsigned int n, uint32_t off)
{
	struct isth_auth_op ops[ISTHD_BURST];
	unsigned int base, i, k = 0;

	/* in steps of the ops array: the caller's bursts fit in one */
	for (base = 0; base < n; base += ISTHD_BURST) {
		unsigned int c = RTE_MIN(n - base, (unsigned int)ISTHD_BURST);

		for (i = 0; i < c; i++) {
			uint32_t len = rte_pktmbuf_pkt_len(m[base + i]);

			ops[i].msg = rte_pktmbuf_mtod_offset(m[base + i], uint8_t *, off);
			/* a frame too short for a header and a tag is refused
			 * by lib/auth (len < header) */
			ops[i].len = len >= off + ISTH_AUTH_TAG_SIZE
				? len - off - ISTH_AUTH_TAG_SIZE
				: 0;
			ops[i].cap = len >= off ? len - off : 0;
			ops[i].dir = (uint8_t)dir;
			ops[i].owner = d->island;
			ops[i].status = 0;
		}
		isth_auth_seal_burst(e, ops, c);
		for (i = 0; i < c; i++) {
			if (unlikely(ops[i].status < 0)) {
				isth_ctr_add(&st->drop[ISTHD_DROP_auth_seal], 1);
				rte_pktmbuf_free(m[base + i]);
				continue;
			}
			m[k++] = m[base + i];
		}
	}
	if (dir == ISTH_AUTH_DOWN)
		isth_ctr_add(&st->sealed, k);
	return k;
}
