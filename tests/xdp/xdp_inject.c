/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * xdp_inject: send a fixed table of frames out of an interface with an
 * AF_PACKET socket, for the veth steering test (xdp_steer_test.sh). Each
 * row states what the steering program on the far end must do with it, so
 * the test's expected counters come from this table, not from the program.
 *
 *   xdp_inject --expect
 *       print the expected totals as shell assignments and exit
 *   xdp_inject IFACE DST_MAC SRC_IP DST_IP
 *       send the table, then ask DST_IP's MAC with an ARP request and wait
 *       (2 s at most) for the kernel's reply: proof that ARP still works
 *
 * Frames: IPv4 header checksums are computed; UDP checksums are 0 (none),
 * which IPv4 allows, so the kernel accepts the datagrams it is given.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define ISTH_PORT 9471
#define OTHER_PORT 9472
#define GROUP_IN 0xef010203u /* 239.1.2.3: the job's group */
#define GROUP_OUT 0xef010204u /* 239.1.2.4: someone else's */

enum expect {
	E_STEER, /* reaches the AF_XDP socket */
	E_KERNEL_UDP, /* passed; the kernel socket on OTHER_PORT gets it */
	E_PASS, /* passed; the kernel drops or answers it */
	E_MALFORMED, /* counted malformed; the kernel drops it */
};

enum kind {
	K_UDP, /* IPv4/UDP */
	K_VLAN_UDP, /* 802.1Q-tagged IPv4/UDP */
	K_FRAG, /* IPv4/UDP first fragment (MF) */
	K_BAD_LEN, /* IPv4 total length beyond the frame */
};

struct row {
	const char *what;
	enum kind kind;
	uint32_t group; /* 0: unicast to DST_IP */
	uint16_t dport;
	unsigned int count;
	enum expect expect;
};

static const struct row rows[] = {
	{"isthmus unicast", K_UDP, 0, ISTH_PORT, 20, E_STEER},
	{"isthmus to the job's group", K_UDP, GROUP_IN, ISTH_PORT, 5, E_STEER},
	{"isthmus port, other group", K_UDP, GROUP_OUT, ISTH_PORT, 4, E_PASS},
	{"other UDP port", K_UDP, 0, OTHER_PORT, 7, E_KERNEL_UDP},
	{"isthmus in 802.1Q", K_VLAN_UDP, 0, ISTH_PORT, 3, E_STEER},
	{"isthmus port, fragment", K_FRAG, 0, ISTH_PORT, 2, E_PASS},
	{"total length beyond frame", K_BAD_LEN, 0, ISTH_PORT, 3, E_MALFORMED},
};

#define N_ROWS (sizeof(rows) / sizeof(rows[0]))
/* plus one ARP request, passed */
#define N_ARP 1

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static uint16_t
ip_csum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void
group_mac(uint32_t group, uint8_t *mac)
{
	mac[0] = 0x01;
	mac[1] = 0x00;
	mac[2] = 0x5e;
	mac[3] = (group >> 16) & 0x7f;
	mac[4] = (group >> 8) & 0xff;
	mac[5] = group & 0xff;
}

static size_t
build(const struct row *r, unsigned int seq, const uint8_t *dmac, const uint8_t *smac, uint32_t sip,
	uint32_t dip, uint8_t *f)
{
	const size_t payload = 48;
	size_t off = 12, ip_off, len;
	uint32_t daddr = r->group != 0 ? htonl(r->group) : dip;
	uint16_t tot_len;

	memset(f, 0, 128);
	if (r->group != 0)
		group_mac(r->group, f);
	else
		memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	if (r->kind == K_VLAN_UDP) {
		put16(f + off, 0x8100);
		put16(f + off + 2, 42);
		off += 4;
	}
	put16(f + off, 0x0800);
	ip_off = off + 2;
	tot_len = 20 + 8 + payload;
	f[ip_off] = 0x45;
	put16(f + ip_off + 2, r->kind == K_BAD_LEN ? tot_len + 100 : tot_len);
	put16(f + ip_off + 4, (uint16_t)seq);
	put16(f + ip_off + 6, r->kind == K_FRAG ? 0x2000 : 0x4000);
	f[ip_off + 8] = 64;
	f[ip_off + 9] = 17;
	memcpy(f + ip_off + 12, &sip, 4);
	memcpy(f + ip_off + 16, &daddr, 4);
	put16(f + ip_off + 10, ip_csum(f + ip_off, 20));
	off = ip_off + 20;
	put16(f + off, 40000);
	put16(f + off + 2, r->dport);
	put16(f + off + 4, 8 + payload);
	/* payload: "IS" magic then the row and sequence, for tcpdump */
	f[off + 8] = 'I';
	f[off + 9] = 'S';
	f[off + 10] = (uint8_t)(r - rows);
	put16(f + off + 11, (uint16_t)seq);
	len = off + 8 + payload;
	return len;
}

