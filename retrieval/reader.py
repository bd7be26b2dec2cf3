"""What searching and showing an index version reads of it: Protocols at the seam.

`retrieval.index_version.IndexVersion` (an opened version: its chunk store, FAISS index and manifest) and
`retrieval.versions.IndexStore` (which opens them) are the implementations; search, the gateway and
test doubles depend on these Protocols only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from retrieval.manifest_schema import Manifest


class ChunkReader(Protocol):
    """The chunk store of a version, read-only (retrieval.chunkstore.ChunkStore)."""

    def manuals(self) -> list[dict[str, object]]:
        """sha256, file_name, title, page_count, size_bytes, pages_without_text, chunk_count per manual."""
        ...

    def get_rows(self, rows: list[int]) -> list[dict[str, Any]]:
        """Chunk dicts (with their manual's file_name and title) in the order asked for."""
        ...

    def rows_for_manuals(self, shas: list[str]) -> np.ndarray: ...

    def page_text(self, sha: str, page: int) -> str | None: ...

    def lexical(self, query: str, n: int, manual_shas: list[str] | None = None) -> list[tuple[int, float]]:
        """(row, BM25 score) best first."""
        ...

    def sentence_vectors(self, rows: list[int]) -> dict[int, np.ndarray]:
        """The sentence vectors written at ingest, of those rows that have them."""
        ...

    def companion_sentence_vectors(self, rows: list[int]) -> dict[int, np.ndarray]:
        """The companion's sentence vectors written at ingest (chunks not in English), of those rows that have them."""
        ...

    def term_doc_freqs(self, words: list[str]) -> dict[str, int]:
        """Rows holding each word, stemmed as the lexical index stems."""
        ...

    def row_total(self) -> int: ...

    def manuals_holding(self, word: str) -> frozenset[str]:
        """The sha256s of the manuals with a passage holding `word`, as the lexical index finds it."""
        ...

    def rows_in_language(self, lang: str, *, other: bool = False) -> np.ndarray:
        """Rows whose chunk is in `lang` (other=True: in any other language), ascending (retrieval.companion)."""
        ...


class VectorReader(Protocol):
    """The dense index of a version (retrieval.vectors.VectorIndex)."""

    @property
    def dim(self) -> int: ...

    @property
    def ntotal(self) -> int: ...

    def search(self, qvec: np.ndarray, n: int, allowed_rows: np.ndarray | None = None
               ) -> list[tuple[int, float]]:
        """(row, cosine) best first, within `allowed_rows` when given."""
        ...

    def cosine(self, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray: ...


class IndexReader(Protocol):
    """One immutable index version, opened."""

    @property
    def id(self) -> str: ...

    @property
    def manifest(self) -> Mapping[str, object]:
        """manifest.json as stored (the form its digest covers)."""
        ...

    @property
    def info(self) -> Manifest:
        """The same manifest, typed."""
        ...

    @property
    def chunks(self) -> ChunkReader: ...

    @property
    def vectors(self) -> VectorReader: ...


class IndexSource(Protocol):
    """Where search finds the version to read: the active one, or the one named."""

    def open(self, version: str | None = None) -> IndexReader: ...
