"""``kapla stats``: layer-by-layer size and work statistics of a network."""

from __future__ import annotations

import click
from rich.console import JustifyMethod
from rich.table import Table

from kapla.cli.common import console, emit_json, json_option
from kapla.workload.load import load_network
from kapla.workload.stats import network_stats

_MIB = 2**20


def _mib(n: int) -> str:
    return f"{n / _MIB:.3f}" if n else "-"


@click.command("stats")
@click.argument("net")
@click.option("--batch", type=click.IntRange(min=1), default=None,
              help="Batch size (overrides a file's or model's; zoo default 64).")
@click.option("--seq", type=click.IntRange(min=1), default=None,
              help="Sequence length binding an ONNX model's symbolic dims (transformers).")
@click.option("--training", is_flag=True, help="Statistics of the training DAG (forward + backward layers).")
@click.option("--word-bits", type=click.IntRange(min=1), default=16, show_default=True,
              help="Bits per data word.")
@json_option
def stats_cmd(net: str, batch: int | None, seq: int | None,
              training: bool, word_bits: int, json_out: str | None) -> None:
    """Print per-layer MACs and tensor sizes of NET and its totals.

    NET is a zoo name (alexnet, vgg16, vgg19, googlenet, inception_v3,
    resnet18/34/50/101/152, resnet1001, mobilenet, mlp_s/m/l, lstm_m/l, the
    transformers), a network file (.yaml/.json) or an ONNX model (.onnx).
    """
    network = load_network(net, batch=batch, training=training, seq=seq)
    st = network_stats(network, word_bits)
    if json_out is not None:
        emit_json(st.to_dict(), json_out)
        return
    table = Table(title=f"{st.name} ({'training' if st.training else 'inference'}, batch {st.batch}, "
                        f"{word_bits}-bit words)")
    columns: tuple[tuple[str, JustifyMethod], ...] = (("layer", "left"), ("operation", "left"), ("MACs", "right"),
                                                      ("output MiB", "right"), ("weights MiB", "right"))
    for col, just in columns:
        table.add_column(col, justify=just)
    for ls in st.per_layer:
        table.add_row(ls.name, ls.description, f"{ls.macs:,}" if ls.macs else "-", _mib(ls.out_bytes),
                      _mib(ls.weight_bytes))
    console.print(table)
    classes = Table(title="by op class")
    for col, just in (("class", "left"), ("layers", "right"), ("MACs", "right"), ("operations", "right"),
                      ("weights MiB", "right")):
        classes.add_column(col, justify=just)
    for cs in st.by_class:
        classes.add_row(cs.op_class, str(cs.layers), f"{cs.macs:,}" if cs.macs else "-", f"{cs.ops:,}",
                        _mib(cs.weight_bytes))
    console.print(classes)
    console.print(
        f"layers {st.layers} (CONV {st.conv_layers}, FC {st.fc_layers}"
        f"{f', MATMUL {st.matmul_layers}' if st.matmul_layers else ''})   MACs {st.macs:,}\n"
        f"fmaps  largest {st.fmap_largest_bytes / _MIB:.1f} MiB, total {st.fmap_total_bytes / _MIB:.1f} MiB\n"
        f"weights largest {st.weight_largest_bytes / _MIB:.2f} MiB, total {st.weight_total_bytes / _MIB:.2f} MiB")
