# SPDX-License-Identifier: BSD-3-Clause
"""isthmus: the island side of isthmus for Python training jobs.

A :class:`Session` is one island's connection to its edge (isthmusd), a
thin binding of libisthmus (lib/island, doc/island.md)::

    import numpy as np, isthmus

    with isthmus.Session(job=1, island=2, n_islands=9, elems=n,
                         edge=("10.10.0.1", 9471), dtype="bf16",
                         key_file="/etc/isthmus/job1.keys") as s:
        r = s.wait_round()                  # the edge's ROUND
        s.send(r.round, params)             # float32 (rounded to bf16) or bf16
        out = np.empty(n, np.float32)
        res = s.result(r.round, out)        # clique sum, in place
        mean = out / res.bitmap.bit_count() if res.complete else ...

Arrays cross without a copy: NumPy arrays and anything else with the buffer
protocol, and contiguous CPU torch tensors. Blocking calls release the GIL.
Errors are :class:`Error` (an ``OSError``: ``errno`` and the library's
reason), :class:`Timeout` when nothing came in time, saying what arrived
instead if anything did (another source address or port, wire version,
key, job or island). ``edge`` is required, and so is one of ``key_file``,
the job's key file (wire version 2, every packet authenticated), and
``auth=False`` (version 1, no authentication, labs only; warns once).
The session binds ``("0.0.0.0", DEFAULT_PORT)``, where isthmusd sends by
default (``[access] island_port``), unless given ``bind=``, and collects
a round for one period past its deadline unless given ``grace=``.
``sockets=N`` sends each round over N sockets and threads (chunk ranges),
``gso=True``/``gro=True`` turn on UDP segmentation and receive offload
(doc/island.md, "GSO, GRO and several sockets"); ``rx_threads=True``
receives on every socket, a thread each, AGG stream k on socket k % N
(the edge's ``[access] island_sockets`` must be N). ``hosts=K, host=k``
makes the session host k of an island of K hosts (processes with their
own addresses): it owns chunk ids ``[k*C//K, (k+1)*C//K)`` of every round
of ``C = n_chunks`` chunks, and ``send()`` takes and ``result()`` writes
only that range's elements, ``first, count = s.elem_range``::

    first, count = s.elem_range
    s.send(r.round, params[first:first + count])
    res = s.result(r.round, out[first:first + count])

(doc/island.md, "An island of K hosts"). ``isthmus.torch`` has
a parameter averager for PyTorch (doc/training.md).
"""
from ._isthmus import (DEFAULT_PORT, ROUNDS_KEPT, VERSION, Error, Result,
                       Round, Session, Timeout, bf16_round)

#: The version the binding was built as, the same string every isthmus
#: binary prints for --version: "0.1.0 (git 0123456789ab)".
__version__ = VERSION


def popcount(x):
    """Number of contributors in a bitmap."""
    return bin(x).count("1")


def members(x):
    """Island ids in a bitmap, in increasing order."""
    return [i for i in range(64) if x >> i & 1]


__all__ = ["Session", "Result", "Round", "Error", "Timeout", "ROUNDS_KEPT",
           "DEFAULT_PORT", "bf16_round", "popcount", "members"]
