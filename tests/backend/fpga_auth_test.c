/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Interface 1.1 authentication on the device model (doc/fpga-interface.md
 * 3.8): the test is the host. It derives the direction keys from a master
 * key (isth_auth_derive(), as the driver would from the key file), writes
 * them into the key table, and posts DATA sealed by lib/auth's OpenSSL
 * engine loaded from a key file with the same master key. Forged, v1,
 * wrong-key and wrong-epoch DATA are refused before the aggregator and
 * counted; the AGG the device emits is a v2 message that lib/auth
 * verifies with the island's DOWN key and that sums only genuine DATA.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "isth_auth.h"
#include "isth_fpga_if.h"
#include "isth_fpga_model.h"
#include "isth_wire.h"

#define ELEMS 16
#define RING 16
#define BUF 256
#define JOB 1u
#define N_ISL 4u
#define SELF 0u /* CFG_ISLAND */
#define MASTER "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

struct host {
	struct isth_fpga_model *m;
	volatile uint64_t *bar;
	uint8_t *dma;
	uint64_t iova, dma_size;
	struct isth_fpga_h2d_desc *h2d;
	struct isth_fpga_d2h_desc *d2h;
	uint64_t *wb;
	uint8_t *h2d_buf, *d2h_buf;
	uint32_t tail;
	char name[64];
	/* the senders' keys: a key file, lib/auth */
	char key_path[64];
	struct isth_auth *a;
	struct isth_auth_engine *e;
};

static uint64_t
rd(struct host *h, uint32_t off)
{
	return __atomic_load_n(&h->bar[off / 8], __ATOMIC_ACQUIRE);
}

static void
wr(struct host *h, uint32_t off, uint64_t v)
{
	__atomic_store_n(&h->bar[off / 8], v, __ATOMIC_RELEASE);
}

static uint64_t
iova(struct host *h, const void *p)
{
	return h->iova + (uint64_t)((const uint8_t *)p - h->dma);
}

static uint64_t
cnt(struct host *h, unsigned int i)
{
	return rd(h, ISTH_FPGA_REG_COUNTERS + 8 * i);
}

static void
run(struct host *h)
{
	for (int i = 0; i < 16; i++)
		isth_fpga_model_poll(h->m);
}

/* Key slot @slot := epoch @epoch from @start, every direction and owner
 * derived by the host from the master key. */
static void
load_keys(struct host *h, unsigned int slot, uint8_t epoch, uint32_t start)
{
	uint8_t master[32], k[32];

	for (int i = 0; i < 32; i++)
		master[i] = (uint8_t)i; /* MASTER */
	wr(h, ISTH_FPGA_REG_KEY_EPOCH + 8 * slot, 0); /* VALID clear first */
	for (unsigned int dir = ISTH_AUTH_UP; dir <= ISTH_AUTH_WAN; dir++)
		for (unsigned int o = 0; o < N_ISL; o++) {
			uint32_t off = ISTH_FPGA_REG_KEYS + ((slot * 3 + dir - 1) * 64 + o) * 32;

			cr_assert_eq(isth_auth_derive(master, JOB, epoch, dir, o, k), 0);
			for (unsigned int w = 0; w < 4; w++) {
				uint64_t v = 0;

				for (unsigned int b = 0; b < 8; b++)
					v |= (uint64_t)k[8 * w + b] << (8 * b);
				wr(h, off + 8 * w, v);
			}
		}
	wr(h, ISTH_FPGA_REG_KEY_EPOCH + 8 * slot,
		ISTH_FPGA_KEY_VALID | (uint64_t)start << 16 | epoch);
}

