/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-inject: crafts valid-looking isthmus packets and sends them at a
 * running edge or island, for hostile-traffic tests (doc/security.md). See --help.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "inject.h"
#include "isth_auth.h"
#include "isth_clock.h"
#include "isth_wire.h"

#include "options.h"
#include "isth_version.h"

/* --key-file: the keys and a tag engine for --owner. 0, or -1 (said why). */
static int
open_auth(const struct inject_args *a, struct isth_auth **auth, struct isth_auth_engine **eng)
{
	struct isth_auth_conf c = {
		.key_file = a->key_file, .job = a->s.job, .n_islands = a->islands};
	char err[256];

	if (isth_auth_create(&c, auth, err, sizeof(err)) != 0) {
		fprintf(stderr, "isthmus-inject: %s\n", err);
		return -1;
	}
	if ((uint32_t)a->owner >= a->islands ||
		isth_auth_engine_create(*auth, ISTH_AUTH_OPENSSL, eng) != 0) {
		fprintf(stderr, "isthmus-inject: --owner %d: no key (islands %u)\n", a->owner,
			a->islands);
		return -1;
	}
	return 0;
}

/* Sleep until message @i's deadline, @t0_ns + i / rate on CLOCK_MONOTONIC:
 * absolute deadlines, so that one late message does not delay the rest. */
static void
pace(uint64_t t0_ns, uint64_t i, uint64_t rate)
{
	struct timespec t;
	uint64_t ns;

	if (rate == 0)
		return;
	ns = t0_ns + i * 1000000000ull / rate;
	t.tv_sec = (time_t)(ns / 1000000000ull);
	t.tv_nsec = (long)(ns % 1000000000ull);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
}

/* What a run sends through, and what it counts. */
struct sender {
	int fd; /* UDP socket, or raw IPv4 with --from */
	struct sockaddr_in dst;
	struct inject_pcap pc; /* replay */
	struct isth_auth_engine *eng; /* --key-file */
	uint64_t sent, bytes, errors;
};

/* The frame: room for the L2-L4 headers in front of the largest message. */
static uint8_t frame[65536 + 64];

/*
 * Message @i into @msg: the capture's next datagram, or built from the
 * spec; sealed with --key-file. Its length, or -1 to stop (the capture's
 * end, or an error said on stderr).
 */
static int
next_message(const struct inject_args *a, struct sender *tx, uint64_t i, uint8_t *msg, size_t cap)
{
	char err[256];
	int len, eof;

	if (a->pcap_path != NULL) {
		len = inject_pcap_next_udp(&tx->pc, a->port, msg, cap, &eof, err, sizeof(err));
		if (len < 0)
			fprintf(stderr, "isthmus-inject: %s: %s\n", a->pcap_path, err);
		if (len < 0 || eof)
			return -1;
	} else {
		len = inject_build(&a->s, i, msg, cap);
		if (len < 0) {
			fprintf(stderr, "isthmus-inject: cannot build %s: %s\n",
				inject_kind_name(a->s.kind), strerror(-len));
			return -1;
		}
	}
	if (tx->eng != NULL && a->dir == ISTH_AUTH_WAN) {
		/* the WAN speaks tag lists: a tag for every island of the job
		 * but the owner, under the pair keys (owner, t), at most 15 */
		uint64_t rcv = 0;

		for (uint32_t t = 0; t < a->islands && __builtin_popcountll(rcv) < 15; t++)
			if (t != (uint32_t)a->owner)
				rcv |= UINT64_C(1) << t;
		len = isth_auth_seal_list(
			tx->eng, (unsigned int)a->owner, rcv, msg, (size_t)len, cap);
		if (len < 0) {
			fprintf(stderr, "isthmus-inject: seal: %s\n", strerror(-len));
			return -1;
		}
	} else if (tx->eng != NULL) {
		len = isth_auth_seal(tx->eng, (enum isth_auth_dir)a->dir, (unsigned int)a->owner,
			msg, (size_t)len, cap);
		if (len < 0) {
			fprintf(stderr, "isthmus-inject: seal: %s\n", strerror(-len));
			return -1;
		}
	}
	return len;
}

/* --count messages (replay: to the capture's end), paced at --rate. */
static void
send_all(const struct inject_args *a, struct sender *tx)
{
	uint8_t *msg = frame + ISTH_INJECT_L2;
	size_t cap = sizeof(frame) - ISTH_INJECT_L2;
	uint64_t t0 = isth_clock_mono_ns();

	for (uint64_t i = 0; i < a->count; i++) {
		int len = next_message(a, tx, i, msg, cap);
		ssize_t w;

		if (len < 0)
			break;
		pace(t0, i, a->rate);
		if (a->have_from) {
			int f = inject_frame(frame, sizeof(frame), a->from_ip, a->from_port,
				a->to_ip, a->to_port, (size_t)len);

			if (f < 0) {
				tx->errors++;
				continue;
			}
			w = sendto(tx->fd, frame + ISTH_WIRE_ETH_HDR_SIZE,
				(size_t)f - ISTH_WIRE_ETH_HDR_SIZE, 0, (struct sockaddr *)&tx->dst,
				sizeof(tx->dst));
		} else {
			w = sendto(tx->fd, msg, (size_t)len, 0, (struct sockaddr *)&tx->dst,
				sizeof(tx->dst));
		}
		if (w < 0) {
			tx->errors++;
			continue;
		}
		tx->sent++;
		tx->bytes += (uint64_t)len;
	}
}

int
main(int argc, char **argv)
{
	struct inject_args a;
	struct sender tx = {.dst = {.sin_family = AF_INET}};
	struct isth_auth *auth = NULL;
	char err[256];
	int ret;

	if (isth_version_args("isthmus-inject", argc, argv))
		return 0;
	ret = inject_args_parse(argc, argv, &a);
	if (ret >= 0)
		return ret;
	ret = 1;
	if (a.key_file != NULL && open_auth(&a, &auth, &tx.eng) != 0)
		goto out;
	if (a.pcap_path != NULL && inject_pcap_open(&tx.pc, a.pcap_path, err, sizeof(err)) != 0) {
		fprintf(stderr, "isthmus-inject: %s\n", err);
		goto out;
	}
	tx.fd = a.have_from ? socket(AF_INET, SOCK_RAW, IPPROTO_RAW)
			    : socket(AF_INET, SOCK_DGRAM, 0);
	if (tx.fd < 0) {
		fprintf(stderr, "isthmus-inject: socket: %s%s\n", strerror(errno),
			a.have_from ? " (--from needs CAP_NET_RAW)" : "");
		goto out;
	}
	tx.dst.sin_addr.s_addr = htonl(a.to_ip);
	tx.dst.sin_port = a.have_from ? 0 : htons(a.to_port);
	send_all(&a, &tx);
	close(tx.fd);
	printf("INJECT kind=%s sent=%" PRIu64 " bytes=%" PRIu64 " errors=%" PRIu64 "\n",
		a.pcap_path != NULL ? "replay" : inject_kind_name(a.s.kind), tx.sent, tx.bytes,
		tx.errors);
	ret = tx.errors == 0 && (a.pcap_path != NULL || tx.sent == a.count) ? 0 : 1;
out:
	inject_pcap_close(&tx.pc);
	isth_auth_engine_free(tx.eng);
	isth_auth_free(auth);
	return ret;
}
