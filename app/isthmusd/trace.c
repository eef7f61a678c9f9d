/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The WAN repair trace (ISTHD_REPAIR_TRACE, repair.h): a file of its own
 * because every side of repair and auth's refusals write to it, and it
 * calls none of them.
 */
#include <stdarg.h>
#include <stdio.h>

#include <rte_cycles.h>

#include "isthd.h"

/*
 * One repair event to stderr (doc/isthmusd.md, "WAN repair", diagnosis):
 * only when the environment had ISTHD_REPAIR_TRACE at start-up, for a
 * run whose partial results must be put down to a cause chunk by chunk
 * (what was NACKed when, served, refused, repaired). The line starts with
 * "rt" and the time in ms since the epoch.
 */
void
isthd_repair_trace(const struct isthd *d, const char *fmt, ...)
{
	uint64_t now = isthd_tsc_to_ns(d, rte_rdtsc());
	char line[320];
	va_list ap;
	int o;

	/* one write per line: the controller's round lines share the file */
	o = snprintf(line, sizeof(line), "rt %.3f ", ((double)now - (double)d->clk.epoch_ns) / 1e6);
	va_start(ap, fmt);
	o += vsnprintf(line + o, sizeof(line) - (size_t)o - 1, fmt, ap);
	va_end(ap);
	if (o > (int)sizeof(line) - 2)
		o = (int)sizeof(line) - 2;
	line[o++] = '\n';
	fwrite(line, 1, (size_t)o, stderr);
}
