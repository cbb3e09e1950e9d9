"""Every JSON document a CLI test makes kapla write is checked against the
published schema (docs/result-schema.json) before it is written."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st

import kapla.cli.arch_cmd
import kapla.cli.common
import kapla.cli.import_cmd
import kapla.cli.report_cmd
import kapla.cli.schedule_cmd
import kapla.cli.stats_cmd

# CI explores the same examples every run (a red CI blocks landing); elsewhere each run explores new ones
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# the modules that call emit_json (compare, explore and dataflows write theirs through report_cmd's write_outputs)
WRITERS = (kapla.cli.arch_cmd, kapla.cli.import_cmd, kapla.cli.report_cmd, kapla.cli.schedule_cmd,
           kapla.cli.stats_cmd)
CHECKED: list[dict] = []  # the documents checked in this session (a test asserts some were)


@pytest.fixture(autouse=True)
def _json_outputs_follow_the_schema(monkeypatch):
    from jsonschema import Draft202012Validator

    from kapla.schemas import result_schema

    validator = Draft202012Validator(result_schema())
    emit = kapla.cli.common.emit_json

    def checked(data, target):
        validator.validate(data)
        CHECKED.append(data)
        emit(data, target)

    for module in WRITERS:
        monkeypatch.setattr(module, "emit_json", checked)


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@cache
def small_hierarchy(name: str):
    """A preset by name (a multinode array cut to 2x2 nodes, to keep searches
    small) or an example file (``name.yaml``), loaded once."""
    from kapla.arch import load_arch

    if name.endswith(".yaml"):
        return load_arch(EXAMPLES / name)
    arch = load_arch(name)
    return arch.with_node_region(2, 2) if arch.node_level is not None and name.startswith("multinode") else arch


@st.composite
def small_layers(draw, c: int = 24, h: tuple[int, int] = (1, 14), k: int = 40, s: int = 5, stride: int = 2,
                 dilated: bool = False):
    """Small CONV, depthwise, FC and pooling layers (and 2x2 filters dilated by 2
    if ``dilated``), with at most ``c`` input channels, ``k`` output channels and
    ``s`` filter rows, fmaps of ``h`` rows and strides up to ``stride``."""
    from kapla.workload.layer import Layer, Op

    kind = draw(st.sampled_from(["conv", "dw", "fc", "pool"] + (["dilated"] if dilated else [])))
    channels = draw(st.integers(1, c))
    rows = draw(st.integers(*h))
    if kind == "fc":
        return Layer("L", Op.FC, c=channels, k=draw(st.integers(1, k)), h=rows, w=rows, s=rows, r=rows)
    size = draw(st.integers(1, min(rows, s)))
    step = draw(st.integers(1, stride))
    if kind == "pool":
        return Layer("L", Op.POOL, c=channels, k=channels, h=rows, w=rows, s=size, r=size, stride=(step, step),
                     mode="max")
    if kind == "dilated":
        return Layer("L", Op.CONV, c=channels, k=draw(st.integers(1, k // 2)), h=rows + 4, w=rows + 4, s=2, r=2,
                     dilation=(2, 2))
    groups = channels if kind == "dw" else 1
    out = channels if kind == "dw" else draw(st.integers(1, k))
    return Layer("L", Op.CONV, c=channels, k=out, h=rows, w=rows, s=size, r=size, stride=(step, step), groups=groups)


#: A block of layers wired at random, for :func:`repeated_blocks`: per layer, two earlier layers of
#: the block (indices, taken modulo), whether to join them and the width of an fc otherwise
random_block = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.booleans(), st.sampled_from([16, 32])),
                        min_size=2, max_size=5)


def repeated_blocks(block, taps, training: bool = False):
    """A network of ``block`` (:data:`random_block`: fcs of two widths, additions joining two
    fmaps of one width) repeated once per entry of ``taps``, the blocks whose entry is true also
    read at the end: segments alike in shape but not in where their data come from or go."""
    from kapla.workload.network import NetworkBuilder

    b = NetworkBuilder("random", 4)
    x = b.fc("stem", b.input("x", 16), 16)
    tapped = []
    for n, tap in enumerate(taps):
        local = [x]
        for i, (p, q, join, width) in enumerate(block):
            a, c = local[p % len(local)], local[q % len(local)]
            if join and a != c and b.shape_of(a) == b.shape_of(c):
                local.append(b.eltwise(f"add{n}_{i}", [a, c]))
            else:
                local.append(b.fc(f"fc{n}_{i}", a, width))
        if tap:
            tapped.append(b.fc(f"tap{n}", local[1], 16))
        x = b.fc(f"out{n}", local[-1], 16)
    if tapped:
        b.eltwise("taps", tapped + [x] if len(tapped) > 1 else [tapped[0], x])
    return b.build(training=training)
