/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Authentication offloaded to the backend's device (doc/isthmusd.md,
 * "Authentication"; doc/fpga-interface.md 3.8): with [auth] mode = on
 * and a backend that verifies (fpga on an interface 1.1 device), WAN DATA
 * goes to the device with its tag unchecked, and the device verifies it
 * before anything sums it. What stays on the host is protocol step 6, the
 * replay window: checked (and the seq against the clock) before a DATA is
 * posted, and moved only by the device's verdict that the tag verified
 * (isthd_auth_dev_verdict), which comes after the RX path's round and
 * shape checks admitted it, so neither a forged seq nor a refused DATA
 * moves it. The device's refusals are counted under the
 * same drop reasons as the host's (auth_format, auth_key, auth_epoch,
 * auth_tag). Every other message (NACK, GONE; the access port) is
 * verified on the host as before (auth.c). With a backend that also seals,
 * its AGGs leave sealed (worker.c, emit_aggs). Such a backend runs with
 * one worker (setup.c): the device's verdicts are worker 0's to count.
 */
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "isth_clock.h"
#include "isthd.h"

void
isthd_auth_dev_conf(const struct isthd *d, struct isth_backend_auth *a, uint64_t agg_seq)
{
	memset(a, 0, sizeof(*a));
	if (!d->auth.on)
		return;
	a->keys = d->auth.keys;
	a->seal = true;
	a->agg_seq = agg_seq;
	/* the site table: a DATA's WAN key is the one of the island whose
	 * edge its source address is (as for the host's verify, rx.c) */
	for (unsigned int s = 0; s < d->n_islands && s < RTE_DIM(a->site_ip); s++)
		if (d->peer_of[s] != NULL)
			a->site_ip[s] = d->peer_of[s]->ip;
	a->verdict = isthd_auth_dev_verdict;
	a->arg = (void *)(uintptr_t)d;
}

/*
 * A DATA whose tag the device verified, for WAN repair's tracking: the RX
 * path leaves it to the verdict (rx.c, wan_rx_queue), since before it the
 * DATA may be forged, and a forged chunk marked seen would never be NACKed
 * (a tracking fed by unverified frames let a forged DATA with a bad tag
 * hide a peer's lost chunk). Only the header fields tracking reads.
 */
static void
dev_track(struct isthd *d, const uint8_t *msg)
{
	struct isth_wire_pkt p = {
		.hdr = {
			.type = ISTH_WIRE_DATA,
			.flags = (uint16_t)(isth_wire_get_flags(msg) & ISTH_WIRE_F_RESENT),
			.sender = isth_wire_get_hdr_sender(msg),
			.round = isth_wire_get_hdr_round(msg),
			.chunk = isth_wire_get_hdr_chunk(msg),
		}};

	/* such a backend runs with one worker (setup.c): worker 0 gets the
	 * verdicts, on its own lcore */
	isthd_repair_track(&d->workers[0], &p, isthd_tsc_to_ns(d, rte_rdtsc()));
}

/* Worker lcore, from the backend's aggregate_burst() or drain(). */
void
isthd_auth_dev_verdict(void *arg, const uint8_t *msg, int status)
{
	struct isthd *d = arg;
	struct isth_auth_replay *w;
	enum isthd_drop why;

	switch (status) {
	case ISTH_AUTH_OK:
		/* the tag verified: now the seq may move the window. A copy
		 * already recorded (two in flight at once) is refused by the
		 * aggregator as a duplicate, never summed twice. */
		w = isthd_auth_window(d, ISTH_AUTH_WAN, msg, 0);
		/* ...unless its round is one the aggregator refuses (the RX
		 * path left that check to here: rx.c, wan_data_refusal) */
		if (w != NULL &&
			isthd_wan_round_refusal(d, isth_wire_get_hdr_round(msg),
				__atomic_load_n(&d->published, __ATOMIC_ACQUIRE)) == ISTHD_DROP_MAX)
			isth_auth_replay_commit(
				w, isth_wire_get_seq(msg), isth_wire_get_hdr_round(msg));
		dev_track(d, msg);
		return;
	case ISTH_AUTH_E_FORMAT:
		why = ISTHD_DROP_auth_format;
		break;
	case ISTH_AUTH_E_KEY:
		why = ISTHD_DROP_auth_key;
		break;
	case ISTH_AUTH_E_EPOCH:
		why = ISTHD_DROP_auth_epoch;
		break;
	default:
		why = ISTHD_DROP_auth_tag;
		break;
	}
	isth_ctr_add(&d->workers[0].st.drop[why], 1);
}

uint16_t
isthd_auth_dev_rx(struct isthd_worker *wk, struct rte_mbuf **m, struct isth_wire_pkt *p,
	const uint8_t *owner, uint16_t n)
{
	struct isthd *d = wk->d;
	struct rte_mbuf *cm[ISTHD_BURST];
	struct isth_wire_pkt cp[ISTHD_BURST];
	uint8_t co[ISTHD_BURST];
	/* once per burst: a vDSO read, no system call */
	uint64_t now_ns = isth_clock_real_ns();
	uint16_t i, k = 0, c = 0;

	for (i = 0; i < n; i++) {
		if (p[i].hdr.type != ISTH_WIRE_DATA) {
			cm[c] = m[i];
			cp[c] = p[i];
			co[c++] = owner[i];
			continue;
		}
		/* step 6 before the device: a seq ahead of the clock, already
		 * accepted or older than the window is not worth a descriptor */
		{
			struct isth_auth_replay *w =
				isthd_auth_window(d, ISTH_AUTH_WAN, p[i].msg, 0);
			enum isthd_drop why = ISTHD_DROP_MAX;
			enum isth_auth_status s;

			if (unlikely(
				    isth_auth_seq_ahead(p[i].hdr.seq, now_ns, d->cfg.seq_ahead_ns)))
				why = ISTHD_DROP_auth_ahead;
			s = w != NULL ? isth_auth_replay_check(w, p[i].hdr.seq, p[i].hdr.round)
				      : ISTH_AUTH_OK;
			if (why == ISTHD_DROP_MAX && s != ISTH_AUTH_OK)
				why = s == ISTH_AUTH_E_REPLAY ? ISTHD_DROP_auth_replay
							      : ISTHD_DROP_auth_stale;
			if (unlikely(why != ISTHD_DROP_MAX)) {
				isth_ctr_add(&wk->st.drop[why], 1);
				rte_pktmbuf_free(m[i]);
				continue;
			}
		}
		m[k] = m[i];
		if (k != i)
			p[k] = p[i];
		k++;
	}
	if (c == 0)
		return k;
	/* the rest (NACK, GONE, and types refused later) on the host */
	c = (uint16_t)isthd_auth_verify_rx(wk, ISTH_AUTH_WAN, cm, cp, co, NULL, c);
	for (i = 0; i < c; i++) {
		m[k] = cm[i];
		p[k++] = cp[i];
	}
	return k;
}
