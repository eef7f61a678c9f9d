/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The controller: follows wall-clock rounds from the job's epoch and, ahead
 * of every boundary, publishes the next round's tables to the data path
 * (backend: expected contributors and peers; pacer: offset and rate). At
 * each boundary it sends ROUND to the island and logs the round that ended.
 *
 * It never stops the data path: the backend and the pacer take tables
 * through lib/rtab (the pacer: a plan per round slot, doc/isthmusd.md
 * "Round tables") and may ask for a retry (-EBUSY), which the next step
 * (every millisecond at most) does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "isth_clock.h"
#include "isth_log.h"
#include "isthd.h"

static const struct isth_sched *
sched_for(const struct isthd *d, uint64_t r)
{
	if (d->next_sched && r >= d->next_from)
		return d->next_sched;
	return d->sched;
}

static uint64_t
round_start(const struct isthd *d, uint64_t r)
{
	return d->clk.epoch_ns + r * d->clk.round_ns; /* a reload keeps T */
}

/* Round r as the local island's edge sees it (the schedule in force for r). */
static void
view_of(const struct isthd *d, uint64_t r, struct isth_sched_round_view *v)
{
	/* island is an id of that schedule (prepare, and a reload keeps the
	 * islands and their order): cannot fail */
	isth_sched_round_view(sched_for(d, r), (int64_t)r, d->island, v);
}

static int
publish_tables(struct isthd *d, uint64_t r)
{
	struct isth_mcast_peer peers[ISTHD_MAX_PEERS];
	struct isth_sched_round_view v;
	unsigned int n = 0, i;
	int rc;

	view_of(d, r, &v);
	/* a tree round: no DATA between peers (tree.c), a bye to the
	 * backend and to WAN repair; ROUND still names every island */
	if (isthd_tree_round(&d->tree, r) != NULL) {
		v.peers = 0;
		v.n_peers = 0;
	}
	if (d->cfg.wan_repl_network && v.n_peers > 0) {
		/* network replication: one copy to the clique's WAN group,
		 * which the WAN replicates; the backend's fan-out takes a
		 * single multicast destination as the group (isth_backend.h) */
		const struct isth_sched *s = sched_for(d, r);

		peers[0].island = ISTH_MCAST_NO_ISLAND;
		memset(peers[0].mac, 0, 6);
		peers[0].ip = isthd_group_ip(d->cfg.wan_group_base,
			(uint32_t)(r % (uint64_t)isth_sched_n_rounds(s)),
			v.peers | (1ull << d->island));
		peers[0].port = d->cfg.udp_port;
		n = 1;
		goto publish;
	}
	/* peer_of[] was built by name at start-up; island order */
	for (i = 0; i < v.n_peers; i++) {
		const struct isthd_peer *p = d->peer_of[v.peer[i]];

		if (p == NULL)
			continue;
		peers[n].island = v.peer[i];
		memcpy(peers[n].mac, p->mac, 6);
		peers[n].ip = p->ip;
		peers[n].port = p->port;
		n++;
	}
publish:
	/* every worker's backend (workers.c): all of them expect the round's
	 * contributors, each replicates the island's DATA to its own peers
	 * (isthd_egress_worker: rank in the round's peers, mod N; the group
	 * with network replication is worker 0's); one that asks for a
	 * retry is asked again, the ones that took the round are not */
	for (i = 0; i < RTE_MAX(d->n_workers, 1u); i++) {
		struct isth_mcast_peer mine[ISTHD_MAX_PEERS];
		const struct isth_mcast_peer *fo = peers;
		unsigned int n_fo = n;

		if (d->be_published[i] > r)
			continue;
		if (d->n_workers > 1) {
			n_fo = 0;
			for (unsigned int j = 0; j < n; j++)
				if (peers[j].island == ISTH_MCAST_NO_ISLAND
						? i == 0
						: isthd_egress_worker(
							  d, v.peers, peers[j].island) == i)
					mine[n_fo++] = peers[j];
			fo = mine;
		}
		rc = isth_backend_set_round(
			d->workers[i].be, d->cfg.job, (uint32_t)r, v.peers, fo, n_fo);
		if (rc < 0)
			return rc;
		d->be_published[i] = r + 1;
	}
	/* the data path's WAN repair: due times of tails (-EBUSY: the
	 * backends, which took the round, are not asked again) */
	return isthd_repair_publish(d, &v, r);
}

