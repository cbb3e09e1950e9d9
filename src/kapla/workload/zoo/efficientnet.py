"""EfficientNet-B0 (Tan and Le, 2019, Table 1), 224x224 input.

A 3x3 stride-2 stem convolution to 32 channels, the seven MBConv stages of
Table 1, a 1x1 head convolution to 1280 channels, a global average pool and
a 1000-way FC layer. Each MBConv block (Sandler et al.'s inverted
residual with squeeze-and-excitation) is:

* a 1x1 expansion convolution to ``ratio`` x its input channels (omitted
  when the ratio is 1, the first stage);
* a ``k`` x ``k`` depthwise convolution (stride on the first block of a
  stage, "same" padding: ``(k - 1) / 2`` on every side);
* squeeze-and-excitation: a global average pool of the depthwise output, a
  1x1 convolution reducing it to max(1, block input channels / 4), a 1x1
  convolution expanding it back, and a channel-wise scaling of the
  depthwise output by that vector (:meth:`NetworkBuilder.scale`);
* a 1x1 projection convolution to the stage's channels;
* a residual add when the block keeps its size and channels (stride 1,
  input channels = output channels).

Simplified, as in the zoo's other CNNs (MobileNet, ResNet): batch norm and
the activations (swish after the stem, expansion, depthwise and head
convolutions and inside squeeze-and-excitation; the sigmoid on the
excitation vector) carry no MACs and are omitted, and so are biases (kapla's
weights exclude them), dropout and drop-connect (training-time masks).
Where the transformers keep SiLU as a vector layer, the CNNs leave their
activations out, so a layer count, schedule or report of EfficientNet-B0
compares with the other CNNs'; swish would be two more full-fmap vector
layers per block. Tan and Le's TensorFlow model pads stride-2 layers
asymmetrically ("same"); the output sizes, and so the work, are the same.
"""

from kapla.workload.network import Network, NetworkBuilder

# MBConv stages of Table 1: (expansion ratio, kernel, stride of the first block, output channels, blocks)
STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
STEM, HEAD, CLASSES = 32, 1280, 1000


def _mbconv(b: NetworkBuilder, x: str, p: str, ratio: int, kernel: int, stride: int, out: int) -> str:
    """One MBConv block on ``x`` named ``p``; returns its output."""
    channels = b.shape_of(x).c
    h = b.conv(f"{p}_expand", x, channels * ratio, 1) if ratio != 1 else x
    dw = b.depthwise(f"{p}_dw", h, kernel, stride=stride, pad=(kernel - 1) // 2)
    squeezed = b.global_pool(f"{p}_se_pool", dw, mode="avg")
    reduced = b.conv(f"{p}_se_reduce", squeezed, max(1, channels // 4), 1)
    excite = b.conv(f"{p}_se_expand", reduced, channels * ratio, 1)
    scaled = b.scale(f"{p}_se_scale", dw, excite)
    y = b.conv(f"{p}_project", scaled, out, 1)
    if stride == 1 and channels == out:
        y = b.eltwise(f"{p}_res", [x, y], mode="add")
    return y


def efficientnet_b0(batch: int = 64) -> Network:
    b = NetworkBuilder("efficientnet_b0", batch)
    b.input("data", 3, 224)
    x = b.conv("stem", "data", STEM, 3, stride=2, pad=1)
    for stage, (ratio, kernel, stride, out, blocks) in enumerate(STAGES, start=1):
        for i in range(blocks):
            x = _mbconv(b, x, f"mb{stage}_{i}", ratio, kernel, stride if i == 0 else 1, out)
    b.conv("head", x, HEAD, 1)
    b.global_pool("pool", "head", mode="avg")
    b.fc("fc", "pool", CLASSES)
    return b.build()