static void
host_up(struct host *h, uint64_t auth_ctrl, const char *key_text)
{
	struct isth_fpga_model_params p = {.replace = 1};
	struct isth_auth_conf ac = {.job = JOB, .n_islands = N_ISL};
	char err[256];
	int fd;

	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "/isth-auth-test-%d", getpid());
	p.shm_name = h->name;
	p.hbm_bytes = 1 << 20;
	p.dma_bytes = 1 << 16;
	p.max_elems = 1024;
	h->m = isth_fpga_model_create(&p);
	cr_assert_not_null(h->m, "%s", strerror(errno));
	h->bar = isth_fpga_model_bar(h->m);
	h->dma = isth_fpga_model_dma(h->m, &h->dma_size, &h->iova);
	cr_assert(rd(h, ISTH_FPGA_REG_CAP_FLAGS) & ISTH_FPGA_CAPF_AUTH);
	cr_assert_eq(rd(h, ISTH_FPGA_REG_VERSION), 1u << 16 | 1u);
	h->wb = (uint64_t *)h->dma;
	h->h2d = (struct isth_fpga_h2d_desc *)(h->dma + 64);
	h->d2h = (struct isth_fpga_d2h_desc *)(h->dma + 64 + RING * 32);
	h->h2d_buf = h->dma + 64 + RING * 96;
	h->d2h_buf = h->h2d_buf + RING * BUF;
	wr(h, ISTH_FPGA_REG_CFG_MEM_BYTES, 4096);
	wr(h, ISTH_FPGA_REG_CFG_MAX_ELEMS, ELEMS);
	wr(h, ISTH_FPGA_REG_CFG_MAX_CHUNKS, 64);
	wr(h, ISTH_FPGA_REG_CFG_N_ISLANDS, N_ISL);
	wr(h, ISTH_FPGA_REG_CFG_ISLAND, SELF);
	wr(h, ISTH_FPGA_REG_CFG_TIMEOUT_NS, 1000);
	wr(h, ISTH_FPGA_REG_AUTH_CTRL, auth_ctrl);
	wr(h, ISTH_FPGA_REG_AGG_SEQ, 5000);
	wr(h, ISTH_FPGA_REG_H2D_BASE, iova(h, h->h2d));
	wr(h, ISTH_FPGA_REG_H2D_SIZE, RING);
	wr(h, ISTH_FPGA_REG_H2D_WB, iova(h, &h->wb[0]));
	wr(h, ISTH_FPGA_REG_D2H_BASE, iova(h, h->d2h));
	wr(h, ISTH_FPGA_REG_D2H_SIZE, RING);
	wr(h, ISTH_FPGA_REG_D2H_WB, iova(h, &h->wb[1]));
	for (int i = 0; i < RING; i++) {
		h->d2h[i].addr = iova(h, h->d2h_buf + i * BUF);
		h->d2h[i].cap = BUF;
	}
	wr(h, ISTH_FPGA_REG_CTRL, ISTH_FPGA_CTRL_ENABLE);
	run(h);
	cr_assert_eq(rd(h, ISTH_FPGA_REG_STATUS), ISTH_FPGA_STS_ENABLED, "error %lu",
		(unsigned long)rd(h, ISTH_FPGA_REG_ERROR));
	wr(h, ISTH_FPGA_REG_D2H_TAIL, RING);

	snprintf(h->key_path, sizeof(h->key_path), "/tmp/isth_fpga_keys.XXXXXX");
	fd = mkstemp(h->key_path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, key_text, strlen(key_text)), (ssize_t)strlen(key_text));
	close(fd);
	ac.key_file = h->key_path;
	cr_assert_eq(isth_auth_create(&ac, &h->a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(isth_auth_engine_create(h->a, ISTH_AUTH_OPENSSL, &h->e), 0);
}

static void
host_down(struct host *h)
{
	isth_auth_engine_free(h->e);
	isth_auth_free(h->a);
	unlink(h->key_path);
	isth_fpga_model_destroy(h->m);
}

static void
publish(struct host *h, uint32_t gen, uint32_t round, uint64_t expected)
{
	uint32_t b = ISTH_FPGA_REG_RT_BANK + (gen & 7) * ISTH_FPGA_RT_BANK_STRIDE;

	wr(h, b + ISTH_FPGA_RT_JOB, JOB);
	wr(h, b + ISTH_FPGA_RT_ROUND, round);
	wr(h, b + ISTH_FPGA_RT_EXPECTED, expected);
	wr(h, b + ISTH_FPGA_RT_TIMEOUT_NS, 0);
	wr(h, b + ISTH_FPGA_RT_N_PEERS, 0);
	wr(h, ISTH_FPGA_REG_RT_PROD, gen + 1);
}

/* DATA of @round chunk 0 from @sender, values base + i, into H2D buffer
 * @slot; sealed with (@dir, @owner) unless @dir is 0 (version 1). */
static uint32_t
put_data(struct host *h, unsigned int slot, unsigned int sender, uint32_t round, int32_t base,
	unsigned int dir, unsigned int owner)
{
	struct isth_wire_hdr hd = {
		.type = ISTH_WIRE_DATA,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.sender = (uint8_t)sender,
		.count = ELEMS,
		.job = JOB,
		.round = round,
		.seq = 100 + slot,
		.bitmap = 1ull << sender,
	};
	uint8_t *buf = h->h2d_buf + slot * BUF;
	int32_t body[ELEMS];
	int n;

	for (int i = 0; i < ELEMS; i++)
		body[i] = base + i;
	n = isth_wire_build_msg(buf, BUF, &hd, body, sizeof(body), NULL);
	cr_assert_gt(n, 0);
	if (dir == 0)
		return (uint32_t)n;
	n = isth_auth_seal(h->e, dir, owner, buf, (size_t)n, BUF);
	cr_assert_gt(n, 0);
	return (uint32_t)n;
}

static void
post(struct host *h, unsigned int slot, uint32_t len, uint16_t flags)
{
	struct isth_fpga_h2d_desc *d = &h->h2d[h->tail % RING];

	d->addr = iova(h, h->h2d_buf + slot * BUF);
	d->len = len;
	d->flags = flags;
	d->status = 0;
	d->time_ns = 10 + h->tail;
	h->tail++;
	wr(h, ISTH_FPGA_REG_H2D_TAIL, h->tail);
}

static inline uint16_t
key_flags(unsigned int dir, unsigned int owner)
{
	return (uint16_t)(dir | owner << ISTH_FPGA_H2D_OWNER_SHIFT);
}

static const char file1[] = "job 1\nepoch 1 round 0 key " MASTER "\n";

TestSuite(fpga_auth, .timeout = 30);

Test(fpga_auth, forged_data_is_refused_and_aggs_are_sealed)
{
	struct isth_wire_limits lim;
	struct isth_wire_pkt p;
	enum isth_auth_status v;
	struct host h;
	uint32_t len;
	uint8_t *agg;

	host_up(&h, ISTH_FPGA_AUTH_VERIFY | ISTH_FPGA_AUTH_SEAL, file1);
	load_keys(&h, 0, 1, 0);
	publish(&h, 0, 1, 0x3); /* round 1: islands 0 and 1 */

	/* the attacks first: none may reach the slot */
	len = put_data(&h, 0, 1, 1, 9000, ISTH_AUTH_WAN, 1);
	h.h2d_buf[ISTH_WIRE_HDR_SIZE + 3] ^= 0x40; /* a payload bit */
	post(&h, 0, len, key_flags(ISTH_AUTH_WAN, 1));
	/* island 2's WAN key, claiming to come from island 1's edge */
	len = put_data(&h, 1, 1, 1, 9000, ISTH_AUTH_WAN, 2);
	post(&h, 1, len, key_flags(ISTH_AUTH_WAN, 1));
	/* island 0's own UP tag replayed as if from the WAN (reflection) */
	len = put_data(&h, 2, 1, 1, 9000, ISTH_AUTH_UP, 1);
	post(&h, 2, len, key_flags(ISTH_AUTH_WAN, 1));
	/* version 1, no tag */
	len = put_data(&h, 3, 1, 1, 9000, 0, 0);
	post(&h, 3, len, key_flags(ISTH_AUTH_WAN, 1));
	/* a sealed DATA whose epoch byte was rewritten */
	len = put_data(&h, 4, 1, 1, 9000, ISTH_AUTH_WAN, 1);
	h.h2d_buf[4 * BUF + ISTH_WIRE_OFF_EPOCH] = 2;
	post(&h, 4, len, key_flags(ISTH_AUTH_WAN, 1));
	/* a genuine DATA posted with no key named */
	len = put_data(&h, 5, 1, 1, 9000, ISTH_AUTH_WAN, 1);
	post(&h, 5, len, 0);
	run(&h);
	cr_expect_eq(h.h2d[0].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_TAG);
	cr_expect_eq(h.h2d[1].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_TAG);
	cr_expect_eq(h.h2d[2].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_TAG);
	cr_expect_eq(h.h2d[3].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_FORMAT);
	cr_expect_eq(h.h2d[4].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_EPOCH);
	cr_expect_eq(h.h2d[5].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_FORMAT);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_AUTH_TAG), 3);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_AUTH_FORMAT), 2);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_AUTH_EPOCH), 1);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_ACCEPTED), 0, "a refused DATA reached the slot");

	/* genuine: island 0 (UP key, its access port), island 1 (WAN key) */
	len = put_data(&h, 6, 0, 1, 100, ISTH_AUTH_UP, 0);
	post(&h, 6, len, key_flags(ISTH_AUTH_UP, 0));
	len = put_data(&h, 7, 1, 1, 1000, ISTH_AUTH_WAN, 1);
	post(&h, 7, len, key_flags(ISTH_AUTH_WAN, 1));
	run(&h);
	cr_expect_eq(h.h2d[6].status, ISTH_FPGA_DESC_DONE);
	cr_expect_eq(h.h2d[7].status, ISTH_FPGA_DESC_DONE);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_ACCEPTED), 2);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_COMPLETED), 1);

	/* the AGG: v2, seq from AGG_SEQ, sealed with island 0's DOWN key */
	cr_assert_eq(rd(&h, ISTH_FPGA_REG_D2H_HEAD), 1);
	cr_expect_eq(h.d2h[0].status, ISTH_FPGA_DESC_DONE);
	cr_assert_eq(h.d2h[0].len, ISTH_WIRE_HDR_SIZE + 4 * ELEMS + ISTH_AUTH_TAG_SIZE);
	agg = h.d2h_buf;
	v = isth_auth_verify(h.e, ISTH_AUTH_DOWN, SELF, agg, h.d2h[0].len);
	cr_assert_eq(v, ISTH_AUTH_OK, "AGG: %s", isth_auth_status_name(v));
	cr_expect_eq(isth_auth_verify(h.e, ISTH_AUTH_DOWN, 1, agg, h.d2h[0].len), ISTH_AUTH_E_TAG);
	cr_assert_eq(isth_wire_limits_init_auth(&lim, N_ISL, 1500, true), 0);
	cr_assert_eq(isth_wire_parse_msg(agg, h.d2h[0].len, &lim, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.type, ISTH_WIRE_AGG);
	cr_expect_eq(p.hdr.epoch, 1);
	cr_expect_eq(p.hdr.seq, 5000);
	cr_expect_eq(p.hdr.bitmap, 0x3);
	for (int i = 0; i < ELEMS; i++) {
		int32_t x;

		memcpy(&x, p.payload + 4 * i, 4);
		cr_expect_eq(x, 1100 + 2 * i, "elem %d: a forged DATA was summed", i);
	}
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_AGG_SEQ), 5001);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_AUTH_SEALED), 1);
	host_down(&h);
}

