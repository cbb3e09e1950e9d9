"""Why a layer has no scheme: the one error line a user gets, naming the layer
and the buffer that even its smallest block overflows, or the feed constraint
that no fitting scheme meets."""

from __future__ import annotations

import numpy as np

from kapla.arch.spec import ArchSpec
from kapla.model.feed import Feed
from kapla.model.rules import held_words
from kapla.space.layer.frames import FrameEvaluator, frames
from kapla.space.problem import NoSchemeError
from kapla.workload.layer import Layer


def feed_unmet(layer: Layer, batch: int, arch: ArchSpec, feed: Feed, evaluated: int) -> NoSchemeError:
    """The error for a layer whose every fitting scheme breaks the feed's constraints."""
    wants = feed.wants()
    return NoSchemeError(
        f"layer '{layer.name}' cannot meet its feed constraint (batch {batch}, "
        f"{arch.node_array[0]}x{arch.node_array[1]} nodes): none of the {evaluated} schemes searched "
        f"that fit the buffers {' and '.join(wants) or 'meets the feed'}; "
        "run it with its data through DRAM or give it more buffer")


def no_scheme(layer: Layer, batch: int, arch: ArchSpec) -> NoSchemeError:
    """The error for a layer nothing fits: name the layer and the innermost
    buffer that even its smallest block overflows (in the frame where that
    block is smallest)."""

    candidates = frames(layer, batch, arch)
    if not candidates:
        return NoSchemeError(f"layer '{layer.name}' cannot be spread over the arrays of hardware '{arch.name}'")
    worst: tuple[int, int, str, int] | None = None  # (level, bits needed, buffer, bits held)
    for frame in candidates:
        ev = FrameEvaluator(frame, arch)
        ones = np.ones((1, len(frame.rest)), dtype=np.int64)
        for level in range(ev.levels):
            block = ev.block(level, ones, [ones] * level)
            if ev.fits(level, block)[0]:
                continue
            lvl = ev.hw.levels[level]
            words = held_words(block, ev.nests_probe, ev.hw, level)
            if lvl.split_bits:
                kind = next(k for k, w in words.items() if w[0] * ev.hw.bits[k] > lvl.split_bits[k])
                found = (level, int(words[kind][0] * ev.hw.bits[kind]), f"{lvl.name} ({kind} buffer)",
                         lvl.split_bits[kind])
            else:
                need = sum(int(w[0]) * ev.hw.bits[k] for k, w in words.items())
                found = (level, need, lvl.name, lvl.capacity_bits or 0)
            if worst is None or found[:2] < worst[:2]:
                worst = found
            break
        else:
            worst = None  # this frame's smallest blocks fit: the constraint is elsewhere
            break
    if worst is not None:
        _, need, name, cap = worst
        return NoSchemeError(f"layer '{layer.name}' does not fit: its smallest block needs {need // 8} B of "
                             f"{name} but {name} holds {cap // 8} B (batch {batch})")
    return NoSchemeError(f"layer '{layer.name}' has no valid scheme on hardware '{arch.name}' (batch {batch}): "
                         "every block that fits the buffers leaves a loop with idle iterations")


__all__ = ["feed_unmet", "no_scheme"]
