/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_AUTH_H
#define ISTH_AUTH_H

/**
 * @file
 * Authentication of isthmus messages, wire format version 2
 * (doc/protocol.md, "Authenticated format (v2)"; threat model in
 * doc/security.md).
 *
 * - An isth_auth handle holds the keys of one job that one site may use:
 *   loaded from a key file (mode 0600 checked, parse errors name
 *   file:line, key bytes never printed). The operator's job file holds
 *   master keys, from which every key of every epoch, direction and
 *   owner island is derived with HKDF-SHA256; a site file (written by
 *   isthmus-keys from the job file) holds only the derived keys of one
 *   island or one edge, and a handle loaded from it refuses to seal or
 *   verify with any other key (doc/protocol.md, "Keys"). Immutable after
 *   creation: share it between threads; a key file reload builds a new
 *   handle.
 * - An isth_auth_engine computes and verifies tags (AES-256-GMAC) for one
 *   thread, with one of two implementations of the same algorithm:
 *   OpenSSL EVP (libisthmus, tools) or intel-ipsec-mb's job API (the
 *   edge's burst path). Everything is allocated when the engine is
 *   created; seal and verify allocate nothing.
 * - struct isth_auth_replay is a sliding replay window over 64-bit seqs,
 *   checked without a change and moved (committed) only once every check
 *   that can refuse the packet has passed (auth_replay.c).
 *
 * Messages are raw bytes: a 40-byte isthmus header (lib/wire layout),
 * the body, and (after sealing) the 16-byte tag.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isth_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Wire protocol version of authenticated messages. */
#define ISTH_AUTH_VERSION 2u
#define ISTH_AUTH_TAG_SIZE 16u
#define ISTH_AUTH_IV_SIZE 12u
/** Master and derived keys: AES-256. */
#define ISTH_AUTH_KEY_SIZE 32u
/** Key epochs one key file may hold. */
#define ISTH_AUTH_MAX_EPOCHS 4u
/** Header offset of the key epoch byte (version 1's reserved byte). */
#define ISTH_AUTH_OFF_EPOCH ISTH_WIRE_OFF_EPOCH
/** Most islands per job (contributor bitmaps are 64 bits). */
#define ISTH_AUTH_MAX_ISLANDS 64u

/** Key directions (doc/protocol.md, "Keys"). */
enum isth_auth_dir {
	ISTH_AUTH_UP = 1, /**< island i -> its edge; owner i */
	ISTH_AUTH_DOWN = 2, /**< edge of island i -> island i; owner i */
	ISTH_AUTH_WAN = 3, /**< edge of island s -> peer edges; owner s */
	/**
	 * Pairwise WAN key K(e, WAN_PAIR, s, t) of (sending edge s,
	 * receiving edge t), s != t; a WAN frame carries a tag list, one tag
	 * per receiver (doc/protocol.md, "Keys", "WAN tag list").
	 */
	ISTH_AUTH_WAN_PAIR = 4,
};

/**
 * A WAN tag list: the trailer `receivers (u64 BE) || k tags` in ascending
 * receiver id. trailer_len is one byte, so 8 + 16k <= 255: at most 15
 * receivers per frame (a clique of at most 16 edges).
 */
#define ISTH_AUTH_MAX_TAGS 15u
/** Bytes of the receiver bitmap that opens a tag list. */
#define ISTH_AUTH_LIST_HDR 8u

/** trailer_len of a tag list of @p k tags (1..ISTH_AUTH_MAX_TAGS). */
static inline size_t
isth_auth_list_size(unsigned int k)
{
	return ISTH_AUTH_LIST_HDR + (size_t)k * ISTH_AUTH_TAG_SIZE;
}

/**
 * Body bytes an island's DATA leaves for its edge's WAN tag list beyond
 * the one tag of its own: 8 + 16 (k - 1) for k = min(@p n_islands - 1,
 * 15), the most peers a round of the job can give an island (0 for one
 * island). Both ends of the access link take it from the job's islands
 * alone, so the island's chunk size and the one its edge announces agree
 * whatever the schedule (doc/protocol.md, "Sizes").
 */
