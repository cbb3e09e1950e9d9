"""CoSA (Huang et al., ISCA 2021): one-shot scheduling of a layer by mixed-integer programming, on HiGHS."""

from __future__ import annotations

from typing import Any

from kapla.search.layer.cosa.solver import CosaSolver


def register(registry: Any) -> None:
    registry.layer_solver("cosa", "CoSA: one MIP per layer places every prime factor of the loop bounds in a level, "
                          "spatially or temporally, and a rank of the buffer's loop order (HiGHS)", CosaSolver)
    registry.solver("cosa", "CoSA's one-shot MIP for every layer under TANGRAM's segment search with KAPLA's "
                    "chain policy (options time_limit, gap, w_util, w_compute, w_traffic)", "kapla", "cosa")


__all__ = ["CosaSolver", "register"]
