/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The smallest training job: built by install_test.sh against an installed
 * libisthmus (pkg-config, DESTDIR) and nothing of the source tree. It
 * plays its own edge with a UDP socket on 127.0.0.1, opens a session to
 * it, sends one round's contribution and checks that the edge socket
 * receives DATA from the session's port; then closes the session.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <isth_island.h>

#define ELEMS 1000u

/* The fake edge: a UDP socket on 127.0.0.1, ephemeral port. */
static int
edge_socket(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		perror("hello_island: edge socket");
		exit(1);
	}
	*port = ntohs(a.sin_port);
	return fd;
}

int
main(void)
{
	static float tensor[ELEMS];
	struct isth_island_conf conf = {
		.job = 1,
		.island = 0,
		.n_islands = 2,
		.edge_ip = INADDR_LOOPBACK,
		.bind_ip = INADDR_LOOPBACK,
		.elems = ELEMS,
		.dtype = ISTH_WIRE_DTYPE_FP32,
	};
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	struct pollfd pfd;
	struct isth_island *s;
	char err[256] = "";
	char buf[2048];
	ssize_t n;
	int edge, rc;

	edge = edge_socket(&conf.edge_port);
	s = isth_island_open_err(&conf, err, sizeof(err));
	if (s == NULL) {
		fprintf(stderr, "hello_island: open: %s (%s)\n", strerror(errno), err);
		return 1;
	}
	rc = isth_island_send(s, 0, tensor, sizeof(tensor));
	if (rc < 0) {
		fprintf(stderr, "hello_island: send: %s\n", strerror(-rc));
		return 1;
	}
	pfd = (struct pollfd){.fd = edge, .events = POLLIN};
	if (poll(&pfd, 1, 5000) != 1) {
		fprintf(stderr, "hello_island: no DATA at the edge within 5 s\n");
		return 1;
	}
	n = recvfrom(edge, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
	if (n <= 0 || ntohs(from.sin_port) != isth_island_local_port(s)) {
		fprintf(stderr, "hello_island: bad datagram (%zd bytes, port %u)\n", n,
			ntohs(from.sin_port));
		return 1;
	}
	printf("hello_island: session 127.0.0.1:%u -> edge 127.0.0.1:%u, %u chunks of %s, "
	       "first DATA %zd bytes\n",
		isth_island_local_port(s), conf.edge_port, isth_island_n_chunks(s),
		isth_wire_dtype_name(conf.dtype), n);
	isth_island_close(s);
	close(edge);
	printf("hello_island: closed\n");
	return 0;
}
