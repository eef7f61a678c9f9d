/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device model against the interface of isth_fpga_if.h, register by
 * register, without the driver and without the EAL: the test is the host,
 * steps the device with isth_fpga_model_poll() and checks statuses and
 * counters. Bad descriptors, doorbells, round banks and configurations
 * are refused and counted, never a crash.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "isth_fpga_if.h"
#include "isth_fpga_model.h"
#include "isth_wire.h"

#define RTE_DIM_(a) (sizeof(a) / sizeof((a)[0]))
#define ELEMS 16
#define RING 8
#define BUF 256

struct host {
	struct isth_fpga_model *m;
	volatile uint64_t *bar;
	uint8_t *dma;
	uint64_t iova, dma_size;
	struct isth_fpga_h2d_desc *h2d;
	struct isth_fpga_d2h_desc *d2h;
	uint64_t *wb; /* [0] H2D head, [1] D2H head */
	uint8_t *h2d_buf, *d2h_buf;
	uint32_t tail;
	char name[64];
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

/* Power on a model and lay out rings: RING entries each, BUF-byte buffers. */
static void
host_up(struct host *h, uint64_t mem)
{
	struct isth_fpga_model_params p = {.replace = 1};

	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "/isth-model-test-%d", getpid());
	p.shm_name = h->name;
	p.hbm_bytes = 1 << 20;
	p.dma_bytes = 1 << 16;
	p.max_elems = 1024;
	h->m = isth_fpga_model_create(&p);
	cr_assert_not_null(h->m, "%s", strerror(errno));
	h->bar = isth_fpga_model_bar(h->m);
	h->dma = isth_fpga_model_dma(h->m, &h->dma_size, &h->iova);
	cr_assert_eq(rd(h, ISTH_FPGA_REG_ID), ISTH_FPGA_ID);
	cr_assert_eq(rd(h, ISTH_FPGA_REG_VERSION) >> 16, ISTH_FPGA_VERSION_MAJOR);
	cr_assert_eq(rd(h, ISTH_FPGA_REG_CAP_HBM_BYTES), 1u << 20);
	h->wb = (uint64_t *)h->dma;
	h->h2d = (struct isth_fpga_h2d_desc *)(h->dma + 64);
	h->d2h = (struct isth_fpga_d2h_desc *)(h->dma + 64 + RING * 32);
	h->h2d_buf = h->dma + 64 + RING * 96;
	h->d2h_buf = h->h2d_buf + RING * BUF;
	wr(h, ISTH_FPGA_REG_CFG_MEM_BYTES, mem);
	wr(h, ISTH_FPGA_REG_CFG_MAX_ELEMS, ELEMS);
	wr(h, ISTH_FPGA_REG_CFG_MAX_CHUNKS, 64);
	wr(h, ISTH_FPGA_REG_CFG_N_ISLANDS, 4);
	wr(h, ISTH_FPGA_REG_CFG_ISLAND, 0);
	wr(h, ISTH_FPGA_REG_CFG_TIMEOUT_NS, 1000);
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
}

static void
enable(struct host *h)
{
	wr(h, ISTH_FPGA_REG_CTRL, ISTH_FPGA_CTRL_ENABLE);
	run(h);
	cr_assert_eq(rd(h, ISTH_FPGA_REG_STATUS), ISTH_FPGA_STS_ENABLED, "error %lu",
		(unsigned long)rd(h, ISTH_FPGA_REG_ERROR));
}

static void
host_down(struct host *h)
{
	isth_fpga_model_destroy(h->m);
}

/* Round bank k: job 1, @round, expected {1, 2}. */
static void
publish(struct host *h, uint32_t gen, uint32_t round, uint64_t timeout)
{
	uint32_t b = ISTH_FPGA_REG_RT_BANK + (gen & 7) * ISTH_FPGA_RT_BANK_STRIDE;

	wr(h, b + ISTH_FPGA_RT_JOB, 1);
	wr(h, b + ISTH_FPGA_RT_ROUND, round);
	wr(h, b + ISTH_FPGA_RT_EXPECTED, 0x6);
	wr(h, b + ISTH_FPGA_RT_TIMEOUT_NS, timeout);
	wr(h, b + ISTH_FPGA_RT_N_PEERS, 0);
	wr(h, ISTH_FPGA_REG_RT_PROD, gen + 1);
}