static inline size_t
isth_auth_wan_room(unsigned int n_islands)
{
	unsigned int k = n_islands > ISTH_AUTH_MAX_TAGS ? ISTH_AUTH_MAX_TAGS : n_islands - 1;

	return n_islands <= 1 ? 0 : isth_auth_list_size(k) - ISTH_AUTH_TAG_SIZE;
}

/** What a key file is for (its `site` line; none: the job file). */
enum isth_auth_site {
	ISTH_AUTH_SITE_JOB = 0, /**< master keys: every key derives from it */
	ISTH_AUTH_SITE_ISLAND = 1, /**< island i: UP i (seal), DOWN i (verify) */
	ISTH_AUTH_SITE_EDGE = 2, /**< edge i: UP i, DOWN i, the WAN pairs (i, t) and (s, i) */
};

/** "job", "island" or "edge". */
const char *isth_auth_site_name(enum isth_auth_site s);

/** Tag implementations; both compute the same AES-256-GMAC. */
enum isth_auth_impl {
	ISTH_AUTH_OPENSSL = 0, /**< OpenSSL EVP (libcrypto) */
	ISTH_AUTH_IPSEC_MB = 1, /**< intel-ipsec-mb job API (bursts) */
};

/** Outcome of a verification; names are counter names. */
enum isth_auth_status {
	ISTH_AUTH_OK = 0,
	ISTH_AUTH_E_FORMAT, /**< "auth_format": not v2, no AUTH, trailer_len != 16, short */
	ISTH_AUTH_E_KEY, /**< "auth_key": direction or owner has no key (here) */
	ISTH_AUTH_E_EPOCH, /**< "auth_epoch": epoch byte is not epoch_of(round) or not loaded */
	ISTH_AUTH_E_TAG, /**< "auth_tag": the tag does not verify */
	ISTH_AUTH_E_REPLAY, /**< "auth_replay": seq already accepted */
	ISTH_AUTH_E_STALE, /**< "auth_stale": seq older than the replay window */
	ISTH_AUTH_E_AHEAD, /**< "auth_ahead": seq ahead of the receiver's clock by more than the slack */
	ISTH_AUTH_STATUS_MAX
};

/** Stable counter name of a status ("auth_tag", ...). */
const char *isth_auth_status_name(enum isth_auth_status s);
/** "openssl" or "ipsec-mb". */
const char *isth_auth_impl_name(enum isth_auth_impl impl);

/* ---- keys ------------------------------------------------------------ */

struct isth_auth;

/** What isth_auth_create() needs. */
struct isth_auth_conf {
	const char *key_file; /**< path; format in doc/protocol.md */
	uint32_t job; /**< the file's `job` line must name it */
	uint32_t n_islands; /**< 1..64: owners for which keys are derived */
};

/**
 * Load a key file and derive every direction key of every epoch in it.
 *
 * The file must be a regular file owned by the caller's effective user or
 * root with no group/other permission bits; it is checked on the open
 * descriptor before anything is read. On error a message naming the file
 * (and line, for parse errors) is written to @p err; it never contains
 * key bytes.
 *
 * @return 0, -EACCES (mode or owner), -EINVAL (parse error, job mismatch,
 *         bad conf), -ENOMEM, or the -errno of open/read.
 */
int isth_auth_create(
	const struct isth_auth_conf *conf, struct isth_auth **out, char *err, size_t errlen);

/** Free a handle (NULL is fine); key material is wiped. */
void isth_auth_free(struct isth_auth *a);

/** Job the handle's keys belong to. */
uint32_t isth_auth_job(const struct isth_auth *a);

/**
 * What the handle's file was written for: the job file (every key) or
 * one site's file; @p id is set to the site's island (0 for the job).
 */
enum isth_auth_site isth_auth_site(const struct isth_auth *a, unsigned int *id);