/* Round r's plan in worker k's pacer's slot r % 4 (every worker's pacer
 * gets the whole plan: each sends the stream to its own peers at the
 * planned rate); -EBUSY while the worker has not taken the plan the slot
 * holds or passed a quiescent state (lib/pace). */
static int
publish_pace(struct isthd *d, unsigned int w, uint64_t r)
{
	struct isth_pace *pace = d->workers[w].eg.pace;
	struct isth_pace_seg segs[ISTH_SCHED_MAX_SEGS + 1];
	struct isth_sched_round_view v;
	uint64_t at = 0, off;
	int n, k, m;

	if (isthd_tree_round(&d->tree, r) != NULL)
		return 0; /* no DATA to pace: PARTIALs go as they complete */
	view_of(d, r, &v);
	n = v.snd[d->island].n_segs;
	off = v.snd[d->island].offset_ns;
	if (n == 0)
		return 0; /* no peers this round: nothing to send */
	if (n == 1)
		return isth_pace_set_round(pace, (uint32_t)r,
			isthd_ns_to_tsc(d, round_start(d, r) + off), v.snd[d->island].rate_bps);
	m = 0;
	for (k = 0; k < n; k++) {
		if (v.seg[k].dur_ns == 0)
			continue; /* the pacer needs increasing offsets */
		segs[m].offset_ns = at;
		segs[m].rate_bps = v.seg[k].rate_bps;
		m++;
		at += v.seg[k].dur_ns;
	}
	/* after the profile, the stream is done */
	segs[m].offset_ns = at;
	segs[m].rate_bps = 0;
	return isth_pace_set_profile(pace, (uint32_t)r, isthd_ns_to_tsc(d, round_start(d, r) + off),
		segs, (unsigned int)m + 1);
}

static void
send_round(struct isthd *d, uint64_t r)
{
	struct isth_sched_round_view v;
	struct isth_wire_round body;
	struct isth_wire_hdr h;
	uint8_t b[ISTH_WIRE_ROUND_SIZE];
	struct rte_mbuf *m;
	uint8_t *p;
	int rc;

	view_of(d, r, &v);
	memset(&body, 0, sizeof(body));
	body.start_ns = round_start(d, r);
	body.deadline_ns = body.start_ns + v.round_ns;
	body.period_ns = v.round_ns;
	body.clique = v.clique;
	body.n_chunks = d->rep.n_chunks; /* a reload keeps the payload */
	body.chunk_elems = d->lim.max_elems;
	memset(&h, 0, sizeof(h));
	h.type = ISTH_WIRE_ROUND;
	h.sender = d->island;
	h.job = d->cfg.job;
	h.round = (uint32_t)r;
	h.bitmap = v.peers;
	/* the AGG streams the island follows: one per worker, field N - 1
	 * (doc/protocol.md, "AGG streams"); 0 with one worker */
	h.stream = (uint8_t)(RTE_MAX(d->n_workers, 1u) - 1);

	m = rte_pktmbuf_alloc(d->ctl_pool);
	if (m == NULL) {
		isth_ctr_add(&d->ctl_st.drop[ISTHD_DROP_round_no_mbuf], 1);
		return;
	}
	isth_wire_put_round(b, sizeof(b), &body);
	if (d->auth.on) {
		/* version 2: ROUND is a stream of its own, sealed with the
		 * island's DOWN key by the controller's engine */
		h.seq = d->seq_round++;
		p = (uint8_t *)rte_pktmbuf_append(
			m, ISTH_WIRE_HDR_SIZE + sizeof(b) + ISTH_AUTH_TAG_SIZE);
		isth_wire_build_msg(p, ISTH_WIRE_HDR_SIZE + sizeof(b), &h, b, sizeof(b), NULL);
		if (isthd_auth_seal_msg(d, d->auth.ctl, ISTH_AUTH_DOWN, p,
			    ISTH_WIRE_HDR_SIZE + sizeof(b),
			    ISTH_WIRE_HDR_SIZE + sizeof(b) + ISTH_AUTH_TAG_SIZE) < 0) {
			rte_pktmbuf_free(m);
			isth_ctr_add(&d->ctl_st.drop[ISTHD_DROP_round_no_mbuf], 1);
			return;
		}
	} else {
		p = (uint8_t *)rte_pktmbuf_append(m, ISTH_WIRE_HDR_SIZE + sizeof(b));
		isth_wire_build_msg(p, ISTH_WIRE_HDR_SIZE + sizeof(b), &h, b, sizeof(b), NULL);
	}
	/* to every host of the island (island.c) */
	rc = isthd_island_round_out(d, m);
	if (rc < 0)
		isth_ctr_add(&d->ctl_st.drop[rc == -ENOMEM ? ISTHD_DROP_round_no_mbuf
							   : ISTHD_DROP_ctl_ring_full],
			1);
}

