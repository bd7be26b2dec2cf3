"""OCR of pages without a usable text layer: poppler's `pdftoppm` renders the page, Tesseract reads it.

This runs inside the sandboxed parse worker (ingest.pdf), so both programs inherit its address-space
cap (ingest.memory_mb) and its lower priority; each of them has a CPU-time limit of its own per page
(ingest.ocr_page_timeout_s, CPU-seconds: a busy box makes a page slower, never refused) and a
wall-clock backstop of WALL_FACTOR x that. A page image that is hostile (huge, corrupt, a
decompression bomb) costs at most that and fails alone: its page is reported unread with the
reason, and the rest of the manual is ingested.

Which pages (ingest.ocr): "auto" reads pages with no text layer, or with too little text for the
images that cover them (a scan with a stamped header); "always" reads every page; "off" none.
The binaries are found lazily: a gateway without them still ingests and serves, and says which
pages it could not read and what to install.

Running the programs is ingest.ocr_tools, reading Tesseract's output ingest.ocr_tsv; the names imported
`as` themselves below moved there and are still importable from here.
"""

from __future__ import annotations

import math
import re
import subprocess
import tempfile
from pathlib import Path
from typing import TypedDict

from ingest.models import OcrPage
from ingest.ocr_languages import AUTO, choose, installed, missing_note, package, probe_set, text_languages
from ingest.ocr_merge import merge
from ingest.ocr_tools import OcrError as OcrError
from ingest.ocr_tools import OcrUnavailable, _run, page_images, tool
from ingest.ocr_tools import tesseract_version as tesseract_version
from ingest.ocr_tsv import chunk_confidence as chunk_confidence
from ingest.ocr_tsv import parse_tsv as parse_tsv

MODES = ("auto", "off", "always")
# "auto": a page whose images cover at least this share of it, and which holds fewer text-layer
# characters than SPARSE_CHARS_PER_SQIN per square inch of image, is read from its image.
IMAGE_COVERAGE = 0.5
SPARSE_CHARS_PER_SQIN = 3.0
MIN_DPI = 50
IMAGE_PIXELS_FACTOR = 10  # an image of more than this many times ocr_max_pixels is refused, not decoded
# Why a page without text stayed unread: the first two are blank pages, not failures
BLANK = "no text on the page"
NOTHING_FOUND = "no text layer, and OCR found no text on the page image"
OFF_REASON = "no text layer, and OCR is off (ingest.ocr)"
_LANG_RE = re.compile(r"^[A-Za-z0-9_+-]{2,40}$")


class OcrSettings(TypedDict):
    """read_pages's settings (ingest.ocr and the ingest.ocr_* settings, ParseLimits')."""

    mode: str  # MODES
    languages: list[str]  # Tesseract's language names
    dpi: int
    timeout_s: float
    max_pixels: int
    min_confidence: float


class OcrRead(TypedDict):
    """What read_pages found: page -> OCR text that replaces the text layer's, page -> its words, page ->
    why a page without text stayed unread, and what read them ({} when no page was read)."""

    text: dict[int, str]
    ocr: dict[int, OcrPage]
    unread: dict[int, str]
    engine: dict[str, object]


def unread_notes(unread: dict[int, str], engine: dict[str, object] | None = None,
                 read_pages: int = 0) -> list[str]:
    """"could not read 2 pages (10, 11): <why>", one line a reason; blank pages are not counted. With
    the OCR engine's record: a line for the languages its pages were read without (ingest.ocr_languages)."""
    by_reason: dict[str, list[int]] = {}
    for page, reason in sorted(unread.items()):
        if reason not in (BLANK, NOTHING_FOUND):
            by_reason.setdefault(reason, []).append(page)
    notes = []
    for reason, pages in by_reason.items():
        shown = ", ".join(map(str, pages[:12])) + (", ..." if len(pages) > 12 else "")
        notes.append(f"could not read {len(pages)} page{'s' if len(pages) > 1 else ''} ({shown}): {reason}")
    missing = (engine or {}).get("missing")
    if isinstance(missing, list) and missing:
        notes.append(missing_note([str(m) for m in missing], read_pages))
    return notes


