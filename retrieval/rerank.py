"""The passage reranker: a small cross-encoder that re-orders the fused top candidates.

Hybrid search finds the right page among its top five almost always, but first only two times in
three. A cross-encoder reads the question and each candidate together, so it can tell the passage
that answers from one that merely shares the words; it costs a transformer pass per candidate, so
it reads only the fused top ``pool`` and is kept small (train/train_reranker.py: a few layers of
the all-MiniLM-L6-v2 weights the embedder ships, int8 through onnxruntime).

The final order mixes the reranker's score with the fused rank (score + weight * -ln(rank)): the
weight is chosen on eval/dev (bench/experiments/reranker.py), so that a passage both retrievers put first is not
given up on one uncertain reading.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from retrieval.embedders.base import MINILM_CONFIG_DIR
from retrieval.types import RetrievalError

if TYPE_CHECKING:  # onnxruntime has no annotations: InferenceSession names what the session is, unchecked
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

BUILTIN = Path(__file__).resolve().parent / "models" / "rerank_minilm_int8"
# all-MiniLM-L6-v2's tokenizer, which the reranker's layers were trained with (the built-in embedder's copy)
TOKENIZER = MINILM_CONFIG_DIR / "tokenizer.json"
INSTALL_HINT = "pip install onnxruntime tokenizers (dependencies of manualqa)"


def passage_for_rerank(title: str, heading: str, text: str) -> str:
    """What the reranker reads for a passage (the same form it was trained on)."""
    head = " - ".join(x for x in (title, heading) if x)
    return f"{head}\n{text}" if head else text


def resolve(spec: str) -> Path | None:
    """`off` -> None; `builtin` -> the shipped model; anything else is a folder with model.onnx."""
    value = (spec or "off").strip()
    if value.lower() in ("off", "none", "false", ""):
        return None
    folder = BUILTIN if value.lower() == "builtin" else Path(value).expanduser()
    if not (folder / "model.onnx").is_file() or not (folder / "config.json").is_file():
        raise RetrievalError(f"reranker {value!r}: {folder} holds no model.onnx and config.json "
                             f"(set search.rerank = \"off\" to search without one)")
    return folder


class RerankerDescription(TypedDict):
    """What Reranker.describe() says about the loaded reranker."""

    model_id: str
    model_hash: str
    max_length: int
    path: str


class Reranker:
    """Scores (question, passage) pairs; loads onnxruntime and the tokenizer on first use."""

    def __init__(self, folder: Path, threads: int | None = None) -> None:
        self.folder = Path(folder)
        self.onnx_file = self.folder / "model.onnx"
        try:
            config = json.loads((self.folder / "config.json").read_text(encoding="utf-8"))
            if not isinstance(config, dict):
                raise ValueError("not a JSON object")
            self.max_length = int(config.get("max_length", 192))
        except (OSError, ValueError, TypeError) as exc:
            raise RetrievalError(f"reranker {self.folder}: config.json is unreadable ({exc}); "
                                 f"rebuild it with train/export_reranker.py or set search.rerank = \"off\"") from exc
        self.model_id = str(config.get("model_id", self.folder.name))
        self.expected_sha256 = config.get("sha256")
        self.threads = threads or min(2, os.cpu_count() or 1)
        self._hash: str | None = None
        self._onnx_sha: str | None = None
        self._session: InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()
        self.verify()

    def onnx_sha256(self) -> str:
        if self._onnx_sha is None:
            from ingest.discover import sha256_file

            try:
                self._onnx_sha = sha256_file(self.onnx_file)
            except OSError as exc:
                raise RetrievalError(f"reranker {self.folder}: model.onnx is unreadable ({exc})") from exc
        return self._onnx_sha

    def verify(self) -> None:
        """A model file that is not the one its config.json names (damaged, truncated, replaced) is refused."""
        if self.expected_sha256 and self.onnx_sha256() != self.expected_sha256:
            raise RetrievalError(f"reranker {self.folder}: model.onnx has sha256 {self.onnx_sha256()[:12]}, "
                                 f"its config.json says {str(self.expected_sha256)[:12]} (a damaged or replaced "
                                 f"file): reinstall manualqa, rebuild it with train/make_reranker.py, or set "
                                 f"search.rerank = \"off\"")

    @property
    def model_hash(self) -> str:
        """Weights and tokenizer together: either one changed gives other scores."""
        if self._hash is None:
            from ingest.discover import sha256_file

            tok = TOKENIZER
            self._hash = hashlib.sha256(f"{self.onnx_sha256()}:{sha256_file(tok)}".encode()).hexdigest()
        return self._hash

    def describe(self) -> RerankerDescription:
        return {"model_id": self.model_id, "model_hash": self.model_hash, "max_length": self.max_length,
                "path": str(self.folder)}

    def _load(self) -> tuple[InferenceSession, Tokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:  # both are set together
                try:
                    import onnxruntime as ort
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise RetrievalError(f"the reranker needs onnxruntime and tokenizers: {INSTALL_HINT}") from exc
                tok = Tokenizer.from_file(str(TOKENIZER))
                tok.enable_truncation(max_length=self.max_length, strategy="only_second")
                tok.no_padding()
                self.verify()
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = self.threads
                opts.inter_op_num_threads = 1
                try:
                    self._session = ort.InferenceSession(str(self.onnx_file), opts,
                                                         providers=["CPUExecutionProvider"])
                except Exception as exc:  # onnxruntime raises its own types for a bad graph
                    raise RetrievalError(f"reranker {self.folder}: model.onnx does not load in onnxruntime "
                                         f"({exc}); set search.rerank = \"off\" or rebuild it") from exc
                self._tokenizer = tok
        return self._session, self._tokenizer

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance logit per passage (higher is better); one batch, padded to the longest."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        session, tok = self._load()
        enc = tok.encode_batch([(question, p) for p in passages])
        width = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for i, e in enumerate(enc):
            n = len(e.ids)
            ids[i, :n], mask[i, :n], types[i, :n] = e.ids, e.attention_mask, e.type_ids
        (scores,) = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        return np.asarray(scores, dtype=np.float32).reshape(-1)


def rerank_order(scores: np.ndarray, weight: float) -> list[int]:
    """Positions of the pool in their new order: reranker score plus weight * -ln(fused rank)."""
    mixed = [float(s) - weight * math.log(i + 1) for i, s in enumerate(scores)]
    return sorted(range(len(mixed)), key=lambda i: (-mixed[i], i))


def load_reranker(spec: str) -> Reranker | None:
    """The reranker a setting names, loaded now (a session is costly: its owner holds it, one per
    gateway.services.Services); None for "off"."""
    folder = resolve(spec)
    if folder is None:
        return None
    return Reranker(folder)
