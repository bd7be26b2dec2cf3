"""Versioned indexes on disk: open, ingest, activate, roll back, diff, verify, collect garbage.

Layout under the data directory::

    manuals/<sha256>.pdf   originals, content-addressed
    indexes/<version>/     immutable: manifest.json, chunks.db, vectors.faiss
    ACTIVE                 id of the active version (replaced atomically)

Every operation that writes takes an exclusive lock on ``.lock`` so that a CLI ingest and the
server's upload cannot interleave; a killed process releases it with its file descriptor.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.models import ChunkParams, IngestError, ParseLimits
from retrieval.builder import IngestReport, collect_entries, reuse_manuals, write_version
from retrieval.manifest import CHUNKS_DB, VECTORS, Manifest, decode_manifest, read_manifest, verify_version_dir
from retrieval.pointer import TMP_PREFIX, atomic_copy, read_pointer, remove_tree, write_pointer
from retrieval.types import NoIndexError, RetrievalError

if TYPE_CHECKING:
    from retrieval.embedders.base import Embedder
    from retrieval.entries import Entry
    from retrieval.vectors import VectorIndex

__all__ = ["GcReport", "IndexBusyError", "IndexStore", "IndexVersion", "IngestReport"]

_VERSION_RE = re.compile(r"^v\d{8}T\d{6}-[0-9a-f]{6}$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


class IndexBusyError(RetrievalError):
    """Another ingest or index operation holds the data directory's lock (a RetrievalError like
    before; a route that can say 409 catches it by name)."""


@dataclass(frozen=True)
class GcReport:
    """What IndexStore.gc removed (or, with dry_run, would remove)."""

    removed: list[str]  # version ids, oldest first
    kept: list[str]  # the newest `keep`, the active version and its parent
    active: str | None
    bytes_freed: int  # the removed versions' files and the originals no kept version cites
    manuals_removed: int  # those originals
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tree_bytes(path: Path) -> int:
    """The bytes of the files under `path` (or of the file `path`)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def ocr_record(limits: ParseLimits) -> dict[str, object]:
    """What a version records of how pages without a text layer were read: the settings and the
    Tesseract that read them (None: not installed, so no page could be)."""
    from ingest.ocr_tools import tesseract_version

    return {**limits.ocr_settings(), "tesseract": tesseract_version() if limits.ocr != "off" else None}


class IndexVersion:
    """One immutable version, opened read-only (chunk store + FAISS index + manifest): the
    retrieval.reader.IndexReader that search reads."""

    def __init__(self, path: Path) -> None:
        from retrieval.chunkstore import ChunkStore
        from retrieval.vectors import VectorIndex

        self.path = path
        self.id = path.name
        try:
            self.manifest: dict[str, Any] = read_manifest(path)
            self.chunks = ChunkStore(path / CHUNKS_DB, readonly=True)
            self.vectors = VectorIndex.load(path / VECTORS)
        except RetrievalError:
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged version is a user-facing condition
            raise RetrievalError(f"index version {self.id} cannot be opened ({exc}); "
                                 "run `manualqa index verify` and roll back") from exc

        self._info: Manifest | None = None
        self._companion: VectorIndex | None = None
        self._companion_read = False
        self._companion_lock = threading.Lock()

    @property
    def companion(self) -> VectorIndex | None:
        """The companion embedder's vectors of every chunk (retrieval.companion), read from chunks.db on
        first use; None for a version built without a companion."""
        with self._companion_lock:
            if not self._companion_read:
                recorded = self.manifest.get("companion") or {}
                dim = recorded.get("dim") if isinstance(recorded, dict) else None
                matrix = self.chunks.companion_vectors(int(dim)) if dim else None
                if matrix is not None:
                    from retrieval.vectors import VectorIndex

                    self._companion = VectorIndex.build(matrix, kind="flat")
                self._companion_read = True
            return self._companion

    @property
    def info(self) -> Manifest:
        """The manifest typed (decoded on first use; `manifest` stays the stored dict)."""
        if self._info is None:
            try:
                self._info = decode_manifest(self.manifest)
            except ValueError as exc:
                raise RetrievalError(f"index version {self.id}: {exc}; run `manualqa index verify`") from exc
        return self._info

    def __repr__(self) -> str:
        return f"IndexVersion({self.id!r})"