static void
print_expect(void)
{
	unsigned int tot[4] = {0, 0, 0, 0};
	size_t i;

	for (i = 0; i < N_ROWS; i++)
		tot[rows[i].expect] += rows[i].count;
	printf("EXP_STEERED=%u\n", tot[E_STEER]);
	printf("EXP_KERNEL_UDP=%u\n", tot[E_KERNEL_UDP]);
	printf("EXP_PASSED=%u\n", tot[E_KERNEL_UDP] + tot[E_PASS] + N_ARP);
	printf("EXP_MALFORMED=%u\n", tot[E_MALFORMED]);
	printf("ISTH_PORT=%u\nOTHER_PORT=%u\n", ISTH_PORT, OTHER_PORT);
	printf("GROUP=239.1.2.3\n");
}

static int
parse_mac(const char *s, uint8_t *mac)
{
	unsigned int b[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

/* ARP request for @p dip; true if the reply names it. */
static bool
arp_probe(int ifindex, const uint8_t *smac, uint32_t sip, uint32_t dip)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ARP),
		.sll_ifindex = ifindex,
	};
	struct timeval tv = {.tv_sec = 2};
	uint8_t f[64], r[128];
	ssize_t n;
	int fd, i;

	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ARP));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0 ||
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
		perror("arp socket");
		return false;
	}
	memset(f, 0, sizeof(f));
	memset(f, 0xff, 6);
	memcpy(f + 6, smac, 6);
	put16(f + 12, ETH_P_ARP);
	put16(f + 14, 1); /* Ethernet */
	put16(f + 16, 0x0800); /* IPv4 */
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, 1); /* request */
	memcpy(f + 22, smac, 6);
	memcpy(f + 28, &sip, 4);
	memcpy(f + 38, &dip, 4);
	if (send(fd, f, 60, 0) != 60) {
		perror("arp send");
		close(fd);
		return false;
	}
	for (i = 0; i < 8; i++) {
		n = recv(fd, r, sizeof(r), 0);
		if (n < 0)
			break;
		/* reply (2) whose sender IP is the one we asked for */
		if (n >= 42 && r[20] == 0 && r[21] == 2 && memcmp(r + 28, &dip, 4) == 0) {
			close(fd);
			return true;
		}
	}
	close(fd);
	return false;
}

int
main(int argc, char **argv)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET};
	uint8_t dmac[6], smac[6], f[128];
	unsigned int sent = 0, j;
	struct in_addr sip, dip;
	struct ifreq ifr;
	int fd, ifindex;
	size_t i, len;

	if (argc == 2 && strcmp(argv[1], "--expect") == 0) {
		print_expect();
		return 0;
	}
	if (argc != 5 || parse_mac(argv[2], dmac) != 0 || inet_pton(AF_INET, argv[3], &sip) != 1 ||
		inet_pton(AF_INET, argv[4], &dip) != 1) {
		fprintf(stderr, "usage: %s --expect | IFACE DST_MAC SRC_IP DST_IP\n", argv[0]);
		return 2;
	}
	ifindex = (int)if_nametoindex(argv[1]);
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (ifindex == 0 || fd < 0) {
		perror(argv[1]);
		return 1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", argv[1]);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
		perror("SIOCGIFHWADDR");
		return 1;
	}
	memcpy(smac, ifr.ifr_hwaddr.sa_data, 6);
	sll.sll_ifindex = ifindex;
	sll.sll_halen = 6;

	for (i = 0; i < N_ROWS; i++) {
		for (j = 0; j < rows[i].count; j++) {
			len = build(&rows[i], sent, dmac, smac, sip.s_addr, dip.s_addr, f);
			if (sendto(fd, f, len, 0, (struct sockaddr *)&sll, sizeof(sll)) !=
				(ssize_t)len) {
				fprintf(stderr, "send %s: %s\n", rows[i].what, strerror(errno));
				return 1;
			}
			sent++;
		}
	}
	close(fd);
	printf("sent %u frames\n", sent);

	if (!arp_probe(ifindex, smac, sip.s_addr, dip.s_addr)) {
		fprintf(stderr, "no ARP reply from %s\n", argv[4]);
		return 1;
	}
	printf("ARP reply from %s\n", argv[4]);
	return 0;
}
