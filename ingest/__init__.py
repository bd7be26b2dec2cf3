"""PDF -> pages -> chunks: sandboxed parsing of manuals and page-aware, heading-aware chunking.

The names below are re-exported lazily: reading the configuration imports `ingest.models` for its
parameter classes, and must not pay for the parser, the sandbox and the chunker it does not use.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "chunk_manual": "ingest.chunker",
    "find_pdfs": "ingest.discover",
    "sha256_file": "ingest.discover",
    "Chunk": "ingest.models",
    "ChunkParams": "ingest.models",
    "IngestError": "ingest.models",
    "PageText": "ingest.models",
    "ParsedManual": "ingest.models",
    "ParseLimits": "ingest.models",
    "parse_many": "ingest.sandbox",
    "parse_pdf": "ingest.sandbox",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'ingest' has no attribute {name!r}")
