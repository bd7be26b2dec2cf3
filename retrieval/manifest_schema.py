"""manifest.json's schema: the msgspec Structs a reader decodes it into, and the TypedDicts that
type it as build_manifest (retrieval.manifest) writes it.

On disk and in memory the manifest is the JSON object (a dict) that was hashed: the digest covers
exactly its keys, so it is written and verified in that form, byte for byte as before. Readers that
want its fields typed decode it into a `Manifest` Struct (`decode_manifest`); unknown keys (of a
newer manualqa) are kept in the dict and ignored by the Struct, and keys an older version lacks
take the defaults below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

import msgspec

FORMAT = 1


class ManifestEmbedding(msgspec.Struct, kw_only=True, frozen=True):
    """The model an index version was embedded with; search refuses another (retrieval.search)."""

    model_id: str = ""
    model_hash: str = ""
    dim: int | None = None
    model: str = ""  # the `embedding.model` setting that loads it again; "" in versions that predate it


class ManifestManual(msgspec.Struct, kw_only=True, frozen=True):
    sha256: str
    file_name: str
    title: str
    page_count: int
    size_bytes: int = 0
    chunks: int | None = None
    pages_without_text: list[int] = msgspec.field(default_factory=list)
    outline: list[tuple[int, str]] = msgspec.field(default_factory=list)
    pdf_title: str = ""
    ocr: dict[str, object] | None = None  # pages read by OCR: engine, languages, dpi, pages, confidence
    unread: dict[str, str] = msgspec.field(default_factory=dict)  # page -> why it stayed unread
    # pages whose glued words pdftotext read again (ingest.respace); [] in versions that predate it
    respaced: list[int] = msgspec.field(default_factory=list)


class ManifestFile(msgspec.Struct, kw_only=True, frozen=True):
    sha256: str
    bytes: int


class ManifestTool(msgspec.Struct, kw_only=True, frozen=True):
    name: str = "manualqa"
    version: str = "unknown"


class Manifest(msgspec.Struct, kw_only=True, frozen=True):
    """manifest.json, typed (decode_manifest); `digest` is a sha256 of every other key's canonical JSON."""

    id: str = ""
    format: int = FORMAT
    parent: str | None = None
    created_at: str = ""
    tool: ManifestTool = msgspec.field(default_factory=ManifestTool)
    embedding: ManifestEmbedding = msgspec.field(default_factory=ManifestEmbedding)
    chunker: dict[str, object] = msgspec.field(default_factory=dict)  # ChunkParams.from_manifest reads it
    manuals: list[ManifestManual] = msgspec.field(default_factory=list)
    chunk_count: int = 0
    files: dict[str, ManifestFile] = msgspec.field(default_factory=dict)
    ocr: dict[str, object] | None = None  # the OCR settings and Tesseract version of the ingest (ingest.ocr)
    # the companion embedder whose vectors chunks.db holds (retrieval.companion); None: built without one
    companion: ManifestEmbedding | None = None
    digest: str = ""


class ToolRecord(TypedDict):
    name: str
    version: str


class FileRecord(TypedDict):
    sha256: str
    bytes: int


class ManifestRecord(TypedDict, total=False):
    """manifest.json as build_manifest writes it (`ocr` and `companion` only when recorded)."""

    format: int
    id: str
    parent: str | None
    created_at: str
    tool: ToolRecord
    embedding: Mapping[str, object]
    chunker: Mapping[str, object]
    manuals: list[Mapping[str, object]]
    chunk_count: int
    files: dict[str, FileRecord]
    ocr: Mapping[str, object]
    companion: Mapping[str, object]
    digest: str


def decode_manifest(data: bytes | str | dict[str, object]) -> Manifest:
    """The Manifest of manifest.json's bytes or of its parsed dict; ValueError when it is not one."""
    try:
        if isinstance(data, dict):
            return msgspec.convert(data, Manifest)
        return msgspec.json.decode(data, type=Manifest)
    except msgspec.DecodeError as exc:  # malformed JSON, or a field of the wrong type (ValidationError)
        raise ValueError(f"manifest.json: {exc}") from exc
