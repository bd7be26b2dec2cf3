"""Which lines of a page start a section, and the heading each section goes under.

The heading travels with every chunk of its section into the embedding and the FTS5 row, so a
wrong one (a table row, a numbered step) misleads retrieval and the evidence card. Two sources:
- the PDF's outline (ingest.outline), when it has one: its titles, found again in the page text,
  are the headings and nothing else is (an author's declaration beats any guess);
- otherwise line-shape heuristics that hold for most manuals: numbered titles, short Title Case or
  CAPS lines followed by body text; never table rows (a trailing quantity, part numbers, Y/N
  cells), TOC entries, captions, admonitions, steps of a numbered list, or a chapter number lower
  than the one before (chapters count up; steps restart at 1).
Measured against outlines with bench/experiments/headings.py (eval/dev chooses, eval/test reports).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ingest.outline import matches
from ingest.text.terms import has_cjk

MIN_OUTLINE = 3  # fewer bookmarks than this is a cover link, not a table of the sections

_NUMBERED = re.compile(
    r"^(?:(?P<named>(?:chapter|section|part|appendix)\s+[\dA-Z]+[.:]?|step\s*\d{1,3}[.:]?)"
    r"|\d{1,2}(?:\.\d{1,2}){0,4}\.?|[A-Z]\.(?:\d{1,2}\.?)*|\d{1,2}\)|[a-z]\))"
    r"\s+(?:[-–—:]\s*)?(?P<title>\S.*)$",
    re.IGNORECASE,
)
_LETTER_ITEM = re.compile(r"^([a-z])\)\s", re.IGNORECASE)
_ITEM_MARK = re.compile(r"^(?:\d{1,2}|[a-z])\)\s", re.IGNORECASE)  # "6) " / "a) ": its ")" opens nothing
# A value with its unit after a label ("RF Bandwidth 300 MHz to 3800 MHz", "Dimensions 5.5x5.5 cm"): a row
# of a specification or parts table, not a title. A title may start with one ("12V Supply"), a name may
# hold one glued to letters ("P1dB"), and a numbered title may hold one ("5.2 Potentiometers (1h 45m)").
_VALUE = re.compile(r"(?<![^\W\d_])\d\s*(?:[kmgµu]?(?:hz|v|w|a|bit|bits|bps|b)|mm|cm|km|m|kg|g|lbs?|mah|ohms?|Ω"
                    r"|°\s*[cf]|%|db|dbm|ms|sec|min)(?![\w])", re.IGNORECASE)
# Chinese and Japanese titles: 第三章 接线说明, 第2节 安装, 一、产品概述, 2.1 技术参数, （三）注意事项; short, and not
# a sentence (no 。，；： inside, no full stop at the end).
_CJK_NUMBERED = re.compile(
    r"^(?:第\s*[\d一二三四五六七八九十百零〇]+\s*[章节部分篇条]|[一二三四五六七八九十]+[、.．]"
    r"|[（(][一二三四五六七八九十\d]+[）)]|\d{1,2}(?:\.\d{1,2}){0,3}[.、．]?)\s*(?P<title>[^\s。，；：！？,;:].{0,30})$")
_CJK_SENTENCE_MARKS = re.compile(r"[。，；：！？]")
_MULTILEVEL = re.compile(r"^\d{1,2}(?:\.\d{1,2}){1,4}\.?\s")
_CAPTION = re.compile(r"^(fig(ure)?|table|image|photo|diagram|chart|illustration)\.?\s*\d", re.IGNORECASE)
_TABLE_CAPTION = re.compile(r"^tab(le)?\.?\s*\d", re.IGNORECASE)  # a figure's caption may sit above a title
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
_BARE_NUMBER = re.compile(r"\d+")
_CODE = re.compile(r"(?=\S*[^\W\d_])(?=\S*\d)\S{3,}")  # a part or order number: letters and digits
_CHAPTER = re.compile(r"^(\d{1,2})[.)]\s")  # single-level "3. Title" (multilevel is _MULTILEVEL)
_QUOTED = re.compile(r"(?:^|(?<=\s))[\u201c\u2018\"'](?=\S)[^\u201d\u2019\"']*[\u201d\u2019\"']")  # "a UI label"
# A heading glued to a label set beside it, lost in the text layer: "Klipper InstallationReferences: ..."
_GLUED = re.compile(r"^(?P<head>[A-Z][\w-]*(?: [\w-]+){0,7}?[a-z])(?P<label>[A-Z][a-z]+):\s")
_LABELS = _ADMONITIONS | {"reference", "references", "source", "sources", "see", "requirements", "prerequisites",
                          "tools", "materials", "parts", "purpose", "scope", "overview", "summary"}


def furniture_key(line: str) -> str:
    """Running headers and footers compare equal whatever page number they print."""
    return re.sub(r"\d+", "#", " ".join(line.lower().split()))


@dataclass
class Headings:
    """Heading decisions for one manual, page after page (state: the last chapter number)."""

    outline: dict[int, list[str]] = field(default_factory=dict)  # page -> bookmark titles
    chapter: int = 0

    @classmethod
    def for_manual(cls, outline: list[tuple[int, str]]) -> Headings:
        titles: dict[int, list[str]] = {}
        if len(outline) >= MIN_OUTLINE:
            for page, title in outline:
                titles.setdefault(page, []).append(title)
        return cls(titles)

    def at(self, page: int, lines: list[str], i: int, furniture: set[str]) -> tuple[str, int] | None:
        """(heading, lines it spans) when lines[i] starts a section, else None."""
        line = lines[i]
        following = lines[i + 1:i + 3]
        if self.outline:
            for title in self.outline.get(page, []):
                spans = matches(line, following[0] if following else "", title)
                if spans:
                    return title, spans
            # front and back matter ("Contents", "Glossary") is often left out of an outline
            return (line, 1) if line.lower() in _STRUCTURAL else None
        prev = lines[i - 1] if i else ""
        glued = _GLUED.match(line)
        if glued and glued.group("label").lower() in _LABELS and _title_case(_WORD.findall(glued.group("head"))):
            return glued.group("head"), 1
        if not is_heading(line, prev, following, furniture):
            return None
        chapter = _CHAPTER.match(line)
        if chapter:
            if int(chapter.group(1)) < self.chapter:
                return None  # "2. Download the file" after chapter 7: a step
            self.chapter = int(chapter.group(1))
        if following and _CONTINUES.search(line) and len(following[0]) <= 60 and not _body_like(following[0]):
            return f"{line} {following[0]}", 2  # a title wrapped onto a second line
        return line, 1


def is_heading(line: str, prev: str, following: list[str], furniture: set[str]) -> bool:
    """Heuristics that hold for most manuals: numbered titles, short Title Case or CAPS lines."""
    if (len(line) > 90 or not line[0].isalnum() or _LEADER.search(line) or _CAPTION.match(line)
            or furniture_key(line) in furniture or line.endswith((".", ",", ";", ":", "!", "?", "–", "—"))
            or not _balanced(_ITEM_MARK.sub("", line))):
        return False
    if line.lower() in _STRUCTURAL:
        return True
    if has_cjk(line):
        return cjk_heading(line)
    words = _WORD.findall(_QUOTED.sub(" ", line)) or _WORD.findall(line)  # a quoted label is not the title
    if not any(len(w) >= 3 for w in words) or _letter_share(line) < 0.5:
        return False
    tokens = line.split()
    if len(tokens) >= 4 and _BARE_NUMBER.fullmatch(tokens[-1]):
        return False  # a table row ending in a quantity, pin or page number
    if prev and (_CONTINUES.search(prev) or _TABLE_CAPTION.match(prev)):
        return False  # the line continues a wrapped sentence, or is a table's header row
    if following and following[0][:1].islower() and not _LETTER_ITEM.match(following[0]):
        return False  # a sentence fragment that goes on below (not "a) Introduction", a subsection)
    numbered = _NUMBERED.match(line)
    if numbered:
        title = numbered.group("title")
        title_words = _WORD.findall(title)
        if not title[0].isalpha() or len(title_words) > 12:
            return False
        if _MULTILEVEL.match(line) or numbered.group("named"):
            return True  # "2.5.1 Open", "Step 1: Frame triangles": the numbering says it is a title
        return not _in_numbered_list(line, prev, following) and _title_case(title_words)
    if (len(words) > 8 or len(line) > 60 or _letter_share(line) < 0.65 or _NOT_TITLE_CHARS.search(line)
            or _is_admonition(words) or _table_cells(tokens) or _VALUE.search(line, len(tokens[0]))):
        return False
    if not following or not (_body_like(following[0]) or (
            len(following) > 1 and _body_like(following[1]) and len(following[0]) <= 60)):
        return False
    if _title_case(words) or line.isupper():
        return True
    # Sentence-case headings ("Cleaning the filter") only where a paragraph has just ended.
    return (len(words) <= 5 and words[0][0].isupper() and len(line) <= 40
            and (not prev or prev.endswith((".", "!", "?", ":"))))


def cjk_heading(line: str) -> bool:
    """A numbered CJK title (第三章 接线说明, 2.1 技术参数) that is not a sentence. An unnumbered line is
    not taken: without capitals or a full stop to read, a short Chinese line is as often a table cell."""
    numbered = _CJK_NUMBERED.match(line)
    if numbered:
        return has_cjk(numbered.group("title")) and not _CJK_SENTENCE_MARKS.search(numbered.group("title"))
    return False


def _in_numbered_list(line: str, prev: str, following: list[str]) -> bool:
    """True for "3. Remove the cover" between "2. ..." and "4. ...", or "b) Lift it" between "a)" and
    "c)": a step, not a chapter."""
    item = _item_number(line)
    if item is None:
        return False
    kind, n = item
    return (_item_number(prev) if prev else None) == (kind, n - 1) or (
        _item_number(following[0]) if following else None) == (kind, n + 1)


def _item_number(line: str) -> tuple[str, int] | None:
    """("digit", 3) for "3. ..." / "3) ...", ("letter", 2) for "b) ...", else None."""
    number = _LIST_ITEM.match(line)
    if number:
        return "digit", int(number.group(1))
    letter = _LETTER_ITEM.match(line)
    return ("letter", ord(letter.group(1).lower())) if letter else None


def _table_cells(tokens: list[str]) -> bool:
    """Two part numbers, or two one-letter cells ("Y Y - N"): a row of a table, not a title."""
    return (sum(bool(_CODE.fullmatch(t)) for t in tokens) >= 2
            or sum(len(t) == 1 and t.isalpha() and t not in "aAI" for t in tokens) >= 2)


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
