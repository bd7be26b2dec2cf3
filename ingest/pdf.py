"""PDF -> normalised page texts and a title. This runs inside the sandboxed worker process.

`python -m ingest.pdf --max-pages N --memory-mb M FILE` caps its own address space, parses FILE
with pypdf and writes one JSON object to stdout: {"ok": {...}} or {"error": "reason"}. The parent
(ingest.sandbox) adds the file name, the hash and the size, and enforces the wall-clock limit.
Error reasons are short, user-facing and never name the file (the parent does).

A worker never outlives its parent: killed with -9, the parent cannot stop it, so the worker
watches for itself (`--parent-pid`, `--lifeline-fd`, see ingest.worker_limits) and also ends itself
after `--timeout-s`, the limit its parent applies.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ingest.drawings import strip_drawings
from ingest.labels import page_labels
from ingest.models import IngestError
from ingest.ocr import BLANK
from ingest.outline import read_outline
from ingest.respace import respace_pages
from ingest.worker_limits import die_with_parent, limit_memory, limit_time

if TYPE_CHECKING:
    from pypdf import PdfReader

    from ingest.ocr import OcrRead, OcrSettings


class OcrPageOut(TypedDict):
    """One OCR'd page as the worker prints it (ingest.models.OcrPage's fields)."""

    confidence: float
    words: list[list[float]]


class Parsed(TypedDict):
    """What the worker prints for a parse (extract): the "ok" of its one JSON line. Pairs and triples are
    JSON arrays, read back as lists by ingest.sandbox (which only unpacks them)."""

    title: str
    pdf_title: str
    page_count: int
    pages: Sequence[tuple[int, str, str | None]]  # (number, text, printed label)
    pages_without_text: list[int]
    outline: Sequence[tuple[int, str]]  # (page, title)
    ocr: dict[str, OcrPageOut]  # by page number
    unread: dict[str, str]  # page number -> why it stayed unread
    ocr_engine: dict[str, object]


class Labels(TypedDict):
    """What the worker prints for `--labels-only` (extract_labels)."""

    page_count: int
    labels: list[str | None]

MIN_TEXT_CHARS = 20  # a page with fewer non-space characters counts as having no text
NO_TEXT_MESSAGE = "no text on any page"
_HEAD_BYTES = 1024
_TAIL_BYTES = 4096

_CHAR_MAP = str.maketrans({
    "\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
    "\ufb06": "st", "\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u200b": "", "\ufeff": "",
    "\t": " ", "\f": "\n", "\x00": "",
    # Bullets drawn from the Symbol/Wingdings fonts land in the private use area.
    "\uf0b7": "•", "\uf0a7": "▪", "\uf076": "•", "\uf0d8": "•", "\uf0fc": "✓", "\uf06e": "■",
})
_LEADER_DOTS = re.compile(r"(?:\s?[.·…]){5,}\s?")
_SPACE_RUN = re.compile(r"[ \u2000-\u200a\u205f\u3000]+")
# A word hyphenated at a line end: lower-case letters on both sides ("zu-\nnächst", "config-\nuration");
# "Raspberry-\nPi" keeps its hyphen (a compound's second part is capitalised).
_LINE_END_HYPHEN = re.compile(r"([^\W\d_])-\n([^\W\d_]+)( ?)")
_BLANK_RUNS = re.compile(r"\n{3,}")
_BAD_TITLE = re.compile(
    r"^(untitled.*|title|document\d*|slide \d+|administrator|admin|owner|author|unknown"  # account names too
    r"|powerpoint presentation|microsoft (word|powerpoint) - .*"
    r"|.*\.(docx?|odt|rtf|txt|pdf|indd|qxd|pptx?|xlsx?|tex|dvi|ps|ai|eps))$",
    re.IGNORECASE,
)
# Titles that name the kind of document, not the equipment: every manual could carry them, so a
# manual list of them says nothing. Optional words around a document kind ("Owner's Manual",
# "User Guide", "Installation Instructions", "Manual v2", "Datasheet").
_DOC_KIND = (r"(manual|guide|handbook|booklet|instructions?|datasheet|data sheet|document(ation)?|brochure"
             r"|leaflet|specifications?|spec sheet|reference|notes|book|pdf|file|report|draft|title page)")
_GENERIC_WORDS = (r"(the|a|an|users?['’]?s?|owners?['’]?s?|operators?['’]?s?|operating|operation|operations"
                  r"|instruction|installation|install|service|maintenance|repair|technical|product|quick"
                  r"|start|setup|set-up|getting|started|safety|reference|programming|assembly|english|en"
                  r"|complete|full|general|new|and|&|of|for|-)")
_GENERIC_TITLE = re.compile(
    rf"^({_GENERIC_WORDS}\s+)*{_DOC_KIND}(\s+{_GENERIC_WORDS})*(\s+(v|rev\.?|version)?\s*[\d.]+[a-z]?)?$",
    re.IGNORECASE,
)
# The same in Chinese and German: "产品介绍" (product introduction), "用户手册", "使用说明书",
# "Bedienungsanleitung", "Benutzerhandbuch", "Aufbauanleitung" name no equipment either.
_GENERIC_FOREIGN = re.compile(
    r"^(?:(?:产品|用户|使用|操作|安装|快速|硬件|软件|技术|开发|用戶|產品)?(?:介绍|介紹|简介|簡介|手册|手冊|说明书?|說明書?"
    r"|指南|入门|文档|资料)|(?:bedienungs|benutzer|betriebs|gebrauchs|aufbau|montage|installations|kurz"
    r"|schnellstart)?(?:anleitung|handbuch|dokumentation|beschreibung))(?:\s*(?:v|version)?\s*[\d.]+)?$",
    re.IGNORECASE)
# A numbered section ("一、Answer", "1、供电方式", "第一章 概述") set large on page 1 opens the text, it names
# no manual.
_SECTION_NUMBERED = re.compile(
    r"^(?:[一二三四五六七八九十]+\s*[、.．]|\d{1,2}\s*[、)）]|第\s*[\d一二三四五六七八九十]+\s*[章节])")
# A file name or a file-system-like code rather than words: no spaces, parts joined by "_" or "-"
# ("pump_manual_v3", "XR200-SM-EN-rev4"), a document number ("DOC-00123"), or a path.
# Section words that open a title page's text but name nothing ("Contents", "Table of contents").
_SECTION_WORD = re.compile(r"^(?:(?:table of )?contents|index|preface|foreword|introduction|overview)$", re.IGNORECASE)
_FILE_LIKE = re.compile(r"^(\S*[_/\\]\S*|[\w.]+(-[\w.]+){2,}|[A-Za-z]{0,4}-?\d{5,}[\w-]*)$")


def check_file(path: Path, max_file_mb: float) -> int:
    """Cheap checks that need no parser; returns the size in bytes or raises IngestError."""
    if not path.exists():
        raise IngestError("no such file")
    if not path.is_file():
        raise IngestError("not a regular file")
    size = path.stat().st_size
    if size == 0:
        raise IngestError("empty file (0 bytes), not a PDF")
    if size > max_file_mb * 1024 * 1024:
        raise IngestError(f"file is {size / 1048576:.1f} MB, over the {max_file_mb:g} MB limit "
                          "(ingest.max_file_mb)")
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read()
    if b"%PDF-" not in head:
        raise IngestError("not a PDF file (no %PDF header at the start)")
    if b"%%EOF" not in tail:
        raise IngestError("PDF is truncated or damaged (no %EOF end marker); re-download or re-export it")
    return size


def normalise_text(raw: str) -> str:
    """Make extracted text searchable and quotable: fix ligatures, join hyphenated words, tidy spaces.

    Line breaks are kept (the chunker uses them to find headings and paragraphs).
    """
    text = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\u00ad\n", "-\n").replace("\u00ad", "")
    text = unicodedata.normalize("NFC", text).translate(_CHAR_MAP)
    text = "\n".join(_SPACE_RUN.sub(" ", line).strip() for line in text.split("\n"))

    def join(match: re.Match[str]) -> str:
        if not (match.group(1).islower() and match.group(2)[0].islower()):
            return match.group(0)
        rest = match.string[match.end():match.end() + 1]
        return match.group(1) + match.group(2) + ("" if rest in ("", "\n") else "\n")

    text = _LINE_END_HYPHEN.sub(join, text)
    text = _LEADER_DOTS.sub(" ... ", text)  # table-of-contents dot leaders
    return _BLANK_RUNS.sub("\n\n", text).strip()


def meaningful_title(candidate: str | None) -> str:
    """The candidate tidied, or "" when it says nothing (empty, 'Untitled', a file name...)."""
    if not candidate:
        return ""
    title = _SPACE_RUN.sub(" ", str(candidate).replace("\n", " ").replace("\x00", "")).strip(" -_:;,")
    if sum(ch.isalpha() for ch in title) < 3 or len(title) > 200 or _BAD_TITLE.match(title):
        return ""
    return title


def is_generic_title(title: str, stem: str = "") -> bool:
    """A title that names no equipment: only a kind of document ("User Manual", "Operating
    Instructions"), a file name or code ("pump_manual_v3"), or the file's own name."""
    title = title.strip()
    key = re.sub(r"[\s_\-.]+", " ", title).strip().lower()
    # the file's own name as a title says no more than the file name, unless it is written as words
    same_as_file = bool(stem) and key == re.sub(r"[\s_\-.]+", " ", stem).strip().lower() and " " not in title
    return (not title or bool(_GENERIC_TITLE.match(title)) or bool(_GENERIC_FOREIGN.match(title))
            or bool(_FILE_LIKE.match(title)) or same_as_file)


def readable_stem(stem: str) -> str:
    """A file name as words: "pump_service-manual" -> "pump service manual" (the extension is gone)."""
    words = stem.replace("_", " ")
    if " " not in words.strip():
        words = words.replace("-", " ")
    return _SPACE_RUN.sub(" ", words).strip() or stem


# A date or a revision stamp is never a manual's title ("October 31, 2025", "Rev. 2 - 2024-03-01"),
# though a title page often sets it large.
_DATE_LINE = re.compile(
    r"^\W*(?:(?:rev(?:ision)?|version|v|date|updated|edition)\W*[\w.]*\W*)?"
    r"(?:\d{1,4}[./-]\d{1,2}[./-]\d{1,4}|(?:\d{1,2}\W+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
    r"(?:\W+\d{1,2}(?:st|nd|rd|th)?)?,?\W+\d{4})\W*$", re.IGNORECASE)


def _looks_like_title_line(line: str) -> bool:
    letters = sum(ch.isalpha() for ch in line)
    return (letters >= 3 and len(line) <= 100 and not line.endswith((".", ",", ";"))
            and not any(mark in line for mark in "。，；")  # a Chinese sentence or a piece of one
            and "@" not in line and "://" not in line and "...." not in line and not _DATE_LINE.match(line)
            and not _SECTION_NUMBERED.match(line))


def page_title(big_text: str, page1_text: str, stem: str) -> str:
    """A title read off page 1: its largest text, else its first title-like line that names more
    than a kind of document; else the file name as words."""
    if big_text and len(big_text) <= 150:
        title = meaningful_title(big_text)
        if title and _looks_like_title_line(title) and not is_generic_title(title, stem):
            return title
    lines = [line.strip() for line in page1_text.split("\n")[:15]]
    for number, line in enumerate(lines):
        # a printed line that reads like the file's name confirms it (no stem test here)
        if _looks_like_title_line(line) and meaningful_title(line) and not is_generic_title(line) \
                and not _SECTION_WORD.match(line):
            # "XR-200" then "Service Manual" on the next line: one title
            following = lines[number + 1] if number + 1 < len(lines) else ""
            if following and _looks_like_title_line(following) and _GENERIC_TITLE.match(following) \
                    and len(line) + len(following) < 100:
                return f"{line} {following}"
            return line
    return readable_stem(stem)


_VERSION = re.compile(r"(?<![^\W\d_])(?:v|ver\.?|version|rev\.?|revision)\s*(\d+(?:\.\d+)*)", re.IGNORECASE)
_NOT_A_TITLE = {"contents", "table of contents", "index", "introduction", "preface", "foreword", "inhalt",
                "inhaltsverzeichnis", "目录", "目錄", "前言"}
# A metadata title with less than this share of its naming words on the front pages is stale, unless the
# front pages carry under MIN_FRONT_CHARS characters of text (a cover with a word or two, a figure, a
# logo, says nothing either way). docs/bench/experiments/stale_titles.md measured it.
STALE_SHARE = 0.5
MIN_FRONT_CHARS = 60
_KIND_WORD = re.compile(rf"(?:{_DOC_KIND}|{_GENERIC_WORDS})$", re.IGNORECASE)
_NOT_ALNUM = re.compile(r"[\W_]+")


def _squashed(text: str) -> str:
    """Lower-cased letters and digits only: "XR-200" and "XR 200" read alike, and so do a word and the
    word run into its neighbours on a cover ("P-200Service")."""
    return _NOT_ALNUM.sub("", unicodedata.normalize("NFKC", text).lower())


def naming_words(title: str) -> set[str]:
    """The title's content words (ingest.text.terms.content_terms) less the words every manual's title
    could carry ("User", "Manual", "Assembly", "使用说明书"): what names the equipment or the subject.
    All of its content words when nothing else is left."""
    from ingest.text.terms import content_terms

    words = content_terms(title)
    names = {w for w in words if not _KIND_WORD.match(w) and not _GENERIC_FOREIGN.match(w)}
    return names or words


def is_stale_title(title: str, front_text: str) -> bool:
    """A metadata title the document no longer carries: a version the front pages replace with another
    ("... V1.0" on a V3.0 document), or one whose naming words (naming_words) are mostly absent from
    the front pages (a recruitment notice's title left on an updater tool's guide, a sister product's
    name left on a counter's manual). A word counts as present anywhere in the front text, across
    spaces, hyphens and neighbouring words (so a name spelt "XR 200" carries "XR-200"). Without enough
    front text (under MIN_FRONT_CHARS: a cover set as an image) only the version test speaks."""
    said = {m.group(1) for m in _VERSION.finditer(title)}
    shown = {m.group(1) for m in _VERSION.finditer(front_text)}
    if said and shown and not said & shown:
        return True
    if len(front_text.strip()) < MIN_FRONT_CHARS:
        return False
    names = naming_words(title)
    front = _squashed(front_text)
    carried = sum(_squashed(w) in front for w in names)
    return bool(names) and carried < STALE_SHARE * len(names)


def choose_title(meta_title: str | None, big_text: str, page1_text: str, stem: str, front_text: str = "") -> str:
    """Metadata title if it names the equipment and the front pages (`front_text`, pages 1-2) still
    carry it, else a title from page 1 (page_title), else the file name as words: a generic or stale
    metadata title ("User Manual", "... V1.0" on a V3.0 document) is never chosen."""
    title = meaningful_title(meta_title)
    if title and not is_generic_title(title, stem):
        if not is_stale_title(title, front_text):
            return title
        found = page_title(big_text, page1_text, stem)
        # only a real title read off the cover replaces it, not the file name or a "Contents" page
        return found if found != readable_stem(stem) and found.lower() not in _NOT_A_TITLE else title
    return page_title(big_text, page1_text, stem)


def _largest_text(runs: list[tuple[float, str]]) -> str:
    """Text set in the largest font on a page (usually the title on a cover page)."""
    runs = [(size, text) for size, text in runs if text.strip()]
    if not runs:
        return ""
    top = max(size for size, _ in runs)
    return " ".join(" ".join(text.split()) for size, text in runs if size >= 0.9 * top).strip()


def _decrypt(reader: PdfReader) -> None:
    """Open PDFs that only carry an owner password (print/copy restrictions); refuse real passwords."""
    from pypdf.errors import DependencyError

    ok: int  # pypdf's PasswordType: 0 when the password did not open it
    try:
        ok = reader.decrypt("")
    except DependencyError:
        raise IngestError("PDF is encrypted with AES and needs the 'cryptography' package "
                          "(pip install cryptography)") from None
    except Exception:  # noqa: BLE001 - a broken encryption dictionary is a broken file
        ok = 0
    if not ok:
        raise IngestError("PDF is password protected (encrypted); remove the password and ingest it again")


def open_reader(path: Path, max_pages: int) -> tuple[PdfReader, int, str | None]:
    """(reader, page_count, metadata title) of a PDF that opens and whose page count is allowed."""
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError

    try:
        reader = PdfReader(str(path), strict=False)
        if reader.is_encrypted:
            _decrypt(reader)
        page_count = len(reader.pages)
        meta_title: str | None = reader.metadata.get("/Title") if reader.metadata else None
    except (IngestError, MemoryError):
        raise
    except LimitReachedError:
        raise IngestError("PDF holds data that expands beyond the parser's safety limits "
                          "(possible decompression bomb)") from None
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for broken files
        raise IngestError(f"PDF is malformed and cannot be read ({_brief(exc)})") from None
    if page_count == 0:
        raise IngestError("PDF has no pages")
    if page_count > max_pages:
        raise IngestError(f"PDF has {page_count} pages, over the {max_pages}-page limit (ingest.max_pages)")
    return reader, page_count, meta_title


def extract(path: Path, max_pages: int, drop_drawings: bool = True,
            ocr: OcrSettings | None = None) -> Parsed:
    """Parse the PDF: title, page_count, pages [(number, text, label)], pages_without_text, outline,
    and what OCR read: ocr {page: {confidence, words}}, unread {page: reason}, ocr_engine.

    drop_drawings: cut the drawing operators out of the pages first (ingest.drawings), which gives
    the same text in a fraction of the time on drawing-heavy pages.
    ocr: ingest.ocr.read_pages's settings (mode, languages, dpi, timeout_s, max_pixels,
    min_confidence); None: no OCR (as "off").
    """
    from pypdf.errors import LimitReachedError

    reader, page_count, meta_title = open_reader(path, max_pages)
    if drop_drawings:
        try:
            strip_drawings(reader)
        except (MemoryError, LimitReachedError):
            raise
        except Exception:  # noqa: BLE001 - the pages then keep their streams and parse as before
            pass

    runs: list[tuple[float, str]] = []

    def collect(text: str, cm: list[float], tm: list[float], _font: object, size: float) -> None:
        scale = math.sqrt(abs(tm[0] * tm[3] - tm[1] * tm[2]) * abs(cm[0] * cm[3] - cm[1] * cm[2]))
        runs.append((round(float(size) * scale, 1), text))

    pages: list[tuple[int, str]] = []
    failed = 0
    for number in range(1, page_count + 1):
        try:
            raw = reader.pages[number - 1].extract_text(visitor_text=collect if number == 1 else None)
        except MemoryError:
            raise
        except LimitReachedError:
            raise IngestError(f"page {number} holds data that expands beyond the parser's safety limits "
                              "(possible decompression bomb)") from None
        except Exception:  # noqa: BLE001 - one unreadable page should not sink the manual
            raw, failed = "", failed + 1
        pages.append((number, normalise_text(raw or "")))

    if failed == page_count:
        raise IngestError("PDF is malformed: no page could be read")
    pages, _replaced = respace_pages(path, pages, normalise_text)  # words glued together: poppler reads them
    read = _read_images(path, reader, pages, ocr)
    pages = [(n, read["text"].get(n, text)) for n, text in pages]
    without = [n for n, text in pages if sum(not ch.isspace() for ch in text) < MIN_TEXT_CHARS]
    unread = {n: read["unread"].get(n, BLANK) for n in without}
    if len(without) == page_count:
        reasons = sorted(set(unread.values()))
        raise IngestError(f"could not read any of its {page_count} pages: "
                          + (reasons[0] if len(reasons) == 1 else "; ".join(reasons[:3])))
    front = "\n".join(text for _n, text in pages[:2])
    title = choose_title(meta_title, _largest_text(runs), pages[0][1], path.stem, front)
    labels = page_labels(reader, page_count)
    rows = [(n, text, label) for (n, text), label in zip(pages, labels, strict=True)]
    return {"title": title, "pdf_title": meaningful_title(meta_title), "page_count": page_count, "pages": rows,
            "pages_without_text": without, "outline": read_outline(reader, page_count),
            "ocr": {str(n): {"confidence": p.confidence, "words": p.words} for n, p in read["ocr"].items()},
            "unread": {str(n): reason for n, reason in unread.items()}, "ocr_engine": read["engine"]}


def _read_images(path: Path, reader: PdfReader, pages: list[tuple[int, str]], ocr: OcrSettings | None) -> OcrRead:
    """ingest.ocr.read_pages over these pages (their sizes from the crop box, as pdftoppm renders);
    `ocr` None: no OCR. Settings it leaves out are ParseLimits' defaults."""
    from ingest.models import ParseLimits
    from ingest.ocr import OcrError, read_pages

    defaults = ParseLimits()
    settings: OcrSettings = {"mode": "off", "languages": list(defaults.ocr_languages), "dpi": defaults.ocr_dpi,
                             "timeout_s": defaults.ocr_page_timeout_s, "max_pixels": defaults.ocr_max_pixels,
                             "min_confidence": defaults.ocr_min_confidence}
    if ocr:
        settings.update(ocr)

    sizes: dict[int, tuple[float, float]] = {}
    for number, _text in pages:
        try:
            box = reader.pages[number - 1].cropbox
            sizes[number] = (abs(float(box.width)), abs(float(box.height)))
        except Exception:  # noqa: BLE001 - a page without a readable box: Letter, as pdftoppm assumes
            sizes[number] = (612.0, 792.0)
    try:
        return read_pages(path, dict(pages), sizes, min_chars=MIN_TEXT_CHARS, **settings)
    except OcrError as exc:
        raise IngestError(str(exc)) from None


def extract_labels(path: Path, max_pages: int) -> Labels:
    """Only the printed page labels (`--labels-only`): for manuals indexed before labels were kept."""
    reader, page_count, _title = open_reader(path, max_pages)
    return {"page_count": page_count, "labels": page_labels(reader, page_count)}


def memory_message(memory_mb: int) -> str:
    return (f"parsing needed more than the {memory_mb} MB memory limit and was stopped "
            "(ingest.memory_mb)")


def _brief(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0][:160]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__



def main(argv: list[str] | None = None) -> int:
    """Worker entry point; stdout carries exactly one JSON object (pypdf's chatter goes to stderr)."""
    parser = argparse.ArgumentParser(prog="python -m ingest.pdf")
    parser.add_argument("--max-pages", type=int, default=2000)
    parser.add_argument("--memory-mb", type=int, default=0, help="address-space cap; 0 = none")
    parser.add_argument("--timeout-s", type=float, default=0.0, help="wall-clock cap; 0 = none")
    parser.add_argument("--parent-pid", type=int, default=0,
                        help="exit when this process is gone (default: the parent at start)")
    parser.add_argument("--lifeline-fd", type=int, default=None,
                        help="read end of a pipe the parent holds open; EOF means the parent died")
    parser.add_argument("--labels-only", action="store_true", help="read the printed page labels only")
    parser.add_argument("--keep-drawings", action="store_true",
                        help="parse whole content streams (ingest.drop_drawings = false)")
    parser.add_argument("--ocr", default="off", help="auto, off or always (ingest.ocr)")
    parser.add_argument("--ocr-languages", default="auto",
                        help="Tesseract languages, '+'-joined, or auto (ingest.ocr_languages)")
    parser.add_argument("--ocr-dpi", type=int, default=300)
    parser.add_argument("--ocr-timeout-s", type=float, default=60.0, help="CPU-seconds per page and program")
    parser.add_argument("--ocr-max-pixels", type=int, default=60_000_000)
    parser.add_argument("--ocr-min-confidence", type=float, default=80.0)
    parser.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    ocr: OcrSettings = {"mode": args.ocr, "languages": [lang for lang in args.ocr_languages.split("+") if lang],
           "dpi": args.ocr_dpi, "timeout_s": args.ocr_timeout_s, "max_pixels": args.ocr_max_pixels,
           "min_confidence": args.ocr_min_confidence}
    die_with_parent(args.parent_pid or os.getppid(), args.lifeline_fd)
    limit_time(args.timeout_s)
    out, sys.stdout = sys.stdout, sys.stderr
    try:
        # Parsing yields the CPU to embedding and to the gateway answering questions. Moderately: the
        # parent limits CPU time, not wall-clock time, so a lower priority only makes a parse slower
        # on a busy box, never refused, but the wall-clock backstop (ingest.sandbox.WALL_FACTOR x
        # ingest.timeout_s) still needs a share of a core; at nice 19 parses beside three busy
        # processes on 2 cores ran 30-80x slower (issue 22), at nice 10 it gets ~1/10 of its core.
        os.nice(10)
    except (AttributeError, OSError):
        pass
    try:
        if args.memory_mb > 0:
            limit_memory(args.memory_mb)
        if args.labels_only:
            result: dict[str, Parsed | Labels | str] = {"ok": extract_labels(args.path, args.max_pages)}
        else:
            result = {"ok": extract(args.path, args.max_pages, drop_drawings=not args.keep_drawings, ocr=ocr)}
    except IngestError as exc:
        result = {"error": str(exc)}
    except MemoryError:
        result = {"error": memory_message(args.memory_mb)}
    except RecursionError:
        result = {"error": "PDF is malformed and cannot be read (structure nested too deeply)"}
    out.write(json.dumps(result))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
