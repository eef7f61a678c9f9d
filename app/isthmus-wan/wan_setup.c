/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulator's set-up (control path): isth_wan_create() turns the
 * topology, the site map, the group table and the impairments into the
 * state the data path (wan.c) reads: links and their lanes, the
 * shortest-path trees, the planned trees of a schedule (build_routes()),
 * the LPM of the sites' prefixes and the sorted group table.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lpm.h>
#include <rte_mbuf.h>

#include "isth_sched.h"
#include "isth_text.h"

#include "wan_priv.h"
#include "wan_prng.h"

#define LANE_DEFAULT 16384

/*
 * Do the planned paths of island j's stream in cycle round r (next hops
 * per destination in @tab, j's clique as destinations) form a tree, every
 * site entered over one link? Where two of them part and meet again, a
 * multicast copy is split where they part and each part crosses the
 * shared links after the meeting site: two copies where the planner
 * (network replication, m_je in {0,1}) counted one, so the plan's link
 * loads would not be what runs. lib/plan keeps such routes trees and
 * refuses others (isth_plan_check()); a file that rejoins was not written
 * by it for network replication. With a group table (@multicast: the
 * edges send to groups, network replication) it is refused: -EINVAL, the
 * message naming round, sender and site on stderr. Without one the
 * streams are unicast (edge replication: one copy per destination, each
 * on its own path, where rejoining costs nothing the plan did not count),
 * so it is only a warning, and 0.
 */
static int
rejoins(const struct isth_wan *w, const struct isth_sched *sc, int r, int j, const int *site,
	const int16_t *tab, bool multicast)
{
	int n = w->n, ni = isth_sched_n_islands(sc), in[ISTH_WAN_MAX_SITES], i, v, hop;
	uint64_t cl = isth_sched_clique(sc, r, j);

	for (v = 0; v < n; v++)
		in[v] = -1;
	for (i = 0; i < ni; i++) {
		if (i == j || !(cl >> i & 1))
			continue;
		for (v = site[j], hop = 0; v != site[i] && hop < n; hop++) {
			int e = tab[v * n + site[i]], to;

			if (e < 0)
				break;
			to = w->links[e].to;
			if (in[to] >= 0 && in[to] != e) {
				fprintf(stderr,
					"isthmus-wan: %sschedule round %d: the planned paths of "
					"%s's stream rejoin at %s (entered from %s and from %s), "
					"so a multicast copy would cross the links after it "
					"twice%s\n",
					multicast ? "" : "warning: ", r,
					isth_sched_island_name(sc, j), isth_topo_name(w->t, to),
					isth_topo_name(w->t, w->links[in[to]].from),
					isth_topo_name(w->t, w->links[e].from),
					multicast ? "; refused with a group table (network "
						    "replication): not a tree"
						  : "; harmless for unicast fan-out (edge "
						    "replication)");
				return multicast ? -EINVAL : 0;
			}
			in[to] = e;
			v = to;
		}
	}
	return 0;
}

/*
 * Per-round routes from the schedule's 'route' lines (params.sched): for
 * each cycle round r and ingress site j whose planned paths differ from
 * the shortest ones, a tree (a copy of j's shortest-path table with the
 * planned next hops towards each routed destination) is appended to w->nh,
 * and rtree[r * n + j] names it; equal tables of one site are shared.
 * Next hops are per destination, as for shortest paths: a multicast copy
 * splits where the planned paths of its destinations part, so each link of
 * a tree carries it once; routes that part and meet again are refused with
 * @multicast (a group table) and warned of without (rejoins()). 0, -EINVAL
 * (a schedule island that is no site, a route over a pair of sites with no
 * link between them, or a rejoin with @multicast; the message goes to
 * stderr), or -ENOMEM.
 */
