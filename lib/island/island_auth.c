/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Authentication (wire version 2, conf.key_file): loading a key file into
 * tag engines, the replay windows of each key epoch and AGG stream, the
 * check of every datagram from the edge before anything else looks at it,
 * and key rotation (isth_island_reload_keys()). Calls no other file of the
 * library.
 */
#include "island_priv.h"

static struct auth_win *
win_find(struct isth_island *s, uint8_t epoch)
{
	unsigned int i;

	for (i = 0; i < ISTH_AUTH_MAX_EPOCHS; i++)
		if (s->win[i].used && s->win[i].epoch == epoch)
			return &s->win[i];
	return NULL;
}

/* Start the replay windows of AGG stream @k (>= 1) in epoch slot @j. */
void
isl_stream_win_init(struct isth_island *s, unsigned int j, unsigned int k)
{
	struct agg_stream *a = &s->as[k];
	uint64_t *words = a->win_words + j * a->win_stride;

	(void)isth_auth_replay_init(&s->win[j].sw[k][0], words, a->win_agg_bits);
	words += isth_auth_replay_words(a->win_agg_bits);
	(void)isth_auth_replay_init(&s->win[j].sw[k][1], words, WIN_SMALL_BITS);
}

/*
 * Give every epoch of s->auth a replay window set: windows of epochs that
 * stay are kept (a reload does not reopen them to replays), those of
 * epochs that went are freed, new epochs start empty.
 */
void
isl_win_sync(struct isth_island *s)
{
	unsigned int n = isth_auth_n_epochs(s->auth), i, j, t;
	bool keep[ISTH_AUTH_MAX_EPOCHS] = {false};
	uint8_t ids[ISTH_AUTH_MAX_EPOCHS];

	for (i = 0; i < n; i++) {
		uint32_t start;

		(void)isth_auth_epoch_info(s->auth, i, &ids[i], &start);
	}
	for (j = 0; j < ISTH_AUTH_MAX_EPOCHS; j++)
		for (i = 0; i < n && s->win[j].used; i++)
			if (s->win[j].epoch == ids[i])
				keep[j] = true;
	for (j = 0; j < ISTH_AUTH_MAX_EPOCHS; j++)
		if (!keep[j])
			s->win[j].used = false;
	for (i = 0; i < n; i++) {
		struct auth_win *w;
		uint64_t *words;

		if (win_find(s, ids[i]) != NULL)
			continue;
		for (j = 0; s->win[j].used; j++)
			; /* at most ISTH_AUTH_MAX_EPOCHS epochs: one is free */
		w = &s->win[j];
		w->used = true;
		w->epoch = ids[i];
		words = s->win_words + j * s->win_stride;
		for (t = 0; t < WIN_TYPES; t++) {
			(void)isth_auth_replay_init(&w->w[t], words, s->win_bits[t]);
			words += isth_auth_replay_words(s->win_bits[t]);
		}
		for (t = 1; t < s->n_streams; t++)
			isl_stream_win_init(s, j, t);
	}
}

static inline uint64_t
get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

/*
 * Verify a datagram from the edge with the DOWN key of this island, then
 * check its seq (ahead of this host's clock, replay window) without a
 * change: true if it may go on to the parser, with *@win the window to
 * commit it to (isl_auth_commit) once it passed every check, or NULL.
 * Refusals are counted by reason.
 */
bool
isl_auth_rx(struct isth_island *s, const uint8_t *buf, size_t len, unsigned int sock,
	struct isth_auth_engine *eng, uint8_t vst, struct isth_auth_replay **win)
{
	enum isth_auth_status st;
	struct isth_auth_replay *rw = NULL;
	struct auth_win *w;
	unsigned int k = 0;
	int t = -1;

	*win = NULL;
	/* a receive thread verified it before it took mu, or does it now */
	st = vst != VST_NONE ? (enum isth_auth_status)vst
			     : isth_auth_verify(eng, ISTH_AUTH_DOWN, s->conf.island, buf, len);
	if (st == ISTH_AUTH_OK) {
		switch (buf[ISTH_WIRE_OFF_TYPE]) { /* type; the edge sends an island nothing else */
		case ISTH_WIRE_AGG:
			t = WIN_AGG;
			break;
		case ISTH_WIRE_GONE:
			t = WIN_GONE;
			break;
		case ISTH_WIRE_ROUND:
			t = WIN_ROUND;
			break;
		default:
			break; /* dropped as `type` after the parser */
		}
	}
	/* AGG and GONE: the window of their AGG stream, which must be one a
	 * (verified) ROUND announced; a ROUND's field is a count, not a stream */
	if (st == ISTH_AUTH_OK && t >= 0 && t != WIN_ROUND) {
		k = isth_wire_get_stream(buf);
		if (k >= s->n_streams) {
			drop(s, ISTH_ISLAND_DROP_agg_stream);
			return false;
		}
		/* before its replay window: only the owner's thread moves it */
		if (stream_foreign(s, k, sock)) {
			drop(s, ISTH_ISLAND_DROP_agg_socket);
			return false;
		}
	}
	/* a genuine edge's seq never runs ahead of its clock: the slack is
	 * the clock offset between the hosts (doc/protocol.md, "Replay
	 * window") */
	if (st == ISTH_AUTH_OK && t >= 0 &&
		isth_auth_seq_ahead(get_be64(buf + ISTH_WIRE_OFF_SEQ), isth_clock_real_ns(),
			ISTH_AUTH_SEQ_AHEAD_NS_DEFAULT))
		st = ISTH_AUTH_E_AHEAD;
	if (st == ISTH_AUTH_OK && t >= 0) {
		w = win_find(s, buf[ISTH_AUTH_OFF_EPOCH]);
		rw = w == NULL ? NULL : k == 0 ? &w->w[t] : &w->sw[k][t == WIN_GONE];
		st = rw ? isth_auth_replay_check(rw, get_be64(buf + ISTH_WIRE_OFF_SEQ),
				  isth_wire_get_hdr_round(buf))
			: ISTH_AUTH_E_EPOCH;
	}
	if (st != ISTH_AUTH_OK) {
		isth_ctr_add(&s->st.auth_drop[st], 1);
		return false;
	}
	*win = rw;
	return true;
}