class IndexStore:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.indexes_dir = self.data_dir / "indexes"
        self.manuals_dir = self.data_dir / "manuals"
        self.pointer = self.data_dir / "ACTIVE"
        self._cache: dict[str, IndexVersion] = {}
        self._cache_lock = threading.Lock()

    # -- reading -------------------------------------------------------------------------------
    def active_id(self) -> str | None:
        return read_pointer(self.pointer)

    def _dir(self, version: str) -> Path:
        if not _VERSION_RE.match(version or ""):
            raise RetrievalError(f"not a version id: {version!r} (see `manualqa index list`)")
        path = self.indexes_dir / version
        if not path.is_dir():
            raise RetrievalError(f"unknown index version {version} (see `manualqa index list`)")
        return path

    def open(self, version: str | None = None) -> IndexVersion:
        """The given version, or the active one; opened once per process and kept."""
        if version is None:
            version = self.active_id()
            if version is None:
                raise NoIndexError("no index yet: run `manualqa ingest PATH`")
        with self._cache_lock:
            cached = self._cache.get(version)
            if cached is None:
                cached = self._cache[version] = IndexVersion(self._dir(version))
            return cached

    def _manifests(self) -> list[dict[str, Any]]:
        if not self.indexes_dir.is_dir():
            return []
        found = []
        for path in self.indexes_dir.iterdir():
            if path.name.startswith(".") or not path.is_dir():
                continue
            try:
                manifest = read_manifest(path)
            except (OSError, ValueError):
                manifest = {"id": path.name, "created_at": "", "parent": None, "unreadable": True}
            manifest["id"] = path.name
            found.append(manifest)
        return sorted(found, key=lambda m: (str(m.get("created_at", "")), m["id"]))

    def list_versions(self) -> list[dict[str, object]]:
        active = self.active_id()
        return [{"id": m["id"], "created_at": m.get("created_at"), "parent": m.get("parent"),
                 "manuals": len(m.get("manuals") or []), "chunks": m.get("chunk_count"),
                 "active": m["id"] == active, **({"unreadable": True} if m.get("unreadable") else {})}
                for m in self._manifests()]

    def show(self, version: str | None = None) -> dict[str, Any]:
        version = version or self.active_id()
        if version is None:
            raise NoIndexError("no index yet: run `manualqa ingest PATH`")
        try:
            manifest = read_manifest(self._dir(version))
        except (OSError, ValueError) as exc:
            raise RetrievalError(f"version {version}: manifest cannot be read: {exc}") from exc
        return {**manifest, "active": version == self.active_id()}

    def verify(self, version: str | None = None) -> list[str]:
        version = version or self.active_id()
        if version is None:
            raise NoIndexError("no index yet: run `manualqa ingest PATH`")
        return verify_version_dir(self._dir(version), version)

    def diff(self, a: str, b: str) -> dict[str, Any]:
        ma, mb = self.show(a), self.show(b)
        old = {m["file_name"]: m for m in ma.get("manuals", [])}
        new = {m["file_name"]: m for m in mb.get("manuals", [])}

        def brief(m: Mapping[str, object]) -> dict[str, object]:
            return {"file_name": m["file_name"], "title": m.get("title"), "sha256": m["sha256"],
                    "chunks": m.get("chunks")}

        return {
            "a": a, "b": b,
            "added": [brief(new[n]) for n in sorted(new.keys() - old.keys())],
            "removed": [brief(old[n]) for n in sorted(old.keys() - new.keys())],
            "changed": [{"file_name": n, "title": new[n].get("title"), "old_title": old[n].get("title"),
                         "old_sha256": old[n]["sha256"], "new_sha256": new[n]["sha256"],
                         "old_chunks": old[n].get("chunks"), "new_chunks": new[n].get("chunks")}
                        for n in sorted(old.keys() & new.keys()) if old[n]["sha256"] != new[n]["sha256"]],
            "unchanged": sorted(n for n in old.keys() & new.keys() if old[n]["sha256"] == new[n]["sha256"]),
            "chunks": {"a": ma.get("chunk_count"), "b": mb.get("chunk_count")},
            "embedding_changed": ma.get("embedding") != mb.get("embedding"),
            "chunker_changed": ma.get("chunker") != mb.get("chunker"),
        }

    def manual_pdf(self, sha256: str) -> Path:
        """The stored original of a manual (for opening a cited page)."""
        if not _SHA_RE.match(sha256 or ""):
            raise RetrievalError(f"not a manual sha256: {sha256!r}")
        path = self.manuals_dir / f"{sha256}.pdf"
        if not path.is_file():
            raise RetrievalError(f"the original PDF of manual {sha256[:12]} is not stored on this gateway")
        return path

    # -- writing -------------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.data_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise IndexBusyError("another ingest or index operation is running on "
                                     f"{self.data_dir}; try again when it has finished") from exc
            yield
        finally:
            os.close(fd)

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

    def gc(self, keep: int, *, dry_run: bool = False) -> GcReport:
        """Remove all but the `keep` newest versions, never the active one or its parent (the
        version a rollback returns to), and the originals no remaining version cites.

        The one function behind `manualqa index gc` and POST /api/v1/index/gc. With `dry_run`
        nothing is removed and the report says what would be. Raises IndexBusyError while another
        ingest or index operation holds the lock.
        """
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise RetrievalError("gc --keep must be at least 1")
        with self._locked():
            manifests = self._manifests()
            active = self.active_id()
            protected = {m["id"] for m in manifests[-keep:]}
            if active:
                protected.add(active)
                parent = next((m.get("parent") for m in manifests if m["id"] == active), None)
                if parent:
                    protected.add(parent)
            doomed = [m["id"] for m in manifests if m["id"] not in protected]
            kept = [m["id"] for m in manifests if m["id"] in protected]
            freed = sum(_tree_bytes(self.indexes_dir / v) for v in doomed)
            originals = self._orphan_originals([m for m in manifests if m["id"] in protected])
            freed += sum(_tree_bytes(p) for p in originals)
            report = GcReport(removed=doomed, kept=kept, active=active, bytes_freed=freed,
                              manuals_removed=len(originals), dry_run=dry_run)
            if dry_run:
                return report
            for version in doomed:
                remove_tree(self.indexes_dir / version)
            with self._cache_lock:
                for key in doomed:
                    self._cache.pop(key, None)
            self._clean_temporaries()
            for path in originals:
                path.unlink(missing_ok=True)
            return report

    def _orphan_originals(self, remaining: list[dict[str, Any]]) -> list[Path]:
        """Stored PDFs that none of the `remaining` versions cites (none while one is unreadable:
        what it needs cannot be told)."""
        if not self.manuals_dir.is_dir() or any(m.get("unreadable") for m in remaining):
            return []
        wanted = {m.get("sha256") for man in remaining for m in man.get("manuals") or []}
        return sorted(p for p in self.manuals_dir.glob("*.pdf") if p.stem not in wanted)

    def clean_leftovers(self) -> list[Path]:
        """Remove what a crashed ingest left (under the ingest lock); returns what was removed.

        Raises RetrievalError while another ingest or index operation holds the lock: its build
        folder is live, not a leftover.
        """
        with self._locked():
            return self._clean_temporaries()

    def _clean_temporaries(self) -> list[Path]:
        """Leftovers of a crashed ingest: never visible to readers, safe to delete under the lock."""
        removed = []
        for parent in (self.indexes_dir, self.manuals_dir, self.data_dir):
            if parent.is_dir():
                for path in parent.glob(f"{TMP_PREFIX}*"):
                    if path.is_dir():
                        remove_tree(path)
                    else:
                        path.unlink(missing_ok=True)
                    removed.append(path)
        return removed

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
        from retrieval.search import resolve_manuals

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
