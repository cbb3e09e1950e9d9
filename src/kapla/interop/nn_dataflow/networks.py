"""nn_dataflow's example networks (its ``nns/`` package) as kapla networks.

Every network of nn_dataflow's zoo is here (:data:`NETWORKS`): AlexNet,
ZFNet, VGG-16 and -19, GoogLeNet, ResNet-50 and -152, the PRIME MLPs and
the three LSTMs (GNMT, phoneme, Show and Tell). Layer names, shapes and
connectivity are nn_dataflow's, so a run's ``schedules`` keys name kapla
layers directly. A layer states its producers as nn_dataflow's ``prevs``
do; none stated means the layer added last.

nn_dataflow states a layer by its output (``ConvLayer(nifm, nofm, sofm,
sfil, strd)``) and derives the input it reads as ``(sofm - 1) * strd +
sfil``; where that is larger than what the producers deliver, the
difference is zero padding. kapla states padding explicitly, so
:class:`_Builder` pads each producer's fmap up to nn_dataflow's input (the
extra row and column of an odd amount at the bottom and right). kapla reads
the padded input just as nn_dataflow does, so data volumes match. Where
nn_dataflow's input is smaller (a 1x1 convolution of stride 2 reads 55 of
56 rows), kapla's output size rounds down to the same ``sofm``.

How each nn_dataflow layer kind maps, and how its ``ops`` compare with the
layer's kapla loop nest (:func:`nn_dataflow_ops`):

* ``ConvLayer``/``FCLayer``: kapla's conv/fc; nn_dataflow's ``ops`` are the
  MACs, ``Layer.loop_ops``.
* ``PoolingLayer``: kapla's (max) pool; nn_dataflow counts a window's reads
  per output, ``Layer.loop_ops`` counts the same loop nest (its ``macs`` are 0).
* ``EltwiseLayer(nofm, sofm, nreg)``: kapla's eltwise layer over its
  ``nreg`` producers (each delivers the whole ``nofm`` x ``sofm`` fmap;
  nn_dataflow's ``nifm`` is their ``nreg * nofm`` channels). nn_dataflow
  counts ``nreg`` operations per output element, one per operand it merges;
  kapla's eltwise loop nest has one iteration per output element, however
  many operands it reads, so nn_dataflow's ``ops`` are ``Layer.loop_ops``
  times ``n_inputs``. The mode says what the layer computes -- ``add`` for
  a residual sum and the LSTM's new cell state, ``mul`` for the LSTM's gated
  products -- and a one-operand layer (the LSTMs' output ``Wd``, which
  nn_dataflow notes as log/softmax but counts one operation per element) is
  ``unary``, kapla's one-operation-per-element vector mode.
* the external inputs of an LSTM cell (``add_ext``: initial cell state
  ``C`` and output ``h``, ``size`` x 1 x 1) are kapla network inputs beside
  :data:`INPUT`; nn_dataflow schedules no layer for them.

nn_dataflow ignores local response normalisation (AlexNet, ZFNet,
GoogLeNet) and has no pooling in GoogLeNet's pool-projection branch (its
1x1 ``pool_proj`` convolution reads the module's input): neither does kapla here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kapla.errors import InteropError, NetworkError
from kapla.interop.nn_dataflow.reader import NnDataflowRun
from kapla.workload.layer import Layer, Op
from kapla.workload.network import Network, NetworkBuilder

#: nn_dataflow's name of a network's input (``Network.INPUT_LAYER_KEY``).
INPUT = "__INPUT__"

#: Producers as nn_dataflow states them: names, or None for the layer added last.
Prevs = Sequence[str] | None


class _Builder:
    """A kapla :class:`NetworkBuilder` driven by nn_dataflow's layer parameters."""

    def __init__(self, name: str, batch: int, channels: int, size: int) -> None:
        self.b = NetworkBuilder(name, batch)
        self.b.input(INPUT, channels, size)
        self.last = INPUT

    def ext(self, name: str, nofm: int) -> str:
        """An external input of ``nofm`` x 1 x 1 (nn_dataflow's ``add_ext``: an LSTM's initial state)."""
        return self.b.input(name, nofm, 1)

    def conv(self, name: str, prevs: Prevs, nifm: int, nofm: int, sofm: int, sfil: int,
             strd: int = 1) -> str:
        srcs = self._prevs(prevs)
        pad = self._padding(name, srcs, nifm, (sofm - 1) * strd + sfil)
        self.b.conv(name, srcs, nofm, sfil, stride=strd, pad=pad)
        return self._added(name, nofm, sofm)

    def fc(self, name: str, prevs: Prevs, nifm: int, nofm: int, sfil: int = 1) -> str:
        srcs = self._prevs(prevs)
        self._padding(name, srcs, nifm, sfil)
        self.b.fc(name, srcs, nofm)
        return self._added(name, nofm, 1)

    def pool(self, name: str, prevs: Prevs, nofm: int, sofm: int, sreg: int, strd: int | None = None) -> str:
        srcs = self._prevs(prevs)
        strd = sreg if strd is None else strd
        pad = self._padding(name, srcs, nofm, (sofm - 1) * strd + sreg)
        self.b.pool(name, srcs, sreg, stride=strd, pad=pad)
        return self._added(name, nofm, sofm)

    def eltwise(self, name: str, prevs: Prevs, nofm: int, sofm: int, nreg: int, mode: str) -> str:
        """nn_dataflow's ``EltwiseLayer(nofm, sofm, nreg)``: ``nreg`` producers, each ``nofm`` x ``sofm``."""
        srcs = self._prevs(prevs)
        shapes = [self.b.shape_of(p) for p in srcs]
        if len(srcs) != nreg or any((s.c, s.h, s.w) != (nofm, sofm, sofm) for s in shapes):
            got = ", ".join(f"'{p}' {s}" for p, s in zip(srcs, shapes, strict=True))
            raise NetworkError(f"layer '{name}': nn_dataflow's eltwise layer merges {nreg} fmaps of "
                               f"{nofm}x{sofm}x{sofm}, its producers give {got}")
        self.b.eltwise(name, srcs, mode=mode)
        return self._added(name, nofm, sofm)

    def build(self) -> Network:
        return self.b.build()

    def _prevs(self, prevs: Prevs) -> list[str]:
        return [self.last] if prevs is None else list(prevs)

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

    def _added(self, name: str, nofm: int, sofm: int) -> str:
        shape = self.b.shape_of(name)
        if (shape.c, shape.h, shape.w) != (nofm, sofm, sofm):
            raise NetworkError(f"layer '{name}': kapla's output {shape} differs from nn_dataflow's "
                               f"{nofm}x{sofm}x{sofm}")
        self.last = name
        return name


