"""manifest.json: what an index version holds, and the checks that prove it is intact.

The manifest carries a digest of its own canonical JSON, so an edited manifest is detected as
surely as a truncated chunk store or an altered FAISS file. It is written, hashed and verified as
the JSON object (a dict); its typed form is retrieval.manifest_schema.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from ingest.discover import sha256_file
from ingest.models import ChunkParams, ParsedManual
from retrieval.manifest_schema import FORMAT, FileRecord, ManifestRecord

MANIFEST = "manifest.json"
CHUNKS_DB = "chunks.db"
VECTORS = "vectors.faiss"


def tool_version() -> str:
    try:
        return metadata.version("manualqa")
    except metadata.PackageNotFoundError:  # running from a checkout that was never installed
        return "unknown"


def _digest(manifest: Mapping[str, object]) -> str:
    body = {k: v for k, v in manifest.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def manual_entry(parsed: ParsedManual, chunks: int) -> dict[str, object]:
    return {
        "sha256": parsed.sha256,
        "file_name": parsed.file_name,
        "title": parsed.title,
        "page_count": parsed.page_count,
        "pages_without_text": list(parsed.pages_without_text),
        "outline": [[page, title] for page, title in parsed.outline],
        "size_bytes": parsed.size_bytes,
        "chunks": chunks,
        **({"pdf_title": parsed.pdf_title} if parsed.pdf_title else {}),
        # pages read by OCR, how (engine, languages, dpi) and how surely; why pages stayed unread
        **({"ocr": {**parsed.ocr_engine, "pages": sorted(parsed.ocr),
                    "confidence": round(sum(p.confidence for p in parsed.ocr.values()) / len(parsed.ocr), 1)}}
           if parsed.ocr else {}),
        **({"unread": {str(n): reason for n, reason in sorted(parsed.unread.items())}} if parsed.unread else {}),
        # pages whose glued words poppler read again (ingest.respace): their text is not the PDF's text layer
        **({"respaced": sorted(parsed.respaced)} if parsed.respaced else {}),
    }


def build_manifest(
    version_dir: Path,
    version_id: str,
    parent: str | None,
    embedding: Mapping[str, object],
    chunk_params: ChunkParams,
    manuals: Sequence[Mapping[str, object]],
    chunk_count: int,
    ocr: Mapping[str, object] | None = None,
    companion: Mapping[str, object] | None = None,
) -> ManifestRecord:
    """The manifest for a fully written version directory (its files are hashed here).

    companion: the companion embedder's record (retrieval.companion), whose vectors chunks.db holds;
    None writes no `companion` key (a version without one is written as before).

    ocr: the OCR settings and Tesseract version of the ingest that built it (ingest.ocr); each
    manual's entry says which of its pages were read by OCR and with what."""
    files: dict[str, FileRecord] = {}
    for name in (CHUNKS_DB, VECTORS):
        path = version_dir / name
        files[name] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    manifest: ManifestRecord = {
        "format": FORMAT,
        "id": version_id,
        "parent": parent,
        # UTC, milliseconds, "Z": the one stored timestamp format (as gateway.records.db.utcnow)
        "created_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "tool": {"name": "manualqa", "version": tool_version()},
        "embedding": dict(embedding),
        "chunker": chunk_params.to_dict(),
        "manuals": list(manuals),
        "chunk_count": chunk_count,
        "files": files,
    }
    if ocr is not None:
        manifest["ocr"] = dict(ocr)
    if companion is not None:
        manifest["companion"] = dict(companion)
    manifest["digest"] = _digest(manifest)
    return manifest


