/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The metrics endpoint (doc/isthmusd.md, "Metrics"): GET /metrics answered
 * in OpenMetrics 1.0 (when the client's Accept names it) or the Prometheus
 * text format 0.0.4, by a thread of its own (never a data-path lcore, and
 * not the controller, whose round clock a slow client must not hold up).
 *
 * The thread polls the listening socket and at most
 * ISTHD_METRICS_MAX_CLIENTS clients, all non-blocking: a client has
 * ISTHD_METRICS_TIMEOUT_MS from connect to its response's last byte and
 * ISTHD_METRICS_MAX_REQUEST bytes of request head, so one that sends
 * nothing, garbage or an endless header is closed without stalling the
 * others. Each response is rendered when its request is complete and
 * closed after (HTTP/1.0 style, "Connection: close").
 *
 * What it reads is what the telemetry commands read, by the same rules:
 * counters through stats.c's sums (relaxed loads of single-writer
 * counters), the controller's published indices with acquire loads, never
 * the schedule (a reload frees it). isthd_telemetry_close() stops this
 * thread before teardown frees anything it reads.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <rte_mempool.h>

#include "isth_clock.h"
#include "isth_version.h"
#include "isthd.h"
#include "metrics.h"

/* ---- text ---------------------------------------------------------------- */

static void
mtext_put(struct isthd_mtext *t, const char *s, size_t n)
{
	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 16384;
		char *p;

		while (t->len + n + 1 > cap)
			cap *= 2;
		p = realloc(t->p, cap);
		if (p == NULL) {
			t->failed = true;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

void
isthd_mtext_printf(struct isthd_mtext *t, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		t->failed = true; /* never with this file's formats */
		return;
	}
	mtext_put(t, buf, (size_t)n);
}

void
isthd_mtext_free(struct isthd_mtext *t)
{
	free(t->p);
	t->p = NULL;
	t->len = t->cap = 0;
}

/* Backslash, newline and (@quote: label values, OpenMetrics HELP) the
 * double quote, escaped as both formats define. */
static void
put_escaped(struct isthd_mtext *t, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			mtext_put(t, "\\\\", 2);
		else if (*s == '\n')
			mtext_put(t, "\\n", 2);
		else if (*s == '"' && quote)
			mtext_put(t, "\\\"", 2);
		else
			mtext_put(t, s, 1);
	}
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

void
isthd_mtext_family(struct isthd_mtext *t, const char *name, enum isthd_mtype type, const char *help)
{
	static const char *const om_types[] = {"counter", "gauge", "unknown"};
	static const char *const text_types[] = {"counter", "gauge", "untyped"};
	/* the text format names a counter's family by its sample */
	const char *total = type == ISTHD_MT_COUNTER && !t->om ? "_total" : "";

	isthd_mtext_printf(t, "# HELP %s%s ", name, total);
	put_escaped(t, help, t->om);
	isthd_mtext_printf(
		t, "\n# TYPE %s%s %s\n", name, total, t->om ? om_types[type] : text_types[type]);
	if (t->om && ends_with(name, "_bytes"))
		isthd_mtext_printf(t, "# UNIT %s bytes\n", name);
	else if (t->om && ends_with(name, "_seconds"))
		isthd_mtext_printf(t, "# UNIT %s seconds\n", name);
}

static void
sample_head(struct isthd_mtext *t, const char *name, enum isthd_mtype type,
	const struct isthd_mlabel *l, unsigned int n)
{
	isthd_mtext_printf(t, "%s%s", name, type == ISTHD_MT_COUNTER ? "_total" : "");
	for (unsigned int i = 0; i < n; i++) {
		isthd_mtext_printf(t, "%s%s=\"", i ? "," : "{", l[i].name);
		put_escaped(t, l[i].value, true);
		mtext_put(t, "\"", 1);
	}
	if (n)
		mtext_put(t, "}", 1);
}

void
isthd_mtext_u64(struct isthd_mtext *t, const char *name, enum isthd_mtype type,
	const struct isthd_mlabel *l, unsigned int n_labels, uint64_t v)
{
	sample_head(t, name, type, l, n_labels);
	isthd_mtext_printf(t, " %" PRIu64 "\n", v);
}

void
isthd_mtext_double(struct isthd_mtext *t, const char *name, enum isthd_mtype type,
	const struct isthd_mlabel *l, unsigned int n_labels, double v)
{
	sample_head(t, name, type, l, n_labels);
	isthd_mtext_printf(t, " %.17g\n", v);
}

void
isthd_mtext_ns(struct isthd_mtext *t, const char *name, enum isthd_mtype type,
	const struct isthd_mlabel *l, unsigned int n_labels, uint64_t ns)
{
	/* exact: a double would round an epoch to a quarter of a microsecond */
	sample_head(t, name, type, l, n_labels);
	isthd_mtext_printf(t, " %" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000u, ns % 1000000000u);
}

void
isthd_mtext_end(struct isthd_mtext *t)
{
	if (t->om)
		mtext_put(t, "# EOF\n", 6);
}

/* ---- requests ------------------------------------------------------------ */

/* The end of the head (after its blank line), or NULL. */
static const char *
head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return buf + i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return buf + i + 3;
	}
	return NULL;
}