def check_languages(languages: tuple[str, ...] | list[str], have: set[str] | None = None) -> str:
    """Tesseract's -l argument ("eng+deu"), after checking each language's data is installed (`have`: what
    `tesseract --list-langs` said, when the caller already asked)."""
    bad = [lang for lang in languages if not _LANG_RE.match(lang)]
    if bad or not languages:
        raise OcrUnavailable(f"not an OCR language name: {bad or 'none given'} (ingest.ocr_languages)")
    have = installed(tool("tesseract")) if have is None else have
    missing = [lang for lang in languages if have and lang not in have]
    if missing:
        raise OcrUnavailable(f"Tesseract has no data for {', '.join(missing)}: install "
                             + " ".join(package(m) for m in missing))
    return "+".join(languages)


def needs_ocr(mode: str, text_chars: int, image_sqin: float, page_sqin: float, min_chars: int) -> bool:
    """Whether a page is read from its image under `mode` (see the module's docstring)."""
    if mode == "always":
        return True
    if mode != "auto":
        return False
    if text_chars < min_chars:
        return True
    covered = min(image_sqin, page_sqin)
    return page_sqin > 0 and covered >= IMAGE_COVERAGE * page_sqin and text_chars < SPARSE_CHARS_PER_SQIN * covered


def render_dpi(width_pt: float, height_pt: float, dpi: int, max_pixels: int) -> int:
    """The dpi a page is rendered at: `dpi`, or less so that it stays under max_pixels."""
    sqin = abs(width_pt * height_pt) / (72.0 * 72.0)
    if sqin <= 0:
        raise OcrError("the page has no size")
    fit = int(math.sqrt(max_pixels / sqin))
    if fit < MIN_DPI:
        raise OcrError(f"the page is {abs(width_pt) / 72:.0f} x {abs(height_pt) / 72:.0f} inches, too large to read "
                       f"at {MIN_DPI} dpi within {max_pixels:,} pixels (ingest.ocr_max_pixels)")
    return min(int(dpi), fit)


def check_images(images: list[tuple[int, int, float]], max_pixels: int) -> None:
    """Refuse a page whose image is far bigger than any page needs (decoding it would take minutes)."""
    for width, height, _sqin in images:
        if width * height > IMAGE_PIXELS_FACTOR * max_pixels:
            raise OcrError(f"the page image is {width:,} x {height:,} pixels, too large to read "
                           f"(over {IMAGE_PIXELS_FACTOR} x ingest.ocr_max_pixels)")


def ocr_page(path: Path, page: int, size_pt: tuple[float, float], lang: str, dpi: int, timeout_s: float,
             max_pixels: int) -> tuple[str, OcrPage]:
    """Render page `page` of `path` and read it: (text, OcrPage); raises OcrError."""
    at = render_dpi(size_pt[0], size_pt[1], dpi, max_pixels)
    with tempfile.TemporaryDirectory(prefix="manualqa-ocr-") as tmp:
        prefix = Path(tmp) / "page"
        _out, render_errors = _run([tool("pdftoppm"), "-f", str(page), "-l", str(page), "-r", str(at), "-gray", "-png",
              "-singlefile", str(path), str(prefix)], timeout_s, "rendering the page image")
        image = prefix.with_suffix(".png")
        if not image.is_file() or image.stat().st_size == 0:
            raise OcrError("the page image could not be rendered")
        tsv, _err = _run([tool("tesseract"), str(image), "stdout", "-l", lang, "--dpi", str(at), "tsv"],
                         timeout_s, "Tesseract")
    text, page_words = parse_tsv(tsv.decode("utf-8", "replace"))
    damage = [line.split(":", 1)[-1].strip() for line in render_errors.splitlines() if "error" in line.lower()]
    if damage and not page_words.words:
        raise OcrError(f"the page image is damaged and nothing could be read from it ({damage[0][:120]})")
    return text, page_words


