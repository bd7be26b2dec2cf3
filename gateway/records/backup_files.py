"""What backup and restore share: the backup's layout (which paths a backup may hold), its error,
and the careful file operations both sides use (locked, fsynced, hashed, permission-preserving)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import sqlite3
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gateway.errors import GatewayError
from gateway.records.db import MIGRATIONS
from retrieval.manifest import CHUNKS_DB, MANIFEST, VECTORS

FORMAT = 1
BACKUP_JSON = "backup.json"
INDEX_LOCK = ".lock"  # retrieval.versions.IndexStore's lock: ingest, activate, rollback and gc hold it
_VERSION = r"v\d{8}T\d{6}-[0-9a-f]{6}"
VERSION_RE = re.compile(rf"^{_VERSION}$")
SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_NAME = r"[^/\\.\x00-\x1f][^/\\\x00-\x1f]*"  # one plain file name: no separator, not hidden
NAME_RE = re.compile(rf"^{_NAME}$")
ALLOWED = re.compile(rf"^(gateway\.db|gateway\.db\.unwritten\.jsonl|ACTIVE|manuals/[0-9a-f]{{64}}\.pdf"
                      rf"|indexes/{_VERSION}/({re.escape(MANIFEST)}|{re.escape(CHUNKS_DB)}|{re.escape(VECTORS)})"
                      rf"|(profiles|doctor|signing|signing/trusted)/{_NAME})$")


class BackupError(GatewayError):
    """A backup that cannot be taken, or a backup that must not be restored (named file, reason)."""

    http_status = 400
    code = "backup_error"


@contextmanager
def flock(path: Path, timeout_s: float, holder: str) -> Iterator[None]:
    """Hold an exclusive flock on `path` (the same lock the writers take), waiting up to timeout_s."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise BackupError(f"{holder} is running on {path.parent}; try again when it has "
                                      "finished") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def copy_file(src: Path, dst: Path) -> tuple[str, int]:
    """Copy src to dst (fsynced, with src's permission bits from the first byte: private signing keys
    stay 0600); the sha256 and size of the bytes actually copied."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(os.stat(src).st_mode)
    digest, size = hashlib.sha256(), 0
    with open(src, "rb") as fin, open(dst, "xb", opener=lambda p, f: os.open(p, f, mode)) as fout:
        while block := fin.read(1 << 20):
            digest.update(block)
            size += len(block)
            fout.write(block)
        fout.flush()
        os.fsync(fout.fileno())
    return digest.hexdigest(), size


def private_dirs(root: Path) -> None:
    """The signing key folders are the owner's alone, as gateway.fleet.signing makes them."""
    for sub in ("signing", "signing/trusted"):
        if (root / sub).is_dir():
            os.chmod(root / sub, 0o700)


def hash_file(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def db_problem(path: Path) -> str | None:
    """Why this gateway.db must not be restored, or None (opened immutable: nothing is written)."""
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            result = [r[0] for r in con.execute("PRAGMA integrity_check").fetchall()]
            if result != ["ok"]:
                return "integrity_check: " + "; ".join(result[:5]).replace("\n", "; ")
            names = [r[0] for r in con.execute("SELECT name FROM _migrations ORDER BY version")]
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"cannot be read by SQLite: {exc}"
    if names != [name for name, _ in MIGRATIONS][: len(names)]:
        return "its migrations differ from this manualqa's: it belongs to a different manualqa version"
    return None


def summary(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a backup holds, as the CLI and the API report it."""
    files = manifest["files"]
    return {"created_at": manifest.get("created_at"), "files": len(files),
            "bytes": sum(int(f["bytes"]) for f in files.values()),
            "versions": manifest.get("index_versions", []), "active_version": manifest.get("active_index_version"),
            "active_profile": manifest.get("active_profile_file"), "answers": manifest.get("answers"),
            "warnings": manifest.get("warnings", [])}
