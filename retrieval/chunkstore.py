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
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ingest.models import Chunk, OcrPage, ParsedManual
from ingest.text.languages import detect
from ingest.text.terms import has_cjk, index_text, term_variants
from retrieval.fts import match_units, normalize
from retrieval.types import RetrievalError

SCHEMA = """
CREATE TABLE manuals (
    sha256 TEXT PRIMARY KEY,
    file_name TEXT NOT NULL,
    title TEXT NOT NULL,
    page_count INT NOT NULL,
    size_bytes INT NOT NULL,
    pages_without_text TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE pages (
    manual_sha256 TEXT NOT NULL REFERENCES manuals(sha256),
    page INT NOT NULL,
    text TEXT NOT NULL,
    label TEXT,
    PRIMARY KEY (manual_sha256, page)
);
CREATE TABLE chunks (
    row INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    manual_sha256 TEXT NOT NULL REFERENCES manuals(sha256),
    page INT NOT NULL,
    ordinal INT NOT NULL,
    heading TEXT NOT NULL,
    text TEXT NOT NULL,
    lang TEXT NOT NULL DEFAULT ''
);
CREATE INDEX chunks_manual ON chunks(manual_sha256, row);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    heading, text, content='', tokenize='unicode61 remove_diacritics 2'
);
CREATE TABLE ocr_pages (
    manual_sha256 TEXT NOT NULL REFERENCES manuals(sha256),
    page INT NOT NULL,
    confidence REAL NOT NULL,
    words TEXT NOT NULL,
    PRIMARY KEY (manual_sha256, page)
);
CREATE TABLE chunk_ocr (
    row INTEGER PRIMARY KEY REFERENCES chunks(row),
    confidence REAL NOT NULL,
    doubtful TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE sentence_vectors (
    row INTEGER PRIMARY KEY REFERENCES chunks(row),
    dim INT NOT NULL,
    vectors BLOB NOT NULL
);
"""
# companion_vectors: each chunk's vector from the companion embedder (float32, `dim` of the manifest's
# "companion"), written only into a version built with one (retrieval.companion); it lives in chunks.db so
# that a backup, a restore or a fleet archive carries it as it carries the rest of the version.
COMPANION_SCHEMA = ("CREATE TABLE IF NOT EXISTS companion_vectors ("
                    "row INTEGER PRIMARY KEY REFERENCES chunks(row), vector BLOB NOT NULL)")
# sentence_vectors: each chunk's sentences as retrieval.sentence_rank embeds them (float16, one row of
# `dim` per sentence, in sentence_texts order), written at ingest so that a search scores its top
# passages by their best sentence without embedding anything. Versions written before have no such
# table, and a chunk without a row there is embedded at query time.
# OCR (ingest.ocr): ocr_pages holds the words Tesseract read on a page image, as JSON
# [[x0, y0, x1, y1, confidence, start, end], ...] (box as fractions of the page, [start, end) in the
# page's text), for the viewer to mark cited words; chunk_ocr marks the chunks read from an image,
# with their mean word confidence and the [start, end) of their doubtful words. Versions written
# before OCR have neither table: every chunk reads as text-layer text.

# bm25 column weights (heading, text). Headings repeat over every chunk of a section, so they are
# worth a little less than the passage itself.
BM25_WEIGHTS = (0.5, 1.0)

# FTS5 computes bm25 for every row that matches any OR-ed term before it sorts (~1.5 µs a row), so a
# question made of words found in tens of thousands of chunks costs tens of milliseconds. Only rows
# with one of the question's rarer terms are scored: terms are taken rarest first while the rows
# they match add up to at most LEXICAL_ROW_BUDGET. The next RESCORE_TERMS terms still count in the
# score of those rows (each costs a pass over its doclist); the rest, found in a large share of the
# chunks, have a small IDF. See docs/bench/search_latency.md for the cost/quality trade-off.
LEXICAL_ROW_BUDGET = 5_000
RESCORE_TERMS = 3
_DF_CACHE_MAX = 50_000

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