def nn_dataflow_ops(layer: Layer) -> int:
    """The operations per sample nn_dataflow counts for ``layer``: its loop-nest
    iterations, one per operand for an eltwise layer (see the module's notes)."""
    if layer.op == Op.ELTWISE:
        return layer.loop_ops * layer.n_inputs
    return layer.loop_ops


# ------------------------------------------------------------------- CNNs


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


def zfnet(batch: int) -> Network:
    """nn_dataflow's ``zfnet``: ZFNet (Zeiler and Fergus), LRN ignored, input 3x224."""
    b = _Builder("zfnet", batch, 3, 224)
    b.conv("conv1", None, 3, 96, 110, 7, 2)
    b.pool("pool1", None, 96, 55, 3, strd=2)
    b.conv("conv2", None, 96, 256, 26, 5, 2)
    b.pool("pool2", None, 256, 13, 3, strd=2)
    b.conv("conv3", None, 256, 512, 13, 3)
    b.conv("conv4", None, 512, 1024, 13, 3)
    b.conv("conv5", None, 1024, 512, 13, 3)
    b.pool("pool3", None, 512, 6, 3, strd=2)
    b.fc("fc1", None, 512, 4096, 6)
    b.fc("fc2", None, 4096, 4096)
    b.fc("fc3", None, 4096, 1000)
    return b.build()


