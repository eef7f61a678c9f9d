/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTHD_AUTH_H
#define ISTHD_AUTH_H

/*
 * Authentication at the edge (auth.c, auth_dev.c; doc/isthmusd.md,
 * "Authentication"): the key sets and who reads them. Included by isthd.h,
 * after its constants.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "isth_auth.h"
#include "isth_backend.h"
#include "isth_rtab.h"
#include "isth_wire.h"

struct isthd;
struct isthd_worker;
struct isthd_dp_stats;

/*
 * One load of the key file: its keys and a tag engine for each thread
 * that seals or verifies (an ipsec-mb engine per worker, an OpenSSL one
 * for the controller). It lives in a buffer of auth.sets (lib/rtab):
 * filled by ctl before it is published, read-only after; worker k uses
 * dp[k] only within one pass of its loop, and ctl frees the engines only
 * once every worker has passed a quiescent state since the set was
 * replaced (doc/isthmusd.md, "Authentication").
 */
struct isthd_keyset {
	struct isth_auth *keys;
	struct isth_auth_engine *ctl; /* the controller's (ROUND) */
	uint64_t gen; /* 1 at start-up, +1 per reload: the RX worker sees a new set */
	unsigned int n_dp;
	struct isth_auth_engine *dp[ISTHD_MAX_WORKERS]; /* worker k's (ipsec-mb) */
};

/*
 * Authentication (auth.c; doc/isthmusd.md, "Authentication"). Three
 * writers, three groups, each on cache lines of its own: init (read-only
 * after launch), the controller, and the RX worker (ISTHD_ROLE_RX: the
 * replay windows of every stream received). Each worker's engine of the
 * pass and the seqs of the streams a worker starts (GONE, NACK) are in
 * struct isthd_worker; the ROUND seq is the controller's (struct isthd).
 */
struct isthd_auth {
	/* init: read-only after launch */
	bool on; /* [auth] mode = on: wire version 2 on both ports */
	/* init (setup, from the backend's caps): the backend's device
	 * verifies WAN DATA tags / seals AGGs (auth_dev.c) */
	bool dev_verify, dev_seal;
	/* init: loaded by prepare, for --check and setup; NULL after setup */
	struct isth_auth *keys;
	/* the key sets (lib/rtab, one slot, one spare buffer, readers d->qs):
	 * ctl publishes, every worker reads slot 0 once per pass */
	struct isth_rtab *sets;
	/* init: replay windows per (key epoch slot, direction, sender, type;
	 * the AGG stream is 0 in everything the edge receives; on the access
	 * side also the island host, [access] island_hosts: each host is a
	 * stream of its own) of every stream received, sized at start-up
	 * (isthd_auth_window); their contents are the RX worker's */
	struct isth_auth_replay *win;
	uint64_t *words;
	uint32_t win_bits;
	unsigned int n_win;

	/* ctl only: the key set published (the controller's), its engine,
	 * and the set it replaced while it waits for every worker's
	 * quiescent state (NULL: none) */
	struct isthd_keyset *ks_ctl __rte_cache_aligned;
	struct isth_auth_engine *ctl;
	struct isthd_keyset *ks_old;

	/* the RX worker writes (at the start of each pass, isthd_auth_step)
	 * and reads: the key set it uses in this pass, the generation its
	 * replay window slots follow, and the epoch each slot holds (-1:
	 * free) */
	const struct isthd_keyset *ks_rx __rte_cache_aligned;
	uint64_t gen_rx;
	int16_t slot_epoch[ISTH_AUTH_MAX_EPOCHS];
	/* the RX worker, several island hosts only: the next seq of this
	 * edge's own WAN DATA stream, from the wall clock at set-up. Each
	 * host's DATA comes with its own seqs; the edge gives every DATA it
	 * forwards one of this stream's, so its peers see one stream per
	 * edge, as with one host (doc/protocol.md, "An island of several
	 * hosts") */
	uint64_t seq_data;
};

/* auth.c */
/* Load the key file (or warn loudly that auth is off): --check does it. */
int isthd_auth_prepare(struct isthd *d, char *err, size_t err_size);
/* Engines, replay windows; after isthd_prepare() and the workers' set-up. */
int isthd_auth_setup(struct isthd *d, char *err, size_t err_size);
void isthd_auth_fini(struct isthd *d);
/* ctl: the reload path (SIGHUP, /isthmus/reload) loads the key file again
 * and hands its keys to the workers; refused (logged) if the new file
 * changes the epoch of a round already published. */
void isthd_auth_reload(struct isthd *d, uint64_t cur);
/* ctl: free the key set a reload replaced, once every worker has passed a
 * quiescent state since (lib/rtab on d->qs); at every controller step. */
void isthd_auth_ctl_step(struct isthd *d);
/* Worker @w, start of each pass: its engine of the key set published;
 * the RX worker also moves its replay window slots to a new set's epochs. */
void isthd_auth_step(struct isthd_worker *w);
/* Several island hosts: host h's AGG streams start h lanes below the
 * clock (isthd_auth_host_seq0): 2^56 ns, 2.3 years; 15 lanes below
 * today's clock stay above 0 (doc/protocol.md, "An island of several
 * hosts"). */
#define ISTHD_AUTH_HOST_LANE (UINT64_C(1) << 56)
/* An island host no window belongs to (a source outside [access]
 * island_hosts, refused later as access_bad_source). */
