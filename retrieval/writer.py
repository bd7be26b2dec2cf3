"""Writing a version: chunks + FAISS + manifest under a temporary name, fsynced, then renamed into
place, so a crash at any point leaves either no version or a whole one (tests/test_crash_ingest.py
stops the process at each pause point)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ingest.models import ChunkParams
from retrieval.entries import Entry
from retrieval.manifest import (
    CHUNKS_DB,
    MANIFEST,
    VECTORS,
    build_manifest,
    manifest_bytes,
    manual_entry,
)
from retrieval.manifest_schema import ManifestRecord
from retrieval.pointer import TMP_PREFIX, atomic_write_bytes, fsync_dir
from retrieval.types import RetrievalError

PAUSE_ENV = "MANUALQA_TEST_PAUSE_AT"


def pause_point(stage: str) -> None:
    """Test hook: with MANUALQA_TEST_PAUSE_AT=<stage>, stop here so a test can kill -9 the process."""
    if os.environ.get(PAUSE_ENV) == stage:
        print(f"MANUALQA_PAUSED {stage}", file=sys.stderr, flush=True)
        time.sleep(3600)


def write_version(
    indexes_dir: Path,
    version_id: str,
    parent: str | None,
    embedding: Mapping[str, str | int],
    chunk_params: ChunkParams,
    entries: Sequence[Entry],
    ocr: Mapping[str, object] | None = None,
    companion: Mapping[str, str | int] | None = None,
) -> ManifestRecord:
    """Write a complete version under a temporary name, then rename it into place.

    companion: the companion embedder's record (retrieval.companion.companion_info); then every entry
    carries its companion vectors, written into chunks.db, and the manifest records it."""
    from retrieval.chunkstore import ChunkStore
    from retrieval.vectors import VectorIndex

    if companion is not None:
        cdim = int(companion["dim"])
        for entry in entries:
            cv = entry.companion_vectors
            if cv is None or cv.shape != (len(entry.chunks), cdim):
                raise RetrievalError(f"{entry.parsed.file_name}: companion vectors missing or of shape "
                                     f"{None if cv is None else cv.shape}, expected ({len(entry.chunks)}, {cdim})")
    tmp = indexes_dir / f"{TMP_PREFIX}{version_id}"
    tmp.mkdir(parents=True)
    store = ChunkStore.create(tmp / CHUNKS_DB)
    offset = 0
    try:
        for entry in entries:
            store.add_manual(entry.parsed)
            rows = list(store.add_chunks(entry.chunks, chunk_params.title_for(entry.parsed.title)))
            if rows != list(range(offset, offset + len(entry.chunks))):
                raise RetrievalError("chunk store rows are not contiguous with vector positions")
            if entry.sentence_vectors is not None:
                store.add_sentence_vectors(rows, entry.sentence_vectors)
            if companion is not None and entry.companion_vectors is not None:
                store.add_companion_vectors(rows, entry.companion_vectors)
                if entry.companion_sentence_vectors is not None:
                    store.add_companion_sentence_vectors(rows, entry.companion_sentence_vectors)
            offset += len(entry.chunks)
        store.commit()
    finally:
        store.close()
    pause_point("after_chunks")
    dim = int(embedding["dim"])
    matrix = (np.vstack([e.vectors for e in entries]) if entries
              else np.zeros((0, dim), dtype=np.float32)).astype(np.float32, copy=False)
    if matrix.shape != (offset, dim):
        raise RetrievalError(f"vectors have shape {matrix.shape}, expected ({offset}, {dim})")
    VectorIndex.build(matrix).save(tmp / VECTORS)
    for name in (CHUNKS_DB, VECTORS):
        with open(tmp / name, "rb+") as fh:
            os.fsync(fh.fileno())
    pause_point("after_vectors")
    manuals = [manual_entry(e.parsed, len(e.chunks)) for e in entries]
    manifest = build_manifest(tmp, version_id, parent, embedding, chunk_params, manuals, offset, ocr, companion)
    atomic_write_bytes(tmp / MANIFEST, manifest_bytes(manifest))
    fsync_dir(tmp)
    pause_point("after_manifest")
    os.rename(tmp, indexes_dir / version_id)
    fsync_dir(indexes_dir)
    pause_point("before_activate")
    return manifest
