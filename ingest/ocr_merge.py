"""A page with both a text layer and pictures of text: the text layer kept, OCR adding only what it lacks.

A manual's screenshot page (a dialog, a file list, a terminal) often carries a few lines of real text
beside the pictures. OCR reads both, and reads the typed lines worse than the text layer holds them
("闪烁" read "内烁", "ID" dropped), so replacing the text layer with the OCR text (what "auto" did) traded
correct sentences for the screenshots' words. Here each OCR line whose character pairs the text layer
already holds (COVERED of them) is dropped, and the rest follow the text layer, with their words' boxes
and confidences moved to their new place, so the evidence quotes the text layer and search still finds
what only the pictures say.
"""

from __future__ import annotations

import re
import unicodedata

from ingest.models import OcrPage

COVERED = 0.6  # share of a line's character pairs found in the text layer: the text layer already says it
MIN_CHARS = 3  # shorter OCR lines alone are a picture's specks ("L", "Ci"), not text
_SPACE = re.compile(r"\s+")


def _pairs(text: str) -> set[str]:
    flat = _SPACE.sub("", unicodedata.normalize("NFKC", text)).lower()
    return {flat[i:i + 2] for i in range(len(flat) - 1)}


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-empty line of `text`."""
    spans = []
    pos = 0
    for line in text.split("\n"):
        if line.strip():
            spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def merge(layer: str, ocr_text: str, page: OcrPage) -> tuple[str, OcrPage] | None:
    """(the text layer and then the OCR lines it lacks, those lines' words), or None when OCR found
    nothing the text layer does not hold."""
    have = _pairs(layer)
    out = layer.rstrip()
    words: list[list[float]] = []
    last_end = -2
    for start, end in _lines(ocr_text):
        line = ocr_text[start:end]
        pairs = _pairs(line)
        if len(_SPACE.sub("", line)) < MIN_CHARS or len(pairs & have) >= COVERED * len(pairs):
            continue
        # a line that followed the previous kept one in the same paragraph stays in it
        out += "\n" if ocr_text[last_end:start] == "\n" else "\n\n"
        shift = len(out) - start
        out += line
        words += [[*w[:5], w[5] + shift, w[6] + shift] for w in page.words if w[5] >= start and w[6] <= end]
        last_end = end
    if not words:
        return None
    mean = round(sum(w[4] for w in words) / len(words), 1)
    return out, OcrPage(mean, words)
