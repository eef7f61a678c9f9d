#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Deterministic synthetic WAN of N sites for the planner (default 64).

Cities are drawn on a sphere around eight region centres (the continents'
data-centre areas), eight per region, from Python's seeded Mersenne Twister
(random.Random(seed): the same sites and links on every Python 3). Links:
inside a region, its minimum spanning tree by distance plus each site's
nearest non-tree neighbour (metro and national fibre, 100, 200 or 400
Gbit/s); between regions, the closest site pair of each listed region pair
(a long-haul or submarine cable, 100 Gbit/s), two pairs for the busiest
routes. One-way latency: great-circle distance at 204 km/ms (light in
fibre) times a route inflation of 1.5, plus 0.2 ms of equipment.

  gen_topology.py [--seed N] [--sites FILE] [--links FILE]

conf/topologies/sixty-four-site-{sites,links}.csv are its output with the
defaults (seed 64); tests/plan/cli_test.sh checks they still are.
"""
import argparse
import math
import random

REGIONS = [  # code, centre latitude, longitude, spread in degrees
    ("NAE", 40.0, -77.0, 5.0),
    ("NAW", 38.0, -118.0, 5.0),
    ("SAM", -18.0, -52.0, 7.0),
    ("EUR", 50.0, 6.0, 5.0),
    ("AFR", -2.0, 22.0, 9.0),
    ("MEI", 22.0, 68.0, 7.0),
    ("EAS", 32.0, 122.0, 6.0),
    ("OCE", -30.0, 145.0, 6.0),
]
# region pairs joined by long-haul links; 2 = two distinct site pairs
CABLES = {
    ("NAE", "NAW"): 2, ("NAE", "EUR"): 2, ("NAE", "SAM"): 1, ("NAW", "EAS"): 2,
    ("NAW", "OCE"): 1, ("EUR", "AFR"): 1, ("EUR", "MEI"): 2, ("AFR", "SAM"): 1,
    ("AFR", "MEI"): 1, ("MEI", "EAS"): 2, ("EAS", "OCE"): 1,
}
KM_PER_MS = 204.0
INFLATION = 1.5
EQUIP_MS = 0.2


def gc_km(a, b):
    la1, lo1, la2, lo2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * 6371.0 * math.asin(min(1.0, math.sqrt(h)))


def latency(a, b):
    return round(gc_km(a, b) * INFLATION / KM_PER_MS + EQUIP_MS, 3)


def generate(seed, per_region):
    rng = random.Random(seed)
    sites = []  # (name, region, lat, lon)
    for code, la, lo, sd in REGIONS:
        for k in range(per_region):
            sites.append((f"{code}{k + 1}", code, max(-80.0, min(80.0, rng.gauss(la, sd))),
                          (rng.gauss(lo, sd) + 180.0) % 360.0 - 180.0))
    links = {}

    def add(i, j, cap, why):
        key = (min(i, j), max(i, j))
        if key not in links:
            links[key] = (cap, why)

    pos = [(s[2], s[3]) for s in sites]
    for code, *_ in REGIONS:
        mem = [i for i, s in enumerate(sites) if s[1] == code]
        # Prim's minimum spanning tree by distance
        done, rest = [mem[0]], set(mem[1:])
        while rest:
            i, j = min(((i, j) for i in done for j in rest), key=lambda e: gc_km(pos[e[0]], pos[e[1]]))
            add(i, j, rng.choice((100, 200, 400)), "regional fibre")
            done.append(j)
            rest.remove(j)
        for i in mem:
            near = sorted((j for j in mem if j != i and (min(i, j), max(i, j)) not in links),
                          key=lambda j: gc_km(pos[i], pos[j]))
            if near:
                add(i, near[0], rng.choice((100, 200, 400)), "regional fibre")
    for (ra, rb), count in CABLES.items():
        ma = [i for i, s in enumerate(sites) if s[1] == ra]
        mb = [i for i, s in enumerate(sites) if s[1] == rb]
        pairs = sorted(((i, j) for i in ma for j in mb), key=lambda e: gc_km(pos[e[0]], pos[e[1]]))
        used = set()
        for i, j in pairs:
            if count == 0:
                break
            if i in used or j in used:
                continue
            add(i, j, 100, "long-haul cable")
            used.update((i, j))
            count -= 1
    return sites, [(i, j, latency(pos[i], pos[j]), cap, why) for (i, j), (cap, why) in sorted(links.items())]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=64)
    ap.add_argument("--per-region", type=int, default=8, help="sites per region (8 regions)")
    ap.add_argument("--sites", default="/dev/stdout")
    ap.add_argument("--links", default="/dev/stdout")
    a = ap.parse_args()
    sites, links = generate(a.seed, a.per_region)
    n = len(sites)
    with open(a.sites, "w") as f:
        f.write(f"# Synthetic {n}-site WAN: tests/plan/gen_topology.py --seed {a.seed} "
                f"--per-region {a.per_region}.\n# Cities drawn around eight region centres; "
                "not measured data. Columns: site, region, position.\n")
        f.write("site,region,city\n")
        for name, region, la, lo in sites:
            f.write(f"{name},{region},{la:.2f}N {lo:.2f}E\n")
    with open(a.links, "w") as f:
        f.write(f"# Synthetic {n}-site WAN (tests/plan/gen_topology.py --seed {a.seed}): latency = "
                f"great-circle km * {INFLATION} / {KM_PER_MS} km/ms + {EQUIP_MS} ms.\n")
        f.write("a,b,one_way_ms,capacity_gbps,source\n")
        for i, j, lat, cap, why in links:
            f.write(f"{sites[i][0]},{sites[j][0]},{lat:.3f},{cap},{why}\n")


if __name__ == "__main__":
    main()
