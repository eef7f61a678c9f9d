#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""List C functions by length; fail on one longer than the tree allows.

A function is counted from the line that names it (DPDK style: the name at
column 0, the return type on the line before) to its closing brace at
column 0. The limits are doc/contributing.md's: main() at most 150 lines,
any other function at most 120, except a hot per-burst loop whose comment
just above its name says so with the word "long:" (why it stays whole).

  scripts/check-funclen.py                 check app/ and lib/
  scripts/check-funclen.py --list 80 lib   list functions of 80+ lines

Exit status: 0 within the limits, 1 a function over them (each listed as
file:line name, its length and its limit), 2 usage.
"""
import argparse
import os
import re
import sys

NAME_RE = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)\s*\(')


def functions(path):
    """(name, first line, length, exempt) of every function defined in path."""
    with open(path, errors='replace') as f:
        lines = f.read().split('\n')
    name = None
    start = None
    for i, line in enumerate(lines):
        m = NAME_RE.match(line)
        if m and start is None:
            name, nline = m.group(1), i
        if line.startswith('{') and name is not None and start is None:
            start = nline
        elif line.startswith('}') and start is not None:
            # the comment block above the return type may say "long:"
            j = start - 2
            exempt = False
            while j >= 0 and (lines[j].startswith((' *', '/*')) or lines[j].strip() == '*/'):
                if 'long:' in lines[j]:
                    exempt = True
                    break
                j -= 1
            yield name, start + 1, i - start + 1, exempt
            name = None
            start = None


def c_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in sorted(files):
                    if f.endswith('.c'):
                        yield os.path.join(root, f)
        elif p.endswith('.c'):
            yield p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog='\n'.join(__doc__.split('\n')[2:]))
    ap.add_argument('--list', type=int, metavar='N',
                    help='list every function of N lines or more, longest first, and exit 0')
    ap.add_argument('--main-max', type=int, default=150)
    ap.add_argument('--max', type=int, default=120)
    ap.add_argument('paths', nargs='*', help='files or directories (default: app lib)')
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = a.paths or [os.path.join(root, 'app'), os.path.join(root, 'lib')]
    rows = []
    for path in c_files(paths):
        rel = os.path.relpath(path, root)
        for name, line, n, exempt in functions(path):
            rows.append((n, rel, line, name, exempt))
    if a.list is not None:
        for n, rel, line, name, exempt in sorted(rows, reverse=True):
            if n >= a.list:
                print(f'{n:5d} {rel}:{line} {name}{" (long: exempt)" if exempt else ""}')
        return 0
    over = []
    for n, rel, line, name, exempt in rows:
        limit = a.main_max if name == 'main' else a.max
        if n > limit and not exempt:
            over.append(f'{rel}:{line} {name}: {n} lines, at most {limit}')
    for o in sorted(over):
        print(o)
    if over:
        print(f'check-funclen: {len(over)} function(s) over the limit '
              f'(doc/contributing.md; a hot loop may say "long: why" above it)')
        return 1
    print(f'check-funclen: {len(rows)} functions, none over {a.max} lines '
          f'(main: {a.main_max})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
