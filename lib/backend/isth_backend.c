/* SPDX-License-Identifier: BSD-3-Clause */
/* Backend registry and dispatch: the handle is the ops plus private state. */
#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "isth_backend.h"
#include "backend_priv.h"

static const struct isth_backend_ops *const backends[] = {
	&isth_backend_sw_ops,
	&isth_backend_fpga_ops,
};

static const char *const backend_names[] = {"sw", "fpga", NULL};

struct isth_backend {
	const struct isth_backend_ops *ops;
	void *priv;
};

const char *const *
isth_backend_names(void)
{
	return backend_names;
}

struct isth_backend *
isth_backend_create(const char *name, const struct isth_backend_conf *conf)
{
	const struct isth_backend_ops *ops = NULL;
	struct isth_backend *be;
	unsigned int i;

	if (name == NULL || conf == NULL || conf->agg_pool == NULL || conf->n_islands == 0 ||
		conf->n_islands > ISTH_WIRE_MAX_ISLANDS || conf->island >= conf->n_islands ||
		conf->max_elems == 0 || conf->max_elems > UINT16_MAX || conf->max_chunks == 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < RTE_DIM(backends); i++)
		if (strcmp(backends[i]->name, name) == 0)
			ops = backends[i];
	if (ops == NULL) {
		rte_errno = ENOENT;
		return NULL;
	}
	be = rte_zmalloc_socket("isth_backend", sizeof(*be), 0, conf->socket_id);
	if (be == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	be->ops = ops;
	be->priv = ops->create(conf);
	if (be->priv == NULL) {
		int e = rte_errno;

		rte_free(be);
		rte_errno = e;
		return NULL;
	}
	return be;
}

void
isth_backend_destroy(struct isth_backend *be)
{
	if (be == NULL)
		return;
	be->ops->destroy(be->priv);
	rte_free(be);
}

void
isth_backend_caps(const struct isth_backend *be, struct isth_backend_caps *caps)
{
	be->ops->caps(be->priv, caps);
}

int
isth_backend_set_round(struct isth_backend *be, uint32_t job, uint32_t round, uint64_t expected,
	const struct isth_mcast_peer *peers, unsigned int n_peers)
{
	return be->ops->set_round(be->priv, job, round, expected, peers, n_peers);
}

unsigned int
isth_backend_aggregate_burst(struct isth_backend *be, struct rte_mbuf **pkts,
	const struct isth_wire_pkt *parsed, unsigned int n, uint64_t now)
{
	return be->ops->aggregate_burst(be->priv, pkts, parsed, n, now);
}

unsigned int
isth_backend_drain(struct isth_backend *be, uint64_t now, struct rte_mbuf **out, unsigned int cap)
{
	return be->ops->drain(be->priv, now, out, cap);
}

uint16_t
isth_backend_replicate_burst(struct isth_backend *be, struct rte_mbuf **pkts, uint16_t n,
	struct rte_mbuf **out, uint16_t out_cap, uint16_t *n_out)
{
	return be->ops->replicate_burst(be->priv, pkts, n, out, out_cap, n_out);
}

int
isth_backend_expire_round(struct isth_backend *be, uint32_t job, uint32_t round)
{
	if (be->ops->expire_round == NULL)
		return -ENOTSUP;
	return be->ops->expire_round(be->priv, job, round);
}

int
isth_backend_set_keys(struct isth_backend *be, const struct isth_auth *keys)
{
	if (be->ops->set_keys == NULL)
		return -ENOTSUP;
	return be->ops->set_keys(be->priv, keys);
}

unsigned int
isth_backend_flush(struct isth_backend *be)
{
	return be->ops->flush(be->priv);
}

void
isth_backend_stats(const struct isth_backend *be, struct isth_backend_stats *st)
{
	be->ops->stats(be->priv, st);
}

void
isth_backend_counts(const struct isth_backend *be, struct isth_backend_counts *c)
{
	be->ops->counts(be->priv, c);
}
