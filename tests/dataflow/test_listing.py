"""The directive listing: KAPLA's CONV + depthwise CONV example, written,
printed, parsed back and evaluated on the multi-node hardware."""

import pytest

from kapla.arch import load_arch
from kapla.dataflow.directives import LayerScheme, LevelScheme, Loop
from kapla.dataflow.examples import kapla_example
from kapla.dataflow.listing import format_scheme, parse_scheme
from kapla.dataflow.tensors import Kind
from kapla.errors import SpecError
from kapla.model import evaluate
from kapla.model.hardware import hardware
from kapla.model.nests import from_schemes
from kapla.model.rules import buffer_words
from kapla.workload.load import load_network


def paper_example():
    return kapla_example()


def test_paper_example_prints_in_listing_style():
    net, conv, dw = paper_example()
    text = format_scheme(conv)
    assert "tensor{data}(N=4, C=16, Yi=19, Xi=19, shr=4)" in text
    assert "stack(K+=6, repl=4x1)" in text and "stack(N+=4, repl=16)" in text
    assert "update(K+=24)  # x4" in text
    assert "stack(S+=1, Yi+=1, repl=5x1)" in text and "update(Xo+=1, Xi+=1)  # x15" in text
    # The depthwise layer reads what the CONV writes: same tensor name, same top-level order.
    dw_text = format_scheme(dw)
    assert "tensor{conv}(N=4, G=4, Yi=17, Xi=10)" in dw_text
    assert "tensor{dwconv}(N=4, G=4, Yo=15, Xo=8)" in dw_text  # 2 folds x 8 PE columns, clipped to 15
    assert "update(G+=24)  # x4" in dw_text


@pytest.mark.parametrize("which", [1, 2])
def test_paper_example_round_trips(which):
    net, *schemes = paper_example()
    scheme = schemes[which - 1]
    back = parse_scheme(format_scheme(scheme), {layer.name: layer for layer in net})
    assert back == scheme
    assert format_scheme(back) == format_scheme(scheme)


def test_paper_example_evaluates_on_multinode():
    net, conv, dw = paper_example()
    arch = load_arch("multinode")
    conv_cost = evaluate(conv, arch.with_node_region(4, 16))
    dw_cost = evaluate(dw, arch.with_node_region(12, 16))
    assert conv_cost.valid, conv_cost.validity
    assert dw_cost.valid, dw_cost.validity
    assert conv_cost.ops == 64 * 96 * 16 * 15 * 15 * 25
    assert conv_cost.noc_hops > 0 and dw_cost.noc_hops > 0
    # Buffer sharing: the 4 K-nodes store one copy of their common input.
    held = buffer_words(from_schemes([conv]), hardware(arch.with_node_region(4, 16)), 1)
    assert held[Kind.IFM][0] == 4 * 16 * 19 * 19 // 4
    # Without sharing the node buffer overflows.
    unshared = LayerScheme(conv.layer, 64, conv.unit, (conv.levels[0],
                           LevelScheme("GBUF", conv.levels[1].stacks, conv.levels[1].updates)))
    verdict = evaluate(unshared, arch.with_node_region(4, 16)).validity
    assert not verdict.ok and "GBUF needs" in str(verdict)


@pytest.mark.parametrize("mutate, message", [
    (lambda t: t.replace("layer conv batch=64", "layer nope batch=64"), "unknown layer 'nope'"),
    (lambda t: t.replace("update(K+=24)", "update(K+=25)"), r"tensor holds K=6 but the stacks and updates imply 8"),
    (lambda t: t.replace("update(K+=24)", "update(K+=200)"), r"update\(K\+=200\) steps outside the 96"),
    (lambda t: t.replace("stack(N+=4, repl=16)", "stack(N+=4, repl=8)"),
     "tensor holds N=4 but the stacks and updates imply 8"),
    (lambda t: t.replace("tensor{conv.w}(C=16, K=6,", "tensor{conv.w}(C=16, K=5,"),
     "a wgt tensor holds K=5 but the stacks and updates imply 6"),
    (lambda t: t.replace("tensor{conv.w}", "tensor{other.w}", 1), "tensors hold|innermost blocks"),
    (lambda t: t + "\n    frobnicate(K+=1)", "cannot read 'frobnicate"),
])
def test_malformed_listings_are_reported(mutate, message):
    net, conv, _ = paper_example()
    with pytest.raises(SpecError, match=message):
        parse_scheme(mutate(format_scheme(conv)), {layer.name: layer for layer in net})


def test_a_listing_whose_window_is_skipped_by_its_stride_reads_back():
    # A 3x3/2 pooling layer whose innermost block is one column of its window reads
    # every other input column: its input block (14 columns for 14 outputs) is no
    # span to solve the window from (GoogLeNet's pool1 in a schedule).
    layer = load_network("googlenet", batch=8)["pool1"]
    arch = load_arch("edge")
    unit = {"X": 14}
    loops = tuple(Loop(d, -(-n // unit.get(d, 1))) for d, n in LayerScheme(layer, 8, (), ()).dims.items()
                  if -(-n // unit.get(d, 1)) > 1)
    scheme = LayerScheme(layer, 8, tuple(unit.items()),
                         (LevelScheme(arch.levels[0].name, (), ()), LevelScheme(arch.levels[1].name, (), loops)),
                         ifm_name="conv1")
    text = format_scheme(scheme)
    assert "Xi=14" in text.splitlines()[2]
    assert parse_scheme(text, {"pool1": layer}) == scheme
    with pytest.raises(SpecError, match="its input block holds Xi=27 but its R window reads 14"):
        parse_scheme(text.replace("Xi=14", "Xi=27", 1), {"pool1": layer})
