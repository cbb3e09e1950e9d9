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

A document that does not say which inputs a layer read on chip, or whether it
fetched its input once for its siblings (written before kapla recorded them),
is read as not sharing inputs: the first scheme that places its layers on
the same regions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
        inter, places = _inter_scheme(net, arch, seg, layers, where)
        schemes = {}
        for name in names:
            try:
                # its input named as a search names it, after its producers (a listing names
                # only an input-kind tensor: a backward layer's gradient input is output-kind)
                schemes[name] = replace(parse_scheme(layers[name]["directives"], {name: net[name]}),
                                        ifm_name=input_name(net, name))
            except SpecError as exc:
                raise RecostError(f"{where}: {exc}") from None
        segment = SegmentScheme(inter.slots, places, schemes, inter.groups)
        steps.append((names, segment, evaluate_segment(segment, arch, memo)))
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


def _inter_scheme(net: Network, arch: ArchSpec, seg: Mapping[str, Any], layers: Mapping[str, Mapping[str, Any]],
                  where: str) -> tuple[InterScheme, dict[str, LayerPlacement]]:
    """The scheme of TANGRAM's space that places the segment's layers as the document says."""
    names = tuple(seg["layers"])
    slots = tuple(tuple(slot) for slot in seg["slots"])
    groups, pinned = int(seg.get("groups", 1)), bool(seg.get("pinned", False))
    plan = SegmentPlan(names, slots_of(net, names))
    wanted = {name: _placed(layers[name]) for name in names}
    candidates: Sequence[InterScheme] = [inter for pin in (False, True) for share in (False, True)
                                        for inter in inter_schemes(net, arch, plan, pin, share_inputs=share)]
    for inter in candidates:
        if inter.slots != slots or inter.groups != groups or inter.pinned != pinned:
            continue
        places = placements(net, arch, inter)
        if all(_alike(_placement_of(places[name]), wanted[name]) for name in names):
            return inter, places
    raise RecostError(f"{where}: no scheme of '{arch.name}' runs it on the regions, groups and pinning "
                      f"the schedule gives")


def _placed(entry: Mapping[str, Any]) -> tuple:
    """How the document places a layer: its region (its nodes, if folded), and whom it takes its input from."""
    region = entry.get("region") or {}
    try:
        cells = tuple(tuple(c) for c in region["nodes"]) if "nodes" in region else None
        box = (tuple(region["origin"]), tuple(region["shape"]))
    except (KeyError, TypeError) as exc:
        raise RecostError(f"layer '{entry.get('name')}': its region is not [origin, shape]") from exc
    onchip = entry.get("inputs_on_chip")
    return box, cells, entry.get("input_shared_from"), None if onchip is None else tuple(onchip)


def _placement_of(place: LayerPlacement) -> tuple:
    region = place.region
    cells = tuple(region.cells()) if region.folded else None
    return (region.origin, region.shape), cells, place.shares_input_of, place.onchip_inputs


def _alike(place: tuple, wanted: tuple) -> bool:
    """The placement is the document's (which inputs came on chip: any, where it does not say)."""
    return place[:3] == wanted[:3] and (wanted[3] is None or place[3] == wanted[3])


__all__ = ["RecostError", "read_document", "recost"]