/* Whether a header line (NUL-free, @n bytes) is Accept naming OpenMetrics. */
static bool
accepts_om(const char *line, size_t n)
{
	static const char key[] = "accept:", want[] = "application/openmetrics-text";

	if (n < sizeof(key) - 1 || strncasecmp(line, key, sizeof(key) - 1) != 0)
		return false;
	for (size_t i = sizeof(key) - 1; i + sizeof(want) - 1 <= n; i++)
		if (strncasecmp(line + i, want, sizeof(want) - 1) == 0)
			return true;
	return false;
}

int
isthd_metrics_parse_request(const char *buf, size_t len, bool *om)
{
	const char *end = head_end(buf, len), *p, *nl, *sp1, *sp2, *eol;
	size_t tlen;

	*om = false;
	if (end == NULL)
		return len >= ISTHD_METRICS_MAX_REQUEST ? 431 : 0;
	if (end - buf > ISTHD_METRICS_MAX_REQUEST)
		return 431;
	if (memchr(buf, '\0', (size_t)(end - buf)) != NULL)
		return 400;
	eol = memchr(buf, '\n', (size_t)(end - buf));
	/* METHOD SP TARGET SP HTTP/1.x */
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (sp1 == NULL || sp2 == NULL || sp1 == buf || sp2 == sp1 + 1 || (size_t)(eol - sp2) < 9 ||
		strncmp(sp2 + 1, "HTTP/1.", 7) != 0 || (sp2[8] != '0' && sp2[8] != '1') ||
		!(sp2 + 9 == eol || (sp2 + 10 == eol && sp2[9] == '\r')))
		return 400;
	/* headers: every line ends in '\n' up to end */
	for (p = eol + 1; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (accepts_om(p, (size_t)(nl - p)))
			*om = true;
	}
	if (sp1 - buf != 3 || strncmp(buf, "GET", 3) != 0)
		return 405;
	/* the path, a query ignored */
	tlen = (size_t)(sp2 - sp1 - 1);
	if ((tlen == 8 || (tlen > 8 && sp1[9] == '?')) && strncmp(sp1 + 1, "/metrics", 8) == 0)
		return 200;
	return 404;
}

/* ---- what is exported ---------------------------------------------------- */

/* A family of one unlabelled sample (the help last: it is the longest). */
static void
one_u64(struct isthd_mtext *t, const char *name, enum isthd_mtype type, uint64_t v,
	const char *help)
{
	isthd_mtext_family(t, name, type, help);
	isthd_mtext_u64(t, name, type, NULL, 0, v);
}

