/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The metrics endpoint's text primitives and request parser, driven from
 * tests/isthmusd/metrics_test.py (which parses their output with an
 * independent parser). No EAL: only app/isthmusd/metrics.c's pure parts.
 *
 *   metrics_render doc om|text VALUE...   a document: every family type,
 *                                         a label of each VALUE, HELP text
 *                                         with the characters to escape
 *   metrics_render request                a request head on stdin: prints
 *                                         "STATUS om|text"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static int
doc(int om, int argc, char **argv)
{
	struct isthd_mtext t = {.om = om};
	struct isthd_mlabel l[2];

	isthd_mtext_family(&t, "test_build_info", ISTHD_MT_GAUGE, "1, with the version");
	l[0] = (struct isthd_mlabel){"version", "0.1.0 (git 0123456789ab-dirty)"};
	isthd_mtext_u64(&t, "test_build_info", ISTHD_MT_GAUGE, l, 1, 1);
	isthd_mtext_family(&t, "test_frames", ISTHD_MT_COUNTER,
		"frames with a \\ backslash,\na newline and a \"quote\"");
	isthd_mtext_u64(&t, "test_frames", ISTHD_MT_COUNTER, NULL, 0, 18446744073709551615ull);
	isthd_mtext_family(&t, "test_payload_bytes", ISTHD_MT_COUNTER, "bytes");
	isthd_mtext_u64(&t, "test_payload_bytes", ISTHD_MT_COUNTER, NULL, 0, 1234);
	isthd_mtext_family(&t, "test_lag_seconds", ISTHD_MT_GAUGE, "a real gauge");
	isthd_mtext_double(&t, "test_lag_seconds", ISTHD_MT_GAUGE, NULL, 0, 0.000123456);
	isthd_mtext_family(&t, "test_epoch_seconds", ISTHD_MT_GAUGE, "exact from ns");
	isthd_mtext_ns(&t, "test_epoch_seconds", ISTHD_MT_GAUGE, NULL, 0, 1796525940123456789ull);
	isthd_mtext_family(&t, "test_round", ISTHD_MT_GAUGE, "negative");
	isthd_mtext_double(&t, "test_round", ISTHD_MT_GAUGE, NULL, 0, -1);
	isthd_mtext_family(&t, "test_drops", ISTHD_MT_COUNTER, "drops by reason");
	for (int i = 0; i < argc; i++) {
		char w[16];

		snprintf(w, sizeof(w), "%d", i);
		l[0] = (struct isthd_mlabel){"reason", argv[i]};
		l[1] = (struct isthd_mlabel){"worker", w};
		isthd_mtext_u64(
			&t, "test_drops", ISTHD_MT_COUNTER, l, 2, (unsigned long long)i + 1);
	}
	isthd_mtext_family(&t, "test_backend", ISTHD_MT_UNKNOWN, "no kind given");
	l[0] = (struct isthd_mlabel){"stat", "accepted"};
	isthd_mtext_u64(&t, "test_backend", ISTHD_MT_UNKNOWN, l, 1, 7);
	isthd_mtext_end(&t);
	if (t.failed)
		return 1;
	fwrite(t.p, 1, t.len, stdout);
	isthd_mtext_free(&t);
	return 0;
}

static int
request(void)
{
	static char buf[1 << 21];
	size_t len = fread(buf, 1, sizeof(buf), stdin);
	bool om;
	int st;

	/* as the server reads: at most ISTHD_METRICS_MAX_REQUEST bytes */
	if (len > ISTHD_METRICS_MAX_REQUEST)
		len = ISTHD_METRICS_MAX_REQUEST;
	st = isthd_metrics_parse_request(buf, len, &om);
	printf("%d %s\n", st, om ? "om" : "text");
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "doc") == 0)
		return doc(strcmp(argv[2], "om") == 0, argc - 3, argv + 3);
	if (argc == 2 && strcmp(argv[1], "request") == 0)
		return request();
	fprintf(stderr, "usage: metrics_render doc om|text VALUE... | request\n");
	return 2;
}
