/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * xdp_rx: the AF_XDP consumer of the veth steering test. A DPDK
 * application on the net_af_xdp PMD (started with xdp_prog= naming the
 * steering object) that plays isthmusd's part: after the port starts, it
 * finds the PMD-loaded program by interface (isth_xdp_open_iface()), sets
 * the port and the job's group, then counts the frames it receives, while
 * a kernel UDP socket on another port counts what the kernel got.
 *
 *   xdp_rx EAL-ARGS -- IFACE ISTH_PORT GROUP KERNEL_PORT READY_FILE
 *          STOP_FILE EXPECT_XSK EXPECT_KERNEL NB_MBUFS
 *
 * Writes READY_FILE once the port is up and configured; polls until
 * STOP_FILE exists and both expected counts are reached, or 10 s have
 * passed; then prints one line of counts (key=value) and exits 0.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "isth_xdp.h"
#include "isth_test_eal.h"

#define BURST 32
#define RING_SIZE 1024
#define DEADLINE_NS (10ull * 1000 * 1000 * 1000)

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* IPv4/UDP to @p port, with or without one 802.1Q tag. */
static int
is_isthmus(const struct rte_mbuf *m, uint16_t port)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m), off = 12, ihl;

	if (len < 14)
		return 0;
	if (p[off] == 0x81 && p[off + 1] == 0x00)
		off += 4;
	if (len < off + 2 + 20 || p[off] != 0x08 || p[off + 1] != 0x00)
		return 0;
	off += 2;
	ihl = (p[off] & 0xf) * 4u;
	if (p[off + 9] != 17 || len < off + ihl + 8)
		return 0;
	return ((uint16_t)p[off + ihl + 2] << 8 | p[off + ihl + 3]) == port;
}

static int
kernel_socket(uint16_t port)
{
	struct sockaddr_in a = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		return -1;
	return fd;
}

int
main(int argc, char **argv)
{
	struct rte_eth_conf conf = {0};
	unsigned long rx_isth = 0, rx_other = 0, kernel = 0;
	unsigned long expect_xsk, expect_kernel;
	uint16_t isth_port, kernel_port, i, n;
	struct rte_mbuf *pkts[BURST];
	struct isth_xdp_counters c;
	struct rte_eth_stats st;
	struct rte_mempool *mp;
	unsigned int nb_mbufs;
	struct in_addr group;
	struct isth_xdp *x;
	uint64_t deadline;
	char buf[2048];
	int ret, kfd;
	FILE *f;

	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "xdp_rx: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= ret;
	argv += ret;
	if (argc != 10 || inet_pton(AF_INET, argv[3], &group) != 1) {
		fprintf(stderr, "xdp_rx: bad arguments\n");
		return 2;
	}
	isth_port = (uint16_t)atoi(argv[2]);
	kernel_port = (uint16_t)atoi(argv[4]);
	expect_xsk = strtoul(argv[7], NULL, 10);
	expect_kernel = strtoul(argv[8], NULL, 10);
	nb_mbufs = (unsigned int)strtoul(argv[9], NULL, 10);

	if (rte_eth_dev_count_avail() != 1) {
		fprintf(stderr, "xdp_rx: want exactly one port\n");
		return 1;
	}
	mp = rte_pktmbuf_pool_create(
		"xdp_rx", nb_mbufs, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (mp == NULL) {
		fprintf(stderr, "xdp_rx: mempool of %u: %s\n", nb_mbufs, rte_strerror(rte_errno));
		return 1;
	}
	ret = rte_eth_dev_configure(0, 1, 1, &conf);
	if (ret == 0)
		ret = rte_eth_rx_queue_setup(0, 0, RING_SIZE, rte_socket_id(), NULL, mp);
	if (ret == 0)
		ret = rte_eth_tx_queue_setup(0, 0, RING_SIZE, rte_socket_id(), NULL);
	if (ret == 0)
		ret = rte_eth_dev_start(0);
	if (ret != 0) {
		fprintf(stderr, "xdp_rx: port setup: %s\n", rte_strerror(-ret));
		return 1;
	}

	/* isthmusd's part: reach the PMD-loaded program by interface. */
	x = isth_xdp_open_iface(argv[1]);
	if (x == NULL) {
		fprintf(stderr, "xdp_rx: open_iface %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (isth_xdp_configure(x, isth_port, 0) != 0 ||
		isth_xdp_group_add(x, group.s_addr, 1) != 0) {
		fprintf(stderr, "xdp_rx: configure failed\n");
		return 1;
	}
	kfd = kernel_socket(kernel_port);
	if (kfd < 0) {
		perror("xdp_rx: kernel socket");
		return 1;
	}
	f = fopen(argv[5], "w");
	if (f == NULL || fclose(f) != 0) {
		perror(argv[5]);
		return 1;
	}

	deadline = now_ns() + DEADLINE_NS;
	while (now_ns() < deadline) {
		n = rte_eth_rx_burst(0, 0, pkts, BURST);
		for (i = 0; i < n; i++) {
			if (is_isthmus(pkts[i], isth_port))
				rx_isth++;
			else
				rx_other++;
			rte_pktmbuf_free(pkts[i]);
		}
		while (recv(kfd, buf, sizeof(buf), 0) >= 0)
			kernel++;
		if (n == 0 && rx_isth >= expect_xsk && kernel >= expect_kernel &&
			access(argv[6], F_OK) == 0)
			break;
	}

	if (isth_xdp_read(x, &c) != 0) {
		fprintf(stderr, "xdp_rx: counters unreadable\n");
		return 1;
	}
	memset(&st, 0, sizeof(st));
	rte_eth_stats_get(0, &st);
	printf("rx_isthmus=%lu rx_other=%lu kernel_udp=%lu steered=%lu "
	       "passed=%lu malformed=%lu no_xsk=%lu imissed=%lu\n",
		rx_isth, rx_other, kernel, (unsigned long)c.steered, (unsigned long)c.passed,
		(unsigned long)c.malformed, (unsigned long)c.no_xsk, (unsigned long)st.imissed);
	fflush(stdout);

	isth_xdp_destroy(x);
	close(kfd);
	rte_eth_dev_stop(0);
	rte_eth_dev_close(0);
	rte_mempool_free(mp);
	isth_test_eal_cleanup();
	return 0;
}
