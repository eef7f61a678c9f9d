/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Authentication at the edge (doc/isthmusd.md, "Authentication";
 * doc/protocol.md, "Authenticated format (v2)"): the key file, one tag
 * engine per thread that seals or verifies (worker lcore: intel-ipsec-mb,
 * bursts; controller: its own engine for ROUND), the replay windows of
 * every stream the edge receives, and the seq counters of the streams it
 * starts. Everything is allocated here, at start-up; the data path only
 * calls lib/auth's seal and verify, which allocate nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_common.h>
#include <rte_malloc.h>

#include "isthd.h"

int
isthd_auth_prepare(struct isthd *d, char *err, size_t err_size)
{
	struct isth_auth_conf ac;
	char e[512];
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
	memset(&ac, 0, sizeof(ac));
	ac.key_file = d->cfg.key_file;
	ac.job = d->cfg.job;
	ac.n_islands = d->n_islands;
	e[0] = '\0';
	rc = isth_auth_create(&ac, &d->auth.keys, e, sizeof(e));
	if (rc) {
		/* lib/auth names the file (and line); never key bytes */
		snprintf(err, err_size, "%s: [auth] key_file: %s", d->cfg.path, e);
		d->auth.keys = NULL;
		return -EINVAL;
	}
	return 0;
}

/* Window slots per key epoch: UP DATA and NACK of the local island, then
 * WAN DATA, NACK and GONE of every island. */
static inline unsigned int
streams_per_epoch(const struct isthd *d)
{
	return 2 + 3 * d->n_islands;
}

