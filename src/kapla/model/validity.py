"""The evaluator's independent validity check of a layer scheme on hardware.

A scheme is valid when

* it has one entry per on-chip memory level of the hardware, in order;
* its loops cover every loop dimension of the layer exactly once: blocks tile
  each dimension bottom-up (a loop advances by the block inside it), they
  reach at least the layer's extent (no lost work), and no loop iteration or
  unit block lies wholly beyond it (no idle work); the last block may be
  partial, which costs time, not correctness;
* every buffer holds what the scheme puts in it (capacity, per unit);
* stacks never use more units than the level's array (or the node region);
* buffer sharing is only used where the hardware allows neighbour transfers,
  over units that really share the tensor.

The check never trusts a solver: it recomputes everything from the directives.
"""

from __future__ import annotations

from dataclasses import dataclass

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.dataflow.tensors import DIMS, RELEVANT, Kind


@dataclass(frozen=True, slots=True)
class Validity:
    """The verdict: valid, or the violated constraints (each one line)."""

    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.reasons

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return "valid" if self.ok else "; ".join(self.reasons)


def dim_loops(scheme: LayerScheme, dim: str) -> list[tuple[str, int, int]]:
    """(label, count, step) of every loop over ``dim``, innermost first.

    Blocks are laid out bottom-up, as the directives declare them: a loop
    advances by the block everything inside it covers, so its iterations tile
    ``count x step`` of the dimension.
    """
    step = dict(scheme.unit).get(dim, 1)
    out = []
    for lvl in scheme.levels:
        for st in lvl.stacks:
            if st.dim == dim:
                out.append((f"{lvl.level} stack({dim}) x{st.count}", st.count, step))
                step *= st.count
        for lp in reversed(lvl.updates):
            if lp.dim == dim:
                out.append((f"{lvl.level} update({dim}) x{lp.count}", lp.count, step))
                step *= lp.count
    return out


def check_scheme(scheme: LayerScheme, arch: ArchSpec) -> Validity:
    """Check ``scheme`` on ``arch`` (a node region is ``arch.with_node_region(...)``)."""
    reasons: list[str] = []
    layer = scheme.layer.name
    onchip = arch.levels[:-1]
    names = tuple(lvl.level for lvl in scheme.levels)
    if names != tuple(level.name for level in onchip):
        return Validity((f"{layer}: levels {list(names)} do not match the hardware's on-chip levels "
                         f"{[level.name for level in onchip]}",))

    unit = dict(scheme.unit)
    for dim in DIMS:
        full = scheme.dims[dim]
        if unit.get(dim, 1) > full:
            reasons.append(f"{layer}: the PE unit block has {dim}={unit[dim]} but the layer only {full} (idle work)")
        for label, count, step in dim_loops(scheme, dim):
            if count < 1:
                reasons.append(f"{layer}: {label}: a loop count must be positive")
            elif (count - 1) * step >= full:
                reasons.append(f"{layer}: {label} steps by {step} over only {full} {dim} (idle iterations)")
        covered = scheme.nominal_tile(len(scheme.levels))[dim]
        if covered < full:
            reasons.append(f"{layer}: the loops over {dim} cover {covered} of {full} (lost work)")

    for index, (lvl, hw) in enumerate(zip(scheme.levels, onchip)):
        need = scheme.buffer_words(index) * arch.word_bytes
        if hw.capacity is not None and need > hw.capacity:
            reasons.append(f"{layer}: {hw.name} needs {need} B per unit but holds {hw.capacity} B")
        rows, cols = lvl.grid
        limit = hw.array
        if rows > limit[0] or cols > limit[1]:
            reasons.append(f"{layer}: {hw.name} stacks use {rows}x{cols} units but only "
                           f"{limit[0]}x{limit[1]} exist")
        if index == 0 and lvl.bypass:
            reasons.append(f"{layer}: {hw.name} is where the PEs compute; nothing can bypass it")
        for kind, shr in lvl.shr:
            if shr <= 1:
                continue
            if not (hw.same_level_transfer and (index == 0 or arch.options.buffer_sharing)):
                reasons.append(f"{layer}: {hw.name} shares {kind} over {shr} units but the hardware "
                               "has no neighbour transfers (or buffer sharing is off)")
            sharers = 1
            for st in lvl.stacks:
                if st.dim not in RELEVANT[kind]:
                    sharers *= st.count
            if sharers % shr:
                reasons.append(f"{layer}: {hw.name} shares {kind} over {shr} units but only "
                               f"{sharers} units hold the same {kind} block")
            if kind in lvl.bypass:
                reasons.append(f"{layer}: {hw.name} cannot both share and bypass {kind}")
    if scheme.roles and Kind.WGT not in {r.kind for r in scheme.roles}:
        for lvl in scheme.levels:
            if dict(lvl.shr).get(Kind.WGT, 1) > 1:
                reasons.append(f"{layer}: shares weights the layer does not have")
    return Validity(tuple(reasons))
