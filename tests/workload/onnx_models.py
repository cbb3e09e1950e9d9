"""ONNX models built with onnx.helper for the tests: a small builder, and the
graphs torchvision's ``torch.onnx.export`` gives for ResNet-18 and MobileNetV2
in eval mode (batch norms folded into the convolutions, ReLU6 as ``Clip``,
the classifier as ``Flatten`` + ``Gemm``), so the importer and the solvers
meet the real networks' shapes without torch being installed."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Model:
    """Collects nodes and initializers of a test model; each node's output tensor is ``t_<name>``."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []

    def input(self, name: str, *shape: int | str) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        return name

    def const(self, name: str, *shape: int, dtype=np.float32) -> str:
        # Zeros are enough: the importer reads shapes, never values.
        self.inits.append(numpy_helper.from_array(np.zeros(shape, dtype), name))
        return name

    def node(self, op: str, name: str, inputs: list[str], **attrs) -> str:
        out = f"t_{name or len(self.nodes)}"
        if any(out in n.output for n in self.nodes):  # duplicate node names still need SSA tensors
            out += f"_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name or None, **attrs))
        return out

    def conv(self, name: str, x: str, c: int, k: int, kernel: int, group: int = 1, **attrs) -> str:
        w = self.const(f"{name}.w", k, c // group, kernel, kernel)
        b = self.const(f"{name}.b", k)
        return self.node("Conv", name, [x, w, b], group=group, **attrs)

    def save(self, tmp_path, out: str, filename: str = "model.onnx"):
        graph = helper.make_graph(self.nodes, "g", self.inputs, [], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        # The checker wants a typed graph output: take the type shape inference gives it.
        inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
        model.graph.output.extend(v for v in inferred if v.name == out)
        onnx.checker.check_model(model)
        path = tmp_path / filename
        onnx.save(model, path)
        return path


    def relu6(self, name: str, x: str) -> str:
        if "relu6.min" not in {t.name for t in self.inits}:
            self.const("relu6.min")
            self.inits[-1].CopyFrom(numpy_helper.from_array(np.array(0.0, np.float32), "relu6.min"))
            self.inits.append(numpy_helper.from_array(np.array(6.0, np.float32), "relu6.max"))
        return self.node("Clip", name, [x, "relu6.min", "relu6.max"])


def _conv(m: Model, name: str, x: str, c: int, k: int, kernel: int, stride: int = 1, group: int = 1) -> str:
    pad = kernel // 2
    return m.conv(name, x, c, k, kernel, group=group, strides=[stride, stride], pads=[pad] * 4)


def resnet18(tmp_path, batch: int = 1):
    """torchvision's ResNet-18: a 7x7/2 stem, max pooling, four stages of two basic
    blocks (a 1x1/2 projection where a stage halves the plane), global pooling, FC."""
    m = Model()
    x = m.input("input", batch, 3, 224, 224)
    x = m.node("Relu", "relu", [_conv(m, "conv1", x, 3, 64, 7, stride=2)])
    x = m.node("MaxPool", "maxpool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 64
    for stage, k in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            name = f"layer{stage}.{block}"
            h = m.node("Relu", f"{name}.relu1", [_conv(m, f"{name}.conv1", x, c, k, 3, stride)])
            h = _conv(m, f"{name}.conv2", h, k, k, 3)
            short = _conv(m, f"{name}.downsample", x, c, k, 1, stride) if stride > 1 or c != k else x
            x = m.node("Relu", f"{name}.relu2", [m.node("Add", f"{name}.add", [h, short])])
            c = k
    x = m.node("Flatten", "flatten", [m.node("GlobalAveragePool", "avgpool", [x])], axis=1)
    out = m.node("Gemm", "fc", [x, m.const("fc.w", 1000, 512), m.const("fc.b", 1000)], transB=1)
    return m.save(tmp_path, out, "resnet18.onnx")


# torchvision's MobileNetV2 stages: expansion t, output channels c, repeats n, first stride s
_MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                 (6, 320, 1, 1))


def mobilenet_v2(tmp_path, batch: int = 1):
    """torchvision's MobileNetV2: a 3x3/2 stem, 17 inverted residual blocks (1x1
    expansion, 3x3 depthwise, 1x1 projection; a residual add where shapes allow),
    a 1x1 conv to 1280 channels, global pooling, FC."""
    m = Model()
    x = m.input("input", batch, 3, 224, 224)
    x = m.relu6("features.0.relu", _conv(m, "features.0", x, 3, 32, 3, stride=2))
    c, index = 32, 1
    for t, k, n, s in _MOBILENET_V2:
        for i in range(n):
            name = f"features.{index}"
            hidden = c * t
            h = x
            if t != 1:
                h = m.relu6(f"{name}.expand.relu", _conv(m, f"{name}.expand", h, c, hidden, 1))
            h = m.relu6(f"{name}.dw.relu", _conv(m, f"{name}.dw", h, hidden, hidden, 3, s if i == 0 else 1, hidden))
            h = _conv(m, f"{name}.project", h, hidden, k, 1)
            x = m.node("Add", f"{name}.add", [h, x]) if i > 0 else h
            c, index = k, index + 1
    x = m.relu6("features.18.relu", _conv(m, "features.18", x, c, 1280, 1))
    x = m.node("Flatten", "flatten", [m.node("GlobalAveragePool", "avgpool", [x])], axis=1)
    out = m.node("Gemm", "classifier", [x, m.const("classifier.w", 1000, 1280), m.const("classifier.b", 1000)],
                 transB=1)
    return m.save(tmp_path, out, "mobilenet_v2.onnx")