def _vgg(name: str, convs: Sequence[int]) -> Callable[[int], Network]:
    """A VGG net: five stages of 3x3 convolutions (``convs`` per stage, numbered
    on through the net) each closed by a 2x2 pool, then FC 4096-4096-1000."""

    def build(batch: int) -> Network:
        b = _Builder(name, batch, 3, 224)
        nifm, i = 3, 0
        for stage, (count, nofm) in enumerate(zip(convs, (64, 128, 256, 512, 512), strict=True), start=1):
            sofm = 224 >> (stage - 1)
            for _ in range(count):
                i += 1
                b.conv(f"conv{i}", None, nifm, nofm, sofm, 3)
                nifm = nofm
            b.pool(f"pool{stage}", None, nofm, sofm // 2, 2)
        b.fc("fc1", None, 512, 4096, 7)
        b.fc("fc2", None, 4096, 4096)
        b.fc("fc3", None, 4096, 1000)
        return b.build()

    build.__doc__ = (f"nn_dataflow's ``{name}``: VGG with {'-'.join(map(str, convs))} 3x3 convolutions "
                     "per stage, input 3x224.")
    return build


#: GoogLeNet's inception modules: id, fmap size, input channels, then the
#: output channels of 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5 and pool projection.
_INCEPTIONS = (
    ("3a", 28, 192, 64, 96, 128, 16, 32, 32),
    ("3b", 28, 256, 128, 128, 192, 32, 96, 64),
    ("4a", 14, 480, 192, 96, 208, 16, 48, 64),
    ("4b", 14, 512, 160, 112, 224, 24, 64, 64),
    ("4c", 14, 512, 128, 128, 256, 24, 64, 64),
    ("4d", 14, 512, 112, 144, 288, 32, 64, 64),
    ("4e", 14, 528, 256, 160, 320, 32, 128, 128),
    ("5a", 7, 832, 256, 160, 320, 32, 128, 128),
    ("5b", 7, 832, 384, 192, 384, 48, 128, 128),
)


def googlenet(batch: int) -> Network:
    """nn_dataflow's ``googlenet``: GoogLeNet (ILSVRC 2014), LRN ignored, input 3x224.

    An inception module's four branches read the module's input; the pool
    branch is its 1x1 projection alone, as nn_dataflow defines it.
    """
    b = _Builder("googlenet", batch, 3, 224)
    b.conv("conv1", None, 3, 64, 112, 7, 2)
    b.pool("pool1", None, 64, 56, 3, strd=2)
    b.conv("conv2_3x3_reduce", None, 64, 64, 56, 1)
    b.conv("conv2_3x3", None, 64, 192, 56, 3)
    b.pool("pool2", None, 192, 28, 3, strd=2)
    prevs = ["pool2"]
    closing = {"3b": ("pool3", 14), "4e": ("pool4", 7)}
    for incp, sofm, nin, n1, n3r, n3, n5r, n5, npool in _INCEPTIONS:
        pfx = f"inception_{incp}_"
        b.conv(pfx + "1x1", prevs, nin, n1, sofm, 1)
        b.conv(pfx + "3x3_reduce", prevs, nin, n3r, sofm, 1)
        b.conv(pfx + "3x3", None, n3r, n3, sofm, 3)
        b.conv(pfx + "5x5_reduce", prevs, nin, n5r, sofm, 1)
        b.conv(pfx + "5x5", None, n5r, n5, sofm, 5)
        b.conv(pfx + "pool_proj", prevs, nin, npool, sofm, 1)
        prevs = [pfx + "1x1", pfx + "3x3", pfx + "5x5", pfx + "pool_proj"]
        if incp in closing:
            pool, size = closing[incp]
            b.pool(pool, prevs, n1 + n3 + n5 + npool, size, 3, strd=2)
            prevs = [pool]
    b.pool("pool5", prevs, 1024, 1, 7)
    b.fc("fc", None, 1024, 1000)
    return b.build()


def _resnet(name: str, blocks: Sequence[int]) -> Callable[[int], Network]:
    """A bottleneck ResNet: stages conv2..conv5 of ``blocks`` blocks each.

    Block ``i`` of stage ``n`` is ``conv{n}_{i}_a`` (1x1, stride 2 in block 0
    of stages 3-5), ``_b`` (3x3) and ``_c`` (1x1, 4x the width), summed with
    the shortcut by the eltwise layer ``conv{n}_{i}_res``; block 0's shortcut
    is the projection ``conv{n}_br`` of the stage's input.
    """

    def build(batch: int) -> Network:
        b = _Builder(name, batch, 3, 224)
        b.conv("conv1", None, 3, 64, 112, 7, 2)
        res = b.pool("pool1", None, 64, 56, 3, 2)
        nin = 64
        for stage, count in enumerate(blocks, start=2):
            mid, sofm = 64 << (stage - 2), 56 >> (stage - 2)
            nout, strd = 4 * mid, 1 if stage == 2 else 2
            for i in range(count):
                pfx = f"conv{stage}_{i}_"
                b.conv(pfx + "a", None, nin if i == 0 else nout, mid, sofm, 1, strd if i == 0 else 1)
                b.conv(pfx + "b", None, mid, mid, sofm, 3)
                b.conv(pfx + "c", None, mid, nout, sofm, 1)
                if i == 0:
                    res = b.conv(f"conv{stage}_br", [res], nin, nout, sofm, 1, strd)
                res = b.eltwise(pfx + "res", [res, pfx + "c"], nout, sofm, 2, "add")
            nin = nout
        b.pool("pool5", None, 2048, 1, 7)
        b.fc("fc", None, 2048, 1000)
        return b.build()

    build.__doc__ = (f"nn_dataflow's ``{name}``: bottleneck ResNet of {'-'.join(map(str, blocks))} blocks "
                     "per stage, input 3x224.")
    return build


# ------------------------------------------------------------ MLPs, LSTMs


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


def _lstm_cell(b: _Builder, name: str, size: int, x: str) -> str:
    """An LSTM cell of width ``size`` on ``x``, its initial state external; its output h's name.

    The candidate and the input, forget and output gates are FC layers on
    (h, x); the new state C = C0 * f + cand * i, the output h = C * o.
    """
    c0, h0 = b.ext(f"{name}_cinit", size), b.ext(f"{name}_hinit", size)
    for part in ("cand", "igate", "fgate", "ogate"):
        b.fc(f"{name}_{part}", [h0, x], 2 * size, size)
    b.eltwise(f"{name}_cout_f", [c0, f"{name}_fgate"], size, 1, 2, "mul")
    b.eltwise(f"{name}_cout_i", [f"{name}_cand", f"{name}_igate"], size, 1, 2, "mul")
    b.eltwise(f"{name}_cout", [f"{name}_cout_i", f"{name}_cout_f"], size, 1, 2, "add")
    return b.eltwise(f"{name}_hout", [f"{name}_cout", f"{name}_ogate"], size, 1, 2, "mul")


def lstm_gnmt(batch: int) -> Network:
    """nn_dataflow's ``lstm_gnmt``: four stacked LSTM cells of 1000 (GNMT) on a
    1000-wide embedded word, then the one-operand eltwise ``Wd`` (log/softmax)."""
    b = _Builder("lstm_gnmt", batch, 1000, 1)
    x = INPUT
    for i in range(4):
        x = _lstm_cell(b, f"cell_l{i}", 1000, x)
    b.eltwise("Wd", [x], 1000, 1, 1, "unary")
    return b.build()


def lstm_phoneme(batch: int) -> Network:
    """nn_dataflow's ``lstm_phoneme``: FC 26-140, an LSTM cell of 140, FC 140-61
    (Graves and Schmidhuber's phoneme classifier)."""
    b = _Builder("lstm_phoneme", batch, 26, 1)
    b.fc("We", [INPUT], 26, 140)
    h = _lstm_cell(b, "cell", 140, "We")
    b.fc("Wd", [h], 140, 61)
    return b.build()


def lstm_showtell(batch: int) -> Network:
    """nn_dataflow's ``lstm_showtell``: an LSTM cell of 512 (Show and Tell) on a
    512-wide embedded word, then the one-operand eltwise ``Wd`` (log/softmax)."""
    b = _Builder("lstm_showtell", batch, 512, 1)
    h = _lstm_cell(b, "cell", 512, INPUT)
    b.eltwise("Wd", [h], 512, 1, 1, "unary")
    return b.build()


#: nn_dataflow network name -> kapla network at a batch size (all of its ``nns/``).
NETWORKS: dict[str, Callable[[int], Network]] = {
    "alex_net": alex_net,
    "googlenet": googlenet,
    "lstm_gnmt": lstm_gnmt,
    "lstm_phoneme": lstm_phoneme,
    "lstm_showtell": lstm_showtell,
    "mlp_l": _mlp("mlp_l", (1500, 1000, 500, 10)),
    "mlp_m": _mlp("mlp_m", (1000, 500, 250, 10)),
    "mlp_s": _mlp("mlp_s", (500, 250, 10)),
    "resnet152": _resnet("resnet152", (3, 8, 36, 3)),
    "resnet50": _resnet("resnet50", (3, 4, 6, 3)),
    "vgg19_net": _vgg("vgg19_net", (2, 2, 4, 4, 4)),
    "vgg_net": _vgg("vgg_net", (2, 2, 3, 3, 3)),
    "zfnet": zfnet,
}


def nn_dataflow_network(name: str, batch: int) -> Network:
    """nn_dataflow's network ``name`` at ``batch``; InteropError for a name kapla does not know."""
    if name not in NETWORKS:
        raise InteropError(f"unknown nn_dataflow network {name!r} (kapla knows {', '.join(sorted(NETWORKS))})")
    return NETWORKS[name](batch)


def network_of_run(run: NnDataflowRun) -> Network:
    """The network ``run`` scheduled, checked against its schedules.

    Every layer is scheduled once and every scheduled layer is the network's,
    with the file's ``ops`` equal to what nn_dataflow counts for the layer at
    the run's batch (:func:`nn_dataflow_ops`): a file made from another
    definition of the network fails here.
    """
    try:
        net = nn_dataflow_network(run.net, run.batch)
    except InteropError as err:
        raise InteropError(f"{run.source}: net: {err}") from None
    for name, sched in run.schedules.items():
        if name not in net:
            raise InteropError(f"{run.source}: schedules.{name}: no layer {name!r} in nn_dataflow's {run.net} "
                               f"(its layers: {', '.join(layer.name for layer in net.layers)})")
        # an eltwise layer: nn_dataflow counts one operation per operand, kapla's nest one per element
        expected = nn_dataflow_ops(net[name]) * net.batch
        # nn_dataflow computes ops in floating point (8000000.000000001 for mlp_s's fc2)
        if not math.isclose(sched.ops, expected, rel_tol=1e-9):
            raise InteropError(f"{run.source}: schedules.{name}.ops: {sched.ops:,.0f} but layer {name} of "
                               f"{run.net} performs {expected:,} at batch {net.batch}")
    missing = [layer.name for layer in net.layers if layer.name not in run.schedules]
    if missing:
        raise InteropError(f"{run.source}: schedules: no schedule for {', '.join(missing)} of {run.net}")
    return net
