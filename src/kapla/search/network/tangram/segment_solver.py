"""Solving a segment's layers with an intra-layer solver, and costing the segment.

:class:`SegmentSolver` turns an :class:`~kapla.space.network.inter.InterScheme` into a
:class:`~kapla.dataflow.segment.SegmentScheme` and its cost: each layer is
solved on its region for where its data come from and go to, with the buffer
space left beside pinned weights and the forwarded fmap piece that waits in
its region, then repeated over the batch groups
(:func:`~kapla.space.network.inter.scheme_in_segment`).
Layer solves go through the run's layer service (cached for the whole
network search, kept on disk if a store is open, solved in worker processes),
keyed by :class:`LayerKey`: a layer solve depends on its shape, region, feed
and reserve, not on the segment around it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.segment import LayerPlacement, SegmentScheme
from kapla.dataflow.tensors import Kind
from kapla.memo import copied, kept_hash, without_kept_hash
from kapla.model.evaluate import Feed
from kapla.model.hardware import with_node_reserve
from kapla.model.segment import SegmentCost, SegmentMemo, block_arch, costed_like, evaluate_segment, forwarded_words
from kapla.search.base import Check, LayerProgress, LayerService, Problem
from kapla.space.layer.bypass import bypass_costs, cheapest, on_chip_kinds, with_bypass
from kapla.space.network.inter import InterScheme, feed_of, outer_batch, placements, scheme_in_segment, structure
from kapla.workload.layer import Layer, shape_key
from kapla.workload.network import Network


@dataclass(frozen=True)
class LayerKey:
    """What a layer's scheme in a segment depends on (the cache key of a layer solve)."""

    layer: Layer  # its shape (:func:`shape_key`)
    batch: int  # one batch group
    region: tuple[int, int]  # rows x columns of nodes (a folded region's stripe height x columns)
    feed: Feed  # where its data come from and go to (the on-chip hop distance left out)
    reserve: tuple[tuple[str, int], ...]  # buffer words per node that are not its own, by tensor

    # looked up in a cache per objective for every layer of every segment variant costed
    # (ResNet-1001's training DAG: 600,000 times)
    __hash__ = kept_hash
    __getstate__ = without_kept_hash

    def problem(self, arch: ArchSpec, objective: str) -> Problem | None:
        """The layer solve on a block of the region's shape with the buffer the
        reserve leaves (None: none left)."""
        local = with_node_reserve(block_arch(arch, self.region), dict(self.reserve))
        return None if local is None else Problem(self.layer, self.batch, local, objective, self.feed)


def each_call(calls: list[Callable[..., None]]) -> Callable[..., None]:
    """One callback making each of ``calls`` with its arguments, in order."""
    def call(*args: Hashable) -> None:
        for one in calls:
            one(*args)

    return call


#: A solved segment: its schemes and cost.
Found = tuple[SegmentScheme, SegmentCost]


class Costing:
    """A plan's request costed under every objective (:meth:`SegmentSolver.variants`)
    while the workers solve its layers: the schemes whose layers are solved
    already by :meth:`ready` (the layer service calls it once the workers have
    their jobs), each other one by :meth:`done` the moment the last of its layer
    solves is recorded. A plan costs what it asked to have solved; this way the
    parent costs while the workers solve, not after them (ResNet-1001's
    search spent half its time outside the solves costing)."""

    def __init__(self, solver: SegmentSolver, inters: Iterable[InterScheme]) -> None:
        self._solver = solver
        self._ready: list[InterScheme] = []
        self._needs: dict[Hashable, list[InterScheme]] = {}
        self._left: dict[InterScheme, int] = {}
        for inter in dict.fromkeys(inters):
            if solver.is_solved(inter):
                continue
            keys = set(solver.unsolved(inter))
            if not keys:
                self._ready.append(inter)
                continue
            self._left[inter] = len(keys)
            for key in keys:
                self._needs.setdefault(key, []).append(inter)

    def ready(self) -> None:
        """Cost the schemes that wait for no solve."""
        ready, self._ready = self._ready, []
        for inter in ready:
            self._solver.costs(inter)

    def done(self, key: Hashable) -> None:
        """Cost the schemes whose last missing layer solve ``key`` was."""
        for inter in self._needs.pop(key, ()):
            self._left[inter] -= 1
            if not self._left[inter]:
                self._solver.costs(inter)


