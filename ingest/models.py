"""The records ingest hands to retrieval: parsed manuals and page-aware chunks."""

from __future__ import annotations

from dataclasses import dataclass, field


class IngestError(Exception):
    """A manual that cannot be ingested. The message is shown to the user as is."""
    http_status = 422  # the gateway.errors protocol (this room does not import gateway)
    code = "ingest_error"


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
    # one chosen from it, page 1 or the file name (ingest.pdf.choose_title)
    pdf_title: str = ""


@dataclass(frozen=True)
class Chunk:
    chunk_id: str  # stable: derived from manual sha256, page and ordinal
    manual_sha256: str
    page: int
    ordinal: int  # position within the manual
    heading: str  # section heading the chunk falls under ("" when none was found)
    text: str


@dataclass(frozen=True)
class ParseLimits:
    timeout_s: float = 120.0
    memory_mb: int = 1024
    max_pages: int = 2000
    max_file_mb: int = 200
    # Cut the drawing operators out of each page before pypdf looks for text (ingest.drawings): the
    # same text, parsed up to 7x faster on drawing pages. false: parse whole streams, as before.
    drop_drawings: bool = True


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