int
isthd_auth_setup(struct isthd *d, char *err, size_t err_size)
{
	struct isthd_auth *au = &d->auth;
	uint64_t per_round, bits;
	struct timespec ts;
	unsigned int i, n_epochs;
	int rc;

	if (!au->on)
		return 0;
	rc = isth_auth_engine_create(au->keys, ISTH_AUTH_IPSEC_MB, &au->dp);
	if (rc == 0)
		rc = isth_auth_engine_create(au->keys, ISTH_AUTH_OPENSSL, &au->ctl);
	if (rc) {
		snprintf(err, err_size, "%s: [auth]: tag engine: %s", d->cfg.path, strerror(-rc));
		return rc;
	}
	/* A window covers two rounds of a stream: a sender's chunks plus
	 * what may be repaired of them (the repair budget), twice. */
	per_round = (uint64_t)d->shape.n_chunks + d->rep.budget_chunks;
	bits = 64;
	while (bits < 2 * per_round && bits < (1ull << 31))
		bits <<= 1;
	au->win_bits = (uint32_t)bits;
	n_epochs = isth_auth_n_epochs(au->keys);
	au->n_win = n_epochs * streams_per_epoch(d);
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
	for (i = 0; i < n_epochs && i < RTE_DIM(au->epoch_id); i++)
		isth_auth_epoch_info(au->keys, i, &au->epoch_id[i], NULL);
	au->n_epochs = n_epochs;
	/* Streams the edge starts begin at CLOCK_REALTIME ns: a restarted
	 * edge starts above every seq it used before (doc/protocol.md, "IV") */
	clock_gettime(CLOCK_REALTIME, &ts);
	au->seq_nack = au->seq_gone = au->seq_round =
		(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

void
isthd_auth_fini(struct isthd *d)
{
	struct isthd_auth *au = &d->auth;

	isth_auth_engine_free(au->dp);
	isth_auth_engine_free(au->ctl);
	au->dp = au->ctl = NULL;
	rte_free(au->win);
	rte_free(au->words);
	au->win = NULL;
	au->words = NULL;
	isth_auth_free(au->keys);
	au->keys = NULL;
}

struct isth_auth_replay *
isthd_auth_window(struct isthd *d, enum isth_auth_dir dir, const uint8_t *msg)
{
	struct isthd_auth *au = &d->auth;
	unsigned int e, s, type = msg[ISTH_WIRE_OFF_TYPE], sender = msg[ISTH_WIRE_OFF_SENDER];

	for (e = 0; e < au->n_epochs; e++)
		if (au->epoch_id[e] == msg[ISTH_WIRE_OFF_EPOCH])
			break;
	if (e == au->n_epochs || sender >= d->n_islands)
		return NULL;
	if (dir == ISTH_AUTH_UP) {
		if (type == ISTH_WIRE_DATA)
			s = 0;
		else if (type == ISTH_WIRE_NACK)
			s = 1;
		else
			return NULL; /* refused later as access_bad_type */
	} else {
		if (type == ISTH_WIRE_DATA)
			s = 2 + 3 * sender;
		else if (type == ISTH_WIRE_NACK)
			s = 3 + 3 * sender;
		else if (type == ISTH_WIRE_GONE)
			s = 4 + 3 * sender;
		else
			return NULL; /* refused later as wan_bad_type */
	}
	return &au->win[e * streams_per_epoch(d) + s];
}

static const enum isthd_drop status_drop[ISTH_AUTH_STATUS_MAX] = {
	[ISTH_AUTH_OK] = ISTHD_DROP_MAX,
	[ISTH_AUTH_E_FORMAT] = ISTHD_DROP_auth_format,
	[ISTH_AUTH_E_KEY] = ISTHD_DROP_auth_key,
	[ISTH_AUTH_E_EPOCH] = ISTHD_DROP_auth_epoch,
	[ISTH_AUTH_E_TAG] = ISTHD_DROP_auth_tag,
	[ISTH_AUTH_E_REPLAY] = ISTHD_DROP_auth_replay,
	[ISTH_AUTH_E_STALE] = ISTHD_DROP_auth_stale,
};

unsigned int
isthd_auth_verify_rx(struct isthd *d, enum isth_auth_dir dir, struct rte_mbuf **m,
	struct isth_wire_pkt *p, const uint8_t *owner, unsigned int n)
{
	struct isth_auth_op ops[ISTHD_BURST];
	unsigned int i, k = 0;

	for (i = 0; i < n; i++) {
		ops[i].msg = (uint8_t *)(uintptr_t)p[i].msg;
		ops[i].len = (uint32_t)p[i].msg_size;
		ops[i].cap = ops[i].len;
		ops[i].dir = (uint8_t)dir;
		ops[i].owner = owner[i];
		ops[i].status = 0;
	}
	isth_auth_verify_burst(d->auth.dp, ops, n);
	for (i = 0; i < n; i++) {
		enum isth_auth_status s = (enum isth_auth_status)ops[i].status;

		if (s == ISTH_AUTH_OK) {
			/* only now, with the tag verified, may the window move */
			struct isth_auth_replay *w = isthd_auth_window(d, dir, p[i].msg);

			if (w != NULL)
				s = isth_auth_replay_accept(w, p[i].hdr.seq);
		}
		if (unlikely(s != ISTH_AUTH_OK)) {
			isth_ctr_add(&d->st.drop[s < ISTH_AUTH_STATUS_MAX ? status_drop[s]
									  : ISTHD_DROP_auth_tag],
				1);
			rte_pktmbuf_free(m[i]);
			continue;
		}
		m[k] = m[i];
		if (k != i)
			p[k] = p[i];
		k++;
	}
	return k;
}

int
isthd_auth_seal_msg(struct isthd *d, struct isth_auth_engine *e, enum isth_auth_dir dir,
	uint8_t *msg, size_t len, size_t cap)
{
	/* already sealed (a repair or resend whose flags changed): the old
	 * tag's room is reused */
	if (msg[ISTH_WIRE_OFF_VERSION] == ISTH_WIRE_VERSION_AUTH) {
		if (len < ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE)
			return -EINVAL;
		len -= ISTH_AUTH_TAG_SIZE;
	}
	return isth_auth_seal(e, dir, d->island, msg, len, cap);
}
