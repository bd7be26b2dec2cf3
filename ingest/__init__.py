"""PDF -> pages -> chunks: sandboxed parsing of manuals and page-aware, heading-aware chunking.

The names below are re-exported lazily: reading the configuration imports `ingest.models` for its
parameter classes, and must not pay for the parser, the sandbox and the chunker it does not use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy names are, for the type checker
    from ingest.chunker import chunk_manual as chunk_manual
    from ingest.discover import find_pdfs as find_pdfs
    from ingest.discover import sha256_file as sha256_file
    from ingest.models import Chunk as Chunk
    from ingest.models import ChunkParams as ChunkParams
    from ingest.models import IngestError as IngestError
    from ingest.models import PageText as PageText
    from ingest.models import ParsedManual as ParsedManual
    from ingest.models import ParseLimits as ParseLimits
    from ingest.sandbox import parse_many as parse_many
    from ingest.sandbox import parse_pdf as parse_pdf

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


def __getattr__(name: str) -> object:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'ingest' has no attribute {name!r}")
