"""The built-in embedder computes the same integers on every CPU (docs/bench/experiments/int8_portability.md).

onnxruntime's AVX2 kernel (x86 without VNNI) adds two u8 x s8 products into a saturating int16; with
VNNI, AMX or ARM's dot-product instructions the sums are exact. If a pair of the model's products can
pass 32,767, an index built on one CPU is searched with other vectors on another. The model's weights
must keep every pair below that for any u8 activation (0..255).
"""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.embedders import load_embedder

onnx = pytest.importorskip("onnx", reason="onnx (a dev dependency) reads the model's weights")
numpy_helper = pytest.importorskip("onnx.numpy_helper")

INT16_MAX = 32767


def _matmul_weights(path: str) -> list[tuple[str, np.ndarray, np.ndarray | None]]:
    model = onnx.load(path)
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out = []
    for node in model.graph.node:
        if node.op_type == "MatMulInteger":
            zero = init.get(node.input[3]) if len(node.input) > 3 and node.input[3] else None
            out.append((node.name, init[node.input[1]], zero))
    return out


def worst_pair(w: np.ndarray) -> int:
    """The largest |sum| two adjacent products along the inner dimension can reach with u8 inputs."""
    a = np.abs(w.astype(np.int64))
    if a.shape[0] % 2:
        a = np.pad(a, ((0, 1), (0, 0)))
    return int((255 * (a[0::2] + a[1::2])).max())


def test_no_pair_of_int8_products_can_saturate_avx2s_int16() -> None:
    weights = _matmul_weights(str(load_embedder("onnx:minilm-l6-int8").onnx_file))
    assert len(weights) == 36  # every linear layer of the 6 transformer blocks runs in int8
    for name, w, zero in weights:
        assert w.dtype == np.int8, name
        assert zero is None or not np.any(zero), f"{name}: weights with a zero point"
        assert worst_pair(w) <= INT16_MAX, f"{name}: a u8 x s8 pair reaches {worst_pair(w)}"


def test_the_bound_catches_full_range_weights() -> None:
    full = np.array([[127, -3], [127, 5], [1, -128], [0, -128]], dtype=np.int8)
    assert worst_pair(full) == 255 * 256 > INT16_MAX
    assert worst_pair((full.astype(np.int16) // 2).astype(np.int8)) <= INT16_MAX
