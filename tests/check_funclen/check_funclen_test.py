#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""scripts/check-funclen.py on fixtures written here: a function of 121
body-and-brace lines fails and one of 120 passes, main() is allowed 150,
and a "long:" comment above a function exempts it.

  check_funclen_test.py SOURCE_ROOT
"""
import os
import subprocess
import sys
import tempfile


def write(path, text_lines):
    with open(path, 'w') as f:
        f.write('\n'.join(text_lines) + '\n')


def define(name, n, comment=None):
    # name line + '{' + (n - 3) statements + '}' = n lines
    head = [f'/* {comment} */'] if comment else []
    return head + ['int', f'{name}(void)', '{'] + ['\tdo_it();'] * (n - 3) + ['}', '']


def run(script, path):
    return subprocess.run([sys.executable, script, path], capture_output=True, text=True)


def main():
    script = os.path.join(sys.argv[1], 'scripts', 'check-funclen.py')
    fails = 0
    cases = [
        ('120 lines', define('f', 120), 0),
        ('121 lines', define('f', 121), 1),
        ('main 150', define('main', 150), 0),
        ('main 151', define('main', 151), 1),
        ('121 with long:', define('f', 121, 'long: the per-burst loop, whole'), 0),
        ('121 with another comment', define('f', 121, 'the per-burst loop'), 1),
    ]
    with tempfile.TemporaryDirectory() as d:
        for label, lines, want in cases:
            p = os.path.join(d, 'fixture.c')
            write(p, lines)
            r = run(script, p)
            ok = r.returncode == want
            print(('ok' if ok else 'FAIL') + f': {label}: exit {r.returncode}, want {want}:'
                  f' {r.stdout.strip()}')
            fails += not ok
    print(f'check-funclen-self: {len(cases) - fails} of {len(cases)} cases as expected')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
