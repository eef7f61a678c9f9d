#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check doc/operator.md against the code, both ways.

Config keys come from the loader itself: `isthmusd --config-keys` runs
app/isthmusd/config.c's load() with lib/conf recording every key its
readers ask for (section, key, type, default, range). Counter names come
from the code's own lists (ISTHD_COUNTERS, the drop reasons, lib/pace,
lib/resend, libisthmus), printed by tests/operator_doc/names.c.

doc/operator.md marks each checked table with an HTML comment on the line
before it: `<!-- operator-doc: config -->` (columns Section, Key, Type,
Default, Range, Meaning) and `<!-- operator-doc: GROUP -->` for a counter
group of names.c (first column: the name in backticks). A row's default is
compared unless it names another key (a backticked `[section]`, a default
that follows that key); the range is compared for u64, size, duration and
rate keys; an enum's Meaning must name each of its values in backticks.

  check-operator-doc.py --doc doc/operator.md --keys ISTHMUSD --names NAMES
        [--example conf/isthmusd/example.conf]

--example also checks that every key appears in that file as "key =",
set or commented out, under its [section].

Exit status: 0 in step, 1 a difference (each named, with the row to add,
remove or correct), 2 usage or a program that failed.
"""
import argparse
import re
import subprocess
import sys
from decimal import Decimal, InvalidOperation

MARK_RE = re.compile(r'^<!--\s*operator-doc:\s*([a-z_]+)\s*-->\s*$')
SECTION_REF_RE = re.compile(r'`\[[a-z]')
RANGED = {'u64', 'size', 'duration', 'rate'}
UNITS = {
    'duration': {'ns': 1, 'us': 1000, 'ms': 10**6, 's': 10**9},
    'size': {'': 1, 'B': 1, 'K': 1000, 'M': 1000**2, 'G': 1000**3, 'T': 1000**4,
             'KiB': 1024, 'MiB': 1024**2, 'GiB': 1024**3, 'TiB': 1024**4},
    'rate': {'bps': 1, 'Kbps': 1000, 'Mbps': 1000**2, 'Gbps': 1000**3, 'Tbps': 1000**4},
    'u64': {'': 1},
}
NUM_RE = re.compile(r'^(2\^\d+(?:\s*-\s*1)?|[0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$')


def die(msg):
    print(f'check-operator-doc: {msg}', file=sys.stderr)
    sys.exit(2)


def run(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except OSError as e:
        die(f'{argv[0]}: {e}')
    if r.returncode != 0:
        die(f'{" ".join(argv)} exited {r.returncode}:\n{r.stderr}')
    return [line.split('\t') for line in r.stdout.splitlines() if line.strip()]


def value(typ, text):
    """A default or range bound as the loader prints it (numbers as int)."""
    text = text.strip().strip('`').strip()
    if typ not in UNITS:
        return text
    m = NUM_RE.match(text)
    if not m:
        raise ValueError(f"'{text}' is not a {typ} (e.g. 20 ms, 64 MiB, 2^20, 8191)")
    num, unit = m.groups()
    if unit not in UNITS[typ] and not (num == '0' and unit == ''):
        raise ValueError(f"'{text}': unit '{unit}' is not one of {sorted(UNITS[typ])}")
    if num.startswith('2^'):
        base = num.replace(' ', '')
        n = 2 ** int(base[2:].split('-')[0]) - (1 if '-' in base else 0)
    else:
        try:
            n = Decimal(num)
        except InvalidOperation:
            raise ValueError(f"'{text}' is not a number")
    n = n * UNITS[typ].get(unit, 1)
    if n != int(n):
        raise ValueError(f"'{text}' is not a whole number of the base unit")
    return int(n)


def loader_value(typ, text):
    """A default as --config-keys prints it: numbers in the base unit."""
    if typ in UNITS and text not in ('required', 'none'):
        return int(text)
    return text


def tables(path):
    """{marker: [(line number, [cells])]} of every marked table in path."""
    out = {}
    with open(path) as f:
        lines = f.read().split('\n')
    i = 0
    while i < len(lines):
        m = MARK_RE.match(lines[i].strip())
        i += 1
        if not m:
            continue
        rows = out.setdefault(m.group(1), [])
        # header and |---| rule, then rows until a line not starting with |
        while i < len(lines) and not lines[i].startswith('|'):
            i += 1
        i += 2
        while i < len(lines) and lines[i].startswith('|'):
            cells = [c.strip() for c in lines[i].strip().strip('|').split('|')]
            rows.append((i + 1, cells))
            i += 1
    return out


def section_name(cell):
    return cell.strip('`').strip().lstrip('[').rstrip(']')


def show(typ, v):
    """A loader's number as this page writes it: 20 ms, 64 MiB, 2^20, 10 Gbps."""
    if not isinstance(v, int):
        return v
    steps = {'duration': [('s', 10**9), ('ms', 10**6), ('us', 1000), ('ns', 1)],
             'size': [('TiB', 1024**4), ('GiB', 1024**3), ('MiB', 1024**2), ('KiB', 1024)],
             'rate': [('Tbps', 1000**4), ('Gbps', 1000**3), ('Mbps', 1000**2),
                      ('Kbps', 1000), ('bps', 1)]}.get(typ, [])
    for unit, m in steps:
        if v and v % m == 0:
            return f'{v // m} {unit}'
    for n in range(16, 65):
        if v in (2**n, 2**n - 1):
            return f'2^{n}' + (' - 1' if v != 2**n else '')
    return str(v)


