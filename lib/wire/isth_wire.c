/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The isthmus wire format. Parsing reads every field through the get/put
 * helpers below, so buffers need no alignment, and every read is preceded by
 * a length check: the only input the parser trusts is @len.
 */
#include <errno.h>
#include <string.h>

#include "isth_wire.h"

#define ETHERTYPE_IPV4 0x0800u
#define ETHERTYPE_VLAN 0x8100u
#define IPPROTO_UDP_ 17u

static inline uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t
get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t
get64(const uint8_t *p)
{
	return ((uint64_t)get32(p) << 32) | get32(p + 4);
}

static inline void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void
put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, (uint32_t)v);
}

static const char *const reason_names[ISTH_WIRE_REASON_MAX] = {
	[ISTH_WIRE_OK] = "ok",
	[ISTH_WIRE_E_ETH_TRUNC] = "eth_trunc",
	[ISTH_WIRE_E_VLAN_TRUNC] = "vlan_trunc",
	[ISTH_WIRE_E_ETHERTYPE] = "ethertype",
	[ISTH_WIRE_E_IP_TRUNC] = "ip_trunc",
	[ISTH_WIRE_E_IP_VERSION] = "ip_version",
	[ISTH_WIRE_E_IP_IHL] = "ip_ihl",
	[ISTH_WIRE_E_IP_TOTLEN] = "ip_totlen",
	[ISTH_WIRE_E_IP_CSUM] = "ip_csum",
	[ISTH_WIRE_E_IP_FRAG] = "ip_frag",
	[ISTH_WIRE_E_IP_PROTO] = "ip_proto",
	[ISTH_WIRE_E_UDP_TRUNC] = "udp_trunc",
	[ISTH_WIRE_E_UDP_LEN] = "udp_len",
	[ISTH_WIRE_E_UDP_PORT] = "udp_port",
	[ISTH_WIRE_E_UDP_CSUM] = "udp_csum",
	[ISTH_WIRE_E_HDR_TRUNC] = "hdr_trunc",
	[ISTH_WIRE_E_MAGIC] = "magic",
	[ISTH_WIRE_E_VERSION] = "version",
	[ISTH_WIRE_E_TYPE] = "type",
	[ISTH_WIRE_E_FLAGS] = "flags",
	[ISTH_WIRE_E_DTYPE] = "dtype",
	[ISTH_WIRE_E_ISLAND] = "island",
	[ISTH_WIRE_E_BITMAP] = "bitmap",
	[ISTH_WIRE_E_COUNT] = "count",
	[ISTH_WIRE_E_TRAILER] = "trailer",
	[ISTH_WIRE_E_LENGTH] = "length",
	[ISTH_WIRE_E_RANGE] = "range",
	[ISTH_WIRE_E_RESERVED] = "reserved",
	[ISTH_WIRE_E_ROUND] = "round_body",
	[ISTH_WIRE_E_STREAM] = "stream",
};

