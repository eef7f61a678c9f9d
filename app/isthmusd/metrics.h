/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHD_METRICS_H
#define ISTHD_METRICS_H

/*
 * The metrics endpoint (doc/isthmusd.md, "Metrics"): OpenMetrics (or the
 * Prometheus text format) over a minimal HTTP responder on a thread of its
 * own, never on a data-path lcore. It reads what the telemetry commands
 * read, by the same rules (relaxed loads of single-writer counters,
 * stats.c's sums), under the same names.
 *
 * The text primitives (family headers, samples, escapes) and the request
 * parser are separate from the daemon so that tests/isthmusd renders and
 * parses with them without a running edge.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct isthd;

/*
 * Per-worker figures, one list: /isthmus/workers (key wK_NAME) and the
 * metrics endpoint (isthmus_edge_worker_NAME{worker="K"}) are generated
 * from it, so the two cannot drift. X(name, counter?, help, value), the
 * value an expression of w (const struct isthd_worker *), st (its
 * counters) and bc (its backend's struct isth_backend_counts).
 */
#define ISTHD_WORKER_FIGURES(X) \
	X(peer_data, true, "peer DATA this worker summed (chunk % workers == worker)", \
		isth_ctr_get(&st->peer_data)) \
	X(peer_data_bytes, true, "payload bytes of peer_data", isth_ctr_get(&st->peer_data_bytes)) \
	X(completed, true, "aggregates this worker's backend emitted complete", bc.completed) \
	X(partial, true, "aggregates this worker's backend emitted partial (timeout, conflict)", \
		bc.partial) \
	X(idle_sleeps, true, "idle sleeps of the worker", isth_ctr_get(&st->idle_sleeps)) \
	X(agg_out, true, "AGGs of the worker's AGG stream sent", isth_ctr_get(&st->agg_out)) \
	X(nacks, true, "island NACKs of the worker's AGG stream", isth_ctr_get(&st->nacks)) \
	X(resent, true, "AGGs of the worker's stream resent", isth_ctr_get(&st->resent)) \
	X(gone, true, "GONE replies of the worker's stream", isth_ctr_get(&st->gone)) \
	X(sealed, true, "auth on: frames to the island the worker's tag engine sealed", \
		isth_ctr_get(&st->sealed)) \
	X(access_tx, true, \
		"frames the worker put on the access port (with one access TX queue worker 0 " \
		"sends every worker's)", \
		isth_ctr_get(&st->access_tx)) \
	X(drop_tx_access, true, "frames the worker's access TX queue refused", \
		isth_ctr_get(&st->drop[ISTHD_DROP_tx_access])) \
	X(data_out, true, "island DATA the worker's pacer released (to its peers)", \
		isth_ctr_get(&st->data_out)) \
	X(wan_tx, true, \
		"frames the worker put on the WAN port (with one WAN TX queue worker 0 sends " \
		"every worker's)", \
		isth_ctr_get(&st->wan_tx)) \
	X(repairs_sent, true, "DATA the worker resent to a peer edge", \
		isth_ctr_get(&st->repairs_sent)) \
	X(tail_copies_sent, true, "last chunks the worker sent again to a peer unasked", \
		isth_ctr_get(&st->tail_copies_sent)) \
	X(peer_nacks_rx, true, "chunk NACKs from peer edges (the RX worker's)", \
		isth_ctr_get(&st->peer_nacks_rx)) \
	X(agg_next_seq, false, "next sequence of the worker's AGG stream", \
		isth_resend_next_seq(w->agg_ring))

/* Bytes of a request's head (request line and headers) at most: a longer
 * one is answered 431 and closed. */
#define ISTHD_METRICS_MAX_REQUEST 4096
/* A client has this long from connect to its last response byte. */
#define ISTHD_METRICS_TIMEOUT_MS 2000
/* Clients served at once; more wait in the listen backlog. */
#define ISTHD_METRICS_MAX_CLIENTS 8

/* A growing text buffer; on allocation failure @failed is set and later
 * writes are dropped (the response is then 500). */
struct isthd_mtext {
	char *p;
	size_t len, cap;
	bool failed;
	bool om; /* OpenMetrics (else the Prometheus text format 0.0.4) */
};

enum isthd_mtype {
	ISTHD_MT_COUNTER,
	ISTHD_MT_GAUGE,
	ISTHD_MT_UNKNOWN, /* "unknown" (OpenMetrics), "untyped" (text) */
};

/* One label of a sample. */
struct isthd_mlabel {
	const char *name;
	const char *value; /* any bytes but NUL: escaped here */
};

void isthd_mtext_printf(struct isthd_mtext *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* HELP and TYPE lines (and UNIT in OpenMetrics when the family name ends
 * in _bytes or _seconds) of family @name; a counter's samples are then
 * @name"_total". @help is escaped. */
void isthd_mtext_family(
	struct isthd_mtext *t, const char *name, enum isthd_mtype type, const char *help);
/* One sample of family @name (a counter: @name"_total"): integer or real. */
void isthd_mtext_u64(struct isthd_mtext *t, const char *name, enum isthd_mtype type,
	const struct isthd_mlabel *l, unsigned int n_labels, uint64_t v);
void isthd_mtext_double(struct isthd_mtext *t, const char *name, enum isthd_mtype type,
	const struct isthd_mlabel *l, unsigned int n_labels, double v);
/* A sample in seconds, exactly, from @ns nanoseconds. */
void isthd_mtext_ns(struct isthd_mtext *t, const char *name, enum isthd_mtype type,
	const struct isthd_mlabel *l, unsigned int n_labels, uint64_t ns);
/* The end of a document: "# EOF" in OpenMetrics, nothing in text. */
void isthd_mtext_end(struct isthd_mtext *t);
void isthd_mtext_free(struct isthd_mtext *t);

/* Content-Type of each format. */
#define ISTHD_METRICS_CT_OM "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define ISTHD_METRICS_CT_TEXT "text/plain; version=0.0.4; charset=utf-8"

/*
 * The head of a request, @len bytes so far: 0 while incomplete (no blank
 * line yet, below ISTHD_METRICS_MAX_REQUEST), else the HTTP status to
 * answer: 200 (GET /metrics), 400 (not a request line, not HTTP/1.x), 404
 * (another path), 405 (another method), 431 (head too long). @om: the
 * client's Accept names application/openmetrics-text.
 */
int isthd_metrics_parse_request(const char *buf, size_t len, bool *om);

/* Every metric of @d into @t (any thread, while @d is set up). */
void isthd_metrics_render(const struct isthd *d, struct isthd_mtext *t);

/*
 * [metrics] listen: bind, listen and start the endpoint's thread; a no-op
 * when not configured. 0, or -errno with @err set. The bound address is
 * printed ("isthmusd: metrics on http://A:P/metrics"): port 0 in the
 * config is the kernel's choice, named there.
 */
int isthd_metrics_start(struct isthd *d, char *err, size_t err_size);
/* Stop the thread and close the socket; before teardown (called by
 * isthd_telemetry_close). Idempotent. */
void isthd_metrics_stop(void);

#endif
