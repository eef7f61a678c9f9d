/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The round API a training job calls once a session is open:
 * wait_round(), result(), ready(), poll(), the counters and the
 * descriptions of drops and missing contributions. Calls island_slot.c,
 * island_repair.c (timers) and island_rx.c (waiting for packets).
 */
#include "island_priv.h"

static const char *const drop_names[ISTH_ISLAND_DROP_MAX] = {
#define X(n, s) #n,
	ISTH_ISLAND_DROPS(X)
#undef X
};

const char *
isth_island_drop_name(unsigned int reason)
{
	return reason < ISTH_ISLAND_DROP_MAX ? drop_names[reason] : "unknown";
}

uint16_t
isth_island_local_port(const struct isth_island *s)
{
	return s ? s->socks[0].port : 0;
}

uint16_t
isth_island_socket_port(const struct isth_island *s, unsigned int i)
{
	return s && i < s->n_socks ? s->socks[i].port : 0;
}

uint32_t
isth_island_chunk_elems(const struct isth_island *s)
{
	return s ? s->chunk_elems : 0;
}

uint32_t
isth_island_n_chunks(const struct isth_island *s)
{
	return s ? s->n_chunks : 0;
}

void
isth_island_range(const struct isth_island *s, struct isth_island_range *r)
{
	if (r == NULL)
		return;
	memset(r, 0, sizeof(*r));
	if (s == NULL)
		return;
	r->first_chunk = s->c0;
	r->n_chunks = s->rc_n;
	r->first_elem = s->e0;
	r->n_elems = s->r_elems;
}

/*
 * One wait of a caller's loop (mu held, dropped while waiting): false,
 * without waiting, once the monotonic @end has passed (never on the
 * @first look, so that a zero timeout still looks once); else true and in
 * *@rc what isl_wait_io() said, waiting at most until @end.
 */
static bool
wait_until(struct isth_island *s, uint64_t end, bool first, int *rc)
{
	uint64_t t = isth_clock_mono_ns();

	if (!first && t >= end)
		return false;
	*rc = isl_wait_io(s, t < end ? end - t : 0);
	return true;
}

