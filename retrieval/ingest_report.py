"""What an ingest reports: the manuals added, changed, kept, removed and refused, and where its time
went (`manualqa ingest` prints it, the admin API returns its to_dict()).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class IngestReport:
    version: str | None = None  # the new active version, None when nothing changed
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    # manuals ingested with pages that could not be read: (file, "could not read 2 pages (3, 4): why")
    unread: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0  # chunks in the resulting active version
    embedded: int = 0  # chunks embedded by this run (re-used ones are not counted)
    pages: int = 0  # pages parsed by this run
    seconds: float = 0.0
    parent: str | None = None
    # why manuals already indexed were chunked and embedded again ("" when they were re-used as is)
    reprocessed: str = ""
    # where the time went: parse_wait (embedding idle, waiting for a parse), embed, write, activate
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return "new version" if self.version else "no change"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["failed"] = [{"file": f, "error": m} for f, m in self.failed]
        data["unread"] = [{"file": f, "pages": m} for f, m in self.unread]
        data["status"] = self.status
        data["seconds"] = round(self.seconds, 3)
        data["timings"] = {k: round(v, 3) for k, v in self.timings.items()}
        return data


def failure(path: str | Path, message: str) -> tuple[str, str]:
    """(file, reason) without the file repeated at the start of the reason."""
    text = str(message)
    for prefix in (f"{path}: ", f"{Path(path).name}: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return str(path), text