static void
one_ns(struct isthd_mtext *t, const char *name, enum isthd_mtype type, uint64_t ns,
	const char *help)
{
	isthd_mtext_family(t, name, type, help);
	isthd_mtext_ns(t, name, type, NULL, 0, ns);
}

static void
one_double(
	struct isthd_mtext *t, const char *name, enum isthd_mtype type, double v, const char *help)
{
	isthd_mtext_family(t, name, type, help);
	isthd_mtext_double(t, name, type, NULL, 0, v);
}

static const char *const counter_help[ISTHD_N_COUNTERS] = {ISTHD_COUNTERS(ISTH_CTR_HELP)};

/* isthd_stats_walk's names in families: a counter each, the drops one
 * family by reason, the mempool gauges one family by pool. */
struct walk {
	struct isthd_mtext *t;
	unsigned int counter; /* index in ISTHD_COUNTERS */
	bool drops, pools; /* family header written */
};

static void
walk_one(void *arg, const char *name, uint64_t v, enum isthd_stat_kind kind)
{
	struct walk *w = arg;
	char fam[96], pool[32];
	struct isthd_mlabel l;

	switch (kind) {
	case ISTHD_STAT_COUNTER:
		snprintf(fam, sizeof(fam), "isthmus_edge_%s", name);
		isthd_mtext_family(w->t, fam, ISTHD_MT_COUNTER,
			w->counter < ISTHD_N_COUNTERS ? counter_help[w->counter] : name);
		w->counter++;
		isthd_mtext_u64(w->t, fam, ISTHD_MT_COUNTER, NULL, 0, v);
		return;
	case ISTHD_STAT_DROP:
		if (!w->drops)
			isthd_mtext_family(w->t, "isthmus_edge_drops", ISTHD_MT_COUNTER,
				"packets dropped, by reason (the wire parser's and isthmusd's; "
				"doc/isthmusd.md, Counters and drops)");
		w->drops = true;
		l = (struct isthd_mlabel){"reason", strncmp(name, "drop_", 5) ? name : name + 5};
		isthd_mtext_u64(w->t, "isthmus_edge_drops", ISTHD_MT_COUNTER, &l, 1, v);
		return;
	case ISTHD_STAT_GAUGE:
		if (!w->pools)
			isthd_mtext_family(w->t, "isthmus_edge_mempool_in_use", ISTHD_MT_GAUGE,
				"mbufs out of each pool now (allocated or in a per-lcore "
				"cache): climbing under steady traffic is a leak");
		w->pools = true;
		/* "mempool_<pool>_in_use" */
		if (sscanf(name, "mempool_%31[^_]", pool) != 1)
			snprintf(pool, sizeof(pool), "%s", name);
		l = (struct isthd_mlabel){"pool", pool};
		isthd_mtext_u64(w->t, "isthmus_edge_mempool_in_use", ISTHD_MT_GAUGE, &l, 1, v);
		return;
	}
}

/* Each pool's size beside its in-use gauge (the walk's), for occupancy;
 * the pool labels are stats.c's mempool_<pool>_in_use names, which the
 * tests hold the two families to. */
static void
render_pool_sizes(const struct isthd *d, struct isthd_mtext *t)
{
	static const char *const pools[] = {"pkt", "hdr", "ctl"};
	const struct rte_mempool *mp[] = {d->pool, d->hdr_pool, d->ctl_pool};
	struct isthd_mlabel l;

	isthd_mtext_family(t, "isthmus_edge_mempool_size", ISTHD_MT_GAUGE,
		"mbufs in each pool (isthmus_edge_mempool_in_use over this: occupancy)");
	for (unsigned int i = 0; i < RTE_DIM(pools); i++) {
		if (mp[i] == NULL)
			continue;
		l = (struct isthd_mlabel){"pool", pools[i]};
		isthd_mtext_u64(t, "isthmus_edge_mempool_size", ISTHD_MT_GAUGE, &l, 1, mp[i]->size);
	}
}

