/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_BACKEND_PRIV_H
#define ISTH_BACKEND_PRIV_H

#include "isth_backend.h"
#include "isth_ctr.h"


/* The backends isth_backend.c knows, one line each. */
extern const struct isth_backend_ops isth_backend_sw_ops;
extern const struct isth_backend_ops isth_backend_fpga_ops;

#endif