def show_range(typ, rng):
    if rng == '-':
        return ''
    lo, hi = (int(x) for x in rng.split('..'))
    return f'{show(typ, lo)}..{show(typ, hi)}'


def check_row(doc, line, sec, key, k, cells):
    """Type, default and range of one documented key against the loader's."""
    errs = []
    typ = cells[2].strip('`')
    if typ != k['type']:
        errs.append(f'{doc}:{line}: [{sec}] {key}: type says {typ}, the loader reads a '
                    f"{k['type']}: set the Type cell to {k['type']}")
    default = cells[3]
    if not SECTION_REF_RE.search(default):
        try:
            want = loader_value(k['type'], k['def'])
            got = value(k['type'], default) if default.strip('`') not in ('required', 'none') \
                else default.strip('`')
            if got != want:
                errs.append(f'{doc}:{line}: [{sec}] {key}: default says {default}, the loader'
                            f"'s is {show(k['type'], want)}: correct the Default cell")
        except ValueError as e:
            errs.append(f'{doc}:{line}: [{sec}] {key}: Default cell: {e}')
    for choice in k['choices'].split('|') if k['choices'] != '-' else []:
        if f'`{choice}`' not in cells[5]:
            errs.append(f'{doc}:{line}: [{sec}] {key}: the Meaning cell does not name '
                        f'`{choice}`, one of the loader\'s values ({k["choices"]})')
    rng = cells[4].strip('`')
    if k['range'] == '-':
        if rng not in ('', '-'):
            errs.append(f'{doc}:{line}: [{sec}] {key}: the loader checks no range for a '
                        f"{k['type']}: empty the Range cell")
        return errs
    lo, hi = (int(x) for x in k['range'].split('..'))
    try:
        a, b = rng.split('..')
        got = (value(k['type'], a), value(k['type'], b))
        if got != (lo, hi):
            errs.append(f'{doc}:{line}: [{sec}] {key}: range says {rng}, the loader\'s is '
                        f"{show_range(k['type'], k['range'])}: correct the Range cell")
    except ValueError as e:
        errs.append(f'{doc}:{line}: [{sec}] {key}: Range cell: {e} (want MIN..MAX)')
    return errs


def one_of(k):
    if k['choices'] == '-':
        return ''
    return ' (one of ' + ', '.join(f'`{c}`' for c in k['choices'].split('|')) + ')'


def check_config(doc, rows, keys):
    errs = []
    want = {(k['section'], k['key']): k for k in keys}
    seen = {}
    for line, cells in rows:
        if len(cells) < 6:
            errs.append(f'{doc}:{line}: config row has {len(cells)} cells, want 6 (Section, '
                        f'Key, Type, Default, Range, Meaning)')
            continue
        sec, key = section_name(cells[0]), cells[1].strip('`')
        if (sec, key) in seen:
            errs.append(f'{doc}:{line}: [{sec}] {key} documented twice (also line '
                        f'{seen[(sec, key)]})')
            continue
        seen[(sec, key)] = line
        k = want.get((sec, key))
        if k is None:
            errs.append(f'{doc}:{line}: [{sec}] {key} is documented but the loader reads no '
                        f'such key (isthmusd --config-keys): remove the row, or correct its '
                        f'section or key (a section read only when present must be in '
                        f'isthd_config_keys()\'s config, app/isthmusd/config.c)')
            continue
        errs += check_row(doc, line, sec, key, k, cells)
    last_of = {}
    for line, cells in rows:
        if len(cells) >= 6:
            last_of[section_name(cells[0])] = line
    for (sec, key), k in want.items():
        if (sec, key) in seen:
            continue
        typ = k['type']
        where = (f'after line {last_of[sec]} (the last [{sec}] row)' if sec in last_of
                 else 'at the end of the table (a new section)')
        errs.append(f"{doc}: config key [{sec}] {key} ({typ}, default {k['def']}) is "
                    f'read by the loader but not documented: add to the table under '
                    f'<!-- operator-doc: config -->, {where}:\n'
                    f"    | `[{sec}]` | `{key}` | {typ} | "
                    f"{show(typ, loader_value(typ, k['def']))} | "
                    f"{show_range(typ, k['range'])} | MEANING{one_of(k)} |")
    return errs