class ChunkStore:
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

    # -- writing -------------------------------------------------------------------------------
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
        if not self.has_sentences or not rows:
            return {}
        out: dict[int, np.ndarray] = {}
        wanted = [int(r) for r in rows]
        for i in range(0, len(wanted), 500):
            part = wanted[i:i + 500]
            for row, dim, blob in self._query(
                    f"SELECT row, dim, vectors FROM sentence_vectors WHERE row IN ({','.join('?' * len(part))})",
                    part):
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

    def _scope_filter(self, shas: list[str]) -> tuple[str | None, list[object], int]:
        """A rowid filter for FTS5 that never becomes one full-text query per allowed row.

        ``rowid IN (subquery)`` makes SQLite run the MATCH once per listed rowid (seconds at 100k
        chunks). Manuals are stored as contiguous row ranges, so one range goes to FTS5 as a rowid
        range it can seek; several ranges, or rows that are not contiguous, are applied as a plain
        filter (the leading ``+`` keeps SQLite from handing the constraint to FTS5). The third value
        is the number of rows in scope.
        """
        if not shas:
            return None, [], 0
        marks = ",".join("?" * len(shas))
        ranges = self._query(
            f"SELECT MIN(row), MAX(row), COUNT(*) FROM chunks WHERE manual_sha256 IN ({marks})"
            " GROUP BY manual_sha256 ORDER BY 1", shas)
        if not ranges:
            return None, [], 0
        total = sum(count for _lo, _hi, count in ranges)
        if any(hi - lo + 1 != count for lo, hi, count in ranges):
            return (f" AND +rowid IN (SELECT row FROM chunks WHERE manual_sha256 IN ({marks}))", list(shas),
                    total)
        if len(ranges) == 1:
            return " AND rowid BETWEEN ? AND ?", [ranges[0][0], ranges[0][1]], total
        return (" AND (" + " OR ".join("+rowid BETWEEN ? AND ?" for _ in ranges) + ")",
                [v for lo, hi, _count in ranges for v in (lo, hi)], total)

    def _row_total(self) -> int:
        if self._rows is not None:
            return self._rows
        total = int(self._query("SELECT COALESCE(MAX(row) + 1, 0) FROM chunks")[0][0])  # rows are 0..n-1
        if self.readonly:
            self._rows = total
        return total

    def _doc_freqs(self, units: list[str], cap: int) -> dict[str, int]:
        """Rows matching each unit over the whole store, counted up to ``cap`` (bounded cost), cached.

        Counting through FTS5 itself stems and tokenises exactly as the index did, and needs no
        extra table, so versions written before this existed work unchanged (and stay read-only).
        """
        out: dict[str, int] = {}
        for unit in units:
            key = (unit, cap)
            if key not in self._df:
                if len(self._df) >= _DF_CACHE_MAX:
                    self._df.clear()
                self._df[key] = self._query(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
                    (unit, cap))[0][0]
            out[unit] = self._df[key]
        return out

    def term_doc_freqs(self, words: list[str]) -> dict[str, int]:
        """Rows holding each word (letters and digits only, as retrieval.fts.tokens gives them),
        stemmed as the index stems; for retrieval.term_coverage's weights."""
        total = self._row_total()
        units = {w: self._term_unit(w) for w in words if w.isalnum()}
        counts = self._doc_freqs(list(dict.fromkeys(units.values())), max(1, total))
        return {w: counts.get(units[w], 0) if w in units else 0 for w in words}

    def _term_unit(self, word: str) -> str:
        """The MATCH unit that finds `word`: as typed where SQLite stems (old versions); in an analysed
        version a CJK pair as it is, a word as each of the index's languages stems it."""
        if not self.analysed or has_cjk(word):
            return f'"{word}"'
        return " OR ".join(f'"{v}"' for v in term_variants(word, self.languages() or ["en"]))

    def row_total(self) -> int:
        return self._row_total()

    def lexical_plan(self, units: list[str], searchable: int) -> list[list[str]]:
        """Groups of MATCH expressions to try in turn; the first group that finds rows is used.

        Within a group, each row keeps its best score. Up to ``row_budget`` searchable rows the one
        expression OR-s every unit. Beyond, the "rare" units are taken rarest first while the rows
        they match add up to at most the budget (the rarest always: the question's most specific
        part number, pin name or board-name phrase is never dropped), and the next
        ``rescore_terms`` are "common". Only rows with a rare unit are scored, by bm25 over rare +
        common units: ``rare`` scores rows without a common unit exactly, ``(rare) AND (common)``
        scores the others exactly (bm25 sums over every phrase of the expression, and a phrase's
        IDF does not depend on the others), so the best of the two per row is the score of
        ``rare OR common`` without FTS5 scoring the rows that match common units alone. Units
        beyond those are left out. When even the rarest unit is in more rows than the budget, every
        word of the question is common here and only their co-occurrence is informative: the units
        are AND-ed, and the most frequent one is let go until some row matches.
        """
        if not units:
            return []
        if searchable <= self.row_budget:
            return [[" OR ".join(units)]]
        df = self._doc_freqs(units, self.row_budget + 1)
        present = sorted((u for u in units if df[u]), key=lambda u: df[u])  # stable: phrases first
        if not present:
            return []
        if df[present[0]] > self.row_budget:
            return [[" AND ".join(present[:i])] for i in range(len(present), 0, -1)]
        rare: list[str] = []
        total = 0
        for unit in present:
            if rare and total + df[unit] > self.row_budget:
                break
            rare.append(unit)
            total += df[unit]
        common = present[len(rare):len(rare) + self.rescore_terms]
        rare_or = " OR ".join(rare)
        if not common:
            return [[rare_or]]
        return [[rare_or, f"({rare_or}) AND ({' OR '.join(common)})"]]

    def match_units(self, query: str) -> list[str]:
        """The question's MATCH units as this version's index holds its terms (retrieval.fts)."""
        return match_units(query, (self.languages() or ["en"]) if self.analysed else None)

    def lexical(self, query: str, n: int, manual_shas: list[str] | None = None) -> list[tuple[int, float]]:
        """BM25 over heading+text: (row, score) best first; score is positive, higher is better.

        On large stores the words found in a large share of the chunks are left out of the query
        (see :meth:`lexical_plan`), which bounds the rows FTS5 has to score.
        """
        units = self.match_units(query)
        if not units or n <= 0:
            return []
        scope_sql = ""
        scope_params: list[object] = []
        if manual_shas is not None:
            scope, scope_params, searchable = self._scope_filter(list(manual_shas))
            if scope is None:
                return []
            scope_sql = scope
        else:
            searchable = self._row_total()
        sql = (f"SELECT rowid, bm25(chunks_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]}) AS s"
               f" FROM chunks_fts WHERE chunks_fts MATCH ?{scope_sql} ORDER BY s LIMIT ?")
        try:
            for group in self.lexical_plan(units, searchable):
                best: dict[int, float] = {}
                for match in group:
                    for r, s in self._query(sql, [match, *scope_params, int(n)]):
                        best[int(r)] = max(best.get(int(r), -float("inf")), -float(s))
                if best:
                    return sorted(best.items(), key=lambda rs: (-rs[1], rs[0]))[:n]
        except sqlite3.OperationalError as exc:  # match_units makes this a bug, not user error
            raise RetrievalError(f"full-text search failed for {query!r}: {exc}") from exc
        return []
