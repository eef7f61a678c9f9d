/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * In-process harness for isthmus-wan: one ring pair per site (to_wan is
 * the port's RX, from_wan its TX) made into ports with rte_eth_from_rings,
 * and an emulator over them. Shared by the tests and the benchmark.
 */
#ifndef WAN_HARNESS_H
#define WAN_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "wan.h"

#define H_MAX_SITES 8

struct harness {
	struct isth_topo *t;
	struct isth_wan_sitemap map;
	struct isth_wan_groups groups;
	struct isth_wan_impair *imp;
	struct isth_wan *w;
	struct rte_mempool *pool;
	int n;
	struct rte_ring *to_wan[H_MAX_SITES];
	struct rte_ring *from_wan[H_MAX_SITES];
	int port[H_MAX_SITES];
	bool started[H_MAX_SITES];
	char err[512];
};

/* Set before h_create(): decrement the TTL on every link. */
extern bool h_opt_decrement_ttl;
/* Set before h_create(): the schedule whose routes the emulator follows
 * (NULL: shortest paths) and the clock time of its round 0. */
extern const struct isth_sched *h_opt_sched;
extern uint64_t h_opt_epoch_tsc;

/* EAL with the flags of doc/contributing.md; quiet. */
void h_eal_init(void);

/*
 * Build a topology from CSV text, ports for every site, a site map where
 * site i owns 10.0.i.0/24 with edge MAC 02:00:00:00:00:(i+1) and emulator
 * MAC 02:00:00:00:ff:(i+1), and an emulator. @p groups_text may be NULL,
 * @p specs is a NULL-terminated list of impairment specs (may be NULL).
 * @p hz 0 means the real TSC. Returns 0 or -1 with h->err set.
 */
int
h_create(struct harness *h, const char *sites_csv, const char *links_csv, const char *groups_text,
	const char *const *specs, double scale, uint64_t seed, uint64_t hz, unsigned int nmbufs);
void h_destroy(struct harness *h);

/* Site index by name. */
int h_site(const struct harness *h, const char *name);
/* Directed link index by endpoint names, or -1. */
int h_dlink(const struct harness *h, const char *from, const char *to);

/* A UDP/IPv4 frame of exactly @p frame_len bytes from site @p s to @p dst_ip carrying @p seq. */
struct rte_mbuf *h_udp(struct harness *h, int s, uint32_t dst_ip, uint32_t seq, uint32_t frame_len);
/* 10.0.s.1 */
uint32_t h_ip(int s);
/* Queue @p m on site @p s's RX ring. 0 or -1. */
int h_inject(struct harness *h, int s, struct rte_mbuf *m);
/* Dequeue up to @p n frames the emulator sent to site @p s. */
unsigned int h_recv(struct harness *h, int s, struct rte_mbuf **m, unsigned int n);
/* Sequence number of a frame built by h_udp. */
uint32_t h_seq(const struct rte_mbuf *m);

#endif