/**
 * Whether the handle may seal and verify with K(@p dir, @p owner) in
 * every epoch it holds (a job file: always; a site file: only its own).
 */
bool isth_auth_has_key(const struct isth_auth *a, enum isth_auth_dir dir, unsigned int owner);

/**
 * Whether the handle holds K(e, WAN_PAIR, @p sender, @p receiver) in every
 * epoch (a job file: for every pair of its islands, s != t).
 */
bool isth_auth_has_pair(const struct isth_auth *a, unsigned int sender, unsigned int receiver);

/**
 * Check that a process that is site (@p want, @p id) may use @p a: the
 * job file, or the site file of exactly that site (an edge's with the WAN
 * key of every island of the job). Else a message naming @p path (and
 * both sites, or the missing key) goes to @p err.
 * @return 0 or -EINVAL
 */
int isth_auth_check_site(const struct isth_auth *a, enum isth_auth_site want, unsigned int id,
	const char *path, char *err, size_t errlen);

/** Number of epochs loaded (1..ISTH_AUTH_MAX_EPOCHS). */
unsigned int isth_auth_n_epochs(const struct isth_auth *a);

/**
 * Epoch @p i (in file order, 0-based): its id and first round.
 * @return 0 or -EINVAL
 */
int isth_auth_epoch_info(
	const struct isth_auth *a, unsigned int i, uint8_t *epoch, uint32_t *start_round);

/**
 * The epoch id that tags round @p round: the loaded epoch with the largest
 * start round <= @p round.
 * @return the epoch id (0..255) or -ENOKEY if every epoch starts later.
 */
int isth_auth_epoch_of(const struct isth_auth *a, uint32_t round);

/**
 * The derived direction key K(epoch @p i (file order), @p dir, @p owner),
 * for a driver that loads keys into a device that computes tags
 * (doc/fpga-interface.md 3.8). The caller wipes @p out after use.
 * @return 0, -EINVAL, or -ENOKEY (a site file that does not hold it)
 */
int isth_auth_epoch_key(const struct isth_auth *a, unsigned int i, enum isth_auth_dir dir,
	unsigned int owner, uint8_t out[ISTH_AUTH_KEY_SIZE]);

/* ---- tag engines ----------------------------------------------------- */

struct isth_auth_engine;

/**
 * Per-thread tag engine over the keys of @p a (which must outlive it).
 * @return 0, -ENOMEM, or -ENOTSUP (the implementation cannot run here).
 */
int isth_auth_engine_create(
	const struct isth_auth *a, enum isth_auth_impl impl, struct isth_auth_engine **out);
void isth_auth_engine_free(struct isth_auth_engine *e);
enum isth_auth_impl isth_auth_engine_impl(const struct isth_auth_engine *e);

/**
 * Seal a message in place: @p len bytes of header (magic must be set) and
 * body. Sets version 2, the AUTH flag, trailer_len 16 and the epoch byte
 * (epoch_of(round)), then appends the tag computed with the key of
 * (epoch, @p dir, @p owner).
 *
 * The caller keeps the IV rule (doc/protocol.md, "IV"): never two
 * different messages under one key with equal (type, sender, flags, seq).
 *
 * @return the sealed length (@p len + 16), -ENOSPC (@p cap too small),
 *         -EINVAL (not an isthmus header, bad dir or owner), -ENOKEY
 *         (no epoch for the round), -EPERM (the handle's site file does
 *         not hold the key of @p dir and @p owner: another site's)
 */
int isth_auth_seal(struct isth_auth_engine *e, enum isth_auth_dir dir, unsigned int owner,
	uint8_t *msg, size_t len, size_t cap);

/**
 * Verify a sealed message of @p len bytes (tag included) with the key of
 * (epoch byte, @p dir, @p owner). Constant-time tag comparison. Does not
 * touch any replay window.
 */
enum isth_auth_status isth_auth_verify(struct isth_auth_engine *e, enum isth_auth_dir dir,
	unsigned int owner, const uint8_t *msg, size_t len);

