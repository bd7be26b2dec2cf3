"""Convert a local sentence-transformers directory once to an ONNX directory the gateway embeds with, no torch.

``manualqa embedder convert SRC OUT [--int8]`` (gateway/cli/embedder.py) calls `convert`. The output
directory holds:

- ``model.onnx``: the whole sentence-transformers pipeline up to the sentence vector, the transformer,
  its pooling (mean, cls or last token, as 1_Pooling/config.json says) and any Dense layers folded in,
  so the graph's output is one vector per text (opset 17, dynamic batch and sequence axes);
- ``tokenizer.json``: the source's, byte for byte;
- ``manualqa_embedder.json`` (`CONFIG_FILE`): what retrieval.embedders.onnx needs to reproduce
  sentence-transformers exactly: pooling mode, the Dense layers folded, whether the source normalises,
  ``max_seq_length``, the query and document prompts of its config_sentence_transformers.json
  (EmbeddingGemma: ``"task: search result | query: "`` and ``"title: none | text: "``), and the check
  below.

Then ``embedding.model = "onnx:OUT"``; the next ingest re-embeds every manual (the model id and hash
differ from the index's). `--int8` quantizes the weights as the built-in embedder's are
(deploy/make_embedder.py: dynamic, per channel, reduced range); keep it only where retrieval holds up
(docs/bench/experiments/brought_embedder.md).

The conversion checks itself: a few English, German and Chinese questions and passages, embedded by
sentence-transformers and by the ONNX directory through the gateway's own embedder, must agree to a
cosine of at least `MIN_COSINE_FP32` (fp32) or `MIN_COSINE_INT8` (int8), or it fails.

Needs torch, sentence-transformers (the [st] extra) and the ``onnx`` package, none of which the gateway
needs at run time; they are imported only here, with an install hint when missing.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import json
import shutil
import tempfile
import unicodedata
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from retrieval.types import RetrievalError

T = TypeVar("T")

CONFIG_FILE = "manualqa_embedder.json"
FORMAT = 1
OPSET = 17
MIN_COSINE_FP32 = 0.99
MIN_COSINE_INT8 = 0.95
INSTALL_HINT = "pip install torch sentence-transformers onnx (or `make install-dev`: the [st] extra and onnx)"
_POOLING = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls", "pooling_mode_lasttoken": "lasttoken"}
_QUERY_PROMPTS = ("query", "Retrieval-query")
_DOCUMENT_PROMPTS = ("document", "passage", "Retrieval-document")
CHECK_QUERIES = ["How do I reset the controller to factory settings?", "What torque for the M8 bolts?",
                 "Wie setze ich das Gerät auf Werkseinstellungen zurück?", "如何更换滤芯？"]
CHECK_PASSAGES = [
    "Factory reset\nHold the MODE button for ten seconds until the status LED blinks red twice.",
    "Tighten the M8 mounting bolts to 25 N·m in a cross pattern; check again after 50 operating hours.",
    "Zurücksetzen: Halten Sie die Taste MODE zehn Sekunden lang gedrückt, bis die LED rot blinkt.",
    "更换滤芯：关闭电源，逆时针旋转滤芯外壳，取出旧滤芯并装入新滤芯。",
    # longer than a sliding attention window (EmbeddingGemma: 512 tokens) and than MiniLM's 256: truncation too
    "Maintenance schedule. " + "Check the belt tension, clean the fan filter and inspect the cables. " * 60,
]


class ConvertError(RetrievalError):
    """A source directory that cannot be converted, or a conversion that does not reproduce it."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConvertError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ConvertError(f"{path} is not valid JSON: {exc}") from exc


def describe(src: Path) -> dict[str, Any]:
    """What the runtime must know about a sentence-transformers directory (CONFIG_FILE without the check);
    a directory that is not one, or uses a module the ONNX runtime cannot reproduce, raises ConvertError."""
    src = Path(src).expanduser()
    if not src.is_dir():
        raise ConvertError(f"{src} is not a directory (expected a local sentence-transformers model directory)")
    if not (src / "modules.json").is_file():
        raise ConvertError(f"{src} has no modules.json: not a sentence-transformers model directory")
    if not (src / "tokenizer.json").is_file():
        raise ConvertError(f"{src} has no tokenizer.json (a fast tokenizer file); the ONNX runtime needs one")
    modules = _read_json(src / "modules.json")
    if not isinstance(modules, list) or not modules:
        raise ConvertError(f"{src / 'modules.json'} lists no modules")
    pooling, dense, normalize, include_prompt = "", [], False, True
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        path = src / str(module.get("path", ""))
        if kind == "Transformer":
            continue
        if kind == "Pooling":
            cfg = _read_json(path / "config.json")
            modes = [name for key, name in _POOLING.items() if cfg.get(key)]
            others = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v and k not in _POOLING]
            if len(modes) != 1 or others:
                raise ConvertError(f"{path}: pooling {modes + others} is not supported (one of mean, cls, lasttoken)")
            pooling, include_prompt = modes[0], bool(cfg.get("include_prompt", True))
        elif kind == "Dense":
            cfg = _read_json(path / "config.json")
            dense.append({"in": cfg.get("in_features"), "out": cfg.get("out_features"),
                          "activation": cfg.get("activation_function", "")})
        elif kind == "Normalize":
            normalize = True
        else:
            raise ConvertError(f"{src}: module {module.get('type')} is not supported by the ONNX conversion")
    if not pooling:
        raise ConvertError(f"{src}: no Pooling module in modules.json")
    if not include_prompt:
        raise ConvertError(f"{src}: pooling with include_prompt=false is not supported")
    st_cfg = _read_json(src / "sentence_bert_config.json") if (src / "sentence_bert_config.json").is_file() else {}
    prompts_cfg = (_read_json(src / "config_sentence_transformers.json")
                   if (src / "config_sentence_transformers.json").is_file() else {})
    prompts = prompts_cfg.get("prompts") or {}
    query = next((prompts[k] for k in _QUERY_PROMPTS if prompts.get(k)), "")
    document = next((prompts[k] for k in _DOCUMENT_PROMPTS if prompts.get(k)), "")
    default = prompts_cfg.get("default_prompt_name")
    if default and prompts.get(default):  # sentence-transformers puts it before every text not given another
        query, document = query or prompts[default], document or prompts[default]
    return {"format": FORMAT, "source": src.resolve().name, "pooling": pooling, "dense": dense,
            "normalize": normalize, "pooled_in_graph": True,
            "max_seq_length": int(st_cfg.get("max_seq_length") or 512),
            "prompts": {"query": query, "document": document}}


