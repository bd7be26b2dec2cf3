"""Versioned indexes on disk: open, ingest, activate, roll back, diff, verify, collect garbage.

Layout under the data directory::

    manuals/<sha256>.pdf   originals, content-addressed
    indexes/<version>/     immutable: manifest.json, chunks.db, vectors.faiss
    ACTIVE                 id of the active version (replaced atomically)

Every operation that writes takes an exclusive lock on ``.lock`` so that a CLI ingest and the
server's upload cannot interleave; a killed process releases it with its file descriptor.

IndexStore is built in layers, one module each: reading (retrieval.version_catalog, with the lock),
garbage collection (retrieval.version_cleanup), and here what builds and activates versions. An
opened version is retrieval.index_version.IndexVersion.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.models import ChunkParams, IngestError, ParseLimits
from retrieval.builder import IngestReport, collect_entries, reuse_manuals, write_version
from retrieval.index_version import IndexVersion
from retrieval.manifest import CHUNKS_DB as CHUNKS_DB  # the names' old home: scripts import them here
from retrieval.manifest import verify_version_dir
from retrieval.pointer import atomic_copy, write_pointer
from retrieval.types import NoIndexError, RetrievalError
from retrieval.version_catalog import _VERSION_RE, IndexBusyError
from retrieval.version_cleanup import GcReport, VersionCleanup

if TYPE_CHECKING:
    from retrieval.embedders.base import Embedder
    from retrieval.entries import Entry

__all__ = ["GcReport", "IndexBusyError", "IndexStore", "IndexVersion", "IngestReport"]


def ocr_record(limits: ParseLimits) -> dict[str, object]:
    """What a version records of how pages without a text layer were read: the settings and the
    Tesseract that read them (None: not installed, so no page could be)."""
    from ingest.ocr_tools import tesseract_version

    return {**limits.ocr_settings(), "tesseract": tesseract_version() if limits.ocr != "off" else None}


class IndexStore(VersionCleanup):
    # -- writing -------------------------------------------------------------------------------
    def _activate(self, version: str) -> None:
        problems = verify_version_dir(self._dir(version), version)
        if problems:
            raise RetrievalError(f"version {version} fails verification, not activated: "
                                 + "; ".join(problems))
        write_pointer(self.pointer, version)
        with self._cache_lock:  # versions are immutable; only drop the ones no longer active
            for key in [k for k in self._cache if k != version]:
                del self._cache[key]

    def activate(self, version: str) -> None:
        with self._locked():
            self._activate(version)

    def rollback(self, to: str | None = None) -> str:
        """Re-activate `to`, or the active version's parent; returns the version now active."""
        with self._locked():
            if to is None:
                active = self.active_id()
                if active is None:
                    raise NoIndexError("no index yet: nothing to roll back")
                to = self.show(active).get("parent")
                if not to:
                    raise RetrievalError(f"version {active} has no parent to roll back to")
                if not (self.indexes_dir / to).is_dir():
                    raise RetrievalError(f"parent version {to} was removed; pick one with --to")
            self._activate(to)
            return to

    def _new_version_id(self, *salt: str) -> str:
        """`vYYYYmmddTHHMMSS-xxxxxx`, strictly later than every existing id so ids sort by age."""
        now = int(time.time())
        existing = [p.name for p in self.indexes_dir.iterdir()] if self.indexes_dir.is_dir() else []
        stamps = [int(datetime.strptime(n[1:16], "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc).timestamp())
                  for n in existing if _VERSION_RE.match(n)]
        if stamps:
            now = max(now, max(stamps) + 1)
        tag = hashlib.sha256("|".join((str(time.time_ns()), str(os.getpid()), *salt)).encode()).hexdigest()
        stamp = datetime.fromtimestamp(now, tz=timezone.utc).strftime("%Y%m%dT%H%M%S")
        return f"v{stamp}-{tag[:6]}"

    def _store_original(self, source: Path, sha256: str) -> None:
        target = self.manuals_dir / f"{sha256}.pdf"
        if not target.is_file():
            self.manuals_dir.mkdir(parents=True, exist_ok=True)
            atomic_copy(source, target, expected_sha256=sha256)

    def _read_labels(self, sha256: str, limits: ParseLimits = ParseLimits()) -> list[str | None] | None:
        """Printed page labels of a stored original (for a manual kept from a version that predates
        them); None, and no labels shown, when the original is gone or cannot be read."""
        from ingest.sandbox import read_labels

        try:
            return read_labels(self.manuals_dir / f"{sha256}.pdf", limits)
        except IngestError:
            return None

    def _publish(self, report: IngestReport, parent: str | None, embedding: Mapping[str, str | int],
                 chunk_params: ChunkParams, entries: Sequence[Entry], ocr: Mapping[str, object] | None = None,
                 companion: Mapping[str, str | int] | None = None) -> IngestReport:
        self.indexes_dir.mkdir(parents=True, exist_ok=True)
        version = self._new_version_id(*(e.parsed.sha256 for e in entries))
        started = time.perf_counter()
        manifest = write_version(self.indexes_dir, version, parent, embedding, chunk_params, entries, ocr, companion)
        written = time.perf_counter()
        self._activate(version)
        report.timings["write"] = written - started
        report.timings["verify_activate"] = time.perf_counter() - written
        report.version = version
        report.chunks = int(manifest["chunk_count"])
        return report

    def ingest(
        self,
        paths: Sequence[str | Path],
        embedder: Embedder,
        chunk_params: ChunkParams,
        parse_limits: ParseLimits,
        progress: Callable[[str, int, int], None] | None = None,
        workers: int = 2,
        rebuild: bool = False,
    ) -> IngestReport:
        """Add or replace manuals; builds and activates a new version only when something changed."""
        from retrieval.builder import embedding_info
        from retrieval.companion import companion_info

        started = time.perf_counter()
        with self._locked():
            self._clean_temporaries()
            active = self.active_id()
            base = self.open(active) if active else None
            entries, report = collect_entries(base, paths, embedder, chunk_params, parse_limits, progress,
                                              workers, rebuild, self._store_original,
                                              lambda sha: self._read_labels(sha, parse_limits))
            if entries is None:
                report.chunks = int(base.manifest.get("chunk_count", 0)) if base else 0
            else:
                self._publish(report, active, embedding_info(embedder), chunk_params, entries,
                              ocr_record(parse_limits), companion_info(embedder))
        report.seconds = time.perf_counter() - started
        return report

    def resolve_manual(self, manual: str, version: str | None = None) -> dict[str, Any]:
        """Exactly one manual of a version, named as search names them (file name, title, sha prefix)."""
        from retrieval.scope import resolve_manuals

        manuals = self.show(version).get("manuals", [])
        shas = resolve_manuals(manuals, [manual])
        if len(shas) != 1:
            names = ", ".join(m["file_name"] for m in manuals if m["sha256"] in shas)
            raise RetrievalError(f"{manual!r} matches several manuals: {names}; use the file name")
        return next(m for m in manuals if m["sha256"] == shas[0])

    def remove(self, manual: str) -> IngestReport:
        """A new version without one manual (chunks and vectors of the others are re-used)."""
        started = time.perf_counter()
        with self._locked():
            active = self.active_id()
            if active is None:
                raise NoIndexError("no index yet: nothing to remove")
            base = self.open(active)
            target = self.resolve_manual(manual, active)
            entries = reuse_manuals(base, [m for m in base.manifest["manuals"]
                                           if m["sha256"] != target["sha256"]], self._read_labels)
            report = IngestReport(parent=active, removed=[target["file_name"]])
            chunker = ChunkParams.from_manifest(base.manifest["chunker"])
            companion = base.manifest.get("companion")  # kept as it was, with each kept manual's vectors
            if companion is not None and base.companion is None:
                raise RetrievalError(f"version {active} records a companion embedder but its vectors cannot be read; "
                                     "run `manualqa index verify`")
            self._publish(report, active, base.manifest["embedding"], chunker, entries, base.manifest.get("ocr"),
                          companion)
        report.seconds = time.perf_counter() - started
        return report


if TYPE_CHECKING:  # mypy holds IndexStore and IndexVersion to the Protocols that search reads them through
    from retrieval.reader import IndexSource

    def _is_index_source(store: IndexStore) -> IndexSource:
        return store
