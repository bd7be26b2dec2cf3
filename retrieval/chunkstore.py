"""The chunk store of one index version: manuals, page texts, chunks and their FTS5 index.

One SQLite file (``chunks.db``) inside the version directory. ``chunks.row`` is the chunk's
position in the FAISS index, so the two halves of a version line up without a mapping table.
The FTS5 table is contentless (it stores only the index): its text is NFKC-normalised so that
PDF ligatures ("ﬁrmware") match what people type. Each chunk records its language (``chunks.lang``,
ingest.text.languages) and the FTS5 table holds the chunk's terms as that language's analyser makes
them (ingest.text.terms: Snowball stems, CJK character pairs), so "flashing" finds "flash",
"Temperaturen" finds "Temperatur" and 最大电流 finds its pairs, while part numbers like "M3x8" or
"PA13" stay single tokens. Versions written before languages have no ``lang`` column and hold raw
text under SQLite's porter tokenizer; they are searched as before (``analysed`` is False).

ChunkStore opens a store and reads it; its tables are retrieval.chunk_schema, writing a new version
retrieval.chunk_writes and full-text search retrieval.chunk_lexical (ChunkStore mixes both in). The
names imported `as` themselves below moved there and are still importable from here.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ingest.models import Chunk, OcrPage
from retrieval.chunk_lexical import LEXICAL_ROW_BUDGET as LEXICAL_ROW_BUDGET
from retrieval.chunk_lexical import RESCORE_TERMS as RESCORE_TERMS
from retrieval.chunk_lexical import LexicalSearch
from retrieval.chunk_schema import SCHEMA as SCHEMA
from retrieval.chunk_writes import ChunkWrites
from retrieval.types import RetrievalError

_ROW_COLUMNS = ("c.row, c.chunk_id, c.manual_sha256, c.page, c.ordinal, c.heading, c.text,"
                " m.file_name, m.title")
_ROW_KEYS = ("row", "chunk_id", "manual_sha256", "page", "ordinal", "heading", "text", "file_name", "title",
             "language", "page_label")
# The chunk's language (chunks.lang); versions written before languages read "" (unknown).
_LANG_COLUMN = (", c.lang", ", ''")
# The printed page label (pages.label). Versions written before it existed have no such column:
# their rows read NULL, so they stay searchable and simply show no label.
_LABEL_JOIN = (", p.label", " LEFT JOIN pages p ON p.manual_sha256 = c.manual_sha256 AND p.page = c.page")
_NO_LABEL = (", NULL", "")
# The chunk's OCR confidence and doubtful spans (chunk_ocr); NULL for text-layer chunks and old versions.
_OCR_JOIN = (", o.confidence, o.doubtful", " LEFT JOIN chunk_ocr o ON o.row = c.row")
_NO_OCR = (", NULL, NULL", "")


class ChunkStore(ChunkWrites, LexicalSearch):
    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if not self.path.is_file():
            raise RetrievalError(f"chunk store {self.path} does not exist")
        if readonly:
            uri = self.path.resolve().as_uri() + "?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        else:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        self._lock = threading.Lock()  # one connection shared by the HTTP worker threads
        self.row_budget = LEXICAL_ROW_BUDGET
        self.rescore_terms = RESCORE_TERMS
        self._df: dict[tuple[str, int], int] = {}  # (phrase, cap) -> min(document frequency, cap)
        self._rows: int | None = None  # row count, cached once nothing can change it
        self._manuals: list[dict[str, Any]] | None = None  # cached on a read-only store (versions are immutable)
        self.has_labels = any(r[1] == "label" for r in self._query("PRAGMA table_info(pages)"))
        self.has_ocr = bool(self._query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunk_ocr'"))
        self.has_sentences = bool(self._query(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sentence_vectors'"))
        self.analysed = any(r[1] == "lang" for r in self._query("PRAGMA table_info(chunks)"))
        self._languages: list[str] | None = None
        self._companion_sentences: bool | None = None  # whether the table is there (companion_sentence_vectors)
        self._lang_rows: dict[tuple[str, bool], np.ndarray] = {}

    @classmethod
    def create(cls, path: Path) -> ChunkStore:
        """Create an empty store; refuses to overwrite, since versions are immutable."""
        path = Path(path)
        if path.exists():
            raise RetrievalError(f"chunk store {path} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(path))
        try:
            db.executescript(SCHEMA)
            db.commit()
        finally:
            db.close()
        return cls(path)

    def companion_vectors(self, dim: int) -> np.ndarray | None:
        """Every row's companion vector, row order, (rows, dim) float32; None when the version has none
        or they do not cover every row (a damaged or partial table is not searched)."""
        if not self._query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'companion_vectors'"):
            return None
        found = self._query("SELECT row, vector FROM companion_vectors ORDER BY row")
        total = self._row_total()
        if len(found) != total or any(int(r) != i for i, (r, _b) in enumerate(found)):
            return None
        if any(len(b) != 4 * dim for _r, b in found):
            return None
        if not found:
            return np.zeros((0, dim), dtype=np.float32)
        matrix: np.ndarray = np.frombuffer(b"".join(b for _r, b in found), dtype=np.float32).reshape(total, dim).copy()
        return matrix

    def rows_in_language(self, lang: str, *, other: bool = False) -> np.ndarray:
        """The rows whose chunk is in `lang` (other=True: in any language but `lang`; a chunk of a version
        written before languages counts as English), ascending; cached on a read-only store."""
        key = (lang, other)
        cached = self._lang_rows.get(key)
        if cached is not None:
            return cached
        if self.analysed:
            op = "!=" if other else "="
            found = self._query(f"SELECT row FROM chunks WHERE (CASE WHEN lang = '' THEN 'en' ELSE lang END) {op} ?"
                                " ORDER BY row", (lang,))
        else:
            found = [] if (lang == "en") == other else self._query("SELECT row FROM chunks ORDER BY row")
        rows = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
        if self.readonly:
            self._lang_rows[key] = rows
        return rows

    def sentence_vector_count(self) -> int:
        """How many chunks have their sentence vectors stored (0 for a version written before)."""
        return int(self._query("SELECT COUNT(*) FROM sentence_vectors")[0][0]) if self.has_sentences else 0

    def sentence_vectors(self, rows: list[int]) -> dict[int, np.ndarray]:
        """The stored sentence vectors (float32, one row per sentence) of those rows that have them."""
        return self._sentence_table("sentence_vectors", rows) if self.has_sentences else {}

    def companion_sentence_vectors(self, rows: list[int]) -> dict[int, np.ndarray]:
        """The companion's stored sentence vectors (float32, one row per sentence) of those rows that have
        them: the chunks not in English of a version built with a companion; {} for any other version."""
        has = self._companion_sentences
        if has is None:  # looked up once per opened version (read-only: nothing adds the table later)
            has = bool(self._query(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'companion_sentence_vectors'"))
            if self.readonly:
                self._companion_sentences = has
        return self._sentence_table("companion_sentence_vectors", rows) if has else {}

    def _sentence_table(self, table: str, rows: list[int]) -> dict[int, np.ndarray]:
        """Rows of a table of (row, dim, float16 vectors), as float32 arrays of one row per sentence."""
        out: dict[int, np.ndarray] = {}
        wanted = [int(r) for r in rows]
        for i in range(0, len(wanted), 500):
            part = wanted[i:i + 500]
            for row, dim, blob in self._query(
                    f"SELECT row, dim, vectors FROM {table} WHERE row IN ({','.join('?' * len(part))})", part):
                out[int(row)] = np.frombuffer(blob, dtype=np.float16).reshape(-1, int(dim)).astype(np.float32)
        return out

    def commit(self) -> None:
        with self._lock:
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ChunkStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------------
    def _query(self, sql: str, params: Iterable[object] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    def manuals(self) -> list[dict[str, Any]]:
        """The manuals with their chunk counts (cached when read-only: scoped searches ask every time)."""
        if self.readonly and self._manuals is not None:
            return [dict(m) for m in self._manuals]
        rows = self._query(
            "SELECT m.sha256, m.file_name, m.title, m.page_count, m.size_bytes, m.pages_without_text,"
            " (SELECT COUNT(*) FROM chunks c WHERE c.manual_sha256 = m.sha256)"
            " FROM manuals m ORDER BY m.file_name, m.sha256"
        )
        ocr: dict[str, list[int]] = {}
        if self.has_ocr:  # the pages read from their image by OCR (ingest.ocr)
            for sha, page in self._query("SELECT manual_sha256, page FROM ocr_pages ORDER BY manual_sha256, page"):
                ocr.setdefault(sha, []).append(int(page))
        out = [
            {"sha256": r[0], "file_name": r[1], "title": r[2], "page_count": r[3], "size_bytes": r[4],
             "pages_without_text": json.loads(r[5]), "chunk_count": r[6], "ocr_pages": ocr.get(r[0], [])}
            for r in rows
        ]
        if self.readonly:
            self._manuals = [dict(m) for m in out]
        return out

    def chunk_count(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM chunks")[0][0])

    def texts_by_id(self, chunk_ids: list[str]) -> dict[str, tuple[str, str]]:
        """{chunk_id: (heading, text)} of the chunks that exist (an answer log row keeps passages by id)."""
        found: dict[str, tuple[str, str]] = {}
        for i in range(0, len(chunk_ids), 500):  # stay under SQLite's variable limit
            part = chunk_ids[i:i + 500]
            marks = ",".join("?" * len(part))
            for r in self._query(f"SELECT chunk_id, heading, text FROM chunks WHERE chunk_id IN ({marks})", part):
                found[str(r[0])] = (str(r[1] or ""), str(r[2] or ""))
        return found

    def get_rows(self, rows: list[int]) -> list[dict[str, Any]]:
        """Chunk dicts (with the manual's file_name and title) in the order asked for."""
        wanted = [int(r) for r in rows]
        if not wanted:
            return []
        found: dict[int, dict[str, Any]] = {}
        label, join = _LABEL_JOIN if self.has_labels else _NO_LABEL
        ocr, ocr_join = _OCR_JOIN if self.has_ocr else _NO_OCR
        lang = _LANG_COLUMN[0] if self.analysed else _LANG_COLUMN[1]
        for i in range(0, len(wanted), 500):  # stay under SQLite's variable limit
            part = wanted[i:i + 500]
            marks = ",".join("?" * len(part))
            for r in self._query(
                f"SELECT {_ROW_COLUMNS}{lang}{label}{ocr} FROM chunks c JOIN manuals m ON m.sha256 = c.manual_sha256"
                f"{join}{ocr_join} WHERE c.row IN ({marks})", part,
            ):
                row = dict(zip(_ROW_KEYS, r[:-2], strict=True))
                row["ocr_confidence"] = r[-2]
                row["ocr_doubtful"] = [tuple(d) for d in json.loads(r[-1])] if r[-1] else []
                found[r[0]] = row
        missing = [r for r in wanted if r not in found]
        if missing:
            raise RetrievalError(f"chunk rows {missing[:5]} are missing from {self.path}")
        return [found[r] for r in wanted]

    def rows_for_manuals(self, shas: list[str]) -> np.ndarray:
        if not shas:
            return np.zeros(0, dtype=np.int64)
        marks = ",".join("?" * len(shas))
        rows = self._query(f"SELECT row FROM chunks WHERE manual_sha256 IN ({marks}) ORDER BY row", shas)
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def chunks_for_manual(self, sha: str) -> list[Chunk]:
        ocr, join = _OCR_JOIN if self.has_ocr else _NO_OCR
        lang = _LANG_COLUMN[0] if self.analysed else _LANG_COLUMN[1]
        rows = self._query(
            f"SELECT c.chunk_id, c.manual_sha256, c.page, c.ordinal, c.heading, c.text{ocr}{lang}"
            f" FROM chunks c{join} WHERE c.manual_sha256 = ? ORDER BY c.row", (sha,),
        )
        return [Chunk(chunk_id=r[0], manual_sha256=r[1], page=r[2], ordinal=r[3], heading=r[4], text=r[5],
                      ocr_confidence=r[6], ocr_doubtful=tuple((int(a), int(b)) for a, b in json.loads(r[7] or "[]")),
                      language=r[8])
                for r in rows]

    def languages(self) -> list[str]:
        """The languages of the chunks, most chunks first ([] for a version written before languages)."""
        if not self.analysed:
            return []
        if self._languages is not None and self.readonly:
            return list(self._languages)
        found = [str(r[0]) for r in self._query(
            "SELECT lang FROM chunks WHERE lang != '' GROUP BY lang ORDER BY COUNT(*) DESC, lang")]
        if self.readonly:
            self._languages = found
        return found

    def manual_languages(self) -> dict[str, list[str]]:
        """Each manual's languages, most chunks first (a bilingual manual has two)."""
        if not self.analysed:
            return {}
        out: dict[str, list[str]] = {}
        for sha, lang in self._query("SELECT manual_sha256, lang FROM chunks WHERE lang != ''"
                                     " GROUP BY manual_sha256, lang ORDER BY manual_sha256, COUNT(*) DESC"):
            out.setdefault(str(sha), []).append(str(lang))
        return out

    def ocr_pages(self, sha: str) -> dict[int, OcrPage]:
        """The pages of a manual read by OCR, with their words and boxes ({} before OCR existed)."""
        if not self.has_ocr:
            return {}
        rows = self._query("SELECT page, confidence, words FROM ocr_pages WHERE manual_sha256 = ?", (sha,))
        return {int(p): OcrPage(float(c), json.loads(w)) for p, c, w in rows}

    def ocr_page(self, sha: str, page: int) -> OcrPage | None:
        """The OCR words of one page (for the viewer), None when the page has its own text layer."""
        if not self.has_ocr:
            return None
        rows = self._query("SELECT confidence, words FROM ocr_pages WHERE manual_sha256 = ? AND page = ?",
                           (sha, page))
        return OcrPage(float(rows[0][0]), json.loads(rows[0][1])) if rows else None

    def page_text(self, sha: str, page: int) -> str | None:
        rows = self._query("SELECT text FROM pages WHERE manual_sha256 = ? AND page = ?", (sha, page))
        return rows[0][0] if rows else None

    def page_labels(self, sha: str) -> dict[int, str | None]:
        """Printed label by page number (empty for a store written before labels were kept)."""
        if not self.has_labels:
            return {}
        return dict(self._query("SELECT page, label FROM pages WHERE manual_sha256 = ?", (sha,)))
