/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for isth_wire_parse_msg(): a configuration prefix
 * (fuzz_common.h) then a bare message (a UDP payload).
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
	uint8_t *msg;
	size_t len;

	if (size < ISTH_FUZZ_CFG_SIZE)
		return 0;
	isth_fuzz_limits(data, &lim);
	len = size - ISTH_FUZZ_CFG_SIZE;
	/* An exact-size copy: any read past len is a heap overflow to ASan. */
	msg = malloc(len ? len : 1);
	if (msg == NULL)
		abort();
	memcpy(msg, data + ISTH_FUZZ_CFG_SIZE, len);
	/* Poison the output so a field the parser forgets to set shows (addr
	 * is not checked: parse_msg() leaves it to the caller). */
	memset(&pkt, 0xa5, sizeof(pkt));
	r = isth_wire_parse_msg(msg, len, &lim, &pkt);
	if (r == ISTH_WIRE_OK)
		isth_fuzz_check_msg(msg, len, &lim, &pkt);
	else
		isth_fuzz_check_reject(r);
	free(msg);
	return 0;
}
