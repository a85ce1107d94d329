"""The garbage collector's settings for this package's processes.

A large purge or policy run makes hundreds of thousands of small objects (an entry, a
dict and a line per partition), and CPython's default thresholds then run a full
collection several times a run, each walking everything the process holds: Kopf, the
Kubernetes client and every imported module. A purge of 10,000 partitions spent 0.3-0.5
CPU-s of its 1.2-1.4 in the collector (`kafka-retention purge`, measured with
gc.callbacks on the local stack), on a machine whose brokers were at the same moment
busy with the delete. Frozen start-up objects are never walked again; a larger first
threshold makes the young collections rarer. Cycles are still collected.
"""

from __future__ import annotations

import gc

# Allocations (net of frees) between young collections; CPython's default is 700.
YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """Call once start-up is done: what exists now is kept out of every later collection,
    and young collections run every YOUNG_THRESHOLD allocations."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