/* The round clock: what /isthmus/round shows, without the schedule. */
static void
render_round(const struct isthd *d, struct isthd_mtext *t)
{
	uint64_t cur = __atomic_load_n(&d->current, __ATOMIC_ACQUIRE);
	uint64_t pub = __atomic_load_n(&d->published, __ATOMIC_ACQUIRE);
	struct isth_backend_counts bc;

	one_double(t, "isthmus_edge_round", ISTHD_MT_GAUGE, (double)cur - 1,
		"round running now (-1 before the epoch)");
	one_double(t, "isthmus_edge_round_published", ISTHD_MT_GAUGE, (double)pub - 1,
		"newest round whose tables are published (-1: none)");
	one_ns(t, "isthmus_edge_round_length_seconds", ISTHD_MT_GAUGE, d->clk.round_ns,
		"T, the length of every round");
	one_ns(t, "isthmus_edge_epoch_seconds", ISTHD_MT_GAUGE, d->clk.epoch_ns,
		"start of round 0, seconds since the Unix epoch");
	isthd_backend_counts_sum(d, &bc);
	one_u64(t, "isthmus_edge_aggregates_completed", ISTHD_MT_COUNTER, bc.completed,
		"aggregates emitted complete (every worker's backend)");
	one_u64(t, "isthmus_edge_aggregates_partial", ISTHD_MT_COUNTER, bc.partial,
		"aggregates emitted partial: timeout and conflict (every worker's backend)");
	one_u64(t, "isthmus_edge_aggregates_pending", ISTHD_MT_GAUGE, bc.dev_pending,
		"aggregates inside an asynchronous device now");
}

/* One ISTH_PACE_STATS entry: its family and sample; ns gauges in seconds,
 * bit rates per second; a name in the gauge list is a gauge. */
static void
pace_one(struct isthd_mtext *t, const char *name, const char *help, uint64_t v)
{
	static const char *const gauges[] = {"round", "queued", "round_start_lag_ns", "round_bytes",
		"round_active_ns", "round_achieved_bps", "round_planned_bps"};
	enum isthd_mtype type = ISTHD_MT_COUNTER;
	char fam[96];
	size_t n = strlen(name);

	for (unsigned int i = 0; i < RTE_DIM(gauges); i++)
		if (strcmp(name, gauges[i]) == 0)
			type = ISTHD_MT_GAUGE;
	if (ends_with(name, "_ns")) {
		snprintf(fam, sizeof(fam), "isthmus_edge_pace_%.*s_seconds", (int)(n - 3), name);
		one_ns(t, fam, type, v, help);
		return;
	}
	if (ends_with(name, "_bps"))
		snprintf(fam, sizeof(fam), "isthmus_edge_pace_%.*s_bits_per_second", (int)(n - 4),
			name);
	else
		snprintf(fam, sizeof(fam), "isthmus_edge_pace_%s", name);
	one_u64(t, fam, type, v, help);
}

static void
render_pace_backend(const struct isthd *d, struct isthd_mtext *t)
{
	struct isth_pace_stats ps;
	struct isth_backend_stats st;
	struct isth_backend_caps caps;
	struct isthd_mlabel l;

	isthd_pace_stats_sum(d, &ps);
#define P(name, help) pace_one(t, #name, help, ps.name);
	ISTH_PACE_STATS(P)
#undef P
	isthd_backend_caps_sum(d, &caps);
	one_u64(t, "isthmus_edge_backend_memory_bytes", ISTHD_MT_GAUGE, caps.mem_bytes,
		"aggregation memory of every worker's backend");
	one_u64(t, "isthmus_edge_backend_slots", ISTHD_MT_GAUGE, caps.n_slots,
		"aggregation slots of every worker's backend");
	/* the backend's own list (/isthmus/backend): it says no kind, so
	 * one family by name, of unknown type */
	isthd_backend_stats_sum(d, &st);
	isthd_mtext_family(t, "isthmus_edge_backend", ISTHD_MT_UNKNOWN,
		"the backend's own counters and gauges by name (/isthmus/backend), summed over "
		"workers");
	for (unsigned int i = 0; i < st.n; i++) {
		l = (struct isthd_mlabel){"stat", st.names[i]};
		isthd_mtext_u64(t, "isthmus_edge_backend", ISTHD_MT_UNKNOWN, &l, 1, st.values[i]);
	}
}

