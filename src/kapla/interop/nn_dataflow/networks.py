"""nn_dataflow's example networks (its ``nns/`` package) as kapla networks.

Layer names, shapes and connectivity are nn_dataflow's, so a run's
``schedules`` keys name kapla layers directly. nn_dataflow states a layer by
its output (``ConvLayer(nifm, nofm, sofm, sfil, strd)``) and derives the input
it reads as ``(sofm - 1) * strd + sfil``; where that is larger than what the
producers deliver, the difference is zero padding. kapla states padding
explicitly, so :class:`_Builder` pads each producer's fmap up to nn_dataflow's
input (the extra row and column of an odd amount at the bottom and right).
kapla reads the padded input just as nn_dataflow does, so data volumes match.

nn_dataflow counts a pooling layer's window reads as ``ops``; kapla's
``Layer.loop_ops`` counts the same loop nest (its ``macs`` are 0 for pooling).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kapla.errors import InteropError, NetworkError
from kapla.interop.nn_dataflow.reader import NnDataflowRun
from kapla.workload.network import Network, NetworkBuilder

#: nn_dataflow's name of a network's input (``Network.INPUT_LAYER_KEY``).
INPUT = "__INPUT__"


class _Builder:
    """A kapla :class:`NetworkBuilder` driven by nn_dataflow's layer parameters."""

    def __init__(self, name: str, batch: int, channels: int, size: int) -> None:
        self.b = NetworkBuilder(name, batch)
        self.b.input(INPUT, channels, size)

    def conv(self, name: str, prevs: Sequence[str], nifm: int, nofm: int, sofm: int, sfil: int,
             strd: int = 1) -> None:
        pad = self._padding(name, prevs, nifm, (sofm - 1) * strd + sfil)
        self.b.conv(name, list(prevs), nofm, sfil, stride=strd, pad=pad)
        self._check_output(name, nofm, sofm)

    def fc(self, name: str, prevs: Sequence[str], nifm: int, nofm: int, sfil: int = 1) -> None:
        self._padding(name, prevs, nifm, sfil)
        self.b.fc(name, list(prevs), nofm)

    def pool(self, name: str, prevs: Sequence[str], nofm: int, sofm: int, sreg: int, strd: int | None = None) -> None:
        strd = sreg if strd is None else strd
        pad = self._padding(name, prevs, nofm, (sofm - 1) * strd + sreg)
        self.b.pool(name, list(prevs), sreg, stride=strd, pad=pad)
        self._check_output(name, nofm, sofm)

    def build(self) -> Network:
        return self.b.build()

    def _padding(self, name: str, prevs: Sequence[str], nifm: int, need: int) -> tuple[int, int, int, int]:
        """(top, left, bottom, right) zero padding that makes the producers' fmap ``need`` wide."""
        shapes = [self.b.shape_of(p) for p in prevs]
        channels = sum(s.c for s in shapes)
        if channels != nifm:
            raise NetworkError(f"layer '{name}': producers {list(prevs)} give {channels} channels, "
                               f"nn_dataflow's layer reads {nifm}")
        have = shapes[0].h
        # A larger input than nn_dataflow's (a stride that does not divide it) is read
        # only up to the last window; kapla's output size rounds down the same way.
        total = max(need - have, 0)
        return (total // 2, total // 2, total - total // 2, total - total // 2)

    def _check_output(self, name: str, nofm: int, sofm: int) -> None:
        shape = self.b.shape_of(name)
        if (shape.c, shape.h, shape.w) != (nofm, sofm, sofm):
            raise NetworkError(f"layer '{name}': kapla's output {shape} differs from nn_dataflow's "
                               f"{nofm}x{sofm}x{sofm}")


def alex_net(batch: int) -> Network:
    """nn_dataflow's ``alex_net``: the two-tower AlexNet, LRN ignored, input 3x224."""
    b = _Builder("alex_net", batch, 3, 224)
    for t in "ab":
        b.conv(f"conv1_{t}", [INPUT], 3, 48, 55, 11, 4)
    for t in "ab":
        b.pool(f"pool1_{t}", [f"conv1_{t}"], 48, 27, 3, strd=2)
    for t in "ab":
        b.conv(f"conv2_{t}", [f"pool1_{t}"], 48, 128, 27, 5)
    for t in "ab":
        b.pool(f"pool2_{t}", [f"conv2_{t}"], 128, 13, 3, strd=2)
    for t in "ab":
        b.conv(f"conv3_{t}", ["pool2_a", "pool2_b"], 256, 192, 13, 3)
    for t in "ab":
        b.conv(f"conv4_{t}", [f"conv3_{t}"], 192, 192, 13, 3)
    for t in "ab":
        b.conv(f"conv5_{t}", [f"conv4_{t}"], 192, 128, 13, 3)
    for t in "ab":
        b.pool(f"pool3_{t}", [f"conv5_{t}"], 128, 6, 3, strd=2)
    b.fc("fc1", ["pool3_a", "pool3_b"], 256, 4096, 6)
    b.fc("fc2", ["fc1"], 4096, 4096)
    b.fc("fc3", ["fc2"], 4096, 1000)
    return b.build()


def _mlp(name: str, sizes: Sequence[int]) -> Callable[[int], Network]:
    """A PRIME MLP: FC layers fc1, fc2, ... on 784 inputs."""

    def build(batch: int) -> Network:
        b = _Builder(name, batch, 784, 1)
        prev = INPUT
        for i, (nifm, nofm) in enumerate(zip((784, *sizes[:-1]), sizes, strict=True), start=1):
            b.fc(f"fc{i}", [prev], nifm, nofm)
            prev = f"fc{i}"
        return b.build()

    build.__doc__ = f"nn_dataflow's ``{name}``: FC 784-{'-'.join(map(str, sizes))}."
    return build


#: nn_dataflow network name -> kapla network at a batch size.
NETWORKS: dict[str, Callable[[int], Network]] = {
    "alex_net": alex_net,
    "mlp_s": _mlp("mlp_s", (500, 250, 10)),
    "mlp_m": _mlp("mlp_m", (1000, 500, 250, 10)),
    "mlp_l": _mlp("mlp_l", (1500, 1000, 500, 10)),
}


def nn_dataflow_network(name: str, batch: int) -> Network:
    """nn_dataflow's network ``name`` at ``batch``; InteropError for a name kapla does not know."""
    if name not in NETWORKS:
        raise InteropError(f"unknown nn_dataflow network {name!r} (kapla knows {', '.join(sorted(NETWORKS))})")
    return NETWORKS[name](batch)


def network_of_run(run: NnDataflowRun) -> Network:
    """The network ``run`` scheduled, checked against its schedules.

    Every layer is scheduled once and every scheduled layer is the network's,
    with the file's ``ops`` equal to the layer's loop-nest iterations at the
    run's batch: a file made from another definition of the network fails here.
    """
    try:
        net = nn_dataflow_network(run.net, run.batch)
    except InteropError as err:
        raise InteropError(f"{run.source}: net: {err}") from None
    for name, sched in run.schedules.items():
        if name not in net:
            raise InteropError(f"{run.source}: schedules.{name}: no layer {name!r} in nn_dataflow's {run.net} "
                               f"(its layers: {', '.join(layer.name for layer in net.layers)})")
        expected = net[name].loop_ops * net.batch
        # nn_dataflow computes ops in floating point (8000000.000000001 for mlp_s's fc2)
        if not math.isclose(sched.ops, expected, rel_tol=1e-9):
            raise InteropError(f"{run.source}: schedules.{name}.ops: {sched.ops:,.0f} but layer {name} of "
                               f"{run.net} performs {expected:,} at batch {net.batch}")
    missing = [layer.name for layer in net.layers if layer.name not in run.schedules]
    if missing:
        raise InteropError(f"{run.source}: schedules: no schedule for {', '.join(missing)} of {run.net}")
    return net
