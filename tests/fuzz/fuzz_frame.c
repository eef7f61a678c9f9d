/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for isth_wire_parse_frame(): a configuration prefix
 * (fuzz_common.h) then a whole Ethernet frame.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isth_wire_limits lim;
	enum isth_wire_reason r;
	struct isth_wire_pkt pkt;
	uint8_t *frame;
	size_t len;

	if (size < ISTH_FUZZ_CFG_SIZE)
		return 0;
	isth_fuzz_limits(data, &lim);
	len = size - ISTH_FUZZ_CFG_SIZE;
	/* An exact-size copy: any read past len is a heap overflow to ASan. */
	frame = malloc(len ? len : 1);
	if (frame == NULL)
		abort();
	memcpy(frame, data + ISTH_FUZZ_CFG_SIZE, len);
	/* Poison the output so a field the parser forgets to set shows. */
	memset(&pkt, 0xa5, sizeof(pkt));
	r = isth_wire_parse_frame(frame, len, &lim, &pkt);
	if (r == ISTH_WIRE_OK)
		isth_fuzz_check_frame(frame, len, &lim, &pkt);
	else
		isth_fuzz_check_reject(r);
	free(frame);
	return 0;
}
