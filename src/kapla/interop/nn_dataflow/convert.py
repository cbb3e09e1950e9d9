"""nn_dataflow's per-layer scheme as kapla's directives.

nn_dataflow (TETRIS/TANGRAM) writes a layer's scheme as a node partition
(``part``), Eyeriss's row-stationary mapping of one node's share onto its PE
array (a *processing pass*), and three levels of blocking over only three
loops -- input channels, output channels and the batch (``tvals`` and
``orders``, DRAM level first). kapla writes every level's stacks and
updates over all eight loop dimensions. The translation:

* the node level's stacks are the partition: output channels over ``K``,
  output fmap rows and columns over ``Y`` and ``X``, the batch over ``N`` and
  input channels over ``C``; its updates are the DRAM-level loops;
* the PE level's stacks are the processing pass (filter rows down the array,
  output rows across it, replicated over input and output channels); its
  updates are the global-buffer-level loops and then the pass's own temporal
  loops (Eyeriss folds the array's rows over filter rows and slides along
  an output row), as in kapla's row-stationary template;
* the loops inside the register file (the innermost blocking level) belong
  to what one PE holds, so they multiply the unit block.

Eyeriss folds output rows that do not fit the array into the batch loop
(``fold.w``); kapla gives them back to ``Y`` at the innermost batch loop
that can take them.

nn_dataflow maps pooling and eltwise layers alike (its local-region
layers): one output channel per input channel, so its output-channel loop
is kapla's ``G`` and there is no input-channel loop. An eltwise layer is the
1x1 case. nn_dataflow sizes its input as one fmap of the output's channels,
however many operands (``nreg``) it merges, and counts ``nreg`` operations
per output element, each reading one input word and reading and writing the
output in the register file; kapla's eltwise layer reads each of its
``n_inputs`` operands and writes the output once per element. So a
two-operand layer moves 3/2 of nn_dataflow's words through DRAM, the buffers
and the array bus, and 2/3 of its register-file words; a one-operand layer
agrees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop, Stack
from kapla.dataflow.tensors import Kind
from kapla.errors import InteropError
from kapla.interop.nn_dataflow.reader import LayerSchedule
from kapla.workload.layer import Layer, Op

# nn_dataflow's enumerations, by position
IFM_LOOP, OFM_LOOP, BAT_LOOP = 0, 1, 2
FIL, IFM, OFM = 0, 1, 2
OUTP, OFMP, BATP, INPP = 0, 1, 2, 3
_LOOP_DIM = {IFM_LOOP: "C", OFM_LOOP: "K", BAT_LOOP: "N"}


class ConversionError(InteropError):
    """An nn_dataflow scheme kapla cannot express for its layer."""


@dataclass(frozen=True)
class NdfScheme:
    """The fields of one nn_dataflow layer scheme the translation reads."""

    part_order: tuple[int, ...]
    pdims: tuple[tuple[int, int], ...]  # (h, w) nodes per parallel dimension
    tvals: tuple[tuple[int, int, int], ...]  # per blocking level: (ifm, ofm, batch) factors
    orders: tuple[tuple[int, int, int], ...]  # per level with loops above a buffer: position, 0 innermost
    unit_size_gbuf: tuple[float, float, float]  # words of (FIL, IFM, OFM) per processing pass
    bufshr_grp: tuple[int, int, int] = (1, 1, 1)  # nodes sharing one copy of (FIL, IFM, OFM)
    gbuf_stored: tuple[bool, bool, bool] = (True, True, True)  # (FIL, IFM, OFM) kept in the global buffer

    @classmethod
    def of(cls, schedule: LayerSchedule) -> NdfScheme:
        """The fields of a scheme read from nn_dataflow's file; a data category of
        no size in the global buffer (``size[0]``) bypasses it."""
        return cls(schedule.part.order, schedule.part.pdims, schedule.tvals, schedule.orders,
                   schedule.unit_size[0], schedule.bufshr_grp_size,
                   (schedule.size[0][FIL] > 0, schedule.size[0][IFM] > 0, schedule.size[0][OFM] > 0))


def _idivc(a: int, b: int) -> int:
    return -(-a // b)


def _dim_of(loop: int, pool: bool) -> str | None:
    """kapla's dimension of an nn_dataflow loop; a pooling (or eltwise) layer's
    channels are ``G`` and it has no input-channel loop of its own."""
    dim = _LOOP_DIM[loop]
    if pool:
        return {"K": "G", "C": None}.get(dim, dim)
    return dim


@dataclass(frozen=True)
class _Eyeriss:
    """One node's processing pass: Eyeriss's folding and replication of its logical PE set."""

    fold: tuple[int, int]
    repl: tuple[int, int]
    flpeset: tuple[int, int]
    w2h: int  # replication rows given to folded output rows


def _eyeriss(lpeset: tuple[int, int], array: tuple[int, int]) -> _Eyeriss:
    (lh, lw), (ah, aw) = lpeset, array
    fold_h, repl_h = (_idivc(lh, ah), 1) if lh > ah else (1, ah // lh)
    fold_w, repl_w = (_idivc(lw, aw), 1) if lw > aw else (1, aw // lw)
    # spare replication rows take folded output rows first
    w2h = min(repl_h, fold_w)
    fold_w, repl_h = _idivc(fold_w, w2h), repl_h // w2h
    return _Eyeriss((fold_h, fold_w), (repl_h, repl_w), (_idivc(lh, fold_h), _idivc(lw, fold_w)), w2h)


def to_layer_scheme(layer: Layer, batch: int, scheme: NdfScheme, pe_array: tuple[int, int],
                    node_array: tuple[int, int], ifm_name: str | None = None) -> LayerScheme:
    """kapla's directives for ``layer`` under nn_dataflow's ``scheme``."""
    if layer.op not in (Op.CONV, Op.FC, Op.POOL, Op.ELTWISE):
        raise ConversionError(f"{layer.name}: nn_dataflow has no {layer.op.value} layers")
    # nn_dataflow's local-region layers: channel by channel, as kapla's groups
    pool = layer.op in (Op.POOL, Op.ELTWISE)
    if layer.groups != 1 and not pool:
        raise ConversionError(f"{layer.name}: nn_dataflow has no grouped convolutions (split them into layers)")
    pd = scheme.pdims
    if pool and math.prod(pd[INPP]) > 1:
        raise ConversionError(f"{layer.name}: input-channel partition of a {layer.op.value} layer")
    chans = "G" if pool else "K"
    parts = [(OUTP, chans, pd[OUTP]), (OFMP, "Y", (pd[OFMP][0], 1)), (OFMP, "X", (1, pd[OFMP][1])),
             (BATP, "N", pd[BATP]), (INPP, "C", pd[INPP])]
    loops = layer.loops
    share = {
        "C": 1 if pool else _idivc(loops["C"], math.prod(pd[INPP])),
        chans: _idivc(loops[chans], math.prod(pd[OUTP])),
        "Y": _idivc(loops["Y"], pd[OFMP][0]),
        "X": _idivc(loops["X"], pd[OFMP][1]),
        "N": _idivc(batch, math.prod(pd[BATP])),
    }
    # the partition's nesting: nn_dataflow's first partition is the outermost
    node_stacks = [Stack(dim, h, w) for p in scheme.part_order for q, dim, (h, w) in parts if q == p and h * w > 1]

    ey = _eyeriss((loops["S"], share["Y"]), pe_array)
    # replicated channels: Eyeriss's unit pass holds one input and one output channel
    pass_ifm, pass_ofm = _unit_pass_gbuf(layer, share, ey)
    ifms = max(1, round(scheme.unit_size_gbuf[IFM] / pass_ifm)) if not pool else 1
    ofms = max(1, round(scheme.unit_size_gbuf[OFM] / pass_ofm))

    tv = [list(t) for t in scheme.tvals]
    # fold.w output-row folds ride in the batch loops: give them back to Y, innermost first
    fold_w = ey.fold[1]
    y_loops: dict[int, int] = {}
    if fold_w > 1:
        for lvl in reversed(range(len(tv))):
            if tv[lvl][BAT_LOOP] % fold_w == 0:
                tv[lvl][BAT_LOOP] //= fold_w
                y_loops[lvl] = fold_w
                break
        else:
            raise ConversionError(f"{layer.name}: no batch loop carries the {fold_w} output-row folds")

    def level_loops(lvl: int) -> list[Loop]:
        order = scheme.orders[lvl]
        out: list[Loop] = []
        for lp in sorted(range(3), key=lambda lp: -order[lp]):
            dim = _dim_of(lp, pool)
            if dim is None:
                continue
            if tv[lvl][lp] > 1:
                out.append(Loop(dim, tv[lvl][lp]))
            if lp == BAT_LOOP and y_loops.get(lvl, 1) > 1:
                out.append(Loop("Y", y_loops[lvl]))
        return out

    fh, fw = ey.flpeset
    y_cols = _idivc(fw, ey.w2h)
    pe_stacks = [Stack("S", fh, 1), Stack("Y", ey.w2h, y_cols)]
    if ifms > 1:
        pe_stacks.append(Stack("C", ifms, 1))
    if ofms > 1:
        rows_left = max(1, pe_array[0] // (fh * ey.w2h * ifms))
        cols_left = max(1, pe_array[1] // y_cols)
        pe_stacks.append(_fit(chans, ofms, rows_left, cols_left))
    pass_loops = [Loop(d, n) for d, n in (("S", ey.fold[0]), ("X", share["X"])) if n > 1]

    # what one PE keeps across the register-file-level loops
    unit = {"R": loops["R"]}
    for lp, n in enumerate(tv[2]):
        dim = _dim_of(lp, pool)
        if n > 1 and dim is not None:
            unit[dim] = unit.get(dim, 1) * n
    if y_loops.get(2, 1) > 1:
        unit["Y"] = y_loops[2]
    # nn_dataflow counts a processing pass as one step: the filter row stays,
    # the input row streams through, the outputs accumulate; so the pass's
    # own loops belong to the unit, not to loops that reload it
    for step in pass_loops:
        unit[step.dim] = unit.get(step.dim, 1) * step.count

    node_stacks = _fold_grid(node_stacks, node_array)
    # a group shares one copy of what it keeps; of what bypasses the buffer, it still fetches one copy
    # from DRAM (nn_dataflow's access forwarding: kapla's check objects, its per-node DRAM counting
    # follows)
    shr = tuple((kind, g) for kind, g in zip((Kind.WGT, Kind.IFM, Kind.OFM), scheme.bufshr_grp, strict=True)
                if g > 1)
    levels = (
        LevelScheme("REGF", tuple(pe_stacks), tuple(level_loops(1))),
        LevelScheme("GBUF", tuple(node_stacks), tuple(level_loops(0)), shr=shr,
                    bypass=frozenset(k for k, kept in zip((Kind.WGT, Kind.IFM, Kind.OFM), scheme.gbuf_stored,
                                                          strict=True) if not kept)),
    )
    return LayerScheme(layer, batch, tuple(unit.items()), levels, ifm_name=ifm_name)


def _fit(dim: str, count: int, rows: int, cols: int) -> Stack:
    """A stack of ``count`` over at most ``rows`` x ``cols`` units, widest first."""
    for r in range(1, count + 1):
        if count % r == 0 and r <= rows and count // r <= cols:
            return Stack(dim, r, count // r)
    return Stack(dim, 1, count)  # does not fit: kapla's check says so


def _fold_grid(stacks: list[Stack], array: tuple[int, int]) -> list[Stack]:
    """nn_dataflow folds a region wider than the chip into stripes (zig-zag):
    move columns of the stacks to rows until the grid fits the node array."""
    out = list(stacks)
    while math.prod(s.cols for s in out) > array[1]:
        for i, st in enumerate(out):
            f = next((f for f in range(2, st.cols + 1) if st.cols % f == 0), None)
            if f is not None:
                out[i] = Stack(st.dim, st.rows * f, st.cols // f)
                break
        else:
            break
    return out


def _unit_pass_gbuf(layer: Layer, share: dict[str, int], ey: _Eyeriss) -> tuple[int, int]:
    """Words of input and output fmap one unit pass (one input, one output channel) keeps in the buffer."""
    loops = layer.loops
    rows = _idivc(share["Y"], ey.fold[1])
    sy, sx = layer.stride
    in_rows = (rows - 1) * sy + loops["S"]
    in_cols = (share["X"] - 1) * sx + loops["R"]
    return in_rows * in_cols, rows * share["X"]

