"""sha256 of artifact files, cached by path + size + mtime.

Model files are hundreds of MiB to GiB; hashing them on every start would make start-up slow,
so a digest is remembered until the file's size or mtime changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

_CACHE_NAME = "sha256-cache.json"
_lock = threading.Lock()


def default_cache_dir() -> Path:
    """~/.cache/manualqa (or $XDG_CACHE_HOME/manualqa)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "manualqa"


def sha256_uncached(path: str | os.PathLike[str], chunk_bytes: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk_bytes):
            digest.update(block)
    return digest.hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Write temp, fsync, rename, fsync dir: a crash leaves the old file or the new one.

    The one atomic write of runtimes/ (its hash cache), which may not import retrieval; the
    rooms above use retrieval.pointer.atomic_write_bytes.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _load(cache_file: Path) -> dict[str, object]:
    """path -> {"size", "mtime_ns", "sha256"}, as stored (a file written by another version may differ)."""
    try:
        data = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store(cache_file: Path, data: dict[str, object]) -> None:
    """Write atomically; a cache that cannot be written is only a slower start, never an error."""
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cache_file, json.dumps(data, indent=0, sort_keys=True).encode("utf-8"))
    except OSError:
        pass


def file_sha256(path: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> str:
    """Hex sha256 of the file; reused from the cache while path, size and mtime are unchanged."""
    real = os.path.realpath(path)
    st = os.stat(real)
    key = real
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    cache_file = Path(cache_dir) / _CACHE_NAME if cache_dir else default_cache_dir() / _CACHE_NAME
    with _lock:
        entry = _load(cache_file).get(key)
    if isinstance(entry, dict) and all(entry.get(k) == v for k, v in stamp.items()) and entry.get("sha256"):
        return str(entry["sha256"])
    digest = sha256_uncached(real)
    with _lock:
        data = _load(cache_file)
        data[key] = {**stamp, "sha256": digest}
        _store(cache_file, data)
    return digest


# Records about a model folder, not part of what the runtime loads: excluded from its digest.
TREE_EXCLUDE = ("PROVENANCE.json",)


def tree_files(folder: str | os.PathLike[str], exclude: tuple[str, ...] = TREE_EXCLUDE) -> list[Path]:
    """The files of a model folder (recursively, sorted), without the excluded records."""
    root = Path(folder)
    return sorted(p for p in root.rglob("*") if p.is_file() and p.relative_to(root).as_posix() not in exclude)


def tree_sha256(folder: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None,
                exclude: tuple[str, ...] = TREE_EXCLUDE) -> tuple[str, dict[str, str]]:
    """A folder artifact's digest (sha256 of its sorted "sha256  relative/path" lines) and each file's sha256.

    Why a manifest hash: an ORT GenAI model is a folder (graph, weights, tokenizer, config); changing any
    file that the runtime reads changes the digest, and the per-file hashes say which one changed.
    """
    root = Path(folder)
    files = {p.relative_to(root).as_posix(): file_sha256(p, cache_dir) for p in tree_files(root, exclude)}
    manifest = "".join(f"{digest}  {name}\n" for name, digest in sorted(files.items()))
    return hashlib.sha256(manifest.encode("utf-8")).hexdigest(), files


def tree_size(folder: str | os.PathLike[str], exclude: tuple[str, ...] = TREE_EXCLUDE) -> int:
    """Bytes of the files tree_sha256 covers."""
    return sum(p.stat().st_size for p in tree_files(folder, exclude))
