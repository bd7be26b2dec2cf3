"""An embedder with a companion: the configured model (its vectors in FAISS, its cosines everywhere) plus
a second, multilingual model whose vectors are searched beside it (retrieval.companion).

`WithCompanion` is the primary embedder to everything that reads the `Embedder` Protocol: the same
model, id, hash, dimension, vectors and query vectors, so the manifest's `embedding`, the check that the
index was built with the query's model, the best-sentence step and the not-found cosine are the
primary's, unchanged. It adds `companion`, the second model, which ingest embeds every chunk with
(stored in the version, recorded in its manifest as `companion`) and search ranks every chunk by, as a
third list in the reciprocal-rank fusion (docs/bench/experiments/dual_dense.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from retrieval.embedders.base import Embedder


class WithCompanion:
    """`primary` to every reader of the Embedder Protocol, with `companion` beside it."""

    def __init__(self, primary: Embedder, companion: Embedder) -> None:
        self.primary = primary
        self.companion = companion
        # the Embedder Protocol, the primary's: the setting recorded as the manifest's embedding.model
        self.model = str(getattr(primary, "model", ""))
        self.batch_size = int(primary.batch_size)

    @property
    def model_id(self) -> str:
        return self.primary.model_id

    @property
    def model_hash(self) -> str:
        return self.primary.model_hash

    @property
    def dim(self) -> int:
        return int(self.primary.dim)

    @property
    def multilingual(self) -> bool:
        """The primary's: the cosines search and the evidence read are the primary's."""
        return bool(getattr(self.primary, "multilingual", False))

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        return self.primary.encode(texts, progress=progress)

    def encode_query(self, text: str) -> np.ndarray:
        return self.primary.encode_query(text)

    def __repr__(self) -> str:
        return f"WithCompanion({self.primary.model_id!r}, companion={self.companion.model_id!r})"


def companion_of(embedder: object) -> Embedder | None:
    """The companion embedder an embedder carries (WithCompanion), None for a plain one."""
    companion = getattr(embedder, "companion", None)
    return companion if isinstance(companion, Embedder) else None
