"""The evaluator's independent validity check of a layer scheme on hardware.

A scheme is valid when

* it has one entry per on-chip memory level of the hardware, in order;
* its loops cover every loop dimension of the layer exactly: splitting each
  dimension top-down by the counts of its updates and stacks (each block the
  ceiling of its parent over the count) ends at the PE unit block, and no loop
  has more iterations than the extent it splits, so no work is lost and no
  iteration is wholly idle;
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


def split_chain(scheme: LayerScheme, dim: str) -> list[tuple[str, int, int]]:
    """(where, count, extent it splits) for each loop over ``dim``, outermost first."""
    extent = scheme.dims[dim]
    chain = []
    for lvl in reversed(scheme.levels):
        # updates move the stacked group through the parent block, so they split first
        loops = [("update", lp.count) for lp in lvl.updates if lp.dim == dim]
        loops += [("stack", st.count) for st in lvl.stacks if st.dim == dim]
        for kind, count in loops:
            chain.append((f"{lvl.level} {kind}({dim}) x{count}", count, extent))
            extent = -(-extent // count) if count > 0 else extent
    chain.append(("unit", 0, extent))
    return chain


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
        chain = split_chain(scheme, dim)
        for where, count, extent in chain[:-1]:
            if count < 1:
                reasons.append(f"{layer}: {where}: a loop count must be positive")
            elif count > extent:
                reasons.append(f"{layer}: {where} splits only {extent} {dim} (idle iterations)")
        final = chain[-1][2]
        if unit.get(dim, 1) != final:
            reasons.append(f"{layer}: loops over {dim} leave blocks of {final} but the PE unit "
                           f"block has {unit.get(dim, 1)} ({'lost' if unit.get(dim, 1) < final else 'idle'} work)")

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