def manifest_bytes(manifest: Mapping[str, object]) -> bytes:
    return (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def read_manifest(version_dir: Path) -> dict[str, Any]:
    """Parse manifest.json; raises OSError / ValueError when missing or not JSON."""
    data = json.loads((version_dir / MANIFEST).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("manifest.json is not a JSON object")
    return data


def _sqlite_problems(db: Path) -> list[str]:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = con.execute("PRAGMA integrity_check").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return [f"{CHUNKS_DB}: cannot be read by SQLite: {exc}"]
    result = [r[0] for r in rows]
    if result != ["ok"]:
        return [f"{CHUNKS_DB}: integrity_check: {'; '.join(result[:5])}"]
    return []


def _companion_problems(db: Path, companion: object) -> list[str]:
    """A manifest that records a companion embedder needs its vectors for every chunk in chunks.db."""
    from retrieval.chunkstore import ChunkStore

    dim = companion.get("dim") if isinstance(companion, dict) else None
    if not isinstance(dim, int) or dim < 1:
        return [f"{MANIFEST}: companion has no dimension"]
    store = ChunkStore(db, readonly=True)
    try:
        if store.companion_vectors(dim) is None:
            return [f"{CHUNKS_DB}: the companion's vectors do not cover every chunk with {dim} dimensions"]
    finally:
        store.close()
    return []


def verify_version_dir(version_dir: Path, version_id: str | None = None) -> list[str]:
    """Every reason this version must not be activated; an empty list means it is sound."""
    from retrieval.chunkstore import ChunkStore
    from retrieval.vectors import VectorIndex

    if not version_dir.is_dir():
        return [f"version directory {version_dir} does not exist"]
    try:
        manifest = read_manifest(version_dir)
    except (OSError, ValueError) as exc:
        return [f"{MANIFEST}: cannot be read: {exc}"]
    problems: list[str] = []
    if manifest.get("digest") != _digest(manifest):
        problems.append(f"{MANIFEST}: digest mismatch (the manifest was edited or damaged)")
    if version_id is not None and manifest.get("id") != version_id:
        problems.append(f"{MANIFEST}: id {manifest.get('id')!r} does not match directory {version_id!r}")
    files = manifest.get("files") or {}
    present = True
    for name in (CHUNKS_DB, VECTORS):
        path = version_dir / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            present = False
            continue
        expected = (files.get(name) or {}).get("sha256")
        if expected is None:
            problems.append(f"{name}: no checksum in the manifest")
        elif sha256_file(path) != expected:
            problems.append(f"{name}: sha256 does not match the manifest")
    if not present:
        return problems
    sqlite_problems = _sqlite_problems(version_dir / CHUNKS_DB)
    problems += sqlite_problems
    expected_chunks = manifest.get("chunk_count")
    ntotal = None
    try:
        vectors = VectorIndex.load(version_dir / VECTORS)
        ntotal = vectors.ntotal
        dim = (manifest.get("embedding") or {}).get("dim")
        if dim is not None and vectors.dim != dim:
            problems.append(f"{VECTORS}: dimension {vectors.dim} != manifest {dim}")
    except Exception as exc:  # noqa: BLE001 - any load failure is a verification finding
        problems.append(f"{VECTORS}: FAISS cannot load it: {exc}")
    if not sqlite_problems:
        try:
            store = ChunkStore(version_dir / CHUNKS_DB, readonly=True)
            try:
                db_chunks = store.chunk_count()
                db_manuals = {m["sha256"] for m in store.manuals()}
            finally:
                store.close()
            if db_chunks != expected_chunks:
                problems.append(f"{CHUNKS_DB}: {db_chunks} chunks, manifest says {expected_chunks}")
            companion = manifest.get("companion")
            if companion is not None:
                problems += _companion_problems(version_dir / CHUNKS_DB, companion)
            listed = {m.get("sha256") for m in manifest.get("manuals") or []}
            if db_manuals != listed:
                problems.append(f"{CHUNKS_DB}: manuals differ from the manifest's list")
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{CHUNKS_DB}: cannot be opened as a chunk store: {exc}")
    if ntotal is not None and ntotal != expected_chunks:
        problems.append(f"{VECTORS}: {ntotal} vectors, manifest says {expected_chunks} chunks")
    return problems
