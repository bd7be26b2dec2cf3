"""The data directory's versions as they are read: where they live, which is active, the lock writers take.

Why a module of its own: opening, listing, showing, verifying and diffing versions (and finding a
stored original) only read; retrieval.versions.IndexStore builds on this to write (activate, roll
back, ingest, remove) and retrieval.version_cleanup to collect garbage.
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from retrieval.index_version import IndexVersion
from retrieval.manifest import read_manifest, verify_version_dir
from retrieval.pointer import read_pointer
from retrieval.types import NoIndexError, RetrievalError

_VERSION_RE = re.compile(r"^v\d{8}T\d{6}-[0-9a-f]{6}$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


class IndexBusyError(RetrievalError):
    """Another ingest or index operation holds the data directory's lock (a RetrievalError like
    before; a route that can say 409 catches it by name)."""


class VersionCatalog:
    """The versions under a data directory, read (IndexStore's base; it adds what writes)."""

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

    # -- the lock every writer takes (IndexStore, VersionCleanup) -----------------------------------
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