/* A DATA message of job 1 round 1 chunk @chunk from @sender into H2D buffer @slot. */
static uint32_t
put_data(struct host *h, unsigned int slot, unsigned int sender, uint32_t chunk, int32_t base)
{
	struct isth_wire_hdr hd = {
		.type = ISTH_WIRE_DATA,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.sender = (uint8_t)sender,
		.count = ELEMS,
		.job = 1,
		.round = 1,
		.chunk = chunk,
		.bitmap = 1ull << sender,
	};
	int32_t body[ELEMS];
	int n;

	for (int i = 0; i < ELEMS; i++)
		body[i] = base + i;
	n = isth_wire_build_msg(h->h2d_buf + slot * BUF, BUF, &hd, body, sizeof(body), NULL);
	cr_assert_gt(n, 0);
	return (uint32_t)n;
}

static void
post(struct host *h, uint64_t addr, uint32_t len, uint64_t t)
{
	struct isth_fpga_h2d_desc *d = &h->h2d[h->tail % RING];

	d->addr = addr;
	d->len = len;
	d->status = 0;
	d->time_ns = t;
	h->tail++;
	wr(h, ISTH_FPGA_REG_H2D_TAIL, h->tail);
}

struct bad_desc {
	const char *what;
	int addr; /* 0: buffer 0; 1: IOVA 0; 2: past the window; 3: straddles its end */
	int body; /* 0: valid DATA; 1: bad magic; 2: an AGG; 3: sender >= n_islands */
	int len; /* -1: the message's; else this */
	uint16_t status;
	unsigned int counter;
};

static struct bad_desc bad_descs[] = {
	{"iova 0", 1, 0, -1, ISTH_FPGA_DESC_E_ADDR, ISTH_FPGA_CNT_DESC_BAD_ADDR},
	{"past window", 2, 0, -1, ISTH_FPGA_DESC_E_ADDR, ISTH_FPGA_CNT_DESC_BAD_ADDR},
	{"straddles end", 3, 0, -1, ISTH_FPGA_DESC_E_ADDR, ISTH_FPGA_CNT_DESC_BAD_ADDR},
	{"len 0", 0, 0, 0, ISTH_FPGA_DESC_E_LEN, ISTH_FPGA_CNT_DESC_BAD_LEN},
	{"len short", 0, 0, 39, ISTH_FPGA_DESC_E_LEN, ISTH_FPGA_CNT_DESC_BAD_LEN},
	{"len huge", 0, 0, 60000, ISTH_FPGA_DESC_E_LEN, ISTH_FPGA_CNT_DESC_BAD_LEN},
	{"len != msg", 0, 0, 40 + 4 * ELEMS - 4, ISTH_FPGA_DESC_E_MSG, ISTH_FPGA_CNT_DESC_BAD_MSG},
	{"bad magic", 0, 1, -1, ISTH_FPGA_DESC_E_MSG, ISTH_FPGA_CNT_DESC_BAD_MSG},
	{"sender range", 0, 3, -1, ISTH_FPGA_DESC_E_MSG, ISTH_FPGA_CNT_DESC_BAD_MSG},
	{"an AGG", 0, 2, -1, ISTH_FPGA_DESC_E_TYPE, ISTH_FPGA_CNT_DESC_BAD_TYPE},
};

ParameterizedTestParameters(fpga_model, bad_descriptor)
{
	return cr_make_param_array(struct bad_desc, bad_descs, RTE_DIM_(bad_descs));
}

/* Each bad descriptor is completed with its error and counted once; a good
 * descriptor after it is summed as usual. */
ParameterizedTest(struct bad_desc *b, fpga_model, bad_descriptor)
{
	struct host h;
	uint64_t addr;
	uint32_t len;

	host_up(&h, 4096);
	enable(&h);
	publish(&h, 0, 1, 0);
	len = put_data(&h, 0, b->body == 3 ? 3 : 1, 0, 100);
	if (b->body == 3)
		h.h2d_buf[20] = 7; /* sender byte: 7 >= 4 islands */
	if (b->body == 1)
		h.h2d_buf[0] ^= 0xff;
	if (b->body == 2)
		h.h2d_buf[3] = ISTH_WIRE_AGG; /* type byte */
	addr = iova(&h, h.h2d_buf);
	if (b->addr == 1)
		addr = 0;
	else if (b->addr == 2)
		addr = h.iova + h.dma_size + 64;
	else if (b->addr == 3)
		addr = h.iova + h.dma_size - 16;
	post(&h, addr, b->len < 0 ? len : (uint32_t)b->len, 10);
	len = put_data(&h, 1, 1, 0, 100);
	post(&h, iova(&h, h.h2d_buf + BUF), len, 11);
	run(&h);
	cr_assert_eq(rd(&h, ISTH_FPGA_REG_H2D_HEAD), 2, "%s", b->what);
	cr_expect_eq(h.wb[0], 2, "head write-back");
	cr_expect_eq(h.h2d[0].status, ISTH_FPGA_DESC_DONE | b->status, "%s: status %x", b->what,
		h.h2d[0].status);
	cr_expect_eq(h.h2d[1].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_OK);
	cr_expect_eq(cnt(&h, b->counter), 1, "%s", b->what);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_ACCEPTED), 1);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_H2D_DESC), 2);
	host_down(&h);
}