#define ISTHD_AUTH_NO_HOST 0xffu
/* The replay window of the stream of sealed message @msg received on the
 * @dir side, from island host @host (UP; ignored on the WAN); NULL when
 * the edge keeps none (types refused later, ISTHD_AUTH_NO_HOST). */
struct isth_auth_replay *
isthd_auth_window(struct isthd *d, enum isth_auth_dir dir, const uint8_t *msg, unsigned int host);
/* The RX worker @w: verify @n parsed frames (@owner: key owner of each;
 * @host: UP, the island host each came from by its source address, else
 * NULL) with its engine, then check their seqs (ahead of the clock, the
 * replay window of the host's stream; nothing moves); refusals are
 * counted and freed, the rest compacted to the front of @m, @p (and
 * @host). @return how many are left. */
unsigned int
isthd_auth_verify_rx(struct isthd_worker *w, enum isth_auth_dir dir, struct rte_mbuf **m,
	struct isth_wire_pkt *p, const uint8_t *owner, uint8_t *host, unsigned int n);
/* The RX worker @w: message @p (received on @dir's side from island host
 * @host, 0 on the WAN; checked by isthd_auth_verify_rx) passed every
 * check that can refuse it: move its replay window. @return
 * ISTHD_DROP_MAX, or the reason to drop it (a copy earlier in the burst
 * took its seq). Auth off: ISTHD_DROP_MAX. */
enum isthd_drop isthd_auth_commit(struct isthd_worker *w, enum isth_auth_dir dir,
	const struct isth_wire_pkt *p, unsigned int host);
/* The RX worker: several island hosts (auth on), the island DATA message
 * @msg about to be resealed for the WAN gets the next seq of this edge's
 * own WAN DATA stream (d->auth.seq_data); one host: left as it is. */
void isthd_auth_wan_seq(struct isthd *d, uint8_t *msg);
/* Several island hosts: host @host's AGG streams' first seq when the
 * edge's streams start at @now (auth on; doc/protocol.md, "An island of
 * several hosts"). */
uint64_t isthd_auth_host_seq0(uint64_t now, unsigned int host);
/* Seal the message at @msg (@len bytes; when already version 2, its tag
 * included) with @dir's key of the local island, in place. @return the
 * sealed length or a negative errno. */
int isthd_auth_seal_msg(struct isthd *d, struct isth_auth_engine *e, enum isth_auth_dir dir,
	uint8_t *msg, size_t len, size_t cap);
/* Seal the message at @msg (@len bytes, its trailer included when already
 * version 2) for one peer edge @peer: a WAN tag list of one under the pair
 * key (this edge, the peer's), in place within @cap
 * (isthd_auth_peer_cap()). @return the sealed length or a negative errno. */
int isthd_auth_seal_peer(struct isthd *d, struct isth_auth_engine *e, const struct isthd_peer *peer,
	uint8_t *msg, size_t len, size_t cap);
/* Bytes @msg (@len, sealed or not) takes sealed for one peer. */
size_t isthd_auth_peer_cap(const uint8_t *msg, size_t len);
/* The RX worker: the island's DATA in @m (the message alone, sealed by the
 * island with its one UP tag, verified) resealed for the WAN in place:
 * the tag list of round @r's peers (its repair table's expected senders,
 * the same list with [wan] replication = network), the mbuf grown by the
 * list's extra bytes. A round without peers is left as it is. @return the
 * sealed length, 0, or a negative errno (no round table, more than 15
 * peers, no room). */
int
isthd_auth_seal_wan(struct isthd *d, struct isth_auth_engine *e, struct rte_mbuf *m, uint64_t r);
/* The most peers any island has in a round of @s (0 with auth off), or
 * -E2BIG with @err if a round's clique needs more than 15 tags (a WAN tag
 * list holds at most 15). */
int
isthd_auth_list_room(const struct isthd *d, const struct isth_sched *s, char *err, size_t err_size);

/* Worker: seal @n fresh (version 1) frames in one burst with its engine
 * @e and @dir's key of the local island: each message starts @off bytes
 * into its (single-segment) mbuf and its last 16 bytes are the room for
 * the tag. Failures are counted in @st (auth_seal) and freed, the rest
 * compacted to the front of @m (DOWN: counted in @st sealed). @return
 * how many are left. */
unsigned int
isthd_auth_seal_frames(const struct isthd *d, struct isthd_dp_stats *st, struct isth_auth_engine *e,
	enum isth_auth_dir dir, struct rte_mbuf **m, unsigned int n, uint32_t off);

/* auth_dev.c: authentication offloaded to the backend's device (one
 * worker only: setup refuses more with such a backend) */
/* The backend's auth configuration (keys, site table, verdict callback);
 * zeroed when auth is off. @agg_seq: the AGG resend ring's first seq. */
void isthd_auth_dev_conf(const struct isthd *d, struct isth_backend_auth *a, uint64_t agg_seq);
/* The RX worker: the device's verdict on a DATA's tag (struct
 * isth_backend_auth). */
void isthd_auth_dev_verdict(void *arg, const uint8_t *msg, int status);
/* The RX worker @w, WAN side: DATA only through the replay check (the
 * device verifies the tag), everything else verified here
 * (isthd_auth_verify_rx); refusals counted and freed, the rest
 * compacted. @return how many left. */
uint16_t isthd_auth_dev_rx(struct isthd_worker *w, struct rte_mbuf **m, struct isth_wire_pkt *p,
	const uint8_t *owner, uint16_t n);

#endif
