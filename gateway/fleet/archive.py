"""One index version as one signed file: export it from one gateway, import it into another.

The archive is a plain or gzip tar (USTAR) of, in this order::

    MANIFEST.json                          format, version id, embedding model, signer key id, and a
                                           sha256 + size for every payload member
    MANIFEST.sig                           Ed25519 signature over the exact bytes of MANIFEST.json
    payload/indexes/<version>/manifest.json, chunks.db, vectors.faiss
    payload/manuals/<sha256>.pdf           every original the version cites

Import trusts nothing in the file until the signature checks out against a key in
`signing/trusted/`, and reads it as hostile: every member header is checked (name, type, size
against the signed manifest, a cap on the total) before any of its data is read, reads from the
tar stream are capped so a header cannot make it allocate or decompress gigabytes, and the whole
archive is read and hashed once before anything is written. Only then, under the index lock, is it
extracted into a temporary directory inside the data directory (same filesystem), hashed again,
verified as a version, and moved into place with renames. `ACTIVE` is never touched: activation
stays an explicit step, so QA can replay the version first. Any failure removes the temporary
directory; a crash leaves only a `.tmp-` directory that the next index operation clears.

Importing a version that is already here with the same content is a no-op (status
"already present"), so an OTA tool may retry an install; the same version id with other content
is refused (versions are immutable).
"""

from __future__ import annotations

import os
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Any

from gateway.fleet import FleetError
from gateway.fleet.export import export_version
from gateway.fleet.format import (
    DEFAULT_MAX_BYTES,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST_NAME,
    SIGNATURE_NAME,
    VERSION_FILES,
)
from gateway.fleet.reading import Walked, embedding_of, walk
from ingest.discover import sha256_file
from retrieval.manifest import MANIFEST, verify_version_dir
from retrieval.pointer import TMP_PREFIX, fsync_dir, remove_tree
from retrieval.types import RetrievalError
from retrieval.versions import IndexStore

__all__ = ["DEFAULT_MAX_BYTES", "FORMAT", "FORMAT_VERSION", "MANIFEST_NAME", "SIGNATURE_NAME", "check_archive",
           "export_version", "import_archive"]


def _present(store: IndexStore, walked: Walked) -> bool:
    """Whether the version is already here: True when identical, FleetError when different."""
    target = store.indexes_dir / walked.version
    if not target.exists():
        return False
    expected = walked.files[f"payload/indexes/{walked.version}/{MANIFEST}"]["sha256"]
    try:
        same = sha256_file(target / MANIFEST) == expected
    except OSError:
        same = False
    if not same:
        raise FleetError(f"version {walked.version} already exists on this gateway with other content; "
                         "an index version is immutable, so it is not replaced")
    return True


def _summary(walked: Walked, status: str, **extra: Any) -> dict[str, Any]:
    return {"version": walked.version, "status": status, "active": False, "signed_by": walked.signer,
            "created_at": walked.manifest.get("created_at"), "embedding": embedding_of(walked.manifest),
            "manuals": len(walked.files) - len(VERSION_FILES),
            "payload_bytes": sum(e["size"] for e in walked.files.values()), **extra}


def check_archive(store: IndexStore, archive: Path, model_id: str, model_hash: str,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Everything import checks except the final verification of the extracted version; writes nothing.

    For an OTA tool's pre-install step (`manualqa index import --check`).
    """
    walked = walk(Path(archive), store.data_dir, max_bytes, (model_id, model_hash))
    return _summary(walked, "already present" if _present(store, walked) else "ok")


def import_archive(store: IndexStore, archive: Path, model_id: str, model_hash: str,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Land the archive's version as an inactive version of `store`; returns what was done.

    `model_id` / `model_hash` are those of the embedder this gateway runs: vectors of another
    model are meaningless to it. On any failure the data directory is as it was.
    """
    archive = Path(archive)
    model = (model_id, model_hash)
    walked = walk(archive, store.data_dir, max_bytes, model)  # read-only: a bad file fails here
    if _present(store, walked):
        return _summary(walked, "already present", manuals_added=0)
    try:
        with store._locked():  # IndexStore's one writer lock (it has no public name)
            return _import_locked(store, archive, max_bytes, model)
    except RetrievalError as exc:  # the lock is taken: another ingest or index operation runs
        raise FleetError(f"cannot import {archive.name} now: {exc}") from exc


def _import_locked(store: IndexStore, archive: Path, max_bytes: int, model: tuple[str, str]) -> dict[str, Any]:
    """Extract into a temporary directory of the data directory, verify, rename into place."""
    tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}import-", dir=store.data_dir))
    try:
        walked = walk(archive, store.data_dir, max_bytes, model, sink=tmp)  # the file may have changed
        problems = verify_version_dir(tmp / "indexes" / walked.version, walked.version)
        if problems:
            raise FleetError(f"version {walked.version} in the archive fails verification: {'; '.join(problems)}")
        if _present(store, walked):
            return _summary(walked, "already present", manuals_added=0)
        return _summary(walked, "imported", manuals_added=_place(store, walked, tmp))
    finally:
        remove_tree(tmp)


def _place(store: IndexStore, walked: Walked, tmp: Path) -> int:
    """Rename the staged manuals and version into place; undo what was placed if a step fails."""
    made: list[Path] = []
    placed: list[Path] = []
    try:
        for directory in (store.manuals_dir, store.indexes_dir):
            if not directory.is_dir():
                directory.mkdir(parents=True)
                made.append(directory)
        for staged in sorted((tmp / "manuals").glob("*.pdf")):
            target = store.manuals_dir / staged.name
            if not target.is_file():  # content-addressed: an existing file is the same manual
                os.replace(staged, target)
                placed.append(target)
        fsync_dir(store.manuals_dir)
        os.rename(tmp / "indexes" / walked.version, store.indexes_dir / walked.version)
        fsync_dir(store.indexes_dir)
    except BaseException:
        for path in placed:
            path.unlink(missing_ok=True)
        for directory in reversed(made):
            with suppress(OSError):
                directory.rmdir()
        raise
    return len(placed)
