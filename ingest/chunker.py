"""Page-aware, heading-aware chunking of a parsed manual.

A chunk is a contiguous slice of ONE page's text (never two pages), so a citation can quote it and
point at its page. Sections start at detected headings; the current heading carries forward across
pages. Long sections split at paragraph > sentence > line > word boundaries with overlap; tiny
fragments merge into a neighbour on the same page. Running headers/footers (lines repeated at the
top or bottom of many pages) are left out of chunks and never taken for headings.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ingest.models import Chunk, ChunkParams, ParsedManual

_NUMBERED = re.compile(
    r"^(?:(?:chapter|section|part|appendix)\s+[\dA-Z]+[.:]?|\d{1,2}(?:\.\d{1,2}){0,4}\.?|[A-Z]\.(?:\d{1,2}\.?)*)"
    r"\s+(?:[-–—:]\s*)?(?P<title>\S.*)$",
    re.IGNORECASE,
)
_MULTILEVEL = re.compile(r"^\d{1,2}(?:\.\d{1,2}){1,4}\.?\s")
_CAPTION = re.compile(r"^(fig(ure)?|table|image|photo|diagram|chart|illustration)\.?\s*\d", re.IGNORECASE)
_LEADER = re.compile(r"(\.\s?){4,}|…{2,}|_{4,}|\s\.\.\.\s*[\divxlcIVXLC]+$")  # TOC entries
_WORD = re.compile(r"[^\W\d_][\w'’/&+-]*")
_MINOR = {"a", "an", "the", "and", "or", "nor", "of", "in", "on", "at", "to", "for", "with", "by", "from",
          "vs", "via", "per", "into", "onto", "over", "under", "as", "is", "if", "up", "off", "out"}
_ADMONITIONS = {"warning", "caution", "danger", "note", "notes", "important", "tip", "tips", "notice",
                "attention", "hint", "example", "remark", "remarks"}
_STRUCTURAL = {"contents", "table of contents", "list of figures", "list of tables", "list of illustrations",
               "index", "glossary", "appendix", "appendices", "preface", "foreword", "introduction"}
_ALERTS = {"warning", "caution", "danger", "note", "notice", "important", "attention"}
_LIST_ITEM = re.compile(r"^(\d{1,2})[.)]\s")
_NOT_TITLE_CHARS = re.compile(r"[=<>{}|_\\~@#$%^*]|:\s*\S|→|=>")
_CONTINUES = re.compile(r"([,;/&+-]|\b(a|an|the|and|or|of|to|in|on|for|with|by|from|at|is|are|be))$",
                        re.IGNORECASE)
_BULLET = "•◦▪‣●○■□–—-*·"
_SENTENCE_END = re.compile(r"[.!?:;](?:[\"')\]]*)(?=\s)")


@dataclass
class _Piece:
    page: int
    start: int
    end: int
    heading: str


def chunk_manual(parsed: ParsedManual, params: ChunkParams = ChunkParams()) -> list[Chunk]:
    """Split a parsed manual into chunks; ids are f"{sha256[:12]}-p{page:04d}-{n:03d}" (n: index on page)."""
    if params.max_chars < 50 or not 0 <= params.overlap_chars < params.max_chars // 2:
        raise ValueError("chunk params need max_chars >= 50 and 0 <= overlap_chars < max_chars / 2")
    skip = set(parsed.pages_without_text)
    furniture = _running_lines(parsed)
    heading = ""
    chunks: list[Chunk] = []
    for page in sorted(parsed.pages, key=lambda p: p.number):
        if page.number in skip or not page.text.strip():
            continue
        pieces, heading = _page_pieces(page.number, page.text, heading, furniture, params)
        for n, piece in enumerate(pieces):
            chunks.append(Chunk(
                chunk_id=f"{parsed.sha256[:12]}-p{page.number:04d}-{n:03d}",
                manual_sha256=parsed.sha256, page=page.number, ordinal=len(chunks),
                heading=piece.heading, text=page.text[piece.start:piece.end].strip(),
            ))
    return chunks


def _key(line: str) -> str:
    return re.sub(r"\d+", "#", " ".join(line.lower().split()))


def _running_lines(parsed: ParsedManual) -> set[str]:
    """Normalised lines found near the top or bottom of many pages: running headers and footers."""
    pages = [p for p in parsed.pages if p.text.strip()]
    if len(pages) < 3:
        return set()
    counts: Counter[str] = Counter()
    for page in pages:
        lines = [ln.strip() for ln in page.text.split("\n") if ln.strip()]
        counts.update({_key(ln) for ln in lines[:3] + lines[-3:] if len(ln) <= 100})
    threshold = max(3, int(0.3 * len(pages)))
    return {key for key, count in counts.items() if count >= threshold}


def _page_pieces(number: int, text: str, heading: str, furniture: set[str],
                 params: ChunkParams) -> tuple[list[_Piece], str]:
    """Chunk spans of one page, and the heading in force at the end of the page."""
    lines: list[tuple[int, int, str]] = []  # (start, end, stripped text) of non-empty lines
    pos = 0
    for raw in text.split("\n"):
        if raw.strip():
            lines.append((pos, pos + len(raw), raw.strip()))
        pos += len(raw) + 1
    first, last = 0, len(lines)
    while first < last and _key(lines[first][2]) in furniture:
        first += 1
    while last > first and _key(lines[last - 1][2]) in furniture:
        last -= 1
    if first < last:  # a page made only of "furniture" is kept whole rather than lost
        lines = lines[first:last]
    sections: list[tuple[int, int, str]] = []  # (start, end, heading)
    start = lines[0][0]
    for i, (line_start, _end, line) in enumerate(lines):
        prev = lines[i - 1][2] if i else ""
        following = [ln for _s, _e, ln in lines[i + 1:i + 3]]
        if _is_heading(line, prev, following, furniture):
            if line_start > start:
                sections.append((start, line_start, heading))
            start, heading = line_start, line
    sections.append((start, lines[-1][1], heading))
    pieces = [piece for s, e, h in sections for piece in _split(number, text, s, e, h, params)]
    return _merge_tiny(pieces, text, params), heading


def _is_heading(line: str, prev: str, following: list[str], furniture: set[str]) -> bool:
    """Heuristics that hold for most manuals: numbered titles, short Title Case or CAPS lines."""
    if (len(line) > 90 or not line[0].isalnum() or _LEADER.search(line) or _CAPTION.match(line)
            or _key(line) in furniture or line.endswith((".", ",", ";", ":", "!", "?"))
            or not _balanced(line)):
        return False
    if line.lower() in _STRUCTURAL:
        return True
    words = _WORD.findall(line)
    if not any(len(w) >= 3 for w in words) or _letter_share(line) < 0.5:
        return False
    if prev and (_CONTINUES.search(prev) or _CAPTION.match(prev)):
        return False  # the line continues a wrapped sentence, or is a table's header row
    if following and following[0][:1].islower():
        return False  # a sentence fragment that goes on below
    numbered = _NUMBERED.match(line)
    if numbered:
        title = numbered.group("title")
        title_words = _WORD.findall(title)
        if not title[0].isalpha() or len(title_words) > 12:
            return False
        if _MULTILEVEL.match(line):
            return True
        return not _in_numbered_list(line, prev, following) and _title_case(title_words)
    if (len(words) > 8 or len(line) > 60 or _letter_share(line) < 0.65 or _NOT_TITLE_CHARS.search(line)
            or _is_admonition(words)):
        return False
    if not following or not (_body_like(following[0]) or (
            len(following) > 1 and _body_like(following[1]) and len(following[0]) <= 60)):
        return False
    if _title_case(words) or line.isupper():
        return True
    # Sentence-case headings ("Cleaning the filter") only where a paragraph has just ended.
    return (len(words) <= 5 and words[0][0].isupper() and len(line) <= 40
            and (not prev or prev.endswith((".", "!", "?", ":"))))


def _in_numbered_list(line: str, prev: str, following: list[str]) -> bool:
    """True for "3. Remove the cover" between "2. ..." and "4. ...": a step, not a chapter."""
    number = _LIST_ITEM.match(line)
    if not number:
        return False
    n = int(number.group(1))
    before = _LIST_ITEM.match(prev) if prev else None
    after = _LIST_ITEM.match(following[0]) if following else None
    return bool((before and int(before.group(1)) == n - 1) or (after and int(after.group(1)) == n + 1))


def _balanced(line: str) -> bool:
    return (line.count("(") == line.count(")") and line.count("[") == line.count("]")
            and line.count("\u201c") == line.count("\u201d") and line.count('"') % 2 == 0)


def _letter_share(line: str) -> float:
    chars = [ch for ch in line if not ch.isspace()]
    return sum(ch.isalpha() for ch in chars) / len(chars) if chars else 0.0


def _is_admonition(words: list[str]) -> bool:
    lowered = [w.lower() for w in words]
    return (len(lowered) == 1 and lowered[0] in _ADMONITIONS) or (
        len(lowered) <= 2 and any(w in _ALERTS for w in lowered))


def _title_case(words: list[str]) -> bool:
    significant = [w for i, w in enumerate(words) if i == 0 or w.lower() not in _MINOR]
    if not significant or not significant[0][0].isupper():
        return False
    return sum(w[0].isupper() for w in significant) >= 0.75 * len(significant)


def _body_like(line: str) -> bool:
    return len(line) >= 40 or line[:1] in _BULLET or line.endswith((".", ":", "!", "?"))


def _split(number: int, text: str, start: int, end: int, heading: str,
           params: ChunkParams) -> list[_Piece]:
    """Cut text[start:end] into spans of at most max_chars, overlapping by about overlap_chars."""
    pieces: list[_Piece] = []
    while True:
        while start < end and text[start].isspace():
            start += 1
        if start >= end:
            return pieces
        if end - start <= params.max_chars:
            pieces.append(_Piece(number, start, end, heading))
            return pieces
        cut = _best_cut(text, start, start + params.max_chars)
        pieces.append(_Piece(number, start, cut, heading))
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
        if i + 1 < len(merged) and merged[i + 1].end - piece.start <= params.max_chars:
            nxt = merged[i + 1]
            own, other = (len(text[p.start:p.end].strip()) for p in (piece, nxt))
            heading = nxt.heading if other >= own else piece.heading
            merged[i:i + 2] = [_Piece(piece.page, piece.start, nxt.end, heading)]
        elif i > 0 and piece.end - merged[i - 1].start <= params.max_chars:
            prev = merged[i - 1]
            merged[i - 1:i + 1] = [_Piece(prev.page, prev.start, piece.end, prev.heading)]
            i -= 1
        else:
            i += 1
    return merged
