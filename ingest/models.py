"""The records ingest hands to retrieval: parsed manuals and page-aware chunks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class IngestError(Exception):
    """A manual that cannot be ingested. The message is shown to the user as is."""
    http_status = 422  # the gateway.errors protocol (this room does not import gateway)
    code = "ingest_error"


# Mean word confidence (Tesseract, 0-100) under which OCR text is doubtful: its numbers back no
# claim (ingest.ocr_min_confidence) and search ranks its chunks as it ranks navigation pages
# (retrieval.types.SearchParams.ocr_doubt).
OCR_MIN_CONFIDENCE = 80.0


@dataclass(frozen=True)
class PageText:
    number: int  # 1-based PDF page index
    text: str
    # The page's printed label from the PDF's /PageLabels ("11", "iv", "A-3"); None when the PDF
    # has none (then the index is all there is). See ingest.labels.
    label: str | None = None


@dataclass
class ParsedManual:
    sha256: str
    file_name: str
    title: str
    page_count: int
    size_bytes: int
    pages: list[PageText]
    pages_without_text: list[int] = field(default_factory=list)
    # the PDF's bookmarks as (page, title), in order; empty when it has none (ingest.outline)
    outline: list[tuple[int, str]] = field(default_factory=list)
    # the PDF's own metadata title, tidied ("" when it has none or it says nothing); `title` is the
    # one chosen from it, page 1 or the file name (ingest.titles.choose_title)
    pdf_title: str = ""
    # Pages whose text was read from the page image (ingest.ocr): page -> OcrPage
    ocr: dict[int, OcrPage] = field(default_factory=dict)
    # Why each page in pages_without_text could not be read ("OCR is off (ingest.ocr)", "tesseract-ocr
    # is not installed", "OCR took longer than 60 s"...); pages with no text and no reason are just blank
    unread: dict[int, str] = field(default_factory=dict)
    # What read the OCR pages ("tesseract 5.3.0", languages, dpi); {} when no page was OCR'd
    ocr_engine: dict[str, object] = field(default_factory=dict)
    # Pages whose glued words poppler's pdftotext re-spaced (ingest.respace), recorded in the manifest
    respaced: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class OcrPage:
    """The words Tesseract read on one page image, with where they are.

    words: [x0, y0, x1, y1, confidence, start, end] each: the box as fractions of the page (0..1,
    top-left origin, as the page is shown), the word's confidence (0-100) and its [start, end) in the
    page's text. confidence: the mean word confidence of the page.
    """

    confidence: float
    words: list[list[float]]


@dataclass(frozen=True)
class Chunk:
    chunk_id: str  # stable: derived from manual sha256, page and ordinal
    manual_sha256: str
    page: int
    ordinal: int  # position within the manual
    heading: str  # section heading the chunk falls under ("" when none was found)
    text: str
    # The mean confidence (0-100) of the OCR words in the chunk; None: the page's text layer
    ocr_confidence: float | None = None
    # [start, end) in `text` of OCR words read with a confidence under ingest.ocr_min_confidence:
    # a number in one of them is not taken as support (gateway.answer.ocr_text)
    ocr_doubtful: tuple[tuple[int, int], ...] = ()
    # ISO 639-1 code of the chunk's language (ingest.text.languages); "" when not yet known (a chunk
    # re-used from a version written before languages: the chunk store detects it when writing)
    language: str = ""

    @property
    def source(self) -> str:
        return "text" if self.ocr_confidence is None else "ocr"


@dataclass(frozen=True)
class ParseLimits:
    timeout_s: float = 120.0
    memory_mb: int = 1024
    max_pages: int = 2000
    max_file_mb: int = 200
    # Cut the drawing operators out of each page before pypdf looks for text (ingest.drawings): the
    # same text, parsed up to 7x faster on drawing pages. false: parse whole streams, as before.
    drop_drawings: bool = True
    # OCR of pages without a usable text layer (ingest.ocr): "auto", "off" or "always"
    ocr: str = "auto"
    # Tesseract's languages, or ("auto",): the manual's text-layer languages plus English (ingest.ocr_languages)
    ocr_languages: tuple[str, ...] = ("auto",)
    ocr_dpi: int = 300  # the resolution pages are rendered at for Tesseract
    ocr_page_timeout_s: float = 60.0  # CPU-seconds per page, for rendering and for recognition each
    ocr_max_pixels: int = 60_000_000  # a page is rendered at a lower dpi rather than bigger than this
    ocr_min_confidence: float = OCR_MIN_CONFIDENCE  # words read below this are "doubtful": their numbers back nothing

    def __post_init__(self) -> None:
        if self.ocr not in ("auto", "off", "always"):
            raise ValueError(f"ocr must be \"auto\", \"off\" or \"always\", not {self.ocr!r}")
        if not self.ocr_languages or not all(re.fullmatch(r"[A-Za-z0-9_]{2,40}", lang) for lang in self.ocr_languages):
            raise ValueError(f"ocr_languages must be [\"auto\"] or Tesseract language names such as "
                             f"[\"eng\", \"deu\"], not {list(self.ocr_languages)!r}")
        if "auto" in self.ocr_languages and len(self.ocr_languages) > 1:
            raise ValueError(f"ocr_languages \"auto\" chooses by itself and stands alone, not in "
                             f"{list(self.ocr_languages)!r}")
        if not 50 <= self.ocr_dpi <= 1200:
            raise ValueError(f"ocr_dpi must be between 50 and 1200, not {self.ocr_dpi}")
        if self.ocr_page_timeout_s <= 0:
            raise ValueError("ocr_page_timeout_s must be above 0")

    def ocr_settings(self) -> dict[str, object]:
        """What an index version records of how its OCR pages were read (the manifest's "ocr")."""
        return {"mode": self.ocr, "languages": list(self.ocr_languages), "dpi": self.ocr_dpi,
                "page_timeout_s": self.ocr_page_timeout_s, "max_pixels": self.ocr_max_pixels,
                "min_confidence": self.ocr_min_confidence}


@dataclass(frozen=True)
class ChunkParams:
    max_chars: int = 1000  # chosen on eval/dev: bench/suite/retrieval_eval.py
    overlap_chars: int = 150
    min_chars: int = 80
    # What each chunk carries into its embedding and its full-text row besides its own text:
    # "heading" (its section heading) or "title+heading" (also the manual's title, so a question
    # naming the equipment finds its manual). Versions written before this field used "heading".
    context: str = "title+heading"

    def __post_init__(self) -> None:
        if self.context not in CONTEXTS:
            raise ValueError(f"chunk context must be one of {', '.join(CONTEXTS)}, got {self.context!r}")

    def to_dict(self) -> dict[str, int | str]:
        return {"max_chars": self.max_chars, "overlap_chars": self.overlap_chars,
                "min_chars": self.min_chars, "context": self.context}

    @classmethod
    def from_manifest(cls, data: dict[str, object]) -> ChunkParams:
        return cls(**{"context": "heading", **data})  # type: ignore[arg-type]

    def title_for(self, title: str) -> str:
        """The manual title a chunk carries ("" when the recipe leaves it out)."""
        return title if self.context == "title+heading" else ""


CONTEXTS = ("heading", "title+heading")
