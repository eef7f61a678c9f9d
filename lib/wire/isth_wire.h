/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_WIRE_H
#define ISTH_WIRE_H

/**
 * @file
 * The isthmus wire protocol: parse, validate and build packets.
 *
 * Pure functions over byte buffers: no EAL, no allocation, no global state,
 * safe to call from any thread. The format is specified in doc/protocol.md;
 * this header and that document must agree.
 *
 * Every header field, NACK range and ROUND body field is big-endian
 * (network byte order) on the wire; the parsed views below are in host
 * byte order. DATA and AGG *elements* are little-endian, the order of every
 * accelerator and host that produces them, so that edges and FPGAs sum them
 * in place without swapping (doc/protocol.md, "Byte order").
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Default UDP port (configurable everywhere a port is used). Not 4791:
 * that is RoCEv2, which Wireshark and NICs already claim. */
#define ISTH_WIRE_PORT 9471u
/** "IS" */
#define ISTH_WIRE_MAGIC 0x4953u
#define ISTH_WIRE_VERSION 1u
/** Version 2: authenticated (doc/protocol.md, "Authenticated format (v2)"):
 * AUTH on every packet, a 16-byte tag as trailer, byte 21 the key epoch. */
#define ISTH_WIRE_VERSION_AUTH 2u
/** The version 2 trailer: an AES-256-GMAC tag (lib/auth computes it). */
#define ISTH_WIRE_TAG_SIZE 16u
/** Byte offsets of the header's fields in a message (doc/protocol.md,
 * "Header"); the accessors below and the parser use them. */
enum isth_wire_off {
	ISTH_WIRE_OFF_MAGIC = 0,
	ISTH_WIRE_OFF_VERSION = 2,
	ISTH_WIRE_OFF_TYPE = 3,
	ISTH_WIRE_OFF_FLAGS = 4,
	ISTH_WIRE_OFF_DTYPE = 6,
	ISTH_WIRE_OFF_TRAILER = 7,
	ISTH_WIRE_OFF_JOB = 8,
	ISTH_WIRE_OFF_ROUND = 12,
	ISTH_WIRE_OFF_CHUNK = 16,
	ISTH_WIRE_OFF_SENDER = 20,
	ISTH_WIRE_OFF_RESERVED = 21, /**< version 1: reserved, 0 */
	ISTH_WIRE_OFF_EPOCH = 21, /**< version 2: key epoch */
	ISTH_WIRE_OFF_COUNT = 22,
	ISTH_WIRE_OFF_SEQ = 24,
	ISTH_WIRE_OFF_BITMAP = 32,
};

/** Size of the fixed isthmus header in bytes. */
#define ISTH_WIRE_HDR_SIZE 40u
/** Contributor bitmaps are 64 bits: at most 64 islands. */
#define ISTH_WIRE_MAX_ISLANDS 64u

#define ISTH_WIRE_ETH_HDR_SIZE 14u
#define ISTH_WIRE_VLAN_TAG_SIZE 4u
#define ISTH_WIRE_IPV4_MIN_HDR_SIZE 20u
#define ISTH_WIRE_UDP_HDR_SIZE 8u
/** Ethernet + IPv4 (no options) + UDP + isthmus header. */
#define ISTH_WIRE_FRAME_OVERHEAD \
	(ISTH_WIRE_ETH_HDR_SIZE + ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE + \
		ISTH_WIRE_HDR_SIZE)

/** Packet types. */
enum isth_wire_type {
	ISTH_WIRE_DATA = 1, /**< an island's contribution to one chunk */
	ISTH_WIRE_AGG = 2, /**< (partial) aggregate of one chunk, to an island */
	ISTH_WIRE_NACK = 3, /**< request to resend sequence or chunk ranges */
	ISTH_WIRE_GONE = 4, /**< the ranges of a NACK that cannot be served */
	ISTH_WIRE_ROUND = 5, /**< controller to island: a round has begun */
	/** edge to edge in a tree round (doc/protocol.md, "Tree rounds"): a
	 * partial sum of one chunk, its contributors in the bitmap; up the
	 * chunk's tree to the parent edge, or (ISTH_WIRE_F_DOWN) the root's
	 * result down to a child edge */
	ISTH_WIRE_PARTIAL = 6,
};
#define ISTH_WIRE_TYPE_MAX 6