/* Per worker: ISTHD_WORKER_FIGURES and its AGG stream's resend ring. */
static void
render_workers(const struct isthd *d, struct isthd_mtext *t)
{
	unsigned int n = RTE_MAX(d->n_workers, 1u), k;
	struct isth_backend_counts bcs[ISTHD_MAX_WORKERS];
	struct isth_resend_stats rs[ISTHD_MAX_WORKERS];
	char ks[ISTHD_MAX_WORKERS][12];
	struct isthd_mlabel l;

	for (k = 0; k < n; k++) {
		isth_backend_counts(d->workers[k].be, &bcs[k]);
		isth_resend_stats(d->workers[k].agg_ring, &rs[k]);
		snprintf(ks[k], sizeof(ks[k]), "%u", k);
	}
	one_u64(t, "isthmus_edge_workers", ISTHD_MT_GAUGE, n, "worker lcores");
#define W(name, counter, help, value) \
	do { \
		enum isthd_mtype ty = (counter) ? ISTHD_MT_COUNTER : ISTHD_MT_GAUGE; \
		isthd_mtext_family(t, "isthmus_edge_worker_" #name, ty, help); \
		for (k = 0; k < n; k++) { \
			const struct isthd_worker *w = &d->workers[k]; \
			const struct isthd_dp_stats *st = &w->st; \
			const struct isth_backend_counts bc = bcs[k]; \
			l = (struct isthd_mlabel){"worker", ks[k]}; \
			isthd_mtext_u64(t, "isthmus_edge_worker_" #name, ty, &l, 1, (value)); \
			(void)st; \
			(void)bc; \
		} \
	} while (0);
	ISTHD_WORKER_FIGURES(W)
#undef W
	/* "held" is a gauge, the rest counters (lib/resend) */
#define R(name, help) \
	do { \
		enum isthd_mtype ty = strcmp(#name, "held") ? ISTHD_MT_COUNTER : ISTHD_MT_GAUGE; \
		isthd_mtext_family(t, "isthmus_edge_resend_" #name, ty, "AGG resend ring: " help); \
		for (k = 0; k < n; k++) { \
			l = (struct isthd_mlabel){"worker", ks[k]}; \
			isthd_mtext_u64(t, "isthmus_edge_resend_" #name, ty, &l, 1, rs[k].name); \
		} \
	} while (0);
	ISTH_RESEND_COUNTERS(R)
#undef R
}

/* Per host of the island ([access] island_hosts): /isthmus/hosts' list. */
static void
render_hosts(const struct isthd *d, struct isthd_mtext *t)
{
	static const char *const help[ISTHD_N_HOST_COUNTERS] = {
#define X(n, s) s,
		ISTHD_HOST_COUNTERS(X)
#undef X
	};
	unsigned int n = RTE_MAX(d->cfg.n_island_hosts, 1u), h, i;
	uint64_t v[ISTHD_ISLAND_MAX_HOSTS][ISTHD_N_HOST_COUNTERS];
	char hs[ISTHD_ISLAND_MAX_HOSTS][12], fam[80];
	struct isthd_mlabel l;

	for (h = 0; h < n; h++) {
		isthd_host_stats(d, h, v[h]);
		snprintf(hs[h], sizeof(hs[h]), "%u", h);
	}
	one_u64(t, "isthmus_edge_island_hosts", ISTHD_MT_GAUGE, n,
		"hosts of the island ([access] island_hosts)");
	for (i = 0; i < ISTHD_N_HOST_COUNTERS; i++) {
		snprintf(fam, sizeof(fam), "isthmus_edge_island_host_%s",
			isthd_host_counter_name(i));
		isthd_mtext_family(t, fam, ISTHD_MT_COUNTER, help[i]);
		for (h = 0; h < n; h++) {
			l = (struct isthd_mlabel){"host", hs[h]};
			isthd_mtext_u64(t, fam, ISTHD_MT_COUNTER, &l, 1, v[h][i]);
		}
	}
}

/* /isthmus/xdp's counters, by port (af_xdp ports with xdp_iface only). */
static void
render_xdp(const struct isthd *d, struct isthd_mtext *t)
{
	static const char *const ports[2] = {"access", "wan"};
	struct isth_xdp_counters c[2];
	bool have[2];
	struct isthd_mlabel l;

	for (int i = 0; i < 2; i++)
		have[i] = d->xdp[i] != NULL && isth_xdp_read(d->xdp[i], &c[i]) == 0;
	if (!have[0] && !have[1])
		return;
#define XF(field, help) \
	do { \
		isthd_mtext_family(t, "isthmus_edge_xdp_" #field, ISTHD_MT_COUNTER, help); \
		for (int i = 0; i < 2; i++) { \
			if (!have[i]) \
				continue; \
			l = (struct isthd_mlabel){"port", ports[i]}; \
			isthd_mtext_u64(t, "isthmus_edge_xdp_" #field, ISTHD_MT_COUNTER, &l, 1, \
				c[i].field); \
		} \
	} while (0)
	XF(steered, "frames the XDP program steered to the AF_XDP socket");
	XF(passed, "frames the XDP program passed to the kernel");
	XF(malformed, "frames the XDP program found malformed");
	XF(no_xsk, "frames for a queue without an AF_XDP socket");
	XF(spoofed, "isthmus frames dropped by source pinning");
#undef XF
}

void
isthd_metrics_render(const struct isthd *d, struct isthd_mtext *t)
{
	struct walk w = {.t = t};
	struct isthd_mlabel l[] = {{"version", ISTH_VERSION}, {"island", d->cfg.island}};

	isthd_mtext_family(t, "isthmus_build_info", ISTHD_MT_GAUGE,
		"1, labelled with the version (meson's project version and git revision)");
	isthd_mtext_u64(t, "isthmus_build_info", ISTHD_MT_GAUGE, l, 2, 1);
	one_u64(t, "isthmus_edge_auth_enabled", ISTHD_MT_GAUGE, d->auth.on,
		"1: [auth] mode = on (wire version 2); 0: off, unauthenticated");
	isthd_stats_walk(d, walk_one, &w);
	render_pool_sizes(d, t);
	render_round(d, t);
	render_pace_backend(d, t);
	render_workers(d, t);
	render_hosts(d, t);
	render_xdp(d, t);
	isthd_mtext_end(t);
}

/* ---- the server ---------------------------------------------------------- */

struct client {
	int fd; /* -1: free */
	uint64_t deadline_ns; /* monotonic: closed then, done or not */
	size_t in_len;
	char in[ISTHD_METRICS_MAX_REQUEST];
	struct isthd_mtext out; /* the response, once the request is read */
	size_t out_off;
};

/* One endpoint per process (like the telemetry commands); main writes it
 * in start/stop, the thread reads d and the fds between them. */
static struct {
	const struct isthd *d;
	int lfd, efd; /* listening socket; eventfd that stops the thread */
	pthread_t th;
	bool running;
	/* monotonic ns: the listener rests until then after accept failed
	 * other than EAGAIN (EMFILE, ENOBUFS: it would stay readable and the
	 * thread spin on the controller's CPU) */
	uint64_t accept_rest_ns;
	struct client c[ISTHD_METRICS_MAX_CLIENTS];
} srv = {.lfd = -1, .efd = -1};

static const char *
reason_of(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 431:
		return "Request Header Fields Too Large";
	default:
		return "Internal Server Error";
	}
}

static void
client_close(struct client *c)
{
	close(c->fd);
	c->fd = -1;
	isthd_mtext_free(&c->out);
}

/* The whole response into c->out: the metrics, or a one-line error. */
static void
respond(struct client *c, int status, bool om)
{
	struct isthd_mtext body = {.om = om};
	const char *ct = om ? ISTHD_METRICS_CT_OM : ISTHD_METRICS_CT_TEXT;

	if (status == 200)
		isthd_metrics_render(srv.d, &body);
	if (status == 200 && body.failed)
		status = 500;
	if (status != 200) {
		body.failed = false;
		body.len = 0;
		isthd_mtext_printf(&body, "%d %s\n", status, reason_of(status));
		ct = "text/plain; charset=utf-8";
	}
	c->out = (struct isthd_mtext){0};
	isthd_mtext_printf(&c->out,
		"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		"Connection: close\r\n\r\n",
		status, reason_of(status), ct, body.len, status == 405 ? "Allow: GET\r\n" : "");
	if (body.len)
		mtext_put(&c->out, body.p, body.len);
	isthd_mtext_free(&body);
	c->out_off = 0;
	if (c->out.failed) /* no memory even for that: just close */
		client_close(c);
}

/* POLLIN/POLLOUT on client @c: read the request, or write the response. */
static void
client_io(struct client *c)
{
	ssize_t n;
	bool om;
	int status;

	if (c->out.p == NULL) {
		n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			client_close(c);
			return;
		}
		if (n < 0)
			return;
		c->in_len += (size_t)n;
		status = isthd_metrics_parse_request(c->in, c->in_len, &om);
		if (status == 0)
			return;
		respond(c, status, om);
		if (c->fd < 0)
			return;
	}
	n = send(
		c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		c->out_off += (size_t)n;
	if (n <= 0 || c->out_off == c->out.len)
		client_close(c); /* sent (or the client left) */
}

static void
accept_clients(uint64_t now)
{
	for (unsigned int i = 0; i < ISTHD_METRICS_MAX_CLIENTS; i++) {
		struct client *c = &srv.c[i];
		int fd;

		if (c->fd >= 0)
			continue;
		fd = accept4(srv.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				srv.accept_rest_ns = now + 100000000ull;
			return; /* EAGAIN: none waiting */
		}
		*c = (struct client){
			.fd = fd, .deadline_ns = now + ISTHD_METRICS_TIMEOUT_MS * 1000000ull};
	}
}

/* Shorten poll's @timeout_ms (-1: none) to @ns from now, rounded up. */
static void
sooner(int *timeout_ms, uint64_t ns)
{
	uint64_t ms = (ns + 999999) / 1000000;

	if (*timeout_ms < 0 || ms < (uint64_t)*timeout_ms)
		*timeout_ms = (int)ms;
}

/* The poll set: the stop eventfd, the listener while a slot is free (and
 * it is not resting), every client. Returns its size; @timeout_ms until
 * the first deadline. */
static unsigned int
poll_set(struct pollfd *pf, unsigned int *idx, uint64_t now, int *timeout_ms)
{
	unsigned int n = 0, used = 0;

	*timeout_ms = -1;
	pf[n++] = (struct pollfd){.fd = srv.efd, .events = POLLIN};
	for (unsigned int i = 0; i < ISTHD_METRICS_MAX_CLIENTS; i++) {
		const struct client *c = &srv.c[i];

		if (c->fd < 0)
			continue;
		used++;
		sooner(timeout_ms, c->deadline_ns > now ? c->deadline_ns - now : 0);
		idx[n] = i;
		pf[n++] = (struct pollfd){.fd = c->fd, .events = c->out.p ? POLLOUT : POLLIN};
	}
	if (used < ISTHD_METRICS_MAX_CLIENTS && now >= srv.accept_rest_ns)
		pf[n++] = (struct pollfd){.fd = srv.lfd, .events = POLLIN};
	else if (used < ISTHD_METRICS_MAX_CLIENTS)
		sooner(timeout_ms, srv.accept_rest_ns - now);
	return n;
}

static void *
serve(void *arg __rte_unused)
{
	struct pollfd pf[ISTHD_METRICS_MAX_CLIENTS + 2];
	unsigned int idx[ISTHD_METRICS_MAX_CLIENTS + 2];
	sigset_t all;

	/* signals are main's (its handlers set the stop and reload flags) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		uint64_t now = isth_clock_mono_ns();
		int timeout_ms;
		unsigned int n = poll_set(pf, idx, now, &timeout_ms);

		if (poll(pf, n, timeout_ms) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break; /* isthd_metrics_stop */
		now = isth_clock_mono_ns();
		for (unsigned int i = 1; i < n; i++) {
			struct client *c;

			if (pf[i].fd == srv.lfd) {
				if (pf[i].revents)
					accept_clients(now);
				continue;
			}
			c = &srv.c[idx[i]];
			if (pf[i].revents)
				client_io(c);
			if (c->fd >= 0 && now >= c->deadline_ns)
				client_close(c); /* silent, slow or not reading */
		}
	}
	for (unsigned int i = 0; i < ISTHD_METRICS_MAX_CLIENTS; i++)
		if (srv.c[i].fd >= 0)
			client_close(&srv.c[i]);
	return NULL;
}

static int
listen_on(uint32_t ip, uint16_t port, struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int one = 1, fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	*sa = (struct sockaddr_in){
		.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(ip)};
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(fd, 16) < 0 ||
		getsockname(fd, (struct sockaddr *)sa, &len) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

int
isthd_metrics_start(struct isthd *d, char *err, size_t err_size)
{
	struct sockaddr_in sa;
	char addr[INET_ADDRSTRLEN];
	int rc;

	if (!d->cfg.metrics || srv.running)
		return 0;
	inet_ntop(AF_INET, &(struct in_addr){htonl(d->cfg.metrics_ip)}, addr, sizeof(addr));
	srv.lfd = listen_on(d->cfg.metrics_ip, d->cfg.metrics_port, &sa);
	if (srv.lfd < 0) {
		rc = srv.lfd;
		snprintf(err, err_size, "[metrics] listen %s:%u: %s", addr, d->cfg.metrics_port,
			strerror(-rc));
		return rc;
	}
	srv.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (unsigned int i = 0; i < ISTHD_METRICS_MAX_CLIENTS; i++)
		srv.c[i].fd = -1;
	srv.d = d;
	rc = srv.efd < 0 ? -errno : -pthread_create(&srv.th, NULL, serve, NULL);
	if (rc < 0) {
		snprintf(err, err_size, "[metrics]: no thread: %s", strerror(-rc));
		goto fail;
	}
	pthread_setname_np(srv.th, "isthd-metrics");
	srv.running = true;
	printf("isthmusd: metrics on http://%s:%u/metrics\n", addr, ntohs(sa.sin_port));
	fflush(stdout);
	return 0;
fail:
	if (srv.efd >= 0)
		close(srv.efd);
	close(srv.lfd);
	srv.lfd = srv.efd = -1;
	return rc;
}

void
isthd_metrics_stop(void)
{
	uint64_t one = 1;

	if (!srv.running)
		return;
	if (write(srv.efd, &one, sizeof(one)) != sizeof(one))
		fprintf(stderr, "isthmusd: metrics thread not woken: %s\n", strerror(errno));
	pthread_join(srv.th, NULL);
	close(srv.lfd);
	close(srv.efd);
	srv.lfd = srv.efd = -1;
	srv.running = false;
}
