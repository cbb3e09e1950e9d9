"""Streaming on-chip data past the node buffers (TANGRAM/nn_dataflow's bypass, kept consistent).

Inside a segment a layer's input may already sit in the node buffers
(forwarded from a producer, or fetched once for its siblings) and its weights
may be pinned there. A scheme that uses each such word exactly once from the
top (the feed rule: all its reuse is in the PE arrays, spatial or in the
registers) gains nothing from keeping a second copy of its blocks in its own
node level: the node level may *bypass* the tensor, and the PEs are fed from
the buffers that hold it. The cost model still charges that buffer read,
once per word its units use together (:mod:`kapla.model.traffic`: a forwarded
input and pinned weights alike), so the data are not free; what is saved is
each node's re-read of its own copy.

:func:`bypass_variants` lists a scheme's variants with the node level
bypassing any set of those tensors (their buffer sharing dropped: a level
cannot share what it does not hold); :func:`cheapest_bypass` keeps the best
valid one, or the scheme itself (:func:`bypass_costs` and :func:`cheapest`,
its two halves, for a caller that compares under several objectives).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from itertools import combinations

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import Kind, tensor_roles
from kapla.model.evaluate import LayerCost, evaluate
from kapla.model.feed import Feed
from kapla.model.hardware import node_level


def on_chip_kinds(scheme: LayerScheme, feed: Feed) -> tuple[Kind, ...]:
    """The tensors ``feed`` keeps whole in the node buffers that ``scheme`` reads:
    an input forwarded whole (not in part: the rest comes from DRAM) and pinned weights."""
    roles = [r for r in tensor_roles(scheme.layer, scheme.ifm_name) if not r.written]
    kinds = []
    if feed.ifm_hops is not None and feed.ifm_share == 1.0 and any(r.kind == Kind.IFM for r in roles):
        kinds.append(Kind.IFM)
    if feed.pinned and any(r.kind == Kind.WGT for r in roles):
        kinds.append(Kind.WGT)
    return tuple(kinds)


def bypass_variants(scheme: LayerScheme, arch: ArchSpec, feed: Feed) -> list[tuple[frozenset[Kind], LayerScheme]]:
    """``scheme`` with its node level bypassing each non-empty set of the on-chip
    tensors it still holds there (and sharing none of them)."""
    node = node_level(arch)
    if node is None or node >= len(scheme.levels):
        return []
    held = scheme.levels[node].bypass
    kinds = [k for k in on_chip_kinds(scheme, feed) if k not in held]
    chosen = [frozenset(c) for n in range(1, len(kinds) + 1) for c in combinations(kinds, n)]
    return [(byp, with_bypass(scheme, arch, byp)) for byp in chosen]


def cheapest_bypass(scheme: LayerScheme, arch: ArchSpec, feed: Feed, objective: str,
                    costed: Callable[[LayerScheme], LayerScheme] | None = None) -> frozenset[Kind]:
    """The on-chip tensors whose bypass at the node level makes ``scheme`` cheapest
    under ``objective`` on ``arch`` with ``feed`` (empty: keep it as it is, also on
    a tie). ``costed`` turns a variant into what is evaluated (a layer solve's
    scheme repeated over its segment's batch groups, say); the variant must be valid."""
    return cheapest(bypass_costs(scheme, arch, feed, costed), objective)


def bypass_costs(scheme: LayerScheme, arch: ArchSpec, feed: Feed,
                 costed: Callable[[LayerScheme], LayerScheme] | None = None
                 ) -> tuple[tuple[frozenset[Kind], LayerCost], ...]:
    """The cost of ``scheme`` (bypassing nothing more, first) and of each of its
    :func:`bypass_variants`, as :func:`cheapest_bypass` compares them: worked out
    once, they serve every objective (a layer's solves for several objectives
    mostly give one scheme)."""
    variants = bypass_variants(scheme, arch, feed)
    if not variants:
        return ()
    costed = costed or (lambda s: s)
    return tuple((byp, evaluate(costed(variant), arch, feed)) for byp, variant in [(frozenset(), scheme)] + variants)


def cheapest(costs: tuple[tuple[frozenset[Kind], LayerCost], ...], objective: str) -> frozenset[Kind]:
    """Of :func:`bypass_costs`, the bypass cheapest under ``objective`` (the first on a tie: none)."""
    if not costs:
        return frozenset()
    chosen, cost = costs[0]
    best = cost.objective(objective)
    for byp, cost in costs[1:]:
        value = cost.objective(objective)
        if value < best:
            best, chosen = value, byp
    return chosen


def with_bypass(scheme: LayerScheme, arch: ArchSpec, kinds: frozenset[Kind]) -> LayerScheme:
    """``scheme`` with its node level bypassing ``kinds`` (itself if none)."""
    if not kinds:
        return scheme
    node = node_level(arch)
    assert node is not None
    level = scheme.levels[node]
    levels = list(scheme.levels)
    levels[node] = replace(level, bypass=level.bypass | kinds,
                           shr=tuple((k, s) for k, s in level.shr if k not in kinds))
    return replace(scheme, levels=tuple(levels))


__all__ = ["bypass_costs", "bypass_variants", "cheapest", "cheapest_bypass", "on_chip_kinds", "with_bypass"]