/** Element types of DATA and AGG payloads. */
enum isth_wire_dtype {
	ISTH_WIRE_DTYPE_NONE = 0, /**< packets without elements (NACK, GONE, ROUND) */
	ISTH_WIRE_DTYPE_FP32 = 1, /**< IEEE 754 binary32 */
	ISTH_WIRE_DTYPE_BF16 = 2, /**< bfloat16: the top 16 bits of a binary32 */
	ISTH_WIRE_DTYPE_INT32 = 3, /**< two's complement, sums wrap modulo 2^32 */
};
#define ISTH_WIRE_DTYPE_MAX 3

/** Header flags. Unknown bits are rejected (ISTH_WIRE_E_FLAGS). */
enum isth_wire_flag {
	ISTH_WIRE_F_PARTIAL = 1u << 0, /**< AGG: bitmap is not the expected set */
	ISTH_WIRE_F_RESENT = 1u << 1, /**< AGG/DATA: a retransmission */
	ISTH_WIRE_F_LAST = 1u << 2, /**< DATA/AGG: last chunk of the stream */
	ISTH_WIRE_F_CHUNKS = 1u << 3, /**< NACK/GONE: ranges are chunk ids, not seqs */
	ISTH_WIRE_F_AUTH = 1u << 4, /**< a trailer_len-byte auth trailer follows */
	ISTH_WIRE_F_DOWN = 1u << 5, /**< PARTIAL: the tree's result, parent to child */
	/** NACK by chunk (edge to edge): a copy of the NACK event the chunk
	 * field tags, to be served only for chunks no NACK of that event
	 * has named (doc/protocol.md, "NACK echoes") */
	ISTH_WIRE_F_ECHO = 1u << 6,
};
#define ISTH_WIRE_F_ALL 0x007fu
/**
 * Flag bits 12..15 are not flags but the AGG stream field
 * (doc/protocol.md, "AGG streams"): AGG: the stream the AGG is numbered
 * in; NACK/GONE by seq: the stream whose seqs the ranges name; ROUND: the
 * highest stream index the edge sends (streams - 1). 0 on every other
 * message, so with one stream the wire is that of a single AGG stream.
 * The parser moves it to isth_wire_hdr.stream; the builder writes it from
 * there.
 */
#define ISTH_WIRE_STREAM_SHIFT 12u
#define ISTH_WIRE_STREAM_MASK 0xf000u
/** Most AGG streams an edge sends to one island (the field is 4 bits). */
#define ISTH_WIRE_MAX_STREAMS 16u

/**
 * Why a packet was refused. ISTH_WIRE_OK is zero; every other value names
 * the first check that failed, in the order the parser runs them.
 */
