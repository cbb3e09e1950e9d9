"""Print directive schemes in the KAPLA listing style and read them back.

A listing looks like::

    layer conv2 batch=64:
      REGF:
        tensor{pool1}(N=1, C=2, Yi=1, Xi=5)
        tensor{conv2.w}(C=2, K=4, S=1, R=5)
        tensor{conv2}(N=1, K=4, Yo=1, Xo=1)
        stack(Yo+=1, Yi+=1, repl=8)
        stack(S+=1, Yi+=1, repl=8)
        update(Xo+=1, Xi+=1)  # x27
      GBUF:
        ...

Tensor lines state the block one buffer holds (``shr=`` when it is shared
across units, ``bypass`` when it streams through without being stored);
stacks and updates name the loop dimension they advance first (``Yo``,
``Xo``, ``S``, ``R``, ``N``, ``G``, ``C`` or ``K``) and then the derived input
offsets. Update counts are comments: the parser derives them from the blocks
of neighbouring levels, as the directives intend.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.tensors import DIMS, Kind, TensorRole, ifm_extent, layer_dims, tensor_roles
from kapla.errors import SpecError
from kapla.workload.layer import Layer, Op

_TENSOR_DIMS = {
    Kind.IFM: ("N", "G", "C", "Yi", "Xi"),
    Kind.WGT: ("G", "C", "K", "S", "R"),
    Kind.OFM: ("N", "G", "K", "Yo", "Xo"),
}
_LOOP_OF = {"Yo": "Y", "Xo": "X", "N": "N", "G": "G", "C": "C", "K": "K", "S": "S", "R": "R"}
_PRINTED_AS = {"Y": "Yo", "X": "Xo"}


def _tensor_values(kind: Kind, tile: Mapping[str, int], layer: Layer, batch: int) -> dict[str, int]:
    """The printed dimensions of a block: those the layer really has (extent > 1)."""
    rows, cols = ifm_extent(tile, layer)
    values = dict(tile, Yi=rows, Xi=cols, Yo=tile["Y"], Xo=tile["X"])
    full = layer_dims(layer, batch)
    return {d: values[d] for d in _TENSOR_DIMS[kind] if full.get(_LOOP_OF.get(d, ""), 2) > 1}


def _shifts(dim: str, step: int, layer: Layer) -> str:
    parts = [f"{_PRINTED_AS.get(dim, dim)}+={step}"]
    sy, sx = layer.stride
    dy, dx = layer.dilation
    extra = {"Y": ("Yi", sy), "X": ("Xi", sx), "S": ("Yi", dy), "R": ("Xi", dx)}
    if dim in extra:
        name, mult = extra[dim]
        parts.append(f"{name}+={step * mult}")
    return ", ".join(parts)


def format_scheme(scheme: LayerScheme, level_names: tuple[str, ...] | None = None) -> str:
    """The directive listing of one layer's scheme."""
    layer = scheme.layer
    lines = [f"layer {layer.name} batch={scheme.batch}:  # {layer.describe()}"]
    for index, lvl in enumerate(scheme.levels):
        tile = scheme.tile(index)
        lines.append(f"  {lvl.level}:")
        for role in scheme.roles:
            dims = ", ".join(f"{k}={v}" for k, v in _tensor_values(role.kind, tile, layer, scheme.batch).items())
            flags = ""
            if lvl.sharing(role.kind) > 1:
                flags += f", shr={lvl.sharing(role.kind)}"
            if role.kind in lvl.bypass:
                flags += ", bypass"
            lines.append(f"    tensor{{{role.name}}}({dims}{flags})")
        running = scheme.nominal_tile(index)  # loops advance by nominal blocks
        for st in lvl.stacks:
            grid = f"{st.rows}x{st.cols}" if st.rows > 1 else str(st.cols)
            lines.append(f"    stack({_shifts(st.dim, running[st.dim], layer)}, repl={grid})")
            running[st.dim] *= st.count
        steps = []
        for up in reversed(lvl.updates):  # innermost first: its step is the stacked block
            steps.append(f"    update({_shifts(up.dim, running[up.dim], layer)})  # x{up.count}")
            running[up.dim] *= up.count
        lines.extend(reversed(steps))
    return "\n".join(lines)