static int
build_routes(struct isth_wan *w, const struct isth_sched *sc, uint64_t epoch_tsc, bool multicast)
{
	int n = w->n, ni = isth_sched_n_islands(sc), r, j, i, k, e, np;
	int site[ISTH_WAN_MAX_SITES], hops[ISTH_WAN_MAX_SITES], path[ISTH_WAN_MAX_SITES];
	int16_t *lk = NULL, *tab = NULL;
	size_t tsz = (size_t)n * n;
	int ret = -ENOMEM;

	w->nrc = isth_sched_n_rounds(sc);
	w->round_cyc = (double)isth_sched_round_ns(sc) * 1e-9 * (double)w->hz;
	w->epoch_tsc = epoch_tsc;
	if (ni > n || w->nrc < 1 || !(w->round_cyc > 0))
		goto inval_msg;
	for (i = 0; i < ni; i++) {
		site[i] = isth_topo_find(w->t, isth_sched_island_name(sc, i));
		if (site[i] < 0) {
			fprintf(stderr,
				"isthmus-wan: schedule island %s is no site of the topology\n",
				isth_sched_island_name(sc, i));
			return -EINVAL;
		}
	}
	lk = malloc(tsz * sizeof(*lk));
	tab = malloc(tsz * sizeof(*tab));
	w->rtree = malloc((size_t)w->nrc * n * sizeof(*w->rtree));
	if (lk == NULL || tab == NULL || w->rtree == NULL)
		goto out;
	for (k = 0; k < (int)tsz; k++)
		lk[k] = -1;
	for (e = 0; e < w->ndl; e++)
		lk[w->links[e].from * n + w->links[e].to] = (int16_t)e;
	for (r = 0; r < w->nrc; r++) {
		for (k = 0; k < n; k++)
			w->rtree[(size_t)r * n + k] = k;
		for (j = 0; j < ni; j++) {
			int sj = site[j], changed = 0, tr;

			memcpy(tab, &w->nh[(size_t)sj * tsz], tsz * sizeof(*tab));
			for (i = 0; i < ni; i++) {
				if (i == j)
					continue;
				np = isth_sched_route(sc, r, j, i, hops, ISTH_WAN_MAX_SITES);
				if (np == -ENOENT)
					continue;
				if (np < 2)
					goto inval_msg;
				for (k = 0; k + 1 < np; k++) {
					int a = site[hops[k]], b = site[hops[k + 1]];

					if (lk[a * n + b] < 0) {
						fprintf(stderr,
							"isthmus-wan: schedule round %d route "
							"%s->%s: no "
							"link %s->%s in the topology\n",
							r, isth_sched_island_name(sc, j),
							isth_sched_island_name(sc, i),
							isth_topo_name(w->t, a),
							isth_topo_name(w->t, b));
						ret = -EINVAL;
						goto out;
					}
					path[k] = lk[a * n + b];
					changed |= tab[a * n + site[i]] != path[k];
					tab[a * n + site[i]] = (int16_t)path[k];
				}
			}
			if (rejoins(w, sc, r, j, site, tab, multicast) < 0) {
				ret = -EINVAL;
				goto out;
			}
			if (!changed)
				continue;
			/* share a table equal to one already built for this site */
			for (tr = n; tr < w->ntrees; tr++)
				if (w->tree_site[tr] == sj &&
					memcmp(&w->nh[(size_t)tr * tsz], tab, tsz * sizeof(*tab)) ==
						0)
					break;
			if (tr == w->ntrees) {
				int16_t *nh = realloc(w->nh, (size_t)(tr + 1) * tsz * sizeof(*nh));
				int *ts = realloc(w->tree_site, (size_t)(tr + 1) * sizeof(*ts));

				if (nh != NULL)
					w->nh = nh;
				if (ts != NULL)
					w->tree_site = ts;
				if (nh == NULL || ts == NULL)
					goto out;
				memcpy(&w->nh[(size_t)tr * tsz], tab, tsz * sizeof(*tab));
				w->tree_site[tr] = sj;
				w->ntrees++;
			}
			w->rtree[(size_t)r * n + sj] = tr;
		}
	}
	ret = 0;
	goto out;
inval_msg:
	fprintf(stderr, "isthmus-wan: schedule does not fit the topology\n");
	ret = -EINVAL;
out:
	free(lk);
	free(tab);
	return ret;
}

