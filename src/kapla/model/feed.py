"""Where a layer's data come from and go to inside a segment, and the rule that goes with it.

A layer that runs inside a segment may get its input fmap forwarded on chip
from a producer, keep its output on chip for its consumers, or find its
weights pinned in the buffers for the whole run (model pinning). Such data
never touch DRAM, so they must be fetched once: a forwarded input read
twice, an on-chip output spilling partial sums, or pinned weights reloaded
would need a second copy that does not exist (:func:`feed_violations`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from kapla.dataflow.tensors import Kind, TensorRole
from kapla.model.rules import Violation

#: Float noise allowed when comparing top-level reads with the tensor's size.
ONCE_TOLERANCE = 1.000001


@dataclass(frozen=True)
class Feed:
    """Where a layer's data come from and go to, when it runs inside a segment.

    ``ifm_hops``: the input fmap is forwarded on chip from a producer this
    many hops away (None: it comes from DRAM); ``ifm_share``: the share of
    its words forwarded, the rest read from DRAM (a layer reading an fmap
    its segment makes and one it does not; read once all the same, as the
    two are read side by side); ``to_dram``: the output is
    written to DRAM (else it stays on chip for its consumers); ``pinned``:
    the weights were loaded once and stay on chip; ``dram_hops``: mean hops
    between the layer's nodes and their DRAM channels (None: computed as if
    the layer's block of nodes sat at the chip's origin); ``free_bypassed_pins``:
    pinned weights a scheme's node level bypasses cost no read anywhere
    (nn_dataflow's counting of its own schedules, kept for them alone: the
    weights live in the node buffers, so kapla reads them there).
    """

    ifm_hops: float | None = None
    to_dram: bool = True
    pinned: bool = False
    dram_hops: float | None = None
    ifm_share: float = 1.0
    free_bypassed_pins: bool = False

    @property
    def on_chip(self) -> bool:
        """Some data stay on chip (the layer has constraints beyond its buffers)."""
        return self.ifm_hops is not None or not self.to_dram or self.pinned

    @property
    def kept(self) -> frozenset[Kind]:
        """The tensors that stay on chip: they cross DRAM at most once, whatever the scheme."""
        return frozenset(k for k, on in ((Kind.IFM, self.ifm_hops is not None), (Kind.OFM, not self.to_dram),
                                         (Kind.WGT, self.pinned)) if on)

    def wants(self) -> list[str]:
        """What the feed asks of a scheme, in words (for error messages)."""
        out = []
        if self.ifm_hops is not None:
            out.append("reads its forwarded input once")
        if not self.to_dram:
            out.append("keeps its output on chip without spilling partial sums")
        if self.pinned:
            out.append("fetches its pinned weights once")
        return out


FROM_DRAM = Feed()


def feed_violations(roles: tuple[TensorRole, ...], top_reads: np.ndarray, once: np.ndarray,
                    feed: Feed | None) -> list[Violation]:
    """Per broken constraint, the ``(M,)`` nests that break it. ``top_reads``:
    ``(R, M)`` reads each role's outermost level makes of its parent (DRAM);
    ``once``: ``(R,)`` words of each role, whole."""
    if feed is None or not feed.on_chip:
        return []
    out = []
    for r, role in enumerate(roles):
        reads = top_reads[r]
        times = reads / once[r]
        if role.kind == Kind.IFM and not role.written and feed.ifm_hops is not None:
            out.append(Violation(reads > once[r] * ONCE_TOLERANCE, partial(_read_again, times)))
        if role.written and not feed.to_dram:
            out.append(Violation(reads > 0, lambda m: "partial sums of an output kept on chip would spill to DRAM"))
        if role.kind == Kind.WGT and not role.written and feed.pinned:
            out.append(Violation(reads > once[r] * ONCE_TOLERANCE, lambda m: "pinned weights would be reloaded"))
    return out


def _read_again(times: np.ndarray, m: int) -> str:
    return f"the forwarded input is read {times[m]:.3g} times; on-chip data can be read only once"


__all__ = ["FROM_DRAM", "Feed", "feed_violations"]
