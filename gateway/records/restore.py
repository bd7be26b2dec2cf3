"""Restore: a backup is checked whole (every path one a backup writes, every file's size and sha256,
no unlisted file, every index version and gateway.db verified) before the target is touched; the copy
is built beside the target and renamed into place (gateway.records.backup says why)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from gateway.records.backup_files import (
    ALLOWED,
    BACKUP_JSON,
    FORMAT,
    INDEX_LOCK,
    BackupError,
    copy_file,
    db_problem,
    flock,
    hash_file,
    private_dirs,
    summary,
)
from gateway.records.db import utcnow
from retrieval.manifest import CHUNKS_DB, MANIFEST, VECTORS, verify_version_dir
from retrieval.pointer import TMP_PREFIX, fsync_dir, read_pointer


def verify_backup(src: str | Path) -> dict[str, Any]:
    """backup.json of src, once every check a restore needs has passed; raises BackupError otherwise."""
    src = Path(src)
    try:
        manifest = json.loads((src / BACKUP_JSON).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupError(f"{src} is not a complete backup: it has no {BACKUP_JSON}") from None
    except (OSError, ValueError) as exc:
        raise BackupError(f"{src / BACKUP_JSON} cannot be read: {exc}") from exc
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("kind") != "manualqa-backup":
        raise BackupError(f"{src / BACKUP_JSON} is not a manualqa backup manifest")
    if manifest.get("format") != FORMAT:
        raise BackupError(f"{src / BACKUP_JSON}: backup format {manifest.get('format')!r}, this manualqa "
                          f"reads format {FORMAT}")
    for rel, entry in files.items():
        parts = PurePosixPath(rel).parts
        if rel.startswith(("/", "\\")) or ".." in parts or "\\" in rel or re.match(r"^[A-Za-z]:", rel):
            raise BackupError(f"{BACKUP_JSON} lists an unsafe path {rel!r} (absolute or with ..): refused")
        if not ALLOWED.match(rel) or not isinstance(entry, dict):
            raise BackupError(f"{BACKUP_JSON} lists {rel!r}, which is not a file a backup holds: refused")
        path = src / rel
        if path.is_symlink() or not path.is_file():
            raise BackupError(f"backup is partial: {rel} is missing")
        sha, size = hash_file(path)
        if size != entry.get("bytes"):
            raise BackupError(f"backup is damaged: {rel} has {size} bytes, {BACKUP_JSON} says {entry.get('bytes')}")
        if sha != entry.get("sha256"):
            raise BackupError(f"backup is damaged: {rel} does not match its sha256 in {BACKUP_JSON}")
    for root, _dirs, names in os.walk(src):
        for name in names:
            rel = Path(root, name).relative_to(src).as_posix()
            if rel != BACKUP_JSON and rel not in files:
                raise BackupError(f"{rel} is in the backup but not listed in {BACKUP_JSON} (changed after it "
                                  "was taken?): refused; remove it if you know why it is there")
    versions = sorted({rel.split("/")[1] for rel in files if rel.startswith("indexes/")})
    if sorted(manifest.get("index_versions") or []) != versions:
        raise BackupError(f"{BACKUP_JSON} names index versions {manifest.get('index_versions')}, its files hold "
                          f"{versions}: refused")
    for version in versions:
        for name in (MANIFEST, CHUNKS_DB, VECTORS):
            if f"indexes/{version}/{name}" not in files:
                raise BackupError(f"backup is partial: indexes/{version}/{name} is not listed")
        problems = verify_version_dir(src / "indexes" / version, version)
        if problems:
            raise BackupError(f"index version {version} in the backup fails verification: " + "; ".join(problems))
    active = read_pointer(src / "ACTIVE") if "ACTIVE" in files else None
    if active != manifest.get("active_index_version") or (active is not None and active not in versions):
        raise BackupError(f"ACTIVE in the backup names {active!r}, which is not a backed-up index version "
                          f"({BACKUP_JSON} says {manifest.get('active_index_version')!r})")
    profile = read_pointer(src / "profiles" / "ACTIVE") if "profiles/ACTIVE" in files else None
    if profile is not None and f"profiles/{profile}" not in files:
        raise BackupError(f"profiles/ACTIVE names {profile!r}, which is not in the backup")
    if "gateway.db" in files and (problem := db_problem(src / "gateway.db")):
        raise BackupError(f"gateway.db in the backup {problem}")
    checked: dict[str, Any] = manifest
    return checked


def restore_backup(src: str | Path, data_dir: str | Path, force: bool = False) -> dict[str, Any]:
    """Verify the backup src completely, then put it in place as data_dir; a summary."""
    src, data_dir = Path(src), Path(data_dir)
    manifest = verify_backup(src)
    if data_dir.resolve() == src.resolve():
        raise BackupError(f"{data_dir} is the backup itself")
    if data_dir.exists() and not data_dir.is_dir():
        raise BackupError(f"{data_dir} exists and is not a directory")
    occupied = data_dir.is_dir() and any(data_dir.iterdir())
    if occupied and not force:
        raise BackupError(f"data directory {data_dir} is not empty; restore into an empty one, or use --force "
                          "to move it aside (it is kept, never deleted)")
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = data_dir.with_name(f"{TMP_PREFIX}restore-{data_dir.name}.{os.getpid()}.{secrets.token_hex(3)}")
    tmp.mkdir()
    aside = None
    try:
        for rel, entry in manifest["files"].items():
            if copy_file(src / rel, tmp / rel)[0] != entry["sha256"]:
                raise BackupError(f"{rel} changed while it was being restored")
        private_dirs(tmp)
        for directory in {(tmp / rel).parent for rel in manifest["files"]} | {tmp}:
            fsync_dir(directory)
        if occupied:
            with flock(data_dir / INDEX_LOCK, 5.0, "an ingest or index operation"):
                stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
                aside = data_dir.with_name(f"{data_dir.name}.before-restore-{stamp}")
                n = 1
                while aside.exists():
                    n += 1
                    aside = data_dir.with_name(f"{data_dir.name}.before-restore-{stamp}-{n}")
                os.rename(data_dir, aside)
        elif data_dir.exists():
            data_dir.rmdir()
        try:
            os.rename(tmp, data_dir)
        except OSError:
            if aside is not None:
                os.rename(aside, data_dir)  # put the old one back: a failed restore changes nothing
                aside = None
            raise
        fsync_dir(data_dir.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"data_dir": str(data_dir), "source": str(src), "moved_aside": str(aside) if aside else None,
            "restored_at": utcnow(), **summary(manifest)}
