"""When Python's cycle collector runs during a schedule.

A network search makes millions of short-lived containers (chains, estimates,
a layer solve's candidate arrays and dictionaries) beside hundreds of
thousands of long-lived ones (inter-layer schemes, cached solves). Left to its
defaults, the collector walks the young ones every 700 allocations and, every
hundred or so such walks, every long-lived object of the process too: about a
tenth of a layer solve's time (measured over 400 solves of GoogLeNet's
training DAG) and a quarter of the parent's time outside the solves (ResNet-152's
training DAG). Reference counting frees almost everything a search makes; the
collector is only needed for the few cycles, which these scopes still collect.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Young-generation collections between two full ones while a search runs (Python's default: 10).
#: A full collection walks every scheme and cache the search keeps: at 100, ResNet-1001's training
#: DAG made five, 0.73 of its parent's 5.9 CPU s; at 1,000 one or none (gc 1.0 -> 0.4 s), with the
#: same peak memory (275 -> 278 MiB)
SEARCH_FULL_EVERY = 1000


@contextmanager
def paused() -> Iterator[None]:
    """The collector off while the block runs (one layer solve), and the young
    generations collected after it: what the block left in cycles is young
    then, so memory stays bounded. A caller who turned it off keeps it off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(1)


@contextmanager
def rare_full_collections(every: int = SEARCH_FULL_EVERY) -> Iterator[None]:
    """Full collections ``every`` young ones at most while the block runs (a
    network search, whose long-lived objects a full collection walks), the
    thresholds as they were after it."""
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], max(before[2], every))
    try:
        yield
    finally:
        gc.set_threshold(*before)


__all__ = ["SEARCH_FULL_EVERY", "paused", "rare_full_collections"]
