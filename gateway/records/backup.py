"""Backup and restore of a whole data directory, safe to take while the server answers.

Why this shape: the index versions and stored originals are immutable files, but gateway.db is
written all the time (the answer log, in WAL mode), so a plain file copy can tear it. A backup
copies gateway.db with SQLite's online backup API (one consistent snapshot), copies the index
versions and pointers under the same locks that ingest and profile switches take, verifies every
copied version, and writes ``backup.json`` (a sha256 and size per file) last, inside a temporary
sibling that is renamed into place: a half-written backup never looks complete.

A restore trusts nothing: every path in backup.json must be one a backup writes, every file must
match its size and sha256, no other file may be present (an unlisted file means the backup was
changed after it was taken, so it is refused rather than ignored), every index version must pass
`retrieval.manifest.verify_version_dir` and gateway.db `PRAGMA integrity_check` — all before the
target is touched. The copy is built beside the target and renamed into place; an existing data
directory is only ever moved aside (``--force``), never deleted.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway import __version__
from gateway.records.backup_files import (
    BACKUP_JSON,
    FORMAT,
    INDEX_LOCK,
    NAME_RE,
    SHA_RE,
    VERSION_RE,
    BackupError,
    copy_file,
    flock,
    hash_file,
    private_dirs,
    summary,
)
from gateway.records.db import utcnow
from gateway.records.restore import restore_backup, verify_backup
from retrieval.manifest import CHUNKS_DB, MANIFEST, VECTORS, read_manifest, verify_version_dir
from retrieval.pointer import TMP_PREFIX, atomic_write_bytes, fsync_dir, read_pointer

__all__ = ["BackupError", "create_backup", "restore_backup", "verify_backup"]


def create_backup(data_dir: str | Path, dest: str | Path, lock_timeout_s: float = 30.0) -> dict[str, Any]:
    """Copy data_dir into the new directory dest, consistently while the server runs; a summary."""
    data_dir, dest = Path(data_dir), Path(dest)
    if not data_dir.is_dir():
        raise BackupError(f"data directory {data_dir} does not exist")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not empty; back up into a new directory")
    if dest.resolve().is_relative_to(data_dir.resolve()):
        raise BackupError(f"{dest} is inside the data directory {data_dir}; back up somewhere else")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f"{TMP_PREFIX}{dest.name}.{os.getpid()}.{secrets.token_hex(3)}")
    tmp.mkdir()
    files: dict[str, dict[str, str | int]] = {}
    warnings: list[str] = []

    def take(rel: str) -> str:
        sha, size = copy_file(data_dir / rel, tmp / rel)
        files[rel] = {"sha256": sha, "bytes": size}
        return sha

    def drop(prefix: str) -> None:
        for rel in [r for r in files if r.startswith(prefix)]:
            (tmp / rel).unlink()
            del files[rel]

    try:
        # Held while copying only: versions are immutable, but gc may delete one and ingest moves ACTIVE.
        with flock(data_dir / INDEX_LOCK, lock_timeout_s, "an ingest or index operation"):
            active, copied = _take_indexes(data_dir, take, drop, warnings)
        versions = []
        for version in copied:  # verified on the copy: what is in the backup is what passed
            problems = verify_version_dir(tmp / "indexes" / version, version)
            if not problems:
                versions.append(version)
            elif version == active:
                raise BackupError(f"the active index version {active} fails verification: "
                                  + "; ".join(problems) + " (see `manualqa index verify`)")
            else:
                warnings.append(f"skipped index version {version}: " + "; ".join(problems))
                drop(f"indexes/{version}/")
                (tmp / "indexes" / version).rmdir()
        wanted = {f"manuals/{sha}.pdf" for v in versions for sha in _manual_shas(tmp / "indexes" / v)}
        for rel in [r for r in files if r.startswith("manuals/") and r not in wanted]:
            drop(rel)
        profiles = data_dir / "profiles"
        if profiles.is_dir():
            with flock(profiles / ".lock", lock_timeout_s, "a profile switch"):
                for path in sorted(profiles.iterdir()):
                    if NAME_RE.match(path.name) and path.is_file() and not path.is_symlink():
                        take(f"profiles/{path.name}")
        active_profile = read_pointer(tmp / "profiles" / "ACTIVE") if "profiles/ACTIVE" in files else None
        doctor = data_dir / "doctor"
        for path in sorted(doctor.iterdir()) if doctor.is_dir() else []:
            if NAME_RE.match(path.name) and path.is_file() and not path.is_symlink():
                take(f"doctor/{path.name}")
        for sub in ("signing", "signing/trusted"):  # fleet keys (gateway.fleet.signing)
            folder = data_dir / sub
            for path in sorted(folder.iterdir()) if folder.is_dir() else []:
                if NAME_RE.match(path.name) and path.is_file() and not path.is_symlink():
                    take(f"{sub}/{path.name}")
        private_dirs(tmp)
        answers = None
        if (data_dir / "gateway.db").is_file():
            answers = _backup_db(data_dir / "gateway.db", tmp / "gateway.db")
            sha, size = hash_file(tmp / "gateway.db")
            files["gateway.db"] = {"sha256": sha, "bytes": size}
        if (data_dir / "gateway.db.unwritten.jsonl").is_file():
            take("gateway.db.unwritten.jsonl")
        for directory in {(tmp / rel).parent for rel in files}:
            fsync_dir(directory)
        manifest = {"format": FORMAT, "kind": "manualqa-backup", "manualqa_version": __version__,
                    "created_at": utcnow(), "source": str(data_dir.resolve()), "active_index_version": active,
                    "active_profile_file": active_profile, "index_versions": versions, "answers": answers,
                    "warnings": warnings, "files": dict(sorted(files.items()))}
        atomic_write_bytes(tmp / BACKUP_JSON, json.dumps(manifest, indent=2).encode("utf-8"))  # last
        if dest.exists():
            dest.rmdir()  # an empty directory the operator made for it
        os.rename(tmp, dest)
        fsync_dir(dest.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"dest": str(dest), **summary(manifest)}


def _manual_shas(version_dir: Path) -> set[str]:
    """The originals a version names (only well-formed digests: a manifest never names a path)."""
    try:
        manuals = read_manifest(version_dir).get("manuals") or []
    except (OSError, ValueError):
        return set()  # verification reports the unreadable manifest
    return {m["sha256"] for m in manuals if isinstance(m, dict) and SHA_RE.match(str(m.get("sha256")))}


def _take_indexes(data_dir: Path, take: Callable[[str], str], drop: Callable[[str], None],
                  warnings: list[str]) -> tuple[str | None, list[str]]:
    """Under the index lock: ACTIVE, every complete version directory and the originals they name."""
    active = read_pointer(data_dir / "ACTIVE")
    copied, shas = [], set()
    indexes = data_dir / "indexes"
    for vdir in sorted(indexes.iterdir()) if indexes.is_dir() else []:
        if not VERSION_RE.match(vdir.name) or not vdir.is_dir():
            continue  # build temporaries (.tmp-*) and strangers are not index versions
        names = [f"indexes/{vdir.name}/{n}" for n in (MANIFEST, CHUNKS_DB, VECTORS)]
        missing = [n for n in names if not (data_dir / n).is_file()]
        if missing and vdir.name == active:
            raise BackupError(f"the active index version {active} is incomplete: {missing[0]} is missing")
        if missing:
            warnings.append(f"skipped index version {vdir.name}: {', '.join(missing)} missing")
            continue
        for rel in names:
            take(rel)
        copied.append(vdir.name)
        shas |= _manual_shas(vdir)
    if active is not None:
        if active not in copied:
            raise BackupError(f"ACTIVE names index version {active!r}, which is not in {indexes}")
        take("ACTIVE")
    for sha in sorted(shas):
        rel = f"manuals/{sha}.pdf"
        if not (data_dir / rel).is_file():
            warnings.append(f"original {rel} is not stored; the index works without it")
        elif take(rel) != sha:  # damaged on this gateway: leave it out, say so
            warnings.append(f"original {rel} does not match its sha256 name; left out")
            drop(rel)
    return active, copied


def _backup_db(src: Path, dst: Path) -> int:
    """SQLite's online backup (one read transaction: a consistent snapshot while others write)."""
    source = sqlite3.connect(str(src), timeout=30.0)
    target = sqlite3.connect(str(dst))
    try:
        source.execute("PRAGMA busy_timeout = 30000")
        source.backup(target)  # pages=-1: the whole database in one step
        target.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
        result = [r[0] for r in target.execute("PRAGMA integrity_check").fetchall()]
        if result != ["ok"]:
            raise BackupError(f"the copy of {src} fails integrity_check: " + "; ".join(result[:5]).replace("\n", "; "))
        try:
            return int(target.execute("SELECT count(*) FROM answers").fetchone()[0])
        except sqlite3.OperationalError:  # a database without the answer log yet
            return 0
    finally:
        target.close()
        source.close()
