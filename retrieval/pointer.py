"""Crash-safe small files: the ACTIVE pointer and other write-once files.

A reader must see either the old content or the new one, never a torn file, even after a power
cut: write a temporary file in the same directory, fsync it, rename it over the target, fsync
the directory so that the rename itself is durable.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

TMP_PREFIX = ".tmp-"


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in `path` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new content.

    With `mode` (e.g. 0o600 for a private key) the file has those permissions from its first byte.
    """
    path = Path(path)
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}")
    if mode is not None and tmp.exists():
        tmp.unlink()  # a stale temporary keeps its old permissions: never reuse it
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if mode is not None else os.O_TRUNC)
    try:
        with os.fdopen(os.open(tmp, flags, 0o666 if mode is None else mode), "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync_dir(path.parent)


def write_pointer(path: Path, value: str) -> None:
    """Atomically point `path` (e.g. data/ACTIVE) at `value`."""
    if not value or "\n" in value or "/" in value:
        raise ValueError(f"invalid pointer value {value!r}")
    atomic_write_bytes(Path(path), (value + "\n").encode("ascii"))


def read_pointer(path: Path) -> str | None:
    """The pointer's value, or None when it was never written."""
    try:
        text = Path(path).read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    return text or None


def atomic_copy(src: Path, dst: Path, expected_sha256: str | None = None, chunk_size: int = 1 << 20) -> None:
    """Copy `src` to `dst` via a fsynced temporary file and a rename.

    With `expected_sha256`, the bytes actually copied must have that digest (the file may have
    changed since it was hashed); otherwise nothing is put in place and ValueError is raised.
    """
    dst = Path(dst)
    tmp = dst.with_name(f"{TMP_PREFIX}{dst.name}.{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            while block := fin.read(chunk_size):
                digest.update(block)
                fout.write(block)
            fout.flush()
            os.fsync(fout.fileno())
        if expected_sha256 is not None and digest.hexdigest() != expected_sha256:
            raise ValueError(f"{src} changed while it was being ingested")
        os.replace(tmp, dst)
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync_dir(dst.parent)


def remove_tree(path: Path) -> None:
    """Delete a directory tree; used for leftover temporary versions and garbage collection."""
    shutil.rmtree(path, ignore_errors=False)