enum isth_wire_reason {
	ISTH_WIRE_OK = 0,
	ISTH_WIRE_E_ETH_TRUNC, /**< shorter than an Ethernet header */
	ISTH_WIRE_E_VLAN_TRUNC, /**< 802.1Q tag cut short */
	ISTH_WIRE_E_ETHERTYPE, /**< not IPv4 (after at most one VLAN tag) */
	ISTH_WIRE_E_IP_TRUNC, /**< shorter than the IPv4 header */
	ISTH_WIRE_E_IP_VERSION, /**< IP version is not 4 */
	ISTH_WIRE_E_IP_IHL, /**< IHL < 5 or past the buffer */
	ISTH_WIRE_E_IP_TOTLEN, /**< total length < IHL or past the buffer */
	ISTH_WIRE_E_IP_CSUM, /**< IPv4 header checksum wrong */
	ISTH_WIRE_E_IP_FRAG, /**< a fragment (MF set or offset != 0) */
	ISTH_WIRE_E_IP_PROTO, /**< not UDP */
	ISTH_WIRE_E_UDP_TRUNC, /**< shorter than a UDP header */
	ISTH_WIRE_E_UDP_LEN, /**< UDP length disagrees with IPv4 */
	ISTH_WIRE_E_UDP_PORT, /**< destination port is not isthmus's */
	ISTH_WIRE_E_UDP_CSUM, /**< non-zero UDP checksum is wrong */
	ISTH_WIRE_E_HDR_TRUNC, /**< shorter than the isthmus header */
	ISTH_WIRE_E_MAGIC, /**< magic is not "IS" */
	ISTH_WIRE_E_VERSION, /**< not the version the limits ask for (1, or 2 with auth) */
	ISTH_WIRE_E_TYPE, /**< unknown packet type */
	ISTH_WIRE_E_FLAGS, /**< unknown flag, or flag not valid for type */
	ISTH_WIRE_E_DTYPE, /**< element type unknown or wrong for type */
	ISTH_WIRE_E_ISLAND, /**< sender island >= configured islands */
	ISTH_WIRE_E_BITMAP, /**< bitmap names islands >= configured */
	ISTH_WIRE_E_COUNT, /**< element or range count above the limit */
	ISTH_WIRE_E_TRAILER, /**< trailer inconsistent with AUTH, longer than what follows
			      * the header, or (version 2) AUTH not set or not 16 bytes */
	ISTH_WIRE_E_LENGTH, /**< payload size disagrees with count and type */
	ISTH_WIRE_E_RANGE, /**< a NACK/GONE range with first > last */
	ISTH_WIRE_E_RESERVED, /**< a reserved field is not zero */
	ISTH_WIRE_E_ROUND, /**< ROUND body inconsistent (deadline < start) */
	ISTH_WIRE_E_STREAM, /**< stream field >= the streams the limits know */
	ISTH_WIRE_REASON_MAX
};

/** Limits the parser enforces; they come from configuration. */
struct isth_wire_limits {
	uint32_t n_islands; /**< islands in the job, 1..64 */
	uint16_t max_elems; /**< max elements per DATA/AGG packet */
	uint16_t max_ranges; /**< max ranges per NACK/GONE packet */
	uint16_t udp_port; /**< destination port to accept */
	bool check_udp_csum; /**< verify non-zero UDP checksums */
	/** AGG streams the receiver knows, 1..ISTH_WIRE_MAX_STREAMS (0 is
	 * taken as 1): a stream field at or above it is ISTH_WIRE_E_STREAM.
	 * isth_wire_limits_init() sets 1. */
	uint8_t n_streams;
	/** The link speaks version 2: the parser accepts only version 2,
	 * with AUTH and a 16-byte trailer (or a WAN tag list, 8 + 16k bytes
	 * with k the bits of its leading receiver bitmap: doc/protocol.md,
	 * "WAN tag list"), and reads byte 21 as the key
	 * epoch; false: version 1 only (byte 21 reserved, must be 0). The
	 * parser checks the format only; lib/auth verifies the tag. */
	bool auth;
};

/**
 * The fixed isthmus header, in host byte order.
 *
 * Field meaning per type (doc/protocol.md has the table):
 * - sender: DATA: contributing island; AGG: island the aggregate is for;
 *   NACK: island asking; GONE/ROUND: island the edge serves.
 * - seq: DATA: per-sender stream sequence; AGG: the sequence of its AGG
 *   stream (per island and stream field; what NACKs name); NACK/GONE/ROUND:
 *   0 or the sender's choice.
 * - bitmap: DATA: the sender's own bit; AGG: contributors summed in;
 *   ROUND: contributors the island should expect this round.
 * - count: DATA/AGG: elements; NACK/GONE: ranges; ROUND: 0.
 */
struct isth_wire_hdr {
	/** Parser: the version read (1 or 2). Builder: 0 or 1 writes
	 * version 1 as given; 2 writes version 2, sets ISTH_WIRE_F_AUTH,
	 * trailer_len ISTH_WIRE_TAG_SIZE and the epoch byte. */
	uint8_t version;
	uint8_t epoch; /**< version 2: key epoch (byte 21); version 1: 0 */
	uint8_t type; /**< enum isth_wire_type */
	uint8_t dtype; /**< enum isth_wire_dtype */
	uint16_t flags; /**< enum isth_wire_flag bits (never the stream field) */
	/** The AGG stream field (flag bits 12..15, ISTH_WIRE_STREAM_SHIFT):
	 * AGG, NACK/GONE by seq: stream index; ROUND: streams - 1; else 0. */
	uint8_t stream;
	uint8_t trailer_len; /**< bytes of trailer after the payload */
	uint8_t sender; /**< island id, < n_islands */
	uint16_t count; /**< see above */
	uint32_t job;
	uint32_t round;
	uint32_t chunk; /**< chunk ("weight") id */
	uint64_t seq;
	uint64_t bitmap; /**< bit i = island i */
};

