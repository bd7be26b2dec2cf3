"""Byte ranges of a stored PDF (RFC 9110 single ranges), so a phone's viewer fetches the pages it shows.

Without them a phone downloads a whole manual before it can show page 40. One range per request
is served as 206 with Content-Range; several ranges, or a header that does not parse, get the whole
file (200), which RFC 9110 allows; a range that starts past the end is 416.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from litestar.response import File, Response, Stream

_RANGE_RE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)
CHUNK = 64 * 1024


def parse_range(header: str | None, size: int) -> tuple[int, int] | None | Literal["unsatisfiable"]:
    """(first, last) inclusive; None for "send it all"; "unsatisfiable" for a 416."""
    if not header:
        return None
    m = _RANGE_RE.match(header)
    if not m or (not m.group(1) and not m.group(2)):
        return None  # several ranges or another unit: the whole file
    first, last = m.group(1), m.group(2)
    if not first:  # the last N bytes
        n = int(last)
        if n == 0:
            return "unsatisfiable"
        return max(0, size - n), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size:
        return "unsatisfiable"
    if end < start:
        return None
    return start, end


def _read(path: Path, start: int, end: int) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        fh.seek(start)
        left = end - start + 1
        while left > 0:
            block = fh.read(min(CHUNK, left))
            if not block:
                return
            left -= len(block)
            yield block


def pdf_response(path: Path, filename: str, range_header: str | None) -> File | Stream | Response[bytes]:
    """The PDF, whole (200) or the one range asked for (206); Accept-Ranges tells viewers they may ask."""
    size = os.path.getsize(path)
    wanted = parse_range(range_header, size)
    if wanted is None:
        return File(path=path, filename=filename, media_type="application/pdf", content_disposition_type="inline",
                    headers={"Accept-Ranges": "bytes"})
    if wanted == "unsatisfiable":
        return Response(b"", status_code=416, media_type="application/pdf",
                        headers={"Content-Range": f"bytes */{size}", "Accept-Ranges": "bytes"})
    start, end = wanted
    return Stream(_read(path, start, end), status_code=206, media_type="application/pdf",
                  headers={"Content-Range": f"bytes {start}-{end}/{size}", "Content-Length": str(end - start + 1),
                           "Accept-Ranges": "bytes", "Content-Disposition": f'inline; filename="{filename}"'})
