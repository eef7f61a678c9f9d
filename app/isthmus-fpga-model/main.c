/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmus-fpga-model: run the device model of doc/fpga-interface.md as a
 * process, behind a POSIX shared-memory object, until SIGINT or SIGTERM.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isth_fpga_model.h"
#include "isth_notify.h"
#include "isth_text.h"
#include "isth_version.h"

static const char usage[] =
	"usage: isthmus-fpga-model --shm NAME [options]\n"
	"Run the isthmus FPGA device model behind the shared-memory object NAME\n"
	"(e.g. /isthmus-fpga0); isthmusd's fpga backend opens it by that name.\n"
	"  --shm NAME          object name, starting with '/' (required)\n"
	"  --hbm BYTES         aggregation memory the device has (default 8Gi)\n"
	"  --dma BYTES         host DMA window in the object (default 16Mi)\n"
	"  --max-elems N       elements per chunk the device takes (default 65535)\n"
	"  --latency-ns NS     per-packet latency (default 0)\n"
	"  --rate BYTES        H2D throughput limit, bytes/s (default: none)\n"
	"  --replace           replace an existing object of that name\n"
	"  --help              this text\n"
	"  --version           print the version on one line and exit\n"
	"Numbers take K, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024):\n"
	"8G is 8 x 10^9 bytes, 8Gi is 8 x 2^30.\n";

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"shm", required_argument, NULL, 's'},
		{"hbm", required_argument, NULL, 'H'},
		{"dma", required_argument, NULL, 'd'},
		{"max-elems", required_argument, NULL, 'e'},
		{"latency-ns", required_argument, NULL, 'l'},
		{"rate", required_argument, NULL, 'r'},
		{"replace", no_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct isth_fpga_model_params p;
	struct isth_fpga_model *m;
	uint64_t v, *dst;
	sigset_t set;
	int c, sig;

	if (isth_version_args("isthmus-fpga-model", argc, argv))
		return 0;
	/* Die with the parent only when asked (ISTH_DIE_WITH_PARENT=1, or
	 * ISTH_TESTBED: a kill -9 of scripts/testbed.sh leaves nothing
	 * running); a parent gone before the prctl cannot signal us: leave. */
	if (isth_notify_die_with_parent(false, getppid()) < 0)
		return 1;
	memset(&p, 0, sizeof(p));
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		dst = NULL;
		switch (c) {
		case 's':
			p.shm_name = optarg;
			break;
		case 'H':
			dst = &p.hbm_bytes;
			break;
		case 'd':
			dst = &p.dma_bytes;
			break;
		case 'l':
			dst = &p.latency_ns;
			break;
		case 'r':
			dst = &p.rate_bps;
			break;
		case 'e':
			if (isth_text_parse_size(optarg, &v) < 0 || v == 0 || v > 65535) {
				fprintf(stderr,
					"isthmus-fpga-model: --max-elems: '%s' is not 1..65535\n",
					optarg);
				return 2;
			}
			p.max_elems = (uint32_t)v;
			break;
		case 'R':
			p.replace = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
		if (dst != NULL && isth_text_parse_size(optarg, dst) < 0) {
			fprintf(stderr, "isthmus-fpga-model: --%s: '%s' is not a number (%s)\n",
				opts[c == 'H'              ? 1
						: c == 'd' ? 2
						: c == 'l' ? 4
							   : 5]
					.name,
				optarg, ISTH_TEXT_SIZE_HELP);
			return 2;
		}
	}
	if (p.shm_name == NULL || optind != argc) {
		fputs(usage, stderr);
		return 2;
	}
	/* Block the signals before the model thread starts so that only
	 * sigwait() sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	m = isth_fpga_model_create(&p);
	if (m == NULL) {
		fprintf(stderr, "isthmus-fpga-model: %s: %s\n", p.shm_name,
			errno == EEXIST ? "exists (another model? --replace)" : strerror(errno));
		return 1;
	}
	c = isth_fpga_model_start(m);
	if (c < 0) {
		fprintf(stderr, "isthmus-fpga-model: start: %s\n", strerror(-c));
		isth_fpga_model_destroy(m);
		return 1;
	}
	printf("isthmus-fpga-model: %s ready (latency %" PRIu64 " ns, rate %" PRIu64 " B/s)\n",
		p.shm_name, p.latency_ns, p.rate_bps);
	fflush(stdout);
	sigwait(&set, &sig);
	isth_fpga_model_destroy(m);
	printf("isthmus-fpga-model: %s stopped (%s)\n", p.shm_name, strsignal(sig));
	return 0;
}