/** One NACK/GONE range, inclusive on both ends. */
struct isth_wire_range {
	uint64_t first;
	uint64_t last;
};
#define ISTH_WIRE_RANGE_SIZE 16u

/** The body of a ROUND packet (a fixed 40 bytes on the wire). */
struct isth_wire_round {
	uint64_t start_ns; /**< round start, ns since the Unix epoch */
	uint64_t deadline_ns; /**< AGGs for this round are due by then */
	uint64_t period_ns; /**< T, the round period */
	uint64_t clique; /**< members of the island's clique, itself included */
	uint32_t n_chunks; /**< chunks in each contribution this round */
	uint32_t chunk_elems; /**< elements per full chunk */
};
#define ISTH_WIRE_ROUND_SIZE 40u

/** Addresses of a frame, host byte order for IPs and ports. */
struct isth_wire_addr {
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint16_t vlan; /**< 0: untagged; else the 12-bit VLAN id */
	uint32_t src_ip;
	uint32_t dst_ip;
	uint16_t src_port;
	uint16_t dst_port;
	uint8_t ttl; /**< 0 means 64 */
	uint8_t dscp;
};

/** A parsed and validated packet. Pointers point into the caller's buffer. */
struct isth_wire_pkt {
	struct isth_wire_addr addr; /**< frames only; zero for bare messages */
	struct isth_wire_hdr hdr;
	const uint8_t *msg; /**< start of the isthmus header */
	const uint8_t *payload; /**< after the header */
	size_t payload_size; /**< bytes, trailer excluded */
	const uint8_t *trailer; /**< NULL when trailer_len == 0 */
	size_t msg_size; /**< header + payload + trailer */
};

/** Name of a reason, e.g. "ip_csum"; stable, used in counters and logs. */
const char *isth_wire_reason_name(enum isth_wire_reason r);
/** Human sentence for a reason. */
const char *isth_wire_reason_str(enum isth_wire_reason r);
/** Name of a packet type ("data", "agg", ...) or "unknown". */
const char *isth_wire_type_name(unsigned int type);
/** Name of an element type ("fp32", "bf16", "int32", "none") or "unknown". */
const char *isth_wire_dtype_name(unsigned int dtype);
/** Size of one element in bytes, 0 for ISTH_WIRE_DTYPE_NONE or unknown. */
unsigned int isth_wire_dtype_size(unsigned int dtype);

/**
 * Default limits for an MTU: max_elems so that a fp32 DATA packet with no
 * IPv4 options and no VLAN tag fits in @p mtu bytes of IP packet.
 *
 * @return 0, or -EINVAL if n_islands is not 1..64 or mtu is too small.
 */
int isth_wire_limits_init(struct isth_wire_limits *lim, uint32_t n_islands, unsigned int mtu);

/**
 * isth_wire_limits_init() for a link speaking version 2 when @p auth is
 * true: sets lim->auth and leaves room for the 16-byte tag in max_elems
 * and max_ranges (354 elements, 88 ranges at MTU 1500). With @p auth
 * false, exactly isth_wire_limits_init().
 */
int isth_wire_limits_init_auth(
	struct isth_wire_limits *lim, uint32_t n_islands, unsigned int mtu, bool auth);

/**
 * Parse and validate an isthmus message (the UDP payload), as a socket
 * hands it to the island side.
 *
 * @param buf  the bytes; need not be aligned
 * @param len  bytes in @p buf
 * @param lim  limits to enforce
 * @param out  filled on success (hdr, msg, payload, trailer); untouched
 *             fields of addr are zero
 * @return ISTH_WIRE_OK or the reason for refusal
 */
enum isth_wire_reason isth_wire_parse_msg(const uint8_t *buf, size_t len,
	const struct isth_wire_limits *lim, struct isth_wire_pkt *out);