static void
clique_names(const struct isthd *d, uint64_t set, char *buf, size_t size)
{
	size_t off = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < d->n_islands && off + 1 < size; i++) {
		if (!(set & (1ull << i)))
			continue;
		off += (size_t)snprintf(buf + off, size - off, "%s%s", off ? "," : "",
			isth_sched_island_name(d->sched, (int)i));
	}
}

static void
log_round(struct isthd *d, uint64_t r)
{
	struct isth_backend_counts be;
	struct isth_pace_stats ps;
	struct isthd_dp_stats st;
	struct isth_sched_round_view v;
	char names[256];
	uint64_t off;
	char actual[32] = "-";

	isthd_stats_sum(d, &st); /* relaxed snapshot, every worker's */
	isthd_backend_counts_sum(d, &be);
	isthd_pace_stats_sum(d, &ps);
	view_of(d, r, &v);
	off = v.snd[d->island].offset_ns;
	clique_names(d, v.clique, names, sizeof(names));
	/* "-" when nothing of this round left (no DATA, or a bye) */
	if (ps.round == r && ps.round_bytes > 0)
		snprintf(actual, sizeof(actual), "%.3f ms",
			(double)(off + ps.round_start_lag_ns) / 1e6);
	if (d->cfg.round_log) {
		char deltas[512];
		size_t n = 0;

		/* one field per entry of ISTHD_ROUND_LOG, in its order */
#define F(label, src, field, unit) \
	if (n < sizeof(deltas)) \
		n += (size_t)snprintf(deltas + n, sizeof(deltas) - n, "%s%s%" PRIu64 "%s", \
			n ? " " : "", label, src.field - d->last_##src.field, unit);
		ISTHD_ROUND_LOG(F)
#undef F
		printf("round %" PRIu64 " clique {%s} %s offset planned %.3f ms actual %s\n", r,
			names, deltas, (double)off / 1e6, actual);
	}
	fflush(stdout);
	d->last_st = st;
	d->last_be = be;
}

static void
maybe_reload(struct isthd *d, uint64_t cur)
{
	char err[512];
	struct isth_sched *s;
	const char *path = d->cfg.schedule;

	if (!d->reload)
		return;
	d->reload = false;
	isthd_auth_reload(d, cur); /* the key file too ([auth] mode = on) */
	s = isth_sched_load(path, err, sizeof(err));
	if (s == NULL) {
		ISTH_LOG_ERR("reload refused: %s", err);
		return;
	}
	/* planned for another replication or element type: as at start-up */
	if (isthd_sched_agrees(&d->cfg, s, path, err, sizeof(err)) < 0) {
		ISTH_LOG_ERR("reload refused: %s", err);
		isth_sched_free(s);
		return;
	}
	if ((uint32_t)isth_sched_n_islands(s) != d->n_islands ||
		isth_sched_island_id(s, isth_sched_island_name(d->sched, d->island)) != d->island) {
		ISTH_LOG_ERR("reload refused: %s has other islands", path);
		isth_sched_free(s);
		return;
	}
	/* Island ids are positions in the file: peer edges put them on the
	 * wire (sender, bitmaps) and peer_of[], the repair state and the
	 * rounds already published use them. Another order would mix two
	 * numberings across the switch: refuse it. */
	for (uint32_t i = 0; i < d->n_islands; i++) {
		const char *now = isth_sched_island_name(d->sched, (int)i);
		const char *then = isth_sched_island_name(s, (int)i);

		if (strcmp(now, then) != 0) {
			ISTH_LOG_ERR(
				"reload refused: %s lists the islands in another order "
				"(island %u is %s, running %s); restart the job with a new epoch "
				"instead",
				path, i, then, now);
			isth_sched_free(s);
			return;
		}
	}
	/* Tree tables are built at start-up (tree.c): the same trees only. */
	if (!isthd_tree_same(d, s)) {
		ISTH_LOG_ERR("reload refused: %s changes the tree rounds; restart the job instead",
			path);
		isth_sched_free(s);
		return;
	}
	/* The chunk count (ROUND, repair bitmaps) is sized from the payload. */
	if (isth_sched_payload_bytes(s) != isth_sched_payload_bytes(d->sched)) {
		ISTH_LOG_ERR("reload refused: %s changes the payload (%" PRIu64
			     " B, running %" PRIu64 " B); restart the job instead",
			path, isth_sched_payload_bytes(s), isth_sched_payload_bytes(d->sched));
		isth_sched_free(s);
		return;
	}
	/* Round boundaries are epoch + r * T for every r: a new T would move
	 * the boundaries of rounds already running elsewhere. */
	if (isth_sched_round_ns(s) != isth_sched_round_ns(d->sched)) {
		ISTH_LOG_ERR("reload refused: %s changes T (%.3f ms, running %.3f ms); "
			     "restart the job with a new epoch instead",
			path, (double)isth_sched_round_ns(s) / 1e6,
			(double)isth_sched_round_ns(d->sched) / 1e6);
		isth_sched_free(s);
		return;
	}
	isth_sched_free(d->next_sched);
	d->next_sched = s;
	/* rounds up to cur + 1 are already published: switch after them */
	d->next_from = cur + 2;
	ISTH_LOG_INFO("schedule %s takes effect at round %" PRIu64, path, d->next_from);
}

/*
 * The first step decides the first round the edge takes part in. Started
 * before the epoch: round 0. Started after it (a restart, or a late
 * start): not the round running, whose peers' DATA went by while the edge
 * was down and whose ROUND the island would get late, but the next one
 * whose tables are surely published before it starts (a margin of
 * join_margin() is left for the handoffs' retries); rounds before it are
 * never published, announced or NACKed, so the edge joins at a boundary
 * with the round clock, the peers and the island: a restarted edge's
 * peers' streams of that round are new to it (its replay windows start
 * with them, doc/isthmusd.md "Restart and rejoin").
 */
static uint64_t
join_margin(const struct isthd *d)
{
	uint64_t m = d->clk.round_ns / 4;

	return m < 20000000ull ? m : 20000000ull;
}

static void
join(struct isthd *d, uint64_t now_ns)
{
	uint64_t T = d->clk.round_ns, r, left;

	if (now_ns < d->clk.epoch_ns) {
		d->join1 = 1;
		return;
	}
	r = (now_ns - d->clk.epoch_ns) / T; /* running */
	left = d->clk.epoch_ns + (r + 1) * T - now_ns;
	r += left >= join_margin(d) ? 1 : 2;
	d->join1 = r + 1;
	__atomic_store_n(&d->published, r, __ATOMIC_RELEASE);
	for (unsigned int k = 0; k < ISTHD_MAX_WORKERS; k++)
		d->pace_published[k] = r;
	ISTH_LOG_INFO("joining at round %" PRIu64 " (started %.3f ms into round %" PRIu64 ")", r,
		(double)(T - left) / 1e6, (now_ns - d->clk.epoch_ns) / T);
}

/* One controller step at time @now_ns. Returns ns until the next step. */
int
isthd_control_step(struct isthd *d, uint64_t now_ns)
{
	uint64_t T = d->clk.round_ns;
	uint64_t cur, target, pub;
	int rc;

	isthd_auth_ctl_step(d); /* free a key set the worker retired */
	if (d->join1 == 0)
		join(d, now_ns);
	/* Promote a reloaded schedule once its first round is current. */
	cur = now_ns < d->clk.epoch_ns ? 0 : (now_ns - d->clk.epoch_ns) / T + 1;
	if (d->next_sched && cur >= d->next_from + 1) {
		isth_sched_free(d->sched);
		d->sched = d->next_sched;
		d->next_sched = NULL;
	}
	maybe_reload(d, cur ? cur - 1 : 0);
	/* Publish through the next round (rounds are 1-based here: 0 = none). */
	target = cur + 1;
	pub = __atomic_load_n(&d->published, __ATOMIC_RELAXED);
	while (pub < target) {
		rc = publish_tables(d, pub);
		if (rc == -EBUSY)
			break;
		if (rc < 0) {
			ISTH_LOG_ERR("round %" PRIu64 ": tables refused: %s", pub, strerror(-rc));
			return rc;
		}
		pub++;
		__atomic_store_n(&d->published, pub, __ATOMIC_RELEASE);
	}
	/* every worker's pacer, each retried on its own (-EBUSY) */
	for (unsigned int k = 0; k < RTE_MAX(d->n_workers, 1u); k++) {
		while (d->pace_published[k] < target && d->pace_published[k] < pub) {
			rc = publish_pace(d, k, d->pace_published[k]);
			if (rc == -EBUSY)
				break;
			if (rc < 0) {
				ISTH_LOG_ERR("round %" PRIu64 ": pacer of worker %u refused: %s",
					d->pace_published[k], k, strerror(-rc));
				return rc;
			}
			d->pace_published[k]++;
		}
	}
	if (cur != __atomic_load_n(&d->current, __ATOMIC_RELAXED)) {
		uint64_t old = __atomic_load_n(&d->current, __ATOMIC_RELAXED);

		__atomic_store_n(&d->current, cur, __ATOMIC_RELEASE);
		if (old && old >= d->join1)
			log_round(d, old - 1);
		/* ROUND only for rounds the edge takes part in, and only
		 * once their tables are out (they are, a round ahead, unless
		 * the backend's handoff kept refusing since the join) */
		if (cur && cur >= d->join1) {
			if (pub >= cur)
				send_round(d, cur - 1);
			else
				ISTH_LOG_WARN("round %" PRIu64
					      ": tables not published at its start, no ROUND",
					cur - 1);
		}
	}
	return 0;
}

int
isthd_control(struct isthd *d)
{
	while (!d->stop) {
		uint64_t now = isth_clock_real_ns(), T = d->clk.round_ns;
		uint64_t next, wait;
		bool reload = d->reload;
		int rc;

		if (reload)
			isthd_supervise_reloading();
		rc = isthd_control_step(d, now);
		if (rc < 0)
			return rc;
		isthd_supervise_tick(d, reload);
		/* --rounds N: round N starting means rounds 0..N-1 are over. */
		if (d->max_rounds && __atomic_load_n(&d->current, __ATOMIC_RELAXED) > d->max_rounds)
			break;
		/* Sleep to the next boundary, but at most 1 ms: retries and
		 * the stop flag are checked that often. */
		next = now < d->clk.epoch_ns
			? d->clk.epoch_ns
			: d->clk.epoch_ns + ((now - d->clk.epoch_ns) / T + 1) * T;
		wait = next - now;
		if (wait > 1000000)
			wait = 1000000;
		usleep((useconds_t)(wait / 1000 + 1));
	}
	return 0;
}
