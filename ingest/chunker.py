"""Page-aware, heading-aware chunking of a parsed manual.

A chunk is a contiguous slice of ONE page's text (never two pages), so a citation can quote it and
point at its page. Sections start at detected headings; the current heading carries forward across
pages. Long sections split at paragraph > sentence > line > word boundaries with overlap; tiny
fragments merge into a neighbour on the same page. Running headers/footers (lines repeated among the
first or last three lines of many pages, wherever the text layer puts them among those) and page-number
lines ("Page 3 of 9", "第 7 页", "Seite 4") are left out of chunks and never taken for headings; a page
holding nothing else (a figure page) gives no chunk. A long running line (a legal notice, a warning set
on every page) stays on the first page that prints it, so its words can still be found once.
Each chunk records its language (ingest.text.languages): its own text's, else its page's, else the
manual's, so a bilingual manual's chunks carry each their own.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass

from ingest.headings import Headings, furniture_key
from ingest.models import Chunk, ChunkParams, ParsedManual, ParseLimits
from ingest.ocr_tsv import chunk_confidence
from ingest.text.languages import detect
from ingest.text.pagenumbers import is_page_number_line

DEFAULT_MIN_CONFIDENCE = ParseLimits().ocr_min_confidence

# Lines longer than this repeated on many pages are running text as well (a footer "AC63N All information
# provided in this document is subject to legal disclaimers © ..." on 10 of 11 pages), but they may say
# something (a warning on every page): such a line is kept on the first page that prints it.
LONG_RUNNING_CHARS = 100
EDGE_LINES = 3  # running lines are looked for among a page's first and last this many lines
# ... and deeper, up to this many, where every line between it and the page's edge is running or a page
# number: a letterhead may run to four or five lines (the JieLi updater guide: copyright, address, phone,
# web site, then the page number and the title), while a table row repeated near the foot of many pages
# (a bill of materials) is not running text.
RUNNING_WINDOW = 6

_SENTENCE_END = re.compile(r"[.!?:;](?:[\"')\]]*)(?=\s)")


@dataclass
class _Piece:
    page: int
    start: int
    end: int
    heading: str
    block: int = 0  # pieces of one page merge only within a block: a left-out line parts two blocks


def chunk_manual(parsed: ParsedManual, params: ChunkParams = ChunkParams()) -> list[Chunk]:
    """Split a parsed manual into chunks; ids are f"{sha256[:12]}-p{page:04d}-{n:03d}" (n: index on page)."""
    if params.max_chars < 50 or not 0 <= params.overlap_chars < params.max_chars // 2:
        raise ValueError("chunk params need max_chars >= 50 and 0 <= overlap_chars < max_chars / 2")
    skip = set(parsed.pages_without_text)
    furniture, first_pages = _running_lines(parsed)
    heading = ""
    headings = Headings.for_manual(parsed.outline)
    chunks: list[Chunk] = []
    stated = parsed.ocr_engine.get("min_confidence", DEFAULT_MIN_CONFIDENCE)  # ingest.ocr.read_pages's, a number
    if not isinstance(stated, (int, float, str)):
        raise TypeError(f"float() argument must be a string or a real number, not '{type(stated).__name__}'")
    min_confidence = float(stated)
    manual_language = detect(" ".join(p.text[:2000] for p in parsed.pages[:50])) or "en"
    for page in sorted(parsed.pages, key=lambda p: p.number):
        if page.number in skip or not page.text.strip():
            continue
        kept_here = {key for key, first in first_pages.items() if first == page.number}
        ocr = parsed.ocr.get(page.number)
        # a text layer OCR added lines to (ingest.ocr_merge): no chunk mixes the two, so the typed text is
        # quoted and ranked as text, not at the confidence of the pictures' words after it
        added = int(min(w[5] for w in ocr.words)) if ocr is not None and ocr.words else 0
        pieces, heading = _page_pieces(page.number, page.text, heading, headings, furniture - kept_here, params,
                                       added)
        page_language = detect(page.text, manual_language) or manual_language if pieces else manual_language
        for n, piece in enumerate(pieces):
            raw = page.text[piece.start:piece.end]
            text = raw.strip()
            confidence: float | None = None
            doubtful: tuple[tuple[int, int], ...] = ()
            if ocr is not None:  # read from the page image: how sure Tesseract was of these words
                start = piece.start + len(raw) - len(raw.lstrip())
                confidence, doubtful = chunk_confidence(ocr, start, start + len(text), min_confidence)
            chunks.append(Chunk(
                chunk_id=f"{parsed.sha256[:12]}-p{page.number:04d}-{n:03d}",
                manual_sha256=parsed.sha256, page=page.number, ordinal=len(chunks),
                heading=piece.heading, text=text, ocr_confidence=confidence, ocr_doubtful=doubtful,
                language=detect(text, page_language) or page_language,
            ))
    return chunks


def _running_lines(parsed: ParsedManual) -> tuple[set[str], dict[str, int]]:
    """Normalised lines found near the top or bottom of many pages (running headers and footers), and
    for those longer than LONG_RUNNING_CHARS the first page that prints them (it keeps its copy)."""
    pages = [p for p in sorted(parsed.pages, key=lambda p: p.number) if p.text.strip()]
    if len(pages) < 3:
        return set(), {}
    counts: Counter[str] = Counter()
    first_long: dict[str, int] = {}
    texts = [[ln.strip() for ln in page.text.split("\n") if ln.strip()] for page in pages]
    for page, lines in zip(pages, texts, strict=True):
        edge = {furniture_key(ln): len(ln) for ln in lines[:EDGE_LINES] + lines[-EDGE_LINES:]}
        counts.update(edge.keys())
        for key, length in edge.items():
            if length > LONG_RUNNING_CHARS:
                first_long.setdefault(key, page.number)
    threshold = max(3, int(0.3 * len(pages)))
    running = {key for key, count in counts.items() if count >= threshold}
    # each page's top and bottom RUNNING_WINDOW lines, edge first, as (key, is a page number), read once
    sides = [(len(lines), [(furniture_key(ln), is_page_number_line(ln)) for ln in edge])
             for lines in texts for edge in (lines[:RUNNING_WINDOW], lines[::-1][:RUNNING_WINDOW])]
    for depth in range(EDGE_LINES, RUNNING_WINDOW):  # deeper, behind a block of running lines only
        deeper = Counter(marks[depth][0] for length, marks in sides
                         if length > depth + 1 and all(key in running or number for key, number in marks[:depth]))
        running |= {key for key, count in deeper.items() if count >= threshold}
    return running, {key: page for key, page in first_long.items() if key in running}


def _page_pieces(number: int, text: str, heading: str, headings: Headings, furniture: set[str],
                 params: ChunkParams, added: int = 0) -> tuple[list[_Piece], str]:
    """Chunk spans of one page, and the heading in force at the end of the page; `added` > 0: where text
    OCR added after the text layer begins (no chunk spans it)."""
    lines: list[tuple[int, int, str]] = []  # (start, end, stripped text) of non-empty lines
    pos = 0
    for raw in text.split("\n"):
        if raw.strip():
            lines.append((pos, pos + len(raw), raw.strip()))
        pos += len(raw) + 1
    edge = set(range(min(2, len(lines)))) | set(range(max(0, len(lines) - 3), len(lines)))
    lines = [line for i, line in enumerate(lines) if i not in edge or not is_page_number_line(line[2])]
    starts = [s for s, _e, _t in lines]  # a page number left inside a slice is harmless: no gap for it
    if not lines:
        return [], heading
    first, last = 0, len(lines)
    # running lines from the page's edge, and a page number among them (under a letterhead of four lines)
    while first < last and (furniture_key(lines[first][2]) in furniture
                            or 0 < first < RUNNING_WINDOW and is_page_number_line(lines[first][2])):
        first += 1
    while last > first and (furniture_key(lines[last - 1][2]) in furniture
                            or len(lines) - RUNNING_WINDOW < last < len(lines)
                            and is_page_number_line(lines[last - 1][2])):
        last -= 1
    # a long running line the text layer put among the edge lines but not at the very edge (the footer,
    # then the page's last paragraph): left out too. Not a short one: list numbers ("7.", "10.") and
    # words ("Notes") at page edges repeat as well, and cutting them out of a page's middle left
    # fragments (Ender-3's safety list)
    edge_lines = set(range(min(EDGE_LINES, len(lines)))) | set(range(max(0, len(lines) - EDGE_LINES), len(lines)))
    if first < last:
        lines = [line for i, line in enumerate(lines)
                 if first <= i < last and not (i in edge_lines and len(line[2]) > LONG_RUNNING_CHARS
                                               and furniture_key(line[2]) in furniture)]
    elif sum(len(ln) for _s, _e, ln in lines if len(ln) <= LONG_RUNNING_CHARS) < params.min_chars:
        # only a running header and footer: a figure or blank page, nothing to quote (a long running
        # line is quoted on the first page that prints it)
        return [], heading
    # else a page made only of "furniture" lines is kept whole rather than lost (identical pages)
    sections: list[tuple[int, int, str, int]] = []  # (start, end, heading, block)
    start, block = lines[0][0], 0
    texts = [ln for _s, _e, ln in lines]
    i = 0
    while i < len(lines):
        # a line left out between the previous line and this one (a running footer the text layer set
        # before the page's last paragraph): the chunk text, a slice of the page, must not span it
        if i and (bisect_right(starts, lines[i - 1][0]) < bisect_right(starts, lines[i][0]) - 1
                  or lines[i - 1][0] < added <= lines[i][0]):
            sections.append((start, lines[i - 1][1], heading, block))
            start, block = lines[i][0], block + 1
        found = headings.at(number, texts, i, furniture)
        if found:
            if lines[i][0] > start:
                sections.append((start, lines[i][0], heading, block))
            start, heading = lines[i][0], found[0]
        i += found[1] if found else 1
    sections.append((start, lines[-1][1], heading, block))
    pieces = [piece for s, e, h, b in sections for piece in _split(number, text, s, e, h, params, b)]
    return _merge_tiny(pieces, text, params), heading


def _split(number: int, text: str, start: int, end: int, heading: str,
           params: ChunkParams, block: int = 0) -> list[_Piece]:
    """Cut text[start:end] into spans of at most max_chars, overlapping by about overlap_chars."""
    pieces: list[_Piece] = []
    while True:
        while start < end and text[start].isspace():
            start += 1
        if start >= end:
            return pieces
        if end - start <= params.max_chars:
            pieces.append(_Piece(number, start, end, heading, block))
            return pieces
        cut = _best_cut(text, start, start + params.max_chars)
        pieces.append(_Piece(number, start, cut, heading, block))
        nxt = _overlap_start(text, max(start + 1, cut - params.overlap_chars), cut)
        start = nxt if nxt > start else cut


def _best_cut(text: str, start: int, limit: int) -> int:
    """End of the last paragraph, sentence, line or word that fits in text[start:limit]."""
    floor = start + (limit - start) // 2
    window = text[floor:limit]
    para = window.rfind("\n\n")
    if para >= 0:
        return floor + para
    sentence = [m.end() for m in _SENTENCE_END.finditer(text, floor, limit)]
    if sentence:
        return sentence[-1]
    for sep in ("\n", " "):
        at = window.rfind(sep)
        if at >= 0:
            return floor + at
    return limit


def _overlap_start(text: str, lo: int, hi: int) -> int:
    """Where the overlap should begin: a sentence or line start in [lo, hi), else a word start."""
    sentence = _SENTENCE_END.search(text, lo, hi)
    if sentence:
        return sentence.end()
    newline = text.find("\n", lo, hi)
    if newline >= 0:
        return newline + 1
    space = text.find(" ", lo, hi)
    return space + 1 if space >= 0 else lo


def _merge_tiny(pieces: list[_Piece], text: str, params: ChunkParams) -> list[_Piece]:
    """Fold fragments shorter than min_chars into a neighbour on the same page when both fit."""
    merged = list(pieces)
    i = 0
    while i < len(merged):
        piece = merged[i]
        if len(text[piece.start:piece.end].strip()) >= params.min_chars or len(merged) == 1:
            i += 1
            continue
        if (i + 1 < len(merged) and merged[i + 1].block == piece.block
                and merged[i + 1].end - piece.start <= params.max_chars):
            nxt = merged[i + 1]
            own, other = (len(text[p.start:p.end].strip()) for p in (piece, nxt))
            heading = nxt.heading if other >= own else piece.heading
            merged[i:i + 2] = [_Piece(piece.page, piece.start, nxt.end, heading, piece.block)]
        elif i > 0 and merged[i - 1].block == piece.block and piece.end - merged[i - 1].start <= params.max_chars:
            prev = merged[i - 1]
            merged[i - 1:i + 1] = [_Piece(prev.page, prev.start, piece.end, prev.heading, piece.block)]
            i -= 1
        else:
            i += 1
    return merged