static const char *const reason_strs[ISTH_WIRE_REASON_MAX] = {
	[ISTH_WIRE_OK] = "valid",
	[ISTH_WIRE_E_ETH_TRUNC] = "frame shorter than an Ethernet header",
	[ISTH_WIRE_E_VLAN_TRUNC] = "802.1Q tag cut short",
	[ISTH_WIRE_E_ETHERTYPE] = "not IPv4",
	[ISTH_WIRE_E_IP_TRUNC] = "shorter than an IPv4 header",
	[ISTH_WIRE_E_IP_VERSION] = "IP version is not 4",
	[ISTH_WIRE_E_IP_IHL] = "IPv4 header length below 20 or past the frame",
	[ISTH_WIRE_E_IP_TOTLEN] = "IPv4 total length below the header or past the frame",
	[ISTH_WIRE_E_IP_CSUM] = "IPv4 header checksum mismatch",
	[ISTH_WIRE_E_IP_FRAG] = "IPv4 fragment",
	[ISTH_WIRE_E_IP_PROTO] = "not UDP",
	[ISTH_WIRE_E_UDP_TRUNC] = "shorter than a UDP header",
	[ISTH_WIRE_E_UDP_LEN] = "UDP length disagrees with the IPv4 total length",
	[ISTH_WIRE_E_UDP_PORT] = "UDP destination port is not the isthmus port",
	[ISTH_WIRE_E_UDP_CSUM] = "UDP checksum mismatch",
	[ISTH_WIRE_E_HDR_TRUNC] = "shorter than the isthmus header",
	[ISTH_WIRE_E_MAGIC] = "bad magic",
	[ISTH_WIRE_E_VERSION] = "unsupported protocol version",
	[ISTH_WIRE_E_TYPE] = "unknown packet type",
	[ISTH_WIRE_E_FLAGS] = "flag unknown or not valid for this type",
	[ISTH_WIRE_E_DTYPE] = "element type unknown or not valid for this type",
	[ISTH_WIRE_E_ISLAND] = "sender island out of range",
	[ISTH_WIRE_E_BITMAP] = "contributor bitmap out of range or inconsistent",
	[ISTH_WIRE_E_COUNT] = "count is zero or above the limit",
	[ISTH_WIRE_E_TRAILER] = "trailer length inconsistent with flags or size",
	[ISTH_WIRE_E_LENGTH] = "payload size disagrees with count and element type",
	[ISTH_WIRE_E_RANGE] = "range with first > last or chunk id above 2^32-1",
	[ISTH_WIRE_E_RESERVED] = "reserved field not zero",
	[ISTH_WIRE_E_ROUND] = "ROUND body inconsistent",
	[ISTH_WIRE_E_STREAM] = "stream index at or above the streams known",
};

const char *
isth_wire_reason_name(enum isth_wire_reason r)
{
	if ((unsigned int)r >= ISTH_WIRE_REASON_MAX)
		return "unknown";
	return reason_names[r];
}

const char *
isth_wire_reason_str(enum isth_wire_reason r)
{
	if ((unsigned int)r >= ISTH_WIRE_REASON_MAX)
		return "unknown reason";
	return reason_strs[r];
}

const char *
isth_wire_type_name(unsigned int type)
{
	static const char *const names[] = {
		[ISTH_WIRE_DATA] = "data",
		[ISTH_WIRE_AGG] = "agg",
		[ISTH_WIRE_NACK] = "nack",
		[ISTH_WIRE_GONE] = "gone",
		[ISTH_WIRE_ROUND] = "round",
		[ISTH_WIRE_PARTIAL] = "partial",
	};

	if (type == 0 || type > ISTH_WIRE_TYPE_MAX)
		return "unknown";
	return names[type];
}

const char *
isth_wire_dtype_name(unsigned int dtype)
{
	static const char *const names[] = {
		[ISTH_WIRE_DTYPE_NONE] = "none",
		[ISTH_WIRE_DTYPE_FP32] = "fp32",
		[ISTH_WIRE_DTYPE_BF16] = "bf16",
		[ISTH_WIRE_DTYPE_INT32] = "int32",
	};

	if (dtype > ISTH_WIRE_DTYPE_MAX)
		return "unknown";
	return names[dtype];
}

unsigned int
isth_wire_dtype_size(unsigned int dtype)
{
	switch (dtype) {
	case ISTH_WIRE_DTYPE_FP32:
	case ISTH_WIRE_DTYPE_INT32:
		return 4;
	case ISTH_WIRE_DTYPE_BF16:
		return 2;
	default:
		return 0;
	}
}

int
isth_wire_limits_init_auth(
	struct isth_wire_limits *lim, uint32_t n_islands, unsigned int mtu, bool auth)
{
	unsigned int tag = auth ? ISTH_WIRE_TAG_SIZE : 0;
	unsigned int room;