/**
 * Parse and validate a whole Ethernet frame: Ethernet, at most one 802.1Q
 * tag, IPv4 (header checksum, options skipped, no fragments), UDP (length,
 * port, optional checksum), then the message as isth_wire_parse_msg().
 * Bytes after the IPv4 total length (Ethernet padding) are ignored.
 */
enum isth_wire_reason isth_wire_parse_frame(const uint8_t *buf, size_t len,
	const struct isth_wire_limits *lim, struct isth_wire_pkt *out);

/**
 * Read range @p i of a parsed NACK/GONE packet. The parser has already
 * checked that all ranges are present and first <= last.
 */
void
isth_wire_get_range(const struct isth_wire_pkt *pkt, unsigned int i, struct isth_wire_range *r);

/** Decode the body of a parsed ROUND packet. */
void isth_wire_get_round(const struct isth_wire_pkt *pkt, struct isth_wire_round *r);

/**
 * Write a message header at @p buf (40 bytes). With h->version 2 the
 * header is version 2: AUTH set, trailer_len 16, byte 21 = h->epoch.
 * h->stream goes into flag bits 12..15.
 * @return ISTH_WIRE_HDR_SIZE, or -ENOSPC if @p cap is too small, or
 *         -EINVAL if h->stream >= ISTH_WIRE_MAX_STREAMS.
 */
int isth_wire_put_hdr(uint8_t *buf, size_t cap, const struct isth_wire_hdr *h);

/**
 * Build a whole message: header, @p payload_size bytes of body copied from
 * @p payload (little-endian elements, or ranges / ROUND body already encoded
 * with isth_wire_put_ranges() / isth_wire_put_round()), then
 * h->trailer_len bytes of @p trailer.
 *
 * Version 2 (h->version 2): the trailer is the 16-byte tag. With
 * @p trailer NULL the message is written without it, ready for
 * isth_auth_seal() to append the tag (@p cap must still leave 16 bytes
 * for it), and the return value excludes it.
 *
 * @return bytes written, or -ENOSPC, or -EINVAL (payload size inconsistent
 *         with type and count, or h->stream >= ISTH_WIRE_MAX_STREAMS).
 */
int isth_wire_build_msg(uint8_t *buf, size_t cap, const struct isth_wire_hdr *h,
	const void *payload, size_t payload_size, const void *trailer);

/**
 * Wrap a message already written at @p buf + isth_wire_frame_hdr_size()
 * into Ethernet/[VLAN]/IPv4/UDP headers written at @p buf. Computes the
 * IPv4 header checksum; the UDP checksum is left 0 (allowed for IPv4).
 *
 * @return total frame bytes, or -ENOSPC / -EINVAL
 */
int
isth_wire_put_frame_hdr(uint8_t *buf, size_t cap, const struct isth_wire_addr *a, size_t msg_size);

/** Bytes of Ethernet(+VLAN)+IPv4+UDP headers that put_frame_hdr writes. */
size_t isth_wire_frame_hdr_size(const struct isth_wire_addr *a);

/** Encode @p n ranges into @p buf in wire order. @return bytes or -ENOSPC. */
int isth_wire_put_ranges(uint8_t *buf, size_t cap, const struct isth_wire_range *r, unsigned int n);

/** Encode a ROUND body into @p buf. @return 40 or -ENOSPC. */
int isth_wire_put_round(uint8_t *buf, size_t cap, const struct isth_wire_round *r);

/** RFC 1071 checksum over @p len bytes (folded, complemented). */
uint16_t isth_wire_cksum(const void *buf, size_t len);

/**
 * Ones'-complement sum of @p len bytes (at most 65535) as 16-bit
 * big-endian words, a last odd byte padded with zero (RFC 1071), folded
 * to 16 bits, not complemented: what a payload adds to a UDP checksum.
 * AVX-512 (VNNI) or AVX2 when the CPU has them (7 to 10 times a 16-bit
 * loop's speed on 1 KiB: doc/notes/performance-log.md section 6, "Sixth pass").
 */
uint16_t isth_wire_sum(const void *buf, size_t len);

/** The kernel isth_wire_sum() uses: "scalar", "avx2", "avx512" or
 * "avx512vnni". */
const char *isth_wire_sum_kernel(void);