/*
 * Datagram @p, let through by isl_auth_rx with window @win, passed the
 * parser and the session's checks: move the window. False (counted) if a
 * copy judged earlier took its seq since.
 */
bool
isl_auth_commit(struct isth_island *s, struct isth_auth_replay *win, const struct isth_wire_pkt *p)
{
	enum isth_auth_status st;

	if (win == NULL)
		return true;
	st = isth_auth_replay_commit(win, p->hdr.seq, p->hdr.round);
	if (st != ISTH_AUTH_OK) {
		isth_ctr_add(&s->st.auth_drop[st], 1);
		return false;
	}
	return true;
}

/* Load a key file for this session's job and make its tag engine. */
int
isl_auth_load(const struct isth_island *s, const char *path, struct isth_auth **a,
	struct isth_auth_engine **e, char *err, size_t errlen)
{
	struct isth_auth_conf ac = {
		.key_file = path,
		.job = s->conf.job,
		.n_islands = s->conf.n_islands,
	};
	int rc;

	*a = NULL;
	*e = NULL;
	rc = isth_auth_create(&ac, a, err, errlen);
	if (rc < 0)
		return rc;
	/* the job file or this island's site file (isthmus-keys split): with
	 * another site's file every DATA this session seals would be refused */
	rc = isth_auth_check_site(*a, ISTH_AUTH_SITE_ISLAND, s->conf.island, path, err, errlen);
	if (rc < 0) {
		isth_auth_free(*a);
		*a = NULL;
		return rc;
	}
	rc = isth_auth_engine_create(*a, ISTH_AUTH_OPENSSL, e);
	if (rc < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s: tag engine: %s", path, strerror(-rc));
		isth_auth_free(*a);
		*a = NULL;
	}
	return rc;
}

static uint32_t
pow2_at_least(uint64_t x)
{
	uint32_t p = 64;

	while (p < x && p < (UINT32_C(1) << 31))
		p <<= 1;
	return p;
}

/*
 * The AGG replay window of one of @n_streams streams: at most one AGG per
 * chunk and peer per round (partials have disjoint bitmaps; resends reuse
 * the seq), a stream carrying ceil(n_chunks / n_streams) chunks, kept for
 * every round a session holds, and never less than the seq window the
 * session NACKs over: a repair of the oldest round is still inside.
 */
uint32_t
isl_agg_win_bits(const struct isth_island *s, unsigned int n_streams)
{
	uint32_t peers = s->conf.n_islands > 1 ? s->conf.n_islands - 1 : 1;
	uint64_t chunks = ((uint64_t)s->n_chunks + n_streams - 1) / n_streams;
	uint32_t bits = pow2_at_least((uint64_t)ISTH_ISLAND_ROUNDS * chunks * peers);

	return bits < ISTH_ISLAND_SEQ_WINDOW ? ISTH_ISLAND_SEQ_WINDOW : bits;
}

/* Size the replay windows of stream 0 and allocate their storage for
 * every epoch (isl_streams_add() does the others'). */
int
isl_win_alloc(struct isth_island *s)
{
	unsigned int t;

	s->win_bits[WIN_AGG] = isl_agg_win_bits(s, 1);
	s->win_bits[WIN_GONE] = WIN_SMALL_BITS;
	s->win_bits[WIN_ROUND] = WIN_SMALL_BITS;
	s->win_stride = 0;
	for (t = 0; t < WIN_TYPES; t++)
		s->win_stride += isth_auth_replay_words(s->win_bits[t]);
	s->win_words = calloc(ISTH_AUTH_MAX_EPOCHS * s->win_stride, sizeof(*s->win_words));
	return s->win_words ? 0 : -ENOMEM;
}

