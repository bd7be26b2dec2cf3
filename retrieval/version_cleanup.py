"""Garbage collection of index versions: old versions, the originals none cites, a crashed ingest's leftovers.

Why a module of its own: what may go (never the active version or its parent) is a question apart
from building and activating versions (retrieval.versions); `manualqa index gc` and
POST /api/v1/index/gc both end in VersionCleanup.gc.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from retrieval.pointer import TMP_PREFIX, remove_tree
from retrieval.types import RetrievalError
from retrieval.version_catalog import VersionCatalog


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


class VersionCleanup(VersionCatalog):
    """What IndexStore removes: versions beyond `keep`, orphaned originals, temporaries (IndexStore's base)."""

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