/* An island's DATA verified with its UP key gets the WAN tag of this edge
 * written in place (RESEAL_WAN): what the peers verify. */
Test(fpga_auth, reseal_wan_rewrites_the_tag_for_the_peers)
{
	struct host h;
	uint8_t *msg;
	uint32_t len;

	host_up(&h, ISTH_FPGA_AUTH_VERIFY, file1);
	load_keys(&h, 0, 1, 0);
	publish(&h, 0, 1, 0x3);
	len = put_data(&h, 0, 0, 1, 100, ISTH_AUTH_UP, 0);
	msg = h.h2d_buf;
	cr_assert_eq(isth_auth_verify(h.e, ISTH_AUTH_UP, 0, msg, len), ISTH_AUTH_OK);
	post(&h, 0, len, key_flags(ISTH_AUTH_UP, 0) | ISTH_FPGA_H2D_RESEAL_WAN);
	/* RESEAL_WAN names the WAN key as the one to write: UP only */
	len = put_data(&h, 1, 1, 1, 100, ISTH_AUTH_WAN, 1);
	post(&h, 1, len, key_flags(ISTH_AUTH_WAN, 1) | ISTH_FPGA_H2D_RESEAL_WAN);
	run(&h);
	cr_expect_eq(h.h2d[0].status, ISTH_FPGA_DESC_DONE);
	cr_expect_eq(h.h2d[1].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_FORMAT);
	cr_expect_eq(isth_auth_verify(h.e, ISTH_AUTH_WAN, 0, msg, len), ISTH_AUTH_OK);
	cr_expect_eq(isth_auth_verify(h.e, ISTH_AUTH_UP, 0, msg, len), ISTH_AUTH_E_TAG);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_AUTH_RESEALED), 1);
	host_down(&h);
}