	if (lim == NULL || n_islands == 0 || n_islands > ISTH_WIRE_MAX_ISLANDS)
		return -EINVAL;
	if (mtu < ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE + ISTH_WIRE_HDR_SIZE + tag +
				4 ||
		mtu > 65535)
		return -EINVAL;
	room = mtu - ISTH_WIRE_IPV4_MIN_HDR_SIZE - ISTH_WIRE_UDP_HDR_SIZE - ISTH_WIRE_HDR_SIZE -
		tag;
	memset(lim, 0, sizeof(*lim));
	lim->auth = auth;
	lim->n_islands = n_islands;
	lim->max_elems = (uint16_t)(room / 4);
	lim->max_ranges = (uint16_t)(room / ISTH_WIRE_RANGE_SIZE);
	lim->udp_port = ISTH_WIRE_PORT;
	lim->check_udp_csum = true;
	lim->n_streams = 1;
	return 0;
}

int
isth_wire_limits_init(struct isth_wire_limits *lim, uint32_t n_islands, unsigned int mtu)
{
	return isth_wire_limits_init_auth(lim, n_islands, mtu, false);
}

/* Flags a type may carry; everything else is ISTH_WIRE_E_FLAGS. */
static const uint16_t type_flags[ISTH_WIRE_TYPE_MAX + 1] = {
	[ISTH_WIRE_DATA] = ISTH_WIRE_F_RESENT | ISTH_WIRE_F_LAST | ISTH_WIRE_F_AUTH,
	[ISTH_WIRE_AGG] =
		ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT | ISTH_WIRE_F_LAST | ISTH_WIRE_F_AUTH,
	[ISTH_WIRE_NACK] = ISTH_WIRE_F_CHUNKS | ISTH_WIRE_F_AUTH | ISTH_WIRE_F_ECHO,
	[ISTH_WIRE_GONE] = ISTH_WIRE_F_CHUNKS | ISTH_WIRE_F_AUTH,
	[ISTH_WIRE_ROUND] = ISTH_WIRE_F_AUTH,
	[ISTH_WIRE_PARTIAL] = ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT | ISTH_WIRE_F_LAST |
		ISTH_WIRE_F_AUTH | ISTH_WIRE_F_DOWN,
};

static inline uint64_t
island_mask(uint32_t n)
{
	return n >= 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1;
}


static enum isth_wire_reason
check_body(const struct isth_wire_hdr *h, const uint8_t *body, size_t size,
	const struct isth_wire_limits *lim)
{
	uint64_t mask = island_mask(lim->n_islands);
	unsigned int esize, i;

	switch (h->type) {
	case ISTH_WIRE_DATA:
	case ISTH_WIRE_AGG:
	case ISTH_WIRE_PARTIAL:
		esize = isth_wire_dtype_size(h->dtype);
		if (h->count == 0 || h->count > lim->max_elems)
			return ISTH_WIRE_E_COUNT;
		if (size != (size_t)h->count * esize)
			return ISTH_WIRE_E_LENGTH;
		/* A DATA packet carries exactly its sender's contribution:
		 * accepting more bits would let one packet count twice. */
		if (h->type == ISTH_WIRE_DATA && h->bitmap != (UINT64_C(1) << h->sender))
			return ISTH_WIRE_E_BITMAP;
		if (h->bitmap == 0 || (h->bitmap & ~mask) != 0)
			return ISTH_WIRE_E_BITMAP;
		return ISTH_WIRE_OK;
	case ISTH_WIRE_NACK:
	case ISTH_WIRE_GONE:
		if (h->count == 0 || h->count > lim->max_ranges)
			return ISTH_WIRE_E_COUNT;
		if (size != (size_t)h->count * ISTH_WIRE_RANGE_SIZE)
			return ISTH_WIRE_E_LENGTH;
		if ((h->bitmap & ~mask) != 0)
			return ISTH_WIRE_E_BITMAP;
		for (i = 0; i < h->count; i++) {
			uint64_t first = get64(body + i * ISTH_WIRE_RANGE_SIZE);
			uint64_t last = get64(body + i * ISTH_WIRE_RANGE_SIZE + 8);

			if (first > last)
				return ISTH_WIRE_E_RANGE;
			if ((h->flags & ISTH_WIRE_F_CHUNKS) && last > UINT32_MAX)
				return ISTH_WIRE_E_RANGE;
		}
		return ISTH_WIRE_OK;
	case ISTH_WIRE_ROUND: {
		uint64_t start, deadline, period, clique;

		if (h->count != 0)
			return ISTH_WIRE_E_COUNT;
		if (size != ISTH_WIRE_ROUND_SIZE)
			return ISTH_WIRE_E_LENGTH;
		start = get64(body);
		deadline = get64(body + 8);
		period = get64(body + 16);
		clique = get64(body + 24);
		if ((h->bitmap & ~mask) != 0 || (clique & ~mask) != 0 ||
			!(clique & (UINT64_C(1) << h->sender)) || (h->bitmap & ~clique) != 0)
			return ISTH_WIRE_E_BITMAP;
		if (deadline < start || period == 0)
			return ISTH_WIRE_E_ROUND;
		return ISTH_WIRE_OK;
	}
	default:
		return ISTH_WIRE_E_TYPE;
	}
}