def read_pages(path: Path, texts: dict[int, str], sizes: dict[int, tuple[float, float]], *, mode: str,
               languages: tuple[str, ...] | list[str], dpi: int, timeout_s: float, max_pixels: int,
               min_confidence: float, min_chars: int) -> OcrRead:
    """OCR the pages of `path` that need it (see needs_ocr).

    texts: each page's text-layer text; sizes: each page's (width, height) in points. Returns
    {"text": {page: OCR text that replaces the text layer's}, "ocr": {page: OcrPage},
    "unread": {page: why a page without text stayed unread}, "engine": {...} or {}}.
    """
    chars = {p: sum(not ch.isspace() for ch in t) for p, t in texts.items()}
    blank = [p for p in sorted(texts) if chars[p] < min_chars]
    unread: dict[int, str] = {}
    out: OcrRead = {"text": {}, "ocr": {}, "unread": unread, "engine": {}}
    if mode not in MODES:
        raise OcrUnavailable(f"ingest.ocr must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "off":
        unread.update({p: OFF_REASON for p in blank})
        return out
    images = page_images(path, timeout_s)
    todo = [p for p in sorted(texts)
            if needs_ocr(mode, chars[p], sum(sqin for _w, _h, sqin in images.get(p, [])),
                         sizes[p][0] * sizes[p][1] / 5184.0, min_chars)]
    if not todo:
        return out
    replaced: dict[int, str] = {}
    pages: dict[int, OcrPage] = {}
    read: dict[int, tuple[str, OcrPage]] = {}  # the probe page, when it was read with the chosen languages
    missing: list[str] = []
    try:
        tool("pdftoppm")
        have = installed(tool("tesseract"))
        if list(languages) == [AUTO]:
            languages, missing = _auto_languages(path, texts, sizes, todo, set(blank), images, read, have,
                                                 dpi=dpi, timeout_s=timeout_s, max_pixels=max_pixels)
        lang = check_languages(tuple(languages), have)
    except (OcrUnavailable, OSError, subprocess.TimeoutExpired) as exc:
        unread.update({p: str(exc) for p in blank})
        return out
    for page in todo:
        try:
            check_images(images.get(page, []), max_pixels)
            text, found = read.get(page) or ocr_page(path, page, sizes[page], lang, dpi, timeout_s, max_pixels)
        except OcrError as exc:
            if page in blank:
                unread[page] = f"OCR failed: {exc}"
            continue
        ocr_chars = sum(not ch.isspace() for ch in text)
        if page in blank and ocr_chars < min_chars:
            unread[page] = NOTHING_FOUND
            continue
        # a page with some text layer keeps it unless OCR read more ("always": unless OCR read nothing);
        # "auto" keeps a usable text layer whole and adds the lines only OCR read (ingest.ocr_merge)
        if ocr_chars >= min_chars and (mode == "always" or ocr_chars > chars[page]):
            merged = merge(texts[page], text, found) if mode == "auto" and page not in blank else (text, found)
            if merged is not None:
                replaced[page], pages[page] = merged
    out["text"], out["ocr"] = replaced, pages
    if pages:
        out["engine"] = {"engine": tesseract_version() or "tesseract", "languages": list(languages), "dpi": dpi,
                         "min_confidence": min_confidence, **({"missing": missing} if missing else {})}
    return out


def _auto_languages(path: Path, texts: dict[int, str], sizes: dict[int, tuple[float, float]], todo: list[int],
                    blank: set[int], images: dict[int, list[tuple[int, int, float]]],
                    read: dict[int, tuple[str, OcrPage]], have: set[str], *,
                    dpi: int, timeout_s: float, max_pixels: int) -> tuple[list[str], list[str]]:
    """ingest.ocr_languages "auto" (ingest.ocr_languages module): (languages to read with, those wanted but
    not installed). Without a text layer to say, the first page to read is probed with every installed
    language; it lands in `read` when the choice is the probe's own set (it is not read twice). Pages with
    too little text layer to count (`blank`) say nothing of the language."""
    codes = text_languages(texts, blank)
    probe: list[str] = []
    text, found = "", OcrPage(0.0, [])
    if not codes and todo:
        probe = probe_set(have)
        try:
            check_images(images.get(todo[0], []), max_pixels)
            text, found = ocr_page(path, todo[0], sizes[todo[0]], "+".join(probe), dpi, timeout_s, max_pixels)
        except OcrError:
            pass  # the page fails again, alone, when it is read with the choice
        codes = text_languages({todo[0]: text}, set())
    chosen, missing = choose(codes, have)
    if probe and chosen == probe and text:
        read[todo[0]] = (text, found)
    return chosen, missing