/* Rotation in the key slots: epoch 2 from round 3 in slot 1. Round 2 is
 * verified and sealed with epoch 1, round 3 with epoch 2; an epoch-1 DATA
 * of round 3 is refused. A round no slot covers gets no unsealed AGG. */
Test(fpga_auth, key_slots_rotate_by_round_and_no_key_means_no_agg)
{
	struct host h;
	uint32_t len;

	host_up(&h, ISTH_FPGA_AUTH_VERIFY | ISTH_FPGA_AUTH_SEAL,
		"job 1\nepoch 1 round 2 key " MASTER "\nepoch 2 round 3 key " MASTER "\n");
	load_keys(&h, 0, 1, 2);
	load_keys(&h, 1, 2, 3);
	publish(&h, 0, 2, 0x1);
	publish(&h, 1, 3, 0x1);
	len = put_data(&h, 0, 0, 2, 10, ISTH_AUTH_UP, 0);
	cr_assert_eq(h.h2d_buf[ISTH_WIRE_OFF_EPOCH], 1);
	post(&h, 0, len, key_flags(ISTH_AUTH_UP, 0));
	len = put_data(&h, 1, 0, 3, 20, ISTH_AUTH_UP, 0);
	cr_assert_eq(h.h2d_buf[BUF + ISTH_WIRE_OFF_EPOCH], 2);
	post(&h, 1, len, key_flags(ISTH_AUTH_UP, 0));
	run(&h);
	cr_expect_eq(h.h2d[0].status, ISTH_FPGA_DESC_DONE);
	cr_expect_eq(h.h2d[1].status, ISTH_FPGA_DESC_DONE);
	cr_assert_eq(rd(&h, ISTH_FPGA_REG_D2H_HEAD), 2);
	for (int i = 0; i < 2; i++) {
		const uint8_t *agg = h.d2h_buf + i * BUF;

		cr_expect_eq(agg[ISTH_WIRE_OFF_EPOCH], h.d2h[i].round == 2 ? 1 : 2);
		cr_expect_eq(isth_auth_verify(h.e, ISTH_AUTH_DOWN, SELF, agg, h.d2h[i].len),
			ISTH_AUTH_OK);
	}
	/* epoch 1 cannot speak for round 3 */
	len = put_data(&h, 2, 0, 3, 20, ISTH_AUTH_UP, 0);
	h.h2d_buf[2 * BUF + ISTH_WIRE_OFF_EPOCH] = 1;
	post(&h, 2, len, key_flags(ISTH_AUTH_UP, 0));
	run(&h);
	cr_expect_eq(h.h2d[2].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_EPOCH);

	/* every key withdrawn while a round-4 aggregate is still to come: it
	 * is reported, not sent unsealed */
	publish(&h, 2, 4, 0x3);
	len = put_data(&h, 3, 0, 4, 30, ISTH_AUTH_UP, 0);
	post(&h, 3, len, key_flags(ISTH_AUTH_UP, 0));
	run(&h);
	cr_expect_eq(h.h2d[3].status, ISTH_FPGA_DESC_DONE);
	wr(&h, ISTH_FPGA_REG_KEY_EPOCH + 8 * 0, 0);
	wr(&h, ISTH_FPGA_REG_KEY_EPOCH + 8 * 1, 0);
	wr(&h, ISTH_FPGA_REG_FLUSH_REQ, rd(&h, ISTH_FPGA_REG_FLUSH_ACK) + 1);
	run(&h);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_AUTH_SEAL_NOKEY), 1);
	cr_assert_eq(rd(&h, ISTH_FPGA_REG_D2H_HEAD), 3);
	cr_expect_eq(h.d2h[2].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_AUTH_EPOCH);
	cr_expect_eq(h.d2h[2].len, 0);
	cr_expect_eq(h.d2h[2].round, 4);
	host_down(&h);
}