/** One message of a burst. */
struct isth_auth_op {
	uint8_t *msg; /**< message; seal writes version, flags, epoch, tag */
	uint32_t len; /**< verify: sealed length; seal: in unsealed, out sealed */
	uint32_t cap; /**< seal: bytes available at msg */
	uint8_t dir; /**< enum isth_auth_dir */
	uint8_t owner; /**< owner island of the key (WAN_PAIR: the sending edge) */
	int16_t status; /**< out: verify: enum isth_auth_status; seal: 0 or -errno */
	/**
	 * dir ISTH_AUTH_WAN_PAIR only: seal: the receivers (bit t = a tag
	 * under K(e, WAN_PAIR, owner, t)), 1..ISTH_AUTH_MAX_TAGS bits, not
	 * the owner's; verify: exactly one bit, the receiver's own (whose
	 * tag alone is checked). Ignored for the other directions.
	 */
	uint64_t peers;
};

/**
 * Seal a WAN message in place with a tag list (doc/protocol.md, "WAN tag
 * list"): @p len bytes of header and body from edge @p sender, for the
 * receivers of @p receivers (1..ISTH_AUTH_MAX_TAGS bits, not @p sender).
 * Sets version 2, AUTH, trailer_len 8 + 16k and the epoch byte, then
 * appends the bitmap (u64 BE) and, per receiver t in ascending order, the
 * AES-256-GMAC under K(epoch, WAN_PAIR, @p sender, t) of the header and
 * body (the bitmap is not covered: see the protocol). A message already
 * sealed must be given without its trailer.
 * @return the sealed length, -ENOSPC, -EINVAL (bad header, no receiver,
 *         more than 15, @p sender among them, an id >= the job's
 *         islands), -ENOKEY (no epoch for the round), -EPERM (the site
 *         file lacks one of the pair keys)
 */
int isth_auth_seal_list(struct isth_auth_engine *e, unsigned int sender, uint64_t receivers,
	uint8_t *msg, size_t len, size_t cap);

/**
 * Verify receiver @p receiver's own tag in a tag-list message of @p len
 * bytes (trailer included) from edge @p sender, with K(epoch byte,
 * WAN_PAIR, @p sender, @p receiver); the other tags are not looked at.
 * E_FORMAT: trailer_len not 8 + 16k with k the bitmap's bits (1..15);
 * E_KEY: the receiver's bit is not set (the frame is not for it) or the
 * handle lacks the key; E_EPOCH, E_TAG as isth_auth_verify().
 */
enum isth_auth_status isth_auth_verify_list(struct isth_auth_engine *e, unsigned int sender,
	unsigned int receiver, const uint8_t *msg, size_t len);

/**
 * Verify @p n messages. Each op's status is set; @return how many verified.
 * The ipsec-mb engine submits them as bursts of up to 32 jobs.
 */
unsigned int
isth_auth_verify_burst(struct isth_auth_engine *e, struct isth_auth_op *ops, unsigned int n);

/** Seal @p n messages (see isth_auth_seal(), and isth_auth_seal_list() for
 * dir ISTH_AUTH_WAN_PAIR). @return how many were sealed. */
unsigned int
isth_auth_seal_burst(struct isth_auth_engine *e, struct isth_auth_op *ops, unsigned int n);

/* ---- primitives (tests, test vectors, tools) ------------------------- */

/**
 * One AES-256-GMAC tag (AES-256-GCM, empty plaintext, @p aad as AAD,
 * 96-bit IV, 128-bit tag) with a throw-away context of @p impl.
 * Allocates; not for the data path.
 * @return 0, -ENOMEM, -ENOTSUP, -EIO
 */
int isth_auth_gmac_raw(enum isth_auth_impl impl, const uint8_t key[ISTH_AUTH_KEY_SIZE],
	const uint8_t iv[ISTH_AUTH_IV_SIZE], const void *aad, size_t len,
	uint8_t tag[ISTH_AUTH_TAG_SIZE]);