/**
 * Use kernel @p name for isth_wire_sum() (NULL: the best this CPU has, the
 * default). For tests and benchmarks, before any other thread sums.
 * @return 0, -ENOTSUP (the CPU lacks it) or -EINVAL (no such kernel).
 */
int isth_wire_sum_use(const char *name);

/**
 * Write the UDP checksum of the Ethernet/[VLAN]/IPv4/UDP frame of @p len
 * bytes at @p buf (IPv4 without options, as isth_wire_put_frame_hdr()
 * writes it), over the pseudo-header and the UDP length's bytes.
 * @return 0, or -EINVAL if the frame is not such a frame.
 */
int isth_wire_put_udp_cksum(uint8_t *buf, size_t len);

/*
 * Field accessors on a message (data at the isthmus header, already
 * validated or built here) for the hot paths that must not parse it again:
 * the edge numbers AGGs, the fan-out groups DATA by round, the resend ring
 * marks repairs. @p msg must hold a whole header; fields are big-endian.
 */
static inline uint64_t
isth_wire_get_be_(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void
isth_wire_put_be_(uint8_t *p, unsigned int n, uint64_t v)
{
	for (unsigned int i = n; i-- > 0;) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

/** Rewrite the seq field of the message at @p msg (the edge numbers AGGs
 * as it sends them). */
static inline void
isth_wire_set_seq(uint8_t *msg, uint64_t seq)
{
	isth_wire_put_be_(msg + ISTH_WIRE_OFF_SEQ, 8, seq);
}

/** Read the seq field of the message at @p msg. */
static inline uint64_t
isth_wire_get_seq(const uint8_t *msg)
{
	return isth_wire_get_be_(msg + ISTH_WIRE_OFF_SEQ, 8);
}

/** Read the round field of the message at @p msg. */
static inline uint32_t
isth_wire_get_hdr_round(const uint8_t *msg)
{
	return (uint32_t)isth_wire_get_be_(msg + ISTH_WIRE_OFF_ROUND, 4);
}

/** Rewrite the round field of the message at @p msg. */
static inline void
isth_wire_set_hdr_round(uint8_t *msg, uint32_t round)
{
	isth_wire_put_be_(msg + ISTH_WIRE_OFF_ROUND, 4, round);
}

/** Read the chunk field of the message at @p msg. */
static inline uint32_t
isth_wire_get_hdr_chunk(const uint8_t *msg)
{
	return (uint32_t)isth_wire_get_be_(msg + ISTH_WIRE_OFF_CHUNK, 4);
}

/** Rewrite the chunk field of the message at @p msg. */
static inline void
isth_wire_set_hdr_chunk(uint8_t *msg, uint32_t chunk)
{
	isth_wire_put_be_(msg + ISTH_WIRE_OFF_CHUNK, 4, chunk);
}

/** Read the sender field of the message at @p msg (an island id). */
static inline uint8_t
isth_wire_get_hdr_sender(const uint8_t *msg)
{
	return msg[ISTH_WIRE_OFF_SENDER];
}

/** Read the stream field of the message at @p msg (flag bits 12..15). */
static inline uint8_t
isth_wire_get_stream(const uint8_t *msg)
{
	return (uint8_t)(msg[ISTH_WIRE_OFF_FLAGS] >> (ISTH_WIRE_STREAM_SHIFT - 8));
}

/** Read the flags of the message at @p msg (ISTH_WIRE_F_*; bits 12..15
 * are the stream field, isth_wire_get_stream()). */
static inline uint16_t
isth_wire_get_flags(const uint8_t *msg)
{
	return (uint16_t)isth_wire_get_be_(msg + ISTH_WIRE_OFF_FLAGS, 2);
}

/** Set flag bits in the message at @p msg (e.g. ISTH_WIRE_F_RESENT). */
static inline void
isth_wire_or_flags(uint8_t *msg, uint16_t flags)
{
	msg[ISTH_WIRE_OFF_FLAGS] |= (uint8_t)(flags >> 8);
	msg[ISTH_WIRE_OFF_FLAGS + 1] |= (uint8_t)flags;
}

#ifdef __cplusplus
}
#endif

#endif /* ISTH_WIRE_H */