_HEADER = re.compile(r"^layer\s+(\S+)\s+batch=(\d+):")
_LEVEL = re.compile(r"^(\w+):$")
_TENSOR = re.compile(r"^tensor\{([^}]*)\}\((.*)\)$")
_DIRECTIVE = re.compile(r"^(stack|update)\((.*)\)$")


def _fields(body: str, where: str) -> tuple[dict[str, str], list[str]]:
    values: dict[str, str] = {}
    flags: list[str] = []
    for part in (p.strip() for p in body.split(",") if p.strip()):
        m = re.fullmatch(r"(\w+)\s*(\+?=)\s*(\w+)", part)
        if m:
            values[m.group(1)] = m.group(3)
        elif re.fullmatch(r"\w+", part):
            flags.append(part)
        else:
            raise SpecError(f"{where}: cannot read '{part}'")
    return values, flags


def parse_scheme(text: str, layers: Mapping[str, Layer]) -> LayerScheme:
    """Read one layer's listing back into a :class:`LayerScheme`."""
    lines = [ln.split("#", 1)[0].strip() if not ln.strip().startswith("layer") else ln.strip()
             for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines or not (m := _HEADER.match(lines[0])):
        raise SpecError("directive listing: expected 'layer NAME batch=N:' on the first line")
    name, batch = m.group(1), int(m.group(2))
    if name not in layers:
        raise SpecError(f"directive listing: unknown layer '{name}'")
    layer = layers[name]
    levels: list[dict] = []
    ifm_name = None
    for lineno, line in enumerate(lines[1:], start=2):
        where = f"directive listing of '{name}', line {lineno}"
        if m := _LEVEL.match(line):
            levels.append({"level": m.group(1), "tensors": {}, "shr": {}, "bypass": set(),
                           "stacks": [], "updates": []})
            continue
        if not levels:
            raise SpecError(f"{where}: a directive before any level header")
        lvl = levels[-1]
        if m := _TENSOR.match(line):
            values, flags = _fields(m.group(2), where)
            tname = m.group(1)
            role = _role_named(layer, tname)
            if role is None:
                raise SpecError(f"{where}: layer '{name}' has no tensor '{tname}'")
            if role.kind == Kind.IFM and not role.written:
                ifm_name = tname
            lvl["tensors"][role.kind] = {k: int(v) for k, v in values.items() if k != "shr"}
            if "shr" in values:
                lvl["shr"][role.kind] = int(values["shr"])
            if "bypass" in flags:
                lvl["bypass"].add(role.kind)
        elif m := _DIRECTIVE.match(line):
            values, _ = _fields(m.group(2), where)
            keys = [k for k in values if k in _LOOP_OF]
            if not keys:
                raise SpecError(f"{where}: {m.group(1)} names no loop dimension")
            dim = _LOOP_OF[keys[0]]
            step = int(values[keys[0]])
            if m.group(1) == "stack":
                repl = values.get("repl")
                if repl is None:
                    raise SpecError(f"{where}: stack without repl=")
                rows, _, cols = repl.partition("x")
                lvl["stacks"].append(Stack(dim, int(rows), int(cols)) if cols else Stack(dim, 1, int(rows)))
            else:
                lvl["updates"].append((dim, step))
        else:
            raise SpecError(f"{where}: cannot read '{line}'")
    if not levels:
        raise SpecError(f"directive listing of '{name}': no memory levels")
    unit = _tile_from_tensors(layer, levels[0]["tensors"], name)
    reach = dict(LayerScheme(layer, batch, (), ()).dims)
    parsed = []
    for lvl in reversed(levels):  # steps are read top-down, from the whole layer inwards
        updates, reach = _update_counts(lvl, reach, name)
        parsed.append(LevelScheme(lvl["level"], tuple(lvl["stacks"]), updates, tuple(lvl["shr"].items()),
                                  frozenset(lvl["bypass"])))
    if _windowless(layer, levels[0]["tensors"]):
        unit["S"], unit["R"] = reach["S"], reach["R"]
        _check_window(layer, unit, levels[0]["tensors"][Kind.IFM], name)
    for dim in DIMS:
        if reach[dim] != unit[dim]:
            raise SpecError(f"directive listing of '{name}': the innermost blocks of {_PRINTED_AS.get(dim, dim)} "
                            f"are {reach[dim]} but its {levels[0]['level']} tensors hold {unit[dim]}")
    scheme = LayerScheme(layer, batch, tuple(unit.items()), tuple(reversed(parsed)), ifm_name=ifm_name)
    for index, lvl in enumerate(levels):
        implied = scheme.tile(index)
        for kind, values in lvl["tensors"].items():
            for key, value in values.items():
                held = _LOOP_OF.get(key)
                if held is not None and value != implied[held]:
                    raise SpecError(
                        f"directive listing of '{name}', level {lvl['level']}: a {kind} tensor holds "
                        f"{key}={value} but the stacks and updates imply {implied[held]}")
    return scheme


def _role_named(layer: Layer, tname: str) -> TensorRole | None:
    """The tensor called ``tname``; an unknown name is taken as the input fmap,
    which the listing names after its producers."""
    roles = tensor_roles(layer)
    for role in roles:
        if role.name == tname:
            return role
    for role in roles:
        if role.kind == Kind.IFM and not role.written:
            return replace(role, name=tname)
    return None


def _tile_from_tensors(layer: Layer, tensors: Mapping[Kind, Mapping[str, int]], name: str) -> dict[str, int]:
    tile = {d: 1 for d in DIMS}
    for values in tensors.values():
        for key, value in values.items():
            if key in _LOOP_OF:
                tile[_LOOP_OF[key]] = value
    return tile


def _windowless(layer: Layer, tensors: Mapping[Kind, Mapping[str, int]]) -> bool:
    """A layer whose innermost tensors leave its window unstated: no weight tensor
    names it (a pooling layer), so the window follows from the loops."""
    return Kind.WGT not in tensors and Kind.IFM in tensors and layer.op != Op.ELTWISE


def _check_window(layer: Layer, unit: Mapping[str, int], ifm: Mapping[str, int], name: str) -> None:
    """The input block a listing states is the one its window reads (the footprint
    rule: a stride wider than the window leaves rows unread, so the block is no
    span to solve the window from)."""
    rows, cols = ifm_extent(unit, layer)
    for key, value in (("Yi", rows), ("Xi", cols)):
        if key not in ifm:
            raise SpecError(f"directive listing of '{name}': its innermost tensors hold no input block {key}")
        if ifm[key] != value:
            raise SpecError(f"directive listing of '{name}': its input block holds {key}={ifm[key]} but "
                            f"its {'S' if key == 'Yi' else 'R'} window reads {value}")


def _update_counts(lvl: dict, reach: Mapping[str, int], name: str) -> tuple[tuple[Loop, ...], dict[str, int]]:
    """A level's update counts and the nominal block it leaves per unit.

    Each update advances by its step through the block enclosing it (the
    parent's, or the next outer update's step): ceil(block / step) steps.
    """
    reach = dict(reach)
    counts: list[Loop] = []
    for dim, step in lvl["updates"]:  # outermost first
        if not 0 < step <= reach[dim]:
            raise SpecError(f"directive listing of '{name}': update({_PRINTED_AS.get(dim, dim)}+={step}) "
                            f"steps outside the {reach[dim]} it iterates")
        counts.append(Loop(dim, -(-reach[dim] // step)))
        reach[dim] = step
    for st in reversed(lvl["stacks"]):  # stacks apply in declared order, so the last is innermost
        if st.count > reach[st.dim]:
            raise SpecError(
                f"directive listing of '{name}', level {lvl['level']}: {st.count} stacked blocks "
                f"over only {_PRINTED_AS.get(st.dim, st.dim)}={reach[st.dim]}")
        reach[st.dim] = -(-reach[st.dim] // st.count)
    return tuple(counts), reach
