/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Supervision by systemd (Type=notify, WatchdogSec): READY=1 once the
 * controller has published the tables of the edge's first round, STATUS=
 * with the round, WATCHDOG=1 at half $WATCHDOG_USEC, RELOADING=1 and
 * READY=1 around a SIGHUP reload, STOPPING=1 when a stop begins.
 *
 * Everything here runs on the controller (the main lcore), never on a
 * worker: a controller stuck in a step sends no WATCHDOG=1 and systemd
 * restarts the edge, though the workers still forward. Without
 * $NOTIFY_SOCKET each call is a getenv() and nothing else.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "isth_clock.h"
#include "isth_log.h"
#include "isth_notify.h"
#include "isthd.h"

/* The controller's alone (one daemon per process). */
static struct {
	uint64_t wd_every_ns; /* half of $WATCHDOG_USEC; 0: no watchdog */
	uint64_t wd_next_ns; /* mono time of the next WATCHDOG=1 */
	uint64_t status_next_ns; /* STATUS= at most once a second */
	uint64_t status_round; /* the round the last STATUS= named */
	bool ready; /* READY=1 sent */
	bool reloading; /* RELOADING=1 sent, READY=1 not yet */
	bool failed; /* a send failed: said once, then quiet */
} sup;

static void
sent(int rc, const char *what)
{
	if (rc == 0 || sup.failed)
		return;
	sup.failed = true;
	ISTH_LOG_WARN("systemd notification %s not sent: %s", what,
		isth_notify_error()[0] ? isth_notify_error() : strerror(-rc));
}

int
isthd_supervise_init(void)
{
	uint64_t us;

	sup = (typeof(sup)){.status_round = UINT64_MAX}; /* a first STATUS= */
	if (isth_notify_watchdog_usec(&us) < 0) {
		ISTH_LOG_ERR("%s", isth_notify_error());
		return -EINVAL;
	}
	sup.wd_every_ns = us * 1000 / 2;
	if (us)
		ISTH_LOG_INFO("watchdog: WATCHDOG=1 every %.3f s from the controller",
			(double)sup.wd_every_ns / 1e9);
	return 0;
}

/* After each controller step: @reload is whether a reload was asked
 * before it (the step has handled it). */
void
isthd_supervise_tick(struct isthd *d, bool reload)
{
	uint64_t now = isth_clock_mono_ns();
	uint64_t cur = __atomic_load_n(&d->current, __ATOMIC_RELAXED);

	/* ready once the tables of the first round the edge takes part in
	 * are out (published counts rounds, 1-based; join1 is that round + 1;
	 * a backend refusing the handoff (-EBUSY) delays it) */
	if (!sup.ready && d->join1 &&
		__atomic_load_n(&d->published, __ATOMIC_ACQUIRE) >= d->join1) {
		sup.ready = true;
		sup.reloading = false; /* this READY=1 answers a reload's too */
		sent(isth_notify_ready(), "READY=1");
	}
	if (sup.ready && sup.reloading && !reload) {
		sup.reloading = false;
		sent(isth_notify_ready(), "READY=1");
	}
	/* fed only while the running round's tables are out (published and
	 * current both count rounds 1-based): a worker that stops passing
	 * quiescent states blocks publishing (-EBUSY, retried every step),
	 * and then the watchdog starves and systemd restarts the edge,
	 * instead of a live controller pinging for a dead data path */
	if (sup.wd_every_ns && now >= sup.wd_next_ns &&
		__atomic_load_n(&d->published, __ATOMIC_ACQUIRE) >= cur) {
		sup.wd_next_ns = now + sup.wd_every_ns;
		sent(isth_notify_watchdog(), "WATCHDOG=1");
	}
	if (cur != sup.status_round && now >= sup.status_next_ns) {
		sup.status_round = cur;
		sup.status_next_ns = now + 1000000000ull;
		/* current is 1-based: 0 until round 0 starts */
		if (cur == 0)
			sent(isth_notify_status(
				     "waiting for round 0 (epoch %" PRIu64 ")", d->clk.epoch_ns),
				"STATUS=");
		else
			sent(isth_notify_status("round %" PRIu64, cur - 1), "STATUS=");
	}
}

/* Before the step that handles a SIGHUP reload. */
void
isthd_supervise_reloading(void)
{
	if (sup.reloading)
		return;
	sup.reloading = true;
	sent(isth_notify_reloading(), "RELOADING=1");
}

void
isthd_supervise_stopping(void)
{
	sent(isth_notify_stopping(), "STOPPING=1");
}