int
isth_island_wait_round(struct isth_island *s, uint64_t timeout_ns, struct isth_island_round *out)
{
	uint64_t end = sat_add(isth_clock_mono_ns(), timeout_ns);
	bool first = true;
	int rc;

	if (s == NULL || out == NULL)
		return -EINVAL;
	pthread_mutex_lock(&s->mu);
	for (;; first = false) {
		const struct slot *best = NULL;
		unsigned int i;

		if (s->shape_err) {
			s->shape_err = false;
			*out = s->shape_info;
			rc = -EPROTO;
			break;
		}
		for (i = 0; i < ISTH_ISLAND_ROUNDS; i++) {
			const struct slot *sl = &s->slots[i];

			if (sl->state == SLOT_FREE || !sl->announced)
				continue;
			if (s->have_waited && sl->round <= s->last_waited)
				continue;
			if (best == NULL || sl->round < best->round)
				best = sl;
		}
		if (best) {
			*out = best->info;
			s->have_waited = true;
			s->last_waited = best->round;
			rc = 0;
			break;
		}
		if (!wait_until(s, end, first, &rc)) {
			rc = -ETIMEDOUT;
			break;
		}
		if (rc < 0)
			break;
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* Close a round: count it and remember the answer. */
static void
finalize(struct isth_island *s, struct slot *sl, uint64_t now)
{
	struct isth_island_result *res = &sl->res;
	uint64_t self = sl->sent ? self_bit(s) : 0;
	uint32_t c;

	memset(res, 0, sizeof(*res));
	res->round = sl->round;
	res->n_chunks = s->rc_n;
	res->self_sent = sl->sent;
	res->end_ns = now;
	for (c = s->c0; c < s->c0 + s->rc_n; c++) {
		uint64_t miss = (sl->info.expected | self) & ~(sl->bitmap[c] | self);

		if (miss) {
			res->partial++;
			res->missing += (uint64_t)__builtin_popcountll(miss);
			res->missing_set |= miss;
		} else {
			res->complete++;
		}
	}
	res->early = res->partial == 0 && now < slot_end(s, sl);
	sl->rc = res->partial ? -ETIMEDOUT : 0;
	sl->state = SLOT_DONE;
	if (res->partial)
		isth_ctr_add(&s->st.rounds_partial, 1);
	else
		isth_ctr_add(&s->st.rounds_complete, 1);
}

/*
 * Announced round @sl (of @round) at @now, mu held: end it (finalize())
 * if every chunk is complete or its deadline (+grace) has passed. Past
 * the deadline, what is queued on the sockets is taken first (unless a
 * reader is at it), which may be a newer round's ROUND taking over the
 * slot. @return 1 (ended now), 0 (still collecting), -ESTALE (the slot
 * went to a newer round).
 */
static int
round_try_end(struct isth_island *s, struct slot *sl, uint32_t round, uint64_t now)
{
	uint64_t stop = slot_end(s, sl);

	if (sl->chunks_done < s->rc_n && now >= stop && !s->reading) {
		isl_rx_drain(s);
		isl_run_timers(s, now, ALL_SOCKS);
		if (slot_find(s, round) != sl)
			return -ESTALE;
	}
	if (sl->chunks_done == s->rc_n || now >= stop) {
		finalize(s, sl, now);
		return 1;
	}
	return 0;
}

int
isth_island_result(struct isth_island *s, uint32_t round, void *out, size_t out_size,
	struct isth_island_chunk *chunks, unsigned int max_chunks, struct isth_island_result *res,
	uint64_t timeout_ns)
{
	uint64_t end, self;
	struct slot *sl;
	bool first = true;
	uint32_t c;
	int rc;

	if (s == NULL || out == NULL || chunks == NULL)
		return -EINVAL;
	if (out_size < (size_t)s->r_elems * 4 || max_chunks < s->rc_n)
		return -ENOSPC;
	end = sat_add(isth_clock_mono_ns(), timeout_ns);
	pthread_mutex_lock(&s->mu);
	for (;; first = false) {
		uint64_t now = now_ns(s);

		sl = slot_find(s, round);
		/* done, and every AGG judged into it added: the hand-off */
		if (sl && sl->state == SLOT_DONE && slot_summed(sl))
			break;
		if (sl && sl->state == SLOT_DONE) {
			isl_slot_wait_sums(s, sl);
			continue;
		}
		if (sl && sl->announced) {
			rc = round_try_end(s, sl, round, now);
			if (rc < 0) {
				pthread_mutex_unlock(&s->mu);
				return rc;
			}
			if (rc > 0)
				continue; /* waits for the adds above */
			rc = isl_wait_io(s, slot_end(s, sl) - now);
		} else {
			if (sl == NULL && isl_round_is_old(s, round)) {
				pthread_mutex_unlock(&s->mu);
				return -ESTALE;
			}
			if (!wait_until(s, end, first, &rc)) {
				pthread_mutex_unlock(&s->mu);
				return -ENOENT;
			}
		}
		if (rc < 0) {
			pthread_mutex_unlock(&s->mu);
			return rc;
		}
	}
	self = sl->sent ? self_bit(s) : 0;
	for (c = s->c0; c < s->c0 + s->rc_n; c++) {
		struct isth_island_chunk *ch = &chunks[c - s->c0];

		ch->bitmap = sl->bitmap[c] | self;
		ch->expected = sl->info.expected | self;
		ch->missing = ch->expected & ~ch->bitmap;
		ch->aggs = sl->aggs[c];
		ch->count = chunk_len(s, c);
	}
	memcpy(out, sl->acc, (size_t)s->r_elems * 4);
	if (res)
		*res = sl->res;
	rc = sl->rc;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int
isth_island_ready(struct isth_island *s, uint32_t round, uint64_t timeout_ns)
{
	uint64_t end;
	bool first = true;
	int rc;

	if (s == NULL)
		return -EINVAL;
	end = sat_add(isth_clock_mono_ns(), timeout_ns);
	pthread_mutex_lock(&s->mu);
	for (;; first = false) {
		uint64_t now = now_ns(s);
		struct slot *sl = slot_find(s, round);

		if (sl && sl->state == SLOT_DONE) {
			rc = 0;
			break;
		}
		if (sl == NULL && isl_round_is_old(s, round)) {
			rc = -ESTALE;
			break;
		}
		if (sl && sl->announced) {
			rc = round_try_end(s, sl, round, now);
			if (rc != 0) {
				rc = rc < 0 ? rc : 0;
				break;
			}
		}
		if (!wait_until(s, end, first, &rc)) {
			rc = -EAGAIN;
			break;
		}
		if (rc < 0)
			break;
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int
isth_island_poll(struct isth_island *s, uint64_t timeout_ns)
{
	uint64_t end, t;
	bool first = true;
	int n;

	if (s == NULL)
		return -EINVAL;
	end = sat_add(isth_clock_mono_ns(), timeout_ns);
	pthread_mutex_lock(&s->mu);
	for (;; first = false) {
		t = isth_clock_mono_ns();
		if (!first && t >= end) {
			n = 0;
			break;
		}
		n = isl_wait_io(s, t < end ? end - t : 0);
		/* receive threads: one of their batches (or the time) is it */
		if (n != 0 || s->rx_threads)
			break;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* The counters of ISTH_ISLAND_COUNTERS are the struct's first words, in
 * list order, as isth_ctr_at() reads them. */
_Static_assert(
	offsetof(struct isth_island_stats, auth_drop) == ISTH_ISLAND_N_COUNTERS * sizeof(uint64_t),
	"ISTH_ISLAND_COUNTERS are not the first words of struct isth_island_stats");

void
isth_island_stats(struct isth_island *s, struct isth_island_stats *st)
{
	if (s == NULL || st == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	*st = s->st;
	st->agg_streams = s->n_streams; /* raised under mu by a ROUND */
	pthread_mutex_unlock(&s->mu);
	st->n_sockets = s->n_socks;
	st->gso = atomic_load_explicit(&s->gso_on, memory_order_relaxed);
	st->gro = s->gro;
}

static void
put(char *buf, size_t size, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(*off < size ? buf + *off : NULL, *off < size ? size - *off : 0, fmt, ap);
	va_end(ap);
	if (k > 0)
		*off += (size_t)k;
}

int
isth_island_missing_str(
	const struct isth_island_chunk *chunks, unsigned int n_chunks, char *buf, size_t size)
{
	return isth_island_missing_str_at(chunks, n_chunks, 0, buf, size);
}

int
isth_island_missing_str_at(const struct isth_island_chunk *chunks, unsigned int n_chunks,
	uint32_t first_chunk, char *buf, size_t size)
{
	uint64_t any = 0;
	size_t off = 0;
	unsigned int i, c;

	if (buf && size)
		buf[0] = '\0';
	if (buf == NULL)
		size = 0;
	for (c = 0; chunks && c < n_chunks; c++)
		any |= chunks[c].missing;
	if (any == 0) {
		put(buf, size, &off, "none");
		return (int)off;
	}
	for (i = 0; i < 64; i++) {
		unsigned int n = 0, runs = 0;

		if (!(any & (UINT64_C(1) << i)))
			continue;
		for (c = 0; c < n_chunks; c++)
			if (chunks[c].missing & (UINT64_C(1) << i))
				n++;
		put(buf, size, &off, "%sisland %u chunk%s ", off ? "; " : "", i, n > 1 ? "s" : "");
		for (c = 0; c < n_chunks; c++) {
			unsigned int e = c;

			if (!(chunks[c].missing & (UINT64_C(1) << i)))
				continue;
			while (e + 1 < n_chunks && (chunks[e + 1].missing & (UINT64_C(1) << i)))
				e++;
			if (e == c)
				put(buf, size, &off, "%s%u", runs ? "," : "", first_chunk + c);
			else
				put(buf, size, &off, "%s%u-%u", runs ? "," : "", first_chunk + c,
					first_chunk + e);
			runs++;
			c = e;
		}
	}
	if (off >= size && size >= 4)
		memcpy(buf + size - 4, "...", 4);
	return (int)off;
}

/* "10.0.0.1:9471" of an address and port in network order. */
static void
put_addr(char *buf, size_t size, size_t *off, uint32_t ip, uint16_t port)
{
	struct in_addr a = {.s_addr = ip};
	char t[INET_ADDRSTRLEN];

	if (inet_ntop(AF_INET, &a, t, sizeof(t)) == NULL)
		snprintf(t, sizeof(t), "?");
	put(buf, size, off, "%s:%u", t, (unsigned int)ntohs(port));
}

/* "12 ROUND and 3 AGG" of one reason; false if it saw none. */
static bool
put_types(char *buf, size_t size, size_t *off, const struct isl_odd_seen *o)
{
	const char *sep = *off ? "; " : "";

	if (o->n_round + o->n_agg + o->n_other == 0)
		return false;
	put(buf, size, off, "%sreceived ", sep);
	sep = "";
	if (o->n_round) {
		put(buf, size, off, "%" PRIu64 " ROUND", o->n_round);
		sep = " and ";
	}
	if (o->n_agg) {
		put(buf, size, off, "%s%" PRIu64 " AGG", sep, o->n_agg);
		sep = " and ";
	}
	if (o->n_other)
		put(buf, size, off, "%s%" PRIu64 " other datagram%s", sep, o->n_other,
			o->n_other > 1 ? "s" : "");
	return true;
}

/* The refusals for another wire version and failed tags. */
static void
put_auth(const struct isth_island *s, const struct isl_odd_seen *o,
	const struct isth_island_stats *st, char *buf, size_t size, size_t *off)
{
	uint64_t bad = st->auth_drop[ISTH_AUTH_E_TAG] + st->auth_drop[ISTH_AUTH_E_KEY] +
		st->auth_drop[ISTH_AUTH_E_EPOCH];

	if (put_types(buf, size, off, o)) {
		put(buf, size, off, " from ");
		put_addr(buf, size, off, o->ip, o->port);
		put(buf, size, off, " with wire version %u, but this session ", o->version);
		if (s->auth_on)
			put(buf, size, off,
				"has a key file (auth on, version %u): the edge runs "
				"without [auth], or open the session without a key file "
				"(auth off)",
				ISTH_WIRE_VERSION_AUTH);
		else
			put(buf, size, off,
				"has no key file (auth off, version %u): give it the "
				"job's key file",
				ISTH_WIRE_VERSION);
	}
	/* the edge's seqs are its clock: far ahead of ours, this host's
	 * clock is behind (it heals once the edge's seqs fall behind our
	 * clock, after about the offset) */
	if (st->auth_drop[ISTH_AUTH_E_AHEAD])
		put(buf, size, off,
			"%s%" PRIu64 " datagrams from the edge had seqs more than 1 s ahead "
			"of this host's clock (auth_ahead): this clock is behind the edge's; "
			"synchronise both (chrony, PTP)",
			*off ? "; " : "", st->auth_drop[ISTH_AUTH_E_AHEAD]);
	if (bad == 0)
		return;
	put(buf, size, off, "%s%" PRIu64 " datagrams from the edge failed authentication ",
		*off ? "; " : "", bad);
	put(buf, size, off,
		"(auth_tag %" PRIu64 ", auth_epoch %" PRIu64 ", auth_key %" PRIu64
		"): this session's key file is not the one the edge holds for job %u",
		st->auth_drop[ISTH_AUTH_E_TAG], st->auth_drop[ISTH_AUTH_E_EPOCH],
		st->auth_drop[ISTH_AUTH_E_KEY], s->conf.job);
}

int
isth_island_diagnose(struct isth_island *s, char *buf, size_t size)
{
	struct isl_odd_seen odd[ODD_MAX];
	struct isth_island_stats st;
	const struct isl_odd_seen *o;
	size_t off = 0;

	if (buf && size)
		buf[0] = '\0';
	if (buf == NULL)
		size = 0;
	if (s == NULL)
		return 0;
	pthread_mutex_lock(&s->mu);
	st = s->st;
	memcpy(odd, s->odd, sizeof(odd));
	pthread_mutex_unlock(&s->mu);
	if (st.rx_packets == 0) {
		put(buf, size, &off, "nothing received on ");
		put_addr(buf, size, &off, htonl(s->conf.bind_ip), htons(s->socks[0].port));
		put(buf, size, &off,
			" since the session opened: the edge sends ROUND and AGG to its "
			"[access] island_ip and island_port (default %u); are they this "
			"host's address and this port, and is the edge running?",
			ISTH_WIRE_PORT);
	}
	o = &odd[ODD_SOURCE];
	if (put_types(buf, size, &off, o)) {
		put(buf, size, &off, " from ");
		put_addr(buf, size, &off, o->ip, o->port);
		if (o->version)
			put(buf, size, &off, " with wire version %u", o->version);
		put(buf, size, &off, ", not from the edge this session was given (");
		put_addr(buf, size, &off, s->edge.sin_addr.s_addr, s->edge.sin_port);
		put(buf, size, &off, "): check the edge's address and port");
	}
	put_auth(s, &odd[ODD_VERSION], &st, buf, size, &off);
	o = &odd[ODD_JOB];
	if (put_types(buf, size, &off, o))
		put(buf, size, &off, " of job %u, but this session's job is %u", o->job,
			s->conf.job);
	o = &odd[ODD_SENDER];
	if (put_types(buf, size, &off, o))
		put(buf, size, &off, " for island %u, but this session is island %u",
			(unsigned int)o->sender, (unsigned int)s->conf.island);
	if (off >= size && size >= 4)
		memcpy(buf + size - 4, "...", 4);
	return (int)off;
}
