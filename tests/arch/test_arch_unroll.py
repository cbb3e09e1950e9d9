"""Unroll notations: templates, free, partition and Interstellar's U|V dims."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kapla.arch import Unroll, parse_unroll
from kapla.arch.unroll import LOOP_DIMS
from kapla.errors import ArchError


@pytest.mark.parametrize("text, expected", [
    ("row_stationary", Unroll("template", template="row_stationary")),
    ("systolic", Unroll("template", template="systolic")),
    ("free", Unroll("free")),
    ("partition", Unroll("partition")),
    ("C|K", Unroll("dims", rows=("C",), cols=("K",))),
    ("FY|Y", Unroll("dims", rows=("S",), cols=("Y",))),
    ("C,FY|K", Unroll("dims", rows=("C", "S"), cols=("K",))),
    ("C|K+repl", Unroll("dims", rows=("C",), cols=("K",), replicate=True)),
    (" c , fx | b + repl ", Unroll("dims", rows=("C", "R"), cols=("N",), replicate=True)),
    ("N,G|X,Y", Unroll("dims", rows=("N", "G"), cols=("X", "Y"))),
])
def test_valid_forms(text, expected):
    assert parse_unroll(text) == expected


@pytest.mark.parametrize("text, canonical", [
    ("FY|Y", "S|Y"), ("C, FY | K", "C,S|K"), ("C|K+repl", "C|K+repl"), ("B|FX", "N|R"),
    ("free", "free"), ("systolic", "systolic"),
])
def test_canonical_text(text, canonical):
    unroll = parse_unroll(text)
    assert unroll.text == str(unroll) == canonical
    assert parse_unroll(unroll.text) == unroll


@pytest.mark.parametrize("text, why", [
    ("", "must not be empty"),
    ("weight_stationary", "unknown unrolling (got 'weight_stationary'; expected free, partition"),
    ("C|K|X", "expected exactly one '|'"),
    ("|K", "no loop dims before '|'"),
    ("C|", "no loop dims after '|'"),
    ("C,|K", "empty dim between commas"),
    ("C|Q", "unknown loop dim 'Q' (got 'C|Q'; dims: N G C K Y X S R; aliases FY=S, FX=R, B=N)"),
    ("C|C", "loop dim C appears twice"),
    ("FY|S", "loop dim S appears twice"),
    ("C|K+more", "unknown suffix '+more'"),
])
def test_errors(text, why):
    with pytest.raises(ArchError) as info:
        parse_unroll(text)
    assert why in str(info.value) and "\n" not in str(info.value)


@given(st.lists(st.sampled_from(LOOP_DIMS), min_size=2, max_size=8, unique=True), st.data(), st.booleans())
def test_random_dims_roundtrip(dims, data, replicate):
    split = data.draw(st.integers(1, len(dims) - 1))
    unroll = Unroll("dims", rows=tuple(dims[:split]), cols=tuple(dims[split:]), replicate=replicate)
    assert parse_unroll(unroll.text) == unroll
    assert unroll.dims == tuple(dims)


def test_template_knows_its_needs():
    assert parse_unroll("systolic").needs_same_level_transfer
    assert not parse_unroll("row_stationary").needs_same_level_transfer
    assert not parse_unroll("C|K").needs_same_level_transfer
    assert parse_unroll("free").template_spec is None