/* Valid DATA the aggregator refuses: completed with E_REFUSED and counted
 * under the sw name (duplicate). */
Test(fpga_model, refused_contribution)
{
	struct host h;
	uint32_t len;

	host_up(&h, 4096);
	enable(&h);
	publish(&h, 0, 1, 0);
	len = put_data(&h, 0, 1, 0, 100);
	post(&h, iova(&h, h.h2d_buf), len, 10);
	post(&h, iova(&h, h.h2d_buf), len, 11);
	run(&h);
	cr_expect_eq(h.h2d[0].status, ISTH_FPGA_DESC_DONE);
	cr_expect_eq(h.h2d[1].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_REFUSED);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_DUPLICATE), 1);
	host_down(&h);
}

/* A doorbell beyond the ring is ignored and counted; a sane one later works. */
Test(fpga_model, doorbell_beyond_ring)
{
	struct host h;
	uint32_t len;

	host_up(&h, 4096);
	enable(&h);
	publish(&h, 0, 1, 0);
	len = put_data(&h, 0, 1, 0, 100);
	h.h2d[0].addr = iova(&h, h.h2d_buf);
	h.h2d[0].len = len;
	wr(&h, ISTH_FPGA_REG_H2D_TAIL, RING + 1);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_H2D_HEAD), 0);
	cr_expect_geq(cnt(&h, ISTH_FPGA_CNT_DOORBELL_BAD), 1);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_H2D_DESC), 0);
	wr(&h, ISTH_FPGA_REG_H2D_TAIL, 1);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_H2D_HEAD), 1);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_ACCEPTED), 1);
	host_down(&h);
}

/*
 * AGG path: a completed chunk is written into the next posted D2H buffer
 * as a whole AGG message; a D2H buffer outside DMA memory or too small is
 * returned with an error and the aggregate goes to the next one; with no
 * buffer the aggregate waits (BACKLOG) and the H2D ring stalls.
 */
Test(fpga_model, d2h_buffers)
{
	struct isth_wire_limits lim;
	struct isth_wire_pkt p;
	struct host h;
	uint32_t len;

	isth_wire_limits_init(&lim, 4, 1500);
	host_up(&h, 4096);
	h.d2h[0].addr = 12; /* not an IOVA */
	h.d2h[1].cap = 40 + 4 * ELEMS - 1; /* one byte short */
	enable(&h);
	publish(&h, 0, 1, 0);
	len = put_data(&h, 0, 1, 5, 100);
	post(&h, iova(&h, h.h2d_buf), len, 10);
	len = put_data(&h, 1, 2, 5, 1000);
	post(&h, iova(&h, h.h2d_buf + BUF), len, 11);
	run(&h);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_COMPLETED), 1);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_BACKLOG), 1, "no buffer posted yet");
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_D2H_HEAD), 0);
	wr(&h, ISTH_FPGA_REG_D2H_TAIL, 3);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_D2H_HEAD), 3);
	cr_expect_eq(h.wb[1], 3);
	cr_expect_eq(h.d2h[0].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_ADDR);
	cr_expect_eq(h.d2h[1].status, ISTH_FPGA_DESC_DONE | ISTH_FPGA_DESC_E_LEN);
	cr_expect_eq(h.d2h[2].status, ISTH_FPGA_DESC_DONE);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_DESC_BAD_ADDR), 1);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_DESC_BAD_LEN), 1);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_BACKLOG), 0);
	cr_assert_eq(h.d2h[2].len, 40 + 4 * ELEMS);
	cr_expect_eq(h.d2h[2].bitmap, 0x6);
	cr_expect_eq(h.d2h[2].chunk, 5);
	cr_expect_eq(h.d2h[2].reason, ISTH_AGG_COMPLETE);
	cr_assert_eq(
		isth_wire_parse_msg(h.d2h_buf + 2 * BUF, h.d2h[2].len, &lim, &p), ISTH_WIRE_OK);
	cr_expect_eq(p.hdr.type, ISTH_WIRE_AGG);
	cr_expect_eq(p.hdr.sender, 0);
	cr_expect_eq(p.hdr.seq, 0);
	for (int i = 0; i < ELEMS; i++) {
		int32_t v;

		memcpy(&v, p.payload + 4 * i, 4);
		cr_expect_eq(v, 1100 + 2 * i);
	}
	host_down(&h);
}

