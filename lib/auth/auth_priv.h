/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef AUTH_PRIV_H
#define AUTH_PRIV_H

#include <intel-ipsec-mb.h>

#include "isth_auth.h"

/*
 * Key table of a handle: n_epochs x 3 directions x n_islands direction
 * keys, index key_index(), then the pairwise WAN keys, pair_index(); a site file's handle holds only some (have[]):
 * the others are zero and every seal or verify with them is refused. Written once by isth_auth_create(), read-only
 * afterwards, so any number of engines (threads) share it.
 */
struct isth_auth {
	uint32_t job;
	enum isth_auth_site site; /* the file's kind and island */
	unsigned int site_id;
	uint32_t n_islands;
	unsigned int n_epochs;
	uint8_t epoch_id[ISTH_AUTH_MAX_EPOCHS]; /* file order */
	uint32_t start[ISTH_AUTH_MAX_EPOCHS]; /* strictly increasing */
	int8_t slot_of[256]; /* epoch id -> slot, -1 absent */
	size_t n_keys;
	uint8_t (*raw)[ISTH_AUTH_KEY_SIZE]; /* [n_keys] derived AES keys */
	uint8_t *have; /* [n_keys] 1: held (a site file holds only its own) */
	struct gcm_key_data *imb; /* [n_keys], 64-byte aligned */
};

static inline size_t
key_index(const struct isth_auth *a, unsigned int slot, unsigned int dir, unsigned int owner)
{
	return ((size_t)slot * 3u + (dir - 1u)) * a->n_islands + owner;
}

/* The pairwise WAN keys K(e, WAN_PAIR, s, t) follow the direction keys:
 * n_epochs x n_islands x n_islands (the diagonal s == t is never held). */
static inline size_t
pair_index(const struct isth_auth *a, unsigned int slot, unsigned int s, unsigned int t)
{
	return (size_t)a->n_epochs * 3u * a->n_islands +
		((size_t)slot * a->n_islands + s) * a->n_islands + t;
}

/* Epoch slot that tags @round, or -1. */
static inline int
slot_of_round(const struct isth_auth *a, uint32_t round)
{
	for (int i = (int)a->n_epochs - 1; i >= 0; i--)
		if (a->start[i] <= round)
			return i;
	return -1;
}

/* ipsec-mb manager with the best code path for this CPU, or NULL. */
IMB_MGR *auth_imb_mgr(void);

#endif /* AUTH_PRIV_H */
