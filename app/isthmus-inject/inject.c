/* SPDX-License-Identifier: BSD-3-Clause */
/* isthmus-inject: frame builder and pcap reader (see inject.h). */
#include <errno.h>
#include <string.h>

#include "inject.h"

static const char *const kind_names[INJ_KIND_MAX] = {
	[INJ_DATA] = "data",
	[INJ_AGG] = "agg",
	[INJ_NACK] = "nack",
	[INJ_GONE] = "gone",
	[INJ_ROUND] = "round",
	[INJ_TINY] = "tiny",
	[INJ_PARTIAL] = "partial",
};

const char *
inject_kind_name(enum inject_kind k)
{
	return (unsigned int)k < INJ_KIND_MAX ? kind_names[k] : "unknown";
}

int
inject_kind_parse(const char *s)
{
	for (int k = 0; k < INJ_KIND_MAX; k++)
		if (strcmp(s, kind_names[k]) == 0)
			return k;
	return -1;
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Elements of DATA/AGG: every one equal to the spec's value. */
static int
put_elems(const struct inject_spec *s, uint16_t count, uint8_t *body, size_t cap)
{
	unsigned int es = isth_wire_dtype_size(s->dtype);
	float f = (float)s->value;
	uint32_t bits;

	if (es == 0)
		return -EINVAL;
	if ((size_t)count * es > cap)
		return -ENOSPC;
	memcpy(&bits, &f, sizeof(bits));
	for (unsigned int k = 0; k < count; k++) {
		uint8_t *p = body + (size_t)k * es;

		switch (s->dtype) {
		case ISTH_WIRE_DTYPE_INT32:
			put_le32(p, (uint32_t)s->value);
			break;
		case ISTH_WIRE_DTYPE_FP32:
			put_le32(p, bits);
			break;
		default: /* bf16: the top half of the binary32 */
			p[0] = (uint8_t)(bits >> 16);
			p[1] = (uint8_t)(bits >> 24);
			break;
		}
	}
	return (int)(count * es);
}

int
inject_build(const struct inject_spec *s, uint64_t i, uint8_t *buf, size_t cap)
{
	struct isth_wire_hdr h = {0};
	uint8_t *body = buf + ISTH_WIRE_HDR_SIZE;
	size_t bcap;
	int n;

	if (s == NULL || buf == NULL || (unsigned int)s->kind >= INJ_KIND_MAX ||
		s->sender >= ISTH_WIRE_MAX_ISLANDS)
		return -EINVAL;
	if (cap < ISTH_WIRE_HDR_SIZE)
		return -ENOSPC;
	bcap = cap - ISTH_WIRE_HDR_SIZE;
	h.job = s->job;
	h.round = s->round;
	h.sender = s->sender;
	h.flags = s->flags;
	h.seq = s->seq + i * s->seq_step;
	h.bitmap = s->bitmap;
	switch (s->kind) {
	case INJ_TINY:
	case INJ_DATA:
		h.type = ISTH_WIRE_DATA;
		h.dtype = s->dtype;
		h.count = s->kind == INJ_TINY ? 1 : s->count;
		h.chunk = s->chunk +
			(uint32_t)i *
				(s->kind == INJ_TINY && s->chunk_step == 0 ? 1 : s->chunk_step);
		if (h.bitmap == 0)
			h.bitmap = UINT64_C(1) << s->sender;
		break;
	case INJ_AGG:
	case INJ_PARTIAL:
		h.type = s->kind == INJ_AGG ? ISTH_WIRE_AGG : ISTH_WIRE_PARTIAL;
		h.dtype = s->dtype;
		h.count = s->count;
		h.chunk = s->chunk + (uint32_t)i * s->chunk_step;
		break;
	case INJ_NACK:
	case INJ_GONE:
		h.type = s->kind == INJ_NACK ? ISTH_WIRE_NACK : ISTH_WIRE_GONE;
		h.count = (uint16_t)s->n_ranges;
		h.chunk = s->chunk;
		if (s->n_ranges == 0 || s->n_ranges > ISTH_INJECT_MAX_RANGES)
			return -EINVAL;
		break;
	default:
		h.type = ISTH_WIRE_ROUND;
		h.chunk = s->chunk;
		break;
	}
	switch (h.type) {
	case ISTH_WIRE_DATA:
	case ISTH_WIRE_AGG:
	case ISTH_WIRE_PARTIAL:
		if (h.count == 0)
			return -EINVAL;
		n = put_elems(s, h.count, body, bcap);
		break;
	case ISTH_WIRE_NACK:
	case ISTH_WIRE_GONE:
		n = isth_wire_put_ranges(body, bcap, s->ranges, s->n_ranges);
		break;
	default:
		n = isth_wire_put_round(body, bcap, &s->rb);
		break;
	}
	if (n < 0)
		return n;
	/* The body is already in place; build_msg writes the header. */
	return isth_wire_build_msg(buf, cap, &h, body, (size_t)n, NULL);
}

int
inject_frame(uint8_t *buf, size_t cap, uint32_t src_ip, uint16_t src_port, uint32_t dst_ip,
	uint16_t dst_port, size_t msg_len)
{
	struct isth_wire_addr a = {
		.dst_mac = {0x02, 0, 0, 0, 0, 0x02},
		.src_mac = {0x02, 0, 0, 0, 0, 0x01},
		.src_ip = src_ip,
		.dst_ip = dst_ip,
		.src_port = src_port,
		.dst_port = dst_port,
	};

	return isth_wire_put_frame_hdr(buf, cap, &a, msg_len);
}

/* ---- pcap ------------------------------------------------------------------ */

static uint32_t
rd32(const struct inject_pcap *p, const uint8_t *b)
{
	if (p->swapped)
		return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	return (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

int
inject_pcap_open(struct inject_pcap *p, const char *path, char *err, size_t errlen)
{
	uint8_t gh[24];
	uint32_t magic;

	memset(p, 0, sizeof(*p));
	p->f = fopen(path, "rb");
	if (p->f == NULL) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	if (fread(gh, 1, sizeof(gh), p->f) != sizeof(gh)) {
		snprintf(err, errlen, "%s: shorter than a pcap header", path);
		goto bad;
	}
	magic = (uint32_t)gh[3] << 24 | (uint32_t)gh[2] << 16 | (uint32_t)gh[1] << 8 | gh[0];
	if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du)
		p->swapped = 0;
	else if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u)
		p->swapped = 1;
	else {
		snprintf(err, errlen,
			"%s: not a pcap file (magic %08x; "
			"pcapng is not supported)",
			path, magic);
		goto bad;
	}
	p->linktype = rd32(p, gh + 20) & 0x0fffffffu;
	if (p->linktype != 1 && p->linktype != 101 && p->linktype != 228) {
		snprintf(err, errlen,
			"%s: link type %u; only Ethernet (1) and "
			"raw IPv4 (101, 228) are supported",
			path, p->linktype);
		goto bad;
	}
	return 0;
bad:
	fclose(p->f);
	p->f = NULL;
	return -EINVAL;
}

void
inject_pcap_close(struct inject_pcap *p)
{
	if (p->f != NULL)
		fclose(p->f);
	p->f = NULL;
}

int
inject_pcap_next_udp(struct inject_pcap *p, uint16_t port, uint8_t *buf, size_t cap, int *eof,
	char *err, size_t errlen)
{
	static uint8_t frame[65536 + 64];

	*eof = 0;
	for (;;) {
		uint8_t rh[16];
		uint32_t incl;
		size_t got, off = 0, ihl, totlen, ulen;
		const uint8_t *ip, *udp;

		got = fread(rh, 1, sizeof(rh), p->f);
		if (got == 0 && feof(p->f)) {
			*eof = 1;
			return 0;
		}
		if (got != sizeof(rh)) {
			snprintf(err, errlen, "record %llu: truncated record header",
				(unsigned long long)p->records + 1);
			return -EINVAL;
		}
		incl = rd32(p, rh + 8);
		if (incl > sizeof(frame)) {
			snprintf(err, errlen, "record %llu: %u bytes, larger than any frame",
				(unsigned long long)p->records + 1, incl);
			return -EINVAL;
		}
		if (fread(frame, 1, incl, p->f) != incl) {
			snprintf(err, errlen, "record %llu: truncated",
				(unsigned long long)p->records + 1);
			return -EINVAL;
		}
		p->records++;
		if (p->linktype == 1) {
			uint16_t et;

			if (incl < 14)
				continue;
			et = (uint16_t)(frame[12] << 8 | frame[13]);
			off = 14;
			if (et == 0x8100 && incl >= 18) {
				et = (uint16_t)(frame[16] << 8 | frame[17]);
				off = 18;
			}
			if (et != 0x0800)
				continue;
		}
		if (incl < off + 20)
			continue;
		ip = frame + off;
		ihl = (size_t)(ip[0] & 0x0f) * 4;
		totlen = (size_t)(ip[2] << 8 | ip[3]);
		if ((ip[0] >> 4) != 4 || ihl < 20 || ip[9] != 17 || totlen < ihl + 8 ||
			off + totlen > incl || (ip[6] & 0x3f) != 0 || ip[7] != 0) /* MF or offset */
			continue;
		udp = ip + ihl;
		ulen = (size_t)(udp[4] << 8 | udp[5]);
		if (ulen < 8 || ulen > totlen - ihl)
			continue;
		if (port != 0 && (uint16_t)(udp[2] << 8 | udp[3]) != port)
			continue;
		if (ulen - 8 > cap) {
			snprintf(err, errlen,
				"record %llu: payload of %zu bytes "
				"does not fit",
				(unsigned long long)p->records, ulen - 8);
			return -ENOSPC;
		}
		memcpy(buf, udp + 8, ulen - 8);
		return (int)(ulen - 8);
	}
}
