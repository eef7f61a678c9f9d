/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include "plan_app.h"

int
plot_all(const char *dir, const struct isth_plan_topo *t, const struct isth_plan_params *p,
	 struct row *rows, int nrows, const int *winners, int nwinners, char *err, size_t errlen)
{
	(void)dir; (void)t; (void)p; (void)rows; (void)nrows; (void)winners; (void)nwinners;
	snprintf(err, errlen, "not implemented");
	return -ENOSYS;
}