@dataclass
class SegmentSolver:
    """Solves inter-layer schemes with an intra-layer solver; caches layers by shape and feed.

    Each segment is solved once per objective of ``objectives`` (its
    *variants*), every layer with the intra-layer solver's scheme for that
    objective; a layer's solves for all of them are made together
    (:meth:`IntraSolver.run_each`, which shares their work)."""

    net: Network
    arch: ArchSpec
    layers: LayerService
    objectives: tuple[str, ...]
    reserve: int = 0
    cache: dict[tuple[InterScheme, str], Found | None] = field(default_factory=dict)
    #: what costing the segments works out once for them all (:func:`evaluate_segment`)
    memo: SegmentMemo = field(default_factory=SegmentMemo)
    _places: dict[InterScheme, dict[str, LayerPlacement]] = field(default_factory=dict)
    #: per kind of scheme (:func:`~kapla.space.network.inter.structure`): one scheme of it, its
    #: placements and its layer solves' keys by position, which the others of that kind share
    #: (ResNet-1001 on ``edge``: 3,300 segments costed, 100 kinds); and the table numbering the kinds
    _kinds: dict[int, tuple[InterScheme, dict[str, LayerPlacement], tuple[LayerKey, ...]]] = field(
        default_factory=dict)
    _kinds_table: object = None
    #: one object per distinct key: the caches it is looked up in then find it by identity, not by
    #: comparing its layer field by field (ResNet-1001: 90 % of the lookups)
    _interned: dict[LayerKey, LayerKey] = field(default_factory=dict)
    _in_segment: dict[tuple[str, int, int], tuple[LayerScheme, LayerScheme]] = field(default_factory=dict)
    #: layer solves made for every objective (a solve, once made, stays)
    _whole: set[LayerKey] = field(default_factory=set)
    #: per layer solve, objective and batch groups: the on-chip tensors its node level streams past
    _bypass: dict[tuple[LayerKey, str, int], frozenset[Kind]] = field(default_factory=dict)
    #: per layer solve, its scheme and batch groups: the costs of its bypasses
    _bypass_costs: dict[tuple[LayerKey, LayerScheme, int], tuple] = field(default_factory=dict)
    #: a layer solve's scheme with its node level bypassing some tensors (one object each)
    _bypassed: dict[tuple[int, frozenset[Kind]], tuple[LayerScheme, LayerScheme]] = field(default_factory=dict)
    #: per structure and layer solves, a segment's cost (None: invalid), and those solves (:meth:`_costed`)
    _alike: dict[tuple[int, tuple[int, ...]], tuple[SegmentCost | None, list[LayerScheme]]] = field(
        default_factory=dict)
    #: per scheme, its variants' objectives and costs (:meth:`costs`)
    _costs: dict[InterScheme, list[tuple[str, SegmentCost]]] = field(default_factory=dict)

    def solve(self, inter: InterScheme, objective: str) -> Found | None:
        """The segment's schemes and cost, every layer solved for ``objective``; None if some layer has no
        valid scheme."""
        if (inter, objective) in self.cache:
            return self.cache[(inter, objective)]
        places = self.placements(inter)
        schemes = {}
        solves = []
        found = None
        for name, key in zip(inter.layers, self._kind(inter)[2], strict=True):
            known = self._layer(inter, key, name, objective)
            if known is None:
                break
            solves.append(known[0])
            schemes[name] = known[1]
        else:
            found = self._same(inter, schemes)
            if found is None:
                found = self._costed(inter, SegmentScheme(inter.slots, places, schemes, inter.groups), solves)
        self.cache[(inter, objective)] = found
        return found

    def _costed(self, inter: InterScheme, segment: SegmentScheme, solves: list[LayerScheme]) -> Found | None:
        """The segment with its cost (None if invalid). Segments alike in structure
        (:func:`~kapla.space.network.inter.structure`) whose layers have the very same
        solves cost the same: each such kind is evaluated once (ResNet-1001 on
        ``edge``: 100 kinds among 3,300 segments)."""
        key = (self._number(inter), tuple(map(id, solves)))
        known = self._alike.get(key)
        if known is None:
            cost = evaluate_segment(segment, self.arch, self.memo)
            # the solves are kept with their cost: the ids in the key stay theirs
            self._alike[key] = (cost if cost.valid else None, solves)
            return (segment, cost) if cost.valid else None
        like = known[0]
        return None if like is None else (segment, costed_like(segment, self.arch, self.memo, like))

    def _same(self, inter: InterScheme, schemes: dict[str, LayerScheme]) -> Found | None:
        """The segment as solved for another objective with these very layer schemes
        (most layers' schemes are the same for every objective: it is costed once)."""
        for objective in self.objectives:
            found = self.cache.get((inter, objective))
            if found is not None and found[0].schemes == schemes:
                return found
        return None

    def variants(self, inter: InterScheme) -> list[tuple[str, Found]]:
        """The segment's valid variants, one per distinct set of layer schemes, in
        the order of ``objectives`` (an objective whose schemes repeat an earlier one's is left out)."""
        out: list[tuple[str, Found]] = []
        for objective in self.objectives:
            found = self.solve(inter, objective)
            if found is not None and all(found[0].schemes != other[0].schemes for _, other in out):
                out.append((objective, found))
        return out

    def costs(self, inter: InterScheme) -> list[tuple[str, SegmentCost]]:
        """:meth:`variants`' objectives and costs, all a search's ranking reads.

        A segment of a kind seen before (:meth:`_kind`) has the first one's:
        its layer solves are that one's by position, so its variants are, renamed,
        and each costs what that one's costs (:meth:`_costed`). Its own schemes
        are then made only if asked for (:meth:`solve`: the chosen chain's), not
        for each of the thousands a deep network's search ranks (ResNet-1001 on
        ``edge``: 13,000 segments of 100 kinds). Those costs carry the first
        one's layer names: only their totals are to be read."""
        known = self._costs.get(inter)
        if known is None:
            first = self._kind(inter)[0]
            if first != inter:
                known = self.costs(first)
            else:
                known = [(objective, found[1]) for objective, found in self.variants(inter)]
            self._costs[inter] = known
        return known

    def is_solved(self, inter: InterScheme) -> bool:
        """Whether the segment was solved (costed) for every objective."""
        return inter in self._costs or all((inter, objective) in self.cache for objective in self.objectives)

    def prefetch(self, inters: Iterable[InterScheme], progress: LayerProgress | None = None,
                 check: Check | None = None, costing: Costing | None = None,
                 meanwhile: Callable[[], None] | None = None) -> None:
        """Solve the layers these schemes need that are not solved yet, in the
        pool if there is one; each solve is cached the moment it finishes (and
        ``costing`` costs the schemes meanwhile, as their solves arrive; then
        ``meanwhile`` runs, while the workers solve)."""
        done = None if costing is None else costing.done
        calls = [call for call in (None if costing is None else costing.ready, meanwhile) if call is not None]
        self.layers.solve(self.jobs(inters), progress, check, done, each_call(calls))

    def costing(self, inters: Iterable[InterScheme]) -> Costing:
        """What costs ``inters`` while the workers solve their layers (:class:`Costing`)."""
        return Costing(self, inters)

    def jobs(self, inters: Iterable[InterScheme]) -> dict[LayerKey, tuple[Problem | None, tuple[str, ...]]]:
        """The layer solves these schemes need that are not made yet, for the layer service."""
        jobs: dict[LayerKey, tuple[Problem | None, tuple[str, ...]]] = {}
        for inter in inters:
            if self.is_solved(inter):
                continue
            for key in self.unsolved(inter):
                if key not in jobs:
                    missing = self._missing(key)
                    jobs[key] = (key.problem(self.arch, missing[0]), missing)
        return jobs

    def solved(self, inter: InterScheme) -> bool:
        """Whether every layer solve the scheme needs is done (costing it then solves nothing)."""
        return self.is_solved(inter) or next(self.unsolved(inter), None) is None

    def unsolved(self, inter: InterScheme) -> Iterator[LayerKey]:
        """The keys of the scheme's layer solves not made yet for some objective, in its layers' order."""
        for key in self._kind(inter)[2]:
            if self._missing(key):
                yield key

    def placements(self, inter: InterScheme) -> dict[str, LayerPlacement]:
        """Where the scheme's layers run and where their data come from and go to (worked out once
        per kind of scheme, and named for each of that kind)."""
        places = self._places.get(inter)
        if places is None:
            first, known, _ = self._kind(inter)
            places = self._places[inter] = known if first.layers == inter.layers else _renamed(
                known, dict(zip(first.layers, inter.layers, strict=True)))
        return places

    def _kind(self, inter: InterScheme) -> tuple[InterScheme, dict[str, LayerPlacement], tuple[LayerKey, ...]]:
        """The first scheme seen of ``inter``'s kind, its placements and its layer solves' keys by position."""
        like = self._number(inter)
        kind = self._kinds.get(like)
        if kind is None:
            places = placements(self.net, self.arch, inter)
            made = [self._make_key(inter, place) for place in places.values()]
            kind = self._kinds[like] = (inter, places, tuple(self._interned.setdefault(k, k) for k in made))
        return kind

    def _number(self, inter: InterScheme) -> int:
        """``inter``'s kind (:func:`~kapla.space.network.inter.structure`); what is kept
        by kind is dropped when the kinds are numbered in another table (another
        network or hardware was asked about meanwhile)."""
        table, like = structure(self.net, inter, self.arch)
        if table is not self._kinds_table:
            self._kinds_table = table
            self._kinds.clear()
            self._alike.clear()
        return like

    def layers_solved(self) -> int:
        """Layer solves done (each layer once, whatever the objectives)."""
        return self.layers.solved_count()

    def stop(self) -> None:
        """Stop the workers at once, with whatever they are solving (a budget ran out)."""
        self.layers.stop()

    def _missing(self, key: LayerKey) -> tuple[str, ...]:
        if key in self._whole:
            return ()
        missing = tuple(objective for objective in self.objectives if not self.layers.known(key, objective))
        if not missing:
            self._whole.add(key)
        return missing

    def _make_key(self, inter: InterScheme, place: LayerPlacement) -> LayerKey:
        layer = self.net[place.layer]
        feed = feed_of(inter, place, self.arch)
        # Buffer space that is not the layer's: its share of the pinned weights,
        # and a piece of each fmap forwarded to it, which waits in this region.
        pinned = inter.pin_words(place.layer, self.reserve)
        waiting = 0
        if place.forwarders:
            piece = forwarded_words(place, self.net.__getitem__, self.net.batch) / inter.groups
            waiting = math.ceil(piece / place.region.nodes)
        reserve = (("ifm", waiting), ("wgt", pinned))
        # The scheme is chosen at the region's true distance to DRAM (the segment
        # is costed at it, and a solve at another distance could rank schemes
        # differently), but not for the on-chip hop distance of its inputs: that
        # scales traffic every scheme must move anyway, so layers of one shape
        # on equally placed regions share a solve.
        canonical = Feed(ifm_hops=None if feed.ifm_hops is None else 0.0, to_dram=feed.to_dram,
                         pinned=feed.pinned, dram_hops=feed.dram_hops, ifm_share=feed.ifm_share)
        return LayerKey(shape_key(layer), self.net.batch // inter.groups, place.region.shape, canonical, reserve)

    def _layer(self, inter: InterScheme, key: LayerKey, name: str, objective: str
               ) -> tuple[LayerScheme, LayerScheme] | None:
        """Layer ``name``'s solve ``key`` for ``objective`` (streamed as it is costed),
        and its scheme in the segment; None if it has none."""
        missing = self._missing(key)
        if objective in missing:
            self.layers.solve({key: (key.problem(self.arch, objective), missing)})
        generic = self.layers.get(key, objective)
        if generic is None:
            return None
        generic = self._streamed(key, generic, objective, inter.groups)
        # One object per layer, solve and groups, whichever segment asks: a deep
        # network's segments share most of their layers' solves, and equal schemes
        # that are the same object compare at once (:meth:`_same`, the variants).
        # Keyed by the solve's identity: the value keeps it alive.
        at = (name, id(generic), inter.groups)
        known = self._in_segment.get(at)
        if known is None:
            known = self._in_segment[at] = (generic, scheme_in_segment(self.net, name, generic, inter.groups))
        return known

    def _streamed(self, key: LayerKey, generic: LayerScheme, objective: str, groups: int) -> LayerScheme:
        """The layer solve's scheme, with its node level bypassing the on-chip data it
        reads once where that costs less (:mod:`kapla.space.layer.bypass`): chosen for
        the solve repeated over the segment's batch groups, as the segment is costed."""
        # (the solve's scheme for an objective is one: whether and what it bypasses is kept too)
        at = (key, objective, groups)
        kinds = self._bypass.get(at)
        if kinds is None and (not key.feed.on_chip or not on_chip_kinds(generic, key.feed)):
            kinds = self._bypass[at] = frozenset()
        if kinds is None:
            # the objectives' solves mostly agree on the scheme: its variants are costed once
            costs = self._bypass_costs.get((key, generic, groups))
            if costs is None:
                problem = key.problem(self.arch, objective)
                assert problem is not None  # a solve was made for it
                costs = self._bypass_costs[(key, generic, groups)] = bypass_costs(
                    generic, problem.arch, key.feed, lambda s: outer_batch(s, s.layer, groups, s.ifm_name))
            kinds = self._bypass[at] = cheapest(costs, objective)
        if not kinds:
            return generic
        known = self._bypassed.get((id(generic), kinds))
        if known is None:
            known = self._bypassed[(id(generic), kinds)] = (generic, with_bypass(generic, self.arch, kinds))
        return known[1]


def _renamed(places: dict[str, LayerPlacement], rename: dict[str, str]) -> dict[str, LayerPlacement]:
    """The placements of a segment of the same kind, its layers named by position (``rename``)."""
    def named(place: LayerPlacement) -> LayerPlacement:
        sharer = place.shares_input_of
        made: LayerPlacement = copied(place, layer=rename[place.layer],
                                      onchip_inputs=tuple(rename[p] for p in place.onchip_inputs),
                                      shares_input_of=None if sharer is None else rename[sharer])
        return made

    return {rename[name]: named(place) for name, place in places.items()}
