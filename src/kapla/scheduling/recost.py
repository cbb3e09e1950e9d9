"""A saved schedule costed again: its JSON document (``kapla schedule --json``)
read back into segments and evaluated by today's cost model, on its own
hardware or on another of the same node array.

What a document holds is what the schedule chose: every segment's layers,
slots, batch groups and pinning, every layer's region and directives. The
inter-layer scheme is found again among those TANGRAM's space offers for the
segment (:func:`~kapla.space.network.inter.inter_schemes`), the one whose
layers sit on the same regions, pinned and fed alike; the layers' directives
are read back (:func:`~kapla.dataflow.listing.parse_scheme`) and the segment
is costed and checked by the evaluator, as a search costs its own. So a
schedule made by an older kapla, or costed with other energy tables, is
compared with a new one under one model (the benchmarks' like-for-like
comparison with a past revision).

A document written before kapla recorded which inputs a layer read on chip
and whether its weights were pinned may fit several schemes of a segment
(inputs fetched once for siblings or not; a whole-network segment pinned by
kapla's rule or by TANGRAM's): the one whose cost comes nearest to the
segment's energy the document states is taken.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from kapla.arch.spec import ArchSpec
from kapla.dataflow.listing import parse_scheme
from kapla.dataflow.segment import LayerPlacement, SegmentScheme
from kapla.errors import SpecError
from kapla.model.segment import SegmentMemo, evaluate_segment
from kapla.search.result import ScheduleResult, from_steps, pinned_load
from kapla.space.network.inter import InterScheme, input_name, inter_schemes, placements
from kapla.space.network.segments import SegmentPlan, slots_of
from kapla.workload.network import Network


class RecostError(SpecError):
    """A schedule document that cannot be read back onto the network and hardware given."""


def recost(document: Mapping[str, Any], net: Network, arch: ArchSpec) -> ScheduleResult:
    """The schedule of ``document`` (a ``kapla-schedule`` JSON result) costed and
    checked by today's model on ``arch``; ``net`` is the network it schedules
    (its name, batch and training must match)."""
    try:
        return _recost(document, net, arch)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecostError(f"not a complete kapla schedule ({type(exc).__name__}: {exc})") from None


def _recost(document: Mapping[str, Any], net: Network, arch: ArchSpec) -> ScheduleResult:
    _check_document(document, net)
    layers = {lr["name"]: lr for lr in document["layers"]}
    steps = []
    memo = SegmentMemo()
    for n, seg in enumerate(document["segment_details"]):
        names = tuple(seg["layers"])
        where = f"segment {n + 1} ({', '.join(names)})"
        missing = [name for name in names if name not in layers]
        if missing:
            raise RecostError(f"{where}: no layer entry for {', '.join(missing)}")
        schemes = {}
        for name in names:
            try:
                # its input named as a search names it, after its producers (a listing names
                # only an input-kind tensor: a backward layer's gradient input is output-kind)
                schemes[name] = replace(parse_scheme(layers[name]["directives"], {name: net[name]}),
                                        ifm_name=input_name(net, name))
            except SpecError as exc:
                raise RecostError(f"{where}: {exc}") from None
        costed = []
        for inter, places in _inter_schemes(net, arch, seg, layers, where):
            segment = SegmentScheme(inter.slots, places, schemes, inter.groups)
            costed.append((segment, evaluate_segment(segment, arch, memo)))
        # Placed alike by all the document says (one written before kapla recorded which
        # layers' weights were pinned, where a segment pins them by kapla's rule or by
        # TANGRAM's): a valid one before any invalid one (which costs nothing: it would
        # come nearest to a small stated energy, or to none), then the one whose cost
        # comes nearest to what the document states.
        stated = float(seg.get("energy_j", 0.0))
        segment, cost = min(costed, key=lambda c: (not c[1].valid, abs(c[1].total_energy - stated)))
        steps.append((names, segment, cost))
    return from_steps(net, arch, steps, solver=str(document.get("solver", "")),
                      objective=str(document.get("objective", "energy")), scheduler=str(document.get("scheduler", "")),
                      seconds=0.0, pinned_load_j=pinned_load(net, arch, [segment for _, segment, _ in steps]),
                      extra={"recosted_from": {"arch": document.get("arch"), "energy_j": document.get("energy_j")}})


def read_document(source: Mapping[str, Any] | str | Path) -> Mapping[str, Any]:
    """A schedule document, or the one a JSON file holds."""
    if isinstance(source, Mapping):
        return source
    try:
        doc = json.loads(Path(source).read_text(encoding="utf-8"))
    except OSError as exc:
        raise RecostError(f"{source}: cannot read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecostError(f"{source}: not a JSON file ({str(exc).splitlines()[0]})") from None
    if not isinstance(doc, Mapping):
        raise RecostError(f"{source}: not a kapla schedule (a JSON {type(doc).__name__})")
    return doc


def _check_document(document: Mapping[str, Any], net: Network) -> None:
    if document.get("format") != "kapla-schedule":
        raise RecostError(f"not a kapla schedule (format {document.get('format')!r})")
    for field in ("layers", "segment_details"):
        if not isinstance(document.get(field), list):
            raise RecostError(f"the schedule has no '{field}' list")
    for field, mine in (("network", net.name), ("batch", net.batch), ("training", net.training)):
        if field in document and document[field] != mine:
            raise RecostError(f"the schedule is of {field} {document[field]!r}, the network given has {mine!r}")
    scheduled = sorted(name for seg in document["segment_details"] for name in seg["layers"])
    if scheduled != sorted(layer.name for layer in net):
        raise RecostError(f"the schedule's segments do not cover the layers of '{net.name}' each once")


def _inter_schemes(net: Network, arch: ArchSpec, seg: Mapping[str, Any], layers: Mapping[str, Mapping[str, Any]],
                   where: str) -> list[tuple[InterScheme, dict[str, LayerPlacement]]]:
    """The schemes of TANGRAM's space that place the segment's layers as the document says
    (each distinct placement once)."""
    names = tuple(seg["layers"])
    slots = tuple(tuple(slot) for slot in seg["slots"])
    groups, pinned = int(seg.get("groups", 1)), bool(seg.get("pinned", False))
    plan = SegmentPlan(names, slots_of(net, names))
    wanted = {name: _placed(layers[name]) for name in names}
    found: dict[tuple, tuple[InterScheme, dict[str, LayerPlacement]]] = {}
    # pinned by kapla's rule (a search's pinned run), or not, or by TANGRAM's rule (the other run)
    for share, run in itertools.product((False, True), (pinned, False) if pinned else (False,)):
        for inter in inter_schemes(net, arch, plan, run, share_inputs=share):
            if inter.slots != slots or inter.groups != groups or inter.pinned != pinned:
                continue
            places = placements(net, arch, inter)
            placed = tuple(_placement_of(places[name]) for name in names)
            if all(_alike(place, wanted[name]) for place, name in zip(placed, names, strict=True)):
                found.setdefault(placed, (inter, places))
    if not found:
        raise RecostError(f"{where}: no scheme of '{arch.name}' runs it on the regions, groups and pinning "
                          f"the schedule gives")
    return list(found.values())


def _placed(entry: Mapping[str, Any]) -> tuple:
    """How the document places a layer: its region (its nodes, if folded), and whom it takes its input from."""
    region = entry.get("region") or {}
    try:
        cells = tuple(tuple(c) for c in region["nodes"]) if "nodes" in region else None
        box = (tuple(region["origin"]), tuple(region["shape"]))
    except (KeyError, TypeError) as exc:
        raise RecostError(f"layer '{entry.get('name')}': its region is not [origin, shape]") from exc
    if "inputs_on_chip" not in entry:  # written before kapla recorded where a layer's inputs came from
        return box, cells, _ANY, _ANY, _ANY
    return (box, cells, entry.get("input_shared_from"), tuple(entry["inputs_on_chip"]),
            entry.get("weights_pinned", _ANY))


def _placement_of(place: LayerPlacement) -> tuple:
    region = place.region
    cells = tuple(region.cells()) if region.folded else None
    return (region.origin, region.shape), cells, place.shares_input_of, place.onchip_inputs, place.pinned


#: what a document does not say: any value fits
_ANY = object()


def _alike(place: tuple, wanted: tuple) -> bool:
    """The placement is the one the document gives (as far as it says)."""
    return all(w is _ANY or p == w for p, w in zip(place, wanted, strict=True))


__all__ = ["RecostError", "read_document", "recost"]