/** HKDF-SHA256 (RFC 5869) through OpenSSL. @return 0 or -EIO */
int isth_auth_hkdf(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
	const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len);

/* ---- key files as data (isthmus-keys) -------------------------------- */

/** One epoch of a key file as read: a master key or a site's keys. */
struct isth_auth_file_epoch {
	uint8_t id;
	uint32_t start; /**< first round */
	uint8_t master[ISTH_AUTH_KEY_SIZE]; /**< job file only */
	uint64_t have[3]; /**< site file: [dir - 1] bit o = key of owner o held */
	uint8_t key[3][ISTH_AUTH_MAX_ISLANDS][ISTH_AUTH_KEY_SIZE]; /**< site file */
	/** An edge's file: bit t of pair_out = K(e, WAN_PAIR, site, t) held
	 * (sealing), bit s of pair_in = K(e, WAN_PAIR, s, site) (verifying). */
	uint64_t pair_out, pair_in;
	uint8_t key_out[ISTH_AUTH_MAX_ISLANDS][ISTH_AUTH_KEY_SIZE];
	uint8_t key_in[ISTH_AUTH_MAX_ISLANDS][ISTH_AUTH_KEY_SIZE];
};

/** A key file's content (large: allocate it; wipe with _wipe()). */
struct isth_auth_file {
	enum isth_auth_site site;
	unsigned int site_id; /**< island of a site file; 0 for the job */
	uint32_t job;
	unsigned int n_epochs; /**< 1..ISTH_AUTH_MAX_EPOCHS, file order */
	struct isth_auth_file_epoch ep[ISTH_AUTH_MAX_EPOCHS];
};

/**
 * Read and check a key file as isth_auth_create() does (mode, owner,
 * grammar; errors name file:line and never key bytes), without deriving.
 * @return 0, -EACCES, -EINVAL, -ENOMEM, -EFBIG or an open/read -errno
 */
int isth_auth_file_read(const char *path, struct isth_auth_file *f, char *err, size_t errlen);

/** Wipe @p f (key material). */
void isth_auth_file_wipe(struct isth_auth_file *f);

/**
 * The direction key K(epoch, dir, owner) of @p job from master key
 * @p master (doc/protocol.md, "Keys").
 * @return 0, -EINVAL, -EIO
 */
int isth_auth_derive(const uint8_t master[ISTH_AUTH_KEY_SIZE], uint32_t job, uint8_t epoch,
	enum isth_auth_dir dir, unsigned int owner, uint8_t out[ISTH_AUTH_KEY_SIZE]);

/**
 * The pairwise WAN key K(epoch, WAN_PAIR, @p sender, @p receiver) of
 * @p job from master key @p master: HKDF-SHA256 as isth_auth_derive()
 * with info "isthmus/v2 gmac" || job (u32 BE) || epoch || 4 || sender ||
 * receiver.
 * @return 0, -EINVAL (an island id >= 64, or sender == receiver), -EIO
 */
int isth_auth_derive_pair(const uint8_t master[ISTH_AUTH_KEY_SIZE], uint32_t job, uint8_t epoch,
	unsigned int sender, unsigned int receiver, uint8_t out[ISTH_AUTH_KEY_SIZE]);

/** The 12-byte IV of the message header at @p msg (40 bytes). */
static inline void
isth_auth_iv(const uint8_t *msg, uint8_t iv[ISTH_AUTH_IV_SIZE])
{
	iv[0] = msg[ISTH_WIRE_OFF_TYPE];
	iv[1] = isth_wire_get_hdr_sender(msg);
	iv[2] = msg[ISTH_WIRE_OFF_FLAGS]; /* flags, big-endian */
	iv[3] = msg[ISTH_WIRE_OFF_FLAGS + 1];
	for (int i = 0; i < 8; i++)
		iv[4 + i] = msg[ISTH_WIRE_OFF_SEQ + i]; /* seq, big-endian */
}

/* ---- replay window (auth_replay.c) ---------------------------------- */