int
isth_wan_port_lookup(const char *dev, uint16_t *port)
{
	uint64_t v;

	if (rte_eth_dev_get_port_by_name(dev, port) == 0)
		return 0;
	if (isth_text_parse_u64_range(dev, 0, RTE_MAX_ETHPORTS - 1, &v) == 0 &&
		rte_eth_dev_is_valid_port((uint16_t)v)) {
		*port = (uint16_t)v;
		return 0;
	}
	return -ENODEV;
}

static int
cmp_group(const void *a, const void *b)
{
	const struct isth_wan_group *x = a, *y = b;

	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

void
isth_wan_free(struct isth_wan *w)
{
	int e, k, s;

	if (w == NULL)
		return;
	/* the caller has stopped polling; telemetry may still be asked */
	wan_telemetry_forget(w);
	for (e = 0; w->links != NULL && e < w->ndl; e++) {
		for (k = 0; k < LANES; k++) {
			struct lane *l = &w->links[e].lane[k];

			if (l->ring == NULL)
				continue;
			for (; l->head != l->tail; l->head++)
				rte_pktmbuf_free(l->ring[l->head & l->mask].m);
			free(l->ring);
		}
	}
	for (s = 0; s < ISTH_WAN_MAX_SITES; s++)
		for (k = 0; k < w->site[s].ntx; k++)
			rte_pktmbuf_free(w->site[s].txb[k]);
	rte_lpm_free(w->lpm);
	free(w->links);
	free(w->heap);
	free(w->nh);
	free(w->tree_site);
	free(w->rtree);
	free(w->group_ip);
	free(w->group_members);
	free(w);
}

/*
 * What isth_wan_create() refuses before it allocates anything: bad
 * arguments (EINVAL) and a site whose port does not resolve (ENODEV).
 * @return 0, or the rte_errno value.
 */
static int
check_args(const struct isth_topo *t, const struct isth_wan_sitemap *map,
	const struct isth_wan_groups *groups, const struct isth_wan_impair *imp,
	const struct isth_wan_params *p)
{
	int n, ndl, s;

	if (t == NULL || map == NULL || imp == NULL || p == NULL || p->pool == NULL ||
		!(p->scale > 0) || !isfinite(p->scale) ||
		(p->lane_entries != 0 && !rte_is_power_of_2(p->lane_entries)) ||
		(groups != NULL && (groups->n < 0 || groups->n > ISTH_WAN_MAX_GROUPS)))
		return EINVAL;
	n = isth_topo_n(t);
	ndl = isth_topo_ndlinks(t);
	if (n < 2 || n > ISTH_WAN_MAX_SITES || ndl < 2 || ndl > INT16_MAX)
		return EINVAL;
	for (s = 0; s < n; s++) {
		const struct isth_wan_site_conf *sc = &map->site[s];
		uint16_t port;

		if (!sc->present)
			continue;
		if (sc->nnets < 1 || sc->nnets > ISTH_WAN_MAX_NETS)
			return EINVAL;
		if (isth_wan_port_lookup(sc->dev, &port) < 0)
			return ENODEV;
	}
	return 0;
}

/*
 * Every directed link: delays and capacity in cycles of the poll clock,
 * queue limits, its own PRNG stream (seed, link index) and its lanes of
 * @p lanes entries each. @return 0 or -ENOMEM.
 */
static int
links_init(struct isth_wan *w, const struct isth_wan_impair *imp, const struct isth_wan_params *p,
	uint32_t lanes)
{
	int e, k;

	for (e = 0; e < w->ndl; e++) {
		struct link *L = &w->links[e];
		double lat_ms, cap_bps;

		isth_topo_dlink(w->t, e, &L->from, &L->to, &lat_ms, &cap_bps);
		L->imp = imp[e];
		L->lat_cyc = lat_ms * 1e-3 * (double)w->hz;
		L->cyc_per_byte = 8.0 * (double)w->hz / (cap_bps / p->scale);
		L->jitter_cyc = imp[e].jitter_ms * 1e-3 * (double)w->hz;
		L->reorder_cyc = imp[e].reorder_ms * 1e-3 * (double)w->hz;
		L->qlimit = imp[e].queue_bytes;
		L->pqlimit = imp[e].prio_queue_bytes;
		wan_prng_seed(L->rng, p->seed, (uint64_t)e);
		isth_topo_dlink_name(w->t, e, L->name, sizeof(L->name));
		for (k = 0; k < LANES; k++) {
			L->lane[k].ring = calloc(lanes, sizeof(struct ent));
			if (L->lane[k].ring == NULL)
				return -ENOMEM;
			L->lane[k].mask = lanes - 1;
			L->lane[k].hpos = -1;
			L->lane[k].link = e;
		}
	}
	return 0;
}

/*
 * Trees 0..n-1 of w->nh: tree s holds the shortest-latency paths
 * (lib/topo) from ingress site s, as the next link out of every node
 * towards every destination. Planned trees (build_routes()) come after.
 * @return 0 or -ENOMEM.
 */
static int
shortest_trees(struct isth_wan *w)
{
	int path[ISTH_WAN_MAX_SITES], n = w->n, s, d, k, np, i;

	w->tree_site = malloc((size_t)n * sizeof(*w->tree_site));
	if (w->tree_site == NULL)
		return -ENOMEM;
	w->ntrees = n;
	for (s = 0; s < n; s++)
		w->tree_site[s] = s;
	for (i = 0; i < n * n * n; i++)
		w->nh[i] = -1;
	for (s = 0; s < n; s++) {
		for (d = 0; d < n; d++) {
			int v = s;

			if (d == s)
				continue;
			np = isth_topo_path(w->t, s, d, path, ISTH_WAN_MAX_SITES);
			for (k = 0; k < np; k++) {
				w->nh[((size_t)s * n + v) * n + d] = (int16_t)path[k];
				v = w->links[path[k]].to;
			}
		}
	}
	return 0;
}

/*
 * The sites with a port: port, MACs, prefixes, and the LPM that maps a
 * unicast destination to its site. @return 0, -EINVAL (no MAC for the
 * port) or the LPM's negative errno.
 */
static int
sites_init(struct isth_wan *w, const struct isth_wan_sitemap *map)
{
	static unsigned int instance;
	struct rte_lpm_config lc = {.max_rules = ISTH_WAN_MAX_SITES * ISTH_WAN_MAX_NETS,
		.number_tbl8s = ISTH_WAN_MAX_SITES * ISTH_WAN_MAX_NETS};
	char name[RTE_LPM_NAMESIZE];
	int s, k, err;

	snprintf(name, sizeof(name), "isth_wan_%u", instance++);
	w->lpm = rte_lpm_create(name, SOCKET_ID_ANY, &lc);
	if (w->lpm == NULL)
		return rte_errno != 0 ? -rte_errno : -ENOMEM;
	for (s = 0; s < w->n; s++) {
		const struct isth_wan_site_conf *sc = &map->site[s];
		struct site *S = &w->site[s];

		if (!sc->present)
			continue;
		S->present = true;
		isth_wan_port_lookup(sc->dev, &S->port);
		S->mac_learn = sc->mac_learn;
		S->mac_known = !sc->mac_learn;
		memcpy(S->mac.addr_bytes, sc->mac, 6);
		if (sc->gw_mac_set)
			memcpy(S->gw_mac.addr_bytes, sc->gw_mac, 6);
		else if (rte_eth_macaddr_get(S->port, &S->gw_mac) != 0)
			return -EINVAL;
		S->gw_ip = sc->gw_ip;
		S->nnets = sc->nnets;
		for (k = 0; k < sc->nnets; k++) {
			S->mask[k] = sc->plen[k] == 32 ? UINT32_MAX : ~(UINT32_MAX >> sc->plen[k]);
			S->net[k] = sc->net[k] & S->mask[k];
			err = rte_lpm_add(w->lpm, S->net[k], sc->plen[k], (uint32_t)s);
			if (err < 0)
				return err;
		}
	}
	return 0;
}

/*
 * The group table, sorted by address for the data path's binary search;
 * members without a port are left out (they cannot receive).
 * @return 0, -EINVAL (a group twice) or -ENOMEM.
 */
static int
groups_init(struct isth_wan *w, const struct isth_wan_sitemap *map,
	const struct isth_wan_groups *groups)
{
	struct isth_wan_group *sorted;
	int i, s, rc = 0;

	sorted = malloc(groups->n * sizeof(*sorted));
	w->group_ip = malloc(groups->n * sizeof(*w->group_ip));
	w->group_members = malloc(groups->n * sizeof(*w->group_members));
	if (sorted == NULL || w->group_ip == NULL || w->group_members == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(sorted, groups->g, groups->n * sizeof(*sorted));
	qsort(sorted, groups->n, sizeof(*sorted), cmp_group);
	for (i = 0; i < groups->n; i++) {
		if (i > 0 && sorted[i].ip == sorted[i - 1].ip) {
			rc = -EINVAL;
			goto out;
		}
		w->group_ip[i] = sorted[i].ip;
		w->group_members[i] = 0;
		for (s = 0; s < w->n; s++)
			if ((sorted[i].members >> s & 1) && map->site[s].present)
				w->group_members[i] |= UINT64_C(1) << s;
	}
	w->ngroups = groups->n;
out:
	free(sorted);
	return rc;
}

struct isth_wan *
isth_wan_create(const struct isth_topo *t, const struct isth_wan_sitemap *map,
	const struct isth_wan_groups *groups, const struct isth_wan_impair *imp,
	const struct isth_wan_params *p)
{
	bool multicast = groups != NULL && groups->n > 0;
	struct isth_wan *w;
	int n, ndl, rc;

	rc = check_args(t, map, groups, imp, p);
	if (rc != 0) {
		rte_errno = rc;
		return NULL;
	}
	n = isth_topo_n(t);
	ndl = isth_topo_ndlinks(t);
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	w->t = t;
	w->n = n;
	w->ndl = ndl;
	w->hz = p->tsc_hz ? p->tsc_hz : rte_get_tsc_hz();
	w->dec_ttl = p->decrement_ttl;
	w->pool = p->pool;
	w->links = calloc(ndl, sizeof(*w->links));
	w->heap = calloc((size_t)ndl * LANES, sizeof(*w->heap));
	w->nh = malloc((size_t)n * n * n * sizeof(*w->nh));
	if (w->links == NULL || w->heap == NULL || w->nh == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = links_init(w, imp, p, p->lane_entries ? p->lane_entries : LANE_DEFAULT);
	if (rc == 0)
		rc = shortest_trees(w);
	if (rc == 0 && p->sched != NULL)
		rc = build_routes(w, p->sched, p->epoch_tsc, multicast);
	if (rc == 0)
		rc = sites_init(w, map);
	if (rc == 0 && multicast)
		rc = groups_init(w, map, groups);
	if (rc < 0) {
		isth_wan_free(w);
		rte_errno = -rc;
		return NULL;
	}
	return w;
}

uint64_t
isth_wan_hz(const struct isth_wan *w)
{
	return w->hz;
}

const struct isth_topo *
isth_wan_topo(const struct isth_wan *w)
{
	return w->t;
}

int
isth_wan_site_port(const struct isth_wan *w, int s)
{
	if (w == NULL || s < 0 || s >= w->n || !w->site[s].present)
		return -ENODEV;
	return w->site[s].port;
}