/*
 * What round @round's packets look like under engine @e: a probe header
 * sealed with the DOWN key (epoch byte and tag). Two engines agree on a
 * round iff they give it the same epoch and the same key.
 */
static int
probe_seal(const struct isth_island *s, struct isth_auth_engine *e, uint32_t round,
	uint8_t buf[ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE])
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.sender = s->conf.island,
		.job = s->conf.job,
		.round = round,
	};

	memset(buf, 0, ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE);
	isth_wire_put_hdr(buf, ISTH_WIRE_HDR_SIZE, &h);
	return isth_auth_seal(e, ISTH_AUTH_DOWN, s->conf.island, buf, ISTH_WIRE_HDR_SIZE,
		ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE);
}

/* Every round the session holds keeps its epoch and key under @e? */
static int
reload_compatible(const struct isth_island *s, struct isth_auth_engine *e, const char *path,
	char *err, size_t errlen)
{
	uint8_t a[ISTH_WIRE_HDR_SIZE + ISTH_AUTH_TAG_SIZE], b[sizeof(a)];
	unsigned int i;

	for (i = 0; i <= ISTH_ISLAND_ROUNDS; i++) {
		uint32_t r;

		if (i < ISTH_ISLAND_ROUNDS) {
			if (s->slots[i].state == SLOT_FREE)
				continue;
			r = s->slots[i].round;
		} else {
			if (!s->have_newest)
				continue;
			r = s->newest_round;
		}
		if (probe_seal(s, s->eng, r, a) < 0)
			continue; /* the old keys never covered it either */
		if (probe_seal(s, e, r, b) < 0 || memcmp(a, b, sizeof(a)) != 0) {
			if (err && errlen)
				snprintf(err, errlen,
					"%s: round %" PRIu32 " is in progress and would change key"
					" (epoch or key); a new epoch must start at a later round",
					path, r);
			return -EINVAL;
		}
	}
	return 0;
}

int
isth_island_reload_keys(struct isth_island *s, const char *key_file, char *err, size_t errlen)
{
	struct isth_auth_engine *e, *old_e, *tx_e[ISTH_ISLAND_MAX_SOCKETS];
	struct isth_auth_engine *rx_e[ISTH_ISLAND_MAX_SOCKETS];
	struct isth_auth *a, *old_a;
	unsigned int i;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (s == NULL || key_file == NULL)
		return -EINVAL;
	/* auth on or off is fixed at open; s->auth is never NULL when on */
	if (!s->st.auth) {
		if (err && errlen)
			snprintf(err, errlen, "session opened without a key file (auth off)");
		return -ENOTCONN;
	}
	rc = isl_auth_load(s, key_file, &a, &e, err, errlen);
	if (rc < 0)
		return rc;
	/* the senders' engines, one per socket (they seal in parallel) */
	memset(tx_e, 0, sizeof(tx_e));
	memset(rx_e, 0, sizeof(rx_e));
	for (i = 0; i < s->n_socks && rc == 0; i++) {
		rc = isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &tx_e[i]);
		if (rc == 0 && s->rx_threads)
			rc = isth_auth_engine_create(a, ISTH_AUTH_OPENSSL, &rx_e[i]);
	}
	if (rc < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s: tag engine: %s", key_file, strerror(-rc));
		for (i = 0; i < s->n_socks; i++) {
			isth_auth_engine_free(tx_e[i]);
			isth_auth_engine_free(rx_e[i]);
		}
		isth_auth_engine_free(e);
		isth_auth_free(a);
		return rc;
	}
	/* txmu first: no send() is sealing with the engines swapped here */
	pthread_mutex_lock(&s->txmu);
	pthread_mutex_lock(&s->mu);
	rc = reload_compatible(s, e, key_file, err, errlen);
	if (rc == 0) {
		old_a = s->auth;
		old_e = s->eng;
		s->auth = a;
		s->eng = e;
		for (i = 0; i < s->n_socks; i++) {
			struct isth_auth_engine *t = s->socks[i].eng;

			s->socks[i].eng = tx_e[i];
			tx_e[i] = t; /* the old one, freed below */
			if (!s->rx_threads)
				continue;
			/* the receive thread verifies with it outside mu,
			 * holding rxmu (lock order: txmu, mu, rxmu) */
			pthread_mutex_lock(&s->socks[i].rxmu);
			t = s->socks[i].rx_eng;
			s->socks[i].rx_eng = rx_e[i];
			rx_e[i] = t;
			pthread_mutex_unlock(&s->socks[i].rxmu);
		}
		isl_win_sync(s);
		isth_ctr_add(&s->st.key_reloads, 1);
		s->st.auth_epochs = (uint8_t)isth_auth_n_epochs(a);
	} else {
		old_a = a;
		old_e = e;
	}
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&s->txmu);
	for (i = 0; i < s->n_socks; i++) {
		isth_auth_engine_free(tx_e[i]);
		isth_auth_engine_free(rx_e[i]);
	}
	isth_auth_engine_free(old_e);
	isth_auth_free(old_a);
	return rc;
}
