"""Writing a new version's chunk store: its manuals, pages, chunks with their FTS5 terms, OCR words and
stored vectors. A mixin of retrieval.chunkstore.ChunkStore, which opens the file (versions are
immutable: a store opened read-only refuses every write here).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ingest.models import Chunk, ParsedManual
from ingest.text.languages import detect
from ingest.text.terms import index_text
from retrieval.chunk_schema import COMPANION_SCHEMA, COMPANION_SENTENCE_SCHEMA
from retrieval.fts import normalize
from retrieval.types import RetrievalError


class ChunkWrites:
    """ChunkStore's writing half; ChunkStore.__init__ sets what is declared here."""

    if TYPE_CHECKING:
        path: Path
        readonly: bool
        analysed: bool
        _db: sqlite3.Connection
        _lock: threading.Lock
        _df: dict[tuple[str, int], int]
        _languages: list[str] | None

    def _writable(self) -> None:
        if self.readonly:
            raise RetrievalError(f"chunk store {self.path} is open read-only")

    def add_manual(self, parsed: ParsedManual) -> None:
        self._writable()
        with self._lock:
            self._db.execute(
                "INSERT INTO manuals VALUES (?, ?, ?, ?, ?, ?)",
                (parsed.sha256, parsed.file_name, parsed.title, parsed.page_count, parsed.size_bytes,
                 json.dumps(list(parsed.pages_without_text))),
            )
            self._db.executemany(
                "INSERT INTO pages (manual_sha256, page, text, label) VALUES (?, ?, ?, ?)",
                [(parsed.sha256, p.number, p.text, p.label) for p in parsed.pages],
            )
            if parsed.ocr:
                self._db.executemany(
                    "INSERT INTO ocr_pages (manual_sha256, page, confidence, words) VALUES (?, ?, ?, ?)",
                    [(parsed.sha256, n, p.confidence, json.dumps(p.words, separators=(",", ":")))
                     for n, p in sorted(parsed.ocr.items())],
                )

    def add_chunks(self, chunks: list[Chunk], title: str = "") -> list[int]:
        """Append chunks; rows continue contiguously from the current count (FAISS positions).

        ``title`` (the manual's, when the chunk recipe carries it) is indexed with each heading."""
        self._writable()
        with self._lock:
            start = self._db.execute("SELECT COALESCE(MAX(row) + 1, 0) FROM chunks").fetchone()[0]
            rows = list(range(start, start + len(chunks)))
            if self.analysed:
                langs = [c.language or detect(c.text) or "en" for c in chunks]
                self._db.executemany(
                    "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(r, c.chunk_id, c.manual_sha256, c.page, c.ordinal, c.heading, c.text, lang)
                     for r, c, lang in zip(rows, chunks, langs, strict=True)],
                )
                self._db.executemany(
                    "INSERT INTO chunks_fts(rowid, heading, text) VALUES (?, ?, ?)",
                    [(r, index_text(normalize(f"{title} {c.heading}".strip()), lang),
                      index_text(normalize(c.text), lang))
                     for r, c, lang in zip(rows, chunks, langs, strict=True)],
                )
                self._languages = None
            else:
                self._db.executemany(
                    "INSERT INTO chunks (row, chunk_id, manual_sha256, page, ordinal, heading, text)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(r, c.chunk_id, c.manual_sha256, c.page, c.ordinal, c.heading, c.text)
                     for r, c in zip(rows, chunks, strict=True)],
                )
                self._db.executemany(
                    "INSERT INTO chunks_fts(rowid, heading, text) VALUES (?, ?, ?)",
                    [(r, normalize(f"{title} {c.heading}".strip()), normalize(c.text))
                     for r, c in zip(rows, chunks, strict=True)],
                )
            self._db.executemany(
                "INSERT INTO chunk_ocr (row, confidence, doubtful) VALUES (?, ?, ?)",
                [(r, c.ocr_confidence, json.dumps([list(d) for d in c.ocr_doubtful]))
                 for r, c in zip(rows, chunks, strict=True) if c.ocr_confidence is not None],
            )
            self._df.clear()
        return rows

    def add_sentence_vectors(self, rows: list[int], vectors: list[np.ndarray | None]) -> None:
        """Each chunk row's sentence vectors (None: none stored for it, embedded at query time)."""
        self._writable()
        with self._lock:
            self._db.executemany(
                "INSERT INTO sentence_vectors (row, dim, vectors) VALUES (?, ?, ?)",
                [(r, int(v.shape[1]), np.ascontiguousarray(v, dtype=np.float16).tobytes())
                 for r, v in zip(rows, vectors, strict=True) if v is not None and v.size])

    def add_companion_sentence_vectors(self, rows: list[int], vectors: list[np.ndarray | None]) -> None:
        """The companion's sentence vectors of each chunk row not in English (None: none kept for it), in a
        table made only when a version has them."""
        self._writable()
        kept = [(r, int(v.shape[1]), np.ascontiguousarray(v, dtype=np.float16).tobytes())
                for r, v in zip(rows, vectors, strict=True) if v is not None and v.size]
        if not kept:
            return
        with self._lock:
            self._db.execute(COMPANION_SENTENCE_SCHEMA)
            self._db.executemany("INSERT INTO companion_sentence_vectors (row, dim, vectors) VALUES (?, ?, ?)", kept)

    def add_companion_vectors(self, rows: list[int], vectors: np.ndarray) -> None:
        """The companion embedder's vector of each chunk row (retrieval.companion), in a table made only
        when a version has them: a version without a companion keeps the schema it had before."""
        self._writable()
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(rows):
            raise RetrievalError(f"companion vectors have shape {arr.shape}, expected ({len(rows)}, dim)")
        with self._lock:
            self._db.execute(COMPANION_SCHEMA)
            self._db.executemany("INSERT INTO companion_vectors (row, vector) VALUES (?, ?)",
                                 [(int(r), arr[i].tobytes()) for i, r in enumerate(rows)])
