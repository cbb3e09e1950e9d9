"""Interstellar's dataflow taxonomy (Sec. 3.2): a dataflow is the pair of loops
unrolled over the PE array's rows and columns, ``U|V``.

A layer's loops are N (batch), G (groups), C, K, Y, X, FY and FX; those of
bound 1 in every layer of the network are left out (an FC network has N, C
and K: 3 dataflows; a CONV network 21, with G 28). Pairs are unordered, as
the paper counts them (on a square array ``U|V`` and ``V|U`` are mirror
images), and written with the loops in the paper's order, FX FY X Y C K N G
(``C|K``, ``FY|Y``, ``X|Y``). With replication (the default) rows or columns
a loop leaves idle may run another loop (``C|K+repl``, the paper's ``U|VW``).

Each dataflow is one point of a hardware sweep (:mod:`kapla.explore.explore`):
the network scheduled on the hardware with that PE-array unrolling, blocking
and loop order optimised by the solver, reported with its energy and PE
utilisation, best first.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kapla.arch.spec import ArchSpec
from kapla.explore.explore import Exploration, explore
from kapla.explore.grid import Field
from kapla.explore.store import PointStore
from kapla.workload.layer import Layer
from kapla.workload.network import Network

#: The loops in the order Interstellar writes them, with the spec's names.
LOOPS = (("FX", "R"), ("FY", "S"), ("X", "X"), ("Y", "Y"), ("C", "C"), ("K", "K"), ("N", "N"), ("G", "G"))
_SPEC_NAME = dict(LOOPS)
_PAPER_NAME = {spec: paper for paper, spec in LOOPS}


def loop_bounds(layer: Layer, batch: int) -> dict[str, int]:
    """A layer's loop bounds by Interstellar's names (C and K per group)."""
    g = layer.groups
    return {"N": batch, "G": g, "C": layer.c // g, "K": layer.k // g, "Y": layer.yo, "X": layer.xo,
            "FY": layer.s, "FX": layer.r}


def looping(network: Network) -> list[str]:
    """The loops of bound > 1 in some MAC layer of ``network``, in the paper's order."""
    used: set[str] = set()
    for layer in network.layers:
        if layer.macs > 0:
            used |= {name for name, bound in loop_bounds(layer, network.batch).items() if bound > 1}
    return [paper for paper, _ in LOOPS if paper in used]


def taxonomy(network: Network, replication: bool = True) -> list[str]:
    """Every dataflow ``U|V`` of ``network`` (see the module), as the spec writes it."""
    loops = looping(network)
    suffix = "+repl" if replication else ""
    return [f"{_SPEC_NAME[u]}|{_SPEC_NAME[v]}{suffix}" for u, v in itertools.combinations(loops, 2)]


def paper_name(unroll: str) -> str:
    """A spec's ``S|Y+repl`` as Interstellar writes it, ``FY|Y+repl``."""
    body, plus, rest = unroll.partition("+")
    sides = ["|".join(",".join(_PAPER_NAME.get(d, d) for d in side.split(",")) for side in body.split("|"))]
    return sides[0] + (plus + rest if plus else "")


def unroll_field(arch: ArchSpec, values: list[str]) -> Field:
    """The sweep field that sets the PE array's unrolling (its level's ``unroll``
    where the spec gives one there, else the top-level ``pe_mapping``)."""
    pe = arch.levels[0]
    path = f"{pe.name}.unroll" if pe.unroll is not None else "pe_mapping"
    return Field("dataflow", path, tuple(values), tuple(paper_name(v) for v in values))


def dataflows(network: Network, arch: ArchSpec, *, replication: bool = True, solver: str = "kapla",
              options: dict[str, Any] | None = None, objective: str = "energy", jobs: int | None = None,
              executor: str = "local", address: str | None = None, store: PointStore | str | Path | None = None,
              progress: Callable[[int, int], None] | None = None) -> Exploration:
    """``network`` scheduled under every dataflow of its taxonomy on ``arch``."""
    field = unroll_field(arch, taxonomy(network, replication))
    return explore(network, arch, [field], solver=solver, options=options, objective=objective, jobs=jobs,
                   executor=executor, address=address, store=store, progress=progress)


__all__ = ["LOOPS", "dataflows", "loop_bounds", "looping", "paper_name", "taxonomy", "unroll_field"]
