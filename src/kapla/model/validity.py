"""The evaluator's independent validity check of a layer scheme on hardware.

The rules themselves live in :mod:`kapla.model.rules` (coverage, capacity,
arrays, sharing), written once for one scheme and for many; this module
applies them to one scheme and says, one line each, which constraints it
breaks. The check never trusts a solver: it recomputes everything from the
directives.
"""

from __future__ import annotations

from dataclasses import dataclass

from kapla.arch.spec import ArchSpec
from kapla.dataflow.directives import LayerScheme
from kapla.model.hardware import hardware
from kapla.model.nests import Nests, from_schemes
from kapla.model.rules import arrays, capacity_violations, coverage, idle_dims, sharing


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


def level_mismatch(scheme: LayerScheme, arch: ArchSpec) -> str | None:
    """Why the scheme's levels are not the hardware's on-chip levels, if they are not."""
    names = [lvl.level for lvl in scheme.levels]
    onchip = [level.name for level in arch.levels[:-1]]
    if names != onchip:
        return f"{scheme.layer.name}: levels {names} do not match the hardware's on-chip levels {onchip}"
    return None


def check_scheme(scheme: LayerScheme, arch: ArchSpec, nests: Nests | None = None) -> Validity:
    """Check ``scheme`` on ``arch`` (a node region is ``arch.with_node_region(...)``)."""
    mismatch = level_mismatch(scheme, arch)
    if mismatch:
        return Validity((mismatch,))
    nests = from_schemes([scheme]) if nests is None else nests
    hw = hardware(arch)
    layer = scheme.layer.name
    reasons = [f"{layer}: {why}" for why in idle_dims(coverage(nests))]
    for v in capacity_violations(nests, hw) + arrays(nests, hw) + sharing(nests, hw):
        if v.mask[0]:
            reasons.append(f"{layer}: {v.describe(0)}")
    return Validity(tuple(reasons))


__all__ = ["Validity", "check_scheme", "level_mismatch"]