def _load_st(src: Path) -> Any:
    try:
        import torch  # noqa: F401
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConvertError(f"converting an embedder needs torch and sentence-transformers; "
                           f"install them with `{INSTALL_HINT}`") from exc
    try:
        return SentenceTransformer(str(src), device="cpu", local_files_only=True).eval()
    except Exception as exc:  # a broken directory must say so, not print a traceback
        raise ConvertError(f"sentence-transformers cannot load {src}: {exc}") from exc


@contextlib.contextmanager
def _masks_by_broadcasting() -> Iterator[None]:
    """transformers builds the attention masks of models with extra mask rules (EmbeddingGemma's
    bidirectional and sliding-window attention) with torch.vmap, which the ONNX tracer cannot follow; for
    the export, the same index-based rules are broadcast over (batch, head, query, key) instead, as the
    default masks are built (the agreement check after the export proves them the same)."""
    try:
        masking_utils: Any = importlib.import_module("transformers.masking_utils")
    except ImportError:
        yield
        return
    original = getattr(masking_utils, "_vmap_expansion_sdpa", None)
    expand_indices = getattr(masking_utils, "_non_vmap_expansion_sdpa", None)
    if original is None or expand_indices is None:
        yield
        return

    def broadcast(mask_function: Callable[..., Any]) -> Callable[..., Any]:
        def expanded(batch: Any, head: Any, q: Any, kv: Any) -> Any:
            return mask_function(*expand_indices(batch, head, q, kv)).expand(batch.shape[0], -1, q.shape[0],
                                                                              kv.shape[0])
        return expanded

    getitem = getattr(masking_utils, "TransformGetItemToIndex", None)  # vmap's helper; plain indexing here
    masking_utils._vmap_expansion_sdpa = broadcast
    if getitem is not None:
        masking_utils.TransformGetItemToIndex = contextlib.nullcontext
    try:
        yield
    finally:
        masking_utils._vmap_expansion_sdpa = original
        if getitem is not None:
            masking_utils.TransformGetItemToIndex = getitem


def export_onnx(model: Any, target: Path) -> list[str]:
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


def quantize_int8(fp32: Path, target: Path) -> None:
    """As the built-in embedder: dynamic int8, weights per output channel, reduced range (same on every CPU)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)


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


def agreement(model: Any, out: Path) -> dict[str, float]:
    """Cosine between sentence-transformers' vectors and the ONNX directory's (through the gateway's embedder)."""
    import numpy as np

    from retrieval.embedders.onnx import OnnxEmbedder

    config = _read_json(out / CONFIG_FILE)
    prompts = config["prompts"]

    def gateway_text(text: str) -> str:  # the gateway NFKC-normalises every text it embeds (full-width "？")
        return unicodedata.normalize("NFKC", text).strip()

    ref_q = model.encode([prompts["query"] + gateway_text(q) for q in CHECK_QUERIES], normalize_embeddings=True)
    ref_p = model.encode([prompts["document"] + gateway_text(p) for p in CHECK_PASSAGES], normalize_embeddings=True)
    onnx = OnnxEmbedder(f"onnx:{out}")
    got_q = np.stack([onnx.encode_query(q) for q in CHECK_QUERIES])
    got_p = onnx.encode(CHECK_PASSAGES)
    cos = np.concatenate([(ref_q * got_q).sum(axis=1), (ref_p * got_p).sum(axis=1)])
    return {"min_cosine": round(float(cos.min()), 5), "mean_cosine": round(float(cos.mean()), 5),
            "texts": int(cos.size)}


def convert(src: Path, out: Path, *, int8: bool = False) -> dict[str, Any]:
    """Convert SRC (a sentence-transformers directory) into OUT; returns the recorded config (CONFIG_FILE)."""
    src, out = Path(src).expanduser(), Path(out).expanduser()
    config = describe(src)
    if out.exists() and any(out.iterdir()):
        if not (out / CONFIG_FILE).is_file():
            raise ConvertError(f"{out} exists and is not an earlier conversion; name an empty or new directory")
    model = _load_st(src)
    dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    config["dim"] = int(dimension() or 0)
    config["int8"] = int8
    config["max_seq_length"] = int(getattr(model, "max_seq_length", None) or config["max_seq_length"])
    config["tools"] = {d: importlib.metadata.version(d) for d in
                       ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime")}
    config["inputs"] = write_model(out, lambda target: export_onnx(model, target), int8=int8)
    shutil.copyfile(src / "tokenizer.json", out / "tokenizer.json")
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    check = agreement(model, out)
    floor = MIN_COSINE_INT8 if int8 else MIN_COSINE_FP32
    config["check"] = {**check, "floor": floor}
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if check["min_cosine"] < floor:
        raise ConvertError(f"{out}: the ONNX vectors do not reproduce sentence-transformers' (min cosine "
                           f"{check['min_cosine']} < {floor}); do not use this directory")
    return config
