"""PDF -> normalised page texts and a title. This runs inside the sandboxed worker process.

`python -m ingest.pdf --max-pages N --memory-mb M FILE` caps its own address space, parses FILE
with pypdf and writes one JSON object to stdout: {"ok": {...}} or {"error": "reason"}. The parent
(ingest.sandbox) adds the file name, the hash and the size, and enforces the wall-clock limit.
Error reasons are short, user-facing and never name the file (the parent does).

A worker never outlives its parent: killed with -9, the parent cannot stop it, so the worker
watches for itself (`--parent-pid`, `--lifeline-fd`, see ingest.worker_limits) and also ends itself
after `--timeout-s`, the limit its parent applies.

Opening the file (the cheap checks and pypdf's reader) is ingest.pdf_open, choosing the title
ingest.titles; the names imported `as` themselves below moved there and are still importable from here.
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
from ingest.pdf_open import check_file as check_file
from ingest.pdf_open import open_reader as open_reader
from ingest.respace import respace_pages, spaced_as_read
from ingest.titles import _SPACE_RUN, _largest_text
from ingest.titles import choose_title as choose_title
from ingest.titles import is_generic_title as is_generic_title
from ingest.titles import meaningful_title as meaningful_title
from ingest.titles import page_title as page_title
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
    respaced: list[int]  # pages whose glued words pdftotext read again (ingest.respace), ascending


class Labels(TypedDict):
    """What the worker prints for `--labels-only` (extract_labels)."""

    page_count: int
    labels: list[str | None]

MIN_TEXT_CHARS = 20  # a page with fewer non-space characters counts as having no text
NO_TEXT_MESSAGE = "no text on any page"

_CHAR_MAP = str.maketrans({
    "\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
    "\ufb06": "st", "\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u200b": "", "\ufeff": "",
    "\t": " ", "\f": "\n", "\x00": "",
    # Bullets drawn from the Symbol/Wingdings fonts land in the private use area.
    "\uf0b7": "•", "\uf0a7": "▪", "\uf076": "•", "\uf0d8": "•", "\uf0fc": "✓", "\uf06e": "■",
})
_LEADER_DOTS = re.compile(r"(?:\s?[.·…]){5,}\s?")
# A word hyphenated at a line end: lower-case letters on both sides ("zu-\nnächst", "config-\nuration");
# "Raspberry-\nPi" keeps its hyphen (a compound's second part is capitalised).
_LINE_END_HYPHEN = re.compile(r"([^\W\d_])-\n([^\W\d_]+)( ?)")
_BLANK_RUNS = re.compile(r"\n{3,}")
# An accent drawn as a glyph of its own before its letter, as LaTeX without T1 fonts writes French, German or
# Spanish ("S´election des donn´ees `a voir", "Fenˆetre", "¨uber"): the letter with its accent, where one
# character holds both (a dotless i under an accent is an i; a cedilla before or after its c). A backtick is
# code as often as a grave accent: it joins its vowel only on a page where the other accents did.
_SPACING_ACCENTS = {"\u00b4": "\u0301", "`": "\u0300", "\u02c6": "\u0302", "\u00a8": "\u0308", "\u02dc": "\u0303",
                    "\u02c7": "\u030c", "\u02da": "\u030a"}
_ACCENT_BEFORE = re.compile("([\u00b4\u02c6\u00a8\u02dc\u02c7\u02da])([A-Za-z\u0131])")
_GRAVE_BEFORE = re.compile("(`)([aeiouAEIOU])")
_CEDILLA = re.compile("([cC])\u00b8|\u00b8([cC])")


def _with_accent(match: re.Match[str]) -> str:
    joined = unicodedata.normalize("NFC", match.group(2).replace("\u0131", "i") + _SPACING_ACCENTS[match.group(1)])
    return joined if len(joined) == 1 else match.group(0)


def join_spacing_accents(text: str) -> str:
    """"d´emarrage" -> "démarrage", "ˆetre" -> "être", "fa¸cade" -> "façade", then "`a" -> "à"; other text
    as it is."""
    text, joined = _ACCENT_BEFORE.subn(_with_accent, text)
    if joined:
        text = _GRAVE_BEFORE.sub(_with_accent, text)
    return _CEDILLA.sub(lambda m: unicodedata.normalize("NFC", (m.group(1) or m.group(2)) + "\u0327"), text)


def normalise_text(raw: str) -> str:
    """Make extracted text searchable and quotable: fix ligatures, join hyphenated words, tidy spaces.

    Line breaks are kept (the chunker uses them to find headings and paragraphs).
    """
    text = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\u00ad\n", "-\n").replace("\u00ad", "")
    text = join_spacing_accents(unicodedata.normalize("NFC", text).translate(_CHAR_MAP))
    text = "\n".join(_SPACE_RUN.sub(" ", line).strip() for line in text.split("\n"))

    def join(match: re.Match[str]) -> str:
        if not (match.group(1).islower() and match.group(2)[0].islower()):
            return match.group(0)
        rest = match.string[match.end():match.end() + 1]
        return match.group(1) + match.group(2) + ("" if rest in ("", "\n") else "\n")

    text = _LINE_END_HYPHEN.sub(join, text)
    text = _LEADER_DOTS.sub(" ... ", text)  # table-of-contents dot leaders
    return _BLANK_RUNS.sub("\n\n", text).strip()


def extract(path: Path, max_pages: int, drop_drawings: bool = True,
            ocr: OcrSettings | None = None) -> Parsed:
    """Parse the PDF: title, page_count, pages [(number, text, label)], pages_without_text, outline,
    and what OCR read: ocr {page: {confidence, words}}, unread {page: reason}, ocr_engine; respaced: the
    pages whose glued words pdftotext read again (ingest.respace), for the version's manifest.

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
    pages, respaced = respace_pages(path, pages, normalise_text)  # words glued together: poppler reads them
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
    if 1 in respaced:  # the cover's runs were glued as its page was: the title as poppler spaced the page
        title = spaced_as_read(title, pages[0][1])
    labels = page_labels(reader, page_count)
    rows = [(n, text, label) for (n, text), label in zip(pages, labels, strict=True)]
    return {"title": title, "pdf_title": meaningful_title(meta_title), "page_count": page_count, "pages": rows,
            "pages_without_text": without, "outline": read_outline(reader, page_count),
            "ocr": {str(n): {"confidence": p.confidence, "words": p.words} for n, p in read["ocr"].items()},
            "unread": {str(n): reason for n, reason in unread.items()}, "ocr_engine": read["engine"],
            "respaced": sorted(respaced)}


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
