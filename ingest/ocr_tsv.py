"""What Tesseract's TSV output says: the page's text and its words (where each stands, how sure
Tesseract is of it), and a chunk's confidence from the words inside it (ingest.chunker). Kept apart from
running the programs (ingest.ocr_tools) and choosing the pages (ingest.ocr): it is pure text handling.
"""

from __future__ import annotations

import csv
import unicodedata

from ingest.models import OcrPage
from ingest.ocr_tools import OcrError
from ingest.text.scripts import joins_unspaced as joins

_WORD_FLOOR = 20.0  # words Tesseract is less sure of than this are noise (photos, drawings): dropped
_CHAR_MAP = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                           "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})


def parse_tsv(tsv: str) -> tuple[str, OcrPage]:
    """Tesseract's TSV -> page text (a line per line, a blank line between paragraphs) and its words."""
    rows = list(csv.reader(tsv.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows:
        return "", OcrPage(0.0, [])
    head = {name: i for i, name in enumerate(rows[0])}
    if "level" not in head or "text" not in head:  # e.g. a TESSDATA_PREFIX without configs/tsv: plain text came
        raise OcrError("Tesseract did not write its TSV output (is the tsv config in its tessdata/configs?)")
    width = height = 0.0
    parts: list[str] = []
    words: list[list[float]] = []
    last_line: tuple[str, ...] | None = None
    last_par: tuple[str, ...] | None = None
    length = 0
    for row in rows[1:]:
        if len(row) < len(head):
            continue
        level = row[head["level"]]
        if level == "1":
            width, height = float(row[head["width"]]), float(row[head["height"]])
            continue
        text = row[head["text"]].strip() if level == "5" else ""
        conf = float(row[head["conf"]] or -1)
        if not text or conf < _WORD_FLOOR or not width or not height:
            continue
        word = unicodedata.normalize("NFC", text).translate(_CHAR_MAP)
        par = (row[head["block_num"]], row[head["par_num"]])
        line = (*par, row[head["line_num"]])
        sep = "" if last_line is None else (
            ("" if joins(parts[-1], word) else " ") if line == last_line else "\n" if par == last_par else "\n\n")
        last_line, last_par = line, par
        parts.append(sep)
        length += len(sep)
        x, y = float(row[head["left"]]), float(row[head["top"]])
        w, h = float(row[head["width"]]), float(row[head["height"]])
        words.append([round(x / width, 4), round(y / height, 4), round((x + w) / width, 4),
                      round((y + h) / height, 4), round(conf, 1), length, length + len(word)])
        parts.append(word)
        length += len(word)
    mean = sum(w[4] for w in words) / len(words) if words else 0.0
    return "".join(parts), OcrPage(round(mean, 1), words)


def chunk_confidence(page: OcrPage, start: int, end: int, min_confidence: float
                     ) -> tuple[float | None, tuple[tuple[int, int], ...]]:
    """(mean confidence of the words in text[start:end], their doubtful spans relative to start); None for
    a span no OCR word touches: the text layer's own text on a page OCR added lines to (ingest.ocr_merge)."""
    inside = [w for w in page.words if w[5] >= start and w[6] <= end]
    if not inside:
        if page.words and not any(w[6] > start and w[5] < end for w in page.words):
            return None, ()
        return (page.confidence if page.words else 0.0), ()
    mean = round(sum(w[4] for w in inside) / len(inside), 1)
    doubtful = tuple((int(w[5]) - start, int(w[6]) - start) for w in inside if w[4] < min_confidence)
    return mean, doubtful
