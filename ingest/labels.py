"""Printed page labels: the number a technician reads in the corner of a page ("11", "iv", "A-3").

A PDF viewer's page index and the number printed on the page often differ (a cover, roman front
matter, appendices "A-1"), and a technician holding the paper manual looks for the printed one.
A PDF may say how its pages are labelled (/PageLabels in the catalog); pypdf resolves that number
tree (`PdfReader.page_labels`). For a PDF without /PageLabels pypdf returns "1", "2", ... — the
index again, which says nothing — so that case gives None for every page. This runs inside the
sandboxed worker (ingest.pdf), under its memory and time limits. Labels come from the file, so
they are tidied and capped before anything shows them.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypdf import PdfReader

MAX_LABEL_CHARS = 32  # a printed page number is short; anything longer is not one


def one_line(raw: object, max_chars: int) -> str:
    """Text read from a PDF as one line of printable characters, at most max_chars ("" if none)."""
    text = "".join(ch if unicodedata.category(ch)[0] not in "CZ" else " " for ch in str(raw))
    return " ".join(text.split())[:max_chars]


def clean_label(raw: object) -> str | None:
    """The label as one short line of printable text, or None when nothing printable is left."""
    return (one_line(raw, MAX_LABEL_CHARS) or None) if raw is not None else None


def has_page_labels(reader: PdfReader) -> bool:
    """Whether the catalog carries /PageLabels at all (pypdf makes labels up otherwise)."""
    try:
        return "/PageLabels" in reader.root_object
    except Exception:  # noqa: BLE001 - a broken catalog is a PDF without labels
        return False


def page_labels(reader: PdfReader, page_count: int) -> list[str | None]:
    """One label per page (index order); all None when the PDF defines none or they cannot be read.

    A damaged /PageLabels tree never fails an ingest: the pages are still worth indexing, and the
    PDF page index is still a correct reference.
    """
    if not has_page_labels(reader):
        return [None] * page_count
    try:
        labels: list[str | None] = list(reader.page_labels)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - pypdf raises many types for broken number trees
        return [None] * page_count
    labels = (labels + [None] * page_count)[:page_count]
    return [clean_label(label) for label in labels]
