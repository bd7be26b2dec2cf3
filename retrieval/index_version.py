"""One index version opened read-only: its chunk store, FAISS index and manifest (what search reads).

Why a module of its own: IndexVersion is the retrieval.reader.IndexReader that search, the builder
and the entries read; the store that lists, opens and writes versions (retrieval.versions) is the
rest of the story.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.manifest import CHUNKS_DB, VECTORS, read_manifest
from retrieval.manifest_schema import Manifest, decode_manifest
from retrieval.types import RetrievalError

if TYPE_CHECKING:
    from retrieval.vectors import VectorIndex


class IndexVersion:
    """One immutable version, opened read-only (chunk store + FAISS index + manifest): the
    retrieval.reader.IndexReader that search reads."""

    def __init__(self, path: Path) -> None:
        from retrieval.chunkstore import ChunkStore
        from retrieval.vectors import VectorIndex

        self.path = path
        self.id = path.name
        try:
            self.manifest: dict[str, Any] = read_manifest(path)
            self.chunks = ChunkStore(path / CHUNKS_DB, readonly=True)
            self.vectors = VectorIndex.load(path / VECTORS)
        except RetrievalError:
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged version is a user-facing condition
            raise RetrievalError(f"index version {self.id} cannot be opened ({exc}); "
                                 "run `manualqa index verify` and roll back") from exc

        self._info: Manifest | None = None
        self._companion: VectorIndex | None = None
        self._companion_read = False
        self._companion_lock = threading.Lock()

    @property
    def companion(self) -> VectorIndex | None:
        """The companion embedder's vectors of every chunk (retrieval.companion), read from chunks.db on
        first use; None for a version built without a companion."""
        with self._companion_lock:
            if not self._companion_read:
                recorded = self.manifest.get("companion") or {}
                dim = recorded.get("dim") if isinstance(recorded, dict) else None
                matrix = self.chunks.companion_vectors(int(dim)) if dim else None
                if matrix is not None:
                    from retrieval.vectors import VectorIndex

                    self._companion = VectorIndex.build(matrix, kind="flat")
                self._companion_read = True
            return self._companion

    @property
    def info(self) -> Manifest:
        """The manifest typed (decoded on first use; `manifest` stays the stored dict)."""
        if self._info is None:
            try:
                self._info = decode_manifest(self.manifest)
            except ValueError as exc:
                raise RetrievalError(f"index version {self.id}: {exc}; run `manualqa index verify`") from exc
        return self._info

    def __repr__(self) -> str:
        return f"IndexVersion({self.id!r})"