enum isth_wire_reason
isth_wire_parse_msg(const uint8_t *buf, size_t len, const struct isth_wire_limits *lim,
	struct isth_wire_pkt *out)
{
	struct isth_wire_hdr h;
	enum isth_wire_reason r;
	size_t body;

	if (len < ISTH_WIRE_HDR_SIZE)
		return ISTH_WIRE_E_HDR_TRUNC;
	/* No IPv4 datagram carries more; the builder refuses more too. */
	if (len > 65535 - ISTH_WIRE_IPV4_MIN_HDR_SIZE - ISTH_WIRE_UDP_HDR_SIZE)
		return ISTH_WIRE_E_LENGTH;
	if (get16(buf + ISTH_WIRE_OFF_MAGIC) != ISTH_WIRE_MAGIC)
		return ISTH_WIRE_E_MAGIC;
	h.version = buf[ISTH_WIRE_OFF_VERSION];
	if (h.version != (lim->auth ? ISTH_WIRE_VERSION_AUTH : ISTH_WIRE_VERSION))
		return ISTH_WIRE_E_VERSION;
	h.type = buf[ISTH_WIRE_OFF_TYPE];
	if (h.type == 0 || h.type > ISTH_WIRE_TYPE_MAX)
		return ISTH_WIRE_E_TYPE;
	h.flags = get16(buf + ISTH_WIRE_OFF_FLAGS);
	h.stream = (uint8_t)(h.flags >> ISTH_WIRE_STREAM_SHIFT);
	h.flags &= (uint16_t)~ISTH_WIRE_STREAM_MASK;
	if ((h.flags & ~type_flags[h.type]) != 0)
		return ISTH_WIRE_E_FLAGS;
	/* an echo copies a NACK by chunk (edge to edge) only */
	if ((h.flags & ISTH_WIRE_F_ECHO) && !(h.flags & ISTH_WIRE_F_CHUNKS))
		return ISTH_WIRE_E_FLAGS;
	/* the stream field: AGG, ROUND, NACK/GONE by seq; a chunk NACK
	 * (edge to edge) names chunks of no stream */
	if (h.stream != 0 &&
		(h.type == ISTH_WIRE_DATA || h.type == ISTH_WIRE_PARTIAL ||
			(h.flags & ISTH_WIRE_F_CHUNKS) != 0))
		return ISTH_WIRE_E_FLAGS;
	if (h.stream >= (lim->n_streams ? lim->n_streams : 1u))
		return ISTH_WIRE_E_STREAM;
	h.dtype = buf[ISTH_WIRE_OFF_DTYPE];
	if (h.type == ISTH_WIRE_DATA || h.type == ISTH_WIRE_AGG || h.type == ISTH_WIRE_PARTIAL) {
		if (h.dtype == ISTH_WIRE_DTYPE_NONE || h.dtype > ISTH_WIRE_DTYPE_MAX)
			return ISTH_WIRE_E_DTYPE;
	} else if (h.dtype != ISTH_WIRE_DTYPE_NONE) {
		return ISTH_WIRE_E_DTYPE;
	}
	h.sender = buf[ISTH_WIRE_OFF_SENDER];
	/* limits outside 1..64 (not from isth_wire_limits_init) refuse
	 * every sender rather than shift past a 64-bit bitmap */
	if (h.sender >= lim->n_islands || h.sender >= ISTH_WIRE_MAX_ISLANDS)
		return ISTH_WIRE_E_ISLAND;
	/* version 2: byte 21 is the key epoch, any value (lib/auth checks
	 * it against the round); version 1: reserved */
	h.epoch = lim->auth ? buf[ISTH_WIRE_OFF_EPOCH] : 0;
	if (!lim->auth && buf[ISTH_WIRE_OFF_RESERVED] != 0)
		return ISTH_WIRE_E_RESERVED;
	h.trailer_len = buf[ISTH_WIRE_OFF_TRAILER];
	if ((h.trailer_len != 0) != ((h.flags & ISTH_WIRE_F_AUTH) != 0) ||
		h.trailer_len > len - ISTH_WIRE_HDR_SIZE)
		return ISTH_WIRE_E_TRAILER;
	/* version 2: one tag, or a WAN tag list: the receivers' bitmap and
	 * one tag per receiver, 8 + 16k bytes with k the bitmap's bits */
	if (lim->auth && h.trailer_len != ISTH_WIRE_TAG_SIZE &&
		(h.trailer_len < 8 + ISTH_WIRE_TAG_SIZE ||
			(h.trailer_len - 8) % ISTH_WIRE_TAG_SIZE != 0 ||
			(unsigned int)__builtin_popcountll(get64(buf + len - h.trailer_len)) !=
				(h.trailer_len - 8u) / ISTH_WIRE_TAG_SIZE))
		return ISTH_WIRE_E_TRAILER;
	h.count = get16(buf + ISTH_WIRE_OFF_COUNT);
	h.job = get32(buf + ISTH_WIRE_OFF_JOB);
	h.round = get32(buf + ISTH_WIRE_OFF_ROUND);
	h.chunk = get32(buf + ISTH_WIRE_OFF_CHUNK);
	h.seq = get64(buf + ISTH_WIRE_OFF_SEQ);
	h.bitmap = get64(buf + ISTH_WIRE_OFF_BITMAP);

