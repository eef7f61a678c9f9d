#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""scripts/check-operator-doc.py on fixtures written here: a doc in step
with a fake loader's keys and a fake counter list passes; a key or counter
missing from the doc, a stale row, a wrong type, default or range, an
enum value the row does not name, a missing table, and (with --example) a key absent from the example fail,
each naming the item.

  check_operator_doc_test.py SOURCE_ROOT
"""
import os
import subprocess
import sys
import tempfile

KEYS = [
    'sec\ta\tu64\t8\t1..64\t-',
    'sec\tb\tduration\t20000000\t0..10000000000\t-',
    'sec\tc\tstr\tnone\t-\t-',
    'sec\td\tenum\tedge\t-\tedge|network',
    'peer NAME\tport\tu64\t9471\t1..65535\t-',
]
NAMES = ['g\tone\thelp one', 'g\ttwo\thelp two']
CONFIG_ROWS = [
    '| `[sec]` | `a` | u64 | 8 | 1..64 | x |',
    '| `[sec]` | `b` | duration | 20 ms | 0..10 s | x |',
    '| `[sec]` | `c` | str | none |  | x |',
    '| `[sec]` | `d` | enum | `edge` |  | `edge` or `network` |',
    # a default that follows another key is not compared
    '| `[peer NAME]` | `port` | u64 | as `[sec] a` | 1..2^16 - 1 | x |',
]
COUNTER_ROWS = ['| `one` | x |', '| `two` | x |']
EXAMPLE = '[sec]\na = 8\n# b = 20ms\n# c = x\nd = network\n[peer HKG]\n# port = 9471\n'


def doc(config_rows=CONFIG_ROWS, counter_rows=COUNTER_ROWS, marks=('config', 'g')):
    out = ['# fixture', '']
    if 'config' in marks:
        out += ['<!-- operator-doc: config -->', '| Section | Key | Type | Default | Range '
                '| Meaning |', '|---|---|---|---|---|---|'] + config_rows + ['']
    if 'g' in marks:
        out += ['<!-- operator-doc: g -->', '| Name | Meaning |', '|---|---|'] + \
            counter_rows + ['']
    return '\n'.join(out)


def program(path, lines):
    """A fake isthmusd (--config-keys) or names program printing lines."""
    with open(path, 'w') as f:
        f.write('#!/bin/sh\ncat <<"EOF"\n' + '\n'.join(lines) + '\nEOF\n')
    os.chmod(path, 0o755)


def main():
    script = os.path.join(sys.argv[1], 'scripts', 'check-operator-doc.py')
    drop = lambda rows, i: rows[:i] + rows[i + 1:]
    swap = lambda rows, i, new: rows[:i] + [new] + rows[i + 1:]
    # (label, doc text, example text or None, exit wanted, text the output must hold)
    cases = [
        ('in step', doc(), None, 0, '0 difference(s)'),
        ('key missing', doc(config_rows=drop(CONFIG_ROWS, 1)), None, 1,
         '| `[sec]` | `b` | duration | 20 ms | 0..10 s | MEANING |'),
        ('stale key row', doc(config_rows=CONFIG_ROWS + ['| `[sec]` | `gone` | u64 | 1 | '
                                                         '0..1 | x |']), None, 1,
         '[sec] gone is documented but the loader reads no such key'),
        ('wrong type', doc(config_rows=swap(CONFIG_ROWS, 0, '| `[sec]` | `a` | size | 8 | '
                                            '1..64 | x |')), None, 1,
         'set the Type cell to u64'),
        ('wrong default', doc(config_rows=swap(CONFIG_ROWS, 1, '| `[sec]` | `b` | duration | '
                                               '2 ms | 0..10 s | x |')), None, 1,
         "the loader's is 20 ms"),
        ('wrong range', doc(config_rows=swap(CONFIG_ROWS, 0, '| `[sec]` | `a` | u64 | 8 | '
                                             '1..63 | x |')), None, 1,
         "the loader's is 1..64"),
        ('enum value not named', doc(config_rows=swap(CONFIG_ROWS, 3, '| `[sec]` | `d` | enum '
                                                      '| `edge` |  | `edge` or multicast |')),
         None, 1, 'does not name `network`'),
        ('counter missing', doc(counter_rows=COUNTER_ROWS[:1]), None, 1,
         '| `two` | help two |'),
        ('stale counter row', doc(counter_rows=COUNTER_ROWS + ['| `three` | x |']), None, 1,
         'g counter three is documented but the code publishes no such counter'),
        ('table missing', doc(marks=('config',)), None, 1,
         'no table marked <!-- operator-doc: g -->'),
        ('example has every key', doc(), EXAMPLE, 0, '0 difference(s)'),
        ('example lacks a key', doc(), EXAMPLE.replace('# b = 20ms\n', ''), 1,
         '[sec] b is read by the loader but does not appear'),
    ]
    fails = 0
    with tempfile.TemporaryDirectory() as d:
        keys, names = os.path.join(d, 'isthmusd'), os.path.join(d, 'names')
        program(keys, KEYS)
        program(names, NAMES)
        for label, text, example, want, needle in cases:
            path = os.path.join(d, 'operator.md')
            with open(path, 'w') as f:
                f.write(text)
            argv = [sys.executable, script, '--doc', path, '--keys', keys, '--names', names]
            if example is not None:
                ex = os.path.join(d, 'example.conf')
                with open(ex, 'w') as f:
                    f.write(example)
                argv += ['--example', ex]
            r = subprocess.run(argv, capture_output=True, text=True)
            ok = r.returncode == want and needle in r.stdout
            print(('ok' if ok else 'FAIL') + f': {label}: exit {r.returncode}, want {want}'
                  + ('' if needle in r.stdout else f', output lacks {needle!r}'))
            if not ok:
                print(r.stdout + r.stderr)
            fails += not ok
    print(f'check-operator-doc-self: {len(cases) - fails} of {len(cases)} cases as expected')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
