"""Opening a PDF: the cheap checks that need no parser (ingest.sandbox runs them in the parent before
it starts a worker), then pypdf's reader in the worker (ingest.pdf), with an owner-only password
removed and the page limit applied. Refusals are IngestErrors with short, user-facing reasons.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ingest.models import IngestError

if TYPE_CHECKING:
    from pypdf import PdfReader

_HEAD_BYTES = 1024
_TAIL_BYTES = 4096


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


def _brief(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0][:160]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