/* Back-pressure: with no D2H buffer and an aggregate holding its slot, the
 * device stops consuming H2D descriptors instead of dropping. */
Test(fpga_model, d2h_backpressure)
{
	struct host h;
	uint32_t len;

	host_up(&h, 4096);
	enable(&h);
	publish(&h, 0, 1, 0);
	len = put_data(&h, 0, 1, 0, 1);
	post(&h, iova(&h, h.h2d_buf), len, 10);
	len = put_data(&h, 1, 2, 0, 1);
	post(&h, iova(&h, h.h2d_buf + BUF), len, 10); /* completes chunk 0 */
	len = put_data(&h, 2, 1, 1, 1);
	post(&h, iova(&h, h.h2d_buf + 2 * BUF), len, 10);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_H2D_HEAD), 2, "stalled behind the aggregate");
	cr_expect_gt(cnt(&h, ISTH_FPGA_CNT_D2H_STALL), 0);
	wr(&h, ISTH_FPGA_REG_D2H_TAIL, 1);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_H2D_HEAD), 3);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_ACCEPTED), 3);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_NO_SLOT), 0);
	host_down(&h);
}

/* Host time: timeouts happen at TIME_NS, acknowledged in TIME_ACK. */
Test(fpga_model, host_time)
{
	struct host h;
	uint32_t len;

	host_up(&h, 4096);
	enable(&h);
	publish(&h, 0, 1, 0);
	wr(&h, ISTH_FPGA_REG_D2H_TAIL, RING);
	len = put_data(&h, 0, 1, 0, 1);
	post(&h, iova(&h, h.h2d_buf), len, 500);
	wr(&h, ISTH_FPGA_REG_TIME_NS, 1499);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_TIME_ACK), 1499);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_PARTIAL_TIMEOUT), 0);
	wr(&h, ISTH_FPGA_REG_TIME_NS, 1500);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_TIME_ACK), 1500);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_PARTIAL_TIMEOUT), 1);
	cr_expect_eq(h.d2h[0].reason, ISTH_AGG_TIMEOUT);
	cr_expect_eq(h.d2h[0].time_ns, 1500);
	host_down(&h);
}

/* Round banks: applied in order; one with a per-round timeout (reserved in
 * 1.0) is refused with -EINVAL in its status and counted. */
Test(fpga_model, round_banks)
{
	struct host h;

	host_up(&h, 4096);
	enable(&h);
	publish(&h, 0, 1, 0);
	publish(&h, 1, 2, 777);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_RT_CONS), 2);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_RT_BANK + ISTH_FPGA_RT_STATUS), 0);
	cr_expect_eq(
		(int64_t)rd(
			&h, ISTH_FPGA_REG_RT_BANK + ISTH_FPGA_RT_BANK_STRIDE + ISTH_FPGA_RT_STATUS),
		-EINVAL);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_RT_APPLIED), 1);
	cr_expect_eq(cnt(&h, ISTH_FPGA_CNT_RT_REFUSED), 1);
	/* a producer index 9 banks ahead is ignored */
	wr(&h, ISTH_FPGA_REG_RT_PROD, 2 + 9);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_RT_CONS), 2);
	host_down(&h);
}

struct bad_cfg {
	const char *what;
	uint32_t reg;
	uint64_t value;
	uint64_t error;
};

static struct bad_cfg bad_cfgs[] = {
	{"mem above HBM", ISTH_FPGA_REG_CFG_MEM_BYTES, (1 << 20) + 1, ISTH_FPGA_ERR_MEM},
	{"mem below a slot", ISTH_FPGA_REG_CFG_MEM_BYTES, 63, ISTH_FPGA_ERR_MEM},
	{"elems 0", ISTH_FPGA_REG_CFG_MAX_ELEMS, 0, ISTH_FPGA_ERR_CFG},
	{"elems above cap", ISTH_FPGA_REG_CFG_MAX_ELEMS, 1025, ISTH_FPGA_ERR_CFG},
	{"island >= n", ISTH_FPGA_REG_CFG_ISLAND, 4, ISTH_FPGA_ERR_CFG},
	{"islands 65", ISTH_FPGA_REG_CFG_N_ISLANDS, 65, ISTH_FPGA_ERR_CFG},
	{"timeout 0", ISTH_FPGA_REG_CFG_TIMEOUT_NS, 0, ISTH_FPGA_ERR_CFG},
	{"bf16_out int32", ISTH_FPGA_REG_CFG_BF16_OUT, ISTH_WIRE_DTYPE_INT32, ISTH_FPGA_ERR_CFG},
	{"ring size 6", ISTH_FPGA_REG_H2D_SIZE, 6, ISTH_FPGA_ERR_RING},
	{"ring past window", ISTH_FPGA_REG_D2H_BASE, ISTH_FPGA_SHM_IOVA_BASE + (1 << 16) - 64,
		ISTH_FPGA_ERR_RING},
	{"ring base 0", ISTH_FPGA_REG_H2D_BASE, 0, ISTH_FPGA_ERR_RING},
	{"wb unaligned", ISTH_FPGA_REG_H2D_WB, ISTH_FPGA_SHM_IOVA_BASE + 4, ISTH_FPGA_ERR_RING},
};