def check_counters(doc, group, rows, names):
    errs = []
    seen = {}
    for line, cells in rows:
        name = cells[0].strip('`')
        if name in seen:
            errs.append(f'{doc}:{line}: {group} counter {name} documented twice')
        seen[name] = line
        if name not in names:
            errs.append(f'{doc}:{line}: {group} counter {name} is documented but the code '
                        f'publishes no such counter: remove the row or correct the name')
    prev = None
    for name, help_ in names.items():
        if name in seen:
            prev = name
            continue
        # in the code's order: after the documented name before it
        where = (f'after the `{prev}` row (line {seen[prev]})' if prev
                 else 'as its first row')
        errs.append(f'{doc}: {group} counter {name} is published by the code but not '
                    f'documented: add to the table under <!-- operator-doc: {group} -->, '
                    f'{where}:\n'
                    f"    | `{name}` | {help_ or 'MEANING'} |")
    return errs


def check_example(path, keys):
    """Every key appears in path as 'key =' (or '# key =') under its section."""
    errs = []
    have = set()
    sec = None
    with open(path) as f:
        for line in f:
            s = line.strip()
            m = re.match(r'^#?\s*\[([^\]]+)\]', s)
            if m:
                sec = ' '.join(m.group(1).split())
                if sec.startswith('peer '):
                    sec = 'peer NAME'
                continue
            m = re.match(r'^#?\s*([a-z_0-9]+)\s*=', s)
            if m and sec is not None:
                have.add((sec, m.group(1)))
    for k in keys:
        if (k['section'], k['key']) not in have:
            errs.append(f"{path}: [{k['section']}] {k['key']} is read by the loader but does "
                        f"not appear (set, or as '# {k['key']} = "
                        f"{show(k['type'], loader_value(k['type'], k['def']))}') under "
                        f"[{k['section']}]")
    return errs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--doc', required=True)
    ap.add_argument('--keys', required=True, help='isthmusd (run with --config-keys)')
    ap.add_argument('--names', required=True, help="tests/operator_doc's names program")
    ap.add_argument('--example', help='a config file that shows every key')
    a = ap.parse_args()

    keys = [dict(zip(('section', 'key', 'type', 'def', 'range', 'choices'), r))
            for r in run([a.keys, '--config-keys'])]
    if not keys or any(len(k) != 6 for k in keys):
        die(f'{a.keys} --config-keys: no keys, or not 6 columns')
    groups = {}
    for r in run([a.names]):
        if len(r) != 3:
            die(f'{a.names}: line {r!r} is not group, name, help')
        groups.setdefault(r[0], {})[r[1]] = r[2].strip()
    try:
        doc = tables(a.doc)
    except OSError as e:
        die(str(e))

    errs = []
    for mark in ['config'] + sorted(groups):
        if mark not in doc:
            errs.append(f'{a.doc}: no table marked <!-- operator-doc: {mark} -->')
    for mark in sorted(set(doc) - set(groups) - {'config'}):
        errs.append(f'{a.doc}: table marked <!-- operator-doc: {mark} --> but the code has no '
                    f'counter group {mark} (groups: {", ".join(sorted(groups))})')
    if 'config' in doc:
        errs += check_config(a.doc, doc['config'], keys)
    for group, names in sorted(groups.items()):
        if group in doc:
            errs += check_counters(a.doc, group, doc[group], names)
    if a.example:
        errs += check_example(a.example, keys)
    for e in errs:
        print(e)
    n_names = sum(len(v) for v in groups.values())
    print(f'check-operator-doc: {len(keys)} config keys, {n_names} counters in '
          f'{len(groups)} groups: {len(errs)} difference(s)')
    return 1 if errs else 0


if __name__ == '__main__':
    sys.exit(main())
