"""What a search returns: ranked passages that always know their manual and page."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


class RetrievalError(Exception):
    """A search or index operation that cannot proceed; the message is shown to the user."""
    http_status = 400  # the gateway.errors protocol (this room does not import gateway)
    code = "retrieval_error"


class NoIndexError(RetrievalError):
    """No index version is active yet (a state to fix by ingesting, not a malformed request)."""

    http_status = 409


@dataclass
class Hit:
    chunk_id: str
    manual: str  # original file name, e.g. "voron0_setup_guide.pdf"
    title: str
    manual_sha256: str
    page: int  # 1-based PDF page index
    heading: str
    text: str
    score: float  # fused (reciprocal-rank fusion) score
    dense_rank: int | None  # 1-based rank on the dense side, None when not in its candidates
    lexical_rank: int | None
    dense_score: float | None  # cosine similarity of the query and the chunk (always computed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