ParameterizedTestParameters(fpga_model, bad_config)
{
	return cr_make_param_array(struct bad_cfg, bad_cfgs, RTE_DIM_(bad_cfgs));
}

/* A refused configuration sets STATUS.ERROR and REG_ERROR; reset clears
 * it and a good configuration then enables. */
ParameterizedTest(struct bad_cfg *b, fpga_model, bad_config)
{
	struct host h;
	uint64_t gen;

	host_up(&h, 4096);
	wr(&h, b->reg, b->value);
	wr(&h, ISTH_FPGA_REG_CTRL, ISTH_FPGA_CTRL_ENABLE);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_STATUS), ISTH_FPGA_STS_ERROR, "%s", b->what);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_ERROR), b->error, "%s", b->what);
	gen = rd(&h, ISTH_FPGA_REG_RESET_GEN);
	wr(&h, ISTH_FPGA_REG_CTRL, ISTH_FPGA_CTRL_RESET);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_RESET_GEN), gen + 1);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_STATUS), 0);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_CTRL), 0, "reset clears CTRL");
	host_down(&h);
	host_up(&h, 4096);
	enable(&h);
	host_down(&h);
}

/* HBM byte for byte: slots = floor(budget / slot bytes), never above. */
Test(fpga_model, hbm_slots)
{
	static const uint64_t budgets[] = {64, 127, 128, 64 * 100 - 1, 1 << 20};
	struct host h;

	for (unsigned int i = 0; i < RTE_DIM_(budgets); i++) {
		host_up(&h, budgets[i]);
		enable(&h);
		cr_expect_eq(rd(&h, ISTH_FPGA_REG_CFG_SLOT_BYTES), 64);
		cr_expect_eq(rd(&h, ISTH_FPGA_REG_CFG_N_SLOTS), budgets[i] / 64);
		cr_expect_leq(rd(&h, ISTH_FPGA_REG_CFG_N_SLOTS) * 64, budgets[i]);
		host_down(&h);
	}
}

/* Latency and throughput gates: a descriptor is not consumed before its
 * latency has passed or while the byte budget is empty (the limits are
 * set far beyond the test's duration, so no clock is raced). */
Test(fpga_model, latency_and_rate_gate)
{
	struct host h;
	uint32_t len;

	host_up(&h, 4096);
	enable(&h);
	publish(&h, 0, 1, 0);
	isth_fpga_model_set_latency(h.m, 100ull * 1000000000ull);
	len = put_data(&h, 0, 1, 0, 1);
	post(&h, iova(&h, h.h2d_buf), len, 10);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_H2D_HEAD), 0, "consumed before its latency");
	isth_fpga_model_set_latency(h.m, 0);
	isth_fpga_model_set_rate(h.m, 1); /* 1 byte/s */
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_H2D_HEAD), 0, "consumed beyond the rate");
	isth_fpga_model_set_rate(h.m, 0);
	run(&h);
	cr_expect_eq(rd(&h, ISTH_FPGA_REG_H2D_HEAD), 1);
	host_down(&h);
}

Test(fpga_model, create_refuses_bad_params)
{
	static const char *const names[] = {NULL, "", "x", "/", "/a/b"};
	struct isth_fpga_model_params p;

	for (unsigned int i = 0; i < RTE_DIM_(names); i++) {
		memset(&p, 0, sizeof(p));
		p.shm_name = names[i];
		errno = 0;
		cr_expect_null(isth_fpga_model_create(&p), "name %s", names[i]);
		cr_expect_eq(errno, EINVAL);
	}
	memset(&p, 0, sizeof(p));
	p.shm_name = "/isth-model-test-ring";
	p.max_ring = 100;
	cr_expect_null(isth_fpga_model_create(&p));
	cr_expect_null(isth_fpga_model_create(NULL));
	isth_fpga_model_destroy(NULL);
}
