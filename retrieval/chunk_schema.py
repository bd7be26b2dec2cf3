"""The tables of a version's chunk store (retrieval.chunkstore): SCHEMA is what ChunkStore.create
makes, COMPANION_SCHEMA the table added only to a version built with a companion embedder. Older
versions lack some tables or columns; ChunkStore reads what each version has.
"""

from __future__ import annotations

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
# companion_sentence_vectors: the sentences of each chunk not in English as the companion embeds them (float16,
# as sentence_vectors), for the sentence step of a question outside English (retrieval.search); made only in a
# version built with a companion, and a chunk without a row there has its sentences embedded at query time.
COMPANION_SENTENCE_SCHEMA = ("CREATE TABLE IF NOT EXISTS companion_sentence_vectors ("
                             "row INTEGER PRIMARY KEY REFERENCES chunks(row), dim INT NOT NULL, vectors BLOB NOT NULL)")
# sentence_vectors: each chunk's sentences as retrieval.sentence_rank embeds them (float16, one row of
# `dim` per sentence, in sentence_texts order), written at ingest so that a search scores its top
# passages by their best sentence without embedding anything. Versions written before have no such
# table, and a chunk without a row there is embedded at query time.
# OCR (ingest.ocr): ocr_pages holds the words Tesseract read on a page image, as JSON
# [[x0, y0, x1, y1, confidence, start, end], ...] (box as fractions of the page, [start, end) in the
# page's text), for the viewer to mark cited words; chunk_ocr marks the chunks read from an image,
# with their mean word confidence and the [start, end) of their doubtful words. Versions written
# before OCR have neither table: every chunk reads as text-layer text.