	body = len - ISTH_WIRE_HDR_SIZE - h.trailer_len;
	r = check_body(&h, buf + ISTH_WIRE_HDR_SIZE, body, lim);
	if (r != ISTH_WIRE_OK)
		return r;

	memset(&out->addr, 0, sizeof(out->addr));
	out->hdr = h;
	out->msg = buf;
	out->msg_size = len;
	out->payload = buf + ISTH_WIRE_HDR_SIZE;
	out->payload_size = body;
	out->trailer = h.trailer_len ? buf + ISTH_WIRE_HDR_SIZE + body : NULL;
	return ISTH_WIRE_OK;
}

/* Sum of 16-bit big-endian words, not yet folded. */
static uint32_t
sum16(const uint8_t *p, size_t len, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t
fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t
isth_wire_cksum(const void *buf, size_t len)
{
	return fold(sum16(buf, len, 0));
}

/* The UDP checksum over pseudo-header and datagram, folded and
 * complemented: 0 when a received datagram's checksum holds. The
 * datagram's bytes are summed by isth_wire_sum() (wire_sum.c). */
static uint16_t
udp_cksum(const uint8_t *ip, const uint8_t *udp, size_t len)
{
	uint32_t sum = 0;

	sum = sum16(ip + 12, 8, sum); /* source and destination address */
	sum += IPPROTO_UDP_;
	sum += (uint32_t)len;
	sum += isth_wire_sum(udp, len);
	return fold(sum);
}

int
isth_wire_put_udp_cksum(uint8_t *buf, size_t len)
{
	size_t off = ISTH_WIRE_ETH_HDR_SIZE, ihl, ulen;
	uint8_t *ip, *udp;
	uint16_t c;

	if (buf == NULL || len < off)
		return -EINVAL;
	if (get16(buf + 12) == ETHERTYPE_VLAN)
		off += ISTH_WIRE_VLAN_TAG_SIZE;
	if (len < off + ISTH_WIRE_IPV4_MIN_HDR_SIZE || get16(buf + off - 2) != ETHERTYPE_IPV4)
		return -EINVAL;
	ip = buf + off;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	if ((ip[0] >> 4) != 4 || ip[9] != IPPROTO_UDP_ || ihl < ISTH_WIRE_IPV4_MIN_HDR_SIZE ||
		len - off < ihl + ISTH_WIRE_UDP_HDR_SIZE)
		return -EINVAL;
	udp = ip + ihl;
	ulen = get16(udp + 4);
	if (ulen < ISTH_WIRE_UDP_HDR_SIZE || ulen > len - off - ihl)
		return -EINVAL;
	put16(udp + 6, 0);
	c = udp_cksum(ip, udp, ulen);
	/* 0 would mean "no checksum" (RFC 768): its equal, all ones */
	put16(udp + 6, c == 0 ? 0xffff : c);
	return 0;
}

enum isth_wire_reason
isth_wire_parse_frame(const uint8_t *buf, size_t len, const struct isth_wire_limits *lim,
	struct isth_wire_pkt *out)
{
	const uint8_t *ip, *udp;
	size_t off, ihl, totlen, ulen;
	struct isth_wire_addr a;
	enum isth_wire_reason r;
	uint16_t etype, frag;

	memset(&a, 0, sizeof(a));
	if (len < ISTH_WIRE_ETH_HDR_SIZE)
		return ISTH_WIRE_E_ETH_TRUNC;
	memcpy(a.dst_mac, buf, 6);
	memcpy(a.src_mac, buf + 6, 6);
	etype = get16(buf + 12);
	off = ISTH_WIRE_ETH_HDR_SIZE;
	if (etype == ETHERTYPE_VLAN) {
		if (len < off + ISTH_WIRE_VLAN_TAG_SIZE)
			return ISTH_WIRE_E_VLAN_TRUNC;
		a.vlan = get16(buf + off) & 0x0fff;
		etype = get16(buf + off + 2);
		off += ISTH_WIRE_VLAN_TAG_SIZE;
	}
	if (etype != ETHERTYPE_IPV4)
		return ISTH_WIRE_E_ETHERTYPE;

	ip = buf + off;
	if (len - off < ISTH_WIRE_IPV4_MIN_HDR_SIZE)
		return ISTH_WIRE_E_IP_TRUNC;
	if ((ip[0] >> 4) != 4)
		return ISTH_WIRE_E_IP_VERSION;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	if (ihl < ISTH_WIRE_IPV4_MIN_HDR_SIZE || ihl > len - off)
		return ISTH_WIRE_E_IP_IHL;
	totlen = get16(ip + 2);
	if (totlen < ihl || totlen > len - off)
		return ISTH_WIRE_E_IP_TOTLEN;
	if (fold(sum16(ip, ihl, 0)) != 0)
		return ISTH_WIRE_E_IP_CSUM;
	frag = get16(ip + 6);
	if ((frag & 0x2000) || (frag & 0x1fff))
		return ISTH_WIRE_E_IP_FRAG;
	if (ip[9] != IPPROTO_UDP_)
		return ISTH_WIRE_E_IP_PROTO;
	a.dscp = ip[1] >> 2;
	a.ttl = ip[8];
	a.src_ip = get32(ip + 12);
	a.dst_ip = get32(ip + 16);

	udp = ip + ihl;
	if (totlen - ihl < ISTH_WIRE_UDP_HDR_SIZE)
		return ISTH_WIRE_E_UDP_TRUNC;
	ulen = get16(udp + 4);
	if (ulen != totlen - ihl)
		return ISTH_WIRE_E_UDP_LEN;
	a.src_port = get16(udp);
	a.dst_port = get16(udp + 2);
	if (a.dst_port != lim->udp_port)
		return ISTH_WIRE_E_UDP_PORT;
	if (lim->check_udp_csum && get16(udp + 6) != 0 && udp_cksum(ip, udp, ulen) != 0)
		return ISTH_WIRE_E_UDP_CSUM;

	r = isth_wire_parse_msg(
		udp + ISTH_WIRE_UDP_HDR_SIZE, ulen - ISTH_WIRE_UDP_HDR_SIZE, lim, out);
	if (r != ISTH_WIRE_OK)
		return r;
	out->addr = a;
	return ISTH_WIRE_OK;
}

void
isth_wire_get_range(const struct isth_wire_pkt *pkt, unsigned int i, struct isth_wire_range *r)
{
	const uint8_t *p = pkt->payload + (size_t)i * ISTH_WIRE_RANGE_SIZE;

	r->first = get64(p);
	r->last = get64(p + 8);
}

void
isth_wire_get_round(const struct isth_wire_pkt *pkt, struct isth_wire_round *r)
{
	const uint8_t *p = pkt->payload;

	r->start_ns = get64(p);
	r->deadline_ns = get64(p + 8);
	r->period_ns = get64(p + 16);
	r->clique = get64(p + 24);
	r->n_chunks = get32(p + 32);
	r->chunk_elems = get32(p + 36);
}

int
isth_wire_put_hdr(uint8_t *buf, size_t cap, const struct isth_wire_hdr *h)
{
	bool v2 = h->version == ISTH_WIRE_VERSION_AUTH;

	if (cap < ISTH_WIRE_HDR_SIZE)
		return -ENOSPC;
	put16(buf + ISTH_WIRE_OFF_MAGIC, ISTH_WIRE_MAGIC);
	buf[ISTH_WIRE_OFF_VERSION] = v2 ? ISTH_WIRE_VERSION_AUTH : ISTH_WIRE_VERSION;
	buf[ISTH_WIRE_OFF_TYPE] = h->type;
	if (h->stream >= ISTH_WIRE_MAX_STREAMS)
		return -EINVAL;
	put16(buf + ISTH_WIRE_OFF_FLAGS,
		(uint16_t)((v2 ? h->flags | ISTH_WIRE_F_AUTH : h->flags) |
			(unsigned int)h->stream << ISTH_WIRE_STREAM_SHIFT));
	buf[ISTH_WIRE_OFF_DTYPE] = h->dtype;
	buf[ISTH_WIRE_OFF_TRAILER] = v2 ? ISTH_WIRE_TAG_SIZE : h->trailer_len;
	put32(buf + ISTH_WIRE_OFF_JOB, h->job);
	put32(buf + ISTH_WIRE_OFF_ROUND, h->round);
	put32(buf + ISTH_WIRE_OFF_CHUNK, h->chunk);
	buf[ISTH_WIRE_OFF_SENDER] = h->sender;
	buf[ISTH_WIRE_OFF_EPOCH] = v2 ? h->epoch : 0;
	put16(buf + ISTH_WIRE_OFF_COUNT, h->count);
	put64(buf + ISTH_WIRE_OFF_SEQ, h->seq);
	put64(buf + ISTH_WIRE_OFF_BITMAP, h->bitmap);
	return ISTH_WIRE_HDR_SIZE;
}

static size_t
body_size(const struct isth_wire_hdr *h)
{
	switch (h->type) {
	case ISTH_WIRE_DATA:
	case ISTH_WIRE_AGG:
	case ISTH_WIRE_PARTIAL:
		return (size_t)h->count * isth_wire_dtype_size(h->dtype);
	case ISTH_WIRE_NACK:
	case ISTH_WIRE_GONE:
		return (size_t)h->count * ISTH_WIRE_RANGE_SIZE;
	case ISTH_WIRE_ROUND:
		return ISTH_WIRE_ROUND_SIZE;
	default:
		return SIZE_MAX;
	}
}

int
isth_wire_build_msg(uint8_t *buf, size_t cap, const struct isth_wire_hdr *h, const void *payload,
	size_t payload_size, const void *trailer)
{
	bool v2 = h != NULL && h->version == ISTH_WIRE_VERSION_AUTH;
	size_t tlen, total;

	if (h == NULL || body_size(h) != payload_size || (payload_size != 0 && payload == NULL) ||
		h->stream >= ISTH_WIRE_MAX_STREAMS)
		return -EINVAL;
	/* version 2 always has the tag; a NULL tag leaves it to lib/auth */
	tlen = v2 ? ISTH_WIRE_TAG_SIZE : h->trailer_len;
	if (!v2 && tlen != 0 && trailer == NULL)
		return -EINVAL;
	total = ISTH_WIRE_HDR_SIZE + payload_size + tlen;
	if (total > 65535 - ISTH_WIRE_UDP_HDR_SIZE - ISTH_WIRE_IPV4_MIN_HDR_SIZE)
		return -EINVAL;
	if (cap < total)
		return -ENOSPC;
	isth_wire_put_hdr(buf, cap, h);
	if (payload_size)
		memmove(buf + ISTH_WIRE_HDR_SIZE, payload, payload_size);
	if (trailer == NULL)
		return (int)(total - tlen);
	if (tlen)
		memcpy(buf + ISTH_WIRE_HDR_SIZE + payload_size, trailer, tlen);
	return (int)total;
}

size_t
isth_wire_frame_hdr_size(const struct isth_wire_addr *a)
{
	return ISTH_WIRE_ETH_HDR_SIZE + (a->vlan ? ISTH_WIRE_VLAN_TAG_SIZE : 0) +
		ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE;
}

int
isth_wire_put_frame_hdr(uint8_t *buf, size_t cap, const struct isth_wire_addr *a, size_t msg_size)
{
	size_t hs = isth_wire_frame_hdr_size(a);
	size_t off = ISTH_WIRE_ETH_HDR_SIZE;
	uint8_t *ip, *udp;
	size_t totlen;

	if (a->vlan > 0x0fff)
		return -EINVAL;
	totlen = ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE + msg_size;
	if (totlen > 65535)
		return -EINVAL;
	if (cap < hs + msg_size)
		return -ENOSPC;
	memcpy(buf, a->dst_mac, 6);
	memcpy(buf + 6, a->src_mac, 6);
	if (a->vlan) {
		put16(buf + 12, ETHERTYPE_VLAN);
		put16(buf + 14, a->vlan);
		off += ISTH_WIRE_VLAN_TAG_SIZE;
	}
	put16(buf + off - 2, ETHERTYPE_IPV4);

	ip = buf + off;
	ip[0] = 0x45;
	ip[1] = (uint8_t)(a->dscp << 2);
	put16(ip + 2, (uint16_t)totlen);
	put16(ip + 4, 0); /* id: unused, never fragmented */
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = a->ttl ? a->ttl : 64;
	ip[9] = IPPROTO_UDP_;
	put16(ip + 10, 0);
	put32(ip + 12, a->src_ip);
	put32(ip + 16, a->dst_ip);
	put16(ip + 10, isth_wire_cksum(ip, ISTH_WIRE_IPV4_MIN_HDR_SIZE));

	udp = ip + ISTH_WIRE_IPV4_MIN_HDR_SIZE;
	put16(udp, a->src_port);
	put16(udp + 2, a->dst_port);
	put16(udp + 4, (uint16_t)(ISTH_WIRE_UDP_HDR_SIZE + msg_size));
	put16(udp + 6, 0);
	return (int)(hs + msg_size);
}

int
isth_wire_put_ranges(uint8_t *buf, size_t cap, const struct isth_wire_range *r, unsigned int n)
{
	unsigned int i;

	if (cap < (size_t)n * ISTH_WIRE_RANGE_SIZE)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		put64(buf + i * ISTH_WIRE_RANGE_SIZE, r[i].first);
		put64(buf + i * ISTH_WIRE_RANGE_SIZE + 8, r[i].last);
	}
	return (int)(n * ISTH_WIRE_RANGE_SIZE);
}

int
isth_wire_put_round(uint8_t *buf, size_t cap, const struct isth_wire_round *r)
{
	if (cap < ISTH_WIRE_ROUND_SIZE)
		return -ENOSPC;
	put64(buf, r->start_ns);
	put64(buf + 8, r->deadline_ns);
	put64(buf + 16, r->period_ns);
	put64(buf + 24, r->clique);
	put32(buf + 32, r->n_chunks);
	put32(buf + 36, r->chunk_elems);
	return ISTH_WIRE_ROUND_SIZE;
}
