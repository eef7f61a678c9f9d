/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zero-copy and deep-copy fan-out of isthmus messages, after DPDK's
 * ipv4_multicast example: one small header mbuf per destination chained
 * to an indirect clone of the payload. Tables go from one control writer
 * to one data-path reader through lib/rtab (mcast_priv.h).
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_memcpy.h>
#include <rte_prefetch.h>

#include "isth_ctr.h"
#include "isth_wire.h"
#include "isth_mcast.h"
#include "mcast_priv.h"

#define IP_UDP_SIZE (ISTH_WIRE_IPV4_MIN_HDR_SIZE + ISTH_WIRE_UDP_HDR_SIZE)
/* Largest message an IPv4 total length can carry. */
#define MAX_MSG_SIZE (65535u - IP_UDP_SIZE)

/* Offsets inside the IPv4 header. */
#define IP_OFF_TOTLEN 2
#define IP_OFF_CSUM 10
#define UDP_OFF_LEN (ISTH_WIRE_IPV4_MIN_HDR_SIZE + 4)

static inline void
put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint32_t
fold16(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

void
isth_mcast_group_mac(uint32_t group_ip, uint8_t mac[6])
{
	mac[0] = 0x01;
	mac[1] = 0x00;
	mac[2] = 0x5e;
	mac[3] = (uint8_t)((group_ip >> 16) & 0x7f);
	mac[4] = (uint8_t)(group_ip >> 8);
	mac[5] = (uint8_t)group_ip;
}

static inline bool
ip_is_mcast(uint32_t ip)
{
	return (ip >> 28) == 0xe;
}

/* Bytes an mbuf from @mp holds after rte_pktmbuf_alloc()'s headroom. */
static uint32_t
pool_room(struct rte_mempool *mp)
{
	uint32_t room = rte_pktmbuf_data_room_size(mp);

	return room - RTE_MIN(room, (uint32_t)RTE_PKTMBUF_HEADROOM);
}

static bool
pool_is_pktmbuf(struct rte_mempool *mp)
{
	return mp->private_data_size >= sizeof(struct rte_pktmbuf_pool_private);
}

struct isth_mcast *
isth_mcast_create(const struct isth_mcast_conf *conf)
{
	struct isth_wire_addr a;
	struct isth_mcast *mc;
	uint16_t hs;

	if (conf == NULL ||
		(conf->island >= ISTH_WIRE_MAX_ISLANDS && conf->island != ISTH_MCAST_NO_ISLAND) ||
		conf->vlan > 0x0fff || conf->dscp > 63 || conf->n_rounds > 64)
		goto einval;
	memset(&a, 0, sizeof(a));
	a.vlan = conf->vlan;
	hs = (uint16_t)isth_wire_frame_hdr_size(&a);
	switch (conf->mode) {
	case ISTH_MCAST_ZEROCOPY:
		if (conf->hdr_pool == NULL || conf->clone_pool == NULL ||
			!pool_is_pktmbuf(conf->hdr_pool) || !pool_is_pktmbuf(conf->clone_pool) ||
			pool_room(conf->hdr_pool) < MCAST_TMPL_SIZE)
			goto einval;
		break;
	case ISTH_MCAST_COPY:
		if (conf->copy_pool == NULL || !pool_is_pktmbuf(conf->copy_pool) ||
			pool_room(conf->copy_pool) < MCAST_TMPL_SIZE)
			goto einval;
		break;
	default:
		goto einval;
	}

	mc = rte_zmalloc_socket("isth_mcast", sizeof(*mc), RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (mc == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	mc->conf = *conf;
	mc->n_rounds = conf->n_rounds ? conf->n_rounds : 1;
	{
		/* a spare per slot: round r + n_rounds can be published while
		 * the data path still holds round r's table */
		struct isth_rtab_params rp = {
			.n_slots = mc->n_rounds,
			.n_spare = mc->n_rounds,
			.size = sizeof(struct mcast_table),
			.qs = conf->qs,
		};

		mc->rtab = isth_rtab_create(&rp);
		if (mc->rtab == NULL) {
			rte_free(mc);
			rte_errno = ENOMEM;
			return NULL;
		}
	}
	mc->hdr_size = hs;
	mc->l3_off = (uint16_t)(hs - IP_UDP_SIZE);
	if (conf->mode == ISTH_MCAST_COPY)
		mc->copy_room = pool_room(conf->copy_pool);
	return mc;

einval:
	rte_errno = EINVAL;
	return NULL;
}

void
isth_mcast_destroy(struct isth_mcast *mc)
{
	if (mc == NULL)
		return;
	isth_rtab_destroy(mc->rtab);
	rte_free(mc);
}

/* Control: make @t round's table (slot round % n_rounds). */
static void
mcast_publish_table(struct isth_mcast *mc, struct mcast_table *t)
{
	uint32_t next = mc->gen + 1;

	mc->last_slot = t->round % mc->n_rounds;
	isth_rtab_publish(mc->rtab, mc->last_slot, t);
	if (next == 0)
		next = 1; /* 0 means "none" */
	__atomic_store_n(&mc->gen, next, __ATOMIC_RELEASE);
}

static void
dest_init(const struct isth_mcast *mc, struct mcast_dest *d, const struct isth_mcast_peer *p)
{
	struct isth_wire_addr a;
	uint8_t *ip;
	uint32_t sum = 0;
	unsigned int i;

	memset(d, 0, sizeof(*d));
	memset(&a, 0, sizeof(a));
	memcpy(a.dst_mac, p->mac, 6);
	memcpy(a.src_mac, mc->conf.src_mac, 6);
	a.vlan = mc->conf.vlan;
	a.src_ip = mc->conf.src_ip;
	a.dst_ip = p->ip;
	a.src_port = mc->conf.src_port;
	a.dst_port = p->port;
	a.ttl = mc->conf.ttl;
	a.dscp = mc->conf.dscp;
	/* Cannot fail: the template has room and msg_size 0 is valid. */
	isth_wire_put_frame_hdr(d->tmpl, sizeof(d->tmpl), &a, 0);

	ip = d->tmpl + mc->l3_off;
	put_be16(ip + IP_OFF_TOTLEN, 0);
	put_be16(ip + IP_OFF_CSUM, 0);
	put_be16(ip + UDP_OFF_LEN, 0);
	for (i = 0; i < ISTH_WIRE_IPV4_MIN_HDR_SIZE; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	d->csum_part = fold16(sum);
	sum = (mc->conf.src_ip >> 16) + (mc->conf.src_ip & 0xffff) + (p->ip >> 16) +
		(p->ip & 0xffff) + 17 + mc->conf.src_port + p->port;
	d->udp_part = fold16(sum);
	d->peer = *p;
}

int
isth_mcast_publish(
	struct isth_mcast *mc, uint32_t round, const struct isth_mcast_peer *peers, unsigned int n)
{
	struct mcast_table *t;
	uint64_t seen = 0;
	unsigned int i;

	if (mc == NULL || n > ISTH_MCAST_MAX_DESTS || (n > 0 && peers == NULL))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		const struct isth_mcast_peer *p = &peers[i];

		if (p->island >= ISTH_WIRE_MAX_ISLANDS || p->island == mc->conf.island ||
			(seen & (UINT64_C(1) << p->island)) || p->ip == 0 || ip_is_mcast(p->ip) ||
			p->port == 0)
			return -EINVAL;
		seen |= UINT64_C(1) << p->island;
	}
	/* none free: the data path has not yet passed a quiescent state */
	t = isth_rtab_prepare(mc->rtab);
	if (t == NULL)
		return -EBUSY;
	t->round = round;
	t->group = 0;
	t->n_dests = (uint16_t)n;
	for (i = 0; i < n; i++)
		dest_init(mc, &t->dests[i], &peers[i]);
	mcast_publish_table(mc, t);
	return 0;
}

int
isth_mcast_publish_group(struct isth_mcast *mc, uint32_t round, uint32_t group_ip, uint16_t port)
{
	struct isth_mcast_peer p;
	struct mcast_table *t;

	if (mc == NULL || !ip_is_mcast(group_ip) || port == 0)
		return -EINVAL;
	t = isth_rtab_prepare(mc->rtab);
	if (t == NULL)
		return -EBUSY;

	memset(&p, 0, sizeof(p));
	p.island = 0xff;
	isth_mcast_group_mac(group_ip, p.mac);
	p.ip = group_ip;
	p.port = port;
	t->round = round;
	t->group = 1;
	t->n_dests = 1;
	dest_init(mc, &t->dests[0], &p);
	mcast_publish_table(mc, t);
	return 0;
}

uint32_t
isth_mcast_generation(const struct isth_mcast *mc)
{
	return __atomic_load_n(&mc->gen, __ATOMIC_ACQUIRE);
}

int
isth_mcast_table_get(const struct isth_mcast *mc, uint32_t *round, struct isth_mcast_peer *peers,
	unsigned int cap)
{
	const struct mcast_table *t;
	unsigned int i;

	/* the control thread is the writer: its own newest table */
	t = isth_rtab_get(mc->rtab, mc->last_slot);
	if (t == NULL)
		return -ENOENT;
	if (round != NULL)
		*round = t->round;
	for (i = 0; i < t->n_dests && i < cap; i++)
		peers[i] = t->dests[i].peer;
	return t->n_dests;
}

/*
 * Write the headers of one frame for @d at @p, for a message of @len
 * bytes. The two sizes are constants so the copy is inlined.
 */
static inline void
put_hdr(const struct isth_mcast *mc, const struct mcast_dest *d, uint8_t *p, uint32_t len,
	uint32_t msg_sum)
{
	uint32_t totlen = IP_UDP_SIZE + len;
	uint8_t *ip;
	uint32_t sum;

	if (mc->hdr_size == ISTH_WIRE_FRAME_OVERHEAD - ISTH_WIRE_HDR_SIZE)
		memcpy(p, d->tmpl, ISTH_WIRE_FRAME_OVERHEAD - ISTH_WIRE_HDR_SIZE);
	else
		memcpy(p, d->tmpl, MCAST_MAX_HDR_SIZE);
	ip = p + mc->l3_off;
	sum = fold16(d->csum_part + totlen);
	put_be16(ip + IP_OFF_TOTLEN, (uint16_t)totlen);
	put_be16(ip + IP_OFF_CSUM, (uint16_t)~sum);
	put_be16(ip + UDP_OFF_LEN, (uint16_t)(ISTH_WIRE_UDP_HDR_SIZE + len));
	if (mc->conf.udp_csum) {
		/* pseudo-header length and UDP length: the same value twice */
		sum = fold16(d->udp_part + 2 * (ISTH_WIRE_UDP_HDR_SIZE + len) + msg_sum);
		sum = (uint16_t)~sum;
		put_be16(ip + UDP_OFF_LEN + 2, (uint16_t)(sum ? sum : 0xffff));
	}
}

/* The message sum kept in an mbuf (isth_mcast_sum_attach): a dynamic
 * field and flag, registered once per process (-1: not yet, or failed). */
static int sum_off = -1;
static uint64_t sum_flag;

static int
sum_register(void)
{
	static const struct rte_mbuf_dynfield f = {
		.name = "isth_mcast_msg_sum",
		.size = sizeof(uint32_t),
		.align = __alignof__(uint32_t),
	};
	static const struct rte_mbuf_dynflag fl = {.name = "isth_mcast_msg_sum_valid"};
	int off, bit;

	if (sum_off >= 0)
		return 0;
	off = rte_mbuf_dynfield_register(&f);
	bit = rte_mbuf_dynflag_register(&fl);
	if (off < 0 || bit < 0)
		return -ENOSPC;
	sum_flag = 1ull << bit;
	__atomic_store_n(&sum_off, off, __ATOMIC_RELEASE);
	return 0;
}

/* Ones'-complement sum of the whole message, 16-bit big-endian words:
 * lib/wire's vector sum for one segment (every island DATA), DPDK's
 * for a chain (its segments may start at odd offsets). */
static inline uint32_t
sum_of(const struct rte_mbuf *m)
{
	uint16_t raw = 0;

	if (likely(m->nb_segs == 1))
		return isth_wire_sum(rte_pktmbuf_mtod(m, const void *), m->data_len);
	/* rte_raw_cksum_mbuf sums in host order; the wire sum is the byte
	 * swap of it (RFC 1071, byte-order independence). */
	if (rte_raw_cksum_mbuf(m, 0, m->pkt_len, &raw) != 0)
		return 0;
	return rte_be_to_cpu_16(raw);
}

int
isth_mcast_sum_attach(struct rte_mbuf *m)
{
	if (sum_register() < 0) {
		rte_errno = ENOSPC;
		return -ENOSPC;
	}
	*RTE_MBUF_DYNFIELD(m, sum_off, uint32_t *) = sum_of(m);
	m->ol_flags |= sum_flag;
	return 0;
}

/* Ones'-complement sum of a message, 16-bit big-endian words, not folded
 * to 16 bits beyond what fold16() does; 0 when checksums are off. The one
 * isth_mcast_sum_attach() kept in the mbuf, if any. */
static inline uint32_t
msg_sum(const struct isth_mcast *mc, const struct rte_mbuf *m)
{
	if (!mc->conf.udp_csum)
		return 0;
	if (sum_off >= 0 && (m->ol_flags & sum_flag))
		return *RTE_MBUF_DYNFIELD(m, sum_off, const uint32_t *);
	return sum_of(m);
}

/*
 * Allocate up to @n mbufs: all at once if the pool has them, else one by
 * one until the first failure. Returns how many (a prefix of @m).
 */
static inline unsigned int
alloc_n(struct rte_mempool *mp, struct rte_mbuf **m, unsigned int n)
{
	unsigned int i;

	if (likely(rte_pktmbuf_alloc_bulk(mp, m, n) == 0))
		return n;
	for (i = 0; i < n; i++) {
		m[i] = rte_pktmbuf_alloc(mp);
		if (m[i] == NULL)
			break;
	}
	return i;
}

/* Local counters of one burst, added to the handle's at its end. */
struct burst_stats {
	uint64_t copies;
	uint64_t hdr_alloc;
	uint64_t clone;
	uint64_t copy_alloc;
	uint64_t too_big;
	uint64_t len;
};

static inline unsigned int
fanout_zc(const struct isth_mcast *mc, const struct mcast_table *t, struct rte_mbuf *m,
	struct rte_mbuf **out, struct burst_stats *bs)
{
	struct rte_mbuf *clones[ISTH_MCAST_MAX_DESTS];
	unsigned int D = t->n_dests;
	unsigned int n_h, n_c, i;
	uint32_t len = m->pkt_len;
	uint32_t ms = msg_sum(mc, m);

	/* Headers go straight into @out; clones beside them. */
	n_h = alloc_n(mc->conf.hdr_pool, out, D);
	bs->hdr_alloc += D - n_h;
	if (m->nb_segs == 1) {
		n_c = alloc_n(mc->conf.clone_pool, clones, n_h);
		for (i = 0; i < n_c; i++)
			rte_pktmbuf_attach(clones[i], m);
	} else {
		for (n_c = 0; n_c < n_h; n_c++) {
			clones[n_c] = rte_pktmbuf_clone(m, mc->conf.clone_pool);
			if (clones[n_c] == NULL)
				break;
		}
	}
	if (unlikely(n_c < n_h)) {
		rte_pktmbuf_free_bulk(out + n_c, n_h - n_c);
		bs->clone += n_h - n_c;
	}

	for (i = 0; i < n_c; i++) {
		struct rte_mbuf *h = out[i];

		put_hdr(mc, &t->dests[i], rte_pktmbuf_mtod(h, uint8_t *), len, ms);
		h->data_len = mc->hdr_size;
		h->pkt_len = mc->hdr_size + len;
		h->nb_segs = (uint16_t)(clones[i]->nb_segs + 1);
		h->next = clones[i];
		h->l2_len = mc->l3_off;
		h->l3_len = ISTH_WIRE_IPV4_MIN_HDR_SIZE;
		h->l4_len = ISTH_WIRE_UDP_HDR_SIZE;
	}
	bs->copies += n_c;
	return n_c;
}

static inline unsigned int
fanout_copy(const struct isth_mcast *mc, const struct mcast_table *t, struct rte_mbuf *m,
	struct rte_mbuf **out, struct burst_stats *bs)
{
	unsigned int D = t->n_dests;
	uint32_t len = m->pkt_len;
	uint32_t flen = mc->hdr_size + len;
	uint32_t ms;
	const struct rte_mbuf *s;
	const uint8_t *payload;
	unsigned int n, i;
	uint8_t *p;

	if (unlikely(flen > mc->copy_room)) {
		bs->too_big += D;
		return 0;
	}
	n = alloc_n(mc->conf.copy_pool, out, D);
	bs->copy_alloc += D - n;
	if (n == 0)
		return 0;
	ms = msg_sum(mc, m);

	/* Linearise into the first copy; the others copy from it. */
	p = rte_pktmbuf_mtod(out[0], uint8_t *);
	put_hdr(mc, &t->dests[0], p, len, ms);
	p += mc->hdr_size;
	for (s = m; s != NULL; s = s->next) {
		rte_memcpy(p, rte_pktmbuf_mtod(s, const uint8_t *), s->data_len);
		p += s->data_len;
	}
	payload = rte_pktmbuf_mtod(out[0], const uint8_t *) + mc->hdr_size;
	out[0]->data_len = (uint16_t)flen;
	out[0]->pkt_len = flen;
	for (i = 1; i < n; i++) {
		p = rte_pktmbuf_mtod(out[i], uint8_t *);
		put_hdr(mc, &t->dests[i], p, len, ms);
		rte_memcpy(p + mc->hdr_size, payload, len);
		out[i]->data_len = (uint16_t)flen;
		out[i]->pkt_len = flen;
	}
	for (i = 0; i < n; i++) {
		out[i]->l2_len = mc->l3_off;
		out[i]->l3_len = ISTH_WIRE_IPV4_MIN_HDR_SIZE;
		out[i]->l4_len = ISTH_WIRE_UDP_HDR_SIZE;
	}
	bs->copies += n;
	return n;
}

/* One burst with table @t (NULL: none), read-only until the caller's next
 * quiescent state. */
static inline uint16_t
fanout_table(struct isth_mcast *mc, const struct mcast_table *t, struct rte_mbuf **pkts,
	uint16_t n_pkts, struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out)
{
	struct burst_stats bs = {0};
	unsigned int D, k = 0;
	uint16_t i;

	if (unlikely(t == NULL)) {
		isth_ctr_add(&mc->stats.pkts_no_table, n_pkts);
		*n_out = 0;
		return n_pkts;
	}
	D = t->n_dests;
	if (unlikely(D == 0)) {
		isth_ctr_add(&mc->stats.pkts, n_pkts);
		isth_ctr_add(&mc->stats.pkts_no_peers, n_pkts);
		*n_out = 0;
		return n_pkts;
	}

	for (i = 0; i < n_pkts; i++) {
		struct rte_mbuf *m = pkts[i];

		if (k + D > out_cap)
			break;
		if (i + 1 < n_pkts) {
			rte_prefetch0(pkts[i + 1]);
			if (mc->conf.mode == ISTH_MCAST_COPY)
				rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		}
		if (unlikely(m->pkt_len == 0 || m->pkt_len > MAX_MSG_SIZE)) {
			bs.len += D;
			continue;
		}
		if (mc->conf.mode == ISTH_MCAST_ZEROCOPY)
			k += fanout_zc(mc, t, m, out + k, &bs);
		else
			k += fanout_copy(mc, t, m, out + k, &bs);
	}

	isth_ctr_add(&mc->stats.pkts, i);
	isth_ctr_add(&mc->stats.copies, bs.copies);
	if (unlikely(bs.copies != (uint64_t)i * D)) {
		isth_ctr_add(&mc->stats.drop_hdr_alloc, bs.hdr_alloc);
		isth_ctr_add(&mc->stats.drop_clone, bs.clone);
		isth_ctr_add(&mc->stats.drop_copy_alloc, bs.copy_alloc);
		isth_ctr_add(&mc->stats.drop_too_big, bs.too_big);
		isth_ctr_add(&mc->stats.drop_len, bs.len);
	}
	*n_out = (uint16_t)k;
	return i;
}

uint16_t
isth_mcast_fanout_burst(struct isth_mcast *mc, struct rte_mbuf **pkts, uint16_t n_pkts,
	struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out)
{
	return fanout_table(mc, isth_rtab_get(mc->rtab, 0), pkts, n_pkts, out, out_cap, n_out);
}

bool
isth_mcast_has_round(const struct isth_mcast *mc, uint32_t round)
{
	const struct mcast_table *t = isth_rtab_get(mc->rtab, round % mc->n_rounds);

	return t != NULL && t->round == round;
}

uint16_t
isth_mcast_fanout_round(struct isth_mcast *mc, uint32_t round, struct rte_mbuf **pkts,
	uint16_t n_pkts, struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out)
{
	const struct mcast_table *t = isth_rtab_get(mc->rtab, round % mc->n_rounds);

	if (t != NULL && t->round != round)
		t = NULL; /* the slot holds another round */
	return fanout_table(mc, t, pkts, n_pkts, out, out_cap, n_out);
}

void
isth_mcast_stats_get(const struct isth_mcast *mc, struct isth_mcast_stats *st)
{
	const struct isth_mcast_stats *s = &mc->stats;

	st->pkts = __atomic_load_n(&s->pkts, __ATOMIC_RELAXED);
	st->pkts_no_table = __atomic_load_n(&s->pkts_no_table, __ATOMIC_RELAXED);
	st->pkts_no_peers = __atomic_load_n(&s->pkts_no_peers, __ATOMIC_RELAXED);
	st->copies = __atomic_load_n(&s->copies, __ATOMIC_RELAXED);
	st->drop_hdr_alloc = __atomic_load_n(&s->drop_hdr_alloc, __ATOMIC_RELAXED);
	st->drop_clone = __atomic_load_n(&s->drop_clone, __ATOMIC_RELAXED);
	st->drop_copy_alloc = __atomic_load_n(&s->drop_copy_alloc, __ATOMIC_RELAXED);
	st->drop_too_big = __atomic_load_n(&s->drop_too_big, __ATOMIC_RELAXED);
	st->drop_len = __atomic_load_n(&s->drop_len, __ATOMIC_RELAXED);
}

int
isth_mcast_port_mode(uint16_t port_id)
{
	struct rte_eth_dev_info info;
	const char *drv;

	if (!rte_eth_dev_is_valid_port(port_id) || rte_eth_dev_info_get(port_id, &info) != 0)
		return -ENODEV;
	drv = info.driver_name != NULL ? info.driver_name : "";
	if (strcmp(drv, "net_af_xdp") == 0)
		return ISTH_MCAST_COPY;
	if (strcmp(drv, "net_ring") == 0 || strcmp(drv, "net_null") == 0)
		return ISTH_MCAST_ZEROCOPY;
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		return ISTH_MCAST_ZEROCOPY;
	return ISTH_MCAST_COPY;
}
