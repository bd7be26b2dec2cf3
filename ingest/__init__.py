"""PDF -> pages -> chunks: sandboxed parsing of manuals and page-aware, heading-aware chunking."""

from ingest.chunker import chunk_manual
from ingest.discover import find_pdfs, sha256_file
from ingest.models import Chunk, ChunkParams, IngestError, PageText, ParsedManual, ParseLimits
from ingest.sandbox import parse_many, parse_pdf

__all__ = [
    "Chunk",
    "ChunkParams",
    "IngestError",
    "PageText",
    "ParseLimits",
    "ParsedManual",
    "chunk_manual",
    "find_pdfs",
    "parse_many",
    "parse_pdf",
    "sha256_file",
]