/**
 * Sliding replay window over one stream's seqs (doc/protocol.md, "Replay
 * window"): the highest seq accepted and a bitmap of the n_bits seqs up to
 * it, plus the newest round accepted and the first round of the stream's
 * current incarnation. One per (key epoch, direction, sender, type, AGG
 * stream); n_bits must cover two rounds of the stream. The caller provides
 * the bitmap storage (n_bits / 64 words), so a receiver sizes all windows
 * at start-up. Single writer.
 *
 * Two steps, so that no packet moves the window unless it is accepted:
 * isth_auth_replay_check() right after the tag verified (no change), and
 * isth_auth_replay_commit() once every later check that can refuse the
 * packet (round, chunk, shape, source, admission) has passed.
 *
 * A new incarnation of the stream (a sender restarted after its clock
 * stepped back: its seqs start below the window) is accepted when its
 * packet is older than the window but carries a round newer than every
 * round accepted; the window then restarts at that seq, and rounds before
 * it are refused from then on (they belong to the stream that ended). A
 * replayed packet cannot do that: it was accepted before, so its round is
 * at most the newest round accepted.
 */
struct isth_auth_replay {
	uint64_t top; /**< highest seq accepted (valid once started) */
	uint64_t *bits; /**< bit (seq mod n_bits) set = seq accepted */
	uint32_t n_bits; /**< power of two, >= 64 */
	bool started; /**< false until the first seq is accepted */
	uint32_t round_hi; /**< newest round accepted (valid once started) */
	uint32_t round_lo; /**< rounds below it are refused (E_STALE): an ended incarnation's */
};

/** Words of storage a window of @p n_bits needs. */
static inline size_t
isth_auth_replay_words(uint32_t n_bits)
{
	return n_bits / 64u;
}

/**
 * Initialise an empty window over @p words (isth_auth_replay_words()
 * elements). @return 0 or -EINVAL (n_bits not a power of two >= 64).
 */
int isth_auth_replay_init(struct isth_auth_replay *w, uint64_t *words, uint32_t n_bits);

/**
 * Would (@p seq, @p round) be accepted? OK, E_REPLAY (seq accepted
 * before) or E_STALE (older than the window and not a new incarnation, or
 * a round of an ended incarnation). Changes nothing: call it right after
 * the tag verified, and commit only once the packet is accepted.
 */
enum isth_auth_status
isth_auth_replay_check(const struct isth_auth_replay *w, uint64_t seq, uint32_t round);

/**
 * Check (@p seq, @p round) again (a copy earlier in the same burst may
 * have been committed since) and, if acceptable, record it: slide the
 * window when it is the new highest seq, or restart it at @p seq for a
 * new incarnation. Call only after the tag verified and every other check
 * that can refuse the packet passed.
 */
enum isth_auth_status
isth_auth_replay_commit(struct isth_auth_replay *w, uint64_t seq, uint32_t round);

/**
 * Default slack of isth_auth_seq_ahead(), ns: 1 s (doc/protocol.md,
 * "Replay window": a genuine seq never runs ahead of its sender's clock,
 * and PTP-synchronised hosts differ by microseconds, NTP ones by
 * milliseconds; 1 s leaves room for a host whose clock is being slewed
 * back into sync, and still bounds how far one packet can push a seq).
 */
#define ISTH_AUTH_SEQ_AHEAD_NS_DEFAULT 1000000000ull

/**
 * True if @p seq is further ahead of the receiver's CLOCK_REALTIME
 * @p now_ns than @p slack_ns: a stream's seqs start at its sender's clock
 * and advance by one per message, so a genuine sender's seq is never
 * ahead of its own clock (E_AHEAD).
 */
static inline bool
isth_auth_seq_ahead(uint64_t seq, uint64_t now_ns, uint64_t slack_ns)
{
	return seq > now_ns && seq - now_ns > slack_ns;
}

#ifdef __cplusplus
}
#endif

#endif /* ISTH_AUTH_H */
